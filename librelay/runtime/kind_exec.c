/*
 * kind_exec.c - the exec driver: `runtime: exec` runs the template's
 * `command:` argv; the handler name is only a label (RELAY_HANDLER).
 */
#include <string.h>

#include "kind.h"

/* Letters, digits, _ . - only; 1 to 255 bytes. */
static bool handler_valid(const char *h)
{
	const char *p;

	if (!*h || strlen(h) > 255)
		return false;
	for (p = h; *p; p++)
		if (!(*p == '_' || *p == '.' || *p == '-' ||
		      (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		      (*p >= '0' && *p <= '9')))
			return false;
	return true;
}

static int push_command(const relay__kind_cmd *c, relay__strv *out)
{
	size_t i;
	int rc = 0;

	for (i = 0; rc == 0 && c->command && c->command[i]; i++)
		rc = relay__strv_push(out, c->command[i]);
	return rc;
}

/* The warm parent: relay-warm-exec where it is built, else the python3
 * server; either execs the command ("--" and its argv) in every
 * invocation. */
static int warm_argv(const relay__kind_cmd *c, relay__strv *out)
{
	int rc;

	if (c->exec_server)
		rc = relay__strv_push(out, c->exec_server);
	else
		rc = relay__kind_python3.warm_argv(c, out);
	if (rc == 0)
		rc = relay__strv_push(out, "--");
	if (rc == 0)
		rc = push_command(c, out);
	return rc;
}

const relay__kind relay__kind_exec = {
	.kind = RELAY_RUNTIME_EXEC,
	.name = "exec",
	.handler_valid = handler_valid,
	.handler_hint = "letters, digits, _ . - only",
	.command = true,
	.program = NULL,
	.check_argv = NULL,
	.spec_handler_ok = NULL,
	.bootstrap = false,
	.cold_argv = push_command,
	.warm_argv = warm_argv,
	.warm_exec_server = true,
	.warm_bind_now = false,
	.warm_hang_watch = false,
	.pool_argv = NULL,
};
