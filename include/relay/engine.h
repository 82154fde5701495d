/*
 * relay/engine.h - the stream engine (librelay "consumer" module).
 *
 * A relay_consumer reads one Redis Stream through one consumer group and
 * drives every message through its whole life (doc/architecture.md):
 *
 *	XREADGROUP / XAUTOCLAIM → classify (malformed → DLQ placeholder + ACK;
 *	schedule envelope → schedule path: resolve the schedule by name,
 *	one invocation of its pinned handler) → match every app (dispatch order)
 *	→ per matched invocation: slots → try_start → runtime → mark_complete
 *	| record_failure | mark_exhausted → when all terminal: DLQ entries for
 *	the exhausted ones → XACK → retain the state hash.
 *
 * A message that cannot finish now (an invocation backing off, running
 * elsewhere, its app unavailable, no concurrency slot within the bounded
 * wait, a Redis error) is released from memory and stays in the PEL; the
 * periodic XAUTOCLAIM (every reclaim interval, entries idle at least
 * MinPendingIdle, from any consumer) delivers it again and the
 * per-invocation state decides what runs. While this consumer works on a
 * message it renews its ownership (XCLAIM ... JUSTID) well within
 * MinPendingIdle, so no live replica reclaims it.
 *
 * The library never owns the loop: the host creates a libev loop, opens
 * the Redis backend on it (relay_redis_open_libev()), attaches the
 * runtime (relay_runtime_libev_attach()), creates the consumer on the
 * same loop and runs the loop.
 *
 *	relay_consumer_options o = RELAY_CONSUMER_OPTIONS_INIT;
 *	o.stream = "events"; o.group = "relay"; o.consumer = "host-1";
 *	relay_consumer_new(&c, loop, redis, rt, apps, &o, &err);
 *	relay_consumer_start(c);
 *	ev_run(loop, 0);
 *	...                         // on SIGTERM:
 *	relay_consumer_stop(c, 1, on_stopped, ctx);   // graceful drain
 *	...                         // in on_stopped:
 *	relay_consumer_close(c, on_closed);           // then free backends
 *
 * Fixed internals (doc/configuration.md C-3), each divided by
 * options.time_scale:
 * retry backoff 1m, 2m, 5m, 10m (relay_inv_backoff_ms()); reclaim
 * interval 1m; MinPendingIdle 1m; ownership renewal every 20 s; slot wait
 * 30 s; XREADGROUP BLOCK 1 s; Redis read backoff 1 s doubling to 30 s
 * with jitter. A rule's own timeout is never scaled.
 *
 * Log message ids (stable; keys app, handler, message_id, attempt,
 * duration_ms, exit_code as "key=value"; never payloads, tokens or env):
 *	RELAY-ENG01 INFO  consumer started (stream, group, consumer)
 *	RELAY-ENG02 WARN  Redis unavailable (once per outage)
 *	RELAY-ENG03 INFO  Redis available again (once per recovery)
 *	RELAY-ENG04 INFO  handler succeeded (DEBUG) / WARN handler failed
 *	RELAY-ENG05 WARN  invocation exhausted, dead-lettered
 *	RELAY-ENG06 WARN  malformed message dead-lettered (reason)
 *	RELAY-ENG07 WARN  missing payload (PEL entry without body)
 *	RELAY-ENG08 INFO  app unavailable, message kept pending (DEBUG after
 *	                  the first per app)
 *	RELAY-ENG09 WARN  a Redis operation failed; message kept pending
 *	RELAY-ENG10 INFO  stop requested / stopped
 *	RELAY-ENG11 DEBUG concurrency slot wait timed out
 *	RELAY-ENG12 WARN  ownership of a message was lost to another consumer
 *	RELAY-ENG13 WARN  malformed schedule occurrence dead-lettered
 *	RELAY-ENG14 INFO  schedule occurrence obsolete (ACKed, no run) or
 *	                  kept pending (its app is invalid); DEBUG when
 *	                  dispatched
 *	RELAY-ENG15 INFO  a stream entry gone after its message was
 *	                  acknowledged (retention): not a missing payload
 *	RELAY-ENG16 WARN  handler starts refused by the system (no process
 *	                  or memory left): invocations left pending, no
 *	                  attempt charged; once per burst (at most one line
 *	                  per 10 s, with how many were not logged)
 *
 * Thread-safety: a consumer and every object it borrows are confined to
 * the thread that runs their loop. Callbacks run from that loop.
 */
