/*
 * test_consumer_sched.c - the engine's schedule dispatch path on the
 * memory backend with a fixed clock and the scripted executor (suite
 * unit): a valid occurrence runs its schedule's handler with the
 * occurrence payload, bypassing classification counters and matching;
 * malformed envelopes are dead-lettered as placeholders; obsolete ones
 * are acknowledged without a run; a failing handler retries and is
 * dead-lettered with app/handler set; handler, timeout and retries are
 * pinned at first admission.
 */
#include "lib/engine_fixture.h"
#include "consumer/sched.h"

#define MIN_IDLE 60000
#define T0 1700000000LL /* the fixed clock: 2023-11-14T22:13:20Z */

/* An app whose only event rule would match every schedule envelope. */
#define APP_S(handler, retries) \
	"runtime: exec\n" \
	"command: [/bin/true]\n" \
	"concurrency: 8\n" \
	"events:\n" \
	"  - handler: on_any\n" \
	"    pattern:\n" \
	"      source: [relay.schedule]\n" \
	"schedules:\n" \
	"  - name: nightly\n" \
	"    handler: " handler "\n" \
	"    cron: \"0 3 * * *\"\n" \
	"    retries: " retries "\n"

/* Publish an occurrence as relayd does: its marker, then the entry (the
 * engine dispatches only occurrences with a publication marker). With
 * @legacy, the marker has its pre-cluster name, as an older version
 * wrote it (doc/redis-layout.md R-7). */
static const char *xadd_occ_as(h_ctx *h, int legacy, const char *app,
			       const char *sched, const char *handler,
			       int64_t at)
{
	static char id[64];
	char *env = relay__sched_envelope(app, sched, handler, at);
	char ts[RELAY__SCHED_TIME_LEN + 1], marker[256], *occ;

	RT_ASSERT(env != NULL);
	RT_ASSERT(relay__sched_time_fmt(at, ts, sizeof(ts)) == 0);
	occ = relay__sched_occurrence_id(app, sched, ts);
	RT_ASSERT(occ != NULL);
	if (legacy)
		snprintf(marker, sizeof(marker), "%s%s",
			 RELAY__SCHED_LEGACY_PREFIX, occ);
	else
		snprintf(marker, sizeof(marker), "relay:events:schedule:%s",
			 occ);
	relay_redis_reply_free(H_CMD(h, "SET", marker, "1"));
	snprintf(id, sizeof(id), "%s", h_xadd(h, env));
	free(occ);
	free(env);
	return id;
}

static const char *xadd_occ(h_ctx *h, const char *app, const char *sched,
			    const char *handler, int64_t at)
{
	return xadd_occ_as(h, 0, app, sched, handler, at);
}

static void test_sched__envelope_helpers(void)
{
	char ts[32], *env;
	int64_t t;

	RT_EQ_INT(relay__sched_time_fmt(T0, ts, sizeof(ts)), 0);
	RT_EQ_STR(ts, "2023-11-14T22:13:20Z");
	RT_EQ_INT(relay__sched_time_parse("2024-02-29T03:00:00Z", &t), 0);
	RT_CHECK(t == 1709175600LL);
	RT_EQ_INT(relay__sched_time_parse("2023-02-29T03:00:00Z", &t),
		  RELAY_EPARSE);
	RT_EQ_INT(relay__sched_time_parse("2024-02-29T03:00:00.000Z", &t),
		  RELAY_EPARSE);
	RT_EQ_INT(relay__sched_time_parse("2024-02-29T03:00:00+00:00", &t),
		  RELAY_EPARSE);
	RT_EQ_INT(relay__sched_time_parse("2024-02-29 03:00:00Z", &t),
		  RELAY_EPARSE);
	env = relay__sched_envelope("a", "nightly", "tick", 1709175600LL);
	RT_EQ_STR(env, "{\"source\":\"relay.schedule\",\"app\":\"a\","
		  "\"schedule\":\"nightly\",\"handler\":\"tick\","
		  "\"scheduled_at\":\"2024-02-29T03:00:00Z\","
		  "\"occurrence_id\":\"schedule:a:nightly:"
		  "2024-02-29T03:00:00Z\"}");
	free(env);
}

