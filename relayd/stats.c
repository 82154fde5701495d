/*
 * stats.c - relayd's metrics: the Prometheus text of /metrics and the
 * stats file of RELAY_STATE_DIR (doc/protocol.md), both rendered from one
 * relayd_stats snapshot taken on the loop thread.
 *
 * The engine's figures, their names and their order come from the one
 * table of relay/metrics.h; the schedule publisher's, the histograms and
 * retention are relayd's own and written here.
 *
 * Handler durations go into a fixed-bucket histogram per (app, handler);
 * the buckets are cumulative only when rendered.
 */
#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <float.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "relayd.h"
#include "relay/daemon_metrics.h"
#include "relay/metrics.h"

static const double bounds[RELAY_CONSUMER_DURATION_NBUCKETS] =
	RELAY_CONSUMER_DURATION_BUCKETS;

void relayd_stats_clear(relayd_stats *s)
{
	size_t i;

	for (i = 0; i < s->nhists; i++) {
		free(s->hists[i].app);
		free(s->hists[i].handler);
	}
	free(s->hists);
	s->hists = NULL;
	s->nhists = 0;
	free(s->streams);
	s->streams = NULL;
	s->nstreams = 0;
	relayd_warm_clear(&s->warm);
}

static int take_hist(const relay_consumer_histogram *h, void *payload)
{
	relayd_stats *s = payload;
	relayd_hist *n;
	size_t i, b;

	/* The same app/handler on another stream: add up. */
	for (i = 0; i < s->nhists; i++) {
		n = &s->hists[i];
		if (strcmp(n->app, h->app) || strcmp(n->handler, h->handler))
			continue;
		for (b = 0; b < RELAY_CONSUMER_DURATION_NBUCKETS; b++)
			n->buckets[b] += h->buckets[b];
		n->count += h->count;
		n->sum_s += h->sum_seconds;
#define ADD_OUTCOME(id, name) n->id += h->id;
		RELAY_HANDLER_OUTCOMES(ADD_OUTCOME)
#undef ADD_OUTCOME
		return 0;
	}
	n = realloc(s->hists, (s->nhists + 1) * sizeof(*n));
	if (!n)
		return -1;
	s->hists = n;
	n = &s->hists[s->nhists];
	memset(n, 0, sizeof(*n));
	n->app = strdup(h->app);
	n->handler = strdup(h->handler);
	if (!n->app || !n->handler) {
		free(n->app);
		free(n->handler);
		return -1;
	}
	memcpy(n->buckets, h->buckets, sizeof(n->buckets));
	n->count = h->count;
	n->sum_s = h->sum_seconds;
#define SET_OUTCOME(id, name) n->id = h->id;
	RELAY_HANDLER_OUTCOMES(SET_OUTCOME)
#undef SET_OUTCOME
	s->nhists++;
	return 0;
}

/* The engine's figures, one row each (relay/metrics.h). */
static const relay_metric_info rows[] = {
	RELAY_CONSUMER_METRICS(RELAY_METRIC_INFO)
};
#define NROWS (sizeof(rows) / sizeof(rows[0]))

#define FIELD(m, r, type) (*(type *)(void *)((char *)(m) + (r)->offset))
#define CFIELD(m, r, type) \
	(*(const type *)(const void *)((const char *)(m) + (r)->offset))

/* @a += @b: counters and gauges add up; the oldest pending age is the
 * largest, and Redis is up only when it is for every stream. */
static void metrics_add(relay_consumer_metrics *a,
			const relay_consumer_metrics *b, int first)
{
	size_t i;

	for (i = 0; i < NROWS; i++) {
		const relay_metric_info *r = &rows[i];

		if (r->kind == RELAY_METRIC_AGE) {
			if (first || CFIELD(b, r, int64_t) >
				     FIELD(a, r, int64_t))
				FIELD(a, r, int64_t) = CFIELD(b, r, int64_t);
		} else if (r->kind == RELAY_METRIC_FLAG)
			FIELD(a, r, int) = first ? CFIELD(b, r, int) :
				FIELD(a, r, int) && CFIELD(b, r, int);
		else
			FIELD(a, r, uint64_t) += CFIELD(b, r, uint64_t);
	}
}

