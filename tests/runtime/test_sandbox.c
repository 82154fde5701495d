/*
 * test_sandbox.c - the "bwrap" backend's isolation, and resource limits
 * (cgroups or rlimits) under both backends. Real bubblewrap, real
 * processes. When bwrap cannot run here the whole program reports a TAP
 * skip plan ("1..0 # SKIP …"); limit cases that need a cgroup controller
 * this machine does not offer skip individually.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <ev.h>

#include "relay/relay_libev.h"
#include "relaytest.h"
#include "rt_helpers.h"

static relay_runtime *rt;

static void open_bwrap(void)
{
	relay_error err;

	rt = make_rt("bwrap", RELAY_LIMITS_AUTO, 200, &err);
	if (!rt)
		RT_FAILF("relay_runtime_new(bwrap): %s", err.text);
	RT_ASSERT(rt != NULL);
}

static void close_rt(void)
{
	relay_runtime_free(rt);
	rt = NULL;
}

static void test_sandbox__outcomes(void)
{
	relay_run_outcome o;
	cap c = { 0 };

	open_bwrap();
	RT_EQ_STR(relay_runtime_backend_name(rt), "bwrap");
	RT_EQ_INT(run_sh(rt, "echo hi", 5000, &c, &o), 0);
	RT_EQ_INT(o.status, RELAY_RUN_OK);
	RT_EQ_INT(c.n, 1);
	RT_EQ_STR(cap_text(&c, 0), "[demo/h@1-0] stdout: hi");
	cap_free(&c);
	RT_EQ_INT(run_sh(rt, "exit 3", 5000, &c, &o), 0);
	RT_EQ_INT(o.status, RELAY_RUN_FAILED);
	RT_EQ_INT(o.exit_code, 3);
	RT_EQ_STR(o.reason, "exit status 3");
	RT_EQ_INT(run_sh(rt, "exec sleep 30", 300, &c, &o), 0);
	RT_EQ_INT(o.status, RELAY_RUN_TIMEOUT);
	RT_EQ_STR(o.reason, "timed out after 300ms");
	RT_CHECK(o.duration_us < 1500000);
	RT_EQ_INT(run_sh(rt, "trap '' TERM; sleep 30", 300, &c, &o), 0);
	RT_EQ_INT(o.status, RELAY_RUN_TIMEOUT);
	RT_CHECK(o.duration_us < 2000000);
	cap_free(&c);
	close_rt();
}

/* Same view as the process backend: cwd = app dir (at /app), relative
 * command, RELAY_HANDLER, byte-identical event. */
static void test_sandbox__event_env_cwd(void)
{
	static const char ev[] = "{\"event_name\":\"INSERT\",\"u\":\"\xe2\x82\xac\"}";
	const char *argv[] = { "/bin/sh", "-c", "./hello.sh; cat; echo; "
			       "echo \"$RELAY_APP $RELAY_MESSAGE_ID $HOME\"",
			       NULL };
	relay_exec_spec s = sh_spec(argv, 5000);
	relay_run_outcome o;
	cap c = { 0 };

	open_bwrap();
	s.event = ev;
	s.event_len = sizeof(ev) - 1;
	RT_EQ_INT(relay_runtime_run_sync(rt, &s, cap_cb, &c, &o, NULL), 0);
	RT_EQ_INT(o.status, RELAY_RUN_OK);
	RT_EQ_INT(c.n, 4);
	RT_EQ_STR(cap_line(&c, 0), "hello h");
	RT_EQ_STR(cap_line(&c, 1), "/app");
	RT_EQ_STR(cap_line(&c, 2), ev);
	RT_EQ_STR(cap_line(&c, 3), "demo 1-0 /tmp");
	cap_free(&c);
	close_rt();
}

