/*
 * tests/lib/engine_fixture.h - the fixture of the engine tests, compiled
 * once into the static library `relaytest-engine` (tests/lib/meson.build):
 * a libev loop, a Redis backend on it (the memory backend behind a
 * fault-injecting decorator, or a real redis-server), an app set written
 * to a temp dir, a scripted in-process executor that counts runs, and
 * helpers to issue commands and poll with deadlines.
 *
 * Public and test-only headers only: the library's own file
 * (engine_fixture.c) is the one place that reaches librelay's private
 * headers; engine_hooks.h offers the engine's test hooks.
 *
 * Not thread-safe: one fixture per test case, on the test's thread.
 */
#ifndef RELAYTEST_ENGINE_FIXTURE_H
#define RELAYTEST_ENGINE_FIXTURE_H

#include <ev.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "relaytest.h"
#include "relay/dlq.h"
#include "relay/engine.h"
#include "relay/invocation.h"
#include "relay/relay_libev.h"
#include "relay/sys/redis.h"
#include "relay/sys/runtime.h"

/* ---- scripted executor ------------------------------------------------- */

typedef struct h_script {
	char name[96];      /* "app/handler" */
	int fail;           /* 1: every run fails with exit status 3;
			       2: every run times out;
			       3: every start is refused by the system
			       (RELAY_RUN_REFUSED) */
	int runs;           /* runs started */
	int hold;           /* runs wait for h_release() */
	char last_id[64];   /* RELAY_MESSAGE_ID of the last run */
	char last_event[512];
	size_t last_len;
	char last_tp[64];   /* the last run's spec traceparent ("" none) */
	char last_ts[600];  /* ... tracestate */
	char last_bg[256];  /* ... baggage */
} h_script;

typedef struct h_job {
	struct h_exec *x;
	struct h_job *next;
	h_script *s;
	relay_run_done_fn done;
	void *payload;
	int cancelled;
	int held;
	ev_timer t;
} h_job;

typedef struct h_exec {
	relay_consumer_executor parent;
	struct ev_loop *loop;
	h_script s[32];
	int ns;
	h_job *jobs;
	int active;
	int total_runs;
} h_exec;

h_script *h_script_get(h_exec *x, const char *app, const char *hd);

void h_job_fire(struct ev_loop *loop, ev_timer *w, int revents);

int h_run(relay_consumer_executor *xe,
	  const relay_exec_spec *spec,
	  relay_output_fn output, relay_run_done_fn done,
	  void *payload, void **handle);

void h_cancel(relay_consumer_executor *xe, void *handle);

/* Let every held run of @name (NULL: all) finish. */
void h_release(h_exec *x, const char *name);

/* ---- fault-injecting Redis decorator ------------------------------------- */

typedef struct h_fault {
	relay_redis_backend parent;
	relay_redis_backend *inner;
	struct ev_loop *loop;
	int fail_script[RELAY_REDIS_SCRIPT_COUNT_]; /* fail the next N */
	int refuse_script[RELAY_REDIS_SCRIPT_COUNT_]; /* refuse (nonzero
						    return) the next N */
	int close_script[RELAY_REDIS_SCRIPT_COUNT_]; /* fail the next N with
						   RELAY_ECLOSED, not run */
	int lose_script[RELAY_REDIS_SCRIPT_COUNT_]; /* run the next N but
						  lose the reply
						  (RELAY_ECLOSED) */
	int scripts[RELAY_REDIS_SCRIPT_COUNT_];     /* calls seen */
	int xreadgroups;                             /* XREADGROUPs seen */
} h_fault;

typedef struct h_fail_call {
	relay_redis_backend *b;
	relay_redis_reply_cb cb;
	void *payload;
	int status;         /* 0: RELAY_EBACKEND */
	ev_timer t;
} h_fail_call;

void h_fail_fire(struct ev_loop *loop, ev_timer *w, int revents);

/* A script that ran, whose reply the caller never gets (the connection
 * dropped after the write): the caller sees RELAY_ECLOSED. */
void h_lost_reply(relay_redis_backend *inner, int status,
		  relay_redis_reply *reply, void *payload);

int h_fault_command(relay_redis_backend *b, int argc,
		    const char *const *argv,
		    const size_t *argvlen,
		    relay_redis_reply_cb cb, void *payload);

int h_fault_script(relay_redis_backend *b, relay_redis_script op,
		   int numkeys, int argc, const char *const *argv,
		   const size_t *argvlen, relay_redis_reply_cb cb,
		   void *payload);

const char *h_fault_errstr(const relay_redis_backend *b);

void h_fault_free(relay_redis_backend *b);

