/*
 * librelay/consumer/consumer.h - private: the stream engine's structures,
 * shared by consumer.c (lifecycle, reading, recovery, metrics),
 * consumer_msg.c (one message's life) and consumer_exec.c (executors,
 * manual runs). Never installed.
 */
#ifndef RELAY__CONSUMER_H
#define RELAY__CONSUMER_H

#include <ev.h>

#include "common.h"
#include "relay/engine.h"
#include "relay/invocation.h"
#include "relay/dlq.h"

typedef struct relay__msg relay__msg;
typedef struct relay__inv relay__inv;

/* One matched invocation of a message. */
typedef enum relay__inv_status {
	RELAY__INV_TODO = 0,        /* not looked at yet */
	RELAY__INV_DONE_OK = 1,     /* terminal: succeeded */
	RELAY__INV_DONE_EXH = 2,    /* terminal: exhausted */
	RELAY__INV_UNRESOLVED = 3,  /* not terminal: message stays pending */
} relay__inv_status;

struct relay__inv {
	relay__msg *m;                       /* owning message */
	relay_app *app;                      /* reference */
	const relay_app_rule *rule;          /* borrowed from app; NULL for
						a schedule occurrence */
	const char *handler;                 /* the rule's handler, or the
						pinned one (m->pin) */
	int64_t timeout_ms;                  /* the rule's, or pinned */
	int retries;                         /* the rule's, or pinned */
	char *field;                         /* "<app>/<handler>" */
	relay__inv_status status;
	unsigned int attempt;                /* current claim */
	char token[RELAY_INV_TOKEN_LEN + 1]; /* current claim */
	int dlq;                             /* exhausted: entry exists */
	char reason[160];                    /* last failure */
	relay__inv *wait_next;               /* slot wait queue link */
	int waiting;                         /* in the slot wait queue */
	int has_slots;                       /* holds global + app slot */
	void *run;                           /* executor handle */
	relay_mono_us started_us;            /* run start */
};

/* One message in memory. */
struct relay__msg {
	relay_consumer *c;
	relay__msg *prev, *next;     /* c->msgs list */
	char *id;                    /* stream id */
	char *key;                   /* invocation state hash */
	char *event;                 /* owned copy of the raw value, or NULL */
	size_t event_len;
	int malformed;               /* relay_dlq_malformed, or -1 */
	int schedule;                /* schedule envelope */
	int sched_obsolete;          /* ... whose schedule is gone: ACK */
	int sched_hold;              /* ... whose app is invalid now: keep
					pending */
	char *sched_desc;            /* "app/schedule@scheduled_at" (logs) */
	char *sched_occ;             /* its occurrence_id (admission) */
	char *pin;                   /* admission pin sent / stored */
	char *run_event;             /* handler stdin of an occurrence */
	size_t run_event_len;
	char *pl_reason;             /* placeholder reason */
	char *pl_event;              /* placeholder event field */
	size_t pl_event_len;         /* its bytes (a raw value may hold NUL) */
	int reclaimed;               /* delivered by XAUTOCLAIM */
	int gone;                    /* stream entry deleted while in
					memory: counted once, no further
					attempts, reference cleared */
	int lost_logged;             /* ownership loss reported */
	int body_busy;               /* body check in flight */
	relay__inv *invs;            /* matched invocations, dispatch order */
	size_t ninv;
	size_t cur;                  /* the invocation being worked on */
	size_t dlq_cur;              /* next exhausted invocation to persist */
	long long deliveries;        /* diagnostic PEL count (DLQ path) */
	int class_pending;           /* claim_classification in flight */
	int pipelined;               /* first try_start sent with it */
	int class_failed;            /* ... and it failed: do not ACK */
	int finish_deferred;         /* finished before its reply */
	int step_failed;             /* a Redis step failed this delivery */
	ev_timer slot_timer;         /* bounded slot wait */
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
} relay__rt_executor;

struct relay_consumer {
	struct ev_loop *loop;
	relay_redis_backend *redis;
	const relay_appset *apps;
	relay_matcher *matcher;       /* of apps' ruleset */
	char *stream, *group, *name, *dlq_key;
	unsigned int max_concurrency, max_buffered;
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

