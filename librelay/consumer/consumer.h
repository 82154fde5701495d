/*
 * librelay/consumer/consumer.h - private: the consumer object and the
 * lifecycle functions of consumer.c. Each file of the engine has its own
 * private header saying what that file owns (doc/architecture.md, "The
 * consumer's files", has the map; tests/check-layering.py enforces it):
 * the fields of relay_consumer below are grouped by the one file that
 * writes them ("owner:"), every other file reads them or calls the
 * owner's functions. Never installed.
 */
#ifndef RELAY__CONSUMER_H
#define RELAY__CONSUMER_H

#include <ev.h>

#include "common.h"
#include "relay/engine.h"
#include "runtime/kind.h"
#include "consumer_exec.h"
#include "consumer_trace.h"

typedef struct relay__msg relay__msg;
typedef struct relay__cinv relay__cinv;
typedef struct relay__stuck relay__stuck;
typedef struct relay__hist relay__hist;

/* Where reading hands each stream entry (relay__read_init()). */
typedef void (*relay__deliver_fn)(relay_consumer *c,
				  const relay_stream_entry *e);

struct relay_consumer {
	/* owner: consumer.c (configuration, set once by relay_consumer_new
	 * and relay_consumer_set_apps) */
	struct ev_loop *loop;
	relay_redis_backend *redis;
	const relay_appset *apps;
	relay_matcher *matcher;       /* of apps' ruleset */
	char *stream, *group, *name, *dlq_key;
	char *outcomes_key;           /* relay:<stream>:outcomes, or NULL:
					 off */
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
	/* slots: c->own_slots, or options.slots shared with others */
	relay_slots *slots;
	relay_slots *own_slots;

	/* owner: consumer.c (lifecycle) */
	int started, stopping, graceful, closing, stopped_called;
	relay_consumer_stopped_fn stopped_cb;
	void *stopped_payload;
	relay_consumer_close_fn close_cb;
	unsigned int ops;             /* outstanding non-message operations
					 (relay__consumer_op()) */
	ev_idle finish_idle;          /* deferred stopped/close callbacks */

	/* owner: consumer_exec.c (the default executor, manual runs, the
	 * availability cache) */
	relay__rt_executor rt_exec;
	unsigned int manual;
	struct manual *manual_runs;
	int kind_ok[RELAY__KIND_COUNT]; /* availability cache per handler
					   kind: 1, -1, 0 */
	relay_mono_us kind_checked_us[RELAY__KIND_COUNT]; /* ... when */
	/* owner: consumer_inv.c (refused starts: RELAY-ENG16 once per
	 * burst) */
	relay_mono_us refused_logged_us; /* last line, 0: none yet */
	uint64_t refused_quiet;       /* refusals since then, not logged */

	/* owner: consumer_trace.c (spans) */
	relay__ctrace trace;

	/* owner: consumer_health.c (Redis health, metrics, histograms) */
	int redis_up;
	int down_logged;
	int64_t backoff_ms;           /* the read backoff */
	char down_reason[120];
	relay_consumer_metrics m;
	relay__hist *hists;
	size_t nhists;

	/* owner: consumer_read.c (reading) */
	relay__deliver_fn deliver;    /* each entry read goes there */
	int group_ok;
	unsigned int reads;           /* XREADGROUPs outstanding */
	size_t read_asked;            /* ... entries they may bring */
	int read_blocking;            /* one of them BLOCKs */
	ev_timer read_timer;          /* retry/poll of reads */
	ev_prepare read_prepare;      /* the refill: one read per loop
					 iteration, before the loop sleeps */
	struct read_token *read_tokens; /* the outstanding reads */
	uint64_t rng;                 /* backoff jitter */
	int in_backoff;               /* read_timer is a backoff */
	int delivering;               /* inside a batch: no new read yet */

	/* owner: consumer_recover.c (reclaim, renewal, XPENDING) */
	int reclaim_busy, renew_busy, pending_busy;
	ev_timer reclaim_timer;
	ev_timer renew_timer;
	ev_timer pending_timer;
	char *reclaim_cursor;

	/* owner: consumer_msg.c (the messages in memory) */
	relay__msg *msgs;
	unsigned int nmsgs;

	/* owner: consumer_tail.c (fused tails waiting to be resent) */
	struct tail_call *tails;

	/* owner: consumer_stuck.c (messages whose steps keep failing) */
	relay__stuck *stuck;
	size_t nstuck;
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

/* An operation other than a message's step starts (@delta 1) or ends
 * (-1); stop waits for them (relay__consumer_check_stopped()). */
void relay__consumer_op(relay_consumer *c, int delta);
/* Stopping and nothing in flight: run the stopped/close callbacks from
 * the loop. */
void relay__consumer_check_stopped(relay_consumer *c);

#endif /* RELAY__CONSUMER_H */
