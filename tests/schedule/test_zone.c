/*
 * test_zone.c - the TZif reader and POSIX TZ rules: offsets against the C
 * library's own reading of the same tzdata (1900-2150, past the end of
 * every zone's transition table), hand-built TZif files (version 1,
 * footer-only, corrupt, leap seconds), $TZDIR, and the rule parser.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "relaytest.h"
#include "sched_util.h"

static void test_zone__matches_libc(void)
{
	static const char *zones[] = { "America/New_York", "Europe/Berlin",
		"Australia/Lord_Howe", "Australia/Sydney", "Europe/Dublin",
		"America/Sao_Paulo", "Asia/Kolkata", "Pacific/Apia",
		"America/Nuuk", "Africa/Casablanca", "Pacific/Chatham",
		"Antarctica/Troll", "America/Santiago", "Asia/Tehran" };
	const char *old = getenv("TZ");
	char *saved = old ? strdup(old) : NULL;
	size_t i;

	if (access("/usr/share/zoneinfo/Europe/Berlin", R_OK) != 0)
		RT_SKIP("no tzdata in /usr/share/zoneinfo");
	for (i = 0; i < RT_NCASES(zones); i++) {
		relay__zone z;
		char tzenv[128];
		int64_t t, bad = 0;

		RT_ASSERT(relay__zone_load(&z, zones[i], NULL) == 0);
		snprintf(tzenv, sizeof(tzenv), ":%s", zones[i]);
		setenv("TZ", tzenv, 1);
		tzset();
		for (t = iso("1900-01-01T00:00:00Z");
		     t < iso("2150-01-01T00:00:00Z") && bad < 3;
		     t += 6 * 3600 + 1234) {
			time_t tt = (time_t)t;
			struct tm tm;

			localtime_r(&tt, &tm);
			if (tm.tm_gmtoff != relay__zone_offset(&z, t)) {
				RT_FAILF("%s at %lld: offset %d, libc %ld",
					 zones[i], (long long)t,
					 relay__zone_offset(&z, t),
					 tm.tm_gmtoff);
				bad++;
			}
		}
		relay__zone_clear(&z);
	}
	if (saved) {
		setenv("TZ", saved, 1);
		free(saved);
	} else {
		unsetenv("TZ");
	}
	tzset();
}

/* A TZif image under construction. */
typedef struct img {
	unsigned char b[4096];
	size_t n;
} img;

static void put(img *m, const void *p, size_t n)
{
	memcpy(m->b + m->n, p, n);
	m->n += n;
}

static void put32(img *m, uint32_t v)
{
	unsigned char p[4] = { v >> 24, v >> 16 & 255, v >> 8 & 255, v & 255 };

	put(m, p, 4);
}

static void put64(img *m, int64_t v)
{
	put32(m, (uint32_t)((uint64_t)v >> 32));
	put32(m, (uint32_t)v);
}

static void header(img *m, char version, uint32_t leap, uint32_t times,
		   uint32_t types, uint32_t chars)
{
	static const unsigned char pad[15];

	put(m, "TZif", 4);
	put(m, &version, 1);
	put(m, pad, 15);
	put32(m, 0);
	put32(m, 0);
	put32(m, leap);
	put32(m, times);
	put32(m, types);
	put32(m, chars);
}

/*
 * A zone with one transition at @at from type 0 (offset @o0) to type 1
 * (offset @o1), as version @version ('\0' = v1 only), with @footer.
 */
static void build(img *m, char version, int64_t at, int32_t o0, int32_t o1,
		  const char *footer, uint32_t leap)
{
	unsigned char idx = 1, zero = 0;
	int pass;

	m->n = 0;
	for (pass = 0; pass < (version ? 2 : 1); pass++) {
		header(m, version, leap, 1, 2, 4);
		if (pass == 0)
			put32(m, (uint32_t)at);
		else
			put64(m, at);
		put(m, &idx, 1);
		put32(m, (uint32_t)o0);
		put(m, &zero, 1);
		put(m, &zero, 1);
		put32(m, (uint32_t)o1);
		put(m, &zero, 1);
		put(m, &zero, 1);
		put(m, "AB\0", 4);
		for (uint32_t l = 0; l < leap; l++) {
			if (pass == 0)
				put32(m, 0);
			else
				put64(m, 0);
			put32(m, 1);
		}
	}
	if (version) {
		put(m, "\n", 1);
		put(m, footer, strlen(footer));
		put(m, "\n", 1);
	}
}

