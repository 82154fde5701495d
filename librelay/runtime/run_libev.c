/*
 * run_libev.c - one invocation's life on a libev loop: the runtime's
 * per-run layer (run.h), above the core and below the warm layer, which
 * it reaches only through rt->starter.
 *
 *   spawn ─┬─ stdin writable → write the event in pieces, then close
 *          ├─ stdout/stderr readable → split into lines → output
 *          │  callback
 *          ├─ timeout → SIGTERM the group, after kill_grace_ms SIGKILL
 *          └─ child exit (ev_child on libev's default loop, a pidfd
 *             elsewhere) → SIGKILL leftovers of the group (with a pidfd,
 *             while the zombie still pins its pid), reap, release limits
 *   finish = exited and both output pipes at EOF (or DRAIN_MS after the
 *            exit, if an escaped grandchild keeps a pipe open)
 *          → outcome → done callback, exactly once.
 *
 * Nothing blocks: a handler that never reads stdin just leaves the writer
 * waiting until it exits (EPIPE is swallowed, see relay__write_nosigpipe),
 * and output is read as it comes so the handler never stalls on a full
 * pipe. Memory per run is bounded by two line buffers.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <ev.h>

#include "relay/clock.h"
#include "relay/relay_libev.h"
#include "run.h"

#define DRAIN_MS 500u
#define READ_CHUNK 65536u
#define READS_PER_WAKEUP 8

struct relay_run {
	relay_runtime *rt;
	struct ev_loop *loop;
	relay_run *prev, *next;     /* rt->runs */
	relay_proc *proc;           /* backend instance, owned */
	ev_io w_in, w_out, w_err;
	ev_io w_pidfd;              /* child exit via pidfd */
	ev_child w_child;           /* fallback on the default loop */
	ev_timer w_timeout, w_kill, w_drain;
	int pidfd;
	char *event;                /* copy of the event bytes */
	size_t event_len, event_off;
	relay__out out[2];          /* stdout, stderr */
	uint64_t budget;            /* forwarding budget, shared */
	relay_run_done_fn done;
	void *payload;
	relay_mono_us start_us, end_us;
	uint32_t timeout_ms;
	int wstatus;                /* waitpid status */
	bool exited, timed_out, cancelled;
	bool status_lost;           /* the host reaped our child */
	/* The warm path (warm.c): the process is forked by a warm parent,
	 * its status arrives from there, not from waitpid. */
	bool warm;                  /* r->proc came from a warm parent */
	bool warm_started;          /* ...and the parent reported the fork */
	relay_warm_mode warm_mode;
	relay_exec_spec *spec;      /* copy, kept to restart cold */
	uint64_t start_lat_us;      /* see relay_run_outcome.start_us */
	char fail_reason[160];      /* set when the run could not start */
	bool refused;               /* ...because the kernel refused it
				       (RELAY_RUN_REFUSED) */
};

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

static void stop_io(relay_run *r, ev_io *w, int *fd)
{
	ev_io_stop(r->loop, w);
	close_fd(fd);
}

static const char *sig_name(int sig)
{
	const char *d = sigabbrev_np(sig);

	return d ? d : "?";
}

