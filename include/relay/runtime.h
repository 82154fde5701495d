/*
 * relay/runtime.h - run one-shot handler processes.
 *
 * A relay_runtime runs invocations described by a plain relay_exec_spec
 * (filled by the caller from a loaded app; the runtime knows nothing about
 * templates) through a backend: "bwrap" (bubblewrap sandbox, the default)
 * or "process" (a plain process group, chosen explicitly). Each run is
 * asynchronous on the host's libev loop (see relay_runtime_libev_attach()
 * in relay/relay_libev.h); relay_runtime_run_sync() runs one invocation to
 * completion on a private loop for command-line tools.
 *
 * Output: the handler's stdout and stderr are split into lines and passed,
 * already prefixed "[app/handler@message-id] stdout: ", to the caller's
 * relay_output_fn. The library never prints.
 *
 *	relay_runtime_options o = RELAY_RUNTIME_OPTIONS_INIT;
 *	o.backend = getenv("RELAY_SANDBOX");      // NULL/"bwrap" or "none"
 *	relay_runtime_new(&rt, &o, &err);
 *	relay_runtime_libev_attach(rt, loop);     // relay/relay_libev.h
 *
 *	relay_exec_spec s = RELAY_EXEC_SPEC_INIT;
 *	s.app = "billing"; s.handler = "events.created.handler";
 *	s.message_id = "1700000000000-0"; s.app_dir = "/etc/relay/apps/billing";
 *	s.runtime = RELAY_RUNTIME_PYTHON3; s.timeout_ms = 20000;
 *	s.event = json; s.event_len = len;
 *	relay_runtime_run(rt, &s, on_line, on_done, ctx, NULL, &err);
 *	// on_done(outcome, ctx) runs once, later, from the loop
 */
#ifndef RELAY_RUNTIME_H
#define RELAY_RUNTIME_H

#include <stdint.h>

#include "common.h"
#include "kind.h"
#include "log.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct relay_runtime relay_runtime;
typedef struct relay_run relay_run;

/* enum relay_runtime_kind and its names: relay/kind.h. */

/**
 * enum relay_warm_mode - may an invocation start from a warm parent?
 *
 * See relay_runtime_options.warm and doc/sandbox.md ("Warm sandboxes").
 */
typedef enum relay_warm_mode {
	RELAY_WARM_AUTO = 0,    /* warm when the runtime keeps warm parents
				   and one is ready, else cold */
	RELAY_WARM_OFF = 1,     /* always a cold start (template warm: false) */
	RELAY_WARM_REQUIRE = 2, /* warm only: wait for a warm parent; the run
				   fails if none can start (relayctl app run
				   --warm) */
} relay_warm_mode;

#define RELAY_RUNTIME_TIMEOUT_DEFAULT_MS 6000u   /* a rule's default */
#define RELAY_RUNTIME_TIMEOUT_MAX_MS 300000u     /* 5 minutes */

/**
 * struct relay_exec_spec - everything needed to run one invocation.
 *
 * Initialise with RELAY_EXEC_SPEC_INIT. Every pointer is borrowed for the
 * duration of relay_runtime_run() only: the runtime copies what it keeps.
 * Resource fields set to 0 mean "no limit", but for two defaults
 * (doc/sandbox.md, "Resource limits"): pids 0 is a ceiling of
 * RELAY_APP_DEFAULT_PIDS (128) processes wherever a cgroup serves pids,
 * and tmp_bytes 0 a /tmp of RELAY_APP_DEFAULT_TMP (64 MiB).
 */
