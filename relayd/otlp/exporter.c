/*
 * exporter.c - the batch span processor and the OTLP/HTTP client on a
 * libev loop (libcurl's multi-socket interface).
 *
 * A span is encoded when it is submitted (nothing of it is kept), into
 * the open batch: a buffer of at most max_batch encoded spans with room
 * in front for the request's head. Batches wait in a ring; at most
 * max_queue spans wait in all. An export takes the oldest batch, writes
 * its head and posts it; one request is in
 * flight at a time (the batch span processor's rule), so a slow collector
 * fills the queue and new spans are dropped and counted, never waited
 * for. libcurl tells us which sockets to watch (ev_io) and when to call it
 * back (ev_timer); it resolves names on its own thread and never blocks
 * the loop. Each request is bounded by the smaller of
 * OTEL_EXPORTER_OTLP_TIMEOUT and OTEL_BSP_EXPORT_TIMEOUT.
 *
 * Retries (OTLP/HTTP): 429, 502, 503, 504 and connection errors or
 * timeouts are retried up to RELAY_OTLP_MAX_ATTEMPTS with exponential
 * backoff (1 s doubling, at most 30 s, jittered) or the server's
 * Retry-After (at most 60 s); any other answer drops the batch. Spans
 * of a batch given up count as dropped.
 *
 * Logging: WARN once when exporting starts failing, INFO when it works
 * again; the URL is logged without its userinfo, query values and
 * fragment (relay_otlp_endpoint_redact), header values never (libcurl's
 * verbose mode stays off).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>
#include <ev.h>

#include "otlp.h"

struct relay_otlp {
	struct ev_loop *loop;
	relay_logger log;
	char *endpoint;
	char *endpoint_safe;            /* to log: no userinfo, no query
					   values, no fragment */
	relay_trace_attr *resource;     /* service.name first */
	size_t nresource;
	relay_otlp_kv *resource_kv;     /* owns the resource's strings */
	size_t nresource_kv;
	char *service_name;
	struct curl_slist *headers;     /* secrets */
	int64_t timeout_ms;
	double delay_s;
	size_t max_queue, max_batch;

	relay_otlp_parts parts;         /* resource and scope, encoded */
	size_t gap;                     /* room for a request's head */
	struct batch *batches;          /* a ring of nbatches */
	size_t nbatches, qhead, qlen;   /* waiting: [qhead, qhead + qlen) */
	size_t count;                   /* spans waiting */
	struct batch *fly;              /* in flight or waiting for its
					   retry, or NULL */

	CURLM *multi;
	CURL *easy;                     /* the request in flight, or NULL */
	uint8_t *body;                  /* its body, in fly's buffer */
	size_t bodylen, batch;          /* bytes, spans */
	unsigned int attempt;
	bool failing;                   /* the last request failed */
	char curl_err[CURL_ERROR_SIZE];

	ev_timer schedule;              /* the schedule delay */
	ev_timer retry;                 /* backoff of the batch in flight */
	ev_timer kick;                  /* an export on the next iteration */
	ev_timer curl_timer;            /* libcurl's timeout */

	relay_otlp_counts counts;
};

/* One batch: the request's head room, then its encoded spans. */
typedef struct batch {
	relay_otlp_buf b;
	size_t spans;
} batch;

/* A buffer grown past this by a burst of big spans is given back when
 * its batch is done. */
#define BATCH_KEEP_BYTES (4u << 20)

typedef struct sock {
	ev_io io;
	relay_otlp *x;
	curl_socket_t fd;
} sock;

bool relay_otlp_available(void)
{
	return true;
}

