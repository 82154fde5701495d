/*
 * appset.c - every app under an apps directory, and the one ruleset that
 * matches an event against all of them.
 *
 * Dispatch order is a contract (doc/behaviour.md B-60): apps in sorted name
 * order, each app's rules in declaration order. We get it for free by
 * sorting the entries bytewise (strcmp, i.e. the C locale, so the order
 * does not depend on the host's LC_COLLATE) and adding rules to the
 * ruleset in that order: rule ids then grow in dispatch order, and the
 * matcher returns ids ascending.
 *
 * An invalid app is kept as an entry with its diagnostics and no app, so
 * `relayctl app ls` and relayd's health can say why it is missing; its
 * rules are simply not in the ruleset. The ruleset and the id map are
 * built by rebuild(), separate from loading, so that replacing one entry
 * (reload of one app) only has to swap that entry and rebuild.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "app.h"

/* What identifies one version of a template file on disk. */
typedef struct stamp {
	int64_t mtime_ns;
	int64_t size;
	uint64_t ino, dev;
	int valid;               /* 0: the stat failed */
} stamp;

typedef struct entry {
	char *name;              /* directory name */
	relay_app *app;          /* NULL when invalid */
	int status;              /* 0 or the load error */
	relay__diags diags;      /* sorted */
	stamp st;                /* template.yaml, taken before reading it */
} entry;

typedef struct rule_ref {
	uint32_t entry;
	uint32_t rule;
} rule_ref;

struct relay_appset {
	char *dir;
	entry *v;
	size_t n;
	size_t ninvalid;
	relay_ruleset *rs;       /* built */
	rule_ref *map;           /* rule id -> (entry, rule) */
	size_t nmap;
};

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* "<dir>/<name><tail>" without doubling a trailing '/' of @dir. */
static char *join(const char *dir, const char *name, const char *tail)
{
	size_t dl = strlen(dir);

	return relay__sprintf("%s%s%s%s", dir,
			      dl && dir[dl - 1] == '/' ? "" : "/", name, tail);
}

/* Stamp <dir>/<name>/template.yaml; -1 on ENOMEM. */
static int take_stamp(const char *dir, const char *name, stamp *out)
{
	struct stat st;
	char *p = join(dir, name, "/template.yaml");

	if (!p)
		return -1;
	memset(out, 0, sizeof(*out));
	if (stat(p, &st) == 0) {
		out->mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 +
				st.st_mtim.tv_nsec;
		out->size = (int64_t)st.st_size;
		out->ino = (uint64_t)st.st_ino;
		out->dev = (uint64_t)st.st_dev;
		out->valid = 1;
	}
	relay__free(p);
	return 0;
}

static int has_template(const char *dir, const char *name)
{
	struct stat st;
	char *p = join(dir, name, "/template.yaml");
	int ok;

	if (!p)
		return -1;
	ok = stat(p, &st) == 0 && S_ISREG(st.st_mode);
	relay__free(p);
	return ok;
}

/* The sorted names of the subdirectories of @dir holding template.yaml. */
static int list_apps(const char *dir, char ***names, size_t *n,
		     relay_app_diag_fn fn, void *payload)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	char **v = NULL;
	size_t cap = 0;
	int rc = 0;

	*names = NULL;
	*n = 0;
	if (!d) {
		relay_error e;

		rc = errno == ENOENT ? RELAY_ENOTFOUND : RELAY_ERROR;
		relay__error_set(&e, rc, dir, 0, 0,
				 "cannot open apps directory: %s",
				 strerror(errno));
		if (fn)
			fn(NULL, &e, payload);
		return rc;
	}
	while ((de = readdir(d)) != NULL) {
		int t;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		t = has_template(dir, de->d_name);
		if (t < 0) {
			rc = RELAY_ENOMEM;
			break;
		}
		if (!t)
			continue;
		if (!relay_app_name_valid(de->d_name)) {
			/* Never an entry: its name would reach logs and
			 * terminals. Mentioned (escaped) at load time. */
			relay_error e;
			char esc[300];

			relay__error_set(&e, RELAY_EINVAL, dir, 0, 0,
					 "skipping \"%s\": not a valid app "
					 "name (must match [a-z0-9][a-z0-9._-]*"
					 ", at most 63 bytes)",
					 relay__escape(de->d_name, 48, esc,
						       sizeof(esc)));
			if (fn)
				fn(NULL, &e, payload);
			continue;
		}
		if (*n == cap) {
			size_t c = cap ? cap * 2 : 16;
			char **nv = relay__realloc(v, c * sizeof(*nv));

			if (!nv) {
				rc = RELAY_ENOMEM;
				break;
			}
			v = nv;
			cap = c;
		}
		v[*n] = relay__strdup(de->d_name);
		if (!v[*n]) {
			rc = RELAY_ENOMEM;
			break;
		}
		(*n)++;
	}
	closedir(d);
	if (*n)
		qsort(v, *n, sizeof(*v), cmp_names);
	*names = v;
	return rc;
}