typedef struct relay_exec_spec {
	unsigned int version;        /* RELAY_EXEC_SPEC_VERSION */
	const char *app;             /* app name, required */
	const char *handler;         /* handler name, required */
	const char *message_id;      /* stream message id, or NULL */
	const char *app_dir;         /* absolute app directory, required */
	relay_runtime_kind runtime;  /* exec, python3 or node */
	const char *const *argv;     /* exec: NULL-terminated command */
	const char *const *env;      /* app env "KEY=VALUE", NULL-terminated,
					or NULL */
	int network;                 /* nonzero: keep network access */
	uint64_t memory_bytes;       /* resources.memory, 0 = unlimited */
	uint32_t cpus_milli;         /* resources.cpus * 1000, 0 = unlimited */
	uint32_t pids;               /* resources.pids, 0 = unlimited */
	uint32_t timeout_ms;         /* 0 = default 6s; at most 5m */
	const char *event;           /* bytes written to stdin */
	size_t event_len;            /* length of event */
	/* version 1 ends here; later versions append only */
	relay_warm_mode warm;        /* v2: default RELAY_WARM_AUTO */
	uint64_t generation;         /* v2: the app's template generation: a
					new value starts new warm parents and
					retires the app's older ones once
					their invocations finish */
	/* version 2 ends here */
	const char *traceparent;     /* v3: W3C traceparent of this attempt's
					span, or NULL; given to the handler
					as TRACEPARENT (doc/operations.md,
					"Tracing"). Each of the three is
					passed only when valid by
					relay/trace.h's parsers and printable
					ASCII, else left out (the run goes
					on); TRACESTATE and BAGGAGE only with
					a TRACEPARENT (doc/sandbox.md) */
	const char *tracestate;      /* v3: W3C tracestate, or NULL */
	const char *baggage;         /* v3: W3C baggage, or NULL */
	/* version 3 ends here */
	uint64_t tmp_bytes;          /* v4: size of the sandbox's /tmp
					(resources.tmp); 0 (and every older
					spec) = RELAY_APP_DEFAULT_TMP, 64 MiB */
} relay_exec_spec;

#define RELAY_EXEC_SPEC_VERSION 4
#define RELAY_EXEC_SPEC_INIT { .version = RELAY_EXEC_SPEC_VERSION }

/** enum relay_output_stream - which pipe a line came from. */
typedef enum relay_output_stream {
	RELAY_OUTPUT_STDOUT = 1,
	RELAY_OUTPUT_STDERR = 2,
} relay_output_stream;

/**
 * struct relay_output_line - one forwarded output line.
 *
 * @text is "[app/handler@message-id] stdout: " (or "[app/handler] …"
 * without a message id) followed by the handler's bytes verbatim, without
 * the newline, NUL-terminated; the handler's bytes may themselves contain
 * NUL, so use @len. A line longer than the runtime's max_line_bytes is
 * split into pieces with @partial set on all but the last one. A final
 * line without a newline is delivered at end of output.
 */
typedef struct relay_output_line {
	relay_output_stream stream; /* stdout or stderr */
	const char *text;           /* prefix + line, borrowed for the call */
	size_t len;                 /* bytes in text, excluding the NUL */
	size_t prefix_len;          /* bytes of the prefix in text */
	int partial;                /* the line continues in the next call */
} relay_output_line;

/**
 * relay_output_fn - receives forwarded output lines.
 * @line: borrowed for the duration of the call.
 * @payload: the caller's payload.
 */
typedef void (*relay_output_fn)(const relay_output_line *line,
				void *payload);

/** enum relay_run_status - how an invocation ended. */
typedef enum relay_run_status {
	RELAY_RUN_OK = 0,        /* exit status 0 */
	RELAY_RUN_FAILED = 1,    /* nonzero exit or killed by a signal */
	RELAY_RUN_TIMEOUT = 2,   /* killed after its timeout */
	RELAY_RUN_CANCELLED = 3, /* cancelled, or the runtime was freed */
	RELAY_RUN_REFUSED = 4,   /* never started: the system refused the
				    sandbox a process or memory (EAGAIN,
				    ENOMEM); no handler code ran, a later
				    try may work. The engine charges no
				    attempt for it (doc/sandbox.md) */
} relay_run_status;

