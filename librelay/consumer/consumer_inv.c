/*
 * consumer_inv.c - one matched invocation: concurrency slots (global
 * MAX_CONCURRENCY and per-app min(concurrency, MAX_CONCURRENCY), FIFO
 * waiters with a bounded wait), then try_start → run → mark_complete |
 * record_failure | mark_exhausted. Every outcome ends in inv_resolved(),
 * which moves the message on to its next invocation (consumer_msg.c).
 *
 * Invariants: an invocation runs only after try_start CLAIMED it in this
 * delivery (a store error fails closed); an attempt is charged only by a
 * claim, so waiting for a slot, an unavailable app or a stop cost nothing;
 * slots are held from before try_start until the handler exits.
 *
 * The life of one invocation (relay__cinv_state, consumer_inv.h):
 *
 *	todo ─┬─ slot free ─────────────→ claim ─┬─ claimed ──→ run
 *	      ├─ no slot → wait ─ freed ─↗       ├─ ok ───────→ ok
 *	      │            └─ timeout, stop ─→ pending
 *	      └─ stopping, unavailable ──→ pending
 *	                                          ├─ exhausted → exhausted | dlq
 *	                                          └─ running, backing off,
 *	                                             retained, error → pending
 *	run ─┬─ exited → record ─┬─ complete recorded ─→ ok
 *	     │                   ├─ exhausted recorded → exhausted
 *	     │                   ├─ failure recorded, stale, error → pending
 *	     │                   └─ reply lost → record_wait
 *	     ├─ start refused by the system → claim given back → pending
 *	     └─ cancelled → pending
 *	record_wait ─┬─ backoff over → record (same attempt and token)
 *	             └─ stopping, tries used, claim deadline → pending
 *	exhausted ─ DLQ entry written (consumer_msg.c) → dlq
 *
 * ok, dlq and pending are final for this delivery; ok, exhausted and
 * dlq are terminal (the message may be acknowledged once every
 * invocation is).
 *
 * A refused start (the kernel had no process or memory for the sandbox:
 * RELAY_RUN_REFUSED, or the executor's RELAY_EAGAIN) ran nothing, so it
 * is no attempt: the claim is given back (give_back()) and the
 * invocation left pending for the reclaim to deliver again.
 *
 * A lost reply: a completion that fails with a transport error
 * (RELAY_ECLOSED, RELAY_ETIMEOUT) may have been applied or not. Left
 * pending, its claim would expire and recovery would run a handler that
 * succeeded a second time; so it is resent (record_wait, bounds in
 * consumer_tail.h). Resending is safe: the scripts are fenced by the claim.
 * When the first write did apply, a resend answers: mark_exhausted
 * "recorded" (a repeat for the same claim); mark_complete "stale" with
 * no claim left in the field (then one HGET: "ok" counts as recorded);
 * record_failure "stale" (pending either way). An error reply from
 * Redis is never resent. The table below is the only list of legal moves;
 * relay__cinv_to() is the only writer of inv->state.
 *
 * An invocation reports to its message only through the relay__cinv_up
 * it was given (consumer_inv.h): classified (the classification part of
 * CLAIM_START) and done (once, its last act). It reads the message,
 * never writes it or calls it by name (the consumer map of
 * doc/architecture.md; tests/check-layering.py).
 */
#include <assert.h>
#include <stdio.h>
#include <string.h>

#include "consumer.h"
#include "consumer_exec.h"
#include "consumer_health.h"
#include "consumer_inv.h"
#include "consumer_msg.h"
#include "consumer_stuck.h"
#include "consumer_tail.h"
#include "inv/inv.h"
#include "invops/invops.h"
#include "slots.h"

#define LOG(c, lvl, id, ...) relay__log(&(c)->logger, lvl, id, __VA_ARGS__)

#define S_(x) (1u << RELAY__CINV_##x)
static const unsigned int cinv_next[RELAY__CINV_STATE_COUNT_] = {
	[RELAY__CINV_TODO] = S_(WAIT) | S_(CLAIM) | S_(PENDING),
	[RELAY__CINV_WAIT] = S_(CLAIM) | S_(PENDING),
	[RELAY__CINV_CLAIM] = S_(RUN) | S_(OK) | S_(EXHAUSTED) | S_(DLQ) |
			      S_(PENDING),
	[RELAY__CINV_RUN] = S_(RECORD) | S_(PENDING),
	[RELAY__CINV_RECORD] = S_(OK) | S_(EXHAUSTED) | S_(PENDING) |
			       S_(RECORD_WAIT),
	[RELAY__CINV_RECORD_WAIT] = S_(RECORD) | S_(PENDING),
	[RELAY__CINV_OK] = 0,
	[RELAY__CINV_EXHAUSTED] = S_(DLQ),
	[RELAY__CINV_DLQ] = 0,
	[RELAY__CINV_PENDING] = 0,
};
#undef S_

