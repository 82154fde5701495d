/*
 * tests/redis/suite_sched.h - shared cases (suite.h) for the schedule
 * scripts: SCHEDULE_PUBLISH (one stream entry per occurrence, marker with
 * its TTL, duplicates write nothing) and the admission pin of
 * CLAIM_CLASSIFICATION (stored once, returned to every later claim,
 * inert once retained; through its one owner in librelay/invops/).
 */
#ifndef RS_SUITE_SCHED_H
#define RS_SUITE_SCHED_H

#include "redis/backend.h"

#define RS_OCC "relay:events:schedule:schedule:a:nightly:2026-12-02T03:00:00Z"
#define RS_STREAM "events"

struct rs_raw {
	int done;
	int status;
	relay_redis_reply *r;
};

static void rs_raw_cb(relay_redis_backend *b, int status,
		      relay_redis_reply *r, void *p)
{
	struct rs_raw *w = p;

	(void)b;
	RT_CHECK(!w->done);
	w->done = 1;
	w->status = status;
	w->r = r;
}

/* Run one script; returns the reply (owned) or NULL. */
static relay_redis_reply *rs_script(relay_redis_script op, int numkeys,
				    int argc, const char **argv)
{
	struct rs_raw w = { 0 };
	int rc;

	rc = relay__redis_script(rs_b, op, numkeys, argc, argv, NULL,
				 rs_raw_cb, &w);
	RT_EQ_INT(rc, 0);
	if (rc)
		return NULL;
	RT_EQ_INT(relay_redis_sync_wait(rs_b, &w.done), 0);
	RT_EQ_INT(w.status, 0);
	return w.r;
}

/* Element @i of a 4-element reply as a string ("" when not one). */
static const char *rs_el(const relay_redis_reply *r, size_t i)
{
	if (!r || r->type != RELAY_REDIS_REPLY_ARRAY || r->elements != 4 ||
	    r->element[i]->type != RELAY_REDIS_REPLY_STRING)
		return "";
	return r->element[i]->str;
}

static void test_shared__schedule_publish_once(void)
{
	static const char env[] = "{\"source\":\"relay.schedule\"}";
	const char *argv[4] = { RS_OCC, RS_STREAM, "604800000", env };
	relay_redis_reply *r, *x;
	char id[64];
	long long ttl;
	int i;

	rs_setup();
	r = rs_script(RELAY_REDIS_SCRIPT_SCHEDULE_PUBLISH, 2, 4, argv);
	RT_EQ_STR(rs_el(r, 0), "published");
	snprintf(id, sizeof(id), "%s", rs_el(r, 3));
	RT_CHECK(strchr(id, '-') != NULL);
	relay_redis_reply_free(r);
	for (i = 0; i < 3; i++) {
		r = rs_script(RELAY_REDIS_SCRIPT_SCHEDULE_PUBLISH, 2, 4, argv);
		RT_EQ_STR(rs_el(r, 0), "duplicate");
		RT_EQ_STR(rs_el(r, 3), "");
		relay_redis_reply_free(r);
	}
	RT_EQ_INT((int)RS_INT("XLEN", RS_STREAM), 1);
	x = RS_CMD("XRANGE", RS_STREAM, "-", "+");
	RT_CHECK(x && x->elements == 1);
	if (x && x->elements == 1) {
		relay_redis_reply *e = x->element[0];

		RT_EQ_STR(e->element[0]->str, id);
		RT_EQ_INT((int)e->element[1]->elements, 2);
		RT_EQ_STR(e->element[1]->element[0]->str, "event");
		RT_EQ_STR(e->element[1]->element[1]->str, env);
	}
	relay_redis_reply_free(x);
	ttl = RS_INT("PTTL", RS_OCC);
	RT_CHECK(ttl > 604000000LL && ttl <= 604800000LL);
	/* A marker gone (expired) publishes again. */
	RT_EQ_INT((int)RS_INT("DEL", RS_OCC), 1);
	r = rs_script(RELAY_REDIS_SCRIPT_SCHEDULE_PUBLISH, 2, 4, argv);
	RT_EQ_STR(rs_el(r, 0), "published");
	relay_redis_reply_free(r);
	RT_EQ_INT((int)RS_INT("XLEN", RS_STREAM), 2);
	rs_teardown();
}

