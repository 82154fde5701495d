/*
 * cmd_app_inspect.c - relayctl app inspect NAME [--json]
 *
 * Status and template problems come from the running relayd (else
 * "offline", or "invalid" with the problems found on disk); the details
 * from the app's template as it is on disk: runtime, command, resources,
 * concurrency, network, env NAMES (values are never shown: they may hold
 * secrets), each rule (handler, timeout, retries, its pattern rendered
 * back as YAML) and each schedule (name, handler, cron, timezone,
 * timeout, retries, and its next five firing times from relay_cron_next(),
 * in the schedule's zone and in UTC).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "appinfo.h"
#include "cmdutil.h"
#include "ctlconf.h"
#include "ctlsock.h"
#include "fmt.h"
#include "relay/app.h"
#include "relay/schedule.h"
#include "relayctl.h"

#define W 12  /* key column width */

static void usage(FILE *f)
{
	fprintf(f, "usage: relayctl app inspect NAME [--json] [connection "
		"options]\n\n"
		"Show app NAME: status (from the running relayd, else "
		"offline), last\n"
		"error, runtime, resources, concurrency, each rule with its "
		"pattern,\n"
		"schedules and the names of its env variables (never their "
		"values).\n\n"
		"  --json             one JSON object\n%s"
		"  -h, --help         show this help\n\n"
		"Exit status: 0 success, 1 unknown app or relayd problem, 2 "
		"usage error.\n", relayctl_conf_help);
}

static void collect(const char *app, const relay_error *err, void *payload)
{
	char buf[RELAY_ERROR_PATH_MAX + RELAY_ERROR_TEXT_MAX + 32];

	(void)app;
	json_array_append_new(payload, json_string(
		relay_error_format(err, buf, sizeof(buf))));
}

static char *fmt_memory(uint64_t b, char *buf, size_t size)
{
	static const char *const units[] = { "B", "KiB", "MiB", "GiB",
					     "TiB" };
	size_t u = 0;

	if (!b) {
		snprintf(buf, size, "unlimited");
		return buf;
	}
	while (u < 4 && b % 1024 == 0) {
		b /= 1024;
		u++;
	}
	snprintf(buf, size, "%llu%s", (unsigned long long)b, units[u]);
	return buf;
}

struct view {
	const char *name, *status;
	json_t *errors;          /* strings */
	char dir[4200];
	relay_app *app;          /* NULL when the template does not load */
};

#define NEXT_FIRINGS 5

/*
 * The pattern of rule @i as written in the template (librelay renders it
 * from the file), YAML lines indented by @indent, control characters
 * shown as '?'. Returns 0, or -1 when the file no longer has it (nothing
 * printed).
 */
static int print_pattern(const relay_app *a, size_t i, int indent)
{
	char *text = NULL, *clean;

	if (relay_app_rule_pattern_yaml(a, i, indent, &text))
		return -1;
	clean = relayctl_clean_text(text);
	fputs(clean ? clean : "?\n", stdout);
	free(clean);
	relay_free(text);
	return 0;
}

