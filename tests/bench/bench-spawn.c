/*
 * bench-spawn.c - invocations per second of a trivial exec handler
 * (/bin/true, a 2-byte event on stdin) through each runtime backend,
 * against a bare posix_spawn + waitpid loop of /bin/true measured in the
 * same run.
 *
 *	bench-spawn [-n N] [-b N_BWRAP] [-r ROUNDS]
 *
 * Invocations run one after another (the next starts from the previous
 * one's done callback) on one libev loop, so the figures compare per-
 * invocation cost, not parallelism. Variants: process (no limits),
 * process with cgroup limits (vfork path + cgroup create/remove), bwrap.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <ev.h>

#include "relay/relay_libev.h"
#include "relay/runtime.h"

extern char **environ;

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double bare_spawn(int n)
{
	char *argv[] = { "/bin/true", NULL };
	double t0 = now_s();
	int i, st;

	for (i = 0; i < n; i++) {
		pid_t pid;

		if (posix_spawn(&pid, "/bin/true", NULL, NULL, argv,
				environ) != 0) {
			perror("posix_spawn");
			exit(1);
		}
		while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
			;
	}
	return n / (now_s() - t0);
}

struct chain {
	relay_runtime *rt;
	relay_exec_spec spec;
	int left, failed;
};

static void start_next(struct chain *c);

static void chain_done(const relay_run_outcome *o, void *payload)
{
	struct chain *c = payload;

	if (o->status != RELAY_RUN_OK)
		c->failed++;
	if (--c->left > 0)
		start_next(c);
}

static void start_next(struct chain *c)
{
	relay_error err;

	if (relay_runtime_run(c->rt, &c->spec, NULL, chain_done, c, NULL,
			      &err) != 0) {
		fprintf(stderr, "run: %s\n", err.text);
		exit(1);
	}
}

/* Returns invocations/s, or 0 when the backend cannot run here. */
static double through_runtime(const char *backend, int limited, int n)
{
	static const char *const argv[] = { "/bin/true", NULL };
	relay_runtime_options o = RELAY_RUNTIME_OPTIONS_INIT;
	struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
	struct chain c;
	relay_error err;
	double t0, rate;

	memset(&c, 0, sizeof(c));
	o.backend = backend;
	o.limits = limited ? RELAY_LIMITS_AUTO : RELAY_LIMITS_NONE;
	if (relay_runtime_new(&c.rt, &o, &err) != 0) {
		fprintf(stderr, "%s: %s\n", backend, err.text);
		ev_loop_destroy(loop);
		return 0;
	}
	if (limited && (relay_runtime_limits_mode(c.rt) == RELAY_LIMITS_RLIMIT
			|| relay_runtime_limits_mode(c.rt) ==
			RELAY_LIMITS_NONE)) {
		fprintf(stderr, "%s: no cgroups here\n", backend);
		relay_runtime_free(c.rt);
		ev_loop_destroy(loop);
		return 0;
	}
	relay_runtime_libev_attach(c.rt, loop);
	c.spec = (relay_exec_spec)RELAY_EXEC_SPEC_INIT;
	c.spec.app = "bench";
	c.spec.handler = "noop";
	c.spec.message_id = "1-0";
	c.spec.app_dir = "/tmp";
	c.spec.argv = argv;
	c.spec.event = "{}";
	c.spec.event_len = 2;
	if (limited) {
		c.spec.memory_bytes = 256u << 20;
		c.spec.pids = 64;
	}
	c.left = n;
	t0 = now_s();
	start_next(&c);
	ev_run(loop, 0);
	rate = n / (now_s() - t0);
	if (c.failed)
		fprintf(stderr, "%s: %d invocations failed\n", backend,
			c.failed);
	relay_runtime_free(c.rt);
	ev_loop_destroy(loop);
	return rate;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

#define MAX_ROUNDS 31
enum { V_BARE, V_PROC, V_LIM, V_BWRAP, NV };

/*
 * Rounds interleave the variants, and each variant's ratio is taken
 * within its round (against that round's bare loop), so load from other
 * processes on the machine hits numerator and denominator alike; the
 * medians over rounds are reported.
 */
int main(int argc, char **argv)
{
	static const char *const names[NV] = {
		"bare posix_spawn /bin/true", "process",
		"process + cgroup limits", "bwrap",
	};
	double rate[NV][MAX_ROUNDS], ratio[NV][MAX_ROUNDS];
	int n = 1000, nb = 100, rounds = 7, opt, r, v;

	while ((opt = getopt(argc, argv, "n:b:r:")) != -1) {
		if (opt == 'n')
			n = atoi(optarg);
		else if (opt == 'b')
			nb = atoi(optarg);
		else if (opt == 'r')
			rounds = atoi(optarg);
		else {
			fprintf(stderr, "usage: bench-spawn [-n N] "
				"[-b N_BWRAP] [-r ROUNDS]\n");
			return 2;
		}
	}
	if (rounds < 1 || rounds > MAX_ROUNDS || n < 1 || nb < 1) {
		fprintf(stderr, "bench-spawn: bad arguments\n");
		return 2;
	}
	bare_spawn(n / 10);  /* warm up */
	for (r = 0; r < rounds; r++) {
		rate[V_BARE][r] = bare_spawn(n);
		rate[V_PROC][r] = through_runtime("process", 0, n);
		rate[V_LIM][r] = through_runtime("process", 1, n);
		rate[V_BWRAP][r] = through_runtime("bwrap", 0, nb);
		for (v = 0; v < NV; v++)
			ratio[v][r] = rate[v][r] / rate[V_BARE][r];
	}
	printf("%d rounds; per round %d invocations (bwrap %d)\n", rounds, n,
	       nb);
	printf("%-28s %12s %14s\n", "variant", "median inv/s",
	       "median ratio");
	for (v = 0; v < NV; v++) {
		if (rate[v][0] <= 0)
			continue;
		printf("%-28s %12.0f %14.3f\n", names[v],
		       median(rate[v], rounds), median(ratio[v], rounds));
	}
	return 0;
}
