/*
 * tests/redis/suite_timeline.h - the attempt timeline (R-3
 * __timeline:<field>): appended by the script that records an attempt's
 * outcome, bounded to the last 16 entries, never by a stale claim, and
 * copied into the invocation's DLQ entry (before trace). Part of the
 * shared backend suite (memory and a real server agree); included by
 * suite.h only.
 */
#ifndef RS_SUITE_TIMELINE_H
#define RS_SUITE_TIMELINE_H

#define RS_TL "__timeline:a/h"
#define RS_OUT "relay:events:outcomes"
/* A note of timeline entry @e alone (no outcome stream). */
#define RS_NOTE(e) (&(relay__inv_note){ (e), NULL, 0, NULL })

static int rs_fail_tl(unsigned int at, const char *tok, const char *tl)
{
	struct rs_wait w = { 0 };

	return rs_finish(&w, relay__inv_record_failure_ms(
				     rs_b, RS_KEY, "a/h", at, tok, RS_NOW, 1,
				     tl ? RS_NOTE(tl) : NULL, rs_inv_cb, &w),
			 NULL);
}

/* Each finishing script appends its entry in the same write; a stale
 * claim and a repeat of mark_exhausted append nothing. */
static void test_shared__timeline_appended_by_outcome(void)
{
	relay_inv_outcome o;
	struct rs_wait w = { 0 };
	char tok[40];

	rs_setup();
	RT_ASSERT(rs_try("a/h", RS_NOW, 6000, &o) == 0);
	strcpy(tok, o.token);
	RT_EQ_INT(rs_fail_tl(1, tok, "{\"attempt\":1}"), 0);
	RT_EQ_STR(RS_STR("HGET", RS_KEY, RS_TL), "{\"attempt\":1}");
	/* stale: the claim is gone, nothing appended */
	RT_EQ_INT(rs_fail_tl(1, tok, "{\"attempt\":9}"), 0);
	RT_EQ_STR(RS_STR("HGET", RS_KEY, RS_TL), "{\"attempt\":1}");
	RT_ASSERT(rs_try("a/h", RS_NOW + 10, 6000, &o) == 0);
	RT_EQ_INT(o.result, RELAY_INV_R_CLAIMED);
	RT_EQ_INT(rs_finish(&w, relay__inv_mark_exhausted_tl(
				    rs_b, RS_KEY, "a/h", 2, o.token,
				    RS_NOTE("{\"attempt\":2}"), rs_inv_cb,
				    &w), &o), 0);
	RT_EQ_INT(o.result, RELAY_INV_R_RECORDED);
	memset(&w, 0, sizeof(w));
	RT_EQ_INT(rs_finish(&w, relay__inv_mark_exhausted_tl(
				    rs_b, RS_KEY, "a/h", 2, o.token,
				    RS_NOTE("{\"attempt\":2}"), rs_inv_cb,
				    &w), &o), 0);
	RT_EQ_INT(o.result, RELAY_INV_R_RECORDED);
	RT_EQ_STR(RS_STR("HGET", RS_KEY, RS_TL),
		  "{\"attempt\":1}\n{\"attempt\":2}");
	/* without an entry (an older engine): the state alone */
	RT_ASSERT(rs_try("a/k", RS_NOW, 6000, &o) == 0);
	RT_EQ_INT(rs_complete("a/k", 1, o.token, &o), 0);
	RT_EQ_STR(RS_STR("HGET", RS_KEY, "a/k"), "ok");
	RT_EQ_INT(RS_INT("HEXISTS", RS_KEY, "__timeline:a/k"), 0);
	memset(&w, 0, sizeof(w));
	RT_ASSERT(rs_try("a/m", RS_NOW, 6000, &o) == 0);
	RT_EQ_INT(rs_finish(&w, relay__inv_mark_complete_tl(
				    rs_b, RS_KEY, "a/m", 1, o.token,
				    RS_NOTE("{\"attempt\":1}"), rs_inv_cb,
				    &w), &o), 0);
	RT_EQ_STR(RS_STR("HGET", RS_KEY, "__timeline:a/m"),
		  "{\"attempt\":1}");
	/* a bad entry is refused before anything is sent */
	RT_EQ_INT(rs_fail_tl(1, tok, "a\nb"), RELAY_EINVAL);
	rs_teardown();
}

