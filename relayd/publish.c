/*
 * publish.c - what relayd shows of itself while it runs: the stats
 * snapshot and the stats file (doc/protocol.md), /metrics and /readyz
 * (re-rendered every second), the trace exporter's start and its
 * counters, and the service manager's READY=1 and STATUS= lines.
 *
 * Everything here runs on the loop thread, from the timers that
 * relayd_start_watchers() (signals.c) arms.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "relay/daemon_metrics.h"
#include "relay/relay.h"
#include "relayd.h"

#define STATS_FILE "stats.json"

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
	s->apps.invalid = relay_appset_invalid_count(d->apps);
	s->apps.loaded = relay_appset_entry_count(d->apps) - s->apps.invalid;
	s->apps.stale = relayd_apps_stale_count(d);
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
void relayd_start_tracing(relayd *d)
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

void relayd_publish_metrics(relayd *d)
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

void relayd_on_metrics_timer(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop;
	(void)revents;
	relayd_publish_metrics(w->data);
}

void relayd_on_stats_timer(struct ev_loop *loop, ev_timer *w, int revents)
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
#define NOTIFY_INTERVAL_S 1.0

void relayd_on_notify_timer(struct ev_loop *loop, ev_timer *w, int revents)
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
