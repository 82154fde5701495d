/*
 * memory_trim.c - the memory backend's twin of librelay/lua/stream_trim.lua
 * (RELAY_REDIS_SCRIPT_STREAM_TRIM): the retention bound over every
 * consumer group, then a trim of the entries below it. The memory
 * backend has no macro nodes, so it trims exactly to the bound (Redis'
 * "~" may keep more, never less); both reply alike.
 */
#include <string.h>

#include "common.h"
#include "memory.h"

static mem_sid sid_next(mem_sid id)
{
	if (id.seq == UINT64_MAX)
		return (mem_sid){ id.ms + 1, 0 };
	return (mem_sid){ id.ms, id.seq + 1 };
}

static relay_redis_reply *sid_or_empty(const mem_sid *id)
{
	return id ? relay__mem_sid_reply(*id)
		  : relay__reply_str(RELAY_REDIS_REPLY_STRING, "", 0);
}

static relay_redis_reply *trim_reply(long long trimmed, long long len,
				     const mem_sid *bound,
				     const mem_sid *first,
				     const mem_sid *oldest, long long groups)
{
	relay_redis_reply *r = relay__reply_array(6);
	size_t i;

	if (!r)
		return NULL;
	r->element[0] = relay__reply_int(trimmed);
	r->element[1] = relay__reply_int(len);
	r->element[2] = sid_or_empty(bound);
	r->element[3] = sid_or_empty(first);
	r->element[4] = sid_or_empty(oldest);
	r->element[5] = relay__reply_int(groups);
	for (i = 0; i < 6; i++) {
		if (!r->element[i]) {
			relay_redis_reply_free(r);
			return NULL;
		}
	}
	return r;
}

/* Free the first @n entries of @st and close the gap. */
static void drop_front(mem_stream *st, size_t n)
{
	size_t i, j;

	for (i = 0; i < n; i++) {
		for (j = 0; j < st->e[i].nfv; j++)
			relay__free(st->e[i].fv[j].s);
		relay__free(st->e[i].fv);
	}
	memmove(st->e, st->e + n, (st->n - n) * sizeof(*st->e));
	st->n -= n;
}

relay_redis_reply *relay__mem_stream_trim(mem_backend *m, const mem_args *a)
{
	long long cutoff, limit, n = 0;
	mem_sid bound, oldest = { 0, 0 };
	int have_oldest = 0, groups;
	mem_stream *st;
	mem_key *k;
	size_t i;

	if (a->argc != 4 || relay__mem_num_arg(a, 1, &cutoff) || cutoff < 0 ||
	    relay__mem_num_arg(a, 2, &limit) || limit < 0)
		return relay__reply_errorf("ERR relay: bad script arguments");
	if (a->len[3] == 6 && memcmp(a->argv[3], "groups", 6) == 0)
		groups = 1;
	else if (a->len[3] == 3 && memcmp(a->argv[3], "age", 3) == 0)
		groups = 0;
	else
		return relay__reply_errorf("ERR relay: bad script arguments");
	k = relay__mem_lookup(m, a->argv[0], a->len[0]);
	if (!k)
		return trim_reply(0, 0, NULL, NULL, NULL, 0);
	if (k->type != MEM_STREAM)
		return relay__reply_errorf("WRONGTYPE Operation against a key "
					   "holding the wrong kind of value");
	st = &k->u.stream;
	bound = (mem_sid){ (uint64_t)cutoff, 0 };
	for (i = 0; groups && i < st->ng; i++) {
		mem_group *g = &st->g[i];
		mem_sid nxt = sid_next(g->last);

		if (relay__mem_sid_cmp(nxt, bound) < 0)
			bound = nxt;
		if (!g->npel)
			continue;
		if (relay__mem_sid_cmp(g->pel[0].id, bound) < 0)
			bound = g->pel[0].id;
		if (!have_oldest ||
		    relay__mem_sid_cmp(g->pel[0].id, oldest) < 0)
			oldest = g->pel[0].id;
		have_oldest = 1;
	}
	while ((size_t)n < st->n && n < limit &&
	       relay__mem_sid_cmp(st->e[n].id, bound) < 0)
		n++;
	drop_front(st, (size_t)n);
	return trim_reply(n, (long long)st->n, &bound,
			  st->n ? &st->e[0].id : NULL,
			  have_oldest ? &oldest : NULL,
			  groups ? (long long)st->ng : 0);
}
