/*
 * cmd_dlq_summary.c - relayctl dlq summary [FILTERS] [--limit N] [--json]
 *
 * The DLQ at a glance: the matching entries of every stream's DLQ grouped
 * by app, handler and reason, largest group first. The reason is
 * normalised so that one cause is one group: for an exhausted invocation
 * only the last failure counts (app and handler have their own columns),
 * and every number that stands alone (not part of a name such as "h1")
 * becomes N: "timed out after 6000ms" and "timed out after 5000ms" are
 * both "timed out after Nms". A table COUNT APP HANDLER OLDEST NEWEST
 * REASON (ages of the oldest and newest entry), then "Total: ..."; with
 * --json an array of {"app", "handler", "reason", "count", "oldest",
 * "newest"} (the timestamps as stored). A malformed entry cannot be
 * grouped: it is counted on stderr and skipped. --limit N: only the first
 * N matching entries (oldest first, stream by stream; malformed ones
 * counted on stderr are among them).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmdutil.h"
#include "ctlconf.h"
#include "dlqcli.h"
#include "fmt.h"
#include "relayctl.h"

#define NBUCKETS 4096
#define REASON_MAX 200  /* bytes of a normalised reason */

struct group {
	struct group *next;     /* in its bucket */
	char *app, *handler, *reason;
	long long count;
	int64_t oldest_ms, newest_ms;
	char *oldest, *newest;  /* timestamps as stored */
};

struct summary {
	struct group *buckets[NBUCKETS];
	struct group **all;
	size_t n, cap;
	long long entries, bad;
};

static void usage(FILE *f)
{
	fprintf(f, "usage: relayctl dlq summary [FILTERS] [--limit N] "
		"[--json]\n"
		"                           [connection options]\n\n"
		"Count the DLQ entries by app, handler and reason, largest "
		"group first:\n"
		"COUNT APP HANDLER OLDEST NEWEST REASON. Numbers in reasons "
		"are shown as N\n"
		"so that one cause is one group; an exhausted invocation's "
		"reason is its\nlast failure.\n\n"
		"  --app NAME         only entries of app NAME\n"
		"  --handler NAME     only entries of handler NAME\n"
		"  --reason ERE       whose reason matches ERE (POSIX "
		"extended; the\n"
		"                     stored reason, before normalising)\n"
		"  --since WHEN       written at or after WHEN (RFC 3339, or "
		"2h, 30m ago)\n"
		"  --until WHEN       written at or before WHEN\n"
		"  --id ID            entry ID (repeatable)\n"
		"  --original-id ID   whose original message is stream entry "
		"ID\n"
		"                     (repeatable)\n"
		"  --malformed        only malformed entries (counted, not "
		"grouped)\n"
		"  --no-malformed     no malformed entries\n"
		"  --limit N          only the first N matching entries "
		"(oldest first)\n"
		"  --json             a JSON array of {app, handler, reason, "
		"count, oldest,\n"
		"                     newest}\n%s"
		"  -h, --help         show this help\n\n"
		"Malformed entries are counted on standard error, not "
		"grouped.\n\n"
		"Exit status: 0 success, 1 Redis error, 2 usage error.\n",
		relayctl_conf_help);
}

