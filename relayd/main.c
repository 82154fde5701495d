/*
 * main.c - relayd, the Relay daemon: configuration, the run-dir lock, the
 * libev loop, signals, and the engine's lifetime (relayd(8)).
 *
 * Startup order: config → logger → lock → stats dir → apps → runtime
 * (fails if RELAY_SANDBOX=bwrap cannot run: never a silent fallback) →
 * Redis backend → consumer → control socket → /metrics → apps watch →
 * start. Any failure before the loop runs prints one line and exits 1.
 *
 * Stopping: the first SIGTERM/SIGINT asks the consumer to drain (stop
 * reading, running handlers finish up to their timeout); a second one
 * stops at once (running handlers are killed; the PEL keeps the
 * messages). When the consumer reports stopped, the stats file is
 * flushed and the consumer closed; its close callback breaks the loop.
 * Exit status 0 after a signal-requested stop.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "relay/daemon_metrics.h"
#include "relay/relay.h"
#include "relay/relay_libev.h"
#include "relay_config.h"
#include "relayd.h"

#define STATS_FILE "stats.json"
#define METRICS_INTERVAL_S 1.0
#define STATS_INTERVAL_S 5.0
#define CONTROL_IDLE_S 30.0    /* control connection with nothing asked */

static void usage(FILE *f)
{
	fprintf(f,
		"usage: relayd [--check] [--help] [--version]\n\n"
		"Runs the Relay stream engine in the foreground. "
		"With --check, checks the\nconfiguration, the apps, the "
		"sandbox and Redis, prints what it found and\nexits "
		"(0: ready to run, 1: not). Configuration comes from the "
		"environment:\n");
	relayd_vars_usage(f);
	fprintf(f, "See relayd(8).\n");
}

relay_redis_backend *relayd_stream_redis(const relayd *d, const char *stream)
{
	size_t i;

	if (!d->sredis)
		return NULL;    /* before start-up, after shutdown */
	for (i = 0; i < d->cfg.nstreams; i++)
		if (d->sredis[i] && strcmp(d->cfg.streams[i], stream) == 0)
			return d->sredis[i];
	return d->sredis[0];
}

relay_redis_backend *relayd_ctl_redis(const relayd *d, const char *stream)
{
	size_t i;

	if (!d->credis)
		return NULL;    /* before start-up, after shutdown */
	for (i = 0; i < d->cfg.nstreams; i++)
		if (strcmp(d->cfg.streams[i], stream) == 0)
			return d->credis[i];
	return NULL;
}

double relayd_scaled(const relayd *d, double seconds)
{
	double s = seconds / (d->cfg.time_scale ? d->cfg.time_scale : 1);

	return s < 0.05 ? 0.05 : s;
}

int64_t relayd_wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int take(relayd *d, relayd_stats *s)
{
	memset(s, 0, sizeof(*s));
	/* Once one stream's consumer is closed its figures are gone: no
	 * partial snapshot may overwrite the final one (on_stopped). */
	if (!relayd_consumer(d) || d->nopen < d->nconsumers)
		return -1;
	s->started_at_ms = d->started_at_ms;
	s->reset_at_ms = d->reset_at_ms;
	relayd_schedpub_counts_get(d->schedpub, &s->sp);
	relayd_warm_take(&s->warm, d->rt);
	relayd_retention_counts_get(d->retention, &s->ret);
	if (relayd_stats_take(s, d->consumers, d->cfg.streams,
			      d->nconsumers)) {
		relayd_stats_clear(s);
		return -1;
	}
	return 0;
}

void *relayd_stats_snapshot(relayd *d)
{
	relayd_stats s;
	json_t *j;

	if (take(d, &s))
		return NULL;
	j = relayd_stats_json(&s, &d->cfg);
	relayd_stats_clear(&s);
	return j;
}

