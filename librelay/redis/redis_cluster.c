/*
 * redis_cluster.c - the Redis Cluster part of the hiredis backend (the
 * design is at the top of redis_async.c and in doc/operations.md, "Redis
 * Cluster"): the list of known nodes (the URI's seeds plus what the
 * last CLUSTER SLOTS named, read by cluster_topology.c), moving on to the
 * next one after a failure, following MOVED (a new main connection) and
 * ASK (one command behind ASKING on a side connection) to known nodes
 * only, and resending a command answered TRYAGAIN or CLUSTERDOWN, which
 * did not run, after HR_AGAIN_S.
 */
#include <stdio.h>
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

long relay__hr_node_find(const hr_backend *b, const char *host, size_t hlen,
			 int port)
{
	size_t i;

	for (i = 0; i < b->nnodes; i++)
		if (b->nodes[i].port == port &&
		    strlen(b->nodes[i].host) == hlen &&
		    memcmp(b->nodes[i].host, host, hlen) == 0)
			return (long)i;
	return -1;
}

/* Add a seed from the URI (the operator's list) unless known. */
static int node_add(hr_backend *b, const char *host, int port)
{
	relay__redis_node *n;

	if (relay__hr_node_find(b, host, strlen(host), port) >= 0)
		return 0;
	n = relay__realloc(b->nodes, (b->nnodes + 1) * sizeof(*n));
	if (!n)
		return RELAY_ENOMEM;
	b->nodes = n;
	n[b->nnodes].host = relay__strdup(host);
	if (!n[b->nnodes].host)
		return RELAY_ENOMEM;
	n[b->nnodes].port = port;
	b->nnodes++;
	return 0;
}

/* The index of @host:@port in @all: a binary search of the sorted
 * @nsorted first ones, then a linear one of the rest (up to @n). */
static long find_in(const relay__redis_node *all, size_t nsorted, size_t n,
		    const char *host, int port)
{
	relay__redis_node key = { (char *)host, port };
	const relay__redis_node *hit;
	size_t i;

	hit = nsorted ? bsearch(&key, all, nsorted, sizeof(*all),
				relay__hr_node_cmp) : NULL;
	if (hit)
		return (long)(hit - all);
	for (i = nsorted; i < n; i++)
		if (all[i].port == port && strcmp(all[i].host, host) == 0)
			return (long)i;
	return -1;
}

/*
 * The known nodes become the @n sorted ones a CLUSTER SLOTS reply named
 * (taken over), plus the URI's seeds (the operator's, always kept) and
 * the current target (it may have left the map while we talk to it);
 * nodes[cur] stays the same node. 0 or RELAY_ENOMEM (nothing changed).
 */
static int set_topology(hr_backend *b, relay__redis_node *nodes, size_t n)
{
	relay__redis_node *all;
	const char *host;
	size_t m = n, i;
	long cur;
	int port;

	all = relay__realloc(nodes, (n + b->uri.nseeds + 2) * sizeof(*all));
	if (!all) {
		relay__hr_nodes_free(nodes, n);
		return RELAY_ENOMEM;
	}
	/* The URI's host and seeds, then the target. */
	for (i = 0; i <= b->uri.nseeds + 1; i++) {
		if (i == 0) {
			host = b->uri.host;
			port = b->uri.port;
		} else if (i <= b->uri.nseeds) {
			host = b->uri.seeds[i - 1].host;
			port = b->uri.seeds[i - 1].port;
		} else {
			host = b->nnodes ? b->nodes[b->cur].host : NULL;
			port = b->nnodes ? b->nodes[b->cur].port : 0;
		}
		if (!host || find_in(all, n, m, host, port) >= 0)
			continue;
		all[m].host = relay__strdup(host);
		all[m].port = port;
		if (!all[m].host) {
			relay__hr_nodes_free(all, m);
			return RELAY_ENOMEM;
		}
		m++;
	}
	cur = b->nnodes ? find_in(all, n, m, b->nodes[b->cur].host,
				  b->nodes[b->cur].port) : 0;
	relay__hr_nodes_free(b->nodes, b->nnodes);
	b->nodes = all;
	b->nnodes = m;
	b->cur = cur > 0 ? (size_t)cur : 0;
	return 0;
}

