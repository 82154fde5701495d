/*
 * redis_defer_libev.c - deliver a backend's replies from a host libev
 * loop. The memory backend completes every command before the call
 * returns; an engine driven by libev expects replies later, from the loop,
 * as a real server gives them (no callback re-entering the code that
 * issued the command). This decorator queues each completion and delivers
 * the queue in issue order from an ev_idle watcher. "memory://" opened on
 * a host loop (relay_redis_open_libev) is wrapped in it.
 *
 * Blocking reads: an XREADGROUP with BLOCK n > 0 that finds nothing is
 * parked instead of answered nil at once (which would make a consumer
 * spin): an XADD to its stream through this backend re-runs it, and after
 * n ms (real loop time) it completes with nil, as Redis does.
 *
 * Freeing the decorator fails every undelivered completion with
 * RELAY_ECLOSED (its reply is discarded), then frees the inner backend.
 */
#include <ev.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

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

struct parked;

typedef struct defer_backend {
	relay_redis_backend parent;  /* must be first */
	relay_redis_backend *inner;  /* owned */
	struct ev_loop *loop;
	ev_idle idle;
	dq_item *head;
	dq_item **tail;
	struct parked *parked;       /* blocked reads */
} defer_backend;

/* A blocked XREADGROUP: its item is out of the queue until it completes. */
typedef struct parked {
	struct parked *next;
	defer_backend *d;
	dq_item *it;
	int argc;
	char **argv;  /* copy of the command */
	size_t *lens;
	ev_timer timer;
} parked;

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

/* Take the last item out of the queue (it stays allocated). */
static void unlink_last(defer_backend *d, dq_item *it)
{
	dq_item **pp = &d->head;

	while (*pp != it)
		pp = &(*pp)->next;
	*pp = NULL;
	d->tail = pp;
}

/* Undo enqueue() of the last item after the inner call refused it. */
static void drop_last(defer_backend *d, dq_item *it)
{
	unlink_last(d, it);
	relay__free(it);
}

static void append_ready(defer_backend *d, dq_item *it)
{
	it->next = NULL;
	*d->tail = it;
	d->tail = &it->next;
	ev_idle_start(d->loop, &d->idle);
}

static int arg_is(int i, const char *const *argv, const size_t *lens,
		  const char *s)
{
	return lens[i] == strlen(s) && strncasecmp(argv[i], s, lens[i]) == 0;
}

/* BLOCK of a single-stream XREADGROUP, or 0. */
static long long read_block_ms(int argc, const char *const *argv,
			       const size_t *lens)
{
	char buf[24];
	int i;

	if (!arg_is(0, argv, lens, "XREADGROUP"))
		return 0;
	for (i = 1; i + 1 < argc && !arg_is(i, argv, lens, "STREAMS"); i++) {
		if (!arg_is(i, argv, lens, "BLOCK") ||
		    lens[i + 1] >= sizeof(buf))
			continue;
		memcpy(buf, argv[i + 1], lens[i + 1]);
		buf[lens[i + 1]] = '\0';
		return atoll(buf) > 0 ? atoll(buf) : 0;
	}
	return 0;
}

static void parked_free(parked *p)
{
	int i;

	for (i = 0; i < p->argc; i++)
		relay__free(p->argv[i]);
	relay__free(p->argv);
	relay__free(p->lens);
	relay__free(p);
}

static void unpark(defer_backend *d, parked *p)
{
	parked **pp = &d->parked;

	while (*pp != p)
		pp = &(*pp)->next;
	*pp = p->next;
	ev_timer_stop(d->loop, &p->timer);
}

static void on_block_timeout(struct ev_loop *loop, ev_timer *w, int revents)
{
	parked *p = w->data;
	defer_backend *d = p->d;
	dq_item *it = p->it;

	unpark(d, p);
	parked_free(p);
	it->reply = relay__reply_nil();
	it->status = it->reply ? 0 : RELAY_ENOMEM;
	it->ready = 1;
	append_ready(d, it);
}

