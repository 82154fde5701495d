/*
 * warm.c - warm parents: python3 and exec invocations forked from a
 * sandbox that is already running, instead of a cold bubblewrap start.
 *
 * A warm parent is one bwrap sandbox per app generation (the same
 * isolation as a cold invocation's, built by bwrap.c, plus CAP_SYS_ADMIN
 * inside its own user namespace) running "relay-bootstrap.py --serve"
 * (relay_warm_server.py), or for an exec app relay-warm-exec (warm_exec.c),
 * which speaks the same protocol. Each invocation runs in its own pid and
 * mount namespace with a private /tmp, /dev/shm and /proc (the python3
 * server reuses a namespace for the next invocation only once nothing of
 * the last one is left in it), and drops every capability before handler
 * code runs; doc/sandbox.md says what this keeps and what differs from a
 * cold start.
 *
 *   relay_runtime_run ─ warm_start ─┬─ parent ready → R (+3 pipe ends,
 *                                   │   + a go pipe's read end if it has
 *                                   │   cgroups)
 *                                   └─ none: start one, this run cold
 *   parent: S id + pidfd → host pid, join cgroups, "g" down the go pipe
 *           X id status  → the run's callback: RELAY__START_EXITED
 *   parent dies / no S within the bound → every run it had starts again
 *           cold (RELAY__START_LOST), the parent is retired and the
 *           next one starts after a backoff
 *
 * A parent is keyed by everything of the spec that its sandbox fixes (app,
 * directory, generation, network, environment); resources apply per
 * invocation (cgroups joined before any of the invocation's code runs,
 * rlimits set by its process). Idle parents are retired after
 * warm_idle_ms; at most warm_max_parents live at once (the least recently
 * used idle one makes room). warm_ctl.c has the control protocol
 * (requests and what the parent answers), warm_pool.c the node
 * pre-started processes, warm_stats.c the counters and memory. The warm
 * layer is a starter (../run.h): the run reaches it only through its ops
 * and hears back only through its completion callback; the sandbox it
 * gets from the backend's warm interface (../runtime.h).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "warm.h"

/* ---- keys ------------------------------------------------------- */

/*
 * What a warm sandbox fixes for all its invocations. The per-invocation
 * variables (RELAY_HANDLER, RELAY_MESSAGE_ID, and the attempt's
 * TRACEPARENT, TRACESTATE, BAGGAGE) are left out: the parent gets them
 * with each request, so one invocation's trace context is never in a
 * parent's environment (where a later invocation would inherit it) nor
 * in its key (which would start a parent per attempt).
 */
static bool per_invocation_var(const char *kv)
{
	return relay__runtime_per_invocation_var(kv);
}

static char *make_key(const relay_exec_spec *spec, const relay__strv *env)
{
	relay__buf b = { 0 };
	size_t i;
	int rc = 0;

	rc |= relay__buf_printf(&b, "%s%c%s%c%llu%c%d%c%d%c%llu%c%u%c%u%c"
				"%llu%c",
				spec->app, 0, spec->app_dir, 0,
				(unsigned long long)(spec->version >= 2
							     ? spec->generation
							     : 0), 0,
				spec->network ? 1 : 0, 0, (int)spec->runtime,
				0, (unsigned long long)spec->memory_bytes, 0,
				spec->cpus_milli, 0, spec->pids, 0,
				(unsigned long long)relay__spec_tmp_bytes(spec),
				0);
	for (i = 0; rc == 0 && spec->argv && spec->argv[i]; i++)
		rc |= relay__buf_printf(&b, "%s%c", spec->argv[i], 1);
	for (i = 0; rc == 0 && i < env->n; i++)
		if (!per_invocation_var(env->v[i]))
			rc |= relay__buf_printf(&b, "%s%c", env->v[i], 0);
	if (rc != 0) {
		relay__buf_free(&b);
		return NULL;
	}
	/* Embedded NULs: hex-free comparison through the length prefix. */
	{
		char *k = relay__malloc(b.len + 24);

		if (k) {
			int n = snprintf(k, 24, "%zu:", b.len);

			memcpy(k + n, b.data, b.len);
			k[n + b.len] = '\0';
		}
		relay__buf_free(&b);
		return k;
	}
}

