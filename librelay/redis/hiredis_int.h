/*
 * librelay/redis/hiredis_int.h - private: the hiredis backend's state,
 * shared by its files: redis_async.c (the backend, its vtable and
 * lifetime; commands, replies, scripts), redis_connect.c (the connection
 * life: connect, AUTH/SELECT, the connect timeout, reconnect backoff),
 * redis_cluster.c (Redis Cluster: known nodes, MOVED/ASK,
 * TRYAGAIN/CLUSTERDOWN resends), cluster_topology.c (reading a
 * CLUSTER SLOTS reply) and redis_sentinel.c (Redis Sentinel: asking
 * every sentinel where the master is, trusting what a majority says,
 * refusing a replica). Never installed.
 */
#ifndef RELAY__REDIS_HIREDIS_INT_H
#define RELAY__REDIS_HIREDIS_INT_H

#include <ev.h>

#include "hiredis_compat.h"

#include "backend.h"

/* The longest host name accepted from a CLUSTER SLOTS or MOVED/ASK reply
 * (a DNS name has at most 253 bytes). */
#define HR_MAX_HOST 255

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
	relay__redis_node *nodes;       /* known nodes (TCP only): the */
	size_t nnodes;                  /* seeds, the target, the topology */
	size_t cur;                     /* the target: nodes[cur] */
	int cluster;                    /* 1, 0, -1 not known yet */
	enum hr_state state;
	int closing;
	int refs;                       /* redis_async.c, "Lifetime" */
	int setup_failed;               /* AUTH/SELECT refused: keep errstr */
	ev_timer connect_timer;
	ev_timer reconnect_timer;
	int reconnect_ms;               /* next backoff delay */
	int connect_fail_logged;        /* RELAY-REDIS01 said for this
					   streak of failed connects */
	unsigned int seed;              /* jitter */
	char sha[RELAY_REDIS_SCRIPT_COUNT_][41];
	int loading[RELAY_REDIS_SCRIPT_COUNT_];
	char errstr[256];
	/* Sentinel (redis_sentinel.c; uri.master set): nodes are the
	 * sentinels. */
	struct hr_sent *sent;           /* a round: one per sentinel */
	size_t nsent;                   /* (nnodes when it started) */
	int sent_batch;                 /* decide the round after a batch */
	ev_timer sent_timer;            /* the round's connect + answer time */
	/* The last sentinel of the list that failed this round (-1:
	 * none yet) and why, for messages. */
	long sent_why_i;
	char sent_why[HR_MAX_HOST + 300];
	char *mhost;                    /* the master a majority named */
	int mport;
	int sent_ready;                 /* named for the next connect */
	int master_ok;                  /* ac's ROLE said master */
	int sent_fail_logged;           /* RELAY-REDIS10 said, this streak */
	/* TLS (redis_tls.c; uri.tls set, a build with TLS) */
	void *tls_ctx;                  /* SSL_CTX, shared by connections */
	char *tls_name;                 /* tls_server_name, or NULL */
	void *ac_ssl;                   /* the main connection's SSL
					   (owned by its context) */
	void *new_ssl;                  /* the last context's SSL */
	int tls_verify_err;             /* X509_V_ERR_* of the last
					   failed verification, or 0 */
	int answered;                   /* the main connection answered */
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
	char *rhost;                    /* a MOVED/ASK target that was not */
	int rport;                      /* a known node: followed if the */
	int rask;                       /* topology refresh names it */
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
/* A CLUSTER SLOTS reply naming more distinct nodes is refused (Redis
 * Cluster is meant for up to about 1000 nodes). */
#define HR_MAX_NODES 1024

/* ---- redis_connect.c ---- */

/* A new context to @host:@port (or the URI's unix socket), attached,
 * AUTH queued, holding a reference on @b; NULL on failure (errstr). */
redisAsyncContext *relay__hr_open_ctx(hr_backend *b, const char *host,
				      int port);
/* Open the main connection to nodes[cur] (or the unix socket; in
 * sentinel mode, to the master a round of the sentinels named, starting
 * the round first). */
void relay__hr_connect(hr_backend *b);
/* Queue SELECT of the URI's db on @ac (nothing for db 0). */
void relay__hr_select_db(hr_backend *b, redisAsyncContext *ac);
/* Connected or connecting (0), or RELAY_ECLOSED. In sentinel mode 0
 * only once ROLE said master: a private loop waits for that here, a
 * host loop's commands fail until then. */
int relay__hr_ensure_connection(hr_backend *b);
/* Leave the main connection after a MOVED: it drains, then closes. */
void relay__hr_retire(hr_backend *b);
/* Let go of the main connection at once (its commands: RELAY_ECLOSED),
 * target the next node and schedule a reconnect. */
void relay__hr_drop_connection(hr_backend *b);
/* Let go of a side context at once (its commands: RELAY_ECLOSED). */
void relay__hr_drop_side(hr_backend *b, redisAsyncContext **slot);
/* After a failed connect: reconnect after the jittered backoff (a
 * host-loop backend; a private-loop one reconnects on the next
 * command). */
void relay__hr_schedule_reconnect(hr_backend *b);
/* Init the connect/reconnect timers; relay__redis_hiredis_new() calls it. */
void relay__hr_conn_init(hr_backend *b);

/* ---- redis_async.c ---- */

/* Set the backend's error string (relay_redis_errstr()). */
void relay__hr_set_err(hr_backend *b, const char *msg);
/* (Re)start @c's command timeout. */
void relay__hr_start_timer(hr_backend *b, hr_cmd *c);
/* The reply callback of every command. */
void relay__hr_on_reply(redisAsyncContext *ac, void *reply, void *privdata);
/* Run @c's callback once (a no-op after the first). */
void relay__hr_complete(hr_cmd *c, int status, relay_redis_reply *r);
/* Free @c and drop its reference on the backend. */
void relay__hr_cmd_free(hr_cmd *c);

