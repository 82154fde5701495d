/*
 * test_sec_sandbox.c - security regressions of the "bwrap" backend
 * (issue 14 items 1 and 4). Real bubblewrap, real processes; the root
 * cases skip, saying why, when the test does not run as root. When bwrap
 * cannot run here the whole program reports a TAP skip plan.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "relay/runtime.h"
#include "relaytest.h"
#include "runtime/rt_helpers.h"

/* A fresh app directory (mode @mode) holding a root-only "secret". */
static void make_app(char *dir, mode_t mode)
{
	char path[128];
	int fd;

	RT_ASSERT(mkdtemp(dir) != NULL);
	RT_ASSERT(chmod(dir, mode) == 0);
	snprintf(path, sizeof(path), "%s/secret", dir);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
	RT_ASSERT(fd >= 0);
	RT_ASSERT(write(fd, "TOPSECRET\n", 10) == 10);
	close(fd);
}

static void remove_app(const char *dir)
{
	char path[128];

	snprintf(path, sizeof(path), "%s/secret", dir);
	unlink(path);
	rmdir(dir);
}

static int run_in(relay_runtime *rt, const char *dir, const char *script,
		  uint32_t timeout_ms, cap *c, relay_run_outcome *o,
		  relay_error *err)
{
	const char *argv[] = { "/bin/sh", "-c", script, NULL };
	relay_exec_spec s = sh_spec(argv, timeout_ms);

	s.app_dir = dir;
	memset(o, 0, sizeof(*o));
	return relay_runtime_run_sync(rt, &s, cap_cb, c, o, err);
}

static relay_runtime *rt_user(const char *user, uint32_t grace_ms,
			      relay_error *err)
{
	relay_runtime_options o = RELAY_RUNTIME_OPTIONS_INIT;
	relay_runtime *rt = NULL;

	o.backend = "bwrap";
	o.bootstrap_dir = bootstrap_dir();
	o.limits = RELAY_LIMITS_NONE;
	o.kill_grace_ms = grace_ms;
	o.sandbox_user = user;
	if (relay_runtime_new(&rt, &o, err) != 0)
		return NULL;
	return rt;
}

/*
 * Item 1: a root relayd must not hand root's file access to handlers.
 * The sandbox's uid 65534 used to map onto host uid 0, so a handler could
 * read root-only files in its own app directory and list /etc/ssl/private.
 */
static void test_sec__root_handler_is_unprivileged(void)
{
	char dir[] = "/tmp/relay-sec-XXXXXX";
	relay_run_outcome o;
	relay_runtime *rt;
	relay_error err;
	cap c = { 0 };

	if (geteuid() != 0)
		RT_SKIP("needs root: checks what a root relayd lends handlers");
	rt = rt_user(NULL, 200, &err);
	if (!rt)
		RT_FAILF("relay_runtime_new: %s", err.text);
	RT_ASSERT(rt != NULL);
	make_app(dir, 0755);
	RT_EQ_INT(run_in(rt, dir,
			 "cat secret 2>/dev/null && echo READ; "
			 "ls /etc/ssl/private >/dev/null 2>&1 && echo LISTED; "
			 "test -e /etc/ssl/private && echo PRIVATE; "
			 "test -d /etc/ssl/certs && echo CERTS; "
			 "id -u", 5000, &c, &o, &err), 0);
	RT_EQ_INT(o.status, RELAY_RUN_OK);
	RT_CHECK(!cap_contains(&c, "TOPSECRET"));
	RT_CHECK(!cap_has(&c, "READ"));
	RT_CHECK(!cap_has(&c, "LISTED"));
	RT_CHECK(!cap_has(&c, "PRIVATE"));
	if (access("/etc/ssl/certs", F_OK) == 0)
		RT_CHECK(cap_has(&c, "CERTS"));
	RT_CHECK(cap_has(&c, "65534"));
	cap_free(&c);
	remove_app(dir);
	relay_runtime_free(rt);
}

