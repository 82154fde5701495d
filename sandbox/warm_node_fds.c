/*
 * warm_node_fds.c - the node fork server's descriptors, held again in
 * each invocation process (warm_node_fds.h; doc/sandbox.md, "node: a
 * fork server", "After the fork"). Moved out of warm_node.c unchanged.
 *
 * The server's own descriptors (past the control socket) when it began
 * to serve: node's event loops' epoll instances, eventfds and signal
 * pipes, and libuv's process-wide signal lock (a pipe holding one byte
 * when free). H starts without them (the slot loop closes every
 * descriptor of N's), but node still holds their numbers, and libuv
 * closes the old ones as it makes its loop anew (uv_loop_fork()): each
 * number is held again by /dev/null first, so that no close of libuv's
 * hits a descriptor of H's, and the lock gets a new pipe with its byte
 * (what libuv's own after-fork hook, which a raw clone3() never runs,
 * would make).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "warm_node_fds.h"

#define NODE_MAX_SAVED_FDS 64
static int saved_fd[NODE_MAX_SAVED_FDS], nsaved;
static int lock_r = -1, lock_w = -1;

void relay__node_save_fds(int ctl)
{
	struct stat st[NODE_MAX_SAVED_FDS];
	int dfd, i, k;
	DIR *d;
	struct dirent *e;

	d = opendir("/proc/self/fd");
	if (!d)
		return;
	dfd = dirfd(d);
	while ((e = readdir(d)) && nsaved < NODE_MAX_SAVED_FDS) {
		int fd = atoi(e->d_name);

		if (fd <= ctl || fd == dfd || fstat(fd, &st[nsaved]) != 0)
			continue;
		saved_fd[nsaved++] = fd;
	}
	closedir(d);
	for (i = 0; i < nsaved; i++) {
		int avail = 0;

		if (!S_ISFIFO(st[i].st_mode) ||
		    (fcntl(saved_fd[i], F_GETFL) & O_ACCMODE) != O_RDONLY ||
		    ioctl(saved_fd[i], FIONREAD, &avail) != 0 || avail != 1)
			continue;
		for (k = 0; k < nsaved; k++)
			if (k != i && S_ISFIFO(st[k].st_mode) &&
			    st[k].st_ino == st[i].st_ino &&
			    (fcntl(saved_fd[k], F_GETFL) & O_ACCMODE) ==
				    O_WRONLY)
				break;
		if (k < nsaved && lock_r < 0) {
			lock_r = saved_fd[i];
			lock_w = saved_fd[k];
		}
	}
}

int relay__node_restore_fds(void)
{
	int nul = open("/dev/null", O_RDWR | O_CLOEXEC), p[2], i, keep = 0;

	if (nul < 0)
		return -1;
	for (i = 0; i < nsaved; i++) {
		if (saved_fd[i] == nul)
			keep = 1;
		else if (dup3(nul, saved_fd[i], O_CLOEXEC) < 0)
			return -1;
	}
	if (lock_r >= 0) {
		if (pipe2(p, O_CLOEXEC) != 0)
			return -1;
		if (dup3(p[0], lock_r, O_CLOEXEC) < 0 ||
		    dup3(p[1], lock_w, O_CLOEXEC) < 0)
			return -1;
		close(p[0]);
		close(p[1]);
		if (write(lock_w, "*", 1) != 1)
			return -1;
	}
	if (!keep)
		close(nul);
	return 0;
}