/* ---- the fixture ------------------------------------------------------- */

typedef struct h_ctx {
	struct ev_loop *loop;
	relay_clock_fixed fclock;
	const relay_clock *clock;
	h_fault *fault;             /* NULL on a real server */
	relay_redis_backend *redis;
	relay_redis_backend *raw;   /* what commands go to */
	char dir[128];
	relay_appset *apps;
	h_exec exec;
	relay_consumer *c;
	relay_consumer_options o;
	relay_runtime *rt;
	ev_timer tick;
	int logs_down, logs_up;
	int eng[32];                /* log lines per RELAY-ENGnn */
	int eng_warn[32];           /* ... at WARN or above */
	int closed;
	int avail_b;                /* app "b" available? */
} h_ctx;

void h_log(void *payload, relay_log_level lvl, const char *msgid,
	   const char *msg);

void h_tick(struct ev_loop *loop, ev_timer *w, int revents);

void h_write_app(h_ctx *h, const char *name, const char *yaml);

int h_available(const relay_app *app, void *payload);

/* Open everything but the consumer. @uri NULL: memory backend with a
 * fixed clock. */
void h_init(h_ctx *h, const char *uri);

void h_load_apps(h_ctx *h);

void h_start(h_ctx *h);

relay_consumer_metrics h_metrics(h_ctx *h);

/* Run the loop until @cond holds or @ms of real time passed. */
#define H_UNTIL(h, cond, ms)                                              \
	do {                                                              \
		ev_tstamp end_ = ev_time() + (ms) / 1000.0;               \
		while (!(cond) && ev_time() < end_)                       \
			ev_run((h)->loop, EVRUN_ONCE);                    \
	} while (0)

/* Run the loop for @ms of real time. */
void h_settle(h_ctx *h, int ms);

typedef struct h_reply {
	int done, status;
	relay_redis_reply *r;
} h_reply;

void h_reply_cb(relay_redis_backend *b, int status,
		relay_redis_reply *r, void *payload);

/* One command through the backend; the reply is the caller's. */
relay_redis_reply *h_cmdv(h_ctx *h, int argc, const char **argv,
			  const size_t *lens);

#define H_CMD(h, ...)                                                     \
	h_cmdv(h, (int)(sizeof((const char *[]){ __VA_ARGS__ }) /         \
			sizeof(const char *)),                            \
	       (const char *[]){ __VA_ARGS__ }, NULL)

/* XADD events * event @json; returns the id (static buffer). */
const char *h_xadd_field(h_ctx *h, const char *field,
			 const char *v,
			 size_t len);

const char *h_xadd(h_ctx *h, const char *json);

long long h_int(h_ctx *h, relay_redis_reply *r);

/* PEL size of the group. */
long long h_pel(h_ctx *h);

/* HGET of the message's state hash; "" when absent (static buffer). */
const char *h_state(h_ctx *h, const char *id, const char *field);

long long h_pttl(h_ctx *h, const char *id);

/* Every DLQ entry, parsed; *n receives the count. */
relay_dlq_record *h_dlq(h_ctx *h, size_t *n);

void h_dlq_free(relay_dlq_record *recs, size_t n);

size_t h_dlq_count(h_ctx *h);

/* Advance the fixed clock. */
void h_advance(h_ctx *h, int64_t ms);

/* A retry round: advance the fixed clock by @ms, let recovery claim what
 * is due now, and let the loop run what that starts. */
void h_retry_round(h_ctx *h, int64_t ms);

extern int h_closed_flag;  /* set by h_closed() */

void h_closed(relay_consumer *c);

void h_cleanup(h_ctx *h);

/* ---- the fused success tail (both backends) ---- */

typedef struct fuse_res {
	int done, status;
	relay_inv_outcome o;
} fuse_res;

void fuse_cb(int status, const relay_inv_outcome *o, void *payload);

/*
 * The fused success tail (COMPLETE_ACK) keeps the guarantees of the three
 * steps it replaces: a stale token writes nothing and acknowledges
 * nothing; an XACK that fails leaves the state written ("ok") and no
 * retention; the live claim is marked ok, acknowledged and retained.
 */
void fused_tail_guarantees(h_ctx *h);

/* ---- the engine's test hooks ------------------------------------------ */

/* Run @c's reclaim pass (XAUTOCLAIM of idle entries) now. */
void h_reclaim_now(relay_consumer *c);
/* Run @c's ownership renewal of its in-flight messages now. */
void h_renew_now(relay_consumer *c);
/* 1 once @c has created (or found) its consumer group. */
int h_group_ok(const relay_consumer *c);

#endif /* RELAYTEST_ENGINE_FIXTURE_H */
