/*
 * test_consumer.c - the stream engine on the memory backend with a fixed
 * clock and a scripted in-process executor (suite unit). Every case
 * asserts on what Redis holds afterwards (PEL, state hash fields, TTLs,
 * DLQ entries) and on handler run counts.
 */
#include "lib/engine_fixture.h"

#define APP_A \
	"runtime: exec\n" \
	"command: [/bin/true]\n" \
	"concurrency: 8\n" \
	"events:\n" \
	"  - handler: h1\n" \
	"    pattern:\n" \
	"      kind: [x]\n"

#define MIN_IDLE 60000

static void test_consumer__matched_acked_retained(void)
{
	h_ctx h;
	const char *ev = "{\"kind\":\"x\",\"n\":1}";
	char id[64];
	relay_consumer_metrics m;
	h_script *s;
	long long ttl;

	h_init(&h, NULL);
	h_write_app(&h, "a", APP_A);
	h_start(&h);
	snprintf(id, sizeof(id), "%s", h_xadd(&h, ev));
	H_UNTIL(&h, h_metrics(&h).acks == 1, 5000);
	h_settle(&h, 20);
	m = h_metrics(&h);
	s = h_script_get(&h.exec, "a", "h1");
	RT_EQ_INT(s->runs, 1);
	RT_EQ_STR(s->last_event, ev);     /* bytes identical to the stream */
	RT_EQ_STR(s->last_id, id);        /* RELAY_MESSAGE_ID */
	RT_EQ_INT((int)h_pel(&h), 0);
	RT_EQ_STR(h_state(&h, id, "a/h1"), "ok");
	RT_EQ_STR(h_state(&h, id, "__terminal"), "1");
	ttl = h_pttl(&h, id);
	RT_CHECK(ttl > 167LL * 3600 * 1000 && ttl <= 168LL * 3600 * 1000);
	RT_EQ_INT((int)m.events_received, 1);
	RT_EQ_INT((int)m.events_matched, 1);
	RT_EQ_INT((int)m.events_unmatched, 0);
	RT_EQ_INT((int)m.handler_success, 1);
	RT_EQ_INT((int)m.buffered_events, 0);
	h_cleanup(&h);
}

static void test_consumer__unmatched_acked(void)
{
	h_ctx h;
	char id[64];
	relay_consumer_metrics m;

	h_init(&h, NULL);
	h_write_app(&h, "a", APP_A);
	h_start(&h);
	snprintf(id, sizeof(id), "%s", h_xadd(&h, "{\"kind\":\"other\"}"));
	H_UNTIL(&h, h_metrics(&h).acks == 1, 5000);
	m = h_metrics(&h);
	RT_EQ_INT(h.exec.total_runs, 0);
	RT_EQ_INT((int)h_pel(&h), 0);
	RT_EQ_INT((int)m.events_received, 1);
	RT_EQ_INT((int)m.events_unmatched, 1);
	RT_EQ_STR(h_state(&h, id, "__terminal"), "1");
	h_cleanup(&h);
}

typedef struct mal_case {
	const char *field;
	const char *value;
	size_t len;
	const char *event;   /* expected DLQ event field */
	const char *reason;  /* expected reason (prefix for decode) */
	size_t raw;          /* bytes of the stored event when it holds a
				NUL (else strlen(event)) */
} mal_case;

/* The length of field @name of DLQ entry @i as Redis holds it. */
static size_t dlq_field_len(h_ctx *h, size_t i, const char *name)
{
	relay_redis_reply *r = H_CMD(h, "XRANGE", "relay:events:dlq", "-",
				     "+");
	size_t k, len = (size_t)-1;

	RT_ASSERT(r->type == RELAY_REDIS_REPLY_ARRAY && i < r->elements);
	for (k = 0; k + 1 < r->element[i]->element[1]->elements; k += 2) {
		const relay_redis_reply *f = r->element[i]->element[1];

		if (strcmp(f->element[k]->str, name) == 0)
			len = f->element[k + 1]->len;
	}
	relay_redis_reply_free(r);
	return len;
}

