/*
 * bench-warm.c - the same no-op handler started warm and cold in one run,
 * through the bwrap runtime (python3, node, exec /bin/true).
 *
 *	bench-warm [-n N] [-c CONC] [-k python3,node,exec] [-r ROUNDS] [-g MS]
 *		   [-p cold|warm]
 *
 * For each kind and each path (cold: RELAY_WARM_OFF; warm: a runtime with
 * warm parents, first started and waited for), N invocations run on one
 * libev loop with at most CONC in flight (default: 1 and 8). Printed per
 * line: invocations/s, and the start latency p50/p99, where the start
 * latency is "run handed to the runtime → handler code running": the
 * python3 and node handlers print CLOCK_MONOTONIC as their first act; for
 * exec (/bin/true prints nothing) the runtime's start_us is used (process
 * created). Rounds alternate warm and cold so a noisy machine hurts both
 * alike. -g MS waits MS milliseconds before each start (give a node/exec
 * pool time to refill: the latency "when the pool is ready"); the rate
 * is then not meaningful. -p runs one path only (to profile it). node's
 * warm path is RELAY_WARM_NODE's (default: the fork server where built). Needs RELAY_BOOTSTRAP_DIR or an installed
 * bootstrap.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <ev.h>

#include "relay/relay_libev.h"
#include "relay/runtime.h"

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

struct slot {
	struct bench *b;
	double handed;          /* monotonic seconds */
	double code;            /* handler's first line, 0 = none */
};

struct bench {
	relay_runtime *rt;
	struct ev_loop *loop;
	relay_exec_spec spec;
	int total, started, done, failed, conc, inflight, gap_ms;
	double *lat;            /* ms, one per invocation */
	int nlat;
};

static void on_line(const relay_output_line *l, void *payload)
{
	struct slot *s = payload;
	const char *p = l->text + l->prefix_len;

	if (l->stream == RELAY_OUTPUT_STDOUT && strncmp(p, "T ", 2) == 0)
		s->code = strtod(p + 2, NULL);
}

static void start_more(struct bench *b);

static void on_done(const relay_run_outcome *o, void *payload)
{
	struct slot *s = payload;
	struct bench *b = s->b;

	if (o->status != RELAY_RUN_OK) {
		if (b->failed++ < 3)
			fprintf(stderr, "bench-warm: run failed: %s\n",
				o->reason);
	}
	b->lat[b->nlat++] = s->code > 0 ? (s->code - s->handed) * 1e3
					 : (double)o->start_us / 1e3;
	free(s);
	b->done++;
	b->inflight--;
	start_more(b);
}

