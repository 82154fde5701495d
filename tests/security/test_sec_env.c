/*
 * test_sec_env.c - a template's environment reaches the handler and
 * nothing on the host (issue 22 item 1). Real bubblewrap, real processes.
 *
 * The attack: a template sets LD_PRELOAD (or LD_LIBRARY_PATH, LD_AUDIT,
 * ...) to a library in its app directory. bwrap used to be exec'd with the
 * handler's environment as its own, so the host's dynamic loader mapped
 * that library into bwrap, on the host, before any namespace existed. The
 * probe library (preload_probe.c) appends to a file only a host process
 * can reach when it is loaded; the file must stay empty.
 *
 * Each case also checks, while its handler runs, every bwrap process of
 * its app (by the app directory in the command line; other tests may run
 * bwrap at the same time): its environment is exactly the fixed host one
 * (PATH only) and no process's command line holds the template's secret
 * (command lines are readable by every local user). Cold and warm alike,
 * for exec, python3 and node.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <ev.h>

#include "relay/relay_libev.h"
#include "relay/runtime.h"
#include "relaytest.h"
#include "runtime/rt_helpers.h"
#include "runtime/rt_job.h"

static struct ev_loop *loop;
static relay_runtime *rt;
static char app_dir[64], mark_dir[64], mark[128];
static char secret[64];
static const char *skip_why;

#define HOST_ENV "PATH=/usr/local/bin:/usr/bin:/bin"

static const char PY_HANDLER[] =
	"import os, time\n"
	"def show(event):\n"
	"    for k in ('LD_PRELOAD', 'TOKEN', 'ODD', 'HOST_ONLY'):\n"
	"        print('env', k, repr(os.environ.get(k)))\n"
	"    print('ready', flush=True)\n"
	"    while not os.path.exists('/app/go'):\n"
	"        time.sleep(0.02)\n";

static const char JS_HANDLER[] =
	"const fs = require('fs');\n"
	"exports.show = async (event) => {\n"
	"  for (const k of ['LD_PRELOAD', 'TOKEN', 'ODD', 'HOST_ONLY'])\n"
	"    console.log('env', k, JSON.stringify(process.env[k] ?? null));\n"
	"  console.log('ready');\n"
	"  while (!fs.existsSync('/app/go'))\n"
	"    await new Promise(r => setTimeout(r, 20));\n"
	"};\n";

static const char SH_HANDLER[] =
	"for k in LD_PRELOAD TOKEN ODD HOST_ONLY; do\n"
	"  printf 'env %s %s\\n' \"$k\" \"$(printenv \"$k\" | tr '\\n' '|')\"\n"
	"done\n"
	"echo ready\n"
	"while [ ! -e /app/go ]; do sleep 0.02; done\n";

static void put_file(const char *dir, const char *name, const void *data,
		     size_t len, mode_t mode)
{
	char path[256];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
	if (fd < 0 || write(fd, data, len) != (ssize_t)len) {
		perror(path);
		exit(1);
	}
	close(fd);
	chmod(path, mode);
}

static void copy_probe(void)
{
	const char *src = getenv("RELAY_TEST_PRELOAD_PROBE");
	char buf[65536];
	size_t n;
	FILE *f;

	if (!src || !(f = fopen(src, "rb"))) {
		skip_why = "RELAY_TEST_PRELOAD_PROBE not set or unreadable";
		return;
	}
	n = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	/* In the app directory, as the attack had it, readable by the
	 * sandbox user wherever the build tree is. */
	put_file(app_dir, "probe.so", buf, n, 0755);
}

/* Read a /proc file whole (NUL bytes kept); its length, or -1. */
static ssize_t read_proc(long pid, const char *what, char *buf, size_t size)
{
	char path[64];
	ssize_t n, got = 0;
	int fd;

	snprintf(path, sizeof(path), "/proc/%ld/%s", pid, what);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	while ((size_t)got < size &&
	       (n = read(fd, buf + got, size - (size_t)got)) > 0)
		got += n;
	close(fd);
	return got;
}

static bool mem_has(const char *buf, size_t len, const char *s)
{
	return memmem(buf, len, s, strlen(s)) != NULL;
}

/*
 * Look at every process now: the number of this app's bwrap processes
 * seen; *bad names the first violation (a secret in a command line, a
 * bwrap of this app with more than the host environment).
 */
