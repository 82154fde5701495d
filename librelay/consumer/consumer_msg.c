/*
 * consumer_msg.c - the life of one stream message in the engine.
 *
 * A message is delivered (XREADGROUP or XAUTOCLAIM), classified before
 * anything runs, and then walked through a chain of asynchronous steps,
 * each one Redis round trip or one handler run:
 *
 *	deliver ─ classify ─ claim_classification ─┬─ placeholder path
 *	                                            ├─ unmatched: ack
 *	                                            └─ invocations, one at a
 *	   time in dispatch order: slots → try_start → run → complete |
 *	   record_failure | mark_exhausted; the last one's success, all
 *	   others ok: complete_ack (complete + XACK + retain, one script)
 *	finish ─ all terminal? ─ no: release (stays pending in the PEL)
 *	                       └ yes: DLQ entries → XACK → retain → free
 *
 * Every step that cannot prove progress leaves the message pending: a
 * Redis error, an invocation backing off or running elsewhere, an
 * unavailable app, a slot wait that timed out, a stop. "Release" only
 * drops the in-memory copy; the PEL keeps the message and a later
 * XAUTOCLAIM delivers it again, where the per-invocation state decides
 * what runs. Nothing is acknowledged unless every matched invocation was
 * seen terminal in Redis during this delivery.
 *
 * The life of one message (relay__msg_state, consumer_msg.h):
 *
 *	new ─┬─ nothing to run first ─────────→ claim
 *	     ├─ matched: the classification ──→ claim_run ─ invocations
 *	     │  goes with the first try_start     over → claim_wait (none
 *	     │  (claim_start; older backend:      claimed: nothing sent →
 *	     │  pipelined behind it)              run_uncounted)
 *	     └─ pending entry without a body ──→ clear
 *	claim ─ reply ─┬─ invocations (matched, occurrence) → run
 *	               ├─ malformed → dlq;  unmatched, obsolete, stale → ack
 *	               └─ error, occurrence on hold → end (stays pending)
 *	claim_run / claim_wait ─ reply ─┬─ counted → run
 *	                                └─ error, stale → run_uncounted
 *	run ─ invocations over ─┬─ all terminal → dlq (exhausted ones) → ack
 *	                        ├─ the last one succeeded, all ok → end
 *	                        │  (complete_ack: one script)
 *	                        ├─ body gone → clear
 *	                        └─ one not terminal → end (stays pending)
 *	run_uncounted ─ invocations over → end (stays pending) | clear
 *	dlq ─ written → ack;  failed or not ours → end (stays pending)
 *	ack, clear ─ reply → end (retain is sent on the way out)
 *
 * What classification decided is the message's route (event, malformed,
 * occurrence: relay__msg_route); what the renewal learnt of its stream
 * entry is its body (relay__msg_body: gone is consulted at the next
 * step). Neither is a state. The table below is the only list of legal
 * moves; relay__msg_to() is the only writer of m->state.
 *
 * The invocations (consumer_inv.c) report back through relay__msg_up
 * (classified, done), never by name; the fused tail, once sent, is
 * consumer_tail.c's.
 *
 * Reentrancy: every Redis reply and executor completion arrives later,
 * from the loop (relay/redis.h, relay_consumer_executor), so a step never
 * runs inside the call that started it.
 */
#include <assert.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "consumer.h"
#include "consumer_health.h"
#include "consumer_inv.h"
#include "consumer_msg.h"
#include "consumer_read.h"
#include "consumer_sched.h"
#include "consumer_stuck.h"
#include "consumer_tail.h"
#include "inv/inv.h"
#include "invops/invops.h"
#include "sched.h"

#define LOG(c, lvl, id, ...) relay__log(&(c)->logger, lvl, id, __VA_ARGS__)

/* ---- the state machine ------------------------------------------------- */

