/*
 * test_sec_warm_diff.c - a generic differential test of handler isolation
 * (suite 'security'). Instead of listing what one invocation must not
 * leave to the next, it lets a POISONER invocation change everything it
 * can reach (files in every writable directory, /dev, keyrings, SysV and
 * POSIX IPC, abstract sockets, /proc/1 and /proc/self attributes,
 * rlimits of itself and of pid 1, signals queued to pid 1, background
 * daemons, the pid counter...), then takes FINGERPRINTS, a canonical
 * description of everything an invocation can observe, and compares them
 * byte for byte with the fingerprint of an invocation nothing ran
 * before:
 *
 *   warm: fingerprints in the poisoner's own warm parent (python3: until
 *         the poisoner's slot served one again) == the first invocation
 *         of a fresh parent; and a fresh parent started after the poison
 *         == one started before it (nothing leaked to the host);
 *   cold: cold fingerprint after a cold poisoner == a cold fingerprint
 *         taken before it.
 *
 * Both programs are tests/security/warm_diff_probe.py, copied into a
 * temporary app directory as probe.py: the python3 runtime imports it
 * (handler probe.run), the exec runtime runs `python3 /app/probe.py`,
 * the node runtime's probe.js runs that from its handler. The event
 * says which program runs.
 *
 * Before comparing, the values in diff_ignore[] (each documented there:
 * per-invocation by nature) are blanked; nothing else. A difference is
 * printed as a unified diff in TAP diagnostics.
 *
 * `test_sec_warm_diff CASE...` runs only the named cases, e.g.
 * test_sec_warm_diff__python3_warm (meson test sec-warm-diff
 * --test-args NAME); RELAY_WARM_DIFF_KEEP=1 keeps every probe's raw output
 * in the app directory (its path is printed); RELAY_WARM_DIFF_POISON=
 * "fs,keys,..." runs only those poison steps, to find which one a
 * difference comes from (a poisoned python3 slot that cannot serve hides
 * the rest: try without "limits").
 *
 * Skips (TAP skip plan) when bwrap or python3 cannot run here or warm
 * parents are unavailable; the node cases skip without node. Nothing
 * here needs root (as root the sandbox runs as nobody).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <regex.h>
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

static rtf_suite S;   /* loop, app dir, runtime (lib/rt_fixture.h) */
static const char *skip_why;
static uint64_t next_gen = 100;
/* The poisoner's event; RELAY_WARM_DIFF_POISON="keys,limits" runs only
 * those steps of it (fs keys ipc proc signals background limits), to
 * find which one a difference comes from. */
static char poison_event[256] = "{\"mode\":\"poison\"}";
/* Another poisoner event for one round (NULL: poison_event). */
static const char *poison_now;
/* Every step but "limits": a python3 slot whose rlimits were lowered
 * retires, so only a poisoner that leaves them lets a fingerprint run in
 * its slot. */
static const char poison_keep_slot[] =
	"{\"mode\":\"poison\",\"only\":[\"fs\",\"keys\",\"ipc\",\"proc\","
	"\"signals\",\"background\"]}";

/*
 * What differs between two invocations nothing ran before, by nature,
 * and is blanked before comparing. Each @re is applied to every line of
 * a fingerprint (all matches); "\1".."\9" in @repl stand for its groups;
 * a NULL @repl drops the lines it matches.
 * Keep this list short: every entry hides whatever an invocation could
 * do to that value.
 */