static void test_sandbox__filesystem_read_only(void)
{
	char marker[1100];
	relay_run_outcome o;
	cap c = { 0 };

	open_bwrap();
	snprintf(marker, sizeof(marker), "%s/written-by-handler",
		 demo_app_dir());
	unlink(marker);
	RT_EQ_INT(run_sh(rt,
			 "touch /app/written-by-handler 2>/dev/null && "
			 "echo APPDIR; touch written-by-handler 2>/dev/null "
			 "&& echo APPDIR2; echo x > /etc/relay-sandbox-test "
			 "2>/dev/null && echo ETC; touch /usr/x 2>/dev/null "
			 "&& echo USR; mkdir /newdir 2>/dev/null && echo "
			 "ROOT; test -e /etc/shadow && echo SHADOW; "
			 "test -e /root && echo ROOTHOME; "
			 "echo private > /tmp/t && cat /tmp/t; id -u; "
			 "hostname 2>/dev/null || cat /proc/sys/kernel/hostname",
			 5000, &c, &o), 0);
	RT_EQ_INT(o.status, RELAY_RUN_OK);
	RT_CHECK(!cap_has(&c, "APPDIR"));
	RT_CHECK(!cap_has(&c, "APPDIR2"));
	RT_CHECK(!cap_has(&c, "ETC"));
	RT_CHECK(!cap_has(&c, "USR"));
	RT_CHECK(!cap_has(&c, "ROOT"));
	RT_CHECK(!cap_has(&c, "SHADOW"));
	RT_CHECK(!cap_has(&c, "ROOTHOME"));
	RT_CHECK(cap_has(&c, "private"));
	RT_CHECK(cap_has(&c, "65534"));
	RT_CHECK(cap_has(&c, "relay"));
	RT_CHECK(access(marker, F_OK) != 0);
	RT_CHECK(access("/etc/relay-sandbox-test", F_OK) != 0);
	cap_free(&c);
	close_rt();
}

/* Daemon's /tmp (where sockets often live) is not the handler's /tmp. */
static void test_sandbox__host_tmp_and_sockets_hidden(void)
{
	char dir[] = "/tmp/relay-sbx-XXXXXX", path[128], script[512];
	struct sockaddr_un sa;
	relay_run_outcome o;
	cap c = { 0 };
	int fd;

	RT_ASSERT(mkdtemp(dir) != NULL);
	snprintf(path, sizeof(path), "%s/daemon.sock", dir);
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	RT_ASSERT(strlen(path) < sizeof(sa.sun_path));
	memcpy(sa.sun_path, path, strlen(path) + 1);
	RT_ASSERT(bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0);
	listen(fd, 1);
	open_bwrap();
	snprintf(script, sizeof(script),
		 "test -e %s && echo VISIBLE; test -d %s && echo DIR; "
		 "ls /run; echo end", path, dir);
	RT_EQ_INT(run_sh(rt, script, 5000, &c, &o), 0);
	RT_EQ_INT(o.status, RELAY_RUN_OK);
	RT_CHECK(!cap_has(&c, "VISIBLE"));
	RT_CHECK(!cap_has(&c, "DIR"));
	RT_CHECK(cap_has(&c, "end"));
	close(fd);
	unlink(path);
	rmdir(dir);
	cap_free(&c);
	close_rt();
}

static int listen_tcp(int *port)
{
	struct sockaddr_in sa;
	socklen_t len = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 ||
	    listen(fd, 8) != 0 ||
	    getsockname(fd, (struct sockaddr *)&sa, &len) != 0)
		return -1;
	*port = ntohs(sa.sin_port);
	return fd;
}

/* No network unless the template asks: a TCP port on the host's loopback
 * (where Redis would listen) is unreachable; with network it is. */
