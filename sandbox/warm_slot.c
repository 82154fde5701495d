/*
 * warm_slot.c - relay-warm-slot.so, the loop of an invocation slot N of
 * the python3 warm server, in C (doc/sandbox.md, "Warm sandboxes").
 *
 * relay_warm_server.py loads it with ctypes inside the warm sandbox (it is
 * bound read-only at /run/relay-warm-slot.so), sets the slot up (its
 * mounts, signal dispositions, import caches) and calls
 * relay_warm_slot_run(), which never returns in N: it runs the slot's
 * invocations one at a time until relayd hangs up. It returns in each
 * invocation process H it forks, which goes on in Python, the handler's
 * interpreter. Only libc; no Python API, so any python3 can load it.
 *
 * Why C: every fork write-protects N's pages again, so the Python of N's
 * loop copied about 200 pages per invocation and ran 0.2 ms of
 * interpreter; H's set-up before its request (capability drop, closing
 * N's descriptors, the request itself, rlimits and stdio) was Python too.
 * Here N touches a few pages of its own per invocation and H returns to
 * Python with its request in hand (doc/perf/warm.md).
 *
 * The protocol on relayd's control socket (fd 3) and on the socket pair
 * to the server is warm_proto.h's; this file speaks it for N.
 * Per request, as the Python loop did: "B id" to the server, the request
 * (bytes and descriptors as received) to the waiting H, "S id" + H's
 * pidfd to relayd; when H exits every process left in the namespace is
 * killed and reaped, signals it queued on N dropped, "I id" goes to the
 * server and "X id status" to relayd; then /tmp and /dev are mounted
 * fresh again if the invocation changed them (warm_fresh.h), and the
 * next H is forked. A slot whose resource limits the invocation lowered
 * exits instead (struct attrs).
 *
 * Thread-safety: none needed; N and H are single-threaded processes.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "warm_fresh.h"
#include "warm_proto.h"
#include "warm_seccomp.h"

#define SLOT_MSG_MAX (1u << 20)   /* a request, as the Python loop read */
#define SLOT_FIELDS_MIN 6         /* R id wait_go as nproc handler */
#define SLOT_ID_MAX 32            /* relayd's ids are decimal numbers */

/* What an invocation can have changed in a scratch mount: an entry made
 * or removed changes the directory's mtime, a chmod, chown or xattr its
 * ctime, a mount over it the inode; and what a fresh mount has (mode,
 * owner). */
struct stamp {
	int ok;
	struct timespec mtime, ctime;
	ino_t ino;
	mode_t mode;
	uid_t uid;
	gid_t gid;
};

struct spare {
	pid_t pid;      /* 0: none */
	int pidfd;
	int sock;       /* N's end of the pair H waits on */
};

int relay_warm_slot_run(const struct relay_warm_slot *a);
long relay_warm_slot_request(const char **msg);
int relay_warm_slot_proto_version(void);
size_t relay_warm_slot_args_size(void);

static char *msgbuf;            /* the request (N's, then H's copy) */
static int h_sock = -1;         /* in H: where its request comes from */
static sigset_t h_mask;         /* the signal mask H starts with */
static int last_pid_fd = -1;    /* in N: the namespace's ns_last_pid */
static struct relay__warm_dev dev;  /* in N: bwrap's /dev, the slot's */

/* Fields @f (each NUL-terminated on the wire), with descriptor @fd (or
 * none when negative). Best effort: a peer that is gone is noticed by
 * the next read. */
static void send_fields(int sock, const char *const *f, int n, int fd)
{
	char buf[1024];
	size_t len = 0, l;
	int i;

	for (i = 0; i < n; i++) {
		l = strlen(f[i]);
		if (l >= sizeof(buf) - len)
			return;   /* not sent: ids are short (checked on receipt) */
		memcpy(buf + len, f[i], l + 1);
		len += l + 1;
	}
	(void)relay__warm_send(sock, buf, len, &fd, fd >= 0 ? 1 : 0);
}

/* Receive a request into msgbuf (relay__warm_recv()). */
static ssize_t recv_msg(int sock, int *fds, int *nfds, int *whole)
{
	return relay__warm_recv(sock, msgbuf, SLOT_MSG_MAX, fds, nfds, whole);
}

static void close_fds(const int *fds, int n)
{
	int i;

	for (i = 0; i < n; i++)
		close(fds[i]);
}

/* Split @len bytes of @buf into NUL-terminated fields. Returns their
 * number (at most @max). */
