/*
 * test_cron.c - the cron language, next/prev, DST in three zones (north,
 * south and a half-hour shift), Feb 29, the day-of-month/day-of-week OR
 * rule, names, macros, year rollovers, rejected forms with their
 * positions, and next/prev symmetry against a brute-force reference.
 */
#include "relaytest.h"
#include "rt_oom.h"
#include "sched_util.h"

typedef struct seq_case {
	const char *expr, *tz, *from;
	int n;
	const char *want;
} seq_case;

static void run_seq(const seq_case *cs, size_t n, bool prev)
{
	size_t i;

	for (i = 0; i < n; i++) {
		const char *got = prev ? prevs(cs[i].expr, cs[i].tz,
					       cs[i].from, cs[i].n)
				       : nexts(cs[i].expr, cs[i].tz,
					       cs[i].from, cs[i].n);

		if (strcmp(got, cs[i].want) != 0)
			RT_FAILF("%s \"%s\" in %s from %s:\n#  got  %s\n#  "
				 "want %s", prev ? "prev" : "next",
				 cs[i].expr, cs[i].tz ? cs[i].tz : "(null)",
				 cs[i].from, got, cs[i].want);
	}
}

#define RUN_NEXT(a) run_seq(a, RT_NCASES(a), false)
#define RUN_PREV(a) run_seq(a, RT_NCASES(a), true)

static void test_cron__utc_basics(void)
{
	static const seq_case cs[] = {
		{ "*/15 * * * *", NULL, "2026-01-01T00:00:00Z", 3,
		  "2026-01-01T00:15:00Z 2026-01-01T00:30:00Z "
		  "2026-01-01T00:45:00Z" },
		/* strictly after */
		{ "*/15 * * * *", "", "2026-01-01T00:14:59Z", 2,
		  "2026-01-01T00:15:00Z 2026-01-01T00:30:00Z" },
		{ "* * * * *", "UTC", "2026-01-01T00:00:30Z", 2,
		  "2026-01-01T00:01:00Z 2026-01-01T00:02:00Z" },
		{ "5-10/2,30 1 * * *", "UTC", "2026-01-01T00:00:00Z", 5,
		  "2026-01-01T01:05:00Z 2026-01-01T01:07:00Z "
		  "2026-01-01T01:09:00Z 2026-01-01T01:30:00Z "
		  "2026-01-02T01:05:00Z" },
		{ "50/5 23 * * *", "UTC", "2026-01-01T00:00:00Z", 3,
		  "2026-01-01T23:50:00Z 2026-01-01T23:55:00Z "
		  "2026-01-02T23:50:00Z" },
		{ "0 */6 * * *", "UTC", "2026-01-01T05:00:00Z", 3,
		  "2026-01-01T06:00:00Z 2026-01-01T12:00:00Z "
		  "2026-01-01T18:00:00Z" },
		{ "0 0 1 */3 *", "UTC", "2026-01-01T00:00:00Z", 3,
		  "2026-04-01T00:00:00Z 2026-07-01T00:00:00Z "
		  "2026-10-01T00:00:00Z" },
		/* names, any case */
		{ "0 12 * jan,JUL Mon-fri", "UTC", "2026-01-30T13:00:00Z",
		  3, "2026-07-01T12:00:00Z 2026-07-02T12:00:00Z "
		  "2026-07-03T12:00:00Z" },
		{ "0 0 1 dec-Dec *", "UTC", "2026-01-01T00:00:00Z", 1,
		  "2026-12-01T00:00:00Z" },
		{ "0 0 1 JAN/3 *", "UTC", "2026-01-01T00:00:00Z", 3,
		  "2026-04-01T00:00:00Z 2026-07-01T00:00:00Z "
		  "2026-10-01T00:00:00Z" },
		/* 0 and 7 are Sunday; 5-7 wraps to Sunday */
		{ "0 0 * * 7", "UTC", "2026-01-01T00:00:00Z", 2,
		  "2026-01-04T00:00:00Z 2026-01-11T00:00:00Z" },
		{ "0 0 * * 0", "UTC", "2026-01-01T00:00:00Z", 1,
		  "2026-01-04T00:00:00Z" },
		{ "0 0 * * 5-7", "UTC", "2026-01-01T00:00:00Z", 4,
		  "2026-01-02T00:00:00Z 2026-01-03T00:00:00Z "
		  "2026-01-04T00:00:00Z 2026-01-09T00:00:00Z" },
		{ "0 0 * * sat,SUN", "UTC", "2026-01-01T00:00:00Z", 2,
		  "2026-01-03T00:00:00Z 2026-01-04T00:00:00Z" },
		/* blanks around and between fields */
		{ "  0\t0  * * *  ", "UTC", "2026-01-01T00:00:00Z", 1,
		  "2026-01-02T00:00:00Z" },
	};

	RUN_NEXT(cs);
}

