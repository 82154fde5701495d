/*
 * limits.c - per-invocation resource limits: cgroups (v2 or v1) or rlimits.
 *
 * At runtime creation we find, for each controller we use (memory, pids,
 * cpu), a hierarchy where we may create children: the cgroup this process
 * is in (from /proc/self/cgroup) under the controller's mount (from
 * /proc/self/mounts), plus "relay-<pid>". That directory is created once;
 * each limited invocation gets "relay-<pid>/<n>", whose limit files are
 * written and whose cgroup.procs is opened by the parent, and which the
 * child joins (writing "0") between fork and exec, so even the first
 * instruction of the handler is accounted. After the child is reaped we
 * SIGKILL anything left in it (a handler's daemonised grandchildren) and
 * remove it.
 *
 * Fallback without a writable hierarchy: RLIMIT_AS for memory (address
 * space, a stricter measure than resident memory) and RLIMIT_NPROC for
 * pids (counted per real uid, and not enforced for root: see
 * doc/sandbox.md). cpus has no rlimit equivalent and is not enforced then.
 *
 * cgroup v2 is used only where the controllers are already enabled for
 * our cgroup's children (delegation, e.g. systemd Delegate=yes with the
 * daemon in a leaf) or can be enabled by writing cgroup.subtree_control.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "relay_config.h"
#include "runtime.h"

enum { CG_MEMORY, CG_PIDS, CG_CPU };
static const char *const cg_names[RELAY__CG_MAX] = { "memory", "pids", "cpu" };

static unsigned int next_id;

/* The leaf this process moved itself into (enable_ctls), and how many
 * runtimes use it: the last one freed moves back and removes it. */
static char *leaf_dir;
static char *leaf_parent;
static unsigned int leaf_users;

struct relay__limits {
	relay_limits_mode mode;
	char *base[RELAY__CG_MAX];  /* ".../relay-<pid>" per controller */
	unsigned int id;            /* distinguishes runtimes of a process */
	unsigned int seq;           /* invocation counter */
	char desc[128];
	char warn[512];             /* why cgroups serve less, or "" */
	bool in_leaf;               /* counted in leaf_users */
};

static int write_file(const char *dir, const char *file, const char *val)
{
	char path[512];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = write(fd, val, strlen(val));
	close(fd);
	return n == (ssize_t)strlen(val) ? 0 : -1;
}

static ssize_t read_file(const char *path, char *buf, size_t size)
{
	ssize_t n, total = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -1;
	while ((size_t)total + 1 < size) {
		n = read(fd, buf + total, size - 1 - (size_t)total);
		if (n <= 0)
			break;
		total += n;
	}
	close(fd);
	buf[total] = '\0';
	return total;
}

/*
 * /proc/self/@name. Test builds (-Dtest_hooks=true) read it from
 * $RELAY_TEST_PROC_SELF instead when that is set, so tests/runtime/
 * test_limits.c can fake a host's mounts and cgroup membership (a mixed
 * v1/v2 host, a read-only mount) that this machine does not have.
 */
static FILE *open_self(const char *name)
{
	char path[600];
	const char *dir = "/proc/self";
#if RELAY_TEST_HOOKS
	const char *t = getenv("RELAY_TEST_PROC_SELF");

	if (t && *t)
		dir = t;
#endif
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return fopen(path, "re");
}

/* Does comma-separated @list contain @word? */
static bool has_word(const char *list, const char *word)
{
	size_t wl = strlen(word);
	const char *p = list;

	while (p && *p) {
		const char *e = strchr(p, ',');
		size_t l = e ? (size_t)(e - p) : strlen(p);

		if (l == wl && strncmp(p, word, wl) == 0)
			return true;
		p = e ? e + 1 : NULL;
	}
	return false;
}

/* Mount point of the v1 hierarchy carrying @ctl, or of cgroup2 if @ctl is
 * NULL. New string or NULL. *@ro (if not NULL): mounted read-only. */
static char *find_mount(const char *ctl, bool *ro)
{
	char line[1024], dev[256], dir[512], type[64], opts[512];
	char *res = NULL;
	FILE *f = open_self("mounts");

	if (!f)
		return NULL;
	while (!res && fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%255s %511s %63s %511s", dev, dir, type,
			   opts) != 4)
			continue;
		if ((!ctl && strcmp(type, "cgroup2") == 0) ||
		    (ctl && strcmp(type, "cgroup") == 0 &&
		     has_word(opts, ctl))) {
			res = relay__strdup(dir);
			if (ro)
				*ro = has_word(opts, "ro");
		}
	}
	fclose(f);
	return res;
}

