/*
 * matcher.c - per-thread match state, leaf evaluation, rule evaluation,
 * and the decoded-event entry point relay_matcher_match_json().
 *
 * A match is three steps: relay__match_begin() starts a new epoch; the
 * event is walked along the trie (from raw bytes in scan.c, or from a
 * json_t here), firing leaves and collecting candidate rules from the
 * anchor lists of fired leaves; relay__match_end() drops the candidates
 * whose first literals fail, evaluates the rest and writes the ids of
 * those that match, ascending. Nothing is allocated or cleared per event:
 * stamps compare against the epoch.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ruleset_int.h"

int relay_matcher_new(relay_matcher **out, const relay_ruleset *rs)
{
	relay_matcher *m;
	size_t nr, nl, nn;

	if (!rs || !rs->built)
		return RELAY_EINVAL;
	m = relay__calloc(1, sizeof(*m));
	if (!m)
		return RELAY_ENOMEM;
	nr = rs->npats ? rs->npats : 1;
	nl = rs->nleaves ? rs->nleaves : 1;
	nn = rs->nnodes ? rs->nnodes : 1;
	m->rs = rs;
	/* + RELAY__LIT_TRUE's leaf, never stamped */
	m->leaf_stamp = relay__calloc(nl + 1, sizeof(uint32_t));
	m->rule_stamp = relay__calloc(nr, sizeof(uint32_t));
	m->node_seen = relay__calloc(nn, sizeof(uint32_t));
	m->kid_next = relay__malloc((rs->nkidslots ? rs->nkidslots : 1) *
				    sizeof(uint32_t));
	if (m->kid_next)
		memset(m->kid_next, 0xff, rs->nkidslots * sizeof(uint32_t));
	m->node_from = relay__calloc(nn, sizeof(uint32_t));
	m->node_to = relay__calloc(nn, sizeof(uint32_t));
	m->num_stamp = relay__calloc(nn, sizeof(uint32_t));
	m->time_stamp = relay__calloc(nn, sizeof(uint32_t));
	m->val_num = relay__calloc(nn, sizeof(double));
	m->val_t = relay__calloc(nn, sizeof(relay__instant));
	m->str_stamp = relay__calloc(nn, sizeof(uint32_t));
	m->str_raw = relay__calloc(nn, sizeof(*m->str_raw));
	m->str_len = relay__calloc(nn, sizeof(size_t));
	m->ip_done = relay__calloc(nn, sizeof(uint32_t));
	m->ip_ver = relay__calloc(nn, 1);
	m->ip = relay__calloc(nn, sizeof(*m->ip));
	m->lazy_done = relay__calloc(nl, sizeof(uint32_t));
	m->time_done = relay__calloc(nn, sizeof(uint32_t));
	m->time_ok = relay__calloc(nn, 1);
	m->cand = relay__calloc(nr + 1, sizeof(uint32_t)); /* relay__fire */
	m->ids = relay__calloc(nr, sizeof(uint32_t));
	/* Room for every leaf and node once: a repeated key needs more. */
	m->cap_log = (uint32_t)(nl + nn + 16);
	m->log = relay__malloc(m->cap_log * sizeof(uint32_t));
	if (!m->leaf_stamp || !m->rule_stamp || !m->node_seen ||
	    !m->kid_next || !m->cand ||
	    !m->ids || !m->node_from || !m->node_to || !m->log ||
	    !m->num_stamp || !m->time_stamp || !m->val_num || !m->val_t ||
	    !m->str_stamp || !m->str_raw || !m->str_len || !m->ip_done ||
	    !m->ip_ver || !m->ip || !m->lazy_done || !m->time_done ||
	    !m->time_ok ||
	    relay__buf_reserve(&m->scratch, 1024)) {
		relay_matcher_free(m);
		return RELAY_ENOMEM;
	}
	*out = m;
	return 0;
}

void relay_matcher_free(relay_matcher *m)
{
	if (!m)
		return;
	relay__free(m->leaf_stamp);
	relay__free(m->rule_stamp);
	relay__free(m->node_seen);
	relay__free(m->kid_next);
	relay__free(m->node_from);
	relay__free(m->node_to);
	relay__free(m->log);
	relay__free(m->num_stamp);
	relay__free(m->time_stamp);
	relay__free(m->val_num);
	relay__free(m->val_t);
	relay__free(m->str_stamp);
	relay__free(m->str_raw);
	relay__free(m->str_len);
	relay__free(m->ip_done);
	relay__free(m->ip_ver);
	relay__free(m->ip);
	relay__free(m->lazy_done);
	relay__free(m->time_done);
	relay__free(m->time_ok);
	relay__free(m->cand);
	relay__free(m->ids);
	relay__buf_free(&m->scratch);
	relay__free(m);
}

