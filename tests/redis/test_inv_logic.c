/*
 * test_inv_logic.c - the pure, I/O-free parts of inv and dlq: field value
 * grammar, decisions, backoff table, key encoding, tokens, DLQ reason
 * texts, entry validation and strict parsing, REDIS_URI parsing.
 */
#include <string.h>

#include "relaytest.h"

#include "backend.h"
#include "common.h"
#include "inv.h"

#define TOK_A "0123456789abcdef0123456789abcdef"
#define TOK_B "fedcba9876543210fedcba9876543210"

static void test_inv__parse_valid(void)
{
	relay_inv_state s;
	char buf[96];
	const char *ok[] = {
		"ok", "running:1700000000000:1:" TOK_A,
		"next_attempt_at:5:12:" TOK_B, "exhausted:5:" TOK_A,
		"exhausted:5:" TOK_A ":dlq",
	};
	size_t i;

	for (i = 0; i < RT_NCASES(ok); i++) {
		RT_EQ_INT(relay_inv_state_parse(&s, ok[i], strlen(ok[i])), 0);
		RT_CHECK(relay_inv_state_format(&s, buf, sizeof(buf)) > 0);
		RT_EQ_STR(buf, ok[i]);
	}
	relay_inv_state_parse(&s, ok[1], strlen(ok[1]));
	RT_EQ_INT(s.kind, RELAY_INV_RUNNING);
	RT_EQ_INT(s.deadline_ms, 1700000000000LL);
	RT_EQ_INT(s.attempt, 1);
	RT_EQ_STR(s.token, TOK_A);
	relay_inv_state_parse(&s, ok[4], strlen(ok[4]));
	RT_EQ_INT(s.kind, RELAY_INV_EXHAUSTED);
	RT_EQ_INT(s.dlq, 1);
	RT_EQ_INT(relay_inv_state_parse(&s, NULL, 0), 0);
	RT_EQ_INT(s.kind, RELAY_INV_ABSENT);
}

static void test_inv__parse_rejects(void)
{
	const char *bad[] = {
		"", "OK", "ok ", "running", "running:1:1", "running:1:0:" TOK_A,
		"running:-1:1:" TOK_A, "running:1:1:" TOK_A ":x",
		"running:1:1:0123456789ABCDEF0123456789ABCDEF",
		"running:1:1:0123", "next_attempt_at:x:1:" TOK_A,
		"exhausted:1:" TOK_A ":dlqx", "exhausted:0:" TOK_A,
		"exhausted:1", "done:1:1:" TOK_A, "running:1:1:" TOK_A ":",
		"running:1234567890123456789:1:" TOK_A,
	};
	relay_inv_state s;
	size_t i;

	for (i = 0; i < RT_NCASES(bad); i++) {
		RT_EQ_INT(relay_inv_state_parse(&s, bad[i], strlen(bad[i])),
			  RELAY_EPARSE);
		RT_EQ_INT(s.kind, RELAY_INV_INVALID);
	}
}

static void test_inv__backoff_table(void)
{
	RT_EQ_INT(relay_inv_backoff_ms(1), 60000);
	RT_EQ_INT(relay_inv_backoff_ms(2), 120000);
	RT_EQ_INT(relay_inv_backoff_ms(3), 300000);
	RT_EQ_INT(relay_inv_backoff_ms(4), 600000);
	RT_EQ_INT(relay_inv_backoff_ms(5), 600000);
	RT_EQ_INT(relay_inv_backoff_ms(100), 600000);
}

static void test_inv__claim_deadline_capped(void)
{
	RT_EQ_INT(relay_inv_claim_deadline(1000, 20000), 21000);
	RT_EQ_INT(relay_inv_claim_deadline(1000, 300000), 301000);
	RT_EQ_INT(relay_inv_claim_deadline(1000, 300001), 301000);
	RT_EQ_INT(relay_inv_claim_deadline(1000, 0), 301000);
}

static void test_inv__key_encoding(void)
{
	char *k = relay_inv_key("ev:ents", "g%1", "1-0");

	RT_EQ_STR(k, "relay:invocation:ev%3Aents:g%251:1-0");
	relay_free(k);
	k = relay_inv_key("%:", "{orders}", "1700000000000-12");
	RT_EQ_STR(k, "relay:invocation:%25%3A:{orders}:1700000000000-12");
	relay_free(k);
}

