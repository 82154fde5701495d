/*
 * control.c - the control socket RELAY_RUN_DIR/relay.sock (doc/protocol.md).
 *
 * A unix stream socket, mode 0600 (created under umask 077, then chmod'ed
 * to be sure). Each request is one line holding a JSON object; each
 * response is one line holding a JSON object. A client's requests are
 * answered in order: while one is outstanding (app invoke waits for its
 * handlers) the following lines stay buffered. An optional "id" member of
 * a request is echoed in its response.
 *
 * Limits: a request line is at most 4 MiB; a longer one, or one that is
 * not a JSON object, gets an error response (the former also closes the
 * connection). At most 64 clients at once, plus one more connection that
 * is only served `health` (so a full table never locks out a liveness
 * probe). A connection with no request outstanding for the idle timeout
 * is closed. Input is consumed in linear time: lines are taken from an
 * offset into the buffer, which is compacted only when mostly consumed.
 * Reading pauses (the kernel then pushes back on the peer) while a
 * request is outstanding and MAX_QUEUED lines or MAX_QUEUED_BYTES are
 * buffered behind it, and while more than MAX_OUT bytes of answers wait
 * for the peer to read them: a connection holds a bounded amount of
 * memory whatever it sends.
 *
 * Thread-safety: everything runs on the loop thread.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <ev.h>
#include <jansson.h>

#include "relayd.h"

#define MAX_LINE (4u * 1024 * 1024)
#define MAX_CLIENTS 64
#define MAX_QUEUED 64                       /* lines behind a busy request */
#define MAX_QUEUED_BYTES (MAX_LINE + 65536) /* bytes behind a busy request */
#define MAX_OUT (1024u * 1024)              /* unread answers */

typedef struct client client;

struct relayd_request {
	client *cl;        /* NULL once the client went away */
	json_t *id;        /* the request's "id", or NULL */
};

struct client {
	relayd_control *ctl;
	int fd;
	ev_io rio, wio;
	ev_timer idle;     /* runs while no request is outstanding */
	char *in;          /* input; in[in_off..in_len) is unparsed */
	size_t in_off, in_len, in_cap;
	size_t scanned;    /* in[in_off..scanned) holds no newline */
	size_t nlines;     /* complete lines in the unparsed input */
	bool reading;      /* rio is started */
	bool health_only;  /* the spare slot: only `health` is served */
	char *out;         /* unsent output */
	size_t out_len, out_off;
	relayd_request *busy; /* the outstanding request, or NULL */
	bool closing;      /* close once the output is flushed */
	bool eof;          /* the peer shut down its side */
	bool processing;   /* inside client_process() */
	client *next;
};

struct relayd_control {
	struct ev_loop *loop;
	int fd;
	ev_io lio;
	char *path;
	relayd_control_fn fn;
	void *payload;
	client *clients;
	int nclients;
	double idle_s;     /* idle timeout */
};

static void client_free(client *cl)
{
	relayd_control *ctl = cl->ctl;
	client **pp;

	for (pp = &ctl->clients; *pp; pp = &(*pp)->next)
		if (*pp == cl) {
			*pp = cl->next;
			break;
		}
	ctl->nclients--;
	ev_io_stop(ctl->loop, &cl->rio);
	ev_io_stop(ctl->loop, &cl->wio);
	ev_timer_stop(ctl->loop, &cl->idle);
	close(cl->fd);
	if (cl->busy)
		cl->busy->cl = NULL;
	free(cl->in);
	free(cl->out);
	free(cl);
}

/* The next newline in the unparsed input, or NULL; each byte is scanned
 * once however often this is asked. */
static char *next_nl(client *cl)
{
	char *nl;

	if (cl->scanned < cl->in_off)
		cl->scanned = cl->in_off;
	nl = cl->scanned < cl->in_len ?
	     memchr(cl->in + cl->scanned, '\n', cl->in_len - cl->scanned) :
	     NULL;
	cl->scanned = nl ? (size_t)(nl - cl->in) : cl->in_len;
	return nl;
}

