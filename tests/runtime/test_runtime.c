/*
 * test_runtime.c - the runtime module over the "process" backend: real
 * processes, exact outcomes, output forwarding, timeouts, stdin, the async
 * API on libev loops, python3/node bootstraps.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <ev.h>

#include "relay/relay_libev.h"
#include "relaytest.h"
#include "runtime.h"  /* private: relay__out, the line splitter */
#include "rt_helpers.h"

static relay_runtime *rt;

/* Dead (or a zombie waiting for init) within a second. */
static bool pid_gone(pid_t pid)
{
	int i;

	for (i = 0; i < 100; i++) {
		char path[64], buf[256];
		FILE *f;

		if (kill(pid, 0) != 0 && errno == ESRCH)
			return true;
		snprintf(path, sizeof(path), "/proc/%ld/stat", (long)pid);
		f = fopen(path, "r");
		if (f && fgets(buf, sizeof(buf), f) && strstr(buf, ") Z ")) {
			fclose(f);
			return true;
		}
		if (f)
			fclose(f);
		usleep(10000);
	}
	return false;
}

static void open_rt(void)
{
	relay_error err;

	rt = make_rt("process", RELAY_LIMITS_NONE, 200, &err);
	if (!rt)
		RT_FAILF("relay_runtime_new: %s", err.text);
	RT_ASSERT(rt != NULL);
}

static void close_rt(void)
{
	relay_runtime_free(rt);
	rt = NULL;
}

static void test_runtime__ok(void)
{
	relay_run_outcome o;
	cap c = { 0 };

	open_rt();
	RT_EQ_INT(run_sh(rt, "echo hi", 5000, &c, &o), 0);
	RT_EQ_INT(o.status, RELAY_RUN_OK);
	RT_EQ_INT(o.exit_code, 0);
	RT_EQ_INT(o.term_signal, 0);
	RT_EQ_INT(o.timed_out, 0);
	RT_EQ_STR(o.reason, "");
	RT_EQ_INT(o.stdout_bytes, 3);
	RT_EQ_INT(c.n, 1);
	RT_EQ_STR(cap_text(&c, 0), "[demo/h@1-0] stdout: hi");
	RT_EQ_INT(c.stream[0], RELAY_OUTPUT_STDOUT);
	RT_CHECK(o.duration_us > 0 && o.duration_us < 2000000);
	cap_free(&c);
	close_rt();
}

static void test_runtime__fail_exit3(void)
{
	relay_run_outcome o;
	cap c = { 0 };

	open_rt();
	RT_EQ_INT(run_sh(rt, "echo oops >&2; exit 3", 5000, &c, &o), 0);
	RT_EQ_INT(o.status, RELAY_RUN_FAILED);
	RT_EQ_INT(o.exit_code, 3);
	RT_EQ_STR(o.reason, "exit status 3");
	RT_EQ_INT(c.n, 1);
	RT_EQ_STR(cap_text(&c, 0), "[demo/h@1-0] stderr: oops");
	RT_EQ_INT(c.stream[0], RELAY_OUTPUT_STDERR);
	RT_EQ_INT(o.stderr_bytes, 5);
	cap_free(&c);
	close_rt();
}

/* The bootstraps' load-failure line (RELAY__LOAD_ERROR_MARK) becomes the
 * reason of an exit status 1, and only when it is the last line. */
static void test_runtime__load_error_line(void)
{
#define MARK "relay-bootstrap: cannot load handler: "
	relay_run_outcome o;
	cap c = { 0 };

	open_rt();
	RT_EQ_INT(run_sh(rt, "echo trace >&2; echo '" MARK "Oops: no' >&2; "
			 "exit 1", 5000, &c, &o), 0);
	RT_EQ_INT(o.exit_code, 1);
	RT_EQ_STR(o.reason, "Oops: no");
	cap_free(&c);
	/* Control bytes shown as '?'; no final newline needed. */
	RT_EQ_INT(run_sh(rt, "printf '" MARK "a\\tb\\033c' >&2; exit 1",
			 5000, &c, &o), 0);
	RT_EQ_STR(o.reason, "a?b?c");
	cap_free(&c);
	/* Not the last line, another exit status, an empty text, or a line
	 * that began before the last 512 bytes: the exit status. */
	RT_EQ_INT(run_sh(rt, "echo '" MARK "E: x' >&2; echo more >&2; "
			 "exit 1", 5000, &c, &o), 0);
	RT_EQ_STR(o.reason, "exit status 1");
	cap_free(&c);
	RT_EQ_INT(run_sh(rt, "echo '" MARK "E: x' >&2; exit 3", 5000, &c, &o),
		  0);
	RT_EQ_STR(o.reason, "exit status 3");
	cap_free(&c);
	RT_EQ_INT(run_sh(rt, "echo '" MARK "' >&2; exit 1", 5000, &c, &o), 0);
	RT_EQ_STR(o.reason, "exit status 1");
	cap_free(&c);
	RT_EQ_INT(run_sh(rt, "printf '" MARK "%0600d\\n' 0 >&2; exit 1",
			 5000, &c, &o), 0);
	RT_EQ_STR(o.reason, "exit status 1");
	cap_free(&c);
	/* On stdout it means nothing. */
	RT_EQ_INT(run_sh(rt, "echo '" MARK "E: x'; exit 1", 5000, &c, &o), 0);
	RT_EQ_STR(o.reason, "exit status 1");
	cap_free(&c);
	/* A long reason is cut to fit, never inside a UTF-8 character. */
	RT_EQ_INT(run_sh(rt, "printf '" MARK "%0158d\\303\\251\\n' 0 "
			 ">&2; exit 1", 5000, &c, &o), 0);
	RT_EQ_INT(strlen(o.reason), 158);
	cap_free(&c);
	close_rt();
#undef MARK
}