/*
 * The upgrade window on a single node (doc/redis-layout.md R-7): with the
 * pre-cluster marker as a third key, an occurrence an older version
 * published under that name is a duplicate, and a new publication writes
 * both names (so an older version still running sees it too).
 */
static void test_shared__schedule_publish_legacy_marker(void)
{
	static const char old[] = "relay:schedule:schedule:a:s:t";
	const char *argv[5] = { RS_OCC, RS_STREAM, old, "604800000", "{}" };
	relay_redis_reply *r;
	long long ttl;

	rs_setup();
	(void)RS_STR("SET", old, "1");
	r = rs_script(RELAY_REDIS_SCRIPT_SCHEDULE_PUBLISH, 3, 5, argv);
	RT_EQ_STR(rs_el(r, 0), "duplicate");
	relay_redis_reply_free(r);
	RT_EQ_INT((int)RS_INT("EXISTS", RS_STREAM), 0);
	RT_EQ_INT((int)RS_INT("EXISTS", RS_OCC), 0);
	RT_EQ_INT((int)RS_INT("DEL", old), 1);
	r = rs_script(RELAY_REDIS_SCRIPT_SCHEDULE_PUBLISH, 3, 5, argv);
	RT_EQ_STR(rs_el(r, 0), "published");
	relay_redis_reply_free(r);
	RT_EQ_INT((int)RS_INT("XLEN", RS_STREAM), 1);
	ttl = RS_INT("PTTL", old);
	RT_CHECK(ttl > 604000000LL && ttl <= 604800000LL);
	ttl = RS_INT("PTTL", RS_OCC);
	RT_CHECK(ttl > 604000000LL && ttl <= 604800000LL);
	/* The new name alone also decides. */
	RT_EQ_INT((int)RS_INT("DEL", old), 1);
	r = rs_script(RELAY_REDIS_SCRIPT_SCHEDULE_PUBLISH, 3, 5, argv);
	RT_EQ_STR(rs_el(r, 0), "duplicate");
	relay_redis_reply_free(r);
	RT_EQ_INT((int)RS_INT("XLEN", RS_STREAM), 1);
	rs_teardown();
}

/* A stream key of the wrong type: an error reply, and no marker (the
 * occurrence can be published once the key is fixed). */
static void test_shared__schedule_publish_wrong_type(void)
{
	const char *argv[4] = { RS_OCC, RS_STREAM, "604800000", "{}" };
	relay_redis_reply *r;

	rs_setup();
	(void)RS_STR("SET", RS_STREAM, "x");
	r = rs_script(RELAY_REDIS_SCRIPT_SCHEDULE_PUBLISH, 2, 4, argv);
	RT_CHECK(r && r->type == RELAY_REDIS_REPLY_ERROR);
	RT_CHECK(r && r->str && strstr(r->str, "WRONGTYPE") != NULL);
	relay_redis_reply_free(r);
	RT_EQ_INT((int)RS_INT("EXISTS", RS_OCC), 0);
	rs_teardown();
}

static void test_shared__classification_pin(void)
{
	const char *argv[2] = { RS_KEY, "6000:4:tick" };
	relay_redis_reply *r;

	rs_setup();
	r = rs_script(RELAY_REDIS_SCRIPT_CLAIM_CLASSIFICATION, 1, 2, argv);
	RT_EQ_STR(rs_el(r, 0), "claimed");
	RT_EQ_STR(rs_el(r, 3), "6000:4:tick");
	relay_redis_reply_free(r);
	/* A later claim with another pin gets the first one back. */
	argv[1] = "9000:0:tock";
	r = rs_script(RELAY_REDIS_SCRIPT_CLAIM_CLASSIFICATION, 1, 2, argv);
	RT_EQ_STR(rs_el(r, 0), "already");
	RT_EQ_STR(rs_el(r, 3), "6000:4:tick");
	relay_redis_reply_free(r);
	/* Without a pin: the stored one, unchanged. */
	r = rs_script(RELAY_REDIS_SCRIPT_CLAIM_CLASSIFICATION, 1, 1, argv);
	RT_EQ_STR(rs_el(r, 0), "already");
	RT_EQ_STR(rs_el(r, 3), "6000:4:tick");
	relay_redis_reply_free(r);
	RT_EQ_STR(RS_STR("HGET", RS_KEY, "__schedule"), "6000:4:tick");
	RT_EQ_INT((int)RS_INT("PTTL", RS_KEY), -1);
	/* Retained: inert, nothing returned, nothing written. */
	(void)RS_INT("HSET", RS_KEY, "__terminal", "1");
	(void)RS_INT("HDEL", RS_KEY, "__schedule");
	r = rs_script(RELAY_REDIS_SCRIPT_CLAIM_CLASSIFICATION, 1, 2, argv);
	RT_EQ_STR(rs_el(r, 0), "retained");
	RT_EQ_STR(rs_el(r, 3), "");
	relay_redis_reply_free(r);
	RT_EQ_STR(RS_STR("HGET", RS_KEY, "__schedule"), "(nil)");
	/* No pin on an ordinary event: no __schedule field. */
	(void)RS_INT("DEL", RS_KEY);
	r = rs_script(RELAY_REDIS_SCRIPT_CLAIM_CLASSIFICATION, 1, 1, argv);
	RT_EQ_STR(rs_el(r, 0), "claimed");
	RT_EQ_STR(rs_el(r, 3), "");
	relay_redis_reply_free(r);
	RT_EQ_INT((int)RS_INT("HEXISTS", RS_KEY, "__schedule"), 0);
	rs_teardown();
}

