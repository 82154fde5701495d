/*
 * fuzz-trace.c - libFuzzer target: arbitrary bytes as a traceparent,
 * tracestate and baggage value (relay/trace.h).
 *
 * Byte 0 picks the parser (0: traceparent, 1: tracestate, 2: baggage);
 * the rest is the value. Each parser must return 0 or its documented
 * error codes and never read past the value. A parsed traceparent
 * formats to 55 characters that parse back to the same ids (and flags,
 * for version 00); a parsed tracestate is at most 512 characters and
 * parses again to itself; a valid baggage has 1 to 64 members.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "relay/trace.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	relay_trace_context c, d;
	char out[RELAY_TRACEPARENT_LEN + 1], *v;
	size_t n, members;
	int rc;

	if (size < 1)
		return 0;
	n = size - 1;
	/* an exact-size copy so ASan sees any overread */
	v = malloc(n ? n : 1);
	if (!v)
		return 0;
	memcpy(v, data + 1, n);
	switch (data[0] % 3) {
	case 0:
		rc = relay_trace_parent_parse(&c, v, n);
		if (rc != 0 && rc != RELAY_EPARSE && rc != RELAY_EINVAL)
			abort();
		if (rc == 0) {
			if (relay_trace_parent_format(&c, out) ||
			    strlen(out) != RELAY_TRACEPARENT_LEN ||
			    relay_trace_parent_parse(&d, out, strlen(out)) ||
			    memcmp(c.trace_id, d.trace_id, 16) ||
			    memcmp(c.span_id, d.span_id, 8) ||
			    c.flags != d.flags)
				abort();
			if (n >= 2 && memcmp(v, "00", 2) == 0 &&
			    memcmp(out, v, RELAY_TRACEPARENT_LEN))
				abort();
		}
		break;
	case 1:
		rc = relay_trace_state_parse(&c, v, n);
		if (rc != 0 && rc != RELAY_EPARSE && rc != RELAY_EINVAL)
			abort();
		if (rc != 0 && c.tracestate[0])
			abort();
		if (rc == 0) {
			if (strlen(c.tracestate) > RELAY_TRACESTATE_MAX ||
			    relay_trace_state_parse(&d, c.tracestate,
						    strlen(c.tracestate)) ||
			    strcmp(c.tracestate, d.tracestate))
				abort();
		}
		break;
	default:
		rc = relay_trace_baggage_check(v, n, &members);
		if (rc != 0 && rc != RELAY_EPARSE && rc != RELAY_EINVAL)
			abort();
		if (rc == 0 && (members < 1 ||
				members > RELAY_BAGGAGE_MAX_MEMBERS))
			abort();
		break;
	}
	free(v);
	return 0;
}
