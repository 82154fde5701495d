/*
 * dlqredrive.h - `relayctl dlq replay --redrive`: move a DLQ entry's
 * event back into its source stream (doc/cli.md L-6, doc/redis-layout.md
 * R-5 "Redrive").
 */
#ifndef RELAYCTL_DLQREDRIVE_H
#define RELAYCTL_DLQREDRIVE_H

#include <stddef.h>

#include "dlqcli.h"

/* The field a redriven stream entry carries: the DLQ entry's id. */
#define DLQREDRIVE_FIELD "relay_redrive_of"

/* What one redrive came to. */
enum dlqredrive_result {
	DLQREDRIVE_DONE,        /* added to the stream, DLQ entry deleted */
	DLQREDRIVE_GONE,        /* no such entry (any more) */
	DLQREDRIVE_BUSY,        /* a replay claim holds it: nothing done */
	DLQREDRIVE_REFUSED,     /* a placeholder or a schedule occurrence */
	DLQREDRIVE_ERROR,       /* Redis failed; nothing done */
};

/*
 * Redrive entry @rec of DLQ d->keys[@k] into stream d->streams[@k] in
 * one script: the new entry's id goes to @newid, or the reason to @why.
 */
enum dlqredrive_result dlqredrive_one(struct dlqcli *d, size_t k,
				      const relay_dlq_record *rec,
				      char *newid, size_t nsize, char *why,
				      size_t wsize);

/* The field a redriven stream entry carries when the DLQ entry's trace
 * lineage names its failed attempt: that attempt's traceparent. */
#define DLQREDRIVE_LINK_FIELD "relay_trace_link"

/*
 * The W3C trace context carried by a DLQ entry's trace field: a JSON
 * object's (the lineage, doc/redis-layout.md R-5) "traceparent" (and
 * "tracestate"), else, when the field is not a JSON object, the first
 * traceparent value found in the text. @tp gets 55 bytes and a NUL, @ts
 * (tracestate, may stay empty) up to @tsize - 1 bytes. @link gets the
 * lineage's "attempt" when it is a valid version-00 traceparent, else
 * "". Returns 1 when a traceparent was found, else 0.
 */
int dlqredrive_trace(const char *trace, char tp[56], char *ts, size_t tsize,
		     char link[56]);

#endif /* RELAYCTL_DLQREDRIVE_H */
