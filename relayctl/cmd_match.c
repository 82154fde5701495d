/*
 * cmd_match.c - relayctl match (placeholder until implemented).
 */
#include "relayctl.h"

int relayctl_cmd_match(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	return relayctl_error(RELAYCTL_FAIL, "match: not implemented yet");
}
