/*
 * warm_node_prefault.h - what a forked node invocation writes, learned
 * once and prefaulted in bulk by every invocation process before its
 * request (warm_node_prefault.c; doc/sandbox.md, "node: a fork server").
 *
 * Internal to relay-warm-slot.so. Thread-safety: none needed; every
 * function runs on node's main thread of a single-threaded process (the
 * learning fork, an invocation process H) or of the server.
 */
#ifndef RELAY_WARM_NODE_PREFAULT_H
#define RELAY_WARM_NODE_PREFAULT_H

#include <stddef.h>

/* Most pages a plan populates, and most runs it has: a bound on what a
 * fork can be made to copy, whatever the learning fork saw. */
#define RELAY__NODE_PREFAULT_MAX_PAGES 1024
#define RELAY__NODE_PREFAULT_MAX_RUNS 256

/*
 * In the learning fork, where an invocation process would prefault:
 * remember which pages of the private writable mappings are this
 * process's own (written since the fork). 0, or -1 (nothing is learned).
 */
int relay__node_prefault_mark(void);

/*
 * In the learning fork, once it ran its invocation: write to @fd the
 * page runs it wrote since relay__node_prefault_mark(), at most the
 * bounds above. 0, or -1.
 */
int relay__node_prefault_report(int fd);

/*
 * In the server: read a report from @fd (until EOF, waiting at most
 * @timeout_ms in all) and keep it as the plan every later fork inherits.
 * Returns the pages in the plan (>= 0), or -1 with no plan.
 */
long relay__node_prefault_take(int fd, int timeout_ms);

/*
 * In an invocation process, before its request: populate the plan's
 * pages for writing (madvise MADV_POPULATE_WRITE): each becomes this
 * process's own copy now rather than at its first write. A run that
 * fails (no longer mapped, or not writable) is skipped; a kernel without
 * MADV_POPULATE_WRITE ends it quietly. Returns the pages populated.
 */
long relay__node_prefault_run(void);

#endif
