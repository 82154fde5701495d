/*
 * librelay/consumer/consumer_msg.h - private: one message's life
 * (consumer_msg.c owns relay__msg and the consumer's list of messages:
 * the transition table is at the top of that file, relay__msg_to() is
 * the one function that changes the state; the schedule fields are
 * consumer_sched.c's). Never installed.
 */
#ifndef RELAY__CONSUMER_MSG_H
#define RELAY__CONSUMER_MSG_H

#include "consumer.h"
#include "consumer_inv.h"
#include "relay/dlq.h"
#include "relay/invocation.h"

/*
 * The life of one message. Zero is the state calloc gives.
 */
typedef enum relay__msg_state {
	RELAY__MSG_NEW = 0,      /* in memory, classified locally */
	RELAY__MSG_CLAIM,        /* claim_classification (for an occurrence:
				    its admission first) in flight, nothing
				    else */
	RELAY__MSG_CLAIM_RUN,    /* a matched event: the classification
				    goes with the first try_start
				    (CLAIM_START, or pipelined before it
				    on an older backend): invocations
				    wait for slots and run meanwhile */
	RELAY__MSG_CLAIM_WAIT,   /* ... invocations over before the reply:
				    the message ends when it comes */
	RELAY__MSG_RUN,          /* classification counted: invocations run,
				    one at a time in dispatch order */
	RELAY__MSG_RUN_UNCOUNTED,/* pipelined, classification not recorded
				    (error or stale): the invocations finish,
				    nothing is acknowledged */
	RELAY__MSG_DLQ,          /* delivery count, then the DLQ entries
				    (placeholder or exhausted invocations) */
	RELAY__MSG_ACK,          /* XACK in flight (then retain) */
	RELAY__MSG_CLEAR,        /* body gone: XACK clears the reference */
	RELAY__MSG_END,          /* leaving memory (released, acknowledged,
				    or the fused tail sent) */
	RELAY__MSG_STATE_COUNT_
} relay__msg_state;

/* What classification decided (set by classify, the schedule path and
 * the placeholder route through relay__msg_route_to(); not a state: it
 * picks the path). */
typedef enum relay__msg_route {
	RELAY__ROUTE_EVENT = 0,       /* an event: matched (ninv may be 0) */
	RELAY__ROUTE_MALFORMED,       /* DLQ placeholder, then ACK */
	RELAY__ROUTE_OCC,             /* schedule occurrence: one invocation */
	RELAY__ROUTE_OCC_HOLD,        /* ... its app is invalid now: pending */
	RELAY__ROUTE_OCC_OBSOLETE,    /* ... its schedule is gone: ACK */
	RELAY__ROUTE_OCC_MALFORMED,   /* ... refused: DLQ placeholder, ACK */
} relay__msg_route;

/* What the ownership renewal (consumer_recover.c) knows of the message's
 * stream entry (not a state of the message's life: observed at any
 * time, consulted at its next step; changed by relay__msg_body_to()). */
typedef enum relay__msg_body {
	RELAY__BODY_UNCHECKED = 0,   /* nothing known */
	RELAY__BODY_CHECKING,        /* XRANGE in flight */
	RELAY__BODY_LOST,            /* exists, owned elsewhere (logged) */
	RELAY__BODY_GONE,            /* deleted: counted once, no further
					attempts, reference cleared */
} relay__msg_body;

