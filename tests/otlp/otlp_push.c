/*
 * otlp_push.c - drives relayd's OTLP exporter (relayd/otlp/) in a
 * relayd-like libev loop for tests/otlp/test_otlp.py.
 *
 *	otlp_push N SECONDS
 *
 * Reads the exporter configuration from the OTEL_* environment exactly as
 * relayd does, submits N spans (a root "event", children "attempt" with
 * links, attributes of each type, an error status), then runs the loop
 * for at most SECONDS or until the exporter is idle. A prepare/check pair
 * measures the longest time the loop spent outside its poll (a blocked
 * loop shows up there). Prints one JSON line: the counters, the loop's
 * longest gap in ms, and the hex ids of the first root and child. The
 * log lines the exporter writes go to stderr. OTLP_PUSH_BIG=1 submits
 * one more span first, whose attribute is larger than the exporter's
 * per-span bound.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <ev.h>

#include "otlp.h"

static double last_check, max_gap;
static relay_otlp *x;
static double deadline;

static void on_prepare(struct ev_loop *loop, ev_prepare *w, int revents)
{
	double now = ev_time();

	(void)w;
	(void)revents;
	if (last_check > 0 && now - last_check > max_gap)
		max_gap = now - last_check;
	if (now > deadline || relay_otlp_idle(x))
		ev_break(loop, EVBREAK_ALL);
}

static void on_check(struct ev_loop *loop, ev_check *w, int revents)
{
	(void)loop;
	(void)w;
	(void)revents;
	last_check = ev_time();
}

static void on_tick(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop;
	(void)w;
	(void)revents;
}

static void logger(void *payload, relay_log_level lvl, const char *msgid,
		   const char *msg)
{
	(void)payload;
	fprintf(stderr, "%s %s %s\n", relay_log_level_name(lvl), msgid, msg);
}

int main(int argc, char **argv)
{
	struct ev_loop *loop = EV_DEFAULT;
	relay_otlp_config c;
	relay_otlp_counts k;
	relay_logger lg = { logger, NULL, RELAY_LOG_DEBUG };
	ev_prepare prep;
	ev_check chk;
	ev_timer tick;
	char err[256], root_hex[33], root_span[17], child_span[17];
	long n, i;
	int64_t t0 = (int64_t)time(NULL) * 1000000000;

	if (argc != 3)
		return 2;
	n = atol(argv[1]);
	if (relay_otlp_config_load(&c, getenv, err, sizeof(err))) {
		fprintf(stderr, "config: %s\n", err);
		return 1;
	}
	if (c.warning)
		fprintf(stderr, "warning: %s\n", c.warning);
	if (!relay_otlp_available()) {
		printf("{\"unavailable\":true}\n");
		relay_otlp_config_clear(&c);
		return 0;
	}
	if (relay_otlp_new(&x, loop, &c, lg)) {
		fprintf(stderr, "relay_otlp_new failed\n");
		relay_otlp_config_clear(&c);
		return 1;
	}
	relay_otlp_config_clear(&c);
	if (getenv("OTLP_PUSH_BIG")) {
		size_t big = RELAY_OTLP_SPAN_MAX_BYTES + 1;
		char *v = malloc(big + 1);
		relay_trace_attr a = { "relay.big", RELAY_TRACE_ATTR_STRING,
				       v, 0, false };
		relay_span s = RELAY_SPAN_INIT;

		if (!v)
			return 1;
		memset(v, 'x', big);
		v[big] = '\0';
		s.trace_id[0] = s.span_id[0] = 1;
		s.name = "big";
		s.attrs = &a;
		s.nattrs = 1;
		if (relay_otlp_submit(x, &s)) {
			fprintf(stderr, "an oversized span was queued\n");
			return 1;
		}
		free(v);
	}
	for (i = 0; i < n; i += 2) {
		relay_trace_context root, child;
		relay_trace_attr attrs[4] = {
			{ "relay.app", RELAY_TRACE_ATTR_STRING, "demo", 0,
			  false },
			{ "relay.attempt", RELAY_TRACE_ATTR_INT, NULL, i / 2 + 1,
			  false },
			{ "relay.final", RELAY_TRACE_ATTR_BOOL, NULL, 0, true },
			{ "relay.empty", RELAY_TRACE_ATTR_STRING, "", 0, false },
		};
		relay_span_link link = { { 0 }, { 0 }, 1, "k=v", attrs, 1 };
		relay_span s = RELAY_SPAN_INIT;

		relay_trace_context_child(&root, NULL, true);
		strcpy(root.tracestate, "rojo=00f067aa0ba902b7");
		relay_trace_context_child(&child, &root, true);
		memcpy(s.trace_id, root.trace_id, 16);
		memcpy(s.span_id, root.span_id, 8);
		s.name = "event";
		s.kind = RELAY_SPAN_KIND_CONSUMER;
		s.flags = root.flags;
		s.tracestate = root.tracestate;
		s.start_unix_ns = t0 + i;
		s.end_unix_ns = t0 + i + 1000;
		s.status = RELAY_SPAN_STATUS_OK;
		relay_otlp_submit(x, &s);
		if (i == 0) {
			relay_trace_hex(root.trace_id, 16, root_hex);
			relay_trace_hex(root.span_id, 8, root_span);
			relay_trace_hex(child.span_id, 8, child_span);
		}
		memcpy(link.trace_id, root.trace_id, 16);
		memcpy(link.span_id, root.span_id, 8);
		memcpy(s.span_id, child.span_id, 8);
		memcpy(s.parent_span_id, root.span_id, 8);
		s.name = "attempt";
		s.kind = RELAY_SPAN_KIND_INTERNAL;
		s.attrs = attrs;
		s.nattrs = 4;
		s.links = &link;
		s.nlinks = 1;
		s.status = RELAY_SPAN_STATUS_ERROR;
		s.status_message = "exit status 3";
		if (i + 1 < n)
			relay_otlp_submit(x, &s);
	}
	relay_otlp_flush(x);
	deadline = ev_time() + atof(argv[2]);
	ev_prepare_init(&prep, on_prepare);
	ev_check_init(&chk, on_check);
	/* a heartbeat: the loop wakes every 10 ms, like relayd's timers */
	ev_timer_init(&tick, on_tick, 0.01, 0.01);
	ev_prepare_start(loop, &prep);
	ev_check_start(loop, &chk);
	ev_timer_start(loop, &tick);
	ev_run(loop, 0);
	relay_otlp_counts_get(x, &k);
	printf("{\"exported\":%llu,\"dropped\":%llu,\"failed\":%llu,"
	       "\"queued\":%llu,\"max_gap_ms\":%.1f,\"trace_id\":\"%s\","
	       "\"root_span\":\"%s\",\"child_span\":\"%s\"}\n",
	       (unsigned long long)k.spans_exported,
	       (unsigned long long)k.spans_dropped,
	       (unsigned long long)k.exports_failed,
	       (unsigned long long)k.queued, max_gap * 1000., n ? root_hex : "",
	       n ? root_span : "", n ? child_span : "");
	relay_otlp_free(x);
	ev_prepare_stop(loop, &prep);
	ev_check_stop(loop, &chk);
	ev_timer_stop(loop, &tick);
	return 0;
}
