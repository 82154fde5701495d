/*
 * tests/redis/suite_dlq_iter.h - the DLQ filter and iterator
 * (relay_dlq_filter, relay_dlq_iter; relay/dlq.h): paging boundaries in
 * both orders, --limit, every filter, malformed entries (matched by id,
 * or undecided under a filter on fields), several DLQs, a key of another
 * type. Part of the shared backend suite (memory and a real
 * redis-server); included by suite.h only.
 */
#ifndef RS_SUITE_DLQ_ITER_H
#define RS_SUITE_DLQ_ITER_H

#define RS_DLQ2 "relay:other:dlq"

/*
 * Entry i (1-based) of the sample DLQ, written as relay writes it
 * (redis-layout.md R-5) with the id "<1796385600000 + i * 60000>-0":
 * apps a/b alternate (odd a, even b), handler h<i % 3>, reason "boom i",
 * timestamp = the id's time, original id "100-<i>".
 */
static void it_put(const char *key, int i)
{
	char id[32], ts[40], reason[32], handler[8], orig[24];
	relay_redis_reply *r;
	int64_t ms = INT64_C(1796385600000) + (int64_t)i * 60000;

	snprintf(id, sizeof(id), "%lld-0", (long long)ms);
	relay_dlq_timestamp(ms, ts, sizeof(ts));
	snprintf(reason, sizeof(reason), "boom %d", i);
	snprintf(handler, sizeof(handler), "h%d", i % 3);
	snprintf(orig, sizeof(orig), "100-%d", i);
	r = RS_CMD("XADD", key, id, "original_stream", "events",
		   "original_id", orig, "group", "g", "consumer", "c",
		   "event", "{}", "reason", reason, "app", i % 2 ? "a" : "b",
		   "handler", handler, "deliveries", "1", "handler_attempts",
		   "1", "timestamp", ts);
	RT_ASSERT(r && r->type == RELAY_REDIS_REPLY_STRING);
	relay_redis_reply_free(r);
}

/* A malformed entry i (a field relay does not know, no others). */
static void it_put_bad(const char *key, int i)
{
	char id[32];
	relay_redis_reply *r;
	int64_t ms = INT64_C(1796385600000) + (int64_t)i * 60000;

	snprintf(id, sizeof(id), "%lld-0", (long long)ms);
	r = RS_CMD("XADD", key, id, "bogus", "1");
	RT_ASSERT(r && r->type == RELAY_REDIS_REPLY_STRING);
	relay_redis_reply_free(r);
}

/*
 * The numbers i of what an iterator over @keys with @f returns, as a
 * string "1 2 3"; a malformed item is "!i", an undecided one "?i", an
 * item of the second key "2:i". @page 0: the default.
 */
static const char *it_walk(const char *const *keys, size_t nkeys,
			   const relay_dlq_filter *f, relay_dlq_order order,
			   size_t page)
{
	static char out[1024];
	relay_dlq_iter *it = NULL;
	relay_dlq_item item;
	relay_error err;
	size_t n = 0;
	int rc;

	out[0] = '\0';
	RT_ASSERT(relay_dlq_iter_open(&it, rs_b, keys, nkeys, f, order) == 0);
	if (page)
		RT_EQ_INT(relay_dlq_iter_page(it, page), 0);
	while ((rc = relay_dlq_iter_next(it, &item, &err)) == 1) {
		long long ms = strtoll(item.id, NULL, 10);
		int i = (int)((ms - INT64_C(1796385600000)) / 60000);

		RT_CHECK((item.kind == RELAY_DLQ_ITEM_ENTRY) ==
			 (item.rec != NULL));
		RT_CHECK((item.kind == RELAY_DLQ_ITEM_ENTRY) ==
			 (item.error == NULL));
		RT_CHECK(item.raw != NULL);
		n += (size_t)snprintf(out + n, sizeof(out) - n, "%s%s%s%d",
				      n ? " " : "",
				      item.key ? "2:" : "",
				      item.kind == RELAY_DLQ_ITEM_MALFORMED
				      ? "!" : item.kind ==
				      RELAY_DLQ_ITEM_UNDECIDED ? "?" : "", i);
		if (n >= sizeof(out))
			break;
	}
	RT_EQ_INT(rc, 0);
	/* The end stays the end. */
	RT_EQ_INT(relay_dlq_iter_next(it, &item, &err), 0);
	relay_dlq_iter_close(it);
	return out;
}

