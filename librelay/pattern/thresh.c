/*
 * thresh.c - the threshold index (numeric and now()-relative cutoffs)
 * and the lazy leaves.
 *
 * Most threshold leaves anchor no rule: a rule is found through a
 * rarer leaf (a literal) and only then reads its thresholds. Such a leaf
 * is "lazy": while an event is scanned, a node with lazy thresholds only
 * keeps its value (a number, or a parsed RFC 3339 instant), and when a
 * rule is evaluated its lazy leaves are settled from those values, with
 * the very comparison the one-by-one loop used (relay__num_cmp,
 * relay__instant_cmp). What thresholds cost is then proportional to the
 * rules actually evaluated, not to the thresholds present or holding.
 *
 * The other threshold leaves (they anchor a rule, or an anything-but
 * reads them) must fire while scanning: at each node they are grouped by
 * comparison and sorted, and a value fires a prefix (GT, GTE) or a suffix
 * (LT, LTE) of each group, found by binary search with the same
 * comparison, so the set of holding leaves is exactly what it was.
 * Numeric equalities are hashed (eq_tab). Two-sided ranges
 * (numeric: [">", a, "<=", b]) that fire nothing are lazy as well; the
 * others are tested one by one (relay__eval_number).
 *
 * The operators tested one by one on strings (ignore-case prefix and
 * suffix, wildcard, CIDR) and the ignore-case literals are lazy on the
 * same terms when they fire nothing: the string is kept (a pointer into
 * the event), and a rule that reads one tests it, once per event
 * whatever the number of rules that read it. A wildcard, which costs a
 * scan of the value, is then paid for only by the events that reach a
 * rule that reads it.
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

/*
 * Append a node's firing thresholds of comparison @op to the thr_* arrays
 * at *at, ascending, as group @g. @tmp has room for all of the node's.
 */
