/*
 * warm_node_worker.h - V8's background tasks in a forked node invocation
 * (warm_node_worker.c says why and how).
 */
#ifndef RELAY_SANDBOX_WARM_NODE_WORKER_H
#define RELAY_SANDBOX_WARM_NODE_WORKER_H

#include <stddef.h>

/*
 * In an invocation process, before it runs the invocation's JavaScript:
 * node's platform (that of the node::Environment @node_env) queues V8's
 * worker tasks for a thread of this process, and waits for them where
 * node waits for its workers. Returns 0, or -1 with a reason in @why
 * (@why_len bytes) when this node's platform cannot be hooked (it is not
 * node's own NodePlatform, or does not export its methods). Call once,
 * on node's main thread.
 */
int relay__node_worker_install(void *node_env, char *why, size_t why_len);

#endif
