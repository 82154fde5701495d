/*
 * zone.c - time zones: loading a zone by IANA name, the UTC offset at an
 * instant, and the instants at which a local wall time occurs.
 *
 * No caches, no global state: each relay_cron owns its zone.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sched.h"

#define ZONE_FILE_MAX (1 << 20)
#define ZONE_NAME_MAX 200
/* Every solution t of "t + offset(t) = l" lies within l +- 26 hours. */
#define ZONE_REACH (26 * 3600)
#define ZONE_MAX_CHANGES 16

bool relay__zone_name_valid(const char *name)
{
	const char *p;
	size_t n = strlen(name);

	if (n == 0 || n > ZONE_NAME_MAX || name[0] == '/' ||
	    name[n - 1] == '/' || strstr(name, "//"))
		return false;
	for (p = name; *p; p++)
		if (!((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') ||
		      (*p >= '0' && *p <= '9') || *p == '_' || *p == '+' ||
		      *p == '-' || *p == '/'))
			return false; /* no '.', so no ".." either */
	return true;
}

static int read_file(const char *path, unsigned char **out, size_t *len)
{
	struct stat st;
	unsigned char *buf;
	size_t got = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return errno == ENOENT || errno == ENOTDIR ? RELAY_ENOTFOUND
							   : RELAY_ERROR;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
	    st.st_size > ZONE_FILE_MAX) {
		close(fd);
		return RELAY_ENOTFOUND;
	}
	buf = relay__malloc((size_t)st.st_size + 1);
	if (!buf) {
		close(fd);
		return RELAY_ENOMEM;
	}
	while (got < (size_t)st.st_size) {
		ssize_t r = read(fd, buf + got, (size_t)st.st_size - got);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	close(fd);
	*out = buf;
	*len = got;
	return 0;
}

int relay__zone_load(relay__zone *z, const char *name, relay_error *err)
{
	const char *dir = getenv("TZDIR");
	unsigned char *buf = NULL;
	const char *why = NULL;
	char *path;
	size_t len = 0;
	int rc;

	memset(z, 0, sizeof(*z));
	if (!relay__zone_name_valid(name))
		return relay__error_set(err, RELAY_EINVAL, NULL, 0, 0,
					"invalid time zone name \"%.80s\"",
					name);
	if (!dir || !*dir)
		dir = "/usr/share/zoneinfo";
	path = relay__sprintf("%s/%s", dir, name);
	if (!path)
		return relay__error_set(err, RELAY_ENOMEM, NULL, 0, 0,
					"out of memory");
	rc = read_file(path, &buf, &len);
	relay__free(path);
	if (rc == RELAY_ENOTFOUND && (!strcmp(name, "UTC") ||
				      !strcmp(name, "Etc/UTC")))
		return 0; /* works without tzdata */
	if (rc == RELAY_ENOTFOUND)
		return relay__error_set(err, rc, NULL, 0, 0,
					"unknown time zone \"%.80s\"", name);
	if (rc == RELAY_ENOMEM)
		return relay__error_set(err, rc, NULL, 0, 0, "out of memory");
	if (rc)
		return relay__error_set(err, RELAY_EINVAL, NULL, 0, 0,
					"time zone \"%.80s\": cannot read "
					"its zone file", name);
	rc = relay__tzif_parse(z, buf, len, &why);
	relay__free(buf);
	if (rc == RELAY_EPARSE && !strcmp(why, "not a TZif file"))
		return relay__error_set(err, RELAY_ENOTFOUND, NULL, 0, 0,
					"unknown time zone \"%.80s\" (not a "
					"zone file)", name);
	if (rc)
		return relay__error_set(err, rc == RELAY_ENOMEM ? rc
							: RELAY_EINVAL,
					NULL, 0, 0,
					"time zone \"%.80s\": %s", name, why);
	return 0;
}

int32_t relay__zone_offset(const relay__zone *z, int64_t t)
{
	size_t lo = 0, hi;

	if (z->n == 0)
		return z->has_rule ? relay__tzrule_offset(&z->rule, t)
				   : z->off0;
	if (t < z->at[0])
		return z->off0;
	if (t >= z->at[z->n - 1]) {
		if (z->has_rule && t > z->at[z->n - 1])
			return relay__tzrule_offset(&z->rule, t);
		return z->off[z->n - 1];
	}
	hi = z->n - 1; /* at[lo] <= t < at[hi] */
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;

		if (z->at[mid] <= t)
			lo = mid;
		else
			hi = mid;
	}
	return z->off[lo];
}

