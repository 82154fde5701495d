/*
 * warm_stats.c - the warm path's counters and what it reports: starts by
 * path, fallbacks by reason, the start-latency histogram, warm parents and
 * pre-started processes with their resident memory.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "warm.h"

uint64_t relay__warm_rss_of(pid_t pid)
{
	char path[64], buf[128];
	unsigned long size, rss;
	ssize_t n;
	int fd;

	if (pid <= 0)
		return 0;
	snprintf(path, sizeof(path), "/proc/%ld/statm", (long)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	if (sscanf(buf, "%lu %lu", &size, &rss) != 2)
		return 0;
	return (uint64_t)rss * (uint64_t)sysconf(_SC_PAGESIZE);
}

/* Private_Clean + Private_Dirty of @pid (smaps_rollup): what it holds
 * that no other process shares. */
static uint64_t private_of(pid_t pid)
{
	char path[64], line[256];
	uint64_t kb = 0;
	unsigned long v;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%ld/smaps_rollup", (long)pid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Private_Clean: %lu", &v) == 1 ||
		    sscanf(line, "Private_Dirty: %lu", &v) == 1)
			kb += v;
	fclose(f);
	return kb * 1024;
}

int relay__warm_children(pid_t pid, pid_t *out, int max)
{
	char path[80], buf[4096], *s, *end;
	ssize_t n;
	int fd, k = 0;

	snprintf(path, sizeof(path), "/proc/%ld/task/%ld/children", (long)pid,
		 (long)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
	for (s = buf; k < max; s = end) {
		long c = strtol(s, &end, 10);

		if (end == s)
			break;
		out[k++] = (pid_t)c;
	}
	return k;
}

static bool running(const warm_parent *p, pid_t pid)
{
	const warm_req *q;

	for (q = p->reqs; q; q = q->next)
		if (q->pid == pid)
			return true;
	return false;
}

uint64_t relay__warm_parent_mem(const warm_parent *p)
{
	pid_t slot[256], kid[16];
	uint64_t sum;
	int ns, nk, i, j;

	if (p->server_pid <= 0)
		return 0;
	sum = relay__warm_rss_of(p->server_pid);
	/* The python3 server's children are its slots (N), theirs the
	 * waiting H and the running invocation's. */
	ns = relay__warm_children(p->server_pid, slot, 256);
	for (i = 0; i < ns; i++) {
		if (running(p, slot[i]))
			continue;    /* relay-warm-exec: N is the invocation's */
		sum += private_of(slot[i]);
		nk = relay__warm_children(slot[i], kid, 16);
		for (j = 0; j < nk; j++)
			if (!running(p, kid[j]))
				sum += private_of(kid[j]);
	}
	return sum;
}

int relay_runtime_warm_stats_get(const relay_runtime *rt,
				 relay_runtime_warm_stats *out)
{
	unsigned int v = out->version;
	const warm_parent *p;
	const warm_pool *q;

	if (v == 0 || v > RELAY_RUNTIME_WARM_STATS_VERSION)
		return RELAY_EINVAL;
	memset(out, 0, sizeof(*out));
	out->version = v;
	if (!rt->warm)
		return 0;
	*out = rt->warm_st;
	out->version = v;
	out->parents_rss_bytes = 0;
	for (p = rt->warm->parents; p; p = p->next)
		out->parents_rss_bytes += relay__warm_parent_mem(p);
	for (q = rt->warm->pools; q; q = q->next) {
		out->parents_rss_bytes += relay__warm_pool_rss(q);
		out->parents_ready += q->nready;
	}
	return 0;
}

void relay_runtime_warm_foreach(const relay_runtime *rt,
				relay_warm_parent_fn fn, void *payload)
{
	static const char *const names[] = { "starting", "ready", "retiring" };
	const warm_parent *p;
	const warm_pool *q;
	const pooled_proc *pp;

	if (!rt->warm)
		return;
	for (p = rt->warm->parents; p; p = p->next)
		fn(p->app, names[p->state], p->inflight,
		   relay__warm_parent_mem(p), payload);
	/* Each pre-started process is a parent of one invocation. */
	for (q = rt->warm->pools; q; q = q->next)
		for (pp = q->ready; pp; pp = pp->next)
			fn(q->app, "ready", 0, relay__warm_tree_rss(pp->proc->pid, 0),
			   payload);
}