/**
 * struct relay_run_outcome - the result of one invocation, reported once.
 *
 * @reason is one line for logs and the DLQ: "exit status 3", "killed by
 * signal 9 (SIGKILL)", "timed out after 6000ms", "memory limit exceeded
 * (killed by signal 9 (SIGKILL))", "cancelled"; "" on success. When a
 * python3 or node handler could not be loaded, the exit status 1 is
 * replaced by the first line of the error the bootstrap reported, e.g.
 * "ModuleNotFoundError: No module named 'x'" (control bytes shown as
 * '?'; the bootstrap's last stderr line "relay-bootstrap: cannot load
 * handler: TEXT", doc/behaviour.md B-83).
 *
 * Under bwrap the direct child is bwrap, which reports a handler killed by
 * signal N as exit status 128+N; the OOM detection (cgroups) still says
 * "memory limit exceeded (exit status 137)".
 */
typedef struct relay_run_outcome {
	unsigned int version;     /* RELAY_RUN_OUTCOME_VERSION */
	relay_run_status status;  /* summary */
	int exit_code;            /* exit status, or -1 if signalled */
	int term_signal;          /* terminating signal, or 0 */
	int timed_out;            /* nonzero when the timeout fired */
	uint64_t duration_us;     /* spawn to exit (monotonic) */
	uint64_t stdout_bytes;    /* bytes read from stdout */
	uint64_t stderr_bytes;    /* bytes read from stderr */
	uint64_t dropped_bytes;   /* read but not forwarded (cap reached,
				     or no output callback) */
	char reason[160];         /* see above */
	/* version 1 ends here; later versions append only */
	int warm;                 /* v2: nonzero when a warm parent ran it */
	uint64_t start_us;        /* v2: run handed to the runtime → the
				     invocation's process exists (cold: the
				     spawn returned; warm: the warm parent
				     reported the fork) */
} relay_run_outcome;

#define RELAY_RUN_OUTCOME_VERSION 2

/**
 * relay_run_done_fn - called exactly once when a run is over.
 * @outcome: borrowed for the call.
 * @payload: the caller's payload.
 *
 * The relay_run handle is invalid once this returns.
 */
typedef void (*relay_run_done_fn)(const relay_run_outcome *outcome,
				  void *payload);

/** enum relay_limits_mode - how resources are enforced. */
typedef enum relay_limits_mode {
	RELAY_LIMITS_AUTO = 0,     /* cgroups if writable, else rlimits */
	RELAY_LIMITS_CGROUP_V2 = 1,
	RELAY_LIMITS_CGROUP_V1 = 2,
	RELAY_LIMITS_RLIMIT = 3,
	RELAY_LIMITS_NONE = 4,     /* never enforce (tests, benchmarks) */
} relay_limits_mode;

/**
 * struct relay_runtime_options - options of relay_runtime_new().
 *
 * Initialise with RELAY_RUNTIME_OPTIONS_INIT; zero fields take defaults.
 */
typedef struct relay_runtime_options {
	unsigned int version;        /* RELAY_RUNTIME_OPTIONS_VERSION */
	const char *backend;         /* "bwrap" (default) or "process";
					"none" = "process", so a
					RELAY_SANDBOX value works as is */
	const char *bootstrap_dir;   /* python3/node bootstraps; default
					$RELAY_BOOTSTRAP_DIR, else the
					installed libexec/relay */
	relay_limits_mode limits;    /* default RELAY_LIMITS_AUTO */
	uint32_t kill_grace_ms;      /* SIGTERM→SIGKILL grace; default 2000 */
	size_t max_line_bytes;       /* default 16 KiB */
	uint64_t max_output_bytes;   /* forwarded per run; default 1 MiB;
					UINT64_MAX = unlimited */
	relay_logger logger;         /* runtime's own messages (not output) */
	/* version 1 ends here; later versions append only */
	const char *sandbox_user;    /* v2: "bwrap" only, and only when the
					calling process is root: the host
					user (name or number) the sandbox
					runs as; NULL/"" = "nobody". A user
					whose uid or gid is 0 is refused. A
					non-root host runs it as itself. */
	int warm;                    /* v2: nonzero keeps warm parents (bwrap
					backend only; ignored otherwise) */
	uint32_t warm_max_parents;   /* v2: global cap; default 32 */
	uint32_t warm_idle_ms;       /* v2: evict a parent idle this long;
					default 300000 (5 minutes) */
	uint32_t warm_start_timeout_ms; /* v2: a warm parent that does not
					answer a request within this is
					wedged; default 2000 */
	/* version 2 ends here */
	const char *sandbox_uids;    /* v3: "bwrap" only, and only when the
					calling process is root: "LO-HI",
					host uids of which each app gets its
					own (uid and gid), instead of
					sandbox_user's; see
					relay_runtime_uid_range_parse() and
					relay_runtime_sandbox_assign().
					NULL/"" = off. A range holding a uid
					or gid of this host's users or groups
					is refused. */
} relay_runtime_options;

