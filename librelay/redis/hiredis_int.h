/*
 * librelay/redis/hiredis_int.h - private: the hiredis backend's state,
 * shared by its two files: redis_async.c (connections, commands, scripts,
 * lifetime) and redis_cluster.c (Redis Cluster: known nodes, MOVED/ASK,
 * TRYAGAIN/CLUSTERDOWN resends). Never installed.
 */
#ifndef RELAY__REDIS_HIREDIS_INT_H
#define RELAY__REDIS_HIREDIS_INT_H

#include <ev.h>
#include <hiredis/async.h>
#include <hiredis/hiredis.h>

#include "backend.h"

enum hr_state { HR_DISCONNECTED, HR_CONNECTING, HR_CONNECTED };

typedef struct hr_backend {
	relay_redis_backend parent;     /* must be first */
	struct ev_loop *loop;
	int own_loop;                   /* private loop for sync use */
	relay__redis_uri uri;
	relay_redis_options opts;
	redisAsyncContext *ac;
	redisAsyncContext *retiring;    /* left after MOVED, draining */
	redisAsyncContext *ask_ac;      /* side connection for ASK */
	char *ask_host;
	int ask_port;
	struct hr_cmd *waiting;         /* commands waiting to be resent */
	const redisAsyncContext *dead_ac; /* failed before it connected */
	relay__redis_node *nodes;       /* known nodes (TCP only) */
	size_t nnodes;
	size_t cur;                     /* the target: nodes[cur] */
	int cluster;                    /* 1, 0, -1 not known yet */
	enum hr_state state;
	int closing;
	int refs;                       /* redis_async.c, "Lifetime" */
	int setup_failed;               /* AUTH/SELECT refused: keep errstr */
	ev_timer connect_timer;
	ev_timer reconnect_timer;
	int reconnect_ms;               /* next backoff delay */
	unsigned int seed;              /* jitter */
	char sha[RELAY_REDIS_SCRIPT_COUNT_][41];
	int loading[RELAY_REDIS_SCRIPT_COUNT_];
	char errstr[160];
} hr_backend;

typedef struct hr_cmd {
	hr_backend *b;
	relay_redis_reply_cb cb;
	void *payload;
	ev_timer timer;
	int done;                       /* callback already ran */
	int script;                     /* op + 1 for EVALSHA calls, else 0 */
	char *fmt;                      /* the formatted command, kept for */
	size_t fmtlen;                  /* a resend (MOVED, ASK, NOSCRIPT) */
	long long block_ms;             /* BLOCK of XREAD(GROUP): extra time */
	int redirects;                  /* MOVED/ASK followed so far */
	int reloaded;                   /* resent once after NOSCRIPT */
	ev_timer again;                 /* resend after TRYAGAIN/CLUSTERDOWN */
	struct hr_cmd *wnext;           /* in b->waiting while it waits */
	int waiting;
} hr_cmd;

/* A command follows at most this many MOVED/ASK replies. */
#define HR_MAX_REDIRECTS 5
/* TRYAGAIN/CLUSTERDOWN: resend after this delay, within the command
 * timeout. */
#define HR_AGAIN_S 0.05

/* ---- redis_async.c ---- */

/* A new context to @host:@port (or the URI's unix socket), attached,
 * AUTH queued, holding a reference on @b; NULL on failure (errstr). */
redisAsyncContext *relay__hr_open_ctx(hr_backend *b, const char *host,
				      int port);
/* Open the main connection to nodes[cur] (or the unix socket). */
void relay__hr_connect(hr_backend *b);
/* Connected or connecting (0), or RELAY_ECLOSED. */
int relay__hr_ensure_connection(hr_backend *b);
/* Leave the main connection after a MOVED: it drains, then closes. */
void relay__hr_retire(hr_backend *b);
/* Let go of a side context at once (its commands: RELAY_ECLOSED). */
void relay__hr_drop_side(hr_backend *b, redisAsyncContext **slot);
/* (Re)start @c's command timeout. */
void relay__hr_start_timer(hr_backend *b, hr_cmd *c);
/* The reply callback of every command. */
void relay__hr_on_reply(redisAsyncContext *ac, void *reply, void *privdata);
/* Run @c's callback once (a no-op after the first). */
void relay__hr_complete(hr_cmd *c, int status, relay_redis_reply *r);
/* Free @c and drop its reference on the backend. */
void relay__hr_cmd_free(hr_cmd *c);

/* ---- redis_cluster.c ---- */

/* The known nodes start as the URI's seeds. 0 or RELAY_ENOMEM. */
int relay__hr_init_nodes(hr_backend *b);
/* The index of node @host:@port, added when new; or -1 (no memory). */
long relay__hr_node_index(hr_backend *b, const char *host, size_t hlen,
			  int port);
/* After a failed or lost connection: target the next known node. */
void relay__hr_rotate(hr_backend *b);
/* The CLUSTER SLOTS reply callback of every new connection. */
void relay__hr_on_slots(redisAsyncContext *ac, void *reply, void *priv);
/* Follow a MOVED or ASK reply to @c: 0 when @c went out again, -1 when
 * the reply stands. */
int relay__hr_redirect(hr_backend *b, hr_cmd *c, const redisReply *r);
/* Resend @c after HR_AGAIN_S (it was answered TRYAGAIN/CLUSTERDOWN). */
void relay__hr_wait_again(hr_backend *b, hr_cmd *c);
/* The timer callback of a waiting command (cmd_new sets it). */
void relay__hr_on_again(struct ev_loop *loop, ev_timer *w, int revents);
/* Complete every waiting command with RELAY_ECLOSED (backend freed). */
void relay__hr_fail_waiting(hr_backend *b);

#endif /* RELAY__REDIS_HIREDIS_INT_H */
