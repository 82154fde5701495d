/*
 * test_hiredis.c - the shared backend suite (suite.h) on the hiredis
 * backend against a throwaway redis-server on a unix socket, plus what
 * only a real server shows: EVALSHA with NOSCRIPT recovery, outages
 * (errors reported, nothing half-written), command timeouts, reconnect on
 * a host loop, and exactly-once callbacks on close. SKIP when
 * redis-server is not installed.
 */
#include <ev.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "relaytest.h"

#include "redis_server.h"
#include "relay/redis.h"
#include "relay/relay_libev.h"

static relay_redis_backend *rs_b;
static rt_redis_server srv;
static int srv_state = -1; /* rt_redis_server_start() result */

static void rs_open(relay_redis_backend **b, int timeout_ms)
{
	relay_redis_options o = RELAY_REDIS_OPTIONS_INIT;
	relay_error err;

	o.command_timeout_ms = timeout_ms;
	RT_ASSERT(relay_redis_open(b, srv.uri, &o, &err) == 0);
}

static void rs_setup(void)
{
	relay_redis_reply *r = NULL;
	const char *argv[] = { "FLUSHALL" };

	if (srv_state == RT_REDIS_SKIP)
		RT_SKIP("redis-server not installed");
	RT_ASSERT(srv_state == 0);
	if (!srv.pid)
		RT_ASSERT(rt_redis_server_restart(&srv) == 0);
	rs_open(&rs_b, 5000);
	RT_ASSERT(relay_redis_sync_command(rs_b, &r, 1, argv, NULL) == 0);
	relay_redis_reply_free(r);
}

static void rs_teardown(void)
{
	relay_redis_free(rs_b);
	rs_b = NULL;
}

static void rs_sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

static void rs_down(void)
{
	rt_redis_server_stop(&srv);
}

static void rs_up(void)
{
	RT_ASSERT(rt_redis_server_restart(&srv) == 0);
}

#include "suite.h"

static void test_hiredis__evalsha_after_first_call(void)
{
	relay_inv_outcome o;
	const char *info;
	int i;

	rs_setup();
	RS_STR("CONFIG", "RESETSTAT");
	for (i = 0; i < 4; i++)
		RT_EQ_INT(rs_try("a/h", RS_NOW, 6000, &o), 0);
	info = RS_STR("INFO", "commandstats");
	if (!strstr(info, "cmdstat_evalsha:calls=3"))
		RT_FAILF("%s", info);
	RT_CHECK(strstr(info, "cmdstat_eval:calls=1") != NULL);
	rs_teardown();
}


/* A SCRIPT LOAD lost with its connection must not leave the backend on
 * EVAL forever: after reconnecting, the SHA1 is learned again. */
static void test_hiredis__sha_relearned_after_lost_load(void)
{
	struct rs_wait w = { 0 };
	relay_redis_backend *keep;
	relay_inv_outcome o;
	const char *info;
	int i;

	rs_setup();
	keep = rs_b;
	rs_open(&rs_b, 200); /* fresh: no SHA1 known yet */
	rt_redis_server_pause(&srv);
	RT_EQ_INT(relay_inv_try_start(rs_b, RS_KEY, "a/h", RS_NOW, 6000,
				      rs_inv_cb, &w), 0);
	relay_redis_sync_wait(rs_b, &w.done); /* times out, drops the link */
	RT_EQ_INT(w.status, RELAY_ETIMEOUT);
	rt_redis_server_resume(&srv);
	rs_sleep_ms(50);
	{
		relay_redis_backend *t = rs_b;

		rs_b = keep;
		RS_STR("CONFIG", "RESETSTAT");
		rs_b = t;
	}
	for (i = 0; i < 4; i++)
		RT_EQ_INT(rs_try("a/hx", RS_NOW, 6000, &o), 0);
	relay_redis_free(rs_b);
	rs_b = keep;
	info = RS_STR("INFO", "commandstats");
	if (!strstr(info, "cmdstat_evalsha:calls=3"))
		RT_FAILF("%s", info);
	rs_teardown();
}

