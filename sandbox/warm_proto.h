/*
 * warm_proto.h - the warm protocol, written down once: what relayd (the
 * warm layer of librelay, librelay/runtime/warm/warm_ctl.c) and a warm
 * parent inside the sandbox (the python3 server, relay_warm_server.py
 * with its slot loop relay-warm-slot.so, warm_slot.c; or relay-warm-exec,
 * warm_exec.c) say on the parent's control socket, and the argument block
 * the python3 server hands its slot loop. Header-only (static inline):
 * it is compiled into librelay and into the two helpers, which link
 * nothing of librelay. doc/sandbox.md, "Warm sandboxes", says what the
 * parents do with it.
 *
 * Version: RELAY_WARM_PROTO_VERSION. Any change of a message, a field,
 * the descriptors a message carries or struct relay_warm_slot bumps it,
 * here, in relay_warm_server.py and in relay-bootstrap.js (each its
 * WARM_PROTO_VERSION; meson test warm-proto checks they agree), which
 * refuse a slot loop (or node fork server, warm_node.c) of another
 * version (they say N, so the app's invocations run cold) instead of
 * misreading it. The C helpers are built from this
 * header with librelay, so they cannot differ from it.
 *
 * The control socket is the warm parent's fd 3, SOCK_SEQPACKET; one
 * message per packet, fields NUL-separated (each NUL-terminated), with
 * descriptors as SCM_RIGHTS:
 *
 *   relayd -> slots   R id wait_go as_limit nproc_limit handler env...
 *                       + 3 fds (stdin, stdout, stderr of the
 *                       invocation), + the read end of a go pipe when
 *                       wait_go: relayd writes "g" once H joined the
 *                       invocation's cgroups
 *   server -> relayd  Y + pidfd      ready (the first slot's probe
 *                                    invocation worked; the server's
 *                                    own pidfd, for its RSS)
 *                     N reason       this sandbox cannot run invocations
 *                     E id reason    the slot running it died
 *   slot -> relayd    S id + pidfd   invocation process H forked
 *                     X id status    H exited and nothing of it is left
 *                                    (a wait status: exit code << 8,
 *                                    128 + signal when killed)
 *                     E id reason    could not fork
 *
 * A request's env... is the invocation's whole environment, its
 * per-invocation variables included: RELAY_HANDLER, RELAY_MESSAGE_ID and
 * (version 2) the attempt's trace context TRACEPARENT, TRACESTATE,
 * BAGGAGE when it has one. A parent's own environment, and its key, never
 * hold any of these; H's environment is exactly the request's.
 *
 * A node pre-started process (no control socket; relay-bootstrap.js
 * --pool) reads its invocation from the start of its stdin: five lines,
 * handler, message id, TRACEPARENT, TRACESTATE, BAGGAGE (each but the
 * first possibly empty; version 1 had the first two only), then the
 * event.
 *
 * Every idle slot reads the control socket itself (the kernel hands each
 * request to one), so the server is not on an invocation's path. Between
 * a python3 slot and its server (a socket pair): B id (took a request),
 * I id (free again; the first, with no id, once set up), F reason
 * (cannot set up). relay-warm-exec is its own server and slot: it says
 * Y, S, X and E as above.
 */
#ifndef RELAY_WARM_PROTO_H
#define RELAY_WARM_PROTO_H

/* The version of everything this header specifies. */
#define RELAY_WARM_PROTO_VERSION 2

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

/* The most descriptors a message carries: a request's stdin, stdout,
 * stderr and go pipe. */
#define RELAY__WARM_MAX_FDS 4

/*
 * Send @len bytes of @msg as one SOCK_SEQPACKET message on @sock, with
 * @nfds descriptors @fds (0..RELAY__WARM_MAX_FDS) as SCM_RIGHTS. Retries
 * EINTR; never raises SIGPIPE. Returns 0 when all of it went, -1 (errno)
 * otherwise. The descriptors stay the caller's.
 */
