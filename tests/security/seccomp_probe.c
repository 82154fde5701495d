/*
 * seccomp_probe.c - the program of sec-seccomp (test_sec_seccomp.c): tries
 * one call of each group of the sandbox's system-call profile
 * (sandbox/seccomp_profile.h) and prints "NAME RESULT" per call, RESULT
 * "ok" or the errno's name. Every call runs in a child of its own (a
 * call the profile should refuse may succeed, and change the process).
 * Arguments are chosen so that, where the kernel itself would refuse
 * the call to an unprivileged process, it does so with another errno
 * than the profile's when it can (a bad pointer, flag or descriptor):
 * the answer then shows the filter was there.
 *
 * Run inside a sandbox as an exec handler, or as a child of a node
 * handler. Never sanitized: the sandbox has no ASan runtime of its own
 * and LeakSanitizer needs ptrace, which the profile refuses.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/sched.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/personality.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define UFFD_USER_MODE_ONLY_FLAG 1

static long r_clone_user(void)
{
	long r = syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0);

	if (r == 0)
		_exit(0);
	if (r > 0)
		waitpid((pid_t)r, NULL, 0);
	return r;
}

static long r_setns_user(void)
{
	int fd = open("/proc/self/ns/user", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -1;
	return setns(fd, CLONE_NEWUSER);
}

static void *thread_fn(void *a)
{
	return a;
}

static long r_thread(void)
{
	pthread_t t;
	int e = pthread_create(&t, NULL, thread_fn, NULL);

	if (e != 0) {
		errno = e;
		return -1;
	}
	pthread_join(t, NULL);
	return 0;
}

static long r_fork(void)
{
	pid_t p = fork();

	if (p == 0)
		_exit(0);
	if (p > 0)
		waitpid(p, NULL, 0);
	return p < 0 ? -1 : 0;
}

static long r_i386(void)
{
#if defined(__x86_64__)
	long r = 20;   /* i386 getpid */

	__asm__ volatile("int $0x80" : "+a"(r) : : "memory");
	if (r < 0 && r > -4096) {
		errno = (int)-r;
		return -1;
	}
	return r;
#else
	errno = ENOSYS;
	return -1;
#endif
}

static long r_io_uring_setup(void)
{
	unsigned char params[120];

	memset(params, 0, sizeof(params));
	return syscall(SYS_io_uring_setup, 1, params);
}

