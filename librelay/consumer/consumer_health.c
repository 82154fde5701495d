/*
 * consumer_health.c - the consumer's view of Redis (up or down, the
 * reason, the read backoff), its metrics and the per app/handler
 * duration histograms. It owns those fields of relay_consumer
 * (consumer.h); every other file counts through relay__count() and the
 * functions below.
 */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "consumer.h"
#include "consumer_health.h"
#include "relay/metrics.h"

#define LOG(c, lvl, id, ...) relay__log(&(c)->logger, lvl, id, __VA_ARGS__)

/* One app/handler duration histogram. */
struct relay__hist {
	/* owner: consumer_health.c */
	char *app;
	char *handler;
	relay_consumer_histogram h;  /* app/handler pointers set on visit */
};

static const double duration_bounds[RELAY_CONSUMER_DURATION_NBUCKETS] =
	RELAY_CONSUMER_DURATION_BUCKETS;

int64_t relay__consumer_scaled(const relay_consumer *c, int64_t ms)
{
	int64_t v = c->scale > 1 ? ms / (int64_t)c->scale : ms;

	return v > 0 ? v : 1;
}

void relay__consumer_count(relay_consumer *c, size_t offset, int delta)
{
	uint64_t *v = (uint64_t *)(void *)((char *)&c->m + offset);

	*v += (uint64_t)(int64_t)delta;
}

void relay__consumer_gauge(relay_consumer *c, uint64_t pending,
			   int64_t oldest_age_ms)
{
	c->m.pending_entries = pending;
	c->m.pending_oldest_age_ms = oldest_age_ms;
}

int64_t relay__consumer_backoff_next(relay_consumer *c, int64_t lo,
				     int64_t hi)
{
	int64_t b = c->backoff_ms ? c->backoff_ms * 2 : lo;

	if (b > hi)
		b = hi;
	c->backoff_ms = b;
	return b;
}

void relay__consumer_backoff_reset(relay_consumer *c)
{
	c->backoff_ms = 0;
}

void relay__consumer_health_free(relay_consumer *c)
{
	size_t i;

	for (i = 0; i < c->nhists; i++) {
		relay__free(c->hists[i].app);
		relay__free(c->hists[i].handler);
	}
	relay__free(c->hists);
	c->hists = NULL;
	c->nhists = 0;
}

/* ---- health ------------------------------------------------------------ */

void relay__consumer_redis_ok(relay_consumer *c)
{
	if (c->redis_up)
		return;
	c->redis_up = 1;
	c->backoff_ms = 0;
	c->down_reason[0] = '\0';
	if (c->down_logged) {
		c->down_logged = 0;
		LOG(c, RELAY_LOG_INFO, "RELAY-ENG03", "Redis available again");
	}
}

void relay__consumer_redis_failed(relay_consumer *c, int status,
				  const char *what)
{
	c->m.redis_errors++;
	if (status != RELAY_ECLOSED && status != RELAY_ETIMEOUT &&
	    status != RELAY_EBACKEND)
		return;
	if (status == RELAY_EBACKEND && c->redis_up)
		return;  /* an error reply: the server is there */
	snprintf(c->down_reason, sizeof(c->down_reason), "%s: %s", what,
		 *relay_redis_errstr(c->redis) ?
		 relay_redis_errstr(c->redis) : relay_strerror(status));
	if (c->redis_up || !c->down_logged) {
		c->redis_up = 0;
		if (!c->down_logged) {
			c->down_logged = 1;
			LOG(c, RELAY_LOG_WARN, "RELAY-ENG02",
			    "Redis unavailable: %s", c->down_reason);
		}
	}
	c->redis_up = 0;
}

void relay_consumer_health_get(const relay_consumer *c,
			       relay_consumer_health *out)
{
	relay_consumer_health h;

	/* Only the caller's version is written, and its version field is
	 * left as given (doc/api-stability.md); version 1 is the whole
	 * struct today, and 0 (a caller that never set it) reads as 1. */
	memset(&h, 0, sizeof(h));
	h.version = out->version;
	h.redis_up = c->redis_up;
	h.stopping = c->stopping;
	h.ready = c->started && c->group_ok && c->redis_up && !c->stopping;
	if (c->stopping)
		snprintf(h.reason, sizeof(h.reason), "stopping");
	else if (!c->redis_up && c->down_reason[0])
		snprintf(h.reason, sizeof(h.reason),
			 "redis unavailable: %s", c->down_reason);
	else if (!h.ready)
		snprintf(h.reason, sizeof(h.reason), "starting");
	memcpy(out, &h, sizeof(h));
}

/* ---- metrics ----------------------------------------------------------- */