/*
 * Take the topology of CLUSTER SLOTS reply @r, which came on @ac. A
 * reply cluster_topology.c refuses is logged and closes @ac when it is
 * the main connection: a server that sends it is not to be trusted with
 * the commands behind it. Returns 0, or RELAY_EINVAL/RELAY_ENOMEM (the
 * known nodes unchanged, errstr set).
 */
static int take_slots(hr_backend *b, redisAsyncContext *ac,
		      const redisReply *r)
{
	relay__redis_node *nodes;
	size_t n, bad;
	char err[120], msg[160];
	int rc;

	rc = relay__hr_parse_slots(r, ac == b->ac && b->nnodes ?
				   b->nodes[b->cur].host : NULL,
				   &nodes, &n, &bad, err, sizeof(err));
	if (rc == 0 && bad)
		relay__log(&b->opts.logger, RELAY_LOG_WARN, "RELAY-REDIS08",
			   "redis cluster: CLUSTER SLOTS names %zu node(s) "
			   "with a port outside 1..65535 or a bad host; "
			   "ignored", bad);
	if (rc == 0)
		rc = set_topology(b, nodes, n);
	if (rc == 0)
		return 0;
	if (rc == RELAY_ENOMEM)
		snprintf(err, sizeof(err), "out of memory");
	snprintf(msg, sizeof(msg), "redis cluster: topology refused: %s",
		 err);
	relay__hr_set_err(b, msg);
	relay__log(&b->opts.logger, RELAY_LOG_ERROR, "RELAY-REDIS08",
		   "%s; closing the connection", msg);
	if (ac == b->ac)
		relay__hr_drop_connection(b);
	return rc;
}

