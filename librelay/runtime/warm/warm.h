/*
 * librelay/runtime/warm/warm.h - private to the warm layer: warm.c
 * (python3 warm and exec parents, the runtime's side), warm_ctl.c (their
 * control protocol), warm_stats.c (counters, memory) and warm_pool.c
 * (node pre-started processes). They include <ev.h>.
 */
#ifndef RELAY__WARM_H
#define RELAY__WARM_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ev.h>

#include "relay/clock.h"
#include "run.h"
#include "runtime.h"
#include "warm_api.h"

#define WARM_MAX_PARENTS 32u
#define WARM_IDLE_MS 300000u
#define WARM_START_TIMEOUT_MS 2000u
/* A parent's start (the sandbox and the interpreter) may take this much
 * longer than start_timeout_ms before it must have said Y. */
#define WARM_START_SLACK_MS 5000u
#define WARM_BACKOFF_MIN_MS 1000u
#define WARM_BACKOFF_MAX_MS 60000u
#define WARM_MSG_MAX 65536u
/* Pre-started processes kept per node app generation. */
#define WARM_POOL_SIZE 2u
#define WARM_POOL_MAX_FAILURES 3u

typedef enum parent_state {
	P_STARTING,   /* spawned, waiting for Y */
	P_READY,      /* serving */
	P_RETIRING,   /* no new requests; freed when its runs are done */
} parent_state;

typedef struct warm_req warm_req;
typedef struct warm_parent warm_parent;

/* One run handed to a parent. */
struct warm_req {
	warm_req *next;
	warm_parent *p;
	relay__start_fn fn;    /* the run's completion callback (run.h) */
	void *payload;         /* ... and its payload: the run */
	relay_proc *proc;
	uint32_t id;
	int cfd[4];            /* the invocation's ends (stdin, stdout,
				* stderr; the go pipe's read end when it
				* has cgroups), until sent */
	int go_w;              /* "g" here once it joined its cgroups */
	char *msg;             /* the R message, until sent */
	size_t msg_len;
	relay__limits_inv *inv;
	bool sent, started;
	relay_mono_us sent_at; /* when the R went: the watchdog's origin */
	pid_t pid;             /* the invocation's process, once started */
	unsigned int hang_looks, hang_stuck; /* warm_hang.c's looks at it */
	uint64_t hang_ticks;   /* its CPU ticks at the last look */
};

struct warm_parent {
	warm_parent *next;
	relay__warm *w;
	struct ev_loop *loop;
	char *key;             /* see make_key() */
	char *app;
	parent_state state;
	pid_t pid;             /* the bwrap process (our child) */
	pid_t server_pid;      /* the server, as seen from here (for RSS) */
	int pidfd;             /* bwrap's exit */
	int ctl;               /* our end of the control socket */
	int out_fd, err_fd;    /* the server's own stdout/stderr */
	ev_io w_ctl, w_exit, w_out, w_err;
	ev_timer w_watchdog;   /* a request unanswered for too long (or no
				* Y): see relay__warm_arm_watchdog() */
	relay_mono_us spawned_at; /* the start bound's origin */
	warm_req *reqs;
	unsigned int inflight;
	relay_mono_us last_used;
	bool exec_server;      /* relay-warm-exec, not the python3 one */
	bool node_server;      /* the node fork server (warm_node.c) */
	ev_timer w_hang;       /* warm_hang.c: its invocations stuck? */
	bool dead;
	bool torn;             /* torn down (unlinked, watchers stopped,
				* fds closed); memory kept while busy */
	unsigned int busy;     /* inside relay__warm_ctl_read(), whose
				* run callbacks may free the parent: the
				* free waits until it returns */
};

/*
 * node: pre-started one-shot processes. V8 cannot fork, so each is a
 * full cold sandbox
 * (same argv building, limits and user as a cold start) started ahead of
 * time and used for exactly one invocation: it reads the handler and
 * message id from the first bytes of its stdin, then runs as a cold start
 * would. A claimed process is replaced in the background.
 */
typedef struct warm_pool warm_pool;

typedef struct pooled_proc {
	struct pooled_proc *next;
	warm_pool *pool;
	relay_proc *proc;       /* our child, not claimed yet */
	ev_child w_child;       /* its death before a claim (default loop) */
	ev_io w_pidfd;          /* ... elsewhere */
	int pidfd;
} pooled_proc;

struct warm_pool {
	warm_pool *next;
	relay__warm *w;
	struct ev_loop *loop;
	char *key;
	char *app;
	relay_exec_spec *spec;  /* what to start (relay__spec_dup) */
	pooled_proc *ready;
	unsigned int nready;
	ev_timer w_refill;      /* refill off the claim's path */
	relay_mono_us last_used;
	unsigned int failures;  /* consecutive start failures */
};

/* A failure remembered per app, so a broken app is not respawned in a
 * tight loop. */
typedef struct warm_backoff {
	struct warm_backoff *next;
	char *app;
	relay_mono_us until;
	uint32_t delay_ms;
} warm_backoff;

