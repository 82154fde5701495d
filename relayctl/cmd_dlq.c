/*
 * cmd_dlq.c - relayctl dlq: subcommand dispatch and `dlq ls`.
 *
 *	dlq ls [FILTERS] [--limit N] [--newest-first] [--json]
 *	    ID  ORIGINAL  APP  HANDLER  ATTEMPTS  AGE  EXPIRES, oldest first
 *	    (--newest-first: newest first); ORIGINAL is
 *	    <original_stream>/<original_id>, AGE the time since the entry's
 *	    timestamp ("3m12s"), EXPIRES the time before relayd trims it
 *	    ("kept" without retention, "due" past it). --json: an array
 *	    with one object per entry holding every field and
 *	    expires_in_seconds. The table ends with a blank line and
 *	    "Retention: ..." (how long relayd keeps entries: its
 *	    REDIS_DLQ_RETENTION, or its stats file). An entry that cannot
 *	    be parsed is still a row (its
 *	    id, ORIGINAL "(malformed)", "?" elsewhere; in JSON {"id",
 *	    "malformed": why, "fields": {...}}) whatever --app, --handler
 *	    or --reason say (--id, --since and --until apply to its id),
 *	    and stderr counts them (under a filter on fields it is
 *	    undecided and does not count against --limit):
 *	    an operator must never believe the queue is shorter than it is,
 *	    and one bad entry must not hide the others.
 *	    FILTERS: dlqfilter.h (--app --handler --reason --since --until
 *	    --id --original-id --malformed --no-malformed), combined with
 *	    AND.
 *
 * inspect, replay, rm and summary live in cmd_dlq_inspect.c,
 * cmd_dlq_replay.c, cmd_dlq_rm.c and cmd_dlq_summary.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmdutil.h"
#include "ctlconf.h"
#include "dlqcli.h"
#include "fmt.h"
#include "relayctl.h"
#include "relay/daemon_metrics.h"

/* The stats file keys of the retention figures, by id
 * (relay/daemon_metrics.h). */
#define RET_KEY_MEMBER(id, kind, key, ...) const char *id;
#define RET_KEY(id, kind, key, ...) key,
static const struct {
	RELAY_RETENTION_FIGURES(RET_KEY_MEMBER)
} ret_key = { RELAY_RETENTION_FIGURES(RET_KEY) };
#undef RET_KEY_MEMBER
#undef RET_KEY

static void usage(FILE *f)
{
	fputs("usage: relayctl dlq ls [FILTERS] [--limit N] [--newest-first] "
	      "[--json]\n"
	      "       relayctl dlq summary [FILTERS] [--limit N] [--json]\n"
	      "       relayctl dlq inspect ID [--json]\n"
	      "       relayctl dlq replay ID | --all | FILTERS [--limit N] "
	      "[--dry-run] [--yes]\n"
	      "                           [--rate N]\n"
	      "       relayctl dlq rm ID | --all | FILTERS [--limit N] "
	      "[--dry-run] [--yes]\n"
	      "                       [--rate N]\n\n"
	      "Work with the dead-letter queue relay:<REDIS_STREAM>:dlq.\n"
	      "FILTERS: --app NAME --handler NAME --reason ERE --since WHEN "
	      "--until WHEN\n--id ID --original-id ID (both repeatable) "
	      "--malformed --no-malformed,\ncombined with AND.\n"
	      "Run 'relayctl dlq SUBCOMMAND --help' for its options.\n", f);
}