static void test_consumer__malformed_placeholders(void)
{
	static const char big[] =
		"{\"kind\":\"x\",\"pad\":\"0123456789012345678901234567890"
		"123456789012345678901234567890123456789\"}";
	const mal_case cases[] = {
		{ "other", "{}", 2, "-", "missing 'event' field", 0 },
		{ "event", "{\"a\":\0}", 7, "{\"a\":",
		  "'event' field is not a string", 7 },
		/* Issue 13: an empty value and a value whose first byte is
		 * NUL wedged (the DLQ write refused them as "empty"). */
		{ "event", "", 0, "", "decode event: ", 0 },
		{ "event", "\0{}", 3, "", "'event' field is not a string",
		  3 },
		{ "event", big, sizeof(big) - 1,
		  "{\"relay_summary\":\"event_oversized\",\"event_bytes\":91,"
		  "\"max_event_bytes\":64}",
		  "event oversized: raw event value is 91 bytes, exceeds "
		  "MAX_EVENT_BYTES 64", 0 },
		{ "event", "{\"kind\":", 8, "{\"kind\":", "decode event: ",
		  0 },
		{ "event", "[1,2]", 5, "[1,2]",
		  "'event' is not a JSON object", 0 },
		{ "event", "{\"source\":\"relay.schedule\",\"app\":\"a\"}", 37,
		  "{\"source\":\"relay.schedule\",\"app\":\"a\"}",
		  "malformed schedule occurrence: missing \"schedule\"", 0 },
	};
	const size_t nc = sizeof(cases) / sizeof(cases[0]);
	char ids[10][64];
	relay_dlq_record *d;
	relay_consumer_metrics m;
	h_ctx h;
	size_t i, n;

	RT_EQ_INT((int)sizeof(big) - 1, 91);
	h_init(&h, NULL);
	h.o.max_event_bytes = 64;
	h_write_app(&h, "a", APP_A);
	h_start(&h);
	for (i = 0; i < nc; i++)
		snprintf(ids[i], sizeof(ids[i]), "%s",
			 h_xadd_field(&h, cases[i].field, cases[i].value,
				      cases[i].len));
	H_UNTIL(&h, h_metrics(&h).acks == nc, 5000);
	h_settle(&h, 20);
	RT_EQ_INT(h.exec.total_runs, 0);
	RT_EQ_INT((int)h_pel(&h), 0);
	d = h_dlq(&h, &n);
	RT_EQ_INT((int)n, (int)nc);
	for (i = 0; i < n && i < nc; i++) {
		relay_dlq_entry *e = &d[i].e;

		RT_EQ_STR(e->original_stream, "events");
		RT_EQ_STR(e->original_id, ids[i]);
		RT_EQ_STR(e->group, "relay");
		RT_EQ_STR(e->consumer, "c1");
		RT_EQ_STR(e->app, "-");
		RT_EQ_STR(e->handler, "-");
		RT_EQ_INT((int)e->handler_attempts, 0);
		RT_EQ_INT((int)e->deliveries, 1);
		RT_EQ_STR(e->event, cases[i].event);
		RT_EQ_INT((int)dlq_field_len(&h, i, "event"),
			  (int)(cases[i].raw ? cases[i].raw :
				strlen(cases[i].event)));
		RT_CHECK(strncmp(e->reason, cases[i].reason,
				 strlen(cases[i].reason)) == 0);
		RT_EQ_STR(e->timestamp, "2023-11-14T22:13:20.000Z");
		/* Only the entry without an event field keeps its fields
		 * apart (issue 41): the others' event is the value. */
		if (i == 0)
			RT_EQ_STR(e->source_fields, "other={}");
		else
			RT_CHECK(e->source_fields == NULL);
		RT_EQ_STR(h_state(&h, ids[i], "__dlq_placeholder"), "1");
		RT_EQ_STR(h_state(&h, ids[i], "__terminal"), "1");
	}
	m = h_metrics(&h);
	RT_EQ_INT((int)m.events_malformed, 7);
	RT_EQ_INT((int)m.events_oversized, 1);
	RT_EQ_INT((int)m.events_schedule, 1);
	RT_EQ_INT((int)m.events_received, 0);
	RT_EQ_INT((int)m.dlq_entries, (int)nc);
	h_dlq_free(d, n);
	h_cleanup(&h);
}

/*
 * An entry without an event field (a producer that wrote "payload"):
 * the placeholder keeps its field names and a bounded, escaped excerpt
 * of their values in source_fields (issue 41, R-5), next to the fixed
 * reason and event "-".
 */
static void test_consumer__malformed_keeps_source_fields(void)
{
	/* ts: a value longer than the 64 bytes kept of each. */
	static const char ts[] = "0123456789012345678901234567890123456789"
				 "0123456789012345678901234567890123456789";
	static const char *argv[] = {
		"XADD", "events", "*", "payload", "{\"type\":\"x\"}\n\x01",
		"ts", ts, "note", "caf\xc3\xa9 \xff",
	};
	relay_redis_reply *r;
	relay_dlq_record *d;
	h_ctx h;
	size_t n;

	h_init(&h, NULL);
	h_write_app(&h, "a", APP_A);
	h_start(&h);
	r = h_cmdv(&h, (int)(sizeof(argv) / sizeof(argv[0])), argv, NULL);
	RT_ASSERT(r->type == RELAY_REDIS_REPLY_STRING);
	relay_redis_reply_free(r);
	H_UNTIL(&h, h_metrics(&h).acks == 1, 5000);
	d = h_dlq(&h, &n);
	RT_EQ_INT((int)n, 1);
	if (n == 1) {
		RT_EQ_STR(d[0].e.reason, "missing 'event' field");
		RT_EQ_STR(d[0].e.event, "-");
		RT_EQ_STR(d[0].e.source_fields,
			  "payload={\"type\":\"x\"}\\x0a\\x01 "
			  "ts=0123456789012345678901234567890123456789"
			  "012345678901234567890123... "
			  "note=caf\xc3\xa9 \\xff");
	}
	h_dlq_free(d, n);
	h_cleanup(&h);
}

#define APP_FAIL \
	"runtime: exec\n" \
	"command: [/bin/false]\n" \
	"events:\n" \
	"  - handler: good\n" \
	"    pattern:\n" \
	"      kind: [x]\n" \
	"  - handler: bad\n" \
	"    pattern:\n" \
	"      kind: [x]\n"

/*
 * The full retry schedule: 5 attempts, each only once its
 * next_attempt_at has passed (1m, 2m, 5m, 10m), a redelivery before the
 * deadline runs nothing, then one DLQ entry with every field, ACK,
 * retention. The succeeding sibling runs exactly once.
 */
