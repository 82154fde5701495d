/*
 * redis_sentinel.c - the Redis Sentinel part of the hiredis backend
 * (REDIS_URI "redis+sentinel://[user:pass@]host:port[,host:port...]/
 * master[/db]", doc/configuration.md C-2, doc/operations.md "Redis
 * Sentinel").
 *
 * The known nodes (b->nodes, distinct addresses) are the sentinels. A
 * main connection starts with a round: every sentinel is asked at once
 * "SENTINEL get-master-addr-by-name <master>" on a short-lived side
 * connection of its own (without the URI's user and password: those
 * are the master's), the whole round bounded by the connect timeout. A
 * sentinel that cannot be reached, does not answer in time, refuses the
 * command, knows no such master or answers something that is not an
 * address has no vote. An address is trusted only when a majority of
 * the sentinels (n / 2 + 1 of the n listed: 2 of 3, 3 of 4, 1 of 1)
 * name it; the round ends as soon as one has that majority (the
 * others are let go of, a sentinel that named another address is
 * logged: RELAY-REDIS10) or none can reach it any more (RELAY-REDIS10
 * once per streak, saying what each named; the backend retries after
 * its reconnect backoff like any failed connect). Nothing is sent to an
 * address before it has its majority.
 *
 * The trusted address is then connected to with AUTH (the URI's user
 * and password, if any) and ROLE, and nothing else until ROLE says
 * "master": SELECT and the caller's commands follow that answer
 * (relay__hr_ensure_connection() holds them back). A node that is not
 * a master (a replica, a sentinel, a stale address during a failover)
 * is refused (RELAY-REDIS12) and gets nothing more: the connection is
 * dropped and the sentinels are asked again. A READONLY or LOADING
 * reply later on (the master was demoted by a failover, or restarted)
 * is handled the same way: the command did not run, it fails with
 * RELAY_ECLOSED and the connection is dropped. A lost connection is
 * reconnected as usual, which asks the sentinels again: that is how a
 * failover (+switch-master) is followed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


#include "common.h"
#include "hiredis_int.h"

/* One sentinel's part of a round (b->sent[i] is nodes[i]'s). */
struct hr_sent {
	redisAsyncContext *ac;  /* being asked, or NULL */
	char *host;             /* the address it named, or NULL */
	int port;
	int failed;             /* no address from it this round */
};

/* The round's answers listed in a failure message, at most. */
#define SENT_LIST_MAX 3

/* Sentinel @i, for messages. */
static void sentinel_name(const hr_backend *b, size_t i, char *buf,
			  size_t size)
{
	const relay__redis_node *n = &b->nodes[i];

	snprintf(buf, size, strchr(n->host, ':') ? "[%s]:%d" : "%s:%d",
		 n->host, n->port);
}

/* @host:@port, for messages. */
static void addr_name(const char *host, int port, char *buf, size_t size)
{
	snprintf(buf, size, strchr(host, ':') ? "[%s]:%d" : "%s:%d", host,
		 port);
}

/* The sentinel whose connection @ac is, or -1. */
static long slot_of(const hr_backend *b, const redisAsyncContext *ac)
{
	size_t i;

	for (i = 0; b->sent && i < b->nsent; i++)
		if (b->sent[i].ac == ac)
			return (long)i;
	return -1;
}

/* Let go of sentinel @i's connection (its callbacks ignore it from here
 * on: ac->data = NULL) and its reference on @b. */
static void slot_close(hr_backend *b, size_t i)
{
	redisAsyncContext *ac = b->sent[i].ac;

	if (!ac)
		return;
	b->sent[i].ac = NULL;
	ac->data = NULL;
	redisAsyncFree(ac);
	relay__hr_release(b);
}

/* End the round: every sentinel connection let go of, the answers
 * freed. */
static void round_end(hr_backend *b)
{
	size_t i;

	ev_timer_stop(b->loop, &b->sent_timer);
	if (!b->sent)
		return;
	for (i = 0; i < b->nsent; i++) {
		slot_close(b, i);
		relay__free(b->sent[i].host);
	}
	relay__free(b->sent);
	b->sent = NULL;
	b->nsent = 0;
}

/* How many sentinels of the round named the address sentinel @i did. */
static size_t votes(const hr_backend *b, size_t i)
{
	const struct hr_sent *s = &b->sent[i];
	size_t j, n = 0;

	for (j = 0; j < b->nsent; j++)
		if (b->sent[j].host && b->sent[j].port == s->port &&
		    strcmp(b->sent[j].host, s->host) == 0)
			n++;
	return n;
}

