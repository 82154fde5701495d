/*
 * test_consumer_hardening.c - the engine under the misuse found by
 * black-box testing (issue 13): a stream entry deleted while its handler
 * runs, a Redis step that keeps failing for one message, the interpreter
 * availability cache, the health snapshot's version. Memory backend,
 * fixed clock, the scripted executor of harness.h (suite unit).
 */
#include "harness.h"

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
		relay__consumer_renew_now(h.c);
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
	relay__consumer_reclaim_now(h.c);
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
		relay__consumer_renew_now(h.c);
		h_settle(&h, 20);
	}
	RT_EQ_INT(h.eng_warn[12], 1);
	RT_EQ_INT((int)h_metrics(&h).missing_payload, 0);
	h_release(&h.exec, NULL);
	H_UNTIL(&h, h_metrics(&h).buffered_events == 0, 5000);
	h_cleanup(&h);
}

int main(int argc, char **argv)
{
	static const rt_case cases[] = {
		RT_CASE(test_hardening__deleted_while_running),
		RT_CASE(test_hardening__ownership_lost_once),
	};

	return rt_main(argc, argv, cases, RT_NCASES(cases));
}
