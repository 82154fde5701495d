/*
 * consumer_tail.c - what outlives a message in memory: the fused success
 * tail (COMPLETE_ACK) once sent, and the resend rule of a completion
 * whose reply was lost (relay__resend_due(), used by consumer_inv.c for
 * the invocation's own records). It owns the consumer's list of tails
 * waiting to be resent (c->tails).
 */
#include <stdio.h>
#include <string.h>

#include "consumer.h"
#include "consumer_health.h"
#include "consumer_stuck.h"
#include "consumer_tail.h"
#include "inv/inv.h"
#include "invops/invops.h"

#define LOG(c, lvl, id, ...) relay__log(&(c)->logger, lvl, id, __VA_ARGS__)

int relay__resend_due(relay_consumer *c, relay__resend *rs, int status,
		      int64_t deadline_ms, const char *what, const char *id,
		      int64_t *delay_ms)
{
	unsigned int n = rs->tries;
	int64_t d = (int64_t)RELAY__REC_RETRY_MS << (n < 16 ? n : 16);

	if (d > RELAY__REC_RETRY_MAX_MS)
		d = RELAY__REC_RETRY_MAX_MS;
	/* Real time, not time_scale: it waits out a real connection loss
	 * and is bounded by the claim's real (unscaled) deadline. */
	*delay_ms = d;
	if (status != RELAY_ECLOSED && status != RELAY_ETIMEOUT)
		return 0;  /* Redis answered: today's handling */
	if (c->stopping || n >= RELAY__REC_RETRY_TRIES ||
	    relay_clock_wall_ms(c->clock) + d >= deadline_ms)
		return 0;
	rs->tries++;
	rs->status = status;
	LOG(c, RELAY_LOG_DEBUG, "RELAY-ENG09",
	    "%s: %s; resending in %lld ms (try %u) message_id=%s", what,
	    relay_strerror(status), (long long)d, rs->tries, id);
	return 1;
}

void relay__resend_answered(relay_consumer *c, const relay__resend *rs,
			    const char *what, relay_inv_result result,
			    const char *id)
{
	if (!rs->tries)
		return;
	LOG(c, RELAY_LOG_INFO, "RELAY-ENG09",
	    "%s: reply lost (%s), resent %u time(s): %s message_id=%s", what,
	    relay_strerror(rs->status), rs->tries,
	    relay__inv_result_wire(result), id);
}

/*
 * The fused success tail (COMPLETE_ACK: mark_complete, XACK, retain in
 * one script). Once the script is sent nothing in memory is needed to
 * finish the message: whatever the reply says, nothing else is done with
 * it here (recorded: it left the PEL and is retained; stale, retained or
 * an error: it stays pending, a later delivery decides). So its buffer
 * slot is given back at once and the next read goes out in the same
 * write as the script, which Redis runs first; the reply is an
 * outstanding operation that stop waits for, like retain.
 *
 * A lost reply (transport error) is resent like any completion
 * (relay__resend_due()); the tail keeps what the script needs for that.
 * A resend after the first one applied answers "retained" (retention is
 * written only after the XACK succeeded): the message was acknowledged,
 * counted once. "stale" (the field is ok but the XACK had failed) keeps
 * it pending; its next delivery finds the invocation ok and acknowledges
 * it without running anything.
 */
typedef struct tail_call {
	relay_consumer *c;
	struct tail_call *next;         /* c->tails while waiting */
	char *id, *key, *field;         /* in the same allocation, after */
	char *tl;                       /* ... too; NULL: no entry */
	long long outcomes_max;         /* with tl: the outcome stream's */
	unsigned int attempt;
	char token[RELAY_INV_TOKEN_LEN + 1];
	int64_t deadline_ms;            /* the claim's (wall) */
	relay__resend rs;               /* resends so far */
	ev_timer t;                     /* resend backoff */
} tail_call;

static void tail_unlink(tail_call *t)
{
	tail_call **pp;

	for (pp = &t->c->tails; *pp; pp = &(*pp)->next)
		if (*pp == t) {
			*pp = t->next;
			break;
		}
}

/* The tail failed with @status: resend later, or leave it pending.
 * @counted: this failure was counted already (a stop ends the wait). */
