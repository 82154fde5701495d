/*
 * ruleset_plan.c - how a built ruleset evaluates its rules: the anchor
 * leaves that make a rule a candidate, the flat clause lists of rules
 * that are an AND of ORs of leaves, and the order that puts a rule's
 * late tests (thresholds, lazy operators) after its other tests, so that
 * lazy leaves are settled only for a candidate whose other tests hold.
 * Called by
 * relay_ruleset_build() (ruleset.c).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ruleset_int.h"

/* Whether @leaf is tested late: a threshold (it may be lazy), or an
 * operator leaf that is lazy (thresh.c settles those only from the value
 * kept at their node, for a rule whose other tests hold). */
static bool leaf_late(const relay_ruleset *rs, uint32_t leaf)
{
	switch (rs->leaf_kind[leaf]) {
	case RELAY__PAT_CMP_NUM:
	case RELAY__PAT_CMP_TIME:
	case RELAY__PAT_RANGE:
		return true;
	case RELAY__PAT_EIC:
	case RELAY__PAT_IPREFIX:
	case RELAY__PAT_ISUFFIX:
	case RELAY__PAT_WILDCARD:
	case RELAY__PAT_CIDR:
		return !relay__leaf_fires(rs, leaf);
	default:
		return false;
	}
}

/* Whether the subtree at @i has a late test (leaf_late). */
static bool expr_late(const relay_ruleset *rs, uint32_t i)
{
	uint32_t j;

	for (j = i; j < rs->prog[i].end; j++)
		if ((rs->prog[j].op == RELAY__X_LEAF ||
		     rs->prog[j].op == RELAY__X_NLEAF) &&
		    leaf_late(rs, rs->prog[j].arg))
			return true;
	return false;
}

/*
 * How likely a leaf is to fire on a random event, roughly. An equality at
 * a path where many distinct literals are tested is the best anchor (one
 * value fires at most one of them); presence is the worst.
 */
static double leaf_cost(const relay_ruleset *rs, uint32_t leaf)
{
	const relay__tnode *n = &rs->nodes[rs->leaf_node[leaf]];

	switch (rs->leaf_kind[leaf]) {
	case RELAY__PAT_EQ_STR:
		return 1.0 / (1.0 + n->eq_str.n);
	case RELAY__PAT_EQ_NUM:
		return 1.0 / (1.0 + n->neq_num);
	case RELAY__PAT_EQ_BOOL:
	case RELAY__PAT_EQ_NULL:
	case RELAY__PAT_PREFIX:
	case RELAY__PAT_SUFFIX:
		return 0.3;
	case RELAY__PAT_EIC:
		return 1.0 / (1.0 + n->eic.n);
	case RELAY__PAT_IPREFIX:
	case RELAY__PAT_ISUFFIX:
	case RELAY__PAT_WILDCARD:
	case RELAY__PAT_CIDR:
		return 0.3;
	case RELAY__PAT_CMP_NUM:
	case RELAY__PAT_CMP_TIME:
	case RELAY__PAT_RANGE:
		return 0.5;
	default:
		return 0.9;
	}
}

/* A test and its rough chance of holding, to be put in order. */
typedef struct ranked {
	double chance;
	uint32_t at;  /* where it starts (prog index, or offset in a leafvec) */
} ranked;

/* Ascending chance; ties keep their order (at). */
static int ranked_cmp(const void *a, const void *b)
{
	const ranked *x = a, *y = b;

	if (x->chance != y->chance)
		return x->chance < y->chance ? -1 : 1;
	return (x->at > y->at) - (x->at < y->at);
}

/*
 * A rough chance that the subtree at @i holds: a leaf's anchor cost (its
 * complement when negated), at most 1 for an OR (the sum), the product
 * for an AND; 2 when it tests @anchor, the leaf the rule was found
 * through (it holds whenever the rule is evaluated, so it goes last).
 */
