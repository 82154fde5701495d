/*
 * test_pattern_raw.c - the raw JSON matcher: validation (every error class
 * -> RELAY_EPARSE with an offset), non-objects (RELAY_ETYPE), nesting,
 * duplicate keys, agreement with jansson, NUL in field names, ruleset
 * sizes. The differential and corpus tests are in test_pattern_diff.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pattern_int.h"
#include "relaytest.h"
#include "pt_rules.h"

#define NOW 1767268800000LL /* 2026-01-01T12:00:00Z */

/* A one-rule matcher over @pat_text (JSON). */
typedef struct one {
	relay_ruleset *rs;
	relay_matcher *m;
	relay_pattern *p;
} one;

static void one_init(one *o, const char *pat_text)
{
	json_t *j = json_loads(pat_text, 0, NULL);

	memset(o, 0, sizeof(*o));
	RT_ASSERT(j);
	RT_ASSERT(relay_pattern_compile(&o->p, j, NULL) == 0);
	RT_ASSERT(relay_ruleset_new(&o->rs) == 0);
	RT_ASSERT(relay_ruleset_add(o->rs, o->p, NULL) == 0);
	RT_ASSERT(relay_ruleset_build(o->rs) == 0);
	RT_ASSERT(relay_matcher_new(&o->m, o->rs) == 0);
	json_decref(j);
}

static void one_fini(one *o)
{
	relay_matcher_free(o->m);
	relay_ruleset_free(o->rs);
	relay_pattern_free(o->p);
}

/* Invalid JSON texts, one or more of every error class: the text
 * (NUL-free unless len is given), the error's offset and its message. */
static const struct raw_error {
	const char *s;
	size_t len;   /* 0: strlen */
	size_t off;
	const char *what;
} raw_errors[] = {
	/* empty input, whitespace only */
	{ "", 0, 0, "empty input" },
	{ " \n\t\r ", 0, 5, "empty input" },
	/* structure */
	{ "{", 0, 1, "expected string key" },
	{ "{\"a\"", 0, 4, "expected ':'" },
	{ "{\"a\":", 0, 5, "unexpected end of input" },
	{ "{\"a\":1", 0, 6, "expected ',' or '}'" },
	{ "{\"a\":1,}", 0, 7, "expected string key" },
	{ "{\"a\" 1}", 0, 5, "expected ':'" },
	{ "{a:1}", 0, 1, "expected string key" },
	{ "{'a':1}", 0, 1, "expected string key" },
	{ "{\"a\":1 \"b\":2}", 0, 7, "expected ',' or '}'" },
	{ "{\"a\":[1,]}", 0, 8, "unexpected character" },
	{ "{\"a\":[1 2]}", 0, 8, "expected ',' or ']'" },
	{ "{\"a\":[}", 0, 6, "unexpected character" },
	{ "{\"a\":{\"b\":1]}", 0, 11, "expected ',' or '}'" },
	{ "{\"x\":{\"b\":1]}", 0, 11, "expected ',' or '}'" },
	{ "{\"a\":{\"b\"}}", 0, 9, "expected ':'" },
	{ "}", 0, 0, "unexpected character" },
	{ "{}}", 0, 2, "trailing data" },
	{ "{} {}", 0, 3, "trailing data" },
	{ "{}x", 0, 2, "trailing data" },
	{ "{}\0", 3, 2, "trailing data" },
	{ "\xef\xbb\xbf{}", 0, 0, "unexpected character" },
	/* literals */
	{ "{\"a\":tru}", 0, 5, "invalid literal" },
	{ "{\"a\":True}", 0, 5, "unexpected character" },
	{ "{\"a\":nul", 0, 5, "invalid literal" },
	{ "{\"a\":fals}", 0, 5, "invalid literal" },
	{ "{\"x\":nulll}", 0, 9, "expected ',' or '}'" },
	{ "{\"a\":undefined}", 0, 5, "unexpected character" },
	{ "{\"a\":NaN}", 0, 5, "unexpected character" },
	{ "{\"a\":Infinity}", 0, 5, "unexpected character" },
	/* number grammar, on and off the trie */
	{ "{\"a\":01}", 0, 6, "expected ',' or '}'" },
	{ "{\"x\":01}", 0, 6, "expected ',' or '}'" },
	{ "{\"a\":-}", 0, 5, "invalid number" },
	{ "{\"a\":+1}", 0, 5, "unexpected character" },
	{ "{\"a\":.5}", 0, 5, "unexpected character" },
	{ "{\"a\":1.}", 0, 5, "invalid number" },
	{ "{\"x\":1.e5}", 0, 5, "invalid number" },
	{ "{\"a\":1e}", 0, 5, "invalid number" },
	{ "{\"a\":1e+}", 0, 5, "invalid number" },
	{ "{\"a\":0x10}", 0, 6, "expected ',' or '}'" },
	{ "{\"a\":-01}", 0, 7, "expected ',' or '}'" },
	{ "{\"a\":1", 0, 6, "expected ',' or '}'" },
	/* escapes */
	{ "{\"a\":\"\\x\"}", 0, 6, "invalid escape" },
	{ "{\"x\":\"\\'\"}", 0, 6, "invalid escape" },
	{ "{\"a\":\"\\u12\"}", 0, 6, "invalid \\u escape" },
	{ "{\"a\":\"\\u12G4\"}", 0, 6, "invalid \\u escape" },
	{ "{\"a\":\"\\U0041\"}", 0, 6, "invalid escape" },
	{ "{\"a\":\"\\ud800\"}", 0, 6, "lone high surrogate" },
	{ "{\"a\":\"\\ud800x\"}", 0, 6, "lone high surrogate" },
	{ "{\"a\":\"\\ud800\\u0041\"}", 0, 6, "lone high surrogate" },
	{ "{\"a\":\"\\ud800\\ud800\"}", 0, 6, "lone high surrogate" },
	{ "{\"a\":\"\\udc00\"}", 0, 6, "lone low surrogate" },
	{ "{\"\\udfff\":1}", 0, 2, "lone low surrogate" },
	{ "{\"a\":\"\\", 0, 6, "invalid escape" },
	/* control characters (raw) in strings and keys */
	{ "{\"a\":\"x\ny\"}", 0, 7, "control character in string" },
	{ "{\"a\":\"\t\"}", 0, 6, "control character in string" },
	{ "{\"a\x01\":1}", 0, 3, "control character in string" },
	{ "{\"a\":\"\0\"}", 9, 6, "control character in string" },
	{ "{\"x\":\"0123456789abcdef\x1f\"}", 0, 22,
	  "control character in string" },
	/* invalid UTF-8 */
	{ "{\"a\":\"\x80\"}", 0, 6, "invalid UTF-8" },
	{ "{\"a\":\"\xc0\xaf\"}", 0, 6, "invalid UTF-8" },
	{ "{\"a\":\"\xc1\xbf\"}", 0, 6, "invalid UTF-8" },
	{ "{\"a\":\"\xe0\x80\xaf\"}", 0, 6, "invalid UTF-8" },
	{ "{\"a\":\"\xed\xa0\x80\"}", 0, 6, "invalid UTF-8" },
	{ "{\"a\":\"\xf0\x80\x80\xaf\"}", 0, 6, "invalid UTF-8" },
	{ "{\"a\":\"\xf4\x90\x80\x80\"}", 0, 6, "invalid UTF-8" },
	{ "{\"a\":\"\xf5\x80\x80\x80\"}", 0, 6, "invalid UTF-8" },
	{ "{\"a\":\"\xc3\"}", 0, 6, "invalid UTF-8" },
	{ "{\"a\":\"\xe2\x82\"}", 0, 6, "invalid UTF-8" },
	{ "{\"a\":\"\xff\"}", 0, 6, "invalid UTF-8" },
	{ "{\"\xc3\x28\":1}", 0, 2, "invalid UTF-8" },
	{ "{\"x\":\"0123456789abcdef\xfe\"}", 0, 22, "invalid UTF-8" },
	{ "{\"a\":\"\xc3", 0, 6, "invalid UTF-8" },
	/* unterminated strings */
	{ "{\"a\":\"abc", 0, 9, "unterminated string" },
	{ "{\"abc", 0, 5, "unterminated string" },
	{ "{\"x\":\"0123456789abcdef0123", 0, 26,
	  "unterminated string" },
	/* past the first 64 bytes of a string */
	{ "{\"x\":\"0123456789abcdef0123456789abcdef0123456789abcdef"
	  "0123456789abcdef0123\x01\"}", 0, 74, "control character in string" },
	{ "{\"a\":\"0123456789abcdef0123456789abcdef0123456789abcdef"
	  "0123456789abcdef0123\\q\"}", 0, 74, "invalid escape" },
	{ "{\"x\":\"0123456789abcdef0123456789abcdef0123456789abcdef"
	  "0123456789abcdef0123\xc3(\"}", 0, 74, "invalid UTF-8" },
};

