/*
 * warm_fresh.h - what both warm helpers (relay-warm-slot.so, warm_slot.c,
 * and relay-warm-exec, warm_exec.c) do so that an invocation gets what a
 * cold sandbox gives it and nothing another invocation of the same warm
 * parent touched (doc/sandbox.md, "Warm sandboxes"):
 *
 *  - its own /dev, rebuilt from the one bwrap made: bwrap's --dev is one
 *    tmpfs, writable by the handler's uid, that every process of the
 *    sandbox shares through the mount namespaces copied from it. A file
 *    left there, a replaced /dev/fd symlink or a chmod of /dev/pts would
 *    be seen by later invocations.
 *  - python3 (warm_slot.c) only: its own user namespace (the same uid
 *    and gid, mapped onto themselves), so its user and user-session
 *    keyrings are new (where seccomp.c leaves the keyring at all): the
 *    kernel keeps one per user namespace and uid, and every invocation of
 *    a parent is in the parent's; and a new session keyring when it
 *    inherited one.
 *
 * Header-only (static inline), like warm_proto.h: both helpers link
 * nothing of librelay. Only libc and raw syscalls.
 */
#ifndef RELAY_WARM_FRESH_H
#define RELAY_WARM_FRESH_H

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <linux/keyctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/xattr.h>
#include <unistd.h>

#define RELAY__WARM_DEV_MAX 32          /* entries of bwrap's /dev: 15 */
#define RELAY__WARM_DEVPTS_MAGIC 0x1cd1 /* DEVPTS_SUPER_MAGIC */
#define RELAY__WARM_TMPFS_MAGIC 0x01021994 /* TMPFS_MAGIC */
/* bwrap's options for /dev and /dev/pts (see a cold sandbox's
 * mountinfo); a new devpts instance each time, so no pty and no mode
 * of an earlier one is seen. */
#define RELAY__WARM_DEV_OPTS "mode=755"
#define RELAY__WARM_DEVPTS_OPTS "newinstance,ptmxmode=0666,mode=620"

/* One entry of bwrap's /dev, in the order bwrap made them (readdir's). */
struct relay__warm_dev_ent {
	char name[32];
	mode_t mode;            /* type and permissions */
	int node;               /* O_PATH of a device node (bound), or -1 */
	int devpts;             /* a directory with devpts mounted on it */
	unsigned long long tmpfs; /* a directory with a tmpfs of its own
				     mounted on it (/dev/shm): its size in
				     bytes; 0: none */
	char link[64];          /* a symlink's target */
	/* the rebuilt entry, as made: what a later check compares */
	ino_t ino;
	struct timespec mtime, ctime;
	uid_t uid;
	gid_t gid;
};

struct relay__warm_dev {
	int n;
	struct relay__warm_dev_ent e[RELAY__WARM_DEV_MAX];
	struct stat root;       /* /dev as rebuilt */
	struct stat ptmx;       /* /dev/pts/ptmx as rebuilt (st_ino 0: none) */
	int ro;                 /* bwrap's /dev is read-only */
};

/*
 * The options of a tmpfs that copies the one mounted on @dir now: "mode=
 * M" with @mode and, when @dir is a tmpfs, its size ("size=B"), so every
 * invocation's /tmp has the size bwrap gave the sandbox's (resources.tmp;
 * doc/sandbox.md). @buf gets them; 0, or -1 with errno.
 */
static inline int relay__warm_tmpfs_opts(const char *dir, unsigned int mode,
					 char *buf, size_t size)
{
	struct statfs sf;
	int n;

	if (statfs(dir, &sf) != 0)
		return -1;
	if (sf.f_type == RELAY__WARM_TMPFS_MAGIC)
		n = snprintf(buf, size, "mode=%o,size=%llu", mode,
			     (unsigned long long)sf.f_blocks *
			     (unsigned long long)sf.f_bsize);
	else
		n = snprintf(buf, size, "mode=%o", mode);
	if (n < 0 || (size_t)n >= size) {
		errno = ENAMETOOLONG;
		return -1;
	}
	return 0;
}

/*
 * Learn bwrap's /dev (still mounted, untouched by any handler): every
 * entry's name, type and mode, a symlink's target, and for a device node
 * an O_PATH descriptor (close-on-exec) to bind it again later. 0, or -1
 * with errno.
 */