/* Start or pause reading per the limits above. */
static void client_update_read(client *cl)
{
	relayd_control *ctl = cl->ctl;
	bool want = !cl->eof && !cl->closing &&
		    cl->out_len - cl->out_off <= MAX_OUT;

	if (want && cl->busy)
		want = cl->nlines < MAX_QUEUED &&
		       cl->in_len - cl->in_off < MAX_QUEUED_BYTES;
	if (want && !cl->reading)
		ev_io_start(ctl->loop, &cl->rio);
	else if (!want && cl->reading)
		ev_io_stop(ctl->loop, &cl->rio);
	cl->reading = want;
}

static void client_process(client *cl);

static void client_flush(client *cl)
{
	relayd_control *ctl = cl->ctl;

	while (cl->out_off < cl->out_len) {
		ssize_t w = send(cl->fd, cl->out + cl->out_off,
				 cl->out_len - cl->out_off, MSG_NOSIGNAL);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK) {
				ev_io_start(ctl->loop, &cl->wio);
				return;
			}
			client_free(cl);
			return;
		}
		cl->out_off += (size_t)w;
	}
	cl->out_len = cl->out_off = 0;
	ev_io_stop(ctl->loop, &cl->wio);
	/* After EOF, close once nothing is left to answer. */
	if (cl->closing || (cl->eof && !cl->busy && !cl->processing &&
			    !cl->nlines)) {
		client_free(cl);
		return;
	}
	/* Answers were held back by unread output: go on. */
	if (!cl->processing && !cl->busy && cl->nlines)
		client_process(cl);
	else
		client_update_read(cl);
}

static void client_send(client *cl, json_t *resp)
{
	char *s = json_dumps(resp, JSON_COMPACT | JSON_PRESERVE_ORDER);
	size_t n;
	char *p;

	json_decref(resp);
	if (!s) {
		client_free(cl);
		return;
	}
	n = strlen(s);
	p = realloc(cl->out, cl->out_len + n + 1);
	if (!p) {
		free(s);
		client_free(cl);
		return;
	}
	cl->out = p;
	memcpy(cl->out + cl->out_len, s, n);
	cl->out[cl->out_len + n] = '\n';
	cl->out_len += n + 1;
	free(s);
	client_flush(cl);
}

static bool client_alive(relayd_control *ctl, client *cl)
{
	client *c;

	for (c = ctl->clients; c; c = c->next)
		if (c == cl)
			return true;
	return false;
}

void relayd_request_reply(relayd_request *req, void *resp_)
{
	json_t *resp = resp_;
	client *cl = req->cl;
	relayd_control *ctl;

	if (req->id && resp)
		json_object_set(resp, "id", req->id);
	json_decref(req->id);
	free(req);
	if (!cl) {
		json_decref(resp);
		return;
	}
	ctl = cl->ctl;
	cl->busy = NULL;
	ev_timer_again(ctl->loop, &cl->idle);
	client_send(cl, resp);
	/* An asynchronous answer: go on with the lines buffered meanwhile. */
	if (client_alive(ctl, cl) && !cl->processing)
		client_process(cl);
}

void relayd_request_fail(relayd_request *req, const char *code,
			 const char *msg)
{
	relayd_request_reply(req, json_pack("{s:b, s:s, s:s}", "ok", 0,
					    "error", code, "message", msg));
}

