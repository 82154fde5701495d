/*
 * test_pattern_diff.c - the match paths against each other and against
 * the reference matcher of tests/bench/gen_corpus.py: a seeded
 * differential test of relay_pattern_match(), the raw relay_matcher_match() and
 * relay_matcher_match_json(); gen_corpus.py's expected files for all 16
 * sets; no steady-state allocation; every allocation failure.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "pattern_int.h"
#include "ruleset_int.h"
#include "relay_config.h"
#include "relaytest.h"
#include "pt_rules.h"
#include "rt_oom.h"

#define NOW 1767268800000LL /* 2026-01-01T12:00:00Z */

/* ------------------------------------------------------- differential */

static uint64_t rng_state;

static uint32_t rnd(uint32_t n)
{
	rng_state = rng_state * 6364136223846793005ULL +
		    1442695040888963407ULL;
	return (uint32_t)(rng_state >> 33) % n;
}

typedef struct sbuf {
	char *p;
	size_t n, cap;
} sbuf;

static void put(sbuf *b, const char *s)
{
	size_t l = strlen(s);

	if (b->n + l + 1 > b->cap) {
		b->cap = (b->n + l + 1) * 2;
		b->p = realloc(b->p, b->cap);
		if (!b->p)
			abort();
	}
	memcpy(b->p + b->n, s, l + 1);
	b->n += l;
}

static const char *const keys[] = { "a", "b", "c" };
/* strings as JSON texts; some escaped forms of the same values */
static const char *const strs[] = {
	"\"\"", "\"x\"", "\"xy\"", "\"yx\"", "\"\\u0078\"", "\"x\\u0079\"",
	"\"\\u00e9\"", "\"\xc3\xa9\"", "\"a\\\"b\"",
	"\"2026-01-01T11:56:00Z\"", "\"2026-01-01T11:54:00Z\"",
	"\"2026-01-01T13:56:00+02:00\"", "\"2026-01-01T12:00:00.5Z\"",
	"\"2026-01-01T12:10:00Z\"", "\"2026-01-01T25:00:00Z\"",
};
static const char *const nums[] = {
	"0", "-0", "1", "1.0", "-1", "70", "7e1", "70.5", "1e3", "0.1",
	"1000", "9.99", "10",
};
static const char *const pstrs[] = { "\"\"", "\"x\"", "\"y\"", "\"xy\"",
				     "\"\\u00e9\"", "\"a\\\"b\"" };
static const char *const pnums[] = { "0", "1", "70", "70.5", "10", "1000",
				     "-1" };
static const char *const nows[] = { "\"now()\"", "\"now()-5m\"",
				    "\"now()+10m\"", "\"now()-1h30m\"" };
static const char *const ops[] = { "gt", "gte", "lt", "lte" };

static void gen_value(sbuf *b, int depth)
{
	uint32_t k = rnd(depth > 2 ? 6 : 9), i, n;

	switch (k) {
	case 0: case 1: put(b, strs[rnd(RELAY__ARRAY_SIZE(strs))]); break;
	case 2: case 3: put(b, nums[rnd(RELAY__ARRAY_SIZE(nums))]); break;
	case 4: put(b, rnd(2) ? "true" : "false"); break;
	case 5: put(b, "null"); break;
	case 6:
		put(b, "[");
		for (i = 0, n = rnd(3); i < n; i++) {
			if (i)
				put(b, ",");
			gen_value(b, depth + 1);
		}
		put(b, "]");
		break;
	default:
		put(b, "{");
		for (i = 0, n = rnd(4); i < n; i++) {
			put(b, i ? ", \"" : "\"");
			put(b, keys[rnd(3)]);
			put(b, "\" : ");
			gen_value(b, depth + 1);
		}
		put(b, "}");
		break;
	}
}

static void gen_map(sbuf *b, int depth);

static void gen_alt(sbuf *b, int depth)
{
	uint32_t k = rnd(depth > 2 ? 9 : 11);
	const char *op;

	switch (k) {
	case 0: put(b, pstrs[rnd(RELAY__ARRAY_SIZE(pstrs))]); break;
	case 1: put(b, pnums[rnd(RELAY__ARRAY_SIZE(pnums))]); break;
	case 2:
		put(b, rnd(3) ? (rnd(2) ? "true" : "false") : "null");
		break;
	case 3: case 4:
		put(b, rnd(2) ? "{\"prefix\": " : "{\"suffix\": ");
		put(b, pstrs[rnd(RELAY__ARRAY_SIZE(pstrs))]);
		put(b, "}");
		break;
	case 5: case 6:
		put(b, rnd(2) ? "{\"exists\": true}" : "{\"exists\": false}");
		break;
	case 7: case 8:
		op = ops[rnd(4)];
		put(b, "{\"");
		put(b, op);
		put(b, "\": ");
		put(b, rnd(2) ? pnums[rnd(RELAY__ARRAY_SIZE(pnums))] :
			nows[rnd(RELAY__ARRAY_SIZE(nows))]);
		put(b, "}");
		break;
	default:
		gen_map(b, depth + 1);
		break;
	}
}

static void gen_map(sbuf *b, int depth)
{
	uint32_t i, j, n = 1 + rnd(2), na, used = 0, k;

	put(b, "{");
	for (i = 0; i < n; i++) {
		do
			k = rnd(3);
		while (used & (1u << k));
		used |= 1u << k;
		put(b, i ? ", \"" : "\"");
		put(b, keys[k]);
		put(b, "\": ");
		if (depth < 3 && !rnd(6)) {
			gen_map(b, depth + 1); /* bare map shorthand */
			continue;
		}
		put(b, "[");
		for (j = 0, na = 1 + rnd(3); j < na; j++) {
			if (j)
				put(b, ", ");
			gen_alt(b, depth);
		}
		put(b, "]");
	}
	put(b, "}");
}

#define DIFF_RULESETS 60
#define DIFF_RULES 24
#define DIFF_EVENTS 80

/*
 * Random patterns x random events (fixed seed): for every rule and event,
 * relay_pattern_match() on the jansson decode, the raw matcher on the text
 * and relay_matcher_match_json() on the decode must agree. Events reuse a
 * small key set so that paths collide, and may repeat keys.
 */
