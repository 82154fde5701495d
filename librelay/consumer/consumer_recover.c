/*
 * consumer_recover.c - recovery and ownership: the XAUTOCLAIM reclaim
 * pass, the renewal XCLAIM of the messages in memory (and the XRANGE
 * check of an id it did not return), the XPENDING refresh. It owns
 * those fields of relay_consumer (consumer.h).
 *
 * Every reclaim interval one XAUTOCLAIM pass (following the cursor while
 * the buffer has room) takes entries idle at least MinPendingIdle from
 * any consumer; ids whose body is gone take the missing-payload path.
 * Every renewal interval the ids in memory are XCLAIMed (JUSTID,
 * min-idle 0) to ourselves, which resets their idle time: a live owner's
 * messages never reach MinPendingIdle, so neither we nor a replica
 * reclaim them while they are worked on.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "consumer.h"
#include "consumer_health.h"
#include "consumer_msg.h"
#include "consumer_read.h"
#include "consumer_recover.h"

#define LOG(c, lvl, id, ...) relay__log(&(c)->logger, lvl, id, __VA_ARGS__)

static double secs(const relay_consumer *c, int64_t ms)
{
	return (double)relay__consumer_scaled(c, ms) / 1000.0;
}


static void reclaim_cb(relay_redis_backend *b, int status, relay_autoclaim *a,
		       void *payload)
{
	relay_consumer *c = payload;
	size_t i;
	int more = 0;

	(void)b;
	relay__consumer_op(c, -1);
	c->reclaim_busy = 0;
	if (status) {
		relay_autoclaim_free(a);
		if (!c->stopping)
			relay__consumer_redis_failed(c, status, "XAUTOCLAIM");
		relay__consumer_check_stopped(c);
		return;
	}
	relay__consumer_redis_ok(c);
	relay__read_batch(c, 1);
	for (i = 0; a && i < a->ndeleted; i++)
		relay__msg_missing(c, a->deleted[i]);
	for (i = 0; a && i < a->n && !c->stopping; i++) {
		if (relay__msg_find(c, a->entries[i].id))
			continue;
		relay__count(c, reclaims);
		relay__msg_deliver(c, &a->entries[i]);
	}
	relay__read_batch(c, 0);
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
	relay__consumer_op(c, 1);
	idle = relay__consumer_scaled(c, RELAY_CONSUMER_MIN_PENDING_IDLE_MS);
	rc = relay_redis_xautoclaim(c->redis, c->stream, c->group, c->name,
				    idle, cursor, c->max_buffered - c->nmsgs,
				    reclaim_cb, c);
	if (rc) {
		c->reclaim_busy = 0;
		relay__consumer_op(c, -1);
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
	relay__consumer_op(c, -1);
	if (m && m->body == RELAY__BODY_CHECKING)
		relay__msg_body_to(m, RELAY__BODY_UNCHECKED);
	if (status == 0)
		status = relay_redis_reply_error(r);
	if (status) {
		relay__consumer_redis_failed(c, status, "XRANGE");
	} else if (m && r->type == RELAY_REDIS_REPLY_ARRAY) {
		if (r->elements == 0) {
			relay__msg_gone(m);
		} else if (m->body == RELAY__BODY_UNCHECKED) {
			relay__msg_body_to(m, RELAY__BODY_LOST);
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
	relay__consumer_op(c, 1);
	relay__msg_body_to(m, RELAY__BODY_CHECKING);
	if (relay_redis_command(c->redis, 4, argv, NULL, body_cb, bc)) {
		relay__consumer_op(c, -1);
		relay__msg_body_to(m, RELAY__BODY_UNCHECKED);
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
	relay__consumer_op(c, -1);
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
	relay__consumer_op(c, 1);
	if (relay_redis_xclaim_justid(c->redis, c->stream, c->group, c->name,
				      0, (const char *const *)rc->ids, rc->n,
				      renew_cb, rc) == 0)
		return;
	c->renew_busy = 0;
	relay__consumer_op(c, -1);
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
	relay__consumer_op(c, -1);
	c->pending_busy = 0;
	if (status == 0 && r && r->type == RELAY_REDIS_REPLY_ARRAY &&
	    r->elements >= 2 &&
	    r->element[0]->type == RELAY_REDIS_REPLY_INTEGER) {
		uint64_t count = r->element[0]->integer > 0 ?
			(uint64_t)r->element[0]->integer : 0;
		int64_t oldest = 0;

		if (r->element[1]->type == RELAY_REDIS_REPLY_STRING) {
			long long ms = strtoll(r->element[1]->str, NULL, 10);
			int64_t age = relay_clock_wall_ms(c->clock) - ms;

			oldest = age > 0 ? age : 0;
		}
		relay__consumer_gauge(c, count, oldest);
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
	relay__consumer_op(c, 1);
	if (relay_redis_command(c->redis, 3, argv, NULL, pending_cb, c)) {
		c->pending_busy = 0;
		relay__consumer_op(c, -1);
	}
}

static void pending_timer_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop;
	(void)revents;
	pending_refresh(w->data);
}


void relay__recover_init(relay_consumer *c)
{
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
}

void relay__recover_start(relay_consumer *c)
{
	ev_timer_start(c->loop, &c->reclaim_timer);
	ev_timer_start(c->loop, &c->renew_timer);
	ev_timer_start(c->loop, &c->pending_timer);
}

void relay__recover_stop(relay_consumer *c)
{
	ev_timer_stop(c->loop, &c->reclaim_timer);
	ev_timer_stop(c->loop, &c->pending_timer);
}

void relay__recover_finish(relay_consumer *c)
{
	ev_timer_stop(c->loop, &c->renew_timer);
}

void relay__recover_free(relay_consumer *c)
{
	relay__free(c->reclaim_cursor);
	c->reclaim_cursor = NULL;
}
