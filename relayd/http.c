/*
 * http.c - the /metrics endpoint (METRICS_ADDR), served by libmicrohttpd
 * from its own internal thread.
 *
 * The engine is single-threaded and confined to the loop thread, so the
 * HTTP thread never touches it: the loop renders the Prometheus text on a
 * timer and publishes it here; the HTTP thread copies the latest text
 * under a mutex. GET /metrics → 200 text/plain; version=0.0.4; GET
 * /healthz → 200 "ok" (live); GET /readyz → 200 "ready" or 503 "not
 * ready: REASON", as of the loop's last publication (each second); GET of
 * any other path → 404; other methods → 405. REASON is one of a few fixed
 * words (public_reason): never Redis's own error reply, a host name or a
 * stream; the detail behind it is logged (RELAYD-MET02) once each time
 * the answer changes, where the operator reads it.
 *
 * Any client of METRICS_ADDR can connect, so: libmicrohttpd's own
 * messages go through relayd's logger (one line, escaped, JSON in
 * LOG_FORMAT=json), never raw to stderr; connections are polled with
 * epoll/poll (no select() limit), up to HTTP_MAX_CONNS at once, and one
 * that has not completed its request within HTTP_TIMEOUT_S seconds is
 * closed, so half-sent requests cannot keep scrapes out for long.
 */
#define _GNU_SOURCE
#include <netdb.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "relayd.h"

#ifdef RELAYD_HAVE_MHD
#include <stdarg.h>

#include <microhttpd.h>

#define HTTP_MAX_CONNS 256u
#define HTTP_TIMEOUT_S 3u

struct relayd_http {
	struct MHD_Daemon *d;
	pthread_mutex_t lock;
	char *text;   /* latest exposition, malloc'd */
	size_t len;
	bool ready;   /* for /readyz */
	const char *reason;   /* a public_reason() word */
};

static enum MHD_Result respond(struct MHD_Connection *conn, unsigned code,
			       const char *type, char *body, size_t len)
{
	struct MHD_Response *r;
	enum MHD_Result ret;

	r = MHD_create_response_from_buffer(len, body,
					    MHD_RESPMEM_MUST_FREE);
	if (!r) {
		free(body);
		return MHD_NO;
	}
	MHD_add_response_header(r, "Content-Type", type);
	ret = MHD_queue_response(conn, code, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn,
				  const char *url, const char *method,
				  const char *version, const char *upload,
				  size_t *upload_size, void **ctx)
{
	relayd_http *h = cls;
	char *body;
	size_t len;

	(void)version;
	(void)upload;
	(void)ctx;
	if (*upload_size)
		*upload_size = 0;
	if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0) {
		body = strdup("method not allowed\n");
		return body ? respond(conn, 405, "text/plain", body,
				      strlen(body)) : MHD_NO;
	}
	if (strcmp(url, "/healthz") == 0) {
		/* Live: this thread answers while relayd runs. */
		body = strdup("ok\n");
		return body ? respond(conn, 200, "text/plain", body,
				      strlen(body)) : MHD_NO;
	}
	if (strcmp(url, "/readyz") == 0) {
		unsigned code;

		pthread_mutex_lock(&h->lock);
		code = h->ready ? 200 : 503;
		if (asprintf(&body, h->ready ? "ready\n" : "not ready: %s\n",
			     h->reason) < 0)
			body = NULL;
		pthread_mutex_unlock(&h->lock);
		return body ? respond(conn, code, "text/plain", body,
				      strlen(body)) : MHD_NO;
	}
	if (strcmp(url, "/metrics") != 0) {
		body = strdup("not found; try /metrics, /healthz or /readyz\n");
		return body ? respond(conn, 404, "text/plain", body,
				      strlen(body)) : MHD_NO;
	}
	pthread_mutex_lock(&h->lock);
	len = h->len;
	body = malloc(len + 1);
	if (body) {
		if (len)
			memcpy(body, h->text, len);
		body[len] = '\0';
	}
	pthread_mutex_unlock(&h->lock);
	if (!body)
		return MHD_NO;
	return respond(conn, 200, "text/plain; version=0.0.4; charset=utf-8",
		       body, len);
}

