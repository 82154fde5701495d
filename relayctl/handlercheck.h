/*
 * handlercheck.h - whether an app's handlers can be loaded, for
 * `relayctl validate` (doc/cli.md L-2).
 */
#ifndef RELAYCTL_HANDLERCHECK_H
#define RELAYCTL_HANDLERCHECK_H

#include "relay/app.h"

/* The largest module file validate hands a compiler by default. */
#define RELAYCTL_CHECK_MAX_BYTES (16ULL << 20)

/*
 * Check that every handler of the valid @app can be loaded, without
 * running any of its code: python3 modules exist, compile, and define
 * the function at top level (when that is statically knowable); node
 * modules exist and pass `node --check`; an exec app's command exists
 * and is executable. Compilers run in a clean environment, as
 * $RELAY_SANDBOX_USER (default nobody) when relayctl runs as root, and
 * without network where the kernel allows a new network namespace. A
 * missing interpreter skips the checks that need it. A module file of
 * more than @max_bytes is a problem and never reaches a compiler. When
 * relayctl runs as root and the sandbox user cannot read and search the
 * app directory, that is the app's one problem (with app run's message)
 * and nothing is compiled; not under RELAY_SANDBOX=none, whose handlers
 * run as relayd's own user.
 *
 * Each problem is printed on stderr as "app: file:line:col: message"
 * (file under the apps directory as given). Returns the number of
 * problems. Not thread-safe (forks).
 */
int relayctl_check_handlers(const relay_app *app,
			    unsigned long long max_bytes);

#endif /* RELAYCTL_HANDLERCHECK_H */
