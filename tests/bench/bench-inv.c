/*
 * bench-inv.c - the full per-invocation Redis round trip against a local
 * redis-server: try_start → mark_complete → XACK → retain per message,
 * pipelined across WINDOW concurrent messages on one hiredis connection
 * driven by libev. Reported as messages/s beside redis-benchmark's rate
 * for a plain pipelined EVALSHA on the same server in the same run.
 *
 *	bench-inv [MESSAGES [WINDOW]]
 *
 * RELAY_BENCH_FUSED=1 runs the fused tail instead: try_start →
 * complete_ack (mark_complete + XACK + retain in one script).
 * RELAY_BENCH_FUSED=2 runs the engine's common path (backend version 4):
 * claim_start (claim_classification + try_start in one script) →
 * complete_ack.
 *
 * Starts a throwaway redis-server on a unix socket (tests/redis_server.c,
 * compiled in) unless RELAY_BENCH_URI names a server; the baseline needs
 * redis-benchmark and a unix socket.
 */
#include "redis_server.c" /* the helper; built as part of this program */

#include <ev.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "relay/dlq.h"
#include "relay/invocation.h"
#include "relay/redis.h"
#include "relay/relay_libev.h"
#include "../../librelay/invops/invops.h"  /* complete_ack, claim_start */

#define STREAM "bench"
#define GROUP "g"

struct bench {
	relay_redis_backend *b;
	struct ev_loop *loop;
	long total, started, finished, errors;
	int fused;
	char (*ids)[32];
};

struct msg {
	struct bench *bn;
	long i;
	char *key;
	relay_inv_outcome claim;
};

static void start_next(struct bench *bn);

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void msg_done(struct msg *m, int ok)
{
	struct bench *bn = m->bn;

	if (!ok)
		bn->errors++;
	bn->finished++;
	relay_free(m->key);
	free(m);
	start_next(bn);
}

static void on_retain(int status, const relay_inv_outcome *o, void *p)
{
	msg_done(p, status == 0 && o->result == RELAY_INV_R_RECORDED);
}

static void on_ack(relay_redis_backend *b, int status, relay_redis_reply *r,
		   void *p)
{
	struct msg *m = p;
	int ok = status == 0 && r && r->type == RELAY_REDIS_REPLY_INTEGER &&
		 r->integer == 1;

	relay_redis_reply_free(r);
	if (!ok || relay_inv_retain(b, m->key, RELAY_INV_RETENTION_MS,
				    on_retain, m))
		msg_done(m, 0);
}

static void on_complete(int status, const relay_inv_outcome *o, void *p)
{
	struct msg *m = p;
	const char *argv[4] = { "XACK", STREAM, GROUP, m->bn->ids[m->i] };

	if (status || o->result != RELAY_INV_R_RECORDED ||
	    relay_redis_command(m->bn->b, 4, argv, NULL, on_ack, m))
		msg_done(m, 0);
}

static void on_fused(int status, const relay_inv_outcome *o, void *p)
{
	msg_done(p, status == 0 && o->result == RELAY_INV_R_RECORDED);
}

static void on_claim(int status, const relay_inv_outcome *o, void *p)
{
	struct msg *m = p;

	if (status || o->result != RELAY_INV_R_CLAIMED) {
		msg_done(m, 0);
		return;
	}
	m->claim = *o;
	if (m->bn->fused) {  /* 1 and 2 */
		if (relay__inv_complete_ack(m->bn->b, m->key, STREAM,
					    "app/handler", o->attempt,
					    o->token, GROUP, m->bn->ids[m->i],
					    RELAY_INV_RETENTION_MS, NULL,
					    on_fused, m))
			msg_done(m, 0);
		return;
	}
	if (relay_inv_mark_complete(m->bn->b, m->key, "app/handler",
				    o->attempt, o->token, on_complete, m))
		msg_done(m, 0);
}

static void on_claim_start(int status, const relay_inv_outcome *cls,
			   const relay_inv_outcome *start, void *p)
{
	if (!status && cls->result != RELAY_INV_R_CLAIMED) {
		msg_done(p, 0);
		return;
	}
	on_claim(status, start, p);
}

static void start_next(struct bench *bn)
{
	struct msg *m;

	if (bn->started == bn->total)
		return;
	m = calloc(1, sizeof(*m));
	m->bn = bn;
	m->i = bn->started++;
	m->key = relay_inv_key(STREAM, GROUP, bn->ids[m->i]);
	if (bn->fused == 2 ?
	    relay__inv_claim_start(bn->b, m->key, "app/handler",
				   relay_clock_wall_ms(NULL), 6000,
				   on_claim_start, m) :
	    relay_inv_try_start(bn->b, m->key, "app/handler",
				relay_clock_wall_ms(NULL), 6000, on_claim, m))
		msg_done(m, 0);
}