int relayd_flush_stats(relayd *d)
{
	json_t *j = relayd_stats_snapshot(d);
	char *text;
	int rc = -1;

	if (!j)
		return -1;
	text = json_dumps(j, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	json_decref(j);
	if (text) {
		size_t n = strlen(text);

		text[n] = '\n';
		rc = relayd_write_atomic(d->cfg.state_dir, STATS_FILE, text,
					 n + 1);
		free(text);
	}
	if (rc)
		relayd_log(RELAY_LOG_WARN, "RELAYD-STATS01",
			   "cannot write %s/%s: %s", d->cfg.state_dir,
			   STATS_FILE, strerror(errno));
	return rc;
}

/*
 * Trace export: the exporter runs on the loop when an endpoint is set;
 * every consumer hands it the span of each sampled handler attempt
 * (on_span, options.span). Header values are never logged.
 */
static void start_tracing(relayd *d)
{
	const relay_otlp_config *c = &d->cfg.otlp;
	relay_logger lg = relayd_logger();

	if (c->warning)
		relayd_log(RELAY_LOG_WARN, "RELAYD-OTLP04", "tracing: %s",
			   c->warning);
	if (!c->enabled) {
		relayd_log(RELAY_LOG_INFO, "RELAYD-OTLP00", "tracing: export "
			   "off (%s)", c->sdk_disabled ? "OTEL_SDK_DISABLED="
			   "true" : c->protocol_unsupported ? "unsupported "
			   "OTEL_EXPORTER_OTLP_PROTOCOL" : "set "
			   "OTEL_EXPORTER_OTLP_ENDPOINT to export spans");
		return;
	}
	if (!relay_otlp_available()) {
		relayd_log(RELAY_LOG_WARN, "RELAYD-OTLP03", "tracing: export "
			   "unavailable: relayd was built without libcurl "
			   "(-Dotlp); OTEL_EXPORTER_OTLP_* is ignored");
		return;
	}
	if (relay_otlp_new(&d->otlp, d->loop, c, lg)) {
		relayd_log(RELAY_LOG_WARN, "RELAYD-OTLP03", "tracing: export "
			   "unavailable: out of memory");
		return;
	}
	relayd_log(RELAY_LOG_INFO, "RELAYD-OTLP00", "tracing: exporting "
		   "spans with OTLP/HTTP (protobuf), batches of %zu every "
		   "%lld ms, queue %zu", c->max_batch,
		   (long long)c->schedule_delay_ms, c->max_queue);
}

/* The exporter's counters in Prometheus text (malloc'd, *len); NULL when
 * export is off. */
static char *tracing_prometheus(const relayd *d, size_t *len)
{
#define TRACE_ROW(id, kind, prom, help) \
	{ prom, help, kind == RELAY_FIGURE_COUNTER ? "counter" : "gauge", \
	  offsetof(relay_otlp_counts, id) },
	static const struct {
		const char *prom, *help, *type;
		size_t offset;
	} rows[] = { RELAY_TRACE_EXPORT_FIGURES(TRACE_ROW) };
#undef TRACE_ROW
	relay_otlp_counts k;
	size_t i, n = 0, size = 2048;
	char *t;
	int w;

	if (!d->otlp)
		return NULL;
	t = malloc(size);
	if (!t)
		return NULL;
	relay_otlp_counts_get(d->otlp, &k);
	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		const void *v = (const char *)&k + rows[i].offset;

		w = snprintf(t + n, size - n, "# HELP %s %s\n# TYPE %s %s\n"
			     "%s %llu\n", rows[i].prom, rows[i].help,
			     rows[i].prom, rows[i].type, rows[i].prom,
			     (unsigned long long)*(const uint64_t *)v);
		if (w < 0 || (size_t)w >= size - n) {
			free(t);
			return NULL;
		}
		n += (size_t)w;
	}
	*len = n;
	return t;
}

static void publish_metrics(relayd *d)
{
	relayd_stats s;
	size_t len;
	char *text;

	if (!d->http || take(d, &s))
		return;
	text = relayd_stats_prometheus(&s, &len);
	relayd_stats_clear(&s);
	if (text) {
		size_t xlen;
		char *x = relayd_outbudget_prometheus(d->outbudget, &xlen);
		char *both = x ? realloc(text, len + xlen + 1) : NULL;

		if (both) {
			memcpy(both + len, x, xlen + 1);
			text = both;
			len += xlen;
		}
		free(x);
		x = tracing_prometheus(d, &xlen);
		both = x ? realloc(text, len + xlen + 1) : NULL;
		if (both) {
			memcpy(both + len, x, xlen + 1);
			text = both;
			len += xlen;
		}
		free(x);
		relayd_http_publish(d->http, text, len);
	}
	{
		relay_consumer_health h;
		char reason[sizeof(h.reason) + 600];

		relayd_health(d, &h, reason, sizeof(reason));
		relayd_http_set_ready(d->http, h.ready, reason);
	}
}

static void on_metrics_timer(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop;
	(void)revents;
	publish_metrics(w->data);
}

static void on_stats_timer(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop;
	(void)revents;
	relayd_flush_stats(w->data);
}

/*
 * NOTIFY_SOCKET: READY=1 the first time every stream's consumer is ready
 * (its group exists, its first read went out), then STATUS= whenever the
 * one-line summary changes. Polled: quickly until ready, then every
 * second.
 */
#define NOTIFY_START_S 0.05
#define NOTIFY_INTERVAL_S 1.0