/* Our path in the hierarchy carrying @ctl (NULL: the v2 "0::" line).
 * Lines look like "4:memory:/a/b" (v1) or "0::/a/b" (v2). */
static char *own_path(const char *ctl)
{
	char line[1024];
	char *res = NULL;
	FILE *f = open_self("cgroup");

	if (!f)
		return NULL;
	while (!res && fgets(line, sizeof(line), f)) {
		char *ctls = strchr(line, ':'), *path;

		if (!ctls)
			continue;
		*ctls++ = '\0';
		path = strchr(ctls, ':');
		if (!path)
			continue;
		*path++ = '\0';
		path[strcspn(path, "\n")] = '\0';
		if (ctl ? has_word(ctls, ctl)
			: strcmp(line, "0") == 0 && *ctls == '\0')
			res = relay__strdup(path);
	}
	fclose(f);
	return res;
}

static int kill_members(const char *dir);

/* Remove @dir's invocation children (killing what is left in them), then
 * @dir itself. */
static void remove_tree(const char *dir)
{
	struct timespec ms = { 0, 100000000 };
	struct dirent *e;
	DIR *d = opendir(dir);
	int tries;

	while (d && (e = readdir(d))) {
		relay__limits_inv inv;

		if (e->d_type != DT_DIR || e->d_name[0] == '.')
			continue;
		relay__limits_inv_init(&inv);
		inv.cg_dir[0] = relay__sprintf("%s/%s", dir, e->d_name);
		inv.ncg = inv.cg_dir[0] ? 1 : 0;
		relay__limits_release(&inv, NULL);
	}
	if (d)
		closedir(d);
	/* Processes SIGKILLed above may take longer to leave than release
	 * waits on a slow machine; this runs once, at startup: wait ~2s. */
	for (tries = 0; tries < 20 && rmdir(dir) != 0 && errno == EBUSY;
	     tries++) {
		nanosleep(&ms, NULL);
		d = opendir(dir);
		while (d && (e = readdir(d)))
			if (e->d_type == DT_DIR && e->d_name[0] != '.') {
				char *sub = relay__sprintf("%s/%s", dir,
							   e->d_name);

				if (sub) {
					kill_members(sub);
					(void)rmdir(sub);
				}
				relay__free(sub);
			}
		if (d)
			closedir(d);
	}
}

/*
 * A relayd that crashed leaves its "relay-<pid>-<n>" directories behind
 * (bwrap sandboxes die with it, plain processes may not): remove those of
 * processes that no longer exist, once per hierarchy at startup.
 */
static void reap_stale(const char *parent)
{
	struct dirent *e;
	DIR *d = opendir(parent);

	while (d && (e = readdir(d))) {
		char *end, *dir;
		long pid;

		if (e->d_type != DT_DIR || strncmp(e->d_name, "relay-", 6))
			continue;
		pid = strtol(e->d_name + 6, &end, 10);
		if (pid <= 0 || *end != '-' || pid == (long)getpid() ||
		    kill((pid_t)pid, 0) == 0 || errno != ESRCH)
			continue;
		dir = relay__sprintf("%s/%s", parent, e->d_name);
		if (dir)
			remove_tree(dir);
		relay__free(dir);
	}
	if (d)
		closedir(d);
}

/* "<mount><own path>/relay-<pid>-<n>": unique per runtime of the process,
 * so several runtimes never share invocation directories. */
static char *make_base(const char *mnt, const char *path, unsigned int n)
{
	const char *p = strcmp(path, "/") == 0 ? "" : path;
	char *parent = relay__sprintf("%s%s", mnt, p);
	char *base = relay__sprintf("%s%s/relay-%ld-%u", mnt, p,
				    (long)getpid(), n);

	if (parent)
		reap_stale(parent);
	relay__free(parent);

	if (base && mkdir(base, 0755) != 0 && errno != EEXIST) {
		relay__free(base);
		return NULL;
	}
	return base;
}

static int probe_v1(relay__limits *l)
{
	int i, found = 0;

	for (i = 0; i < RELAY__CG_MAX; i++) {
		char *mnt = find_mount(cg_names[i], NULL);
		char *path = mnt ? own_path(cg_names[i]) : NULL;

		if (mnt && path)
			l->base[i] = make_base(mnt, path, l->id);
		found += l->base[i] != NULL;
		relay__free(mnt);
		relay__free(path);
	}
	return found;
}

