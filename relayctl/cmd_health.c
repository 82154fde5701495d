/*
 * cmd_health.c - relayctl health [--json]
 *
 * Asks the running relayd ({"cmd":"health"}, doc/protocol.md). Exit 0 and
 * one line on stdout when relayd is ready and Redis reachable; otherwise
 * exit 1 and a one-line reason on stderr: the control socket could not be
 * reached (relayd down), relayd's own reason (starting, redis unavailable:
 * ..., stopping), or no answer within 10 seconds. Ready but with an app
 * that is stale (it serves its previous version: its template on disk is
 * invalid) is degraded, exit 3: the line starts "degraded:" and each
 * stale app follows with its first error, so that a failed deployment is
 * never mistaken for a good one. --json prints relayd's answer (or
 * {"ok":false,...} when it cannot be reached) on stdout.
 */
#include <stdio.h>
#include <string.h>

#include "cmdutil.h"
#include "fmt.h"
#include "ctlconf.h"
#include "ctlsock.h"
#include "relayctl.h"

#define HEALTH_TIMEOUT_MS 10000
#define HEALTH_DEGRADED 3    /* ready, but an app is stale */

static void usage(FILE *f)
{
	fprintf(f, "usage: relayctl health [--json] [connection options]\n\n"
		"Ask relayd whether it is ready and Redis is reachable.\n\n"
		"  --json             relayd's answer as a JSON object\n%s"
		"  -h, --help         show this help\n\n"
		"Exit status: 0 healthy, 1 unhealthy or relayd not reachable "
		"(with a\none-line reason), 2 usage error, 3 degraded: ready, "
		"but an app is stale\n(it serves its previous version: its "
		"template on disk is invalid).\n",
		relayctl_conf_help);
}

static int unhealthy(int json, const char *reason)
{
	if (json) {
		json_t *o = json_pack("{s:b, s:b, s:s}", "ok", 0, "ready", 0,
				      "reason", reason);

		relayctl_put_json(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
		json_decref(o);
		fflush(stdout);
	}
	return relayctl_error(RELAYCTL_FAIL, "health: %s", reason);
}

int relayctl_cmd_health(int argc, char **argv)
{
	struct relayctl_conf c;
	char path[4200], why[1024];
	json_t *resp;
	json_int_t stale;
	int rc, ready, up;

	rc = relayctl_conf_parse(&c, argc, argv, "health", 1, usage);
	if (rc)
		return rc < 0 ? RELAYCTL_OK : rc;
	relayctl_sock_path(&c, path, sizeof(path));
	resp = relayctl_ctl_call(path, json_pack("{s:s}", "cmd", "health"),
				 HEALTH_TIMEOUT_MS, why, sizeof(why));
	if (!resp)
		return unhealthy(c.json, why);
	if (relayctl_ctl_failed(resp, why, sizeof(why))) {
		json_decref(resp);
		return unhealthy(c.json, why);
	}
	ready = json_is_true(json_object_get(resp, "ready"));
	up = json_is_true(json_object_get(resp, "redis_up"));
	if (c.json) {
		relayctl_put_json(resp, JSON_COMPACT | JSON_PRESERVE_ORDER);
		fflush(stdout);
	}
	if (!ready || !up) {
		const char *r = relayctl_jstr(resp, "reason", "");

		snprintf(why, sizeof(why), "relayd pid %lld is not ready: %s",
			 (long long)json_integer_value(json_object_get(resp,
								       "pid")),
			 *r ? r : !up ? "Redis unreachable" : "not ready");
		json_decref(resp);
		return relayctl_error(RELAYCTL_FAIL, "health: %s", why);
	}
	stale = json_integer_value(json_object_get(resp, "stale_apps"));
	if (!c.json)
		printf("%s: relayd %s pid %lld ready, Redis reachable "
		       "(stream %s, group %s, consumer %s, %lld apps, %lld "
		       "invalid, %lld stale)\n", stale ? "degraded" : "healthy",
		       relayctl_c(relayctl_jstr(resp, "version", "?")),
		       (long long)json_integer_value(json_object_get(resp,
								     "pid")),
		       relayctl_c(relayctl_jstr(resp, "stream", "?")),
		       relayctl_c(relayctl_jstr(resp, "group", "?")),
		       relayctl_c(relayctl_jstr(resp, "consumer", "?")),
		       (long long)json_integer_value(json_object_get(resp,
								     "apps")),
		       (long long)json_integer_value(json_object_get(
			       resp, "invalid_apps")), (long long)stale);
	if (!c.json) {
		/* Messages whose Redis step keeps failing: healthy, but an
		 * operator must look (relayd.8, "stuck messages"). */
		json_t *st = json_object_get(resp, "stuck"), *e;
		size_t i;

		json_array_foreach(json_object_get(resp, "stale"), i, e) {
			const char *first = json_string_value(json_array_get(
				json_object_get(e, "errors"), 0));

			printf("stale: app %s serves its previous version; "
			       "its template is invalid: %s\n",
			       relayctl_c(relayctl_jstr(e, "app", "?")),
			       relayctl_c(first ? first : "?"));
		}
		json_array_foreach(st, i, e)
			printf("stuck: message %s: %s (%lld failures, next "
			       "try in %lld s)\n",
			       relayctl_jstr(e, "message_id", "?"),
			       relayctl_jstr(e, "reason", "?"),
			       (long long)json_integer_value(
				       json_object_get(e, "failures")),
			       (long long)(json_integer_value(
				       json_object_get(e, "retry_in_ms")) +
				       999) / 1000);
	}
	json_decref(resp);
	if (fflush(stdout))
		return RELAYCTL_FAIL;
	return stale ? HEALTH_DEGRADED : RELAYCTL_OK;
}