static const char *const it_key[] = { RS_DLQ, RS_DLQ2 };

static void test_shared__dlq_iter_pages_both_orders(void)
{
	static const size_t pages[] = { 1, 2, 3, 6, 7, 500 };
	size_t p;
	int i;

	rs_setup();
	RT_EQ_STR(it_walk(it_key, 1, NULL, RELAY_DLQ_OLDEST_FIRST, 0), "");
	for (i = 1; i <= 6; i++)
		it_put(RS_DLQ, i);
	/* A page size that divides the DLQ, one that does not, one entry,
	 * all of it, more than all of it. */
	for (p = 0; p < RT_NCASES(pages); p++) {
		RT_EQ_STR(it_walk(it_key, 1, NULL, RELAY_DLQ_OLDEST_FIRST,
				  pages[p]), "1 2 3 4 5 6");
		RT_EQ_STR(it_walk(it_key, 1, NULL, RELAY_DLQ_NEWEST_FIRST,
				  pages[p]), "6 5 4 3 2 1");
	}
	rs_teardown();
}

static void test_shared__dlq_iter_limit(void)
{
	relay_dlq_filter *f;
	relay_dlq_iter *it;
	relay_dlq_item item;
	int i;

	rs_setup();
	for (i = 1; i <= 6; i++)
		it_put(RS_DLQ, i);
	RT_ASSERT(relay_dlq_filter_new(&f) == 0);
	relay_dlq_filter_limit(f, 2);
	RT_EQ_STR(it_walk(it_key, 1, f, RELAY_DLQ_OLDEST_FIRST, 1), "1 2");
	RT_EQ_STR(it_walk(it_key, 1, f, RELAY_DLQ_NEWEST_FIRST, 0), "6 5");
	/* The limit counts matches, after the other filters. */
	RT_EQ_INT(relay_dlq_filter_app(f, "b"), 0);
	RT_EQ_STR(it_walk(it_key, 1, f, RELAY_DLQ_OLDEST_FIRST, 1), "2 4");
	relay_dlq_filter_limit(f, 10);
	RT_EQ_STR(it_walk(it_key, 1, f, RELAY_DLQ_OLDEST_FIRST, 2), "2 4 6");
	RT_ASSERT(relay_dlq_iter_open(&it, rs_b, it_key, 1, f,
				      RELAY_DLQ_OLDEST_FIRST) == 0);
	RT_EQ_INT(relay_dlq_iter_next(it, &item, NULL), 1);
	RT_EQ_STR(item.rec->e.app, "b");
	RT_EQ_INT((long long)relay_dlq_iter_matched(it), 1);
	relay_dlq_iter_close(it);
	relay_dlq_filter_free(f);
	rs_teardown();
}

