/*
 * test_redirect.c - the hiredis backend against a hostile or compromised
 * Redis server: a scripted fake server (a thread, two listeners on
 * 127.0.0.1) whose node A is the URI's and whose node B is "elsewhere"
 * and records every connection and AUTH it gets. MOVED/ASK replies are
 * followed only on a cluster and only to nodes of its topology (never
 * with the password to an address the reply chose); a CLUSTER SLOTS
 * reply is read in n log n, refused beyond HR_MAX_NODES nodes, and its
 * bad ports and hosts are not nodes. The pure parser is tested on
 * replies built with hiredis' own reader.
 */
#define _GNU_SOURCE  /* memmem */
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "relaytest.h"

#include "hiredis_int.h"
#include "relay/redis.h"

/* ---- the fake server ------------------------------------------------ */

/* The server thread cannot longjmp out of a case as RT_ASSERT does. */
#define FK_CHECK(cond)                                                  \
	do {                                                            \
		if (!(cond)) {                                          \
			fprintf(stderr, "fake server: %s\n", #cond);   \
			abort();                                        \
		}                                                       \
	} while (0)

enum scenario {
	S_SINGLE,       /* CLUSTER SLOTS: an error (not a cluster) */
	S_CLUSTER_A,    /* a cluster of node A alone */
	S_A_THEN_B,     /* A alone, then A and B from the second ask on */
	S_HUGE,         /* A and 119,999 other nodes */
	S_BAD_PORT,     /* A and B's port + 65536; GET closes */
};

#define FK_CLIENTS 16
#define FK_HUGE 120000

typedef struct fk_node {
	int lfd;
	int port;
	atomic_int conns;
	atomic_int auths;
	atomic_int slots;       /* CLUSTER SLOTS asked */
} fk_node;

typedef struct fk_client {
	int fd;
	int node;
	char *buf;
	size_t len, cap;
} fk_client;

static struct {
	fk_node node[2];        /* A, B */
	fk_client cl[FK_CLIENTS];
	int wake[2];
	enum scenario sc;
	int ask;                /* A answers ASK instead of MOVED */
	pthread_t thr;
} fk;

typedef struct sbuf {
	char *p;
	size_t len, cap;
} sbuf;

static void sb_add(sbuf *s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void sb_add(sbuf *s, const char *fmt, ...)
{
	va_list ap;
	int n;

	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(s->p ? s->p + s->len : NULL,
			      s->p ? s->cap - s->len : 0, fmt, ap);
		va_end(ap);
		FK_CHECK(n >= 0);
		if (s->p && s->len + (size_t)n < s->cap)
			break;
		s->cap = (s->cap + (size_t)n + 1) * 2;
		s->p = realloc(s->p, s->cap);
		FK_CHECK(s->p != NULL);
	}
	s->len += (size_t)n;
}

/* @len bytes as they are (a NUL included). */
static void sb_raw(sbuf *s, const char *buf, size_t len)
{
	if (s->cap - s->len <= len) {
		s->cap = (s->cap + len + 1) * 2;
		s->p = realloc(s->p, s->cap);
		FK_CHECK(s->p != NULL);
	}
	memcpy(s->p + s->len, buf, len);
	s->len += len;
	s->p[s->len] = '\0';
}

static void sb_node(sbuf *s, const char *host, long port)
{
	sb_add(s, "*3\r\n$%zu\r\n%s\r\n:%ld\r\n$2\r\nid\r\n", strlen(host),
	       host, port);
}

/* One range of all 16384 slots naming A and whatever the scenario adds. */
static void slots_reply(sbuf *s, int asked)
{
	char host[32];
	int i, extra = 0;

	if (fk.sc == S_SINGLE) {
		sb_add(s, "-ERR This instance has cluster support "
		       "disabled\r\n");
		return;
	}
	if (fk.sc == S_HUGE)
		extra = FK_HUGE - 1;
	else if ((fk.sc == S_A_THEN_B && asked > 1) || fk.sc == S_BAD_PORT)
		extra = 1;
	sb_add(s, "*1\r\n*%d\r\n:0\r\n:16383\r\n", 3 + extra);
	sb_node(s, "127.0.0.1", fk.node[0].port);
	if (fk.sc == S_A_THEN_B && extra)
		sb_node(s, "127.0.0.1", fk.node[1].port);
	else if (fk.sc == S_BAD_PORT)  /* what getaddrinfo() reads as B */
		sb_node(s, "127.0.0.1", fk.node[1].port + 65536L);
	for (i = 0; fk.sc == S_HUGE && i < extra; i++) {
		snprintf(host, sizeof(host), "10.%d.%d.%d", i >> 16,
			 (i >> 8) & 255, i & 255);
		sb_node(s, host, 7000);
	}
}

/* Answer one command on node @n; 0, or -1 to close the connection. */
static int answer(int n, int argc, char **argv, size_t *argl, sbuf *s)
{
	fk_node *nd = &fk.node[n];

	(void)argl;
	if (!strcasecmp(argv[0], "AUTH")) {
		atomic_fetch_add(&nd->auths, 1);
		sb_add(s, "+OK\r\n");
	} else if (!strcasecmp(argv[0], "CLUSTER") && argc > 1) {
		slots_reply(s, atomic_fetch_add(&nd->slots, 1) + 1);
	} else if (!strcasecmp(argv[0], "PING")) {
		sb_add(s, "+PONG\r\n");
	} else if (!strcasecmp(argv[0], "ASKING")) {
		sb_add(s, "+OK\r\n");
	} else if (!strcasecmp(argv[0], "GET") && n == 1) {
		sb_add(s, "$5\r\nfromB\r\n");
	} else if (!strcasecmp(argv[0], "GET")) {
		if (fk.sc == S_BAD_PORT)
			return -1;
		sb_add(s, "-%s 42 127.0.0.1:%d\r\n", fk.ask ? "ASK" : "MOVED",
		       fk.node[1].port);
	} else {
		sb_add(s, "-ERR unknown command\r\n");
	}
	return 0;
}

/* Parse and answer the complete commands in @c's buffer. */
static int serve(fk_client *c)
{
	char *argv[8], *p, *end, *eol;
	size_t argl[8], used;
	long argc, i, len;
	sbuf s = { NULL, 0, 0 };
	int rc = 0;

	for (;;) {
		p = c->buf;
		end = c->buf + c->len;
		if (p == end || *p != '*' ||
		    !(eol = memmem(p, (size_t)(end - p), "\r\n", 2)))
			break;
		argc = strtol(p + 1, NULL, 10);
		if (argc < 1 || argc > 8)
			return -1;
		p = eol + 2;
		for (i = 0; i < argc; i++) {
			if (p >= end || *p != '$' ||
			    !(eol = memmem(p, (size_t)(end - p), "\r\n", 2)))
				break;
			len = strtol(p + 1, NULL, 10);
			if (len < 0 || eol + 2 + len + 2 > end)
				break;
			argv[i] = eol + 2;
			argl[i] = (size_t)len;
			argv[i][len] = '\0';  /* over the "\r" */
			p = eol + 2 + len + 2;
		}
		if (i < argc)
			break;  /* incomplete */
		used = (size_t)(p - c->buf);
		if (answer(c->node, (int)argc, argv, argl, &s) < 0) {
			rc = -1;
			break;
		}
		memmove(c->buf, p, c->len - used);
		c->len -= used;
	}
	/* What came before a command that closes is answered first. */
	for (used = 0; used < s.len;) {
		ssize_t w = write(c->fd, s.p + used, s.len - used);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			rc = -1;
			break;
		}
		used += (size_t)w;
	}
	free(s.p);
	return rc;
}

