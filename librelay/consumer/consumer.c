/*
 * consumer.c - the stream engine: lifecycle, reading, recovery, health
 * and metrics. One message's life is in consumer_msg.c.
 *
 * Reading. Up to MAX_READS XREADGROUPs are outstanding, together asking
 * for at most the buffer's room (max_buffered minus the messages in
 * memory); at the limit nothing is read and the backlog stays in Redis.
 * A read BLOCKs only while no message is in memory: a blocked read holds
 * the connection, and the transitions of in-flight messages must not
 * queue behind it. With messages in flight an empty read is retried
 * after a short poll, and every message that ends kicks a new read.
 *
 * Recovery. Every reclaim interval one XAUTOCLAIM pass (following the
 * cursor while the buffer has room) takes entries idle at least
 * MinPendingIdle from any consumer; ids whose body is gone take the
 * missing-payload path. Every renewal interval the ids in memory are
 * XCLAIMed (JUSTID, min-idle 0) to ourselves, which resets their idle
 * time: a live owner's messages never reach MinPendingIdle, so neither
 * we nor a replica reclaim them while they are worked on.
 *
 * Outages. A failed read marks Redis down (logged once), and reads are
 * retried after a jittered backoff doubling from 1 s to 30 s; the first
 * success marks it up again (logged once). Failed message steps leave
 * their message pending (consumer_msg.c).
 *
 * Stop and close follow libuv: relay_consumer_stop() stops reading and
 * calls back, from the loop, once nothing is in flight;
 * relay_consumer_close() additionally frees the consumer after its
 * callback.
 */
#include <stddef.h>
#include <string.h>

#include "consumer.h"
#include "relay/metrics.h"

#define LOG(c, lvl, id, ...) relay__log(&(c)->logger, lvl, id, __VA_ARGS__)
#define POLL_MS 10

static const double duration_bounds[RELAY_CONSUMER_DURATION_NBUCKETS] =
	RELAY_CONSUMER_DURATION_BUCKETS;

static void do_read(relay_consumer *c);
static void ensure_group(relay_consumer *c);

int64_t relay__consumer_scaled(const relay_consumer *c, int64_t ms)
{
	int64_t v = c->scale > 1 ? ms / (int64_t)c->scale : ms;

	return v > 0 ? v : 1;
}

static double secs(const relay_consumer *c, int64_t ms)
{
	return (double)relay__consumer_scaled(c, ms) / 1000.0;
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

/* ---- reading ----------------------------------------------------------- */

static uint64_t next_rand(relay_consumer *c)
{
	uint64_t x = c->rng;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	c->rng = x;
	return x;
}

/* Retry reads (and the group) after a jittered, doubling backoff. */
static void read_backoff(relay_consumer *c)
{
	int64_t lo = relay__consumer_scaled(c, RELAY_CONSUMER_BACKOFF_MIN_MS);
	int64_t hi = relay__consumer_scaled(c, RELAY_CONSUMER_BACKOFF_MAX_MS);
	int64_t b, d;

	b = c->backoff_ms ? c->backoff_ms * 2 : lo;
	if (b > hi)
		b = hi;
	c->backoff_ms = b;
	d = b / 2 + (int64_t)(next_rand(c) % (uint64_t)(b / 2 + 1));
	ev_timer_stop(c->loop, &c->read_timer);
	c->in_backoff = 1;
	ev_timer_set(&c->read_timer, (double)d / 1000.0, 0.);
	ev_timer_start(c->loop, &c->read_timer);
}

static void read_poll(relay_consumer *c)
{
	if (ev_is_active(&c->read_timer))
		return;
	ev_timer_stop(c->loop, &c->read_timer);  /* clears a pending expiry */
	c->in_backoff = 0;
	ev_timer_set(&c->read_timer, POLL_MS / 1000.0, 0.);
	ev_timer_start(c->loop, &c->read_timer);
}

static void read_timer_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	relay_consumer *c = w->data;

	(void)loop;
	(void)revents;
	c->in_backoff = 0;
	if (c->stopping)
		return;
	if (!c->group_ok)
		ensure_group(c);
	else
		do_read(c);
}

