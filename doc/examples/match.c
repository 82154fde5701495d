/*
 * match.c - the smallest useful embedding of librelay.
 *
 * Loads every app under an apps directory, exactly as relayd does, and
 * prints "<app>/<handler>" for each rule that an event matches. Events are
 * read from standard input, one JSON object per line:
 *
 *	$ cc match.c $(pkg-config --cflags --libs librelay) -o match
 *	$ echo '{"type":"invoice.paid","invoice":{"id":"inv_1","amount":5}}' |
 *		./match /etc/relay/apps
 *	billing/invoices.paid.handle
 *
 * Usage: match APPS_DIR [NOW_MS]
 *
 * NOW_MS pins the instant that now() stands for in temporal patterns
 * (gt: "now()-5m"), in Unix milliseconds; the default is the real time.
 *
 * Exit status: 0 when every line was a JSON object, 1 when a template is
 * invalid or some line was not (the other lines are still matched), 2 for a
 * usage error. This is plain C99 plus POSIX getline(); it uses only the
 * public headers and the shared library.
 *
 * Build against an installed librelay (README.md, "Install"):
 *
 *	cc -o example match.c $(pkg-config --cflags --libs librelay)
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The umbrella header pulls in every module (pattern.h, app.h, …). */
#include <relay/relay.h>

/*
 * Loading reports each problem of each template through a callback, with
 * file, line and column. librelay never prints: what to do with a problem
 * is the host's decision. Here we print it the way `relayctl validate`
 * does. @err is borrowed for the duration of the call.
 */
static void on_diag(const char *app, const relay_error *err, void *payload)
{
	char where[RELAY_ERROR_PATH_MAX + RELAY_ERROR_TEXT_MAX + 32];

	(void)payload;
	fprintf(stderr, "%s: %s\n", app ? app : "(apps dir)",
		relay_error_format(err, where, sizeof(where)));
}

int main(int argc, char **argv)
{
	relay_appset *set = NULL;
	relay_matcher *m = NULL;
	relay_wall_ms now = 0;
	char *line = NULL;
	size_t cap = 0, lineno = 0;
	ssize_t len;
	int rc, status = 0;

	if (argc < 2 || argc > 3) {
		fprintf(stderr, "usage: %s APPS_DIR [NOW_MS]\n", argv[0]);
		return 2;
	}
	if (argc == 3) {
		char *end;

		errno = 0;
		now = strtoll(argv[2], &end, 10);
		if (errno || end == argv[2] || *end) {
			fprintf(stderr, "invalid NOW_MS \"%s\"\n", argv[2]);
			return 2;
		}
	}

	/*
	 * Step 1: load the apps. relay_appset_load() reads every
	 * APPS_DIR/<app>/template.yaml in name order and compiles the rules
	 * of all valid apps into ONE ruleset, in dispatch order (apps by
	 * name, rules in declaration order). It returns 0 even when some
	 * templates are invalid: those apps are kept out of matching. Like
	 * relayctl, we refuse to match a partial set.
	 */
	rc = relay_appset_load(&set, argv[1], on_diag, NULL);
	if (rc != 0) {
		fprintf(stderr, "%s: %s\n", argv[1], relay_strerror(rc));
		return 1;
	}
	if (relay_appset_invalid_count(set) > 0) {
		fprintf(stderr, "%zu invalid app(s)\n",
			relay_appset_invalid_count(set));
		status = 1;
		goto done;
	}

	/*
	 * Step 2: make a matcher. The set and its ruleset are immutable and
	 * may be shared by threads; a matcher is the per-thread scratch
	 * space that makes matching allocation-free. One thread here, so one
	 * matcher.
	 */
	rc = relay_matcher_new(&m, relay_appset_ruleset(set));
	if (rc != 0) {
		fprintf(stderr, "matcher: %s\n", relay_strerror(rc));
		status = 1;
		goto done;
	}

	/*
	 * Step 3: match each line. relay_appset_match() takes the raw JSON
	 * bytes (no need to decode them first) and returns the matching
	 * (app, rule) pairs in dispatch order as a new array that we own and
	 * release with relay_free(). The app and rule pointers inside are
	 * borrowed from the set.
	 */
	while ((len = getline(&line, &cap, stdin)) != -1) {
		relay_app_match *hits = NULL;
		size_t n = 0, i;

		lineno++;
		while (len > 0 && (line[len - 1] == '\n' ||
				   line[len - 1] == '\r'))
			line[--len] = '\0';
		if (len == 0)
			continue;
		/* now() in patterns is evaluated per event, at match time:
		 * a long-running program moves the cutoff with the clock. */
		if (argc == 2)
			now = relay_clock_wall_ms(NULL); /* NULL: system clock */
		rc = relay_appset_match(set, m, line, (size_t)len, now, &hits,
					&n);
		if (rc != 0) {
			/* RELAY_EPARSE (not JSON) or RELAY_ETYPE (not an
			 * object); the matcher says why, with an offset. */
			fprintf(stderr, "line %zu: %s: %s\n", lineno,
				relay_strerror(rc), relay_matcher_errstr(m));
			status = 1;
			continue;
		}
		for (i = 0; i < n; i++)
			printf("%s/%s\n", relay_app_name(hits[i].app),
			       relay_app_rule_handler(hits[i].rule));
		relay_free(hits);
	}

done:
	/* Free in reverse order: matchers before the set they came from. */
	free(line);
	relay_matcher_free(m);
	relay_appset_free(set);
	return status;
}
