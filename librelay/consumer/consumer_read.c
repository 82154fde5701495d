/*
 * consumer_read.c - reading: the consumer group (XGROUP CREATE), the
 * XREADGROUPs and their backoff and poll. It owns the reading fields of
 * relay_consumer (consumer.h) and hands every entry to the delivery
 * function relay__read_init() was given (relay__msg_deliver(), by
 * consumer.c): it never calls the message's file by name.
 *
 * Up to MAX_READS XREADGROUPs are outstanding, together asking for at
 * most the buffer's room (max_buffered minus the messages in memory); at
 * the limit nothing is read and the backlog stays in Redis. A read
 * BLOCKs only while no message is in memory: a blocked read holds the
 * connection, and the transitions of in-flight messages must not queue
 * behind it. With messages in flight an empty read is retried after a
 * short poll, and every message that ends kicks a new read.
 *
 * Outages. A failed read marks Redis down (logged once,
 * consumer_health.c), and reads are retried after a jittered backoff
 * doubling from 1 s to 30 s; the first success marks it up again.
 */
#include <stddef.h>
#include <string.h>

#include "consumer.h"
#include "consumer_health.h"
#include "consumer_read.h"

#define LOG(c, lvl, id, ...) relay__log(&(c)->logger, lvl, id, __VA_ARGS__)
#define POLL_MS 10

static void do_read(relay_consumer *c);
static void ensure_group(relay_consumer *c);


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

	b = relay__consumer_backoff_next(c, lo, hi);
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
	relay__consumer_op(c, -1);
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
	relay__consumer_backoff_reset(c);
	/* No new read until the whole batch is in memory (a message that
	 * ends at once must not open room the batch already uses). */
	c->delivering++;
	for (i = 0; i < n && !c->stopping; i++)
		c->deliver(c, &e[i]);
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
	relay__consumer_op(c, 1);
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
	relay__consumer_op(c, -1);
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

	relay__consumer_op(c, 1);
	rc = relay_redis_group_create(c->redis, c->stream, c->group, "0",
				      group_cb, c);
	if (rc) {
		relay__consumer_op(c, -1);
		relay__consumer_redis_failed(c, rc, "XGROUP CREATE");
		read_backoff(c);
	}
}


void relay__read_init(relay_consumer *c, relay__deliver_fn deliver)
{
	c->deliver = deliver;
	c->rng = relay_clock_mono_us(c->clock) | 1;
	ev_timer_init(&c->read_timer, read_timer_cb, 0., 0.);
	c->read_timer.data = c;
	ev_prepare_init(&c->read_prepare, read_prepare_cb);
	c->read_prepare.data = c;
}

void relay__read_start(relay_consumer *c)
{
	ensure_group(c);
}

void relay__read_stop(relay_consumer *c)
{
	ev_timer_stop(c->loop, &c->read_timer);
	ev_prepare_stop(c->loop, &c->read_prepare);
	relay__consumer_detach_read(c);
}

void relay__read_batch(relay_consumer *c, int begin)
{
	if (begin)
		c->delivering++;
	else
		c->delivering--;
}
