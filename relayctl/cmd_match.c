/*
 * cmd_match.c - relayctl match [--apps DIR] EVENT_FILE|-
 *
 * Prints "<app>/<handler>" for each rule the event matches, in dispatch
 * order (apps by name, rules in declaration order), through the same
 * relay_appset_match() path relayd uses. Nothing is printed when no rule
 * matches; the exit status is still 0. With --explain every rule is
 * listed (relayctl_match_explain()): a match with the conditions that
 * decided it, a miss with the first condition that failed. Any invalid
 * template fails the whole command (exit 1, validate-style lines),
 * because matching against a partial set would silently drop rules.
 *
 * A schedule occurrence ("source":"relay.schedule" at the top level) is
 * classified by relayd's own rule (relay_schedule_is_occurrence()): never
 * pattern-matched; a malformed one fails as relayd would dead-letter it
 * (relay_schedule_occurrence_parse(), the engine's check).
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmdutil.h"
#include "ctlconf.h"
#include "fmt.h"
#include "relay/occurrence.h"
#include "matchexplain.h"
#include "relayctl.h"

/*
 * relayd never pattern-matches a schedule occurrence: it runs the named
 * schedule's handler, or dead-letters a malformed occurrence. Say which,
 * and print no rule. Returns the exit status.
 */
static int schedule_event(const char *what, const char *json, size_t len)
{
	relay_schedule_occurrence *o = NULL;
	relay_error err;
	int rc;

	rc = relay_schedule_occurrence_parse(&o, json, len, &err);
	if (rc == 0)
		fprintf(stderr, "match: %s: a schedule occurrence of %s/%s at "
			"%s: relayd runs that schedule's handler, never "
			"pattern rules\n", what, o->app, o->schedule,
			o->scheduled_at);
	relay_schedule_occurrence_free(o);
	if (rc == RELAY_ENOMEM)
		return relayctl_error(RELAYCTL_FAIL, "match: out of memory");
	if (rc)
		return relayctl_error(RELAYCTL_FAIL, "match: %s: malformed "
				      "schedule occurrence: %s (relayd "
				      "dead-letters it)", what, err.text);
	return RELAYCTL_OK;
}

static void usage(FILE *f)
{
	fputs("usage: relayctl match [--apps DIR] [--now TIME] [--explain] "
	      "EVENT_FILE|-\n\n"
	      "Print <app>/<handler> for each rule the JSON event matches, in\n"
	      "dispatch order. \"-\" reads the event from stdin.\n\n"
	      "  --apps DIR  the apps directory ($RELAY_APPS_DIR, default\n"
	      "              /etc/relay/apps)\n"
	      "  --now TIME  evaluate now() at TIME: Unix milliseconds or an\n"
	      "              RFC 3339 time (default: the wall clock)\n"
	      "  --explain   list every rule: under a match, which\n"
	      "              alternative of which field held\n"
	      "              (\"  state[0]: anything-but [...]\"); under\n"
	      "              \"<app>/<handler>: no match\", the first\n"
	      "              condition that failed\n"
	      "  -h, --help  show this help\n\n"
	      "Exit status: 0 success (also when nothing matches), 1 invalid\n"
	      "template or event, 2 usage error.\n",
	      f);
}

static int parse_now(const char *s, relay_wall_ms *now)
{
	int64_t v;

	if (relayctl_parse_when_ms(s, &v))
		return -1;
	*now = v;
	return 0;
}

static void explain_line(void *arg, const char *path, size_t alt,
			 const char *what)
{
	(void)arg;
	(void)alt;
	printf("  %s: %s\n", relayctl_c(path), relayctl_c(what));
}

/* Is rule @rule of @app among the @n matches @v? */
static bool matched(const relay_app_match *v, size_t n, const relay_app *app,
		    const relay_app_rule *rule)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (v[i].app == app && v[i].rule == rule)
			return true;
	return false;
}

/*
 * --explain (also publish --explain, matchexplain.h): every rule of
 * every app, in dispatch order (apps by name, rules in declaration
 * order, so the matching rules' lines come in the order of a plain
 * run). A matching rule is followed by the conditions that decided it;
 * a rule that did not match is "<app>/<handler>: no match" and the
 * first condition that failed ("  status: got "X"; wanted "Y""). @ev is
 * the decoded event: NULL (and nothing explained) if jansson refuses a
 * text the raw matcher accepted.
 */
