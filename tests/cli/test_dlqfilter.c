/*
 * test_dlqfilter.c - relayctl's DLQ entry filters (relayctl/dlqfilter.c)
 * and the library filter they build (relay_dlq_filter), table-driven: each flag alone, combinations (AND), and bad input (the
 * flag named in the message; relayctl exits 2 on it, see
 * tests/daemon/test_dlq_bulk.py).
 */
#include <stdio.h>
#include <string.h>

#include "dlqfilter.h"
#include "relaytest.h"

/* 2026-12-04T12:00:00Z */
#define NOW INT64_C(1796385600000)

/* Three entries: ids, app, handler, reason, timestamp, original id. */
static const struct {
	const char *id, *app, *handler, *reason, *ts, *orig;
} entries[] = {
	{ "1796378400000-0", "billing", "paid",
	  "invocation exhausted: app \"billing\" handler \"paid\" exhausted "
	  "after 3 handler attempts: timed out after 6000ms",
	  "2026-12-04T10:00:00.000Z", "1796378399000-0" },  /* 2h ago */
	{ "1796384700000-3", "billing", "refund",
	  "invocation exhausted: app \"billing\" handler \"refund\" exhausted "
	  "after 1 handler attempts: exit status 3",
	  "2026-12-04T11:45:00.000Z", "1796384600000-7" },  /* 15m ago */
	{ "1796385540000-0", "-", "-", "decode event: unexpected token",
	  "2026-12-04T11:59:00.000Z", "1796378399000-1" },  /* 1m ago */
};
#define NENT (sizeof(entries) / sizeof(entries[0]))

static void record(size_t i, relay_dlq_record *r)
{
	memset(r, 0, sizeof(*r));
	r->id = (char *)entries[i].id;
	r->e.app = entries[i].app;
	r->e.handler = entries[i].handler;
	r->e.reason = entries[i].reason;
	r->e.timestamp = entries[i].ts;
	r->e.original_id = entries[i].orig;
}

/* Parse @args (NULL-terminated) into @f. Returns the first -1, else 0;
 * @err holds the message. */
static int parse(struct dlqfilter *f, const char *const *args, char *err,
		 size_t size)
{
	char *argv[16];
	int argc = 0, i;

	while (args[argc])
		argv[argc] = (char *)args[argc], argc++;
	dlqfilter_init(f);
	err[0] = '\0';
	for (i = 0; i < argc; i++) {
		int m = dlqfilter_arg(f, argc, argv, &i, NOW, err, size);

		if (m < 0)
			return -1;
		if (m == 0) {
			snprintf(err, size, "not a filter: %s", argv[i]);
			return -1;
		}
	}
	return dlqfilter_finish(f, err, size);
}