static void fill_outcome(relay_run *r, relay_run_outcome *o)
{
	int st = r->wstatus;

	memset(o, 0, sizeof(*o));
	o->version = RELAY_RUN_OUTCOME_VERSION;
	o->exit_code = WIFEXITED(st) && !r->status_lost ? WEXITSTATUS(st) : -1;
	o->term_signal = WIFSIGNALED(st) ? WTERMSIG(st) : 0;
	o->timed_out = r->timed_out;
	o->duration_us = r->end_us - r->start_us;
	o->stdout_bytes = r->out[0].total;
	o->stderr_bytes = r->out[1].total;
	o->dropped_bytes = r->out[0].dropped + r->out[1].dropped;
	o->warm = r->warm;
	o->start_us = r->start_lat_us;
	if (r->cancelled) {
		o->status = RELAY_RUN_CANCELLED;
		snprintf(o->reason, sizeof(o->reason), "cancelled");
	} else if (*r->fail_reason) {
		o->status = r->refused ? RELAY_RUN_REFUSED : RELAY_RUN_FAILED;
		o->exit_code = -1;
		snprintf(o->reason, sizeof(o->reason), "%s", r->fail_reason);
	} else if (r->timed_out) {
		o->status = RELAY_RUN_TIMEOUT;
		snprintf(o->reason, sizeof(o->reason),
			 "timed out after %ums", r->timeout_ms);
	} else if (!r->status_lost && WIFEXITED(st) && WEXITSTATUS(st) == 0) {
		o->status = RELAY_RUN_OK;
	} else if (!r->status_lost && !r->warm && r->rt->builtin &&
		   relay__bwrap_start_refused(r->proc, st, r->out[1].tail,
					      r->out[1].tail_len)) {
		o->status = RELAY_RUN_REFUSED;
		o->exit_code = -1;
		snprintf(o->reason, sizeof(o->reason), "start refused: %s",
			 "the sandbox could not be created (no process or "
			 "memory left)");
	} else {
		char what[64];

		o->status = RELAY_RUN_FAILED;
		if (r->status_lost)
			snprintf(what, sizeof(what), "exit status lost "
				 "(child reaped by the host)");
		else if (WIFSIGNALED(st))
			snprintf(what, sizeof(what),
				 "killed by signal %d (SIG%s)", WTERMSIG(st),
				 sig_name(WTERMSIG(st)));
		else
			snprintf(what, sizeof(what), "exit status %d",
				 WEXITSTATUS(st));
		if (r->proc->oom_killed)
			snprintf(o->reason, sizeof(o->reason),
				 "memory limit exceeded (%s)", what);
		else if (r->status_lost || !WIFEXITED(st) ||
			 WEXITSTATUS(st) != 1 ||
			 !relay__out_load_error(&r->out[1], o->reason,
						sizeof(o->reason)))
			snprintf(o->reason, sizeof(o->reason), "%s", what);
	}
}

/* ---- the starter (run.h) and the start counters ------------------ */

static void start_event(relay__start_event ev, int value, const char *detail,
			void *payload);

static void starter_forget(relay_runtime *rt, relay_run *r)
{
	if (rt->starter)
		rt->starter->ops->forget(rt->starter, r);
}

/* Count one start on the cold (0) or warm (1) path with its latency;
 * only while a starter is installed, as relay_runtime_warm_stats_get()
 * reports nothing otherwise. */
static void count_start(relay_runtime *rt, int warm, uint64_t latency_us)
{
	static const uint64_t bounds[] = RELAY_WARM_LATENCY_BOUNDS_US;
	relay_runtime_warm_stats *st = &rt->warm_st;
	size_t i;

	if (!rt->starter)
		return;
	if (warm)
		st->warm_starts++;
	else
		st->cold_starts++;
	for (i = 0; i < RELAY__ARRAY_SIZE(bounds); i++)
		if (latency_us <= bounds[i])
			break;
	st->latency_us[warm ? 1 : 0][i]++;
	st->latency_sum_us[warm ? 1 : 0] += latency_us;
}

static void count_fail(relay_runtime *rt, int why)
{
	if (rt->starter && why >= 0 && why < RELAY_WARM_FAIL_COUNT &&
	    why != RELAY_WARM_FAIL_UNSUPPORTED)
		rt->warm_st.failures[why]++;
}

static void run_free(relay_run *r)
{
	relay__out_free(&r->out[0]);
	relay__out_free(&r->out[1]);
	relay__free(r->event);
	relay__free(r->proc);
	relay__free(r->spec);
	relay__free(r);
}

/* Unlink, stop everything, report, free. */
static void finish(relay_run *r)
{
	relay_runtime *rt = r->rt;
	relay_run_outcome o;

	stop_io(r, &r->w_in, &r->proc->stdin_fd);
	stop_io(r, &r->w_out, &r->proc->stdout_fd);
	stop_io(r, &r->w_err, &r->proc->stderr_fd);
	ev_timer_stop(r->loop, &r->w_timeout);
	ev_timer_stop(r->loop, &r->w_kill);
	ev_timer_stop(r->loop, &r->w_drain);
	relay__out_finish(&r->out[0]);
	relay__out_finish(&r->out[1]);
	if (r->warm)
		starter_forget(rt, r);
	fill_outcome(r, &o);
	if (r->prev)
		r->prev->next = r->next;
	else
		rt->runs = r->next;
	if (r->next)
		r->next->prev = r->prev;
	rt->nactive--;
	relay__log(&rt->logger, RELAY_LOG_DEBUG, "RELAY-RT03",
		   "runtime: pid %ld done: %s", (long)r->proc->pid,
		   o.status == RELAY_RUN_OK ? "ok" : o.reason);
	r->done(&o, r->payload);
	run_free(r);
}

