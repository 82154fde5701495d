/*
 * bench-cron.c - what computing firing times costs.
 *
 *	bench-cron [ITERATIONS]
 *
 * Measures relay_cron_parse() (UTC, and a zone read from tzdata),
 * relay_cron_next() for a dense and a daily expression in UTC and in
 * America/New_York (instants spread over a year, so DST days are
 * included in their proportion), the same on the spring-forward day only
 * (the slow path that solves each wall time), and relay_cron_prev() of
 * an expression that never fires (the longest search, 11 years of days).
 * Baseline in the same run: glibc's localtime_r() of one instant in the
 * same zone, the cheapest thing a libc-based scheduler would do per
 * candidate minute. Results in ns per call, best of 5 rounds.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "relay/schedule.h"

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

typedef struct job {
	const char *name, *expr, *tz;
	int kind;      /* 0 parse, 1 next over a year, 2 next on DST day,
			  3 prev never, 4 localtime_r */
	int64_t base;  /* first instant */
	int64_t span;  /* instants spread over this many seconds */
} job;

static volatile int64_t sink;

static double run(const job *j, long n)
{
	relay_cron *c = NULL;
	double t0, t1;
	int64_t out;
	long i;

	if (j->kind != 0 && j->kind != 4 &&
	    relay_cron_parse(&c, j->expr, j->tz, NULL) != 0) {
		fprintf(stderr, "cannot parse %s in %s\n", j->expr, j->tz);
		exit(1);
	}
	t0 = now_ns();
	for (i = 0; i < n; i++) {
		int64_t t = j->base + (j->span ? (i * 7919) % j->span : 0);
		relay_cron *p;

		switch (j->kind) {
		case 0:
			if (relay_cron_parse(&p, j->expr, j->tz, NULL))
				exit(1);
			relay_cron_free(p);
			break;
		case 1:
		case 2:
			if (relay_cron_next(c, t, &out) == 0)
				sink += out;
			break;
		case 3:
			if (relay_cron_prev(c, t, &out) == 0)
				sink += out;
			break;
		default: {
			time_t tt = (time_t)t;
			struct tm tm;

			localtime_r(&tt, &tm);
			sink += tm.tm_gmtoff;
		}
		}
	}
	t1 = now_ns();
	relay_cron_free(c);
	return (t1 - t0) / (double)n;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 20000;
	const int64_t y2026 = 1767225600, year = 365 * 86400;
	const int64_t ny_spring = 1772942400; /* 2026-03-08T04:00Z */
	const job jobs[] = {
		{ "parse UTC", "*/15 9-17 * * MON-FRI", "UTC", 0, 0, 0 },
		{ "parse New_York", "*/15 9-17 * * MON-FRI",
		  "America/New_York", 0, 0, 0 },
		{ "next */15 UTC", "*/15 * * * *", "UTC", 1, y2026, year },
		{ "next */15 New_York", "*/15 * * * *", "America/New_York", 1,
		  y2026, year },
		{ "next 30 2 daily New_York", "30 2 * * *",
		  "America/New_York", 1, y2026, year },
		{ "next */15 New_York DST day", "*/15 * * * *",
		  "America/New_York", 2, ny_spring, 86400 },
		{ "next 30 2 New_York DST day", "30 2 * * *",
		  "America/New_York", 2, ny_spring, 86400 },
		{ "prev never (11 years)", "0 0 30 2 *", "America/New_York", 3,
		  y2026, year },
		{ "baseline localtime_r", "", "", 4, y2026, year },
	};
	size_t i;
	int r;

	setenv("TZ", ":America/New_York", 1);
	tzset();
	printf("%-30s %12s\n", "operation", "ns/call");
	for (i = 0; i < sizeof(jobs) / sizeof(jobs[0]); i++) {
		double best = 1e18;
		long m = jobs[i].kind == 0 || jobs[i].kind == 3 ? n / 20 : n;

		for (r = 0; r < 5; r++) {
			double v = run(&jobs[i], m ? m : 1);

			if (v < best)
				best = v;
		}
		printf("%-30s %12.0f\n", jobs[i].name, best);
	}
	return 0;
}
