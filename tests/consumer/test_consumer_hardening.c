/*
 * test_consumer_hardening.c - the engine under the misuse found by
 * black-box testing (issue 13): a stream entry deleted while its handler
 * runs, a Redis step that keeps failing for one message, the interpreter
 * availability cache, the health snapshot's version. Memory backend,
 * fixed clock, the scripted executor of harness.h (suite unit).
 */
#include "lib/engine_fixture.h"
/* Both private sched.h headers in one translation unit: they used to
 * share an include guard, so the second was silently empty. */
#include "consumer/sched.h"
#include "schedule/sched.h"
#include "runtime/runtime.h"  /* relay__limits_desc_fmt */

#define APP_ONE \
	"runtime: exec\n" \
	"command: [/bin/true]\n" \
	"events:\n" \
	"  - handler: h\n" \
	"    pattern:\n" \
	"      kind: [x]\n"

#define MIN_IDLE 60000   /* MinPendingIdle default: 1m */

/*
 * An external XDEL while the handler runs: the renewal notices the
 * missing body, counts it once as missing payload and warns once (not
 * "ownership lost" on every tick); the handler finishes, nothing else
 * runs, no DLQ entry, the PEL reference is gone and the state hash is
 * retained.
 */
static void test_hardening__deleted_while_running(void)
{
	h_ctx h;
	char id[64];
	h_script *s;
	int i;

	h_init(&h, NULL);
	h_write_app(&h, "a", APP_ONE);
	s = h_script_get(&h.exec, "a", "h");
	s->hold = 1;
	s->fail = 1;
	h_start(&h);
	snprintf(id, sizeof(id), "%s", h_xadd(&h, "{\"kind\":\"x\"}"));
	H_UNTIL(&h, s->runs == 1, 5000);
	relay_redis_reply_free(H_CMD(&h, "XDEL", "events", id));
	for (i = 0; i < 5; i++) {
		h_renew_now(h.c);
		h_settle(&h, 20);
	}
	RT_EQ_INT((int)h_metrics(&h).missing_payload, 1);
	RT_EQ_INT(h.eng_warn[12], 0);         /* not "ownership lost" */
	RT_EQ_INT(h.eng_warn[7], 1);          /* warned once */
	h_release(&h.exec, NULL);
	H_UNTIL(&h, h_metrics(&h).buffered_events == 0, 5000);
	h_settle(&h, 20);
	RT_EQ_INT((int)h_pel(&h), 0);
	RT_EQ_STR(h_state(&h, id, "__terminal"), "1");
	RT_CHECK(h_pttl(&h, id) > 0);
	RT_EQ_INT((int)h_dlq_count(&h), 0);
	RT_EQ_INT(h.eng_warn[9], 0);          /* no "kept pending" */
	/* Later passes find nothing to do. */
	h_advance(&h, MIN_IDLE * 20);
	h_reclaim_now(h.c);
	h_settle(&h, 30);
	RT_EQ_INT(s->runs, 1);
	RT_EQ_INT((int)h_metrics(&h).missing_payload, 1);
	RT_EQ_INT(h.eng_warn[7], 1);
	h_cleanup(&h);
}

/* Another consumer acknowledged it (the body is still there): ownership
 * lost is reported once, not on every renewal tick. */
static void test_hardening__ownership_lost_once(void)
{
	h_ctx h;
	char id[64];
	h_script *s;
	int i;

	h_init(&h, NULL);
	h_write_app(&h, "a", APP_ONE);
	s = h_script_get(&h.exec, "a", "h");
	s->hold = 1;
	h_start(&h);
	snprintf(id, sizeof(id), "%s", h_xadd(&h, "{\"kind\":\"x\"}"));
	H_UNTIL(&h, s->runs == 1, 5000);
	relay_redis_reply_free(H_CMD(&h, "XACK", "events", "relay", id));
	for (i = 0; i < 5; i++) {
		h_renew_now(h.c);
		h_settle(&h, 20);
	}
	RT_EQ_INT(h.eng_warn[12], 1);
	RT_EQ_INT((int)h_metrics(&h).missing_payload, 0);
	h_release(&h.exec, NULL);
	H_UNTIL(&h, h_metrics(&h).buffered_events == 0, 5000);
	h_cleanup(&h);
}

