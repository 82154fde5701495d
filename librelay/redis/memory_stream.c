/*
 * memory_stream.c - streams and consumer groups of the memory backend:
 * XADD XLEN XRANGE XREVRANGE XDEL XGROUP XREADGROUP (the PEL commands are in
 * memory_pel.c), with Redis 7.0 semantics for what librelay relies on:
 *
 *  - XADD "*" ids come from the injected clock (ms) and never go
 *    backwards; explicit ids must exceed the stream's last id.
 *  - XREADGROUP ">" delivers entries after the group's last-delivered id
 *    and adds them to the PEL (delivery count 1, delivery time now); an
 *    empty read replies nil (BLOCK never waits here). A history read (an
 *    id instead of ">") replies the consumer's PEL entries after that id,
 *    a deleted entry as [id, nil].
 *  - XGROUP CREATE with "$" or an id, MKSTREAM, BUSYGROUP.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common.h"
#include "memory.h"

int relay__mem_sid_cmp(mem_sid a, mem_sid b)
{
	if (a.ms != b.ms)
		return a.ms < b.ms ? -1 : 1;
	if (a.seq != b.seq)
		return a.seq < b.seq ? -1 : 1;
	return 0;
}

static int parse_u64(const char *s, size_t len, uint64_t *out)
{
	uint64_t v = 0;
	size_t i;

	if (len == 0 || len > 20)
		return -1;
	for (i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		if (v > (UINT64_MAX - (uint64_t)(s[i] - '0')) / 10)
			return -1;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	*out = v;
	return 0;
}

/* "ms-seq" or "ms" (seq 0). */
int relay__mem_sid_parse(const char *s, size_t len, mem_sid *out)
{
	const char *dash = memchr(s, '-', len);

	out->seq = 0;
	if (!dash)
		return parse_u64(s, len, &out->ms);
	if (parse_u64(s, (size_t)(dash - s), &out->ms) ||
	    parse_u64(dash + 1, len - (size_t)(dash - s) - 1, &out->seq))
		return -1;
	return 0;
}

int relay__mem_sid_fmt(mem_sid id, char *buf, size_t size)
{
	return snprintf(buf, size, "%" PRIu64 "-%" PRIu64, id.ms, id.seq);
}

relay_redis_reply *relay__mem_sid_reply(mem_sid id)
{
	char buf[48];
	int n = relay__mem_sid_fmt(id, buf, sizeof(buf));

	return relay__reply_str(RELAY_REDIS_REPLY_STRING, buf, (size_t)n);
}

/* Argument @i as a decimal integer; -1 when it is not one. */
int relay__mem_num_arg(const mem_args *a, int i, long long *out)
{
	char buf[24], *end;

	if (i >= a->argc || a->len[i] == 0 || a->len[i] >= sizeof(buf))
		return -1;
	memcpy(buf, a->argv[i], a->len[i]);
	buf[a->len[i]] = '\0';
	*out = strtoll(buf, &end, 10);
	return *end ? -1 : 0;
}

relay_redis_reply *relay__mem_not_integer(void)
{
	return relay__reply_errorf("ERR value is not an integer or out of "
				   "range");
}

relay_redis_reply *relay__mem_bad_id(void)
{
	return relay__reply_errorf("ERR Invalid stream ID specified as "
				   "stream command argument");
}

/* Range bound: "-", "+", "(id" exclusive, or an id; end ids default seq
 * to the maximum. Returns -1 on a bad id. */
int relay__mem_parse_bound(const char *s, size_t len, int is_end, mem_sid *out)
{
	int excl = 0;

	if (len == 1 && s[0] == '-') {
		*out = (mem_sid){ 0, 0 };
		return 0;
	}
	if (len == 1 && s[0] == '+') {
		*out = SID_MAX;
		return 0;
	}
	if (len > 1 && s[0] == '(') {
		excl = 1;
		s++;
		len--;
	}
	if (relay__mem_sid_parse(s, len, out))
		return -1;
	if (is_end && !memchr(s, '-', len))
		out->seq = UINT64_MAX;
	if (excl && !is_end) {
		if (out->seq == UINT64_MAX) {
			out->ms++;
			out->seq = 0;
		} else {
			out->seq++;
		}
	} else if (excl) {
		if (out->seq == 0) {
			if (out->ms == 0)
				return -1;
			out->ms--;
			out->seq = UINT64_MAX;
		} else {
			out->seq--;
		}
	}
	return 0;
}

