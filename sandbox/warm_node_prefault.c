/*
 * warm_node_prefault.c - prefault in bulk what a forked node invocation
 * writes (warm_node_prefault.h; doc/sandbox.md, "node: a fork server").
 *
 * Every invocation process H is a fork of the same never-used server, so
 * every H writes, after its request, about the same pages: V8's heap
 * (new-space allocation, feedback and inline caches of the bootstrap's
 * functions), malloc's arena, the stack. Each first write is a
 * copy-on-write fault; on a host whose faults trap to a hypervisor that
 * is the larger part of a no-op invocation's start (doc/perf/warm.md).
 * The server learns those pages once, before its first slot, from a
 * learning fork that runs the bootstrap's own invocation path on a
 * built-in no-op handler (no application code): pages this fork made its
 * own between relay__node_prefault_mark() and its exit, read from
 * /proc/self/pagemap ("present" and "exclusively mapped": a page still
 * shared with the server is not the fork's). Each H then populates them
 * with one madvise(MADV_POPULATE_WRITE) a run while it waits for its
 * request: the kernel copies them in a loop instead of a trap a page, and
 * off the start latency. The pages are H's own copies, as its writes
 * would have made them; nothing is shared, and the plan (addresses only)
 * is the same for every fork and made before any invocation ran.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "warm_node_prefault.h"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23  /* Linux 5.14 */
#endif

#define PAGE 4096UL
#define PM_PRESENT (1ULL << 63)
#define PM_EXCLUSIVE (1ULL << 56)
#define MAX_MAPS 4096
#define MAX_MAP_PAGES (1UL << 16)       /* mappings past 256 MiB: skipped */
#define MAX_MARK_PAGES (1UL << 21)      /* 8 GiB of mappings in all */
#define MAPS_BUF (1UL << 20)

struct prun {
	uint64_t lo;            /* page aligned */
	uint64_t pages;
};

/* The plan: made in the server, inherited by every fork. */
static struct prun plan[RELAY__NODE_PREFAULT_MAX_RUNS];
static int nplan;

/* In the learning fork only: the private writable mappings at the mark,
 * with a bit a page for "was this fork's own then". In a mapping of its
 * own (mmap), so that the scan's writes are not mistaken for the run's. */
struct pmap {
	uint64_t lo, hi;
	uint64_t bit;           /* first bit in the bitmap */
};

/* The runs a learning fork reports, and the mapping in hand. */
struct report {
	const struct pmap *m;
	struct prun runs[RELAY__NODE_PREFAULT_MAX_RUNS];
	int nruns;
	uint64_t pages;
};

struct mark {
	struct report rp;
	struct pmap maps[MAX_MAPS];
	int nmaps;
	uint64_t nbits;
	unsigned char bits[MAX_MARK_PAGES / 8];
	char mapsbuf[MAPS_BUF];
	uint64_t pm[512];
};

static struct mark *mk;

/* /proc/self/maps into mk->mapsbuf, NUL-terminated. Length, or -1. */
static long read_maps(void)
{
	int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	size_t len = 0;
	ssize_t n;

	if (fd < 0)
		return -1;
	while (len < MAPS_BUF - 1 &&
	       (n = read(fd, mk->mapsbuf + len, MAPS_BUF - 1 - len)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			close(fd);
			return -1;
		}
		len += (size_t)n;
	}
	close(fd);
	mk->mapsbuf[len] = '\0';
	return (long)len;
}

/* Next "lo-hi perms" line of @p: 1 when it is a private writable
 * mapping, 0 when another, -1 at the end. */
static int next_map(char **p, uint64_t *lo, uint64_t *hi)
{
	char *s = *p, *e, *nl;
	int wp;

	if (!*s)
		return -1;
	nl = strchr(s, '\n');
	*p = nl ? nl + 1 : s + strlen(s);
	*lo = strtoull(s, &e, 16);
	if (*e != '-')
		return 0;
	*hi = strtoull(e + 1, &e, 16);
	if (*e != ' ' || *hi <= *lo)
		return 0;
	wp = e[1] == 'r' && e[2] == 'w' && e[4] == 'p';
	return wp && (*hi - *lo) / PAGE <= MAX_MAP_PAGES;
}

/* Calls @fn for each page of [lo, hi) with its pagemap entry. */
static int walk(int pm, uint64_t lo, uint64_t hi,
		void (*fn)(uint64_t addr, uint64_t e, void *arg), void *arg)
{
	uint64_t a = lo, n, i;
	ssize_t r;

	while (a < hi) {
		n = (hi - a) / PAGE;
		if (n > sizeof(mk->pm) / sizeof(mk->pm[0]))
			n = sizeof(mk->pm) / sizeof(mk->pm[0]);
		r = pread(pm, mk->pm, n * 8, (off_t)(a / PAGE * 8));
		if (r <= 0)
			return -1;
		n = (uint64_t)r / 8;
		for (i = 0; i < n; i++)
			fn(a + i * PAGE, mk->pm[i], arg);
		a += n * PAGE;
	}
	return 0;
}

static int own(uint64_t e)
{
	return (e & PM_PRESENT) && (e & PM_EXCLUSIVE);
}

static void set_bit(uint64_t addr, uint64_t e, void *arg)
{
	const struct pmap *m = arg;
	uint64_t b = m->bit + (addr - m->lo) / PAGE;

	if (own(e))
		mk->bits[b / 8] |= (unsigned char)(1u << (b % 8));
}

