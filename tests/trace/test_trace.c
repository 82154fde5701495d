/*
 * test_trace.c - the trace module (relay/trace.h): W3C traceparent,
 * tracestate and baggage parse tables (valid, invalid, future versions,
 * oversized, hostile), formatting, ids, child contexts, samplers and
 * span copies.
 */
#include <stdlib.h>
#include <string.h>

#include "relaytest.h"
#include "relay/trace.h"

#define TP "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

static const struct {
	const char *in;
	int rc;
	uint8_t flags;
} parents[] = {
	{ TP, 0, 1 },
	{ "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00", 0, 0 },
	/* version 00 keeps unknown flags as given */
	{ "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-ff", 0, 0xff },
	/* future versions: the level-1 prefix, more after '-' */
	{ "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", 0, 1 },
	{ "cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-09-what",
	  0, 1 },
	{ "cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-08-", 0, 0 },
	{ "cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x", -4, 0 },
	/* the W3C test suite's future value */
	{ "cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-what-the-"
	  "future-will-be-like", 0, 1 },
	{ "cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-0af7-b9",
	  0, 1 },
	/* a future version's tail is checked to its end (issue 40 item 11):
	 * control bytes, spaces, upper case, other punctuation, a second
	 * field that is not one */
	{ "cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-\x1b[2J",
	  -4, 0 },
	{ "cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-ok\rX",
	  -4, 0 },
	{ "cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-a b",
	  -4, 0 },
	{ "cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-ABC",
	  -4, 0 },
	{ "cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x.y",
	  -4, 0 },
	{ "cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x\xc2\x9b",
	  -4, 0 },
	{ "cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-ab\x7f",
	  -4, 0 },
	{ "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", -4, 0 },
	/* version 00 is exactly 55 characters */
	{ TP "-", -4, 0 },
	{ TP " ", -4, 0 },
	{ "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-1", -4, 0 },
	{ " 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", -4, 0 },
	/* uppercase hex, non-hex, zero ids, separators */
	{ "00-4BF92F3577B34DA6A3CE929D0E0E4736-00F067AA0BA902B7-01", -4, 0 },
	{ "0A-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", -4, 0 },
	{ "00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01", -4, 0 },
	{ "00-00000000000000000000000000000000-00f067aa0ba902b7-01", -4, 0 },
	{ "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01", -4, 0 },
	{ "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", -4, 0 },
	{ "00-4bf92f3577b34da6a3ce929d0e0e4736_00f067aa0ba902b7-01", -4, 0 },
	{ "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7_01", -4, 0 },
	{ "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0x", -4, 0 },
	{ "", -4, 0 },
	{ "00", -4, 0 },
	{ "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7\n01", -4, 0 },
};

static void test_trace__parent_table(void)
{
	size_t i;

	for (i = 0; i < RT_NCASES(parents); i++) {
		relay_trace_context c;
		int rc = relay_trace_parent_parse(&c, parents[i].in,
						  strlen(parents[i].in));

		if (rc != parents[i].rc)
			RT_FAILF("case %zu \"%s\": rc %d, want %d", i,
				 parents[i].in, rc, parents[i].rc);
		else if (rc == 0 && c.flags != parents[i].flags)
			RT_FAILF("case %zu: flags %02x", i, c.flags);
		else if (rc == 0)
			RT_CHECK(c.remote && c.tracestate[0] == '\0');
	}
}

static void test_trace__parent_roundtrip(void)
{
	relay_trace_context c;
	char out[RELAY_TRACEPARENT_LEN + 1], hex[33];

	RT_EQ_INT(relay_trace_parent_parse(&c, TP, strlen(TP)), 0);
	RT_EQ_STR(relay_trace_hex(c.trace_id, 16, hex),
		  "4bf92f3577b34da6a3ce929d0e0e4736");
	RT_EQ_STR(relay_trace_hex(c.span_id, 8, hex), "00f067aa0ba902b7");
	RT_EQ_INT(relay_trace_parent_format(&c, out), 0);
	RT_EQ_STR(out, TP);
	/* a future version is re-emitted as 00 with the sampled bit (the
	 * length is the value's: the whole of it is read) */
	RT_EQ_INT(relay_trace_parent_parse(&c, "cc-4bf92f3577b34da6a3ce929d0e0"
		  "e4736-00f067aa0ba902b7-0b-x", 57), 0);
	RT_EQ_INT(relay_trace_parent_format(&c, out), 0);
	RT_EQ_STR(out, TP);
	memset(&c, 0, sizeof(c));
	RT_EQ_INT(relay_trace_parent_format(&c, out), RELAY_EINVAL);
	RT_EQ_STR(out, "");
}