static void test_sandbox__network(void)
{
	char script[256];
	relay_run_outcome o;
	const char *argv[] = { "/bin/bash", "-c", script, NULL };
	relay_exec_spec s = sh_spec(argv, 5000);
	cap c = { 0 };
	int port = 0, fd;

	if (!have_prog("/bin/bash"))
		RT_SKIP("bash not installed");
	fd = listen_tcp(&port);
	RT_ASSERT(fd >= 0);
	snprintf(script, sizeof(script),
		 "if echo hi > /dev/tcp/127.0.0.1/%d; then echo CONNECTED; "
		 "else echo REFUSED; fi 2>/dev/null", port);
	open_bwrap();
	RT_EQ_INT(relay_runtime_run_sync(rt, &s, cap_cb, &c, &o, NULL), 0);
	RT_CHECK(cap_has(&c, "REFUSED"));
	RT_CHECK(!cap_has(&c, "CONNECTED"));
	cap_free(&c);
	s.network = 1;
	RT_EQ_INT(relay_runtime_run_sync(rt, &s, cap_cb, &c, &o, NULL), 0);
	RT_CHECK(cap_has(&c, "CONNECTED"));
	cap_free(&c);
	close(fd);
	close_rt();
}

/* A private pid namespace: the handler sees only its own processes. */
static void test_sandbox__processes_hidden(void)
{
	relay_run_outcome o;
	cap c = { 0 };
	size_t i;

	open_bwrap();
	RT_EQ_INT(run_sh(rt, "for p in /proc/[0-9]*; do cat $p/comm; done; "
			 "echo count $(ls -d /proc/[0-9]* | wc -l)", 5000,
			 &c, &o), 0);
	RT_EQ_INT(o.status, RELAY_RUN_OK);
	for (i = 0; i < c.n; i++) {
		RT_CHECK(strcmp(cap_line(&c, i), "test_sandbox") != 0);
		RT_CHECK(strcmp(cap_line(&c, i), "process_api") != 0);
	}
	RT_ASSERT(c.n > 0);
	RT_CHECK(strtol(cap_line(&c, c.n - 1) + 6, NULL, 10) <= 6);
	cap_free(&c);
	close_rt();
}

/* The daemon's environment is unreachable, directly or through /proc. */
static void test_sandbox__daemon_environment_hidden(void)
{
	relay_run_outcome o;
	cap c = { 0 };

	setenv("RELAY_TEST_DAEMON_SECRET", "hunter2", 1);
	open_bwrap();
	RT_EQ_INT(run_sh(rt, "env; cat /proc/[0-9]*/environ 2>/dev/null | "
			 "tr '\\0' '\\n'; echo end", 5000, &c, &o), 0);
	RT_EQ_INT(o.status, RELAY_RUN_OK);
	RT_CHECK(cap_has(&c, "end"));
	RT_CHECK(cap_has(&c, "RELAY_HANDLER=h"));
	RT_CHECK(!cap_contains(&c, "hunter2"));
	RT_CHECK(!cap_contains(&c, "RELAY_SOURCE_ROOT"));
	unsetenv("RELAY_TEST_DAEMON_SECRET");
	cap_free(&c);
	close_rt();
}

static void test_sandbox__python3_and_node(void)
{
	relay_exec_spec s = sh_spec(NULL, 10000);
	relay_run_outcome o;
	cap c = { 0 };

	open_bwrap();
	s.handler = "events.created.handler";
	s.event = "{\"name\":\"grace\"}";
	s.event_len = strlen(s.event);
	if (have_prog("/usr/bin/python3")) {
		s.runtime = RELAY_RUNTIME_PYTHON3;
		RT_EQ_INT(relay_runtime_run_sync(rt, &s, cap_cb, &c, &o, NULL),
			  0);
		RT_EQ_INT(o.status, RELAY_RUN_OK);
		RT_CHECK(cap_has(&c, "name=grace"));
		cap_free(&c);
	}
	if (have_prog("/usr/bin/node")) {
		s.runtime = RELAY_RUNTIME_NODE;
		RT_EQ_INT(relay_runtime_run_sync(rt, &s, cap_cb, &c, &o, NULL),
			  0);
		RT_EQ_INT(o.status, RELAY_RUN_OK);
		RT_CHECK(cap_has(&c, "name=grace"));
		cap_free(&c);
	}
	close_rt();
}