/* ---- parents ---------------------------------------------------- */


void relay__warm_count_states(relay__warm *w)
{
	warm_parent *p;

	w->st->parents_starting = w->st->parents_ready = 0;
	w->st->parents_retiring = 0;
	for (p = w->parents; p; p = p->next) {
		if (p->state == P_STARTING)
			w->st->parents_starting++;
		else if (p->state == P_READY)
			w->st->parents_ready++;
		else
			w->st->parents_retiring++;
	}
}

/* Warm parents plus pre-started processes: what the cap bounds. */
unsigned int relay__warm_nparents(const relay__warm *w)
{
	const warm_parent *p;
	const warm_pool *q;
	unsigned int n = 0;

	for (p = w->parents; p; p = p->next)
		n++;
	for (q = w->pools; q; q = q->next)
		n += q->nready;
	return n;
}

void relay__warm_req_free(warm_req *q)
{
	int i;

	for (i = 0; i < 4; i++)
		relay__warm_close_fd(&q->cfd[i]);
	relay__warm_close_fd(&q->go_w);
	relay__free(q->msg);
	relay__free(q);
}

/* Unlink @p, stop its watchers, close its descriptors, kill its bwrap
 * (reaped where we can); once. */
static void parent_teardown(warm_parent *p)
{
	relay__warm *w = p->w;
	warm_parent **pp;

	if (p->torn)
		return;
	p->torn = true;
	p->dead = true;
	for (pp = &w->parents; *pp; pp = &(*pp)->next) {
		if (*pp == p) {
			*pp = p->next;
			break;
		}
	}
	ev_io_stop(p->loop, &p->w_ctl);
	ev_io_stop(p->loop, &p->w_exit);
	ev_io_stop(p->loop, &p->w_out);
	ev_io_stop(p->loop, &p->w_err);
	ev_timer_stop(p->loop, &p->w_watchdog);
	relay__warm_hang_stop(p);
	relay__warm_close_fd(&p->ctl);
	relay__warm_close_fd(&p->out_fd);
	relay__warm_close_fd(&p->err_fd);
	if (p->pid > 0) {
		/* On libev's default loop its SIGCHLD watcher reaps bwrap;
		 * elsewhere nobody else will, so wait for the SIGKILL. */
		kill(-p->pid, SIGKILL);
		if (!ev_is_default_loop(p->loop))
			while (waitpid(p->pid, NULL, 0) < 0 && errno == EINTR)
				;
	}
	relay__warm_close_fd(&p->pidfd);
	relay__warm_count_states(w);
}

/* Unlink and free @p; its bwrap is killed and, where we can, reaped.
 * Called from a run's callback inside relay__warm_ctl_read() (a done
 * callback that retires parents or starts a run whose send fails), the
 * memory is freed when that returns. */
void relay__warm_parent_free(warm_parent *p)
{
	parent_teardown(p);
	if (p->busy)
		return;
	relay__free(p->key);
	relay__free(p->app);
	relay__free(p);
}

void relay__warm_parent_retire(warm_parent *p)
{
	p->state = P_RETIRING;
	relay__warm_count_states(p->w);
	if (!p->reqs)
		relay__warm_parent_free(p);
}

void relay__warm_backoff_note(relay__warm *w, const char *app, bool failed)
{
	warm_backoff **bp, *b;

	for (bp = &w->backoff; *bp; bp = &(*bp)->next)
		if (strcmp((*bp)->app, app) == 0)
			break;
	b = *bp;
	if (!failed) {
		if (b) {
			*bp = b->next;
			relay__free(b->app);
			relay__free(b);
		}
		return;
	}
	if (!b) {
		b = relay__calloc(1, sizeof(*b));
		if (!b || !(b->app = relay__strdup(app))) {
			relay__free(b);
			return;
		}
		b->next = w->backoff;
		w->backoff = b;
	}
	b->delay_ms = b->delay_ms ? b->delay_ms * 2 : WARM_BACKOFF_MIN_MS;
	if (b->delay_ms > WARM_BACKOFF_MAX_MS)
		b->delay_ms = WARM_BACKOFF_MAX_MS;
	b->until = relay_clock_mono_us(NULL) + (uint64_t)b->delay_ms * 1000u;
}

