/*
 * test_warm.c - warm parents (python3 under bwrap): every invocation stays
 * one-shot and isolated, behaves as a cold start, and faults fall back to
 * the cold path. Skips when bwrap or python3 cannot run here, or when this
 * kernel refuses the warm sandbox (the reason is printed).
 *
 * Each case runs several invocations through ONE runtime on ONE loop, so
 * they really share a warm parent (checked: the outcome says warm).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/keyctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <ev.h>

#include "relay/relay_libev.h"
#include "lib/rt_fixture.h"
#include "relaytest.h"
#include "rt_helpers.h"
#include "rt_job.h"

static rtf_suite S;   /* loop, app dir, runtime (lib/rt_fixture.h) */
static const char *skip_why;

static relay_runtime *new_rt(uint32_t idle_ms, uint32_t max_parents)
{
	rtf_rt_opts o = { .warm = 1, .warm_idle_ms = idle_ms,
			  .warm_max_parents = max_parents };

	return rtf_runtime_new(S.loop, &o);
}

static relay_exec_spec py_spec(const char *handler)
{
	return rtf_spec(&S, "warmapp", RELAY_RUNTIME_PYTHON3, handler);
}

static int start(relay_runtime *r, const relay_exec_spec *s, struct job *j)
{
	return job_start(r, s, j);
}

/* One invocation on the shared loop; 0 when it ran. */
static int run1(relay_runtime *r, const relay_exec_spec *s, struct job *j)
{
	return job_run(r, S.loop, s, j);
}

static void wait_all(struct job *j, int n)
{
	int i;

	for (i = 0; i < n; i++)
		job_wait(S.loop, &j[i]);
}

/* Every line of a run joined with '\n' (content only). */
static char *joined(const cap *c)
{
	size_t i, n = 1;
	char *s, *p;

	for (i = 0; i < c->n; i++)
		n += strlen(cap_line(c, i)) + 1;
	s = p = calloc(1, n);
	for (i = 0; i < c->n; i++)
		p += sprintf(p, "%s\n", cap_line(c, i));
	return s;
}

#define HANDLERS                                                          \
	"import os, sys, signal, random, json\n"                          \
	"counter = 0\n"                                                   \
	"def state(event):\n"                                             \
	"    global counter\n"                                            \
	"    counter += 1\n"                                              \
	"    json.relay_leak = getattr(json, 'relay_leak', 0) + 1\n"      \
	"    print('counter', counter, json.relay_leak)\n"               \
	"    print('tmp', sorted(os.listdir('/tmp')))\n"                 \
	"    print('fds', sorted(os.listdir('/proc/self/fd')))\n"        \
	"    print('env', sorted(os.environ.items()))\n"                 \
	"    print('procs', sorted(p for p in os.listdir('/proc')"        \
	" if p.isdigit()))\n"                                             \
	"    print('sig', [str(signal.getsignal(s)) for s in (signal.SIGINT," \
	" signal.SIGTERM, signal.SIGPIPE, signal.SIGUSR1, signal.SIGCHLD)])\n" \
	"    print('uid', os.getuid(), os.getgid(), os.getcwd(), sys.argv)\n" \
	"    print('caps', [l for l in open('/proc/self/status')"        \
	" if l.startswith('CapEff')])\n"                                  \
	"    print('mods', 'asyncio' in sys.modules)\n"                  \
	"    print('gc', __import__('gc').isenabled())\n"                \
	"    import socket, threading, time\n"                           \
	"    print('net', socket.if_nameindex(), threading.active_count())\n" \
	"    me = threading.main_thread()\n"                              \
	"    print('thread', me is threading.current_thread(),"           \
	" me.native_id == threading.get_native_id() == os.getpid(),"      \
	" me.ident == threading.get_ident())\n"                           \
	"    print('rand', random.random(), random.random())\n"          \
	"    open('/tmp/left-behind', 'w').write('x')\n"                 \
	"    leak = open('/app/handlers.py')\n"                           \
	"    os.environ['RELAY_LEAK'] = '1'\n"                            \
	"    signal.signal(signal.SIGUSR1, lambda *a: None)\n"            \
	"    import subprocess\n"                                          \
	"    subprocess.Popen(['sleep', '31337'])\n"                       \
	"    threading.Thread(target=lambda: (time.sleep(0.2),"            \
	" print('thread done', flush=True))).start()\n"                  \
	"def slow(event):\n"                                               \
	"    import time\n"                                                \
	"    time.sleep(1.0)\n"                                            \
	"    print('slow done')\n"                                         \
	"def forever(event):\n"                                            \
	"    import time\n"                                                \
	"    def term(*a):\n"                                              \
	"        print('got SIGTERM', flush=True)\n"                       \
	"        sys.exit(5)\n"                                            \
	"    signal.signal(signal.SIGTERM, term)\n"                       \
	"    print('waiting', flush=True)\n"                               \
	"    time.sleep(60)\n"                                             \
	"def hog(event):\n"                                                \
	"    x = bytearray(400 * 1024 * 1024)\n"                          \
	"    for i in range(0, len(x), 4096): x[i] = 1\n"                 \
	"def forks(event):\n"                                              \
	"    import subprocess\n"                                         \
	"    procs = []\n"                                                \
	"    try:\n"                                                      \
	"        for i in range(40):\n"                                   \
	"            procs.append(subprocess.Popen(['sleep', '5']))\n"    \
	"    except OSError as e:\n"                                      \
	"        print('refused after', len(procs), e.errno)\n"           \
	"        sys.exit(7)\n"                                           \
	"def quiet(event):\n"                                              \
	"    pass\n"                                                       \
	"def ok(event):\n"                                                 \
	"    print('ok', event)\n"                                         \
	"def fails(event):\n"                                              \
	"    sys.exit(3)\n"                                                \
	"def sigint_n(event):\n"                                           \
	"    print('ns', os.readlink('/proc/self/ns/pid'), flush=True)\n"   \
	"    os.kill(1, signal.SIGINT)\n"                                  \
	"def scratch(event):\n"                                            \
	"    import ctypes\n"                                              \
	"    libc = ctypes.CDLL(None)\n"                                   \
	"    print('ns', os.readlink('/proc/self/ns/pid'))\n"               \
	"    print('clean', os.listdir('/dev/shm'), os.listdir('/tmp'),"   \
	" oct(os.stat('/tmp').st_mode), libc.shmget(0x52454c41, 0, 0) >= 0," \
	" os.getpid())\n"                                                 \
	"    libc.shmget(0x52454c41, 4096, 0o1600)\n"                      \
	"    open('/dev/shm/left-behind', 'w').write('x')\n"              \
	"    open('/tmp/left-behind', 'w').write('x')\n"                  \
	"    os.chmod('/tmp', 0o700)\n"

/* The command line of a python3 warm server (and of its slots). */
#define SERVER_CMD "python3 -u -B /run/relay-bootstrap/relay-bootstrap.py --serve"

/* Our python3 warm servers (@servers) or their invocation slots (a
 * slot's parent is a server; a waiting or running H's is a slot): up to
 * @max pids into @out; returns how many. */
static int ours_by_role(bool servers, pid_t *out, int max)
{
	pid_t all[256];
	int n = host_pids("^" SERVER_CMD, all, 256), i, k = 0;

	for (i = 0; i < n && k < max; i++) {
		pid_t up = parent_of(all[i]);
		bool server = !host_pids_has(all, n, up);
		bool slot = !server && !host_pids_has(all, n, parent_of(up));

		if (servers ? server : slot)
			out[k++] = all[i];
	}
	return k;
}