/* Take / drop a reference on @b (the last one frees it). */
void relay__hr_hold(hr_backend *b);
void relay__hr_release(hr_backend *b);

/* ---- redis_cluster.c ---- */

/* The known nodes start as the URI's seeds. 0 or RELAY_ENOMEM. */
int relay__hr_init_nodes(hr_backend *b);
/* The index of known node @host:@port, or -1. */
long relay__hr_node_find(const hr_backend *b, const char *host, size_t hlen,
			 int port);
/* After a failed or lost connection: target the next known node. */
void relay__hr_rotate(hr_backend *b);
/* The CLUSTER SLOTS reply callback of every new connection. */
void relay__hr_on_slots(redisAsyncContext *ac, void *reply, void *priv);
/* Follow a MOVED or ASK reply to @c (cluster mode, known nodes only):
 * 0 when @c went out again, waits for a topology refresh or was failed;
 * -1 when the reply stands (the caller completes @c with it). */
int relay__hr_redirect(hr_backend *b, hr_cmd *c, const redisReply *r);
/* Resend @c after HR_AGAIN_S (it was answered TRYAGAIN/CLUSTERDOWN). */
void relay__hr_wait_again(hr_backend *b, hr_cmd *c);
/* The timer callback of a waiting command (cmd_new sets it). */
void relay__hr_on_again(struct ev_loop *loop, ev_timer *w, int revents);
/* Complete every waiting command with RELAY_ECLOSED (backend freed). */
void relay__hr_fail_waiting(hr_backend *b);

/* ---- cluster_topology.c ---- */

/* 1 when @host (@len bytes, not NUL-terminated) is 1..HR_MAX_HOST bytes
 * of letters, digits and ".-_:%"; else 0. */
int relay__hr_host_ok(const char *host, size_t len);
/* qsort/bsearch order of relay__redis_node: host length, host, port. */
int relay__hr_node_cmp(const void *a, const void *b);
/*
 * The distinct nodes a CLUSTER SLOTS reply @r names, sorted in
 * relay__hr_node_cmp order. A nil host stands for @self (the host that
 * answered; may be NULL: such entries are then skipped). Entries with a
 * port outside 1..65535 or a host relay__hr_host_ok() refuses are
 * skipped and counted in *@bad.
 * Returns: 0 with *@out (new, free with relay__hr_nodes_free(); NULL when
 * *@nout is 0) and *@nout; RELAY_EINVAL (not an array, more than 16384
 * ranges or more than HR_MAX_NODES distinct nodes) or RELAY_ENOMEM, with
 * @err set and *@out NULL.
 */
int relay__hr_parse_slots(const redisReply *r, const char *self,
			  relay__redis_node **out, size_t *nout, size_t *bad,
			  char *err, size_t errsize);
/* Free @n nodes and the array; NULL is a no-op. */
void relay__hr_nodes_free(relay__redis_node *nodes, size_t n);

/* ---- redis_sentinel.c ---- */

/* Set up the sentinel timer (every backend). */
void relay__hr_sentinel_init(hr_backend *b);
/* Start a round: ask every sentinel where the master is (a no-op while
 * a round runs). When a majority of them names one address,
 * relay__hr_connect() runs with sent_ready set (mhost, mport); when no
 * address can have a majority, errstr says why and the reconnect
 * backoff runs. */
void relay__hr_sentinel_ask(hr_backend *b);
/* 1 while a round runs, else 0. */
int relay__hr_sentinel_asking(const hr_backend *b);
/* End the round, if one runs (backend freed). */
void relay__hr_sentinel_free(hr_backend *b);
/* The ROLE reply callback of a main connection in sentinel mode, the
 * only command sent after AUTH: on "master" it queues SELECT
 * (relay__hr_select_db()) and sets master_ok; else the connection is
 * dropped (RELAY-REDIS12). */
void relay__hr_on_role(redisAsyncContext *ac, void *reply, void *priv);
/* Reply @r to a command on @ac: 1 when it is READONLY/LOADING from the
 * main connection in sentinel mode (the connection was dropped: the
 * caller fails the command with RELAY_ECLOSED), else 0. */
int relay__hr_sentinel_reply(hr_backend *b, redisAsyncContext *ac,
			     const redisReply *r);

/* ---- redis_tls.c ---- */

/* Set up TLS for a rediss:// backend from @o (version 2 fields; may be
 * NULL): 0, or RELAY_EINVAL/RELAY_ENOMEM with @err saying which
 * setting is wrong. A no-op (0) without uri.tls. */
int relay__hr_tls_init(hr_backend *b, const relay_redis_options *o,
		       relay_error *err);
/* Start TLS on new context @ac to @host (SNI and the verified name
 * unless tls_server_name): 0 (b->new_ssl is @ac's SSL, which @ac owns;
 * relay__hr_connect() keeps the main one in b->ac_ssl, cleared with
 * b->ac), or -1 with errstr set (explained when the handshake failed at
 * once). */
int relay__hr_tls_attach(hr_backend *b, redisAsyncContext *ac,
			 const char *host);
/* When the main connection failed during its TLS handshake, replace
 * errstr with what the user can act on (certificate not trusted, name
 * mismatch, expired, handshake refused, not a TLS port); else nothing. */
void relay__hr_tls_explain(hr_backend *b);
/* Free the TLS state (the last reference). */
void relay__hr_tls_free(hr_backend *b);

#endif /* RELAY__REDIS_HIREDIS_INT_H */