/* Each filter alone, on entries 1..6 (oldest first). */
static void test_shared__dlq_iter_each_filter(void)
{
	relay_clock_fixed clock;
	relay_dlq_filter *f;
	relay_error err;
	int i;

	rs_setup();
	for (i = 1; i <= 6; i++)
		it_put(RS_DLQ, i);
#define WALK(f) it_walk(it_key, 1, f, RELAY_DLQ_OLDEST_FIRST, 2)
	RT_ASSERT(relay_dlq_filter_new(&f) == 0);
	RT_EQ_INT(relay_dlq_filter_app(f, "a"), 0);
	RT_EQ_INT(relay_dlq_filter_app(f, "b"), RELAY_EINVAL);  /* twice */
	RT_EQ_STR(WALK(f), "1 3 5");
	relay_dlq_filter_free(f);

	RT_ASSERT(relay_dlq_filter_new(&f) == 0);
	RT_EQ_INT(relay_dlq_filter_handler(f, "h0"), 0);
	RT_EQ_STR(WALK(f), "3 6");
	relay_dlq_filter_free(f);

	RT_ASSERT(relay_dlq_filter_new(&f) == 0);
	RT_EQ_INT(relay_dlq_filter_reason(f, "^boom [2-4]$", &err), 0);
	RT_EQ_STR(WALK(f), "2 3 4");
	relay_dlq_filter_free(f);
	RT_ASSERT(relay_dlq_filter_new(&f) == 0);
	RT_EQ_INT(relay_dlq_filter_reason(f, "(", &err), RELAY_EPARSE);
	RT_CHECK(strstr(err.text, "regular expression") != NULL);
	relay_dlq_filter_free(f);

	/* --since 3m --until 1m at entry 6's time: entries 3..5, by the
	 * filter's clock. */
	relay_clock_fixed_init(&clock, INT64_C(1796385600000) + 6 * 60000);
	RT_ASSERT(relay_dlq_filter_new(&f) == 0);
	relay_dlq_filter_clock(f, &clock.parent);
	RT_EQ_INT(relay_dlq_filter_since(f, "3m", &err), 0);
	RT_EQ_INT(relay_dlq_filter_until(f, "1m", &err), 0);
	RT_EQ_STR(WALK(f), "3 4 5");
	clock.wall += 60000;  /* a minute later, the window moves */
	RT_EQ_STR(WALK(f), "4 5 6");
	RT_EQ_INT(relay_dlq_filter_check(f, &err), 0);
	relay_dlq_filter_free(f);
	RT_ASSERT(relay_dlq_filter_new(&f) == 0);
	RT_EQ_INT(relay_dlq_filter_since(f, "2026-12-04T12:05:00Z", &err), 0);
	RT_EQ_INT(relay_dlq_filter_until(f, "2026-12-04T12:02:00Z", &err), 0);
	RT_EQ_INT(relay_dlq_filter_check(f, &err), RELAY_EINVAL);
	RT_EQ_STR(WALK(f), "");
	relay_dlq_filter_free(f);
	RT_ASSERT(relay_dlq_filter_new(&f) == 0);
	RT_EQ_INT(relay_dlq_filter_since(f, "yesterday", &err),
		  RELAY_EPARSE);
	relay_dlq_filter_free(f);

	/* --id, repeatable; "MS" is "MS-0"; the range is read, not all. */
	RT_ASSERT(relay_dlq_filter_new(&f) == 0);
	RT_EQ_INT(relay_dlq_filter_id(f, "1796385900000"), 0);     /* 5 */
	RT_EQ_INT(relay_dlq_filter_id(f, "1796385720000-0"), 0);   /* 2 */
	RT_EQ_INT(relay_dlq_filter_id(f, "x"), RELAY_EINVAL);
	RT_EQ_STR(WALK(f), "2 5");
	RT_EQ_STR(it_walk(it_key, 1, f, RELAY_DLQ_NEWEST_FIRST, 1), "5 2");
	relay_dlq_filter_free(f);

	RT_ASSERT(relay_dlq_filter_new(&f) == 0);
	RT_EQ_INT(relay_dlq_filter_original_id(f, "100-4"), 0);
	RT_EQ_INT(relay_dlq_filter_original_id(f, "100-1"), 0);
	RT_EQ_STR(WALK(f), "1 4");
	relay_dlq_filter_free(f);
#undef WALK
	rs_teardown();
}

/*
 * Malformed entries: matched by id alone (and counted against the
 * limit), or undecided under a filter on fields (reported, never
 * counted: the one rule every relayctl dlq command follows).
 */
