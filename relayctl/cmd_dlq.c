/*
 * cmd_dlq.c - relayctl dlq: subcommand dispatch and `dlq ls`.
 *
 *	dlq ls [FILTERS] [--limit N] [--json]
 *	    ID  ORIGINAL  APP  HANDLER  ATTEMPTS  AGE, oldest first;
 *	    ORIGINAL is <original_stream>/<original_id>, AGE the time since
 *	    the entry's timestamp ("3m12s"). --json: an array with one object
 *	    per entry holding every field. The table ends with a blank line
 *	    and "Retention: ..." (how long relayd keeps entries, from its
 *	    stats file). An entry that cannot be parsed is still a row (its
 *	    id, ORIGINAL "(malformed)", "?" elsewhere; in JSON {"id",
 *	    "malformed": why, "fields": {...}}) whatever --app, --handler
 *	    or --reason say (--id, --since and --until apply to its id),
 *	    and stderr counts them:
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

#define PAGE 200

static void usage(FILE *f)
{
	fputs("usage: relayctl dlq ls [FILTERS] [--limit N] [--json]\n"
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
		"[--json] [connection options]\n\n"
		"List the DLQ entries oldest first as a table\n"
		"ID ORIGINAL APP HANDLER ATTEMPTS AGE, then how long relayd "
		"keeps them\n(REDIS_DLQ_RETENTION, from its stats file).\n\n"
		"  --app NAME         only entries of app NAME\n"
		"  --handler NAME     only entries of handler NAME\n"
		DLQCLI_FILTER_HELP
		"  --limit N          at most N entries\n"
		"  --json             a JSON array, one object per entry with "
		"every field\n%s"
		"  -h, --help         show this help\n\n"
		"Filters combine with AND. A malformed entry is listed as "
		"\"(malformed)\"\nunless --id, --since, --until or "
		"--no-malformed rule it out (see\n'dlq inspect ID').\n\n"
		"Exit status: 0 success, 1 Redis error, 2 usage error.\n",
		relayctl_conf_help);
}

static int add_row(relayctl_table *t, const relay_dlq_record *r,
		   int64_t now)
{
	char orig[512], attempts[24], age[32];
	const char *row[6];
	int64_t ms;

	snprintf(orig, sizeof(orig), "%s/%s", r->e.original_stream,
		 r->e.original_id);
	snprintf(attempts, sizeof(attempts), "%lld", r->e.handler_attempts);
	if (relayctl_parse_time(r->e.timestamp, &ms) == 0)
		relayctl_fmt_age((now - ms) / 1000, age, sizeof(age));
	else
		snprintf(age, sizeof(age), "?");
	row[0] = r->id;
	row[1] = orig;
	row[2] = r->e.app;
	row[3] = r->e.handler;
	row[4] = attempts;
	row[5] = age;
	return relayctl_table_add(t, row);
}

/*
 * The footer of the `dlq ls` table: how long entries are kept. The
 * figure is the running relayd's REDIS_DLQ_RETENTION as recorded in its
 * stats file (RELAY_STATE_DIR/stats.json), which is what is enforced;
 * without that file relayctl cannot know it and says so.
 */
static void retention_note(const struct relayctl_conf *c)
{
	char path[4200], buf[64];
	json_t *snap, *v;

	snprintf(path, sizeof(path), "%s/stats.json", c->state_dir);
	snap = json_load_file(path, 0, NULL);
	v = json_object_get(json_object_get(snap, "retention"),
			    "dlq_retention_seconds");
	if (!json_is_integer(v))
		printf("\nRetention: unknown (no relayd stats file in %s); "
		       "relayd's default\nREDIS_DLQ_RETENTION=168h trims "
		       "entries older than 7 days.\n", c->state_dir);
	else if (json_integer_value(v) == 0)
		printf("\nRetention: off (REDIS_DLQ_RETENTION=0): entries are "
		       "kept until removed.\n");
	else
		printf("\nRetention: entries older than %s are trimmed "
		       "(REDIS_DLQ_RETENTION).\n", relayctl_fmt_age(
			       json_integer_value(v), buf, sizeof(buf)));
	json_decref(snap);
}

