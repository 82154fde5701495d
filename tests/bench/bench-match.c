/*
 * bench-match.c - the ruleset matcher on the gen_corpus.py corpus.
 *
 *   bench-match CORPUS_DIR PROFILE N [SECONDS]
 *	loads patterns-PROFILE-N.jsonl (add_ms: relay_pattern_compile +
 *	relay_ruleset_add for every rule + relay_ruleset_build; file reading
 *	and jansson parsing of the lines excluded), checks the matches of
 *	the first events against expected-PROFILE-N.jsonl at the manifest's
 *	pinned now, then matches events.jsonl in a loop for SECONDS
 *	(default 3) on one thread and prints
 *	  rules=N add_ms=… mismatches=… events_per_s=… ns_per_event=…
 *   bench-match CORPUS_DIR --jansson [SECONDS]
 *	the baseline: json_loads() (+ json_decref) alone on the same events
 *	  baseline=jansson events_per_s=… ns_per_event=…
 *   bench-match CORPUS_DIR --all [SECONDS [ROUNDS]]
 *	the baseline, then every profile (common numeric full mixed) x N (1 10
 *	100 1000), one line each; with ROUNDS > 1 the whole sequence runs
 *	ROUNDS times (interleaved, so that drift on a shared machine hits
 *	every set alike) and a final table gives per-set medians and the
 *	ratio to the jansson baseline's median.
 *
 * Exit status 1 on any mismatch or if the timed loop allocated memory
 * through librelay's allocator (it must not: steady state).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pattern/pattern_int.h"
#include "relay/pattern.h"

typedef struct span {
	char *p;
	size_t n;
} span;

static size_t allocs;
static int counting;

static void *count_malloc(size_t n)
{
	allocs += counting;
	return malloc(n);
}

static void *count_realloc(void *p, size_t n)
{
	allocs += counting;
	return realloc(p, n);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static char *slurp(const char *dir, const char *name, size_t *len)
{
	char path[1024];
	FILE *f;
	char *buf;
	long n;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "rb");
	if (!f) {
		fprintf(stderr, "bench-match: cannot open %s\n", path);
		exit(2);
	}
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = malloc((size_t)n + 1);
	if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n)
		exit(2);
	buf[n] = '\0';
	fclose(f);
	if (len)
		*len = (size_t)n;
	return buf;
}

/* Split a buffer into lines (in place); returns the count. */
static size_t lines(char *buf, span **out)
{
	size_t n = 0, cap = 1024;
	span *v = malloc(cap * sizeof(*v));
	char *p = buf, *nl;

	while (*p) {
		nl = strchr(p, '\n');
		if (!nl)
			nl = p + strlen(p);
		if (n == cap)
			v = realloc(v, (cap *= 2) * sizeof(*v));
		v[n].p = p;
		v[n].n = (size_t)(nl - p);
		n++;
		if (!*nl)
			break;
		*nl = '\0';
		p = nl + 1;
	}
	*out = v;
	return n;
}

static relay_wall_ms manifest_now(const char *dir)
{
	char *m = slurp(dir, "manifest.json", NULL);
	json_t *j = json_loads(m, 0, NULL);
	const char *s = json_string_value(json_object_get(j, "now"));
	relay__instant t;

	if (!s || relay__rfc3339_parse(s, strlen(s), &t)) {
		fprintf(stderr, "bench-match: manifest has no valid now\n");
		exit(2);
	}
	json_decref(j);
	free(m);
	return t.ms;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

typedef struct result {
	double add_ms, eps;
	size_t mismatches;
} result;

static int cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_dbl);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static double baseline(span *ev, size_t nev, double secs)
{
	double t0 = now_s(), t;
	size_t done = 0, i;

	do {
		for (i = 0; i < nev; i++) {
			json_t *j = json_loadb(ev[i].p, ev[i].n, 0, NULL);

			if (!j)
				exit(3);
			json_decref(j);
		}
		done += nev;
		t = now_s() - t0;
	} while (t < secs);
	printf("baseline=jansson events_per_s=%.0f ns_per_event=%.1f\n",
	       (double)done / t, t * 1e9 / (double)done);
	return (double)done / t;
}

