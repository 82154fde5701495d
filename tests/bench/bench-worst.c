/*
 * bench-worst.c - the pattern module's adversarial worst cases.
 *
 *   bench-worst load N
 *	a template with one rule testing a field against N distinct prefix
 *	alternatives and another against N suffix alternatives: the
 *	template load (YAML + pattern compile, relay_app_load_buffer) and
 *	the ruleset build, each timed; prints
 *	  case=load alts=N load_ms=… build_ms=…
 *   bench-worst dupkeys N D
 *	the same ruleset, then an event object holding the matched key D
 *	times (each value a 40-byte string that no alternative matches
 *	except at its end): matching it, timed over a few rounds; prints
 *	  case=dupkeys alts=N dups=D event_bytes=… ms_per_event=…
 *
 * Exit status 2 on a load or match failure.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "relay/app.h"
#include "relay/pattern.h"

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

typedef struct sbuf {
	char *p;
	size_t n, cap;
} sbuf;

static void put(sbuf *b, const char *s)
{
	size_t l = strlen(s);

	if (b->n + l + 1 > b->cap) {
		b->cap = (b->n + l + 1) * 2;
		b->p = realloc(b->p, b->cap);
		if (!b->p)
			exit(2);
	}
	memcpy(b->p + b->n, s, l + 1);
	b->n += l;
}

static void diag(const char *sev, const relay_error *e, void *payload)
{
	(void)payload;
	fprintf(stderr, "bench-worst: %s: %s\n", sev, e->text);
}

/* One rule: k starts with any of N prefixes, or s ends with any of N
 * suffixes (two rules, so both lists are built). */
static relay_app *load(int n, double *load_ms)
{
	sbuf b = { 0 };
	char item[64];
	relay_app *app;
	double t0;
	int i, rc;

	put(&b, "runtime: exec\ncommand: [./h]\nevents:\n"
		"  - handler: p\n    pattern: {k: [");
	for (i = 0; i < n; i++) {
		snprintf(item, sizeof(item), "%s{prefix: \"p%07d\"}",
			 i ? ", " : "", i);
		put(&b, item);
	}
	put(&b, "]}\n  - handler: s\n    pattern: {k: [");
	for (i = 0; i < n; i++) {
		snprintf(item, sizeof(item), "%s{suffix: \"%07ds\"}",
			 i ? ", " : "", i);
		put(&b, item);
	}
	put(&b, "]}\n");
	t0 = now_s();
	rc = relay_app_load_buffer(&app, "bench", NULL, NULL, b.p, b.n, diag,
				   NULL);
	*load_ms = (now_s() - t0) * 1e3;
	free(b.p);
	if (rc) {
		fprintf(stderr, "bench-worst: load failed (%d)\n", rc);
		exit(2);
	}
	return app;
}

static relay_ruleset *build(const relay_app *app, double *build_ms)
{
	relay_ruleset *rs;
	uint32_t id;
	size_t i;
	double t0 = now_s();

	if (relay_ruleset_new(&rs))
		exit(2);
	for (i = 0; i < relay_app_rule_count(app); i++)
		if (relay_ruleset_add(rs, relay_app_rule_pattern(
				relay_app_rule_at(app, i)), &id))
			exit(2);
	if (relay_ruleset_build(rs))
		exit(2);
	*build_ms = (now_s() - t0) * 1e3;
	return rs;
}

int main(int argc, char **argv)
{
	relay_app *app;
	relay_ruleset *rs;
	double load_ms, build_ms;
	int n;

	if (argc < 3) {
		fprintf(stderr, "usage: bench-worst load N | dupkeys N D\n");
		return 2;
	}
	n = atoi(argv[2]);
	app = load(n, &load_ms);
	rs = build(app, &build_ms);
	if (strcmp(argv[1], "load") == 0) {
		printf("case=load alts=%d load_ms=%.1f build_ms=%.1f\n", n,
		       load_ms, build_ms);
	} else if (strcmp(argv[1], "dupkeys") == 0 && argc > 3) {
		int d = atoi(argv[3]), i, rounds = 0;
		relay_matcher *m;
		const uint32_t *ids;
		size_t nids;
		sbuf b = { 0 };
		double t0, t;

		put(&b, "{");
		for (i = 0; i < d; i++)
			put(&b, i ? ",\"k\":\"x123456789012345678901234567890"
				    "0000001s\"" :
				"\"k\":\"x1234567890123456789012345678900000001s\"");
		put(&b, "}");
		if (relay_matcher_new(&m, rs))
			return 2;
		t0 = now_s();
		do {
			if (relay_matcher_match(m, b.p, b.n, 0, &ids, &nids) ||
			    nids != 1)
				return 2;
			rounds++;
			t = now_s() - t0;
		} while (t < 1.0 && rounds < 1000);
		printf("case=dupkeys alts=%d dups=%d event_bytes=%zu "
		       "ms_per_event=%.3f\n", n, d, b.n, t * 1e3 / rounds);
		relay_matcher_free(m);
		free(b.p);
	} else {
		return 2;
	}
	relay_ruleset_free(rs);
	relay_app_free(app);
	return 0;
}
