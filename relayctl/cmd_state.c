/*
 * cmd_state.c - relayctl state leaks [--retain] [--ttl DURATION] [--json]
 *
 * Finds invocation-state hashes leaked by a crash between a message's
 * XACK and the retain step (the hash then has no __terminal marker and no
 * TTL, and nothing will ever expire it). A hash of this stream and group
 * is leaked when its message is in no PEL of the group and no longer in
 * the stream: no delivery can come back for it, so retaining it cannot
 * expire state a live message still needs. A message still in the stream
 * is never reported (stream retention trims it once every group is done
 * with it; the hash shows up then).
 *
 * Dry run by default: prints "<message id>  <key>" per leaked hash and a
 * summary. --retain runs the same retain script relayd uses after an ACK
 * (__terminal + a TTL of --ttl, default $REDIS_INVOCATION_RETENTION or
 * 168h) on each, which is a no-op on a hash retained meanwhile. --json:
 * {"leaked": [{"id": ..., "key": ...}], "retained": N, "dry_run": B}.
 *
 * Order of checks per key, each a separate command: HEXISTS __terminal
 * (retained: skip), XRANGE id id (in the stream: skip), XPENDING id id
 * (pending: skip). An entry that is gone from the stream can never enter
 * a PEL again, so the verdict cannot be overtaken by a new delivery.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "relay/engine.h"

#include "cmdutil.h"
#include "ctlconf.h"
#include "fmt.h"
#include "relay/invocation.h"
#include "relayctl.h"

#define DEFAULT_TTL_MS (168LL * 3600 * 1000)

struct leaks {
	struct relayctl_conf conf;
	int retain;
	int64_t ttl_ms;
	relay_redis_backend *b;
	const char *stream;        /* the stream being scanned */
	char *prefix;              /* relay:invocation:<E(s)>:<E(g)>: */
	json_t *list;
	long long found, retained;
};

static void usage(FILE *f)
{
	fprintf(f, "usage: relayctl state leaks [--retain] [--ttl DURATION] "
		"[--json] [connection options]\n\n"
		"List invocation-state hashes leaked by a crash between ACK "
		"and retain:\nno retention marker, message in no PEL of the "
		"group and no longer in\nthe stream. Dry run unless --retain "
		"is given.\n\n"
		"  --retain           give each one the retention marker and "
		"TTL\n"
		"  --ttl DURATION     the TTL for --retain (default "
		"$REDIS_INVOCATION_RETENTION\n"
		"                     or 168h); e.g. 168h, 30m, 7d\n"
		"  --json             one JSON object\n%s"
		"  -h, --help         show this help\n\n"
		"Exit status: 0 success, 1 Redis error, 2 usage error.\n",
		relayctl_conf_help);
}

static void usage_top(FILE *f)
{
	fputs("usage: relayctl state leaks [--retain] [--ttl DURATION] "
	      "[--json]\n\nInspect relayd's invocation state in Redis.\n"
	      "Run 'relayctl state leaks --help' for its options.\n", f);
}

/* "168h", "30m", "7d", "90s", "1h30m"; 0 or -1. */
static int parse_duration(const char *s, int64_t *out)
{
	int64_t total = 0;

	if (!*s)
		return -1;
	while (*s) {
		long long v;
		int64_t unit;
		char *end;

		if (*s < '0' || *s > '9')
			return -1;
		v = strtoll(s, &end, 10);
		if (v > 100000000LL)
			return -1;
		switch (*end) {
		case 's': unit = 1000; break;
		case 'm': unit = 60000; break;
		case 'h': unit = 3600000; break;
		case 'd': unit = 86400000; break;
		default: return -1;
		}
		total += v * unit;
		s = end + 1;
	}
	*out = total;
	return total >= 1000 ? 0 : -1;
}

