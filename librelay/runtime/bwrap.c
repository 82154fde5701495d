/*
 * bwrap.c - the "bwrap" backend: each handler in a bubblewrap sandbox.
 *
 * The sandbox (see doc/sandbox.md for the full list and its limits):
 * new user, pid, ipc, uts, net and (where available) cgroup namespaces;
 * the handler runs as uid/gid 65534 inside, and outside as the host uid
 * that started bwrap: the daemon's own, or, when the daemon is root, an
 * unprivileged one (b->cred, default nobody, or the app's own uid out of
 * a range: relay__builtin_app_cred); a read-only root built from
 * /usr, the merged-/usr symlinks and a short list of /etc files (never all
 * of /etc); a fresh /proc and minimal /dev; a private tmpfs /tmp; the app
 * directory read-only at /app (the working directory); the bootstrap
 * scripts read-only at /run/relay-bootstrap; no network unless the
 * template sets `network: true`; --die-with-parent so a dying daemon takes
 * its sandboxes along. Nothing of the daemon (its files, sockets, Redis,
 * environment, /proc) is reachable.
 *
 * bwrap itself is spawned like a "process" handler (new session, limits
 * joined before exec), so cgroup limits cover
 * the sandbox's own helper processes too: a pids limit is raised by
 * BWRAP_PIDS_OVERHEAD to pay for them.
 *
 * bwrap runs on the host before any namespace exists, so its own
 * environment is fixed (PATH only): the handler's variables, which a
 * template sets (LD_PRELOAD, LD_LIBRARY_PATH, ...), would otherwise steer
 * the host's dynamic loader in bwrap. They reach bwrap as --clearenv and
 * --setenv options read from a memfd (--args), never its command line,
 * which every local user can read in /proc, and bwrap sets them only
 * for what it executes inside the sandbox.
 *
 * Signals other than SIGKILL go to the processes inside the sandbox, not
 * to bwrap (bwrap_signal): the outer bwrap dies of a SIGTERM, and its
 * death SIGKILLs the sandbox, which would cancel the handler's grace.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "relay_config.h"
#include "runtime.h"

/* bwrap outside the namespace + its init inside (pid 1). */
#define BWRAP_PIDS_OVERHEAD 2u

/* /etc entries a handler may need (dynamic linker, TLS roots, name
 * resolution, users, time zone); the rest of /etc stays hidden. Of
 * /etc/ssl only the public parts: never /etc/ssl/private (host keys). */
static const char *const etc_files[] = {
	"/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d",
	"/etc/alternatives", "/etc/localtime", "/etc/ssl/certs",
	"/etc/ssl/openssl.cnf", "/etc/ssl/cert.pem", "/etc/ca-certificates", "/etc/resolv.conf", "/etc/hosts",
	"/etc/nsswitch.conf", "/etc/host.conf", "/etc/gai.conf",
	"/etc/passwd", "/etc/group", "/etc/mime.types",
};

/* Top-level entries that merged-/usr systems make symlinks into /usr. */
static const char *const usr_links[] = {
	"/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32",
};

static int push_root(relay__strv *a)
{
	size_t i;
	int rc = 0;

	rc |= relay__strv_push(a, "--ro-bind");
	rc |= relay__strv_push(a, "/usr");
	rc |= relay__strv_push(a, "/usr");
	for (i = 0; rc == 0 && i < RELAY__ARRAY_SIZE(usr_links); i++) {
		char target[256];
		struct stat st;
		ssize_t n;

		if (lstat(usr_links[i], &st) != 0)
			continue;
		if (S_ISLNK(st.st_mode)) {
			n = readlink(usr_links[i], target, sizeof(target) - 1);
			if (n <= 0)
				continue;
			target[n] = '\0';
			rc |= relay__strv_push(a, "--symlink");
			rc |= relay__strv_push(a, target);
		} else {
			rc |= relay__strv_push(a, "--ro-bind");
			rc |= relay__strv_push(a, usr_links[i]);
		}
		rc |= relay__strv_push(a, usr_links[i]);
	}
	for (i = 0; rc == 0 && i < RELAY__ARRAY_SIZE(etc_files); i++) {
		rc |= relay__strv_push(a, "--ro-bind-try");
		rc |= relay__strv_push(a, etc_files[i]);
		rc |= relay__strv_push(a, etc_files[i]);
	}
	return rc ? RELAY_ENOMEM : 0;
}

