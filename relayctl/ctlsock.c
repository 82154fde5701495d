/*
 * ctlsock.c - the relayd control socket client: line-framed JSON over a
 * unix stream socket. Responses are at most a few MiB (app listings);
 * larger ones are refused.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "ctlsock.h"
#include "fmt.h"

#define MAX_RESPONSE (16u * 1024 * 1024)

int relayctl_ctl_connect(const char *path, char *why, size_t size)
{
	struct sockaddr_un sa;
	int fd, e;

	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(sa.sun_path)) {
		snprintf(why, size, "cannot reach relayd control socket %s: "
			 "path too long", path);
		errno = ENAMETOOLONG;
		return -1;
	}
	memcpy(sa.sun_path, path, strlen(path) + 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0)
		return fd;
	e = errno;
	if (fd >= 0)
		close(fd);
	snprintf(why, size, "cannot reach relayd control socket %s: %s%s",
		 path, strerror(e),
		 e == ENOENT || e == ECONNREFUSED ? " (is relayd running?)"
						  : "");
	errno = e;
	return -1;
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int send_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = send(fd, p, n, MSG_NOSIGNAL);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/*
 * After poll() or recv() returned @r: 1 to call again (EINTR), -1 after
 * writing the failure to @why, 0 when @r is a result.
 */
static int io_status(ssize_t r, char *why, size_t size)
{
	if (r >= 0)
		return 0;
	if (errno == EINTR)
		return 1;
	snprintf(why, size, "control socket: %s", strerror(errno));
	return -1;
}

/* Read up to the first '\n'; returns a new NUL-terminated line or NULL. */
static char *read_line(int fd, int timeout_ms, char *why, size_t size)
{
	int64_t end = now_ms() + timeout_ms;
	size_t len = 0, cap = 0;
	char *buf = NULL;

	for (;;) {
		struct pollfd p = { fd, POLLIN, 0 };
		int wait = -1;
		ssize_t r;
		char *nb;
		int st;

		if (timeout_ms > 0) {
			int64_t left = end - now_ms();

			if (left <= 0) {
				snprintf(why, size, "relayd did not answer "
					 "within %d ms", timeout_ms);
				break;
			}
			wait = (int)left;
		}
		r = poll(&p, 1, wait);
		st = io_status(r, why, size);
		if (st < 0)
			break;
		if (st > 0 || r == 0)
			continue;
		if (cap - len < 4096) {
			if (cap >= MAX_RESPONSE) {
				snprintf(why, size, "relayd's answer is "
					 "larger than 16 MiB");
				break;
			}
			cap = cap ? cap * 2 : 16384;
			nb = realloc(buf, cap);
			if (!nb) {
				snprintf(why, size, "out of memory");
				break;
			}
			buf = nb;
		}
		r = recv(fd, buf + len, cap - len - 1, 0);
		st = io_status(r, why, size);
		if (st < 0)
			break;
		if (st > 0)
			continue;
		if (r == 0) {
			snprintf(why, size, "relayd closed the control "
				 "connection without answering");
			break;
		}
		nb = memchr(buf + len, '\n', (size_t)r);
		len += (size_t)r;
		if (nb) {
			*nb = '\0';
			return buf;
		}
	}
	free(buf);
	return NULL;
}

json_t *relayctl_ctl_request(int fd, json_t *req, int timeout_ms, char *why,
			     size_t size)
{
	char *s = json_dumps(req, JSON_COMPACT);
	json_error_t jerr;
	json_t *resp;
	char *line;
	int rc;

	if (!s) {
		snprintf(why, size, "out of memory");
		return NULL;
	}
	rc = send_all(fd, s, strlen(s));
	if (rc == 0)
		rc = send_all(fd, "\n", 1);
	free(s);
	if (rc) {
		snprintf(why, size, "control socket: %s", strerror(errno));
		return NULL;
	}
	line = read_line(fd, timeout_ms, why, size);
	if (!line)
		return NULL;
	resp = json_loads(line, 0, &jerr);
	free(line);
	if (!resp || !json_is_object(resp)) {
		json_decref(resp);
		snprintf(why, size, "relayd's answer is not a JSON object");
		return NULL;
	}
	return resp;
}

json_t *relayctl_ctl_call(const char *path, json_t *req, int timeout_ms,
			  char *why, size_t size)
{
	json_t *resp = NULL;
	int fd;

	fd = relayctl_ctl_connect(path, why, size);
	if (fd >= 0) {
		resp = relayctl_ctl_request(fd, req, timeout_ms, why, size);
		close(fd);
	}
	json_decref(req);
	return resp;
}

const char *relayctl_ctl_failed(json_t *resp, char *why, size_t size)
{
	const char *code, *msg;

	if (json_is_true(json_object_get(resp, "ok")))
		return NULL;
	code = json_string_value(json_object_get(resp, "error"));
	msg = json_string_value(json_object_get(resp, "message"));
	if (!code)
		code = "failed";
	snprintf(why, size, "%s (%s)", msg ? msg : "relayd refused", code);
	return code;
}

const char *relayctl_jstr(json_t *o, const char *key, const char *dflt)
{
	const char *s = json_string_value(json_object_get(o, key));

	return s ? s : dflt;
}

void relayctl_put_run_output(json_t *resp, const char *cmd)
{
	json_t *list = json_object_get(resp, "output"), *l;
	json_int_t dropped = json_integer_value(json_object_get(
		resp, "output_dropped"));
	size_t i;

	json_array_foreach(list, i, l) {
		json_t *t = json_object_get(l, "text");
		const char *st = relayctl_jstr(l, "stream", "stdout");
		FILE *f = strcmp(st, "stderr") == 0 ? stderr : stdout;

		if (!json_is_string(t))
			continue;
		relayctl_put_output(f, json_string_value(t),
				    json_string_length(t));
	}
	if (dropped > 0)
		fprintf(stderr, "relayctl: %s: %lld more output line%s not "
			"shown (relayd's log has them)\n", cmd,
			(long long)dropped, dropped == 1 ? "" : "s");
}