static void on_notify_timer(struct ev_loop *loop, ev_timer *w, int revents)
{
	relayd *d = w->data;
	relay_consumer_health h;
	char reason[sizeof(h.reason) + 600], status[sizeof(d->notified_status)];
	size_t apps = relay_appset_entry_count(d->apps) -
		      relay_appset_invalid_count(d->apps);

	(void)revents;
	relayd_health(d, &h, reason, sizeof(reason));
	if (h.ready)
		snprintf(status, sizeof(status), "running: %zu app%s, %u in "
			 "flight", apps, apps == 1 ? "" : "s",
			 relay_slots_running(d->slots));
	else if (!*reason || strcmp(reason, "starting") == 0)
		snprintf(status, sizeof(status), "%s", d->notified_ready ?
			 "not ready" : "starting");
	else
		snprintf(status, sizeof(status), "%s: %.200s",
			 d->notified_ready ? "not ready" : "starting", reason);
	if (h.ready && !d->notified_ready) {
		d->notified_ready = true;
		relayd_notify_status("READY=1\n", status);
		w->repeat = relayd_scaled(d, NOTIFY_INTERVAL_S);
		ev_timer_again(loop, w);
	} else if (strcmp(status, d->notified_status) != 0) {
		relayd_notify_status("", status);
	}
	snprintf(d->notified_status, sizeof(d->notified_status), "%s",
		 status);
}

/*
 * A clean stop: the spans of the attempts that finished are exported
 * before the loop ends, within a bound (the smaller of 5 s and
 * OTEL_EXPORTER_OTLP_TIMEOUT), so an unreachable or hanging collector
 * never holds relayd up for long. What is left then is counted dropped.
 */
#define OTLP_DRAIN_MAX_S 5.0
#define OTLP_DRAIN_POLL_S 0.02

static void on_otlp_drain(struct ev_loop *loop, ev_timer *w, int revents)
{
	relayd *d = w->data;
	relay_otlp_counts k;

	(void)revents;
	if (!relay_otlp_idle(d->otlp) && ev_now(loop) < d->otlp_drain_until) {
		relay_otlp_flush(d->otlp);
		return;
	}
	ev_timer_stop(loop, w);
	relay_otlp_counts_get(d->otlp, &k);
	if (k.queued)
		relayd_log(RELAY_LOG_WARN, "RELAYD-OTLP05", "tracing: %llu "
			   "span%s not exported at exit (collector slow or "
			   "unreachable)", (unsigned long long)k.queued,
			   k.queued == 1 ? "" : "s");
	ev_break(loop, EVBREAK_ALL);
}

static void tracing_drain(relayd *d)
{
	double bound = OTLP_DRAIN_MAX_S;

	if (!d->otlp || relay_otlp_idle(d->otlp)) {
		ev_break(d->loop, EVBREAK_ALL);
		return;
	}
	if ((double)d->cfg.otlp.timeout_ms / 1000. < bound)
		bound = (double)d->cfg.otlp.timeout_ms / 1000.;
	ev_now_update(d->loop);
	d->otlp_drain_until = ev_now(d->loop) + bound;
	relay_otlp_flush(d->otlp);
	ev_timer_init(&d->otlp_drain, on_otlp_drain, OTLP_DRAIN_POLL_S,
		      OTLP_DRAIN_POLL_S);
	d->otlp_drain.data = d;
	ev_timer_start(d->loop, &d->otlp_drain);
}

/* relay_consumer_close()'s callback has no payload: the one daemon. */
static relayd *the_daemon;

/* One consumer (one stream) is gone; the loop ends with the last. */
static void on_closed(relay_consumer *c)
{
	relayd *d = the_daemon;
	size_t i;

	for (i = 0; i < d->nconsumers; i++)
		if (d->consumers[i] == c)
			d->consumers[i] = NULL;
	if (--d->nopen > 0)
		return;
	tracing_drain(d);
}

static void close_consumers(relayd *d)
{
	size_t i;

	for (i = 0; i < d->nconsumers; i++)
		if (d->consumers[i])
			relay_consumer_close(d->consumers[i], on_closed);
}

/* One stream drained; when every stream has, close them all. */
static void on_stopped(relay_consumer *c, void *payload)
{
	relayd *d = payload;

	(void)c;
	if (++d->nstopped < d->nopen)
		return;
	relayd_flush_stats(d);
	relayd_log(RELAY_LOG_INFO, "RELAYD03", "stopped");
	close_consumers(d);
}

static void on_stop_signal(struct ev_loop *loop, ev_signal *w, int revents)
{
	relayd *d = w->data;
	int graceful;

	(void)loop;
	(void)revents;
	if (!relayd_consumer(d))
		return;
	graceful = d->signals++ == 0;
	relayd_schedpub_stop(d->schedpub);
	relayd_retention_stop(d->retention);
	relayd_log(RELAY_LOG_INFO, "RELAYD02", "%s received: %s",
		   strsignal(w->signum), graceful ?
		   "stopping reading, letting running handlers finish "
		   "(signal again to stop at once)" :
		   "stopping at once (pending messages stay in the PEL)");
	ev_timer_stop(d->loop, &d->notify_timer);
	if (graceful) {
		char status[80];

		snprintf(status, sizeof(status), "stopping: letting %u "
			 "running handler%s finish",
			 relay_slots_running(d->slots),
			 relay_slots_running(d->slots) == 1 ? "" : "s");
		relayd_notify_status("STOPPING=1\n", status);
	} else {
		relayd_notify_status("", "stopping at once");
	}
	/* A second signal re-arms every callback: count afresh. */
	d->nstopped = 0;
	{
		size_t i;

		for (i = 0; i < d->nconsumers; i++)
			if (d->consumers[i])
				relay_consumer_stop(d->consumers[i], graceful,
						    on_stopped, d);
	}
}