static void test_trace__parent_hostile(void)
{
	relay_trace_context c;
	size_t n = 1 << 20;
	char *big = malloc(n);

	memset(big, 'a', n);
	memcpy(big, TP, strlen(TP));
	big[2] = '-';
	RT_EQ_INT(relay_trace_parent_parse(&c, big, n), RELAY_EINVAL);
	memcpy(big, "cc", 2);
	big[55] = '-';
	RT_EQ_INT(relay_trace_parent_parse(&c, big, 512), 0);
	RT_EQ_INT(relay_trace_parent_parse(&c, big, 513), RELAY_EINVAL);
	/* NUL and control bytes inside */
	memcpy(big, TP, 55);
	big[10] = '\0';
	RT_EQ_INT(relay_trace_parent_parse(&c, big, 55), RELAY_EPARSE);
	big[10] = '\x01';
	RT_EQ_INT(relay_trace_parent_parse(&c, big, 55), RELAY_EPARSE);
	free(big);
}

static const struct {
	const char *in;
	int rc;
	const char *out;
} states[] = {
	{ "", 0, "" },
	{ "  ,\t, ", 0, "" },
	{ "congo=t61rcWkgMzE", 0, "congo=t61rcWkgMzE" },
	{ "rojo=00f067aa0ba902b7, congo=t61rcWkgMzE", 0,
	  "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE" },
	{ " a=1 ,, b=2 ,", 0, "a=1,b=2" },
	{ "fw529a3039@dt=abc", 0, "fw529a3039@dt=abc" },
	{ "0tenant@sys=v", 0, "0tenant@sys=v" },
	{ "a_-*/b=v a l", 0, "a_-*/b=v a l" },
	{ "Congo=1", -4, "" },           /* uppercase key */
	{ "1a=1", -4, "" },              /* simple key starts lcalpha */
	{ "a=", -4, "" },                /* empty value */
	{ "a=1 x=2", -4, "" },           /* '=' in value */
	{ "a=b\x01", -4, "" },           /* control byte */
	{ "a=b\x7f", -4, "" },
	{ "a", -4, "" },
	{ "=a", -4, "" },
	{ "a@=1", -4, "" },
	{ "@a=1", -4, "" },
	{ "t@Sys=1", -4, "" },
	{ "t@abcdefghijklmno=1", -4, "" }, /* system id > 14 */
	{ "a=1,a=2", -4, "" },           /* duplicate key */
};

static void test_trace__state_table(void)
{
	size_t i;

	for (i = 0; i < RT_NCASES(states); i++) {
		relay_trace_context c;
		int rc = relay_trace_state_parse(&c, states[i].in,
						 strlen(states[i].in));

		if (rc != states[i].rc || strcmp(c.tracestate, states[i].out))
			RT_FAILF("case %zu \"%s\": rc %d \"%s\"", i,
				 states[i].in, rc, c.tracestate);
	}
}

