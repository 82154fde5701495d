/*
 * librelay/schedule/sched.h - private parts of the schedule module: civil
 * calendar arithmetic, POSIX TZ rules, TZif zones, the parsed cron.
 */
#ifndef RELAY__SCHEDULE_SCHED_H
#define RELAY__SCHEDULE_SCHED_H

#include <stdbool.h>
#include <stdint.h>

#include "common.h"
#include "relay/schedule.h"

#define RELAY__SECS_PER_DAY 86400
/* Instants accepted by next/prev: 0001-01-01 .. 9999-12-31 (UTC). */
#define RELAY__SCHED_MIN_S (-62135596800LL)
#define RELAY__SCHED_MAX_S (253402300799LL)

/* relay__days_from_civil() is common's (common.h). */
/* The date of day @days since 1970-01-01. */
void relay__civil_from_days(int64_t days, int64_t *y, int *m, int *d);
/* 0 = Sunday .. 6 = Saturday. */
int relay__weekday(int64_t days);
/* Floor division, for negative instants. */
int64_t relay__floordiv(int64_t a, int64_t b);

/*
 * A POSIX TZ rule (the TZif footer, RFC 8536 section 3.3): standard offset
 * and optionally a DST offset with yearly start and end rules.
 */
typedef struct relay__tzdate {
	char kind;    /* 'J' (1-365, no Feb 29), 'n' (0-365), 'M' */
	int a, b, c;  /* J/n: a = day; M: a = month, b = week, c = weekday */
	int32_t time; /* seconds after local midnight, -167h..167h */
} relay__tzdate;

typedef struct relay__tzrule {
	int32_t std_off; /* seconds east of UTC */
	bool has_dst;
	int32_t dst_off;
	relay__tzdate start, end;
} relay__tzrule;

/* Parse a POSIX TZ string; 0 or RELAY_EPARSE. */
int relay__tzrule_parse(relay__tzrule *r, const char *s, size_t len);
/* Offset in effect at UTC instant @t. */
int32_t relay__tzrule_offset(const relay__tzrule *r, int64_t t);
/* The DST start and end instants (UTC) of year @y; false without DST. */
bool relay__tzrule_year(const relay__tzrule *r, int64_t y, int64_t *start,
			int64_t *end);

/* A time zone: TZif transitions, then the footer rule. */
typedef struct relay__zone {
	size_t n;            /* transitions */
	int64_t *at;         /* transition instants, ascending */
	int32_t *off;        /* offset in effect from at[i] on */
	int32_t off0;        /* offset before the first transition */
	bool has_rule;       /* footer rule for instants after at[n-1] */
	relay__tzrule rule;
} relay__zone;

/*
 * Parse a TZif file image (RFC 8536, version 1 to 4) into @z. Returns 0,
 * RELAY_EPARSE (corrupt; @why says why), RELAY_EINVAL (leap seconds),
 * RELAY_ENOMEM.
 */
int relay__tzif_parse(relay__zone *z, const unsigned char *buf, size_t len,
		      const char **why);
void relay__zone_clear(relay__zone *z);
/* Load zone @name from $TZDIR or /usr/share/zoneinfo (see schedule.h). */
int relay__zone_load(relay__zone *z, const char *name, relay_error *err);
bool relay__zone_name_valid(const char *name);
/* Offset (seconds east) in effect at UTC instant @t. */
int32_t relay__zone_offset(const relay__zone *z, int64_t t);
/* Whether the offset is the same over the whole UTC range [t0, t1]. */
bool relay__zone_quiet(const relay__zone *z, int64_t t0, int64_t t1);

/*
 * The instants at which local wall time @l (seconds since 1970-01-01 as
 * if local time were UTC) occurs: returns 1 or 2 (an overlap) with
 * ascending instants in @t; 0 when @l falls in a gap, with @t[0] set to
 * the end of the gap (the transition instant).
 */
int relay__zone_solve(const relay__zone *z, int64_t l, int64_t t[2]);

/* The parsed expression. Bit i of a mask = value i is selected. */
struct relay_cron {
	uint64_t minute;   /* 0-59 */
	uint32_t hour;     /* 0-23 */
	uint32_t dom;      /* 1-31 */
	uint16_t month;    /* 1-12 */
	uint8_t dow;       /* 0-6, Sunday = 0 */
	bool dom_star;     /* field started with '*' */
	bool dow_star;
	bool wild;         /* minute or hour field starts with '*' */
	char *tzname;
	relay__zone zone;
};

#endif /* RELAY__SCHEDULE_SCHED_H */
