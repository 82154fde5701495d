/*
 * bench-pipeline.c - events/s through the whole engine lifecycle against a
 * local redis-server: XREADGROUP → classify → match (10 rules loaded) →
 * claim_classification → try_start → in-process no-op handler →
 * mark_complete → XACK → retain, for every event. Reported beside
 * redis-benchmark's raw rate for XADD, EVALSHA and XACK on the same
 * server in the same run.
 *
 *	bench-pipeline [EVENTS [MAX_BUFFERED [MAX_CONCURRENCY]]]
 *
 * RELAY_BENCH_URI (with RELAY_BENCH_SOCK, the same server's socket, for
 * the baselines) makes the engine use another REDIS_URI, e.g. rediss://
 * with REDIS_TLS_CA_FILE (tests/bench/tls-bench.sh compares TLS, TCP and
 * the unix socket in one run).
 *
 * Starts a throwaway redis-server on a unix socket (tests/redis_server.c,
 * compiled in) unless RELAY_BENCH_SOCK names the socket of a running
 * server. The events are published first (pipelined XADD), then the
 * consumer drains them; the figure is events / drain time.
 *
 * RELAY_BENCH_NO_OUTCOMES=1 turns the outcome stream off, as relayd's
 * RELAY_OUTCOMES=0 does (doc/perf/engine.md, "Attempt timeline").
 *
 * Tracing (doc/perf/trace.md): RELAY_BENCH_TRACEPARENT=1 publishes every
 * event with a producer traceparent; RELAY_BENCH_OTLP=URL turns tracing
 * on as relayd does: the span of every attempt goes through the consumer's
 * span callback to relayd's OTLP exporter (relayd/otlp/), posting to URL
 * + /v1/traces on the same loop (OTEL_* variables apply; sample with
 * OTEL_TRACES_SAMPLER). The exporter's counters are printed after the
 * drain.
 */
#include "redis_server.c" /* the helper; built as part of this program */

#include <ev.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include "relay/engine.h"
#include "relay/relay_libev.h"
#include "otlp.h"

/* ---- an in-process no-op executor ---------------------------------------- */

typedef struct job {
	relay_run_done_fn done;
	void *payload;
} job;

typedef struct noop_exec {
	relay_consumer_executor parent;
	struct ev_loop *loop;
	ev_timer tick;  /* completes queued runs on the next iteration */
	job *q;
	size_t n, cap;
	long runs;
} noop_exec;

static void noop_drain(struct ev_loop *loop, ev_timer *w, int revents)
{
	noop_exec *x = w->data;
	relay_run_outcome o;
	job *q = x->q;
	size_t n = x->n, i;

	(void)revents;
	ev_timer_stop(loop, w);
	x->q = NULL;
	x->n = x->cap = 0;
	memset(&o, 0, sizeof(o));
	o.version = RELAY_RUN_OUTCOME_VERSION;
	o.status = RELAY_RUN_OK;
	for (i = 0; i < n; i++)
		q[i].done(&o, q[i].payload);
	free(q);
}

static int noop_run(relay_consumer_executor *xe, const relay_exec_spec *s,
		    relay_output_fn output, relay_run_done_fn done,
		    void *payload, void **handle)
{
	noop_exec *x = (noop_exec *)xe;

	(void)s;
	(void)output;
	if (x->n == x->cap) {
		size_t cap = x->cap ? x->cap * 2 : 64;
		job *q = realloc(x->q, cap * sizeof(*q));

		if (!q)
			return RELAY_ENOMEM;
		x->q = q;
		x->cap = cap;
	}
	x->q[x->n].done = done;
	x->q[x->n].payload = payload;
	x->n++;
	x->runs++;
	*handle = NULL;
	if (!ev_is_active(&x->tick))
		ev_timer_start(x->loop, &x->tick);
	return 0;
}

/* ---- helpers ----------------------------------------------------------- */

