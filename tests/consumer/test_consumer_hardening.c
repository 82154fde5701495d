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

int main(int argc, char **argv)
{
	static const rt_case cases[] = {
		RT_CASE(test_hardening__deleted_while_running),
		RT_CASE(test_hardening__ownership_lost_once),
		RT_CASE(test_hardening__availability_cache_per_interpreter),
	};

	return rt_main(argc, argv, cases, RT_NCASES(cases));
}