/* Is @word one of the space-separated words of @list? */
static bool has_ctl(const char *list, const char *word)
{
	size_t wl = strlen(word);
	const char *p = list;

	while ((p = strstr(p, word)) != NULL) {
		if ((p == list || p[-1] == ' ') &&
		    (p[wl] == '\0' || p[wl] == ' ' || p[wl] == '\n'))
			return true;
		p += wl;
	}
	return false;
}

/* @cg's file @name (a space-separated controller list) into @buf; ""
 * when unreadable. */
static void read_ctls(const char *cg, const char *name, char *buf,
		      size_t size)
{
	char file[600];

	snprintf(file, sizeof(file), "%s/%s", cg, name);
	if (read_file(file, buf, size) < 0)
		buf[0] = '\0';
}

/* Does @cg's cgroup.procs list nothing but this process? */
static bool only_us(const char *cg)
{
	char file[600], buf[256];
	char *end;

	snprintf(file, sizeof(file), "%s/cgroup.procs", cg);
	if (read_file(file, buf, sizeof(buf)) <= 0)
		return false;
	return strtol(buf, &end, 10) == (long)getpid() &&
	       strspn(end, "\n") == strlen(end);
}

/* Does @cg's cgroup.procs list any process? */
static bool has_procs(const char *cg)
{
	char file[600], buf[8];

	snprintf(file, sizeof(file), "%s/cgroup.procs", cg);
	return read_file(file, buf, sizeof(buf)) > 0;
}

/*
 * cgroup v2's "no internal processes" rule: a cgroup holding processes
 * cannot enable domain controllers (memory) for its children, and
 * systemd starts a Delegate=yes service in its delegated cgroup itself.
 * The threaded ones (pids, cpu) it can enable, but that makes it a
 * thread root, below which no cgroup can enable anything (EOPNOTSUPP):
 * so a non-root cgroup with processes enables nothing. When it holds
 * this process alone, move it into a leaf of its own, "relay-<pid>-main"
 * (removed like the other directories of a dead pid at the next start),
 * and enable @want there; with other processes, fail with EBUSY. The
 * root cgroup has no such rule; @root (our path is "/") may be it, or
 * the root of a cgroup namespace, which is not: try, then as above.
 */
static int enable_ctls(const char *cg, bool root, const char *want)
{
	char *leaf;
	char buf[24];
	int rc, e;

	if (!has_procs(cg))
		return write_file(cg, "cgroup.subtree_control", want);
	if (root && write_file(cg, "cgroup.subtree_control", want) == 0)
		return 0;
	if (!only_us(cg)) {
		errno = EBUSY;
		return -1;
	}
	leaf = relay__sprintf("%s/relay-%ld-main", cg, (long)getpid());
	if (!leaf)
		return -1;
	snprintf(buf, sizeof(buf), "%ld", (long)getpid());
	rc = mkdir(leaf, 0755) == 0 || errno == EEXIST ? 0 : -1;
	if (rc == 0)
		rc = write_file(leaf, "cgroup.procs", buf);
	if (rc == 0)
		rc = write_file(cg, "cgroup.subtree_control", want);
	e = errno;
	if (rc == 0 && !leaf_dir) {
		leaf_dir = leaf;
		leaf_parent = relay__strdup(cg);
		leaf = NULL;
	}
	relay__free(leaf);
	errno = e;
	return rc;
}

/* Undo enable_ctls once no runtime uses the leaf: disable what it
 * enabled, move back, remove the leaf (each step may fail harmlessly,
 * e.g. while another library in this process uses the controllers).
 * Children started without limits (warm parents, just killed when their
 * runtime was freed) may still be leaving the leaf: wait for that ~2s. */
static void leaf_put(void)
{
	struct timespec ms = { 0, 100000000 };
	char buf[24];
	int tries;

	if (!leaf_dir || --leaf_users > 0)
		return;
	snprintf(buf, sizeof(buf), "%ld", (long)getpid());
	(void)write_file(leaf_parent, "cgroup.subtree_control",
			 "-memory -pids -cpu");
	if (write_file(leaf_parent, "cgroup.procs", buf) == 0)
		for (tries = 0; tries < 20 && rmdir(leaf_dir) != 0 &&
		     errno == EBUSY; tries++)
			nanosleep(&ms, NULL);
	relay__free(leaf_dir);
	relay__free(leaf_parent);
	leaf_dir = leaf_parent = NULL;
}

