/*
 * librelay/consumer/consumer.h - private: the stream engine's structures
 * and the functions its files share, one section per file: consumer.c
 * (lifecycle, reading, recovery, metrics), consumer_msg.c (one message's
 * life), consumer_inv.c (one invocation's life, concurrency slots),
 * consumer_sched.c (schedule occurrences), consumer_exec.c (executors,
 * manual runs), consumer_stuck.c (steps that keep failing). Never
 * installed.
 */
#ifndef RELAY__CONSUMER_H
#define RELAY__CONSUMER_H

#include <ev.h>

#include "common.h"
#include "relay/engine.h"
#include "relay/invocation.h"
#include "relay/dlq.h"
#include "inv/inv.h"
#include "consumer_trace.h"

typedef struct relay__msg relay__msg;
typedef struct relay__cinv relay__cinv;

/* A completion resent after its reply was lost (relay__resend_due()). */
typedef struct relay__resend {
	unsigned int tries;                  /* resends so far */
	int status;                          /* the last transport error */
} relay__resend;

/*
 * The life of one matched invocation (consumer_inv.c owns it: the
 * transition table is at the top of that file, relay__cinv_to() is the
 * one function that changes it). Zero is the state calloc gives.
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

struct relay__cinv {
	relay__msg *m;                       /* owning message */
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
	relay__cinv *wait_next;              /* slot wait queue link */
	int has_slots;                       /* holds global + app slot (a
						resource, not a state: given
						back when the handler exits) */
	void *run;                           /* executor handle */
	relay_mono_us started_us;            /* run start */
	int64_t deadline_ms;                 /* current claim's deadline
						(wall ms) */
	int rec_op;                          /* RECORD: which transition
						(RELAY__REC_*) */
	relay__resend rec;                   /* ... its resends so far */
	relay__rtrace tr;                    /* current attempt's span
						(consumer_trace.c) */
};

/* The outcome transition an invocation in RECORD sends. */
enum { RELAY__REC_COMPLETE = 0, RELAY__REC_FAILURE, RELAY__REC_EXHAUSTED };

/*
 * A completion whose reply was lost (RELAY_ECLOSED, RELAY_ETIMEOUT: the
 * write may or may not have happened) is resent with the same attempt
 * and token: first after RELAY__REC_RETRY_MS, doubling up to
 * RELAY__REC_RETRY_MAX_MS, at most RELAY__REC_RETRY_TRIES times (4.55 s
 * in all, enough to outlast a Redis Cluster failover), only while the
 * claim's deadline is ahead and the consumer is not stopping. The
 * transitions are fenced by the claim, so a resend after an applied
 * write changes nothing.
 */
#define RELAY__REC_RETRY_MS 50
#define RELAY__REC_RETRY_MAX_MS 1000
#define RELAY__REC_RETRY_TRIES 8

/*
 * The life of one message (consumer_msg.c owns it: the transition table
 * is at the top of that file, relay__msg_to() is the one function that
 * changes it). Zero is the state calloc gives.
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
 * the placeholder route; not a state: it picks the path). */
typedef enum relay__msg_route {
	RELAY__ROUTE_EVENT = 0,       /* an event: matched (ninv may be 0) */
	RELAY__ROUTE_MALFORMED,       /* DLQ placeholder, then ACK */
	RELAY__ROUTE_OCC,             /* schedule occurrence: one invocation */
	RELAY__ROUTE_OCC_HOLD,        /* ... its app is invalid now: pending */
	RELAY__ROUTE_OCC_OBSOLETE,    /* ... its schedule is gone: ACK */
	RELAY__ROUTE_OCC_MALFORMED,   /* ... refused: DLQ placeholder, ACK */
} relay__msg_route;

/* What the ownership renewal knows of the message's stream entry
 * (consumer.c; not a state of the message's life: observed at any time,
 * consulted at its next step). */
