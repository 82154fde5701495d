/*
 * relay/sys/runtime.h - the runtime backend interface (for backend authors).
 *
 * A backend starts one handler process per invocation and can signal it.
 * It knows nothing about loops: spawn returns a pid and three non-blocking
 * pipe ends, and the core (relay_runtime) watches them, writes the event,
 * forwards output, enforces the timeout and reaps the child. Built-in
 * backends: "process" (plain process group) and "bwrap" (bubblewrap).
 *
 * Versioning (doc/api-stability.md): the core rejects version 0 or a version
 * newer than RELAY_RUNTIME_BACKEND_VERSION, and calls a slot added in
 * version N only when rb->version >= N and the slot is non-NULL.
 */
#ifndef RELAY_SYS_RUNTIME_H
#define RELAY_SYS_RUNTIME_H

#include <sys/types.h>

#include "../runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct relay_runtime_backend relay_runtime_backend;
/* Private to librelay: see the warm slot below. */
struct relay_runtime_warm_iface;

/**
 * struct relay_proc - one started handler process.
 *
 * The core allocates rb->proc_size zeroed bytes (at least sizeof(struct
 * relay_proc)) and passes them to spawn; a backend that needs more state
 * embeds this struct first in its own. On success spawn sets every field;
 * from then on the core owns and closes the three descriptors, which must
 * be O_NONBLOCK and O_CLOEXEC on the core's side.
 */
typedef struct relay_proc {
	pid_t pid;       /* the direct child; leader of its process group */
	int stdin_fd;    /* write end of the child's stdin */
	int stdout_fd;   /* read end of the child's stdout */
	int stderr_fd;   /* read end of the child's stderr */
	int oom_killed;  /* set by release when a memory limit killed it */
} relay_proc;

struct relay_runtime_backend {
	unsigned int version;    /* RELAY_RUNTIME_BACKEND_VERSION */
	const char *name;        /* registry key: "process", "bwrap" */
	size_t proc_size;        /* bytes of a proc instance (>= relay_proc) */

	/*
	 * Start @spec. Returns 0 with @proc filled, or a negative relay_err
	 * (and fills @err); on failure nothing is left running or open.
	 */
	int (*spawn)(relay_runtime_backend *rb, const relay_exec_spec *spec,
		     relay_proc *proc, relay_error *err);

	/* Send @sig to everything the invocation started. ESRCH is not an
	 * error. Returns 0 or a negative relay_err. */
	int (*signal)(relay_runtime_backend *rb, relay_proc *proc, int sig);

	/* The direct child has been reaped: kill leftovers, release limits
	 * (cgroups), set proc->oom_killed if known. Optional. */
	void (*release)(relay_runtime_backend *rb, relay_proc *proc);

	/* Free the backend itself. Optional. */
	void (*free)(relay_runtime_backend *rb);

	/* version 1 ends here */

	/*
	 * Warm capability (version 2). Optional. Returns the backend's warm
	 * interface if it speaks interface version @version, else NULL;
	 * NULL also when this backend keeps no warm parents. The interface
	 * (struct relay_runtime_warm_iface) is librelay's own, private and
	 * not a stable API: only the built-in bwrap backend offers it, and
	 * any other backend leaves this slot NULL. Borrowed: lives as long
	 * as @rb.
	 */
	const struct relay_runtime_warm_iface *(*warm)(
		relay_runtime_backend *rb, unsigned int version);

	/* version 2 ends here; later versions append only */
};

#define RELAY_RUNTIME_BACKEND_VERSION 2
#define RELAY_RUNTIME_BACKEND_INIT \
	{ .version = RELAY_RUNTIME_BACKEND_VERSION }

/**
 * relay_runtime_backend_init() - initialise a backend table.
 * @rb: caller-owned table (usually the first member of the backend).
 * @version: RELAY_RUNTIME_BACKEND_VERSION.
 *
 * Zeroes the fields of @version in @rb (a version 1 table may be the
 * smaller one of an older header) and sets its version and proc_size =
 * sizeof(relay_proc).
 * Returns: 0, or RELAY_EINVAL for an unsupported version.
 */
RELAY_EXTERN int relay_runtime_backend_init(relay_runtime_backend *rb,
					    unsigned int version);

/**
 * relay_runtime_backend_new() - create a built-in backend by name.
 * @out: receives the backend.
 * @name: "process", "bwrap", or "none" (an alias of "process"); NULL or
 *   "" means "bwrap".
 * @opts: runtime options (bootstrap dir, limits), or NULL for defaults.
 * @err: optional error detail.
 *
 * Returns: 0, RELAY_ENOTFOUND for an unknown name, RELAY_EBACKEND when
 * the backend cannot run on this machine (e.g. bwrap cannot create its
 * namespaces).
 * Ownership: *out is new; pass it to relay_runtime_new_with_backend()
 * (which steals it) or free it with rb->free.
 */
RELAY_EXTERN int relay_runtime_backend_new(relay_runtime_backend **out,
					   const char *name,
					   const relay_runtime_options *opts,
					   relay_error *err);

/**
 * relay_runtime_new_with_backend() - create a runtime over any backend.
 * @out: receives the runtime.
 * @rb: the backend; stolen (freed with the runtime, also on failure).
 * @opts: options (opts->backend and opts->limits are ignored), or NULL.
 * @err: optional error detail.
 *
 * Returns: 0 or RELAY_EINVAL (bad vtable version) / RELAY_ENOMEM.
 */
RELAY_EXTERN int relay_runtime_new_with_backend(
	relay_runtime **out, relay_runtime_backend *rb,
	const relay_runtime_options *opts, relay_error *err);

#ifdef __cplusplus
}
#endif

#endif /* RELAY_SYS_RUNTIME_H */