static void test_hiredis__noscript_reloads_and_retries(void)
{
	relay_inv_outcome o;

	const char *info;

	rs_setup();
	RT_EQ_INT(rs_try("a/h", RS_NOW, 6000, &o), 0);
	RT_EQ_INT(rs_try("a/h", RS_NOW, 6000, &o), 0); /* SHA1 known now */
	RT_EQ_STR(RS_STR("SCRIPT", "FLUSH"), "OK");
	RS_STR("CONFIG", "RESETSTAT");
	RT_EQ_INT(rs_try("a/h", RS_NOW + 1, 6000, &o), 0);
	RT_EQ_INT(o.result, RELAY_INV_R_RUNNING);
	RT_EQ_INT(rs_try("a/h", RS_NOW + 6000, 6000, &o), 0);
	RT_EQ_INT(o.result, RELAY_INV_R_CLAIMED);
	RT_EQ_INT(o.attempt, 2);
	/* NOSCRIPT, SCRIPT LOAD, the same EVALSHA again, then EVALSHA */
	info = RS_STR("INFO", "commandstats");
	if (!strstr(info, "cmdstat_evalsha:calls=3") ||
	    !strstr(info, "cmdstat_script|load:calls=1") ||
	    strstr(info, "cmdstat_eval:"))
		RT_FAILF("%s", info);
	rs_teardown();
}

/* Redis down: every operation reports an error (try_start fails closed);
 * back up: the same backend works again. */
static void test_hiredis__outage_reports_errors_then_recovers(void)
{
	relay_dlq_entry e = rs_entry("a", "h");
	relay_dlq_persist_result res;
	relay_inv_outcome o, claim;
	int rc;

	rs_setup();
	RT_ASSERT(rs_try("a/h", RS_NOW, 6000, &claim) == 0);
	rt_redis_server_stop(&srv);
	rc = rs_try("a/h", RS_NOW + 6000, 6000, &o);
	RT_CHECK(rc == RELAY_ECLOSED || rc == RELAY_EBACKEND);
	rc = rs_complete("a/h", claim.attempt, claim.token, &o);
	RT_CHECK(rc != 0);
	rc = rs_persist(RS_KEY, "a/h", 1, claim.token, &e, &res, NULL);
	RT_CHECK(rc != 0);
	RT_CHECK(relay_redis_errstr(rs_b)[0] != '\0');
	RT_ASSERT(rt_redis_server_restart(&srv) == 0);
	/* the restarted server is empty (no persistence): attempt 1 again */
	RT_EQ_INT(rs_try("a/h", RS_NOW, 6000, &o), 0);
	RT_EQ_INT(o.result, RELAY_INV_R_CLAIMED);
	RT_EQ_INT(o.attempt, 1);
	rs_teardown();
}

/* An unresponsive server: the persist times out; whatever the server did
 * with the script once resumed, entry and marker agree, and a retry
 * converges on exactly one entry. */
static void test_hiredis__timeout_never_half_writes(void)
{
	relay_dlq_entry e = rs_entry("a", "h");
	relay_dlq_persist_result res;
	relay_redis_backend *slow;
	char tok[40], val[128];
	long long len;
	int rc;

	rs_setup();
	rs_make_exhausted("a/h", tok);
	rs_open(&slow, 200);
	RT_EQ_INT(RS_INT("PING") == -999, 1); /* PONG is a status */
	{
		/* warm the SHA1 so the timed-out call is an EVALSHA */
		relay_redis_backend *keep = rs_b;

		rs_b = slow;
		RT_EQ_INT(rs_persist("relay:invocation:x:g:9-9", "a/h", 1, tok,
				     &e, &res, NULL), 0);
		RT_EQ_INT(res, RELAY_DLQ_STALE);
		rt_redis_server_pause(&srv);
		rc = rs_persist(RS_KEY, "a/h", 1, tok, &e, &res, NULL);
		RT_EQ_INT(rc, RELAY_ETIMEOUT);
		rt_redis_server_resume(&srv);
		rs_b = keep;
	}
	relay_redis_free(slow);
	rs_sleep_ms(50);
	len = RS_INT("XLEN", RS_DLQ);
	snprintf(val, sizeof(val), "%s", RS_STR("HGET", RS_KEY, "a/h"));
	RT_CHECK(len == 0 || len == 1);
	RT_CHECK((len == 1) == (strstr(val, ":dlq") != NULL));
	rc = rs_persist(RS_KEY, "a/h", 1, tok, &e, &res, NULL);
	RT_EQ_INT(rc, 0);
	RT_CHECK(res == (len ? RELAY_DLQ_ALREADY : RELAY_DLQ_WRITTEN));
	RT_EQ_INT(RS_INT("XLEN", RS_DLQ), 1);
	rs_teardown();
}

