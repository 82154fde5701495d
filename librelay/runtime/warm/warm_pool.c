/*
 * warm_pool.c - node: pre-started one-shot processes (see warm.h and
 * doc/sandbox.md, "Warm sandboxes").
 *
 * V8 cannot fork, so each is a full cold sandbox (the same argv building, limits and host user as a
 * cold start) started ahead of time and used for exactly one invocation:
 * it reads the handler, the message id and the attempt's trace context
 * (TRACEPARENT, TRACESTATE, BAGGAGE, each possibly empty) as five lines
 * at the start of its stdin (warm_proto.h), then runs as a cold start
 * would. A claimed process is
 * replaced in the background; one that dies unclaimed is replaced, up to
 * WARM_POOL_MAX_FAILURES in a row.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "warm.h"

/* What a pre-started process runs: its kind's pool command (the node
 * driver's: the bootstrap, waiting for the header lines at the start of
 * its stdin). */
static int pool_inner(const relay_exec_spec *spec, relay__strv *out)
{
	const relay__kind *d = relay__kind_get(spec->runtime);
	relay__kind_cmd c = { 0 };

	c.handler = spec->handler;
	c.command = spec->argv;
	c.bootstrap_dir = RELAY__SANDBOX_BOOTSTRAP_DIR;
	if (!d || !d->pool_argv || d->pool_argv(&c, out) != 0)
		return RELAY_ENOMEM;
	return 0;
}

static void pool_unlink(warm_pool *q, pooled_proc *pp)
{
	pooled_proc **pq;

	for (pq = &q->ready; *pq; pq = &(*pq)->next) {
		if (*pq == pp) {
			*pq = pp->next;
			q->nready--;
			return;
		}
	}
}

/* Stop watching @pp's death (it is claimed or going). */
static void pooled_unwatch(pooled_proc *pp)
{
	struct ev_loop *loop = pp->pool->loop;

	if (pp->pidfd >= 0) {
		ev_io_stop(loop, &pp->w_pidfd);
		relay__warm_close_fd(&pp->pidfd);
	} else {
		ev_child_stop(loop, &pp->w_child);
	}
}

static void pooled_free(pooled_proc *pp, bool kill_it)
{
	relay_runtime *rt = pp->pool->w->rt;
	relay_proc *proc = pp->proc;

	pooled_unwatch(pp);
	if (kill_it) {
		relay__runtime_signal(rt, proc, SIGKILL);
		if (!ev_is_default_loop(pp->pool->loop))
			while (waitpid(proc->pid, NULL, 0) < 0 &&
			       errno == EINTR)
				;
	}
	relay__runtime_release(rt, proc);
	relay__warm_close_fd(&proc->stdin_fd);
	relay__warm_close_fd(&proc->stdout_fd);
	relay__warm_close_fd(&proc->stderr_fd);
	relay__free(proc);
	relay__free(pp);
}

static void pool_arm_refill(warm_pool *q)
{
	if (!ev_is_active(&q->w_refill)) {
		ev_timer_set(&q->w_refill, 0., 0.);
		ev_timer_start(q->loop, &q->w_refill);
	}
}

/* A pre-started process died before anyone claimed it. */
static void pooled_died(pooled_proc *pp)
{
	warm_pool *q = pp->pool;

	pool_unlink(q, pp);
	pooled_free(pp, false);
	if (++q->failures == WARM_POOL_MAX_FAILURES) {
		relay__log(&q->w->rt->logger, RELAY_LOG_WARN, "RELAY-RT07",
			   "runtime: pre-started processes for app %s keep "
			   "exiting; its invocations start cold", q->app);
		relay__warm_backoff_note(q->w, q->app, true);
		return;
	}
	pool_arm_refill(q);
}

static void pooled_child_cb(struct ev_loop *loop, ev_child *c, int revents)
{
	(void)loop;
	(void)revents;
	pooled_died(c->data);
}

