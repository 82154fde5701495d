/*
 * main.c - relayctl, the Relay admin CLI: command dispatch.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cmdutil.h"
#include "fmt.h"
#include "relay/relay.h"
#include "relayctl.h"

static const struct relayctl_sub commands[] = {
	{ "validate", relayctl_cmd_validate, "check every app template" },
	{ "match", relayctl_cmd_match, "print the rules an event matches" },
	{ "app", relayctl_cmd_app, "run, list, inspect and invoke apps" },
	{ "dlq", relayctl_cmd_dlq, "list, inspect, replay, remove DLQ entries" },
	{ "health", relayctl_cmd_health, "ask relayd whether it is healthy" },
	{ "stats", relayctl_cmd_stats, "show or reset the event counters" },
	{ "state", relayctl_cmd_state, "find leaked invocation-state hashes" },
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

	fprintf(f, "usage: relayctl [--version] [--help] COMMAND [ARGS]\n\n"
		   "Commands:\n");
	for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(f, "  %-10s %s\n", commands[i].name,
			commands[i].summary);
	fprintf(f, "\nRun 'relayctl COMMAND --help' for a command's options.\n"
		   "Exit status: 0 success, 1 failure, 2 usage error.\n");
}

int main(int argc, char **argv)
{
	if (argc >= 2 && (strcmp(argv[1], "--version") == 0 ||
			  strcmp(argv[1], "-V") == 0)) {
		printf("relayctl %s\n", relay_version());
		return RELAYCTL_OK;
	}
	return relayctl_dispatch(commands, sizeof(commands) /
				 sizeof(commands[0]), NULL, argc, argv, usage);
}