struct ping_state {
	int done, status;
};

static void ping_cb(relay_redis_backend *b, int status,
		    relay_redis_reply *r, void *payload)
{
	struct ping_state *p = payload;

	p->done++;
	p->status = status;
	relay_redis_reply_free(r);
}

static char log_ids[512];

static void record_log(void *payload, relay_log_level lvl, const char *msgid,
		       const char *msg)
{
	if (strlen(log_ids) + strlen(msgid) + 2 < sizeof(log_ids)) {
		strcat(log_ids, msgid);
		strcat(log_ids, " ");
	}
}

static void test_hiredis__host_loop_reconnects_with_backoff(void)
{
	relay_redis_options o = RELAY_REDIS_OPTIONS_INIT;
	const char *argv[] = { "PING" };
	struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
	relay_redis_backend *b = NULL;
	struct ping_state p = { 0, 0 };
	relay_redis_reply *r = NULL;
	relay_error err;
	int rc, i, ok = 0;

	rs_setup();
	o.reconnect_min_ms = 50;
	o.reconnect_max_ms = 200;
	o.logger.fn = record_log;
	o.logger.level = RELAY_LOG_DEBUG;
	log_ids[0] = '\0';
	RT_ASSERT(relay_redis_open_libev(&b, loop, srv.uri, &o, &err) == 0);
	RT_EQ_INT(relay_redis_sync_command(b, &r, 1, argv, NULL),
		  RELAY_EINVAL);
	RT_EQ_INT(relay_redis_command(b, 1, argv, NULL, ping_cb, &p), 0);
	while (!p.done)
		ev_run(loop, EVRUN_ONCE);
	RT_EQ_INT(p.status, 0);
	rt_redis_server_stop(&srv);
	p.done = 0;
	rc = relay_redis_command(b, 1, argv, NULL, ping_cb, &p);
	if (rc == 0) {
		while (!p.done)
			ev_run(loop, EVRUN_ONCE);
		RT_CHECK(p.status != 0);
	}
	RT_ASSERT(rt_redis_server_restart(&srv) == 0);
	for (i = 0; i < 100 && !ok; i++) {
		p.done = 0;
		rc = relay_redis_command(b, 1, argv, NULL, ping_cb, &p);
		if (rc == 0) {
			while (!p.done)
				ev_run(loop, EVRUN_ONCE);
			ok = p.status == 0;
		} else {
			ev_run(loop, EVRUN_ONCE); /* wait for the timer */
		}
	}
	RT_CHECK(ok);
	RT_EQ_INT(p.done, 1);
	RT_CHECK(strstr(log_ids, "RELAY-REDIS02") != NULL); /* lost */
	RT_CHECK(strstr(log_ids, "RELAY-REDIS04") != NULL); /* backoff */
	RT_CHECK(strstr(log_ids, "RELAY-REDIS03") != NULL); /* restored */
	relay_redis_free(b);
	ev_loop_destroy(loop);
	rs_teardown();
}

/*
 * A command on a host loop is written to the server when it is issued, not
 * when the loop next runs: the server works on it while the caller goes on
 * (doc/perf/engine.md). Seen from a second connection without running the
 * first one's loop: fails when commands wait for the loop's write event.
 */