/*
 * What another replica leaves when it acknowledged the message and
 * relayd's retention then trimmed the entry: no PEL entry for @id, the
 * state hash retained (__terminal), no body.
 */
static void acked_and_trimmed(h_ctx *h, const char *id)
{
	char *key = relay_inv_key("events", "relay", id);

	RT_CHECK(key != NULL);
	relay_redis_reply_free(H_CMD(h, "XACK", "events", "relay", id));
	relay_redis_reply_free(H_CMD(h, "HSET", key, "__terminal", "1"));
	relay_redis_reply_free(H_CMD(h, "XDEL", "events", id));
	relay__free(key);
}

/*
 * A paused replica wakes up to a message another replica acknowledged
 * and retention trimmed: the body is gone, but nothing was lost. Not a
 * missing payload (no count, no WARN), one RELAY-ENG15 line, not
 * "ownership lost"; the handler finishes, nothing is dead-lettered.
 */
static void test_hardening__trimmed_after_ack_not_missing(void)
{
	h_ctx h;
	char id[64];
	h_script *s;
	int i;

	h_init(&h, NULL);
	h_write_app(&h, "a", APP_ONE);
	s = h_script_get(&h.exec, "a", "h");
	s->hold = 1;
	h_start(&h);
	snprintf(id, sizeof(id), "%s", h_xadd(&h, "{\"kind\":\"x\"}"));
	H_UNTIL(&h, s->runs == 1, 5000);
	acked_and_trimmed(&h, id);
	for (i = 0; i < 5; i++) {
		h_renew_now(h.c);
		h_settle(&h, 20);
	}
	RT_EQ_INT((int)h_metrics(&h).missing_payload, 0);
	RT_EQ_INT(h.eng_warn[7], 0);
	RT_EQ_INT(h.eng_warn[12], 0);
	RT_EQ_INT(h.eng[15], 1);
	h_release(&h.exec, NULL);
	H_UNTIL(&h, h_metrics(&h).buffered_events == 0, 5000);
	h_settle(&h, 20);
	RT_EQ_INT(s->runs, 1);
	RT_EQ_INT((int)h_pel(&h), 0);
	RT_EQ_INT((int)h_dlq_count(&h), 0);
	RT_EQ_INT((int)h_metrics(&h).missing_payload, 0);
	RT_EQ_INT(h.eng_warn[7], 0);
	h_cleanup(&h);
}

/*
 * The reclaim path: a pending entry (redelivered after the group was
 * moved back, say) whose body is gone and whose state is retained is
 * not counted either; one whose state is not retained still is. Both
 * dangling references are cleared.
 */
static void test_hardening__reclaim_gone_after_ack(void)
{
	h_ctx h;
	char done[64], lost[64];
	char *key;

	h_init(&h, NULL);
	h_write_app(&h, "a", APP_ONE);
	h_load_apps(&h);
	relay_redis_reply_free(H_CMD(&h, "XGROUP", "CREATE", "events",
				     "relay", "0", "MKSTREAM"));
	snprintf(done, sizeof(done), "%s", h_xadd(&h, "{\"kind\":\"x\"}"));
	snprintf(lost, sizeof(lost), "%s", h_xadd(&h, "{\"kind\":\"x\"}"));
	/* A dead replica's delivery. */
	relay_redis_reply_free(H_CMD(&h, "XREADGROUP", "GROUP", "relay",
				     "dead", "COUNT", "10", "STREAMS",
				     "events", ">"));
	key = relay_inv_key("events", "relay", done);
	RT_CHECK(key != NULL);
	relay_redis_reply_free(H_CMD(&h, "HSET", key, "__terminal", "1"));
	relay__free(key);
	relay_redis_reply_free(H_CMD(&h, "XDEL", "events", done));
	relay_redis_reply_free(H_CMD(&h, "XDEL", "events", lost));
	RT_EQ_INT((int)h_pel(&h), 2);
	h_start(&h);
	h_settle(&h, 20);
	h_retry_round(&h, MIN_IDLE + 1);
	H_UNTIL(&h, h_pel(&h) == 0 &&
		h_metrics(&h).buffered_events == 0, 5000);
	h_settle(&h, 20);
	RT_EQ_INT((int)h_metrics(&h).missing_payload, 1);
	RT_EQ_INT(h.eng_warn[7], 1);
	RT_EQ_INT(h.eng[15], 1);
	RT_EQ_INT((int)h_dlq_count(&h), 0);
	RT_EQ_INT((int)h_metrics(&h).buffered_events, 0);
	h_cleanup(&h);
}