static void start_more(struct bench *b)
{
	while (b->inflight < b->conc && b->started < b->total) {
		struct slot *s;
		relay_error err;

		if (b->gap_ms)
			usleep((useconds_t)b->gap_ms * 1000u);
		s = calloc(1, sizeof(*s));
		s->b = b;
		s->handed = now_s();
		if (relay_runtime_run(b->rt, &b->spec, on_line, on_done, s,
				      NULL, &err) != 0) {
			fprintf(stderr, "bench-warm: %s\n", err.text);
			exit(1);
		}
		b->started++;
		b->inflight++;
	}
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static void run(struct bench *b, int n, int conc, double *rate,
		double *p50, double *p99)
{
	double t0;

	b->total = n;
	b->started = b->done = b->failed = b->nlat = 0;
	b->conc = conc;
	b->lat = calloc((size_t)n, sizeof(double));
	t0 = now_s();
	start_more(b);
	while (b->done < b->total)
		ev_run(b->loop, EVRUN_ONCE);
	*rate = n / (now_s() - t0);
	qsort(b->lat, (size_t)b->nlat, sizeof(double), cmp);
	*p50 = b->lat[b->nlat / 2];
	*p99 = b->lat[(b->nlat * 99) / 100 < b->nlat ? (b->nlat * 99) / 100
						      : b->nlat - 1];
	free(b->lat);
	if (b->failed)
		fprintf(stderr, "bench-warm: %d of %d runs failed\n",
			b->failed, n);
}

static const char *make_app(const char *kind)
{
	static char dir[64];
	char path[128];
	FILE *f;

	snprintf(dir, sizeof(dir), "/tmp/relay-bench-warm-%ld", (long)getpid());
	mkdir(dir, 0755);
	if (strcmp(kind, "python3") == 0) {
		snprintf(path, sizeof(path), "%s/noop.py", dir);
		f = fopen(path, "w");
		fputs("import time\n\ndef handle(event):\n"
		      "    print('T', time.monotonic(), flush=True)\n", f);
		fclose(f);
	} else if (strcmp(kind, "node") == 0) {
		snprintf(path, sizeof(path), "%s/noop.js", dir);
		f = fopen(path, "w");
		fputs("exports.handle = () => { process.stdout.write('T ' + "
		      "(Number(process.hrtime.bigint()) / 1e9) + '\\n'); };\n",
		      f);
		fclose(f);
	}
	return dir;
}

int main(int argc, char **argv)
{
	static const char *const exec_argv[] = { "/bin/true", NULL };
	const char *kinds = "python3,node,exec";
	int n = 200, rounds = 2, concs[2] = { 1, 8 }, nconc = 2, opt, gap = 0;
	int only = -1;
	struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
	char *list, *kind, *save = NULL;

	while ((opt = getopt(argc, argv, "n:c:k:r:g:p:")) != -1) {
		if (opt == 'p' && (!strcmp(optarg, "cold") ||
				   !strcmp(optarg, "warm")))
			only = !strcmp(optarg, "warm");
		else if (opt == 'g')
			gap = atoi(optarg);
		else if (opt == 'n')
			n = atoi(optarg);
		else if (opt == 'c') {
			concs[0] = atoi(optarg);
			nconc = 1;
		} else if (opt == 'k')
			kinds = optarg;
		else if (opt == 'r')
			rounds = atoi(optarg);
		else {
			fprintf(stderr, "usage: bench-warm [-n N] [-c CONC] "
				"[-k python3,node,exec] [-r ROUNDS] [-g MS] "
				"[-p cold|warm]\n");
			return 2;
		}
	}
	printf("%-8s %-5s %4s %10s %9s %9s\n", "kind", "path", "conc",
	       "inv/s", "p50 ms", "p99 ms");
	list = strdup(kinds);
	for (kind = strtok_r(list, ",", &save); kind;
	     kind = strtok_r(NULL, ",", &save)) {
		relay_runtime_options o = RELAY_RUNTIME_OPTIONS_INIT;
		relay_runtime *rt[2];
		relay_error err;
		struct bench b;
		int path, r, c;

		memset(&b, 0, sizeof(b));
		b.loop = loop;
		b.gap_ms = gap;
		b.spec = (relay_exec_spec)RELAY_EXEC_SPEC_INIT;
		b.spec.app = "bench";
		b.spec.app_dir = make_app(kind);
		b.spec.event = "{}";
		b.spec.event_len = 2;
		b.spec.timeout_ms = 60000;
		if (strcmp(kind, "exec") == 0) {
			b.spec.runtime = RELAY_RUNTIME_EXEC;
			b.spec.handler = "true";
			b.spec.argv = exec_argv;
		} else {
			relay_runtime_kind_parse(kind, &b.spec.runtime);
			b.spec.handler = "noop.handle";
		}
		o.limits = RELAY_LIMITS_NONE;
		for (path = 0; path < 2; path++) {
			o.warm = path;
			if (relay_runtime_new(&rt[path], &o, &err) != 0) {
				fprintf(stderr, "bench-warm: %s\n", err.text);
				return 1;
			}
			relay_runtime_libev_attach(rt[path], loop);
		}
		for (r = 0; r < rounds; r++) {
			for (c = 0; c < nconc; c++) {
				for (path = 0; path < 2; path++) {
					double rate, p50, p99;

					if (only >= 0 && path != only)
						continue;
					b.rt = rt[path];
					b.spec.warm = path ? RELAY_WARM_REQUIRE
							   : RELAY_WARM_OFF;
					/* Warm-up: parents started, caches. */
					run(&b, concs[c] * 2, concs[c], &rate,
					    &p50, &p99);
					run(&b, n, concs[c], &rate, &p50, &p99);
					printf("%-8s %-5s %4d %10.1f %9.2f "
					       "%9.2f\n", kind,
					       path ? "warm" : "cold", concs[c],
					       rate, p50, p99);
					fflush(stdout);
				}
			}
		}
		relay_runtime_free(rt[0]);
		relay_runtime_free(rt[1]);
	}
	free(list);
	ev_loop_destroy(loop);
	return 0;
}
