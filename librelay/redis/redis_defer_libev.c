/*
 * redis_defer_libev.c - deliver a backend's replies from a host libev
 * loop. The memory backend completes every command before the call
 * returns; an engine driven by libev expects replies later, from the loop,
 * as a real server gives them (no callback re-entering the code that
 * issued the command). This decorator queues each completion and delivers
 * the queue in issue order from an ev_idle watcher. "memory://" opened on
 * a host loop (relay_redis_open_libev) is wrapped in it.
 *
 * Freeing the decorator fails every undelivered completion with
 * RELAY_ECLOSED (its reply is discarded), then frees the inner backend.
 */
#include <ev.h>
#include <string.h>

#include "backend.h"
#include "common.h"

typedef struct dq_item {
	struct dq_item *next;
	relay_redis_reply_cb cb;
	void *payload;
	int ready;                 /* the inner backend has answered */
	int status;
	relay_redis_reply *reply;
} dq_item;

typedef struct defer_backend {
	relay_redis_backend parent;  /* must be first */
	relay_redis_backend *inner;  /* owned */
	struct ev_loop *loop;
	ev_idle idle;
	dq_item *head;
	dq_item **tail;
} defer_backend;

static void item_done(relay_redis_backend *inner, int status,
		      relay_redis_reply *reply, void *payload)
{
	dq_item *it = payload;

	it->ready = 1;
	it->status = status;
	it->reply = reply;
}

/* Deliver the ready prefix of the queue as it was when called; items
 * queued by the callbacks wait for the next loop iteration. */
static void on_idle(struct ev_loop *loop, ev_idle *w, int revents)
{
	defer_backend *d = w->data;
	size_t n = 0;
	dq_item *it;

	for (it = d->head; it; it = it->next)
		n++;
	while (n-- > 0 && d->head && d->head->ready) {
		it = d->head;
		d->head = it->next;
		if (!d->head)
			d->tail = &d->head;
		if (it->cb)
			it->cb(&d->parent, it->status, it->reply,
			       it->payload);
		else
			relay_redis_reply_free(it->reply);
		relay__free(it);
	}
	if (!d->head || !d->head->ready)
		ev_idle_stop(loop, w);
}

static dq_item *enqueue(defer_backend *d, relay_redis_reply_cb cb,
			void *payload)
{
	dq_item *it = relay__calloc(1, sizeof(*it));

	if (!it)
		return NULL;
	it->cb = cb;
	it->payload = payload;
	*d->tail = it;
	d->tail = &it->next;
	return it;
}

/* Undo enqueue() of the last item after the inner call refused it. */
static void drop_last(defer_backend *d, dq_item *it)
{
	dq_item **pp = &d->head;

	while (*pp != it)
		pp = &(*pp)->next;
	*pp = NULL;
	d->tail = pp;
	relay__free(it);
}

static int defer_command(relay_redis_backend *b, int argc,
			 const char *const *argv, const size_t *argvlen,
			 relay_redis_reply_cb cb, void *payload)
{
	defer_backend *d = (defer_backend *)b;
	dq_item *it = enqueue(d, cb, payload);
	int rc;

	if (!it)
		return RELAY_ENOMEM;
	rc = d->inner->command(d->inner, argc, argv, argvlen, item_done, it);
	if (rc) {
		drop_last(d, it);
		return rc;
	}
	ev_idle_start(d->loop, &d->idle);
	return 0;
}

static int defer_script(relay_redis_backend *b, relay_redis_script op,
			int numkeys, int argc, const char *const *argv,
			const size_t *argvlen, relay_redis_reply_cb cb,
			void *payload)
{
	defer_backend *d = (defer_backend *)b;
	dq_item *it = enqueue(d, cb, payload);
	int rc;

	if (!it)
		return RELAY_ENOMEM;
	rc = d->inner->script(d->inner, op, numkeys, argc, argv, argvlen,
			      item_done, it);
	if (rc) {
		drop_last(d, it);
		return rc;
	}
	ev_idle_start(d->loop, &d->idle);
	return 0;
}

static int defer_wait(relay_redis_backend *b, const int *done)
{
	return RELAY_EINVAL; /* driven by the host's loop */
}

static const char *defer_errstr(const relay_redis_backend *b)
{
	const defer_backend *d = (const defer_backend *)b;

	return d->inner->errstr(d->inner);
}

static void defer_free(relay_redis_backend *b)
{
	defer_backend *d = (defer_backend *)b;
	dq_item *it;

	ev_idle_stop(d->loop, &d->idle);
	d->inner->free(d->inner); /* unanswered items get ECLOSED here */
	while ((it = d->head)) {
		d->head = it->next;
		relay_redis_reply_free(it->reply);
		if (it->cb)
			it->cb(&d->parent, RELAY_ECLOSED, NULL, it->payload);
		relay__free(it);
	}
	relay__free(d);
}

relay_redis_backend *relay__redis_defer_inner(relay_redis_backend *b)
{
	return b->command == defer_command ? ((defer_backend *)b)->inner
					   : NULL;
}

int relay__redis_defer_new(relay_redis_backend **out,
			   relay_redis_backend *inner, struct ev_loop *loop)
{
	defer_backend *d = relay__calloc(1, sizeof(*d));

	*out = NULL;
	if (!d) {
		relay_redis_free(inner);
		return RELAY_ENOMEM;
	}
	d->inner = inner;
	d->loop = loop;
	d->tail = &d->head;
	ev_idle_init(&d->idle, on_idle);
	d->idle.data = d;
	d->parent.version = RELAY_REDIS_BACKEND_VERSION;
	d->parent.name = inner->name;
	d->parent.command = defer_command;
	d->parent.script = defer_script;
	d->parent.wait = defer_wait;
	d->parent.errstr = defer_errstr;
	d->parent.free = defer_free;
	*out = &d->parent;
	return 0;
}
