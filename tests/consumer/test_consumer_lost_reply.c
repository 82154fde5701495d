/*
 * test_consumer_lost_reply.c - a completion whose reply is lost (the
 * connection drops: RELAY_ECLOSED) is resent with the same attempt and
 * token, so a handler that succeeded is not run again when its claim
 * expires (found by the Redis Cluster failover test). Two cases of a
 * lost reply: the script never ran (the resend records it), or it ran
 * and only the reply went missing (the resend finds it done and the
 * message ends as the first reply would have said, counted once). An
 * error reply from Redis is not resent; the resends are bounded. Memory
 * backend, fixed clock, the scripted executor of harness.h (suite unit).
 */
#include "lib/engine_fixture.h"
#include "consumer/consumer_tail.h"  /* RELAY__REC_RETRY_TRIES */

#define APP_ONE \
	"runtime: exec\n" \
	"command: [/bin/true]\n" \
	"events:\n" \
	"  - handler: h\n" \
	"    pattern:\n" \
	"      kind: [x]\n"

#define APP_TWO \
	"runtime: exec\n" \
	"command: [/bin/true]\n" \
	"events:\n" \
	"  - handler: h\n" \
	"    pattern:\n" \
	"      kind: [x]\n" \
	"  - handler: g\n" \
	"    pattern:\n" \
	"      kind: [x]\n"

#define APP_FAIL \
	"runtime: exec\n" \
	"command: [/bin/false]\n" \
	"events:\n" \
	"  - handler: h\n" \
	"    retries: 0\n" \
	"    pattern:\n" \
	"      kind: [x]\n"

#define APP_RETRY \
	"runtime: exec\n" \
	"command: [/bin/false]\n" \
	"events:\n" \
	"  - handler: h\n" \
	"    retries: 1\n" \
	"    pattern:\n" \
	"      kind: [x]\n"

#define RF RELAY_REDIS_SCRIPT_RECORD_FAILURE
#define CA RELAY_REDIS_SCRIPT_COMPLETE_ACK
#define MC RELAY_REDIS_SCRIPT_MARK_COMPLETE
#define ME RELAY_REDIS_SCRIPT_MARK_EXHAUSTED

/* Far past any claim deadline (capped at 5 min): recovery takes the
 * message again if it is still pending. */
#define AFTER_DEADLINE_MS (10 * 60000)

/* The engine of a case, with app "a" = @app (faults are set between
 * setup() and go()). */
static void setup(h_ctx *h, const char *app)
{
	h_init(h, NULL);
	h_write_app(h, "a", app);
}

/* Start it and XADD one matching event; its entry id in @id. */
static void go(h_ctx *h, char *id, size_t n)
{
	h_start(h);
	snprintf(id, n, "%s", h_xadd(h, "{\"kind\":\"x\"}"));
}

static int runs(h_ctx *h, const char *hd)
{
	return h_script_get(&h->exec, "a", hd)->runs;
}

/* The fused tail (complete_ack) fails with ECLOSED before it ran: it is
 * resent, the handler's success is recorded and the message acknowledged
 * in this delivery; after the claim's deadline nothing runs again. */
static void test_lost__tail_not_run(void)
{
	h_ctx h;
	char id[64];

	setup(&h, APP_ONE);
	h.fault->close_script[CA] = 1;
	go(&h, id, sizeof(id));
	H_UNTIL(&h, h_metrics(&h).acks == 1, 5000);
	RT_EQ_INT(h.fault->scripts[CA], 2);
	RT_EQ_INT((int)h_pel(&h), 0);
	RT_EQ_STR(h_state(&h, id, "a/h"), "ok");
	RT_EQ_STR(h_state(&h, id, "__terminal"), "1");
	h_retry_round(&h, AFTER_DEADLINE_MS);
	RT_EQ_INT(runs(&h, "h"), 1);
	RT_EQ_INT((int)h_metrics(&h).acks, 1);
	RT_EQ_INT(h.eng_warn[9], 0);   /* recovered: no "kept pending" */
	h_cleanup(&h);
}

/* The fused tail ran but its reply was lost: the resend answers
 * "retained" (acknowledged already); the ack is counted once. */