static int split_fields(char *buf, size_t len, const char **f, int max)
{
	size_t i = 0;
	int n = 0;

	while (i < len && n < max) {
		char *end = memchr(buf + i, '\0', len - i);

		if (!end)
			break;
		f[n++] = buf + i;
		i = (size_t)(end - buf) + 1;
	}
	return n;
}

/* A message on N's stderr (the server's: relayd logs it) and exit. */
static void __attribute__((noreturn)) die(int code, const char *what)
{
	dprintf(2, "relay: warm slot: %s: %s\n", what, strerror(errno));
	_exit(code);
}

/* In N: tell the server this slot cannot run ("F reason") and exit. */
static void __attribute__((noreturn)) fail(int srv, const char *what,
					   int e)
{
	char why[160];
	int n;

	n = snprintf(why, sizeof(why), "F%c%s: %s", 0, what, strerror(e));
	if (n >= (int)sizeof(why))
		n = (int)sizeof(why) - 1;
	(void)relay__warm_send(srv, why, (size_t)n + 1, NULL, 0);
	_exit(255);
}

/* In N: reap until @h exits (orphans too); returns its wait status. */
static int wait_h(pid_t h)
{
	int st;

	for (;;) {
		pid_t p = waitpid(-1, &st, 0);

		if (p == h)
			return st;
		if (p < 0 && errno != EINTR)
			return 255 << 8;
	}
}

/* In N, after H: no process of the invocation survives it. From a pid
 * 1, kill(-1) reaches every other process of the namespace; repeat until
 * there is none (a fork may race a round). Orphans are N's children. */
static void kill_leftovers(void)
{
	int st;

	while (kill(-1, SIGKILL) == 0)
		if (waitpid(-1, &st, 0) < 0 && errno == ECHILD)
			break;
	while (waitpid(-1, &st, WNOHANG) > 0)
		;
}

static void take_stamp(const struct relay_warm_slot *a, struct stamp *s)
{
	struct stat st;
	int i;

	memset(s, 0, sizeof(*s) * RELAY_WARM_SLOT_SCRATCH_MAX);
	for (i = 0; i < a->nscratch; i++) {
		if (stat(a->scratch[i], &st) != 0)
			continue;
		s[i].ok = 1;
		s[i].mtime = st.st_mtim;
		s[i].ctime = st.st_ctim;
		s[i].ino = st.st_ino;
		s[i].mode = st.st_mode;
		s[i].uid = st.st_uid;
		s[i].gid = st.st_gid;
	}
}

static int same_stamp(const struct stamp *x, const struct stamp *y)
{
	return x->ok == y->ok && x->mtime.tv_sec == y->mtime.tv_sec &&
	       x->mtime.tv_nsec == y->mtime.tv_nsec &&
	       x->ctime.tv_sec == y->ctime.tv_sec &&
	       x->ctime.tv_nsec == y->ctime.tv_nsec && x->ino == y->ino &&
	       x->mode == y->mode && x->uid == y->uid && x->gid == y->gid;
}

/* Are the scratch mounts as they were mounted (@was)? Times alone are
 * not enough: with coarse timestamps an entry made in the mount's tick
 * leaves them unchanged, so each must also be empty, without xattrs. */
static int scratch_fresh(const struct relay_warm_slot *a,
			 const struct stamp *was)
{
	struct stamp now[RELAY_WARM_SLOT_SCRATCH_MAX];
	int i;

	take_stamp(a, now);
	for (i = 0; i < a->nscratch; i++) {
		if (!same_stamp(&now[i], &was[i]))
			return 0;
		if (a->scratch_mode[i] >= 0 && !relay__warm_dir_pristine(a->scratch[i]))
			return 0;
	}
	return 1;
}

/* A fresh, empty tmpfs on each scratch directory the slot mounted, its
 * previous one detached, with the mode and size bwrap gave the original. */
static void remount_scratch(const struct relay_warm_slot *a)
{
	char opt[64];
	int i;

	for (i = 0; i < a->nscratch; i++) {
		if (a->scratch_mode[i] < 0)
			continue;
		/* The size of the one it replaces (bwrap's, copied). */
		if (relay__warm_tmpfs_opts(a->scratch[i],
					   (unsigned)a->scratch_mode[i], opt,
					   sizeof(opt)) != 0)
			die(255, "statfs scratch");
		if (umount2(a->scratch[i], MNT_DETACH) != 0)
			die(255, "umount scratch");
		if (mount("tmpfs", a->scratch[i], "tmpfs", MS_NOSUID | MS_NODEV,
			  opt) != 0)
			die(255, "mount scratch");
	}
}