static const char *const cinv_names[RELAY__CINV_STATE_COUNT_] = {
	[RELAY__CINV_TODO] = "todo",
	[RELAY__CINV_WAIT] = "wait",
	[RELAY__CINV_CLAIM] = "claim",
	[RELAY__CINV_RUN] = "run",
	[RELAY__CINV_RECORD] = "record",
	[RELAY__CINV_RECORD_WAIT] = "record_wait",
	[RELAY__CINV_OK] = "ok",
	[RELAY__CINV_EXHAUSTED] = "exhausted",
	[RELAY__CINV_DLQ] = "dlq",
	[RELAY__CINV_PENDING] = "pending",
};

int relay__cinv_state_allowed(relay__cinv_state from, relay__cinv_state to)
{
	return relay__fsm_allowed(cinv_next, RELAY__CINV_STATE_COUNT_, from,
				  to);
}

const char *relay__cinv_state_name(relay__cinv_state s)
{
	return relay__fsm_name(cinv_names, RELAY__CINV_STATE_COUNT_, s);
}

void relay__cinv_to(relay__cinv *inv, relay__cinv_state to)
{
	assert(relay__cinv_state_allowed(inv->state, to));
	inv->state = to;
}

void relay__cinv_init(relay__cinv *inv, relay__msg *m,
		      const relay_app *app, const relay__cinv_up *up)
{
	inv->m = m;
	inv->up = up;
	inv->app = relay_app_ref(app);
}

int relay__cinv_set_handler(relay__cinv *inv, const char *handler,
			    int64_t timeout_ms, int retries)
{
	inv->handler = handler;
	inv->timeout_ms = timeout_ms;
	inv->retries = retries;
	inv->field = relay__sprintf("%s/%s", relay_app_name(inv->app),
				    handler);
	return inv->field ? 0 : RELAY_ENOMEM;
}

void relay__cinv_free(relay__cinv *inv)
{
	relay_app_free(inv->app);
	relay__free(inv->field);
	relay__tail_reset(&inv->tail);
}

static void inv_claim(relay__cinv *inv);

/* ---- concurrency slots ------------------------------------------------- */

/* The app's limit: min(concurrency, MAX_CONCURRENCY), counted across
 * every consumer sharing the limiter. */
static unsigned int app_limit(const relay_slots *s, const relay_app *app)
{
	int n = relay_app_concurrency(app);
	unsigned int lim = n > 0 ? (unsigned int)n : 1;

	return lim < s->max ? lim : s->max;
}

/* 1 taken, 0 none free, <0 error. */
static int slots_take(relay_slots *sl, relay__cinv *inv)
{
	int rc = relay__slots_take(sl, relay_app_name(inv->app),
				   app_limit(sl, inv->app));

	if (rc == 1)
		inv->has_slots = 1;
	return rc;
}

/* The invocation whose wait queue link is @w. */
static relay__cinv *waiter_inv(relay__slot_wait *w)
{
	return (relay__cinv *)(void *)((char *)w -
				       offsetof(relay__cinv, wait));
}

/*
 * Give back an invocation's slots and hand them, in FIFO order, to the
 * waiters that can now run (a waiter of a saturated app does not block
 * the waiters of other apps). With a shared limiter the waiters may be
 * another consumer's (another stream's): the slot goes to the oldest
 * waiter whatever its stream.
 */
void relay__slots_release(relay_consumer *c, relay__cinv *inv)
{
	relay_slots *sl = c->slots;
	relay__slot_wait *ww;

	if (inv->has_slots) {
		relay__slots_give(sl, relay_app_name(inv->app));
		inv->has_slots = 0;
	}
	if (c->stopping && sl == c->own_slots)
		return;  /* waiters are being given up, not started */
	/*
	 * Rescan from the head after every hand-over: a claim that fails at
	 * once resolves its invocation, which re-enters this function and
	 * may free other waiters' messages, so no saved "next" survives it.
	 */
again:
	for (ww = relay__slots_wait_head(sl); ww; ww = ww->next) {
		relay__cinv *w = waiter_inv(ww);

		/* A stopping consumer's waiters are being given up. */
		if (w->m->c->stopping || slots_take(sl, w) != 1)
			continue;
		relay__slots_wait_remove(sl, &w->wait);
		relay__cinv_to(w, RELAY__CINV_CLAIM);
		/* Unconditionally: an expired timer is inactive but may
		 * still be pending, and its callback would release the
		 * message under the claim started below. */
		ev_timer_stop(w->m->c->loop, &w->m->slot_timer);
		inv_claim(w);
		goto again;
	}
}

/* ---- one invocation ---------------------------------------------------- */

/* A Redis step of @inv failed with @status: counted and logged (at
 * most once per backoff step for the message's own trouble); the
 * message learns of it when the invocation is done. */
static void step_failed(relay__cinv *inv, int status, const char *what)
{
	relay_consumer *c = inv->m->c;

	relay__consumer_redis_failed(c, status, what);
	if (relay__stuck_step_note(c, status, what, inv->m->id))
		inv->step_failed = 1;
}