/* ---- resource limits ---------------------------------------------- */

static bool cgroup_has(const char *ctl)
{
	char path[128];
	struct stat st;

	snprintf(path, sizeof(path), "/sys/fs/cgroup/%s", ctl);
	return stat(path, &st) == 0;
}

static relay_runtime *limited_rt(const char *backend, relay_limits_mode m)
{
	relay_error err;
	relay_runtime *r = make_rt(backend, m, 200, &err);

	if (!r)
		RT_FAILF("relay_runtime_new(%s): %s", backend, err.text);
	return r;
}

struct outcome_slot {
	relay_run_outcome o;
	int done;
};

static void slot_done(const relay_run_outcome *o, void *payload)
{
	struct outcome_slot *s = payload;

	s->o = *o;
	s->done = 1;
}

/*
 * Run @bad (with limits) and an innocent handler side by side on one
 * loop; the innocent one must succeed.
 */
static void run_with_bystander(relay_runtime *r, relay_exec_spec *bad,
			       struct outcome_slot *bad_out)
{
	const char *argv[] = { "/bin/sh", "-c", "sleep 0.3; echo fine", NULL };
	relay_exec_spec ok = sh_spec(argv, 10000);
	struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
	struct outcome_slot ok_out = { 0 };

	ok.handler = "bystander";
	relay_runtime_libev_attach(r, loop);
	RT_EQ_INT(relay_runtime_run(r, bad, NULL, slot_done, bad_out, NULL,
				    NULL), 0);
	RT_EQ_INT(relay_runtime_run(r, &ok, NULL, slot_done, &ok_out, NULL,
				    NULL), 0);
	ev_run(loop, 0);
	RT_EQ_INT(ok_out.done, 1);
	RT_EQ_INT(ok_out.o.status, RELAY_RUN_OK);
	RT_EQ_INT(bad_out->done, 1);
	relay_runtime_free(r);
	ev_loop_destroy(loop);
}

static void memory_hog(const char *backend)
{
	const char *argv[] = { "/usr/bin/python3", "-c",
			       "b = b'x' * (256 << 20); print(len(b))", NULL };
	relay_exec_spec s = sh_spec(argv, 10000);
	struct outcome_slot out = { 0 };
	relay_runtime *r;

	if (!have_prog("/usr/bin/python3"))
		RT_SKIP("python3 not installed");
	if (!cgroup_has("memory") && !cgroup_has("cgroup.controllers"))
		RT_SKIP("no memory cgroup");
	r = limited_rt(backend, RELAY_LIMITS_AUTO);
	RT_ASSERT(r != NULL);
	if (relay_runtime_limits_mode(r) == RELAY_LIMITS_RLIMIT) {
		relay_runtime_free(r);
		RT_SKIP("no writable cgroup hierarchy");
	}
	s.memory_bytes = 64u << 20;
	run_with_bystander(r, &s, &out);
	RT_EQ_INT(out.o.status, RELAY_RUN_FAILED);
	RT_CHECK(strncmp(out.o.reason, "memory limit exceeded", 21) == 0);
	if (strncmp(out.o.reason, "memory limit exceeded", 21) != 0)
		RT_FAILF("reason: %s", out.o.reason);
}

static void test_sandbox__memory_hog_process(void)
{
	memory_hog("process");
}

static void test_sandbox__memory_hog_bwrap(void)
{
	memory_hog("bwrap");
}