static void test_pattern__differential(void)
{
	relay_pattern *p[DIFF_RULES];
	sbuf b = { 0 };
	size_t r, i, e, n, n2, pairs = 0, matches = 0;
	const uint32_t *ids;
	uint32_t raw[DIFF_RULES];

	rng_state = 20240601;
	for (r = 0; r < DIFF_RULESETS; r++) {
		relay_ruleset *rs = NULL;
		relay_matcher *m = NULL;

		RT_ASSERT(relay_ruleset_new(&rs) == 0);
		for (i = 0; i < DIFF_RULES; i++) {
			relay_error err;
			json_t *j;

			b.n = 0;
			gen_map(&b, 0);
			j = json_loads(b.p, 0, NULL);
			RT_ASSERT(j);
			if (relay_pattern_compile(&p[i], j, &err))
				RT_FAILF("%s: %s", b.p, err.text);
			json_decref(j);
			RT_ASSERT(relay_ruleset_add(rs, p[i], NULL) == 0);
		}
		RT_ASSERT(relay_ruleset_build(rs) == 0);
		RT_ASSERT(relay_matcher_new(&m, rs) == 0);
		for (e = 0; e < DIFF_EVENTS; e++) {
			json_t *ev;

			b.n = 0;
			do {
				b.n = 0;
				gen_value(&b, 0);
			} while (b.p[0] != '{');
			ev = json_loads(b.p, 0, NULL);
			RT_ASSERT(ev);
			RT_EQ_INT(relay_matcher_match(m, b.p, b.n, NOW, &ids,
						      &n), 0);
			memcpy(raw, ids, n * sizeof(*ids));
			RT_EQ_INT(relay_matcher_match_json(m, ev, NOW, &ids,
							   &n2), 0);
			if (n != n2 || memcmp(raw, ids, n * sizeof(*ids)))
				RT_FAILF("raw/json_t disagree on %s", b.p);
			for (i = 0, n2 = 0; i < DIFF_RULES; i++) {
				int want = relay_pattern_match(p[i], ev, NOW);
				int got = n2 < n && raw[n2] == i;

				n2 += (size_t)got;
				matches += (size_t)want;
				pairs++;
				if (want != got)
					RT_FAILF("rule %zu on %s: raw %d, "
						 "reference %d", i, b.p, got,
						 want);
			}
			json_decref(ev);
		}
		relay_matcher_free(m);
		relay_ruleset_free(rs);
		for (i = 0; i < DIFF_RULES; i++)
			relay_pattern_free(p[i]);
	}
	printf("# %zu rule x event pairs, %zu matches\n", pairs, matches);
	/* the generator must exercise both outcomes substantially */
	RT_CHECK(matches > pairs / 50 && matches < pairs / 2);
	free(b.p);
}

/* ------------------------------------------------------- thresholds */

/* Compare the raw and json_t paths and the reference on one event. */
static size_t check_event(relay_matcher *m, relay_pattern **p, size_t np,
			  const char *text)
{
	const uint32_t *ids;
	uint32_t raw[512];
	size_t n, n2, i, hits = 0;
	json_t *ev = json_loads(text, JSON_ALLOW_NUL, NULL);

	RT_ASSERT(ev && np <= RELAY__ARRAY_SIZE(raw));
	RT_EQ_INT(relay_matcher_match(m, text, strlen(text), NOW, &ids, &n),
		  0);
	memcpy(raw, ids, n * sizeof(*ids));
	RT_EQ_INT(relay_matcher_match_json(m, ev, NOW, &ids, &n2), 0);
	if (n != n2 || memcmp(raw, ids, n * sizeof(*ids)))
		RT_FAILF("raw/json_t disagree on %s", text);
	for (i = 0, n2 = 0; i < np; i++) {
		int want = relay_pattern_match(p[i], ev, NOW);
		int got = n2 < n && raw[n2] == i;

		n2 += (size_t)got;
		hits += (size_t)want;
		if (want != got)
			RT_FAILF("rule %zu on %s: raw %d, reference %d", i,
				 text, got, want);
	}
	json_decref(ev);
	return hits;
}

/* An RFC 3339 text of NOW + @ms (ms >= -NOW), with @sub appended to the
 * milliseconds ("" or e.g. "1": 0.1 ms later). */
static void iso_at(char *out, size_t len, int64_t ms, const char *sub)
{
	time_t t = (time_t)((NOW + ms) / 1000);
	struct tm tm;

	gmtime_r(&t, &tm);
	snprintf(out, len, "\"%04d-%02d-%02dT%02d:%02d:%02d.%03d%sZ\"",
		 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
		 tm.tm_min, tm.tm_sec, (int)((NOW + ms) % 1000), sub);
}

#define THR_NUM 21   /* thresholds -5, -4.5, ... 5 */
#define THR_TIME 13  /* now()-120m ... now()+120m, every 20m */

/*
 * Many thresholds at one path, every comparison, each distinct (thresh.c):
 * rules anchored elsewhere (their threshold leaves are lazy: settled from
 * the kept value when the rule is evaluated) and rules anchored on their
 * threshold (sorted, searched, fired while scanning), an anything-but
 * over numbers (its inner tests fire its hit leaf), values on, between
 * and beyond every threshold and of other types, instants on, just after
 * and just before every cutoff, and repeated keys (the last value wins:
 * a kept value of an earlier one must be forgotten). Raw, json_t and
 * reference matchers must agree on every rule.
 */
/* @in (a quoted RFC 3339 text ending in Z) with the Z written \u005a. */
static void esc_z(char *out, size_t len, const char *in)
{
	size_t n = strlen(in);

	RT_ASSERT(n >= 2 && in[n - 2] == 'Z' && n + 6 < len);
	memcpy(out, in, n - 2);
	memcpy(out + n - 2, "\\u005a\"", 8);
}

