/*
 * redis.c - the Redis backend seam: vtable checks, the wrappers through
 * which every command and transition flows (one place for the version
 * and callback checks), owned reply
 * trees, the synchronous wrapper, and REDIS_URI parsing.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "common.h"

int relay_redis_backend_check(const relay_redis_backend *b)
{
	if (!b || b->version == 0 || b->version > RELAY_REDIS_BACKEND_VERSION)
		return RELAY_EINVAL;
	if (!b->name || !b->command || !b->script || !b->errstr || !b->free)
		return RELAY_EINVAL;
	return 0;
}

int relay_redis_backend_init(relay_redis_backend *b, unsigned int version)
{
	if (!b || version == 0 || version > RELAY_REDIS_BACKEND_VERSION)
		return RELAY_EINVAL;
	memset(b, 0, sizeof(*b));
	b->version = version;
	return 0;
}

relay_redis_reply *relay_redis_reply_new(relay_redis_reply_type type)
{
	relay_redis_reply *r = relay__calloc(1, sizeof(*r));

	if (r)
		r->type = type;
	return r;
}

void *relay_redis_malloc(size_t n)
{
	return relay__malloc(n);
}

void *relay_redis_realloc(void *p, size_t n)
{
	return relay__realloc(p, n);
}

int relay_redis_reply_set_str(relay_redis_reply *r, const char *s,
			      size_t len)
{
	char *copy;

	if (!r || !s)
		return RELAY_EINVAL;
	copy = relay__malloc(len + 1);
	if (!copy)
		return RELAY_ENOMEM;
	memcpy(copy, s, len);
	copy[len] = '\0';
	relay__free(r->str);
	r->str = copy;
	r->len = len;
	return 0;
}

int relay_redis_reply_set_elements(relay_redis_reply *r, size_t n)
{
	relay_redis_reply **el = NULL;
	size_t i;

	if (!r)
		return RELAY_EINVAL;
	if (n) {
		el = relay__calloc(n, sizeof(*el));
		if (!el)
			return RELAY_ENOMEM;
	}
	for (i = 0; i < r->elements; i++)
		relay_redis_reply_free(r->element[i]);
	relay__free(r->element);
	r->element = el;
	r->elements = n;
	return 0;
}

void relay_redis_reply_free(relay_redis_reply *r)
{
	size_t i;

	if (!r)
		return;
	for (i = 0; i < r->elements; i++)
		relay_redis_reply_free(r->element[i]);
	relay__free(r->element);
	relay__free(r->str);
	relay__free(r);
}

relay_redis_reply *relay__reply_str(relay_redis_reply_type type,
				    const char *s, size_t len)
{
	relay_redis_reply *r = relay_redis_reply_new(type);

	if (!r)
		return NULL;
	r->str = relay__strndup(s, len);
	if (!r->str) {
		relay__free(r);
		return NULL;
	}
	r->len = len;
	return r;
}

relay_redis_reply *relay__reply_int(long long v)
{
	relay_redis_reply *r = relay_redis_reply_new(RELAY_REDIS_REPLY_INTEGER);

	if (r)
		r->integer = v;
	return r;
}

relay_redis_reply *relay__reply_nil(void)
{
	return relay_redis_reply_new(RELAY_REDIS_REPLY_NIL);
}

relay_redis_reply *relay__reply_array(size_t n)
{
	relay_redis_reply *r = relay_redis_reply_new(RELAY_REDIS_REPLY_ARRAY);

	if (!r)
		return NULL;
	if (n) {
		r->element = relay__calloc(n, sizeof(*r->element));
		if (!r->element) {
			relay__free(r);
			return NULL;
		}
	}
	r->elements = n;
	return r;
}

relay_redis_reply *relay__reply_errorf(const char *fmt, ...)
{
	relay_redis_reply *r;
	char buf[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	r = relay__reply_str(RELAY_REDIS_REPLY_ERROR, buf, strlen(buf));
	return r;
}

int relay_redis_reply_error(const relay_redis_reply *r)
{
	if (!r || r->type != RELAY_REDIS_REPLY_ERROR)
		return 0;
	if (r->str && strncmp(r->str, "WRONGTYPE", 9) == 0)
		return RELAY_ETYPE;
	return RELAY_EBACKEND;
}

void relay_redis_free(relay_redis_backend *b)
{
	if (b)
		b->free(b);
}

const char *relay_redis_name(const relay_redis_backend *b)
{
	return b->name;
}

const char *relay_redis_errstr(const relay_redis_backend *b)
{
	const char *s = b->errstr(b);

	return s ? s : "";
}

int relay_redis_command(relay_redis_backend *b, int argc,
			const char *const *argv, const size_t *argvlen,
			relay_redis_reply_cb cb, void *payload)
{
	if (argc < 1 || !argv || relay_redis_backend_check(b))
		return RELAY_EINVAL;
	return b->command(b, argc, argv, argvlen, cb, payload);
}

static const int script_numkeys[RELAY_REDIS_SCRIPT_COUNT_] = {
	1, 1, 1, 1, 1, 1, 2, 2, 2, 1, 1,
};

int relay__redis_script_numkeys(relay_redis_script op)
{
	return script_numkeys[op];
}

int relay__redis_script(relay_redis_backend *b, relay_redis_script op,
			int numkeys, int argc, const char *const *argv,
			const size_t *argvlen, relay_redis_reply_cb cb,
			void *payload)
{
	/* SCHEDULE_PUBLISH takes a third key, the pre-cluster marker, on a
	 * single node (doc/redis-layout.md R-7). */
	if ((unsigned)op >= RELAY_REDIS_SCRIPT_COUNT_ ||
	    (numkeys != script_numkeys[op] &&
	     !(op == RELAY_REDIS_SCRIPT_SCHEDULE_PUBLISH && numkeys == 3)) ||
	    argc < numkeys ||
	    relay_redis_backend_check(b))
		return RELAY_EINVAL;
	/* Ops appended in version 2 are never sent to a version 1 backend
	 * (relay/sys/redis.h). */
	if (op >= RELAY_REDIS_SCRIPT_SCHEDULE_PUBLISH && b->version < 2)
		return RELAY_EBACKEND;
	if (op >= RELAY_REDIS_SCRIPT_COMPLETE_ACK && b->version < 3)
		return RELAY_EBACKEND;
	if (op >= RELAY_REDIS_SCRIPT_CLAIM_START && b->version < 4)
		return RELAY_EBACKEND;
	return b->script(b, op, numkeys, argc, argv, argvlen, cb, payload);
}

