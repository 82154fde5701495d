/*
 * seccomp_profile.h - the sandbox's system-call profile, one table, and
 * the classic-BPF program built from it (doc/sandbox.md, "System-call
 * profile").
 *
 * Two groups of rules:
 *
 *   RELAY_SECCOMP_BASE     refused in every process of every sandbox,
 *                          its own set-up included: the kernel keyring,
 *                          io_uring, bpf, perf_event_open, userfaultfd,
 *                          kexec, kernel modules, open_by_handle_at,
 *                          ptrace, process_vm_readv/writev, setns,
 *                          personality() other than the harmless
 *                          values, and every call of another ABI (i386,
 *                          x32, AArch32, ...).
 *   RELAY_SECCOMP_HANDLER  refused only once the sandbox is set up, as
 *                          the set-up itself needs them: the mount
 *                          family, a new user namespace (CLONE_NEWUSER
 *                          in clone() or unshare()) and clone3(), whose
 *                          flags are in memory where a filter cannot
 *                          read them (ENOSYS: glibc then uses clone()).
 *
 * A cold sandbox gets both groups in one filter, which bwrap loads after
 * its own mounts, just before the handler. A warm parent gets the base
 * group from bwrap (it makes each invocation's namespaces and mounts);
 * each invocation process stacks the handler group on top after its own
 * set-up (warm_seccomp.c), before any handler code runs. The result is
 * the same refusal, with the same errno, cold or warm.
 *
 * Shared by librelay (runtime/seccomp.c, for bwrap) and the warm
 * programs (sandbox/warm_seccomp.c): static inline, no state, only the
 * kernel's headers.
 *
 * Thread-safety: no state; reentrant.
 */
#ifndef RELAY_SANDBOX_SECCOMP_PROFILE_H
#define RELAY_SANDBOX_SECCOMP_PROFILE_H

#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/sched.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/syscall.h>

#define RELAY_SECCOMP_BASE 1u
#define RELAY_SECCOMP_HANDLER 2u

/* Instructions a program of both groups needs at most (fewer than 256:
 * its jumps are 8-bit offsets). */
#define RELAY_SECCOMP_MAX 160

#if defined(__x86_64__)
#define RELAY_SECCOMP_ARCH AUDIT_ARCH_X86_64
#define RELAY_SECCOMP_X32_BIT 0x40000000u   /* x32: native arch, this bit */
#elif defined(__aarch64__)
#define RELAY_SECCOMP_ARCH AUDIT_ARCH_AARCH64
#elif defined(__riscv) && __riscv_xlen == 64
#define RELAY_SECCOMP_ARCH AUDIT_ARCH_RISCV64
#elif defined(__powerpc64__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define RELAY_SECCOMP_ARCH AUDIT_ARCH_PPC64LE
#elif defined(__s390x__)
#define RELAY_SECCOMP_ARCH AUDIT_ARCH_S390X
#endif

/* clone()'s flags: its first argument, its second on s390x. */
#if defined(__s390x__)
#define RELAY_SECCOMP_CLONE_FLAGS_ARG 1
#else
#define RELAY_SECCOMP_CLONE_FLAGS_ARG 0
#endif

/* The low 32 bits of argument @i (every flag tested is in them). */
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define RELAY_SECCOMP_ARG_LO(i) \
	((unsigned)(offsetof(struct seccomp_data, args) + 8u * (i)))
#else
#define RELAY_SECCOMP_ARG_LO(i) \
	((unsigned)(offsetof(struct seccomp_data, args) + 8u * (i) + 4u))
#endif

/* Newer than some kernel headers; the same number on every
 * architecture (the unified table from 424 on). */
#ifndef __NR_open_tree_attr
#define __NR_open_tree_attr 467
#endif

enum relay__seccomp_kind {
	RELAY_SECCOMP_ALWAYS,   /* the call, whatever its arguments */
	RELAY_SECCOMP_NEWUSER,  /* only with CLONE_NEWUSER in argument .arg */
	RELAY_SECCOMP_PERSONA,  /* personality() but to the allowed values */
};

struct relay__seccomp_rule {
	int nr;
	unsigned char group;     /* RELAY_SECCOMP_BASE or _HANDLER */
	unsigned char kind;      /* enum relay__seccomp_kind */
	unsigned char arg;       /* RELAY_SECCOMP_NEWUSER: the flags */
	unsigned short err;      /* the errno it fails with */
};

#define RELAY__SC(name, g, e) { __NR_##name, g, RELAY_SECCOMP_ALWAYS, 0, e }

