/*
 * librelay/runtime/runtime.h - private declarations of the runtime module.
 *
 * Files: runtime.c (options, registry, env/argv building, the relay__
 * wrappers around backend slots), spawn.c (pipes + posix_spawn/vfork),
 * limits.c (cgroups and rlimits), output.c (line splitting), process.c and
 * bwrap.c (the built-in backends), run_libev.c (the per-run state machine)
 * and warm.c, warm_ctl.c, warm_pool.c, warm_stats.c (warm parents and pre-started
 * processes): the files with <ev.h>.
 */
#ifndef RELAY__RUNTIME_H
#define RELAY__RUNTIME_H

#include <stdbool.h>
#include <sys/resource.h>
#include <sys/types.h>

#include "common.h"
#include "relay/runtime.h"
#include "relay/sys/runtime.h"

#define RELAY__RT_PATH "/usr/local/bin:/usr/bin:/bin"
#define RELAY__RT_GRACE_MS 2000u
#define RELAY__RT_MAX_LINE (16u * 1024u)
#define RELAY__RT_MAX_OUTPUT (1024u * 1024u)
/* Inside the bwrap sandbox. */
#define RELAY__SANDBOX_WARM_EXEC "/run/relay-warm-exec"
#define RELAY__SANDBOX_WARM_SLOT "/run/relay-warm-slot.so"
#define RELAY__SANDBOX_APP_DIR "/app"
#define RELAY__SANDBOX_BOOTSTRAP_DIR "/run/relay-bootstrap"

/* ---- string vectors (runtime.c) ---------------------------------- */

typedef struct relay__strv {
	char **v;     /* NULL-terminated */
	size_t n;     /* entries, excluding the NULL */
	size_t cap;   /* slots allocated */
} relay__strv;

int relay__strv_push(relay__strv *sv, const char *s);
int relay__strv_pushf(relay__strv *sv, const char *fmt, ...)
	RELAY__PRINTF(2, 3);
void relay__strv_free(relay__strv *sv);

/* The clean handler environment of @spec (PATH, HOME, LANG, app env,
 * RELAY_HANDLER, RELAY_APP, RELAY_MESSAGE_ID). */
int relay__runtime_env(const relay_exec_spec *spec, relay__strv *out);

/* The command line that runs @spec's handler, with the bootstrap scripts
 * in @bootstrap_dir. */
int relay__runtime_argv(const relay_exec_spec *spec, const char *bootstrap_dir,
			relay__strv *out, relay_error *err);

/* Find @name (no slash) in the colon-separated @path (NULL:
 * RELAY__RT_PATH); new string or NULL. */
char *relay__runtime_which(const char *name, const char *path);

/* The bootstrap directory: @opt, else $RELAY_BOOTSTRAP_DIR, else the
 * installed one. Borrowed. */
const char *relay__runtime_bootstrap_dir(const char *opt);

/* ---- resource limits (limits.c) ---------------------------------- */

typedef struct relay__limits relay__limits;

#define RELAY__CG_MAX 3  /* memory, pids, cpu */

/* Per-invocation limit state: prepared in the parent, applied in the
 * child between fork and exec, released after the child is reaped. */
typedef struct relay__limits_inv {
	int ncg;                         /* cgroup dirs created */
	char *cg_dir[RELAY__CG_MAX];     /* one per controller hierarchy */
	int cg_procs_fd[RELAY__CG_MAX];  /* open cgroup.procs, or -1 */
	char *cg_memory_dir;             /* borrowed alias, for OOM checks */
	int nrl;                         /* rlimits to set */
	int rl_res[2];                   /* RLIMIT_AS, RLIMIT_NPROC */
	struct rlimit rl_val[2];
} relay__limits_inv;

int relay__limits_new(relay__limits **out, relay_limits_mode want,
		      relay_error *err);
void relay__limits_free(relay__limits *l);
relay_limits_mode relay__limits_mode(const relay__limits *l);
/* A short description for the startup log line. */
const char *relay__limits_describe(const relay__limits *l);
/* Why cgroups serve fewer controllers than they could (one line, with
 * the fix), or NULL. */
const char *relay__limits_warning(const relay__limits *l);
/* The describe text of @mode; @have: per controller (memory, pids, cpu)
 * whether a cgroup serves it, NULL when no cgroup is in use. */
void relay__limits_desc_fmt(char *buf, size_t size, relay_limits_mode mode,
			    const bool *have);

void relay__limits_inv_init(relay__limits_inv *inv);
bool relay__limits_inv_needed(const relay__limits_inv *inv);
int relay__limits_prepare(relay__limits *l, const relay_exec_spec *spec,
			  relay__limits_inv *inv, relay_error *err);
