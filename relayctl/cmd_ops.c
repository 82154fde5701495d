/*
 * cmd_ops.c - placeholders for the operator commands (dlq, health, stats)
 * that arrive with the engine and relayctl issues.
 */
#include "relayctl.h"

int relayctl_cmd_dlq(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	return relayctl_error(RELAYCTL_FAIL, "dlq: not implemented yet");
}

int relayctl_cmd_health(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	return relayctl_error(RELAYCTL_FAIL, "health: not implemented yet");
}

int relayctl_cmd_stats(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	return relayctl_error(RELAYCTL_FAIL, "stats: not implemented yet");
}
