/*
 * test_consumer_redis.c - the stream engine against a throwaway
 * redis-server (hiredis backend, Lua transitions) with real handler
 * processes (process runtime backend), time scale 600 (backoff 100 ms,
 * 200 ms, 500 ms, 1 s; MinPendingIdle and reclaim interval 100 ms).
 * Handlers append "<handler> <message id>" to a file, which the tests
 * count. Suite redis; SKIP without redis-server.
 */
#include "lib/engine_fixture.h"
#include "redis_server.h"

#include <sys/wait.h>

static rt_redis_server srv;
static int srv_up;

#define SCRIPT \
	"#!/bin/sh\n" \
	"echo \"$RELAY_HANDLER $RELAY_MESSAGE_ID\" >> \"$OUT\"\n" \
	"case \"$RELAY_HANDLER\" in\n" \
	"good) cat > \"$OUT.event\" ;;\n" \
	"bad) cat > /dev/null; exit 3 ;;\n" \
	"slow) cat > /dev/null; sleep 0.3 ;;\n" \
	"*) cat > /dev/null ;;\n" \
	"esac\n"

static void r_init(h_ctx *h, const char *app_yaml_extra)
{
	relay_runtime_options ro = RELAY_RUNTIME_OPTIONS_INIT;
	char path[256], yaml[1024];
	FILE *f;

	if (!srv_up) {
		int rc = rt_redis_server_start(&srv);

		if (rc == RT_REDIS_SKIP)
			RT_SKIP("redis-server not installed");
		RT_ASSERT(rc == 0);
		srv_up = 1;
	}
	relay_redis_reply_free(NULL);
	h_init(h, srv.uri);
	relay_redis_reply_free(H_CMD(h, "FLUSHALL"));
	h->o.time_scale = 600;
	h->o.executor = NULL;
	ro.backend = "process";
	ro.limits = RELAY_LIMITS_NONE;
	RT_ASSERT(relay_runtime_new(&h->rt, &ro, NULL) == 0);
	RT_ASSERT(relay_runtime_libev_attach(h->rt, h->loop) == 0);
	snprintf(yaml, sizeof(yaml),
		 "runtime: exec\ncommand: [./handle.sh]\nconcurrency: 8\n"
		 "env:\n  OUT: %s/out\nevents:\n"
		 "  - handler: good\n    pattern:\n      kind: [x]\n"
		 "  - handler: bad\n    pattern:\n      kind: [x]\n"
		 "      fail: [true]\n%s", h->dir,
		 app_yaml_extra ? app_yaml_extra : "");
	h_write_app(h, "a", yaml);
	snprintf(path, sizeof(path), "%s/a/handle.sh", h->dir);
	f = fopen(path, "w");
	RT_ASSERT(f != NULL);
	fputs(SCRIPT, f);
	fclose(f);
	chmod(path, 0755);
}

/* Lines of the output file starting with "@handler @id" (id NULL: any
 * id; handler NULL: every line). */
static int r_runs(h_ctx *h, const char *handler, const char *id)
{
	char path[256], line[1280], want[1280];
	int n = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/out", h->dir);
	snprintf(want, sizeof(want), id ? "%s %s\n" : "%s ",
		 handler ? handler : "", id ? id : "");
	f = fopen(path, "r");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (!handler || strncmp(line, want, strlen(want)) == 0)
			n++;
	fclose(f);
	return n;
}