static double expr_chance(const relay_ruleset *rs, uint32_t i,
			  uint32_t anchor)
{
	const relay__expr *e = &rs->prog[i];
	double p, q;
	uint32_t j;

	switch (e->op) {
	case RELAY__X_LEAF:
		return e->arg == anchor ? 2 : leaf_cost(rs, e->arg);
	case RELAY__X_NLEAF:
		return 1 - leaf_cost(rs, e->arg);
	case RELAY__X_OR:
		for (p = 0, j = i + 1; j < e->end; j = rs->prog[j].end) {
			q = expr_chance(rs, j, anchor);
			if (q > 1)
				return q;
			p += q;
		}
		return p < 1 ? p : 1;
	default:
		for (p = 1, j = i + 1; j < e->end; j = rs->prog[j].end) {
			q = expr_chance(rs, j, anchor);
			if (q > 1)
				return q;
			p *= q;
		}
		return p;
	}
}

/*
 * Rule @r's root AND with the conjuncts without a late test first: the
 * matcher evaluates those, and settles the rule's lazy leaves only when
 * they hold (prog_late: the first conjunct with a late test, or
 * NONE when the root is not an AND). Within each group the conjuncts
 * least likely to hold come first, the one with @anchor (or NONE) last,
 * so that a candidate that fails fails early. Subtrees move whole; their
 * end indices move with them.
 */
static int order_root(relay_ruleset *rs, uint32_t r, uint32_t anchor)
{
	uint32_t root = rs->rules[r].prog_start, end = rs->prog[root].end;
	uint32_t j, k, at = 0, late, n, i;
	relay__expr *tmp;
	ranked *sub;

	rs->rules[r].prog_late = RELAY__NONE;
	if (rs->prog[root].op != RELAY__X_AND)
		return 0;
	tmp = relay__malloc((end - root) * sizeof(*tmp));
	sub = relay__malloc((end - root) * sizeof(*sub));
	if (!tmp || !sub) {
		relay__free(tmp);
		relay__free(sub);
		return RELAY_ENOMEM;
	}
	for (late = 0; late < 2; late++) {
		if (late)
			rs->rules[r].prog_late = root + 1 + at;
		for (n = 0, j = root + 1; j < end; j = rs->prog[j].end)
			if (expr_late(rs, j) == (late == 1))
				sub[n++] = (ranked){ expr_chance(rs, j, anchor),
						     j };
		qsort(sub, n, sizeof(*sub), ranked_cmp);
		for (i = 0; i < n; i++) {
			uint32_t to = root + 1 + at;

			j = sub[i].at;
			for (k = j; k < rs->prog[j].end; k++) {
				tmp[at] = rs->prog[k];
				tmp[at++].end = rs->prog[k].end - j + to;
			}
		}
	}
	memcpy(rs->prog + root + 1, tmp, at * sizeof(*tmp));
	relay__free(tmp);
	relay__free(sub);
	return 0;
}

typedef struct leafvec {
	uint32_t *v;
	uint32_t n, cap;
} leafvec;

static int lv_push(leafvec *lv, uint32_t x)
{
	void *p = lv->v;
	int rc = relay__grow(&p, &lv->cap, lv->n + 1, sizeof(uint32_t));

	lv->v = p;
	if (!rc)
		lv->v[lv->n++] = x;
	return rc;
}

/*
 * Flatten expression @i into clauses appended to @out (see
 * relay__eval_cnf). Returns 0, 1 when an OR in it would distribute into
 * more than CNF_MAX_CLAUSES clauses or CNF_MAX_LITS literals (the rule
 * stays a program), or RELAY_ENOMEM.
 */
static int flatten(relay_ruleset *rs, uint32_t i, leafvec *out);

/*
 * An AND inside an OR (a $or branch of two fields, a map among a field's
 * alternatives) is distributed, (a and b) or c = (a or c) and (b or c),
 * while each OR's clauses stay within these: a flat rule costs about
 * half of what its recursive program does (the recursion's branches
 * mispredict), and 16 clauses cover a $or of two four-field branches.
 */
#define CNF_MAX_CLAUSES 16
#define CNF_MAX_LITS 128

static int cnf_push(relay_ruleset *rs, uint32_t x)
{
	void *p = rs->cnf;
	int rc = relay__grow(&p, &rs->cap_cnf, rs->ncnf + 1, sizeof(uint32_t));

	rs->cnf = p;
	if (!rc)
		rs->cnf[rs->ncnf++] = x;
	return rc;
}

