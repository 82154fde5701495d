/*
 * warm_exec.c - relay-warm-exec, the warm parent of an exec app: a small
 * fork server run inside the app's warm bubblewrap sandbox (warm.c starts
 * it like the python3 server, with the same control protocol; see
 * relay_warm_server.py for the protocol and doc/sandbox.md, "Warm
 * sandboxes").
 *
 *	relay-warm-exec -- CMD ARGS...     (fd 3: the control socket)
 *
 * Per invocation: clone3() makes N, pid 1 of a new pid namespace in new
 * mount and IPC namespaces, which mounts a private tmpfs /tmp, a fresh
 * /proc and its own /dev (as bwrap made it: warm_fresh.h) and forks H,
 * pid 2, in its own session; N sends "S id" with H's pidfd to relayd.
 * H waits for "g" on the go pipe relayd sent with the request when the
 * invocation has cgroups (relayd moved H in: only H and its descendants
 * are the invocation's, as in the python3 server), sets rlimits, makes
 * its own user namespace (warm_fresh.h), drops every capability, resets
 * every signal, takes the invocation's stdio and exactly the cold
 * environment, and execs CMD. N exits with H's status (128+signal when
 * killed), which takes the invocation's leftovers down with it, and the
 * server reports it ("X"). relayd signals H's process group, never N: an
 * N killed by a signal is a slot that died under its invocation, which
 * the server reports as such ("E"), so that relayd runs it again cold
 * and charges the handler nothing, as for a python3 slot. A C process
 * forks in microseconds where the python3 server's interpreter takes a
 * millisecond.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/sched.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "warm_fresh.h"
#include "warm_proto.h"

#define CTL 3
#define GO 4      /* in N and H: the go pipe's read end */
#define MAX_MSG 65536
#define MAX_FIELDS 4096
#define MAX_KIDS 1024

extern char **environ;

struct kid {
	pid_t pid;
	char id[24];
};

static struct kid kids[MAX_KIDS];
static char **command;
static const char *pwd;
static int sfd = -1;
static struct relay__warm_dev dev;  /* bwrap's /dev, learnt at start */
static int n_err = 2;               /* in N: the invocation's stderr */

static int send_fields(const char *const *f, int n, int fd)
{
	char buf[512];
	size_t len = 0;
	int i;

	for (i = 0; i < n; i++) {
		size_t l = strlen(f[i]);

		if (len + l + 1 > sizeof(buf))
			return -1;
		memcpy(buf + len, f[i], l + 1);
		len += l + 1;
	}
	return relay__warm_send(CTL, buf, len, &fd, fd >= 0 ? 1 : 0);
}

static void die(const char *what)
{
	dprintf(2, "relay: warm invocation setup: %s: %s\n", what,
		strerror(errno));
	_exit(255);
}

/* H: the go-ahead (fd GO, when @go), then become the command. Never
 * returns. */
static void __attribute__((noreturn)) run_h(char **env, int go,
					    const struct rlimit *rl)
{
	struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3,
						0 };
	struct __user_cap_data_struct data[2];
	struct sigaction sa;
	sigset_t none;
	ssize_t r;
	int s;
	char c;

	close(CTL);
	/* relayd signals this process group: H's and its children's,
	 * never N's. */
	setsid();
	if (go) {
		do
			r = read(GO, &c, 1);
		while (r < 0 && errno == EINTR);
		if (r != 1 || c != 'g')
			_exit(255);
		close(GO);
	}
	if (rl[0].rlim_cur && setrlimit(RLIMIT_AS, &rl[0]) != 0)
		die("setrlimit");
	if (rl[1].rlim_cur && setrlimit(RLIMIT_NPROC, &rl[1]) != 0)
		die("setrlimit");
	if (relay__warm_own_userns() != 0)
		die("user namespace");
	memset(data, 0, sizeof(data));
	if (syscall(SYS_capset, &hdr, data) != 0)
		die("capset");
	prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_DFL;
	for (s = 1; s < NSIG; s++)
		if (s != SIGKILL && s != SIGSTOP)
			(void)sigaction(s, &sa, NULL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	environ = env;
	execvp(command[0], command);
	dprintf(2, "relay: exec %s: %s\n", command[0], strerror(errno));
	_exit(127);
}

