/*
 * spawn.c - start a handler process with piped stdio.
 *
 * Two paths with identical results. The common one is posix_spawn(3)
 * (glibc implements it with a CLONE_VFORK clone, so it is as cheap as a
 * process creation gets): new session, chdir, dup2 of the three pipes,
 * closefrom(3), default dispositions for every signal and an empty mask.
 * When resource limits must hold from the first instruction of the handler
 * (joining a cgroup, setting rlimits), posix_spawn has no hook for them,
 * and doing it from the parent after the spawn would race a fork bomb; so
 * that path uses vfork(2) and does the same steps plus the limits in the
 * child, calling only async-signal-safe functions, before execve. The same
 * path switches to unprivileged host credentials (req->cred) when a root
 * host runs a sandbox: after joining the cgroups (which needs root), before
 * execve. Every handler gets the highest oom_score_adj there too (written
 * before the credentials drop, so a root host's value is also the
 * handler's floor): under memory pressure the kernel kills a handler, not
 * relayd.
 *
 * A start the kernel refuses for lack of processes or memory (EAGAIN or
 * ENOMEM from the clone, or from the child before execve) fails with
 * err->code RELAY_EAGAIN: nothing ran, and the caller may try again later
 * (doc/sandbox.md, "When the system is out of processes").
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "runtime.h"

/*
 * Create a pipe whose child end is >= 3 (so dup2 onto 0..2 always clears
 * close-on-exec) and whose parent end is non-blocking. @child_reads says
 * which end the child gets. Both ends are close-on-exec.
 */
int relay__make_pipe(int *parent, int *child, bool child_reads)
{
	int fds[2], c, p;

	if (pipe2(fds, O_CLOEXEC) != 0)
		return -1;
	c = child_reads ? fds[0] : fds[1];
	p = child_reads ? fds[1] : fds[0];
	if (c < 3) {
		int d = fcntl(c, F_DUPFD_CLOEXEC, 3);

		close(c);
		if (d < 0) {
			close(p);
			return -1;
		}
		c = d;
	}
	if (fcntl(p, F_SETFL, fcntl(p, F_GETFL) | O_NONBLOCK) != 0) {
		close(p);
		close(c);
		return -1;
	}
	*parent = p;
	*child = c;
	return 0;
}

/*
 * The descriptors the child gets from fd 3 on, in this order: keep_fd,
 * args_fd, seccomp_fd, info_fd (those set). Their sources are >= 10 in
 * the parent (callers dup them there), so no dup2 meets its own source.
 * How many.
 */
static int passed_fds(const relay__spawn_req *req, int out[4])
{
	int n = 0;

	if (req->keep_fd >= 0)
		out[n++] = req->keep_fd;
	if (req->args_fd >= 0)
		out[n++] = req->args_fd;
	if (req->seccomp_fd >= 0)
		out[n++] = req->seccomp_fd;
	if (req->info_fd >= 0)
		out[n++] = req->info_fd;
	return n;
}

static int spawn_posix(const relay__spawn_req *req, const int cfd[3],
		       pid_t *pid)
{
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	sigset_t none, all;
	int rc, i, n, pass[4];

	sigemptyset(&none);
	sigfillset(&all);
	rc = posix_spawn_file_actions_init(&fa);
	if (rc != 0)
		return rc;
	rc = posix_spawnattr_init(&at);
	if (rc != 0) {
		posix_spawn_file_actions_destroy(&fa);
		return rc;
	}
	for (i = 0; i < 3 && rc == 0; i++)
		rc = posix_spawn_file_actions_adddup2(&fa, cfd[i], i);
	n = passed_fds(req, pass);
	for (i = 0; i < n && rc == 0; i++)
		rc = posix_spawn_file_actions_adddup2(&fa, pass[i], 3 + i);
	if (rc == 0)
		rc = posix_spawn_file_actions_addclosefrom_np(&fa, 3 + n);
	if (rc == 0 && req->cwd)
		rc = posix_spawn_file_actions_addchdir_np(&fa, req->cwd);
	if (rc == 0)
		rc = posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSID |
					      POSIX_SPAWN_SETSIGMASK |
					      POSIX_SPAWN_SETSIGDEF);
	if (rc == 0)
		rc = posix_spawnattr_setsigmask(&at, &none);
	if (rc == 0)
		rc = posix_spawnattr_setsigdefault(&at, &all);
	if (rc == 0)
		rc = posix_spawn(pid, req->path, &fa, &at, req->argv,
				 req->envp);
	posix_spawnattr_destroy(&at);
	posix_spawn_file_actions_destroy(&fa);
	return rc;
}

