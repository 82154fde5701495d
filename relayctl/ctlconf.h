/*
 * ctlconf.h - where relayctl finds Redis, relayd and the apps: the same
 * environment as relayd (REDIS_URI, REDIS_STREAM, REDIS_GROUP,
 * RELAY_RUN_DIR, RELAY_STATE_DIR, RELAY_APPS_DIR, doc/configuration.md C-5), each
 * overridable by a flag of the same meaning (--redis, --stream, --group,
 * --run-dir, --state-dir, --apps), plus --json for the listing commands.
 */
#ifndef RELAYCTL_CTLCONF_H
#define RELAYCTL_CTLCONF_H

#include <stddef.h>
#include <stdio.h>

#include "relay/redis.h"

struct relayctl_conf {
	const char *redis;      /* REDIS_URI, or NULL */
	const char *stream;     /* REDIS_STREAM, or NULL */
	const char *group;      /* REDIS_GROUP, or NULL */
	const char *run_dir;    /* default /run/relay */
	const char *state_dir;  /* default /var/lib/relay */
	const char *apps;       /* default /etc/relay/apps */
	int json;               /* --json given */
};

/* $RELAY_APPS_DIR, or /etc/relay/apps when unset or empty (not owned). */
const char *relayctl_apps_dir(void);

/* Fill @c from the environment and the defaults. */
void relayctl_conf_init(struct relayctl_conf *c);

/*
 * Take argv[*i] if it is one of the connection flags (or --json when
 * @json_ok). Returns 1 (consumed, *i advanced past a value), 0 (not one of
 * ours) or -1 (usage error printed, naming @cmd).
 */
int relayctl_conf_opt(struct relayctl_conf *c, int argc, char **argv, int *i,
		      const char *cmd, int json_ok);

/* What relayctl_conf_arg() found at argv[*i]. */
enum {
	RELAYCTL_ARG_BAD = -1,   /* a flag of ours with a bad value: printed */
	RELAYCTL_ARG_OTHER = 0,  /* not ours: the command's own argument */
	RELAYCTL_ARG_TAKEN = 1,  /* a connection flag (or --json), taken */
	RELAYCTL_ARG_HELP = 2,   /* -h or --help: @usage printed on stdout */
};

/*
 * The first steps of every connection-aware command's argument loop, for
 * argv[*i]: help, then relayctl_conf_opt(). Returns a RELAYCTL_ARG_*.
 */
int relayctl_conf_arg(struct relayctl_conf *c, int argc, char **argv, int *i,
		      const char *cmd, int json_ok, void (*usage)(FILE *f));

/*
 * The whole command line (argv[0] = the command) of a command that takes
 * only the connection flags (and --json when @json_ok): fills @c from the
 * environment, then from the flags. Anything else is `CMD: unexpected
 * argument "ARG"`. Returns 0, -1 when help was printed (exit 0), or
 * RELAYCTL_USAGE after printing the problem and @usage on stderr.
 */
int relayctl_conf_parse(struct relayctl_conf *c, int argc, char **argv,
			const char *cmd, int json_ok, void (*usage)(FILE *f));

/* The help text lines of the connection flags, for usage(). */
extern const char relayctl_conf_help[];

/* RELAY_RUN_DIR/relay.sock into @buf. Returns @buf. */
const char *relayctl_sock_path(const struct relayctl_conf *c, char *buf,
			       size_t size);

/*
 * Open a synchronous Redis backend for @c->redis, requiring REDIS_URI and
 * REDIS_STREAM. Prints the problem naming @cmd on failure. Returns
 * RELAYCTL_OK, RELAYCTL_USAGE (not configured) or RELAYCTL_FAIL.
 */
int relayctl_redis_open(const struct relayctl_conf *c, const char *cmd,
			relay_redis_backend **b);

#endif /* RELAYCTL_CTLCONF_H */