static void inv_resolved(relay__cinv *inv, relay__cinv_state st)
{
	relay__msg *m = inv->m;

	relay__slots_release(m->c, inv);
	relay__cinv_to(inv, st);
	inv->up->done(m, inv);
}

static void slot_timeout_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	relay__msg *m = w->data;
	relay__cinv *inv = &m->invs[m->cur];

	(void)loop;
	(void)revents;
	relay__slots_wait_remove(m->c->slots, &inv->wait);
	relay__count(m->c, concurrency_timeouts);
	LOG(m->c, RELAY_LOG_DEBUG, "RELAY-ENG11",
	    "no concurrency slot freed in time app=%s handler=%s "
	    "message_id=%s", relay_app_name(inv->app),
	    inv->handler, m->id);
	inv_resolved(inv, RELAY__CINV_PENDING);
}

void relay__cinv_begin(relay__cinv *inv)
{
	relay__msg *m = inv->m;
	relay_consumer *c = m->c;
	int rc;

	if (c->stopping) {
		inv_resolved(inv, RELAY__CINV_PENDING);
		return;
	}
	if (!c->available(inv->app, c->available_payload)) {
		LOG(c, RELAY_LOG_INFO, "RELAY-ENG08",
		    "app unavailable, message kept pending app=%s handler=%s "
		    "message_id=%s", relay_app_name(inv->app),
		    inv->handler, m->id);
		inv_resolved(inv, RELAY__CINV_PENDING);
		return;
	}
	rc = slots_take(c->slots, inv);
	if (rc == 1) {
		relay__cinv_to(inv, RELAY__CINV_CLAIM);
		inv_claim(inv);
		return;
	}
	if (rc < 0) {
		inv_resolved(inv, RELAY__CINV_PENDING);
		return;
	}
	relay__count(c, concurrency_waits);
	relay__cinv_to(inv, RELAY__CINV_WAIT);
	relay__slots_wait_push(c->slots, &inv->wait);
	ev_timer_init(&m->slot_timer, slot_timeout_cb,
		      (double)relay__consumer_scaled(c,
			      RELAY_CONSUMER_SLOT_WAIT_MS) / 1000.0, 0.);
	m->slot_timer.data = m;
	ev_timer_start(c->loop, &m->slot_timer);
}

static const char *const rec_what[] = {
	[RELAY__REC_COMPLETE] = "mark_complete",
	[RELAY__REC_FAILURE] = "record_failure",
	[RELAY__REC_EXHAUSTED] = "mark_exhausted",
};

static int record_send(relay__cinv *inv);
static void rec_fire(struct ev_loop *loop, ev_timer *w, int revents);

/*
 * The completion of @inv failed with @status. A lost reply (transport
 * error) is resent after a backoff while relay__resend_due() allows it
 * (state record_wait); anything else, or the last try, leaves the
 * invocation pending with one log line (step_failed()).
 */
static void record_error(relay__cinv *inv, int status)
{
	relay__msg *m = inv->m;
	relay_consumer *c = m->c;
	const char *what = rec_what[inv->rec_op];
	int64_t delay_ms;

	if (relay__resend_due(c, &inv->rec, status, inv->deadline_ms, what,
			      m->id, &delay_ms)) {
		relay__consumer_redis_failed(c, status, what);
		relay__cinv_to(inv, RELAY__CINV_RECORD_WAIT);
		ev_timer_init(&m->rec_timer, rec_fire,
			      (double)delay_ms / 1000.0, 0.);
		m->rec_timer.data = m;
		ev_timer_start(c->loop, &m->rec_timer);
		return;
	}
	step_failed(inv, status, what);
	inv_resolved(inv, RELAY__CINV_PENDING);
}

/* A resent completion got its answer: say so once. */
static void record_resent(relay__cinv *inv, const relay_inv_outcome *o)
{
	relay__resend_answered(inv->m->c, &inv->rec, rec_what[inv->rec_op],
			       o->result, inv->m->id);
}

/* The record_wait backoff is over (or the consumer stops). */
static void rec_fire(struct ev_loop *loop, ev_timer *w, int revents)
{
	relay__msg *m = w->data;
	relay__cinv *inv = &m->invs[m->cur];
	int rc;

	(void)revents;
	ev_timer_stop(loop, w);
	if (inv->state != RELAY__CINV_RECORD_WAIT)
		return;
	if (m->c->stopping) {
		/* Counted when it failed (record_error): logged only. */
		if (relay__stuck_step_note(m->c, inv->rec.status,
					 rec_what[inv->rec_op], m->id))
			inv->step_failed = 1;
		inv_resolved(inv, RELAY__CINV_PENDING);
		return;
	}
	relay__cinv_to(inv, RELAY__CINV_RECORD);
	rc = record_send(inv);
	if (rc)
		record_error(inv, rc);
}

