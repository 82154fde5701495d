/*
 * test_pattern.c - the pattern language: data-driven cases (cases/NAME.test)
 * through every match path, invalid patterns with messages and marks,
 * RFC3339 / now() / number parsers, ruleset API.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pattern_int.h"
#include "pjson.h"
#include "pnode.h"
#include "relay_config.h"
#include "relaytest.h"

#define NOW 1767268800000LL /* 2026-01-01T12:00:00Z */

static char *slurp(const char *name)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/tests/pattern/cases/%s",
		 RELAY_SOURCE_ROOT, name);
	return rt_slurp(path, NULL);
}

/* Match @ev_text with a one-rule ruleset through both matcher entries. */
static void check_ruleset_one(const relay_pattern *p, const char *ev_text,
			      const json_t *ev, int want, int lineno)
{
	relay_ruleset *rs = NULL;
	relay_matcher *m = NULL;
	const uint32_t *ids;
	size_t n = 99;
	uint32_t id = 7;

	RT_ASSERT(relay_ruleset_new(&rs) == 0);
	RT_EQ_INT(relay_ruleset_add(rs, p, &id), 0);
	RT_EQ_INT(id, 0);
	RT_EQ_INT(relay_ruleset_build(rs), 0);
	RT_ASSERT(relay_matcher_new(&m, rs) == 0);
	RT_EQ_INT(relay_matcher_match(m, ev_text, strlen(ev_text), NOW, &ids,
				      &n), 0);
	if ((int)n != want)
		RT_FAILF("line %d: raw matcher says %zu, want %d (%s)", lineno,
			 n, want, relay_matcher_errstr(m));
	n = 99;
	RT_EQ_INT(relay_matcher_match_json(m, ev, NOW, &ids, &n), 0);
	if ((int)n != want)
		RT_FAILF("line %d: json matcher says %zu, want %d", lineno, n,
			 want);
	relay_matcher_free(m);
	relay_ruleset_free(rs);
}

#define MAX_PATS 256
#define MAX_EVS 1024

/*
 * Runs one cases file: every event through relay_pattern_match and a
 * one-rule ruleset, then every event of the file through one ruleset of
 * every pattern of the file, which must report exactly the patterns whose
 * relay_pattern_match() is 1.
 */