/* rlimit fallback: RLIMIT_AS makes the allocation fail in the handler. */
static void test_sandbox__memory_rlimit_fallback(void)
{
	const char *argv[] = { "/usr/bin/python3", "-c",
			       "b = b'x' * (512 << 20); print(len(b))", NULL };
	relay_exec_spec s = sh_spec(argv, 10000);
	relay_run_outcome o;
	relay_runtime *r;
	cap c = { 0 };

	if (!have_prog("/usr/bin/python3"))
		RT_SKIP("python3 not installed");
	r = limited_rt("process", RELAY_LIMITS_RLIMIT);
	RT_ASSERT(r != NULL);
	RT_EQ_INT(relay_runtime_limits_mode(r), RELAY_LIMITS_RLIMIT);
	s.memory_bytes = 256u << 20;
	RT_EQ_INT(relay_runtime_run_sync(r, &s, cap_cb, &c, &o, NULL), 0);
	RT_EQ_INT(o.status, RELAY_RUN_FAILED);
	RT_EQ_INT(o.exit_code, 1);
	RT_CHECK(cap_contains(&c, "MemoryError"));
	cap_free(&c);
	relay_runtime_free(r);
}

/*
 * Entries "relay-<our pid>-*" left in the pids hierarchy root. A cgroup
 * can only be removed once every process in it is gone, so none left
 * after the runtime is freed means the bomb was entirely reaped.
 */
static int leftover_cgroups(void)
{
	DIR *d = opendir("/sys/fs/cgroup/pids");
	struct dirent *e;
	char prefix[64];
	int n = 0;

	snprintf(prefix, sizeof(prefix), "relay-%ld-", (long)getpid());
	while (d && (e = readdir(d)))
		n += strncmp(e->d_name, prefix, strlen(prefix)) == 0;
	if (d)
		closedir(d);
	return n;
}

/*
 * A real fork bomb, only where a pids cgroup holds it (RLIMIT_NPROC is
 * per uid and not enforced for root, so it could hurt the machine).
 */
static void fork_bomb(const char *backend)
{
	const char *argv[] = { "/bin/sh", "-c",
			       "f() { f | f & }; f; sleep 1; exit 0", NULL };
	relay_exec_spec s = sh_spec(argv, 1500);
	struct outcome_slot out = { 0 };
	relay_runtime *r;

	if (!cgroup_has("pids") && !cgroup_has("cgroup.controllers"))
		RT_SKIP("no pids cgroup");
	r = limited_rt(backend, RELAY_LIMITS_AUTO);
	RT_ASSERT(r != NULL);
	if (relay_runtime_limits_mode(r) == RELAY_LIMITS_RLIMIT) {
		relay_runtime_free(r);
		RT_SKIP("no writable cgroup hierarchy");
	}
	s.pids = 16;
	run_with_bystander(r, &s, &out);
	RT_CHECK(out.o.duration_us < 3000000);
	RT_EQ_INT(leftover_cgroups(), 0);
}

static void test_sandbox__fork_bomb_process(void)
{
	fork_bomb("process");
}

static void test_sandbox__fork_bomb_bwrap(void)
{
	fork_bomb("bwrap");
}

/* pids counts exactly: N-1 extra processes fit, N do not. */
static void test_sandbox__pids_exact(void)
{
	relay_run_outcome o;
	relay_runtime *r;
	cap c = { 0 };
	const char *argv[] = { "/bin/sh", "-c",
			       "i=0; while [ $i -lt $N ]; do sleep 2 & "
			       "i=$((i+1)); done; echo started $i", NULL };
	const char *env3[] = { "N=3", NULL }, *env4[] = { "N=4", NULL };
	relay_exec_spec s = sh_spec(argv, 5000);

	if (!cgroup_has("pids"))
		RT_SKIP("no v1 pids cgroup");
	r = limited_rt("process", RELAY_LIMITS_AUTO);
	RT_ASSERT(r != NULL);
	if (relay_runtime_limits_mode(r) == RELAY_LIMITS_RLIMIT) {
		relay_runtime_free(r);
		RT_SKIP("no writable cgroup hierarchy");
	}
	s.pids = 4;  /* the shell + 3 sleeps */
	s.env = env3;
	RT_EQ_INT(relay_runtime_run_sync(r, &s, cap_cb, &c, &o, NULL), 0);
	RT_EQ_INT(o.status, RELAY_RUN_OK);
	RT_CHECK(cap_has(&c, "started 3"));
	cap_free(&c);
	s.env = env4;
	RT_EQ_INT(relay_runtime_run_sync(r, &s, cap_cb, &c, &o, NULL), 0);
	RT_EQ_INT(o.status, RELAY_RUN_FAILED);
	RT_CHECK(!cap_has(&c, "started 4"));
	cap_free(&c);
	relay_runtime_free(r);
}