#define FIX_DELEGATE "delegate a cgroup to relayd (systemd: Delegate=yes)"

static void warn(relay__limits *l, const char *fmt, ...)
	RELAY__PRINTF(2, 3);

static void warn(relay__limits *l, const char *fmt, ...)
{
	va_list ap;

	if (l->warn[0])  /* the first reason is the one to fix */
		return;
	va_start(ap, fmt);
	vsnprintf(l->warn, sizeof(l->warn), fmt, ap);
	va_end(ap);
}

/*
 * Each reason cgroup v2 cannot serve a controller ends up in l->warn (one
 * line: what, then how to fix it), logged once as RELAY-RT09; what it
 * cannot serve falls back to rlimits (doc/sandbox.md, "Resource limits").
 */
static int probe_v2(relay__limits *l)
{
	char *mnt, *path = NULL, *cg = NULL, *base = NULL;
	char avail[256], on[256], want[64], leaf[48];
	const char *p, *slash;
	bool ro = false;
	int i, found = 0;

	mnt = find_mount(NULL, &ro);
	if (!mnt)
		return 0;
	path = own_path(NULL);
	if (!path)
		goto done;
	/* A second runtime of a process that moved itself into its leaf. */
	snprintf(leaf, sizeof(leaf), "/relay-%ld-main", (long)getpid());
	slash = strrchr(path, '/');
	if (slash && strcmp(slash, leaf) == 0)
		path[slash - path] = '\0';
	p = strcmp(path, "/") == 0 ? "" : path;
	cg = relay__sprintf("%s%s", mnt, p);
	if (!cg)
		goto done;
	if (ro) {
		warn(l, "cgroup v2: %s is mounted read-only (a container?): "
		     "mount it read-write or %s", mnt, FIX_DELEGATE);
		goto done;
	}
	read_ctls(cg, "cgroup.controllers", avail, sizeof(avail));
	want[0] = '\0';
	for (i = 0; i < RELAY__CG_MAX; i++) {
		bool v1 = false;
		char *m;

		if (has_ctl(avail, cg_names[i])) {
			snprintf(want + strlen(want),
				 sizeof(want) - strlen(want), "%s+%s",
				 want[0] ? " " : "", cg_names[i]);
			continue;
		}
		m = find_mount(cg_names[i], NULL);
		v1 = m != NULL;
		relay__free(m);
		if (v1)
			warn(l, "cgroup v2: the %s controller is bound to a "
			     "cgroup v1 hierarchy (a mixed v1/v2 host): boot "
			     "with systemd.unified_cgroup_hierarchy=1 for "
			     "cgroup v2 alone", cg_names[i]);
		else
			warn(l, "cgroup v2: the %s controller is not "
			     "delegated to %s (missing from its parent's "
			     "cgroup.subtree_control): %s", cg_names[i], cg,
			     FIX_DELEGATE);
	}
	if (!want[0])
		goto done;
	read_ctls(cg, "cgroup.subtree_control", on, sizeof(on));
	for (i = 0; i < RELAY__CG_MAX; i++)
		if (has_ctl(avail, cg_names[i]) && !has_ctl(on, cg_names[i]))
			break;
	if (i < RELAY__CG_MAX && enable_ctls(cg, !*p, want) != 0) {
		if (errno == EBUSY)
			warn(l, "cgroup v2: %s holds other processes, so it "
			     "cannot enable controllers for relayd's cgroups: "
			     "run relayd in a cgroup of its own (systemd: "
			     "Delegate=yes)", cg);
		else
			warn(l, "cgroup v2: cannot enable controllers in %s/"
			     "cgroup.subtree_control (%s): %s", cg,
			     strerror(errno), FIX_DELEGATE);
		goto done;
	}
	base = make_base(mnt, path, l->id);
	if (!base) {
		warn(l, "cgroup v2: cannot create a cgroup in %s (%s): %s", cg,
		     strerror(errno), FIX_DELEGATE);
		goto done;
	}
	if (write_file(base, "cgroup.subtree_control", want) != 0) {
		warn(l, "cgroup v2: cannot enable %s in %s (%s): %s", want,
		     base, strerror(errno), FIX_DELEGATE);
		read_ctls(base, "cgroup.subtree_control", on, sizeof(on));
	} else {
		snprintf(on, sizeof(on), "%s", avail);
	}
	for (i = 0; i < RELAY__CG_MAX; i++) {
		if (has_ctl(on, cg_names[i]) && has_ctl(avail, cg_names[i])) {
			l->base[i] = relay__strdup(base);
			found++;
		}
	}
	if (!found)
		(void)rmdir(base);
	if (found && leaf_dir && strcmp(leaf_parent, cg) == 0) {
		l->in_leaf = true;
		leaf_users++;
	}
done:
	relay__free(base);
	relay__free(cg);
	relay__free(path);
	relay__free(mnt);
	return found;
}

