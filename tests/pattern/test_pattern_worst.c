/*
 * test_pattern_worst.c - adversarial sizes for the ruleset (issue 14,
 * item 12): many prefix/suffix alternatives on one field build in linear
 * time, and an event repeating the matched key thousands of times is
 * matched in time linear in its size (not repeats x alternatives). Also
 * checks that the hashed prefix/suffix lookup (used past 8 alternatives)
 * agrees with the reference matcher, duplicates included.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pattern_int.h"
#include "relaytest.h"

#define NOW 1767268800000LL

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* raw, json_t and per-pattern reference agree on @ev. */
static void agree(relay_matcher *m, relay_pattern **p, size_t np,
		  const char *ev)
{
	json_t *j = json_loads(ev, 0, NULL);
	const uint32_t *ids;
	uint32_t raw[16];
	size_t n, n2, k;

	RT_ASSERT(j);
	RT_EQ_INT(relay_matcher_match(m, ev, strlen(ev), NOW, &ids, &n), 0);
	memcpy(raw, ids, n * sizeof(*ids));
	RT_EQ_INT(relay_matcher_match_json(m, j, NOW, &ids, &n2), 0);
	if (n != n2 || memcmp(raw, ids, n * sizeof(*ids)) != 0)
		RT_FAILF("%s: raw and json_t matchers disagree", ev);
	for (k = 0, n2 = 0; k < np; k++) {
		int want = relay_pattern_match(p[k], j, NOW);
		int got = n2 < n && raw[n2] == k;

		n2 += (size_t)got;
		if (want != got)
			RT_FAILF("%s: rule %zu raw %d, reference %d", ev, k,
				 got, want);
	}
	json_decref(j);
}

static void test_pattern__many_affixes_agree(void)
{
	static const char *pats[] = {
		"{\"k\": [{\"prefix\": \"\"}, {\"prefix\": \"a\"}, "
		"{\"prefix\": \"ab\"}, {\"prefix\": \"abc\"}, "
		"{\"prefix\": \"abd\"}, {\"prefix\": \"b\"}, "
		"{\"prefix\": \"bbbbbbbbbbbbbbbbbbbbb\"}, {\"prefix\": \"x\"}, "
		"{\"prefix\": \"xy\"}, {\"prefix\": \"q\"}, "
		"{\"prefix\": \"\\u00e9t\"}]}",
		"{\"k\": [{\"prefix\": \"abc\"}, {\"prefix\": \"zz\"}]}",
		"{\"k\": [{\"suffix\": \"\"}, {\"suffix\": \"c\"}, "
		"{\"suffix\": \"bc\"}, {\"suffix\": \"abc\"}, "
		"{\"suffix\": \"dbc\"}, {\"suffix\": \"z\"}, "
		"{\"suffix\": \"zzzzzzzzzzzzzzzzzzzzzzz\"}, {\"suffix\": \"y\"}, "
		"{\"suffix\": \"xy\"}, {\"suffix\": \"q\"}]}",
		"{\"k\": [{\"suffix\": \"bc\"}], \"o\": {\"k\": "
		"[{\"prefix\": \"a\"}, {\"prefix\": \"b\"}, {\"prefix\": \"c\"},"
		" {\"prefix\": \"d\"}, {\"prefix\": \"e\"}, {\"prefix\": \"f\"},"
		" {\"prefix\": \"g\"}, {\"prefix\": \"h\"}, {\"prefix\": \"ij\"}"
		"]}}",
	};
	static const char *evs[] = {
		"{\"k\":\"\"}", "{\"k\":\"a\"}", "{\"k\":\"abc\"}",
		"{\"k\":\"abdbc\"}", "{\"k\":\"zzabc\"}", "{\"k\":\"q\"}",
		"{\"k\":\"\\u00e9tat\"}", "{\"k\":\"xy\"}", "{\"k\":\"yx\"}",
		"{\"k\":\"bbbbbbbbbbbbbbbbbbbbbbbbbbb\"}", "{\"k\":5}",
		"{\"k\":\"abc\",\"k\":\"nope\"}", "{\"k\":\"nope\",\"k\":\"abc\"}",
		"{\"k\":\"abc\",\"k\":5}", "{\"k\":\"w\",\"k\":\"q\",\"k\":\"p\"}",
		"{\"k\":\"bc\",\"o\":{\"k\":\"ijk\"}}",
		"{\"k\":\"bc\",\"o\":{\"k\":\"ijk\"},\"o\":{\"k\":\"zz\"}}",
		"{\"o\":{\"k\":\"ijk\",\"k\":\"zz\"},\"k\":\"bc\"}",
		"{\"o\":{\"k\":\"zz\",\"k\":\"hh\"},\"k\":\"bc\"}",
		("{\"o\":{\"k\":\"zz\"},\"o\":{\"k\":\"a\",\"k\":\"b\"},"
		 "\"k\":\"abc\"}"),
		"{\"o\":{\"k\":\"a\"},\"o\":5,\"k\":\"bc\"}",
	};
	relay_pattern *p[RELAY__ARRAY_SIZE(pats)];
	relay_ruleset *rs = NULL;
	relay_matcher *m = NULL;
	size_t i;

	RT_ASSERT(relay_ruleset_new(&rs) == 0);
	for (i = 0; i < RELAY__ARRAY_SIZE(pats); i++) {
		json_t *j = json_loads(pats[i], 0, NULL);

		RT_ASSERT(j && relay_pattern_compile(&p[i], j, NULL) == 0);
		RT_ASSERT(relay_ruleset_add(rs, p[i], NULL) == 0);
		json_decref(j);
	}
	RT_ASSERT(relay_ruleset_build(rs) == 0);
	RT_ASSERT(relay_matcher_new(&m, rs) == 0);
	for (i = 0; i < RELAY__ARRAY_SIZE(evs); i++)
		agree(m, p, RELAY__ARRAY_SIZE(pats), evs[i]);
	relay_matcher_free(m);
	relay_ruleset_free(rs);
	for (i = 0; i < RELAY__ARRAY_SIZE(pats); i++)
		relay_pattern_free(p[i]);
}