static void test_consumer_redis__lifecycle_retry_dlq(void)
{
	h_ctx h;
	const char *ev = "{\"kind\":\"x\",\"fail\":true,\"n\":\"\\u00e9\"}";
	char id[64], path[256], got[256];
	relay_dlq_record *d;
	long long ttl;
	size_t n;
	FILE *f;

	r_init(&h, NULL);
	h_start(&h);
	snprintf(id, sizeof(id), "%s", h_xadd(&h, ev));
	/* Acknowledged, not merely "PEL empty": that is also true before
	 * the consumer's first read reached the server. */
	H_UNTIL(&h, h_metrics(&h).acks == 1 && h_pel(&h) == 0 &&
		h_metrics(&h).buffered_events == 0, 20000);
	RT_EQ_INT((int)h_pel(&h), 0);
	RT_EQ_INT(r_runs(&h, "good", id), 1);
	RT_EQ_INT(r_runs(&h, "bad", id), 5);
	snprintf(path, sizeof(path), "%s/out.event", h.dir);
	f = fopen(path, "r");
	RT_ASSERT(f != NULL);
	got[fread(got, 1, sizeof(got) - 1, f)] = '\0';
	fclose(f);
	RT_EQ_STR(got, ev);               /* stdin = the stream value */
	RT_EQ_STR(h_state(&h, id, "a/good"), "ok");
	RT_CHECK(strncmp(h_state(&h, id, "a/bad"), "exhausted:5:", 12) == 0);
	RT_EQ_STR(h_state(&h, id, "__terminal"), "1");
	ttl = h_pttl(&h, id);
	RT_CHECK(ttl > 167LL * 3600 * 1000 && ttl <= 168LL * 3600 * 1000);
	d = h_dlq(&h, &n);
	RT_EQ_INT((int)n, 1);
	if (n == 1) {
		RT_EQ_STR(d[0].e.original_id, id);
		RT_EQ_STR(d[0].e.event, ev);
		RT_EQ_STR(d[0].e.app, "a");
		RT_EQ_STR(d[0].e.handler, "bad");
		RT_EQ_STR(d[0].e.consumer, "c1");
		RT_EQ_INT((int)d[0].e.handler_attempts, 5);
		RT_CHECK(d[0].e.deliveries >= 5);
		RT_EQ_STR(d[0].e.reason, "invocation exhausted: app \"a\" "
			  "handler \"bad\" exhausted after 5 handler "
			  "attempts: exit status 3");
	}
	h_dlq_free(d, n);
	RT_EQ_INT((int)h_metrics(&h).events_received, 1);
	RT_EQ_INT((int)h_metrics(&h).retries, 4);
	h_cleanup(&h);
}

static void test_consumer_redis__unmatched_and_malformed(void)
{
	h_ctx h;
	relay_dlq_record *d;
	size_t n;

	r_init(&h, NULL);
	h_start(&h);
	h_xadd(&h, "{\"kind\":\"nope\"}");
	h_xadd_field(&h, "other", "1", 1);
	h_xadd(&h, "not json");
	/* Issue 13: an empty value and one whose first byte is NUL are
	 * dead-lettered verbatim like any malformed value. */
	h_xadd_field(&h, "event", "", 0);
	h_xadd_field(&h, "event", "\0{}", 3);
	H_UNTIL(&h, h_metrics(&h).acks == 5, 10000);
	RT_EQ_INT((int)h_metrics(&h).acks, 5);
	RT_EQ_INT((int)h_pel(&h), 0);
	RT_EQ_INT(r_runs(&h, NULL, NULL), 0);
	d = h_dlq(&h, &n);
	RT_EQ_INT((int)n, 4);
	if (n == 4) {
		RT_CHECK(strncmp(d[2].e.reason, "decode event: ", 14) == 0);
		RT_EQ_STR(d[2].e.event, "");
		RT_EQ_STR(d[3].e.reason, "'event' field is not a string");
		RT_EQ_STR(d[3].e.app, "-");
	}
	if (n >= 2) {
		RT_EQ_STR(d[0].e.reason, "missing 'event' field");
		RT_EQ_STR(d[0].e.event, "-");
		RT_CHECK(strncmp(d[1].e.reason, "decode event: ", 14) == 0);
		RT_EQ_STR(d[1].e.event, "not json");
		RT_EQ_INT((int)d[1].e.handler_attempts, 0);
	}
	h_dlq_free(d, n);
	h_cleanup(&h);
}

/* A crashed owner (read, never acknowledged): reclaimed after
 * MinPendingIdle and completed; nothing lost. */
static void test_consumer_redis__crashed_owner_reclaimed(void)
{
	h_ctx h;
	char id[64];

	r_init(&h, NULL);
	relay_redis_reply_free(H_CMD(&h, "XGROUP", "CREATE", "events",
				     "relay", "0", "MKSTREAM"));
	snprintf(id, sizeof(id), "%s", h_xadd(&h, "{\"kind\":\"x\"}"));
	relay_redis_reply_free(H_CMD(&h, "XREADGROUP", "GROUP", "relay",
				     "dead", "COUNT", "10", "STREAMS",
				     "events", ">"));
	h_start(&h);
	H_UNTIL(&h, h_pel(&h) == 0, 10000);
	RT_EQ_INT((int)h_pel(&h), 0);
	RT_EQ_INT(r_runs(&h, "good", id), 1);
	RT_EQ_INT((int)h_metrics(&h).reclaims, 1);
	h_cleanup(&h);
}

