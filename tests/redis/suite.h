/*
 * tests/redis/suite.h - the behavioural suite every Redis backend must
 * pass: invocation-state transitions, retention, DLQ persistence, and the
 * stream/group/PEL/TTL commands the engine relies on. test_memory.c runs
 * it on the memory backend, test_hiredis.c against a real redis-server;
 * the two must agree, which is what keeps the Lua scripts and their C
 * twins in step.
 *
 * The including file defines, before including this header:
 *	static relay_redis_backend *rs_b;   the backend under test
 *	static void rs_setup(void);         fresh, empty store (may RT_SKIP)
 *	static void rs_teardown(void);
 *	static void rs_sleep_ms(int ms);    let server-visible time pass
 *	static void rs_down(void);          make the store unreachable
 *	static void rs_up(void);            ... and reachable again (a real
 *	                                    server restarts empty)
 * and lists RS_SHARED_CASES in its case table.
 */
#ifndef RS_SUITE_H
#define RS_SUITE_H

#include <stdarg.h>
#include <string.h>

#include "relaytest.h"

#include "relay/dlq.h"
#include "relay/invocation.h"
#include "relay/redis.h"

#define RS_KEY "relay:invocation:events:g:1-0"
#define RS_DLQ "relay:events:dlq"
#define RS_NOW 1796229900000LL

/* ---- command helpers ------------------------------------------------ */

static relay_redis_reply *rs_cmd_(const char *first, ...)
{
	const char *argv[64];
	relay_redis_reply *r = NULL;
	int argc = 0, rc;
	va_list ap;

	va_start(ap, first);
	for (argv[argc] = first; argv[argc] && argc < 63;
	     argv[++argc] = va_arg(ap, const char *))
		;
	va_end(ap);
	rc = relay_redis_sync_command(rs_b, &r, argc, argv, NULL);
	if (rc) {
		RT_FAILF("%s: %s (%s)", argv[0], relay_strerror(rc),
			 relay_redis_errstr(rs_b));
		return NULL;
	}
	return r;
}
#define RS_CMD(...) rs_cmd_(__VA_ARGS__, (const char *)NULL)

/* Integer reply, or -999 for anything else. */
static long long rs_int_(relay_redis_reply *r)
{
	long long v = -999;

	if (r && r->type == RELAY_REDIS_REPLY_INTEGER)
		v = r->integer;
	relay_redis_reply_free(r);
	return v;
}
#define RS_INT(...) rs_int_(RS_CMD(__VA_ARGS__))

/* String/status reply copied into a static buffer; "(nil)" for nil,
 * "(error) ..." for errors. */
static const char *rs_str_(relay_redis_reply *r)
{
	static char buf[4][4096];
	static int which;
	char *out = buf[which++ % 4];

	if (!r)
		snprintf(out, 4096, "(null)");
	else if (r->type == RELAY_REDIS_REPLY_NIL)
		snprintf(out, 4096, "(nil)");
	else if (r->type == RELAY_REDIS_REPLY_ERROR)
		snprintf(out, 4096, "(error) %s", r->str);
	else if (r->str)
		snprintf(out, 4096, "%s", r->str);
	else
		snprintf(out, 4096, "(other)");
	relay_redis_reply_free(r);
	return out;
}
#define RS_STR(...) rs_str_(RS_CMD(__VA_ARGS__))

/* HGETALL rendered as sorted "f=v;" pairs, for snapshots. */
static char *rs_snapshot(const char *key)
{
	relay_redis_reply *r = RS_CMD("HGETALL", key);
	char *items[64], *out;
	size_t i, j, n = 0, len = 1;

	for (i = 0; r && i + 1 < r->elements && n < 64; i += 2) {
		items[n] = malloc(r->element[i]->len + r->element[i + 1]->len +
				  3);
		sprintf(items[n], "%s=%s;", r->element[i]->str,
			r->element[i + 1]->str);
		len += strlen(items[n++]);
	}
	for (i = 0; i < n; i++) {
		for (j = i + 1; j < n; j++) {
			if (strcmp(items[i], items[j]) > 0) {
				char *t = items[i];

				items[i] = items[j];
				items[j] = t;
			}
		}
	}
	out = calloc(1, len);
	for (i = 0; i < n; i++) {
		strcat(out, items[i]);
		free(items[i]);
	}
	relay_redis_reply_free(r);
	return out;
}

/* ---- transition helpers ---------------------------------------------- */

struct rs_wait {
	int done;
	int status;
	relay_inv_outcome o;
	relay_dlq_persist_result res;
	char id[64];
};

static void rs_inv_cb(int status, const relay_inv_outcome *o, void *p)
{
	struct rs_wait *w = p;

	RT_CHECK(!w->done); /* exactly once */
	w->done = 1;
	w->status = status;
	if (o)
		w->o = *o;
	else
		memset(&w->o, 0, sizeof(w->o));
}

static int rs_finish(struct rs_wait *w, int rc, relay_inv_outcome *out)
{
	if (rc) {
		RT_CHECK(!w->done); /* nonzero return: no callback */
		return rc;
	}
	RT_EQ_INT(relay_redis_sync_wait(rs_b, &w->done), 0);
	RT_CHECK(w->done);
	if (out)
		*out = w->o;
	return w->status;
}

static int rs_try(const char *field, int64_t now, int64_t timeout,
		  relay_inv_outcome *o)
{
	struct rs_wait w = { 0 };

	return rs_finish(&w, relay_inv_try_start(rs_b, RS_KEY, field, now,
						 timeout, rs_inv_cb, &w), o);
}

static int rs_fail(const char *field, unsigned int at, const char *tok,
		   int64_t now, relay_inv_outcome *o)
{
	struct rs_wait w = { 0 };

	return rs_finish(&w, relay_inv_record_failure(rs_b, RS_KEY, field, at,
						      tok, now, rs_inv_cb, &w),
			 o);
}

static int rs_complete(const char *field, unsigned int at, const char *tok,
		       relay_inv_outcome *o)
{
	struct rs_wait w = { 0 };

	return rs_finish(&w, relay_inv_mark_complete(rs_b, RS_KEY, field, at,
						     tok, rs_inv_cb, &w), o);
}

static int rs_exhaust(const char *field, unsigned int at, const char *tok,
		      relay_inv_outcome *o)
{
	struct rs_wait w = { 0 };

	return rs_finish(&w, relay_inv_mark_exhausted(rs_b, RS_KEY, field, at,
						      tok, rs_inv_cb, &w), o);
}

static int rs_classify(relay_inv_outcome *o)
{
	struct rs_wait w = { 0 };

	return rs_finish(&w, relay_inv_claim_classification(rs_b, RS_KEY,
							    rs_inv_cb, &w), o);
}

static int rs_retain(const char *key, int64_t ttl, relay_inv_outcome *o)
{
	struct rs_wait w = { 0 };

	return rs_finish(&w, relay_inv_retain(rs_b, key, ttl, rs_inv_cb, &w),
			 o);
}

static void rs_persist_cb(int status, relay_dlq_persist_result res,
			  const char *id, void *p)
{
	struct rs_wait *w = p;

	RT_CHECK(!w->done);
	w->done = 1;
	w->status = status;
	w->res = res;
	RT_CHECK((status == 0 && res == RELAY_DLQ_WRITTEN) == (id != NULL));
	snprintf(w->id, sizeof(w->id), "%s", id ? id : "");
}

static relay_dlq_entry rs_entry(const char *app, const char *handler)
{
	relay_dlq_entry e = {
		"events", "1-0", "g", "worker-1", "{\"a\":1}",
		"invocation exhausted: app \"a\" handler \"h\" exhausted after 5 "
		"handler attempts: exit status 1",
		app, handler, 7, 5, "2026-12-02T16:45:00.123Z", NULL,
	};

	if (strcmp(app, "-") == 0) {
		e.handler_attempts = 0;
		e.reason = "missing 'event' field";
		e.event = "-";
	}
	return e;
}

/* Persist and wait; *res and id filled. */
static int rs_persist(const char *key, const char *field, unsigned int at,
		      const char *tok, const relay_dlq_entry *e,
		      relay_dlq_persist_result *res, char *id)
{
	struct rs_wait w = { 0 };
	int rc;

	rc = relay_dlq_persist(rs_b, key, RS_DLQ, field, at, tok, e,
			       rs_persist_cb, &w);
	if (rc) {
		RT_CHECK(!w.done);
		return rc;
	}
	relay_redis_sync_wait(rs_b, &w.done);
	*res = w.res;
	if (id)
		strcpy(id, w.id);
	return w.status;
}