typedef struct stuck_seen {
	int n;
	char id[64];
	char reason[160];
	unsigned int failures;
	int64_t retry_in_ms;
} stuck_seen;

static int take_stuck(const relay_consumer_stuck *st, void *payload)
{
	stuck_seen *ss = payload;

	ss->n++;
	snprintf(ss->id, sizeof(ss->id), "%s", st->message_id);
	snprintf(ss->reason, sizeof(ss->reason), "%s", st->reason);
	ss->failures = st->failures;
	ss->retry_in_ms = st->retry_in_ms;
	return 0;
}

/*
 * No step may spin: a malformed message whose DLQ write always fails.
 * Its deliveries are skipped while its backoff (1m, 2m, 4m, ...) runs,
 * one WARN per backoff step, the failures are counted, and the message
 * shows as stuck with its reason; once the write succeeds it is
 * dead-lettered and acknowledged and no longer stuck.
 */
static void test_hardening__failing_step_backs_off(void)
{
	const int op = RELAY_REDIS_SCRIPT_DLQ_PERSIST;
	stuck_seen ss;
	relay_consumer_metrics m;
	char id[64];
	h_ctx h;

	h_init(&h, NULL);
	h_write_app(&h, "a", APP_ONE);
	h.fault->fail_script[op] = 1000;
	h_start(&h);
	snprintf(id, sizeof(id), "%s", h_xadd(&h, "not json"));
	H_UNTIL(&h, h.fault->scripts[op] == 1 &&
		h_metrics(&h).buffered_events == 0, 5000);
	RT_EQ_INT(h.eng_warn[9], 1);
	h_retry_round(&h, MIN_IDLE + 1);          /* 1m passed: retry */
	RT_EQ_INT(h.fault->scripts[op], 2);
	RT_EQ_INT(h.eng_warn[9], 2);
	h_retry_round(&h, MIN_IDLE + 1);          /* inside the 2m backoff */
	RT_EQ_INT(h.fault->scripts[op], 2);
	RT_EQ_INT(h.eng_warn[9], 2);
	h_retry_round(&h, MIN_IDLE + 1);          /* 2m passed: retry */
	RT_EQ_INT(h.fault->scripts[op], 3);
	RT_EQ_INT(h.eng_warn[9], 3);
	h_retry_round(&h, MIN_IDLE + 1);          /* inside the 4m backoff */
	h_retry_round(&h, MIN_IDLE + 1);
	RT_EQ_INT(h.fault->scripts[op], 3);
	RT_EQ_INT(h.eng_warn[9], 3);
	m = h_metrics(&h);
	RT_EQ_INT((int)m.step_failures, 3);
	RT_EQ_INT((int)m.stuck_messages, 1);
	/* a version 2 caller's struct ends before the new fields */
	memset(&m, 0x5a, sizeof(m));
	m.version = 2;
	RT_EQ_INT(relay_consumer_metrics_get(h.c, &m), 0);
	RT_EQ_INT((int)m.version, 2);
	RT_CHECK(m.step_failures == 0x5a5a5a5a5a5a5a5aULL);
	RT_CHECK(m.stuck_messages == 0x5a5a5a5a5a5a5a5aULL);
	RT_EQ_INT((int)m.acks, 0);
	RT_EQ_INT((int)h_pel(&h), 1);           /* nothing lost */
	memset(&ss, 0, sizeof(ss));
	RT_EQ_INT(relay_consumer_stuck_messages(h.c, take_stuck, &ss), 0);
	RT_EQ_INT(ss.n, 1);
	RT_EQ_STR(ss.id, id);
	RT_CHECK(strncmp(ss.reason, "DLQ write: ", 11) == 0);
	RT_EQ_INT((int)ss.failures, 3);
	RT_CHECK(ss.retry_in_ms > 0 && ss.retry_in_ms <= 4 * 60000);
	/* The cause goes away: the next try after the backoff succeeds. */
	h.fault->fail_script[op] = 0;
	h_retry_round(&h, 4 * 60000);
	H_UNTIL(&h, h_pel(&h) == 0, 5000);
	RT_EQ_INT((int)h_pel(&h), 0);
	RT_EQ_INT((int)h_dlq_count(&h), 1);
	RT_EQ_INT((int)h_metrics(&h).stuck_messages, 0);
	RT_EQ_INT(h.eng_warn[9], 3);
	h_cleanup(&h);
}