static void test_trace__state_limits(void)
{
	relay_trace_context c;
	char buf[20000], *p = buf;
	size_t i;

	/* 32 members fine, 33 not */
	for (i = 0; i < 33; i++)
		p += sprintf(p, "%sk%zu=v", i ? "," : "", i);
	RT_EQ_INT(relay_trace_state_parse(&c, buf, strlen(buf)),
		  RELAY_EPARSE);
	*strrchr(buf, ',') = '\0';
	RT_EQ_INT(relay_trace_state_parse(&c, buf, strlen(buf)), 0);
	RT_CHECK(strncmp(c.tracestate, "k0=v,k1=v", 9) == 0);
	/* too long: the >128 member goes first, then from the end */
	p = buf;
	p += sprintf(p, "a=");
	memset(p, 'x', 200);
	p += 200;
	for (i = 0; i < 10; i++) {
		p += sprintf(p, ",k%zu=", i);
		memset(p, 'y', 60);
		p += 60;
	}
	*p = '\0';
	RT_EQ_INT(relay_trace_state_parse(&c, buf, strlen(buf)), 0);
	RT_CHECK(strlen(c.tracestate) <= RELAY_TRACESTATE_MAX);
	RT_CHECK(strncmp(c.tracestate, "k0=", 3) == 0);
	RT_CHECK(strstr(c.tracestate, "k7=") != NULL);
	RT_CHECK(strstr(c.tracestate, "k8=") == NULL);
	/* one 513-character member: valid, but nothing fits */
	p = buf;
	memset(p, 'k', 256);
	p[256] = '=';
	memset(p + 257, 'v', 256);
	p[513] = '\0';
	RT_EQ_INT(relay_trace_state_parse(&c, buf, 513), 0);
	RT_EQ_STR(c.tracestate, "");
	buf[0] = 'K';
	RT_EQ_INT(relay_trace_state_parse(&c, buf, 513), RELAY_EPARSE);
	/* key 257 */
	memset(buf, 'k', 257);
	strcpy(buf + 257, "=v");
	RT_EQ_INT(relay_trace_state_parse(&c, buf, strlen(buf)), RELAY_EPARSE);
	/* huge input: not looked at */
	memset(buf, ',', sizeof(buf));
	RT_EQ_INT(relay_trace_state_parse(&c, buf, sizeof(buf)), RELAY_EINVAL);
	RT_EQ_INT(relay_trace_state_parse(&c, buf, RELAY_TRACESTATE_INPUT_MAX),
		  0);
}

static const struct {
	const char *in;
	int rc;
	size_t members;
} baggages[] = {
	{ "userId=alice", 0, 1 },
	{ "userId=alice , serverNode = DF%2028 ,isProduction=false", 0, 3 },
	{ "key1=value1;property1;property2, key2 = value2, key3=value3; "
	  "propertyKey=propertyValue", 0, 3 },
	{ "k=", 0, 1 },
	{ "k=v;p=", 0, 1 },
	{ "", -4, 0 },
	{ "k", -4, 0 },
	{ "=v", -4, 0 },
	{ "k=v,", -4, 0 },
	{ "k=v,,j=w", -4, 0 },
	{ "k=v;", -4, 0 },
	{ "k=a b", -4, 0 },
	{ "k=\"v\"", -4, 0 },
	{ "k=v\\", -4, 0 },
	{ "k=v\x01", -4, 0 },
	{ "k=v\x80", -4, 0 },
	{ "k(=v", -4, 0 },
	{ "k=v;(p", -4, 0 },
};

static void test_trace__baggage_table(void)
{
	size_t i, n;

	for (i = 0; i < RT_NCASES(baggages); i++) {
		int rc = relay_trace_baggage_check(baggages[i].in,
						   strlen(baggages[i].in), &n);

		if (rc != baggages[i].rc ||
		    (rc == 0 && n != baggages[i].members))
			RT_FAILF("case %zu \"%s\": rc %d n %zu", i,
				 baggages[i].in, rc, n);
	}
}