static void test_cron__macros(void)
{
	static const seq_case cs[] = {
		{ "@hourly", "UTC", "2026-01-01T00:30:00Z", 2,
		  "2026-01-01T01:00:00Z 2026-01-01T02:00:00Z" },
		{ "@daily", "UTC", "2026-01-01T00:30:00Z", 2,
		  "2026-01-02T00:00:00Z 2026-01-03T00:00:00Z" },
		{ "@midnight", "UTC", "2026-01-01T00:30:00Z", 1,
		  "2026-01-02T00:00:00Z" },
		{ "@weekly", "UTC", "2026-01-01T00:30:00Z", 2,
		  "2026-01-04T00:00:00Z 2026-01-11T00:00:00Z" },
		{ "@MONTHLY", "UTC", "2026-01-01T00:30:00Z", 2,
		  "2026-02-01T00:00:00Z 2026-03-01T00:00:00Z" },
		{ "@yearly", "UTC", "2026-01-01T00:30:00Z", 2,
		  "2027-01-01T00:00:00Z 2028-01-01T00:00:00Z" },
		{ " @annually ", "UTC", "2026-01-01T00:30:00Z", 1,
		  "2027-01-01T00:00:00Z" },
	};

	RUN_NEXT(cs);
}

/* Both day fields restricted: either matches. One starts with '*': both. */
static void test_cron__dom_dow_or_rule(void)
{
	static const seq_case cs[] = {
		/* 2026-01-13 is a Tuesday; Fridays are 2, 9, 16 */
		{ "0 0 13 * FRI", "UTC", "2026-01-01T00:00:00Z", 4,
		  "2026-01-02T00:00:00Z 2026-01-09T00:00:00Z "
		  "2026-01-13T00:00:00Z 2026-01-16T00:00:00Z" },
		/* the classic surprise: 1-31 is a restriction, so daily */
		{ "0 0 1-31 * 1", "UTC", "2026-01-01T00:00:00Z", 3,
		  "2026-01-02T00:00:00Z 2026-01-03T00:00:00Z "
		  "2026-01-04T00:00:00Z" },
		/* '*' + step counts as unrestricted: odd days AND Monday */
		{ "0 0 */2 * MON", "UTC", "2026-01-01T00:00:00Z", 3,
		  "2026-01-05T00:00:00Z 2026-01-19T00:00:00Z "
		  "2026-02-09T00:00:00Z" },
		{ "0 0 1 * *", "UTC", "2026-01-15T00:00:00Z", 2,
		  "2026-02-01T00:00:00Z 2026-03-01T00:00:00Z" },
		{ "0 0 * * MON", "UTC", "2026-01-01T00:00:00Z", 2,
		  "2026-01-05T00:00:00Z 2026-01-12T00:00:00Z" },
		/* Feb 30 never exists, but Mondays of February do */
		{ "0 0 30 2 MON", "UTC", "2026-01-01T00:00:00Z", 2,
		  "2026-02-02T00:00:00Z 2026-02-09T00:00:00Z" },
	};

	RUN_NEXT(cs);
}

static void test_cron__feb29_and_never(void)
{
	static const seq_case nx[] = {
		{ "0 0 29 2 *", "UTC", "2026-01-01T00:00:00Z", 3,
		  "2028-02-29T00:00:00Z 2032-02-29T00:00:00Z "
		  "2036-02-29T00:00:00Z" },
		/* 2100 is not a leap year: 8 years apart */
		{ "0 0 29 2 *", "UTC", "2096-03-01T00:00:00Z", 1,
		  "2104-02-29T00:00:00Z" },
		{ "0 0 29 2 *", "UTC", "2000-01-01T00:00:00Z", 1,
		  "2000-02-29T00:00:00Z" },
		{ "0 0 30 2 *", "UTC", "2026-01-01T00:00:00Z", 1, "none" },
		{ "0 0 31 4,6,9,11 *", "UTC", "2026-01-01T00:00:00Z", 1,
		  "none" },
		{ "0 0 31 * *", "UTC", "2026-01-31T00:00:00Z", 2,
		  "2026-03-31T00:00:00Z 2026-05-31T00:00:00Z" },
		/* Feb 29 on a Sunday (both must hold: the day of week is
		 * "*"-led): 28 years apart, 40 across 2100 */
		{ "0 0 29 2 */7", "UTC", "2005-01-01T00:00:00Z", 3,
		  "2032-02-29T00:00:00Z 2060-02-29T00:00:00Z "
		  "2088-02-29T00:00:00Z" },
		{ "0 0 29 2 */7", "UTC", "2088-02-29T00:00:00Z", 1,
		  "2128-02-29T00:00:00Z" },
		/* Mar 1 on a Saturday, 11 years apart, from just after a
		 * firing (what fuzz-cron found: 02:59 was the last minute) */
		{ "* 2 */31 3 6", "Europe/Berlin", "1986-03-01T02:59:00+01:00",
		  1, "1997-03-01T02:00:00+01:00" },
	};
	static const seq_case pv[] = {
		{ "0 0 29 2 *", "UTC", "2103-12-31T00:00:00Z", 2,
		  "2096-02-29T00:00:00Z 2092-02-29T00:00:00Z" },
		{ "0 0 30 2 *", "UTC", "2026-01-01T00:00:00Z", 1, "none" },
		{ "0 0 29 2 */7", "UTC", "2127-12-31T00:00:00Z", 2,
		  "2088-02-29T00:00:00Z 2060-02-29T00:00:00Z" },
	};

	RUN_NEXT(nx);
	RUN_PREV(pv);
}