static void on_hup(struct ev_loop *loop, ev_signal *w, int revents)
{
	(void)loop;
	(void)revents;
	relayd_apps_reload(w->data, "SIGHUP");
}

/* A stream's output payload: its lines are logged with its name. */
struct relayd_outctx {
	relayd *d;
	const char *stream;
};

static void on_output(const relay_output_line *line, void *payload)
{
	const struct relayd_outctx *ctx = payload;
	relayd *d = ctx->d;
	size_t n;
	char *rec = relayd_log_output_record(line->text, line->len,
					     line->prefix_len,
					     line->stream == RELAY_OUTPUT_STDERR,
					     ctx->stream, &n);

	/* Formatted first: the budget is charged what goes to the log. */
	if (!rec)
		return;
	if (relayd_outbudget_take(d->outbudget, line->text, line->len,
				  line->prefix_len, n))
		relayd_log_write(rec, n);
	free(rec);
}

/* mkdir -p for the run and state directories. */
static int make_dirs(const char *path, mode_t mode)
{
	char buf[4096];
	size_t i, n = strlen(path);

	if (n == 0 || n >= sizeof(buf))
		return -1;
	memcpy(buf, path, n + 1);
	for (i = 1; i <= n; i++) {
		if (buf[i] != '/' && buf[i] != '\0')
			continue;
		buf[i] = '\0';
		if (mkdir(buf, mode) == 0)
			(void)chmod(buf, mode);  /* exactly @mode, whatever
						    the umask */
		else if (errno != EEXIST)
			return -1;
		buf[i] = path[i];
	}
	return 0;
}

/*
 * The run and state directories hold the control socket, the lock, the
 * stats file and the schedule outbox, written by relayd (often root). A
 * directory another user may write lets that user plant or swap files
 * there, so refuse one that is group- or world-writable or owned by
 * someone other than relayd's user or root.
 */
static int check_dir_private(const char *var, const char *path,
			     char *errbuf, size_t size)
{
	struct stat st;

	if (stat(path, &st) != 0) {
		snprintf(errbuf, size, "%s: cannot stat \"%s\": %s", var, path,
			 strerror(errno));
		return -1;
	}
	if (!S_ISDIR(st.st_mode)) {
		snprintf(errbuf, size, "%s: \"%s\" is not a directory", var,
			 path);
		return -1;
	}
	if (st.st_mode & (S_IWGRP | S_IWOTH)) {
		snprintf(errbuf, size, "%s: \"%s\" is writable by group or "
			 "others (mode %04o): refusing to use it (chmod go-w)",
			 var, path, (unsigned int)(st.st_mode & 07777));
		return -1;
	}
	if (st.st_uid != geteuid() && st.st_uid != 0) {
		snprintf(errbuf, size, "%s: \"%s\" is owned by uid %ld, not "
			 "by relayd's user (uid %ld) or root: refusing to use "
			 "it", var, path, (long)st.st_uid, (long)geteuid());
		return -1;
	}
	return 0;
}

/*
 * Take RELAY_RUN_DIR/relay.lock with flock(LOCK_EX | LOCK_NB). The lock
 * lives as long as the descriptor (the process), so a crashed daemon
 * never leaves a stale lock; the pid written into the file is only
 * informative.
 */
static int take_lock(relayd *d, char *errbuf, size_t size)
{
	char path[128], pid[32]; /* RELAY_RUN_DIR is at most 90 bytes */
	ssize_t n;
	int fd;

	if (make_dirs(d->cfg.run_dir, 0755)) {
		snprintf(errbuf, size, "RELAY_RUN_DIR: cannot create \"%s\": "
			 "%s", d->cfg.run_dir, strerror(errno));
		return -1;
	}
	if (check_dir_private("RELAY_RUN_DIR", d->cfg.run_dir, errbuf, size))
		return -1;
	snprintf(path, sizeof(path), "%s/relay.lock", d->cfg.run_dir);
	fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		snprintf(errbuf, size, "RELAY_RUN_DIR: cannot open %s: %s",
			 path, strerror(errno));
		return -1;
	}
	if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
		int e = errno;

		n = read(fd, pid, sizeof(pid) - 1);
		pid[n > 0 ? n : 0] = '\0';
		pid[strcspn(pid, "\n")] = '\0';
		close(fd);
		if (e == EWOULDBLOCK)
			snprintf(errbuf, size, "another relayd%s%s is running "
				 "with RELAY_RUN_DIR=%s (%s is locked)",
				 *pid ? " pid " : "", pid, d->cfg.run_dir,
				 path);
		else
			snprintf(errbuf, size, "cannot lock %s: %s", path,
				 strerror(e));
		return -1;
	}
	n = snprintf(pid, sizeof(pid), "%ld\n", (long)getpid());
	if (ftruncate(fd, 0) != 0 || pwrite(fd, pid, (size_t)n, 0) != n)
		relayd_log(RELAY_LOG_WARN, "RELAYD04",
			   "cannot write the pid into %s", path);
	d->lock_fd = fd;
	return 0;
}