/* One-shot: nothing of an earlier invocation is seen by a later one, and
 * the warm start looks like a cold one from inside. */
static void test_warm__one_shot_and_same_as_cold(void)
{
	relay_exec_spec s = py_spec("handlers.state");
	struct job w1, w2, c1;
	char *a, *b, *cold;
	const char *rand1, *rand2;
	size_t i;

	RT_CHECK(run1(S.rt, &s, &w1) == 0);
	RT_CHECK(run1(S.rt, &s, &w2) == 0);
	s.warm = RELAY_WARM_OFF;
	RT_CHECK(run1(S.rt, &s, &c1) == 0);
	RT_EQ_INT(w1.o.status, RELAY_RUN_OK);
	RT_EQ_INT(w2.o.status, RELAY_RUN_OK);
	RT_EQ_INT(c1.o.status, RELAY_RUN_OK);
	RT_CHECK(w1.o.warm && w2.o.warm && !c1.o.warm);
	a = joined(&w1.c);
	b = joined(&w2.c);
	cold = joined(&c1.c);
	RT_CHECK(cap_has(&w2.c, "counter 1 1"));
	RT_CHECK(cap_has(&w2.c, "tmp []"));
	RT_CHECK(cap_has(&w2.c, "procs ['1', '2']"));
	RT_CHECK(cap_has(&w2.c, "mods False"));
	RT_CHECK(cap_has(&w2.c, "caps ['CapEff:\\t0000000000000000\\n']"));
	/* Everything but the random draws is identical warm, warm, cold. */
	for (i = 0; i < w2.c.n && i < c1.c.n; i++) {
		if (strncmp(cap_line(&w2.c, i), "rand ", 5) == 0)
			continue;
		RT_EQ_STR(cap_line(&w2.c, i), cap_line(&c1.c, i));
		RT_EQ_STR(cap_line(&w1.c, i), cap_line(&c1.c, i));
	}
	RT_EQ_INT(w2.c.n, c1.c.n);
	rand1 = strstr(a, "rand ");
	rand2 = strstr(b, "rand ");
	RT_CHECK(rand1 && rand2 && strncmp(rand1, rand2, 30) != 0);
	/* The child it left behind died with its invocation. */
	sleep_ms(100);
	RT_CHECK(!host_has_process("sleep 31337", NULL));
	free(a);
	free(b);
	free(cold);
	job_free(&w1);
	job_free(&w2);
	job_free(&c1);
}

/* Two invocations at once: neither sees the other's processes or /tmp. */
static void test_warm__concurrent_isolated(void)
{
	relay_exec_spec s = py_spec("handlers.state");
	struct job j[4];
	int i;

	for (i = 0; i < 4; i++)
		RT_CHECK(start(S.rt, &s, &j[i]) == 0);
	wait_all(j, 4);
	for (i = 0; i < 4; i++) {
		RT_EQ_INT(j[i].o.status, RELAY_RUN_OK);
		RT_CHECK(j[i].o.warm);
		RT_CHECK(cap_has(&j[i].c, "procs ['1', '2']"));
		RT_CHECK(cap_has(&j[i].c, "tmp []"));
		job_free(&j[i]);
	}
}

/* Exit codes, import errors and the timeout are a cold start's. */
static void test_warm__exit_codes_and_import_errors(void)
{
	relay_exec_spec s = py_spec("handlers.fails");
	struct job j;

	RT_CHECK(run1(S.rt, &s, &j) == 0);
	RT_EQ_INT(j.o.status, RELAY_RUN_FAILED);
	RT_EQ_STR(j.o.reason, "exit status 3");
	RT_CHECK(j.o.warm);
	job_free(&j);
	s = py_spec("nosuchmodule.fn");
	RT_CHECK(run1(S.rt, &s, &j) == 0);
	RT_EQ_STR(j.o.reason,
		  "ModuleNotFoundError: No module named 'nosuchmodule'");
	RT_CHECK(j.o.warm);
	RT_CHECK(cap_contains(&j.c, "Traceback"));
	job_free(&j);
	s = py_spec("handlers.ok");
	RT_CHECK(run1(S.rt, &s, &j) == 0);
	RT_EQ_INT(j.o.status, RELAY_RUN_OK);
	RT_CHECK(cap_has(&j.c, "ok {'n': 1}"));
	RT_EQ_STR(cap_text(&j.c, 0), "[warmapp/handlers.ok@7-0] stdout: ok {'n': 1}");
	job_free(&j);
}

/* The timeout gives a SIGTERM trap its grace and kills only that
 * invocation; the parent keeps serving. */
static void test_warm__timeout_kills_one(void)
{
	relay_exec_spec s = py_spec("handlers.forever"), q = py_spec(
		"handlers.ok");
	struct job j[2], k;

	s.timeout_ms = 500;
	RT_CHECK(start(S.rt, &s, &j[0]) == 0);
	RT_CHECK(start(S.rt, &q, &j[1]) == 0);
	wait_all(j, 2);
	RT_EQ_INT(j[0].o.status, RELAY_RUN_TIMEOUT);
	RT_CHECK(cap_has(&j[0].c, "waiting"));
	RT_CHECK(cap_has(&j[0].c, "got SIGTERM"));
	RT_EQ_INT(j[1].o.status, RELAY_RUN_OK);
	RT_CHECK(run1(S.rt, &q, &k) == 0);
	RT_EQ_INT(k.o.status, RELAY_RUN_OK);
	RT_CHECK(k.o.warm);
	job_free(&j[0]);
	job_free(&j[1]);
	job_free(&k);
}

/* Limits per invocation need cgroups (the rlimit fallback is per user:
 * the sandbox suite covers it). */
static bool have_cgroups(void)
{
	relay_limits_mode m = relay_runtime_limits_mode(S.rt);

	if (m == RELAY_LIMITS_CGROUP_V1 || m == RELAY_LIMITS_CGROUP_V2)
		return true;
	printf("# no cgroups here: the rlimit fallback is covered by the "
	       "sandbox suite\n");
	return false;
}

/* A memory limit kills the invocation that exceeds it, alone. */
static void test_warm__memory_limit_per_invocation(void)
{
	relay_exec_spec s = py_spec("handlers.hog"), q = py_spec(
		"handlers.slow");
	struct job j[2];

	if (!have_cgroups())
		return;
	s.memory_bytes = q.memory_bytes = 128u << 20;
	RT_CHECK(start(S.rt, &q, &j[1]) == 0);
	RT_CHECK(start(S.rt, &s, &j[0]) == 0);
	wait_all(j, 2);
	RT_EQ_INT(j[0].o.status, RELAY_RUN_FAILED);
	RT_CHECK(strncmp(j[0].o.reason, "memory limit exceeded", 21) == 0);
	RT_CHECK(j[0].o.warm);
	RT_EQ_INT(j[1].o.status, RELAY_RUN_OK);
	RT_CHECK(cap_has(&j[1].c, "slow done"));
	job_free(&j[0]);
	job_free(&j[1]);
}

/* An edited handler module takes effect with the next invocation, though
 * the parent keeps compiled app modules. */