static void test_pattern__thresholds(void)
{
	static relay_pattern *p[4 * THR_NUM + 4 * THR_TIME + 2 + 12];
	static const char *const vals[] = {
		"-1e308", "-6", "-0", "0", "0.25", "1e308", "4.75", "5",
		"-4.5", "2", "2.5", "3.0", "-3.25", "1e-300", "\"2\"", "null",
	};
	char text[512], a[64], b[64], ae[80];
	relay_ruleset *rs;
	relay_matcher *m;
	size_t np = 0, i, j, k, hits = 0, events = 0;
	relay_error err;
	json_t *jp;

	RT_ASSERT(relay_ruleset_new(&rs) == 0);
	for (i = 0; i < 4; i++)
		for (j = 0; j < THR_NUM; j++) {
			/* even: anchored on k; odd: on the threshold */
			snprintf(text, sizeof(text),
				 "{%s\"n\": [{\"%s\": %g}]}",
				 j % 2 ? "" : "\"k\": [\"a\"], ", ops[i],
				 -5 + 0.5 * (double)j);
			jp = json_loads(text, 0, NULL);
			RT_ASSERT(jp);
			if (relay_pattern_compile(&p[np], jp, &err))
				RT_FAILF("%s: %s", text, err.text);
			json_decref(jp);
			RT_ASSERT(relay_ruleset_add(rs, p[np++], NULL) == 0);
		}
	for (i = 0; i < 4; i++)
		for (j = 0; j < THR_TIME; j++) {
			int min = -120 + 20 * (int)j;

			snprintf(text, sizeof(text),
				 "{%s\"t\": [{\"%s\": \"now()%s%dm\"}]}",
				 j % 2 ? "\"k\": [\"a\"], " : "", ops[i],
				 min < 0 ? "-" : "+", min < 0 ? -min : min);
			if (!min)
				snprintf(text, sizeof(text),
					 "{\"t\": [{\"%s\": \"now()\"}]}",
					 ops[i]);
			jp = json_loads(text, 0, NULL);
			RT_ASSERT(jp);
			if (relay_pattern_compile(&p[np], jp, &err))
				RT_FAILF("%s: %s", text, err.text);
			json_decref(jp);
			RT_ASSERT(relay_ruleset_add(rs, p[np++], NULL) == 0);
		}
	jp = json_loads("{\"n\": [{\"anything-but\": [1, -2, 2.5]}]}", 0,
			NULL);
	RT_ASSERT(jp && !relay_pattern_compile(&p[np], jp, &err));
	json_decref(jp);
	RT_ASSERT(relay_ruleset_add(rs, p[np++], NULL) == 0);
	jp = json_loads("{\"k\": [\"a\"], \"n\": [{\"numeric\": "
			"[\">\", -1, \"<=\", 2.5]}, 4.75]}", 0, NULL);
	RT_ASSERT(jp && !relay_pattern_compile(&p[np], jp, &err));
	json_decref(jp);
	RT_ASSERT(relay_ruleset_add(rs, p[np++], NULL) == 0);
	/* u: lazy time thresholds only (the value is kept unparsed) */
	for (i = 0; i < 4; i++)
		for (j = 0; j < 3; j++) {
			snprintf(text, sizeof(text),
				 "{\"k\": [\"a\"], \"u\": [{\"%s\": "
				 "\"now()-%zum\"}]}", ops[i], 40 * j + 20);
			jp = json_loads(text, 0, NULL);
			RT_ASSERT(jp);
			if (relay_pattern_compile(&p[np], jp, &err))
				RT_FAILF("%s: %s", text, err.text);
			json_decref(jp);
			RT_ASSERT(relay_ruleset_add(rs, p[np++], NULL) == 0);
		}
	RT_ASSERT(relay_ruleset_build(rs) == 0);
	RT_ASSERT(relay_matcher_new(&m, rs) == 0);

	for (i = 0; i < RELAY__ARRAY_SIZE(vals); i++)
		for (j = 0; j < RELAY__ARRAY_SIZE(vals); j++) {
			snprintf(text, sizeof(text), "{\"k\": \"a\", \"n\": %s}",
				 vals[i]);
			hits += check_event(m, p, np, text);
			/* the last occurrence wins: the first value's bulk
			 * ranges must be forgotten */
			snprintf(text, sizeof(text),
				 "{\"n\": %s, \"k\": \"a\", \"n\": %s}",
				 vals[i], vals[j]);
			hits += check_event(m, p, np, text);
			snprintf(text, sizeof(text),
				 "{\"n\": %s, \"n\": %s, \"k\": \"b\", "
				 "\"n\": %s}", vals[j], vals[i], vals[j]);
			hits += check_event(m, p, np, text);
			events += 3;
		}
	for (i = 0; i < 2 * THR_TIME + 2; i++) {
		int64_t at = (-130 + 10 * (int64_t)i) * 60000;

		for (k = 0; k < 3; k++) {
			/* on the cutoff, 0.1 ms after, 1 ms before */
			iso_at(a, sizeof(a), at - (k == 2), k == 1 ? "1" : "");
			iso_at(b, sizeof(b), at + 60000 * (int64_t)k, "");
			snprintf(text, sizeof(text),
				 "{\"k\": \"a\", \"t\": %s}", a);
			hits += check_event(m, p, np, text);
			snprintf(text, sizeof(text),
				 "{\"t\": %s, \"k\": \"a\", \"t\": %s}", b, a);
			hits += check_event(m, p, np, text);
			snprintf(text, sizeof(text),
				 "{\"t\": %s, \"t\": %s}", a, b);
			hits += check_event(m, p, np, text);
			/* escaped: unescaped into the scratch buffer, which
			 * the escaped key after it reuses */
			esc_z(ae, sizeof(ae), a);
			snprintf(text, sizeof(text),
				 "{\"t\": %s, \"\\u006b\": \"a\"}", ae);
			hits += check_event(m, p, np, text);
			snprintf(text, sizeof(text),
				 "{\"t\": %s, \"k\": \"a\", \"t\": %s, "
				 "\"\\u0078\": \"\\u0079\"}", b, ae);
			hits += check_event(m, p, np, text);
			/* u: kept unparsed, or parsed at once when escaped
			 * (a later value of the key must replace it) */
			snprintf(text, sizeof(text),
				 "{\"k\": \"a\", \"u\": %s}", a);
			hits += check_event(m, p, np, text);
			snprintf(text, sizeof(text),
				 "{\"u\": %s, \"\\u006b\": \"a\"}", ae);
			hits += check_event(m, p, np, text);
			snprintf(text, sizeof(text),
				 "{\"u\": %s, \"k\": \"a\", \"u\": %s}", ae,
				 b);
			hits += check_event(m, p, np, text);
			snprintf(text, sizeof(text),
				 "{\"u\": %s, \"u\": %s, \"\\u006b\": "
				 "\"a\"}", b, ae);
			hits += check_event(m, p, np, text);
			events += 9;
		}
	}
	printf("# %zu events x %zu rules, %zu matches\n", events, np, hits);
	RT_CHECK(hits > events * np / 10 && hits < events * np * 9 / 10);
	relay_matcher_free(m);
	relay_ruleset_free(rs);
	for (i = 0; i < np; i++)
		relay_pattern_free(p[i]);
}