/* Async-signal-safe: join the cgroups and set rlimits. 0 or an errno. */
int relay__limits_child(const relay__limits_inv *inv);
/* Move the running process @pid (in this process's pid namespace) into
 * the invocation's cgroups: the warm path, where the process is forked
 * by a warm parent instead of by us. 0 or an errno. */
int relay__limits_attach(const relay__limits_inv *inv, pid_t pid);
/* Close the cgroup.procs descriptors once the child has started. */
void relay__limits_spawned(relay__limits_inv *inv);
/* SIGKILL whatever is left in the cgroups, then remove them. */
void relay__limits_release(relay__limits_inv *inv, int *oom_killed);

/* ---- spawning (spawn.c) ------------------------------------------ */

/*
 * The host credentials a spawned child switches to (setgroups, setgid,
 * setuid) after joining its cgroups and before exec. Chosen once, when a
 * backend is created (relay__builtin_init), so every spawn of that backend
 * gets the same ones.
 */
typedef struct relay__cred {
	bool set;                        /* false: keep the host's own */
	uid_t uid;
	gid_t gid;
} relay__cred;

/* Initialise with { 0 }: zero fields mean "not used". */
typedef struct relay__spawn_req {
	const char *path;                /* executable (resolved) */
	char *const *argv;               /* NULL-terminated */
	char *const *envp;               /* NULL-terminated */
	const char *cwd;                 /* working directory, or NULL */
	const relay__limits_inv *limits; /* applied before exec, or NULL */
	/* Descriptors the child gets from fd 3 on, in this order, those
	 * that are >= 0 (each must be >= 10 in the caller): */
	int keep_fd;                     /* fd 3, or -1 */
	int args_fd;                     /* fd RELAY__SPAWN_ARGS_FDNO(keep_fd)
					    (4 with a keep_fd, else 3) */
	int seccomp_fd;                  /* the next one (with an args_fd:
					    RELAY__SPAWN_ARGS_FDNO + 1) */
	const relay__cred *cred;         /* switched to before exec, or NULL */
	const char *need_dir;            /* with cred: must be readable and
					    searchable by cred->uid, else the
					    spawn fails saying so; or NULL */
} relay__spawn_req;

#define RELAY__SPAWN_REQ_INIT { .keep_fd = -1, .args_fd = -1, \
				 .seccomp_fd = -1 }
#define RELAY__SPAWN_ARGS_FDNO(keep_fd) ((keep_fd) >= 0 ? 4 : 3)

/*
 * Start @req in a new session (so its own process group), stdin/stdout/
 * stderr connected to fresh pipes whose parent ends are stored in @proc
 * (O_NONBLOCK|O_CLOEXEC), all signal dispositions default, empty signal
 * mask, no other descriptors. Uses posix_spawn, or vfork+exec when limits
 * must be applied before exec.
 */
int relay__spawn(const relay__spawn_req *req, relay_proc *proc,
		 relay_error *err);

/* A pipe for a child's stdio: the child's end is >= 3, the parent's end
 * O_NONBLOCK; both close-on-exec. 0 or -1 with errno. */
int relay__make_pipe(int *parent, int *child, bool child_reads);

/*
 * Give the pipes @fds[0..@n) (entries < 0 skipped) to @cred's user and
 * group, so a child running as @cred may reopen them through
 * /proc/self/fd (/dev/stdin, /dev/stdout): a pipe's owner is whoever made
 * it, root under a root host. No-op when @cred is NULL or unset. 0, or
 * -1 with errno. Async-signal-safe (used in the vfork child).
 */
int relay__pipes_give(const int *fds, size_t n, const relay__cred *cred);

/*
 * A new memfd named @name holding @data[0..@len), at offset 0,
 * close-on-exec and numbered >= 10 (so it can be a spawn's keep/args/
 * seccomp descriptor). The descriptor (the caller's), or -1 with errno.
 */
int relay__spawn_memfd(const char *name, const void *data, size_t len);

/* write(2) that never raises SIGPIPE in the host (EPIPE returned). */
ssize_t relay__write_nosigpipe(int fd, const void *buf, size_t len);

/* ---- output lines (output.c) ------------------------------------- */

/*
 * The bootstraps' load-failure line (relay-bootstrap.py, .js): when the
 * handler's module cannot be imported or has no such function, the last
 * line on stderr is this mark and the error's first line, and the exit
 * status is 1. It becomes the run's reason (doc/behaviour.md).
 */
#define RELAY__LOAD_ERROR_MARK "relay-bootstrap: cannot load handler: "
#define RELAY__OUT_TAIL 512

