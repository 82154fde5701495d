/*
 * tests/redis/suite_inv.h - invocation-state cases: eligibility,
 * fencing, persistence and retention.
 * Part of the shared backend suite; included by suite.h only.
 */
#ifndef RS_SUITE_INV_H
#define RS_SUITE_INV_H

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

/*
 * The engine's scaled backoff goes through the same argument list as
 * relay_inv_record_failure() (librelay/invops/, its one builder): the
 * given backoff is stored, a backoff below 1 ms is refused before
 * anything is sent.
 */
static void test_shared__record_failure_given_backoff(void)
{
	struct rs_wait w = { 0 };
	relay_inv_outcome o;
	char val[128];

	rs_setup();
	RT_ASSERT(rs_try("a/h", RS_NOW, 6000, &o) == 0);
	RT_EQ_INT(relay__inv_record_failure_ms(rs_b, RS_KEY, "a/h", 1,
					       o.token, RS_NOW, 0, NULL,
					       rs_inv_cb, &w), RELAY_EINVAL);
	RT_CHECK(!w.done);
	RT_EQ_INT(rs_finish(&w, relay__inv_record_failure_ms(
				    rs_b, RS_KEY, "a/h", 1, o.token, RS_NOW,
				    1234, NULL, rs_inv_cb, &w), &o), 0);
	RT_EQ_INT(o.result, RELAY_INV_R_RECORDED);
	RT_EQ_INT(o.deadline_ms, RS_NOW + 1234);
	snprintf(val, sizeof(val), "next_attempt_at:%lld:1:%s",
		 (long long)(RS_NOW + 1234), o.token);
	RT_EQ_STR(RS_STR("HGET", RS_KEY, "a/h"), val);
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

#endif /* RS_SUITE_INV_H */