static void put_exe(const char *dir, const char *name)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	RT_ASSERT(f != NULL);
	fputs("#!/bin/sh\n", f);
	fclose(f);
	RT_EQ_INT(chmod(path, 0755), 0);
}

/*
 * The python3/node availability cache: checking node must not reset
 * python3's entry (with both kinds of apps PATH was rescanned on every
 * invocation). python3 leaves PATH after it was seen; within the five
 * second cache a python3 event after a node event still runs, and after
 * the cache expires the app is unavailable (message kept pending).
 */
static void test_hardening__availability_cache_per_interpreter(void)
{
	char bin[64], path[256], *old = getenv("PATH");
	char saved[4096];
	h_script *sp, *sn;
	h_ctx h;

	snprintf(saved, sizeof(saved), "%s", old ? old : "/usr/bin:/bin");
	snprintf(bin, sizeof(bin), "/tmp/relay-path.XXXXXX");
	RT_ASSERT(mkdtemp(bin) != NULL);
	put_exe(bin, "python3");
	put_exe(bin, "node");
	h_init(&h, NULL);
	h.o.available = NULL;  /* the engine's own check */
	h.o.available_payload = NULL;
	h_write_app(&h, "p", "runtime: python3\nevents:\n  - handler: m.h\n"
		    "    pattern:\n      kind: [p]\n");
	h_write_app(&h, "n", "runtime: node\nevents:\n  - handler: m.h\n"
		    "    pattern:\n      kind: [n]\n");
	sp = h_script_get(&h.exec, "p", "m.h");
	sn = h_script_get(&h.exec, "n", "m.h");
	setenv("PATH", bin, 1);
	h_start(&h);
	h_xadd(&h, "{\"kind\":\"p\"}");
	H_UNTIL(&h, sp->runs == 1 && h_metrics(&h).acks == 1, 5000);
	snprintf(path, sizeof(path), "%s/python3", bin);
	unlink(path);
	h_xadd(&h, "{\"kind\":\"n\"}");
	H_UNTIL(&h, sn->runs == 1 && h_metrics(&h).acks == 2, 5000);
	h_xadd(&h, "{\"kind\":\"p\"}");
	H_UNTIL(&h, sp->runs == 2 && h_metrics(&h).acks == 3, 5000);
	RT_EQ_INT(sp->runs, 2);   /* cached: PATH not rescanned */
	h_advance(&h, 6000);
	h_xadd(&h, "{\"kind\":\"p\"}");
	H_UNTIL(&h, h.eng[8] >= 1, 5000);
	RT_EQ_INT(h.eng[8], 1);   /* app unavailable after expiry */
	RT_EQ_INT(sp->runs, 2);
	setenv("PATH", saved, 1);
	h_cleanup(&h);
	snprintf(path, sizeof(path), "%s/node", bin);
	unlink(path);
	rmdir(bin);
}

