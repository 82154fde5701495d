/*
 * test_memory.c - the shared backend suite (suite.h) on the memory
 * backend with a pinned clock, plus what only a pinned clock can show:
 * TTL expiry and PEL idle times move exactly with the injected clock.
 */
#include <ev.h>

#include "relaytest.h"
#include "rt_oom.h"

#include "relay/clock.h"
#include "relay/redis.h"
#include "relay/relay_libev.h"
#include "relay/sys/redis.h"

static relay_redis_backend *rs_b;
static relay_clock_fixed rs_clock;

static void rs_setup(void)
{
	relay_clock *c = relay_clock_fixed_init(&rs_clock, 1796229900000LL);

	RT_ASSERT(relay_redis_memory_new(&rs_b, c) == 0);
}

static void rs_teardown(void)
{
	relay_redis_free(rs_b);
	rs_b = NULL;
}

static void rs_sleep_ms(int ms)
{
	rs_clock.wall += ms;
}

static void rs_down(void)
{
	RT_ASSERT(relay_redis_memory_set_down(rs_b, 1) == 0);
}

static void rs_up(void)
{
	RT_ASSERT(relay_redis_memory_set_down(rs_b, 0) == 0);
}

#include "suite.h"


static void order_cb(relay_redis_backend *b, int status,
		     relay_redis_reply *r, void *payload)
{
	int *slot = payload;

	*slot = status == 0 && r ? (int)r->integer + 100 : status;
	relay_redis_reply_free(r);
}

/* "memory://" on a host loop: replies come later, from the loop, in
 * issue order; freeing fails the undelivered ones with ECLOSED. */
static void test_memory__host_loop_delivers_later_in_order(void)
{
	const char *incr1[] = { "HSET", "h", "a", "1" };
	const char *incr2[] = { "HSET", "h", "b", "1" };
	const char *hlen[] = { "HLEN", "h" };
	struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
	relay_redis_backend *b = NULL;
	relay_redis_reply *r = NULL;
	int got[3] = { 0, 0, 0 }, late = 0;

	RT_ASSERT(relay_redis_open_libev(&b, loop, "memory://", NULL,
					 NULL) == 0);
	RT_EQ_STR(relay_redis_name(b), "memory");
	RT_EQ_INT(relay_redis_command(b, 4, incr1, NULL, order_cb, &got[0]),
		  0);
	RT_EQ_INT(relay_redis_command(b, 4, incr2, NULL, order_cb, &got[1]),
		  0);
	RT_EQ_INT(relay_redis_command(b, 2, hlen, NULL, order_cb, &got[2]),
		  0);
	RT_EQ_INT(got[0] + got[1] + got[2], 0); /* nothing delivered yet */
	RT_EQ_INT(relay_redis_sync_command(b, &r, 2, hlen, NULL),
		  RELAY_EINVAL);
	ev_run(loop, EVRUN_NOWAIT);
	RT_EQ_INT(got[0], 101);
	RT_EQ_INT(got[1], 101);
	RT_EQ_INT(got[2], 102);
	{
		/* transitions go through the same queue */
		struct rs_wait w = { 0 };

		RT_EQ_INT(relay_inv_try_start(b, RS_KEY, "a/h", RS_NOW, 6000,
					      rs_inv_cb, &w), 0);
		RT_CHECK(!w.done);
		ev_run(loop, EVRUN_NOWAIT);
		RT_CHECK(w.done);
		RT_EQ_INT(w.status, 0);
		RT_EQ_INT(w.o.result, RELAY_INV_R_CLAIMED);
	}
	RT_EQ_INT(relay_redis_memory_set_down(b, 0), 0);
	RT_EQ_INT(relay_redis_command(b, 2, hlen, NULL, order_cb, &late), 0);
	relay_redis_free(b);
	RT_EQ_INT(late, RELAY_ECLOSED);
	ev_loop_destroy(loop);
}

