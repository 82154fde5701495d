/*
 * warm_exec.c - relay-warm-exec, the warm parent of an exec app: a small
 * fork server run inside the app's warm bubblewrap sandbox (relayd's warm
 * layer starts it like the python3 server, with the same control
 * protocol; see warm_proto.h for the protocol and doc/sandbox.md, "Warm
 * sandboxes").
 *
 *	relay-warm-exec -- CMD ARGS...     (fd 3: the control socket)
 *
 * Per invocation: clone3() makes N, pid 1 of a new pid namespace in new
 * mount and IPC namespaces, which mounts a private tmpfs /tmp, a fresh
 * /proc and its own /dev (as bwrap made it: warm_fresh.h). The server
 * makes it ahead (the spare): it waits for its request on a socket pair
 * with its mounts done. Given the request, N forks H, pid 2, in its own
 * session, and sends "S id" with H's pidfd to relayd. H waits for "g" on
 * the go pipe relayd sent with the request when the invocation has
 * cgroups (relayd moved H in: only H and its descendants are the
 * invocation's, as in the python3 server), sets rlimits, empties its
 * bounding set (no user namespace of its own: see run_h), drops every
 * capability, resets every
 * signal, takes the invocation's stdio and exactly the cold environment,
 * and execs CMD. N exits with H's status (128+signal when killed), which
 * takes the invocation's leftovers down with it, and the server reports
 * it ("X"). relayd signals H's process group, never N: an N killed by a
 * signal is a slot that died under its invocation, which the server
 * reports as such ("E"), so that relayd runs it again cold and charges
 * the handler nothing, as for a python3 slot. A C process
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
#include "warm_seccomp.h"

#define CTL 3
#define GO 4      /* in N and H: the go pipe's read end */
#define MAX_MSG 65536
#define MAX_FIELDS 4096
#define MAX_KIDS 1024

extern char **environ;

#ifdef __SANITIZE_ADDRESS__
/* Sanitized (test) builds: LeakSanitizer's check at exit needs ptrace,
 * which the sandbox's seccomp profile refuses (seccomp_profile.h), so it
 * would fail every warm parent's exit; ASan's own checks stay. */
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
	return "detect_leaks=0";
}
#endif

struct kid {
	pid_t pid;
	char id[24];
};

static struct kid kids[MAX_KIDS];
static char **command;
static const char *pwd;
static int sfd = -1;
static struct relay__warm_dev dev;  /* bwrap's /dev, learnt at start */

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
	/* No user namespace of its own, unlike a python3 invocation: N
	 * lives for this invocation only, so there is nothing of a slot to
	 * keep from H, and the one thing a namespace would add, new
	 * keyrings, no sandbox has where seccomp.c has a filter (x86_64,
	 * aarch64 and the others it names; doc/sandbox.md says which). It
	 * cost about 0.5-0.8 ms of every exec start on a host where
	 * namespaces are slow. */
	if (relay__warm_drop_bounding() != 0)
		die("capability bounding set");
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

/* An empty tmpfs over @dir (if it exists) with the mode and size bwrap
 * gave it, as in a cold sandbox. */
static int mount_scratch(const char *dir)
{
	struct stat st;
	char opt[64];

	if (stat(dir, &st) != 0)
		return 0;
	/* bwrap's size too (resources.tmp). */
	if (relay__warm_tmpfs_opts(dir, (unsigned)(st.st_mode & 07777), opt,
				   sizeof(opt)) != 0)
		return -1;
	return mount("tmpfs", dir, "tmpfs", MS_NOSUID | MS_NODEV, opt);
}

/* The spare N: made ahead of its request, its namespaces and mounts
 * ready (run_n), waiting on a socket pair for the request. */
struct spare {
	pid_t pid;      /* 0: none */
	int sock;       /* the server's end */
};

static struct spare spare = { 0, -1 };

/* N, once it has its request (@rid its id, empty for the probe) but no
 * H: tell relayd the invocation is lost ("E"; it runs it cold), or the
 * probe's stderr (@err) why, and exit. */
static void __attribute__((noreturn)) n_fail(const char *rid, int err,
					     const char *what, int e)
{
	char why[160];

	snprintf(why, sizeof(why), "warm invocation setup: %s: %s", what,
		 strerror(e));
	if (rid[0]) {
		const char *f[] = { "E", rid, why };

		send_fields(f, 3, -1);
	} else {
		dprintf(err, "relay: %s\n", why);
	}
	_exit(255);
}

