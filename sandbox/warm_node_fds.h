/*
 * warm_node_fds.h - the node fork server's own descriptors, held again
 * by /dev/null in each invocation process before libuv makes its loop
 * anew (warm_node_fds.c).
 *
 * Internal to relay-warm-slot.so. Thread-safety: none needed; called on
 * node's main thread of the server (save) and of a single-threaded
 * invocation process (restore).
 */
#ifndef RELAY_WARM_NODE_FDS_H
#define RELAY_WARM_NODE_FDS_H

/* In the server, when it begins to serve: note its descriptors above
 * @ctl (the control socket), and libuv's signal lock among them. */
void relay__node_save_fds(int ctl);

/* In an invocation process, before uv_loop_fork(): every noted number
 * held by /dev/null, the signal lock a new pipe with its byte. 0, or -1
 * (errno). */
int relay__node_restore_fds(void);

#endif
