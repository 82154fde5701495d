/*
 * args.c - relayd's command line: --check, --help, --version.
 *
 * relayd takes its configuration from the environment (vars.c); the
 * command line only chooses what to do. A word it does not know is a
 * usage error (exit 2) told in three lines: the word with the closest
 * option when one is near (`did you mean --check?`), the one-line usage,
 * and where the whole help is. The help itself goes to stdout on --help
 * only, never after a mistake.
 *
 * --version prints the version, then on a second line the features of
 * this build, each yes or no, so that an operator can tell at once why
 * (say) rediss:// or tracing is refused.
 */
#include <stdio.h>
#include <string.h>

#include "relay/relay.h"
#include "relayd.h"

#ifndef RELAYD_NODE_FORK
#define RELAYD_NODE_FORK 0
#endif

#define USAGE_LINE "usage: relayd [--check] [--help] [--version]\n"

static const char *const options[] = {
	"--check", "--help", "--version", NULL,
};

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

/* The features of this build, as `relayd --version` prints them. */
static void features(FILE *f)
{
	fprintf(f, "features: tls=%s otlp=%s metrics=%s "
		"node-fork-server=%s\n",
		relay_redis_tls_available() ? "yes" : "no",
		relay_otlp_available() ? "yes" : "no",
		relayd_http_available() ? "yes" : "no",
		RELAYD_NODE_FORK ? "yes" : "no");
}

/* An option within two edits of @arg (typed with one or two dashes, or
 * none), or NULL. */
static const char *closest_option(const char *arg)
{
	const char *best = NULL, *a = arg;
	size_t d, bestd = 3, i;

	while (*a == '-')
		a++;
	for (i = 0; options[i]; i++) {
		d = relayd_edit_distance(a, strlen(a), options[i] + 2);
		if (d < bestd) {
			bestd = d;
			best = options[i];
		}
	}
	return best;
}

int relayd_parse_args(int argc, char **argv, bool *check_only)
{
	int i;

	*check_only = false;
	for (i = 1; i < argc; i++) {
		const char *near;
		char word[80];

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
			features(stdout);
			return 0;
		}
		relayd_escape_ctl(argv[i], word, sizeof(word));
		near = closest_option(argv[i]);
		if (near)
			fprintf(stderr, "relayd: unknown argument: %s (did you "
				"mean %s?)\n", word, near);
		else
			fprintf(stderr, "relayd: unknown argument: %s\n",
				word);
		fprintf(stderr, USAGE_LINE "try 'relayd --help' for more "
			"information\n");
		return 2;
	}
	return -1;
}