/* The last 16 attempts are kept, the oldest dropped first. */
static void test_shared__timeline_bounded(void)
{
	relay_inv_outcome o;
	char e[32], want[32];
	const char *v;
	int i, n;

	rs_setup();
	for (i = 1; i <= 20; i++) {
		RT_ASSERT(rs_try("a/h", RS_NOW + 10 * i, 6000, &o) == 0);
		RT_ASSERT(o.result == RELAY_INV_R_CLAIMED);
		snprintf(e, sizeof(e), "{\"attempt\":%d}", i);
		RT_ASSERT(rs_fail_tl((unsigned)i, o.token, e) == 0);
	}
	v = RS_STR("HGET", RS_KEY, RS_TL);
	for (n = 1, i = 0; v[i]; i++)
		n += v[i] == '\n';
	RT_EQ_INT(n, 16);
	snprintf(want, sizeof(want), "{\"attempt\":5}\n");
	RT_CHECK(strncmp(v, want, strlen(want)) == 0);
	RT_CHECK(strstr(v, "\n{\"attempt\":20}") != NULL);
	rs_teardown();
}

/* complete_ack appends with "ok"; the hash keeps it under retention. */
static void test_shared__timeline_complete_ack(void)
{
	relay_inv_outcome o;
	struct rs_wait w = { 0 };
	relay_redis_reply *r;

	rs_setup();
	relay_redis_reply_free(RS_CMD("SET", RS_OUT ":tail", "1"));
	RT_ASSERT(rs_try("a/h", RS_NOW, 6000, &o) == 0);
	r = RS_CMD("XADD", "events", "1-0", "event", "{}");
	relay_redis_reply_free(r);
	r = RS_CMD("XGROUP", "CREATE", "events", "g", "0");
	relay_redis_reply_free(r);
	r = RS_CMD("XREADGROUP", "GROUP", "g", "c", "STREAMS", "events", ">");
	relay_redis_reply_free(r);
	RT_EQ_INT(rs_finish(&w, relay__inv_complete_ack(
				    rs_b, RS_KEY, "events", "a/h", 1, o.token,
				    "g", "1-0", 100000,
				    (&(relay__inv_note){ "{\"outcome\":\"ok\"}",
							 RS_OUT, 100, "1-0" }),
				    rs_inv_cb, &w), &o), 0);
	RT_EQ_INT(o.result, RELAY_INV_R_RECORDED);
	RT_EQ_STR(RS_STR("HGET", RS_KEY, RS_TL), "{\"outcome\":\"ok\"}");
	RT_EQ_STR(RS_STR("HGET", RS_KEY, "__terminal"), "1");
	/* the outcome stream got it too, with the message id */
	r = RS_CMD("XRANGE", RS_OUT, "-", "+");
	RT_ASSERT(r && r->elements == 1);
	RT_ASSERT(r->element[0]->element[1]->elements == 6);
	RT_EQ_STR(r->element[0]->element[1]->element[1]->str, "1-0");
	RT_EQ_STR(r->element[0]->element[1]->element[3]->str, "a/h");
	RT_EQ_STR(r->element[0]->element[1]->element[5]->str,
		  "{\"outcome\":\"ok\"}");
	relay_redis_reply_free(r);
	rs_teardown();
}

/* The DLQ entry of an exhausted invocation carries its timeline as
 * field "timeline", before trace; the fixed fields are unchanged. */
static void test_shared__timeline_in_dlq_entry(void)
{
	relay_dlq_entry e = rs_entry("a", "h");
	relay_dlq_persist_result res;
	relay_redis_reply *r, *f;
	relay_inv_outcome o;
	struct rs_wait w = { 0 };
	char id[64];
	size_t n;

	rs_setup();
	RT_ASSERT(rs_try("a/h", RS_NOW, 6000, &o) == 0);
	RT_EQ_INT(rs_finish(&w, relay__inv_mark_exhausted_tl(
				    rs_b, RS_KEY, "a/h", 1, o.token,
				    RS_NOTE("{\"attempt\":1}"), rs_inv_cb, &w),
			    NULL),
		  0);
	e.trace = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
	RT_EQ_INT(rs_persist(RS_KEY, "a/h", 1, o.token, &e, &res, id), 0);
	RT_EQ_INT(res, RELAY_DLQ_WRITTEN);
	r = RS_CMD("XRANGE", RS_DLQ, "-", "+");
	RT_ASSERT(r && r->elements == 1);
	f = r->element[0]->element[1];
	n = f->elements;
	RT_ASSERT(n == 26);
	RT_EQ_STR(f->element[0]->str, "original_stream");
	RT_EQ_STR(f->element[n - 4]->str, "timeline");
	RT_EQ_STR(f->element[n - 3]->str, "{\"attempt\":1}");
	RT_EQ_STR(f->element[n - 2]->str, "trace");
	relay_redis_reply_free(r);
	rs_teardown();
}