bool relay__warm_backoff_active(relay__warm *w, const char *app)
{
	warm_backoff *b;

	for (b = w->backoff; b; b = b->next)
		if (strcmp(b->app, app) == 0)
			return relay_clock_mono_us(NULL) < b->until;
	return false;
}

/*
 * The parent is gone or useless: log once, every run it had starts again
 * cold, and the app waits a backoff before its next warm parent.
 */
void relay__warm_parent_fault(warm_parent *p, int why, const char *detail)
{
	relay__warm *w = p->w;

	if (p->dead)
		return;
	p->dead = true;
	relay__log(&w->rt->logger,
		   why == RELAY_WARM_FAIL_UNSUPPORTED ? RELAY_LOG_INFO
						      : RELAY_LOG_WARN,
		   "RELAY-RT07", "runtime: warm parent for app %s %s: %s; "
		   "its invocations start cold", p->app,
		   why == RELAY_WARM_FAIL_UNSUPPORTED ? "unavailable"
						      : relay_warm_fail_name(
							(relay_warm_fail)why),
		   detail);
	relay__warm_backoff_note(w, p->app, true);
	if (why == RELAY_WARM_FAIL_UNSUPPORTED)
		w->st->failures[why]++;
	while (p->reqs) {
		warm_req *q = p->reqs;
		relay__start_fn fn = q->fn;
		void *payload = q->payload;

		relay__warm_unlink_req(p, q);
		relay__warm_req_free(q);
		fn(RELAY__START_LOST, why, detail, payload);
	}
	relay__warm_parent_free(p);
}

static void exit_cb(struct ev_loop *loop, ev_io *wio, int revents)
{
	warm_parent *p = wio->data;

	(void)loop;
	(void)revents;
	ev_io_stop(p->loop, wio);
	if (!ev_is_default_loop(p->loop))
		while (waitpid(p->pid, NULL, 0) < 0 && errno == EINTR)
			;
	p->pid = -1;
	relay__warm_parent_fault(p, RELAY_WARM_FAIL_CRASHED, "the warm sandbox exited");
}

static void watchdog_cb(struct ev_loop *loop, ev_timer *t, int revents)
{
	warm_parent *p = t->data;
	relay__warm *w = p->w;
	relay_mono_us due;
	char d[64];
	int i, rc = 1;

	(void)revents;
	/*
	 * When the loop wakes late (a stopped or loaded host) this timer can
	 * run before the control socket's callback although the answers are
	 * already there: read them first, so that the verdict is about a
	 * request really unanswered. A run's end reaches us the same way (X),
	 * and the parent's own end as the socket's end. Bounded, so that a
	 * parent that talks without end cannot hold the loop here.
	 */
	for (i = 0; i < 16 && rc > 0; i++)
		rc = relay__warm_ctl_read(p, 64);
	/* Freed by the reading (or by a callback it ran): -1. */
	if (rc < 0)
		return;
	due = relay__warm_deadline(p);
	if (!due)
		return;
	if (relay_clock_mono_us(NULL) < due) {
		/* Early (libev counts from its cached time) or a newer
		 * request is now the oldest unanswered one. */
		ev_now_update(loop);
		relay__warm_arm_watchdog(p);
		return;
	}
	if (p->state == P_STARTING)
		snprintf(d, sizeof(d), "not ready within %ums",
			 w->start_timeout_ms + WARM_START_SLACK_MS);
	else
		snprintf(d, sizeof(d), "no answer within %ums",
			 w->start_timeout_ms);
	relay__warm_parent_fault(p, RELAY_WARM_FAIL_WEDGED, d);
}