static double baseline(const char *sock, long n, const char *args)
{
	char cmd[1024], line[4096];
	double rate = -1;
	FILE *f;

	snprintf(cmd, sizeof(cmd),
		 "redis-benchmark -s %s -n %ld -P 16 -q %s 2>/dev/null", sock,
		 n, args);
	f = popen(cmd, "r");
	if (!f)
		return -1;
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

typedef struct pub {
	long sent, done, errors;
} pub;

static void pub_cb(relay_redis_backend *b, int status, char **ids, size_t n,
		   void *payload)
{
	pub *p = payload;

	(void)b;
	p->done++;
	if (status)
		p->errors++;
	relay_redis_strings_free(ids, n);
}

static int write_apps(const char *dir)
{
	char path[512];
	int a, r;
	FILE *f;

	for (a = 0; a < 2; a++) {
		snprintf(path, sizeof(path), "%s/app%d", dir, a);
		mkdir(path, 0755);
		snprintf(path, sizeof(path), "%s/app%d/template.yaml", dir, a);
		f = fopen(path, "w");
		if (!f)
			return -1;
		fprintf(f, "runtime: exec\ncommand: [/bin/true]\n"
			"concurrency: 1024\nevents:\n");
		for (r = 0; r < 5; r++)
			fprintf(f, "  - handler: h%d\n    pattern:\n"
				"      table_name: [t%d]\n"
				"      event_name: [INSERT, UPDATE]\n",
				r, a * 5 + r);
		fclose(f);
	}
	return 0;
}

/* User + system CPU seconds of this process so far. */
static double cpu_s(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
	       (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}

static long rss_kb(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_maxrss;
}

static void bench_span(const relay_span *s, void *payload)
{
	relay_otlp_submit(payload, s);
}

static char *bench_getenv(const char *name)
{
	/* RELAY_BENCH_OTLP is the endpoint; the other OTEL_* as set. */
	if (strcmp(name, "OTEL_EXPORTER_OTLP_ENDPOINT") == 0)
		return getenv("RELAY_BENCH_OTLP");
	if (strcmp(name, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") == 0)
		return NULL;
	return getenv(name);
}

int main(int argc, char **argv)
{
	long events = argc > 1 ? atol(argv[1]) : 100000;
	unsigned int buffered = argc > 2 ? (unsigned int)atoi(argv[2]) : 16;
	unsigned int conc = argc > 3 ? (unsigned int)atoi(argv[3]) : 8;
	const char *sock = getenv("RELAY_BENCH_SOCK");
	char uri[300], dir[] = "/tmp/relay-bench.XXXXXX", cmd[600];
	rt_redis_server srv;
	struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
	relay_redis_backend *b = NULL;
	relay_redis_options ro = RELAY_REDIS_OPTIONS_INIT;
	relay_appset *apps = NULL;
	relay_consumer *c = NULL;
	relay_consumer_options o = RELAY_CONSUMER_OPTIONS_INIT;
	relay_consumer_metrics m;
	noop_exec x;
	relay_error err;
	pub p = { 0, 0, 0 };
	double t0, t1, rate, bx, be, ba, cpu0, cpu1;
	unsigned int it0, it1;
	long i;
	int rc = 1, started = 0;
	int with_tp = getenv("RELAY_BENCH_TRACEPARENT") != NULL;
	relay_otlp_config oc;
	relay_otlp *ox = NULL;
	relay_otlp_counts ok;
	char oerr[200];

	memset(&srv, 0, sizeof(srv));
	memset(&oc, 0, sizeof(oc));
	if (!sock) {
		if (rt_redis_server_start(&srv) != 0) {
			fprintf(stderr, "bench-pipeline: no redis-server\n");
			return 77;
		}
		started = 1;
		sock = srv.sock;
	}
	snprintf(uri, sizeof(uri), "unix://%s", sock);
	if (getenv("RELAY_BENCH_URI"))
		snprintf(uri, sizeof(uri), "%s", getenv("RELAY_BENCH_URI"));
	ro.tls_ca_file = getenv("REDIS_TLS_CA_FILE");
	memset(&err, 0, sizeof(err));
	if (!mkdtemp(dir) || write_apps(dir) ||
	    relay_appset_load(&apps, dir, NULL, NULL) ||
	    relay_redis_open_libev(&b, loop, uri, &ro, &err)) {
		fprintf(stderr, "bench-pipeline: setup failed %s\n", err.text);
		goto done;
	}

	/* Publish: pipelined XADD, 10 rule shapes round robin. */
	for (i = 0; i < events; i++) {
		static const char *const names[] = { "event", "traceparent" };
		char ev[160];
		const char *vals[2] = { ev, "00-4bf92f3577b34da6a3ce929d0e0e4736-"
					"00f067aa0ba902b7-01" };

		snprintf(ev, sizeof(ev),
			 "{\"event_name\":\"INSERT\",\"table_name\":\"t%ld\","
			 "\"id\":%ld,\"new_image\":{\"status\":\"OK\"}}",
			 i % 10, i);
		if (relay_redis_xadd(b, "events", with_tp ? 2 : 1, names, vals,
				     NULL, pub_cb, &p) == 0)
			p.sent++;
		if (p.sent - p.done > 1000)
			while (p.sent - p.done > 100)
				ev_run(loop, EVRUN_ONCE);
	}
	while (p.done < p.sent)
		ev_run(loop, EVRUN_ONCE);

	memset(&x, 0, sizeof(x));
	x.parent.version = RELAY_CONSUMER_EXECUTOR_VERSION;
	x.parent.run = noop_run;
	x.loop = loop;
	ev_timer_init(&x.tick, noop_drain, 0., 0.);
	x.tick.data = &x;
	o.stream = "events";
	o.group = "relay";
	o.consumer = "bench";
	o.max_buffered = buffered;
	o.max_concurrency = conc;
	o.executor = &x.parent;
	/* RELAY_BENCH_NO_OUTCOMES=1: no outcome stream (RELAY_OUTCOMES=0) */
	o.no_outcomes = getenv("RELAY_BENCH_NO_OUTCOMES") != NULL;
	if (getenv("RELAY_BENCH_OTLP")) {
		relay_logger lg = { NULL, NULL, RELAY_LOG_ERROR };

		if (relay_otlp_config_load(&oc, bench_getenv, oerr,
					   sizeof(oerr)) || !oc.enabled ||
		    relay_otlp_new(&ox, loop, &oc, lg)) {
			fprintf(stderr, "bench-pipeline: no exporter %s\n",
				oerr);
			goto done;
		}
		o.span = bench_span;
		o.span_payload = ox;
		o.sampler = &oc.sampler;
	}
	if (relay_consumer_new(&c, loop, b, NULL, apps, &o, &err) ||
	    relay_consumer_start(c))
		goto done;
	memset(&m, 0, sizeof(m));
	m.version = RELAY_CONSUMER_METRICS_VERSION;
	it0 = ev_iteration(loop);
	cpu0 = cpu_s();
	t0 = ev_time();
	do {
		ev_run(loop, EVRUN_ONCE);
		relay_consumer_metrics_get(c, &m);
	} while ((long)m.acks < events && ev_time() - t0 < 120);
	t1 = ev_time();
	cpu1 = cpu_s();
	it1 = ev_iteration(loop);
	rate = (double)m.acks / (t1 - t0);
	relay_consumer_close(c, NULL);
	for (i = 0; i < 100; i++)
		ev_run(loop, EVRUN_NOWAIT);
	c = NULL;

	if (ox) {
		/* The spans of the drain: let the exporter finish (bounded). */
		double tq = ev_time();

		relay_otlp_flush(ox);
		while (!relay_otlp_idle(ox) && ev_time() - tq < 5) {
			ev_run(loop, EVRUN_ONCE);
			relay_otlp_flush(ox);
		}
		relay_otlp_counts_get(ox, &ok);
		printf("bench-pipeline: tracing: spans exported %llu, dropped "
		       "%llu, failed exports %llu, queued %llu, max RSS %ld "
		       "KiB\n", (unsigned long long)ok.spans_exported,
		       (unsigned long long)ok.spans_dropped,
		       (unsigned long long)ok.exports_failed,
		       (unsigned long long)ok.queued, rss_kb());
	}
	if (getenv("RELAY_BENCH_QUICK")) {
		/* No redis-benchmark baselines: interleaved runs only. */
		printf("bench-pipeline: %ld events, max_buffered %u, "
		       "max_concurrency %u: %.0f events/s, acks %llu, "
		       "%.1f us CPU/event, %.2f iterations/event\n", events,
		       buffered, conc, rate, (unsigned long long)m.acks,
		       m.acks ? (cpu1 - cpu0) * 1e6 / (double)m.acks : 0.,
		       m.acks ? (double)(it1 - it0) / (double)m.acks : 0.);
		rc = (long)m.acks == events ? 0 : 1;
		goto done;
	}
	be = baseline(sock, 200000, "XADD bb '*' event x");
	snprintf(cmd, sizeof(cmd), "EVALSHA %s 0",
		 "e0e1f9fabfc9d4800c877a703b823ac0578ff8db"); /* return 1 */
	{
		const char *load[] = { "SCRIPT", "LOAD", "return 1" };
		relay_redis_reply *r = NULL;
		relay_redis_backend *sb;

		if (relay_redis_open(&sb, uri, NULL, NULL) == 0) {
			if (relay_redis_sync_command(sb, &r, 3, load, NULL) ==
			    0 && r && r->str)
				snprintf(cmd, sizeof(cmd), "EVALSHA %s 0",
					 r->str);
			relay_redis_reply_free(r);
			relay_redis_free(sb);
		}
	}
	bx = baseline(sock, 200000, cmd);
	ba = baseline(sock, 200000, "XACK events relay 0-1");
	printf("bench-pipeline: %ld events, 10 rules, max_buffered %u, "
	       "max_concurrency %u\n", events, buffered, conc);
	printf("  engine end to end: %.0f events/s (%.3f s), matched %llu, "
	       "acks %llu, handler runs %ld, errors %llu\n", rate, t1 - t0,
	       (unsigned long long)m.events_matched,
	       (unsigned long long)m.acks, x.runs,
	       (unsigned long long)m.redis_errors);
	printf("  engine process during the drain: %.1f us CPU per event, "
	       "%.2f loop iterations per event\n",
	       m.acks ? (cpu1 - cpu0) * 1e6 / (double)m.acks : 0.,
	       m.acks ? (double)(it1 - it0) / (double)m.acks : 0.);
	printf("  redis-benchmark -P 16: XADD %.0f/s, EVALSHA %.0f/s, "
	       "XACK %.0f/s\n", be, bx, ba);
	if (bx > 0)
		printf("  ratio: engine events/s = %.3f of raw EVALSHA/s "
		       "(each event costs 3 EVALSHA, the XACK inside the "
		       "last, + 1/N XREADGROUP)\n", rate / bx);
	printf("  max RSS %ld KiB\n", rss_kb());
	rc = (long)m.acks == events ? 0 : 1;
done:
	if (c)
		relay_consumer_close(c, NULL);
	relay_otlp_free(ox);
	relay_otlp_config_clear(&oc);
	for (i = 0; i < 100; i++)
		ev_run(loop, EVRUN_NOWAIT);
	relay_redis_free(b);
	relay_appset_free(apps);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "bench-pipeline: cleanup of %s failed\n", dir);
	if (started)
		rt_redis_server_cleanup(&srv);
	ev_loop_destroy(loop);
	return rc;
}