static void test_shared__dlq_iter_malformed(void)
{
	relay_dlq_filter *f;
	relay_error err;
	int i;

	rs_setup();
	for (i = 1; i <= 6; i++) {
		if (i == 2 || i == 4)
			it_put_bad(RS_DLQ, i);
		else
			it_put(RS_DLQ, i);
	}
#define WALK(f) it_walk(it_key, 1, f, RELAY_DLQ_OLDEST_FIRST, 2)
	RT_EQ_STR(WALK(NULL), "1 !2 3 !4 5 6");
	RT_ASSERT(relay_dlq_filter_new(&f) == 0);
	relay_dlq_filter_limit(f, 3);
	RT_EQ_STR(WALK(f), "1 !2 3");
	RT_EQ_INT(relay_dlq_filter_app(f, "a"), 0);
	/* Undecided items take no place: three matches, 1 3 5. */
	RT_EQ_STR(WALK(f), "1 ?2 3 ?4 5");
	RT_EQ_STR(it_walk(it_key, 1, f, RELAY_DLQ_NEWEST_FIRST, 1),
		  "5 ?4 3 ?2 1");
	relay_dlq_filter_limit(f, 1);
	RT_EQ_STR(WALK(f), "1");
	relay_dlq_filter_malformed(f, RELAY_DLQ_MALFORMED_NONE);
	relay_dlq_filter_limit(f, 0);
	RT_EQ_STR(WALK(f), "1 3 5");
	relay_dlq_filter_malformed(f, RELAY_DLQ_MALFORMED_ONLY);
	RT_EQ_INT(relay_dlq_filter_check(f, &err), RELAY_EINVAL);
	relay_dlq_filter_free(f);
	RT_ASSERT(relay_dlq_filter_new(&f) == 0);
	relay_dlq_filter_malformed(f, RELAY_DLQ_MALFORMED_ONLY);
	RT_EQ_INT(relay_dlq_filter_check(f, &err), 0);
	RT_EQ_STR(WALK(f), "!2 !4");
	RT_EQ_INT(relay_dlq_filter_id(f, "1796385840000-0"), 0);
	RT_EQ_STR(WALK(f), "!4");
	relay_dlq_filter_free(f);
#undef WALK
	rs_teardown();
}

/* Several DLQs: one after the other; the limit counts over all. */
static void test_shared__dlq_iter_several_keys(void)
{
	relay_dlq_filter *f;
	relay_dlq_iter *it;
	relay_dlq_item item;
	relay_error err;
	int i;

	rs_setup();
	for (i = 1; i <= 3; i++)
		it_put(RS_DLQ, i);
	for (i = 4; i <= 5; i++)
		it_put(RS_DLQ2, i);
	RT_EQ_STR(it_walk(it_key, 2, NULL, RELAY_DLQ_OLDEST_FIRST, 2),
		  "1 2 3 2:4 2:5");
	RT_EQ_STR(it_walk(it_key, 2, NULL, RELAY_DLQ_NEWEST_FIRST, 3),
		  "3 2 1 2:5 2:4");
	RT_ASSERT(relay_dlq_filter_new(&f) == 0);
	relay_dlq_filter_limit(f, 4);
	RT_EQ_STR(it_walk(it_key, 2, f, RELAY_DLQ_OLDEST_FIRST, 0),
		  "1 2 3 2:4");
	relay_dlq_filter_free(f);
	/* A DLQ key of another type: an error, reported, not a crash. */
	RT_EQ_STR(RS_STR("SET", RS_DLQ2, "x"), "OK");
	RT_ASSERT(relay_dlq_iter_open(&it, rs_b, it_key, 2, NULL,
				      RELAY_DLQ_OLDEST_FIRST) == 0);
	for (i = 0; i < 3; i++)
		RT_EQ_INT(relay_dlq_iter_next(it, &item, &err), 1);
	RT_CHECK(relay_dlq_iter_next(it, &item, &err) < 0);
	RT_CHECK(strstr(err.text, RS_DLQ2) != NULL);
	RT_CHECK(relay_dlq_iter_next(it, &item, &err) < 0);
	relay_dlq_iter_close(it);
	RT_EQ_INT(relay_dlq_iter_open(&it, rs_b, it_key, 0, NULL,
				      RELAY_DLQ_OLDEST_FIRST), RELAY_EINVAL);
	rs_teardown();
}

#define RS_DLQ_ITER_CASES                                                \
	RT_CASE(test_shared__dlq_iter_pages_both_orders),                \
	RT_CASE(test_shared__dlq_iter_limit),                            \
	RT_CASE(test_shared__dlq_iter_each_filter),                      \
	RT_CASE(test_shared__dlq_iter_malformed),                        \
	RT_CASE(test_shared__dlq_iter_several_keys)

#endif /* RS_SUITE_DLQ_ITER_H */
