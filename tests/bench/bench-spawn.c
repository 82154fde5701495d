/*
 * bench-spawn.c - invocations per second of a trivial exec handler
 * (/bin/true, a 2-byte event on stdin) through each runtime backend,
 * against a bare posix_spawn + waitpid loop of /bin/true measured in the
 * same run.
 *
 *	bench-spawn [-n N] [-b N_BWRAP]
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

int main(int argc, char **argv)
{
	int n = 2000, nb = 300, opt;
	double bare, proc, lim, bw, bare2;

	while ((opt = getopt(argc, argv, "n:b:")) != -1) {
		if (opt == 'n')
			n = atoi(optarg);
		else if (opt == 'b')
			nb = atoi(optarg);
		else {
			fprintf(stderr, "usage: bench-spawn [-n N] "
				"[-b N_BWRAP]\n");
			return 2;
		}
	}
	bare_spawn(n / 10);  /* warm up */
	bare = bare_spawn(n);
	proc = through_runtime("process", 0, n);
	lim = through_runtime("process", 1, n);
	bw = through_runtime("bwrap", 0, nb);
	bare2 = bare_spawn(n);  /* drift check */
	printf("%-28s %10s %8s\n", "variant", "inv/s", "ratio");
	printf("%-28s %10.0f %8.2f\n", "bare posix_spawn /bin/true", bare,
	       1.0);
	printf("%-28s %10.0f %8.2f\n", "process", proc, proc / bare);
	if (lim > 0)
		printf("%-28s %10.0f %8.2f\n", "process + cgroup limits", lim,
		       lim / bare);
	if (bw > 0)
		printf("%-28s %10.0f %8.3f\n", "bwrap", bw, bw / bare);
	printf("%-28s %10.0f %8.2f\n", "bare again (drift check)", bare2,
	       bare2 / bare);
	return 0;
}
