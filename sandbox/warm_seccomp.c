/*
 * warm_seccomp.c - the second half of the seccomp profile for a warm
 * invocation (doc/sandbox.md, "System-call profile").
 *
 * A cold sandbox gets the whole profile from bwrap after bwrap's own
 * mounts. A warm parent cannot: it makes every invocation's namespaces
 * and mounts (and, python3 and node, each invocation process its own
 * user namespace), so bwrap gives it the base group only, and each
 * invocation stacks the handler group (seccomp_profile.h) once its set-up
 * is done, before any handler code: relay-warm-exec's N after its
 * mounts (it then starts H with clone(), clone3() being refused), the
 * slot loop's H after its user namespace and capability drop
 * (warm_slot.c, python3 and node). Filters only ever add up, so nothing
 * the handler runs can take it off; the kernel applies the stricter
 * answer of the two filters to every call.
 *
 * Thread-safety: see warm_seccomp.h.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "seccomp_profile.h"
#include "warm_seccomp.h"

int relay__warm_seccomp_handler(void)
{
	struct sock_filter f[RELAY_SECCOMP_MAX];
	struct sock_fprog prog;
	size_t n = relay__seccomp_build(f, RELAY_SECCOMP_HANDLER);

	if (n == 0)
		return 0;
	prog.len = (unsigned short)n;
	prog.filter = f;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
		return -1;
	return (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog);
}