/* The first sentinel that named the same address as @i did. */
static int first_of(const hr_backend *b, size_t i)
{
	size_t j;

	for (j = 0; j < i; j++)
		if (b->sent[j].host && b->sent[j].port == b->sent[i].port &&
		    strcmp(b->sent[j].host, b->sent[i].host) == 0)
			return 0;
	return 1;
}

/* Sentinel @i named @host:@port, which the majority did not: said, as
 * the answer of a stale or misconfigured (or hostile) sentinel. */
static void log_dissent(hr_backend *b, size_t i, const char *trusted)
{
	char who[HR_MAX_HOST + 10], what[HR_MAX_HOST + 10];

	sentinel_name(b, i, who, sizeof(who));
	addr_name(b->sent[i].host, b->sent[i].port, what, sizeof(what));
	relay__log(&b->opts.logger, RELAY_LOG_WARN, "RELAY-REDIS10",
		   "redis sentinel %s names %s for master '%s', not %s as "
		   "the majority does; not trusted", who, what, b->uri.master,
		   trusted);
}

/* The address sentinel @i named has its majority: the main connection
 * goes there. */
static void round_accept(hr_backend *b, size_t i, size_t n)
{
	struct hr_sent *s = &b->sent[i];
	char where[HR_MAX_HOST + 10];
	size_t j;

	addr_name(s->host, s->port, where, sizeof(where));
	for (j = 0; j < b->nsent; j++)
		if (b->sent[j].host && (b->sent[j].port != s->port ||
					strcmp(b->sent[j].host, s->host)))
			log_dissent(b, j, where);
	if (!b->mhost || strcmp(b->mhost, s->host) || b->mport != s->port) {
		relay__log(&b->opts.logger, RELAY_LOG_INFO, "RELAY-REDIS11",
			   "redis sentinel: master '%s' is at %s%s, named by "
			   "%zu of %zu sentinels", b->uri.master, where,
			   b->mhost ? " (it moved)" : "", n, b->nsent);
		relay__free(b->mhost);
		b->mhost = s->host;  /* taken from the round */
		b->mport = s->port;
		s->host = NULL;
	}
	round_end(b);
	b->sent_fail_logged = 0;
	b->sent_ready = 1;
	if (!b->closing && !b->ac)
		relay__hr_connect(b);
}

/* Why no address of the round can have its majority (@need of the
 * round's sentinels), in @sum: what each named, or why the last
 * sentinel of the list that failed did not. */
static void fail_reason(const hr_backend *b, size_t need, char *sum,
			size_t size)
{
	char what[HR_MAX_HOST + 10];
	size_t i, listed = 0, failed = 0, pending = 0, len;

	for (i = 0; i < b->nsent; i++) {
		failed += (size_t)b->sent[i].failed;
		pending += !b->sent[i].failed && !b->sent[i].host;
	}
	if (failed + pending == b->nsent) {
		snprintf(sum, size, "no sentinel of %zu named master '%s' "
			 "(last: %s)", b->nsent, b->uri.master, b->sent_why);
		return;
	}
	len = (size_t)snprintf(sum, size, "no majority for master '%s' "
			       "(%zu of %zu sentinels needed):",
			       b->uri.master, need, b->nsent);
	for (i = 0; i < b->nsent && len < size; i++) {
		if (!b->sent[i].host || !first_of(b, i))
			continue;
		if (++listed > SENT_LIST_MAX) {
			len += (size_t)snprintf(sum + len, size - len, ", ...");
			break;
		}
		addr_name(b->sent[i].host, b->sent[i].port, what,
			  sizeof(what));
		len += (size_t)snprintf(sum + len, size - len, "%s %s by %zu",
					listed > 1 ? "," : "", what,
					votes(b, i));
	}
	if (failed && len < size)
		len += (size_t)snprintf(sum + len, size - len, "; %zu failed "
					"(last: %s)", failed, b->sent_why);
	if (pending && len < size)
		snprintf(sum + len, size - len, "; %zu not answered yet",
			 pending);
}

/* No address can have its majority any more: errstr says why, once per
 * streak in the log, and the reconnect backoff runs. Nothing was sent
 * to any address. */