static void test_warm__edited_module_picked_up(void)
{
	relay_exec_spec s = py_spec("edited.h");
	struct job j;

	rtf_write(S.app_dir, "edited.py", "def h(event):\n    print('version one')\n");
	relay_runtime_warm_retire(S.rt, NULL);  /* a parent that compiled it */
	RT_CHECK(run1(S.rt, &s, &j) == 0);
	RT_CHECK(j.o.warm && cap_has(&j.c, "version one"));
	job_free(&j);
	RT_CHECK(run1(S.rt, &s, &j) == 0);
	RT_CHECK(j.o.warm && cap_has(&j.c, "version one"));
	job_free(&j);
	rtf_write(S.app_dir, "edited.py", "def h(event):\n    print('version 2!!')\n");
	RT_CHECK(run1(S.rt, &s, &j) == 0);
	RT_CHECK(j.o.warm);
	RT_CHECK(cap_has(&j.c, "version 2!!"));
	job_free(&j);
}

/* A pids limit holds per invocation: a fork bomb is refused alone. */
static void test_warm__pids_limit_per_invocation(void)
{
	relay_exec_spec s = py_spec("handlers.forks"), q = py_spec(
		"handlers.slow");
	struct job j[2];

	if (!have_cgroups())
		return;
	s.pids = q.pids = 8;
	RT_CHECK(start(S.rt, &q, &j[1]) == 0);
	RT_CHECK(start(S.rt, &s, &j[0]) == 0);
	wait_all(j, 2);
	RT_EQ_STR(j[0].o.reason, "exit status 7");
	RT_CHECK(cap_contains(&j[0].c, "refused after"));
	RT_CHECK(j[0].o.warm);
	RT_EQ_INT(j[1].o.status, RELAY_RUN_OK);
	job_free(&j[0]);
	job_free(&j[1]);
}

/* The memory relay_runtime_warm_foreach() reports for app "warmapp". */
static void warmapp_mem(const char *app, const char *state,
			unsigned int inflight, uint64_t rss, void *payload)
{
	(void)state;
	(void)inflight;
	if (strcmp(app, "warmapp") == 0)
		*(uint64_t *)payload += rss;
}

/* Resident memory of @pid, from statm. */
static uint64_t rss_of(pid_t pid)
{
	char path[64];
	unsigned long size = 0, res = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%ld/statm", (long)pid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	if (fscanf(f, "%lu %lu", &size, &res) != 2)
		res = 0;
	fclose(f);
	return (uint64_t)res * (uint64_t)sysconf(_SC_PAGESIZE);
}

/* An invocation slot is reused only clean: an invocation run where an
 * earlier one ran (the same pid namespace) sees no file it left in /tmp
 * or /dev/shm, /tmp's mode back, no SysV object it made, and is pid 2,
 * as a cold one. */
static void test_warm__slot_reuse_is_clean(void)
{
	relay_exec_spec s = py_spec("handlers.scratch");
	char ns[8][128], cold[256] = "";
	bool reused = false;
	struct job j;
	int i, k;

	s.warm = RELAY_WARM_OFF;
	RT_CHECK(run1(S.rt, &s, &j) == 0);
	RT_CHECK(!j.o.warm && j.c.n == 2);
	if (j.c.n == 2)
		snprintf(cold, sizeof(cold), "%s", cap_line(&j.c, 1));
	RT_CHECK(strncmp(cold, "clean [] [] 0o40", 16) == 0);
	RT_CHECK(strstr(cold, " False 2") != NULL);
	job_free(&j);
	s.warm = RELAY_WARM_REQUIRE;
	for (i = 0; i < 8; i++) {
		RT_CHECK(run1(S.rt, &s, &j) == 0);
		RT_EQ_INT(j.o.status, RELAY_RUN_OK);
		RT_CHECK(j.o.warm);
		RT_CHECK(cap_has(&j.c, cold));
		snprintf(ns[i], sizeof(ns[i]), "%s", j.c.n ? cap_line(&j.c, 0)
							   : "");
		for (k = 0; k < i; k++)
			reused |= strcmp(ns[k], ns[i]) == 0;
		job_free(&j);
	}
	RT_CHECK(reused);
	/* The parent's memory counts its idle slots too: more than its
	 * server's own resident memory. Every server of ours is smaller
	 * than that (another app's parent may be running too). */
	{
		uint64_t mem = 0, most = 0;
		pid_t pids[64];
		int m, n = host_pids("^" SERVER_CMD, pids, 64);

		relay_runtime_warm_foreach(S.rt, warmapp_mem, &mem);
		for (m = 0; m < n; m++)
			if (host_pids_has(pids, n, parent_of(pids[m])) == 0 &&
			    rss_of(pids[m]) > most)
				most = rss_of(pids[m]);
		RT_CHECK(n >= 3 && most > 0);
		RT_CHECK(mem > most);
		/* One at a time: about one slot more than in flight. Slots
		 * are a server's children (each has its waiting H); no
		 * server of ours has more than 3. */
		for (m = 0; m < n; m++) {
			int x, slots = 0;

			if (host_pids_has(pids, n, parent_of(pids[m])))
				continue;               /* not a server */
			for (x = 0; x < n; x++)
				slots += parent_of(pids[x]) == pids[m];
			RT_CHECK(slots <= 3);
		}
	}
}

/* A wedged parent (the server and its invocation slots stopped): no
 * answer within the bound, counted, the run finishes cold. */
static void test_warm__parent_wedged(void)
{
	relay_runtime_options o = RELAY_RUNTIME_OPTIONS_INIT;
	relay_runtime_warm_stats st = { .version = 1 };
	relay_exec_spec s = py_spec("handlers.ok");
	relay_runtime *r = NULL;
	struct job j;

	o.backend = "bwrap";
	o.bootstrap_dir = bootstrap_dir();
	o.warm = 1;
	o.warm_start_timeout_ms = 300;
	relay_runtime_warm_retire(S.rt, NULL);  /* its parents go: one left */
	RT_CHECK(relay_runtime_new(&r, &o, NULL) == 0);
	relay_runtime_libev_attach(r, S.loop);
	RT_CHECK(run1(r, &s, &j) == 0);
	RT_CHECK(j.o.warm);
	job_free(&j);
	/* The server and its slots, stopped. A slot (or a slot's next
	 * process) the server was forking during a pass is stopped by the
	 * next one: repeat until two passes 50 ms apart find as many. */
	{
		int n = 0, prev = -1, i;

		for (i = 0; i < 20 && n != prev; i++) {
			prev = n;
			n = host_processes("^" SERVER_CMD, NULL, SIGSTOP);
			usleep(50000);
		}
		RT_CHECK(n >= 2);
	}
	s.warm = RELAY_WARM_AUTO;
	RT_CHECK(run1(r, &s, &j) == 0);
	RT_EQ_INT(j.o.status, RELAY_RUN_OK);
	RT_CHECK(!j.o.warm);
	relay_runtime_warm_stats_get(r, &st);
	RT_EQ_INT(st.failures[RELAY_WARM_FAIL_WEDGED], 1);
	job_free(&j);
	host_processes("^" SERVER_CMD, NULL, SIGCONT);
	relay_runtime_free(r);
}

/* A runtime whose warm parents answer within @bound_ms (and start within
 * that plus the 5 s slack), with the loop's other parents gone (see
 * above). */
