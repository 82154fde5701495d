/*
 * relay/schedule.h - cron expressions evaluated in IANA time zones.
 *
 * A relay_cron is one parsed `cron:` expression of a template schedule
 * (relay-template(5), doc/schedules.md) bound to one time zone.
 * relay_cron_next() and relay_cron_prev() turn it into firing instants,
 * in Unix seconds (UTC).
 *
 * The language: five fields "minute hour day-of-month month day-of-week"
 * with `*`, numbers, ranges `a-b`, steps `*` + `/n`, `a-b/n` and `a/n`,
 * lists `a,b-c`, month names JAN-DEC and day names SUN-SAT (any case),
 * day-of-week 0-7 (0 and 7 are Sunday), or one of the macros @hourly,
 * @daily, @midnight, @weekly, @monthly, @yearly, @annually. When both
 * day fields are restricted (neither starts with `*`) a day matches when
 * either matches; otherwise both must.
 *
 * Time zones are read from the TZif files of the system's tzdata
 * ($TZDIR, else /usr/share/zoneinfo) by librelay's own reader; the TZ
 * environment variable and the C library's localtime() are never used.
 * "UTC" works even without tzdata.
 *
 * Daylight saving time (the Vixie cron / cronie behaviour): a job whose
 * minute and hour fields are both fixed (neither starts with `*`) fires
 * once per matching local time: a local time skipped by a spring-forward
 * gap fires at the end of the gap (the transition instant), a local time
 * repeated by a fall-back overlap fires at its first occurrence only. A
 * job whose minute or hour field starts with `*` follows real time: local
 * times inside a gap do not exist and do not fire, local times repeated in
 * an overlap fire on both passes.
 *
 * Thread-safety: a parsed relay_cron is immutable; any number of threads
 * may call relay_cron_next()/relay_cron_prev() on it at once. Parsing is
 * reentrant (no global state, no caches).
 */
#ifndef RELAY_SCHEDULE_H
#define RELAY_SCHEDULE_H

#include "common.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct relay_cron relay_cron;

/**
 * relay_cron_parse() - parse a cron expression for a time zone.
 * @out: receives the new relay_cron (free with relay_cron_free()); NULL on
 *   failure.
 * @expr: five fields or an @macro; leading and trailing blanks are ignored.
 * @tz: IANA time zone name such as "Europe/Berlin"; NULL or "" means "UTC".
 * @err: optional error detail. For expression errors err->column is the
 *   1-based character position in @expr of the offending text, err->line
 *   is 0 and err->path is "".
 *
 * Returns: 0; RELAY_EPARSE when @expr is not a valid expression
 * (err->text names the problem and the field, e.g. "hour field: 24 is out
 * of range 0-23"); RELAY_ENOTFOUND when @tz names no installed zone;
 * RELAY_EINVAL when @tz is not a well-formed zone name (characters other
 * than A-Z a-z 0-9 _ + - /, a leading '/', a ".." component) or its zone
 * file is unusable (corrupt, or uses leap seconds); RELAY_ENOMEM.
 * Thread-safety: reentrant.
 */
RELAY_EXTERN int relay_cron_parse(relay_cron **out, const char *expr,
				  const char *tz, relay_error *err);

/** relay_cron_free() - free a relay_cron (NULL is a no-op). */
RELAY_EXTERN void relay_cron_free(relay_cron *c);

/**
 * relay_cron_next() - the earliest firing instant strictly after @after_s.
 * @c: the parsed expression.
 * @after_s: Unix seconds (UTC).
 * @next_s: receives the instant (Unix seconds) on success.
 *
 * Returns: 0; RELAY_ENOTFOUND when the expression never fires (e.g.
 * "0 0 30 2 *"; the search looks about 40 years ahead, past the longest
 * gap any expression has: Feb 29 on one weekday, a day of month 29 in
 * February with a "*"-led day of week, 40 years across 2100);
 * RELAY_EINVAL when @after_s is outside years 1-9999.
 * Thread-safety: safe on a shared @c.
 */
RELAY_EXTERN int relay_cron_next(const relay_cron *c, int64_t after_s,
				 int64_t *next_s);

/**
 * relay_cron_prev() - the latest firing instant at or before @at_s.
 * @c: the parsed expression.
 * @at_s: Unix seconds (UTC).
 * @prev_s: receives the instant on success.
 *
 * For every instant t that relay_cron_next() can return,
 * relay_cron_prev(c, t) returns t, and relay_cron_next(c, t - 1) returns t.
 * Returns: as relay_cron_next() (searching about 40 years back).
 * Thread-safety: safe on a shared @c.
 */
RELAY_EXTERN int relay_cron_prev(const relay_cron *c, int64_t at_s,
				 int64_t *prev_s);

/**
 * relay_cron_timezone() - the zone name @c was parsed for ("UTC" when
 * none was given). Borrowed; lives as long as @c.
 */
RELAY_EXTERN const char *relay_cron_timezone(const relay_cron *c);

/**
 * relay_cron_utc_offset() - the zone's UTC offset in seconds east of
 * Greenwich at instant @at_s (e.g. -14400 for New York in July), for
 * showing firing times in local time.
 */
RELAY_EXTERN int32_t relay_cron_utc_offset(const relay_cron *c, int64_t at_s);

#ifdef __cplusplus
}
#endif

#endif /* RELAY_SCHEDULE_H */