static int parse(struct leaks *l, int argc, char **argv)
{
	const char *env = getenv("REDIS_INVOCATION_RETENTION");
	int i;

	relayctl_conf_init(&l->conf);
	l->ttl_ms = DEFAULT_TTL_MS;
	if (env && *env && parse_duration(env, &l->ttl_ms))
		return relayctl_error(RELAYCTL_USAGE, "state leaks: "
				      "REDIS_INVOCATION_RETENTION: invalid "
				      "value \"%s\"", env);
	for (i = 1; i < argc; i++) {
		const char *v;
		int m = relayctl_conf_arg(&l->conf, argc, argv, &i,
					  "state leaks", 1, usage);

		if (m == RELAYCTL_ARG_HELP)
			return -1;
		if (m == RELAYCTL_ARG_BAD)
			goto bad;
		if (m == RELAYCTL_ARG_TAKEN)
			continue;
		if (strcmp(argv[i], "--retain") == 0) {
			l->retain = 1;
			continue;
		}
		m = relayctl_opt_value(argc, argv, &i, "--ttl", "state leaks",
				       &v);
		if (m < 0)
			goto bad;
		if (m > 0) {
			if (parse_duration(v, &l->ttl_ms)) {
				relayctl_error(RELAYCTL_USAGE, "state leaks: "
					       "--ttl takes a duration of at "
					       "least 1s such as 168h, got "
					       "\"%s\"", v);
				goto bad;
			}
			continue;
		}
		if (relayctl_positional("state leaks", argv[i], NULL))
			goto bad;
	}
	if (!l->conf.group) {
		relayctl_error(RELAYCTL_USAGE, "state leaks: REDIS_GROUP is "
			       "not set (or pass --group NAME)");
		goto bad;
	}
	return 0;
bad:
	usage(stderr);
	return RELAYCTL_USAGE;
}

static relay_redis_reply *cmd(struct leaks *l, int argc,
			      const char *const *argv, int *rc)
{
	relay_redis_reply *r = NULL;

	*rc = relay_redis_sync_command(l->b, &r, argc, argv, NULL);
	if (!*rc && relay_redis_reply_error(r)) {
		*rc = relayctl_error(RELAYCTL_FAIL, "state leaks: Redis: %s",
				     r->str);
		relay_redis_reply_free(r);
		return NULL;
	}
	if (*rc) {
		*rc = relayctl_error(RELAYCTL_FAIL, "state leaks: Redis: %s",
				     relay_strerror(*rc));
		return NULL;
	}
	return r;
}

struct retain_wait {
	int done, status;
	relay_inv_outcome o;
};

static void retain_cb(int status, const relay_inv_outcome *o, void *p)
{
	struct retain_wait *w = p;

	w->done = 1;
	w->status = status;
	if (o)
		w->o = *o;
}

/* "ms-seq": the only ids a state hash of ours ends with. */
static int id_valid(const char *id)
{
	const char *p = id;

	if (*p < '0' || *p > '9')
		return 0;
	while (*p >= '0' && *p <= '9')
		p++;
	if (*p++ != '-' || *p < '0' || *p > '9')
		return 0;
	while (*p >= '0' && *p <= '9')
		p++;
	return *p == '\0';
}

/* One candidate key: decide, report, maybe retain. */
static int check_key(struct leaks *l, const char *key)
{
	const char *id = key + strlen(l->prefix);
	const char *hx[] = { "HEXISTS", key, "__terminal" };
	const char *xr[] = { "XRANGE", l->stream, id, id };
	const char *xp[] = { "XPENDING", l->stream, l->conf.group, id,
			     id, "1" };
	relay_redis_reply *r;
	int rc, skip;

	if (!id_valid(id))
		return 0;
	r = cmd(l, 3, hx, &rc);
	skip = !r || r->integer == 1;
	relay_redis_reply_free(r);
	if (rc || skip)
		return rc;
	r = cmd(l, 4, xr, &rc);
	skip = !r || r->elements > 0;
	relay_redis_reply_free(r);
	if (rc || skip)
		return rc;
	r = cmd(l, 6, xp, &rc);
	skip = !r || r->elements > 0;
	relay_redis_reply_free(r);
	if (rc || skip)
		return rc;
	l->found++;
	if (l->list)
		json_array_append_new(l->list, json_pack("{s:s, s:s}", "id",
							 id, "key", key));
	else
		printf("%s  %s\n", id, key);
	if (l->retain) {
		struct retain_wait w = { 0, 0, { 0 } };

		rc = relay_inv_retain(l->b, key, l->ttl_ms, retain_cb, &w);
		if (!rc)
			relay_redis_sync_wait(l->b, &w.done);
		rc = rc ? rc : w.status;
		if (rc)
			return relayctl_error(RELAYCTL_FAIL, "state leaks: "
					      "retain %s: %s", key,
					      relay_strerror(rc));
		if (w.o.result == RELAY_INV_R_RECORDED)
			l->retained++;
	}
	return 0;
}

/* @s with the glob specials of SCAN MATCH escaped, then "*" (new). */
static char *match_pattern(const char *s)
{
	char *out = malloc(strlen(s) * 2 + 2), *o = out;

	if (!out)
		return NULL;
	for (; *s; s++) {
		if (strchr("*?[]\\", *s))
			*o++ = '\\';
		*o++ = *s;
	}
	*o++ = '*';
	*o = '\0';
	return out;
}