/* Handle one complete line; returns false if @cl was freed. */
static bool handle_line(client *cl, const char *line, size_t len)
{
	relayd_control *ctl = cl->ctl;
	relayd_request *req;
	json_error_t jerr;
	json_t *j;

	while (len && (line[len - 1] == '\r' || line[len - 1] == ' '))
		len--;
	if (len == 0)
		return true;
	req = calloc(1, sizeof(*req));
	if (!req) {
		client_free(cl);
		return false;
	}
	req->cl = cl;
	cl->busy = req;
	ev_timer_stop(ctl->loop, &cl->idle);
	j = json_loadb(line, len, 0, &jerr);
	if (!j || !json_is_object(j)) {
		char msg[256];

		snprintf(msg, sizeof(msg), "request is not a JSON object%s%s",
			 j ? "" : ": ", j ? "" : jerr.text);
		json_decref(j);
		relayd_request_fail(req, "bad_request", msg);
		return client_alive(ctl, cl);
	}
	if (json_object_get(j, "id"))
		req->id = json_incref(json_object_get(j, "id"));
	if (cl->health_only) {
		const char *cmd = json_string_value(json_object_get(j, "cmd"));

		if (!cmd || strcmp(cmd, "health") != 0) {
			json_decref(j);
			cl->closing = true;
			relayd_request_fail(req, "busy",
					    "every control connection is taken; "
					    "this spare one serves only health");
			return client_alive(ctl, cl);
		}
	}
	ctl->fn(req, j, ctl->payload);
	json_decref(j);
	return client_alive(ctl, cl);
}

/* Run buffered lines while no request is outstanding. */
static void client_process(client *cl)
{
	relayd_control *ctl = cl->ctl;

	cl->processing = true;
	while (!cl->busy && !cl->closing &&
	       cl->out_len - cl->out_off <= MAX_OUT) {
		char *nl = next_nl(cl);
		char *line;
		size_t n;

		if (!nl)
			break;
		n = (size_t)(nl - (cl->in + cl->in_off));
		cl->nlines--;
		if (n == 0 || (n == 1 && cl->in[cl->in_off] == '\r')) {
			cl->in_off += n + 1;   /* an empty line: no request */
			continue;
		}
		/* Copy the line out: the handler may re-enter. */
		line = malloc(n + 1);
		if (!line) {
			client_free(cl);
			return;
		}
		memcpy(line, cl->in + cl->in_off, n);
		line[n] = '\0';
		cl->in_off += n + 1;
		if (!handle_line(cl, line, n)) {
			free(line);
			return;
		}
		free(line);
	}
	/* Compact once most of the buffer is consumed (amortised linear). */
	if (cl->in_off && cl->in_off >= cl->in_len - cl->in_off) {
		memmove(cl->in, cl->in + cl->in_off, cl->in_len - cl->in_off);
		cl->in_len -= cl->in_off;
		cl->scanned = cl->scanned > cl->in_off ?
			      cl->scanned - cl->in_off : 0;
		cl->in_off = 0;
	}
	cl->processing = false;
	if (!client_alive(ctl, cl))
		return;
	if (cl->eof && !cl->busy && cl->out_len == 0) {
		client_free(cl);
		return;
	}
	client_update_read(cl);
}

static void on_read(struct ev_loop *loop, ev_io *w, int revents)
{
	client *cl = w->data;
	size_t room;
	ssize_t r;
	char *p;

	(void)loop;
	(void)revents;
	if (cl->in_cap - cl->in_len < 4096) {
		size_t cap = cl->in_cap ? cl->in_cap * 2 : 8192;

		p = realloc(cl->in, cap);
		if (!p) {
			client_free(cl);
			return;
		}
		cl->in = p;
		cl->in_cap = cap;
	}
	/* Never read past the limits: at most one line's worth more. */
	room = cl->in_cap - cl->in_len;
	if (room > MAX_QUEUED_BYTES)
		room = MAX_QUEUED_BYTES;
	r = recv(cl->fd, cl->in + cl->in_len, room, 0);
	if (r < 0 && (errno == EINTR || errno == EAGAIN))
		return;
	if (r <= 0) {
		/* EOF: answer what is complete, then close. */
		cl->eof = true;
		client_update_read(cl);
		client_process(cl);
		return;
	}
	for (p = cl->in + cl->in_len;
	     (p = memchr(p, '\n', (size_t)(cl->in + cl->in_len + r - p)));
	     p++)
		cl->nlines++;
	cl->in_len += (size_t)r;
	if (!cl->nlines && cl->in_len - cl->in_off > MAX_LINE) {
		cl->closing = true;
		client_update_read(cl);
		client_send(cl, json_pack("{s:b, s:s, s:s}", "ok", 0, "error",
					  "bad_request", "message",
					  "request line longer than 4 MiB"));
		return;
	}
	client_process(cl);
}