static void confirm_cb(relay_redis_backend *b, int status,
		       relay_redis_reply *r, void *payload)
{
	relay__cinv *inv = payload;
	int ok = !status && r && r->type == RELAY_REDIS_REPLY_STRING &&
		 r->len == 2 && memcmp(r->str, "ok", 2) == 0;

	(void)b;
	relay_redis_reply_free(r);
	if (!ok)
		LOG(inv->m->c, RELAY_LOG_DEBUG, "RELAY-ENG09",
		    "mark_complete resent: field not ok, message kept "
		    "pending message_id=%s", inv->m->id);
	inv_resolved(inv, ok ? RELAY__CINV_OK : RELAY__CINV_PENDING);
}

/* Read @inv's field after a resent mark_complete answered stale with no
 * claim in it. Returns 0 (confirm_cb resolves @inv) or a send error. */
static int confirm_ok(relay__cinv *inv)
{
	const char *argv[3] = { "HGET", inv->m->key, inv->field };

	return relay_redis_command(inv->m->c->redis, 3, argv, NULL,
				   confirm_cb, inv);
}

static void complete_cb(int status, const relay_inv_outcome *o, void *payload)
{
	relay__cinv *inv = payload;
	relay_consumer *c = inv->m->c;

	if (status) {
		record_error(inv, status);
		return;
	}
	relay__consumer_redis_ok(c);
	record_resent(inv, o);
	if (o->result == RELAY_INV_R_RECORDED) {
		inv_resolved(inv, RELAY__CINV_OK);
		return;
	}
	/*
	 * A resend that finds no claim in the field answers stale with
	 * attempt 0 and no token: the field is "ok" (the lost first write
	 * did apply), or absent or unparseable. One HGET tells which.
	 */
	if (inv->rec.tries && o->result == RELAY_INV_R_STALE &&
	    o->attempt == 0 && !o->token[0] && confirm_ok(inv) == 0)
		return;
	inv_resolved(inv, RELAY__CINV_PENDING);
}

/*
 * The common path's last step in one round trip: when this invocation
 * is the message's last non-terminal one and every other one succeeded
 * (so no DLQ entry is due), mark_complete, XACK and retain go as one
 * script. Anything else (a sibling exhausted, the classification not
 * recorded, the body gone, an older backend) takes the separate steps.
 */
static int can_fuse(const relay__cinv *inv)
{
	const relay__msg *m = inv->m;
	size_t i;

	if (m->c->redis->version < 3 || m->state != RELAY__MSG_RUN ||
	    m->body == RELAY__BODY_GONE)
		return 0;
	for (i = 0; i < m->ninv; i++)
		if (&m->invs[i] != inv &&
		    m->invs[i].state != RELAY__CINV_OK)
			return 0;
	return 1;
}

static void exhausted_cb(int status, const relay_inv_outcome *o,
			 void *payload)
{
	relay__cinv *inv = payload;
	relay_consumer *c = inv->m->c;

	if (status) {
		record_error(inv, status);
		return;
	}
	relay__consumer_redis_ok(c);
	record_resent(inv, o);
	/* A repeat for the same claim is "recorded" too. */
	if (o->result != RELAY_INV_R_RECORDED) {
		inv_resolved(inv, RELAY__CINV_PENDING);
		return;
	}
	inv_resolved(inv, RELAY__CINV_EXHAUSTED);
}

static void failure_cb(int status, const relay_inv_outcome *o, void *payload)
{
	relay__cinv *inv = payload;
	relay_consumer *c = inv->m->c;

	if (status) {
		record_error(inv, status);
		return;
	}
	relay__consumer_redis_ok(c);
	record_resent(inv, o);
	inv_resolved(inv, RELAY__CINV_PENDING);
}

/* The attempt's timeline entry and outcome stream for its outcome's
 * script in @n (doc/redis-layout.md ); NULL when there is no
 * entry. */
static const relay__inv_note *tl_arg(const relay__cinv *inv,
				      relay__inv_note *n)
{
	const relay_consumer *c = inv->m->c;

	if (!inv->tl[0])
		return NULL;
	n->entry = inv->tl;
	n->outcomes = c->outcomes_key;
	n->outcomes_max = RELAY__OUTCOMES_MAX;
	n->id = inv->m->id;
	return n;
}

/* The backoff divided by time_scale (test hooks); at scale 1 exactly
 * relay_inv_backoff_ms(), as relay_inv_record_failure() sends it. */
static int record_failure(relay__cinv *inv)
{
	relay__msg *m = inv->m;
	relay_consumer *c = m->c;
	relay__inv_note n;

	return relay__inv_record_failure_ms(
		c->redis, m->key, inv->field, inv->attempt, inv->token,
		relay_clock_wall_ms(c->clock),
		relay__consumer_scaled(c, relay_inv_backoff_ms(inv->attempt)),
		tl_arg(inv, &n), failure_cb, inv);
}

/* The success of the message's last invocation, every other one ok:
 * COMPLETE_ACK (consumer_tail.c) and done at once, the message leaves
 * memory (inv->fused). Returns 0 (then @inv is gone) or the send error
 * (nothing sent). */
