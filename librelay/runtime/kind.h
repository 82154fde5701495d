/*
 * kind.h - the handler kinds' drivers, in one table (doc/architecture.md,
 * "Handler kinds").
 *
 * Each kind of relay/kind.h is one driver, one file (kind_exec.c,
 * kind_python3.c, kind_node.c) holding one relay__kind; kind.c lists them
 * all in one array and looks them up. A driver owns everything that
 * differs between kinds: its name in templates, the handler-name syntax,
 * whether a template gives a `command:`, the interpreter it needs on this
 * host, the check `relayctl validate` runs, the cold command line, the
 * warm parent's command and the pre-started processes' arguments. Nothing
 * outside the driver files switches on the kind (tests/check-layering.py
 * fails on a case label or a comparison with a kind): code asks the
 * driver.
 *
 * This module sits below both the app module (templates) and the runtime
 * (runs), so it includes only common: the command-line functions get
 * what they need as plain strings (relay__kind_cmd), never a
 * relay_exec_spec.
 *
 * Thread-safety: the drivers are constant; every function is reentrant.
 */
#ifndef RELAY__KIND_H
#define RELAY__KIND_H

#include <stdbool.h>

#include "common.h"
#include "relay/kind.h"

#define RELAY__KIND_COUNT 3   /* the values of relay_runtime_kind: 0..2 */

/* What a driver's command-line functions read: borrowed strings. */
typedef struct relay__kind_cmd {
	const char *handler;          /* the handler name */
	const char *const *command;   /* the template's command (exec) */
	const char *bootstrap_dir;    /* where the bootstraps are, as the
					 started process sees it */
	const char *exec_server;      /* warm: relay-warm-exec's path as the
					 parent sees it, or NULL where it is
					 not built */
} relay__kind_cmd;

/* A command-line builder: appends to @out; 0 or RELAY_ENOMEM. */
typedef int (*relay__kind_argv_fn)(const relay__kind_cmd *c,
				   relay__strv *out);

typedef struct relay__kind {
	relay_runtime_kind kind;
	const char *name;                 /* `runtime: NAME` */

	/* Templates (librelay/app). */
	bool (*handler_valid)(const char *handler);
	const char *handler_hint;         /* why a name is invalid, after
					     `invalid handler "NAME" (` */
	bool command;                     /* `command:` required, else
					     refused */

	/* This host: the interpreter needed on $PATH (NULL: none), and the
	 * checker relayctl validate starts
	 * (relay_runtime_kind_check_argv()). */
	const char *program;
	const char *const *check_argv;

	/* A run spec's handler (relay_runtime_run()): NULL accepts any. */
	bool (*spec_handler_ok)(const char *handler);
	const char *spec_handler_why;     /* the error when it does not */

	/* Cold starts: the sandbox binds the bootstrap directory when
	 * @bootstrap; @cold_argv is the command inside it. */
	bool bootstrap;
	relay__kind_argv_fn cold_argv;

	/* Warm starts (librelay/runtime/warm): the parent's command; whether
	 * it is relay-warm-exec where that is built; whether the parent
	 * binds every symbol at start (LD_BIND_NOW=1 unless the app sets
	 * it); whether the fork server's hang watchdog watches it; and the
	 * command of a pre-started one-shot process, used instead of a
	 * fork server where that cannot run (NULL: no such processes). */
	relay__kind_argv_fn warm_argv;
	bool warm_exec_server;
	bool warm_bind_now;
	bool warm_hang_watch;
	relay__kind_argv_fn pool_argv;
} relay__kind;

/* The drivers (one file each). */
extern const relay__kind relay__kind_exec;
extern const relay__kind relay__kind_python3;
extern const relay__kind relay__kind_node;

/* The driver of @k, or NULL when @k is no kind. */
const relay__kind *relay__kind_get(relay_runtime_kind k);

/* The driver named @name (a template's `runtime:`), or NULL. */
const relay__kind *relay__kind_find(const char *name);

/* The drivers in template order (the order error messages list them):
 * the @i-th, NULL past the last. */
const relay__kind *relay__kind_at(size_t i);

/* Every kind's name in template order into @buf of @size bytes, ", "
 * between them but @last before the last ("python3, node or exec" with
 * " or "); truncated at a name. Returns @buf. */
char *relay__kind_names(char *buf, size_t size, const char *last);

/* Handler-name syntaxes the drivers share: dotted identifiers, at least
 * two ("module.function", a module path allowed); and the looser test a
 * run spec gets (a dot with something on both sides). */
bool relay__kind_dotted(const char *handler);
bool relay__kind_module_function(const char *handler);

/* The command line of an interpreter that runs a bootstrap: @words (the
 * interpreter and its options, NULL-terminated), "@dir/@script", then
 * @last unless it is NULL. 0 or RELAY_ENOMEM. */
int relay__kind_bootstrap_argv(relay__strv *out, const char *const *words,
			       const char *dir, const char *script,
			       const char *last);

#endif /* RELAY__KIND_H */
