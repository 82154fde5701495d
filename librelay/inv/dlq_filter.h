/*
 * dlq_filter.h - the inside of relay_dlq_filter (relay/dlq.h), for the
 * iterator in librelay/invops/dlq_iter.c.
 */
#ifndef RELAY_INV_DLQ_FILTER_H
#define RELAY_INV_DLQ_FILTER_H

#include <regex.h>

#include "relay/dlq.h"

/* A --since/--until bound: none, a time, or a duration ago. */
struct relay__dlq_when {
	int kind;           /* 0 none, 1 absolute, 2 ago */
	int64_t ms;         /* Unix ms (absolute) or ms ago */
};

struct relay_dlq_filter {
	char *app, *handler;        /* owned, or NULL */
	char *reason_ere;           /* the source text, or NULL */
	regex_t reason;             /* compiled when reason_ere is set */
	struct relay__dlq_when since, until;
	char **ids;                 /* --id values, nids of them */
	size_t nids;
	char **orig_ids;            /* --original-id values */
	size_t norig;
	relay_dlq_malformed_mode malformed;
	uint64_t limit;             /* 0: none */
	const relay_clock *clock;   /* borrowed, or NULL: the system's */
};

/* The window [*lo, *hi] in Unix ms at @now (INT64_MIN/MAX when open). */
void relay__dlq_filter_window(const relay_dlq_filter *f, relay_wall_ms now,
			      int64_t *lo, int64_t *hi);

/* relay_dlq_filter_match() and _malformed() with the window given. */
relay_dlq_verdict relay__dlq_filter_match_at(const relay_dlq_filter *f,
					     const relay_dlq_record *r,
					     int64_t lo, int64_t hi);
relay_dlq_verdict relay__dlq_filter_malformed_at(const relay_dlq_filter *f,
						 const char *id, int64_t lo,
						 int64_t hi);

/* The smallest and largest --id, as XRANGE bounds ("MS" as "MS-0");
 * "-" and "+" without ids. @lo and @hi: 48 bytes each. */
void relay__dlq_filter_id_bounds(const relay_dlq_filter *f, char *lo,
				 char *hi, size_t size);

#endif /* RELAY_INV_DLQ_FILTER_H */