static void logf_(relay_otlp *x, relay_log_level lvl, const char *id,
		  const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static void logf_(relay_otlp *x, relay_log_level lvl, const char *id,
		  const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	if (!x->log.fn || lvl < x->log.level)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	x->log.fn(x->log.payload, lvl, id, msg);
}

/* ---- libcurl on libev ------------------------------------------------- */

static void check_done(relay_otlp *x);

static void on_io(struct ev_loop *loop, ev_io *w, int revents)
{
	sock *k = (sock *)w;
	relay_otlp *x = k->x;
	int running, flags = 0;

	(void)loop;
	if (revents & EV_READ)
		flags |= CURL_CSELECT_IN;
	if (revents & EV_WRITE)
		flags |= CURL_CSELECT_OUT;
	curl_multi_socket_action(x->multi, k->fd, flags, &running);
	check_done(x);
}

static int on_socket(CURL *e, curl_socket_t fd, int what, void *userp,
		     void *socketp)
{
	relay_otlp *x = userp;
	sock *k = socketp;
	int ev = (what & CURL_POLL_IN ? EV_READ : 0) |
		 (what & CURL_POLL_OUT ? EV_WRITE : 0);

	(void)e;
	if (what == CURL_POLL_REMOVE) {
		if (k) {
			ev_io_stop(x->loop, &k->io);
			free(k);
			curl_multi_assign(x->multi, fd, NULL);
		}
		return 0;
	}
	if (!k) {
		k = calloc(1, sizeof(*k));
		if (!k)
			return -1;
		k->x = x;
		k->fd = fd;
		ev_init(&k->io, on_io);
		curl_multi_assign(x->multi, fd, k);
	}
	ev_io_stop(x->loop, &k->io);
	ev_io_set(&k->io, fd, ev);
	ev_io_start(x->loop, &k->io);
	return 0;
}

static void on_curl_timer(struct ev_loop *loop, ev_timer *w, int revents)
{
	relay_otlp *x = w->data;
	int running;

	(void)loop;
	(void)revents;
	curl_multi_socket_action(x->multi, CURL_SOCKET_TIMEOUT, 0, &running);
	check_done(x);
}

static int on_timer(CURLM *m, long timeout_ms, void *userp)
{
	relay_otlp *x = userp;

	(void)m;
	ev_timer_stop(x->loop, &x->curl_timer);
	if (timeout_ms >= 0) {
		ev_timer_set(&x->curl_timer, (double)timeout_ms / 1000., 0.);
		ev_timer_start(x->loop, &x->curl_timer);
	}
	return 0;
}

static size_t discard(char *p, size_t size, size_t n, void *userp)
{
	(void)p;
	(void)userp;
	return size * n;
}

/* ---- the batch processor ---------------------------------------------- */

static void start_export(relay_otlp *x);

static void arm_kick(relay_otlp *x)
{
	if (!ev_is_active(&x->kick)) {
		ev_timer_set(&x->kick, 0., 0.);
		ev_timer_start(x->loop, &x->kick);
	}
}

/* A new batch at the ring's tail, or NULL (out of memory). */
static batch *open_batch(relay_otlp *x)
{
	batch *k = &x->batches[(x->qhead + x->qlen) % x->nbatches];

	if (k == x->fly)
		return NULL;  /* cannot happen: the ring has room for it */
	if (!k->b.p) {
		k->b.p = malloc(x->gap + 4096);
		if (!k->b.p)
			return NULL;
		k->b.cap = x->gap + 4096;
	}
	k->b.n = x->gap;
	k->b.oom = false;
	k->spans = 0;
	x->qlen++;
	return k;
}

bool relay_otlp_submit(relay_otlp *x, const relay_span *s)
{
	batch *k = NULL;

	if (x->count == x->max_queue)
		goto drop;
	if (x->qlen)
		k = &x->batches[(x->qhead + x->qlen - 1) % x->nbatches];
	if (!k || k->spans == x->max_batch) {
		k = open_batch(x);
		if (!k)
			goto drop;
	}
	if (!relay_otlp_span_append(&k->b, s, RELAY_OTLP_SPAN_MAX_BYTES)) {
		if (k->spans == 0)
			x->qlen--;  /* the batch just opened stays unused */
		goto drop;
	}
	k->spans++;
	x->count++;
	/* Not while a batch waits for its retry (x->fly): start_export()
	 * would do nothing, once per span. */
	if (x->count >= x->max_batch && !x->easy && !x->fly)
		arm_kick(x);
	return true;
drop:
	x->counts.spans_dropped++;
	return false;
}

static void finish_batch(relay_otlp *x)
{
	batch *k = x->fly;

	if (k) {
		if (k->b.cap > BATCH_KEEP_BYTES)
			relay_otlp_buf_free(&k->b);
		k->spans = 0;
	}
	x->fly = NULL;
	x->body = NULL;
	x->bodylen = x->batch = 0;
	x->attempt = 0;
}

static void post(relay_otlp *x)
{
	CURL *e = curl_easy_init();
	int running;

	if (!e)
		goto fail;
	x->curl_err[0] = '\0';
	curl_easy_setopt(e, CURLOPT_URL, x->endpoint);
	curl_easy_setopt(e, CURLOPT_POST, 1L);
	curl_easy_setopt(e, CURLOPT_POSTFIELDS, (char *)x->body);
	curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE,
			 (curl_off_t)x->bodylen);
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, x->headers);
	curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)x->timeout_ms);
	curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, (long)x->timeout_ms);
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, discard);
	curl_easy_setopt(e, CURLOPT_ERRORBUFFER, x->curl_err);
