/*
 * memory.c - the "memory" Redis backend: an in-process keyspace with the
 * observable semantics of the Redis 7 commands librelay sends (keys, TTLs,
 * strings, hashes; streams in memory_stream.c; transitions in
 * memory_script.c), so logic tests run in microseconds.
 *
 * Time comes from the injectable clock: TTLs expire lazily on access, as
 * in Redis, when the clock's wall time reaches the deadline. Replies are
 * delivered synchronously: the callback runs before relay_redis_command()
 * returns. Single-threaded; every command is atomic because nothing
 * yields.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common.h"
#include "memory.h"

int64_t relay__mem_now(mem_backend *m)
{
	return relay_clock_wall_ms(m->clock);
}

static size_t hash_name(const char *s, size_t len)
{
	uint64_t h = 1469598103934665603ULL;
	size_t i;

	for (i = 0; i < len; i++) {
		h ^= (unsigned char)s[i];
		h *= 1099511628211ULL;
	}
	return (size_t)(h % MEM_BUCKETS);
}

static void str_free(mem_str *s)
{
	relay__free(s->s);
	s->s = NULL;
	s->len = 0;
}

static int str_set(mem_str *s, const char *p, size_t len)
{
	char *c = relay__strndup(p, len);

	if (!c)
		return RELAY_ENOMEM;
	relay__free(s->s);
	s->s = c;
	s->len = len;
	return 0;
}

static void stream_free(mem_stream *st)
{
	size_t i, j;

	for (i = 0; i < st->n; i++) {
		for (j = 0; j < st->e[i].nfv; j++)
			str_free(&st->e[i].fv[j]);
		relay__free(st->e[i].fv);
	}
	relay__free(st->e);
	for (i = 0; i < st->ng; i++) {
		mem_group *g = &st->g[i];

		for (j = 0; j < g->npel; j++)
			relay__free(g->pel[j].consumer);
		for (j = 0; j < g->nconsumers; j++)
			relay__free(g->consumers[j]);
		relay__free(g->consumers);
		relay__free(g->pel);
		relay__free(g->name);
	}
	relay__free(st->g);
}

static void key_free(mem_key *k)
{
	size_t i;

	switch (k->type) {
	case MEM_STRING:
		str_free(&k->u.str);
		break;
	case MEM_HASH:
		for (i = 0; i < 2 * k->u.hash.n; i++)
			str_free(&k->u.hash.fv[i]);
		relay__free(k->u.hash.fv);
		break;
	case MEM_STREAM:
		stream_free(&k->u.stream);
		break;
	}
	str_free(&k->name);
	relay__free(k);
}

void relay__mem_delete(mem_backend *m, mem_key *k)
{
	mem_key **pp = &m->bucket[hash_name(k->name.s, k->name.len)];

	while (*pp && *pp != k)
		pp = &(*pp)->next;
	if (*pp)
		*pp = k->next;
	key_free(k);
}

/* Find a live key; an expired one is deleted on the way (lazy expiry). */
mem_key *relay__mem_lookup(mem_backend *m, const char *name, size_t len)
{
	mem_key *k = m->bucket[hash_name(name, len)];

	for (; k; k = k->next) {
		if (k->name.len == len && memcmp(k->name.s, name, len) == 0)
			break;
	}
	if (k && k->expire_at && k->expire_at <= relay__mem_now(m)) {
		relay__mem_delete(m, k);
		return NULL;
	}
	return k;
}

mem_key *relay__mem_create(mem_backend *m, const char *name, size_t len,
			   enum mem_type type)
{
	size_t b = hash_name(name, len);
	mem_key *k = relay__calloc(1, sizeof(*k));

	if (!k || str_set(&k->name, name, len)) {
		relay__free(k);
		return NULL;
	}
	k->type = type;
	k->next = m->bucket[b];
	m->bucket[b] = k;
	return k;
}

