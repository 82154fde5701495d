/*
 * match.c - relay_pattern_match(): the reference evaluator on json_t.
 *
 * This is the plain tree walk that states the semantics; the ruleset's
 * raw matcher must agree with it on every input (tests/pattern compares
 * them). Arrays are values like any other: no element-wise matching.
 */
#include <string.h>

#include "pattern_int.h"

static bool str_eq(const json_t *v, const relay__pat_alt *a)
{
	return json_string_length(v) == a->len &&
	       memcmp(json_string_value(v), a->str, a->len) == 0;
}

bool relay__pat_alt_match(const relay__pat_alt *a, const json_t *v,
			  relay_wall_ms now)
{
	relay__instant t;
	size_t n;

	if (a->kind == RELAY__PAT_EXISTS)
		return (v != NULL) == (a->boolean != 0);
	if (a->kind == RELAY__PAT_MAP)
		return relay__pat_map_match(a->map, v, now);
	if (!v)
		return false;
	switch (a->kind) {
	case RELAY__PAT_EQ_STR:
		return json_is_string(v) && str_eq(v, a);
	case RELAY__PAT_EQ_NUM:
		return json_is_number(v) && json_number_value(v) == a->num;
	case RELAY__PAT_EQ_BOOL:
		return json_is_boolean(v) && json_is_true(v) == a->boolean;
	case RELAY__PAT_EQ_NULL:
		return json_is_null(v);
	case RELAY__PAT_PREFIX:
		return json_is_string(v) && json_string_length(v) >= a->len &&
		       memcmp(json_string_value(v), a->str, a->len) == 0;
	case RELAY__PAT_SUFFIX:
		if (!json_is_string(v))
			return false;
		n = json_string_length(v);
		return n >= a->len &&
		       memcmp(json_string_value(v) + n - a->len, a->str,
			      a->len) == 0;
	case RELAY__PAT_CMP_NUM:
		return json_is_number(v) &&
		       relay__num_cmp(json_number_value(v), a->num, a->op);
	case RELAY__PAT_CMP_TIME:
		return json_is_string(v) &&
		       relay__rfc3339_parse(json_string_value(v),
					    json_string_length(v), &t) == 0 &&
		       relay__instant_cmp(&t, now + a->offset_ms, a->op);
	case RELAY__PAT_EIC:
		return json_is_string(v) && json_string_length(v) == a->len &&
		       relay__ieq(json_string_value(v), a->str, a->len);
	case RELAY__PAT_IPREFIX:
		return json_is_string(v) && json_string_length(v) >= a->len &&
		       relay__ieq(json_string_value(v), a->str, a->len);
	case RELAY__PAT_ISUFFIX:
		if (!json_is_string(v))
			return false;
		n = json_string_length(v);
		return n >= a->len &&
		       relay__ieq(json_string_value(v) + n - a->len, a->str,
				  a->len);
	case RELAY__PAT_WILDCARD:
		return json_is_string(v) &&
		       relay__wild_match(a->str, a->len, json_string_value(v),
					 json_string_length(v), NULL);
	case RELAY__PAT_CIDR: {
		unsigned char ip[16];
		int ver;

		if (!json_is_string(v))
			return false;
		ver = relay__ip_parse(json_string_value(v),
				      json_string_length(v), ip);
		return ver && relay__cidr_has(a, ver, ip);
	}
	case RELAY__PAT_RANGE:
		return json_is_number(v) &&
		       relay__range_has(a, json_number_value(v));
	case RELAY__PAT_NOT:
		if (json_is_array(v) || json_is_object(v))
			return false;
		for (n = 0; n < a->nsub; n++)
			if (relay__pat_alt_match(&a->sub[n], v, now))
				return false;
		return true;
	default:
		return false;
	}
}

bool relay__pat_map_match(const relay__pat_map *m, const json_t *obj,
			  relay_wall_ms now)
{
	size_t i, j;

	if (obj && !json_is_object(obj))
		obj = NULL;
	for (i = 0; i < m->nfields; i++) {
		const relay__pat_field *f = &m->fields[i];
		const json_t *v = NULL;
		bool any = false;

		/* by length: a key built with json_object_setn() may hold
		 * NUL (jansson's parser never makes one) */
		if (obj)
			v = json_object_getn(obj, f->name, f->name_len);
		for (j = 0; j < f->nalts && !any; j++)
			any = relay__pat_alt_match(&f->alts[j], v, now);
		if (!any)
			return false;
	}
	for (i = 0; i < m->nors; i++)
		if (relay__pat_map_match(&m->ors[i], obj, now))
			return true;
	return m->nors == 0;
}

int relay_pattern_match(const relay_pattern *p, const json_t *event,
			relay_wall_ms now)
{
	if (!p || !event || !json_is_object(event))
		return 0;
	return relay__pat_map_match(&p->root, event, now) ? 1 : 0;
}