static void on_idle(struct ev_loop *loop, ev_timer *w, int revents)
{
	client *cl = w->data;

	(void)loop;
	(void)revents;
	if (!cl->busy)
		client_free(cl);
}

static void on_write(struct ev_loop *loop, ev_io *w, int revents)
{
	(void)loop;
	(void)revents;
	client_flush(w->data);
}

static void on_accept(struct ev_loop *loop, ev_io *w, int revents)
{
	relayd_control *ctl = w->data;
	client *cl;
	int fd;

	(void)revents;
	fd = accept(ctl->fd, NULL, NULL);
	if (fd < 0)
		return;
	if (fcntl(fd, F_SETFL, O_NONBLOCK) != 0 ||
	    fcntl(fd, F_SETFD, FD_CLOEXEC) != 0) {
		close(fd);
		return;
	}
	if (ctl->nclients > MAX_CLIENTS) {
		close(fd);
		return;
	}
	cl = calloc(1, sizeof(*cl));
	if (!cl) {
		close(fd);
		return;
	}
	cl->ctl = ctl;
	cl->fd = fd;
	/* The table is full: this is the spare slot, health only. */
	cl->health_only = ctl->nclients == MAX_CLIENTS;
	ev_io_init(&cl->rio, on_read, fd, EV_READ);
	ev_io_init(&cl->wio, on_write, fd, EV_WRITE);
	ev_init(&cl->idle, on_idle);
	cl->idle.repeat = ctl->idle_s;
	cl->rio.data = cl->wio.data = cl->idle.data = cl;
	cl->next = ctl->clients;
	ctl->clients = cl;
	ctl->nclients++;
	ev_timer_again(loop, &cl->idle);
	client_update_read(cl);
}

relayd_control *relayd_control_start(struct ev_loop *loop, const char *path,
				     double idle_s, relayd_control_fn fn,
				     void *payload, char *errbuf, size_t size)
{
	struct sockaddr_un sa;
	relayd_control *ctl;
	mode_t old;
	int fd;

	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(sa.sun_path)) {
		snprintf(errbuf, size, "control socket path too long: %s",
			 path);
		return NULL;
	}
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		goto fail;
	/* We hold relay.lock: a socket file left here is a dead daemon's. */
	unlink(path);
	old = umask(077);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		umask(old);
		goto fail;
	}
	umask(old);
	if (chmod(path, 0600) != 0 || listen(fd, 16) != 0)
		goto fail;
	ctl = calloc(1, sizeof(*ctl));
	if (!ctl || !(ctl->path = strdup(path))) {
		free(ctl);
		errno = ENOMEM;
		goto fail;
	}
	ctl->loop = loop;
	ctl->fd = fd;
	ctl->fn = fn;
	ctl->payload = payload;
	ctl->idle_s = idle_s;
	ev_io_init(&ctl->lio, on_accept, fd, EV_READ);
	ctl->lio.data = ctl;
	ev_io_start(loop, &ctl->lio);
	return ctl;
fail:
	snprintf(errbuf, size, "control socket %s: %s", path, strerror(errno));
	if (fd >= 0)
		close(fd);
	return NULL;
}

void relayd_control_stop(relayd_control *ctl)
{
	if (!ctl)
		return;
	ev_io_stop(ctl->loop, &ctl->lio);
	close(ctl->fd);
	while (ctl->clients)
		client_free(ctl->clients);
	unlink(ctl->path);
	free(ctl->path);
	free(ctl);
}
