/*
 * procmetrics.c - the process_* families of /metrics: relayd's own CPU
 * time, memory, descriptors and start time, read from /proc/self at each
 * render (the names and units of the Prometheus client libraries'
 * process collector). A figure that cannot be read is left out rather
 * than shown as 0.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "relayd.h"

/* The fields of /proc/self/stat after "(comm) ": state is field 3. */
#define STAT_UTIME 14
#define STAT_STIME 15
#define STAT_STARTTIME 22

/* Fields 14, 15 and 22 of /proc/self/stat (in clock ticks); 0 or -1. */
static int read_stat(unsigned long long *utime, unsigned long long *stime,
		     unsigned long long *start)
{
	char buf[1024], *p, *save = NULL;
	size_t n;
	int field;
	FILE *f = fopen("/proc/self/stat", "re");

	if (!f)
		return -1;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	/* The command name may hold spaces and parentheses: skip to the
	 * last ')'. */
	p = strrchr(buf, ')');
	if (!p)
		return -1;
	*utime = *stime = *start = 0;
	field = 3;
	for (p = strtok_r(p + 1, " ", &save); p;
	     p = strtok_r(NULL, " ", &save), field++) {
		if (field == STAT_UTIME)
			*utime = strtoull(p, NULL, 10);
		else if (field == STAT_STIME)
			*stime = strtoull(p, NULL, 10);
		else if (field == STAT_STARTTIME) {
			*start = strtoull(p, NULL, 10);
			return 0;
		}
	}
	return -1;
}

/* The boot time (Unix seconds) of /proc/stat's btime line; 0 or -1. */
static int read_btime(unsigned long long *btime)
{
	char line[256];
	int rc = -1;
	FILE *f = fopen("/proc/stat", "re");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "btime %llu", btime) == 1) {
			rc = 0;
			break;
		}
	fclose(f);
	return rc;
}

/* Open descriptors: the entries of /proc/self/fd less the one reading
 * it; -1 if it cannot be read. */
static long open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	long n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)) != NULL)
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n > 0 ? n - 1 : 0;
}

static void family(FILE *f, const char *name, const char *type,
		   const char *help, double v)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n%s ", name, help, name, type,
		name);
	relayd_prom_double(f, v);
	fputc('\n', f);
}

void relayd_process_prometheus(FILE *f)
{
	unsigned long long ut, st, start, btime, size, rss;
	long tck = sysconf(_SC_CLK_TCK), page = sysconf(_SC_PAGESIZE), fds;
	struct rlimit rl;
	FILE *m;
	int have_stat = read_stat(&ut, &st, &start) == 0 && tck > 0;

	if (have_stat)
		family(f, "process_cpu_seconds_total", "counter",
		       "User and system CPU time of relayd, in seconds.",
		       (double)(ut + st) / (double)tck);
	m = fopen("/proc/self/statm", "re");
	if (m) {
		if (fscanf(m, "%llu %llu", &size, &rss) == 2 && page > 0) {
			family(f, "process_virtual_memory_bytes", "gauge",
			       "Virtual memory size of relayd, in bytes.",
			       (double)size * (double)page);
			family(f, "process_resident_memory_bytes", "gauge",
			       "Resident memory of relayd, in bytes.",
			       (double)rss * (double)page);
		}
		fclose(m);
	}
	fds = open_fds();
	if (fds >= 0)
		family(f, "process_open_fds", "gauge",
		       "Open file descriptors of relayd.", (double)fds);
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
		family(f, "process_max_fds", "gauge",
		       "relayd's limit of open file descriptors "
		       "(RLIMIT_NOFILE).", (double)rl.rlim_cur);
	if (have_stat && read_btime(&btime) == 0)
		family(f, "process_start_time_seconds", "gauge",
		       "Start time of relayd since the Unix epoch, in "
		       "seconds.", (double)btime + (double)start / (double)tck);
}