struct rs_pin_wait {
	int done;
	int status;
	relay_inv_outcome o;
	char pin[160];
};

static void rs_pin_cb(int status, const relay_inv_outcome *o,
		      const char *pin, size_t len, void *p)
{
	struct rs_pin_wait *w = p;

	RT_CHECK(!w->done);
	w->done = 1;
	w->status = status;
	if (o)
		w->o = *o;
	RT_CHECK((status == 0) == (pin != NULL));
	if (pin && len < sizeof(w->pin)) {
		memcpy(w->pin, pin, len);
		w->pin[len] = '\0';
	}
}

static int rs_claim_pin(const char *pin, struct rs_pin_wait *w)
{
	int rc;

	memset(w, 0, sizeof(*w));
	rc = relay__inv_claim_classification_pin(rs_b, RS_KEY, pin,
						 rs_pin_cb, w);
	if (rc)
		return rc;
	RT_EQ_INT(relay_redis_sync_wait(rs_b, &w->done), 0);
	return w->status;
}

/*
 * claim_classification has one argument list and one reply parser
 * (librelay/invops/inv_ops.c) for both callers: the engine's, with a pin,
 * gets the stored pin back byte-exact however long it is; the public
 * relay_inv_claim_classification() on the same hash reads the stored pin
 * as what it is (not a token: the outcome's token stays ""), so a pin
 * longer than a token is no parse error.
 */
static void test_shared__classification_pin_one_parser(void)
{
	static const char pin[] = "300000:10:"
		"a_handler_whose_name_is_longer_than_a_token";
	struct rs_pin_wait w;
	struct rs_wait pw = { 0 };
	relay_inv_outcome o;

	rs_setup();
	RT_EQ_INT(rs_claim_pin(pin, &w), 0);
	RT_EQ_INT(w.o.result, RELAY_INV_R_CLAIMED);
	RT_EQ_STR(w.pin, pin);
	RT_EQ_STR(w.o.token, "");
	RT_EQ_INT(rs_claim_pin(NULL, &w), 0);
	RT_EQ_INT(w.o.result, RELAY_INV_R_ALREADY);
	RT_EQ_STR(w.pin, pin);
	RT_EQ_INT(rs_finish(&pw, relay_inv_claim_classification(
				    rs_b, RS_KEY, rs_inv_cb, &pw), &o), 0);
	RT_EQ_INT(o.result, RELAY_INV_R_ALREADY);
	RT_EQ_STR(o.token, "");
	RT_EQ_STR(RS_STR("HGET", RS_KEY, "__schedule"), pin);
	/* An ordinary event: no pin stored, "" handed back. */
	(void)RS_INT("DEL", RS_KEY);
	RT_EQ_INT(rs_claim_pin(NULL, &w), 0);
	RT_EQ_INT(w.o.result, RELAY_INV_R_CLAIMED);
	RT_EQ_STR(w.pin, "");
	RT_EQ_INT((int)RS_INT("HEXISTS", RS_KEY, "__schedule"), 0);
	rs_teardown();
}

#endif /* RS_SUITE_SCHED_H */
