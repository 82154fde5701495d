/*
 * startup.c - relayd's start-up steps after the configuration, and its
 * shutdown: the run and state directories, the run-dir lock, the runtime
 * and the Redis connections, one consumer per stream, the control socket
 * and /metrics; relayd_shutdown() undoes whatever of it was done.
 *
 * Each step returns 0, or -1 with one line in @errbuf (never a secret)
 * that main() prints before exiting 1.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "relay/relay.h"
#include "relay/relay_libev.h"
#include "relayd.h"

#define CONTROL_IDLE_S 30.0    /* control connection with nothing asked */

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
int relayd_take_lock(relayd *d, char *errbuf, size_t size)
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

/* RELAY_STATE_DIR: created when missing, and private like the run
 * directory. */
int relayd_state_dir(relayd *d, char *errbuf, size_t size)
{
	if (make_dirs(d->cfg.state_dir, 0755)) {
		snprintf(errbuf, size, "RELAY_STATE_DIR: cannot create "
			 "\"%s\": %s", d->cfg.state_dir, strerror(errno));
		return -1;
	}
	return check_dir_private("RELAY_STATE_DIR", d->cfg.state_dir, errbuf,
				 size);
}

int relayd_open_backends(relayd *d, char *errbuf, size_t size)
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

int relayd_open_consumers(relayd *d, char *errbuf, size_t size)
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
	o.no_outcomes = d->cfg.no_outcomes;
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

int relayd_open_servers(relayd *d, char *errbuf, size_t size)
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
		relayd_publish_metrics(d);
	}
	return 0;
}

void relayd_shutdown(relayd *d)
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
		relayd_close_consumers(d);
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
	json_decref(d->stale);
	d->stale = NULL;
	if (d->lock_fd >= 0)
		close(d->lock_fd);
	relayd_config_clear(&d->cfg);
	if (d->loop)
		ev_loop_destroy(d->loop);
	relayd_notify_close();
}