static void add_group(relay_ruleset *rs, relay__thr *g, thr_ent *tmp,
		      const relay__numleaf *num, const relay__timeleaf *tim,
		      uint32_t cnt, unsigned op, uint32_t *at)
{
	uint32_t i, n = 0;

	for (i = 0; i < cnt; i++) {
		uint32_t leaf = num ? num[i].leaf : tim[i].leaf;
		unsigned o = num ? (unsigned)num[i].op : (unsigned)tim[i].op;

		if (o != op || !relay__leaf_fires(rs, leaf))
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

/* Move the entries of @n's ignore-case literals whose leaf fires nothing
 * to its xlazy; the others stay, in a new map. */
static int split_eic(const relay_ruleset *rs, relay__tnode *n)
{
	relay__smap keep = { 0 };
	uint32_t k;
	int rc = 0;

	for (k = 0; k < n->eic.n && !rc; k++) {
		const relay__sent *e = &n->eic.ents[k];

		if (relay__leaf_fires(rs, e->val))
			rc = relay__smap_put_h(&keep, e->s, e->len, e->val,
					       e->hash);
		else
			n->xlazy[n->nxlazy++] = (relay__xleaf){
				.s = e->s, .len = e->len, .leaf = e->val,
				.kind = RELAY__PAT_EIC };
	}
	if (rc) {
		relay__smap_fini(&keep);
		return rc;
	}
	relay__smap_fini(&n->eic);
	n->eic = keep;
	return 0;
}

/*
 * Move @n's operator leaves that fire nothing from xstr and from its
 * ignore-case literals to xlazy: they are tested on the string kept at
 * @n when a rule that reads them is evaluated (relay__settle), not on
 * every value.
 */
static int split_xstr(relay_ruleset *rs, relay__tnode *n)
{
	uint32_t k, j = 0, z = 0;
	int rc;

	for (k = 0; k < n->nxstr; k++)
		z += !relay__leaf_fires(rs, n->xstr[k].leaf);
	for (k = 0; k < n->eic.n; k++)
		z += !relay__leaf_fires(rs, n->eic.ents[k].val);
	if (!z)
		return 0;
	n->xlazy = relay__malloc(z * sizeof(*n->xlazy));
	if (!n->xlazy)
		return RELAY_ENOMEM;
	rc = split_eic(rs, n);
	if (rc)
		return rc;
	for (k = 0; k < n->nxstr; k++) {
		if (relay__leaf_fires(rs, n->xstr[k].leaf))
			n->xstr[j++] = n->xstr[k];
		else
			n->xlazy[n->nxlazy++] = n->xstr[k];
	}
	n->nxstr = j;
	n->keep_str = 1;
	relay__xstr_cut(n);
	return 0;
}

/* leaf -> its lazy description, for the leaves that are lazy */
static int lazy_index(relay_ruleset *rs, relay__lazy **out, uint32_t *nlazy)
{
	relay__lazy *by = relay__calloc(rs->nleaves ? rs->nleaves : 1,
					sizeof(*by));
	uint32_t i, j, k;

	if (!by)
		return RELAY_ENOMEM;
	for (i = 0; i < rs->nleaves; i++)
		by[i].node = RELAY__NONE;
	for (i = 0; i < rs->nnodes; i++) {
		relay__tnode *n = &rs->nodes[i];

		if (split_xstr(rs, n)) {
			relay__free(by);
			return RELAY_ENOMEM;
		}
		for (k = 0; k < n->nxlazy; k++) {
			relay__lazy *z = &by[n->xlazy[k].leaf];

			z->x = &n->xlazy[k];
			z->node = i;
			(*nlazy)++;
		}
		for (k = 0; k < n->ncmp_num; k++) {
			relay__lazy *z = &by[n->cmp_num[k].leaf];

			if (relay__leaf_fires(rs, n->cmp_num[k].leaf))
				continue;
			z->num = n->cmp_num[k].num;
			z->op = (uint8_t)n->cmp_num[k].op;
			z->node = i;
			n->keep_num = 1;
			(*nlazy)++;
		}
		for (k = 0, j = 0; k < n->nxnum; k++) {
			relay__lazy *z = &by[n->xnum[k].leaf];

			if (relay__leaf_fires(rs, n->xnum[k].leaf)) {
				n->xnum[j++] = n->xnum[k];
				continue;
			}
			z->range = n->xnum[k].a;
			z->node = i;
			n->keep_num = 1;
			(*nlazy)++;
		}
		n->nxnum = j;  /* the lazy ranges are settled, not tested */
		for (k = 0; k < n->ncmp_time; k++) {
			relay__lazy *z = &by[n->cmp_time[k].leaf];

			if (relay__leaf_fires(rs, n->cmp_time[k].leaf))
				continue;
			z->offset_ms = n->cmp_time[k].offset_ms;
			z->op = (uint8_t)n->cmp_time[k].op;
			z->time = 1;
			z->node = i;
			n->keep_time = n->keep_str = 1;
			(*nlazy)++;
		}
	}
	*out = by;
	return 0;
}

/* The slot where number @v is looked for first in a table of @mask + 1:
 * from the bits of the double, -0 read as 0 (they are equal). */
static inline uint32_t num_slot(double v, uint32_t mask)
{
	uint64_t b;

	if (v == 0)
		v = 0;
	memcpy(&b, &v, sizeof(b));
	/* the bits of a small integer are all high ones: folded down */
	b ^= b >> 32;
	return (uint32_t)((b * 0x9e3779b97f4a7c15ULL) >> 32) & mask;
}

/* Hash @n's eq_num (distinct values) into eq_tab, at most half full;
 * eq_num is freed (the table is all the match reads). */
static int eq_table(relay__tnode *n)
{
	uint32_t size = 2, i, j;

	while (size < 2 * n->neq_num)
		size *= 2;
	n->eq_tab = relay__malloc(size * sizeof(*n->eq_tab));
	if (!n->eq_tab)
		return RELAY_ENOMEM;
	for (i = 0; i < size; i++)
		n->eq_tab[i].leaf = RELAY__NONE;
	n->eq_tab_mask = size - 1;
	for (j = 0; j < n->neq_num; j++) {
		for (i = num_slot(n->eq_num[j].num, n->eq_tab_mask);
		     n->eq_tab[i].leaf != RELAY__NONE;
		     i = (i + 1) & n->eq_tab_mask)
			;
		n->eq_tab[i] = n->eq_num[j];
	}
	relay__free(n->eq_num);
	n->eq_num = NULL;
	return 0;
}

/* Which leaves are lazy, and how each is settled. */
static int build_lazy(relay_ruleset *rs)
{
	uint32_t j, nlazy = 0;
	int rc = lazy_index(rs, &rs->lazy_by, &nlazy);

	if (rc || !nlazy)
		return rc;
	rs->leaf_lazy = relay__calloc((size_t)rs->nleaves + 1, 1);
	if (!rs->leaf_lazy)
		return RELAY_ENOMEM;
	for (j = 0; j < rs->nleaves; j++)
		rs->leaf_lazy[j] = rs->lazy_by[j].node != RELAY__NONE;
	return 0;
}

int relay__build_thresholds(relay_ruleset *rs)
{
	uint32_t i, total = 0, at = 0, most = 0;
	unsigned op;
	thr_ent *tmp;

	for (i = 0; i < rs->nnodes; i++) {
		const relay__tnode *n = &rs->nodes[i];

		total += n->ncmp_num + n->ncmp_time;
		if (n->ncmp_num > most)
			most = n->ncmp_num;
		if (n->ncmp_time > most)
			most = n->ncmp_time;
	}
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

		for (op = 0; op < 4; op++) {
			add_group(rs, &n->num_thr[op], tmp, n->cmp_num, NULL,
				  n->ncmp_num, op, &at);
			add_group(rs, &n->time_thr[op], tmp, NULL, n->cmp_time,
				  n->ncmp_time, op, &at);
			n->fire_num |= n->num_thr[op].n != 0;
			n->fire_time |= n->time_thr[op].n != 0;
		}
		/* equality: one hash probe (values are distinct) */
		if (n->neq_num && eq_table(n)) {
			relay__free(tmp);
			return RELAY_ENOMEM;
		}
	}
	relay__free(tmp);
	return build_lazy(rs);
}

/* ---------------------------------------------------------------- match */

static void fire_range(relay_matcher *m, const relay__thr *g, unsigned op,
		       uint32_t split)
{
	const uint32_t *leaf = m->rs->thr_leaf;
	uint32_t k = g->off, to = g->off + g->n;

	if (op <= RELAY__OP_GTE)
		to = g->off + split;
	else
		k = g->off + split;
	for (; k < to; k++)
		relay__fire(m, leaf[k]);
}

void relay__eval_thr_num(relay_matcher *m, const relay__tnode *n, double v)
{
	const relay_ruleset *rs = m->rs;
	const double *key = rs->thr_num;
	unsigned op;

	for (op = 0; op < 4; op++) {
		const relay__thr *g = &n->num_thr[op];
		bool pre = op <= RELAY__OP_GTE;
		uint32_t lo = 0, hi = g->n, mid;

		if (!g->n)
			continue;
		/* the comparison holds on a prefix (pre) or a suffix */
		while (lo < hi) {
			mid = lo + (hi - lo) / 2;
			if (relay__num_cmp(v, key[g->off + mid],
					   (enum relay__pat_op)op) == pre)
				lo = mid + 1;
			else
				hi = mid;
		}
		fire_range(m, g, op, lo);
	}
}

void relay__eval_thr_time(relay_matcher *m, const relay__tnode *n,
			  const relay__instant *t)
{
	const relay_ruleset *rs = m->rs;
	const int64_t *key = rs->thr_ms;
	unsigned op;

	for (op = 0; op < 4; op++) {
		const relay__thr *g = &n->time_thr[op];
		bool pre = op <= RELAY__OP_GTE;
		uint32_t lo = 0, hi = g->n, mid;

		if (!g->n)
			continue;
		/* a later cutoff is harder to exceed: GT/GTE hold on a
		 * prefix of the ascending offsets, LT/LTE on a suffix */
		while (lo < hi) {
			mid = lo + (hi - lo) / 2;
			if (relay__instant_cmp(t, m->now + key[g->off + mid],
					       (enum relay__pat_op)op) == pre)
				lo = mid + 1;
			else
				hi = mid;
		}
		fire_range(m, g, op, lo);
	}
}

/* The number literal @v equals, found by one probe of eq_tab: a value
 * at a field of number literals costs one hash and (at most half full)
 * about one load, however many literals the field has. */
void relay__eval_eq_num(relay_matcher *m, const relay__tnode *n, double v)
{
	uint32_t i;

	for (i = num_slot(v, n->eq_tab_mask); n->eq_tab[i].leaf != RELAY__NONE;
	     i = (i + 1) & n->eq_tab_mask)
		if (n->eq_tab[i].num == v) {
			relay__fire(m, n->eq_tab[i].leaf);
			return;
		}
}

/*
 * A lazy leaf is stamped when its node's kept value satisfies it; it is
 * never stamped otherwise (nothing else fires it), so a leaf left
 * unstamped reads as "did not fire", as when the one-by-one loop skipped
 * it. Each is settled at most once per event (lazy_done), however many
 * candidates read it, so the lazy tests of an event never cost more than
 * testing every value while scanning did.
 */
void relay__settle(relay_matcher *m, uint32_t leaf)
{
	const relay__lazy *z = &m->rs->lazy_by[leaf];
	const relay__instant *t;
	uint32_t epoch = m->epoch;
	bool held;

	m->lazy_done[leaf] = epoch;
	if (z->x)
		held = m->str_stamp[z->node] == epoch &&
		       relay__xleaf_holds(m, z->node, z->x,
					  m->str_raw[z->node],
					  m->str_len[z->node]);
	else if (z->time)
		held = m->time_stamp[z->node] == epoch &&
		       (t = relay__lazy_time(m, z->node)) != NULL &&
		       relay__instant_cmp(t, m->now + z->offset_ms,
					  (enum relay__pat_op)z->op);
	else if (z->range)
		held = m->num_stamp[z->node] == epoch &&
		       relay__range_has(z->range, m->val_num[z->node]);
	else
		held = m->num_stamp[z->node] == epoch &&
		       relay__num_cmp(m->val_num[z->node], z->num,
				      (enum relay__pat_op)z->op);
	if (held)
		m->leaf_stamp[leaf] = epoch;
}
