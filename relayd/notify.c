/*
 * notify.c - the service manager's notification protocol, spoken directly
 * (no libsystemd): when NOTIFY_SOCKET names an AF_UNIX datagram socket (a
 * path, or "@name" in the abstract namespace), each message is one
 * datagram of newline-separated VAR=value assignments: READY=1,
 * STATUS=..., STOPPING=1. Without NOTIFY_SOCKET every call is a no-op.
 *
 * The socket is connected to nothing: each send names the address, so a
 * manager that restarts its socket is still reached. A failed send is
 * logged once (at WARN) and otherwise ignored: notifications never stop
 * the daemon.
 */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "relayd.h"

static int notify_fd = -1;
static struct sockaddr_un notify_addr;
static socklen_t notify_len;
static bool send_failed_logged;

int relayd_notify_init(void)
{
	const char *name = getenv("NOTIFY_SOCKET");
	size_t n;

	if (!name || !*name)
		return 0;
	n = strlen(name);
	if ((name[0] != '/' && name[0] != '@') ||
	    n >= sizeof(notify_addr.sun_path)) {
		relayd_log(RELAY_LOG_WARN, "RELAYD-NOTIFY01", "NOTIFY_SOCKET "
			   "is neither an absolute path nor an @abstract name "
			   "that fits a unix socket address (%zu bytes): not "
			   "notifying the service manager", n);
		return -1;
	}
	memset(&notify_addr, 0, sizeof(notify_addr));
	notify_addr.sun_family = AF_UNIX;
	memcpy(notify_addr.sun_path, name, n);
	if (name[0] == '@')
		notify_addr.sun_path[0] = '\0';   /* abstract: no NUL at end */
	else
		n++;                               /* the path's NUL */
	notify_len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n);
	notify_fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK,
			   0);
	if (notify_fd < 0) {
		relayd_log(RELAY_LOG_WARN, "RELAYD-NOTIFY01", "NOTIFY_SOCKET: "
			   "cannot create a socket: %s", strerror(errno));
		return -1;
	}
	return 0;
}

bool relayd_notify_enabled(void)
{
	return notify_fd >= 0;
}

void relayd_notify(const char *msg)
{
	ssize_t w;

	if (notify_fd < 0)
		return;
	do
		w = sendto(notify_fd, msg, strlen(msg), MSG_NOSIGNAL,
			   (const struct sockaddr *)&notify_addr, notify_len);
	while (w < 0 && errno == EINTR);
	if (w < 0 && !send_failed_logged) {
		send_failed_logged = true;
		relayd_log(RELAY_LOG_WARN, "RELAYD-NOTIFY02", "cannot notify "
			   "the service manager (NOTIFY_SOCKET): %s",
			   strerror(errno));
	}
}

void relayd_notify_status(const char *prefix, const char *status)
{
	char buf[512];
	size_t i, n;

	if (notify_fd < 0)
		return;
	n = (size_t)snprintf(buf, sizeof(buf), "%sSTATUS=", prefix);
	if (n >= sizeof(buf))
		return;
	/* One line: a newline in a reason (a Redis error text, say) would
	 * start another assignment, such as READY=1 or MAINPID=. */
	for (i = 0; status[i] && n + 1 < sizeof(buf); i++)
		buf[n++] = (unsigned char)status[i] < 0x20 ||
			   status[i] == 0x7f ? '?' : status[i];
	buf[n] = '\0';
	relayd_notify(buf);
}

void relayd_notify_close(void)
{
	if (notify_fd >= 0)
		close(notify_fd);
	notify_fd = -1;
}
