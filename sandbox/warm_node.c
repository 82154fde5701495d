/*
 * warm_node.c - the node warm fork server, in C, as a node addon (N-API)
 * built into relay-warm-slot.so next to the slot loop it drives
 * (warm_slot.c); doc/sandbox.md, "Warm sandboxes", says why one file.
 *
 * "relay-bootstrap.js --serve" loads the library with process.dlopen()
 * (it is bound read-only at /run/relay-warm-slot.so in every warm
 * sandbox) and calls serve(). serve() is the python3 server's Server
 * (relay_warm_server.py) in C, run on node's main thread without ever
 * returning to the event loop: it starts invocation slots N (clone3, pid
 * 1 of a new pid and mount namespace, a private /tmp and /proc), each
 * running relay_warm_slot_run() exactly as for python3, keeps two slots
 * free, tells relayd Y/N/E on the control socket (fd 3, warm_proto.h)
 * and exits when relayd hangs up. It returns only in an invocation
 * process H, with its capabilities dropped and a single thread; the
 * bootstrap then repairs what a fork of node leaves shared or stale
 * (afterFork(): a new libuv backend, fresh random state) and calls
 * request(), which waits for the invocation's request and returns its
 * handler and environment. From there it is a cold start's code.
 *
 * node is started with V8 in single-threaded mode (no concurrent
 * compiler, marker or sweeper) and one platform worker; the threads left
 * (that worker, node's delayed-task scheduler and its SIGUSR1 watchdog)
 * are idle, parked in a futex or epoll wait, whenever the main thread is
 * here: quiet_threads() checks that before each fork of a slot, and a
 * slot is not made (the server says N, or stops making slots) when one
 * is not. The threads a fork lacks would run V8's background tasks:
 * warm_node_worker.c gives H a worker of its own (afterFork()).
 * V8 marks its own mappings MADV_DONTFORK; every mapping is marked
 * MADV_DOFORK again before a slot is forked, else N lacks the heap.
 * Before its first fork the server moves node's code and read-only data
 * onto huge pages (warm_node_huge.c), and each H rehearses its request's
 * steps while it waits for it (relay-bootstrap.js rehearse()): a fork's
 * first touch of each page is what its start mostly costs.
 *
 * The napi_* functions are weak references: python3's ctypes loads this
 * library too (RTLD_NOW) and has no node to resolve them; only node ever
 * calls napi_register_module_v1().
 *
 * Thread-safety: serve(), afterFork() and request() run on node's main
 * thread; nothing here is called from another.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/sched.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <node_api.h>

#include "warm_fresh.h"
#include "warm_node_fds.h"
#include "warm_node_huge.h"
#include "warm_node_prefault.h"
#include "warm_node_worker.h"
#include "warm_proto.h"

#pragma weak napi_create_function
#pragma weak napi_set_named_property
#pragma weak napi_create_object
#pragma weak napi_create_string_utf8
#pragma weak napi_create_array_with_length
#pragma weak napi_set_element
#pragma weak napi_create_int32
#pragma weak napi_get_undefined
#pragma weak napi_throw_error
#pragma weak napi_get_uv_event_loop
#pragma weak napi_get_cb_info
#pragma weak napi_get_value_int32
#pragma weak napi_add_env_cleanup_hook
#pragma weak napi_get_boolean

/* libuv's, exported by node: a new backend (epoll) and signal pipe for
 * the loop of a forked process. */
struct uv_loop_s;
int uv_loop_fork(struct uv_loop_s *loop) __attribute__((weak));

int relay_warm_slot_run(const struct relay_warm_slot *a);
long relay_warm_slot_request(const char **msg);
napi_value napi_register_module_v1(napi_env env, napi_value exports);

#define CTL 3
#define NODE_MAX_SLOTS 256
#define NODE_MAX_SETUP_FAILURES 3
#define NODE_FIELDS_MAX 4096
#define NODE_QUIET_TRIES 1000          /* up to 2 s for threads to park */
#define NODE_QUIET_WAIT_NS 2000000L
#define NODE_LEARN_MS 3000              /* the learning fork's report */
/* Slots kept free: each holds an invocation process forked, prepared
 * and rehearsed ahead of its request; the kernel hands relayd's requests
 * to the slot waiting longest, so with two free a process has the time
 * of two invocations, not one, to be ready (doc/perf/warm.md, round
 * 11). */