static void test_runtime__killed_by_signal(void)
{
	relay_run_outcome o;
	cap c = { 0 };

	open_rt();
	RT_EQ_INT(run_sh(rt, "kill -SEGV $$", 5000, &c, &o), 0);
	RT_EQ_INT(o.status, RELAY_RUN_FAILED);
	RT_EQ_INT(o.exit_code, -1);
	RT_EQ_INT(o.term_signal, SIGSEGV);
	RT_EQ_STR(o.reason, "killed by signal 11 (SIGSEGV)");
	cap_free(&c);
	close_rt();
}

static void test_runtime__timeout_sigterm(void)
{
	relay_run_outcome o;
	cap c = { 0 };

	open_rt();
	RT_EQ_INT(run_sh(rt, "echo start; exec sleep 30", 300, &c, &o), 0);
	RT_EQ_INT(o.status, RELAY_RUN_TIMEOUT);
	RT_EQ_INT(o.timed_out, 1);
	RT_EQ_INT(o.term_signal, SIGTERM);
	RT_EQ_STR(o.reason, "timed out after 300ms");
	if (o.duration_us < 300000 || o.duration_us >= 1500000)
		RT_FAILF("duration %llu us, want 0.3s..1.5s",
			 (unsigned long long)o.duration_us);
	RT_CHECK(cap_has(&c, "start"));
	cap_free(&c);
	close_rt();
}

/* A handler that ignores SIGTERM is SIGKILLed after the grace (200ms). */
static void test_runtime__timeout_sigkill_after_grace(void)
{
	relay_run_outcome o;
	cap c = { 0 };

	open_rt();
	RT_EQ_INT(run_sh(rt, "trap '' TERM; sleep 30", 300, &c, &o), 0);
	RT_EQ_INT(o.status, RELAY_RUN_TIMEOUT);
	RT_EQ_INT(o.term_signal, SIGKILL);
	if (o.duration_us < 500000 || o.duration_us >= 2000000)
		RT_FAILF("duration %llu us, want 0.5s..2s",
			 (unsigned long long)o.duration_us);
	cap_free(&c);
	close_rt();
}

static void test_runtime__default_and_max_timeout(void)
{
	const char *argv[] = { "/bin/true", NULL };
	relay_exec_spec s = sh_spec(argv, RELAY_RUNTIME_TIMEOUT_MAX_MS + 1);
	relay_run_outcome o;
	relay_error err;

	open_rt();
	RT_EQ_INT(relay_runtime_run_sync(rt, &s, NULL, NULL, &o, &err),
		  RELAY_EINVAL);
	RT_CHECK(strstr(err.text, "exceeds 5m") != NULL);
	s.timeout_ms = RELAY_RUNTIME_TIMEOUT_MAX_MS;
	RT_EQ_INT(relay_runtime_run_sync(rt, &s, NULL, NULL, &o, NULL), 0);
	RT_EQ_INT(o.status, RELAY_RUN_OK);
	s.timeout_ms = 0; /* default 6s */
	RT_EQ_INT(relay_runtime_run_sync(rt, &s, NULL, NULL, &o, NULL), 0);
	RT_EQ_INT(o.status, RELAY_RUN_OK);
	close_rt();
}

/* The handler sees exactly the event bytes on stdin. */
static void test_runtime__event_on_stdin_byte_identical(void)
{
	static const char ev[] = "{\"event_name\":\"INSERT\",\"s\":\"\xc3\xa9 \\n"
				 " \\u0000 tab\\t\",\"n\":[1,2.5e3,null]}";
	const char *argv[] = { "/bin/cat", NULL };
	relay_exec_spec s = sh_spec(argv, 5000);
	relay_run_outcome o;
	cap c = { 0 };

	open_rt();
	s.event = ev;
	s.event_len = sizeof(ev) - 1;
	RT_EQ_INT(relay_runtime_run_sync(rt, &s, cap_cb, &c, &o, NULL), 0);
	RT_EQ_INT(o.status, RELAY_RUN_OK);
	RT_EQ_INT(o.stdout_bytes, sizeof(ev) - 1);
	RT_EQ_INT(c.n, 1);
	RT_EQ_STR(cap_line(&c, 0), ev);
	cap_free(&c);
	close_rt();
}

/* A handler that never reads stdin, with an event far larger than a pipe
 * buffer, neither wedges nor kills the host with SIGPIPE. */
static void test_runtime__ignores_stdin(void)
{
	const char *argv[] = { "/bin/sh", "-c", "exec 0<&-; sleep 0.1; "
			       "echo done", NULL };
	relay_exec_spec s = sh_spec(argv, 5000);
	size_t len = 4u << 20;
	char *big = malloc(len);
	relay_run_outcome o;
	cap c = { 0 };

	open_rt();
	memset(big, 'x', len);
	s.event = big;
	s.event_len = len;
	RT_EQ_INT(relay_runtime_run_sync(rt, &s, cap_cb, &c, &o, NULL), 0);
	RT_EQ_INT(o.status, RELAY_RUN_OK);
	RT_CHECK(cap_has(&c, "done"));
	argv[2] = "echo early";  /* exits without reading at all */
	RT_EQ_INT(relay_runtime_run_sync(rt, &s, NULL, NULL, &o, NULL), 0);
	RT_EQ_INT(o.status, RELAY_RUN_OK);
	RT_CHECK(o.duration_us < 2000000);
	free(big);
	cap_free(&c);
	close_rt();
}

static bool env_line(const cap *c, const char *kv)
{
	return cap_has(c, kv);
}