/* The two private headers declare their own functions (a shared guard
 * made this fail to compile). */
static void test_hardening__sched_headers_distinct(void)
{
	char buf[40];

	RT_EQ_INT((int)relay__days_from_civil(1970, 1, 1), 0);
	RT_EQ_INT(relay__sched_time_fmt(0, buf, sizeof(buf)), 0);
	RT_EQ_STR(buf, "1970-01-01T00:00:00Z");
}


static void test_hardening__fused_tail_guarantees(void)
{
	h_ctx h;

	h_init(&h, NULL);
	fused_tail_guarantees(&h);
	h_cleanup(&h);
}

/* The common path (one matched handler that succeeds) ends in one
 * script: no separate mark_complete, XACK or retain. */
static void test_hardening__success_tail_is_one_script(void)
{
	h_ctx h;
	char id[64];

	h_init(&h, NULL);
	h_write_app(&h, "a", APP_ONE);
	h_start(&h);
	snprintf(id, sizeof(id), "%s", h_xadd(&h, "{\"kind\":\"x\"}"));
	H_UNTIL(&h, h_metrics(&h).acks == 1, 5000);
	h_settle(&h, 20);
	RT_EQ_INT(h.fault->scripts[RELAY_REDIS_SCRIPT_COMPLETE_ACK], 1);
	RT_EQ_INT(h.fault->scripts[RELAY_REDIS_SCRIPT_MARK_COMPLETE], 0);
	RT_EQ_INT(h.fault->scripts[RELAY_REDIS_SCRIPT_RETAIN], 0);
	RT_EQ_INT((int)h_pel(&h), 0);
	RT_EQ_STR(h_state(&h, id, "a/h"), "ok");
	RT_EQ_STR(h_state(&h, id, "__terminal"), "1");
	RT_CHECK(h_pttl(&h, id) > 167LL * 3600 * 1000);
	h_cleanup(&h);
}

/* The common path starts in one script too: the classification and the
 * first claim are one CLAIM_START, recorded before the handler runs. */
static void test_hardening__first_claim_is_one_script(void)
{
	h_ctx h;
	char id[64];

	h_init(&h, NULL);
	h_write_app(&h, "a", APP_ONE);
	h_start(&h);
	snprintf(id, sizeof(id), "%s", h_xadd(&h, "{\"kind\":\"x\"}"));
	H_UNTIL(&h, h_metrics(&h).acks == 1, 5000);
	h_settle(&h, 20);
	RT_EQ_INT(h.fault->scripts[RELAY_REDIS_SCRIPT_CLAIM_START], 1);
	RT_EQ_INT(h.fault->scripts[RELAY_REDIS_SCRIPT_CLAIM_CLASSIFICATION], 0);
	RT_EQ_INT(h.fault->scripts[RELAY_REDIS_SCRIPT_TRY_START], 0);
	RT_EQ_INT(h.fault->scripts[RELAY_REDIS_SCRIPT_COMPLETE_ACK], 1);
	RT_EQ_INT(h.exec.total_runs, 1);
	RT_EQ_INT((int)h_metrics(&h).events_received, 1);
	RT_EQ_STR(h_state(&h, id, "__classification"), "1");
	RT_EQ_STR(h_state(&h, id, "a/h"), "ok");
	h_cleanup(&h);
}

/*
 * A message whose first invocation waits for a slot: nothing is written
 * while it waits (no classification, no attempt charged); when the slot
 * frees, its claim carries the classification (one CLAIM_START); a
 * second matched invocation of a message is claimed alone (TRY_START).
 */