static int is_word(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

/* The group key of a reason (above), at most REASON_MAX bytes. */
static void normalise(const char *reason, char *out, size_t size)
{
	const char *p = dlqcli_reason_short(reason);
	size_t n = 0;

	while (*p && n + 1 < size) {
		const char *e = p;

		if (*p < '0' || *p > '9') {
			out[n++] = *p++;
			continue;
		}
		while (*e >= '0' && *e <= '9')
			e++;
		if (p > reason && is_word(p[-1])) {
			while (p < e && n + 1 < size)
				out[n++] = *p++;  /* part of a name: kept */
		} else {
			out[n++] = 'N';
			p = e;
		}
	}
	/* Never end in the middle of a UTF-8 sequence. */
	if (*p && n && ((unsigned char)out[n - 1] & 0x80)) {
		while (n && ((unsigned char)out[n - 1] & 0xc0) == 0x80)
			n--;
		if (n && ((unsigned char)out[n - 1] & 0xc0) == 0xc0)
			n--;
	}
	out[n] = '\0';
}

static uint32_t hash3(const char *a, const char *b, const char *c)
{
	const char *parts[3] = { a, b, c };
	uint32_t h = 2166136261u;
	int i;

	for (i = 0; i < 3; i++) {
		const unsigned char *p = (const unsigned char *)parts[i];

		for (; *p; p++)
			h = (h ^ *p) * 16777619u;
		h = (h ^ 0xff) * 16777619u;  /* the separator */
	}
	return h;
}

static struct group *group_new(struct summary *s, const relay_dlq_entry *e,
			       const char *reason)
{
	struct group *g = calloc(1, sizeof(*g));

	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 64;
		struct group **all = realloc(s->all, cap * sizeof(*all));

		if (!all) {
			free(g);
			return NULL;
		}
		s->all = all;
		s->cap = cap;
	}
	if (!g)
		return NULL;
	g->app = strdup(e->app);
	g->handler = strdup(e->handler);
	g->reason = strdup(reason);
	g->oldest = strdup(e->timestamp);
	g->newest = strdup(e->timestamp);
	s->all[s->n++] = g;
	if (!g->app || !g->handler || !g->reason || !g->oldest || !g->newest)
		return NULL;  /* freed with the others */
	g->oldest_ms = INT64_MAX;
	g->newest_ms = INT64_MIN;
	return g;
}

static int set_time(char **slot, const char *ts)
{
	char *c = strdup(ts);

	if (!c)
		return -1;
	free(*slot);
	*slot = c;
	return 0;
}

static int count(struct summary *s, const relay_dlq_record *r)
{
	const relay_dlq_entry *e = &r->e;
	char reason[REASON_MAX + 1];
	struct group *g;
	uint32_t h;
	int64_t ms;

	normalise(e->reason, reason, sizeof(reason));
	h = hash3(e->app, e->handler, reason) % NBUCKETS;
	for (g = s->buckets[h]; g; g = g->next)
		if (strcmp(g->app, e->app) == 0 &&
		    strcmp(g->handler, e->handler) == 0 &&
		    strcmp(g->reason, reason) == 0)
			break;
	if (!g) {
		g = group_new(s, e, reason);
		if (!g)
			return -1;
		g->next = s->buckets[h];
		s->buckets[h] = g;
	}
	/* An unreadable timestamp: the entry id's milliseconds (when
	 * the DLQ wrote it), not 1970. */
	if (relayctl_parse_time(e->timestamp, &ms))
		ms = strtoll(r->id, NULL, 10);
	if (ms < g->oldest_ms) {
		g->oldest_ms = ms;
		if (set_time(&g->oldest, e->timestamp))
			return -1;
	}
	if (ms > g->newest_ms) {
		g->newest_ms = ms;
		if (set_time(&g->newest, e->timestamp))
			return -1;
	}
	g->count++;
	s->entries++;
	return 0;
}

static void summary_free(struct summary *s)
{
	size_t i;

	for (i = 0; i < s->n; i++) {
		free(s->all[i]->app);
		free(s->all[i]->handler);
		free(s->all[i]->reason);
		free(s->all[i]->oldest);
		free(s->all[i]->newest);
		free(s->all[i]);
	}
	free(s->all);
}

static int by_count(const void *a, const void *b)
{
	const struct group *x = *(struct group *const *)a;
	const struct group *y = *(struct group *const *)b;
	int c;

	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	if ((c = strcmp(x->app, y->app)) || (c = strcmp(x->handler,
							 y->handler)))
		return c;
	return strcmp(x->reason, y->reason);
}

/* One item (dlqcli_each, which applies the filters and --limit):
 * grouped, or counted as malformed. */
static int scan_one(void *payload, const relay_dlq_item *it)
{
	struct summary *s = payload;

	if (it->rec)
		return count(s, it->rec) ? -1 : 0;
	s->bad++;
	return 0;
}

