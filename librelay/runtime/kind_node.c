/*
 * kind_node.c - the node driver: `runtime: node` requires the handler
 * "module.function" through relay-bootstrap.js; warm parents are the
 * bootstrap's fork server (--serve), or pre-started one-shot processes
 * (--pool) where the fork server cannot run.
 */
#include "kind.h"

/* Parse only; relayctl appends the module file. */
static const char *const check_argv[] = { "node", "--check", NULL };

static const char *const interp[] = { "node", NULL };

static int cold_argv(const relay__kind_cmd *c, relay__strv *out)
{
	return relay__kind_bootstrap_argv(out, interp, c->bootstrap_dir,
					  "relay-bootstrap.js", c->handler);
}

/* V8 without concurrent threads and node with one platform worker: the
 * threads left are parked while the server forks (warm_node.c checks
 * that before every fork). */
static int warm_argv(const relay__kind_cmd *c, relay__strv *out)
{
	static const char *const server[] = {
		"node", "--single-threaded", "--v8-pool-size=1", NULL
	};

	return relay__kind_bootstrap_argv(out, server, c->bootstrap_dir,
					  "relay-bootstrap.js", "--serve");
}

/* A pre-started process: the bootstrap, waiting for the header lines at
 * the start of its stdin (warm_proto.h). */
static int pool_argv(const relay__kind_cmd *c, relay__strv *out)
{
	return relay__kind_bootstrap_argv(out, interp, c->bootstrap_dir,
					  "relay-bootstrap.js", "--pool");
}

const relay__kind relay__kind_node = {
	.kind = RELAY_RUNTIME_NODE,
	.name = "node",
	.handler_valid = relay__kind_dotted,
	.handler_hint = "write module.function, e.g. events.created.handler",
	.command = false,
	.program = "node",
	.check_argv = check_argv,
	.spec_handler_ok = relay__kind_module_function,
	.spec_handler_why = "module.function",
	.bootstrap = true,
	.cold_argv = cold_argv,
	.warm_argv = warm_argv,
	.warm_exec_server = false,
	/* A node fork server binds every symbol at start: a symbol bound
	 * lazily is bound again in each fork (ld.so's lookup, and the
	 * pages it touches copied), 3 % of a warm invocation's CPU at
	 * saturation, 1.11x the warm rate there (doc/perf/warm.md, round
	 * 13). */
	.warm_bind_now = true,
	.warm_hang_watch = true,
	.pool_argv = pool_argv,
};
