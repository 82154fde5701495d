/*
 * main.c - relayctl, the Relay admin CLI: command dispatch.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmdutil.h"
#include "envfile.h"
#include "fmt.h"
#include "relay/relay.h"
#include "relayctl.h"

static const struct relayctl_sub commands[] = {
	{ "validate", relayctl_cmd_validate, "check every app template" },
	{ "match", relayctl_cmd_match, "print the rules an event matches" },
	{ "publish", relayctl_cmd_publish, "check an event and add it" },
	{ "app", relayctl_cmd_app, "run, list, inspect and invoke apps" },
	{ "dlq", relayctl_cmd_dlq, "list, inspect, replay, remove DLQ entries" },
	{ "health", relayctl_cmd_health, "ask relayd whether it is healthy" },
	{ "stats", relayctl_cmd_stats, "show or reset the event counters" },
	{ "state", relayctl_cmd_state, "find leaked invocation-state hashes" },
	{ "event", relayctl_cmd_event, "show what happened to one event" },
	{ "tail", relayctl_cmd_tail, "follow handler attempt outcomes live" },
};

int relayctl_error(int code, const char *fmt, ...)
{
	va_list ap;

	char msg[4096];

	/* Arguments, names and relayd's messages are echoed: one clean
	 * line whatever they hold. */
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fprintf(stderr, "relayctl: %s\n", relayctl_c(msg));
	return code;
}

int relayctl_is_help(const char *arg)
{
	return strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0;
}

static void usage(FILE *f)
{
	size_t i;

	fprintf(f, "usage: relayctl [--version] [--help] [--env-file FILE] "
		   "COMMAND [ARGS]\n\n"
		   "Settings come from the flags, then the environment, then\n"
		   "--env-file FILE or else " RELAYCTL_DEFAULTS_FILE " (when\n"
		   "readable; $RELAYCTL_DEFAULTS_FILE names another).\n\n"
		   "Commands:\n");
	for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(f, "  %-10s %s\n", commands[i].name,
			commands[i].summary);
	fprintf(f, "\nRun 'relayctl COMMAND --help' for a command's options.\n"
		   "Exit status: 0 success, 1 failure, 2 usage error.\n");
}

/*
 * Take the global options before COMMAND off argv (--env-file FILE,
 * --env-file=FILE). Returns RELAYCTL_OK with *@first the index of
 * COMMAND and *@env_file the file (or NULL), or an exit code.
 */
static int global_opts(int argc, char **argv, int *first,
		       const char **env_file)
{
	int i;

	for (i = 1; i < argc; i++) {
		const char *v;

		if (strncmp(argv[i], "--env-file=", 11) == 0) {
			v = argv[i] + 11;
		} else if (strcmp(argv[i], "--env-file") == 0) {
			if (i + 1 >= argc) {
				relayctl_error(RELAYCTL_USAGE, "option "
					       "--env-file needs a value");
				goto usage_error;
			}
			v = argv[++i];
		} else {
			break;
		}
		if (!*v) {
			relayctl_error(RELAYCTL_USAGE, "--env-file needs a "
				       "non-empty value");
			goto usage_error;
		}
		*env_file = v;
	}
	*first = i;
	return RELAYCTL_OK;

usage_error:
	usage(stderr);
	return RELAYCTL_USAGE;
}

int main(int argc, char **argv)
{
	const char *env_file = NULL, *dflt;
	int first = 1, rc;

	rc = global_opts(argc, argv, &first, &env_file);
	if (rc)
		return rc;
	if (first < argc && (strcmp(argv[first], "--version") == 0 ||
			     strcmp(argv[first], "-V") == 0)) {
		printf("relayctl %s\n", relay_version());
		return RELAYCTL_OK;
	}
	if (first < argc && relayctl_is_help(argv[first])) {
		usage(stdout);
		return RELAYCTL_OK;
	}
	if (env_file) {
		rc = relayctl_envfile_load(env_file, 0);
	} else {
		/* The unit's EnvironmentFile, as relayd sees it; tests
		 * name their own so that the host's file never leaks in. */
		dflt = getenv("RELAYCTL_DEFAULTS_FILE");
		rc = relayctl_envfile_load(dflt && *dflt ? dflt :
					   RELAYCTL_DEFAULTS_FILE, 1);
	}
	if (rc)
		return rc;
	return relayctl_dispatch(commands, sizeof(commands) /
				 sizeof(commands[0]), NULL, argc - first + 1,
				 argv + first - 1, usage);
}
