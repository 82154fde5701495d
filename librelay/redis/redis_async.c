/*
 * redis_async.c - the "hiredis" Redis backend: hiredis' async API on a
 * libev loop (the host's, or a private one for synchronous use). This
 * file owns the backend itself (construction, the vtable, the lifetime
 * below, freeing) and what goes over a connection: commands with their
 * own timeout (an ev_timer, which hiredis 0.14 lacks), every reply (and
 * the redirects, resends and reloads it starts), and the transition
 * scripts run by EVALSHA. The connection's own life (connect, the
 * AUTH/SELECT hand-shake, the connect timeout, reconnect backoff, errors
 * that name the address) is redis_connect.c's.
 *
 * Scripts: the SHA1 of each script is learned from SCRIPT LOAD's reply.
 * Until it is known, a call goes out as EVAL (which also caches the script
 * server-side); a NOSCRIPT reply (SCRIPT FLUSH, failover to a fresh
 * server) forgets the SHA1 and retries the same call once with EVAL.
 *
 * Failure model: a command that times out fails with RELAY_ETIMEOUT and
 * drops the connection (an unresponsive server cannot be trusted with the
 * commands queued behind it); every other command in flight then fails
 * with RELAY_ECLOSED. While a host-loop backend waits to reconnect, new
 * commands fail at once with RELAY_ECLOSED (nonzero return, no callback).
 * A private-loop backend (relayctl) reconnects on the next command.
 *
 * Redis Cluster (doc/redis-layout.md R-8, doc/configuration.md C-2; the
 * code is in redis_cluster.c, the shared state in hiredis_int.h): the
 * backend keeps one connection, to one node at a time. Every connection
 * first asks CLUSTER SLOTS: an error means a single node; a map means a
 * cluster, and its nodes with the URI's seeds (and the current target)
 * become the known nodes; a map naming more than HR_MAX_NODES nodes
 * closes the connection. MOVED and ASK are followed only on a cluster
 * and only to a known node (after asking CLUSTER SLOTS again when the
 * node is new); otherwise a redirect could send the connection, and the
 * password, wherever the server chose. A MOVED reply makes the node it
 * names the target: the current connection is retired (its pending
 * replies still arrive, and MOVED ones are resent in turn), a new one
 * opens, and the command is resent there (a MOVED command was never run,
 * so resending cannot run it twice). An ASK reply resends the one
 * command, behind ASKING, on a side connection to the node it names. A
 * failed connect or a lost connection moves the target to the next
 * known node, so a dead master is left for any live node, whose MOVED
 * then names the promoted replica. Since every key of one stream shares
 * one slot, the connection settles on the stream's owner.
 *
 * Lifetime: the backend is reference-counted. The owner holds one
 * reference (dropped by relay_redis_free), every command still known to
 * hiredis holds one, the live hiredis context holds one, and every loop
 * callback holds one while it runs. So a user callback may free the
 * backend (even from inside hiredis' reply processing, where hiredis
 * defers its own free): the memory stays valid until the last callback
 * has unwound. A private-loop backend (relayctl) must not be freed from
 * its own callbacks while relay_redis_sync_wait() runs its loop.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <strings.h>

#include <ev.h>

#include "backend.h"
#include "common.h"
#include "hiredis_int.h"
#include "relay/relay_libev.h"



void relay__hr_hold(hr_backend *b)
{
	b->refs++;
}

/* Drop a reference; the last one frees what the connection left. */
void relay__hr_release(hr_backend *b)
{
	if (--b->refs > 0)
		return;
	if (b->own_loop)
		ev_loop_destroy(b->loop);
	relay__free(b->mhost);
	relay__hr_tls_free(b);
	relay__redis_uri_clear(&b->uri);
	relay__hr_nodes_free(b->nodes, b->nnodes);
	relay__free(b->ask_host);
	relay__free(b);
}

void relay__hr_set_err(hr_backend *b, const char *msg)
{
	snprintf(b->errstr, sizeof(b->errstr), "%s", msg ? msg : "");
}