static void test_consumer__retry_schedule_then_dlq(void)
{
	static const int64_t backoff[] = { 60000, 120000, 300000, 600000 };
	h_ctx h;
	char id[64], want[200];
	const char *st;
	relay_dlq_record *d;
	relay_consumer_metrics m;
	h_script *good, *bad;
	size_t n;
	int i;

	h_init(&h, NULL);
	h_write_app(&h, "a", APP_FAIL);
	h_start(&h);
	bad = h_script_get(&h.exec, "a", "bad");
	good = h_script_get(&h.exec, "a", "good");
	bad->fail = 1;
	snprintf(id, sizeof(id), "%s", h_xadd(&h, "{\"kind\":\"x\"}"));
	H_UNTIL(&h, bad->runs == 1 && h_metrics(&h).buffered_events == 0,
		5000);
	for (i = 0; i < 4; i++) {
		int64_t due = h.fclock.wall + backoff[i];

		RT_EQ_INT(bad->runs, i + 1);
		st = h_state(&h, id, "a/bad");
		snprintf(want, sizeof(want), "next_attempt_at:%lld:%d:",
			 (long long)due, i + 1);
		RT_CHECK(strncmp(st, want, strlen(want)) == 0);
		/* Redelivered before the deadline: skipped. */
		h_retry_round(&h, backoff[i] - 1000);
		RT_EQ_INT(bad->runs, i + 1);
		RT_EQ_INT((int)h_pel(&h), 1);
		/* Past the deadline (and idle long enough to be
		 * reclaimed): the next attempt runs. */
		h_retry_round(&h, MIN_IDLE);
		H_UNTIL(&h, bad->runs == i + 2 &&
			h_metrics(&h).buffered_events == 0, 5000);
	}
	H_UNTIL(&h, h_pel(&h) == 0, 5000);
	RT_EQ_INT(bad->runs, 5);
	RT_EQ_INT(good->runs, 1);
	RT_EQ_INT((int)h_pel(&h), 0);
	st = h_state(&h, id, "a/bad");
	RT_CHECK(strncmp(st, "exhausted:5:", 12) == 0);
	RT_CHECK(strlen(st) > 4 && strcmp(st + strlen(st) - 4, ":dlq") == 0);
	RT_EQ_STR(h_state(&h, id, "a/good"), "ok");
	RT_EQ_STR(h_state(&h, id, "__terminal"), "1");
	d = h_dlq(&h, &n);
	RT_EQ_INT((int)n, 1);
	if (n == 1) {
		RT_EQ_STR(d[0].e.original_stream, "events");
		RT_EQ_STR(d[0].e.original_id, id);
		RT_EQ_STR(d[0].e.group, "relay");
		RT_EQ_STR(d[0].e.consumer, "c1");
		RT_EQ_STR(d[0].e.event, "{\"kind\":\"x\"}");
		RT_EQ_STR(d[0].e.app, "a");
		RT_EQ_STR(d[0].e.handler, "bad");
		RT_EQ_INT((int)d[0].e.handler_attempts, 5);
		/* read + 7 reclaims (the first early one was not idle
		 * long enough to be reclaimed at all) */
		RT_EQ_INT((int)d[0].e.deliveries, 8);
		RT_EQ_STR(d[0].e.reason, "invocation exhausted: app \"a\" "
			  "handler \"bad\" exhausted after 5 handler "
			  "attempts: exit status 3");
	}
	h_dlq_free(d, n);
	m = h_metrics(&h);
	RT_EQ_INT((int)m.events_received, 1);  /* once across 5 deliveries */
	RT_EQ_INT((int)m.events_matched, 1);
	RT_EQ_INT((int)m.handler_failure, 5);
	RT_EQ_INT((int)m.handler_success, 1);
	RT_EQ_INT((int)m.retries, 4);
	RT_EQ_INT((int)m.dlq_entries, 1);
	RT_EQ_INT((int)m.reclaims, 7);
	h_cleanup(&h);
}

static void test_consumer__three_apps_exhaust(void)
{
	static const char *const names[] = { "a1", "a2", "a3" };
	const char *yaml = "runtime: exec\ncommand: [/bin/false]\nevents:\n"
		"  - handler: h\n    retries: 0\n    pattern:\n"
		"      kind: [x]\n";
	relay_dlq_record *d;
	h_ctx h;
	size_t n, i;

	h_init(&h, NULL);
	for (i = 0; i < 3; i++) {
		h_write_app(&h, names[i], yaml);
		h_script_get(&h.exec, names[i], "h")->fail = 1;
	}
	h_start(&h);
	h_xadd(&h, "{\"kind\":\"x\"}");
	H_UNTIL(&h, h_metrics(&h).acks == 1, 5000);
	d = h_dlq(&h, &n);
	RT_EQ_INT((int)n, 3);
	for (i = 0; i < n && i < 3; i++) {
		RT_EQ_STR(d[i].e.app, names[i]);
		RT_EQ_STR(d[i].e.handler, "h");
		RT_EQ_INT((int)d[i].e.handler_attempts, 1);
	}
	RT_EQ_INT(h.exec.total_runs, 3);
	RT_EQ_INT((int)h_pel(&h), 0);
	h_dlq_free(d, n);
	h_cleanup(&h);
}

static void test_consumer__buffer_limit(void)
{
	h_ctx h;
	int i;

	h_init(&h, NULL);
	h.o.max_buffered = 3;
	h_write_app(&h, "a", APP_A);
	h_script_get(&h.exec, "a", "h1")->hold = 1;
	h_start(&h);
	for (i = 0; i < 10; i++)
		h_xadd(&h, "{\"kind\":\"x\"}");
	H_UNTIL(&h, h.exec.total_runs == 3, 5000);
	h_settle(&h, 50);
	RT_EQ_INT(h.exec.total_runs, 3);
	RT_EQ_INT((int)h_pel(&h), 3);      /* the backlog stays in Redis */
	RT_EQ_INT((int)h_metrics(&h).buffered_events, 3);
	h_script_get(&h.exec, "a", "h1")->hold = 0;
	h_release(&h.exec, NULL);
	H_UNTIL(&h, h_metrics(&h).acks == 10, 5000);
	RT_EQ_INT(h.exec.total_runs, 10);
	RT_EQ_INT((int)h_pel(&h), 0);
	h_cleanup(&h);
}

/*
 * One slot: the first message holds it; the others wait the bounded slot
 * wait (30 s / 1000), give up with no attempt charged and stay pending;
 * a later reclaim drains them.
 */