static void maybe_finish(relay_run *r)
{
	if (r->exited && r->proc->stdout_fd < 0 && r->proc->stderr_fd < 0)
		finish(r);
}

/* The direct child is gone (status in r->wstatus, already reaped). */
static void on_exited(relay_run *r)
{
	r->exited = true;
	r->end_us = relay_clock_mono_us(NULL);
	ev_timer_stop(r->loop, &r->w_timeout);
	ev_timer_stop(r->loop, &r->w_kill);
	stop_io(r, &r->w_in, &r->proc->stdin_fd);
	relay__runtime_release(r->rt, r->proc);
	ev_timer_set(&r->w_drain, DRAIN_MS / 1000.0, 0.);
	ev_timer_start(r->loop, &r->w_drain);
	maybe_finish(r);
}

static void pidfd_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	relay_run *r = w->data;
	pid_t p;

	(void)loop;
	(void)revents;
	/* Leftovers first, while the zombie keeps the group id reserved. */
	relay__runtime_signal(r->rt, r->proc, SIGKILL);
	p = waitpid(r->proc->pid, &r->wstatus, WNOHANG);
	if (p == 0 || (p < 0 && errno == EINTR))
		return;
	if (p < 0)
		r->status_lost = true;  /* reaped by someone else (ECHILD) */
	ev_io_stop(r->loop, w);
	close_fd(&r->pidfd);
	on_exited(r);
}

static void child_cb(struct ev_loop *loop, ev_child *w, int revents)
{
	relay_run *r = w->data;

	(void)revents;
	ev_child_stop(loop, w);
	r->wstatus = w->rstatus;
	relay__runtime_signal(r->rt, r->proc, SIGKILL);
	on_exited(r);
}

static void stdin_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	relay_run *r = w->data;
	ssize_t n;

	(void)loop;
	(void)revents;
	while (r->event_off < r->event_len) {
		n = relay__write_nosigpipe(r->proc->stdin_fd,
					   r->event + r->event_off,
					   r->event_len - r->event_off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (n < 0)
			break;  /* EPIPE: the handler closed its stdin */
		r->event_off += (size_t)n;
	}
	stop_io(r, &r->w_in, &r->proc->stdin_fd);
}

static void output_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	relay_run *r = w->data;
	int idx = w == &r->w_out ? 0 : 1;
	int *fd = idx == 0 ? &r->proc->stdout_fd : &r->proc->stderr_fd;
	char buf[READ_CHUNK];
	int i;

	(void)loop;
	(void)revents;
	for (i = 0; i < READS_PER_WAKEUP; i++) {
		ssize_t n = read(*fd, buf, sizeof(buf));

		if (n > 0) {
			relay__out_feed(&r->out[idx], buf, (size_t)n);
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		relay__out_finish(&r->out[idx]);
		stop_io(r, w, fd);
		maybe_finish(r);
		return;
	}
}

static void timeout_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	relay_run *r = w->data;

	(void)revents;
	r->timed_out = true;
	relay__runtime_signal(r->rt, r->proc, SIGTERM);
	ev_timer_set(&r->w_kill, r->rt->grace_ms / 1000.0, 0.);
	ev_timer_start(loop, &r->w_kill);
}

static void kill_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	relay_run *r = w->data;

	(void)loop;
	(void)revents;
	relay__runtime_signal(r->rt, r->proc, SIGKILL);
}

/* An escaped process still holds a pipe after the exit: stop waiting. */
static void drain_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	relay_run *r = w->data;

	(void)loop;
	(void)revents;
	finish(r);
}

/*
 * libev's default loop reaps every child itself (its SIGCHLD watcher calls
 * waitpid(-1)), so there only ev_child can learn the status. Other loops
 * watch a pidfd, which needs no signal handler and no default loop.
 */
