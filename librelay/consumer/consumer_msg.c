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
 *	   record_failure | mark_exhausted
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
 * Reentrancy: every Redis reply and executor completion arrives later,
 * from the loop (relay/redis.h, relay_consumer_executor), so a step never
 * runs inside the call that started it.
 */
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "consumer.h"
#include "inv/inv.h"
#include "redis/backend.h"

#define LOG(c, lvl, id, ...) relay__log(&(c)->logger, lvl, id, __VA_ARGS__)

static void msg_next(relay__msg *m);
static void msg_finish(relay__msg *m);
static void msg_ack(relay__msg *m);
static void dlq_next(relay__msg *m);
static void inv_claim(relay__inv *inv);

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
	m->malformed = -1;
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

	ev_timer_stop(c->loop, &m->slot_timer); /* also clears pending */
	if (m->prev)
		m->prev->next = m->next;
	else
		c->msgs = m->next;
	if (m->next)
		m->next->prev = m->prev;
	c->nmsgs--;
	for (i = 0; i < m->ninv; i++) {
		relay_app_free(m->invs[i].app);
		relay__free(m->invs[i].field);
	}
	relay__free(m->invs);
	relay__free(m->id);
	relay__free(m->key);
	relay__free(m->event);
	relay__free(m->pl_reason);
	relay__free(m->pl_event);
	relay__free(m);
	relay__consumer_kick(c);
}

/* Leave the message pending; a later delivery decides again. */
static void msg_release(relay__msg *m, const char *why)
{
	LOG(m->c, RELAY_LOG_DEBUG, "RELAY-ENG09",
	    "message kept pending: %s message_id=%s", why, m->id);
	msg_free(m);
}

/* ---- concurrency slots --------------------------------------------------- */

static relay__app_slots *app_slots(relay_consumer *c, const char *name)
{
	relay__app_slots *s;
	size_t i;

	for (i = 0; i < c->nslots; i++)
		if (strcmp(c->slots[i].name, name) == 0)
			return &c->slots[i];
	s = relay__realloc(c->slots, (c->nslots + 1) * sizeof(*s));
	if (!s)
		return NULL;
	c->slots = s;
	s = &c->slots[c->nslots];
	s->name = relay__strdup(name);
	if (!s->name)
		return NULL;
	s->running = 0;
	c->nslots++;
	return s;
}

static unsigned int app_limit(const relay_consumer *c, const relay_app *app)
{
	int n = relay_app_concurrency(app);
	unsigned int lim = n > 0 ? (unsigned int)n : 1;

	return lim < c->max_concurrency ? lim : c->max_concurrency;
}

/* 1 taken, 0 none free, <0 error. */
static int slots_take(relay_consumer *c, relay__inv *inv)
{
	relay__app_slots *s = app_slots(c, relay_app_name(inv->app));

	if (!s)
		return RELAY_ENOMEM;
	if (c->running >= c->max_concurrency ||
	    s->running >= app_limit(c, inv->app))
		return 0;
	c->running++;
	s->running++;
	inv->has_slots = 1;
	return 1;
}

static void wait_remove(relay_consumer *c, relay__inv *inv)
{
	relay__inv **pp = &c->wait_head;

	c->wait_tail = NULL;
	while (*pp) {
		if (*pp == inv) {
			*pp = inv->wait_next;
			continue;
		}
		c->wait_tail = *pp;
		pp = &(*pp)->wait_next;
	}
	inv->wait_next = NULL;
	inv->waiting = 0;
}

/*
 * Give back an invocation's slots and hand them, in FIFO order, to the
 * waiters that can now run (a waiter of a saturated app does not block
 * the waiters of other apps).
 */
void relay__slots_release(relay_consumer *c, relay__inv *inv)
{
	relay__inv *w, *next;

	if (inv->has_slots) {
		relay__app_slots *s = app_slots(c, relay_app_name(inv->app));

		c->running--;
		if (s && s->running)
			s->running--;
		inv->has_slots = 0;
	}
	for (w = c->wait_head; w; w = next) {
		next = w->wait_next;
		if (slots_take(c, w) != 1)
			continue;
		wait_remove(c, w);
		/* Unconditionally: an expired timer is inactive but may
		 * still be pending, and its callback would release the
		 * message under the claim started below. */
		ev_timer_stop(c->loop, &w->m->slot_timer);
		inv_claim(w);
	}
}

