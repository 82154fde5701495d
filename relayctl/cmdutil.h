/*
 * cmdutil.h - helpers shared by relayctl commands that load app templates
 * (validate, match, app …).
 */
#ifndef RELAYCTL_CMDUTIL_H
#define RELAYCTL_CMDUTIL_H

#include <stddef.h>

#include "relay/app.h"

/*
 * Load the apps under @dir, printing every template problem to stderr as
 * "app: file:line:col: message" (DESIGN §6) and a missing or unreadable
 * @dir as "relayctl: CMD: cannot open apps directory …". Returns
 * RELAYCTL_OK with *out set (the set may hold invalid apps: check
 * relay_appset_invalid_count()), or RELAYCTL_FAIL with *out NULL.
 */
int relayctl_load_apps(relay_appset **out, const char *cmd, const char *dir);

/*
 * Match an option of the form "--name VALUE" or "--name=VALUE" at argv[*i]
 * (advancing *i past VALUE). Returns 1 and sets *value on a match, 0 when
 * argv[*i] is not this option, -1 (after printing a usage error) when the
 * value is missing.
 */
int relayctl_opt_value(int argc, char **argv, int *i, const char *name,
		       const char *cmd, const char **value);

/*
 * Read all of @path ("-" = stdin) into a new buffer (free with free()).
 * Prints "relayctl: CMD: PATH: reason" and returns RELAYCTL_FAIL on error.
 */
int relayctl_read_all(const char *cmd, const char *path, char **data,
		      size_t *len);

#endif /* RELAYCTL_CMDUTIL_H */
