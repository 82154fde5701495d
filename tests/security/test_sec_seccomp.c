/*
 * test_sec_seccomp.c - the sandbox's system-call profile (issue 40 item
 * 3; sandbox/seccomp_profile.h, doc/sandbox.md "System-call profile"),
 * suite 'security'.
 *
 * A handler tries one call of every group of the profile and prints the
 * answer (seccomp_probe.c for exec apps and, as a child, for node;
 * seccomp_probe.py with ctypes in the python3 handler's own process);
 * each case asserts every answer against expect[] below, cold and warm,
 * for the three runtimes. Above all a handler cannot make a user
 * namespace (unshare(CLONE_NEWUSER|CLONE_NEWNET), clone with
 * CLONE_NEWUSER; node: `unshare -U true` fails), and the mount family,
 * io_uring, bpf, perf_event_open, userfaultfd, kexec, modules,
 * open_by_handle_at, ptrace, process_vm_*, personality(ADDR_NO_RANDOMIZE),
 * setns, the keyring and the i386 entry are refused, while fork,
 * threads and the harmless personality() values work. Where the kernel
 * itself refuses a call to an unprivileged process, the probe's
 * arguments make it do so with another errno when they can (a bad
 * pointer, flag or descriptor), so that the answer shows the filter.
 *
 * Warm cases run twice in one parent: each invocation process loads the
 * handler half of the profile itself (sandbox/warm_seccomp.c).
 *
 * Skips (TAP skip plan) when bwrap cannot run here; the node cases skip
 * without node, a warm case when warm parents are unavailable. Only
 * x86_64 and aarch64 (the probes' numbers): elsewhere a skip plan.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ev.h>

#include "relay/relay_libev.h"
#include "lib/rt_fixture.h"
#include "relaytest.h"
#include "runtime/rt_helpers.h"
#include "runtime/rt_job.h"

static rtf_suite S;
static const char *skip_why;
static uint64_t next_gen = 100;

/* Every probe line, "NAME ANSWER" (sandbox/seccomp_profile.h's table;
 * the reasons are doc/sandbox.md's). @c_only: the C probe's alone. */
static const struct {
	const char *name, *want;
	bool c_only;
} expect[] = {
	/* No user namespace: the way to every other namespace. */
	{ "unshare-user", "EPERM", false },
	{ "unshare-user-net", "EPERM", false },
	{ "clone-user", "EPERM", false },
	{ "clone3", "ENOSYS", false },
	{ "setns-user", "EPERM", false },
	/* The mount family, after the sandbox's own set-up. */
	{ "mount", "EPERM", false },
	{ "umount2", "EPERM", false },
	{ "pivot_root", "EPERM", false },
	{ "open_tree", "EPERM", false },
	{ "move_mount", "EPERM", false },
	{ "fsopen", "EPERM", false },
	{ "fsconfig", "EPERM", false },
	{ "fsmount", "EPERM", false },
	{ "fspick", "EPERM", false },
	{ "mount_setattr", "EPERM", false },
	/* Kernel surface a handler does not need. */
	{ "io_uring_setup", "ENOSYS", false },
	{ "io_uring_enter", "ENOSYS", false },
	{ "io_uring_register", "ENOSYS", false },
	{ "userfaultfd", "ENOSYS", false },
	{ "bpf", "EPERM", false },
	{ "perf_event_open", "EPERM", false },
	{ "kexec_load", "EPERM", false },
	{ "kexec_file_load", "EPERM", false },
	{ "init_module", "EPERM", false },
	{ "finit_module", "EPERM", false },
	{ "delete_module", "EPERM", false },
	{ "open_by_handle_at", "EPERM", false },
	{ "ptrace", "EPERM", false },
	{ "process_vm_readv", "EPERM", false },
	{ "process_vm_writev", "EPERM", false },
	{ "personality-aslr", "EPERM", false },
	{ "keyctl", "ENOSYS", false },
	{ "i386", "ENOSYS", true },
	/* What a handler does need still works. */
	{ "personality-query", "ok", false },
	{ "personality-linux", "ok", false },
	{ "fork", "ok", false },
	{ "thread", "ok", false },
};

/* node has no raw system calls: its handler runs the C probe as a child
 * and `unshare -U true`. */
#define NODE_PROBE                                                        \
	"const { spawnSync } = require('child_process');\n"                \
	"exports.run = () => {\n"                                          \
	"  spawnSync('/app/seccomp_probe', [],\n"                          \
	"            { stdio: ['ignore', 'inherit', 'inherit'] });\n"      \
	"  const u = spawnSync('/usr/bin/unshare', ['-U', 'true'],\n"      \
	"                      { stdio: 'ignore' });\n"                    \
	"  console.log('node-unshare-U',\n"                                \
	"              u.status === 0 ? 'ok' : 'failed');\n"               \
	"};\n"

static const char *kind_name(relay_runtime_kind k)
{
	return k == RELAY_RUNTIME_PYTHON3 ? "python3"
	       : k == RELAY_RUNTIME_NODE  ? "node" : "exec";
}

/* The probe's line for @name, or NULL. */
static const char *answer(const cap *c, const char *name)
{
	size_t i, n = strlen(name);

	for (i = 0; i < c->n; i++) {
		const char *l = cap_line(c, i);

		if (strncmp(l, name, n) == 0 && l[n] == ' ')
			return l + n + 1;
	}
	return NULL;
}

