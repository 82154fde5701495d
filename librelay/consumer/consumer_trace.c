/*
 * consumer_trace.c - the engine's tracing (consumer_trace.h): the
 * producer's context in, one span per handler attempt out, the DLQ
 * entry's lineage.
 *
 * Modes (the template's `tracing:`, doc/templates.md):
 *  - link (default): each attempt span is the root of a trace of its
 *    own and LINKS to the producer's span. A producer's trace then stays
 *    readable however many handlers an event fans out to and however
 *    long the backoff between attempts.
 *  - child: each attempt span is a child of the producer's span (in the
 *    producer's trace), which keeps its tracestate.
 * Without a producer context both make each attempt a root; so do
 * schedule occurrences (relayd publishes them without one).
 *
 * Links: the producer's span (link mode), the attempt before (retries),
 * the entry's relay_trace_link (a redrive: the failed attempt it
 * replays), each with a `relay.link` attribute naming which.
 *
 * Ids: an attempt's trace id (a root) and span id are derived from the
 * stream, group, message id, "<app>/<handler>" and attempt number by a
 * 64-bit mix, so the attempt before is known to whoever runs a retry.
 * The sampling decision is deterministic too (the samplers decide on the
 * trace id and the parent's flag), so the link carries the right flag.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "consumer.h"
#include "consumer_health.h"
#include "consumer_inv.h"
#include "consumer_msg.h"

/* Longest field value looked at at all (a bigger one is counted). */
#define TRACE_FIELD_MAX (RELAY_TRACESTATE_INPUT_MAX + 1)

void relay__ctrace_init(relay__ctrace *t, const relay_consumer_options *o)
{
	memset(t, 0, sizeof(*t));
	relay_trace_sampler_parse(&t->sampler, NULL, NULL);
	if (o->version < 3)
		return;
	t->fn = o->span;
	t->payload = o->span_payload;
	if (o->sampler)
		t->sampler = *o->sampler;
}

/* ---- context in ------------------------------------------------------- */

static const char *field(const relay_stream_entry *e, const char *name,
			 size_t *len)
{
	return relay_stream_entry_get(e, name, len);
}

static relay__mtrace *mtrace(relay__msg *m)
{
	if (!m->trace)
		m->trace = relay__calloc(1, sizeof(*m->trace));
	return m->trace;
}

void relay__ctrace_entry(relay__msg *m, const relay_stream_entry *e)
{
	relay_trace_context ctx;
	const char *tp, *ts, *bg, *lk;
	size_t tplen = 0, tslen = 0, bglen = 0, lklen = 0;
	unsigned int invalid = 0;
	relay__mtrace *t;

	tp = field(e, "traceparent", &tplen);
	ts = field(e, "tracestate", &tslen);
	bg = field(e, "baggage", &bglen);
	lk = field(e, "relay_trace_link", &lklen);
	if (!tp && !ts && !bg && !lk)
		return;  /* the common case: nothing to do */
	if (tp && (tplen > TRACE_FIELD_MAX ||
		   relay_trace_parent_parse(&ctx, tp, tplen))) {
		invalid++;
		tp = NULL;
	}
	if (tp) {
		t = mtrace(m);
		if (!t)
			return;  /* out of memory: as if it carried nothing */
		t->parent = ctx;
		t->traceparent = relay__strndup(tp, tplen);
		t->has_parent = t->traceparent != NULL;
		/* tracestate means something only with a traceparent. */
		if (ts && (tslen > TRACE_FIELD_MAX ||
			   relay_trace_state_parse(&t->parent, ts, tslen))) {
			invalid++;
			t->parent.tracestate[0] = '\0';
		}
	} else if (ts) {
		invalid++;  /* orphan tracestate */
	}
	if (bg) {
		if (bglen > TRACE_FIELD_MAX ||
		    relay_trace_baggage_check(bg, bglen, NULL)) {
			invalid++;
		} else if (bglen && mtrace(m)) {
			m->trace->baggage = relay__strndup(bg, bglen);
		}
	}
	if (lk) {
		/* Ours: version 00 only (relayctl writes it). */
		if (lklen != RELAY_TRACEPARENT_LEN ||
		    relay_trace_parent_parse(&ctx, lk, lklen)) {
			invalid++;
		} else if (mtrace(m)) {
			m->trace->link = ctx;
			m->trace->has_link = true;
		}
	}
	if (invalid && mtrace(m))
		m->trace->invalid = invalid;
}

