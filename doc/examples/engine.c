/*
 * engine.c - run the full Relay-C stream engine inside your own libev loop,
 * with a plain C function as the handler.
 *
 *	example-engine REDIS_URI APPS_DIR [N]
 *
 *	example-engine unix:///tmp/x/redis.sock doc/examples/apps 10
 *
 * What it does, in order:
 *   1. creates the host's libev loop (librelay never owns a loop);
 *   2. loads the apps under APPS_DIR (their template.yaml rules);
 *   3. opens a Redis backend driven by that loop;
 *   4. publishes N "invoice.paid" events to the stream "examples";
 *   5. runs a relay_consumer whose executor calls handle_event() in this
 *      process instead of starting a sandboxed child process;
 *   6. when every event is acknowledged, stops the consumer gracefully,
 *      closes it, frees everything and exits 0 (1 on any failure).
 *
 * Output: one "handled ..." line per handler call, then one summary line.
 * Built against the public headers and the shared library only.
 *
 * Build against an installed librelay (README.md, "Install"); libev is
 * named too since this file calls it directly:
 *
 *	cc -o example engine.c $(pkg-config --cflags --libs librelay) -lev
 */
#include <ev.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "relay/app.h"
#include "relay/engine.h"
#include "relay/redis.h"
#include "relay/relay_libev.h"

/* ---- 1. the handler: an ordinary C function --------------------------- */

/* Called once per matched (app, handler) invocation. The event is the
 * message's JSON text; returning 0 means success (the engine records the
 * invocation complete and ACKs the message once all its invocations are
 * done). A nonzero return would be a failed attempt: retried with backoff,
 * then dead-lettered, exactly as a failing handler process. */
static int handle_event(const char *app, const char *handler,
			const char *message_id, const char *event)
{
	printf("handled %s/%s %s %s\n", app, handler, message_id, event);
	return 0;
}

/* ---- 2. the in-process executor --------------------------------------- */

/* relay_consumer_executor is a versioned vtable; implementations embed it
 * first. run() must not call done() itself: it queues the job, and a
 * zero-delay timer on the host loop runs the queue on the next iteration.
 * The spec is only borrowed for the call to run(), so we copy what we
 * need. */
typedef struct job {
	struct job *next;
	char *app, *handler, *message_id, *event;
	relay_run_done_fn done;
	void *payload;
} job;

typedef struct inproc_exec {
	relay_consumer_executor parent;  /* first: we cast back from it */
	struct ev_loop *loop;
	ev_timer tick;                   /* runs the queued jobs */
	job *head, **tail;
	unsigned long calls;
} inproc_exec;

static char *dup_n(const char *s, size_t n)
{
	char *p = malloc(n + 1);

	if (p) {
		memcpy(p, s ? s : "", s ? n : 0);
		p[s ? n : 0] = '\0';
	}
	return p;
}

static void job_free(job *j)
{
	free(j->app);
	free(j->handler);
	free(j->message_id);
	free(j->event);
	free(j);
}

static void inproc_tick(struct ev_loop *loop, ev_timer *w, int revents)
{
	inproc_exec *x = w->data;
	job *j = x->head;

	(void)revents;
	x->head = NULL;  /* detach the queue: done() may queue new runs */
	x->tail = &x->head;
	while (j) {
		job *next = j->next;
		relay_run_outcome o;

		memset(&o, 0, sizeof(o));
		o.version = RELAY_RUN_OUTCOME_VERSION;
		x->calls++;
		if (handle_event(j->app, j->handler, j->message_id,
				 j->event) == 0) {
			o.status = RELAY_RUN_OK;
		} else {
			o.status = RELAY_RUN_FAILED;
			o.exit_code = 1;
			snprintf(o.reason, sizeof(o.reason), "handler failed");
		}
		j->done(&o, j->payload);  /* exactly once per started run */
		job_free(j);
		j = next;
	}
	(void)loop;
}