/* ---- one invocation ------------------------------------------------------ */

static void inv_resolved(relay__inv *inv, relay__inv_status st)
{
	relay__msg *m = inv->m;

	relay__slots_release(m->c, inv);
	inv->status = st;
	m->cur++;
	msg_next(m);
}

static void slot_timeout_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	relay__msg *m = w->data;
	relay__inv *inv = &m->invs[m->cur];

	(void)loop;
	(void)revents;
	wait_remove(m->c, inv);
	m->c->m.concurrency_timeouts++;
	LOG(m->c, RELAY_LOG_DEBUG, "RELAY-ENG11",
	    "no concurrency slot freed in time app=%s handler=%s "
	    "message_id=%s", relay_app_name(inv->app),
	    relay_app_rule_handler(inv->rule), m->id);
	inv_resolved(inv, RELAY__INV_UNRESOLVED);
}

static void inv_begin(relay__inv *inv)
{
	relay__msg *m = inv->m;
	relay_consumer *c = m->c;
	int rc;

	if (c->stopping) {
		inv_resolved(inv, RELAY__INV_UNRESOLVED);
		return;
	}
	if (!c->available(inv->app, c->available_payload)) {
		LOG(c, RELAY_LOG_INFO, "RELAY-ENG08",
		    "app unavailable, message kept pending app=%s handler=%s "
		    "message_id=%s", relay_app_name(inv->app),
		    relay_app_rule_handler(inv->rule), m->id);
		inv_resolved(inv, RELAY__INV_UNRESOLVED);
		return;
	}
	rc = slots_take(c, inv);
	if (rc == 1) {
		inv_claim(inv);
		return;
	}
	if (rc < 0) {
		inv_resolved(inv, RELAY__INV_UNRESOLVED);
		return;
	}
	c->m.concurrency_waits++;
	inv->waiting = 1;
	inv->wait_next = NULL;
	if (c->wait_tail)
		c->wait_tail->wait_next = inv;
	else
		c->wait_head = inv;
	c->wait_tail = inv;
	ev_timer_init(&m->slot_timer, slot_timeout_cb,
		      (double)relay__consumer_scaled(c,
			      RELAY_CONSUMER_SLOT_WAIT_MS) / 1000.0, 0.);
	m->slot_timer.data = m;
	ev_timer_start(c->loop, &m->slot_timer);
}

static void redis_step_failed(relay_consumer *c, int status, const char *what,
			      const relay__msg *m)
{
	relay__consumer_redis_failed(c, status, what);
	LOG(c, RELAY_LOG_WARN, "RELAY-ENG09",
	    "%s: %s; message kept pending message_id=%s", what,
	    relay_strerror(status), m->id);
}

static void complete_cb(int status, const relay_inv_outcome *o, void *payload)
{
	relay__inv *inv = payload;
	relay_consumer *c = inv->m->c;

	if (status) {
		redis_step_failed(c, status, "mark_complete", inv->m);
		inv_resolved(inv, RELAY__INV_UNRESOLVED);
		return;
	}
	relay__consumer_redis_ok(c);
	inv_resolved(inv, o->result == RELAY_INV_R_RECORDED ?
		     RELAY__INV_DONE_OK : RELAY__INV_UNRESOLVED);
}

static void exhausted_cb(int status, const relay_inv_outcome *o,
			 void *payload)
{
	relay__inv *inv = payload;
	relay_consumer *c = inv->m->c;

	if (status) {
		redis_step_failed(c, status, "mark_exhausted", inv->m);
		inv_resolved(inv, RELAY__INV_UNRESOLVED);
		return;
	}
	relay__consumer_redis_ok(c);
	if (o->result != RELAY_INV_R_RECORDED) {
		inv_resolved(inv, RELAY__INV_UNRESOLVED);
		return;
	}
	inv->dlq = 0;
	inv_resolved(inv, RELAY__INV_DONE_EXH);
}

static void failure_cb(int status, const relay_inv_outcome *o, void *payload)
{
	relay__inv *inv = payload;
	relay_consumer *c = inv->m->c;

	(void)o;
	if (status)
		redis_step_failed(c, status, "record_failure", inv->m);
	else
		relay__consumer_redis_ok(c);
	inv_resolved(inv, RELAY__INV_UNRESOLVED);
}