/* (Re)build the ruleset and id map over the valid entries. */
static int rebuild(relay_appset *set)
{
	relay_ruleset *rs = NULL;
	rule_ref *map = NULL;
	size_t total = 0, i, j, k = 0;
	int rc;

	for (i = 0; i < set->n; i++)
		if (set->v[i].app)
			total += relay_app_rule_count(set->v[i].app);
	map = relay__calloc(total ? total : 1, sizeof(*map));
	rc = map ? relay_ruleset_new(&rs) : RELAY_ENOMEM;
	for (i = 0; !rc && i < set->n; i++) {
		const relay_app *app = set->v[i].app;

		for (j = 0; app && !rc && j < relay_app_rule_count(app); j++) {
			uint32_t id;

			rc = relay_ruleset_add(rs, app->rules[j].pattern, &id);
			if (!rc && id != k)
				rc = RELAY_ERROR; /* ids must be dense */
			if (!rc) {
				map[k].entry = (uint32_t)i;
				map[k].rule = (uint32_t)j;
				k++;
			}
		}
	}
	if (!rc)
		rc = relay_ruleset_build(rs);
	if (rc) {
		relay_ruleset_free(rs);
		relay__free(map);
		return rc;
	}
	relay_ruleset_free(set->rs);
	relay__free(set->map);
	set->rs = rs;
	set->map = map;
	set->nmap = k;
	return 0;
}

/*
 * Does @path resolve (symlinks followed) to @root_real or below it?
 * 1 yes, 0 no, -1 it does not resolve (the loader reports why).
 */
static int resolves_inside(const char *root_real, const char *path)
{
	char *real = realpath(path, NULL);
	size_t n = strlen(root_real);
	int in;

	if (!real)
		return -1;
	in = strncmp(real, root_real, n) == 0 &&
	     (real[n] == '\0' || real[n] == '/' ||
	      (n > 0 && root_real[n - 1] == '/'));
	free(real);  /* realpath() allocates with malloc() */
	return in;
}

/*
 * An app directory or template.yaml that is a symlink leading out of the
 * apps directory is refused unread: relayd (often root) would otherwise
 * read any file as a template, echo parts of it in diagnostics, and
 * mount any directory as a handler's /app. Returns 0 (fine, or a
 * diagnostic added to @d), or RELAY_ENOMEM.
 */
static int check_inside(const char *apps_dir, const char *dir,
			relay__diags *d)
{
	char *root = realpath(apps_dir, NULL), *tpl;
	int rc = 0;

	if (!root)
		return 0;  /* list_apps() already read it: a race; load */
	tpl = join(dir, "template.yaml", "");
	if (!tpl) {
		free(root);
		return RELAY_ENOMEM;
	}
	if (resolves_inside(root, dir) == 0)
		rc = relay__diags_add(d, RELAY_EINVAL, tpl, 1, 1,
				      "the app directory is a symlink out of "
				      "the apps directory: refused");
	else if (resolves_inside(root, tpl) == 0)
		rc = relay__diags_add(d, RELAY_EINVAL, tpl, 1, 1,
				      "template.yaml is a symlink out of the "
				      "apps directory: refused, not read");
	relay__free(tpl);
	free(root);
	return rc ? RELAY_ENOMEM : 0;
}

static int load_entry(relay_appset *set, entry *e, relay_app_diag_fn fn,
		      void *payload)
{
	char *dir = join(set->dir, e->name, "");
	size_t i;
	int rc;

	/* Stamp first: a change racing the read shows up at the next scan
	 * (a reload too many, never one too few). */
	if (!dir || take_stamp(set->dir, e->name, &e->st)) {
		relay__free(dir);
		return RELAY_ENOMEM;
	}
	rc = check_inside(set->dir, dir, &e->diags);
	if (rc == 0 && e->diags.n)
		rc = RELAY_EINVAL;  /* refused: not read */
	else if (rc == 0)
		rc = relay__app_load_dir(&e->app, e->name, dir, &e->diags);
	relay__free(dir);
	if (rc == RELAY_ENOMEM || e->diags.oom)
		return RELAY_ENOMEM;
	e->status = rc == RELAY_EINVAL ? RELAY_EPARSE : rc;
	relay__diags_sort(&e->diags);
	for (i = 0; fn && i < e->diags.n; i++)
		fn(e->name, &e->diags.v[i], payload);
	return 0;
}

