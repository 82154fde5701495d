/*
 * librelay/consumer/slots.h - private: the concurrency limiter
 * (slots.c owns every field of relay_slots and of the wait links; no
 * other file writes them). Never installed.
 */
#ifndef RELAY__CONSUMER_SLOTS_H
#define RELAY__CONSUMER_SLOTS_H

#include "common.h"
#include "relay/engine.h"

/* Per-app running count (concurrency slots). */
typedef struct relay__app_slots {
	char *name;
	unsigned int running;
} relay__app_slots;

/* One waiter's link in the FIFO wait queue, embedded in the waiting
 * invocation (consumer_inv.h); written only by slots.c. */
typedef struct relay__slot_wait {
	struct relay__slot_wait *next;
} relay__slot_wait;

/* The concurrency limiter: owned by one consumer, or shared by several
 * (options.slots). Its waiters belong to any of them. */
struct relay_slots {
	/* owner: slots.c */
	unsigned int max;             /* MAX_CONCURRENCY */
	unsigned int running;         /* slots held, every consumer */
	relay__app_slots *apps;       /* per-app counts, every consumer */
	size_t napps;
	relay__slot_wait *wait_head, *wait_tail; /* FIFO, every consumer */
	unsigned int users;           /* consumers not yet freed */
};

/* The per-app count of @name (created at zero); NULL on ENOMEM. */
relay__app_slots *relay__slots_app(relay_slots *s, const char *name);
/* A consumer starts (@delta 1) or stops (-1) using @s. */
void relay__slots_use(relay_slots *s, int delta);
/* Take the global slot and one of @app's (at most @limit running).
 * Returns 1 taken, 0 none free, RELAY_ENOMEM. */
int relay__slots_take(relay_slots *s, const char *app, unsigned int limit);
/* Give back what relay__slots_take() took for @app. */
void relay__slots_give(relay_slots *s, const char *app);
/* The oldest waiter (follow ->next, read only), or NULL. */
relay__slot_wait *relay__slots_wait_head(relay_slots *s);
/* Queue @w last; take it out again (anywhere in the queue). */
void relay__slots_wait_push(relay_slots *s, relay__slot_wait *w);
void relay__slots_wait_remove(relay_slots *s, relay__slot_wait *w);

#endif /* RELAY__CONSUMER_SLOTS_H */