/*
 * The bwrap command line for @spec. @inner is the command to run inside
 * (NULL: the handler's own, relay__runtime_argv()); @warm adds what a warm
 * parent needs to give each invocation its own namespaces (see warm.c):
 * CAP_SYS_ADMIN within the sandbox's user namespace, which the invocation
 * drops before any handler code runs.
 */
static int build_argv(relay__builtin *b, const relay_exec_spec *spec,
		      const char *const *inner_cmd, bool warm, int args_fdno,
		      int info_fdno, relay__strv *a, relay_error *err)
{
	const relay__kind *kind = relay__kind_get(spec->runtime);
	relay__strv inner = { 0 };
	int rc = 0;
	size_t i;

	if (!kind)
		return relay__error_set(err, RELAY_EINVAL, NULL, 0, 0,
					"unknown runtime %d",
					(int)spec->runtime);
	rc |= relay__strv_push(a, b->bwrap);
	if (args_fdno >= 0) {
		/* The sandbox's environment (relay__bwrap_env_fd). */
		rc |= relay__strv_push(a, "--args");
		rc |= relay__strv_pushf(a, "%d", args_fdno);
	}
	if (info_fdno >= 0) {
		/* bwrap writes the sandbox's pid there once its namespaces
		 * exist (start_refused()). */
		rc |= relay__strv_push(a, "--info-fd");
		rc |= relay__strv_pushf(a, "%d", info_fdno);
	}
	rc |= relay__strv_push(a, "--unshare-all");
	if (spec->network)
		rc |= relay__strv_push(a, "--share-net");
	if (!warm && !b->no_disable_userns) {
		/* No user namespace inside (bwrap caps their number at the
		 * sandbox's own; the seccomp profile refuses them too). A
		 * warm parent's invocations make one each, then refuse the
		 * next by the profile (sandbox/seccomp_profile.h). */
		rc |= relay__strv_push(a, "--unshare-user");
		rc |= relay__strv_push(a, "--disable-userns");
	}
	rc |= relay__strv_push(a, "--die-with-parent");
	if (warm) {
		/* N's, dropped by every invocation process before its
		 * handler: SYS_ADMIN for an invocation's namespaces and
		 * mounts, SETPCAP to empty its bounding set (relay-warm-exec
		 * does it in the sandbox's user namespace). */
		rc |= relay__strv_push(a, "--cap-add");
		rc |= relay__strv_push(a, "CAP_SYS_ADMIN");
		rc |= relay__strv_push(a, "--cap-add");
		rc |= relay__strv_push(a, "CAP_SETPCAP");
	}
	rc |= relay__strv_push(a, "--uid");
	rc |= relay__strv_push(a, "65534");
	rc |= relay__strv_push(a, "--gid");
	rc |= relay__strv_push(a, "65534");
	rc |= relay__strv_push(a, "--hostname");
	rc |= relay__strv_push(a, "relay");
	if (rc == 0)
		rc = push_root(a);
	rc |= relay__strv_push(a, "--proc");
	rc |= relay__strv_push(a, "/proc");
	rc |= relay__strv_push(a, "--dev");
	rc |= relay__strv_push(a, "/dev");
	/* Every tmpfs sized (its pages are charged to relayd's memory
	 * cgroup, not to a process the OOM killer could pick): /tmp, a
	 * small /dev/shm, and bwrap's /dev itself, which --size cannot
	 * reach, read-only once /dev/shm is mounted on it. */
	rc |= relay__strv_push(a, "--size");
	rc |= relay__strv_pushf(a, "%llu", (unsigned long long)
				relay__spec_tmp_bytes(spec));
	rc |= relay__strv_push(a, "--tmpfs");
	rc |= relay__strv_push(a, "/tmp");
	rc |= relay__strv_push(a, "--size");
	rc |= relay__strv_pushf(a, "%llu", RELAY__RT_SHM_BYTES);
	rc |= relay__strv_push(a, "--tmpfs");
	rc |= relay__strv_push(a, "/dev/shm");
	rc |= relay__strv_push(a, "--remount-ro");
	rc |= relay__strv_push(a, "/dev");
	rc |= relay__strv_push(a, "--ro-bind");
	rc |= relay__strv_push(a, spec->app_dir);
	rc |= relay__strv_push(a, RELAY__SANDBOX_APP_DIR);
	if (kind->bootstrap || inner_cmd) {
		rc |= relay__strv_push(a, "--ro-bind");
		rc |= relay__strv_push(a, b->bootstrap_dir);
		rc |= relay__strv_push(a, RELAY__SANDBOX_BOOTSTRAP_DIR);
	}
	if (warm && kind->warm_exec_server && b->warm_exec) {
		rc |= relay__strv_push(a, "--ro-bind");
		rc |= relay__strv_push(a, b->warm_exec);
		rc |= relay__strv_push(a, RELAY__SANDBOX_WARM_EXEC);
	} else if (warm && inner_cmd && b->warm_slot) {
		/* The python3 server's slot loop (warm_slot.c). */
		rc |= relay__strv_push(a, "--ro-bind");
		rc |= relay__strv_push(a, b->warm_slot);
		rc |= relay__strv_push(a, RELAY__SANDBOX_WARM_SLOT);
	}
	/* The root tmpfs bwrap built everything on becomes read-only too. */
	rc |= relay__strv_push(a, "--remount-ro");
	rc |= relay__strv_push(a, "/");
	rc |= relay__strv_push(a, "--chdir");
	rc |= relay__strv_push(a, RELAY__SANDBOX_APP_DIR);
	rc |= relay__strv_push(a, "--");
	if (rc != 0)
		return relay__error_set(err, RELAY_ENOMEM, NULL, 0, 0,
					"out of memory");
	if (inner_cmd) {
		for (i = 0; rc == 0 && inner_cmd[i]; i++)
			rc = relay__strv_push(a, inner_cmd[i]);
		return rc;
	}
	rc = relay__runtime_argv(spec, RELAY__SANDBOX_BOOTSTRAP_DIR, &inner,
				 err);
	for (i = 0; rc == 0 && i < inner.n; i++)
		rc = relay__strv_push(a, inner.v[i]);
	relay__strv_free(&inner);
	return rc;
}