static int watch_exit(relay_run *r, relay_error *err)
{
	if (ev_is_default_loop(r->loop)) {
		ev_child_init(&r->w_child, child_cb, r->proc->pid, 0);
		r->w_child.data = r;
		ev_child_start(r->loop, &r->w_child);
		return 0;
	}
	r->pidfd = (int)syscall(SYS_pidfd_open, r->proc->pid, 0);
	if (r->pidfd < 0)
		return relay__error_set(err, RELAY_EBACKEND, NULL, 0, 0,
					"pidfd_open: %s (without pidfd only "
					"the default loop works)",
					strerror(errno));
	ev_io_init(&r->w_pidfd, pidfd_cb, r->pidfd, EV_READ);
	r->w_pidfd.data = r;
	ev_io_start(r->loop, &r->w_pidfd);
	return 0;
}

/* The process exists (r->proc): watch its pipes, write the event. */
static void watch_io(relay_run *r)
{
	r->event_off = 0;
	ev_io_init(&r->w_in, stdin_cb, r->proc->stdin_fd, EV_WRITE);
	ev_io_init(&r->w_out, output_cb, r->proc->stdout_fd, EV_READ);
	ev_io_init(&r->w_err, output_cb, r->proc->stderr_fd, EV_READ);
	r->w_in.data = r->w_out.data = r->w_err.data = r;
	if (r->event_len)
		ev_io_start(r->loop, &r->w_in);
	else
		close_fd(&r->proc->stdin_fd);
	ev_io_start(r->loop, &r->w_out);
	ev_io_start(r->loop, &r->w_err);
}

/* Put @p before the event bytes (a pre-started process's header). */
static int prepend(relay_run *r, const relay__buf *p)
{
	char *ev = relay__malloc(p->len + r->event_len + 1);

	if (!ev)
		return RELAY_ENOMEM;
	if (p->len)
		memcpy(ev, p->data, p->len);
	if (r->event_len)
		memcpy(ev + p->len, r->event, r->event_len);
	relay__free(r->event);
	r->event = ev;
	r->event_len += p->len;
	return 0;
}

/* (Re)start the timeout from now. */
static void arm_timeout(relay_run *r)
{
	/* The loop's cached "now" may predate the spawn by a whole callback
	 * or, for a new loop, by the spawn itself: time from here. */
	ev_now_update(r->loop);
	ev_timer_stop(r->loop, &r->w_timeout);
	ev_timer_set(&r->w_timeout, r->timeout_ms / 1000.0, 0.);
	ev_timer_start(r->loop, &r->w_timeout);
}

/* Spawn @spec through the backend and watch its exit. */
static int launch_cold(relay_run *r, const relay_exec_spec *spec,
		       relay_error *err)
{
	relay_runtime *rt = r->rt;
	relay_mono_us t0 = relay_clock_mono_us(NULL);
	int rc;

	rc = relay__runtime_spawn(rt, spec, &r->proc, err);
	if (rc != 0)
		return rc;
	r->warm = false;
	r->start_lat_us = relay_clock_mono_us(NULL) - t0;
	rc = watch_exit(r, err);
	if (rc != 0) {
		relay__runtime_signal(rt, r->proc, SIGKILL);
		while (waitpid(r->proc->pid, NULL, 0) < 0 && errno == EINTR)
			;
		relay__runtime_release(rt, r->proc);
		close_fd(&r->proc->stdin_fd);
		close_fd(&r->proc->stdout_fd);
		close_fd(&r->proc->stderr_fd);
		relay__free(r->proc);
		r->proc = NULL;
		return rc;
	}
	count_start(rt, 0, r->start_lat_us);
	return 0;
}

/* A new run of @spec on @loop, not started, not linked: its event copy,
 * output splitters and timers. 0 with *@out, or an error code (@err). */