#ifndef RELAY_ENGINE_H
#define RELAY_ENGINE_H

#include <stdint.h>

#include "common.h"
#include "clock.h"
#include "log.h"
#include "redis.h"
#include "runtime.h"
#include "app.h"
#include "trace.h"

#ifdef __cplusplus
extern "C" {
#endif

struct ev_loop; /* libev; only relay/relay_libev.h includes <ev.h> */

typedef struct relay_consumer relay_consumer;

/**
 * relay_slots - a concurrency limiter several consumers can share.
 *
 * Every consumer counts its running invocations against a limiter: the
 * global MAX_CONCURRENCY and, per app, min(the app's concurrency,
 * MAX_CONCURRENCY). A consumer created without options.slots owns a
 * private one (max = options.max_concurrency). A host that reads several
 * streams (partitions) creates ONE limiter and passes it to every
 * consumer: the global limit and each app's limit then hold across all of
 * them (an app's effective concurrency counts its invocations on every
 * stream), and a freed slot goes to the oldest waiter whatever its
 * stream (one FIFO queue; a waiter of a saturated app does not hold up
 * other apps).
 *
 * Thread-safety: confined to the one loop thread of the consumers that
 * use it (they must all run on the same loop).
 *
 *	relay_slots *s;
 *	relay_slots_new(&s, 8);
 *	o.slots = s;                      // for every partition's consumer
 *	...                               // after every close callback:
 *	relay_slots_free(s);
 */
typedef struct relay_slots relay_slots;

/**
 * relay_slots_new() - create a limiter.
 * @out: receives it.
 * @max_concurrency: the global limit; 0 = 8
 *   (RELAY_CONSUMER_DEFAULT_MAX_CONCURRENCY).
 * Returns: 0, RELAY_EINVAL (@out NULL) or RELAY_ENOMEM.
 * Ownership: *out is new; free it with relay_slots_free() once every
 * consumer given it has been closed (its close callback ran).
 */
RELAY_EXTERN int relay_slots_new(relay_slots **out,
				 unsigned int max_concurrency);

/** relay_slots_free() - free @s (NULL: no-op). No consumer may use it
 * any more (asserted in debug builds). */
RELAY_EXTERN void relay_slots_free(relay_slots *s);

/** relay_slots_max() - the global limit of @s. */
RELAY_EXTERN unsigned int relay_slots_max(const relay_slots *s);

/** relay_slots_running() - slots held now across every consumer using
 * @s: invocations claimed or running (a gauge; tests and metrics). */
RELAY_EXTERN unsigned int relay_slots_running(const relay_slots *s);

/** relay_slots_app_running() - slots held now by app @app (borrowed for
 * the call) across every consumer using @s; 0 for an unknown app. */
RELAY_EXTERN unsigned int relay_slots_app_running(const relay_slots *s,
						  const char *app);

/* ---- several streams (partitions) ------------------------------------ */

/* The most streams one REDIS_STREAM value may name. */
#define RELAY_STREAM_LIST_MAX 64

/**
 * relay_stream_list_parse() - the streams a REDIS_STREAM value names.
 * @spec: the value. Without a comma and without the shorthand it is ONE
 *   stream, verbatim. Otherwise a comma-separated list (blanks around an
 *   element ignored) of stream names (no blank or control character)
 *   and shorthands PREFIX{A..B} (decimal A <= B, at most 4 digits each)
 *   that stand for PREFIX:{pA}, PREFIX:{pA+1}, ..., PREFIX:{pB}: numbered
 *   partitions, each with its own hash tag ("orders{0..3}" is
 *   "orders:{p0}" ... "orders:{p3}"). An element of that shape (a
 *   prefix, '{', text with "..", a final '}') with other bounds is an
 *   error, never a name.
 * @out: receives a NULL-terminated array of the names in order
 *   (free with relay_stream_list_free()).
 * @count: receives the number of names (may be NULL).
 * @err: optional; on RELAY_EINVAL its text says what is wrong (one line,
 *   without the variable's name).
 *
 * Returns: 0, RELAY_EINVAL (empty element, blank in a listed name,
 * bad or reversed range bounds, a name given twice, more than RELAY_STREAM_LIST_MAX streams,
 * a shorthand whose PREFIX already holds a hash tag, a listed name that
 * is a key Relay keeps for another listed stream: under "relay:<S>:" or
 * "relay:invocation:<E(S)>:") or RELAY_ENOMEM. Names in @err's text are
 * escaped (bytes outside printable ASCII as \xNN). Thread-safe.
 */
RELAY_EXTERN int relay_stream_list_parse(const char *spec, char ***out,
					 size_t *count, relay_error *err);

/** relay_stream_list_free() - free a relay_stream_list_parse() array
 * (NULL: no-op). */
RELAY_EXTERN void relay_stream_list_free(char **list);

/**
 * relay_stream_hash() - 32-bit FNV-1a of @len bytes at @key (offset basis
 * 2166136261, prime 16777619): the documented hash producers use to pick a
 * partition, so any language can compute the same.
 */
RELAY_EXTERN uint32_t relay_stream_hash(const void *key, size_t len);

/**
 * relay_stream_partition() - relay_stream_hash(@key) % @n: the index of
 * the partition (in relay_stream_list_parse() order) a key belongs to;
 * 0 when @n is 0. Schedules publish occurrence O to partition
 * relay_stream_partition(O's occurrence id) (doc/schedules.md).
 */
RELAY_EXTERN size_t relay_stream_partition(const void *key, size_t len,
					   size_t n);

/* Defaults of the options (doc/configuration.md C-2). */
#define RELAY_CONSUMER_DEFAULT_MAX_CONCURRENCY 8u
#define RELAY_CONSUMER_DEFAULT_MAX_BUFFERED 16u
#define RELAY_CONSUMER_DEFAULT_MAX_EVENT_BYTES (256u * 1024u)
#define RELAY_CONSUMER_MAX_EVENT_BYTES_LIMIT (1024u * 1024u)
#define RELAY_CONSUMER_DEFAULT_RETENTION_MS (168LL * 3600 * 1000)

/* Fixed internals before time_scale (milliseconds). */
#define RELAY_CONSUMER_RECLAIM_INTERVAL_MS 60000
#define RELAY_CONSUMER_MIN_PENDING_IDLE_MS 60000
#define RELAY_CONSUMER_RENEW_INTERVAL_MS 20000
#define RELAY_CONSUMER_SLOT_WAIT_MS 30000
#define RELAY_CONSUMER_READ_BLOCK_MS 1000
#define RELAY_CONSUMER_PENDING_REFRESH_MS 5000
#define RELAY_CONSUMER_BACKOFF_MIN_MS 1000
#define RELAY_CONSUMER_BACKOFF_MAX_MS 30000
/* A message whose Redis step keeps failing while Redis answers is
 * retried after a per-message backoff doubling between these. */
#define RELAY_CONSUMER_STUCK_BACKOFF_MIN_MS 60000
#define RELAY_CONSUMER_STUCK_BACKOFF_MAX_MS (30 * 60000)

/**
 * relay_consumer_available_fn - whether an app can run now.
 * @app: the app (borrowed for the call).
 * @payload: options.available_payload.
 *
 * An unavailable app still matches, but its invocations are not started:
 * the message stays pending with no attempt counted and is never
 * dead-lettered for that alone.
 * Returns: nonzero when the app's handlers can run.
 */
typedef int (*relay_consumer_available_fn)(const relay_app *app,
					   void *payload);

/**
 * struct relay_consumer_executor - how the consumer runs one invocation
 * (versioned vtable: doc/api-stability.md, "Versioned structs and vtables").
 *
 * The default (options.executor NULL) runs through the relay_runtime given
 * to relay_consumer_new(). An embedder may run handlers some other way
 * (in-process functions, a remote pool): tests and benchmarks use an
 * in-process one. Implementations embed this struct first.
 *
 * run: start @spec (borrowed for the call); on success return 0, set
 * *@handle to something cancel understands, and call @done exactly once,
 * LATER, from the consumer's loop (never inside run). A nonzero return
 * means @done never runs (counted as a failed attempt with the error as
 * its reason). @output may be called with lines before @done.
 * cancel: make a started run end soon with RELAY_RUN_CANCELLED (optional;
 * NULL = runs cannot be cancelled and are waited for).
 */
typedef struct relay_consumer_executor relay_consumer_executor;
struct relay_consumer_executor {
	unsigned int version;  /* RELAY_CONSUMER_EXECUTOR_VERSION */
	int (*run)(relay_consumer_executor *x, const relay_exec_spec *spec,
		   relay_output_fn output, relay_run_done_fn done,
		   void *payload, void **handle);
	void (*cancel)(relay_consumer_executor *x, void *handle);
	/* version 1 ends here; later versions append only */
};

#define RELAY_CONSUMER_EXECUTOR_VERSION 1

/**
 * relay_consumer_span_fn - one finished span (options.span, version 3).
 * @span: the record: kind CONSUMER, name "<app>/<handler>", the
 *   attributes, links and status of one handler attempt
 *   (doc/operations.md, "Tracing"); every pointer in it is BORROWED for
 *   the call only: copy what you keep (relay_span_dup()).
 * @payload: options.span_payload.
 *
 * Called from the consumer's loop when an attempt ends (after the
 * handler exited, timed out or could not start; a cancelled attempt is
 * reported too), only for sampled attempts. It must not block and must
 * not call back into the consumer.
 */
typedef void (*relay_consumer_span_fn)(const relay_span *span,
				       void *payload);

/**
 * struct relay_consumer_options - how to run a consumer (versioned).
 *
 * Initialise with RELAY_CONSUMER_OPTIONS_INIT; zero fields take defaults.
 * max_buffered bounds this consumer's messages in memory: with several
 * consumers (one per stream) each holds up to its own max_buffered.
 * Strings are copied by relay_consumer_new(); pointers are borrowed and
 * must outlive the consumer.
 */
typedef struct relay_consumer_options {
	unsigned int version;           /* RELAY_CONSUMER_OPTIONS_VERSION */
	const char *stream;             /* REDIS_STREAM, required */
	const char *group;              /* REDIS_GROUP, required */
	const char *consumer;           /* REDIS_CONSUMER, required */
	unsigned int max_concurrency;   /* 0 = 8; running invocations */
	unsigned int max_buffered;      /* 0 = 16; messages in memory */
	size_t max_event_bytes;         /* 0 = 256 KiB; at most 1 MiB */
	int64_t retention_ms;           /* 0 = 168h; state hash TTL */
	unsigned int time_scale;        /* 0 or 1 = real time; N divides
					   every fixed internal duration
					   (hosts pass it only in test
					   builds) */
	const relay_clock *clock;       /* NULL = system clock */
	relay_logger logger;            /* copied; NULL fn discards */
	relay_output_fn output;         /* handler output lines, or NULL */
	void *output_payload;           /* passed to output */
	relay_consumer_available_fn available; /* NULL = default: python3
					   and node apps need their
					   interpreter on PATH */
	void *available_payload;        /* passed to available */
	relay_consumer_executor *executor; /* NULL = the relay_runtime;
					   borrowed */
	/* version 1 ends here; later versions append only */
	relay_slots *slots;             /* v2: a limiter shared with other
					   consumers on the same loop
					   (borrowed; must outlive the
					   consumer), or NULL = a private
					   one of max_concurrency. When set,
					   max_concurrency must be 0 or
					   equal relay_slots_max() */
	/* version 2 ends here */
	relay_consumer_span_fn span;    /* v3: tracing on: called with each
					   sampled handler attempt's span
					   when the attempt ends (NULL =
					   no spans; doc/operations.md,
					   "Tracing") */
	void *span_payload;             /* v3: passed to span */
	const relay_trace_sampler *sampler; /* v3: copied; NULL = the
					   OpenTelemetry default,
					   parentbased_always_on */
	/* version 3 ends here */
	int no_outcomes;                /* v4: nonzero = do not append each
					   attempt's outcome to the outcome
					   stream relay:<stream>:outcomes
					   (doc/redis-layout.md R-10; older
					   versions: appended) */
	/* version 4 ends here */
} relay_consumer_options;

#define RELAY_CONSUMER_OPTIONS_VERSION 4
#define RELAY_CONSUMER_OPTIONS_INIT \
	{ .version = RELAY_CONSUMER_OPTIONS_VERSION }

/**
 * relay_consumer_new() - create a consumer (not yet reading).
 * @out: receives the consumer.
 * @loop: the host's libev loop (borrowed; must outlive the consumer).
 * @redis: a backend on @loop (relay_redis_open_libev()); borrowed, must
 *   outlive the consumer (free it after the close callback).
 * @rt: a runtime attached to @loop; borrowed, as @redis. May be NULL
 *   when options.executor is set.
 * @apps: the app set; borrowed until replaced with
 *   relay_consumer_set_apps() or the consumer is closed.
 * @opts: options (required: stream, group, consumer).
 * @err: optional error detail.
 *
 * Returns: 0, RELAY_EINVAL (missing or out-of-range option, bad version)
 * or RELAY_ENOMEM.
 * Ownership: *out is new; release it with relay_consumer_close().
 */
RELAY_EXTERN int relay_consumer_new(relay_consumer **out,
				    struct ev_loop *loop,
				    relay_redis_backend *redis,
				    relay_runtime *rt, const relay_appset *apps,
				    const relay_consumer_options *opts,
				    relay_error *err);

/**
 * relay_consumer_start() - ensure the group (XGROUP CREATE ... 0
 * MKSTREAM; BUSYGROUP is fine) and start reading, reclaiming and renewing.
 *
 * Never fails because Redis is down: the consumer retries with backoff
 * and reports it through relay_consumer_health_get().
 * Returns: 0, or RELAY_EINVAL when already started or stopping.
 */
RELAY_EXTERN int relay_consumer_start(relay_consumer *c);

/** relay_consumer_stopped_fn - the consumer has no work left. */
typedef void (*relay_consumer_stopped_fn)(relay_consumer *c, void *payload);

/**
 * relay_consumer_stop() - stop reading and drain.
 * @c: the consumer.
 * @graceful: nonzero: running handlers finish (up to their timeout) and
 *   their outcome is recorded; invocations not started yet are left
 *   alone (no attempt charged; the messages stay pending). Zero: running
 *   handlers are cancelled too, nothing more is recorded (their claims
 *   expire; the PEL keeps everything).
 * @cb: called once from the loop when nothing is in flight any more
 *   (may be NULL).
 * @payload: passed to @cb.
 *
 * A second call (e.g. a second signal) may pass @graceful = 0 to stop at
 * once; the callback of the first call is replaced by the new one.
 * Returns: 0 (@cb will run once), or RELAY_EINVAL after close.
 */
RELAY_EXTERN int relay_consumer_stop(relay_consumer *c, int graceful,
				     relay_consumer_stopped_fn cb,
				     void *payload);

/** relay_consumer_close_fn - the consumer's memory is about to go. */
typedef void (*relay_consumer_close_fn)(relay_consumer *c);

/**
 * relay_consumer_close() - stop at once (if not stopped) and free.
 * @c: the consumer, or NULL (no-op).
 * @cb: called once from the loop when the consumer's last callback has
 *   run; @c is freed right after @cb returns. May be NULL.
 *
 * As libuv's uv_close(): @c stays valid (for relay_consumer_metrics_get())
 * until @cb. The backends, runtime and app set may be freed after it.
 */
RELAY_EXTERN void relay_consumer_close(relay_consumer *c,
				       relay_consumer_close_fn cb);

/**
 * relay_consumer_set_apps() - replace the app set (reload).
 * @c: the consumer.
 * @apps: the new set; borrowed from now on. The previous set is no
 *   longer used once this returns and may be freed.
 *
 * Messages already in memory keep running the invocations they matched
 * (apps are reference-counted); every later delivery is matched against
 * @apps, so a removed rule stops gating the ACK of pending messages.
 * Returns: 0 or RELAY_ENOMEM (the old set stays in use).
 */
RELAY_EXTERN int relay_consumer_set_apps(relay_consumer *c,
					 const relay_appset *apps);

/** struct relay_consumer_health - readiness for `relayctl health`. */
typedef struct relay_consumer_health {
	unsigned int version;  /* RELAY_CONSUMER_HEALTH_VERSION */
	int ready;             /* started, group ensured, Redis up,
				  not stopping */
	int redis_up;          /* the last Redis operation succeeded */
	int stopping;          /* relay_consumer_stop() was called */
	char reason[160];      /* "" when ready, else one line: "starting",
				  "redis unavailable: <errstr>",
				  "stopping" */
} relay_consumer_health;

#define RELAY_CONSUMER_HEALTH_VERSION 1

/**
 * relay_consumer_health_get() - fill @out (caller-allocated). Set
 * out->version to RELAY_CONSUMER_HEALTH_VERSION first: only the fields of
 * that version are written and out->version is left as given (0 is read
 * as 1). Loop thread only.
 */
RELAY_EXTERN void relay_consumer_health_get(const relay_consumer *c,
					    relay_consumer_health *out);

/**
 * struct relay_consumer_metrics - counters and gauges (caller-allocated).
 *
 * Set version to RELAY_CONSUMER_METRICS_VERSION before the call.
 * Counters count since creation or the last relay_consumer_metrics_reset().
 * Invariant: events_received = events_matched + events_unmatched
 * (decoded external events). Malformed messages and schedule envelopes
 * are counted apart. Each message is classified and counted once, by the
 * replica that wins claim_classification, however often it is delivered.
 */
typedef struct relay_consumer_metrics {
	unsigned int version;          /* RELAY_CONSUMER_METRICS_VERSION */
	/* counters */
	uint64_t events_received;      /* decoded external events */
	uint64_t events_matched;       /* matched >= 1 rule */
	uint64_t events_unmatched;     /* matched none (ACKed) */
	uint64_t events_malformed;     /* placeholder path (incl. oversized) */
	uint64_t events_oversized;     /* > max_event_bytes */
	uint64_t events_schedule;      /* schedule envelopes */
	uint64_t handler_success;      /* attempts that exited 0 */
	uint64_t handler_failure;      /* attempts that failed */
	uint64_t retries;              /* attempts after the first */
	uint64_t dlq_entries;          /* DLQ entries written */
	uint64_t missing_payload;      /* bodies gone before their message
					  was acknowledged (data loss) */
	uint64_t concurrency_waits;    /* invocations that waited for a slot */
	uint64_t concurrency_timeouts; /* ... and gave up (stay pending) */
	uint64_t reclaims;             /* entries delivered by XAUTOCLAIM */
	uint64_t acks;                 /* messages acknowledged */
	uint64_t redis_errors;         /* failed Redis operations */
	/* gauges */
	uint64_t in_flight_invocations; /* handlers running now */
	uint64_t buffered_events;      /* messages in memory */
	uint64_t pending_entries;      /* XPENDING count (refreshed) */
	int64_t pending_oldest_age_ms; /* idle of the oldest PEL entry; 0 */
	int redis_up;                  /* 1 or 0 */
	/* version 1 ends here; later versions append only */
	uint64_t schedule_malformed;   /* v2: envelopes dead-lettered as
					  malformed (also in
					  events_schedule) */
	uint64_t schedule_obsolete;    /* v2: occurrences ACKed without a
					  run: schedule gone */
	/* version 2 ends here */
	uint64_t step_failures;        /* v3: Redis steps that failed for
					  one message while Redis answered,
					  counted once per backoff step */
	uint64_t stuck_messages;       /* v3 gauge: messages in such a
					  backoff (relay_consumer_stuck_
					  messages()) */
	/* version 3 ends here */
	uint64_t handler_timeouts;     /* v4: attempts killed after their
					  timeout (also in handler_failure) */
	uint64_t invocations_exhausted; /* v4: invocations whose last
					  allowed attempt failed (retries
					  used up; dead-lettered) */
	/* version 4 ends here */
	uint64_t trace_context_invalid; /* v5: traceparent, tracestate,
					  baggage or relay_trace_link
					  values of stream entries that
					  were invalid or oversized and
					  ignored (one per field) */
	/* version 5 ends here */
	uint64_t starts_refused;       /* v6: handler starts the system
					  refused (EAGAIN, ENOMEM: no
					  process or memory left); each
					  invocation stayed pending, no
					  attempt charged */
} relay_consumer_metrics;

/*
 * Version 4 also means relay_consumer_histogram carries the outcome
 * counters (succeeded ... exhausted): a caller that needs them asks
 * relay_consumer_metrics_get() for version 4 first; a library older than
 * that answers RELAY_EINVAL and passes the shorter histogram.
 */
#define RELAY_CONSUMER_METRICS_VERSION 6

/**
 * relay_consumer_metrics_get() - copy the current figures into @out.
 * Only the fields of out->version are written (a version 1 caller's
 * smaller struct is safe); out->version is left as given.
 * Returns: 0, or RELAY_EINVAL when out->version is 0 or unknown.
 */
RELAY_EXTERN int relay_consumer_metrics_get(const relay_consumer *c,
					    relay_consumer_metrics *out);

/** relay_consumer_metrics_reset() - zero every counter and histogram
 * (`relayctl stats reset`); gauges are unaffected. */
RELAY_EXTERN void relay_consumer_metrics_reset(relay_consumer *c);

/* Upper bounds (seconds) of relay_handler_duration_seconds buckets. */
#define RELAY_CONSUMER_DURATION_BUCKETS \
	{ 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, \
	  120, 300 }
#define RELAY_CONSUMER_DURATION_NBUCKETS 15

/**
 * struct relay_consumer_histogram - one app/handler's durations and, since
 * metrics version 4 (appended; library-filled, borrowed by the callback),
 * its outcomes. Every attempt counts once in succeeded, failed or
 * timed_out; exhausted counts invocations given up after their last
 * allowed attempt (that attempt is also in failed or timed_out).
 * Counters: zeroed by relay_consumer_metrics_reset().
 */
typedef struct relay_consumer_histogram {
	const char *app;        /* borrowed for the callback */
	const char *handler;    /* borrowed for the callback */
	uint64_t buckets[RELAY_CONSUMER_DURATION_NBUCKETS]; /* cumulative:
				   attempts with duration <= bound i */
	uint64_t count;         /* attempts that ran (the +Inf bucket); one
				   that failed to start has no duration */
	double sum_seconds;     /* sum of durations */
	/* metrics version 4 */
	uint64_t succeeded;     /* attempts that exited 0 */
	uint64_t failed;        /* attempts that failed (nonzero exit,
				   signal, or could not start) */
	uint64_t timed_out;     /* attempts killed after their timeout */
	uint64_t exhausted;     /* invocations out of attempts */
} relay_consumer_histogram;

/** relay_consumer_histogram_fn - one histogram; nonzero stops. */
typedef int (*relay_consumer_histogram_fn)(const relay_consumer_histogram *h,
					   void *payload);

/**
 * relay_consumer_histograms() - visit every app/handler histogram, in
 * (app, handler) name order.
 * Returns: 0, or the callback's nonzero value.
 */
RELAY_EXTERN int relay_consumer_histograms(const relay_consumer *c,
					   relay_consumer_histogram_fn fn,
					   void *payload);

/**
 * struct relay_consumer_stuck - a message whose Redis step keeps failing
 * (an error reply such as a refused DLQ write or a script error). The
 * message stays pending; its deliveries are skipped until retry_in_ms
 * passes (a per-message backoff doubling from
 * RELAY_CONSUMER_STUCK_BACKOFF_MIN_MS to RELAY_CONSUMER_STUCK_BACKOFF_MAX_MS),
 * and one log line is written per backoff step. Borrowed by the callback;
 * may grow (fields are appended).
 */
typedef struct relay_consumer_stuck {
	const char *message_id;
	const char *reason;        /* "<step>: <error>", one line */
	unsigned int failures;     /* backoff steps so far */
	int64_t retry_in_ms;       /* until the next try; 0 = due */
	relay_wall_ms since_ms;    /* first failure, wall clock */
} relay_consumer_stuck;

/** relay_consumer_stuck_fn - one stuck message; nonzero stops. */
typedef int (*relay_consumer_stuck_fn)(const relay_consumer_stuck *s,
				       void *payload);

/**
 * relay_consumer_stuck_messages() - visit every stuck message (for
 * `relayctl health` and stats), in no particular order. Loop thread only.
 * Returns: 0, or the callback's nonzero value.
 */
RELAY_EXTERN int relay_consumer_stuck_messages(const relay_consumer *c,
					       relay_consumer_stuck_fn fn,
					       void *payload);

/** struct relay_consumer_result - the outcome of one manual run. */
typedef struct relay_consumer_result {
	const char *app;              /* borrowed for the callback */
	const char *handler;          /* borrowed for the callback */
	relay_run_outcome outcome;    /* status RELAY_RUN_* and reason */
} relay_consumer_result;

/**
 * relay_consumer_run_cb - completion of relay_consumer_invoke() or
 * relay_consumer_replay().
 * @status: 0 (results valid, possibly none matched), RELAY_ENOTFOUND (no
 *   such app/handler), RELAY_EPARSE / RELAY_ETYPE (event is not a JSON
 *   object), RELAY_EBACKEND (a handler could not be started),
 *   RELAY_ECLOSED (consumer closed first).
 * @r, @n: results in dispatch order; borrowed for the call.
 */
typedef void (*relay_consumer_run_cb)(int status,
				      const relay_consumer_result *r,
				      size_t n, void *payload);

/**
 * relay_consumer_invoke() - run every rule of app @app that matches
 * @event, once each, in declaration order (`relayctl app invoke`).
 *
 * Manual: no Redis, no invocation state, no retries, no DLQ, no
 * concurrency slots; output goes to options.output with message id
 * "manual". @app and @event are copied.
 * Returns: 0 (@cb runs once, from the loop) or RELAY_EINVAL / ENOMEM.
 */
RELAY_EXTERN int relay_consumer_invoke(relay_consumer *c, const char *app,
				       const char *event, size_t len,
				       relay_consumer_run_cb cb,
				       void *payload);

/**
 * relay_consumer_invoke_output() - relay_consumer_invoke() that also
 * hands the runs' output lines to @output (`relayctl app invoke
 * --output` prints them). options.output still gets every line.
 * @output: called for each line, from the loop, before @cb; may be NULL.
 * @output_payload: passed to @output.
 * Returns: as relay_consumer_invoke().
 * Ownership: the line is borrowed for the call (relay_output_line).
 * Thread-safety: the loop's thread only.
 */
RELAY_EXTERN int relay_consumer_invoke_output(relay_consumer *c,
					      const char *app,
					      const char *event, size_t len,
					      relay_output_fn output,
					      void *output_payload,
					      relay_consumer_run_cb cb,
					      void *payload);

/**
 * relay_consumer_replay() - run exactly handler @handler of @app once
 * with @event (`relayctl dlq replay`), with the rule's current timeout
 * and the app's current env, whether or not the pattern matches.
 * When @handler is no event rule of @app but @event is a valid schedule
 * occurrence envelope of @app (a dead-lettered occurrence), @handler runs
 * as schedule dispatch runs it: stdin {"source":"relay.schedule",
 * "scheduled_at":...}, the schedule's current timeout (default 6 s if the
 * schedule is gone). Otherwise as relay_consumer_invoke().
 */
RELAY_EXTERN int relay_consumer_replay(relay_consumer *c, const char *app,
				       const char *handler, const char *event,
				       size_t len, relay_consumer_run_cb cb,
				       void *payload);

/**
 * relay_consumer_replay_output() - relay_consumer_replay() that also
 * hands the run's output lines to @output (`relayctl dlq replay` prints
 * them). options.output still gets every line.
 * @output: called for each line, from the loop, before @cb; may be NULL.
 * @output_payload: passed to @output.
 * Returns: as relay_consumer_replay().
 * Ownership: the line is borrowed for the call (relay_output_line).
 * Thread-safety: as relay_consumer_replay(): the loop's thread only.
 */
RELAY_EXTERN int relay_consumer_replay_output(relay_consumer *c,
					      const char *app,
					      const char *handler,
					      const char *event, size_t len,
					      relay_output_fn output,
					      void *output_payload,
					      relay_consumer_run_cb cb,
					      void *payload);

/**
 * relay_consumer_replay_linked() - relay_consumer_replay_output() whose
 * run's span (tracing on: options.span) links to @link, the W3C
 * version-00 traceparent of the failed attempt being replayed (a DLQ
 * entry's `trace` "attempt", doc/redis-layout.md); NULL or an invalid
 * value: no link. The run is the root of a new trace either way, as a
 * relay_consumer_invoke() run is.
 * Returns: as relay_consumer_replay(). @link is copied.
 * Thread-safety: the loop's thread only.
 */
RELAY_EXTERN int relay_consumer_replay_linked(relay_consumer *c,
					      const char *app,
					      const char *handler,
					      const char *event, size_t len,
					      const char *link,
					      relay_output_fn output,
					      void *output_payload,
					      relay_consumer_run_cb cb,
					      void *payload);

#ifdef __cplusplus
}
#endif

#endif /* RELAY_ENGINE_H */