static void round_fail(hr_backend *b, size_t need)
{
	char sum[2 * HR_MAX_HOST + 400];

	fail_reason(b, need, sum, sizeof(sum));
	round_end(b);
	relay__hr_set_err(b, sum);
	if (!b->sent_fail_logged && !b->closing) {
		b->sent_fail_logged = 1;
		relay__log(&b->opts.logger, RELAY_LOG_WARN, "RELAY-REDIS10",
			   "%s; nothing sent to any address; retrying "
			   "(backoff up to %d ms)", sum,
			   b->opts.reconnect_max_ms);
	}
	relay__hr_schedule_reconnect(b);
}

/* After an answer or a failure: end the round when an address has its
 * majority or none can have it any more; else wait for the rest. */
static void round_check(hr_backend *b)
{
	size_t i, n, best = 0, besti = 0, pending = 0;
	size_t need = b->nsent / 2 + 1;

	if (!b->sent || b->sent_batch)
		return;
	for (i = 0; i < b->nsent; i++) {
		if (b->sent[i].failed)
			continue;
		if (!b->sent[i].host) {
			pending++;
			continue;
		}
		n = votes(b, i);
		if (n > best) {
			best = n;
			besti = i;
		}
	}
	if (best >= need)
		round_accept(b, besti, best);
	else if (best + pending < need)
		round_fail(b, need);
}

/* Sentinel @i has no vote this round (@why); its connection is gone. */
static void slot_failed(hr_backend *b, size_t i, const char *why)
{
	char who[HR_MAX_HOST + 10], msg[HR_MAX_HOST + 300];

	sentinel_name(b, i, who, sizeof(who));
	snprintf(msg, sizeof(msg), "redis sentinel %s: %s", who, why);
	relay__log(&b->opts.logger, RELAY_LOG_DEBUG, "RELAY-REDIS10", "%s",
		   msg);
	b->sent[i].failed = 1;
	/* The last failed sentinel of the list is the one messages name
	 * (answers come in any order: this does not depend on it). */
	if (b->sent_why_i < 0 || (size_t)b->sent_why_i <= i) {
		b->sent_why_i = (long)i;
		snprintf(b->sent_why, sizeof(b->sent_why), "%s", msg);
	}
	round_check(b);
}

static void on_sent_connect(const redisAsyncContext *ac, int status)
{
	hr_backend *b = ac->data;
	long i;

	if (!b || status == REDIS_OK || (i = slot_of(b, ac)) < 0)
		return;
	/* hiredis frees @ac after this callback. */
	b->sent[i].ac = NULL;
	relay__hr_hold(b);     /* while this callback runs */
	relay__hr_release(b);  /* the context's reference */
	slot_failed(b, (size_t)i, ac->errstr[0] ? ac->errstr
		    : "cannot connect");
	relay__hr_release(b);
}

static void on_sent_disconnect(const redisAsyncContext *ac, int status)
{
	hr_backend *b = ac->data;
	long i;

	(void)status;
	if (!b || (i = slot_of(b, ac)) < 0)
		return;
	b->sent[i].ac = NULL;
	relay__hr_hold(b);     /* while this callback runs */
	relay__hr_release(b);  /* the context's reference */
	slot_failed(b, (size_t)i, ac->errstr[0] ? ac->errstr
		    : "connection closed before the answer");
	relay__hr_release(b);
}

/* The round's time is up: every sentinel that did not answer fails. */
static void on_sent_timeout(struct ev_loop *loop, ev_timer *w, int revents)
{
	hr_backend *b = w->data;
	char why[64];
	size_t i;

	(void)loop;
	(void)revents;
	relay__hr_hold(b);
	snprintf(why, sizeof(why), "no answer within %d ms",
		 b->opts.connect_timeout_ms);
	b->sent_batch = 1;
	for (i = 0; b->sent && i < b->nsent; i++) {
		if (b->sent[i].failed || b->sent[i].host)
			continue;
		slot_close(b, i);
		slot_failed(b, i, why);
	}
	b->sent_batch = 0;
	round_check(b);
	relay__hr_release(b);
}

