/*
 * redis_sentinel.c - the Redis Sentinel part of the hiredis backend
 * (REDIS_URI "redis+sentinel://[user:pass@]host:port[,host:port...]/
 * master[/db]", doc/configuration.md C-2, doc/operations.md "Redis
 * Sentinel").
 *
 * The known nodes (b->nodes) are the sentinels. Every main connection
 * starts by asking one of them "SENTINEL get-master-addr-by-name
 * <master>" on a short-lived side connection (b->sent_ac, without the
 * URI's password: that is the master's), bounded by the connect timeout.
 * A sentinel that cannot be reached, does not answer in time, refuses
 * the command or knows no such master is left for the next one; when
 * every sentinel of the list failed in a row, the round failed: said
 * once per streak (RELAY-REDIS10, with the last sentinel's reason), and
 * the backend retries after its reconnect backoff like any failed
 * connect. The named master is then connected to as usual (AUTH, SELECT)
 * and asked ROLE before anything else it answers is believed: a node
 * that is not a master (a replica, a sentinel, a stale address during a
 * failover) is refused (RELAY-REDIS12): the connection is dropped, the
 * commands behind ROLE fail with RELAY_ECLOSED, and the sentinels are
 * asked again. A READONLY or LOADING reply later on (the master was
 * demoted by a failover, or restarted) is handled the same way: the
 * command did not run, it fails with RELAY_ECLOSED and the connection
 * is dropped. A lost connection is reconnected as usual, which asks the
 * sentinels again: that is how a failover (+switch-master) is followed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


#include "common.h"
#include "hiredis_int.h"

/* The sentinel being asked, for messages: nodes[cur]. */
static void sentinel_name(const hr_backend *b, char *buf, size_t size)
{
	const relay__redis_node *n = &b->nodes[b->cur];

	snprintf(buf, size, strchr(n->host, ':') ? "[%s]:%d" : "%s:%d",
		 n->host, n->port);
}

/* Let go of the sentinel connection (its callbacks ignore it from here
 * on: ac->data = NULL) and its reference on @b. */
static void sentinel_drop(hr_backend *b)
{
	redisAsyncContext *ac = b->sent_ac;

	ev_timer_stop(b->loop, &b->sent_timer);
	if (!ac)
		return;
	b->sent_ac = NULL;
	ac->data = NULL;
	redisAsyncFree(ac);
	relay__hr_release(b);
}

/*
 * The sentinel nodes[cur] failed (@why): try the next one, or, when
 * every sentinel failed in a row, end the round: errstr says why, once
 * per streak in the log, and the reconnect backoff runs.
 */
static void sentinel_failed(hr_backend *b, const char *why)
{
	char who[HR_MAX_HOST + 10], msg[HR_MAX_HOST + 300];
	char sum[2 * HR_MAX_HOST + 400];

	sentinel_name(b, who, sizeof(who));
	snprintf(msg, sizeof(msg), "redis sentinel %s: %s", who, why);
	relay__hr_set_err(b, msg);
	relay__log(&b->opts.logger, RELAY_LOG_DEBUG, "RELAY-REDIS10", "%s",
		   msg);
	relay__hr_rotate(b);
	if (++b->sent_tried < b->nnodes && !b->closing) {
		relay__hr_sentinel_ask(b);
		return;
	}
	b->sent_tried = 0;
	snprintf(sum, sizeof(sum), "no sentinel of %zu named master '%s' "
		 "(last: %s)", b->nnodes, b->uri.master, msg);
	relay__hr_set_err(b, sum);
	if (!b->sent_fail_logged && !b->closing) {
		b->sent_fail_logged = 1;
		relay__log(&b->opts.logger, RELAY_LOG_WARN, "RELAY-REDIS10",
			   "%s; retrying (backoff up to %d ms)", sum,
			   b->opts.reconnect_max_ms);
	}
	relay__hr_schedule_reconnect(b);
}

static void on_sent_connect(const redisAsyncContext *ac, int status)
{
	hr_backend *b = ac->data;

	if (!b || ac != b->sent_ac || status == REDIS_OK)
		return;
	/* hiredis frees @ac after this callback. */
	ev_timer_stop(b->loop, &b->sent_timer);
	b->sent_ac = NULL;
	relay__hr_hold(b);     /* while this callback runs */
	relay__hr_release(b);  /* the context's reference */
	sentinel_failed(b, ac->errstr[0] ? ac->errstr : "cannot connect");
	relay__hr_release(b);
}

static void on_sent_disconnect(const redisAsyncContext *ac, int status)
{
	hr_backend *b = ac->data;

	(void)status;
	if (!b || ac != b->sent_ac)
		return;
	ev_timer_stop(b->loop, &b->sent_timer);
	b->sent_ac = NULL;
	relay__hr_hold(b);     /* while this callback runs */
	relay__hr_release(b);  /* the context's reference */
	sentinel_failed(b, ac->errstr[0] ? ac->errstr
			: "connection closed before the answer");
	relay__hr_release(b);
}

static void on_sent_timeout(struct ev_loop *loop, ev_timer *w, int revents)
{
	hr_backend *b = w->data;
	char why[64];

	(void)loop;
	(void)revents;
	relay__hr_hold(b);
	sentinel_drop(b);
	snprintf(why, sizeof(why), "no answer within %d ms",
		 b->opts.connect_timeout_ms);
	sentinel_failed(b, why);
	relay__hr_release(b);
}

