/*
 * memory_stream.c - streams and consumer groups of the memory backend:
 * XADD XLEN XRANGE XDEL XGROUP XREADGROUP XACK XPENDING XCLAIM XAUTOCLAIM,
 * with Redis 7.0 semantics for what librelay relies on:
 *
 *  - XREADGROUP ">" delivers entries after the group's last-delivered id
 *    and adds them to the PEL (delivery count 1, delivery time now); an
 *    empty read replies nil (BLOCK never waits here). A history read (an
 *    id instead of ">") replies the consumer's PEL entries after that id,
 *    a deleted entry as [id, nil].
 *  - XCLAIM / XAUTOCLAIM reset the idle time and bump the delivery count
 *    unless JUSTID; a PEL entry whose stream entry was deleted is removed
 *    from the PEL and, for XAUTOCLAIM, reported in the third reply element.
 *  - XPENDING summary and extended forms (with IDLE and consumer filters).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common.h"
#include "memory.h"

#define SID_MAX ((mem_sid){ UINT64_MAX, UINT64_MAX })

static int sid_cmp(mem_sid a, mem_sid b)
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

static relay_redis_reply *sid_reply(mem_sid id)
{
	char buf[48];
	int n = relay__mem_sid_fmt(id, buf, sizeof(buf));

	return relay__reply_str(RELAY_REDIS_REPLY_STRING, buf, (size_t)n);
}

static relay_redis_reply *bad_id(void)
{
	return relay__reply_errorf("ERR Invalid stream ID specified as "
				   "stream command argument");
}

/* Range bound: "-", "+", "(id" exclusive, or an id; end ids default seq
 * to the maximum. Returns -1 on a bad id. */
static int parse_bound(const char *s, size_t len, int is_end, mem_sid *out)
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