/*
 * What an invocation could change in N itself and so in every later H
 * forked from it. H has N's uid, which is enough to lower N's resource
 * limits with prlimit(). Its nice value, scheduling policy, I/O priority
 * and CPU affinity the kernel keeps from H (N holds a capability H has
 * not: cap_safe_nice), and N is not dumpable, so /proc/1's oom_score_adj,
 * coredump_filter and the like are not H's to write, nor is N's memory
 * to ptrace. N takes this snapshot when it starts; a slot whose limits
 * changed retires after the invocation (N cannot raise a hard limit back
 * without CAP_SYS_RESOURCE) and the server makes a fresh one.
 */
struct attrs {
	struct rlimit rl[RLIM_NLIMITS];
};

static int take_attrs(struct attrs *t)
{
	int i;

	memset(t, 0, sizeof(*t));
	for (i = 0; i < RLIM_NLIMITS; i++)
		if (getrlimit((__rlimit_resource_t)i, &t->rl[i]) != 0)
			return -1;
	return 0;
}

static int same_attrs(const struct attrs *was)
{
	struct attrs now;

	return take_attrs(&now) == 0 && memcmp(&now, was, sizeof(now)) == 0;
}

/* In N, after an invocation: signals it sent N stay pending (N blocks
 * them all) and would count against the user's queue; drop them. */
static void drain_signals(void)
{
	static const struct timespec zero = { 0, 0 };
	sigset_t all;

	sigfillset(&all);
	while (sigtimedwait(&all, NULL, &zero) > 0)
		;
}

/* In N, before the next H: the namespace's last pid back to 1, so H is
 * pid 2 and its children 3, 4, ... as in a cold sandbox (else a child's
 * pid would tell how many processes earlier invocations made). N has
 * CAP_SYS_ADMIN over the namespace; where the sysctl cannot be written
 * (@fd < 0) only H's own pid is fixed (set_tid). */
static void reset_last_pid(int fd)
{
	if (fd >= 0)
		(void)pwrite(fd, "1", 1, 0);
}

/* In a new H: what needs no request. Its own session; none of N's
 * descriptors but its socket (relayd's control socket and the server's
 * pair among them); no capability left. */
static void h_begin(void)
{
	struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3,
						0 };
	struct __user_cap_data_struct data[2];
	int fd;

	/* A signal N got while it blocked them all stays N's: a fork
	 * starts with none pending. */
	sigprocmask(SIG_SETMASK, &h_mask, NULL);
	setsid();
	if (h_sock != 3)
		fd = dup3(h_sock, 3, O_CLOEXEC);
	else
		fd = 3;
	if (fd != 3)
		die(1, "dup3");
	h_sock = 3;
	if (syscall(SYS_close_range, 4u, ~0u, 0) != 0) {
		long max = sysconf(_SC_OPEN_MAX);

		for (fd = 4; fd < (max > 0 ? max : 1024); fd++)
			close(fd);
	}
	/* N is not dumpable (struct attrs) and a fork inherits that: H is,
	 * as a cold handler (its /proc/self is its own). Then its own user
	 * namespace: new keyrings, no capability over N's namespaces. */
	prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
	if (relay__warm_own_userns() != 0)
		die(1, "user namespace");
	memset(data, 0, sizeof(data));
	if (syscall(SYS_capset, &hdr, data) != 0)
		die(1, "capset");
	prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
	/* Set up: the rest of the sandbox's profile, as a cold handler
	 * has it (no mounts, no user namespace; warm_seccomp.c). */
	if (relay__warm_seccomp_handler() != 0)
		die(1, "seccomp");
}

/*
 * In N: fork the next H, pid 2 of the namespace as in a cold sandbox, in
 * its own IPC namespace (SysV objects and POSIX queues die with it).
 * Returns 0 in H (set up by h_begin()), 1 in N with *s filled, -1 on
 * error (errno).
 */
