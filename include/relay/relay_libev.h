/*
 * relay/relay_libev.h - attaching librelay objects to a host's libev loop.
 *
 * The only public header that includes <ev.h>. The library never owns the
 * loop: the host creates it, attaches librelay objects, and runs it.
 */
#ifndef RELAY_RELAY_LIBEV_H
#define RELAY_RELAY_LIBEV_H

#include <ev.h>

#include "common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- redis (owner: redis module) ---------------------------------- */

struct relay_redis_backend;
struct relay_redis_options;

/**
 * relay_redis_open_libev() - open a Redis backend driven by the host's loop.
 * @out: set to the new backend.
 * @loop: the host's libev loop (borrowed; must outlive the backend).
 * @uri: as relay_redis_open(). "memory://" gives a memory backend whose
 *   replies are delivered later, in issue order, from @loop (never
 *   inside the call that issued the command), as a server's would be;
 *   an empty XREADGROUP with BLOCK n > 0 waits for an XADD to its stream
 *   or n ms of loop time.
 * @opts: options, or NULL for defaults.
 * @err: optional error detail.
 *
 * The backend connects lazily, reconnects with jittered backoff (1 s to
 * 30 s) and times commands out with its own timers. Synchronous wrappers
 * refuse it (RELAY_EINVAL). Free it with relay_redis_free(), not from
 * inside one of its callbacks.
 * Returns: 0, RELAY_EINVAL or RELAY_ENOMEM. Ownership: *out is new.
 */
RELAY_EXTERN int relay_redis_open_libev(struct relay_redis_backend **out,
					struct ev_loop *loop, const char *uri,
					const struct relay_redis_options *opts,
					relay_error *err);

/* ---- runtime (owner: runtime module) ------------------------------ */

#include "runtime.h"

/**
 * relay_runtime_libev_attach() - drive a runtime's runs from a libev loop.
 * @rt: the runtime.
 * @loop: the host's loop (borrowed; must outlive @rt or be detached by
 *   attaching NULL while no run is active).
 *
 * Child exits are watched with ev_child on libev's default loop (which
 * reaps every child itself) and with pidfd_open(2) descriptors on any
 * other loop, so any loop works on Linux >= 5.3.
 * Returns: 0, or RELAY_EINVAL when runs are still active on the
 * previously attached loop.
 * Thread-safety: call from the loop's thread.
 */
RELAY_EXTERN int relay_runtime_libev_attach(relay_runtime *rt,
					    struct ev_loop *loop);

#ifdef __cplusplus
}
#endif

#endif /* RELAY_RELAY_LIBEV_H */