static void clear_bases(relay__limits *l)
{
	int i;

	/* Shared hierarchies share a base: a second rmdir is a no-op. */
	for (i = 0; i < RELAY__CG_MAX; i++) {
		if (l->base[i])
			(void)rmdir(l->base[i]);
		relay__free(l->base[i]);
		l->base[i] = NULL;
	}
}

int relay__limits_new(relay__limits **out, relay_limits_mode want,
		      relay_error *err)
{
	relay__limits *l = relay__calloc(1, sizeof(*l));
	int found = 0, i;

	if (!l)
		return relay__error_set(err, RELAY_ENOMEM, NULL, 0, 0,
					"out of memory");
	l->id = __atomic_add_fetch(&next_id, 1, __ATOMIC_RELAXED);
	if (want == RELAY_LIMITS_AUTO || want == RELAY_LIMITS_CGROUP_V2) {
		found = probe_v2(l);
		l->mode = RELAY_LIMITS_CGROUP_V2;
	}
	if (!found &&
	    (want == RELAY_LIMITS_AUTO || want == RELAY_LIMITS_CGROUP_V1)) {
		found = probe_v1(l);
		l->mode = RELAY_LIMITS_CGROUP_V1;
		/* A mixed host whose v1 hierarchies serve everything. */
		if (found == RELAY__CG_MAX)
			l->warn[0] = '\0';
	}
	if (!found && (want == RELAY_LIMITS_CGROUP_V1 ||
		       want == RELAY_LIMITS_CGROUP_V2)) {
		relay__error_set(err, RELAY_EBACKEND, NULL, 0, 0, "%s",
				 l->warn[0] ? l->warn
					    : "no writable cgroup hierarchy");
		clear_bases(l);
		relay__free(l);
		return RELAY_EBACKEND;
	}
	if (!found)
		l->mode = want == RELAY_LIMITS_NONE ? RELAY_LIMITS_NONE
						    : RELAY_LIMITS_RLIMIT;
	if (found) {
		bool have[RELAY__CG_MAX];

		for (i = 0; i < RELAY__CG_MAX; i++)
			have[i] = l->base[i] != NULL;
		relay__limits_desc_fmt(l->desc, sizeof(l->desc), l->mode,
				       have);
	} else {
		relay__limits_desc_fmt(l->desc, sizeof(l->desc), l->mode,
				       NULL);
	}
	*out = l;
	return 0;
}

/* "cgroup-v1 (memory, pids, cpu:rlimit)": controllers comma-separated. */
void relay__limits_desc_fmt(char *buf, size_t size, relay_limits_mode mode,
			    const bool *have)
{
	size_t off;
	int i;

	off = (size_t)snprintf(buf, size, "%s", relay_limits_mode_name(mode));
	if (!have || off >= size)
		return;
	for (i = 0; i < RELAY__CG_MAX && off < size; i++)
		off += (size_t)snprintf(buf + off, size - off, "%s%s%s",
					i ? ", " : " (", cg_names[i],
					have[i] ? "" : ":rlimit");
	if (off < size)
		snprintf(buf + off, size - off, ")");
}

void relay__limits_free(relay__limits *l)
{
	if (!l)
		return;
	clear_bases(l);
	if (l->in_leaf)
		leaf_put();
	relay__free(l);
}

relay_limits_mode relay__limits_mode(const relay__limits *l)
{
	return l->mode;
}

const char *relay__limits_describe(const relay__limits *l)
{
	return l->desc;
}

const char *relay__limits_warning(const relay__limits *l)
{
	return l->warn[0] ? l->warn : NULL;
}