/* cpus: a CFS quota of 0.2 CPU lets a busy loop use ~0.2s per second. */
static void test_sandbox__cpus_quota(void)
{
	const char *argv[] = { "/usr/bin/python3", "-c",
			       "import time\n"
			       "t = time.monotonic()\n"
			       "while time.monotonic() - t < 1.0: pass\n"
			       "print('%.3f' % time.process_time())", NULL };
	relay_exec_spec s = sh_spec(argv, 10000);
	relay_run_outcome o;
	relay_runtime *r;
	cap c = { 0 };
	double cpu;

	if (!have_prog("/usr/bin/python3"))
		RT_SKIP("python3 not installed");
	r = limited_rt("process", RELAY_LIMITS_AUTO);
	RT_ASSERT(r != NULL);
	if (relay_runtime_limits_mode(r) == RELAY_LIMITS_RLIMIT) {
		relay_runtime_free(r);
		RT_SKIP("no writable cgroup hierarchy (cpus unenforced)");
	}
	s.cpus_milli = 200;
	RT_EQ_INT(relay_runtime_run_sync(r, &s, cap_cb, &c, &o, NULL), 0);
	RT_EQ_INT(o.status, RELAY_RUN_OK);
	RT_ASSERT(c.n == 1);
	cpu = strtod(cap_line(&c, 0), NULL);
	if (cpu > 0.45 || cpu < 0.05)
		RT_FAILF("busy loop used %.3fs of CPU in 1s at cpus 0.2", cpu);
	cap_free(&c);
	relay_runtime_free(r);
}

/* A crashed relayd's cgroups (its pid is gone) are removed at startup. */
static void test_sandbox__stale_cgroups_reaped(void)
{
	const char *stale = "/sys/fs/cgroup/pids/relay-4194305-1";
	const char *child = "/sys/fs/cgroup/pids/relay-4194305-1/7";
	relay_runtime *r;

	if (!cgroup_has("pids"))
		RT_SKIP("no v1 pids cgroup");
	if (mkdir(stale, 0755) != 0 || mkdir(child, 0755) != 0) {
		rmdir(stale);
		RT_SKIP("pids hierarchy not writable");
	}
	r = limited_rt("process", RELAY_LIMITS_AUTO);
	RT_ASSERT(r != NULL);
	RT_CHECK(access(stale, F_OK) != 0);
	relay_runtime_free(r);
	rmdir(child);
	rmdir(stale);
}

static const rt_case cases[] = {
	RT_CASE(test_sandbox__outcomes),
	RT_CASE(test_sandbox__event_env_cwd),
	RT_CASE(test_sandbox__filesystem_read_only),
	RT_CASE(test_sandbox__host_tmp_and_sockets_hidden),
	RT_CASE(test_sandbox__network),
	RT_CASE(test_sandbox__processes_hidden),
	RT_CASE(test_sandbox__daemon_environment_hidden),
	RT_CASE(test_sandbox__python3_and_node),
	RT_CASE(test_sandbox__memory_hog_process),
	RT_CASE(test_sandbox__memory_hog_bwrap),
	RT_CASE(test_sandbox__memory_rlimit_fallback),
	RT_CASE(test_sandbox__fork_bomb_process),
	RT_CASE(test_sandbox__fork_bomb_bwrap),
	RT_CASE(test_sandbox__pids_exact),
	RT_CASE(test_sandbox__cpus_quota),
	RT_CASE(test_sandbox__stale_cgroups_reaped),
};

int main(int argc, char **argv)
{
	return rt_bwrap_main(argc, argv, cases, RT_NCASES(cases));
}