#define NODE_FREE_SLOTS 2

struct nslot {
	pid_t pid;      /* 0: free entry */
	int sock;       /* the server's end; -1 once dropped */
	int ready;      /* said its first "I" */
	int busy;       /* has an invocation (rid) */
	char rid[40];
};

static struct nslot slots[NODE_MAX_SLOTS];
static int idle_slots, starting_slots, failed_slots;
static sigset_t start_mask;     /* the mask node runs with */
static int sig_fd = -1;
static int tmp_mode = -1;
static char why_not[200];       /* why no slot can be forked */
static int learn_fd = -1;       /* in the learning fork: its report */
static long prefaulted;         /* in an H: pages populated before its
				   request (warm_node_prefault.c) */
static int rehearsed;           /* in an H: rehearsed before its request */
static int server_rehearsed;    /* the server rehearsed before its first
				   fork (every H inherits 1) */
static int in_invocation;       /* afterFork() ran: this is an H */
static long huge_mib;           /* node's mappings on huge pages (MiB) */

static void send_fields(const char *const *f, int n, int fd)
{
	char buf[512];
	size_t len = 0, l;
	int i;

	for (i = 0; i < n; i++) {
		l = strlen(f[i]);
		if (l >= sizeof(buf) - len)
			l = sizeof(buf) - len - 1;
		memcpy(buf + len, f[i], l);
		buf[len + l] = '\0';
		len += l + 1;
	}
	(void)relay__warm_send(CTL, buf, len, &fd, fd >= 0 ? 1 : 0);
}

/* Every mapping MADV_DOFORK (V8 marks its own DONTFORK): a fork gets the
 * whole process. Mappings that refuse (none should) are skipped. */
static void mark_dofork(void)
{
	char line[512];
	FILE *f = fopen("/proc/self/maps", "re");

	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;

		if (sscanf(line, "%lx-%lx", &lo, &hi) == 2 && hi > lo &&
		    !strstr(line, "[vsyscall]"))
			(void)madvise((void *)lo, hi - lo, MADV_DOFORK);
		if (!strchr(line, '\n')) {
			int c;

			while ((c = fgetc(f)) != EOF && c != '\n')
				;
		}
	}
	fclose(f);
}

/*
 * Are this process's threads other than the caller all parked, blocked
 * in a wait that holds no lock of ours (a futex wait: a condition
 * variable or semaphore; or an epoll wait: node's delayed-task
 * scheduler runs a libuv loop of its own), so that none can hold a lock
 * a fork would copy held? Returns their number (>= 0) when so, -1 with
 * why_not set when not.
 */
static int parked(long nr)
{
#if defined(__x86_64__)
	return nr == 202 || nr == 232 || nr == 281 || nr == 441;
#elif defined(__aarch64__)
	return nr == 98 || nr == 22 || nr == 441;
#else
	(void)nr;
	return 0;
#endif
}

static int quiet_threads(void)
{
	char path[96], buf[256];
	pid_t me = (pid_t)syscall(SYS_gettid);
	int n = 0, dfd;
	dfd = open("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0) {
		snprintf(why_not, sizeof(why_not), "/proc/self/task: %s",
			 strerror(errno));
		return -1;
	}
	{
		char dbuf[4096];
		long nread;

		while ((nread = syscall(SYS_getdents64, dfd, dbuf,
					sizeof(dbuf))) > 0) {
			long off = 0;

			while (off < nread) {
				struct {
					uint64_t ino;
					int64_t off;
					unsigned short reclen;
					unsigned char type;
					char name[];
				} *de = (void *)(dbuf + off);
				long tid = strtol(de->name, NULL, 10);
				int fd;
				ssize_t r;

				off += de->reclen;
				if (tid <= 0 || tid == me)
					continue;
				n++;
				snprintf(path, sizeof(path),
					 "/proc/self/task/%ld/syscall", tid);
				fd = open(path, O_RDONLY | O_CLOEXEC);
				r = fd >= 0 ? read(fd, buf, sizeof(buf) - 1)
					    : -1;
				if (fd >= 0)
					close(fd);
				if (r <= 0) {
					/* Gone, or unreadable: not quiet. */
					snprintf(why_not, sizeof(why_not),
						 "thread %ld: state unknown",
						 tid);
					close(dfd);
					return -1;
				}
				buf[r] = '\0';
				buf[strcspn(buf, "\n")] = '\0';
				if (!parked(strtol(buf, NULL, 10))) {
					snprintf(why_not, sizeof(why_not),
						 "thread %ld is not parked in "
						 "a wait (syscall %.20s)",
						 tid, buf);
					close(dfd);
					return -1;
				}
			}
		}
	}
	close(dfd);
	return n;
}