/*
 * The ceiling of an invocation without resources.pids: only where a cgroup
 * serves pids. RLIMIT_NPROC counts every process of the real uid (all the
 * sandboxes of the sandbox user, and relayd's own threads when the
 * sandbox runs as relayd's uid), so as a default it would be a shared
 * quota again, smaller than the kernel's: doc/sandbox.md.
 */
uint32_t relay__limits_default_pids(const relay__limits *l)
{
	return l && l->mode != RELAY_LIMITS_NONE && l->base[CG_PIDS]
	       ? RELAY__RT_DEFAULT_PIDS : 0;
}

void relay__limits_inv_init(relay__limits_inv *inv)
{
	int i;

	memset(inv, 0, sizeof(*inv));
	for (i = 0; i < RELAY__CG_MAX; i++)
		inv->cg_procs_fd[i] = -1;
}

bool relay__limits_inv_needed(const relay__limits_inv *inv)
{
	return inv->ncg > 0 || inv->nrl > 0;
}

static void add_rlimit(relay__limits_inv *inv, int res, uint64_t v)
{
	inv->rl_res[inv->nrl] = res;
	inv->rl_val[inv->nrl].rlim_cur = (rlim_t)v;
	inv->rl_val[inv->nrl].rlim_max = (rlim_t)v;
	inv->nrl++;
}

/* Create the invocation cgroup for controller @i and write its limit. */
static int cg_create(relay__limits *l, relay__limits_inv *inv, int i,
		     const relay_exec_spec *spec, uint32_t pids,
		     unsigned int seq)
{
	bool v2 = l->mode == RELAY_LIMITS_CGROUP_V2;
	char val[64], procs[600];
	char *dir = relay__sprintf("%s/%u", l->base[i], seq);
	int k, rc = -1;

	if (!dir)
		return -1;
	/* Controllers sharing a hierarchy (all of them on v2, co-mounted
	 * ones on v1) share the invocation directory. */
	for (k = 0; k < inv->ncg; k++) {
		if (strcmp(inv->cg_dir[k], dir) == 0) {
			relay__free(dir);
			dir = inv->cg_dir[k];
			break;
		}
	}
	if (k == inv->ncg) {
		if (mkdir(dir, 0755) != 0) {
			relay__free(dir);
			return -1;
		}
		inv->cg_dir[inv->ncg] = dir;
		snprintf(procs, sizeof(procs), "%s/cgroup.procs", dir);
		inv->cg_procs_fd[inv->ncg] = open(procs, O_WRONLY | O_CLOEXEC);
		inv->ncg++;
		if (inv->cg_procs_fd[inv->ncg - 1] < 0)
			return -1;
	}
	if (i == CG_MEMORY) {
		inv->cg_memory_dir = dir;
		snprintf(val, sizeof(val), "%llu",
			 (unsigned long long)spec->memory_bytes);
		rc = write_file(dir, v2 ? "memory.max" : "memory.limit_in_bytes",
				val);
		/* No swapping around the limit (ignored if absent). */
		(void)write_file(dir, v2 ? "memory.swap.max"
					 : "memory.memsw.limit_in_bytes",
				 v2 ? "0" : val);
	} else if (i == CG_PIDS) {
		snprintf(val, sizeof(val), "%u", pids);
		rc = write_file(dir, "pids.max", val);
	} else {
		unsigned long quota = (unsigned long)spec->cpus_milli * 100ul;

		if (v2) {
			snprintf(val, sizeof(val), "%lu 100000", quota);
			rc = write_file(dir, "cpu.max", val);
		} else {
			snprintf(val, sizeof(val), "%lu", quota);
			rc = write_file(dir, "cpu.cfs_period_us", "100000");
			if (rc == 0)
				rc = write_file(dir, "cpu.cfs_quota_us", val);
		}
	}
	return rc;
}

int relay__limits_prepare(relay__limits *l, const relay_exec_spec *spec,
			  relay__limits_inv *inv, relay_error *err)
{
	bool want[RELAY__CG_MAX];
	unsigned int seq;
	uint32_t pids;
	int i;

	if (!l || l->mode == RELAY_LIMITS_NONE)
		return 0;
	pids = spec->pids ? spec->pids : relay__limits_default_pids(l);
	want[CG_MEMORY] = spec->memory_bytes > 0;
	want[CG_PIDS] = pids > 0;
	want[CG_CPU] = spec->cpus_milli > 0;
	seq = ++l->seq;
	for (i = 0; i < RELAY__CG_MAX; i++) {
		if (!want[i])
			continue;
		if (l->base[i]) {
			if (cg_create(l, inv, i, spec, pids, seq) != 0) {
				int e = errno;

				relay__limits_release(inv, NULL);
				return relay__error_set(err, RELAY_EBACKEND,
							NULL, 0, 0,
							"cgroup %s: %s",
							cg_names[i],
							strerror(e));
			}
		} else if (i == CG_MEMORY) {
			add_rlimit(inv, RLIMIT_AS, spec->memory_bytes);
		} else if (i == CG_PIDS) {
			add_rlimit(inv, RLIMIT_NPROC, pids);
		}
	}
	return 0;
}

