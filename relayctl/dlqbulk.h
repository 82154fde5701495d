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

/* One selected entry, as a callback sees it: strings borrowed for the
 * call (NULL when absent). */
struct dlqbulk_item {
	size_t k;        /* its DLQ: d->keys[k], stream d->streams[k] */
	const char *id;
	const char *app, *handler;  /* NULL when malformed */
	const char *bad; /* malformed: what is wrong; else NULL */
	const char *reason;
	const char *timestamp;
};

/* A sample entry kept for the dry run's table (owned copies). */
struct dlqbulk_sample {
	size_t k;
	char *id, *app, *handler, *bad, *reason, *timestamp;
};

#define DLQBULK_SAMPLE 5

/*
 * A selection: how many entries matched and where each DLQ's selected
 * entries end, not the entries themselves, so memory stays that of a
 * page of the DLQ however many match (an incident's DLQ may hold
 * millions). The entries are read again, a page at a time, when acted on
 * (dlqbulk_each()).
 */
struct dlqbulk {
	size_t n;               /* entries selected */
	char **last;            /* per DLQ (d->nkeys): the id of its last
				   selected entry, NULL when none */
	size_t nkeys;
	struct dlqbulk_sample sample[DLQBULK_SAMPLE];
	size_t nsample;         /* the first entries selected */
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
 * per stream, in stream order; with d->limit only the first that many. A
 * malformed entry is selected (with .bad) when its id passes the filters
 * that need no fields; if a filter on fields was given as well it is only
 * counted in unselected_bad. Returns RELAYCTL_OK (free with
 * dlqbulk_free()) or an exit code after printing.
 */
int dlqbulk_collect(struct dlqcli *d, struct dlqbulk *b);
void dlqbulk_free(struct dlqbulk *b);
/* The end of a bulk command that returns @rc: closes a --json report left
 * open by an early failure (its exit code counts only when @rc is OK),
 * frees @b; returns the exit code. */
int dlqbulk_end(struct dlqbulk *b, int rc);

/*
 * Read the selection @b of @d again, in the same order, and call @fn for
 * each entry: at most b->n, none added to a DLQ after
 * dlqbulk_collect() (each DLQ is read up to its b->last). An entry
 * removed meanwhile is not seen; *@seen says how many were. @fn returns
 * 0 to go on, anything else to stop. Returns RELAYCTL_OK or an exit code
 * after printing (a Redis error; *@seen is then what was seen before it).
 */
typedef int (*dlqbulk_fn)(void *payload, const struct dlqbulk_item *it);
int dlqbulk_each(struct dlqcli *d, const struct dlqbulk *b, dlqbulk_fn fn,
		 void *payload, size_t *seen);

/*
 * --dry-run: print "N matching DLQ entries (dry run: nothing VERBed)" and
 * a table of the first few (ID STREAM APP HANDLER AGE REASON), then "...
 * and M more". Returns an exit code.
 */
int dlqbulk_dry_run(struct dlqcli *d, const struct dlqbulk *b,
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
 * --json of a bulk run: what was done, as one JSON object on stdout
 * instead of the text lines (doc/cli.md L-9), written as the run goes
 * (an entry at a time: memory stays bounded however many entries):
 *   {"command": C, "matched": N, "dry_run": bool, "entries": [{"id",
 *    "stream", "app", "handler", "result", "detail"}, ...],
 *    "interrupted": bool, "counts": {...}}
 * dlqbulk_report_open() starts it (the head, up to "entries") when @d
 * asked for --json (else every call below is a no-op returning 0);
 * dlqbulk_report_entry() writes one entry, @result one word
 * ("replayed", "failed", "skipped", "removed", "gone", "selected"),
 * @detail the rest of the text line or NULL, and returns 1 when it was
 * written (the caller prints nothing); dlqbulk_report_count() sets one of
 * "counts"; dlqbulk_report_close() writes the rest and returns an exit
 * code (a later call does nothing). One report at a time (relayctl runs
 * one command); not thread-safe.
 */
void dlqbulk_report_open(const struct dlqcli *d, const char *command,
			 size_t matched);
int dlqbulk_report_entry(const struct dlqcli *d,
			 const struct dlqbulk_item *it, const char *result,
			 const char *detail);
void dlqbulk_report_count(const char *name, size_t n);
int dlqbulk_report_close(int interrupted);
int dlqbulk_reporting(void);

#endif /* RELAYCTL_DLQBULK_H */