static int send_tail(relay__cinv *inv)
{
	relay__msg *m = inv->m;
	relay__inv_note n;
	int rc = relay__tail_send(m->c, m->id, m->key, inv->field,
				  inv->attempt, inv->token, inv->deadline_ms,
				  tl_arg(inv, &n), &inv->rec);

	if (rc)
		return rc;
	relay__cinv_to(inv, RELAY__CINV_OK);
	inv->fused = 1;
	inv->up->done(m, inv);
	return 0;
}

/*
 * Send @inv's outcome (state record). The success of the message's last
 * invocation may go fused (send_tail(): the message is freed when that
 * returns 0). Returns 0 or the send error (nothing sent).
 */
static int record_send(relay__cinv *inv)
{
	relay__msg *m = inv->m;
	relay_consumer *c = m->c;
	relay__inv_note n;

	switch (inv->rec_op) {
	case RELAY__REC_COMPLETE:
		if (can_fuse(inv))
			return send_tail(inv);
		return relay__inv_mark_complete_tl(c->redis, m->key,
						   inv->field, inv->attempt,
						   inv->token, tl_arg(inv, &n),
						   complete_cb, inv);
	case RELAY__REC_EXHAUSTED:
		return relay__inv_mark_exhausted_tl(c->redis, m->key,
						    inv->field, inv->attempt,
						    inv->token,
						    tl_arg(inv, &n),
						    exhausted_cb, inv);
	default:
		return record_failure(inv);
	}
}

/* The handler is over: record its outcome (@op, RELAY__REC_*). */
static void inv_record(relay__cinv *inv, int op)
{
	int rc;

	relay__cinv_to(inv, RELAY__CINV_RECORD);
	inv->rec_op = op;
	inv->rec.tries = 0;
	rc = record_send(inv);
	if (rc)
		record_error(inv, rc);
}

static void inv_failed(relay__cinv *inv, const char *reason)
{
	unsigned int max = (unsigned int)inv->retries + 1;

	snprintf(inv->reason, sizeof(inv->reason), "%s",
		 reason && *reason ? reason : "failed");
	if (inv->attempt >= max)
		relay__consumer_outcome(inv->m->c, relay_app_name(inv->app),
					inv->handler, RELAY__OUT_EXHAUSTED);
	else
		relay__tail_reset(&inv->tail);  /* only the last one counts */
	inv_record(inv, inv->attempt >= max ? RELAY__REC_EXHAUSTED :
		   RELAY__REC_FAILURE);
}

/*
 * Why a run could not start: the runtime's own words when the built-in
 * executor has them, and for an app directory the sandbox user cannot
 * read, the ways out (the runtime cannot know the daemon's settings).
 */
static void start_failure(relay_consumer *c, int rc, char *why, size_t size)
{
	const relay_error *e = &c->rt_exec.last;

	if (c->exec != &c->rt_exec.parent || !e->text[0]) {
		snprintf(why, size, "start: %s", relay_strerror(rc));
		return;
	}
	snprintf(why, size, "start: %s%s", e->text, e->code == RELAY_EACCESS
		 ? "; make it and its parents readable and searchable by that "
		   "uid, set RELAY_SANDBOX_USER to a user that can read it, or "
		   "set RELAY_SANDBOX=none (no isolation)" : "");
}

/*
 * The attempt that just ended as a timeline entry (inv->tl), sent with
 * its outcome's script: @o the run's outcome, or NULL when it could not
 * start (@why says why); @dur_us its duration. Read before the stderr
 * tail is reset. On no memory the entry goes without its stderr.
 */
static void tl_note(relay__cinv *inv, const relay_run_outcome *o,
		    const char *why, uint64_t dur_us)
{
	relay_consumer *c = inv->m->c;
	relay__tl_attempt a;
	char trace[2 * RELAY_TRACE_ID_SIZE + 1] = "";
	char *tail = NULL;
	size_t i;

	memset(&a, 0, sizeof(a));
	a.attempt = inv->attempt;
	a.end_ms = relay_clock_wall_ms(c->clock);
	a.start_ms = o ? inv->started_wall_ms : a.end_ms;
	a.duration_ms = o ? dur_us / 1000 : 0;
	a.replica = c->name;
	if (!o)
		a.outcome = RELAY__TL_NOT_STARTED;
	else if (o->status == RELAY_RUN_OK)
		a.outcome = RELAY__TL_OK;
	else if (o->status == RELAY_RUN_TIMEOUT)
		a.outcome = RELAY__TL_TIMEOUT;
	else
		a.outcome = RELAY__TL_FAILED;
	if (o) {
		a.exit_code = o->exit_code;
		a.term_signal = o->term_signal;
		a.warm = o->version >= 2 && o->warm;
		a.reason = o->reason;
	} else {
		a.reason = why;
	}
	if (inv->traced) {
		for (i = 0; i < RELAY_TRACE_ID_SIZE; i++)
			snprintf(trace + 2 * i, 3, "%02x", inv->tr.trace_id[i]);
		a.trace_id = trace;
	}
	if (a.outcome == RELAY__TL_FAILED || a.outcome == RELAY__TL_TIMEOUT)
		tail = relay__tail_text(&inv->tail);
	a.stderr_tail = tail;
	relay__tl_format(&a, inv->tl, sizeof(inv->tl));
	relay__free(tail);
}