/*
 * Wildcards and anything-but lists, random, against the reference: the
 * ruleset splits a wildcard into a literal head and tail compared as
 * bytes and a middle left to the wildcard matcher (relay__wild_split),
 * and writes a short anything-but as NOTs of its tests but a long one
 * (more than RELAY__NOT_INLINE tests) through a hit leaf. Patterns and
 * values are drawn from a, b, '*', "\*" and "\\" (so escapes sit at the
 * ends and in the middle); events repeat the key (the last value wins).
 */
#define WS_RULES 160

static void wild_text(char *o, size_t room, int pattern)
{
	static const char *const pel[] = { "a", "b", "*", "\\*", "\\\\" };
	static const char *const vel[] = { "a", "b", "*", "\\" };
	size_t n = rnd(8), i, at = 0, l;
	int star = 0;

	for (i = 0; i < n && at + 3 < room; i++) {
		uint32_t k = rnd(pattern ? 5 : 4);
		const char *e = pattern ? pel[k] : vel[k];

		if (pattern && k == 2 && star)
			continue; /* no "**" */
		star = pattern && k == 2;
		l = strlen(e);
		memcpy(o + at, e, l);
		at += l;
	}
	o[at] = '\0';
}

static void test_pattern__wild_split(void)
{
	static relay_pattern *p[WS_RULES];
	char w[4][32], *text;
	relay_ruleset *rs;
	relay_matcher *m;
	relay_error err;
	size_t np = 0, i, k, hits = 0, events = 0;
	json_t *jp, *list;

	rng_state = 20261205;
	RT_ASSERT(relay_ruleset_new(&rs) == 0);
	while (np < WS_RULES) {
		k = np % 4;
		list = json_array();
		if (k < 2) {
			wild_text(w[0], sizeof(w[0]), 1);
			if (k)
				jp = json_pack("{s:[{s:{s:s}}]}", "p",
					       "anything-but", "wildcard",
					       w[0]);
			else
				jp = json_pack("{s:[{s:s}]}", "p", "wildcard",
					       w[0]);
		} else {
			size_t nv = 1 + rnd(k == 2 ? 3 : 14);

			for (i = 0; i < nv; i++) {
				wild_text(w[0], sizeof(w[0]), 0);
				json_array_append_new(list, json_string(w[0]));
			}
			jp = json_pack("{s:[{s:O}]}", "p", "anything-but",
				       list);
		}
		json_decref(list);
		RT_ASSERT(jp);
		if (relay_pattern_compile(&p[np], jp, &err) == 0)
			RT_ASSERT(relay_ruleset_add(rs, p[np++], NULL) == 0);
		json_decref(jp);
	}
	RT_ASSERT(relay_ruleset_build(rs) == 0);
	RT_ASSERT(relay_matcher_new(&m, rs) == 0);
	for (i = 0; i < 600; i++) {
		json_t *a, *b;
		char *ta, *tb;

		wild_text(w[1], sizeof(w[1]), 0);
		wild_text(w[2], sizeof(w[2]), 0);
		a = json_string(w[1]);
		b = json_string(w[2]);
		ta = json_dumps(a, JSON_ENCODE_ANY);
		tb = json_dumps(b, JSON_ENCODE_ANY);
		RT_ASSERT(ta && tb);
		text = malloc(strlen(ta) + strlen(tb) + 32);
		RT_ASSERT(text);
		sprintf(text, "{\"p\": %s}", ta);
		hits += check_event(m, p, np, text);
		sprintf(text, "{\"p\": %s, \"q\": 1, \"p\": %s}", tb, ta);
		hits += check_event(m, p, np, text);
		events += 2;
		free(text);
		free(ta);
		free(tb);
		json_decref(a);
		json_decref(b);
	}
	printf("# %zu events x %zu rules, %zu matches\n", events, np, hits);
	RT_CHECK(hits > events * np / 20 && hits < events * np * 19 / 20);
	relay_matcher_free(m);
	relay_ruleset_free(rs);
	for (i = 0; i < np; i++)
		relay_pattern_free(p[i]);
}

/*
 * Operators that anchor no rule are lazy (thresh.c): a string is kept at
 * their node and tested only when a rule that reads them is evaluated,
 * once per event. Against the reference: values plain and escaped (an
 * escaped value lives in the scratch buffer, so its operators are tested
 * at once), keys repeated (the last value wins, also when it is no
 * string), addresses of both families, operators inside $or (also as a
 * flat clause: an OR of a field's alternatives and another field) and
 * inside anything-but, rules that fail before their operators are read.
 */