static relay_redis_reply *convert(const redisReply *r)
{
	relay_redis_reply *o = NULL;
	size_t i;

	switch (r->type) {
	case REDIS_REPLY_STRING:
		return relay__reply_str(RELAY_REDIS_REPLY_STRING, r->str,
					r->len);
	case REDIS_REPLY_STATUS:
		return relay__reply_str(RELAY_REDIS_REPLY_STATUS, r->str,
					r->len);
	case REDIS_REPLY_ERROR:
		return relay__reply_str(RELAY_REDIS_REPLY_ERROR, r->str,
					r->len);
	case REDIS_REPLY_INTEGER:
		return relay__reply_int(r->integer);
	case REDIS_REPLY_ARRAY:
		o = relay__reply_array(r->elements);
		for (i = 0; o && i < r->elements; i++) {
			o->element[i] = convert(r->element[i]);
			if (!o->element[i]) {
				relay_redis_reply_free(o);
				o = NULL;
			}
		}
		return o;
	default:
		return relay__reply_nil();
	}
}

void relay__hr_cmd_free(hr_cmd *c)
{
	hr_backend *b = c->b;

	if (c->fmt)
		redisFreeCommand(c->fmt);
	relay__free(c->rhost);
	relay__free(c);
	relay__hr_release(b);
}

/* Run the caller's callback once; the hr_cmd lives on until hiredis is
 * done with it. Touches nothing after the callback (it may free @c's
 * connection or the backend). */
void relay__hr_complete(hr_cmd *c, int status, relay_redis_reply *r)
{
	if (c->done) {
		relay_redis_reply_free(r);
		return;
	}
	c->done = 1;
	ev_timer_stop(c->b->loop, &c->timer);
	if (c->cb)
		c->cb(&c->b->parent, status, r, c->payload);
	else
		relay_redis_reply_free(r);
}

static int send_cmd(hr_backend *b, hr_cmd *c, int argc, const char **argv,
		    const size_t *argvlen);
static void on_script_load(redisAsyncContext *ac, void *reply, void *priv);


void relay__hr_on_reply(redisAsyncContext *ac, void *reply, void *privdata)
{
	hr_cmd *c = privdata;
	hr_backend *b = c->b;
	redisReply *r = reply;
	relay_redis_reply *o;
	int op = c->script - 1;

	if (!r) {
		/* A connection that never connected ran nothing: with another
		 * node to try (a seed list, a known cluster), resend there
		 * at once when a connect may start now (a private loop);
		 * otherwise fail as after any lost connection. */
		if (ac == b->dead_ac && c->fmt && !c->done && !b->closing &&
		    b->nnodes > 1 && !b->uri.master && ++c->redirects <= HR_MAX_REDIRECTS &&
		    relay__hr_ensure_connection(b) == 0 &&
		    redisAsyncFormattedCommand(b->ac, relay__hr_on_reply, c, c->fmt,
					       c->fmtlen) == REDIS_OK)
			return;
		relay__hr_complete(c, RELAY_ECLOSED, NULL);
		relay__hr_cmd_free(c);
		return;
	}
	if (!c->done && relay__hr_sentinel_reply(b, ac, r)) {
		/* Not run (a replica now, or loading): as a lost
		 * connection. */
		relay__hr_complete(c, RELAY_ECLOSED, NULL);
		relay__hr_cmd_free(c);
		return;
	}
	if (c->fmt && !c->done && r->type == REDIS_REPLY_ERROR &&
	    (strncmp(r->str, "MOVED ", 6) == 0 ||
	     strncmp(r->str, "ASK ", 4) == 0) && relay__hr_redirect(b, c, r) == 0)
		return;
	if (c->fmt && !c->done && r->type == REDIS_REPLY_ERROR &&
	    b->cluster == 1 && !b->closing &&
	    (strncmp(r->str, "TRYAGAIN", 8) == 0 ||
	     strncmp(r->str, "CLUSTERDOWN", 11) == 0)) {
		/* Not run (keys of a slot half migrated, or a slot without
		 * a master during a failover): resend shortly, on whatever
		 * connection is current then, until the command timeout. */
		relay__hr_wait_again(b, c);
		return;
	}
	if (ac != b->ac && b->ac && c->fmt && !c->done &&
	    r->type == REDIS_REPLY_ERROR && strncmp(r->str, "NOSCRIPT", 8) == 0)
		ac = b->ac;  /* an ASK or retiring connection: load it here */
	if (c->fmt && !c->done && c->script && !c->reloaded &&
	    r->type == REDIS_REPLY_ERROR &&
	    strncmp(r->str, "NOSCRIPT", 8) == 0) {
		/*
		 * The server lost the script (SCRIPT FLUSH, restart behind a
		 * proxy). Load it again and resend the same EVALSHA right
		 * behind the load: the SHA1 of the same source is the same,
		 * and the pipeline keeps the order. One retry only.
		 */
		c->reloaded = 1;
		if (redisAsyncCommand(ac, on_script_load, (void *)(intptr_t)op,
				      "SCRIPT LOAD %s",
				      relay__lua_source[op]) == REDIS_OK &&
		    redisAsyncFormattedCommand(ac, relay__hr_on_reply, c, c->fmt,
					       c->fmtlen) == REDIS_OK) {
			if (ac == b->ac)
				b->loading[op] = 1;
			return;
		}
		relay__hr_complete(c, RELAY_EBACKEND, NULL);
		relay__hr_cmd_free(c);
		return;
	}
	/* Refused for want of (or without the right) authentication: the
	 * reason is the backend's error text, so that a caller (health,
	 * /readyz) can say why instead of "backend error" (unless the
	 * refused AUTH's own reply, which says more, is there). */
	if (r->type == REDIS_REPLY_ERROR && r->str && !b->setup_failed &&
	    (strncmp(r->str, "NOAUTH", 6) == 0 ||
	     strncmp(r->str, "NOPERM", 6) == 0))
		relay__hr_set_err(b, r->str);
	o = convert(r);
	relay__hr_complete(c, o ? 0 : RELAY_ENOMEM, o);
	relay__hr_cmd_free(c);
}

