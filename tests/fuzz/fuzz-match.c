/*
 * fuzz-match.c - libFuzzer target: arbitrary bytes as a raw event.
 *
 * A fixed ruleset that uses every kind of leaf (literals of every type,
 * prefix, suffix, exists both ways, numeric and temporal cutoffs, nested
 * maps, alternatives, the EventBridge operators both as anchors and as
 * lazy tests read only by candidates) matches the input with
 * relay_matcher_match(). The
 * properties:
 *   - the result is 0, RELAY_EPARSE or RELAY_ETYPE; on error the count is
 *     0 and the message is a non-empty line ("... at offset N" for
 *     EPARSE); the ids are ascending and in range;
 *   - whenever jansson accepts the bytes as an object, the raw matcher
 *     accepts them too and reports exactly what relay_matcher_match_json()
 *     and relay_pattern_match() say on jansson's decode.
 * The raw matcher may accept what jansson rejects (\u0000, integers beyond
 * 64 bits, reals that overflow): those are valid RFC 8259 JSON. jansson
 * accepts one thing that is not JSON, a NUL byte after a number or a
 * literal; the raw matcher rejects it (regress-nul-after-number.json).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "relay/pattern.h"

#define NOW 1767268800000LL /* 2026-01-01T12:00:00Z */

static const char *const pats[] = {
	"{\"a\": [\"x\", 1, true, null, false, -0.5]}",
	"{\"a\": [{\"prefix\": \"us\"}, {\"suffix\": \"\\u00e9\"}]}",
	"{\"b\": [{\"exists\": true}], \"c\": [{\"exists\": false}]}",
	"{\"n\": [{\"gt\": 1}, {\"lte\": -1e3}]}",
	"{\"t\": [{\"gt\": \"now()-5m\"}, {\"lt\": \"now()-1h30m\"}]}",
	"{\"o\": {\"p\": [\"x\", 2], \"q\": [{\"exists\": false}]}}",
	"{\"o\": [{\"p\": [{\"gte\": 0}]}, {\"r\": {\"s\": [\"\"]}}]}",
	("{\"o\": {\"r\": {\"s\": [{\"prefix\": \"\"}], \"t\": "
	 "[{\"lte\": \"now()+10m\"}]}}}"),
	"{\"\": [\"\"], \"a\\\"b\": [{\"exists\": true}]}",
	"{\"a\": [{\"exists\": false}]}",
	/* literals enough at a that it anchors the rules below, whose
	 * operators are then lazy */
	"{\"a\": [\"p\", \"q\", \"r\", \"s\", \"u\"]}",
	("{\"a\": [\"x\"], \"w\": [{\"wildcard\": \"*a*b\"}], \"i\": "
	 "[{\"cidr\": \"10.0.0.0/8\"}, {\"cidr\": \"2001:db8::/32\"}]}"),
	("{\"a\": [\"x\", \"p\"], \"s\": [{\"prefix\": "
	 "{\"equals-ignore-case\": \"Ab\"}}, {\"suffix\": "
	 "{\"equals-ignore-case\": \"z\"}}]}"),
	("{\"a\": [\"q\"], \"$or\": [{\"w\": [{\"wildcard\": \"*c\"}]}, "
	 "{\"n\": [{\"numeric\": [\">\", 0, \"<=\", 5]}]}]}"),
	("{\"a\": [\"x\"], \"w\": [{\"anything-but\": {\"wildcard\": "
	 "\"*q*\"}}], \"e\": [{\"equals-ignore-case\": \"Hi\"}]}"),
	"{\"w\": [{\"wildcard\": \"x*y\"}], \"i\": [{\"cidr\": \"::/0\"}]}",
};

#define NPATS (sizeof(pats) / sizeof(pats[0]))

static relay_pattern *compiled[NPATS];
static relay_ruleset *rs;
static relay_matcher *m;

static void setup(void)
{
	size_t i;

	if (relay_ruleset_new(&rs))
		abort();
	for (i = 0; i < NPATS; i++) {
		json_t *j = json_loads(pats[i], 0, NULL);

		if (!j || relay_pattern_compile(&compiled[i], j, NULL) ||
		    relay_ruleset_add(rs, compiled[i], NULL))
			abort();
		json_decref(j);
	}
	if (relay_ruleset_build(rs) || relay_matcher_new(&m, rs))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint32_t raw[NPATS];
	const uint32_t *ids;
	const char *msg;
	size_t n = 99, n2 = 99, i, k;
	json_t *ev;
	int rc;

	if (!m)
		setup();
	rc = relay_matcher_match(m, (const char *)data, size, NOW, &ids, &n);
	msg = relay_matcher_errstr(m);
	if (rc != 0 && rc != RELAY_EPARSE && rc != RELAY_ETYPE)
		abort();
	if (rc && (n != 0 || !msg[0] || strchr(msg, '\n')))
		abort();
	if (rc == RELAY_EPARSE && !strstr(msg, " at offset "))
		abort();
	if (n > NPATS)
		abort();
	for (i = 0; i < n; i++)
		if (ids[i] >= NPATS || (i && ids[i] <= ids[i - 1]))
			abort();
	memcpy(raw, ids, n * sizeof(*ids));

	ev = json_loadb((const char *)data, size, 0, NULL);
	if (!json_is_object(ev)) {
		json_decref(ev);
		return 0;
	}
	/* jansson 2.14 skips a NUL byte after a number or literal
	 * ({"n":0\0} loads); RFC 8259 does not, and neither do we */
	if (rc != 0 && memchr(data, '\0', size)) {
		json_decref(ev);
		return 0;
	}
	if (rc != 0)
		abort(); /* jansson took an object the raw matcher refused */
	if (relay_matcher_match_json(m, ev, NOW, &ids, &n2) || n2 != n ||
	    memcmp(ids, raw, n * sizeof(*ids)) != 0)
		abort();
	for (i = 0, k = 0; i < NPATS; i++) {
		int got = k < n && raw[k] == i;

		k += (size_t)got;
		if (relay_pattern_match(compiled[i], ev, NOW) != got)
			abort();
	}
	json_decref(ev);
	return 0;
}