/*
 * Every class of invalid JSON is RELAY_EPARSE with "... at offset N", and
 * jansson rejects the same text (so both decoders agree on what is JSON).
 * Entries: text (NUL-free unless len given), the offset, a substring.
 */
static void test_pattern__raw_errors(void)
{
	const uint32_t *ids;
	size_t i, n;
	json_t *j;
	one o;

	one_init(&o, "{\"a\": [1, {\"prefix\": \"\"}, {\"b\": [2]}]}");
	for (i = 0; i < RELAY__ARRAY_SIZE(raw_errors); i++) {
		const struct raw_error *t = &raw_errors[i];
		size_t len = t->len ? t->len : strlen(t->s);
		char want[64];
		int rc;

		n = 7;
		rc = relay_matcher_match(o.m, t->s, len, NOW, &ids, &n);
		snprintf(want, sizeof(want), "%s at offset %zu", t->what,
			 t->off);
		if (rc != RELAY_EPARSE || n != 0)
			RT_FAILF("case %zu: rc %d n %zu", i, rc, n);
		else if (strcmp(relay_matcher_errstr(o.m), want) != 0)
			RT_FAILF("case %zu: \"%s\", want \"%s\"", i,
				 relay_matcher_errstr(o.m), want);
		j = json_loadb(t->s, len, 0, NULL);
		if (j)
			RT_FAILF("case %zu: jansson accepts it", i);
		json_decref(j);
	}
	/* jansson 2.14 skips a NUL after a number or literal; that is not
	 * JSON, and the raw matcher says so */
	RT_EQ_INT(relay_matcher_match(o.m, "{\"a\":1\0}", 8, NOW, &ids, &n),
		  RELAY_EPARSE);
	RT_EQ_STR(relay_matcher_errstr(o.m), "expected ',' or '}' at offset 6");
	RT_EQ_INT(relay_matcher_match(o.m, "{\"a\":null\0}", 11, NOW, &ids,
				      &n), RELAY_EPARSE);
	one_fini(&o);
}

/*
 * The same errors where the scanner reads through its 64-byte windows:
 * after a first member of 8 to 87 bytes, so that each error falls at
 * every place of a window, and, where the text ends with a whole object,
 * before 80 bytes of whitespace (a window is used only with 64 bytes
 * left). The trie has "a" and "x" is skipped: both paths.
 */
