/*
 * cmd_app_run.c - relayctl app run NAME [--apps DIR] [--event JSON|--file
 * PATH|stdin] [--sandbox bwrap|none]
 *
 * Local development without Redis: load the apps directory, match the
 * event through relay_appset_match() (the daemon's code path), keep the
 * rules of app NAME, and run each matching handler in turn through the
 * runtime, exactly as relayd would (same sandbox, limits, environment,
 * timeout). Forwarded handler output is printed as it arrives, stdout
 * lines on stdout and stderr lines on stderr, with their
 * "[app/handler] stdout: " prefix; then one summary line per invocation:
 *
 *	app/handler ok 12ms
 *	app/handler failed exit=3 40ms
 *	app/handler failed exit=1 40ms (ModuleNotFoundError: No module …)
 *	app/handler failed signal=9 40ms (memory limit exceeded)
 *	app/handler timeout 6000ms
 *
 * With --attempts N each matching handler is run as relayd would retry
 * it, up to N times, stopping at the first success; under each summary a
 * line says which attempt it was and what relayd would do next (retry
 * after its backoff, or dead-letter), and when all N fail, the DLQ entry
 * relayd would write (dlqpreview.c). No attempt waits for the backoff.
 *
 * Exit status: 0 when every invocation succeeded (also when nothing
 * matched: "No matching handlers"), 1 otherwise, 2 usage.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmdutil.h"
#include "ctlconf.h"
#include "dlqpreview.h"
#include "envfile.h"
#include "fmt.h"
#include "relay/clock.h"
#include "relay/invocation.h"
#include "relay/runtime.h"
#include "relayctl.h"

static void usage(FILE *f)
{
	fputs("usage: relayctl app run NAME [--apps DIR] [--event JSON|--file "
	      "PATH] [--sandbox bwrap|none] [--warm]\n"
	      "                        [--attempts N]\n\n"
	      "Run app NAME's handlers that match the event, locally and one\n"
	      "at a time, through the same runtime as relayd (no Redis). The\n"
	      "event is --event JSON, the contents of --file PATH, or stdin.\n\n"
	      "  --apps DIR        the apps directory ($RELAY_APPS_DIR,\n"
	      "                    default /etc/relay/apps)\n"
	      "  --sandbox MODE    bwrap (isolated, the default) or none\n"
	      "                    (plain process); RELAY_SANDBOX=none from\n"
	      "                    the environment or a defaults file is\n"
	      "                    refused as root, ignored otherwise\n"
	      "  --warm            start each handler from a warm parent, as\n"
	      "                    relayd does by default (bwrap only); the\n"
	      "                    default is a cold one-shot start\n"
	      "  --attempts N      run each handler up to N times (1-101) as\n"
	      "                    relayd retries it, stopping at the first\n"
	      "                    success; say the backoff relayd would wait\n"
	      "                    (not waited here) and, when all fail, show\n"
	      "                    the DLQ entry relayd would write\n"
	      "                    (nothing is written)\n"
	      "  -h, --help        show this help\n\n"
	      "Exit status: 0 all handlers succeeded (or none matched), 1 a\n"
	      "handler failed or the app/event is invalid, 2 usage error.\n",
	      f);
}

struct opts {
	const char *name, *apps, *event, *file, *sandbox;
	int warm;
	unsigned int attempts;  /* --attempts N, or 0 */
};

/* --attempts N: 1 to retries' maximum + 1. Returns 0 or -1. */
static int parse_attempts(const char *v, unsigned int *out)
{
	unsigned long n;
	char *end;

	if (*v < '0' || *v > '9')
		return -1;
	n = strtoul(v, &end, 10);
	if (*end || n < 1 || n > 101)
		return -1;
	*out = (unsigned int)n;
	return 0;
}