#define S_(x) (1u << RELAY__MSG_##x)
static const unsigned int msg_next_states[RELAY__MSG_STATE_COUNT_] = {
	[RELAY__MSG_NEW] = S_(CLAIM) | S_(CLAIM_RUN) | S_(CLEAR) | S_(END),
	[RELAY__MSG_CLAIM] = S_(RUN) | S_(DLQ) | S_(ACK) | S_(END),
	[RELAY__MSG_CLAIM_RUN] = S_(CLAIM_WAIT) | S_(RUN) |
				 S_(RUN_UNCOUNTED),
	[RELAY__MSG_CLAIM_WAIT] = S_(RUN) | S_(RUN_UNCOUNTED),
	[RELAY__MSG_RUN] = S_(DLQ) | S_(CLEAR) | S_(END),
	[RELAY__MSG_RUN_UNCOUNTED] = S_(CLEAR) | S_(END),
	[RELAY__MSG_DLQ] = S_(ACK) | S_(END),
	[RELAY__MSG_ACK] = S_(END),
	[RELAY__MSG_CLEAR] = S_(END),
	[RELAY__MSG_END] = 0,
};
#undef S_

static const char *const msg_state_names[RELAY__MSG_STATE_COUNT_] = {
	[RELAY__MSG_NEW] = "new",
	[RELAY__MSG_CLAIM] = "claim",
	[RELAY__MSG_CLAIM_RUN] = "claim_run",
	[RELAY__MSG_CLAIM_WAIT] = "claim_wait",
	[RELAY__MSG_RUN] = "run",
	[RELAY__MSG_RUN_UNCOUNTED] = "run_uncounted",
	[RELAY__MSG_DLQ] = "dlq",
	[RELAY__MSG_ACK] = "ack",
	[RELAY__MSG_CLEAR] = "clear",
	[RELAY__MSG_END] = "end",
};

int relay__msg_state_allowed(relay__msg_state from, relay__msg_state to)
{
	return relay__fsm_allowed(msg_next_states, RELAY__MSG_STATE_COUNT_,
				  from, to);
}

const char *relay__msg_state_name(relay__msg_state s)
{
	return relay__fsm_name(msg_state_names, RELAY__MSG_STATE_COUNT_, s);
}

void relay__msg_to(relay__msg *m, relay__msg_state to)
{
	assert(relay__msg_state_allowed(m->state, to));
	m->state = to;
}

void relay__msg_route_to(relay__msg *m, relay__msg_route route)
{
	m->route = route;
}

void relay__msg_body_to(relay__msg *m, relay__msg_body body)
{
	m->body = body;
}

int relay__msg_invs_new(relay__msg *m, size_t n)
{
	m->invs = relay__calloc(n, sizeof(*m->invs));
	if (!m->invs)
		return RELAY_ENOMEM;
	m->ninv = n;
	return 0;
}

static int is_malformed(const relay__msg *m)
{
	return m->route == RELAY__ROUTE_MALFORMED ||
	       m->route == RELAY__ROUTE_OCC_MALFORMED;
}

static int is_occurrence(const relay__msg *m)
{
	return m->route >= RELAY__ROUTE_OCC;
}

static int is_gone(const relay__msg *m)
{
	return m->body == RELAY__BODY_GONE;
}

static void msg_finish(relay__msg *m);
static void dlq_next(relay__msg *m);
static void missing_finish(relay__msg *m);

/* ---- allocation -------------------------------------------------------- */

relay__msg *relay__msg_find(relay_consumer *c, const char *id)
{
	relay__msg *m;

	for (m = c->msgs; m; m = m->next)
		if (strcmp(m->id, id) == 0)
			return m;
	return NULL;
}

static relay__msg *msg_new(relay_consumer *c, const char *id)
{
	relay__msg *m = relay__calloc(1, sizeof(*m));

	if (!m)
		return NULL;
	m->c = c;
	m->id = relay__strdup(id);
	m->key = relay_inv_key(c->stream, c->group, id);
	if (!m->id || !m->key) {
		relay__free(m->id);
		relay__free(m->key);
		relay__free(m);
		return NULL;
	}
	ev_init(&m->slot_timer, NULL);
	m->next = c->msgs;
	if (c->msgs)
		c->msgs->prev = m;
	c->msgs = m;
	c->nmsgs++;
	return m;
}

/*
 * Drop the in-memory message. Whether it was acknowledged or is left
 * pending was decided by the caller; both end here.
 */