/*
 * Room for another XREADGROUP: buffer room not already asked for by an
 * outstanding read. Several non-blocking reads may be outstanding (up to
 * MAX_READS), so the buffer is refilled as messages end instead of one
 * round trip after another; together they never ask for more entries
 * than the buffer has room for. A blocking read (nothing in memory) is
 * always alone.
 */
#define MAX_READS 4

static size_t read_room(const relay_consumer *c)
{
	size_t used = c->nmsgs + c->read_asked;

	if (c->read_blocking || c->reads >= MAX_READS ||
	    used >= c->max_buffered)
		return 0;
	return c->max_buffered - used;
}

static int can_refill(const relay_consumer *c)
{
	return c->started && c->group_ok && !c->in_backoff &&
	       !c->delivering && read_room(c);
}

/*
 * The refill is coalesced: whatever room the replies and handler ends of
 * one loop iteration free goes into one XREADGROUP, issued from a prepare
 * watcher (after every callback of the iteration, before the loop
 * sleeps): one command instead of one per freed slot.
 */
static void read_prepare_cb(struct ev_loop *loop, ev_prepare *w, int revents)
{
	relay_consumer *c = w->data;

	(void)revents;
	ev_prepare_stop(loop, w);
	if (c->stopping || !can_refill(c))
		return;
	ev_timer_stop(c->loop, &c->read_timer);
	do_read(c);
}

void relay__consumer_kick(relay_consumer *c)
{
	if (c->stopping) {
		relay__consumer_check_stopped(c);
		return;
	}
	if (!can_refill(c))
		return;
	ev_prepare_start(c->loop, &c->read_prepare);
}

/*
 * A blocked XREADGROUP can hold its reply for the whole BLOCK time, and
 * a stop must not wait for it: the read goes through a small token that
 * stop detaches. A detached token's reply is dropped (entries it carried
 * are in our PEL and will be reclaimed), whenever it arrives, even after
 * the consumer is gone (the backend then fails it with RELAY_ECLOSED).
 */
typedef struct read_token {
	relay_consumer *c;  /* NULL once detached */
	struct read_token *next;
	size_t count;       /* entries asked for */
	int block;
} read_token;

static void read_unlink(relay_consumer *c, read_token *t)
{
	read_token **pp;

	for (pp = &c->read_tokens; *pp; pp = &(*pp)->next)
		if (*pp == t) {
			*pp = t->next;
			break;
		}
	c->reads--;
	c->read_asked -= t->count;
	if (t->block)
		c->read_blocking = 0;
	c->ops--;
}

void relay__consumer_detach_read(relay_consumer *c)
{
	while (c->read_tokens) {
		read_token *t = c->read_tokens;

		read_unlink(c, t);
		t->c = NULL;
	}
}

static void read_cb(relay_redis_backend *b, int status,
		    relay_stream_entry *e, size_t n, void *payload)
{
	read_token *t = payload;
	relay_consumer *c = t->c;
	size_t i;

	(void)b;
	if (c)
		read_unlink(c, t);
	relay__free(t);
	if (!c) {
		relay_stream_entries_free(e, n);
		return;
	}
	if (status) {
		relay_stream_entries_free(e, n);
		if (c->stopping) {
			relay__consumer_check_stopped(c);
			return;
		}
		if (status == RELAY_ENOTFOUND) {
			/* NOGROUP: the group (or the stream) is gone, e.g. a
			 * Redis restart without persistence. Create again. */
			c->group_ok = 0;
			LOG(c, RELAY_LOG_WARN, "RELAY-ENG09",
			    "consumer group missing; creating it again");
		} else {
			relay__consumer_redis_failed(c, status, "XREADGROUP");
		}
		if (!c->reads)  /* once for the reads failing together */
			read_backoff(c);
		return;
	}
	relay__consumer_redis_ok(c);
	c->backoff_ms = 0;
	/* No new read until the whole batch is in memory (a message that
	 * ends at once must not open room the batch already uses). */
	c->delivering++;
	for (i = 0; i < n && !c->stopping; i++)
		relay__msg_deliver(c, &e[i]);
	c->delivering--;
	relay_stream_entries_free(e, n);
	if (c->stopping) {
		relay__consumer_check_stopped(c);
		return;
	}
	if (n == 0) {
		if (!c->reads)
			read_poll(c);
	} else {
		relay__consumer_kick(c);
	}
}