#if LIBCURL_VERSION_NUM >= 0x075500
	curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
#endif
	curl_easy_setopt(e, CURLOPT_USERAGENT, "relayd-otlp");
	curl_easy_setopt(e, CURLOPT_PRIVATE, x);
	if (curl_multi_add_handle(x->multi, e) != CURLM_OK) {
		curl_easy_cleanup(e);
		goto fail;
	}
	x->easy = e;
	x->attempt++;
	curl_multi_socket_action(x->multi, CURL_SOCKET_TIMEOUT, 0, &running);
	return;
fail:
	x->counts.exports_failed++;
	x->counts.spans_dropped += x->batch;
	finish_batch(x);
}

static void start_export(relay_otlp *x)
{
	batch *k;
	size_t at;

	if (x->easy || x->fly || x->qlen == 0)
		return;
	k = &x->batches[x->qhead];
	x->qhead = (x->qhead + 1) % x->nbatches;
	x->qlen--;
	x->count -= k->spans;
	at = relay_otlp_head_put(&x->parts, &k->b, x->gap);
	x->fly = k;
	x->body = k->b.p + at;
	x->bodylen = k->b.n - at;
	x->batch = k->spans;
	x->attempt = 0;
	post(x);
}

static void on_kick(struct ev_loop *loop, ev_timer *w, int revents)
{
	relay_otlp *x = w->data;

	(void)loop;
	(void)revents;
	start_export(x);
}

static void on_schedule(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop;
	(void)revents;
	start_export(w->data);
}

static void on_retry(struct ev_loop *loop, ev_timer *w, int revents)
{
	relay_otlp *x = w->data;

	(void)loop;
	(void)revents;
	post(x);
}

static double backoff_s(relay_otlp *x, curl_off_t retry_after)
{
	double d = 1.0;
	unsigned int i;

	if (retry_after > 0)
		return retry_after > 60 ? 60. : (double)retry_after;
	for (i = 1; i < x->attempt && d < 30.; i++)
		d *= 2;
	if (d > 30.)
		d = 30.;
	/* jitter: 50% to 100% */
	return d * (0.5 + 0.5 * ((double)(rand() % 1000) / 1000.));
}