static void msg_free(relay__msg *m)
{
	relay_consumer *c = m->c;
	size_t i;

	relay__msg_to(m, RELAY__MSG_END);
	ev_timer_stop(c->loop, &m->slot_timer); /* also clears pending */
	ev_timer_stop(c->loop, &m->rec_timer);
	if (!m->step_failed)
		relay__stuck_clear(c, m->id);  /* every step passed */
	if (m->prev)
		m->prev->next = m->next;
	else
		c->msgs = m->next;
	if (m->next)
		m->next->prev = m->prev;
	c->nmsgs--;
	for (i = 0; i < m->ninv; i++)
		relay__cinv_free(&m->invs[i]);
	relay__free(m->invs);
	relay__ctrace_msg_free(m);
	relay__free(m->id);
	relay__free(m->key);
	relay__free(m->event);
	relay__free(m->pl_reason);
	relay__free(m->pl_event);
	relay__free(m->pl_source);
	relay__csched_free(m);
	relay__free(m);
	relay__consumer_kick(c);
}

/* Leave the message pending; a later delivery decides again. */
void relay__msg_release(relay__msg *m, const char *why)
{
	LOG(m->c, RELAY_LOG_DEBUG, "RELAY-ENG09",
	    "message kept pending: %s message_id=%s", why, m->id);
	msg_free(m);
}

void relay__msg_step_failed(relay_consumer *c, int status, const char *what,
			    relay__msg *m)
{
	relay__consumer_redis_failed(c, status, what);
	if (relay__stuck_step_note(c, status, what, m->id))
		m->step_failed = 1;
}

/* The invocation being worked on is resolved: the message goes on
 * with the next one, or, when it sent the fused tail, leaves memory
 * (relay__cinv_up.done). */
static void inv_done(relay__msg *m, relay__cinv *inv)
{
	if (inv->step_failed)
		m->step_failed = 1;
	if (inv->fused) {
		msg_free(m);
		return;
	}
	m->cur++;
	relay__msg_next(m);
}

const relay__cinv_up relay__msg_up = {
	.classified = relay__msg_classified,
	.done = inv_done,
};

/* ---- the message ------------------------------------------------------- */

void relay__msg_run(relay__msg *m)
{
	relay__msg_to(m, RELAY__MSG_RUN);
	relay__msg_next(m);
}

void relay__msg_next(relay__msg *m)
{
	if (is_gone(m)) {
		/* No further attempts for a message whose body is gone. */
		msg_finish(m);
		return;
	}
	while (m->cur < m->ninv && m->invs[m->cur].state != RELAY__CINV_TODO)
		m->cur++;
	if (m->cur < m->ninv)
		relay__cinv_begin(&m->invs[m->cur]);
	else
		msg_finish(m);
}

static void msg_finish(relay__msg *m)
{
	size_t i;

	if (m->class_with_claim) {
		/* No invocation claimed, so the classification (carried by
		 * the first try_start) was never sent: nothing recorded. */
		m->class_with_claim = 0;
		relay__msg_to(m, RELAY__MSG_RUN_UNCOUNTED);
	}
	if (m->state == RELAY__MSG_CLAIM_RUN) {
		/* The classification reply is still due: finish then. */
		relay__msg_to(m, RELAY__MSG_CLAIM_WAIT);
		return;
	}
	if (is_gone(m)) {
		missing_finish(m);
		return;
	}
	if (m->state == RELAY__MSG_RUN_UNCOUNTED) {
		relay__msg_release(m, "classification not recorded");
		return;
	}

	for (i = 0; i < m->ninv; i++)
		if (m->invs[i].state != RELAY__CINV_OK &&
		    m->invs[i].state != RELAY__CINV_EXHAUSTED &&
		    m->invs[i].state != RELAY__CINV_DLQ) {
			relay__msg_release(m, "an invocation is not terminal");
			return;
		}
	relay__msg_to(m, RELAY__MSG_DLQ);
	m->dlq_cur = 0;
	dlq_next(m);
}

/*
 * Retention is bookkeeping after the message left the PEL, so the
 * message's buffer slot is given back at once; the retain reply is still
 * counted as an outstanding operation (stop waits for it).
 */
static void retain_cb(int status, const relay_inv_outcome *o, void *payload)
{
	relay_consumer *c = payload;

	(void)o;
	relay__consumer_op(c, -1);
	if (status) {
		relay__consumer_redis_failed(c, status, "retain");
		relay__log(&c->logger, RELAY_LOG_WARN, "RELAY-ENG09",
			   "retain: %s (the state hash is left without TTL)",
			   relay_strerror(status));
	}
	relay__consumer_check_stopped(c);
}