/* Claim and exhaust @field; token returned in @tok. */
static void rs_make_exhausted(const char *field, char *tok)
{
	relay_inv_outcome o;

	RT_ASSERT(rs_try(field, RS_NOW, 6000, &o) == 0);
	RT_ASSERT(o.result == RELAY_INV_R_CLAIMED);
	strcpy(tok, o.token);
	RT_ASSERT(rs_exhaust(field, o.attempt, tok, &o) == 0);
	RT_ASSERT(o.result == RELAY_INV_R_RECORDED);
}

static int rs_is_hex32(const char *t)
{
	size_t i;

	if (strlen(t) != 32)
		return 0;
	for (i = 0; i < 32; i++) {
		if (!((t[i] >= '0' && t[i] <= '9') ||
		      (t[i] >= 'a' && t[i] <= 'f')))
			return 0;
	}
	return 1;
}

/* ---- eligibility ------------------------------------------------------ */

static void test_shared__try_start_absent_claims(void)
{
	relay_inv_outcome o;
	char want[128];

	rs_setup();
	RT_EQ_INT(rs_try("app/h", RS_NOW, 6000, &o), 0);
	RT_EQ_INT(o.result, RELAY_INV_R_CLAIMED);
	RT_EQ_INT(o.attempt, 1);
	RT_EQ_INT(o.deadline_ms, RS_NOW + 6000);
	RT_CHECK(rs_is_hex32(o.token));
	snprintf(want, sizeof(want), "running:%lld:1:%s",
		 (long long)(RS_NOW + 6000), o.token);
	RT_EQ_STR(RS_STR("HGET", RS_KEY, "app/h"), want);
	rs_teardown();
}

static void test_shared__try_start_running_protected(void)
{
	relay_inv_outcome o, o2;
	char before[128];

	rs_setup();
	RT_ASSERT(rs_try("app/h", RS_NOW, 6000, &o) == 0);
	snprintf(before, sizeof(before), "%s", RS_STR("HGET", RS_KEY, "app/h"));
	RT_EQ_INT(rs_try("app/h", RS_NOW + 5999, 6000, &o2), 0);
	RT_EQ_INT(o2.result, RELAY_INV_R_RUNNING);
	RT_EQ_INT(o2.attempt, 1);
	RT_EQ_INT(o2.deadline_ms, RS_NOW + 6000);
	RT_EQ_STR(RS_STR("HGET", RS_KEY, "app/h"), before);
	/* deadline reached: the next attempt, with a fresh token */
	RT_EQ_INT(rs_try("app/h", RS_NOW + 6000, 6000, &o2), 0);
	RT_EQ_INT(o2.result, RELAY_INV_R_CLAIMED);
	RT_EQ_INT(o2.attempt, 2);
	RT_EQ_INT(o2.deadline_ms, RS_NOW + 12000);
	RT_CHECK(strcmp(o.token, o2.token) != 0);
	rs_teardown();
}

static void test_shared__try_start_backoff_protected(void)
{
	relay_inv_outcome o;

	rs_setup();
	RT_ASSERT(rs_try("app/h", RS_NOW, 6000, &o) == 0);
	RT_EQ_INT(rs_fail("app/h", 1, o.token, RS_NOW + 10, &o), 0);
	RT_EQ_INT(o.result, RELAY_INV_R_RECORDED);
	RT_EQ_INT(o.deadline_ms, RS_NOW + 10 + 60000);
	RT_EQ_INT(rs_try("app/h", RS_NOW + 60009, 6000, &o), 0);
	RT_EQ_INT(o.result, RELAY_INV_R_BACKOFF);
	RT_EQ_INT(o.deadline_ms, RS_NOW + 60010);
	RT_EQ_INT(o.attempt, 1);
	RT_EQ_INT(rs_try("app/h", RS_NOW + 60010, 6000, &o), 0);
	RT_EQ_INT(o.result, RELAY_INV_R_CLAIMED);
	RT_EQ_INT(o.attempt, 2);
	rs_teardown();
}

static void test_shared__try_start_terminal(void)
{
	static const char tok[] = "0123456789abcdef0123456789abcdef";
	relay_inv_outcome o;

	rs_setup();
	RS_INT("HSET", RS_KEY, "a/ok", "ok", "a/ex",
	       "exhausted:5:0123456789abcdef0123456789abcdef", "a/dlq",
	       "exhausted:4:0123456789abcdef0123456789abcdef:dlq");
	RT_EQ_INT(rs_try("a/ok", RS_NOW, 6000, &o), 0);
	RT_EQ_INT(o.result, RELAY_INV_R_OK);
	RT_EQ_INT(rs_try("a/ex", RS_NOW, 6000, &o), 0);
	RT_EQ_INT(o.result, RELAY_INV_R_EXHAUSTED);
	RT_EQ_INT(o.dlq, 0);
	RT_EQ_INT(o.attempt, 5);
	RT_EQ_STR(o.token, tok);
	RT_EQ_INT(rs_try("a/dlq", RS_NOW, 6000, &o), 0);
	RT_EQ_INT(o.result, RELAY_INV_R_EXHAUSTED);
	RT_EQ_INT(o.dlq, 1);
	RT_EQ_INT(o.attempt, 4);
	RT_EQ_STR(RS_STR("HGET", RS_KEY, "a/ok"), "ok");
	RT_EQ_STR(RS_STR("HGET", RS_KEY, "a/ex"),
		  "exhausted:5:0123456789abcdef0123456789abcdef");
	rs_teardown();
}

/* The field grammar, as both the C parser and the Lua twin read it:
 * each value is stored, then try_start at RS_NOW must report this. */
static void test_shared__try_start_field_grammar(void)
{
#define T32 "0123456789abcdef0123456789abcdef"
	static const struct {
		const char *value;
		relay_inv_result want;
		unsigned int attempt; /* of the reported/claimed state */
	} cases[] = {
		{ "garbage", RELAY_INV_R_CLAIMED, 1 },
		{ "OK", RELAY_INV_R_CLAIMED, 1 },
		{ "ok ", RELAY_INV_R_CLAIMED, 1 },
		{ "", RELAY_INV_R_CLAIMED, 1 },
		{ "running:1:0:" T32, RELAY_INV_R_CLAIMED, 1 },
		{ "running:9999999999999:2:" T32 ":x", RELAY_INV_R_CLAIMED, 1 },
		{ "running:9999999999999:2:" "0123456789ABCDEF0123456789ABCDEF",
		  RELAY_INV_R_CLAIMED, 1 },
		{ "running:9999999999999:2:0123", RELAY_INV_R_CLAIMED, 1 },
		{ "running:-5:2:" T32, RELAY_INV_R_CLAIMED, 1 },
		{ "running:1234567890123456789:2:" T32, RELAY_INV_R_CLAIMED, 1 },
		{ "running:9999999999999:1000001:" T32, RELAY_INV_R_CLAIMED, 1 },
		{ "exhausted:1:short", RELAY_INV_R_CLAIMED, 1 },
		{ "exhausted:1:" T32 ":dlqx", RELAY_INV_R_CLAIMED, 1 },
		{ "exhausted:1:" T32 ":", RELAY_INV_R_CLAIMED, 1 },
		{ "exhausted:0:" T32, RELAY_INV_R_CLAIMED, 1 },
		{ "done:1:1:" T32, RELAY_INV_R_CLAIMED, 1 },
		/* valid ones */
		{ "ok", RELAY_INV_R_OK, 0 },
		{ "running:9999999999999:3:" T32, RELAY_INV_R_RUNNING, 3 },
		{ "running:0009999999999999:3:" T32, RELAY_INV_R_RUNNING, 3 },
		{ "running:1:3:" T32, RELAY_INV_R_CLAIMED, 4 },
		{ "next_attempt_at:9999999999999:4:" T32, RELAY_INV_R_BACKOFF,
		  4 },
		{ "next_attempt_at:1796229900000:4:" T32, RELAY_INV_R_CLAIMED,
		  5 },
		{ "running:9999999999999:1000000:" T32, RELAY_INV_R_RUNNING,
		  1000000 },
		{ "exhausted:7:" T32, RELAY_INV_R_EXHAUSTED, 7 },
		{ "exhausted:007:" T32 ":dlq", RELAY_INV_R_EXHAUSTED, 7 },
	};
	relay_inv_outcome o;
	size_t i;

	rs_setup();
	for (i = 0; i < RT_NCASES(cases); i++) {
		RS_INT("HSET", RS_KEY, "a/h", cases[i].value);
		RT_EQ_INT(rs_try("a/h", RS_NOW, 6000, &o), 0);
		if (o.result != cases[i].want || o.attempt != cases[i].attempt)
			RT_FAILF("value \"%s\": got %s attempt %u, want %s "
				 "attempt %u", cases[i].value,
				 relay_inv_result_name(o.result), o.attempt,
				 relay_inv_result_name(cases[i].want),
				 cases[i].attempt);
	}
	rs_teardown();
#undef T32
}