static void ls_usage(FILE *f)
{
	fprintf(f, "usage: relayctl dlq ls [FILTERS] [--limit N] "
		"[--newest-first] [--json]\n"
		"                      [connection options]\n\n"
		"List the DLQ entries oldest first as a table\n"
		"ID ORIGINAL APP HANDLER ATTEMPTS AGE EXPIRES, then how long "
		"relayd keeps\nthem (REDIS_DLQ_RETENTION). EXPIRES is the time "
		"left before relayd trims\nthe entry (\"kept\": retention is "
		"off; \"due\": at relayd's next trim).\n\n"
		"  --app NAME         only entries of app NAME\n"
		"  --handler NAME     only entries of handler NAME\n"
		DLQCLI_FILTER_HELP
		"  --limit N          at most N entries\n"
		"  --newest-first     newest entry first (--limit: the newest "
		"N)\n"
		"  --json             a JSON array, one object per entry with "
		"every field\n"
		"                     and expires_in_seconds (null: kept)\n%s"
		"  -h, --help         show this help\n\n"
		"Filters combine with AND. A malformed entry is listed as "
		"\"(malformed)\"\nunless --id, --since, --until or "
		"--no-malformed rule it out (see\n'dlq inspect ID'); under "
		"--app, --handler, --reason or --original-id it\ndoes not "
		"count against --limit.\n\n"
		"Environment: REDIS_DLQ_RETENTION as relayd reads it (unset: "
		"what relayd's\nstats file says, else relayd's default "
		"168h).\n\n"
		"Exit status: 0 success, 1 Redis error, 2 usage error.\n",
		relayctl_conf_help);
}

/* How long relayd keeps entries, and where that was learnt. */
struct retention {
	int64_t ms;          /* 0: off (kept until removed) */
	int from;            /* 0 environment, 1 stats file, 2 default */
};

/*
 * The retention relayd applies to the DLQ, learnt as relayd learns it:
 * REDIS_DLQ_RETENTION ("0" off, else a duration of at least 1s in the
 * units relayd takes: ms s m h d). When relayctl's environment does not
 * set it, the running relayd's figure from its stats file
 * (RELAY_STATE_DIR/stats.json), else relayd's default 168h. Returns 0, or
 * RELAYCTL_USAGE after printing a value relayd would refuse too.
 */
static int retention_get(const struct relayctl_conf *c, struct retention *r)
{
	const char *v = getenv("REDIS_DLQ_RETENTION");
	char path[4200];
	json_t *snap, *n;

	r->ms = 168LL * 3600 * 1000;
	r->from = 2;
	if (v && *v) {
		r->from = 0;
		if (strcmp(v, "0") == 0) {
			r->ms = 0;
			return 0;
		}
		if (strchr(v, 'w') || relay_dlq_duration_parse(v, &r->ms) ||
		    (r->ms > 0 && r->ms < 1000))
			return relayctl_error(RELAYCTL_USAGE, "dlq ls: "
				"REDIS_DLQ_RETENTION: invalid value \"%s\": "
				"expected 0 (off) or a duration of at least 1s "
				"such as 24h, 30m or 7d", relayctl_c(v));
		return 0;
	}
	snprintf(path, sizeof(path), "%s/stats.json", c->state_dir);
	snap = json_load_file(path, 0, NULL);
	n = json_object_get(json_object_get(snap, "retention"),
			    ret_key.dlq_retention_ms);
	if (json_is_integer(n) && json_integer_value(n) >= 0) {
		r->ms = json_integer_value(n) * 1000;
		r->from = 1;
	}
	json_decref(snap);
	return 0;
}

/* The footer of the `dlq ls` table: how long entries are kept. */
static void retention_note(const struct relayctl_conf *c,
			   const struct retention *r)
{
	char buf[64];

	if (r->from == 2)
		printf("\nRetention: unknown (no relayd stats file in %s); "
		       "relayd's default\nREDIS_DLQ_RETENTION=168h trims "
		       "entries older than 7 days.\n", c->state_dir);
	else if (r->ms == 0)
		printf("\nRetention: off (REDIS_DLQ_RETENTION=0): entries are "
		       "kept until removed.\n");
	else
		printf("\nRetention: entries older than %s are trimmed "
		       "(REDIS_DLQ_RETENTION).\n",
		       relayctl_fmt_age(r->ms / 1000, buf, sizeof(buf)));
}

/*
 * Milliseconds entry @id has left: relayd trims the DLQ by the time in
 * entry ids (doc/redis-layout.md R-9), so an entry goes once its id is
 * older than the retention. Negative: due at the next trim. Only with a
 * retention.
 */
static int64_t left_ms(const struct retention *r, const char *id,
		       int64_t now)
{
	return strtoll(id, NULL, 10) + r->ms - now;
}

