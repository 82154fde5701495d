/*
 * ruleset.c - building the match index (see ruleset_int.h for its shape).
 *
 * relay_ruleset_add() only keeps a private copy of the pattern; the index
 * is built by relay_ruleset_build(), when every rule is known, because the
 * choice of anchors uses statistics over all rules (how many distinct
 * literals are tested at a path). Building is linear in the size of the
 * patterns: children and string literals are found through hash maps, so
 * a thousand rules load in well under a millisecond.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ruleset_int.h"

/* The affix hash of @s (prefix: front to back; suffix: back to front). */
static uint32_t affix_hash(const char *s, size_t len, int suffix)
{
	uint64_t h = RELAY__AFFIX_SEED;
	size_t i;

	for (i = 0; i < len; i++)
		h = relay__affix_step(h, (unsigned char)s[suffix ?
							   len - 1 - i : i]);
	return relay__affix_fin(h);
}

/* ---------------------------------------------------------------- nodes */

int relay__grow(void **p, uint32_t *cap, uint32_t need, size_t size)
{
	uint32_t c = *cap ? *cap : 8;
	void *np;

	if (need <= *cap)
		return 0;
	while (c < need)
		c *= 2;
	np = relay__realloc(*p, (size_t)c * size);
	if (!np)
		return RELAY_ENOMEM;
	*p = np;
	*cap = c;
	return 0;
}

static int node_new(relay_ruleset *rs, uint32_t *out)
{
	relay__tnode *n;
	void *p = rs->nodes;
	int rc = relay__grow(&p, &rs->cap_nodes, rs->nnodes + 1, sizeof(*n));

	rs->nodes = p;
	if (rc)
		return rc;
	n = &rs->nodes[rs->nnodes];
	memset(n, 0, sizeof(*n));
	n->present = n->eq_true = n->eq_false = n->eq_null = RELAY__NONE;
	n->scalar = RELAY__NONE;
	*out = rs->nnodes++;
	return 0;
}

static int node_child(relay_ruleset *rs, uint32_t node, const char *name,
		      size_t len, uint32_t *out)
{
	uint32_t c = relay__smap_get(&rs->nodes[node].kids, name, len);
	int rc;

	if (c != RELAY__NONE) {
		*out = c;
		return 0;
	}
	rc = node_new(rs, &c);
	if (!rc)
		rc = relay__smap_put(&rs->nodes[node].kids, name, len, c);
	*out = c;
	return rc;
}

static int leaf_new(relay_ruleset *rs, uint32_t node,
		    enum relay__pat_kind kind, uint32_t *out)
{
	relay__tnode *n = &rs->nodes[node];
	uint32_t cap = rs->cap_leaves, *nl;
	void *p;
	int rc;

	p = rs->leaf_node;
	rc = relay__grow(&p, &cap, rs->nleaves + 1, sizeof(uint32_t));
	rs->leaf_node = p;
	if (rc)
		return rc;
	if (cap != rs->cap_leaves) {
		uint8_t *k = relay__realloc(rs->leaf_kind, cap);

		if (!k)
			return RELAY_ENOMEM;
		rs->leaf_kind = k;
		rs->cap_leaves = cap;
	}
	p = n->leaves;
	rc = relay__grow(&p, &n->cap_leaves, n->nleaves + 1, sizeof(*nl));
	n->leaves = p;
	if (rc)
		return rc;
	n->leaves[n->nleaves++] = rs->nleaves;
	rs->leaf_node[rs->nleaves] = node;
	rs->leaf_kind[rs->nleaves] = (uint8_t)kind;
	*out = rs->nleaves++;
	return 0;
}

/* A slot leaf (presence, true, false, null): made on first use. */
static int slot_leaf(relay_ruleset *rs, uint32_t node, uint32_t *slot,
		     enum relay__pat_kind kind, uint32_t *out)
{
	int rc;

	if (*slot != RELAY__NONE) {
		*out = *slot;
		return 0;
	}
	rc = leaf_new(rs, node, kind, out); /* does not move rs->nodes */
	if (!rc)
		*slot = *out;
	return rc;
}