static void test_shared__try_start_deadline_capped(void)
{
	relay_inv_outcome o;

	rs_setup();
	RT_EQ_INT(rs_try("a/h", RS_NOW, 600000, &o), 0);
	RT_EQ_INT(o.deadline_ms, RS_NOW + 300000);
	RT_EQ_INT(rs_try("a/i", RS_NOW, 20000, &o), 0);
	RT_EQ_INT(o.deadline_ms, RS_NOW + 20000);
	rs_teardown();
}

static void test_shared__try_start_never_exhausts(void)
{
	relay_inv_outcome o;
	int64_t now = RS_NOW;
	unsigned int i;

	rs_setup();
	for (i = 1; i <= 12; i++) {
		RT_EQ_INT(rs_try("a/h", now, 6000, &o), 0);
		RT_EQ_INT(o.result, RELAY_INV_R_CLAIMED);
		RT_EQ_INT(o.attempt, i);
		RT_EQ_INT(rs_fail("a/h", i, o.token, now, &o), 0);
		now = o.deadline_ms;
	}
	rs_teardown();
}

static void test_shared__backoff_table(void)
{
	static const int64_t want[] = { 60000, 120000, 300000, 600000,
					600000, 600000 };
	relay_inv_outcome o;
	int64_t now = RS_NOW;
	unsigned int i;
	char val[128];

	rs_setup();
	for (i = 0; i < RT_NCASES(want); i++) {
		RT_ASSERT(rs_try("a/h", now, 6000, &o) == 0);
		RT_EQ_INT(o.attempt, i + 1);
		RT_EQ_INT(rs_fail("a/h", i + 1, o.token, now, &o), 0);
		RT_EQ_INT(o.result, RELAY_INV_R_RECORDED);
		RT_EQ_INT(o.deadline_ms - now, want[i]);
		snprintf(val, sizeof(val), "next_attempt_at:%lld:%u:%s",
			 (long long)(now + want[i]), i + 1, o.token);
		RT_EQ_STR(RS_STR("HGET", RS_KEY, "a/h"), val);
		now += want[i];
	}
	rs_teardown();
}

/* ---- fencing ---------------------------------------------------------- */

static void test_shared__stale_tokens_write_nothing(void)
{
	static const char other[] = "ffffffffffffffffffffffffffffffff";
	relay_inv_outcome o, a;
	char before[128];

	rs_setup();
	RT_ASSERT(rs_try("a/h", RS_NOW, 6000, &a) == 0);
	snprintf(before, sizeof(before), "%s", RS_STR("HGET", RS_KEY, "a/h"));
	RT_EQ_INT(rs_fail("a/h", 1, other, RS_NOW, &o), 0);
	RT_EQ_INT(o.result, RELAY_INV_R_STALE);
	RT_EQ_INT(rs_fail("a/h", 2, a.token, RS_NOW, &o), 0);
	RT_EQ_INT(o.result, RELAY_INV_R_STALE);
	RT_EQ_INT(rs_complete("a/h", 1, other, &o), 0);
	RT_EQ_INT(o.result, RELAY_INV_R_STALE);
	RT_EQ_INT(rs_exhaust("a/h", 1, other, &o), 0);
	RT_EQ_INT(o.result, RELAY_INV_R_STALE);
	RT_EQ_INT(rs_complete("a/x", 1, a.token, &o), 0); /* absent */
	RT_EQ_INT(o.result, RELAY_INV_R_STALE);
	RT_EQ_STR(RS_STR("HGET", RS_KEY, "a/h"), before);
	RT_EQ_INT(RS_INT("HEXISTS", RS_KEY, "a/x") == 1 ? 1 : 0, 0);
	rs_teardown();
}

static void test_shared__takeover_fences_old_owner(void)
{
	relay_inv_outcome a, b, o;

	rs_setup();
	RT_ASSERT(rs_try("a/h", RS_NOW, 6000, &a) == 0);
	RT_ASSERT(rs_try("a/h", RS_NOW + 6000, 6000, &b) == 0);
	RT_EQ_INT(b.attempt, 2);
	RT_EQ_INT(rs_complete("a/h", 1, a.token, &o), 0);
	RT_EQ_INT(o.result, RELAY_INV_R_STALE);
	RT_EQ_INT(o.attempt, 2); /* reports the current claim */
	RT_EQ_STR(o.token, b.token);
	RT_EQ_INT(rs_complete("a/h", 2, b.token, &o), 0);
	RT_EQ_INT(o.result, RELAY_INV_R_RECORDED);
	RT_EQ_STR(RS_STR("HGET", RS_KEY, "a/h"), "ok");
	/* a stale failure never overwrites ok */
	RT_EQ_INT(rs_fail("a/h", 1, a.token, RS_NOW, &o), 0);
	RT_EQ_INT(o.result, RELAY_INV_R_STALE);
	RT_EQ_INT(rs_fail("a/h", 2, b.token, RS_NOW, &o), 0);
	RT_EQ_INT(o.result, RELAY_INV_R_STALE);
	RT_EQ_STR(RS_STR("HGET", RS_KEY, "a/h"), "ok");
	rs_teardown();
}

static void test_shared__success_never_overwrites_exhausted(void)
{
	relay_inv_outcome o;
	char tok[40], want[96];

	rs_setup();
	rs_make_exhausted("a/h", tok);
	snprintf(want, sizeof(want), "exhausted:1:%s", tok);
	RT_EQ_STR(RS_STR("HGET", RS_KEY, "a/h"), want);
	RT_EQ_INT(rs_complete("a/h", 1, tok, &o), 0);
	RT_EQ_INT(o.result, RELAY_INV_R_STALE);
	RT_EQ_INT(rs_fail("a/h", 1, tok, RS_NOW, &o), 0);
	RT_EQ_INT(o.result, RELAY_INV_R_STALE);
	RT_EQ_INT(rs_exhaust("a/h", 1, tok, &o), 0); /* idempotent */
	RT_EQ_INT(o.result, RELAY_INV_R_RECORDED);
	RT_EQ_STR(RS_STR("HGET", RS_KEY, "a/h"), want);
	rs_teardown();
}

/* ---- persistence and retention ---------------------------------------- */

static void test_shared__pending_writes_persist(void)
{
	relay_inv_outcome o;
	relay_dlq_entry e = rs_entry("a", "h");
	relay_dlq_persist_result res;
	char tok[40];

	rs_setup();
	RT_ASSERT(rs_try("a/h", RS_NOW, 6000, &o) == 0);
	RS_INT("PEXPIRE", RS_KEY, "100000");
	RT_ASSERT(rs_fail("a/h", 1, o.token, RS_NOW, &o) == 0);
	RT_EQ_INT(RS_INT("PTTL", RS_KEY), -1);
	RS_INT("PEXPIRE", RS_KEY, "100000");
	RT_ASSERT(rs_try("a/h", RS_NOW + 60000, 6000, &o) == 0);
	RT_EQ_INT(RS_INT("PTTL", RS_KEY), -1);
	RS_INT("PEXPIRE", RS_KEY, "100000");
	RT_ASSERT(rs_complete("a/h", 2, o.token, &o) == 0);
	RT_EQ_INT(RS_INT("PTTL", RS_KEY), -1);
	RS_INT("PEXPIRE", RS_KEY, "100000");
	RT_ASSERT(rs_classify(&o) == 0);
	RT_EQ_INT(RS_INT("PTTL", RS_KEY), -1);
	rs_make_exhausted("a/x", tok);
	RS_INT("PEXPIRE", RS_KEY, "100000");
	RT_ASSERT(rs_persist(RS_KEY, "a/x", 1, tok, &e, &res, NULL) == 0);
	RT_EQ_INT(res, RELAY_DLQ_WRITTEN);
	RT_EQ_INT(RS_INT("PTTL", RS_KEY), -1);
	rs_teardown();
}

