/*
 * cluster_topology.c - read a CLUSTER SLOTS reply into the distinct nodes
 * it names, without trusting it: the server may be hostile or
 * compromised. Every node entry is checked (a host of HR_MAX_HOST bytes
 * at most, of the characters a host name or IP address uses; a port in
 * 1..65535), the entries are sorted and de-duplicated (n log n: a reply
 * naming 120,000 nodes once took 92 s of the loop with a linear search
 * per entry), and a reply naming more than HR_MAX_NODES distinct nodes or
 * more than 16384 slot ranges is refused as a whole.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "hiredis_int.h"

/* One node entry of the reply, pointing into it. */
typedef struct entry {
	const char *host;
	size_t hlen;
	int port;
} entry;

int relay__hr_host_ok(const char *host, size_t len)
{
	size_t i;
	char ch;

	if (len == 0 || len > HR_MAX_HOST)
		return 0;
	for (i = 0; i < len; i++) {
		ch = host[i];
		/* Letters, digits and . - _ (names), : (IPv6), % (an IPv6
		 * zone). No NUL, which would cut the name hiredis connects
		 * to short of the one compared here; no control bytes, which
		 * would reach the log. */
		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		      (ch >= '0' && ch <= '9') || ch == '.' || ch == '-' ||
		      ch == '_' || ch == ':' || ch == '%'))
			return 0;
	}
	return 1;
}

static int entry_cmp(const void *pa, const void *pb)
{
	const entry *a = pa, *b = pb;
	int c;

	if (a->hlen != b->hlen)
		return a->hlen < b->hlen ? -1 : 1;
	c = memcmp(a->host, b->host, a->hlen);
	if (c)
		return c;
	return (a->port > b->port) - (a->port < b->port);
}

int relay__hr_node_cmp(const void *pa, const void *pb)
{
	const relay__redis_node *a = pa, *b = pb;
	entry ea = { a->host, strlen(a->host), a->port };
	entry eb = { b->host, strlen(b->host), b->port };

	return entry_cmp(&ea, &eb);
}

/* Read one node entry: [host, port, ...]. A nil host means the node that
 * answered (@self). Returns 1 for a valid one, else 0. */
static int read_entry(const redisReply *n, const char *self, entry *e)
{
	const redisReply *h, *p;

	if (n->type != REDIS_REPLY_ARRAY || n->elements < 2)
		return 0;
	h = n->element[0];
	p = n->element[1];
	if (p->type != REDIS_REPLY_INTEGER || p->integer < 1 ||
	    p->integer > 65535)
		return 0;
	if (h->type == REDIS_REPLY_NIL && self) {
		e->host = self;
		e->hlen = strlen(self);
	} else if (h->type == REDIS_REPLY_STRING) {
		e->host = h->str;
		e->hlen = h->len;
	} else {
		return 0;
	}
	e->port = (int)p->integer;
	return relay__hr_host_ok(e->host, e->hlen);
}

void relay__hr_nodes_free(relay__redis_node *nodes, size_t n)
{
	size_t i;

	for (i = 0; nodes && i < n; i++)
		relay__free(nodes[i].host);
	relay__free(nodes);
}

int relay__hr_parse_slots(const redisReply *r, const char *self,
			  relay__redis_node **out, size_t *nout, size_t *bad,
			  char *err, size_t errsize)
{
	const redisReply *range;
	relay__redis_node *nodes = NULL;
	entry *e = NULL;
	size_t i, j, total = 0, n = 0, d;

	*out = NULL;
	*nout = 0;
	*bad = 0;
	if (r->type != REDIS_REPLY_ARRAY) {
		snprintf(err, errsize, "CLUSTER SLOTS reply is not an array");
		return RELAY_EINVAL;
	}
	if (r->elements > 16384) {
		snprintf(err, errsize, "CLUSTER SLOTS reply has %zu slot "
			 "ranges, more than the 16384 slots", r->elements);
		return RELAY_EINVAL;
	}
	for (i = 0; i < r->elements; i++) {
		range = r->element[i];
		if (range->type == REDIS_REPLY_ARRAY && range->elements > 2)
			total += range->elements - 2;
	}
	if (total) {
		e = relay__calloc(total, sizeof(*e));
		if (!e)
			goto nomem;
	}
	for (i = 0; i < r->elements; i++) {
		range = r->element[i];
		if (range->type != REDIS_REPLY_ARRAY)
			continue;
		for (j = 2; j < range->elements; j++) {
			if (read_entry(range->element[j], self, &e[n]))
				n++;
			else
				(*bad)++;
		}
	}
	if (n)
		qsort(e, n, sizeof(*e), entry_cmp);
	for (i = 0, d = 0; i < n; i++)
		if (d == 0 || entry_cmp(&e[d - 1], &e[i]) != 0)
			e[d++] = e[i];
	if (d > HR_MAX_NODES) {
		relay__free(e);
		snprintf(err, errsize, "CLUSTER SLOTS reply names %zu nodes, "
			 "more than the %d accepted", d, HR_MAX_NODES);
		return RELAY_EINVAL;
	}
	if (d) {
		nodes = relay__calloc(d, sizeof(*nodes));
		if (!nodes)
			goto nomem;
	}
	for (i = 0; i < d; i++) {
		nodes[i].host = relay__strndup(e[i].host, e[i].hlen);
		nodes[i].port = e[i].port;
		if (!nodes[i].host) {
			relay__hr_nodes_free(nodes, i);
			goto nomem;
		}
	}
	relay__free(e);
	*out = nodes;
	*nout = d;
	return 0;
nomem:
	relay__free(e);
	snprintf(err, errsize, "out of memory");
	return RELAY_ENOMEM;
}
