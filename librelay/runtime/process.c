/*
 * process.c - the "process" backend, and what it shares with "bwrap".
 *
 * A handler runs as a plain child process: its own session and process
 * group, working directory the app directory, the clean environment of
 * relay__runtime_env(), resource limits applied before exec. No isolation
 * beyond that: it sees the host's filesystem, network and processes (see
 * doc/sandbox.md). Selected only explicitly (RELAY_SANDBOX=none).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pwd.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime.h"

int relay__builtin_init(relay__builtin *b, const char *name,
			const relay_runtime_options *opts, relay_error *err)
{
	relay_limits_mode want = opts ? opts->limits : RELAY_LIMITS_AUTO;
	int rc;

	relay_runtime_backend_init(&b->parent, RELAY_RUNTIME_BACKEND_VERSION);
	b->parent.name = name;
	b->parent.proc_size = sizeof(relay__builtin_proc);
	b->parent.signal = relay__builtin_signal;
	b->parent.release = relay__builtin_release;
	b->parent.free = relay__builtin_free;
	b->bootstrap_dir = relay__strdup(relay__runtime_bootstrap_dir(
		opts ? opts->bootstrap_dir : NULL));
	if (!b->bootstrap_dir)
		return relay__error_set(err, RELAY_ENOMEM, NULL, 0, 0,
					"out of memory");
	rc = relay__limits_new(&b->limits, want, err);
	return rc;
}

/*
 * A root host must not lend root to its handlers: a sandbox's uid 65534 is
 * mapped onto the host uid of whoever started bwrap, so bwrap is started
 * as @user instead. A non-root host keeps its own uid (it has nothing more
 * to give away).
 */
int relay__builtin_cred(relay__builtin *b, const char *user,
			relay_error *err)
{
	const struct passwd *pw;
	char *end;
	unsigned long n;

	memset(&b->cred, 0, sizeof(b->cred));
	if (geteuid() != 0)
		return 0;
	if (!user || !*user)
		user = "nobody";
	errno = 0;
	n = strtoul(user, &end, 10);
	if (*user >= '0' && *user <= '9' && *end == '\0' && errno == 0 &&
	    n == (uid_t)n) {
		pw = getpwuid((uid_t)n);
		b->cred.uid = (uid_t)n;
		b->cred.gid = pw ? pw->pw_gid : (gid_t)n;
	} else if ((pw = getpwnam(user))) {
		b->cred.uid = pw->pw_uid;
		b->cred.gid = pw->pw_gid;
	} else if (strcmp(user, "nobody") == 0) {
		b->cred.uid = b->cred.gid = 65534;  /* no passwd entry */
	} else {
		return relay__error_set(err, RELAY_EINVAL, NULL, 0, 0,
					"sandbox user \"%s\": no such user",
					user);
	}
	if (b->cred.uid == 0 || b->cred.gid == 0)
		return relay__error_set(err, RELAY_EINVAL, NULL, 0, 0,
					"sandbox user \"%s\": uid and gid must "
					"not be 0 (handlers never run as root)",
					user);
	b->cred.set = true;
	return 0;
}

const relay__cred *relay__builtin_app_cred(relay__builtin *b,
					   const char *app, relay_error *err)
{
	const relay__uid_ent *e;
	const char *one[1];

	if (b->uids.lo == 0)
		return &b->cred;
	e = relay__uids_find(&b->uids, app);
	if (e)
		return &e->cred;
	/* Not assigned ahead (relay_runtime_sandbox_assign()): now. */
	one[0] = app;
	if (relay__uids_assign(&b->uids, one, 1, NULL, NULL, err) != 0)
		return NULL;
	e = relay__uids_find(&b->uids, app);
	if (!e)
		relay__error_set(err, RELAY_ENOMEM, NULL, 0, 0,
				 "out of memory");
	return e ? &e->cred : NULL;
}

/*
 * Every process of an invocation is in the child's process group unless it
 * made its own session; those are caught by the cgroup (release) when
 * limits are on, or by the pid namespace under bwrap.
 */
