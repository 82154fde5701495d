/*
 * test_consumer_gaps.c - doc/behaviour.md statements the coverage
 * audit (tests/SPEC-COVERAGE.md, "Audit") found without an engine test
 * that could fail: the engine on the memory backend with a fixed clock
 * and the scripted executor of harness.h (suite unit).
 */
#include "lib/engine_fixture.h"

#define APP_FAIL1 \
	"runtime: exec\n" \
	"command: [/bin/false]\n" \
	"events:\n" \
	"  - handler: h\n" \
	"    pattern:\n" \
	"      kind: [x]\n"

#define MIN_IDLE 60000   /* MinPendingIdle default: 1m */
#define BACKOFF1 60000   /* first retry backoff: 1m */

/*
 * "Only after the message has left the PEL - ... or a cleared
 * missing-payload PEL reference - is the hash switched to terminal
 * retention: a reserved marker plus a ~7-day TTL." The invocation's own
 * field is left as it was (no fabricated outcome), no DLQ entry.
 */
static void test_gaps__missing_payload_retains_state(void)
{
	h_ctx h;
	char id[64];
	const char *st;
	long long ttl;
	h_script *s;

	h_init(&h, NULL);
	h_write_app(&h, "a", APP_FAIL1);
	s = h_script_get(&h.exec, "a", "h");
	s->fail = 1;
	h_start(&h);
	snprintf(id, sizeof(id), "%s", h_xadd(&h, "{\"kind\":\"x\"}"));
	H_UNTIL(&h, s->runs == 1 && h_metrics(&h).buffered_events == 0,
		5000);
	st = h_state(&h, id, "a/h");
	RT_CHECK(strncmp(st, "next_attempt_at:", 16) == 0);
	RT_EQ_INT((int)h_pttl(&h, id), -1);   /* pending: no TTL */
	relay_redis_reply_free(H_CMD(&h, "XDEL", "events", id));
	h_advance(&h, MIN_IDLE + BACKOFF1 + 1);
	h_reclaim_now(h.c);
	H_UNTIL(&h, h_metrics(&h).missing_payload == 1 && h_pel(&h) == 0 &&
		strcmp(h_state(&h, id, "__terminal"), "1") == 0, 5000);
	RT_EQ_INT((int)h_metrics(&h).missing_payload, 1);
	RT_EQ_INT((int)h_pel(&h), 0);
	RT_EQ_STR(h_state(&h, id, "__terminal"), "1");
	ttl = h_pttl(&h, id);
	RT_CHECK(ttl > 167LL * 3600 * 1000 && ttl <= 168LL * 3600 * 1000);
	st = h_state(&h, id, "a/h");
	RT_CHECK(strncmp(st, "next_attempt_at:", 16) == 0);
	RT_EQ_INT(s->runs, 1);                /* no payload fabricated */
	RT_EQ_INT((int)h_dlq_count(&h), 0);
	h_cleanup(&h);
}

/*
 * "Recovery (XAUTOCLAIM) reclaims messages idle beyond MinPendingIdle
 * (default 1m)": a pending message idle for less than a minute is left
 * alone by a reclaim pass; idle beyond it, it is reclaimed.
 */
static void test_gaps__reclaim_only_beyond_min_pending_idle(void)
{
	h_ctx h;
	char id[64];

	h_init(&h, NULL);
	h_write_app(&h, "b", APP_FAIL1);      /* "b": unavailable app */
	h_start(&h);
	snprintf(id, sizeof(id), "%s", h_xadd(&h, "{\"kind\":\"x\"}"));
	H_UNTIL(&h, h_metrics(&h).events_matched == 1 &&
		h_metrics(&h).buffered_events == 0, 5000);
	RT_EQ_INT((int)h_pel(&h), 1);
	h_advance(&h, MIN_IDLE - 1000);
	h_reclaim_now(h.c);
	h_settle(&h, 50);
	RT_EQ_INT((int)h_metrics(&h).reclaims, 0);  /* 59 s idle: left */
	h_advance(&h, 2000);
	h_reclaim_now(h.c);
	H_UNTIL(&h, h_metrics(&h).reclaims == 1, 5000);
	RT_EQ_INT((int)h_metrics(&h).reclaims, 1);  /* 61 s idle: taken */
	RT_EQ_INT((int)h_pel(&h), 1);
	RT_EQ_INT(h.exec.total_runs, 0);
	h_cleanup(&h);
}