/* One run of the probe of @kind; every expected answer checked. */
static void probe_once(relay_runtime_kind kind, int warm, uint64_t gen)
{
	static const char *const argv[] = { "/app/seccomp_probe", NULL };
	relay_exec_spec s = rtf_spec(&S, kind_name(kind), kind, "probe.run");
	struct job j;
	size_t i;

	if (kind == RELAY_RUNTIME_EXEC)
		s.argv = argv;
	s.event = "{}";
	s.event_len = 2;
	s.timeout_ms = 60000;
	s.warm = warm;
	s.generation = gen;
	RT_ASSERT(job_run(S.rt, S.loop, &s, &j) == 0);
	if (j.o.status != RELAY_RUN_OK) {
		printf("# %s: %s\n", kind_name(kind), j.o.reason);
		for (i = 0; i < j.c.n; i++)
			printf("#   %s\n", cap_line(&j.c, i));
	}
	RT_CHECK(j.o.status == RELAY_RUN_OK);
	RT_CHECK(!cap_contains(&j.c, "Traceback"));
	RT_CHECK(j.o.warm == (warm != RELAY_WARM_OFF));
	for (i = 0; i < RT_NCASES(expect); i++) {
		const char *got;

		if (expect[i].c_only && kind == RELAY_RUNTIME_PYTHON3)
			continue;
		got = answer(&j.c, expect[i].name);
		if (!got || strcmp(got, expect[i].want) != 0)
			RT_FAILF("%s %s: %s, want %s", kind_name(kind),
				 expect[i].name, got ? got : "(no line)",
				 expect[i].want);
	}
	if (kind == RELAY_RUNTIME_NODE)
		RT_CHECK(cap_has(&j.c, "node-unshare-U failed"));
	job_free(&j);
}

static void need(relay_runtime_kind kind)
{
	if (kind == RELAY_RUNTIME_NODE && !have_prog("/usr/bin/node"))
		RT_SKIP("node missing");
}

static void cold_case(relay_runtime_kind kind)
{
	need(kind);
	probe_once(kind, RELAY_WARM_OFF, 1);
}

/* Twice in one warm parent: two invocation processes. */
static void warm_case(relay_runtime_kind kind)
{
	uint64_t g = next_gen++;

	need(kind);
	probe_once(kind, RELAY_WARM_REQUIRE, g);
	probe_once(kind, RELAY_WARM_REQUIRE, g);
}

static void test_sec_seccomp__exec_cold(void)
{
	cold_case(RELAY_RUNTIME_EXEC);
}

static void test_sec_seccomp__python3_cold(void)
{
	cold_case(RELAY_RUNTIME_PYTHON3);
}

static void test_sec_seccomp__node_cold(void)
{
	cold_case(RELAY_RUNTIME_NODE);
}

static void test_sec_seccomp__exec_warm(void)
{
	warm_case(RELAY_RUNTIME_EXEC);
}

static void test_sec_seccomp__python3_warm(void)
{
	warm_case(RELAY_RUNTIME_PYTHON3);
}

static void test_sec_seccomp__node_warm(void)
{
	warm_case(RELAY_RUNTIME_NODE);
}

/* Copy the built C probe into the app directory (mode 0755). */
static int copy_probe(void)
{
	const char *b = getenv("RELAY_BUILD_ROOT");
	char src[1024], dst[512];
	size_t len = 0;
	char *bin;
	int fd, rc = -1;

	snprintf(src, sizeof(src), "%s/tests/security/seccomp_probe",
		 b && *b ? b : RELAY_BUILD_ROOT);
	bin = rt_slurp(src, &len);
	if (!bin) {
		perror(src);
		return -1;
	}
	snprintf(dst, sizeof(dst), "%s/seccomp_probe", S.app_dir);
	fd = open(dst, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);
	if (fd >= 0 && write(fd, bin, len) == (ssize_t)len &&
	    fchmod(fd, 0755) == 0)
		rc = 0;
	if (fd >= 0)
		close(fd);
	free(bin);
	return rc;
}

static void setup(void)
{
	rtf_rt_opts o = { .warm = 1, .warm_idle_ms = 600000 };
	char src[512], *text;

#if !defined(__x86_64__) && !defined(__aarch64__)
	skip_why = "the probes know x86_64 and aarch64 only";
	return;
#endif
	if (!have_prog("/usr/bin/bwrap") || !have_prog("/usr/bin/python3")) {
		skip_why = "bwrap or python3 missing";
		return;
	}
	rtf_setup(&S, "seccomp");
	snprintf(src, sizeof(src), "%s/tests/security/seccomp_probe.py",
		 src_root());
	text = rt_slurp(src, NULL);
	if (!text) {
		perror(src);
		exit(1);
	}
	rtf_write(S.app_dir, "probe.py", text);
	free(text);
	rtf_write(S.app_dir, "probe.js", NODE_PROBE);
	if (copy_probe() != 0)
		exit(1);
	S.rt = rtf_runtime_new(S.loop, &o);
	if (!S.rt)
		skip_why = "bwrap cannot run here";
}

int main(int argc, char **argv)
{
	static const rt_case cases[] = {
		RT_CASE(test_sec_seccomp__exec_cold),
		RT_CASE(test_sec_seccomp__python3_cold),
		RT_CASE(test_sec_seccomp__node_cold),
		RT_CASE(test_sec_seccomp__exec_warm),
		RT_CASE(test_sec_seccomp__python3_warm),
		RT_CASE(test_sec_seccomp__node_warm),
	};
	int rc;

	setup();
	if (skip_why) {
		printf("TAP version 13\n1..0 # SKIP %s\n", skip_why);
		return 0;
	}
	rc = rt_main(argc, argv, cases, RT_NCASES(cases));
	if (rtf_teardown(&S, false) != 0)
		rc = 1;
	return rc;
}