int relay_redis_sync_wait(relay_redis_backend *b, const int *done)
{
	if (!b->wait)
		return *done ? 0 : RELAY_EINVAL;
	return b->wait(b, done);
}

/* Whether relay_redis_sync_wait() can work on @b, asked before a
 * synchronous call issues anything. */
static int can_wait(relay_redis_backend *b)
{
	static const int done = 1;

	return !b->wait || b->wait(b, &done) == 0;
}

struct sync_call {
	int done;
	int status;
	relay_redis_reply *reply;
};

static void sync_cb(relay_redis_backend *b, int status,
		    relay_redis_reply *reply, void *payload)
{
	struct sync_call *sc = payload;

	sc->done = 1;
	sc->status = status;
	sc->reply = reply;
}

int relay_redis_sync_command(relay_redis_backend *b, relay_redis_reply **out,
			     int argc, const char *const *argv,
			     const size_t *argvlen)
{
	struct sync_call sc = { 0, 0, NULL };
	int rc;

	*out = NULL;
	if (!can_wait(b))
		return RELAY_EINVAL;
	rc = relay_redis_command(b, argc, argv, argvlen, sync_cb, &sc);
	if (rc)
		return rc;
	relay_redis_sync_wait(b, &sc.done);
	*out = sc.reply;
	return sc.status;
}

void relay__redis_uri_clear(relay__redis_uri *u)
{
	size_t i;

	for (i = 0; i < u->nseeds; i++)
		relay__free(u->seeds[i].host);
	relay__free(u->seeds);
	relay__free(u->host);
	relay__free(u->path);
	relay__free(u->user);
	relay__free(u->pass);
	relay__free(u->master);
	memset(u, 0, sizeof(*u));
}