static uint32_t lit_of(const relay__expr *e)
{
	return e->arg << 1 | (e->op == RELAY__X_NLEAF);
}

/* Clauses [n, lits] in @v: how many, and how many literals. */
static void cnf_size(const leafvec *v, uint32_t *clauses, uint32_t *lits)
{
	uint32_t k;

	*clauses = *lits = 0;
	for (k = 0; k < v->n; k += v->v[k] + 1) {
		(*clauses)++;
		*lits += v->v[k];
	}
}

/* The clauses of (@a or @b), each a clause of @a joined with one of @b,
 * into @out (emptied first). */
static int cnf_or(const leafvec *a, const leafvec *b, leafvec *out)
{
	uint32_t i, j, k;
	int rc = 0;

	out->n = 0;
	for (i = 0; !rc && i < a->n; i += a->v[i] + 1)
		for (j = 0; !rc && j < b->n; j += b->v[j] + 1) {
			rc = lv_push(out, a->v[i] + b->v[j]);
			for (k = 1; !rc && k <= a->v[i]; k++)
				rc = lv_push(out, a->v[i + k]);
			for (k = 1; !rc && k <= b->v[j]; k++)
				rc = lv_push(out, b->v[j + k]);
		}
	return rc;
}

/* An OR's clauses: its branches' joined pairwise (an OR of literals is
 * one clause), appended to @out. */
static int flatten_or(relay_ruleset *rs, uint32_t i, leafvec *out)
{
	leafvec acc = { 0 }, br = { 0 }, tmp = { 0 };
	uint32_t j, nc, nl, bc, bl, k;
	int rc = 0, first = 1;

	for (j = i + 1; !rc && j < rs->prog[i].end; j = rs->prog[j].end) {
		br.n = 0;
		rc = flatten(rs, j, &br);
		if (rc)
			break;
		if (first) {
			leafvec t = acc;

			acc = br;
			br = t;
			first = 0;
			continue;
		}
		/* the product's size, known before it is made (a branch
		 * of many fields is many clauses: the product would be
		 * their square) */
		cnf_size(&acc, &nc, &nl);
		cnf_size(&br, &bc, &bl);
		if ((uint64_t)nc * bc > CNF_MAX_CLAUSES ||
		    (uint64_t)nl * bc + (uint64_t)bl * nc > CNF_MAX_LITS) {
			rc = 1;
			break;
		}
		rc = cnf_or(&acc, &br, &tmp);
		if (rc)
			break;
		{
			leafvec t = acc;

			acc = tmp;
			tmp = t;
		}
	}
	for (k = 0; !rc && k < acc.n; k++)
		rc = lv_push(out, acc.v[k]);
	relay__free(acc.v);
	relay__free(br.v);
	relay__free(tmp.v);
	return rc;
}

static int flatten(relay_ruleset *rs, uint32_t i, leafvec *out)
{
	const relay__expr *e = &rs->prog[i];
	uint32_t j;
	int rc = 0;

	switch (e->op) {
	case RELAY__X_LEAF:
	case RELAY__X_NLEAF:
		rc = lv_push(out, 1);
		return rc ? rc : lv_push(out, lit_of(e));
	case RELAY__X_OR:
		return flatten_or(rs, i, out);
	default:
		/* an AND adds its conjuncts' clauses: no bound here (a
		 * rule of many fields is many clauses, all flat) */
		for (j = i + 1; !rc && j < e->end; j = rs->prog[j].end)
			rc = flatten(rs, j, out);
		return rc;
	}
}

/* Whether clause [n, lits] has a late test (leaf_late). */
static uint32_t clause_late(const relay_ruleset *rs, const uint32_t *c)
{
	uint32_t k;

	for (k = 1; k <= c[0]; k++)
		if (leaf_late(rs, c[k] >> 1))
			return 1;
	return 0;
}

/*
 * How likely clause [n, lits] is to hold, roughly (the sum of its
 * literals' chances, at most 1); the clause that holds @anchor (the leaf
 * that made the rule a candidate: it holds whenever the rule is
 * evaluated) counts as certain.
 */