static void do_read(relay_consumer *c)
{
	size_t room = read_room(c);
	read_token *t;
	int block = -1, rc;

	if (c->stopping || !room)
		return;
	if (c->nmsgs == 0 && c->reads == 0)
		block = (int)relay__consumer_scaled(
			c, RELAY_CONSUMER_READ_BLOCK_MS);
	t = relay__calloc(1, sizeof(*t));
	if (!t) {
		read_backoff(c);
		return;
	}
	t->c = c;
	t->count = room;
	t->block = block >= 0;
	t->next = c->read_tokens;
	c->read_tokens = t;
	c->reads++;
	c->read_asked += room;
	if (t->block)
		c->read_blocking = 1;
	c->ops++;
	rc = relay_redis_xreadgroup(c->redis, c->stream, c->group, c->name,
				    room, block, ">", read_cb, t);
	if (rc) {
		read_unlink(c, t);
		relay__free(t);
		relay__consumer_redis_failed(c, rc, "XREADGROUP");
		if (!c->reads)
			read_backoff(c);
	}
}

static void group_cb(relay_redis_backend *b, int status, long long value,
		     void *payload)
{
	relay_consumer *c = payload;

	(void)b;
	(void)value;
	c->ops--;
	if (c->stopping) {
		relay__consumer_check_stopped(c);
		return;
	}
	if (status) {
		relay__consumer_redis_failed(c, status, "XGROUP CREATE");
		read_backoff(c);
		return;
	}
	relay__consumer_redis_ok(c);
	c->group_ok = 1;
	relay__consumer_kick(c);
}

static void ensure_group(relay_consumer *c)
{
	int rc;

	c->ops++;
	rc = relay_redis_group_create(c->redis, c->stream, c->group, "0",
				      group_cb, c);
	if (rc) {
		c->ops--;
		relay__consumer_redis_failed(c, rc, "XGROUP CREATE");
		read_backoff(c);
	}
}

/* ---- recovery ---------------------------------------------------------- */

static void reclaim_cb(relay_redis_backend *b, int status, relay_autoclaim *a,
		       void *payload)
{
	relay_consumer *c = payload;
	size_t i;
	int more = 0;

	(void)b;
	c->ops--;
	c->reclaim_busy = 0;
	if (status) {
		relay_autoclaim_free(a);
		if (!c->stopping)
			relay__consumer_redis_failed(c, status, "XAUTOCLAIM");
		relay__consumer_check_stopped(c);
		return;
	}
	relay__consumer_redis_ok(c);
	c->delivering++;
	for (i = 0; a && i < a->ndeleted; i++)
		relay__msg_missing(c, a->deleted[i]);
	for (i = 0; a && i < a->n && !c->stopping; i++) {
		if (relay__msg_find(c, a->entries[i].id))
			continue;
		c->m.reclaims++;
		relay__msg_deliver(c, &a->entries[i]);
	}
	c->delivering--;
	relay__free(c->reclaim_cursor);
	c->reclaim_cursor = NULL;
	if (a && a->next && strcmp(a->next, "0-0") != 0) {
		c->reclaim_cursor = relay__strdup(a->next);
		more = 1;
	}
	relay_autoclaim_free(a);
	if (c->stopping) {
		relay__consumer_check_stopped(c);
		return;
	}
	if (more && c->nmsgs < c->max_buffered)
		relay__consumer_reclaim_now(c);
	else {
		relay__free(c->reclaim_cursor);
		c->reclaim_cursor = NULL;
	}
	relay__consumer_kick(c);
}

void relay__consumer_reclaim_now(relay_consumer *c)
{
	const char *cursor = c->reclaim_cursor ? c->reclaim_cursor : "0-0";
	int64_t idle;
	int rc;

	if (!c->group_ok || c->stopping || c->reclaim_busy ||
	    c->nmsgs >= c->max_buffered)
		return;
	c->reclaim_busy = 1;
	c->ops++;
	idle = relay__consumer_scaled(c, RELAY_CONSUMER_MIN_PENDING_IDLE_MS);
	rc = relay_redis_xautoclaim(c->redis, c->stream, c->group, c->name,
				    idle, cursor, c->max_buffered - c->nmsgs,
				    reclaim_cb, c);
	if (rc) {
		c->reclaim_busy = 0;
		c->ops--;
		relay__consumer_redis_failed(c, rc, "XAUTOCLAIM");
	}
}

