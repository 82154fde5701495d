/*
 * test_limits.c - how the limits module reads a host's cgroup set-up, on
 * fake hosts: a temporary directory stands for /proc/self (its "mounts"
 * and "cgroup", via the test builds' RELAY_TEST_PROC_SELF) and for the
 * cgroup mounts, with plain files for cgroup.controllers and
 * cgroup.subtree_control. So the refusal paths this machine cannot show
 * (a mixed v1/v2 host, a read-only cgroup2 mount, a controller missing
 * from the subtree) are checked everywhere, each with its one-line
 * reason (RELAY-RT09) and what the start-up line (RELAY-RT01) says. The
 * vm suite (tests/vm/) checks the same paths on a real cgroup v2 kernel.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "relay_config.h"
#include "relaytest.h"
#include "runtime.h"  /* private: relay__limits_* */

static char top[256];
static char cg[300];    /* the fake cgroup2 mount */
static char svc[320];   /* relayd's own cgroup in it: "/svc" */
static char v1[300];    /* a fake v1 memory hierarchy */

static void put(const char *dir, const char *name, const char *text)
{
	char path[600];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	RT_ASSERT(f != NULL);
	fputs(text, f);
	fclose(f);
}

static void rm_rf(const char *dir)
{
	char cmd[400];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "# cannot remove %s\n", dir);
}

/*
 * A fake host: cgroup2 at top/cg mounted with @opts, relayd in "/svc"
 * whose cgroup.controllers is @avail, and, with @v1mem, the memory
 * controller on a v1 hierarchy at top/v1. The directories relayd
 * creates ("relay-<pid>-<n>") are made in advance with an empty
 * cgroup.subtree_control, which a real cgroup has and a mkdir'ed plain
 * directory does not.
 */