static mem_entry *find_entry(mem_stream *st, mem_sid id, size_t *pos)
{
	size_t lo = 0, hi = st->n, mid;

	while (lo < hi) {
		mid = (lo + hi) / 2;
		if (sid_cmp(st->e[mid].id, id) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (pos)
		*pos = lo;
	if (lo < st->n && sid_cmp(st->e[lo].id, id) == 0)
		return &st->e[lo];
	return NULL;
}

static relay_redis_reply *entry_reply(const mem_entry *e, mem_sid id)
{
	relay_redis_reply *r = relay__reply_array(2), *f;
	size_t i;

	if (!r)
		return NULL;
	r->element[0] = sid_reply(id);
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
		if (st->last.ms == 0 && st->last.seq == 0 && st->n == 0 &&
		    id.ms > 0)
			id.seq = 0;
	}
	if (sid_cmp(id, st->last) <= 0) {
		*out = relay__reply_errorf("ERR The ID specified in XADD is "
					   "equal or smaller than the target "
					   "stream top item");
		return 0;
	}
	if (st->n == st->cap) {
		size_t cap = st->cap ? 2 * st->cap : 8;
		mem_entry *g = relay__realloc(st->e, cap * sizeof(*g));

		if (!g)
			return RELAY_ENOMEM;
		st->e = g;
		st->cap = cap;
	}
	e = &st->e[st->n];
	e->id = id;
	e->nfv = (size_t)n;
	e->fv = relay__calloc((size_t)n, sizeof(*e->fv));
	if (!e->fv)
		return RELAY_ENOMEM;
	for (i = 0; i < n; i++) {
		e->fv[i].s = relay__strndup(a->argv[first + i],
					    a->len[first + i]);
		e->fv[i].len = a->len[first + i];
		if (!e->fv[i].s) {
			while (i-- > 0)
				relay__free(e->fv[i].s);
			relay__free(e->fv);
			return RELAY_ENOMEM;
		}
	}
	st->n++;
	st->last = id;
	*out = sid_reply(id);
	return *out ? 0 : RELAY_ENOMEM;
}

static relay_redis_reply *xadd(mem_backend *m, mem_key *k, const mem_args *a)
{
	relay_redis_reply *r = NULL;
	mem_sid id = SID_MAX;
	int created = 0;

	if (!(a->len[2] == 1 && a->argv[2][0] == '*') &&
	    (relay__mem_sid_parse(a->argv[2], a->len[2], &id) ||
	     (id.ms == 0 && id.seq == 0)))
		return bad_id();
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

static relay_redis_reply *xrange(mem_key *k, const mem_args *a)
{
	mem_stream *st = k ? &k->u.stream : NULL;
	long long count = -1;
	mem_sid lo, hi;
	size_t pos, i, n = 0;
	relay_redis_reply *r;
	char buf[24];

	if (parse_bound(a->argv[2], a->len[2], 0, &lo) ||
	    parse_bound(a->argv[3], a->len[3], 1, &hi))
		return bad_id();
	if (a->argc == 6 && a->len[4] == 5 &&
	    strncasecmp(a->argv[4], "COUNT", 5) == 0) {
		snprintf(buf, sizeof(buf), "%.*s", (int)(a->len[5] % 23),
			 a->argv[5]);
		count = strtoll(buf, NULL, 10);
	} else if (a->argc != 4) {
		return relay__reply_errorf("ERR syntax error");
	}
	if (!st)
		return relay__reply_array(0);
	find_entry(st, lo, &pos);
	for (i = pos; i < st->n && sid_cmp(st->e[i].id, hi) <= 0 &&
		      (count < 0 || (long long)n < count);
	     i++)
		n++;
	r = relay__reply_array(n);
	for (i = 0; r && i < n; i++) {
		r->element[i] = entry_reply(&st->e[pos + i], st->e[pos + i].id);
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
			return bad_id();
	}
	for (i = 2; i < a->argc; i++) {
		relay__mem_sid_parse(a->argv[i], a->len[i], &id);
		e = find_entry(st, id, &pos);
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

static mem_group *find_group(mem_stream *st, const char *name, size_t len)
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
		return bad_id();
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
	if (find_group(&k->u.stream, a->argv[3], a->len[3]))
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

static mem_nack *find_nack(mem_group *g, mem_sid id, size_t *pos)
{
	size_t lo = 0, hi = g->npel, mid;

	while (lo < hi) {
		mid = (lo + hi) / 2;
		if (sid_cmp(g->pel[mid].id, id) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	*pos = lo;
	if (lo < g->npel && sid_cmp(g->pel[lo].id, id) == 0)
		return &g->pel[lo];
	return NULL;
}

static void remove_nack(mem_group *g, size_t pos)
{
	relay__free(g->pel[pos].consumer);
	memmove(&g->pel[pos], &g->pel[pos + 1],
		(g->npel - pos - 1) * sizeof(*g->pel));
	g->npel--;
}

static int note_consumer(mem_group *g, const char *c, size_t len)
{
	char **grown;
	size_t i;

	for (i = 0; i < g->nconsumers; i++) {
		if (strlen(g->consumers[i]) == len &&
		    memcmp(g->consumers[i], c, len) == 0)
			return 0;
	}
	grown = relay__realloc(g->consumers,
			       (g->nconsumers + 1) * sizeof(*grown));
	if (!grown)
		return RELAY_ENOMEM;
	g->consumers = grown;
	grown[g->nconsumers] = relay__strndup(c, len);
	if (!grown[g->nconsumers])
		return RELAY_ENOMEM;
	g->nconsumers++;
	return 0;
}

/* Set the owner and delivery time of @id, inserting it when new. */
static mem_nack *assign_nack(mem_group *g, mem_sid id, const char *c,
			     size_t clen, int64_t now)
{
	char *owner = relay__strndup(c, clen);
	mem_nack *n;
	size_t pos;

	if (!owner || note_consumer(g, c, clen)) {
		relay__free(owner);
		return NULL;
	}
	n = find_nack(g, id, &pos);
	if (!n) {
		if (g->npel == g->cap) {
			size_t cap = g->cap ? 2 * g->cap : 8;
			mem_nack *p = relay__realloc(g->pel, cap * sizeof(*p));

			if (!p) {
				relay__free(owner);
				return NULL;
			}
			g->pel = p;
			g->cap = cap;
		}
		memmove(&g->pel[pos + 1], &g->pel[pos],
			(g->npel - pos) * sizeof(*g->pel));
		g->npel++;
		n = &g->pel[pos];
		memset(n, 0, sizeof(*n));
		n->id = id;
	}
	relay__free(n->consumer);
	n->consumer = owner;
	n->delivery_ms = now;
	return n;
}

static relay_redis_reply *nogroup(const mem_args *a, int ki, int gi,
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
	long long count = 0, ignored;
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
		if (strcasecmp(buf, "COUNT") == 0 && i + 1 < a->argc) {
			snprintf(buf, sizeof(buf), "%.*s",
				 (int)(a->len[i + 1] % 23), a->argv[i + 1]);
			count = strtoll(buf, NULL, 10);
			i++;
		} else if (strcasecmp(buf, "BLOCK") == 0 && i + 1 < a->argc) {
			ignored = 0;
			(void)ignored;
			i++;
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
	g = k ? find_group(&k->u.stream, a->argv[2], a->len[2]) : NULL;
	if (!g)
		return nogroup(a, ki, 2, "XREADGROUP with GROUP option");
	if (note_consumer(g, a->argv[3], a->len[3]))
		return NULL;
	if (!(a->len[ii] == 1 && a->argv[ii][0] == '>')) {
		/* History: this consumer's pending entries after the id. */
		if (relay__mem_sid_parse(a->argv[ii], a->len[ii], &after))
			return bad_id();
		r = relay__reply_array(0);
		for (j = 0; r && j < g->npel; j++) {
			mem_nack *nk = &g->pel[j];
			relay_redis_reply **grown;

			if (sid_cmp(nk->id, after) <= 0 ||
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
			grown[r->elements] = entry_reply(
				find_entry(&k->u.stream, nk->id, NULL), nk->id);
			if (!grown[r->elements]) {
				relay_redis_reply_free(r);
				return NULL;
			}
			r->elements++;
		}
		return wrap_stream(a, ki, r);
	}
	after = g->last;
	after.seq == UINT64_MAX ? (after.ms++, after.seq = 0) : after.seq++;
	find_entry(&k->u.stream, after, &pos);
	n = k->u.stream.n - pos;
	if (count > 0 && (size_t)count < n)
		n = (size_t)count;
	if (n == 0)
		return relay__reply_nil();
	r = relay__reply_array(n);
	for (j = 0; r && j < n; j++) {
		mem_entry *e = &k->u.stream.e[pos + j];
		mem_nack *nk;

		r->element[j] = entry_reply(e, e->id);
		if (!r->element[j]) {
			relay_redis_reply_free(r);
			return NULL;
		}
		g->last = e->id;
		if (noack)
			continue;
		nk = assign_nack(g, e->id, a->argv[3], a->len[3], now);
		if (!nk) {
			relay_redis_reply_free(r);
			return NULL;
		}
		nk->count = 1;
	}
	return wrap_stream(a, ki, r);
}

static relay_redis_reply *xack(mem_key *k, const mem_args *a)
{
	mem_group *g = k ? find_group(&k->u.stream, a->argv[2], a->len[2])
			 : NULL;
	long long n = 0;
	mem_sid id;
	size_t pos;
	int i;

	for (i = 3; i < a->argc; i++) {
		if (relay__mem_sid_parse(a->argv[i], a->len[i], &id))
			return bad_id();
	}
	for (i = 3; g && i < a->argc; i++) {
		relay__mem_sid_parse(a->argv[i], a->len[i], &id);
		if (find_nack(g, id, &pos)) {
			remove_nack(g, pos);
			n++;
		}
	}
	return relay__reply_int(n);
}

static relay_redis_reply *pending_summary(mem_group *g)
{
	relay_redis_reply *r = relay__reply_array(4), *cs;
	size_t i, j, nc = 0;
	int ok = r != NULL;
	char num[24];

	if (!ok)
		return NULL;
	r->element[0] = relay__reply_int((long long)g->npel);
	if (g->npel == 0) {
		for (i = 1; i < 4; i++)
			r->element[i] = relay__reply_nil();
		goto check;
	}
	r->element[1] = sid_reply(g->pel[0].id);
	r->element[2] = sid_reply(g->pel[g->npel - 1].id);
	cs = r->element[3] = relay__reply_array(g->nconsumers);
	for (i = 0; cs && i < g->nconsumers; i++) {
		long long cnt = 0;

		for (j = 0; j < g->npel; j++)
			cnt += strcmp(g->pel[j].consumer, g->consumers[i]) == 0;
		if (!cnt)
			continue;
		cs->element[nc] = relay__reply_array(2);
		if (!cs->element[nc]) {
			ok = 0;
			break;
		}
		snprintf(num, sizeof(num), "%lld", cnt);
		cs->element[nc]->element[0] = relay__reply_str(
			RELAY_REDIS_REPLY_STRING, g->consumers[i],
			strlen(g->consumers[i]));
		cs->element[nc]->element[1] = relay__reply_str(
			RELAY_REDIS_REPLY_STRING, num, strlen(num));
		ok = ok && cs->element[nc]->element[0] &&
		     cs->element[nc]->element[1];
		nc++;
	}
	if (cs)
		cs->elements = nc;
check:
	for (i = 0; i < 4; i++)
		ok = ok && r->element[i];
	if (!ok) {
		relay_redis_reply_free(r);
		return NULL;
	}
	return r;
}

/* XPENDING key group [[IDLE ms] start end count [consumer]] */
static relay_redis_reply *xpending(mem_backend *m, mem_key *k,
				   const mem_args *a)
{
	mem_group *g = k ? find_group(&k->u.stream, a->argv[2], a->len[2])
			 : NULL;
	long long idle = 0, count = 0;
	int i = 3;
	mem_sid lo, hi;
	relay_redis_reply *r;
	int64_t now = relay__mem_now(m);
	char buf[24];
	size_t j, n = 0;

	if (!g)
		return nogroup(a, 1, 2, "XPENDING");
	if (a->argc == 3)
		return pending_summary(g);
	if (a->len[i] == 4 && strncasecmp(a->argv[i], "IDLE", 4) == 0 &&
	    i + 1 < a->argc) {
		snprintf(buf, sizeof(buf), "%.*s", (int)(a->len[i + 1] % 23),
			 a->argv[i + 1]);
		idle = strtoll(buf, NULL, 10);
		i += 2;
	}
	if (a->argc - i < 3 || a->argc - i > 4 ||
	    parse_bound(a->argv[i], a->len[i], 0, &lo) ||
	    parse_bound(a->argv[i + 1], a->len[i + 1], 1, &hi))
		return relay__reply_errorf("ERR syntax error");
	snprintf(buf, sizeof(buf), "%.*s", (int)(a->len[i + 2] % 23),
		 a->argv[i + 2]);
	count = strtoll(buf, NULL, 10);
	r = relay__reply_array(g->npel);
	for (j = 0; r && j < g->npel && (long long)n < count; j++) {
		mem_nack *nk = &g->pel[j];
		relay_redis_reply *e;

		if (sid_cmp(nk->id, lo) < 0 || sid_cmp(nk->id, hi) > 0 ||
		    now - nk->delivery_ms < idle)
			continue;
		if (a->argc - i == 4 &&
		    (strlen(nk->consumer) != a->len[i + 3] ||
		     memcmp(nk->consumer, a->argv[i + 3], a->len[i + 3])))
			continue;
		e = r->element[n++] = relay__reply_array(4);
		if (!e)
			break;
		e->element[0] = sid_reply(nk->id);
		e->element[1] = relay__reply_str(RELAY_REDIS_REPLY_STRING,
						 nk->consumer,
						 strlen(nk->consumer));
		e->element[2] = relay__reply_int(now - nk->delivery_ms);
		e->element[3] = relay__reply_int(nk->count);
		if (!e->element[0] || !e->element[1] || !e->element[2] ||
		    !e->element[3])
			break;
	}
	if (r && (j < g->npel && (long long)n < count))
		goto fail;
	if (r)
		r->elements = n;
	return r;
fail:
	r->elements = n;
	relay_redis_reply_free(r);
	return NULL;
}

static relay_redis_reply *append(relay_redis_reply *arr,
				 relay_redis_reply *e)
{
	relay_redis_reply **grown;

	if (!arr || !e)
		goto fail;
	grown = relay__realloc(arr->element,
			       (arr->elements + 1) * sizeof(*grown));
	if (!grown)
		goto fail;
	arr->element = grown;
	grown[arr->elements++] = e;
	return arr;
fail:
	relay_redis_reply_free(e);
	relay_redis_reply_free(arr);
	return NULL;
}

/*
 * Claim one PEL entry for @c: returns 1 claimed, 0 skipped (too young or
 * not pending), -1 deleted from the stream (and dropped from the PEL).
 */
static int claim_one(mem_stream *st, mem_group *g, mem_sid id, size_t pos,
		     const mem_args *a, long long min_idle, int justid,
		     int64_t now)
{
	mem_nack *nk = &g->pel[pos];

	if (!find_entry(st, id, NULL)) {
		remove_nack(g, pos);
		return -1;
	}
	if (now - nk->delivery_ms < min_idle)
		return 0;
	if (!assign_nack(g, id, a->argv[3], a->len[3], now))
		return -2;
	if (!justid)
		g->pel[pos].count++;
	return 1;
}

/*
 * XCLAIM key group consumer min-idle id [id ...] [JUSTID]
 * XAUTOCLAIM key group consumer min-idle start [COUNT n] [JUSTID]
 */
static relay_redis_reply *xclaim(mem_backend *m, mem_key *k,
				 const mem_args *a, int autoclaim)
{
	mem_group *g = k ? find_group(&k->u.stream, a->argv[2], a->len[2])
			 : NULL;
	int64_t now = relay__mem_now(m);
	long long min_idle, count = 100;
	int justid = 0, last = a->argc, i, rc;
	relay_redis_reply *r, *del, *out;
	mem_sid id, start;
	size_t pos;
	char buf[24];

	if (!g)
		return nogroup(a, 1, 2, autoclaim ? "XAUTOCLAIM" : "XCLAIM");
	snprintf(buf, sizeof(buf), "%.*s", (int)(a->len[4] % 23), a->argv[4]);
	min_idle = strtoll(buf, NULL, 10);
	if (a->len[a->argc - 1] == 6 &&
	    strncasecmp(a->argv[a->argc - 1], "JUSTID", 6) == 0) {
		justid = 1;
		last--;
	}
	r = relay__reply_array(0);
	if (!autoclaim) {
		for (i = 5; r && i < last; i++) {
			if (relay__mem_sid_parse(a->argv[i], a->len[i], &id)) {
				relay_redis_reply_free(r);
				return bad_id();
			}
			if (!find_nack(g, id, &pos))
				continue;
			rc = claim_one(&k->u.stream, g, id, pos, a, min_idle,
				       justid, now);
			if (rc == -2) {
				relay_redis_reply_free(r);
				return NULL;
			}
			if (rc == 1)
				r = append(r, justid ? sid_reply(id)
						     : entry_reply(find_entry(
							       &k->u.stream, id,
							       NULL), id));
		}
		return r;
	}
	if (last == 8 && a->len[6] == 5 &&
	    strncasecmp(a->argv[6], "COUNT", 5) == 0) {
		snprintf(buf, sizeof(buf), "%.*s", (int)(a->len[7] % 23),
			 a->argv[7]);
		count = strtoll(buf, NULL, 10);
		if (count < 1) {
			relay_redis_reply_free(r);
			return relay__reply_errorf("ERR COUNT must be > 0");
		}
	} else if (last != 6) {
		relay_redis_reply_free(r);
		return relay__reply_errorf("ERR syntax error");
	}
	if (relay__mem_sid_parse(a->argv[5], a->len[5], &start) &&
	    parse_bound(a->argv[5], a->len[5], 0, &start)) {
		relay_redis_reply_free(r);
		return bad_id();
	}
	del = relay__reply_array(0);
	find_nack(g, start, &pos);
	{
		long long attempts = count * 10;

		while (r && del && attempts-- > 0 && count > 0 &&
		       pos < g->npel) {
			id = g->pel[pos].id;
			rc = claim_one(&k->u.stream, g, id, pos, a, min_idle,
				       justid, now);
			if (rc == -2)
				break;
			if (rc == -1) {
				del = append(del, sid_reply(id));
				count--;
				continue; /* pos now names the next entry */
			}
			if (rc == 1) {
				r = append(r, justid ? sid_reply(id)
						     : entry_reply(find_entry(
							       &k->u.stream, id,
							       NULL), id));
				count--;
			}
			pos++;
		}
	}
	out = relay__reply_array(3);
	if (!out || !r || !del) {
		relay_redis_reply_free(out);
		relay_redis_reply_free(r);
		relay_redis_reply_free(del);
		return NULL;
	}
	out->element[0] = pos < g->npel ? sid_reply(g->pel[pos].id)
					: relay__reply_str(
						  RELAY_REDIS_REPLY_STRING,
						  "0-0", 3);
	out->element[1] = r;
	out->element[2] = del;
	if (!out->element[0]) {
		relay_redis_reply_free(out);
		return NULL;
	}
	return out;
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
		return xrange(k, a);
	if (strcasecmp(cmd, "XDEL") == 0)
		return k ? xdel(k, a) : relay__reply_int(0);
	if (strcasecmp(cmd, "XGROUP") == 0)
		return xgroup(m, k, a);
	if (strcasecmp(cmd, "XACK") == 0)
		return xack(k, a);
	if (strcasecmp(cmd, "XPENDING") == 0)
		return xpending(m, k, a);
	if (strcasecmp(cmd, "XCLAIM") == 0)
		return xclaim(m, k, a, 0);
	return xclaim(m, k, a, 1);
}