static int run_set(const char *dir, const char *profile, int nrules,
		   span *ev, size_t nev, relay_wall_ms now, double secs,
		   result *res_out)
{
	char name[256], *pbuf, *ebuf, **ids, **got;
	span *pl, *el;
	size_t np, ne, i, k, n, done = 0, mismatches = 0, total = 0;
	json_t **pj;
	relay_pattern *p;
	relay_ruleset *rs;
	relay_matcher *m;
	const uint32_t *res;
	relay_error err;
	double t0, t_add, t;

	snprintf(name, sizeof(name), "patterns-%s-%d.jsonl", profile, nrules);
	pbuf = slurp(dir, name, NULL);
	np = lines(pbuf, &pl);
	pj = calloc(np, sizeof(*pj));
	ids = calloc(np, sizeof(*ids));
	for (i = 0; i < np; i++) {
		pj[i] = json_loadb(pl[i].p, pl[i].n, 0, NULL);
		ids[i] = (char *)json_string_value(json_object_get(pj[i],
								   "id"));
	}
	t0 = now_s();
	if (relay_ruleset_new(&rs))
		return 2;
	for (i = 0; i < np; i++) {
		if (relay_pattern_compile(&p, json_object_get(pj[i],
							      "pattern"),
					  &err)) {
			fprintf(stderr, "bench-match: rule %zu: %s\n", i,
				err.text);
			return 2;
		}
		if (relay_ruleset_add(rs, p, NULL))
			return 2;
		relay_pattern_free(p);
	}
	if (relay_ruleset_build(rs) || relay_matcher_new(&m, rs))
		return 2;
	t_add = (now_s() - t0) * 1e3;

	snprintf(name, sizeof(name), "expected-%s-%d.jsonl", profile, nrules);
	ebuf = slurp(dir, name, NULL);
	ne = lines(ebuf, &el);
	got = calloc(np + 1, sizeof(*got));
	for (i = 0; i < ne && i < nev; i++) {
		json_t *want = json_loadb(el[i].p, el[i].n, 0, NULL);
		int bad = 0;

		if (relay_matcher_match(m, ev[i].p, ev[i].n, now, &res, &n))
			bad = 1;
		for (k = 0; k < n; k++)
			got[k] = ids[res[k]];
		qsort(got, n, sizeof(*got), cmp_str);
		if (n != json_array_size(want))
			bad = 1;
		for (k = 0; !bad && k < n; k++)
			bad = strcmp(got[k], json_string_value(
				json_array_get(want, k))) != 0;
		mismatches += bad;
		json_decref(want);
	}

	counting = 1;
	t0 = now_s();
	do {
		for (i = 0; i < nev; i++) {
			relay_matcher_match(m, ev[i].p, ev[i].n, now, &res, &n);
			total += n;
		}
		done += nev;
		t = now_s() - t0;
	} while (t < secs);
	counting = 0;
	printf("rules=%d add_ms=%.3f mismatches=%zu events_per_s=%.0f "
	       "ns_per_event=%.1f\n", nrules, t_add, mismatches,
	       (double)done / t, t * 1e9 / (double)done);
	fflush(stdout);
	if (allocs)
		fprintf(stderr, "bench-match: %zu allocations in the timed "
			"loop (%zu matches)\n", allocs, total);
	if (res_out) {
		res_out->add_ms = t_add;
		res_out->eps = (double)done / t;
		res_out->mismatches = mismatches;
	}
	relay_matcher_free(m);
	relay_ruleset_free(rs);
	for (i = 0; i < np; i++)
		json_decref(pj[i]);
	free(pj);
	free(ids);
	free(got);
	free(pl);
	free(el);
	free(pbuf);
	free(ebuf);
	return mismatches || allocs ? 1 : 0;
}

#define MAX_ROUNDS 15

int main(int argc, char **argv)
{
	static const char *profiles[] = { "common", "numeric", "full",
					  "mixed" };
	static const int sizes[] = { 1, 10, 100, 1000 };
	static double eps[4][4][MAX_ROUNDS], add[4][4][MAX_ROUNDS];
	static size_t bad[4][4];
	double base[MAX_ROUNDS], secs, bm;
	char *ebuf;
	span *ev;
	size_t nev, i, j;
	relay_wall_ms now;
	int rc = 0, rounds = 1, r;
	result res;

	if (argc < 3) {
		fprintf(stderr, "usage: bench-match CORPUS_DIR PROFILE N "
			"[SECONDS] | --jansson [SECONDS] | --all [SECONDS "
			"[ROUNDS]]\n");
		return 2;
	}
	relay_set_allocator(count_malloc, count_realloc, free);
	ebuf = slurp(argv[1], "events.jsonl", NULL);
	nev = lines(ebuf, &ev);
	now = manifest_now(argv[1]);
	if (!strcmp(argv[2], "--jansson")) {
		secs = argc > 3 ? atof(argv[3]) : 3;
		baseline(ev, nev, secs);
	} else if (!strcmp(argv[2], "--all")) {
		secs = argc > 3 ? atof(argv[3]) : 3;
		rounds = argc > 4 ? atoi(argv[4]) : 1;
		if (rounds < 1 || rounds > MAX_ROUNDS)
			rounds = 1;
		for (r = 0; r < rounds; r++) {
			printf("round=%d\n", r + 1);
			base[r] = baseline(ev, nev, secs);
			for (i = 0; i < 4; i++) {
				printf("profile=%s\n", profiles[i]);
				for (j = 0; j < 4; j++) {
					rc |= run_set(argv[1], profiles[i],
						      sizes[j], ev, nev, now,
						      secs, &res);
					eps[i][j][r] = res.eps;
					add[i][j][r] = res.add_ms;
					if (res.mismatches > bad[i][j])
						bad[i][j] = res.mismatches;
				}
			}
		}
		bm = median(base, rounds);
		printf("\nmedians of %d rounds, %.1f s each:\n"
		       "| set | events/s | ns/event | x jansson | add ms "
		       "| mismatches |\n|---|---|---|---|---|---|\n"
		       "| jansson json_loads | %.0f | %.0f | 1 | - | - |\n",
		       rounds, secs, bm, 1e9 / bm);
		for (i = 0; i < 4; i++)
			for (j = 0; j < 4; j++) {
				double e = median(eps[i][j], rounds);

				printf("| %s-%d | %.0f | %.0f | %.1f | %.3f "
				       "| %zu |\n", profiles[i], sizes[j], e,
				       1e9 / e, e / bm,
				       median(add[i][j], rounds), bad[i][j]);
			}
	} else {
		secs = argc > 4 ? atof(argv[4]) : 3;
		rc = run_set(argv[1], argv[2], atoi(argv[3]), ev, nev, now,
			     secs, NULL);
	}
	free(ev);
	free(ebuf);
	return rc;
}