static double clause_cost(const relay_ruleset *rs, const uint32_t *c,
			  uint32_t anchor)
{
	double p = 0, q;
	uint32_t k;

	for (k = 1; k <= c[0]; k++) {
		if (c[k] == anchor << 1)
			return 2;
		q = leaf_cost(rs, c[k] >> 1);
		p += (c[k] & 1) ? 1 - q : q;
	}
	return p < 1 ? p : 1;
}

/*
 * Rule @r's flat clauses: those without a late test first (only a rule
 * that passes them settles its lazy leaves, relay__match_end), each
 * group the least likely to hold first, so that a candidate that fails
 * fails at its first clause as often as possible; the first two, when
 * they are one literal, are also the rule's filter (relay__rule.first).
 * A program gets its root AND's first conjunct as filter when that is
 * one literal. @anchor: the anchor leaf @r was found through, or NONE.
 */
/* Filter clause @k (0 or 1) of rule @r: literals @a and @b (OR). */
static void set_filter(relay_ruleset *rs, uint32_t r, int k, uint32_t a,
		       uint32_t b)
{
	rs->rules[r].first[2 * k] = a;
	rs->rules[r].first[2 * k + 1] = b;
}

/* Root conjunct @j of a program as a filter clause: a literal, or an OR
 * of two; 0, or -1 when it is neither. */
static int prog_filter(relay_ruleset *rs, uint32_t r, int k, uint32_t j)
{
	const relay__expr *e = &rs->prog[j];
	uint32_t x, y;

	if (e->op == RELAY__X_LEAF || e->op == RELAY__X_NLEAF) {
		set_filter(rs, r, k, lit_of(e), RELAY__LIT_FALSE(rs));
		return 0;
	}
	if (e->op != RELAY__X_OR)
		return -1;
	x = j + 1;
	y = x < e->end ? rs->prog[x].end : e->end;
	if (x >= e->end || y >= e->end || rs->prog[y].end != e->end ||
	    (rs->prog[x].op != RELAY__X_LEAF &&
	     rs->prog[x].op != RELAY__X_NLEAF) ||
	    (rs->prog[y].op != RELAY__X_LEAF &&
	     rs->prog[y].op != RELAY__X_NLEAF))
		return -1;
	set_filter(rs, r, k, lit_of(&rs->prog[x]), lit_of(&rs->prog[y]));
	return 0;
}

static int cnf_rule(relay_ruleset *rs, uint32_t r, uint32_t anchor,
		    leafvec *lv)
{
	uint32_t k, j, late, n, i;
	int nf;
	ranked *at;
	int rc;

	lv->n = 0;
	set_filter(rs, r, 0, RELAY__LIT_TRUE(rs), RELAY__LIT_TRUE(rs));
	set_filter(rs, r, 1, RELAY__LIT_TRUE(rs), RELAY__LIT_TRUE(rs));
	rc = flatten(rs, rs->rules[r].prog_start, lv);
	if (rc == 1) {
		/* a program: its root AND's first conjuncts that are a
		 * literal or an OR of two, before the late tests
		 * (order_root put the least likely first) */
		const relay__rule *u = &rs->rules[r];
		uint32_t root = u->prog_start, end;

		if (rs->prog[root].op != RELAY__X_AND)
			return 0;
		end = u->prog_late != RELAY__NONE ? u->prog_late
						  : rs->prog[root].end;
		for (nf = 0, j = root + 1; j < end && nf < 2;
		     j = rs->prog[j].end)
			if (prog_filter(rs, r, nf, j) == 0)
				nf++;
		return 0;
	}
	/* at most one clause per two entries of lv ([1, lit] at least) */
	at = relay__malloc((lv->n / 2 + 1) * sizeof(*at));
	if (!at)
		return RELAY_ENOMEM;
	rs->rules[r].cnf_start = rs->ncnf;
	for (late = 0; !rc && late < 2; late++) {
		if (late)
			rs->rules[r].cnf_late = rs->ncnf;
		for (n = 0, k = 0; k < lv->n; k += lv->v[k] + 1)
			if (clause_late(rs, lv->v + k) == late)
				at[n++] = (ranked){
					clause_cost(rs, lv->v + k, anchor), k };
		qsort(at, n, sizeof(*at), ranked_cmp);
		/* the first two clauses of at most two literals: the
		 * candidate filter (relay__match_end), which every
		 * candidate passes before its clauses are read, so they
		 * are not stored again (marked by a chance of -1) */
		for (i = 0, nf = 0; !late && i < n && nf < 2; i++) {
			const uint32_t *c = lv->v + at[i].at;

			if (c[0] == 1)
				set_filter(rs, r, nf++, c[1],
					   RELAY__LIT_FALSE(rs));
			else if (c[0] == 2)
				set_filter(rs, r, nf++, c[1], c[2]);
			else
				continue;
			at[i].chance = -1;
		}
		for (i = 0; !rc && i < n; i++)
			for (j = 0; !rc && at[i].chance >= 0 &&
			     j <= lv->v[at[i].at]; j++)
				rc = cnf_push(rs, lv->v[at[i].at + j]);
		if (!rc)
			rc = cnf_push(rs, 0);
	}
	relay__free(at);
	return rc;
}

