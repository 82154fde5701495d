/*
 * test_memory.c - the shared backend suite (suite.h) on the memory
 * backend with a pinned clock, plus what only a pinned clock can show:
 * TTL expiry and PEL idle times move exactly with the injected clock.
 */
#include "relaytest.h"

#include "relay/clock.h"
#include "relay/redis.h"

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

#include "suite.h"

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

static const rt_case cases[] = {
	RS_SHARED_CASES,
	RT_CASE(test_memory__retention_ttl_follows_clock),
	RT_CASE(test_memory__pel_idle_follows_clock),
	RT_CASE(test_memory__callback_runs_before_return),
	RT_CASE(test_memory__open_by_uri),
};

int main(int argc, char **argv)
{
	return rt_main(argc, argv, cases, RT_NCASES(cases));
}