int relay_consumer_metrics_get(const relay_consumer *c,
			       relay_consumer_metrics *out)
{
	if (!out || out->version == 0 ||
	    out->version > RELAY_CONSUMER_METRICS_VERSION)
		return RELAY_EINVAL;
	{
		relay_consumer_metrics m = c->m;
		unsigned int v = out->version;

		m.version = v;
		m.buffered_events = c->nmsgs;
		m.redis_up = c->redis_up;
		m.stuck_messages = c->nstuck;
		/* An older caller has the smaller struct. */
		memcpy(out, &m, v == 1 ? offsetof(relay_consumer_metrics,
						  schedule_malformed)
			       : v == 2 ? offsetof(relay_consumer_metrics,
						   step_failures)
			       : v == 3 ? offsetof(relay_consumer_metrics,
						   handler_timeouts)
			       : v == 4 ? offsetof(relay_consumer_metrics,
						   trace_context_invalid)
			       : v == 5 ? offsetof(relay_consumer_metrics,
						   starts_refused)
				       : sizeof(m));
	}
	return 0;
}

/* The metrics table (relay/metrics.h): which fields are counters. */
static const relay_metric_info metric_rows[] = {
	RELAY_CONSUMER_METRICS(RELAY_METRIC_INFO)
};

void relay_consumer_metrics_reset(relay_consumer *c)
{
	size_t i;

	/* Counters only: the gauges are live values. */
	for (i = 0; i < sizeof(metric_rows) / sizeof(metric_rows[0]); i++)
		if (metric_rows[i].kind == RELAY_METRIC_COUNTER)
			memset((char *)&c->m + metric_rows[i].offset, 0,
			       sizeof(uint64_t));
	for (i = 0; i < c->nhists; i++) {
		memset(c->hists[i].h.buckets, 0, sizeof(c->hists[i].h.buckets));
		c->hists[i].h.count = 0;
		c->hists[i].h.sum_seconds = 0;
		c->hists[i].h.succeeded = 0;
		c->hists[i].h.failed = 0;
		c->hists[i].h.timed_out = 0;
		c->hists[i].h.exhausted = 0;
	}
}

/* @app/@handler's entry, created (in name order) if new; NULL on ENOMEM. */
static relay__hist *hist_get(relay_consumer *c, const char *app,
			     const char *handler)
{
	relay__hist e, *n;
	size_t i, at = c->nhists;

	for (i = 0; i < c->nhists; i++) {
		int d = strcmp(c->hists[i].app, app);

		if (d == 0)
			d = strcmp(c->hists[i].handler, handler);
		if (d == 0)
			return &c->hists[i];
		if (d > 0) {
			at = i;
			break;
		}
	}
	n = relay__realloc(c->hists, (c->nhists + 1) * sizeof(*n));
	if (!n)
		return NULL;
	c->hists = n;
	memset(&e, 0, sizeof(e));
	e.app = relay__strdup(app);
	e.handler = relay__strdup(handler);
	if (!e.app || !e.handler) {
		/* Never a nameless entry: the lookup above compares names. */
		relay__free(e.app);
		relay__free(e.handler);
		return NULL;
	}
	memmove(&n[at + 1], &n[at], (c->nhists - at) * sizeof(*n));
	n[at] = e;
	c->nhists++;
	return &n[at];
}

void relay__consumer_hist_add(relay_consumer *c, const char *app,
			      const char *handler, uint64_t duration_us)
{
	relay__hist *h = hist_get(c, app, handler);
	double s = (double)duration_us / 1e6;
	size_t i;

	if (!h)
		return;
	for (i = 0; i < RELAY_CONSUMER_DURATION_NBUCKETS; i++)
		if (s <= duration_bounds[i])
			h->h.buckets[i]++;
	h->h.count++;
	h->h.sum_seconds += s;
}

void relay__consumer_outcome(relay_consumer *c, const char *app,
			     const char *handler, relay__outcome what)
{
	relay__hist *h = hist_get(c, app, handler);

	switch (what) {
	case RELAY__OUT_SUCCEEDED:
		c->m.handler_success++;
		if (h)
			h->h.succeeded++;
		break;
	case RELAY__OUT_FAILED:
		c->m.handler_failure++;
		if (h)
			h->h.failed++;
		break;
	case RELAY__OUT_TIMED_OUT:
		c->m.handler_failure++;
		c->m.handler_timeouts++;
		if (h)
			h->h.timed_out++;
		break;
	case RELAY__OUT_EXHAUSTED:
		c->m.invocations_exhausted++;
		if (h)
			h->h.exhausted++;
		break;
	}
}

int relay_consumer_histograms(const relay_consumer *c,
			      relay_consumer_histogram_fn fn, void *payload)
{
	size_t i;
	int rc;

	for (i = 0; i < c->nhists; i++) {
		relay_consumer_histogram h = c->hists[i].h;

		if (!c->hists[i].app || !c->hists[i].handler)
			continue;
		h.app = c->hists[i].app;
		h.handler = c->hists[i].handler;
		rc = fn(&h, payload);
		if (rc)
			return rc;
	}
	return 0;
}