/* The server's own output (tracebacks of the server itself): logged. */
static void out_cb(struct ev_loop *loop, ev_io *wio, int revents)
{
	warm_parent *p = wio->data;
	int *fd = wio == &p->w_out ? &p->out_fd : &p->err_fd;
	char buf[1024];
	ssize_t n;

	(void)revents;
	n = read(*fd, buf, sizeof(buf) - 1);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		ev_io_stop(loop, wio);
		relay__warm_close_fd(fd);
		return;
	}
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	relay__log(&p->w->rt->logger, RELAY_LOG_WARN, "RELAY-RT08",
		   "runtime: warm parent for app %s says: %.200s", p->app,
		   buf);
}

#define BIND_NOW "LD_BIND_NOW="

/*
 * What a warm parent's sandbox runs (@inner): the kind's warm parent
 * command (its driver's; relay-warm-exec for an exec app when
 * @exec_server). And the environment it gets (@penv): the handler's,
 * without the per-invocation variables (with LD_BIND_NOW=1 where the
 * driver asks for it, unless the app sets it). 0 or RELAY_ENOMEM.
 */
static int parent_command(const relay_exec_spec *spec, bool exec_server,
			  relay__strv *inner, relay__strv *penv)
{
	const relay__kind *d = relay__kind_get(spec->runtime);
	relay__kind_cmd c = { 0 };
	relay__strv env = { 0 };
	bool bind_now = true;
	int rc = 0;
	size_t i;

	if (!d)
		return RELAY_ENOMEM;   /* never: the spec was checked */
	c.handler = spec->handler;
	c.command = spec->argv;
	c.bootstrap_dir = RELAY__SANDBOX_BOOTSTRAP_DIR;
	c.exec_server = exec_server ? RELAY__SANDBOX_WARM_EXEC : NULL;
	if (d->warm_argv(&c, inner) != 0)
		return RELAY_ENOMEM;
	rc = relay__runtime_env(spec, &env);
	for (i = 0; rc == 0 && i < env.n; i++) {
		if (strncmp(env.v[i], BIND_NOW, strlen(BIND_NOW)) == 0)
			bind_now = false;   /* the app's own setting stands */
		if (!per_invocation_var(env.v[i]))
			rc = relay__strv_push(penv, env.v[i]);
	}
	relay__strv_free(&env);
	/* Each invocation's environment is its request's, so no handler
	 * sees LD_BIND_NOW. */
	if (rc == 0 && bind_now && d->warm_bind_now)
		rc = relay__strv_push(penv, BIND_NOW "1");
	return rc != 0 ? RELAY_ENOMEM : 0;
}

/* @p's sandbox runs: watch its control socket, exit and output, and
 * bound its start. */
static void parent_watch(relay__warm *w, warm_parent *p)
{
	ev_io_init(&p->w_ctl, relay__warm_ctl_cb, p->ctl, EV_READ);
	ev_io_init(&p->w_exit, exit_cb, p->pidfd, EV_READ);
	ev_io_init(&p->w_out, out_cb, p->out_fd, EV_READ);
	ev_io_init(&p->w_err, out_cb, p->err_fd, EV_READ);
	ev_init(&p->w_watchdog, watchdog_cb);
	relay__warm_hang_init(p);
	p->w_ctl.data = p->w_exit.data = p->w_out.data = p->w_err.data = p;
	p->w_watchdog.data = p;
	ev_io_start(p->loop, &p->w_ctl);
	ev_io_start(p->loop, &p->w_exit);
	ev_io_start(p->loop, &p->w_out);
	ev_io_start(p->loop, &p->w_err);
	/* Starting counts as a request: a parent that never says Y is
	 * wedged like one that never answers. Its Y stops this (unless
	 * requests wait): a ready, idle parent has no deadline. */
	p->spawned_at = relay_clock_mono_us(NULL);
	relay__warm_arm_watchdog(p);
	w->st->parents_started++;
}

