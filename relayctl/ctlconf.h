/*
 * ctlconf.h - where relayctl finds Redis, relayd and the apps: the same
 * environment as relayd (REDIS_URI, REDIS_STREAM, REDIS_GROUP,
 * RELAY_RUN_DIR, RELAY_STATE_DIR, RELAY_APPS_DIR, DESIGN.md §5), each
 * overridable by a flag of the same meaning (--redis, --stream, --group,
 * --run-dir, --state-dir, --apps), plus --json for the listing commands.
 */
#ifndef RELAYCTL_CTLCONF_H
#define RELAYCTL_CTLCONF_H

#include <stddef.h>

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

/* Fill @c from the environment and the defaults. */
void relayctl_conf_init(struct relayctl_conf *c);

/*
 * Take argv[*i] if it is one of the connection flags (or --json when
 * @json_ok). Returns 1 (consumed, *i advanced past a value), 0 (not one of
 * ours) or -1 (usage error printed, naming @cmd).
 */
int relayctl_conf_opt(struct relayctl_conf *c, int argc, char **argv, int *i,
		      const char *cmd, int json_ok);

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
