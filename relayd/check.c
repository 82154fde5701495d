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
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "relay/relay.h"
#include "relayd.h"

static int say(FILE *f, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/*
 * One line of the report. What it echoes (RELAY_APPS_DIR, template
 * error texts, the Redis server's answer) is printed through
 * relayd_escape_ctl, so no value can drive the terminal or forge a line.
 * Returns 1 (a problem counts one), so FAILED lines can be summed.
 */
static int say(FILE *f, const char *fmt, ...)
{
	char raw[2048], out[2048];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(raw, sizeof(raw), fmt, ap);
	va_end(ap);
	relayd_escape_ctl(raw, out, sizeof(out));
	fprintf(f, "%s\n", out);
	return 1;
}

struct problems {
	const char *apps_dir;
	size_t n;
	char dir_error[RELAY_ERROR_TEXT_MAX]; /* the directory's own */
};

/*
 * One template problem on stderr. The apps directory's own problem (it
 * cannot be opened) is not one: the "apps: FAILED" line on stdout says
 * it, naming the directory, so it is not said twice.
 */
static void app_problem(const char *app, const relay_error *err,
			void *payload)
{
	char buf[RELAY_ERROR_PATH_MAX + RELAY_ERROR_TEXT_MAX + 32];
	struct problems *p = payload;

	if (!app && strcmp(err->path, p->apps_dir) == 0) {
		snprintf(p->dir_error, sizeof(p->dir_error), "%s", err->text);
		return;
	}
	relay_error_format(err, buf, sizeof(buf));
	say(stderr, "%s: %s", app ? app : "-", buf);
	p->n++;
}

static int check_apps(const relayd_config *c)
{
	relay_appset *set = NULL;
	struct problems p = { c->apps_dir, 0, "" };
	size_t i, n, invalid = 0;
	int rc;

	rc = relay_appset_load(&set, c->apps_dir, app_problem, &p);
	if (rc) {
		say(stdout, "apps: FAILED: RELAY_APPS_DIR \"%s\": %s",
		       c->apps_dir, rc == RELAY_ENOTFOUND ? "does not exist"
		       : *p.dir_error ? p.dir_error : relay_strerror(rc));
		return 1;
	}
	n = relay_appset_entry_count(set);
	for (i = 0; i < n; i++)
		if (!relay_appset_entry_app(set, i))
			invalid++;
	relay_appset_free(set);
	if (invalid || p.n) {
		say(stdout, "apps: FAILED: %zu of %zu app(s) in %s invalid "
		    "(problems above)", invalid, n, c->apps_dir);
		return 1;
	}
	say(stdout, "apps: ok (%zu in %s)", n, c->apps_dir);
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
	ro.sandbox_uids = c->sandbox_uids;
	if (relay_runtime_new(&rt, &ro, &err)) {
		say(stdout, "sandbox: FAILED: RELAY_SANDBOX=%s: %s", c->sandbox,
		       err.text);
		return 1;
	}
	say(stdout, "sandbox: ok (%s)", relay_runtime_backend_name(rt));
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
		say(stdout, "redis: FAILED: %s does not answer PING: %s",
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
		say(stdout, "redis: FAILED: %s", why);
		return 1;
	}
	say(stdout, "redis: ok (%s answers PING)", c->redis_uri_safe);
	return 0;
}

int relayd_check(const relayd_config *c)
{
	int problems = 0;

	say(stdout, "configuration: ok (stream %s, group %s, consumer %s)",
	       c->stream, c->group, c->consumer);
	problems += check_apps(c);
	problems += check_sandbox(c);
	problems += check_redis(c);
	if (!c->metrics_host)
		say(stdout, "metrics: off (METRICS_ADDR unset)");
	else if (!relayd_http_available())
		problems += say(stdout, "metrics: FAILED: METRICS_ADDR set, "
				"but this relayd was built without "
				"libmicrohttpd");
	else
		say(stdout, "metrics: %s:%d (/metrics, /healthz, /readyz)",
		       *c->metrics_host ? c->metrics_host : "*",
		       c->metrics_port);
	if (problems)
		say(stdout, "relayd --check: %d problem(s)", problems);
	else
		say(stdout, "relayd --check: ok");
	fflush(stdout);
	return problems ? 1 : 0;
}