/* A valid occurrence: one run of the schedule's handler, stdin exactly
 * the occurrence payload, no matching (the catch-all rule never runs),
 * not counted as an external event; ACKed and retained. */
static void test_sched__dispatch_runs_handler(void)
{
	h_ctx h;
	char id[64];
	relay_consumer_metrics m;
	h_script *s;

	h_init(&h, NULL);
	h_write_app(&h, "a", APP_S("tick", "4"));
	h_start(&h);
	snprintf(id, sizeof(id), "%s",
		 xadd_occ(&h, "a", "nightly", "tick", 1709175600LL));
	H_UNTIL(&h, h_metrics(&h).acks == 1, 5000);
	h_settle(&h, 20);
	s = h_script_get(&h.exec, "a", "tick");
	RT_EQ_INT(s->runs, 1);
	RT_EQ_INT(h.exec.total_runs, 1);
	RT_EQ_STR(s->last_event, "{\"source\":\"relay.schedule\","
		  "\"scheduled_at\":\"2024-02-29T03:00:00Z\"}");
	RT_EQ_STR(s->last_id, id);
	RT_EQ_STR(h_state(&h, id, "a/tick"), "ok");
	RT_EQ_STR(h_state(&h, id, "__schedule"), "6000:4:tick");
	RT_EQ_STR(h_state(&h, id, "__terminal"), "1");
	RT_EQ_INT((int)h_pel(&h), 0);
	RT_EQ_INT((int)h_dlq_count(&h), 0);
	m = h_metrics(&h);
	RT_EQ_INT((int)m.events_schedule, 1);
	RT_EQ_INT((int)m.events_received, 0);
	RT_EQ_INT((int)m.events_matched, 0);
	RT_EQ_INT((int)m.events_malformed, 0);
	RT_EQ_INT((int)m.handler_success, 1);
	h_cleanup(&h);
}

/* Upgrade window on a single node: an occurrence an older version
 * published (marker "relay:schedule:<occurrence_id>") is admitted and runs
 * once; the run key it takes is the stream-scoped one. An envelope with
 * no marker under either name is refused (dead-lettered). */
static void test_sched__legacy_marker_admitted(void)
{
	h_ctx h;
	char id[64], bare[64];
	char *env;
	relay_redis_reply *r;
	h_script *s;

	h_init(&h, NULL);
	h_write_app(&h, "a", APP_S("tick", "4"));
	h_start(&h);
	snprintf(id, sizeof(id), "%s",
		 xadd_occ_as(&h, 1, "a", "nightly", "tick", 1709175600LL));
	env = relay__sched_envelope("a", "nightly", "tick", 1709179200LL);
	RT_ASSERT(env != NULL);
	snprintf(bare, sizeof(bare), "%s", h_xadd(&h, env));
	free(env);
	H_UNTIL(&h, h_metrics(&h).acks == 2, 5000);
	h_settle(&h, 20);
	s = h_script_get(&h.exec, "a", "tick");
	RT_EQ_INT(s->runs, 1);
	RT_EQ_STR(s->last_id, id);
	RT_EQ_STR(h_state(&h, id, "a/tick"), "ok");
	RT_EQ_INT((int)h_dlq_count(&h), 1);
	r = H_CMD(&h, "GET", "relay:events:schedule:schedule:a:nightly:"
		  "2024-02-29T03:00:00Z:run");
	RT_ASSERT(r && r->type == RELAY_REDIS_REPLY_STRING);
	RT_EQ_STR(r->str, id);
	relay_redis_reply_free(r);
	h_cleanup(&h);
}

typedef struct bad_env {
	const char *json;
	const char *reason;
} bad_env;

/* Malformed envelopes: DLQ placeholder (-/-, 0 attempts, the envelope
 * verbatim, a clear reason), ACK, never matched as an event. */