const mem_str *relay__mem_hget(const mem_key *k, const char *f, size_t flen)
{
	size_t i;

	for (i = 0; i < k->u.hash.n; i++) {
		const mem_str *n = &k->u.hash.fv[2 * i];

		if (n->len == flen && memcmp(n->s, f, flen) == 0)
			return &k->u.hash.fv[2 * i + 1];
	}
	return NULL;
}

int relay__mem_hset(mem_key *k, const char *f, size_t flen, const char *v,
		    size_t vlen)
{
	mem_hash *h = &k->u.hash;
	mem_str *cur = (mem_str *)relay__mem_hget(k, f, flen);
	mem_str *grown;

	if (cur)
		return str_set(cur, v, vlen) ? RELAY_ENOMEM : 0;
	if (h->n == h->cap) {
		size_t cap = h->cap ? 2 * h->cap : 4;

		grown = relay__realloc(h->fv, 2 * cap * sizeof(*grown));
		if (!grown)
			return RELAY_ENOMEM;
		h->fv = grown;
		h->cap = cap;
	}
	memset(&h->fv[2 * h->n], 0, 2 * sizeof(mem_str));
	if (str_set(&h->fv[2 * h->n], f, flen) ||
	    str_set(&h->fv[2 * h->n + 1], v, vlen)) {
		str_free(&h->fv[2 * h->n]);
		return RELAY_ENOMEM;
	}
	h->n++;
	return 1;
}

static int hdel(mem_key *k, const char *f, size_t flen)
{
	mem_hash *h = &k->u.hash;
	size_t i;

	for (i = 0; i < h->n; i++) {
		if (h->fv[2 * i].len == flen &&
		    memcmp(h->fv[2 * i].s, f, flen) == 0) {
			str_free(&h->fv[2 * i]);
			str_free(&h->fv[2 * i + 1]);
			memmove(&h->fv[2 * i], &h->fv[2 * i + 2],
				2 * (h->n - i - 1) * sizeof(mem_str));
			h->n--;
			return 1;
		}
	}
	return 0;
}

static relay_redis_reply *wrongtype(void)
{
	return relay__reply_errorf("WRONGTYPE Operation against a key holding "
				   "the wrong kind of value");
}

static relay_redis_reply *ok(void)
{
	return relay__reply_str(RELAY_REDIS_REPLY_STATUS, "OK", 2);
}

static int arg_is(const mem_args *a, int i, const char *s)
{
	return i < a->argc && strlen(s) == a->len[i] &&
	       strncasecmp(a->argv[i], s, a->len[i]) == 0;
}

static int arg_i64(const mem_args *a, int i, long long *out)
{
	char buf[32], *end;

	if (i >= a->argc || a->len[i] == 0 || a->len[i] >= sizeof(buf))
		return -1;
	memcpy(buf, a->argv[i], a->len[i]);
	buf[a->len[i]] = '\0';
	*out = strtoll(buf, &end, 10);
	return *end ? -1 : 0;
}

static mem_key *lookup_arg(mem_backend *m, const mem_args *a, int i)
{
	return relay__mem_lookup(m, a->argv[i], a->len[i]);
}

