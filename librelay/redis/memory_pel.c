/*
 * memory_pel.c - the pending-entries list of the memory backend's
 * consumer groups: XACK, XPENDING (summary and extended), XCLAIM and
 * XAUTOCLAIM with Redis 7.0 semantics (see memory_stream.c for the
 * stream side):
 *
 *  - XCLAIM / XAUTOCLAIM reset the idle time and bump the delivery count
 *    unless JUSTID; a PEL entry whose stream entry was deleted is removed
 *    from the PEL and, for XAUTOCLAIM, reported in the third reply
 *    element (checked before the idle time, as Redis does).
 *  - XAUTOCLAIM scans at most COUNT * 10 PEL entries; the cursor names
 *    the next unscanned entry, "0-0" at the end.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common.h"
#include "memory.h"

static mem_nack *find_nack(mem_group *g, mem_sid id, size_t *pos)
{
	size_t lo = 0, hi = g->npel, mid;

	while (lo < hi) {
		mid = (lo + hi) / 2;
		if (relay__mem_sid_cmp(g->pel[mid].id, id) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	*pos = lo;
	if (lo < g->npel && relay__mem_sid_cmp(g->pel[lo].id, id) == 0)
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

int relay__mem_note_consumer(mem_group *g, const char *c, size_t len)
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
mem_nack *relay__mem_assign_nack(mem_group *g, mem_sid id, const char *c,
			     size_t clen, int64_t now)
{
	char *owner = relay__strndup(c, clen);
	mem_nack *n;
	size_t pos;

	if (!owner || relay__mem_note_consumer(g, c, clen)) {
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

static relay_redis_reply *xack(mem_key *k, const mem_args *a)
{
	mem_group *g = k ? relay__mem_find_group(&k->u.stream, a->argv[2],
						 a->len[2])
			 : NULL;
	long long n = 0;
	mem_sid id;
	size_t pos;
	int i;

	for (i = 3; i < a->argc; i++) {
		if (relay__mem_sid_parse(a->argv[i], a->len[i], &id))
			return relay__mem_bad_id();
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
	r->element[1] = relay__mem_sid_reply(g->pel[0].id);
	r->element[2] = relay__mem_sid_reply(g->pel[g->npel - 1].id);
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
	mem_group *g = k ? relay__mem_find_group(&k->u.stream, a->argv[2],
						 a->len[2])
			 : NULL;
	long long idle = 0, count = 0;
	int i = 3;
	mem_sid lo, hi;
	relay_redis_reply *r;
	int64_t now = relay__mem_now(m);
	size_t j, n = 0;

	if (!g)
		return relay__mem_nogroup(a, 1, 2, "XPENDING");
	if (a->argc == 3)
		return pending_summary(g);
	if (a->len[i] == 4 && strncasecmp(a->argv[i], "IDLE", 4) == 0) {
		if (relay__mem_num_arg(a, i + 1, &idle))
			return relay__mem_not_integer();
		i += 2;
	}
	if (a->argc - i < 3 || a->argc - i > 4 ||
	    relay__mem_parse_bound(a->argv[i], a->len[i], 0, &lo) ||
	    relay__mem_parse_bound(a->argv[i + 1], a->len[i + 1], 1, &hi))
		return relay__reply_errorf("ERR syntax error");
	if (relay__mem_num_arg(a, i + 2, &count))
		return relay__mem_not_integer();
	r = relay__reply_array(g->npel);
	for (j = 0; r && j < g->npel && (long long)n < count; j++) {
		mem_nack *nk = &g->pel[j];
		relay_redis_reply *e;

		if (relay__mem_sid_cmp(nk->id, lo) < 0 ||
		    relay__mem_sid_cmp(nk->id, hi) > 0 ||
		    now - nk->delivery_ms < idle)
			continue;
		if (a->argc - i == 4 &&
		    (strlen(nk->consumer) != a->len[i + 3] ||
		     memcmp(nk->consumer, a->argv[i + 3], a->len[i + 3])))
			continue;
		e = r->element[n++] = relay__reply_array(4);
		if (e) {
			e->element[0] = relay__mem_sid_reply(nk->id);
			e->element[1] = relay__reply_str(
				RELAY_REDIS_REPLY_STRING, nk->consumer,
				strlen(nk->consumer));
			e->element[2] = relay__reply_int(now - nk->delivery_ms);
			e->element[3] = relay__reply_int(nk->count);
		}
		if (!e || !e->element[0] || !e->element[1] ||
		    !e->element[2] || !e->element[3]) {
			relay_redis_reply_free(r); /* frees elements[0..npel) */
			return NULL;
		}
	}
	if (r)
		r->elements = n;
	return r;
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

	if (!relay__mem_find_entry(st, id, NULL)) {
		remove_nack(g, pos);
		return -1;
	}
	if (now - nk->delivery_ms < min_idle)
		return 0;
	if (!relay__mem_assign_nack(g, id, a->argv[3], a->len[3], now))
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
	mem_group *g = k ? relay__mem_find_group(&k->u.stream, a->argv[2],
						 a->len[2])
			 : NULL;
	int64_t now = relay__mem_now(m);
	long long min_idle, count = 100;
	int justid = 0, last = a->argc, i, rc;
	relay_redis_reply *r, *del, *out;
	mem_sid id, start;
	size_t pos;

	if (!g)
		return relay__mem_nogroup(a, 1, 2, autoclaim ? "XAUTOCLAIM" : "XCLAIM");
	if (relay__mem_num_arg(a, 4, &min_idle))
		return relay__mem_not_integer();
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
				return relay__mem_bad_id();
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
				r = append(r, justid ? relay__mem_sid_reply(id)
						     : relay__mem_entry_reply(relay__mem_find_entry(
							       &k->u.stream, id,
							       NULL), id));
		}
		return r;
	}
	if (last == 8 && a->len[6] == 5 &&
	    strncasecmp(a->argv[6], "COUNT", 5) == 0) {
		if (relay__mem_num_arg(a, 7, &count) || count < 1) {
			relay_redis_reply_free(r);
			return relay__reply_errorf("ERR COUNT must be > 0");
		}
	} else if (last != 6) {
		relay_redis_reply_free(r);
		return relay__reply_errorf("ERR syntax error");
	}
	if (relay__mem_sid_parse(a->argv[5], a->len[5], &start) &&
	    relay__mem_parse_bound(a->argv[5], a->len[5], 0, &start)) {
		relay_redis_reply_free(r);
		return relay__mem_bad_id();
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
				del = append(del, relay__mem_sid_reply(id));
				count--;
				continue; /* pos now names the next entry */
			}
			if (rc == 1) {
				r = append(r, justid ? relay__mem_sid_reply(id)
						     : relay__mem_entry_reply(relay__mem_find_entry(
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
	out->element[0] = pos < g->npel ? relay__mem_sid_reply(g->pel[pos].id)
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

relay_redis_reply *relay__mem_pel_cmd(mem_backend *m, mem_key *k,
				      const mem_args *a, const char *cmd)
{
	if (strcasecmp(cmd, "XACK") == 0)
		return xack(k, a);
	if (strcasecmp(cmd, "XPENDING") == 0)
		return xpending(m, k, a);
	if (strcasecmp(cmd, "XCLAIM") == 0)
		return xclaim(m, k, a, 0);
	return xclaim(m, k, a, 1);
}