/* N: the environment of request fields @f[6..@nf) as a cold start has
 * it (PWD as bwrap sets it), or NULL. */
static char **cold_env(char **f, int nf)
{
	static char pwdkv[4200];
	char **env = calloc((size_t)nf, sizeof(char *));
	int i, w = 0;

	if (!env)
		return NULL;
	for (i = 6; i < nf; i++)
		if (!pwd || strncmp(f[i], "PWD=", 4) != 0)
			env[w++] = f[i];
	if (pwd) {
		snprintf(pwdkv, sizeof(pwdkv), "PWD=%s", pwd);
		env[w++] = pwdkv;
	}
	env[w] = NULL;
	return env;
}

/*
 * N: pid 1 of an invocation's namespaces, made before its request. Sets
 * them up (a private /tmp, a fresh /proc, its own /dev), then waits on
 * @sock for the request (R id wait_go as nproc handler env... + stdin,
 * stdout, stderr and the go pipe when wait_go, as relayd sent it), forks
 * H, sends "S id" with H's pidfd and exits with H's status. Never
 * returns; exits 0 when the server hangs up first.
 */
static void __attribute__((noreturn)) run_n(int sock)
{
	static const int ignored[] = { SIGTERM, SIGINT, SIGHUP, SIGQUIT,
				       SIGUSR1, SIGUSR2, SIGALRM, SIGPIPE };
	static char req[MAX_MSG + 1];
	static char *f[MAX_FIELDS];
	int fds[RELAY__WARM_MAX_FDS], nfds, nf = 0, whole, go, i, st;
	int pidfd = -1, e = 0;
	const char *failed = NULL;
	struct rlimit rl[2];
	struct sigaction sa;
	sigset_t none;
	char **env;
	size_t off;
	ssize_t n;
	long h;

	setsid();
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_IGN;
	for (i = 0; i < (int)(sizeof(ignored) / sizeof(ignored[0])); i++)
		sigaction(ignored[i], &sa, NULL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	/* A failure is told when the request comes (to relayd, or to the
	 * probe's stderr). */
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0)
		failed = "mount --make-rprivate /";
	/* Writable in the sandbox: each invocation gets its own. */
	else if (mount_scratch("/tmp") != 0)
		failed = "mount /tmp";
	else if (mount("proc", "/proc", "proc",
		       MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) != 0)
		failed = "mount /proc";
	else if (relay__warm_dev_reopen(&dev) != 0 ||
		 relay__warm_dev_build(&dev, 0) != 0)
		failed = "mount /dev";
	/* Mounted: the rest of the sandbox's profile, for N and H, as a
	 * cold handler has it (warm_seccomp.c). */
	else if (relay__warm_seccomp_handler() != 0)
		failed = "seccomp";
	if (failed)
		e = errno;
	/* Nothing of the server's but the control socket (for "S") and
	 * the socket the request comes on, as fd 5. */
	if (sock != 5 && dup2(sock, 5) != 5)
		_exit(255);
	syscall(SYS_close_range, 6u, ~0u, 0);
	close(4);
	n = relay__warm_recv(5, req, MAX_MSG, fds, &nfds, &whole);
	if (n <= 0)
		_exit(0);
	req[n] = '\0';
	for (off = 0; off < (size_t)n && nf < MAX_FIELDS;) {
		f[nf++] = req + off;
		off += strlen(req + off) + 1;
	}
	go = nf > 2 && strcmp(f[2], "1") == 0;
	if (!whole || nf < 6 || nfds != (go ? 4 : 3))
		_exit(255);      /* the server checked it: not relayd's */
	if (failed)
		n_fail(f[1], fds[2], failed, e);
	env = cold_env(f, nf);
	if (!env)
		n_fail(f[1], fds[2], "calloc", errno);
	for (i = 0; i < 2; i++)
		rl[i].rlim_cur = rl[i].rlim_max = strtoull(f[3 + i], NULL, 10);
	/* The request's descriptors came above 5 or at 4: stdio first,
	 * then the go pipe as fd 4, then the rest closed. */
	for (i = 0; i < 3; i++)
		if (dup2(fds[i], i) < 0)
			n_fail(f[1], fds[2], "dup2", errno);
	if (go && dup2(fds[3], GO) < 0)
		n_fail(f[1], 2, "dup2", errno);
	syscall(SYS_close_range, go ? GO + 1 : GO, ~0u, 0);
	/* clone(), not clone3(): the profile refuses clone3() now. */
#if defined(__s390x__)
	h = syscall(SYS_clone, 0, CLONE_PIDFD | SIGCHLD, &pidfd, 0, 0);
#else
	h = syscall(SYS_clone, CLONE_PIDFD | SIGCHLD, 0, &pidfd, 0, 0);
#endif
	if (h < 0)
		n_fail(f[1], 2, "clone", errno);
	if (h == 0) {
		if (!f[1][0])
			_exit(0);       /* the probe */
		run_h(env, go, rl);
	}
	if (f[1][0]) {
		const char *s[] = { "S", f[1] };

		send_fields(s, 2, pidfd);
	}
	close(pidfd);
	close(CTL);
	if (go)
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

/* Make the spare N (off any request's path). 0, or -1. */
static int make_spare(void)
{
	struct clone_args a;
	int sv[2];
	pid_t pid;

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0)
		return -1;
	memset(&a, 0, sizeof(a));
	a.flags = CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC;
	a.exit_signal = SIGCHLD;
	pid = (pid_t)syscall(SYS_clone3, &a, sizeof(a));
	if (pid == 0) {
		close(sv[0]);
		run_n(sv[1]);
	}
	close(sv[1]);
	if (pid < 0) {
		close(sv[0]);
		return -1;
	}
	spare.pid = pid;
	spare.sock = sv[0];
	return 0;
}