static relay_redis_reply *cmd_keys(mem_backend *m, const mem_args *a,
				   const char *cmd)
{
	long long n = 0, v;
	int i;
	mem_key *k;

	if (strcasecmp(cmd, "DEL") == 0 || strcasecmp(cmd, "EXISTS") == 0) {
		for (i = 1; i < a->argc; i++) {
			k = lookup_arg(m, a, i);
			if (!k)
				continue;
			n++;
			if (cmd[0] == 'D' || cmd[0] == 'd')
				relay__mem_delete(m, k);
		}
		return relay__reply_int(n);
	}
	k = lookup_arg(m, a, 1);
	if (strcasecmp(cmd, "TYPE") == 0) {
		static const char *const names[] = { "none", "string", "hash",
						     "stream" };
		const char *t = names[k ? k->type : 0];

		return relay__reply_str(RELAY_REDIS_REPLY_STATUS, t, strlen(t));
	}
	if (strcasecmp(cmd, "PERSIST") == 0) {
		n = k && k->expire_at;
		if (k)
			k->expire_at = 0;
		return relay__reply_int(n);
	}
	if (strcasecmp(cmd, "PTTL") == 0 || strcasecmp(cmd, "TTL") == 0) {
		if (!k)
			return relay__reply_int(-2);
		if (!k->expire_at)
			return relay__reply_int(-1);
		v = k->expire_at - relay__mem_now(m);
		if (cmd[0] == 'T' || cmd[0] == 't')
			v = (v + 500) / 1000;
		return relay__reply_int(v);
	}
	/* EXPIRE / PEXPIRE */
	if (a->argc != 3 || arg_i64(a, 2, &v))
		return relay__reply_errorf("ERR value is not an integer or out "
					   "of range");
	if (!k)
		return relay__reply_int(0);
	if (cmd[0] == 'E' || cmd[0] == 'e')
		v *= 1000;
	k->expire_at = relay__mem_now(m) + v;
	if (v <= 0)
		relay__mem_delete(m, k);
	return relay__reply_int(1);
}

static relay_redis_reply *cmd_string(mem_backend *m, const mem_args *a,
				     const char *cmd)
{
	mem_key *k = lookup_arg(m, a, 1);
	long long ttl = 0;
	int nx = 0, i;

	if (strcasecmp(cmd, "GET") == 0) {
		if (!k)
			return relay__reply_nil();
		if (k->type != MEM_STRING)
			return wrongtype();
		return relay__reply_str(RELAY_REDIS_REPLY_STRING, k->u.str.s,
					k->u.str.len);
	}
	for (i = 3; i < a->argc; i++) {
		if (arg_is(a, i, "NX")) {
			nx = 1;
		} else if ((arg_is(a, i, "PX") || arg_is(a, i, "EX")) &&
			   arg_i64(a, i + 1, &ttl) == 0 && ttl > 0) {
			if (arg_is(a, i, "EX"))
				ttl *= 1000;
			i++;
		} else {
			return relay__reply_errorf("ERR syntax error");
		}
	}
	if (k && nx)
		return relay__reply_nil();
	if (k)
		relay__mem_delete(m, k);
	k = relay__mem_create(m, a->argv[1], a->len[1], MEM_STRING);
	if (!k || str_set(&k->u.str, a->argv[2], a->len[2]))
		return NULL;
	k->expire_at = ttl ? relay__mem_now(m) + ttl : 0;
	return ok();
}

static relay_redis_reply *cmd_hash(mem_backend *m, const mem_args *a,
				   const char *cmd)
{
	mem_key *k = lookup_arg(m, a, 1);
	relay_redis_reply *r;
	const mem_str *v;
	long long n = 0;
	size_t i;
	int j, rc;

	if (k && k->type != MEM_HASH)
		return wrongtype();
	if (strcasecmp(cmd, "HSET") == 0) {
		if (a->argc < 4 || a->argc % 2)
			return relay__reply_errorf("ERR wrong number of "
						   "arguments for 'hset' "
						   "command");
		if (!k)
			k = relay__mem_create(m, a->argv[1], a->len[1],
					      MEM_HASH);
		if (!k)
			return NULL;
		for (j = 2; j + 1 < a->argc; j += 2) {
			rc = relay__mem_hset(k, a->argv[j], a->len[j],
					     a->argv[j + 1], a->len[j + 1]);
			if (rc < 0)
				return NULL;
			n += rc;
		}
		return relay__reply_int(n);
	}
	if (strcasecmp(cmd, "HGET") == 0) {
		v = k && a->argc > 2 ? relay__mem_hget(k, a->argv[2],
						       a->len[2])
				     : NULL;
		return v ? relay__reply_str(RELAY_REDIS_REPLY_STRING, v->s,
					    v->len)
			 : relay__reply_nil();
	}
	if (strcasecmp(cmd, "HEXISTS") == 0)
		return relay__reply_int(k && relay__mem_hget(k, a->argv[2],
							     a->len[2]));
	if (strcasecmp(cmd, "HLEN") == 0)
		return relay__reply_int(k ? (long long)k->u.hash.n : 0);
	if (strcasecmp(cmd, "HDEL") == 0) {
		for (j = 2; k && j < a->argc; j++)
			n += hdel(k, a->argv[j], a->len[j]);
		if (k && k->u.hash.n == 0)
			relay__mem_delete(m, k);
		return relay__reply_int(n);
	}
	/* HGETALL */
	r = relay__reply_array(k ? 2 * k->u.hash.n : 0);
	for (i = 0; r && k && i < 2 * k->u.hash.n; i++) {
		r->element[i] = relay__reply_str(RELAY_REDIS_REPLY_STRING,
						 k->u.hash.fv[i].s,
						 k->u.hash.fv[i].len);
		if (!r->element[i]) {
			relay_redis_reply_free(r);
			return NULL;
		}
	}
	return r;
}