static void msg_retain_free(relay__msg *m)
{
	relay_consumer *c = m->c;

	relay__consumer_op(c, 1);
	if (relay_inv_retain(c->redis, m->key, c->retention_ms, retain_cb, c))
		relay__consumer_op(c, -1);
	msg_free(m);
}

static void ack_cb(relay_redis_backend *b, int status, long long value,
		   void *payload)
{
	relay__msg *m = payload;
	relay_consumer *c = m->c;

	(void)b;
	(void)value;
	if (status) {
		relay__msg_step_failed(c, status, "XACK", m);
		msg_free(m);
		return;
	}
	relay__consumer_redis_ok(c);
	relay__count(c, acks);
	/* Retention only after the message has left the PEL. */
	msg_retain_free(m);
}

void relay__msg_ack(relay__msg *m)
{
	const char *ids[1];
	int rc;

	relay__msg_to(m, RELAY__MSG_ACK);
	ids[0] = m->id;
	rc = relay_redis_xack(m->c->redis, m->c->stream, m->c->group, ids, 1,
			      ack_cb, m);
	if (rc) {
		relay__msg_step_failed(m->c, rc, "XACK", m);
		msg_free(m);
	}
}

static void fill_entry(relay__msg *m, relay_dlq_entry *e, char *ts,
		       size_t tslen)
{
	relay_consumer *c = m->c;

	memset(e, 0, sizeof(*e));
	e->original_stream = c->stream;
	e->original_id = m->id;
	e->group = c->group;
	e->consumer = c->name;
	e->deliveries = m->deliveries > 0 ? m->deliveries : 1;
	e->timestamp = relay_dlq_timestamp(relay_clock_wall_ms(c->clock), ts,
					   tslen);
}

static void persist_cb(int status, relay_dlq_persist_result result,
		       const char *id, void *payload)
{
	relay__msg *m = payload;
	relay_consumer *c = m->c;

	(void)id;
	if (status) {
		/* The entry is not written: stay pending, re-route later. */
		relay__msg_step_failed(c, status, "DLQ write", m);
		msg_free(m);
		return;
	}
	relay__consumer_redis_ok(c);
	if (result == RELAY_DLQ_WRITTEN)
		relay__count(c, dlq_entries);
	if (result != RELAY_DLQ_WRITTEN && result != RELAY_DLQ_ALREADY) {
		relay__msg_release(m, "DLQ marker is not this delivery's");
		return;
	}
	if (is_malformed(m)) {
		relay__msg_ack(m);
		return;
	}
	relay__cinv_to(&m->invs[m->dlq_cur], RELAY__CINV_DLQ);
	m->dlq_cur++;
	dlq_next(m);
}

static void persist_placeholder(relay__msg *m)
{
	relay_dlq_entry e;
	char ts[40], *trace;
	int rc;

	fill_entry(m, &e, ts, sizeof(ts));
	e.event = m->pl_event;
	e.reason = m->pl_reason;
	e.app = "-";
	e.handler = "-";
	e.handler_attempts = 0;
	e.source_fields = m->pl_source;
	e.trace = trace = relay__ctrace_dlq(m, NULL);
	rc = relay__dlq_persist_raw(m->c->redis, m->key, m->c->dlq_key, NULL,
				    0, NULL, &e, m->pl_event_len, persist_cb,
				    m);
	relay__free(trace);
	if (rc) {
		relay__msg_step_failed(m->c, rc, "DLQ write", m);
		msg_free(m);
	}
}