static void pooled_pidfd_cb(struct ev_loop *loop, ev_io *wio, int revents)
{
	pooled_proc *pp = wio->data;

	(void)loop;
	(void)revents;
	while (waitpid(pp->proc->pid, NULL, 0) < 0 && errno == EINTR)
		;
	pooled_died(pp);
}

static int pool_start_one(warm_pool *q)
{
	relay_runtime *rt = q->w->rt;
	relay__strv inner = { 0 };
	pooled_proc *pp = relay__calloc(1, sizeof(*pp));
	relay_proc *proc = relay__calloc(1, rt->rb->proc_size);
	relay_error err;
	int rc;

	if (!pp || !proc || pool_inner(q->spec, &inner) != 0) {
		rc = RELAY_ENOMEM;
		goto fail;
	}
	proc->stdin_fd = proc->stdout_fd = proc->stderr_fd = -1;
	rc = q->w->wi->spawn_pooled(rt->rb, q->spec,
				    (const char *const *)inner.v, proc, &err);
	relay__strv_free(&inner);
	if (rc != 0) {
		if (q->failures == 0)
			relay__log(&rt->logger, RELAY_LOG_WARN, "RELAY-RT07",
				   "runtime: pre-starting a process for app "
				   "%s: %s", q->app, err.text);
		goto fail;
	}
	pp->pool = q;
	pp->proc = proc;
	pp->pidfd = -1;
	if (ev_is_default_loop(q->loop)) {
		ev_child_init(&pp->w_child, pooled_child_cb, proc->pid, 0);
		pp->w_child.data = pp;
		ev_child_start(q->loop, &pp->w_child);
	} else {
		pp->pidfd = (int)syscall(SYS_pidfd_open, proc->pid, 0);
		if (pp->pidfd < 0) {
			pp->pidfd = -1;
			ev_child_init(&pp->w_child, pooled_child_cb, proc->pid,
				      0);
			pp->w_child.data = pp;
			pooled_free(pp, true);
			return -1;
		}
		ev_io_init(&pp->w_pidfd, pooled_pidfd_cb, pp->pidfd, EV_READ);
		pp->w_pidfd.data = pp;
		ev_io_start(q->loop, &pp->w_pidfd);
	}
	pp->next = q->ready;
	q->ready = pp;
	q->nready++;
	q->w->st->parents_started++;
	return 0;
fail:
	relay__strv_free(&inner);
	relay__free(proc);
	relay__free(pp);
	q->failures++;
	return -1;
}

static void pool_refill_cb(struct ev_loop *loop, ev_timer *t, int revents)
{
	warm_pool *q = t->data;

	(void)loop;
	(void)revents;
	while (q->nready < WARM_POOL_SIZE &&
	       q->failures < WARM_POOL_MAX_FAILURES &&
	       relay__warm_nparents(q->w) < q->w->max_parents)
		if (pool_start_one(q) != 0)
			break;
}

void relay__warm_pool_free(warm_pool *q)
{
	relay__warm *w = q->w;
	warm_pool **pq;

	for (pq = &w->pools; *pq; pq = &(*pq)->next) {
		if (*pq == q) {
			*pq = q->next;
			break;
		}
	}
	ev_timer_stop(q->loop, &q->w_refill);
	while (q->ready) {
		pooled_proc *pp = q->ready;

		q->ready = pp->next;
		pooled_free(pp, true);
	}
	relay__free(q->spec);
	relay__free(q->key);
	relay__free(q->app);
	relay__free(q);
}

/* The value of @name in @env ("NAME=VALUE" strings), or "". */
static const char *env_value(const relay__strv *env, const char *name)
{
	size_t i, n = strlen(name);

	for (i = 0; i < env->n; i++)
		if (strncmp(env->v[i], name, n) == 0 && env->v[i][n] == '=')
			return env->v[i] + n + 1;
	return "";
}