static void flush(mem_backend *m)
{
	size_t i;

	for (i = 0; i < MEM_BUCKETS; i++) {
		while (m->bucket[i])
			relay__mem_delete(m, m->bucket[i]);
	}
}

static relay_redis_reply *cmd_misc(mem_backend *m, const mem_args *a,
				   const char *cmd)
{
	if (strcasecmp(cmd, "PING") == 0)
		return relay__reply_str(RELAY_REDIS_REPLY_STATUS, "PONG", 4);
	flush(m);
	return ok();
}

typedef relay_redis_reply *(*mem_cmd_fn)(mem_backend *m, const mem_args *a,
					 const char *cmd);

static const struct {
	const char *name;
	mem_cmd_fn fn;
	int min_argc;
} commands[] = {
	{ "PING", cmd_misc, 1 },      { "FLUSHALL", cmd_misc, 1 },
	{ "DEL", cmd_keys, 2 },       { "EXISTS", cmd_keys, 2 },
	{ "TYPE", cmd_keys, 2 },      { "PERSIST", cmd_keys, 2 },
	{ "TTL", cmd_keys, 2 },       { "PTTL", cmd_keys, 2 },
	{ "EXPIRE", cmd_keys, 3 },    { "PEXPIRE", cmd_keys, 3 },
	{ "GET", cmd_string, 2 },     { "SET", cmd_string, 3 },
	{ "HSET", cmd_hash, 4 },      { "HGET", cmd_hash, 3 },
	{ "HGETALL", cmd_hash, 2 },   { "HDEL", cmd_hash, 3 },
	{ "HLEN", cmd_hash, 2 },      { "HEXISTS", cmd_hash, 3 },
	{ "XADD", relay__mem_stream_cmd, 5 },
	{ "XLEN", relay__mem_stream_cmd, 2 },
	{ "XRANGE", relay__mem_stream_cmd, 4 },
	{ "XREVRANGE", relay__mem_stream_cmd, 4 },
	{ "XDEL", relay__mem_stream_cmd, 3 },
	{ "XGROUP", relay__mem_stream_cmd, 4 },
	{ "XREADGROUP", relay__mem_stream_cmd, 7 },
	{ "XACK", relay__mem_stream_cmd, 4 },
	{ "XPENDING", relay__mem_stream_cmd, 3 },
	{ "XCLAIM", relay__mem_stream_cmd, 6 },
	{ "XAUTOCLAIM", relay__mem_stream_cmd, 6 },
};

static void deliver(relay_redis_backend *b, relay_redis_reply *r,
		    relay_redis_reply_cb cb, void *payload)
{
	if (cb)
		cb(b, r ? 0 : RELAY_ENOMEM, r, payload);
	else
		relay_redis_reply_free(r);
}