/* while a follower holds the lease, the outcome of every recorded
 * attempt goes to the outcome stream in the same script ({id, inv, tl});
 * a stale claim adds nothing; without the lease, or with no outcome
 * stream named, none is written; a key of another type does not fail the
 * transition. */
static void test_shared__outcome_stream(void)
{
	relay_inv_outcome o;
	struct rs_wait w = { 0 };
	relay__inv_note n = { "1 2 3 4 ok cold r -", RS_OUT, 1000, "1-0" };
	relay_redis_reply *r;
	char tok[40];

	rs_setup();
	/* no follower: nothing appended */
	RT_ASSERT(rs_try("a/n", RS_NOW, 6000, &o) == 0);
	RT_EQ_INT(rs_finish(&w, relay__inv_mark_complete_tl(
				    rs_b, RS_KEY, "a/n", 1, o.token, &n,
				    rs_inv_cb, &w), &o), 0);
	RT_EQ_INT(o.result, RELAY_INV_R_RECORDED);
	RT_EQ_INT(RS_INT("EXISTS", RS_OUT), 0);
	relay_redis_reply_free(RS_CMD("SET", RS_OUT ":tail", "1"));
	RT_ASSERT(rs_try("a/h", RS_NOW, 6000, &o) == 0);
	strcpy(tok, o.token);
	memset(&w, 0, sizeof(w));
	RT_EQ_INT(rs_finish(&w, relay__inv_record_failure_ms(
				    rs_b, RS_KEY, "a/h", 1, tok, RS_NOW, 1, &n,
				    rs_inv_cb, &w), &o), 0);
	RT_EQ_INT(o.result, RELAY_INV_R_RECORDED);
	memset(&w, 0, sizeof(w));
	RT_EQ_INT(rs_finish(&w, relay__inv_record_failure_ms(
				    rs_b, RS_KEY, "a/h", 1, tok, RS_NOW, 1, &n,
				    rs_inv_cb, &w), &o), 0);
	RT_EQ_INT(o.result, RELAY_INV_R_STALE);
	r = RS_CMD("XRANGE", RS_OUT, "-", "+");
	RT_ASSERT(r && r->elements == 1);
	RT_EQ_STR(r->element[0]->element[1]->element[0]->str, "id");
	RT_EQ_STR(r->element[0]->element[1]->element[1]->str, "1-0");
	RT_EQ_STR(r->element[0]->element[1]->element[2]->str, "inv");
	RT_EQ_STR(r->element[0]->element[1]->element[3]->str, "a/h");
	RT_EQ_STR(r->element[0]->element[1]->element[4]->str, "tl");
	RT_EQ_STR(r->element[0]->element[1]->element[5]->str,
		  "1 2 3 4 ok cold r -");
	relay_redis_reply_free(r);
	/* a wrong-type outcome key: the state is still recorded */
	RS_INT("DEL", RS_OUT);
	relay_redis_reply_free(RS_CMD("SET", RS_OUT, "x"));
	RT_ASSERT(rs_try("a/h", RS_NOW + 100, 6000, &o) == 0);
	memset(&w, 0, sizeof(w));
	RT_EQ_INT(rs_finish(&w, relay__inv_mark_complete_tl(
				    rs_b, RS_KEY, "a/h", o.attempt, o.token, &n,
				    rs_inv_cb, &w), &o), 0);
	RT_EQ_INT(o.result, RELAY_INV_R_RECORDED);
	RT_EQ_STR(RS_STR("HGET", RS_KEY, "a/h"), "ok");
	/* no outcome stream named: none written */
	RS_INT("DEL", RS_OUT);
	RT_ASSERT(rs_try("a/k", RS_NOW, 6000, &o) == 0);
	memset(&w, 0, sizeof(w));
	RT_EQ_INT(rs_finish(&w, relay__inv_mark_exhausted_tl(
				    rs_b, RS_KEY, "a/k", 1, o.token,
				    RS_NOTE("1 2 3 4 failed:exit=1 cold r -"),
				    rs_inv_cb, &w), &o), 0);
	RT_EQ_INT(RS_INT("EXISTS", RS_OUT), 0);
	/* outcomes without a message id are refused before sending */
	n.id = NULL;
	RT_EQ_INT(relay__inv_mark_complete_tl(rs_b, RS_KEY, "a/k", 1, tok, &n,
					      rs_inv_cb, &w), RELAY_EINVAL);
	rs_teardown();
}

#endif /* RS_SUITE_TIMELINE_H */