static void drop_client(fk_client *c)
{
	close(c->fd);
	free(c->buf);
	memset(c, 0, sizeof(*c));
	c->fd = -1;
}

static void *fk_thread(void *arg)
{
	struct pollfd pf[3 + FK_CLIENTS];
	int i, n, fd;
	ssize_t r;

	(void)arg;
	for (;;) {
		pf[0] = (struct pollfd){ fk.wake[0], POLLIN, 0 };
		pf[1] = (struct pollfd){ fk.node[0].lfd, POLLIN, 0 };
		pf[2] = (struct pollfd){ fk.node[1].lfd, POLLIN, 0 };
		for (i = 0; i < FK_CLIENTS; i++)
			pf[3 + i] = (struct pollfd){ fk.cl[i].fd, POLLIN, 0 };
		if (poll(pf, 3 + FK_CLIENTS, -1) < 0)
			continue;
		if (pf[0].revents)
			break;
		for (n = 0; n < 2; n++) {
			if (!pf[1 + n].revents)
				continue;
			fd = accept(fk.node[n].lfd, NULL, NULL);
			if (fd < 0)
				continue;
			atomic_fetch_add(&fk.node[n].conns, 1);
			for (i = 0; i < FK_CLIENTS && fk.cl[i].fd >= 0; i++)
				;
			if (i == FK_CLIENTS) {
				close(fd);
				continue;
			}
			fk.cl[i].fd = fd;
			fk.cl[i].node = n;
		}
		for (i = 0; i < FK_CLIENTS; i++) {
			fk_client *c = &fk.cl[i];

			if (c->fd < 0 || !pf[3 + i].revents)
				continue;
			if (c->cap - c->len < 4096) {
				c->cap = c->cap * 2 + 4096;
				c->buf = realloc(c->buf, c->cap);
				FK_CHECK(c->buf != NULL);
			}
			r = read(c->fd, c->buf + c->len, c->cap - c->len - 1);
			if (r <= 0) {
				drop_client(c);
				continue;
			}
			c->len += (size_t)r;
			if (serve(c) < 0)
				drop_client(c);
		}
	}
	for (i = 0; i < FK_CLIENTS; i++)
		if (fk.cl[i].fd >= 0)
			drop_client(&fk.cl[i]);
	return NULL;
}