static int sent_leaf(relay_ruleset *rs, uint32_t node, int suffix,
		     const relay__pat_alt *a, uint32_t *out)
{
	relay__tnode *n = &rs->nodes[node];
	relay__smap *map = suffix ? &n->suffix : &n->prefix;
	uint32_t hash, l;
	int rc;

	if (a->len > UINT32_MAX)
		return RELAY_EINVAL;
	hash = affix_hash(a->str, a->len, suffix);
	l = relay__smap_find_h(map, a->str, a->len, hash);
	if (l != RELAY__NONE) {
		*out = l;
		return 0;
	}
	rc = leaf_new(rs, node, a->kind, out);
	if (rc)
		return rc;
	n = &rs->nodes[node];
	n->want_str = 1;
	return relay__smap_put_h(suffix ? &n->suffix : &n->prefix, a->str, a->len,
			  *out, hash);
}

static int cmp_len(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return (x > y) - (x < y);
}

/* The distinct key lengths of an affix map, ascending (for > 8 keys;
 * fewer are compared one by one). */
static int affix_lens(const relay__smap *map, uint32_t **out, uint32_t *n)
{
	uint32_t *v, i, k = 0;

	if (map->n <= 8)
		return 0;
	v = relay__malloc(map->n * sizeof(*v));
	if (!v)
		return RELAY_ENOMEM;
	for (i = 0; i < map->n; i++)
		v[i] = map->ents[i].len;
	qsort(v, map->n, sizeof(*v), cmp_len);
	for (i = 0; i < map->n; i++)
		if (!k || v[k - 1] != v[i])
			v[k++] = v[i];
	*out = v;
	*n = k;
	return 0;
}

static int num_leaf(relay_ruleset *rs, uint32_t node, const relay__pat_alt *a,
		    uint32_t *out)
{
	relay__tnode *n = &rs->nodes[node];
	int eq = a->kind == RELAY__PAT_EQ_NUM;
	relay__numleaf **arr = eq ? &n->eq_num : &n->cmp_num, *na;
	uint32_t *cnt = eq ? &n->neq_num : &n->ncmp_num, i;
	int rc;

	for (i = 0; i < *cnt; i++)
		if ((*arr)[i].num == a->num && (eq || (*arr)[i].op == a->op)) {
			*out = (*arr)[i].leaf;
			return 0;
		}
	rc = leaf_new(rs, node, a->kind, out);
	if (rc)
		return rc;
	na = relay__realloc(*arr, (*cnt + 1) * sizeof(*na));
	if (!na)
		return RELAY_ENOMEM;
	*arr = na;
	na[*cnt].num = a->num;
	na[*cnt].op = a->op;
	na[*cnt].leaf = *out;
	(*cnt)++;
	n->want_num = 1;
	return 0;
}

static int time_leaf(relay_ruleset *rs, uint32_t node,
		     const relay__pat_alt *a, uint32_t *out)
{
	relay__tnode *n = &rs->nodes[node];
	relay__timeleaf *na;
	uint32_t i;
	int rc;

	for (i = 0; i < n->ncmp_time; i++)
		if (n->cmp_time[i].offset_ms == a->offset_ms &&
		    n->cmp_time[i].op == a->op) {
			*out = n->cmp_time[i].leaf;
			return 0;
		}
	rc = leaf_new(rs, node, a->kind, out);
	if (rc)
		return rc;
	na = relay__realloc(n->cmp_time, (n->ncmp_time + 1) * sizeof(*na));
	if (!na)
		return RELAY_ENOMEM;
	n->cmp_time = na;
	na[n->ncmp_time].offset_ms = a->offset_ms;
	na[n->ncmp_time].op = a->op;
	na[n->ncmp_time].leaf = *out;
	n->ncmp_time++;
	n->want_str = 1;
	return 0;
}

/* The leaf of a string equality at @node (@ci: ignoring ASCII case, in
 * the eic map), shared by every rule that tests the same literal. */
static int lit_leaf(relay_ruleset *rs, uint32_t node, const relay__pat_alt *a,
		    bool ci, uint32_t *out)
{
	relay__tnode *n = &rs->nodes[node];
	uint32_t l = ci ? relay__smap_find_ci(&n->eic, a->str, a->len)
			: relay__smap_get(&n->eq_str, a->str, a->len);
	int rc;

	if (l != RELAY__NONE) {
		*out = l;
		return 0;
	}
	rc = leaf_new(rs, node, a->kind, out); /* does not move rs->nodes */
	if (rc)
		return rc;
	n->want_str = 1;
	if (ci)
		return relay__smap_put_h(&n->eic, a->str, a->len, *out,
					 relay__ihash(a->str, a->len));
	return relay__smap_put(&n->eq_str, a->str, a->len, *out);
}