static void test_consumer__slot_saturation(void)
{
	h_ctx h;
	char ids[3][64];
	h_script *s;
	int i;

	h_init(&h, NULL);
	h.o.max_concurrency = 1;
	h.o.time_scale = 1000;
	h_write_app(&h, "a", APP_A);
	s = h_script_get(&h.exec, "a", "h1");
	s->hold = 1;
	h_start(&h);
	for (i = 0; i < 3; i++)
		snprintf(ids[i], sizeof(ids[i]), "%s",
			 h_xadd(&h, "{\"kind\":\"x\"}"));
	H_UNTIL(&h, h_metrics(&h).concurrency_timeouts == 2, 5000);
	RT_EQ_INT(s->runs, 1);
	RT_CHECK(h_metrics(&h).concurrency_waits >= 2);
	RT_EQ_STR(h_state(&h, ids[1], "a/h1"), "");  /* no attempt */
	RT_EQ_STR(h_state(&h, ids[2], "a/h1"), "");
	/* the classification goes with the first claim: a waiter that gave
	 * up wrote nothing and is counted by the delivery that claims */
	RT_EQ_STR(h_state(&h, ids[1], "__classification"), "");
	RT_EQ_INT((int)h_metrics(&h).events_received, 1);
	s->hold = 0;
	h_release(&h.exec, NULL);
	H_UNTIL(&h, h_metrics(&h).acks == 1, 5000);
	RT_EQ_INT((int)h_pel(&h), 2);
	for (i = 0; i < 20 && h_pel(&h) > 0; i++)
		h_retry_round(&h, MIN_IDLE / 1000 + 1);
	RT_EQ_INT((int)h_pel(&h), 0);
	RT_EQ_INT(s->runs, 3);
	RT_EQ_STR(h_state(&h, ids[2], "a/h1"), "ok");
	RT_EQ_INT((int)h_metrics(&h).events_received, 3);  /* once each */
	h_cleanup(&h);
}

/* Slot hand-over where the woken waiters' try_start is refused at once:
 * each is resolved in place (no run, stays pending), nothing dangles, and
 * a later reclaim drains everything. */
static void test_consumer__slot_handover_refused(void)
{
	h_ctx h;
	h_script *s;
	int i;

	h_init(&h, NULL);
	h.o.max_concurrency = 1;
	h_write_app(&h, "a", APP_A);
	s = h_script_get(&h.exec, "a", "h1");
	s->hold = 1;
	h_start(&h);
	for (i = 0; i < 4; i++)
		h_xadd(&h, "{\"kind\":\"x\"}");
	H_UNTIL(&h, h_metrics(&h).concurrency_waits == 3, 5000);
	RT_EQ_INT(s->runs, 1);
	/* a waiter's first claim carries its classification */
	h.fault->refuse_script[RELAY_REDIS_SCRIPT_CLAIM_START] = 3;
	s->hold = 0;
	h_release(&h.exec, NULL);
	H_UNTIL(&h, h_metrics(&h).acks == 1 &&
		h_metrics(&h).buffered_events == 0, 5000);
	RT_EQ_INT(s->runs, 1);
	RT_EQ_INT((int)h_pel(&h), 3);
	for (i = 0; i < 20 && h_pel(&h) > 0; i++)
		h_retry_round(&h, MIN_IDLE + 1);
	RT_EQ_INT((int)h_pel(&h), 0);
	RT_EQ_INT(s->runs, 4);
	h_cleanup(&h);
}

static void test_consumer__unavailable_app_stays_pending(void)
{
	h_ctx h;
	char id[64];

	h_init(&h, NULL);
	h_write_app(&h, "b", APP_A);
	h_start(&h);
	snprintf(id, sizeof(id), "%s", h_xadd(&h, "{\"kind\":\"x\"}"));
	H_UNTIL(&h, h_metrics(&h).events_matched == 1 &&
		h_metrics(&h).buffered_events == 0, 5000);
	h_retry_round(&h, MIN_IDLE + 1);
	h_retry_round(&h, MIN_IDLE + 1);
	RT_EQ_INT(h.exec.total_runs, 0);
	RT_EQ_INT((int)h_pel(&h), 1);
	RT_EQ_STR(h_state(&h, id, "b/h1"), "");  /* no attempt counted */
	RT_EQ_INT((int)h_dlq_count(&h), 0);
	h.avail_b = 1;
	h_retry_round(&h, MIN_IDLE + 1);
	H_UNTIL(&h, h_pel(&h) == 0, 5000);
	RT_EQ_INT(h.exec.total_runs, 1);
	RT_EQ_STR(h_state(&h, id, "b/h1"), "ok");
	RT_EQ_INT((int)h_metrics(&h).events_received, 1);
	h_cleanup(&h);
}

static void test_consumer__missing_payload(void)
{
	h_ctx h;
	char id[64];
	relay_redis_reply *r;

	h_init(&h, NULL);
	h_write_app(&h, "a", APP_A);
	r = H_CMD(&h, "XGROUP", "CREATE", "events", "relay", "0",
		  "MKSTREAM");
	relay_redis_reply_free(r);
	snprintf(id, sizeof(id), "%s", h_xadd(&h, "{\"kind\":\"x\"}"));
	/* A crashed consumer read it; then the entry was deleted. */
	relay_redis_reply_free(H_CMD(&h, "XREADGROUP", "GROUP", "relay",
				     "ghost", "COUNT", "10", "STREAMS",
				     "events", ">"));
	relay_redis_reply_free(H_CMD(&h, "XDEL", "events", id));
	RT_EQ_INT((int)h_pel(&h), 1);
	h_start(&h);
	h_settle(&h, 20);
	h_retry_round(&h, MIN_IDLE + 1);
	H_UNTIL(&h, h_metrics(&h).missing_payload == 1 &&
		h_metrics(&h).buffered_events == 0, 5000);
	RT_EQ_INT((int)h_metrics(&h).missing_payload, 1);
	RT_EQ_INT((int)h_pel(&h), 0);
	RT_EQ_INT(h.exec.total_runs, 0);
	RT_EQ_INT((int)h_dlq_count(&h), 0);
	RT_EQ_INT((int)h_metrics(&h).events_received, 0);
	h_cleanup(&h);
}

/*
 * The first claim fails (@op: TRY_START behind the classification on a
 * version 3 backend, CLAIM_START on version 4; @refuse: the send itself
 * fails instead of the reply): fail closed, nothing runs, the message
 * stays pending; the next delivery runs it once.
 */