static void test_pattern__raw_errors_windowed(void)
{
	char text[512];
	const uint32_t *ids;
	size_t i, k, n, len, shift, tested = 0;
	one o;

	one_init(&o, "{\"a\": [1, {\"prefix\": \"\"}, {\"b\": [2]}]}");
	for (i = 0; i < RELAY__ARRAY_SIZE(raw_errors); i++) {
		const struct raw_error *t = &raw_errors[i];
		size_t tlen = t->len ? t->len : strlen(t->s);
		bool whole = tlen && t->s[tlen - 1] == '}';

		/* only texts that start with a member, errors after it */
		if (tlen < 2 || t->s[0] != '{' || t->s[1] != '"' || !t->off)
			continue;
		for (k = 0; k < 80; k++) {
			char want[64];
			int rc;

			/* {"_":"yyy", then the text after its '{' */
			len = 0;
			memcpy(text, "{\"_\":\"", 6);
			len = 6;
			memset(text + len, 'y', k);
			len += k;
			memcpy(text + len, "\",", 2);
			len += 2;
			shift = len - 1;
			memcpy(text + len, t->s + 1, tlen - 1);
			len += tlen - 1;
			if (whole) {
				memset(text + len, ' ', 80);
				len += 80;
			}
			n = 7;
			rc = relay_matcher_match(o.m, text, len, NOW, &ids,
						 &n);
			snprintf(want, sizeof(want), "%s at offset %zu",
				 t->what, t->off + shift);
			if (rc != RELAY_EPARSE || n != 0)
				RT_FAILF("case %zu+%zu: rc %d n %zu", i, k, rc,
					 n);
			else if (strcmp(relay_matcher_errstr(o.m), want) != 0)
				RT_FAILF("case %zu+%zu: \"%s\", want \"%s\"",
					 i, k, relay_matcher_errstr(o.m), want);
			tested++;
		}
	}
	RT_CHECK(tested > 60 * 80);
	one_fini(&o);
}

/* A valid JSON text that is not an object is RELAY_ETYPE. */
static void test_pattern__raw_non_object(void)
{
	static const char *t[] = {
		"[]", "[{\"a\":1}]", "1", "-0.5e3", "\"x\"", "true", "false",
		"null", " \n[1, 2] \t",
	};
	const uint32_t *ids;
	size_t i, n;
	one o;

	one_init(&o, "{\"a\": [{\"exists\": false}]}");
	for (i = 0; i < RELAY__ARRAY_SIZE(t); i++) {
		n = 7;
		RT_EQ_INT(relay_matcher_match(o.m, t[i], strlen(t[i]), NOW,
					      &ids, &n), RELAY_ETYPE);
		RT_EQ_INT(n, 0);
		RT_EQ_STR(relay_matcher_errstr(o.m), "not a JSON object");
	}
	/* a success after an error clears the message */
	RT_EQ_INT(relay_matcher_match(o.m, "{}", 2, NOW, &ids, &n), 0);
	RT_EQ_INT(n, 1);
	RT_EQ_STR(relay_matcher_errstr(o.m), "");
	one_fini(&o);
}

/* Texts that are valid: every escape, UTF-8 edge, number form, depth. */
static void test_pattern__raw_valid(void)
{
	static const struct { const char *s; int want; } t[] = {
		{ "{\"a\":\"x\"}", 1 },
		{ " \t\r\n{ \"a\" : \"x\" } \n", 1 },
		{ "{\"a\":\"\\u0078\"}", 1 },
		{ "{\"\\u0061\":\"x\"}", 1 },
		{ "{\"a\":\"\\\"\\\\\\/\\b\\f\\n\\r\\t\"}", 0 },
		{ "{\"a\":\"\\ud83d\\ude00\"}", 0 },
		{ "{\"a\":\"\xf0\x9f\x98\x80 \xe2\x82\xac \xc3\xa9\"}", 0 },
		{ "{\"a\":\"\xf4\x8f\xbf\xbf\xef\xbf\xbf\"}", 0 },
		{ "{\"a\":\"\xed\x9f\xbf\xee\x80\x80\"}", 0 },
		{ "{\"a\":\"\x7f\"}", 0 },
		{ "{\"z\":[0,-0,1.5e-3,1E+2,-1e400,123456789012345678901]}",
		  0 },
		{ "{\"z\":{\"y\":[[],{},[{}],\"\",null,true,false]}, "
		  "\"a\":\"x\"}", 1 },
		{ "{\"a\":{\"b\":2}}", 1 },
		{ "{\"a\":1}", 1 },
	};
	const uint32_t *ids;
	size_t i, n, d;
	char *deep;
	one o;

	one_init(&o, "{\"a\": [\"x\", 1, {\"b\": [2]}]}");
	for (i = 0; i < RELAY__ARRAY_SIZE(t); i++) {
		int rc = relay_matcher_match(o.m, t[i].s, strlen(t[i].s), NOW,
					     &ids, &n);

		if (rc != 0 || (int)n != t[i].want)
			RT_FAILF("%s: rc %d (%s) n %zu", t[i].s, rc,
				 relay_matcher_errstr(o.m), n);
	}
	/* nesting: a value inside 2047 containers below the root is fine,
	 * one more is not, on and off the trie; jansson agrees */
	deep = malloc(2 * 2100 + 64);
	RT_ASSERT(deep);
	for (d = 2047; d <= 2048; d++) {
		const char *keys[2] = { "x", "a" };
		size_t k, len;

		for (k = 0; k < 2; k++) {
			json_t *j;
			int rc;

			len = (size_t)sprintf(deep, "{\"%s\":", keys[k]);
			memset(deep + len, '[', d - 1);
			len += d - 1;
			deep[len++] = '1';
			memset(deep + len, ']', d - 1);
			len += d - 1;
			deep[len++] = '}';
			rc = relay_matcher_match(o.m, deep, len, NOW, &ids,
						 &n);
			j = json_loadb(deep, len, 0, NULL);
			if (d == 2047 && (rc != 0 || !j))
				RT_FAILF("depth %zu key %s: rc %d jansson %p",
					 d, keys[k], rc, (void *)j);
			if (d == 2048 && (rc != RELAY_EPARSE || j ||
					  !strstr(relay_matcher_errstr(o.m),
						  "nesting too deep")))
				RT_FAILF("depth %zu key %s: rc %d (%s)", d,
					 keys[k], rc,
					 relay_matcher_errstr(o.m));
			json_decref(j);
		}
	}
	free(deep);
	one_fini(&o);
}