typedef enum relay__msg_body {
	RELAY__BODY_UNCHECKED = 0,   /* nothing known */
	RELAY__BODY_CHECKING,        /* XRANGE in flight */
	RELAY__BODY_LOST,            /* exists, owned elsewhere (logged) */
	RELAY__BODY_GONE,            /* deleted: counted once, no further
					attempts, reference cleared */
} relay__msg_body;

/* One message in memory. */
struct relay__msg {
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
	char *sched_desc;            /* "app/schedule@scheduled_at" (logs) */
	char *sched_occ;             /* its occurrence_id (admission) */
	char *pin;                   /* admission pin sent / stored */
	char *run_event;             /* handler stdin of an occurrence */
	size_t run_event_len;
	char *pl_reason;             /* placeholder reason */
	char *pl_event;              /* placeholder event field */
	size_t pl_event_len;         /* its bytes (a raw value may hold NUL) */
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
	ev_timer slot_timer;         /* bounded slot wait */
	ev_timer rec_timer;          /* resend of a lost completion */
	relay__mtrace *trace;        /* the entry's trace context, or NULL
					(consumer_trace.c) */
};

/* A message whose Redis step keeps failing (consumer_stuck.c). */
typedef struct relay__stuck {
	char *id;
	char reason[160];            /* "<step>: <error>" */
	unsigned int failures;       /* backoff steps so far */
	relay_mono_us retry_us;      /* deliveries skipped until then */
	relay_wall_ms since_ms;      /* first failure */
} relay__stuck;

/* Per-app running count (concurrency slots). */
typedef struct relay__app_slots {
	char *name;
	unsigned int running;
} relay__app_slots;

/* The concurrency limiter (slots.c): owned by one consumer, or shared by
 * several (options.slots). Its waiters belong to any of them. */
struct relay_slots {
	unsigned int max;             /* MAX_CONCURRENCY */
	unsigned int running;         /* slots held, every consumer */
	relay__app_slots *apps;       /* per-app counts, every consumer */
	size_t napps;
	relay__cinv *wait_head, *wait_tail; /* FIFO, every consumer */
	unsigned int users;           /* consumers not yet freed */
};

/* One app/handler duration histogram. */
typedef struct relay__hist {
	char *app;
	char *handler;
	relay_consumer_histogram h;  /* app/handler pointers set on visit */
} relay__hist;

/* The default executor: relay_runtime. */
typedef struct relay__rt_executor {
	relay_consumer_executor parent;
	relay_runtime *rt;
	relay_error last;    /* why the last run could not start */
} relay__rt_executor;

struct relay_consumer {
	struct ev_loop *loop;
	relay_redis_backend *redis;
	const relay_appset *apps;
	relay_matcher *matcher;       /* of apps' ruleset */
	char *stream, *group, *name, *dlq_key;
	unsigned int max_buffered;
	size_t max_event_bytes;
	int64_t retention_ms;
	unsigned int scale;
	const relay_clock *clock;
	relay_logger logger;
	relay_output_fn output;
	void *output_payload;
	relay_consumer_available_fn available;
	void *available_payload;
	relay_consumer_executor *exec;
	relay__rt_executor rt_exec;
	relay__ctrace trace;          /* spans (consumer_trace.c) */

	/* lifecycle */
	int started, group_ok, stopping, graceful, closing, stopped_called;
	relay_consumer_stopped_fn stopped_cb;
	void *stopped_payload;
	relay_consumer_close_fn close_cb;
	unsigned int ops;             /* outstanding non-message operations */
	struct tail_call *tails;      /* fused tails waiting to be resent */

	/* Redis health */
	int redis_up;
	int down_logged;
	int64_t backoff_ms;
	char down_reason[120];