static void test_sched__malformed_placeholder(void)
{
	static const bad_env cases[] = {
		{ "{\"source\":\"relay.schedule\",\"app\":\"a\","
		  "\"schedule\":\"nightly\",\"handler\":\"tick\","
		  "\"occurrence_id\":\"schedule:a:nightly:"
		  "2024-02-29T03:00:00Z\"}",
		  "malformed schedule occurrence: missing \"scheduled_at\"" },
		{ "{\"source\":\"relay.schedule\",\"app\":\"a\","
		  "\"schedule\":\"nightly\",\"handler\":7,"
		  "\"scheduled_at\":\"2024-02-29T03:00:00Z\","
		  "\"occurrence_id\":\"schedule:a:nightly:"
		  "2024-02-29T03:00:00Z\"}",
		  "malformed schedule occurrence: \"handler\" is not a "
		  "string" },
		{ "{\"source\":\"relay.schedule\",\"app\":\"a\","
		  "\"schedule\":\"nightly\",\"handler\":\"tick\","
		  "\"scheduled_at\":\"2024-02-29T03:00:00.5Z\","
		  "\"occurrence_id\":\"schedule:a:nightly:"
		  "2024-02-29T03:00:00.5Z\"}",
		  "malformed schedule occurrence: \"scheduled_at\" is not an "
		  "RFC 3339 UTC time in seconds (YYYY-MM-DDTHH:MM:SSZ)" },
		{ "{\"source\":\"relay.schedule\",\"app\":\"a\","
		  "\"schedule\":\"nightly\",\"handler\":\"tick\","
		  "\"scheduled_at\":\"2024-02-29T03:00:00Z\","
		  "\"occurrence_id\":\"schedule:a:other:"
		  "2024-02-29T03:00:00Z\"}",
		  "malformed schedule occurrence: \"occurrence_id\" is not "
		  "schedule:<app>:<schedule>:<scheduled_at>" },
		{ "{\"source\":\"relay.schedule\",\"app\":\"A/x\","
		  "\"schedule\":\"nightly\",\"handler\":\"tick\","
		  "\"scheduled_at\":\"2024-02-29T03:00:00Z\","
		  "\"occurrence_id\":\"schedule:A/x:nightly:"
		  "2024-02-29T03:00:00Z\"}",
		  "malformed schedule occurrence: \"app\" is not a valid app "
		  "name" },
	};
	const size_t nc = sizeof(cases) / sizeof(cases[0]);
	char ids[8][64];
	relay_dlq_record *d;
	relay_consumer_metrics m;
	h_ctx h;
	size_t i, n;

	h_init(&h, NULL);
	h_write_app(&h, "a", APP_S("tick", "4"));
	h_start(&h);
	for (i = 0; i < nc; i++)
		snprintf(ids[i], sizeof(ids[i]), "%s",
			 h_xadd(&h, cases[i].json));
	H_UNTIL(&h, h_metrics(&h).acks == nc, 5000);
	h_settle(&h, 20);
	RT_EQ_INT(h.exec.total_runs, 0);
	RT_EQ_INT((int)h_pel(&h), 0);
	d = h_dlq(&h, &n);
	RT_EQ_INT((int)n, (int)nc);
	for (i = 0; i < n && i < nc; i++) {
		RT_EQ_STR(d[i].e.original_id, ids[i]);
		RT_EQ_STR(d[i].e.app, "-");
		RT_EQ_STR(d[i].e.handler, "-");
		RT_EQ_INT((int)d[i].e.handler_attempts, 0);
		RT_EQ_STR(d[i].e.event, cases[i].json);
		RT_EQ_STR(d[i].e.reason, cases[i].reason);
		RT_EQ_STR(h_state(&h, ids[i], "__terminal"), "1");
		RT_EQ_STR(h_state(&h, ids[i], "a/on_any"), "");
	}
	m = h_metrics(&h);
	RT_EQ_INT((int)m.events_schedule, (int)nc);
	RT_EQ_INT((int)m.schedule_malformed, (int)nc);
	RT_EQ_INT((int)m.events_malformed, 0);
	RT_EQ_INT((int)m.events_received, 0);
	h_dlq_free(d, n);
	h_cleanup(&h);
}

/* A schedule (or app) no longer configured: ACK, no run, no DLQ, the
 * state hash retained as on the success path. */