const char *relay_matcher_errstr(const relay_matcher *m)
{
	return m->errstr;
}

void relay__match_begin(relay_matcher *m, relay_wall_ms now)
{
	const relay_ruleset *rs = m->rs;

	if (++m->epoch == 0) {
		/* after 2^32 events: forget every stamp once */
		memset(m->leaf_stamp, 0, rs->nleaves * sizeof(uint32_t));
		memset(m->rule_stamp, 0, rs->npats * sizeof(uint32_t));
		memset(m->node_seen, 0, rs->nnodes * sizeof(uint32_t));
		memset(m->num_stamp, 0, rs->nnodes * sizeof(uint32_t));
		memset(m->time_stamp, 0, rs->nnodes * sizeof(uint32_t));
		memset(m->time_done, 0, rs->nnodes * sizeof(uint32_t));
		memset(m->str_stamp, 0, rs->nnodes * sizeof(uint32_t));
		memset(m->ip_done, 0, rs->nnodes * sizeof(uint32_t));
		memset(m->lazy_done, 0, rs->nleaves * sizeof(uint32_t));
		m->epoch = 1;
	}
	m->ncand = 0;
	m->work = 0;
	m->nlog = 0;
	m->logging = false;
	m->log_lost = false;
	m->now = now;
	m->errstr[0] = '\0';
}

/* relay__mlog() when the log is full or lost: grow it; on failure to
 * grow, stop logging for this event (repeated keys then fall back to
 * relay__node_reset()). */
void relay__mlog_slow(relay_matcher *m, uint32_t v)
{
	if (m->log_lost)
		return;
	if (m->nlog == m->cap_log) {
		uint32_t cap = m->cap_log * 2, *p;

		if (cap < m->cap_log ||
		    !(p = relay__realloc(m->log, (size_t)cap * sizeof(*p)))) {
			m->log_lost = true;
			return;
		}
		m->log = p;
		m->cap_log = cap;
	}
	m->log[m->nlog++] = v;
}

/* What relay__fire does for a new leaf beyond its anchors, out of line:
 * the log entry (while logging) and the leaves fired with it. */
RELAY__COLD static void fire_rest(relay_matcher *m, uint32_t leaf)
{
	const relay_ruleset *rs = m->rs;
	uint32_t k;

	relay__mlog(m, leaf);
	if (rs->also_off)
		for (k = rs->also_off[leaf]; k < rs->also_off[leaf + 1]; k++)
			relay__fire(m, rs->also[k]);
}

/*
 * With only a tail call off the usual path (no log, no also lists),
 * relay__fire saves three callee-saved registers where it saved six: it
 * is called about a dozen times per event, and the saving and restoring
 * was a quarter of its instructions.
 */
void relay__fire(relay_matcher *m, uint32_t leaf)
{
	const relay_ruleset *rs = m->rs;
	uint32_t k, r, n, end, epoch = m->epoch;
	uint32_t *cand, *stamp;
	const uint32_t *rules;

	if (m->leaf_stamp[leaf] == epoch)
		return;
	m->leaf_stamp[leaf] = epoch;
	/* without a branch on whether the rule is new: that is as likely
	 * as not, and a mispredicted branch costs more than the stores
	 * (cand has one slot more than there are rules, for the last).
	 * Everything the loop reads is in locals: the build does not
	 * assume strict aliasing, so every store would reload them. */
	cand = m->cand;
	stamp = m->rule_stamp;
	rules = rs->anchor_rules;
	end = rs->anchor_off[leaf + 1];
	for (k = rs->anchor_off[leaf], n = m->ncand; k < end; k++) {
		r = rules[k];
		cand[n] = r;
		n += stamp[r] != epoch;
		stamp[r] = epoch;
	}
	m->ncand = n;
	if (m->logging || rs->also_off)
		fire_rest(m, leaf);
}

/* The address in the string [s, len) at @node, parsed once per event:
 * 4 or 6 (its bytes in m->ip[node]), or 0 when it is none. */