/*
 * Duplicate keys: the last occurrence wins, in the raw matcher as in
 * jansson, at every level, whatever the earlier value was.
 */
static void test_pattern__raw_duplicates(void)
{
	static const char *pats[] = {
		"{\"a\": [1]}",
		"{\"a\": [{\"exists\": true}], \"b\": [{\"exists\": false}]}",
		"{\"o\": {\"b\": [1], \"c\": [{\"exists\": false}]}}",
		"{\"o\": [{\"b\": [1]}, {\"c\": [\"x\"]}, 5]}",
		"{\"o\": {\"p\": {\"q\": [{\"prefix\": \"y\"}]}}}",
		"{\"a\": [{\"gt\": 1}], \"o\": [{\"exists\": true}]}",
	};
	static const char *evs[] = {
		"{\"a\":1,\"a\":2}", "{\"a\":2,\"a\":1}", "{\"a\":1,\"a\":1}",
		"{\"a\":{\"x\":1},\"a\":1}", "{\"a\":1,\"a\":[1]}",
		"{\"b\":1,\"a\":1,\"b\":2}", "{\"\\u0061\":2,\"a\":1}",
		"{\"a\":1,\"\\u0061\":2}",
		"{\"o\":{\"b\":1},\"o\":{\"b\":1,\"c\":2}}",
		"{\"o\":{\"b\":1,\"c\":2},\"o\":{\"b\":1}}",
		"{\"o\":{\"b\":1,\"c\":2,\"c\":3}}",
		"{\"o\":{\"c\":\"x\"},\"o\":5}",
		"{\"o\":5,\"o\":{\"c\":\"x\"}}",
		"{\"o\":{\"b\":2,\"b\":1},\"o\":{\"b\":1}}",
		"{\"o\":{\"p\":{\"q\":\"yes\"}},\"o\":{\"p\":{\"q\":\"no\"}}}",
		"{\"o\":{\"p\":{\"q\":\"no\"}},\"o\":{\"p\":{\"q\":\"yes\"}}}",
		"{\"o\":{\"p\":{\"q\":\"yes\"},\"p\":{}}}",
		"{\"o\":{\"p\":{\"q\":\"yes\"},\"p\":null}}",
		"{\"o\":{\"p\":{},\"p\":{\"q\":\"yy\"}}}",
		"{\"o\":1,\"a\":5,\"o\":2,\"a\":0}",
	};
	relay_pattern *p[RELAY__ARRAY_SIZE(pats)];
	relay_ruleset *rs = NULL;
	relay_matcher *m = NULL;
	size_t i, k, n, n2;
	const uint32_t *ids;
	uint32_t raw[16];

	pt_rules(pats, RELAY__ARRAY_SIZE(pats), p, &rs, &m);
	for (i = 0; i < RELAY__ARRAY_SIZE(evs); i++) {
		json_t *ev = json_loads(evs[i], 0, NULL);

		RT_ASSERT(ev);
		RT_EQ_INT(relay_matcher_match(m, evs[i], strlen(evs[i]), NOW,
					      &ids, &n), 0);
		memcpy(raw, ids, n * sizeof(*ids));
		RT_EQ_INT(relay_matcher_match_json(m, ev, NOW, &ids, &n2), 0);
		if (n != n2 || memcmp(raw, ids, n * sizeof(*ids)) != 0)
			RT_FAILF("%s: raw and json_t matchers disagree",
				 evs[i]);
		for (k = 0, n2 = 0; k < RELAY__ARRAY_SIZE(pats); k++) {
			int want = relay_pattern_match(p[k], ev, NOW);
			int got = n2 < n && raw[n2] == k;

			n2 += (size_t)got;
			if (want != got)
				RT_FAILF("%s: rule %s raw %d, reference %d",
					 evs[i], pats[k], got, want);
		}
		json_decref(ev);
	}
	pt_rules_free(p, RELAY__ARRAY_SIZE(pats), rs, m);
}

/*
 * A raw event is scanned without the log of what it fired; a key that
 * repeats (at a trie node) starts the scan again with the log. The second
 * scan must give what one scan with the log gives: the same matches after
 * what fired before the repeat, the same error after it, and the next
 * event must not see either scan's stamps.
 */
