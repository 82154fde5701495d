/*
 * cmd_app.c - relayctl app: subcommand dispatch.
 */
#include <string.h>

#include "relayctl.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: relayctl app run NAME --apps DIR "
		   "[--event JSON|--file PATH] [--sandbox bwrap|none]\n");
}

int relayctl_cmd_app(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return RELAYCTL_USAGE;
	}
	if (relayctl_is_help(argv[1])) {
		usage(stdout);
		return RELAYCTL_OK;
	}
	if (strcmp(argv[1], "run") == 0)
		return relayctl_cmd_app_run(argc - 1, argv + 1);
	relayctl_error(RELAYCTL_USAGE, "app: unknown subcommand \"%s\"",
		       argv[1]);
	usage(stderr);
	return RELAYCTL_USAGE;
}