static void test_cron__year_rollover(void)
{
	static const seq_case nx[] = {
		{ "59 23 31 12 *", "UTC", "2026-12-31T23:59:00Z", 2,
		  "2027-12-31T23:59:00Z 2028-12-31T23:59:00Z" },
		{ "0 0 1 1 *", "UTC", "2026-12-31T23:59:59Z", 1,
		  "2027-01-01T00:00:00Z" },
		{ "*/30 * * * *", "UTC", "2026-12-31T23:15:00Z", 3,
		  "2026-12-31T23:30:00Z 2027-01-01T00:00:00Z "
		  "2027-01-01T00:30:00Z" },
		{ "0 0 1 1 *", "Asia/Tokyo", "2026-12-31T14:59:59Z", 1,
		  "2027-01-01T00:00:00+09:00" },
	};
	static const seq_case pv[] = {
		{ "0 0 1 1 *", "UTC", "2027-01-01T00:00:00Z", 2,
		  "2027-01-01T00:00:00Z 2026-01-01T00:00:00Z" },
		{ "0 0 1 1 *", "UTC", "2026-12-31T23:59:59Z", 1,
		  "2026-01-01T00:00:00Z" },
		{ "*/30 * * * *", "UTC", "2027-01-01T00:29:59Z", 2,
		  "2027-01-01T00:00:00Z 2026-12-31T23:30:00Z" },
	};

	NEED_TZDATA();

	RUN_NEXT(nx);
	RUN_PREV(pv);
}

/* Fixed-offset zones, including half-hour ones. */
static void test_cron__fixed_offsets(void)
{
	static const seq_case cs[] = {
		/* Etc/GMT+5 is UTC-5 (POSIX sign) */
		{ "0 12 * * *", "Etc/GMT+5", "2026-01-01T00:00:00Z", 1,
		  "2026-01-01T12:00:00-05:00" },
		{ "0 0 * * *", "Asia/Kolkata", "2026-01-01T00:00:00Z", 2,
		  "2026-01-02T00:00:00+05:30 2026-01-03T00:00:00+05:30" },
		{ "0 0 * * *", "Asia/Kathmandu", "2026-01-01T00:00:00Z", 1,
		  "2026-01-02T00:00:00+05:45" },
	};

	NEED_TZDATA();

	RUN_NEXT(cs);
}

/* America/New_York: 2026-03-08 02:00 EST → 03:00 EDT; 2026-11-01 02:00
 * EDT → 01:00 EST. */
