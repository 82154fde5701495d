/*
 * test_sec_engine.c - security regressions of the stream engine (issue
 * 14): what a hostile producer can put in the stream. On the memory
 * backend (fixed clock, scripted executor) and, where noted, against a
 * throwaway redis-server (the Lua scripts); the redis cases skip without
 * redis-server.
 */
#include "lib/engine_fixture.h"
#include "redis_server.h"

static rt_redis_server srv;
static int srv_up;

#define APP_A \
	"runtime: exec\n" \
	"command: [/bin/true]\n" \
	"events:\n" \
	"  - handler: h\n" \
	"    pattern:\n" \
	"      kind: [x]\n"

/* The raw "event" value of the only DLQ entry, exactly as stored. */
static size_t dlq_raw_event(h_ctx *h, char *buf, size_t size)
{
	relay_redis_reply *r = H_CMD(h, "XRANGE", "relay:events:dlq", "-",
				     "+");
	const relay_redis_reply *f;
	size_t i, n = (size_t)-1;

	RT_ASSERT(r->type == RELAY_REDIS_REPLY_ARRAY && r->elements == 1);
	f = r->element[0]->element[1];
	for (i = 0; i + 1 < f->elements; i += 2) {
		if (strcmp(f->element[i]->str, "event") != 0)
			continue;
		n = f->element[i + 1]->len;
		if (n <= size)
			memcpy(buf, f->element[i + 1]->str, n);
	}
	relay_redis_reply_free(r);
	return n;
}

/*
 * Item 9: a raw NUL inside the event value is dead-lettered byte-exact
 * ({"n":0\0} used to be stored as {"n":0): on the memory backend and
 * through the Lua script on a real Redis.
 */
static void nul_event_byte_exact(const char *uri)
{
	static const char raw[] = "{\"n\":0\0}";
	static const char raw2[] = "\0{\"n\":1}";  /* NUL first */
	char got[64];
	h_ctx h;

	h_init(&h, uri);
	if (uri)
		relay_redis_reply_free(H_CMD(&h, "FLUSHALL"));
	h_write_app(&h, "a", APP_A);
	h_start(&h);
	h_xadd_field(&h, "event", raw, sizeof(raw) - 1);
	H_UNTIL(&h, h_metrics(&h).acks == 1, 5000);
	h_settle(&h, 20);
	RT_EQ_INT((int)h_metrics(&h).acks, 1);
	RT_EQ_INT((int)h_pel(&h), 0);
	RT_EQ_INT((int)dlq_raw_event(&h, got, sizeof(got)),
		  (int)sizeof(raw) - 1);
	RT_CHECK(memcmp(got, raw, sizeof(raw) - 1) == 0);
	/* A NUL as the first byte is not an "empty" event either. */
	relay_redis_reply_free(H_CMD(&h, "DEL", "relay:events:dlq"));
	h_xadd_field(&h, "event", raw2, sizeof(raw2) - 1);
	H_UNTIL(&h, h_metrics(&h).acks == 2, 5000);
	h_settle(&h, 20);
	RT_EQ_INT((int)h_metrics(&h).acks, 2);
	RT_EQ_INT((int)h_pel(&h), 0);
	RT_EQ_INT((int)dlq_raw_event(&h, got, sizeof(got)),
		  (int)sizeof(raw2) - 1);
	RT_CHECK(memcmp(got, raw2, sizeof(raw2) - 1) == 0);
	RT_EQ_INT(h.exec.total_runs, 0);
	h_cleanup(&h);
}

static void test_sec__nul_event_byte_exact_memory(void)
{
	nul_event_byte_exact(NULL);
}

static void test_sec__nul_event_byte_exact_redis(void)
{
	if (!srv_up) {
		int rc = rt_redis_server_start(&srv);

		if (rc == RT_REDIS_SKIP)
			RT_SKIP("redis-server not installed");
		RT_ASSERT(rc == 0);
		srv_up = 1;
	}
	nul_event_byte_exact(srv.uri);
}

static const rt_case cases[] = {
	RT_CASE(test_sec__nul_event_byte_exact_memory),
	RT_CASE(test_sec__nul_event_byte_exact_redis),
};

int main(int argc, char **argv)
{
	int rc = rt_main(argc, argv, cases, RT_NCASES(cases));

	if (srv_up)
		rt_redis_server_cleanup(&srv);
	return rc;
}