static void test_pattern__lazy_operators(void)
{
	static const char *const pats[] = {
		"{\"t\": [\"x\"], \"p\": [{\"wildcard\": \"/srv/*/logs/*\"}]}",
		"{\"t\": [\"x\"], \"p\": [{\"wildcard\": \"*.gz\"}], "
		"\"k\": [\"a\"]}",
		"{\"t\": [\"x\"], \"ip\": [{\"cidr\": \"10.0.0.0/8\"}, "
		"{\"cidr\": \"2001:db8::/32\"}]}",
		"{\"t\": [\"y\"], \"ip\": [{\"cidr\": \"10.1.0.0/16\"}]}",
		"{\"t\": [\"x\", \"y\"], \"n\": [{\"prefix\": "
		"{\"equals-ignore-case\": \"ab\"}}]}",
		"{\"t\": [\"x\"], \"n\": [{\"suffix\": "
		"{\"equals-ignore-case\": \"YZ\"}}], \"p\": "
		"[{\"wildcard\": \"/srv/*\"}]}",
		"{\"t\": [\"y\"], \"$or\": [{\"p\": [{\"wildcard\": "
		"\"*/tmp/*\"}]}, {\"ip\": [{\"cidr\": \"192.168.0.0/16\"}]}]}",
		"{\"t\": [\"x\"], \"p\": [{\"anything-but\": {\"wildcard\": "
		"\"*/tmp/x*\"}}]}",
		"{\"p\": [{\"wildcard\": \"/srv/*/tmp/*\"}]}",
		/* literals enough at t that one is a better anchor */
		"{\"t\": [\"a\", \"b\", \"c\", \"d\", \"e\", \"f\"]}",
		"{\"t\": [\"x\", \"z\"], \"n\": [{\"equals-ignore-case\": "
		"\"abXyz\"}, {\"equals-ignore-case\": \"ABYZ\"}]}",
		/* an OR of ORs: one flat clause */
		"{\"t\": [\"x\"], \"$or\": [{\"p\": [{\"wildcard\": \"*.gz\"}, "
		"{\"prefix\": \"/x\"}]}, {\"n\": [\"xyz\", \"abyz\"]}]}",
	};
	static const char *const pv[] = {
		"\"/srv/a/logs/b.gz\"", "\"\\/srv\\/a\\/logs\\/b\"",
		"\"/srv/a/tmp/c\"", "\"\\u002fsrv/q/tmp/x.gz\"", "\"/x\"", "7",
		"null",
	};
	static const char *const iv[] = {
		"\"10.1.2.3\"", "\"10.2.0.1\"", "\"2001:db8::1\"",
		"\"192.168.7.7\"", "\"\\u0031\\u0030.1.0.9\"", "\"x\"", "8",
	};
	static const char *const nv[] = {
		"\"ABxYZ\"", "\"abyz\"", "\"a\\u0062c\"", "\"xyz\"", "1",
	};
	static const char *const tv[] = { "\"x\"", "\"y\"", "\"z\"" };
	relay_ruleset *rs = NULL;
	relay_matcher *m = NULL;
	relay_pattern *p[RELAY__ARRAY_SIZE(pats)];
	size_t np = RELAY__ARRAY_SIZE(pats), i, j, k, t, nlazy = 0;
	size_t events = 0, hits = 0;
	char text[512];

	pt_rules(pats, np, p, &rs, &m);
	for (i = 0; i < rs->nnodes; i++)
		nlazy += rs->nodes[i].nxlazy;
	/* every operator but the wildcard that anchors its rule (the one
	 * inside anything-but is read negated, settled all the same) */
	RT_EQ_INT(nlazy, 13);
	for (i = 0; i < np; i++)
		if (rs->rules[i].id == np - 1)
			RT_CHECK(rs->rules[i].cnf_start != RELAY__NONE);
	for (t = 0; t < RELAY__ARRAY_SIZE(tv); t++)
		for (i = 0; i < RELAY__ARRAY_SIZE(pv); i++)
			for (j = 0; j < RELAY__ARRAY_SIZE(iv); j++) {
				k = (i + j) % RELAY__ARRAY_SIZE(nv);
				snprintf(text, sizeof(text),
					 "{\"t\": %s, \"p\": %s, \"ip\": %s, "
					 "\"n\": %s, \"k\": \"a\"}", tv[t],
					 pv[i], iv[j], nv[k]);
				hits += check_event(m, p, np, text);
				/* repeated: the last value wins */
				snprintf(text, sizeof(text),
					 "{\"p\": %s, \"ip\": %s, \"t\": %s, "
					 "\"p\": %s, \"n\": %s, \"ip\": %s}",
					 pv[i], iv[j], tv[t],
					 pv[(i + 1) % RELAY__ARRAY_SIZE(pv)],
					 nv[k], iv[(j + 3) % RELAY__ARRAY_SIZE(iv)]);
				hits += check_event(m, p, np, text);
				snprintf(text, sizeof(text),
					 "{\"ip\": %s, \"p\": %s, \"ip\": %s, "
					 "\"n\": %s, \"n\": %s, \"t\": %s}",
					 iv[(j + 1) % RELAY__ARRAY_SIZE(iv)],
					 pv[i], iv[j], nv[(k + 2) %
					 RELAY__ARRAY_SIZE(nv)], nv[k], tv[t]);
				hits += check_event(m, p, np, text);
				events += 3;
			}
	printf("# %zu events x %zu rules, %zu matches\n", events, np, hits);
	RT_CHECK(hits > events / 2);
	pt_rules_free(p, np, rs, m);
}

/*
 * An AND inside an OR (a $or branch of two fields, a map among a field's
 * alternatives, anything-but) is distributed into flat clauses while the
 * rule stays within 16 clauses (ruleset_plan.c, CNF_MAX_CLAUSES); past
 * that it stays a program. Both kinds against the reference, with lazy
 * operators and thresholds, negations (exists false, anything-but) and
 * absent fields in the distributed clauses.
 */