static int run_new(relay_runtime *rt, struct ev_loop *loop,
		   const relay_exec_spec *spec, relay_output_fn output,
		   relay_run_done_fn done, void *payload, relay_run **out,
		   relay_error *err)
{
	relay_run *r;
	int rc;

	r = relay__calloc(1, sizeof(*r));
	if (!r)
		return relay__error_set(err, RELAY_ENOMEM, NULL, 0, 0,
					"out of memory");
	r->rt = rt;
	r->loop = loop;
	r->pidfd = -1;
	r->done = done;
	r->payload = payload;
	r->budget = rt->max_output;
	r->warm_mode = spec->version >= 2 ? spec->warm : RELAY_WARM_AUTO;
	r->timeout_ms = spec->timeout_ms ? spec->timeout_ms
					 : RELAY_RUNTIME_TIMEOUT_DEFAULT_MS;
	r->event_len = spec->event_len;
	r->event = relay__malloc(spec->event_len + 1);
	rc = r->event ? 0 : RELAY_ENOMEM;
	if (rc == 0 && spec->event_len)
		memcpy(r->event, spec->event, spec->event_len);
	if (rc == 0)
		rc = relay__out_init(&r->out[0], spec, RELAY_OUTPUT_STDOUT,
				     rt->max_line, &r->budget, output, payload);
	if (rc == 0)
		rc = relay__out_init(&r->out[1], spec, RELAY_OUTPUT_STDERR,
				     rt->max_line, &r->budget, output, payload);
	if (rc != 0) {
		run_free(r);
		return relay__error_set(err, rc, NULL, 0, 0, "out of memory");
	}
	ev_init(&r->w_timeout, timeout_cb);
	ev_init(&r->w_kill, kill_cb);
	ev_init(&r->w_drain, drain_cb);
	r->w_timeout.data = r->w_kill.data = r->w_drain.data = r;
	*out = r;
	return 0;
}

/* The starter gave a pre-started process (r->proc): ours, like a cold
 * one, but its handler and message id (@prefix) come first on stdin. */
static int start_pooled(relay_run *r, const relay__buf *prefix,
			relay_error *err)
{
	relay_runtime *rt = r->rt;
	int rc;

	r->warm = r->warm_started = true;
	rc = prepend(r, prefix);
	if (rc == 0)
		rc = watch_exit(r, err);
	if (rc != 0) {
		relay__runtime_signal(rt, r->proc, SIGKILL);
		while (waitpid(r->proc->pid, NULL, 0) < 0 && errno == EINTR)
			;
		relay__runtime_release(rt, r->proc);
		close_fd(&r->proc->stdin_fd);
		close_fd(&r->proc->stdout_fd);
		close_fd(&r->proc->stderr_fd);
		return rc;
	}
	r->start_lat_us = relay_clock_mono_us(NULL) - r->start_us;
	count_start(rt, 1, r->start_lat_us);
	return 0;
}

/* The starter took the run (a warm parent forks it; r->proc holds our
 * ends of its stdio): keep @spec to start again cold if that fails. */
static int start_forked(relay_run *r, const relay_exec_spec *spec,
			relay_error *err)
{
	relay_runtime *rt = r->rt;

	r->spec = relay__spec_dup(spec);
	if (!r->spec) {
		starter_forget(rt, r);
		relay__runtime_release(rt, r->proc);
		close_fd(&r->proc->stdin_fd);
		close_fd(&r->proc->stdout_fd);
		close_fd(&r->proc->stderr_fd);
		return relay__error_set(err, RELAY_ENOMEM, NULL, 0, 0,
					"out of memory");
	}
	r->warm = true;
	return 0;
}

static int run_start(relay_runtime *rt, struct ev_loop *loop,
		     const relay_exec_spec *spec, relay_output_fn output,
		     relay_run_done_fn done, void *payload, relay_run **out,
		     relay_error *err)
{
	relay__buf prefix = { 0 };
	bool pooled = false;
	relay_run *r = NULL;
	int rc, w;

	rc = relay__runtime_check_spec(spec, err);
	if (rc != 0)
		return rc;
	if (!done)
		return relay__error_set(err, RELAY_EINVAL, NULL, 0, 0,
					"a done callback is required");
	rc = run_new(rt, loop, spec, output, done, payload, &r, err);
	if (rc != 0)
		return rc;
	r->start_us = relay_clock_mono_us(NULL);
	w = r->warm_mode == RELAY_WARM_OFF || !rt->starter ? -1
	  : rt->starter->ops->start(rt->starter, loop, spec, start_event, r,
				    &r->proc, &pooled, &prefix);
	if (w == 0 && pooled) {
		rc = start_pooled(r, &prefix, err);
	} else if (w == 0) {
		rc = start_forked(r, spec, err);
	} else if (r->warm_mode == RELAY_WARM_REQUIRE) {
		rc = relay__error_set(err, RELAY_EBACKEND, NULL, 0, 0,
				      "warm start unavailable: %s",
				      w >= 0 ? relay_warm_fail_name(
						       (relay_warm_fail)w)
					     : "the runtime keeps no warm "
					       "parents (bwrap backend and "
					       "warm option needed)");
	} else {
		if (w >= 0)
			count_fail(rt, w);
		rc = launch_cold(r, spec, err);
	}
	relay__buf_free(&prefix);
	if (rc != 0) {
		run_free(r);
		return rc;
	}
	watch_io(r);
	arm_timeout(r);
	r->next = rt->runs;
	if (rt->runs)
		rt->runs->prev = r;
	rt->runs = r;
	rt->nactive++;
	if (out)
		*out = r;
	return 0;
}