static int scan_processes(char *bad, size_t badlen)
{
	static char buf[1 << 16];
	struct dirent *de;
	int seen = 0;
	DIR *d = opendir("/proc");

	if (!d)
		return 0;
	while ((de = readdir(d))) {
		char exe[256];
		char path[64];
		ssize_t n;
		long pid = strtol(de->d_name, NULL, 10);

		if (pid <= 0)
			continue;
		n = read_proc(pid, "cmdline", buf, sizeof(buf));
		if (n <= 0)
			continue;
		if (mem_has(buf, (size_t)n, secret) && !*bad)
			snprintf(bad, badlen, "pid %ld: secret in its command "
				 "line", pid);
		if (!mem_has(buf, (size_t)n, app_dir))
			continue;
		snprintf(path, sizeof(path), "/proc/%ld/exe", pid);
		n = readlink(path, exe, sizeof(exe) - 1);
		if (n <= 0)
			continue;
		exe[n] = '\0';
		if (!strstr(exe, "bwrap"))
			continue;
		seen++;
		n = read_proc(pid, "environ", buf, sizeof(buf));
		if (n < 0)
			continue;
		if (!((size_t)n == sizeof(HOST_ENV) &&
		      memcmp(buf, HOST_ENV, sizeof(HOST_ENV)) == 0) && !*bad)
			snprintf(bad, badlen, "bwrap pid %ld: environment is "
				 "not just " HOST_ENV " (%zd bytes)", pid, n);
	}
	closedir(d);
	return seen;
}

static relay_exec_spec base_spec(relay_runtime_kind kind, bool warm)
{
	static const char *const sh_argv[] = { "/bin/sh", "envp.sh", NULL };
	static char ld[160], mk[160], tok[100];
	static const char *env[8];
	relay_exec_spec s = RELAY_EXEC_SPEC_INIT;

	snprintf(ld, sizeof(ld), "LD_PRELOAD=%s/probe.so", app_dir);
	snprintf(mk, sizeof(mk), "RELAY_PROBE_MARK=%s", mark);
	snprintf(tok, sizeof(tok), "TOKEN=%s", secret);
	env[0] = ld;
	env[1] = mk;
	env[2] = tok;
	env[3] = "ODD=a=b c\nd";
	env[4] = "LD_LIBRARY_PATH=/app";
	env[5] = NULL;
	s.app = "envapp";
	s.handler = "envp.show";
	s.message_id = "9-0";
	s.app_dir = app_dir;
	s.runtime = kind;
	if (kind == RELAY_RUNTIME_EXEC)
		s.argv = sh_argv;
	s.env = env;
	s.timeout_ms = 30000;
	s.event = "{}";
	s.event_len = 2;
	s.warm = warm ? RELAY_WARM_REQUIRE : RELAY_WARM_OFF;
	s.generation = 1;
	return s;
}

/* One invocation: the handler reports its environment, then waits for
 * /app/go while this side inspects the host's processes. */
static void run_case(relay_runtime_kind kind, bool warm)
{
	relay_exec_spec s = base_spec(kind, warm);
	char bad[256] = "", go[128];
	struct job j;
	relay_error err;
	int seen = 0;
	struct stat st;

	memset(&j, 0, sizeof(j));
	snprintf(go, sizeof(go), "%s/go", app_dir);
	unlink(go);
	unlink(mark);
	RT_CHECK(relay_runtime_run(rt, &s, cap_cb, job_done, &j.c, NULL,
				   &err) == 0);
	while (!j.done && !cap_has(&j.c, "ready"))
		ev_run(loop, EVRUN_ONCE);
	if (!j.done)
		seen = scan_processes(bad, sizeof(bad));
	put_file(app_dir, "go", "", 0, 0644);
	while (!j.done)
		ev_run(loop, EVRUN_ONCE);
	unlink(go);
	if (j.o.status != RELAY_RUN_OK) {
		size_t i;

		for (i = 0; i < j.c.n; i++)
			fprintf(stderr, "# %s\n", cap_line(&j.c, i));
		RT_FAILF("run: %s", j.o.reason);
	}
	RT_CHECK(j.o.warm == warm);
	if (*bad)
		RT_FAILF("%s", bad);
	RT_CHECK(seen >= 1);
	/* The host's loader never saw the template's LD_PRELOAD. */
	if (stat(mark, &st) == 0)
		RT_FAILF("the template's LD_PRELOAD was loaded on the host "
			 "(%lld bytes in the mark)", (long long)st.st_size);
	/* The handler got the template's variables as they were. */
	RT_CHECK(cap_contains(&j.c, secret));
	if (kind == RELAY_RUNTIME_PYTHON3)
		RT_CHECK(cap_has(&j.c, "env ODD 'a=b c\\nd'"));
	else if (kind == RELAY_RUNTIME_NODE)
		RT_CHECK(cap_has(&j.c, "env ODD \"a=b c\\nd\""));
	else
		RT_CHECK(cap_has(&j.c, "env ODD a=b c|d|"));
	/* Nothing of the host's own environment. */
	RT_CHECK(!cap_contains(&j.c, "host-only"));
	cap_free(&j.c);
}

