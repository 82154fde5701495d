/*
 * fuzz-pattern.c - libFuzzer target: arbitrary bytes as a pattern.
 *
 * The input is decoded by jansson (any JSON value); relay_pattern_compile()
 * must either succeed or fail with RELAY_EPARSE and a one-line message.
 * A compiled pattern is matched against a few fixed events at two
 * instants through all three paths, which must agree: relay_pattern_match()
 * on the decoded event, a one-rule ruleset's relay_matcher_match() on the
 * raw text and its relay_matcher_match_json() on the decode.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "relay/pattern.h"

static const char *const events[] = {
	"{}",
	("{\"a\":\"x\",\"b\":1,\"c\":true,\"d\":null,\"e\":[1,\"x\"],"
	 "\"f\":{\"a\":\"user_1\",\"b\":-2.5,"
	 "\"t\":\"2026-01-01T11:58:00Z\"}}"),
	("{\"status\":\"COMPLETED\",\"id\":\"user_123\",\"amount\":1000,"
	 "\"new_image\":{\"status\":\"OK\",\"created_at\":"
	 "\"2026-01-01T13:59:00+02:00\",\"deleted_at\":null}}"),
	("{\"a\":{\"b\":{\"c\":{\"d\":\"\\u00e9\"}}},\"t\":"
	 "\"2026-01-01T10:00:00.5Z\",\"n\":0,\"s\":\"\",\"a\\\"b\":false}"),
	"{\"x\":70.0,\"y\":\"70\",\"z\":[],\"w\":{},\"a\":1,\"a\":\"dup\"}",
	("{\"ip\":\"10.0.0.7\",\"ip6\":\"2001:DB8::1\",\"m\":\"::ffff:10.0.0.1\","
	 "\"p\":\"/srv/a*b/logs\\\\x\",\"s\":\"ALICE\",\"n\":5,\"a\":\"\"}"),
};

#define NEV (sizeof(events) / sizeof(events[0]))

static json_t *decoded[NEV];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(const relay_pattern *p)
{
	static const relay_wall_ms nows[2] = { 1767268800000LL, 0 };
	relay_ruleset *rs = NULL;
	relay_matcher *m = NULL;
	const uint32_t *ids;
	size_t i, k, n, n2;

	if (relay_ruleset_new(&rs) || relay_ruleset_add(rs, p, NULL) ||
	    relay_ruleset_build(rs) || relay_matcher_new(&m, rs))
		abort();
	for (i = 0; i < NEV; i++) {
		for (k = 0; k < 2; k++) {
			int want = relay_pattern_match(p, decoded[i], nows[k]);

			if (relay_matcher_match(m, events[i],
						strlen(events[i]), nows[k],
						&ids, &n) || (int)n != want)
				abort();
			if (relay_matcher_match_json(m, decoded[i], nows[k],
						     &ids, &n2) ||
			    (int)n2 != want)
				abort();
		}
	}
	/* the explain walk agrees with relay_pattern_match() */
	for (i = 0; i < NEV; i++)
		if (relay_pattern_explain(p, decoded[i], nows[0], NULL, NULL) !=
		    relay_pattern_match(p, decoded[i], nows[0]))
			abort();
	relay_matcher_free(m);
	relay_ruleset_free(rs);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	relay_pattern *p = NULL;
	relay_error err;
	json_t *spec;
	size_t i;
	int rc;

	if (!decoded[0])
		for (i = 0; i < NEV; i++) {
			decoded[i] = json_loads(events[i], 0, NULL);
			if (!decoded[i])
				abort();
		}
	spec = json_loadb((const char *)data, size,
			  JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
	if (!spec)
		return 0;
	memset(&err, 0, sizeof(err));
	rc = relay_pattern_compile(&p, spec, &err);
	if (rc == 0) {
		if (!p)
			abort();
		check(p);
		relay_pattern_free(p);
	} else if (rc != RELAY_EPARSE || p || err.code != rc ||
		   !err.text[0] || strchr(err.text, '\n') ||
		   !memchr(err.text, '\0', sizeof(err.text))) {
		abort();
	}
	json_decref(spec);
	return 0;
}