int relay__limits_child(const relay__limits_inv *inv)
{
	int i;

	if (!inv)
		return 0;
	for (i = 0; i < inv->ncg; i++)
		if (write(inv->cg_procs_fd[i], "0", 1) != 1)
			return errno;
	for (i = 0; i < inv->nrl; i++)
		if (setrlimit(inv->rl_res[i], &inv->rl_val[i]) != 0)
			return errno;
	return 0;
}

int relay__limits_attach(const relay__limits_inv *inv, pid_t pid)
{
	char buf[24];
	int i, n = snprintf(buf, sizeof(buf), "%ld", (long)pid);

	for (i = 0; i < inv->ncg; i++)
		if (write(inv->cg_procs_fd[i], buf, (size_t)n) != n)
			return errno;
	return 0;
}

void relay__limits_spawned(relay__limits_inv *inv)
{
	int i;

	for (i = 0; i < RELAY__CG_MAX; i++) {
		if (inv->cg_procs_fd[i] >= 0)
			close(inv->cg_procs_fd[i]);
		inv->cg_procs_fd[i] = -1;
	}
}

/* Kill every process listed in @dir; returns how many were listed. */
static int kill_members(const char *dir)
{
	char path[600], buf[4096];
	char *p, *end;
	int n = 0;

	snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
	if (read_file(path, buf, sizeof(buf)) <= 0)
		return 0;
	for (p = buf; *p; p = end) {
		long pid = strtol(p, &end, 10);

		if (end == p)
			break;
		if (pid > 0) {
			(void)kill((pid_t)pid, SIGKILL);
			n++;
		}
	}
	return n;
}

static bool oom_seen(const char *dir)
{
	char path[600], buf[1024];
	const char *files[] = { "memory.events", "memory.oom_control" };
	size_t i;

	for (i = 0; i < RELAY__ARRAY_SIZE(files); i++) {
		char *p;

		snprintf(path, sizeof(path), "%s/%s", dir, files[i]);
		if (read_file(path, buf, sizeof(buf)) <= 0)
			continue;
		p = strstr(buf, "oom_kill ");
		if (p && strtol(p + 9, NULL, 10) > 0)
			return true;
	}
	return false;
}

/*
 * Killed processes leave the cgroup asynchronously and rmdir fails with
 * EBUSY until they have; retry for up to ~200ms (normally microseconds).
 */
void relay__limits_release(relay__limits_inv *inv, int *oom_killed)
{
	int i, tries;

	relay__limits_spawned(inv);
	for (i = 0; i < inv->ncg; i++) {
		if (oom_killed && inv->cg_dir[i] == inv->cg_memory_dir &&
		    inv->cg_memory_dir && oom_seen(inv->cg_memory_dir))
			*oom_killed = 1;
		for (tries = 0; tries < 200; tries++) {
			struct timespec ms = { 0, 1000000 };

			if (rmdir(inv->cg_dir[i]) == 0 || errno == ENOENT)
				break;
			if (errno != EBUSY)
				break;
			kill_members(inv->cg_dir[i]);
			nanosleep(&ms, NULL);
		}
		relay__free(inv->cg_dir[i]);
		inv->cg_dir[i] = NULL;
	}
	inv->ncg = 0;
	inv->cg_memory_dir = NULL;
}

const char *relay_limits_mode_name(relay_limits_mode m)
{
	switch (m) {
	case RELAY_LIMITS_AUTO:
		return "auto";
	case RELAY_LIMITS_CGROUP_V2:
		return "cgroup-v2";
	case RELAY_LIMITS_CGROUP_V1:
		return "cgroup-v1";
	case RELAY_LIMITS_RLIMIT:
		return "rlimit";
	case RELAY_LIMITS_NONE:
		return "none";
	}
	return "unknown";
}