static void test_runtime__clean_environment(void)
{
	const char *argv[] = { "/usr/bin/env", NULL };
	const char *env[] = { "FOO=bar", "RELAY_HANDLER=spoofed", NULL };
	relay_exec_spec s = sh_spec(argv, 5000);
	relay_run_outcome o;
	cap c = { 0 };

	open_rt();
	setenv("RELAY_TEST_DAEMON_SECRET", "hunter2", 1);
	s.env = env;
	RT_EQ_INT(relay_runtime_run_sync(rt, &s, cap_cb, &c, &o, NULL), 0);
	RT_EQ_INT(o.status, RELAY_RUN_OK);
	RT_CHECK(env_line(&c, "RELAY_HANDLER=h"));
	RT_CHECK(env_line(&c, "RELAY_APP=demo"));
	RT_CHECK(env_line(&c, "RELAY_MESSAGE_ID=1-0"));
	RT_CHECK(env_line(&c, "FOO=bar"));
	RT_CHECK(env_line(&c, "HOME=/tmp"));
	RT_CHECK(env_line(&c, "LANG=C.UTF-8"));
	RT_CHECK(env_line(&c, "PATH=/usr/local/bin:/usr/bin:/bin"));
	RT_CHECK(!cap_contains(&c, "hunter2"));
	RT_EQ_INT(c.n, 7);
	cap_free(&c);
	/* Without a message id there is no RELAY_MESSAGE_ID. */
	s.message_id = NULL;
	RT_EQ_INT(relay_runtime_run_sync(rt, &s, cap_cb, &c, &o, NULL), 0);
	RT_EQ_INT(c.n, 6);
	RT_CHECK(!cap_contains(&c, "RELAY_MESSAGE_ID"));
	RT_CHECK(strncmp(cap_text(&c, 0), "[demo/h] stdout: ", 17) == 0);
	unsetenv("RELAY_TEST_DAEMON_SECRET");
	cap_free(&c);
	close_rt();
}

/* Relative commands resolve in the app directory, which is the cwd. */
static void test_runtime__cwd_is_app_dir(void)
{
	const char *argv[] = { "./hello.sh", NULL };
	relay_exec_spec s = sh_spec(argv, 5000);
	relay_run_outcome o;
	cap c = { 0 };

	open_rt();
	RT_EQ_INT(relay_runtime_run_sync(rt, &s, cap_cb, &c, &o, NULL), 0);
	RT_EQ_INT(o.status, RELAY_RUN_OK);
	RT_EQ_INT(c.n, 2);
	RT_EQ_STR(cap_line(&c, 0), "hello h");
	RT_EQ_STR(cap_line(&c, 1), demo_app_dir());
	cap_free(&c);
	close_rt();
}

/* A bare command name is looked up in the handler's PATH (the app's env
 * may set it), never in the host's. */
static void test_runtime__command_lookup_uses_handler_path(void)
{
	char pathkv[1100];
	const char *argv[] = { "hello.sh", NULL };
	const char *env[] = { pathkv, NULL };
	relay_exec_spec s = sh_spec(argv, 5000);
	relay_run_outcome o;
	relay_error err;
	cap c = { 0 };

	open_rt();
	RT_EQ_INT(relay_runtime_run_sync(rt, &s, NULL, NULL, &o, &err),
		  RELAY_EBACKEND);
	snprintf(pathkv, sizeof(pathkv), "PATH=/usr/bin:/bin:%s",
		 demo_app_dir());
	s.env = env;
	RT_EQ_INT(relay_runtime_run_sync(rt, &s, cap_cb, &c, &o, NULL), 0);
	RT_EQ_INT(o.status, RELAY_RUN_OK);
	RT_CHECK(cap_has(&c, "hello h"));
	cap_free(&c);
	close_rt();
}

static void test_runtime__command_not_found(void)
{
	const char *argv[] = { "no-such-command-relay", NULL };
	relay_exec_spec s = sh_spec(argv, 5000);
	relay_run_outcome o;
	relay_error err;

	open_rt();
	RT_EQ_INT(relay_runtime_run_sync(rt, &s, NULL, NULL, &o, &err),
		  RELAY_EBACKEND);
	RT_EQ_STR(err.text, "spawn no-such-command-relay: command not found");
	argv[0] = "./missing.sh";
	RT_EQ_INT(relay_runtime_run_sync(rt, &s, NULL, NULL, &o, &err),
		  RELAY_EBACKEND);
	RT_EQ_STR(err.text, "spawn ./missing.sh: No such file or directory");
	RT_EQ_INT(relay_runtime_active(rt), 0);
	close_rt();
}

/* Pieces of a line across writes join; an unterminated last line is
 * delivered; over-long lines are split into max_line pieces. */
static void test_runtime__partial_and_long_lines(void)
{
	relay_run_outcome o;
	cap c = { 0 };

	open_rt();
	RT_EQ_INT(run_sh(rt, "printf abc; sleep 0.1; printf 'def\\n\\nxyz'",
			 5000, &c, &o), 0);
	RT_EQ_INT(c.n, 3);
	RT_EQ_STR(cap_line(&c, 0), "abcdef");
	RT_EQ_STR(cap_line(&c, 1), "");
	RT_EQ_STR(cap_line(&c, 2), "xyz");
	RT_EQ_INT(c.partial[2], 0);
	cap_free(&c);
	RT_EQ_INT(run_sh(rt, "head -c 40000 /dev/zero | tr '\\0' x", 5000,
			 &c, &o), 0);
	RT_EQ_INT(c.n, 3);
	RT_EQ_INT(strlen(cap_line(&c, 0)), 16384);
	RT_EQ_INT(c.partial[0], 1);
	RT_EQ_INT(strlen(cap_line(&c, 1)), 16384);
	RT_EQ_INT(c.partial[1], 1);
	RT_EQ_INT(strlen(cap_line(&c, 2)), 40000 - 2 * 16384);
	RT_EQ_INT(c.partial[2], 0);
	cap_free(&c);
	close_rt();
}

#define NOTE "[relay: output limit reached, further output dropped]"

/* 10 MB of output: all of it is read (counted), forwarding stops at the
 * cap with one note, memory stays bounded by the line buffer. */
