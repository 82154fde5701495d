/*
 * main.c - relayctl, the Relay admin CLI: command dispatch.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "relay/relay.h"
#include "relayctl.h"

static const struct command {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *summary;
} commands[] = {
	{ "validate", relayctl_cmd_validate, "check every app template" },
	{ "match", relayctl_cmd_match, "print the rules an event matches" },
	{ "app", relayctl_cmd_app, "run, list, inspect and invoke apps" },
	{ "dlq", relayctl_cmd_dlq, "list, inspect, replay, remove DLQ entries" },
	{ "health", relayctl_cmd_health, "ask relayd whether it is healthy" },
	{ "stats", relayctl_cmd_stats, "show or reset the event counters" },
};

int relayctl_error(int code, const char *fmt, ...)
{
	va_list ap;

	fputs("relayctl: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
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
	size_t i;

	if (argc < 2) {
		usage(stderr);
		return RELAYCTL_USAGE;
	}
	if (relayctl_is_help(argv[1])) {
		usage(stdout);
		return RELAYCTL_OK;
	}
	if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "-V") == 0) {
		printf("relayctl %s\n", relay_version());
		return RELAYCTL_OK;
	}
	for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (strcmp(argv[1], commands[i].name) == 0)
			return commands[i].fn(argc - 1, argv + 1);
	relayctl_error(RELAYCTL_USAGE, "unknown command \"%s\"", argv[1]);
	usage(stderr);
	return RELAYCTL_USAGE;
}