static bool x_same(const relay__pat_alt *x, const relay__pat_alt *a)
{
	if (x->kind != a->kind)
		return false;
	switch (a->kind) {
	case RELAY__PAT_CIDR:
		return x->ipver == a->ipver && x->bits == a->bits &&
		       !memcmp(x->ip, a->ip, 16);
	case RELAY__PAT_RANGE:
		return x->num == a->num && x->op == a->op && x->hi == a->hi &&
		       x->hi_op == a->hi_op;
	default:
		return x->len == a->len && !memcmp(x->str, a->str, a->len);
	}
}

/* A leaf tested one by one (relay__xleaf), shared by equal operators. */
static int x_leaf(relay_ruleset *rs, uint32_t node, const relay__pat_alt *a,
		  uint32_t *out)
{
	relay__tnode *n = &rs->nodes[node];
	int num = a->kind == RELAY__PAT_RANGE;
	relay__xleaf **arr = num ? &n->xnum : &n->xstr, *na;
	uint32_t *cnt = num ? &n->nxnum : &n->nxstr, i;
	int rc;

	if (a->len > UINT32_MAX)
		return RELAY_EINVAL;
	for (i = 0; i < *cnt; i++)
		if (x_same((*arr)[i].a, a)) {
			*out = (*arr)[i].leaf;
			return 0;
		}
	rc = leaf_new(rs, node, a->kind, out);
	if (rc)
		return rc;
	n = &rs->nodes[node];
	arr = num ? &n->xnum : &n->xstr;
	na = relay__realloc(*arr, (*cnt + 1) * sizeof(*na));
	if (!na)
		return RELAY_ENOMEM;
	*arr = na;
	memset(&na[*cnt], 0, sizeof(*na));
	na[*cnt].a = a;
	na[*cnt].s = a->str;
	na[*cnt].len = (uint32_t)a->len;
	na[*cnt].kind = (uint8_t)a->kind;
	na[*cnt].leaf = *out;
	if (a->kind == RELAY__PAT_CIDR && a->ipver == 4) {
		na[*cnt].v4mask = a->bits ? 0xffffffffu << (32 - a->bits) : 0;
		na[*cnt].v4net = ((uint32_t)a->ip[0] << 24 |
				  (uint32_t)a->ip[1] << 16 |
				  (uint32_t)a->ip[2] << 8 | a->ip[3]) &
				 na[*cnt].v4mask;
	}
	if (a->kind == RELAY__PAT_WILDCARD) {
		size_t pre, suf;

		na[*cnt].mid_any = relay__wild_split(a->str, a->len, &pre,
						     &suf);
		if (pre > UINT32_MAX || suf > UINT32_MAX)
			return RELAY_EINVAL;
		na[*cnt].pre = (uint32_t)pre;
		na[*cnt].suf = (uint32_t)suf;
		na[*cnt].mid_stars = a->len - suf > pre + 1 &&
				     a->str[pre] == '*' &&
				     a->str[a->len - suf - 1] == '*' &&
				     !memchr(a->str + pre, '\\',
					     a->len - suf - pre);
	}
	(*cnt)++;
	if (num)
		n->want_num = 1;
	else
		n->want_str = 1;
	return 0;
}