static const struct {
	const char *re;
	const char *repl;
	const char *why;
} diff_ignore[] = {
	/* Namespace, pipe and socket inode numbers: every invocation (cold)
	 * or slot (warm) has new namespaces and pipes; the identities are
	 * compared separately (slot coverage, same parent). */
	{ "([a-z]+):\\[[0-9]+\\]", "\\1:[*]", "kernel object inodes" },
	/* NSpid/NStgid/NSpgid/NSsid list the pid in every enclosing pid
	 * namespace: all but the innermost are host or sandbox pids,
	 * allocated by whatever else runs on the host. The innermost stays
	 * compared. */
	{ "^(status [a-z0-9]+ NS[a-z]+ )[0-9 ]* ", "\\1* ",
	  "outer pids of NS* fields" },
	/* The link count of /proc is the number of processes on the whole
	 * host (procfs adds nr_processes()), whatever the namespace. */
	{ "^(top /proc [^ ]+ [0-7]+ [0-9]+ [0-9]+ nlink )[0-9]+",
	  "\\1*", "/proc's link count" },
	/* SigQ counts the signals pending for the sandbox's user: besides
	 * the reader's, the slot process's own SIGCHLD (it blocks every
	 * signal and reaps with waitpid) is pending or not depending on
	 * timing, 1 or 2 either way. Signals an invocation queued would
	 * show as more: those stay compared. */
	{ "^(status [0-9]+ SigQ )[0-2]/", "\\1<=2/",
	  "a slot's own pending SIGCHLD" },
	/* Unnamed unix sockets of the sandbox's network namespace: a warm
	 * parent's own, one per slot, and it has as many slots as it had
	 * invocations in flight at once (plus one); abstract and named
	 * sockets stay compared. */
	{ "^(unix unnamed )[0-9]+", "\\1*", "unnamed socket count" },
	/* /proc/keys lists every key of the host user the sandbox runs as,
	 * on the whole host: each live sandbox (other apps', other tests',
	 * warm parents kept for later) has its own user keyring, user
	 * session keyring and keyring register. Those three, with the
	 * permissions the kernel gives them, are dropped; any other key,
	 * or one of those with other permissions, stays compared. */
	{ "^proc keys [^ ]+ (1f3f0000 [0-9]+ [0-9]+ keyring _uid(_ses)?\\."
	  "[0-9]+|0c030000 [0-9]+ [0-9]+ keyring \\.user_reg): ",
	  NULL, "every live sandbox's own keyrings" },
	/* The persistent keyring of a user namespace, made by the kernel
	 * the first time a sandbox asks for it: which sandbox's it is
	 * cannot be told. The keys in it are the poisoner's, compared. */
	{ "^proc keys [^ ]+ 1f030000 [0-9]+ [0-9]+ keyring _persistent\\."
	  "[0-9]+: ", NULL, "persistent keyrings" },
	/* The key quota used by that host user, on the whole host (the
	 * same sandboxes); the limits stay compared. */
	{ "^(proc key-users [0-9]+: )[0-9]+ [0-9]+/[0-9]+ [0-9]+/([0-9]+) "
	  "[0-9]+/([0-9]+)", "\\1* */* */\\2 */\\3",
	  "the host user's key count" },
};

static regex_t diff_re[RT_NCASES(diff_ignore)];

/* @line with the diff_ignore[] substitutions, appended to @out. */
static void normalise_line(const char *line, char **out, size_t *len,
			   size_t *size)
{
	char *cur = strdup(line);
	size_t i;

	for (i = 0; i < RT_NCASES(diff_ignore); i++) {
		regmatch_t m[10];
		char *res = NULL;
		size_t rlen = 0, off = 0;
		FILE *f = open_memstream(&res, &rlen);
		int flags = 0;

		if (!diff_ignore[i].repl) {
			fclose(f);
			free(res);
			if (regexec(&diff_re[i], cur, 0, NULL, 0) == 0) {
				free(cur);
				return;
			}
			continue;
		}
		while (cur[off] &&
		       regexec(&diff_re[i], cur + off, 10, m, flags) == 0) {
			const char *r;

			fwrite(cur + off, 1, (size_t)m[0].rm_so, f);
			for (r = diff_ignore[i].repl; *r; r++) {
				int g = r[0] == '\\' && r[1] >= '1' &&
					r[1] <= '9' ? r[1] - '0' : 0;

				if (g && m[g].rm_so >= 0) {
					fwrite(cur + off + m[g].rm_so, 1,
					       (size_t)(m[g].rm_eo -
							m[g].rm_so), f);
					r++;
				} else {
					fputc(*r, f);
				}
			}
			off += (size_t)m[0].rm_eo + (m[0].rm_eo == 0);
			flags = REG_NOTBOL;
		}
		fputs(cur + off, f);
		fclose(f);
		free(cur);
		cur = res;
	}
	while (*len + strlen(cur) + 2 > *size) {
		*size = *size ? *size * 2 : 65536;
		*out = realloc(*out, *size);
	}
	*len += (size_t)sprintf(*out + *len, "%s\n", cur);
	free(cur);
}