/* Which of the entries match, as a bit mask (bit i = entries[i]). */
static const struct {
	const char *args[8];
	unsigned mask;
} good[] = {
	{ { NULL }, 7 },
	{ { "--app", "billing", NULL }, 3 },
	{ { "--app=billing", NULL }, 3 },
	{ { "--app", "bill", NULL }, 0 },          /* exact, not a prefix */
	{ { "--app", "-", NULL }, 4 },
	{ { "--handler", "refund", NULL }, 2 },
	{ { "--handler=paid", NULL }, 1 },
	{ { "--reason", "timed out", NULL }, 1 },
	{ { "--reason", "^decode", NULL }, 4 },
	{ { "--reason", "exit status [0-9]+$", NULL }, 2 },
	{ { "--reason", "(timed out|exit status)", NULL }, 3 },
	{ { "--reason", "TIMED", NULL }, 0 },      /* case matters */
	{ { "--since", "30m", NULL }, 6 },
	{ { "--since", "3h", NULL }, 7 },
	{ { "--until", "30m", NULL }, 1 },
	{ { "--until", "1h30m", NULL }, 1 },
	{ { "--since", "2026-12-04T11:45:00Z", NULL }, 6 },  /* inclusive */
	{ { "--until", "2026-12-04T11:45:00Z", NULL }, 3 },  /* inclusive */
	{ { "--since", "2026-12-04T13:45:00+02:00", NULL }, 6 },
	{ { "--since", "2026-12-04t11:45:00.001z", NULL }, 4 },
	{ { "--since", "2026-12-04 11:00:00-01:00", NULL }, 0 },
	{ { "--since", "120000ms", NULL }, 4 },
	/* Unix milliseconds, as match --now (issue 41): the same instants */
	{ { "--since", "1796384700000", NULL }, 6 },
	{ { "--until", "1796384700000", NULL }, 3 },
	{ { "--since", "1796384700001", NULL }, 4 },
	{ { "--since", "1w", NULL }, 7 },
	{ { "--id", "1796384700000-3", NULL }, 2 },
	{ { "--id", "1796384700000-3", "--id", "1796378400000", NULL }, 3 },
	{ { "--id", "1-0", NULL }, 0 },
	{ { "--app", "billing", "--handler", "paid", NULL }, 1 },
	{ { "--app", "billing", "--since", "1h", NULL }, 2 },
	{ { "--app", "billing", "--reason", "exit", "--until", "1h", NULL },
	  0 },
	{ { "--since", "3h", "--until", "10m", NULL }, 3 },
	{ { "--id", "1796385540000-0", "--app", "billing", NULL }, 0 },
	{ { "--original-id", "1796384600000-7", NULL }, 2 },
	{ { "--original-id=1796378399000", NULL }, 1 },   /* "MS" is MS-0 */
	{ { "--original-id", "1796378399000-1", "--original-id",
	    "1796384600000-7", NULL }, 6 },
	{ { "--original-id", "1796378400000-0", NULL }, 0 },  /* not --id */
	{ { "--original-id", "1796378399000-1", "--app", "billing", NULL },
	  0 },
	{ { "--original-id", "1796384600000-7", "--id", "1796384700000-3",
	    NULL }, 2 },
	{ { "--malformed", NULL }, 0 },            /* all three parse */
	{ { "--malformed", "--id", "1796378400000-0", "--since", "3h",
	    "--until", "1m", NULL }, 0 },
	{ { "--no-malformed", NULL }, 7 },
	{ { "--no-malformed", "--app", "billing", NULL }, 3 },
};

static void test_filter__each_flag_and_combinations(void)
{
	size_t t, i;
	char err[300];

	for (t = 0; t < sizeof(good) / sizeof(good[0]); t++) {
		struct dlqfilter f;
		unsigned got = 0;

		if (parse(&f, good[t].args, err, sizeof(err))) {
			RT_FAILF("case %zu (%s ...): %s", t,
				 good[t].args[0] ? good[t].args[0] : "",
				 err);
			dlqfilter_free(&f);
			continue;
		}
		for (i = 0; i < NENT; i++) {
			relay_dlq_record r;

			record(i, &r);
			got |= (unsigned)(relay_dlq_filter_match(f.lib, &r) ==
					  RELAY_DLQ_MATCH) << i;
		}
		if (got != good[t].mask)
			RT_FAILF("case %zu (%s %s ...): mask %u, want %u", t,
				 good[t].args[0] ? good[t].args[0] : "",
				 good[t].args[0] && good[t].args[1]
					 ? good[t].args[1] : "",
				 got, good[t].mask);
		RT_EQ_INT(dlqfilter_active(&f), good[t].args[0] != NULL);
		dlqfilter_free(&f);
	}
}

