/*
 * custom-backend.c - a runtime backend written from <relay/sys/runtime.h>.
 *
 * The runtime core (relay_runtime) does everything around a handler
 * process: it writes the event to its stdin, splits and prefixes its
 * output, enforces the timeout (SIGTERM, then SIGKILL), reaps it and
 * reports one outcome. A *backend* only starts the process and signals
 * it. The built-in backends exec a program ("process") or a bubblewrap
 * sandbox ("bwrap"); this one is the in-process flavour: a handler is a C
 * function of this program, run in a forked child. The core cannot tell
 * the difference, so timeouts, output forwarding and outcomes all work.
 *
 * The backend also counts what the core asked of it, to show when each
 * slot is called.
 *
 *	$ cc custom-backend.c $(pkg-config --cflags --libs librelay)
 *	$ ./a.out
 *
 * Runs three invocations through relay_runtime_run_sync() - one that
 * succeeds, one that fails, one that times out - and prints their output
 * and outcomes. Exit status 0 when all three ended as expected.
 *
 * Plain C99 plus POSIX (fork, pipe, fcntl, kill). Only public headers.
 *
 * Build against an installed librelay (README.md, "Install"):
 *
 *	cc -o example custom-backend.c $(pkg-config --cflags --libs librelay)
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#include <relay/relay.h>
#include <relay/sys/runtime.h>   /* for backend authors only */

/* ---- the handlers: plain C functions ------------------------------- */

/*
 * A handler runs in the child with the event on fd 0 and its output on
 * fds 1 and 2; its return value is the exit status, as for a program.
 */
typedef int (*handler_fn)(const relay_exec_spec *spec);

/* Echo the event back, with its size. */
static int greet(const relay_exec_spec *spec)
{
	char buf[4096];
	size_t used = 0;
	ssize_t n;

	while (used < sizeof(buf) - 1 &&
	       (n = read(0, buf + used, sizeof(buf) - 1 - used)) > 0)
		used += (size_t)n;
	buf[used] = '\0';
	printf("hello from %s, %zu bytes: %s\n", spec->handler, used, buf);
	return 0;
}

/* Fail, saying why on stderr. */
static int refuse(const relay_exec_spec *spec)
{
	fprintf(stderr, "%s: refusing this event\n", spec->handler);
	return 3;
}

/* Outlive any timeout: the core has to stop it through our signal slot
 * (SIGTERM to the process group). */
static int hang(const relay_exec_spec *spec)
{
	(void)spec;
	sleep(600);
	return 0;
}

static const struct {
	const char *name;
	handler_fn fn;
} handlers[] = {
	{ "greet", greet },
	{ "refuse", refuse },
	{ "hang", hang },
};

/* ---- the backend ---------------------------------------------------- */

/*
 * The vtable comes first, so the core's relay_runtime_backend * is also
 * a pointer to our struct (doc/api-stability.md, "Versioned structs and
 * vtables").
 */
struct fork_backend {
	relay_runtime_backend parent;   /* must be first */
	unsigned int spawns;            /* spawn calls, failed ones too */
	unsigned int sigterms;          /* signal calls with SIGTERM */
	unsigned int releases;          /* release calls */
};

static handler_fn find_handler(const char *name)
{
	size_t i;

	for (i = 0; i < sizeof(handlers) / sizeof(handlers[0]); i++)
		if (strcmp(handlers[i].name, name) == 0)
			return handlers[i].fn;
	return NULL;
}

/* The core requires its three pipe ends to be O_NONBLOCK and O_CLOEXEC. */
static int set_core_flags(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return -1;
	return fcntl(fd, F_SETFD, FD_CLOEXEC);
}

static void close_pair(int p[2])
{
	if (p[0] >= 0)
		close(p[0]);
	if (p[1] >= 0)
		close(p[1]);
	p[0] = p[1] = -1;
}

