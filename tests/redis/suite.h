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
 * and lists RS_SHARED_CASES in its case table. The cases live in
 * suite_inv.h, suite_dlq.h, suite_dlq_iter.h, suite_streams.h, suite_sched.h,
 * suite_claim_start.h and suite_retention.h; the
 * helpers here.
 */
#ifndef RS_SUITE_H
#define RS_SUITE_H

#include <stdarg.h>
#include <string.h>

#include "relaytest.h"

#include "relay/dlq.h"
#include "relay/invocation.h"
#include "relay/redis.h"
#include "invops/invops.h"  /* the engine's variants of the scripts */

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
		app, handler, 7, 5, "2026-12-02T16:45:00.123Z", NULL, NULL, NULL,
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

#include "suite_inv.h"
#include "suite_dlq.h"
#include "suite_dlq_iter.h"
#include "suite_streams.h"
#include "suite_sched.h"
#include "suite_retention.h"
#include "suite_claim_start.h"
#include "suite_timeline.h"

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
	RT_CASE(test_shared__timeline_appended_by_outcome),              \
	RT_CASE(test_shared__timeline_bounded),                          \
	RT_CASE(test_shared__timeline_complete_ack),                     \
	RT_CASE(test_shared__timeline_in_dlq_entry),                     \
	RT_CASE(test_shared__outcome_stream),                            \
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
	RT_CASE(test_shared__classification_pin_one_parser),             \
	RT_CASE(test_shared__record_failure_given_backoff),              \
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
	RT_CASE(test_shared__outage_reports_errors),                     \
	RT_CASE(test_shared__schedule_publish_once),                     \
	RT_CASE(test_shared__schedule_publish_wrong_type),               \
	RT_CASE(test_shared__schedule_publish_legacy_marker),            \
	RT_CASE(test_shared__classification_pin),                        \
	RS_CLAIM_START_CASES,                                            \
	RS_DLQ_ITER_CASES,                                               \
	RS_RETENTION_CASES

#endif /* RS_SUITE_H */