static const char host_path_kv[] = "PATH=" RELAY__RT_PATH;
static char *const host_env[] = { (char *)host_path_kv, NULL };

char *const *relay__bwrap_host_env(void)
{
	return host_env;
}

static int buf_arg(relay__buf *b, const char *s, size_t n)
{
	int rc = relay__buf_append(b, s, n);

	return rc == 0 ? relay__buf_append(b, "", 1) : rc;
}

int relay__bwrap_env_fd(char *const *env, int seccomp_fdno, int *out,
			relay_error *err)
{
	static const char clear[] = "--clearenv", set[] = "--setenv",
			  seccomp[] = "--seccomp";
	relay__buf b = { 0 };
	char num[16];
	size_t i;
	int rc;

	*out = -1;
	rc = buf_arg(&b, clear, sizeof(clear) - 1);
	if (rc == 0 && seccomp_fdno >= 0) {
		snprintf(num, sizeof(num), "%d", seccomp_fdno);
		rc = buf_arg(&b, seccomp, sizeof(seccomp) - 1);
		if (rc == 0)
			rc = buf_arg(&b, num, strlen(num));
	}
	for (i = 0; rc == 0 && env && env[i]; i++) {
		const char *eq = strchr(env[i], '=');

		if (!eq || eq == env[i])
			continue;
		rc = buf_arg(&b, set, sizeof(set) - 1);
		if (rc == 0)
			rc = buf_arg(&b, env[i], (size_t)(eq - env[i]));
		if (rc == 0)
			rc = buf_arg(&b, eq + 1, strlen(eq + 1));
	}
	if (rc != 0) {
		relay__buf_free(&b);
		return relay__error_set(err, RELAY_ENOMEM, NULL, 0, 0,
					"out of memory");
	}
	*out = relay__spawn_memfd("relay-sandbox-env", b.data, b.len);
	rc = errno;
	relay__buf_free(&b);
	if (*out < 0)
		return relay__error_set(err, RELAY_EBACKEND, NULL, 0, 0,
					"sandbox environment: %s",
					strerror(rc ? rc : EIO));
	return 0;
}

int relay__bwrap_fds(char *const *env, int args_fdno, bool warm_parent,
		     int *args_fd, int *seccomp_fd, relay_error *err)
{
	int rc;

	*args_fd = -1;
	rc = relay__sandbox_seccomp_fd(seccomp_fd, warm_parent, err);
	if (rc == 0)
		rc = relay__bwrap_env_fd(env, *seccomp_fd >= 0 ?
					 args_fdno + 1 : -1, args_fd, err);
	if (rc != 0 && *seccomp_fd >= 0) {
		close(*seccomp_fd);
		*seccomp_fd = -1;
	}
	return rc;
}