mem_entry *relay__mem_find_entry(mem_stream *st, mem_sid id, size_t *pos)
{
	size_t lo = 0, hi = st->n, mid;

	while (lo < hi) {
		mid = (lo + hi) / 2;
		if (relay__mem_sid_cmp(st->e[mid].id, id) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (pos)
		*pos = lo;
	if (lo < st->n && relay__mem_sid_cmp(st->e[lo].id, id) == 0)
		return &st->e[lo];
	return NULL;
}

relay_redis_reply *relay__mem_entry_reply(const mem_entry *e, mem_sid id)
{
	relay_redis_reply *r = relay__reply_array(2), *f;
	size_t i;

	if (!r)
		return NULL;
	r->element[0] = relay__mem_sid_reply(id);
	f = r->element[1] = e ? relay__reply_array(e->nfv)
			      : relay__reply_nil();
	for (i = 0; e && f && i < e->nfv; i++) {
		f->element[i] = relay__reply_str(RELAY_REDIS_REPLY_STRING,
						 e->fv[i].s, e->fv[i].len);
		if (!f->element[i])
			f = NULL;
	}
	if (!r->element[0] || !f) {
		relay_redis_reply_free(r);
		return NULL;
	}
	return r;
}

int relay__mem_xadd(mem_key *k, mem_sid id, const mem_args *a, int first,
		    int64_t now, relay_redis_reply **out)
{
	mem_stream *st = &k->u.stream;
	mem_entry *e;
	int i, n = a->argc - first;

	if (n <= 0 || n % 2) {
		*out = relay__reply_errorf("ERR wrong number of arguments for "
					   "'xadd' command");
		return 0;
	}
	if (id.ms == UINT64_MAX && id.seq == UINT64_MAX) { /* "*" */
		id.ms = (uint64_t)now > st->last.ms ? (uint64_t)now
						    : st->last.ms;
		id.seq = id.ms == st->last.ms ? st->last.seq + 1 : 0;
	}
	if (relay__mem_sid_cmp(id, st->last) <= 0) {
		*out = relay__reply_errorf("ERR The ID specified in XADD is "
					   "equal or smaller than the target "
					   "stream top item");
		return 0;
	}
	/* Allocate everything first: on failure nothing has changed. */
	if (st->n == st->cap) {
		size_t cap = st->cap ? 2 * st->cap : 8;
		mem_entry *g = relay__realloc(st->e, cap * sizeof(*g));

		if (!g)
			return RELAY_ENOMEM;
		st->e = g;
		st->cap = cap;
	}
	*out = relay__mem_sid_reply(id);
	e = &st->e[st->n];
	e->id = id;
	e->nfv = (size_t)n;
	e->fv = relay__calloc((size_t)n, sizeof(*e->fv));
	for (i = 0; *out && e->fv && i < n; i++) {
		e->fv[i].s = relay__strndup(a->argv[first + i],
					    a->len[first + i]);
		e->fv[i].len = a->len[first + i];
		if (!e->fv[i].s)
			break;
	}
	if (!*out || !e->fv || i < n) {
		while (e->fv && i-- > 0)
			relay__free(e->fv[i].s);
		relay__free(e->fv);
		relay_redis_reply_free(*out);
		*out = NULL;
		return RELAY_ENOMEM;
	}
	st->n++;
	st->last = id;
	return 0;
}

void relay__mem_xadd_undo(mem_key *k, mem_sid prev_last)
{
	mem_stream *st = &k->u.stream;
	mem_entry *e = &st->e[--st->n];
	size_t j;

	for (j = 0; j < e->nfv; j++)
		relay__free(e->fv[j].s);
	relay__free(e->fv);
	st->last = prev_last;
}

static relay_redis_reply *xadd(mem_backend *m, mem_key *k, const mem_args *a)
{
	relay_redis_reply *r = NULL;
	mem_sid id = SID_MAX;
	int created = 0;

	if (!(a->len[2] == 1 && a->argv[2][0] == '*') &&
	    (relay__mem_sid_parse(a->argv[2], a->len[2], &id) ||
	     (id.ms == 0 && id.seq == 0)))
		return relay__mem_bad_id();
	if (!k) {
		k = relay__mem_create(m, a->argv[1], a->len[1], MEM_STREAM);
		if (!k)
			return NULL;
		created = 1;
	}
	if (relay__mem_xadd(k, id, a, 3, relay__mem_now(m), &r) || !r) {
		if (created)
			relay__mem_delete(m, k);
		return r;
	}
	if (created && r->type == RELAY_REDIS_REPLY_ERROR)
		relay__mem_delete(m, k);
	return r;
}

/*
 * XRANGE key start end [COUNT n], and with @rev XREVRANGE key end start
 * [COUNT n]: the same window, newest first.
 */
static relay_redis_reply *xrange(mem_key *k, const mem_args *a, int rev)
{
	mem_stream *st = k ? &k->u.stream : NULL;
	long long count = -1;
	mem_sid lo, hi;
	size_t pos, end, i, n = 0;
	relay_redis_reply *r;

	if (relay__mem_parse_bound(a->argv[rev ? 3 : 2], a->len[rev ? 3 : 2],
				   0, &lo) ||
	    relay__mem_parse_bound(a->argv[rev ? 2 : 3], a->len[rev ? 2 : 3],
				   1, &hi))
		return relay__mem_bad_id();
	if (a->argc == 6 && a->len[4] == 5 &&
	    strncasecmp(a->argv[4], "COUNT", 5) == 0) {
		if (relay__mem_num_arg(a, 5, &count))
			return relay__mem_not_integer();
	} else if (a->argc != 4) {
		return relay__reply_errorf("ERR syntax error");
	}
	if (!st)
		return relay__reply_array(0);
	relay__mem_find_entry(st, lo, &pos);
	for (end = pos; end < st->n &&
			relay__mem_sid_cmp(st->e[end].id, hi) <= 0;
	     end++)
		;
	n = end - pos;
	if (count >= 0 && (long long)n > count)
		n = (size_t)count;
	/* Newest first: the last n of the window, from its end. */
	r = relay__reply_array(n);
	for (i = 0; r && i < n; i++) {
		const mem_entry *e = rev ? &st->e[end - 1 - i]
					 : &st->e[pos + i];

		r->element[i] = relay__mem_entry_reply(e, e->id);
		if (!r->element[i]) {
			relay_redis_reply_free(r);
			r = NULL;
		}
	}
	return r;
}

static void entry_free(mem_entry *e)
{
	size_t j;

	for (j = 0; j < e->nfv; j++)
		relay__free(e->fv[j].s);
	relay__free(e->fv);
}

static relay_redis_reply *xdel(mem_key *k, const mem_args *a)
{
	mem_stream *st = &k->u.stream;
	long long n = 0;
	mem_entry *e;
	mem_sid id;
	size_t pos;
	int i;

	for (i = 2; i < a->argc; i++) {
		if (relay__mem_sid_parse(a->argv[i], a->len[i], &id))
			return relay__mem_bad_id();
	}
	for (i = 2; i < a->argc; i++) {
		relay__mem_sid_parse(a->argv[i], a->len[i], &id);
		e = relay__mem_find_entry(st, id, &pos);
		if (!e)
			continue;
		entry_free(e);
		memmove(&st->e[pos], &st->e[pos + 1],
			(st->n - pos - 1) * sizeof(*st->e));
		st->n--;
		n++;
	}
	return relay__reply_int(n);
}

mem_group *relay__mem_find_group(mem_stream *st, const char *name, size_t len)
{
	size_t i;

	for (i = 0; i < st->ng; i++) {
		if (strlen(st->g[i].name) == len &&
		    memcmp(st->g[i].name, name, len) == 0)
			return &st->g[i];
	}
	return NULL;
}

static relay_redis_reply *xgroup(mem_backend *m, mem_key *k,
				 const mem_args *a)
{
	mem_group *g;
	mem_sid id;
	int mk = a->argc >= 6 && a->len[5] == 8 &&
		 strncasecmp(a->argv[5], "MKSTREAM", 8) == 0;

	if (!(a->len[1] == 6 && strncasecmp(a->argv[1], "CREATE", 6) == 0) ||
	    a->argc < 5)
		return relay__reply_errorf("ERR unknown XGROUP subcommand");
	if (a->len[4] == 1 && a->argv[4][0] == '$')
		id = k ? k->u.stream.last : (mem_sid){ 0, 0 };
	else if (relay__mem_sid_parse(a->argv[4], a->len[4], &id))
		return relay__mem_bad_id();
	if (!k && !mk)
		return relay__reply_errorf("ERR The XGROUP subcommand requires "
					   "the key to exist. Note that for "
					   "CREATE you may want to use the "
					   "MKSTREAM option to create an "
					   "empty stream automatically.");
	if (!k) {
		k = relay__mem_create(m, a->argv[2], a->len[2], MEM_STREAM);
		if (!k)
			return NULL;
	}
	if (relay__mem_find_group(&k->u.stream, a->argv[3], a->len[3]))
		return relay__reply_errorf("BUSYGROUP Consumer Group name "
					   "already exists");
	g = relay__realloc(k->u.stream.g,
			   (k->u.stream.ng + 1) * sizeof(*g));
	if (!g)
		return NULL;
	k->u.stream.g = g;
	g = &g[k->u.stream.ng];
	memset(g, 0, sizeof(*g));
	g->name = relay__strndup(a->argv[3], a->len[3]);
	if (!g->name)
		return NULL;
	g->last = id;
	k->u.stream.ng++;
	return relay__reply_str(RELAY_REDIS_REPLY_STATUS, "OK", 2);
}

relay_redis_reply *relay__mem_nogroup(const mem_args *a, int ki, int gi,
				  const char *cmd)
{
	return relay__reply_errorf("NOGROUP No such key '%.*s' or consumer "
				   "group '%.*s' in %s",
				   (int)a->len[ki], a->argv[ki],
				   (int)a->len[gi], a->argv[gi], cmd);
}

static relay_redis_reply *wrap_stream(const mem_args *a, int ki,
				      relay_redis_reply *entries)
{
	relay_redis_reply *outer, *pair;

	if (!entries)
		return NULL;
	outer = relay__reply_array(1);
	pair = relay__reply_array(2);
	if (!outer || !pair) {
		relay__free(outer ? outer->element : NULL);
		relay__free(outer);
		relay_redis_reply_free(pair);
		relay_redis_reply_free(entries);
		return NULL;
	}
	outer->element[0] = pair;
	pair->element[1] = entries;
	pair->element[0] = relay__reply_str(RELAY_REDIS_REPLY_STRING,
					    a->argv[ki], a->len[ki]);
	if (!pair->element[0]) {
		relay_redis_reply_free(outer);
		return NULL;
	}
	return outer;
}

/* XREADGROUP GROUP g c [COUNT n] [BLOCK ms] [NOACK] STREAMS key id */
static relay_redis_reply *xreadgroup(mem_backend *m, const mem_args *a)
{
	long long count = 0, block = 0;
	int i = 4, noack = 0, ki, ii;
	relay_redis_reply *r;
	mem_sid after;
	mem_group *g;
	mem_key *k;
	size_t pos, n = 0, j;
	int64_t now = relay__mem_now(m);
	char buf[24];

	if (!(a->len[1] == 5 && strncasecmp(a->argv[1], "GROUP", 5) == 0))
		return relay__reply_errorf("ERR syntax error");
	for (; i < a->argc; i++) {
		snprintf(buf, sizeof(buf), "%.*s",
			 (int)(a->len[i] < 23 ? a->len[i] : 23), a->argv[i]);
		if (strcasecmp(buf, "COUNT") == 0) {
			if (relay__mem_num_arg(a, ++i, &count))
				return relay__mem_not_integer();
		} else if (strcasecmp(buf, "BLOCK") == 0) {
			/* never waits: an empty read replies nil at once */
			if (relay__mem_num_arg(a, ++i, &block))
				return relay__mem_not_integer();
		} else if (strcasecmp(buf, "NOACK") == 0) {
			noack = 1;
		} else if (strcasecmp(buf, "STREAMS") == 0) {
			break;
		} else {
			return relay__reply_errorf("ERR syntax error");
		}
	}
	if (i + 3 != a->argc)
		return relay__reply_errorf("ERR syntax error (one stream "
					   "only)");
	ki = i + 1;
	ii = i + 2;
	k = relay__mem_lookup(m, a->argv[ki], a->len[ki]);
	if (k && k->type != MEM_STREAM)
		return relay__reply_errorf("WRONGTYPE Operation against a key "
					   "holding the wrong kind of value");
	g = k ? relay__mem_find_group(&k->u.stream, a->argv[2], a->len[2]) : NULL;
	if (!g)
		return relay__mem_nogroup(a, ki, 2, "XREADGROUP with GROUP option");
	if (relay__mem_note_consumer(g, a->argv[3], a->len[3]))
		return NULL;
	if (!(a->len[ii] == 1 && a->argv[ii][0] == '>')) {
		/* History: this consumer's pending entries after the id. */
		if (relay__mem_sid_parse(a->argv[ii], a->len[ii], &after))
			return relay__mem_bad_id();
		r = relay__reply_array(0);
		for (j = 0; r && j < g->npel; j++) {
			mem_nack *nk = &g->pel[j];
			relay_redis_reply **grown;

			if (relay__mem_sid_cmp(nk->id, after) <= 0 ||
			    strlen(nk->consumer) != a->len[3] ||
			    memcmp(nk->consumer, a->argv[3], a->len[3]) != 0)
				continue;
			if (count > 0 && (long long)r->elements >= count)
				break;
			grown = relay__realloc(r->element, (r->elements + 1) *
							     sizeof(*grown));
			if (!grown) {
				relay_redis_reply_free(r);
				return NULL;
			}
			r->element = grown;
			grown[r->elements] = relay__mem_entry_reply(
				relay__mem_find_entry(&k->u.stream, nk->id, NULL), nk->id);
			if (!grown[r->elements]) {
				relay_redis_reply_free(r);
				return NULL;
			}
			r->elements++;
		}
		return wrap_stream(a, ki, r);
	}
	after = g->last;
	if (after.seq == UINT64_MAX) {
		after.ms++;
		after.seq = 0;
	} else {
		after.seq++;
	}
	relay__mem_find_entry(&k->u.stream, after, &pos);
	n = k->u.stream.n - pos;
	if (count > 0 && (size_t)count < n)
		n = (size_t)count;
	if (n == 0)
		return relay__reply_nil();
	r = relay__reply_array(n);
	for (j = 0; r && j < n; j++) {
		mem_entry *e = &k->u.stream.e[pos + j];
		mem_nack *nk;

		r->element[j] = relay__mem_entry_reply(e, e->id);
		if (!r->element[j]) {
			relay_redis_reply_free(r);
			return NULL;
		}
		g->last = e->id;
		if (noack)
			continue;
		nk = relay__mem_assign_nack(g, e->id, a->argv[3], a->len[3], now);
		if (!nk) {
			relay_redis_reply_free(r);
			return NULL;
		}
		nk->count = 1;
	}
	return wrap_stream(a, ki, r);
}

relay_redis_reply *relay__mem_stream_cmd(mem_backend *m, const mem_args *a,
					 const char *cmd)
{
	int ki = strcasecmp(cmd, "XGROUP") == 0 ? 2 : 1;
	mem_key *k;

	if (strcasecmp(cmd, "XREADGROUP") == 0)
		return xreadgroup(m, a);
	k = relay__mem_lookup(m, a->argv[ki], a->len[ki]);
	if (k && k->type != MEM_STREAM)
		return relay__reply_errorf("WRONGTYPE Operation against a key "
					   "holding the wrong kind of value");
	if (strcasecmp(cmd, "XADD") == 0)
		return xadd(m, k, a);
	if (strcasecmp(cmd, "XLEN") == 0)
		return relay__reply_int(k ? (long long)k->u.stream.n : 0);
	if (strcasecmp(cmd, "XRANGE") == 0)
		return xrange(k, a, 0);
	if (strcasecmp(cmd, "XREVRANGE") == 0)
		return xrange(k, a, 1);
	if (strcasecmp(cmd, "XDEL") == 0)
		return k ? xdel(k, a) : relay__reply_int(0);
	if (strcasecmp(cmd, "XGROUP") == 0)
		return xgroup(m, k, a);
	return relay__mem_pel_cmd(m, k, a, cmd);
}