/* The leaf that alternative @a (not a MAP, not exists) tests at @node. */
static int alt_leaf(relay_ruleset *rs, uint32_t node, const relay__pat_alt *a,
		    uint32_t *out)
{
	relay__tnode *n = &rs->nodes[node];

	switch (a->kind) {
	case RELAY__PAT_EQ_STR:
		return lit_leaf(rs, node, a, false, out);
	case RELAY__PAT_PREFIX:
	case RELAY__PAT_SUFFIX:
		return sent_leaf(rs, node, a->kind == RELAY__PAT_SUFFIX, a,
				 out);
	case RELAY__PAT_EQ_NUM:
	case RELAY__PAT_CMP_NUM:
		return num_leaf(rs, node, a, out);
	case RELAY__PAT_CMP_TIME:
		return time_leaf(rs, node, a, out);
	case RELAY__PAT_EQ_BOOL:
		return slot_leaf(rs, node, a->boolean ? &n->eq_true :
				 &n->eq_false, a->kind, out);
	case RELAY__PAT_EQ_NULL:
		return slot_leaf(rs, node, &n->eq_null, a->kind, out);
	case RELAY__PAT_EIC:
		return lit_leaf(rs, node, a, true, out);
	case RELAY__PAT_IPREFIX:
	case RELAY__PAT_ISUFFIX:
	case RELAY__PAT_WILDCARD:
	case RELAY__PAT_CIDR:
	case RELAY__PAT_RANGE:
		return x_leaf(rs, node, a, out);
	default:
		return slot_leaf(rs, node, &n->present, RELAY__PAT_EXISTS,
				 out);
	}
}

/* ---------------------------------------------------------------- programs */

static int emit(relay_ruleset *rs, uint32_t op, uint32_t arg, uint32_t *at)
{
	void *p = rs->prog;
	int rc = relay__grow(&p, &rs->cap_prog, rs->nprog + 1,
			     sizeof(relay__expr));

	rs->prog = p;
	if (rc)
		return rc;
	rs->prog[rs->nprog].op = op;
	rs->prog[rs->nprog].arg = arg;
	rs->prog[rs->nprog].end = rs->nprog + 1;
	*at = rs->nprog++;
	return 0;
}

static int gen_map(relay_ruleset *rs, const relay__pat_map *m, uint32_t node);

/*
 * anything-but: AND(a scalar is here, NOT hit), where "hit" is a leaf of
 * its own that every excluded test fires (the also lists): what a value
 * costs is the tests it passes, not the length of the list. A short list
 * (at most RELAY__NOT_INLINE tests, nearly all of them) is written
 * AND(scalar, NOT test_1, ..., NOT test_n) instead: read only when a
 * rule that holds it is evaluated, for what the rule costs anyway, and
 * nothing fired on the way (a list's test that fires while scanning
 * would otherwise mark every anything-but that lists it).
 */
static int gen_not(relay_ruleset *rs, const relay__pat_alt *a, uint32_t node)
{
	uint32_t hit = 0, inner, scalar, at, k;
	bool inl = a->nsub <= RELAY__NOT_INLINE;
	void *p;
	int rc = 0;

	if (!inl)
		rc = leaf_new(rs, node, RELAY__PAT_NOT, &hit);
	if (!rc)
		rc = slot_leaf(rs, node, &rs->nodes[node].scalar,
			       RELAY__PAT_EXISTS, &scalar);
	if (!rc)
		rc = emit(rs, RELAY__X_AND, 0, &at);
	if (!rc)
		rc = emit(rs, RELAY__X_LEAF, scalar, &k);
	for (k = 0; !rc && k < a->nsub; k++) {
		rc = alt_leaf(rs, node, &a->sub[k], &inner);
		if (rc)
			break;
		if (inl) {
			rc = emit(rs, RELAY__X_NLEAF, inner, &hit);
			continue;
		}
		p = rs->pairs;
		rc = relay__grow(&p, &rs->cap_pairs, rs->npairs + 2,
				 sizeof(uint32_t));
		rs->pairs = p;
		if (rc)
			break;
		rs->pairs[rs->npairs++] = inner;
		rs->pairs[rs->npairs++] = hit;
	}
	if (!rc && !inl)
		rc = emit(rs, RELAY__X_NLEAF, hit, &k);
	if (!rc)
		rs->prog[at].end = rs->nprog;
	return rc;
}

/* The also lists, from the (inner, hit) pairs (CSR by inner leaf). */
static int build_also(relay_ruleset *rs)
{
	uint32_t *cur, k, n = rs->npairs / 2;

	if (!n)
		return 0;
	rs->also_off = relay__calloc((size_t)rs->nleaves + 1,
				     sizeof(uint32_t));
	rs->also = relay__calloc(n, sizeof(uint32_t));
	cur = relay__calloc((size_t)rs->nleaves + 1, sizeof(uint32_t));
	if (!rs->also_off || !rs->also || !cur) {
		relay__free(cur);
		return RELAY_ENOMEM;
	}
	for (k = 0; k < n; k++)
		rs->also_off[rs->pairs[2 * k] + 1]++;
	for (k = 0; k < rs->nleaves; k++)
		rs->also_off[k + 1] += rs->also_off[k];
	memcpy(cur, rs->also_off, (size_t)rs->nleaves * sizeof(*cur));
	for (k = 0; k < n; k++)
		rs->also[cur[rs->pairs[2 * k]]++] = rs->pairs[2 * k + 1];
	relay__free(cur);
	return 0;
}