static void warm_started(relay_run *r, pid_t pid)
{
	r->proc->pid = pid;
	r->warm_started = true;
	r->start_lat_us = relay_clock_mono_us(NULL) - r->start_us;
	count_start(r->rt, 1, r->start_lat_us);
	relay__log(&r->rt->logger, RELAY_LOG_DEBUG, "RELAY-RT02",
		   "runtime: started %s/%s warm, pid %ld", r->spec->app,
		   r->spec->handler, (long)pid);
	/* A signal that came before the pid was known. */
	if (r->cancelled || ev_is_active(&r->w_kill))
		relay__runtime_signal(r->rt, r->proc, SIGKILL);
	else if (r->timed_out)
		relay__runtime_signal(r->rt, r->proc, SIGTERM);
}

static void warm_exited(relay_run *r, int wstatus)
{
	/* The parent reports the exit only once nothing of the invocation is
	 * left (its slot killed and reaped every leftover, or its pid
	 * namespace died with its init), and its group id may already be
	 * free, so it is not signalled. */
	r->wstatus = wstatus;
	on_exited(r);
}

static void warm_lost(relay_run *r, int why, const char *detail)
{
	relay_runtime *rt = r->rt;
	relay_proc *old;
	relay_error err;

	count_fail(rt, why);
	stop_io(r, &r->w_in, &r->proc->stdin_fd);
	stop_io(r, &r->w_out, &r->proc->stdout_fd);
	stop_io(r, &r->w_err, &r->proc->stderr_fd);
	relay__runtime_release(rt, r->proc);
	r->proc->pid = 0;
	r->warm = false;
	if (r->cancelled || r->warm_mode == RELAY_WARM_REQUIRE) {
		if (!r->cancelled)
			snprintf(r->fail_reason, sizeof(r->fail_reason),
				 "warm start failed: %s: %s",
				 relay_warm_fail_name((relay_warm_fail)why),
				 detail);
		goto fail;
	}
	relay__log(&rt->logger, RELAY_LOG_INFO, "RELAY-RT05",
		   "runtime: %s/%s: warm start failed (%s: %s), starting "
		   "it cold", r->spec->app, r->spec->handler,
		   relay_warm_fail_name((relay_warm_fail)why), detail);
	r->out[0].total = r->out[1].total = 0;
	/* The warm proc (its descriptors closed) stays until a cold one
	 * replaces it, so finish() always has one. */
	old = r->proc;
	if (launch_cold(r, r->spec, &err) == 0) {
		relay__free(old);
		watch_io(r);
		arm_timeout(r);
		return;
	}
	r->proc = old;
	snprintf(r->fail_reason, sizeof(r->fail_reason), "%.150s", err.text);
	r->refused = err.code == RELAY_EAGAIN;
fail:
	r->exited = true;
	r->end_us = relay_clock_mono_us(NULL);
	r->wstatus = 255 << 8;
	finish(r);
}

/* The run's completion callback of its starter (relay__start_fn). */
static void start_event(relay__start_event ev, int value, const char *detail,
			void *payload)
{
	relay_run *r = payload;

	switch (ev) {
	case RELAY__START_FORKED:
		warm_started(r, (pid_t)value);
		break;
	case RELAY__START_EXITED:
		warm_exited(r, value);
		break;
	case RELAY__START_LOST:
		warm_lost(r, value, detail);
		break;
	}
}