static int node_ip(relay_matcher *m, uint32_t node, const char *s,
		   size_t len)
{
	if (m->ip_done[node] != m->epoch) {
		m->ip_done[node] = m->epoch;
		m->ip_ver[node] = (uint8_t)relay__ip_parse(s, len, m->ip[node]);
	}
	return m->ip_ver[node];
}

static inline uint32_t ip4_of(const unsigned char *ip)
{
	return (uint32_t)ip[0] << 24 | (uint32_t)ip[1] << 16 |
	       (uint32_t)ip[2] << 8 | ip[3];
}

/* Whether wildcard leaf @x matches [s, len): its literal head and tail
 * as bytes, then the middle, unless it is one star. */
static inline bool wild_holds(const relay__xleaf *x, const char *s,
			      size_t len, uint64_t *work)
{
	const relay__pat_alt *a = x->a;

	return len >= (size_t)x->pre + x->suf &&
	       relay__bytes_eq(s, a->str, x->pre) &&
	       relay__bytes_eq(s + len - x->suf, a->str + a->len - x->suf,
			       x->suf) &&
	       (x->mid_any ||
		(x->mid_stars ? relay__wild_stars : relay__wild_match)(
			a->str + x->pre, a->len - x->pre - x->suf,
			s + x->pre, len - x->pre - x->suf, work));
}

bool relay__xleaf_holds(relay_matcher *m, uint32_t node,
			const relay__xleaf *x, const char *s, size_t len)
{
	int ver;

	m->work++;
	switch (x->kind) {
	case RELAY__PAT_EIC:
		return len == x->len && relay__ieq(s, x->s, len);
	case RELAY__PAT_IPREFIX:
		return len >= x->len && relay__ieq(s, x->s, x->len);
	case RELAY__PAT_ISUFFIX:
		return len >= x->len &&
		       relay__ieq(s + len - x->len, x->s, x->len);
	case RELAY__PAT_CIDR:
		ver = node_ip(m, node, s, len);
		if (ver != x->a->ipver)
			return false;
		if (ver == 4)
			return (ip4_of(m->ip[node]) & x->v4mask) == x->v4net;
		return relay__cidr_has(x->a, ver, m->ip[node]);
	default:
		return wild_holds(x, s, len, &m->work);
	}
}

/* The operators that fire while scanning, tested one by one, a loop per
 * kind: CIDRs (the address is parsed once per value), wildcards,
 * ignore-case affixes. */
static void eval_xstr(relay_matcher *m, const relay__tnode *n,
		      uint32_t node, const char *s, size_t len)
{
	const relay__xleaf *x = n->xstr, *end;
	int ver = 0;
	uint32_t ip4;

	if (n->want_ip)
		ver = node_ip(m, node, s, len);
	if (ver == 4) {
		ip4 = ip4_of(m->ip[node]);
		for (end = n->xstr + n->xcut[0]; x < end; x++)
			if ((ip4 & x->v4mask) == x->v4net)
				relay__fire(m, x->leaf);
		m->work += n->xcut[0];
	}
	if (ver == 6) {
		for (x = n->xstr + n->xcut[0], end = n->xstr + n->xcut[1];
		     x < end; x++)
			if (relay__cidr_has(x->a, ver, m->ip[node]))
				relay__fire(m, x->leaf);
		m->work += n->xcut[1] - n->xcut[0];
	}
	for (x = n->xstr + n->xcut[1], end = n->xstr + n->xcut[2]; x < end;
	     x++) {
		m->work++;
		if (wild_holds(x, s, len, &m->work))
			relay__fire(m, x->leaf);
	}
	for (end = n->xstr + n->xcut[3]; x < end; x++)
		if (len >= x->a->len && relay__ieq(s, x->a->str, x->a->len))
			relay__fire(m, x->leaf);
	for (end = n->xstr + n->nxstr; x < end; x++)
		if (len >= x->a->len &&
		    relay__ieq(s + len - x->a->len, x->a->str, x->a->len))
			relay__fire(m, x->leaf);
	m->work += n->nxstr - n->xcut[2];
}

/*
 * Fire the prefixes (or suffixes) of @s found in @map, when there are
 * more than 8: they are looked up once per distinct length, hashing @s
 * incrementally, so the cost is linear in @s whatever their number.
 */
