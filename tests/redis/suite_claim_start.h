/*
 * tests/redis/suite_claim_start.h - CLAIM_START (claim_classification and
 * try_start in one step, backend version 4): the classification is
 * recorded in the same step as the claim, the decision is try_start's,
 * a retained hash is inert.
 * Part of the shared backend suite; included by suite.h only.
 */
#ifndef RS_SUITE_CLAIM_START_H
#define RS_SUITE_CLAIM_START_H

struct rs_cs_wait {
	int done;
	int status;
	relay_inv_outcome cls, start;
};

static void rs_cs_cb(int status, const relay_inv_outcome *cls,
		     const relay_inv_outcome *start, void *p)
{
	struct rs_cs_wait *w = p;

	RT_CHECK(!w->done); /* exactly once */
	w->done = 1;
	w->status = status;
	RT_CHECK(status ? !cls && !start : cls && start);
	if (cls)
		w->cls = *cls;
	if (start)
		w->start = *start;
}

static int rs_claim_start(const char *field, int64_t now, int64_t timeout,
			  struct rs_cs_wait *w)
{
	int rc;

	memset(w, 0, sizeof(*w));
	rc = relay__inv_claim_start(rs_b, RS_KEY, field, now, timeout,
				    rs_cs_cb, w);
	if (rc) {
		RT_CHECK(!w->done);
		return rc;
	}
	RT_EQ_INT(relay_redis_sync_wait(rs_b, &w->done), 0);
	RT_CHECK(w->done);
	return w->status;
}

/* A fresh message: classification and claim written in one step, as the
 * two scripts apart would have written them. */
static void test_shared__claim_start_fresh(void)
{
	struct rs_cs_wait w;
	relay_inv_outcome o;
	char want[128];

	rs_setup();
	RT_EQ_INT(rs_claim_start("app/h", RS_NOW, 6000, &w), 0);
	RT_EQ_INT(w.cls.result, RELAY_INV_R_CLAIMED);
	RT_EQ_INT(w.start.result, RELAY_INV_R_CLAIMED);
	RT_EQ_INT(w.start.attempt, 1);
	RT_EQ_INT(w.start.deadline_ms, RS_NOW + 6000);
	RT_CHECK(rs_is_hex32(w.start.token));
	snprintf(want, sizeof(want), "running:%lld:1:%s",
		 (long long)(RS_NOW + 6000), w.start.token);
	RT_EQ_STR(RS_STR("HGET", RS_KEY, "app/h"), want);
	RT_EQ_STR(RS_STR("HGET", RS_KEY, "__classification"), "1");
	RT_EQ_INT(RS_INT("PTTL", RS_KEY), -1);
	/* the separate script agrees: counted already */
	RT_EQ_INT(rs_classify(&o), 0);
	RT_EQ_INT(o.result, RELAY_INV_R_ALREADY);
	rs_teardown();
}

/* A redelivery: the classification is not counted again, and the
 * decision is try_start's (a live claim is protected and nothing is
 * written; an expired one is taken over with the next attempt; a
 * terminal field is answered as it is). */