/* libmicrohttpd's error log (its own thread): one relayd log line. */
static void __attribute__((format(printf, 2, 0)))
mhd_log(void *cls, const char *fmt, va_list ap)
{
	char buf[512];
	size_t n;

	(void)cls;
	vsnprintf(buf, sizeof(buf), fmt, ap);
	n = strlen(buf);
	while (n && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
		buf[--n] = '\0';
	relayd_log(RELAY_LOG_WARN, "RELAYD-HTTP01", "metrics server: %s", buf);
}

relayd_http *relayd_http_start(const char *host, int port, char *errbuf,
			       size_t size)
{
	struct addrinfo hints, *ai = NULL;
	char portstr[16];
	relayd_http *h;
	int rc;

	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
	snprintf(portstr, sizeof(portstr), "%d", port);
	rc = getaddrinfo(*host ? host : NULL, portstr, &hints, &ai);
	if (rc != 0) {
		snprintf(errbuf, size, "METRICS_ADDR: cannot resolve \"%s\": "
			 "%s", host, gai_strerror(rc));
		return NULL;
	}
	h = calloc(1, sizeof(*h));
	if (!h) {
		freeaddrinfo(ai);
		snprintf(errbuf, size, "out of memory");
		return NULL;
	}
	pthread_mutex_init(&h->lock, NULL);
	/* Until the loop's first publication (a metrics interval away). */
	h->reason = "starting";
	h->d = MHD_start_daemon(MHD_USE_AUTO_INTERNAL_THREAD |
				MHD_USE_ERROR_LOG |
				(ai->ai_family == AF_INET6 ? MHD_USE_IPv6 : 0),
				(uint16_t)port, NULL, NULL, on_request, h,
				MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL,
				MHD_OPTION_SOCK_ADDR, ai->ai_addr,
				MHD_OPTION_CONNECTION_LIMIT, HTTP_MAX_CONNS,
				MHD_OPTION_CONNECTION_TIMEOUT, HTTP_TIMEOUT_S,
				MHD_OPTION_CONNECTION_MEMORY_LIMIT,
				(size_t)16384,
				MHD_OPTION_END);
	freeaddrinfo(ai);
	if (!h->d) {
		snprintf(errbuf, size, "METRICS_ADDR: cannot listen on %s:%d "
			 "(address in use or not local?)", host, port);
		pthread_mutex_destroy(&h->lock);
		free(h);
		return NULL;
	}
	return h;
}

void relayd_http_publish(relayd_http *h, char *text, size_t len)
{
	char *old;

	pthread_mutex_lock(&h->lock);
	old = h->text;
	h->text = text;
	h->len = len;
	pthread_mutex_unlock(&h->lock);
	free(old);
}

/*
 * What /readyz tells any client of METRICS_ADDR about @reason (a
 * relayd_health() reason: "starting", "stopping", "redis unavailable:
 * <what>: <Redis's or the OS's error>", each perhaps behind "stream
 * <name>: "): a fixed word. Redis's error replies to a refused AUTH or
 * to a command sent without it (NOAUTH, WRONGPASS, ERR invalid
 * password, ERR AUTH ... without any password configured, NOPERM) read
 * as "redis: auth failed", any other unavailability as "redis:
 * unreachable".
 */
static const char *public_reason(const char *reason)
{
	static const char *const auth[] = {
		"NOAUTH", "WRONGPASS", "NOPERM", "invalid password",
		"without any password configured", "no password is set",
	};
	const char *r = strstr(reason, "redis unavailable: ");
	size_t i, n;

	if (r) {
		for (i = 0; i < sizeof(auth) / sizeof(auth[0]); i++)
			if (strstr(r, auth[i]))
				return "redis: auth failed";
		return "redis: unreachable";
	}
	n = strlen(reason);
	if (n >= 8 && strcmp(reason + n - 8, "stopping") == 0)
		return "stopping";
	return "starting";
}

void relayd_http_set_ready(relayd_http *h, bool ready, const char *reason)
{
	const char *word = ready ? "" : public_reason(reason);
	bool changed;

	if (!h)
		return;
	pthread_mutex_lock(&h->lock);
	changed = h->ready != ready || strcmp(h->reason, word) != 0;
	h->ready = ready;
	h->reason = word;
	pthread_mutex_unlock(&h->lock);
	/* The loop's thread: the detail once per change of the answer,
	 * when there is more to it than the word. */
	if (changed && !ready && strcmp(word, reason) != 0)
		relayd_log(RELAY_LOG_INFO, "RELAYD-MET02", "/readyz: \"not "
			   "ready: %s\": %.600s", word, reason);
}

void relayd_http_stop(relayd_http *h)
{
	if (!h)
		return;
	MHD_stop_daemon(h->d);
	pthread_mutex_destroy(&h->lock);
	free(h->text);
	free(h);
}

bool relayd_http_available(void)
{
	return true;
}

#else /* !RELAYD_HAVE_MHD */

struct relayd_http {
	int unused;
};

relayd_http *relayd_http_start(const char *host, int port, char *errbuf,
			       size_t size)
{
	(void)host;
	(void)port;
	snprintf(errbuf, size, "METRICS_ADDR: set, but this relayd was built "
		 "without libmicrohttpd (no metrics support)");
	return NULL;
}

void relayd_http_publish(relayd_http *h, char *text, size_t len)
{
	(void)h;
	(void)len;
	free(text);
}

void relayd_http_set_ready(relayd_http *h, bool ready, const char *reason)
{
	(void)h;
	(void)ready;
	(void)reason;
}

void relayd_http_stop(relayd_http *h)
{
	(void)h;
}

bool relayd_http_available(void)
{
	return false;
}
#endif