int relay__node_prefault_mark(void)
{
	char *p;
	uint64_t lo, hi;
	int pm, r;

	mk = mmap(NULL, sizeof(*mk), PROT_READ | PROT_WRITE,
		  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mk == MAP_FAILED) {
		mk = NULL;
		return -1;
	}
	pm = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	if (pm < 0 || read_maps() < 0)
		goto fail;
	p = mk->mapsbuf;
	while ((r = next_map(&p, &lo, &hi)) >= 0) {
		struct pmap *m;

		if (r == 0 || mk->nmaps == MAX_MAPS ||
		    mk->nbits + (hi - lo) / PAGE > MAX_MARK_PAGES)
			continue;
		m = &mk->maps[mk->nmaps++];
		m->lo = lo;
		m->hi = hi;
		m->bit = mk->nbits;
		mk->nbits += (hi - lo) / PAGE;
		if (walk(pm, lo, hi, set_bit, m) != 0)
			mk->nmaps--;
	}
	close(pm);
	return 0;
fail:
	if (pm >= 0)
		close(pm);
	munmap(mk, sizeof(*mk));
	mk = NULL;
	return -1;
}

static void add_page(uint64_t addr, uint64_t e, void *arg)
{
	struct report *rp = arg;
	uint64_t b = rp->m->bit + (addr - rp->m->lo) / PAGE;
	struct prun *last = rp->nruns ? &rp->runs[rp->nruns - 1] : NULL;

	if (!own(e) || (mk->bits[b / 8] & (1u << (b % 8))) ||
	    (addr >= (uint64_t)(uintptr_t)mk &&
	     addr < (uint64_t)(uintptr_t)mk + sizeof(*mk)) ||
	    rp->pages >= RELAY__NODE_PREFAULT_MAX_PAGES)
		return;
	if (last && last->lo + last->pages * PAGE == addr) {
		last->pages++;
	} else {
		if (rp->nruns == RELAY__NODE_PREFAULT_MAX_RUNS)
			return;
		rp->runs[rp->nruns].lo = addr;
		rp->runs[rp->nruns++].pages = 1;
	}
	rp->pages++;
}

int relay__node_prefault_report(int fd)
{
	struct report *rp;
	char *p;
	uint64_t lo, hi;
	int pm, r, i;
	size_t off = 0, len;
	ssize_t n;

	if (!mk)
		return -1;
	rp = &mk->rp;
	pm = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	if (pm < 0 || read_maps() < 0) {
		if (pm >= 0)
			close(pm);
		return -1;
	}
	/* Only what was mapped at the mark, as it is in every fork there:
	 * what the run mapped since, a fork maps after its request. */
	p = mk->mapsbuf;
	while ((r = next_map(&p, &lo, &hi)) >= 0) {
		if (r == 0)
			continue;
		for (i = 0; i < mk->nmaps; i++) {
			uint64_t a = lo > mk->maps[i].lo ? lo : mk->maps[i].lo;
			uint64_t b = hi < mk->maps[i].hi ? hi : mk->maps[i].hi;

			if (a >= b)
				continue;
			rp->m = &mk->maps[i];
			(void)walk(pm, a, b, add_page, rp);
		}
	}
	close(pm);
	len = (size_t)rp->nruns * sizeof(rp->runs[0]);
	while (off < len) {
		n = write(fd, (const char *)rp->runs + off, len - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		off += (size_t)n;
	}
	return 0;
}

static int64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

long relay__node_prefault_take(int fd, int timeout_ms)
{
	static char in[sizeof(plan) + 1];
	struct prun r;
	size_t len = 0, k;
	int64_t end = mono_ms() + timeout_ms;
	long pages = 0;

	nplan = 0;
	for (;;) {
		struct pollfd pf = { fd, POLLIN, 0 };
		int64_t left = end - mono_ms();
		ssize_t n;

		if (left <= 0)
			return -1;
		if (poll(&pf, 1, (int)left) < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		n = read(fd, in + len, sizeof(in) - len);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n < 0)
			return -1;
		if (n == 0)
			break;
		len += (size_t)n;
		if (len == sizeof(in))
			return -1;      /* more than a plan holds */
	}
	if (len % sizeof(r))
		return -1;
	for (k = 0; k < len; k += sizeof(r)) {
		memcpy(&r, in + k, sizeof(r));
		if (r.lo % PAGE || !r.pages ||
		    r.pages > RELAY__NODE_PREFAULT_MAX_PAGES ||
		    pages + (long)r.pages > RELAY__NODE_PREFAULT_MAX_PAGES)
			return -1;
		pages += (long)r.pages;
	}
	memcpy(plan, in, len);
	nplan = (int)(len / sizeof(r));
	return pages;
}

/* Has this kernel MADV_POPULATE_WRITE? Asked of a page of our own data
 * (private, writable), since the call says EINVAL both when it does not
 * know the advice and when a mapping does not permit it. */
static int populate_known(void)
{
	uintptr_t pg = (uintptr_t)&nplan & ~(uintptr_t)(PAGE - 1);

	return madvise((void *)pg, PAGE, MADV_POPULATE_WRITE) == 0 ||
	       (errno != EINVAL && errno != ENOSYS);
}

long relay__node_prefault_run(void)
{
	long done = 0;
	int i;

	if (!nplan || !populate_known())
		return 0;
	for (i = 0; i < nplan; i++) {
		/* A run that fails (no longer mapped, or not writable
		 * here: ENOMEM, EINVAL, EFAULT) is skipped. */
		if (madvise((void *)(uintptr_t)plan[i].lo,
			    (size_t)(plan[i].pages * PAGE),
			    MADV_POPULATE_WRITE) == 0)
			done += (long)plan[i].pages;
	}
	return done;
}
