/*
 * sched_util.h - helpers of the schedule tests: ISO 8601 instants in and
 * out, the next N firings of an expression as one string.
 */
#ifndef SCHED_UTIL_H
#define SCHED_UTIL_H

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "sched.h"

/* Skip the current case when the system has no tzdata. */
#define NEED_TZDATA()                                                   \
	do {                                                            \
		const char *d_ = getenv("TZDIR");                        \
		char p_[512];                                           \
		snprintf(p_, sizeof(p_), "%s/America/New_York",          \
			 d_ && *d_ ? d_ : "/usr/share/zoneinfo");       \
		if (access(p_, R_OK) != 0)                              \
			RT_SKIP("no tzdata (apt-get install tzdata)");  \
	} while (0)

/* "2026-03-08T01:59:00Z" or "...+05:30" / "...-04:00" → Unix seconds. */
static inline int64_t iso(const char *s)
{
	int y, mo, d, h, mi, sec, oh = 0, om = 0, n = 0;
	char sign = 'Z';
	int64_t t;

	if (sscanf(s, "%d-%d-%dT%d:%d:%d%n", &y, &mo, &d, &h, &mi, &sec,
		   &n) != 6) {
		fprintf(stderr, "bad instant %s\n", s);
		abort();
	}
	if (s[n] == '+' || s[n] == '-') {
		sign = s[n];
		sscanf(s + n + 1, "%d:%d", &oh, &om);
	}
	t = relay__days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 +
	    sec;
	if (sign == '+')
		t -= oh * 3600 + om * 60;
	else if (sign == '-')
		t += oh * 3600 + om * 60;
	return t;
}

/* @t as local time of @c's zone with its offset ("...-04:00", "...Z"). */
static inline char *fmt_local(const relay_cron *c, int64_t t, char *buf,
			      size_t size)
{
	int32_t off = c ? relay_cron_utc_offset(c, t) : 0;
	int64_t l = t + off, y, days = relay__floordiv(l, 86400);
	int m, d, sod = (int)(l - days * 86400), a = off < 0 ? -off : off;

	relay__civil_from_days(days, &y, &m, &d);
	if (off == 0)
		snprintf(buf, size, "%04d-%02d-%02dT%02d:%02d:%02dZ", (int)y,
			 m, d, sod / 3600, sod / 60 % 60, sod % 60);
	else
		snprintf(buf, size, "%04d-%02d-%02dT%02d:%02d:%02d%c%02d:%02d",
			 (int)y, m, d, sod / 3600, sod / 60 % 60, sod % 60,
			 off < 0 ? '-' : '+', a / 3600, a / 60 % 60);
	return buf;
}

/*
 * Walk @n firings of @expr in @tz from @from, space-separated, in local
 * time: forward (relay_cron_next(), strictly after) when @dir > 0, else
 * backward (relay_cron_prev(), at or before, newest first). "ERR <code>"
 * when parsing fails, "... none" when the search ends. Static buffer.
 */
static inline const char *walk(const char *expr, const char *tz,
			       const char *from, int n, int dir)
{
	static char out[2048];
	relay_cron *c;
	int64_t t = iso(from), at;
	size_t len = 0;
	char b[64];
	int rc = relay_cron_parse(&c, expr, tz, NULL), i;

	if (rc) {
		snprintf(out, sizeof(out), "ERR %d", rc);
		return out;
	}
	out[0] = '\0';
	for (i = 0; i < n; i++) {
		rc = dir > 0 ? relay_cron_next(c, t, &at)
			     : relay_cron_prev(c, t, &at);
		len += (size_t)snprintf(out + len, sizeof(out) - len, "%s%s",
					i ? " " : "", rc ? "none" :
					fmt_local(c, at, b, sizeof(b)));
		if (rc)
			break;
		t = dir > 0 ? at : at - 1;
	}
	relay_cron_free(c);
	return out;
}

/* The next @n firings after @from. */
static inline const char *nexts(const char *expr, const char *tz,
				const char *from, int n)
{
	return walk(expr, tz, from, n, 1);
}

/* The previous @n firings at or before @from, newest first. */
static inline const char *prevs(const char *expr, const char *tz,
				const char *from, int n)
{
	return walk(expr, tz, from, n, -1);
}

#endif /* SCHED_UTIL_H */