static void test_hiredis__command_written_at_once(void)
{
	relay_redis_options o = RELAY_REDIS_OPTIONS_INIT;
	const char *ping[] = { "PING" };
	const char *set[] = { "SET", "relay:written", "1" };
	const char *get[] = { "GET", "relay:written" };
	struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
	relay_redis_backend *b = NULL;
	struct ping_state p = { 0, 0 };
	relay_redis_reply *r = NULL;
	relay_error err;
	int i, seen = 0;

	rs_setup();
	RT_ASSERT(relay_redis_open_libev(&b, loop, srv.uri, &o, &err) == 0);
	RT_EQ_INT(relay_redis_command(b, 1, ping, NULL, ping_cb, &p), 0);
	while (!p.done)
		ev_run(loop, EVRUN_ONCE);  /* connected */
	p.done = 0;
	RT_EQ_INT(relay_redis_command(b, 3, set, NULL, ping_cb, &p), 0);
	for (i = 0; i < 200 && !seen; i++) {
		RT_ASSERT(relay_redis_sync_command(rs_b, &r, 2, get, NULL) == 0);
		seen = r->type == RELAY_REDIS_REPLY_STRING &&
		       strcmp(r->str, "1") == 0;
		relay_redis_reply_free(r);
		if (!seen)
			rs_sleep_ms(10);
	}
	RT_CHECK(seen);
	RT_EQ_INT(p.done, 0);  /* its reply waits for the loop */
	while (!p.done)
		ev_run(loop, EVRUN_ONCE);
	RT_EQ_INT(p.status, 0);
	relay_redis_free(b);
	ev_loop_destroy(loop);
	rs_teardown();
}

static void test_hiredis__free_fails_inflight_once(void)
{
	const char *argv[] = { "PING" };
	struct ping_state p[3] = { { 0, 0 } };
	relay_redis_backend *b;
	int i;

	rs_setup();
	rs_open(&b, 5000);
	for (i = 0; i < 3; i++)
		RT_EQ_INT(relay_redis_command(b, 1, argv, NULL, ping_cb, &p[i]),
			  0);
	relay_redis_free(b);
	for (i = 0; i < 3; i++) {
		RT_EQ_INT(p[i].done, 1);
		RT_EQ_INT(p[i].status, RELAY_ECLOSED);
	}
	rs_teardown();
}


static void free_in_cb_cb(relay_redis_backend *b, int status,
			  relay_redis_reply *r, void *payload)
{
	int *slot = payload;

	relay_redis_reply_free(r);
	slot[0]++;
	slot[3] = status;
}

static relay_redis_backend *to_free;

static void first_frees(relay_redis_backend *b, int status,
			relay_redis_reply *r, void *payload)
{
	free_in_cb_cb(b, status, r, payload);
	relay_redis_free(to_free); /* from inside hiredis' reply processing */
	to_free = NULL;
}

/* A user callback may free the backend while other commands are in
 * flight: each of them still completes exactly once, with ECLOSED. */
static void test_hiredis__free_from_callback(void)
{
	const char *argv[] = { "PING" };
	struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
	int slots[3][4];
	int i, spins = 0;

	rs_setup();
	memset(slots, 0, sizeof(slots));
	RT_ASSERT(relay_redis_open_libev(&to_free, loop, srv.uri, NULL,
					 NULL) == 0);
	RT_EQ_INT(relay_redis_command(to_free, 1, argv, NULL, first_frees,
				      slots[0]), 0);
	for (i = 1; i < 3; i++)
		RT_EQ_INT(relay_redis_command(to_free, 1, argv, NULL,
					      free_in_cb_cb, slots[i]), 0);
	while (to_free && spins++ < 1000)
		ev_run(loop, EVRUN_ONCE);
	RT_CHECK(to_free == NULL);
	for (i = 0; i < 3; i++)
		RT_EQ_INT(slots[i][0], 1);
	RT_EQ_INT(slots[0][3], 0);
	/* the later PINGs were answered in the same read or closed */
	for (i = 1; i < 3; i++)
		RT_CHECK(slots[i][3] == 0 || slots[i][3] == RELAY_ECLOSED);
	ev_loop_destroy(loop);
	rs_teardown();
}


static char uri_errstr[256];

/* One command on a fresh backend for @uri; the value or error text in
 * @out, the backend's errstr afterwards in uri_errstr. */