int relay_runtime_libev_attach(relay_runtime *rt, struct ev_loop *loop)
{
	if (rt->nactive && rt->loop != loop)
		return RELAY_EINVAL;
	rt->loop = loop;
	return 0;
}

int relay_runtime_run(relay_runtime *rt, const relay_exec_spec *spec,
		      relay_output_fn output, relay_run_done_fn done,
		      void *payload, relay_run **out, relay_error *err)
{
	if (!rt->loop)
		return relay__error_set(err, RELAY_EINVAL, NULL, 0, 0,
					"runtime is not attached to a loop");
	return run_start(rt, rt->loop, spec, output, done, payload, out, err);
}

void relay_run_cancel(relay_run *run)
{
	run->cancelled = true;
	/* After the exit (draining output) the group is already gone. */
	if (!run->exited)
		relay__runtime_signal(run->rt, run->proc, SIGKILL);
}

/* relay_runtime_run_sync(): the caller's output callback and payload plus
 * where the outcome goes; one payload serves both callbacks. */
struct sync_run {
	relay_output_fn fn;
	void *payload;
	relay_run_outcome *outcome;
	bool done;
};

static void sync_output_cb(const relay_output_line *l, void *payload)
{
	struct sync_run *sr = payload;

	sr->fn(l, sr->payload);
}

static void sync_done_cb(const relay_run_outcome *o, void *payload)
{
	struct sync_run *sr = payload;

	/* A caller built against version 1 has the version 1 struct only
	 * (it says so by leaving .version 0 or 1). */
	if (sr->outcome->version >= 2)
		*sr->outcome = *o;
	else
		memcpy(sr->outcome, o, offsetof(relay_run_outcome, warm));
	sr->done = true;
}

/*
 * A private loop, so the call works whether or not (and wherever) the
 * runtime is attached; the runs of another loop are not touched.
 */
int relay_runtime_run_sync(relay_runtime *rt, const relay_exec_spec *spec,
			   relay_output_fn output, void *payload,
			   relay_run_outcome *outcome, relay_error *err)
{
	struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
	struct sync_run sr;
	int rc;

	if (!loop)
		return relay__error_set(err, RELAY_EBACKEND, NULL, 0, 0,
					"cannot create an event loop");
	sr.fn = output;
	sr.payload = payload;
	sr.outcome = outcome;
	sr.done = false;
	rc = run_start(rt, loop, spec, output ? sync_output_cb : NULL,
		       sync_done_cb, &sr, NULL, err);
	while (rc == 0 && !sr.done)
		ev_run(loop, EVRUN_ONCE);
	if (rt->starter)
		rt->starter->ops->drop_loop(rt->starter, loop);
	ev_loop_destroy(loop);
	return rc;
}

/*
 * From relay_runtime_free(): SIGKILL every run, reap it synchronously
 * (a SIGKILLed process exits promptly), and report it cancelled.
 */
void relay__runtime_cancel_all(relay_runtime *rt)
{
	while (rt->runs) {
		relay_run *r = rt->runs;

		/* A run that already exited (draining output) keeps its
		 * real outcome. */
		if (!r->exited && r->warm) {
			/* Forked by a warm parent: not ours to reap; the
			 * group dies with SIGKILL, its cgroups on release. */
			r->cancelled = true;
			relay__runtime_signal(rt, r->proc, SIGKILL);
			r->exited = true;
			r->end_us = relay_clock_mono_us(NULL);
			relay__runtime_release(rt, r->proc);
		} else if (!r->exited) {
			r->cancelled = true;
			relay__runtime_signal(rt, r->proc, SIGKILL);
			if (r->pidfd >= 0) {
				ev_io_stop(r->loop, &r->w_pidfd);
				close_fd(&r->pidfd);
			} else {
				ev_child_stop(r->loop, &r->w_child);
			}
			while (waitpid(r->proc->pid, &r->wstatus, 0) < 0 &&
			       errno == EINTR)
				;
			r->exited = true;
			r->end_us = relay_clock_mono_us(NULL);
			relay__runtime_release(rt, r->proc);
		}
		finish(r);
	}
}