/* One invocation on the shared loop; 0 when it ran. */
static int run1(const relay_exec_spec *s, struct job *j)
{
	return job_run(S.rt, S.loop, s, j);
}

/* A probe run's output: raw (every line, stderr marked) and normalised. */
struct print {
	char *raw, *norm;
	char slot[64], sandbox[64];  /* pid and net namespace */
	bool warm, ok;
	bool poisoned;    /* the poisoner reached its end */
};

static void print_free(struct print *p)
{
	free(p->raw);
	free(p->norm);
	memset(p, 0, sizeof(*p));
}

static relay_exec_spec probe_spec(relay_runtime_kind kind, const char *app,
				  bool poison, uint64_t gen, int warm)
{
	static const char *const argv[] = {
		"/usr/bin/python3", "/app/probe.py", NULL,
	};
	static char ev[320];
	relay_exec_spec s = RELAY_EXEC_SPEC_INIT;

	s.app = app;
	s.handler = "probe.run";
	s.message_id = "1-0";
	s.app_dir = S.app_dir;
	s.runtime = kind;
	if (kind == RELAY_RUNTIME_EXEC)
		s.argv = argv;
	/* A probe takes well under a second; the bound is for a machine
	 * busy with other work, scaled as every test's (tests/run.sh). */
	s.timeout_ms = 60000;
	if (getenv("RELAY_TEST_TIMEOUT_MULTIPLIER")) {
		double m = atof(getenv("RELAY_TEST_TIMEOUT_MULTIPLIER"));

		if (m > 1)     /* the runtime's ceiling is 5 minutes */
			s.timeout_ms = m < 5 ? (uint32_t)(60000 * m) : 300000;
	}
	if (poison)
		snprintf(ev, sizeof(ev), "{\"tag\":\"%s\",%s", app,
			 (poison_now ? poison_now : poison_event) + 1);
	else
		snprintf(ev, sizeof(ev), "{\"tag\":\"%s\",\"mode\":"
			 "\"fingerprint\"}", app);
	s.event = ev;
	s.event_len = strlen(s.event);
	s.warm = warm;
	s.generation = gen;
	return s;
}

/* Run the probe; @p gets its output. */
static void probe(relay_runtime_kind kind, const char *app, bool poison,
		  uint64_t gen, int warm, struct print *p)
{
	relay_exec_spec s = probe_spec(kind, app, poison, gen, warm);
	size_t len = 0, size = 0, i;
	FILE *raw;
	size_t rawlen;
	struct job j;

	memset(p, 0, sizeof(*p));
	raw = open_memstream(&p->raw, &rawlen);
	if (run1(&s, &j) != 0) {
		fclose(raw);
		p->norm = strdup("");
		return;
	}
	p->warm = j.o.warm;
	p->ok = j.o.status == RELAY_RUN_OK;
	p->poisoned = cap_has(&j.c, "poison done");
	if (cap_contains(&j.c, "Traceback"))
		p->ok = false;
	if (!p->ok) {
		printf("# probe (%s, %s): %s\n", app,
		       poison ? "poison" : "fingerprint", j.o.reason);
		for (i = 0; i < j.c.n; i++)
			printf("#   %s\n", cap_line(&j.c, i));
	}
	for (i = 0; i < j.c.n; i++) {
		const char *l = cap_line(&j.c, i);
		char line[4096];

		snprintf(line, sizeof(line), "%s%s",
			 j.c.stream[i] == RELAY_OUTPUT_STDERR ? "stderr: " : "",
			 l);
		fprintf(raw, "%s\n", line);
		if (strncmp(l, "ns pid ", 7) == 0)
			snprintf(p->slot, sizeof(p->slot), "%s", l + 7);
		if (strncmp(l, "ns net ", 7) == 0)
			snprintf(p->sandbox, sizeof(p->sandbox), "%s", l + 7);
		if (!poison)
			normalise_line(line, &p->norm, &len, &size);
	}
	fclose(raw);
	if (!p->norm)
		p->norm = strdup("");
	cap_free(&j.c);
}