	/* reading and recovery */
	int reclaim_busy, renew_busy, pending_busy;
	unsigned int reads;           /* XREADGROUPs outstanding */
	size_t read_asked;            /* ... entries they may bring */
	int read_blocking;            /* one of them BLOCKs */
	ev_timer read_timer;          /* retry/poll of reads */
	ev_prepare read_prepare;      /* the refill: one read per loop
					 iteration, before the loop sleeps */
	ev_timer reclaim_timer;
	ev_timer renew_timer;
	ev_timer pending_timer;
	ev_idle finish_idle;          /* deferred stopped/close callbacks */
	char *reclaim_cursor;
	struct read_token *read_tokens; /* the outstanding reads */

	/* messages */
	relay__msg *msgs;
	unsigned int nmsgs;

	/* slots: c->own_slots, or options.slots shared with others */
	relay_slots *slots;
	relay_slots *own_slots;

	/* metrics */
	relay_consumer_metrics m;
	relay__hist *hists;
	size_t nhists;

	/* messages whose steps keep failing */
	relay__stuck *stuck;
	size_t nstuck;

	/* manual runs in progress */
	unsigned int manual;
	struct manual *manual_runs;

	/* misc */
	uint64_t rng;                 /* backoff jitter */
	int in_backoff;               /* read_timer is a backoff */
	int delivering;               /* inside a batch: no new read yet */
	int python_ok, node_ok;       /* availability cache: 1, -1, 0 */
	relay_mono_us python_checked_us, node_checked_us; /* ... per
							    interpreter */
};

/*
 * A state machine's table (one per machine, at the top of the file that
 * owns it): bit @to of table[@from] set = the move is legal. Out-of-range
 * states are never legal.
 */
static inline int relay__fsm_allowed(const unsigned int *table,
				     unsigned int n, unsigned int from,
				     unsigned int to)
{
	return from < n && to < n && ((table[from] >> to) & 1u);
}

static inline const char *relay__fsm_name(const char *const *names,
					  unsigned int n, unsigned int s)
{
	return s < n ? names[s] : "?";
}

/* ---- consumer.c: lifecycle, reading, recovery, health, metrics ---- */

/* Durations after time_scale. */
int64_t relay__consumer_scaled(const relay_consumer *c, int64_t ms);
void relay__consumer_redis_ok(relay_consumer *c);
void relay__consumer_redis_failed(relay_consumer *c, int status,
				  const char *what);
void relay__consumer_kick(relay_consumer *c);  /* read more / finish */
void relay__consumer_hist_add(relay_consumer *c, const char *app,
			      const char *handler, uint64_t duration_us);
/* How an attempt ended, or that its invocation is out of attempts. */
typedef enum relay__outcome {
	RELAY__OUT_SUCCEEDED,
	RELAY__OUT_FAILED,
	RELAY__OUT_TIMED_OUT,
	RELAY__OUT_EXHAUSTED,
} relay__outcome;
/* Count @what in the metrics and @app/@handler's outcome counters. */
void relay__consumer_outcome(relay_consumer *c, const char *app,
			     const char *handler, relay__outcome what);
void relay__consumer_check_stopped(relay_consumer *c);
void relay__consumer_detach_read(relay_consumer *c);
/* Run one reclaim pass now, as the reclaim timer does (tests use it with
 * a fixed clock). */
void relay__consumer_reclaim_now(relay_consumer *c);
/* Renew ownership of the messages in memory now. */
void relay__consumer_renew_now(relay_consumer *c);

/* ---- slots.c: the concurrency limiter's counts ---------------------- */

/* The per-app count of @name (created at zero); NULL on ENOMEM. */
relay__app_slots *relay__slots_app(relay_slots *s, const char *name);

/* ---- consumer_msg.c: one message's life (relay__msg_state) ---------- */

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
/* A Redis step of @m failed with @status: counted, logged (at most once
 * per backoff step for a message's own trouble), message kept pending. */
void relay__msg_step_failed(relay_consumer *c, int status, const char *what,
			    relay__msg *m);
/* The log part of it, for a failure already counted (message @id);
 * returns 1 when it is the message's own trouble (an error reply). */
int relay__msg_step_note(relay_consumer *c, int status, const char *what,
			 const char *id);