static int fork_h(struct spare *s)
{
	struct clone_args ca;
	pid_t tid = 2;
	int sv[2], pidfd = -1, e;
	long pid;

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0)
		return -1;
	reset_last_pid(last_pid_fd);
	memset(&ca, 0, sizeof(ca));
	ca.flags = CLONE_PIDFD | CLONE_NEWIPC;
	ca.pidfd = (uint64_t)(uintptr_t)&pidfd;
	ca.exit_signal = SIGCHLD;
	ca.set_tid = (uint64_t)(uintptr_t)&tid;
	ca.set_tid_size = 1;
	pid = syscall(SYS_clone3, &ca, sizeof(ca));
	if (pid < 0 && errno == EEXIST) {
		ca.set_tid = 0;
		ca.set_tid_size = 0;
		pid = syscall(SYS_clone3, &ca, sizeof(ca));
	}
	if (pid == 0) {
		close(sv[0]);
		h_sock = sv[1];
		h_begin();
		return 0;
	}
	e = errno;
	close(sv[1]);
	if (pid < 0) {
		close(sv[0]);
		errno = e;
		return -1;
	}
	s->pid = (pid_t)pid;
	s->pidfd = pidfd;
	s->sock = sv[0];
	return 1;
}

/* In N: a spare that was never used (it died, or the slot is done). */
static void drop_spare(struct spare *s)
{
	int st;

	if (!s->pid)
		return;
	close(s->sock);
	close(s->pidfd);
	while (waitpid(s->pid, &st, 0) < 0 && errno == EINTR)
		;
	s->pid = 0;
}

/*
 * In N: give the request (msgbuf[0..len), @fds) to the waiting H, a new
 * one if there is none or it died, and tell relayd "S id". Returns 1
 * with *h, 0 in a newly forked H, -1 with errno. @fds are closed.
 */
static int hand_over(struct spare *sp, size_t len, const int *fds, int nfds,
		     const char *rid, int ctl, pid_t *h)
{
	const char *f[2] = { "S", rid };
	int attempt, r = 1, e = 0;

	for (attempt = 0; attempt < 2; attempt++) {
		if (!sp->pid) {
			r = fork_h(sp);
			if (r <= 0)
				break;
		}
		r = relay__warm_send(sp->sock, msgbuf, len, fds, nfds);
		e = errno;
		close(sp->sock);
		sp->sock = -1;
		if (r == 0) {
			r = 1;
			break;
		}
		/* The spare died while the slot was idle. */
		close(sp->pidfd);
		while (waitpid(sp->pid, NULL, 0) < 0 && errno == EINTR)
			;
		sp->pid = 0;
		errno = e;
	}
	e = errno;
	if (r == 0)
		return 0;
	close_fds(fds, nfds);
	if (r < 0) {
		errno = e;
		return -1;
	}
	send_fields(ctl, f, 2, sp->pidfd);
	close(sp->pidfd);
	*h = sp->pid;
	sp->pid = 0;
	return 1;
}

/* In N: the probe. Can it make what an invocation needs? Returns 0 in
 * the probe's H, 1 in N; exits when it cannot. */
static int probe(struct spare *sp, int srv)
{
	static const char req[] = "R\0\0" "0\0" "0\0" "0\0" "";
	char why[64];
	int null[3], i, r, st;

	r = fork_h(sp);
	if (r == 0)
		return 0;
	if (r < 0)
		fail(srv, "clone3", errno);
	for (i = 0; i < 3; i++)
		null[i] = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (null[0] < 0 || null[1] < 0 || null[2] < 0)
		fail(srv, "open /dev/null", errno);
	r = relay__warm_send(sp->sock, req, sizeof(req), null, 3);
	close_fds(null, 3);
	close(sp->sock);
	close(sp->pidfd);
	if (r != 0)
		fail(srv, "probe request", errno);
	st = wait_h(sp->pid);
	sp->pid = 0;
	if (relay__warm_exit_code(st) != 0) {
		r = snprintf(why, sizeof(why), "F%cprobe invocation exited %d",
			     0, relay__warm_exit_code(st));
		(void)relay__warm_send(srv, why, (size_t)r + 1, NULL, 0);
		_exit(255);
	}
	return 1;
}

/*
 * Run the slot: the probe, then one invocation at a time, each in a
 * fresh H forked before its request comes. Returns 0, only in an H
 * (with its capabilities dropped and only its request socket left, as
 * fd 3): the caller goes on as that invocation, calls
 * relay_warm_slot_request() and exits. In N it never returns: it exits
 * 0 when relayd closes the control socket, 255 when the slot cannot run
 * (said to the server as "F reason").
 */