static void run_cases_text(const char *name, char *text)
{
	char *line, *save = NULL;
	relay_pattern *pats[MAX_PATS];
	char *evs[MAX_EVS];
	size_t np = 0, ne = 0, i, k, n, got_i;
	int lineno = 0, checked = 0;
	relay_ruleset *rs = NULL;
	relay_matcher *m = NULL;
	const uint32_t *ids;

	RT_ASSERT(text);
	for (line = strtok_r(text, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		json_error_t jerr;
		json_t *j;
		int want;

		lineno++;
		if (line[0] == '#' || line[0] == '\0')
			continue;
		if (!strncmp(line, "pattern: ", 9)) {
			relay_error err;

			j = json_loads(line + 9, JSON_DECODE_ANY |
				       JSON_ALLOW_NUL, &jerr);
			RT_ASSERT(j);
			RT_ASSERT(np < MAX_PATS);
			if (relay_pattern_compile(&pats[np], j, &err)) {
				RT_FAILF("%s: %s", line, err.text);
				json_decref(j);
				continue;
			}
			np++;
			json_decref(j);
			continue;
		}
		RT_ASSERT((line[0] == '+' || line[0] == '-') && np > 0);
		want = line[0] == '+';
		j = json_loads(line + 2, JSON_ALLOW_NUL, &jerr);
		if (!j) {
			RT_FAILF("%s: bad event: %s", line, jerr.text);
			continue;
		}
		if (relay_pattern_match(pats[np - 1], j, NOW) != want)
			RT_FAILF("%s:%d: relay_pattern_match != %d: %s", name,
				 lineno, want, line + 2);
		check_ruleset_one(pats[np - 1], line + 2, j, want, lineno);
		json_decref(j);
		RT_ASSERT(ne < MAX_EVS);
		evs[ne++] = line + 2;
		checked++;
	}
	RT_CHECK(checked > 0);
	RT_ASSERT(relay_ruleset_new(&rs) == 0);
	for (i = 0; i < np; i++)
		RT_EQ_INT(relay_ruleset_add(rs, pats[i], NULL), 0);
	RT_EQ_INT(relay_ruleset_build(rs), 0);
	RT_EQ_INT(relay_ruleset_count(rs), np);
	RT_ASSERT(relay_matcher_new(&m, rs) == 0);
	for (i = 0; i < ne; i++) {
		json_t *ev = json_loads(evs[i], JSON_ALLOW_NUL, NULL);

		RT_EQ_INT(relay_matcher_match(m, evs[i], strlen(evs[i]), NOW,
					      &ids, &n), 0);
		for (got_i = 0, k = 0; k < np; k++) {
			int want = relay_pattern_match(pats[k], ev, NOW);
			int got = got_i < n && ids[got_i] == k;

			if (got)
				got_i++;
			if (want != got)
				RT_FAILF("%s: rule %zu on %s: got %d want %d",
					 name, k, evs[i], got, want);
		}
		RT_EQ_INT(got_i, n);
		json_decref(ev);
	}
	relay_matcher_free(m);
	relay_ruleset_free(rs);
	for (i = 0; i < np; i++)
		relay_pattern_free(pats[i]);
}

static void run_cases(const char *name)
{
	char *text = slurp(name);

	run_cases_text(name, text);
	free(text);
}

static void test_pattern__cases_syntax(void) { run_cases("syntax.test"); }
static void test_pattern__cases_literals(void) { run_cases("literals.test"); }
static void test_pattern__cases_operators(void)
{
	run_cases("operators.test");
}
static void test_pattern__cases_comparison(void)
{
	run_cases("comparison.test");
}
static void test_pattern__cases_combining(void)
{
	run_cases("combining.test");
}

static void test_pattern__cases_eventbridge(void)
{
	run_cases("eventbridge.test");
}

/* "pattern:" / "error:" pairs; returns how many were checked. */
static int run_invalid_text(char *text)
{
	char *line, *save = NULL;
	json_t *j = NULL;
	int lineno = 0, checked = 0;

	RT_ASSERT(text);
	for (line = strtok_r(text, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		relay_pattern *p = NULL;
		relay_error err;
		int rc;

		lineno++;
		if (line[0] == '#')
			continue;
		if (!strncmp(line, "pattern: ", 9)) {
			j = json_loads(line + 9, JSON_DECODE_ANY, NULL);
			RT_ASSERT(j);
			continue;
		}
		RT_ASSERT(!strncmp(line, "error: ", 7) && j);
		memset(&err, 0, sizeof(err));
		rc = relay_pattern_compile(&p, j, &err);
		if (rc != RELAY_EPARSE)
			RT_FAILF("line %d: rc %d, want EPARSE", lineno, rc);
		else if (!strstr(err.text, line + 7))
			RT_FAILF("line %d: message \"%s\" lacks \"%s\"",
				 lineno, err.text, line + 7);
		RT_EQ_INT(err.line, 0);
		RT_EQ_INT(err.code, RELAY_EPARSE);
		relay_pattern_free(p);
		json_decref(j);
		j = NULL;
		checked++;
	}
	return checked;
}

static void test_pattern__invalid(void)
{
	char *text = slurp("invalid.test");

	RT_ASSERT(text);
	RT_CHECK(run_invalid_text(text) > 40);
	free(text);
}

static void test_pattern__invalid_eventbridge(void)
{
	char *text = slurp("eventbridge-invalid.test");

	RT_ASSERT(text);
	RT_CHECK(run_invalid_text(text) > 40);
	free(text);
}

/*
 * Every ```test and ```error block of doc/patterns.md runs as a cases
 * file, so the reference cannot drift from the implementation.
 */
static void test_pattern__doc(void)
{
	char path[512], *doc, *p, *end, *tests, *errors;
	size_t tn = 0, en = 0, len;
	FILE *f;
	long n;

	snprintf(path, sizeof(path), "%s/doc/patterns.md", RELAY_SOURCE_ROOT);
	f = fopen(path, "rb");
	if (!f)
		RT_SKIP("no doc/patterns.md");
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	doc = calloc(1, (size_t)n + 1);
	tests = calloc(1, (size_t)n + 1);
	errors = calloc(1, (size_t)n + 1);
	RT_ASSERT(doc && tests && errors &&
		  fread(doc, 1, (size_t)n, f) == (size_t)n);
	fclose(f);
	for (p = doc; (p = strstr(p, "\n```")) != NULL; p = end) {
		int is_test = strncmp(p, "\n```test\n", 9) == 0;
		int is_error = strncmp(p, "\n```error\n", 10) == 0;
		char *body = p + (is_test ? 9 : 10);

		end = strstr(p + 4, "\n```");
		RT_ASSERT(end);
		end += 4;
		if (!is_test && !is_error)
			continue;
		len = (size_t)(end - 3 - body);
		if (is_test) {
			memcpy(tests + tn, body, len);
			tn += len;
		} else {
			memcpy(errors + en, body, len);
			en += len;
		}
	}
	RT_CHECK(tn > 0 && en > 0);
	run_cases_text("doc/patterns.md", tests);
	RT_CHECK(run_invalid_text(errors) >= 15);
	free(doc);
	free(tests);
	free(errors);
}

/* Pattern nesting is bounded: deep enough for any real template, never
 * deep enough to exhaust the stack. */
static void test_pattern__depth_bound(void)
{
	char buf[1024];
	int levels;

	for (levels = 1; levels <= 40; levels++) {
		relay_pattern *p = NULL;
		relay_error err;
		json_t *j;
		size_t o = 0;
		int i, rc;

		for (i = 0; i < levels; i++)
			o += (size_t)sprintf(buf + o, "{\"a\": ");
		o += (size_t)sprintf(buf + o, "[1]");
		for (i = 0; i < levels; i++)
			buf[o++] = '}';
		buf[o] = '\0';
		j = json_loads(buf, 0, NULL);
		RT_ASSERT(j);
		memset(&err, 0, sizeof(err));
		rc = relay_pattern_compile(&p, j, &err);
		if (levels <= 32 && rc != 0)
			RT_FAILF("%d levels: %s", levels, err.text);
		if (levels > 32 && (rc != RELAY_EPARSE ||
				    !strstr(err.text, "pattern nested deeper "
					    "than 64 levels")))
			RT_FAILF("%d levels: rc %d %s", levels, rc, err.text);
		relay_pattern_free(p);
		json_decref(j);
	}
}

/* Errors from a marked pnode tree carry the offending node's position. */
static void check_mark(const char *text, int line, int col,
		       const char *substr)
{
	relay__pnode root;
	relay_pattern *p = NULL;
	relay_error err;
	char buf[512];

	RT_ASSERT(pjson_parse(text, &root) == 0);
	memset(&err, 0, sizeof(err));
	RT_EQ_INT(relay__pattern_compile_pnode(&p, &root, "t.yaml", &err),
		  RELAY_EPARSE);
	RT_CHECK(p == NULL);
	relay_error_format(&err, buf, sizeof(buf));
	if (err.line != line || err.column != col || !strstr(err.text, substr))
		RT_FAILF("%s -> \"%s\", want %d:%d and \"%s\"", text, buf,
			 line, col, substr);
	RT_EQ_STR(err.path, "t.yaml");
	pjson_free(&root);
}

static void test_pattern__marks(void)
{
	check_mark("{\n  \"status\": \"COMPLETED\"\n}", 2, 13,
		   "status: a condition must be a list");
	check_mark("{\"a\": {\n \"b\": []}}", 2, 7, "a.b: empty list");
	check_mark("{\"id\": [\n  {\"prefx\": \"x\"}]}", 2, 4,
		   "unknown operator \"prefx\"");
	check_mark("{\"id\": [{\"prefix\":\n   12}]}", 2, 4,
		   "prefix takes a string");
	check_mark("{\"x\": [1],\n\"prefix\": [\"a\"]}", 2, 1,
		   "\"prefix\" is an operator");
	check_mark("{\"t\": [{\"gt\": \"now-5m\"}]}", 1, 15, "old now-style");
	check_mark("{\"s\": null}", 1, 7, "cannot be null");
	check_mark("[1]", 1, 1, "must be a map");
	check_mark("{\"d\": [{\"exists\": [true]}]}", 1, 19,
		   "exists takes a boolean, not a list");
	check_mark("{\"n\": [{\"gt\": .inf}]}", 1, 15, "finite");
	check_mark("{\"n\": [-.Inf]}", 1, 8, "finite");
	check_mark("{\"n\": [.nan]}", 1, 8, "finite");
	check_mark("{\"n\": [1e999]}", 1, 8, "finite");
}

/* YAML-style number texts from the app module's builder. */
static void test_pattern__yaml_numbers(void)
{
	static const struct { const char *pat, *ev; int want; } t[] = {
		{ "{\"n\": [+5]}", "{\"n\": 5}", 1 },
		{ "{\"n\": [.5]}", "{\"n\": 0.5}", 1 },
		{ "{\"n\": [5.]}", "{\"n\": 5}", 1 },
		{ "{\"n\": [0x1F]}", "{\"n\": 31}", 1 },
		{ "{\"n\": [0o17]}", "{\"n\": 15}", 1 },
		{ "{\"n\": [-0x10]}", "{\"n\": -16}", 1 },
		{ "{\"n\": [1E3]}", "{\"n\": 1000}", 1 },
		{ "{\"n\": [{\"gt\": 0x10}]}", "{\"n\": 17}", 1 },
	};
	size_t i;

	for (i = 0; i < RELAY__ARRAY_SIZE(t); i++) {
		relay__pnode root;
		relay_pattern *p = NULL;
		json_t *ev = json_loads(t[i].ev, 0, NULL);

		RT_ASSERT(pjson_parse(t[i].pat, &root) == 0 && ev);
		RT_EQ_INT(relay__pattern_compile_pnode(&p, &root, NULL, NULL),
			  0);
		if (p && relay_pattern_match(p, ev, NOW) != t[i].want)
			RT_FAILF("%s on %s", t[i].pat, t[i].ev);
		relay_pattern_free(p);
		json_decref(ev);
		pjson_free(&root);
	}
}

static void test_pattern__rfc3339(void)
{
	static const struct { const char *s; int ok; int64_t ms; int sub; }
	t[] = {
		{ "2026-01-01T12:00:00Z", 1, 1767268800000, 0 },
		{ "2026-01-01t12:00:00z", 1, 1767268800000, 0 },
		{ "2026-01-01T13:00:00+01:00", 1, 1767268800000, 0 },
		{ "2026-01-01T06:30:00-05:30", 1, 1767268800000, 0 },
		{ "2026-01-01T12:00:00.5Z", 1, 1767268800500, 0 },
		{ "2026-01-01T12:00:00.123456789Z", 1, 1767268800123, 1 },
		{ "2026-01-01T12:00:00.123000000Z", 1, 1767268800123, 0 },
		{ "1970-01-01T00:00:00Z", 1, 0, 0 },
		{ "1969-12-31T23:59:59.999Z", 1, -1, 0 },
		{ "1969-12-31T23:59:59.9991Z", 1, -1, 1 },
		{ "2000-02-29T00:00:00Z", 1, 951782400000, 0 },
		{ "2024-02-29T23:59:59Z", 1, 1709251199000, 0 },
		{ "2100-02-28T00:00:00Z", 1, 4107456000000, 0 },
		{ "9999-12-31T23:59:59Z", 1, 253402300799000, 0 },
		{ "0000-01-01T00:00:00Z", 1, -62167219200000, 0 },
		{ "2100-02-29T00:00:00Z", 0, 0, 0 },
		{ "2023-02-29T00:00:00Z", 0, 0, 0 },
		{ "2026-06-31T00:00:00Z", 0, 0, 0 },
		{ "2026-1-01T00:00:00Z", 0, 0, 0 },
		{ "2026-01-01T00:00:00", 0, 0, 0 },
		{ "2026-01-01T00:00:00.Z", 0, 0, 0 },
		{ "2026-01-01T00:00:00+01", 0, 0, 0 },
		{ "2026-01-01T00:00:00+1:00", 0, 0, 0 },
		{ "2026-01-01T00:00:00Zjunk", 0, 0, 0 },
		{ "2026-01-01X00:00:00Z", 0, 0, 0 },
		{ "2026-01-01T00:00:60Z", 0, 0, 0 },
		{ "+2026-01-01T00:00:00Z", 0, 0, 0 },
		{ "", 0, 0, 0 },
		/* a non-digit in each digit pair, including the bytes just
		 * below '0' and above '9' */
		{ "2/26-01-01T00:00:00Z", 0, 0, 0 },
		{ "202:-01-01T00:00:00Z", 0, 0, 0 },
		{ "2026-0:-01T00:00:00Z", 0, 0, 0 },
		{ "2026-01-/1T00:00:00Z", 0, 0, 0 },
		{ "2026-01-01T0a:00:00Z", 0, 0, 0 },
		{ "2026-01-01T00:/0:00Z", 0, 0, 0 },
		{ "2026-01-01T00:00:0:Z", 0, 0, 0 },
		{ "2026-01-01T00:00:00+0/:00", 0, 0, 0 },
		{ "2026-01-01T00:00:00+01:0:", 0, 0, 0 },
		/* each range, just inside and just outside */
		{ "2026-00-01T00:00:00Z", 0, 0, 0 },
		{ "2026-13-01T00:00:00Z", 0, 0, 0 },
		{ "2026-12-31T23:59:59Z", 1, 1798761599000, 0 },
		{ "2026-01-00T00:00:00Z", 0, 0, 0 },
		{ "2026-01-32T00:00:00Z", 0, 0, 0 },
		{ "2026-01-01T24:00:00Z", 0, 0, 0 },
		{ "2026-01-01T00:60:00Z", 0, 0, 0 },
		{ "2026-01-01T00:00:00+23:59", 1, 1767139260000, 0 },
		{ "2026-01-01T00:00:00+24:00", 0, 0, 0 },
		{ "2026-01-01T00:00:00+01:60", 0, 0, 0 },
		/* separators */
		{ "2026/01-01T00:00:00Z", 0, 0, 0 },
		{ "2026-01/01T00:00:00Z", 0, 0, 0 },
		{ "2026-01-01 00:00:00Z", 0, 0, 0 },
		{ "2026-01-01T00-00:00Z", 0, 0, 0 },
		{ "2026-01-01T00:00-00Z", 0, 0, 0 },
		{ "2026-01-01T00:00:00+01-00", 0, 0, 0 },
	};
	size_t i;

	for (i = 0; i < RELAY__ARRAY_SIZE(t); i++) {
		relay__instant in = { 0, 0 };
		int rc = relay__rfc3339_parse(t[i].s, strlen(t[i].s), &in);

		if ((rc == 0) != t[i].ok)
			RT_FAILF("%s: rc %d", t[i].s, rc);
		else if (t[i].ok && (in.ms != t[i].ms || in.sub != t[i].sub))
			RT_FAILF("%s: %lld/%d, want %lld/%d", t[i].s,
				 (long long)in.ms, in.sub,
				 (long long)t[i].ms, t[i].sub);
	}
}

static void test_pattern__now_parse(void)
{
	static const struct { const char *s; int ok; int64_t off; } t[] = {
		{ "now()", 1, 0 },
		{ "now()-5m", 1, -300000 },
		{ "now()+10m", 1, 600000 },
		{ "now()-1h30m", 1, -5400000 },
		{ "now()-1h2m3s", 1, -3723000 },
		{ "now()+10s", 1, 10000 },
		{ "now()-0s", 1, 0 },
		{ "now()-1h30s", 1, -3630000 },
		{ "now()-90m", 1, -5400000 },
		{ "now()-", 0, 0 },
		{ "now()-m", 0, 0 },
		{ "now()-5", 0, 0 },
		{ "now()-5m5m", 0, 0 },
		{ "now()-5s5m", 0, 0 },
		{ "now()-5d", 0, 0 },
		{ "now()*5m", 0, 0 },
		{ "now() ", 0, 0 },
		{ "now", 0, 0 },
		{ "Now()", 0, 0 },
		{ "now()-1000000000h", 0, 0 },
	};
	size_t i;

	for (i = 0; i < RELAY__ARRAY_SIZE(t); i++) {
		int64_t off = 42;
		int rc = relay__now_parse(t[i].s, strlen(t[i].s), &off);

		if ((rc == 0) != t[i].ok || (t[i].ok && off != t[i].off))
			RT_FAILF("%s: rc %d off %lld", t[i].s, rc,
				 (long long)off);
	}
}

static void test_pattern__json_number(void)
{
	static const char *t[] = {
		"0", "-0", "1", "70", "70.0", "7e1", "7.5E+1", "0.1", "0.3",
		"123456789012345", "1234567890123456", "12345678901234567890",
		"9007199254740993", "1e22", "1e23", "1e-22", "1e-23",
		"2.2250738585072014e-308", "4.9e-324", "1.7976931348623157e308",
		"1e400", "-1e400", "0.000001", "3.14159265358979323846",
		"100000000000000000000000000000000000000000000000000",
		"0.1000000000000000055511151231257827021181583404541015625",
	};
	size_t i;

	for (i = 0; i < RELAY__ARRAY_SIZE(t); i++) {
		double a = relay__json_number(t[i], strlen(t[i]));
		double b = strtod(t[i], NULL);

		if (memcmp(&a, &b, sizeof(a)) != 0)
			RT_FAILF("%s: %.17g != strtod %.17g", t[i], a, b);
	}
}

static void test_pattern__api(void)
{
	relay_ruleset *rs = NULL;
	relay_matcher *m = NULL;
	relay_pattern *p = NULL;
	json_t *j = json_loads("{\"a\": [1]}", 0, NULL);
	const uint32_t *ids;
	size_t n = 5;
	uint32_t id;

	RT_ASSERT(j && relay_pattern_compile(&p, j, NULL) == 0);
	RT_ASSERT(relay_ruleset_new(&rs) == 0);
	RT_EQ_INT(relay_matcher_new(&m, rs), RELAY_EINVAL);
	RT_EQ_INT(relay_ruleset_add(rs, p, &id), 0);
	RT_EQ_INT(id, 0);
	RT_EQ_INT(relay_ruleset_add(rs, p, &id), 0);
	RT_EQ_INT(id, 1);
	relay_pattern_free(p); /* the ruleset keeps its own copy */
	RT_EQ_INT(relay_ruleset_build(rs), 0);
	RT_EQ_INT(relay_ruleset_add(rs, p, &id), RELAY_EINVAL);
	RT_EQ_INT(relay_ruleset_count(rs), 2);
	RT_ASSERT(relay_matcher_new(&m, rs) == 0);
	RT_EQ_INT(relay_matcher_match(m, "{\"a\":1}", 7, NOW, &ids, &n), 0);
	RT_EQ_INT(n, 2);
	RT_EQ_INT(ids[0], 0);
	RT_EQ_INT(ids[1], 1);
	RT_EQ_STR(relay_matcher_errstr(m), "");
	RT_EQ_INT(relay_matcher_match(m, "[1]", 3, NOW, &ids, &n),
		  RELAY_ETYPE);
	RT_EQ_INT(n, 0);
	RT_EQ_INT(relay_matcher_match(m, "{\"a\":1", 6, NOW, &ids, &n),
		  RELAY_EPARSE);
	RT_EQ_INT(n, 0);
	RT_CHECK(relay_matcher_errstr(m)[0] != '\0');
	RT_EQ_INT(relay_matcher_match_json(m, j, NOW, &ids, &n), 0);
	RT_EQ_INT(n, 0); /* j is a pattern, not an event with a == 1 */
	RT_EQ_INT(relay_matcher_match_json(m, json_true(), NOW, &ids, &n),
		  RELAY_ETYPE);
	RT_EQ_INT(relay_pattern_match(NULL, j, NOW), 0);
	relay_matcher_free(m);
	relay_ruleset_free(rs);
	relay_matcher_free(NULL);
	relay_ruleset_free(NULL);
	relay_pattern_free(NULL);
	json_decref(j);
}

static void explain_cat(void *arg, const char *path, size_t alt,
			const char *what)
{
	char *o = arg;

	(void)alt;
	snprintf(o + strlen(o), 1024 - strlen(o), "%s: %s; ", path, what);
}

/* relay_pattern_explain() names the alternative that held, per field. */
static void test_pattern__explain(void)
{
	static const char *const pat =
		"{\"ip\": [{\"cidr\": \"10.0.0.0/8\"}, {\"cidr\": "
		"\"2001:db8::/32\"}], \"o\": {\"n\": [{\"numeric\": "
		"[\">\", 0, \"<=\", 5]}]}, \"$or\": [{\"a\": [1]}, "
		"{\"s\": [{\"anything-but\": [\"x\"]}]}]}";
	json_t *pj = json_loads(pat, 0, NULL), *ev;
	relay_pattern *p = NULL;
	char out[1024] = "";

	RT_ASSERT(pj && relay_pattern_compile(&p, pj, NULL) == 0);
	ev = json_loads("{\"ip\": \"2001:db8::7\", \"o\": {\"n\": 5}, "
			"\"s\": \"y\"}", 0, NULL);
	RT_EQ_INT(relay_pattern_explain(p, ev, NOW, explain_cat, out), 1);
	RT_EQ_STR(out, "ip[1]: cidr 2001:db8::/32; o.n[0]: numeric > 0 <= 5; "
		  "$or[1].s[0]: anything-but [\"x\"]; ");
	json_decref(ev);
	ev = json_loads("{\"ip\": \"11.0.0.1\", \"o\": {\"n\": 5}, "
			"\"a\": 1}", 0, NULL);
	out[0] = '\0';
	RT_EQ_INT(relay_pattern_explain(p, ev, NOW, explain_cat, out), 0);
	RT_EQ_STR(out, "");
	json_decref(ev);
	json_decref(pj);
	relay_pattern_free(p);
}

/* relay_pattern_explain_miss() names the first condition that failed,
 * into nested maps, and each branch of an $or none of which holds. */
static void test_pattern__explain_miss(void)
{
	static const char *const pat =
		"{\"k\": [\"invoice\"], \"s\": [\"PAID\", {\"prefix\": "
		"\"REF\"}], \"o\": {\"n\": [{\"numeric\": [\">\", 100]}]}, "
		"\"$or\": [{\"a\": [1]}, {\"b\": [{\"exists\": true}]}]}";
	json_t *pj = json_loads(pat, 0, NULL), *ev;
	relay_pattern *p = NULL;
	char out[1024] = "";

	RT_ASSERT(pj && relay_pattern_compile(&p, pj, NULL) == 0);
	/* the first failure in pattern order only */
	ev = json_loads("{\"k\": \"invoice\", \"s\": \"PENDING\"}", 0,
			NULL);
	RT_EQ_INT(relay_pattern_explain_miss(p, ev, NOW, explain_cat, out), 0);
	RT_EQ_STR(out, "s: got \"PENDING\"; wanted \"PAID\" or prefix "
		  "\"REF\"; ");
	json_decref(ev);
	/* into the nested map */
	ev = json_loads("{\"k\": \"invoice\", \"s\": \"PAID\", "
			"\"o\": {\"n\": 5}}", 0, NULL);
	out[0] = '\0';
	RT_EQ_INT(relay_pattern_explain_miss(p, ev, NOW, explain_cat, out), 0);
	RT_EQ_STR(out, "o.n: got 5; wanted numeric > 100; ");
	json_decref(ev);
	/* a missing field, then every $or branch */
	ev = json_loads("{\"s\": \"REFUND\"}", 0, NULL);
	out[0] = '\0';
	RT_EQ_INT(relay_pattern_explain_miss(p, ev, NOW, explain_cat, out), 0);
	RT_EQ_STR(out, "k: got missing; wanted \"invoice\"; ");
	json_decref(ev);
	ev = json_loads("{\"k\": \"invoice\", \"s\": \"PAID\", "
			"\"o\": {\"n\": 500}, \"a\": [1]}", 0, NULL);
	out[0] = '\0';
	RT_EQ_INT(relay_pattern_explain_miss(p, ev, NOW, explain_cat, out), 0);
	RT_EQ_STR(out, "$or[0].a: got an array of 1; wanted 1; $or[1].b: got "
		  "missing; wanted exists true; ");
	json_decref(ev);
	/* a match: nothing said, 1 */
	ev = json_loads("{\"k\": \"invoice\", \"s\": \"PAID\", "
			"\"o\": {\"n\": 500}, \"b\": null}", 0, NULL);
	out[0] = '\0';
	RT_EQ_INT(relay_pattern_explain_miss(p, ev, NOW, explain_cat, out), 1);
	RT_EQ_STR(out, "");
	RT_EQ_INT(relay_pattern_explain_miss(p, ev, NOW, NULL, NULL), 1);
	json_decref(ev);
	json_decref(pj);
	relay_pattern_free(p);
}

static const rt_case cases[] = {
	RT_CASE(test_pattern__explain),
	RT_CASE(test_pattern__explain_miss),
	RT_CASE(test_pattern__cases_syntax),
	RT_CASE(test_pattern__cases_literals),
	RT_CASE(test_pattern__cases_operators),
	RT_CASE(test_pattern__cases_comparison),
	RT_CASE(test_pattern__cases_combining),
	RT_CASE(test_pattern__invalid),
	RT_CASE(test_pattern__cases_eventbridge),
	RT_CASE(test_pattern__invalid_eventbridge),
	RT_CASE(test_pattern__doc),
	RT_CASE(test_pattern__depth_bound),
	RT_CASE(test_pattern__marks),
	RT_CASE(test_pattern__yaml_numbers),
	RT_CASE(test_pattern__rfc3339),
	RT_CASE(test_pattern__now_parse),
	RT_CASE(test_pattern__json_number),
	RT_CASE(test_pattern__api),
};

int main(int argc, char **argv)
{
	return rt_main(argc, argv, cases, RT_NCASES(cases));
}
