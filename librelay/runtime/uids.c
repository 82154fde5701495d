/*
 * uids.c - a host uid per app out of a configured range.
 *
 * With relay_runtime_options.sandbox_uids ("LO-HI") a root host runs each
 * app's sandboxes (cold ones, warm parents, pre-started processes) as
 * that app's own host uid and gid instead of the one sandbox user, so the
 * handlers of one app cannot signal, ptrace or read /proc of another
 * app's: every sandbox's user namespace is owned by its app's uid.
 *
 * The choice is deterministic for a given set of names (FNV-1a of the
 * name modulo the range's size, linear probing in name order) and
 * stable for the map's life: an app keeps its uid, and a uid once given
 * is never given to another app, because the first app's processes (a
 * retiring warm parent, a running invocation) may outlive its removal.
 * Nothing of an app's uid outlives the daemon: sandboxes die with it and
 * write only to their own tmpfs, so a restart may choose again.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "runtime.h"

#define NOBODY_UID 65534u
/* bubblewrap writes the uid map with a signed int: nothing above this. */
#define UID_MAX_OK 2147483647u

static int parse_num(const char **p, uint32_t *out)
{
	const char *s = *p;
	uint64_t v = 0;

	if (*s < '0' || *s > '9')
		return -1;
	for (; *s >= '0' && *s <= '9'; s++) {
		v = v * 10 + (uint64_t)(*s - '0');
		if (v > UINT32_MAX)
			return -1;
	}
	*out = (uint32_t)v;
	*p = s;
	return 0;
}

int relay_runtime_uid_range_parse(const char *s, uint32_t *lo, uint32_t *hi,
				  relay_error *err)
{
	const char *p = s ? s : "";
	uint32_t a, b;

	if (parse_num(&p, &a) != 0 || *p++ != '-' || parse_num(&p, &b) != 0 ||
	    *p != '\0')
		return relay__error_set(err, RELAY_EINVAL, NULL, 0, 0,
					"expected LO-HI, two uids such as "
					"100000-165535");
	if (a == 0)
		return relay__error_set(err, RELAY_EINVAL, NULL, 0, 0,
					"LO must be at least 1 (uid 0 is "
					"root)");
	if (a > b)
		return relay__error_set(err, RELAY_EINVAL, NULL, 0, 0,
					"LO must not be above HI");
	if (b > UID_MAX_OK)
		return relay__error_set(err, RELAY_EINVAL, NULL, 0, 0,
					"HI must be at most 2147483647 "
					"(bubblewrap maps no larger uid)");
	if (a <= NOBODY_UID && NOBODY_UID <= b)
		return relay__error_set(err, RELAY_EINVAL, NULL, 0, 0,
					"the range must not hold 65534 "
					"(nobody, shared with other "
					"software)");
	if (lo)
		*lo = a;
	if (hi)
		*hi = b;
	return 0;
}

/* A user or group of this host inside [lo, hi]: its files and its
 * processes would be an app's. */
static int check_host_ids(uid_t lo, uid_t hi, relay_error *err)
{
	const struct passwd *pw;
	const struct group *gr;
	int rc = 0;

	setpwent();
	while (rc == 0 && (pw = getpwent()))
		if (pw->pw_uid >= lo && pw->pw_uid <= hi)
			rc = relay__error_set(err, RELAY_EINVAL, NULL, 0, 0,
					      "sandbox uid range %lu-%lu holds "
					      "uid %lu of user \"%.40s\"",
					      (unsigned long)lo,
					      (unsigned long)hi,
					      (unsigned long)pw->pw_uid,
					      pw->pw_name);
	endpwent();
	if (rc != 0)
		return rc;
	setgrent();
	while (rc == 0 && (gr = getgrent()))
		if (gr->gr_gid >= lo && gr->gr_gid <= hi)
			rc = relay__error_set(err, RELAY_EINVAL, NULL, 0, 0,
					      "sandbox uid range %lu-%lu holds "
					      "gid %lu of group \"%.40s\"",
					      (unsigned long)lo,
					      (unsigned long)hi,
					      (unsigned long)gr->gr_gid,
					      gr->gr_name);
	endgrent();
	return rc;
}

int relay__uids_init(relay__uidmap *m, const char *range, relay_error *err)
{
	uint32_t lo, hi;
	relay_error e;
	int rc;

	memset(m, 0, sizeof(*m));
	if (!range || !*range)
		return 0;
	rc = relay_runtime_uid_range_parse(range, &lo, &hi, &e);
	if (rc != 0)
		return relay__error_set(err, rc, NULL, 0, 0, "sandbox uid "
					"range \"%.40s\": %s", range, e.text);
	rc = check_host_ids((uid_t)lo, (uid_t)hi, err);
	if (rc != 0)
		return rc;
	m->lo = (uid_t)lo;
	m->hi = (uid_t)hi;
	return 0;
}

void relay__uids_free(relay__uidmap *m)
{
	size_t i;

	for (i = 0; i < m->n; i++)
		relay__free(m->v[i].app);
	relay__free(m->v);
	memset(m, 0, sizeof(*m));
}

/* Where @app is, or would be inserted, in m->v; *@found says which. */
static size_t slot_of(const relay__uidmap *m, const char *app, bool *found)
{
	size_t a = 0, b = m->n;

	*found = false;
	while (a < b) {
		size_t mid = a + (b - a) / 2;
		int c = strcmp(m->v[mid].app, app);

		if (c == 0) {
			*found = true;
			return mid;
		}
		if (c < 0)
			a = mid + 1;
		else
			b = mid;
	}
	return a;
}

