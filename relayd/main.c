/*
 * main.c - relayd, the Relay daemon (engine arrives with the engine issue).
 */
#include <stdio.h>
#include <string.h>

#include "relay/relay.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: relayd [--version] [--help]\n\n"
		   "Runs the Relay stream engine. Configuration comes from the "
		   "environment\n(REDIS_URI, REDIS_STREAM, REDIS_GROUP, "
		   "RELAY_APPS_DIR, ...); see relayd(8).\n");
}

int main(int argc, char **argv)
{
	if (argc > 1 && (strcmp(argv[1], "--help") == 0 ||
			 strcmp(argv[1], "-h") == 0)) {
		usage(stdout);
		return 0;
	}
	if (argc > 1 && strcmp(argv[1], "--version") == 0) {
		printf("relayd %s\n", relay_version());
		return 0;
	}
	if (argc > 1) {
		usage(stderr);
		return 2;
	}
	fprintf(stderr, "relayd: the stream engine is not built yet\n");
	return 1;
}