static void done(relay_otlp *x, CURL *e, CURLcode res)
{
	long status = 0;
	curl_off_t retry_after = 0;
	bool ok, retryable;

	curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
#if LIBCURL_VERSION_NUM >= 0x074200
	curl_easy_getinfo(e, CURLINFO_RETRY_AFTER, &retry_after);
#endif
	curl_multi_remove_handle(x->multi, e);
	curl_easy_cleanup(e);
	x->easy = NULL;
	ok = res == CURLE_OK && status >= 200 && status < 300;
	if (ok) {
		x->counts.spans_exported += x->batch;
		if (x->failing)
			logf_(x, RELAY_LOG_INFO, "RELAYD-OTLP02", "trace export "
			      "to %s works again", x->endpoint_safe);
		x->failing = false;
		finish_batch(x);
		if (x->count >= x->max_batch)
			arm_kick(x);
		return;
	}
	x->counts.exports_failed++;
	retryable = res != CURLE_OK ? res != CURLE_UNSUPPORTED_PROTOCOL &&
		    res != CURLE_URL_MALFORMAT :
		    status == 429 || status == 502 || status == 503 ||
		    status == 504;
	if (!x->failing) {
		if (res != CURLE_OK)
			logf_(x, RELAY_LOG_WARN, "RELAYD-OTLP01", "trace export "
			      "to %s failed: %s%s", x->endpoint_safe,
			      curl_easy_strerror(res), retryable ?
			      " (retrying)" : "");
		else
			logf_(x, RELAY_LOG_WARN, "RELAYD-OTLP01", "trace export "
			      "to %s failed: HTTP %ld%s", x->endpoint_safe,
			      status, retryable ? " (retrying)" : "");
	}
	x->failing = true;
	if (retryable && x->attempt < RELAY_OTLP_MAX_ATTEMPTS) {
		ev_timer_set(&x->retry, backoff_s(x, retry_after), 0.);
		ev_timer_start(x->loop, &x->retry);
		return;
	}
	x->counts.spans_dropped += x->batch;
	finish_batch(x);
}

static void check_done(relay_otlp *x)
{
	CURLMsg *m;
	int left;

	while ((m = curl_multi_info_read(x->multi, &left)))
		if (m->msg == CURLMSG_DONE)
			done(x, m->easy_handle, m->data.result);
}

/* ---- life ------------------------------------------------------------- */