static int spawn_parent(relay__warm *w, warm_parent *p,
			const relay_exec_spec *spec, relay_error *err)
{
	const relay__kind *kind = relay__kind_get(spec->runtime);
	relay__strv inner = { 0 }, penv = { 0 };
	relay_proc proc;
	int sv[2] = { -1, -1 }, keep = -1;
	int rc;

	/* An exec app's parent execs its command in every invocation: the
	 * small C server where it is built, else the python3 one. */
	p->exec_server = kind->warm_exec_server && w->wi->exec_server;
	p->node_server = kind->warm_hang_watch;
	if (parent_command(spec, p->exec_server, &inner, &penv) != 0) {
		rc = relay__error_set(err, RELAY_ENOMEM, NULL, 0, 0,
				      "out of memory");
		goto done;
	}
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
		rc = relay__error_set(err, RELAY_EBACKEND, NULL, 0, 0,
				      "socketpair: %s", strerror(errno));
		goto done;
	}
	/* The child's fd 3 must come from a dup2 (which clears
	 * close-on-exec), so never hand over fd 3 itself. */
	keep = fcntl(sv[1], F_DUPFD_CLOEXEC, 10);
	relay__warm_close_fd(&sv[1]);
	if (keep < 0 || fcntl(sv[0], F_SETFL, O_NONBLOCK) != 0) {
		rc = relay__error_set(err, RELAY_EBACKEND, NULL, 0, 0,
				      "control socket: %s", strerror(errno));
		goto done;
	}
	/* The sandbox itself is the backend's (its warm interface). */
	memset(&proc, 0, sizeof(proc));
	rc = w->wi->spawn_parent(w->rt->rb, spec,
				 (const char *const *)inner.v, penv.v, keep,
				 &proc, err);
	if (rc != 0)
		goto done;
	close(proc.stdin_fd);
	p->pid = proc.pid;
	p->out_fd = proc.stdout_fd;
	p->err_fd = proc.stderr_fd;
	p->ctl = sv[0];
	sv[0] = -1;
	p->pidfd = (int)syscall(SYS_pidfd_open, p->pid, 0);
	if (p->pidfd < 0) {
		rc = relay__error_set(err, RELAY_EBACKEND, NULL, 0, 0,
				      "pidfd_open: %s", strerror(errno));
		goto done;
	}
	parent_watch(w, p);
done:
	relay__warm_close_fd(&sv[0]);
	relay__warm_close_fd(&sv[1]);
	relay__warm_close_fd(&keep);
	relay__strv_free(&inner);
	relay__strv_free(&penv);
	return rc;
}

/* The least recently used idle parent, to make room under the cap. */
static warm_parent *lru_idle(relay__warm *w)
{
	warm_parent *p, *best = NULL;

	for (p = w->parents; p; p = p->next)
		if (!p->reqs && p->state != P_STARTING &&
		    (!best || p->last_used < best->last_used))
			best = p;
	return best;
}

static warm_parent *parent_new(relay__warm *w, struct ev_loop *loop,
			       const relay_exec_spec *spec, char *key,
			       int *why)
{
	warm_parent *p;
	relay_error err;

	if (relay__warm_nparents(w) >= w->max_parents) {
		warm_parent *old = lru_idle(w);

		if (!old) {
			*why = RELAY_WARM_FAIL_CAP;
			relay__free(key);
			return NULL;
		}
		relay__warm_parent_free(old);
	}
	p = relay__calloc(1, sizeof(*p));
	if (!p || !(p->app = relay__strdup(spec->app))) {
		relay__free(p);
		relay__free(key);
		*why = RELAY_WARM_FAIL_SPAWN;
		return NULL;
	}
	p->w = w;
	p->loop = loop;
	p->key = key;
	p->pid = -1;
	p->pidfd = p->ctl = p->out_fd = p->err_fd = -1;
	p->state = P_STARTING;
	p->last_used = relay_clock_mono_us(NULL);
	p->next = w->parents;
	w->parents = p;
	if (spawn_parent(w, p, spec, &err) != 0) {
		relay__log(&w->rt->logger, RELAY_LOG_WARN, "RELAY-RT07",
			   "runtime: warm parent for app %s: %s", spec->app,
			   err.text);
		relay__warm_backoff_note(w, spec->app, true);
		relay__warm_parent_free(p);
		*why = RELAY_WARM_FAIL_SPAWN;
		return NULL;
	}
	relay__warm_count_states(w);
	return p;
}

/* ---- idle eviction ----------------------------------------------- */

