/*
 * warm_hang.c - the node fork server's hang watchdog (doc/sandbox.md,
 * "node: a fork server", "Never hangs").
 *
 * A fork of node lacks the threads node had in the server. Work queued
 * for one of them, or a lock one held, would leave an invocation process
 * H waiting forever on a futex that nothing in H will ever wake (that is
 * how fetch hung before H got a worker of its own: warm_node_worker.c).
 * The invocation's timeout ends such a run, as any other; this watchdog
 * also tells a hang of that kind from a handler that is merely slow and
 * replaces the warm parent it came from, whose state is then suspect.
 *
 * Once a second, for each started invocation of a node fork server,
 * every thread of H is read in /proc: H is stuck when each one sleeps in
 * a futex wait without a timeout and H used no CPU since the previous
 * look, twice in a row. A handler spinning, sleeping on a timer, waiting
 * on a socket, a pipe or a child is not stuck (it runs, or waits
 * elsewhere than in a futex, or with a timeout). A stuck invocation is
 * left to its timeout (the documented end: SIGTERM, the grace, SIGKILL,
 * "timed out after <N>ms"); its parent is retired at once, logged
 * (RELAY-RT07), so the next invocation starts a new one.
 *
 * Thread-safety: the loop's thread only, as the rest of the warm layer.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ev.h>

#include "warm.h"

#define HANG_CHECK_S 1.0       /* how often */
#define HANG_CHECKS 2          /* stuck this many looks in a row */

/* The futex syscall's number on this machine; -1 where unknown. */
static long futex_nr(void)
{
#if defined(__x86_64__)
	return 202;
#elif defined(__aarch64__)
	return 98;
#else
	return -1;
#endif
}

static ssize_t read_small(const char *path, char *buf, size_t cap)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = read(fd, buf, cap - 1);
	close(fd);
	if (n >= 0)
		buf[n] = '\0';
	return n;
}

/*
 * Thread @tid of @pid: 1 when it sleeps in a futex wait with no timeout,
 * 0 when not, -1 when that cannot be read; its CPU ticks added to
 * *@ticks.
 */
static int thread_stuck(pid_t pid, long tid, uint64_t *ticks)
{
	char path[96], buf[1024], *s, *end;
	unsigned long long a[6];
	unsigned long long ut = 0, st = 0;
	char state;
	long nr;
	int i;

	snprintf(path, sizeof(path), "/proc/%d/task/%ld/stat", (int)pid, tid);
	if (read_small(path, buf, sizeof(buf)) <= 0)
		return -1;
	s = strrchr(buf, ')');
	if (!s || sscanf(s + 1, " %c %*s %*s %*s %*s %*s %*s %*s %*s %*s "
			 "%*s %llu %llu", &state, &ut, &st) != 3)
		return -1;
	*ticks += ut + st;
	snprintf(path, sizeof(path), "/proc/%d/task/%ld/syscall", (int)pid,
		 tid);
	if (read_small(path, buf, sizeof(buf)) <= 0)
		return -1;
	if (state != 'S')
		return 0;
	nr = strtol(buf, &end, 10);
	if (end == buf || nr != futex_nr())
		return 0;
	for (i = 0; i < 6; i++) {
		s = end;
		a[i] = strtoull(s, &end, 16);
		if (end == s)
			return -1;
	}
	/* futex(uaddr, op, val, timeout, ...): FUTEX_WAIT (0) or
	 * FUTEX_WAIT_BITSET (9), flags masked off, no timeout. */
	return ((a[1] & 0x7f) == 0 || (a[1] & 0x7f) == 9) && a[3] == 0;
}

/* @q's process: 1 stuck (this look), 0 not, -1 unknown. */
static int look(warm_req *q)
{
	char path[64];
	struct dirent *e;
	uint64_t ticks = 0;
	int all = 1, n = 0, r;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)q->pid);
	d = opendir(path);
	if (!d)
		return -1;
	while ((e = readdir(d))) {
		long tid = strtol(e->d_name, NULL, 10);

		if (tid <= 0)
			continue;
		r = thread_stuck(q->pid, tid, &ticks);
		if (r < 0) {
			closedir(d);
			return -1;
		}
		all &= r;
		n++;
	}
	closedir(d);
	r = n > 0 && all && q->hang_looks > 0 && ticks == q->hang_ticks;
	q->hang_ticks = ticks;
	return r;
}

static void hang_cb(struct ev_loop *loop, ev_timer *t, int revents)
{
	warm_parent *p = t->data;
	warm_req *q;
	int any = 0;

	(void)loop;
	(void)revents;
	for (q = p->reqs; q; q = q->next) {
		int r;

		if (!q->started || q->pid <= 0)
			continue;
		any = 1;
		r = look(q);
		q->hang_looks++;
		q->hang_stuck = r == 1 ? q->hang_stuck + 1 : 0;
		if (q->hang_stuck < HANG_CHECKS || p->state == P_RETIRING)
			continue;
		relay__log(&p->w->rt->logger, RELAY_LOG_WARN, "RELAY-RT07",
			   "runtime: warm parent for app %s replaced: "
			   "invocation %u hung after the fork (every thread "
			   "waits on a futex, no CPU used); it ends at its "
			   "timeout", p->app, q->id);
		ev_timer_stop(p->loop, &p->w_hang);
		relay__warm_parent_retire(p);
		return;
	}
	if (!any)
		ev_timer_stop(p->loop, &p->w_hang);
}

void relay__warm_hang_init(warm_parent *p)
{
	ev_timer_init(&p->w_hang, hang_cb, HANG_CHECK_S, HANG_CHECK_S);
	p->w_hang.data = p;
}

void relay__warm_hang_watch(warm_parent *p)
{
	if (p->node_server && futex_nr() >= 0 && p->state != P_RETIRING &&
	    !ev_is_active(&p->w_hang))
		ev_timer_start(p->loop, &p->w_hang);
}

void relay__warm_hang_stop(warm_parent *p)
{
	ev_timer_stop(p->loop, &p->w_hang);
}