void relay__ctrace_classified(relay__msg *m)
{
	if (m->trace)
		relay__count_add(m->c, trace_context_invalid, m->trace->invalid);
}

void relay__ctrace_msg_free(relay__msg *m)
{
	if (!m->trace)
		return;
	relay__free(m->trace->traceparent);
	relay__free(m->trace->baggage);
	relay__free(m->trace);
	m->trace = NULL;
}

/* ---- derived ids ------------------------------------------------------ */

static uint64_t mix64(uint64_t z)
{
	z += 0x9e3779b97f4a7c15ull;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint64_t fnv(uint64_t h, const char *s)
{
	/* FNV-1a over the string and its NUL (a separator). */
	do {
		h ^= (unsigned char)*s;
		h *= 0x100000001b3ull;
	} while (*s++);
	return h;
}

static void put64(uint8_t *out, uint64_t v)
{
	int i;

	for (i = 7; i >= 0; i--) {
		out[i] = (uint8_t)v;
		v >>= 8;
	}
}

static bool all_zero(const uint8_t *p, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

/* The hash of what names @inv's invocation: stream, group, id, field. */
static uint64_t inv_hash(const relay__cinv *inv)
{
	const relay_consumer *c = inv->m->c;
	uint64_t h = 0xcbf29ce484222325ull;

	h = fnv(h, c->stream);
	h = fnv(h, c->group);
	h = fnv(h, inv->m->id);
	return fnv(h, inv->field);
}

/* Word @what (0: span id, 1-2: trace id) of @attempt, from inv_hash(). */
static uint64_t derive(uint64_t h, unsigned int attempt, unsigned int what)
{
	return mix64(h ^ mix64(((uint64_t)attempt << 2) | what));
}

static bool child_mode(const relay__cinv *inv)
{
	const relay__mtrace *t = inv->m->trace;

	return t && t->has_parent &&
	       relay_app_tracing_mode(inv->app) == RELAY_APP_TRACING_CHILD;
}

/* The context of attempt @attempt of @inv (its flags: the sampling
 * decision). */
static void attempt_ctx(const relay__cinv *inv, unsigned int attempt,
			relay__rtrace *out)
{
	const relay_consumer *c = inv->m->c;
	const relay__mtrace *t = inv->m->trace;
	uint64_t h = inv_hash(inv);
	bool sampled;

	memset(out->parent_id, 0, sizeof(out->parent_id));
	if (child_mode(inv)) {
		memcpy(out->trace_id, t->parent.trace_id,
		       RELAY_TRACE_ID_SIZE);
		memcpy(out->parent_id, t->parent.span_id, RELAY_SPAN_ID_SIZE);
		sampled = relay_trace_sample(&c->trace.sampler, &t->parent,
					     out->trace_id);
		out->flags = (uint8_t)((t->parent.flags &
					~RELAY_TRACE_FLAG_SAMPLED) |
				       (sampled ? RELAY_TRACE_FLAG_SAMPLED : 0));
	} else {
		put64(out->trace_id, derive(h, attempt, 1));
		put64(out->trace_id + 8, derive(h, attempt, 2));
		if (all_zero(out->trace_id, RELAY_TRACE_ID_SIZE))
			out->trace_id[15] = 1;
		sampled = relay_trace_sample(&c->trace.sampler, NULL,
					     out->trace_id);
		out->flags = sampled ? RELAY_TRACE_FLAG_SAMPLED : 0;
	}
	put64(out->span_id, derive(h, attempt, 0));
	if (all_zero(out->span_id, RELAY_SPAN_ID_SIZE))
		out->span_id[7] = 1;
	out->set = true;
}

/* Wall-clock nanoseconds at the consumer clock's monotonic time @mono.
 * A test's fixed clock gives its milliseconds. The system clock is read
 * at most once a second (each read costs as much as the rest of a
 * span's bookkeeping on some virtual machines); in between the
 * monotonic time carries it, so a span never ends before it starts. */
static int64_t wall_ns(relay_consumer *c, relay_mono_us mono)
{
	struct timespec ts;

	if (c->clock != relay_clock_system())
		return (int64_t)relay_clock_wall_ms(c->clock) * 1000000;
	if (!c->trace.wall_synced || mono < c->trace.wall_synced_us ||
	    mono - c->trace.wall_synced_us >= 1000000) {
		clock_gettime(CLOCK_REALTIME, &ts);
		c->trace.wall_off_ns = (int64_t)ts.tv_sec * 1000000000 +
				       ts.tv_nsec - (int64_t)mono * 1000;
		c->trace.wall_synced_us = mono;
		c->trace.wall_synced = true;
	}
	return (int64_t)mono * 1000 + c->trace.wall_off_ns;
}

static void format_tp(const relay__rtrace *tr, char *out)
{
	relay_trace_context ctx;

	memset(&ctx, 0, sizeof(ctx));
	memcpy(ctx.trace_id, tr->trace_id, RELAY_TRACE_ID_SIZE);
	memcpy(ctx.span_id, tr->span_id, RELAY_SPAN_ID_SIZE);
	ctx.flags = tr->flags;
	relay_trace_parent_format(&ctx, out);
}

/* ---- attempts --------------------------------------------------------- */

void relay__ctrace_start(relay__cinv *inv, relay_exec_spec *s,
			 relay__tspec *buf)
{
	relay_consumer *c = inv->m->c;
	const relay__mtrace *t = inv->m->trace;

	inv->tr.set = false;
	if (!c->trace.fn && !(t && t->has_parent))
		return;  /* tracing off, nothing to pass on: no cost */
	attempt_ctx(inv, inv->attempt, &inv->tr);
	inv->tr.start_ns = wall_ns(c, inv->started_us);
	format_tp(&inv->tr, buf->traceparent);
	s->traceparent = buf->traceparent;
	if (child_mode(inv) && t->parent.tracestate[0])
		s->tracestate = t->parent.tracestate;
	if (t && t->baggage)
		s->baggage = t->baggage;
}

typedef struct span_build {
	relay_trace_attr attrs[20];
	size_t nattrs;
	relay_trace_attr link_attr[4];
	relay_span_link links[4];
	size_t nlinks;
} span_build;

static void attr_s(span_build *b, const char *k, const char *v)
{
	relay_trace_attr *a = &b->attrs[b->nattrs++];

	memset(a, 0, sizeof(*a));
	a->key = k;
	a->type = RELAY_TRACE_ATTR_STRING;
	a->s = v;
}

static void attr_i(span_build *b, const char *k, int64_t v)
{
	relay_trace_attr *a = &b->attrs[b->nattrs++];

	memset(a, 0, sizeof(*a));
	a->key = k;
	a->type = RELAY_TRACE_ATTR_INT;
	a->i = v;
}

static void attr_b(span_build *b, const char *k, bool v)
{
	relay_trace_attr *a = &b->attrs[b->nattrs++];

	memset(a, 0, sizeof(*a));
	a->key = k;
	a->type = RELAY_TRACE_ATTR_BOOL;
	a->b = v;
}

static void add_link(span_build *b, const uint8_t *trace_id,
		     const uint8_t *span_id, uint8_t flags,
		     const char *tracestate, const char *kind)
{
	relay_span_link *l = &b->links[b->nlinks];
	relay_trace_attr *a = &b->link_attr[b->nlinks];

	memset(l, 0, sizeof(*l));
	memset(a, 0, sizeof(*a));
	memcpy(l->trace_id, trace_id, RELAY_TRACE_ID_SIZE);
	memcpy(l->span_id, span_id, RELAY_SPAN_ID_SIZE);
	l->flags = flags;
	l->tracestate = tracestate;
	a->key = "relay.link";
	a->type = RELAY_TRACE_ATTR_STRING;
	a->s = kind;
	l->attrs = a;
	l->nattrs = 1;
	b->nlinks++;
}

/* The outcome's attributes and status into @b and @sp. */
static void outcome(span_build *b, relay_span *sp, const relay_run_outcome *o,
		    const char *reason)
{
	if (!o) {
		attr_s(b, "relay.outcome", "start_failed");
		attr_s(b, "error.type", "start_failed");
		sp->status = RELAY_SPAN_STATUS_ERROR;
		sp->status_message = reason;
		return;
	}
	switch (o->status) {
	case RELAY_RUN_OK:
		attr_s(b, "relay.outcome", "succeeded");
		break;
	case RELAY_RUN_TIMEOUT:
		attr_s(b, "relay.outcome", "timed_out");
		attr_s(b, "error.type", "timeout");
		sp->status = RELAY_SPAN_STATUS_ERROR;
		sp->status_message = o->reason;
		break;
	case RELAY_RUN_CANCELLED:
		attr_s(b, "relay.outcome", "cancelled");
		break;
	case RELAY_RUN_REFUSED:  /* never started: no attempt */
		attr_s(b, "relay.outcome", "start_failed");
		attr_s(b, "error.type", "start_refused");
		sp->status = RELAY_SPAN_STATUS_ERROR;
		sp->status_message = o->reason;
		return;
	default:
		attr_s(b, "relay.outcome", "failed");
		attr_s(b, "error.type", o->term_signal ? "signal" : "exit_code");
		sp->status = RELAY_SPAN_STATUS_ERROR;
		sp->status_message = o->reason;
		break;
	}
	if (o->status != RELAY_RUN_CANCELLED && o->exit_code >= 0 &&
	    o->status != RELAY_RUN_TIMEOUT)
		attr_i(b, "process.exit.code", o->exit_code);
	if (o->term_signal)
		attr_i(b, "relay.term_signal", o->term_signal);
	if (o->version >= 2)
		attr_b(b, "relay.warm", o->warm != 0);
}

static int64_t end_ns(const relay__rtrace *tr, relay_consumer *c,
		      relay_mono_us now)
{
	int64_t t = wall_ns(c, now);

	return t > tr->start_ns ? t : tr->start_ns;
}

void relay__ctrace_end(relay__cinv *inv, const relay_run_outcome *o,
		       const char *reason, relay_mono_us now)
{
	relay__msg *m = inv->m;
	relay_consumer *c = m->c;
	const relay__mtrace *t = m->trace;
	relay_span sp = RELAY_SPAN_INIT;
	relay__rtrace prev;
	span_build b;

	if (!inv->tr.set || !c->trace.fn ||
	    !(inv->tr.flags & RELAY_TRACE_FLAG_SAMPLED))
		return;
	inv->tr.set = false;
	memset(&b, 0, sizeof(b));
	sp.name = inv->field;
	sp.kind = RELAY_SPAN_KIND_CONSUMER;
	memcpy(sp.trace_id, inv->tr.trace_id, RELAY_TRACE_ID_SIZE);
	memcpy(sp.span_id, inv->tr.span_id, RELAY_SPAN_ID_SIZE);
	memcpy(sp.parent_span_id, inv->tr.parent_id, RELAY_SPAN_ID_SIZE);
	sp.flags = inv->tr.flags;
	if (child_mode(inv) && t->parent.tracestate[0])
		sp.tracestate = t->parent.tracestate;
	sp.start_unix_ns = inv->tr.start_ns;
	sp.end_unix_ns = end_ns(&inv->tr, c, now);
	attr_s(&b, "messaging.system", "redis");
	attr_s(&b, "messaging.operation.type", "process");
	attr_s(&b, "messaging.operation.name", "process");
	attr_s(&b, "messaging.destination.name", c->stream);
	attr_s(&b, "messaging.consumer.group.name", c->group);
	attr_s(&b, "messaging.message.id", m->id);
	attr_i(&b, "messaging.message.body.size", (int64_t)m->event_len);
	attr_s(&b, "relay.app", relay_app_name(inv->app));
	attr_s(&b, "relay.handler", inv->handler);
	attr_i(&b, "relay.attempt", inv->attempt);
	attr_i(&b, "relay.max_attempts", (int64_t)inv->retries + 1);
	attr_i(&b, "relay.timeout_ms", inv->timeout_ms);
	attr_s(&b, "relay.tracing", child_mode(inv) ? "child" : "link");
	outcome(&b, &sp, o, reason);
	if (o && o->status != RELAY_RUN_OK && o->status != RELAY_RUN_CANCELLED
	    && inv->attempt >= (unsigned int)inv->retries + 1)
		attr_b(&b, "relay.exhausted", true);
	if (t && t->has_parent && !child_mode(inv))
		add_link(&b, t->parent.trace_id, t->parent.span_id,
			 t->parent.flags, t->parent.tracestate, "producer");
	if (inv->attempt > 1) {
		attempt_ctx(inv, inv->attempt - 1, &prev);
		add_link(&b, prev.trace_id, prev.span_id, prev.flags, NULL,
			 "previous_attempt");
	}
	if (t && t->has_link)
		add_link(&b, t->link.trace_id, t->link.span_id, t->link.flags,
			 NULL, "redrive");
	sp.attrs = b.attrs;
	sp.nattrs = b.nattrs;
	sp.links = b.links;
	sp.nlinks = b.nlinks;
	c->trace.fn(&sp, c->trace.payload);
}

/* ---- manual runs ------------------------------------------------------ */

void relay__ctrace_manual_start(relay_consumer *c, relay__rtrace *tr,
				const char *link, relay_exec_spec *s,
				relay__tspec *buf)
{
	bool sampled;

	memset(tr, 0, sizeof(*tr));
	if (!c->trace.fn)
		return;
	if (link && strlen(link) == RELAY_TRACEPARENT_LEN &&
	    !relay_trace_parent_parse(&tr->link, link, RELAY_TRACEPARENT_LEN))
		tr->has_link = true;
	if (relay_trace_random_ids(tr->trace_id, tr->span_id))
		return;
	sampled = relay_trace_sample(&c->trace.sampler, NULL, tr->trace_id);
	tr->flags = sampled ? RELAY_TRACE_FLAG_SAMPLED : 0;
	tr->start_ns = wall_ns(c, relay_clock_mono_us(c->clock));
	tr->set = true;
	format_tp(tr, buf->traceparent);
	s->traceparent = buf->traceparent;
}

void relay__ctrace_manual_end(relay_consumer *c, relay__rtrace *tr,
			      const char *app, const char *handler,
			      const char *kind, const relay_run_outcome *o)
{
	relay_span sp = RELAY_SPAN_INIT;
	span_build b;
	char *name;

	if (!tr->set || !c->trace.fn ||
	    !(tr->flags & RELAY_TRACE_FLAG_SAMPLED))
		return;
	tr->set = false;
	name = relay__sprintf("%s/%s", app, handler);
	if (!name)
		return;
	memset(&b, 0, sizeof(b));
	sp.name = name;
	sp.kind = RELAY_SPAN_KIND_CONSUMER;
	memcpy(sp.trace_id, tr->trace_id, RELAY_TRACE_ID_SIZE);
	memcpy(sp.span_id, tr->span_id, RELAY_SPAN_ID_SIZE);
	sp.flags = tr->flags;
	sp.start_unix_ns = tr->start_ns;
	sp.end_unix_ns = end_ns(tr, c, relay_clock_mono_us(c->clock));
	attr_s(&b, "relay.app", app);
	attr_s(&b, "relay.handler", handler);
	attr_s(&b, "relay.manual", kind);
	outcome(&b, &sp, o, NULL);
	if (tr->has_link)
		add_link(&b, tr->link.trace_id, tr->link.span_id,
			 tr->link.flags, NULL, "dlq_attempt");
	sp.attrs = b.attrs;
	sp.nattrs = b.nattrs;
	sp.links = b.links;
	sp.nlinks = b.nlinks;
	c->trace.fn(&sp, c->trace.payload);
	relay__free(name);
}

/* ---- the DLQ lineage -------------------------------------------------- */

char *relay__ctrace_dlq(const relay__msg *m, const relay__cinv *inv)
{
	const relay__mtrace *t = m->trace;
	char tp[RELAY_TRACEPARENT_LEN + 1];
	relay__rtrace at;
	json_t *o;
	char *s, *out;
	int bad = 0;

	/* The failed attempt's context is known only when the entry carried
	 * one or tracing is on (the attempt then had a traceparent). */
	if (!t && !m->c->trace.fn)
		return NULL;
	o = json_object();
	if (!o)
		return NULL;
	if (t && t->has_parent) {
		bad |= json_object_set_new(o, "traceparent",
					   json_string(t->traceparent));
		if (t->parent.tracestate[0])
			bad |= json_object_set_new(o, "tracestate",
				json_string(t->parent.tracestate));
	}
	if (t && t->baggage)
		bad |= json_object_set_new(o, "baggage",
					   json_string(t->baggage));
	if (inv && inv->attempt > 0 &&
	    (m->c->trace.fn || (t && t->has_parent))) {
		attempt_ctx(inv, inv->attempt, &at);
		format_tp(&at, tp);
		bad |= json_object_set_new(o, "attempt", json_string(tp));
	}
	if (t && t->has_link) {
		relay_trace_context l = t->link;

		l.tracestate[0] = '\0';
		relay_trace_parent_format(&l, tp);
		bad |= json_object_set_new(o, "link", json_string(tp));
	}
	if (bad || json_object_size(o) == 0) {
		json_decref(o);
		return NULL;
	}
	s = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
	json_decref(o);
	if (!s)
		return NULL;
	out = relay__strdup(s);
	free(s);
	return out;
}