static void test_pattern__distributed_cnf(void)
{
	static const char *const pats[] = {
		"{\"t\": [\"x\"], \"$or\": [{\"a\": [\"1\"], \"b\": [\"2\"]}, "
		"{\"c\": [\"3\"]}]}",
		"{\"o\": [{\"p\": [\"x\"], \"q\": [{\"gt\": 1}]}, {\"r\": [\"y\"]}]}",
		"{\"t\": [\"y\"], \"$or\": [{\"a\": [{\"anything-but\": [\"1\"]}], "
		"\"c\": [{\"exists\": false}]}, {\"b\": [{\"wildcard\": \"2*\"}], "
		"\"w\": [{\"gt\": \"now()-5m\"}]}]}",
		"{\"$or\": [{\"a\": [\"1\"], \"b\": [{\"numeric\": [\">\", 0, \"<\", 3]}]}, "
		"{\"c\": [\"3\"], \"ip\": [{\"cidr\": \"10.0.0.0/8\"}]}, "
		"{\"t\": [\"x\"]}]}",
		/* twenty clauses, none distributed: flat */
		"{\"t\": [\"x\"], \"a\": [\"1\"], \"f2\": [1], \"f3\": [1], "
		"\"f4\": [1], \"f5\": [1], \"f6\": [1], \"f7\": [1], \"f8\": [1], "
		"\"f9\": [1], \"f10\": [1], \"f11\": [1], \"f12\": [1], "
		"\"f13\": [1], \"f14\": [1], \"f15\": [1], \"f16\": [1], "
		"\"f17\": [1], \"f18\": [1], \"f19\": [{\"exists\": false}]}",
		/* 2^5 = 32 clauses: a program */
		"{\"$or\": [{\"a\": [\"1\"], \"b\": [\"2\"]}, {\"c\": [\"3\"], "
		"\"t\": [\"x\"]}, {\"a\": [\"2\"], \"c\": [\"4\"]}, {\"b\": [\"1\"], "
		"\"t\": [\"y\"]}, {\"w\": [{\"exists\": true}], \"ip\": "
		"[{\"cidr\": \"10.1.0.0/16\"}]}]}",
	};
	static const char *const tv[] = { "\"x\"", "\"y\"", NULL };
	static const char *const av[] = { "\"1\"", "\"2\"", NULL };
	static const char *const bv[] = { "\"2\"", "\"2b\"", "\"1\"", "1", "2.5",
					  NULL };
	static const char *const cv[] = { "\"3\"", "\"4\"", NULL };
	static const char *const ov[] = {
		"{\"p\": \"x\", \"q\": 2}", "{\"p\": \"x\", \"q\": 1}",
		"{\"r\": \"y\"}", "{\"p\": \"z\", \"r\": \"y\"}", NULL,
	};
	static const char *const wv[] = {
		"\"2026-01-01T11:58:00Z\"", "\"2026-01-01T11:50:00Z\"", NULL,
	};
	static const char *const iv[] = { "\"10.1.2.3\"", "\"11.0.0.1\"", NULL };
	const char *const *vals[] = { tv, av, bv, cv, ov, wv, iv };
	static const char *const fields[] = { "t", "a", "b", "c", "o", "w", "ip" };
	relay_ruleset *rs = NULL;
	relay_matcher *m = NULL;
	relay_pattern *p[RELAY__ARRAY_SIZE(pats)];
	size_t np = RELAY__ARRAY_SIZE(pats), i, k, e, events = 0, hits = 0;
	char text[512];

	pt_rules(pats, np, p, &rs, &m);
	for (i = 0; i < np; i++) {
		bool flat = rs->rules[i].cnf_start != RELAY__NONE;

		if (flat != (rs->rules[i].id != np - 1))
			RT_FAILF("rule %u: %s", rs->rules[i].id,
				 flat ? "flat" : "a program");
	}
	/* every combination, each field's NULL meaning absent */
	for (e = 0;; e++) {
		size_t at = 0, x = e, nv;
		int any = 0;

		at += (size_t)snprintf(text, sizeof(text), "{");
		for (k = 0; k < RELAY__ARRAY_SIZE(fields); k++) {
			for (nv = 0; vals[k][nv]; nv++)
				;
			nv++;  /* absent */
			i = x % nv;
			x /= nv;
			if (!vals[k][i])
				continue;
			at += (size_t)snprintf(text + at, sizeof(text) - at,
					       "%s\"%s\": %s", any ? ", " : "",
					       fields[k], vals[k][i]);
			any = 1;
		}
		if (x)
			break;  /* every combination done */
		snprintf(text + at, sizeof(text) - at, "}");
		hits += check_event(m, p, np, text);
		events++;
	}
	printf("# %zu events x %zu rules, %zu matches\n", events, np, hits);
	RT_CHECK(hits > events / 4);
	pt_rules_free(p, np, rs, m);
}

/*
 * CIDRs of every prefix length, random, against the reference: the
 * ruleset tests an IPv4 network as a masked 32-bit compare. Addresses
 * are drawn near the networks (one of the network's bits flipped), with
 * IPv6 networks and IPv4-mapped IPv6 addresses among them.
 */
#define CIDR_RULES 120

static void test_pattern__cidr_words(void)
{
	static relay_pattern *p[CIDR_RULES];
	static uint32_t nets[CIDR_RULES];
	char text[160];
	relay_ruleset *rs;
	relay_matcher *m;
	relay_error err;
	size_t np = 0, i, hits = 0, events = 0;
	json_t *jp;

	rng_state = 20261206;
	RT_ASSERT(relay_ruleset_new(&rs) == 0);
	for (i = 0; i < CIDR_RULES; i++) {
		uint32_t bits = (uint32_t)(i % 33), a = rnd(0x10000) << 16 |
			rnd(0x10000);

		a &= bits ? 0xffffffffu << (32 - bits) : 0;
		nets[i] = a;
		if (i % 10 == 9)
			snprintf(text, sizeof(text), "{\"ip\": [{\"cidr\": "
				 "\"2001:db8:%x::/%u\"}]}", rnd(16) << 12,
				 48 + bits % 17);
		else
			snprintf(text, sizeof(text), "{\"ip\": [{\"cidr\": "
				 "\"%u.%u.%u.%u/%u\"}]}", a >> 24,
				 a >> 16 & 255, a >> 8 & 255, a & 255, bits);
		jp = json_loads(text, 0, NULL);
		RT_ASSERT(jp);
		if (relay_pattern_compile(&p[np], jp, &err))
			RT_FAILF("%s: %s", text, err.text);
		json_decref(jp);
		RT_ASSERT(relay_ruleset_add(rs, p[np++], NULL) == 0);
	}
	RT_ASSERT(relay_ruleset_build(rs) == 0);
	RT_ASSERT(relay_matcher_new(&m, rs) == 0);
	for (i = 0; i < 3000; i++) {
		uint32_t a = nets[rnd(CIDR_RULES)];

		if (rnd(4))
			a ^= 1u << rnd(32);
		switch (rnd(8)) {
		case 0:
			snprintf(text, sizeof(text),
				 "{\"ip\": \"::ffff:%u.%u.%u.%u\"}", a >> 24,
				 a >> 16 & 255, a >> 8 & 255, a & 255);
			break;
		case 1:
			snprintf(text, sizeof(text),
				 "{\"ip\": \"2001:db8:%x::%x\"}", rnd(0x10000),
				 rnd(0x10000));
			break;
		default:
			snprintf(text, sizeof(text),
				 "{\"ip\": \"%u.%u.%u.%u\"}", a >> 24,
				 a >> 16 & 255, a >> 8 & 255, a & 255);
			break;
		}
		hits += check_event(m, p, np, text);
		events++;
	}
	printf("# %zu events x %zu rules, %zu matches\n", events, np, hits);
	RT_CHECK(hits > events && hits < events * np / 2);
	relay_matcher_free(m);
	relay_ruleset_free(rs);
	for (i = 0; i < np; i++)
		relay_pattern_free(p[i]);
}

