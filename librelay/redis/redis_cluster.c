/*
 * redis_cluster.c - the Redis Cluster part of the hiredis backend (the
 * design is at the top of redis_async.c and in doc/operations.md, "Redis
 * Cluster"): the list of known nodes (the URI's seeds plus what CLUSTER
 * SLOTS names), moving on to the next one after a failure, following
 * MOVED (a new main connection) and ASK (one command behind ASKING on a
 * side connection), and resending a command answered TRYAGAIN or
 * CLUSTERDOWN, which did not run, after HR_AGAIN_S.
 */
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "hiredis_int.h"

/* After a failed or lost connection: try the next known node. */
void relay__hr_rotate(hr_backend *b)
{
	if (b->nnodes > 1)
		b->cur = (b->cur + 1) % b->nnodes;
}

/* The index of node @host:@port, added when new; or -1 (no memory). */
long relay__hr_node_index(hr_backend *b, const char *host, size_t hlen,
			  int port)
{
	relay__redis_node *n;
	size_t i;

	for (i = 0; i < b->nnodes; i++)
		if (b->nodes[i].port == port &&
		    strlen(b->nodes[i].host) == hlen &&
		    memcmp(b->nodes[i].host, host, hlen) == 0)
			return (long)i;
	n = relay__realloc(b->nodes, (b->nnodes + 1) * sizeof(*n));
	if (!n)
		return -1;
	b->nodes = n;
	n[b->nnodes].host = relay__strndup(host, hlen);
	if (!n[b->nnodes].host)
		return -1;
	n[b->nnodes].port = port;
	return (long)b->nnodes++;
}

/* CLUSTER SLOTS: an error means a single node; a map names the nodes. */
void relay__hr_on_slots(redisAsyncContext *ac, void *reply, void *priv)
{
	hr_backend *b = ac->data;
	redisReply *r = reply, *n;
	size_t i, j;

	(void)priv;
	if (!b || !r || ac != b->ac)
		return;
	if (r->type != REDIS_REPLY_ARRAY) {
		b->cluster = 0;
		return;
	}
	b->cluster = 1;
	if (b->uri.path)
		return;
	for (i = 0; i < r->elements; i++) {
		if (r->element[i]->type != REDIS_REPLY_ARRAY)
			continue;
		for (j = 2; j < r->element[i]->elements; j++) {
			n = r->element[i]->element[j];
			if (n->type != REDIS_REPLY_ARRAY || n->elements < 2 ||
			    n->element[0]->type != REDIS_REPLY_STRING ||
			    !n->element[0]->len ||
			    n->element[1]->type != REDIS_REPLY_INTEGER)
				continue;
			relay__hr_node_index(b, n->element[0]->str, n->element[0]->len,
				   (int)n->element[1]->integer);
		}
	}
}

static void unwait(hr_backend *b, hr_cmd *c)
{
	hr_cmd **pp;

	for (pp = &b->waiting; *pp; pp = &(*pp)->wnext)
		if (*pp == c) {
			*pp = c->wnext;
			break;
		}
	c->waiting = 0;
	ev_timer_stop(b->loop, &c->again);
}

void relay__hr_on_again(struct ev_loop *loop, ev_timer *w, int revents)
{
	hr_cmd *c = w->data;
	hr_backend *b = c->b;

	(void)loop;
	(void)revents;
	unwait(b, c);
	c->redirects = 0;
	if (!c->done && relay__hr_ensure_connection(b) == 0 &&
	    redisAsyncFormattedCommand(b->ac, relay__hr_on_reply, c, c->fmt,
				       c->fmtlen) == REDIS_OK)
		return;
	relay__hr_complete(c, RELAY_ECLOSED, NULL);
	relay__hr_cmd_free(c);
}

/* "MOVED <slot> <host>:<port>" / "ASK <slot> <host>:<port>": the node.
 * An empty host means the node that answered. Returns 0 or -1. */
static int parse_redirect(const char *s, const char **host, size_t *hlen,
			  int *port)
{
	const char *sp = strchr(s, ' '), *addr, *colon;
	char *end;
	long p;

	if (!sp || !(addr = strchr(sp + 1, ' ')))
		return -1;
	addr++;
	colon = strrchr(addr, ':');
	if (!colon)
		return -1;
	p = strtol(colon + 1, &end, 10);
	if (*end || p < 1 || p > 65535)
		return -1;
	*host = addr;
	*hlen = (size_t)(colon - addr);
	*port = (int)p;
	return 0;
}

