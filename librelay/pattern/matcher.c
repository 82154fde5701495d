/*
 * matcher.c - per-thread match state, leaf evaluation, rule evaluation,
 * and the decoded-event entry point relay_matcher_match_json().
 *
 * A match is three steps: relay__match_begin() starts a new epoch; the
 * event is walked along the trie (from raw bytes in scan.c, or from a
 * json_t here), firing leaves and collecting candidate rules from the
 * anchor lists of fired leaves; relay__match_end() evaluates the
 * candidates in ascending id order and writes the result ids. Nothing is
 * allocated or cleared per event: stamps compare against the epoch.
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
	m->leaf_stamp = relay__calloc(nl, sizeof(uint32_t));
	m->rule_stamp = relay__calloc(nr, sizeof(uint32_t));
	m->node_seen = relay__calloc(nn, sizeof(uint32_t));
	m->cand = relay__calloc(nr, sizeof(uint32_t));
	m->ids = relay__calloc(nr, sizeof(uint32_t));
	if (!m->leaf_stamp || !m->rule_stamp || !m->node_seen || !m->cand ||
	    !m->ids || relay__buf_reserve(&m->scratch, 1024)) {
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
		m->epoch = 1;
	}
	m->ncand = 0;
	m->now = now;
	m->errstr[0] = '\0';
}

void relay__fire(relay_matcher *m, uint32_t leaf)
{
	const relay_ruleset *rs = m->rs;
	uint32_t k, r, epoch = m->epoch;

	if (m->leaf_stamp[leaf] == epoch)
		return;
	m->leaf_stamp[leaf] = epoch;
	for (k = rs->anchor_off[leaf]; k < rs->anchor_off[leaf + 1]; k++) {
		r = rs->anchor_rules[k];
		if (m->rule_stamp[r] != epoch) {
			m->rule_stamp[r] = epoch;
			m->cand[m->ncand++] = r;
		}
	}
}

void relay__eval_string(relay_matcher *m, const relay__tnode *n,
			const char *s, size_t len)
{
	relay__instant t;
	uint32_t i, l;

	if (n->eq_str.n) {
		l = relay__smap_get(&n->eq_str, s, len);
		if (l != RELAY__NONE)
			relay__fire(m, l);
	}
	for (i = 0; i < n->nprefix; i++)
		if (len >= n->prefix[i].len &&
		    relay__bytes_eq(s, n->prefix[i].s, n->prefix[i].len))
			relay__fire(m, n->prefix[i].val);
	for (i = 0; i < n->nsuffix; i++)
		if (len >= n->suffix[i].len &&
		    relay__bytes_eq(s + len - n->suffix[i].len,
				    n->suffix[i].s, n->suffix[i].len))
			relay__fire(m, n->suffix[i].val);
	if (n->ncmp_time && relay__rfc3339_parse(s, len, &t) == 0)
		for (i = 0; i < n->ncmp_time; i++)
			if (relay__instant_cmp(&t, m->now +
					       n->cmp_time[i].offset_ms,
					       n->cmp_time[i].op))
				relay__fire(m, n->cmp_time[i].leaf);
}

void relay__eval_number(relay_matcher *m, const relay__tnode *n, double v)
{
	uint32_t i;

	for (i = 0; i < n->neq_num; i++)
		if (v == n->eq_num[i].num)
			relay__fire(m, n->eq_num[i].leaf);
	for (i = 0; i < n->ncmp_num; i++)
		if (relay__num_cmp(v, n->cmp_num[i].num, n->cmp_num[i].op))
			relay__fire(m, n->cmp_num[i].leaf);
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

	for (i = 0; i < n->nleaves; i++)
		m->leaf_stamp[n->leaves[i]] = 0;
	for (i = 0; i < n->kids.n; i++) {
		m->node_seen[n->kids.ents[i].val] = 0;
		relay__node_reset(m, n->kids.ents[i].val);
	}
}

static bool eval(const relay__expr *prog, uint32_t i, const uint32_t *stamp,
		 uint32_t epoch)
{
	const relay__expr *e = &prog[i];
	uint32_t j;

	switch (e->op) {
	case RELAY__X_LEAF:
		return stamp[e->arg] == epoch;
	case RELAY__X_NLEAF:
		return stamp[e->arg] != epoch;
	case RELAY__X_AND:
		for (j = i + 1; j < e->end; j = prog[j].end)
			if (!eval(prog, j, stamp, epoch))
				return false;
		return true;
	default:
		for (j = i + 1; j < e->end; j = prog[j].end)
			if (eval(prog, j, stamp, epoch))
				return true;
		return false;
	}
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
	for (i = 0; i < m->ncand; i++) {
		uint32_t off;
		bool ok;

		r = m->cand[i];
		off = rs->cnf_start[r];
		if (off != RELAY__NONE)
			ok = relay__eval_cnf(rs->cnf + off, m->leaf_stamp,
					     m->epoch);
		else
			ok = eval(rs->prog, rs->prog_start[r], m->leaf_stamp,
				  m->epoch);
		if (ok)
			m->ids[n++] = r;
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
	switch (json_typeof(v)) {
	case JSON_STRING:
		if (n->want_str)
			relay__eval_string(m, n, json_string_value(v),
					   json_string_length(v));
		break;
	case JSON_INTEGER:
	case JSON_REAL:
		if (n->want_num)
			relay__eval_number(m, n, json_number_value(v));
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