/* Bad input: refused, the message names the flag. */
static const struct {
	const char *args[6];
	const char *flag;
} bad[] = {
	{ { "--app", NULL }, "--app" },
	{ { "--app=", NULL }, "--app" },
	{ { "--app", "a", "--app", "b", NULL }, "--app" },
	{ { "--handler", NULL }, "--handler" },
	{ { "--handler", "x", "--handler=y", NULL }, "--handler" },
	{ { "--reason", "(", NULL }, "--reason" },
	{ { "--reason", "a{2,1}", NULL }, "--reason" },
	{ { "--reason", "[z-a]", NULL }, "--reason" },
	{ { "--reason", "", NULL }, "--reason" },
	{ { "--reason", "a", "--reason", "b", NULL }, "--reason" },
	{ { "--since", "yesterday", NULL }, "--since" },
	{ { "--since", "2h5", NULL }, "--since" },
	{ { "--since", "-2h", NULL }, "--since" },
	{ { "--since", "2x", NULL }, "--since" },
	{ { "--since", "h", NULL }, "--since" },
	{ { "--since", "99999999999999999999s", NULL }, "--since" },
	{ { "--since", "253402300800000", NULL }, "--since" }, /* > 9999 */
	{ { "--since", "99999999999999999999", NULL }, "--since" },
	{ { "--until", "2026-02-30T00:00:00Z", NULL }, "--until" },
	{ { "--until", "2026-12-04T24:00:00Z", NULL }, "--until" },
	{ { "--until", "2026-12-04T10:00:00", NULL }, "--until" },
	{ { "--until", "2026-12-04T10:00:00+2:00", NULL }, "--until" },
	{ { "--until", "2026-12-04T10:00:00.Z", NULL }, "--until" },
	{ { "--until", "2026-12-04", NULL }, "--until" },
	{ { "--since", "1h", "--since", "2h", NULL }, "--since" },
	{ { "--since", "1h", "--until", "2h", NULL }, "--since" },
	{ { "--id", "abc", NULL }, "--id" },
	{ { "--id", "1-", NULL }, "--id" },
	{ { "--id", "18446744073709551616-0", NULL }, "--id" },
	{ { "--id", NULL }, "--id" },
	{ { "--original-id", NULL }, "--original-id" },
	{ { "--original-id", "x-1", NULL }, "--original-id" },
	{ { "--original-id=", NULL }, "--original-id" },
	{ { "--malformed=yes", NULL }, "--malformed" },
	{ { "--no-malformed=1", NULL }, "--no-malformed" },
	{ { "--malformed", "--malformed", NULL }, "--malformed" },
	{ { "--malformed", "--no-malformed", NULL }, "--no-malformed" },
	{ { "--no-malformed", "--malformed", NULL }, "--malformed" },
	{ { "--malformed", "--app", "a", NULL }, "--malformed" },
	{ { "--handler", "h", "--malformed", NULL }, "--malformed" },
	{ { "--malformed", "--reason", "x", NULL }, "--malformed" },
	{ { "--malformed", "--original-id", "1-0", NULL }, "--malformed" },
};

static void test_filter__bad_input_names_the_flag(void)
{
	size_t t;
	char err[300];

	for (t = 0; t < sizeof(bad) / sizeof(bad[0]); t++) {
		struct dlqfilter f;

		if (parse(&f, bad[t].args, err, sizeof(err)) == 0)
			RT_FAILF("bad case %zu (%s %s) accepted", t,
				 bad[t].args[0],
				 bad[t].args[1] ? bad[t].args[1] : "");
		else if (strncmp(err, bad[t].flag, strlen(bad[t].flag)) != 0)
			RT_FAILF("bad case %zu: \"%s\" does not start with %s",
				 t, err, bad[t].flag);
		dlqfilter_free(&f);
	}
}

/* Not a filter option: left to the caller, nothing consumed. */
static void test_filter__other_arguments_left_alone(void)
{
	static const char *const others[] = { "--apps", "--json", "--identity",
					      "1-0", "--reasons=x", "-a",
					      "--malformeds", "--original",
					      "--original-ids=1" };
	struct dlqfilter f;
	char err[100], *argv[1];
	size_t t;
	int i;

	dlqfilter_init(&f);
	for (t = 0; t < sizeof(others) / sizeof(others[0]); t++) {
		argv[0] = (char *)others[t];
		i = 0;
		RT_EQ_INT(dlqfilter_arg(&f, 1, argv, &i, NOW, err,
					sizeof(err)), 0);
		RT_EQ_INT(i, 0);
	}
	RT_CHECK(!dlqfilter_active(&f));
	dlqfilter_free(&f);
}

/* Whether the library filter keeps malformed entry @id (matched by id). */
static int match_id(const struct dlqfilter *f, const char *id)
{
	return relay_dlq_filter_match_malformed(f->lib, id) == RELAY_DLQ_MATCH;
}

