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

#include "ruleset_int.h"
#include "relaytest.h"
#include "pt_rules.h"

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

	pt_rules(pats, RELAY__ARRAY_SIZE(pats), p, &rs, &m);
	for (i = 0; i < RELAY__ARRAY_SIZE(evs); i++)
		agree(m, p, RELAY__ARRAY_SIZE(pats), evs[i]);
	pt_rules_free(p, RELAY__ARRAY_SIZE(pats), rs, m);
}

#define NALTS 30000
#define NDUPS 20000

/* Compile @pj (released) as the only rule of a new ruleset, build it and
 * a matcher; returns the seconds the ruleset took to build. */
static double build_one(json_t *pj, relay_pattern **p, relay_ruleset **rs,
			relay_matcher **m)
{
	double t0;

	RT_ASSERT(pj && relay_pattern_compile(p, pj, NULL) == 0);
	json_decref(pj);
	t0 = now_s();
	RT_ASSERT(relay_ruleset_new(rs) == 0);
	RT_ASSERT(relay_ruleset_add(*rs, *p, NULL) == 0);
	RT_ASSERT(relay_ruleset_build(*rs) == 0);
	t0 = now_s() - t0;
	RT_ASSERT(relay_matcher_new(m, *rs) == 0);
	return t0;
}

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
	build_s = build_one(pj, &p, &rs, &m);
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
	pt_rules_free(&p, 1, rs, m);
}

/*
 * One rule of 40,000 fields (equalities count nothing towards the
 * complexity cap): building it orders its clauses in n log n, and the
 * event that has every field matches, the one that misses the last not.
 */
#define NFIELDS 40000
static void test_pattern__many_fields_build(void)
{
	json_t *pj = json_object();
	relay_pattern *p = NULL;
	relay_ruleset *rs = NULL;
	relay_matcher *m = NULL;
	const uint32_t *ids;
	char key[32], *ev, *o;
	size_t n, i;
	double build_s;

	RT_ASSERT(pj);
	for (i = 0; i < NFIELDS; i++) {
		snprintf(key, sizeof(key), "f%05zu", i);
		json_object_set_new(pj, key, json_pack("[i]", (int)(i % 7)));
	}
	build_s = build_one(pj, &p, &rs, &m);
	printf("# %d fields: build %.3f s\n", NFIELDS, build_s);
	RT_CHECK(build_s < 2.0);
	ev = malloc((size_t)NFIELDS * 16 + 16);
	RT_ASSERT(ev);
	o = ev;
	*o++ = '{';
	for (i = 0; i < NFIELDS; i++)
		o += sprintf(o, "%s\"f%05zu\":%zu", i ? "," : "", i, i % 7);
	*o++ = '}';
	RT_EQ_INT(relay_matcher_match(m, ev, (size_t)(o - ev), NOW, &ids, &n),
		  0);
	RT_EQ_INT(n, 1);
	o[-2] = '9';  /* the last field's value: 1 -> 9 */
	RT_EQ_INT(relay_matcher_match(m, ev, (size_t)(o - ev), NOW, &ids, &n),
		  0);
	RT_EQ_INT(n, 0);
	free(ev);
	pt_rules_free(&p, 1, rs, m);
}

static relay_pattern *compile_text(const char *text, int *rc)
{
	json_t *j = json_loads(text, 0, NULL);
	relay_pattern *p = NULL;
	relay_error err;

	RT_ASSERT(j);
	*rc = relay_pattern_compile(&p, j, &err);
	if (*rc == RELAY_EPARSE)
		RT_CHECK(strstr(err.text, "pattern too complex") != NULL);
	json_decref(j);
	return p;
}

/* Compile @text (it must compile) and add it to @rs. */
static relay_pattern *add_text(relay_ruleset *rs, const char *text)
{
	int rc;
	relay_pattern *p = compile_text(text, &rc);

	RT_EQ_INT(rc, 0);
	RT_EQ_INT(relay_ruleset_add(rs, p, NULL), 0);
	return p;
}

/* A JSON pattern {"k": [{"anything-but": ["v0", ... "v<n-1>"]}]}. */
static char *anything_but(size_t n)
{
	char *t = malloc(n * 16 + 64), *o = t;
	size_t i;

	RT_ASSERT(t);
	o += sprintf(o, "{\"k\": [{\"anything-but\": [");
	for (i = 0; i < n; i++)
		o += sprintf(o, "%s\"v%zu\"", i ? "," : "", i);
	sprintf(o, "]}]}");
	return t;
}

static relay_matcher *one_rule_matcher(relay_pattern *p, relay_ruleset **rs)
{
	relay_matcher *m = NULL;

	RT_ASSERT(relay_ruleset_new(rs) == 0);
	RT_ASSERT(relay_ruleset_add(*rs, p, NULL) == 0);
	RT_ASSERT(relay_ruleset_build(*rs) == 0);
	RT_ASSERT(relay_matcher_new(&m, *rs) == 0);
	return m;
}