static void output_cb(const relay_output_line *line, void *payload)
{
	relay__cinv *inv = payload;
	relay_consumer *c = inv->m->c;

	/* Kept for the DLQ entry should this attempt exhaust it. */
	if (line->stream == RELAY_OUTPUT_STDERR && line->len >= line->prefix_len)
		relay__tail_add(&inv->tail, line->text + line->prefix_len,
				line->len - line->prefix_len, line->partial);
	if (c->output)
		c->output(line, c->output_payload);
}

/* ---- a start the system refused ---------------------------------------- */

/* RELAY-ENG16: the first refusal of a burst, then at most one line per
 * REFUSED_LOG_US with how many came meanwhile. */
#define REFUSED_LOG_US 10000000u

static void refused_log(relay__cinv *inv, const char *why)
{
	relay_consumer *c = inv->m->c;
	relay_mono_us now = relay_clock_mono_us(c->clock);

	if (c->refused_logged_us && now - c->refused_logged_us <
	    REFUSED_LOG_US) {
		c->refused_quiet++;
		return;
	}
	LOG(c, RELAY_LOG_WARN, "RELAY-ENG16",
	    "handler start refused by the system, invocation left pending "
	    "(no attempt charged) app=%s handler=%s message_id=%s "
	    "reason=\"%s\" more=%llu", relay_app_name(inv->app),
	    inv->handler, inv->m->id, why,
	    (unsigned long long)c->refused_quiet);
	c->refused_logged_us = now ? now : 1;
	c->refused_quiet = 0;
}

static void give_back_cb(relay_redis_backend *b, int status,
			 relay_redis_reply *r, void *payload)
{
	relay__cinv *inv = payload;

	(void)b;
	relay_redis_reply_free(r);
	if (status)
		step_failed(inv, status, "give_back");
	inv_resolved(inv, RELAY__CINV_PENDING);
}

/*
 * Undo the claim of an attempt that never started: the field back to what
 * try_start found (attempt - 1 with its elapsed backoff, or no field for
 * a first attempt), so the next claim counts this attempt again. Only the
 * claim's holder writes a running field before its deadline (try_start
 * leaves it alone), so the plain write is fenced by the claim itself;
 * past (or too near) the deadline nothing is written and the expired
 * claim counts as an attempt, as a crashed one does.
 */
static void give_back(relay__cinv *inv)
{
	relay__msg *m = inv->m;
	relay_consumer *c = m->c;
	char val[96];
	const char *hset[4] = { "HSET", m->key, inv->field, val };
	const char *hdel[3] = { "HDEL", m->key, inv->field };
	int64_t now = relay_clock_wall_ms(c->clock);

	if (inv->deadline_ms - now < 1000) {
		inv_resolved(inv, RELAY__CINV_PENDING);
		return;
	}
	snprintf(val, sizeof(val), "next_attempt_at:%lld:%u:%s",
		 (long long)now, inv->attempt - 1, inv->token);
	if (relay_redis_command(c->redis, inv->attempt > 1 ? 4 : 3,
				inv->attempt > 1 ? hset : hdel, NULL,
				give_back_cb, inv) != 0) {
		step_failed(inv, RELAY_EBACKEND, "give_back");
		inv_resolved(inv, RELAY__CINV_PENDING);
	}
}

/* The run of @inv never started: the system refused it (@why). */
static void inv_refused(relay__cinv *inv, const char *why)
{
	relay_consumer *c = inv->m->c;

	relay__count(c, starts_refused);
	if (inv->attempt > 1)
		relay__count_add(c, retries, -1);  /* counted by inv_run */
	refused_log(inv, why);
	relay__tail_reset(&inv->tail);
	relay__slots_release(c, inv);
	give_back(inv);
}