static void failure_reply(relay_redis_backend *b, int status,
			  relay_redis_reply *reply, void *payload)
{
	relay_inv_outcome o;

	(void)b;
	if (status == 0)
		status = relay__inv_outcome_from_reply(reply, &o);
	relay_redis_reply_free(reply);
	failure_cb(status, status ? NULL : &o, payload);
}

/*
 * record_failure with the backoff divided by time_scale (test hooks).
 * At scale 1 this is exactly relay_inv_record_failure().
 */
static int record_failure(relay__inv *inv)
{
	relay__msg *m = inv->m;
	relay_consumer *c = m->c;
	relay_wall_ms now = relay_clock_wall_ms(c->clock);
	char sat[16], snow[24], sbo[24];
	const char *argv[6];

	if (c->scale <= 1)
		return relay_inv_record_failure(c->redis, m->key, inv->field,
						inv->attempt, inv->token, now,
						failure_cb, inv);
	snprintf(sat, sizeof(sat), "%u", inv->attempt);
	snprintf(snow, sizeof(snow), "%lld", (long long)now);
	snprintf(sbo, sizeof(sbo), "%lld", (long long)relay__consumer_scaled(
			 c, relay_inv_backoff_ms(inv->attempt)));
	argv[0] = m->key;
	argv[1] = inv->field;
	argv[2] = sat;
	argv[3] = inv->token;
	argv[4] = snow;
	argv[5] = sbo;
	return relay__redis_script(c->redis, RELAY_REDIS_SCRIPT_RECORD_FAILURE,
				   1, 6, argv, NULL, failure_reply, inv);
}

static void inv_failed(relay__inv *inv, const char *reason)
{
	relay_consumer *c = inv->m->c;
	unsigned int max = (unsigned int)relay_app_rule_retries(inv->rule) + 1;
	int rc;

	snprintf(inv->reason, sizeof(inv->reason), "%s",
		 reason && *reason ? reason : "failed");
	if (inv->attempt >= max)
		rc = relay_inv_mark_exhausted(c->redis, inv->m->key,
					      inv->field, inv->attempt,
					      inv->token, exhausted_cb, inv);
	else
		rc = record_failure(inv);
	if (rc) {
		redis_step_failed(c, rc, "record outcome", inv->m);
		inv_resolved(inv, RELAY__INV_UNRESOLVED);
	}
}

static void output_cb(const relay_output_line *line, void *payload)
{
	relay__inv *inv = payload;
	relay_consumer *c = inv->m->c;

	if (c->output)
		c->output(line, c->output_payload);
}

static void run_done(const relay_run_outcome *o, void *payload)
{
	relay__inv *inv = payload;
	relay__msg *m = inv->m;
	relay_consumer *c = m->c;
	uint64_t dur_us = relay_clock_mono_us(c->clock) - inv->started_us;
	int rc;

	inv->run = NULL;
	c->m.in_flight_invocations--;
	if (o->status == RELAY_RUN_CANCELLED) {
		LOG(c, RELAY_LOG_INFO, "RELAY-ENG04",
		    "handler cancelled app=%s handler=%s message_id=%s "
		    "attempt=%u", relay_app_name(inv->app),
		    relay_app_rule_handler(inv->rule), m->id, inv->attempt);
		inv_resolved(inv, RELAY__INV_UNRESOLVED);
		return;
	}
	if (o->duration_us)
		dur_us = o->duration_us;
	relay__consumer_hist_add(c, relay_app_name(inv->app),
				 relay_app_rule_handler(inv->rule), dur_us);
	/* The handler is over: its slots go to the next waiter now. */
	relay__slots_release(c, inv);
	if (o->status == RELAY_RUN_OK) {
		c->m.handler_success++;
		LOG(c, RELAY_LOG_DEBUG, "RELAY-ENG04",
		    "handler succeeded app=%s handler=%s message_id=%s "
		    "attempt=%u duration_ms=%llu exit_code=0",
		    relay_app_name(inv->app),
		    relay_app_rule_handler(inv->rule), m->id, inv->attempt,
		    (unsigned long long)(dur_us / 1000));
		rc = relay_inv_mark_complete(c->redis, m->key, inv->field,
					     inv->attempt, inv->token,
					     complete_cb, inv);
		if (rc) {
			redis_step_failed(c, rc, "mark_complete", m);
			inv_resolved(inv, RELAY__INV_UNRESOLVED);
		}
		return;
	}
	c->m.handler_failure++;
	LOG(c, RELAY_LOG_WARN, "RELAY-ENG04",
	    "handler failed app=%s handler=%s message_id=%s attempt=%u "
	    "duration_ms=%llu exit_code=%d reason=\"%s\"",
	    relay_app_name(inv->app), relay_app_rule_handler(inv->rule),
	    m->id, inv->attempt, (unsigned long long)(dur_us / 1000),
	    o->exit_code, o->reason);
	inv_failed(inv, o->reason);
}