static void test_pattern__raw_duplicate_rescan(void)
{
	static const struct {
		const char *ev;
		int rc;
		const char *err;   /* the error, or NULL: n matches */
		size_t n;
	} cases[] = {
		{ "{\"a\":1,\"b\":\"x\",\"a\":2}", 0, NULL, 1 },
		{ "{\"a\":2,\"b\":\"x\",\"a\":1}", 0, NULL, 2 },
		{ "{\"a\":1,\"a\":2,x}", RELAY_EPARSE,
		  "expected string key at offset 13", 0 },
		{ "{\"a\":1,\"c\":2,x}", RELAY_EPARSE,
		  "expected string key at offset 13", 0 },
		{ "{\"a\":1,\"a\":2,\"b\":\"x\"", RELAY_EPARSE,
		  "expected ',' or '}' at offset 20", 0 },
		{ "{\"o\":{\"a\":1,\"a\":1},\"b\":\"x\"}", 0, NULL, 2 },
		{ "{\"b\":\"y\",\"a\":1}", 0, NULL, 1 },
		{ "{\"a\":3}", 0, NULL, 0 },
	};
	static const char *pats[] = {
		"{\"a\": [1], \"b\": [{\"exists\": false}]}",
		"{\"b\": [\"x\"]}",
		"{\"a\": [1]}",
		"{\"o\": {\"a\": [1]}, \"b\": [\"x\"]}",
	};
	relay_ruleset *rs = NULL;
	relay_matcher *m = NULL;
	relay_pattern *p[RELAY__ARRAY_SIZE(pats)];
	const uint32_t *ids;
	size_t i, n;

	pt_rules(pats, RELAY__ARRAY_SIZE(pats), p, &rs, &m);
	for (i = 0; i < RELAY__ARRAY_SIZE(cases); i++) {
		const char *ev = cases[i].ev;
		int rc = relay_matcher_match(m, ev, strlen(ev), NOW, &ids, &n);

		if (rc != cases[i].rc)
			RT_FAILF("%s: rc %d, want %d", ev, rc, cases[i].rc);
		if (cases[i].err)
			RT_EQ_STR(relay_matcher_errstr(m), cases[i].err);
		else if (n != cases[i].n)
			RT_FAILF("%s: %zu matches, want %zu", ev, n,
				 cases[i].n);
	}
	pt_rules_free(p, RELAY__ARRAY_SIZE(pats), rs, m);
}

/*
 * Numbers at a path rules compare: a plain integer of up to 15 digits is
 * converted as it is validated (scan.c int_value), anything else by the
 * general path; both must give the same value and the same errors.
 */
static void test_pattern__raw_numbers(void)
{
	static const struct {
		const char *ev;
		int rc;
		uint32_t ids;   /* bit i: rule i matches */
	} cases[] = {
		{ "{\"n\":0}", 0, 1u << 0 },
		{ "{\"n\":-0}", 0, 1u << 0 },
		{ "{\"n\":0.0}", 0, 1u << 0 },
		{ "{\"n\":-12}", 0, 1u << 1 },
		{ "{\"n\":-12.0e0}", 0, 1u << 1 },
		{ "{\"n\":123456789012345}", 0, 1u << 2 },
		{ "{\"n\":1234567890123456}", 0, 1u << 3 },
		{ "{\"n\":100}", 0, 1u << 4 | 1u << 5 },
		{ "{\"n\":1e2}", 0, 1u << 4 | 1u << 5 },
		{ "{\"n\":100.5}", 0, 1u << 5 },
		{ "{\"n\":99}", 0, 0 },
		{ "{\"n\": 100 }", 0, 1u << 4 | 1u << 5 },
		{ "{\"n\":100", RELAY_EPARSE, 0 },
		{ "{\"n\":01}", RELAY_EPARSE, 0 },
		{ "{\"n\":-}", RELAY_EPARSE, 0 },
		{ "{\"n\":1.}", RELAY_EPARSE, 0 },
		{ "{\"n\":1e}", RELAY_EPARSE, 0 },
		{ "{\"n\":-a}", RELAY_EPARSE, 0 },
	};
	static const char *pats[] = {
		"{\"n\": [0]}",
		"{\"n\": [-12]}",
		"{\"n\": [123456789012345]}",
		"{\"n\": [1234567890123456]}",
		"{\"n\": [100]}",
		"{\"n\": [{\"numeric\": [\">\", 99, \"<\", 101]}]}",
	};
	relay_ruleset *rs = NULL;
	relay_matcher *m = NULL;
	relay_pattern *p[RELAY__ARRAY_SIZE(pats)];
	const uint32_t *ids;
	size_t i, k, n;

	pt_rules(pats, RELAY__ARRAY_SIZE(pats), p, &rs, &m);
	for (i = 0; i < RELAY__ARRAY_SIZE(cases); i++) {
		const char *ev = cases[i].ev;
		uint32_t got = 0;
		int rc = relay_matcher_match(m, ev, strlen(ev), NOW, &ids, &n);

		if (rc != cases[i].rc)
			RT_FAILF("%s: rc %d, want %d", ev, rc, cases[i].rc);
		for (k = 0; k < n; k++)
			got |= 1u << ids[k];
		if (got != cases[i].ids)
			RT_FAILF("%s: rules %#x, want %#x", ev, got,
				 cases[i].ids);
	}
	pt_rules_free(p, RELAY__ARRAY_SIZE(pats), rs, m);
}

/*
 * Numeric equality (a hash probe, relay__tnode.eq_tab) at a field of 24
 * literals agrees with a field of three (a table of another size): every
 * literal is found, written in other forms too (-0 for 0, 1.50, 2e0), and
 * numbers between them are not. Small integers are the hash's hard case
 * (their low bits are all zero).
 */