static void test_shared__claim_start_redelivery(void)
{
	struct rs_cs_wait w, w2;
	char *before, *after;

	rs_setup();
	RT_EQ_INT(rs_claim_start("app/h", RS_NOW, 6000, &w), 0);
	before = rs_snapshot(RS_KEY);
	RT_EQ_INT(rs_claim_start("app/h", RS_NOW + 10, 6000, &w2), 0);
	RT_EQ_INT(w2.cls.result, RELAY_INV_R_ALREADY);
	RT_EQ_INT(w2.start.result, RELAY_INV_R_RUNNING);
	RT_EQ_STR(w2.start.token, w.start.token);
	after = rs_snapshot(RS_KEY);
	RT_EQ_STR(after, before);
	free(after);
	free(before);
	/* expired: the next attempt, classification still counted once */
	RT_EQ_INT(rs_claim_start("app/h", RS_NOW + 6000, 6000, &w2), 0);
	RT_EQ_INT(w2.cls.result, RELAY_INV_R_ALREADY);
	RT_EQ_INT(w2.start.result, RELAY_INV_R_CLAIMED);
	RT_EQ_INT(w2.start.attempt, 2);
	RT_CHECK(strcmp(w2.start.token, w.start.token) != 0);
	/* terminal: answered, not claimed */
	RT_EQ_INT(RS_INT("HSET", RS_KEY, "app/ok", "ok"), 1);
	RT_EQ_INT(rs_claim_start("app/ok", RS_NOW, 6000, &w2), 0);
	RT_EQ_INT(w2.cls.result, RELAY_INV_R_ALREADY);
	RT_EQ_INT(w2.start.result, RELAY_INV_R_OK);
	RT_EQ_STR(RS_STR("HGET", RS_KEY, "app/ok"), "ok");
	rs_teardown();
}

/* Not classified yet but the field is terminal (a hash written by an
 * older engine): the classification is recorded, the field untouched;
 * a pending TTL is removed as by every write. */
static void test_shared__claim_start_terminal_field(void)
{
	struct rs_cs_wait w;

	rs_setup();
	RT_EQ_INT(RS_INT("HSET", RS_KEY, "app/h", "ok"), 1);
	RT_EQ_INT(RS_INT("PEXPIRE", RS_KEY, "100000"), 1);
	RT_EQ_INT(rs_claim_start("app/h", RS_NOW, 6000, &w), 0);
	RT_EQ_INT(w.cls.result, RELAY_INV_R_CLAIMED);
	RT_EQ_INT(w.start.result, RELAY_INV_R_OK);
	RT_EQ_STR(RS_STR("HGET", RS_KEY, "app/h"), "ok");
	RT_EQ_STR(RS_STR("HGET", RS_KEY, "__classification"), "1");
	RT_EQ_INT(RS_INT("PTTL", RS_KEY), -1);
	rs_teardown();
}

/* Retained (acknowledged and retained earlier): inert for both parts. */
static void test_shared__claim_start_retained_inert(void)
{
	struct rs_cs_wait w;
	char *before, *after;

	rs_setup();
	RT_EQ_INT(RS_INT("HSET", RS_KEY, "app/h", "ok"), 1);
	RT_EQ_INT(RS_INT("HSET", RS_KEY, "__terminal", "1"), 1);
	RT_EQ_INT(RS_INT("PEXPIRE", RS_KEY, "100000"), 1);
	before = rs_snapshot(RS_KEY);
	RT_EQ_INT(rs_claim_start("app/x", RS_NOW, 6000, &w), 0);
	RT_EQ_INT(w.cls.result, RELAY_INV_R_RETAINED);
	RT_EQ_INT(w.start.result, RELAY_INV_R_RETAINED);
	after = rs_snapshot(RS_KEY);
	RT_EQ_STR(after, before);
	RT_CHECK(RS_INT("PTTL", RS_KEY) > 0);
	free(after);
	free(before);
	rs_teardown();
}

/* A key of another type: an error for both parts, nothing written. */
static void test_shared__claim_start_wrong_type(void)
{
	struct rs_cs_wait w;

	rs_setup();
	RT_EQ_STR(RS_STR("SET", RS_KEY, "x"), "OK");
	RT_CHECK(rs_claim_start("app/h", RS_NOW, 6000, &w) != 0);
	RT_EQ_STR(RS_STR("GET", RS_KEY), "x");
	rs_teardown();
}

#define RS_CLAIM_START_CASES                                             \
	RT_CASE(test_shared__claim_start_fresh),                         \
	RT_CASE(test_shared__claim_start_redelivery),                    \
	RT_CASE(test_shared__claim_start_terminal_field),                \
	RT_CASE(test_shared__claim_start_retained_inert),                \
	RT_CASE(test_shared__claim_start_wrong_type)

#endif /* RS_SUITE_CLAIM_START_H */