/* Two replicas on one group: every event handled once, PEL empty. */
static void test_consumer_redis__two_replicas(void)
{
	enum { N = 200 };
	h_ctx h;
	relay_redis_backend *b2 = NULL;
	relay_consumer *c2 = NULL;
	relay_consumer_options o2;
	relay_consumer_metrics m1, m2;
	char (*ids)[64] = calloc(N, 64);
	int i, twice = 0, missing = 0;

	RT_ASSERT(ids != NULL);
	r_init(&h, NULL);
	h_start(&h);
	RT_ASSERT(relay_redis_open_libev(&b2, h.loop, srv.uri, NULL, NULL) ==
		  0);
	o2 = h.o;
	o2.consumer = "c2";
	RT_ASSERT(relay_consumer_new(&c2, h.loop, b2, h.rt, h.apps, &o2,
				     NULL) == 0);
	RT_EQ_INT(relay_consumer_start(c2), 0);
	for (i = 0; i < N; i++)
		snprintf(ids[i], 64, "%s", h_xadd(&h, "{\"kind\":\"x\"}"));
	H_UNTIL(&h, h_pel(&h) == 0 && r_runs(&h, "good", NULL) >= N, 25000);
	h_settle(&h, 100);
	for (i = 0; i < N; i++) {
		int r = r_runs(&h, "good", ids[i]);

		twice += r > 1;
		missing += r == 0;
	}
	RT_EQ_INT(missing, 0);
	RT_EQ_INT(twice, 0);
	RT_EQ_INT((int)h_pel(&h), 0);
	memset(&m1, 0, sizeof(m1));
	m2 = m1;
	m1.version = m2.version = RELAY_CONSUMER_METRICS_VERSION;
	relay_consumer_metrics_get(h.c, &m1);
	relay_consumer_metrics_get(c2, &m2);
	RT_EQ_INT((int)(m1.events_received + m2.events_received), N);
	RT_CHECK(m1.events_received > 0 && m2.events_received > 0);
	h_closed_flag = 0;
	relay_consumer_close(c2, h_closed);
	H_UNTIL(&h, h_closed_flag, 10000);
	relay_redis_free(b2);
	free(ids);
	h_cleanup(&h);
}

/*
 * Handlers that run three times MinPendingIdle (300 ms vs 100 ms) on two
 * replicas: ownership renewal keeps every message out of the other's
 * XAUTOCLAIM, so nothing is reclaimed and every event runs once.
 */
static void test_consumer_redis__renewal_across_replicas(void)
{
	enum { N = 8 };  /* <= each replica's slots: nobody waits */
	h_ctx h;
	relay_redis_backend *b2 = NULL;
	relay_consumer *c2 = NULL;
	relay_consumer_options o2;
	relay_consumer_metrics m1, m2;
	char ids[N][64];
	int i, once = 0;

	r_init(&h, "  - handler: slow\n    pattern:\n      kind: [slow]\n");
	h_start(&h);
	RT_ASSERT(relay_redis_open_libev(&b2, h.loop, srv.uri, NULL, NULL) ==
		  0);
	o2 = h.o;
	o2.consumer = "c2";
	RT_ASSERT(relay_consumer_new(&c2, h.loop, b2, h.rt, h.apps, &o2,
				     NULL) == 0);
	RT_EQ_INT(relay_consumer_start(c2), 0);
	for (i = 0; i < N; i++)
		snprintf(ids[i], 64, "%s", h_xadd(&h, "{\"kind\":\"slow\"}"));
	/* Every message run, then none pending (the PEL is also empty
	 * before the first read reached the server). */
	H_UNTIL(&h, r_runs(&h, "slow", NULL) >= N && h_pel(&h) == 0, 20000);
	for (i = 0; i < N; i++)
		once += r_runs(&h, "slow", ids[i]) == 1;
	RT_EQ_INT(once, N);
	RT_EQ_INT((int)h_pel(&h), 0);
	memset(&m1, 0, sizeof(m1));
	m2 = m1;
	m1.version = m2.version = RELAY_CONSUMER_METRICS_VERSION;
	relay_consumer_metrics_get(h.c, &m1);
	relay_consumer_metrics_get(c2, &m2);
	RT_EQ_INT((int)(m1.concurrency_waits + m2.concurrency_waits), 0);
	RT_EQ_INT((int)(m1.reclaims + m2.reclaims), 0);
	RT_EQ_INT((int)(m1.handler_success + m2.handler_success), N);
	h_closed_flag = 0;
	relay_consumer_close(c2, h_closed);
	H_UNTIL(&h, h_closed_flag, 10000);
	relay_redis_free(b2);
	h_cleanup(&h);
}

