/*
 * warm_node_worker.c - V8's background tasks in a forked node invocation
 * (part of relay-warm-slot.so's node addon, warm_node.c).
 *
 * node hands V8's background tasks (a garbage collection's parallel
 * phases, WebAssembly compilation and tier-up: any V8 job) to its
 * platform's worker threads, which a fork does not have. Posted in an
 * invocation process H, such a task would never run: node waits for
 * every posted task to finish at the end of each turn of its event loop
 * (NodePlatform::DrainTasks), so H would hang there once the handler's
 * code finished. Seen with fetch (undici compiles its HTTP parser,
 * WebAssembly, in a job) and with any full garbage collection (V8 posts
 * a job to clear weak references) even with --single-threaded.
 *
 * So H gets a worker of its own: relay__node_worker_install() points
 * node's platform object at a copy of its virtual table in which
 * CallOnWorkerThread and CallDelayedOnWorkerThread queue the task here,
 * for one thread of H's (started when the first task comes, so a
 * handler starts single-threaded), and DrainTasks waits for this queue
 * and then runs the isolate's foreground tasks, as node's own does with
 * its queue. The slots are found by comparing the table's entries with
 * the addresses of node's exported NodePlatform methods; nothing
 * depends on the layout of node's objects but "the first word of an
 * object is its virtual table" (the Itanium C++ ABI, which also says
 * how a std::unique_ptr argument is passed: by the address of the
 * caller's object, and that a v8::Task's table holds its two
 * destructors, then Run()).
 *
 * Thread-safety: the hooks are called from any thread of H (node's main
 * thread, worker_threads' threads, the worker itself); the queue is
 * guarded by one mutex. relay__node_worker_install() runs once, on the
 * main thread, before H runs any JavaScript of the invocation.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "warm_node_worker.h"

struct vtask {
	void *task;            /* a v8::Task, owned */
	uint64_t due_ns;       /* CLOCK_MONOTONIC; 0: now */
	struct vtask *next;
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t more, drained;
static struct vtask *head, *tail, *later;
static long outstanding;        /* queued or running, not delayed */
static int started;             /* the worker: 1 running, -1 failed */
static _Bool (*flush_fg)(void *platform, void *isolate);

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* v8::Task: Run() (third entry of its table), then delete (second). */
static void task_run(void *t)
{
	void (**vt)(void *) = *(void (***)(void *))t;

	vt[2](t);
	vt[1](t);
}

/* @v at the queue's tail, to run now. Under mu. */
static void enqueue(struct vtask *v)
{
	v->next = NULL;
	if (tail)
		tail->next = v;
	else
		head = v;
	tail = v;
	outstanding++;
}

/* Due delayed tasks into the queue. Under mu. */
static void promote(uint64_t now)
{
	struct vtask **pp = &later;

	while (*pp) {
		struct vtask *v = *pp;

		if (v->due_ns > now) {
			pp = &v->next;
			continue;
		}
		*pp = v->next;
		enqueue(v);
	}
}

static void *worker(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&mu);
	for (;;) {
		struct vtask *v;

		promote(now_ns());
		if (!head) {
			uint64_t first = 0;

			for (v = later; v; v = v->next)
				if (!first || v->due_ns < first)
					first = v->due_ns;
			if (first) {
				struct timespec ts = {
					.tv_sec = (time_t)(first / 1000000000u),
					.tv_nsec = (long)(first % 1000000000u),
				};

				pthread_cond_timedwait(&more, &mu, &ts);
			} else {
				pthread_cond_wait(&more, &mu);
			}
			continue;
		}
		v = head;
		head = v->next;
		if (!head)
			tail = NULL;
		pthread_mutex_unlock(&mu);
		task_run(v->task);
		free(v);
		pthread_mutex_lock(&mu);
		if (--outstanding == 0)
			pthread_cond_broadcast(&drained);
	}
	return NULL;
}

/* Queue @task, due in @delay_s seconds (<= 0: now). */
static void post(void *task, double delay_s)
{
	struct vtask *v;
	pthread_t tid;

	if (!task)
		return;
	v = calloc(1, sizeof(*v));
	pthread_mutex_lock(&mu);
	if (started == 0) {
		pthread_attr_t at;

		pthread_attr_init(&at);
		pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
		started = pthread_create(&tid, &at, worker, NULL) == 0 ? 1
								       : -1;
		pthread_attr_destroy(&at);
	}
	if (!v || started < 0) {
		/* No memory or no thread: run it here, late rather than
		 * never. */
		pthread_mutex_unlock(&mu);
		free(v);
		task_run(task);
		return;
	}
	v->task = task;
	if (delay_s > 0) {
		v->due_ns = now_ns() + (uint64_t)(delay_s * 1e9);
		v->next = later;
		later = v;
	} else {
		enqueue(v);
	}
	pthread_cond_signal(&more);
	pthread_mutex_unlock(&mu);
}