/* In N: tell the server why the slot cannot run and exit. */
static void __attribute__((noreturn)) slot_fail(int srv, const char *what)
{
	char why[200];
	int n;

	n = snprintf(why, sizeof(why), "F%c%s: %s", 0, what, strerror(errno));
	if (n >= (int)sizeof(why))
		n = (int)sizeof(why) - 1;
	(void)relay__warm_send(srv, why, (size_t)n + 1, NULL, 0);
	_exit(255);
}

/*
 * N, just cloned, with the server's end @ssock of its pair: none of the
 * server's descriptors but fds 0-3 and its pair (as fd 4); its own
 * session and mounts; then the slot loop. Returns only in an H.
 */
static int slot_main(int ssock)
{
	struct relay_warm_slot a;
	char opt[64];

	if (ssock != 4 && dup3(ssock, 4, O_CLOEXEC) != 4)
		_exit(255);
	if (syscall(SYS_close_range, 5u, ~0u, 0) != 0)
		_exit(255);
	/* node's own mask, not the server's (SIGCHLD blocked). */
	sigprocmask(SIG_SETMASK, &start_mask, NULL);
	setsid();
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0)
		slot_fail(4, "mount --make-rprivate /");
	if (tmp_mode >= 0) {
		/* bwrap's size too (resources.tmp). */
		if (relay__warm_tmpfs_opts("/tmp", (unsigned)tmp_mode, opt,
					   sizeof(opt)) != 0 ||
		    mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV,
			  opt) != 0)
			slot_fail(4, "mount /tmp");
	}
	if (mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC,
		  NULL) != 0)
		slot_fail(4, "mount /proc");
	memset(&a, 0, sizeof(a));
	a.ctl_fd = CTL;
	a.srv_fd = 4;
	a.nscratch = 1;
	a.scratch[0] = "/tmp";
	a.scratch_mode[0] = tmp_mode;
	return relay_warm_slot_run(&a);
}

/* Before any fork: the other threads parked (quiet_threads(), waited
 * for a little) and every mapping forkable. 0, or -1 (why_not). */
static int ready_to_fork(void)
{
	int q, tries;

	q = quiet_threads();
	for (tries = 0; q < 0 && tries < NODE_QUIET_TRIES; tries++) {
		/* A thread finishing its work (the warm-up's WebAssembly
		 * compile job, a timer of node's): wait for it a little. */
		struct timespec ts = { 0, NODE_QUIET_WAIT_NS };

		nanosleep(&ts, NULL);
		q = quiet_threads();
	}
	if (q < 0)
		return -1;
	mark_dofork();
	return 0;
}

/* Start a slot. 0 in its H, 1 in the server, -1 (why_not) when it
 * cannot. */
static int new_slot(void)
{
	struct clone_args ca;
	int sv[2], i;
	long pid;

	for (i = 0; i < NODE_MAX_SLOTS && slots[i].pid; i++)
		;
	if (i == NODE_MAX_SLOTS) {
		snprintf(why_not, sizeof(why_not), "too many slots");
		return -1;
	}
	if (ready_to_fork() < 0)
		return -1;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
		snprintf(why_not, sizeof(why_not), "socketpair: %s",
			 strerror(errno));
		return -1;
	}
	memset(&ca, 0, sizeof(ca));
	ca.flags = CLONE_NEWNS | CLONE_NEWPID;
	ca.exit_signal = SIGCHLD;
	pid = syscall(SYS_clone3, &ca, sizeof(ca));
	if (pid == 0) {
		close(sv[0]);
		return slot_main(sv[1]);
	}
	close(sv[1]);
	if (pid < 0) {
		snprintf(why_not, sizeof(why_not), "clone3: %s",
			 strerror(errno));
		close(sv[0]);
		return -1;
	}
	memset(&slots[i], 0, sizeof(slots[i]));
	slots[i].pid = (pid_t)pid;
	slots[i].sock = sv[0];
	starting_slots++;
	return 1;
}