/*
 * Flat programs are laid out in anchor order (the rules of anchor leaf 0,
 * then of leaf 1, ...; then the rules without an anchor), because a fired
 * leaf makes its rules candidates together: their programs are then read
 * from neighbouring cache lines. Needs the anchors built.
 */
int relay__build_cnf(relay_ruleset *rs)
{
	leafvec lv = { 0 };
	uint32_t r, k, leaf;
	uint8_t *done;
	int rc = 0;

	done = relay__calloc(rs->npats ? rs->npats : 1, 1);
	if (!done)
		return RELAY_ENOMEM;
	for (k = 0, leaf = 0; !rc && k < rs->anchor_off[rs->nleaves]; k++) {
		while (rs->anchor_off[leaf + 1] <= k)
			leaf++;
		r = rs->anchor_rules[k];
		if (done[r])
			continue;
		done[r] = 1;
		rc = order_root(rs, r, leaf);
		if (!rc)
			rc = cnf_rule(rs, r, leaf, &lv);
	}
	for (k = 0; !rc && k < rs->nalways; k++) {
		rc = order_root(rs, rs->always[k], RELAY__NONE);
		if (!rc)
			rc = cnf_rule(rs, rs->always[k], RELAY__NONE, &lv);
	}
	relay__free(lv.v);
	relay__free(done);
	return rc;
}

/* ---------------------------------------------------------------- anchors */

/*
 * The cheapest anchor of expression @i: appends its leaves to @out and
 * returns its cost, or INFINITY when the expression can be true with no
 * leaf fired (NOT, or an OR with such a branch). An AND needs only one
 * conjunct's anchor; an OR needs all of its branches'.
 */
static double anchor(const relay_ruleset *rs, uint32_t i, leafvec *out,
		     int *oom)
{
	const relay__expr *e = &rs->prog[i];
	leafvec best = { 0 }, tmp = { 0 };
	double cost = 0, bc = INFINITY, c;
	uint32_t j, k;

	switch (e->op) {
	case RELAY__X_LEAF:
		*oom |= lv_push(out, e->arg) != 0;
		return leaf_cost(rs, e->arg);
	case RELAY__X_NLEAF:
		return INFINITY;
	case RELAY__X_OR:
		for (j = i + 1; j < e->end; j = rs->prog[j].end) {
			c = anchor(rs, j, out, oom);
			if (isinf(c))
				return INFINITY;
			cost += c;
		}
		return cost;
	default:
		for (j = i + 1; j < e->end; j = rs->prog[j].end) {
			tmp.n = 0;
			c = anchor(rs, j, &tmp, oom);
			if (c < bc) {
				leafvec t = best;

				bc = c;
				best = tmp;
				tmp = t;
			}
		}
		for (k = 0; !isinf(bc) && k < best.n; k++)
			*oom |= lv_push(out, best.v[k]) != 0;
		relay__free(best.v);
		relay__free(tmp.v);
		return bc;
	}
}