static void idle_cb(struct ev_loop *loop, ev_timer *t, int revents)
{
	relay__warm *w = t->data;
	relay_mono_us now = relay_clock_mono_us(NULL);
	warm_parent *p, *next;

	(void)loop;
	(void)revents;
	warm_pool *q, *qnext;

	for (p = w->parents; p; p = next) {
		next = p->next;
		if (!p->reqs && p->state == P_READY &&
		    now - p->last_used >= (uint64_t)w->idle_ms * 1000u)
			relay__warm_parent_retire(p);
	}
	for (q = w->pools; q; q = qnext) {
		qnext = q->next;
		if (now - q->last_used >= (uint64_t)w->idle_ms * 1000u)
			relay__warm_pool_free(q);
	}
}

static void start_idle_timer(relay__warm *w, struct ev_loop *loop)
{
	double every = w->idle_ms / 4000.0;

	if (w->idle_loop)
		return;
	if (every < 0.05)
		every = 0.05;
	if (every > 30.0)
		every = 30.0;
	ev_timer_init(&w->w_idle, idle_cb, every, every);
	w->w_idle.data = w;
	ev_timer_start(loop, &w->w_idle);
	/* The timer alone must not keep a loop running. */
	ev_unref(loop);
	w->idle_loop = loop;
}

/* ---- the runtime's side ------------------------------------------ */

static const relay__starter_ops warm_starter_ops;

int relay__warm_new(relay_runtime *rt, const relay_runtime_options *opts,
		    relay_error *err)
{
	const relay_runtime_warm_iface *wi;
	relay__warm *w;

	(void)err;
	if (!opts || opts->version < 2 || !opts->warm)
		return 0;
	/* A backend offers warm parents through its warm slot. */
	wi = relay__runtime_warm_iface(rt);
	if (!wi)
		return 0;
	w = relay__calloc(1, sizeof(*w));
	if (!w)
		return relay__error_set(err, RELAY_ENOMEM, NULL, 0, 0,
					"out of memory");
	w->base.ops = &warm_starter_ops;
	w->rt = rt;
	w->wi = wi;
	w->st = &rt->warm_st;
	w->max_parents = opts->warm_max_parents ? opts->warm_max_parents
						: WARM_MAX_PARENTS;
	w->idle_ms = opts->warm_idle_ms ? opts->warm_idle_ms : WARM_IDLE_MS;
	w->start_timeout_ms = opts->warm_start_timeout_ms
				      ? opts->warm_start_timeout_ms
				      : WARM_START_TIMEOUT_MS;
	w->st->version = RELAY_RUNTIME_WARM_STATS_VERSION;
	/* node apps: the node fork server where this build has it (its
	 * addon needs node's headers), else pre-started processes;
	 * RELAY_WARM_NODE=fork or prestart chooses. */
	{
		const char *v = getenv("RELAY_WARM_NODE");

		if (v && strcmp(v, "fork") == 0)
			w->node_fork = true;
		else if (v && strcmp(v, "prestart") == 0)
			w->node_fork = false;
		else
			w->node_fork = RELAY_NODE_FORK_BUILT;
		w->node_why = w->node_fork ? NULL
			: v && strcmp(v, "prestart") == 0
			? "RELAY_WARM_NODE=prestart"
			: "this build has no node fork server (node's headers, "
			  "node_api.h, were missing)";
	}
	rt->warm = w;
	rt->starter = &w->base;
	return 0;
}

static void warm_drop_loop(relay__starter *s, void *loop)
{
	relay__warm *w = (relay__warm *)s;
	warm_parent *p, *next;

	for (p = w->parents; p; p = next) {
		next = p->next;
		if (p->loop == loop) {
			while (p->reqs) {
				warm_req *q = p->reqs;

				relay__warm_unlink_req(p, q);
				relay__warm_req_free(q);
			}
			relay__warm_parent_free(p);
		}
	}
	{
		warm_pool *q, *qnext;

		for (q = w->pools; q; q = qnext) {
			qnext = q->next;
			if (q->loop == loop)
				relay__warm_pool_free(q);
		}
	}
	if (w->idle_loop == loop) {
		ev_ref(w->idle_loop);
		ev_timer_stop(w->idle_loop, &w->w_idle);
		w->idle_loop = NULL;
	}
}