static int open_backends(relayd *d, char *errbuf, size_t size)
{
	relay_runtime_options ro = RELAY_RUNTIME_OPTIONS_INIT;
	relay_redis_options rd = RELAY_REDIS_OPTIONS_INIT, quiet;
	relay_error err;
	int rc;

	memset(&err, 0, sizeof(err));
	ro.backend = d->cfg.sandbox;
	ro.sandbox_user = d->cfg.sandbox_user;  /* only used when root */
	ro.sandbox_uids = d->cfg.sandbox_uids;  /* likewise */
	ro.logger = relayd_logger();
	ro.warm = d->cfg.warm;
	ro.warm_max_parents = d->cfg.warm_max_parents;
	ro.warm_idle_ms = (uint32_t)d->cfg.warm_idle_ms;
	ro.warm_start_timeout_ms = d->cfg.warm_start_timeout_ms;
	rc = relay_runtime_new(&d->rt, &ro, &err);
	if (rc) {
		if (rc == RELAY_EINVAL && d->cfg.sandbox_uids &&
		    strncmp(err.text, "sandbox uid range", 17) == 0)
			snprintf(errbuf, size, "RELAY_SANDBOX_UIDS: %s",
				 err.text);
		else if (strcmp(d->cfg.sandbox, "bwrap") == 0)
			snprintf(errbuf, size, "RELAY_SANDBOX=bwrap: the "
				 "bubblewrap sandbox cannot run here: %s "
				 "(install bubblewrap and allow user "
				 "namespaces, or set RELAY_SANDBOX=none to "
				 "run handlers unsandboxed)", err.text);
		else
			snprintf(errbuf, size, "RELAY_SANDBOX=%s: %s",
				 d->cfg.sandbox, err.text);
		return -1;
	}
	relay_runtime_libev_attach(d->rt, d->loop);
	if (relayd_apps_uids(d, d->apps, errbuf, size))
		return -1;
	rd.logger = relayd_logger();
	relayd_config_tls(&d->cfg, &rd);
	/* The first stream's connection; the others are opened with their
	 * consumers. */
	d->sredis = calloc(d->cfg.nstreams, sizeof(*d->sredis));
	d->credis = calloc(d->cfg.nstreams, sizeof(*d->credis));
	if (!d->sredis || !d->credis) {
		snprintf(errbuf, size, "out of memory");
		return -1;
	}
	memset(&err, 0, sizeof(err));
	rc = relay_redis_open_libev(&d->sredis[0], d->loop, d->cfg.redis_uri,
				    &rd, &err);
	if (rc) {
		/* err.text: a TLS setting (a file it names), never the
		 * URI's password. */
		snprintf(errbuf, size, "REDIS_URI: cannot open \"%s\": %s",
			 d->cfg.redis_uri_safe,
			 err.text[0] ? err.text : relay_strerror(rc));
		return -1;
	}
	/* On Redis Cluster every stream needs a hash tag (redis-layout
	 * The check's own connection stays quiet: when Redis cannot
	 * be reached the one above says so (once) and keeps trying. */
	quiet = rd;
	quiet.logger.fn = NULL;
	if (relay_redis_cluster_check(d->cfg.redis_uri,
				      (const char *const *)d->cfg.streams,
				      d->cfg.nstreams, d->cfg.group, &quiet,
				      errbuf, size))
		return -1;
	return 0;
}

/*
 * One consumer per stream of REDIS_STREAM, all on the one loop and
 * backend, sharing one concurrency limiter: MAX_CONCURRENCY and every
 * app's concurrency hold across the streams; MAX_BUFFERED_EVENTS bounds
 * each stream's messages in memory.
 */
/* A finished attempt's span (borrowed): queued for export, or dropped
 * and counted by the exporter; never blocks. */
static void on_span(const relay_span *s, void *payload)
{
	relayd *d = payload;

	if (d->otlp)
		relay_otlp_submit(d->otlp, s);
}

