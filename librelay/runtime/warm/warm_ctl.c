/*
 * warm_ctl.c - the control protocol between the runtime and a warm parent
 * (the python3 server or relay-warm-exec; sandbox/warm_proto.h specifies
 * the protocol): building and sending a request, reading what the parent
 * says (Y ready, N unsupported, S started + pidfd, X exited, E lost), and
 * the watchdog that bounds the wait for an answer. warm.c owns the
 * parents' life (start, fault, retire, cap, idle eviction).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <ev.h>

#include "warm.h"
#include "warm_proto.h"

/* The pid a pidfd refers to, in our pid namespace (fdinfo "Pid:"). */
static pid_t pidfd_pid(int pidfd)
{
	char path[64], buf[1024];
	ssize_t n;
	char *p;
	int fd;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", pidfd);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	p = strstr(buf, "\nPid:");
	if (!p)
		return -1;
	return (pid_t)strtol(p + 5, NULL, 10);
}

relay_mono_us relay__warm_deadline(const warm_parent *p)
{
	const warm_req *q;
	relay_mono_us oldest = 0;

	if (p->state == P_STARTING)
		return p->spawned_at + ((uint64_t)p->w->start_timeout_ms +
					WARM_START_SLACK_MS) * 1000u;
	for (q = p->reqs; q; q = q->next)
		if (q->sent && !q->started && (!oldest || q->sent_at < oldest))
			oldest = q->sent_at;
	if (!oldest)
		return 0;
	return oldest + (uint64_t)p->w->start_timeout_ms * 1000u;
}

void relay__warm_arm_watchdog(warm_parent *p)
{
	relay_mono_us due = relay__warm_deadline(p);
	relay_mono_us now = relay_clock_mono_us(NULL);

	/* Always from the deadline, never "already armed": the bound runs
	 * from the oldest unanswered request's send, so an answer moves it
	 * on to the next one's. The timer may fire early (libev counts from
	 * its cached loop time); watchdog_cb checks again. */
	ev_timer_stop(p->loop, &p->w_watchdog);
	if (!due)
		return;
	ev_timer_set(&p->w_watchdog,
		     due > now ? (double)(due - now) / 1e6 : 0., 0.);
	ev_timer_start(p->loop, &p->w_watchdog);
}

/* Hand @q to its parent. 0, or -1 when the parent is unreachable. */
int relay__warm_req_send(warm_req *q)
{
	warm_parent *p = q->p;
	int i;

	/* The go pipe's read end goes along when the run has cgroups. */
	if (relay__warm_send(p->ctl, q->msg, q->msg_len, q->cfd,
		     q->cfd[3] >= 0 ? 4 : 3) != 0)
		return -1;
	for (i = 0; i < 4; i++)
		relay__warm_close_fd(&q->cfd[i]);
	relay__free(q->msg);
	q->msg = NULL;
	q->sent = true;
	q->sent_at = relay_clock_mono_us(NULL);
	relay__warm_arm_watchdog(p);
	return 0;
}

static warm_req *find_req(warm_parent *p, uint32_t id)
{
	warm_req *q;

	for (q = p->reqs; q; q = q->next)
		if (q->id == id)
			return q;
	return NULL;
}

void relay__warm_unlink_req(warm_parent *p, warm_req *q)
{
	warm_req **qp;

	for (qp = &p->reqs; *qp; qp = &(*qp)->next) {
		if (*qp == q) {
			*qp = q->next;
			break;
		}
	}
	p->inflight--;
	p->last_used = relay_clock_mono_us(NULL);
}

/* Split a NUL-separated message into at most @max fields. */
static int split(char *msg, size_t len, char **f, int max)
{
	size_t i = 0;
	int n = 0;

	while (i < len && n < max) {
		f[n++] = msg + i;
		i += strnlen(msg + i, len - i) + 1;
	}
	return n;
}

