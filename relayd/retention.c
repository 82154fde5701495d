/*
 * retention.c - relayd's retention scheduler: REDIS_STREAM_RETENTION
 * trims the source stream of entries every consumer group is done with
 * and older than the retention, REDIS_DLQ_RETENTION trims the DLQ by age,
 * exactly (relayd(8), doc/operations.md). The safety argument lives in
 * librelay: each step is one relay_redis_stream_trim() script that
 * computes the bound and trims atomically, so a step racing XREADGROUP,
 * XAUTOCLAIM, XACK or XADD of any relayd, or another replica's step,
 * never removes an entry a group still has pending or has not read. This
 * file only decides when.
 *
 *	timer (1 min, scaled, +-20 % jitter) ─┬─ trim due? ─ yes: limit LIMIT
 *	                                      │              no:  limit 0
 *	                                      ▼               (observe: gauges)
 *	stream step ─ trimmed == LIMIT? again (at most MAX_BATCHES) ─ DLQ step
 *
 * A trim is due every tick = retention / 24 within [1m, 1h] (the bounds
 * are fixed internals, divided by RELAY_TEST_TIME_SCALE), with +-20 %
 * jitter so replicas started together drift apart; the first one comes
 * after a random part of half a tick. A failed step (Redis down, a key
 * of the wrong type) is counted, logged once until a step succeeds
 * again, and retried at the next tick; nothing else depends on it.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "relay/relay.h"
#include "relayd.h"

#define OBSERVE_S 60.0        /* gauges refresh (fixed internal) */
#define TICK_MIN_MS 60000LL   /* trim tick bounds (fixed internals) */
#define TICK_MAX_MS 3600000LL
#define LIMIT 10000           /* entries per step (XTRIM LIMIT) */
#define MAX_BATCHES 100       /* steps per target and tick */

struct target {
	const char *what;         /* "stream" or "DLQ", for logs */
	char *key;
	int64_t retention_ms;     /* 0 = off: observe only */
	unsigned int flags;
	uint64_t *trimmed;        /* its counter in c */
	int64_t length;           /* gauges as of its last step: */
	int64_t oldest_entry_age_ms;   /* ... (streams only) */
	int64_t oldest_pending_age_ms; /* ... (streams only) */
};

struct relayd_retention {
	relayd *d;
	ev_timer timer;
	struct target *t;         /* per stream: the stream, its DLQ */
	int nt;
	int cur;                  /* target of the step in flight */
	int batches;              /* steps for t[cur] this tick */
	bool trimming;            /* this tick trims (else observes) */
	bool busy;                /* a step is in flight */
	bool stopped;
	bool tick_failed;         /* a step of this tick failed */
	double next_trim;         /* ev_now() when a trim is due */
	double tick_s;            /* scaled trim tick */
	relayd_retention_counts c;
	char failure[256];        /* last failure logged, "" = none */
};

int64_t relayd_retention_tick_ms(int64_t ms)
{
	int64_t t = ms / 24;

	return t < TICK_MIN_MS ? TICK_MIN_MS : t > TICK_MAX_MS ? TICK_MAX_MS
							       : t;
}

static double jitter(double s, double lo, double hi)
{
	return s * (lo + (hi - lo) * drand48());
}

static void step(relayd_retention *r);

static void fail(relayd_retention *r, const struct target *t,
		 const char *why)
{
	char msg[256];

	r->c.failures++;
	r->c.failing = true;
	r->tick_failed = true;
	snprintf(msg, sizeof(msg), "%s %s: %s", t->what, t->key, why);
	if (strcmp(msg, r->failure) != 0)
		relayd_log(RELAY_LOG_WARN, "RELAYD-RET02", "retention step "
			   "failed on %s; retrying at the next tick", msg);
	snprintf(r->failure, sizeof(r->failure), "%s", msg);
}

static int64_t age_ms(int64_t now, const char *id)
{
	int64_t ms = relay_stream_id_ms(id);

	return ms < 0 || ms > now ? 0 : now - ms;
}

/* Move on to the next target, or end the tick. */
static void next_target(relayd_retention *r)
{
	r->batches = 0;
	if (++r->cur < r->nt && !r->stopped) {
		step(r);
		return;
	}
	r->busy = false;
	if (r->tick_failed)
		return;
	r->c.failing = false;
	if (r->failure[0]) {
		relayd_log(RELAY_LOG_INFO, "RELAYD-RET03", "retention steps "
			   "succeed again");
		r->failure[0] = '\0';
	}
}