int relay__spawn_memfd(const char *name, const void *data, size_t len)
{
	size_t off = 0;
	int fd, out = -1, e = 0;

	fd = memfd_create(name, MFD_CLOEXEC);
	if (fd < 0)
		return -1;
	while (off < len) {
		ssize_t w = write(fd, (const char *)data + off, len - off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			e = w < 0 ? errno : EIO;
			break;
		}
		off += (size_t)w;
	}
	if (!e && lseek(fd, 0, SEEK_SET) != 0)
		e = errno;
	/* Never at 3..5, where a spawn puts the descriptors it passes. */
	if (!e && (out = fcntl(fd, F_DUPFD_CLOEXEC, 10)) < 0)
		e = errno;
	close(fd);
	errno = e;
	return out;
}

int relay__pipes_give(const int *fds, size_t n, const relay__cred *cred)
{
	size_t i;

	for (i = 0; cred && cred->set && i < n; i++)
		if (fds[i] >= 0 && fchown(fds[i], cred->uid, cred->gid) != 0)
			return -1;
	return 0;
}

/* Why the vfork child failed: errno, and whether it was the need_dir
 * check (so the parent can say which directory and uid). */
struct child_fail {
	int err;
	int dir_denied;
};

/*
 * The vfork child. Shares the parent's memory until execve, so it touches
 * nothing but its stack and *fail; signal dispositions are per process
 * (no CLONE_SIGHAND), so resetting them here leaves the parent's alone.
 */
static void __attribute__((noreturn))
vfork_child(const relay__spawn_req *req, const int cfd[3],
	    volatile struct child_fail *fail)
{
	struct sigaction sa;
	sigset_t none;
	unsigned int first;
	int sig, i, e, n, pass[4];

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_DFL;
	for (sig = 1; sig < NSIG; sig++)
		if (sig != SIGKILL && sig != SIGSTOP)
			(void)sigaction(sig, &sa, NULL);
	if (setsid() < 0)
		goto fail;
	if (req->oom_adj) {
		int fd = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);

		/* Best effort: a /proc without the file (or a host that
		 * forbids raising it) leaves the inherited value. */
		if (fd >= 0) {
			(void)write(fd, RELAY__RT_OOM_SCORE_ADJ,
				    sizeof(RELAY__RT_OOM_SCORE_ADJ) - 1);
			close(fd);
		}
	}
	e = req->limits ? relay__limits_child(req->limits) : 0;
	if (e != 0) {
		errno = e;
		goto fail;
	}
	/*
	 * Drop root last: the cgroup.procs writes above need it. Groups
	 * first, then gid, then uid. Raw system calls: glibc's wrappers
	 * broadcast the change to every thread of the process, and in a
	 * vfork child that would be the parent's threads.
	 */
	if (req->cred && req->cred->set) {
		gid_t g = req->cred->gid;

		/* The stdio pipes are the child's: a handler may reopen them
		 * (/dev/stdin is /proc/self/fd/0), which checks the pipe's
		 * owner, and root's pipes would refuse the sandbox user. */
		if (relay__pipes_give(cfd, 3, req->cred) != 0 ||
		    syscall(SYS_setgroups, 1, &g) != 0 ||
		    syscall(SYS_setresgid, g, g, g) != 0 ||
		    syscall(SYS_setresuid, req->cred->uid, req->cred->uid,
			    req->cred->uid) != 0)
			goto fail;
		if (req->need_dir &&
		    access(req->need_dir, R_OK | X_OK) != 0) {
			fail->dir_denied = 1;
			goto fail;
		}
	}
	for (i = 0; i < 3; i++)
		if (dup2(cfd[i], i) < 0)
			goto fail;
	n = passed_fds(req, pass);
	for (i = 0; i < n; i++)
		if (dup2(pass[i], 3 + i) < 0)
			goto fail;
	if (req->cwd && chdir(req->cwd) != 0)
		goto fail;
	first = (unsigned int)(3 + n);
	if (syscall(SYS_close_range, first, ~0u, 0u) != 0)
		for (i = (int)first; i < 1024; i++)
			(void)close(i);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	execve(req->path, req->argv, req->envp);
fail:
	fail->err = errno ? errno : EINVAL;
	_exit(127);
}