static void test_memory__retention_ttl_follows_clock(void)
{
	relay_inv_outcome o;

	rs_setup();
	RT_ASSERT(rs_try("a/h", RS_NOW, 6000, &o) == 0);
	RT_ASSERT(rs_retain(RS_KEY, 1000, &o) == 0);
	RT_EQ_INT(RS_INT("PTTL", RS_KEY), 1000);
	rs_sleep_ms(999);
	RT_EQ_INT(RS_INT("EXISTS", RS_KEY), 1);
	rs_sleep_ms(1);
	RT_EQ_INT(RS_INT("EXISTS", RS_KEY), 0);
	RT_EQ_INT(RS_INT("PTTL", RS_KEY), -2);
	rs_teardown();
}

static void test_memory__pel_idle_follows_clock(void)
{
	relay_redis_reply *r;

	rs_setup();
	RS_STR("XGROUP", "CREATE", "s", "g", "0", "MKSTREAM");
	RS_STR("XADD", "s", "*", "event", "{}");
	relay_redis_reply_free(RS_CMD("XREADGROUP", "GROUP", "g", "c",
				      "STREAMS", "s", ">"));
	rs_sleep_ms(60000);
	r = RS_CMD("XPENDING", "s", "g", "IDLE", "60000", "-", "+", "10");
	RT_ASSERT(r && r->elements == 1);
	RT_EQ_INT(r->element[0]->element[2]->integer, 60000);
	relay_redis_reply_free(r);
	r = RS_CMD("XPENDING", "s", "g", "IDLE", "60001", "-", "+", "10");
	RT_ASSERT(r && r->elements == 0);
	relay_redis_reply_free(r);
	rs_teardown();
}

static void test_memory__callback_runs_before_return(void)
{
	struct rs_wait w = { 0 };

	rs_setup();
	RT_EQ_INT(relay_inv_claim_classification(rs_b, RS_KEY, rs_inv_cb, &w),
		  0);
	RT_CHECK(w.done);
	RT_EQ_INT(relay_redis_sync_wait(rs_b, &w.done), 0);
	RT_EQ_INT(relay_inv_claim_classification(rs_b, NULL, rs_inv_cb, &w),
		  RELAY_EINVAL);
	rs_teardown();
}

static void test_memory__open_by_uri(void)
{
	relay_redis_backend *b = NULL;
	relay_error err;

	RT_EQ_INT(relay_redis_open(&b, "memory://", NULL, &err), 0);
	RT_ASSERT(b != NULL);
	RT_EQ_STR(relay_redis_name(b), "memory");
	relay_redis_free(b);
	RT_EQ_INT(relay_redis_open(&b, "bogus", NULL, &err), RELAY_EINVAL);
	RT_CHECK(b == NULL);
	relay_redis_free(NULL);
}



/* A blocking XREADGROUP on "memory://" over a loop waits like Redis: an
 * XADD wakes it, otherwise BLOCK elapses and it gets nil. */
static void test_memory__host_loop_blocking_read(void)
{
	struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
	relay_redis_backend *b = NULL;
	struct rs_typed t, t2, t3, add;
	const char *names[] = { "event" }, *vals[] = { "{}" };
	ev_tstamp t0;
	int spins = 0;

	RT_ASSERT(relay_redis_open_libev(&b, loop, "memory://", NULL,
					 NULL) == 0);
	memset(&t, 0, sizeof(t));
	RT_EQ_INT(relay_redis_group_create(b, "s", "g", "0", rs_int_cb, &t),
		  0);
	ev_run(loop, EVRUN_NOWAIT);
	RT_EQ_INT(t.done, 1);
	memset(&t, 0, sizeof(t));
	RT_EQ_INT(relay_redis_xreadgroup(b, "s", "g", "c", 10, 5000, ">",
					 rs_entries_cb, &t), 0);
	ev_run(loop, EVRUN_NOWAIT);
	RT_EQ_INT(t.done, 0); /* blocked, not answered nil */
	memset(&add, 0, sizeof(add));
	RT_EQ_INT(relay_redis_xadd(b, "s", 1, names, vals, NULL, rs_ids_cb,
				   &add), 0);
	while ((!t.done || !add.done) && spins++ < 100)
		ev_run(loop, EVRUN_ONCE);
	RT_EQ_INT(add.done, 1);
	RT_EQ_INT(t.done, 1);
	RT_EQ_INT(t.status, 0);
	RT_EQ_INT(t.n, 1); /* woken by the XADD */
	relay_stream_entries_free(t.e, t.n);
	relay_redis_strings_free(add.ids, add.n);
	/* nothing arrives: nil after BLOCK */
	memset(&t2, 0, sizeof(t2));
	t0 = ev_time();
	RT_EQ_INT(relay_redis_xreadgroup(b, "s", "g", "c", 10, 50, ">",
					 rs_entries_cb, &t2), 0);
	spins = 0;
	while (!t2.done && spins++ < 1000)
		ev_run(loop, EVRUN_ONCE);
	RT_EQ_INT(t2.done, 1);
	RT_EQ_INT(t2.n, 0);
	RT_CHECK(ev_time() - t0 >= 0.045);
	/* a parked read fails with ECLOSED when the backend goes */
	memset(&t3, 0, sizeof(t3));
	RT_EQ_INT(relay_redis_xreadgroup(b, "s", "g", "c", 10, 5000, ">",
					 rs_entries_cb, &t3), 0);
	ev_run(loop, EVRUN_NOWAIT);
	RT_EQ_INT(t3.done, 0);
	relay_redis_free(b);
	RT_EQ_INT(t3.done, 1);
	RT_EQ_INT(t3.status, RELAY_ECLOSED);
	ev_loop_destroy(loop);
}


