/*
 * stats.c - relayd's metrics: the Prometheus text of /metrics and the
 * stats file of RELAY_STATE_DIR (doc/protocol.md), both rendered from one
 * relayd_stats snapshot taken on the loop thread.
 *
 * Handler durations go into a fixed-bucket histogram per (app, handler);
 * the buckets are cumulative only when rendered.
 */
#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "relayd.h"

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
	s->nhists++;
	return 0;
}

/* @a += @b: counters and gauges add up, except the two below. */
static void metrics_add(relay_consumer_metrics *a,
			const relay_consumer_metrics *b, int first)
{
#define ADD(f) a->f += b->f
	ADD(events_received); ADD(events_matched); ADD(events_unmatched);
	ADD(events_malformed); ADD(events_oversized); ADD(events_schedule);
	ADD(handler_success); ADD(handler_failure); ADD(retries);
	ADD(dlq_entries); ADD(missing_payload); ADD(concurrency_waits);
	ADD(concurrency_timeouts); ADD(reclaims); ADD(acks);
	ADD(redis_errors); ADD(in_flight_invocations); ADD(buffered_events);
	ADD(pending_entries); ADD(schedule_malformed); ADD(schedule_obsolete);
	ADD(step_failures); ADD(stuck_messages);
#undef ADD
	if (first || b->pending_oldest_age_ms > a->pending_oldest_age_ms)
		a->pending_oldest_age_ms = b->pending_oldest_age_ms;
	a->redis_up = first ? b->redis_up : a->redis_up && b->redis_up;
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

static void counter(FILE *f, const char *name, const char *help,
		    uint64_t v)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s counter\n%s %llu\n", name, help,
		name, name, (unsigned long long)v);
}

static void gauge(FILE *f, const char *name, const char *help, double v)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s gauge\n%s %.17g\n", name, help,
		name, name, v);
}

/*
 * An engine figure: a uint64_t field at offset @off of the metrics, or one
 * of these (not a plain uint64_t field).
 */
#define M_RECEIVED ((size_t)-1)   /* matched + unmatched */
#define M_OLDEST ((size_t)-2)     /* pending_oldest_age_ms, in seconds */
#define M_REDIS_UP ((size_t)-3)
#define M(f) offsetof(relay_consumer_metrics, f)

static double mval(const relay_consumer_metrics *m, size_t off)
{
	if (off == M_RECEIVED)
		return (double)(m->events_matched + m->events_unmatched);
	if (off == M_OLDEST)
		return (double)m->pending_oldest_age_ms / 1000.0;
	if (off == M_REDIS_UP)
		return (double)m->redis_up;
	return (double)*(const uint64_t *)(const void *)
		((const char *)m + off);
}

/*
 * A per-stream figure of the engine: with one stream one sample without
 * labels (as always); with several, one sample per stream labelled
 * stream="<name>" (sum them for the daemon's total).
 */
static void sfig(FILE *f, const relayd_stats *s, const char *type,
		 const char *name, const char *help, size_t off)
{
	size_t i;

	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
	if (!s->nstreams) {
		if (strcmp(type, "counter") == 0)
			fprintf(f, "%s %llu\n", name,
				(unsigned long long)mval(&s->m, off));
		else
			fprintf(f, "%s %.17g\n", name, mval(&s->m, off));
		return;
	}
	for (i = 0; i < s->nstreams; i++) {
		fprintf(f, "%s{stream=\"", name);
		relayd_prom_label(f, s->streams[i].name);
		if (strcmp(type, "counter") == 0)
			fprintf(f, "\"} %llu\n", (unsigned long long)
				mval(&s->streams[i].m, off));
		else
			fprintf(f, "\"} %.17g\n",
				mval(&s->streams[i].m, off));
	}
}