static void test_inv__token_is_128_bit_hex(void)
{
	char a[33], b[33];
	size_t i;

	RT_EQ_INT(relay_inv_token(a), 0);
	RT_EQ_INT(relay_inv_token(b), 0);
	RT_EQ_INT(strlen(a), 32);
	for (i = 0; i < 32; i++)
		RT_CHECK((a[i] >= '0' && a[i] <= '9') ||
			 (a[i] >= 'a' && a[i] <= 'f'));
	RT_CHECK(strcmp(a, b) != 0);
}

static void test_inv__decide_matrix(void)
{
	relay_inv_state cur, next;
	relay_inv_outcome o;
	const char *v;

	/* absent → claim attempt 1 */
	relay_inv_state_parse(&cur, NULL, 0);
	RT_EQ_INT(relay__inv_decide_try_start(&cur, 1000, 6000, TOK_A, &o,
					      &next), 1);
	RT_EQ_INT(o.result, RELAY_INV_R_CLAIMED);
	RT_EQ_INT(next.attempt, 1);
	RT_EQ_INT(next.deadline_ms, 7000);
	/* running in the future → protected */
	v = "running:5000:2:" TOK_B;
	relay_inv_state_parse(&cur, v, strlen(v));
	RT_EQ_INT(relay__inv_decide_try_start(&cur, 4999, 6000, TOK_A, &o,
					      &next), 0);
	RT_EQ_INT(o.result, RELAY_INV_R_RUNNING);
	RT_EQ_INT(o.deadline_ms, 5000);
	/* deadline == now counts as elapsed */
	RT_EQ_INT(relay__inv_decide_try_start(&cur, 5000, 6000, TOK_A, &o,
					      &next), 1);
	RT_EQ_INT(next.attempt, 3);
	/* stale failure never overwrites ok */
	relay_inv_state_parse(&cur, "ok", 2);
	RT_EQ_INT(relay__inv_decide_failure(&cur, 1, TOK_A, 1, 1, &o, &next),
		  0);
	RT_EQ_INT(o.result, RELAY_INV_R_STALE);
	/* success never overwrites exhausted */
	v = "exhausted:3:" TOK_A;
	relay_inv_state_parse(&cur, v, strlen(v));
	RT_EQ_INT(relay__inv_decide_complete(&cur, 3, TOK_A, &o, &next), 0);
	RT_EQ_INT(o.result, RELAY_INV_R_STALE);
}

static void test_dlq__reason_texts(void)
{
	char *s;

	s = relay_dlq_reason_exhausted("billing", "h.main", 5, "exit 1");
	RT_EQ_STR(s, "invocation exhausted: app \"billing\" handler \"h.main\""
		     " exhausted after 5 handler attempts: exit 1");
	relay_free(s);
	s = relay_dlq_reason_malformed(RELAY_DLQ_MISSING_EVENT, NULL, 0, 0);
	RT_EQ_STR(s, "missing 'event' field");
	relay_free(s);
	s = relay_dlq_reason_malformed(RELAY_DLQ_NOT_STRING, NULL, 0, 0);
	RT_EQ_STR(s, "'event' field is not a string");
	relay_free(s);
	s = relay_dlq_reason_malformed(RELAY_DLQ_DECODE, "'[' expected", 0,
				       0);
	RT_EQ_STR(s, "decode event: '[' expected");
	relay_free(s);
	s = relay_dlq_reason_malformed(RELAY_DLQ_NOT_OBJECT, NULL, 0, 0);
	RT_EQ_STR(s, "'event' is not a JSON object");
	relay_free(s);
	s = relay_dlq_reason_malformed(RELAY_DLQ_OVERSIZED, NULL, 300000,
				       262144);
	RT_EQ_STR(s, "event oversized: raw event value is 300000 bytes, "
		     "exceeds MAX_EVENT_BYTES 262144");
	relay_free(s);
	s = relay_dlq_oversized_summary(300000, 262144);
	RT_EQ_STR(s, "{\"relay_summary\":\"event_oversized\",\"event_bytes\":"
		     "300000,\"max_event_bytes\":262144}");
	RT_CHECK(strlen(s) <= RELAY_DLQ_SUMMARY_MAX);
	relay_free(s);
	s = relay_dlq_key("{orders}");
	RT_EQ_STR(s, "relay:{orders}:dlq");
	relay_free(s);
}