static void test_runtime__ten_megabytes(void)
{
	relay_run_outcome o;
	cap c = { 0 };

	open_rt();
	RT_EQ_INT(run_sh(rt, "yes 0123456789abcdef | head -c 10485760",
			 20000, &c, &o), 0);
	RT_EQ_INT(o.status, RELAY_RUN_OK);
	RT_EQ_INT(o.stdout_bytes, 10485760);
	RT_CHECK(cap_has(&c, NOTE));
	/* forwarded content + their newlines + dropped = everything read */
	RT_CHECK(c.bytes - strlen(NOTE) <= 1024 * 1024);
	RT_CHECK(c.bytes - strlen(NOTE) > 1024 * 1024 - 64);
	RT_EQ_INT(c.bytes - strlen(NOTE) + (c.n - 1) + o.dropped_bytes,
		  10485760);
	cap_free(&c);
	close_rt();
}

static void test_runtime__ten_megabytes_unlimited(void)
{
	relay_runtime_options opt = RELAY_RUNTIME_OPTIONS_INIT;
	relay_run_outcome o;
	cap c = { 0 };

	opt.backend = "process";
	opt.limits = RELAY_LIMITS_NONE;
	opt.max_output_bytes = UINT64_MAX;
	RT_ASSERT(relay_runtime_new(&rt, &opt, NULL) == 0);
	RT_EQ_INT(run_sh(rt, "yes 0123456789abcdef | head -c 10485760",
			 20000, &c, &o), 0);
	RT_EQ_INT(o.stdout_bytes, 10485760);
	RT_EQ_INT(o.dropped_bytes, 0);
	/* 17-byte lines: 616809 full ones and a 7-byte tail. */
	RT_EQ_INT(c.n, 10485760 / 17 + 1);
	RT_EQ_STR(cap_line(&c, c.n - 1), "0123456");
	cap_free(&c);
	close_rt();
}

/* Background children do not keep a finished invocation alive, and die. */
static void test_runtime__leftover_children_killed(void)
{
	relay_run_outcome o;
	cap c = { 0 };
	long pid;

	open_rt();
	RT_EQ_INT(run_sh(rt, "sleep 30 & echo $!", 5000, &c, &o), 0);
	RT_EQ_INT(o.status, RELAY_RUN_OK);
	RT_CHECK(o.duration_us < 1000000);
	RT_ASSERT(c.n == 1);
	pid = strtol(cap_line(&c, 0), NULL, 10);
	RT_CHECK(pid > 0);
	RT_CHECK(pid_gone((pid_t)pid));
	cap_free(&c);
	close_rt();
}

/* A grandchild that leaves the session keeps a pipe open after the
 * handler exits: the invocation still ends (after the drain time). */
static void test_runtime__escaped_grandchild_does_not_hang(void)
{
	relay_run_outcome o;
	cap c = { 0 };

	open_rt();
	RT_EQ_INT(run_sh(rt, "setsid sleep 2 & echo started", 5000, &c, &o),
		  0);
	RT_EQ_INT(o.status, RELAY_RUN_OK);
	RT_CHECK(cap_has(&c, "started"));
	RT_CHECK(o.duration_us < 1000000);
	cap_free(&c);
	close_rt();
}

static void test_runtime__bad_app_dir(void)
{
	const char *argv[] = { "/bin/true", NULL };
	relay_exec_spec s = sh_spec(argv, 5000);
	relay_run_outcome o;
	relay_error err;

	open_rt();
	s.app_dir = "/nonexistent/relay-app";
	RT_EQ_INT(relay_runtime_run_sync(rt, &s, NULL, NULL, &o, &err),
		  RELAY_EINVAL);
	RT_EQ_STR(err.text, "app directory /nonexistent/relay-app: No such "
		  "file or directory");
	s.app_dir = "relative/dir";
	RT_EQ_INT(relay_runtime_run_sync(rt, &s, NULL, NULL, &o, &err),
		  RELAY_EINVAL);
	s.app_dir = "/bin/true";
	RT_EQ_INT(relay_runtime_run_sync(rt, &s, NULL, NULL, &o, &err),
		  RELAY_EINVAL);
	RT_EQ_STR(err.text, "app directory /bin/true: not a directory");
	s.app_dir = demo_app_dir();
	s.app = NULL;
	RT_EQ_INT(relay_runtime_run_sync(rt, &s, NULL, NULL, &o, &err),
		  RELAY_EINVAL);
	close_rt();
}

/* ---- a backend written against relay/sys/runtime.h ----------------- */

struct fake_backend {
	relay_runtime_backend parent;
	int spawns, signals, releases, frees, last_sig;
};

struct fake_proc {
	relay_proc parent;
	int magic;
};

static int fake_spawn(relay_runtime_backend *rb, const relay_exec_spec *spec,
		      relay_proc *proc, relay_error *err)
{
	struct fake_backend *fb = (struct fake_backend *)rb;
	struct fake_proc *fp = (struct fake_proc *)proc;
	int in[2], out[2], errp[2];
	pid_t pid;

	(void)err;
	fb->spawns++;
	fp->magic = 42;
	if (pipe2(in, O_CLOEXEC) || pipe2(out, O_CLOEXEC) ||
	    pipe2(errp, O_CLOEXEC))
		return RELAY_EBACKEND;
	pid = fork();
	if (pid == 0) {
		setpgid(0, 0);
		dup2(in[0], 0);
		dup2(out[1], 1);
		dup2(errp[1], 2);
		execl("/bin/sh", "sh", "-c", spec->handler, (char *)NULL);
		_exit(127);
	}
	setpgid(pid, pid);
	close(in[0]);
	close(out[1]);
	close(errp[1]);
	fcntl(in[1], F_SETFL, O_NONBLOCK);
	fcntl(out[0], F_SETFL, O_NONBLOCK);
	fcntl(errp[0], F_SETFL, O_NONBLOCK);
	proc->pid = pid;
	proc->stdin_fd = in[1];
	proc->stdout_fd = out[0];
	proc->stderr_fd = errp[0];
	return 0;
}

