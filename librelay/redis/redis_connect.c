/*
 * redis_connect.c - the connection life of the hiredis backend: opening a
 * context (TCP, the unix socket, TLS attached by redis_tls.c) on the
 * backend's loop, the hand-shake queued before any command (AUTH from the
 * URI, then CLUSTER SLOTS and SELECT, or ROLE first in sentinel mode),
 * our own connect timeout (an ev_timer: hiredis 0.14 has none), the
 * connect and disconnect callbacks, reconnect with jittered exponential
 * backoff (reconnect_min_ms → reconnect_max_ms, 1 s → 30 s by default),
 * retiring or dropping a connection, and the log lines and errors that
 * say where a connect failed (the socket path or host:port, never the
 * URI, which may hold a password).
 *
 * Kept apart from redis_async.c (commands and replies) so that each file
 * does one thing: this one decides when a connection exists; the commands
 * only ask for one (relay__hr_ensure_connection()) and are failed by the
 * drop. Where to connect next is redis_cluster.c's (relay__hr_rotate())
 * and, in sentinel mode, redis_sentinel.c's. The reference counting it
 * takes part in is described at the top of redis_async.c ("Lifetime").
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ev.h>

#include "backend.h"
#include "common.h"
#include "hiredis_int.h"

void relay__hr_schedule_reconnect(hr_backend *b)
{
	double d;

	if (b->closing || b->own_loop || ev_is_active(&b->reconnect_timer))
		return;
	d = b->reconnect_ms / 1000.0;
	d = d / 2 + d / 2 * ((double)rand_r(&b->seed) / RAND_MAX);
	relay__log(&b->opts.logger, RELAY_LOG_DEBUG, "RELAY-REDIS04",
		   "redis reconnect in %.0f ms", d * 1000);
	ev_timer_set(&b->reconnect_timer, d, 0.);
	ev_timer_start(b->loop, &b->reconnect_timer);
	b->reconnect_ms *= 2;
	if (b->reconnect_ms > b->opts.reconnect_max_ms)
		b->reconnect_ms = b->opts.reconnect_max_ms;
}

/* Let go of a side context (retiring or ASK) at once: its commands get
 * NULL replies (RELAY_ECLOSED). */
void relay__hr_drop_side(hr_backend *b, redisAsyncContext **slot)
{
	redisAsyncContext *ac = *slot;

	if (!ac)
		return;
	*slot = NULL;
	ac->data = NULL;
	redisAsyncFree(ac);
	relay__hr_release(b);
}

/*
 * Let go of the hiredis context ourselves. Its in-flight commands get
 * NULL replies (RELAY_ECLOSED) now, or right after the current hiredis
 * callback returns; our connect/disconnect callbacks ignore it from here
 * on (ac->data = NULL), so the context's reference is dropped here.
 */
void relay__hr_drop_connection(hr_backend *b)
{
	redisAsyncContext *ac = b->ac;

	if (!ac)
		return;
	b->ac = NULL;
	b->ac_ssl = NULL;
	b->state = HR_DISCONNECTED;
	memset(b->loading, 0, sizeof(b->loading));
	ev_timer_stop(b->loop, &b->connect_timer);
	ac->data = NULL;
	/* The next node first: freeing the context fails its commands now,
	 * and one that never connected is resent at once (relay__hr_on_reply)
	 * to the connection that makes. */
	relay__hr_rotate(b);
	redisAsyncFree(ac);
	relay__hr_schedule_reconnect(b);
	relay__hr_release(b);
}

/*
 * Leave the current connection after a MOVED: it disconnects once its
 * pending replies are in (each MOVED one is resent by
 * relay__hr_on_reply), while new commands go to the next connection.
 */
void relay__hr_retire(hr_backend *b)
{
	redisAsyncContext *ac = b->ac;

	if (!ac)
		return;
	relay__hr_drop_side(b, &b->retiring);
	b->ac = NULL;
	b->ac_ssl = NULL;
	b->state = HR_DISCONNECTED;
	memset(b->loading, 0, sizeof(b->loading));
	ev_timer_stop(b->loop, &b->connect_timer);
	b->retiring = ac;  /* on_disconnect drops the context's reference */
	redisAsyncDisconnect(ac);
}