int relayd_stats_take(relayd_stats *s, relay_consumer *const *c,
		      char *const *names, size_t n)
{
	relayd_warm_snap w = s->warm;
	relay_consumer_metrics one;
	size_t i;

	memset(&s->warm, 0, sizeof(s->warm));
	relayd_stats_clear(s);
	s->warm = w;
	memset(&s->m, 0, sizeof(s->m));
	s->m.version = RELAY_CONSUMER_METRICS_VERSION;
	if (n > 1) {
		s->streams = calloc(n, sizeof(*s->streams));
		if (!s->streams)
			return -1;
		s->nstreams = n;
	}
	for (i = 0; i < n; i++) {
		memset(&one, 0, sizeof(one));
		one.version = RELAY_CONSUMER_METRICS_VERSION;
		if (s->streams)
			s->streams[i].name = names[i];
		if (!c[i])
			continue;  /* closed */
		if (relay_consumer_metrics_get(c[i], &one))
			return -1;
		metrics_add(&s->m, &one, i == 0);
		if (s->streams)
			s->streams[i].m = one;
		if (relay_consumer_histograms(c[i], take_hist, s))
			return -1;
	}
	return 0;
}

/* A label value with \, " and newline escaped (exposition format). */
void relayd_prom_label(FILE *f, const char *v)
{
	for (; *v; v++) {
		if (*v == '\\' || *v == '"')
			fprintf(f, "\\%c", *v);
		else if (*v == '\n')
			fputs("\\n", f);
		else
			fputc(*v, f);
	}
}

void relayd_prom_double(FILE *f, double v)
{
	char buf[40];
	int prec;

	if (v != v) {
		fputs("NaN", f);
		return;
	}
	if (v > DBL_MAX || v < -DBL_MAX) {
		fputs(v > 0 ? "+Inf" : "-Inf", f);
		return;
	}
	/* Integers below 2^53 are exact: no exponent, no fraction. */
	if (v > -9007199254740992.0 && v < 9007199254740992.0 &&
	    v == (double)(long long)v) {
		fprintf(f, "%lld", (long long)v);
		return;
	}
	/* The fewest significant digits that read back as @v: 60.882, not
	 * 60.881999999999998. */
	for (prec = 1; prec < 17; prec++) {
		snprintf(buf, sizeof(buf), "%.*g", prec, v);
		if (strtod(buf, NULL) == v)
			break;
	}
	if (prec == 17)
		snprintf(buf, sizeof(buf), "%.17g", v);
	fputs(buf, f);
}

static void counter(FILE *f, const char *name, const char *help,
		    uint64_t v)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s counter\n%s %llu\n", name, help,
		name, name, (unsigned long long)v);
}

static void gauge(FILE *f, const char *name, const char *help, double v)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s gauge\n%s ", name, help,
		name, name);
	relayd_prom_double(f, v);
	fputc('\n', f);
}

/* A figure's value as a sample (an age in seconds). */
static double mval(const relay_consumer_metrics *m, const relay_metric_info *r)
{
	if (r->kind == RELAY_METRIC_AGE)
		return (double)CFIELD(m, r, int64_t) / 1000.0;
	if (r->kind == RELAY_METRIC_FLAG)
		return (double)CFIELD(m, r, int);
	return (double)CFIELD(m, r, uint64_t);
}

/*
 * A per-stream figure of the engine: with one stream one sample without
 * labels (as always); with several, one sample per stream labelled
 * stream="<name>" (sum them for the daemon's total).
 */