#define RELAY_RUNTIME_OPTIONS_VERSION 3
#define RELAY_RUNTIME_OPTIONS_INIT \
	{ .version = RELAY_RUNTIME_OPTIONS_VERSION }

/**
 * relay_runtime_uid_range_parse() - check a sandbox uid range.
 * @s: "LO-HI", two decimal uids (relay_runtime_options.sandbox_uids).
 * @lo, @hi: receive the bounds (inclusive), or NULL.
 * @err: optional error detail; its text says what is wrong, e.g.
 *   "expected LO-HI, two uids such as 100000-165535", "LO must be at
 *   least 1 (uid 0 is root)", "LO must not be above HI", "HI must be at
 *   most 2147483647 (bubblewrap maps no larger uid)", "the range must
 *   not hold 65534 (nobody, shared with other software)".
 *
 * Pure: does not look at the host's users (relay_runtime_new() does).
 * Returns: 0, or RELAY_EINVAL.
 * Thread-safety: any thread.
 */
RELAY_EXTERN int relay_runtime_uid_range_parse(const char *s, uint32_t *lo,
					       uint32_t *hi, relay_error *err);

/**
 * relay_runtime_new() - create a runtime.
 * @out: receives the new runtime.
 * @opts: options, or NULL for defaults.
 * @err: optional error detail.
 *
 * Probes the backend (bwrap must be able to create its namespaces) and the
 * resource-limit mechanism, and logs one INFO line (RELAY-RT01) saying
 * which were chosen.
 *
 * Returns: 0, RELAY_ENOTFOUND (unknown backend), RELAY_EBACKEND (the
 * backend cannot run here), RELAY_EINVAL or RELAY_ENOMEM.
 * Ownership: *out is new; free with relay_runtime_free(). @opts is
 * borrowed (strings are copied).
 * Thread-safety: a runtime is used from one thread (its loop's).
 */
RELAY_EXTERN int relay_runtime_new(relay_runtime **out,
				   const relay_runtime_options *opts,
				   relay_error *err);

/**
 * relay_runtime_free() - free a runtime.
 * @rt: the runtime, or NULL (no-op).
 *
 * Active runs are killed with SIGKILL, reaped, and their done callbacks
 * run with RELAY_RUN_CANCELLED before this returns (a run whose process
 * had already exited reports its real outcome). Call it before the loop
 * the runtime is attached to is destroyed.
 */
RELAY_EXTERN void relay_runtime_free(relay_runtime *rt);

/** relay_runtime_backend_name() - "bwrap" or "process" (borrowed). */
RELAY_EXTERN const char *relay_runtime_backend_name(const relay_runtime *rt);

/**
 * relay_runtime_limits_mode() - the resource-limit mechanism in use
 * (never RELAY_LIMITS_AUTO).
 */
RELAY_EXTERN relay_limits_mode relay_runtime_limits_mode(
	const relay_runtime *rt);

/** relay_limits_mode_name() - "cgroup-v2", "cgroup-v1", "rlimit", … */
RELAY_EXTERN const char *relay_limits_mode_name(relay_limits_mode m);