static void test_zone__tzif_images(void)
{
	relay__zone z;
	const char *why = NULL;
	img m;

	/* version 1 only: 32-bit data, no footer */
	build(&m, 0, 1000, 3600, 7200, "", 0);
	RT_EQ_INT(relay__tzif_parse(&z, m.b, m.n, &why), 0);
	RT_EQ_INT(relay__zone_offset(&z, 999), 3600);
	RT_EQ_INT(relay__zone_offset(&z, 1000), 7200);
	RT_EQ_INT(relay__zone_offset(&z, INT64_C(5000000000)), 7200);
	relay__zone_clear(&z);
	/* version 2 with a footer rule after the last transition */
	build(&m, '2', 1000, 0, -18000, "EST5EDT,M3.2.0,M11.1.0", 0);
	RT_EQ_INT(relay__tzif_parse(&z, m.b, m.n, &why), 0);
	RT_EQ_INT(relay__zone_offset(&z, 0), 0);
	RT_EQ_INT(relay__zone_offset(&z, iso("2026-01-15T00:00:00Z")),
		  -18000);
	RT_EQ_INT(relay__zone_offset(&z, iso("2026-07-15T00:00:00Z")),
		  -14400);
	RT_EQ_INT(relay__zone_offset(&z, iso("2026-03-08T06:59:59Z")),
		  -18000);
	RT_EQ_INT(relay__zone_offset(&z, iso("2026-03-08T07:00:00Z")),
		  -14400);
	RT_EQ_INT(relay__zone_offset(&z, iso("2026-11-01T05:59:59Z")),
		  -14400);
	RT_EQ_INT(relay__zone_offset(&z, iso("2026-11-01T06:00:00Z")),
		  -18000);
	relay__zone_clear(&z);
	/* version 3, empty footer: the last type forever */
	build(&m, '3', 1000, 0, 19800, "", 0);
	RT_EQ_INT(relay__tzif_parse(&z, m.b, m.n, &why), 0);
	RT_EQ_INT(relay__zone_offset(&z, iso("2300-01-01T00:00:00Z")), 19800);
	relay__zone_clear(&z);
	/* corrupt ones */
	build(&m, '2', 1000, 0, 3600, "CET-1", 0);
	RT_EQ_INT(relay__tzif_parse(&z, m.b, m.n - 20, &why), RELAY_EPARSE);
	RT_EQ_INT(relay__tzif_parse(&z, m.b, 30, &why), RELAY_EPARSE);
	RT_EQ_STR(why, "not a TZif file");
	build(&m, '2', 1000, 0, 3600, "CET-1CEST,M3.5.0,M13.5.0", 0);
	RT_EQ_INT(relay__tzif_parse(&z, m.b, m.n, &why), RELAY_EPARSE);
	RT_EQ_STR(why, "bad TZ string footer");
	build(&m, '2', 1000, 0, 99 * 3600, "", 0);
	RT_EQ_INT(relay__tzif_parse(&z, m.b, m.n, &why), RELAY_EPARSE);
	build(&m, '2', 1000, 0, 3600, "CET-1", 1);
	RT_EQ_INT(relay__tzif_parse(&z, m.b, m.n, &why), RELAY_EINVAL);
	RT_EQ_STR(why, "leap-second zones are not supported");
	m.b[4] = '1';
	RT_EQ_INT(relay__tzif_parse(&z, m.b, m.n, &why), RELAY_EPARSE);
}

static void write_file(const char *path, const void *p, size_t n)
{
	FILE *f = fopen(path, "wb");

	RT_ASSERT(f != NULL);
	RT_ASSERT(fwrite(p, 1, n, f) == n);
	fclose(f);
}