static void fake_host(const char *opts, const char *avail, bool v1mem)
{
	char proc[300], text[1024], base[400];
	unsigned int n;

	snprintf(top, sizeof(top), "%s/relay-limits.XXXXXX",
		 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	RT_ASSERT(mkdtemp(top) != NULL);
	snprintf(proc, sizeof(proc), "%s/proc", top);
	snprintf(cg, sizeof(cg), "%s/cg", top);
	snprintf(svc, sizeof(svc), "%s/svc", cg);
	snprintf(v1, sizeof(v1), "%s/v1", top);
	RT_ASSERT(mkdir(proc, 0755) == 0 && mkdir(cg, 0755) == 0 &&
		  mkdir(svc, 0755) == 0 && mkdir(v1, 0755) == 0);
	snprintf(text, sizeof(text),
		 "proc /proc proc rw,nosuid 0 0\n"
		 "cgroup2 %s cgroup2 %s 0 0\n%s%s%s", cg, opts,
		 v1mem ? "relayv1 " : "", v1mem ? v1 : "",
		 v1mem ? " cgroup rw,nosuid,memory 0 0\n" : "");
	put(proc, "mounts", text);
	put(proc, "cgroup", v1mem ? "5:memory:/\n0::/svc\n" : "0::/svc\n");
	put(svc, "cgroup.controllers", avail);
	put(svc, "cgroup.subtree_control", "");
	snprintf(text, sizeof(text), "%ld\n", (long)getpid());
	put(svc, "cgroup.procs", text);
	/* relayd's leaf: it holds itself alone, so it moves there. */
	snprintf(base, sizeof(base), "%s/relay-%ld-main", svc, (long)getpid());
	RT_ASSERT(mkdir(base, 0755) == 0);
	put(base, "cgroup.procs", "");
	for (n = 1; n <= 32; n++) {
		snprintf(base, sizeof(base), "%s/relay-%ld-%u", svc,
			 (long)getpid(), n);
		RT_ASSERT(mkdir(base, 0755) == 0);
		put(base, "cgroup.subtree_control", "");
	}
	setenv("RELAY_TEST_PROC_SELF", proc, 1);
}

static void done_host(void)
{
	unsetenv("RELAY_TEST_PROC_SELF");
	rm_rf(top);
}

/* relay__limits_new(AUTO) on the fake host: its start-up description
 * and its RT09 reason into @desc and @warn; the handle into *@keep (the
 * caller frees it) or freed. */
static void probe_keep(char *desc, size_t dsize, char *warn, size_t wsize,
		       relay__limits **keep)
{
	relay__limits *l = NULL;
	relay_error err;

	memset(&err, 0, sizeof(err));
	RT_EQ_INT(relay__limits_new(&l, RELAY_LIMITS_AUTO, &err), 0);
	RT_ASSERT(l != NULL);
	snprintf(desc, dsize, "%s", relay__limits_describe(l));
	/* NULL: nothing to warn about */
	snprintf(warn, wsize, "%s", relay__limits_warning(l)
					    ? relay__limits_warning(l) : "");
	printf("# %s | %s\n", desc, warn);
	if (keep)
		*keep = l;
	else
		relay__limits_free(l);
}

static void probe(char *desc, size_t dsize, char *warn, size_t wsize)
{
	probe_keep(desc, dsize, warn, wsize, NULL);
}

/* @dir/@name's text equals @want. */
static void file_is(const char *dir, const char *name, const char *want)
{
	char path[600];
	char *got;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	got = rt_slurp(path, NULL);
	RT_EQ_STR(got, want);
	free(got);
}

static void skip_without_hooks(void)
{
#if !RELAY_TEST_HOOKS
	RT_SKIP("needs a test build (-Dtest_hooks=true)");
#endif
}

static void test_limits__v2_delegated(void)
{
	char desc[128], warn[512], leaf[400], pid[24];
	relay__limits *l = NULL;

	skip_without_hooks();
	fake_host("rw,nosuid", "cpuset cpu io memory pids\n", false);
	probe_keep(desc, sizeof(desc), warn, sizeof(warn), &l);
	RT_EQ_STR(desc, "cgroup-v2 (memory, pids, cpu)");
	RT_EQ_STR(warn, "");
	/* It moved into its leaf, then enabled what it uses in its
	 * cgroup's subtree; freed, it undoes both. */
	snprintf(leaf, sizeof(leaf), "%s/relay-%ld-main", svc,
		 (long)getpid());
	snprintf(pid, sizeof(pid), "%ld", (long)getpid());
	file_is(leaf, "cgroup.procs", pid);
	file_is(svc, "cgroup.subtree_control", "+memory +pids +cpu");
	relay__limits_free(l);
	file_is(svc, "cgroup.subtree_control", "-memory -pids -cpu");
	done_host();
}

static void test_limits__controller_missing(void)
{
	char desc[128], warn[512], want[600];

	skip_without_hooks();
	fake_host("rw", "memory pids\n", false);
	probe(desc, sizeof(desc), warn, sizeof(warn));
	RT_EQ_STR(desc, "cgroup-v2 (memory, pids, cpu:rlimit)");
	snprintf(want, sizeof(want), "cgroup v2: the cpu controller is not "
		 "delegated to %s (missing from its parent's "
		 "cgroup.subtree_control): delegate a cgroup to relayd "
		 "(systemd: Delegate=yes)", svc);
	RT_EQ_STR(warn, want);
	done_host();
}

static void test_limits__mixed_v1_v2(void)
{
	char desc[128], warn[512];

	skip_without_hooks();
	fake_host("rw", "cpu pids\n", true);
	probe(desc, sizeof(desc), warn, sizeof(warn));
	RT_EQ_STR(desc, "cgroup-v2 (memory:rlimit, pids, cpu)");
	RT_EQ_STR(warn, "cgroup v2: the memory controller is bound to a "
		  "cgroup v1 hierarchy (a mixed v1/v2 host): boot with "
		  "systemd.unified_cgroup_hierarchy=1 for cgroup v2 alone");
	done_host();
}

static void test_limits__read_only_mount(void)
{
	char desc[128], warn[512], want[600];
	relay__limits *l = NULL;
	relay_error err;

	skip_without_hooks();
	fake_host("ro,nosuid,nodev", "memory pids cpu\n", false);
	probe(desc, sizeof(desc), warn, sizeof(warn));
	RT_EQ_STR(desc, "rlimit");
	snprintf(want, sizeof(want), "cgroup v2: %s is mounted read-only (a "
		 "container?): mount it read-write or delegate a cgroup to "
		 "relayd (systemd: Delegate=yes)", cg);
	RT_EQ_STR(warn, want);
	/* An embedder that asks for cgroup v2 alone is refused, with the
	 * same reason. */
	memset(&err, 0, sizeof(err));
	RT_EQ_INT(relay__limits_new(&l, RELAY_LIMITS_CGROUP_V2, &err),
		  RELAY_EBACKEND);
	RT_CHECK(l == NULL);
	RT_EQ_STR(err.text, want);
	done_host();
}

static void test_limits__no_delegation(void)
{
	char desc[128], warn[512], want[600], file[400];

	skip_without_hooks();
	fake_host("rw", "memory pids cpu\n", false);
	/* Not writable for relayd: root writes any plain file, so for
	 * root the file is a directory instead (open fails, EISDIR). */
	snprintf(file, sizeof(file), "%s/cgroup.subtree_control", svc);
	if (geteuid() == 0) {
		RT_ASSERT(unlink(file) == 0 && mkdir(file, 0755) == 0);
	} else {
		RT_ASSERT(chmod(file, 0444) == 0);
	}
	probe(desc, sizeof(desc), warn, sizeof(warn));
	RT_EQ_STR(desc, "rlimit");
	snprintf(want, sizeof(want), "cgroup v2: cannot enable controllers "
		 "in %s/cgroup.subtree_control (%s): delegate a cgroup to "
		 "relayd (systemd: Delegate=yes)", svc,
		 strerror(geteuid() == 0 ? EISDIR : EACCES));
	RT_EQ_STR(warn, want);
	done_host();
}

static void test_limits__other_processes(void)
{
	char desc[128], warn[512], want[600], procs[64];

	skip_without_hooks();
	fake_host("rw", "memory pids cpu\n", false);
	/* Started from a shell: its cgroup holds the shell too. */
	snprintf(procs, sizeof(procs), "1\n%ld\n", (long)getpid());
	put(svc, "cgroup.procs", procs);
	probe(desc, sizeof(desc), warn, sizeof(warn));
	RT_EQ_STR(desc, "rlimit");
	snprintf(want, sizeof(want), "cgroup v2: %s holds other processes, "
		 "so it cannot enable controllers for relayd's cgroups: run "
		 "relayd in a cgroup of its own (systemd: Delegate=yes)", svc);
	RT_EQ_STR(warn, want);
	/* Nothing enabled (pids and cpu alone would make it a thread
	 * root, where relayd's cgroups could enable nothing). */
	file_is(svc, "cgroup.subtree_control", "");
	done_host();
}

static const rt_case cases[] = {
	RT_CASE(test_limits__v2_delegated),
	RT_CASE(test_limits__controller_missing),
	RT_CASE(test_limits__mixed_v1_v2),
	RT_CASE(test_limits__read_only_mount),
	RT_CASE(test_limits__no_delegation),
	RT_CASE(test_limits__other_processes),
};

int main(int argc, char **argv)
{
	return rt_main(argc, argv, cases, RT_NCASES(cases));
}