#define NALTS 30000
#define NDUPS 20000

/*
 * 30000 prefixes and 30000 suffixes: quadratic deduplication took
 * seconds (minutes under ASan) to build; an event repeating the key
 * 20000 times cost repeats x alternatives. Both must take well under a
 * second here (the bound is generous for a loaded, sanitized build).
 */
static void test_pattern__worst_case_is_linear(void)
{
	json_t *alts = json_array(), *pj;
	relay_pattern *p = NULL;
	relay_ruleset *rs = NULL;
	relay_matcher *m = NULL;
	const uint32_t *ids;
	char item[32], *ev, *o;
	size_t n, i;
	double t0, build_s, match_s;

	for (i = 0; i < NALTS; i++) {
		snprintf(item, sizeof(item), "p%07zu", i);
		json_array_append_new(alts, json_pack("{s:s}", "prefix",
						      item));
		snprintf(item, sizeof(item), "%07zus", i);
		json_array_append_new(alts, json_pack("{s:s}", "suffix",
						      item));
	}
	pj = json_pack("{s:o}", "k", alts);
	RT_ASSERT(relay_pattern_compile(&p, pj, NULL) == 0);
	json_decref(pj);
	t0 = now_s();
	RT_ASSERT(relay_ruleset_new(&rs) == 0);
	RT_ASSERT(relay_ruleset_add(rs, p, NULL) == 0);
	RT_ASSERT(relay_ruleset_build(rs) == 0);
	build_s = now_s() - t0;
	RT_ASSERT(relay_matcher_new(&m, rs) == 0);
	/* Every value ends with one of the suffixes; only the last
	 * occurrence counts, and it matches prefix "p0000042". */
	ev = malloc(NDUPS * 48 + 64);
	RT_ASSERT(ev);
	o = ev;
	*o++ = '{';
	for (i = 0; i < NDUPS; i++)
		o += sprintf(o, "%s\"k\":\"x1234567890123456789012%07zus\"",
			     i ? "," : "", i % NALTS);
	o += sprintf(o, ",\"k\":\"p0000042-tail\"}");
	t0 = now_s();
	RT_EQ_INT(relay_matcher_match(m, ev, (size_t)(o - ev), NOW, &ids, &n),
		  0);
	match_s = now_s() - t0;
	RT_EQ_INT(n, 1);
	printf("# build %.3f s, match of %zu bytes %.3f s\n", build_s,
	       (size_t)(o - ev), match_s);
	RT_CHECK(build_s < 2.0);
	RT_CHECK(match_s < 2.0);
	/* Without the last value nothing matches either: the suffixes the
	 * earlier values fired were forgotten when the key repeated. */
	o -= strlen(",\"k\":\"p0000042-tail\"}");
	o += sprintf(o, ",\"k\":\"nothing\"}");
	RT_EQ_INT(relay_matcher_match(m, ev, (size_t)(o - ev), NOW, &ids, &n),
		  0);
	RT_EQ_INT(n, 0);
	free(ev);
	relay_matcher_free(m);
	relay_ruleset_free(rs);
	relay_pattern_free(p);
}

static const rt_case cases[] = {
	RT_CASE(test_pattern__many_affixes_agree),
	RT_CASE(test_pattern__worst_case_is_linear),
};

int main(int argc, char **argv)
{
	return rt_main(argc, argv, cases, RT_NCASES(cases));
}