static void sfig(FILE *f, const relayd_stats *s, const relay_metric_info *r)
{
	int is_counter = r->kind == RELAY_METRIC_COUNTER;
	char name[128];
	size_t i;

	if (r->prom)
		snprintf(name, sizeof(name), "%s", r->prom);
	else
		snprintf(name, sizeof(name), "relay_%s%s", relay_metric_key(r),
			 is_counter ? "_total" : "");
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, r->help, name,
		is_counter ? "counter" : "gauge");
	if (!s->nstreams) {
		if (is_counter)
			fprintf(f, "%s %llu\n", name,
				(unsigned long long)mval(&s->m, r));
		else {
			fprintf(f, "%s ", name);
			relayd_prom_double(f, mval(&s->m, r));
			fputc('\n', f);
		}
		return;
	}
	for (i = 0; i < s->nstreams; i++) {
		fprintf(f, "%s{stream=\"", name);
		relayd_prom_label(f, s->streams[i].name);
		if (is_counter)
			fprintf(f, "\"} %llu\n", (unsigned long long)
				mval(&s->streams[i].m, r));
		else {
			fputs("\"} ", f);
			relayd_prom_double(f, mval(&s->streams[i].m, r));
			fputc('\n', f);
		}
	}
}

/* Every figure of @section, in the table's order. */
static void section_prometheus(FILE *f, const relayd_stats *s,
			       relay_metric_section section)
{
	size_t i;

	for (i = 0; i < NROWS; i++)
		if (rows[i].section == section)
			sfig(f, s, &rows[i]);
}

static void hist_labels(FILE *f, const relayd_hist *h)
{
	fputs("app=\"", f);
	relayd_prom_label(f, h->app);
	fputs("\",handler=\"", f);
	relayd_prom_label(f, h->handler);
	fputc('"', f);
}

static void histogram(FILE *f, const relayd_stats *s)
{
	static const char name[] = "relay_handler_duration_seconds";
	size_t i, b;

	fprintf(f, "# HELP %s Handler attempt run time, spawn to exit.\n"
		   "# TYPE %s histogram\n", name, name);
	for (i = 0; i < s->nhists; i++) {
		const relayd_hist *h = &s->hists[i];

		for (b = 0; b < RELAY_CONSUMER_DURATION_NBUCKETS; b++) {
			fprintf(f, "%s_bucket{", name);
			hist_labels(f, h);
			fputs(",le=\"", f);
			relayd_prom_double(f, bounds[b]);
			fprintf(f, "\"} %llu\n",
				(unsigned long long)h->buckets[b]);
		}
		fprintf(f, "%s_bucket{", name);
		hist_labels(f, h);
		fprintf(f, ",le=\"+Inf\"} %llu\n",
			(unsigned long long)h->count);
		fprintf(f, "%s_sum{", name);
		hist_labels(f, h);
		fputs("} ", f);
		relayd_prom_double(f, h->sum_s);
		fputc('\n', f);
		fprintf(f, "%s_count{", name);
		hist_labels(f, h);
		fprintf(f, "} %llu\n", (unsigned long long)h->count);
	}
}

/*
 * relay_handler_outcomes_total: each attempt once as succeeded, failed or
 * timed_out; exhausted once per invocation given up after its last
 * allowed attempt (that attempt is also under failed or timed_out).
 */
static void outcomes(FILE *f, const relayd_stats *s)
{
#define OUTCOME_NAME(id, name) name,
	static const char *const what[] = {
		RELAY_HANDLER_OUTCOMES(OUTCOME_NAME)
	};
#undef OUTCOME_NAME
	static const char name[] = "relay_handler_outcomes_total";
	size_t i, k;

	fprintf(f, "# HELP %s Handler attempts by outcome (succeeded, "
		   "failed, timed_out) and invocations out of attempts "
		   "(exhausted).\n# TYPE %s counter\n", name, name);
	for (i = 0; i < s->nhists; i++) {
		const relayd_hist *h = &s->hists[i];
#define OUTCOME_VALUE(id, name) h->id,
		const uint64_t v[] = { RELAY_HANDLER_OUTCOMES(OUTCOME_VALUE) };
#undef OUTCOME_VALUE

		for (k = 0; k < sizeof(what) / sizeof(what[0]); k++) {
			fprintf(f, "%s{", name);
			hist_labels(f, h);
			fprintf(f, ",outcome=\"%s\"} %llu\n", what[k],
				(unsigned long long)v[k]);
		}
	}
}

