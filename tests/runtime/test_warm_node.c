/*
 * test_warm_node.c - the node warm fork server (warm_node.c under bwrap,
 * the default where built; the tests set RELAY_WARM_NODE=fork): every invocation is a fresh
 * fork of a never-used node, one-shot and isolated, and behaves as a cold
 * start; what a handler uses works after the fork; a hang ends at the
 * timeout (and one stuck after the fork replaces its server). Skips when
 * bwrap or node cannot run here, or when the fork
 * server is not built (no node_api.h) or refused (the reason is printed).
 *
 * The handlers are tests/runtime/apps/nodewarm.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include <ev.h>

#include "relay/relay_libev.h"
#include "lib/rt_fixture.h"
#include "relaytest.h"
#include "rt_helpers.h"
#include "rt_job.h"

static rtf_suite S;   /* loop, runtime (lib/rt_fixture.h); the app is
			 tests/runtime/apps/nodewarm */
static const char *skip_why;

/* A runtime with warm parents; @start_bound_ms their start bound (0:
 * the default). */
static relay_runtime *new_rt_bound(uint32_t start_bound_ms)
{
	rtf_rt_opts o = { .warm = 1, .warm_start_timeout_ms = start_bound_ms };

	return rtf_runtime_new(S.loop, &o);
}

static relay_runtime *new_rt(void)
{
	return new_rt_bound(0);
}

static relay_exec_spec node_spec(const char *handler)
{
	return rtf_spec(&S, "nodewarm", RELAY_RUNTIME_NODE, handler);
}

static int run1(const relay_exec_spec *s, struct job *j)
{
	return job_run(S.rt, S.loop, s, j);
}

/* handlers.ok runs, warm, and ends OK: the server serves again. */
static void ok_warm(void)
{
	relay_exec_spec s = node_spec("handlers.ok");
	struct job j;

	RT_CHECK(run1(&s, &j) == 0);
	RT_EQ_INT(j.o.status, RELAY_RUN_OK);
	RT_CHECK(j.o.warm);
	job_free(&j);
}

/* Run @handler warm, then cold; 0 when both ran. */
static int warm_and_cold(const char *handler, struct job *w, struct job *c)
{
	relay_exec_spec s = node_spec(handler);

	if (run1(&s, w) != 0)
		return -1;
	s.warm = RELAY_WARM_OFF;
	return run1(&s, c);
}

/* The command line of the node warm server (and of its slots and
 * invocation processes, its forks). */
#define SERVER_CMD "node --single-threaded --v8-pool-size=1 " \
	"/run/relay-bootstrap/relay-bootstrap.js --serve"

/* Our processes running SERVER_CMD: up to @max pids into @all; each
 * sent @sig unless 0. Returns how many. */
static int servers_all(pid_t *all, int max, int sig)
{
	int n = host_processes_into("^" SERVER_CMD, NULL, sig, all, max);

	return n < max ? n : max;
}

/* Our node warm server itself (not a fork of it): its pid or 0. */
static pid_t the_server(void)
{
	pid_t all[256];
	int n = servers_all(all, 256, 0), i, k;

	for (i = 0; i < n; i++) {
		pid_t up = parent_of(all[i]);

		for (k = 0; k < n && all[k] != up; k++)
			;
		if (k == n)
			return all[i];
	}
	return 0;
}

/* Every line but "rand " and "warm-" ones the same in @a and @b. */
static void same_lines(const struct job *a, const struct job *b)
{
	size_t i;

	RT_EQ_INT(a->c.n, b->c.n);
	if (a->c.n != b->c.n)
		for (i = 0; i < a->c.n; i++)
			printf("# %s\n", cap_line(&a->c, i));
	for (i = 0; i < a->c.n && i < b->c.n; i++) {
		const char *x = cap_line(&a->c, i);

		if (strncmp(x, "rand ", 5) == 0 || strncmp(x, "warm-", 5) == 0)
			continue;
		RT_EQ_STR(x, cap_line(&b->c, i));
	}
}

/* @handler run warm and cold (warm_and_cold), both OK, with the same
 * lines (same_lines). */
static void ok_warm_and_cold(const char *handler, struct job *w,
			     struct job *c)
{
	RT_CHECK(warm_and_cold(handler, w, c) == 0);
	RT_CHECK(w->o.warm && !c->o.warm);
	RT_EQ_INT(w->o.status, RELAY_RUN_OK);
	RT_EQ_INT(w->o.status, c->o.status);
	same_lines(w, c);
}

