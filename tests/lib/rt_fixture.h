/*
 * tests/lib/rt_fixture.h - the fixture of the runtime and sandbox tests
 * that drive a runtime on a libev loop (test_warm, test_warm_node,
 * test_trace_env, the security suite's test_sec_warm_diff), compiled once
 * into the static library `relaytest-rt` (tests/lib/meson.build).
 *
 * One fixture style, per suite (per test program):
 *
 *	static rtf_suite S;
 *
 *	setup():    rtf_setup(&S, "warm") makes S.loop and the app
 *	            directory S.app_dir (/tmp/relay-test-warm-PID, 0755);
 *	            the suite writes its handlers there with rtf_write()
 *	            and makes S.rt with rtf_runtime_new();
 *	main():     rt_main() runs the cases, which share S;
 *	teardown:   rtf_teardown(&S, keep) frees S.rt and S.loop and,
 *	            unless @keep, removes S.app_dir.
 *
 * Besides: host process scans limited to this test's own descendants
 * (never another suite's processes: `meson test` runs several at once;
 * host_has_any() alone looks at every process), and sleep_ms(). What
 * collects a run's output and waits for it stays in
 * tests/runtime/rt_helpers.h and rt_job.h (cap, struct job, job_run()).
 *
 * Public headers only. Not thread-safe: one fixture per program, on the
 * test's thread.
 */
#ifndef RELAYTEST_RT_FIXTURE_H
#define RELAYTEST_RT_FIXTURE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <ev.h>

#include "relay/relay_libev.h"
#include "relay/sys/runtime.h"

/* ---- the per-suite fixture -------------------------------------------- */

typedef struct rtf_suite {
	struct ev_loop *loop;   /* the suite's loop (rtf_setup) */
	char app_dir[256];      /* the suite's app directory */
	relay_runtime *rt;      /* the suite's runtime, or NULL; freed by
				   rtf_teardown() */
	bool made_dir;          /* app_dir made by rtf_setup(): removed by
				   rtf_teardown() (never one it did not make) */
} rtf_suite;

/*
 * rtf_setup() - a new loop in @f->loop and a new, empty app directory
 * /tmp/relay-test-@name-PID (mode 0755) in @f->app_dir; @f->rt NULL.
 * @name NULL: no directory, @f->app_dir "" (a suite whose app is in the
 * source tree sets it; rtf_teardown() then removes nothing).
 * Exits the program (status 1, said on stderr) when the directory cannot
 * be made: that is no skip.
 */
void rtf_setup(rtf_suite *f, const char *name);

/*
 * rtf_teardown() - free @f->rt (when set) and @f->loop; unless @keep,
 * remove @f->app_dir and what it holds when rtf_setup() made it (never a
 * directory the suite named itself). Returns 0, or -1 when the
 * directory could not be removed (a suite fails then).
 */
int rtf_teardown(rtf_suite *f, bool keep);

/*
 * rtf_write() - write @text to @dir/@name (mode 0644: the sandbox reads
 * it as another user). Exits the program (status 1) on an error.
 */
void rtf_write(const char *dir, const char *name, const char *text);

/*
 * rtf_spec() - a spec of @kind running @handler of @app in @f->app_dir:
 * message "7-0", event {"n":1}, a 20 s timeout, warm required,
 * generation 1. The caller changes what its case needs.
 */
relay_exec_spec rtf_spec(const rtf_suite *f, const char *app,
			 relay_runtime_kind kind, const char *handler);

/* What rtf_runtime_new() makes: zero fields take the defaults below. */
typedef struct rtf_rt_opts {
	const char *backend;         /* "bwrap" when NULL */
	int warm;                    /* relay_runtime_options.warm */
	uint32_t warm_idle_ms;       /* 60000 when 0 */
	uint32_t warm_max_parents;   /* 8 when 0 */
	uint32_t warm_start_timeout_ms;  /* 0: the library's default */
	bool say_error;              /* print a refusal as "# BACKEND: why" */
} rtf_rt_opts;

/*
 * rtf_runtime_new() - a runtime on the sandbox bootstrap dir of this
 * source tree (kill grace 1.5 s) per @o, attached to @loop. Returns it
 * (the caller frees it with relay_runtime_free()), or NULL when the
 * library refuses (this host cannot run the backend).
 */
relay_runtime *rtf_runtime_new(struct ev_loop *loop, const rtf_rt_opts *o);

/* rtf_bootstrap_dir() - $RELAY_SOURCE_ROOT (or the configured source
 * root)/sandbox/bootstrap; a static buffer. */
const char *rtf_bootstrap_dir(void);

/* ---- host processes, this test's own only ------------------------------ */

/* The parent pid of @pid (from /proc/PID/stat), 0 when gone. */
pid_t parent_of(pid_t pid);

/* Is @pid this test's own descendant (not another suite's process)? */
bool ours(pid_t pid);

/*
 * host_processes_into() - the processes of ours whose command line (NULs
 * as spaces) holds @needle (a leading '^' anchors it at the start): the
 * first one's pid in *@pid (when @pid), each sent @sig unless it is 0,
 * up to @max pids into @all (when @all). Returns how many matched (may
 * exceed @max).
 */
int host_processes_into(const char *needle, pid_t *pid, int sig,
			pid_t *all, int max);

/* Is a process of anyone's (ours or not: one that escaped and was
 * reparented too) alive whose command line holds @needle? */
bool host_has_any(const char *needle);

/* host_processes_into() without the list. */
int host_processes(const char *needle, pid_t *pid, int sig);

/* Is a process of ours matching @needle alive? Its pid in *@pid. */
bool host_has_process(const char *needle, pid_t *pid);

/* Up to @max pids of ours matching @needle; returns how many (<= @max). */
int host_pids(const char *needle, pid_t *all, int max);

/* Is @pid among the @n pids of @all? */
bool host_pids_has(const pid_t *all, int n, pid_t pid);

/* Sleep @ms milliseconds (the loop does not run). */
void sleep_ms(int ms);

#endif /* RELAYTEST_RT_FIXTURE_H */