/*
 * Compare two normalised fingerprints; on a difference print a unified
 * diff (TAP diagnostics) and fail the case. @what names the comparison.
 */
static bool same_print(const char *what, const struct print *want,
		       const struct print *got)
{
	char a[512], b[512], cmd[1400], line[4096];
	FILE *d;

	if (strcmp(want->norm, got->norm) == 0)
		return true;
	RT_FAILF("%s: fingerprints differ", what);
	snprintf(a, sizeof(a), "%s/want.txt", S.app_dir);
	snprintf(b, sizeof(b), "%s/got.txt", S.app_dir);
	rtf_write(S.app_dir, "want.txt", want->norm);
	rtf_write(S.app_dir, "got.txt", got->norm);
	snprintf(cmd, sizeof(cmd), "diff -u --label fresh --label after-poison"
		 " '%s' '%s'", a, b);
	d = popen(cmd, "r");
	if (!d)
		return false;
	while (fgets(line, sizeof(line), d))
		printf("#   %s", line);
	pclose(d);
	fflush(stdout);
	return false;
}

/*
 * A new runtime for each case: freeing the last one ends its warm
 * parents, so no poisoned parent (nor what it holds) outlives its case.
 */
static int fresh_rt(void)
{
	rtf_rt_opts o = { .warm = 1, .warm_idle_ms = 600000,
			  .warm_max_parents = 16 };

	if (S.rt)
		relay_runtime_free(S.rt);
	S.rt = rtf_runtime_new(S.loop, &o);
	return S.rt ? 0 : -1;
}

static const char *kind_name(relay_runtime_kind k)
{
	return k == RELAY_RUNTIME_PYTHON3 ? "python3"
	       : k == RELAY_RUNTIME_NODE  ? "node" : "exec";
}

static void keep(const char *name, const struct print *p)
{
	const char *k = getenv("RELAY_WARM_DIFF_KEEP");

	if (k && *k == '1')
		rtf_write(S.app_dir, name, p->raw ? p->raw : "");
}

static void need_node(relay_runtime_kind kind)
{
	if (kind == RELAY_RUNTIME_NODE && !have_prog("/usr/bin/node"))
		RT_SKIP("node missing");
}

/*
 * Cold: a fingerprint, the poisoner, a fingerprint: both fingerprints
 * equal.
 */
static void cold_case(relay_runtime_kind kind)
{
	char app[32], name[64];
	struct print before, poison, after;

	need_node(kind);
	RT_ASSERT(fresh_rt() == 0);
	snprintf(app, sizeof(app), "cold%s", kind_name(kind));
	probe(kind, app, false, 1, RELAY_WARM_OFF, &before);
	probe(kind, app, true, 1, RELAY_WARM_OFF, &poison);
	probe(kind, app, false, 1, RELAY_WARM_OFF, &after);
	RT_CHECK(before.ok && poison.ok && after.ok);
	RT_CHECK(!before.warm && !poison.warm && !after.warm);
	snprintf(name, sizeof(name), "%s-before.txt", app);
	keep(name, &before);
	snprintf(name, sizeof(name), "%s-poison.txt", app);
	keep(name, &poison);
	snprintf(name, sizeof(name), "%s-after.txt", app);
	keep(name, &after);
	RT_CHECK(poison.poisoned);
	same_print("cold after poison vs cold before", &before, &after);
	print_free(&before);
	print_free(&poison);
	print_free(&after);
}

/*
 * Warm: the first invocation of a fresh parent (generation g1); the
 * poisoner in another fresh parent (g2), then fingerprints there until
 * the poisoner's slot served one (python3: slots are reused; exec and
 * node: at least 4, in the same sandbox for exec); then the first
 * invocation of a third fresh parent (g3).
 */