static const char *line_with(const struct job *j, const char *prefix)
{
	size_t i;

	for (i = 0; i < j->c.n; i++)
		if (strncmp(cap_line(&j->c, i), prefix, strlen(prefix)) == 0)
			return cap_line(&j->c, i);
	return "";
}

/* One-shot: nothing of an earlier invocation (module state, globals,
 * files, env changes, signal handlers, timers, pending promises, child
 * processes) is seen by a later one; random draws differ; the rest is
 * the cold start's, line for line; the fork point had one thread. */
static void test_node__one_shot_and_same_as_cold(void)
{
	relay_exec_spec s = node_spec("handlers.state");
	struct job w1, w2, c1;
	int i;

	RT_CHECK(run1(&s, &w1) == 0);
	RT_CHECK(run1(&s, &w2) == 0);
	s.warm = RELAY_WARM_OFF;
	RT_CHECK(run1(&s, &c1) == 0);
	RT_EQ_INT(w1.o.status, RELAY_RUN_OK);
	RT_EQ_INT(w2.o.status, RELAY_RUN_OK);
	RT_EQ_INT(c1.o.status, RELAY_RUN_OK);
	RT_CHECK(w1.o.warm && w2.o.warm && !c1.o.warm);
	RT_CHECK(cap_has(&w2.c, "counter 1 1 1"));
	RT_CHECK(cap_has(&w2.c, "tmp []"));
	RT_CHECK(cap_has(&w2.c, "procs [\"1\",\"2\"]"));
	RT_CHECK(cap_has(&w2.c, "pid 2 ppid 1"));
	RT_CHECK(cap_has(&w2.c, "handler handlers.state 7-0 undefined"));
	RT_CHECK(cap_has(&w2.c, "argv handlers.state execArgv []"));
	RT_CHECK(cap_has(&w2.c, "signals 0 0"));
	RT_CHECK(cap_has(&w2.c, "caps CapEff:\t0000000000000000"));
	RT_CHECK(cap_has(&w2.c, "fds [0,1,2]"));
	RT_CHECK(cap_has(&w2.c, "done"));
	RT_CHECK(!cap_contains(&w2.c, "timer from an earlier"));
	/* The handler's first line: only the invocation's own thread. */
	RT_CHECK(cap_has(&w1.c, "warm-threads 1"));
	RT_CHECK(cap_has(&w2.c, "warm-threads 1"));
	same_lines(&w2, &c1);
	same_lines(&w1, &c1);
	/* Math.random, crypto.randomUUID and randomBytes: each its own. */
	RT_CHECK(line_with(&w1, "rand ")[0] != '\0');
	RT_CHECK(strcmp(line_with(&w1, "rand "), line_with(&w2, "rand ")) != 0);
	{
		char a[200], b[200], *sa, *sb, *ta, *tb;

		snprintf(a, sizeof(a), "%s", line_with(&w1, "rand "));
		snprintf(b, sizeof(b), "%s", line_with(&w2, "rand "));
		strtok_r(a, " ", &sa);
		strtok_r(b, " ", &sb);
		while ((ta = strtok_r(NULL, " ", &sa)) &&
		       (tb = strtok_r(NULL, " ", &sb)))
			RT_CHECK(strcmp(ta, tb) != 0);
	}
	/* The child it left behind died with its invocation. */
	for (i = 0; i < 50 && host_has_any("sleep 31999"); i++)
		sleep_ms(100);
	RT_CHECK(!host_has_any("sleep 31999"));
	job_free(&w1);
	job_free(&w2);
	job_free(&c1);
}

/* Several at once: none sees another's processes or /tmp. */
static void test_node__concurrent_isolated(void)
{
	relay_exec_spec s = node_spec("handlers.state");
	struct job j[4];
	int i;

	for (i = 0; i < 4; i++)
		RT_CHECK(job_start(S.rt, &s, &j[i]) == 0);
	for (i = 0; i < 4; i++)
		job_wait(S.loop, &j[i]);
	for (i = 0; i < 4; i++) {
		RT_EQ_INT(j[i].o.status, RELAY_RUN_OK);
		RT_CHECK(j[i].o.warm);
		RT_CHECK(cap_has(&j[i].c, "procs [\"1\",\"2\"]"));
		RT_CHECK(cap_has(&j[i].c, "tmp []"));
		RT_CHECK(cap_has(&j[i].c, "done"));
	}
	for (i = 1; i < 4; i++)
		RT_CHECK(strcmp(line_with(&j[0], "rand "),
				line_with(&j[i], "rand ")) != 0);
	for (i = 0; i < 4; i++)
		job_free(&j[i]);
}

