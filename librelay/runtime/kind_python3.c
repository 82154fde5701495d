/*
 * kind_python3.c - the python3 driver: `runtime: python3` imports the
 * handler "module.function" through relay-bootstrap.py; warm parents are
 * the bootstrap's fork server (--serve).
 */
#include "kind.h"

/* -I: no PYTHON* variables, no user site, and above all not the app
 * directory on sys.path (an ast.py there must not be run); -W ignore:
 * SyntaxWarnings are not problems. relayctl appends -c and its checker. */
static const char *const check_argv[] = {
	"python3", "-I", "-W", "ignore", NULL
};

/* -u: output reaches the log even if the handler is killed; -B: no
 * __pycache__ written into the app directory. */
static const char *const interp[] = { "python3", "-u", "-B", NULL };

static int cold_argv(const relay__kind_cmd *c, relay__strv *out)
{
	return relay__kind_bootstrap_argv(out, interp, c->bootstrap_dir,
					  "relay-bootstrap.py", c->handler);
}

static int warm_argv(const relay__kind_cmd *c, relay__strv *out)
{
	return relay__kind_bootstrap_argv(out, interp, c->bootstrap_dir,
					  "relay-bootstrap.py", "--serve");
}

const relay__kind relay__kind_python3 = {
	.kind = RELAY_RUNTIME_PYTHON3,
	.name = "python3",
	.handler_valid = relay__kind_dotted,
	.handler_hint = "write module.function, e.g. events.created.handler",
	.command = false,
	.program = "python3",
	.check_argv = check_argv,
	.spec_handler_ok = relay__kind_module_function,
	.spec_handler_why = "module.function",
	.bootstrap = true,
	.cold_argv = cold_argv,
	.warm_argv = warm_argv,
	.warm_exec_server = false,
	.warm_bind_now = false,
	.warm_hang_watch = false,
	.pool_argv = NULL,
};
