/*
 * warmstats.c - the warm path's figures (librelay's warm parents) for
 * /metrics and the stats file: starts by path, warm-start failures by
 * reason, warm parents by app and state with their memory, and the
 * start-latency histogram (run handed to the runtime → the invocation's
 * process exists).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "relayd.h"

static void add_parent(const char *app, const char *state,
		       unsigned int inflight, uint64_t rss, void *payload)
{
	relayd_warm_snap *w = payload;
	relayd_warm_parent *n;

	n = realloc(w->parents, (w->nparents + 1) * sizeof(*n));
	if (!n)
		return;
	w->parents = n;
	n = &w->parents[w->nparents];
	n->app = strdup(app);
	if (!n->app)
		return;
	snprintf(n->state, sizeof(n->state), "%s", state);
	n->inflight = inflight;
	n->rss_bytes = rss;
	w->nparents++;
}

void relayd_warm_take(relayd_warm_snap *w, const relay_runtime *rt)
{
	memset(w, 0, sizeof(*w));
	w->st.version = RELAY_RUNTIME_WARM_STATS_VERSION;
	if (!rt || relay_runtime_warm_stats_get(rt, &w->st) != 0)
		return;
	relay_runtime_warm_foreach(rt, add_parent, w);
}

void relayd_warm_clear(relayd_warm_snap *w)
{
	size_t i;

	for (i = 0; i < w->nparents; i++)
		free(w->parents[i].app);
	free(w->parents);
	w->parents = NULL;
	w->nparents = 0;
}

void relayd_warm_prometheus(FILE *f, const relayd_warm_snap *w)
{
	static const uint64_t bounds[] = RELAY_WARM_LATENCY_BOUNDS_US;
	static const char *const paths[2] = { "cold", "warm" };
	static const char *const states[3] = { "starting", "ready",
					       "retiring" };
	const relay_runtime_warm_stats *s = &w->st;
	size_t i, k, b;

	fputs("# HELP relay_handler_starts_total Invocations started, by path "
	      "(warm parent or cold sandbox).\n"
	      "# TYPE relay_handler_starts_total counter\n", f);
	fprintf(f, "relay_handler_starts_total{path=\"cold\"} %llu\n",
		(unsigned long long)s->cold_starts);
	fprintf(f, "relay_handler_starts_total{path=\"warm\"} %llu\n",
		(unsigned long long)s->warm_starts);
	fputs("# HELP relay_warm_start_failures_total Warm starts that fell "
	      "back to a cold start, by reason.\n"
	      "# TYPE relay_warm_start_failures_total counter\n", f);
	for (i = 0; i < RELAY_WARM_FAIL_COUNT; i++)
		fprintf(f, "relay_warm_start_failures_total{reason=\"%s\"} "
			"%llu\n", relay_warm_fail_name((relay_warm_fail)i),
			(unsigned long long)s->failures[i]);
	fputs("# HELP relay_warm_parents Warm parents now, by app and state.\n"
	      "# TYPE relay_warm_parents gauge\n", f);
	for (k = 0; k < 3; k++) {
		for (i = 0; i < w->nparents; i++) {
			const relayd_warm_parent *p = &w->parents[i];
			size_t j, n = 0;

			if (strcmp(p->state, states[k]) != 0)
				continue;
			/* One line per (app, state): count the first time. */
			for (j = 0; j < i; j++)
				if (strcmp(w->parents[j].app, p->app) == 0 &&
				    strcmp(w->parents[j].state, p->state) == 0)
					break;
			if (j < i)
				continue;
			for (j = i; j < w->nparents; j++)
				n += strcmp(w->parents[j].app, p->app) == 0 &&
				     strcmp(w->parents[j].state,
					    p->state) == 0;
			fputs("relay_warm_parents{app=\"", f);
			relayd_prom_label(f, p->app);
			fprintf(f, "\",state=\"%s\"} %zu\n", states[k], n);
		}
	}
	fputs("# HELP relay_warm_parents_memory_bytes Resident memory of all "
	      "warm parents.\n"
	      "# TYPE relay_warm_parents_memory_bytes gauge\n", f);
	fprintf(f, "relay_warm_parents_memory_bytes %llu\n",
		(unsigned long long)s->parents_rss_bytes);
	fputs("# HELP relay_handler_start_seconds Run handed to the runtime "
	      "until the invocation's process exists, by path.\n"
	      "# TYPE relay_handler_start_seconds histogram\n", f);
	for (k = 0; k < 2; k++) {
		uint64_t cum = 0;

		for (b = 0; b < RELAY_WARM_LATENCY_BUCKETS - 1; b++) {
			cum += s->latency_us[k][b];
			fprintf(f, "relay_handler_start_seconds_bucket{path="
				"\"%s\",le=\"", paths[k]);
			relayd_prom_double(f, (double)bounds[b] / 1e6);
			fprintf(f, "\"} %llu\n", (unsigned long long)cum);
		}
		cum += s->latency_us[k][b];
		fprintf(f, "relay_handler_start_seconds_bucket{path=\"%s\","
			"le=\"+Inf\"} %llu\n", paths[k],
			(unsigned long long)cum);
		fprintf(f, "relay_handler_start_seconds_sum{path=\"%s\"} ",
			paths[k]);
		relayd_prom_double(f, (double)s->latency_sum_us[k] / 1e6);
		fputc('\n', f);
		fprintf(f, "relay_handler_start_seconds_count{path=\"%s\"} "
			"%llu\n", paths[k], (unsigned long long)cum);
	}
}

void *relayd_warm_json(const relayd_warm_snap *w)
{
	const relay_runtime_warm_stats *s = &w->st;
	json_t *o = json_object(), *fails = json_object(),
	       *parents = json_array();
	size_t i;

	for (i = 0; i < RELAY_WARM_FAIL_COUNT; i++)
		json_object_set_new(fails,
				    relay_warm_fail_name((relay_warm_fail)i),
				    json_integer((json_int_t)s->failures[i]));
	for (i = 0; i < w->nparents; i++)
		json_array_append_new(parents, json_pack(
			"{s:s, s:s, s:I, s:I}", "app", w->parents[i].app,
			"state", w->parents[i].state, "inflight",
			(json_int_t)w->parents[i].inflight, "rss_bytes",
			(json_int_t)w->parents[i].rss_bytes));
	json_object_set_new(o, "warm_starts",
			    json_integer((json_int_t)s->warm_starts));
	json_object_set_new(o, "cold_starts",
			    json_integer((json_int_t)s->cold_starts));
	json_object_set_new(o, "failures", fails);
	json_object_set_new(o, "parents_memory_bytes",
			    json_integer((json_int_t)s->parents_rss_bytes));
	json_object_set_new(o, "parents", parents);
	return o;
}