static inline int relay__warm_dev_learn(struct relay__warm_dev *d)
{
	struct dirent *de;
	DIR *dir;
	int fd, e = 0;

	struct statvfs vf;
	struct stat root;

	memset(d, 0, sizeof(*d));
	if (statvfs("/dev", &vf) != 0 || stat("/dev", &root) != 0)
		return -1;
	d->ro = (vf.f_flag & ST_RDONLY) != 0;
	dir = opendir("/dev");
	if (!dir)
		return -1;
	fd = dirfd(dir);
	while ((de = readdir(dir)) != NULL) {
		struct relay__warm_dev_ent *x;
		struct statfs sf;
		struct stat st;
		ssize_t l;

		if (strcmp(de->d_name, ".") == 0 ||
		    strcmp(de->d_name, "..") == 0)
			continue;
		if (d->n == RELAY__WARM_DEV_MAX) {
			e = ENOSPC;
			break;
		}
		if (strlen(de->d_name) >= sizeof(x->name)) {
			e = ENAMETOOLONG;
			break;
		}
		if (fstatat(fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
			e = errno;
			break;
		}
		x = &d->e[d->n++];
		memcpy(x->name, de->d_name, strlen(de->d_name) + 1);
		x->mode = st.st_mode;
		x->node = -1;
		if (S_ISLNK(st.st_mode)) {
			l = readlinkat(fd, de->d_name, x->link,
				       sizeof(x->link) - 1);
			if (l < 0 || (size_t)l >= sizeof(x->link) - 1) {
				e = l < 0 ? errno : ENAMETOOLONG;
				break;
			}
			x->link[l] = '\0';
		} else if (S_ISDIR(st.st_mode)) {
			char path[300];

			snprintf(path, sizeof(path), "/dev/%s", de->d_name);
			int fs = statfs(path, &sf) == 0;

			x->devpts = fs && sf.f_type == RELAY__WARM_DEVPTS_MAGIC;
			/* A mount of its own (bwrap's --tmpfs /dev/shm). */
			if (fs && !x->devpts && st.st_dev != root.st_dev &&
			    sf.f_type == RELAY__WARM_TMPFS_MAGIC)
				x->tmpfs = (unsigned long long)sf.f_blocks *
					   (unsigned long long)sf.f_bsize;
		} else {
			x->node = openat(fd, de->d_name,
					 O_PATH | O_NOFOLLOW | O_CLOEXEC);
			if (x->node < 0) {
				e = errno;
				break;
			}
		}
	}
	closedir(dir);
	if (e) {
		/* Nothing learnt: the nodes opened so far are closed. */
		while (d->n > 0)
			if (d->e[--d->n].node >= 0)
				close(d->e[d->n].node);
		errno = e;
		return -1;
	}
	return 0;
}

/*
 * In a new mount namespace (a copy of the one relay__warm_dev_learn()
 * ran in, bwrap's /dev still on top): the device nodes opened again in
 * it. A bind mount's source must be a mount of the caller's namespace,
 * and the learnt descriptors are of the copy's origin. Those are left
 * open (close-on-exec; the caller closes its inherited descriptors
 * anyway). 0, or -1.
 */
static inline int relay__warm_dev_reopen(struct relay__warm_dev *d)
{
	int i;

	for (i = 0; i < d->n; i++) {
		char path[48];

		if (d->e[i].node < 0)
			continue;
		snprintf(path, sizeof(path), "/dev/%s", d->e[i].name);
		d->e[i].node = open(path, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		if (d->e[i].node < 0)
			return -1;
	}
	return 0;
}

/* Record the rebuilt /dev: what relay__warm_dev_changed() compares. */
static inline int relay__warm_dev_stamp(struct relay__warm_dev *d)
{
	struct stat st;
	int i;

	if (stat("/dev", &d->root) != 0)
		return -1;
	if (stat("/dev/pts/ptmx", &d->ptmx) != 0)
		memset(&d->ptmx, 0, sizeof(d->ptmx));
	for (i = 0; i < d->n; i++) {
		char path[48];

		snprintf(path, sizeof(path), "/dev/%s", d->e[i].name);
		if (lstat(path, &st) != 0)
			return -1;
		d->e[i].ino = st.st_ino;
		d->e[i].mtime = st.st_mtim;
		d->e[i].ctime = st.st_ctim;
		d->e[i].uid = st.st_uid;
		d->e[i].gid = st.st_gid;
	}
	return 0;
}

/*
 * Mount a fresh /dev as bwrap made it: a tmpfs (mode 0755, nosuid,
 * nodev), each device node bound from bwrap's (so its mount flags are
 * bwrap's), the same symlinks, empty directories (/dev/shm among them,
 * unless bwrap mounted a tmpfs on it, which is mounted again with its
 * size), a new devpts instance on /dev/pts, and /dev made read-only when
 * bwrap's was. With @detach, the /dev this function mounted before is
 * detached first (with whatever an invocation left in it). Needs a /proc
 * of the caller's (the nodes are bound through /proc/self/fd) and
 * CAP_SYS_ADMIN over the mount namespace. A caller that checks it later
 * records it then (relay__warm_dev_stamp()). 0, or -1 with errno.
 */
static inline int relay__warm_dev_build(struct relay__warm_dev *d,
					int detach)
{
	int i;

	if (detach && umount2("/dev", MNT_DETACH) != 0)
		return -1;
	if (mount("tmpfs", "/dev", "tmpfs", MS_NOSUID | MS_NODEV,
		  RELAY__WARM_DEV_OPTS) != 0)
		return -1;
	/* Newest first is tmpfs's listing order: made in reverse, the
	 * entries list in bwrap's order. */
	for (i = d->n - 1; i >= 0; i--) {
		const struct relay__warm_dev_ent *x = &d->e[i];
		char path[48], src[40];

		snprintf(path, sizeof(path), "/dev/%s", x->name);
		if (S_ISLNK(x->mode)) {
			if (symlink(x->link, path) != 0)
				return -1;
			continue;
		}
		if (S_ISDIR(x->mode)) {
			if (mkdir(path, x->mode & 07777) != 0 ||
			    chmod(path, x->mode & 07777) != 0)
				return -1;
			if (x->devpts &&
			    mount("devpts", path, "devpts",
				  MS_NOSUID | MS_NOEXEC,
				  RELAY__WARM_DEVPTS_OPTS) != 0)
				return -1;
			continue;
		}
		/* A mount point for the node, then the node bound on it. */
		if (mknod(path, S_IFREG | 0444, 0) != 0)
			return -1;
		snprintf(src, sizeof(src), "/proc/self/fd/%d", x->node);
		if (mount(src, path, NULL, MS_BIND, NULL) != 0)
			return -1;
	}
	/* The sized tmpfs mounts last, as bwrap mounts them after /dev. */
	for (i = 0; i < d->n; i++) {
		const struct relay__warm_dev_ent *x = &d->e[i];
		char path[48], opt[64];

		if (!x->tmpfs)
			continue;
		snprintf(path, sizeof(path), "/dev/%s", x->name);
		snprintf(opt, sizeof(opt), "mode=%o,size=%llu",
			 (unsigned)(x->mode & 07777), x->tmpfs);
		if (mount("tmpfs", path, "tmpfs", MS_NOSUID | MS_NODEV,
			  opt) != 0)
			return -1;
	}
	if (d->ro && mount(NULL, "/dev", NULL, MS_REMOUNT | MS_BIND |
			   MS_RDONLY | MS_NOSUID | MS_NODEV, NULL) != 0)
		return -1;
	return 0;
}

static inline int relay__warm_same_time(const struct timespec *a,
					const struct timespec *b)
{
	return a->tv_sec == b->tv_sec && a->tv_nsec == b->tv_nsec;
}

/* Is @dir empty, with no extended attribute? */
static inline int relay__warm_dir_pristine(const char *dir)
{
	struct dirent *e;
	ssize_t nx;
	DIR *d;
	int empty = 1;

	nx = listxattr(dir, NULL, 0);
	if (nx > 0 || (nx < 0 && errno != ENOTSUP && errno != EOPNOTSUPP))
		return 0;
	d = opendir(dir);
	if (!d)
		return 0;
	while (empty && (e = readdir(d)) != NULL)
		if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
			empty = 0;
	closedir(d);
	return empty;
}

/*
 * Did an invocation change the /dev relay__warm_dev_build() made? An
 * entry made, removed or replaced (the names and inode numbers in order:
 * a new entry is a new inode, so a change within the kernel's timestamp
 * tick is seen too), a mode, owner, time or attribute of /dev, an entry,
 * /dev/pts or its ptmx, or anything in /dev/shm. Device nodes are the
 * host's (bound): only that they are still the same ones is compared.
 * Access times are not (reading /dev is no change). 1 when changed or
 * when it cannot tell.
 */
static inline int relay__warm_dev_changed(const struct relay__warm_dev *d)
{
	struct dirent *de;
	struct stat st;
	DIR *dir;
	int i = 0, changed = 0;
	ssize_t nx;

	if (stat("/dev", &st) != 0 || st.st_ino != d->root.st_ino ||
	    st.st_mode != d->root.st_mode || st.st_uid != d->root.st_uid ||
	    st.st_gid != d->root.st_gid ||
	    !relay__warm_same_time(&st.st_mtim, &d->root.st_mtim) ||
	    !relay__warm_same_time(&st.st_ctim, &d->root.st_ctim))
		return 1;
	nx = listxattr("/dev", NULL, 0);
	if (nx > 0 || (nx < 0 && errno != ENOTSUP && errno != EOPNOTSUPP))
		return 1;
	dir = opendir("/dev");
	if (!dir)
		return 1;
	while (!changed && (de = readdir(dir)) != NULL) {
		const struct relay__warm_dev_ent *x;

		if (strcmp(de->d_name, ".") == 0 ||
		    strcmp(de->d_name, "..") == 0)
			continue;
		if (i == d->n) {
			changed = 1;
			break;
		}
		x = &d->e[i++];
		if (strcmp(de->d_name, x->name) != 0 ||
		    fstatat(dirfd(dir), x->name, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
		    st.st_ino != x->ino || st.st_mode != x->mode ||
		    st.st_uid != x->uid || st.st_gid != x->gid) {
			changed = 1;
			break;
		}
		if (x->node < 0 &&
		    (!relay__warm_same_time(&st.st_mtim, &x->mtime) ||
		     !relay__warm_same_time(&st.st_ctim, &x->ctime)))
			changed = 1;
		/* An empty directory stays empty (/dev/shm; devpts drops a
		 * pty when its last holder closes it). */
		if (!changed && S_ISDIR(x->mode) && !x->devpts) {
			char path[48];

			snprintf(path, sizeof(path), "/dev/%s", x->name);
			changed = !relay__warm_dir_pristine(path);
		}
	}
	closedir(dir);
	if (changed || i != d->n)
		return 1;
	if (d->ptmx.st_ino == 0)
		return 0;
	return stat("/dev/pts/ptmx", &st) != 0 ||
	       st.st_ino != d->ptmx.st_ino || st.st_mode != d->ptmx.st_mode ||
	       st.st_uid != d->ptmx.st_uid || st.st_gid != d->ptmx.st_gid ||
	       !relay__warm_same_time(&st.st_ctim, &d->ptmx.st_ctim);
}

/*
 * Empty the capability bounding set, as bwrap empties a cold handler's:
 * up to the last capability this kernel knows (EINVAL after it). 0, or
 * -1 with errno.
 */
static inline int relay__warm_drop_bounding(void)
{
	int i;

	for (i = 0; i < 64; i++)
		if (prctl(PR_CAPBSET_DROP, i, 0, 0, 0) != 0) {
			if (errno == EINVAL)
				break;
			return -1;
		}
	return 0;
}

/*
 * In a new invocation process, before it drops its capabilities: a user
 * namespace of its own, in which its uid and gid are the same numbers,
 * mapped onto themselves (so files, /proc and the handler's ids look as
 * before). Its user and user-session keyrings are then new and die with
 * it (a session keyring it inherited is replaced by a new one), and it
 * holds no capability over the namespaces of the process that forked
 * it. setgroups is denied in it, as bwrap denies it in the
 * sandbox's, and its capability bounding set is emptied, as bwrap
 * empties a cold handler's. 0, or -1 with errno.
 */
static inline int relay__warm_own_userns(void)
{
	static const char *const file[3] = { "/proc/self/setgroups",
					     "/proc/self/uid_map",
					     "/proc/self/gid_map" };
	char line[3][48];
	unsigned uid = (unsigned)getuid(), gid = (unsigned)getgid();
	int i, fd, len;

	snprintf(line[0], sizeof(line[0]), "deny");
	snprintf(line[1], sizeof(line[1]), "%u %u 1", uid, uid);
	snprintf(line[2], sizeof(line[2]), "%u %u 1", gid, gid);
	if (unshare(CLONE_NEWUSER) != 0)
		return -1;
	for (i = 0; i < 3; i++) {
		fd = open(file[i], O_WRONLY | O_CLOEXEC);
		if (fd < 0)
			return -1;
		len = (int)strlen(line[i]);
		if (write(fd, line[i], (size_t)len) != len) {
			int e = errno;

			close(fd);
			errno = e;
			return -1;
		}
		close(fd);
	}
	/* A session keyring the sandbox inherited (relayd's: a service
	 * manager may give it one) every invocation could write to: a new,
	 * empty one instead. Without one, the session keyring is the user
	 * namespace's user-session keyring, already new. */
	if (syscall(SYS_keyctl, KEYCTL_GET_KEYRING_ID,
		    KEY_SPEC_SESSION_KEYRING, 0) !=
		    syscall(SYS_keyctl, KEYCTL_GET_KEYRING_ID,
			    KEY_SPEC_USER_SESSION_KEYRING, 0) &&
	    syscall(SYS_keyctl, KEYCTL_JOIN_SESSION_KEYRING, NULL) < 0)
		return -1;
	/* A new user namespace starts with a full bounding set. */
	return relay__warm_drop_bounding();
}

#endif