/*
 * A connect failed: say where to (the socket path, or host:port; never
 * the URI, which may hold a password) and the OS error, once per streak
 * of failures, and that relay keeps trying. The next line about the
 * connection is RELAY-REDIS03 when it is back.
 */
static void connect_where(const hr_backend *b, char *where, size_t size)
{
	const relay__redis_node *n = b->nnodes ? &b->nodes[b->cur] : NULL;

	if (b->uri.path)
		snprintf(where, size, "unix socket %s", b->uri.path);
	else if (b->uri.master && b->mhost)
		snprintf(where, size, "master '%s' at %s:%d (named by a "
			 "sentinel)", b->uri.master, b->mhost, b->mport);
	else if (n && strchr(n->host, ':'))
		snprintf(where, size, "[%s]:%d", n->host, n->port);
	else if (n)
		snprintf(where, size, "%s:%d", n->host, n->port);
	else
		snprintf(where, size, "the server");
}

/*
 * After the log line: when the connect itself failed (@name_it: not a
 * TLS handshake, which relay__hr_tls_explain() has already put in
 * words), the backend's last error (relay_redis_errstr(), which the
 * commands that fail meanwhile report) names the address too, "cannot
 * connect to Redis at 127.0.0.1:6379: Connection refused", so a tool's
 * error says where it tried, not only the OS error.
 */
static void connect_failed(hr_backend *b, bool name_it)
{
	char where[300], msg[sizeof(b->errstr)];

	connect_where(b, where, sizeof(where));
	if (!b->connect_fail_logged) {
		b->connect_fail_logged = 1;
		relay__log(&b->opts.logger, RELAY_LOG_WARN, "RELAY-REDIS01",
			   "redis connect to %s failed: %s; retrying "
			   "(backoff up to %d ms) until it answers", where,
			   b->errstr, b->opts.reconnect_max_ms);
	}
	if (!name_it)
		return;
	snprintf(msg, sizeof(msg), "cannot connect to Redis at %.120s: %.100s",
		 where, b->errstr);
	relay__hr_set_err(b, msg);
}

static void on_connect(const redisAsyncContext *ac, int status)
{
	hr_backend *b = ac->data;

	if (!b)
		return;
	if (status == REDIS_OK)
		b->dead_ac = NULL;
	if (ac != b->ac) {  /* the ASK side connection */
		if (status != REDIS_OK && ac == b->ask_ac) {
			b->ask_ac = NULL;  /* hiredis frees it */
			relay__hr_release(b);
		}
		return;
	}
	/* TLS: the connect timeout covers the handshake, up to the first
	 * answer (relay__hr_on_slots); Sentinel: up to ROLE's answer
	 * (relay__hr_on_role), which commands wait for. */
	if (status != REDIS_OK || (!b->uri.tls && !b->uri.master))
		ev_timer_stop(b->loop, &b->connect_timer);
	if (status != REDIS_OK) {
		char raw[sizeof(b->errstr)];

		relay__hr_set_err(b, ac->errstr);
		memcpy(raw, b->errstr, sizeof(raw));
		relay__hr_tls_explain(b);
		connect_failed(b, strcmp(raw, b->errstr) == 0);
		b->ac = NULL; /* hiredis frees it after this callback */
		b->ac_ssl = NULL;
		b->dead_ac = ac; /* its commands' NULL replies follow */
		b->state = HR_DISCONNECTED;
		memset(b->loading, 0, sizeof(b->loading));
		relay__hr_rotate(b);
		relay__hr_schedule_reconnect(b);
		relay__hr_release(b); /* the context's reference */
		return;
	}
	if (b->reconnect_ms != b->opts.reconnect_min_ms)
		relay__log(&b->opts.logger, RELAY_LOG_INFO, "RELAY-REDIS03",
			   "redis connection restored");
	b->state = HR_CONNECTED;
	b->reconnect_ms = b->opts.reconnect_min_ms;
	b->connect_fail_logged = 0;
}

