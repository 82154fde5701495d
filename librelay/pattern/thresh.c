/*
 * thresh.c - the threshold index: numeric and now()-relative cutoffs.
 *
 * At build time the distinct thresholds of each node are grouped by
 * comparison (GT, GTE, LT, LTE) and sorted ascending, and each group is
 * split in two: leaves that anchor a rule or feed an anything-but (they
 * must be fired: they make rules candidates or fire other leaves), and
 * "bulk" leaves that only a rule's own evaluation reads.
 *
 * At match time a value satisfies a prefix of a GT/GTE group and a suffix
 * of an LT/LTE group, found by binary search with the very comparison the
 * one-by-one loop used (relay__num_cmp, relay__instant_cmp), so the set
 * of holding leaves is exactly what it was. Bulk leaves are stamped in a
 * tight loop and logged as one range (for a repeated key to forget);
 * the others are fired one by one. A value thus costs a few comparisons
 * per group, one store per holding bulk leaf, and a fire per holding leaf
 * that can change which rules are evaluated.
 */
#include <stdlib.h>
#include <string.h>

#include "ruleset_int.h"

/* ---------------------------------------------------------------- build */

typedef struct thr_ent {
	double num;
	int64_t ms;
	uint32_t leaf;
} thr_ent;

static int cmp_ent_num(const void *a, const void *b)
{
	double x = ((const thr_ent *)a)->num, y = ((const thr_ent *)b)->num;

	return (x > y) - (x < y);
}

static int cmp_ent_ms(const void *a, const void *b)
{
	int64_t x = ((const thr_ent *)a)->ms, y = ((const thr_ent *)b)->ms;

	return (x > y) - (x < y);
}

static int cmp_numleaf(const void *a, const void *b)
{
	double x = ((const relay__numleaf *)a)->num;
	double y = ((const relay__numleaf *)b)->num;

	return (x > y) - (x < y);
}

/* Whether firing @leaf can do more than stamp it. */
static bool leaf_fires(const relay_ruleset *rs, uint32_t leaf)
{
	if (rs->anchor_off[leaf] != rs->anchor_off[leaf + 1])
		return true;
	return rs->also_off && rs->also_off[leaf] != rs->also_off[leaf + 1];
}

/*
 * Append the group (op, bulk) of a node's thresholds to the thr_* arrays
 * at *at. @tmp has room for every threshold of the node.
 */
static void add_group(relay_ruleset *rs, relay__thr *g, thr_ent *tmp,
		      const relay__numleaf *num, const relay__timeleaf *tim,
		      uint32_t cnt, unsigned op, bool bulk, uint32_t *at)
{
	uint32_t i, n = 0;

	for (i = 0; i < cnt; i++) {
		uint32_t leaf = num ? num[i].leaf : tim[i].leaf;
		unsigned o = num ? (unsigned)num[i].op : (unsigned)tim[i].op;

		if (o != op || leaf_fires(rs, leaf) == bulk)
			continue;
		tmp[n].num = num ? num[i].num : 0;
		tmp[n].ms = num ? 0 : tim[i].offset_ms;
		tmp[n].leaf = leaf;
		n++;
	}
	/* distinct keys (leaves are deduplicated by key and op) */
	if (n > 1)
		qsort(tmp, n, sizeof(*tmp), num ? cmp_ent_num : cmp_ent_ms);
	g->off = *at;
	g->n = n;
	for (i = 0; i < n; i++) {
		rs->thr_num[*at] = tmp[i].num;
		rs->thr_ms[*at] = tmp[i].ms;
		rs->thr_leaf[*at] = tmp[i].leaf;
		(*at)++;
	}
}

int relay__build_thresholds(relay_ruleset *rs)
{
	uint32_t i, total = 0, at = 0, most = 0;
	unsigned g;
	thr_ent *tmp;

	if (rs->nleaves >= RELAY__LOG_BULK)
		return RELAY_ENOMEM;
	for (i = 0; i < rs->nnodes; i++) {
		const relay__tnode *n = &rs->nodes[i];

		total += n->ncmp_num + n->ncmp_time;
		if (n->ncmp_num > most)
			most = n->ncmp_num;
		if (n->ncmp_time > most)
			most = n->ncmp_time;
	}
	if (total >= RELAY__LOG_BULK)
		return RELAY_ENOMEM;
	rs->thr_num = relay__calloc(total ? total : 1, sizeof(double));
	rs->thr_ms = relay__calloc(total ? total : 1, sizeof(int64_t));
	rs->thr_leaf = relay__calloc(total ? total : 1, sizeof(uint32_t));
	tmp = relay__calloc(most ? most : 1, sizeof(*tmp));
	if (!rs->thr_num || !rs->thr_ms || !rs->thr_leaf || !tmp) {
		relay__free(tmp);
		return RELAY_ENOMEM;
	}
	for (i = 0; i < rs->nnodes; i++) {
		relay__tnode *n = &rs->nodes[i];

		for (g = 0; g < RELAY__THR_GROUPS; g++) {
			add_group(rs, &n->num_thr[g], tmp, n->cmp_num, NULL,
				  n->ncmp_num, g / 2, g & 1, &at);
			add_group(rs, &n->time_thr[g], tmp, NULL, n->cmp_time,
				  n->ncmp_time, g / 2, g & 1, &at);
		}
		/* equality: ascending, searched (values are distinct) */
		if (n->neq_num > 1)
			qsort(n->eq_num, n->neq_num, sizeof(*n->eq_num),
			      cmp_numleaf);
	}
	relay__free(tmp);
	return 0;
}

