/*
 * ctlconf.c - relayctl's connection settings (environment and flags).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmdutil.h"
#include "ctlconf.h"
#include "relayctl.h"

const char relayctl_conf_help[] =
	"  --redis URI        Redis ($REDIS_URI)\n"
	"  --stream NAME      the event stream ($REDIS_STREAM)\n"
	"  --group NAME       the consumer group ($REDIS_GROUP)\n"
	"  --run-dir DIR      relayd's run directory, holding relay.sock\n"
	"                     ($RELAY_RUN_DIR, default /run/relay)\n"
	"  --state-dir DIR    relayd's state directory, holding stats.json\n"
	"                     ($RELAY_STATE_DIR, default /var/lib/relay)\n"
	"  --apps DIR         the apps directory ($RELAY_APPS_DIR, default\n"
	"                     /etc/relay/apps)\n";

static const char *env_or(const char *name, const char *dflt)
{
	const char *v = getenv(name);

	return v && *v ? v : dflt;
}

const char *relayctl_apps_dir(void)
{
	return env_or("RELAY_APPS_DIR", "/etc/relay/apps");
}

void relayctl_conf_init(struct relayctl_conf *c)
{
	memset(c, 0, sizeof(*c));
	c->redis = env_or("REDIS_URI", NULL);
	c->stream = env_or("REDIS_STREAM", NULL);
	c->group = env_or("REDIS_GROUP", NULL);
	c->run_dir = env_or("RELAY_RUN_DIR", "/run/relay");
	c->state_dir = env_or("RELAY_STATE_DIR", "/var/lib/relay");
	c->apps = relayctl_apps_dir();
}

int relayctl_conf_opt(struct relayctl_conf *c, int argc, char **argv, int *i,
		      const char *cmd, int json_ok)
{
	static const char *const names[] = { "--redis", "--stream", "--group",
					     "--run-dir", "--state-dir",
					     "--apps" };
	const char **slots[] = { &c->redis, &c->stream, &c->group,
				 &c->run_dir, &c->state_dir, &c->apps };
	size_t k;

	if (json_ok && strcmp(argv[*i], "--json") == 0) {
		c->json = 1;
		return 1;
	}
	for (k = 0; k < sizeof(names) / sizeof(names[0]); k++) {
		const char *v;
		int m = relayctl_opt_value(argc, argv, i, names[k], cmd, &v);

		if (m < 0)
			return -1;
		if (m == 0)
			continue;
		if (!*v) {
			relayctl_error(RELAYCTL_USAGE, "%s: %s needs a "
				       "non-empty value", cmd, names[k]);
			return -1;
		}
		*slots[k] = v;
		return 1;
	}
	return 0;
}

int relayctl_conf_arg(struct relayctl_conf *c, int argc, char **argv, int *i,
		      const char *cmd, int json_ok, void (*usage)(FILE *f))
{
	if (relayctl_is_help(argv[*i])) {
		usage(stdout);
		return RELAYCTL_ARG_HELP;
	}
	return relayctl_conf_opt(c, argc, argv, i, cmd, json_ok);
}

int relayctl_conf_parse(struct relayctl_conf *c, int argc, char **argv,
			const char *cmd, int json_ok, void (*usage)(FILE *f))
{
	int i;

	relayctl_conf_init(c);
	for (i = 1; i < argc; i++) {
		int m = relayctl_conf_arg(c, argc, argv, &i, cmd, json_ok,
					  usage);

		if (m == RELAYCTL_ARG_HELP)
			return -1;
		if (m == RELAYCTL_ARG_TAKEN)
			continue;
		if (m == RELAYCTL_ARG_OTHER)
			relayctl_unexpected(cmd, argv[i]);
		usage(stderr);
		return RELAYCTL_USAGE;
	}
	return 0;
}

const char *relayctl_sock_path(const struct relayctl_conf *c, char *buf,
			       size_t size)
{
	size_t n = strlen(c->run_dir);

	while (n > 1 && c->run_dir[n - 1] == '/')
		n--;
	snprintf(buf, size, "%.*s/relay.sock", (int)n, c->run_dir);
	return buf;
}

int relayctl_redis_open(const struct relayctl_conf *c, const char *cmd,
			relay_redis_backend **b)
{
	relay_redis_options o = RELAY_REDIS_OPTIONS_INIT;
	relay_error err;
	const char *v;

	if (!c->redis)
		return relayctl_error(RELAYCTL_USAGE, "%s: REDIS_URI is not "
				      "set (or pass --redis URI)", cmd);
	if (!c->stream)
		return relayctl_error(RELAYCTL_USAGE, "%s: REDIS_STREAM is "
				      "not set (or pass --stream NAME)", cmd);
	o.connect_timeout_ms = 3000;
	o.command_timeout_ms = 10000;
	/* TLS settings: the same variables as relayd's. */
	o.tls_ca_file = env_or("REDIS_TLS_CA_FILE", NULL);
	o.tls_ca_dir = env_or("REDIS_TLS_CA_DIR", NULL);
	o.tls_cert_file = env_or("REDIS_TLS_CERT_FILE", NULL);
	o.tls_key_file = env_or("REDIS_TLS_KEY_FILE", NULL);
	o.tls_server_name = env_or("REDIS_TLS_SERVER_NAME", NULL);
	v = env_or("REDIS_TLS_VERIFY", "on");
	if (strcmp(v, "on") && strcmp(v, "off"))
		return relayctl_error(RELAYCTL_USAGE, "%s: REDIS_TLS_VERIFY "
				      "must be on or off", cmd);
	o.tls_no_verify = strcmp(v, "off") == 0;
	memset(&err, 0, sizeof(err));
	/* err.text quotes the URI, which may hold a password: not shown;
	 * a TLS setting's error (it names a file) or a build without TLS
	 * is. */
	if (relay_redis_open(b, c->redis, &o, &err) == RELAY_EINVAL &&
	    (strncmp(err.text, "TLS", 3) == 0 ||
	     strncmp(err.text, "rediss://", 9) == 0))
		return relayctl_error(RELAYCTL_USAGE, "%s: %s", cmd, err.text);
	if (*b == NULL)
		return relayctl_error(RELAYCTL_USAGE, "%s: REDIS_URI (or "
				      "--redis) is not a Redis URI: expected "
				      "host:port, redis://[user:pass@]host:"
				      "port[/db], redis+sentinel://[user:"
				      "pass@]host:port[,host:port...]/"
				      "master[/db] or unix:///path", cmd);
	return RELAYCTL_OK;
}