/**
 * relay_runtime_run() - start one invocation on the attached loop.
 * @rt: a runtime attached with relay_runtime_libev_attach().
 * @spec: what to run (borrowed for the call).
 * @output: line callback, or NULL to discard output.
 * @done: completion callback, required.
 * @payload: passed to both callbacks.
 * @out: optional; receives a handle for relay_run_cancel(), valid until
 *   @done returns.
 * @err: optional error detail.
 *
 * Returns: 0 and @done will run exactly once, later, from the loop; or a
 * negative code (RELAY_EINVAL bad spec or not attached, RELAY_EBACKEND
 * the process could not be started, e.g. command not found) and no
 * callback ever runs. When the kernel refused the process for lack of
 * processes or memory (EAGAIN, ENOMEM), the return is RELAY_EBACKEND and
 * @err->code RELAY_EAGAIN: nothing ran, a later try may work (a refusal
 * that comes after the start, from inside the sandbox's set-up, ends
 * the run with RELAY_RUN_REFUSED instead). When the process could not be
 * started because the
 * sandbox user (relay_runtime_options.sandbox_user) cannot read and
 * search the app directory, the return is RELAY_EBACKEND and @err->code
 * RELAY_EACCESS; @err->text then reads "app directory DIR is not readable
 * by the sandbox user (uid N): OS error" and always fits (a long DIR is
 * shortened in its middle with "..."), so the caller can add how to fix
 * it in its own terms.
 */
RELAY_EXTERN int relay_runtime_run(relay_runtime *rt,
				   const relay_exec_spec *spec,
				   relay_output_fn output, relay_run_done_fn done,
				   void *payload, relay_run **out,
				   relay_error *err);

/**
 * relay_runtime_sandbox_assign() - give apps their host uids.
 * @rt: the runtime.
 * @apps: app names (borrowed for the call); duplicates are fine.
 * @n: how many.
 * @err: optional error detail.
 *
 * With a uid range (relay_runtime_options.sandbox_uids) in use, gives
 * each app of @apps that has none yet its own uid (and the gid of the
 * same number), in name order: the range's LO plus the FNV-1a hash of
 * the name modulo the range's size, or the next free uid after it
 * (wrapping). An app keeps its uid, and a uid is never given to another
 * app, for the runtime's life: a later call (a reload) adds only the new
 * names. An app run without an assignment gets one at its first spawn.
 * Logs one INFO line (RELAY-RT10) per new assignment. Without a range
 * (or not root, or another backend) a no-op.
 *
 * Returns: 0; RELAY_EINVAL when the range's free uids are fewer than the
 * new apps (nothing is assigned; @err says how many of each); or
 * RELAY_ENOMEM.
 */
RELAY_EXTERN int relay_runtime_sandbox_assign(relay_runtime *rt,
					      const char *const *apps,
					      size_t n, relay_error *err);

/**
 * relay_runtime_sandbox_uid() - the host uid @app's sandboxes run as.
 * @rt: the runtime.
 * @app: the app name.
 * @out: receives the uid.
 *
 * Returns: 0 and *@out (the app's own uid with a range, else the sandbox
 * user's); RELAY_ENOTFOUND with a range when @app has no uid yet, and
 * when the sandbox keeps the caller's own uid (not root, or a backend
 * without a sandbox user).
 */
RELAY_EXTERN int relay_runtime_sandbox_uid(const relay_runtime *rt,
					   const char *app, uint32_t *out);

/**
 * relay_run_cancel() - kill a running invocation (SIGKILL to its group).
 * @run: a handle from relay_runtime_run() whose done has not run yet.
 *
 * done still runs once, from the loop, with RELAY_RUN_CANCELLED.
 */
RELAY_EXTERN void relay_run_cancel(relay_run *run);

/**
 * relay_runtime_run_sync() - run one invocation to completion.
 * @rt: a runtime (attached or not; a private loop is used).
 * @spec, @output, @payload: as for relay_runtime_run().
 * @outcome: receives the outcome; set its .version first
 *   (RELAY_RUN_OUTCOME_VERSION): fields of later versions are written only
 *   when it is >= their version (0 counts as 1).
 * @err: optional error detail.
 *
 * Returns: 0 and *outcome filled, or a negative code as for
 * relay_runtime_run().
 */
RELAY_EXTERN int relay_runtime_run_sync(relay_runtime *rt,
					const relay_exec_spec *spec,
					relay_output_fn output, void *payload,
					relay_run_outcome *outcome,
					relay_error *err);

/**
 * relay_runtime_active() - number of runs whose done has not run yet.
 */
RELAY_EXTERN unsigned int relay_runtime_active(const relay_runtime *rt);

/* ---- warm parents ------------------------------------------------ */

