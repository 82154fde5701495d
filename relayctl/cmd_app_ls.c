/*
 * cmd_app_ls.c - relayctl app ls [--json]
 *
 * NAME RUNTIME STATUS RULES UPDATED, sorted by name. From the running
 * relayd when it answers on its control socket (STATUS ready; stale, the
 * previous version serving because the template on disk is invalid; or
 * invalid; the template problems on stderr); otherwise from the apps
 * directory (STATUS offline, or invalid). UPDATED is the age of the app's
 * template.yaml. --json: an array of {"name", "runtime", "status",
 * "rules", "updated", "errors"}.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "appinfo.h"
#include "cmdutil.h"
#include "ctlsock.h"
#include "ctlconf.h"
#include "fmt.h"
#include "relay/app.h"
#include "relayctl.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: relayctl app ls [--json] [connection options]\n\n"
		"List the apps: NAME RUNTIME STATUS RULES UPDATED, by name. "
		"STATUS\n"
		"comes from the running relayd (ready; stale: the previous "
		"version\nserves, the template on disk is invalid; invalid; "
		"...), or is offline\n"
		"when relayd is not running and the apps directory is read "
		"instead.\n\n"
		"  --json             a JSON array, one object per app\n%s"
		"  -h, --help         show this help\n\n"
		"Exit status: 0 success, 1 relayd or apps directory problem, "
		"2 usage\nerror.\n", relayctl_conf_help);
}

struct row {
	char name[256], runtime[32], status[32], rules[24], updated[64];
	json_t *errors;    /* array of strings (borrowed or owned) */
};

static int emit(relayctl_table *t, json_t *list, const struct row *r,
		int64_t mtime)
{
	const char *cells[5];
	char ts[40];

	if (list) {
		json_t *o = json_pack("{s:s, s:s, s:s}", "name", r->name,
				      "runtime", r->runtime, "status",
				      r->status);

		if (!o)
			return -1;
		json_object_set_new(o, "rules", r->rules[0] == '-'
				    ? json_null()
				    : json_integer(atoll(r->rules)));
		json_object_set_new(o, "updated", mtime < 0 ? json_null() :
				    json_string(relayctl_fmt_time(mtime, ts,
								  sizeof(ts))));
		json_object_set_new(o, "errors", r->errors
				    ? json_incref(r->errors) : json_array());
		return json_array_append_new(list, o);
	}
	cells[0] = r->name;
	cells[1] = r->runtime;
	cells[2] = r->status;
	cells[3] = r->rules;
	cells[4] = r->updated;
	return relayctl_table_add(t, cells);
}

static void set_updated(struct row *r, int64_t mtime, int64_t now)
{
	char age[32];

	if (mtime < 0)
		snprintf(r->updated, sizeof(r->updated), "-");
	else
		snprintf(r->updated, sizeof(r->updated), "%s ago",
			 relayctl_fmt_age((now - mtime) / 1000, age,
					  sizeof(age)));
}

static void warn_errors(const char *name, json_t *errors)
{
	json_t *e;
	size_t i;

	json_array_foreach(errors, i, e) {
		char *c = relayctl_clean(json_string_value(e));

		fprintf(stderr, "relayctl: app ls: %s: %s\n", name,
			c ? c : "");
		free(c);
	}
}

/* From relayd's list (already in name order). */
static int from_relayd(const struct relayctl_conf *c, json_t *apps,
		       relayctl_table *t, json_t *list)
{
	int64_t now = relayctl_now_ms();
	char dir[4200];
	json_t *a;
	size_t i;

	json_array_foreach(apps, i, a) {
		struct row r;
		json_t *h = json_object_get(a, "handlers");
		const char *d = json_string_value(json_object_get(a, "dir"));
		int64_t mtime;

		memset(&r, 0, sizeof(r));
		snprintf(r.name, sizeof(r.name), "%s",
			 relayctl_jstr(a, "name", "?"));
		snprintf(r.runtime, sizeof(r.runtime), "%s",
			 relayctl_jstr(a, "runtime", "-"));
		snprintf(r.status, sizeof(r.status), "%s", appinfo_status(
			 json_string_value(json_object_get(a, "status"))));
		if (json_is_array(h))
			snprintf(r.rules, sizeof(r.rules), "%zu",
				 json_array_size(h));
		else
			snprintf(r.rules, sizeof(r.rules), "-");
		mtime = appinfo_mtime(d ? d : appinfo_dir(c->apps, r.name, dir,
							  sizeof(dir)));
		set_updated(&r, mtime, now);
		r.errors = json_object_get(a, "errors");
		if (r.errors && !list)
			warn_errors(r.name, r.errors);
		if (emit(t, list, &r, mtime))
			return -1;
	}
	return 0;
}