static void reclaim_timer_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop;
	(void)revents;
	relay__consumer_reclaim_now(w->data);
}

/*
 * An id the renewal XCLAIM (min-idle 0, so never refused for another
 * owner) did not return has left the PEL: either its stream entry was
 * deleted (Redis drops such ids from the PEL on XCLAIM) or another
 * consumer acknowledged it. XRANGE id id tells the two apart, once per
 * message.
 */
typedef struct body_check {
	relay_consumer *c;
	char *id;
} body_check;

static void body_cb(relay_redis_backend *b, int status,
		    relay_redis_reply *r, void *payload)
{
	body_check *bc = payload;
	relay_consumer *c = bc->c;
	relay__msg *m = relay__msg_find(c, bc->id);

	(void)b;
	c->ops--;
	if (m && m->body == RELAY__BODY_CHECKING)
		m->body = RELAY__BODY_UNCHECKED;
	if (status == 0)
		status = relay_redis_reply_error(r);
	if (status) {
		relay__consumer_redis_failed(c, status, "XRANGE");
	} else if (m && r->type == RELAY_REDIS_REPLY_ARRAY) {
		if (r->elements == 0) {
			relay__msg_gone(m);
		} else if (m->body == RELAY__BODY_UNCHECKED) {
			m->body = RELAY__BODY_LOST;
			LOG(c, RELAY_LOG_WARN, "RELAY-ENG12",
			    "ownership of a message was lost "
			    "message_id=%s", m->id);
		}
	}
	relay_redis_reply_free(r);
	relay__free(bc->id);
	relay__free(bc);
	relay__consumer_check_stopped(c);
}

static void body_check_start(relay_consumer *c, relay__msg *m)
{
	body_check *bc;
	const char *argv[4];

	if (m->body != RELAY__BODY_UNCHECKED)  /* known, or asked */
		return;
	bc = relay__calloc(1, sizeof(*bc));
	if (!bc)
		return;
	bc->c = c;
	bc->id = relay__strdup(m->id);
	if (!bc->id) {
		relay__free(bc);
		return;
	}
	argv[0] = "XRANGE";
	argv[1] = c->stream;
	argv[2] = m->id;
	argv[3] = m->id;
	c->ops++;
	m->body = RELAY__BODY_CHECKING;
	if (relay_redis_command(c->redis, 4, argv, NULL, body_cb, bc)) {
		c->ops--;
		m->body = RELAY__BODY_UNCHECKED;
		relay__free(bc->id);
		relay__free(bc);
	}
}

typedef struct renew_call {
	relay_consumer *c;
	char **ids;
	size_t n;
} renew_call;

static void renew_cb(relay_redis_backend *b, int status, char **ids,
		     size_t n, void *payload)
{
	renew_call *rc = payload;
	relay_consumer *c = rc->c;
	size_t i, j;

	(void)b;
	c->ops--;
	c->renew_busy = 0;
	if (status) {
		relay__consumer_redis_failed(c, status, "XCLAIM");
	} else {
		relay__consumer_redis_ok(c);
		for (i = 0; i < rc->n; i++) {
			relay__msg *m;

			for (j = 0; j < n; j++)
				if (strcmp(rc->ids[i], ids[j]) == 0)
					break;
			if (j == n && (m = relay__msg_find(c, rc->ids[i])))
				body_check_start(c, m);
		}
	}
	relay_redis_strings_free(ids, n);
	relay_redis_strings_free(rc->ids, rc->n);
	relay__free(rc);
	relay__consumer_check_stopped(c);
}