static void test_dlq__timestamp_rfc3339(void)
{
	char buf[32];

	RT_EQ_STR(relay_dlq_timestamp(1796229900123LL, buf, sizeof(buf)),
		  "2026-12-02T16:45:00.123Z");
	RT_EQ_STR(relay_dlq_timestamp(0, buf, sizeof(buf)),
		  "1970-01-01T00:00:00.000Z");
}

static relay_dlq_entry good_entry(void)
{
	relay_dlq_entry e = {
		"events", "1-0", "g", "c1", "{}", "r", "app", "h", 3, 5,
		"2026-12-02T16:45:00.123Z", NULL, NULL, NULL,
	};
	return e;
}

static void test_dlq__validate(void)
{
	relay_dlq_entry e = good_entry();
	relay_error err;

	RT_EQ_INT(relay_dlq_entry_validate(&e, &err), 0);
	e.app = "-";
	RT_EQ_INT(relay_dlq_entry_validate(&e, &err), RELAY_EINVAL);
	e.handler = "-";
	RT_EQ_INT(relay_dlq_entry_validate(&e, &err), RELAY_EINVAL);
	e.handler_attempts = 0;
	RT_EQ_INT(relay_dlq_entry_validate(&e, &err), 0);
	e = good_entry();
	e.timestamp = "2026-12-02 16:45:00";
	RT_EQ_INT(relay_dlq_entry_validate(&e, &err), RELAY_EINVAL);
	RT_CHECK(strstr(err.text, "timestamp") != NULL);
	/* an empty raw value is stored verbatim (issue 13); absent is not */
	e = good_entry();
	e.event = "";
	RT_EQ_INT(relay_dlq_entry_validate(&e, &err), 0);
	e.event = NULL;
	RT_EQ_INT(relay_dlq_entry_validate(&e, &err), RELAY_EINVAL);
	RT_CHECK(strstr(err.text, "event") != NULL);
	e = good_entry();
	e.reason = "";
	RT_EQ_INT(relay_dlq_entry_validate(&e, &err), RELAY_EINVAL);
	e = good_entry();
	e.deliveries = -1;
	RT_EQ_INT(relay_dlq_entry_validate(&e, &err), RELAY_EINVAL);
	/* an oversized entry stores the summary, never the payload */
	{
		char *reason = relay_dlq_reason_malformed(RELAY_DLQ_OVERSIZED,
							  NULL, 300000, 1000);
		char *summary = relay_dlq_oversized_summary(300000, 1000);
		char big[400];

		memset(big, 'x', sizeof(big) - 1);
		big[sizeof(big) - 1] = '\0';
		e = good_entry();
		e.app = e.handler = "-";
		e.handler_attempts = 0;
		e.reason = reason;
		e.event = summary;
		RT_EQ_INT(relay_dlq_entry_validate(&e, &err), 0);
		e.event = big;
		RT_EQ_INT(relay_dlq_entry_validate(&e, &err), RELAY_EINVAL);
		RT_CHECK(strstr(err.text, "summary") != NULL);
		relay_free(reason);
		relay_free(summary);
	}
}

static relay_redis_reply *entry_reply(const char *id, const char **fv,
				      size_t n)
{
	relay_redis_reply *r = relay__reply_array(2), *f;
	size_t i;

	r->element[0] = relay__reply_str(RELAY_REDIS_REPLY_STRING, id,
					 strlen(id));
	f = r->element[1] = relay__reply_array(n);
	for (i = 0; i < n; i++)
		f->element[i] = relay__reply_str(RELAY_REDIS_REPLY_STRING,
						 fv[i], strlen(fv[i]));
	return r;
}