static relay_runtime_kind runtime_kind(relay_app_runtime_kind k)
{
	switch (k) {
	case RELAY_APP_RUNTIME_PYTHON3:
		return RELAY_RUNTIME_PYTHON3;
	case RELAY_APP_RUNTIME_NODE:
		return RELAY_RUNTIME_NODE;
	default:
		return RELAY_RUNTIME_EXEC;
	}
}

void relay__consumer_exec_spec(relay_exec_spec *s, const relay_app *app,
			       const relay_app_rule *rule, const char *msg_id,
			       const char *event, size_t len)
{
	int64_t to = relay_app_rule_timeout_ms(rule);

	s->app = relay_app_name(app);
	s->handler = relay_app_rule_handler(rule);
	s->message_id = msg_id;
	s->app_dir = relay_app_dir(app);
	s->runtime = runtime_kind(relay_app_runtime(app));
	s->argv = relay_app_command(app, NULL);
	s->env = relay_app_envp(app);
	s->network = relay_app_network(app);
	s->memory_bytes = relay_app_memory(app);
	s->cpus_milli = relay_app_cpus_milli(app);
	s->pids = relay_app_pids(app);
	s->timeout_ms = to > 0 ? (uint32_t)to : 0;
	s->event = event;
	s->event_len = len;
}

static void inv_run(relay__inv *inv)
{
	relay__msg *m = inv->m;
	relay_consumer *c = m->c;
	relay_exec_spec s = RELAY_EXEC_SPEC_INIT;
	int rc;

	relay__consumer_exec_spec(&s, inv->app, inv->rule, m->id, m->event,
				  m->event_len);
	if (inv->attempt > 1)
		c->m.retries++;
	c->m.in_flight_invocations++;
	inv->started_us = relay_clock_mono_us(c->clock);
	rc = c->exec->run(c->exec, &s, output_cb, run_done, inv, &inv->run);
	if (rc) {
		char why[160];

		c->m.in_flight_invocations--;
		c->m.handler_failure++;
		relay__slots_release(c, inv);
		snprintf(why, sizeof(why), "start: %s", relay_strerror(rc));
		LOG(c, RELAY_LOG_WARN, "RELAY-ENG04",
		    "handler failed app=%s handler=%s message_id=%s "
		    "attempt=%u reason=\"%s\"", relay_app_name(inv->app),
		    relay_app_rule_handler(inv->rule), m->id, inv->attempt,
		    why);
		inv_failed(inv, why);
	}
}

static void claim_cb(int status, const relay_inv_outcome *o, void *payload)
{
	relay__inv *inv = payload;
	relay_consumer *c = inv->m->c;

	if (status) {
		/* A TryStart error fails closed: never run a duplicate. */
		redis_step_failed(c, status, "try_start", inv->m);
		inv_resolved(inv, RELAY__INV_UNRESOLVED);
		return;
	}
	relay__consumer_redis_ok(c);
	switch (o->result) {
	case RELAY_INV_R_CLAIMED:
		inv->attempt = o->attempt;
		memcpy(inv->token, o->token, sizeof(inv->token));
		inv_run(inv);
		return;
	case RELAY_INV_R_OK:
		inv_resolved(inv, RELAY__INV_DONE_OK);
		return;
	case RELAY_INV_R_EXHAUSTED:
		inv->attempt = o->attempt;
		memcpy(inv->token, o->token, sizeof(inv->token));
		inv->dlq = o->dlq;
		snprintf(inv->reason, sizeof(inv->reason),
			 "last failure not known to this delivery");
		inv_resolved(inv, RELAY__INV_DONE_EXH);
		return;
	default:  /* running, backing off, retained */
		inv_resolved(inv, RELAY__INV_UNRESOLVED);
		return;
	}
}