typedef struct relay__out {
	relay__buf line;          /* prefix + pending bytes of one line */
	size_t prefix_len;        /* bytes of the prefix in line */
	size_t max_line;          /* split lines longer than this */
	relay_output_stream stream;
	relay_output_fn fn;       /* may be NULL */
	void *payload;
	uint64_t *budget;         /* shared forwarding budget (bytes) */
	uint64_t total;           /* bytes fed */
	uint64_t dropped;         /* bytes not forwarded (budget) */
	bool announced;           /* truncation note sent */
	/* The last bytes fed, forwarded or not: where a bootstrap's
	 * load-failure line is found (relay__out_load_error()). */
	char tail[RELAY__OUT_TAIL];
	size_t tail_len;
} relay__out;

int relay__out_init(relay__out *o, const relay_exec_spec *spec,
		    relay_output_stream stream, size_t max_line,
		    uint64_t *budget, relay_output_fn fn, void *payload);
void relay__out_feed(relay__out *o, const char *p, size_t n);
/* End of stream: deliver a pending partial line. */
void relay__out_finish(relay__out *o);
/*
 * When the last line of the stream (its final newline aside) is a
 * RELAY__LOAD_ERROR_MARK line, copy the text after the mark into @buf
 * (@size > 0), control bytes shown as '?', cut to fit, and return true.
 */
bool relay__out_load_error(const relay__out *o, char *buf, size_t size);
void relay__out_free(relay__out *o);

/* ---- backends ---------------------------------------------------- */

/* State shared by the two built-in backends (process.c, bwrap.c). */
typedef struct relay__builtin {
	relay_runtime_backend parent;  /* must be first */
	relay__limits *limits;         /* owned */
	char *bootstrap_dir;           /* owned */
	char *bwrap;                   /* bwrap executable (bwrap only) */
	char *warm_exec;               /* bwrap: relay-warm-exec, or NULL */
	char *warm_slot;               /* bwrap: relay-warm-slot.so, or NULL */
	bool cgroupns;                 /* bwrap: --unshare-cgroup works */
	relay__cred cred;              /* bwrap: when the host is root, the
					  unprivileged host uid the sandbox
					  runs as (relay__builtin_cred) */
} relay__builtin;

typedef struct relay__builtin_proc {
	relay_proc parent;             /* must be first */
	relay__limits_inv inv;
} relay__builtin_proc;

int relay__builtin_init(relay__builtin *b, const char *name,
			const relay_runtime_options *opts, relay_error *err);
int relay__builtin_signal(relay_runtime_backend *rb, relay_proc *proc,
			  int sig);
void relay__builtin_release(relay_runtime_backend *rb, relay_proc *proc);
void relay__builtin_free(relay_runtime_backend *rb);
/* When the host process is root, resolve @user (name or number; NULL or
 * "" = "nobody") into b->cred; refuses uid 0. Otherwise leaves it unset. */
int relay__builtin_cred(relay__builtin *b, const char *user,
			relay_error *err);

int relay__runtime_process_new(relay_runtime_backend **out,
			       const relay_runtime_options *opts,
			       relay_error *err);
/* bwrap.c: is @rb the built-in bwrap backend; its command line for @spec
 * running @inner (NULL: the handler), @warm as for a warm parent. */
bool relay__backend_is_bwrap(const relay_runtime_backend *rb);
/* bwrap.c: the relay-warm-exec to bind into exec apps' warm sandboxes,
 * or NULL (they then use the python3 server). */
const char *relay__bwrap_warm_exec(const relay_runtime_backend *rb);
int relay__bwrap_argv(relay_runtime_backend *rb, const relay_exec_spec *spec,
		      const char *const *inner, bool warm, int args_fdno,
		      relay__strv *out, relay_error *err);
/* bwrap.c: the fixed host-side environment every bwrap is started with
 * (PATH only; static storage). The handler's environment goes in as
 * bwrap options instead: relay__bwrap_env_fd() writes "--clearenv" and a
 * "--setenv K V" per entry of @env (NULL-terminated "K=V"), and
 * "--seccomp @seccomp_fdno" unless it is -1, into a new
 * memfd (close-on-exec, >= 10, offset 0) for the spawn's args_fd, with
 * "--args N" in the command line (@args_fdno of relay__bwrap_argv; -1:
 * none). 0 and *@out owned by the caller, or an error code with @err. */
char *const *relay__bwrap_host_env(void);
int relay__bwrap_env_fd(char *const *env, int seccomp_fdno, int *out,
			relay_error *err);