static void first_claim_fails(unsigned int version, int op, int refuse)
{
	h_ctx h;
	char id[64];

	h_init(&h, NULL);
	h.fault->parent.version = version;
	h_write_app(&h, "a", APP_A);
	if (refuse)
		h.fault->refuse_script[op] = 1;
	else
		h.fault->fail_script[op] = 1;
	h_start(&h);
	snprintf(id, sizeof(id), "%s", h_xadd(&h, "{\"kind\":\"x\"}"));
	H_UNTIL(&h, h.fault->scripts[op] == 1 &&
		h_metrics(&h).buffered_events == 0, 5000);
	h_settle(&h, 20);
	RT_EQ_INT(h.exec.total_runs, 0);  /* not executed */
	RT_EQ_INT((int)h_pel(&h), 1);     /* stays pending */
	RT_EQ_STR(h_state(&h, id, "a/h1"), "");
	if (version >= 4) {
		/* one step: the classification is not recorded either */
		RT_EQ_STR(h_state(&h, id, "__classification"), "");
		RT_EQ_INT((int)h_metrics(&h).events_received, 0);
	}
	h_retry_round(&h, MIN_IDLE + 1);
	H_UNTIL(&h, h_pel(&h) == 0, 5000);
	RT_EQ_INT(h.exec.total_runs, 1);
	RT_EQ_INT((int)h_metrics(&h).events_received, 1);
	RT_EQ_STR(h_state(&h, id, "a/h1"), "ok");
	h_cleanup(&h);
}

static void test_consumer__try_start_error_fails_closed(void)
{
	first_claim_fails(3, RELAY_REDIS_SCRIPT_TRY_START, 0);
}

static void test_consumer__claim_start_error_fails_closed(void)
{
	first_claim_fails(RELAY_REDIS_BACKEND_VERSION,
			  RELAY_REDIS_SCRIPT_CLAIM_START, 0);
}

static void test_consumer__claim_start_refused_fails_closed(void)
{
	first_claim_fails(RELAY_REDIS_BACKEND_VERSION,
			  RELAY_REDIS_SCRIPT_CLAIM_START, 1);
}

/* The classification store fails: the message is not acknowledged by
 * that delivery (the handler, already claimed, may run once); the next
 * delivery counts it once and acknowledges it. */
static void test_consumer__classification_error_not_acked(void)
{
	h_ctx h;
	char id[64];

	h_init(&h, NULL);
	h.fault->parent.version = 3;  /* classification sent apart */
	h_write_app(&h, "a", APP_A);
	h.fault->fail_script[RELAY_REDIS_SCRIPT_CLAIM_CLASSIFICATION] = 1;
	h_start(&h);
	snprintf(id, sizeof(id), "%s", h_xadd(&h, "{\"kind\":\"x\"}"));
	H_UNTIL(&h, h.fault->scripts[RELAY_REDIS_SCRIPT_CLAIM_CLASSIFICATION]
		== 1 && h_metrics(&h).buffered_events == 0, 5000);
	h_settle(&h, 20);
	RT_EQ_INT((int)h_pel(&h), 1);
	RT_EQ_INT((int)h_metrics(&h).events_received, 0);
	RT_CHECK(h.exec.total_runs <= 1);
	h_retry_round(&h, MIN_IDLE + 1);
	H_UNTIL(&h, h_pel(&h) == 0, 5000);
	RT_EQ_INT((int)h_pel(&h), 0);
	RT_EQ_INT(h.exec.total_runs, 1);
	RT_EQ_INT((int)h_metrics(&h).events_received, 1);
	RT_EQ_STR(h_state(&h, id, "a/h1"), "ok");
	h_cleanup(&h);
}

static void test_consumer__dlq_write_failure_reroutes(void)
{
	const char *yaml = "runtime: exec\ncommand: [/bin/false]\nevents:\n"
		"  - handler: h\n    retries: 0\n    pattern:\n"
		"      kind: [x]\n";
	h_ctx h;
	char id[64];
	const char *st;
	relay_dlq_record *d;
	size_t n;

	h_init(&h, NULL);
	h_write_app(&h, "a", yaml);
	h_script_get(&h.exec, "a", "h")->fail = 1;
	h.fault->fail_script[RELAY_REDIS_SCRIPT_DLQ_PERSIST] = 1;
	h_start(&h);
	snprintf(id, sizeof(id), "%s", h_xadd(&h, "{\"kind\":\"x\"}"));
	H_UNTIL(&h, h.fault->scripts[RELAY_REDIS_SCRIPT_DLQ_PERSIST] == 1 &&
		h_metrics(&h).buffered_events == 0, 5000);
	RT_EQ_INT((int)h_pel(&h), 1);     /* not acknowledged without entry */
	st = h_state(&h, id, "a/h");
	RT_CHECK(strncmp(st, "exhausted:1:", 12) == 0 && !strstr(st, ":dlq"));
	RT_EQ_INT((int)h_dlq_count(&h), 0);
	h_retry_round(&h, MIN_IDLE + 1);
	H_UNTIL(&h, h_pel(&h) == 0, 5000);
	d = h_dlq(&h, &n);
	RT_EQ_INT((int)n, 1);
	if (n == 1) {
		RT_EQ_INT((int)d[0].e.handler_attempts, 1);
		RT_EQ_INT((int)d[0].e.deliveries, 2);
	}
	h_dlq_free(d, n);
	RT_EQ_INT(h.exec.total_runs, 1);  /* re-routed, not re-run */
	h_cleanup(&h);
}