static void test_shared__retain_sets_marker_and_ttl(void)
{
	relay_inv_outcome o;
	long long ttl;

	rs_setup();
	RT_ASSERT(rs_try("a/h", RS_NOW, 6000, &o) == 0);
	RT_ASSERT(rs_complete("a/h", 1, o.token, &o) == 0);
	RT_EQ_INT(rs_retain(RS_KEY, 100000, &o), 0);
	RT_EQ_INT(o.result, RELAY_INV_R_RECORDED);
	RT_EQ_STR(RS_STR("HGET", RS_KEY, "__terminal"), "1");
	ttl = RS_INT("PTTL", RS_KEY);
	RT_CHECK(ttl > 99000 && ttl <= 100000);
	rs_teardown();
}

static void test_shared__retain_absent_creates_nothing(void)
{
	relay_inv_outcome o;

	rs_setup();
	RT_EQ_INT(rs_retain(RS_KEY, 100000, &o), 0);
	RT_EQ_INT(o.result, RELAY_INV_R_ABSENT);
	RT_EQ_INT(RS_INT("EXISTS", RS_KEY), 0);
	rs_teardown();
}

/* Every transition after retain: no mutation, no TTL change. */
static void test_shared__retained_hash_is_inert(void)
{
	relay_dlq_entry e = rs_entry("a", "x"), ph = rs_entry("-", "-");
	relay_dlq_persist_result res;
	relay_inv_outcome run, o;
	char tok[40], *snap, *now_snap;
	long long ttl, ttl2;
	int step;

	rs_setup();
	RT_ASSERT(rs_try("a/h", RS_NOW, 6000, &run) == 0);
	rs_make_exhausted("a/x", tok);
	RS_INT("HSET", RS_KEY, "a/ok", "ok");
	RT_ASSERT(rs_retain(RS_KEY, 100000, &o) == 0);
	snap = rs_snapshot(RS_KEY);
	ttl = RS_INT("PTTL", RS_KEY);
	for (step = 0; step < 9; step++) {
		int rc = 0;

		o.result = RELAY_INV_R_CLAIMED;
		res = RELAY_DLQ_WRITTEN;
		switch (step) {
		case 0: rc = rs_try("a/h", RS_NOW + 999999, 6000, &o); break;
		case 1: rc = rs_try("a/new", RS_NOW, 6000, &o); break;
		case 2: rc = rs_fail("a/h", 1, run.token, RS_NOW, &o); break;
		case 3: rc = rs_complete("a/h", 1, run.token, &o); break;
		case 4: rc = rs_exhaust("a/h", 1, run.token, &o); break;
		case 5: rc = rs_classify(&o); break;
		case 6:
			rc = rs_persist(RS_KEY, "a/x", 1, tok, &e, &res, NULL);
			RT_EQ_INT(res, RELAY_DLQ_RETAINED);
			o.result = RELAY_INV_R_RETAINED;
			break;
		case 7:
			rc = rs_persist(RS_KEY, NULL, 0, NULL, &ph, &res, NULL);
			RT_EQ_INT(res, RELAY_DLQ_RETAINED);
			o.result = RELAY_INV_R_RETAINED;
			break;
		case 8:
			rc = rs_retain(RS_KEY, 500000, &o);
			RT_EQ_INT(o.result, RELAY_INV_R_ALREADY);
			o.result = RELAY_INV_R_RETAINED;
			break;
		}
		RT_EQ_INT(rc, 0);
		if (o.result != RELAY_INV_R_RETAINED)
			RT_FAILF("step %d: result %s", step,
				 relay_inv_result_name(o.result));
		now_snap = rs_snapshot(RS_KEY);
		RT_EQ_STR(now_snap, snap);
		free(now_snap);
		ttl2 = RS_INT("PTTL", RS_KEY);
		if (!(ttl2 > 0 && ttl2 <= ttl))
			RT_FAILF("step %d: PTTL %lld after %lld", step, ttl2,
				 ttl);
		ttl = ttl2;
	}
	RT_EQ_INT(RS_INT("EXISTS", RS_DLQ), 0);
	free(snap);
	rs_teardown();
}

static void test_shared__classification_counted_once(void)
{
	relay_inv_outcome o;
	int i;

	rs_setup();
	RT_EQ_INT(rs_classify(&o), 0);
	RT_EQ_INT(o.result, RELAY_INV_R_CLAIMED);
	for (i = 0; i < 3; i++) {
		RT_EQ_INT(rs_classify(&o), 0);
		RT_EQ_INT(o.result, RELAY_INV_R_ALREADY);
	}
	RT_EQ_STR(RS_STR("HGET", RS_KEY, "__classification"), "1");
	rs_teardown();
}

/* ---- DLQ -------------------------------------------------------------- */

static void test_shared__dlq_persist_entry_and_marker(void)
{
	static const char *const names[] = {
		"original_stream", "original_id", "group", "consumer", "event",
		"reason", "app", "handler", "deliveries", "handler_attempts",
		"timestamp",
	};
	relay_dlq_entry e = rs_entry("a", "h");
	relay_dlq_persist_result res;
	relay_redis_reply *r;
	relay_inv_outcome o;
	char tok[40], id[64], want[96];
	size_t i;

	rs_setup();
	rs_make_exhausted("a/h", tok);
	RT_EQ_INT(rs_persist(RS_KEY, "a/h", 1, tok, &e, &res, id), 0);
	RT_EQ_INT(res, RELAY_DLQ_WRITTEN);
	snprintf(want, sizeof(want), "exhausted:1:%s:dlq", tok);
	RT_EQ_STR(RS_STR("HGET", RS_KEY, "a/h"), want);
	r = RS_CMD("XRANGE", RS_DLQ, "-", "+");
	RT_ASSERT(r && r->elements == 1);
	RT_EQ_STR(r->element[0]->element[0]->str, id);
	RT_ASSERT(r->element[0]->element[1]->elements == 22);
	for (i = 0; i < RT_NCASES(names); i++)
		RT_EQ_STR(r->element[0]->element[1]->element[2 * i]->str,
			  names[i]);
	RT_EQ_STR(r->element[0]->element[1]->element[17]->str, "7");
	RT_EQ_STR(r->element[0]->element[1]->element[19]->str, "5");
	relay_redis_reply_free(r);
	RT_EQ_INT(rs_try("a/h", RS_NOW, 6000, &o), 0);
	RT_EQ_INT(o.result, RELAY_INV_R_EXHAUSTED);
	RT_EQ_INT(o.dlq, 1);
	rs_teardown();
}

static void test_shared__dlq_persist_idempotent(void)
{
	relay_dlq_entry e = rs_entry("a", "h");
	relay_dlq_persist_result res;
	char tok[40];

	rs_setup();
	rs_make_exhausted("a/h", tok);
	RT_EQ_INT(rs_persist(RS_KEY, "a/h", 1, tok, &e, &res, NULL), 0);
	RT_EQ_INT(res, RELAY_DLQ_WRITTEN);
	RT_EQ_INT(rs_persist(RS_KEY, "a/h", 1, tok, &e, &res, NULL), 0);
	RT_EQ_INT(res, RELAY_DLQ_ALREADY);
	RT_EQ_INT(RS_INT("XLEN", RS_DLQ), 1);
	rs_teardown();
}

static void test_shared__dlq_persist_foreign_claim(void)
{
	static const char other[] = "ffffffffffffffffffffffffffffffff";
	relay_dlq_entry e = rs_entry("a", "h");
	relay_dlq_persist_result res;
	relay_inv_outcome o;
	char tok[40], before[128];

	rs_setup();
	rs_make_exhausted("a/h", tok);
	snprintf(before, sizeof(before), "%s", RS_STR("HGET", RS_KEY, "a/h"));
	RT_EQ_INT(rs_persist(RS_KEY, "a/h", 1, other, &e, &res, NULL), 0);
	RT_EQ_INT(res, RELAY_DLQ_STALE);
	RT_EQ_INT(rs_persist(RS_KEY, "a/h", 2, tok, &e, &res, NULL), 0);
	RT_EQ_INT(res, RELAY_DLQ_STALE);
	RT_ASSERT(rs_try("a/r", RS_NOW, 6000, &o) == 0); /* running */
	RT_EQ_INT(rs_persist(RS_KEY, "a/r", 1, o.token, &e, &res, NULL), 0);
	RT_EQ_INT(res, RELAY_DLQ_STALE);
	RT_EQ_INT(rs_persist(RS_KEY, "a/none", 1, tok, &e, &res, NULL), 0);
	RT_EQ_INT(res, RELAY_DLQ_STALE);
	RT_EQ_INT(RS_INT("EXISTS", RS_DLQ), 0);
	RT_EQ_STR(RS_STR("HGET", RS_KEY, "a/h"), before);
	rs_teardown();
}

