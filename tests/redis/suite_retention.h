/*
 * tests/redis/suite_retention.h - relay_redis_stream_trim(), the
 * retention step (REDIS_STREAM_RETENTION, REDIS_DLQ_RETENTION): what
 * survives (pending in any group, unread by any group, younger than the
 * cutoff) and what goes (everything every group is done with).
 * Part of the shared backend suite; included by suite.h only.
 *
 * Redis trims the stream with "~", whole macro nodes only; the cases
 * set stream-node-max-entries to 1 on a real server so a node is an
 * entry and both backends trim exactly to the bound. The DLQ (age only)
 * is trimmed exactly with any node size.
 */
#ifndef RS_SUITE_RETENTION_H
#define RS_SUITE_RETENTION_H

struct rs_trim_wait {
	int done;
	int status;
	relay_stream_trim *t;
};

static void rs_trim_cb(relay_redis_backend *b, int status,
		       relay_stream_trim *t, void *payload)
{
	struct rs_trim_wait *w = payload;

	(void)b;
	RT_CHECK(!w->done); /* exactly once */
	w->done = 1;
	w->status = status;
	w->t = t;
}

/* One retention step; the result (new) or NULL with *@status set. */
static relay_stream_trim *rs_trim(const char *stream, int64_t cutoff_ms,
				  size_t limit, unsigned int flags,
				  int *status)
{
	struct rs_trim_wait w = { 0, 0, NULL };
	int rc;

	rc = relay_redis_stream_trim(rs_b, stream, cutoff_ms, limit, flags,
				     rs_trim_cb, &w);
	if (rc) {
		*status = rc;
		return NULL;
	}
	relay_redis_sync_wait(rs_b, &w.done);
	RT_CHECK(w.done);
	*status = w.status;
	RT_CHECK((w.status == 0) == (w.t != NULL));
	return w.t;
}

static void rs_small_nodes(void)
{
	if (strcmp(relay_redis_name(rs_b), "hiredis") == 0)
		RT_EQ_STR(RS_STR("CONFIG", "SET", "stream-node-max-entries",
				 "1"), "OK");
}

/* The ids left in @stream, space-separated. */
static const char *rs_ids(const char *stream)
{
	static char buf[4096];
	relay_redis_reply *r = RS_CMD("XRANGE", stream, "-", "+");
	size_t i;

	buf[0] = '\0';
	for (i = 0; r && i < r->elements; i++) {
		if (i)
			strcat(buf, " ");
		strcat(buf, r->element[i]->element[0]->str);
	}
	relay_redis_reply_free(r);
	return buf;
}

static void rs_add_ids(const char *stream, int from, int to)
{
	char id[32];
	int i;

	for (i = from; i <= to; i++) {
		snprintf(id, sizeof(id), "%d-0", i);
		RT_EQ_STR(RS_STR("XADD", stream, id, "event", "{}"), id);
	}
}

/* Pending in one group (a handler in backoff, or a crashed consumer's
 * PEL) and unread by another: both survive however old; what every group
 * acknowledged goes. */
static void test_shared__trim_keeps_pending_and_unread(void)
{
	relay_stream_trim *t;
	int st;

	rs_setup();
	rs_small_nodes();
	rs_add_ids("s", 1, 6);
	RS_STR("XGROUP", "CREATE", "s", "relay", "0");
	RS_STR("XGROUP", "CREATE", "s", "analytics", "0");
	relay_redis_reply_free(RS_CMD("XREADGROUP", "GROUP", "relay", "c1",
				      "COUNT", "4", "STREAMS", "s", ">"));
	RT_EQ_INT(RS_INT("XACK", "s", "relay", "1-0", "2-0", "4-0"), 3);
	relay_redis_reply_free(RS_CMD("XREADGROUP", "GROUP", "analytics",
				      "a1", "COUNT", "2", "STREAMS", "s",
				      ">"));
	RT_EQ_INT(RS_INT("XACK", "s", "analytics", "1-0", "2-0"), 2);
	t = rs_trim("s", RS_NOW, 100, 0, &st);
	RT_ASSERT(t);
	RT_EQ_INT(t->trimmed, 2);
	RT_EQ_INT(t->length, 4);
	RT_EQ_STR(t->bound, "2-1"); /* analytics' last-delivered + 1 */
	RT_EQ_STR(t->first_id, "3-0");
	RT_EQ_STR(t->oldest_pending_id, "3-0");
	RT_EQ_INT(t->groups, 2);
	relay_stream_trim_free(t);
	RT_EQ_STR(rs_ids("s"), "3-0 4-0 5-0 6-0");
	/* The analytics reader catches up; relay still holds 3-0. */
	relay_redis_reply_free(RS_CMD("XREADGROUP", "GROUP", "analytics",
				      "a1", "COUNT", "10", "STREAMS", "s",
				      ">"));
	RT_EQ_INT(RS_INT("XACK", "s", "analytics", "3-0", "4-0", "5-0",
			 "6-0"), 4);
	t = rs_trim("s", RS_NOW, 100, 0, &st);
	RT_ASSERT(t);
	RT_EQ_INT(t->trimmed, 0);
	relay_stream_trim_free(t);
	RT_EQ_STR(rs_ids("s"), "3-0 4-0 5-0 6-0");
	/* relay acknowledges 3-0: relay has not read 5-0 yet. */
	RT_EQ_INT(RS_INT("XACK", "s", "relay", "3-0"), 1);
	t = rs_trim("s", RS_NOW, 100, 0, &st);
	RT_ASSERT(t);
	RT_EQ_INT(t->trimmed, 2);
	RT_EQ_STR(t->bound, "4-1"); /* relay's last-delivered + 1 */
	RT_EQ_STR(t->oldest_pending_id, "");
	relay_stream_trim_free(t);
	RT_EQ_STR(rs_ids("s"), "5-0 6-0");
	rs_teardown();
}