static void add_change(int64_t *out, int *n, int64_t t)
{
	int i, j;

	for (i = 0; i < *n; i++)
		if (out[i] == t)
			return;
	if (*n == ZONE_MAX_CHANGES)
		return;
	for (i = 0; i < *n && out[i] < t; i++)
		;
	for (j = *n; j > i; j--)
		out[j] = out[j - 1];
	out[i] = t;
	(*n)++;
}

/*
 * The instants T in (t0, t1] at which the offset changes (offset(T - 1)
 * != offset(T)), ascending; at most ZONE_MAX_CHANGES.
 */
static int changes(const relay__zone *z, int64_t t0, int64_t t1,
		   int64_t *out)
{
	int n = 0, k, m, d;
	size_t lo = 0, hi = z->n;
	int64_t cand[ZONE_MAX_CHANGES], y0, y1, y;

	while (lo < hi) { /* first at[] > t0 */
		size_t mid = lo + (hi - lo) / 2;

		if (z->at[mid] <= t0)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (k = 0; lo < z->n && z->at[lo] <= t1 && k < ZONE_MAX_CHANGES;
	     lo++)
		cand[k++] = z->at[lo];
	if (z->has_rule && z->rule.has_dst &&
	    (z->n == 0 || t1 > z->at[z->n - 1])) {
		relay__civil_from_days(relay__floordiv(t0, RELAY__SECS_PER_DAY),
				       &y0, &m, &d);
		relay__civil_from_days(relay__floordiv(t1, RELAY__SECS_PER_DAY),
				       &y1, &m, &d);
		for (y = y0 - 1; y <= y1 + 1 && k + 2 <= ZONE_MAX_CHANGES;
		     y++) {
			int64_t s = 0, e = 0;

			relay__tzrule_year(&z->rule, y, &s, &e);
			cand[k++] = s;
			cand[k++] = e;
		}
	}
	while (k-- > 0) {
		int64_t t = cand[k];

		if (t <= t0 || t > t1)
			continue;
		if (relay__zone_offset(z, t - 1) != relay__zone_offset(z, t))
			add_change(out, &n, t);
	}
	return n;
}

bool relay__zone_quiet(const relay__zone *z, int64_t t0, int64_t t1)
{
	int64_t ch[ZONE_MAX_CHANGES];

	if (z->n == 0 && !(z->has_rule && z->rule.has_dst))
		return true;
	return changes(z, t0, t1, ch) == 0;
}

int relay__zone_solve(const relay__zone *z, int64_t l, int64_t t[2])
{
	int64_t ch[ZONE_MAX_CHANGES], sol[ZONE_MAX_CHANGES + 1];
	int64_t t0 = l - ZONE_REACH - 1, t1 = l + ZONE_REACH;
	int nch = changes(z, t0, t1, ch), nsol = 0, i, j;

	for (i = -1; i < nch; i++) {
		int32_t o = relay__zone_offset(z, i < 0 ? t0 : ch[i]);
		int64_t s = l - o;

		if (relay__zone_offset(z, s) != o)
			continue;
		for (j = 0; j < nsol && sol[j] != s; j++)
			;
		if (j == nsol)
			sol[nsol++] = s;
	}
	if (nsol == 0) {
		/* A gap: the change whose jump covers l ends it. */
		for (i = 0; i < nch; i++) {
			int32_t before = relay__zone_offset(z, ch[i] - 1);
			int32_t after = relay__zone_offset(z, ch[i]);

			if (ch[i] + before <= l && l < ch[i] + after) {
				t[0] = ch[i];
				return 0;
			}
		}
		t[0] = l - relay__zone_offset(z, l);
		return 0;
	}
	for (i = 1; i < nsol; i++) /* ascending */
		for (j = i; j > 0 && sol[j - 1] > sol[j]; j--) {
			int64_t tmp = sol[j];

			sol[j] = sol[j - 1];
			sol[j - 1] = tmp;
		}
	t[0] = sol[0];
	t[1] = sol[nsol - 1];
	return nsol == 1 ? 1 : 2;
}