static void warm_free(relay__starter *s)
{
	relay__warm *w = (relay__warm *)s;
	relay_runtime *rt = w->rt;

	while (w->parents)
		warm_drop_loop(s, w->parents->loop);
	while (w->pools)
		warm_drop_loop(s, w->pools->loop);
	if (w->idle_loop)
		warm_drop_loop(s, w->idle_loop);
	while (w->backoff) {
		warm_backoff *b = w->backoff;

		w->backoff = b->next;
		relay__free(b->app);
		relay__free(b);
	}
	relay__free(w);
	rt->warm = NULL;
	rt->starter = NULL;
}

/*
 * Hand @spec to @p for the run's @fn and @payload: the invocation's proc
 * (the parent's ends of its stdio, its limits prepared), the child's ends
 * and, with cgroups, a go pipe, and the R message with the environment
 * @env; linked into @p and sent at once when @p is ready. 0 with *@out,
 * or a relay_warm_fail reason (nothing left).
 */
static int req_start(relay__warm *w, warm_parent *p,
		     const relay_exec_spec *spec, const relay__strv *env,
		     relay__start_fn fn, void *payload, relay_proc **out)
{
	const relay_runtime_warm_iface *wi = w->wi;
	const relay__cred *cred;
	relay_exec_spec lim;
	relay_error err;
	relay_proc *pr;
	warm_req *q;
	int why, i;

	q = relay__calloc(1, sizeof(*q));
	pr = relay__calloc(1, w->rt->rb->proc_size);
	if (!q || !pr) {
		relay__free(q);
		relay__free(pr);
		return RELAY_WARM_FAIL_SPAWN;
	}
	q->p = p;
	q->fn = fn;
	q->payload = payload;
	q->proc = pr;
	q->id = ++w->next_id;
	q->cfd[0] = q->cfd[1] = q->cfd[2] = q->cfd[3] = q->go_w = -1;
	pr->stdin_fd = pr->stdout_fd = pr->stderr_fd = -1;
	q->inv = wi->proc_limits(pr);
	relay__limits_inv_init(q->inv);
	/* Only H joins the invocation's cgroups (N stays out, for the
	 * python3 and the exec server alike): the handler's own limits. */
	lim = *spec;
	if (relay__limits_prepare(wi->limits, &lim, q->inv, &err) != 0)
		goto fail_q;
	for (i = 0; i < 3; i++) {
		int *pfd = i == 0 ? &pr->stdin_fd
			 : i == 1 ? &pr->stdout_fd
				  : &pr->stderr_fd;

		if (relay__make_pipe(pfd, &q->cfd[i], i == 0) != 0)
			goto fail_q;
	}
	/* As a cold spawn does: the handler may reopen its stdio. */
	cred = wi->app_cred(w->rt->rb, spec->app, &err);
	if (!cred || relay__pipes_give(q->cfd, 3, cred) != 0)
		goto fail_q;
	if (q->inv->ncg > 0) {
		if (relay__make_pipe(&q->go_w, &q->cfd[3], true) != 0)
			goto fail_q;
	}
	if (relay__warm_build_request(q, spec, env) != 0)
		goto fail_q;
	q->next = p->reqs;
	p->reqs = q;
	p->inflight++;
	p->last_used = relay_clock_mono_us(NULL);
	if (p->state == P_READY && relay__warm_req_send(q) != 0) {
		relay__warm_unlink_req(p, q);
		relay__warm_parent_fault(p, RELAY_WARM_FAIL_CRASHED,
			     "control socket write failed");
		why = RELAY_WARM_FAIL_CRASHED;
		goto fail_q_why;
	}
	*out = pr;
	return 0;
fail_q:
	why = RELAY_WARM_FAIL_SPAWN;
fail_q_why:
	relay__limits_release(q->inv, NULL);
	relay__warm_close_fd(&pr->stdin_fd);
	relay__warm_close_fd(&pr->stdout_fd);
	relay__warm_close_fd(&pr->stderr_fd);
	relay__free(pr);
	relay__warm_req_free(q);
	return why;
}