static void test_shared__dlq_placeholder(void)
{
	relay_dlq_entry e = rs_entry("-", "-");
	relay_dlq_persist_result res;
	relay_dlq_record *recs = NULL;
	relay_error err;
	size_t n = 0;

	rs_setup();
	RT_EQ_INT(rs_persist(RS_KEY, NULL, 0, NULL, &e, &res, NULL), 0);
	RT_EQ_INT(res, RELAY_DLQ_WRITTEN);
	RT_EQ_STR(RS_STR("HGET", RS_KEY, "__dlq_placeholder"), "1");
	RT_EQ_INT(rs_persist(RS_KEY, NULL, 0, NULL, &e, &res, NULL), 0);
	RT_EQ_INT(res, RELAY_DLQ_ALREADY);
	RT_EQ_INT(relay_dlq_list_sync(rs_b, RS_DLQ, "-", 10, &recs, &n, &err),
		  0);
	RT_ASSERT(n == 1);
	RT_EQ_STR(recs[0].e.app, "-");
	RT_EQ_STR(recs[0].e.handler, "-");
	RT_EQ_STR(recs[0].e.event, "-");
	RT_EQ_INT(recs[0].e.handler_attempts, 0);
	RT_CHECK(recs[0].e.trace == NULL);
	relay_dlq_records_free(recs, n);
	rs_teardown();
}

static void test_shared__dlq_wrong_type_key(void)
{
	relay_dlq_entry e = rs_entry("a", "h"), ph = rs_entry("-", "-");
	relay_dlq_persist_result res;
	char tok[40], want[96];

	rs_setup();
	rs_make_exhausted("a/h", tok);
	RS_STR("SET", RS_DLQ, "not-a-stream");
	RT_EQ_INT(rs_persist(RS_KEY, "a/h", 1, tok, &e, &res, NULL),
		  RELAY_ETYPE);
	snprintf(want, sizeof(want), "exhausted:1:%s", tok);
	RT_EQ_STR(RS_STR("HGET", RS_KEY, "a/h"), want);
	RT_EQ_INT(rs_persist(RS_KEY, NULL, 0, NULL, &ph, &res, NULL),
		  RELAY_ETYPE);
	RT_EQ_STR(RS_STR("HGET", RS_KEY, "__dlq_placeholder"), "(nil)");
	RT_EQ_STR(RS_STR("GET", RS_DLQ), "not-a-stream");
	rs_teardown();
}

static void test_shared__dlq_invalid_entry_never_calls_back(void)
{
	relay_dlq_entry e = rs_entry("a", "h");
	relay_dlq_persist_result res;
	char tok[40];

	rs_setup();
	rs_make_exhausted("a/h", tok);
	e.group = "";
	RT_EQ_INT(rs_persist(RS_KEY, "a/h", 1, tok, &e, &res, NULL),
		  RELAY_EINVAL);
	e = rs_entry("a", "h"); /* invocation entry without a field */
	RT_EQ_INT(rs_persist(RS_KEY, NULL, 0, NULL, &e, &res, NULL),
		  RELAY_EINVAL);
	RT_EQ_INT(RS_INT("EXISTS", RS_DLQ), 0);
	rs_teardown();
}

static void test_shared__dlq_16_concurrent_persists(void)
{
	relay_dlq_entry e = rs_entry("a", "h");
	struct rs_wait w[16];
	int i, written = 0, already = 0, all;
	char tok[40];

	rs_setup();
	rs_make_exhausted("a/h", tok);
	memset(w, 0, sizeof(w));
	for (i = 0; i < 16; i++)
		RT_EQ_INT(relay_dlq_persist(rs_b, RS_KEY, RS_DLQ, "a/h", 1, tok,
					    &e, rs_persist_cb, &w[i]), 0);
	do {
		all = 1;
		for (i = 0; i < 16; i++)
			all = all && w[i].done;
		if (!all)
			for (i = 0; i < 16; i++)
				if (!w[i].done) {
					relay_redis_sync_wait(rs_b, &w[i].done);
					break;
				}
	} while (!all);
	for (i = 0; i < 16; i++) {
		RT_EQ_INT(w[i].status, 0);
		written += w[i].res == RELAY_DLQ_WRITTEN;
		already += w[i].res == RELAY_DLQ_ALREADY;
	}
	RT_EQ_INT(written, 1);
	RT_EQ_INT(already, 15);
	RT_EQ_INT(RS_INT("XLEN", RS_DLQ), 1);
	rs_teardown();
}

/* A crash after the first of three entries: redelivery writes only the
 * missing two, correctly attributed. */
static void test_shared__dlq_partial_write_resumes(void)
{
	static const char *const fields[] = { "a/h1", "a/h2", "b/h3" };
	relay_dlq_persist_result res;
	relay_dlq_record *recs = NULL;
	relay_inv_outcome o;
	relay_error err;
	char tok[3][40];
	size_t i, n = 0;
	int pass, writes;

	rs_setup();
	for (i = 0; i < 3; i++)
		rs_make_exhausted(fields[i], tok[i]);
	{
		relay_dlq_entry e = rs_entry("a", "h1");

		RT_ASSERT(rs_persist(RS_KEY, "a/h1", 1, tok[0], &e, &res,
				     NULL) == 0 && res == RELAY_DLQ_WRITTEN);
	}
	for (pass = 0; pass < 2; pass++) {
		writes = 0;
		for (i = 0; i < 3; i++) {
			char app[8], handler[8];
			relay_dlq_entry e;

			RT_ASSERT(rs_try(fields[i], RS_NOW, 6000, &o) == 0);
			RT_ASSERT(o.result == RELAY_INV_R_EXHAUSTED);
			if (o.dlq)
				continue;
			snprintf(app, sizeof(app), "%.1s", fields[i]);
			snprintf(handler, sizeof(handler), "%s", fields[i] + 2);
			e = rs_entry(app, handler);
			RT_EQ_INT(rs_persist(RS_KEY, fields[i], o.attempt,
					     o.token, &e, &res, NULL), 0);
			RT_EQ_INT(res, RELAY_DLQ_WRITTEN);
			writes++;
		}
		RT_EQ_INT(writes, pass == 0 ? 2 : 0);
	}
	RT_EQ_INT(relay_dlq_list_sync(rs_b, RS_DLQ, "-", 10, &recs, &n, &err),
		  0);
	RT_ASSERT(n == 3);
	RT_EQ_STR(recs[0].e.handler, "h1");
	RT_EQ_STR(recs[1].e.handler, "h2");
	RT_EQ_STR(recs[2].e.app, "b");
	RT_EQ_STR(recs[2].e.handler, "h3");
	relay_dlq_records_free(recs, n);
	rs_teardown();
}