/* An empty tmpfs over @dir (if it exists) with the mode bwrap gave it,
 * as in a cold sandbox. */
static int mount_scratch(const char *dir)
{
	struct stat st;
	char opt[32];

	if (stat(dir, &st) != 0)
		return 0;
	snprintf(opt, sizeof(opt), "mode=%o", (unsigned)(st.st_mode & 07777));
	return mount("tmpfs", dir, "tmpfs", MS_NOSUID | MS_NODEV, opt);
}

/* N, before H exists: tell relayd the invocation is lost ("E"; run
 * cold) and exit. Without @rid (the probe) the reason goes to stderr. */
static void __attribute__((noreturn)) n_fail(const char *rid,
					     const char *what)
{
	char why[160];

	snprintf(why, sizeof(why), "warm invocation setup: %s: %s", what,
		 strerror(errno));
	if (rid) {
		const char *e[] = { "E", rid, why };

		send_fields(e, 3, -1);
	} else {
		dprintf(n_err, "relay: %s\n", why);
	}
	_exit(255);
}

/* N: pid 1 of the invocation's namespaces (@rid its request's id, NULL
 * for the probe). Never returns. */
static void __attribute__((noreturn))
run_n(const int fds[3], int go_r, const struct rlimit *rl, char **env,
      const char *rid)
{
	static const int ignored[] = { SIGTERM, SIGINT, SIGHUP, SIGQUIT,
				       SIGUSR1, SIGUSR2, SIGALRM, SIGPIPE };
	struct clone_args ca;
	struct sigaction sa;
	sigset_t none;
	int i, st, pidfd = -1;
	long h;

	n_err = fds[2];
	setsid();
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_IGN;
	for (i = 0; i < (int)(sizeof(ignored) / sizeof(ignored[0])); i++)
		sigaction(ignored[i], &sa, NULL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0)
		n_fail(rid, "mount --make-rprivate /");
	/* Writable in the sandbox: each invocation gets its own. */
	if (mount_scratch("/tmp") != 0)
		n_fail(rid, "mount /tmp");
	if (mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC,
		  NULL) != 0)
		n_fail(rid, "mount /proc");
	if (relay__warm_dev_reopen(&dev) != 0 ||
	    relay__warm_dev_build(&dev, 0) != 0)
		n_fail(rid, "mount /dev");
	/* Only now: a descriptor dup2() replaces may be one of bwrap's
	 * device nodes, bound above. */
	for (i = 0; i < 3; i++)
		if (dup2(fds[i], i) < 0)
			n_fail(rid, "dup2");
	if (go_r >= 0 && dup2(go_r, GO) < 0)
		n_fail(rid, "dup2");
	n_err = 2;
	/* Nothing of the server's but the control socket (for "S") and
	 * the go pipe (H's). */
	syscall(SYS_close_range, go_r >= 0 ? GO + 1 : GO, ~0u, 0);
	memset(&ca, 0, sizeof(ca));
	ca.flags = CLONE_PIDFD;
	ca.pidfd = (uint64_t)(uintptr_t)&pidfd;
	ca.exit_signal = SIGCHLD;
	h = syscall(SYS_clone3, &ca, sizeof(ca));
	if (h < 0)
		n_fail(rid, "clone3");
	if (h == 0) {
		if (!env)
			_exit(0);       /* the probe */
		run_h(env, go_r >= 0, rl);
	}
	if (rid) {
		const char *f[] = { "S", rid };

		send_fields(f, 2, pidfd);
	}
	close(pidfd);
	close(CTL);
	if (go_r >= 0)
		close(GO);
	for (;;) {
		pid_t p = waitpid(-1, &st, 0);

		if (p < 0 && errno == EINTR)
			continue;
		if (p < 0)
			_exit(255);
		if (p == h)
			_exit(relay__warm_exit_code(st));
	}
}

