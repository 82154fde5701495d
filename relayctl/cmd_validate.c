/*
 * cmd_validate.c - relayctl validate (placeholder until implemented).
 */
#include "relayctl.h"

int relayctl_cmd_validate(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	return relayctl_error(RELAYCTL_FAIL, "validate: not implemented yet");
}