/* NodePlatform::CallOnWorkerThread(std::unique_ptr<v8::Task>). */
static void hook_post(void *platform, void **task)
{
	void *t = *task;

	(void)platform;
	*task = NULL;
	post(t, 0);
}

/* NodePlatform::CallDelayedOnWorkerThread(std::unique_ptr<v8::Task>,
 * double delay_in_seconds). */
static void hook_post_delayed(void *platform, void **task, double delay)
{
	void *t = *task;

	(void)platform;
	*task = NULL;
	post(t, delay);
}

/* NodePlatform::DrainTasks(v8::Isolate *): every queued task done, then
 * the isolate's foreground tasks, until neither has any. */
static void hook_drain(void *platform, void *isolate)
{
	do {
		pthread_mutex_lock(&mu);
		while (outstanding > 0)
			pthread_cond_wait(&drained, &mu);
		pthread_mutex_unlock(&mu);
	} while (flush_fg(platform, isolate));
}

/* What relay__node_worker_prepare() found: node's platform and the copy
 * of its table, hooked (NULL: not prepared). */
static void *ready_platform;
static void **ready_table;

int relay__node_worker_prepare(void *node_env, char *why, size_t why_len)
{
	static const char *const names[] = {
		"_ZN4node12NodePlatform18CallOnWorkerThreadESt10unique_ptr"
		"IN2v84TaskESt14default_deleteIS3_EE",
		"_ZN4node12NodePlatform25CallDelayedOnWorkerThreadESt10unique"
		"_ptrIN2v84TaskESt14default_deleteIS3_EEd",
		"_ZN4node12NodePlatform10DrainTasksEPN2v87IsolateE",
	};
	void (*const h_post)(void *, void **) = hook_post;
	void (*const h_delayed)(void *, void **, double) = hook_post_delayed;
	void (*const h_drain)(void *, void *) = hook_drain;
	void *hooks[3];
	void *(*get_platform)(void *);
	void **vt, **copy, *platform, *fn[3];
	const ElfW(Sym) *sym = NULL;
	pthread_condattr_t ca;
	Dl_info info;
	size_t n, i, k;

	if (ready_table)
		return 0;
	*(void **)&get_platform = dlsym(RTLD_DEFAULT,
		"_ZN4node23GetMultiIsolatePlatformEPNS_11EnvironmentE");
	*(void **)&flush_fg = dlsym(RTLD_DEFAULT,
		"_ZN4node12NodePlatform20FlushForegroundTasksEPN2v87IsolateE");
	vt = dlsym(RTLD_DEFAULT, "_ZTVN4node12NodePlatformE");
	for (k = 0; k < 3; k++)
		fn[k] = dlsym(RTLD_DEFAULT, names[k]);
	if (!get_platform || !flush_fg || !vt || !fn[0] || !fn[1] || !fn[2] ||
	    !dladdr1(vt, &info, (void **)&sym, RTLD_DL_SYMENT) || !sym ||
	    sym->st_size < 3 * sizeof(void *)) {
		snprintf(why, why_len, "this node does not export its "
			 "platform's methods");
		return -1;
	}
	platform = node_env ? get_platform(node_env) : NULL;
	if (!platform || *(void ***)platform != vt + 2) {
		snprintf(why, why_len, "node's platform is not its own "
			 "NodePlatform");
		return -1;
	}
	n = sym->st_size / sizeof(void *);
	copy = malloc(n * sizeof(void *));
	if (!copy) {
		snprintf(why, why_len, "%s", strerror(errno));
		return -1;
	}
	memcpy(copy, vt, n * sizeof(void *));
	/* Table entries are code addresses (pedantic C has no cast). */
	memcpy(&hooks[0], &h_post, sizeof(void *));
	memcpy(&hooks[1], &h_delayed, sizeof(void *));
	memcpy(&hooks[2], &h_drain, sizeof(void *));
	for (k = 0; k < 3; k++) {
		for (i = 2; i < n && copy[i] != fn[k]; i++)
			;
		if (i == n) {
			free(copy);
			snprintf(why, why_len, "node's platform has no "
				 "method %zu in its table", k);
			return -1;
		}
		copy[i] = hooks[k];
	}
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&more, &ca);
	pthread_condattr_destroy(&ca);
	pthread_cond_init(&drained, NULL);
	ready_platform = platform;
	ready_table = copy + 2;
	return 0;
}

int relay__node_worker_install(void *node_env, char *why, size_t why_len)
{
	if (!ready_table &&
	    relay__node_worker_prepare(node_env, why, why_len) != 0)
		return -1;
	*(void ***)ready_platform = ready_table;
	return 0;
}
