/*
 * tests/redis/suite_dlq.h - DLQ cases: persist, idempotency,
 * races, partial writes, list/get/delete.
 * Part of the shared backend suite; included by suite.h only.
 */
#ifndef RS_SUITE_DLQ_H
#define RS_SUITE_DLQ_H

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
	{
		/* the next page: exclusive start after the last id shown */
		char next[80];
		relay_dlq_record *page = NULL;
		size_t m = 0;

		RT_ASSERT(n == 1);
		snprintf(next, sizeof(next), "(%s", recs[0].id);
		RT_EQ_INT(relay_dlq_list_sync(rs_b, RS_DLQ, next, 10, &page,
					      &m, &err), 0);
		RT_EQ_INT(m, 1);
		if (m == 1)
			RT_CHECK(strcmp(page[0].id, recs[0].id) != 0);
		relay_dlq_records_free(page, m);
	}
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

#endif /* RS_SUITE_DLQ_H */