/* Exit codes, stderr and reasons are a cold start's: process.exit(),
 * process.exitCode with an exit listener, a throw, an uncaught
 * exception, an unhandled rejection, a missing module, an ES module
 * handler. */
static void test_node__exits_same_as_cold(void)
{
	static const char *const handlers[] = {
		"handlers.ok", "handlers.exit3", "handlers.exitCode",
		"handlers.throws", "handlers.uncaught", "handlers.rejects",
		"nosuchmodule.fn", "esm.main",
	};
	size_t i;

	for (i = 0; i < sizeof(handlers) / sizeof(handlers[0]); i++) {
		struct job w, c;

		printf("# %s\n", handlers[i]);
		RT_CHECK(warm_and_cold(handlers[i], &w, &c) == 0);
		RT_CHECK(w.o.warm && !c.o.warm);
		RT_EQ_INT(w.o.status, c.o.status);
		RT_EQ_STR(w.o.reason, c.o.reason);
		same_lines(&w, &c);
		job_free(&w);
		job_free(&c);
	}
}

/* Every invocation process populates before its request the pages a
 * learning fork of its server found written after one (at least one, at
 * most the plan's bound, each time, where the kernel has
 * MADV_POPULATE_WRITE: Linux 5.14); output and status are a cold
 * start's; a cold start has no fork server. */
static void test_node__prefaults_before_request(void)
{
	struct utsname u;
	int major = 0, minor = 0, populate, k;

	RT_CHECK(uname(&u) == 0);
	(void)sscanf(u.release, "%d.%d", &major, &minor);
	populate = major > 5 || (major == 5 && minor >= 14);
	for (k = 0; k < 2; k++) {
		struct job w, c;
		const char *l;
		long n;

		ok_warm_and_cold("handlers.prefault", &w, &c);
		RT_CHECK(cap_has(&w.c, "sum 1024"));
		RT_CHECK(cap_has(&c.c, "warm-prefaulted none"));
		l = line_with(&w, "warm-prefaulted ");
		RT_CHECK(*l != '\0');
		n = strtol(l + strlen("warm-prefaulted "), NULL, 10);
		printf("# warm-prefaulted %ld (kernel %s)\n", n, u.release);
		if (populate)
			RT_CHECK(n > 0 && n <= 1024);
		else
			RT_EQ_INT((int)n, 0);
		job_free(&w);
		job_free(&c);
	}
}

/* The invocation process rehearsed its request's steps before its
 * request (relay-bootstrap.js rehearse()), the server once before its
 * first fork, and nothing either did shows:
 * stdout's bytes, the environment, the module cache, the main module's
 * children and the descriptors are the cold start's. */
static void test_node__rehearses_before_request(void)
{
	int k;

	for (k = 0; k < 2; k++) {
		struct job w, c;

		ok_warm_and_cold("handlers.rehearsed", &w, &c);
		RT_CHECK(cap_has(&w.c, "warm-rehearsed 1 server 1"));
		RT_CHECK(cap_has(&c.c, "warm-rehearsed none"));
		RT_CHECK(cap_has(&w.c, "stdout written 0"));
		job_free(&w);
		job_free(&c);
	}
}

/* The fork server binds node's symbols at start (LD_BIND_NOW=1 in its
 * own environment), the handler's environment is still exactly cold's;
 * an app that sets LD_BIND_NOW itself keeps its value, server and
 * handler alike. */