/* One message in memory. */
struct relay__msg {
	/* owner: consumer_msg.c */
	relay_consumer *c;
	relay__msg *prev, *next;     /* c->msgs list */
	char *id;                    /* stream id */
	char *key;                   /* invocation state hash */
	char *event;                 /* owned copy of the raw value, or NULL */
	size_t event_len;
	relay__msg_state state;
	relay__msg_route route;
	relay__msg_body body;
	relay_dlq_malformed pl_kind; /* ROUTE_*MALFORMED: which */
	char *pl_reason;             /* placeholder reason */
	char *pl_event;              /* placeholder event field */
	size_t pl_event_len;         /* its bytes (a raw value may hold NUL) */
	char *pl_source;             /* source_fields of a placeholder without
					an event field, or NULL */
	relay__cinv *invs;           /* matched invocations, dispatch order */
	size_t ninv;
	size_t cur;                  /* the invocation being worked on */
	size_t dlq_cur;              /* next exhausted invocation to persist */
	long long deliveries;        /* diagnostic PEL count (DLQ path) */
	int step_failed;             /* a Redis step failed this delivery
					(consumer_stuck.c bookkeeping) */
	int class_with_claim;        /* the classification is not sent yet:
					the message's first try_start
					carries it (CLAIM_START) */
	/* owner: consumer_inv.c (the timers of the invocation being
	 * worked on: one at a time, so they live in the message) */
	ev_timer slot_timer;         /* bounded slot wait */
	ev_timer rec_timer;          /* resend of a lost completion */
	/* owner: consumer_trace.c */
	relay__mtrace *trace;        /* the entry's trace context, or NULL */
	/* owner: consumer_sched.c (a schedule occurrence) */
	char *sched_desc;            /* "app/schedule@scheduled_at" (logs) */
	char *sched_occ;             /* its occurrence_id (admission) */
	char *pin;                   /* admission pin sent / stored */
	char *run_event;             /* handler stdin of an occurrence */
	size_t run_event_len;
};

/*
 * The transition table: 1 when a message may go from @from to @to (the
 * table at the top of consumer_msg.c), else 0 (also for out-of-range
 * states).
 */
int relay__msg_state_allowed(relay__msg_state from, relay__msg_state to);
/* "claim_run", ...; "?" out of range. Static string. */
const char *relay__msg_state_name(relay__msg_state s);
/* The one function that changes m->state; an illegal transition is a
 * bug: assert()ed (debug and test builds), else done anyway. */
void relay__msg_to(relay__msg *m, relay__msg_state to);
/* The other facts of a message, each changed by one function. */
void relay__msg_route_to(relay__msg *m, relay__msg_route route);
void relay__msg_body_to(relay__msg *m, relay__msg_body body);
/* @n zeroed invocations (m->invs, m->ninv). Returns 0 or RELAY_ENOMEM. */
int relay__msg_invs_new(relay__msg *m, size_t n);

void relay__msg_deliver(relay_consumer *c, const relay_stream_entry *e);
void relay__msg_missing(relay_consumer *c, const char *id);
/* The body of in-memory @m is gone: count it once, finish without
 * further attempts. */
void relay__msg_gone(relay__msg *m);
relay__msg *relay__msg_find(relay_consumer *c, const char *id);
/* The classification reply (also for schedule occurrences, whose claim
 * carries the admission pin). */
void relay__msg_classified(relay__msg *m, int status,
			   const relay_inv_outcome *o);
/* CLAIM → RUN: start the invocations after the classification reply. */
void relay__msg_run(relay__msg *m);
/* The next invocation, or the end of the message when none is left. */
void relay__msg_next(relay__msg *m);
/* The way back from an invocation (consumer_inv.h): the classification
 * of the first claim, and done. Given to every relay__cinv_init(). */
extern const relay__cinv_up relay__msg_up;
/* A Redis step of @m failed with @status: counted, logged (at most once
 * per backoff step for a message's own trouble), message kept pending. */
void relay__msg_step_failed(relay_consumer *c, int status, const char *what,
			    relay__msg *m);
void relay__msg_ack(relay__msg *m);
void relay__msg_release(relay__msg *m, const char *why);
/* Route the message to the DLQ placeholder path; @detail (a schedule
 * envelope's problem) is the reason after "malformed schedule
 * occurrence: ". Returns 0 or RELAY_ENOMEM. */
int relay__msg_placeholder(relay__msg *m, relay_dlq_malformed kind,
			   const char *detail, const char *ev, size_t len);

#endif /* RELAY__CONSUMER_MSG_H */