/* Start N; returns its pid with *pidfd, or -1. */
static pid_t start_n(const int fds[3], int go_r, const struct rlimit *rl,
		     char **env, const char *rid)
{
	struct clone_args a;
	pid_t pid;

	memset(&a, 0, sizeof(a));
	a.flags = CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC;
	a.exit_signal = SIGCHLD;
	pid = (pid_t)syscall(SYS_clone3, &a, sizeof(a));
	if (pid == 0)
		run_n(fds, go_r, rl, env, rid);
	return pid;
}

static const char *probe(void)
{
	static char why[256];
	int fds[3], p[2], st, i;
	struct rlimit rl[2];
	ssize_t n;
	pid_t pid;

	memset(rl, 0, sizeof(rl));
	if (pipe2(p, O_CLOEXEC) != 0)
		return "pipe";
	fds[0] = fds[1] = open("/dev/null", O_RDWR | O_CLOEXEC);
	fds[2] = p[1];
	pid = start_n(fds, -1, rl, NULL, NULL);
	close(fds[0]);
	close(p[1]);
	if (pid < 0) {
		close(p[0]);
		snprintf(why, sizeof(why), "clone3: %s", strerror(errno));
		return why;
	}
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	n = read(p[0], why, sizeof(why) - 1);
	close(p[0]);
	why[n > 0 ? n : 0] = '\0';
	for (i = 0; why[i]; i++)
		if (why[i] == '\n')
			why[i] = '\0';
	if (relay__warm_exit_code(st) == 0)
		return NULL;
	if (!*why)
		snprintf(why, sizeof(why), "probe invocation exited %d",
			 relay__warm_exit_code(st));
	return why;
}

/* R id wait_go as nproc handler env... (+3 fds, + the go pipe's read end
 * when wait_go) */
static void request(char **f, int nf, int *fds, int nfds, int whole)
{
	struct rlimit rl[2];
	struct kid *k = NULL;
	int i, wait_go;
	char **env = NULL;
	pid_t pid;

	for (i = 0; i < MAX_KIDS && !k; i++)
		if (kids[i].pid <= 0)
			k = &kids[i];
	wait_go = nf > 2 && strcmp(f[2], "1") == 0;
	/* A request cut short (or its descriptors) is refused. */
	if (!whole || nf < 6 || nfds != (wait_go ? 4 : 3) || !k) {
		const char *e[] = { "E", nf > 1 ? f[1] : "?",
				    k ? "bad request" : "too many" };

		send_fields(e, 3, -1);
		goto out;
	}
	rl[0].rlim_cur = rl[0].rlim_max = strtoull(f[3], NULL, 10);
	rl[1].rlim_cur = rl[1].rlim_max = strtoull(f[4], NULL, 10);
	/* The cold environment, and PWD as bwrap sets it. */
	env = calloc((size_t)nf, sizeof(char *));
	if (!env)
		goto out;
	for (i = 6; i < nf; i++)
		if (strncmp(f[i], "PWD=", 4) != 0)
			env[i - 6] = f[i];
	if (pwd) {
		static char pwdkv[4200];

		snprintf(pwdkv, sizeof(pwdkv), "PWD=%s", pwd);
		env[nf - 6] = pwdkv;
	}
	/* Remove the holes left by a dropped PWD. */
	{
		int w = 0;

		for (i = 0; i < nf - 5; i++)
			if (env[i])
				env[w++] = env[i];
		env[w] = NULL;
	}
	/* N says "S" itself, with H's pidfd. */
	pid = start_n(fds, wait_go ? fds[3] : -1, rl, env, f[1]);
	if (pid < 0) {
		const char *e[] = { "E", f[1], strerror(errno) };

		send_fields(e, 3, -1);
		goto out;
	}
	k->pid = pid;
	snprintf(k->id, sizeof(k->id), "%s", f[1]);
out:
	free(env);
	for (i = 0; i < nfds; i++)
		close(fds[i]);
}