/*
 * The parent serving @spec's @key (taken) on @loop, ready; a parent of
 * another generation of the app is retired on the way. NULL with *@why
 * -1 when the run starts cold for now (no parent ready yet, one just
 * started, or the app backing off after a failure) or a relay_warm_fail
 * reason. With RELAY_WARM_REQUIRE a parent still starting is returned:
 * the run waits for it.
 */
static warm_parent *parent_for(relay__warm *w, struct ev_loop *loop,
			       const relay_exec_spec *spec, char *key,
			       int *why)
{
	bool require = spec->version >= 2 && spec->warm == RELAY_WARM_REQUIRE;
	warm_parent *p, *next;

	for (p = w->parents; p; p = next) {
		next = p->next;
		if (p->state == P_RETIRING || p->loop != loop)
			continue;
		if (relay__warm_key_eq(p->key, key))
			break;
		/* Another generation (or environment) of the same app. */
		if (strcmp(p->app, spec->app) == 0)
			relay__warm_parent_retire(p);
	}
	if (!p) {
		if (relay__warm_backoff_active(w, spec->app)) {
			relay__free(key);
			*why = -1;
			return NULL;
		}
		*why = RELAY_WARM_FAIL_SPAWN;
		p = parent_new(w, loop, spec, key, why);
		/* Not ready yet: this run starts cold unless it must wait. */
		if (p && !require) {
			*why = -1;
			return NULL;
		}
		return p;
	}
	relay__free(key);
	if (p->state != P_READY && !require) {
		*why = -1;
		return NULL;
	}
	return p;
}

static int warm_start(relay__starter *s, void *loop,
		      const relay_exec_spec *spec, relay__start_fn fn,
		      void *payload, relay_proc **out, bool *pooled,
		      relay__buf *prefix)
{
	relay__warm *w = (relay__warm *)s;
	relay__strv env = { 0 };
	warm_parent *p;
	char *key;
	int why;

	*pooled = false;
	if (relay__runtime_env(spec, &env) != 0)
		return RELAY_WARM_FAIL_SPAWN;
	key = make_key(spec, &env);
	if (!key) {
		relay__strv_free(&env);
		return RELAY_WARM_FAIL_SPAWN;
	}
	start_idle_timer(w, loop);
	if (relay__kind_get(spec->runtime)->pool_argv && !w->node_fork) {
		if (w->node_why) {
			relay__log(&w->rt->logger, RELAY_LOG_INFO, "RELAY-RT07",
				   "runtime: node apps start from pre-started "
				   "processes, not the node fork server: %s",
				   w->node_why);
			w->node_why = NULL;
		}
		why = relay__warm_pool_claim(w, loop, spec, key, &env, out,
					     prefix);
		relay__strv_free(&env);
		*pooled = why == 0;
		return why;
	}
	p = parent_for(w, loop, spec, key, &why);
	if (p)
		why = req_start(w, p, spec, &env, fn, payload, out);
	relay__strv_free(&env);
	return why;
}

static void warm_forget(relay__starter *s, void *payload)
{
	relay__warm *w = (relay__warm *)s;
	warm_parent *p;
	warm_req *q;

	for (p = w->parents; p; p = p->next) {
		for (q = p->reqs; q; q = q->next) {
			if (q->payload != payload)
				continue;
			relay__warm_unlink_req(p, q);
			relay__warm_req_free(q);
			relay__warm_arm_watchdog(p);
			if (p->state == P_RETIRING && !p->reqs)
				relay__warm_parent_free(p);
			return;
		}
	}
}

static const relay__starter_ops warm_starter_ops = {
	.start = warm_start,
	.forget = warm_forget,
	.drop_loop = warm_drop_loop,
	.free = warm_free,
};

void relay_runtime_warm_retire(relay_runtime *rt, const char *app)
{
	warm_parent *p, *next;

	if (!rt->warm)
		return;
	for (p = rt->warm->parents; p; p = next) {
		next = p->next;
		if (p->state != P_RETIRING && (!app || strcmp(p->app, app) == 0))
			relay__warm_parent_retire(p);
	}
}