static void test_pattern__eq_numbers_hashed(void)
{
	static const char *const lits[] = {
		"0", "-1", "1.5", "2", "3", "4", "5", "6", "7", "8", "16",
		"32", "64", "1024", "65536", "-65536", "0.1", "1e300",
		"-2.5e-300", "9007199254740992", "123456789", "-7", "100",
		"1000",
	};
	static const struct {
		const char *v;
		int hit;
	} ev[] = {
		{ "0", 1 }, { "-0", 1 }, { "0.0", 1 }, { "-1", 1 },
		{ "1.50", 1 }, { "2e0", 1 }, { "1024", 1 }, { "1e3", 1 },
		{ "1E300", 1 }, { "-2.5e-300", 1 }, { "0.1", 1 },
		{ "9007199254740993", 1 },  /* rounds to ...992 */
		{ "65536", 1 }, { "-65536", 1 }, { "-7", 1 },
		{ "1", 0 }, { "9", 0 }, { "-2", 0 }, { "1.25", 0 },
		{ "1e299", 0 }, { "0.2", 0 }, { "65537", 0 }, { "1001", 0 },
		{ "123456788", 0 },
	};
	char pat[1024], text[128];
	const uint32_t *ids;
	size_t i, n, at;
	one many, few;

	at = (size_t)snprintf(pat, sizeof(pat), "{\"n\": [");
	for (i = 0; i < RELAY__ARRAY_SIZE(lits); i++)
		at += (size_t)snprintf(pat + at, sizeof(pat) - at, "%s%s",
				       i ? ", " : "", lits[i]);
	snprintf(pat + at, sizeof(pat) - at, "]}");
	one_init(&many, pat);
	for (i = 0; i < RELAY__ARRAY_SIZE(ev); i++) {
		int len = snprintf(text, sizeof(text), "{\"n\": %s}", ev[i].v);

		RT_EQ_INT(relay_matcher_match(many.m, text, (size_t)len, NOW,
					      &ids, &n), 0);
		if ((int)n != ev[i].hit)
			RT_FAILF("%s: %zu matches, want %d", ev[i].v, n,
				 ev[i].hit);
		/* the same value against a field of three literals */
		snprintf(pat, sizeof(pat), "{\"n\": [%s, 11, 12]}", ev[i].v);
		one_init(&few, pat);
		RT_EQ_INT(relay_matcher_match(few.m, text, (size_t)len, NOW,
					      &ids, &n), 0);
		RT_EQ_INT(n, 1);
		one_fini(&few);
	}
	for (i = 0; i < RELAY__ARRAY_SIZE(lits); i++) {
		int len = snprintf(text, sizeof(text), "{\"n\": %s}", lits[i]);

		RT_EQ_INT(relay_matcher_match(many.m, text, (size_t)len, NOW,
					      &ids, &n), 0);
		if (n != 1)
			RT_FAILF("literal %s: %zu matches", lits[i], n);
	}
	one_fini(&many);
}

/*
 * The scanner predicts each key from the order of the events before
 * (kid_next) and hashes only when the guess is wrong: events whose keys
 * come in one order, then in others, with keys no rule names between
 * them, keys missing, nested objects reordered and keys of the same
 * length, must match as the jansson-decoded event does, every time.
 */
static void test_pattern__raw_key_order(void)
{
	static const char *pats[] = {
		"{\"a\": [1], \"bb\": [2]}",
		"{\"ab\": [2], \"o\": {\"x\": [\"y\"]}}",
		"{\"c\": [3], \"o\": {\"z\": [{\"exists\": false}]}}",
		"{\"a\": [9]}",
	};
	static const char *evs[] = {
		"{\"a\":1,\"bb\":2,\"ab\":2,\"c\":3,\"o\":{\"x\":\"y\"}}",
		"{\"c\":3,\"ab\":2,\"bb\":2,\"a\":1,\"o\":{\"x\":\"y\"}}",
		"{\"a\":1,\"q\":0,\"bb\":2,\"zz\":1,\"ab\":2,\"c\":3}",
		"{\"bb\":2,\"a\":9,\"o\":{\"z\":1,\"x\":\"y\"},\"c\":3}",
		"{\"ab\":2,\"bb\":2,\"o\":{\"x\":\"y\",\"z\":1}}",
		"{\"a\":1,\"bb\":2,\"ab\":2,\"c\":3,\"o\":{\"x\":\"y\"}}",
		"{\"ba\":2,\"ab\":2,\"bb\":3,\"a\":1}",
	};
	relay_pattern *p[RELAY__ARRAY_SIZE(pats)];
	relay_ruleset *rs = NULL;
	relay_matcher *m = NULL;
	const uint32_t *ids;
	uint32_t raw[8];
	size_t i, round, n, n2;

	pt_rules(pats, RELAY__ARRAY_SIZE(pats), p, &rs, &m);
	for (round = 0; round < 3; round++)
		for (i = 0; i < RELAY__ARRAY_SIZE(evs); i++) {
			size_t at = (i + round) % RELAY__ARRAY_SIZE(evs);
			json_t *ev = json_loads(evs[at], 0, NULL);

			RT_ASSERT(ev);
			RT_EQ_INT(relay_matcher_match(m, evs[at],
						      strlen(evs[at]), NOW,
						      &ids, &n), 0);
			memcpy(raw, ids, n * sizeof(*ids));
			RT_EQ_INT(relay_matcher_match_json(m, ev, NOW, &ids,
							   &n2), 0);
			if (n != n2 || memcmp(raw, ids, n * sizeof(*ids)))
				RT_FAILF("%s (round %zu): raw and json_t "
					 "disagree", evs[at], round);
			json_decref(ev);
		}
	/* and the first event's answer, after all of that */
	RT_EQ_INT(relay_matcher_match(m, evs[0], strlen(evs[0]), NOW, &ids,
				      &n), 0);
	RT_EQ_INT(n, 3);
	RT_EQ_INT(ids[0], 0);
	RT_EQ_INT(ids[1], 1);
	RT_EQ_INT(ids[2], 2);
	pt_rules_free(p, RELAY__ARRAY_SIZE(pats), rs, m);
}

/*
 * A field name with a NUL byte (possible from a YAML template, or a json_t
 * built with json_object_setn()) is compared in full on every path, never
 * cut at the NUL.
 */
