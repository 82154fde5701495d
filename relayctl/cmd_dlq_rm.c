/*
 * cmd_dlq_rm.c - relayctl dlq rm ID | --all | FILTERS
 *
 * One ID: XDEL it, "DLQ entry removed"; an unknown ID exits 1.
 *
 * --all or filters (dlqfilter.h): the matching entries of every stream's
 * DLQ are selected first (oldest first, stream by stream; with --limit N
 * only the first N of them), then removed one XDEL at a time at --rate
 * entries per second, and "Removed N of M DLQ entries (G already gone)"
 * is printed. A malformed entry is removed when the filters can decide
 * for it (--all, --id, --since, --until, --malformed: its id is all
 * they need) and left alone, with a note on stderr, when a filter on
 * app, handler, reason or original id was given. Deleting a stream entry is idempotent, so an
 * interrupted run leaves every entry either removed or still there:
 * running the same command again finishes the job.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctlconf.h"
#include "dlqbulk.h"
#include "dlqcli.h"
#include "fmt.h"
#include "relayctl.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: relayctl dlq rm ID [connection options]\n"
		"       relayctl dlq rm --all | FILTERS [--limit N] "
		"[--dry-run] [--yes]\n"
		"                       [--rate N] [--json] [connection options]\n\n"
		"Delete DLQ entries without running anything.\n\n"
		"  --all              every entry\n"
		"  --app NAME         entries of app NAME\n"
		"  --handler NAME     entries of handler NAME\n"
		DLQCLI_FILTER_HELP
		DLQCLI_BULK_HELP
		"  -h, --help         show this help\n\n"
		"Filters combine with AND. On a terminal, more than %d "
		"entries need a\nconfirmation unless --yes is given.\n\n"
		"Exit status: 0 removed, 1 unknown ID, Redis error or "
		"aborted, 2 usage\nerror.\n", DLQBULK_RATE_RM, DLQCLI_RATE_MAX,
		relayctl_conf_help, DLQBULK_CONFIRM_OVER);
}

static int one(struct dlqcli *d)
{
	relay_error err;
	size_t k;
	int rc;

	if (!dlqcli_id_valid(d->id))
		return relayctl_error(RELAYCTL_FAIL, "dlq rm: unknown DLQ "
				      "entry \"%s\" (not a stream entry id)",
				      relayctl_c(d->id));
	rc = dlqcli_open(d);
	if (rc)
		return rc;
	rc = RELAY_ENOTFOUND;
	for (k = 0; k < d->nkeys && rc == RELAY_ENOTFOUND; k++) {
		err.text[0] = '\0';
		rc = relay_dlq_delete_sync(d->b, d->keys[k], d->id, &err);
	}
	if (rc == RELAY_ENOTFOUND)
		rc = relayctl_error(RELAYCTL_FAIL, "dlq rm: unknown DLQ entry "
				    "\"%s\"", relayctl_c(d->id));
	else if (rc)
		rc = dlqcli_store_error(d, rc, &err);
	else
		puts("DLQ entry removed");
	return rc;
}

struct rm_run {
	struct dlqcli *d;
	const struct dlqbulk *b;
	struct dlqbulk_pace pace;
	size_t done, removed, gone;
	int rc;
};

/* One selected entry: remove it. Returns 1 to stop. */
static int rm_one(void *payload, const struct dlqbulk_item *it)
{
	struct rm_run *r = payload;
	relay_error err;
	int rc;

	dlqbulk_pace(&r->pace);
	if (dlqbulk_stopping())
		return 1;
	err.text[0] = '\0';
	rc = relay_dlq_delete_sync(r->d->b, r->d->keys[it->k], it->id, &err);
	if (rc == RELAY_ENOTFOUND) {
		r->gone++;   /* trimmed or removed meanwhile */
		dlqbulk_report_entry(r->d, it, "gone", NULL);
	} else if (rc) {
		dlqbulk_progress_end();
		r->rc = dlqcli_store_error(r->d, rc, &err);
		return 1;
	} else {
		r->removed++;
		dlqbulk_report_entry(r->d, it, "removed", NULL);
	}
	r->done++;
	dlqbulk_progress(r->done, r->b->n, "removing");
	return dlqbulk_stopping();
}

static int bulk(struct dlqcli *d)
{
	struct rm_run r;
	struct dlqbulk b;
	size_t seen = 0;
	int rc, stopped;

	rc = dlqcli_open(d);
	if (rc)
		return rc;
	rc = dlqbulk_collect(d, &b);
	if (rc)
		return rc;
	dlqbulk_report_open(d, "dlq rm", b.n);
	if (d->dry_run) {
		rc = dlqbulk_dry_run(d, &b, "removed");
		goto done;
	}
	rc = dlqbulk_confirm(d, b.n, "Remove");
	if (rc)
		goto done;
	memset(&r, 0, sizeof(r));
	r.d = d;
	r.b = &b;
	dlqbulk_catch_signals();
	dlqbulk_pace_init(&r.pace, d->rate ? d->rate : DLQBULK_RATE_RM);
	rc = dlqbulk_each(d, &b, rm_one, &r, &seen);
	dlqbulk_progress_end();
	if (!rc)
		rc = r.rc;
	stopped = dlqbulk_stopping() && r.done < b.n;
	/* Selected entries that were gone before their turn came were not
	 * seen again: they are "already gone" too. */
	if (!rc && !stopped && seen < b.n)
		r.gone += b.n - seen;
	if (dlqbulk_reporting()) {
		dlqbulk_report_count("removed", r.removed);
		dlqbulk_report_count("gone", r.gone);
		if (dlqbulk_report_close(stopped) && !rc)
			rc = RELAYCTL_FAIL;
		if (stopped && !rc)
			rc = RELAYCTL_FAIL;
		goto done;
	}
	printf("Removed %zu of %zu DLQ entr%s (%zu already gone)\n",
	       r.removed, b.n, b.n == 1 ? "y" : "ies", r.gone);
	if (stopped) {
		fprintf(stderr, "relayctl: dlq rm: interrupted: %zu matching "
			"entr%s not removed; run the same command again to "
			"go on\n", b.n - r.done,
			b.n - r.done == 1 ? "y" : "ies");
		if (!rc)
			rc = RELAYCTL_FAIL;
	}
	if (fflush(stdout))
		rc = RELAYCTL_FAIL;
done:
	return dlqbulk_end(&b, rc);
}

int relayctl_cmd_dlq_rm(int argc, char **argv)
{
	struct dlqcli d;
	int rc;

	rc = dlqcli_parse(&d, "dlq rm", argc, argv,
			  DLQCLI_ID | DLQCLI_ALL | DLQCLI_FILTER | DLQCLI_BULK |
			  DLQCLI_LIMIT | DLQCLI_JSON, usage);
	if (rc)
		return rc < 0 ? RELAYCTL_OK : rc;
	if (!d.bulk && d.conf.json) {
		dlqcli_close(&d);
		return relayctl_error(RELAYCTL_USAGE, "dlq rm: --json goes "
				      "with --all or filters (a bulk run)");
	}
	rc = d.bulk ? bulk(&d) : one(&d);
	dlqcli_close(&d);
	return rc;
}
