/*
 * librelay/consumer/consumer_trace.h - private: the engine's tracing
 * (consumer_trace.c): the producer's W3C context read from a stream
 * entry, the context of each handler attempt, its span handed to the
 * embedder's callback (relay_consumer_options.span), the `trace` lineage
 * of a DLQ entry. Never installed.
 *
 * Ids of an attempt span are derived from (stream, group, message id,
 * "<app>/<handler>", attempt): a retry, run by any replica in any later
 * delivery, links to the attempt before it without storing anything, and
 * a DLQ entry names its last attempt even when this delivery did not run
 * it. Manual runs (app invoke, dlq replay) get random ids.
 */
#ifndef RELAY__CONSUMER_TRACE_H
#define RELAY__CONSUMER_TRACE_H

#include <stdbool.h>
#include <stdint.h>

#include "relay/engine.h"
#include "relay/trace.h"

typedef struct relay__msg relay__msg;
typedef struct relay__cinv relay__cinv;

/* The consumer's tracing set-up (options version 3). */
typedef struct relay__ctrace {
	relay_consumer_span_fn fn;     /* NULL: no spans */
	void *payload;
	relay_trace_sampler sampler;
	/* The system clock's wall time, read at most once a second: span
	 * times are the monotonic time at hand plus this offset. */
	int64_t wall_off_ns;
	relay_mono_us wall_synced_us;
	bool wall_synced;
} relay__ctrace;

/* What one stream entry carried (NULL in relay__msg when nothing). */
typedef struct relay__mtrace {
	bool has_parent;               /* a valid traceparent */
	relay_trace_context parent;    /* it, with its valid tracestate */
	char *traceparent;             /* verbatim as received */
	char *baggage;                 /* valid baggage, or NULL */
	bool has_link;                 /* a valid relay_trace_link */
	relay_trace_context link;
	unsigned int invalid;          /* values ignored (counted once) */
} relay__mtrace;

/* One attempt's span while it runs (embedded in a relay__cinv and a
 * manual run). */
typedef struct relay__rtrace {
	bool set;                      /* ctx below is the attempt's */
	uint8_t trace_id[RELAY_TRACE_ID_SIZE];
	uint8_t span_id[RELAY_SPAN_ID_SIZE];
	uint8_t parent_id[RELAY_SPAN_ID_SIZE]; /* zeros: a root */
	uint8_t flags;
	int64_t start_ns;              /* wall clock */
	bool has_link;                 /* manual replay: the link below */
	relay_trace_context link;
} relay__rtrace;

/* The buffers an exec spec's trace fields point into (one per run). */
typedef struct relay__tspec {
	char traceparent[RELAY_TRACEPARENT_LEN + 1];
} relay__tspec;

/* Take options.span/span_payload/sampler (version 3). */
void relay__ctrace_init(relay__ctrace *t, const relay_consumer_options *o);

/* Read the entry's traceparent, tracestate, baggage and relay_trace_link
 * into m->trace (left NULL when it carried none, or out of memory: the
 * message never fails for its trace context). Invalid or oversized
 * values are ignored and noted for relay__ctrace_classified(). */
void relay__ctrace_entry(relay__msg *m, const relay_stream_entry *e);
void relay__ctrace_msg_free(relay__msg *m);
/* This replica classified @m first: count its ignored values (once per
 * message, as events_received). */
void relay__ctrace_classified(relay__msg *m);

/* An attempt of @inv (inv->attempt claimed) starts, at inv->started_us:
 * set its context in inv->tr and the spec's traceparent/tracestate/
 * baggage (pointing into @buf and the message) when tracing is on or the
 * entry carried a context. */
void relay__ctrace_start(relay__cinv *inv, relay_exec_spec *s,
			 relay__tspec *buf);

/* The attempt ended at @now (the consumer clock's monotonic time): the
 * span, when tracing is on and it is sampled. @o is NULL when the run
 * could not start (@reason says why). */
void relay__ctrace_end(relay__cinv *inv, const relay_run_outcome *o,
		       const char *reason, relay_mono_us now);

/* A manual run (app invoke: @link NULL, a new root; dlq replay: @link
 * the failed attempt's traceparent, or NULL) of @handler of @app starts /
 * ends. */
void relay__ctrace_manual_start(relay_consumer *c, relay__rtrace *tr,
				const char *link, relay_exec_spec *s,
				relay__tspec *buf);
void relay__ctrace_manual_end(relay_consumer *c, relay__rtrace *tr,
			      const char *app, const char *handler,
			      const char *kind, const relay_run_outcome *o);

/* The DLQ entry's `trace` (compact JSON; new, relay__free()), or NULL
 * when nothing is known. @inv: the exhausted invocation, or NULL for a
 * placeholder. */
char *relay__ctrace_dlq(const relay__msg *m, const relay__cinv *inv);

#endif /* RELAY__CONSUMER_TRACE_H */