static int open_consumer(relayd *d, char *errbuf, size_t size)
{
	relay_consumer_options o = RELAY_CONSUMER_OPTIONS_INIT;
	relay_error err;
	size_t i;
	int rc;

	memset(&err, 0, sizeof(err));
	o.group = d->cfg.group;
	o.consumer = d->cfg.consumer;
	o.max_concurrency = (unsigned int)d->cfg.max_concurrency;
	o.max_buffered = (unsigned int)d->cfg.max_buffered;
	o.max_event_bytes = d->cfg.max_event_bytes;
	o.retention_ms = d->cfg.retention_ms;
	o.time_scale = d->cfg.time_scale;
	o.logger = relayd_logger();
	d->outbudget = relayd_outbudget_new(d->cfg.output_budget);
	d->consumers = calloc(d->cfg.nstreams, sizeof(*d->consumers));
	d->outctx = calloc(d->cfg.nstreams, sizeof(*d->outctx));
	if (!d->outbudget || !d->consumers || !d->outctx ||
	    relay_slots_new(&d->slots, o.max_concurrency)) {
		snprintf(errbuf, size, "out of memory");
		return -1;
	}
	o.slots = d->slots;
	o.output = on_output;
	/* Spans only when they can go somewhere (tracing off costs
	 * nothing); the sampler is OTEL_TRACES_SAMPLER's. */
	if (d->cfg.otlp.enabled && relay_otlp_available()) {
		o.span = on_span;
		o.span_payload = d;
	}
	o.sampler = &d->cfg.otlp.sampler;
	for (i = 0; i < d->cfg.nstreams; i++) {
		relay_redis_options rd = RELAY_REDIS_OPTIONS_INIT;

		/*
		 * Each stream reads on its own connection: a read blocks
		 * its connection (XREADGROUP BLOCK) while its stream is
		 * idle, and on a shared one every other stream's commands
		 * would queue behind it. The stream's own keys (retention,
		 * schedule publishing) use it too, so they may wait for its
		 * read (at most its block time); on a cluster this keeps
		 * each connection on one master. A control request must
		 * not wait: dlq replay has a connection of its own below.
		 */
		if (i > 0) {
			rd.logger = relayd_logger();
			relayd_config_tls(&d->cfg, &rd);
			rc = relay_redis_open_libev(&d->sredis[i], d->loop,
						    d->cfg.redis_uri, &rd,
						    NULL);
			if (rc) {
				snprintf(errbuf, size, "REDIS_URI: cannot "
					 "open \"%s\": %s",
					 d->cfg.redis_uri_safe,
					 relay_strerror(rc));
				return -1;
			}
		}
		/*
		 * The stream's control connection (dlq replay), opened the
		 * same way (URI, TLS settings) and quiet: the stream's own
		 * connection reports an unreachable Redis or a TLS failure.
		 * Nothing connects until the first replay of the stream's
		 * entries; until it is connected, or while it reconnects,
		 * a replay uses the stream's connection (commands.c).
		 */
		rd.logger = relayd_logger();
		relayd_config_tls(&d->cfg, &rd);
		rd.logger.fn = NULL;
		rc = relay_redis_open_libev(&d->credis[i], d->loop,
					    d->cfg.redis_uri, &rd, NULL);
		if (rc) {
			snprintf(errbuf, size, "REDIS_URI: cannot open \"%s\": "
				 "%s", d->cfg.redis_uri_safe,
				 relay_strerror(rc));
			return -1;
		}
		o.stream = d->cfg.streams[i];
		d->outctx[i].d = d;
		d->outctx[i].stream = d->cfg.streams[i];
		o.output_payload = &d->outctx[i];
		if (d->cfg.nstreams > 1)
			o.logger = relayd_logger_stream(d->cfg.streams[i]);
		rc = relay_consumer_new(&d->consumers[i], d->loop,
					d->sredis[i], d->rt, d->apps, &o,
					&err);
		if (rc) {
			snprintf(errbuf, size, "engine: %s", *err.text ?
				 err.text : relay_strerror(rc));
			return -1;
		}
		d->nconsumers++;
		d->nopen++;
	}
	return 0;
}

static int open_servers(relayd *d, char *errbuf, size_t size)
{
	char path[128]; /* RELAY_RUN_DIR is at most 90 bytes */
	double idle;

	snprintf(path, sizeof(path), "%s/relay.sock", d->cfg.run_dir);
	/* Scaled in tests, but never below a second: a client must have
	 * time to write its request. */
	idle = relayd_scaled(d, CONTROL_IDLE_S);
	d->ctl = relayd_control_start(d->loop, path, idle < 1. ? 1. : idle,
				      relayd_command, d, errbuf, size);
	if (!d->ctl)
		return -1;
	if (d->cfg.metrics_host) {
		d->http = relayd_http_start(d->cfg.metrics_host,
					    d->cfg.metrics_port, errbuf, size);
		if (!d->http)
			return -1;
		publish_metrics(d);
	}
	return 0;
}

/* SIGTERM, SIGINT and SIGHUP: blocked from the start of the start-up
 * until their watchers exist (start_watchers()), so a stop asked for
 * while relayd starts is a graceful stop, not the default action's
 * death. Handlers never inherit the mask (the runtime clears it). */
static sigset_t stop_signals;

