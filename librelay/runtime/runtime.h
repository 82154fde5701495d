/*
 * librelay/runtime/runtime.h - private declarations of the runtime module.
 *
 * The runtime is built in three layers, each calling only what is below
 * it (doc/architecture.md, "The runtime's stairs"):
 *
 *   warm/ (warm.h)      warm parents, pre-started processes: a starter
 *   run   (run.h)       one invocation's life on a loop; starter interface
 *   core  (this file)   runtime.c (options, registry, env/argv building,
 *                       the relay__ wrappers around backend slots),
 *                       spawn.c (pipes + posix_spawn/vfork), limits.c
 *                       (cgroups and rlimits), output.c (line splitting),
 *                       process.c and bwrap.c (the built-in backends),
 *                       seccomp.c
 *
 * runtime_life.c, above all three, creates and frees a runtime. Only the
 * run and warm layers include <ev.h>.
 */
#ifndef RELAY__RUNTIME_H
#define RELAY__RUNTIME_H

#include <stdbool.h>
#include <sys/resource.h>
#include <sys/types.h>

#include "common.h"
#include "kind.h"
#include "relay/runtime.h"
#include "relay/sys/runtime.h"

#define RELAY__RT_PATH "/usr/local/bin:/usr/bin:/bin"
#define RELAY__RT_GRACE_MS 2000u
#define RELAY__RT_MAX_LINE (16u * 1024u)
#define RELAY__RT_MAX_OUTPUT (1024u * 1024u)
/* The defaults of an unset resources.pids / resources.tmp (the values of
 * relay/app.h's RELAY_APP_DEFAULT_PIDS, RELAY_APP_DEFAULT_TMP; the
 * runtime does not include the app module). */
#define RELAY__RT_DEFAULT_PIDS 128u
#define RELAY__RT_DEFAULT_TMP (64ull * 1024 * 1024)
/* The sandbox's /dev/shm. */
#define RELAY__RT_SHM_BYTES (1024ull * 1024)
/* Every handler's (and sandbox's) /proc/self/oom_score_adj: the kernel's
 * OOM killer takes them before relayd (doc/sandbox.md). */
#define RELAY__RT_OOM_SCORE_ADJ "1000"
/* Inside the bwrap sandbox. */
#define RELAY__SANDBOX_WARM_EXEC "/run/relay-warm-exec"
#define RELAY__SANDBOX_WARM_SLOT "/run/relay-warm-slot.so"
#define RELAY__SANDBOX_APP_DIR "/app"
#define RELAY__SANDBOX_BOOTSTRAP_DIR "/run/relay-bootstrap"

/* The clean handler environment of @spec (PATH, HOME, LANG, app env,
 * RELAY_HANDLER, RELAY_APP, RELAY_MESSAGE_ID, and TRACEPARENT,
 * TRACESTATE, BAGGAGE from a version-3 spec when valid; the app env
 * never sets those three). */
int relay__runtime_env(const relay_exec_spec *spec, relay__strv *out);

/* Is "KEY=VALUE" @kv TRACEPARENT, TRACESTATE or BAGGAGE? */
bool relay__runtime_trace_var(const char *kv);

/* Is @kv one of the variables that differ per invocation (RELAY_HANDLER,
 * RELAY_MESSAGE_ID and the three trace variables)? A warm parent's
 * environment and key leave them out; each request carries them. */
bool relay__runtime_per_invocation_var(const char *kv);

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

/* The pids ceiling of an invocation whose spec sets none:
 * RELAY__RT_DEFAULT_PIDS where a cgroup serves pids, else 0 (none). */
uint32_t relay__limits_default_pids(const relay__limits *l);
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
 * setuid) after joining its cgroups and before exec. Chosen when a
 * backend is created (relay__builtin_cred), or per app out of a uid range
 * (relay__builtin_app_cred); an app's never change for the backend's
 * life.
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
	int info_fd;                     /* the next one: bwrap's --info-fd */
	bool oom_adj;                    /* oom_score_adj to
					    RELAY__RT_OOM_SCORE_ADJ before
					    exec */
	const relay__cred *cred;         /* switched to before exec, or NULL */
	const char *need_dir;            /* with cred: must be readable and
					    searchable by cred->uid, else the
					    spawn fails saying so; or NULL */
} relay__spawn_req;