/* A slot's end: an invocation it had is lost (relayd runs it cold). */
static void drop_slot(struct nslot *s, const char *why)
{
	if (s->sock < 0)
		return;
	if (s->busy) {
		const char *e[3] = { "E", s->rid, why };

		send_fields(e, 3, -1);
		s->busy = 0;
	} else if (s->ready) {
		idle_slots--;
	} else {
		starting_slots--;
	}
	close(s->sock);
	s->sock = -1;
}

/* What a slot says: B id, I [id], F reason; EOF: gone. */
static void from_slot(struct nslot *s)
{
	char buf[512];
	ssize_t n;

	while (s->sock >= 0) {
		n = recv(s->sock, buf, sizeof(buf) - 1, MSG_DONTWAIT);
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		if (n <= 0) {
			drop_slot(s, "its slot exited");
			return;
		}
		buf[n] = '\0';
		if (buf[0] == 'B' && buf[1] == '\0') {
			snprintf(s->rid, sizeof(s->rid), "%.39s", buf + 2);
			s->busy = 1;
			idle_slots--;
		} else if (buf[0] == 'I' && buf[1] == '\0') {
			if (!s->ready) {
				s->ready = 1;
				starting_slots--;
				failed_slots = 0;
			}
			s->busy = 0;
			idle_slots++;
		} else if (buf[0] == 'F' && buf[1] == '\0') {
			failed_slots++;
			dprintf(2, "relay: warm slot: %.300s\n", buf + 2);
		}
	}
}

static void reap(void)
{
	struct signalfd_siginfo si;
	char why[64];
	int st, i;
	pid_t pid;

	while (read(sig_fd, &si, sizeof(si)) == (ssize_t)sizeof(si))
		;
	while ((pid = waitpid(-1, &st, WNOHANG)) > 0) {
		for (i = 0; i < NODE_MAX_SLOTS; i++) {
			if (slots[i].pid != pid)
				continue;
			from_slot(&slots[i]);
			snprintf(why, sizeof(why),
				 "invocation slot died (status %d)",
				 relay__warm_exit_code(st));
			drop_slot(&slots[i], why);
			slots[i].pid = 0;
		}
	}
}

/* The first slot: can this sandbox run node invocations? 0 in its H, 1
 * when ready, -1 (why_not) when not. */
static int probe(void)
{
	char buf[512];
	ssize_t n;
	int r = new_slot();

	if (r <= 0)
		return r;
	do
		n = recv(slots[0].sock, buf, sizeof(buf) - 1, 0);
	while (n < 0 && errno == EINTR);
	if (n >= 2 && buf[0] == 'I' && buf[1] == '\0') {
		slots[0].ready = 1;
		starting_slots--;
		idle_slots++;
		return 1;
	}
	buf[n > 0 ? n : 0] = '\0';
	snprintf(why_not, sizeof(why_not), "%.199s",
		 n > 2 && buf[0] == 'F' ? buf + 2
					: "the first invocation slot exited");
	return -1;
}

/*
 * Before the first slot: learn what every invocation process writes
 * after its request (warm_node_prefault.c). A fork L of the server, in
 * the server's sandbox with no descriptor of relayd's and its stdio on
 * /dev/null, returns to the bootstrap as an H would, marks its pages
 * after afterFork() (where an H prefaults), takes a made-up request for
 * the bootstrap's built-in no-op handler (no application code) and, at
 * its exit (exit_now()), reports the pages it wrote since. 0 in L, 1 in
 * the server, with or without a plan (an invocation is the same without
 * one, only slower).
 */