static void test_sec_env__exec_cold(void)
{
	run_case(RELAY_RUNTIME_EXEC, false);
}

static void test_sec_env__exec_warm(void)
{
	run_case(RELAY_RUNTIME_EXEC, true);
}

static void test_sec_env__python3_cold(void)
{
	run_case(RELAY_RUNTIME_PYTHON3, false);
}

static void test_sec_env__python3_warm(void)
{
	run_case(RELAY_RUNTIME_PYTHON3, true);
}

static void test_sec_env__node_cold(void)
{
	if (!have_prog("/usr/bin/node"))
		RT_SKIP("node missing");
	run_case(RELAY_RUNTIME_NODE, false);
}

static void test_sec_env__node_warm(void)
{
	if (!have_prog("/usr/bin/node"))
		RT_SKIP("node missing");
	run_case(RELAY_RUNTIME_NODE, true);
}

/*
 * Under a root host the stdio pipes used to belong to root, so a handler
 * (the sandbox user) could not reopen them: `cat /dev/stdin` failed with
 * EACCES where a non-root relayd's handler works.
 */
static void stdio_case(bool warm)
{
	static const char *const argv[] = {
		"/bin/sh", "-c",
		"cat /dev/stdin && echo; echo reopened-out > /dev/stdout && "
		"echo reopened-err > /dev/stderr; "
		"echo fds $(ls /proc/self/fd)", NULL
	};
	relay_exec_spec s = base_spec(RELAY_RUNTIME_EXEC, warm);
	struct job j;
	relay_error err;

	memset(&j, 0, sizeof(j));
	s.argv = argv;
	s.event = "{\"from\":\"stdin\"}";
	s.event_len = strlen(s.event);
	RT_CHECK(relay_runtime_run(rt, &s, cap_cb, job_done, &j.c, NULL,
				   &err) == 0);
	while (!j.done)
		ev_run(loop, EVRUN_ONCE);
	RT_EQ_INT(j.o.status, RELAY_RUN_OK);
	RT_CHECK(j.o.warm == warm);
	RT_CHECK(cap_has(&j.c, "{\"from\":\"stdin\"}"));
	RT_CHECK(cap_has(&j.c, "reopened-out"));
	RT_CHECK(cap_has(&j.c, "reopened-err"));
	/* 0-2, and ls's own directory: the environment and seccomp
	 * descriptors bwrap read are gone. */
	RT_CHECK(cap_has(&j.c, "fds 0 1 2 3"));
	cap_free(&j.c);
}

static void test_sec_env__stdio_reopenable_cold(void)
{
	stdio_case(false);
}

static void test_sec_env__stdio_reopenable_warm(void)
{
	stdio_case(true);
}

/*
 * The kernel keyring is not namespaced: keys belong to the host uid, so
 * every sandbox of one host user saw (and could read) another's keys and
 * shared its quota. No sandbox gets add_key, request_key or keyctl: they
 * fail with ENOSYS (seccomp.c).
 */