static void eval_affix(relay_matcher *m, const relay__smap *map,
		       const uint32_t *lens, uint32_t nlens, const char *s,
		       size_t len, int suffix)
{
	uint64_t h = RELAY__AFFIX_SEED;
	size_t at = 0, l;
	uint32_t i, leaf;

	for (i = 0; i < nlens && lens[i] <= len; i++) {
		l = lens[i];
		for (; at < l; at++)
			h = relay__affix_step(h, (unsigned char)
					      s[suffix ? len - 1 - at : at]);
		leaf = relay__smap_find_h(map, suffix ? s + len - l : s, l,
					  relay__affix_fin(h));
		if (leaf != RELAY__NONE)
			relay__fire(m, leaf);
	}
}

void relay__eval_string(relay_matcher *m, const relay__tnode *n,
			uint32_t node, const char *s, size_t len)
{
	const relay__sent *e;
	relay__instant t;
	uint32_t i, l;

	if (n->eq_str.n)
		relay__eval_eq_str(m, n, s, len);
	/* a few prefixes or suffixes (the usual case): compared in place */
	if (n->prefix.n > 8) {
		eval_affix(m, &n->prefix, n->prefix_lens, n->nprefix_lens,
			   s, len, 0);
	} else {
		for (i = 0, e = n->prefix.ents; i < n->prefix.n; i++, e++)
			if (len >= e->len && relay__sent_at(e, s))
				relay__fire(m, e->val);
	}
	if (n->suffix.n > 8) {
		eval_affix(m, &n->suffix, n->suffix_lens, n->nsuffix_lens,
			   s, len, 1);
	} else {
		for (i = 0, e = n->suffix.ents; i < n->suffix.n; i++, e++)
			if (len >= e->len && relay__sent_at(e, s + len - e->len))
				relay__fire(m, e->val);
	}
	if (n->eic.n) {
		l = relay__smap_find_ci(&n->eic, s, len);
		if (l != RELAY__NONE)
			relay__fire(m, l);
	}
	if (!n->nxstr && !n->keep_str && !n->ncmp_time)
		return;
	if (n->nxstr)
		eval_xstr(m, n, node, s, len);
	if (n->keep_str) {
		if (s != m->scratch.data) {
			/* @s outlives the scan: kept for the lazy leaves */
			m->str_stamp[node] = m->epoch;
			m->str_raw[node] = s;
			m->str_len[node] = len;
		} else {
			/* unescaped into the scratch buffer, which the next
			 * string reuses: the lazy operators are tested now */
			for (i = 0; i < n->nxlazy; i++)
				if (relay__xleaf_holds(m, node, &n->xlazy[i],
						       s, len))
					relay__fire(m, n->xlazy[i].leaf);
		}
	}
	if (!n->ncmp_time)
		return;
	if (!n->fire_time && s != m->scratch.data) {
		/* lazy thresholds only, and @s is kept (above): parsed if
		 * a rule needs it */
		m->time_stamp[node] = m->epoch;
		m->time_done[node] = 0;
		return;
	}
	if (relay__rfc3339_parse(s, len, &t) != 0)
		return;
	if (n->keep_time) {
		m->time_stamp[node] = m->time_done[node] = m->epoch;
		m->time_ok[node] = 1;
		m->val_t[node] = t;
	}
	if (n->fire_time)
		relay__eval_thr_time(m, n, &t);
}

const relay__instant *relay__lazy_time(relay_matcher *m, uint32_t node)
{
	if (m->time_done[node] != m->epoch) {
		m->time_done[node] = m->epoch;
		m->time_ok[node] = relay__rfc3339_parse(m->str_raw[node],
							m->str_len[node],
							&m->val_t[node]) == 0;
	}
	return m->time_ok[node] ? &m->val_t[node] : NULL;
}

void relay__eval_number(relay_matcher *m, const relay__tnode *n,
			uint32_t node, double v)
{
	uint32_t i;

	if (n->neq_num)
		relay__eval_eq_num(m, n, v);
	if (n->keep_num) {
		m->num_stamp[node] = m->epoch;
		m->val_num[node] = v;
	}
	if (n->fire_num)
		relay__eval_thr_num(m, n, v);
	for (i = 0; i < n->nxnum; i++)
		if (relay__range_has(n->xnum[i].a, v))
			relay__fire(m, n->xnum[i].leaf);
}

