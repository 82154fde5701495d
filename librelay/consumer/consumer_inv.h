/*
 * librelay/consumer/consumer_inv.h - private: one matched invocation's
 * life (consumer_inv.c owns relay__cinv: the transition table is at the
 * top of that file, relay__cinv_to() is the one function that changes
 * its state, and no other file writes its fields). Never installed.
 */
#ifndef RELAY__CONSUMER_INV_H
#define RELAY__CONSUMER_INV_H

#include "consumer.h"
#include "consumer_tail.h"
#include "inv/inv.h"
#include "slots.h"

/*
 * The life of one matched invocation. Zero is the state calloc gives.
 */
typedef enum relay__cinv_state {
	RELAY__CINV_TODO = 0,    /* not looked at yet */
	RELAY__CINV_WAIT,        /* in the slot wait queue */
	RELAY__CINV_CLAIM,       /* slots held, try_start in flight */
	RELAY__CINV_RUN,         /* claimed: the handler runs */
	RELAY__CINV_RECORD,      /* its outcome's script is in flight */
	RELAY__CINV_RECORD_WAIT, /* that script's reply was lost (transport
				    error): resent after a short backoff */
	RELAY__CINV_OK,          /* terminal: succeeded */
	RELAY__CINV_EXHAUSTED,   /* terminal: exhausted, DLQ entry due */
	RELAY__CINV_DLQ,         /* terminal: exhausted, DLQ entry written */
	RELAY__CINV_PENDING,     /* not terminal: the message stays pending */
	RELAY__CINV_STATE_COUNT_
} relay__cinv_state;

/*
 * The way back from an invocation to its message: the message gives
 * these to relay__cinv_init(), and the invocation never calls the
 * message by name.
 *
 * classified: the classification part of the message's first claim
 *	(CLAIM_START), when this invocation carried it: @status (0 or
 *	the error that failed the send or the script) and, on success,
 *	its outcome. Called once, before the claim's own outcome is acted
 *	on; never for an invocation that did not carry it.
 * done: the invocation is resolved (inv->state says how; inv->fused:
 *	the fused success tail went out, the message may leave memory at
 *	once; inv->step_failed: a Redis step failed and was logged).
 *	Called exactly once per relay__cinv_begin(), as the invocation's
 *	last act: @inv may be freed by it.
 */
typedef struct relay__cinv_up {
	void (*classified)(relay__msg *m, int status,
			   const relay_inv_outcome *o);
	void (*done)(relay__msg *m, relay__cinv *inv);
} relay__cinv_up;

struct relay__cinv {
	/* owner: consumer_inv.c */
	relay__msg *m;                       /* owning message */
	const relay__cinv_up *up;            /* ... and the way back */
	relay_app *app;                      /* reference */
	const char *handler;                 /* the rule's handler, or the
						pinned one (m->pin) */
	int64_t timeout_ms;                  /* the rule's, or pinned */
	int retries;                         /* the rule's, or pinned */
	char *field;                         /* "<app>/<handler>" */
	relay__cinv_state state;
	unsigned int attempt;                /* current claim */
	char token[RELAY_INV_TOKEN_LEN + 1]; /* current claim */
	char reason[384];                    /* last failure (a start
						failure with its fix fits) */
	relay__tail tail;                    /* stderr of the current
						attempt, kept until it
						ends without exhausting
						(inv.h) */
	int has_slots;                       /* holds global + app slot (a
						resource, not a state: given
						back when the handler exits) */
	void *run;                           /* executor handle */
	relay_mono_us started_us;            /* run start */
	int64_t started_wall_ms;             /* ... on the wall clock */
	int traced;                          /* tr holds this attempt's
						trace id */
	char tl[RELAY__TL_ENTRY_MAX];        /* the attempt's timeline
						entry, sent with its
						outcome ("" none; inv.h) */
	int64_t deadline_ms;                 /* current claim's deadline
						(wall) */
	int rec_op;                          /* RECORD: which transition
						(RELAY__REC_*) */
	relay__resend rec;                   /* ... its resends so far */
	int step_failed;                     /* a Redis step failed (logged,
						counted; the message's stuck
						bookkeeping reads it) */
	int fused;                           /* resolved by sending the
						fused success tail */
	/* owner: consumer_trace.c */
	relay__rtrace tr;                    /* current attempt's span */
	/* owner: slots.c */
	relay__slot_wait wait;               /* slot wait queue link */
};

/* The outcome transition an invocation in RECORD sends. */
enum { RELAY__REC_COMPLETE = 0, RELAY__REC_FAILURE, RELAY__REC_EXHAUSTED };

/* The transition table of consumer_inv.c: 1 when an invocation may go
 * from @from to @to, else 0 (also out of range). */
int relay__cinv_state_allowed(relay__cinv_state from, relay__cinv_state to);
/* "claim", ...; "?" out of range. Static string. */
const char *relay__cinv_state_name(relay__cinv_state s);
/* The one function that changes inv->state (an illegal move is a bug:
 * assert()ed in debug and test builds, else done anyway). */
void relay__cinv_to(relay__cinv *inv, relay__cinv_state to);

/* A new (zeroed) invocation of message @m for @app (a reference is
 * taken), reporting back through @up. */
void relay__cinv_init(relay__cinv *inv, relay__msg *m,
		      const relay_app *app, const relay__cinv_up *up);
/* Its handler (borrowed: the rule's or the message's pin), timeout and
 * retries. Returns 0 or RELAY_ENOMEM. */
int relay__cinv_set_handler(relay__cinv *inv, const char *handler,
			    int64_t timeout_ms, int retries);
/* Free what the invocation holds (not @inv itself). */
void relay__cinv_free(relay__cinv *inv);
/* Work on @inv (TODO): slots, try_start, run, record the outcome. When
 * it is resolved (terminal or pending) it calls inv->up->done once. */
void relay__cinv_begin(relay__cinv *inv);
void relay__slots_release(relay_consumer *c, relay__cinv *inv);
/* Give up slot waits and completion resends, cancel running handlers
 * unless @graceful. */
void relay__msg_stop(relay_consumer *c, int graceful);

#endif /* RELAY__CONSUMER_INV_H */