/* bwrap.c: both descriptors of a sandbox's spawn: *@seccomp_fd from
 * relay__sandbox_seccomp_fd() (-1 without a filter) and *@args_fd from
 * relay__bwrap_env_fd() naming it as fd @args_fdno + 1 (@args_fdno is
 * where the args memfd will be: RELAY__SPAWN_ARGS_FDNO). 0 and both the
 * caller's to close, or an error code with @err and neither open. */
int relay__bwrap_fds(char *const *env, int args_fdno, int *args_fd,
		     int *seccomp_fd, relay_error *err);
/* seccomp.c: the sandbox's seccomp filter (no kernel keyring) as a
 * memfd for the spawn's seccomp_fd (>= 10, close-on-exec, offset 0): 0
 * and *@out owned by the caller; 0 and *@out = -1 when this architecture
 * has no filter; or an error code with @err. */
int relay__sandbox_seccomp_fd(int *out, relay_error *err);
/* bwrap.c: start a pre-started ("pooled") process: @spec's sandbox and
 * limits running @inner, without the per-invocation variables. */
int relay__bwrap_spawn_pooled(relay_runtime_backend *rb,
			      const relay_exec_spec *spec,
			      const char *const *inner, relay_proc *proc,
			      relay_error *err);
int relay__runtime_bwrap_new(relay_runtime_backend **out,
			     const relay_runtime_options *opts,
			     relay_error *err);

/* ---- the runtime ------------------------------------------------- */

typedef struct relay__warm relay__warm;

struct relay_runtime {
	relay_runtime_backend *rb;  /* owned */
	relay__warm *warm;          /* warm parents (warm.c), or NULL */
	bool builtin;               /* rb is a relay__builtin */
	uint32_t grace_ms;
	size_t max_line;
	uint64_t max_output;
	relay_logger logger;
	void *loop;                 /* struct ev_loop *, attached */
	relay_run *runs;            /* active runs (run_libev.c) */
	unsigned int nactive;
};

/* C6 wrappers: the only callers of the backend slots. */
int relay__runtime_spawn(relay_runtime *rt, const relay_exec_spec *spec,
			 relay_proc **out, relay_error *err);
int relay__runtime_signal(relay_runtime *rt, relay_proc *proc, int sig);
void relay__runtime_release(relay_runtime *rt, relay_proc *proc);

/* run_libev.c: cancel and reap every active run (from relay_runtime_free). */
void relay__runtime_cancel_all(relay_runtime *rt);

/* ---- warm parents (warm.c) -------------------------------------- */

/* Create rt->warm when @opts ask for it and the backend is bwrap. */
int relay__warm_new(relay_runtime *rt, const relay_runtime_options *opts,
		    relay_error *err);
/* Kill every warm parent (reaped synchronously) and free rt->warm. */
void relay__warm_free(relay_runtime *rt);
/* Kill the warm parents living on @loop (a private loop going away). */
void relay__warm_drop_loop(relay_runtime *rt, void *loop);

/*
 * Start @run warm on @loop. Returns 0 with *proc set, or a
 * relay_warm_fail reason (>= 0) when the run must start cold, or -1 when
 * warm does not apply to @spec (nothing counted).
 *   *pooled false: a warm parent forks it; its pid stays 0 until the
 *   parent reports the fork (relay__run_warm_started()), its status
 *   arrives through relay__run_warm_exited().
 *   *pooled true: a pre-started process, our own child: watch its exit
 *   as a cold one's, and write @prefix (filled here) before the event.
 */
int relay__warm_start(relay_runtime *rt, void *loop, relay_run *run,
		      const relay_exec_spec *spec, relay_proc **proc,
		      bool *pooled, relay__buf *prefix);
/* @run is finishing or being cancelled: forget it. */
void relay__warm_forget(relay_runtime *rt, relay_run *run);
/* Count one start on the cold (0) or warm (1) path with its latency. */
void relay__warm_count(relay_runtime *rt, int warm, uint64_t latency_us);
void relay__warm_count_fail(relay_runtime *rt, int why);

/* run_libev.c, called by warm.c. */
void relay__run_warm_started(relay_run *run, pid_t pid);
void relay__run_warm_exited(relay_run *run, int wstatus);
/* The warm start failed before the handler ran (@why: relay_warm_fail):
 * the run starts again on the cold path, or fails for REQUIRE. */
void relay__run_warm_lost(relay_run *run, int why, const char *detail);

/* A copy of @spec and every string it points at, in one allocation
 * (relay__free); its event is left out. NULL when out of memory. */
relay_exec_spec *relay__spec_dup(const relay_exec_spec *spec);

/* Validate @spec (required fields, timeout range). */
int relay__runtime_check_spec(const relay_exec_spec *spec, relay_error *err);

#endif /* RELAY__RUNTIME_H */