static long call(const char *name)
{
	const uintptr_t bad = 1;   /* an address nothing is mapped at */

	if (!strcmp(name, "unshare-user"))
		return unshare(CLONE_NEWUSER);
	if (!strcmp(name, "unshare-user-net"))
		return unshare(CLONE_NEWUSER | CLONE_NEWNET);
	if (!strcmp(name, "clone-user"))
		return r_clone_user();
	if (!strcmp(name, "clone3"))
		return syscall(SYS_clone3, NULL, 0);
	if (!strcmp(name, "setns-user"))
		return r_setns_user();
	if (!strcmp(name, "mount"))
		return syscall(SYS_mount, NULL, "/tmp", bad, 0, NULL);
	if (!strcmp(name, "umount2"))
		return syscall(SYS_umount2, "/tmp", 0x80000000u);
	if (!strcmp(name, "pivot_root"))
		return syscall(SYS_pivot_root, "/tmp", "/tmp");
	if (!strcmp(name, "open_tree"))
		return syscall(SYS_open_tree, AT_FDCWD, "/", O_CLOEXEC);
	if (!strcmp(name, "move_mount"))
		return syscall(SYS_move_mount, -1, "", -1, "", 0);
	if (!strcmp(name, "fsopen"))
		return syscall(SYS_fsopen, "tmpfs", 0);
	if (!strcmp(name, "fsconfig"))
		return syscall(SYS_fsconfig, -1, 6, NULL, NULL, 0);
	if (!strcmp(name, "fsmount"))
		return syscall(SYS_fsmount, -1, 0, 0);
	if (!strcmp(name, "fspick"))
		return syscall(SYS_fspick, AT_FDCWD, "/", 0);
	if (!strcmp(name, "mount_setattr"))
		return syscall(SYS_mount_setattr, -1, "", 0, NULL, 0);
	if (!strcmp(name, "io_uring_setup"))
		return r_io_uring_setup();
	if (!strcmp(name, "io_uring_enter"))
		return syscall(SYS_io_uring_enter, -1, 0, 0, 0, NULL, 0);
	if (!strcmp(name, "io_uring_register"))
		return syscall(SYS_io_uring_register, -1, 0, NULL, 0);
	if (!strcmp(name, "userfaultfd"))
		return syscall(SYS_userfaultfd,
			       O_CLOEXEC | UFFD_USER_MODE_ONLY_FLAG);
	if (!strcmp(name, "bpf"))
		return syscall(SYS_bpf, 0x7fff, NULL, 0);
	if (!strcmp(name, "perf_event_open"))
		return syscall(SYS_perf_event_open, bad, 0, -1, -1, 0);
	if (!strcmp(name, "kexec_load"))
		return syscall(SYS_kexec_load, 0, 0, NULL, 0);
	if (!strcmp(name, "kexec_file_load"))
		return syscall(SYS_kexec_file_load, -1, -1, 0, "", 0);
	if (!strcmp(name, "init_module"))
		return syscall(SYS_init_module, NULL, 0, "");
	if (!strcmp(name, "finit_module"))
		return syscall(SYS_finit_module, -1, "", 0);
	if (!strcmp(name, "delete_module"))
		return syscall(SYS_delete_module, "relay-none", 0);
	if (!strcmp(name, "open_by_handle_at"))
		return syscall(SYS_open_by_handle_at, -1, bad, 0);
	if (!strcmp(name, "ptrace"))
		return ptrace(PTRACE_PEEKDATA, getppid(), NULL, NULL);
	if (!strcmp(name, "process_vm_readv"))
		return syscall(SYS_process_vm_readv, getpid(), NULL, 0, NULL,
			       0, 0);
	if (!strcmp(name, "process_vm_writev"))
		return syscall(SYS_process_vm_writev, getpid(), NULL, 0, NULL,
			       0, 0);
	if (!strcmp(name, "personality-aslr"))
		return syscall(SYS_personality, ADDR_NO_RANDOMIZE);
	if (!strcmp(name, "personality-query"))
		return syscall(SYS_personality, 0xffffffffu);
	if (!strcmp(name, "personality-linux"))
		return syscall(SYS_personality, PER_LINUX);
	if (!strcmp(name, "keyctl"))
		return syscall(SYS_keyctl, 0, -3, 0);
	if (!strcmp(name, "i386"))
		return r_i386();
	if (!strcmp(name, "fork"))
		return r_fork();
	if (!strcmp(name, "thread"))
		return r_thread();
	errno = EINVAL;
	return -1;
}

static const char *const names[] = {
	"unshare-user", "unshare-user-net", "clone-user", "clone3",
	"setns-user", "mount", "umount2", "pivot_root", "open_tree",
	"move_mount", "fsopen", "fsconfig", "fsmount", "fspick",
	"mount_setattr", "io_uring_setup", "io_uring_enter",
	"io_uring_register", "userfaultfd", "bpf", "perf_event_open",
	"kexec_load", "kexec_file_load", "init_module", "finit_module",
	"delete_module", "open_by_handle_at", "ptrace", "process_vm_readv",
	"process_vm_writev", "personality-aslr", "personality-query",
	"personality-linux", "keyctl", "i386", "fork", "thread",
};

int main(void)
{
	size_t i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		int p[2], st, e = 0;
		pid_t pid;

		if (pipe(p) != 0)
			return 1;
		fflush(stdout);
		pid = fork();
		if (pid == 0) {
			long r;

			close(p[0]);
			errno = 0;
			r = call(names[i]);
			e = r < 0 ? errno : 0;
			if (write(p[1], &e, sizeof(e)) != sizeof(e))
				_exit(1);
			_exit(0);
		}
		close(p[1]);
		if (pid < 0 || read(p[0], &e, sizeof(e)) != sizeof(e))
			e = -1;
		close(p[0]);
		if (pid > 0)
			waitpid(pid, &st, 0);
		if (e == 0)
			printf("%s ok\n", names[i]);
		else if (e < 0)
			printf("%s lost\n", names[i]);
		else
			printf("%s %s\n", names[i], strerrorname_np(e));
	}
	return 0;
}
