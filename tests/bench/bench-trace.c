/*
 * bench-trace.c - spans per second through the W3C parsers and the OTLP
 * encoder (doc/perf/trace.md).
 *
 *	bench-trace [N]
 *
 * Parses N traceparent + tracestate + baggage triples, then encodes N
 * attempt-like spans (5 attributes, 1 link) in batches of 512. Prints
 * one line per stage: operations per second and bytes per span.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "relay/trace.h"
#include "otlp.h"

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	static const char tp[] =
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
	static const char ts[] = "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE";
	static const char bg[] = "userId=alice,serverNode=DF%2028,"
				 "isProduction=false;p";
	long n = argc > 1 ? atol(argv[1]) : 1000000, i, ok = 0;
	relay_trace_context c;
	relay_trace_attr attrs[5] = {
		{ "relay.app", RELAY_TRACE_ATTR_STRING, "orders", 0, false },
		{ "relay.handler", RELAY_TRACE_ATTR_STRING, "on_paid", 0,
		  false },
		{ "messaging.message.id", RELAY_TRACE_ATTR_STRING,
		  "1718000000000-0", 0, false },
		{ "relay.attempt", RELAY_TRACE_ATTR_INT, NULL, 2, false },
		{ "relay.final", RELAY_TRACE_ATTR_BOOL, NULL, 0, true },
	};
	relay_trace_attr res = { "service.name", RELAY_TRACE_ATTR_STRING,
				 "relayd", 0, false };
	relay_span_link link = { { 1 }, { 2 }, 1, NULL, NULL, 0 };
	relay_span s = RELAY_SPAN_INIT, *batch[512];
	size_t members, bytes = 0, len;
	uint8_t *body;
	double t;

	t = now_s();
	for (i = 0; i < n; i++) {
		ok += relay_trace_parent_parse(&c, tp, sizeof(tp) - 1) == 0;
		ok += relay_trace_state_parse(&c, ts, sizeof(ts) - 1) == 0;
		ok += relay_trace_baggage_check(bg, sizeof(bg) - 1,
						&members) == 0;
	}
	t = now_s() - t;
	printf("w3c parse (traceparent+tracestate+baggage): %.0f/s (%ld ok)\n",
	       (double)n / t, ok);
	s.name = "attempt";
	s.kind = RELAY_SPAN_KIND_CONSUMER;
	s.attrs = attrs;
	s.nattrs = 5;
	s.links = &link;
	s.nlinks = 1;
	s.status = RELAY_SPAN_STATUS_ERROR;
	s.status_message = "exit status 1";
	relay_trace_random_ids(s.trace_id, s.span_id);
	for (i = 0; i < 512; i++)
		batch[i] = &s;
	t = now_s();
	for (i = 0; i < n; i += 512) {
		size_t k = (size_t)(n - i < 512 ? n - i : 512);

		if (relay_otlp_encode(&res, 1, "relayd", "0.1.0", batch, k,
				      &body, &len))
			return 1;
		bytes += len;
		free(body);
	}
	t = now_s() - t;
	printf("otlp encode (batches of 512): %.0f spans/s, %.1f bytes/span\n",
	       (double)n / t, (double)bytes / (double)n);
	return 0;
}