static void test_cron__dst_new_york(void)
{
	static const char *ny = "America/New_York";
	const seq_case nx[] = {
		/* gap: fixed time fires once, at the end of the gap */
		{ "30 2 * * *", ny, "2026-03-07T00:00:00-05:00", 3,
		  "2026-03-07T02:30:00-05:00 2026-03-08T03:00:00-04:00 "
		  "2026-03-09T02:30:00-04:00" },
		{ "0,30 2 * * *", ny, "2026-03-08T00:00:00-05:00", 2,
		  "2026-03-08T03:00:00-04:00 2026-03-09T02:00:00-04:00" },
		{ "0 3 * * *", ny, "2026-03-08T00:00:00-05:00", 1,
		  "2026-03-08T03:00:00-04:00" },
		/* gap: wildcard jobs follow real time */
		{ "*/15 * * * *", ny, "2026-03-08T01:30:00-05:00", 4,
		  "2026-03-08T01:45:00-05:00 2026-03-08T03:00:00-04:00 "
		  "2026-03-08T03:15:00-04:00 2026-03-08T03:30:00-04:00" },
		{ "30 * * * *", ny, "2026-03-08T00:00:00-05:00", 3,
		  "2026-03-08T00:30:00-05:00 2026-03-08T01:30:00-05:00 "
		  "2026-03-08T03:30:00-04:00" },
		/* overlap: fixed time fires once, at the first pass */
		{ "30 1 * * *", ny, "2026-10-31T00:00:00-04:00", 3,
		  "2026-10-31T01:30:00-04:00 2026-11-01T01:30:00-04:00 "
		  "2026-11-02T01:30:00-05:00" },
		{ "59 1 * * *", ny, "2026-11-01T01:58:00-04:00", 2,
		  "2026-11-01T01:59:00-04:00 2026-11-02T01:59:00-05:00" },
		/* overlap: wildcard jobs fire on both passes */
		{ "30 * * * *", ny, "2026-11-01T00:00:00-04:00", 4,
		  "2026-11-01T00:30:00-04:00 2026-11-01T01:30:00-04:00 "
		  "2026-11-01T01:30:00-05:00 2026-11-01T02:30:00-05:00" },
		{ "*/20 * * * *", ny, "2026-11-01T00:50:00-04:00", 7,
		  "2026-11-01T01:00:00-04:00 2026-11-01T01:20:00-04:00 "
		  "2026-11-01T01:40:00-04:00 2026-11-01T01:00:00-05:00 "
		  "2026-11-01T01:20:00-05:00 2026-11-01T01:40:00-05:00 "
		  "2026-11-01T02:00:00-05:00" },
		{ "* 1 * * *", ny, "2026-11-01T01:58:00-04:00", 3,
		  "2026-11-01T01:59:00-04:00 2026-11-01T01:00:00-05:00 "
		  "2026-11-01T01:01:00-05:00" },
		{ "@hourly", ny, "2026-11-01T00:30:00-04:00", 3,
		  "2026-11-01T01:00:00-04:00 2026-11-01T01:00:00-05:00 "
		  "2026-11-01T02:00:00-05:00" },
		/* beyond the last TZif transition: the footer rule (second
		 * Sunday of March 2100 is the 14th) */
		{ "30 2 * * *", ny, "2100-03-13T00:00:00-05:00", 3,
		  "2100-03-13T02:30:00-05:00 2100-03-14T03:00:00-04:00 "
		  "2100-03-15T02:30:00-04:00" },
	};
	const seq_case pv[] = {
		{ "30 * * * *", ny, "2026-11-01T02:30:00-05:00", 4,
		  "2026-11-01T02:30:00-05:00 2026-11-01T01:30:00-05:00 "
		  "2026-11-01T01:30:00-04:00 2026-11-01T00:30:00-04:00" },
		{ "30 1 * * *", ny, "2026-11-02T01:30:00-05:00", 3,
		  "2026-11-02T01:30:00-05:00 2026-11-01T01:30:00-04:00 "
		  "2026-10-31T01:30:00-04:00" },
		{ "30 2 * * *", ny, "2026-03-09T02:30:00-04:00", 3,
		  "2026-03-09T02:30:00-04:00 2026-03-08T03:00:00-04:00 "
		  "2026-03-07T02:30:00-05:00" },
		{ "*/15 * * * *", ny, "2026-03-08T03:15:00-04:00", 3,
		  "2026-03-08T03:15:00-04:00 2026-03-08T03:00:00-04:00 "
		  "2026-03-08T01:45:00-05:00" },
	};

	NEED_TZDATA();

	RUN_NEXT(nx);
	RUN_PREV(pv);
}

/* Europe/Berlin: 2026-03-29 02:00 CET → 03:00 CEST; 2026-10-25 03:00
 * CEST → 02:00 CET. */
static void test_cron__dst_berlin(void)
{
	static const char *be = "Europe/Berlin";
	const seq_case nx[] = {
		{ "30 2 * * *", be, "2026-03-28T00:00:00+01:00", 3,
		  "2026-03-28T02:30:00+01:00 2026-03-29T03:00:00+02:00 "
		  "2026-03-30T02:30:00+02:00" },
		{ "30 2 * * *", be, "2026-10-24T00:00:00+02:00", 3,
		  "2026-10-24T02:30:00+02:00 2026-10-25T02:30:00+02:00 "
		  "2026-10-26T02:30:00+01:00" },
		{ "*/30 * * * *", be, "2026-10-25T01:45:00+02:00", 5,
		  "2026-10-25T02:00:00+02:00 2026-10-25T02:30:00+02:00 "
		  "2026-10-25T02:00:00+01:00 2026-10-25T02:30:00+01:00 "
		  "2026-10-25T03:00:00+01:00" },
		{ "*/30 * * * *", be, "2026-03-29T01:15:00+01:00", 3,
		  "2026-03-29T01:30:00+01:00 2026-03-29T03:00:00+02:00 "
		  "2026-03-29T03:30:00+02:00" },
	};
	const seq_case pv[] = {
		{ "30 2 * * *", be, "2026-10-26T00:00:00+01:00", 2,
		  "2026-10-25T02:30:00+02:00 2026-10-24T02:30:00+02:00" },
	};

	NEED_TZDATA();

	RUN_NEXT(nx);
	RUN_PREV(pv);
}