/* The answer to SENTINEL get-master-addr-by-name: [host, port] or nil. */
static void on_sent_reply(redisAsyncContext *ac, void *reply, void *priv)
{
	hr_backend *b = ac->data;
	redisReply *r = reply;
	char why[200], *end = NULL, *h;
	long port = 0, i;

	(void)priv;
	if (!b || !r || (i = slot_of(b, ac)) < 0)
		return;  /* a lost connection: on_sent_disconnect */
	relay__hr_hold(b);
	slot_close(b, (size_t)i);
	if (r->type == REDIS_REPLY_NIL ||
	    (r->type == REDIS_REPLY_ARRAY && r->elements == 0)) {
		snprintf(why, sizeof(why), "knows no master named '%s'",
			 b->uri.master);
		slot_failed(b, (size_t)i, why);
		goto out;
	}
	if (r->type == REDIS_REPLY_ERROR) {
		snprintf(why, sizeof(why), "refused SENTINEL "
			 "get-master-addr-by-name (not a sentinel?): %.120s",
			 r->str);
		slot_failed(b, (size_t)i, why);
		goto out;
	}
	if (r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
	    r->element[0]->type == REDIS_REPLY_STRING &&
	    r->element[1]->type == REDIS_REPLY_STRING &&
	    relay__hr_host_ok(r->element[0]->str, r->element[0]->len))
		port = strtol(r->element[1]->str, &end, 10);
	if (port < 1 || port > 65535 || *end) {
		slot_failed(b, (size_t)i, "answered with something that is "
			    "not a host and port");
		goto out;
	}
	h = relay__strdup(r->element[0]->str);
	if (!h) {
		slot_failed(b, (size_t)i, "out of memory");
		goto out;
	}
	b->sent[i].host = h;
	b->sent[i].port = (int)port;
	round_check(b);
out:
	relay__hr_release(b);
}

/* Open sentinel @i's connection and ask it; a failure at once is its
 * vote lost (the caller checks the round). */
static void slot_ask(hr_backend *b, size_t i)
{
	const relay__redis_node *n = &b->nodes[i];
	redisAsyncContext *ac;
	char why[160];

	ac = redisAsyncConnect(n->host, n->port);
	if (!ac || ac->err) {
		snprintf(why, sizeof(why), "%s",
			 ac ? ac->errstr : "out of memory");
		if (ac)
			redisAsyncFree(ac);
		slot_failed(b, i, why);
		return;
	}
	ac->data = b;
	if (redisLibevAttach(b->loop, ac) != REDIS_OK) {
		redisAsyncFree(ac);
		slot_failed(b, i, "cannot attach to the loop");
		return;
	}
	redisAsyncSetConnectCallback(ac, on_sent_connect);
	redisAsyncSetDisconnectCallback(ac, on_sent_disconnect);
	relay__hr_hold(b);  /* the context's reference */
	b->sent[i].ac = ac;
	redisAsyncCommand(ac, on_sent_reply, NULL,
			  "SENTINEL get-master-addr-by-name %s",
			  b->uri.master);
}

void relay__hr_sentinel_ask(hr_backend *b)
{
	size_t i;

	if (b->sent || b->closing)
		return;
	b->sent = relay__calloc(b->nnodes, sizeof(*b->sent));
	if (!b->sent) {
		relay__hr_set_err(b, "redis sentinel: out of memory");
		relay__hr_schedule_reconnect(b);
		return;
	}
	b->nsent = b->nnodes;
	b->sent_why_i = -1;
	b->sent_why[0] = '\0';
	relay__hr_hold(b);
	ev_timer_set(&b->sent_timer, b->opts.connect_timeout_ms / 1000.0, 0.);
	ev_timer_start(b->loop, &b->sent_timer);
	b->sent_batch = 1;  /* decide once every sentinel was asked */
	for (i = 0; i < b->nsent; i++)
		slot_ask(b, i);
	b->sent_batch = 0;
	round_check(b);
	relay__hr_release(b);
}

int relay__hr_sentinel_asking(const hr_backend *b)
{
	return b->sent != NULL;
}

void relay__hr_sentinel_init(hr_backend *b)
{
	ev_timer_init(&b->sent_timer, on_sent_timeout, 0., 0.);
	b->sent_timer.data = b;
}

void relay__hr_sentinel_free(hr_backend *b)
{
	round_end(b);
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
	b->answered = 1;
	if (b->setup_failed)
		return;  /* AUTH refused: its error stands, ac is closing */
	if (r->type == REDIS_REPLY_ARRAY && r->elements > 0 &&
	    r->element[0]->type == REDIS_REPLY_STRING &&
	    strcmp(r->element[0]->str, "master") == 0) {
		/* Trusted: the rest of the set-up, then the commands. A
		 * sentinel's master is never a Redis Cluster node. */
		ev_timer_stop(b->loop, &b->connect_timer);
		b->cluster = 0;
		relay__hr_select_db(b, ac);
		b->master_ok = 1;
		return;
	}
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