static void test_hardening__waiter_classified_with_its_claim(void)
{
	static const char two[] =
		"runtime: exec\ncommand: [/bin/true]\nevents:\n"
		"  - handler: h\n    pattern:\n      kind: [x]\n"
		"  - handler: g\n    pattern:\n      kind: [x]\n";
	h_ctx h;
	h_script *s;
	char id1[64], id2[64];

	h_init(&h, NULL);
	h.o.max_concurrency = 1;
	h_write_app(&h, "a", APP_ONE);
	s = h_script_get(&h.exec, "a", "h");
	s->hold = 1;
	h_start(&h);
	snprintf(id1, sizeof(id1), "%s", h_xadd(&h, "{\"kind\":\"x\"}"));
	snprintf(id2, sizeof(id2), "%s", h_xadd(&h, "{\"kind\":\"x\"}"));
	H_UNTIL(&h, h_metrics(&h).concurrency_waits == 1, 5000);
	h_settle(&h, 20);
	RT_EQ_INT(s->runs, 1);
	RT_EQ_INT(h.fault->scripts[RELAY_REDIS_SCRIPT_CLAIM_START], 1);
	RT_EQ_INT(h.fault->scripts[RELAY_REDIS_SCRIPT_CLAIM_CLASSIFICATION], 0);
	RT_EQ_STR(h_state(&h, id1, "__classification"), "1");
	RT_EQ_STR(h_state(&h, id2, "__classification"), "");
	RT_EQ_STR(h_state(&h, id2, "a/h"), "");
	RT_EQ_INT((int)h_metrics(&h).events_received, 1);
	s->hold = 0;
	h_release(&h.exec, NULL);
	H_UNTIL(&h, h_metrics(&h).acks == 2, 5000);
	h_settle(&h, 20);
	RT_EQ_INT(h.fault->scripts[RELAY_REDIS_SCRIPT_CLAIM_START], 2);
	RT_EQ_INT(h.fault->scripts[RELAY_REDIS_SCRIPT_CLAIM_CLASSIFICATION], 0);
	RT_EQ_INT(h.fault->scripts[RELAY_REDIS_SCRIPT_TRY_START], 0);
	RT_EQ_INT((int)h_metrics(&h).events_received, 2);
	RT_EQ_STR(h_state(&h, id2, "__classification"), "1");
	RT_EQ_STR(h_state(&h, id2, "a/h"), "ok");
	RT_EQ_INT((int)h_pel(&h), 0);
	h_cleanup(&h);

	/* two invocations: the first claim carries the classification */
	h_init(&h, NULL);
	h_write_app(&h, "a", two);
	h_start(&h);
	snprintf(id1, sizeof(id1), "%s", h_xadd(&h, "{\"kind\":\"x\"}"));
	H_UNTIL(&h, h_metrics(&h).acks == 1, 5000);
	h_settle(&h, 20);
	RT_EQ_INT(h.fault->scripts[RELAY_REDIS_SCRIPT_CLAIM_START], 1);
	RT_EQ_INT(h.fault->scripts[RELAY_REDIS_SCRIPT_TRY_START], 1);
	RT_EQ_INT(h.fault->scripts[RELAY_REDIS_SCRIPT_CLAIM_CLASSIFICATION], 0);
	RT_EQ_INT(h.exec.total_runs, 2);
	RT_EQ_STR(h_state(&h, id1, "a/h"), "ok");
	RT_EQ_STR(h_state(&h, id1, "a/g"), "ok");
	h_cleanup(&h);
}

/*
 * The buffer is refilled with one XREADGROUP per loop iteration asking
 * for all the room freed in it, not one read per message that ends: a
 * backlog of 64 at 8 buffered / 8 concurrent takes about one read per 8
 * messages.
 */
static void test_hardening__refill_one_read_per_iteration(void)
{
	static const char eight[] =
		"runtime: exec\ncommand: [/bin/true]\nconcurrency: 8\n"
		"events:\n  - handler: h\n    pattern:\n      kind: [x]\n";
	h_ctx h;
	int i;

	h_init(&h, NULL);
	h.o.max_buffered = 8;
	h.o.max_concurrency = 8;
	h_write_app(&h, "a", eight);
	for (i = 0; i < 64; i++)
		h_xadd(&h, "{\"kind\":\"x\"}");
	h_start(&h);
	H_UNTIL(&h, h_metrics(&h).acks == 64, 10000);
	RT_EQ_INT(h.exec.total_runs, 64);
	RT_CHECK(h.fault->xreadgroups <= 64 / 8 + 4);
	h_cleanup(&h);
}