static void test_lost__tail_ran(void)
{
	h_ctx h;
	char id[64];

	setup(&h, APP_ONE);
	h.fault->lose_script[CA] = 1;
	go(&h, id, sizeof(id));
	H_UNTIL(&h, h_metrics(&h).acks == 1, 5000);
	h_settle(&h, 300);
	RT_EQ_INT(h.fault->scripts[CA], 2);
	RT_EQ_INT((int)h_metrics(&h).acks, 1);
	RT_EQ_INT((int)h_pel(&h), 0);
	RT_EQ_STR(h_state(&h, id, "a/h"), "ok");
	h_retry_round(&h, AFTER_DEADLINE_MS);
	RT_EQ_INT(runs(&h, "h"), 1);
	RT_EQ_INT(h.eng_warn[9], 0);
	h_cleanup(&h);
}

/* A separate mark_complete (the first of two handlers) ran but its
 * reply was lost: the resend answers stale with the field "ok", the
 * invocation counts as ok and the message is acknowledged in this
 * delivery (before: left pending until recovery). */
static void test_lost__mark_complete_ran(void)
{
	h_ctx h;
	char id[64];

	setup(&h, APP_TWO);
	h.fault->lose_script[MC] = 1;
	go(&h, id, sizeof(id));
	H_UNTIL(&h, h_metrics(&h).acks == 1, 5000);
	RT_EQ_INT(h.fault->scripts[MC], 2);
	RT_EQ_INT((int)h_pel(&h), 0);
	RT_EQ_STR(h_state(&h, id, "a/h"), "ok");
	RT_EQ_STR(h_state(&h, id, "a/g"), "ok");
	h_retry_round(&h, AFTER_DEADLINE_MS);
	RT_EQ_INT(runs(&h, "h"), 1);
	RT_EQ_INT(runs(&h, "g"), 1);
	RT_EQ_INT(h.eng_warn[9], 0);
	h_cleanup(&h);
}

/* mark_exhausted ran, reply lost: the resend of the same claim answers
 * recorded; the DLQ entry is written once and the message acknowledged. */
static void test_lost__mark_exhausted_ran(void)
{
	h_ctx h;
	char id[64];

	setup(&h, APP_FAIL);
	h_script_get(&h.exec, "a", "h")->fail = 1;
	h.fault->lose_script[ME] = 1;
	go(&h, id, sizeof(id));
	H_UNTIL(&h, h.fault->scripts[ME] == 2 &&
		h_metrics(&h).buffered_events == 0, 5000);
	RT_EQ_INT((int)h_pel(&h), 0);
	RT_CHECK(strstr(h_state(&h, id, "a/h"), ":dlq") != NULL);
	RT_EQ_INT((int)h_dlq_count(&h), 1);
	h_retry_round(&h, AFTER_DEADLINE_MS);
	RT_EQ_INT(runs(&h, "h"), 1);
	RT_EQ_INT((int)h_dlq_count(&h), 1);
	h_cleanup(&h);
}

/* Bounded: a completion that keeps failing with ECLOSED is sent once
 * and resent RELAY__REC_RETRY_TRIES times, then left pending with one
 * WARN (the message's; "Redis unavailable" is ENG02); an error reply from Redis (EBACKEND) is never resent. */
static void test_lost__bounded_and_error_reply(void)
{
	h_ctx h;

	setup(&h, APP_ONE);
	h.fault->close_script[CA] = 1000;
	h_start(&h);
	h_xadd(&h, "{\"kind\":\"x\"}");
	/* 50 ms doubling to 1 s: 4.55 s in all (real time) */
	H_UNTIL(&h, h.fault->scripts[CA] == 1 + RELAY__REC_RETRY_TRIES,
		10000);
	h_settle(&h, 500);
	RT_EQ_INT(h.fault->scripts[CA], 1 + RELAY__REC_RETRY_TRIES);
	RT_EQ_INT(h.eng_warn[9], 1);
	RT_EQ_INT((int)h_pel(&h), 1);
	RT_EQ_INT((int)h_metrics(&h).acks, 0);
	h_cleanup(&h);

	setup(&h, APP_ONE);
	h.fault->fail_script[CA] = 1;
	h_start(&h);
	h_xadd(&h, "{\"kind\":\"x\"}");
	H_UNTIL(&h, h.fault->scripts[CA] == 1, 5000);
	h_settle(&h, 500);
	RT_EQ_INT(h.fault->scripts[CA], 1);
	RT_EQ_INT((int)h_pel(&h), 1);
	h_cleanup(&h);
}

/* record_failure ran but its reply was lost: it is resent like the other
 * completions (answering stale: the claim is already released), and the
 * retry runs on its schedule, once: two runs in all, then the DLQ. */