static int parse(int argc, char **argv, struct opts *o)
{
	static const char *const names[] = { "--apps", "--event", "--file",
					     "--sandbox", "--attempts" };
	const char *attempts = NULL;
	const char **slots[] = { &o->apps, &o->event, &o->file, &o->sandbox,
				 &attempts };
	int i;
	size_t k;

	for (i = 1; i < argc; i++) {
		int m = 0;

		if (relayctl_is_help(argv[i])) {
			usage(stdout);
			return -1;
		}
		if (strcmp(argv[i], "--warm") == 0) {
			o->warm = 1;
			continue;
		}
		for (k = 0; k < 5 && m == 0; k++) {
			m = relayctl_opt_value(argc, argv, &i, names[k],
					       "app run", slots[k]);
		}
		if (m < 0)
			return RELAYCTL_USAGE;
		if (m > 0)
			continue;
		if (relayctl_positional("app run", argv[i], &o->name))
			return RELAYCTL_USAGE;
	}
	if (attempts && parse_attempts(attempts, &o->attempts)) {
		relayctl_error(RELAYCTL_USAGE, "app run: --attempts takes a "
			       "number from 1 to 101, not \"%s\"", attempts);
		return RELAYCTL_USAGE;
	}
	if (!o->apps)
		o->apps = relayctl_apps_dir();
	if (!o->name || !*o->apps) {
		relayctl_error(RELAYCTL_USAGE, "app run: %s",
			       !o->name ? "NAME is required" :
					  "--apps needs a non-empty value");
		return RELAYCTL_USAGE;
	}
	if (o->event && o->file) {
		relayctl_error(RELAYCTL_USAGE, "app run: --event and --file "
			       "are exclusive");
		return RELAYCTL_USAGE;
	}
	if (o->sandbox && strcmp(o->sandbox, "bwrap") != 0 &&
	    strcmp(o->sandbox, "none") != 0) {
		relayctl_error(RELAYCTL_USAGE, "app run: --sandbox must be "
			       "bwrap or none, not \"%s\"", o->sandbox);
		return RELAYCTL_USAGE;
	}
	if (o->warm && o->sandbox && strcmp(o->sandbox, "none") == 0) {
		relayctl_error(RELAYCTL_USAGE, "app run: --warm needs the "
			       "bwrap sandbox");
		return RELAYCTL_USAGE;
	}
	return 0;
}

/* A line of the handler's, printed; with --attempts its stderr bytes
 * are also kept for the DLQ preview (@payload, or NULL). */
static void print_line(const relay_output_line *l, void *payload)
{
	FILE *f = l->stream == RELAY_OUTPUT_STDERR ? stderr : stdout;
	struct relayctl_errtail *tail = payload;

	relayctl_put_output(f, l->text, l->len);
	if (tail && l->stream == RELAY_OUTPUT_STDERR)
		relayctl_errtail_add(tail, l->text + l->prefix_len,
				     l->len - l->prefix_len, l->partial);
}

static void summary(const char *app, const char *handler,
		    const relay_run_outcome *o)
{
	unsigned long ms = (unsigned long)(o->duration_us / 1000);
	const char *oom = strncmp(o->reason, "memory limit", 12) == 0
			  ? " (memory limit exceeded)" : "";
	char why[sizeof(o->reason) + 4];

	/* A reason beyond the exit status: the bootstrap's load error. */
	why[0] = '\0';
	if (!*oom && *o->reason && strncmp(o->reason, "exit status", 11))
		snprintf(why, sizeof(why), " (%s)", relayctl_c(o->reason));

	app = relayctl_c(app);
	handler = relayctl_c(handler);

	if (o->status == RELAY_RUN_OK)
		printf("%s/%s ok %lums\n", app, handler, ms);
	else if (o->status == RELAY_RUN_TIMEOUT)
		printf("%s/%s timeout %lums\n", app, handler, ms);
	else if (o->term_signal)
		printf("%s/%s failed signal=%d %lums%s\n", app, handler,
		       o->term_signal, ms, oom);
	else if (o->exit_code >= 0)
		printf("%s/%s failed exit=%d %lums%s%s\n", app, handler,
		       o->exit_code, ms, oom, why);
	else
		printf("%s/%s failed %lums (%s)\n", app, handler, ms,
		       relayctl_c(o->reason));
	fflush(stdout);
}

/* Run one matched rule once; returns 1 on success. The reason of a
 * failure (the runtime's, as relayd records it) goes to @why; stderr
 * lines to @tail (NULL: not kept). */
static int run_one(relay_runtime *rt, int warm, const relay_app *app,
		   const relay_app_rule *rule, const char *event, size_t len,
		   struct relayctl_errtail *tail, char *why, size_t size)
{
	relay_exec_spec s = RELAY_EXEC_SPEC_INIT;
	relay_run_outcome o = { .version = RELAY_RUN_OUTCOME_VERSION };
	relay_error err;
	int64_t t = relay_app_rule_timeout_ms(rule);