/* Give a request (@len bytes of @msg, @fds) to the spare N, a new one
 * if there is none or it died idle. Returns N's pid, or -1 (errno). */
static pid_t hand_over(const char *msg, size_t len, const int *fds,
		       int nfds)
{
	int attempt, r, e = 0;
	pid_t pid;

	for (attempt = 0; attempt < 2; attempt++) {
		if (!spare.pid && make_spare() != 0)
			return -1;
		r = relay__warm_send(spare.sock, msg, len, fds, nfds);
		e = errno;
		close(spare.sock);
		pid = spare.pid;
		spare.pid = 0;
		spare.sock = -1;
		if (r == 0)
			return pid;
		/* It died while idle (reap() collects it). */
	}
	errno = e;
	return -1;
}

static const char *probe(void)
{
	static const char req[] = "R\0\0" "0\0" "0\0" "0\0" "";
	static char why[256];
	int fds[3], p[2], st, i;
	ssize_t n;
	pid_t pid;

	if (pipe2(p, O_CLOEXEC) != 0)
		return "pipe";
	fds[0] = fds[1] = open("/dev/null", O_RDWR | O_CLOEXEC);
	fds[2] = p[1];
	pid = hand_over(req, sizeof(req), fds, 3);
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
 * when wait_go): @len bytes of @msg, split into @f. */
static void request(const char *msg, size_t len, char **f, int nf,
		    int *fds, int nfds, int whole)
{
	struct kid *k = NULL;
	int i, wait_go;
	pid_t pid;

	for (i = 0; i < MAX_KIDS && !k; i++)
		if (kids[i].pid <= 0)
			k = &kids[i];
	wait_go = nf > 2 && strcmp(f[2], "1") == 0;
	/* A request cut short (or its descriptors) is refused, and so is
	 * one without an id (the probe's). */
	if (!whole || nf < 6 || nfds != (wait_go ? 4 : 3) || !k ||
	    !f[1][0]) {
		const char *e[] = { "E", nf > 1 ? f[1] : "?",
				    k ? "bad request" : "too many" };

		send_fields(e, 3, -1);
		goto out;
	}
	/* N says "S" itself, with H's pidfd. */
	pid = hand_over(msg, len, fds, nfds);
	if (pid < 0) {
		const char *e[] = { "E", f[1], strerror(errno) };

		send_fields(e, 3, -1);
		goto out;
	}
	k->pid = pid;
	snprintf(k->id, sizeof(k->id), "%s", f[1]);
out:
	for (i = 0; i < nfds; i++)
		close(fds[i]);
	/* The next one's N, now. */
	if (!spare.pid)
		(void)make_spare();
}

static void reap(void)
{
	struct signalfd_siginfo si;
	int st, i;
	pid_t p;

	while (read(sfd, &si, sizeof(si)) == (ssize_t)sizeof(si))
		;
	while ((p = waitpid(-1, &st, WNOHANG)) > 0) {
		if (p == spare.pid) {
			/* Died while idle: the next request makes one. */
			close(spare.sock);
			spare.pid = 0;
			spare.sock = -1;
			continue;
		}
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
	(void)make_spare();
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
			request(msg, (size_t)n, f, nf, fds, nfds, whole);
		} else {
			for (i = 0; i < nfds; i++)
				close(fds[i]);
		}
	}
}
