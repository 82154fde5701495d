/*
 * relay/daemon_metrics.h - the one table of relayd's own figures: the
 * names under which relayd's /metrics and its stats file (doc/protocol.md)
 * show what is not the engine's (the engine's are relay/metrics.h), and
 * the labels relayctl prints them under. Macros only; nothing to link.
 *
 * Each list below is an X-macro: LIST(X) expands X once per row, in the
 * order /metrics gives the rows. relayd expands every list in each of its
 * writers (Prometheus and stats file) and relayctl in its readers, so a
 * name is written here once and nowhere else (the meson test
 * `metric-names` fails on a name of these lists, or of relay/metrics.h,
 * spelled out as a string in relayd or relayctl).
 *
 * The first column of every row, `id`, is an identifier naming the row;
 * relayd names the member holding the figure after it. It is not API.
 * Names, keys and labels are as stable as the formats they appear in
 * (doc/protocol.md, doc/cli.md); rows are appended, never reordered.
 *
 * Thread-safety: nothing here has state.
 */
#ifndef RELAY_DAEMON_METRICS_H
#define RELAY_DAEMON_METRICS_H

#ifdef __cplusplus
extern "C" {
#endif

/* How a figure is held and shown. */
typedef enum relay_figure_kind {
	RELAY_FIGURE_COUNTER = 0, /* uint64_t counter; a stats file integer */
	RELAY_FIGURE_GAUGE = 1,   /* uint64_t gauge; a stats file integer */
	RELAY_FIGURE_PERIOD = 2,  /* int64_t milliseconds, a setting (0:
				     off): a gauge in seconds, whole seconds
				     in the stats file */
	RELAY_FIGURE_AGE = 3,     /* int64_t milliseconds: a gauge in
				     seconds, a stats file real */
	RELAY_FIGURE_LENGTH = 4,  /* int64_t, -1 when not known yet: a gauge
				     left out while unknown, a stats file
				     integer or null */
	RELAY_FIGURE_FLAG = 5     /* bool: a gauge 1 or 0, a stats file
				     true or false */
} relay_figure_kind;

/*
 * The schedule publisher (relayd's outbox of schedule occurrences):
 *
 *	X(id, kind, key, prom, help)
 *
 *   key   its key in the stats file ("counters" for a counter, "gauges"
 *         for a gauge)
 *   prom  its Prometheus family
 *   help  the family's HELP text
 */
#define RELAY_SCHEDPUB_FIGURES(X) \
	X(published, RELAY_FIGURE_COUNTER, "schedule_published", \
	  "relay_schedule_occurrences_published_total", \
	  "Schedule occurrences this relayd appended to the stream.") \
	X(duplicate, RELAY_FIGURE_COUNTER, "schedule_duplicate", \
	  "relay_schedule_occurrences_duplicate_total", \
	  "Schedule occurrences found already published (by any relayd).") \
	X(failures, RELAY_FIGURE_COUNTER, "schedule_publish_failures", \
	  "relay_schedule_publish_failures_total", \
	  "Failed schedule publication attempts (retried from the outbox).") \
	X(catchup, RELAY_FIGURE_COUNTER, "schedule_catchup", \
	  "relay_schedule_catchup_total", \
	  "Occurrences published by the start-up catch-up.") \
	X(pending, RELAY_FIGURE_GAUGE, "schedule_outbox_pending", \
	  "relay_schedule_outbox_pending", \
	  "Schedule occurrences waiting to be published.")

/*
 * The apps relayd serves (gauges, as of the last reload; the stats file's
 * "gauges" object):
 *
 *	X(id, kind, key, prom, help)
 *
 *   key   its key in the stats file's "gauges"
 *   prom  its Prometheus family
 *   help  the family's HELP text
 */
#define RELAY_APPS_FIGURES(X) \
	X(loaded, RELAY_FIGURE_GAUGE, "apps_loaded", "relay_apps_loaded", \
	  "Apps whose template loaded (stale ones included).") \
	X(invalid, RELAY_FIGURE_GAUGE, "apps_invalid", "relay_apps_invalid", \
	  "Apps unavailable: their template never loaded.") \
	X(stale, RELAY_FIGURE_GAUGE, "apps_stale", "relay_apps_stale", \
	  "Apps serving their previous version: the template on disk " \
	  "became invalid.")

/*
 * Retention of the source stream and the DLQ (the stats file's
 * "retention" object):
 *
 *	X(id, kind, key, prom, help, file, ctl, ctl_label, ctl_json,
 *	  ctl_key)
 *
 *   key       its key in the stats file's "retention" object
 *   prom      its Prometheus family
 *   help      the family's HELP text
 *   file      its position (from 1) in the "retention" object
 *   ctl       its position (from 1) among the retention lines `relayctl
 *             stats` prints; 0: not printed
 *   ctl_label that line's label
 *   ctl_json  its position (from 1) among the retention figures of
 *             `relayctl stats --json`; 0: not there
 *   ctl_key   its key there; 0: the stats file key
 */
#define RELAY_RETENTION_FIGURES(X) \
	X(stream_trimmed, RELAY_FIGURE_COUNTER, "stream_trimmed", \
	  "relay_stream_trimmed_total", \
	  "Entries retention trimmed from the source stream.", \
	  3, 4, "Stream trimmed", 3, 0) \
	X(dlq_trimmed, RELAY_FIGURE_COUNTER, "dlq_trimmed", \
	  "relay_dlq_trimmed_total", \
	  "Entries retention trimmed from the DLQ.", \
	  4, 5, "DLQ trimmed", 4, 0) \
	X(failures, RELAY_FIGURE_COUNTER, "failures", \
	  "relay_retention_failures_total", \
	  "Failed retention steps.", \
	  5, 0, 0, 7, 0) \
	X(failing, RELAY_FIGURE_FLAG, "failing", \
	  "relay_retention_failing", \
	  "1 when the last retention tick failed.", \
	  10, 8, "Retention", 9, "retention_failing") \
	X(stream_retention_ms, RELAY_FIGURE_PERIOD, \
	  "stream_retention_seconds", "relay_stream_retention_seconds", \
	  "REDIS_STREAM_RETENTION (0: disabled).", \
	  1, 6, "Stream retention", 5, 0) \
	X(dlq_retention_ms, RELAY_FIGURE_PERIOD, "dlq_retention_seconds", \
	  "relay_dlq_retention_seconds", \
	  "REDIS_DLQ_RETENTION (0: disabled).", \
	  2, 7, "DLQ retention", 6, 0) \
	X(stream_length, RELAY_FIGURE_LENGTH, "stream_length", \
	  "relay_stream_length", \
	  "Entries in the source stream (as of the last retention step).", \
	  6, 1, "Stream length", 1, 0) \
	X(dlq_length, RELAY_FIGURE_LENGTH, "dlq_length", \
	  "relay_dlq_length", \
	  "Entries in the DLQ (as of the last retention step).", \
	  7, 2, "DLQ length", 2, 0) \
	X(oldest_entry_age_ms, RELAY_FIGURE_AGE, "oldest_entry_age_seconds", \
	  "relay_stream_oldest_entry_age_seconds", \
	  "Age of the oldest entry in the source stream.", \
	  8, 3, "Oldest entry age", 8, 0) \
	X(oldest_pending_age_ms, RELAY_FIGURE_AGE, \
	  "oldest_pending_entry_age_seconds", \
	  "relay_stream_oldest_pending_entry_age_seconds", \
	  "Age (since XADD) of the oldest entry pending in any group.", \
	  9, 0, 0, 0, 0)

/*
 * A handler's outcomes (relay_consumer_histogram's counts; the label
 * `outcome` of relay_handler_outcomes_total and the keys of a handler's
 * "outcomes" in the stats file), in that order:
 *
 *	X(id, name)
 */
#define RELAY_HANDLER_OUTCOMES(X) \
	X(succeeded, "succeeded") \
	X(failed, "failed") \
	X(timed_out, "timed_out") \
	X(exhausted, "exhausted")

/*
 * The start paths of an invocation (relay_runtime_warm_stats: the label
 * `path` of relay_handler_starts_total and relay_handler_start_seconds,
 * and the stats file's "warm" object), in the order of its latency_us
 * rows:
 *
 *	X(id, label, key, file)
 *
 *   label its `path` label
 *   key   its key in the stats file's "warm" object
 *   file  its position (from 1) there
 */
#define RELAY_START_PATHS(X) \
	X(cold_starts, "cold", "cold_starts", 2) \
	X(warm_starts, "warm", "warm_starts", 1)

/*
 * The states of a warm parent (relay_runtime_warm_foreach()), in the
 * order /metrics lists relay_warm_parents:
 *
 *	X(id, name)
 */
#define RELAY_WARM_PARENT_STATES(X) \
	X(starting, "starting") \
	X(ready, "ready") \
	X(retiring, "retiring")

/*
 * The warm path's families and the keys of the stats file's "warm"
 * object beside the start paths:
 *
 *	X(id, type, prom, help, key)
 *
 *   type  the Prometheus TYPE
 *   key   its key in the "warm" object; 0: not there
 */
#define RELAY_WARM_FIGURES(X) \
	X(starts, "counter", "relay_handler_starts_total", \
	  "Invocations started, by path (warm parent or cold sandbox).", 0) \
	X(failures, "counter", "relay_warm_start_failures_total", \
	  "Warm starts that fell back to a cold start, by reason.", \
	  "failures") \
	X(parents, "gauge", "relay_warm_parents", \
	  "Warm parents now, by app and state.", "parents") \
	X(memory, "gauge", "relay_warm_parents_memory_bytes", \
	  "Resident memory of all warm parents.", "parents_memory_bytes") \
	X(latency, "histogram", "relay_handler_start_seconds", \
	  "Run handed to the runtime until the invocation's process " \
	  "exists, by path.", 0)

/*
 * The OTLP trace exporter (relayd's OTEL_TRACES_EXPORTER=otlp):
 *
 *	X(id, kind, prom, help)
 */
#define RELAY_TRACE_EXPORT_FIGURES(X) \
	X(spans_exported, RELAY_FIGURE_COUNTER, \
	  "relay_trace_spans_exported_total", \
	  "Spans the OTLP collector accepted.") \
	X(spans_dropped, RELAY_FIGURE_COUNTER, \
	  "relay_trace_spans_dropped_total", \
	  "Spans dropped: queue full, too large, or export given up.") \
	X(exports_failed, RELAY_FIGURE_COUNTER, \
	  "relay_trace_exports_failed_total", \
	  "OTLP export requests that failed (each retry counts).") \
	X(queued, RELAY_FIGURE_GAUGE, "relay_trace_spans_queued", \
	  "Spans waiting for export.")

#ifdef __cplusplus
}
#endif

#endif /* RELAY_DAEMON_METRICS_H */
