/*
 * warm_node_worker.h - V8's background tasks in a forked node invocation
 * (warm_node_worker.c says why and how).
 */
#ifndef RELAY_SANDBOX_WARM_NODE_WORKER_H
#define RELAY_SANDBOX_WARM_NODE_WORKER_H

#include <stddef.h>

/*
 * In the fork server, before it forks: everything
 * relay__node_worker_install() does but the switch of node's platform
 * to the hooked table (the lookups, the table, the condition
 * variables), so that each fork does not redo it (and copy the pages it
 * writes). Nothing runs differently in the caller. Returns 0, or -1 as
 * relay__node_worker_install(); idempotent. On node's main thread.
 */
int relay__node_worker_prepare(void *node_env, char *why, size_t why_len);

/*
 * In an invocation process, before it runs the invocation's JavaScript:
 * node's platform (that of the node::Environment @node_env) queues V8's
 * worker tasks for a thread of this process, and waits for them where
 * node waits for its workers. Returns 0, or -1 with a reason in @why
 * (@why_len bytes) when this node's platform cannot be hooked (it is not
 * node's own NodePlatform, or does not export its methods). Call once,
 * on node's main thread; after relay__node_worker_prepare() (in the
 * process it was forked from) it only switches the table.
 */
int relay__node_worker_install(void *node_env, char *why, size_t why_len);

#endif