/* Only entries older than the cutoff go, even when every group is done. */
static void test_shared__trim_age_cutoff(void)
{
	relay_stream_trim *t;
	int st;

	rs_setup();
	rs_small_nodes();
	rs_add_ids("s", 1, 5);
	RS_STR("XGROUP", "CREATE", "s", "g", "$");
	t = rs_trim("s", 0, 100, 0, &st);
	RT_ASSERT(t);
	RT_EQ_INT(t->trimmed, 0);
	RT_EQ_STR(t->bound, "0-0");
	relay_stream_trim_free(t);
	t = rs_trim("s", 3, 100, 0, &st);
	RT_ASSERT(t);
	RT_EQ_INT(t->trimmed, 2);
	RT_EQ_STR(t->bound, "3-0");
	RT_EQ_INT(t->length, 3);
	relay_stream_trim_free(t);
	RT_EQ_STR(rs_ids("s"), "3-0 4-0 5-0");
	rs_teardown();
}

/* LIMIT bounds one step; limit 0 observes only; a missing key is empty;
 * a key of another type is an error. */
static void test_shared__trim_limit_observe_and_errors(void)
{
	relay_stream_trim *t;
	int st;

	rs_setup();
	rs_small_nodes();
	t = rs_trim("nokey", RS_NOW, 100, 0, &st);
	RT_ASSERT(t);
	RT_EQ_INT(t->trimmed, 0);
	RT_EQ_INT(t->length, 0);
	RT_EQ_STR(t->bound, "");
	relay_stream_trim_free(t);
	rs_add_ids("s", 1, 5);
	t = rs_trim("s", RS_NOW, 0, 0, &st); /* no group: age alone */
	RT_ASSERT(t);
	RT_EQ_INT(t->trimmed, 0);
	RT_EQ_INT(t->length, 5);
	RT_EQ_STR(t->first_id, "1-0");
	RT_EQ_INT(t->groups, 0);
	relay_stream_trim_free(t);
	t = rs_trim("s", RS_NOW, 2, 0, &st);
	RT_ASSERT(t);
	RT_EQ_INT(t->trimmed, 2);
	relay_stream_trim_free(t);
	RT_EQ_STR(rs_ids("s"), "3-0 4-0 5-0");
	RS_STR("SET", "str", "x");
	RT_CHECK(rs_trim("str", RS_NOW, 10, 0, &st) == NULL);
	RT_EQ_INT(st, RELAY_ETYPE);
	RT_EQ_STR(RS_STR("GET", "str"), "x");
	RT_EQ_INT(relay_redis_stream_trim(rs_b, "s", -1, 1, 0, rs_trim_cb,
					  NULL), RELAY_EINVAL);
	RT_EQ_INT(relay_redis_stream_trim(rs_b, "s", 1, 1, 8, rs_trim_cb,
					  NULL), RELAY_EINVAL);
	RT_EQ_INT(relay_stream_id_ms("1700000000000-3"), 1700000000000LL);
	RT_EQ_INT(relay_stream_id_ms("12"), 12);
	RT_EQ_INT(relay_stream_id_ms(""), -1);
	RT_EQ_INT(relay_stream_id_ms("x-1"), -1);
	rs_teardown();
}