static int spawn_vfork(const relay__spawn_req *req, const int cfd[3],
		       pid_t *pid, volatile struct child_fail *fail)
{
	sigset_t all, old;
	pid_t p;

	/* No handler of the host may run in the shared-memory child. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	p = vfork();
	if (p == 0)
		vfork_child(req, cfd, fail);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (p < 0)
		return errno;
	if (fail->err != 0) {
		while (waitpid(p, NULL, 0) < 0 && errno == EINTR)
			;
		return fail->err;
	}
	*pid = p;
	return 0;
}

/* The longest dir-denied text: it fits relay_error.text and the 150 bytes
 * the run path keeps of a start error, so no copy ever cuts it. */
#define DIR_DENIED_MAX 150

/*
 * "app directory DIR is not readable by the sandbox user (uid N): ERR",
 * code RELAY_EACCESS. A DIR too long for DIR_DENIED_MAX keeps its start
 * and its end (where the app name is) around "...": the text is never cut.
 * The callers say how to fix it, in their own terms (the relayctl option,
 * the daemon's settings).
 */
static void dir_denied_error(relay_error *err, const char *dir, long uid,
			     int e)
{
	char shown[DIR_DENIED_MAX + 1];
	const char *why = strerror(e);
	size_t len = strlen(dir), fixed, room;
	int n;

	n = snprintf(NULL, 0, "app directory  is not readable by the sandbox "
		     "user (uid %ld): %s", uid, why);
	fixed = n > 0 ? (size_t)n : 0;
	room = fixed + 16 < DIR_DENIED_MAX ? DIR_DENIED_MAX - fixed : 16;
	if (len <= room) {
		memcpy(shown, dir, len + 1);
	} else {
		size_t head = (room - 3) / 3, tail = room - 3 - head;

		memcpy(shown, dir, head);
		memcpy(shown + head, "...", 3);
		memcpy(shown + head + 3, dir + len - tail, tail + 1);
	}
	relay__error_set(err, RELAY_EACCESS, NULL, 0, 0, "app directory %s is "
			 "not readable by the sandbox user (uid %ld): %s",
			 shown, uid, why);
}

int relay__spawn(const relay__spawn_req *req, relay_proc *proc,
		 relay_error *err)
{
	int pfd[3] = { -1, -1, -1 }, cfd[3] = { -1, -1, -1 };
	volatile struct child_fail fail = { 0, 0 };
	pid_t pid = -1;
	int rc = RELAY_EBACKEND, e, i;

	for (i = 0; i < 3; i++) {
		if (relay__make_pipe(&pfd[i], &cfd[i], i == 0) != 0) {
			relay__error_set(err, RELAY_EBACKEND, NULL, 0, 0,
					 "pipe: %s", strerror(errno));
			goto done;
		}
	}
	if ((req->limits && relay__limits_inv_needed(req->limits)) ||
	    (req->cred && req->cred->set) || req->oom_adj)
		e = spawn_vfork(req, cfd, &pid, &fail);
	else
		e = spawn_posix(req, cfd, &pid);
	if (e != 0 && fail.dir_denied) {
		dir_denied_error(err, req->need_dir, (long)req->cred->uid, e);
		goto done;
	}
	if (e != 0) {
		/* The kernel's refusal (no process or memory left for it) is
		 * told apart: the caller may try again later. */
		relay__error_set(err, e == EAGAIN || e == ENOMEM ? RELAY_EAGAIN
				 : RELAY_EBACKEND, NULL, 0, 0,
				 "spawn %s: %s", req->argv[0], strerror(e));
		goto done;
	}
	proc->pid = pid;
	proc->stdin_fd = pfd[0];
	proc->stdout_fd = pfd[1];
	proc->stderr_fd = pfd[2];
	pfd[0] = pfd[1] = pfd[2] = -1;
	rc = 0;
done:
	for (i = 0; i < 3; i++) {
		if (pfd[i] >= 0)
			close(pfd[i]);
		if (cfd[i] >= 0)
			close(cfd[i]);
	}
	return rc;
}

/*
 * SIGPIPE is process-wide and the host may not ignore it, so block it on
 * this thread for the write; if the write produced one (EPIPE) and none was
 * pending before, consume it with a zero-timeout sigtimedwait before
 * unblocking, so it is never delivered (the technique of git and curl).
 */
ssize_t relay__write_nosigpipe(int fd, const void *buf, size_t len)
{
	sigset_t pipe_set, old, pending;
	bool was_pending;
	ssize_t n;
	int e;

	sigemptyset(&pipe_set);
	sigaddset(&pipe_set, SIGPIPE);
	sigpending(&pending);
	was_pending = sigismember(&pending, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
	n = write(fd, buf, len);
	e = errno;
	if (n < 0 && e == EPIPE && !was_pending) {
		struct timespec zero = { 0, 0 };

		while (sigtimedwait(&pipe_set, NULL, &zero) < 0 &&
		       errno == EINTR)
			;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	errno = e;
	return n;
}