/* Australia/Lord_Howe: southern hemisphere, 30-minute shifts.
 * 2026-04-05 02:00 +11 → 01:30 +10:30; 2026-10-04 02:00 → 02:30 +11. */
static void test_cron__dst_lord_howe(void)
{
	static const char *lh = "Australia/Lord_Howe";
	const seq_case nx[] = {
		{ "45 1 * * *", lh, "2026-04-04T00:00:00+11:00", 3,
		  "2026-04-04T01:45:00+11:00 2026-04-05T01:45:00+11:00 "
		  "2026-04-06T01:45:00+10:30" },
		{ "15 2 * * *", lh, "2026-10-03T00:00:00+10:30", 3,
		  "2026-10-03T02:15:00+10:30 2026-10-04T02:30:00+11:00 "
		  "2026-10-05T02:15:00+11:00" },
		{ "*/10 * * * *", lh, "2026-10-04T01:45:00+10:30", 3,
		  "2026-10-04T01:50:00+10:30 2026-10-04T02:30:00+11:00 "
		  "2026-10-04T02:40:00+11:00" },
	};

	NEED_TZDATA();

	RUN_NEXT(nx);
}

typedef struct bad_case {
	const char *expr;
	int column;
	const char *text;
} bad_case;

static void test_cron__rejected(void)
{
	static const bad_case cs[] = {
		{ "", 1, "empty cron expression" },
		{ "   ", 4, "empty cron expression" },
		{ "* * * *", 8, "only 4 fields, expected 5 (minute hour "
		  "day-of-month month day-of-week)" },
		{ "*", 2, "only 1 field," },
		{ "0 * * * * *", 11, "6 fields, expected 5 (minute hour "
		  "day-of-month month day-of-week); seconds and year fields "
		  "are not supported" },
		{ "0 0 12 * * ? 2026", 12, "7 fields, expected 5" },
		{ "@every 5m", 1, "@every is not supported" },
		{ "@reboot", 1, "@reboot is not supported" },
		{ "@weekdays", 1, "unknown macro \"@weekdays\"" },
		{ "@daily 0", 8, "unexpected text after @daily" },
		{ "TZ=UTC 0 * * * *", 1, "TZ= and CRON_TZ= prefixes are not "
		  "supported" },
		{ "CRON_TZ=Europe/Berlin 0 * * * *", 1, "TZ= and CRON_TZ=" },
		{ "0 0 ? * MON", 5, "day-of-month field: '?' is not supported" },
		{ "0 0 L * *", 5, "day-of-month field: 'L' (last) is not "
		  "supported" },
		{ "0 0 LW * *", 5, "day-of-month field: 'L' (last)" },
		{ "0 0 15W * *", 7, "day-of-month field: 'W' (nearest weekday)" },
		{ "0 0 * * MON#2", 12, "day-of-week field: '#' (nth weekday)" },
		{ "0 0 * * 5L", 10, "day-of-week field: 'L' (last)" },
		{ "60 * * * *", 1, "minute field: 60 is out of range 0-59" },
		{ "0 24 * * *", 3, "hour field: 24 is out of range 0-23" },
		{ "0 0 0 * *", 5, "day-of-month field: 0 is out of range 1-31" },
		{ "0 0 32 * *", 5, "day-of-month field: 32 is out of range" },
		{ "0 0 * 13 *", 7, "month field: 13 is out of range 1-12" },
		{ "0 0 * 0 *", 7, "month field: 0 is out of range 1-12" },
		{ "0 0 * * 8", 9, "day-of-week field: 8 is out of range 0-7" },
		{ "99999999999999 * * * *", 1, "minute field: 999999999 is "
		  "out of range" },
		{ "5-1 * * * *", 3, "minute field: reversed range 5-1" },
		{ "0 0 * * FRI-MON", 13, "day-of-week field: reversed range "
		  "FRI-MON" },
		{ "0 0 * * 7-1", 11, "day-of-week field: reversed range 7-1" },
		{ "*/0 * * * *", 3, "minute field: step 0 is out of range 1-59" },
		{ "*/60 * * * *", 3, "minute field: step 60 is out of range" },
		{ "*/ * * * *", 3, "minute field: step must be a number" },
		{ "1,,2 * * * *", 3, "minute field: empty list item" },
		{ "1, * * * *", 3, "minute field: empty list item" },
		{ ",1 * * * *", 1, "minute field: empty list item" },
		{ "0 0 * FOO *", 7, "month field: unknown name \"FOO\"" },
		{ "0 0 * * MONDAY", 9, "day-of-week field: unknown name "
		  "\"MONDAY\"" },
		{ "MON * * * *", 1, "minute field: names like \"MON\" are only "
		  "allowed in the month and day-of-week fields" },
		{ "0 0 * * 1-", 11, "day-of-week field: value missing" },
		{ "1-2-3 * * * *", 4, "minute field: unexpected '-'" },
		{ "0x10 * * * *", 2, "minute field: unexpected 'x'" },
		{ "*5 * * * *", 2, "minute field: unexpected '5'" },
		{ "0 0 * * 1=2", 10, "day-of-week field: unexpected '='" },
	};
	size_t i;

	for (i = 0; i < RT_NCASES(cs); i++) {
		relay_cron *c = (relay_cron *)1;
		relay_error err;
		int rc = relay_cron_parse(&c, cs[i].expr, "UTC", &err);

		if (rc != RELAY_EPARSE || c != NULL) {
			RT_FAILF("\"%s\": rc %d, want RELAY_EPARSE",
				 cs[i].expr, rc);
			relay_cron_free(c);
			continue;
		}
		if (strncmp(err.text, cs[i].text, strlen(cs[i].text)) != 0 ||
		    err.column != cs[i].column || err.line != 0 ||
		    err.code != RELAY_EPARSE)
			RT_FAILF("\"%s\": got col %d \"%s\", want col %d "
				 "\"%s...\"", cs[i].expr, err.column, err.text,
				 cs[i].column, cs[i].text);
	}
}