/* $TZDIR is honoured; errors reach relay_cron_parse() with their codes. */
static void test_zone__tzdir(void)
{
	char dir[] = "/tmp/relay-tzdir-XXXXXX", path[256];
	const char *old = getenv("TZDIR");
	relay_cron *c;
	relay_error err;
	int64_t t;
	img m;

	RT_ASSERT(mkdtemp(dir) != NULL);
	build(&m, '2', 0, 0, 3 * 3600, "<+03>-3", 0);
	snprintf(path, sizeof(path), "%s/Test_Zone", dir);
	write_file(path, m.b, m.n);
	snprintf(path, sizeof(path), "%s/Not_TZif", dir);
	write_file(path, "hello\n", 6);
	build(&m, '2', 0, 0, 3600, "CET-1", 2);
	snprintf(path, sizeof(path), "%s/Leap", dir);
	write_file(path, m.b, m.n);
	setenv("TZDIR", dir, 1);
	RT_EQ_INT(relay_cron_parse(&c, "0 0 * * *", "Test_Zone", &err), 0);
	RT_EQ_INT(relay_cron_next(c, iso("2026-01-01T00:00:00Z"), &t), 0);
	RT_EQ_INT(t, iso("2026-01-01T21:00:00Z"));
	relay_cron_free(c);
	RT_EQ_INT(relay_cron_parse(&c, "0 0 * * *", "Not_TZif", &err),
		  RELAY_ENOTFOUND);
	RT_EQ_STR(err.text, "unknown time zone \"Not_TZif\" (not a zone file)");
	RT_EQ_INT(relay_cron_parse(&c, "0 0 * * *", "Leap", &err),
		  RELAY_EINVAL);
	RT_EQ_STR(err.text, "time zone \"Leap\": leap-second zones are not "
		  "supported");
	/* UTC works without tzdata */
	RT_EQ_INT(relay_cron_parse(&c, "0 0 * * *", "UTC", &err), 0);
	relay_cron_free(c);
	RT_EQ_INT(relay_cron_parse(&c, "0 0 * * *", "Europe/Berlin", &err),
		  RELAY_ENOTFOUND);
	if (old)
		setenv("TZDIR", old, 1);
	else
		unsetenv("TZDIR");
	snprintf(path, sizeof(path), "rm -rf '%s'", dir);
	RT_EQ_INT(system(path), 0);
}

