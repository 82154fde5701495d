/*
 * cmd_app_invoke.c - relayctl app invoke NAME [--event JSON|--file PATH]
 * [--output]
 *
 * Asks the running relayd ({"cmd":"app invoke"}, doc/protocol.md) to run
 * every rule of app NAME that matches the event, once each, with the
 * app's current template: a manual run outside the stream lifecycle (no
 * Redis, no invocation state, no retries, no DLQ). The event comes from
 * --event, --file or stdin (only when stdin is not a terminal); the two
 * flags exclude each other (exit 2). It must be a JSON object (exit 1).
 *
 * Prints "No matching handlers", or "Invoked N handler(s)" and one line
 * per run ("  app/handler ok 12ms", "  app/handler failed 40ms (exit
 * status 3)"). Exit 1 when any run failed. With --output the handlers'
 * output lines relayd sends back come first, as `dlq replay` and `app
 * run` print them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmdutil.h"
#include "fmt.h"
#include "ctlconf.h"
#include "ctlsock.h"
#include "relayctl.h"

#define INVOKE_TIMEOUT_MS (10 * 60 * 1000)

static void usage(FILE *f)
{
	fprintf(f, "usage: relayctl app invoke NAME [--event JSON | --file "
		"PATH] [--output]\n"
		"                           [connection options]\n\n"
		"Ask the running relayd to run app NAME's handlers that "
		"match the\n"
		"event, once each (no Redis, no retries, no DLQ). The event "
		"is\n"
		"--event JSON, the contents of --file PATH, or stdin when it "
		"is not a\nterminal; it must be a JSON object.\n\n"
		"  --event JSON       the event itself\n"
		"  --file PATH        read the event from PATH\n"
		"  --output           print the handlers' output lines first\n"
		"                     (stdout and stderr, as relayd logs "
		"them)\n"
		"%s"
		"  -h, --help         show this help\n\n"
		"Exit status: 0 every handler succeeded (or none matched), 1 "
		"a handler\n"
		"failed, unknown app, invalid event or relayd not reachable, "
		"2 usage\nerror.\n", relayctl_conf_help);
}

struct opts {
	struct relayctl_conf c;
	const char *name, *event, *file;
	int output;
};

static int parse(int argc, char **argv, struct opts *o)
{
	static const char *const names[] = { "--event", "--file" };
	const char **slots[] = { &o->event, &o->file };
	int i;
	size_t k;

	relayctl_conf_init(&o->c);
	for (i = 1; i < argc; i++) {
		const char *v;
		int m = relayctl_conf_arg(&o->c, argc, argv, &i, "app invoke",
					  0, usage);

		if (m == RELAYCTL_ARG_HELP)
			return -1;
		if (m == RELAYCTL_ARG_OTHER &&
		    strcmp(argv[i], "--output") == 0) {
			o->output = 1;
			continue;
		}
		for (k = 0; k < 2 && m == RELAYCTL_ARG_OTHER; k++) {
			m = relayctl_opt_value(argc, argv, &i, names[k],
					       "app invoke", &v);
			if (m > 0 && *slots[k])
				goto twice;
			if (m > 0)
				*slots[k] = v;
		}
		if (m < 0)
			goto usage_error;
		if (m > 0)
			continue;
		if (relayctl_positional("app invoke", argv[i], &o->name))
			goto usage_error;
	}
	if (!o->name) {
		relayctl_error(RELAYCTL_USAGE, "app invoke: NAME is required");
		goto usage_error;
	}
	if (o->event && o->file) {
		relayctl_error(RELAYCTL_USAGE, "app invoke: --event and --file "
			       "exclude each other");
		goto usage_error;
	}
	if (!o->event && !o->file && isatty(STDIN_FILENO)) {
		relayctl_error(RELAYCTL_USAGE, "app invoke: no event: pass "
			       "--event JSON or --file PATH, or pipe it on "
			       "stdin");
		goto usage_error;
	}
	return 0;
twice:
	relayctl_error(RELAYCTL_USAGE, "app invoke: %s given twice", names[k]);
usage_error:
	usage(stderr);
	return RELAYCTL_USAGE;
}

/*
 * The event text, checked to be a JSON object; NULL after printing why.
 * relayd gets the text itself (as a JSON string), so the handlers see the
 * bytes given: key order, number spelling and integers too large for the
 * checking parser are kept (relayd's own parser has the last word).
 */