/* The host user is configurable; root and unknown users are refused. */
static void test_sec__sandbox_user_option(void)
{
	char dir[] = "/tmp/relay-sec-XXXXXX";
	relay_run_outcome o;
	relay_runtime *rt;
	relay_error err;
	cap c = { 0 };
	char mine[160];
	int fd;

	if (geteuid() != 0)
		RT_SKIP("needs root: the sandbox user applies only to root");
	RT_CHECK(rt_user("root", 200, &err) == NULL);
	RT_CHECK(strstr(err.text, "must not be 0") != NULL);
	RT_CHECK(rt_user("0", 200, &err) == NULL);
	RT_CHECK(rt_user("no-such-user-relay", 200, &err) == NULL);
	RT_CHECK(strstr(err.text, "no such user") != NULL);
	rt = rt_user("4242", 200, &err);
	if (!rt)
		RT_FAILF("relay_runtime_new(4242): %s", err.text);
	RT_ASSERT(rt != NULL);
	make_app(dir, 0755);
	/* Host uid 4242: its own 0600 file is readable, root's is not. */
	snprintf(mine, sizeof(mine), "%s/mine", dir);
	fd = open(mine, O_WRONLY | O_CREAT | O_EXCL, 0600);
	RT_ASSERT(fd >= 0);
	RT_ASSERT(write(fd, "MINE\n", 5) == 5);
	RT_ASSERT(fchown(fd, 4242, 4242) == 0);
	close(fd);
	RT_EQ_INT(run_in(rt, dir, "cat mine; cat secret 2>/dev/null",
			 5000, &c, &o, &err), 0);
	RT_CHECK(cap_has(&c, "MINE"));
	RT_CHECK(!cap_has(&c, "TOPSECRET"));
	unlink(mine);
	cap_free(&c);
	remove_app(dir);
	relay_runtime_free(rt);
}

/* An app directory the sandbox user cannot read is a clear spawn error
 * naming the directory and the uid, not a puzzling bwrap failure. */
static void test_sec__unreadable_app_dir_is_clear(void)
{
	char dir[] = "/tmp/relay-sec-XXXXXX";
	relay_run_outcome o;
	relay_runtime *rt;
	relay_error err;
	cap c = { 0 };
	int rc;

	if (geteuid() != 0)
		RT_SKIP("needs root: only a root host switches users");
	rt = rt_user(NULL, 200, &err);
	RT_ASSERT(rt != NULL);
	make_app(dir, 0700);
	memset(&err, 0, sizeof(err));
	rc = run_in(rt, dir, "echo RAN", 5000, &c, &o, &err);
	RT_CHECK(rc != 0);
	RT_CHECK(!cap_has(&c, "RAN"));
	RT_CHECK(strstr(err.text, dir) != NULL);
	RT_CHECK(strstr(err.text, "not readable by the sandbox user") != NULL);
	RT_CHECK(strstr(err.text, "65534") != NULL);
	cap_free(&c);
	remove_app(dir);
	relay_runtime_free(rt);
}

/*
 * Item 4: at its timeout a handler gets SIGTERM and the grace period. The
 * outer bwrap used to take the SIGTERM, die, and have the sandbox
 * SIGKILLed at once (--die-with-parent), so a trap never got to finish.
 */
static void test_sec__sigterm_reaches_handler(void)
{
	relay_run_outcome o;
	relay_runtime *rt;
	relay_error err;
	cap c = { 0 };

	if (!have_prog("/bin/sleep"))
		RT_SKIP("sleep not installed");
	rt = rt_user(NULL, 3000, &err);
	RT_ASSERT(rt != NULL);
	/* 1.5 s: the trap is surely set even on a loaded machine. */
	RT_EQ_INT(run_sh(rt, "trap 'sleep 0.4; echo graceful; exit 7' TERM; "
			 "echo ready; sleep 30 & wait", 1500, &c, &o), 0);
	RT_EQ_INT(o.status, RELAY_RUN_TIMEOUT);
	RT_CHECK(cap_has(&c, "ready"));
	RT_CHECK(cap_has(&c, "graceful"));
	/* It exited by itself within the 3 s grace (SIGKILL at 4.5 s). */
	RT_CHECK(o.duration_us < 4000000);
	cap_free(&c);
	/* A handler ignoring SIGTERM is still SIGKILLed after the grace. */
	relay_runtime_free(rt);
	rt = rt_user(NULL, 300, &err);
	RT_ASSERT(rt != NULL);
	RT_EQ_INT(run_sh(rt, "trap '' TERM; sleep 30 & wait; wait",
			 300, &c, &o), 0);
	RT_EQ_INT(o.status, RELAY_RUN_TIMEOUT);
	RT_CHECK(o.duration_us < 2000000);
	cap_free(&c);
	relay_runtime_free(rt);
}