static int learn(void)
{
	struct clone_args ca;
	int p[2], nul, st;
	long pid, pages;

	if (ready_to_fork() < 0 || pipe2(p, O_CLOEXEC) != 0)
		return 1;
	memset(&ca, 0, sizeof(ca));
	ca.exit_signal = SIGCHLD;
	pid = syscall(SYS_clone3, &ca, sizeof(ca));
	if (pid == 0) {
		nul = open("/dev/null", O_RDWR | O_CLOEXEC);
		if (nul < 0 || dup2(nul, 0) < 0 || dup2(nul, 1) < 0 ||
		    dup2(nul, 2) < 0 || dup2(nul, CTL) < 0)
			_exit(255);
		close(nul);
		(void)prctl(PR_SET_PDEATHSIG, SIGKILL);
		close(sig_fd);
		sig_fd = -1;
		close(p[0]);
		learn_fd = p[1];
		sigprocmask(SIG_SETMASK, &start_mask, NULL);
		return 0;
	}
	close(p[1]);
	pages = pid > 0 ? relay__node_prefault_take(p[0], NODE_LEARN_MS) : -1;
	close(p[0]);
	if (pid > 0) {
		kill((pid_t)pid, SIGKILL);
		while (waitpid((pid_t)pid, &st, 0) < 0 && errno == EINTR)
			;
	}
	if (pages < 0)
		dprintf(2, "relay: node warm server: no prefault plan\n");
	return 1;
}

/* The server: returns 0 only in an H; exits when relayd hangs up. */
static int serve_loop(void)
{
	struct pollfd pfd[NODE_MAX_SLOTS + 2];
	struct nslot *by[NODE_MAX_SLOTS + 2];
	struct stat st;
	sigset_t chld;
	int r, me, i, n;

	relay__node_save_fds(CTL);
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	sigprocmask(SIG_BLOCK, &chld, &start_mask);
	sig_fd = signalfd(-1, &chld, SFD_NONBLOCK | SFD_CLOEXEC);
	if (sig_fd < 0) {
		snprintf(why_not, sizeof(why_not), "signalfd: %s",
			 strerror(errno));
		goto refuse;
	}
	if (stat("/tmp", &st) == 0)
		tmp_mode = (int)(st.st_mode & 07777);
	fflush(stdout);
	fflush(stderr);
	/* Node's code and read-only data on huge pages, for every fork
	 * (the learning fork's too); the other threads are parked. */
	if (ready_to_fork() == 0) {
		char why[160];

		huge_mib = relay__node_huge_text(why, sizeof(why));
		if (huge_mib == 0)
			dprintf(2, "relay: node warm server: node's code stays "
				   "on small pages: %s\n", why);
	}
	if (learn() == 0)
		return 0;
	r = probe();
	if (r == 0)
		return 0;
	if (r < 0)
		goto refuse;
	me = (int)syscall(SYS_pidfd_open, getpid(), 0);
	{
		const char *y[1] = { "Y" };

		send_fields(y, 1, me);
	}
	if (me >= 0)
		close(me);
	for (;;) {
		/* NODE_FREE_SLOTS free (or on their way) for the next
		 * requests; not after NODE_MAX_SETUP_FAILURES in a row (no
		 * fork loop). */
		while (idle_slots + starting_slots < NODE_FREE_SLOTS &&
		       failed_slots < NODE_MAX_SETUP_FAILURES) {
			r = new_slot();
			if (r == 0)
				return 0;
			if (r < 0) {
				dprintf(2, "relay: node warm server: no new "
					   "slot: %s\n", why_not);
				failed_slots++;
				break;   /* again at the next event */
			}
		}
		n = 0;
		pfd[n].fd = CTL;
		pfd[n].events = POLLRDHUP;
		by[n++] = NULL;
		pfd[n].fd = sig_fd;
		pfd[n].events = POLLIN;
		by[n++] = NULL;
		for (i = 0; i < NODE_MAX_SLOTS; i++) {
			if (!slots[i].pid || slots[i].sock < 0)
				continue;
			pfd[n].fd = slots[i].sock;
			pfd[n].events = POLLIN;
			by[n++] = &slots[i];
		}
		r = poll(pfd, (nfds_t)n, -1);
		if (r < 0 && errno != EINTR)
			_exit(255);
		if (r < 0)
			continue;
		if (pfd[0].revents)
			_exit(0);   /* relayd closed the socket: retire */
		for (i = 2; i < n; i++)
			if (pfd[i].revents)
				from_slot(by[i]);
		if (pfd[1].revents)
			reap();
	}
refuse:
	{
		const char *f[2] = { "N", why_not };

		send_fields(f, 2, -1);
	}
	_exit(0);
}

