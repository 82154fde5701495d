/*
 * warm_node_huge.c - node's read-only mappings on huge pages in the node
 * fork server (warm_node_huge.h; doc/sandbox.md, "node: a fork server";
 * doc/perf/warm.md, round 11).
 *
 * A forked invocation process pays, on a host whose page tables the
 * hypervisor shadows, for the first touch of every page of its address
 * space, fault or no fault (about 4 µs a 4 KiB page here), and most of
 * what it touches is node's code and read-only data: file mappings of
 * the node executable, 4 KiB pages. Copied once, in the server, onto
 * anonymous transparent huge pages at the same addresses, they are
 * reached through one entry a 2 MiB page, which a fork copies (the
 * mapping is anonymous) and a first touch fills at once.
 *
 * How: for each 2 MiB-aligned part [a, b) of the executable's r-x and
 * r-- mappings, a new anonymous mapping t, 2 MiB aligned, asked for huge
 * pages (MADV_HUGEPAGE), gets a copy of [a, b); only if /proc/self/smaps
 * says t is wholly on huge pages is it given the part's protection and
 * moved over [a, b) by one mremap(MREMAP_FIXED), which replaces the old
 * mapping under the kernel's lock: no thread can see the range empty,
 * and what it reads there is byte for byte what it read before (the
 * relocated pages of RELRO included: the copy is of memory, not of the
 * file). Should the move fail after the old mapping went, the file is
 * mapped back where it was.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "warm_node_huge.h"

#define HUGE (2UL << 20)
#define MAX_PARTS 16

struct part {
	uintptr_t lo, hi;       /* 2 MiB aligned */
	int prot;
	off_t off;              /* of lo in the executable */
};

/* The 2 MiB-aligned parts of the executable's r-x and r-- private
 * mappings (@exe the executable's path, as /proc/self/maps names it).
 * Their number. */
static int find_parts(const char *exe, struct part *p)
{
	char line[4200], perms[8], path[4096];
	FILE *f = fopen("/proc/self/maps", "re");
	int n = 0;

	if (!f)
		return 0;
	while (n < MAX_PARTS && fgets(line, sizeof(line), f)) {
		unsigned long lo, hi, off, a, b;

		path[0] = '\0';
		if (sscanf(line, "%lx-%lx %7s %lx %*s %*s %4095s", &lo, &hi,
			   perms, &off, path) < 4 || strcmp(path, exe) != 0)
			continue;
		if (strcmp(perms, "r-xp") != 0 && strcmp(perms, "r--p") != 0)
			continue;
		a = (lo + HUGE - 1) & ~(HUGE - 1);
		b = hi & ~(HUGE - 1);
		if (b <= a)
			continue;
		p[n].lo = a;
		p[n].hi = b;
		p[n].prot = perms[2] == 'x' ? PROT_READ | PROT_EXEC : PROT_READ;
		p[n].off = (off_t)(off + (a - lo));
		n++;
	}
	fclose(f);
	return n;
}

/* kB of the mapping starting at @at on huge pages (AnonHugePages in
 * /proc/self/smaps), or -1. */
static long huge_kb(uintptr_t at)
{
	char line[512], perms[8];
	FILE *f = fopen("/proc/self/smaps", "re");
	int in = 0;
	long kb = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;

		/* A mapping's first line ("lo-hi perms ..."); the others
		 * are "Field: value". */
		if (sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) == 3) {
			if (in)
				break;
			in = lo == at;
			continue;
		}
		if (in && sscanf(line, "AnonHugePages: %ld kB", &kb) == 1)
			break;
	}
	fclose(f);
	return kb;
}

/* A copy of @p on huge pages, or NULL (@why set). */
static void *huge_copy(const struct part *p, char *why, size_t n)
{
	size_t len = p->hi - p->lo;
	char *raw, *t;

	raw = mmap(NULL, len + HUGE, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (raw == MAP_FAILED) {
		snprintf(why, n, "mmap: %s", strerror(errno));
		return NULL;
	}
	t = (char *)(((uintptr_t)raw + HUGE - 1) & ~(HUGE - 1));
	if (t > raw)
		munmap(raw, (size_t)(t - raw));
	munmap(t + len, (size_t)(raw + len + HUGE - (t + len)));
	if (madvise(t, len, MADV_HUGEPAGE) != 0) {
		snprintf(why, n, "madvise(MADV_HUGEPAGE): %s", strerror(errno));
		munmap(t, len);
		return NULL;
	}
	memcpy(t, (const void *)p->lo, len);
	if (huge_kb((uintptr_t)t) < (long)(len >> 10)) {
		snprintf(why, n, "the copy is not on huge pages "
			 "(transparent huge pages off or none free)");
		munmap(t, len);
		return NULL;
	}
	if (mprotect(t, len, p->prot) != 0) {
		snprintf(why, n, "mprotect: %s", strerror(errno));
		munmap(t, len);
		return NULL;
	}
	return t;
}

long relay__node_huge_text(char *why, size_t n)
{
	struct part p[MAX_PARTS];
	char exe[4096];
	ssize_t l;
	long mib = 0;
	int np, i;

	snprintf(why, n, "no part of node's mappings is 2 MiB aligned");
	l = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (l <= 0) {
		snprintf(why, n, "/proc/self/exe: %s", strerror(errno));
		return 0;
	}
	exe[l] = '\0';
	np = find_parts(exe, p);
	for (i = 0; i < np; i++) {
		size_t len = p[i].hi - p[i].lo;
		void *t = huge_copy(&p[i], why, n);

		if (!t)
			break;
		if (mremap(t, len, len, MREMAP_MAYMOVE | MREMAP_FIXED,
			   (void *)p[i].lo) == MAP_FAILED) {
			snprintf(why, n, "mremap: %s", strerror(errno));
			munmap(t, len);
			/* Refused before the range was touched (it is
			 * still mapped): as it was. Else the executable's
			 * pages back where they were, or the process cannot
			 * go on. */
			if (madvise((void *)p[i].lo, len, MADV_NORMAL) != 0) {
				int fd = open(exe, O_RDONLY | O_CLOEXEC);

				if (fd < 0 ||
				    mmap((void *)p[i].lo, len, p[i].prot,
					 MAP_PRIVATE | MAP_FIXED, fd,
					 p[i].off) == MAP_FAILED)
					_exit(255);
				close(fd);
			}
			break;
		}
		mib += (long)(len >> 20);
	}
	return mib;
}