static void test_dlq__parse_strict(void)
{
	const char *fv[] = {
		"original_stream", "events", "original_id", "1-0", "group",
		"g", "consumer", "c", "event", "{}", "reason", "r", "app", "a",
		"handler", "h", "deliveries", "2", "handler_attempts", "5",
		"timestamp", "2026-12-02T16:45:00.123Z", "trace", "t1",
	};
	relay_dlq_record rec;
	relay_redis_reply *r;
	relay_error err;

	r = entry_reply("9-1", fv, RT_NCASES(fv));
	RT_EQ_INT(relay_dlq_parse(&rec, r, &err), 0);
	RT_EQ_STR(rec.id, "9-1");
	RT_EQ_STR(rec.e.app, "a");
	RT_EQ_STR(rec.e.trace, "t1");
	RT_EQ_INT(rec.e.handler_attempts, 5);
	relay_dlq_record_clear(&rec);
	relay_redis_reply_free(r);
	/* missing field */
	r = entry_reply("9-2", fv, RT_NCASES(fv) - 4);
	RT_EQ_INT(relay_dlq_parse(&rec, r, &err), RELAY_EPARSE);
	RT_CHECK(strstr(err.text, "9-2") && strstr(err.text, "timestamp"));
	relay_redis_reply_free(r);
	/* malformed count */
	fv[17] = "two";
	r = entry_reply("9-3", fv, RT_NCASES(fv));
	RT_EQ_INT(relay_dlq_parse(&rec, r, &err), RELAY_EPARSE);
	RT_CHECK(strstr(err.text, "9-3") && strstr(err.text, "deliveries"));
	relay_redis_reply_free(r);
	fv[17] = "2";
	/* unknown field */
	fv[22] = "tracer";
	r = entry_reply("9-4", fv, RT_NCASES(fv));
	RT_EQ_INT(relay_dlq_parse(&rec, r, &err), RELAY_EPARSE);
	RT_CHECK(strstr(err.text, "9-4") && strstr(err.text, "tracer"));
	relay_redis_reply_free(r);
}

static void test_redis__uri_forms(void)
{
	relay__redis_uri u;
	relay_error err;

	RT_EQ_INT(relay__redis_uri_parse(&u, "localhost:6379", &err), 0);
	RT_EQ_STR(u.host, "localhost");
	RT_EQ_INT(u.port, 6379);
	relay__redis_uri_clear(&u);
	RT_EQ_INT(relay__redis_uri_parse(&u, "redis://u:p@h:1/3", &err), 0);
	RT_EQ_STR(u.user, "u");
	RT_EQ_STR(u.pass, "p");
	RT_EQ_STR(u.host, "h");
	RT_EQ_INT(u.port, 1);
	RT_EQ_INT(u.db, 3);
	relay__redis_uri_clear(&u);
	RT_EQ_INT(relay__redis_uri_parse(&u, "redis://secret@h:2", &err), 0);
	RT_CHECK(u.user == NULL);
	RT_EQ_STR(u.pass, "secret");
	relay__redis_uri_clear(&u);
	RT_EQ_INT(relay__redis_uri_parse(&u, "redis://h:2", &err), 0);
	RT_EQ_INT(u.db, 0);
	relay__redis_uri_clear(&u);
	RT_EQ_INT(relay__redis_uri_parse(&u, "unix:///run/r.sock", &err), 0);
	RT_EQ_STR(u.path, "/run/r.sock");
	relay__redis_uri_clear(&u);
	RT_EQ_INT(relay__redis_uri_parse(&u, "memory://", &err), 0);
	RT_EQ_INT(u.memory, 1);
	RT_EQ_INT(relay__redis_uri_parse(&u, "localhost", &err),
		  RELAY_EINVAL);
	RT_CHECK(strstr(err.text, "localhost") != NULL);
	RT_EQ_INT(relay__redis_uri_parse(&u, "h:0", &err), RELAY_EINVAL);
	RT_EQ_INT(relay__redis_uri_parse(&u, "h:65536", &err), RELAY_EINVAL);
	RT_EQ_INT(relay__redis_uri_parse(&u, "redis://h:1/x", &err),
		  RELAY_EINVAL);
	RT_EQ_INT(relay__redis_uri_parse(&u, "http://h:1", &err),
		  RELAY_EINVAL);
	RT_EQ_INT(relay__redis_uri_parse(&u, "unix://rel", &err),
		  RELAY_EINVAL);
}

/* Cluster seed lists: "host:port,host:port" in both TCP forms. */
static void test_redis__uri_seeds(void)
{
	relay__redis_uri u;
	relay_error err;

	RT_EQ_INT(relay__redis_uri_parse(&u, "a:1,b:2,[::1]:3", &err), 0);
	RT_EQ_STR(u.host, "a");
	RT_EQ_INT(u.port, 1);
	RT_EQ_INT((int)u.nseeds, 2);
	RT_EQ_STR(u.seeds[0].host, "b");
	RT_EQ_INT(u.seeds[0].port, 2);
	RT_EQ_STR(u.seeds[1].host, "::1");
	RT_EQ_INT(u.seeds[1].port, 3);
	relay__redis_uri_clear(&u);
	RT_EQ_INT(relay__redis_uri_parse(&u, "redis://:pw@a:1,b:2", &err), 0);
	RT_EQ_STR(u.pass, "pw");
	RT_EQ_INT((int)u.nseeds, 1);
	RT_EQ_STR(u.seeds[0].host, "b");
	relay__redis_uri_clear(&u);
	RT_EQ_INT(relay__redis_uri_parse(&u, "redis://u:p@h:1/3", &err), 0);
	RT_EQ_INT((int)u.nseeds, 0);
	relay__redis_uri_clear(&u);
	RT_EQ_INT(relay__redis_uri_parse(&u, "a:1,", &err), RELAY_EINVAL);
	RT_EQ_INT(relay__redis_uri_parse(&u, "a:1,b", &err), RELAY_EINVAL);
	RT_EQ_INT(relay__redis_uri_parse(&u, "a:1,,b:2", &err), RELAY_EINVAL);
}