/* The pipe of bwrap's --info-fd: [0] ours (non-blocking), [1] bwrap's
 * (>= 10, as a spawn's passed descriptor must be). Both close-on-exec. */
static int info_pipe(int fds[2], relay_error *err)
{
	int p[2], w;

	if (pipe2(p, O_CLOEXEC | O_NONBLOCK) != 0)
		return relay__error_set(err, RELAY_EBACKEND, NULL, 0, 0,
					"pipe: %s", strerror(errno));
	w = fcntl(p[1], F_DUPFD_CLOEXEC, 10);
	close(p[1]);
	if (w < 0) {
		close(p[0]);
		return relay__error_set(err, RELAY_EBACKEND, NULL, 0, 0,
					"pipe: %s", strerror(errno));
	}
	fds[0] = p[0];
	fds[1] = w;
	return 0;
}

/*
 * The sandbox's bwrap is gone: did it make its namespaces? bwrap writes
 * {"child-pid": N} to its --info-fd right after the clone that creates
 * them, before anything of the handler runs; nothing there means the
 * clone (or what comes before it) failed, and whatever the stderr pipe
 * says came from bwrap itself, never from the handler.
 */
static void bwrap_release(relay_runtime_backend *rb, relay_proc *proc)
{
	relay__builtin_proc *bp = (relay__builtin_proc *)proc;

	if (bp->info_watch && bp->info_fd >= 0) {
		char c;

		bp->no_sandbox = read(bp->info_fd, &c, 1) != 1;
		close(bp->info_fd);
		bp->info_fd = -1;
	}
	relay__builtin_release(rb, proc);
}

bool relay__bwrap_start_refused(const relay_proc *proc, int wstatus,
				const char *tail, size_t len)
{
	const relay__builtin_proc *bp = (const relay__builtin_proc *)proc;
	const char *why[] = { strerror(EAGAIN), strerror(ENOMEM) };
	const char *line;
	size_t i, n, w;

	if (!bp->no_sandbox || !WIFEXITED(wstatus) || WEXITSTATUS(wstatus) != 1)
		return false;
	/* bwrap's last line: "bwrap: WHAT: strerror(errno)". */
	while (len > 0 && tail[len - 1] == '\n')
		len--;
	line = tail;
	for (i = 0; i < len; i++)
		if (tail[i] == '\n')
			line = tail + i + 1;
	n = (size_t)(tail + len - line);
	if (n < 7 || memcmp(line, "bwrap: ", 7) != 0)
		return false;
	for (i = 0; i < RELAY__ARRAY_SIZE(why); i++) {
		w = strlen(why[i]);
		if (n > w + 2 && memcmp(line + n - w, why[i], w) == 0 &&
		    memcmp(line + n - w - 2, ": ", 2) == 0)
			return true;
	}
	return false;
}

/*
 * Spawn @spec's sandbox running @inner (NULL: the handler). With @pooled
 * the per-invocation variables (RELAY_HANDLER, RELAY_MESSAGE_ID and the
 * trace context) are left out of the environment: a pre-started process
 * gets them on stdin.
 */