static void test_zone__rules(void)
{
	static const struct {
		const char *rule, *at;
		int32_t off;
	} cs[] = {
		{ "UTC0", "2026-01-01T00:00:00Z", 0 },
		{ "<+0330>-3:30", "2026-01-01T00:00:00Z", 12600 },
		{ "<-0330>3:30", "2026-01-01T00:00:00Z", -12600 },
		/* southern hemisphere, DST over New Year */
		{ "AEST-10AEDT,M10.1.0,M4.1.0/3", "2026-01-15T00:00:00Z",
		  39600 },
		{ "AEST-10AEDT,M10.1.0,M4.1.0/3", "2026-07-15T00:00:00Z",
		  36000 },
		{ "AEST-10AEDT,M10.1.0,M4.1.0/3", "2026-04-04T15:59:59Z",
		  39600 },
		{ "AEST-10AEDT,M10.1.0,M4.1.0/3", "2026-04-04T16:00:00Z",
		  36000 },
		/* Europe/Dublin: negative "DST" in winter */
		{ "IST-1GMT0,M10.5.0,M3.5.0/1", "2026-01-15T00:00:00Z", 0 },
		{ "IST-1GMT0,M10.5.0,M3.5.0/1", "2026-07-15T00:00:00Z", 3600 },
		/* negative rule times (America/Nuuk) */
		{ "<-02>2<-01>,M3.5.0/-1,M10.5.0/0", "2026-03-29T00:59:59Z",
		  -7200 },
		{ "<-02>2<-01>,M3.5.0/-1,M10.5.0/0", "2026-03-29T01:00:00Z",
		  -3600 },
		/* Julian days, with and without Feb 29 */
		{ "XST3XDT,J60/0,J300/0", "2028-03-01T03:00:00Z", -7200 },
		{ "XST3XDT,J60/0,J300/0", "2028-02-29T12:00:00Z", -10800 },
		{ "XST3XDT,59/0,300/0", "2028-02-29T03:00:00Z", -7200 },
		/* DST all year */
		{ "EST5EDT4,0/0,J365/25", "2026-06-01T00:00:00Z", -14400 },
		{ "EST5EDT4,0/0,J365/25", "2026-12-31T12:00:00Z", -14400 },
		/* DST without rules: the US rules */
		{ "EST5EDT", "2026-07-01T00:00:00Z", -14400 },
		/* a week-5 rule means the last such day */
		{ "CET-1CEST,M3.5.0,M10.5.0/3", "2026-03-29T00:59:59Z",
		  3600 },
		{ "CET-1CEST,M3.5.0,M10.5.0/3", "2026-03-29T01:00:00Z",
		  7200 },
	};
	static const char *bad[] = { "", "U", "UT0", "EST", "EST5EDT,",
		"EST5EDT,M3.2.0",
		"EST5EDT,M13.1.0,M11.1.0", "EST5EDT,M3.6.0,M11.1.0",
		"EST5EDT,M3.2.7,M11.1.0", "EST5EDT,J0,J100", "EST5EDT,366,1",
		"EST5EDT,M3.2.0/168,M11.1.0", "EST25", "<AB>5", "<A+B", "EST5x",
		"EST5EDT,M3.2.0,M11.1.0x" };
	relay__tzrule r;
	size_t i;

	for (i = 0; i < RT_NCASES(cs); i++) {
		int32_t off;

		if (relay__tzrule_parse(&r, cs[i].rule,
					strlen(cs[i].rule)) != 0) {
			RT_FAILF("rule \"%s\" rejected", cs[i].rule);
			continue;
		}
		off = relay__tzrule_offset(&r, iso(cs[i].at));
		if (off != cs[i].off)
			RT_FAILF("rule \"%s\" at %s: %d, want %d", cs[i].rule,
				 cs[i].at, off, cs[i].off);
	}
	for (i = 0; i < RT_NCASES(bad); i++)
		if (relay__tzrule_parse(&r, bad[i], strlen(bad[i])) == 0)
			RT_FAILF("rule \"%s\" accepted", bad[i]);
}

static void test_zone__civil(void)
{
	int64_t d, y;
	int m, dd;

	for (d = -800000; d < 3000000; d += 37) {
		relay__civil_from_days(d, &y, &m, &dd);
		if (relay__days_from_civil(y, m, dd) != d ||
		    dd > relay__days_in_month(y, m)) {
			RT_FAILF("day %lld round trip", (long long)d);
			break;
		}
	}
	RT_EQ_INT(relay__days_from_civil(1970, 1, 1), 0);
	RT_EQ_INT(relay__days_from_civil(2000, 3, 1), 11017);
	RT_EQ_INT(relay__weekday(0), 4);
	RT_EQ_INT(relay__weekday(-1), 3);
	RT_CHECK(relay__leap_year(2000) && !relay__leap_year(2100) &&
		 relay__leap_year(2028) && !relay__leap_year(2026));
	RT_EQ_INT(relay__floordiv(-1, 86400), -1);
	RT_EQ_INT(relay__floordiv(-86400, 86400), -1);
	RT_EQ_INT(relay__floordiv(86399, 86400), 0);
}

static const rt_case cases[] = {
	RT_CASE(test_zone__matches_libc),
	RT_CASE(test_zone__tzif_images),
	RT_CASE(test_zone__tzdir),
	RT_CASE(test_zone__rules),
	RT_CASE(test_zone__civil),
};

int main(int argc, char **argv)
{
	return rt_main(argc, argv, cases, RT_NCASES(cases));
}
