/*
 * relay/metrics.h - the one table of the engine's figures (librelay
 * "consumer" module): every field of relay_consumer_metrics once, with
 * what relayd and relayctl show of it. Macros only; nothing to link.
 *
 * RELAY_CONSUMER_METRICS(X) expands X once per figure, in the order
 * relayd's /metrics gives them within a section:
 *
 *	X(field, kind, section, key, prom, help,
 *	  stream, ctl, ctl_label, ctl_key, line, line_label)
 *
 *   field      the member of relay_consumer_metrics read
 *   kind       enum relay_metric_kind: how it is read and shown
 *   section    enum relay_metric_section: where relayd places it among
 *              its own figures (doc/protocol.md)
 *   key        its key in the stats file ("counters" for a counter,
 *              "gauges" otherwise); 0: the field's name
 *   prom       its Prometheus family; 0: "relay_<key>", plus "_total"
 *              for a counter
 *   help       the family's HELP text
 *   stream     its position (from 1) in each stream's own object of the
 *              stats file ("streams", several streams only); 0: not there
 *   ctl        its position (from 1) among the figures `relayctl stats`
 *              prints; 0: not printed
 *   ctl_label  that line's label
 *   ctl_key    its key in `relayctl stats --json`; 0: the stats file key
 *   line       its position (from 1) in relayctl's one line per stream
 *              ("Stream <name>: received N, ..."); 0: not there
 *   line_label its word in that line
 *
 * RELAY_METRIC_INFO is the X that makes a row a relay_metric_info:
 *
 *	static const relay_metric_info rows[] = {
 *		RELAY_CONSUMER_METRICS(RELAY_METRIC_INFO)
 *	};
 *
 * which is how relayd and relayctl read the table; an embedder exports
 * the engine's figures under relayd's names the same way. New rows are
 * appended to their section with a new metrics version (relay/engine.h);
 * names, keys and labels are as stable as the formats they appear in
 * (doc/protocol.md, doc/cli.md).
 */
#ifndef RELAY_METRICS_H
#define RELAY_METRICS_H

#include <stddef.h>

#include "engine.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum relay_metric_kind {
	RELAY_METRIC_COUNTER = 0, /* uint64_t counter; a stats file integer */
	RELAY_METRIC_GAUGE = 1,   /* uint64_t gauge; a stats file integer */
	RELAY_METRIC_AGE = 2,     /* int64_t milliseconds, shown as a gauge
				     in seconds; a stats file real */
	RELAY_METRIC_FLAG = 3     /* int, 1 or 0; a gauge, a stats file
				     true or false */
} relay_metric_kind;

typedef enum relay_metric_section {
	RELAY_METRIC_DELIVERY = 0, /* reading, matching, running, the DLQ */
	RELAY_METRIC_SCHEDULE = 1, /* schedule occurrences in the stream */
	RELAY_METRIC_ATTEMPTS = 2, /* timeouts and exhausted invocations */
	RELAY_METRIC_GAUGES = 3    /* the live values */
} relay_metric_section;

/* One row of the table, as RELAY_METRIC_INFO makes it (columns above). */
typedef struct relay_metric_info {
	const char *field;            /* the member's name */
	size_t offset;                /* its offsetof() */
	relay_metric_kind kind;
	relay_metric_section section;
	const char *key;              /* 0: field */
	const char *prom;             /* 0: derived from the key */
	const char *help;
	int stream;
	int ctl;
	const char *ctl_label;
	const char *ctl_key;          /* 0: the key */
	int line;
	const char *line_label;
} relay_metric_info;

#define RELAY_METRIC_INFO(field, kind, section, key, prom, help, stream, \
			  ctl, ctl_label, ctl_key, line, line_label) \
	{ #field, offsetof(relay_consumer_metrics, field), kind, section, \
	  key, prom, help, stream, ctl, ctl_label, ctl_key, line, line_label },

/* A row's stats file key. */
static inline const char *relay_metric_key(const relay_metric_info *r)
{
	return r->key ? r->key : r->field;
}

