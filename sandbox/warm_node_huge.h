/*
 * warm_node_huge.h - node's code and read-only data moved onto huge
 * pages in the node fork server, so that every invocation process it
 * forks reads them through a few 2 MiB entries instead of thousands of
 * 4 KiB ones (warm_node_huge.c; doc/sandbox.md, "node: a fork server").
 *
 * Internal to relay-warm-slot.so. Thread-safety: call on node's main
 * thread of the server, while node's other threads are parked (before
 * its first fork); nothing else in the process may map or unmap memory
 * meanwhile.
 */
#ifndef RELAY_WARM_NODE_HUGE_H
#define RELAY_WARM_NODE_HUGE_H

#include <stddef.h>

/*
 * In the server, before its first fork: replace each 2 MiB-aligned part
 * of the node executable's read-only mappings (its code, r-x, and its
 * read-only data, r--) by an anonymous copy on transparent huge pages,
 * with the same contents, addresses and protection, each in one
 * mremap(). A part whose copy the kernel did not put wholly on huge
 * pages (transparent huge pages off, or none free) is left as it was,
 * and so is every part after it. Returns the MiB moved (0: none), with
 * @why (of @n bytes) saying why not when 0. Exits 255 when a mapping
 * could be neither moved nor put back (the process could not go on).
 */
long relay__node_huge_text(char *why, size_t n);

#endif