static int inproc_run(relay_consumer_executor *xe, const relay_exec_spec *s,
		      relay_output_fn output, relay_run_done_fn done,
		      void *payload, void **handle)
{
	inproc_exec *x = (inproc_exec *)xe;
	job *j = calloc(1, sizeof(*j));

	(void)output;  /* our handler prints directly instead */
	if (!j)
		return RELAY_ENOMEM;  /* nonzero: done() will never run */
	j->app = dup_n(s->app, strlen(s->app));
	j->handler = dup_n(s->handler, strlen(s->handler));
	j->message_id = dup_n(s->message_id,
			      s->message_id ? strlen(s->message_id) : 0);
	j->event = dup_n(s->event, s->event_len);
	if (!j->app || !j->handler || !j->message_id || !j->event) {
		job_free(j);
		return RELAY_ENOMEM;
	}
	j->done = done;
	j->payload = payload;
	*x->tail = j;
	x->tail = &j->next;
	*handle = j;  /* no cancel(): runs finish on the next iteration */
	if (!ev_is_active(&x->tick))
		ev_timer_start(x->loop, &x->tick);
	return 0;
}

/* ---- 3. watching progress, stopping and closing ----------------------- */

typedef struct host {
	struct ev_loop *loop;
	relay_consumer *consumer;
	unsigned long published, publish_errors, want;
	int stopping, failed;
	relay_consumer_metrics m;        /* last figures, for the summary */
	ev_timer poll, deadline;
} host;

/* Every message published: the id comes back in the callback. */
static void on_published(relay_redis_backend *b, int status, char **ids,
			 size_t n, void *payload)
{
	host *h = payload;

	(void)b;
	if (status)
		h->publish_errors++;
	else
		h->published++;
	relay_redis_strings_free(ids, n);  /* ids are ours to free */
}

/* The consumer's last callback has run; it is freed when we return.
 * Only after this may the Redis backend and the app set be freed. */
static int consumer_closed;

static void on_closed(relay_consumer *c)
{
	(void)c;
	consumer_closed = 1;
}

/* Nothing is in flight any more: take the final figures, close the
 * consumer and leave the loop (the Redis backend keeps watchers on it, so
 * ev_run() would not return by itself). */
static void on_stopped(relay_consumer *c, void *payload)
{
	host *h = payload;

	relay_consumer_metrics_get(c, &h->m);  /* valid until close's cb */
	relay_consumer_close(c, on_closed);
	ev_timer_stop(h->loop, &h->poll);
	ev_timer_stop(h->loop, &h->deadline);
	ev_break(h->loop, EVBREAK_ALL);
}

static void begin_stop(host *h, int graceful)
{
	if (h->stopping)
		return;
	h->stopping = 1;
	relay_consumer_stop(h->consumer, graceful, on_stopped, h);
}

/* Every 50 ms: have all N messages been acknowledged? */
static void on_poll(struct ev_loop *loop, ev_timer *w, int revents)
{
	host *h = w->data;

	(void)loop;
	(void)revents;
	relay_consumer_metrics_get(h->consumer, &h->m);
	if (h->publish_errors || h->m.acks >= h->want) {
		h->failed = h->publish_errors != 0;
		begin_stop(h, 1);  /* graceful: let running handlers finish */
	}
}

/* A safety net: never hang a test run. */
static void on_deadline(struct ev_loop *loop, ev_timer *w, int revents)
{
	host *h = w->data;

	(void)loop;
	(void)revents;
	fprintf(stderr, "example-engine: timed out\n");
	h->failed = 1;
	begin_stop(h, 0);  /* not graceful: cancel and stop now */
}

/* The example apps include python3 and node apps; by default the engine
 * only runs those when the interpreter is on PATH. Our executor runs
 * everything in-process, so every app is available. */
static int always_available(const relay_app *app, void *payload)
{
	(void)app;
	(void)payload;
	return 1;
}

/* ---- 4. main: set up, publish, run the loop, tear down ---------------- */