/*
 * Follow a MOVED or ASK reply to @c (see the top of redis_async.c). Returns 0
 * when @c went out again, -1 when the reply stands (too many redirects,
 * a unix socket, or a failure: the caller completes @c with it).
 */
int relay__hr_redirect(hr_backend *b, hr_cmd *c, const redisReply *r)
{
	const char *host;
	size_t hlen;
	int port, ask = r->str[0] == 'A';
	long idx;

	if (b->uri.path || b->closing || ++c->redirects > HR_MAX_REDIRECTS ||
	    parse_redirect(r->str, &host, &hlen, &port))
		return -1;
	if (!hlen) {  /* "the node you asked": the current target */
		host = b->nodes[b->cur].host;
		hlen = strlen(host);
	}
	idx = relay__hr_node_index(b, host, hlen, port);
	if (idx < 0)
		return -1;
	relay__log(&b->opts.logger, RELAY_LOG_DEBUG, "RELAY-REDIS06",
		   "redis cluster %s: %s", ask ? "ask" : "moved", r->str);
	if (ask) {
		if (b->ask_ac && (b->ask_port != port ||
				  strcmp(b->ask_host, b->nodes[idx].host)))
			relay__hr_drop_side(b, &b->ask_ac);
		if (!b->ask_ac) {
			relay__free(b->ask_host);
			b->ask_host = relay__strdup(b->nodes[idx].host);
			b->ask_port = port;
			if (!b->ask_host)
				return -1;
			b->ask_ac = relay__hr_open_ctx(b, b->ask_host, port);
			if (!b->ask_ac)
				return -1;
		}
		if (c->script)
			redisAsyncCommand(b->ask_ac, NULL, NULL,
					  "SCRIPT LOAD %s",
					  relay__lua_source[c->script - 1]);
		if (redisAsyncCommand(b->ask_ac, NULL, NULL, "ASKING") !=
			    REDIS_OK ||
		    redisAsyncFormattedCommand(b->ask_ac, relay__hr_on_reply, c, c->fmt,
					       c->fmtlen) != REDIS_OK)
			return -1;
		relay__hr_start_timer(b, c);
		return 0;
	}
	if ((size_t)idx != b->cur || !b->ac) {
		relay__log(&b->opts.logger, RELAY_LOG_INFO, "RELAY-REDIS07",
			   "redis cluster: slot moved to %s:%d; following",
			   b->nodes[idx].host, port);
		relay__hr_retire(b);
		b->cur = (size_t)idx;
		ev_timer_stop(b->loop, &b->reconnect_timer);
		relay__hr_connect(b);
		if (!b->ac)
			return -1;
	}
	if (redisAsyncFormattedCommand(b->ac, relay__hr_on_reply, c, c->fmt,
				       c->fmtlen) != REDIS_OK)
		return -1;
	relay__hr_start_timer(b, c);
	return 0;
}

/* The known nodes start as the URI's seeds. */
int relay__hr_init_nodes(hr_backend *b)
{
	size_t i;

	if (!b->uri.host)
		return 0;
	if (relay__hr_node_index(b, b->uri.host, strlen(b->uri.host), b->uri.port) < 0)
		return RELAY_ENOMEM;
	for (i = 0; i < b->uri.nseeds; i++)
		if (relay__hr_node_index(b, b->uri.seeds[i].host,
			       strlen(b->uri.seeds[i].host),
			       b->uri.seeds[i].port) < 0)
			return RELAY_ENOMEM;
	return 0;
}

void relay__hr_wait_again(hr_backend *b, hr_cmd *c)
{
	c->waiting = 1;
	c->wnext = b->waiting;
	b->waiting = c;
	ev_timer_set(&c->again, HR_AGAIN_S, 0.);
	ev_timer_start(b->loop, &c->again);
}

void relay__hr_fail_waiting(hr_backend *b)
{
	while (b->waiting) {
		hr_cmd *c = b->waiting;

		unwait(b, c);
		relay__hr_complete(c, RELAY_ECLOSED, NULL);
		relay__hr_cmd_free(c);
	}
}