static void test_node__binds_now_env_unchanged(void)
{
	static const char *const app_env[] = { "LD_BIND_NOW=", NULL };
	relay_exec_spec s = node_spec("handlers.bindNow");
	struct job w, c;

	ok_warm_and_cold("handlers.bindNow", &w, &c);
	RT_CHECK(cap_has(&w.c, "warm-initial LD_BIND_NOW=1"));
	RT_CHECK(cap_has(&c.c, "warm-initial none"));
	RT_CHECK(cap_has(&w.c, "env LD_BIND_NOW undefined"));
	job_free(&w);
	job_free(&c);

	s.env = app_env;
	RT_CHECK(run1(&s, &w) == 0);
	s.warm = RELAY_WARM_OFF;
	RT_CHECK(run1(&s, &c) == 0);
	RT_CHECK(w.o.warm && !c.o.warm);
	RT_CHECK(cap_has(&w.c, "warm-initial LD_BIND_NOW="));
	RT_CHECK(cap_has(&w.c, "env LD_BIND_NOW "));
	same_lines(&w, &c);
	job_free(&w);
	job_free(&c);
}

/* Transparent huge pages on this host ("[never]" not chosen in
 * /sys/kernel/mm/transparent_hugepage/enabled): 1, 0, or -1 unknown. */
static int thp_on(void)
{
	char buf[128] = "";
	FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");

	if (!f)
		return -1;
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = '\0';
	fclose(f);
	return buf[0] ? strstr(buf, "[never]") == NULL : -1;
}

/* The server moved node's code and read-only data onto huge pages
 * (warm_node_huge.c) where the host has transparent huge pages, and its
 * forks run on them as cold: the same output. */
static void test_node__code_on_huge_pages(void)
{
	int thp = thp_on(), k;

	for (k = 0; k < 2; k++) {
		struct job w, c;
		const char *l;
		long n;

		ok_warm_and_cold("handlers.hugeText", &w, &c);
		RT_CHECK(cap_has(&c.c, "warm-huge none none"));
		l = line_with(&w, "warm-huge ");
		RT_CHECK(*l != '\0');
		n = strtol(l + strlen("warm-huge "), NULL, 10);
		printf("# %s (transparent huge pages: %d)\n", l, thp);
		if (thp == 1) {
			RT_CHECK(n >= 2);
			RT_CHECK(strstr(l, " mapped") != NULL);
		} else if (thp == 0) {
			RT_EQ_INT((int)n, 0);
		}
		job_free(&w);
		job_free(&c);
	}
}

/* fs, timers, zlib, crypto, dns, worker_threads, child processes and
 * ES modules work after the fork, as cold. */
static void test_node__features_after_fork(void)
{
	struct job w, c;

	RT_CHECK(warm_and_cold("handlers.features", &w, &c) == 0);
	RT_EQ_INT(w.o.status, RELAY_RUN_OK);
	if (w.o.status != RELAY_RUN_OK)
		for (size_t i = 0; i < w.c.n; i++)
			printf("# %s\n", cap_line(&w.c, i));
	RT_CHECK(w.o.warm);
	RT_CHECK(cap_has(&w.c, "features done"));
	RT_CHECK(cap_has(&w.c, "ok http"));
	same_lines(&w, &c);
	job_free(&w);
	job_free(&c);
}

/* The same with network: true (a parent of its own: the sandbox's
 * network is part of its key). */
static void test_node__features_with_network(void)
{
	relay_exec_spec s = node_spec("handlers.features");
	struct job w, c;

	s.network = true;
	RT_CHECK(run1(&s, &w) == 0);
	s.warm = RELAY_WARM_OFF;
	RT_CHECK(run1(&s, &c) == 0);
	RT_EQ_INT(w.o.status, RELAY_RUN_OK);
	RT_CHECK(w.o.warm);
	RT_CHECK(cap_has(&w.c, "ok http"));
	RT_CHECK(cap_has(&w.c, "features done"));
	same_lines(&w, &c);
	job_free(&w);
	job_free(&c);
}

/* A handler that never returns ends at the timeout; the server keeps
 * serving. */
static void test_node__timeout_then_serving(void)
{
	relay_exec_spec s = node_spec("handlers.forever");
	struct job j;

	s.timeout_ms = 1500;
	RT_CHECK(run1(&s, &j) == 0);
	RT_EQ_INT(j.o.status, RELAY_RUN_TIMEOUT);
	RT_CHECK(j.o.warm);
	job_free(&j);
	ok_warm();
}

/* @s (RELAY_WARM_REQUIRE) on @r once the app's backoff after a parent
 * failure is over (a start is refused meanwhile), as relayd's later
 * events would; up to a minute. 0 when it ran. */
static int run_when_warm_again(relay_runtime *r, const relay_exec_spec *s,
			       struct job *j)
{
	int i;