static int uri_cmd(const char *uri, const char *a0, const char *a1,
		   const char *a2, char *out, size_t size)
{
	const char *argv[3] = { a0, a1, a2 };
	relay_redis_backend *b;
	relay_redis_reply *r = NULL;
	relay_error err;
	int rc;

	if (relay_redis_open(&b, uri, NULL, &err))
		return RELAY_EINVAL;
	rc = relay_redis_sync_command(b, &r, a2 ? 3 : 2, argv, NULL);
	if (rc == 0 && r->type == RELAY_REDIS_REPLY_ERROR)
		rc = RELAY_EBACKEND;
	if (r && r->str)
		snprintf(out, size, "%s", r->str); /* value or error text */
	else
		snprintf(out, size, "%s",
			 rc == 0 ? "(nil)" : relay_redis_errstr(b));
	snprintf(uri_errstr, sizeof(uri_errstr), "%s", relay_redis_errstr(b));
	relay_redis_reply_free(r);
	relay_redis_free(b);
	return rc;
}

/* host:port and redis://[user:pass@]host:port[/db] over TCP: AUTH with
 * and without a user name, SELECT, and a clear error on a bad password. */
static void test_hiredis__tcp_auth_select(void)
{
	rt_redis_server tcp;
	char uri[128], out[256];
	int rc;

	rc = rt_redis_server_start_tcp(&tcp, "s3cret");
	if (rc == RT_REDIS_SKIP)
		RT_SKIP("redis-server not installed");
	RT_ASSERT(rc == 0);
	snprintf(uri, sizeof(uri), "redis://default:s3cret@127.0.0.1:%d/2",
		 tcp.port);
	RT_EQ_INT(uri_cmd(uri, "SET", "k", "in-db-2", out, sizeof(out)), 0);
	snprintf(uri, sizeof(uri), "redis://s3cret@127.0.0.1:%d/2", tcp.port);
	RT_EQ_INT(uri_cmd(uri, "GET", "k", NULL, out, sizeof(out)), 0);
	RT_EQ_STR(out, "in-db-2");
	snprintf(uri, sizeof(uri), "redis://s3cret@127.0.0.1:%d", tcp.port);
	RT_EQ_INT(uri_cmd(uri, "GET", "k", NULL, out, sizeof(out)), 0);
	RT_EQ_STR(out, "(nil)"); /* db 0 */
	snprintf(uri, sizeof(uri), "127.0.0.1:%d", tcp.port);
	RT_CHECK(uri_cmd(uri, "GET", "k", NULL, out, sizeof(out)) != 0);
	RT_CHECK(strstr(out, "NOAUTH") != NULL);
	snprintf(uri, sizeof(uri), "redis://wrong@127.0.0.1:%d", tcp.port);
	RT_CHECK(uri_cmd(uri, "GET", "k", NULL, out, sizeof(out)) != 0);
	if (!strstr(uri_errstr, "WRONGPASS"))
		RT_FAILF("errstr after a refused AUTH: \"%s\"", uri_errstr);
	rt_redis_server_cleanup(&tcp);
}


/*
 * A seed list whose first seed is down: the failed connect ran nothing,
 * so a synchronous command is resent to the next seed at once; the
 * server answers CLUSTER SLOTS with an error, so the backend reports a
 * single node (which a backend that never connected cannot tell).
 */
static void test_hiredis__seed_list_rotates(void)
{
	const char *argv[] = { "PING" };
	rt_redis_server tcp;
	relay_redis_backend *b;
	relay_redis_reply *r = NULL;
	relay_error err;
	char uri[160];
	int rc;

	rc = rt_redis_server_start_tcp(&tcp, NULL);
	if (rc == RT_REDIS_SKIP)
		RT_SKIP("redis-server not installed");
	RT_ASSERT(rc == 0);
	/* Port 1 on loopback: nothing listens there. */
	snprintf(uri, sizeof(uri), "127.0.0.1:1,127.0.0.1:%d", tcp.port);
	RT_ASSERT(relay_redis_open(&b, uri, NULL, &err) == 0);
	RT_EQ_INT(relay__redis_cluster_mode(b), -1);
	rc = relay_redis_sync_command(b, &r, 1, argv, NULL);
	RT_EQ_INT(rc, 0);
	RT_CHECK(r && r->type == RELAY_REDIS_REPLY_STATUS &&
		 strcmp(r->str, "PONG") == 0);
	relay_redis_reply_free(r);
	RT_EQ_INT(relay__redis_cluster_mode(b), 0);
	relay_redis_free(b);
	/* The start-up check tries each seed and finds a single node. */
	uri_errstr[0] = '\0';
	{
		const char *events[] = { "events" };

		RT_EQ_INT(relay_redis_cluster_check(uri, events, 1, "g", NULL,
						    uri_errstr,
						    sizeof(uri_errstr)), 0);
	}
	rt_redis_server_cleanup(&tcp);
}