/* Sort a rule's anchor leaves and drop repeats ([a, a] names a twice). */
static void lv_sort_unique(leafvec *lv)
{
	uint32_t i, j, n = 0;

	for (i = 1; i < lv->n; i++) {
		uint32_t x = lv->v[i];

		for (j = i; j > 0 && lv->v[j - 1] > x; j--)
			lv->v[j] = lv->v[j - 1];
		lv->v[j] = x;
	}
	for (i = 0; i < lv->n; i++)
		if (!n || lv->v[n - 1] != lv->v[i])
			lv->v[n++] = lv->v[i];
	lv->n = n;
}

int relay__build_anchors(relay_ruleset *rs)
{
	leafvec *per = NULL, lv = { 0 };
	uint32_t r, k, *cursor = NULL;
	int oom = 0, rc = RELAY_ENOMEM;

	per = relay__calloc(rs->npats ? rs->npats : 1, sizeof(*per));
	rs->anchor_off = relay__calloc((size_t)rs->nleaves + 1,
				       sizeof(uint32_t));
	rs->always = relay__calloc(rs->npats ? rs->npats : 1,
				   sizeof(uint32_t));
	cursor = relay__calloc((size_t)rs->nleaves + 1, sizeof(uint32_t));
	if (!per || !rs->anchor_off || !rs->always || !cursor)
		goto done;
	for (r = 0; r < rs->npats; r++) {
		lv.n = 0;
		if (isinf(anchor(rs, rs->rules[r].prog_start, &lv, &oom))) {
			rs->always[rs->nalways++] = r;
			continue;
		}
		lv_sort_unique(&lv);
		per[r] = lv;
		lv = (leafvec){ 0 };
	}
	if (oom)
		goto done;
	/* CSR lists leaf -> rules, each ascending by rule id */
	for (r = 0; r < rs->npats; r++)
		for (k = 0; k < per[r].n; k++)
			rs->anchor_off[per[r].v[k] + 1]++;
	for (k = 0; k < rs->nleaves; k++)
		rs->anchor_off[k + 1] += rs->anchor_off[k];
	memcpy(cursor, rs->anchor_off, (size_t)rs->nleaves * sizeof(*cursor));
	k = rs->anchor_off[rs->nleaves];
	rs->anchor_rules = relay__calloc(k ? k : 1, sizeof(uint32_t));
	if (!rs->anchor_rules)
		goto done;
	for (r = 0; r < rs->npats; r++)
		for (k = 0; k < per[r].n; k++)
			rs->anchor_rules[cursor[per[r].v[k]]++] = r;
	rc = 0;
done:
	if (per)
		for (r = 0; r < rs->npats; r++)
			relay__free(per[r].v);
	relay__free(per);
	relay__free(lv.v);
	relay__free(cursor);
	return rc;
}

/*
 * Rules in the order their anchors make them candidates (the first anchor
 * leaf that names each, then the rules without an anchor), so that the
 * candidates of one fired leaf are neighbours in rules[] and in the
 * matcher's rule_stamp, as their flat clauses already are in cnf.
 */
int relay__order_rules(relay_ruleset *rs)
{
	uint32_t n = rs->npats, r, k, next = 0;
	uint32_t *slot = relay__malloc((n ? n : 1) * sizeof(uint32_t));
	relay__rule *to = relay__calloc(n ? n : 1, sizeof(*to));

	if (!slot || !to) {
		relay__free(slot);
		relay__free(to);
		return RELAY_ENOMEM;
	}
	memset(slot, 0xff, n * sizeof(uint32_t));
	for (k = 0; k < rs->anchor_off[rs->nleaves]; k++) {
		r = rs->anchor_rules[k];
		if (slot[r] == RELAY__NONE)
			slot[r] = next++;
	}
	for (k = 0; k < rs->nalways; k++)
		slot[rs->always[k]] = next++;
	for (r = 0; r < n; r++) {
		to[slot[r]] = rs->rules[r];
		to[slot[r]].id = r;
	}
	for (k = 0; k < rs->anchor_off[rs->nleaves]; k++)
		rs->anchor_rules[k] = slot[rs->anchor_rules[k]];
	for (k = 0; k < rs->nalways; k++)
		rs->always[k] = slot[rs->always[k]];
	relay__free(rs->rules);
	rs->rules = to;
	relay__free(slot);
	return 0;
}