/* Copy argument lengths so implementations never call strlen(). */
static int fill_args(mem_args *a, size_t *lens, int argc,
		     const char *const *argv, const size_t *argvlen)
{
	int i;

	a->argc = argc;
	a->argv = argv;
	a->len = lens;
	for (i = 0; i < argc; i++)
		lens[i] = argvlen ? argvlen[i] : strlen(argv[i]);
	return 0;
}

#define MEM_MAX_ARGS 512

static int mem_command(relay_redis_backend *b, int argc,
		       const char *const *argv, const size_t *argvlen,
		       relay_redis_reply_cb cb, void *payload);

/* While "down", every call completes with RELAY_ECLOSED and touches
 * nothing, as a lost connection would. */
static int outage(mem_backend *m, relay_redis_reply_cb cb, void *payload)
{
	snprintf(m->errstr, sizeof(m->errstr), "connection lost (simulated)");
	if (cb)
		cb(&m->parent, RELAY_ECLOSED, NULL, payload);
	return 0;
}

int relay_redis_memory_set_down(relay_redis_backend *b, int down)
{
	relay_redis_backend *inner = relay__redis_defer_inner(b);

	if (inner)
		b = inner;
	if (b->command != mem_command)
		return RELAY_EINVAL;
	((mem_backend *)b)->down = down;
	return 0;
}

static int mem_command(relay_redis_backend *b, int argc,
		       const char *const *argv, const size_t *argvlen,
		       relay_redis_reply_cb cb, void *payload)
{
	mem_backend *m = (mem_backend *)b;
	size_t lens[MEM_MAX_ARGS];
	relay_redis_reply *r = NULL;
	char cmd[16];
	mem_args a;
	size_t i;

	if (argc > MEM_MAX_ARGS)
		return RELAY_EINVAL;
	if (m->down)
		return outage(m, cb, payload);
	fill_args(&a, lens, argc, argv, argvlen);
	snprintf(cmd, sizeof(cmd), "%.*s",
		 (int)(lens[0] < 15 ? lens[0] : 15), argv[0]);
	for (i = 0; i < RELAY__ARRAY_SIZE(commands); i++) {
		if (strcasecmp(cmd, commands[i].name) != 0)
			continue;
		if (argc < commands[i].min_argc)
			r = relay__reply_errorf("ERR wrong number of arguments "
						"for '%s' command", cmd);
		else
			r = commands[i].fn(m, &a, cmd);
		break;
	}
	if (i == RELAY__ARRAY_SIZE(commands))
		r = relay__reply_errorf("ERR unknown command '%s'", cmd);
	deliver(b, r, cb, payload);
	return 0;
}

static int mem_script(relay_redis_backend *b, relay_redis_script op,
		      int numkeys, int argc, const char *const *argv,
		      const size_t *argvlen, relay_redis_reply_cb cb,
		      void *payload)
{
	mem_backend *m = (mem_backend *)b;
	size_t lens[MEM_MAX_ARGS];
	mem_args a;

	if (argc > MEM_MAX_ARGS)
		return RELAY_EINVAL;
	if (m->down)
		return outage(m, cb, payload);
	fill_args(&a, lens, argc, argv, argvlen);
	deliver(b, relay__mem_script_run(m, op, &a), cb, payload);
	return 0;
}

static const char *mem_errstr(const relay_redis_backend *b)
{
	return ((const mem_backend *)b)->errstr;
}

static void mem_free(relay_redis_backend *b)
{
	mem_backend *m = (mem_backend *)b;

	flush(m);
	relay__free(m);
}

int relay_redis_memory_new(relay_redis_backend **out,
			   const relay_clock *clock)
{
	mem_backend *m = relay__calloc(1, sizeof(*m));

	*out = NULL;
	if (!m)
		return RELAY_ENOMEM;
	m->parent.version = RELAY_REDIS_BACKEND_VERSION;
	m->parent.name = "memory";
	m->parent.command = mem_command;
	m->parent.script = mem_script;
	m->parent.wait = NULL;
	m->parent.errstr = mem_errstr;
	m->parent.free = mem_free;
	m->clock = clock;
	*out = &m->parent;
	return 0;
}