static void fk_start(enum scenario sc, int ask)
{
	struct sockaddr_in sa;
	socklen_t sl = sizeof(sa);
	int i, try = 0;

	memset(&fk, 0, sizeof(fk));
	fk.sc = sc;
	fk.ask = ask;
	for (i = 0; i < FK_CLIENTS; i++)
		fk.cl[i].fd = -1;
	RT_ASSERT(pipe(fk.wake) == 0);
	for (i = 0; i < 2; i++) {
		memset(&sa, 0, sizeof(sa));
		sa.sin_family = AF_INET;
		sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		fk.node[i].lfd = socket(AF_INET, SOCK_STREAM, 0);
		RT_ASSERT(fk.node[i].lfd >= 0);
		/* B below 34464, so that B's port + 65536 has 5 digits: the
		 * port string hiredis hands getaddrinfo() holds 5, which
		 * reads it modulo 65536 as B's port. */
		for (try = 0; i == 1 && try < 4000; try++) {
			sa.sin_port = htons((uint16_t)(20000 +
				(getpid() + try) % 14000));
			if (bind(fk.node[i].lfd, (struct sockaddr *)&sa,
				 sizeof(sa)) == 0)
				break;
		}
		if (try == 4000)
			sa.sin_port = 0;
		if (i == 0 || try == 4000)
			RT_ASSERT(bind(fk.node[i].lfd, (struct sockaddr *)&sa,
				       sizeof(sa)) == 0);
		RT_ASSERT(listen(fk.node[i].lfd, 16) == 0);
		RT_ASSERT(getsockname(fk.node[i].lfd, (struct sockaddr *)&sa,
				      &sl) == 0);
		fk.node[i].port = ntohs(sa.sin_port);
	}
	RT_ASSERT(pthread_create(&fk.thr, NULL, fk_thread, NULL) == 0);
}

static void fk_stop(void)
{
	RT_ASSERT(write(fk.wake[1], "x", 1) == 1);
	pthread_join(fk.thr, NULL);
	close(fk.node[0].lfd);
	close(fk.node[1].lfd);
	close(fk.wake[0]);
	close(fk.wake[1]);
}

/* ---- the client ------------------------------------------------------ */

static relay_redis_backend *open_a(void)
{
	relay_redis_options o = RELAY_REDIS_OPTIONS_INIT;
	relay_redis_backend *b;
	relay_error err;
	char uri[96];

	/* Generous: this machine is slow and shared. */
	o.command_timeout_ms = 30000;
	o.connect_timeout_ms = 30000;
	snprintf(uri, sizeof(uri), "redis://:s3cret@127.0.0.1:%d",
		 fk.node[0].port);
	RT_ASSERT(relay_redis_open(&b, uri, &o, &err) == 0);
	return b;
}