static void on_disconnect(const redisAsyncContext *ac, int status)
{
	hr_backend *b = ac->data;

	if (!b)
		return;
	if (ac != b->ac) {  /* a retiring or ASK connection went */
		if (ac == b->retiring)
			b->retiring = NULL;
		else if (ac == b->ask_ac)
			b->ask_ac = NULL;
		else
			return;
		relay__hr_release(b);
		return;
	}
	if (status != REDIS_OK)
		relay__hr_set_err(b, ac->errstr);
	else if (!b->setup_failed)
		relay__hr_set_err(b, "connection closed");
	if (b->uri.tls) {
		relay__hr_tls_explain(b);
	} else if (!b->answered && !b->setup_failed && !b->uri.path) {
		char msg[sizeof(b->errstr)];

		/* A TLS port closes a plain-text connection at once. */
		snprintf(msg, sizeof(msg), "%.120s before any answer (a TLS "
			 "port? use rediss://)", b->errstr);
		relay__hr_set_err(b, msg);
	}
	b->setup_failed = 0;
	if (!b->closing)
		relay__log(&b->opts.logger, RELAY_LOG_WARN, "RELAY-REDIS02",
			   "redis connection lost: %s", b->errstr);
	b->ac = NULL;
	b->ac_ssl = NULL;
	b->state = HR_DISCONNECTED;
	memset(b->loading, 0, sizeof(b->loading)); /* its SCRIPT LOADs died */
	relay__hr_rotate(b);
	relay__hr_schedule_reconnect(b);
	relay__hr_release(b); /* the context's reference */
}

static void on_connect_timeout(struct ev_loop *loop, ev_timer *w,
			       int revents)
{
	hr_backend *b = w->data;

	relay__hr_hold(b);
	relay__hr_set_err(b, "connect timed out");
	relay__hr_tls_explain(b);  /* a TLS handshake that never ended */
	b->dead_ac = b->ac;
	relay__hr_drop_connection(b);
	relay__hr_release(b);
}

static void on_reconnect(struct ev_loop *loop, ev_timer *w, int revents)
{
	hr_backend *b = w->data;

	if (!b->ac && !b->closing)
		relay__hr_connect(b);
}

static void on_setup_reply(redisAsyncContext *ac, void *reply, void *priv)
{
	hr_backend *b = ac->data;
	redisReply *r = reply;

	if (b && r && ac == b->ac)
		b->answered = 1;
	if (!b || !r || r->type != REDIS_REPLY_ERROR)
		return;
	relay__hr_set_err(b, r->str);
	b->setup_failed = ac == b->ac;
	redisAsyncDisconnect(ac);
}

/* A new context to @host:@port (or the unix socket), attached, with
 * AUTH queued; it holds a reference on @b. NULL on failure (errstr). */
redisAsyncContext *relay__hr_open_ctx(hr_backend *b, const char *host,
				      int port)
{
	redisAsyncContext *ac;

	if (b->uri.path)
		ac = redisAsyncConnectUnix(b->uri.path);
	else
		ac = redisAsyncConnect(host, port);
	if (!ac || ac->err) {
		relay__hr_set_err(b, ac ? ac->errstr : "out of memory");
		if (ac)
			redisAsyncFree(ac);
		return NULL;
	}
	if (b->uri.tls && !b->uri.path &&
	    relay__hr_tls_attach(b, ac, host) != 0) {
		redisAsyncFree(ac);
		return NULL;
	}
	ac->data = b;
	if (redisLibevAttach(b->loop, ac) != REDIS_OK) {
		relay__hr_set_err(b, "cannot attach to the loop");
		redisAsyncFree(ac);
		return NULL;
	}
	redisAsyncSetConnectCallback(ac, on_connect);
	redisAsyncSetDisconnectCallback(ac, on_disconnect);
	relay__hr_hold(b); /* the context's reference */
	if (b->uri.pass && b->uri.user)
		redisAsyncCommand(ac, on_setup_reply, NULL, "AUTH %s %s",
				  b->uri.user, b->uri.pass);
	else if (b->uri.pass)
		redisAsyncCommand(ac, on_setup_reply, NULL, "AUTH %s",
				  b->uri.pass);
	return ac;
}

