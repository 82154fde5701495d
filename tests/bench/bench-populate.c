/*
 * bench-populate.c - what a page costs a forked process at its first
 * write: a copy-on-write trap per page, against one
 * madvise(MADV_POPULATE_WRITE) over the range before the writes (the node
 * fork server's prefault, sandbox/warm_node_prefault.c).
 *
 *	bench-populate [MIB] [ROUNDS]
 *
 * A parent maps MIB MiB (default 8) twice: one range written (so a
 * child's write copies: "cow"), one never touched (a child's write
 * takes a zero page: "zero"). For each round and each kind, a child is
 * forked that either writes one byte a page ("trap") or populates the
 * range first and then writes ("populate"), then writes every page a
 * second time. Printed per child: its CPU time (getrusage) and minor
 * faults for the populate, the first and the second writes, and its CPU
 * per page for populate + first writes. The second writes show what a
 * page costs once mapped. Exit 0, or 1 when a populate fails (a kernel
 * before 5.14 has no MADV_POPULATE_WRITE).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

#define PAGE 4096UL

static double cpu_us(long *faults)
{
	struct rusage r;

	getrusage(RUSAGE_SELF, &r);
	*faults = r.ru_minflt;
	return (double)(r.ru_utime.tv_sec + r.ru_stime.tv_sec) * 1e6 +
	       (double)(r.ru_utime.tv_usec + r.ru_stime.tv_usec);
}

static void touch(volatile char *b, size_t pages, char v)
{
	size_t i;

	for (i = 0; i < pages; i++)
		b[i * PAGE] = v;
}

static int child(char *b, size_t pages, int populate, const char *name)
{
	double c0, c1, c2, c3;
	long f0, f1, f2, f3;

	c0 = cpu_us(&f0);
	if (populate && madvise(b, pages * PAGE, MADV_POPULATE_WRITE) != 0) {
		perror("bench-populate: madvise(MADV_POPULATE_WRITE)");
		return 1;
	}
	c1 = cpu_us(&f1);
	touch(b, pages, 2);
	c2 = cpu_us(&f2);
	touch(b, pages, 3);
	c3 = cpu_us(&f3);
	printf("%-14s %zu pages: populate %7.0f us %5ld faults | "
	       "1st writes %7.0f us %5ld faults | 2nd writes %5.0f us | "
	       "%.2f us/page\n", name, pages, c1 - c0, f1 - f0, c2 - c1,
	       f2 - f1, c3 - c2, (c2 - c0) / (double)pages);
	fflush(stdout);
	return 0;
}

int main(int argc, char **argv)
{
	size_t mib = argc > 1 ? strtoul(argv[1], NULL, 10) : 8;
	int rounds = argc > 2 ? atoi(argv[2]) : 3, r, k, st, bad = 0;
	size_t len = mib << 20, pages = len / PAGE;
	static const char *const names[] = {
		"cow trap", "cow populate", "zero trap", "zero populate",
	};
	char *cow, *zero;

	if (!pages || rounds < 1) {
		fprintf(stderr, "usage: bench-populate [MIB] [ROUNDS]\n");
		return 2;
	}
	cow = mmap(NULL, len, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	zero = mmap(NULL, len, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (cow == MAP_FAILED || zero == MAP_FAILED) {
		perror("bench-populate: mmap");
		return 1;
	}
	/* 4 KiB pages, as the fork server's heap mostly has. */
	(void)madvise(cow, len, MADV_NOHUGEPAGE);
	(void)madvise(zero, len, MADV_NOHUGEPAGE);
	memset(cow, 1, len);
	for (r = 0; r < rounds; r++) {
		for (k = 0; k < 4; k++) {
			pid_t pid = fork();

			if (pid == 0)
				_exit(child(k < 2 ? cow : zero, pages, k & 1,
					    names[k]));
			if (pid < 0 || waitpid(pid, &st, 0) != pid ||
			    !WIFEXITED(st) || WEXITSTATUS(st) != 0)
				bad = 1;
		}
	}
	return bad;
}