#define SCOUNTER(f, s, name, help, off) sfig(f, s, "counter", name, help, off)
#define SGAUGE(f, s, name, help, off) sfig(f, s, "gauge", name, help, off)

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
			fprintf(f, ",le=\"%g\"} %llu\n", bounds[b],
				(unsigned long long)h->buckets[b]);
		}
		fprintf(f, "%s_bucket{", name);
		hist_labels(f, h);
		fprintf(f, ",le=\"+Inf\"} %llu\n",
			(unsigned long long)h->count);
		fprintf(f, "%s_sum{", name);
		hist_labels(f, h);
		fprintf(f, "} %.9g\n", h->sum_s);
		fprintf(f, "%s_count{", name);
		hist_labels(f, h);
		fprintf(f, "} %llu\n", (unsigned long long)h->count);
	}
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
	SCOUNTER(f, s, "relay_events_received_total",
		"External events classified (matched + unmatched).",
		M_RECEIVED);
	SCOUNTER(f, s, "relay_events_matched_total",
		"Events that matched at least one rule.", M(events_matched));
	SCOUNTER(f, s, "relay_events_unmatched_total",
		"Events that matched no rule (acknowledged).",
		M(events_unmatched));
	SCOUNTER(f, s, "relay_events_malformed_total",
		"Malformed or oversized messages dead-lettered unrun.",
		M(events_malformed));
	SCOUNTER(f, s, "relay_events_schedule_total",
		"Schedule occurrences taken from the stream.",
		M(events_schedule));
	SCOUNTER(f, s, "relay_events_oversized_total",
		"Messages larger than MAX_EVENT_BYTES.", M(events_oversized));
	SCOUNTER(f, s, "relay_handler_success_total",
		"Handler attempts that exited 0.", M(handler_success));
	SCOUNTER(f, s, "relay_handler_failure_total",
		"Handler attempts that failed or timed out.",
		M(handler_failure));
	SCOUNTER(f, s, "relay_retries_total",
		"Handler attempts after the first.", M(retries));
	SCOUNTER(f, s, "relay_dlq_entries_total",
		"Entries written to the dead-letter queue.", M(dlq_entries));
	SCOUNTER(f, s, "relay_missing_payload_total",
		"Stream bodies gone before their message was acknowledged.",
		M(missing_payload));
	SCOUNTER(f, s, "relay_concurrency_waits_total",
		"Invocations that waited for a concurrency slot.",
		M(concurrency_waits));
	SCOUNTER(f, s, "relay_concurrency_timeouts_total",
		"Slot waits that gave up (message left pending).",
		M(concurrency_timeouts));
	SCOUNTER(f, s, "relay_reclaims_total",
		"Entries delivered again by XAUTOCLAIM.", M(reclaims));
	SCOUNTER(f, s, "relay_acks_total", "Messages acknowledged.", M(acks));
	SCOUNTER(f, s, "relay_redis_errors_total", "Failed Redis operations.",
		M(redis_errors));
	SCOUNTER(f, s, "relay_step_failures_total",
		"Redis steps that failed for one message while Redis "
		"answered (once per backoff step).", M(step_failures));
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
	SCOUNTER(f, s, "relay_schedule_occurrences_obsolete_total",
		"Schedule occurrences acknowledged unrun: schedule no longer "
		"configured.", M(schedule_obsolete));
	SCOUNTER(f, s, "relay_schedule_occurrences_malformed_total",
		"Schedule envelopes dead-lettered as malformed.",
		M(schedule_malformed));
	histogram(f, s);
	gauge(f, "relay_schedule_outbox_pending",
	      "Schedule occurrences waiting to be published.",
	      (double)s->sp.pending);
	SGAUGE(f, s, "relay_pending_entries",
	      "Entries in the consumer group's PEL (refreshed periodically).",
	      M(pending_entries));
	SGAUGE(f, s, "relay_pending_oldest_age_seconds",
	      "Idle time of the oldest PEL entry.",
	      M_OLDEST);
	SGAUGE(f, s, "relay_in_flight_invocations", "Handlers running now.",
	      M(in_flight_invocations));
	SGAUGE(f, s, "relay_buffered_events", "Messages held in memory.",
	      M(buffered_events));
	SGAUGE(f, s, "relay_redis_up", "1 when Redis is reachable.",
	      M_REDIS_UP);
	SGAUGE(f, s, "relay_stuck_messages",
	      "Messages whose Redis step keeps failing, in backoff "
	      "(relayctl health lists them).", M(stuck_messages));
	relayd_warm_prometheus(f, &s->warm);
	retention_metrics(f, &s->ret);
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

/* Several streams: each one's own figures, by name. */
static json_t *streams_json(const relayd_stats *s)
{
	json_t *o = json_object();
	size_t i;

	for (i = 0; o && i < s->nstreams; i++) {
		const relay_consumer_metrics *m = &s->streams[i].m;

		json_object_set_new(o, s->streams[i].name, json_pack(
			"{s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o,"
			" s:o, s:f, s:b}",
			"events_received",
			JU(m->events_matched + m->events_unmatched),
			"events_malformed", JU(m->events_malformed),
			"events_schedule", JU(m->events_schedule),
			"handler_success", JU(m->handler_success),
			"handler_failure", JU(m->handler_failure),
			"dlq_entries", JU(m->dlq_entries),
			"acks", JU(m->acks),
			"in_flight_invocations", JU(m->in_flight_invocations),
			"buffered_events", JU(m->buffered_events),
			"pending_entries", JU(m->pending_entries),
			"stuck_messages", JU(m->stuck_messages),
			"pending_oldest_age_seconds",
			(double)m->pending_oldest_age_ms / 1000.0,
			"redis_up", m->redis_up));
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
	counters = json_pack("{s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o,"
			     " s:o, s:o, s:o, s:o, s:o, s:o, s:o}",
		"events_received", JU(m->events_matched + m->events_unmatched),
		"events_matched", JU(m->events_matched),
		"events_unmatched", JU(m->events_unmatched),
		"events_malformed", JU(m->events_malformed),
		"events_schedule", JU(m->events_schedule),
		"events_oversized", JU(m->events_oversized),
		"handler_success", JU(m->handler_success),
		"handler_failure", JU(m->handler_failure),
		"retries", JU(m->retries),
		"dlq_entries", JU(m->dlq_entries),
		"missing_payload", JU(m->missing_payload),
		"concurrency_waits", JU(m->concurrency_waits),
		"concurrency_timeouts", JU(m->concurrency_timeouts),
		"reclaims", JU(m->reclaims),
		"acks", JU(m->acks),
		"redis_errors", JU(m->redis_errors));
	gauges = json_pack("{s:o, s:f, s:o, s:o, s:b}",
		"pending_entries", JU(m->pending_entries),
		"pending_oldest_age_seconds",
		(double)m->pending_oldest_age_ms / 1000.0,
		"in_flight_invocations", JU(m->in_flight_invocations),
		"buffered_events", JU(m->buffered_events),
		"redis_up", m->redis_up);
	json_object_set_new(counters, "step_failures",
			    JU(m->step_failures));
	json_object_set_new(gauges, "stuck_messages", JU(m->stuck_messages));
	handlers = json_array();
	for (i = 0; i < s->nhists; i++) {
		const relayd_hist *h = &s->hists[i];

		json_array_append_new(handlers, json_pack(
			"{s:s, s:s, s:o, s:f}", "app", h->app, "handler",
			h->handler, "attempts", JU(h->count),
			"duration_seconds_sum", h->sum_s));
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
	json_object_set_new(counters, "schedule_obsolete",
			    JU(m->schedule_obsolete));
	json_object_set_new(counters, "schedule_malformed",
			    JU(m->schedule_malformed));
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