static void on_timeout(struct ev_loop *loop, ev_timer *w, int revents)
{
	hr_cmd *c = w->data;
	hr_backend *b = c->b;
	int waiting;

	relay__hr_hold(b);
	relay__hr_set_err(b, "command timed out");
	relay__log(&b->opts.logger, RELAY_LOG_WARN, "RELAY-REDIS05",
		   "redis command timed out after %d ms; reconnecting",
		   b->opts.command_timeout_ms);
	/* @c may be gone after its callback: read what is needed first. A
	 * command waiting to be resent (TRYAGAIN) was not in flight, so the
	 * connection is not the one at fault. */
	waiting = c->waiting;
	relay__hr_complete(c, RELAY_ETIMEOUT, NULL);
	if (!b->closing && !waiting)
		relay__hr_drop_connection(b);
	relay__hr_release(b);
}


void relay__hr_start_timer(hr_backend *b, hr_cmd *c)
{
	if (b->opts.command_timeout_ms > 0) {
		/* The loop's cached time is stale after the embedder did
		 * blocking work outside it: measure from now, or the
		 * command gets less than its timeout. */
		ev_now_update(b->loop);
		ev_timer_stop(b->loop, &c->timer);
		ev_timer_set(&c->timer,
			     (b->opts.command_timeout_ms + c->block_ms) /
				     1000.0,
			     0.);
		ev_timer_start(b->loop, &c->timer);
	}
}

/*
 * Write what is queued on @b's connection to the socket now instead of
 * when the loop next polls it: the server starts on a command while the
 * caller goes on with its iteration (a reply callback that issues
 * commands, then more replies), so the engine and redis-server work at
 * the same time rather than in turn (doc/perf/engine.md). Never
 * disconnects: an error or a partial write is left to hiredis's write
 * watcher, which is still armed and acts at the next iteration, outside
 * of any callback. Called for each command's first send (send_cmd); a
 * resend (redirect, NOSCRIPT, reconnect) goes out at the next poll.
 */
static void hr_flush(hr_backend *b)
{
	redisAsyncContext *ac = b->ac;
	redisContext *c;
	size_t len;
	ssize_t n;

	/* Not before hiredis's first write event told on_connect; never on
	 * TLS, whose bytes only the library may write. */
	if (ac == NULL || b->state != HR_CONNECTED || b->uri.tls)
		return;
	c = &ac->c;
	if (c->err || !(c->flags & REDIS_CONNECTED) || c->fd < 0 ||
	    c->obuf == NULL || (len = sdslen(c->obuf)) == 0)
		return;
	/* hiredis's own write raises SIGPIPE on a closed connection, which
	 * is the host's to decide: send with MSG_NOSIGNAL instead. */
	n = send(c->fd, c->obuf, len, MSG_NOSIGNAL | MSG_DONTWAIT);
	if (n < 0) {
		/* A dead connection (not a full buffer): what is queued can
		 * never go out; dropped here so that hiredis's write watcher
		 * does not write it again (SIGPIPE). Its read watcher then
		 * sees the end of the connection and fails the commands. */
		if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
			sdsclear(c->obuf);
		return;
	}
	if ((size_t)n < len) {
		sdsrange(c->obuf, (int)n, -1);  /* the rest: the watcher */
		return;
	}
	sdsclear(c->obuf);
	/* What hiredis does after a complete write: stop watching for
	 * writability, read the replies. */
	if (ac->ev.delWrite)
		ac->ev.delWrite(ac->ev.data);
	if (ac->ev.addRead)
		ac->ev.addRead(ac->ev.data);
}