	/* lifecycle */
	int started, group_ok, stopping, graceful, closing, stopped_called;
	relay_consumer_stopped_fn stopped_cb;
	void *stopped_payload;
	relay_consumer_close_fn close_cb;
	unsigned int ops;             /* outstanding non-message operations */

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
	ev_timer reclaim_timer;
	ev_timer renew_timer;
	ev_timer pending_timer;
	ev_idle finish_idle;          /* deferred stopped/close callbacks */
	char *reclaim_cursor;
	struct read_token *read_tokens; /* the outstanding reads */

	/* messages */
	relay__msg *msgs;
	unsigned int nmsgs;

	/* slots */
	unsigned int running;
	relay__app_slots *slots;
	size_t nslots;
	relay__inv *wait_head, *wait_tail;

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

/* Durations after time_scale. */
int64_t relay__consumer_scaled(const relay_consumer *c, int64_t ms);

/* consumer.c */
void relay__consumer_redis_ok(relay_consumer *c);
void relay__consumer_redis_failed(relay_consumer *c, int status,
				  const char *what);
void relay__consumer_kick(relay_consumer *c);  /* read more / finish */
void relay__consumer_hist_add(relay_consumer *c, const char *app,
			      const char *handler, uint64_t duration_us);
void relay__consumer_check_stopped(relay_consumer *c);
void relay__consumer_detach_read(relay_consumer *c);

/* consumer_msg.c */
void relay__msg_next(relay__msg *m);
void relay__msg_step_failed(relay_consumer *c, int status, const char *what,
			    relay__msg *m);
/* consumer_inv.c */
void relay__inv_begin(relay__inv *inv);
void relay__msg_deliver(relay_consumer *c, const relay_stream_entry *e,
			int reclaimed);
void relay__msg_missing(relay_consumer *c, const char *id);
/* The body of in-memory @m is gone: count it once, finish without
 * further attempts (consumer_msg.c). */
void relay__msg_gone(relay__msg *m);
relay__msg *relay__msg_find(relay_consumer *c, const char *id);
void relay__msg_stop(relay_consumer *c, int graceful);
void relay__slots_release(relay_consumer *c, relay__inv *inv);

/* consumer_msg.c: the classification reply (also for schedule
 * occurrences, whose claim carries the admission pin). */
void relay__msg_classified(relay__msg *m, int status,
			   const relay_inv_outcome *o);
void relay__msg_ack(relay__msg *m);
/* Send the fused success tail for @inv (the last one of @m) and free
 * @m. Returns 0 (then @m is gone) or the send error (@m untouched). */
int relay__msg_tail(relay__msg *m, relay__inv *inv);
void relay__msg_release(relay__msg *m, const char *why);
/* Route the message to the DLQ placeholder path; @detail (a schedule
 * envelope's problem) is the reason after "malformed schedule
 * occurrence: ". Returns 0 or RELAY_ENOMEM. */
int relay__msg_placeholder(relay__msg *m, relay_dlq_malformed kind,
			   const char *detail, const char *ev, size_t len);

/* consumer_sched.c: schedule occurrences. */
/* Classify an envelope (m->event): placeholder, obsolete, hold, or one
 * invocation. Returns 0 or RELAY_ENOMEM. */
int relay__sched_classify(relay__msg *m);
/* Send claim_classification (with the pin when there is one). */
int relay__sched_claim(relay__msg *m);
/* After the classification reply: obsolete → ACK, hold → release,
 * else run the invocation. @first: this delivery claimed it. */
void relay__sched_classified(relay__msg *m, int first);

/* consumer_stuck.c */
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

/* consumer_exec.c */
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

/* Run one reclaim pass now, as the reclaim timer does (tests use it with
 * a fixed clock). */
void relay__consumer_reclaim_now(relay_consumer *c);
/* Renew ownership of the messages in memory now. */
void relay__consumer_renew_now(relay_consumer *c);

#endif /* RELAY__CONSUMER_H */