static relay_runtime *rt_uids(const char *range, relay_error *err)
{
	relay_runtime_options o = RELAY_RUNTIME_OPTIONS_INIT;
	relay_runtime *rt = NULL;

	o.backend = "bwrap";
	o.bootstrap_dir = bootstrap_dir();
	o.limits = RELAY_LIMITS_NONE;
	o.sandbox_uids = range;
	if (relay_runtime_new(&rt, &o, err) != 0)
		return NULL;
	return rt;
}

/* The range's form, whoever runs it (relay_runtime_uid_range_parse). */
static void test_sec__uid_range_parse(void)
{
	static const struct {
		const char *in, *why;
	} bad[] = {
		{ "", "expected LO-HI" }, { "100000", "expected LO-HI" },
		{ "100000-", "expected LO-HI" }, { "-5", "expected LO-HI" },
		{ " 1-2", "expected LO-HI" }, { "1-2 ", "expected LO-HI" },
		{ "+1-2", "expected LO-HI" }, { "1-99999999999", "LO-HI" },
		{ "0-10", "at least 1 (uid 0 is root)" },
		{ "20-10", "LO must not be above HI" },
		{ "1-2147483648", "at most 2147483647" },
		{ "65534-65534", "must not hold 65534" },
		{ "60000-70000", "must not hold 65534" },
	};
	relay_error err;
	uint32_t lo = 0, hi = 0;
	size_t i;

	for (i = 0; i < RT_NCASES(bad); i++) {
		memset(&err, 0, sizeof(err));
		RT_EQ_INT(relay_runtime_uid_range_parse(bad[i].in, &lo, &hi,
							&err), RELAY_EINVAL);
		if (!strstr(err.text, bad[i].why))
			RT_FAILF("\"%s\": %s", bad[i].in, err.text);
	}
	RT_EQ_INT(relay_runtime_uid_range_parse("100000-165535", &lo, &hi,
						NULL), 0);
	RT_EQ_INT(lo, 100000);
	RT_EQ_INT(hi, 165535);
	RT_EQ_INT(relay_runtime_uid_range_parse("65535-2147483647", NULL,
						NULL, NULL), 0);
}

/*
 * Issue 40 item 4: each app its own host uid out of the range, stable,
 * deterministic and never shared; a file of app a's uid (0600) is
 * readable by a's handlers and not by b's.
 */