/*
 * "whether an individual invocation executes is decided per-invocation
 * from its state. Retry timing is therefore quantized by the reclaim
 * cadence": a passed next_attempt_at alone runs nothing; the next
 * reclaim pass does.
 */
static void test_gaps__retry_waits_for_a_reclaim(void)
{
	h_ctx h;
	h_script *s;

	h_init(&h, NULL);
	h_write_app(&h, "a", APP_FAIL1);
	s = h_script_get(&h.exec, "a", "h");
	s->fail = 1;
	h_start(&h);
	h_xadd(&h, "{\"kind\":\"x\"}");
	H_UNTIL(&h, s->runs == 1 && h_metrics(&h).buffered_events == 0,
		5000);
	h_advance(&h, MIN_IDLE + BACKOFF1 + 1);   /* deadline passed */
	h_settle(&h, 100);
	RT_EQ_INT(s->runs, 1);                    /* no own retry timer */
	RT_EQ_INT((int)h_pel(&h), 1);
	h_reclaim_now(h.c);
	H_UNTIL(&h, s->runs == 2, 5000);
	RT_EQ_INT(s->runs, 2);
	RT_EQ_INT((int)h_metrics(&h).reclaims, 1);
	h_cleanup(&h);
}

/*
 * "The attempt count is the real handler execution count": a start the
 * system refused (RELAY_RUN_REFUSED: no process or memory for the
 * sandbox) runs nothing, so it charges nothing. A first attempt refused
 * leaves no field (the next claim is attempt 1 again); a retry refused
 * leaves the field at the attempt before (its backoff elapsed). Nothing
 * is dead-lettered, the message stays pending for the reclaim, the
 * refusal is counted (starts_refused) and logged (RELAY-ENG16).
 */
static void test_gaps__refused_start_charges_no_attempt(void)
{
	h_ctx h;
	h_script *s;
	const char *v;
	char id[64];

	h_init(&h, NULL);
	h_write_app(&h, "a", APP_FAIL1);
	s = h_script_get(&h.exec, "a", "h");
	s->fail = 3;
	h_start(&h);
	snprintf(id, sizeof(id), "%s", h_xadd(&h, "{\"kind\":\"x\"}"));
	H_UNTIL(&h, s->runs == 1 && h_metrics(&h).buffered_events == 0,
		5000);
	RT_EQ_STR(h_state(&h, id, "a/h"), "");    /* first attempt undone */
	RT_EQ_INT((int)h_metrics(&h).starts_refused, 1);
	RT_EQ_INT((int)h_metrics(&h).handler_failure, 0);
	RT_CHECK(h.eng_warn[16] == 1);
	RT_EQ_INT((int)h_pel(&h), 1);
	/* Delivered again: now it runs (and fails, a real attempt 1). */
	s->fail = 1;
	h_retry_round(&h, MIN_IDLE + 1);
	H_UNTIL(&h, s->runs == 2 && h_metrics(&h).buffered_events == 0,
		5000);
	v = h_state(&h, id, "a/h");
	RT_CHECK(strncmp(v, "next_attempt_at:", 16) == 0 &&
		 strstr(v, ":1:") != NULL);
	/* Its retry is refused: the field keeps attempt 1. */
	s->fail = 3;
	h_retry_round(&h, MIN_IDLE + BACKOFF1 + 1);
	H_UNTIL(&h, s->runs == 3 && h_metrics(&h).buffered_events == 0,
		5000);
	v = h_state(&h, id, "a/h");
	RT_CHECK(strncmp(v, "next_attempt_at:", 16) == 0 &&
		 strstr(v, ":1:") != NULL);
	RT_EQ_INT((int)h_metrics(&h).starts_refused, 2);
	RT_EQ_INT((int)h_metrics(&h).retries, 0);
	/* Then it runs as attempt 2 and succeeds. */
	s->fail = 0;
	h_retry_round(&h, MIN_IDLE + 1);
	H_UNTIL(&h, s->runs == 4 && h_pel(&h) == 0, 5000);
	RT_EQ_INT((int)h_pel(&h), 0);
	RT_EQ_INT((int)h_dlq_count(&h), 0);
	RT_EQ_INT((int)h_metrics(&h).retries, 1);
	RT_EQ_INT((int)h_metrics(&h).handler_failure, 1);
	RT_EQ_INT((int)h_metrics(&h).handler_success, 1);
	h_cleanup(&h);
}