static void on_step(relay_redis_backend *b, int status,
		    relay_stream_trim *res, void *payload)
{
	relayd_retention *r = payload;
	struct target *t = &r->t[r->cur];
	int64_t now = relayd_wall_ms();
	bool more;

	(void)b;
	if (status) {
		fail(r, t, status == RELAY_ECLOSED ? "Redis is not reachable"
			   : status == RELAY_ETYPE ? "the key is not a stream"
			   : relay_strerror(status));
		r->cur = r->nt;
		next_target(r);
		return;
	}
	*t->trimmed += (uint64_t)res->trimmed;
	t->length = res->length;
	if (t->flags == 0) {
		t->oldest_entry_age_ms = age_ms(now, res->first_id);
		t->oldest_pending_age_ms = age_ms(now,
						  res->oldest_pending_id);
	}
	if (res->trimmed > 0 && relayd_log_enabled(RELAY_LOG_DEBUG))
		relayd_log(RELAY_LOG_DEBUG, "RELAYD-RET04", "trimmed %lld "
			   "entries from %s (below %s); %lld left",
			   res->trimmed, t->key, res->bound, res->length);
	more = r->trimming && res->trimmed >= LIMIT &&
	       ++r->batches < MAX_BATCHES;
	relay_stream_trim_free(res);
	if (more && !r->stopped)
		step(r);
	else
		next_target(r);
}

static void step(relayd_retention *r)
{
	struct target *t = &r->t[r->cur];
	bool trim = r->trimming && t->retention_ms > 0;
	int64_t cutoff = trim ? relayd_wall_ms() - t->retention_ms : 0;
	int rc;

	rc = relay_redis_stream_trim(relayd_stream_redis(r->d,
				     r->d->cfg.streams[r->cur / 2]), t->key,
				     cutoff < 0 ? 0 : cutoff,
				     trim ? LIMIT : 0, t->flags, on_step, r);
	if (rc) {
		fail(r, t, relay_strerror(rc));
		r->cur = r->nt;
		next_target(r);
	}
}

static void on_timer(struct ev_loop *loop, ev_timer *w, int revents)
{
	relayd_retention *r = w->data;
	double now = ev_now(loop);

	(void)revents;
	w->repeat = jitter(relayd_scaled(r->d, OBSERVE_S), 0.8, 1.2);
	if (w->repeat > r->tick_s)
		w->repeat = jitter(r->tick_s, 0.8, 1.2);
	ev_timer_again(loop, w);
	if (r->busy || r->stopped)
		return;
	r->trimming = now >= r->next_trim;
	if (r->trimming)
		r->next_trim = now + jitter(r->tick_s, 0.8, 1.2);
	r->busy = true;
	r->cur = 0;
	r->batches = 0;
	r->tick_failed = false;
	step(r);
}

static void log_policy(const relayd_retention *r)
{
	const relayd_config *c = &r->d->cfg;
	char s[128], q[128];

	if (c->stream_retention_ms)
		snprintf(s, sizeof(s), "entries every consumer group is done "
			 "with, older than %llds",
			 (long long)(c->stream_retention_ms / 1000));
	else
		snprintf(s, sizeof(s), "off (REDIS_STREAM_RETENTION=0)");
	if (c->dlq_retention_ms)
		snprintf(q, sizeof(q), "entries older than %llds",
			 (long long)(c->dlq_retention_ms / 1000));
	else
		snprintf(q, sizeof(q), "off (REDIS_DLQ_RETENTION=0)");
	if (r->nt > 2)
		relayd_log(RELAY_LOG_INFO, "RELAYD-RET01", "retention: %d "
			   "streams (%s, ...): %s; their DLQs (%s, ...): %s; "
			   "trim tick %.1fs (+-20%%)", r->nt / 2, r->t[0].key,
			   s, r->t[1].key, q, r->tick_s);
	else
		relayd_log(RELAY_LOG_INFO, "RELAYD-RET01", "retention: stream "
			   "%s: %s; DLQ %s: %s; trim tick %.1fs (+-20%%)",
			   r->t[0].key, s, r->t[1].key, q, r->tick_s);
}

