/*
 * cmd_app.c - relayctl app: subcommand dispatch (run, ls, inspect,
 * invoke).
 */
#include "cmdutil.h"
#include "relayctl.h"

static void usage(FILE *f)
{
	fputs("usage: relayctl app run NAME [--apps DIR] [--event JSON|--file "
	      "PATH] [--sandbox bwrap|none]\n"
	      "                              [--warm] [--attempts N]\n"
	      "       relayctl app ls [--json]\n"
	      "       relayctl app inspect NAME [--json]\n"
	      "       relayctl app invoke NAME [--event JSON|--file PATH] "
	      "[--output]\n\n"
	      "  run      run an app's matching handlers locally (no Redis)\n"
	      "  ls       list the apps and their status\n"
	      "  inspect  show one app's settings, rules and schedules\n"
	      "  invoke   have the running relayd run an app's matching "
	      "handlers\n\n"
	      "Run 'relayctl app SUBCOMMAND --help' for its options.\n", f);
}

int relayctl_cmd_app(int argc, char **argv)
{
	static const struct relayctl_sub subs[] = {
		{ "run", relayctl_cmd_app_run, NULL },
		{ "ls", relayctl_cmd_app_ls, NULL },
		{ "inspect", relayctl_cmd_app_inspect, NULL },
		{ "invoke", relayctl_cmd_app_invoke, NULL },
	};

	return relayctl_dispatch(subs, sizeof(subs) / sizeof(subs[0]), "app",
				 argc, argv, usage);
}
