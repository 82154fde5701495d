/*
 * relay/kind.h - handler kinds: the `runtime:` of a template.
 *
 * A handler kind says how an app's handlers run: exec runs the
 * template's `command:`, python3 and node import the handler's module
 * through a bootstrap. This is the one enum of the kinds: relay/app.h
 * (what a template says) and relay/runtime.h (what a run starts) both use
 * it. Inside the library each kind is one driver (doc/architecture.md,
 * "Handler kinds").
 *
 * Thread-safety: every function here reads constant tables only and is
 * safe from any thread.
 */
#ifndef RELAY_KIND_H
#define RELAY_KIND_H

#include "common.h"

#ifdef __cplusplus
extern "C" {
#endif

/** enum relay_runtime_kind - how a handler is started. */
typedef enum relay_runtime_kind {
	RELAY_RUNTIME_EXEC = 0,    /* run the template's command argv */
	RELAY_RUNTIME_PYTHON3 = 1, /* python3 bootstrap imports the handler
				      "module.function" */
	RELAY_RUNTIME_NODE = 2,    /* node bootstrap requires the handler
				      "module.function" */
} relay_runtime_kind;

/**
 * relay_runtime_kind_parse() - parse "exec", "python3" or "node" (the
 * template's `runtime:` value).
 * Returns: 0 and *@out set, or RELAY_EINVAL (*@out untouched).
 */
RELAY_EXTERN int relay_runtime_kind_parse(const char *s,
					  relay_runtime_kind *out);

/**
 * relay_runtime_kind_name() - "exec", "python3" or "node".
 * Returns: a static string; "unknown" for a value that is no kind.
 */
RELAY_EXTERN const char *relay_runtime_kind_name(relay_runtime_kind k);

/**
 * relay_runtime_kind_program() - the interpreter a kind's handlers need
 * on this host: "python3" or "node", looked for in $PATH (the engine's
 * availability rule, relay_app_runtime_available()); NULL for a kind that
 * needs none (exec runs the app's own command) and for a value that is no
 * kind.
 * Returns: a static string or NULL.
 */
RELAY_EXTERN const char *relay_runtime_kind_program(relay_runtime_kind k);

/**
 * relay_runtime_kind_check_argv() - the command line `relayctl validate`
 * starts to check a handler's module on the host without running it
 * (doc/cli.md): for python3 the interpreter and its flags, to which the
 * caller appends `-c` and its checker; for node `node --check`, to which
 * the caller appends the module file. NULL for a kind whose handler is
 * not a module (exec: the caller checks the command's file).
 * Returns: a static NULL-terminated argv, or NULL.
 */
RELAY_EXTERN const char *const *relay_runtime_kind_check_argv(
	relay_runtime_kind k);

#ifdef __cplusplus
}
#endif

#endif /* RELAY_KIND_H */