static void on_started(warm_parent *p, warm_req *q, int pidfd)
{
	pid_t pid = pidfd >= 0 ? pidfd_pid(pidfd) : -1;

	if (pidfd >= 0)
		close(pidfd);
	q->started = true;
	relay__warm_arm_watchdog(p);
	/* Already exited and reaped by the parent (its X is on the way):
	 * nothing to signal. It cannot be waiting for a G. */
	if (pid <= 0) {
		q->fn(RELAY__START_FORKED, 0, NULL, q->payload);
		return;
	}
	if (q->go_w >= 0) {
		int e = relay__limits_attach(q->inv, pid);

		relay__limits_spawned(q->inv);
		/* Never run a handler outside its limits: without the "g"
		 * it exits at the pipe's end. */
		if (e != 0 || write(q->go_w, "g", 1) != 1)
			kill(pid, SIGKILL);
		relay__warm_close_fd(&q->go_w);
	}
	q->pid = pid;
	relay__warm_hang_watch(p);
	q->fn(RELAY__START_FORKED, (int)pid, NULL, q->payload);
}

static int ctl_read(warm_parent *p, int max);

int relay__warm_ctl_read(warm_parent *p, int max)
{
	int rc;

	p->busy++;
	rc = ctl_read(p, max);
	if (--p->busy == 0 && p->torn) {
		relay__warm_parent_free(p);
		return -1;
	}
	return rc;
}

/*
 * One message from @p's control socket into @msg (NUL-terminated, @cap
 * bytes at most with the NUL), without waiting; its first descriptor in
 * *@fd (-1: none; any more are closed). Returns its length, 0 at EOF,
 * -1 with errno (EAGAIN: nothing waiting).
 */