static int spawn_inner(relay__builtin *b, const relay_exec_spec *spec,
		       const char *const *inner, bool pooled, relay_proc *proc,
		       relay_error *err)
{
	relay__builtin_proc *bp = (relay__builtin_proc *)proc;
	relay__strv argv = { 0 }, env = { 0 };
	relay_exec_spec lim = *spec;
	relay__spawn_req req = RELAY__SPAWN_REQ_INIT;
	const relay__cred *cred;
	int rc, args_fd = -1, seccomp_fd = -1, info[2] = { -1, -1 };

	relay__limits_inv_init(&bp->inv);
	bp->info_fd = -1;
	cred = relay__builtin_app_cred(b, spec->app, err);
	if (!cred)
		return err ? err->code : RELAY_EINVAL;
	rc = relay__runtime_env(spec, &env);
	if (rc != 0) {
		relay__error_set(err, rc, NULL, 0, 0, "out of memory");
		goto done;
	}
	if (pooled) {
		size_t i, k = 0;

		for (i = 0; i < env.n; i++) {
			if (relay__runtime_per_invocation_var(env.v[i]))
				relay__free(env.v[i]);
			else
				env.v[k++] = env.v[i];
		}
		env.n = k;
		env.v[k] = NULL;
	}
	rc = relay__bwrap_fds(env.v, RELAY__SPAWN_ARGS_FDNO(-1), false,
			      &args_fd, &seccomp_fd, err);
	if (rc == 0 && !pooled)
		rc = info_pipe(info, err);
	if (rc == 0)
		rc = build_argv(b, spec, inner, false,
				RELAY__SPAWN_ARGS_FDNO(-1), info[1] < 0 ? -1 :
				RELAY__SPAWN_ARGS_FDNO(-1) + 1 +
				(seccomp_fd >= 0), &argv, err);
	if (rc != 0)
		goto done;
	if (!lim.pids)
		lim.pids = relay__limits_default_pids(b->limits);
	if (lim.pids)
		lim.pids += BWRAP_PIDS_OVERHEAD;
	rc = relay__limits_prepare(b->limits, &lim, &bp->inv, err);
	if (rc != 0)
		goto done;
	req.path = b->bwrap;
	req.argv = argv.v;
	req.envp = host_env;
	req.args_fd = args_fd;
	req.seccomp_fd = seccomp_fd;
	req.info_fd = info[1];
	req.oom_adj = true;
	req.cwd = "/";
	req.limits = &bp->inv;
	req.cred = cred;              /* unprivileged when the host is root */
	req.need_dir = spec->app_dir; /* bwrap must be able to bind it */
	rc = relay__spawn(&req, proc, err);
	if (rc != 0) {
		relay__limits_release(&bp->inv, NULL);
	} else {
		relay__limits_spawned(&bp->inv);
		bp->info_fd = info[0];
		bp->info_watch = true;
		info[0] = -1;
	}
done:
	if (info[0] >= 0)
		close(info[0]);
	if (info[1] >= 0)
		close(info[1]);
	if (args_fd >= 0)
		close(args_fd);
	if (seccomp_fd >= 0)
		close(seccomp_fd);
	relay__strv_free(&argv);
	relay__strv_free(&env);
	return rc;
}

static int bwrap_spawn(relay_runtime_backend *rb, const relay_exec_spec *spec,
		       relay_proc *proc, relay_error *err)
{
	return spawn_inner((relay__builtin *)rb, spec, NULL, false, proc, err);
}

/* ---- the warm capability (the backend's version 2 slot) ---------- */

static int warm_spawn_pooled(relay_runtime_backend *rb,
			     const relay_exec_spec *spec,
			     const char *const *inner, relay_proc *proc,
			     relay_error *err)
{
	return spawn_inner((relay__builtin *)rb, spec, inner, true, proc, err);
}

static int warm_spawn_parent(relay_runtime_backend *rb,
			     const relay_exec_spec *spec,
			     const char *const *inner, char *const *env,
			     int keep_fd, relay_proc *proc, relay_error *err)
{
	relay__builtin *b = (relay__builtin *)rb;
	relay__spawn_req req = RELAY__SPAWN_REQ_INIT;
	relay__strv argv = { 0 };
	const relay__cred *cred;
	int rc, args_fd = -1, seccomp_fd = -1;

	cred = relay__builtin_app_cred(b, spec->app, err);
	if (!cred)
		return err ? err->code : RELAY_EINVAL;
	rc = build_argv(b, spec, inner, true, RELAY__SPAWN_ARGS_FDNO(keep_fd),
			-1, &argv, err);
	if (rc != 0)
		goto done;
	rc = relay__bwrap_fds(env, RELAY__SPAWN_ARGS_FDNO(keep_fd), true,
			      &args_fd, &seccomp_fd, err);
	if (rc != 0)
		goto done;
	req.path = argv.v[0];
	req.argv = argv.v;
	req.envp = host_env;
	req.args_fd = args_fd;
	req.seccomp_fd = seccomp_fd;
	req.cwd = "/";
	req.keep_fd = keep_fd;
	req.oom_adj = true;           /* its invocations inherit it */
	/* The same host user as the app's cold sandboxes (never root). */
	req.cred = cred;
	req.need_dir = spec->app_dir;
	rc = relay__spawn(&req, proc, err);
done:
	if (args_fd >= 0)
		close(args_fd);
	if (seccomp_fd >= 0)
		close(seccomp_fd);
	relay__strv_free(&argv);
	return rc;
}

