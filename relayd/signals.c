/*
 * signals.c - how relayd stops and reloads: the SIGTERM/SIGINT/SIGHUP
 * watchers and the loop's timers, and the stop sequence.
 *
 * Stopping: the first SIGTERM/SIGINT asks every consumer to drain (stop
 * reading, running handlers finish up to their timeout); a second one
 * stops at once (running handlers are killed; the PEL keeps the
 * messages). When every consumer reports stopped, the stats file is
 * flushed and the consumers closed; the last close callback lets the
 * trace exporter drain (bounded) and then breaks the loop. SIGHUP
 * reloads the apps (apps.c).
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "relay/relay.h"
#include "relay/relay_libev.h"
#include "relayd.h"

#define METRICS_INTERVAL_S 1.0
#define STATS_INTERVAL_S 5.0
#define NOTIFY_START_S 0.05

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

/* relay_consumer_close()'s callback has no payload: the one daemon
 * (relayd_signals_block()). */
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

void relayd_close_consumers(relayd *d)
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
	relayd_close_consumers(d);
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

/* SIGTERM, SIGINT and SIGHUP: blocked from the start of the start-up
 * until their watchers exist (start_watchers()), so a stop asked for
 * while relayd starts is a graceful stop, not the default action's
 * death. Handlers never inherit the mask (the runtime clears it). */
static sigset_t stop_signals;

void relayd_signals_block(relayd *d)
{
	the_daemon = d;
	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&stop_signals);
	sigaddset(&stop_signals, SIGTERM);
	sigaddset(&stop_signals, SIGINT);
	sigaddset(&stop_signals, SIGHUP);
	sigprocmask(SIG_BLOCK, &stop_signals, NULL);
}

void relayd_start_watchers(relayd *d)
{
	ev_signal_init(&d->sig_term, on_stop_signal, SIGTERM);
	ev_signal_init(&d->sig_int, on_stop_signal, SIGINT);
	ev_signal_init(&d->sig_hup, on_hup, SIGHUP);
	d->sig_term.data = d->sig_int.data = d->sig_hup.data = d;
	ev_signal_start(d->loop, &d->sig_term);
	ev_signal_start(d->loop, &d->sig_int);
	ev_signal_start(d->loop, &d->sig_hup);
	/* relayd_signals_block() blocked them for the start-up; one that
	 * came meanwhile is delivered now, to the watchers above: a
	 * graceful stop. */
	sigprocmask(SIG_UNBLOCK, &stop_signals, NULL);
	ev_timer_init(&d->metrics_timer, relayd_on_metrics_timer, 0.,
		      relayd_scaled(d, METRICS_INTERVAL_S));
	ev_timer_init(&d->stats_timer, relayd_on_stats_timer, 0.,
		      relayd_scaled(d, STATS_INTERVAL_S));
	ev_timer_init(&d->notify_timer, relayd_on_notify_timer, 0.,
		      NOTIFY_START_S);
	d->metrics_timer.data = d->stats_timer.data = d;
	d->notify_timer.data = d;
	if (d->http)
		ev_timer_again(d->loop, &d->metrics_timer);
	if (relayd_notify_enabled())
		ev_timer_again(d->loop, &d->notify_timer);
	ev_timer_again(d->loop, &d->stats_timer);
	relayd_apps_watch(d);
}
