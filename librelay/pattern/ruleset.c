/*
 * ruleset.c - FIRST CUT: a ruleset is a list of pattern copies; raw JSON is
 * decoded with jansson. Replaced by the indexed matcher.
 */
#include <stdio.h>
#include <string.h>

#include "pattern_int.h"

struct relay_ruleset {
	relay_pattern **pats;
	size_t n, cap;
	bool built;
};

struct relay_matcher {
	const relay_ruleset *rs;
	uint32_t *ids;
	char errstr[200];
};

int relay_ruleset_new(relay_ruleset **out)
{
	*out = relay__calloc(1, sizeof(**out));
	return *out ? 0 : RELAY_ENOMEM;
}

int relay_ruleset_add(relay_ruleset *rs, const relay_pattern *p, uint32_t *id)
{
	relay_pattern *c;

	if (rs->built || !p)
		return RELAY_EINVAL;
	if (rs->n == rs->cap) {
		size_t cap = rs->cap ? rs->cap * 2 : 16;
		relay_pattern **np = relay__realloc(rs->pats, cap * sizeof(*np));

		if (!np)
			return RELAY_ENOMEM;
		rs->pats = np;
		rs->cap = cap;
	}
	c = relay__calloc(1, sizeof(*c));
	if (!c)
		return RELAY_ENOMEM;
	if (relay__pat_map_copy(&c->root, &p->root)) {
		relay_pattern_free(c);
		return RELAY_ENOMEM;
	}
	if (id)
		*id = (uint32_t)rs->n;
	rs->pats[rs->n++] = c;
	return 0;
}

int relay_ruleset_build(relay_ruleset *rs)
{
	rs->built = true;
	return 0;
}

size_t relay_ruleset_count(const relay_ruleset *rs)
{
	return rs->n;
}

void relay_ruleset_free(relay_ruleset *rs)
{
	size_t i;

	if (!rs)
		return;
	for (i = 0; i < rs->n; i++)
		relay_pattern_free(rs->pats[i]);
	relay__free(rs->pats);
	relay__free(rs);
}

int relay_matcher_new(relay_matcher **out, const relay_ruleset *rs)
{
	relay_matcher *m;

	if (!rs->built)
		return RELAY_EINVAL;
	m = relay__calloc(1, sizeof(*m));
	if (!m)
		return RELAY_ENOMEM;
	m->rs = rs;
	m->ids = relay__calloc(rs->n + 1, sizeof(*m->ids));
	if (!m->ids) {
		relay__free(m);
		return RELAY_ENOMEM;
	}
	*out = m;
	return 0;
}

void relay_matcher_free(relay_matcher *m)
{
	if (!m)
		return;
	relay__free(m->ids);
	relay__free(m);
}

int relay_matcher_match_json(relay_matcher *m, const json_t *event,
			     relay_wall_ms now, const uint32_t **ids,
			     size_t *count)
{
	size_t i, n = 0;

	*ids = m->ids;
	*count = 0;
	if (!json_is_object(event))
		return RELAY_ETYPE;
	for (i = 0; i < m->rs->n; i++)
		if (relay_pattern_match(m->rs->pats[i], event, now))
			m->ids[n++] = (uint32_t)i;
	*count = n;
	return 0;
}

int relay_matcher_match(relay_matcher *m, const char *json, size_t len,
			relay_wall_ms now, const uint32_t **ids, size_t *count)
{
	json_error_t jerr;
	json_t *ev;
	int rc;

	*ids = m->ids;
	*count = 0;
	ev = json_loadb(json, len, JSON_DECODE_ANY | JSON_ALLOW_NUL, &jerr);
	if (!ev) {
		snprintf(m->errstr, sizeof(m->errstr), "%s at offset %d",
			 jerr.text, jerr.position);
		return RELAY_EPARSE;
	}
	m->errstr[0] = '\0';
	rc = relay_matcher_match_json(m, ev, now, ids, count);
	json_decref(ev);
	return rc;
}

const char *relay_matcher_errstr(const relay_matcher *m)
{
	return m->errstr;
}