/* The 16-way race across 16 connections (16 replicas), all driven by one
 * loop so their scripts interleave on the server: one entry. */
static void test_hiredis__dlq_race_16_connections(void)
{
	relay_dlq_entry e = rs_entry("a", "h");
	struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
	relay_redis_backend *bs[16];
	struct rs_wait w[16];
	int i, all, written = 0, already = 0, spins = 0;
	char tok[40];

	rs_setup();
	rs_make_exhausted("a/h", tok);
	memset(w, 0, sizeof(w));
	for (i = 0; i < 16; i++)
		RT_ASSERT(relay_redis_open_libev(&bs[i], loop, srv.uri, NULL,
						 NULL) == 0);
	for (i = 0; i < 16; i++)
		RT_EQ_INT(relay_dlq_persist(bs[i], RS_KEY, RS_DLQ, "a/h", 1,
					    tok, &e, rs_persist_cb, &w[i]), 0);
	do {
		ev_run(loop, EVRUN_ONCE);
		for (all = 1, i = 0; i < 16; i++)
			all = all && w[i].done;
	} while (!all && spins++ < 10000);
	for (i = 0; i < 16; i++) {
		RT_EQ_INT(w[i].status, 0);
		written += w[i].res == RELAY_DLQ_WRITTEN;
		already += w[i].res == RELAY_DLQ_ALREADY;
		relay_redis_free(bs[i]);
	}
	RT_EQ_INT(written, 1);
	RT_EQ_INT(already, 15);
	RT_EQ_INT(RS_INT("XLEN", RS_DLQ), 1);
	ev_loop_destroy(loop);
	rs_teardown();
}


/* A blocking read longer than the command timeout is not a timeout.
 * (An idle redis-server ends a BLOCK on its next cron tick, up to 100 ms
 * late at the default hz 10: the command timeout, the margin here, must
 * be larger than that.) */
static void test_hiredis__block_extends_command_timeout(void)
{
	relay_redis_backend *keep;
	struct rs_typed t;

	rs_setup();
	RS_STR("XGROUP", "CREATE", "s", "g", "0", "MKSTREAM");
	keep = rs_b;
	rs_open(&rs_b, 250);
	memset(&t, 0, sizeof(t));
	RT_EQ_INT(rs_typed_wait(&t, relay_redis_xreadgroup(
				rs_b, "s", "g", "c", 1, 500, ">",
				rs_entries_cb, &t)), 0);
	RT_EQ_INT(t.n, 0);
	relay_redis_free(rs_b);
	rs_b = keep;
	rs_teardown();
}

static void test_hiredis__connect_refused(void)
{
	const char *argv[] = { "PING" };
	relay_redis_backend *b;
	relay_redis_reply *r = NULL;
	relay_error err;
	int rc;

	if (srv_state == RT_REDIS_SKIP)
		RT_SKIP("redis-server not installed");
	RT_ASSERT(relay_redis_open(&b, "unix:///nonexistent/redis.sock", NULL,
				   &err) == 0);
	rc = relay_redis_sync_command(b, &r, 1, argv, NULL);
	RT_CHECK(rc == RELAY_ECLOSED || rc == RELAY_EBACKEND);
	RT_CHECK(r == NULL);
	RT_CHECK(relay_redis_errstr(b)[0] != '\0');
	relay_redis_free(b);
}

/* ---- retention under a real race ---------------------------------------
 *
 * A child process produces (XADD), consumes in two groups (relay: c1
 * acknowledges most of what it reads, c2 reads and "crashes", never
 * acknowledging; c1 takes c2's PEL over with XAUTOCLAIM; analytics reads
 * slowly) while the parent runs retention steps as fast as it can with a
 * cutoff in the future, so only the groups protect entries. At the end
 * every XADDed id must be acknowledged by both groups or still be in the
 * stream, and XAUTOCLAIM must never have met a deleted entry.
 */