static void test_consumer__removed_rule_stops_gating(void)
{
	h_ctx h;
	char id[64];

	h_init(&h, NULL);
	h_write_app(&h, "a", APP_FAIL);
	h_script_get(&h.exec, "a", "bad")->fail = 1;
	h_start(&h);
	snprintf(id, sizeof(id), "%s", h_xadd(&h, "{\"kind\":\"x\"}"));
	H_UNTIL(&h, h.exec.total_runs == 2 &&
		h_metrics(&h).buffered_events == 0, 5000);
	RT_EQ_INT((int)h_pel(&h), 1);
	h_write_app(&h, "a", APP_A "  - handler: good\n    pattern:\n"
		    "      kind: [x]\n");
	h_load_apps(&h);
	h_retry_round(&h, 120000);
	H_UNTIL(&h, h_pel(&h) == 0, 5000);
	RT_EQ_INT((int)h_pel(&h), 0);
	RT_EQ_INT(h_script_get(&h.exec, "a", "bad")->runs, 1);
	RT_EQ_INT(h_script_get(&h.exec, "a", "good")->runs, 1);
	RT_EQ_INT(h_script_get(&h.exec, "a", "h1")->runs, 1);
	RT_EQ_INT((int)h_dlq_count(&h), 0);
	h_cleanup(&h);
}

/* Ownership renewal keeps a live owner's message out of XAUTOCLAIM. */
static void test_consumer__renewal_blocks_replica_reclaim(void)
{
	h_ctx h;
	relay_redis_reply *r;
	char idle[32];

	h_init(&h, NULL);
	h_write_app(&h, "a", APP_A);
	h_script_get(&h.exec, "a", "h1")->hold = 1;
	h_start(&h);
	h_xadd(&h, "{\"kind\":\"x\"}");
	H_UNTIL(&h, h.exec.total_runs == 1, 5000);
	h_advance(&h, MIN_IDLE + 1);
	h_renew_now(h.c);
	h_settle(&h, 20);
	snprintf(idle, sizeof(idle), "%d", MIN_IDLE);
	r = H_CMD(&h, "XAUTOCLAIM", "events", "relay", "c2", idle, "0-0");
	RT_ASSERT(r->type == RELAY_REDIS_REPLY_ARRAY && r->elements >= 2);
	RT_EQ_INT((int)r->element[1]->elements, 0);  /* nothing stolen */
	relay_redis_reply_free(r);
	h_script_get(&h.exec, "a", "h1")->hold = 0;
	h_release(&h.exec, NULL);
	H_UNTIL(&h, h_pel(&h) == 0, 5000);
	RT_EQ_INT(h.exec.total_runs, 1);
	h_cleanup(&h);
}

static int stopped_flag;

static void on_stopped(relay_consumer *c, void *payload)
{
	(void)c;
	(void)payload;
	stopped_flag++;
}

/* Graceful stop: the running handler finishes and is recorded; work not
 * started is left pending with no attempt charged. */
static void test_consumer__graceful_stop(void)
{
	h_ctx h;
	char ids[2][64];

	h_init(&h, NULL);
	h.o.max_concurrency = 1;
	h_write_app(&h, "a", APP_A);
	h_script_get(&h.exec, "a", "h1")->hold = 1;
	h_start(&h);
	snprintf(ids[0], sizeof(ids[0]), "%s", h_xadd(&h,
						       "{\"kind\":\"x\"}"));
	H_UNTIL(&h, h.exec.total_runs == 1, 5000);
	snprintf(ids[1], sizeof(ids[1]), "%s", h_xadd(&h,
						       "{\"kind\":\"x\"}"));
	H_UNTIL(&h, h_metrics(&h).concurrency_waits == 1, 5000);
	stopped_flag = 0;
	RT_EQ_INT(relay_consumer_stop(h.c, 1, on_stopped, NULL), 0);
	h_settle(&h, 30);
	RT_EQ_INT(stopped_flag, 0);       /* a handler is still running */
	h_release(&h.exec, NULL);
	H_UNTIL(&h, stopped_flag == 1, 5000);
	RT_EQ_INT(stopped_flag, 1);
	/* Closing after the stop callback does not report the stop twice. */
	h_closed_flag = 0;
	relay_consumer_close(h.c, h_closed);
	H_UNTIL(&h, h_closed_flag, 5000);
	RT_EQ_INT(h_closed_flag, 1);
	RT_EQ_INT(stopped_flag, 1);
	h.c = NULL;
	RT_EQ_STR(h_state(&h, ids[0], "a/h1"), "ok");
	RT_EQ_STR(h_state(&h, ids[1], "a/h1"), "");  /* not charged */
	RT_EQ_INT((int)h_pel(&h), 1);
	RT_EQ_INT(h.exec.total_runs, 1);
	h_cleanup(&h);
}

/* Stop at once: the running handler is cancelled, nothing is recorded,
 * the message stays pending; a second stop call is accepted. */
static void test_consumer__stop_at_once(void)
{
	h_ctx h;
	char id[64];

	h_init(&h, NULL);
	h_write_app(&h, "a", APP_A);
	h_script_get(&h.exec, "a", "h1")->hold = 1;
	h_start(&h);
	snprintf(id, sizeof(id), "%s", h_xadd(&h, "{\"kind\":\"x\"}"));
	H_UNTIL(&h, h.exec.total_runs == 1, 5000);
	stopped_flag = 0;
	RT_EQ_INT(relay_consumer_stop(h.c, 1, on_stopped, NULL), 0);
	h_settle(&h, 20);
	RT_EQ_INT(stopped_flag, 0);
	RT_EQ_INT(relay_consumer_stop(h.c, 0, on_stopped, NULL), 0);
	H_UNTIL(&h, stopped_flag == 1, 5000);
	RT_EQ_INT(stopped_flag, 1);
	RT_CHECK(strncmp(h_state(&h, id, "a/h1"), "running:", 8) == 0);
	RT_EQ_INT((int)h_pel(&h), 1);
	RT_EQ_INT((int)h_metrics(&h).in_flight_invocations, 0);
	h_cleanup(&h);
}