static void test_lost__record_failure_ran(void)
{
	h_ctx h;
	char id[64];

	setup(&h, APP_RETRY);
	h_script_get(&h.exec, "a", "h")->fail = 1;
	h.fault->lose_script[RF] = 1;
	go(&h, id, sizeof(id));
	H_UNTIL(&h, h.fault->scripts[RF] == 2, 5000);
	h_settle(&h, 300);
	RT_EQ_INT(h.fault->scripts[RF], 2);
	RT_EQ_INT(runs(&h, "h"), 1);
	RT_EQ_INT((int)h_pel(&h), 1);
	h_retry_round(&h, AFTER_DEADLINE_MS);
	h_retry_round(&h, AFTER_DEADLINE_MS);
	RT_EQ_INT(runs(&h, "h"), 2);
	RT_EQ_INT((int)h_dlq_count(&h), 1);
	RT_EQ_INT((int)h_pel(&h), 0);
	h_cleanup(&h);
}

/* The resends last only while the claim's deadline is ahead: with the
 * clock moved past it after the first failure, the resend already
 * waiting is the last (one WARN, the message left pending for recovery)
 * instead of 1 + RELAY__REC_RETRY_TRIES sends. */
static void test_lost__resends_end_at_the_deadline(void)
{
	h_ctx h;

	setup(&h, APP_ONE);
	h.fault->close_script[CA] = 1000;
	h_start(&h);
	h_xadd(&h, "{\"kind\":\"x\"}");
	H_UNTIL(&h, h.fault->scripts[CA] == 1, 5000);
	h_advance(&h, AFTER_DEADLINE_MS);
	h_settle(&h, 1500);
	RT_CHECK(h.fault->scripts[CA] <= 2);
	RT_EQ_INT(h.eng_warn[9], 1);
	RT_EQ_INT((int)h_pel(&h), 1);
	RT_EQ_INT((int)h_metrics(&h).acks, 0);
	h_cleanup(&h);
}

static int stopped;

static void on_stopped(relay_consumer *c, void *payload)
{
	(void)c;
	(void)payload;
	stopped++;
}

/* A stop gives up a resend at once: the consumer stops, the message
 * stays pending (nothing lost). Both for an invocation's own completion
 * and for a fused tail already out of memory. */
static void test_lost__stop_gives_up(void)
{
	h_ctx h;

	setup(&h, APP_ONE);
	h.fault->close_script[CA] = 1000;
	h_start(&h);
	h_xadd(&h, "{\"kind\":\"x\"}");
	H_UNTIL(&h, h.fault->scripts[CA] == 2, 5000);
	h_settle(&h, 10);       /* its failure is in: waiting 100 ms */
	stopped = 0;
	RT_EQ_INT(relay_consumer_stop(h.c, 1, on_stopped, NULL), 0);
	h_settle(&h, 50);       /* less than the next backoff (100 ms) */
	RT_EQ_INT(stopped, 1);
	RT_EQ_INT(h.fault->scripts[CA], 2);
	RT_EQ_INT((int)h_pel(&h), 1);
	h_cleanup(&h);

	setup(&h, APP_TWO);
	h.fault->close_script[MC] = 1000;
	h_start(&h);
	h_xadd(&h, "{\"kind\":\"x\"}");
	H_UNTIL(&h, h.fault->scripts[MC] == 2, 5000);
	h_settle(&h, 10);       /* its failure is in: waiting to resend */
	relay_consumer_stop(h.c, 1, NULL, NULL);
	h_settle(&h, 500);
	RT_EQ_INT(h.fault->scripts[MC], 2);
	RT_EQ_INT((int)h_pel(&h), 1);
	RT_EQ_INT(runs(&h, "g"), 0);
	/* Two sends failed: each counted once (not again when the stop
	 * gives the resend up). */
	RT_EQ_INT((int)h_metrics(&h).redis_errors, 2);
	h_cleanup(&h);
}

int main(int argc, char **argv)
{
	static const rt_case cases[] = {
		RT_CASE(test_lost__tail_not_run),
		RT_CASE(test_lost__tail_ran),
		RT_CASE(test_lost__mark_complete_ran),
		RT_CASE(test_lost__mark_exhausted_ran),
		RT_CASE(test_lost__bounded_and_error_reply),
		RT_CASE(test_lost__record_failure_ran),
		RT_CASE(test_lost__resends_end_at_the_deadline),
		RT_CASE(test_lost__stop_gives_up),
	};

	return rt_main(argc, argv, cases, RT_NCASES(cases));
}