static void run_done(const relay_run_outcome *o, void *payload)
{
	relay__cinv *inv = payload;
	relay__msg *m = inv->m;
	relay_consumer *c = m->c;
	relay_mono_us now = relay_clock_mono_us(c->clock);
	uint64_t dur_us = now - inv->started_us;

	inv->run = NULL;
	relay__count_add(c, in_flight_invocations, -1);
	relay__ctrace_end(inv, o, NULL, now);
	if (o->status == RELAY_RUN_CANCELLED) {
		LOG(c, RELAY_LOG_INFO, "RELAY-ENG04",
		    "handler cancelled app=%s handler=%s message_id=%s "
		    "attempt=%u", relay_app_name(inv->app),
		    inv->handler, m->id, inv->attempt);
		inv_resolved(inv, RELAY__CINV_PENDING);
		return;
	}
	if (o->status == RELAY_RUN_REFUSED) {
		inv_refused(inv, o->reason);
		return;
	}
	if (o->duration_us)
		dur_us = o->duration_us;
	tl_note(inv, o, NULL, dur_us);
	relay__consumer_hist_add(c, relay_app_name(inv->app),
				 inv->handler, dur_us);
	/* The handler is over: its slots go to the next waiter now. */
	relay__slots_release(c, inv);
	if (o->status == RELAY_RUN_OK) {
		relay__consumer_outcome(c, relay_app_name(inv->app),
					inv->handler, RELAY__OUT_SUCCEEDED);
		LOG(c, RELAY_LOG_DEBUG, "RELAY-ENG04",
		    "handler succeeded app=%s handler=%s message_id=%s "
		    "attempt=%u duration_ms=%llu exit_code=0",
		    relay_app_name(inv->app),
		    inv->handler, m->id, inv->attempt,
		    (unsigned long long)(dur_us / 1000));
		relay__tail_reset(&inv->tail);
		inv_record(inv, RELAY__REC_COMPLETE);
		return;
	}
	relay__consumer_outcome(c, relay_app_name(inv->app), inv->handler,
				o->status == RELAY_RUN_TIMEOUT ?
				RELAY__OUT_TIMED_OUT : RELAY__OUT_FAILED);
	LOG(c, RELAY_LOG_WARN, "RELAY-ENG04",
	    "handler failed app=%s handler=%s message_id=%s attempt=%u "
	    "duration_ms=%llu exit_code=%d reason=\"%s\"",
	    relay_app_name(inv->app), inv->handler,
	    m->id, inv->attempt, (unsigned long long)(dur_us / 1000),
	    o->exit_code, o->reason);
	inv_failed(inv, o->reason);
}

static void inv_run(relay__cinv *inv)
{
	relay__msg *m = inv->m;
	relay_consumer *c = m->c;
	relay_exec_spec s = RELAY_EXEC_SPEC_INIT;
	relay__tspec ts;
	int rc;

	relay__cinv_to(inv, RELAY__CINV_RUN);
	/* A schedule occurrence's handler reads the occurrence payload. */
	if (m->run_event)
		relay__consumer_exec_spec_h(&s, inv->app, inv->handler,
					    inv->timeout_ms, m->id,
					    m->run_event, m->run_event_len);
	else
		relay__consumer_exec_spec_h(&s, inv->app, inv->handler,
					    inv->timeout_ms, m->id, m->event,
					    m->event_len);
	inv->started_us = relay_clock_mono_us(c->clock);
	inv->started_wall_ms = relay_clock_wall_ms(c->clock);
	inv->tl[0] = '\0';
	relay__ctrace_start(inv, &s, &ts);
	inv->traced = inv->tr.set;
	if (inv->attempt > 1)
		relay__count(c, retries);
	relay__count(c, in_flight_invocations);
	relay__tail_reset(&inv->tail);
	rc = c->exec->run(c->exec, &s, output_cb, run_done, inv, &inv->run);
	if (rc && c->exec == &c->rt_exec.parent &&
	    c->rt_exec.last.code == RELAY_EAGAIN) {
		char why[sizeof(inv->reason)];

		relay__count_add(c, in_flight_invocations, -1);
		snprintf(why, sizeof(why), "start refused: %s",
			 c->rt_exec.last.text);
		relay__ctrace_end(inv, NULL, why,
				  relay_clock_mono_us(c->clock));
		inv_refused(inv, why);
		return;
	}
	if (rc) {
		char why[sizeof(inv->reason)];

		relay__count_add(c, in_flight_invocations, -1);
		relay__consumer_outcome(c, relay_app_name(inv->app),
					inv->handler, RELAY__OUT_FAILED);
		relay__slots_release(c, inv);
		start_failure(c, rc, why, sizeof(why));
		tl_note(inv, NULL, why, 0);
		relay__ctrace_end(inv, NULL, why,
				  relay_clock_mono_us(c->clock));
		LOG(c, RELAY_LOG_WARN, "RELAY-ENG04",
		    "handler failed app=%s handler=%s message_id=%s "
		    "attempt=%u reason=\"%s\"", relay_app_name(inv->app),
		    inv->handler, m->id, inv->attempt,
		    why);
		inv_failed(inv, why);
	}
}