#define RELAY__SPAWN_REQ_INIT { .keep_fd = -1, .args_fd = -1, \
				 .seccomp_fd = -1, .info_fd = -1 }
#define RELAY__SPAWN_ARGS_FDNO(keep_fd) ((keep_fd) >= 0 ? 4 : 3)

/*
 * Start @req in a new session (so its own process group), stdin/stdout/
 * stderr connected to fresh pipes whose parent ends are stored in @proc
 * (O_NONBLOCK|O_CLOEXEC), all signal dispositions default, empty signal
 * mask, no other descriptors. Uses posix_spawn, or vfork+exec when limits,
 * credentials or oom_adj must be applied before exec. RELAY_EBACKEND with
 * @err->code RELAY_EAGAIN when the kernel refused the process (EAGAIN,
 * ENOMEM): nothing ran, a later try may work.
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

/* ---- a host uid per app (uids.c) --------------------------------- */

/* One app's host credentials, for the life of the backend. */
typedef struct relay__uid_ent {
	char *app;                     /* owned */
	relay__cred cred;
} relay__uid_ent;

/*
 * The apps' host uids out of a range (relay_runtime_options.sandbox_uids).
 * An app keeps its uid for the map's life and a uid, once given, is never
 * given to another app (its processes may still be running). Initialise
 * with { 0 }: lo == 0 means off.
 */
typedef struct relay__uidmap {
	uid_t lo, hi;                  /* the range, inclusive */
	relay__uid_ent *v;             /* sorted by app name */
	size_t n, cap;
} relay__uidmap;

/* Parse @range into @m (off for NULL or "") and refuse a range holding a
 * uid or gid of this host's users or groups (getpwent, getgrent). 0, or
 * RELAY_EINVAL with @err. */
int relay__uids_init(relay__uidmap *m, const char *range, relay_error *err);
void relay__uids_free(relay__uidmap *m);
/* The entry of @app, or NULL. */
const relay__uid_ent *relay__uids_find(const relay__uidmap *m,
				       const char *app);
typedef void (*relay__uids_note_fn)(const relay__uid_ent *e, void *payload);
/*
 * Give each of @apps[0..@n) without a uid yet its own, in name order:
 * FNV-1a of the name modulo the range's size, then the next free uid
 * (wrapping); @note (or NULL) hears of each. RELAY_EINVAL with @err, and
 * nothing assigned, when the free uids are fewer than the new apps;
 * RELAY_ENOMEM (those assigned before it keep theirs). No-op when @m is
 * off.
 */
int relay__uids_assign(relay__uidmap *m, const char *const *apps, size_t n,
		       relay__uids_note_fn note, void *payload,
		       relay_error *err);

/* State shared by the two built-in backends (process.c, bwrap.c). */
typedef struct relay__builtin {
	relay_runtime_backend parent;  /* must be first */
	relay__limits *limits;         /* owned */
	char *bootstrap_dir;           /* owned */
	char *bwrap;                   /* bwrap executable (bwrap only) */
	char *warm_exec;               /* bwrap: relay-warm-exec, or NULL */
	char *warm_slot;               /* bwrap: relay-warm-slot.so, or NULL */
	bool cgroupns;                 /* bwrap: --unshare-cgroup works */
	bool no_disable_userns;        /* bwrap: older than 0.8, without
					  --disable-userns (the seccomp
					  profile alone refuses userns) */
	relay__cred cred;              /* bwrap: when the host is root, the
					  unprivileged host uid the sandbox
					  runs as (relay__builtin_cred) */
	relay__uidmap uids;            /* bwrap, root: a uid per app instead
					  of cred (relay__builtin_app_cred) */
} relay__builtin;