static void test_sched__obsolete_acked(void)
{
	h_ctx h;
	char id1[64], id2[64];
	relay_consumer_metrics m;

	h_init(&h, NULL);
	h_write_app(&h, "a", APP_S("tick", "4"));
	h_start(&h);
	snprintf(id1, sizeof(id1), "%s",
		 xadd_occ(&h, "a", "gone", "tick", 1709175600LL));
	snprintf(id2, sizeof(id2), "%s",
		 xadd_occ(&h, "nosuchapp", "nightly", "tick", 1709175600LL));
	H_UNTIL(&h, h_metrics(&h).acks == 2, 5000);
	h_settle(&h, 20);
	RT_EQ_INT(h.exec.total_runs, 0);
	RT_EQ_INT((int)h_pel(&h), 0);
	RT_EQ_INT((int)h_dlq_count(&h), 0);
	RT_EQ_STR(h_state(&h, id1, "__terminal"), "1");
	RT_EQ_STR(h_state(&h, id2, "__terminal"), "1");
	RT_CHECK(h_pttl(&h, id1) > 0);
	m = h_metrics(&h);
	RT_EQ_INT((int)m.events_schedule, 2);
	RT_EQ_INT((int)m.schedule_obsolete, 2);
	RT_EQ_INT((int)m.dlq_entries, 0);
	h_cleanup(&h);
}

/* A failing scheduled handler: retries with backoff, then one DLQ entry
 * with app/handler set and the exhausted reason; ACK. */
static void test_sched__failing_handler_dlq(void)
{
	h_ctx h;
	char id[64], *env;
	relay_dlq_record *d;
	h_script *s;
	size_t n;

	h_init(&h, NULL);
	h_write_app(&h, "a", APP_S("tick", "1"));
	h_start(&h);
	s = h_script_get(&h.exec, "a", "tick");
	s->fail = 1;
	snprintf(id, sizeof(id), "%s",
		 xadd_occ(&h, "a", "nightly", "tick", 1709175600LL));
	H_UNTIL(&h, s->runs == 1 && h_metrics(&h).buffered_events == 0,
		5000);
	RT_CHECK(strncmp(h_state(&h, id, "a/tick"), "next_attempt_at:", 16)
		 == 0);
	h_retry_round(&h, MIN_IDLE);
	H_UNTIL(&h, h_pel(&h) == 0, 5000);
	RT_EQ_INT(s->runs, 2);
	d = h_dlq(&h, &n);
	RT_EQ_INT((int)n, 1);
	env = relay__sched_envelope("a", "nightly", "tick", 1709175600LL);
	if (n == 1) {
		RT_EQ_STR(d[0].e.original_id, id);
		RT_EQ_STR(d[0].e.app, "a");
		RT_EQ_STR(d[0].e.handler, "tick");
		RT_EQ_INT((int)d[0].e.handler_attempts, 2);
		RT_EQ_STR(d[0].e.event, env);
		RT_EQ_STR(d[0].e.reason, "invocation exhausted: app \"a\" "
			  "handler \"tick\" exhausted after 2 handler "
			  "attempts: exit status 3");
	}
	free(env);
	RT_CHECK(strncmp(h_state(&h, id, "a/tick"), "exhausted:2:", 12) == 0);
	RT_EQ_STR(h_state(&h, id, "__terminal"), "1");
	RT_EQ_INT(h.exec.total_runs, 2);
	h_dlq_free(d, n);
	h_cleanup(&h);
}

/* Pinning: the first admission pins handler "tick" with 2 retries; a
 * template edit while the occurrence backs off (handler "tock", 0
 * retries) changes nothing for it: "tick" runs all three attempts. */
