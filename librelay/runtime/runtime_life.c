/*
 * runtime_life.c - a runtime's birth and death, the top of the runtime's
 * stairs: the one file that puts the core (runtime.h), the per-run layer
 * (run.h) and the warm layer (warm/warm.h) together. Nothing below calls
 * into it.
 */
#include "relay/runtime.h"
#include "run.h"
#include "warm/warm_api.h"

int relay_runtime_new(relay_runtime **out, const relay_runtime_options *opts,
		      relay_error *err)
{
	relay_runtime_backend *rb = NULL;
	relay_runtime *rt = NULL;
	int rc;

	if (opts && (opts->version == 0 ||
		     opts->version > RELAY_RUNTIME_OPTIONS_VERSION))
		return relay__error_set(err, RELAY_EINVAL, NULL, 0, 0,
					"unsupported runtime options version");
	rc = relay_runtime_backend_new(&rb, opts ? opts->backend : NULL, opts,
				       err);
	if (rc != 0)
		return rc;
	rc = relay__runtime_create(&rt, rb, true, opts, err);
	if (rc != 0)
		return rc;
	rc = relay__warm_new(rt, opts, err);
	if (rc != 0) {
		relay_runtime_free(rt);
		return rc;
	}
	relay__log(&rt->logger, RELAY_LOG_INFO, "RELAY-RT01",
		   "runtime: backend %s, resource limits: %s, warm parents: %s",
		   rb->name,
		   relay__limits_describe(((relay__builtin *)rb)->limits),
		   rt->starter ? "on" : "off");
	if (relay__limits_warning(((relay__builtin *)rb)->limits))
		relay__log(&rt->logger, RELAY_LOG_WARN, "RELAY-RT09",
			   "runtime: resource limits: %s",
			   relay__limits_warning(
				   ((relay__builtin *)rb)->limits));
	*out = rt;
	return 0;
}

void relay_runtime_free(relay_runtime *rt)
{
	if (!rt)
		return;
	relay__runtime_cancel_all(rt);
	if (rt->starter)
		rt->starter->ops->free(rt->starter);
	rt->starter = NULL;
	rt->warm = NULL;
	relay__runtime_destroy(rt);
}