int main(int argc, char **argv)
{
	struct ev_loop *loop;
	relay_appset *apps = NULL;
	relay_redis_backend *redis = NULL;
	relay_consumer_options o = RELAY_CONSUMER_OPTIONS_INIT;
	relay_error err;
	inproc_exec x;
	host h;
	unsigned long i, n = argc > 3 ? strtoul(argv[3], NULL, 10) : 10;
	int rc = 1;

	if (argc < 3 || n == 0 || n > 1000) {
		fprintf(stderr, "usage: example-engine REDIS_URI APPS_DIR "
			"[N (1-1000)]\n");
		return 2;
	}
	memset(&err, 0, sizeof(err));
	memset(&h, 0, sizeof(h));
	h.want = n;
	h.m.version = RELAY_CONSUMER_METRICS_VERSION;
	loop = ev_loop_new(EVFLAG_AUTO);  /* the host's own loop */
	h.loop = loop;

	/* The app set: every subdirectory of APPS_DIR with a template.yaml. */
	if (!loop || relay_appset_load(&apps, argv[2], NULL, NULL) != 0) {
		fprintf(stderr, "example-engine: cannot load %s\n", argv[2]);
		goto out;
	}
	/* An asynchronous backend on our loop; it connects lazily. */
	if (relay_redis_open_libev(&redis, loop, argv[1], NULL, &err) != 0) {
		fprintf(stderr, "example-engine: %s\n", err.text);
		goto out;
	}

	/* Publish N events; the field "event" holds the JSON. They match the
	 * billing app's invoices.paid.handle rule (amount > 0, < 5000). */
	for (i = 0; i < n; i++) {
		static const char *const names[] = { "event" };
		char json[128];
		const char *values[1];

		snprintf(json, sizeof(json), "{\"type\":\"invoice.paid\","
			 "\"invoice\":{\"id\":\"inv_%lu\",\"amount\":%lu}}",
			 i + 1, 100 * (i + 1));
		values[0] = json;  /* copied when the command is queued */
		if (relay_redis_xadd(redis, "examples", 1, names, values, NULL,
				     on_published, &h) != 0)
			h.publish_errors++;
	}

	/* The executor: our vtable, and the timer that completes its runs. */
	memset(&x, 0, sizeof(x));
	x.parent.version = RELAY_CONSUMER_EXECUTOR_VERSION;
	x.parent.run = inproc_run;
	x.parent.cancel = NULL;
	x.loop = loop;
	x.tail = &x.head;
	ev_timer_init(&x.tick, inproc_tick, 0., 0.);
	x.tick.data = &x;

	/* The consumer: stream, group and consumer name are required. The
	 * group is created (from id 0) by relay_consumer_start(), so the
	 * events published above are read too. No runtime is needed (NULL)
	 * because options.executor is set. */
	o.stream = "examples";
	o.group = "relay";
	o.consumer = "example-1";
	o.max_concurrency = 4;
	o.executor = &x.parent;
	o.available = always_available;
	if (relay_consumer_new(&h.consumer, loop, redis, NULL, apps, &o,
			       &err) != 0 ||
	    relay_consumer_start(h.consumer) != 0) {
		fprintf(stderr, "example-engine: consumer: %s\n", err.text);
		goto out;
	}

	ev_timer_init(&h.poll, on_poll, 0.05, 0.05);
	h.poll.data = &h;
	ev_timer_start(loop, &h.poll);
	ev_timer_init(&h.deadline, on_deadline, 30., 0.);
	h.deadline.data = &h;
	ev_timer_start(loop, &h.deadline);

	ev_run(loop, 0);  /* returns after on_stopped() calls ev_break() */

	printf("summary: published %lu, received %llu, matched %llu, "
	       "handler calls %lu, succeeded %llu, failed %llu, acked %llu, "
	       "dead-lettered %llu\n", h.published,
	       (unsigned long long)h.m.events_received,
	       (unsigned long long)h.m.events_matched, x.calls,
	       (unsigned long long)h.m.handler_success,
	       (unsigned long long)h.m.handler_failure,
	       (unsigned long long)h.m.acks,
	       (unsigned long long)h.m.dlq_entries);
	rc = h.failed || h.m.acks != n ? 1 : 0;
out:
	/* Closing completes from the loop: run it until on_closed() has
	 * been called, then free the rest in reverse order of creation. */
	if (h.consumer) {
		if (!h.stopping)
			relay_consumer_close(h.consumer, on_closed);
		while (!consumer_closed)
			ev_run(loop, EVRUN_ONCE);
	}
	relay_redis_free(redis);
	relay_appset_free(apps);
	if (loop)
		ev_loop_destroy(loop);
	return rc;
}