static int fake_signal(relay_runtime_backend *rb, relay_proc *proc, int sig)
{
	struct fake_backend *fb = (struct fake_backend *)rb;

	fb->signals++;
	fb->last_sig = sig;
	kill(-proc->pid, sig);
	return 0;
}

static void fake_release(relay_runtime_backend *rb, relay_proc *proc)
{
	struct fake_backend *fb = (struct fake_backend *)rb;

	if (((struct fake_proc *)proc)->magic == 42)
		fb->releases++;
}

static int fake_frees;

static void fake_free(relay_runtime_backend *rb)
{
	(void)rb;
	fake_frees++;
}

/* The core drives any versioned backend: proc_size honoured, spawn once,
 * release once per run, signal on timeout, free with the runtime. */
static void test_runtime__custom_backend(void)
{
	static struct fake_backend fb;
	relay_exec_spec s = sh_spec(NULL, 300);
	relay_run_outcome o;
	cap c = { 0 };

	memset(&fb, 0, sizeof(fb));
	RT_EQ_INT(relay_runtime_backend_init(&fb.parent,
					     RELAY_RUNTIME_BACKEND_VERSION), 0);
	fb.parent.name = "fake";
	fb.parent.proc_size = sizeof(struct fake_proc);
	fb.parent.spawn = fake_spawn;
	fb.parent.signal = fake_signal;
	fb.parent.release = fake_release;
	fb.parent.free = fake_free;
	fake_frees = 0;
	RT_ASSERT(relay_runtime_new_with_backend(&rt, &fb.parent, NULL,
						 NULL) == 0);
	RT_EQ_STR(relay_runtime_backend_name(rt), "fake");
	s.runtime = RELAY_RUNTIME_EXEC;
	s.argv = (const char *const[]){ "unused", NULL };
	s.handler = "cat; exit 4";
	s.event = "{\"a\":1}";
	s.event_len = 7;
	RT_EQ_INT(relay_runtime_run_sync(rt, &s, cap_cb, &c, &o, NULL), 0);
	RT_EQ_INT(o.exit_code, 4);
	RT_EQ_INT(c.n, 1);
	RT_EQ_STR(cap_line(&c, 0), "{\"a\":1}");
	RT_EQ_INT(fb.spawns, 1);
	RT_EQ_INT(fb.releases, 1);
	s.handler = "exec sleep 5";
	RT_EQ_INT(relay_runtime_run_sync(rt, &s, NULL, NULL, &o, NULL), 0);
	RT_EQ_INT(o.status, RELAY_RUN_TIMEOUT);
	RT_CHECK(fb.signals >= 1);
	RT_EQ_INT(fb.releases, 2);
	close_rt();
	RT_EQ_INT(fake_frees, 1);
	/* A table of an unknown version is refused (and freed). */
	fb.parent.version = RELAY_RUNTIME_BACKEND_VERSION + 1;
	RT_EQ_INT(relay_runtime_new_with_backend(&rt, &fb.parent, NULL, NULL),
		  RELAY_EINVAL);
	RT_EQ_INT(fake_frees, 2);
	cap_free(&c);
}

/* ---- the line splitter, in isolation -------------------------------- */

static uint32_t rng_state = 12345;

static uint32_t rng(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 17;
	rng_state ^= rng_state << 5;
	return rng_state;
}

/*
 * Random bytes (NULs and newlines included) fed in random chunk sizes must
 * come out as exactly the lines a reference split gives: content verbatim,
 * pieces of at most max_line bytes, partial on all but a line's last
 * piece, an unterminated tail delivered at the end.
 */
static void test_runtime__line_splitter_random_chunks(void)
{
	enum { LEN = 4000, MAXL = 64 };
	relay_exec_spec spec = sh_spec(NULL, 0);
	char data[LEN], want[LEN * 2];
	int iter;

	for (iter = 0; iter < 300; iter++) {
		uint64_t budget = UINT64_MAX;
		size_t i, off = 0, wl = 0, nwant = 0, got = 0, piece = 0;
		int wpartial[LEN];
		size_t wlen[LEN];
		relay__out o;
		cap c = { 0 };

		for (i = 0; i < LEN; i++) {
			uint32_t r = rng() % 100;

			data[i] = r < 4 ? '\n' : r < 6 ? '\0' : (char)('a' + r % 26);
		}
		/* reference split */
		for (i = 0; i < LEN; i++) {
			if (data[i] == '\n') {
				wlen[nwant] = piece;
				wpartial[nwant++] = 0;
				piece = 0;
				continue;
			}
			want[wl++] = data[i];
			if (++piece == MAXL) {
				wlen[nwant] = piece;
				wpartial[nwant++] = 1;
				piece = 0;
			}
		}
		if (piece) {
			wlen[nwant] = piece;
			wpartial[nwant++] = 0;
		}
		RT_ASSERT(relay__out_init(&o, &spec, RELAY_OUTPUT_STDOUT, MAXL,
					  &budget, cap_cb, &c) == 0);
		while (off < LEN) {
			size_t n = 1 + rng() % 200;

			if (n > LEN - off)
				n = LEN - off;
			relay__out_feed(&o, data + off, n);
			off += n;
		}
		relay__out_finish(&o);
		relay__out_free(&o);
		/* A piece that ends exactly at max_line right before a newline
		 * is followed by an empty line in both splits. */
		RT_EQ_INT(c.n, nwant);
		for (i = 0, wl = 0; i < c.n && i < nwant; i++) {
			if (c.partial[i] != wpartial[i] ||
			    memcmp(c.text[i] + c.prefix[i], want + wl,
				   wlen[i]) != 0) {
				RT_FAILF("iteration %d line %zu differs", iter,
					 i);
				break;
			}
			wl += wlen[i];
		}
		for (i = 0; i < nwant; i++)
			got += wlen[i];
		RT_EQ_INT(c.bytes, got);  /* every content byte, once */
		RT_EQ_INT(o.total, LEN);
		cap_free(&c);
		if (rt_failed_checks)
			break;
	}
}

