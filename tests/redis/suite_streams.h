/*
 * tests/redis/suite_streams.h - stream, group, PEL and TTL cases,
 * raw and through the typed API.
 * Part of the shared backend suite; included by suite.h only.
 */
#ifndef RS_SUITE_STREAMS_H
#define RS_SUITE_STREAMS_H

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

#endif /* RS_SUITE_STREAMS_H */