	for (i = 0; i < 600; i++) {
		if (job_start(r, s, j) == 0) {
			job_wait(S.loop, j);
			return 0;
		}
		ev_sleep(0.1);
		ev_run(S.loop, EVRUN_NOWAIT);
	}
	return -1;
}

/* A run that went cold after its warm parent failed: it still ran. */
static void finished_cold(struct job *j)
{
	job_wait(S.loop, j);
	RT_EQ_INT(j->o.status, RELAY_RUN_OK);
	RT_CHECK(!j->o.warm);
	RT_CHECK(cap_has(&j->c, "slow done"));
}

/* The server killed mid-invocation: the run finishes cold, counted as a
 * crash; the next run starts a new server and is warm again. */
static void test_node__server_killed_runs_cold(void)
{
	relay_exec_spec s = node_spec("handlers.slow");
	relay_runtime_warm_stats st = { .version = 1 };
	struct job j;
	pid_t pid;
	int i;

	RT_CHECK(run1(&s, &j) == 0);   /* the server is ready */
	RT_CHECK(j.o.warm);
	job_free(&j);
	s.warm = RELAY_WARM_AUTO;      /* as relayd runs it */
	RT_CHECK(job_start(S.rt, &s, &j) == 0);
	for (i = 0; i < 50 && !j.done; i++) {
		ev_run(S.loop, EVRUN_NOWAIT);
		sleep_ms(10);
	}
	pid = the_server();
	RT_CHECK(pid > 0 && kill(pid, SIGKILL) == 0);
	finished_cold(&j);
	relay_runtime_warm_stats_get(S.rt, &st);
	RT_CHECK(st.failures[RELAY_WARM_FAIL_CRASHED] >= 1);
	job_free(&j);
	s.warm = RELAY_WARM_REQUIRE;
	if (run_when_warm_again(S.rt, &s, &j) != 0) {
		RT_CHECK(!"warm again within a minute");
		return;
	}
	RT_EQ_INT(j.o.status, RELAY_RUN_OK);
	RT_CHECK(j.o.warm);
	job_free(&j);
}

/* A wedged server (stopped with all its forks): the invocation runs cold
 * after the start bound, counted as wedged, and the parent is replaced:
 * the next run is warm again from a new server. */
static void test_node__server_wedged_runs_cold(void)
{
	relay_runtime_options o = RELAY_RUNTIME_OPTIONS_INIT;
	relay_runtime_warm_stats st = { .version = 1 };
	relay_exec_spec s = node_spec("handlers.slow");
	relay_runtime *r = NULL;
	struct job j;
	pid_t all[256];
	int n = 0, prev = -1, i;

	o.backend = "bwrap";
	o.bootstrap_dir = bootstrap_dir();
	o.warm = 1;
	o.warm_start_timeout_ms = 300;
	relay_runtime_warm_retire(S.rt, NULL);
	RT_CHECK(relay_runtime_new(&r, &o, NULL) == 0);
	relay_runtime_libev_attach(r, S.loop);
	RT_CHECK(job_start(r, &s, &j) == 0);
	job_wait(S.loop, &j);
	RT_CHECK(j.o.warm);
	job_free(&j);
	for (i = 0; i < 20 && n != prev; i++) {
		prev = n;
		n = servers_all(all, 256, SIGSTOP);
		sleep_ms(50);
	}
	RT_CHECK(n >= 2);
	s.warm = RELAY_WARM_AUTO;
	RT_CHECK(job_start(r, &s, &j) == 0);
	finished_cold(&j);
	relay_runtime_warm_stats_get(r, &st);
	RT_EQ_INT(st.failures[RELAY_WARM_FAIL_WEDGED], 1);
	job_free(&j);
	servers_all(all, 256, SIGCONT);
	/* A new server, warm again (waiting for it as relayd's next
	 * events would). */
	s.warm = RELAY_WARM_REQUIRE;
	for (i = 0; i < 3; i++) {
		if (run_when_warm_again(r, &s, &j) != 0)
			break;
		if (j.o.warm)
			break;
		job_free(&j);
	}
	RT_CHECK(i < 3 && j.o.warm && j.o.status == RELAY_RUN_OK);
	if (i < 3)
		job_free(&j);
	relay_runtime_free(r);
}