/* One slot, handlers of 300 ms, a 50 ms slot wait: the waiting messages
 * give up without an attempt, stay pending, and drain through reclaims;
 * every event runs exactly once. */
static void test_consumer_redis__slot_saturation_drains(void)
{
	enum { N = 3 };
	h_ctx h;
	char ids[N][64];
	int i, once = 0;

	r_init(&h, "  - handler: slow\n    pattern:\n      kind: [slow]\n");
	h.o.max_concurrency = 1;
	h_start(&h);
	for (i = 0; i < N; i++)
		snprintf(ids[i], 64, "%s", h_xadd(&h, "{\"kind\":\"slow\"}"));
	/* Every message run, then none pending (the PEL is also empty
	 * before the first read reached the server). */
	H_UNTIL(&h, r_runs(&h, "slow", NULL) >= N && h_pel(&h) == 0, 20000);
	for (i = 0; i < N; i++)
		once += r_runs(&h, "slow", ids[i]) == 1;
	RT_EQ_INT(once, N);
	RT_EQ_INT((int)h_pel(&h), 0);
	RT_CHECK(h_metrics(&h).concurrency_timeouts >= 1);
	RT_CHECK(h_metrics(&h).reclaims >= 1);
	RT_EQ_INT((int)h_metrics(&h).retries, 0);  /* nothing charged */
	h_cleanup(&h);
}

/* Redis paused (commands time out), then resumed: health false, then
 * true; the message published before the pause is handled once. */
static void test_consumer_redis__restart_recovery(void)
{
	h_ctx h;
	relay_consumer_health hl;
	char id[64];

	r_init(&h, NULL);
	h_start(&h);
	H_UNTIL(&h, h_group_ok(h.c), 5000);
	RT_EQ_INT(rt_redis_server_stop(&srv), 0);
	H_UNTIL(&h, h.logs_down >= 1, 10000);
	relay_consumer_health_get(h.c, &hl);
	RT_EQ_INT(hl.ready, 0);
	RT_EQ_INT(rt_redis_server_restart(&srv), 0);
	H_UNTIL(&h, h.logs_up >= 1, 15000);
	RT_EQ_INT(h.logs_up, 1);
	RT_EQ_INT(h.logs_down, 1);
	snprintf(id, sizeof(id), "%s", h_xadd(&h, "{\"kind\":\"x\"}"));
	H_UNTIL(&h, h_pel(&h) == 0 && r_runs(&h, "good", id) == 1, 15000);
	RT_EQ_INT(r_runs(&h, "good", id), 1);
	RT_EQ_INT((int)h_pel(&h), 0);
	relay_consumer_health_get(h.c, &hl);
	RT_EQ_INT(hl.ready, 1);
	h_cleanup(&h);
}

/*
 * Issue 13: an XDEL while the handler runs (300 ms, renewals every
 * 33 ms). Redis drops the id from the PEL at the next renewal XCLAIM;
 * the engine counts one missing payload, warns once, lets the handler
 * finish, retains the state hash and writes no DLQ entry.
 */