static void persist_exhausted(relay__msg *m, relay__cinv *inv)
{
	relay_consumer *c = m->c;
	const char *handler = inv->handler;
	relay_dlq_entry e;
	char ts[40], *reason, *tail, *trace;
	int rc;

	reason = relay_dlq_reason_exhausted(relay_app_name(inv->app), handler,
					    inv->attempt, inv->reason);
	if (!reason) {
		relay__msg_release(m, "out of memory");
		return;
	}
	fill_entry(m, &e, ts, sizeof(ts));
	e.event = m->event ? m->event : "-";
	e.reason = reason;
	e.app = relay_app_name(inv->app);
	e.handler = handler;
	e.handler_attempts = inv->attempt;
	/* NULL when the handler wrote nothing to stderr, or when this
	 * delivery did not run the last attempt. */
	tail = relay__tail_text(&inv->tail);
	e.stderr_tail = tail;
	e.trace = trace = relay__ctrace_dlq(m, inv);
	LOG(c, RELAY_LOG_WARN, "RELAY-ENG05",
	    "invocation exhausted, dead-lettering app=%s handler=%s "
	    "message_id=%s attempt=%u", e.app, handler, m->id, inv->attempt);
	rc = relay_dlq_persist(c->redis, m->key, c->dlq_key, inv->field,
			       inv->attempt, inv->token, &e, persist_cb, m);
	relay__free(reason);
	relay__free(tail);
	relay__free(trace);
	if (rc) {
		relay__msg_step_failed(c, rc, "DLQ write", m);
		msg_free(m);
	}
}

static void deliveries_cb(relay_redis_backend *b, int status,
			  relay_pending *p, size_t n, void *payload)
{
	relay__msg *m = payload;

	(void)b;
	if (status) {
		relay__msg_step_failed(m->c, status, "XPENDING", m);
		msg_free(m);
		return;
	}
	m->deliveries = n > 0 && p[0].deliveries > 0 ? p[0].deliveries : 1;
	relay_pending_free(p, n);
	if (is_malformed(m))
		persist_placeholder(m);
	else
		dlq_next(m);
}

/* The diagnostic delivery count, read once before the first DLQ write. */
static int fetch_deliveries(relay__msg *m)
{
	relay_consumer *c = m->c;
	int rc;

	rc = relay_redis_xpending(c->redis, c->stream, c->group, 0, m->id,
				  m->id, 1, NULL, deliveries_cb, m);
	if (rc) {
		relay__msg_step_failed(c, rc, "XPENDING", m);
		msg_free(m);
	}
	return rc;
}

static void dlq_next(relay__msg *m)
{
	while (m->dlq_cur < m->ninv &&
	       m->invs[m->dlq_cur].state != RELAY__CINV_EXHAUSTED)
		m->dlq_cur++;
	if (m->dlq_cur >= m->ninv) {
		relay__msg_ack(m);
		return;
	}
	if (!m->deliveries) {
		fetch_deliveries(m);
		return;
	}
	persist_exhausted(m, &m->invs[m->dlq_cur]);
}

/* ---- classification ---------------------------------------------------- */

static void classified_cb(int status, const relay_inv_outcome *o,
			  void *payload)
{
	relay__msg_classified(payload, status, o);
}

void relay__msg_classified(relay__msg *m, int status,
			   const relay_inv_outcome *o)
{
	relay_consumer *c = m->c;
	int pipelined = m->state != RELAY__MSG_CLAIM;
	int deferred = m->state == RELAY__MSG_CLAIM_WAIT;
	int first;

	/* Carried by the first claim (CLAIM_START), whatever came of it:
	 * nothing between that claim and this reply reads the flag (the
	 * invocation that sent it is in flight). */
	m->class_with_claim = 0;

	if (status) {
		relay__msg_step_failed(c, status, "claim_classification", m);
		if (!pipelined) {
			msg_free(m);
			return;
		}
		relay__msg_to(m, RELAY__MSG_RUN_UNCOUNTED);
		if (deferred)
			msg_finish(m);
		return;
	}
	relay__consumer_redis_ok(c);
	first = o->result == RELAY_INV_R_CLAIMED;
	if (first)
		relay__ctrace_classified(m);
	if (pipelined)  /* stale: never acknowledge from here */
		relay__msg_to(m, o->result == RELAY_INV_R_RETAINED ?
			      RELAY__MSG_RUN_UNCOUNTED : RELAY__MSG_RUN);
	if (o->result == RELAY_INV_R_RETAINED && !pipelined) {
		/* Already acknowledged and retained: a stale delivery. */
		relay__msg_ack(m);
		return;
	}
	if (is_malformed(m)) {
		if (first) {
			if (is_occurrence(m)) {
				relay__count(c, events_schedule);
				relay__count(c, schedule_malformed);
			} else {
				relay__count(c, events_malformed);
				if (m->pl_kind == RELAY_DLQ_OVERSIZED)
					relay__count(c, events_oversized);
			}
			LOG(c, RELAY_LOG_WARN, is_occurrence(m) ?
			    "RELAY-ENG13" : "RELAY-ENG06",
			    "dead-lettering message_id=%s: %s", m->id,
			    m->pl_reason);
		}
		relay__msg_to(m, RELAY__MSG_DLQ);
		fetch_deliveries(m);
		return;
	}
	if (is_occurrence(m)) {
		/* Bypasses the classification counters and matching. */
		relay__csched_classified(m, first);
		return;
	}
	if (first) {
		relay__count(c, events_received);
		if (m->ninv)
			relay__count(c, events_matched);
		else
			relay__count(c, events_unmatched);
	}
	if (!m->ninv) {
		relay__msg_ack(m);
		return;
	}
	if (!pipelined)
		relay__msg_run(m);
	else if (deferred)
		msg_finish(m);
}