static const relay__cred *warm_app_cred(relay_runtime_backend *rb,
					const char *app, relay_error *err)
{
	return relay__builtin_app_cred((relay__builtin *)rb, app, err);
}

static relay__limits_inv *warm_proc_limits(relay_proc *proc)
{
	return &((relay__builtin_proc *)proc)->inv;
}

/* The warm interface lives in the backend (its pointers are per
 * backend); bwrap_warm() fills it at creation. */
typedef struct bwrap_backend {
	relay__builtin b;              /* must be first */
	relay_runtime_warm_iface warm;
} bwrap_backend;

static const relay_runtime_warm_iface *bwrap_warm(relay_runtime_backend *rb,
						  unsigned int version)
{
	bwrap_backend *bb = (bwrap_backend *)rb;

	return version == RELAY__WARM_IFACE_VERSION ? &bb->warm : NULL;
}

/*
 * A helper of the warm path: $@var, the installed @name, else the one of
 * this build tree (uninstalled builds and tests), if it is there with
 * @mode (access(2)). NULL: none.
 */
static char *find_helper(const char *var, const char *name, int mode)
{
	char inst[PATH_MAX], tree[PATH_MAX];
	const char *cand[3];
	size_t i;

	snprintf(inst, sizeof(inst), "%s/%s", RELAY_LIBEXECDIR, name);
	snprintf(tree, sizeof(tree), "%s/sandbox/%s",
		 RELAY_BUILD_ROOT, name);
	cand[0] = getenv(var);
	cand[1] = inst;
	cand[2] = tree;
	for (i = 0; i < RELAY__ARRAY_SIZE(cand); i++)
		if (cand[i] && cand[i][0] == '/' && access(cand[i], mode) == 0)
			return relay__strdup(cand[i]);
	return NULL;
}

/*
 * Can bwrap create its namespaces here? Run the real sandbox around
 * /usr/bin/true (blocking; once, at startup) and keep bwrap's complaint.
 */
static int probe(relay__builtin *b, relay_error *err)
{
	relay_exec_spec spec = RELAY_EXEC_SPEC_INIT;
	const char *argv[] = { "true", NULL };
	relay__strv a = { 0 };
	relay_proc proc;
	relay__spawn_req req = RELAY__SPAWN_REQ_INIT;
	relay__cred first = b->cred;
	char msg[200] = "";
	int rc, status = 0, args_fd = -1, seccomp_fd = -1;
	ssize_t n;

	spec.app = spec.handler = "probe";
	spec.app_dir = "/usr";
	spec.argv = argv;
	/* Exactly what handlers will get: the environment and the
	 * seccomp filter as descriptors (a bwrap without --args,
	 * --clearenv or --seccomp fails here, not at every spawn). */
	rc = relay__bwrap_fds(host_env, RELAY__SPAWN_ARGS_FDNO(-1), false,
			      &args_fd, &seccomp_fd, err);
	if (rc == 0)
		rc = build_argv(b, &spec, NULL, false,
				RELAY__SPAWN_ARGS_FDNO(-1), -1, &a, err);
	if (rc != 0)
		goto out;
	req.path = b->bwrap;
	req.argv = a.v;
	req.envp = host_env;
	req.args_fd = args_fd;
	req.seccomp_fd = seccomp_fd;
	req.cwd = "/";
	req.limits = NULL;
	/* Probe exactly what handlers will get: with a uid range, a uid of
	 * it (bwrap must be able to run as a uid without a passwd entry). */
	if (b->uids.lo) {
		first.set = true;
		first.uid = b->uids.lo;
		first.gid = (gid_t)b->uids.lo;
	}
	req.cred = &first;
	rc = relay__spawn(&req, &proc, err);
out:
	relay__strv_free(&a);
	if (args_fd >= 0)
		close(args_fd);
	if (seccomp_fd >= 0)
		close(seccomp_fd);
	if (rc != 0)
		return rc;
	close(proc.stdin_fd);
	while (waitpid(proc.pid, &status, 0) < 0 && errno == EINTR)
		;
	n = read(proc.stderr_fd, msg, sizeof(msg) - 1);
	msg[n > 0 ? n : 0] = '\0';
	msg[strcspn(msg, "\n")] = '\0';
	close(proc.stdout_fd);
	close(proc.stderr_fd);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return relay__error_set(err, RELAY_EBACKEND, NULL, 0, 0,
					"bwrap cannot run here: %s",
					*msg ? msg : "sandbox setup failed");
	return 0;
}