typedef struct relay__builtin_proc {
	relay_proc parent;             /* must be first */
	relay__limits_inv inv;
	/* bwrap, cold: our end of its --info-fd pipe, read on release. A
	 * proc of zeroed bytes (the warm path's) watches nothing. */
	bool info_watch;
	int info_fd;
	bool no_sandbox;               /* bwrap exited before making its
					  namespaces */
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
/* The host credentials @app's sandboxes run as: its own uid when b->uids
 * is on (given now if it has none yet), else b->cred (set or not). NULL
 * with @err when the range has no free uid left (RELAY_EINVAL) or out of
 * memory. Borrowed: valid for the backend's life. */
const relay__cred *relay__builtin_app_cred(relay__builtin *b,
					   const char *app, relay_error *err);

int relay__runtime_process_new(relay_runtime_backend **out,
			       const relay_runtime_options *opts,
			       relay_error *err);
/* bwrap.c: the fixed host-side environment every bwrap is started with
 * (PATH only; static storage). The handler's environment goes in as
 * bwrap options instead: relay__bwrap_env_fd() writes "--clearenv" and a
 * "--setenv K V" per entry of @env (NULL-terminated "K=V"), and
 * "--seccomp @seccomp_fdno" unless it is -1, into a new
 * memfd (close-on-exec, >= 10, offset 0) for the spawn's args_fd, with
 * "--args N" in the command line (@args_fdno of build_argv(); -1:
 * none). 0 and *@out owned by the caller, or an error code with @err. */
char *const *relay__bwrap_host_env(void);
int relay__bwrap_env_fd(char *const *env, int seccomp_fdno, int *out,
			relay_error *err);
/* bwrap.c: both descriptors of a sandbox's spawn: *@seccomp_fd from
 * relay__sandbox_seccomp_fd(@warm_parent) (-1 without a filter) and
 * *@args_fd from relay__bwrap_env_fd() naming it as fd @args_fdno + 1
 * (@args_fdno is where the args memfd will be: RELAY__SPAWN_ARGS_FDNO).
 * 0 and both the caller's to close, or an error code with @err and
 * neither open. */
int relay__bwrap_fds(char *const *env, int args_fdno, bool warm_parent,
		     int *args_fd, int *seccomp_fd, relay_error *err);
/* seccomp.c: the sandbox's seccomp filter (sandbox/seccomp_profile.h:
 * both groups of the profile; with @warm_parent, for a warm parent that
 * sets up its invocations itself, the base group only) as a memfd for
 * the spawn's seccomp_fd (>= 10, close-on-exec, offset 0): 0 and *@out
 * owned by the caller; 0 and *@out = -1 when this architecture has no
 * filter; or an error code with @err. */
int relay__sandbox_seccomp_fd(int *out, bool warm_parent, relay_error *err);
/* bwrap.c: was @proc (a released proc of a built-in backend, reaped with
 * @wstatus, whose stderr ended with @tail[0..@len)) a sandbox that the
 * kernel refused to create for lack of processes or memory? True only
 * when bwrap exited 1 without making its namespaces (its --info-fd
 * stayed empty, so no handler code ran) and its last stderr line ends in
 * strerror(EAGAIN) or strerror(ENOMEM). */
bool relay__bwrap_start_refused(const relay_proc *proc, int wstatus,
				const char *tail, size_t len);
int relay__runtime_bwrap_new(relay_runtime_backend **out,
			     const relay_runtime_options *opts,
			     relay_error *err);

/* ---- a backend's warm capability (its version 2 slot) ------------ */

#define RELAY__WARM_IFACE_VERSION 1

/*
 * What the warm layer needs of a sandboxing backend, offered through the
 * backend's `warm` slot (relay/sys/runtime.h), never recognised by
 * identity: bwrap.c fills one; the process backend offers none.
 */
struct relay_runtime_warm_iface {
	unsigned int version;          /* RELAY__WARM_IFACE_VERSION */
	/* relay-warm-exec on the host (exec apps' warm parent), or NULL:
	 * they then use the python3 server. */
	const char *exec_server;
	/* The host user @app's sandboxes run as (never root), unset when
	 * the host is not root; NULL with @err when it has none (see
	 * relay__builtin_app_cred). */
	const relay__cred *(*app_cred)(relay_runtime_backend *rb,
				       const char *app, relay_error *err);
	/* The per-invocation limits, prepared for each warm invocation. */
	relay__limits *limits;
	/* The limit state inside a proc of this backend (rb->proc_size
	 * zeroed bytes): released by the backend's release slot. */
	relay__limits_inv *(*proc_limits)(relay_proc *proc);
	/*
	 * Start a warm parent: @spec's sandbox as for a warm parent (with
	 * CAP_SYS_ADMIN in its user namespace) running @inner, with the
	 * handler environment @env (NULL-terminated "K=V", without the
	 * per-invocation variables) and @keep_fd as its fd 3; no limits.
	 * 0 with @proc's pid and three pipe ends set, or an error code with
	 * @err and nothing left running or open.
	 */
	int (*spawn_parent)(relay_runtime_backend *rb,
			    const relay_exec_spec *spec,
			    const char *const *inner, char *const *env,
			    int keep_fd, relay_proc *proc, relay_error *err);
	/*
	 * Start a pre-started ("pooled") process: @spec's sandbox and
	 * limits running @inner, without the per-invocation variables.
	 * @proc: rb->proc_size zeroed bytes. As the spawn slot returns.
	 */
	int (*spawn_pooled)(relay_runtime_backend *rb,
			    const relay_exec_spec *spec,
			    const char *const *inner, relay_proc *proc,
			    relay_error *err);
};
typedef struct relay_runtime_warm_iface relay_runtime_warm_iface;

/* ---- the runtime ------------------------------------------------- */

/* Both are defined above the core: relay__starter by the per-run layer
 * (run.h), relay__warm by the warm layer (warm/warm.h). The core only
 * holds the pointers. */
typedef struct relay__starter relay__starter;
typedef struct relay__warm relay__warm;

struct relay_runtime {
	relay_runtime_backend *rb;  /* owned */
	relay__starter *starter;    /* the warm path as the run sees it
				       (run.h), or NULL: cold only */
	relay__warm *warm;          /* the same, as the warm layer sees it */
	/* Start counters by path, fallbacks by reason (counted by the run
	 * while a starter is installed), parents and pre-started processes
	 * (by the warm layer). */
	relay_runtime_warm_stats warm_st;
	bool builtin;               /* rb is a relay__builtin */
	uint32_t grace_ms;
	size_t max_line;
	uint64_t max_output;
	relay_logger logger;
	void *loop;                 /* struct ev_loop *, attached */
	relay_run *runs;            /* active runs (run_libev.c) */
	unsigned int nactive;
};

/* The runtime over @rb (stolen: freed on failure too), without warm
 * parents; relay_runtime_new() (runtime_life.c) adds them. */
int relay__runtime_create(relay_runtime **out, relay_runtime_backend *rb,
			  bool builtin, const relay_runtime_options *opts,
			  relay_error *err);
/* Free the backend and @rt (its runs and starter already gone). */
void relay__runtime_destroy(relay_runtime *rt);

/* C6 wrappers: the only callers of the backend slots. */
int relay__runtime_spawn(relay_runtime *rt, const relay_exec_spec *spec,
			 relay_proc **out, relay_error *err);
int relay__runtime_signal(relay_runtime *rt, relay_proc *proc, int sig);
void relay__runtime_release(relay_runtime *rt, relay_proc *proc);
/* The backend's warm interface (version RELAY__WARM_IFACE_VERSION), or
 * NULL when it offers none. Borrowed. */
const relay_runtime_warm_iface *relay__runtime_warm_iface(relay_runtime *rt);

/* A copy of @spec and every string it points at, in one allocation
 * (relay__free); its event is left out. NULL when out of memory. */
relay_exec_spec *relay__spec_dup(const relay_exec_spec *spec);

/* The size of @spec's /tmp in bytes: its tmp_bytes (version 4), else
 * RELAY__RT_DEFAULT_TMP. */
static inline uint64_t relay__spec_tmp_bytes(const relay_exec_spec *spec)
{
	uint64_t b = spec->version >= 4 ? spec->tmp_bytes : 0;

	return b ? b : RELAY__RT_DEFAULT_TMP;
}

/* Validate @spec (required fields, timeout range). */
int relay__runtime_check_spec(const relay_exec_spec *spec, relay_error *err);

#endif /* RELAY__RUNTIME_H */