int relay__builtin_signal(relay_runtime_backend *rb, relay_proc *proc,
			  int sig)
{
	(void)rb;
	if (kill(-proc->pid, sig) == 0)
		return 0;
	/* No such group: the child has not made its session yet (a warm
	 * exec invocation is reported before its setsid()), or is gone.
	 * Before setsid() it has no children, so the process is the
	 * invocation. */
	if (errno == ESRCH && (kill(proc->pid, sig) == 0 || errno == ESRCH))
		return 0;
	return RELAY_EBACKEND;
}

void relay__builtin_release(relay_runtime_backend *rb, relay_proc *proc)
{
	relay__builtin_proc *bp = (relay__builtin_proc *)proc;

	(void)rb;
	relay__limits_release(&bp->inv, &proc->oom_killed);
}

void relay__builtin_free(relay_runtime_backend *rb)
{
	relay__builtin *b = (relay__builtin *)rb;

	relay__limits_free(b->limits);
	relay__uids_free(&b->uids);
	relay__free(b->bootstrap_dir);
	relay__free(b->bwrap);
	relay__free(b->warm_exec);
	relay__free(b->warm_slot);
	relay__free(b);
}

static const char *env_path(const relay__strv *env)
{
	size_t i;

	for (i = 0; i < env->n; i++)
		if (strncmp(env->v[i], "PATH=", 5) == 0)
			return env->v[i] + 5;
	return NULL;
}

static int process_spawn(relay_runtime_backend *rb,
			 const relay_exec_spec *spec, relay_proc *proc,
			 relay_error *err)
{
	relay__builtin *b = (relay__builtin *)rb;
	relay__builtin_proc *bp = (relay__builtin_proc *)proc;
	relay__strv argv = { 0 }, env = { 0 };
	relay__spawn_req req = RELAY__SPAWN_REQ_INIT;
	char *path = NULL;
	int rc;

	relay__limits_inv_init(&bp->inv);
	rc = relay__runtime_argv(spec, b->bootstrap_dir, &argv, err);
	if (rc != 0)
		goto done;
	rc = relay__runtime_env(spec, &env);
	if (rc != 0) {
		relay__error_set(err, rc, NULL, 0, 0, "out of memory");
		goto done;
	}
	/* A name with a slash is a path (relative ones resolve in the app
	 * directory, the child's cwd); a bare name is looked up in the
	 * handler's PATH (its env's, else the default), not the host's. */
	if (strchr(argv.v[0], '/'))
		path = relay__strdup(argv.v[0]);
	else
		path = relay__runtime_which(argv.v[0], env_path(&env));
	if (!path) {
		rc = relay__error_set(err, RELAY_EBACKEND, NULL, 0, 0,
				      "spawn %s: command not found",
				      argv.v[0]);
		goto done;
	}
	rc = relay__limits_prepare(b->limits, spec, &bp->inv, err);
	if (rc != 0)
		goto done;
	req.path = path;
	req.argv = argv.v;
	req.envp = env.v;
	req.cwd = spec->app_dir;
	req.limits = &bp->inv;
	req.oom_adj = true;
	rc = relay__spawn(&req, proc, err);
	if (rc != 0)
		relay__limits_release(&bp->inv, NULL);
	else
		relay__limits_spawned(&bp->inv);
done:
	relay__free(path);
	relay__strv_free(&argv);
	relay__strv_free(&env);
	return rc;
}

int relay__runtime_process_new(relay_runtime_backend **out,
			       const relay_runtime_options *opts,
			       relay_error *err)
{
	relay__builtin *b = relay__calloc(1, sizeof(*b));
	int rc;

	if (!b)
		return relay__error_set(err, RELAY_ENOMEM, NULL, 0, 0,
					"out of memory");
	rc = relay__builtin_init(b, "process", opts, err);
	if (rc != 0) {
		relay__builtin_free(&b->parent);
		return rc;
	}
	b->parent.spawn = process_spawn;
	*out = &b->parent;
	return 0;
}