/* A version 2 backend (no COMPLETE_ACK) gets the three steps apart. */
static void test_hardening__old_backend_separate_tail(void)
{
	h_ctx h;
	char id[64];

	h_init(&h, NULL);
	h.fault->parent.version = 2;
	h_write_app(&h, "a", APP_ONE);
	h_start(&h);
	snprintf(id, sizeof(id), "%s", h_xadd(&h, "{\"kind\":\"x\"}"));
	H_UNTIL(&h, h_metrics(&h).acks == 1 &&
		strcmp(h_state(&h, id, "__terminal"), "1") == 0, 5000);
	RT_EQ_INT(h.fault->scripts[RELAY_REDIS_SCRIPT_COMPLETE_ACK], 0);
	RT_EQ_INT(h.fault->scripts[RELAY_REDIS_SCRIPT_MARK_COMPLETE], 1);
	RT_EQ_INT(h.fault->scripts[RELAY_REDIS_SCRIPT_RETAIN], 1);
	/* ... and the classification and the claim apart (no CLAIM_START) */
	RT_EQ_INT(h.fault->scripts[RELAY_REDIS_SCRIPT_CLAIM_START], 0);
	RT_EQ_INT(h.fault->scripts[RELAY_REDIS_SCRIPT_CLAIM_CLASSIFICATION], 1);
	RT_EQ_INT(h.fault->scripts[RELAY_REDIS_SCRIPT_TRY_START], 1);
	RT_EQ_INT((int)h_pel(&h), 0);
	RT_EQ_STR(h_state(&h, id, "a/h"), "ok");
	h_cleanup(&h);
}

/* The runtime's start-up line named the controllers without separators
 * ("cgroup-v1 (memorypidscpu)"). */
static void test_hardening__limits_description(void)
{
	const bool all[3] = { true, true, true }, some[3] = { true, false,
							      true };
	char buf[128];

	relay__limits_desc_fmt(buf, sizeof(buf), RELAY_LIMITS_CGROUP_V1, all);
	RT_EQ_STR(buf, "cgroup-v1 (memory, pids, cpu)");
	relay__limits_desc_fmt(buf, sizeof(buf), RELAY_LIMITS_CGROUP_V2, some);
	RT_EQ_STR(buf, "cgroup-v2 (memory, pids:rlimit, cpu)");
	relay__limits_desc_fmt(buf, sizeof(buf), RELAY_LIMITS_RLIMIT, NULL);
	RT_EQ_STR(buf, "rlimit");
	relay__limits_desc_fmt(buf, 12, RELAY_LIMITS_CGROUP_V1, all);
	RT_EQ_STR(buf, "cgroup-v1 (");  /* truncated, terminated */
}

/* A tagging allocator: frees of blocks it did not hand out are counted. */
#define TAG 0x52454c41u
static int live, foreign;

static void *tag_malloc(size_t n)
{
	unsigned int *p = malloc(n + 16);

	if (!p)
		return NULL;
	p[0] = TAG;
	live++;
	return (char *)p + 16;
}

static void tag_free(void *q)
{
	unsigned int *p;

	if (!q)
		return;
	p = (unsigned int *)((char *)q - 16);
	if (p[0] != TAG) {
		foreign++;
		return;  /* not ours: leak rather than corrupt */
	}
	p[0] = 0;
	live--;
	free(p);
}

static void *tag_realloc(void *q, size_t n)
{
	unsigned int *p;

	if (!q)
		return tag_malloc(n);
	p = (unsigned int *)((char *)q - 16);
	if (p[0] != TAG) {
		foreign++;
		return NULL;
	}
	p = realloc(p, n + 16);
	return p ? (char *)p + 16 : NULL;
}

