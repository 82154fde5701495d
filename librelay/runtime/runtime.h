/*
 * librelay/runtime/runtime.h - private declarations of the runtime module.
 *
 * Files: runtime.c (options, registry, env/argv building, the relay__
 * wrappers around backend slots), spawn.c (pipes + posix_spawn/vfork),
 * limits.c (cgroups and rlimits), output.c (line splitting), process.c and
 * bwrap.c (the built-in backends), run_libev.c (the only file with <ev.h>:
 * the per-run state machine).
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
/* Close the cgroup.procs descriptors once the child has started. */
void relay__limits_spawned(relay__limits_inv *inv);
/* SIGKILL whatever is left in the cgroups, then remove them. */
void relay__limits_release(relay__limits_inv *inv, int *oom_killed);

/* ---- spawning (spawn.c) ------------------------------------------ */

typedef struct relay__spawn_req {
	const char *path;                /* executable (resolved) */
	char *const *argv;               /* NULL-terminated */
	char *const *envp;               /* NULL-terminated */
	const char *cwd;                 /* working directory, or NULL */
	const relay__limits_inv *limits; /* applied before exec, or NULL */
} relay__spawn_req;

/*
 * Start @req in a new session (so its own process group), stdin/stdout/
 * stderr connected to fresh pipes whose parent ends are stored in @proc
 * (O_NONBLOCK|O_CLOEXEC), all signal dispositions default, empty signal
 * mask, no other descriptors. Uses posix_spawn, or vfork+exec when limits
 * must be applied before exec.
 */
int relay__spawn(const relay__spawn_req *req, relay_proc *proc,
		 relay_error *err);

/* write(2) that never raises SIGPIPE in the host (EPIPE returned). */
ssize_t relay__write_nosigpipe(int fd, const void *buf, size_t len);

/* ---- output lines (output.c) ------------------------------------- */

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
} relay__out;

int relay__out_init(relay__out *o, const relay_exec_spec *spec,
		    relay_output_stream stream, size_t max_line,
		    uint64_t *budget, relay_output_fn fn, void *payload);
void relay__out_feed(relay__out *o, const char *p, size_t n);
/* End of stream: deliver a pending partial line. */
void relay__out_finish(relay__out *o);
void relay__out_free(relay__out *o);

/* ---- backends ---------------------------------------------------- */

/* State shared by the two built-in backends (process.c, bwrap.c). */
typedef struct relay__builtin {
	relay_runtime_backend parent;  /* must be first */
	relay__limits *limits;         /* owned */
	char *bootstrap_dir;           /* owned */
	char *bwrap;                   /* bwrap executable (bwrap only) */
	bool cgroupns;                 /* bwrap: --unshare-cgroup works */
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

int relay__runtime_process_new(relay_runtime_backend **out,
			       const relay_runtime_options *opts,
			       relay_error *err);
int relay__runtime_bwrap_new(relay_runtime_backend **out,
			     const relay_runtime_options *opts,
			     relay_error *err);

/* ---- the runtime ------------------------------------------------- */

struct relay_runtime {
	relay_runtime_backend *rb;  /* owned */
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

/* Validate @spec (required fields, timeout range). */
int relay__runtime_check_spec(const relay_exec_spec *spec, relay_error *err);

#endif /* RELAY__RUNTIME_H */