/* Format @argv into c->fmt (kept for a resend after MOVED/ASK/NOSCRIPT)
 * and send it on the current connection. */
static int send_cmd(hr_backend *b, hr_cmd *c, int argc, const char **argv,
		    const size_t *argvlen)
{
	int len = redisFormatCommandArgv(&c->fmt, argc, argv, argvlen);

	if (len < 0) {
		c->fmt = NULL;
		return RELAY_ENOMEM;
	}
	c->fmtlen = (size_t)len;
	if (redisAsyncFormattedCommand(b->ac, relay__hr_on_reply, c, c->fmt,
				       c->fmtlen) != REDIS_OK)
		return RELAY_ECLOSED;
	relay__hr_start_timer(b, c);
	hr_flush(b);
	return 0;
}

static hr_cmd *cmd_new(hr_backend *b, relay_redis_reply_cb cb, void *payload)
{
	hr_cmd *c = relay__calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	relay__hr_hold(b); /* the command's reference */
	c->b = b;
	c->cb = cb;
	c->payload = payload;
	ev_timer_init(&c->timer, on_timeout, 0., 0.);
	c->timer.data = c;
	ev_timer_init(&c->again, relay__hr_on_again, 0., 0.);
	c->again.data = c;
	return c;
}

static int arg_is(const char *const *argv, const size_t *argvlen, int i,
		  const char *s)
{
	size_t n = argvlen ? argvlen[i] : strlen(argv[i]);

	return n == strlen(s) && strncasecmp(argv[i], s, n) == 0;
}

/*
 * A blocking read legitimately takes its BLOCK time: the command timeout
 * counts from when the server may answer, not from when we sent it.
 * BLOCK 0 (forever) gets no timer extension: use a finite BLOCK.
 */
static long long block_ms(int argc, const char *const *argv,
			  const size_t *argvlen)
{
	char buf[24];
	size_t n;
	int i;

	if (!arg_is(argv, argvlen, 0, "XREADGROUP") &&
	    !arg_is(argv, argvlen, 0, "XREAD"))
		return 0;
	for (i = 1; i + 1 < argc; i++) {
		if (arg_is(argv, argvlen, i, "STREAMS"))
			break;
		if (!arg_is(argv, argvlen, i, "BLOCK"))
			continue;
		n = argvlen ? argvlen[i + 1] : strlen(argv[i + 1]);
		if (n >= sizeof(buf))
			return 0;
		memcpy(buf, argv[i + 1], n);
		buf[n] = '\0';
		return atoll(buf) > 0 ? atoll(buf) : 0;
	}
	return 0;
}

static int hr_command(relay_redis_backend *rb, int argc,
		      const char *const *argv, const size_t *argvlen,
		      relay_redis_reply_cb cb, void *payload)
{
	hr_backend *b = (hr_backend *)rb;
	hr_cmd *c;
	int rc;

	rc = relay__hr_ensure_connection(b);
	if (rc)
		return rc;
	c = cmd_new(b, cb, payload);
	if (!c)
		return RELAY_ENOMEM;
	c->block_ms = block_ms(argc, argv, argvlen);
	rc = send_cmd(b, c, argc, (const char **)argv, argvlen);
	if (rc)
		relay__hr_cmd_free(c);
	return rc;
}

static void on_script_load(redisAsyncContext *ac, void *reply, void *priv)
{
	hr_backend *b = ac->data;
	redisReply *r = reply;
	int op = (int)(intptr_t)priv;

	if (!b)
		return;
	b->loading[op] = 0;
	if (r && r->type == REDIS_REPLY_STRING && r->len == 40)
		memcpy(b->sha[op], r->str, 41);
}