static void inv_claim(relay__inv *inv)
{
	relay__msg *m = inv->m;
	relay_consumer *c = m->c;
	int rc;

	rc = relay_inv_try_start(c->redis, m->key, inv->field,
				 relay_clock_wall_ms(c->clock),
				 relay_app_rule_timeout_ms(inv->rule),
				 claim_cb, inv);
	if (rc) {
		redis_step_failed(c, rc, "try_start", m);
		inv_resolved(inv, RELAY__INV_UNRESOLVED);
	}
}

/* ---- the message ----------------------------------------------------------- */

static void msg_next(relay__msg *m)
{
	while (m->cur < m->ninv && m->invs[m->cur].status != RELAY__INV_TODO)
		m->cur++;
	if (m->cur < m->ninv)
		inv_begin(&m->invs[m->cur]);
	else
		msg_finish(m);
}

static void msg_finish(relay__msg *m)
{
	size_t i;

	for (i = 0; i < m->ninv; i++)
		if (m->invs[i].status != RELAY__INV_DONE_OK &&
		    m->invs[i].status != RELAY__INV_DONE_EXH) {
			msg_release(m, "an invocation is not terminal");
			return;
		}
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
	c->ops--;
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

	c->ops++;
	if (relay_inv_retain(c->redis, m->key, c->retention_ms, retain_cb, c))
		c->ops--;
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
		redis_step_failed(c, status, "XACK", m);
		msg_free(m);
		return;
	}
	relay__consumer_redis_ok(c);
	c->m.acks++;
	/* Retention only after the message has left the PEL. */
	msg_retain_free(m);
}

static void msg_ack(relay__msg *m)
{
	const char *ids[1];
	int rc;

	ids[0] = m->id;
	rc = relay_redis_xack(m->c->redis, m->c->stream, m->c->group, ids, 1,
			      ack_cb, m);
	if (rc) {
		redis_step_failed(m->c, rc, "XACK", m);
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
		redis_step_failed(c, status, "DLQ write", m);
		msg_free(m);
		return;
	}
	relay__consumer_redis_ok(c);
	if (result == RELAY_DLQ_WRITTEN)
		c->m.dlq_entries++;
	if (result != RELAY_DLQ_WRITTEN && result != RELAY_DLQ_ALREADY) {
		msg_release(m, "DLQ marker is not this delivery's");
		return;
	}
	if (m->malformed >= 0) {
		msg_ack(m);
		return;
	}
	m->invs[m->dlq_cur].dlq = 1;
	m->dlq_cur++;
	dlq_next(m);
}

static void persist_placeholder(relay__msg *m)
{
	relay_dlq_entry e;
	char ts[40];
	int rc;

	fill_entry(m, &e, ts, sizeof(ts));
	e.event = m->pl_event;
	e.reason = m->pl_reason;
	e.app = "-";
	e.handler = "-";
	e.handler_attempts = 0;
	rc = relay_dlq_persist(m->c->redis, m->key, m->c->dlq_key, NULL, 0,
			       NULL, &e, persist_cb, m);
	if (rc) {
		redis_step_failed(m->c, rc, "DLQ write", m);
		msg_free(m);
	}
}

static void persist_exhausted(relay__msg *m, relay__inv *inv)
{
	relay_consumer *c = m->c;
	const char *handler = relay_app_rule_handler(inv->rule);
	relay_dlq_entry e;
	char ts[40], *reason;
	int rc;

	reason = relay_dlq_reason_exhausted(relay_app_name(inv->app), handler,
					    inv->attempt, inv->reason);
	if (!reason) {
		msg_release(m, "out of memory");
		return;
	}
	fill_entry(m, &e, ts, sizeof(ts));
	e.event = m->event ? m->event : "-";
	e.reason = reason;
	e.app = relay_app_name(inv->app);
	e.handler = handler;
	e.handler_attempts = inv->attempt;
	LOG(c, RELAY_LOG_WARN, "RELAY-ENG05",
	    "invocation exhausted, dead-lettering app=%s handler=%s "
	    "message_id=%s attempt=%u", e.app, handler, m->id, inv->attempt);
	rc = relay_dlq_persist(c->redis, m->key, c->dlq_key, inv->field,
			       inv->attempt, inv->token, &e, persist_cb, m);
	relay__free(reason);
	if (rc) {
		redis_step_failed(c, rc, "DLQ write", m);
		msg_free(m);
	}
}