void relay__msg_ack(relay__msg *m);
/* Send the fused success tail for @inv (the last one of @m) and free
 * @m. Returns 0 (then @m is gone) or the send error (@m untouched). */
int relay__msg_tail(relay__msg *m, relay__cinv *inv);
/* Give up every fused tail waiting to be resent (stop). */
void relay__msg_tails_stop(relay_consumer *c);
/* A completion @what of message @id failed with @status: 1 when it is
 * to be resent (a transport error, the consumer not stopping, tries left
 * in @rs, the claim's @deadline_ms (wall) after the resend); then @rs
 * counts it, the resend is logged (DEBUG) and *delay_ms is the backoff
 * before it (real time: time_scale does not apply, as it does not to
 * the claim's deadline). 0: not resent, @rs untouched. */
int relay__resend_due(relay_consumer *c, relay__resend *rs, int status,
		      int64_t deadline_ms, const char *what, const char *id,
		      int64_t *delay_ms);
/* A completion resent after a lost reply (@rs) got @result: logged once
 * (INFO). Nothing when it was never resent. */
void relay__resend_answered(relay_consumer *c, const relay__resend *rs,
			    const char *what, relay_inv_result result,
			    const char *id);
void relay__msg_release(relay__msg *m, const char *why);
/* Route the message to the DLQ placeholder path; @detail (a schedule
 * envelope's problem) is the reason after "malformed schedule
 * occurrence: ". Returns 0 or RELAY_ENOMEM. */
int relay__msg_placeholder(relay__msg *m, relay_dlq_malformed kind,
			   const char *detail, const char *ev, size_t len);

/* ---- consumer_inv.c: one invocation's life (relay__cinv_state) ------ */

/* The transition table of consumer_inv.c, as relay__msg_state_allowed(). */
int relay__cinv_state_allowed(relay__cinv_state from, relay__cinv_state to);
const char *relay__cinv_state_name(relay__cinv_state s);
/* The one function that changes inv->state (asserted like
 * relay__msg_to()). */
void relay__cinv_to(relay__cinv *inv, relay__cinv_state to);

/* Work on @inv (TODO): slots, try_start, run, record the outcome. */
void relay__cinv_begin(relay__cinv *inv);
void relay__slots_release(relay_consumer *c, relay__cinv *inv);
/* Give up slot waits and completion resends, cancel running handlers
 * unless @graceful. */
void relay__msg_stop(relay_consumer *c, int graceful);

/* ---- consumer_sched.c: schedule occurrences (the engine's side) ----- */

/* Classify an envelope (m->event): placeholder, obsolete, hold, or one
 * invocation. Returns 0 or RELAY_ENOMEM. */
int relay__csched_classify(relay__msg *m);
/* Send claim_classification (with the pin when there is one). */
int relay__csched_claim(relay__msg *m);
/* After the classification reply: obsolete → ACK, hold → release,
 * else run the invocation. @first: this delivery claimed it. */
void relay__csched_classified(relay__msg *m, int first);

/* ---- consumer_stuck.c: messages whose Redis step keeps failing ------ */

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

/* ---- consumer_exec.c: the executor seam, manual runs ---------------- */

void relay__rt_executor_init(relay__rt_executor *x, relay_runtime *rt);
int relay__consumer_default_available(const relay_app *app, void *payload);
void relay__consumer_manual_close(relay_consumer *c);
/* Fill an exec spec for @handler of @app (pointers borrowed). */
void relay__consumer_exec_spec_h(relay_exec_spec *s, const relay_app *app,
				 const char *handler, int64_t timeout_ms,
				 const char *msg_id, const char *event,
				 size_t len);
/* Fill an exec spec for @rule of @app (pointers borrowed). */
void relay__consumer_exec_spec(relay_exec_spec *s, const relay_app *app,
			       const relay_app_rule *rule, const char *msg_id,
			       const char *event, size_t len);

#endif /* RELAY__CONSUMER_H */