/* ---- the addon ------------------------------------------------- */

static napi_value undefined(napi_env env)
{
	napi_value v;

	napi_get_undefined(env, &v);
	return v;
}

static void node_prepare(napi_env env);

/* serve(): see the top of this file. Returns undefined, in an H only. */
static napi_value js_serve(napi_env env, napi_callback_info info)
{
	(void)info;
	node_prepare(env);
	(void)serve_loop();
	return undefined(env);
}

/*
 * How H ends. node's own exit (after the 'exit' event, in every path: the
 * loop ran dry, process.exit(), a fatal exception once reported) disposes
 * of its platform, joining worker threads that H, a fork, does not have:
 * a failed CHECK and SIGABRT. So H ends where node runs its AtExit hooks
 * (process.exit() and the fatal path) or its environment's cleanup hooks
 * (the loop ran dry), both after everything was said and written, with
 * the code node would have exited with (exit_code, from the bootstrap's
 * setExitCode() after the 'exit' listeners ran). node's stdout and stderr
 * write synchronously to pipes and files; C stdio is flushed.
 */
static int exit_code;

static void exit_now(void *arg)
{
	(void)arg;
	fflush(NULL);
	if (learn_fd >= 0)
		_exit(relay__node_prefault_report(learn_fd) == 0 ? 0 : 1);
	_exit(exit_code);
}

/* node's environment and the functions of node's and OpenSSL's that an
 * invocation calls, looked up once in the server (node_prepare()): a
 * dlsym() in each fork costs page faults (copy-on-write of the loader's
 * and the allocator's pages), not only time. */
static void *node_env;
static void (*node_at_exit)(void *, void (*)(void *), void *);
static int (*ssl_rand_poll)(void);
static int exit_hooked;         /* exit_now() hooked into node's exits */

/* node::GetCurrentEnvironment(isolate->GetCurrentContext()): C++
 * functions node exports, called by their (Itanium ABI) names; each
 * takes and returns one pointer (v8::Local is one). NULL when this node
 * lacks one. */
static void *current_env(void)
{
	void *(*iso_cur)(void);
	void *(*cur_ctx)(void *);
	void *(*get_env)(void *);
	void *iso, *ctx;

	*(void **)&iso_cur = dlsym(RTLD_DEFAULT, "_ZN2v87Isolate10GetCurrentEv");
	*(void **)&cur_ctx = dlsym(RTLD_DEFAULT,
				   "_ZN2v87Isolate17GetCurrentContextEv");
	*(void **)&get_env = dlsym(RTLD_DEFAULT,
		"_ZN4node21GetCurrentEnvironmentEN2v85LocalINS0_7ContextEEE");
	if (!iso_cur || !cur_ctx || !get_env)
		return NULL;
	iso = iso_cur();
	ctx = iso ? cur_ctx(iso) : NULL;
	return ctx ? get_env(ctx) : NULL;
}

/* node::AtExit(current_env(), exit_now). 0, or -1 when this node lacks
 * it. */
static int hook_at_exit(void)
{
	if (!node_at_exit || !node_env)
		return -1;
	node_at_exit(node_env, exit_now, NULL);
	return 0;
}

/* In the server, before its first fork: what every fork's afterFork()
 * needs looked up or made (see node_env). A lookup that fails leaves
 * its pointer NULL, and afterFork() then fails as it would have. */
static void node_prepare(napi_env env)
{
	char why[160];

	node_env = current_env();
	*(void **)&node_at_exit = dlsym(RTLD_DEFAULT,
		"_ZN4node6AtExitEPNS_11EnvironmentEPFvPvES2_");
	/* H's way out, registered here: the server itself never exits
	 * through node (it _exit()s), so only a fork ever runs them. */
	exit_hooked = hook_at_exit() == 0 &&
		      napi_add_env_cleanup_hook(env, exit_now, NULL) == napi_ok;
	*(void **)&ssl_rand_poll = dlsym(RTLD_DEFAULT, "RAND_poll");
	(void)relay__node_worker_prepare(node_env, why, sizeof(why));
}