/*
 * EVALSHA sha numkeys keys... args... (or EVAL source ... while the SHA1
 * is unknown, which also caches the script server-side). An EVALSHA is
 * formatted once and the buffer kept, so a NOSCRIPT reply can resend it.
 */
#define HR_MAX_SCRIPT_ARGS 64

static int hr_script(relay_redis_backend *rb, relay_redis_script op,
		     int numkeys, int argc, const char *const *argv,
		     const size_t *argvlen, relay_redis_reply_cb cb,
		     void *payload)
{
	hr_backend *b = (hr_backend *)rb;
	const char *v[HR_MAX_SCRIPT_ARGS + 3];
	size_t vl[HR_MAX_SCRIPT_ARGS + 3];
	char nk[8];
	hr_cmd *c;
	int rc, i, known;

	if (argc > HR_MAX_SCRIPT_ARGS)
		return RELAY_EINVAL;
	rc = relay__hr_ensure_connection(b);
	if (rc)
		return rc;
	known = b->sha[op][0] != '\0';
	if (!known && !b->loading[op]) {
		if (redisAsyncCommand(b->ac, on_script_load,
				      (void *)(intptr_t)op, "SCRIPT LOAD %s",
				      relay__lua_source[op]) == REDIS_OK)
			b->loading[op] = 1;
	}
	c = cmd_new(b, cb, payload);
	if (!c)
		return RELAY_ENOMEM;
	c->script = op + 1;
	snprintf(nk, sizeof(nk), "%d", numkeys);
	v[0] = known ? "EVALSHA" : "EVAL";
	v[1] = known ? b->sha[op] : relay__lua_source[op];
	v[2] = nk;
	for (i = 0; i < 3; i++)
		vl[i] = strlen(v[i]);
	for (i = 0; i < argc; i++) {
		v[i + 3] = argv[i];
		vl[i + 3] = argvlen ? argvlen[i] : strlen(argv[i]);
	}
	rc = send_cmd(b, c, argc + 3, v, vl);
	if (rc)
		relay__hr_cmd_free(c);
	return rc;
}

static int hr_wait(relay_redis_backend *rb, const int *done)
{
	hr_backend *b = (hr_backend *)rb;

	if (!b->own_loop)
		return RELAY_EINVAL;
	while (!*done)
		ev_run(b->loop, EVRUN_ONCE);
	return 0;
}

static const char *hr_errstr(const relay_redis_backend *rb)
{
	return ((const hr_backend *)rb)->errstr;
}

static void hr_free(relay_redis_backend *rb)
{
	hr_backend *b = (hr_backend *)rb;

	b->closing = 1;
	ev_timer_stop(b->loop, &b->connect_timer);
	ev_timer_stop(b->loop, &b->reconnect_timer);
	relay__hr_drop_connection(b); /* in-flight callbacks: RELAY_ECLOSED */
	relay__hr_fail_waiting(b);
	relay__hr_drop_side(b, &b->retiring);
	relay__hr_drop_side(b, &b->ask_ac);
	relay__hr_sentinel_free(b);
	relay__hr_release(b);         /* the owner's reference */
}

int relay__redis_cluster_mode(relay_redis_backend *rb)
{
	relay_redis_backend *inner = relay__redis_defer_inner(rb);

	if (inner)
		rb = inner;
	if (rb->free != hr_free)
		return 0;
	return ((hr_backend *)rb)->cluster;
}

int relay__redis_legacy_marker_ok(relay_redis_backend *rb)
{
	relay_redis_backend *inner = relay__redis_defer_inner(rb);

	if (inner)
		rb = inner;
	if (rb->free == hr_free)
		return ((hr_backend *)rb)->cluster == 0;
	/* Any other backend gets only what include/relay/sys/redis.h
	 * promised it: a two-key SCHEDULE_PUBLISH. */
	return strcmp(rb->name, "memory") == 0;
}