/* The profile: doc/sandbox.md has it as a table with the reasons. */
static const struct relay__seccomp_rule relay__seccomp_rules[] = {
	/* Keys are the host user's, not the namespace's. */
	RELAY__SC(add_key, RELAY_SECCOMP_BASE, ENOSYS),
	RELAY__SC(request_key, RELAY_SECCOMP_BASE, ENOSYS),
	RELAY__SC(keyctl, RELAY_SECCOMP_BASE, ENOSYS),
#ifdef __NR_io_uring_setup
	RELAY__SC(io_uring_setup, RELAY_SECCOMP_BASE, ENOSYS),
	RELAY__SC(io_uring_enter, RELAY_SECCOMP_BASE, ENOSYS),
	RELAY__SC(io_uring_register, RELAY_SECCOMP_BASE, ENOSYS),
#endif
	RELAY__SC(userfaultfd, RELAY_SECCOMP_BASE, ENOSYS),
	RELAY__SC(bpf, RELAY_SECCOMP_BASE, EPERM),
	RELAY__SC(perf_event_open, RELAY_SECCOMP_BASE, EPERM),
#ifdef __NR_kexec_load
	RELAY__SC(kexec_load, RELAY_SECCOMP_BASE, EPERM),
#endif
#ifdef __NR_kexec_file_load
	RELAY__SC(kexec_file_load, RELAY_SECCOMP_BASE, EPERM),
#endif
	RELAY__SC(init_module, RELAY_SECCOMP_BASE, EPERM),
	RELAY__SC(finit_module, RELAY_SECCOMP_BASE, EPERM),
	RELAY__SC(delete_module, RELAY_SECCOMP_BASE, EPERM),
	RELAY__SC(open_by_handle_at, RELAY_SECCOMP_BASE, EPERM),
	RELAY__SC(ptrace, RELAY_SECCOMP_BASE, EPERM),
	RELAY__SC(process_vm_readv, RELAY_SECCOMP_BASE, EPERM),
	RELAY__SC(process_vm_writev, RELAY_SECCOMP_BASE, EPERM),
	RELAY__SC(setns, RELAY_SECCOMP_BASE, EPERM),
	{ __NR_personality, RELAY_SECCOMP_BASE, RELAY_SECCOMP_PERSONA, 0,
	  EPERM },
	/* After the sandbox's set-up only. */
	RELAY__SC(mount, RELAY_SECCOMP_HANDLER, EPERM),
	RELAY__SC(umount2, RELAY_SECCOMP_HANDLER, EPERM),
	RELAY__SC(pivot_root, RELAY_SECCOMP_HANDLER, EPERM),
	RELAY__SC(move_mount, RELAY_SECCOMP_HANDLER, EPERM),
	RELAY__SC(open_tree, RELAY_SECCOMP_HANDLER, EPERM),
	RELAY__SC(open_tree_attr, RELAY_SECCOMP_HANDLER, EPERM),
	RELAY__SC(fsopen, RELAY_SECCOMP_HANDLER, EPERM),
	RELAY__SC(fsconfig, RELAY_SECCOMP_HANDLER, EPERM),
	RELAY__SC(fsmount, RELAY_SECCOMP_HANDLER, EPERM),
	RELAY__SC(fspick, RELAY_SECCOMP_HANDLER, EPERM),
	RELAY__SC(mount_setattr, RELAY_SECCOMP_HANDLER, EPERM),
	{ __NR_unshare, RELAY_SECCOMP_HANDLER, RELAY_SECCOMP_NEWUSER, 0,
	  EPERM },
	{ __NR_clone, RELAY_SECCOMP_HANDLER, RELAY_SECCOMP_NEWUSER,
	  RELAY_SECCOMP_CLONE_FLAGS_ARG, EPERM },
	RELAY__SC(clone3, RELAY_SECCOMP_HANDLER, ENOSYS),
};

#undef RELAY__SC

/* personality() values a program may set: PER_LINUX, PER_LINUX32 (uname
 * says i686), UNAME26 with either, and the query 0xffffffff. Any other
 * (ADDR_NO_RANDOMIZE, READ_IMPLIES_EXEC, another execution domain...)
 * is refused. */
static const uint32_t relay__seccomp_personas[] = {
	0x0u, 0x8u, 0x20000u, 0x20008u, 0xffffffffu,
};

#define RELAY__SECCOMP_N(a) (sizeof(a) / sizeof((a)[0]))
#define RELAY__BPF_STMT(c, k) ((struct sock_filter)BPF_STMT((c), (k)))
#define RELAY__BPF_JUMP(c, k, t, f) \
	((struct sock_filter)BPF_JUMP((c), (k), (t), (f)))
#define RELAY__BPF_RET_ERRNO(e) \
	RELAY__BPF_STMT(BPF_RET | BPF_K, \
			SECCOMP_RET_ERRNO | ((e) & SECCOMP_RET_DATA))

/* The answers a program returns at its end (one instruction each, the
 * rules jump to theirs): every errno of relay__seccomp_rules[]. */
static const unsigned short relay__seccomp_errnos[] = { EPERM, ENOSYS };