static void test_trace__baggage_limits(void)
{
	char *buf = malloc(70000), *p = buf;
	size_t i, n;

	for (i = 0; i < 65; i++)
		p += sprintf(p, "%sk%zu=v", i ? "," : "", i);
	RT_EQ_INT(relay_trace_baggage_check(buf, strlen(buf), &n),
		  RELAY_EINVAL);
	*strrchr(buf, ',') = '\0';
	RT_EQ_INT(relay_trace_baggage_check(buf, strlen(buf), &n), 0);
	RT_EQ_INT(n, 64);
	/* 8192 bytes fine, 8193 not */
	memcpy(buf, "k=", 2);
	memset(buf + 2, 'v', 8190);
	RT_EQ_INT(relay_trace_baggage_check(buf, 8192, &n), 0);
	buf[8192] = 'v';
	RT_EQ_INT(relay_trace_baggage_check(buf, 8193, &n), RELAY_EINVAL);
	/* many properties in one member are bytes, not members */
	p = buf;
	p += sprintf(p, "k=v");
	for (i = 0; i < 2000; i++)
		p += sprintf(p, ";p");
	RT_EQ_INT(relay_trace_baggage_check(buf, strlen(buf), &n), 0);
	/* 70000 commas */
	memset(buf, ',', 70000);
	RT_EQ_INT(relay_trace_baggage_check(buf, 70000, &n), RELAY_EINVAL);
	free(buf);
}

static void test_trace__ids_and_child(void)
{
	relay_trace_context p, c, r;
	uint8_t t1[16], t2[16], zero[16] = { 0 };

	RT_EQ_INT(relay_trace_random_ids(t1, NULL), 0);
	RT_EQ_INT(relay_trace_random_ids(t2, NULL), 0);
	RT_CHECK(memcmp(t1, t2, 16) != 0);
	RT_CHECK(memcmp(t1, zero, 16) != 0);
	RT_EQ_INT(relay_trace_parent_parse(&p, TP, strlen(TP)), 0);
	RT_EQ_INT(relay_trace_state_parse(&p, "a=1", 3), 0);
	RT_EQ_INT(relay_trace_context_child(&c, &p, false), 0);
	RT_CHECK(memcmp(c.trace_id, p.trace_id, 16) == 0);
	RT_CHECK(memcmp(c.span_id, p.span_id, 8) != 0);
	RT_EQ_INT(c.flags, 0);
	RT_CHECK(!c.remote);
	RT_EQ_STR(c.tracestate, "a=1");
	RT_EQ_INT(relay_trace_context_child(&r, NULL, true), 0);
	RT_EQ_INT(r.flags, 1);
	RT_CHECK(memcmp(r.trace_id, zero, 16) != 0);
	RT_EQ_STR(r.tracestate, "");
}

static void test_trace__sampler(void)
{
	relay_trace_sampler s;
	relay_trace_context on, off;
	uint8_t id[16] = { 0 };
	size_t i, hits = 0;

	RT_EQ_INT(relay_trace_sampler_parse(&s, NULL, NULL), 0);
	RT_EQ_INT(s.kind, RELAY_SAMPLER_PARENTBASED_ALWAYS_ON);
	RT_EQ_INT(relay_trace_sampler_parse(&s, "bogus", NULL), RELAY_EINVAL);
	RT_EQ_INT(s.kind, RELAY_SAMPLER_PARENTBASED_ALWAYS_ON);
	RT_EQ_INT(relay_trace_sampler_parse(&s, "traceidratio", "1.5"),
		  RELAY_EINVAL);
	RT_EQ_INT(relay_trace_sampler_parse(&s, "traceidratio", "nan"),
		  RELAY_EINVAL);
	RT_EQ_INT(relay_trace_sampler_parse(&s, "traceidratio", "0.25x"),
		  RELAY_EINVAL);
	memset(&on, 0, sizeof(on));
	memset(&off, 0, sizeof(off));
	on.flags = 1;
	RT_EQ_INT(relay_trace_sampler_parse(&s, "always_off", NULL), 0);
	RT_CHECK(!relay_trace_sample(&s, &on, id));
	RT_EQ_INT(relay_trace_sampler_parse(&s, "always_on", NULL), 0);
	RT_CHECK(relay_trace_sample(&s, &off, id));
	RT_EQ_INT(relay_trace_sampler_parse(&s, "parentbased_always_off",
					    NULL), 0);
	RT_CHECK(relay_trace_sample(&s, &on, id));
	RT_CHECK(!relay_trace_sample(&s, &off, id));
	RT_CHECK(!relay_trace_sample(&s, NULL, id));
	RT_EQ_INT(relay_trace_sampler_parse(&s, "parentbased_always_on", ""),
		  0);
	RT_CHECK(relay_trace_sample(&s, NULL, id));
	RT_CHECK(!relay_trace_sample(&s, &off, id));
	/* ratio: the low 56 bits against (1 - r) * 2^56 */
	RT_EQ_INT(relay_trace_sampler_parse(&s, "traceidratio", "0.5"), 0);
	memset(id + 9, 0x7f, 7);
	RT_CHECK(!relay_trace_sample(&s, &on, id));     /* ignores parent */
	id[9] = 0x80;
	memset(id + 10, 0, 6);
	RT_CHECK(relay_trace_sample(&s, &off, id));
	id[0] = 0xff;                   /* high bits do not count */
	id[9] = 0x7f;
	RT_CHECK(!relay_trace_sample(&s, NULL, id));
	RT_EQ_INT(relay_trace_sampler_parse(&s, "parentbased_traceidratio",
					    "0.1"), 0);
	RT_CHECK(relay_trace_sample(&s, &on, id));
	for (i = 0; i < 10000; i++) {
		RT_EQ_INT(relay_trace_random_ids(id, NULL), 0);
		hits += relay_trace_sample(&s, NULL, id);
	}
	RT_CHECK(hits > 800 && hits < 1200);
	RT_EQ_INT(relay_trace_sampler_parse(&s, "traceidratio", "0"), 0);
	RT_CHECK(!relay_trace_sample(&s, NULL, id));
}

