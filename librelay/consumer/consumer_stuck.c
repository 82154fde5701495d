/*
 * consumer_stuck.c - no step may spin. A Redis step that fails for one
 * message while Redis answers (an error reply: a DLQ write refused, a
 * script error, a wrong-type key) leaves the message pending, and its
 * next delivery would fail the same way. Such a message is recorded here
 * with its reason; its deliveries are skipped (it stays pending, nothing
 * runs) until a per-message backoff passes, doubling from
 * RELAY_CONSUMER_STUCK_BACKOFF_MIN_MS to RELAY_CONSUMER_STUCK_BACKOFF_MAX_MS,
 * and the engine logs one line per backoff step. The entry goes away when
 * a delivery of the message passes every step (acknowledged, or left
 * pending for an ordinary reason such as a retry backoff).
 *
 * Connection failures (Redis down) are not per message: the read backoff
 * and the "Redis unavailable" line of consumer_health.c cover them.
 */
#include <stdio.h>
#include <string.h>

#include "consumer.h"
#include "consumer_health.h"
#include "consumer_stuck.h"

#define LOG(c, lvl, id, ...) relay__log(&(c)->logger, lvl, id, __VA_ARGS__)

#define STUCK_MAX 1024  /* entries kept; beyond it failures only count */

static relay__stuck *find(relay_consumer *c, const char *id)
{
	size_t i;

	for (i = 0; i < c->nstuck; i++)
		if (strcmp(c->stuck[i].id, id) == 0)
			return &c->stuck[i];
	return NULL;
}

int relay__stuck_class(const relay_consumer *c, int status)
{
	if (status == RELAY_ECLOSED || status == RELAY_ETIMEOUT)
		return 0;
	return status != RELAY_EBACKEND || c->redis_up;
}

int relay__stuck_note(relay_consumer *c, const char *id, const char *what,
		      const char *detail, int64_t *retry_ms)
{
	relay_mono_us now = relay_clock_mono_us(c->clock);
	relay__stuck *s = find(c, id), *n;
	unsigned int i;
	int64_t b;

	*retry_ms = 0;
	if (s && now < s->retry_us)
		return 0;  /* this backoff step was already counted */
	relay__count(c, step_failures);
	if (!s) {
		if (c->nstuck >= STUCK_MAX)
			return 1;
		n = relay__realloc(c->stuck, (c->nstuck + 1) * sizeof(*n));
		if (!n)
			return 1;
		c->stuck = n;
		s = &n[c->nstuck];
		memset(s, 0, sizeof(*s));
		s->id = relay__strdup(id);
		if (!s->id)
			return 1;
		s->since_ms = relay_clock_wall_ms(c->clock);
		c->nstuck++;
	}
	s->failures++;
	b = RELAY_CONSUMER_STUCK_BACKOFF_MIN_MS;
	for (i = 1; i < s->failures &&
	     b < RELAY_CONSUMER_STUCK_BACKOFF_MAX_MS; i++)
		b *= 2;
	if (b > RELAY_CONSUMER_STUCK_BACKOFF_MAX_MS)
		b = RELAY_CONSUMER_STUCK_BACKOFF_MAX_MS;
	b = relay__consumer_scaled(c, b);
	s->retry_us = now + (relay_mono_us)b * 1000u;
	snprintf(s->reason, sizeof(s->reason), "%s: %s", what, detail);
	*retry_ms = b;
	return 1;
}

int relay__stuck_wait(relay_consumer *c, const char *id)
{
	relay__stuck *s = c->nstuck ? find(c, id) : NULL;

	return s && relay_clock_mono_us(c->clock) < s->retry_us;
}

void relay__stuck_clear(relay_consumer *c, const char *id)
{
	relay__stuck *s = c->nstuck ? find(c, id) : NULL;

	if (!s)
		return;
	relay__free(s->id);
	*s = c->stuck[--c->nstuck];
}

void relay__stuck_free(relay_consumer *c)
{
	size_t i;

	for (i = 0; i < c->nstuck; i++)
		relay__free(c->stuck[i].id);
	relay__free(c->stuck);
	c->stuck = NULL;
	c->nstuck = 0;
}

int relay_consumer_stuck_messages(const relay_consumer *c,
				  relay_consumer_stuck_fn fn, void *payload)
{
	relay_mono_us now = relay_clock_mono_us(c->clock);
	size_t i;
	int rc;

	for (i = 0; i < c->nstuck; i++) {
		const relay__stuck *s = &c->stuck[i];
		relay_consumer_stuck v;

		memset(&v, 0, sizeof(v));
		v.message_id = s->id;
		v.reason = s->reason;
		v.failures = s->failures;
		v.since_ms = s->since_ms;
		v.retry_in_ms = s->retry_us > now ?
			(int64_t)((s->retry_us - now) / 1000u) : 0;
		rc = fn(&v, payload);
		if (rc)
			return rc;
	}
	return 0;
}

int relay__stuck_step_note(relay_consumer *c, int status, const char *what,
			 const char *id)
{
	const char *detail;
	int64_t retry_ms;

	if (!relay__stuck_class(c, status)) {
		LOG(c, RELAY_LOG_WARN, "RELAY-ENG09",
		    "%s: %s; message kept pending message_id=%s", what,
		    relay_strerror(status), id);
		return 0;
	}
	/* Redis answered with an error: this message's own trouble. One
	 * line per backoff step, never one per delivery. */
	detail = relay_strerror(status);
	if (relay__stuck_note(c, id, what, detail, &retry_ms))
		LOG(c, RELAY_LOG_WARN, "RELAY-ENG09",
		    "%s: %s; message kept pending, next try in %lld ms "
		    "message_id=%s", what, detail, (long long)retry_ms, id);
	else
		LOG(c, RELAY_LOG_DEBUG, "RELAY-ENG09",
		    "%s: %s; message kept pending message_id=%s", what,
		    detail, id);
	return 1;
}
