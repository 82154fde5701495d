/*
 * check.c - `relayd --check`: is this configuration ready to run?
 *
 * In the manner of `nginx -t`: with the configuration already read
 * (relayd_config_load succeeded, else main() printed its one error line
 * and exited 1), check what start-up would meet and stop there, starting
 * nothing (no lock, no control socket, no consumer, no handler):
 *
 *   apps       every template under RELAY_APPS_DIR is valid (each problem
 *              on stderr as "app: file:line:col: message");
 *   sandbox    the RELAY_SANDBOX backend can run here (bwrap's probe);
 *   redis      REDIS_URI answers PING (and, on a cluster, every stream
 *              has a hash tag);
 *   metrics    where /metrics, /healthz and /readyz would be served.
 *
 * One "name: ok|FAILED ..." line per step on stdout, then "relayd
 * --check: ok" or "relayd --check: N problem(s)". Returns the exit status:
 * 0 when every step passed, 1 otherwise.
 */
#include <stdio.h>
#include <string.h>

#include "relay/relay.h"
#include "relayd.h"

static void app_problem(const char *app, const relay_error *err,
			void *payload)
{
	char buf[RELAY_ERROR_PATH_MAX + RELAY_ERROR_TEXT_MAX + 32];
	size_t *n = payload;

	relay_error_format(err, buf, sizeof(buf));
	fprintf(stderr, "%s: %s\n", app ? app : "-", buf);
	(*n)++;
}

static int check_apps(const relayd_config *c)
{
	relay_appset *set = NULL;
	size_t problems = 0, i, n, invalid = 0;
	int rc;

	rc = relay_appset_load(&set, c->apps_dir, app_problem, &problems);
	if (rc) {
		printf("apps: FAILED: RELAY_APPS_DIR \"%s\": %s\n",
		       c->apps_dir, rc == RELAY_ENOTFOUND ?
		       "does not exist" : relay_strerror(rc));
		return 1;
	}
	n = relay_appset_entry_count(set);
	for (i = 0; i < n; i++)
		if (!relay_appset_entry_app(set, i))
			invalid++;
	relay_appset_free(set);
	if (invalid || problems) {
		printf("apps: FAILED: %zu of %zu app(s) in %s invalid "
		       "(problems above)\n", invalid, n, c->apps_dir);
		return 1;
	}
	printf("apps: ok (%zu in %s)\n", n, c->apps_dir);
	return 0;
}

static int check_sandbox(const relayd_config *c)
{
	relay_runtime_options ro = RELAY_RUNTIME_OPTIONS_INIT;
	relay_runtime *rt = NULL;
	relay_error err;

	memset(&err, 0, sizeof(err));
	ro.backend = c->sandbox;
	ro.sandbox_user = c->sandbox_user;
	if (relay_runtime_new(&rt, &ro, &err)) {
		printf("sandbox: FAILED: RELAY_SANDBOX=%s: %s\n", c->sandbox,
		       err.text);
		return 1;
	}
	printf("sandbox: ok (%s)\n", relay_runtime_backend_name(rt));
	relay_runtime_free(rt);
	return 0;
}

static int check_redis(const relayd_config *c)
{
	static const char *const ping[] = { "PING" };
	relay_redis_options o = RELAY_REDIS_OPTIONS_INIT;
	relay_redis_backend *b = NULL;
	relay_redis_reply *r = NULL;
	char why[512] = "";
	int rc;

	o.connect_timeout_ms = 2000;
	o.command_timeout_ms = 3000;
	relayd_config_tls(c, &o);
	rc = relay_redis_open(&b, c->redis_uri, &o, NULL);
	if (rc == 0)
		rc = relay_redis_sync_command(b, &r, 1, ping, NULL);
	if (rc == 0 && relay_redis_reply_error(r))
		rc = RELAY_EBACKEND;
	if (rc) {
		/* The server's own words when it said something (e.g.
		 * NOAUTH), never the URI's password. */
		printf("redis: FAILED: %s does not answer PING: %s\n",
		       c->redis_uri_safe,
		       b && *relay_redis_errstr(b) ? relay_redis_errstr(b)
						   : relay_strerror(rc));
	}
	relay_redis_reply_free(r);
	relay_redis_free(b);
	if (rc)
		return 1;
	if (relay_redis_cluster_check(c->redis_uri,
				      (const char *const *)c->streams,
				      c->nstreams, c->group, &o, why,
				      sizeof(why))) {
		printf("redis: FAILED: %s\n", why);
		return 1;
	}
	printf("redis: ok (%s answers PING)\n", c->redis_uri_safe);
	return 0;
}

int relayd_check(const relayd_config *c)
{
	int problems = 0;

	printf("configuration: ok (stream %s, group %s, consumer %s)\n",
	       c->stream, c->group, c->consumer);
	problems += check_apps(c);
	problems += check_sandbox(c);
	problems += check_redis(c);
	if (!c->metrics_host)
		printf("metrics: off (METRICS_ADDR unset)\n");
	else if (!relayd_http_available())
		problems += printf("metrics: FAILED: METRICS_ADDR set, but "
				   "this relayd was built without "
				   "libmicrohttpd\n") > 0;
	else
		printf("metrics: %s:%d (/metrics, /healthz, /readyz)\n",
		       *c->metrics_host ? c->metrics_host : "*",
		       c->metrics_port);
	if (problems)
		printf("relayd --check: %d problem(s)\n", problems);
	else
		printf("relayd --check: ok\n");
	fflush(stdout);
	return problems ? 1 : 0;
}