static int hist_visit(const relay_consumer_histogram *hg, void *payload)
{
	char *out = payload;
	size_t n = strlen(out);

	snprintf(out + n, 256 - n, "%s/%s:%llu:%llu ", hg->app, hg->handler,
		 (unsigned long long)hg->count,
		 (unsigned long long)hg->buckets[0]);
	return 0;
}

/* Histograms per app/handler in name order; reset zeroes counters but
 * not gauges; the XPENDING gauge is refreshed. */
static void test_consumer__metrics_histograms_reset(void)
{
	h_ctx h;
	char out[256] = "";
	relay_consumer_metrics m;

	h_init(&h, NULL);
	h.o.time_scale = 1000;           /* XPENDING refresh every 5 ms */
	h_write_app(&h, "a", APP_FAIL);
	h_write_app(&h, "b", APP_A);
	h.avail_b = 1;
	h_script_get(&h.exec, "a", "bad")->fail = 1;
	h_start(&h);
	h_xadd(&h, "{\"kind\":\"x\"}");
	h_xadd(&h, "{\"kind\":\"x\"}");
	H_UNTIL(&h, h.exec.total_runs == 6 &&
		h_metrics(&h).buffered_events == 0, 5000);
	H_UNTIL(&h, h_metrics(&h).pending_entries == 2, 5000);
	RT_EQ_INT(relay_consumer_histograms(h.c, hist_visit, out), 0);
	RT_EQ_STR(out, "a/bad:2:2 a/good:2:2 b/h1:2:2 ");
	m = h_metrics(&h);
	RT_EQ_INT((int)m.pending_entries, 2);
	RT_EQ_INT((int)m.handler_failure, 2);
	relay_consumer_metrics_reset(h.c);
	m = h_metrics(&h);
	RT_EQ_INT((int)m.handler_failure, 0);
	RT_EQ_INT((int)m.events_received, 0);
	RT_EQ_INT((int)m.pending_entries, 2);
	out[0] = '\0';
	relay_consumer_histograms(h.c, hist_visit, out);
	RT_EQ_STR(out, "a/bad:0:0 a/good:0:0 b/h1:0:0 ");
	h_cleanup(&h);
}

#define APP_OUTCOMES \
	"runtime: exec\n" \
	"command: [/bin/false]\n" \
	"events:\n" \
	"  - handler: ok\n" \
	"    pattern:\n" \
	"      kind: [x]\n" \
	"  - handler: bad\n" \
	"    retries: 0\n" \
	"    pattern:\n" \
	"      kind: [x]\n" \
	"  - handler: slow\n" \
	"    retries: 0\n" \
	"    pattern:\n" \
	"      kind: [x]\n"

static int outcome_visit(const relay_consumer_histogram *hg, void *payload)
{
	char *out = payload;
	size_t n = strlen(out);

	snprintf(out + n, 256 - n, "%s/%s:%llu,%llu,%llu,%llu:%llu ",
		 hg->app, hg->handler, (unsigned long long)hg->succeeded,
		 (unsigned long long)hg->failed,
		 (unsigned long long)hg->timed_out,
		 (unsigned long long)hg->exhausted,
		 (unsigned long long)hg->count);
	return 0;
}

/* Outcomes per app/handler (metrics version 4): every attempt counts once
 * as succeeded, failed or timed_out; an invocation out of attempts counts
 * once as exhausted; a version 3 caller gets none of the version 4
 * fields; reset zeroes them. */
static void test_consumer__metrics_outcomes(void)
{
	h_ctx h;
	char out[256] = "";
	relay_consumer_metrics m;

	h_init(&h, NULL);
	h.o.time_scale = 1000;           /* 1m retry backoff: 60 ms */
	h_write_app(&h, "a", APP_OUTCOMES);
	h_script_get(&h.exec, "a", "bad")->fail = 1;
	h_script_get(&h.exec, "a", "slow")->fail = 2;
	h_start(&h);
	h_xadd(&h, "{\"kind\":\"x\"}");
	H_UNTIL(&h, h_metrics(&h).invocations_exhausted == 2 &&
		h_metrics(&h).acks == 1, 5000);
	RT_EQ_INT(relay_consumer_histograms(h.c, outcome_visit, out), 0);
	/* ok: 1 success; bad: 1 failure, exhausted (retries 0); slow: 1
	 * timeout, exhausted. */
	RT_EQ_STR(out, "a/bad:0,1,0,1:1 a/ok:1,0,0,0:1 a/slow:0,0,1,1:1 ");
	m = h_metrics(&h);
	RT_EQ_INT((int)m.handler_success, 1);
	RT_EQ_INT((int)m.handler_failure, 2);
	RT_EQ_INT((int)m.handler_timeouts, 1);
	RT_EQ_INT((int)m.invocations_exhausted, 2);
	/* A version 3 caller: the version 4 fields stay as they were. */
	memset(&m, 0xab, sizeof(m));
	m.version = 3;
	RT_EQ_INT(relay_consumer_metrics_get(h.c, &m), 0);
	RT_EQ_INT((int)m.version, 3);
	RT_EQ_INT((int)m.handler_success, 1);
	RT_CHECK(m.handler_timeouts == 0xababababababababULL);
	RT_CHECK(m.invocations_exhausted == 0xababababababababULL);
	m.version = RELAY_CONSUMER_METRICS_VERSION + 1;
	RT_EQ_INT(relay_consumer_metrics_get(h.c, &m), RELAY_EINVAL);
	relay_consumer_metrics_reset(h.c);
	out[0] = '\0';
	relay_consumer_histograms(h.c, outcome_visit, out);
	RT_EQ_STR(out, "a/bad:0,0,0,0:0 a/ok:0,0,0,0:0 a/slow:0,0,0,0:0 ");
	m = h_metrics(&h);
	RT_EQ_INT((int)m.handler_timeouts, 0);
	RT_EQ_INT((int)m.invocations_exhausted, 0);
	h_cleanup(&h);
}

/* An outage: health goes false, logged once; recovery logged once; the
 * message published meanwhile is handled after recovery. */
