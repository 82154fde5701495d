/*
 * cmd_app.c - relayctl app: subcommand dispatch (run, ls, inspect,
 * invoke).
 */
#include <string.h>

#include "relayctl.h"

static void usage(FILE *f)
{
	fputs("usage: relayctl app run NAME --apps DIR [--event JSON|--file "
	      "PATH] [--sandbox bwrap|none]\n"
	      "       relayctl app ls [--json]\n"
	      "       relayctl app inspect NAME [--json]\n"
	      "       relayctl app invoke NAME [--event JSON|--file PATH]\n\n"
	      "  run      run an app's matching handlers locally (no Redis)\n"
	      "  ls       list the apps and their status\n"
	      "  inspect  show one app's settings, rules and schedules\n"
	      "  invoke   have the running relayd run an app's matching "
	      "handlers\n\n"
	      "Run 'relayctl app SUBCOMMAND --help' for its options.\n", f);
}

int relayctl_cmd_app(int argc, char **argv)
{
	static const struct {
		const char *name;
		int (*fn)(int argc, char **argv);
	} subs[] = {
		{ "run", relayctl_cmd_app_run },
		{ "ls", relayctl_cmd_app_ls },
		{ "inspect", relayctl_cmd_app_inspect },
		{ "invoke", relayctl_cmd_app_invoke },
	};
	size_t i;

	if (argc < 2) {
		usage(stderr);
		return RELAYCTL_USAGE;
	}
	if (relayctl_is_help(argv[1])) {
		usage(stdout);
		return RELAYCTL_OK;
	}
	for (i = 0; i < sizeof(subs) / sizeof(subs[0]); i++)
		if (strcmp(argv[1], subs[i].name) == 0)
			return subs[i].fn(argc - 1, argv + 1);
	relayctl_error(RELAYCTL_USAGE, "app: unknown subcommand \"%s\"",
		       argv[1]);
	usage(stderr);
	return RELAYCTL_USAGE;
}