static relay_redis_reply *stress_cmd(relay_redis_backend *b, int argc,
				     const char *const *argv)
{
	relay_redis_reply *r = NULL;

	if (relay_redis_sync_command(b, &r, argc, argv, NULL) ||
	    !r || r->type == RELAY_REDIS_REPLY_ERROR) {
		relay_redis_reply_free(r);
		return NULL;
	}
	return r;
}

/* Read up to @count for @group/@consumer; log "<tag> id" for each entry
 * acknowledged (when @ack_pct allows). Returns -1 on a failure. */
static int stress_read(relay_redis_backend *b, FILE *log, const char *group,
		       const char *consumer, const char *count, int ack_pct,
		       char tag)
{
	const char *rd[] = { "XREADGROUP", "GROUP", group, consumer, "COUNT",
			     count, "STREAMS", "s", ">" };
	const char *ack[4] = { "XACK", "s", group, NULL };
	relay_redis_reply *r = stress_cmd(b, 9, rd), *e, *a;
	size_t i;

	if (!r)
		return -1;
	if (r->type != RELAY_REDIS_REPLY_ARRAY) {
		relay_redis_reply_free(r);
		return 0;
	}
	e = r->element[0]->element[1];
	for (i = 0; i < e->elements; i++) {
		if (rand() % 100 >= ack_pct)
			continue;
		ack[3] = e->element[i]->element[0]->str;
		a = stress_cmd(b, 4, ack);
		if (!a || a->integer != 1) {
			relay_redis_reply_free(a);
			relay_redis_reply_free(r);
			return -1;
		}
		relay_redis_reply_free(a);
		fprintf(log, "%c %s\n", tag, ack[3]);
	}
	relay_redis_reply_free(r);
	return 0;
}

/* XAUTOCLAIM everything idle in relay for c1 and acknowledge it; a
 * deleted id means a trim removed a pending entry: -1. */
static int stress_reclaim(relay_redis_backend *b, FILE *log)
{
	const char *cl[] = { "XAUTOCLAIM", "s", "relay", "c1", "0", "0-0",
			     "COUNT", "100" };
	const char *ack[4] = { "XACK", "s", "relay", NULL };
	relay_redis_reply *r = stress_cmd(b, 8, cl), *a;
	size_t i;
	int rc = 0;

	if (!r || r->elements != 3)
		rc = -1;
	else if (r->element[2]->elements != 0)
		rc = -1; /* deleted ids: data loss */
	for (i = 0; !rc && i < r->element[1]->elements; i++) {
		ack[3] = r->element[1]->element[i]->element[0]->str;
		a = stress_cmd(b, 4, ack);
		if (a && a->integer == 1)
			fprintf(log, "1 %s\n", ack[3]);
		relay_redis_reply_free(a);
	}
	relay_redis_reply_free(r);
	return rc;
}

static int stress_child(const char *path, int n)
{
	const char *add[] = { "XADD", "s", "*", "event", "{}" };
	relay_redis_backend *b;
	relay_redis_reply *r;
	FILE *log = fopen(path, "w");
	int i, rc = 0;

	srand(12);
	if (!log || relay_redis_open(&b, srv.uri, NULL, NULL))
		return 2;
	for (i = 0; i < n && !rc; i++) {
		r = stress_cmd(b, 5, add);
		if (!r)
			rc = 3;
		else
			fprintf(log, "A %s\n", r->str);
		relay_redis_reply_free(r);
		if (rand() % 3 == 0 && stress_read(b, log, "relay",
						    rand() % 4 ? "c1" : "c2",
						    "5", rand() % 4 ? 90 : 0,
						    '1'))
			rc = 4;
		if (rand() % 5 == 0 &&
		    stress_read(b, log, "analytics", "a1", "3", 100, '2'))
			rc = 5;
		if (i % 97 == 0 && stress_reclaim(b, log))
			rc = 6;
	}
	/* Drain: whatever is left unread or pending stays unacknowledged. */
	if (!rc && stress_reclaim(b, log))
		rc = 6;
	relay_redis_free(b);
	fclose(log);
	return rc;
}

static int stress_has(char **v, size_t n, const char *id)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (strcmp(v[i], id) == 0)
			return 1;
	return 0;
}

