/*
 * warmstats.c - the warm path's figures (librelay's warm parents) for
 * /metrics and the stats file: starts by path, warm-start failures by
 * reason, warm parents by app and state with their memory, and the
 * start-latency histogram (run handed to the runtime → the invocation's
 * process exists).
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "relayd.h"
#include "relay/daemon_metrics.h"

/* The warm path's families (relay/daemon_metrics.h), by id. */
#define FAMILY_ID(id, type, prom, help, key) FAM_##id,
enum { RELAY_WARM_FIGURES(FAMILY_ID) NFAM };
#undef FAMILY_ID
#define FAMILY_ROW(id, type, prom, help, key) { type, prom, help, key },
static const struct family {
	const char *type, *prom, *help, *key;
} fam[NFAM] = { RELAY_WARM_FIGURES(FAMILY_ROW) };
#undef FAMILY_ROW

/* The start paths, in latency_us order. */
#define PATH_ROW(id, label, key, file) \
	{ label, key, file, offsetof(relay_runtime_warm_stats, id) },
static const struct start_path {
	const char *label, *key;
	int file;
	size_t offset;
} paths[] = { RELAY_START_PATHS(PATH_ROW) };
#undef PATH_ROW
#define NPATHS (sizeof(paths) / sizeof(paths[0]))

#define STATE_NAME(id, name) name,
static const char *const states[] = { RELAY_WARM_PARENT_STATES(STATE_NAME) };
#undef STATE_NAME
#define NSTATES (sizeof(states) / sizeof(states[0]))

static uint64_t path_starts(const relay_runtime_warm_stats *s,
			    const struct start_path *p)
{
	return *(const uint64_t *)(const void *)((const char *)s + p->offset);
}

/* "# HELP ..." and "# TYPE ..." of @f's family @id. */
static void head(FILE *f, int id)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", fam[id].prom,
		fam[id].help, fam[id].prom, fam[id].type);
}

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
	const relay_runtime_warm_stats *s = &w->st;
	size_t i, k, b;

	head(f, FAM_starts);
	for (k = 0; k < NPATHS; k++)
		fprintf(f, "%s{path=\"%s\"} %llu\n", fam[FAM_starts].prom,
			paths[k].label,
			(unsigned long long)path_starts(s, &paths[k]));
	head(f, FAM_failures);
	for (i = 0; i < RELAY_WARM_FAIL_COUNT; i++)
		fprintf(f, "%s{reason=\"%s\"} %llu\n", fam[FAM_failures].prom,
			relay_warm_fail_name((relay_warm_fail)i),
			(unsigned long long)s->failures[i]);
	head(f, FAM_parents);
	for (k = 0; k < NSTATES; k++) {
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
			fprintf(f, "%s{app=\"", fam[FAM_parents].prom);
			relayd_prom_label(f, p->app);
			fprintf(f, "\",state=\"%s\"} %zu\n", states[k], n);
		}
	}
	head(f, FAM_memory);
	fprintf(f, "%s %llu\n", fam[FAM_memory].prom,
		(unsigned long long)s->parents_rss_bytes);
	head(f, FAM_latency);
	for (k = 0; k < NPATHS; k++) {
		const char *name = fam[FAM_latency].prom;
		uint64_t cum = 0;

		for (b = 0; b < RELAY_WARM_LATENCY_BUCKETS - 1; b++) {
			cum += s->latency_us[k][b];
			fprintf(f, "%s_bucket{path=\"%s\",le=\"", name,
				paths[k].label);
			relayd_prom_double(f, (double)bounds[b] / 1e6);
			fprintf(f, "\"} %llu\n", (unsigned long long)cum);
		}
		cum += s->latency_us[k][b];
		fprintf(f, "%s_bucket{path=\"%s\",le=\"+Inf\"} %llu\n",
			name, paths[k].label, (unsigned long long)cum);
		fprintf(f, "%s_sum{path=\"%s\"} ", name, paths[k].label);
		relayd_prom_double(f, (double)s->latency_sum_us[k] / 1e6);
		fputc('\n', f);
		fprintf(f, "%s_count{path=\"%s\"} %llu\n", name,
			paths[k].label, (unsigned long long)cum);
	}
}

void *relayd_warm_json(const relayd_warm_snap *w)
{
	const relay_runtime_warm_stats *s = &w->st;
	json_t *o = json_object(), *fails = json_object(),
	       *parents = json_array();
	size_t i;
	int pos;

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
	for (pos = 1; pos <= (int)NPATHS; pos++)
		for (i = 0; i < NPATHS; i++)
			if (paths[i].file == pos)
				json_object_set_new(o, paths[i].key,
					json_integer((json_int_t)path_starts(
						s, &paths[i])));
	json_object_set_new(o, fam[FAM_failures].key, fails);
	json_object_set_new(o, fam[FAM_memory].key,
			    json_integer((json_int_t)s->parents_rss_bytes));
	json_object_set_new(o, fam[FAM_parents].key, parents);
	return o;
}