static void test_trace__span_dup(void)
{
	relay_trace_attr attrs[3] = {
		{ "relay.app", RELAY_TRACE_ATTR_STRING, "demo", 0, false },
		{ "relay.attempt", RELAY_TRACE_ATTR_INT, NULL, 3, false },
		{ "relay.final", RELAY_TRACE_ATTR_BOOL, NULL, 0, true },
	};
	relay_span_link link = { { 1 }, { 2 }, 1, "a=1", attrs, 1 };
	relay_span s = RELAY_SPAN_INIT, *d;
	char name[8] = "attempt";
	size_t size;

	s.name = name;
	s.attrs = attrs;
	s.nattrs = 3;
	s.links = &link;
	s.nlinks = 1;
	s.status = RELAY_SPAN_STATUS_ERROR;
	s.status_message = "exit 1";
	RT_EQ_INT(relay_span_dup(&d, &s, &size), 0);
	name[0] = 'X';
	RT_EQ_STR(d->name, "attempt");
	RT_CHECK(d->attrs != attrs && d->links != &link);
	RT_EQ_STR(d->attrs[0].s, "demo");
	RT_EQ_INT(d->attrs[1].i, 3);
	RT_CHECK(d->attrs[2].b);
	RT_EQ_STR(d->links[0].tracestate, "a=1");
	RT_EQ_STR(d->links[0].attrs[0].key, "relay.app");
	RT_EQ_STR(d->status_message, "exit 1");
	RT_CHECK(d->tracestate == NULL);
	RT_CHECK(size > sizeof(relay_span));
	relay_span_free(d);
	relay_span_free(NULL);
	s.version = 0;
	RT_EQ_INT(relay_span_dup(&d, &s, NULL), RELAY_EINVAL);
	RT_CHECK(d == NULL);
}

static const rt_case cases[] = {
	RT_CASE(test_trace__parent_table),
	RT_CASE(test_trace__parent_roundtrip),
	RT_CASE(test_trace__parent_hostile),
	RT_CASE(test_trace__state_table),
	RT_CASE(test_trace__state_limits),
	RT_CASE(test_trace__baggage_table),
	RT_CASE(test_trace__baggage_limits),
	RT_CASE(test_trace__ids_and_child),
	RT_CASE(test_trace__sampler),
	RT_CASE(test_trace__span_dup),
};

int main(int argc, char **argv)
{
	return rt_main(argc, argv, cases, RT_NCASES(cases));
}