static void test_hiredis__trim_races_autoclaim_and_xadd(void)
{
	char path[] = "/tmp/relay-trim-stress.XXXXXX", line[128];
	char **added = NULL, **a1 = NULL, **a2 = NULL;
	size_t nadd = 0, n1 = 0, n2 = 0, i, lost = 0, kept = 0;
	int fd, status = 0, steps = 0, st;
	long long trimmed = 0;
	relay_stream_trim *t;
	pid_t pid;
	FILE *f;

	rs_setup();
	RT_EQ_STR(RS_STR("CONFIG", "SET", "stream-node-max-entries", "4"),
		  "OK");
	RS_STR("XGROUP", "CREATE", "s", "relay", "0", "MKSTREAM");
	RS_STR("XGROUP", "CREATE", "s", "analytics", "0");
	fd = mkstemp(path);
	RT_ASSERT(fd >= 0);
	close(fd);
	pid = fork();
	RT_ASSERT(pid >= 0);
	if (pid == 0)
		_exit(stress_child(path, 3000));
	while (waitpid(pid, &status, WNOHANG) == 0) {
		t = rs_trim("s", RS_NOW * 2, 50, 0, &st);
		RT_ASSERT(t);
		trimmed += t->trimmed;
		steps++;
		relay_stream_trim_free(t);
	}
	RT_ASSERT(WIFEXITED(status));
	RT_EQ_INT(WEXITSTATUS(status), 0);
	f = fopen(path, "r");
	RT_ASSERT(f);
	while (fgets(line, sizeof(line), f)) {
		char ***v = line[0] == 'A' ? &added
			    : line[0] == '1' ? &a1 : &a2;
		size_t *nv = line[0] == 'A' ? &nadd
			     : line[0] == '1' ? &n1 : &n2;

		line[strcspn(line, "\n")] = '\0';
		*v = realloc(*v, (*nv + 1) * sizeof(**v));
		(*v)[(*nv)++] = strdup(line + 2);
	}
	fclose(f);
	unlink(path);
	RT_EQ_INT(nadd, 3000);
	for (i = 0; i < nadd; i++) {
		relay_redis_reply *r;

		if (stress_has(a1, n1, added[i]) &&
		    stress_has(a2, n2, added[i]))
			continue;
		r = RS_CMD("XRANGE", "s", added[i], added[i]);
		if (r && r->elements == 1)
			kept++;
		else
			lost++;
		relay_redis_reply_free(r);
	}
	printf("# retention stress: %zu added, %zu/%zu acked, %d steps, "
	       "%lld trimmed, %zu unacknowledged kept\n", nadd, n1, n2,
	       steps, trimmed, kept);
	RT_EQ_INT(lost, 0);
	RT_CHECK(trimmed > 0);
	for (i = 0; i < nadd; i++)
		free(added[i]);
	for (i = 0; i < n1; i++)
		free(a1[i]);
	for (i = 0; i < n2; i++)
		free(a2[i]);
	free(added);
	free(a1);
	free(a2);
	rs_teardown();
}

static const rt_case cases[] = {
	RS_SHARED_CASES,
	RT_CASE(test_hiredis__trim_races_autoclaim_and_xadd),
	RT_CASE(test_hiredis__evalsha_after_first_call),
	RT_CASE(test_hiredis__seed_list_rotates),
	RT_CASE(test_hiredis__noscript_reloads_and_retries),
	RT_CASE(test_hiredis__sha_relearned_after_lost_load),
	RT_CASE(test_hiredis__outage_reports_errors_then_recovers),
	RT_CASE(test_hiredis__timeout_never_half_writes),
	RT_CASE(test_hiredis__host_loop_reconnects_with_backoff),
	RT_CASE(test_hiredis__command_written_at_once),
	RT_CASE(test_hiredis__free_fails_inflight_once),
	RT_CASE(test_hiredis__free_from_callback),
	RT_CASE(test_hiredis__dlq_race_16_connections),
	RT_CASE(test_hiredis__block_extends_command_timeout),
	RT_CASE(test_hiredis__connect_refused),
	RT_CASE(test_hiredis__tcp_auth_select),
};

int main(int argc, char **argv)
{
	int rc;

	srv_state = rt_redis_server_start(&srv);
	rc = rt_main(argc, argv, cases, RT_NCASES(cases));
	rt_redis_server_cleanup(&srv);
	return rc;
}