void relay_appset_free(relay_appset *set)
{
	size_t i;

	if (!set)
		return;
	for (i = 0; i < set->n; i++) {
		relay__free(set->v[i].name);
		relay_app_free(set->v[i].app);
		relay__diags_free(&set->v[i].diags);
	}
	relay__free(set->v);
	relay_ruleset_free(set->rs);
	relay__free(set->map);
	relay__free(set->dir);
	relay__free(set);
}

int relay_appset_load(relay_appset **out, const char *apps_dir,
		      relay_app_diag_fn fn, void *payload)
{
	relay_appset *set;
	char **names = NULL;
	size_t n = 0, i;
	int rc;

	*out = NULL;
	set = relay__calloc(1, sizeof(*set));
	if (!set)
		return RELAY_ENOMEM;
	set->dir = relay__strdup(apps_dir);
	if (!set->dir) {
		rc = RELAY_ENOMEM;
		goto done;
	}
	rc = list_apps(apps_dir, &names, &n, fn, payload);
	if (rc)
		goto done;
	set->v = relay__calloc(n ? n : 1, sizeof(*set->v));
	if (!set->v) {
		rc = RELAY_ENOMEM;
		goto done;
	}
	for (i = 0; i < n; i++) {
		set->v[i].name = names[i];
		names[i] = NULL;
		set->n++;
		rc = load_entry(set, &set->v[i], fn, payload);
		if (rc)
			goto done;
		if (!set->v[i].app)
			set->ninvalid++;
	}
	rc = rebuild(set);
done:
	for (i = 0; i < n; i++)
		relay__free(names[i]);
	relay__free(names);
	if (rc) {
		relay_appset_free(set);
		return rc;
	}
	*out = set;
	return 0;
}

/* Share @src's app and copy its name and diagnostics into @dst. */
static int copy_entry(entry *dst, const entry *src)
{
	memset(dst, 0, sizeof(*dst));
	dst->name = relay__strdup(src->name);
	if (!dst->name)
		return RELAY_ENOMEM;
	if (src->diags.n) {
		dst->diags.v = relay__calloc(src->diags.n, sizeof(relay_error));
		if (!dst->diags.v)
			return RELAY_ENOMEM;
		memcpy(dst->diags.v, src->diags.v,
		       src->diags.n * sizeof(relay_error));
		dst->diags.n = dst->diags.cap = src->diags.n;
	}
	dst->status = src->status;
	dst->st = src->st;
	dst->app = src->app ? relay_app_ref(src->app) : NULL;
	return 0;
}

static int plain_name(const char *name)
{
	return name && *name && strcmp(name, ".") != 0 &&
	       strcmp(name, "..") != 0 && strchr(name, '/') == NULL;
}

int relay_appset_reload(relay_appset **out, const relay_appset *old,
			const char *name, relay_app_diag_fn fn, void *payload)
{
	relay_appset *set;
	entry *fresh = NULL;
	size_t i;
	int rc, present;

	*out = NULL;
	if (!plain_name(name))
		return RELAY_EINVAL;
	set = relay__calloc(1, sizeof(*set));
	if (!set)
		return RELAY_ENOMEM;
	set->dir = relay__strdup(old->dir);
	set->v = relay__calloc(old->n + 1, sizeof(*set->v));
	present = set->dir ? has_template(old->dir, name) : -1;
	rc = !set->dir || !set->v || present < 0 ? RELAY_ENOMEM : 0;
	/* Copy the other entries, leaving a slot for @name in order. */
	for (i = 0; !rc && i <= old->n; i++) {
		const entry *e = i < old->n ? &old->v[i] : NULL;
		int c = e ? strcmp(name, e->name) : -1;

		if (c <= 0 && present && !fresh) {
			fresh = &set->v[set->n++];
			fresh->name = relay__strdup(name);
			if (!fresh->name)
				rc = RELAY_ENOMEM;
		}
		if (!rc && e && c != 0) {
			rc = copy_entry(&set->v[set->n], e);
			set->n++; /* counted even on failure: freed below */
		}
	}
	if (!rc && fresh)
		rc = load_entry(set, fresh, fn, payload);
	for (i = 0; !rc && i < set->n; i++)
		set->ninvalid += set->v[i].app == NULL;
	if (!rc)
		rc = rebuild(set);
	if (rc) {
		relay_appset_free(set);
		return rc;
	}
	*out = set;
	return 0;
}