static void warm_case(relay_runtime_kind kind)
{
	char app[32], name[64];
	struct print base, poison, fp, late;
	uint64_t g1 = next_gen++, g2 = next_gen++, g3 = next_gen++;
	bool slot_seen = false, differs = false;
	int i;

	need_node(kind);
	RT_ASSERT(fresh_rt() == 0);
	snprintf(app, sizeof(app), "warm%s", kind_name(kind));
	probe(kind, app, false, g1, RELAY_WARM_REQUIRE, &base);
	RT_ASSERT(base.ok && base.warm);
	probe(kind, app, true, g2, RELAY_WARM_REQUIRE, &poison);
	RT_ASSERT(poison.ok && poison.warm);
	RT_CHECK(poison.poisoned);
	snprintf(name, sizeof(name), "%s-base.txt", app);
	keep(name, &base);
	snprintf(name, sizeof(name), "%s-poison.txt", app);
	keep(name, &poison);
	for (i = 0; i < 12 && (i < 4 || !slot_seen); i++) {
		probe(kind, app, false, g2, RELAY_WARM_REQUIRE, &fp);
		RT_CHECK(fp.ok && fp.warm);
		if (strcmp(fp.slot, poison.slot) == 0)
			slot_seen = true;
		if (kind == RELAY_RUNTIME_EXEC)
			RT_EQ_STR(fp.sandbox, poison.sandbox);
		snprintf(name, sizeof(name), "%s-after-%d.txt", app, i);
		keep(name, &fp);
		/* One diff per run that differs from the fresh parent's;
		 * after the first, only new ones. */
		if (fp.ok && strcmp(base.norm, fp.norm) != 0 && !differs) {
			printf("# %s warm, invocation %d after the poisoner"
			       " (slot %s, %s):\n", kind_name(kind), i + 1,
			       fp.slot, strcmp(fp.slot, poison.slot) == 0 ?
			       "the poisoner's" : "another");
			differs = !same_print("warm after poison vs fresh "
					      "parent", &base, &fp);
		}
		print_free(&fp);
	}
	if (kind == RELAY_RUNTIME_PYTHON3 && !slot_seen) {
		/* The poisoner's slot retired (it lowered the slot's
		 * rlimits): poison a fresh parent again without that step,
		 * whose slot must then serve a later invocation, clean. */
		uint64_t g4 = next_gen++;
		struct print p2;

		poison_now = poison_keep_slot;
		probe(kind, app, true, g4, RELAY_WARM_REQUIRE, &p2);
		poison_now = NULL;
		RT_ASSERT(p2.ok && p2.warm);
		for (i = 0; i < 12 && !slot_seen; i++) {
			probe(kind, app, false, g4, RELAY_WARM_REQUIRE, &fp);
			RT_CHECK(fp.ok && fp.warm);
			if (strcmp(fp.slot, p2.slot) == 0) {
				slot_seen = true;
				printf("# python3 warm, the slot of a poisoner "
				       "that left the rlimits:\n");
				same_print("warm in the poisoner's slot vs "
					   "fresh parent", &base, &fp);
			}
			print_free(&fp);
		}
		print_free(&p2);
	}
	if (kind == RELAY_RUNTIME_PYTHON3)
		RT_CHECK(slot_seen);
	probe(kind, app, false, g3, RELAY_WARM_REQUIRE, &late);
	RT_CHECK(late.ok && late.warm);
	snprintf(name, sizeof(name), "%s-late.txt", app);
	keep(name, &late);
	printf("# %s warm, a fresh parent after the poisoner:\n",
	       kind_name(kind));
	same_print("fresh parent after poison vs fresh parent before", &base,
		   &late);
	print_free(&base);
	print_free(&poison);
	print_free(&late);
}

static void test_sec_warm_diff__python3_cold(void)
{
	cold_case(RELAY_RUNTIME_PYTHON3);
}

static void test_sec_warm_diff__exec_cold(void)
{
	cold_case(RELAY_RUNTIME_EXEC);
}

static void test_sec_warm_diff__node_cold(void)
{
	cold_case(RELAY_RUNTIME_NODE);
}

