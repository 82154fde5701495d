/*
 * librelay/runtime/run.h - the per-run layer (run_libev.c): one
 * invocation's life on a libev loop, and the one interface through which
 * it starts an invocation other than cold, the starter.
 *
 * A starter (today only the warm layer, warm/) is installed in
 * rt->starter by relay_runtime_new() (runtime_life.c). The run calls it
 * through its ops only and never by name; the starter reports back only
 * through the completion callback the run gave it with the start. So the
 * run knows nothing of warm parents, and the warm layer nothing of runs.
 */
#ifndef RELAY__RUN_H
#define RELAY__RUN_H

#include <stdbool.h>
#include <sys/types.h>

#include "runtime.h"

/* What a starter reports about an invocation it took (start() returned
 * 0 with *pooled false). */
typedef enum relay__start_event {
	/* Forked: @value is its pid as seen from here (0: it already exited
	 * and was reaped; RELAY__START_EXITED follows). */
	RELAY__START_FORKED,
	/* Done: @value is its wait status; nothing of it is left. Last. */
	RELAY__START_EXITED,
	/* The start failed before the handler ran: @value is the
	 * relay_warm_fail reason, @detail says more. Last. */
	RELAY__START_LOST,
} relay__start_event;

/*
 * The run's completion callback. FORKED comes at most once, before
 * EXITED; exactly one of EXITED and LOST ends the invocation, unless
 * the run called forget() first. @detail is borrowed (NULL but for LOST).
 * The callback may free the run (not the starter).
 */
typedef void (*relay__start_fn)(relay__start_event ev, int value,
				const char *detail, void *payload);

typedef struct relay__starter_ops {
	/*
	 * Start @spec on @loop other than cold. Returns 0 with *@proc set
	 * (owned by the caller; its descriptors are the invocation's
	 * stdio), a relay_warm_fail reason (>= 0) when the run must start
	 * cold, or -1 when this starter does not apply to @spec (nothing to
	 * count).
	 *   *@pooled false: the starter's process forks it; its pid stays 0
	 *   until RELAY__START_FORKED, its status comes with
	 *   RELAY__START_EXITED; @fn and @payload are kept until then.
	 *   *@pooled true: a pre-started process, the caller's own child:
	 *   watch its exit as a cold one's, write @prefix (filled here)
	 *   before the event; @fn is never called.
	 */
	int (*start)(relay__starter *s, void *loop,
		     const relay_exec_spec *spec, relay__start_fn fn,
		     void *payload, relay_proc **proc, bool *pooled,
		     relay__buf *prefix);
	/* The run of @payload is finishing or cancelled: forget it; its
	 * callback is not called again. */
	void (*forget)(relay__starter *s, void *payload);
	/* Kill what lives on @loop (a private loop going away). */
	void (*drop_loop)(relay__starter *s, void *loop);
	/* Kill everything (reaped synchronously) and free @s. */
	void (*free)(relay__starter *s);
} relay__starter_ops;

struct relay__starter {
	const relay__starter_ops *ops;
};

/* Cancel and reap every active run (from relay_runtime_free). */
void relay__runtime_cancel_all(relay_runtime *rt);

#endif /* RELAY__RUN_H */
