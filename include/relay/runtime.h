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
#include "log.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct relay_runtime relay_runtime;
typedef struct relay_run relay_run;

/** enum relay_runtime_kind - how a handler is started. */
typedef enum relay_runtime_kind {
	RELAY_RUNTIME_EXEC = 0,    /* run spec->argv */
	RELAY_RUNTIME_PYTHON3 = 1, /* python3 bootstrap imports the handler */
	RELAY_RUNTIME_NODE = 2,    /* node bootstrap requires the handler */
} relay_runtime_kind;

/**
 * relay_runtime_kind_parse() - parse "exec", "python3" or "node".
 * Returns: 0 and *out set, or RELAY_EINVAL.
 */
RELAY_EXTERN int relay_runtime_kind_parse(const char *s,
					  relay_runtime_kind *out);

/** relay_runtime_kind_name() - "exec", "python3" or "node". */
RELAY_EXTERN const char *relay_runtime_kind_name(relay_runtime_kind k);

#define RELAY_RUNTIME_TIMEOUT_DEFAULT_MS 6000u   /* a rule's default */
#define RELAY_RUNTIME_TIMEOUT_MAX_MS 300000u     /* 5 minutes */

/**
 * struct relay_exec_spec - everything needed to run one invocation.
 *
 * Initialise with RELAY_EXEC_SPEC_INIT. Every pointer is borrowed for the
 * duration of relay_runtime_run() only: the runtime copies what it keeps.
 * Resource fields set to 0 mean "no limit".
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
} relay_exec_spec;

#define RELAY_EXEC_SPEC_VERSION 1
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
} relay_run_status;

/**
 * struct relay_run_outcome - the result of one invocation, reported once.
 *
 * @reason is one line for logs and the DLQ: "exit status 3", "killed by
 * signal 9 (SIGKILL)", "timed out after 6000ms", "memory limit exceeded
 * (killed by signal 9 (SIGKILL))", "cancelled"; "" on success.
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
} relay_run_outcome;

#define RELAY_RUN_OUTCOME_VERSION 1

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
	const char *sandbox_user;    /* "bwrap" only, and only when the
					calling process is root: the host
					user (name or number) the sandbox
					runs as; NULL/"" = "nobody". A user
					whose uid or gid is 0 is refused. A
					non-root host runs it as itself. */
	/* version 2 ends here */
} relay_runtime_options;

#define RELAY_RUNTIME_OPTIONS_VERSION 2
#define RELAY_RUNTIME_OPTIONS_INIT \
	{ .version = RELAY_RUNTIME_OPTIONS_VERSION }

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
 * callback ever runs.
 */
RELAY_EXTERN int relay_runtime_run(relay_runtime *rt,
				   const relay_exec_spec *spec,
				   relay_output_fn output, relay_run_done_fn done,
				   void *payload, relay_run **out,
				   relay_error *err);

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
 * @outcome: receives the outcome.
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

#ifdef __cplusplus
}
#endif

#endif /* RELAY_RUNTIME_H */