/* A malformed entry: only --id and the time in its id can decide. */
static void test_filter__malformed_entry_by_id(void)
{
	static const char *const a1[] = { "--id", "1796384700000-3", NULL };
	static const char *const a2[] = { "--since", "30m", NULL };
	static const char *const a3[] = { "--app", "x", NULL };
	static const char *const a4[] = { "--original-id", "1-0", NULL };
	struct dlqfilter f;
	char err[100];

	RT_ASSERT(parse(&f, a1, err, sizeof(err)) == 0);
	RT_CHECK(match_id(&f, "1796384700000-3"));
	RT_CHECK(!match_id(&f, "1796384700000-4"));
	RT_CHECK(!dlqfilter_on_fields(&f));
	dlqfilter_free(&f);
	RT_ASSERT(parse(&f, a2, err, sizeof(err)) == 0);
	RT_CHECK(match_id(&f, "1796385540000-0"));
	RT_CHECK(!match_id(&f, "1796378400000-0"));
	dlqfilter_free(&f);
	RT_ASSERT(parse(&f, a3, err, sizeof(err)) == 0);
	RT_CHECK(dlqfilter_on_fields(&f));
	/* A filter on fields cannot judge it: undecided, not a match. */
	RT_EQ_INT(relay_dlq_filter_match_malformed(f.lib, "1796385540000-0"),
		  RELAY_DLQ_UNDECIDED);
	dlqfilter_free(&f);
	RT_ASSERT(parse(&f, a4, err, sizeof(err)) == 0);
	RT_CHECK(dlqfilter_on_fields(&f));
	RT_EQ_INT(relay_dlq_filter_match_malformed(f.lib, "1796385540000-0"),
		  RELAY_DLQ_UNDECIDED);
	dlqfilter_free(&f);
}

/* --malformed and --no-malformed on malformed entries, and the usage
 * errors that name both flags. */
static void test_filter__malformed_flags(void)
{
	static const char *const only[] = { "--malformed", "--since", "30m",
					    NULL };
	static const char *const none[] = { "--no-malformed", NULL };
	static const struct {
		const char *args[4];
		const char *other;
	} both[] = {
		{ { "--malformed", "--app", "a", NULL }, "--app" },
		{ { "--handler", "h", "--malformed", NULL }, "--handler" },
		{ { "--malformed", "--reason", "x", NULL }, "--reason" },
		{ { "--malformed", "--original-id", "1-0", NULL },
		  "--original-id" },
		{ { "--malformed", "--no-malformed", NULL }, "--malformed" },
	};
	struct dlqfilter f;
	char err[300];
	size_t t;

	RT_ASSERT(parse(&f, only, err, sizeof(err)) == 0);
	RT_CHECK(dlqfilter_active(&f));
	RT_CHECK(!dlqfilter_on_fields(&f));
	RT_CHECK(match_id(&f, "1796385540000-0"));
	RT_CHECK(!match_id(&f, "1796378400000-0"));  /* too old */
	dlqfilter_free(&f);
	RT_ASSERT(parse(&f, none, err, sizeof(err)) == 0);
	RT_CHECK(dlqfilter_active(&f));
	RT_CHECK(!match_id(&f, "1796385540000-0"));
	dlqfilter_free(&f);
	for (t = 0; t < sizeof(both) / sizeof(both[0]); t++) {
		RT_CHECK(parse(&f, both[t].args, err, sizeof(err)) == -1);
		if (!strstr(err, "malformed") || !strstr(err, both[t].other))
			RT_FAILF("case %zu: \"%s\" does not name both flags",
				 t, err);
		dlqfilter_free(&f);
	}
}

static void test_filter__when(void)
{
	int64_t ms;

	RT_EQ_INT(dlqfilter_parse_when("1970-01-01T00:00:00Z", NOW, &ms), 0);
	RT_EQ_INT(ms, 0);
	RT_EQ_INT(dlqfilter_parse_when("2000-02-29T00:00:00.5+00:30", NOW,
				       &ms), 0);
	RT_EQ_INT(ms, INT64_C(951782400500) - 1800000);
	RT_EQ_INT(dlqfilter_parse_when("2001-02-29T00:00:00Z", NOW, &ms), -1);
	RT_EQ_INT(dlqfilter_parse_when("0s", NOW, &ms), 0);
	RT_EQ_INT(ms, NOW);
	RT_EQ_INT(dlqfilter_parse_when("1d2h3m4s5ms", NOW, &ms), 0);
	RT_EQ_INT(ms, NOW - 93784005);
	RT_EQ_INT(dlqfilter_parse_when("", NOW, &ms), -1);
}

static const rt_case cases[] = {
	RT_CASE(test_filter__each_flag_and_combinations),
	RT_CASE(test_filter__bad_input_names_the_flag),
	RT_CASE(test_filter__other_arguments_left_alone),
	RT_CASE(test_filter__malformed_entry_by_id),
	RT_CASE(test_filter__malformed_flags),
	RT_CASE(test_filter__when),
};

int main(int argc, char **argv)
{
	return rt_main(argc, argv, cases, RT_NCASES(cases));
}