static char *read_event(const struct opts *o)
{
	const char *what = o->event ? "--event" : o->file ? o->file : "stdin";
	json_error_t jerr;
	char *text = NULL;
	size_t len;
	json_t *ev;

	if (o->event) {
		text = strdup(o->event);
		len = strlen(o->event);
		if (!text) {
			relayctl_error(RELAYCTL_FAIL, "app invoke: out of "
				       "memory");
			return NULL;
		}
	} else if (relayctl_read_all("app invoke", o->file ? o->file : "-",
				     &text, &len)) {
		return NULL;
	}
	ev = json_loadb(text, len, 0, &jerr);
	if (!ev && (strstr(jerr.text, "too big") ||
		    strstr(jerr.text, "overflow")) &&
	    text[strspn(text, " \t\r\n")] == '{')
		return text;
	if (!ev || !json_is_object(ev)) {
		if (ev)
			relayctl_error(RELAYCTL_FAIL, "app invoke: %s: the "
				       "event is not a JSON object", what);
		else
			relayctl_error(RELAYCTL_FAIL, "app invoke: %s: invalid "
				       "JSON at line %d column %d: %s", what,
				       jerr.line, jerr.column, jerr.text);
		json_decref(ev);
		free(text);
		return NULL;
	}
	json_decref(ev);
	if (strlen(text) != len) {
		free(text);
		relayctl_error(RELAYCTL_FAIL, "app invoke: %s: the event holds "
			       "a NUL byte", what);
		return NULL;
	}
	return text;
}

static int print_results(json_t *resp)
{
	json_t *res = json_object_get(resp, "results"), *r;
	size_t i, n = json_array_size(res);
	int failed = 0;

	if (n == 0) {
		puts("No matching handlers");
		return fflush(stdout) ? RELAYCTL_FAIL : RELAYCTL_OK;
	}
	printf("Invoked %zu handler(s)\n", n);
	json_array_foreach(res, i, r) {
		const char *st = relayctl_jstr(r, "status", "?");
		const char *why = relayctl_jstr(r, "reason", "");
		long long ms = (long long)json_integer_value(
			json_object_get(r, "duration_ms"));

		if (strcmp(st, "ok") != 0)
			failed = 1;
		printf("  %s/%s %s %lldms%s%s%s\n",
		       relayctl_c(relayctl_jstr(r, "app", "?")),
		       relayctl_c(relayctl_jstr(r, "handler", "?")),
		       relayctl_c(st), ms,
		       *why && strcmp(st, "ok") ? " (" : "",
		       strcmp(st, "ok") ? relayctl_c(why) : "",
		       *why && strcmp(st, "ok") ? ")" : "");
	}
	if (fflush(stdout))
		return RELAYCTL_FAIL;
	return failed ? RELAYCTL_FAIL : RELAYCTL_OK;
}

int relayctl_cmd_app_invoke(int argc, char **argv)
{
	struct opts o;
	char path[4200], why[1024];
	const char *code;
	json_t *req, *resp;
	char *ev;
	int rc;

	memset(&o, 0, sizeof(o));
	rc = parse(argc, argv, &o);
	if (rc)
		return rc < 0 ? RELAYCTL_OK : rc;
	ev = read_event(&o);
	if (!ev)
		return RELAYCTL_FAIL;
	req = json_pack("{s:s, s:s, s:s}", "cmd", "app invoke", "app",
			o.name, "event", ev);
	/* Only when asked: the answer of an older relayctl stays as it was. */
	if (req && o.output)
		json_object_set_new(req, "output", json_true());
	free(ev);
	if (!req)
		return relayctl_error(RELAYCTL_FAIL, "app invoke: out of "
				      "memory");
	relayctl_sock_path(&o.c, path, sizeof(path));
	resp = relayctl_ctl_call(path, req, INVOKE_TIMEOUT_MS, why,
				 sizeof(why));
	if (!resp)
		return relayctl_error(RELAYCTL_FAIL, "app invoke: %s", why);
	code = relayctl_ctl_failed(resp, why, sizeof(why));
	if (code && strcmp(code, "not_found") == 0)
		rc = relayctl_error(RELAYCTL_FAIL, "app invoke: unknown app "
				    "\"%s\" (not loaded by relayd, or its "
				    "template is invalid)", o.name);
	else if (code)
		rc = relayctl_error(RELAYCTL_FAIL, "app invoke: %s", why);
	if (!code && o.output)
		relayctl_put_run_output(resp, "app invoke");
	if (!code)
		rc = print_results(resp);
	json_decref(resp);
	return rc;
}