static int scan(struct leaks *l)
{
	char cursor[32] = "0", *pat = match_pattern(l->prefix);
	const char *argv[] = { "SCAN", cursor, "MATCH", pat, "COUNT", "1000",
			       "TYPE", "hash" };
	relay_redis_reply *r;
	size_t i;
	int rc = 0;

	if (!pat)
		return relayctl_error(RELAYCTL_FAIL, "state leaks: out of "
				      "memory");
	/* SCAN reads the node it is sent to: on Redis Cluster, first a
	 * command on the stream's key moves the connection to the owner of
	 * the stream's slot, where all its state hashes are. */
	{
		const char *type[] = { "TYPE", l->stream };

		r = cmd(l, 2, type, &rc);
		relay_redis_reply_free(r);
		if (rc) {
			free(pat);
			return rc;
		}
	}
	do {
		r = cmd(l, 8, argv, &rc);
		if (!r)
			break;
		if (r->type != RELAY_REDIS_REPLY_ARRAY || r->elements != 2) {
			relay_redis_reply_free(r);
			rc = relayctl_error(RELAYCTL_FAIL, "state leaks: "
					    "unexpected SCAN reply");
			break;
		}
		snprintf(cursor, sizeof(cursor), "%s", r->element[0]->str);
		for (i = 0; !rc && i < r->element[1]->elements; i++)
			rc = check_key(l, r->element[1]->element[i]->str);
		relay_redis_reply_free(r);
	} while (!rc && strcmp(cursor, "0") != 0);
	free(pat);
	return rc;
}

static int leaks(int argc, char **argv)
{
	struct leaks l;
	char buf[32];
	char **streams = NULL;
	relay_error err;
	size_t n = 0, k;
	int rc;

	memset(&l, 0, sizeof(l));
	rc = parse(&l, argc, argv);
	if (rc)
		return rc < 0 ? RELAYCTL_OK : rc;
	rc = relayctl_redis_open(&l.conf, "state leaks", &l.b);
	if (rc)
		return rc;
	memset(&err, 0, sizeof(err));
	rc = relay_stream_list_parse(l.conf.stream, &streams, &n, &err);
	if (rc == RELAY_EINVAL) {
		rc = relayctl_error(RELAYCTL_USAGE, "state leaks: REDIS_STREAM "
				    "(--stream): invalid value \"%s\": %s",
				    l.conf.stream, err.text);
		goto done;
	}
	if (rc || (l.conf.json && !(l.list = json_array()))) {
		rc = relayctl_error(RELAYCTL_FAIL, "state leaks: out of "
				    "memory");
		goto done;
	}
	/* Every stream's state hashes in turn (totals over all). */
	for (k = 0; k < n; k++) {
		l.stream = streams[k];
		relay_free(l.prefix);
		l.prefix = relay_inv_key(l.stream, l.conf.group, "");
		if (!l.prefix) {
			rc = relayctl_error(RELAYCTL_FAIL, "state leaks: out "
					    "of memory");
			goto done;
		}
		rc = scan(&l);
		if (rc)
			goto done;
	}
	if (l.list) {
		json_t *o = json_pack("{s:O, s:I, s:I, s:b}", "leaked", l.list,
				      "found", (json_int_t)l.found,
				      "retained", (json_int_t)l.retained,
				      "dry_run", !l.retain);

		rc = o ? relayctl_put_json(o, JSON_INDENT(2) |
					   JSON_PRESERVE_ORDER)
		       : RELAYCTL_FAIL;
		json_decref(o);
	} else if (l.retain) {
		printf("%lld leaked state hash%s, %lld retained (TTL %s)\n",
		       l.found, l.found == 1 ? "" : "es", l.retained,
		       relayctl_fmt_age(l.ttl_ms / 1000, buf, sizeof(buf)));
	} else {
		printf("%lld leaked state hash%s (dry run: nothing changed; "
		       "--retain gives them the retention TTL)\n", l.found,
		       l.found == 1 ? "" : "es");
	}
	if (!rc && fflush(stdout))
		rc = RELAYCTL_FAIL;
done:
	json_decref(l.list);
	relay_free(l.prefix);
	relay_stream_list_free(streams);
	relay_redis_free(l.b);
	return rc;
}

int relayctl_cmd_state(int argc, char **argv)
{
	static const struct relayctl_sub subs[] = {
		{ "leaks", leaks, NULL },
	};

	return relayctl_dispatch(subs, sizeof(subs) / sizeof(subs[0]),
				 "state", argc, argv, usage_top);
}