static int set_placeholder(relay__msg *m, relay_dlq_malformed kind,
			   const char *detail, const char *ev, size_t len)
{
	relay_consumer *c = m->c;

	m->pl_kind = kind;
	m->route = is_occurrence(m) ? RELAY__ROUTE_OCC_MALFORMED :
				      RELAY__ROUTE_MALFORMED;
	if (is_occurrence(m) && detail)
		m->pl_reason = relay__sprintf("malformed schedule occurrence: "
					      "%s", detail);
	else
		m->pl_reason = relay_dlq_reason_malformed(kind, detail, len,
							  c->max_event_bytes);
	if (kind == RELAY_DLQ_OVERSIZED)
		m->pl_event = relay_dlq_oversized_summary(len,
							  c->max_event_bytes);
	else if (kind == RELAY_DLQ_MISSING_EVENT)
		m->pl_event = relay__strdup("-");
	else if ((m->pl_event = relay__malloc(len + 1)) != NULL) {
		/* Verbatim, NUL bytes included; may be empty. */
		memcpy(m->pl_event, ev ? ev : "", len);
		m->pl_event[len] = '\0';
		m->pl_event_len = len;
		return m->pl_reason ? 0 : RELAY_ENOMEM;
	}
	if (m->pl_event)
		m->pl_event_len = strlen(m->pl_event);
	return m->pl_reason && m->pl_event ? 0 : RELAY_ENOMEM;
}

int relay__msg_placeholder(relay__msg *m, relay_dlq_malformed kind,
			   const char *detail, const char *ev, size_t len)
{
	return set_placeholder(m, kind, detail, ev, len);
}

static int match(relay__msg *m)
{
	relay_consumer *c = m->c;
	relay_app_match *mt = NULL;
	size_t n = 0, i;
	int rc;

	rc = relay_appset_match(c->apps, c->matcher, m->event, m->event_len,
				relay_clock_wall_ms(c->clock), &mt, &n);
	if (rc == RELAY_EPARSE)
		return set_placeholder(m, RELAY_DLQ_DECODE,
				       relay_matcher_errstr(c->matcher),
				       m->event, m->event_len);
	if (rc == RELAY_ETYPE)
		return set_placeholder(m, RELAY_DLQ_NOT_OBJECT, NULL,
				       m->event, m->event_len);
	if (rc)
		return rc;
	if (n && relay__msg_invs_new(m, n)) {
		relay__free(mt);
		return RELAY_ENOMEM;
	}
	for (i = 0; i < n; i++) {
		relay__cinv *inv = &m->invs[i];

		relay__cinv_init(inv, m, mt[i].app, &relay__msg_up);
		if (relay__cinv_set_handler(inv,
				relay_app_rule_handler(mt[i].rule),
				relay_app_rule_timeout_ms(mt[i].rule),
				relay_app_rule_retries(mt[i].rule))) {
			relay__free(mt);
			return RELAY_ENOMEM;
		}
	}
	relay__free(mt);
	return 0;
}

/*
 * Classify before anything runs: missing, oversized (by raw size, before
 * any decoding), binary (a NUL byte: not a string), schedule envelope,
 * then invalid JSON / not an object from the matcher's own validation.
 */