static void start_watchers(relayd *d)
{
	ev_signal_init(&d->sig_term, on_stop_signal, SIGTERM);
	ev_signal_init(&d->sig_int, on_stop_signal, SIGINT);
	ev_signal_init(&d->sig_hup, on_hup, SIGHUP);
	d->sig_term.data = d->sig_int.data = d->sig_hup.data = d;
	ev_signal_start(d->loop, &d->sig_term);
	ev_signal_start(d->loop, &d->sig_int);
	ev_signal_start(d->loop, &d->sig_hup);
	/* main() blocked them for the start-up; one that came meanwhile is
	 * delivered now, to the watchers above: a graceful stop. */
	sigprocmask(SIG_UNBLOCK, &stop_signals, NULL);
	ev_timer_init(&d->metrics_timer, on_metrics_timer, 0.,
		      relayd_scaled(d, METRICS_INTERVAL_S));
	ev_timer_init(&d->stats_timer, on_stats_timer, 0.,
		      relayd_scaled(d, STATS_INTERVAL_S));
	ev_timer_init(&d->notify_timer, on_notify_timer, 0., NOTIFY_START_S);
	d->metrics_timer.data = d->stats_timer.data = d;
	d->notify_timer.data = d;
	if (d->http)
		ev_timer_again(d->loop, &d->metrics_timer);
	if (relayd_notify_enabled())
		ev_timer_again(d->loop, &d->notify_timer);
	ev_timer_again(d->loop, &d->stats_timer);
	relayd_apps_watch(d);
}

static void shutdown_all(relayd *d)
{
	if (d->loop) {
		ev_signal_stop(d->loop, &d->sig_term);
		ev_signal_stop(d->loop, &d->sig_int);
		ev_signal_stop(d->loop, &d->sig_hup);
		ev_timer_stop(d->loop, &d->metrics_timer);
		ev_timer_stop(d->loop, &d->stats_timer);
		ev_timer_stop(d->loop, &d->notify_timer);
		relayd_apps_unwatch(d);
	}
	relayd_schedpub_stop(d->schedpub);
	relayd_retention_stop(d->retention);
	relay_otlp_free(d->otlp);
	d->otlp = NULL;
	relayd_http_stop(d->http);
	relayd_control_stop(d->ctl);
	if (d->nopen) {
		/* Never started: close, then let the loop deliver the
		 * close callbacks. */
		close_consumers(d);
		ev_run(d->loop, 0);
	}
	free(d->consumers);
	d->consumers = NULL;
	relay_slots_free(d->slots);  /* every consumer is closed */
	d->slots = NULL;
	relay_runtime_free(d->rt);
	free(d->outctx);   /* nothing is left to call on_output */
	d->outctx = NULL;
	relayd_outbudget_free(d->outbudget);
	d->outbudget = NULL;
	if (d->credis) {
		size_t i;

		/* A replay's XDEL in flight gets ECLOSED and is resent on
		 * the stream's connection, freed next. */
		for (i = 0; i < d->cfg.nstreams; i++)
			relay_redis_free(d->credis[i]);
		free(d->credis);
		d->credis = NULL;
	}
	if (d->sredis) {
		size_t i;

		/* In-flight publishes and retention get ECLOSED. */
		for (i = 0; i < d->cfg.nstreams; i++)
			relay_redis_free(d->sredis[i]);
		free(d->sredis);
		d->sredis = NULL;
	}
	relayd_schedpub_free(d->schedpub);
	d->schedpub = NULL;
	relayd_retention_free(d->retention);  /* after its ECLOSED */
	d->retention = NULL;
	relay_appset_free(d->apps);
	if (d->lock_fd >= 0)
		close(d->lock_fd);
	relayd_config_clear(&d->cfg);
	if (d->loop)
		ev_loop_destroy(d->loop);
	relayd_notify_close();
}

static bool check_only;   /* --check */

static int parse_args(int argc, char **argv)
{
	int i;

	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--check") == 0) {
			check_only = true;
			continue;
		}
		if (strcmp(argv[i], "--help") == 0 ||
		    strcmp(argv[i], "-h") == 0) {
			usage(stdout);
			return 0;
		}
		if (strcmp(argv[i], "--version") == 0) {
			printf("relayd %s\n", relay_version());
			return 0;
		}
		fprintf(stderr, "relayd: unknown argument: %s\n", argv[i]);
		usage(stderr);
		return 2;
	}
	return -1;
}