static int stamp_differs(const stamp *a, const stamp *b)
{
	return a->valid != b->valid || a->mtime_ns != b->mtime_ns ||
	       a->size != b->size || a->ino != b->ino || a->dev != b->dev;
}

int relay_appset_scan(const relay_appset *set, relay_appset_change_fn fn,
		      void *payload)
{
	char **names = NULL;
	size_t n = 0, i = 0, j = 0;
	int rc;

	rc = list_apps(set->dir, &names, &n, NULL, NULL);
	/* Merge the two sorted lists: disk (names) and the set (v). */
	while (!rc && (i < n || j < set->n)) {
		int c = i == n ? 1 : j == set->n ? -1
			: strcmp(names[i], set->v[j].name);
		stamp now;

		if (c < 0) {
			fn(names[i++], payload);          /* added */
		} else if (c > 0) {
			fn(set->v[j++].name, payload);    /* removed */
		} else {
			if (take_stamp(set->dir, names[i], &now))
				rc = RELAY_ENOMEM;
			else if (stamp_differs(&now, &set->v[j].st))
				fn(names[i], payload);    /* modified */
			i++;
			j++;
		}
	}
	for (i = 0; i < n; i++)
		relay__free(names[i]);
	relay__free(names);
	return rc;
}

const char *relay_appset_dir(const relay_appset *set) { return set->dir; }
size_t relay_appset_entry_count(const relay_appset *set) { return set->n; }
size_t relay_appset_invalid_count(const relay_appset *set)
{
	return set->ninvalid;
}

const char *relay_appset_entry_name(const relay_appset *set, size_t i)
{
	return i < set->n ? set->v[i].name : NULL;
}

const relay_app *relay_appset_entry_app(const relay_appset *set, size_t i)
{
	return i < set->n ? set->v[i].app : NULL;
}

int relay_appset_entry_status(const relay_appset *set, size_t i)
{
	return i < set->n ? set->v[i].status : RELAY_ENOTFOUND;
}

size_t relay_appset_entry_error_count(const relay_appset *set, size_t i)
{
	return i < set->n ? set->v[i].diags.n : 0;
}

const relay_error *relay_appset_entry_error(const relay_appset *set,
					    size_t i, size_t j)
{
	if (i >= set->n || j >= set->v[i].diags.n)
		return NULL;
	return &set->v[i].diags.v[j];
}

const relay_app *relay_appset_find(const relay_appset *set, const char *name)
{
	size_t lo = 0, hi = set->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(name, set->v[mid].name);

		if (c == 0)
			return set->v[mid].app;
		if (c < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return NULL;
}

const relay_ruleset *relay_appset_ruleset(const relay_appset *set)
{
	return set->rs;
}

int relay_appset_rule(const relay_appset *set, uint32_t id,
		      const relay_app **app, const relay_app_rule **rule)
{
	const relay_app *a;

	if (id >= set->nmap)
		return RELAY_ENOTFOUND;
	a = set->v[set->map[id].entry].app;
	if (app)
		*app = a;
	if (rule)
		*rule = &a->rules[set->map[id].rule];
	return 0;
}

int relay_appset_match(const relay_appset *set, relay_matcher *m,
		       const char *json, size_t len, relay_wall_ms now,
		       relay_app_match **out, size_t *count)
{
	relay_matcher *tmp = NULL;
	relay_app_match *v = NULL;
	const uint32_t *ids;
	size_t n = 0, i;
	int rc;

	*out = NULL;
	*count = 0;
	if (!m) {
		rc = relay_matcher_new(&tmp, set->rs);
		if (rc)
			return rc;
		m = tmp;
	}
	rc = relay_matcher_match(m, json, len, now, &ids, &n);
	if (rc || n == 0)
		goto done;
	v = relay__calloc(n, sizeof(*v));
	if (!v) {
		rc = RELAY_ENOMEM;
		goto done;
	}
	for (i = 0; i < n; i++) {
		v[i].id = ids[i];
		rc = relay_appset_rule(set, ids[i], &v[i].app, &v[i].rule);
		if (rc)
			goto done;
	}
	*out = v;
	*count = n;
	v = NULL;
done:
	relay__free(v);
	relay_matcher_free(tmp);
	return rc;
}