static void test_cron__zones(void)
{
	static const struct {
		const char *tz;
		int rc;
		const char *text;
	} cs[] = {
		{ "Mars/Olympus_Mons", RELAY_ENOTFOUND,
		  "unknown time zone \"Mars/Olympus_Mons\"" },
		{ "America", RELAY_ENOTFOUND, "unknown time zone" },
		{ "../etc/passwd", RELAY_EINVAL, "invalid time zone name" },
		{ "/etc/localtime", RELAY_EINVAL, "invalid time zone name" },
		{ "America/../Europe/Berlin", RELAY_EINVAL, "invalid" },
		{ "Europe//Berlin", RELAY_EINVAL, "invalid" },
		{ "Europe/Berlin/", RELAY_EINVAL, "invalid" },
		{ "Europe/Berlin ", RELAY_EINVAL, "invalid" },
		{ "zone.tab", RELAY_EINVAL, "invalid" },
		{ "Europe/Berlin", 0, "" },
		{ "Etc/GMT-14", 0, "" },
		{ "UTC", 0, "" },
	};
	size_t i;
	relay_cron *c;
	relay_error err;

	NEED_TZDATA();

	for (i = 0; i < RT_NCASES(cs); i++) {
		int rc = relay_cron_parse(&c, "0 0 * * *", cs[i].tz, &err);

		if (rc != cs[i].rc || (rc && strncmp(err.text, cs[i].text,
						     strlen(cs[i].text))))
			RT_FAILF("zone \"%s\": rc %d \"%s\", want %d \"%s\"",
				 cs[i].tz, rc, rc ? err.text : "", cs[i].rc,
				 cs[i].text);
		relay_cron_free(c);
	}
	RT_EQ_INT(relay_cron_parse(&c, "@daily", NULL, NULL), 0);
	RT_EQ_STR(relay_cron_timezone(c), "UTC");
	relay_cron_free(c);
	RT_EQ_INT(relay_cron_parse(&c, "@daily", "Asia/Tokyo", NULL), 0);
	RT_EQ_STR(relay_cron_timezone(c), "Asia/Tokyo");
	RT_EQ_INT(relay_cron_utc_offset(c, iso("2026-07-01T00:00:00Z")),
		  9 * 3600);
	relay_cron_free(c);
	/* an expression error wins over a zone error */
	RT_EQ_INT(relay_cron_parse(&c, "61 * * * *", "Nowhere", &err),
		  RELAY_EPARSE);
}

static void test_cron__range_limits(void)
{
	relay_cron *c;
	int64_t t;

	RT_ASSERT(relay_cron_parse(&c, "0 0 1 1 *", "UTC", NULL) == 0);
	RT_EQ_INT(relay_cron_next(c, RELAY__SCHED_MAX_S + 1, &t),
		  RELAY_EINVAL);
	RT_EQ_INT(relay_cron_prev(c, RELAY__SCHED_MIN_S - 1, &t),
		  RELAY_EINVAL);
	RT_EQ_INT(relay_cron_next(c, INT64_MAX, &t), RELAY_EINVAL);
	RT_EQ_INT(relay_cron_prev(c, INT64_MIN, &t), RELAY_EINVAL);
	RT_EQ_INT(relay_cron_prev(c, iso("0001-06-01T00:00:00Z"), &t), 0);
	RT_EQ_INT(t, iso("0001-01-01T00:00:00Z"));
	RT_EQ_INT(relay_cron_next(c, iso("9999-06-01T00:00:00Z"), &t), 0);
	RT_EQ_INT(t, iso("10000-01-01T00:00:00Z"));
	/* before 1970 */
	RT_EQ_INT(relay_cron_next(c, iso("1969-12-31T12:00:00Z"), &t), 0);
	RT_EQ_INT(t, 0);
	relay_cron_free(c);
}