/* ---- the async API ------------------------------------------------- */

struct acount {
	int done, ok, cancelled;
	relay_run_status last;
};

static void count_done(const relay_run_outcome *o, void *payload)
{
	struct acount *a = payload;

	a->done++;
	a->ok += o->status == RELAY_RUN_OK;
	a->cancelled += o->status == RELAY_RUN_CANCELLED;
	a->last = o->status;
}

static void run_async_on(struct ev_loop *loop)
{
	const char *argv[] = { "/bin/sh", "-c", "sleep 0.2; cat", NULL };
	relay_exec_spec s = sh_spec(argv, 5000);
	struct acount a = { 0 };
	ev_tstamp t0;
	int i;

	open_rt();
	RT_EQ_INT(relay_runtime_run(rt, &s, NULL, count_done, &a, NULL, NULL),
		  RELAY_EINVAL); /* not attached */
	RT_EQ_INT(relay_runtime_libev_attach(rt, loop), 0);
	s.event = "{}";
	s.event_len = 2;
	ev_now_update(loop);
	t0 = ev_now(loop);
	for (i = 0; i < 4; i++)
		RT_EQ_INT(relay_runtime_run(rt, &s, NULL, count_done, &a,
					    NULL, NULL), 0);
	RT_EQ_INT(relay_runtime_active(rt), 4);
	RT_EQ_INT(a.done, 0); /* never from inside the call */
	ev_run(loop, 0);
	ev_now_update(loop);
	RT_EQ_INT(a.done, 4);
	RT_EQ_INT(a.ok, 4);
	/* They ran concurrently: well under 4 * 0.2s. */
	RT_CHECK(ev_now(loop) - t0 < 0.6);
	RT_EQ_INT(relay_runtime_active(rt), 0);
	close_rt();
}

static void test_runtime__async_private_loop(void)
{
	struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);

	run_async_on(loop);
	ev_loop_destroy(loop);
}

static void test_runtime__async_default_loop(void)
{
	run_async_on(ev_default_loop(0));
}

static void test_runtime__cancel(void)
{
	const char *argv[] = { "/bin/sleep", "30", NULL };
	relay_exec_spec s = sh_spec(argv, 5000);
	struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
	struct acount a = { 0 };
	relay_run *run = NULL;

	open_rt();
	relay_runtime_libev_attach(rt, loop);
	RT_EQ_INT(relay_runtime_run(rt, &s, NULL, count_done, &a, &run, NULL),
		  0);
	RT_ASSERT(run != NULL);
	relay_run_cancel(run);
	ev_run(loop, 0);
	RT_EQ_INT(a.done, 1);
	RT_EQ_INT(a.cancelled, 1);
	/* Freeing the runtime with runs in flight reports them cancelled. */
	RT_EQ_INT(relay_runtime_run(rt, &s, NULL, count_done, &a, NULL, NULL),
		  0);
	RT_EQ_INT(relay_runtime_run(rt, &s, NULL, count_done, &a, NULL, NULL),
		  0);
	close_rt();
	RT_EQ_INT(a.done, 3);
	RT_EQ_INT(a.cancelled, 3);
	ev_loop_destroy(loop);
}

/* ---- runtimes ------------------------------------------------------ */

static relay_exec_spec lang_spec(relay_runtime_kind k, const char *handler,
				 const char *event)
{
	relay_exec_spec s = sh_spec(NULL, 10000);

	s.runtime = k;
	s.handler = handler;
	s.event = event;
	s.event_len = strlen(event);
	return s;
}

static void check_lang(relay_runtime_kind k)
{
	relay_exec_spec s;
	relay_run_outcome o;
	cap c = { 0 };

	s = lang_spec(k, "events.created.handler", "{\"name\":\"ada\"}");
	RT_EQ_INT(relay_runtime_run_sync(rt, &s, cap_cb, &c, &o, NULL), 0);
	RT_EQ_INT(o.status, RELAY_RUN_OK);
	RT_CHECK(cap_has(&c, "name=ada"));
	RT_EQ_STR(cap_text(&c, 0), "[demo/events.created.handler@1-0] stdout: "
		  "name=ada");
	cap_free(&c);

	s = lang_spec(k, "events.created.fail", "{}");
	RT_EQ_INT(relay_runtime_run_sync(rt, &s, cap_cb, &c, &o, NULL), 0);
	RT_EQ_INT(o.status, RELAY_RUN_FAILED);
	RT_EQ_INT(o.exit_code, 1);
	RT_EQ_STR(o.reason, "exit status 1");
	RT_CHECK(cap_contains(&c, k == RELAY_RUNTIME_PYTHON3
			      ? "ValueError: boom" : "Error: boom"));
	RT_CHECK(cap_contains(&c, k == RELAY_RUNTIME_PYTHON3
			      ? "Traceback" : "at exports.fail"));
	RT_CHECK(c.n > 0 && c.stream[c.n - 1] == RELAY_OUTPUT_STDERR);
	cap_free(&c);

	s = lang_spec(k, "events.created.exit3", "{}");
	RT_EQ_INT(relay_runtime_run_sync(rt, &s, cap_cb, &c, &o, NULL), 0);
	RT_EQ_INT(o.exit_code, 3);
	cap_free(&c);

	s = lang_spec(k, "events.created.later", "{\"n\":7}");
	RT_EQ_INT(relay_runtime_run_sync(rt, &s, cap_cb, &c, &o, NULL), 0);
	RT_EQ_INT(o.status, RELAY_RUN_OK);
	RT_CHECK(cap_has(&c, "async 7"));
	cap_free(&c);

	/* A handler that cannot be loaded: the error's first line is the
	 * reason, not "exit status 1" (a failure inside it, above, is). */
	s = lang_spec(k, "events.missing.handler", "{}");
	RT_EQ_INT(relay_runtime_run_sync(rt, &s, cap_cb, &c, &o, NULL), 0);
	RT_EQ_INT(o.exit_code, 1);
	RT_EQ_STR(o.reason, k == RELAY_RUNTIME_PYTHON3
		  ? "ModuleNotFoundError: No module named 'events.missing'"
		  : "Error: Cannot find handler module './events/missing'");
	cap_free(&c);

	s = lang_spec(k, "events.created.nosuch", "{}");
	RT_EQ_INT(relay_runtime_run_sync(rt, &s, cap_cb, &c, &o, NULL), 0);
	RT_EQ_INT(o.exit_code, 1);
	RT_EQ_STR(o.reason, k == RELAY_RUNTIME_PYTHON3
		  ? "AttributeError: module 'events.created' has no "
		    "attribute 'nosuch'"
		  : "TypeError: events.created: export 'nosuch' is not a "
		    "function");
	cap_free(&c);

	s = lang_spec(k, "nodot", "{}");
	RT_EQ_INT(relay_runtime_run_sync(rt, &s, cap_cb, &c, &o, NULL),
		  RELAY_EINVAL);
}