static int cmd1(relay_redis_backend *b, const char *c0, const char *c1,
		relay_redis_reply **r)
{
	const char *argv[] = { c0, c1 };

	*r = NULL;
	return relay_redis_sync_command(b, r, c1 ? 2 : 1, argv, NULL);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/*
 * Not a cluster (CLUSTER SLOTS is an error): a MOVED or ASK naming node B
 * is an ordinary error reply; B never sees a connection, let alone the
 * password, which A did get.
 */
static void test_redirect__not_followed_without_cluster(void)
{
	relay_redis_backend *b;
	relay_redis_reply *r;
	int ask;

	for (ask = 0; ask < 2; ask++) {
		fk_start(S_SINGLE, ask);
		b = open_a();
		RT_EQ_INT(cmd1(b, "GET", "k", &r), 0);
		RT_ASSERT(r != NULL);
		RT_EQ_INT(r->type, RELAY_REDIS_REPLY_ERROR);
		RT_CHECK(strncmp(r->str, ask ? "ASK 42 " : "MOVED 42 ",
				 ask ? 7 : 9) == 0);
		relay_redis_reply_free(r);
		RT_EQ_INT(relay__redis_cluster_mode(b), 0);
		/* A second round trip: anything the redirect started to B
		 * would have reached its listener by now. */
		RT_EQ_INT(cmd1(b, "PING", NULL, &r), 0);
		relay_redis_reply_free(r);
		relay_redis_free(b);
		RT_CHECK(atomic_load(&fk.node[0].auths) >= 1);
		RT_EQ_INT(atomic_load(&fk.node[1].conns), 0);
		RT_EQ_INT(atomic_load(&fk.node[1].auths), 0);
		fk_stop();
	}
}

/*
 * A cluster whose topology does not name B: the MOVED/ASK to B makes the
 * backend ask A for the topology again, which still lacks B, so the
 * command fails with a clear error; B gets no connection.
 */
static void test_redirect__unknown_node_refused(void)
{
	relay_redis_backend *b;
	relay_redis_reply *r;
	int ask;

	for (ask = 0; ask < 2; ask++) {
		fk_start(S_CLUSTER_A, ask);
		b = open_a();
		RT_EQ_INT(cmd1(b, "GET", "k", &r), RELAY_EBACKEND);
		RT_CHECK(r == NULL);
		if (!strstr(relay_redis_errstr(b), "not followed") ||
		    !strstr(relay_redis_errstr(b), "topology"))
			RT_FAILF("errstr: \"%s\"", relay_redis_errstr(b));
		RT_EQ_INT(relay__redis_cluster_mode(b), 1);
		RT_EQ_INT(atomic_load(&fk.node[0].slots), 2);  /* refreshed */
		/* The connection to A is still good. */
		RT_EQ_INT(cmd1(b, "PING", NULL, &r), 0);
		RT_CHECK(r && r->type == RELAY_REDIS_REPLY_STATUS);
		relay_redis_reply_free(r);
		relay_redis_free(b);
		RT_EQ_INT(atomic_load(&fk.node[1].conns), 0);
		RT_EQ_INT(atomic_load(&fk.node[1].auths), 0);
		fk_stop();
	}
}

/* A node the first map lacked but the refreshed one names (it joined
 * the cluster) is followed, with AUTH: it is a node of the cluster. */
static void test_redirect__node_known_after_refresh(void)
{
	relay_redis_backend *b;
	relay_redis_reply *r;
	int ask;

	for (ask = 0; ask < 2; ask++) {
		fk_start(S_A_THEN_B, ask);
		b = open_a();
		RT_EQ_INT(cmd1(b, "GET", "k", &r), 0);
		RT_CHECK(r && r->type == RELAY_REDIS_REPLY_STRING &&
			 strcmp(r->str, "fromB") == 0);
		relay_redis_reply_free(r);
		relay_redis_free(b);
		RT_EQ_INT(atomic_load(&fk.node[0].slots), 2);
		RT_EQ_INT(atomic_load(&fk.node[1].conns), 1);
		RT_EQ_INT(atomic_load(&fk.node[1].auths), 1);
		fk_stop();
	}
}

/*
 * CLUSTER SLOTS naming 120,000 nodes: refused (more than HR_MAX_NODES),
 * the connection closed with the reason as the error, quickly (it took
 * 92 s when every entry was looked up in the list so far).
 */
static void test_redirect__huge_topology_refused(void)
{
	relay_redis_backend *b;
	relay_redis_reply *r;
	double t0;
	int rc;

	fk_start(S_HUGE, 0);
	b = open_a();
	t0 = now_s();
	rc = cmd1(b, "PING", NULL, &r);
	if (now_s() - t0 > 5.0)
		RT_FAILF("took %.1f s", now_s() - t0);
	RT_EQ_INT(rc, RELAY_ECLOSED);
	relay_redis_reply_free(r);
	if (!strstr(relay_redis_errstr(b), "120000 nodes, more than the 1024"))
		RT_FAILF("errstr: \"%s\"", relay_redis_errstr(b));
	relay_redis_free(b);
	fk_stop();
}

/*
 * CLUSTER SLOTS naming 127.0.0.1 with B's port + 65536 (which
 * getaddrinfo() would take as B's port): not a node. When A drops the
 * connection, the backend tries the next known node: A again, never B.
 */
static void test_redirect__bad_port_not_a_node(void)
{
	relay_redis_backend *b;
	relay_redis_reply *r;

	fk_start(S_BAD_PORT, 0);
	b = open_a();
	RT_EQ_INT(cmd1(b, "GET", "k", &r), RELAY_ECLOSED);
	RT_EQ_INT(cmd1(b, "PING", NULL, &r), 0);
	RT_CHECK(r && r->type == RELAY_REDIS_REPLY_STATUS);
	relay_redis_reply_free(r);
	relay_redis_free(b);
	RT_EQ_INT(atomic_load(&fk.node[0].conns), 2);
	RT_EQ_INT(atomic_load(&fk.node[1].conns), 0);
	fk_stop();
}

/* ---- the parser alone ------------------------------------------------ */

static redisReply *parse_resp(const char *buf, size_t len)
{
	redisReader *rd = redisReaderCreate();
	void *reply = NULL;

	RT_ASSERT(rd != NULL);
	RT_ASSERT(redisReaderFeed(rd, buf, len) == REDIS_OK);
	RT_ASSERT(redisReaderGetReply(rd, &reply) == REDIS_OK);
	RT_ASSERT(reply != NULL);
	redisReaderFree(rd);
	return reply;
}

/* Ports outside 1..65535, empty, oversized, NUL-holding or control-
 * holding hosts, and a nil host without a known answering host: each
 * skipped and counted; a nil host with one is that host. */
static void test_topology__bad_entries_skipped(void)
{
	sbuf s = { NULL, 0, 0 };
	char longhost[HR_MAX_HOST + 2];
	relay__redis_node *nodes;
	redisReply *r;
	size_t n, bad;
	char err[128];

	memset(longhost, 'a', sizeof(longhost) - 1);
	longhost[sizeof(longhost) - 1] = '\0';
	sb_add(&s, "*1\r\n*13\r\n:0\r\n:16383\r\n");
	sb_node(&s, "10.0.0.1", 0);
	sb_node(&s, "10.0.0.1", 65536);
	sb_node(&s, "10.0.0.1", -1);
	sb_node(&s, "10.0.0.1", 65536 + 6379);
	sb_node(&s, "", 7000);
	sb_node(&s, longhost, 7000);
	sb_raw(&s, "*2\r\n$3\r\na\0b\r\n:7000\r\n", 20);
	sb_add(&s, "*2\r\n$4\r\na\r\nb\r\n:7000\r\n");
	sb_add(&s, "*2\r\n$-1\r\n:7001\r\n");  /* nil host */
	sb_node(&s, "10.0.0.1", 65535);
	longhost[HR_MAX_HOST] = '\0';  /* the longest accepted */
	sb_node(&s, longhost, 1);
	r = parse_resp(s.p, s.len);
	RT_EQ_INT(relay__hr_parse_slots(r, NULL, &nodes, &n, &bad, err,
					sizeof(err)), 0);
	RT_EQ_INT((int)n, 2);
	RT_EQ_INT((int)bad, 9);
	RT_EQ_STR(nodes[0].host, "10.0.0.1");
	RT_EQ_INT(nodes[0].port, 65535);
	RT_EQ_INT((int)strlen(nodes[1].host), HR_MAX_HOST);
	relay__hr_nodes_free(nodes, n);
	/* With the answering host known, the nil host is that host. */
	RT_EQ_INT(relay__hr_parse_slots(r, "10.0.0.9", &nodes, &n, &bad, err,
					sizeof(err)), 0);
	RT_EQ_INT((int)n, 3);
	RT_EQ_INT((int)bad, 8);
	RT_EQ_STR(nodes[1].host, "10.0.0.9");
	RT_EQ_INT(nodes[1].port, 7001);
	relay__hr_nodes_free(nodes, n);
	freeReplyObject(r);
	free(s.p);
}

/* 16384 ranges naming the same three nodes (a fragmented but honest map):
 * three nodes; exactly HR_MAX_NODES distinct ones: accepted; one more,
 * or more ranges than slots: refused. */
static void test_topology__dedup_and_caps(void)
{
	sbuf s = { NULL, 0, 0 };
	relay__redis_node *nodes;
	redisReply *r;
	size_t n, bad;
	char err[128], host[32];
	int i, extra;

	sb_add(&s, "*16384\r\n");
	for (i = 0; i < 16384; i++) {
		sb_add(&s, "*5\r\n:%d\r\n:%d\r\n", i, i);
		sb_node(&s, "10.0.0.3", 7000);
		sb_node(&s, "10.0.0.1", 7000);
		sb_node(&s, "10.0.0.1", 7001);
	}
	r = parse_resp(s.p, s.len);
	RT_EQ_INT(relay__hr_parse_slots(r, NULL, &nodes, &n, &bad, err,
					sizeof(err)), 0);
	RT_EQ_INT((int)n, 3);
	RT_EQ_INT((int)bad, 0);
	RT_EQ_STR(nodes[0].host, "10.0.0.1");
	RT_EQ_INT(nodes[0].port, 7000);
	RT_EQ_INT(nodes[1].port, 7001);
	RT_EQ_STR(nodes[2].host, "10.0.0.3");
	relay__hr_nodes_free(nodes, n);
	freeReplyObject(r);
	for (extra = 0; extra < 2; extra++) {
		s.len = 0;
		sb_add(&s, "*1\r\n*%d\r\n:0\r\n:16383\r\n",
		       HR_MAX_NODES + extra + 2);
		for (i = 0; i < HR_MAX_NODES + extra; i++) {
			snprintf(host, sizeof(host), "10.1.%d.%d", i >> 8,
				 i & 255);
			sb_node(&s, host, 7000);
		}
		r = parse_resp(s.p, s.len);
		RT_EQ_INT(relay__hr_parse_slots(r, NULL, &nodes, &n, &bad,
						err, sizeof(err)),
			  extra ? RELAY_EINVAL : 0);
		RT_EQ_INT((int)n, extra ? 0 : HR_MAX_NODES);
		RT_CHECK(extra ? nodes == NULL && strstr(err, "more than")
			       : nodes != NULL);
		relay__hr_nodes_free(nodes, n);
		freeReplyObject(r);
	}
	s.len = 0;
	sb_add(&s, "*16385\r\n");
	for (i = 0; i < 16385; i++)
		sb_add(&s, "*2\r\n:0\r\n:0\r\n");
	r = parse_resp(s.p, s.len);
	RT_EQ_INT(relay__hr_parse_slots(r, NULL, &nodes, &n, &bad, err,
					sizeof(err)), RELAY_EINVAL);
	RT_CHECK(strstr(err, "16385 slot ranges") != NULL);
	freeReplyObject(r);
	free(s.p);
}

static const rt_case cases[] = {
	RT_CASE(test_topology__bad_entries_skipped),
	RT_CASE(test_topology__dedup_and_caps),
	RT_CASE(test_redirect__not_followed_without_cluster),
	RT_CASE(test_redirect__unknown_node_refused),
	RT_CASE(test_redirect__node_known_after_refresh),
	RT_CASE(test_redirect__huge_topology_refused),
	RT_CASE(test_redirect__bad_port_not_a_node),
};

int main(int argc, char **argv)
{
	return rt_main(argc, argv, cases, RT_NCASES(cases));
}