/*
 * The reference: walk real time minute by minute (every offset in these
 * zones and years is whole minutes) and decide from the definition in
 * relay/schedule.h whether each instant fires.
 */
static bool wall_matches(const relay_cron *c, int64_t l)
{
	int64_t days = relay__floordiv(l, 86400), y;
	int sod = (int)(l - days * 86400), m, d;
	bool dom_ok, dow_ok, day_ok;

	relay__civil_from_days(days, &y, &m, &d);
	dom_ok = c->dom >> d & 1;
	dow_ok = c->dow >> relay__weekday(days) & 1;
	day_ok = c->dom_star || c->dow_star ? dom_ok && dow_ok
					    : dom_ok || dow_ok;
	return day_ok && (c->month >> m & 1) && (c->hour >> (sod / 3600) & 1) &&
	       (c->minute >> (sod / 60 % 60) & 1);
}

static bool ref_fires(const relay_cron *c, int64_t t)
{
	int32_t o = relay_cron_utc_offset(c, t);
	int32_t before = relay_cron_utc_offset(c, t - 1);
	int64_t l = t + o, s;
	int k;

	if (wall_matches(c, l)) {
		if (c->wild)
			return true;
		/* fixed: only the first occurrence of l fires */
		for (k = 1; k <= 26 * 60; k++) {
			s = t - 60 * k;
			if (s + relay_cron_utc_offset(c, s) == l)
				return false;
		}
		return true;
	}
	if (!c->wild && before < o) /* end of a gap: skipped wall times */
		for (s = t + before; s < l; s += 60)
			if (wall_matches(c, s))
				return true;
	return false;
}

/* The firings in [from, to) by the reference, by next() and by prev(). */
static void check_against_reference(const char *expr, const char *tz,
				    int64_t from, int64_t to)
{
	static int64_t ref[6000], got[6000];
	relay_cron *c;
	int64_t t;
	size_t nref = 0, ngot = 0, i;
	char b1[64], b2[64];

	RT_ASSERT(relay_cron_parse(&c, expr, tz, NULL) == 0);
	for (t = from; t < to && nref < RT_NCASES(ref); t += 60)
		if (ref_fires(c, t))
			ref[nref++] = t;
	for (t = from - 1; ngot < RT_NCASES(got);) {
		RT_ASSERT(relay_cron_next(c, t, &t) == 0);
		if (t >= to)
			break;
		got[ngot++] = t;
	}
	for (i = 0; i < nref || i < ngot; i++)
		if (i >= nref || i >= ngot || ref[i] != got[i]) {
			RT_FAILF("%s in %s: firing %zu: next() %s, reference "
				 "%s", expr, tz, i,
				 i < ngot ? fmt_local(c, got[i], b1, 64) : "-",
				 i < nref ? fmt_local(c, ref[i], b2, 64) : "-");
			goto out;
		}
	for (t = to - 1, i = nref; i > 0; i--) {
		RT_ASSERT(relay_cron_prev(c, t, &t) == 0);
		if (t != ref[i - 1]) {
			RT_FAILF("%s in %s: prev() %s, reference %s", expr, tz,
				 fmt_local(c, t, b1, 64),
				 fmt_local(c, ref[i - 1], b2, 64));
			goto out;
		}
		t--;
	}
	RT_CHECK(relay_cron_prev(c, t, &t) != 0 || t < from);
out:
	relay_cron_free(c);
}

static void test_cron__dst_reference(void)
{
	static const char *exprs[] = { "30 2 * * *", "*/15 * * * *",
		"30 * * * *", "0,30 1-3 * * *", "* 2 * * *", "*/7 2 * * *",
		"0 0 * * *", "45 1 * * *", "10-20/5 0-3 * * 0" };
	static const struct {
		const char *tz, *around;
	} zs[] = {
		{ "America/New_York", "2026-03-08T07:00:00Z" },
		{ "America/New_York", "2026-11-01T06:00:00Z" },
		{ "Europe/Berlin", "2026-03-29T01:00:00Z" },
		{ "Europe/Berlin", "2026-10-25T01:00:00Z" },
		{ "Australia/Lord_Howe", "2026-04-04T15:00:00Z" },
		{ "Australia/Lord_Howe", "2026-10-03T15:30:00Z" },
		{ "America/New_York", "2101-03-13T07:00:00Z" },
		{ "Europe/Berlin", "2101-10-30T01:00:00Z" },
	};
	size_t i, j;

	NEED_TZDATA();

	for (i = 0; i < RT_NCASES(zs); i++)
		for (j = 0; j < RT_NCASES(exprs); j++) {
			int64_t a = iso(zs[i].around);

			check_against_reference(exprs[j], zs[i].tz,
						a - 86400 - 7200,
						a + 86400 + 3600);
		}
}

