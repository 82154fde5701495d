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
 *
 * --by error: the third key is the error instead of the reason: the last
 * non-empty line of the entry's stderr_tail (the exception line of a
 * Python traceback), normalised the same way; an entry without a tail
 * (a timeout, a handler that wrote nothing to stderr, an entry of an
 * older relayd) is grouped by its reason as before. JSON rows then add
 * "from": "stderr" or "reason", saying which text "reason" holds.
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
	int from_tail;          /* --by error: reason is a stderr line */
	long long count;
	int64_t oldest_ms, newest_ms;
	char *oldest, *newest;  /* timestamps as stored */
};

struct summary {
	struct group *buckets[NBUCKETS];
	struct group **all;
	size_t n, cap;
	long long entries, bad;
	int by_error;           /* --by error */
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
		"  --by error         group by the last line of the handler's "
		"stderr\n"
		"                     (stderr_tail) instead of the reason, "
		"when kept\n"
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

/*
 * --by error: the last line of @tail with a visible character, trailing
 * blanks dropped, into @out. Returns 0, or -1 when there is none.
 */
static int tail_line(const char *tail, char *out, size_t size)
{
	const char *end = tail + strlen(tail), *b;
	size_t n;

	for (;;) {
		while (end > tail && (end[-1] == '\n' || end[-1] == ' ' ||
				      end[-1] == '\t'))
			end--;
		if (end == tail)
			return -1;
		for (b = end; b > tail && b[-1] != '\n'; b--)
			;
		n = (size_t)(end - b);
		while (n && (*b == ' ' || *b == '\t'))
			b++, n--;
		if (n)
			break;
		end = b;
	}
	if (n >= size)
		n = size - 1;
	memcpy(out, b, n);
	out[n] = '\0';
	return 0;
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

	char line[4 * REASON_MAX + 1];
	int from_tail = 0;

	if (s->by_error && e->stderr_tail &&
	    tail_line(e->stderr_tail, line, sizeof(line)) == 0)
		from_tail = 1;
	normalise(from_tail ? line : e->reason, reason, sizeof(reason));
	h = (hash3(e->app, e->handler, reason) + (uint32_t)from_tail) %
	    NBUCKETS;
	for (g = s->buckets[h]; g; g = g->next)
		if (strcmp(g->app, e->app) == 0 &&
		    strcmp(g->handler, e->handler) == 0 &&
		    strcmp(g->reason, reason) == 0 &&
		    g->from_tail == from_tail)
			break;
	if (!g) {
		g = group_new(s, e, reason);
		if (!g)
			return -1;
		g->from_tail = from_tail;
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
					 dlqcli_json_str(g->newest)) ||
		     (s->by_error &&
		      json_object_set_new(o, "from", json_string(
					  g->from_tail ? "stderr"
						       : "reason")));
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
	const char *const head[] = { "COUNT", "APP", "HANDLER", "OLDEST",
				     "NEWEST", s->by_error ? "ERROR"
							   : "REASON" };
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

/*
 * Take "--by KEY" out of @argv (the shared parser does not know it) into
 * *by_error. Returns 0, or RELAYCTL_USAGE after printing the problem.
 */
static int take_by(int *argc, char **argv, int *by_error)
{
	const char *v;
	int i, o = 1, m, seen = 0;

	for (i = 1; i < *argc; i++) {
		if (strcmp(argv[i], "--") == 0) {
			while (i < *argc)
				argv[o++] = argv[i++];
			break;
		}
		m = relayctl_opt_value(*argc, argv, &i, "--by", "dlq summary",
				       &v);
		if (m < 0) {
			usage(stderr);
			return RELAYCTL_USAGE;
		}
		if (m == 0) {
			argv[o++] = argv[i];
			continue;
		}
		if (seen++ || (strcmp(v, "error") && strcmp(v, "reason"))) {
			relayctl_error(RELAYCTL_USAGE, "dlq summary: --by: %s",
				       seen > 1 ? "given twice" :
				       "expected error or reason");
			usage(stderr);
			return RELAYCTL_USAGE;
		}
		*by_error = strcmp(v, "error") == 0;
	}
	*argc = o;
	argv[o] = NULL;
	return 0;
}

int relayctl_cmd_dlq_summary(int argc, char **argv)
{
	struct dlqcli d;
	struct summary *s;
	int rc, by_error = 0;

	rc = take_by(&argc, argv, &by_error);
	if (rc)
		return rc;
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
	s->by_error = by_error;
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
