/*
 * relay/log_ids.h - the one list of the stable message ids of the log
 * lines (relay_log_fn's @msgid): each id with its one-line meaning, so
 * that an operator or an embedder can look any id up, and alerting can
 * match on ids that do not change. Macros only; nothing to link.
 *
 * Each list is an X-macro: LIST(X) expands X once per row,
 *
 *	X(id, meaning)
 *
 *   id       the message id, a string literal ("RELAY-ENG04")
 *   meaning  what a line with that id says, one line of text
 *
 * RELAY_LIBRARY_LOG_IDS are the ids librelay gives its logger
 * (RELAY-<MODULE>NN); RELAYD_LOG_IDS are relayd's own (RELAYD<NN>,
 * RELAYD-<AREA>NN). A line's level is part of its text, not of its id:
 * some ids are used at more than one level (the meaning says which).
 * The meson test `log-ids` fails when an id used in the sources is not
 * here, when a row here is used nowhere, or when doc/log-ids.md does not
 * list exactly these rows. Ids are never reused for another meaning;
 * rows are added, and removed only with the line they describe.
 *
 * Thread-safety: nothing here has state.
 */
#ifndef RELAY_LOG_IDS_H
#define RELAY_LOG_IDS_H

#ifdef __cplusplus
extern "C" {
#endif

/* The library's ids (the engine, Redis, the runtime). */
#define RELAY_LIBRARY_LOG_IDS(X) \
	X("RELAY-ENG01", "the consumer started: its stream, group and " \
	  "consumer name") \
	X("RELAY-ENG02", "Redis is unavailable: the consumer stops reading, " \
	  "is not ready, and retries with backoff") \
	X("RELAY-ENG03", "Redis is available again: reading resumes") \
	X("RELAY-ENG04", "a handler attempt ended: succeeded (DEBUG), " \
	  "failed with its exit code and reason (WARN) or cancelled by a " \
	  "stop (INFO)") \
	X("RELAY-ENG05", "an invocation used its last attempt: it is " \
	  "written to the DLQ") \
	X("RELAY-ENG06", "a malformed or oversized event is written to the " \
	  "DLQ (with the reason) and acknowledged") \
	X("RELAY-ENG07", "a pending message's stream entry is gone (deleted " \
	  "or trimmed) before it was acknowledged: no further attempts, " \
	  "counted as a missing payload") \
	X("RELAY-ENG08", "an app cannot run here (its interpreter is " \
	  "missing): its message stays pending, no attempt charged") \
	X("RELAY-ENG09", "a Redis step for one message failed: resent, or " \
	  "the message stays pending and is retried after a backoff " \
	  "(stuck); also a consumer group found missing and created again") \
	X("RELAY-ENG10", "the consumer was asked to stop (graceful or at " \
	  "once), and when it has stopped") \
	X("RELAY-ENG11", "an invocation waited the whole slot wait for a " \
	  "concurrency slot and gave up: the message stays pending, no " \
	  "attempt charged") \
	X("RELAY-ENG12", "another consumer took over a message this one was " \
	  "working on (its ownership was lost)") \
	X("RELAY-ENG13", "a malformed schedule occurrence is written to the " \
	  "DLQ and acknowledged") \
	X("RELAY-ENG14", "a schedule occurrence: dispatched (DEBUG), kept " \
	  "pending while its app is invalid, or acknowledged without a run " \
	  "because its schedule is gone") \
	X("RELAY-ENG15", "a stream entry was trimmed after its message was " \
	  "acknowledged (retention): not a missing payload") \
	X("RELAY-ENG16", "the system refused to start a handler (no " \
	  "processes or memory left): the invocation stays pending, no " \
	  "attempt charged; said once per burst") \
	X("RELAY-REDIS01", "a connect to Redis failed (the address and the " \
	  "OS error, never the password); retried with backoff, said once " \
	  "per outage") \
	X("RELAY-REDIS02", "the Redis connection was lost") \
	X("RELAY-REDIS03", "the Redis connection is back") \
	X("RELAY-REDIS04", "the next reconnect is scheduled (DEBUG)") \
	X("RELAY-REDIS05", "a Redis command took longer than the command " \
	  "timeout: the connection is dropped and made again") \
	X("RELAY-REDIS06", "Redis Cluster: a MOVED or ASK redirection " \
	  "followed (DEBUG), or one to a node not known yet, which first " \
	  "asks for the topology") \
	X("RELAY-REDIS07", "Redis Cluster: a slot moved to another node; " \
	  "following it") \
	X("RELAY-REDIS08", "Redis Cluster: the topology (CLUSTER SLOTS) was " \
	  "refused or names unusable nodes") \
	X("RELAY-REDIS09", "Redis Cluster: a MOVED or ASK redirection was " \
	  "not followed (why is said); the command fails") \
	X("RELAY-REDIS10", "Redis Sentinel: a sentinel could not be asked " \
	  "(DEBUG), or none of them answered (retried with backoff)") \
	X("RELAY-REDIS11", "Redis Sentinel: where the master is (said again " \
	  "when it moved)") \
	X("RELAY-REDIS12", "Redis Sentinel: the node the sentinels named is " \
	  "refused (not a master, or not the one named); the sentinels are " \
	  "asked again") \
	X("RELAY-REDIS13", "TLS certificate verification is off " \
	  "(REDIS_TLS_VERIFY=off): the connection can be intercepted") \
	X("RELAY-RT01", "the runtime started: its sandbox backend, resource " \
	  "limits and warm parents") \
	X("RELAY-RT02", "a handler process started, cold or warm, with its " \
	  "pid (DEBUG)") \
	X("RELAY-RT03", "a handler process ended, with its outcome (DEBUG)") \
	X("RELAY-RT05", "a warm start failed: the invocation starts cold, " \
	  "no attempt charged") \
	X("RELAY-RT06", "an app's warm parent is ready (DEBUG)") \
	X("RELAY-RT07", "an app's warm path is unavailable or was replaced " \
	  "(a parent that crashed, hung or cannot start, pre-started " \
	  "processes that keep exiting, node without its fork server): its " \
	  "invocations start cold") \
	X("RELAY-RT08", "a line a warm parent wrote about itself") \
	X("RELAY-RT09", "resource limits cannot be applied as configured " \
	  "(what is missing)") \
	X("RELAY-RT10", "the host uid an app's sandboxes run as, out of " \
	  "RELAY_SANDBOX_UIDS")

/* relayd's ids. */
#define RELAYD_LOG_IDS(X) \
	X("RELAYD01", "relayd is running: version, stream, group, consumer, " \
	  "Redis (without the password), apps directory and sandbox") \
	X("RELAYD02", "a stop signal: the first stops reading and lets " \
	  "running handlers finish, a second stops at once") \
	X("RELAYD03", "relayd stopped (the stats file is written)") \
	X("RELAYD04", "the pid could not be written into " \
	  "RELAY_RUN_DIR/relay.lock (the lock itself holds)") \
	X("RELAYD05", "a test hook is in effect (RELAY_TEST_TIME_SCALE, " \
	  "RELAY_TEST_SCHEDULE_CLOCK), or is ignored in a release build") \
	X("RELAYD-APP01", "a template problem, as app: file:line:col: " \
	  "message") \
	X("RELAYD-APP02", "an app loaded: its rule count and runtime") \
	X("RELAYD-APP03", "an app is invalid: unavailable until its " \
	  "template is fixed") \
	X("RELAYD-APP04", "a changed template is invalid: the previous " \
	  "version keeps serving and the app is stale until the file is " \
	  "fixed") \
	X("RELAYD-APP05", "a reload failed for want of memory: the loaded " \
	  "apps stay") \
	X("RELAYD-APP06", "an app was reloaded") \
	X("RELAYD-APP07", "an app was removed (its directory or template is " \
	  "gone)") \
	X("RELAYD-APP08", "the apps directory could not be read during a " \
	  "reload: the loaded apps stay") \
	X("RELAYD-APP09", "a reload is done: the count of apps, of changed " \
	  "ones and of stale ones") \
	X("RELAYD-APP10", "inotify is unavailable: reload apps with SIGHUP") \
	X("RELAYD-APP11", "the reload thread could not start: reloading on " \
	  "the loop") \
	X("RELAYD-CFG01", "an unknown variable that looks like relayd's is " \
	  "ignored, with the closest known one") \
	X("RELAYD-CTL01", "a control socket request (DEBUG)") \
	X("RELAYD-CTL02", "dlq replay: the handler succeeded but the DLQ " \
	  "entry was not removed (why is said)") \
	X("RELAYD-HTTP01", "the metrics server (libmicrohttpd) reported a " \
	  "problem") \
	X("RELAYD-MET01", "where /metrics, /healthz and /readyz are served, " \
	  "or that metrics are off") \
	X("RELAYD-MET02", "why /readyz answers not ready (Redis's own " \
	  "reply), once each time the answer changes") \
	X("RELAYD-NOTIFY01", "NOTIFY_SOCKET cannot be used: no service " \
	  "manager notifications") \
	X("RELAYD-NOTIFY02", "a notification to the service manager could " \
	  "not be sent (said once)") \
	X("RELAYD-OTLP00", "trace export is on (its batch, delay and queue) " \
	  "or off (and why)") \
	X("RELAYD-OTLP01", "a trace export failed (retried when the failure " \
	  "is transient)") \
	X("RELAYD-OTLP02", "trace export works again") \
	X("RELAYD-OTLP03", "trace export is unavailable: relayd was built " \
	  "without libcurl, or memory ran out") \
	X("RELAYD-OTLP04", "an OTEL_* setting was not understood (what is " \
	  "used instead)") \
	X("RELAYD-OTLP05", "spans not exported at exit (the collector was " \
	  "slow or unreachable)") \
	X("RELAYD-OUT01", "an app's handler output is over its " \
	  "OUTPUT_BUDGET: its lines are dropped") \
	X("RELAYD-OUT02", "an app's handler output is logged again: how " \
	  "many bytes were dropped") \
	X("RELAYD-RET01", "the retention in effect: stream and DLQ " \
	  "retention, and the trim tick") \
	X("RELAYD-RET02", "a retention step failed: retried at the next " \
	  "tick") \
	X("RELAYD-RET03", "retention steps succeed again") \
	X("RELAYD-RET04", "entries trimmed by one retention step (DEBUG)") \
	X("RELAYD-SCHED01", "a schedule occurrence was published, or was " \
	  "found published already") \
	X("RELAYD-SCHED02", "a schedule occurrence could not be published: " \
	  "it waits in the outbox and is retried") \
	X("RELAYD-SCHED03", "the schedule outbox could not be written " \
	  "(retried), or was corrupt and is ignored") \
	X("RELAYD-SCHED04", "the schedule outbox is full: its oldest " \
	  "occurrence is dropped") \
	X("RELAYD-SCHED05", "the schedule outbox read at start-up: " \
	  "occurrences left to publish") \
	X("RELAYD-SCHED07", "the schedule clock jumped forward: only the " \
	  "latest occurrence of each schedule is published") \
	X("RELAYD-SCHED08", "a missed occurrence from before the schedule " \
	  "was first seen is not caught up") \
	X("RELAYD-SBX01", "handlers run as the shared host uid 65534 " \
	  "(nobody): set RELAY_SANDBOX_UIDS or a dedicated user") \
	X("RELAYD-SBX02", "a reload needs more sandbox uids than " \
	  "RELAY_SANDBOX_UIDS has left: refused, the loaded apps keep " \
	  "serving") \
	X("RELAYD-SBX03", "RELAY_SANDBOX_UIDS is ignored (relayd is not " \
	  "root, or RELAY_SANDBOX=none)") \
	X("RELAYD-STATS01", "the stats file could not be written")

/* Every id: the library's, then relayd's. */
#define RELAY_LOG_IDS(X) RELAY_LIBRARY_LOG_IDS(X) RELAYD_LOG_IDS(X)

#ifdef __cplusplus
}
#endif

#endif /* RELAY_LOG_IDS_H */