/*
 * The program of the rules of @groups (RELAY_SECCOMP_BASE and/or
 * RELAY_SECCOMP_HANDLER) into @f (room for RELAY_SECCOMP_MAX). Returns
 * the number of instructions; 0 on an architecture this file does not
 * know (no filter). The program decides on the architecture and the
 * number before it reads an argument, so the kernel's cache answers the
 * calls it always allows without running it. Loading costs about a
 * microsecond per instruction (the kernel runs the program once per
 * call number to fill that cache), so a rule is one jump to a shared
 * return where it can be.
 */
static inline size_t relay__seccomp_build(struct sock_filter *f,
					  unsigned groups)
{
	size_t n = 0;
#ifdef RELAY_SECCOMP_ARCH
	const unsigned arch = offsetof(struct seccomp_data, arch);
	const unsigned nr = offsetof(struct seccomp_data, nr);
	const size_t np = RELAY__SECCOMP_N(relay__seccomp_personas);
	const size_t ne = RELAY__SECCOMP_N(relay__seccomp_errnos);
	/* Jumps to a shared return: the instruction and its answer. */
	size_t fix_at[RELAY_SECCOMP_MAX], nfix = 0, i, k;
	size_t ret_at[RELAY__SECCOMP_N(relay__seccomp_errnos)];
	unsigned short fix_err[RELAY_SECCOMP_MAX];

	/* Another ABI of this kernel (i386 or x32 on x86_64, AArch32 on
	 * aarch64...): nothing of it, as on a kernel built without it. */
	f[n++] = RELAY__BPF_STMT(BPF_LD | BPF_W | BPF_ABS, arch);
	f[n++] = RELAY__BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
				 RELAY_SECCOMP_ARCH, 1, 0);
	f[n++] = RELAY__BPF_RET_ERRNO(ENOSYS);
	f[n++] = RELAY__BPF_STMT(BPF_LD | BPF_W | BPF_ABS, nr);
#ifdef RELAY_SECCOMP_X32_BIT
	f[n++] = RELAY__BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K,
				 RELAY_SECCOMP_X32_BIT, 0, 1);
	f[n++] = RELAY__BPF_RET_ERRNO(ENOSYS);
#endif
	for (i = 0; i < RELAY__SECCOMP_N(relay__seccomp_rules); i++) {
		const struct relay__seccomp_rule *r = &relay__seccomp_rules[i];

		if (!(r->group & groups))
			continue;
		switch (r->kind) {
		case RELAY_SECCOMP_ALWAYS:
			/* nr? its answer. */
			fix_at[nfix] = n;
			fix_err[nfix++] = r->err;
			f[n++] = RELAY__BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
						 (unsigned)r->nr, 0, 0);
			break;
		case RELAY_SECCOMP_NEWUSER:
			/* nr? flags & CLONE_NEWUSER? its answer; else
			 * reload nr. */
			f[n++] = RELAY__BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
						 (unsigned)r->nr, 0, 3);
			f[n++] = RELAY__BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
						 RELAY_SECCOMP_ARG_LO(r->arg));
			fix_at[nfix] = n;
			fix_err[nfix++] = r->err;
			f[n++] = RELAY__BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K,
						 CLONE_NEWUSER, 0, 0);
			f[n++] = RELAY__BPF_STMT(BPF_LD | BPF_W | BPF_ABS, nr);
			break;
		case RELAY_SECCOMP_PERSONA:
			/* nr? one of the allowed values? else refuse. */
			f[n++] = RELAY__BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
						 (unsigned)r->nr, 0,
						 (unsigned char)(np + 3));
			f[n++] = RELAY__BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
						 RELAY_SECCOMP_ARG_LO(0));
			for (k = 0; k < np; k++)
				f[n++] = RELAY__BPF_JUMP(
					BPF_JMP | BPF_JEQ | BPF_K,
					relay__seccomp_personas[k],
					(unsigned char)(np - k), 0);
			f[n++] = RELAY__BPF_RET_ERRNO(r->err);
			f[n++] = RELAY__BPF_STMT(BPF_LD | BPF_W | BPF_ABS, nr);
			break;
		default:
			break;
		}
	}
	f[n++] = RELAY__BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
	for (k = 0; k < ne; k++) {
		ret_at[k] = n;
		f[n++] = RELAY__BPF_RET_ERRNO(relay__seccomp_errnos[k]);
	}
	/* Every jump is forward and short (the program is at most
	 * RELAY_SECCOMP_MAX < 256 instructions). */
	for (i = 0; i < nfix; i++) {
		/* An errno missing from the list: the first (a refusal
		 * all the same, never a jump to the next rule). */
		size_t to = ret_at[0];

		for (k = 0; k < ne; k++)
			if (fix_err[i] == relay__seccomp_errnos[k])
				to = ret_at[k];
		f[fix_at[i]].jt = (unsigned char)(to - fix_at[i] - 1);
	}
#else
	(void)f;
	(void)groups;
#endif
	return n;
}

#undef RELAY__BPF_STMT
#undef RELAY__BPF_JUMP
#undef RELAY__BPF_RET_ERRNO

#endif