/* CLUSTER SLOTS: an error means a single node; a map names the nodes. */
void relay__hr_on_slots(redisAsyncContext *ac, void *reply, void *priv)
{
	hr_backend *b = ac->data;
	redisReply *r = reply;

	(void)priv;
	if (!b || !r || ac != b->ac)
		return;
	b->answered = 1;  /* every main connection asks this first */
	ev_timer_stop(b->loop, &b->connect_timer);  /* TLS: see on_connect */
	if (r->type != REDIS_REPLY_ARRAY) {
		b->cluster = 0;
		return;
	}
	b->cluster = 1;
	if (b->uri.path)
		return;
	take_slots(b, ac, r);
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

/* Fail @c: its MOVED/ASK target @host:@port is not followed. The host
 * was checked (relay__hr_host_ok), so it is safe to log. */
static void refuse(hr_backend *b, hr_cmd *c, int ask, const char *host,
		   size_t hlen, int port, const char *why)
{
	char msg[HR_MAX_HOST + 120];

	snprintf(msg, sizeof(msg), "redis cluster: %s to %.*s:%d not "
		 "followed: %s", ask ? "ASK" : "MOVED", (int)hlen, host, port,
		 why);
	relay__hr_set_err(b, msg);
	relay__log(&b->opts.logger, RELAY_LOG_WARN, "RELAY-REDIS09", "%s",
		   msg);
	relay__hr_complete(c, RELAY_EBACKEND, NULL);
	relay__hr_cmd_free(c);
}

/* Send @c to known node nodes[@idx]: 0, or -1 (no connection). */
static int follow(hr_backend *b, hr_cmd *c, size_t idx, int ask)
{
	const char *host = b->nodes[idx].host;
	int port = b->nodes[idx].port;

	relay__log(&b->opts.logger, RELAY_LOG_DEBUG, "RELAY-REDIS06",
		   "redis cluster %s: %s:%d", ask ? "ask" : "moved", host,
		   port);
	if (ask) {
		if (b->ask_ac && (b->ask_port != port ||
				  strcmp(b->ask_host, host)))
			relay__hr_drop_side(b, &b->ask_ac);
		if (!b->ask_ac) {
			relay__free(b->ask_host);
			b->ask_host = relay__strdup(host);
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
		    redisAsyncFormattedCommand(b->ask_ac, relay__hr_on_reply,
					       c, c->fmt, c->fmtlen) !=
			    REDIS_OK)
			return -1;
		relay__hr_start_timer(b, c);
		return 0;
	}
	if (idx != b->cur || !b->ac) {
		relay__log(&b->opts.logger, RELAY_LOG_INFO, "RELAY-REDIS07",
			   "redis cluster: slot moved to %s:%d; following",
			   host, port);
		relay__hr_retire(b);
		b->cur = idx;
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

/* The reply to the CLUSTER SLOTS sent for @c, whose MOVED/ASK target
 * (c->rhost:c->rport) was no known node: follow it if the map now names
 * it, else fail @c. */
static void on_refresh(redisAsyncContext *ac, void *reply, void *priv)
{
	hr_cmd *c = priv;
	hr_backend *b = c->b;
	redisReply *r = reply;
	long idx;

	if (c->done || !r || b->closing) {
		relay__hr_complete(c, RELAY_ECLOSED, NULL);  /* or no-op */
		relay__hr_cmd_free(c);
		return;
	}
	if (r->type == REDIS_REPLY_ARRAY && !b->uri.path &&
	    take_slots(b, ac, r) != 0) {
		relay__hr_complete(c, RELAY_EBACKEND, NULL);  /* errstr: why */
		relay__hr_cmd_free(c);
		return;
	}
	idx = relay__hr_node_find(b, c->rhost, strlen(c->rhost), c->rport);
	if (idx < 0) {
		refuse(b, c, c->rask, c->rhost, strlen(c->rhost), c->rport,
		       "not a node of the cluster's topology");
		return;
	}
	if (follow(b, c, (size_t)idx, c->rask) != 0) {
		relay__hr_complete(c, RELAY_ECLOSED, NULL);
		relay__hr_cmd_free(c);
	}
}

/* Ask the current node for the topology again before @c follows a
 * redirect to @host:@port, which is not a known node. */
static void refresh(hr_backend *b, hr_cmd *c, int ask, const char *host,
		    size_t hlen, int port)
{
	relay__free(c->rhost);
	c->rhost = relay__strndup(host, hlen);
	c->rport = port;
	c->rask = ask;
	if (!c->rhost) {
		relay__hr_complete(c, RELAY_ENOMEM, NULL);
		relay__hr_cmd_free(c);
		return;
	}
	relay__log(&b->opts.logger, RELAY_LOG_INFO, "RELAY-REDIS06",
		   "redis cluster: %s to %s:%d, not a known node; asking "
		   "for the topology first", ask ? "ASK" : "MOVED", c->rhost,
		   port);
	if (relay__hr_ensure_connection(b) != 0 ||
	    redisAsyncCommand(b->ac, on_refresh, c, "CLUSTER SLOTS") !=
		    REDIS_OK) {
		relay__hr_complete(c, RELAY_ECLOSED, NULL);
		relay__hr_cmd_free(c);
		return;
	}
	relay__hr_start_timer(b, c);
}

/*
 * Follow a MOVED or ASK reply to @c (see the top of redis_async.c), in
 * cluster mode only and to a node of the topology only: whoever sends a
 * redirect must not choose where this backend connects and sends its
 * password. Returns -1 when the reply stands (not a cluster, a unix
 * socket, too many redirects, an unreadable reply, or a failure to
 * follow: the caller completes @c with it), else 0: @c went out again,
 * waits for a topology refresh, or was failed (RELAY-REDIS09).
 */
int relay__hr_redirect(hr_backend *b, hr_cmd *c, const redisReply *r)
{
	const char *host;
	size_t hlen;
	int port, ask = r->str[0] == 'A';
	long idx;

	if (b->cluster != 1 || b->uri.path || b->closing || !b->nnodes ||
	    ++c->redirects > HR_MAX_REDIRECTS ||
	    parse_redirect(r->str, &host, &hlen, &port))
		return -1;
	if (!hlen) {  /* "the node you asked": the current target */
		host = b->nodes[b->cur].host;
		hlen = strlen(host);
	}
	if (!relay__hr_host_ok(host, hlen)) {
		refuse(b, c, ask, "?", 1, port, "not a host name");
		return 0;
	}
	idx = relay__hr_node_find(b, host, hlen, port);
	if (idx < 0) {
		refresh(b, c, ask, host, hlen, port);
		return 0;
	}
	return follow(b, c, (size_t)idx, ask);
}

/* The known nodes start as the URI's seeds. */
int relay__hr_init_nodes(hr_backend *b)
{
	size_t i;

	if (!b->uri.host)
		return 0;
	if (node_add(b, b->uri.host, b->uri.port))
		return RELAY_ENOMEM;
	for (i = 0; i < b->uri.nseeds; i++)
		if (node_add(b, b->uri.seeds[i].host, b->uri.seeds[i].port))
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