/* A backend written against relay/sys/redis.h only: it counts calls and
 * delegates to a memory backend. The core takes it like its own and
 * refuses a table with a bad version. */
struct counting {
	relay_redis_backend parent;
	relay_redis_backend *inner;
	int commands, scripts;
};

static int counting_command(relay_redis_backend *b, int argc,
			    const char *const *argv, const size_t *argvlen,
			    relay_redis_reply_cb cb, void *payload)
{
	struct counting *c = (struct counting *)b;

	c->commands++;
	return c->inner->command(c->inner, argc, argv, argvlen, cb, payload);
}

static int counting_script(relay_redis_backend *b, relay_redis_script op,
			   int numkeys, int argc, const char *const *argv,
			   const size_t *argvlen, relay_redis_reply_cb cb,
			   void *payload)
{
	struct counting *c = (struct counting *)b;

	c->scripts++;
	return c->inner->script(c->inner, op, numkeys, argc, argv, argvlen,
				cb, payload);
}

static const char *counting_errstr(const relay_redis_backend *b)
{
	return "";
}

static void counting_free(relay_redis_backend *b)
{
	struct counting *c = (struct counting *)b;

	relay_redis_free(c->inner);
	c->inner = NULL;
}

static void gate_cs_cb(int status, const relay_inv_outcome *cls,
		       const relay_inv_outcome *start, void *p)
{
	(void)status;
	(void)cls;
	(void)start;
	*(int *)p = 1;
}