/* setExitCode(n): the code H ends with (see exit_now()). */
static napi_value js_set_exit_code(napi_env env, napi_callback_info info)
{
	size_t argc = 1;
	napi_value argv[1];
	int32_t v;

	if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) == napi_ok &&
	    argc >= 1 && napi_get_value_int32(env, argv[0], &v) == napi_ok)
		exit_code = v & 0xff;
	return undefined(env);
}

/* afterFork(): in H, before its request: the event loop's own epoll
 * instance and signal pipe (they were the server's, shared with every
 * other H; relay_warm_slot_run() closed their descriptors), and H's own
 * way out (exit_now()). */
static napi_value js_after_fork(napi_env env, napi_callback_info info)
{
	struct uv_loop_s *loop = NULL;
	char why[160];

	(void)info;
	in_invocation = 1;
	if (relay__node_restore_fds() != 0) {
		dprintf(2, "relay: node warm invocation: descriptors: %s\n",
			strerror(errno));
		_exit(255);
	}
	if (!uv_loop_fork ||
	    napi_get_uv_event_loop(env, (struct uv_loop_s **)&loop) !=
		    napi_ok ||
	    uv_loop_fork(loop) != 0) {
		dprintf(2, "relay: node warm invocation: uv_loop_fork failed\n");
		_exit(255);
	}
	if (!exit_hooked) {
		dprintf(2, "relay: node warm invocation: no exit hook\n");
		_exit(255);
	}
	if (relay__node_worker_install(node_env, why, sizeof(why)) != 0) {
		dprintf(2, "relay: node warm invocation: %s\n", why);
		_exit(255);
	}
	/* OpenSSL notices a fork by a new pid, but H is pid 2 of its
	 * namespace as the server is of the sandbox's: reseed it (its
	 * per-thread generators follow their parent's reseed). */
	if (!ssl_rand_poll || ssl_rand_poll() != 1) {
		dprintf(2, "relay: node warm invocation: cannot reseed "
			   "OpenSSL\n");
		_exit(255);
	}
	/* The pages this process will write after its request, copied
	 * now (learned by the learning fork, which marks them here). */
	if (learn_fd >= 0)
		(void)relay__node_prefault_mark();
	else
		prefaulted = relay__node_prefault_run();
	return undefined(env);
}

/* { id, handler, env: ["K=V", ...] } of request fields @f (R id wait_go
 * as nproc handler env...; @nf >= 6). */
static napi_value request_object(napi_env env, const char *const *f, int nf)
{
	napi_value o, arr, s;
	int k;

	napi_create_object(env, &o);
	napi_create_string_utf8(env, f[1], NAPI_AUTO_LENGTH, &s);
	napi_set_named_property(env, o, "id", s);
	napi_create_string_utf8(env, f[5], NAPI_AUTO_LENGTH, &s);
	napi_set_named_property(env, o, "handler", s);
	napi_create_array_with_length(env, (size_t)(nf - 6), &arr);
	for (k = 6; k < nf; k++) {
		napi_create_string_utf8(env, f[k], NAPI_AUTO_LENGTH, &s);
		napi_set_element(env, arr, (uint32_t)(k - 6), s);
	}
	napi_set_named_property(env, o, "env", arr);
	return o;
}

/* request(): in H, the invocation's request (relay_warm_slot_request()):
 * { id, handler, env: ["K=V", ...] }, its stdio in place. Exits when
 * there is none (the probe). */