static void test_shared__dlq_list_get_delete(void)
{
	relay_dlq_entry e = rs_entry("-", "-");
	relay_dlq_persist_result res;
	relay_dlq_record *recs = NULL, rec;
	relay_error err;
	char id[64];
	size_t n = 0;

	rs_setup();
	e.trace = "trace-1";
	RT_ASSERT(rs_persist(RS_KEY, NULL, 0, NULL, &e, &res, id) == 0);
	RT_ASSERT(rs_persist("relay:invocation:events:g:2-0", NULL, 0, NULL,
			     &e, &res, NULL) == 0);
	RT_EQ_INT(relay_dlq_list_sync(rs_b, RS_DLQ, "-", 10, &recs, &n, &err),
		  0);
	RT_EQ_INT(n, 2);
	relay_dlq_records_free(recs, n);
	RT_EQ_INT(relay_dlq_list_sync(rs_b, RS_DLQ, "-", 1, &recs, &n, &err),
		  0);
	RT_EQ_INT(n, 1);
	relay_dlq_records_free(recs, n);
	RT_EQ_INT(relay_dlq_get_sync(rs_b, RS_DLQ, id, &rec, &err), 0);
	RT_EQ_STR(rec.id, id);
	RT_EQ_STR(rec.e.trace, "trace-1");
	RT_EQ_STR(rec.e.reason, "missing 'event' field");
	relay_dlq_record_clear(&rec);
	RT_EQ_INT(relay_dlq_delete_sync(rs_b, RS_DLQ, id, &err), 0);
	RT_EQ_INT(relay_dlq_get_sync(rs_b, RS_DLQ, id, &rec, &err),
		  RELAY_ENOTFOUND);
	RT_EQ_INT(relay_dlq_delete_sync(rs_b, RS_DLQ, id, &err),
		  RELAY_ENOTFOUND);
	/* a malformed entry is an error naming the entry and the field */
	snprintf(id, sizeof(id), "%s",
		 RS_STR("XADD", RS_DLQ, "*", "original_stream", "events"));
	RT_EQ_INT(relay_dlq_list_sync(rs_b, RS_DLQ, "-", 10, &recs, &n, &err),
		  RELAY_EPARSE);
	RT_CHECK(strstr(err.text, id) != NULL);
	RT_CHECK(strstr(err.text, "original_id") != NULL);
	RT_CHECK(recs == NULL && n == 0);
	rs_teardown();
}

/* ---- streams, groups, PEL, TTL ----------------------------------------- */

static void test_shared__stream_group_create(void)
{
	rs_setup();
	RT_EQ_STR(RS_STR("XGROUP", "CREATE", "s", "g", "0", "MKSTREAM"), "OK");
	RT_CHECK(strncmp(RS_STR("XGROUP", "CREATE", "s", "g", "0",
				"MKSTREAM"), "(error) BUSYGROUP", 17) == 0);
	RT_CHECK(strncmp(RS_STR("XGROUP", "CREATE", "nokey", "g", "0"),
			 "(error) ", 8) == 0);
	RT_EQ_STR(RS_STR("TYPE", "s"), "stream");
	RT_EQ_INT(RS_INT("XLEN", "s"), 0);
	rs_teardown();
}

static void test_shared__stream_read_ack_pending(void)
{
	relay_redis_reply *r;
	char id[3][64];
	int i;

	rs_setup();
	RS_STR("XGROUP", "CREATE", "s", "g", "0", "MKSTREAM");
	for (i = 0; i < 3; i++)
		snprintf(id[i], sizeof(id[i]), "%s",
			 RS_STR("XADD", "s", "*", "event", "{}"));
	r = RS_CMD("XREADGROUP", "GROUP", "g", "c1", "COUNT", "2", "BLOCK",
		   "10", "STREAMS", "s", ">");
	RT_ASSERT(r && r->type == RELAY_REDIS_REPLY_ARRAY && r->elements == 1);
	RT_EQ_STR(r->element[0]->element[0]->str, "s");
	RT_ASSERT(r->element[0]->element[1]->elements == 2);
	RT_EQ_STR(r->element[0]->element[1]->element[0]->element[0]->str,
		  id[0]);
	RT_EQ_STR(r->element[0]->element[1]->element[0]->element[1]
			  ->element[1]->str, "{}");
	relay_redis_reply_free(r);
	r = RS_CMD("XPENDING", "s", "g");
	RT_ASSERT(r && r->elements == 4);
	RT_EQ_INT(r->element[0]->integer, 2);
	RT_EQ_STR(r->element[1]->str, id[0]);
	RT_EQ_STR(r->element[2]->str, id[1]);
	RT_EQ_STR(r->element[3]->element[0]->element[0]->str, "c1");
	RT_EQ_STR(r->element[3]->element[0]->element[1]->str, "2");
	relay_redis_reply_free(r);
	r = RS_CMD("XREADGROUP", "GROUP", "g", "c1", "COUNT", "10", "STREAMS",
		   "s", ">");
	RT_ASSERT(r && r->elements == 1);
	RT_EQ_INT(r->element[0]->element[1]->elements, 1);
	relay_redis_reply_free(r);
	r = RS_CMD("XREADGROUP", "GROUP", "g", "c1", "COUNT", "10", "BLOCK",
		   "1", "STREAMS", "s", ">");
	RT_ASSERT(r != NULL);
	RT_EQ_INT(r->type, RELAY_REDIS_REPLY_NIL);
	relay_redis_reply_free(r);
	RT_EQ_INT(RS_INT("XACK", "s", "g", id[0]), 1);
	RT_EQ_INT(RS_INT("XACK", "s", "g", id[0]), 0);
	r = RS_CMD("XPENDING", "s", "g", "-", "+", "10");
	RT_ASSERT(r && r->elements == 2);
	RT_EQ_STR(r->element[0]->element[0]->str, id[1]);
	RT_EQ_STR(r->element[0]->element[1]->str, "c1");
	RT_EQ_INT(r->element[0]->element[3]->integer, 1);
	relay_redis_reply_free(r);
	r = RS_CMD("XPENDING", "s", "g");
	RT_ASSERT(r && r->elements == 4);
	RT_EQ_INT(r->element[0]->integer, 2);
	relay_redis_reply_free(r);
	RT_EQ_INT(RS_INT("XACK", "s", "g", id[1], id[2]), 2);
	r = RS_CMD("XPENDING", "s", "g");
	RT_ASSERT(r && r->elements == 4);
	RT_EQ_INT(r->element[0]->integer, 0);
	RT_EQ_INT(r->element[1]->type, RELAY_REDIS_REPLY_NIL);
	relay_redis_reply_free(r);
	rs_teardown();
}

static void test_shared__stream_autoclaim_and_deleted_ids(void)
{
	relay_redis_reply *r;
	char id[3][64];
	int i;

	rs_setup();
	RS_STR("XGROUP", "CREATE", "s", "g", "0", "MKSTREAM");
	for (i = 0; i < 3; i++)
		snprintf(id[i], sizeof(id[i]), "%s",
			 RS_STR("XADD", "s", "*", "event", "{}"));
	relay_redis_reply_free(RS_CMD("XREADGROUP", "GROUP", "g", "c1",
				      "STREAMS", "s", ">"));
	/* too young: nothing claimed, but deleted ids go anyway */
	r = RS_CMD("XAUTOCLAIM", "s", "g", "c2", "100000", "0-0");
	RT_ASSERT(r && r->elements == 3);
	RT_EQ_STR(r->element[0]->str, "0-0");
	RT_EQ_INT(r->element[1]->elements, 0);
	relay_redis_reply_free(r);
	RT_EQ_INT(RS_INT("XDEL", "s", id[1]), 1);
	rs_sleep_ms(30);
	r = RS_CMD("XAUTOCLAIM", "s", "g", "c2", "20", "0-0", "COUNT", "10");
	RT_ASSERT(r && r->elements == 3);
	RT_EQ_STR(r->element[0]->str, "0-0");
	RT_ASSERT(r->element[1]->elements == 2);
	RT_EQ_STR(r->element[1]->element[0]->element[0]->str, id[0]);
	RT_EQ_STR(r->element[1]->element[1]->element[0]->str, id[2]);
	RT_ASSERT(r->element[2]->elements == 1);
	RT_EQ_STR(r->element[2]->element[0]->str, id[1]);
	relay_redis_reply_free(r);
	r = RS_CMD("XPENDING", "s", "g", "-", "+", "10");
	RT_ASSERT(r && r->elements == 2);
	RT_EQ_STR(r->element[0]->element[1]->str, "c2");
	RT_EQ_INT(r->element[0]->element[3]->integer, 2);
	relay_redis_reply_free(r);
	/* JUSTID renews ownership without counting a delivery */
	r = RS_CMD("XCLAIM", "s", "g", "c3", "0", id[0], "JUSTID");
	RT_ASSERT(r && r->elements == 1);
	RT_EQ_STR(r->element[0]->str, id[0]);
	relay_redis_reply_free(r);
	r = RS_CMD("XPENDING", "s", "g", "-", "+", "1");
	RT_ASSERT(r && r->elements == 1);
	RT_EQ_STR(r->element[0]->element[1]->str, "c3");
	RT_EQ_INT(r->element[0]->element[3]->integer, 2);
	relay_redis_reply_free(r);
	/* COUNT limits the page; the cursor names the next entry */
	r = RS_CMD("XAUTOCLAIM", "s", "g", "c4", "0", "0-0", "COUNT", "1",
		   "JUSTID");
	RT_ASSERT(r && r->elements == 3);
	RT_EQ_STR(r->element[0]->str, id[2]);
	RT_ASSERT(r->element[1]->elements == 1);
	RT_EQ_STR(r->element[1]->element[0]->str, id[0]);
	relay_redis_reply_free(r);
	rs_teardown();
}