/* EXPIRES of entry @id: "kept", "due", or the time left. */
static const char *expires(const struct retention *r, const char *id,
			   int64_t now, char *buf, size_t size)
{
	int64_t left;

	if (r->ms == 0)
		return "kept";
	left = left_ms(r, id, now);
	if (left <= 0)
		return "due";
	/* Rounded up: "1s" until the very end, never "0s". */
	return relayctl_fmt_age((left + 999) / 1000, buf, size);
}

#define NCOLS 7

/*
 * What `dlq ls` keeps while it lists: constant, whatever the DLQ holds.
 * The JSON array is written an element at a time; the text table is two
 * passes over the DLQ, the first only measuring the columns, so that
 * neither needs every row in memory (an entry added between the passes
 * is printed, at worst wider than its column).
 */
struct ls {
	struct dlqcli *d;
	int json;            /* --json */
	int measure;         /* text, first pass: widths only */
	size_t w[NCOLS];     /* column widths */
	size_t shown;        /* items written (this pass) */
	struct retention ret;
	int64_t now;
	long long nbad;
	int oom;
};

static const char *const head[NCOLS] = { "ID", "ORIGINAL", "APP",
					 "HANDLER", "ATTEMPTS", "AGE",
					 "EXPIRES" };

/* Measure or print one row of cleaned cells. Returns 0 or -1 (OOM). */
static int put_row(struct ls *l, const char *const *row)
{
	char *c[NCOLS];
	size_t i;
	int rc = 0;

	for (i = 0; i < NCOLS; i++)
		c[i] = relayctl_clean(row[i]);
	for (i = 0; i < NCOLS && !rc; i++)
		rc = c[i] ? 0 : -1;
	for (i = 0; i < NCOLS && !rc; i++) {
		size_t n = strlen(c[i]);

		if (l->measure && n > l->w[i])
			l->w[i] = n;
		else if (!l->measure && i + 1 == NCOLS)
			printf("%s\n", c[i]);
		else if (!l->measure)
			printf("%-*s  ", (int)l->w[i], c[i]);
	}
	for (i = 0; i < NCOLS; i++)
		free(c[i]);
	return rc;
}

static int add_row(struct ls *l, const relay_dlq_record *r)
{
	char orig[512], attempts[24], age[32], exp[32];
	const char *row[NCOLS];
	int64_t ms;

	snprintf(orig, sizeof(orig), "%s/%s", r->e.original_stream,
		 r->e.original_id);
	snprintf(attempts, sizeof(attempts), "%lld", r->e.handler_attempts);
	if (relayctl_parse_time(r->e.timestamp, &ms) == 0)
		relayctl_fmt_age((l->now - ms) / 1000, age, sizeof(age));
	else
		snprintf(age, sizeof(age), "?");
	row[0] = r->id;
	row[1] = orig;
	row[2] = r->e.app;
	row[3] = r->e.handler;
	row[4] = attempts;
	row[5] = age;
	row[6] = expires(&l->ret, r->id, l->now, exp, sizeof(exp));
	return put_row(l, row);
}

/* The row of an entry nobody can parse: its id, that it is bad, and
 * when it goes (by its id, as relayd trims). */
static int add_bad_row(struct ls *l, const char *id)
{
	char exp[32];
	const char *row[NCOLS] = { id, "(malformed)", "?", "?", "?", "?",
				   expires(&l->ret, id, l->now, exp,
					   sizeof(exp)) };

	return put_row(l, row);
}

/* An item as JSON; with several streams it also names its stream. A
 * malformed one is {"id", "malformed": why, "fields"}. Both carry
 * expires_in_seconds (null: kept). */
static json_t *row_json(const struct ls *l, const relay_dlq_item *it)
{
	json_t *o;

	if (it->rec) {
		o = dlqcli_json(it->rec);
	} else {
		relay_dlq_record r;

		memset(&r, 0, sizeof(r));
		r.id = (char *)it->id;
		o = dlqcli_json_bad(&r, it->error, it->raw);
	}
	if (o && l->d->nkeys > 1)
		json_object_set_new(o, "stream",
				    json_string(l->d->streams[it->key]));
	if (o) {
		int64_t left = left_ms(&l->ret, it->id, l->now);

		json_object_set_new(o, "expires_in_seconds", l->ret.ms == 0
				    ? json_null()
				    : json_integer(left <= 0 ? 0
						   : (left + 999) / 1000));
	}
	return o;
}