/*
 * The five header lines a pre-started process reads first (warm_proto.h,
 * "node pre-started processes"): handler, message id, TRACEPARENT,
 * TRACESTATE, BAGGAGE. The trace values come from @env, already checked
 * by relay__runtime_env() (printable ASCII, so no newline).
 */
static int pool_header(const relay_exec_spec *spec, const relay__strv *env,
		       relay__buf *out)
{
	return relay__buf_printf(out, "%s\n%s\n%s\n%s\n%s\n", spec->handler,
				 spec->message_id ? spec->message_id : "",
				 env_value(env, "TRACEPARENT"),
				 env_value(env, "TRACESTATE"),
				 env_value(env, "BAGGAGE"));
}

int relay__warm_pool_claim(relay__warm *w, struct ev_loop *loop,
		      const relay_exec_spec *spec, char *key,
		      const relay__strv *env, relay_proc **proc,
		      relay__buf *prefix)
{
	warm_pool *q, *next;
	pooled_proc *pp;
	bool require = spec->version >= 2 && spec->warm == RELAY_WARM_REQUIRE;

	/* A handler or message id with a newline cannot be framed. */
	if (strchr(spec->handler, '\n') ||
	    (spec->message_id && strchr(spec->message_id, '\n'))) {
		relay__free(key);
		return -1;
	}
	for (q = w->pools; q; q = next) {
		next = q->next;
		if (q->loop != loop)
			continue;
		if (relay__warm_key_eq(q->key, key))
			break;
		if (strcmp(q->app, spec->app) == 0)
			relay__warm_pool_free(q);   /* another generation of the app */
	}
	if (!q) {
		if (relay__warm_backoff_active(w, spec->app)) {
			relay__free(key);
			return -1;
		}
		q = relay__calloc(1, sizeof(*q));
		if (!q || !(q->app = relay__strdup(spec->app)) ||
		    !(q->spec = relay__spec_dup(spec))) {
			if (q)
				relay__free(q->app);
			relay__free(q);
			relay__free(key);
			return RELAY_WARM_FAIL_SPAWN;
		}
		/* The pool's processes are started for whichever invocation
		 * comes: the first one's trace context is not theirs. */
		q->spec->traceparent = NULL;
		q->spec->tracestate = NULL;
		q->spec->baggage = NULL;
		q->w = w;
		q->loop = loop;
		q->key = key;
		q->last_used = relay_clock_mono_us(NULL);
		ev_init(&q->w_refill, pool_refill_cb);
		q->w_refill.data = q;
		q->next = w->pools;
		w->pools = q;
	} else {
		relay__free(key);
	}
	q->last_used = relay_clock_mono_us(NULL);
	if (!q->ready && require) {
		q->failures = 0;
		if (pool_start_one(q) != 0)
			return RELAY_WARM_FAIL_SPAWN;
	}
	pool_arm_refill(q);
	pp = q->ready;
	if (!pp)
		return -1;      /* none ready yet: cold, refill under way */
	pool_unlink(q, pp);
	pooled_unwatch(pp);
	if (pool_header(spec, env, prefix) != 0) {
		pooled_free(pp, true);
		return RELAY_WARM_FAIL_SPAWN;
	}
	*proc = pp->proc;
	relay__free(pp);
	return 0;
}

/* Resident memory of @pid and its descendants (a sandbox: bwrap, its
 * init, the pre-started process). */
uint64_t relay__warm_tree_rss(pid_t pid, int depth)
{
	uint64_t sum = relay__warm_rss_of(pid);
	pid_t kid[64];
	int i, n;

	if (depth > 4)
		return sum;
	n = relay__warm_children(pid, kid, 64);
	for (i = 0; i < n; i++)
		sum += relay__warm_tree_rss(kid[i], depth + 1);
	return sum;
}

uint64_t relay__warm_pool_rss(const warm_pool *q)
{
	const pooled_proc *pp;
	uint64_t sum = 0;

	for (pp = q->ready; pp; pp = pp->next)
		sum += relay__warm_tree_rss(pp->proc->pid, 0);
	return sum;
}