/* Forget the values kept at @node (a key occurred again). */
static void forget_values(relay_matcher *m, uint32_t node)
{
	m->num_stamp[node] = m->time_stamp[node] = 0;
	m->str_stamp[node] = m->ip_done[node] = 0;
}

/*
 * A key occurred again in the same object: JSON says nothing, jansson
 * keeps the last occurrence, and so do we. Everything the earlier value
 * fired at or below this node is forgotten. Rules it made candidates stay
 * candidates; evaluation reads the stamps, so they cannot match wrongly.
 */
void relay__node_reset(relay_matcher *m, uint32_t node)
{
	const relay__tnode *n = &m->rs->nodes[node];
	uint32_t i;

	forget_values(m, node);
	for (i = 0; i < n->nleaves; i++)
		m->leaf_stamp[n->leaves[i]] = 0;
	for (i = 0; i < n->kids.n; i++) {
		m->node_seen[n->kids.ents[i].val] = 0;
		relay__node_reset(m, n->kids.ents[i].val);
	}
}

/*
 * A key occurred again: forget what its previous value fired and which
 * nodes below it were visited, from the log (cost: what that value
 * logged, not the size of the trie below the key).
 */
void relay__node_forget(relay_matcher *m, uint32_t node)
{
	uint32_t k, v;

	forget_values(m, node);
	if (m->log_lost) {
		relay__node_reset(m, node);
		return;
	}
	for (k = m->node_from[node]; k < m->node_to[node]; k++) {
		v = m->log[k];
		if (v & RELAY__LOG_NODE) {
			v &= ~RELAY__LOG_NODE;
			m->node_seen[v] = 0;
			forget_values(m, v);
		} else {
			m->leaf_stamp[v] = 0;
		}
	}
}

/* Whether expression @i of @prog holds; with @m (late tests) each lazy
 * leaf is settled just before it is read (relay__eval_cnf likewise). */
static bool eval(const relay__expr *prog, uint32_t i, const uint32_t *stamp,
		 uint32_t epoch, relay_matcher *m)
{
	const relay__expr *e = &prog[i];
	uint32_t j;

	switch (e->op) {
	case RELAY__X_LEAF:
	case RELAY__X_NLEAF:
		if (m)
			relay__settle_leaf(m, e->arg);
		return (stamp[e->arg] == epoch) == (e->op == RELAY__X_LEAF);
	case RELAY__X_AND:
		for (j = i + 1; j < e->end; j = prog[j].end)
			if (!eval(prog, j, stamp, epoch, m))
				return false;
		return true;
	default:
		for (j = i + 1; j < e->end; j = prog[j].end)
			if (eval(prog, j, stamp, epoch, m))
				return true;
		return false;
	}
}

/* Whether every expression of [from, to) (siblings) holds (@m: eval). */
static bool eval_and(const relay__expr *prog, uint32_t from, uint32_t to,
		     const uint32_t *stamp, uint32_t epoch, relay_matcher *m)
{
	uint32_t j;

	for (j = from; j < to; j = prog[j].end)
		if (!eval(prog, j, stamp, epoch, m))
			return false;
	return true;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return (x > y) - (x < y);
}

static void sort_u32(uint32_t *v, uint32_t n)
{
	uint32_t i, j, x;

	if (n > 48) {
		qsort(v, n, sizeof(uint32_t), cmp_u32);
		return;
	}
	for (i = 1; i < n; i++) {
		x = v[i];
		for (j = i; j > 0 && v[j - 1] > x; j--)
			v[j] = v[j - 1];
		v[j] = x;
	}
}

/*
 * Candidates are evaluated in the order they were found: rules that share
 * an anchor leaf are found together and their flat programs are stored
 * together (ruleset.c lays them out by anchor), so evaluation walks
 * memory mostly forward. Only the matches, usually few, are sorted.
 */
/* Whether literal @lit (leaf << 1 | negated) holds: 0 or 1. */
static inline uint32_t lit_holds(const uint32_t *stamp, uint32_t epoch,
				 uint32_t lit)
{
	return (stamp[lit >> 1] == epoch) != (lit & 1);
}