int relay_warm_slot_run(const struct relay_warm_slot *a)
{
	static const char free_msg[] = "I\0";
	struct stamp stamp[RELAY_WARM_SLOT_SCRATCH_MAX];
	struct spare sp = { 0, -1, -1 };
	struct attrs attrs;
	int retire;
	const char *f[SLOT_FIELDS_MIN + 1];
	char word[48];
	int fds[RELAY__WARM_MAX_FDS], nfds, nf, want, st, whole;
	ssize_t n;
	pid_t h;

	if (a->nscratch < 0 || a->nscratch > RELAY_WARM_SLOT_SCRATCH_MAX)
		_exit(255);
	/*
	 * N blocks every signal: it runs no Python from here on, so a
	 * signal with a Python handler (SIGINT has one) would only leave
	 * the interpreter's "pending" mark in N's memory, and every H
	 * forked after would raise KeyboardInterrupt before its handler.
	 * An invocation can signal N (same uid, pid 1 of its namespace).
	 */
	{
		sigset_t all;

		sigfillset(&all);
		sigprocmask(SIG_BLOCK, &all, &h_mask);
	}
	/* Not dumpable: /proc/1 is then root's, not H's to write, and N
	 * cannot be ptraced by H (struct attrs). */
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0)
		fail(a->srv_fd, "prctl", errno);
	if (take_attrs(&attrs) != 0)
		fail(a->srv_fd, "process attributes", errno);
	/* The slot's own /dev, as bwrap made it (warm_fresh.h). */
	if (relay__warm_dev_learn(&dev) != 0 ||
	    relay__warm_dev_build(&dev, 0) != 0 ||
	    relay__warm_dev_stamp(&dev) != 0)
		fail(a->srv_fd, "mount /dev", errno);
	last_pid_fd = open("/proc/sys/kernel/ns_last_pid", O_WRONLY | O_CLOEXEC);
	msgbuf = malloc(SLOT_MSG_MAX);
	if (!msgbuf)
		fail(a->srv_fd, "malloc", errno);
	if (probe(&sp, a->srv_fd) == 0)
		return 0;
	/* The probe's end (its SIGCHLD) must not stay pending in N either:
	 * a slot's first invocation would see it in /proc/1/status. */
	drain_signals();
	if (fork_h(&sp) == 0)
		return 0;
	if (!sp.pid)
		fail(a->srv_fd, "clone3", errno);
	take_stamp(a, stamp);
	(void)relay__warm_send(a->srv_fd, free_msg, sizeof(free_msg), NULL, 0);
	for (;;) {
		/* Every idle slot waits on relayd's socket; the kernel
		 * gives each request to one of them. */
		n = recv_msg(a->ctl_fd, fds, &nfds, &whole);
		if (n <= 0) {
			drop_spare(&sp);
			_exit(n == 0 ? 0 : 255);   /* relayd closed it */
		}
		nf = split_fields(msgbuf, (size_t)n, f, SLOT_FIELDS_MIN + 1);
		/* relayd's ids are numbers: one that is not cannot be
		 * answered, so the request is dropped (its wedge bound
		 * runs it cold). */
		if (nf < 2 || strcmp(f[0], "R") != 0 || !f[1][0] ||
		    strlen(f[1]) > SLOT_ID_MAX) {
			close_fds(fds, nfds);
			continue;
		}
		want = nf >= SLOT_FIELDS_MIN && strcmp(f[2], "1") == 0 ? 4 : 3;
		if (!whole || nf < SLOT_FIELDS_MIN || nfds != want) {
			const char *e[3] = { "E", f[1], word };

			/* Refused before the waiting H is touched: it
			 * stays the spare for the next request. */
			close_fds(fds, nfds);
			if (!whole || nf < SLOT_FIELDS_MIN)
				snprintf(word, sizeof(word), "malformed request");
			else
				snprintf(word, sizeof(word),
					 "expected %d descriptors, got %d",
					 want, nfds);
			send_fields(a->ctl_fd, e, 3, -1);
			continue;
		}
		{
			const char *b[2] = { "B", f[1] };

			send_fields(a->srv_fd, b, 2, -1);
		}
		switch (hand_over(&sp, (size_t)n, fds, nfds, f[1], a->ctl_fd,
				  &h)) {
		case 0:
			return 0;
		case 1: {
			const char *x[3] = { "X", f[1], word };

			st = wait_h(h);
			kill_leftovers();
			drain_signals();
			retire = !same_attrs(&attrs);
			/* Free again before relayd hears of the end, so the
			 * server counts it idle before the next request. */
			{
				const char *i[2] = { "I", f[1] };

				send_fields(a->srv_fd, i, 2, -1);
			}
			snprintf(word, sizeof(word), "%d",
				 relay__warm_exit_code(st) << 8);
			send_fields(a->ctl_fd, x, 3, -1);
			/* Changed by the invocation: the server makes a
			 * fresh slot (it counted this one free, then sees
			 * it exit). */
			if (retire)
				_exit(0);
			/* Nothing of the invocation runs any more: its
			 * files are cleaned up after relayd heard of its end
			 * (off its time), before N reads another request. */
			if (!scratch_fresh(a, stamp)) {
				remount_scratch(a);
				take_stamp(a, stamp);
			}
			if (relay__warm_dev_changed(&dev) &&
			    (relay__warm_dev_build(&dev, 1) != 0 ||
			     relay__warm_dev_stamp(&dev) != 0))
				die(255, "mount /dev");
			break;
		}
		default: {
			const char *e[3] = { "E", f[1], strerror(errno) };
			const char *i[2] = { "I", f[1] };

			send_fields(a->ctl_fd, e, 3, -1);
			send_fields(a->srv_fd, i, 2, -1);
			break;
		}
		}
		/* The next H, forked now that nothing of this one is left
		 * in the namespace (nor of its request in N's memory);
		 * meanwhile the slots waiting longer take requests. On
		 * failure it is made when a request comes. */
		memset(msgbuf, 0, (size_t)n);
		if (fork_h(&sp) == 0)
			return 0;
	}
}