static int classify(relay__msg *m, const relay_stream_entry *e)
{
	relay_consumer *c = m->c;
	const char *ev;
	size_t len = 0;

	relay__ctrace_entry(m, e);
	ev = relay_stream_entry_get(e, "event", &len);
	if (!ev) {
		/* What the entry held instead, bounded and escaped: the
		 * record keeps the field names (R-5 source_fields). */
		if (e->nfields) {
			m->pl_source = relay__dlq_source_fields(e->names,
						e->values, e->value_lens,
						e->nfields);
			if (!m->pl_source)
				return RELAY_ENOMEM;
		}
		return set_placeholder(m, RELAY_DLQ_MISSING_EVENT, NULL, NULL,
				       0);
	}
	if (len > c->max_event_bytes)
		return set_placeholder(m, RELAY_DLQ_OVERSIZED, NULL, NULL, len);
	if (memchr(ev, '\0', len))
		return set_placeholder(m, RELAY_DLQ_NOT_STRING, NULL, ev, len);
	m->event = relay__strndup(ev, len);
	if (!m->event)
		return RELAY_ENOMEM;
	m->event_len = len;
	if (relay__sched_is_envelope(ev, len)) {
		m->route = RELAY__ROUTE_OCC;
		return relay__csched_classify(m);
	}
	return match(m);
}

void relay__msg_deliver(relay_consumer *c, const relay_stream_entry *e)
{
	relay__msg *m;
	int rc;

	if (relay__msg_find(c, e->id))
		return;  /* already being worked on here */
	if (relay__stuck_wait(c, e->id))
		return;  /* its failing step backs off: stays pending */
	m = msg_new(c, e->id);
	if (!m)
		return;  /* stays pending; reclaimed later */
	rc = classify(m, e);
	if (!rc && is_occurrence(m) && !is_malformed(m))
		rc = relay__csched_claim(m);
	else if (!rc && m->route == RELAY__ROUTE_EVENT && m->ninv &&
		 c->redis->version >= 4)
		m->class_with_claim = 1;  /* sent with the first try_start */
	else if (!rc)
		rc = relay_inv_claim_classification(c->redis, m->key,
						    classified_cb, m);
	if (rc) {
		relay__msg_step_failed(c, rc, "classify", m);
		msg_free(m);
		return;
	}
	/*
	 * Pipeline the first invocation's try_start behind the
	 * classification: the replies arrive in order on the connection, so
	 * the classification is recorded before any handler can start, and
	 * a round trip per message is saved. With a version 4 backend the
	 * classification is not sent apart at all: the first try_start of
	 * the message (at once, or when a slot frees) carries it, one
	 * script (CLAIM_START, class_with_claim); if no invocation claims,
	 * nothing is recorded and the message stays pending. If the send
	 * fails the message is gone when relay__msg_next() returns. The
	 * chain's end waits for the classification reply (msg_finish:
	 * claim_wait).
	 */
	if (m->route == RELAY__ROUTE_EVENT && m->ninv) {
		relay__msg_to(m, RELAY__MSG_CLAIM_RUN);
		relay__msg_next(m);
	} else {
		relay__msg_to(m, RELAY__MSG_CLAIM);
	}
}

/* ---- missing payload --------------------------------------------------- */

static void missing_ack_cb(relay_redis_backend *b, int status,
			   long long value, void *payload)
{
	relay__msg *m = payload;

	(void)b;
	(void)value;
	if (status) {
		relay__msg_step_failed(m->c, status, "XACK", m);
		msg_free(m);
		return;
	}
	msg_retain_free(m);
}

/* Clear the dangling PEL reference (if any is left), then retain. */
static void missing_finish(relay__msg *m)
{
	relay_consumer *c = m->c;
	const char *ids[1];

	relay__msg_to(m, RELAY__MSG_CLEAR);
	LOG(c, RELAY_LOG_DEBUG, "RELAY-ENG07",
	    "stream body gone: reference cleared, state retained "
	    "message_id=%s", m->id);
	ids[0] = m->id;
	if (relay_redis_xack(c->redis, c->stream, c->group, ids, 1,
			     missing_ack_cb, m))
		msg_free(m);
}