static void test_memory__custom_backend_through_sys_header(void)
{
	struct counting c = {
		{ RELAY_REDIS_BACKEND_VERSION, "counting", counting_command,
		  counting_script, NULL, counting_errstr, counting_free },
		NULL, 0, 0,
	};
	struct rs_wait w = { 0 };
	relay_redis_reply *r = NULL;
	const char *ping[] = { "PING" };

	RT_ASSERT(relay_redis_memory_new(&c.inner, NULL) == 0);
	RT_EQ_INT(relay_redis_backend_check(&c.parent), 0);
	RT_EQ_INT(relay_inv_claim_classification(&c.parent, RS_KEY, rs_inv_cb,
						 &w), 0);
	RT_CHECK(w.done);
	RT_EQ_INT(w.o.result, RELAY_INV_R_CLAIMED);
	RT_EQ_INT(relay_redis_sync_command(&c.parent, &r, 1, ping, NULL), 0);
	RT_EQ_STR(r ? r->str : NULL, "PONG");
	relay_redis_reply_free(r);
	RT_EQ_INT(c.scripts, 1);
	RT_EQ_INT(c.commands, 1);
	c.parent.version = 0;
	memset(&w, 0, sizeof(w));
	RT_EQ_INT(relay_inv_claim_classification(&c.parent, RS_KEY, rs_inv_cb,
						 &w), RELAY_EINVAL);
	RT_EQ_INT(relay_redis_command(&c.parent, 1, ping, NULL, NULL, NULL),
		  RELAY_EINVAL);
	RT_CHECK(!w.done);
	c.parent.version = RELAY_REDIS_BACKEND_VERSION + 1;
	RT_EQ_INT(relay_redis_backend_check(&c.parent), RELAY_EINVAL);
	c.parent.version = RELAY_REDIS_BACKEND_VERSION;
	RT_EQ_INT(c.scripts, 1);
	{
		/* A version 1 backend (built before SCHEDULE_PUBLISH was
		 * appended) is never sent it; version 1 ops still work. */
		const char *argv[4] = { "relay:schedule:x", "events",
					"1000", "{}" };

		c.parent.version = 1;
		RT_EQ_INT(relay_redis_backend_check(&c.parent), 0);
		RT_EQ_INT(relay__redis_script(&c.parent,
					      RELAY_REDIS_SCRIPT_SCHEDULE_PUBLISH,
					      2, 4, argv, NULL, NULL, NULL),
			  RELAY_EBACKEND);
		RT_EQ_INT(c.scripts, 1);
		memset(&w, 0, sizeof(w));
		RT_EQ_INT(relay_inv_claim_classification(&c.parent, RS_KEY,
							 rs_inv_cb, &w), 0);
		RT_CHECK(w.done);
		RT_EQ_INT(c.scripts, 2);
		c.parent.version = RELAY_REDIS_BACKEND_VERSION;
	}
	{
		/* A version 3 backend is never sent CLAIM_START (the engine
		 * then sends the classification and try_start apart). */
		int done = 0;

		c.parent.version = 3;
		RT_EQ_INT(relay__inv_claim_start(&c.parent, RS_KEY, "a/h",
						 RS_NOW, 1000, gate_cs_cb,
						 &done), RELAY_EBACKEND);
		RT_CHECK(!done);
		RT_EQ_INT(c.scripts, 2);
		c.parent.version = RELAY_REDIS_BACKEND_VERSION;
	}
	relay_redis_free(&c.parent);
}

/* ---- chaos malloc: every allocation failure point, no crash, no leak */

/*
 * Allocations until the failing one; < 0: never fail. In "sticky" mode
 * every allocation from then on fails (a process out of memory); in
 * one-shot mode only that one does, so the code after a failed step keeps
 * running and partial writes would show.
 */
static int chaos_sticky; /* rt_oom.h mode of the current pass */

struct chaos_calls {
	int calls;
};

static void chaos_inv_cb(int status, const relay_inv_outcome *o, void *p)
{
	((struct chaos_calls *)p)->calls++;
}

static void chaos_persist_cb(int status, relay_dlq_persist_result res,
			     const char *id, void *p)
{
	((struct chaos_calls *)p)->calls++;
}

static void chaos_entries_cb(relay_redis_backend *b, int status,
			     relay_stream_entry *e, size_t n, void *p)
{
	((struct chaos_calls *)p)->calls++;
	relay_stream_entries_free(e, n);
}

static void chaos_claim_cb(relay_redis_backend *b, int status,
			   relay_autoclaim *a, void *p)
{
	((struct chaos_calls *)p)->calls++;
	relay_autoclaim_free(a);
}

/* One pass of the whole surface; returns the number of failed calls
 * (nonzero return or nonzero status). Each call's callback must have run
 * exactly once when the call returned 0 and never otherwise. */