static void test_consumer__redis_outage(void)
{
	h_ctx h;
	relay_consumer_health hl;

	h_init(&h, NULL);
	h.o.time_scale = 100;
	h_write_app(&h, "a", APP_A);
	h_start(&h);
	H_UNTIL(&h, h_group_ok(h.c), 5000);
	relay_consumer_health_get(h.c, &hl);
	RT_EQ_INT(hl.ready, 1);
	RT_EQ_INT(relay_redis_memory_set_down(h.fault->inner, 1), 0);
	H_UNTIL(&h, h.logs_down == 1, 5000);
	h_settle(&h, 200);                /* several failed reads */
	relay_consumer_health_get(h.c, &hl);
	RT_EQ_INT(hl.redis_up, 0);
	RT_EQ_INT(hl.ready, 0);
	RT_CHECK(strncmp(hl.reason, "redis unavailable", 17) == 0);
	RT_EQ_INT(h.logs_down, 1);
	RT_EQ_INT(relay_redis_memory_set_down(h.fault->inner, 0), 0);
	h_xadd(&h, "{\"kind\":\"x\"}");
	H_UNTIL(&h, h_metrics(&h).acks == 1, 5000);
	relay_consumer_health_get(h.c, &hl);
	RT_EQ_INT(hl.ready, 1);
	RT_EQ_INT(h.logs_up, 1);
	RT_EQ_INT(h.logs_down, 1);
	RT_EQ_INT((int)h_pel(&h), 0);
	h_cleanup(&h);
}

static void test_consumer__options_validated(void)
{
	h_ctx h;
	relay_consumer *c = NULL;
	relay_error err;

	h_init(&h, NULL);
	h_write_app(&h, "a", APP_A);
	h_load_apps(&h);
	h.o.max_event_bytes = 2 * 1024 * 1024;
	RT_EQ_INT(relay_consumer_new(&c, h.loop, h.redis, NULL, h.apps, &h.o,
				     &err), RELAY_EINVAL);
	h.o.max_event_bytes = 0;
	h.o.stream = NULL;
	RT_EQ_INT(relay_consumer_new(&c, h.loop, h.redis, NULL, h.apps, &h.o,
				     &err), RELAY_EINVAL);
	RT_CHECK(c == NULL);
	h_cleanup(&h);
}

static int manual_status = 99;
static size_t manual_n;
static char manual_handlers[128];

static void on_manual(int status, const relay_consumer_result *r, size_t n,
		      void *payload)
{
	size_t i;

	(void)payload;
	manual_status = status;
	manual_n = n;
	manual_handlers[0] = '\0';
	for (i = 0; i < n; i++) {
		strcat(manual_handlers, r[i].handler);
		strcat(manual_handlers, r[i].outcome.status == RELAY_RUN_OK ?
		       "=ok " : "=fail ");
	}
}

static void test_consumer__invoke_and_replay(void)
{
	h_ctx h;
	const char *ev = "{\"kind\":\"x\"}";

	h_init(&h, NULL);
	h_write_app(&h, "a", APP_FAIL);
	h_script_get(&h.exec, "a", "bad")->fail = 1;
	h_start(&h);
	RT_EQ_INT(relay_consumer_invoke(h.c, "a", ev, strlen(ev), on_manual,
					NULL), 0);
	H_UNTIL(&h, manual_status != 99, 5000);
	RT_EQ_INT(manual_status, 0);
	RT_EQ_STR(manual_handlers, "good=ok bad=fail ");
	manual_status = 99;
	RT_EQ_INT(relay_consumer_replay(h.c, "a", "bad", "{}", 2, on_manual,
					NULL), 0);
	H_UNTIL(&h, manual_status != 99, 5000);
	RT_EQ_INT(manual_status, 0);
	RT_EQ_STR(manual_handlers, "bad=fail ");
	manual_status = 99;
	RT_EQ_INT(relay_consumer_replay(h.c, "a", "nope", "{}", 2, on_manual,
					NULL), 0);
	H_UNTIL(&h, manual_status != 99, 5000);
	RT_EQ_INT(manual_status, RELAY_ENOTFOUND);
	RT_EQ_INT((int)h_pel(&h), 0);     /* no Redis traffic, no state */
	h_cleanup(&h);
}

int main(int argc, char **argv)
{
	static const rt_case cases[] = {
		RT_CASE(test_consumer__matched_acked_retained),
		RT_CASE(test_consumer__unmatched_acked),
		RT_CASE(test_consumer__malformed_placeholders),
	RT_CASE(test_consumer__malformed_keeps_source_fields),
		RT_CASE(test_consumer__retry_schedule_then_dlq),
		RT_CASE(test_consumer__three_apps_exhaust),
		RT_CASE(test_consumer__buffer_limit),
		RT_CASE(test_consumer__slot_saturation),
		RT_CASE(test_consumer__slot_handover_refused),
		RT_CASE(test_consumer__unavailable_app_stays_pending),
		RT_CASE(test_consumer__missing_payload),
		RT_CASE(test_consumer__try_start_error_fails_closed),
		RT_CASE(test_consumer__claim_start_error_fails_closed),
		RT_CASE(test_consumer__claim_start_refused_fails_closed),
		RT_CASE(test_consumer__classification_error_not_acked),
		RT_CASE(test_consumer__dlq_write_failure_reroutes),
		RT_CASE(test_consumer__removed_rule_stops_gating),
		RT_CASE(test_consumer__renewal_blocks_replica_reclaim),
		RT_CASE(test_consumer__graceful_stop),
		RT_CASE(test_consumer__stop_at_once),
		RT_CASE(test_consumer__metrics_histograms_reset),
		RT_CASE(test_consumer__metrics_outcomes),
		RT_CASE(test_consumer__redis_outage),
		RT_CASE(test_consumer__options_validated),
		RT_CASE(test_consumer__invoke_and_replay),
	};

	return rt_main(argc, argv, cases, RT_NCASES(cases));
}