static int copy_uri(relay__redis_uri *dst, const relay__redis_uri *src)
{
	size_t i;

	*dst = *src;
	dst->seeds = NULL;
	dst->nseeds = 0;
	if (src->nseeds) {
		dst->seeds = relay__calloc(src->nseeds, sizeof(*dst->seeds));
		if (dst->seeds)
			dst->nseeds = src->nseeds;
		for (i = 0; dst->seeds && i < src->nseeds; i++) {
			dst->seeds[i] = src->seeds[i];
			dst->seeds[i].host = relay__strdup(src->seeds[i].host);
		}
	}
	dst->host = relay__strdup(src->host);
	dst->path = relay__strdup(src->path);
	dst->user = relay__strdup(src->user);
	dst->pass = relay__strdup(src->pass);
	dst->master = relay__strdup(src->master);
	for (i = 0; i < dst->nseeds; i++)
		if (!dst->seeds[i].host)
			break;
	if ((src->host && !dst->host) || (src->path && !dst->path) ||
	    (src->user && !dst->user) || (src->pass && !dst->pass) ||
	    (src->master && !dst->master) ||
	    (src->nseeds && !dst->seeds) || i < dst->nseeds) {
		relay__redis_uri_clear(dst);
		return RELAY_ENOMEM;
	}
	return 0;
}

int relay__redis_hiredis_new(relay_redis_backend **out,
			     const relay__redis_uri *uri,
			     const relay_redis_options *opts,
			     struct ev_loop *loop, relay_error *err)
{
	relay_redis_options defaults = RELAY_REDIS_OPTIONS_INIT;
	hr_backend *b;
	int rc;

	*out = NULL;
	b = relay__calloc(1, sizeof(*b));
	if (!b || copy_uri(&b->uri, uri)) {
		relay__free(b);
		return RELAY_ENOMEM;
	}
	b->opts = defaults;
	if (opts)  /* only the fields of the caller's version */
		memcpy(&b->opts, opts, opts->version >= 2 ? sizeof(*opts) :
		       offsetof(relay_redis_options, tls_ca_file));
	/* The TLS paths are read now (relay__hr_tls_init), not kept. */
	b->opts.tls_ca_file = b->opts.tls_ca_dir = NULL;
	b->opts.tls_cert_file = b->opts.tls_key_file = NULL;
	b->opts.tls_server_name = NULL;
	if (b->opts.connect_timeout_ms <= 0)
		b->opts.connect_timeout_ms = 2000;
	if (b->opts.command_timeout_ms == 0)
		b->opts.command_timeout_ms = 5000;
	if (b->opts.reconnect_min_ms <= 0)
		b->opts.reconnect_min_ms = 1000;
	if (b->opts.reconnect_max_ms <= 0)
		b->opts.reconnect_max_ms = 30000;
	b->reconnect_ms = b->opts.reconnect_min_ms;
	b->refs = 1; /* the owner's */
	b->cluster = -1;
	if (relay__hr_init_nodes(b)) {
		relay__hr_release(b);
		return RELAY_ENOMEM;
	}
	rc = relay__hr_tls_init(b, opts, err);
	if (rc) {
		relay__hr_release(b);
		return rc;
	}
	b->seed = (unsigned int)relay_clock_mono_us(b->opts.clock);
	b->own_loop = loop == NULL;
	b->loop = loop ? loop : ev_loop_new(EVFLAG_AUTO);
	if (!b->loop) {
		relay__redis_uri_clear(&b->uri);
		relay__free(b);
		return relay__error_set(err, RELAY_ERROR, NULL, 0, 0,
					"cannot create an event loop");
	}
	relay__hr_conn_init(b);
	relay__hr_sentinel_init(b);
	b->parent.version = RELAY_REDIS_BACKEND_VERSION;
	b->parent.name = "hiredis";
	b->parent.command = hr_command;
	b->parent.script = hr_script;
	b->parent.wait = hr_wait;
	b->parent.errstr = hr_errstr;
	b->parent.free = hr_free;
	*out = &b->parent;
	return 0;
}

int relay_redis_open_libev(relay_redis_backend **out, struct ev_loop *loop,
			   const char *uri, const relay_redis_options *opts,
			   relay_error *err)
{
	relay__redis_uri u;
	int rc;

	*out = NULL;
	if (!loop)
		return RELAY_EINVAL;
	rc = relay__redis_uri_parse(&u, uri, err);
	if (rc)
		return rc;
	if (u.memory) {
		relay_redis_backend *mem;

		rc = relay_redis_memory_new(&mem, opts ? opts->clock : NULL);
		if (rc == 0)
			rc = relay__redis_defer_new(out, mem, loop);
	} else {
		rc = relay__redis_hiredis_new(out, &u, opts, loop, err);
	}
	relay__redis_uri_clear(&u);
	return rc;
}