const relay__uid_ent *relay__uids_find(const relay__uidmap *m,
				       const char *app)
{
	bool found;
	size_t i;

	if (m->lo == 0 || !m->n)
		return NULL;
	i = slot_of(m, app, &found);
	return found ? &m->v[i] : NULL;
}

static bool uid_taken(const relay__uidmap *m, uid_t uid)
{
	size_t i;

	for (i = 0; i < m->n; i++)
		if (m->v[i].cred.uid == uid)
			return true;
	return false;
}

/* FNV-1a, 32 bits: fixed, so a name's first choice is the same in every
 * build and every run. */
static uint32_t fnv1a(const char *s)
{
	uint32_t h = 2166136261u;

	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 16777619u;
	}
	return h;
}

/* Give @app (not in @m, room reserved) the first free uid from its
 * hash's. */
static int add_one(relay__uidmap *m, const char *app)
{
	uint64_t size = (uint64_t)m->hi - m->lo + 1;
	uid_t uid = (uid_t)(m->lo + fnv1a(app) % size);
	relay__uid_ent *e;
	bool found;
	size_t at;
	char *name;

	while (uid_taken(m, uid))
		uid = uid == m->hi ? m->lo : uid + 1;
	name = relay__strdup(app);
	if (!name)
		return RELAY_ENOMEM;
	at = slot_of(m, app, &found);
	e = &m->v[at];
	memmove(e + 1, e, (m->n - at) * sizeof(*e));
	e->app = name;
	e->cred.set = true;
	e->cred.uid = uid;
	e->cred.gid = (gid_t)uid;
	m->n++;
	return 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

int relay__uids_assign(relay__uidmap *m, const char *const *apps, size_t n,
		       relay__uids_note_fn note, void *payload,
		       relay_error *err)
{
	const char **todo = NULL;
	uint64_t size;
	size_t i, k = 0;
	bool found;
	int rc = 0;

	if (m->lo == 0 || n == 0)
		return 0;
	size = (uint64_t)m->hi - m->lo + 1;
	todo = relay__calloc(n, sizeof(*todo));
	if (!todo)
		return relay__error_set(err, RELAY_ENOMEM, NULL, 0, 0,
					"out of memory");
	for (i = 0; i < n; i++)
		if (apps[i] && (slot_of(m, apps[i], &found), !found))
			todo[k++] = apps[i];
	qsort(todo, k, sizeof(*todo), cmp_str);
	for (i = 0, n = k, k = 0; i < n; i++)      /* drop duplicates */
		if (k == 0 || strcmp(todo[k - 1], todo[i]) != 0)
			todo[k++] = todo[i];
	if ((uint64_t)k > size - m->n) {
		rc = relay__error_set(err, RELAY_EINVAL, NULL, 0, 0,
				      "sandbox uid range %lu-%lu has %llu "
				      "uids, %zu given out, too few for %zu "
				      "more app(s)", (unsigned long)m->lo,
				      (unsigned long)m->hi,
				      (unsigned long long)size, m->n, k);
		goto done;
	}
	if (m->n + k > m->cap) {
		size_t cap = m->cap ? m->cap : 8;
		relay__uid_ent *v;

		while (cap < m->n + k)
			cap *= 2;
		v = relay__realloc(m->v, cap * sizeof(*v));
		if (!v) {
			rc = relay__error_set(err, RELAY_ENOMEM, NULL, 0, 0,
					      "out of memory");
			goto done;
		}
		m->v = v;
		m->cap = cap;
	}
	for (i = 0; i < k; i++) {
		rc = add_one(m, todo[i]);
		if (rc != 0) {
			relay__error_set(err, rc, NULL, 0, 0, "out of memory");
			goto done;
		}
		if (note)
			note(relay__uids_find(m, todo[i]), payload);
	}
done:
	relay__free(todo);
	return rc;
}

/* ---- the public face ---------------------------------------------- */

static relay__uidmap *rt_uids(const relay_runtime *rt)
{
	relay__builtin *b;

	if (!rt->builtin)
		return NULL;
	b = (relay__builtin *)rt->rb;
	return b->uids.lo ? &b->uids : NULL;
}

static void note_assigned(const relay__uid_ent *e, void *payload)
{
	relay_runtime *rt = payload;

	if (e)
		relay__log(&rt->logger, RELAY_LOG_INFO, "RELAY-RT10",
			   "runtime: app %s runs as host uid %lu",
			   e->app, (unsigned long)e->cred.uid);
}

int relay_runtime_sandbox_assign(relay_runtime *rt, const char *const *apps,
				 size_t n, relay_error *err)
{
	relay__uidmap *m = rt_uids(rt);

	if (!m)
		return 0;
	return relay__uids_assign(m, apps, n, note_assigned, rt, err);
}

int relay_runtime_sandbox_uid(const relay_runtime *rt, const char *app,
			      uint32_t *out)
{
	const relay__uidmap *m = rt_uids(rt);
	const relay__uid_ent *e;
	const relay__builtin *b;

	if (m) {
		e = relay__uids_find(m, app);
		if (!e)
			return RELAY_ENOTFOUND;
		*out = (uint32_t)e->cred.uid;
		return 0;
	}
	if (!rt->builtin)
		return RELAY_ENOTFOUND;
	b = (const relay__builtin *)rt->rb;
	if (!b->cred.set)
		return RELAY_ENOTFOUND;
	*out = (uint32_t)b->cred.uid;
	return 0;
}