/* The same as JSON (new reference), or NULL. */
static json_t *pattern_json(const relay_app *a, size_t i)
{
	char *text = NULL;
	json_t *j;

	if (relay_app_rule_pattern_json(a, i, &text))
		return NULL;
	j = json_loads(text, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
	relay_free(text);
	return j;
}

/* "2026-12-03 06:00 +01:00" for instant @t in @c's zone. */
static void local_time(const relay_cron *c, int64_t t, char *buf,
		       size_t size)
{
	int32_t off = relay_cron_utc_offset(c, t);
	time_t lt = (time_t)(t + off);
	struct tm tm;
	int32_t a = off < 0 ? -off : off;

	gmtime_r(&lt, &tm);
	snprintf(buf, size, "%04d-%02d-%02d %02d:%02d %c%02d:%02d",
		 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
		 tm.tm_min, off < 0 ? '-' : '+', (int)(a / 3600),
		 (int)(a % 3600 / 60));
}

/* Fill @out with up to NEXT_FIRINGS instants; returns how many, or -1
 * with @err set when the expression or zone does not parse. */
static int next_firings(const relay_app_schedule *s, int64_t *out,
			relay_cron **cp, relay_error *err)
{
	int64_t t = relayctl_now_ms() / 1000;
	int n;

	if (relay_cron_parse(cp, relay_app_schedule_cron(s),
			     relay_app_schedule_timezone(s), err))
		return -1;
	for (n = 0; n < NEXT_FIRINGS; n++) {
		if (relay_cron_next(*cp, t, &out[n]))
			break;
		t = out[n];
	}
	return n;
}

static void print_next(const relay_app_schedule *s)
{
	int64_t at[NEXT_FIRINGS];
	relay_cron *c = NULL;
	relay_error err;
	char loc[64], utc[40];
	int i, n = next_firings(s, at, &c, &err);

	if (n < 0) {
		char *t = relayctl_clean(err.text);

		printf("    next: []  # cron does not parse: %s\n",
		       t ? t : "");
		free(t);
		return;
	}
	puts(n ? "    next:" : "    next: []  # never fires");
	for (i = 0; i < n; i++) {
		local_time(c, at[i], loc, sizeof(loc));
		printf("      - %s  # %s\n", loc,
		       relayctl_fmt_time(at[i] * 1000, utc, sizeof(utc)));
	}
	relay_cron_free(c);
}

static json_t *next_json(const relay_app_schedule *s)
{
	int64_t at[NEXT_FIRINGS];
	relay_cron *c = NULL;
	relay_error err;
	char utc[40];
	json_t *list = json_array();
	int i, n = next_firings(s, at, &c, &err);

	for (i = 0; i < n; i++)
		json_array_append_new(list, json_string(relayctl_fmt_time(
			at[i] * 1000, utc, sizeof(utc))));
	relay_cron_free(c);
	return list;
}

static void print_text(const struct view *v)
{
	const relay_app *a = v->app;
	char buf[256], ts[128];
	size_t i, n;
	int64_t mt = appinfo_mtime(v->dir);

	relayctl_kv(stdout, W, "Name", v->name);
	relayctl_kv(stdout, W, "Status", v->status);
	if (json_array_size(v->errors) == 0)
		relayctl_kv(stdout, W, "Last error", "none");
	for (i = 0; i < json_array_size(v->errors); i++)
		relayctl_kv(stdout, W, i ? "" : "Last error",
			    json_string_value(json_array_get(v->errors, i)));
	relayctl_kv(stdout, W, "Directory", v->dir);
	if (mt >= 0) {
		relayctl_fmt_time(mt, buf, sizeof(buf));
		relayctl_kv(stdout, W, "Updated",
			    relayctl_fmt_time_age(buf, ts, sizeof(ts)));
	}
	if (!a)
		return;
	relayctl_kv(stdout, W, "Runtime",
		    relay_app_runtime_name(relay_app_runtime(a)));
	if (relay_app_command(a, NULL)) {
		const char *const *argv = relay_app_command(a, NULL);
		char cmd[1024] = "";

		for (i = 0; argv[i]; i++)
			snprintf(cmd + strlen(cmd), sizeof(cmd) - strlen(cmd),
				 "%s%s", i ? " " : "", argv[i]);
		relayctl_kv(stdout, W, "Command", cmd);
	}
	snprintf(buf, sizeof(buf), "%d", relay_app_concurrency(a));
	relayctl_kv(stdout, W, "Concurrency", buf);
	relayctl_kv(stdout, W, "Network", relay_app_network(a) ? "yes"
							       : "no");
	relayctl_kv(stdout, W, "Memory", fmt_memory(relay_app_memory(a), buf,
						    sizeof(buf)));
	if (relay_app_cpus_milli(a)) {
		size_t k;

		snprintf(buf, sizeof(buf), "%u.%03u",
			 relay_app_cpus_milli(a) / 1000,
			 relay_app_cpus_milli(a) % 1000);
		k = strlen(buf);
		while (buf[k - 1] == '0')
			buf[--k] = '\0';
		if (buf[k - 1] == '.')
			buf[k - 1] = '\0';
	}
	relayctl_kv(stdout, W, "CPUs",
		    relay_app_cpus_milli(a) ? buf : "unlimited");
	snprintf(buf, sizeof(buf), "%u", relay_app_pids(a));
	relayctl_kv(stdout, W, "PIDs", relay_app_pids(a) ? buf : "unlimited");
	n = relay_app_env_count(a);
	{
		char env[2048] = "";

		for (i = 0; i < n; i++) {
			const char *name = NULL;

			relay_app_env_at(a, i, &name, NULL);
			snprintf(env + strlen(env), sizeof(env) - strlen(env),
				 "%s%s", i ? ", " : "", name);
		}
		relayctl_kv(stdout, W, "Env", n ? env : "none");
	}
	n = relay_app_rule_count(a);
	if (n)
		puts("Rules:");
	else
		relayctl_kv(stdout, W, "Rules", "none");
	for (i = 0; i < n; i++) {
		const relay_app_rule *r = relay_app_rule_at(a, i);

		printf("  - handler: %s\n", relayctl_c(relay_app_rule_handler(r)));
		printf("    timeout: %s\n", relay_app_format_duration(
			relay_app_rule_timeout_ms(r), buf, sizeof(buf)));
		printf("    retries: %d\n", relay_app_rule_retries(r));
		puts("    pattern:");
		if (print_pattern(a, i, 6))
			printf("      # see %s line %d\n",
			       relayctl_c(relay_app_template_path(a)),
			       relay_app_rule_line(r));
	}
	n = relay_app_schedule_count(a);
	if (n)
		puts("Schedules:");
	else
		relayctl_kv(stdout, W, "Schedules", "none");
	for (i = 0; i < n; i++) {
		const relay_app_schedule *s = relay_app_schedule_at(a, i);

		printf("  - name: %s\n", relayctl_c(relay_app_schedule_name(s)));
		printf("    handler: %s\n",
		       relayctl_c(relay_app_schedule_handler(s)));
		printf("    cron: \"%s\"\n", relayctl_c(relay_app_schedule_cron(s)));
		printf("    timezone: %s\n",
		       relayctl_c(relay_app_schedule_timezone(s)));
		printf("    timeout: %s\n", relay_app_format_duration(
			relay_app_schedule_timeout_ms(s), buf, sizeof(buf)));
		printf("    retries: %d\n", relay_app_schedule_retries(s));
		print_next(s);
	}
}

static json_t *to_json(const struct view *v)
{
	const relay_app *a = v->app;
	json_t *o, *list;
	char ts[40];
	size_t i;
	int64_t mt = appinfo_mtime(v->dir);

	o = json_pack("{s:s, s:s, s:O, s:s}", "name", v->name, "status",
		      v->status, "errors", v->errors, "dir", v->dir);
	if (!o)
		return NULL;
	json_object_set_new(o, "updated", mt < 0 ? json_null()
			    : json_string(relayctl_fmt_time(mt, ts,
							    sizeof(ts))));
	if (!a)
		return o;
	json_object_set_new(o, "runtime", json_string(
		relay_app_runtime_name(relay_app_runtime(a))));
	list = json_array();
	if (relay_app_command(a, NULL))
		for (i = 0; relay_app_command(a, NULL)[i]; i++)
			json_array_append_new(list, json_string(
				relay_app_command(a, NULL)[i]));
	json_object_set_new(o, "command", list);
	json_object_set_new(o, "concurrency",
			    json_integer(relay_app_concurrency(a)));
	json_object_set_new(o, "network", json_boolean(relay_app_network(a)));
	json_object_set_new(o, "resources", json_pack("{s:I, s:f, s:I}",
		"memory_bytes", (json_int_t)relay_app_memory(a),
		"cpus", relay_app_cpus_milli(a) / 1000.0,
		"pids", (json_int_t)relay_app_pids(a)));
	list = json_array();
	for (i = 0; i < relay_app_env_count(a); i++) {
		const char *name = NULL;

		relay_app_env_at(a, i, &name, NULL);
		json_array_append_new(list, json_string(name));
	}
	json_object_set_new(o, "env", list);
	list = json_array();
	for (i = 0; i < relay_app_rule_count(a); i++) {
		const relay_app_rule *r = relay_app_rule_at(a, i);
		json_t *p = pattern_json(a, i);

		json_array_append_new(list, json_pack("{s:s, s:I, s:i, s:o}",
			"handler", relay_app_rule_handler(r), "timeout_ms",
			(json_int_t)relay_app_rule_timeout_ms(r), "retries",
			relay_app_rule_retries(r), "pattern",
			p ? p : json_null()));
	}
	json_object_set_new(o, "rules", list);
	list = json_array();
	for (i = 0; i < relay_app_schedule_count(a); i++) {
		const relay_app_schedule *s = relay_app_schedule_at(a, i);

		json_array_append_new(list, json_pack(
			"{s:s, s:s, s:s, s:s, s:I, s:i, s:o}",
			"name", relay_app_schedule_name(s),
			"handler", relay_app_schedule_handler(s),
			"cron", relay_app_schedule_cron(s),
			"timezone", relay_app_schedule_timezone(s),
			"timeout_ms",
			(json_int_t)relay_app_schedule_timeout_ms(s),
			"retries", relay_app_schedule_retries(s),
			"next", next_json(s)));
	}
	json_object_set_new(o, "schedules", list);
	return o;
}

static int parse(int argc, char **argv, struct relayctl_conf *c,
		 const char **name)
{
	int i;

	relayctl_conf_init(c);
	*name = NULL;
	for (i = 1; i < argc; i++) {
		int m = relayctl_conf_arg(c, argc, argv, &i, "app inspect", 1,
					  usage);

		if (m == RELAYCTL_ARG_HELP)
			return -1;
		if (m == RELAYCTL_ARG_TAKEN)
			continue;
		if (m == RELAYCTL_ARG_BAD ||
		    relayctl_positional("app inspect", argv[i], name))
			goto usage_error;
	}
	if (*name)
		return 0;
	relayctl_error(RELAYCTL_USAGE, "app inspect: NAME is required");
usage_error:
	usage(stderr);
	return RELAYCTL_USAGE;
}

int relayctl_cmd_app_inspect(int argc, char **argv)
{
	struct relayctl_conf c;
	struct view v;
	json_t *apps = NULL, *info = NULL, *local;
	int rc, online;

	memset(&v, 0, sizeof(v));
	rc = parse(argc, argv, &c, &v.name);
	if (rc)
		return rc < 0 ? RELAYCTL_OK : rc;
	online = appinfo_fetch(&c, "app inspect", &apps);
	if (online < 0)
		return RELAYCTL_FAIL;
	if (online)
		info = appinfo_find(apps, v.name);
	if (info && json_string_value(json_object_get(info, "dir")))
		snprintf(v.dir, sizeof(v.dir), "%s", json_string_value(
			 json_object_get(info, "dir")));
	else
		appinfo_dir(c.apps, v.name, v.dir, sizeof(v.dir));
	local = json_array();
	if (!relay_app_name_valid(v.name) || appinfo_mtime(v.dir) < 0) {
		if (!info) {
			json_decref(local);
			json_decref(apps);
			return relayctl_error(RELAYCTL_FAIL, "app inspect: "
					      "unknown app \"%s\" (no %s/"
					      "template.yaml%s)", v.name,
					      v.dir, online ? ", and relayd "
					      "has no such app" : "");
		}
	} else if (relay_app_load(&v.app, v.dir, collect, local) != 0) {
		v.app = NULL;
	}
	if (info) {
		v.status = appinfo_status(json_string_value(
			json_object_get(info, "status")));
		v.errors = json_is_array(json_object_get(info, "errors"))
			   ? json_object_get(info, "errors") : local;
		if (json_array_size(v.errors) == 0)
			v.errors = local;
	} else {
		v.status = v.app ? "offline" : "invalid";
		v.errors = local;
	}
	if (c.json) {
		json_t *o = to_json(&v);

		if (relayctl_put_json(o, JSON_INDENT(2) |
				      JSON_PRESERVE_ORDER))
			rc = relayctl_error(RELAYCTL_FAIL, "app inspect: out "
					    "of memory");
		json_decref(o);
	} else {
		print_text(&v);
	}
	if (fflush(stdout))
		rc = RELAYCTL_FAIL;
	relay_app_free(v.app);
	json_decref(local);
	json_decref(apps);
	return rc;
}