static void test_pattern__nul_in_key(void)
{
	static const struct { const char *text; int want; } t[] = {
		{ "{\"a\\u0000b\":1}", 1 },
		{ "{\"a\":1}", 0 },
		{ "{\"a\\u0000c\":1}", 0 },
		{ "{\"a\\u0000\":1}", 0 },
		{ "{\"a\\u0000b\":2}", 0 },
	};
	json_t *spec = json_object(), *ev;
	relay_pattern *p = NULL;
	relay_ruleset *rs = NULL;
	relay_matcher *m = NULL;
	const uint32_t *ids;
	size_t i, n;

	RT_ASSERT(spec && json_object_setn_new(spec, "a\0b", 3,
					       json_pack("[i]", 1)) == 0);
	RT_ASSERT(relay_pattern_compile(&p, spec, NULL) == 0);
	RT_ASSERT(relay_ruleset_new(&rs) == 0);
	RT_ASSERT(relay_ruleset_add(rs, p, NULL) == 0);
	RT_ASSERT(relay_ruleset_build(rs) == 0);
	RT_ASSERT(relay_matcher_new(&m, rs) == 0);
	for (i = 0; i < RELAY__ARRAY_SIZE(t); i++) {
		RT_EQ_INT(relay_matcher_match(m, t[i].text, strlen(t[i].text),
					      NOW, &ids, &n), 0);
		if ((int)n != t[i].want)
			RT_FAILF("raw %s: %zu", t[i].text, n);
	}
	ev = json_object();
	RT_ASSERT(ev && json_object_setn_new(ev, "a\0b", 3,
					     json_integer(1)) == 0);
	RT_EQ_INT(relay_pattern_match(p, ev, NOW), 1);
	RT_EQ_INT(relay_matcher_match_json(m, ev, NOW, &ids, &n), 0);
	RT_EQ_INT(n, 1);
	json_decref(ev);
	ev = json_pack("{s:i}", "a", 1);
	RT_EQ_INT(relay_pattern_match(p, ev, NOW), 0);
	RT_EQ_INT(relay_matcher_match_json(m, ev, NOW, &ids, &n), 0);
	RT_EQ_INT(n, 0);
	json_decref(ev);
	relay_matcher_free(m);
	relay_ruleset_free(rs);
	relay_pattern_free(p);
	json_decref(spec);
}

/*
 * Rulesets at the edges: empty (still validates), and many rules matching
 * one event (ids ascending whatever order their anchors fired in, past
 * the insertion-sort threshold).
 */
static void test_pattern__ruleset_sizes(void)
{
	const char *ev;
	relay_ruleset *rs = NULL;
	relay_matcher *m = NULL;
	const uint32_t *ids;
	size_t n, i;
	char buf[64];

	RT_ASSERT(relay_ruleset_new(&rs) == 0);
	RT_ASSERT(relay_ruleset_build(rs) == 0);
	RT_ASSERT(relay_matcher_new(&m, rs) == 0);
	RT_EQ_INT(relay_matcher_match(m, "{\"a\":1}", 7, NOW, &ids, &n), 0);
	RT_EQ_INT(n, 0);
	RT_EQ_INT(relay_matcher_match(m, "{\"a\":}", 6, NOW, &ids, &n),
		  RELAY_EPARSE);
	RT_EQ_INT(relay_matcher_match(m, "7", 1, NOW, &ids, &n), RELAY_ETYPE);
	relay_matcher_free(m);
	relay_ruleset_free(rs);

	/* 300 rules, anchored on four different leaves in an order unlike
	 * the id order; every one matches {"a":1,"b":"x","c":true} */
	RT_ASSERT(relay_ruleset_new(&rs) == 0);
	for (i = 0; i < 300; i++) {
		relay_pattern *p = NULL;
		json_t *j;

		switch ((i * 7) % 4) {
		case 0:
			snprintf(buf, sizeof(buf), "{\"c\": [true], \"z%zu\": "
				 "[{\"exists\": false}]}", i);
			break;
		case 1:
			snprintf(buf, sizeof(buf), "{\"b\": [\"x\"], "
				 "\"a\": [%zu, 1]}", i + 2);
			break;
		case 2:
			snprintf(buf, sizeof(buf), "{\"a\": [1], \"y%zu\": "
				 "[{\"exists\": false}]}", i);
			break;
		default:
			snprintf(buf, sizeof(buf), "{\"b\": [{\"prefix\": "
				 "\"\"}], \"w%zu\": [{\"exists\": false}]}",
				 i);
			break;
		}
		j = json_loads(buf, 0, NULL);
		RT_ASSERT(j && relay_pattern_compile(&p, j, NULL) == 0);
		RT_ASSERT(relay_ruleset_add(rs, p, NULL) == 0);
		relay_pattern_free(p);
		json_decref(j);
	}
	RT_ASSERT(relay_ruleset_build(rs) == 0);
	RT_ASSERT(relay_matcher_new(&m, rs) == 0);
	ev = "{\"c\":true,\"b\":\"x\",\"a\":1}";
	RT_EQ_INT(relay_matcher_match(m, ev, strlen(ev), NOW, &ids, &n), 0);
	RT_EQ_INT(n, 300);
	for (i = 0; i < n; i++)
		if (ids[i] != i)
			RT_FAILF("ids[%zu] = %u", i, ids[i]);
	ev = "{\"c\":true,\"b\":\"x\",\"a\":2}";
	RT_EQ_INT(relay_matcher_match(m, ev, strlen(ev), NOW, &ids, &n), 0);
	RT_CHECK(n > 0 && n < 300);
	for (i = 1; i < n; i++)
		RT_CHECK(ids[i - 1] < ids[i]);
	relay_matcher_free(m);
	relay_ruleset_free(rs);
}

/*
 * Field names and string literals of every length from 0 to 40, in
 * families that differ in one byte only: the middle one, the second one,
 * and (from 17 bytes on) byte 8, which neither of the first and last
 * eight bytes covers. Rule i is {key_i: [key_(i+1)]}: an event with
 * key_i = key_(i+1) matches exactly rule i, and with any other value of
 * the family none; an event with every member matches every rule.
 */