/* A fork server that cannot load (the library is no node addon, as
 * where node's headers were missing at build): N, the runs go cold,
 * counted as unsupported; with RELAY_WARM_NODE=prestart node apps keep
 * the pre-started processes and no server starts. */
static void test_node__unloadable_runs_cold(void)
{
	relay_exec_spec s = node_spec("handlers.ok");
	relay_runtime_warm_stats st = { .version = 1 };
	char notlib[1200];
	relay_runtime *r;
	struct job j;
	int i;

	snprintf(notlib, sizeof(notlib), "%s/handlers.js", S.app_dir);
	setenv("RELAY_WARM_SLOT", notlib, 1);
	/* A minute to answer: on a loaded host the "unsupported" answer can
	 * come after the default start bound, and a parent given up on
	 * counts as wedged. */
	r = new_rt_bound(60000);
	unsetenv("RELAY_WARM_SLOT");
	RT_CHECK(r != NULL);
	s.warm = RELAY_WARM_AUTO;
	for (i = 0; i < 2; i++) {
		RT_CHECK(job_start(r, &s, &j) == 0);
		job_wait(S.loop, &j);
		RT_EQ_INT(j.o.status, RELAY_RUN_OK);
		RT_CHECK(!j.o.warm);
		RT_CHECK(cap_has(&j.c, "ok {\"n\":1}"));
		job_free(&j);
	}
	for (i = 0; i < 1200; i++) {
		relay_runtime_warm_stats_get(r, &st);
		if (st.failures[RELAY_WARM_FAIL_UNSUPPORTED] >= 1)
			break;
		ev_sleep(0.05);
		ev_run(S.loop, EVRUN_NOWAIT);
	}
	RT_CHECK(st.failures[RELAY_WARM_FAIL_UNSUPPORTED] >= 1);
	RT_EQ_INT((long)st.warm_starts, 0);
	relay_runtime_free(r);
	/* Switched off: the pool, never the server. */
	relay_runtime_warm_retire(S.rt, NULL);
	setenv("RELAY_WARM_NODE", "prestart", 1);
	r = new_rt();
	setenv("RELAY_WARM_NODE", "fork", 1);
	RT_CHECK(r != NULL);
	RT_CHECK(job_start(r, &s, &j) == 0);
	job_wait(S.loop, &j);
	RT_EQ_INT(j.o.status, RELAY_RUN_OK);
	job_free(&j);
	RT_EQ_INT((int)the_server(), 0);
	relay_runtime_free(r);
}

/*
 * WebAssembly after the fork (doc/sandbox.md, "node: a fork server"):
 * fetch, whose HTTP parser is a WebAssembly module undici compiles once
 * per process (in a job for V8's platform worker threads, which a fork
 * does not have: the server compiles it before its first fork), used
 * hot enough to be tiered up were V8 allowed to; and a handler's own
 * module, compiled synchronously and not. Each ends as its cold start
 * does, output line for line, well inside its timeout (before the
 * server compiled the parser, fetch waited for a job that never ran
 * until the timeout ended it); the server keeps serving.
 */
static void test_node__fetch_and_wasm_same_as_cold(void)
{
	static const char *const handlers[] = {
		"handlers.fetch", "handlers.fetchMany", "handlers.wasm",
	};
	size_t i;

	for (i = 0; i < sizeof(handlers) / sizeof(handlers[0]); i++) {
		relay_exec_spec s = node_spec(handlers[i]);
		struct job w, c;

		printf("# %s\n", handlers[i]);
		s.timeout_ms = 30000;
		RT_CHECK(run1(&s, &w) == 0);
		s.warm = RELAY_WARM_OFF;
		RT_CHECK(run1(&s, &c) == 0);
		RT_EQ_INT(c.o.status, RELAY_RUN_OK);
		RT_CHECK(w.o.warm && !c.o.warm);
		RT_EQ_INT(w.o.status, RELAY_RUN_OK);
		RT_EQ_STR(w.o.reason, c.o.reason);
		same_lines(&w, &c);
		job_free(&w);
		job_free(&c);
	}
	ok_warm();
}

/*
 * The hang watchdog (librelay/runtime/warm/warm_hang.c): an invocation
 * stuck after the fork (its only thread waits on a futex nothing will
 * wake, as fetch left one before the fork got a worker of its own) ends
 * at its timeout, with the documented status and reason, and its warm
 * parent is replaced: the next invocation is warm again, from a new
 * server (another pid; one more parent started). A handler that spins
 * until its timeout is slow, not stuck: its server stays.
 */