void relay__consumer_renew_now(relay_consumer *c)
{
	renew_call *rc;
	relay__msg *m;
	size_t n = 0;

	if (c->renew_busy || c->nmsgs == 0 || !c->group_ok)
		return;
	rc = relay__calloc(1, sizeof(*rc));
	if (!rc)
		return;
	rc->c = c;
	rc->ids = relay__calloc(c->nmsgs, sizeof(char *));
	if (!rc->ids)
		goto fail;
	for (m = c->msgs; m; m = m->next) {
		rc->ids[n] = relay__strdup(m->id);
		if (!rc->ids[n])
			goto fail;
		rc->n = ++n;
	}
	c->renew_busy = 1;
	c->ops++;
	if (relay_redis_xclaim_justid(c->redis, c->stream, c->group, c->name,
				      0, (const char *const *)rc->ids, rc->n,
				      renew_cb, rc) == 0)
		return;
	c->renew_busy = 0;
	c->ops--;
fail:
	if (rc->ids)
		relay_redis_strings_free(rc->ids, rc->n);
	relay__free(rc);
}

static void renew_timer_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop;
	(void)revents;
	relay__consumer_renew_now(w->data);
}

/* XPENDING summary: [count, min-id, max-id, [[consumer, n], ...]]. */
static void pending_cb(relay_redis_backend *b, int status,
		       relay_redis_reply *r, void *payload)
{
	relay_consumer *c = payload;

	(void)b;
	c->ops--;
	c->pending_busy = 0;
	if (status == 0 && r && r->type == RELAY_REDIS_REPLY_ARRAY &&
	    r->elements >= 2 &&
	    r->element[0]->type == RELAY_REDIS_REPLY_INTEGER) {
		c->m.pending_entries = r->element[0]->integer > 0 ?
			(uint64_t)r->element[0]->integer : 0;
		c->m.pending_oldest_age_ms = 0;
		if (r->element[1]->type == RELAY_REDIS_REPLY_STRING) {
			long long ms = strtoll(r->element[1]->str, NULL, 10);
			int64_t age = relay_clock_wall_ms(c->clock) - ms;

			c->m.pending_oldest_age_ms = age > 0 ? age : 0;
		}
	}
	relay_redis_reply_free(r);
	relay__consumer_check_stopped(c);
}

static void pending_refresh(relay_consumer *c)
{
	const char *argv[3];

	if (c->pending_busy || !c->group_ok || c->stopping)
		return;
	argv[0] = "XPENDING";
	argv[1] = c->stream;
	argv[2] = c->group;
	c->pending_busy = 1;
	c->ops++;
	if (relay_redis_command(c->redis, 3, argv, NULL, pending_cb, c)) {
		c->pending_busy = 0;
		c->ops--;
	}
}

static void pending_timer_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop;
	(void)revents;
	pending_refresh(w->data);
}

/* ---- lifecycle --------------------------------------------------------- */

static void consumer_free(relay_consumer *c)
{
	size_t i;

	relay_matcher_free(c->matcher);
	if (c->slots)
		c->slots->users--;
	relay_slots_free(c->own_slots);
	for (i = 0; i < c->nhists; i++) {
		relay__free(c->hists[i].app);
		relay__free(c->hists[i].handler);
	}
	relay__free(c->hists);
	relay__stuck_free(c);
	relay__free(c->reclaim_cursor);
	relay__free(c->stream);
	relay__free(c->group);
	relay__free(c->name);
	relay__free(c->dlq_key);
	relay__free(c);
}

static void stop_watchers(relay_consumer *c)
{
	ev_timer_stop(c->loop, &c->read_timer);
	ev_prepare_stop(c->loop, &c->read_prepare);
	ev_timer_stop(c->loop, &c->reclaim_timer);
	ev_timer_stop(c->loop, &c->renew_timer);
	ev_timer_stop(c->loop, &c->pending_timer);
	ev_idle_stop(c->loop, &c->finish_idle);
}

static void finish_cb(struct ev_loop *loop, ev_idle *w, int revents)
{
	relay_consumer *c = w->data;

	(void)revents;
	ev_idle_stop(loop, w);
	if (c->nmsgs || c->ops || c->manual)
		return;  /* checked again when the last one ends */
	if (!c->stopped_called) {
		c->stopped_called = 1;
		ev_timer_stop(c->loop, &c->renew_timer);
		LOG(c, RELAY_LOG_INFO, "RELAY-ENG10", "consumer stopped");
		if (c->stopped_cb)
			c->stopped_cb(c, c->stopped_payload);
	}
	if (c->closing) {
		stop_watchers(c);
		if (c->close_cb)
			c->close_cb(c);
		consumer_free(c);
	}
}