/* relay_build_info: which relayd answers (the value is always 1). */
static void build_info(FILE *f)
{
	fputs("# HELP relay_build_info The relayd version, as a label.\n"
	      "# TYPE relay_build_info gauge\nrelay_build_info{version=\"",
	      f);
	relayd_prom_label(f, relay_version());
	fputs("\"} 1\n", f);
}

#define JU(v) json_integer((json_int_t)(v))

/* relayd's own figures (relay/daemon_metrics.h): one row each, read
 * from the struct that holds them. */
typedef struct figure {
	const char *key;
	const char *prom;
	const char *help;
	relay_figure_kind kind;
	size_t offset;
	int file;   /* position in its stats file object; 0: table order */
} figure;

#define SCHEDPUB_ROW(id, kind, key, prom, help) \
	{ key, prom, help, kind, offsetof(relayd_schedpub_counts, id), 0 },
static const figure schedpub_rows[] = {
	RELAY_SCHEDPUB_FIGURES(SCHEDPUB_ROW)
};
#undef SCHEDPUB_ROW

#define APPS_ROW(id, kind, key, prom, help) \
	{ key, prom, help, kind, offsetof(relayd_apps_counts, id), 0 },
static const figure apps_rows[] = {
	RELAY_APPS_FIGURES(APPS_ROW)
};
#undef APPS_ROW

#define RETENTION_ROW(id, kind, key, prom, help, file, ctl, ctl_label, \
		      ctl_json, ctl_key) \
	{ key, prom, help, kind, offsetof(relayd_retention_counts, id), \
	  file },
static const figure retention_rows[] = {
	RELAY_RETENTION_FIGURES(RETENTION_ROW)
};
#undef RETENTION_ROW

#define NFIG(a) (sizeof(a) / sizeof((a)[0]))

static uint64_t fig_u64(const void *base, const figure *r)
{
	return CFIELD(base, r, uint64_t);
}

static int64_t fig_i64(const void *base, const figure *r)
{
	return CFIELD(base, r, int64_t);
}

/* One family of @r's value in @base (a length not known yet: none). */
static void figure_prom(FILE *f, const void *base, const figure *r)
{
	switch (r->kind) {
	case RELAY_FIGURE_COUNTER:
		counter(f, r->prom, r->help, fig_u64(base, r));
		break;
	case RELAY_FIGURE_GAUGE:
		gauge(f, r->prom, r->help, (double)fig_u64(base, r));
		break;
	case RELAY_FIGURE_PERIOD:
	case RELAY_FIGURE_AGE:
		gauge(f, r->prom, r->help, (double)fig_i64(base, r) / 1000.0);
		break;
	case RELAY_FIGURE_LENGTH:
		if (fig_i64(base, r) >= 0)
			gauge(f, r->prom, r->help, (double)fig_i64(base, r));
		break;
	case RELAY_FIGURE_FLAG:
		gauge(f, r->prom, r->help, (double)CFIELD(base, r, bool));
		break;
	}
}

/* The families of @rows whose kind is @kind (-1: all), in table order. */
static void figures_prom(FILE *f, const void *base, const figure *rows_,
			 size_t n, int kind)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (kind < 0 || (int)rows_[i].kind == kind)
			figure_prom(f, base, &rows_[i]);
}

/* @r's value as a stats file value. */
static json_t *figure_json(const void *base, const figure *r)
{
	switch (r->kind) {
	case RELAY_FIGURE_PERIOD:
		return JU(fig_i64(base, r) / 1000);
	case RELAY_FIGURE_AGE:
		return json_real((double)fig_i64(base, r) / 1000.0);
	case RELAY_FIGURE_LENGTH:
		return fig_i64(base, r) >= 0 ? JU(fig_i64(base, r)) :
					       json_null();
	case RELAY_FIGURE_FLAG:
		return json_boolean(CFIELD(base, r, bool));
	case RELAY_FIGURE_COUNTER:
	case RELAY_FIGURE_GAUGE:
		break;
	}
	return JU(fig_u64(base, r));
}

/* The figures of @rows whose kind is @kind (-1: all) into @o, in the
 * order of their file positions (table order when they have none). */