static int gen_alt(relay_ruleset *rs, const relay__pat_alt *a, uint32_t node)
{
	uint32_t leaf, at;
	int rc;

	if (a->kind == RELAY__PAT_MAP)
		return gen_map(rs, a->map, node);
	if (a->kind == RELAY__PAT_NOT)
		return gen_not(rs, a, node);
	rc = alt_leaf(rs, node, a, &leaf);
	if (rc)
		return rc;
	if (a->kind == RELAY__PAT_EXISTS && !a->boolean)
		return emit(rs, RELAY__X_NLEAF, leaf, &at);
	return emit(rs, RELAY__X_LEAF, leaf, &at);
}

static int gen_field(relay_ruleset *rs, const relay__pat_field *f,
		     uint32_t node)
{
	uint32_t child, at = 0, i;
	int rc = node_child(rs, node, f->name, f->name_len, &child);

	if (!rc && f->nalts > 1)
		rc = emit(rs, RELAY__X_OR, 0, &at);
	for (i = 0; !rc && i < f->nalts; i++)
		rc = gen_alt(rs, &f->alts[i], child);
	if (!rc && f->nalts > 1)
		rs->prog[at].end = rs->nprog;
	return rc;
}

static int gen_map(relay_ruleset *rs, const relay__pat_map *m, uint32_t node)
{
	uint32_t at = 0, oat = 0, i;
	size_t nterms = m->nfields + (m->nors ? 1 : 0);
	int rc = 0;

	if (nterms > 1)
		rc = emit(rs, RELAY__X_AND, 0, &at);
	for (i = 0; !rc && i < m->nfields; i++)
		rc = gen_field(rs, &m->fields[i], node);
	if (!rc && m->nors)
		rc = emit(rs, RELAY__X_OR, 0, &oat);
	for (i = 0; !rc && i < m->nors; i++)
		rc = gen_map(rs, &m->ors[i], node);
	if (!rc && m->nors)
		rs->prog[oat].end = rs->nprog;
	if (!rc && nterms > 1)
		rs->prog[at].end = rs->nprog;
	return rc;
}

/* ---------------------------------------------------------------- API */

int relay_ruleset_new(relay_ruleset **out)
{
	*out = relay__calloc(1, sizeof(**out));
	return *out ? 0 : RELAY_ENOMEM;
}

int relay_ruleset_add(relay_ruleset *rs, const relay_pattern *p, uint32_t *id)
{
	relay_pattern *c;
	void *arr = rs ? rs->pats : NULL;
	int rc;

	if (!rs || !p || rs->built || rs->npats == UINT32_MAX - 1)
		return RELAY_EINVAL;
	rc = relay__grow(&arr, &rs->cap, rs->npats + 1,
			 sizeof(relay_pattern *));
	rs->pats = arr;
	if (rc)
		return rc;
	c = relay__calloc(1, sizeof(*c));
	if (!c)
		return RELAY_ENOMEM;
	if (relay__pat_map_copy(&c->root, &p->root)) {
		relay_pattern_free(c);
		return RELAY_ENOMEM;
	}
	if (id)
		*id = rs->npats;
	rs->pats[rs->npats++] = c;
	return 0;
}

static unsigned xstr_rank(const relay__xleaf *x)
{
	switch (x->a->kind) {
	case RELAY__PAT_CIDR:
		return x->a->ipver == 4 ? 0 : 1;
	case RELAY__PAT_WILDCARD:
		return 2;
	case RELAY__PAT_IPREFIX:
		return 3;
	default:
		return 4;
	}
}

/* Group a node's one-by-one string tests by kind (stable), so that the
 * matcher runs one loop per kind (relay__tnode.xcut). */
