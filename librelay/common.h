/*
 * librelay/common.h - private helpers shared by every module: allocation,
 * error detail, logging. Never installed.
 */
#ifndef RELAY__COMMON_H
#define RELAY__COMMON_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "relay/common.h"
#include "relay/log.h"

#define RELAY__ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

#if defined(__GNUC__)
#define RELAY__PRINTF(f, a) __attribute__((format(printf, f, a)))
#define RELAY__LIKELY(x) __builtin_expect(!!(x), 1)
#define RELAY__UNLIKELY(x) __builtin_expect(!!(x), 0)
/* out of line and laid out apart: a rare path kept from costing the
 * common one its registers */
#define RELAY__COLD __attribute__((noinline, cold))
/* inlined even where the compiler would call it (a hot path that would
 * otherwise pay a call and its saved registers) */
#define RELAY__ALWAYS_INLINE inline __attribute__((always_inline))
#else
#define RELAY__COLD
#define RELAY__ALWAYS_INLINE inline
#define RELAY__PRINTF(f, a)
#define RELAY__LIKELY(x) (x)
#define RELAY__UNLIKELY(x) (x)
#endif

/* Allocation through the hooks of relay_set_allocator(). */
void *relay__malloc(size_t n);
void *relay__calloc(size_t nmemb, size_t n);
void *relay__realloc(void *p, size_t n);
void relay__free(void *p);
char *relay__strdup(const char *s);
char *relay__strndup(const char *s, size_t n);
/* Like asprintf(); returns NULL on failure. Free with relay__free(). */
char *relay__sprintf(const char *fmt, ...) RELAY__PRINTF(1, 2);
/*
 * @s made safe to quote on one line, into @buf (always terminated): bytes
 * outside printable ASCII, '"' and '\\' are written as \xNN; at most
 * @max bytes of @s are shown, then "...". Returns @buf.
 */
char *relay__escape(const char *s, size_t max, char *buf, size_t size);
/*
 * Days since 1970-01-01 of the proleptic Gregorian date @y-@m-@d (m 1-12,
 * d 1-31, not checked; any year). Pure arithmetic: the year is shifted
 * to start in March, so the leap day ends it, and an era of 400 years has
 * exactly 146097 days. The one copy for RFC 3339 in patterns, the DLQ
 * filter's times and the schedules' calendar.
 */
int64_t relay__days_from_civil(int64_t y, int m, int d);

/* Whether @y is a leap year of the proleptic Gregorian calendar, and the
 * days of month @m (1-12) of year @y. The one copy for patterns, the DLQ
 * filter and the schedules. */
bool relay__leap_year(int64_t y);
int relay__days_in_month(int64_t y, int m);

/*
 * Fill a caller's optional relay_error. @path may be NULL; text is
 * truncated to fit. Returns @code so callers can `return relay__error_set(…)`.
 */
int relay__error_set(relay_error *err, int code, const char *path, int line,
		     int column, const char *fmt, ...) RELAY__PRINTF(6, 7);
void relay__error_clear(relay_error *err);

/*
 * relay__on_path() - whether @prog is an executable file in a directory of
 * the process's PATH (the default /usr/local/bin:/usr/bin:/bin when PATH
 * is unset or empty). The engine's availability rule for python3/node
 * apps, shared with relayd's `apps` answer. Reads the environment: call it
 * from the thread that owns it.
 */
bool relay__on_path(const char *prog);

/* Logging through a host logger (NULL-safe). */
bool relay__log_enabled(const relay_logger *lg, relay_log_level lvl);
void relay__log(const relay_logger *lg, relay_log_level lvl, const char *msgid,
		const char *fmt, ...) RELAY__PRINTF(4, 5);

/* Growable byte buffer. */
typedef struct relay__buf {
	char *data;  /* NUL-terminated when len < cap */
	size_t len;  /* bytes used */
	size_t cap;  /* bytes allocated */
} relay__buf;

int relay__buf_reserve(relay__buf *b, size_t extra);
int relay__buf_append(relay__buf *b, const void *p, size_t n);
int relay__buf_printf(relay__buf *b, const char *fmt, ...) RELAY__PRINTF(2, 3);
void relay__buf_free(relay__buf *b);

/* ---- string vectors (common.c) ---------------------------------- */

typedef struct relay__strv {
	char **v;     /* NULL-terminated */
	size_t n;     /* entries, excluding the NULL */
	size_t cap;   /* slots allocated */
} relay__strv;

int relay__strv_push(relay__strv *sv, const char *s);
int relay__strv_pushf(relay__strv *sv, const char *fmt, ...)
	RELAY__PRINTF(2, 3);
void relay__strv_free(relay__strv *sv);

#endif /* RELAY__COMMON_H */