static void test_runtime__python3(void)
{
	if (!have_prog("/usr/bin/python3"))
		RT_SKIP("python3 not installed");
	open_rt();
	check_lang(RELAY_RUNTIME_PYTHON3);
	close_rt();
}

static void test_runtime__node(void)
{
	if (!have_prog("/usr/bin/node"))
		RT_SKIP("node not installed");
	open_rt();
	check_lang(RELAY_RUNTIME_NODE);
	close_rt();
}

static void test_runtime__kind_names(void)
{
	relay_runtime_kind k;

	RT_EQ_INT(relay_runtime_kind_parse("python3", &k), 0);
	RT_EQ_INT(k, RELAY_RUNTIME_PYTHON3);
	RT_EQ_INT(relay_runtime_kind_parse("node", &k), 0);
	RT_EQ_INT(k, RELAY_RUNTIME_NODE);
	RT_EQ_INT(relay_runtime_kind_parse("exec", &k), 0);
	RT_EQ_INT(k, RELAY_RUNTIME_EXEC);
	RT_EQ_INT(relay_runtime_kind_parse("python", &k), RELAY_EINVAL);
	RT_EQ_STR(relay_runtime_kind_name(RELAY_RUNTIME_NODE), "node");
}

/* The argv @spec's kind's driver gives for a cold start, joined by
 * spaces, into @buf. */
static const char *cold_line(const relay_exec_spec *spec, char *buf,
			     size_t size)
{
	relay__strv sv = { 0 };
	relay_error err;
	size_t i, n = 0;

	buf[0] = '\0';
	RT_EQ_INT(relay__runtime_argv(spec, "/b", &sv, &err), 0);
	for (i = 0; i < sv.n; i++)
		n += (size_t)snprintf(buf + n, n < size ? size - n : 0, "%s%s",
				      i ? " " : "", sv.v[i]);
	relay__strv_free(&sv);
	return buf;
}

/* One driver per kind, in one table: every value has its driver, the
 * names round-trip, and each driver gives the command lines, the
 * interpreter and the checker the switches gave before. */
static void test_runtime__kind_drivers(void)
{
	static const char *const cmd[] = { "/bin/echo", "x y", NULL };
	relay_exec_spec s = RELAY_EXEC_SPEC_INIT;
	const char *const *ck;
	relay_runtime_kind k;
	char buf[256];
	size_t i, n = 0;

	for (i = 0; relay__kind_at(i); i++, n++) {
		const relay__kind *d = relay__kind_at(i);

		RT_CHECK(relay__kind_get(d->kind) == d);
		RT_CHECK(relay__kind_find(d->name) == d);
		RT_EQ_INT(relay_runtime_kind_parse(d->name, &k), 0);
		RT_EQ_INT(k, d->kind);
		RT_EQ_STR(relay_runtime_kind_name(k), d->name);
		RT_CHECK(d->handler_valid && d->cold_argv && d->warm_argv);
	}
	RT_EQ_INT(n, RELAY__KIND_COUNT);
	RT_CHECK(relay__kind_get((relay_runtime_kind)RELAY__KIND_COUNT) ==
		 NULL);
	RT_EQ_STR(relay_runtime_kind_name((relay_runtime_kind)99), "unknown");
	RT_EQ_STR(relay__kind_names(buf, sizeof(buf), " or "),
		  "python3, node or exec");

	s.handler = "events.created.handler";
	s.argv = cmd;
	s.runtime = RELAY_RUNTIME_PYTHON3;
	RT_EQ_STR(cold_line(&s, buf, sizeof(buf)),
		  "python3 -u -B /b/relay-bootstrap.py events.created.handler");
	s.runtime = RELAY_RUNTIME_NODE;
	RT_EQ_STR(cold_line(&s, buf, sizeof(buf)),
		  "node /b/relay-bootstrap.js events.created.handler");
	s.runtime = RELAY_RUNTIME_EXEC;
	RT_EQ_STR(cold_line(&s, buf, sizeof(buf)), "/bin/echo x y");

	RT_EQ_STR(relay_runtime_kind_program(RELAY_RUNTIME_PYTHON3),
		  "python3");
	RT_EQ_STR(relay_runtime_kind_program(RELAY_RUNTIME_NODE), "node");
	RT_CHECK(relay_runtime_kind_program(RELAY_RUNTIME_EXEC) == NULL);
	ck = relay_runtime_kind_check_argv(RELAY_RUNTIME_NODE);
	RT_CHECK(ck && !strcmp(ck[0], "node") && !strcmp(ck[1], "--check") &&
		 !ck[2]);
	ck = relay_runtime_kind_check_argv(RELAY_RUNTIME_PYTHON3);
	RT_CHECK(ck && !strcmp(ck[0], "python3") && !strcmp(ck[1], "-I"));
	RT_CHECK(relay_runtime_kind_check_argv(RELAY_RUNTIME_EXEC) == NULL);
	RT_CHECK(relay__kind_exec.handler_valid("a-b.c_1"));
	RT_CHECK(!relay__kind_python3.handler_valid("m-x.f"));
	RT_CHECK(relay__kind_node.pool_argv && !relay__kind_python3.pool_argv);
}

