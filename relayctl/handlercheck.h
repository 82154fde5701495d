/*
 * handlercheck.h - whether an app's handlers can be loaded, for
 * `relayctl validate` (doc/cli.md L-2).
 */
#ifndef RELAYCTL_HANDLERCHECK_H
#define RELAYCTL_HANDLERCHECK_H

#include "relay/app.h"

/*
 * Check that every handler of the valid @app can be loaded, without
 * running any of its code: python3 modules exist, compile, and define
 * the function at top level (when that is statically knowable); node
 * modules exist and pass `node --check`; an exec app's command exists
 * and is executable. Compilers run in a clean environment, as
 * $RELAY_SANDBOX_USER (default nobody) when relayctl runs as root, and
 * without network where the kernel allows a new network namespace. A
 * missing interpreter skips the checks that need it.
 *
 * Each problem is printed on stderr as "app: file:line:col: message"
 * (file under the apps directory as given). Returns the number of
 * problems. Not thread-safe (forks).
 */
int relayctl_check_handlers(const relay_app *app);

#endif /* RELAYCTL_HANDLERCHECK_H */
