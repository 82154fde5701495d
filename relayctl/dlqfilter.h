/*
 * dlqfilter.h - the entry filters shared by relayctl dlq ls, summary,
 * replay and rm: which DLQ entries a bulk command works on.
 *
 *	--app NAME      the entry's app is NAME
 *	--handler NAME  the entry's handler is NAME
 *	--reason ERE    the reason matches ERE (POSIX extended, unanchored)
 *	--since WHEN    written at or after WHEN
 *	--until WHEN    written at or before WHEN
 *	--id ID         the entry id is ID (repeatable: any of them)
 *	--original-id ID  the original message's stream id recorded in the
 *	                entry is ID (repeatable: any of them)
 *	--malformed     only entries that cannot be parsed (the "(malformed)"
 *	                rows); not with a filter on fields
 *	--no-malformed  only entries that can be parsed
 *
 * WHEN is an RFC 3339 time (2026-12-04T10:00:00Z, ...+02:00, fractions
 * allowed) or a duration ago: digits and a unit, one or more of them, as
 * in 2h, 90s, 1h30m, 2d, 500ms (units ms s m h d w). Filters combine with
 * AND. An entry's time is its timestamp field.
 *
 * Pure: no printing, no I/O; the caller prints the message (exit 2). The
 * matching itself is the library's (relay_dlq_filter, relay/dlq.h).
 * Not thread-safe (one filter per thread).
 */
#ifndef RELAYCTL_DLQFILTER_H
#define RELAYCTL_DLQFILTER_H

#include <stddef.h>
#include <stdint.h>

#include "relay/dlq.h"

/*
 * The options as given (for the checks that need several of them and
 * their messages) and the library filter they build (relay/dlq.h), which
 * does the matching: relayctl's commands read the DLQ through
 * relay_dlq_iter over @lib, as any embedder would.
 */
struct dlqfilter {
	const char *app;        /* borrowed from argv, or NULL */
	const char *handler;
	const char *reason_ere;
	const char *since_text, *until_text;
	int64_t since_ms, until_ms;  /* Unix ms, valid with their _text */
	size_t nids, norig;     /* --id and --original-id values given */
	int malformed;          /* 1 --malformed, -1 --no-malformed, 0 */
	relay_clock_fixed clock; /* "now" for durations ago: @now_ms of
				    dlqfilter_arg() */
	relay_dlq_filter *lib;  /* after the first filter option, or
				   dlqfilter_finish() */
};

/* An empty filter (matches everything). */
void dlqfilter_init(struct dlqfilter *f);

/* Release what the filter holds (the library filter). */
void dlqfilter_free(struct dlqfilter *f);

/*
 * If argv[*i] is a filter option ("--app NAME" or "--app=NAME", ...),
 * take it (advancing *i past its value) and return 1. Return 0 when it is
 * not one. Return -1 when it is one but bad (missing or empty value, a
 * repeated option other than --id and --original-id, a flag given a
 * value, --malformed with --no-malformed, a regex that does not compile, a time
 * that is neither RFC 3339 nor a duration, an ID that is not a stream
 * entry id, out of memory), with @err ("--since: ...") naming the flag.
 * @now_ms: the wall clock, for durations ago (the filter's clock).
 */
int dlqfilter_arg(struct dlqfilter *f, int argc, char **argv, int *i,
		  int64_t now_ms, char *err, size_t size);

/*
 * After the last option: checks that need every option (--since later
 * than --until, --malformed with a filter on fields), and f->lib made
 * when no option was given. Returns 0, or -1 with @err naming the flags.
 */
int dlqfilter_finish(struct dlqfilter *f, char *err, size_t size);

/* Whether any filter option was given. */
int dlqfilter_active(const struct dlqfilter *f);

/* Whether a filter on the fields of an entry was given (--app, --handler,
 * --reason, --original-id): one a malformed entry cannot be tested
 * against. */
int dlqfilter_on_fields(const struct dlqfilter *f);

/*
 * Parse WHEN (above) into Unix ms: a duration is taken back from @now_ms.
 * Returns 0, or -1 when it is neither form.
 */
int dlqfilter_parse_when(const char *s, int64_t now_ms, int64_t *ms);

/* Whether @id is a stream entry id: "MS" or "MS-SEQ", 64-bit decimals. */
int dlqfilter_id_valid(const char *id);

#endif /* RELAYCTL_DLQFILTER_H */