static void test_sched__pinned_across_edit(void)
{
	h_ctx h;
	char id[64];
	h_script *tick, *tock;
	size_t n;
	relay_dlq_record *d;

	h_init(&h, NULL);
	h_write_app(&h, "a", APP_S("tick", "2"));
	h_start(&h);
	tick = h_script_get(&h.exec, "a", "tick");
	tock = h_script_get(&h.exec, "a", "tock");
	tick->fail = 1;
	snprintf(id, sizeof(id), "%s",
		 xadd_occ(&h, "a", "nightly", "tick", 1709175600LL));
	H_UNTIL(&h, tick->runs == 1 && h_metrics(&h).buffered_events == 0,
		5000);
	RT_EQ_STR(h_state(&h, id, "__schedule"), "6000:2:tick");
	h_write_app(&h, "a", APP_S("tock", "0"));
	h_load_apps(&h);
	h_retry_round(&h, MIN_IDLE);
	H_UNTIL(&h, tick->runs == 2 && h_metrics(&h).buffered_events == 0,
		5000);
	RT_EQ_INT((int)h_pel(&h), 1);  /* 2 retries pinned, not 0 */
	h_retry_round(&h, 2 * MIN_IDLE);
	H_UNTIL(&h, h_pel(&h) == 0, 5000);
	RT_EQ_INT(tick->runs, 3);
	RT_EQ_INT(tock->runs, 0);
	RT_EQ_STR(h_state(&h, id, "__schedule"), "6000:2:tick");
	d = h_dlq(&h, &n);
	RT_EQ_INT((int)n, 1);
	if (n == 1) {
		RT_EQ_STR(d[0].e.handler, "tick");
		RT_EQ_INT((int)d[0].e.handler_attempts, 3);
	}
	h_dlq_free(d, n);
	/* A new occurrence after the edit runs the new handler. */
	xadd_occ(&h, "a", "nightly", "tick", 1709262000LL);
	H_UNTIL(&h, tock->runs == 1 && h_pel(&h) == 0, 5000);
	RT_EQ_INT(tick->runs, 3);
	h_cleanup(&h);
}

static int replay_status = 99;
static char replay_handler[64];

static void on_replay(int status, const relay_consumer_result *r, size_t n,
		      void *payload)
{
	(void)payload;
	replay_status = status;
	snprintf(replay_handler, sizeof(replay_handler), "%s",
		 n ? r[0].handler : "");
}

/* Replaying a dead-lettered occurrence (relayctl dlq replay): the
 * schedule's handler runs once with the occurrence payload, no Redis. */
static void test_sched__dlq_replay(void)
{
	h_ctx h;
	h_script *s;
	char *env;

	h_init(&h, NULL);
	h_write_app(&h, "a", APP_S("tick", "4"));
	h_start(&h);
	s = h_script_get(&h.exec, "a", "tick");
	env = relay__sched_envelope("a", "nightly", "tick", 1709175600LL);
	RT_EQ_INT(relay_consumer_replay(h.c, "a", "tick", env, strlen(env),
					on_replay, NULL), 0);
	H_UNTIL(&h, replay_status != 99, 5000);
	RT_EQ_INT(replay_status, 0);
	RT_EQ_STR(replay_handler, "tick");
	RT_EQ_INT(s->runs, 1);
	RT_EQ_STR(s->last_event, "{\"source\":\"relay.schedule\","
		  "\"scheduled_at\":\"2024-02-29T03:00:00Z\"}");
	RT_EQ_STR(s->last_id, "manual");
	/* Not an envelope of this app: no such handler. */
	replay_status = 99;
	RT_EQ_INT(relay_consumer_replay(h.c, "a", "tick", "{}", 2, on_replay,
					NULL), 0);
	H_UNTIL(&h, replay_status != 99, 5000);
	RT_EQ_INT(replay_status, RELAY_ENOTFOUND);
	RT_EQ_INT(s->runs, 1);
	RT_EQ_INT((int)h_pel(&h), 0);
	free(env);
	h_cleanup(&h);
}

int main(int argc, char **argv)
{
	static const rt_case cases[] = {
		RT_CASE(test_sched__envelope_helpers),
		RT_CASE(test_sched__dispatch_runs_handler),
		RT_CASE(test_sched__legacy_marker_admitted),
		RT_CASE(test_sched__malformed_placeholder),
		RT_CASE(test_sched__obsolete_acked),
		RT_CASE(test_sched__failing_handler_dlq),
		RT_CASE(test_sched__pinned_across_edit),
		RT_CASE(test_sched__dlq_replay),
	};

	return rt_main(argc, argv, cases, RT_NCASES(cases));
}