relayd_retention *relayd_retention_start(relayd *d)
{
	relayd_retention *r = calloc(1, sizeof(*r));
	int64_t shortest;
	int i;

	if (!r)
		return NULL;
	r->d = d;
	r->t = calloc(2 * d->cfg.nstreams, sizeof(*r->t));
	if (!r->t) {
		free(r);
		return NULL;
	}
	r->nt = 2 * (int)d->cfg.nstreams;
	for (i = 0; i < r->nt; i += 2) {
		struct target *s = &r->t[i], *q = &r->t[i + 1];

		s->what = "stream";
		s->key = strdup(d->cfg.streams[i / 2]);
		s->retention_ms = d->cfg.stream_retention_ms;
		s->trimmed = &r->c.stream_trimmed;
		s->length = -1;
		q->what = "DLQ";
		q->key = relay_dlq_key(d->cfg.streams[i / 2]);
		q->retention_ms = d->cfg.dlq_retention_ms;
		q->flags = RELAY_TRIM_AGE_ONLY;
		q->trimmed = &r->c.dlq_trimmed;
		q->length = -1;
		if (!s->key || !q->key) {
			relayd_retention_free(r);
			return NULL;
		}
	}
	r->c.stream_retention_ms = d->cfg.stream_retention_ms;
	r->c.dlq_retention_ms = d->cfg.dlq_retention_ms;
	r->c.stream_length = r->c.dlq_length = -1;
	shortest = d->cfg.stream_retention_ms;
	if (!shortest || (d->cfg.dlq_retention_ms &&
			  d->cfg.dlq_retention_ms < shortest))
		shortest = d->cfg.dlq_retention_ms;
	r->tick_s = relayd_scaled(d, relayd_retention_tick_ms(shortest) /
				     1000.0);
	srand48((long)getpid() ^ (long)relayd_wall_ms());
	r->next_trim = ev_now(d->loop) + jitter(r->tick_s, 0.05, 0.5);
	log_policy(r);
	ev_timer_init(&r->timer, on_timer, 0.,
		      jitter(relayd_scaled(d, OBSERVE_S), 0.05, 0.3));
	if (r->timer.repeat > r->tick_s)
		r->timer.repeat = jitter(r->tick_s, 0.05, 0.5);
	r->timer.data = r;
	ev_timer_again(d->loop, &r->timer);
	return r;
}

void relayd_retention_stop(relayd_retention *r)
{
	if (!r || r->stopped)
		return;
	r->stopped = true;
	ev_timer_stop(r->d->loop, &r->timer);
}

void relayd_retention_free(relayd_retention *r)
{
	int i;

	if (!r)
		return;
	relayd_retention_stop(r);
	for (i = 0; i < r->nt; i += 2) {
		free(r->t[i].key);
		relay_free(r->t[i + 1].key);
	}
	free(r->t);
	free(r);
}

void relayd_retention_counts_get(const relayd_retention *r,
				 relayd_retention_counts *out)
{
	int i;

	memset(out, 0, sizeof(*out));
	out->stream_length = out->dlq_length = -1;
	if (!r)
		return;
	*out = r->c;
	/* Several streams: lengths add up (unknown until every one is
	 * known), ages are the oldest. */
	out->stream_length = out->dlq_length = 0;
	out->oldest_entry_age_ms = out->oldest_pending_age_ms = 0;
	for (i = 0; i < r->nt; i++) {
		const struct target *t = &r->t[i];
		int64_t *len = t->flags ? &out->dlq_length
					: &out->stream_length;

		*len = *len < 0 || t->length < 0 ? -1 : *len + t->length;
		if (t->oldest_entry_age_ms > out->oldest_entry_age_ms)
			out->oldest_entry_age_ms = t->oldest_entry_age_ms;
		if (t->oldest_pending_age_ms > out->oldest_pending_age_ms)
			out->oldest_pending_age_ms = t->oldest_pending_age_ms;
	}
}

void relayd_retention_counts_reset(relayd_retention *r)
{
	if (!r)
		return;
	r->c.stream_trimmed = 0;
	r->c.dlq_trimmed = 0;
	r->c.failures = 0;
}