static void deliveries_cb(relay_redis_backend *b, int status,
			  relay_pending *p, size_t n, void *payload)
{
	relay__msg *m = payload;

	(void)b;
	if (status) {
		redis_step_failed(m->c, status, "XPENDING", m);
		msg_free(m);
		return;
	}
	m->deliveries = n > 0 && p[0].deliveries > 0 ? p[0].deliveries : 1;
	relay_pending_free(p, n);
	if (m->malformed >= 0)
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
		redis_step_failed(c, rc, "XPENDING", m);
		msg_free(m);
	}
	return rc;
}

static void dlq_next(relay__msg *m)
{
	while (m->dlq_cur < m->ninv &&
	       (m->invs[m->dlq_cur].status != RELAY__INV_DONE_EXH ||
		m->invs[m->dlq_cur].dlq))
		m->dlq_cur++;
	if (m->dlq_cur >= m->ninv) {
		msg_ack(m);
		return;
	}
	if (!m->deliveries) {
		fetch_deliveries(m);
		return;
	}
	persist_exhausted(m, &m->invs[m->dlq_cur]);
}

/* ---- classification --------------------------------------------------- */

/*
 * A schedule occurrence carries "source":"relay.schedule" at the top
 * level (DESIGN.md §4). The substring test keeps the decode off the hot
 * path of ordinary events.
 */
static int contains(const char *s, size_t len, const char *needle, size_t n)
{
	const char *p = s, *end = s + len;

	while (n && (size_t)(end - p) >= n) {
		p = memchr(p, needle[0], (size_t)(end - p) - n + 1);
		if (!p)
			return 0;
		if (memcmp(p, needle, n) == 0)
			return 1;
		p++;
	}
	return 0;
}

static int is_schedule(const char *ev, size_t len)
{
	static const char needle[] = "relay.schedule";
	json_t *root, *src;
	int yes = 0;

	if (!contains(ev, len, needle, sizeof(needle) - 1))
		return 0;
	root = json_loadb(ev, len, 0, NULL);
	if (!root)
		return 0;
	src = json_object_get(root, "source");
	if (json_is_string(src) &&
	    strcmp(json_string_value(src), "relay.schedule") == 0)
		yes = 1;
	json_decref(root);
	return yes;
}

static void classified_cb(int status, const relay_inv_outcome *o,
			  void *payload)
{
	relay__msg *m = payload;
	relay_consumer *c = m->c;
	int first;

	if (status) {
		redis_step_failed(c, status, "claim_classification", m);
		msg_free(m);
		return;
	}
	relay__consumer_redis_ok(c);
	first = o->result == RELAY_INV_R_CLAIMED;
	if (o->result == RELAY_INV_R_RETAINED) {
		/* Already acknowledged and retained: a stale delivery. */
		msg_ack(m);
		return;
	}
	if (m->malformed >= 0) {
		if (first) {
			if (m->schedule) {
				c->m.events_schedule++;
			} else {
				c->m.events_malformed++;
				if (m->malformed == RELAY_DLQ_OVERSIZED)
					c->m.events_oversized++;
			}
			LOG(c, RELAY_LOG_WARN, m->schedule ? "RELAY-ENG13" :
			    "RELAY-ENG06", "dead-lettering message_id=%s: %s",
			    m->id, m->pl_reason);
		}
		fetch_deliveries(m);
		return;
	}
	if (first) {
		c->m.events_received++;
		if (m->ninv)
			c->m.events_matched++;
		else
			c->m.events_unmatched++;
	}
	if (!m->ninv) {
		msg_ack(m);
		return;
	}
	msg_next(m);
}

