/*
 * cmd_app_run.c - relayctl app run (placeholder until implemented).
 */
#include "relayctl.h"

int relayctl_cmd_app_run(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	return relayctl_error(RELAYCTL_FAIL, "app run: not implemented yet");
}