/*
 * The complexity cap (doc/patterns.md section 9): a list just under it
 * compiles, one over it is refused; an anything-but of 4000 values costs
 * an event what the value fires (a few log entries), not 4000 tests.
 */
static void test_pattern__cap_and_anything_but(void)
{
	char *t = anything_but(5000), ev[64];
	relay_pattern *p;
	relay_ruleset *rs = NULL;
	relay_matcher *m;
	const uint32_t *ids;
	size_t n;
	int rc;

	p = compile_text(t, &rc);
	RT_EQ_INT(rc, RELAY_EPARSE);
	RT_CHECK(p == NULL);
	free(t);
	t = anything_but(4000);
	p = compile_text(t, &rc);
	RT_EQ_INT(rc, 0);
	free(t);
	m = one_rule_matcher(p, &rs);
	snprintf(ev, sizeof(ev), "{\"k\": \"v3999\"}");
	RT_EQ_INT(relay_matcher_match(m, ev, strlen(ev), NOW, &ids, &n), 0);
	RT_EQ_INT(n, 0);
	RT_CHECK(m->nlog <= 8);
	snprintf(ev, sizeof(ev), "{\"k\": \"v4000\"}");
	RT_EQ_INT(relay_matcher_match(m, ev, strlen(ev), NOW, &ids, &n), 0);
	RT_EQ_INT(n, 1);
	RT_CHECK(m->nlog <= 8);
	relay_matcher_free(m);
	relay_ruleset_free(rs);
	relay_pattern_free(p);
}

#define NWILD 200
#define NSTARS 40
#define VLEN 4000

/* An event @head, VLEN 'a's, @tail (malloc'd; its length in *len). */
static char *a_run_event(const char *head, const char *tail, size_t *len)
{
	char *ev = malloc(strlen(head) + VLEN + strlen(tail) + 1);
	size_t k = strlen(head);

	RT_ASSERT(ev);
	memcpy(ev, head, k);
	memset(ev + k, 'a', VLEN);
	memcpy(ev + k + VLEN, tail, strlen(tail) + 1);
	*len = k + VLEN + strlen(tail);
	return ev;
}

/*
 * Many wildcards with overlapping stars against a long value that almost
 * matches each: the steps stay within sum(len(w)) x len(value) (greedy
 * matching never backtracks over earlier stars), and the answer is
 * right. A wildcard with NSTARS stars is within the cap (NSTARS + 1).
 */
static void test_pattern__wildcards_bounded(void)
{
	relay_ruleset *rs = NULL;
	relay_matcher *m = NULL;
	relay_pattern *p[NWILD];
	const uint32_t *ids;
	char w[NSTARS * 2 + 16], *ev, pat[256];
	size_t i, k, n, wlen = 0, bound = 0;

	RT_ASSERT(relay_ruleset_new(&rs) == 0);
	for (i = 0; i < NWILD; i++) {
		char *o = w;

		for (k = 0; k < NSTARS; k++)
			*o++ = '*', *o++ = 'a';
		o += sprintf(o, "*b%zu", i % 10);
		*o = '\0';
		wlen = strlen(w);
		bound += wlen * (VLEN + 16) + wlen + VLEN + 16;
		snprintf(pat, sizeof(pat), "{\"k\": [{\"wildcard\": \"%s\"}]}",
			 w);
		p[i] = add_text(rs, pat);
	}
	RT_ASSERT(relay_ruleset_build(rs) == 0);
	RT_ASSERT(relay_matcher_new(&m, rs) == 0);
	ev = a_run_event("{\"k\": \"", "b3\"}", &k);
	RT_EQ_INT(relay_matcher_match(m, ev, k, NOW, &ids, &n), 0);
	/* only the 10 distinct wildcards (deduplicated) ending in b3 */
	RT_EQ_INT(n, NWILD / 10);
	printf("# %llu wildcard steps, bound %zu\n",
	       (unsigned long long)m->work, bound / 20);
	RT_CHECK(m->work <= bound / 20); /* 10 distinct of NWILD */
	/* a value with no b at all: every wildcard fails, still bounded */
	ev[k - 4] = 'a';
	RT_EQ_INT(relay_matcher_match(m, ev, k, NOW, &ids, &n), 0);
	RT_EQ_INT(n, 0);
	RT_CHECK(m->work <= bound / 20);
	free(ev);
	relay_matcher_free(m);
	relay_ruleset_free(rs);
	for (i = 0; i < NWILD; i++)
		relay_pattern_free(p[i]);
}