static void test_sec__uid_per_app(void)
{
	const char *ab[] = { "b", "a", "a" }, *abc[] = { "a", "b", "c" },
		   *d[] = { "d" }, *ba[] = { "a", "b" };
	char dir[] = "/tmp/relay-sec-XXXXXX", mine[160];
	uint32_t ua, ub, uc, ua2, ub2;
	relay_run_outcome o;
	relay_runtime *rt, *rt2;
	relay_error err;
	cap c = { 0 };
	int fd;

	if (geteuid() != 0)
		RT_SKIP("needs root: only a root host switches uids");
	/* A range holding a user of this host (uid 1 is Debian's daemon). */
	RT_CHECK(rt_uids("1-1000", &err) == NULL);
	RT_CHECK(strstr(err.text, "holds uid") != NULL ||
		 strstr(err.text, "holds gid") != NULL);
	rt = rt_uids("1900000100-1900000102", &err);
	if (!rt)
		RT_FAILF("relay_runtime_new: %s", err.text);
	RT_ASSERT(rt != NULL);
	RT_EQ_INT(relay_runtime_sandbox_uid(rt, "a", &ua), RELAY_ENOTFOUND);
	RT_EQ_INT(relay_runtime_sandbox_assign(rt, ab, 3, &err), 0);
	RT_EQ_INT(relay_runtime_sandbox_uid(rt, "a", &ua), 0);
	RT_EQ_INT(relay_runtime_sandbox_uid(rt, "b", &ub), 0);
	RT_CHECK(ua != ub);
	RT_CHECK(ua >= 1900000100 && ua <= 1900000102);
	RT_CHECK(ub >= 1900000100 && ub <= 1900000102);
	/* A reload: the known keep theirs, the new one gets the last. */
	RT_EQ_INT(relay_runtime_sandbox_assign(rt, abc, 3, &err), 0);
	RT_EQ_INT(relay_runtime_sandbox_uid(rt, "a", &ua2), 0);
	RT_EQ_INT(relay_runtime_sandbox_uid(rt, "b", &ub2), 0);
	RT_EQ_INT(relay_runtime_sandbox_uid(rt, "c", &uc), 0);
	RT_EQ_INT(ua2, ua);
	RT_EQ_INT(ub2, ub);
	RT_CHECK(uc != ua && uc != ub);
	/* Full: nothing is taken back, even from an app no longer listed. */
	memset(&err, 0, sizeof(err));
	RT_EQ_INT(relay_runtime_sandbox_assign(rt, d, 1, &err), RELAY_EINVAL);
	RT_CHECK(strstr(err.text, "has 3 uids, 3 given out, too few for 1 "
			"more app(s)") != NULL);
	RT_EQ_INT(relay_runtime_sandbox_uid(rt, "d", &uc), RELAY_ENOTFOUND);
	/* The same names in another order elsewhere: the same uids. */
	rt2 = rt_uids("1900000100-1900000102", &err);
	RT_ASSERT(rt2 != NULL);
	RT_EQ_INT(relay_runtime_sandbox_assign(rt2, ba, 2, &err), 0);
	RT_EQ_INT(relay_runtime_sandbox_uid(rt2, "a", &ua2), 0);
	RT_EQ_INT(relay_runtime_sandbox_uid(rt2, "b", &ub2), 0);
	RT_EQ_INT(ua2, ua);
	RT_EQ_INT(ub2, ub);
	relay_runtime_free(rt2);

	make_app(dir, 0755);
	snprintf(mine, sizeof(mine), "%s/mine", dir);
	fd = open(mine, O_WRONLY | O_CREAT | O_EXCL, 0600);
	RT_ASSERT(fd >= 0);
	RT_ASSERT(write(fd, "MINE\n", 5) == 5);
	RT_ASSERT(fchown(fd, (uid_t)ua, (gid_t)ua) == 0);
	close(fd);
	{
		const char *argv[] = { "/bin/sh", "-c",
				       "cat mine 2>/dev/null || echo DENIED",
				       NULL };
		relay_exec_spec s = sh_spec(argv, 5000);

		s.app_dir = dir;
		s.app = "a";
		memset(&o, 0, sizeof(o));
		RT_EQ_INT(relay_runtime_run_sync(rt, &s, cap_cb, &c, &o,
						 &err), 0);
		RT_CHECK(cap_has(&c, "MINE"));
		cap_free(&c);
		s.app = "b";
		memset(&o, 0, sizeof(o));
		RT_EQ_INT(relay_runtime_run_sync(rt, &s, cap_cb, &c, &o,
						 &err), 0);
		RT_CHECK(cap_has(&c, "DENIED"));
		RT_CHECK(!cap_has(&c, "MINE"));
		cap_free(&c);
	}
	unlink(mine);
	remove_app(dir);
	relay_runtime_free(rt);
}

static const rt_case cases[] = {
	RT_CASE(test_sec__root_handler_is_unprivileged),
	RT_CASE(test_sec__sandbox_user_option),
	RT_CASE(test_sec__unreadable_app_dir_is_clear),
	RT_CASE(test_sec__sigterm_reaches_handler),
	RT_CASE(test_sec__uid_range_parse),
	RT_CASE(test_sec__uid_per_app),
};

int main(int argc, char **argv)
{
	return rt_bwrap_main(argc, argv, cases, RT_NCASES(cases));
}