static void figures_json(json_t *o, const void *base, const figure *rows_,
			 size_t n, int kind)
{
	size_t k;
	int pos;

	for (pos = 1; o && pos <= (int)n; pos++)
		for (k = 0; k < n; k++) {
			const figure *r = &rows_[k];

			if ((r->file ? r->file : (int)k + 1) != pos ||
			    (kind >= 0 && (int)r->kind != kind))
				continue;
			json_object_set_new(o, r->key, figure_json(base, r));
		}
}

/* The "retention" object of the stats file (doc/protocol.md). */
static json_t *retention_json(const relayd_retention_counts *r)
{
	json_t *o = json_object();

	figures_json(o, r, retention_rows, NFIG(retention_rows), -1);
	return o;
}

/*
 * relay_events_received_total counts external events that were classified
 * (decoded and matched against the apps), so received = matched +
 * unmatched always holds; malformed messages and schedule occurrences have
 * their own counters.
 */
char *relayd_stats_prometheus(const relayd_stats *s, size_t *len)
{
	char *buf = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&buf, &n);

	if (!f)
		return NULL;
	section_prometheus(f, s, RELAY_METRIC_DELIVERY);
	figures_prom(f, &s->sp, schedpub_rows, NFIG(schedpub_rows),
		     RELAY_FIGURE_COUNTER);
	section_prometheus(f, s, RELAY_METRIC_SCHEDULE);
	section_prometheus(f, s, RELAY_METRIC_ATTEMPTS);
	histogram(f, s);
	outcomes(f, s);
	figures_prom(f, &s->sp, schedpub_rows, NFIG(schedpub_rows),
		     RELAY_FIGURE_GAUGE);
	section_prometheus(f, s, RELAY_METRIC_GAUGES);
	figures_prom(f, &s->apps, apps_rows, NFIG(apps_rows), -1);
	relayd_warm_prometheus(f, &s->warm);
	figures_prom(f, &s->ret, retention_rows, NFIG(retention_rows), -1);
	build_info(f);
	relayd_process_prometheus(f);
	if (fclose(f) != 0) {
		free(buf);
		return NULL;
	}
	if (len)
		*len = n;
	return buf;
}

static char *iso8601(int64_t ms, char *buf, size_t size)
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;
	size_t n;

	gmtime_r(&t, &tm);
	n = strftime(buf, size, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf + n, size - n, ".%03uZ", (unsigned int)(ms % 1000));
	return buf;
}

/* A figure as a stats file value. */
static json_t *row_json(const relay_consumer_metrics *m,
			const relay_metric_info *r)
{
	if (r->kind == RELAY_METRIC_AGE)
		return json_real((double)CFIELD(m, r, int64_t) / 1000.0);
	if (r->kind == RELAY_METRIC_FLAG)
		return json_boolean(CFIELD(m, r, int));
	return JU(CFIELD(m, r, uint64_t));
}

/* Every figure of @section into @o, in the table's order. */
static void section_json(json_t *o, const relay_consumer_metrics *m,
			 relay_metric_section section)
{
	size_t i;

	for (i = 0; o && i < NROWS; i++)
		if (rows[i].section == section)
			json_object_set_new(o, relay_metric_key(&rows[i]),
					    row_json(m, &rows[i]));
}

/* Several streams: each one's own figures, by name, in the table's
 * stream order. */
static json_t *streams_json(const relayd_stats *s)
{
	json_t *o = json_object();
	size_t i, k;
	int pos, found;

	for (i = 0; o && i < s->nstreams; i++) {
		json_t *one = json_object();

		for (pos = 1, found = 1; one && found; pos++)
			for (k = 0, found = 0; k < NROWS; k++)
				if (rows[k].stream == pos) {
					json_object_set_new(one,
						relay_metric_key(&rows[k]), row_json(
						&s->streams[i].m, &rows[k]));
					found = 1;
				}
		json_object_set_new(o, s->streams[i].name, one);
	}
	return o;
}