/*
 * One element of the JSON array, written as json_dumpf() writes the
 * whole array with JSON_INDENT(2): "[" on the first, "," between, every
 * line of the element indented by two (a string never holds a raw
 * newline in JSON, so lines are the dump's own).
 */
static int put_json_item(struct ls *l, const json_t *o)
{
	char *text = json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	const char *p, *nl;

	if (!text)
		return -1;
	fputs(l->shown ? ",\n" : "[\n", stdout);
	for (p = text; *p; p = nl + 1) {
		nl = strchr(p, '\n');
		if (!nl) {
			printf("  %s", p);
			break;
		}
		printf("  %.*s\n", (int)(nl - p), p);
	}
	free(text);
	return 0;
}

/* One item (dlqcli_each, which applies the filters and --limit). */
static int ls_one(void *payload, const relay_dlq_item *it)
{
	struct ls *l = payload;
	int rc;

	if (!l->measure)
		l->nbad += it->rec == NULL;
	if (l->json) {
		json_t *o = row_json(l, it);

		rc = o ? put_json_item(l, o) : -1;
		json_decref(o);
	} else if (!it->rec) {
		rc = add_bad_row(l, it->id);
	} else {
		rc = add_row(l, it->rec);
	}
	l->shown++;
	return rc;
}

/* One pass over the DLQ (text: measuring, then printing). */
static int ls_pass(struct ls *l)
{
	l->shown = 0;
	return dlqcli_each(l->d, l->d->newest_first ? RELAY_DLQ_NEWEST_FIRST
						    : RELAY_DLQ_OLDEST_FIRST,
			   ls_one, l);
}

static int ls(int argc, char **argv)
{
	struct dlqcli d;
	struct ls l;
	size_t i;
	int rc;

	memset(&l, 0, sizeof(l));
	l.d = &d;
	l.now = relayctl_now_ms();
	rc = dlqcli_parse(&d, "dlq ls", argc, argv,
			  DLQCLI_JSON | DLQCLI_FILTER | DLQCLI_LIMIT |
			  DLQCLI_ORDER, ls_usage);
	if (rc)
		return rc < 0 ? RELAYCTL_OK : rc;
	rc = retention_get(&d.conf, &l.ret);
	if (rc) {
		dlqcli_close(&d);
		return rc;
	}
	rc = dlqcli_open(&d);
	if (rc)
		return rc;
	l.json = d.conf.json;
	if (!l.json) {
		for (i = 0; i < NCOLS; i++)
			l.w[i] = strlen(head[i]);
		l.measure = 1;
		rc = ls_pass(&l);
		l.measure = 0;
		if (rc == 0)
			rc = put_row(&l, head) ? relayctl_error(
				RELAYCTL_FAIL, "dlq ls: out of memory") : 0;
	}
	if (rc == 0)
		rc = ls_pass(&l);
	if (rc == 0 && l.json)
		fputs(l.shown ? "\n]\n" : "[]\n", stdout);
	if (l.nbad)
		fprintf(stderr, "relayctl: dlq ls: %lld malformed DLQ "
			"entr%s listed; 'relayctl dlq inspect ID' shows what "
			"is wrong\n", l.nbad, l.nbad == 1 ? "y" : "ies");
	if (!rc && !l.json)
		retention_note(&d.conf, &l.ret);
	if (fflush(stdout) && !rc)
		rc = RELAYCTL_FAIL;
	dlqcli_close(&d);
	return rc;
}

int relayctl_cmd_dlq(int argc, char **argv)
{
	static const struct relayctl_sub subs[] = {
		{ "ls", ls, NULL },
		{ "inspect", relayctl_cmd_dlq_inspect, NULL },
		{ "replay", relayctl_cmd_dlq_replay, NULL },
		{ "summary", relayctl_cmd_dlq_summary, NULL },
		{ "rm", relayctl_cmd_dlq_rm, NULL },
	};

	return relayctl_dispatch(subs, sizeof(subs) / sizeof(subs[0]), "dlq",
				 argc, argv, usage);
}