static napi_value js_request(napi_env env, napi_callback_info info)
{
	const char *msg = NULL, *f[NODE_FIELDS_MAX];
	napi_value o, arr, s;
	long len, i = 0;
	int nf = 0;

	(void)info;
	if (learn_fd >= 0) {
		/* The learning fork: the built-in handler, no environment
		 * but PWD, stdin /dev/null (relay-bootstrap.js). */
		napi_create_object(env, &o);
		napi_create_string_utf8(env, "", 0, &s);
		napi_set_named_property(env, o, "id", s);
		napi_set_named_property(env, o, "handler", s);
		napi_create_array_with_length(env, 0, &arr);
		napi_set_named_property(env, o, "env", arr);
		napi_get_boolean(env, true, &s);
		napi_set_named_property(env, o, "learn", s);
		return o;
	}
	len = relay_warm_slot_request(&msg);
	if (len <= 0)
		_exit(0);
	while (i < len && nf < NODE_FIELDS_MAX) {
		f[nf++] = msg + i;
		i += (long)strlen(msg + i) + 1;
	}
	if (nf < 6)
		_exit(1);
	return request_object(env, f, nf);
}

/* rehearse(): in H, before its request, and once in the server before
 * its first fork (relay-bootstrap.js rehearse()): a request object made
 * as request() makes one, from made-up fields, for nothing but the
 * pages its making touches (and, in the server, the code it compiles). */
static napi_value js_rehearse(napi_env env, napi_callback_info info)
{
	static const char *const f[] = {
		"R", "0", "0", "0", "0", "relay-rehearsal.none",
		"RELAY_HANDLER=relay-rehearsal.none", "RELAY_MESSAGE_ID=0-0",
		"PATH=/usr/bin:/bin", "HOME=/nonexistent", "LANG=C.UTF-8",
	};

	(void)info;
	if (in_invocation)
		rehearsed = 1;
	else
		server_rehearsed = 1;
	return request_object(env, f, (int)(sizeof(f) / sizeof(f[0])));
}

/* @x as a JavaScript number. */
static napi_value int32_value(napi_env env, int32_t x)
{
	napi_value v;

	napi_create_int32(env, x, &v);
	return v;
}

/* hugeText(): MiB of node's code and read-only data the server put on
 * huge pages (warm_node_huge.c; tests). */
static napi_value js_huge_text(napi_env env, napi_callback_info info)
{
	(void)info;
	return int32_value(env, (int32_t)huge_mib);
}

/* rehearsed(): 1 in an H that rehearsed before its request (tests; 0
 * elsewhere). */
static napi_value js_rehearsed(napi_env env, napi_callback_info info)
{
	(void)info;
	return int32_value(env, rehearsed);
}

/* serverRehearsed(): 1 where the server rehearsed before its first
 * fork (tests; 0 elsewhere). */
static napi_value js_server_rehearsed(napi_env env, napi_callback_info info)
{
	(void)info;
	return int32_value(env, server_rehearsed);
}

/* threads(): the threads of this process (tests: 1 in an H). */
static napi_value js_threads(napi_env env, napi_callback_info info)
{
	int q = quiet_threads();

	(void)info;
	return int32_value(env, q < 0 ? -1 : q + 1);
}

/* prefaulted(): the pages this invocation process populated before its
 * request (tests; 0 elsewhere). */
static napi_value js_prefaulted(napi_env env, napi_callback_info info)
{
	(void)info;
	return int32_value(env, (int32_t)prefaulted);
}

/* The warm protocol version (warm_proto.h) of this library. */
static napi_value js_version(napi_env env, napi_callback_info info)
{
	(void)info;
	return int32_value(env, RELAY_WARM_PROTO_VERSION);
}

napi_value napi_register_module_v1(napi_env env, napi_value exports)
{
	static const struct {
		const char *name;
		napi_callback fn;
	} fns[] = {
		{ "serve", js_serve },
		{ "afterFork", js_after_fork },
		{ "request", js_request },
		{ "setExitCode", js_set_exit_code },
		{ "threads", js_threads },
		{ "prefaulted", js_prefaulted },
		{ "rehearse", js_rehearse },
		{ "rehearsed", js_rehearsed },
		{ "serverRehearsed", js_server_rehearsed },
		{ "hugeText", js_huge_text },
		{ "protoVersion", js_version },
	};
	size_t i;
	napi_value f;

	for (i = 0; i < sizeof(fns) / sizeof(fns[0]); i++) {
		if (napi_create_function(env, fns[i].name, NAPI_AUTO_LENGTH,
					 fns[i].fn, NULL, &f) != napi_ok ||
		    napi_set_named_property(env, exports, fns[i].name, f) !=
			    napi_ok)
			return NULL;
	}
	return exports;
}