/* The row of an entry nobody can parse: its id, and that it is bad. */
static int add_bad_row(relayctl_table *t, const relay_dlq_record *r)
{
	const char *row[6] = { r->id, "(malformed)", "?", "?", "?", "?" };

	return relayctl_table_add(t, row);
}

/* An entry as JSON; with several streams it also names its stream. A
 * malformed one is {"id", "malformed": why}. */
static json_t *row_json(const struct dlqcli *d, size_t k,
			const struct dlqcli_page *p, size_t i)
{
	json_t *o;

	if (p->bad[i])
		o = dlqcli_json_bad(&p->recs[i], p->bad[i],
				    p->raw->element[i]);
	else
		o = dlqcli_json(&p->recs[i]);

	if (o && d->nkeys > 1)
		json_object_set_new(o, "stream", json_string(d->streams[k]));
	return o;
}

static int ls(int argc, char **argv)
{
	static const char *const head[] = { "ID", "ORIGINAL", "APP",
					    "HANDLER", "ATTEMPTS", "AGE" };
	struct dlqcli d;
	relayctl_table t;
	json_t *list = NULL;
	char start[64] = "-";
	long long shown = 0, nbad = 0;
	int64_t now = relayctl_now_ms();
	size_t k;
	int rc;

	rc = dlqcli_start(&d, "dlq ls", argc, argv,
			  DLQCLI_JSON | DLQCLI_FILTER | DLQCLI_LIMIT, ls_usage);
	if (rc)
		return rc < 0 ? RELAYCTL_OK : rc;
	if (relayctl_table_init(&t, 6, head) ||
	    (d.conf.json && !(list = json_array()))) {
		rc = relayctl_error(RELAYCTL_FAIL, "dlq ls: out of memory");
		goto done;
	}
	/* Every stream's DLQ in turn (one with a single stream). */
	for (k = 0; k < d.nkeys && !(d.limit && shown >= d.limit); k++) {
		snprintf(start, sizeof(start), "-");
		for (;;) {
			struct dlqcli_page p;
			const char *last;
			size_t i;

			rc = dlqcli_page(&d, d.keys[k], start, "+", PAGE, &p);
			if (rc)
				goto done;
			for (i = 0; i < p.n; i++) {
				const relay_dlq_record *r = &p.recs[i];

				if (d.limit && shown >= d.limit)
					break;
				/* A bad entry's app is unknown: shown
				 * unless its id decides (--id, times). */
				if (p.bad[i] ? !dlqfilter_match_id(&d.filter,
								   r->id)
					     : !dlqfilter_match(&d.filter, r))
					continue;
				shown++;
				nbad += p.bad[i] != NULL;
				if (list)
					rc = json_array_append_new(list,
						row_json(&d, k, &p, i));
				else if (p.bad[i])
					rc = add_bad_row(&t, r);
				else
					rc = add_row(&t, r, now);
				if (rc) {
					dlqcli_page_free(&p);
					rc = relayctl_error(RELAYCTL_FAIL,
						"dlq ls: out of memory");
					goto done;
				}
			}
			last = dlqcli_page_last(&p);
			if (last)
				snprintf(start, sizeof(start), "(%s", last);
			i = p.n;
			dlqcli_page_free(&p);
			if (i < PAGE || !last || (d.limit && shown >= d.limit))
				break;
		}
	}
	rc = relayctl_put_listing(list, &t);
	if (nbad)
		fprintf(stderr, "relayctl: dlq ls: %lld malformed DLQ "
			"entr%s listed; 'relayctl dlq inspect ID' shows what "
			"is wrong\n", nbad, nbad == 1 ? "y" : "ies");
	if (!rc && !list) {
		retention_note(&d.conf);
		rc = fflush(stdout) ? RELAYCTL_FAIL : RELAYCTL_OK;
	}
done:
	json_decref(list);
	relayctl_table_free(&t);
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
