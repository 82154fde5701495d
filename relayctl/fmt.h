/*
 * fmt.h - output helpers of relayctl: relative ages ("3m12s"), RFC 3339
 * times, column-aligned tables and "Key: value" blocks. Every text put on
 * screen goes through clean copies (control characters become '?'), so
 * one record stays one line whatever Redis or a template holds.
 */
#ifndef RELAYCTL_FMT_H
#define RELAYCTL_FMT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* @secs as "45s", "3m12s", "2h5m", "3d4h" ("0s" for <= 0). */
char *relayctl_fmt_age(int64_t secs, char *buf, size_t size);

/* Parse an RFC 3339 time, "YYYY-MM-DD(T|t| )HH:MM:SS[.frac](Z|z|+HH:MM|
 * -HH:MM)", into Unix ms (days checked against the month). 0 or -1. */
int relayctl_parse_time(const char *s, int64_t *ms);

/* A point in time as an operator writes it: Unix milliseconds (digits
 * only, up to 9999-12-31) or an RFC 3339 time (relayctl_parse_time()).
 * The same for `match --now` and the DLQ filters' --since / --until. 0 or
 * -1. */
int relayctl_parse_when_ms(const char *s, int64_t *ms);

/* The wall clock in Unix ms. */
int64_t relayctl_now_ms(void);

/* Unix @ms as "YYYY-MM-DDTHH:MM:SS.mmmZ". */
char *relayctl_fmt_time(int64_t ms, char *buf, size_t size);

/* "<time> (3m12s ago)" for an RFC 3339 @ts, or @ts as is if unparsable. */
char *relayctl_fmt_time_age(const char *ts, char *buf, size_t size);

/* A new copy of @s with control characters (C0, DEL, C1) and bytes that
 * are not UTF-8 replaced by '?'. */
char *relayctl_clean(const char *s);
/* The same, keeping newlines (multi-line text that relayctl itself laid
 * out, e.g. indented JSON whose strings escape their own newlines). */
char *relayctl_clean_text(const char *s);
/* A clean copy of @s for one printf(): owned by relayctl, valid until
 * 16 more calls. Never NULL. */
const char *relayctl_c(const char *s);
/*
 * One line of a handler's output (@len bytes, no newline) and a newline
 * on @f. When @f is a terminal, the bytes a terminal would act on (C0
 * controls but tab, DEL, UTF-8 C1 controls) are written as '?': a
 * handler that processed a hostile event cannot drive the operator's
 * terminal. Into a pipe or file the bytes go exactly.
 */
void relayctl_put_output(FILE *f, const char *text, size_t len);

/*
 * A table printed with columns padded to their widest cell, separated by
 * two spaces, the last column unpadded.
 */
typedef struct relayctl_table {
	size_t ncols, nrows, cap;
	char **cells;  /* nrows * ncols clean copies */
	int oom;
} relayctl_table;

/* Start a table whose header row is the @ncols strings of @head. */
int relayctl_table_init(relayctl_table *t, size_t ncols,
			const char *const *head);
/* Add a row of ncols strings (copied, cleaned). Returns 0 or -1 (OOM). */
int relayctl_table_add(relayctl_table *t, const char *const *row);
void relayctl_table_print(const relayctl_table *t, FILE *f);
void relayctl_table_free(relayctl_table *t);

/* Print "Key:" padded to @width + 2 columns, then the clean value; an
 * empty @key continues the previous line's value column. */
void relayctl_kv(FILE *f, int width, const char *key, const char *value);

#endif /* RELAYCTL_FMT_H */
