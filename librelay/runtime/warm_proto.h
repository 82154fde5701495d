/*
 * warm_proto.h - what both ends of a warm parent's control socket share:
 * sending and receiving one message with descriptors, and the status an
 * invocation reports. Header-only (static inline): it is compiled into librelay
 * (warm_ctl.c) and into the two helpers that run inside the sandbox,
 * relay-warm-exec (warm_exec.c) and relay-warm-slot.so (warm_slot.c),
 * which link nothing of librelay. The protocol itself is described in
 * bootstrap/relay_warm_server.py.
 */
#ifndef RELAY_WARM_PROTO_H
#define RELAY_WARM_PROTO_H

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