void relay__consumer_check_stopped(relay_consumer *c)
{
	if (!c->stopping || c->nmsgs || c->ops || c->manual)
		return;
	if (c->stopped_called && !c->closing)
		return;
	if (!ev_is_active(&c->finish_idle))
		ev_idle_start(c->loop, &c->finish_idle);
}

int relay_consumer_new(relay_consumer **out, struct ev_loop *loop,
		       relay_redis_backend *redis, relay_runtime *rt,
		       const relay_appset *apps,
		       const relay_consumer_options *o, relay_error *err)
{
	relay_consumer *c;
	int rc = RELAY_ENOMEM;

	*out = NULL;
	if (!o || o->version == 0 ||
	    o->version > RELAY_CONSUMER_OPTIONS_VERSION)
		return relay__error_set(err, RELAY_EINVAL, NULL, 0, 0,
					"consumer options: bad version");
	if (!loop || !redis || !apps || (!rt && !o->executor))
		return relay__error_set(err, RELAY_EINVAL, NULL, 0, 0,
					"consumer: loop, redis, apps and a "
					"runtime or executor are required");
	if (!o->stream || !*o->stream || !o->group || !*o->group ||
	    !o->consumer || !*o->consumer)
		return relay__error_set(err, RELAY_EINVAL, NULL, 0, 0,
					"consumer: stream, group and consumer "
					"name are required");
	if (o->max_event_bytes > RELAY_CONSUMER_MAX_EVENT_BYTES_LIMIT)
		return relay__error_set(err, RELAY_EINVAL, NULL, 0, 0,
					"consumer: max_event_bytes exceeds "
					"1 MiB");
	if (o->version >= 2 && o->slots && o->max_concurrency &&
	    o->max_concurrency != o->slots->max)
		return relay__error_set(err, RELAY_EINVAL, NULL, 0, 0,
					"consumer: max_concurrency %u differs "
					"from the shared slots' %u",
					o->max_concurrency, o->slots->max);
	if (o->executor && (o->executor->version == 0 ||
			    o->executor->version >
			    RELAY_CONSUMER_EXECUTOR_VERSION ||
			    !o->executor->run))
		return relay__error_set(err, RELAY_EINVAL, NULL, 0, 0,
					"consumer: bad executor");
	c = relay__calloc(1, sizeof(*c));
	if (!c)
		return relay__error_set(err, RELAY_ENOMEM, NULL, 0, 0,
					"out of memory");
	c->loop = loop;
	c->redis = redis;
	c->apps = apps;
	c->stream = relay__strdup(o->stream);
	c->group = relay__strdup(o->group);
	c->name = relay__strdup(o->consumer);
	c->dlq_key = relay_dlq_key(o->stream);
	if (!c->stream || !c->group || !c->name || !c->dlq_key)
		goto fail;
	rc = relay_matcher_new(&c->matcher, relay_appset_ruleset(apps));
	if (rc)
		goto fail;
	if (o->version >= 2 && o->slots) {
		c->slots = o->slots;
	} else {
		rc = relay_slots_new(&c->own_slots, o->max_concurrency);
		if (rc)
			goto fail;
		c->slots = c->own_slots;
	}
	c->slots->users++;
	c->max_buffered = o->max_buffered ? o->max_buffered :
		RELAY_CONSUMER_DEFAULT_MAX_BUFFERED;
	c->max_event_bytes = o->max_event_bytes ? o->max_event_bytes :
		RELAY_CONSUMER_DEFAULT_MAX_EVENT_BYTES;
	c->retention_ms = o->retention_ms > 0 ? o->retention_ms :
		RELAY_CONSUMER_DEFAULT_RETENTION_MS;
	c->scale = o->time_scale;
	c->clock = o->clock ? o->clock : relay_clock_system();
	c->logger = o->logger;
	c->output = o->output;
	c->output_payload = o->output_payload;
	c->available = o->available ? o->available :
		relay__consumer_default_available;
	c->available_payload = o->available ? o->available_payload : c;
	if (o->executor) {
		c->exec = o->executor;
	} else {
		relay__rt_executor_init(&c->rt_exec, rt);
		c->exec = &c->rt_exec.parent;
	}
	relay__ctrace_init(&c->trace, o);
	c->rng = relay_clock_mono_us(c->clock) | 1;
	ev_timer_init(&c->read_timer, read_timer_cb, 0., 0.);
	c->read_timer.data = c;
	ev_prepare_init(&c->read_prepare, read_prepare_cb);
	c->read_prepare.data = c;
	ev_timer_init(&c->reclaim_timer, reclaim_timer_cb,
		      secs(c, RELAY_CONSUMER_RECLAIM_INTERVAL_MS),
		      secs(c, RELAY_CONSUMER_RECLAIM_INTERVAL_MS));
	c->reclaim_timer.data = c;
	ev_timer_init(&c->renew_timer, renew_timer_cb,
		      secs(c, RELAY_CONSUMER_RENEW_INTERVAL_MS),
		      secs(c, RELAY_CONSUMER_RENEW_INTERVAL_MS));
	c->renew_timer.data = c;
	ev_timer_init(&c->pending_timer, pending_timer_cb,
		      secs(c, RELAY_CONSUMER_PENDING_REFRESH_MS),
		      secs(c, RELAY_CONSUMER_PENDING_REFRESH_MS));
	c->pending_timer.data = c;
	ev_idle_init(&c->finish_idle, finish_cb);
	c->finish_idle.data = c;
	*out = c;
	return 0;
fail:
	consumer_free(c);
	return relay__error_set(err, rc, NULL, 0, 0, "consumer: %s",
				relay_strerror(rc));
}