size_t relay__match_end(relay_matcher *m)
{
	const relay_ruleset *rs = m->rs;
	uint32_t i, r, n = 0;

	for (i = 0; i < rs->nalways; i++) {
		r = rs->always[i];
		if (m->rule_stamp[r] != m->epoch) {
			m->rule_stamp[r] = m->epoch;
			m->cand[m->ncand++] = r;
		}
	}
	/* Drop the candidates whose first literal does not hold, without a
	 * branch per candidate: most fail there, and which ones is as good
	 * as random to the branch predictor. */
	{
		const uint32_t *stamp = m->leaf_stamp;
		uint32_t *cand = m->cand, ncand = m->ncand, e = m->epoch;

		for (i = 0, n = 0; i < ncand; i++) {
			const uint32_t *f;

			r = cand[i];
			f = rs->rules[r].first;
			cand[n] = r;
			n += (lit_holds(stamp, e, f[0]) |
			      lit_holds(stamp, e, f[1])) &
			     (lit_holds(stamp, e, f[2]) |
			      lit_holds(stamp, e, f[3]));
		}
		m->ncand = n;
	}
	for (i = 0, n = 0; i < m->ncand; i++) {
		const relay__rule *u;
		bool ok;

		r = m->cand[i];
		u = &rs->rules[r];
		if (u->cnf_start != RELAY__NONE) {
			/* the clauses without late tests, then the others,
			 * settling lazy leaves as they are read */
			ok = relay__eval_cnf(rs->cnf + u->cnf_start,
					     m->leaf_stamp, m->epoch, NULL) &&
			     relay__eval_cnf(rs->cnf + u->cnf_late,
					     m->leaf_stamp, m->epoch, m);
		} else if (u->prog_late == RELAY__NONE) {
			ok = eval(rs->prog, u->prog_start, m->leaf_stamp,
				  m->epoch, m);
		} else {
			/* the same split for the root AND of a program */
			ok = eval_and(rs->prog, u->prog_start + 1,
				      u->prog_late, m->leaf_stamp, m->epoch,
				      NULL) &&
			     eval_and(rs->prog, u->prog_late,
				      rs->prog[u->prog_start].end,
				      m->leaf_stamp, m->epoch, m);
		}
		if (ok)
			m->ids[n++] = u->id;
	}
	sort_u32(m->ids, n);
	return n;
}

static void visit_json(relay_matcher *m, const json_t *v, uint32_t node)
{
	const relay__tnode *n = &m->rs->nodes[node];
	const relay__sent *k;
	uint32_t i;
	json_t *c;

	if (n->present != RELAY__NONE)
		relay__fire(m, n->present);
	if (n->scalar != RELAY__NONE && !json_is_object(v) &&
	    !json_is_array(v))
		relay__fire(m, n->scalar);
	switch (json_typeof(v)) {
	case JSON_STRING:
		if (n->want_str)
			relay__eval_string(m, n, node, json_string_value(v),
					   json_string_length(v));
		break;
	case JSON_INTEGER:
	case JSON_REAL:
		if (n->want_num)
			relay__eval_number(m, n, node,
					   json_number_value(v));
		break;
	case JSON_TRUE:
		if (n->eq_true != RELAY__NONE)
			relay__fire(m, n->eq_true);
		break;
	case JSON_FALSE:
		if (n->eq_false != RELAY__NONE)
			relay__fire(m, n->eq_false);
		break;
	case JSON_NULL:
		if (n->eq_null != RELAY__NONE)
			relay__fire(m, n->eq_null);
		break;
	case JSON_OBJECT:
		for (i = 0; i < n->kids.n; i++) {
			k = &n->kids.ents[i];
			c = json_object_getn(v, k->s, k->len);
			if (c)
				visit_json(m, c, k->val);
		}
		break;
	default:
		break;
	}
}

int relay_matcher_match_json(relay_matcher *m, const json_t *event,
			     relay_wall_ms now, const uint32_t **ids,
			     size_t *count)
{
	*ids = m->ids;
	*count = 0;
	if (!json_is_object(event)) {
		snprintf(m->errstr, sizeof(m->errstr), "not a JSON object");
		return RELAY_ETYPE;
	}
	relay__match_begin(m, now);
	visit_json(m, event, 0);
	*count = relay__match_end(m);
	return 0;
}

int relay_matcher_match(relay_matcher *m, const char *json, size_t len,
			relay_wall_ms now, const uint32_t **ids, size_t *count)
{
	int rc;

	*ids = m->ids;
	*count = 0;
	relay__match_begin(m, now);
	rc = relay__scan_event(m, json, len);
	if (rc)
		return rc;
	*count = relay__match_end(m);
	return 0;
}