static void claim_cb(int status, const relay_inv_outcome *o, void *payload)
{
	relay__cinv *inv = payload;
	relay_consumer *c = inv->m->c;

	if (status) {
		/* A TryStart error fails closed: never run a duplicate. */
		step_failed(inv, status, "try_start");
		inv_resolved(inv, RELAY__CINV_PENDING);
		return;
	}
	relay__consumer_redis_ok(c);
	switch (o->result) {
	case RELAY_INV_R_CLAIMED:
		inv->attempt = o->attempt;
		inv->deadline_ms = o->deadline_ms;
		memcpy(inv->token, o->token, sizeof(inv->token));
		if (c->stopping && !c->graceful) {
			/* Stop at once: the claim expires at its deadline
			 * and the PEL keeps the message. */
			inv_resolved(inv, RELAY__CINV_PENDING);
			return;
		}
		inv_run(inv);
		return;
	case RELAY_INV_R_OK:
		inv_resolved(inv, RELAY__CINV_OK);
		return;
	case RELAY_INV_R_EXHAUSTED:
		inv->attempt = o->attempt;
		memcpy(inv->token, o->token, sizeof(inv->token));
		snprintf(inv->reason, sizeof(inv->reason),
			 "last failure not known to this delivery");
		inv_resolved(inv, o->dlq ? RELAY__CINV_DLQ :
			     RELAY__CINV_EXHAUSTED);
		return;
	default:  /* running, backing off, retained */
		inv_resolved(inv, RELAY__CINV_PENDING);
		return;
	}
}

/* Leave every invocation of @inv's message not begun yet pending. */
static void rest_pending(relay__cinv *inv)
{
	relay__msg *m = inv->m;
	size_t i;

	for (i = 0; i < m->ninv; i++)
		if (&m->invs[i] != inv &&
		    m->invs[i].state == RELAY__CINV_TODO)
			relay__cinv_to(&m->invs[i], RELAY__CINV_PENDING);
}

/*
 * The reply of CLAIM_START: the classification's part first (as its own
 * reply would have come first on the connection), then try_start's. An
 * error fails both: logged once, the message finishes uncounted (stays
 * pending) and nothing runs.
 */
static void claim_start_cb(int status, const relay_inv_outcome *cls,
			   const relay_inv_outcome *start, void *payload)
{
	relay__cinv *inv = payload;

	inv->up->classified(inv->m, status, cls);
	if (status) {
		rest_pending(inv);
		inv_resolved(inv, RELAY__CINV_PENDING);
		return;
	}
	claim_cb(0, start, inv);
}

/*
 * The fused claim could not be sent: nothing was recorded. As after an
 * error reply, no other invocation of the message starts (its
 * classification is not recorded): every one not begun is left pending
 * with this one, and the message finishes uncounted (stays pending).
 */
static void claim_start_failed(relay__cinv *inv, int rc)
{
	relay__msg *m = inv->m;

	inv->up->classified(m, rc, NULL);
	rest_pending(inv);
	inv_resolved(inv, RELAY__CINV_PENDING);
}

static void inv_claim(relay__cinv *inv)
{
	relay__msg *m = inv->m;
	relay_consumer *c = m->c;
	int rc;

	if (m->body == RELAY__BODY_GONE) {
		/* The body left while this waited for a slot. */
		inv_resolved(inv, RELAY__CINV_PENDING);
		return;
	}
	if (m->class_with_claim) {
		/* The message's first claim: one script records the
		 * classification and claims (CLAIM_START). */
		rc = relay__inv_claim_start(c->redis, m->key, inv->field,
					    relay_clock_wall_ms(c->clock),
					    inv->timeout_ms, claim_start_cb,
					    inv);
		if (rc)
			claim_start_failed(inv, rc);
		return;
	}
	rc = relay_inv_try_start(c->redis, m->key, inv->field,
				 relay_clock_wall_ms(c->clock),
				 inv->timeout_ms,
				 claim_cb, inv);
	if (rc) {
		step_failed(inv, rc, "try_start");
		inv_resolved(inv, RELAY__CINV_PENDING);
	}
}

/* ---- stop -------------------------------------------------------------- */

/*
 * Stop: invocations waiting for a slot give up (no attempt charged),
 * and so do completions waiting to be resent; running ones are
 * cancelled unless @graceful. Every message then ends
 * through its normal path and is released or acknowledged.
 */
void relay__msg_stop(relay_consumer *c, int graceful)
{
	relay__msg *m;
	relay__slot_wait *w;

	/* Only this consumer's waiters; rescan after each: resolving one
	 * may end messages and so change the queue. */
again:
	for (w = relay__slots_wait_head(c->slots); w; w = w->next) {
		relay__cinv *inv = waiter_inv(w);

		if (inv->m->c != c)
			continue;
		relay__slots_wait_remove(c->slots, w);
		ev_timer_stop(c->loop, &inv->m->slot_timer);
		inv_resolved(inv, RELAY__CINV_PENDING);
		goto again;
	}
	/* Completions waiting to be resent give up (they stay pending). */
again_rec:
	for (m = c->msgs; m; m = m->next) {
		if (m->cur >= m->ninv ||
		    m->invs[m->cur].state != RELAY__CINV_RECORD_WAIT)
			continue;
		rec_fire(c->loop, &m->rec_timer, 0);
		goto again_rec;
	}
	relay__tail_stop(c);
	if (graceful || !c->exec->cancel)
		return;
	for (m = c->msgs; m; m = m->next)
		if (m->cur < m->ninv && m->invs[m->cur].run)
			c->exec->cancel(c->exec, m->invs[m->cur].run);
}
