/*
 * bench-app.c - how fast templates load and how much the app set adds on
 * top of the pattern matcher.
 *
 *   bench-app [APPS] [RULES]     (defaults 100 apps x 10 rules)
 *
 * Measures, each against a baseline taken in the same run:
 *   1. relay_app_load_buffer() of one realistic template (the billing
 *      example), per load;
 *   2. relay_appset_load() of APPS apps x RULES rules from a temporary
 *      directory, versus relay_appset_reload() of one app in that set;
 *   3. relay_appset_match() (ids mapped to (app, rule), result array
 *      allocated) versus the bare relay_matcher_match() on the same
 *      ruleset and event.
 * Prints one line per figure. Not a test: numbers, not verdicts.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "relay/app.h"

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static const char billing[] =
	"runtime: python3\n"
	"concurrency: 4\n"
	"resources: {memory: 256Mi, cpus: 0.5, pids: 64}\n"
	"env:\n  CURRENCY: EUR\n  APPROVAL_LIMIT: 10000\n"
	"events:\n"
	"  - handler: invoices.paid.handle\n"
	"    pattern:\n"
	"      type: [invoice.paid]\n"
	"      invoice:\n"
	"        id: [{prefix: \"inv_\"}]\n"
	"        amount: [{gt: 0}]\n"
	"        refunded_at: [{exists: false}]\n"
	"    timeout: 20s\n"
	"    retries: 2\n"
	"  - handler: invoices.large.review\n"
	"    pattern:\n"
	"      type: [invoice.paid]\n"
	"      invoice:\n"
	"        amount: [{gte: 5000}]\n"
	"    timeout: 10s\n"
	"schedules:\n"
	"  - name: daily-report\n"
	"    handler: reports.daily.run\n"
	"    cron: \"0 6 * * *\"\n"
	"    timezone: Europe/Berlin\n";

static void bench_load(void)
{
	const int n = 4000;
	relay_app *app;
	double t0, best = 1e9;
	int i, round;

	for (round = 0; round < 5; round++) {
		t0 = now_s();
		for (i = 0; i < n; i++) {
			if (relay_app_load_buffer(&app, "billing", "/",
						  "t.yaml", billing,
						  sizeof(billing) - 1, NULL,
						  NULL))
				abort();
			relay_app_free(app);
		}
		t0 = (now_s() - t0) / n;
		best = t0 < best ? t0 : best;
	}
	printf("load one template (billing, %zu bytes): %.1f us/load "
	       "(best of 5 x %d)\n", sizeof(billing) - 1, best * 1e6, n);
}

static void make_apps(const char *root, int napps, int nrules)
{
	char path[512];
	int a, r;

	for (a = 0; a < napps; a++) {
		FILE *f;

		snprintf(path, sizeof(path), "%s/app%03d", root, a);
		mkdir(path, 0700);
		snprintf(path, sizeof(path), "%s/app%03d/template.yaml", root,
			 a);
		f = fopen(path, "w");
		if (!f)
			abort();
		fprintf(f, "runtime: python3\nevents:\n");
		for (r = 0; r < nrules; r++)
			fprintf(f, "  - handler: h.r%d\n    pattern:\n"
				"      kind: [k%d]\n      amount: [{gt: %d}]\n",
				r, (a * nrules + r) % 50, r * 10);
		fclose(f);
	}
}

static void bench_set(const char *root, int napps, int nrules,
		      relay_appset **keep)
{
	const int n = 10;
	relay_appset *set = NULL, *re;
	double t0, full, one;
	int i, round;

	full = one = 1e9;
	for (round = 0; round < 5; round++) {
		double t;

		t0 = now_s();
		for (i = 0; i < n; i++) {
			relay_appset_free(set);
			if (relay_appset_load(&set, root, NULL, NULL))
				abort();
		}
		t = (now_s() - t0) / n;
		full = t < full ? t : full;
		t0 = now_s();
		for (i = 0; i < n; i++) {
			if (relay_appset_reload(&re, set, "app050", NULL,
						NULL))
				abort();
			relay_appset_free(re);
		}
		t = (now_s() - t0) / n;
		one = t < one ? t : one;
	}
	printf("load %d apps x %d rules: %.2f ms/set (baseline, best of 5)\n",
	       napps, nrules, full * 1e3);
	printf("reload one app of them: %.3f ms (%.1fx faster than a full "
	       "load; includes the ruleset rebuild)\n", one * 1e3,
	       full / one);
	*keep = set;
}

static void bench_match(const relay_appset *set)
{
	static const char ev[] =
		"{\"kind\":\"k7\",\"amount\":555,\"id\":\"evt_123\","
		"\"payload\":{\"a\":[1,2,3],\"b\":\"some text here\"}}";
	const int n = 200000;
	relay_matcher *m;
	relay_app_match *v;
	const uint32_t *ids;
	size_t cnt = 0, total = 0;
	double t0, raw, via;
	int i, round;

	if (relay_matcher_new(&m, relay_appset_ruleset(set)))
		abort();
	/* Alternate the two in rounds and keep each one's best round, so
	 * that other load on the machine hits both alike. */
	raw = via = 1e9;
	for (round = 0; round < 5; round++) {
		double t;

		t0 = now_s();
		for (i = 0; i < n; i++) {
			if (relay_matcher_match(m, ev, sizeof(ev) - 1, 0, &ids,
						&cnt))
				abort();
			total += cnt;
		}
		t = (now_s() - t0) / n;
		raw = t < raw ? t : raw;
		t0 = now_s();
		for (i = 0; i < n; i++) {
			if (relay_appset_match(set, m, ev, sizeof(ev) - 1, 0,
					       &v, &cnt))
				abort();
			total += cnt;
			relay_free(v);
		}
		t = (now_s() - t0) / n;
		via = t < via ? t : via;
	}
	printf("match one %zu-byte event, %zu rules, %zu matches:\n",
	       sizeof(ev) - 1, relay_ruleset_count(relay_appset_ruleset(set)),
	       cnt);
	printf("  relay_matcher_match (baseline): %.0f ns/event (best of 5)\n",
	       raw * 1e9);
	printf("  relay_appset_match:             %.0f ns/event (%.2fx)\n",
	       via * 1e9, via / raw);
	relay_matcher_free(m);
	if (total == 0)
		printf("(no matches)\n");
}

int main(int argc, char **argv)
{
	int napps = argc > 1 ? atoi(argv[1]) : 100;
	int nrules = argc > 2 ? atoi(argv[2]) : 10;
	char root[] = "/tmp/relay-bench-app-XXXXXX", cmd[64];
	relay_appset *set = NULL;

	if (napps < 51 || nrules < 1 || !mkdtemp(root)) {
		fprintf(stderr, "usage: bench-app [APPS>50] [RULES]\n");
		return 2;
	}
	bench_load();
	make_apps(root, napps, nrules);
	bench_set(root, napps, nrules, &set);
	bench_match(set);
	relay_appset_free(set);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	return system(cmd) == 0 ? 0 : 1;
}