static void test_shared__stream_range_and_del(void)
{
	relay_redis_reply *r;

	rs_setup();
	RS_STR("XADD", "s", "1-1", "k", "v1");
	RS_STR("XADD", "s", "1-2", "k", "v2");
	RS_STR("XADD", "s", "2-0", "k", "v3");
	RT_CHECK(strncmp(RS_STR("XADD", "s", "1-5", "k", "v"), "(error)",
			 7) == 0);
	r = RS_CMD("XRANGE", "s", "-", "+", "COUNT", "2");
	RT_ASSERT(r && r->elements == 2);
	RT_EQ_STR(r->element[1]->element[0]->str, "1-2");
	relay_redis_reply_free(r);
	r = RS_CMD("XRANGE", "s", "(1-1", "+");
	RT_ASSERT(r && r->elements == 2);
	RT_EQ_STR(r->element[0]->element[0]->str, "1-2");
	relay_redis_reply_free(r);
	r = RS_CMD("XRANGE", "s", "1", "1");
	RT_ASSERT(r && r->elements == 2);
	relay_redis_reply_free(r);
	RT_EQ_INT(RS_INT("XDEL", "s", "1-2", "9-9"), 1);
	RT_EQ_INT(RS_INT("XLEN", "s"), 2);
	rs_teardown();
}

static void test_shared__keys_hashes_ttls(void)
{
	rs_setup();
	RT_EQ_INT(RS_INT("HSET", "h", "a", "1", "b", "2"), 2);
	RT_EQ_INT(RS_INT("HSET", "h", "a", "3"), 0);
	RT_EQ_STR(RS_STR("HGET", "h", "a"), "3");
	RT_EQ_STR(RS_STR("HGET", "h", "zz"), "(nil)");
	RT_EQ_STR(RS_STR("TYPE", "h"), "hash");
	RT_EQ_INT(RS_INT("PTTL", "h"), -1);
	RT_EQ_INT(RS_INT("PEXPIRE", "h", "50000"), 1);
	RT_CHECK(RS_INT("PTTL", "h") > 49000);
	RT_EQ_INT(RS_INT("PERSIST", "h"), 1);
	RT_EQ_INT(RS_INT("PERSIST", "h"), 0);
	RT_EQ_INT(RS_INT("TTL", "h"), -1);
	RT_EQ_INT(RS_INT("DEL", "h", "nope"), 1);
	RT_EQ_INT(RS_INT("PTTL", "h"), -2);
	RT_EQ_STR(RS_STR("TYPE", "h"), "none");
	RT_EQ_STR(RS_STR("SET", "k", "v", "NX", "PX", "10000"), "OK");
	RT_EQ_STR(RS_STR("SET", "k", "w", "NX"), "(nil)");
	RT_EQ_STR(RS_STR("GET", "k"), "v");
	RT_CHECK(strncmp(RS_STR("HGET", "k", "f"), "(error) WRONGTYPE",
			 17) == 0);
	rs_teardown();
}

static void test_shared__store_errors_fail_closed(void)
{
	relay_inv_outcome o;

	rs_setup();
	RS_STR("SET", RS_KEY, "string");
	RT_EQ_INT(rs_try("a/h", RS_NOW, 6000, &o), RELAY_ETYPE);
	RT_EQ_INT(rs_classify(&o), RELAY_ETYPE);
	RT_EQ_INT(rs_retain(RS_KEY, 1000, &o), RELAY_ETYPE);
	RT_EQ_STR(RS_STR("GET", RS_KEY), "string");
	rs_teardown();
}


/* ---- typed stream operations ------------------------------------------ */

struct rs_typed {
	int done, status;
	long long v;
	relay_stream_entry *e;
	size_t n;
	char **ids;
	relay_autoclaim *a;
	relay_pending *p;
};

static void rs_int_cb(relay_redis_backend *b, int status, long long v,
		      void *payload)
{
	struct rs_typed *t = payload;

	t->done++;
	t->status = status;
	t->v = v;
}

static void rs_entries_cb(relay_redis_backend *b, int status,
			  relay_stream_entry *e, size_t n, void *payload)
{
	struct rs_typed *t = payload;

	t->done++;
	t->status = status;
	t->e = e;
	t->n = n;
}

static void rs_ids_cb(relay_redis_backend *b, int status, char **ids,
		      size_t n, void *payload)
{
	struct rs_typed *t = payload;

	t->done++;
	t->status = status;
	t->ids = ids;
	t->n = n;
}

static void rs_autoclaim_cb(relay_redis_backend *b, int status,
			    relay_autoclaim *a, void *payload)
{
	struct rs_typed *t = payload;

	t->done++;
	t->status = status;
	t->a = a;
}

static void rs_pending_cb(relay_redis_backend *b, int status,
			  relay_pending *p, size_t n, void *payload)
{
	struct rs_typed *t = payload;

	t->done++;
	t->status = status;
	t->p = p;
	t->n = n;
}

/* Wait for a typed call issued with rc; returns its status. */
static int rs_typed_wait(struct rs_typed *t, int rc)
{
	if (rc) {
		RT_CHECK(!t->done);
		return rc;
	}
	relay_redis_sync_wait(rs_b, &t->done);
	RT_EQ_INT(t->done, 1);
	return t->status;
}