/* CRC16 and key slots: the published vectors of the cluster spec. */
static void test_redis__key_slot(void)
{
	const char *tag;
	size_t n;

	RT_EQ_INT(relay__redis_crc16("123456789", 9), 0x31C3);
	RT_EQ_INT((int)relay__redis_key_slot("foo", 3), 12182);
	RT_EQ_INT((int)relay__redis_key_slot("", 0), 0);
	RT_EQ_INT((int)relay__redis_key_slot("{user1000}.following", 20),
		  (int)relay__redis_key_slot("{user1000}.followers", 20));
	RT_EQ_INT((int)relay__redis_key_slot("{user1000}.following", 20),
		  (int)relay__redis_key_slot("user1000", 8));
	/* Only the first '{' counts; "{}" is no tag; an open '{' is no tag. */
	RT_EQ_INT((int)relay__redis_key_slot("foo{}{bar}", 10),
		  (int)(relay__redis_crc16("foo{}{bar}", 10) & 16383));
	RT_EQ_INT((int)relay__redis_key_slot("foo{{bar}}zap", 13),
		  (int)relay__redis_key_slot("{bar", 4));
	RT_EQ_INT((int)relay__redis_key_slot("foo{bar}{zap}", 13),
		  (int)relay__redis_key_slot("bar", 3));
	RT_EQ_INT(relay__redis_hash_tag("a{b", 3, &tag, &n), 0);
	RT_EQ_INT(relay__redis_hash_tag("x{ab}y", 6, &tag, &n), 1);
	RT_EQ_INT((int)n, 2);
	RT_CHECK(strncmp(tag, "ab", 2) == 0);
}

/* Every key derived from a stream shares its slot, or start-up refuses
 * the stream with an error naming the fix (doc/redis-layout.md R-8). */
static void test_redis__stream_slot_check(void)
{
	static const char *const ok[] = { "{orders}", "orders:{p3}",
					  "{o}rders", "a{b}:{c}" };
	char e[512], *k;
	size_t i;

	for (i = 0; i < RELAY__ARRAY_SIZE(ok); i++) {
		e[0] = '\0';
		RT_EQ_INT(relay__redis_stream_slot_check(ok[i], "g:1", e,
							 sizeof(e)), 0);
		k = relay_inv_key(ok[i], "g:1", "1-0");
		RT_EQ_INT((int)relay__redis_key_slot(k, strlen(k)),
			  (int)relay__redis_key_slot(ok[i], strlen(ok[i])));
		relay__free(k);
	}
	RT_EQ_INT(relay__redis_stream_slot_check("orders", "g", e, sizeof(e)),
		  RELAY_EINVAL);
	RT_CHECK(strstr(e, "no hash tag") != NULL);
	RT_CHECK(strstr(e, "REDIS_STREAM=\"{orders}\"") != NULL);
	RT_EQ_INT(relay__redis_stream_slot_check("{}x", "g", e, sizeof(e)),
		  RELAY_EINVAL);
	RT_EQ_INT(relay__redis_stream_slot_check("{a:b}", "g", e, sizeof(e)),
		  RELAY_EINVAL);
	RT_CHECK(strstr(e, "\"{a:b}\"") != NULL);
	RT_EQ_INT(relay__redis_stream_slot_check("{a%b}", "g", e, sizeof(e)),
		  RELAY_EINVAL);
	/* The name comes from the environment: control bytes escaped. */
	RT_EQ_INT(relay__redis_stream_slot_check("o\x1b[2J\x07", "g", e,
						 sizeof(e)), RELAY_EINVAL);
	RT_CHECK(strchr(e, '\x1b') == NULL && strchr(e, '\x07') == NULL);
	RT_CHECK(strstr(e, "\"o\\x1b[2J\\x07\"") != NULL);
	RT_EQ_INT(relay__redis_stream_slot_check("{a:\x1b}", "g", e,
						 sizeof(e)), RELAY_EINVAL);
	RT_CHECK(strchr(e, '\x1b') == NULL);
}

