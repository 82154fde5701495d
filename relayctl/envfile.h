/*
 * envfile.h - relayctl's defaults file: the systemd EnvironmentFile relayd
 * runs with (/etc/default/relay), so that relayctl sees the same
 * REDIS_* and RELAY_* settings without the operator exporting them.
 */
#ifndef RELAYCTL_ENVFILE_H
#define RELAYCTL_ENVFILE_H

/* The defaults file read when no --env-file is given. */
#define RELAYCTL_DEFAULTS_FILE "/etc/default/relay"

/*
 * Read @path as an EnvironmentFile (doc/configuration.md C-5) and set
 * each REDIS_* and RELAY_* variable it assigns that the environment does
 * not already hold (unset or empty); other names are ignored. When
 * @optional, a file that does not exist or cannot be read is skipped
 * silently. Nothing is set when any line is malformed.
 *
 * Problems are printed as "relayctl: PATH: reason" or "relayctl:
 * PATH:LINE: reason"; a value is never printed (it may hold a password).
 * Returns RELAYCTL_OK or RELAYCTL_FAIL. Not thread-safe (setenv()).
 */
int relayctl_envfile_load(const char *path, int optional);

/*
 * The file relayctl_envfile_load() took @key from: its path when the file
 * set @key in the environment, NULL when it did not (unset there, or the
 * environment already held it). So that a command can tell a setting of
 * the defaults file from one of the environment (`app run` says where a
 * refused RELAY_SANDBOX=none came from). Returns a borrowed string, valid
 * until exit. Not thread-safe.
 */
const char *relayctl_envfile_origin(const char *key);

#endif /* RELAYCTL_ENVFILE_H */