static relay_redis_reply *sync_cmd(relay_redis_backend *b, int argc,
				   const char **argv)
{
	relay_redis_reply *r = NULL;

	if (relay_redis_sync_command(b, &r, argc, argv, NULL)) {
		fprintf(stderr, "bench-inv: %s failed: %s\n", argv[0],
			relay_redis_errstr(b));
		exit(1);
	}
	return r;
}

/* Fill the stream and the PEL (not measured). */
static void prepare(const char *uri, struct bench *bn)
{
	relay_redis_backend *b;
	relay_redis_reply *r;
	const char *flush[] = { "FLUSHALL" };
	const char *grp[] = { "XGROUP", "CREATE", STREAM, GROUP, "0",
			      "MKSTREAM" };
	const char *add[] = { "XADD", STREAM, "*", "event", "{\"n\":1}" };
	char count[24];
	const char *read[] = { "XREADGROUP", "GROUP", GROUP, "c", "COUNT",
			       count, "STREAMS", STREAM, ">" };
	long i;

	if (relay_redis_open(&b, uri, NULL, NULL)) {
		fprintf(stderr, "bench-inv: cannot open %s\n", uri);
		exit(1);
	}
	relay_redis_reply_free(sync_cmd(b, 1, flush));
	relay_redis_reply_free(sync_cmd(b, 6, grp));
	for (i = 0; i < bn->total; i++) {
		r = sync_cmd(b, 5, add);
		snprintf(bn->ids[i], sizeof(bn->ids[i]), "%s", r->str);
		relay_redis_reply_free(r);
	}
	snprintf(count, sizeof(count), "%ld", bn->total);
	relay_redis_reply_free(sync_cmd(b, 9, read));
	relay_redis_free(b);
}

/*
 * Top-level commands since the last CONFIG RESETSTAT: commandstats also
 * counts the commands a script runs, so only the commands a client sends
 * are summed (the script calls, XACK, SCRIPT LOAD).
 */
static long command_calls(const char *uri)
{
	static const char *const sent[] = {
		"cmdstat_evalsha:", "cmdstat_eval:", "cmdstat_xack:",
		"cmdstat_script|load:",
	};
	const char *info[] = { "INFO", "commandstats" };
	relay_redis_backend *b;
	relay_redis_reply *r;
	long total = 0;
	const char *p;
	size_t i;

	if (relay_redis_open(&b, uri, NULL, NULL))
		return -1;
	r = sync_cmd(b, 2, info);
	for (i = 0; i < sizeof(sent) / sizeof(sent[0]); i++) {
		p = strstr(r->str, sent[i]);
		if (!p)
			continue;
		total += atol(strstr(p, "calls=") + 6);
		printf("server %-22s %.*s\n", sent[i] + 8,
		       (int)strcspn(p, "\r\n"), p);
	}
	relay_redis_reply_free(r);
	relay_redis_free(b);
	return total;
}

/* CPU seconds (user + system) of a process, from /proc. */
static double proc_cpu(pid_t pid)
{
	unsigned long ut = 0, st = 0;
	char path[64], buf[1024], *p;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = '\0';
	fclose(f);
	p = strrchr(buf, ')');
	if (p && sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u "
			"%*u %lu %lu", &ut, &st) == 2)
		return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
	return 0;
}

static void reset_stats(const char *uri)
{
	const char *rs[] = { "CONFIG", "RESETSTAT" };
	relay_redis_backend *b;

	if (relay_redis_open(&b, uri, NULL, NULL))
		return;
	relay_redis_reply_free(sync_cmd(b, 2, rs));
	relay_redis_free(b);
}

/* The embedded transition scripts (librelay/lua, generated). */
extern const char *const relay__lua_source[];

/*
 * redis-benchmark, pipelined (-P 16, default 50 clients), running
 * "EVALSHA <sha of @script> @args". Returns requests/s or -1.
 */