static void reap(void)
{
	struct signalfd_siginfo si;
	int st, i;
	pid_t p;

	while (read(sfd, &si, sizeof(si)) == (ssize_t)sizeof(si))
		;
	while ((p = waitpid(-1, &st, WNOHANG)) > 0) {
		for (i = 0; i < MAX_KIDS; i++) {
			char code[48];
			const char *x[] = { "X", kids[i].id, code };

			if (kids[i].pid != p)
				continue;
			kids[i].pid = 0;
			/* N exits with H's status; nothing but a kill from
			 * outside ends it by a signal (relayd signals H's
			 * group): its invocation is lost, not failed. An N
			 * that could not set up said "E" itself: relayd
			 * ignores this X. */
			if (WIFSIGNALED(st)) {
				const char *e[] = { "E", kids[i].id, code };

				snprintf(code, sizeof(code), "invocation slot "
					 "died (signal %d)", WTERMSIG(st));
				send_fields(e, 3, -1);
				continue;
			}
			snprintf(code, sizeof(code), "%d", st);
			send_fields(x, 3, -1);
		}
	}
}

int main(int argc, char **argv)
{
	static char msg[MAX_MSG + 1];
	static char *f[MAX_FIELDS];
	struct pollfd pf[2];
	sigset_t chld;
	const char *why;
	int i, me;

	if (argc < 3 || strcmp(argv[1], "--") != 0) {
		fprintf(stderr, "usage: relay-warm-exec -- CMD ARGS... (fd 3: "
			"the control socket)\n");
		return 2;
	}
	command = argv + 2;
	pwd = getenv("PWD");
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	sigprocmask(SIG_BLOCK, &chld, NULL);
	sfd = signalfd(-1, &chld, SFD_NONBLOCK | SFD_CLOEXEC);
	fcntl(CTL, F_SETFD, FD_CLOEXEC);
	/* Before any invocation: bwrap's /dev, which each one gets a
	 * fresh copy of (the server's own stays as bwrap made it). */
	if (relay__warm_dev_learn(&dev) != 0) {
		char m[96];
		const char *n[] = { "N", m };

		snprintf(m, sizeof(m), "cannot read /dev: %s", strerror(errno));
		send_fields(n, 2, -1);
		return 0;
	}
	why = probe();
	if (why) {
		const char *n[] = { "N", why };

		send_fields(n, 2, -1);
		return 0;
	}
	me = (int)syscall(SYS_pidfd_open, getpid(), 0);
	{
		const char *y[] = { "Y" };

		send_fields(y, 1, me);
	}
	close(me);
	pf[0].fd = CTL;
	pf[0].events = POLLIN;
	pf[1].fd = sfd;
	pf[1].events = POLLIN;
	for (;;) {
		int fds[RELAY__WARM_MAX_FDS], nfds = 0, nf = 0, whole;
		ssize_t n;
		size_t off;

		if (poll(pf, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			return 1;
		}
		if (pf[1].revents)
			reap();
		if (!pf[0].revents)
			continue;
		n = relay__warm_recv(CTL, msg, MAX_MSG, fds, &nfds, &whole);
		if (n <= 0)
			return 0;       /* relayd closed the socket: retire */
		msg[n] = '\0';
		for (off = 0; off < (size_t)n && nf < MAX_FIELDS;) {
			f[nf++] = msg + off;
			off += strlen(msg + off) + 1;
		}
		if (nf >= 1 && strcmp(f[0], "R") == 0) {
			request(f, nf, fds, nfds, whole);
		} else {
			for (i = 0; i < nfds; i++)
				close(fds[i]);
		}
	}
}