#define APP_CONC(kind, n) \
	"runtime: exec\n" \
	"command: [/bin/true]\n" \
	"concurrency: " #n "\n" \
	"events:\n" \
	"  - handler: h\n" \
	"    pattern:\n" \
	"      kind: [" kind "]\n"

/*
 * "bounded by the worker-global MAX_CONCURRENCY and the per-app
 * effective concurrency (min(concurrency, MAX_CONCURRENCY))": with
 * MAX_CONCURRENCY 8, an app of concurrency 1 runs one message at a time
 * while an app of concurrency 2 runs two; with MAX_CONCURRENCY 2 an app
 * of concurrency 8 runs two. The waiters are charged nothing.
 */
static void test_gaps__per_app_effective_concurrency(void)
{
	h_ctx h;
	h_script *one, *two, *wide;
	int i;

	h_init(&h, NULL);
	h.o.max_concurrency = 8;
	h_write_app(&h, "one", APP_CONC("x", 1));
	h_write_app(&h, "two", APP_CONC("y", 2));
	one = h_script_get(&h.exec, "one", "h");
	two = h_script_get(&h.exec, "two", "h");
	one->hold = two->hold = 1;
	h_start(&h);
	for (i = 0; i < 3; i++) {
		h_xadd(&h, "{\"kind\":\"x\"}");
		h_xadd(&h, "{\"kind\":\"y\"}");
	}
	H_UNTIL(&h, one->runs == 1 && two->runs == 2 &&
		h_metrics(&h).concurrency_waits >= 3, 5000);
	h_settle(&h, 20);
	RT_EQ_INT(one->runs, 1);
	RT_EQ_INT(two->runs, 2);
	RT_EQ_INT(h.exec.active, 3);          /* both apps at once */
	RT_CHECK(h_metrics(&h).concurrency_waits >= 3);
	one->hold = two->hold = 0;
	h_release(&h.exec, NULL);
	for (i = 0; i < 20 && h_pel(&h) > 0; i++) {
		h_advance(&h, MIN_IDLE + 1);
		h_reclaim_now(h.c);
		h_settle(&h, 30);
	}
	RT_EQ_INT((int)h_pel(&h), 0);
	RT_EQ_INT(one->runs, 3);              /* waiting cost no attempt */
	RT_EQ_INT(two->runs, 3);
	RT_EQ_INT((int)h_metrics(&h).handler_failure, 0);
	h_cleanup(&h);

	h_init(&h, NULL);
	h.o.max_concurrency = 2;
	h_write_app(&h, "wide", APP_CONC("z", 8));
	wide = h_script_get(&h.exec, "wide", "h");
	wide->hold = 1;
	h_start(&h);
	for (i = 0; i < 4; i++)
		h_xadd(&h, "{\"kind\":\"z\"}");
	H_UNTIL(&h, wide->runs == 2 &&
		h_metrics(&h).concurrency_waits >= 2, 5000);
	h_settle(&h, 20);
	RT_EQ_INT(wide->runs, 2);             /* min(8, 2) */
	RT_EQ_INT(h.exec.active, 2);
	h_cleanup(&h);
}

int main(int argc, char **argv)
{
	static const rt_case cases[] = {
		RT_CASE(test_gaps__missing_payload_retains_state),
		RT_CASE(test_gaps__reclaim_only_beyond_min_pending_idle),
		RT_CASE(test_gaps__retry_waits_for_a_reclaim),
		RT_CASE(test_gaps__refused_start_charges_no_attempt),
		RT_CASE(test_gaps__per_app_effective_concurrency),
	};

	return rt_main(argc, argv, cases, RT_NCASES(cases));
}