/* In the child: become a process group leader (the core signals the
 * whole group), restore default signal handling, wire up fds 0-2, run
 * the handler, flush its stdio and leave with _exit(), which skips the
 * parent's atexit handlers (and, under ASan, its leak check). */
static void child_main(handler_fn fn, const relay_exec_spec *spec,
		       int in[2], int out[2], int errp[2])
{
	sigset_t none;
	int status;

	setpgid(0, 0);
	signal(SIGTERM, SIG_DFL);
	signal(SIGPIPE, SIG_DFL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	if (dup2(in[0], 0) < 0 || dup2(out[1], 1) < 0 ||
	    dup2(errp[1], 2) < 0)
		_exit(127);
	close_pair(in);
	close_pair(out);
	close_pair(errp);
	if (chdir(spec->app_dir) != 0)
		_exit(127);
	status = fn(spec);
	fflush(stdout);
	fflush(stderr);
	_exit(status & 0xff);
}

/*
 * spawn: start @spec and fill @proc. For an exec spec, argv[0] names the
 * C function to run. On failure nothing may be left running or open.
 */
static int fb_spawn(relay_runtime_backend *rb, const relay_exec_spec *spec,
		    relay_proc *proc, relay_error *err)
{
	struct fork_backend *fb = (struct fork_backend *)rb;
	int in[2] = { -1, -1 }, out[2] = { -1, -1 }, errp[2] = { -1, -1 };
	handler_fn fn = NULL;
	pid_t pid;

	fb->spawns++;
	if (spec->runtime == RELAY_RUNTIME_EXEC && spec->argv)
		fn = find_handler(spec->argv[0]);
	if (!fn) {
		if (err) {
			memset(err, 0, sizeof(*err));
			err->code = RELAY_ENOTFOUND;
			snprintf(err->text, sizeof(err->text),
				 "no C handler \"%s\"",
				 spec->argv ? spec->argv[0] : "");
		}
		return RELAY_ENOTFOUND;
	}
	if (pipe(in) != 0 || pipe(out) != 0 || pipe(errp) != 0)
		goto fail;
	if (set_core_flags(in[1]) || set_core_flags(out[0]) ||
	    set_core_flags(errp[0]))
		goto fail;
	fflush(NULL);   /* do not duplicate buffered output in the child */
	pid = fork();
	if (pid < 0)
		goto fail;
	if (pid == 0)
		child_main(fn, spec, in, out, errp);
	setpgid(pid, pid);   /* also here: no race with an early signal */

	/* Keep the core's ends, close the child's. */
	close(in[0]);
	close(out[1]);
	close(errp[1]);
	proc->pid = pid;
	proc->stdin_fd = in[1];
	proc->stdout_fd = out[0];
	proc->stderr_fd = errp[0];
	return 0;

fail:
	if (err) {
		memset(err, 0, sizeof(*err));
		err->code = RELAY_EBACKEND;
		snprintf(err->text, sizeof(err->text), "spawn: %s",
			 strerror(errno));
	}
	close_pair(in);
	close_pair(out);
	close_pair(errp);
	return RELAY_EBACKEND;
}

/* signal: the whole process group; ESRCH (already gone) is not an error. */
static int fb_signal(relay_runtime_backend *rb, relay_proc *proc, int sig)
{
	struct fork_backend *fb = (struct fork_backend *)rb;

	if (sig == SIGTERM)
		fb->sigterms++;   /* the timeout; the core also SIGKILLs */
	if (kill(-proc->pid, sig) != 0 && errno != ESRCH)
		return RELAY_EBACKEND;
	return 0;
}

/* release (optional): the core has reaped the child; kill leftovers. */
static void fb_release(relay_runtime_backend *rb, relay_proc *proc)
{
	struct fork_backend *fb = (struct fork_backend *)rb;

	fb->releases++;
	kill(-proc->pid, SIGKILL);
}

/* free (optional): the runtime owns the backend and calls this from
 * relay_runtime_free(). Print the counters before they go. */
static void fb_free(relay_runtime_backend *rb)
{
	struct fork_backend *fb = (struct fork_backend *)rb;

	printf("backend: %u spawn, %u release, %u SIGTERM\n", fb->spawns,
	       fb->releases, fb->sigterms);
	free(fb);
}

static relay_runtime_backend *fork_backend_new(void)
{
	struct fork_backend *fb = calloc(1, sizeof(*fb));

	if (!fb)
		return NULL;
	/* Zeroes the table, sets version and proc_size. */
	if (relay_runtime_backend_init(&fb->parent,
				       RELAY_RUNTIME_BACKEND_VERSION) != 0) {
		free(fb);
		return NULL;
	}
	fb->parent.name = "fork";
	fb->parent.spawn = fb_spawn;
	fb->parent.signal = fb_signal;
	fb->parent.release = fb_release;
	fb->parent.free = fb_free;
	return &fb->parent;
}

/* ---- the host ------------------------------------------------------- */

/* Output lines arrive already prefixed "[app/handler@id] stdout: ". */
static void on_line(const relay_output_line *line, void *payload)
{
	(void)payload;
	printf("%.*s\n", (int)line->len, line->text);
}

static const char *status_name(relay_run_status s)
{
	switch (s) {
	case RELAY_RUN_OK: return "ok";
	case RELAY_RUN_FAILED: return "failed";
	case RELAY_RUN_TIMEOUT: return "timeout";
	case RELAY_RUN_CANCELLED: return "cancelled";
	case RELAY_RUN_REFUSED: return "refused";
	}
	return "?";
}

/* Run C handler @name once; returns the outcome's status, or -1. */
static int run_one(relay_runtime *rt, const char *name, uint32_t timeout_ms)
{
	static const char event[] = "{\"type\":\"demo\",\"n\":1}";
	const char *argv[2];
	relay_exec_spec spec = RELAY_EXEC_SPEC_INIT;
	relay_run_outcome oc;
	relay_error err;
	int rc;

	argv[0] = name;
	argv[1] = NULL;
	spec.app = "demo";
	spec.handler = name;
	spec.message_id = "1-0";
	spec.app_dir = "/";
	spec.runtime = RELAY_RUNTIME_EXEC;
	spec.argv = argv;
	spec.timeout_ms = timeout_ms;
	spec.event = event;
	spec.event_len = sizeof(event) - 1;

	rc = relay_runtime_run_sync(rt, &spec, on_line, NULL, &oc, &err);
	if (rc != 0) {
		fprintf(stderr, "run %s: %s: %s\n", name, relay_strerror(rc),
			err.text);
		return -1;
	}
	printf("%s: %s%s%s\n", name, status_name(oc.status),
	       oc.reason[0] ? ", " : "", oc.reason);
	return (int)oc.status;
}

int main(void)
{
	relay_runtime_options opts = RELAY_RUNTIME_OPTIONS_INIT;
	relay_runtime_backend *rb;
	relay_runtime *rt = NULL;
	relay_error err;
	int ok = 1, rc;

	rb = fork_backend_new();
	if (!rb)
		return 1;
	opts.kill_grace_ms = 500;
	/* Steals rb: from here on the runtime frees it, even on failure. */
	rc = relay_runtime_new_with_backend(&rt, rb, &opts, &err);
	if (rc != 0) {
		fprintf(stderr, "runtime: %s: %s\n", relay_strerror(rc),
			err.text);
		return 1;
	}
	printf("runtime backend: %s\n", relay_runtime_backend_name(rt));

	ok &= run_one(rt, "greet", 0) == RELAY_RUN_OK;
	ok &= run_one(rt, "refuse", 0) == RELAY_RUN_FAILED;
	ok &= run_one(rt, "hang", 200) == RELAY_RUN_TIMEOUT;
	/* An unknown function: spawn fails, no callback, no outcome. */
	ok &= run_one(rt, "missing", 0) == -1;

	relay_runtime_free(rt);
	return ok ? 0 : 1;
}