/*
 * Deliver @sig to the sandbox's processes rather than to bwrap. They stay
 * in bwrap's process group (bwrap is started as a session leader, so the
 * group id is proc->pid), so every group member but bwrap itself gets it;
 * the sandbox's init ignores it (an ancestor namespace cannot signal a
 * pid-namespace init that set no handler). SIGKILL, or a sandbox with
 * nobody in it yet, goes to the whole group as in the "process" backend.
 */
static int bwrap_signal(relay_runtime_backend *rb, relay_proc *proc, int sig)
{
	DIR *d;
	struct dirent *de;
	int sent = 0;

	if (sig == SIGKILL || !(d = opendir("/proc")))
		return relay__builtin_signal(rb, proc, sig);
	while ((de = readdir(d))) {
		char path[64], buf[512], *p;
		long pid = strtol(de->d_name, &p, 10), pgrp;
		FILE *f;

		if (pid <= 0 || *p || pid == (long)proc->pid)
			continue;
		snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
		f = fopen(path, "re");
		if (!f)
			continue;
		p = fgets(buf, sizeof(buf), f);
		fclose(f);
		/* "pid (comm) state ppid pgrp ...": comm may hold anything,
		 * so parse after its last ')'. */
		if (!p || !(p = strrchr(buf, ')')) ||
		    sscanf(p + 1, " %*c %*d %ld", &pgrp) != 1 ||
		    pgrp != (long)proc->pid)
			continue;
		if (kill((pid_t)pid, sig) == 0)
			sent++;
	}
	closedir(d);
	if (sent == 0)
		return relay__builtin_signal(rb, proc, sig);
	return 0;
}

int relay__runtime_bwrap_new(relay_runtime_backend **out,
			     const relay_runtime_options *opts,
			     relay_error *err)
{
	bwrap_backend *bb = relay__calloc(1, sizeof(*bb));
	relay__builtin *b = bb ? &bb->b : NULL;
	relay_error perr = { 0 };
	int rc;

	if (!b)
		return relay__error_set(err, RELAY_ENOMEM, NULL, 0, 0,
					"out of memory");
	rc = relay__builtin_init(b, "bwrap", opts, err);
	if (rc != 0)
		goto fail;
	b->parent.spawn = bwrap_spawn;
	b->parent.signal = bwrap_signal;
	b->parent.release = bwrap_release;
	rc = relay__builtin_cred(b, opts && opts->version >= 2 ?
				 opts->sandbox_user : NULL, err);
	/* A uid per app: only a root host can switch to them. */
	if (rc == 0 && b->cred.set && opts && opts->version >= 3)
		rc = relay__uids_init(&b->uids, opts->sandbox_uids, err);
	if (rc != 0)
		goto fail;
	/* relay-warm-exec, the warm parent of exec apps (without it they
	 * use the python3 server); relay-warm-slot.so, the python3
	 * server's slot loop (without it warm parents cannot start and
	 * invocations run cold). */
	b->warm_exec = find_helper("RELAY_WARM_EXEC", "relay-warm-exec", X_OK);
	b->warm_slot = find_helper("RELAY_WARM_SLOT", "relay-warm-slot.so",
				   R_OK);
	b->bwrap = relay__runtime_which("bwrap", NULL);
	if (!b->bwrap) {
		rc = relay__error_set(err, RELAY_EBACKEND, NULL, 0, 0,
				      "bwrap not found in %s", RELAY__RT_PATH);
		goto fail;
	}
	rc = probe(b, &perr);
	if (rc != 0 && strstr(perr.text, "disable-userns")) {
		/* A bwrap before 0.8: the seccomp profile alone keeps
		 * handlers from user namespaces. */
		b->no_disable_userns = true;
		rc = probe(b, &perr);
	}
	if (rc != 0) {
		if (err)
			*err = perr;
		goto fail;
	}
	b->parent.warm = bwrap_warm;
	bb->warm.version = RELAY__WARM_IFACE_VERSION;
	bb->warm.exec_server = b->warm_exec;
	bb->warm.app_cred = warm_app_cred;
	bb->warm.limits = b->limits;
	bb->warm.proc_limits = warm_proc_limits;
	bb->warm.spawn_parent = warm_spawn_parent;
	bb->warm.spawn_pooled = warm_spawn_pooled;
	*out = &b->parent;
	return 0;
fail:
	relay__builtin_free(&b->parent);
	return rc;
}
