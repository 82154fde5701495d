/*
 * librelay/consumer/consumer_stuck.h - private: messages whose Redis
 * step keeps failing (consumer_stuck.c owns relay__stuck and the
 * consumer's list of them). Never installed.
 */
#ifndef RELAY__CONSUMER_STUCK_H
#define RELAY__CONSUMER_STUCK_H

#include "consumer.h"

/* A message whose Redis step keeps failing. */
struct relay__stuck {
	/* owner: consumer_stuck.c */
	char *id;
	char reason[160];            /* "<step>: <error>" */
	unsigned int failures;       /* backoff steps so far */
	relay_mono_us retry_us;      /* deliveries skipped until then */
	relay_wall_ms since_ms;      /* first failure */
};

/* 1 when a failure of @status is the message's own (Redis answered). */
int relay__stuck_class(const relay_consumer *c, int status);
/* Record a failed step of message @id. Returns 1 when this starts a new
 * backoff step (log it; *retry_ms is the wait), 0 when the current step
 * already counted. */
int relay__stuck_note(relay_consumer *c, const char *id, const char *what,
		      const char *detail, int64_t *retry_ms);
/* 1 while message @id is in its backoff: skip the delivery. */
int relay__stuck_wait(relay_consumer *c, const char *id);
void relay__stuck_clear(relay_consumer *c, const char *id);
void relay__stuck_free(relay_consumer *c);
/* The log of a failed step @what of message @id (@status), counted
 * already: at most once per backoff step for a message's own trouble.
 * Returns 1 when it is the message's own trouble (an error reply). */
int relay__stuck_step_note(relay_consumer *c, int status, const char *what,
			   const char *id);

#endif /* RELAY__CONSUMER_STUCK_H */