static int parse_int(const char *s, long lo, long hi, int *out)
{
	char *end;
	long v;

	if (!*s || *s < '0' || *s > '9')
		return RELAY_EINVAL;
	v = strtol(s, &end, 10);
	if (*end || v < lo || v > hi)
		return RELAY_EINVAL;
	*out = (int)v;
	return 0;
}

/* "host:port" (host may be [v6]). Modifies @hp. */
static int parse_hostport(relay__redis_uri *u, char *hp)
{
	char *colon;
	const char *h;

	if (hp[0] == '[') {
		colon = strchr(hp, ']');
		if (!colon || colon[1] != ':')
			return RELAY_EINVAL;
		*colon = '\0';
		u->host = relay__strdup(hp + 1);
		colon++;
	} else {
		colon = strrchr(hp, ':');
		if (!colon)
			return RELAY_EINVAL;
		*colon = '\0';
		u->host = relay__strdup(hp);
	}
	if (!u->host)
		return RELAY_ENOMEM;
	/* No user information ("user:pass@host:port" needs redis://), no
	 * path, no blanks or control bytes in a host name. */
	if (!u->host[0] || strpbrk(u->host, "@/ \t\r\n\v\f"))
		return RELAY_EINVAL;
	for (h = u->host; *h; h++)
		if ((unsigned char)*h < 0x20 || *h == 0x7f)
			return RELAY_EINVAL;
	return parse_int(colon + 1, 1, 65535, &u->port);
}

char *relay__redis_uri_redact(const char *uri, char *buf, size_t size)
{
	const char *start, *at, *colon, *sep, *q;
	size_t n = 0;

	if (!size)
		return buf;
	if (!uri)
		uri = "";
	sep = strstr(uri, "://");
	start = sep ? sep + 3 : uri;
	at = strrchr(start, '@');
	colon = at ? memchr(start, ':', (size_t)(at - start)) : NULL;
	for (q = uri; *q && n + 1 < size; q++) {
		if (at && q == (colon ? colon + 1 : start)) {
			snprintf(buf + n, size - n, "***");
			n += strlen(buf + n);
			q = at - 1;
			continue;
		}
		buf[n++] = (unsigned char)*q < 0x20 || *q == 0x7f ? '?' : *q;
	}
	buf[n] = '\0';
	return buf;
}

/*
 * "host:port,host:port,...": the first goes to u->host/u->port, the rest
 * to u->seeds (cluster seed nodes, doc/configuration.md C-2). Modifies
 * @hp.
 */
static int parse_seeds(relay__redis_uri *u, char *hp)
{
	relay__redis_uri one;
	char *comma = strchr(hp, ','), *next;
	size_t n = 0;
	int rc;

	if (comma)
		*comma = '\0';
	rc = parse_hostport(u, hp);
	for (next = comma ? comma + 1 : NULL; !rc && next; n++) {
		relay__redis_node *s;

		comma = strchr(next, ',');
		if (comma)
			*comma = '\0';
		memset(&one, 0, sizeof(one));
		s = relay__realloc(u->seeds, (n + 1) * sizeof(*s));
		if (!s)
			return RELAY_ENOMEM;
		u->seeds = s;
		rc = parse_hostport(&one, next);
		u->seeds[n].host = one.host;
		u->seeds[n].port = one.port;
		u->nseeds = n + 1;
		next = comma ? comma + 1 : NULL;
	}
	return rc;
}

/*
 * A Sentinel master name (@n bytes of @s): 1..RELAY__MAX_MASTER bytes of
 * letters, digits and "._-" (how names are spelled in sentinel.conf in
 * practice; it is sent as one argument and shown in messages).
 */
#define RELAY__MAX_MASTER 64
static int master_ok(const char *s, size_t n)
{
	size_t i;

	if (n == 0 || n > RELAY__MAX_MASTER)
		return 0;
	for (i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') ||
		      (s[i] >= 'A' && s[i] <= 'Z') ||
		      (s[i] >= '0' && s[i] <= '9') || strchr("._-", s[i])))
			return 0;
	return 1;
}