int main(int argc, char **argv)
{
	static relayd d;
	char errbuf[1024] = "";
	int rc;

	rc = parse_args(argc, argv);
	if (rc >= 0)
		return rc;
	d.lock_fd = -1;
	d.inotify_fd = -1;
	the_daemon = &d;
	if (relayd_config_load(&d.cfg, errbuf, sizeof(errbuf))) {
		fprintf(stderr, "relayd: %s\n", errbuf);
		relayd_config_clear(&d.cfg);
		return 1;
	}
	if (d.cfg.metrics_host && !relayd_http_available()) {
		/* Refused before anything starts: no silent lack of the
		 * endpoint the operator asked for. */
		fprintf(stderr, "relayd: METRICS_ADDR: set, but this relayd "
			"was built without libmicrohttpd (no metrics support; "
			"rebuild with -Dmetrics=enabled)\n");
		relayd_config_clear(&d.cfg);
		return 1;
	}
	relayd_log_init(d.cfg.log_level, d.cfg.log_json);
	relayd_vars_warn_unknown();
	if (!check_only)
		(void)relayd_notify_init();  /* off after a logged warning */
	if (check_only) {
		rc = relayd_check(&d.cfg);
		relayd_config_clear(&d.cfg);
		return rc;
	}
	if (d.cfg.time_scale_ignored)
		relayd_log(RELAY_LOG_WARN, "RELAYD05",
			   "RELAY_TEST_TIME_SCALE is ignored: this is a "
			   "release build (test hooks are off)");
	else if (d.cfg.time_scale > 1)
		relayd_log(RELAY_LOG_WARN, "RELAYD05",
			   "RELAY_TEST_TIME_SCALE=%u: every fixed internal "
			   "duration is divided by %u (test build)",
			   d.cfg.time_scale, d.cfg.time_scale);
	if (d.cfg.sched_clock_ignored)
		relayd_log(RELAY_LOG_WARN, "RELAYD05",
			   "RELAY_TEST_SCHEDULE_CLOCK is ignored: this is a "
			   "release build (test hooks are off)");
	else if (d.cfg.sched_clock_set)
		relayd_log(RELAY_LOG_WARN, "RELAYD05",
			   "RELAY_TEST_SCHEDULE_CLOCK: schedules run on a "
			   "virtual clock (%lld at %lld ms, x%lld; test build)",
			   (long long)d.cfg.sched_clock_v,
			   (long long)d.cfg.sched_clock_anchor_ms,
			   (long long)d.cfg.sched_clock_rate);
	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&stop_signals);
	sigaddset(&stop_signals, SIGTERM);
	sigaddset(&stop_signals, SIGINT);
	sigaddset(&stop_signals, SIGHUP);
	sigprocmask(SIG_BLOCK, &stop_signals, NULL);
	d.loop = ev_default_loop(EVFLAG_AUTO);
	d.started_at_ms = relayd_wall_ms();
	if (!d.loop) {
		snprintf(errbuf, sizeof(errbuf), "cannot create the event "
			 "loop");
		goto fail;
	}
	if (take_lock(&d, errbuf, sizeof(errbuf)))
		goto fail;
	if (make_dirs(d.cfg.state_dir, 0755)) {
		snprintf(errbuf, sizeof(errbuf), "RELAY_STATE_DIR: cannot "
			 "create \"%s\": %s", d.cfg.state_dir,
			 strerror(errno));
		goto fail;
	}
	if (check_dir_private("RELAY_STATE_DIR", d.cfg.state_dir, errbuf,
			      sizeof(errbuf)))
		goto fail;
	if (relayd_apps_load(&d, errbuf, sizeof(errbuf)) ||
	    open_backends(&d, errbuf, sizeof(errbuf)) ||
	    open_consumer(&d, errbuf, sizeof(errbuf)) ||
	    open_servers(&d, errbuf, sizeof(errbuf)))
		goto fail;
	start_watchers(&d);
	for (size_t i = 0; i < d.nconsumers; i++)
		if (relay_consumer_start(d.consumers[i])) {
			snprintf(errbuf, sizeof(errbuf), "engine: cannot "
				 "start");
			goto fail;
		}
	d.schedpub = relayd_schedpub_start(&d);
	if (!d.schedpub) {
		snprintf(errbuf, sizeof(errbuf), "schedules: out of memory");
		goto fail;
	}
	d.retention = relayd_retention_start(&d);
	if (!d.retention) {
		snprintf(errbuf, sizeof(errbuf), "retention: out of memory");
		goto fail;
	}
	relayd_log(RELAY_LOG_INFO, "RELAYD01", "relayd %s running: stream %s, "
		   "group %s, consumer %s, redis %s, apps %s, sandbox %s",
		   relay_version(), d.cfg.stream, d.cfg.group, d.cfg.consumer,
		   d.cfg.redis_uri_safe, d.cfg.apps_dir,
		   relay_runtime_backend_name(d.rt));
	if (d.http)
		relayd_log(RELAY_LOG_INFO, "RELAYD-MET01", "metrics: serving "
			   "/metrics, /healthz and /readyz on %s:%d%s",
			   *d.cfg.metrics_host ? d.cfg.metrics_host : "*",
			   d.cfg.metrics_port, *d.cfg.metrics_host ? "" :
			   " (every interface)");
	else
		relayd_log(RELAY_LOG_INFO, "RELAYD-MET01", "metrics: off "
			   "(set METRICS_ADDR=host:port to serve /metrics, "
			   "/healthz and /readyz)");
	start_tracing(&d);
	ev_run(d.loop, 0);
	shutdown_all(&d);
	return d.exit_code;
fail:
	fprintf(stderr, "relayd: %s\n", errbuf);
	shutdown_all(&d);
	return 1;
}
