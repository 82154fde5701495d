/*
 * librelay/runtime/warm/warm_api.h - what the warm layer offers the top of the
 * runtime (runtime_life.c): creating the starter. Everything else of it
 * is reached through rt->starter (run.h) or the public API.
 */
#ifndef RELAY__WARM_API_H
#define RELAY__WARM_API_H

#include "runtime.h"

/*
 * When @opts ask for warm parents and the backend offers them, install
 * the warm starter in rt->starter (and rt->warm); otherwise leave both
 * NULL. Returns 0, or RELAY_ENOMEM with @err. Freed through
 * rt->starter->ops->free.
 */
int relay__warm_new(relay_runtime *rt, const relay_runtime_options *opts,
		    relay_error *err);

#endif /* RELAY__WARM_API_H */