/* Template problems show as the app's status; a directory skipped for
 * its name (no entry) is mentioned, its name escaped. */
static void quiet(const char *app, const relay_error *err, void *payload)
{
	char *c;

	(void)payload;
	if (app || err->code != RELAY_EINVAL)
		return;
	c = relayctl_clean(err->text);
	fprintf(stderr, "relayctl: app ls: %s\n", c ? c : "");
	free(c);
}

/* From the apps directory: relayd is not running. */
static int from_dir(const struct relayctl_conf *c, relayctl_table *t,
		    json_t *list)
{
	int64_t now = relayctl_now_ms();
	relay_appset *set = NULL;
	char dir[4200], buf[RELAY_ERROR_PATH_MAX + RELAY_ERROR_TEXT_MAX + 32];
	size_t i, j, n;
	int rc = 0;

	rc = relay_appset_load(&set, c->apps, quiet, NULL);
	if (rc) {
		relayctl_error(RELAYCTL_FAIL, "app ls: relayd is not running "
			       "and the apps directory %s cannot be read: %s",
			       c->apps, relay_strerror(rc));
		return 1;
	}
	n = relay_appset_entry_count(set);
	for (i = 0; i < n && rc == 0; i++) {
		const relay_app *app = relay_appset_entry_app(set, i);
		struct row r;
		int64_t mtime;

		memset(&r, 0, sizeof(r));
		snprintf(r.name, sizeof(r.name), "%s",
			 relay_appset_entry_name(set, i));
		if (app) {
			relay_app_runtime_kind k = relay_app_runtime(app);

			snprintf(r.runtime, sizeof(r.runtime), "%s",
				 relay_app_runtime_name(k));
			snprintf(r.status, sizeof(r.status), "offline");
			snprintf(r.rules, sizeof(r.rules), "%zu",
				 relay_app_rule_count(app));
		} else {
			snprintf(r.runtime, sizeof(r.runtime), "-");
			snprintf(r.status, sizeof(r.status), "invalid");
			snprintf(r.rules, sizeof(r.rules), "-");
			r.errors = json_array();
			for (j = 0; j < relay_appset_entry_error_count(set, i);
			     j++)
				json_array_append_new(r.errors, json_string(
					relay_error_format(
						relay_appset_entry_error(set,
									 i, j),
						buf, sizeof(buf))));
			if (!list)
				warn_errors(r.name, r.errors);
		}
		mtime = appinfo_mtime(appinfo_dir(c->apps, r.name, dir,
						  sizeof(dir)));
		set_updated(&r, mtime, now);
		if (emit(t, list, &r, mtime))
			rc = -1;
		json_decref(r.errors);
	}
	relay_appset_free(set);
	return rc;
}

int relayctl_cmd_app_ls(int argc, char **argv)
{
	static const char *const head[] = { "NAME", "RUNTIME", "STATUS",
					    "RULES", "UPDATED" };
	struct relayctl_conf c;
	relayctl_table t;
	json_t *apps = NULL, *list = NULL;
	int rc;

	rc = relayctl_conf_parse(&c, argc, argv, "app ls", 1, usage);
	if (rc)
		return rc < 0 ? RELAYCTL_OK : rc;
	rc = appinfo_fetch(&c, "app ls", &apps);
	if (rc < 0)
		return RELAYCTL_FAIL;
	if (relayctl_table_init(&t, 5, head) ||
	    (c.json && !(list = json_array()))) {
		json_decref(apps);
		relayctl_table_free(&t);
		return relayctl_error(RELAYCTL_FAIL, "app ls: out of memory");
	}
	rc = rc ? from_relayd(&c, apps, &t, list) : from_dir(&c, &t, list);
	if (rc < 0)
		rc = relayctl_error(RELAYCTL_FAIL, "app ls: out of memory");
	if (rc == 0)
		rc = relayctl_put_listing(list, &t);
	json_decref(apps);
	json_decref(list);
	relayctl_table_free(&t);
	return rc;
}