/*
 * A custom Redis backend builds replies with the library's allocator
 * (relay/sys/redis.h), so relay_redis_reply_free() releases every part
 * through the allocator of relay_set_allocator() that made it.
 */
static void test_hardening__backend_replies_use_library_allocator(void)
{
	relay_redis_reply *r;
	char *p;

	relay_set_allocator(tag_malloc, tag_realloc, tag_free);
	r = relay_redis_reply_new(RELAY_REDIS_REPLY_ARRAY);
	RT_ASSERT(r != NULL);
	RT_EQ_INT(relay_redis_reply_set_elements(r, 3), 0);
	RT_EQ_INT((int)r->elements, 3);
	r->element[0] = relay_redis_reply_new(RELAY_REDIS_REPLY_STRING);
	RT_EQ_INT(relay_redis_reply_set_str(r->element[0], "a\0b", 3), 0);
	RT_EQ_INT((int)r->element[0]->len, 3);
	RT_CHECK(memcmp(r->element[0]->str, "a\0b", 4) == 0);
	RT_EQ_INT(relay_redis_reply_set_str(r->element[0], "xy", 2), 0);
	RT_EQ_STR(r->element[0]->str, "xy");
	r->element[1] = relay_redis_reply_new(RELAY_REDIS_REPLY_INTEGER);
	/* element[2] left NULL */
	RT_EQ_INT(relay_redis_reply_set_str(NULL, "x", 1), RELAY_EINVAL);
	p = relay_redis_malloc(4);
	RT_ASSERT(p != NULL);
	p = relay_redis_realloc(p, 64);
	RT_ASSERT(p != NULL);
	relay_free(p);
	relay_redis_reply_free(r);
	relay_set_allocator(NULL, NULL, NULL);
	RT_EQ_INT(foreign, 0);
	RT_EQ_INT(live, 0);
}

/* doc/api-stability.md rule 5: the caller's version is left as given. */
static void test_hardening__health_keeps_caller_version(void)
{
	relay_consumer_health hl;
	h_ctx h;

	h_init(&h, NULL);
	h_write_app(&h, "a", APP_ONE);
	h_start(&h);
	H_UNTIL(&h, h_group_ok(h.c), 5000);
	memset(&hl, 0x5a, sizeof(hl));
	hl.version = 0;
	relay_consumer_health_get(h.c, &hl);
	RT_EQ_INT((int)hl.version, 0);
	RT_EQ_INT(hl.ready, 1);
	RT_EQ_STR(hl.reason, "");
	hl.version = RELAY_CONSUMER_HEALTH_VERSION;
	relay_consumer_health_get(h.c, &hl);
	RT_EQ_INT((int)hl.version, RELAY_CONSUMER_HEALTH_VERSION);
	RT_EQ_INT(hl.redis_up, 1);
	h_cleanup(&h);
}

int main(int argc, char **argv)
{
	static const rt_case cases[] = {
		RT_CASE(test_hardening__deleted_while_running),
		RT_CASE(test_hardening__ownership_lost_once),
		RT_CASE(test_hardening__trimmed_after_ack_not_missing),
		RT_CASE(test_hardening__reclaim_gone_after_ack),
		RT_CASE(test_hardening__availability_cache_per_interpreter),
		RT_CASE(test_hardening__failing_step_backs_off),
		RT_CASE(test_hardening__sched_headers_distinct),
		RT_CASE(test_hardening__health_keeps_caller_version),
		RT_CASE(test_hardening__limits_description),
		RT_CASE(test_hardening__fused_tail_guarantees),
		RT_CASE(test_hardening__success_tail_is_one_script),
		RT_CASE(test_hardening__old_backend_separate_tail),
		RT_CASE(test_hardening__first_claim_is_one_script),
		RT_CASE(test_hardening__waiter_classified_with_its_claim),
		RT_CASE(test_hardening__refill_one_read_per_iteration),
		RT_CASE(test_hardening__backend_replies_use_library_allocator),
	};

	return rt_main(argc, argv, cases, RT_NCASES(cases));
}