static void test_sec_warm_diff__python3_warm(void)
{
	warm_case(RELAY_RUNTIME_PYTHON3);
}

static void test_sec_warm_diff__exec_warm(void)
{
	warm_case(RELAY_RUNTIME_EXEC);
}

static void test_sec_warm_diff__node_warm(void)
{
	warm_case(RELAY_RUNTIME_NODE);
}

#define NODE_PROBE                                                        \
	"const { execFileSync } = require('child_process');\n"            \
	"exports.run = (event) => {\n"                                     \
	"  execFileSync('/usr/bin/python3', ['/app/probe.py'], {\n"        \
	"    input: JSON.stringify(event),\n"                              \
	"    stdio: ['pipe', 'inherit', 'inherit'],\n"                     \
	"  });\n"                                                          \
	"};\n"

static void setup(void)
{
	char src[512], *text;
	struct print p;
	size_t i;

	if (getenv("RELAY_WARM_DIFF_POISON")) {
		char list[160], *w, *save_w = NULL;
		const char *sep = "";
		size_t n;

		snprintf(list, sizeof(list), "%s",
			 getenv("RELAY_WARM_DIFF_POISON"));
		n = (size_t)snprintf(poison_event, sizeof(poison_event),
				     "{\"mode\":\"poison\",\"only\":[");
		for (w = strtok_r(list, ", ", &save_w); w && n < 200;
		     w = strtok_r(NULL, ", ", &save_w)) {
			n += (size_t)snprintf(poison_event + n,
					      sizeof(poison_event) - n,
					      "%s\"%s\"", sep, w);
			sep = ",";
		}
		snprintf(poison_event + n, sizeof(poison_event) - n, "]}");
		printf("# poisoner event: %s\n", poison_event);
	}
	for (i = 0; i < RT_NCASES(diff_ignore); i++)
		if (regcomp(&diff_re[i], diff_ignore[i].re, REG_EXTENDED)) {
			fprintf(stderr, "bad regex %s\n", diff_ignore[i].re);
			exit(1);
		}
	if (!have_prog("/usr/bin/bwrap") || !have_prog("/usr/bin/python3")) {
		skip_why = "bwrap or python3 missing";
		return;
	}
	rtf_setup(&S, "warmdiff");
	snprintf(src, sizeof(src), "%s/tests/security/warm_diff_probe.py",
		 src_root());
	text = rt_slurp(src, NULL);
	if (!text) {
		perror(src);
		exit(1);
	}
	rtf_write(S.app_dir, "probe.py", text);
	free(text);
	rtf_write(S.app_dir, "probe.js", NODE_PROBE);
	if (fresh_rt() != 0) {
		skip_why = "bwrap cannot run here";
		return;
	}
	probe(RELAY_RUNTIME_PYTHON3, "warmcheck", false, 1,
	      RELAY_WARM_REQUIRE, &p);
	if (!p.ok || !p.warm)
		skip_why = "warm parents unavailable here";
	print_free(&p);
}

int main(int argc, char **argv)
{
	static const rt_case cases[] = {
		RT_CASE(test_sec_warm_diff__python3_cold),
		RT_CASE(test_sec_warm_diff__exec_cold),
		RT_CASE(test_sec_warm_diff__node_cold),
		RT_CASE(test_sec_warm_diff__python3_warm),
		RT_CASE(test_sec_warm_diff__exec_warm),
		RT_CASE(test_sec_warm_diff__node_warm),
	};
	const char *k = getenv("RELAY_WARM_DIFF_KEEP");
	size_t i;
	int rc;

	setup();
	if (skip_why) {
		printf("TAP version 13\n1..0 # SKIP %s\n", skip_why);
		return 0;
	}
	rc = rt_main(argc, argv, cases, RT_NCASES(cases));
	for (i = 0; i < RT_NCASES(diff_ignore); i++)
		regfree(&diff_re[i]);
	if (k && *k == '1')
		printf("# fingerprints kept in %s\n", S.app_dir);
	if (rtf_teardown(&S, k && *k == '1') != 0)
		rc = 1;
	return rc;
}