static void keyring_case(bool warm)
{
	static const char *const argv[] = {
		"/usr/bin/python3", "-c",
		"import ctypes, errno, platform\n"
		"libc = ctypes.CDLL(None, use_errno=True)\n"
		"nr = {'x86_64': (248, 249, 250), 'aarch64': (217, 218, 219)}"
		".get(platform.machine())\n"
		"if nr is None:\n"
		"    print('arch', platform.machine()); raise SystemExit(0)\n"
		"r = libc.syscall(nr[0], b'user', b'relay-test', b'v', 1,"
		" ctypes.c_long(-3))\n"
		"print('add_key', r, errno.errorcode.get(ctypes.get_errno()))\n"
		"r = libc.syscall(nr[2], 0, ctypes.c_long(-3), 0)\n"
		"print('keyctl', r, errno.errorcode.get(ctypes.get_errno()))\n",
		NULL
	};
	relay_exec_spec s = base_spec(RELAY_RUNTIME_EXEC, warm);
	struct job j;
	relay_error err;

	memset(&j, 0, sizeof(j));
	s.argv = argv;
	RT_CHECK(relay_runtime_run(rt, &s, cap_cb, job_done, &j.c, NULL,
				   &err) == 0);
	while (!j.done)
		ev_run(loop, EVRUN_ONCE);
	RT_EQ_INT(j.o.status, RELAY_RUN_OK);
	RT_CHECK(j.o.warm == warm);
	if (cap_contains(&j.c, "arch "))
		RT_SKIP("no keyring system call numbers for this arch");
	RT_CHECK(cap_has(&j.c, "add_key -1 ENOSYS"));
	RT_CHECK(cap_has(&j.c, "keyctl -1 ENOSYS"));
	cap_free(&j.c);
}

static void test_sec_env__no_keyring_cold(void)
{
	keyring_case(false);
}

static void test_sec_env__no_keyring_warm(void)
{
	keyring_case(true);
}

static void setup(void)
{
	relay_runtime_options o = RELAY_RUNTIME_OPTIONS_INIT;
	relay_error err;

	if (!have_prog("/usr/bin/bwrap") || !have_prog("/usr/bin/python3")) {
		skip_why = "bwrap or python3 missing";
		return;
	}
	snprintf(app_dir, sizeof(app_dir), "/tmp/relay-sec-env-%ld",
		 (long)getpid());
	snprintf(mark_dir, sizeof(mark_dir), "/tmp/relay-sec-mark-%ld",
		 (long)getpid());
	snprintf(mark, sizeof(mark), "%s/mark", mark_dir);
	snprintf(secret, sizeof(secret), "s3cret-%ld-%ld", (long)getpid(),
		 (long)time(NULL));
	if (mkdir(app_dir, 0755) != 0 || mkdir(mark_dir, 0777) != 0) {
		skip_why = "cannot make temporary directories";
		return;
	}
	/* Writable by whichever host user bwrap runs as. */
	chmod(app_dir, 0755);
	chmod(mark_dir, 0777);
	put_file(app_dir, "envp.py", PY_HANDLER, strlen(PY_HANDLER), 0644);
	put_file(app_dir, "envp.js", JS_HANDLER, strlen(JS_HANDLER), 0644);
	put_file(app_dir, "envp.sh", SH_HANDLER, strlen(SH_HANDLER), 0644);
	copy_probe();
	if (skip_why)
		return;
	/* The host's own environment must not reach any handler. */
	setenv("HOST_ONLY", "host-only", 1);
	loop = ev_loop_new(EVFLAG_AUTO);
	o.backend = "bwrap";
	o.bootstrap_dir = bootstrap_dir();
	o.kill_grace_ms = 1500;
	o.warm = 1;
	o.warm_idle_ms = 60000;
	o.warm_max_parents = 8;
	if (relay_runtime_new(&rt, &o, &err) != 0) {
		static char why[300];

		snprintf(why, sizeof(why), "bwrap cannot run here: %s",
			 err.text);
		skip_why = why;
		return;
	}
	relay_runtime_libev_attach(rt, loop);
}

int main(int argc, char **argv)
{
	static const rt_case cases[] = {
		RT_CASE(test_sec_env__exec_cold),
		RT_CASE(test_sec_env__exec_warm),
		RT_CASE(test_sec_env__python3_cold),
		RT_CASE(test_sec_env__python3_warm),
		RT_CASE(test_sec_env__node_cold),
		RT_CASE(test_sec_env__node_warm),
		RT_CASE(test_sec_env__stdio_reopenable_cold),
		RT_CASE(test_sec_env__stdio_reopenable_warm),
		RT_CASE(test_sec_env__no_keyring_cold),
		RT_CASE(test_sec_env__no_keyring_warm),
	};
	char cmd[200];
	int rc;

	setup();
	if (skip_why) {
		printf("TAP version 13\n1..0 # SKIP %s\n", skip_why);
		rc = 0;
	} else {
		rc = rt_main(argc, argv, cases, RT_NCASES(cases));
		relay_runtime_free(rt);
		ev_loop_destroy(loop);
	}
	snprintf(cmd, sizeof(cmd), "rm -rf %s %s", app_dir, mark_dir);
	if (*app_dir && system(cmd) != 0)
		rc = 1;
	return rc;
}