struct relay__warm {
	relay__starter base;   /* must be first: rt->starter */
	relay_runtime *rt;
	const relay_runtime_warm_iface *wi;  /* the backend's warm slot */
	warm_parent *parents;
	warm_pool *pools;
	warm_backoff *backoff;
	uint32_t max_parents, idle_ms, start_timeout_ms;
	uint32_t next_id;
	bool node_fork;        /* node apps: the node fork server
				* (RELAY_WARM_NODE, default: where built),
				* not the pool */
	const char *node_why;  /* why not, said once (static), or NULL */
	ev_timer w_idle;
	struct ev_loop *idle_loop;
	relay_runtime_warm_stats *st;  /* &rt->warm_st */
};


static inline void relay__warm_close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

static inline bool relay__warm_key_eq(const char *a, const char *b)
{
	size_t la = strtoul(a, NULL, 10), lb = strtoul(b, NULL, 10);
	const char *pa = strchr(a, ':'), *pb = strchr(b, ':');

	return la == lb && memcmp(pa, pb, la + 1) == 0;
}

/* warm.c */
unsigned int relay__warm_nparents(const relay__warm *w);
void relay__warm_backoff_note(relay__warm *w, const char *app, bool failed);
bool relay__warm_backoff_active(relay__warm *w, const char *app);
uint64_t relay__warm_rss_of(pid_t pid);
/* A warm parent's memory: its server's resident memory plus what its
 * invocation slots hold privately (not the invocations running). */
uint64_t relay__warm_parent_mem(const warm_parent *p);

/* warm.c: a parent's life, used by the control protocol. */
void relay__warm_parent_fault(warm_parent *p, int why, const char *detail);
void relay__warm_parent_free(warm_parent *p);

/* Retire @p: no new requests; freed now when nothing runs on it (so @p
 * may be gone on return unless it has requests). */
void relay__warm_parent_retire(warm_parent *p);

/*
 * The node fork server's hang watchdog (warm_hang.c): _init once per
 * parent; _watch when an invocation of it started (a no-op but for a
 * node fork server); _stop when it is torn down. An invocation found
 * stuck after the fork retires its parent (logged, RELAY-RT07) and is
 * left to its timeout.
 */
void relay__warm_hang_init(warm_parent *p);
void relay__warm_hang_watch(warm_parent *p);
void relay__warm_hang_stop(warm_parent *p);
void relay__warm_req_free(warm_req *q);
void relay__warm_count_states(relay__warm *w);

/* warm_ctl.c: the control protocol (sandbox/warm_proto.h). */
/* The R message of @q for @spec with the environment @env; 0 or an error. */
int relay__warm_build_request(warm_req *q, const relay_exec_spec *spec,
			      const relay__strv *env);
/* Send @q's R with its descriptors (closed here once sent); 0 or -1. */
int relay__warm_req_send(warm_req *q);
/* Take @q off @p's list of requests (not freed). */
void relay__warm_unlink_req(warm_parent *p, warm_req *q);
/*
 * (Re)arm @p's watchdog for its current deadline, or stop it when there is
 * none: a starting parent must say Y within start_timeout_ms +
 * WARM_START_SLACK_MS of its spawn; a ready (or retiring) one must answer
 * the oldest request still unanswered (sent, no S yet) within
 * start_timeout_ms of sending it. A ready parent with nothing unanswered,
 * busy or idle, has no deadline. Call it whenever a request is sent,
 * answered or dropped, and when the parent becomes ready.
 */
void relay__warm_arm_watchdog(warm_parent *p);
/* The monotonic time by which @p must have answered, or 0 for none. */
relay_mono_us relay__warm_deadline(const warm_parent *p);
/* The parent's control socket is readable. */
void relay__warm_ctl_cb(struct ev_loop *loop, ev_io *wio, int revents);
/*
 * Read what @p has already said (without waiting), at most @max messages.
 * Returns 0 when the socket is drained, 1 when more may be waiting, -1
 * when @p was freed (faulted or retired with nothing left).
 */
int relay__warm_ctl_read(warm_parent *p, int max);

/* warm_pool.c */

/* Claim a pre-started process for @spec (node); @key is taken; @env is
 * the invocation's environment (relay__runtime_env()), whose trace
 * variables go into the header. Returns as the starter's start (run.h)
 * does; 0 with *proc and *prefix set. */
int relay__warm_pool_claim(relay__warm *w, struct ev_loop *loop,
			   const relay_exec_spec *spec, char *key,
			   const relay__strv *env, relay_proc **proc,
			   relay__buf *prefix);
/* Kill the pool's processes and free it. */
void relay__warm_pool_free(warm_pool *q);
/* Resident memory of its processes (and of a process tree). */
uint64_t relay__warm_pool_rss(const warm_pool *q);
uint64_t relay__warm_tree_rss(pid_t pid, int depth);
/* Up to @max children of @pid (/proc/<pid>/task/<pid>/children) into
 * @out; returns how many (0 when it is gone). */
int relay__warm_children(pid_t pid, pid_t *out, int max);

#endif /* RELAY__WARM_H */