static inline int relay__warm_send(int sock, const void *msg, size_t len,
				   const int *fds, int nfds)
{
	union {
		char buf[CMSG_SPACE(RELAY__WARM_MAX_FDS * sizeof(int))];
		struct cmsghdr align;
	} u;
	struct iovec iov = { (void *)msg, len };
	struct msghdr mh;
	ssize_t n;

	if (nfds < 0 || nfds > RELAY__WARM_MAX_FDS) {
		errno = EINVAL;
		return -1;
	}
	memset(&mh, 0, sizeof(mh));
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	if (nfds) {
		struct cmsghdr *c;

		memset(&u, 0, sizeof(u));
		mh.msg_control = u.buf;
		mh.msg_controllen = CMSG_SPACE((size_t)nfds * sizeof(int));
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN((size_t)nfds * sizeof(int));
		memcpy(CMSG_DATA(c), fds, (size_t)nfds * sizeof(int));
	}
	do
		n = sendmsg(sock, &mh, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	return n == (ssize_t)len ? 0 : -1;
}

/*
 * Receive one message of at most @cap bytes from @sock into @buf, its
 * descriptors (close-on-exec; past RELAY__WARM_MAX_FDS closed) into @fds
 * and their number into *nfds. Retries EINTR. *whole says it came whole:
 * neither it nor its descriptors cut, its last byte a NUL (every field
 * terminated). Returns its length, 0 at EOF, -1 (errno).
 */
static inline ssize_t relay__warm_recv(int sock, char *buf, size_t cap,
				       int *fds, int *nfds, int *whole)
{
	union {
		char b[CMSG_SPACE(RELAY__WARM_MAX_FDS * sizeof(int))];
		struct cmsghdr align;
	} u;
	struct iovec iov = { buf, cap };
	struct msghdr mh;
	struct cmsghdr *c;
	ssize_t n;

	*nfds = 0;
	*whole = 0;
	do {
		memset(&mh, 0, sizeof(mh));
		mh.msg_iov = &iov;
		mh.msg_iovlen = 1;
		mh.msg_control = u.b;
		mh.msg_controllen = sizeof(u.b);
		n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
	} while (n < 0 && errno == EINTR);
	if (n < 0)
		return -1;
	*whole = !(mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) && n > 0 &&
		 buf[n - 1] == '\0';
	for (c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
		size_t k, m;

		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		m = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (k = 0; k < m; k++) {
			int fd;

			memcpy(&fd, CMSG_DATA(c) + k * sizeof(int), sizeof(fd));
			if (*nfds < RELAY__WARM_MAX_FDS)
				fds[(*nfds)++] = fd;
			else
				(void)close(fd);
		}
	}
	return n;
}

/* Scratch directories a slot keeps fresh at most (/tmp, and one more). */
#define RELAY_WARM_SLOT_SCRATCH_MAX 2

/*
 * What the python3 server hands its slot loop (relay_warm_slot_run() of
 * relay-warm-slot.so; relay_warm_server.py's _SlotArgs mirrors it field
 * for field): the control socket to relayd, the socket pair to the
 * server, and the scratch directories with the mode each was mounted
 * with (-1: not mounted, so neither checked nor mounted again).
 * relay-warm-slot.so exports relay_warm_slot_proto_version() (this
 * RELAY_WARM_PROTO_VERSION) and relay_warm_slot_args_size() (the size
 * of this struct), which the server checks before using it.
 */
struct relay_warm_slot {
	int ctl_fd;
	int srv_fd;
	int nscratch;
	const char *scratch[RELAY_WARM_SLOT_SCRATCH_MAX];
	int scratch_mode[RELAY_WARM_SLOT_SCRATCH_MAX];
};

/* The exit code an invocation reports for wait status @st: its own, or
 * 128 + the signal that killed it; 255 for anything else. */
static inline int relay__warm_exit_code(int st)
{
	if (WIFEXITED(st))
		return WEXITSTATUS(st);
	if (WIFSIGNALED(st))
		return 128 + WTERMSIG(st);
	return 255;
}

#endif