static void test_node__hang_replaces_parent(void)
{
	relay_runtime_warm_stats st0 = { .version = 1 };
	relay_runtime_warm_stats st1 = { .version = 1 };
	relay_exec_spec s = node_spec("handlers.ok");
	pid_t before, after;
	struct job j;

	RT_CHECK(run1(&s, &j) == 0);
	RT_CHECK(j.o.warm);
	job_free(&j);
	before = the_server();
	RT_CHECK(before > 0);
	relay_runtime_warm_stats_get(S.rt, &st0);
	/* Spinning past the watchdog's looks: not stuck. */
	s = node_spec("handlers.forever");
	s.timeout_ms = 5000;
	RT_CHECK(run1(&s, &j) == 0);
	RT_EQ_INT(j.o.status, RELAY_RUN_TIMEOUT);
	RT_CHECK(j.o.warm);
	job_free(&j);
	RT_EQ_INT((int)the_server(), (int)before);
	/* Stuck: the timeout ends it, the parent is replaced. */
	s = node_spec("handlers.stuck");
	s.timeout_ms = 8000;
	RT_CHECK(run1(&s, &j) == 0);
	RT_EQ_INT(j.o.status, RELAY_RUN_TIMEOUT);
	RT_EQ_STR(j.o.reason, "timed out after 8000ms");
	RT_CHECK(j.o.warm);
	RT_CHECK(cap_has(&j.c, "stuck"));
	job_free(&j);
	ok_warm();
	after = the_server();
	RT_CHECK(after > 0 && after != before);
	relay_runtime_warm_stats_get(S.rt, &st1);
	RT_EQ_INT((int)(st1.parents_started - st0.parents_started), 1);
}

static int setup(void)
{
	relay_exec_spec s;
	struct job j;

	if (!have_prog("/usr/bin/bwrap") || !have_prog("/usr/bin/node")) {
		skip_why = "bwrap or node missing";
		return 0;
	}
	rtf_setup(&S, NULL);
	snprintf(S.app_dir, sizeof(S.app_dir),
		 "%s/tests/runtime/apps/nodewarm", src_root());
	setenv("RELAY_WARM_NODE", "fork", 1);
	S.rt = new_rt();
	if (!S.rt) {
		skip_why = "bwrap cannot run here";
		return 0;
	}
	s = node_spec("handlers.ok");
	if (job_start(S.rt, &s, &j) != 0) {
		skip_why = "warm start refused";
		return 0;
	}
	job_wait(S.loop, &j);
	if (j.o.status != RELAY_RUN_OK || !j.o.warm) {
		static char why[300];

		snprintf(why, sizeof(why), "node fork server unavailable "
			 "here: %s", j.o.reason[0] ? j.o.reason : "ran cold");
		skip_why = why;
		for (size_t i = 0; i < j.c.n && i < 40; i++)
			printf("# %s\n", cap_line(&j.c, i));
	}
	job_free(&j);
	return 0;
}

int main(int argc, char **argv)
{
	static const rt_case cases[] = {
		RT_CASE(test_node__one_shot_and_same_as_cold),
		RT_CASE(test_node__concurrent_isolated),
		RT_CASE(test_node__exits_same_as_cold),
		RT_CASE(test_node__features_after_fork),
		RT_CASE(test_node__features_with_network),
		RT_CASE(test_node__timeout_then_serving),
		RT_CASE(test_node__server_killed_runs_cold),
		RT_CASE(test_node__server_wedged_runs_cold),
		RT_CASE(test_node__unloadable_runs_cold),
		RT_CASE(test_node__fetch_and_wasm_same_as_cold),
		RT_CASE(test_node__hang_replaces_parent),
		RT_CASE(test_node__prefaults_before_request),
		RT_CASE(test_node__rehearses_before_request),
		RT_CASE(test_node__binds_now_env_unchanged),
		RT_CASE(test_node__code_on_huge_pages),
	};
	int rc;

	setup();
	if (skip_why) {
		printf("1..0 # SKIP %s\n", skip_why);
		return 0;
	}
	rc = rt_main(argc, argv, cases, RT_NCASES(cases));
	rtf_teardown(&S, false);
	return rc;
}