static int put_json(const struct summary *s)
{
	json_t *list = json_array();
	size_t i;
	int rc = 0;

	for (i = 0; list && i < s->n && !rc; i++) {
		const struct group *g = s->all[i];
		json_t *o = json_object();

		/* Text from Redis: json_string() refuses what is not UTF-8. */
		rc = !o || json_array_append_new(list, o) ||
		     json_object_set_new(o, "app", dlqcli_json_str(g->app)) ||
		     json_object_set_new(o, "handler",
					 dlqcli_json_str(g->handler)) ||
		     json_object_set_new(o, "reason",
					 dlqcli_json_str(g->reason)) ||
		     json_object_set_new(o, "count", json_integer(g->count)) ||
		     json_object_set_new(o, "oldest",
					 dlqcli_json_str(g->oldest)) ||
		     json_object_set_new(o, "newest",
					 dlqcli_json_str(g->newest));
	}
	if (!list || rc) {
		json_decref(list);
		return relayctl_error(RELAYCTL_FAIL, "dlq summary: out of "
				      "memory");
	}
	rc = relayctl_put_listing(list, NULL);
	json_decref(list);
	return rc;
}

static int put_table(const struct summary *s)
{
	static const char *const head[] = { "COUNT", "APP", "HANDLER",
					    "OLDEST", "NEWEST", "REASON" };
	int64_t now = relayctl_now_ms();
	relayctl_table t;
	size_t i;
	int rc;

	if (relayctl_table_init(&t, 6, head))
		return relayctl_error(RELAYCTL_FAIL, "dlq summary: out of "
				      "memory");
	for (i = 0; i < s->n; i++) {
		const struct group *g = s->all[i];
		char n[24], oldest[32], newest[32];
		const char *row[6] = { n, g->app, g->handler, oldest, newest,
				       g->reason };

		snprintf(n, sizeof(n), "%lld", g->count);
		relayctl_fmt_age((now - g->oldest_ms) / 1000, oldest,
				 sizeof(oldest));
		relayctl_fmt_age((now - g->newest_ms) / 1000, newest,
				 sizeof(newest));
		if (relayctl_table_add(&t, row)) {
			relayctl_table_free(&t);
			return relayctl_error(RELAYCTL_FAIL, "dlq summary: out "
					      "of memory");
		}
	}
	rc = relayctl_put_listing(NULL, &t);
	relayctl_table_free(&t);
	if (rc)
		return rc;
	printf("\nTotal: %lld entr%s in %zu group%s\n", s->entries,
	       s->entries == 1 ? "y" : "ies", s->n, s->n == 1 ? "" : "s");
	return fflush(stdout) ? RELAYCTL_FAIL : RELAYCTL_OK;
}

int relayctl_cmd_dlq_summary(int argc, char **argv)
{
	struct dlqcli d;
	struct summary *s;
	int rc;

	rc = dlqcli_start(&d, "dlq summary", argc, argv,
			  DLQCLI_JSON | DLQCLI_FILTER | DLQCLI_LIMIT, usage);
	if (rc)
		return rc < 0 ? RELAYCTL_OK : rc;
	s = calloc(1, sizeof(*s));
	if (!s) {
		dlqcli_close(&d);
		return relayctl_error(RELAYCTL_FAIL, "dlq summary: out of "
				      "memory");
	}
	rc = dlqcli_each(&d, RELAY_DLQ_OLDEST_FIRST, scan_one, s);
	if (!rc) {
		if (s->n)
			qsort(s->all, s->n, sizeof(*s->all), by_count);
		rc = d.conf.json ? put_json(s) : put_table(s);
	}
	if (s->bad)
		fprintf(stderr, "relayctl: dlq summary: %lld malformed DLQ "
			"entr%s not counted; 'relayctl dlq ls' lists %s\n",
			s->bad, s->bad == 1 ? "y" : "ies",
			s->bad == 1 ? "it" : "them");
	summary_free(s);
	free(s);
	dlqcli_close(&d);
	return rc;
}
