/*
 * librelay/consumer/consumer_health.h - private: Redis health, the
 * metrics and the duration histograms (consumer_health.c owns those
 * fields of relay_consumer: every other file counts through
 * relay__count()). Never installed.
 */
#ifndef RELAY__CONSUMER_HEALTH_H
#define RELAY__CONSUMER_HEALTH_H

#include <stddef.h>

#include "consumer.h"

/* Durations after time_scale. */
int64_t relay__consumer_scaled(const relay_consumer *c, int64_t ms);
void relay__consumer_redis_ok(relay_consumer *c);
void relay__consumer_redis_failed(relay_consumer *c, int status,
				  const char *what);
/* Add @delta to the counter (or gauge) at @offset of relay_consumer_
 * metrics; use relay__count(c, field). */
void relay__consumer_count(relay_consumer *c, size_t offset, int delta);
#define relay__count_add(c, field, delta) \
	relay__consumer_count((c), offsetof(relay_consumer_metrics, field), \
			      (delta))
#define relay__count(c, field) relay__count_add(c, field, 1)
/* The XPENDING gauges. */
void relay__consumer_gauge(relay_consumer *c, uint64_t pending,
			   int64_t oldest_age_ms);
/* The read backoff: the next step (doubling from @lo to @hi), or back
 * to none. */
int64_t relay__consumer_backoff_next(relay_consumer *c, int64_t lo,
				     int64_t hi);
void relay__consumer_backoff_reset(relay_consumer *c);
void relay__consumer_hist_add(relay_consumer *c, const char *app,
			      const char *handler, uint64_t duration_us);
/* How an attempt ended, or that its invocation is out of attempts. */
typedef enum relay__outcome {
	RELAY__OUT_SUCCEEDED,
	RELAY__OUT_FAILED,
	RELAY__OUT_TIMED_OUT,
	RELAY__OUT_EXHAUSTED,
} relay__outcome;
/* Count @what in the metrics and @app/@handler's outcome counters. */
void relay__consumer_outcome(relay_consumer *c, const char *app,
			     const char *handler, relay__outcome what);
/* Free the histograms (relay_consumer_close). */
void relay__consumer_health_free(relay_consumer *c);

#endif /* RELAY__CONSUMER_HEALTH_H */