static relay_runtime *bound_rt(uint32_t bound_ms)
{
	relay_runtime_options o = RELAY_RUNTIME_OPTIONS_INIT;
	relay_runtime *r = NULL;

	o.backend = "bwrap";
	o.bootstrap_dir = bootstrap_dir();
	o.warm = 1;
	o.warm_start_timeout_ms = bound_ms;
	relay_runtime_warm_retire(S.rt, NULL);
	if (relay_runtime_new(&r, &o, NULL) != 0)
		return NULL;
	relay_runtime_libev_attach(r, S.loop);
	return r;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* A parent started for a cold run (as relayd runs them) that says ready
 * with nothing queued and then waits, idle, longer than its start bound
 * is still there, not wedged, and serves the next event warm. */
static void test_warm__idle_ready_parent_not_wedged(void)
{
	relay_runtime_warm_stats st = { .version = 1 };
	relay_exec_spec s = py_spec("handlers.ok");
	relay_runtime *r = bound_rt(300);
	struct job j;
	double t0 = now_s();
	int i;

	RT_CHECK(r != NULL);
	s.warm = RELAY_WARM_AUTO;
	RT_CHECK(run1(r, &s, &j) == 0);   /* cold; a parent starts */
	RT_EQ_INT(j.o.status, RELAY_RUN_OK);
	RT_CHECK(!j.o.warm);
	job_free(&j);
	for (i = 0; i < 3000; i++) {
		relay_runtime_warm_stats_get(r, &st);
		if (st.parents_ready)
			break;
		ev_run(S.loop, EVRUN_NOWAIT);
		sleep_ms(10);
	}
	RT_EQ_INT(st.parents_ready, 1);
	/* Idle past the start bound (5.3 s from the spawn), the loop
	 * running so that a watchdog left armed would fire. */
	while (now_s() - t0 < 6.5) {
		ev_run(S.loop, EVRUN_NOWAIT);
		sleep_ms(20);
	}
	relay_runtime_warm_stats_get(r, &st);
	RT_EQ_INT(st.failures[RELAY_WARM_FAIL_WEDGED], 0);
	RT_EQ_INT(st.parents_ready, 1);
	RT_CHECK(run1(r, &s, &j) == 0);
	RT_EQ_INT(j.o.status, RELAY_RUN_OK);
	RT_CHECK(j.o.warm);
	relay_runtime_warm_stats_get(r, &st);
	RT_EQ_INT(st.parents_started, 1);
	RT_EQ_INT(st.failures[RELAY_WARM_FAIL_WEDGED], 0);
	job_free(&j);
	relay_runtime_free(r);
}

/* The loop stalls (a stopped or starved relayd) longer than the bound
 * right after a request went: its answers (S, then X) wait in the
 * socket when the loop wakes, and the watchdog, due by then, must read
 * them rather than call the parent wedged and run the handler again. */
static void test_warm__answer_waiting_after_pause(void)
{
	relay_runtime_warm_stats st = { .version = 1 };
	relay_exec_spec s = py_spec("handlers.ok");
	relay_runtime *r = bound_rt(300);
	struct job j;
	size_t i, n = 0;

	RT_CHECK(r != NULL);
	RT_CHECK(run1(r, &s, &j) == 0);   /* waits for the parent */
	RT_CHECK(j.o.warm);
	job_free(&j);
	s.warm = RELAY_WARM_AUTO;
	RT_CHECK(start(r, &s, &j) == 0);  /* the request is sent now */
	sleep_ms(1500);                   /* the loop does not run */
	while (!j.done)
		ev_run(S.loop, EVRUN_ONCE);
	RT_EQ_INT(j.o.status, RELAY_RUN_OK);
	RT_CHECK(j.o.warm);
	for (i = 0; i < j.c.n; i++)
		n += strncmp(cap_line(&j.c, i), "ok ", 3) == 0;
	RT_EQ_INT(n, 1);                  /* ran once */
	relay_runtime_warm_stats_get(r, &st);
	RT_EQ_INT(st.failures[RELAY_WARM_FAIL_WEDGED], 0);
	RT_EQ_INT(st.parents_started, 1);
	job_free(&j);
	relay_runtime_free(r);
}

/* Stop (@sig SIGSTOP) or continue every process of our python3 warm
 * servers and their slots; see test_warm__parent_wedged. */
static int servers_signal(int sig)
{
	int n = 0, prev = -1, i;

	for (i = 0; i < 20 && n != prev; i++) {
		prev = n;
		n = host_processes("^" SERVER_CMD, NULL, sig);
		sleep_ms(50);
	}
	return n;
}

/* The bound runs from each request's own send: A is sent, then B while
 * the server is stopped, and the loop reads A's answer only after that.
 * The server is continued just after A's deadline, well before B's: B is
 * answered within its bound and must not be judged by A's. */
static void test_warm__bound_from_oldest_unanswered(void)
{
	relay_runtime_warm_stats st = { .version = 1 };
	relay_exec_spec s = py_spec("handlers.ok");
	relay_runtime *r = bound_rt(3000);
	struct job a, b;
	double t0, tb;
	size_t i, n = 0;

	RT_CHECK(r != NULL);
	RT_CHECK(run1(r, &s, &a) == 0);   /* waits for the parent */
	RT_CHECK(a.o.warm);
	job_free(&a);
	s.warm = RELAY_WARM_AUTO;
	t0 = now_s();
	RT_CHECK(start(r, &s, &a) == 0);  /* A's bound ends at t0 + 3 s */
	sleep_ms(1000);                   /* A's answers wait unread */
	RT_CHECK(servers_signal(SIGSTOP) >= 2);
	RT_CHECK(start(r, &s, &b) == 0);  /* B's ends at tb + 3 s */
	tb = now_s();
	RT_CHECK(tb - t0 >= 1.0 && tb - t0 < 2.5);
	while (now_s() - t0 < 3.1) {      /* past A's deadline */
		ev_run(S.loop, EVRUN_NOWAIT);
		sleep_ms(10);
	}
	servers_signal(SIGCONT);
	wait_all(&a, 1);
	wait_all(&b, 1);
	RT_EQ_INT(a.o.status, RELAY_RUN_OK);
	RT_EQ_INT(b.o.status, RELAY_RUN_OK);
	RT_CHECK(a.o.warm && b.o.warm);
	for (i = 0; i < b.c.n; i++)
		n += strncmp(cap_line(&b.c, i), "ok ", 3) == 0;
	RT_EQ_INT(n, 1);
	relay_runtime_warm_stats_get(r, &st);
	RT_EQ_INT(st.failures[RELAY_WARM_FAIL_WEDGED], 0);
	job_free(&a);
	job_free(&b);
	relay_runtime_free(r);
}

/* Wait for @j, a "handlers.slow" run whose warm start a fault cut short:
 * it must have finished on the cold path without failing. @st receives
 * the runtime's warm counters. */
static void finished_cold(struct job *j, relay_runtime_warm_stats *st)
{
	while (!j->done)
		ev_run(S.loop, EVRUN_ONCE);
	RT_EQ_STR(j->o.reason, "");
	RT_CHECK(!j->o.warm);
	RT_CHECK(cap_has(&j->c, "slow done"));
	relay_runtime_warm_stats_get(S.rt, st);
}

/* The warm parent killed mid-invocation: the run finishes cold, counted,
 * without failing. */
static void test_warm__parent_killed(void)
{
	relay_exec_spec s = py_spec("handlers.slow");
	relay_runtime_warm_stats st = { .version = 1 };
	struct job j;
	pid_t pid = 0;
	int i;

	RT_CHECK(run1(S.rt, &s, &j) == 0);   /* the parent is ready */
	job_free(&j);
	s.warm = RELAY_WARM_AUTO;          /* as relayd runs it */
	RT_CHECK(start(S.rt, &s, &j) == 0);
	for (i = 0; i < 50 && !j.done; i++) {
		ev_run(S.loop, EVRUN_NOWAIT);
		sleep_ms(10);
	}
	RT_CHECK(ours_by_role(true, &pid, 1) == 1);
	RT_CHECK(pid > 0 && kill(pid, SIGKILL) == 0);
	finished_cold(&j, &st);
	RT_CHECK(st.failures[RELAY_WARM_FAIL_CRASHED] >= 1);
	job_free(&j);
}

/* An invocation slot killed mid-invocation (its H dies with it): the run
 * finishes cold, counted, and the parent serves the next one warm from a
 * new slot. */
static void test_warm__slot_killed(void)
{
	relay_exec_spec s = py_spec("handlers.slow");
	relay_runtime_warm_stats st = { .version = 1 };
	uint64_t before;
	pid_t slots[16];
	struct job j;
	int i, n;

	RT_CHECK(run1(S.rt, &s, &j) == 0);   /* the parent is ready */
	job_free(&j);
	relay_runtime_warm_stats_get(S.rt, &st);
	before = st.failures[RELAY_WARM_FAIL_FORK];
	s.warm = RELAY_WARM_AUTO;
	RT_CHECK(start(S.rt, &s, &j) == 0);
	for (i = 0; i < 50 && !j.done; i++) {
		ev_run(S.loop, EVRUN_NOWAIT);
		sleep_ms(10);
	}
	n = ours_by_role(false, slots, 16);
	RT_CHECK(n >= 1);
	for (i = 0; i < n; i++)
		kill(slots[i], SIGKILL);
	finished_cold(&j, &st);
	RT_CHECK(st.failures[RELAY_WARM_FAIL_FORK] > before);
	job_free(&j);
	s = py_spec("handlers.ok");
	RT_CHECK(run1(S.rt, &s, &j) == 0);
	RT_EQ_INT(j.o.status, RELAY_RUN_OK);
	RT_CHECK(j.o.warm);
	job_free(&j);
}

static void count_parent(const char *app, const char *state,
			 unsigned int inflight, uint64_t rss, void *payload)
{
	int *n = payload;

	(void)app;
	(void)inflight;
	(void)rss;
	if (strcmp(state, "ready") == 0)
		n[0]++;
	else if (strcmp(state, "retiring") == 0)
		n[1]++;
	else
		n[2]++;
}

/* A new generation starts a new parent; the old one finishes what it runs
 * and goes. */
static void test_warm__reload_generation(void)
{
	relay_runtime *r = new_rt(60000, 8);
	relay_exec_spec s = py_spec("handlers.slow"), q = py_spec(
		"handlers.ok");
	struct job j[2], k;
	int n[3] = { 0, 0, 0 };

	RT_CHECK(r != NULL);
	RT_CHECK(run1(r, &q, &k) == 0);
	job_free(&k);
	RT_CHECK(start(r, &s, &j[0]) == 0);          /* generation 1, slow */
	q.generation = 2;
	RT_CHECK(start(r, &q, &j[1]) == 0);          /* generation 2 */
	relay_runtime_warm_foreach(r, count_parent, n);
	RT_EQ_INT(n[1], 1);                           /* 1 retiring */
	wait_all(j, 2);
	RT_EQ_INT(j[0].o.status, RELAY_RUN_OK);
	RT_CHECK(j[0].o.warm);
	RT_EQ_INT(j[1].o.status, RELAY_RUN_OK);
	RT_CHECK(j[1].o.warm);
	memset(n, 0, sizeof(n));
	relay_runtime_warm_foreach(r, count_parent, n);
	RT_EQ_INT(n[0], 1);
	RT_EQ_INT(n[1], 0);
	job_free(&j[0]);
	job_free(&j[1]);
	relay_runtime_free(r);
}

/* Many apps: never more parents than the cap, idle ones go. */
static void test_warm__cap_and_idle_eviction(void)
{
	relay_runtime *r = new_rt(300, 3);
	relay_exec_spec s = py_spec("handlers.ok");
	char name[32];
	int i, n[3];
	struct job j;

	RT_CHECK(r != NULL);
	s.warm = RELAY_WARM_AUTO;
	for (i = 0; i < 12; i++) {
		snprintf(name, sizeof(name), "app%02d", i);
		s.app = name;
		RT_CHECK(run1(r, &s, &j) == 0);
		RT_EQ_INT(j.o.status, RELAY_RUN_OK);
		job_free(&j);
		memset(n, 0, sizeof(n));
		relay_runtime_warm_foreach(r, count_parent, n);
		RT_CHECK(n[0] + n[1] + n[2] <= 3);
	}
	for (i = 0; i < 150; i++) {
		ev_run(S.loop, EVRUN_NOWAIT);
		sleep_ms(10);
	}
	memset(n, 0, sizeof(n));
	relay_runtime_warm_foreach(r, count_parent, n);
	RT_EQ_INT(n[0] + n[1] + n[2], 0);
	relay_runtime_free(r);
}

#define NODE_STATE                                                       \
	"const fs = require('fs');\n"                                   \
	"let counter = 0;\n"                                             \
	"exports.state = (event) => {\n"                                 \
	"  counter++; globalThis.leak = (globalThis.leak || 0) + 1;\n"   \
	"  console.log('counter', counter, globalThis.leak, event.n);\n" \
	"  console.log('tmp', fs.readdirSync('/tmp').join(','));\n"      \
	"  console.log('env', Object.keys(process.env).sort().map(k => "  \
	"k + '=' + process.env[k]).join(' '));\n"                        \
	"  console.log('argv', process.argv.slice(2).join(' '));\n"     \
	"  console.log('rand', Math.random());\n"                        \
	"  fs.writeFileSync('/tmp/left-behind', 'x');\n"                 \
	"};\n"

/* node: a pre-started process per invocation, looking like a cold one. */
static void test_warm__node_pool_one_shot(void)
{
	relay_exec_spec s = py_spec("nodestate.state");
	struct job w1, w2, c1;
	size_t i;

	if (!have_prog("/usr/bin/node"))
		RT_SKIP("node missing");
	rtf_write(S.app_dir, "nodestate.js", NODE_STATE);
	s.runtime = RELAY_RUNTIME_NODE;
	RT_CHECK(run1(S.rt, &s, &w1) == 0);
	RT_CHECK(run1(S.rt, &s, &w2) == 0);
	s.warm = RELAY_WARM_OFF;
	RT_CHECK(run1(S.rt, &s, &c1) == 0);
	RT_EQ_INT(w2.o.status, RELAY_RUN_OK);
	RT_CHECK(w1.o.warm && w2.o.warm && !c1.o.warm);
	RT_CHECK(cap_has(&w2.c, "counter 1 1 1"));
	RT_CHECK(cap_has(&w2.c, "tmp "));
	RT_CHECK(cap_has(&w2.c, "argv nodestate.state"));
	RT_EQ_INT(w2.c.n, c1.c.n);
	for (i = 0; i < w2.c.n && i < c1.c.n; i++) {
		if (strncmp(cap_line(&w2.c, i), "rand ", 5) == 0) {
			RT_CHECK(strcmp(cap_line(&w1.c, i),
					cap_line(&w2.c, i)) != 0);
			continue;
		}
		RT_EQ_STR(cap_line(&w2.c, i), cap_line(&c1.c, i));
	}
	job_free(&w1);
	job_free(&w2);
	job_free(&c1);
}

/* exec: the fork server execs the command, which sees a cold start's world. */
static void test_warm__exec_same_as_cold(void)
{
	static const char *const argv[] = {
		"/bin/sh", "-c", "env | sort; ls -A /tmp; echo x >/tmp/x; "
		"cat; echo; exit 4", NULL,
	};
	relay_exec_spec s = py_spec("run");
	struct job w1, w2, c1;
	size_t i;

	s.runtime = RELAY_RUNTIME_EXEC;
	s.argv = argv;
	RT_CHECK(run1(S.rt, &s, &w1) == 0);
	RT_CHECK(run1(S.rt, &s, &w2) == 0);
	s.warm = RELAY_WARM_OFF;
	RT_CHECK(run1(S.rt, &s, &c1) == 0);
	RT_EQ_STR(w2.o.reason, "exit status 4");
	RT_EQ_STR(c1.o.reason, "exit status 4");
	RT_CHECK(w1.o.warm && w2.o.warm && !c1.o.warm);
	RT_CHECK(cap_has(&w2.c, "RELAY_HANDLER=run"));
	RT_CHECK(cap_has(&w2.c, "RELAY_MESSAGE_ID=7-0"));
	RT_CHECK(cap_has(&w2.c, "{\"n\":1}"));
	RT_EQ_INT(w2.c.n, c1.c.n);
	for (i = 0; i < w2.c.n && i < c1.c.n; i++)
		RT_EQ_STR(cap_line(&w2.c, i), cap_line(&c1.c, i));
	job_free(&w1);
	job_free(&w2);
	job_free(&c1);
}


/*
 * What one invocation could leave for the next ones of its warm parent
 * (poison.py): "shared" touches what every invocation process can reach
 * in the sandbox (/dev, the keyrings, signals queued on pid 1, the pid
 * counter); "slot" changes the slot process N itself through /proc/1
 * and the calls a process of the same uid may make on another one.
 * "fingerprint" prints what a handler sees of all that, first the pid
 * namespace it ran in (which slot); the rest must be a cold start's.
 * Key syscalls by number (x86_64, aarch64): python has no keyctl.
 */
#define POISON                                                             \
	"import ctypes, os, platform, resource, signal, stat, subprocess\n" \
	"libc = ctypes.CDLL(None, use_errno=True)\n"                       \
	"ADD_KEY, KEYCTL = {'aarch64': (217, 219)}.get(platform.machine()," \
	" (248, 250))\n"                                                   \
	"def shared(event):\n"                                             \
	"    print('ns', os.readlink('/proc/self/ns/pid'), flush=True)\n"   \
	"    try:\n"                                                       \
	"        open('/dev/evil', 'w').write('x' * 4096)\n"                \
	"        os.unlink('/dev/fd')\n"                                    \
	"        os.symlink('/app', '/dev/fd')\n"                           \
	"    except OSError as e:\n"                                        \
	"        print('refused /dev', e.errno, flush=True)\n"              \
	"    for f in ('/dev/pts', '/dev/pts/ptmx'):\n"                    \
	"        try:\n"                                                    \
	"            os.chmod(f, 0o700)\n"                                  \
	"        except OSError as e:\n"                                    \
	"            print('refused', f, e.errno, flush=True)\n"           \
	"    os.mkdir('/dev/shm/d')\n"                                      \
	"    for ring in (-4, -3):\n"                                       \
	"        k = libc.syscall(ADD_KEY, b'user', b'relay-poison',"        \
	" b'secret', 6, ring)\n"                                           \
	"        print('key', ring, k > 0, flush=True)\n"                  \
	"    for i in range(40):\n"                                         \
	"        os.kill(1, signal.SIGRTMIN + 1)\n"                         \
	"    os.kill(1, signal.SIGUSR2)\n"                                  \
	"    for i in range(30):\n"                                         \
	"        subprocess.run(['true'])\n"                                \
	"def slot(event):\n"                                               \
	"    for f, v in (('/proc/1/oom_score_adj', '500'),"               \
	" ('/proc/1/coredump_filter', '0x7f')):\n"                         \
	"        try:\n"                                                    \
	"            open(f, 'w').write(v)\n"                               \
	"            print('wrote', f, flush=True)\n"                      \
	"        except OSError as e:\n"                                    \
	"            print('refused', f, e.errno, flush=True)\n"           \
	"    resource.prlimit(1, resource.RLIMIT_NOFILE, (64, 64))\n"       \
	"    resource.prlimit(1, resource.RLIMIT_CORE, (0, 0))\n"           \
	"    for f in (lambda: os.setpriority(os.PRIO_PROCESS, 1,"           \
	" min(19, os.getpriority(os.PRIO_PROCESS, 1) + 1)),"               \
	" lambda: os.sched_setaffinity(1,"                                 \
	" {min(os.sched_getaffinity(1))})):\n"                             \
	"        try:\n"                                                    \
	"            f()\n"                                                 \
	"        except OSError as e:\n"                                    \
	"            print('refused', e.errno, flush=True)\n"               \
	"def ls(d):\n"                                                     \
	"    out = []\n"                                                    \
	"    for n in sorted(os.listdir(d)) + ['.']:\n"                      \
	"        st = os.lstat(d + '/' + n)\n"                              \
	"        out.append((n, oct(st.st_mode), st.st_uid, st.st_gid,"    \
	" os.readlink(d + '/' + n) if stat.S_ISLNK(st.st_mode)"           \
	" else st.st_rdev))\n"                                             \
	"    return out\n"                                                  \
	"def fingerprint(event):\n"                                        \
	"    print('ns', os.readlink('/proc/self/ns/pid'))\n"               \
	"    print('child', subprocess.Popen(['true']).pid)\n"             \
	"    print('dev', ls('/dev'), os.listdir('/dev'))\n"                \
	"    print('pts', ls('/dev/pts'))\n"                                \
	"    print('shm', ls('/dev/shm'))\n"                                \
	"    print('fd', subprocess.run(['/bin/bash', '-c',"               \
	" 'cat <(echo real)'], capture_output=True).stdout)\n"            \
	"    print('keys', [libc.syscall(KEYCTL, 10, ring, b'user',"       \
	" b'relay-poison', 0) > 0 for ring in (-4, -3)])\n"                \
	"    print('limits', [resource.getrlimit(r) for r in range(16)])\n" \
	"    print('nice', os.getpriority(os.PRIO_PROCESS, 0),"             \
	" sorted(os.sched_getaffinity(0)))\n"                              \
	"    print('proc', [open('/proc/self/' + f).read().strip() for f in" \
	" ('oom_score_adj', 'coredump_filter')])\n"                        \
	"    print('caps', [l.split()[1] for l in open('/proc/self/status')" \
	" if l.startswith('Cap')], open('/proc/self/setgroups').read())\n" \
	"    print('pending', hex(sum(int(l.split()[1], 16) for l in"        \
	" open('/proc/1/status') if l.startswith(('ShdPnd', 'SigPnd')))"   \
	" & ~(1 << (signal.SIGCHLD - 1))))\n"

/* The fingerprint @j printed equals the cold one @cold (its first line,
 * the pid namespace, aside). */
static void same_fingerprint(const struct job *j, const struct job *cold)
{
	size_t i;

	RT_EQ_STR(j->o.reason, "");
	RT_CHECK(j->o.warm);
	RT_EQ_INT(j->c.n, cold->c.n);
	for (i = 1; i < j->c.n && i < cold->c.n; i++)
		RT_EQ_STR(cap_line(&j->c, i), cap_line(&cold->c, i));
}

/*
 * A poisoner then a fingerprint, warm, several times in one parent
 * (one at a time, so slots are reused): every fingerprint is a cold
 * start's. With @reuse, at least one fingerprint ran in the slot its
 * poisoner ran in (else the case proves nothing about a slot's reuse).
 */
static void poison_then_fingerprint(relay_exec_spec poison,
				    relay_exec_spec fp, bool reuse)
{
	struct job cold, pj, fj;
	bool reused = false;
	int i, k;

	rtf_write(S.app_dir, "poison.py", POISON);
	fp.warm = RELAY_WARM_OFF;
	RT_CHECK(run1(S.rt, &fp, &cold) == 0);
	RT_EQ_STR(cold.o.reason, "");
	RT_CHECK(!cold.o.warm && cold.c.n >= 9);
	fp.warm = RELAY_WARM_REQUIRE;
	/* Idle slots take requests in turn: two fingerprints after each
	 * poisoner, so that one runs where it ran. */
	for (i = 0; i < 4; i++) {
		RT_CHECK(run1(S.rt, &poison, &pj) == 0);
		RT_EQ_STR(pj.o.reason, "");
		RT_CHECK(pj.o.warm);
		for (k = 0; k < 2; k++) {
			RT_CHECK(run1(S.rt, &fp, &fj) == 0);
			same_fingerprint(&fj, &cold);
			reused |= fj.c.n && pj.c.n &&
				  strcmp(cap_line(&pj.c, 0),
					 cap_line(&fj.c, 0)) == 0;
			job_free(&fj);
		}
		job_free(&pj);
	}
	if (reuse)
		RT_CHECK(reused);
	job_free(&cold);
}

/* python3: what an invocation leaves in /dev, the keyrings, pid 1's
 * pending signals and the pid counter is not seen by a later one in the
 * same slot. */
static void test_warm__shared_state_not_inherited(void)
{
	relay_exec_spec p = py_spec("poison.shared"), f = py_spec(
		"poison.fingerprint");

	poison_then_fingerprint(p, f, true);
}

/* A session keyring relayd has (a service manager may give it one) is
 * inherited by every sandbox: a warm invocation gets a new one, so a
 * key one adds to it is not seen by the next. (A cold invocation still
 * shares it: bwrap keeps it.) The parents are made anew after this
 * process joined a session keyring of its own. */
static void test_warm__inherited_session_keyring_not_shared(void)
{
	static const char *const argv[] = {
		"/usr/bin/python3", "-c", "import os, poison; "
		"getattr(poison, os.environ['RELAY_HANDLER'])(0)", NULL,
	};
	relay_exec_spec p = py_spec("poison.shared"), f = py_spec(
		"poison.fingerprint");

	RT_CHECK(syscall(SYS_keyctl, KEYCTL_JOIN_SESSION_KEYRING,
			 "relay-test-warm") > 0);
	relay_runtime_warm_retire(S.rt, NULL);
	poison_then_fingerprint(p, f, true);
	p = py_spec("shared");
	f = py_spec("fingerprint");
	p.runtime = f.runtime = RELAY_RUNTIME_EXEC;
	p.argv = f.argv = argv;
	poison_then_fingerprint(p, f, false);
}

/* python3: an invocation that changes its slot process N (limits, nice,
 * affinity; /proc/1's oom_score_adj and coredump_filter) changes no
 * later invocation. */
static void test_warm__slot_process_not_changed(void)
{
	relay_exec_spec p = py_spec("poison.slot"), f = py_spec(
		"poison.fingerprint");
	struct job j;

	poison_then_fingerprint(p, f, false);
	/* /proc/1 is not the handler's to write. */
	RT_CHECK(run1(S.rt, &p, &j) == 0);
	RT_CHECK(cap_contains(&j.c, "refused /proc/1/oom_score_adj"));
	RT_CHECK(cap_contains(&j.c, "refused /proc/1/coredump_filter"));
	job_free(&j);
}

/* exec: the same through relay-warm-exec (a python3 command: one
 * command, so one warm parent, running the handler it is named). */
static void test_warm__exec_shared_state_not_inherited(void)
{
	static const char *const argv[] = {
		"/usr/bin/python3", "-c", "import os, poison; "
		"getattr(poison, os.environ['RELAY_HANDLER'])(0)", NULL,
	};
	relay_exec_spec p = py_spec("shared"), f = py_spec("fingerprint");

	p.runtime = f.runtime = RELAY_RUNTIME_EXEC;
	p.argv = f.argv = argv;
	poison_then_fingerprint(p, f, false);
}

/* exec: an invocation's slot N (relay-warm-exec before its fork, the
 * parent of the invocation's process) killed mid-invocation: as for a
 * python3 slot, the run finishes cold, counted, and no attempt is
 * charged (it does not fail as "killed by signal 9"). */
static void test_warm__exec_slot_killed(void)
{
	static const char *const argv[] = {
		"/bin/sh", "-c", "sleep 1; echo slow done", NULL,
	};
	relay_exec_spec s = py_spec("run");
	relay_runtime_warm_stats st = { .version = 1 };
	pid_t all[64], h = 0;
	uint64_t before;
	struct job j;
	int i, n, killed = 0;

	s.runtime = RELAY_RUNTIME_EXEC;
	s.argv = argv;
	RT_CHECK(run1(S.rt, &s, &j) == 0);   /* the parent is ready */
	RT_CHECK(j.o.warm);
	job_free(&j);
	relay_runtime_warm_stats_get(S.rt, &st);
	before = st.failures[RELAY_WARM_FAIL_FORK];
	s.warm = RELAY_WARM_AUTO;
	RT_CHECK(start(S.rt, &s, &j) == 0);
	for (i = 0; i < 100 && !killed && !j.done; i++) {
		ev_run(S.loop, EVRUN_NOWAIT);
		sleep_ms(10);
		n = host_pids("^/run/relay-warm-exec", all, 64);
		if (host_pids("^/bin/sh -c sleep 1; echo slow", &h, 1) == 1 &&
		    host_pids_has(all, n, parent_of(h)))
			killed += kill(parent_of(h), SIGKILL) == 0;
	}
	RT_CHECK(killed == 1);
	finished_cold(&j, &st);
	RT_CHECK(st.failures[RELAY_WARM_FAIL_FORK] > before);
	job_free(&j);
	/* The N made ahead for the next invocation, killed while idle: the
	 * next one still runs (warm from a new N, or cold if it got the
	 * dying one), and the one after it warm. */
	n = host_pids("^/run/relay-warm-exec", all, 64);
	for (i = 0; i < n; i++)
		if (host_pids_has(all, n, parent_of(all[i])))
			kill(all[i], SIGKILL);
	RT_CHECK(run1(S.rt, &s, &j) == 0);
	RT_EQ_STR(j.o.reason, "");
	RT_CHECK(cap_has(&j.c, "slow done"));
	job_free(&j);
	s.warm = RELAY_WARM_REQUIRE;
	RT_CHECK(run1(S.rt, &s, &j) == 0);
	RT_EQ_STR(j.o.reason, "");
	RT_CHECK(j.o.warm && cap_has(&j.c, "slow done"));
	job_free(&j);
}

/* relay_runtime_free() leaves no warm sandbox behind. */
static void test_warm__free_leaves_nothing(void)
{
	relay_runtime *r = new_rt(60000, 8);
	relay_exec_spec s = py_spec("handlers.ok");
	struct job j;

	RT_CHECK(r != NULL);
	RT_CHECK(run1(r, &s, &j) == 0);
	job_free(&j);
	relay_runtime_free(S.rt);
	S.rt = NULL;
	relay_runtime_free(r);
	sleep_ms(100);
	RT_CHECK(!host_has_process("relay-bootstrap.py --serve", NULL));
	S.rt = new_rt(60000, 8);
}

/* An invocation that signals its slot N (pid 1 of its namespace; the
 * interpreter has a SIGINT handler) harms no later invocation of that
 * slot: N blocks every signal, and an H starts with none pending. Fails
 * when N takes the signal: the interpreter's pending mark is copied into
 * every later H, which raises KeyboardInterrupt before its handler. */
static void test_warm__signal_to_slot_is_harmless(void)
{
	relay_exec_spec s = py_spec("handlers.sigint_n");
	char ns[8][128];
	bool reused = false;
	struct job j;
	int i, k;

	for (i = 0; i < 8; i++) {
		RT_CHECK(run1(S.rt, &s, &j) == 0);
		RT_EQ_INT(j.o.status, RELAY_RUN_OK);
		RT_CHECK(j.o.warm);
		snprintf(ns[i], sizeof(ns[i]), "%s", j.c.n ? cap_line(&j.c, 0)
							   : "");
		RT_CHECK(strncmp(ns[i], "ns pid:[", 8) == 0);
		for (k = 0; k < i; k++)
			reused |= strcmp(ns[k], ns[i]) == 0;
		job_free(&j);
	}
	RT_CHECK(reused);
}

/* Without the slot loop (relay-warm-slot.so cannot be loaded) the warm
 * parent says so and invocations run cold, counted, and succeed. */
static void test_warm__slot_lib_unloadable_runs_cold(void)
{
	relay_exec_spec s = py_spec("handlers.ok");
	relay_runtime_warm_stats st = { .version = 1 };
	char notlib[300];
	relay_runtime *r;
	rtf_rt_opts o = { .warm = 1, .warm_start_timeout_ms = 60000 };
	struct job j;
	int i;

	snprintf(notlib, sizeof(notlib), "%s/handlers.py", S.app_dir);
	setenv("RELAY_WARM_SLOT", notlib, 1);
	/* As new_rt(), with a start bound of a minute: on a loaded host the
	 * parent's "unsupported" answer can come after the default bound,
	 * and a parent given up on counts as wedged, not unsupported. */
	r = rtf_runtime_new(S.loop, &o);
	unsetenv("RELAY_WARM_SLOT");
	RT_CHECK(r != NULL);
	s.warm = RELAY_WARM_AUTO;
	RT_CHECK(run1(r, &s, &j) == 0);
	RT_EQ_INT(j.o.status, RELAY_RUN_OK);
	RT_CHECK(cap_has(&j.c, "ok {'n': 1}"));
	job_free(&j);
	/* The warm parent's answer comes after the first run went cold. */
	RT_CHECK(run1(r, &s, &j) == 0);
	RT_EQ_INT(j.o.status, RELAY_RUN_OK);
	RT_CHECK(!j.o.warm);
	job_free(&j);
	/* On a busy machine both runs can end before the parent's answer
	 * arrives: wait for it (up to a minute), polling the loop. */
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
}

/*
 * A run's done callback may run inside the control socket's reader (the
 * exit report is the last thing it waited for); one that retires every
 * parent, the one that reported included, must not leave the reader
 * using the freed parent (ASan would abort here). Several rounds, since
 * which event comes last varies.
 */
static relay_runtime *retire_rt;

static void done_and_retire(const relay_run_outcome *o, void *payload)
{
	struct job *j = payload;

	j->o = *o;
	j->done = true;
	relay_runtime_warm_retire(retire_rt, NULL);
}

static void test_warm__done_callback_retires_parent(void)
{
	relay_exec_spec s = py_spec("handlers.quiet");
	relay_error err;
	int round, warm = 0;

	retire_rt = new_rt(60000, 8);
	RT_CHECK(retire_rt != NULL);
	s.warm = RELAY_WARM_AUTO;
	for (round = 0; round < 12; round++) {
		struct job j;

		memset(&j, 0, sizeof(j));
		RT_CHECK(relay_runtime_run(retire_rt, &s, cap_cb,
					   done_and_retire, &j.c, NULL,
					   &err) == 0);
		while (!j.done)
			ev_run(S.loop, EVRUN_ONCE);
		RT_EQ_INT(j.o.status, RELAY_RUN_OK);
		warm += j.o.warm;
		job_free(&j);
		/* Let the next parent come up, so the next run is warm. */
		s.warm = RELAY_WARM_REQUIRE;
	}
	RT_CHECK(warm >= 10);
	relay_runtime_free(retire_rt);
	retire_rt = NULL;
}

static int setup(void)
{
	relay_exec_spec s;
	struct job j;

	if (!have_prog("/usr/bin/bwrap") || !have_prog("/usr/bin/python3")) {
		skip_why = "bwrap or python3 missing";
		return 0;
	}
	rtf_setup(&S, "warm");
	/* node here: the pre-started processes (the fork server, the
	 * default where built, is test_warm_node.c's). */
	setenv("RELAY_WARM_NODE", "prestart", 1);
	rtf_write(S.app_dir, "handlers.py", HANDLERS);
	S.rt = new_rt(60000, 8);
	if (!S.rt) {
		skip_why = "bwrap cannot run here";
		return 0;
	}
	s = py_spec("handlers.ok");
	if (start(S.rt, &s, &j) != 0) {
		skip_why = "warm start refused";
		return 0;
	}
	while (!j.done)
		ev_run(S.loop, EVRUN_ONCE);
	if (j.o.status != RELAY_RUN_OK) {
		static char why[200];

		snprintf(why, sizeof(why), "warm parents unavailable here: %s",
			 j.o.reason);
		skip_why = why;
	}
	job_free(&j);
	return 0;
}

int main(int argc, char **argv)
{
	static const rt_case cases[] = {
		RT_CASE(test_warm__one_shot_and_same_as_cold),
		RT_CASE(test_warm__concurrent_isolated),
		RT_CASE(test_warm__exit_codes_and_import_errors),
		RT_CASE(test_warm__timeout_kills_one),
		RT_CASE(test_warm__memory_limit_per_invocation),
		RT_CASE(test_warm__edited_module_picked_up),
		RT_CASE(test_warm__pids_limit_per_invocation),
		RT_CASE(test_warm__slot_reuse_is_clean),
		RT_CASE(test_warm__parent_wedged),
		RT_CASE(test_warm__idle_ready_parent_not_wedged),
		RT_CASE(test_warm__answer_waiting_after_pause),
		RT_CASE(test_warm__bound_from_oldest_unanswered),
		RT_CASE(test_warm__parent_killed),
		RT_CASE(test_warm__slot_killed),
		RT_CASE(test_warm__reload_generation),
		RT_CASE(test_warm__cap_and_idle_eviction),
		RT_CASE(test_warm__node_pool_one_shot),
		RT_CASE(test_warm__exec_same_as_cold),
		RT_CASE(test_warm__shared_state_not_inherited),
		RT_CASE(test_warm__slot_process_not_changed),
		RT_CASE(test_warm__exec_shared_state_not_inherited),
		RT_CASE(test_warm__exec_slot_killed),
		RT_CASE(test_warm__inherited_session_keyring_not_shared),
		RT_CASE(test_warm__free_leaves_nothing),
		RT_CASE(test_warm__slot_lib_unloadable_runs_cold),
		RT_CASE(test_warm__signal_to_slot_is_harmless),
		RT_CASE(test_warm__done_callback_retires_parent),
	};
	int rc;

	setup();
	if (skip_why) {
		printf("1..0 # SKIP %s\n", skip_why);
		return 0;
	}
	rc = rt_main(argc, argv, cases, RT_NCASES(cases));
	if (rtf_teardown(&S, false) != 0)
		rc = 1;
	return rc;
}
