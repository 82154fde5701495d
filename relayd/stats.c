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
		n->succeeded += h->succeeded;
		n->failed += h->failed;
		n->timed_out += h->timed_out;
		n->exhausted += h->exhausted;
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
	n->succeeded = h->succeeded;
	n->failed = h->failed;
	n->timed_out = h->timed_out;
	n->exhausted = h->exhausted;
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
	static const char name[] = "relay_handler_outcomes_total";
	static const char *const what[4] = { "succeeded", "failed",
					     "timed_out", "exhausted" };
	size_t i, k;

	fprintf(f, "# HELP %s Handler attempts by outcome (succeeded, "
		   "failed, timed_out) and invocations out of attempts "
		   "(exhausted).\n# TYPE %s counter\n", name, name);
	for (i = 0; i < s->nhists; i++) {
		const relayd_hist *h = &s->hists[i];
		const uint64_t v[4] = { h->succeeded, h->failed,
					h->timed_out, h->exhausted };

		for (k = 0; k < 4; k++) {
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

static void retention_metrics(FILE *f, const relayd_retention_counts *r)
{
	counter(f, "relay_stream_trimmed_total",
		"Entries retention trimmed from the source stream.",
		r->stream_trimmed);
	counter(f, "relay_dlq_trimmed_total",
		"Entries retention trimmed from the DLQ.", r->dlq_trimmed);
	counter(f, "relay_retention_failures_total",
		"Failed retention steps.", r->failures);
	gauge(f, "relay_retention_failing",
	      "1 when the last retention tick failed.", (double)r->failing);
	gauge(f, "relay_stream_retention_seconds",
	      "REDIS_STREAM_RETENTION (0: disabled).",
	      (double)r->stream_retention_ms / 1000.0);
	gauge(f, "relay_dlq_retention_seconds",
	      "REDIS_DLQ_RETENTION (0: disabled).",
	      (double)r->dlq_retention_ms / 1000.0);
	if (r->stream_length >= 0)
		gauge(f, "relay_stream_length",
		      "Entries in the source stream (as of the last "
		      "retention step).", (double)r->stream_length);
	if (r->dlq_length >= 0)
		gauge(f, "relay_dlq_length",
		      "Entries in the DLQ (as of the last retention step).",
		      (double)r->dlq_length);
	gauge(f, "relay_stream_oldest_entry_age_seconds",
	      "Age of the oldest entry in the source stream.",
	      (double)r->oldest_entry_age_ms / 1000.0);
	gauge(f, "relay_stream_oldest_pending_entry_age_seconds",
	      "Age (since XADD) of the oldest entry pending in any group.",
	      (double)r->oldest_pending_age_ms / 1000.0);
}

/* The "retention" object of the stats file (doc/protocol.md). */
static json_t *retention_json(const relayd_retention_counts *r)
{
	return json_pack("{s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:f, s:f, s:b}",
		"stream_retention_seconds",
		JU(r->stream_retention_ms / 1000),
		"dlq_retention_seconds", JU(r->dlq_retention_ms / 1000),
		"stream_trimmed", JU(r->stream_trimmed),
		"dlq_trimmed", JU(r->dlq_trimmed),
		"failures", JU(r->failures),
		"stream_length", r->stream_length >= 0 ?
			JU(r->stream_length) : json_null(),
		"dlq_length", r->dlq_length >= 0 ?
			JU(r->dlq_length) : json_null(),
		"oldest_entry_age_seconds",
		(double)r->oldest_entry_age_ms / 1000.0,
		"oldest_pending_entry_age_seconds",
		(double)r->oldest_pending_age_ms / 1000.0,
		"failing", r->failing);
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
	counter(f, "relay_schedule_occurrences_published_total",
		"Schedule occurrences this relayd appended to the stream.",
		s->sp.published);
	counter(f, "relay_schedule_occurrences_duplicate_total",
		"Schedule occurrences found already published (by any "
		"relayd).", s->sp.duplicate);
	counter(f, "relay_schedule_publish_failures_total",
		"Failed schedule publication attempts (retried from the "
		"outbox).", s->sp.failures);
	counter(f, "relay_schedule_catchup_total",
		"Occurrences published by the start-up catch-up.",
		s->sp.catchup);
	section_prometheus(f, s, RELAY_METRIC_SCHEDULE);
	section_prometheus(f, s, RELAY_METRIC_ATTEMPTS);
	histogram(f, s);
	outcomes(f, s);
	gauge(f, "relay_schedule_outbox_pending",
	      "Schedule occurrences waiting to be published.",
	      (double)s->sp.pending);
	section_prometheus(f, s, RELAY_METRIC_GAUGES);
	relayd_warm_prometheus(f, &s->warm);
	retention_metrics(f, &s->ret);
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

		json_array_append_new(handlers, json_pack(
			"{s:s, s:s, s:o, s:f, s:{s:o, s:o, s:o, s:o}}", "app",
			h->app, "handler", h->handler, "attempts",
			JU(h->count), "duration_seconds_sum", h->sum_s,
			"outcomes", "succeeded", JU(h->succeeded), "failed",
			JU(h->failed), "timed_out", JU(h->timed_out),
			"exhausted", JU(h->exhausted)));
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
	json_object_set_new(counters, "schedule_published",
			    JU(s->sp.published));
	json_object_set_new(counters, "schedule_duplicate",
			    JU(s->sp.duplicate));
	json_object_set_new(counters, "schedule_publish_failures",
			    JU(s->sp.failures));
	json_object_set_new(counters, "schedule_catchup", JU(s->sp.catchup));
	section_json(counters, m, RELAY_METRIC_SCHEDULE);
	json_object_set_new(gauges, "schedule_outbox_pending",
			    JU(s->sp.pending));
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