	s.app = relay_app_name(app);
	s.handler = relay_app_rule_handler(rule);
	s.app_dir = relay_app_dir(app);
	s.runtime = relay_app_runtime(app);
	s.argv = relay_app_command(app, NULL);
	s.env = relay_app_envp(app);
	s.network = relay_app_network(app);
	s.memory_bytes = relay_app_memory(app);
	s.cpus_milli = relay_app_cpus_milli(app);
	s.pids = relay_app_pids(app);
	s.tmp_bytes = relay_app_tmp(app);
	s.timeout_ms = t > 0 ? (uint32_t)t : 0;
	s.event = event;
	s.event_len = len;
	s.warm = warm ? RELAY_WARM_REQUIRE : RELAY_WARM_OFF;
	s.generation = relay_app_generation(app);
	if (relay_runtime_run_sync(rt, &s, print_line, tail, &o, &err) != 0) {
		snprintf(why, size, "%s", err.text);
		printf("%s/%s failed 0ms (%s)\n", relayctl_c(s.app),
		       relayctl_c(s.handler), relayctl_c(err.text));
		fflush(stdout);
		/* The runtime says what is wrong; how to fix it is ours. */
		if (err.code == RELAY_EACCESS)
			relayctl_error(RELAYCTL_FAIL, "app run: make %s and its "
				       "parents readable and searchable by the "
				       "sandbox user, set RELAY_SANDBOX_USER to "
				       "a user that can read it, or run with "
				       "--sandbox none (no isolation)",
				       relayctl_c(s.app_dir));
		return 0;
	}
	snprintf(why, size, "%s", *o.reason ? o.reason : "failed");
	summary(s.app, s.handler, &o);
	return o.status == RELAY_RUN_OK;
}

/*
 * One matched rule with --attempts N: attempts 1..N as relayd would make
 * them (its backoff said, not waited), until one succeeds; when all
 * fail, the DLQ entry relayd would write after the last. Returns 1 when
 * an attempt succeeded.
 */
static int run_attempts(relay_runtime *rt, const struct opts *o,
			const relay_app *app, const relay_app_rule *rule,
			const char *event, size_t len)
{
	static struct relayctl_errtail tail;
	unsigned int k, n = o->attempts;
	unsigned int rule_n = (unsigned int)relay_app_rule_retries(rule) + 1;
	char why[200], wait[32];

	for (k = 1; k <= n; k++) {
		memset(&tail, 0, sizeof(tail));
		if (run_one(rt, o->warm, app, rule, event, len, &tail, why,
			    sizeof(why))) {
			printf("  attempt %u/%u succeeded: no more attempts\n",
			       k, n);
			fflush(stdout);
			return 1;
		}
		if (k < n) {
			printf("  attempt %u/%u failed: relayd would retry "
			       "after %s\n", k, n, relay_app_format_duration(
			       relay_inv_backoff_ms(k), wait, sizeof(wait)));
			continue;
		}
		if (n != rule_n)
			printf("  (relayd makes %u attempts of this rule: "
			       "retries: %u)\n", rule_n, rule_n - 1);
		printf("  attempt %u/%u failed: no attempts left; relayd "
		       "would write this DLQ entry (a preview, nothing is "
		       "written to Redis):\n", k, n);
	}
	relayctl_dlq_preview(relay_app_name(app), relay_app_rule_handler(rule),
			     n, why, event, len, &tail);
	return 0;
}

/* The runtime's warnings (a limits fallback, RELAY-RT09; a warm parent
 * that failed, RELAY-RT07) on stderr, as relayd would log them: the
 * app's author learns that a run here is not what relayd would do. */
static void runtime_log(void *payload, relay_log_level lvl, const char *id,
			const char *msg)
{
	(void)payload;
	fprintf(stderr, "relayctl: app run: %s %s: %s\n",
		relay_log_level_name(lvl), id, relayctl_c(msg));
}

static int open_runtime(relay_runtime **rt, const char *sandbox, int warm)
{
	relay_runtime_options ro = RELAY_RUNTIME_OPTIONS_INIT;
	relay_error err;

	ro.logger.fn = runtime_log;
	ro.logger.level = RELAY_LOG_WARN;

	ro.backend = strcmp(sandbox, "none") == 0 ? "process" : "bwrap";
	ro.warm = warm;
	ro.sandbox_user = getenv("RELAY_SANDBOX_USER");  /* as relayd */
	ro.sandbox_uids = getenv("RELAY_SANDBOX_UIDS");  /* likewise */
	if (relay_runtime_new(rt, &ro, &err) != 0)
		return relayctl_error(RELAYCTL_FAIL, "app run: %s%s", err.text,
				      strcmp(sandbox, "bwrap") == 0
				      ? " (--sandbox none runs without "
					"isolation)" : "");
	return 0;
}

