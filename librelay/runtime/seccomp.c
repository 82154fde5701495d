/*
 * seccomp.c - the sandbox's seccomp filter, as bwrap loads it.
 *
 * The profile itself (what is refused, with which errno, and why) is
 * sandbox/seccomp_profile.h's one table, shared with the warm programs
 * that stack its second half on each warm invocation; doc/sandbox.md,
 * "System-call profile", lists it. Here it becomes a classic BPF program
 * in a memfd that bwrap reads (--seccomp FD) and loads after its own
 * set-up (namespaces, mounts), just before it executes the sandbox's
 * first process:
 *
 *   a cold sandbox (and a node pre-started process, which is one): both
 *     groups, base and handler, in one filter;
 *   a warm parent: the base group only, because it makes each
 *     invocation's namespaces and mounts itself; the invocation process
 *     adds the handler group before any handler code runs
 *     (sandbox/warm_seccomp.c).
 *
 * On an architecture the profile does not know there is no filter and
 * doc/sandbox.md says so.
 *
 * Thread-safety: no state; reentrant.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>

#include "runtime.h"
#include "seccomp_profile.h"

int relay__sandbox_seccomp_fd(int *out, bool warm_parent, relay_error *err)
{
	struct sock_filter f[RELAY_SECCOMP_MAX];
	size_t n;

	n = relay__seccomp_build(f, warm_parent ? RELAY_SECCOMP_BASE :
				 RELAY_SECCOMP_BASE | RELAY_SECCOMP_HANDLER);
	*out = -1;
	if (n == 0)
		return 0;
	*out = relay__spawn_memfd("relay-sandbox-seccomp", f, n * sizeof(f[0]));
	if (*out < 0)
		return relay__error_set(err, RELAY_EBACKEND, NULL, 0, 0,
					"sandbox seccomp filter: %s",
					strerror(errno ? errno : EIO));
	return 0;
}