/** Upper bounds (µs) of the start-latency histogram buckets; the last
 * bucket counts everything above the last bound. */
#define RELAY_WARM_LATENCY_BOUNDS_US \
	{ 250, 500, 1000, 2000, 3000, 5000, 10000, 25000, 50000, 100000 }
#define RELAY_WARM_LATENCY_BUCKETS 11

/** enum relay_warm_fail - why an invocation did not start warm. */
typedef enum relay_warm_fail {
	RELAY_WARM_FAIL_UNSUPPORTED = 0, /* the sandbox cannot fork
					    invocations (probe failed) */
	RELAY_WARM_FAIL_CRASHED = 1,     /* the warm parent died */
	RELAY_WARM_FAIL_WEDGED = 2,      /* no answer within the bound */
	RELAY_WARM_FAIL_SPAWN = 3,       /* starting a warm parent failed */
	RELAY_WARM_FAIL_FORK = 4,        /* the parent could not fork */
	RELAY_WARM_FAIL_CAP = 5,         /* the global cap was reached */
	RELAY_WARM_FAIL_COUNT = 6,
} relay_warm_fail;

/** relay_warm_fail_name() - "unsupported", "crashed", … (static). */
RELAY_EXTERN const char *relay_warm_fail_name(relay_warm_fail f);

/**
 * struct relay_runtime_warm_stats - counters of the warm path.
 *
 * Initialise .version to RELAY_RUNTIME_WARM_STATS_VERSION.
 * @latency_us[0] is for cold starts, [1] for warm ones, each with
 * RELAY_WARM_LATENCY_BUCKETS non-cumulative buckets; the latency is the
 * outcome's start_us.
 */
typedef struct relay_runtime_warm_stats {
	unsigned int version;
	uint64_t warm_starts;         /* invocations started warm */
	uint64_t cold_starts;         /* invocations started cold */
	uint64_t failures[RELAY_WARM_FAIL_COUNT]; /* warm starts that fell
						     back to cold, by reason */
	uint64_t parents_started;     /* warm parents ever started */
	uint32_t parents_starting;    /* now: spawned, not ready yet */
	uint32_t parents_ready;       /* now: serving */
	uint32_t parents_retiring;    /* now: retired, invocations finishing */
	uint64_t parents_rss_bytes;   /* now: resident memory of all parents */
	uint64_t latency_us[2][RELAY_WARM_LATENCY_BUCKETS];
	uint64_t latency_sum_us[2];
	/* version 1 ends here; later versions append only */
} relay_runtime_warm_stats;

#define RELAY_RUNTIME_WARM_STATS_VERSION 1

/**
 * relay_runtime_warm_stats_get() - read the warm-path counters.
 * @rt: the runtime.
 * @out: filled; its version field is kept (must be 1..current).
 *
 * Reads /proc for the parents' resident memory.
 * Returns: 0, or RELAY_EINVAL for an unsupported version.
 */
RELAY_EXTERN int relay_runtime_warm_stats_get(const relay_runtime *rt,
					      relay_runtime_warm_stats *out);

/**
 * relay_warm_parent_fn - one warm parent, for relay_runtime_warm_foreach().
 * @app: its app (borrowed for the call).
 * @state: "starting", "ready" or "retiring".
 * @inflight: invocations it is running now.
 * @rss_bytes: its resident memory (0 if unknown).
 */
typedef void (*relay_warm_parent_fn)(const char *app, const char *state,
				     unsigned int inflight,
				     uint64_t rss_bytes, void *payload);

/** relay_runtime_warm_foreach() - call @fn for every warm parent. */
RELAY_EXTERN void relay_runtime_warm_foreach(const relay_runtime *rt,
					     relay_warm_parent_fn fn,
					     void *payload);

/**
 * relay_runtime_warm_retire() - retire the warm parents of @app (NULL:
 * all). Running invocations finish; new ones start new parents.
 */
RELAY_EXTERN void relay_runtime_warm_retire(relay_runtime *rt,
					    const char *app);

#ifdef __cplusplus
}
#endif

#endif /* RELAY_RUNTIME_H */
