/*
 * dlqbulk.h - what `dlq replay` and `dlq rm` share when they work on many
 * entries (--all or filters): the selection (every DLQ of every stream,
 * oldest first), --dry-run, the confirmation, --rate pacing, progress on
 * a terminal, and stopping cleanly on SIGINT.
 */
#ifndef RELAYCTL_DLQBULK_H
#define RELAYCTL_DLQBULK_H

#include <stddef.h>
#include <stdint.h>

#include "dlqcli.h"

/* One selected entry. Strings owned by the selection. */
struct dlqbulk_item {
	size_t k;        /* its DLQ: d->keys[k], stream d->streams[k] */
	char *id;
	char *app, *handler;  /* NULL when malformed */
	char *bad;       /* malformed: what is wrong; else NULL */
	char *reason;    /* the first few items only (the dry-run sample) */
	char *timestamp; /* likewise */
};

struct dlqbulk {
	struct dlqbulk_item *items;
	size_t n, cap;
	size_t unselected_bad;  /* malformed entries the filters on fields
				   could not decide (reported, left alone) */
};

/* On a terminal, more entries than this need a "y" (without --yes). */
#define DLQBULK_CONFIRM_OVER 10
/* Default --rate (entries per second). */
#define DLQBULK_RATE_REPLAY 10
#define DLQBULK_RATE_RM 200

/*
 * Select the entries of every DLQ of @d that pass d->filter, oldest first
 * per stream, in stream order; with d->limit only the first that many. A malformed entry is selected (with .bad)
 * when its id passes the filters that need no fields; if a filter on
 * fields was given as well it is only counted in unselected_bad. Returns
 * RELAYCTL_OK (free with dlqbulk_free()) or an exit code after printing.
 */
int dlqbulk_collect(struct dlqcli *d, struct dlqbulk *b);
void dlqbulk_free(struct dlqbulk *b);

/*
 * --dry-run: print "N matching DLQ entries (dry run: nothing VERBed)" and
 * a table of the first few (ID STREAM APP HANDLER AGE REASON), then "...
 * and M more". Returns an exit code.
 */
int dlqbulk_dry_run(const struct dlqcli *d, const struct dlqbulk *b,
		    const char *verb);

/*
 * Without --yes on a terminal and above DLQBULK_CONFIRM_OVER entries, ask
 * "<Verb> N DLQ entries? [y/N]" on stderr and read the answer from stdin.
 * Returns 0 to go on, RELAYCTL_FAIL (after "aborted") otherwise.
 */
int dlqbulk_confirm(const struct dlqcli *d, size_t n, const char *verb);

/* Pacing for --rate: call dlqbulk_pace() before each entry. */
struct dlqbulk_pace {
	int64_t start_ms;
	uint64_t count;
	long rate;
};
void dlqbulk_pace_init(struct dlqbulk_pace *p, long rate);
void dlqbulk_pace(struct dlqbulk_pace *p);

/*
 * SIGINT and SIGTERM: the first sets a flag (dlqbulk_stopping()), so the
 * entry in hand is finished and the run stops before the next one; the
 * second one kills as usual.
 */
void dlqbulk_catch_signals(void);
int dlqbulk_stopping(void);

/* "\r<verb> 120/5000  9.8/s  8m18s left" on stderr when it is a
 * terminal, at most ~5 times a second (the rate since the first entry);
 * dlqbulk_progress_end() clears the line. */
void dlqbulk_progress(size_t done, size_t total, const char *verb);
void dlqbulk_progress_end(void);

/*
 * --json of a bulk run: what was done, as one JSON object on stdout at
 * the end instead of the text lines (doc/cli.md L-9):
 *   {"command": C, "matched": N, "dry_run": bool, "interrupted": bool,
 *    "counts": {...}, "entries": [{"id", "stream", "app", "handler",
 *    "result", "detail"}, ...]}
 * dlqbulk_report_open() starts it when @d asked for --json (else every
 * call below is a no-op returning 0); dlqbulk_report_entry() records one
 * entry, @result one word ("replayed", "failed", "skipped", "removed",
 * "gone", "selected"), @detail the rest of the text line or NULL, and
 * returns 1 when it was recorded (the caller prints nothing);
 * dlqbulk_report_count() sets one of "counts"; dlqbulk_report_close()
 * prints and frees it and returns an exit code. One report at a time
 * (relayctl runs one command); not thread-safe.
 */
void dlqbulk_report_open(const struct dlqcli *d, const char *command);
int dlqbulk_report_entry(const struct dlqcli *d,
			 const struct dlqbulk_item *it, const char *result,
			 const char *detail);
void dlqbulk_report_count(const char *name, size_t n);
int dlqbulk_report_close(size_t matched, int dry_run, int interrupted);
int dlqbulk_reporting(void);

#endif /* RELAYCTL_DLQBULK_H */
