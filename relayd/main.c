/*
 * main.c - relayd, the Relay daemon: the order of its start-up, and the
 * few helpers every part of it uses (relayd(8)).
 *
 * Startup order: arguments (args.c) → config → logger → signals blocked
 * (signals.c) → lock → state dir → apps → runtime (fails if
 * RELAY_SANDBOX=bwrap cannot run: never a silent fallback) → Redis
 * backend → consumers → control socket → /metrics (startup.c) →
 * watchers (signals.c) → start. Any failure before the loop runs prints
 * one line and exits 1. Exit status 0 after a signal-requested stop
 * (signals.c says how relayd stops).
 *
 * The other files: publish.c (stats file, /metrics, tracing, systemd
 * status), apps.c (the app set and its reloads), commands.c (control
 * requests), config.c and vars.c (the environment).
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "relay/relay.h"
#include "relay/relay_libev.h"
#include "relay_config.h"
#include "relayd.h"

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

int main(int argc, char **argv)
{
	static relayd d;
	char errbuf[1024] = "";
	bool check_only;
	int rc;

	rc = relayd_parse_args(argc, argv, &check_only);
	if (rc >= 0)
		return rc;
	d.lock_fd = -1;
	d.inotify_fd = -1;
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
	relayd_signals_block(&d);
	d.loop = ev_default_loop(EVFLAG_AUTO);
	d.started_at_ms = relayd_wall_ms();
	if (!d.loop) {
		snprintf(errbuf, sizeof(errbuf), "cannot create the event "
			 "loop");
		goto fail;
	}
	if (relayd_take_lock(&d, errbuf, sizeof(errbuf)) ||
	    relayd_state_dir(&d, errbuf, sizeof(errbuf)))
		goto fail;
	if (relayd_apps_load(&d, errbuf, sizeof(errbuf)) ||
	    relayd_open_backends(&d, errbuf, sizeof(errbuf)) ||
	    relayd_open_consumers(&d, errbuf, sizeof(errbuf)) ||
	    relayd_open_servers(&d, errbuf, sizeof(errbuf)))
		goto fail;
	relayd_start_watchers(&d);
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
	relayd_start_tracing(&d);
	ev_run(d.loop, 0);
	relayd_shutdown(&d);
	return d.exit_code;
fail:
	fprintf(stderr, "relayd: %s\n", errbuf);
	relayd_shutdown(&d);
	return 1;
}