static void sort_xstr(relay__tnode *n)
{
	uint32_t i, j;
	relay__xleaf x;

	for (i = 1; i < n->nxstr; i++) {
		x = n->xstr[i];
		for (j = i; j > 0 && xstr_rank(&n->xstr[j - 1]) >
				     xstr_rank(&x); j--)
			n->xstr[j] = n->xstr[j - 1];
		n->xstr[j] = x;
	}
	relay__xstr_cut(n);
}

void relay__xstr_cut(relay__tnode *n)
{
	uint32_t i, k;

	for (k = 0, i = 0; k < 4; k++) {
		while (i < n->nxstr && xstr_rank(&n->xstr[i]) <= k)
			i++;
		n->xcut[k] = i;
	}
	n->want_ip = n->xcut[1] != 0;
}

int relay_ruleset_build(relay_ruleset *rs)
{
	uint32_t r, root;
	int rc;

	if (!rs || rs->built)
		return RELAY_EINVAL;
	rs->rules = relay__calloc(rs->npats ? rs->npats : 1,
				  sizeof(*rs->rules));
	if (!rs->rules)
		return RELAY_ENOMEM;
	for (r = 0; r < rs->npats; r++)
		rs->rules[r].cnf_start = RELAY__NONE;
	rc = node_new(rs, &root);
	for (r = 0; !rc && r < rs->npats; r++) {
		rs->rules[r].prog_start = rs->nprog;
		rc = gen_map(rs, &rs->pats[r]->root, root);
	}
	for (r = 0; !rc && r < rs->nnodes; r++) {
		relay__tnode *n = &rs->nodes[r];

		n->kbase = rs->nkidslots;
		rs->nkidslots += n->kids.n + 1;
		sort_xstr(n);
		n->eq_only = n->eq_str.n && !n->prefix.n && !n->suffix.n &&
			     !n->eic.n && !n->nxstr && !n->ncmp_time;
		rc = affix_lens(&n->prefix, &n->prefix_lens,
				&n->nprefix_lens);
		if (!rc)
			rc = affix_lens(&n->suffix, &n->suffix_lens,
					&n->nsuffix_lens);
	}
	if (!rc)
		rc = build_also(rs);
	if (!rc)
		rc = relay__build_anchors(rs);
	if (!rc)
		rc = relay__build_cnf(rs);
	if (!rc)
		rc = relay__build_thresholds(rs);
	if (!rc)
		rc = relay__order_rules(rs);
	if (rc)
		return rc;
	rs->built = true;
	return 0;
}

size_t relay_ruleset_count(const relay_ruleset *rs)
{
	return rs ? rs->npats : 0;
}

void relay_ruleset_free(relay_ruleset *rs)
{
	uint32_t i;

	if (!rs)
		return;
	for (i = 0; i < rs->npats; i++)
		relay_pattern_free(rs->pats[i]);
	for (i = 0; i < rs->nnodes; i++) {
		relay__tnode *n = &rs->nodes[i];

		relay__smap_fini(&n->kids);
		relay__smap_fini(&n->eq_str);
		relay__smap_fini(&n->prefix);
		relay__smap_fini(&n->suffix);
		relay__free(n->prefix_lens);
		relay__free(n->suffix_lens);
		relay__free(n->eq_num);
		relay__free(n->eq_tab);
		relay__free(n->cmp_num);
		relay__free(n->cmp_time);
		relay__free(n->leaves);
		relay__smap_fini(&n->eic);
		relay__free(n->xstr);
		relay__free(n->xlazy);
		relay__free(n->xnum);
	}
	relay__free(rs->pats);
	relay__free(rs->nodes);
	relay__free(rs->leaf_node);
	relay__free(rs->leaf_kind);
	relay__free(rs->prog);
	relay__free(rs->rules);
	relay__free(rs->cnf);
	relay__free(rs->anchor_off);
	relay__free(rs->anchor_rules);
	relay__free(rs->always);
	relay__free(rs->also_off);
	relay__free(rs->also);
	relay__free(rs->pairs);
	relay__free(rs->thr_num);
	relay__free(rs->thr_ms);
	relay__free(rs->thr_leaf);
	relay__free(rs->lazy_by);
	relay__free(rs->leaf_lazy);
	relay__free(rs);
}