static double baseline(const char *sock, long n, const char *script,
		       const char *args)
{
	const char *load[] = { "SCRIPT", "LOAD", script };
	char uri[300], cmd[1024], line[4096];
	relay_redis_backend *b;
	relay_redis_reply *r;
	double rate = -1;
	FILE *f;

	snprintf(uri, sizeof(uri), "unix://%s", sock);
	if (relay_redis_open(&b, uri, NULL, NULL))
		return -1;
	r = sync_cmd(b, 3, load);
	snprintf(cmd, sizeof(cmd),
		 "redis-benchmark -s %s -n %ld -P 16 -q EVALSHA %s %s "
		 "2>/dev/null", sock, n, r->str, args);
	relay_redis_reply_free(r);
	relay_redis_free(b);
	f = popen(cmd, "r");
	if (!f)
		return -1;
	/* progress lines end in \r; the last one holds "N requests per
	 * second" after the command's ": " */
	while (fgets(line, sizeof(line), f)) {
		char *p = strstr(line, " requests per second");
		char *q;

		if (!p)
			continue;
		*p = '\0';
		q = strrchr(line, ' ');
		rate = atof(q ? q + 1 : line);
	}
	pclose(f);
	return rate;
}

int main(int argc, char **argv)
{
	struct bench bn = { 0 };
	relay_redis_options o = RELAY_REDIS_OPTIONS_INIT;
	rt_redis_server srv = { 0 };
	const char *uri = getenv("RELAY_BENCH_URI");
	long window = argc > 2 ? atol(argv[2]) : 256, i, calls;
	double t0, t1, rate, evalsha, trivial, c0, c1, s0 = 0, s1 = 0;
	char sock[300] = "";

	bn.total = argc > 1 ? atol(argv[1]) : 100000;
	bn.fused = getenv("RELAY_BENCH_FUSED") ?
		   atoi(getenv("RELAY_BENCH_FUSED")) : 0;
	if (bn.fused < 0 || bn.fused > 2)
		bn.fused = 0;
	bn.ids = calloc((size_t)bn.total, sizeof(*bn.ids));
	if (!uri) {
		if (rt_redis_server_start(&srv) != 0) {
			fprintf(stderr, "bench-inv: no redis-server\n");
			return 77;
		}
		uri = srv.uri;
		snprintf(sock, sizeof(sock), "%s", srv.sock);
	} else if (strncmp(uri, "unix://", 7) == 0) {
		snprintf(sock, sizeof(sock), "%s", uri + 7);
	}
	prepare(uri, &bn);
	reset_stats(uri);
	bn.loop = ev_loop_new(EVFLAG_AUTO);
	o.command_timeout_ms = 30000;
	if (relay_redis_open_libev(&bn.b, bn.loop, uri, &o, NULL))
		return 1;
	t0 = now_s();
	c0 = proc_cpu(getpid());
	if (srv.pid)
		s0 = proc_cpu(srv.pid);
	for (i = 0; i < window; i++)
		start_next(&bn);
	while (bn.finished < bn.total)
		ev_run(bn.loop, EVRUN_ONCE);
	t1 = now_s();
	c1 = proc_cpu(getpid());
	if (srv.pid)
		s1 = proc_cpu(srv.pid);
	relay_redis_free(bn.b);
	ev_loop_destroy(bn.loop);
	calls = command_calls(uri);
	rate = bn.total / (t1 - t0);
	evalsha = trivial = -1;
	if (sock[0] && !getenv("RELAY_BENCH_NO_BASELINE")) {
		/* the try_start script itself, on a claimed field: the
		 * protected (read-only) path, the cheapest real transition */
		evalsha = baseline(sock, 300000, relay__lua_source[0],
				   "1 relay:invocation:base:g:1-0 app/handler "
				   "1 300000 0123456789abcdef0123456789abcdef");
		trivial = baseline(sock, 300000, "return 1", "0");
	}
	printf("messages:            %ld (window %ld, errors %ld)\n",
	       bn.total, window, bn.errors);
	printf("elapsed:             %.3f s\n", t1 - t0);
	printf("rate:                %.0f messages/s\n", rate);
	printf("commands/message:    %.2f\n", (double)calls / bn.total);
	printf("client CPU:          %.2f s; server CPU: %.2f s\n", c1 - c0,
	       s1 - s0);
	if (evalsha > 0) {
		printf("baseline EVALSHA try_start (redis-benchmark -P 16): "
		       "%.0f calls/s\n", evalsha);
		printf("baseline EVALSHA 'return 1' (redis-benchmark -P 16): "
		       "%.0f calls/s\n", trivial);
		printf("target 50%% of try_start EVALSHA/4: %.0f messages/s\n",
		       evalsha / 8);
		printf("ratio rate/(try_start EVALSHA/4): %.2f\n",
		       rate / (evalsha / 4));
		printf("ratio rate/('return 1' EVALSHA/4): %.2f\n",
		       rate / (trivial / 4));
	}
	free(bn.ids);
	if (srv.pid)
		rt_redis_server_cleanup(&srv);
	return bn.errors ? 1 : 0;
}
