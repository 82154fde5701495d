/*
 * seccomp.c - the sandbox's seccomp filter: no kernel keyring.
 *
 * The kernel's key management (add_key, request_key, keyctl) is not
 * namespaced by user namespaces: keys belong to the host uid, every
 * sandbox of one host user (all apps, under a root relayd's "nobody")
 * sees them in /proc/keys, can read a key whose owner opened it to its
 * user, and shares one key quota. A handler could leave data for another
 * app's handler, or use up the quota for all of them. So no sandbox gets
 * these three system calls: they fail with ENOSYS, as on a kernel built
 * without keys, which programs already handle. Everything else is
 * allowed; this is a narrow filter, not a system-call policy.
 *
 * The filter is classic BPF, handed to bwrap (--seccomp FD), which loads
 * it just before it executes the sandbox's first process, so the handler
 * and everything it starts (warm parents and their slots included) run
 * under it. On x86_64 the i386 and x32 entry points are covered too, on
 * aarch64 the AArch32 one (a
 * 32-bit binary could otherwise reach the same calls by other numbers).
 * On an architecture this file does not know, there is no filter and
 * doc/sandbox.md says so.
 *
 * Thread-safety: no state; reentrant.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <string.h>
#include <sys/syscall.h>

#include "runtime.h"

#if defined(__x86_64__)
#define NATIVE_ARCH AUDIT_ARCH_X86_64
#define X32_BIT 0x40000000u
/* The 32-bit entry (i386): its numbers for add_key, request_key,
 * keyctl. A static 32-bit binary needs no loader, so it must be covered. */
#define COMPAT_ARCH AUDIT_ARCH_I386
#define COMPAT_ADD_KEY 286u
#define COMPAT_REQUEST_KEY 287u
#define COMPAT_KEYCTL 288u
#elif defined(__aarch64__)
#define NATIVE_ARCH AUDIT_ARCH_AARCH64
/* AArch32 (EABI) numbers. */
#define COMPAT_ARCH AUDIT_ARCH_ARM
#define COMPAT_ADD_KEY 309u
#define COMPAT_REQUEST_KEY 310u
#define COMPAT_KEYCTL 311u
#elif defined(__riscv) && __riscv_xlen == 64
#define NATIVE_ARCH AUDIT_ARCH_RISCV64
#elif defined(__powerpc64__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define NATIVE_ARCH AUDIT_ARCH_PPC64LE
#elif defined(__s390x__)
#define NATIVE_ARCH AUDIT_ARCH_S390X
#endif

#define DENY (SECCOMP_RET_ERRNO | (ENOSYS & SECCOMP_RET_DATA))

/* Fill @f; the number of instructions, or 0 without a filter here. */
static size_t build(struct sock_filter *f)
{
	size_t n = 0;

#ifdef NATIVE_ARCH
	const unsigned int arch = offsetof(struct seccomp_data, arch);
	const unsigned int nr = offsetof(struct seccomp_data, nr);

	f[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, arch);
#ifdef COMPAT_KEYCTL
	/* The 32-bit entry of a 64-bit kernel: its own numbers. */
	f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
					      COMPAT_ARCH, 0, 6);
	f[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, nr);
	f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
					      COMPAT_ADD_KEY, 3, 0);
	f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
					      COMPAT_REQUEST_KEY, 2, 0);
	f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
					      COMPAT_KEYCTL, 1, 0);
	f[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K,
					      SECCOMP_RET_ALLOW);
	f[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, DENY);
#endif
	/* Any other entry point (none on x86_64 and aarch64 besides the
	 * two handled; the 31/32-bit ones of s390x, ppc64le or riscv64
	 * are not covered, which doc/sandbox.md says): allowed. */
	f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
					      NATIVE_ARCH, 1, 0);
	f[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K,
					      SECCOMP_RET_ALLOW);
	f[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, nr);
#ifdef X32_BIT
	/* x32 calls are the native numbers with this bit set. */
	f[n++] = (struct sock_filter)BPF_STMT(BPF_ALU | BPF_AND | BPF_K,
					      ~X32_BIT);
#endif
	f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
					      __NR_add_key, 3, 0);
	f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
					      __NR_request_key, 2, 0);
	f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
					      __NR_keyctl, 1, 0);
	f[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K,
					      SECCOMP_RET_ALLOW);
	f[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, DENY);
#else
	(void)f;
#endif
	return n;
}

int relay__sandbox_seccomp_fd(int *out, relay_error *err)
{
	struct sock_filter f[32];
	size_t n = build(f);

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