static int chaos_pass(relay_clock *clock)
{
	relay_dlq_entry e = rs_entry("-", "-");
	relay_redis_backend *b;
	struct chaos_calls c;
	int rc, failures = 0;
	char *key;

#define CHAOS(call)                                                       \
	do {                                                              \
		c.calls = 0;                                              \
		rc = (call);                                              \
		RT_EQ_INT(c.calls, rc ? 0 : 1);                           \
		failures += rc != 0;                                      \
	} while (0)

	if (relay_redis_memory_new(&b, clock))
		return 1;
	key = relay_inv_key("s", "g", "1-0");
	if (!key) {
		relay_redis_free(b);
		return 1;
	}
	CHAOS(relay_inv_claim_classification(b, key, chaos_inv_cb, &c));
	CHAOS(relay_inv_try_start(b, key, "a/h", RS_NOW, 6000, chaos_inv_cb,
				  &c));
	{
		/* an existing DLQ stream, so an undo cannot hide behind
		 * deleting a stream the persist created */
		relay_redis_backend *keep = rs_b;

		rt_oom_pause();
		rs_b = b;
		RS_STR("XADD", RS_DLQ, "*", "older", "entry");
		rs_b = keep;
		rt_oom_resume();
	}
	CHAOS(relay_dlq_persist(b, key, RS_DLQ, NULL, 0, NULL, &e,
				chaos_persist_cb, &c));
	{
		/* all or nothing: entry present iff marker set */
		relay_redis_backend *keep = rs_b;

		rt_oom_pause();
		rs_b = b;
		if ((RS_INT("XLEN", RS_DLQ) == 2) !=
		    (strcmp(RS_STR("HGET", key, "__dlq_placeholder"), "1") ==
		     0))
			RT_FAILF("half-written DLQ persist at failure point "
				 "%ld", rt_oom_at);
		rs_b = keep;
		rt_oom_resume();
	}
	CHAOS(relay_inv_retain(b, key, 1000, chaos_inv_cb, &c));
	{
		const char *names[] = { "event" }, *vals[] = { "{}" };
		relay_redis_reply *r = NULL;
		const char *grp[] = { "XGROUP", "CREATE", "s", "g", "0",
				      "MKSTREAM" };
		const char *add[] = { "XADD", "s", "*", names[0], vals[0] };

		failures += relay_redis_sync_command(b, &r, 6, grp, NULL) != 0;
		relay_redis_reply_free(r);
		r = NULL;
		failures += relay_redis_sync_command(b, &r, 5, add, NULL) != 0;
		relay_redis_reply_free(r);
		CHAOS(relay_redis_xreadgroup(b, "s", "g", "c", 10, -1, ">",
					     chaos_entries_cb, &c));
		CHAOS(relay_redis_xautoclaim(b, "s", "g", "c2", 0, "0-0", 10,
					     chaos_claim_cb, &c));
		CHAOS(relay_redis_xrange(b, RS_DLQ, "-", "+", 10,
					 chaos_entries_cb, &c));
	}
#undef CHAOS
	relay_free(key);
	relay_redis_free(b);
	return failures;
}

static void test_memory__chaos_malloc(void)
{
	relay_clock_fixed clk;
	relay_clock *clock = relay_clock_fixed_init(&clk, RS_NOW);
	long n;
	int clean = 0;

	for (chaos_sticky = 1; chaos_sticky >= 0; chaos_sticky--) {
		clean = 0;
		for (n = 0; n < 5000 && !clean; n++) {
			/* n allocations succeed, the next fails (sticky: and
			 * every later one) */
			rt_oom_arm(n + 1, chaos_sticky);
			rt_oom_install();
			clean = chaos_pass(clock) == 0 && !rt_oom_fired();
			rt_oom_uninstall();
		}
		printf("# %s: %ld allocation failure points exercised\n",
		       chaos_sticky ? "sticky" : "one-shot", n - 1);
		RT_CHECK(clean); /* some n let the whole pass succeed */
		RT_CHECK(n > 50);
	}
}

static const rt_case cases[] = {
	RS_SHARED_CASES,
	RT_CASE(test_memory__retention_ttl_follows_clock),
	RT_CASE(test_memory__pel_idle_follows_clock),
	RT_CASE(test_memory__callback_runs_before_return),
	RT_CASE(test_memory__open_by_uri),
	RT_CASE(test_memory__host_loop_delivers_later_in_order),
	RT_CASE(test_memory__host_loop_blocking_read),
	RT_CASE(test_memory__custom_backend_through_sys_header),
	RT_CASE(test_memory__chaos_malloc),
};

int main(int argc, char **argv)
{
	return rt_main(argc, argv, cases, RT_NCASES(cases));
}