int relay_otlp_new(relay_otlp **out, struct ev_loop *loop,
		   const relay_otlp_config *c, relay_logger lg)
{
	relay_otlp *x;
	size_t i, r = 0;

	*out = NULL;
	if (!c->enabled || !c->endpoint)
		return RELAY_EINVAL;
	x = calloc(1, sizeof(*x));
	if (!x)
		return RELAY_ENOMEM;
	x->loop = loop;
	x->log = lg;
	x->endpoint = strdup(c->endpoint);
	x->endpoint_safe = relay_otlp_endpoint_redact(c->endpoint);
	x->service_name = strdup(c->service_name);
	x->max_queue = c->max_queue ? c->max_queue : 2048;
	x->max_batch = c->max_batch ? c->max_batch : 512;
	if (x->max_batch > x->max_queue)
		x->max_batch = x->max_queue;
	x->timeout_ms = c->timeout_ms < c->export_timeout_ms ?
			c->timeout_ms : c->export_timeout_ms;
	x->delay_s = (double)c->schedule_delay_ms / 1000.;
	if (x->delay_s <= 0.)
		x->delay_s = 0.001;
	/* every batch but the last full, one in flight, one spare */
	x->nbatches = (x->max_queue + x->max_batch - 1) / x->max_batch + 2;
	x->batches = calloc(x->nbatches, sizeof(*x->batches));
	x->resource = calloc(c->nresource + 1, sizeof(*x->resource));
	x->resource_kv = calloc(c->nresource + 1, sizeof(*x->resource_kv));
	if (!x->endpoint || !x->endpoint_safe || !x->service_name ||
	    !x->batches || !x->resource || !x->resource_kv)
		goto nomem;
	x->resource[r].key = "service.name";
	x->resource[r].type = RELAY_TRACE_ATTR_STRING;
	x->resource[r++].s = x->service_name;
	for (i = 0; i < c->nresource; i++) {
		relay_otlp_kv *kv = &x->resource_kv[x->nresource_kv];

		if (strcmp(c->resource[i].key, "service.name") == 0)
			continue;
		kv->key = strdup(c->resource[i].key);
		kv->value = strdup(c->resource[i].value);
		x->nresource_kv++;
		if (!kv->key || !kv->value)
			goto nomem;
		x->resource[r].key = kv->key;
		x->resource[r].type = RELAY_TRACE_ATTR_STRING;
		x->resource[r++].s = kv->value;
	}
	x->nresource = r;
	if (relay_otlp_parts_init(&x->parts, x->resource, x->nresource,
				  "relayd", relay_version()))
		goto nomem;
	x->gap = relay_otlp_head_max(&x->parts);
	x->headers = curl_slist_append(NULL,
				       "Content-Type: application/x-protobuf");
	if (!x->headers)
		goto nomem;
	x->headers = curl_slist_append(x->headers, "Expect:");
	for (i = 0; x->headers && i < c->nheaders; i++) {
		size_t n = strlen(c->headers[i].key) +
			   strlen(c->headers[i].value) + 3;
		char *h = malloc(n);
		struct curl_slist *nh;

		if (!h)
			goto nomem;
		snprintf(h, n, "%s: %s", c->headers[i].key,
			 c->headers[i].value);
		nh = curl_slist_append(x->headers, h);
		memset(h, 0, n);
		free(h);
		if (!nh)
			goto nomem;
		x->headers = nh;
	}
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
		goto nomem;
	x->multi = curl_multi_init();
	if (!x->multi)
		goto nomem;
	curl_multi_setopt(x->multi, CURLMOPT_SOCKETFUNCTION, on_socket);
	curl_multi_setopt(x->multi, CURLMOPT_SOCKETDATA, x);
	curl_multi_setopt(x->multi, CURLMOPT_TIMERFUNCTION, on_timer);
	curl_multi_setopt(x->multi, CURLMOPT_TIMERDATA, x);
	ev_timer_init(&x->curl_timer, on_curl_timer, 0., 0.);
	ev_timer_init(&x->kick, on_kick, 0., 0.);
	ev_timer_init(&x->retry, on_retry, 0., 0.);
	ev_timer_init(&x->schedule, on_schedule, x->delay_s, x->delay_s);
	x->curl_timer.data = x->kick.data = x->retry.data = x;
	x->schedule.data = x;
	ev_timer_start(loop, &x->schedule);
	*out = x;
	return 0;
nomem:
	relay_otlp_free(x);
	return RELAY_ENOMEM;
}

void relay_otlp_flush(relay_otlp *x)
{
	if (x->count && !x->easy && !x->fly)
		arm_kick(x);
}

void relay_otlp_counts_get(const relay_otlp *x, relay_otlp_counts *out)
{
	*out = x->counts;
	out->queued = x->count;
}

bool relay_otlp_idle(const relay_otlp *x)
{
	return x->count == 0 && !x->easy && !x->fly;
}

void relay_otlp_free(relay_otlp *x)
{
	size_t i;

	if (!x)
		return;
	if (x->loop) {
		ev_timer_stop(x->loop, &x->schedule);
		ev_timer_stop(x->loop, &x->retry);
		ev_timer_stop(x->loop, &x->kick);
		ev_timer_stop(x->loop, &x->curl_timer);
	}
	if (x->easy) {
		/* removing the handle calls on_socket(REMOVE): watchers go */
		curl_multi_remove_handle(x->multi, x->easy);
		curl_easy_cleanup(x->easy);
		x->counts.spans_dropped += x->batch;
	}
	if (x->multi) {
		curl_multi_cleanup(x->multi);
		curl_global_cleanup();
	}
	for (i = 0; x->batches && i < x->nbatches; i++)
		relay_otlp_buf_free(&x->batches[i].b);
	free(x->batches);
	relay_otlp_parts_clear(&x->parts);
	curl_slist_free_all(x->headers);
	free(x->resource);
	relay_otlp_kv_free(x->resource_kv, x->nresource_kv);
	free(x->service_name);
	free(x->endpoint);
	free(x->endpoint_safe);
	free(x);
}