static void tail_error(tail_call *t, int status, int counted)
{
	relay_consumer *c = t->c;
	int64_t delay_ms;

	if (!counted)
		relay__consumer_redis_failed(c, status, "mark_complete+XACK");
	if (relay__resend_due(c, &t->rs, status, t->deadline_ms,
			      "mark_complete+XACK", t->id, &delay_ms)) {
		ev_timer_set(&t->t, (double)delay_ms / 1000.0, 0.);
		ev_timer_start(c->loop, &t->t);
		t->next = c->tails;
		c->tails = t;
		return;
	}
	relay__stuck_step_note(c, status, "mark_complete+XACK", t->id);
	relay__free(t);
	relay__consumer_op(c, -1);
	relay__consumer_check_stopped(c);
}

static void tail_cb(int status, const relay_inv_outcome *o, void *payload)
{
	tail_call *t = payload;
	relay_consumer *c = t->c;

	if (status) {
		tail_error(t, status, 0);
		return;
	}
	relay__consumer_redis_ok(c);
	relay__resend_answered(c, &t->rs, "mark_complete+XACK", o->result,
			       t->id);
	if (o->result == RELAY_INV_R_RECORDED ||
	    (t->rs.tries && o->result == RELAY_INV_R_RETAINED))
		relay__count(c, acks);
	else
		LOG(c, RELAY_LOG_DEBUG, "RELAY-ENG09",
		    "message kept pending: completion not recorded "
		    "(%s) message_id=%s",
		    relay__inv_result_wire(o->result), t->id);
	relay__free(t);
	relay__consumer_op(c, -1);
	relay__consumer_check_stopped(c);
}

static int tail_send(tail_call *t)
{
	relay_consumer *c = t->c;
	relay__inv_note n = { t->tl, c->outcomes_key, t->outcomes_max, t->id };

	return relay__inv_complete_ack(c->redis, t->key, c->stream, t->field,
				       t->attempt, t->token, c->group, t->id,
				       c->retention_ms, t->tl ? &n : NULL,
				       tail_cb, t);
}

/* The resend backoff is over, or the consumer stops (@revents 0). */
static void tail_fire(struct ev_loop *loop, ev_timer *w, int revents)
{
	tail_call *t = w->data;
	relay_consumer *c = t->c;
	int rc;

	(void)revents;
	ev_timer_stop(loop, w);
	tail_unlink(t);
	if (c->stopping) {
		tail_error(t, t->rs.status, 1);  /* no resend: logged, pending */
		return;
	}
	rc = tail_send(t);
	if (rc)
		tail_error(t, rc, 0);
}

void relay__tail_stop(relay_consumer *c)
{
	while (c->tails)
		tail_fire(c->loop, &c->tails->t, 0);
}

int relay__tail_send(relay_consumer *c, const char *id, const char *key,
		     const char *field, unsigned int attempt,
		     const char *token, int64_t deadline_ms,
		     const relay__inv_note *note, const relay__resend *rs)
{
	const char *tl = note ? note->entry : NULL;
	size_t li = strlen(id) + 1, lk = strlen(key) + 1;
	size_t lf = strlen(field) + 1, lt = tl ? strlen(tl) + 1 : 0;
	/* One allocation per message on the common path: the strings
	 * follow the struct. */
	tail_call *t = relay__calloc(1, sizeof(*t) + li + lk + lf + lt);
	int rc;

	if (!t)
		return RELAY_ENOMEM;
	t->c = c;
	t->id = (char *)(t + 1);
	t->key = t->id + li;
	t->field = t->key + lk;
	memcpy(t->id, id, li);
	memcpy(t->key, key, lk);
	memcpy(t->field, field, lf);
	if (tl) {
		t->tl = t->field + lf;
		memcpy(t->tl, tl, lt);
		t->outcomes_max = note->outcomes_max;
	}
	t->attempt = attempt;
	memcpy(t->token, token, sizeof(t->token));
	t->deadline_ms = deadline_ms;
	/* Resends the invocation made already count against the bound. */
	t->rs = *rs;
	ev_timer_init(&t->t, tail_fire, 0., 0.);
	t->t.data = t;
	rc = tail_send(t);
	if (rc) {
		relay__free(t);
		return rc;
	}
	relay__consumer_op(c, 1);
	return 0;
}