void *relayd_stats_json(const relayd_stats *s, const relayd_config *c)
{
	const relay_consumer_metrics *m = &s->m;
	json_t *root, *counters, *gauges, *handlers;
	struct timespec now;
	char tbuf[40];
	size_t i;

	clock_gettime(CLOCK_REALTIME, &now);
	counters = json_object();
	gauges = json_object();
	section_json(counters, m, RELAY_METRIC_DELIVERY);
	section_json(counters, m, RELAY_METRIC_ATTEMPTS);
	section_json(gauges, m, RELAY_METRIC_GAUGES);
	handlers = json_array();
	for (i = 0; i < s->nhists; i++) {
		const relayd_hist *h = &s->hists[i];
		json_t *outc = json_object();

#define OUTCOME_JSON(id, name) json_object_set_new(outc, name, JU(h->id));
		if (outc) {
			RELAY_HANDLER_OUTCOMES(OUTCOME_JSON)
		}
#undef OUTCOME_JSON
		json_array_append_new(handlers, json_pack(
			"{s:s, s:s, s:o, s:f, s:o}", "app", h->app, "handler",
			h->handler, "attempts", JU(h->count),
			"duration_seconds_sum", h->sum_s, "outcomes", outc));
	}
	root = json_pack("{s:i, s:o, s:s, s:s, s:s}", "version", 1,
			 "pid", JU(getpid()), "stream", c->stream,
			 "group", c->group, "consumer", c->consumer);
	if (!root || !counters || !gauges || !handlers) {
		json_decref(root);
		json_decref(counters);
		json_decref(gauges);
		json_decref(handlers);
		return NULL;
	}
	json_object_set_new(root, "written_at", json_string(iso8601(
		(int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000, tbuf,
		sizeof(tbuf))));
	json_object_set_new(root, "started_at", json_string(
		iso8601(s->started_at_ms, tbuf, sizeof(tbuf))));
	json_object_set_new(root, "reset_at", s->reset_at_ms ?
		json_string(iso8601(s->reset_at_ms, tbuf, sizeof(tbuf))) :
		json_null());
	figures_json(counters, &s->sp, schedpub_rows, NFIG(schedpub_rows),
		     RELAY_FIGURE_COUNTER);
	section_json(counters, m, RELAY_METRIC_SCHEDULE);
	figures_json(gauges, &s->sp, schedpub_rows, NFIG(schedpub_rows),
		     RELAY_FIGURE_GAUGE);
	figures_json(gauges, &s->apps, apps_rows, NFIG(apps_rows), -1);
	json_object_set_new(root, "counters", counters);
	json_object_set_new(root, "gauges", gauges);
	json_object_set_new(root, "handlers", handlers);
	json_object_set_new(root, "warm", relayd_warm_json(&s->warm));
	json_object_set_new(root, "retention", retention_json(&s->ret));
	if (s->nstreams)
		json_object_set_new(root, "streams", streams_json(s));
	return root;
}

int relayd_write_atomic(const char *dir, const char *name, const char *data,
			size_t len)
{
	char tmp[4096], path[4096];
	int fd, rc = -1;
	size_t off = 0;

	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, name) >=
	    sizeof(path) ||
	    (size_t)snprintf(tmp, sizeof(tmp), "%s/.%s.%ld.tmp", dir, name,
			     (long)getpid()) >= sizeof(tmp))
		return -1;
	/*
	 * A fresh file, never an existing one and never through a symlink:
	 * whatever sits at the temp name (a leftover of a crash, or a link
	 * planted to make us overwrite its target) is unlinked (the link,
	 * not its target) and the create retried once; losing that race
	 * again is an error, not a write elsewhere.
	 */
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
		  0644);
	if (fd < 0 && errno == EEXIST && unlink(tmp) == 0)
		fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
			  O_CLOEXEC, 0644);
	if (fd < 0)
		return -1;
	while (off < len) {
		ssize_t w = write(fd, data + off, len - off);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			goto done;
		}
		off += (size_t)w;
	}
	if (fsync(fd) != 0)
		goto done;
	rc = 0;
done:
	if (close(fd) != 0)
		rc = -1;
	if (rc == 0 && rename(tmp, path) != 0)
		rc = -1;
	if (rc) {
		unlink(tmp);
		return rc;
	}
	/* The rename itself is durable only once the directory is. */
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0) {
		(void)fsync(fd);
		close(fd);
	}
	return 0;
}