static int set_placeholder(relay__msg *m, relay_dlq_malformed kind,
			   const char *detail, const char *ev, size_t len)
{
	relay_consumer *c = m->c;

	m->malformed = (int)kind;
	if (m->schedule)
		m->pl_reason = relay__strdup("schedule occurrences are not "
					     "supported by this relayd");
	else
		m->pl_reason = relay_dlq_reason_malformed(kind, detail, len,
							  c->max_event_bytes);
	if (kind == RELAY_DLQ_OVERSIZED)
		m->pl_event = relay_dlq_oversized_summary(len,
							  c->max_event_bytes);
	else if (kind == RELAY_DLQ_MISSING_EVENT)
		m->pl_event = relay__strdup("-");
	else
		m->pl_event = relay__strndup(ev, len);
	return m->pl_reason && m->pl_event ? 0 : RELAY_ENOMEM;
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
	if (n) {
		m->invs = relay__calloc(n, sizeof(*m->invs));
		if (!m->invs) {
			relay__free(mt);
			return RELAY_ENOMEM;
		}
	}
	for (i = 0; i < n; i++) {
		relay__inv *inv = &m->invs[i];

		inv->m = m;
		inv->app = relay_app_ref(mt[i].app);
		inv->rule = mt[i].rule;
		m->ninv++;
		inv->field = relay__sprintf("%s/%s", relay_app_name(mt[i].app),
					    relay_app_rule_handler(
						    mt[i].rule));
		if (!inv->field) {
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

	ev = relay_stream_entry_get(e, "event", &len);
	if (!ev)
		return set_placeholder(m, RELAY_DLQ_MISSING_EVENT, NULL, NULL,
				       0);
	if (len > c->max_event_bytes)
		return set_placeholder(m, RELAY_DLQ_OVERSIZED, NULL, NULL, len);
	if (memchr(ev, '\0', len))
		return set_placeholder(m, RELAY_DLQ_NOT_STRING, NULL, ev, len);
	m->event = relay__strndup(ev, len);
	if (!m->event)
		return RELAY_ENOMEM;
	m->event_len = len;
	if (is_schedule(ev, len)) {
		m->schedule = 1;
		return set_placeholder(m, RELAY_DLQ_DECODE, NULL, ev, len);
	}
	return match(m);
}

void relay__msg_deliver(relay_consumer *c, const relay_stream_entry *e,
			int reclaimed)
{
	relay__msg *m;
	int rc;

	if (relay__msg_find(c, e->id))
		return;  /* already being worked on here */
	m = msg_new(c, e->id);
	if (!m)
		return;  /* stays pending; reclaimed later */
	m->reclaimed = reclaimed;
	rc = classify(m, e);
	if (!rc)
		rc = relay_inv_claim_classification(c->redis, m->key,
						    classified_cb, m);
	if (rc) {
		redis_step_failed(c, rc, "classify", m);
		msg_free(m);
	}
}

/* ---- missing payload -------------------------------------------------- */

static void missing_ack_cb(relay_redis_backend *b, int status,
			   long long value, void *payload)
{
	relay__msg *m = payload;

	(void)b;
	(void)value;
	if (status) {
		redis_step_failed(m->c, status, "XACK", m);
		msg_free(m);
		return;
	}
	msg_retain_free(m);
}

/*
 * A PEL entry whose stream entry is gone is data loss, not success:
 * count it, clear the dangling reference, retain any state hash. No
 * handler runs and no DLQ entry is fabricated.
 */
void relay__msg_missing(relay_consumer *c, const char *id)
{
	const char *ids[1];
	relay__msg *m;

	c->m.missing_payload++;
	LOG(c, RELAY_LOG_WARN, "RELAY-ENG07",
	    "pending entry has no stream body (deleted or trimmed) "
	    "message_id=%s", id);
	if (relay__msg_find(c, id))
		return;
	m = msg_new(c, id);
	if (!m)
		return;
	ids[0] = id;
	if (relay_redis_xack(c->redis, c->stream, c->group, ids, 1,
			     missing_ack_cb, m))
		msg_free(m);
}

/* ---- stop ------------------------------------------------------------- */

/*
 * Stop: invocations waiting for a slot give up (no attempt charged);
 * running ones are cancelled unless @graceful. Every message then ends
 * through its normal path and is released or acknowledged.
 */
void relay__msg_stop(relay_consumer *c, int graceful)
{
	relay__msg *m;

	while (c->wait_head) {
		relay__inv *inv = c->wait_head;

		wait_remove(c, inv);
		ev_timer_stop(c->loop, &inv->m->slot_timer);
		inv_resolved(inv, RELAY__INV_UNRESOLVED);
	}
	if (graceful || !c->exec->cancel)
		return;
	for (m = c->msgs; m; m = m->next)
		if (m->cur < m->ninv && m->invs[m->cur].run)
			c->exec->cancel(c->exec, m->invs[m->cur].run);
}