/* The answer to SENTINEL get-master-addr-by-name: [host, port] or nil. */
static void on_sent_reply(redisAsyncContext *ac, void *reply, void *priv)
{
	hr_backend *b = ac->data;
	redisReply *r = reply;
	char why[200], *end = NULL;
	long port = 0;

	(void)priv;
	if (!b || ac != b->sent_ac || !r)
		return;  /* a lost connection: on_sent_disconnect */
	relay__hr_hold(b);
	sentinel_drop(b);
	if (r->type == REDIS_REPLY_NIL ||
	    (r->type == REDIS_REPLY_ARRAY && r->elements == 0)) {
		snprintf(why, sizeof(why), "knows no master named '%s'",
			 b->uri.master);
		sentinel_failed(b, why);
		goto out;
	}
	if (r->type == REDIS_REPLY_ERROR) {
		snprintf(why, sizeof(why), "refused SENTINEL "
			 "get-master-addr-by-name (not a sentinel?): %.120s",
			 r->str);
		sentinel_failed(b, why);
		goto out;
	}
	if (r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
	    r->element[0]->type == REDIS_REPLY_STRING &&
	    r->element[1]->type == REDIS_REPLY_STRING &&
	    relay__hr_host_ok(r->element[0]->str, r->element[0]->len))
		port = strtol(r->element[1]->str, &end, 10);
	if (port < 1 || port > 65535 || *end) {
		sentinel_failed(b, "answered with something that is not a "
				"host and port");
		goto out;
	}
	if (!b->mhost || strcmp(b->mhost, r->element[0]->str) ||
	    b->mport != (int)port) {
		char *h = relay__strdup(r->element[0]->str);

		if (!h) {
			sentinel_failed(b, "out of memory");
			goto out;
		}
		relay__log(&b->opts.logger, RELAY_LOG_INFO, "RELAY-REDIS11",
			   "redis sentinel: master '%s' is at %s:%ld%s",
			   b->uri.master, h, port, b->mhost ? " (it moved)"
			   : "");
		relay__free(b->mhost);
		b->mhost = h;
		b->mport = (int)port;
	}
	b->sent_tried = 0;
	b->sent_fail_logged = 0;
	b->sent_ready = 1;
	if (!b->closing && !b->ac)
		relay__hr_connect(b);
out:
	relay__hr_release(b);
}

void relay__hr_sentinel_ask(hr_backend *b)
{
	const relay__redis_node *n = &b->nodes[b->cur];
	redisAsyncContext *ac;

	if (b->sent_ac || b->closing)
		return;
	ac = redisAsyncConnect(n->host, n->port);
	if (!ac || ac->err) {
		char why[160];

		snprintf(why, sizeof(why), "%s",
			 ac ? ac->errstr : "out of memory");
		if (ac)
			redisAsyncFree(ac);
		sentinel_failed(b, why);
		return;
	}
	ac->data = b;
	if (redisLibevAttach(b->loop, ac) != REDIS_OK) {
		redisAsyncFree(ac);
		sentinel_failed(b, "cannot attach to the loop");
		return;
	}
	redisAsyncSetConnectCallback(ac, on_sent_connect);
	redisAsyncSetDisconnectCallback(ac, on_sent_disconnect);
	relay__hr_hold(b);  /* the context's reference */
	b->sent_ac = ac;
	ev_timer_set(&b->sent_timer, b->opts.connect_timeout_ms / 1000.0, 0.);
	ev_timer_start(b->loop, &b->sent_timer);
	redisAsyncCommand(ac, on_sent_reply, NULL,
			  "SENTINEL get-master-addr-by-name %s",
			  b->uri.master);
}

void relay__hr_sentinel_init(hr_backend *b)
{
	ev_timer_init(&b->sent_timer, on_sent_timeout, 0., 0.);
	b->sent_timer.data = b;
}

void relay__hr_sentinel_free(hr_backend *b)
{
	sentinel_drop(b);
}

/* Refuse the main connection: @why, then ask the sentinels again. */
static void refuse(hr_backend *b, const char *why)
{
	char msg[HR_MAX_HOST + 300];

	snprintf(msg, sizeof(msg), "redis sentinel: %s:%d, named master "
		 "'%s', %s; asking the sentinels again", b->mhost, b->mport,
		 b->uri.master, why);
	relay__hr_set_err(b, msg);
	relay__log(&b->opts.logger, RELAY_LOG_WARN, "RELAY-REDIS12", "%s",
		   msg);
	relay__hr_drop_connection(b);
}

void relay__hr_on_role(redisAsyncContext *ac, void *reply, void *priv)
{
	hr_backend *b = ac->data;
	redisReply *r = reply;
	char why[120];

	(void)priv;
	if (!b || !r || ac != b->ac)
		return;
	if (r->type == REDIS_REPLY_ARRAY && r->elements > 0 &&
	    r->element[0]->type == REDIS_REPLY_STRING &&
	    strcmp(r->element[0]->str, "master") == 0)
		return;
	if (r->type == REDIS_REPLY_ARRAY && r->elements > 0 &&
	    r->element[0]->type == REDIS_REPLY_STRING)
		snprintf(why, sizeof(why), "is a %.20s, not a master "
			 "(ROLE)", r->element[0]->str);
	else if (r->type == REDIS_REPLY_ERROR)
		snprintf(why, sizeof(why), "refused ROLE: %.80s", r->str);
	else
		snprintf(why, sizeof(why), "answered ROLE oddly");
	relay__hr_hold(b);
	refuse(b, why);
	relay__hr_release(b);
}

int relay__hr_sentinel_reply(hr_backend *b, redisAsyncContext *ac,
			     const redisReply *r)
{
	char why[120];

	if (!b->uri.master || ac != b->ac || r->type != REDIS_REPLY_ERROR ||
	    (strncmp(r->str, "READONLY", 8) && strncmp(r->str, "LOADING", 7)))
		return 0;
	snprintf(why, sizeof(why), "answered %.60s", r->str);
	refuse(b, why);
	return 1;
}