void relay__hr_connect(hr_backend *b)
{
	redisAsyncContext *ac;

	if (b->uri.master && !b->sent_ready) {
		/* Sentinel: where the master is first, on every connect: a
		 * round of the sentinels (redis_sentinel.c), which calls back
		 * here once a majority named one address. */
		relay__hr_sentinel_ask(b);
		return;
	}
	b->sent_ready = 0;
	b->answered = 0;
	b->master_ok = 0;
	if (b->uri.master)
		ac = relay__hr_open_ctx(b, b->mhost, b->mport);
	else
		ac = relay__hr_open_ctx(b, b->uri.path ? NULL :
					b->nodes[b->cur].host,
					b->uri.path ? 0 :
					b->nodes[b->cur].port);
	if (!ac) {
		/* A unix socket that is not there fails here, at once; so
		 * does a TLS setting (a file it names), said as it is. */
		connect_failed(b, !b->uri.tls || b->uri.path);
		relay__hr_rotate(b);
		relay__hr_schedule_reconnect(b);
		return;
	}
	b->ac = ac;
	b->ac_ssl = b->new_ssl;  /* the main connection's, for errors */
	b->state = HR_CONNECTING;
	ev_timer_set(&b->connect_timer, b->opts.connect_timeout_ms / 1000.0,
		     0.);
	ev_timer_start(b->loop, &b->connect_timer);
	if (b->uri.master) {
		/* A master, not a replica: after AUTH nothing but ROLE until
		 * it said so (redis_sentinel.c). */
		redisAsyncCommand(ac, relay__hr_on_role, NULL, "ROLE");
		return;
	}
	relay__hr_select_db(b, ac);
	redisAsyncCommand(ac, relay__hr_on_slots, NULL, "CLUSTER SLOTS");
}

void relay__hr_select_db(hr_backend *b, redisAsyncContext *ac)
{
	char db[8];

	if (!b->uri.db)
		return;
	snprintf(db, sizeof(db), "%d", b->uri.db);
	redisAsyncCommand(ac, on_setup_reply, NULL, "SELECT %s", db);
}

/* Connected or connecting, or fail with RELAY_ECLOSED. */
int relay__hr_ensure_connection(hr_backend *b)
{
	if (b->closing)
		return RELAY_ECLOSED;
	if (!b->ac) {
		if (ev_is_active(&b->reconnect_timer) ||
		    relay__hr_sentinel_asking(b))
			return RELAY_ECLOSED;
		relay__hr_connect(b);
	}
	/* Sentinel: no command goes to a node before its ROLE said master.
	 * A private loop (relayctl) waits here for the sentinels' round and
	 * ROLE's answer; a host loop's commands fail until then. */
	while (b->own_loop && !b->closing && b->uri.master &&
	       (relay__hr_sentinel_asking(b) || (b->ac && !b->master_ok)))
		ev_run(b->loop, EVRUN_ONCE);
	if (b->ac && b->uri.master && !b->master_ok)
		return RELAY_ECLOSED;
	return b->ac ? 0 : RELAY_ECLOSED;
}

/* The connect and reconnect timers of a new backend (called once, by
 * relay__redis_hiredis_new() in redis_async.c, before any connect). */
void relay__hr_conn_init(hr_backend *b)
{
	ev_timer_init(&b->connect_timer, on_connect_timeout, 0., 0.);
	b->connect_timer.data = b;
	ev_timer_init(&b->reconnect_timer, on_reconnect, 0., 0.);
	b->reconnect_timer.data = b;
}