#define NSHARE 1000

/*
 * One lazy wildcard (it anchors no rule: t does) read by NSHARE rules,
 * all candidates: it is tested once per event, not once per rule. Its
 * stars each find an 'a' at once, so one test takes fewer steps than
 * len(w) + len(value); NSHARE tests would take NSHARE times as many.
 */
static void test_pattern__lazy_wildcard_once(void)
{
	relay_ruleset *rs = NULL;
	relay_matcher *m = NULL;
	relay_pattern *p[NSHARE + 1];
	const uint32_t *ids;
	char w[NSTARS * 2 + 16], *ev, pat[256];
	size_t i, k, n, bound;

	RT_ASSERT(relay_ruleset_new(&rs) == 0);
	for (k = 0, i = 0; i < NSTARS; i++)
		w[k++] = '*', w[k++] = 'a';
	memcpy(w + k, "*b", 3);
	bound = strlen(w) + VLEN + 16;
	for (i = 0; i < NSHARE; i++) {
		snprintf(pat, sizeof(pat), "{\"t\": [\"x\"], \"k\": "
			 "[{\"wildcard\": \"%s\"}]}", w);
		p[i] = add_text(rs, pat);
	}
	/* literals enough at t that t is the better anchor */
	p[NSHARE] = add_text(rs, "{\"t\": [\"a\", \"b\", \"c\", \"d\", "
			     "\"e\"]}");
	RT_ASSERT(relay_ruleset_build(rs) == 0);
	RT_ASSERT(relay_matcher_new(&m, rs) == 0);
	ev = a_run_event("{\"t\": \"x\", \"k\": \"", "b\"}", &k);
	RT_EQ_INT(relay_matcher_match(m, ev, k, NOW, &ids, &n), 0);
	RT_EQ_INT(n, NSHARE);
	printf("# %llu wildcard steps for %d rules, bound %zu\n",
	       (unsigned long long)m->work, NSHARE, bound);
	RT_CHECK(m->work <= bound);
	ev[k - 3] = 'a';  /* no b: every rule fails, still one test */
	RT_EQ_INT(relay_matcher_match(m, ev, k, NOW, &ids, &n), 0);
	RT_EQ_INT(n, 0);
	RT_CHECK(m->work <= bound);
	free(ev);
	relay_matcher_free(m);
	relay_ruleset_free(rs);
	for (i = 0; i <= NSHARE; i++)
		relay_pattern_free(p[i]);
}

#define NCIDR 1000

/* Many CIDRs: one address parse per value, one test per distinct CIDR. */
static void test_pattern__cidrs_bounded(void)
{
	relay_ruleset *rs = NULL;
	relay_matcher *m = NULL;
	relay_pattern *p[NCIDR];
	const uint32_t *ids;
	char pat[128];
	const char *ev = "{\"ip\": \"10.3.231.1\"}";
	size_t i, n;
	int rc;

	RT_ASSERT(relay_ruleset_new(&rs) == 0);
	for (i = 0; i < NCIDR; i++) {
		snprintf(pat, sizeof(pat), "{\"ip\": [{\"cidr\": "
			 "\"10.%zu.%zu.0/24\"}]}", i / 256, i % 256);
		p[i] = compile_text(pat, &rc);
		RT_EQ_INT(rc, 0);
		RT_EQ_INT(relay_ruleset_add(rs, p[i], NULL), 0);
	}
	RT_ASSERT(relay_ruleset_build(rs) == 0);
	RT_ASSERT(relay_matcher_new(&m, rs) == 0);
	RT_EQ_INT(relay_matcher_match(m, ev, strlen(ev), NOW, &ids, &n), 0);
	RT_EQ_INT(n, 1);
	RT_EQ_INT(ids[0], 3 * 256 + 231);
	RT_CHECK(m->work <= NCIDR);
	relay_matcher_free(m);
	relay_ruleset_free(rs);
	for (i = 0; i < NCIDR; i++)
		relay_pattern_free(p[i]);
}

/* $or nested 30 deep: compiled as written (no expansion), right answers,
 * and numbers beyond the double range on the raw path. */
