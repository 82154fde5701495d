/*
 * args.c - relayd's command line: --check, --help, --version. The
 * configuration comes from the environment (vars.c, config.c).
 */
#include <stdio.h>
#include <string.h>

#include "relay/relay.h"
#include "relayd.h"

#define USAGE_LINE "usage: relayd [--check] [--help] [--version]\n"

static void usage(FILE *f)
{
	fprintf(f,
		USAGE_LINE "\n"
		"Runs the Relay stream engine in the foreground. "
		"With --check, checks the\nconfiguration, the apps, the "
		"sandbox and Redis, prints what it found and\nexits "
		"(0: ready to run, 1: not). Configuration comes from the "
		"environment:\n");
	relayd_vars_usage(f);
	fprintf(f, "See relayd(8).\n");
}

int relayd_parse_args(int argc, char **argv, bool *check_only)
{
	int i;

	*check_only = false;
	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--check") == 0) {
			*check_only = true;
			continue;
		}
		if (strcmp(argv[i], "--help") == 0 ||
		    strcmp(argv[i], "-h") == 0) {
			usage(stdout);
			return 0;
		}
		if (strcmp(argv[i], "--version") == 0) {
			printf("relayd %s\n", relay_version());
			return 0;
		}
		fprintf(stderr, "relayd: unknown argument: %s\n", argv[i]);
		usage(stderr);
		return 2;
	}
	return -1;
}