int relay_consumer_start(relay_consumer *c)
{
	if (c->started || c->stopping)
		return RELAY_EINVAL;
	c->started = 1;
	LOG(c, RELAY_LOG_INFO, "RELAY-ENG01",
	    "consumer started stream=%s group=%s consumer=%s", c->stream,
	    c->group, c->name);
	ev_timer_start(c->loop, &c->reclaim_timer);
	ev_timer_start(c->loop, &c->renew_timer);
	ev_timer_start(c->loop, &c->pending_timer);
	ensure_group(c);
	return 0;
}

int relay_consumer_stop(relay_consumer *c, int graceful,
			relay_consumer_stopped_fn cb, void *payload)
{
	if (c->closing && cb)
		return RELAY_EINVAL;
	if (cb || !c->stopping) {
		c->stopped_cb = cb;
		c->stopped_payload = payload;
	}
	c->stopped_called = 0;
	if (!c->stopping) {
		c->stopping = 1;
		c->graceful = graceful;
		LOG(c, RELAY_LOG_INFO, "RELAY-ENG10",
		    "stop requested (%s)", graceful ? "graceful" : "at once");
		ev_timer_stop(c->loop, &c->read_timer);
		ev_prepare_stop(c->loop, &c->read_prepare);
		ev_timer_stop(c->loop, &c->reclaim_timer);
		ev_timer_stop(c->loop, &c->pending_timer);
		relay__consumer_detach_read(c);
		relay__msg_stop(c, graceful);
	} else if (!graceful && c->graceful) {
		c->graceful = 0;
		relay__msg_stop(c, 0);
	}
	if (!graceful)
		relay__consumer_manual_close(c);
	relay__consumer_check_stopped(c);
	return 0;
}

void relay_consumer_close(relay_consumer *c, relay_consumer_close_fn cb)
{
	if (!c || c->closing)
		return;
	if (!c->stopping) {
		relay_consumer_stop(c, 0, NULL, NULL);
		c->stopped_called = 1;  /* no stop callback to report */
	} else if (c->graceful) {
		/* Keep the pending stop callback (it runs once, before the
		 * close callback) but stop at once. */
		c->graceful = 0;
		relay__msg_stop(c, 0);
		relay__consumer_manual_close(c);
	}
	c->closing = 1;
	c->close_cb = cb;
	if (!ev_is_active(&c->finish_idle))
		ev_idle_start(c->loop, &c->finish_idle);
}

int relay_consumer_set_apps(relay_consumer *c, const relay_appset *apps)
{
	relay_matcher *m = NULL;
	int rc;

	rc = relay_matcher_new(&m, relay_appset_ruleset(apps));
	if (rc)
		return rc;
	relay_matcher_free(c->matcher);
	c->matcher = m;
	c->apps = apps;
	return 0;
}