static void test_pattern__deep_or(void)
{
	char pat[8192], *o = pat;
	relay_ruleset *rs = NULL;
	relay_matcher *m;
	relay_pattern *p;
	const uint32_t *ids;
	const char *ev;
	size_t i, n;
	int rc;

	for (i = 0; i < 30; i++)
		o += sprintf(o, "{\"$or\": [{\"a%zu\": [{\"numeric\": "
			     "[\">\", 0, \"<\", 1e308]}]}, ", i);
	o += sprintf(o, "{\"z\": [1]}");
	for (i = 0; i < 30; i++)
		o += sprintf(o, "]}");
	p = compile_text(pat, &rc);
	RT_EQ_INT(rc, 0);
	m = one_rule_matcher(p, &rs);
	ev = "{\"a29\": 5}";
	RT_EQ_INT(relay_matcher_match(m, ev, strlen(ev), NOW, &ids, &n), 0);
	RT_EQ_INT(n, 1);
	ev = "{\"z\": 1}";
	RT_EQ_INT(relay_matcher_match(m, ev, strlen(ev), NOW, &ids, &n), 0);
	RT_EQ_INT(n, 1);
	ev = "{\"a0\": 1e999, \"z\": 2}"; /* +inf: above every bound */
	RT_EQ_INT(relay_matcher_match(m, ev, strlen(ev), NOW, &ids, &n), 0);
	RT_EQ_INT(n, 0);
	RT_CHECK(rs->nprog < 30 * 8);
	relay_matcher_free(m);
	relay_ruleset_free(rs);
	relay_pattern_free(p);
}

/*
 * A $or of two branches of 3,000 fields each: distributed it would be
 * 9,000,000 clauses. Its size is known before the product is made, so
 * the rule stays a program and loads at once (an OR's flat clauses are
 * bounded by CNF_MAX_CLAUSES and CNF_MAX_LITS, ruleset_plan.c).
 */
#define WIDE_FIELDS 3000

static size_t wide_bytes;  /* asked of the allocator */

static void *wide_malloc(size_t n)
{
	wide_bytes += n;
	return malloc(n);
}

static void *wide_realloc(void *q, size_t n)
{
	wide_bytes += n;
	return realloc(q, n);
}

static void test_pattern__wide_or_branches(void)
{
	size_t cap = WIDE_FIELDS * 2 * 24 + 64, i, n;
	char *pat = malloc(cap), *ev = malloc(cap), *o;
	relay_ruleset *rs = NULL;
	relay_matcher *m;
	relay_pattern *p;
	const uint32_t *ids;
	int rc, b;

	RT_ASSERT(pat && ev);
	/* no librelay object is alive here */
	relay_set_allocator(wide_malloc, wide_realloc, free);
	o = pat + sprintf(pat, "{\"$or\": [");
	for (b = 0; b < 2; b++) {
		o += sprintf(o, "%s{", b ? ", " : "");
		for (i = 0; i < WIDE_FIELDS; i++)
			o += sprintf(o, "%s\"%c%zu\": [1]", i ? ", " : "",
				     b ? 'g' : 'f', i);
		o += sprintf(o, "}");
	}
	sprintf(o, "]}");
	p = compile_text(pat, &rc);
	RT_EQ_INT(rc, 0);
	wide_bytes = 0;
	m = one_rule_matcher(p, &rs);
	RT_EQ_INT(rs->rules[0].cnf_start, RELAY__NONE);
	/* the build's own structures, not a product of the branches (which
	 * made would ask for hundreds of MB) */
	if (wide_bytes > (size_t)16 << 20)
		RT_FAILF("the build asked for %zu bytes", wide_bytes);
	/* every g field: the second branch holds */
	o = ev + sprintf(ev, "{");
	for (i = 0; i < WIDE_FIELDS; i++)
		o += sprintf(o, "%s\"g%zu\": 1", i ? ", " : "", i);
	sprintf(o, ", \"f0\": 1}");
	RT_EQ_INT(relay_matcher_match(m, ev, strlen(ev), NOW, &ids, &n), 0);
	RT_EQ_INT(n, 1);
	/* one g missing and one f only: neither */
	o = ev + sprintf(ev, "{\"f0\": 1");
	for (i = 1; i < WIDE_FIELDS; i++)
		o += sprintf(o, ", \"g%zu\": 1", i);
	sprintf(o, "}");
	RT_EQ_INT(relay_matcher_match(m, ev, strlen(ev), NOW, &ids, &n), 0);
	RT_EQ_INT(n, 0);
	relay_matcher_free(m);
	relay_ruleset_free(rs);
	relay_pattern_free(p);
	relay_set_allocator(NULL, NULL, NULL);
	free(pat);
	free(ev);
}

static const rt_case cases[] = {
	RT_CASE(test_pattern__cap_and_anything_but),
	RT_CASE(test_pattern__wildcards_bounded),
	RT_CASE(test_pattern__lazy_wildcard_once),
	RT_CASE(test_pattern__cidrs_bounded),
	RT_CASE(test_pattern__deep_or),
	RT_CASE(test_pattern__wide_or_branches),
	RT_CASE(test_pattern__many_affixes_agree),
	RT_CASE(test_pattern__worst_case_is_linear),
	RT_CASE(test_pattern__many_fields_build),
};

int main(int argc, char **argv)
{
	return rt_main(argc, argv, cases, RT_NCASES(cases));
}