/*
 * In H: wait for the request, then wait for relayd's "g" on the go pipe
 * when it sent one (H is in the invocation's cgroups), set the rlimits
 * and take the invocation's stdin, stdout and stderr as fds 0-2. Returns
 * the request's length with *msg its fields, NUL-separated (R id wait_go
 * as nproc handler env...); 0 when there is nothing to run (N retired
 * this H, or the probe); exits 255 when the go pipe closes without "g",
 * 1 on a malformed request. *msg stays valid for the life of H.
 */
long relay_warm_slot_request(const char **msg)
{
	const char *f[SLOT_FIELDS_MIN + 1];
	int fds[RELAY__WARM_MAX_FDS], nfds, nf, i, whole;
	struct rlimit rl;
	unsigned long long v;
	ssize_t n, r;
	char c, *end;

	n = recv_msg(h_sock, fds, &nfds, &whole);
	close(h_sock);
	h_sock = -1;
	if (n <= 0)
		_exit(n == 0 ? 0 : 1);
	if (!whole)
		_exit(1);
	nf = split_fields(msgbuf, (size_t)n, f, SLOT_FIELDS_MIN + 1);
	if (nf < SLOT_FIELDS_MIN)
		_exit(1);
	if (strcmp(f[2], "1") == 0) {
		int go_r;

		if (nfds < 1)
			_exit(1);
		go_r = fds[--nfds];
		do
			r = read(go_r, &c, 1);
		while (r < 0 && errno == EINTR);
		if (r != 1 || c != 'g')
			_exit(255);
		close(go_r);
	}
	for (i = 0; i < 2; i++) {
		errno = 0;
		v = strtoull(f[3 + i], &end, 10);
		if (errno || *end || end == f[3 + i])
			_exit(1);
		if (!v)
			continue;
		rl.rlim_cur = rl.rlim_max = (rlim_t)v;
		if (setrlimit(i == 0 ? RLIMIT_AS : RLIMIT_NPROC, &rl) != 0)
			die(1, "setrlimit");
	}
	if (f[5][0] == '\0')
		_exit(0);
	for (i = 0; i < nfds && i < 3; i++) {
		if (fds[i] == i) {
			/* Received close-on-exec: an exec app needs it. */
			if (fcntl(i, F_SETFD, 0) != 0)
				die(1, "fcntl");
			continue;
		}
		if (dup2(fds[i], i) < 0)
			die(1, "dup2");
		close(fds[i]);
	}
	*msg = msgbuf;
	return (long)n;
}

/* The warm protocol this library speaks (warm_proto.h): the server
 * refuses a library of another version. */
int relay_warm_slot_proto_version(void)
{
	return RELAY_WARM_PROTO_VERSION;
}

/* sizeof(struct relay_warm_slot), which the server's _SlotArgs must
 * match. */
size_t relay_warm_slot_args_size(void)
{
	return sizeof(struct relay_warm_slot);
}