/* ------------------------------------------------------- corpus */

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* One corpus set: every expected line against the raw matcher. */
static void check_set(const char *dir, const char *profile, int nrules,
		      char **evs, size_t nev, relay_wall_ms now)
{
	char path[512], *ptext, *etext, *line, *save = NULL;
	const char *rid[1000];
	const char *got[1000];
	relay_ruleset *rs = NULL;
	relay_matcher *m = NULL;
	json_t *pj[1000];
	size_t np = 0, i, k, n, bad = 0, total = 0;
	const uint32_t *ids;

	snprintf(path, sizeof(path), "%s/patterns-%s-%d.jsonl", dir, profile,
		 nrules);
	ptext = rt_slurp(path, NULL);
	snprintf(path, sizeof(path), "%s/expected-%s-%d.jsonl", dir, profile,
		 nrules);
	etext = rt_slurp(path, NULL);
	RT_ASSERT(ptext && etext);
	RT_ASSERT(relay_ruleset_new(&rs) == 0);
	for (line = strtok_r(ptext, "\n", &save); line && np < 1000;
	     line = strtok_r(NULL, "\n", &save)) {
		relay_pattern *p;
		relay_error err;

		pj[np] = json_loads(line, 0, NULL);
		RT_ASSERT(pj[np]);
		rid[np] = json_string_value(json_object_get(pj[np], "id"));
		if (relay_pattern_compile(&p, json_object_get(pj[np],
							      "pattern"),
					  &err)) {
			RT_FAILF("%s: %s", line, err.text);
			json_decref(pj[np]);
			continue;
		}
		RT_ASSERT(relay_ruleset_add(rs, p, NULL) == 0);
		relay_pattern_free(p);
		np++;
	}
	RT_EQ_INT(np, nrules);
	RT_ASSERT(relay_ruleset_build(rs) == 0);
	RT_ASSERT(relay_matcher_new(&m, rs) == 0);
	save = NULL;
	for (i = 0, line = strtok_r(etext, "\n", &save); line && i < nev;
	     i++, line = strtok_r(NULL, "\n", &save)) {
		json_t *want = json_loads(line, 0, NULL);
		int wrong = 0;

		RT_ASSERT(want);
		RT_EQ_INT(relay_matcher_match(m, evs[i], strlen(evs[i]), now,
					      &ids, &n), 0);
		for (k = 0; k < n; k++)
			got[k] = rid[ids[k]];
		qsort(got, n, sizeof(*got), cmp_str);
		wrong = n != json_array_size(want);
		for (k = 0; !wrong && k < n; k++)
			wrong = strcmp(got[k], json_string_value(
				json_array_get(want, k))) != 0;
		bad += (size_t)wrong;
		total += n;
		json_decref(want);
	}
	if (bad)
		RT_FAILF("%s-%d: %zu of %zu events mismatch", profile, nrules,
			 bad, i);
	printf("# %s-%d: %zu events, %zu matches, %zu mismatches\n", profile,
	       nrules, i, total, bad);
	relay_matcher_free(m);
	relay_ruleset_free(rs);
	for (i = 0; i < np; i++)
		json_decref(pj[i]);
	free(ptext);
	free(etext);
}

/*
 * The reference matcher of tests/bench/gen_corpus.py (the pattern language
 * of doc/patterns.md restated in Python) against the raw matcher, on all
 * 16 sets of a small fresh corpus (`mixed`: the EventBridge operators
 * with the seed's). RELAY_GEN_CORPUS may name another script of the same
 * interface (its `mixed` sets are checked when it writes them); skipped
 * without python3.
 */
static void test_pattern__corpus(void)
{
	static const char *profiles[] = { "common", "numeric", "full",
					  "mixed" };
	static const int sizes[] = { 1, 10, 100, 1000 };
	const char *gen = getenv("RELAY_GEN_CORPUS");
	char dir[] = "/tmp/relay-pattern-corpus-XXXXXX", cmd[1024], path[600];
	char *etext, *line, *save = NULL, *evs[300];
	relay__instant t;
	size_t nev = 0, i, j;

	if (!gen)
		gen = RELAY_SOURCE_ROOT "/tests/bench/gen_corpus.py";
	if (access(gen, R_OK) != 0)
		RT_SKIP("no gen_corpus.py (set RELAY_GEN_CORPUS)");
	if (system("command -v python3 >/dev/null 2>&1") != 0)
		RT_SKIP("no python3");
	RT_ASSERT(mkdtemp(dir));
	snprintf(cmd, sizeof(cmd), "python3 '%s' --out '%s' --events 300 "
		 "--expect 300 >/dev/null", gen, dir);
	RT_ASSERT(system(cmd) == 0);
	snprintf(path, sizeof(path), "%s/events.jsonl", dir);
	etext = rt_slurp(path, NULL);
	RT_ASSERT(etext);
	for (line = strtok_r(etext, "\n", &save); line && nev < 300;
	     line = strtok_r(NULL, "\n", &save))
		evs[nev++] = line;
	RT_EQ_INT(nev, 300);
	/* gen_corpus.py's default --now */
	RT_ASSERT(relay__rfc3339_parse("2026-01-01T12:00:00Z", 20, &t) == 0);
	snprintf(path, sizeof(path), "%s/expected-mixed-1.jsonl", dir);
	RT_CHECK(getenv("RELAY_GEN_CORPUS") || access(path, R_OK) == 0);
	for (i = 0; i < 4; i++)
		for (j = 0; j < 4; j++)
			if (i < 3 || access(path, R_OK) == 0)
				check_set(dir, profiles[i], sizes[j], evs,
					  nev, t.ms);
	free(etext);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	RT_CHECK(system(cmd) == 0);
}

/* ------------------------------------------------------- allocation */

static size_t nallocs;

static void *count_malloc(size_t n)
{
	nallocs++;
	return malloc(n);
}

static void *count_realloc(void *p, size_t n)
{
	nallocs++;
	return realloc(p, n);
}

/*
 * After warm-up (the scratch buffer grown to the longest escaped string
 * seen), matching does not allocate through librelay's allocator: not for
 * escaped keys and values, temporal or numeric leaves, duplicate keys,
 * errors or non-objects.
 */