static void test_consumer_redis__deleted_while_running(void)
{
	h_ctx h;
	char id[64];

	r_init(&h, "  - handler: slow\n    pattern:\n      kind: [slow]\n");
	h_start(&h);
	snprintf(id, sizeof(id), "%s", h_xadd(&h, "{\"kind\":\"slow\"}"));
	H_UNTIL(&h, r_runs(&h, "slow", id) == 1, 10000);
	relay_redis_reply_free(H_CMD(&h, "XDEL", "events", id));
	H_UNTIL(&h, h_metrics(&h).buffered_events == 0 &&
		strcmp(h_state(&h, id, "__terminal"), "1") == 0, 10000);
	h_settle(&h, 300);
	RT_EQ_INT((int)h_metrics(&h).missing_payload, 1);
	RT_EQ_INT(h.eng_warn[12], 0);
	RT_EQ_INT(h.eng_warn[7], 1);
	RT_EQ_INT(h.eng_warn[9], 0);
	RT_EQ_INT((int)h_pel(&h), 0);
	RT_EQ_STR(h_state(&h, id, "__terminal"), "1");
	RT_EQ_STR(h_state(&h, id, "a/slow"), "ok");
	RT_CHECK(h_pttl(&h, id) > 0);
	RT_EQ_INT((int)h_dlq_count(&h), 0);
	RT_EQ_INT(r_runs(&h, "slow", id), 1);
	h_cleanup(&h);
}

static int r_take_stuck(const relay_consumer_stuck *st, void *payload)
{
	snprintf(payload, 160, "%s", st->reason);
	return 0;
}

/*
 * Issue 13, no step may spin: the message's state hash key holds a
 * string, so every script on it fails with WRONGTYPE. Reclaim passes
 * come every 100 ms; the message is tried only when its backoff (100,
 * 200, 400, 800 ms, ...) has passed, with one WARN per try. Once the key
 * is fixed the message completes.
 */
static void test_consumer_redis__failing_script_backs_off(void)
{
	char *key = relay_inv_key("events", "relay", "5-1");
	char reason[160] = "";
	relay_consumer_metrics m;
	h_ctx h;

	r_init(&h, NULL);
	relay_redis_reply_free(H_CMD(&h, "SET", key, "not a hash"));
	relay_redis_reply_free(H_CMD(&h, "XADD", "events", "5-1", "event",
				     "{\"kind\":\"x\"}"));
	h_start(&h);
	h_settle(&h, 1400);
	m = h_metrics(&h);
	RT_CHECK(h.eng_warn[9] >= 2 && h.eng_warn[9] <= 5);
	RT_EQ_INT((int)m.step_failures, h.eng_warn[9]);
	RT_EQ_INT((int)m.stuck_messages, 1);
	RT_EQ_INT(r_runs(&h, NULL, NULL), 0);
	RT_EQ_INT((int)h_pel(&h), 1);
	RT_EQ_INT(relay_consumer_stuck_messages(h.c, r_take_stuck, reason),
		  0);
	RT_CHECK(strstr(reason, "claim_classification: ") == reason);
	RT_EQ_STR(reason, "claim_classification: wrong type");
	relay_redis_reply_free(H_CMD(&h, "DEL", key));
	H_UNTIL(&h, h_pel(&h) == 0, 15000);
	RT_EQ_INT((int)h_pel(&h), 0);
	RT_EQ_INT(r_runs(&h, "good", "5-1"), 1);
	H_UNTIL(&h, h_metrics(&h).stuck_messages == 0, 5000);
	RT_EQ_INT((int)h_metrics(&h).stuck_messages, 0);
	relay_free(key);
	h_cleanup(&h);
}


/* The fused success tail's guarantees with the real Lua script. */
static void test_consumer_redis__fused_tail_guarantees(void)
{
	h_ctx h;

	r_init(&h, NULL);
	fused_tail_guarantees(&h);
	h_cleanup(&h);
}

int main(int argc, char **argv)
{
	static const rt_case cases[] = {
		RT_CASE(test_consumer_redis__lifecycle_retry_dlq),
		RT_CASE(test_consumer_redis__unmatched_and_malformed),
		RT_CASE(test_consumer_redis__crashed_owner_reclaimed),
		RT_CASE(test_consumer_redis__two_replicas),
		RT_CASE(test_consumer_redis__renewal_across_replicas),
		RT_CASE(test_consumer_redis__slot_saturation_drains),
		RT_CASE(test_consumer_redis__restart_recovery),
		RT_CASE(test_consumer_redis__deleted_while_running),
		RT_CASE(test_consumer_redis__failing_script_backs_off),
		RT_CASE(test_consumer_redis__fused_tail_guarantees),
	};
	int rc = rt_main(argc, argv, cases, RT_NCASES(cases));

	if (srv_up)
		rt_redis_server_cleanup(&srv);
	return rc;
}