static int run(const struct opts *o, const char *sandbox)
{
	relay_appset *set = NULL;
	relay_runtime *rt = NULL;
	relay_app_match *v = NULL;
	const relay_app *app;
	size_t n = 0, i, len = 0, ran = 0, ok = 0;
	char *json = NULL;
	int rc;

	rc = relayctl_load_apps(&set, "app run", o->apps);
	if (rc)
		return rc;
	app = relay_appset_find(set, o->name);
	if (!app) {
		rc = relayctl_error(RELAYCTL_FAIL, "app run: no valid app "
				    "\"%s\" in %s", o->name, o->apps);
		goto done;
	}
	if (o->event) {
		len = strlen(o->event);
		json = malloc(len + 1);
		if (json)
			memcpy(json, o->event, len + 1);
		rc = json ? 0 : relayctl_error(RELAYCTL_FAIL, "app run: out "
					       "of memory");
	} else {
		rc = relayctl_read_all("app run", o->file ? o->file : "-",
				       &json, &len);
	}
	if (rc)
		goto done;
	rc = relay_appset_match(set, NULL, json, len,
				relay_clock_wall_ms(NULL), &v, &n);
	if (rc) {
		rc = relayctl_error(RELAYCTL_FAIL, "app run: %s",
				    rc == RELAY_ETYPE
				    ? "the event is not a JSON object"
				    : rc == RELAY_EPARSE ? "invalid JSON event"
							 : relay_strerror(rc));
		goto done;
	}
	for (i = 0; i < n && rc == 0; i++) {
		if (v[i].app != app)
			continue;
		if (!rt)
			rc = open_runtime(&rt, sandbox, o->warm);
		if (rc == 0 && o->attempts) {
			ran++;
			ok += (size_t)run_attempts(rt, o, app, v[i].rule,
						   json, len);
		} else if (rc == 0) {
			char why[200];

			ran++;
			ok += (size_t)run_one(rt, o->warm, app, v[i].rule,
					      json, len, NULL, why,
					      sizeof(why));
		}
	}
	if (rc == 0 && ran == 0)
		printf("No matching handlers\n");
	if (rc == 0)
		rc = ok == ran ? RELAYCTL_OK : RELAYCTL_FAIL;
done:
	relay_runtime_free(rt);
	relay_free(v);
	free(json);
	relay_appset_free(set);
	return rc;
}

/*
 * The sandbox `app run` uses. Only its own command line may turn the
 * sandbox off: RELAY_SANDBOX=none in the environment or the defaults
 * file is relayd's setting (fine for an unprivileged relayd on an
 * isolated host), not a decision made for this run. As root it would run
 * the app's code as uid 0 with every capability, so it is refused,
 * saying where it came from; as another user the run stays sandboxed
 * and stderr says so. Returns 0 with *@out set, or an exit code.
 */
static int pick_sandbox(const struct opts *o, const char **out)
{
	const char *v = getenv("RELAY_SANDBOX"), *from;
	char where[4200];

	*out = o->sandbox ? o->sandbox : "bwrap";
	if (o->sandbox || o->warm || !v || !*v || strcmp(v, "bwrap") == 0)
		return 0;
	if (strcmp(v, "none") != 0)
		return relayctl_error(RELAYCTL_FAIL, "app run: RELAY_SANDBOX "
				      "must be bwrap or none, not \"%s\"", v);
	from = relayctl_envfile_origin("RELAY_SANDBOX");
	snprintf(where, sizeof(where), "%s%s", from ? "from " : "set in "
		 "the environment", from ? from : "");
	if (geteuid() == 0)
		return relayctl_error(RELAYCTL_FAIL, "app run: refusing "
				      "RELAY_SANDBOX=none (%s) as root: the "
				      "app's code would run as uid 0 with "
				      "every capability; only --sandbox none "
				      "on app run's own command line runs it "
				      "unsandboxed", where);
	relayctl_error(RELAYCTL_OK, "app run: RELAY_SANDBOX=none (%s) "
		       "ignored: app run is sandboxed unless --sandbox none "
		       "is on its command line", where);
	return 0;
}

int relayctl_cmd_app_run(int argc, char **argv)
{
	struct opts o;
	const char *sandbox;
	int rc;

	memset(&o, 0, sizeof(o));
	rc = parse(argc, argv, &o);
	if (rc < 0)
		return RELAYCTL_OK;
	if (rc) {
		usage(stderr);
		return rc;
	}
	rc = pick_sandbox(&o, &sandbox);
	if (rc)
		return rc;
	return run(&o, sandbox);
}