/* Park @it (the queue's last item, answered nil); 0 or RELAY_ENOMEM. */
static int park(defer_backend *d, dq_item *it, int argc,
		const char *const *argv, const size_t *lens, long long ms)
{
	parked *p = relay__calloc(1, sizeof(*p));
	int i;

	if (!p)
		return RELAY_ENOMEM;
	p->argv = relay__calloc((size_t)argc, sizeof(*p->argv));
	p->lens = relay__calloc((size_t)argc, sizeof(*p->lens));
	for (i = 0; p->argv && p->lens && i < argc; i++) {
		p->argv[i] = relay__strndup(argv[i], lens[i]);
		p->lens[i] = lens[i];
		if (!p->argv[i])
			break;
		p->argc = i + 1;
	}
	if (!p->argv || !p->lens || p->argc < argc) {
		parked_free(p);
		return RELAY_ENOMEM;
	}
	unlink_last(d, it);
	relay_redis_reply_free(it->reply);
	it->reply = NULL;
	it->ready = 0;
	p->d = d;
	p->it = it;
	ev_timer_init(&p->timer, on_block_timeout, ms / 1000.0, 0.);
	p->timer.data = p;
	ev_timer_start(d->loop, &p->timer);
	p->next = d->parked;
	d->parked = p;
	return 0;
}

/* An XADD to @key happened: re-run the reads blocked on it. */
static void wake(defer_backend *d, const char *key, size_t len)
{
	parked *p = d->parked, *next;
	dq_item *it;

	for (; p; p = next) {
		next = p->next;
		it = p->it;
		if (p->lens[p->argc - 2] != len ||
		    memcmp(p->argv[p->argc - 2], key, len) != 0)
			continue;
		if (d->inner->command(d->inner, p->argc,
				      (const char *const *)p->argv, p->lens,
				      item_done, it) != 0 ||
		    !it->ready)
			continue;
		if (it->status == 0 && it->reply &&
		    it->reply->type == RELAY_REDIS_REPLY_NIL) {
			relay_redis_reply_free(it->reply);
			it->reply = NULL;
			it->ready = 0;
			continue; /* still nothing for this group */
		}
		unpark(d, p);
		parked_free(p);
		append_ready(d, it);
	}
}

#define DEFER_MAX_ARGS 512

static int defer_command(relay_redis_backend *b, int argc,
			 const char *const *argv, const size_t *argvlen,
			 relay_redis_reply_cb cb, void *payload)
{
	defer_backend *d = (defer_backend *)b;
	size_t lens[DEFER_MAX_ARGS];
	long long ms;
	dq_item *it;
	int rc, i;

	if (argc < 1 || argc > DEFER_MAX_ARGS)
		return RELAY_EINVAL;
	for (i = 0; i < argc; i++)
		lens[i] = argvlen ? argvlen[i] : strlen(argv[i]);
	it = enqueue(d, cb, payload);
	if (!it)
		return RELAY_ENOMEM;
	rc = d->inner->command(d->inner, argc, argv, lens, item_done, it);
	if (rc) {
		drop_last(d, it);
		return rc;
	}
	if (it->ready && it->status == 0 && it->reply &&
	    it->reply->type == RELAY_REDIS_REPLY_NIL &&
	    (ms = read_block_ms(argc, argv, lens)) > 0)
		park(d, it, argc, argv, lens, ms); /* on ENOMEM: nil now */
	else if (it->ready && it->status == 0 && it->reply &&
		 it->reply->type == RELAY_REDIS_REPLY_STRING && argc > 1 &&
		 arg_is(0, argv, lens, "XADD"))
		wake(d, argv[1], lens[1]);
	if (d->head)
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
	parked *p;
	dq_item *it;

	ev_idle_stop(d->loop, &d->idle);
	while ((p = d->parked)) {
		it = p->it;
		unpark(d, p);
		parked_free(p);
		append_ready(d, it); /* failed below with ECLOSED */
	}
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
	/* As capable as the backend it wraps (relay/sys/redis.h). */
	d->parent.version = inner->version;
	d->parent.name = inner->name;
	d->parent.command = defer_command;
	d->parent.script = defer_script;
	d->parent.wait = defer_wait;
	d->parent.errstr = defer_errstr;
	d->parent.free = defer_free;
	*out = &d->parent;
	return 0;
}