#define KW_MAX 160

static void test_pattern__key_words(void)
{
	static char keys[KW_MAX][48];
	relay_ruleset *rs = NULL;
	relay_matcher *m = NULL;
	const uint32_t *ids;
	relay__buf all = { 0 };
	size_t nk = 0, i, j, n, len, v;
	char buf[160];

	for (len = 0; len <= 40; len++) {
		for (v = 0; v < 4; v++) {
			char k[48];

			memset(k, 'a', len);
			k[len] = '\0';
			if (v == 1 && len)
				k[len / 2] = 'b';
			else if (v == 2 && len > 1)
				k[1] = 'c';
			else if (v == 3 && len > 16)
				k[8] = 'd';
			else if (v)
				continue;
			for (j = 0; j < nk && strcmp(keys[j], k); j++)
				;
			if (j == nk && nk < KW_MAX)
				memcpy(keys[nk++], k, len + 1);
		}
	}
	RT_CHECK(nk > 120);
	RT_ASSERT(relay_ruleset_new(&rs) == 0);
	for (i = 0; i < nk; i++) {
		relay_pattern *p = NULL;
		json_t *pj;

		snprintf(buf, sizeof(buf), "{\"%.47s\": [\"%.47s\"]}", keys[i],
			 keys[(i + 1) % nk]);
		pj = json_loads(buf, 0, NULL);
		RT_ASSERT(pj && relay_pattern_compile(&p, pj, NULL) == 0);
		RT_ASSERT(relay_ruleset_add(rs, p, NULL) == 0);
		relay_pattern_free(p);
		json_decref(pj);
	}
	RT_ASSERT(relay_ruleset_build(rs) == 0);
	RT_ASSERT(relay_matcher_new(&m, rs) == 0);
	for (i = 0; i < nk; i++) {
		for (j = 0; j < nk; j++) {
			snprintf(buf, sizeof(buf), "{\"%.47s\":\"%.47s\"}",
				 keys[i], keys[j]);
			RT_EQ_INT(relay_matcher_match(m, buf, strlen(buf), NOW,
						      &ids, &n), 0);
			if (j == (i + 1) % nk ? n != 1 || ids[0] != i : n != 0)
				RT_FAILF("%s: %zu rules", buf, n);
		}
	}
	RT_ASSERT(relay__buf_append(&all, "{", 1) == 0);
	for (i = 0; i < nk; i++) {
		snprintf(buf, sizeof(buf), "%s\"%.47s\":\"%.47s\"", i ? "," : "",
			 keys[i], keys[(i + 1) % nk]);
		RT_ASSERT(relay__buf_append(&all, buf, strlen(buf)) == 0);
	}
	RT_ASSERT(relay__buf_append(&all, "}", 1) == 0);
	RT_EQ_INT(relay_matcher_match(m, all.data, all.len, NOW, &ids, &n),
		  0);
	RT_EQ_INT(n, nk);
	relay__buf_free(&all);
	relay_matcher_free(m);
	relay_ruleset_free(rs);
}

/*
 * relay__ieq() (eight bytes at a time) against a byte-by-byte statement
 * of it, on strings of 0-24 bytes drawn from the bytes around the ASCII
 * capitals and lower case letters and their images above 0x80, at every
 * alignment: only 'A'-'Z' may fold.
 */
static void test_pattern__ieq_words(void)
{
	static const unsigned char pool[] = {
		0x00, 0x40, 0x41, 0x4d, 0x5a, 0x5b, 0x60, 0x61, 0x6d, 0x7a,
		0x7b, 0x7f, 0x80, 0xc0, 0xc1, 0xda, 0xdb, 0xe1, 0xfa, 0xff,
	};
	char s[40], low[40];
	uint64_t x = 88172645463325252ULL;
	size_t len, i, k, off, diffs = 0;

	for (k = 0; k < 20000; k++) {
		bool want = true;

		len = k % 25;
		off = k % 7;
		for (i = 0; i < len; i++) {
			unsigned char c, l;

			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			c = pool[x % sizeof(pool)];
			l = c >= 'A' && c <= 'Z' ? (unsigned char)(c | 0x20) :
			    c;
			/* now and then a lower side that differs */
			if ((x >> 20) % 16 == 0)
				l = pool[(x >> 24) % sizeof(pool)];
			s[off + i] = (char)c;
			low[i] = (char)l;
			if ((c >= 'A' && c <= 'Z' ? (c | 0x20) : c) != l)
				want = false;
		}
		diffs += !want;
		if (relay__ieq(s + off, low, len) != want)
			RT_FAILF("ieq differs at case %zu (length %zu)", k,
				 len);
	}
	RT_CHECK(diffs > 2000 && diffs < 18000);
}

static const rt_case cases[] = {
	RT_CASE(test_pattern__raw_errors),
	RT_CASE(test_pattern__raw_errors_windowed),
	RT_CASE(test_pattern__raw_non_object),
	RT_CASE(test_pattern__raw_valid),
	RT_CASE(test_pattern__raw_duplicates),
	RT_CASE(test_pattern__raw_duplicate_rescan),
	RT_CASE(test_pattern__raw_numbers),
	RT_CASE(test_pattern__eq_numbers_hashed),
	RT_CASE(test_pattern__raw_key_order),
	RT_CASE(test_pattern__nul_in_key),
	RT_CASE(test_pattern__ruleset_sizes),
	RT_CASE(test_pattern__key_words),
	RT_CASE(test_pattern__ieq_words),
};

int main(int argc, char **argv)
{
	return rt_main(argc, argv, cases, RT_NCASES(cases));
}