/*
 * REDIS_URI forms (doc/configuration.md C-2): "host:port",
 * "redis://[user:pass@]host:port[/db]" (a bare "pass@" means password
 * only), "unix:///absolute/path", and "memory://" for tests. Either TCP
 * form may name several "host:port" seeds separated by ',' (a cluster).
 * "redis+sentinel://[user:pass@]host:port[,host:port...]/master[/db]"
 * names sentinels and the master they watch (the user information is
 * the master's; sentinels are asked without it). "rediss://" is the
 * redis form over TLS (a build with TLS only).
 */
int relay__redis_uri_parse(relay__redis_uri *out, const char *uri,
			   relay_error *err)
{
	char *copy = NULL, *p, *at, *slash, *colon;
	int rc = RELAY_EINVAL;

	memset(out, 0, sizeof(*out));
	if (!uri || !*uri)
		goto done;
	if (strcmp(uri, "memory://") == 0) {
		out->memory = 1;
		return 0;
	}
	if (strncmp(uri, "unix://", 7) == 0) {
		if (uri[7] != '/' || uri[8] == '\0')
			goto done;
		out->path = relay__strdup(uri + 7);
		return out->path ? 0 : RELAY_ENOMEM;
	}
	copy = relay__strdup(uri);
	if (!copy) {
		rc = RELAY_ENOMEM;
		goto done;
	}
	p = copy;
	if (strncmp(p, "rediss://", 9) == 0) {
#ifdef RELAY_HAVE_TLS
		out->tls = 1;
		memmove(p + 5, p + 6, strlen(p + 6) + 1); /* as redis:// */
#else
		relay__free(copy);
		rc = RELAY_EINVAL;
		relay__error_set(err, rc, NULL, 0, 0, "rediss:// (TLS) is not "
				 "available: this build has no TLS (it uses "
				 "hiredis without TLS; build with hiredict, "
				 "meson -Dtls=enabled)");
		return rc;
#endif
	}
	if (strncmp(p, "redis://", 8) == 0 ||
	    strncmp(p, "redis+sentinel://", 17) == 0) {
		int sentinel = p[5] == '+';

		p += sentinel ? 17 : 8;
		at = strrchr(p, '@');
		if (at) {
			*at = '\0';
			colon = strchr(p, ':');
			if (colon) {
				*colon = '\0';
				if (*p && !(out->user = relay__strdup(p)))
					goto done;
				p = colon + 1;
			}
			if (!(out->pass = relay__strdup(p)))
				goto done;
			p = at + 1;
		}
		slash = strchr(p, '/');
		if (slash)
			*slash = '\0';
		if (sentinel) {
			/* "/master[/db]": the name is required. */
			char *name = slash ? slash + 1 : NULL;

			slash = name ? strchr(name, '/') : NULL;
			if (!name || !master_ok(name, slash ? (size_t)(slash -
						name) : strlen(name)))
				goto done;
			out->master = relay__strndup(name, slash ?
				(size_t)(slash - name) : strlen(name));
			if (!out->master) {
				rc = RELAY_ENOMEM;
				goto done;
			}
		}
		if (slash && slash[1] &&
		    parse_int(slash + 1, 0, 255, &out->db))
			goto done;
	} else if (strstr(p, "://")) {
		goto done;
	}
	rc = parse_seeds(out, p);
done:
	relay__free(copy);
	if (rc) {
		char safe[256];

		relay__redis_uri_clear(out);
		relay__error_set(err, rc, NULL, 0, 0,
				 "invalid Redis URI \"%s\"",
				 relay__redis_uri_redact(uri, safe,
							 sizeof(safe)));
	}
	return rc;
}

int relay_redis_open(relay_redis_backend **out, const char *uri,
		     const relay_redis_options *opts, relay_error *err)
{
	relay__redis_uri u;
	int rc;

	*out = NULL;
	if (opts && (opts->version == 0 ||
		     opts->version > RELAY_REDIS_OPTIONS_VERSION))
		return relay__error_set(err, RELAY_EINVAL, NULL, 0, 0,
					"unsupported options version %u",
					opts->version);
	rc = relay__redis_uri_parse(&u, uri, err);
	if (rc)
		return rc;
	if (u.memory)
		rc = relay_redis_memory_new(out, opts ? opts->clock : NULL);
	else
		rc = relay__redis_hiredis_new(out, &u, opts, NULL, err);
	relay__redis_uri_clear(&u);
	return rc;
}