static void test_shared__typed_stream_ops(void)
{
	const char *names[] = { "event" };
	const char *vals[] = { "{\"n\":1}" };
	struct rs_typed t;
	char id[3][64];
	const char *one[1], *two[2];
	size_t len = 0;
	int i;

	rs_setup();
	memset(&t, 0, sizeof(t));
	RT_EQ_INT(rs_typed_wait(&t, relay_redis_group_create(
				rs_b, "s", "g", "0", rs_int_cb, &t)), 0);
	RT_EQ_INT(t.v, 1);
	memset(&t, 0, sizeof(t));
	RT_EQ_INT(rs_typed_wait(&t, relay_redis_group_create(
				rs_b, "s", "g", "0", rs_int_cb, &t)), 0);
	RT_EQ_INT(t.v, 0); /* BUSYGROUP is success */
	for (i = 0; i < 3; i++) {
		memset(&t, 0, sizeof(t));
		RT_EQ_INT(rs_typed_wait(&t, relay_redis_xadd(
					rs_b, "s", 1, names, vals, NULL,
					rs_ids_cb, &t)), 0);
		RT_ASSERT(t.n == 1);
		snprintf(id[i], sizeof(id[i]), "%s", t.ids[0]);
		relay_redis_strings_free(t.ids, t.n);
	}
	memset(&t, 0, sizeof(t));
	RT_EQ_INT(rs_typed_wait(&t, relay_redis_xreadgroup(
				rs_b, "s", "g", "c1", 2, 5, ">",
				rs_entries_cb, &t)), 0);
	RT_ASSERT(t.n == 2);
	RT_EQ_STR(t.e[0].id, id[0]);
	RT_EQ_STR(relay_stream_entry_get(&t.e[1], "event", &len), vals[0]);
	RT_EQ_INT(len, strlen(vals[0]));
	RT_CHECK(relay_stream_entry_get(&t.e[1], "nope", NULL) == NULL);
	relay_stream_entries_free(t.e, t.n);
	memset(&t, 0, sizeof(t));
	RT_EQ_INT(rs_typed_wait(&t, relay_redis_xreadgroup(
				rs_b, "s", "g", "c1", 10, -1, ">",
				rs_entries_cb, &t)), 0);
	RT_EQ_INT(t.n, 1);
	relay_stream_entries_free(t.e, t.n);
	memset(&t, 0, sizeof(t));
	RT_EQ_INT(rs_typed_wait(&t, relay_redis_xreadgroup(
				rs_b, "s", "g", "c1", 10, 1, ">",
				rs_entries_cb, &t)), 0);
	RT_EQ_INT(t.n, 0); /* nothing new */
	memset(&t, 0, sizeof(t));
	RT_EQ_INT(rs_typed_wait(&t, relay_redis_xpending_count(
				rs_b, "s", "g", rs_int_cb, &t)), 0);
	RT_EQ_INT(t.v, 3);
	one[0] = id[0];
	memset(&t, 0, sizeof(t));
	RT_EQ_INT(rs_typed_wait(&t, relay_redis_xack(rs_b, "s", "g", one, 1,
						     rs_int_cb, &t)), 0);
	RT_EQ_INT(t.v, 1);
	one[0] = id[1];
	memset(&t, 0, sizeof(t));
	RT_EQ_INT(rs_typed_wait(&t, relay_redis_xdel(rs_b, "s", one, 1,
						     rs_int_cb, &t)), 0);
	RT_EQ_INT(t.v, 1);
	rs_sleep_ms(30);
	memset(&t, 0, sizeof(t));
	RT_EQ_INT(rs_typed_wait(&t, relay_redis_xautoclaim(
				rs_b, "s", "g", "c2", 20, "0-0", 10,
				rs_autoclaim_cb, &t)), 0);
	RT_ASSERT(t.a != NULL);
	RT_EQ_STR(t.a->next, "0-0");
	RT_ASSERT(t.a->n == 1 && t.a->ndeleted == 1);
	RT_EQ_STR(t.a->entries[0].id, id[2]);
	RT_EQ_STR(t.a->deleted[0], id[1]);
	relay_autoclaim_free(t.a);
	two[0] = id[2];
	two[1] = id[0]; /* acknowledged: not pending, not claimed */
	memset(&t, 0, sizeof(t));
	RT_EQ_INT(rs_typed_wait(&t, relay_redis_xclaim_justid(
				rs_b, "s", "g", "c3", 0, two, 2, rs_ids_cb,
				&t)), 0);
	RT_ASSERT(t.n == 1);
	RT_EQ_STR(t.ids[0], id[2]);
	relay_redis_strings_free(t.ids, t.n);
	memset(&t, 0, sizeof(t));
	RT_EQ_INT(rs_typed_wait(&t, relay_redis_xpending(
				rs_b, "s", "g", 0, "-", "+", 10, NULL,
				rs_pending_cb, &t)), 0);
	RT_ASSERT(t.n == 1);
	RT_EQ_STR(t.p[0].id, id[2]);
	RT_EQ_STR(t.p[0].consumer, "c3");
	RT_EQ_INT(t.p[0].deliveries, 2);
	relay_pending_free(t.p, t.n);
	memset(&t, 0, sizeof(t));
	RT_EQ_INT(rs_typed_wait(&t, relay_redis_xrange(
				rs_b, "s", "-", "+", 10, rs_entries_cb, &t)),
		  0);
	RT_EQ_INT(t.n, 2);
	relay_stream_entries_free(t.e, t.n);
	/* errors */
	memset(&t, 0, sizeof(t));
	RT_EQ_INT(rs_typed_wait(&t, relay_redis_xreadgroup(
				rs_b, "s", "nogroup", "c1", 1, -1, ">",
				rs_entries_cb, &t)), RELAY_ENOTFOUND);
	RT_CHECK(t.e == NULL);
	RS_STR("SET", "str", "x");
	memset(&t, 0, sizeof(t));
	RT_EQ_INT(rs_typed_wait(&t, relay_redis_xrange(
				rs_b, "str", "-", "+", 1, rs_entries_cb, &t)),
		  RELAY_ETYPE);
	memset(&t, 0, sizeof(t));
	RT_EQ_INT(rs_typed_wait(&t, relay_redis_xack(rs_b, "s", "g", one, 0,
						     rs_int_cb, &t)),
		  RELAY_EINVAL);
	rs_teardown();
}


/* Store down mid-sequence: every operation reports an error (try_start
 * fails closed), exactly one callback each, nothing is written; back up,
 * the same handle works again. */
static void test_shared__outage_reports_errors(void)
{
	relay_dlq_entry e = rs_entry("a", "x");
	relay_dlq_persist_result res;
	relay_inv_outcome claim, o;
	char tok[40], *before, *after;
	struct rs_typed t;
	const char *argv[] = { "PING" };
	relay_redis_reply *r = NULL;

	rs_setup();
	RT_ASSERT(rs_try("a/h", RS_NOW, 6000, &claim) == 0);
	rs_make_exhausted("a/x", tok);
	before = rs_snapshot(RS_KEY);
	rs_down();
	RT_CHECK(rs_try("a/h", RS_NOW + 6000, 6000, &o) != 0);
	RT_CHECK(rs_complete("a/h", 1, claim.token, &o) != 0);
	RT_CHECK(rs_fail("a/h", 1, claim.token, RS_NOW, &o) != 0);
	RT_CHECK(rs_classify(&o) != 0);
	RT_CHECK(rs_persist(RS_KEY, "a/x", 1, tok, &e, &res, NULL) != 0);
	RT_CHECK(rs_retain(RS_KEY, 1000, &o) != 0);
	memset(&t, 0, sizeof(t));
	RT_CHECK(rs_typed_wait(&t, relay_redis_xpending_count(
				rs_b, "s", "g", rs_int_cb, &t)) != 0);
	RT_CHECK(relay_redis_sync_command(rs_b, &r, 1, argv, NULL) != 0);
	RT_CHECK(r == NULL);
	RT_CHECK(relay_redis_errstr(rs_b)[0] != '\0');
	rs_up();
	RT_EQ_INT(rs_try("a/h", RS_NOW, 6000, &o), 0);
	RT_CHECK(o.result == RELAY_INV_R_RUNNING || /* state kept */
		 o.result == RELAY_INV_R_CLAIMED);  /* server restarted */
	if (o.result == RELAY_INV_R_RUNNING) {
		after = rs_snapshot(RS_KEY);
		RT_EQ_STR(after, before);
		free(after);
		RT_EQ_INT(RS_INT("EXISTS", RS_DLQ), 0);
	}
	free(before);
	rs_teardown();
}

#define RS_SHARED_CASES                                                  \
	RT_CASE(test_shared__try_start_absent_claims),                   \
	RT_CASE(test_shared__try_start_running_protected),               \
	RT_CASE(test_shared__try_start_backoff_protected),               \
	RT_CASE(test_shared__try_start_terminal),                        \
	RT_CASE(test_shared__try_start_field_grammar),                    \
	RT_CASE(test_shared__try_start_deadline_capped),                 \
	RT_CASE(test_shared__try_start_never_exhausts),                  \
	RT_CASE(test_shared__backoff_table),                             \
	RT_CASE(test_shared__stale_tokens_write_nothing),                \
	RT_CASE(test_shared__takeover_fences_old_owner),                 \
	RT_CASE(test_shared__success_never_overwrites_exhausted),        \
	RT_CASE(test_shared__pending_writes_persist),                    \
	RT_CASE(test_shared__retain_sets_marker_and_ttl),                \
	RT_CASE(test_shared__retain_absent_creates_nothing),             \
	RT_CASE(test_shared__retained_hash_is_inert),                    \
	RT_CASE(test_shared__classification_counted_once),               \
	RT_CASE(test_shared__dlq_persist_entry_and_marker),              \
	RT_CASE(test_shared__dlq_persist_idempotent),                    \
	RT_CASE(test_shared__dlq_persist_foreign_claim),                 \
	RT_CASE(test_shared__dlq_placeholder),                           \
	RT_CASE(test_shared__dlq_wrong_type_key),                        \
	RT_CASE(test_shared__dlq_invalid_entry_never_calls_back),        \
	RT_CASE(test_shared__dlq_16_concurrent_persists),                \
	RT_CASE(test_shared__dlq_partial_write_resumes),                 \
	RT_CASE(test_shared__dlq_list_get_delete),                       \
	RT_CASE(test_shared__stream_group_create),                       \
	RT_CASE(test_shared__stream_read_ack_pending),                   \
	RT_CASE(test_shared__stream_autoclaim_and_deleted_ids),          \
	RT_CASE(test_shared__stream_range_and_del),                      \
	RT_CASE(test_shared__keys_hashes_ttls),                          \
	RT_CASE(test_shared__store_errors_fail_closed),                  \
	RT_CASE(test_shared__typed_stream_ops),                          \
	RT_CASE(test_shared__outage_reports_errors)

#endif /* RS_SUITE_H */