static ssize_t recv_msg(warm_parent *p, char *msg, size_t cap, int *fd)
{
	union {
		char buf[CMSG_SPACE(4 * sizeof(int))];
		struct cmsghdr align;
	} u;
	struct iovec iov = { msg, cap - 1 };
	struct msghdr mh;
	struct cmsghdr *c;
	ssize_t n;

	*fd = -1;
	memset(&mh, 0, sizeof(mh));
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	mh.msg_control = u.buf;
	mh.msg_controllen = sizeof(u.buf);
	n = recvmsg(p->ctl, &mh, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
	if (n < 0)
		return -1;
	for (c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
		size_t k, nfd;

		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		nfd = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (k = 0; k < nfd; k++) {
			int x;

			memcpy(&x, CMSG_DATA(c) + k * sizeof(int), sizeof(int));
			if (*fd < 0)
				*fd = x;
			else
				close(x);
		}
	}
	if (n > 0)
		msg[n] = '\0';
	return n;
}

/* Y: @p is ready (@pidfd: its server's); send what waited for it. 0, or
 * -1 when @p faulted (freed or torn down). */
static int on_ready(warm_parent *p, int pidfd)
{
	warm_req *q;

	p->server_pid = pidfd >= 0 ? pidfd_pid(pidfd) : 0;
	relay__warm_close_fd(&pidfd);
	p->state = P_READY;
	relay__warm_count_states(p->w);
	relay__warm_backoff_note(p->w, p->app, false);
	relay__log(&p->w->rt->logger, RELAY_LOG_DEBUG, "RELAY-RT06",
		   "runtime: warm parent for app %s ready", p->app);
	for (q = p->reqs; q; q = q->next) {
		if (!q->sent && relay__warm_req_send(q) != 0) {
			relay__warm_parent_fault(p, RELAY_WARM_FAIL_CRASHED,
						 "control socket write failed");
			return -1;
		}
	}
	/* Ready: from now on only unanswered requests have a deadline
	 * (none when idle). */
	relay__warm_arm_watchdog(p);
	return 0;
}

/* X or E: @q is over; tell its run (which may free @p's last request). */
static void on_over(warm_parent *p, warm_req *q, relay__start_event ev,
		    int value, const char *detail)
{
	relay__start_fn fn = q->fn;
	void *payload = q->payload;

	relay__warm_unlink_req(p, q);
	relay__warm_req_free(q);
	relay__warm_arm_watchdog(p);
	fn(ev, value, detail, payload);
}

static int ctl_read(warm_parent *p, int max)
{
	char msg[4096];
	char *f[4];
	int nf, i;

	for (i = 0; i < max && !p->dead; i++) {
		int fd;
		ssize_t n = recv_msg(p, msg, sizeof(msg), &fd);
		warm_req *q;

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return 0;
		if (n <= 0) {
			relay__warm_close_fd(&fd);
			relay__warm_parent_fault(p, RELAY_WARM_FAIL_CRASHED,
				     n == 0 ? "the warm parent exited"
					    : strerror(errno));
			return -1;
		}
		nf = split(msg, (size_t)n, f, 4);
		if (f[0][0] == 'Y' && p->state == P_STARTING) {
			if (on_ready(p, fd) != 0)
				return -1;
			continue;
		}
		if (f[0][0] == 'N' && p->state == P_STARTING) {
			relay__warm_close_fd(&fd);
			relay__warm_parent_fault(p, RELAY_WARM_FAIL_UNSUPPORTED,
				     nf > 1 ? f[1] : "unsupported");
			return -1;
		}
		q = nf > 1 ? find_req(p, (uint32_t)strtoul(f[1], NULL, 10))
			   : NULL;
		if (!q) {
			relay__warm_close_fd(&fd);
			continue;
		}
		if (f[0][0] == 'S') {
			on_started(p, q, fd);
		} else if (f[0][0] == 'X' && nf > 2) {
			relay__warm_close_fd(&fd);
			on_over(p, q, RELAY__START_EXITED,
				(int)strtol(f[2], NULL, 10), NULL);
		} else if (f[0][0] == 'E') {
			relay__warm_close_fd(&fd);
			on_over(p, q, RELAY__START_LOST, RELAY_WARM_FAIL_FORK,
				nf > 2 ? f[2] : "fork failed");
		} else {
			relay__warm_close_fd(&fd);
		}
		if (p->state == P_RETIRING && !p->reqs) {
			relay__warm_parent_free(p);
			return -1;
		}
	}
	return 1;
}

void relay__warm_ctl_cb(struct ev_loop *loop, ev_io *wio, int revents)
{
	(void)loop;
	(void)revents;
	relay__warm_ctl_read(wio->data, 64);
}

/* The R message: id, wait for go?, rlimits, handler, environment. */
int relay__warm_build_request(warm_req *q, const relay_exec_spec *spec,
			 const relay__strv *env)
{
	relay__buf b = { 0 };
	uint64_t as = 0, nproc = 0;
	int rc, i;
	size_t k;

	for (i = 0; i < q->inv->nrl; i++) {
		if (q->inv->rl_res[i] == RLIMIT_AS)
			as = q->inv->rl_val[i].rlim_cur;
		else if (q->inv->rl_res[i] == RLIMIT_NPROC)
			nproc = q->inv->rl_val[i].rlim_cur;
	}
	rc = relay__buf_printf(&b, "R%c%u%c%d%c%llu%c%llu%c%s%c", 0, q->id,
			       0, q->inv->ncg > 0 ? 1 : 0, 0,
			       (unsigned long long)as, 0,
			       (unsigned long long)nproc, 0, spec->handler,
			       0);
	for (k = 0; rc == 0 && k < env->n; k++)
		rc = relay__buf_printf(&b, "%s%c", env->v[k], 0);
	if (rc == 0 && b.len > WARM_MSG_MAX)
		rc = RELAY_EINVAL;
	if (rc != 0) {
		relay__buf_free(&b);
		return rc;
	}
	q->msg = b.data;
	q->msg_len = b.len;
	return 0;
}