static void test_runtime__backend_registry(void)
{
	relay_runtime_options opt = RELAY_RUNTIME_OPTIONS_INIT;
	relay_runtime_backend tbl;
	relay_error err;

	opt.backend = "docker";
	RT_EQ_INT(relay_runtime_new(&rt, &opt, &err), RELAY_ENOTFOUND);
	RT_EQ_STR(err.text, "unknown runtime backend \"docker\"");
	RT_EQ_INT(relay_runtime_backend_init(&tbl, 0), RELAY_EINVAL);
	/* Newer than this library: refused. */
	RT_EQ_INT(relay_runtime_backend_init(&tbl,
					     RELAY_RUNTIME_BACKEND_VERSION + 1),
		  RELAY_EINVAL);
	RT_EQ_INT(relay_runtime_backend_init(&tbl, 1), 0);
	RT_EQ_INT(tbl.proc_size, sizeof(relay_proc));
	/* Version 2 adds the warm slot, NULL until a backend fills it. */
	RT_EQ_INT(relay_runtime_backend_init(&tbl, 2), 0);
	RT_EQ_INT(tbl.version, 2);
	RT_CHECK(tbl.warm == NULL);
	open_rt();
	RT_EQ_STR(relay_runtime_backend_name(rt), "process");
	RT_EQ_INT(relay_runtime_limits_mode(rt), RELAY_LIMITS_NONE);
	close_rt();
	opt.backend = "none";  /* RELAY_SANDBOX=none */
	opt.limits = RELAY_LIMITS_NONE;
	RT_EQ_INT(relay_runtime_new(&rt, &opt, NULL), 0);
	RT_EQ_STR(relay_runtime_backend_name(rt), "process");
	close_rt();
	relay_runtime_free(NULL);
}

struct logged {
	int n;
	char last[256];
	char msgid[32];
};

static void log_cb(void *payload, relay_log_level lvl, const char *msgid,
		   const char *msg)
{
	struct logged *l = payload;

	(void)lvl;
	l->n++;
	snprintf(l->last, sizeof(l->last), "%s", msg);
	snprintf(l->msgid, sizeof(l->msgid), "%s", msgid);
}

/* One startup line names the backend and the limit mechanism; handler
 * output reaches the output callback whatever the log level. */
static void test_runtime__startup_log_and_output_at_any_level(void)
{
	relay_runtime_options opt = RELAY_RUNTIME_OPTIONS_INIT;
	struct logged l = { 0 };
	relay_run_outcome o;
	cap c = { 0 };

	opt.backend = "process";
	opt.limits = RELAY_LIMITS_RLIMIT;
	opt.logger.fn = log_cb;
	opt.logger.payload = &l;
	opt.logger.level = RELAY_LOG_INFO;
	RT_ASSERT(relay_runtime_new(&rt, &opt, NULL) == 0);
	RT_EQ_INT(l.n, 1);
	RT_EQ_STR(l.msgid, "RELAY-RT01");
	RT_EQ_STR(l.last, "runtime: backend process, resource limits: "
		  "rlimit, warm parents: off");
	close_rt();
	opt.logger.level = RELAY_LOG_ERROR;
	RT_ASSERT(relay_runtime_new(&rt, &opt, NULL) == 0);
	RT_EQ_INT(l.n, 1);
	RT_EQ_INT(run_sh(rt, "echo out; echo err >&2", 5000, &c, &o), 0);
	RT_EQ_INT(c.n, 2);
	RT_EQ_INT(l.n, 1);
	cap_free(&c);
	close_rt();
}

static const rt_case cases[] = {
	RT_CASE(test_runtime__kind_drivers),
	RT_CASE(test_runtime__ok),
	RT_CASE(test_runtime__fail_exit3),
	RT_CASE(test_runtime__killed_by_signal),
	RT_CASE(test_runtime__timeout_sigterm),
	RT_CASE(test_runtime__timeout_sigkill_after_grace),
	RT_CASE(test_runtime__default_and_max_timeout),
	RT_CASE(test_runtime__event_on_stdin_byte_identical),
	RT_CASE(test_runtime__ignores_stdin),
	RT_CASE(test_runtime__clean_environment),
	RT_CASE(test_runtime__cwd_is_app_dir),
	RT_CASE(test_runtime__command_lookup_uses_handler_path),
	RT_CASE(test_runtime__command_not_found),
	RT_CASE(test_runtime__partial_and_long_lines),
	RT_CASE(test_runtime__line_splitter_random_chunks),
	RT_CASE(test_runtime__ten_megabytes),
	RT_CASE(test_runtime__ten_megabytes_unlimited),
	RT_CASE(test_runtime__leftover_children_killed),
	RT_CASE(test_runtime__async_private_loop),
	RT_CASE(test_runtime__async_default_loop),
	RT_CASE(test_runtime__cancel),
	RT_CASE(test_runtime__load_error_line),
	RT_CASE(test_runtime__python3),
	RT_CASE(test_runtime__node),
	RT_CASE(test_runtime__kind_names),
	RT_CASE(test_runtime__backend_registry),
	RT_CASE(test_runtime__startup_log_and_output_at_any_level),
	RT_CASE(test_runtime__escaped_grandchild_does_not_hang),
	RT_CASE(test_runtime__bad_app_dir),
	RT_CASE(test_runtime__custom_backend),
};

int main(int argc, char **argv)
{
	return rt_main(argc, argv, cases, RT_NCASES(cases));
}
