/*
 * cmd_validate.c - relayctl validate [--apps DIR]
 *
 * Exit 0 when every DIR/<app>/template.yaml is valid and every handler of
 * every valid app can be loaded (handlercheck.c; also when there are no
 * apps), 1 with one "app: file:line:col: message" line per problem on
 * stderr otherwise, 2 on a usage error. Quiet on success unless
 * --verbose, which prints one summary line per app on stdout.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmdutil.h"
#include "ctlconf.h"
#include "fmt.h"
#include "handlercheck.h"
#include "relayctl.h"

static void usage(FILE *f)
{
	fputs("usage: relayctl validate [--apps DIR] [--max-file-size SIZE] "
	      "[--verbose]\n\n"
	      "Check every DIR/<app>/template.yaml, and that each handler can\n"
	      "be loaded: the module exists and compiles and defines the\n"
	      "function (python3), exists and parses (node), the command\n"
	      "exists and is executable (exec). No handler code runs.\n"
	      "Problems are printed to stderr, one per line:\n"
	      "\"app: file:line:col: message\".\n\n"
	      "  --apps DIR     the apps directory ($RELAY_APPS_DIR, default\n"
	      "                 /etc/relay/apps)\n"
	      "  --max-file-size SIZE\n"
	      "                 the largest handler file compiled, in\n"
	      "                 bytes or with K, M or G (KiB, MiB, GiB);\n"
	      "                 default 16M\n"
	      "  -v, --verbose  print a summary line per app on stdout\n"
	      "  -h, --help     show this help\n\n"
	      "Exit status: 0 all valid, 1 problems found, 2 usage error.\n",
	      f);
}

/* "SIZE": digits, then optionally K, M or G (powers of 1024). Returns 0
 * with *@out set, or -1. */
static int parse_size(const char *v, unsigned long long *out)
{
	unsigned long long n;
	char *end;
	int shift = 0;

	if (*v < '0' || *v > '9')
		return -1;
	errno = 0;
	n = strtoull(v, &end, 10);
	if (errno)
		return -1;
	if (*end == 'K' || *end == 'k')
		shift = 10;
	else if (*end == 'M' || *end == 'm')
		shift = 20;
	else if (*end == 'G' || *end == 'g')
		shift = 30;
	else if (*end)
		return -1;
	if (shift && end[1])
		return -1;
	if (n == 0 || n > (~0ULL >> shift))
		return -1;
	*out = n << shift;
	return 0;
}

static void summary(const relay_appset *set, const int *bad)
{
	size_t i, n = relay_appset_entry_count(set);

	for (i = 0; i < n; i++) {
		const relay_app *app = relay_appset_entry_app(set, i);

		if (!app || (bad && bad[i])) {
			printf("%s: invalid\n",
			       relayctl_c(relay_appset_entry_name(set, i)));
			continue;
		}
		printf("%s: ok (%s, %zu rule%s, %zu schedule%s)\n",
		       relayctl_c(relay_app_name(app)),
		       relay_app_runtime_name(relay_app_runtime(app)),
		       relay_app_rule_count(app),
		       relay_app_rule_count(app) == 1 ? "" : "s",
		       relay_app_schedule_count(app),
		       relay_app_schedule_count(app) == 1 ? "" : "s");
	}
}

int relayctl_cmd_validate(int argc, char **argv)
{
	const char *dir = NULL;
	relay_appset *set = NULL;
	struct relayctl_diags diags = { NULL, 0 };
	int i, verbose = 0, rc, skipped = 0, problems = 0, *bad;
	unsigned long long max_bytes = RELAYCTL_CHECK_MAX_BYTES;
	size_t k, n;

	for (i = 1; i < argc; i++) {
		const char *v;
		int o;

		if (relayctl_is_help(argv[i])) {
			usage(stdout);
			return RELAYCTL_OK;
		}
		o = relayctl_opt_value(argc, argv, &i, "--apps", "validate",
				       &v);
		if (o < 0)
			goto usage_error;
		if (o > 0) {
			dir = v;
			continue;
		}
		o = relayctl_opt_value(argc, argv, &i, "--max-file-size",
				       "validate", &v);
		if (o < 0)
			goto usage_error;
		if (o > 0 && parse_size(v, &max_bytes)) {
			relayctl_error(RELAYCTL_USAGE, "validate: "
				       "--max-file-size: expected a size in "
				       "bytes (or with K, M, G), not \"%s\"",
				       v);
			goto usage_error;
		}
		if (o > 0)
			continue;
		if (!strcmp(argv[i], "-v") || !strcmp(argv[i], "--verbose")) {
			verbose = 1;
			continue;
		}
		relayctl_unexpected("validate", argv[i]);
		goto usage_error;
	}
	if (!dir)
		dir = relayctl_apps_dir();
	if (!*dir) {
		relayctl_error(RELAYCTL_USAGE, "validate: --apps needs a "
			       "non-empty value");
		goto usage_error;
	}
	rc = relayctl_load_apps_kept(&set, "validate", dir, &skipped,
				     &diags);
	if (rc)
		return rc;
	n = relay_appset_entry_count(set);
	bad = calloc(n ? n : 1, sizeof(*bad));
	if (!bad) {
		relayctl_diags_free(&diags);
		relay_appset_free(set);
		return relayctl_error(RELAYCTL_FAIL, "validate: out of "
				      "memory");
	}
	/* Apps in name order, each with all of its problems: those of its
	 * template, else those of its handlers. */
	for (k = 0; k < n; k++) {
		const relay_app *app = relay_appset_entry_app(set, k);

		relayctl_diags_print(&diags, relay_appset_entry_name(set, k));
		if (app) {
			bad[k] = relayctl_check_handlers(app, max_bytes);
			problems += bad[k];
		}
	}
	relayctl_diags_free(&diags);
	if (verbose)
		summary(set, bad);
	rc = relay_appset_invalid_count(set) || skipped || problems ?
		RELAYCTL_FAIL : RELAYCTL_OK;
	free(bad);
	relay_appset_free(set);
	return rc;

usage_error:
	usage(stderr);
	return RELAYCTL_USAGE;
}