static void test_redis__backend_check(void)
{
	relay_redis_backend *b;
	unsigned int v;

	RT_ASSERT(relay_redis_memory_new(&b, NULL) == 0);
	RT_EQ_INT(relay_redis_backend_check(b), 0);
	v = b->version;
	b->version = 0;
	RT_EQ_INT(relay_redis_backend_check(b), RELAY_EINVAL);
	b->version = RELAY_REDIS_BACKEND_VERSION + 1;
	RT_EQ_INT(relay_redis_backend_check(b), RELAY_EINVAL);
	b->version = v;
	RT_EQ_STR(relay_redis_name(b), "memory");
	relay_redis_free(b);
}

/* source_fields (issue 41, R-5): escaped, values cut at 64 bytes and at
 * a character, whole pairs within RELAY_DLQ_SOURCE_FIELDS_MAX. */
static void test_dlq__source_fields(void)
{
	char *names[40], *values[40], v[300], *s;
	size_t i, lens[40];

	names[0] = "a";
	values[0] = "x\ty";
	s = relay__dlq_source_fields(names, values, NULL, 1);
	RT_EQ_STR(s, "a=x\\x09y");
	relay__free(s);
	RT_CHECK(relay__dlq_source_fields(names, values, NULL, 0) == NULL);
	/* 63 ASCII bytes then a 2-byte character: cut before it */
	memset(v, 'b', 63);
	memcpy(v + 63, "\xc3\xa9zz", 5);
	values[0] = v;
	lens[0] = 67;
	s = relay__dlq_source_fields(names, values, lens, 1);
	RT_EQ_INT((int)strlen(s), 2 + 63 + 3);
	RT_CHECK(strcmp(s + strlen(s) - 4, "b...") == 0);
	relay__free(s);
	/* a NUL inside a value is escaped, not an end */
	values[0] = "p\0q";
	lens[0] = 3;
	s = relay__dlq_source_fields(names, values, lens, 1);
	RT_EQ_STR(s, "a=p\\x00q");
	relay__free(s);
	/* 40 fields of 10 bytes each: whole pairs, then " ..." */
	for (i = 0; i < 40; i++) {
		names[i] = "field";
		values[i] = "abcd";
	}
	s = relay__dlq_source_fields(names, values, NULL, 40);
	RT_CHECK(strlen(s) <= RELAY_DLQ_SOURCE_FIELDS_MAX);
	RT_CHECK(strcmp(s + strlen(s) - 4, " ...") == 0);
	RT_CHECK(strncmp(s, "field=abcd field=abcd", 21) == 0);
	RT_CHECK(strstr(s, "field=abcd ...") != NULL);
	relay__free(s);
	/* one name longer than the bound: what fits, then " ..." */
	memset(v, 'n', 299);
	v[299] = '\0';
	names[0] = v;
	values[0] = "1";
	s = relay__dlq_source_fields(names, values, NULL, 1);
	RT_EQ_INT((int)strlen(s), RELAY_DLQ_SOURCE_FIELDS_MAX);
	RT_CHECK(strcmp(s + strlen(s) - 4, " ...") == 0);
	relay__free(s);
}

static const rt_case cases[] = {
	RT_CASE(test_inv__parse_valid),
	RT_CASE(test_inv__parse_rejects),
	RT_CASE(test_inv__backoff_table),
	RT_CASE(test_inv__claim_deadline_capped),
	RT_CASE(test_inv__key_encoding),
	RT_CASE(test_inv__token_is_128_bit_hex),
	RT_CASE(test_inv__decide_matrix),
	RT_CASE(test_dlq__reason_texts),
	RT_CASE(test_dlq__timestamp_rfc3339),
	RT_CASE(test_dlq__validate),
	RT_CASE(test_dlq__source_fields),
	RT_CASE(test_dlq__parse_strict),
	RT_CASE(test_redis__uri_forms),
	RT_CASE(test_redis__uri_seeds),
	RT_CASE(test_redis__key_slot),
	RT_CASE(test_redis__stream_slot_check),
	RT_CASE(test_redis__backend_check),
};

int main(int argc, char **argv)
{
	return rt_main(argc, argv, cases, RT_NCASES(cases));
}