/* ---------------------------------------------------------------- match */

/* Stamp the holding leaves thr_leaf[from, to) of a bulk group, and log
 * them as one range (or as the one leaf). */
static void stamp_bulk(relay_matcher *m, uint32_t from, uint32_t to)
{
	const uint32_t *leaf = m->rs->thr_leaf;
	uint32_t *stamp = m->leaf_stamp, epoch = m->epoch, k;

	if (from == to)
		return;
	for (k = from; k < to; k++)
		stamp[leaf[k]] = epoch;
	if (to - from == 1) {
		relay__mlog(m, leaf[from]);
	} else {
		relay__mlog(m, RELAY__LOG_BULK | from);
		relay__mlog(m, to - from);
	}
}

static void fire_range(relay_matcher *m, uint32_t from, uint32_t to)
{
	const uint32_t *leaf = m->rs->thr_leaf;
	uint32_t k;

	for (k = from; k < to; k++)
		relay__fire(m, leaf[k]);
}

/* Fire or stamp the holding part [at, n) of group @g (in thr_* indices),
 * given the split point @split: prefix for GT/GTE, suffix for LT/LTE. */
static void hold(relay_matcher *m, const relay__thr *g, unsigned gi,
		 uint32_t split)
{
	uint32_t from = g->off, to = g->off + g->n;

	if (gi / 2 <= RELAY__OP_GTE)
		to = g->off + split;
	else
		from = g->off + split;
	if (gi & 1)
		stamp_bulk(m, from, to);
	else
		fire_range(m, from, to);
}

void relay__eval_thr_num(relay_matcher *m, const relay__tnode *n, double v)
{
	const double *key = m->rs->thr_num;
	unsigned gi;

	for (gi = 0; gi < RELAY__THR_GROUPS; gi++) {
		const relay__thr *g = &n->num_thr[gi];
		enum relay__pat_op op = (enum relay__pat_op)(gi / 2);
		bool pre = op <= RELAY__OP_GTE;
		uint32_t lo = 0, hi = g->n, mid;

		if (!g->n)
			continue;
		/* the comparison holds on a prefix (pre) or suffix: find
		 * where it changes */
		while (lo < hi) {
			mid = lo + (hi - lo) / 2;
			if (relay__num_cmp(v, key[g->off + mid], op) == pre)
				lo = mid + 1;
			else
				hi = mid;
		}
		hold(m, g, gi, lo);
	}
}

void relay__eval_thr_time(relay_matcher *m, const relay__tnode *n,
			  const relay__instant *t)
{
	const int64_t *key = m->rs->thr_ms;
	unsigned gi;

	for (gi = 0; gi < RELAY__THR_GROUPS; gi++) {
		const relay__thr *g = &n->time_thr[gi];
		enum relay__pat_op op = (enum relay__pat_op)(gi / 2);
		bool pre = op <= RELAY__OP_GTE;
		uint32_t lo = 0, hi = g->n, mid;

		if (!g->n)
			continue;
		/* a later cutoff is harder to exceed: GT/GTE hold on a
		 * prefix of the ascending offsets, LT/LTE on a suffix */
		while (lo < hi) {
			mid = lo + (hi - lo) / 2;
			if (relay__instant_cmp(t, m->now + key[g->off + mid],
					       op) == pre)
				lo = mid + 1;
			else
				hi = mid;
		}
		hold(m, g, gi, lo);
	}
}

void relay__eval_eq_num(relay_matcher *m, const relay__tnode *n, double v)
{
	uint32_t lo = 0, hi = n->neq_num, mid;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (n->eq_num[mid].num < v)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < n->neq_num && n->eq_num[lo].num == v)
		relay__fire(m, n->eq_num[lo].leaf);
}