#define RELAY_CONSUMER_METRICS(X) \
	X(events_received, RELAY_METRIC_COUNTER, RELAY_METRIC_DELIVERY, 0, 0, \
	  "External events classified (matched + unmatched).", \
	  1, 1, "Events received", 0, 1, "received") \
	X(events_matched, RELAY_METRIC_COUNTER, RELAY_METRIC_DELIVERY, 0, 0, \
	  "Events that matched at least one rule.", \
	  0, 2, "Events matched", 0, 0, 0) \
	X(events_unmatched, RELAY_METRIC_COUNTER, RELAY_METRIC_DELIVERY, 0, 0, \
	  "Events that matched no rule (acknowledged).", \
	  0, 3, "Events unmatched", 0, 0, 0) \
	X(events_malformed, RELAY_METRIC_COUNTER, RELAY_METRIC_DELIVERY, 0, 0, \
	  "Malformed or oversized messages dead-lettered unrun.", \
	  2, 0, 0, 0, 0, 0) \
	X(events_schedule, RELAY_METRIC_COUNTER, RELAY_METRIC_DELIVERY, 0, 0, \
	  "Schedule occurrences taken from the stream.", \
	  3, 0, 0, 0, 0, 0) \
	X(events_oversized, RELAY_METRIC_COUNTER, RELAY_METRIC_DELIVERY, 0, 0, \
	  "Messages larger than MAX_EVENT_BYTES.", \
	  0, 0, 0, 0, 0, 0) \
	X(handler_success, RELAY_METRIC_COUNTER, RELAY_METRIC_DELIVERY, 0, 0, \
	  "Handler attempts that exited 0.", \
	  4, 4, "Handler successes", 0, 0, 0) \
	X(handler_failure, RELAY_METRIC_COUNTER, RELAY_METRIC_DELIVERY, 0, 0, \
	  "Handler attempts that failed or timed out.", \
	  5, 5, "Handler failures", 0, 0, 0) \
	X(retries, RELAY_METRIC_COUNTER, RELAY_METRIC_DELIVERY, 0, 0, \
	  "Handler attempts after the first.", \
	  0, 0, 0, 0, 0, 0) \
	X(dlq_entries, RELAY_METRIC_COUNTER, RELAY_METRIC_DELIVERY, 0, 0, \
	  "Entries written to the dead-letter queue.", \
	  6, 7, "DLQ entries", 0, 3, "DLQ entries") \
	X(missing_payload, RELAY_METRIC_COUNTER, RELAY_METRIC_DELIVERY, 0, 0, \
	  "Stream bodies gone before their message was acknowledged.", \
	  0, 0, 0, 0, 0, 0) \
	X(concurrency_waits, RELAY_METRIC_COUNTER, RELAY_METRIC_DELIVERY, 0, 0, \
	  "Invocations that waited for a concurrency slot.", \
	  0, 0, 0, 0, 0, 0) \
	X(concurrency_timeouts, RELAY_METRIC_COUNTER, RELAY_METRIC_DELIVERY, \
	  0, 0, "Slot waits that gave up (message left pending).", \
	  0, 0, 0, 0, 0, 0) \
	X(reclaims, RELAY_METRIC_COUNTER, RELAY_METRIC_DELIVERY, 0, 0, \
	  "Entries delivered again by XAUTOCLAIM.", \
	  0, 6, "Message reclaims", 0, 0, 0) \
	X(acks, RELAY_METRIC_COUNTER, RELAY_METRIC_DELIVERY, 0, 0, \
	  "Messages acknowledged.", \
	  7, 0, 0, 0, 2, "acknowledged") \
	X(redis_errors, RELAY_METRIC_COUNTER, RELAY_METRIC_DELIVERY, 0, 0, \
	  "Failed Redis operations.", \
	  0, 0, 0, 0, 0, 0) \
	X(step_failures, RELAY_METRIC_COUNTER, RELAY_METRIC_DELIVERY, 0, 0, \
	  "Redis steps that failed for one message while Redis answered " \
	  "(once per backoff step).", \
	  0, 0, 0, 0, 0, 0) \
	X(schedule_obsolete, RELAY_METRIC_COUNTER, RELAY_METRIC_SCHEDULE, 0, \
	  "relay_schedule_occurrences_obsolete_total", \
	  "Schedule occurrences acknowledged unrun: schedule no longer " \
	  "configured.", \
	  0, 0, 0, 0, 0, 0) \
	X(schedule_malformed, RELAY_METRIC_COUNTER, RELAY_METRIC_SCHEDULE, 0, \
	  "relay_schedule_occurrences_malformed_total", \
	  "Schedule envelopes dead-lettered as malformed.", \
	  0, 0, 0, 0, 0, 0) \
	X(handler_timeouts, RELAY_METRIC_COUNTER, RELAY_METRIC_ATTEMPTS, 0, 0, \
	  "Handler attempts killed after their timeout (also in " \
	  "relay_handler_failure_total).", \
	  0, 0, 0, 0, 0, 0) \
	X(invocations_exhausted, RELAY_METRIC_COUNTER, RELAY_METRIC_ATTEMPTS, \
	  0, 0, "Invocations whose last allowed attempt failed.", \
	  0, 0, 0, 0, 0, 0) \
	X(trace_context_invalid, RELAY_METRIC_COUNTER, RELAY_METRIC_ATTEMPTS, \
	  0, 0, "Trace context values (traceparent, tracestate, baggage, " \
	  "relay_trace_link) of stream entries ignored as invalid or " \
	  "oversized.", \
	  0, 0, 0, 0, 0, 0) \
	X(starts_refused, RELAY_METRIC_COUNTER, RELAY_METRIC_ATTEMPTS, 0, \
	  "relay_handler_starts_refused_total", \
	  "Handler starts the system refused (no process or memory left); " \
	  "the invocation stayed pending, no attempt charged.", \
	  0, 0, 0, 0, 0, 0) \
	X(pending_entries, RELAY_METRIC_GAUGE, RELAY_METRIC_GAUGES, 0, 0, \
	  "Entries in the consumer group's PEL (refreshed periodically).", \
	  10, 8, "Pending entries", 0, 4, "pending") \
	X(pending_oldest_age_ms, RELAY_METRIC_AGE, RELAY_METRIC_GAUGES, \
	  "pending_oldest_age_seconds", 0, \
	  "Idle time of the oldest PEL entry.", \
	  12, 9, "Oldest pending age", "oldest_pending_age_seconds", 0, 0) \
	X(in_flight_invocations, RELAY_METRIC_GAUGE, RELAY_METRIC_GAUGES, 0, \
	  0, "Handlers running now.", \
	  8, 0, 0, 0, 0, 0) \
	X(buffered_events, RELAY_METRIC_GAUGE, RELAY_METRIC_GAUGES, 0, 0, \
	  "Messages held in memory.", \
	  9, 0, 0, 0, 0, 0) \
	X(redis_up, RELAY_METRIC_FLAG, RELAY_METRIC_GAUGES, 0, 0, \
	  "1 when Redis is reachable.", \
	  13, 0, 0, 0, 0, 0) \
	X(stuck_messages, RELAY_METRIC_GAUGE, RELAY_METRIC_GAUGES, 0, 0, \
	  "Messages whose Redis step keeps failing, in backoff " \
	  "(relayctl health lists them).", \
	  11, 0, 0, 0, 0, 0)

#ifdef __cplusplus
}
#endif

#endif /* RELAY_METRICS_H */