/*
 * A body that is gone is only data loss when the message was not done.
 * relayd's own stream retention trims an entry once every group has
 * acknowledged it, so a replica that was paused while another replica
 * acknowledged its message finds the body gone too; the state hash says
 * which case it is: `__terminal` is set only after the XACK. The
 * check is sent before this consumer's own XACK and retain of the
 * message (replies arrive in order), so it never sees our own marker.
 */
typedef struct gone_check {
	relay_consumer *c;
	char *id;
	int finish;    /* no message in memory: clear the reference after */
} gone_check;

static void gone_count(relay_consumer *c, const char *id, int acked,
		       int running)
{
	if (acked) {
		LOG(c, RELAY_LOG_INFO, "RELAY-ENG15",
		    "stream entry gone after its message was acknowledged "
		    "(retention); not a missing payload message_id=%s", id);
		return;
	}
	relay__count(c, missing_payload);
	if (running)
		LOG(c, RELAY_LOG_WARN, "RELAY-ENG07",
		    "stream entry deleted while its message was worked on "
		    "(deleted or trimmed); no further attempts "
		    "message_id=%s", id);
	else
		LOG(c, RELAY_LOG_WARN, "RELAY-ENG07",
		    "pending entry has no stream body (deleted or trimmed) "
		    "message_id=%s", id);
}

static void missing_start(relay_consumer *c, const char *id)
{
	relay__msg *m = msg_new(c, id);

	if (!m)
		return;
	m->body = RELAY__BODY_GONE;
	missing_finish(m);
}

static void gone_cb(relay_redis_backend *b, int status,
		    relay_redis_reply *r, void *payload)
{
	gone_check *g = payload;
	relay_consumer *c = g->c;
	int acked = 0;

	(void)b;
	relay__consumer_op(c, -1);
	if (status == 0)
		status = relay_redis_reply_error(r);
	if (status)
		/* Unknown: say loss, the conservative reading. */
		relay__consumer_redis_failed(c, status, "HGET");
	else
		acked = r && r->type == RELAY_REDIS_REPLY_STRING &&
			r->len == 1 && r->str[0] == '1';
	gone_count(c, g->id, acked, !g->finish);
	if (g->finish && !relay__msg_find(c, g->id))
		missing_start(c, g->id);
	relay_redis_reply_free(r);
	relay__free(g->id);
	relay__free(g);
	relay__consumer_check_stopped(c);
}

/* Returns 0 when the check was sent (gone_cb decides), else -1. */
static int gone_check_start(relay_consumer *c, const char *id, int finish)
{
	gone_check *g = relay__calloc(1, sizeof(*g));
	char *key = relay_inv_key(c->stream, c->group, id);
	const char *argv[3];
	int rc = -1;

	if (!g || !key)
		goto out;
	g->c = c;
	g->finish = finish;
	g->id = relay__strdup(id);
	if (!g->id)
		goto out;
	argv[0] = "HGET";
	argv[1] = key;
	argv[2] = "__terminal";
	relay__consumer_op(c, 1);
	if (relay_redis_command(c->redis, 3, argv, NULL, gone_cb, g) == 0) {
		g = NULL;
		rc = 0;
	} else {
		relay__consumer_op(c, -1);
	}
out:
	if (g)
		relay__free(g->id);
	relay__free(g);
	relay__free(key);
	return rc;
}

void relay__msg_gone(relay__msg *m)
{
	relay_consumer *c = m->c;

	if (is_gone(m))
		return;
	m->body = RELAY__BODY_GONE;
	if (gone_check_start(c, m->id, 0))
		gone_count(c, m->id, 0, 1);
}

/*
 * A PEL entry whose stream entry is gone is data loss, not success,
 * unless the state hash shows the message was acknowledged (above):
 * count it, clear the dangling reference, retain any state hash. No
 * handler runs and no DLQ entry is fabricated. A message still in
 * memory (its handler running) is counted once and finishes this way
 * when its current step ends.
 */
void relay__msg_missing(relay_consumer *c, const char *id)
{
	relay__msg *m = relay__msg_find(c, id);

	if (m) {
		relay__msg_gone(m);
		return;
	}
	if (gone_check_start(c, id, 1) == 0)
		return;
	gone_count(c, id, 0, 0);
	missing_start(c, id);
}