static void test_pattern__no_alloc(void)
{
	static const char *evs[] = {
		("{\"a\":\"x\",\"b\":{\"c\":1.5e3,"
		 "\"d\":\"2026-01-01T11:59:00Z\"}}"),
		"{\"\\u0061\":\"\\u0078\",\"b\":{\"c\":-1,\"c\":7}}",
		"{\"a\":\"user_\\ud83d\\ude00\",\"z\":[1,{\"q\":null}]}",
		"{\"b\":{\"d\":\"2026-01-01T13:00:00.123456+01:00\"}}",
		"{\"a\":tru}", "[1,2]", "{\"b\":{\"e\":[]}}",
		"{\"a\":123456789012345678901234567890}",
	};
	static const char *pat =
		"{\"a\": [\"x\", {\"prefix\": \"user_\"}], "
		"\"b\": {\"c\": [{\"gt\": 100}, 7], "
		"\"d\": [{\"gt\": \"now()-5m\"}], "
		"\"e\": [{\"exists\": false}]}}";
	relay_pattern *p = NULL;
	relay_ruleset *rs = NULL;
	relay_matcher *m = NULL;
	const uint32_t *ids;
	size_t i, n, round;
	json_t *j;

	relay_set_allocator(count_malloc, count_realloc, free);
	j = json_loads(pat, 0, NULL);
	RT_ASSERT(j && relay_pattern_compile(&p, j, NULL) == 0);
	RT_ASSERT(relay_ruleset_new(&rs) == 0);
	RT_ASSERT(relay_ruleset_add(rs, p, NULL) == 0);
	RT_ASSERT(relay_ruleset_build(rs) == 0);
	RT_ASSERT(relay_matcher_new(&m, rs) == 0);
	RT_CHECK(nallocs > 0); /* the hook is in use */
	for (round = 0; round < 3; round++) {
		if (round == 1)
			nallocs = 0;
		for (i = 0; i < RELAY__ARRAY_SIZE(evs); i++)
			(void)relay_matcher_match(m, evs[i], strlen(evs[i]),
						  NOW, &ids, &n);
	}
	RT_EQ_INT(nallocs, 0);
	relay_matcher_free(m);
	relay_ruleset_free(rs);
	relay_pattern_free(p);
	json_decref(j);
	relay_set_allocator(NULL, NULL, NULL);
}

/*
 * A string that must be unescaped and cannot be (its unescape buffer
 * cannot grow) is RELAY_ENOMEM, never a parse error (which would
 * dead-letter a valid event); the same event matches once memory is back.
 */
static void test_pattern__unescape_oom(void)
{
	static const char *pats[] = { "{\"a\": [{\"prefix\": \"y\"}]}" };
	relay_ruleset *rs = NULL;
	relay_matcher *m = NULL;
	relay_pattern *p[1];
	const uint32_t *ids;
	size_t n, at, i, room = 64 * 1024;
	char *ev = malloc(room);

	RT_ASSERT(ev);
	pt_rules(pats, 1, p, &rs, &m);
	at = (size_t)snprintf(ev, room, "{\"a\":\"y");
	for (i = 0; i < 4000; i++)
		at += (size_t)snprintf(ev + at, room - at, "\\u0041");
	at += (size_t)snprintf(ev + at, room - at, "\"}");
	rt_oom_install();
	rt_oom_arm(1, 1);
	RT_EQ_INT(relay_matcher_match(m, ev, at, NOW, &ids, &n), RELAY_ENOMEM);
	RT_CHECK(rt_oom_fired());
	RT_EQ_INT(n, 0);
	RT_EQ_STR(relay_matcher_errstr(m), "out of memory");
	rt_oom_uninstall();
	RT_EQ_INT(relay_matcher_match(m, ev, at, NOW, &ids, &n), 0);
	RT_EQ_INT(n, 1);
	pt_rules_free(p, 1, rs, m);
	free(ev);
}

/*
 * Every allocation of compile, add, build, matcher creation and a match
 * with an escaped string fails in turn: each call reports RELAY_ENOMEM (or
 * succeeds; a match never calls it a parse error), nothing leaks (ASan),
 * and with no failure the result is right.
 */
static void test_pattern__chaos_alloc(void)
{
	static const char *pats[] = {
		"{\"a\": [\"x\", {\"prefix\": \"y\"}, {\"gt\": 1}], "
		"\"b\": {\"c\": [{\"exists\": false}, null], "
		"\"d\": [{\"lt\": \"now()+1m\"}, {\"suffix\": \"z\"}]}}",
		"{\"a\": [{\"b\": [1]}, {\"c\": [true]}], \"e\": [2.5]}",
		"{\"k\": [\"v1\", \"v2\", \"v3\", \"v4\", \"v5\", \"v6\"]}",
	};
	static const char ev[] =
		"{\"a\":\"\\u0078\",\"b\":{\"d\":\"z\"},\"k\":\"v5\"}";
	json_t *j[RELAY__ARRAY_SIZE(pats)];
	long n;
	size_t i;
	int done = 0;

	for (i = 0; i < RELAY__ARRAY_SIZE(pats); i++) {
		j[i] = json_loads(pats[i], 0, NULL);
		RT_ASSERT(j[i]);
	}
	rt_oom_install();
	for (n = 0; !done && n < 10000; n++) {
		relay_ruleset *rs = NULL;
		relay_matcher *m = NULL;
		const uint32_t *ids;
		size_t cnt = 0;
		int rc = 0;

		rt_oom_arm(n + 1, 1); /* n succeed, then every one fails */
		for (i = 0; !rc && i < RELAY__ARRAY_SIZE(pats); i++) {
			relay_pattern *p = NULL;

			if (!rs)
				rc = relay_ruleset_new(&rs);
			if (!rc)
				rc = relay_pattern_compile(&p, j[i], NULL);
			if (!rc)
				rc = relay_ruleset_add(rs, p, NULL);
			relay_pattern_free(p);
		}
		if (!rc)
			rc = relay_ruleset_build(rs);
		if (!rc)
			rc = relay_matcher_new(&m, rs);
		if (!rc)
			rc = relay_matcher_match(m, ev, sizeof(ev) - 1, NOW,
						 &ids, &cnt);
		/* never RELAY_EPARSE: that would dead-letter a valid event */
		if (rc && rc != RELAY_ENOMEM)
			RT_FAILF("after %ld allocations: rc %d", n, rc);
		if (!rc) {
			done = 1;
			RT_EQ_INT(cnt, 2); /* rules 0 and 2 */
		}
		relay_matcher_free(m);
		relay_ruleset_free(rs);
	}
	rt_oom_uninstall();
	RT_CHECK(done);
	printf("# %ld allocation failure points\n", n - 1);
	for (i = 0; i < RELAY__ARRAY_SIZE(pats); i++)
		json_decref(j[i]);
}

static const rt_case cases[] = {
	RT_CASE(test_pattern__differential),
	RT_CASE(test_pattern__thresholds),
	RT_CASE(test_pattern__wild_split),
	RT_CASE(test_pattern__cidr_words),
	RT_CASE(test_pattern__lazy_operators),
	RT_CASE(test_pattern__distributed_cnf),
	RT_CASE(test_pattern__corpus),
	RT_CASE(test_pattern__no_alloc),
	RT_CASE(test_pattern__chaos_alloc),
	RT_CASE(test_pattern__unescape_oom),
};

int main(int argc, char **argv)
{
	return rt_main(argc, argv, cases, RT_NCASES(cases));
}
