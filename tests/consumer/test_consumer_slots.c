/*
 * test_consumer_slots.c - one relay_slots limiter shared by two consumers
 * reading two streams on one loop (relay/engine.h, options version 2
 * "slots"): the global limit and an app's limit hold across both, a
 * freed slot goes to the other stream's waiter, and a max_concurrency
 * that contradicts the shared limiter is refused. Memory backend, fixed
 * clock, the scripted in-process executor (unit).
 */
#include "lib/engine_fixture.h"

#define MIN_IDLE 60000   /* MinPendingIdle default: 1m */

#define APP_CONC(n) \
	"runtime: exec\n" \
	"command: [/bin/true]\n" \
	"concurrency: " #n "\n" \
	"events:\n" \
	"  - handler: h\n" \
	"    pattern:\n" \
	"      kind: [x]\n"

static relay_consumer *second(h_ctx *h, relay_slots *s)
{
	relay_consumer_options o = h->o;
	relay_consumer *c2 = NULL;
	relay_error err;

	o.stream = "events2";
	o.slots = s;
	RT_ASSERT(relay_consumer_new(&c2, h->loop, h->redis, NULL, h->apps,
				     &o, &err) == 0);
	RT_EQ_INT(relay_consumer_start(c2), 0);
	return c2;
}

static long long pel2(h_ctx *h)
{
	relay_redis_reply *r = H_CMD(h, "XPENDING", "events2", "relay");
	long long n = 0;

	if (r->type == RELAY_REDIS_REPLY_ARRAY && r->elements >= 1)
		n = r->element[0]->integer;
	relay_redis_reply_free(r);
	return n;
}

static void close2(h_ctx *h, relay_consumer *c2)
{
	h_closed_flag = 0;
	h_release(&h->exec, NULL);
	relay_consumer_close(c2, h_closed);
	H_UNTIL(h, h_closed_flag, 10000);
	RT_CHECK(h_closed_flag);
}

/* A consumer and second() sharing a new limiter of @max slots (in @s,
 * the second consumer in @c2), reading app "a" = @app whose handler
 * holds (returned). */
static h_script *two_consumers(h_ctx *h, size_t max, const char *app,
			       relay_slots **s, relay_consumer **c2)
{
	h_script *a;

	h_init(h, NULL);
	RT_EQ_INT(relay_slots_new(s, max), 0);
	h->o.slots = *s;
	h_write_app(h, "a", app);
	a = h_script_get(&h->exec, "a", "h");
	a->hold = 1;
	h_start(h);
	*c2 = second(h, *s);
	return a;
}

static void add_both(h_ctx *h, int n)
{
	int i;

	for (i = 0; i < n; i++) {
		h_xadd(h, "{\"kind\":\"x\"}");
		relay_redis_reply_free(H_CMD(h, "XADD", "events2", "*",
					     "event", "{\"kind\":\"x\"}"));
	}
}

/* Drain both streams: release held runs, reclaim what a slot wait gave
 * up. */
static void drain(h_ctx *h, relay_consumer *c2)
{
	int i;

	for (i = 0; i < 40 && (h_pel(h) > 0 || pel2(h) > 0); i++) {
		h_release(&h->exec, NULL);
		h_advance(h, MIN_IDLE + 1);
		h_reclaim_now(h->c);
		h_reclaim_now(c2);
		h_settle(h, 30);
	}
	RT_EQ_INT((int)h_pel(h), 0);
	RT_EQ_INT((int)pel2(h), 0);
}

static void test_slots__global_limit_across_consumers(void)
{
	h_ctx h;
	h_script *a;
	relay_slots *s;
	relay_consumer *c2;
	relay_consumer_metrics m1, m2;

	a = two_consumers(&h, 2, APP_CONC(8), &s, &c2);
	add_both(&h, 3);
	H_UNTIL(&h, a->runs == 2, 5000);
	h_settle(&h, 50);
	/* Two consumers with private limiters of 2 would run 4. */
	RT_EQ_INT(a->runs, 2);
	RT_EQ_INT(h.exec.active, 2);
	RT_EQ_INT((int)relay_slots_running(s), 2);
	RT_EQ_INT((int)relay_slots_app_running(s, "a"), 2);
	memset(&m1, 0, sizeof(m1));
	memset(&m2, 0, sizeof(m2));
	m1.version = m2.version = RELAY_CONSUMER_METRICS_VERSION;
	relay_consumer_metrics_get(h.c, &m1);
	relay_consumer_metrics_get(c2, &m2);
	RT_EQ_INT((int)(m1.in_flight_invocations + m2.in_flight_invocations),
		  2);
	RT_CHECK(m1.concurrency_waits + m2.concurrency_waits >= 4);
	a->hold = 0;
	drain(&h, c2);
	RT_EQ_INT(a->runs, 6);                /* waiting cost no attempt */
	RT_EQ_INT((int)relay_slots_running(s), 0);
	close2(&h, c2);
	h_cleanup(&h);
	relay_slots_free(s);                  /* asserts nothing uses it */
}

static void test_slots__app_limit_across_consumers(void)
{
	h_ctx h;
	h_script *a;
	relay_slots *s;
	relay_consumer *c2;

	a = two_consumers(&h, 8, APP_CONC(1), &s, &c2);
	add_both(&h, 2);
	H_UNTIL(&h, a->runs == 1, 5000);
	h_settle(&h, 50);
	RT_EQ_INT(a->runs, 1);                /* not one per stream */
	RT_EQ_INT((int)relay_slots_app_running(s, "a"), 1);
	/* The freed slot goes to a waiter, whichever stream it reads. */
	h_release(&h.exec, NULL);
	H_UNTIL(&h, a->runs == 2, 5000);
	RT_EQ_INT(a->runs, 2);
	RT_EQ_INT(h.exec.active, 1);
	a->hold = 0;
	drain(&h, c2);
	RT_EQ_INT(a->runs, 4);
	close2(&h, c2);
	h_cleanup(&h);
	relay_slots_free(s);
}

static void test_slots__max_concurrency_must_agree(void)
{
	h_ctx h;
	relay_slots *s;
	relay_consumer *c = NULL;
	relay_error err;

	h_init(&h, NULL);
	h_write_app(&h, "a", APP_CONC(1));
	h_load_apps(&h);
	RT_EQ_INT(relay_slots_new(&s, 2), 0);
	h.o.slots = s;
	h.o.max_concurrency = 3;
	RT_EQ_INT(relay_consumer_new(&c, h.loop, h.redis, NULL, h.apps, &h.o,
				     &err), RELAY_EINVAL);
	RT_CHECK(c == NULL && strstr(err.text, "shared slots") != NULL);
	h.o.max_concurrency = 2;              /* equal: fine */
	RT_EQ_INT(relay_consumer_new(&c, h.loop, h.redis, NULL, h.apps, &h.o,
				     &err), 0);
	h.c = c;
	h_cleanup(&h);
	relay_slots_free(s);
}

int main(int argc, char **argv)
{
	static const rt_case cases[] = {
		RT_CASE(test_slots__global_limit_across_consumers),
		RT_CASE(test_slots__app_limit_across_consumers),
		RT_CASE(test_slots__max_concurrency_must_agree),
	};

	return rt_main(argc, argv, cases, RT_NCASES(cases));
}