/* The DLQ: age alone, whatever groups say. */
static void test_shared__trim_age_only(void)
{
	relay_stream_trim *t;
	int st;

	rs_setup();
	rs_small_nodes();
	rs_add_ids(RS_DLQ, 1, 4);
	RS_STR("XGROUP", "CREATE", RS_DLQ, "g", "0"); /* read nothing */
	t = rs_trim(RS_DLQ, 3, 100, RELAY_TRIM_AGE_ONLY, &st);
	RT_ASSERT(t);
	RT_EQ_INT(t->trimmed, 2);
	RT_EQ_STR(t->bound, "3-0");
	RT_EQ_INT(t->groups, 0);
	relay_stream_trim_free(t);
	RT_EQ_STR(rs_ids(RS_DLQ), "3-0 4-0");
	rs_teardown();
}

/* The DLQ with Redis' default node size (one node holds every entry):
 * exact all the same, and never more than @limit entries a step. */
static void test_shared__trim_age_only_exact_and_limited(void)
{
	relay_stream_trim *t;
	int st;

	rs_setup();
	if (strcmp(relay_redis_name(rs_b), "hiredis") == 0)
		RT_EQ_STR(RS_STR("CONFIG", "SET", "stream-node-max-entries",
				 "100"), "OK");
	rs_add_ids(RS_DLQ, 1, 10);
	t = rs_trim(RS_DLQ, 4, 100, RELAY_TRIM_AGE_ONLY, &st);
	RT_ASSERT(t);
	RT_EQ_INT(t->trimmed, 3);
	RT_EQ_INT(t->length, 7);
	relay_stream_trim_free(t);
	RT_EQ_STR(rs_ids(RS_DLQ), "4-0 5-0 6-0 7-0 8-0 9-0 10-0");
	t = rs_trim(RS_DLQ, 9, 2, RELAY_TRIM_AGE_ONLY, &st);
	RT_ASSERT(t);
	RT_EQ_INT(t->trimmed, 2);
	relay_stream_trim_free(t);
	RT_EQ_STR(rs_ids(RS_DLQ), "6-0 7-0 8-0 9-0 10-0");
	t = rs_trim(RS_DLQ, 9, 2, RELAY_TRIM_AGE_ONLY, &st);
	RT_ASSERT(t);
	RT_EQ_INT(t->trimmed, 2);
	relay_stream_trim_free(t);
	t = rs_trim(RS_DLQ, 9, 2, RELAY_TRIM_AGE_ONLY, &st);
	RT_ASSERT(t);
	RT_EQ_INT(t->trimmed, 1);
	RT_EQ_STR(t->first_id, "9-0");
	relay_stream_trim_free(t);
	RT_EQ_STR(rs_ids(RS_DLQ), "9-0 10-0");
	t = rs_trim(RS_DLQ, 20, 0, RELAY_TRIM_AGE_ONLY, &st);
	RT_ASSERT(t);
	RT_EQ_INT(t->trimmed, 0); /* limit 0 observes */
	relay_stream_trim_free(t);
	RT_EQ_STR(rs_ids(RS_DLQ), "9-0 10-0");
	rs_teardown();
}

/* last-delivered-id + 1 at the top of the sequence rolls over to the
 * next millisecond (ids are two 64-bit numbers: no float rounding). */
static void test_shared__trim_bound_id_arithmetic(void)
{
	relay_stream_trim *t;
	int st;

	rs_setup();
	rs_small_nodes();
	RS_STR("XADD", "s", "5-18446744073709551614", "event", "{}");
	RS_STR("XADD", "s", "5-18446744073709551615", "event", "{}");
	RS_STR("XADD", "s", "6-0", "event", "{}");
	RS_STR("XGROUP", "CREATE", "s", "g", "5-18446744073709551615");
	t = rs_trim("s", RS_NOW, 100, 0, &st);
	RT_ASSERT(t);
	RT_EQ_STR(t->bound, "6-0");
	RT_EQ_INT(t->trimmed, 2);
	relay_stream_trim_free(t);
	RS_STR("XGROUP", "CREATE", "s", "g2", "5-18446744073709551614");
	RS_STR("XADD", "s", "7-0", "event", "{}");
	t = rs_trim("s", RS_NOW, 100, 0, &st);
	RT_ASSERT(t);
	RT_EQ_STR(t->bound, "5-18446744073709551615");
	RT_EQ_INT(t->trimmed, 0);
	relay_stream_trim_free(t);
	RT_EQ_STR(rs_ids("s"), "6-0 7-0");
	rs_teardown();
}

#define RS_RETENTION_CASES                                               \
	RT_CASE(test_shared__trim_keeps_pending_and_unread),             \
	RT_CASE(test_shared__trim_age_cutoff),                           \
	RT_CASE(test_shared__trim_limit_observe_and_errors),             \
	RT_CASE(test_shared__trim_age_only),                             \
	RT_CASE(test_shared__trim_age_only_exact_and_limited),           \
	RT_CASE(test_shared__trim_bound_id_arithmetic)

#endif /* RS_SUITE_RETENTION_H */