/* next/prev symmetry over many firings, in UTC and DST zones. */
static void test_cron__symmetry(void)
{
	static const char *exprs[] = { "*/7 * * * *", "30 2 * * *",
		"0 0 29 2 *", "0 12 13 * FRI", "15 1,2,3 * 3,10,11 SUN",
		"@hourly", "0 0 31 * *" };
	static const char *zones[] = { "UTC", "America/New_York",
		"Europe/Berlin", "Australia/Sydney", "Asia/Kolkata" };
	size_t i, j;
	int k;

	NEED_TZDATA();

	for (i = 0; i < RT_NCASES(exprs); i++)
		for (j = 0; j < RT_NCASES(zones); j++) {
			relay_cron *c;
			int64_t t = iso("2025-12-20T00:00:00Z"), nx, pv, last;

			RT_ASSERT(relay_cron_parse(&c, exprs[i], zones[j],
						   NULL) == 0);
			RT_ASSERT(relay_cron_next(c, t, &last) == 0);
			for (k = 0; k < 200; k++) {
				if (relay_cron_next(c, last, &nx) != 0 ||
				    nx <= last ||
				    relay_cron_prev(c, nx - 1, &pv) != 0 ||
				    pv != last ||
				    relay_cron_prev(c, nx, &pv) != 0 ||
				    pv != nx) {
					RT_FAILF("%s in %s: asymmetric at %lld",
						 exprs[i], zones[j],
						 (long long)last);
					break;
				}
				last = nx;
			}
			relay_cron_free(c);
		}
}

/* One relay_cron shared by threads is read-only: parsing twice gives
 * equal results and the struct is not written by next/prev. */
static void test_cron__immutable(void)
{
	relay_cron *c, copy;
	int64_t t;

	NEED_TZDATA();

	RT_ASSERT(relay_cron_parse(&c, "30 1 * * *", "America/New_York",
				   NULL) == 0);
	memcpy(&copy, c, sizeof(copy));
	RT_EQ_INT(relay_cron_next(c, iso("2026-11-01T00:00:00Z"), &t), 0);
	RT_EQ_INT(relay_cron_prev(c, iso("2026-11-01T00:00:00Z"), &t), 0);
	RT_CHECK(memcmp(&copy, c, sizeof(copy)) == 0);
	relay_cron_free(c);
	relay_cron_free(NULL);
}

/* Every allocation failure while parsing is RELAY_ENOMEM, no leak. */
static void test_cron__oom(void)
{
	static const char *tzs[] = { "UTC", "America/New_York", "Nowhere/X" };
	size_t i;
	int oom_fail_at;

	NEED_TZDATA();
	for (i = 0; i < RT_NCASES(tzs); i++) {
		for (oom_fail_at = 1; oom_fail_at < 100; oom_fail_at++) {
			relay_cron *c = NULL;
			relay_error err;
			int rc;

			rt_oom_arm(oom_fail_at, 0);
			rt_oom_install();
			rc = relay_cron_parse(&c, "30 2 * * *", tzs[i], &err);
			relay_cron_free(c);
			relay_set_allocator(NULL, NULL, NULL);
			if (!rt_oom_fired()) { /* no failure injected */
				RT_EQ_INT(rc, i == 2 ? RELAY_ENOTFOUND : 0);
				break;
			}
			if (rc != RELAY_ENOMEM || c != NULL ||
			    err.code != RELAY_ENOMEM)
				RT_FAILF("%s, allocation %d failing: rc %d",
					 tzs[i], oom_fail_at, rc);
		}
		RT_CHECK(oom_fail_at > 1 && oom_fail_at < 100);
	}
}

static const rt_case cases[] = {
	RT_CASE(test_cron__utc_basics),
	RT_CASE(test_cron__macros),
	RT_CASE(test_cron__dom_dow_or_rule),
	RT_CASE(test_cron__feb29_and_never),
	RT_CASE(test_cron__year_rollover),
	RT_CASE(test_cron__fixed_offsets),
	RT_CASE(test_cron__dst_new_york),
	RT_CASE(test_cron__dst_berlin),
	RT_CASE(test_cron__dst_lord_howe),
	RT_CASE(test_cron__rejected),
	RT_CASE(test_cron__zones),
	RT_CASE(test_cron__range_limits),
	RT_CASE(test_cron__dst_reference),
	RT_CASE(test_cron__symmetry),
	RT_CASE(test_cron__immutable),
	RT_CASE(test_cron__oom),
};

int main(int argc, char **argv)
{
	return rt_main(argc, argv, cases, RT_NCASES(cases));
}