void relayctl_match_explain(const relay_appset *set,
			    const relay_app_match *v, size_t n,
			    const json_t *ev, relay_wall_ms now)
{
	size_t k, r;

	for (k = 0; k < relay_appset_entry_count(set); k++) {
		const relay_app *app = relay_appset_entry_app(set, k);

		for (r = 0; app && r < relay_app_rule_count(app); r++) {
			const relay_app_rule *rule = relay_app_rule_at(app, r);
			const relay_pattern *p = relay_app_rule_pattern(rule);
			bool hit = matched(v, n, app, rule);

			printf("%s/%s%s\n", relayctl_c(relay_app_name(app)),
			       relayctl_c(relay_app_rule_handler(rule)),
			       hit ? "" : ": no match");
			if (ev && hit)
				relay_pattern_explain(p, ev, now, explain_line,
						      NULL);
			else if (ev)
				relay_pattern_explain_miss(p, ev, now,
							   explain_line, NULL);
		}
	}
}

static int run(relay_appset *set, const char *event_path, relay_wall_ms now,
	       bool explain)
{
	json_t *ev = NULL;
	relay_matcher *m = NULL;
	relay_app_match *v = NULL;
	size_t n = 0, i, len;
	char *json = NULL;
	const char *what;
	int rc;

	rc = relayctl_read_all("match", event_path, &json, &len);
	if (rc)
		return rc;
	what = strcmp(event_path, "-") ? event_path : "stdin";
	if (relay_schedule_is_occurrence(json, len)) {
		rc = schedule_event(what, json, len);
		goto done;
	}
	if (relay_matcher_new(&m, relay_appset_ruleset(set))) {
		rc = relayctl_error(RELAYCTL_FAIL, "match: out of memory");
		goto done;
	}
	rc = relay_appset_match(set, m, json, len, now, &v, &n);
	if (rc == RELAY_EPARSE) {
		rc = relayctl_error(RELAYCTL_FAIL, "match: %s: invalid JSON: "
				    "%s", what, relay_matcher_errstr(m));
		goto done;
	}
	if (rc == RELAY_ETYPE) {
		rc = relayctl_error(RELAYCTL_FAIL, "match: %s: the event is "
				    "not a JSON object", what);
		goto done;
	}
	if (rc) {
		rc = relayctl_error(RELAYCTL_FAIL, "match: %s",
				    relay_strerror(rc));
		goto done;
	}
	if (explain) {
		ev = json_loadb(json, len, JSON_ALLOW_NUL, NULL);
		relayctl_match_explain(set, v, n, ev, now);
	}
	for (i = 0; !explain && i < n; i++)
		printf("%s/%s\n", relayctl_c(relay_app_name(v[i].app)),
		       relayctl_c(relay_app_rule_handler(v[i].rule)));
	rc = fflush(stdout) ? RELAYCTL_FAIL : RELAYCTL_OK;
done:
	json_decref(ev);
	relay_free(v);
	relay_matcher_free(m);
	free(json);
	return rc;
}

int relayctl_cmd_match(int argc, char **argv)
{
	const char *dir = NULL, *event = NULL, *now_s = NULL;
	relay_wall_ms now = relay_clock_wall_ms(NULL);
	relay_appset *set = NULL;
	bool explain = false;
	int i, rc;

	for (i = 1; i < argc; i++) {
		const char *v;
		int o;

		if (relayctl_is_help(argv[i])) {
			usage(stdout);
			return RELAYCTL_OK;
		}
		if (strcmp(argv[i], "--explain") == 0) {
			explain = true;
			continue;
		}
		o = relayctl_opt_value(argc, argv, &i, "--apps", "match", &v);
		if (o > 0)
			dir = v;
		if (o == 0) {
			o = relayctl_opt_value(argc, argv, &i, "--now", "match",
					       &v);
			if (o > 0)
				now_s = v;
		}
		if (o < 0)
			goto usage_error;
		if (o > 0)
			continue;
		if (relayctl_unknown_option("match", argv[i]))
			goto usage_error;
		if (event) {
			relayctl_error(RELAYCTL_USAGE, "match: more than one "
				       "event file");
			goto usage_error;
		}
		event = argv[i];
	}
	if (!dir)
		dir = relayctl_apps_dir();
	if (!*dir || !event) {
		relayctl_error(RELAYCTL_USAGE, "match: %s",
			       !*dir ? "--apps needs a non-empty value" :
				       "EVENT_FILE|- is required");
		goto usage_error;
	}
	if (now_s && parse_now(now_s, &now)) {
		relayctl_error(RELAYCTL_USAGE, "match: --now takes Unix "
			       "milliseconds or an RFC 3339 time "
			       "(2026-01-31T12:00:00Z), not \"%s\"", now_s);
		goto usage_error;
	}
	rc = relayctl_load_apps(&set, "match", dir);
	if (rc)
		return rc;
	if (relay_appset_invalid_count(set))
		rc = RELAYCTL_FAIL;
	else
		rc = run(set, event, now, explain);
	relay_appset_free(set);
	return rc;

usage_error:
	usage(stderr);
	return RELAYCTL_USAGE;
}
