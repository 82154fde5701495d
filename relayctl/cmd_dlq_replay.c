/*
 * cmd_dlq_replay.c - relayctl dlq replay ID | --all [--app NAME]
 *
 * The entry is read from Redis first: an unknown ID or a placeholder
 * (app "-", a malformed message: there is no handler) is refused here,
 * before relayd is contacted. Then the running relayd is asked
 * ({"cmd":"dlq replay"}, doc/protocol.md) to run exactly the recorded
 * app/handler once with the stored event; it deletes the entry when the
 * run succeeds. Success prints "Replayed handler successfully"; a failure
 * keeps the entry and exits 1 with the reason.
 *
 * --all replays every entry (of app NAME with --app) oldest first over one
 * connection, one line per entry, and exits 1 when any replay failed.
 * Placeholders are reported as skipped. An entry that cannot be parsed
 * is reported as malformed, counted, and skipped (it stays for an
 * operator: inspect, then rm); the run goes on and exits 1.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ctlsock.h"
#include "dlqcli.h"
#include "fmt.h"
#include "relayctl.h"

/* Handlers run at most 5 minutes each; leave room for the spawn. */
#define REPLAY_TIMEOUT_MS (10 * 60 * 1000)
#define PAGE 100

static void usage(FILE *f)
{
	fprintf(f, "usage: relayctl dlq replay ID [connection options]\n"
		"       relayctl dlq replay --all [--app NAME] [connection "
		"options]\n\n"
		"Ask the running relayd to run a DLQ entry's handler once "
		"with its\n"
		"event (current template timeout and env, no retries). On "
		"success the\n"
		"entry is deleted; on failure it is kept.\n\n"
		"  --all              replay every entry, oldest first\n"
		"  --app NAME         with --all: only entries of app NAME\n%s"
		"  -h, --help         show this help\n\n"
		"Exit status: 0 replayed, 1 a replay failed, unknown ID, "
		"placeholder\n"
		"or malformed entry (--all: skipped, counted, the rest "
		"replayed) or\nrelayd not reachable, 2 usage error.\n",
		relayctl_conf_help);
}

/* The first failed result as "app/handler status (reason)". */
static void failure_text(json_t *resp, char *buf, size_t size)
{
	json_t *res = json_object_get(resp, "results"), *r;
	size_t i;

	snprintf(buf, size, "no result");
	json_array_foreach(res, i, r) {
		const char *st = relayctl_jstr(r, "status", "?");

		if (strcmp(st, "ok") == 0)
			continue;
		snprintf(buf, size, "%s/%s %s (%s)",
			 relayctl_c(relayctl_jstr(r, "app", "?")),
			 relayctl_c(relayctl_jstr(r, "handler", "?")),
			 relayctl_c(st),
			 relayctl_c(relayctl_jstr(r, "reason", "")));
		return;
	}
}

/*
 * Replay @id on @fd. Returns 0 replayed, 1 failed (message in @why).
 */
static int replay_one(int fd, const struct dlqcli *d, const char *id,
		      char *why, size_t size)
{
	json_t *req = json_pack("{s:s, s:s}", "cmd", "dlq replay", "id", id);

	/* Several streams: relayd is told which one's DLQ holds it. */
	if (req && d->nkeys > 1)
		json_object_set_new(req, "stream", json_string(d->stream));
	json_t *resp;
	int rc = 1;

	if (!req) {
		snprintf(why, size, "out of memory");
		return 1;
	}
	resp = relayctl_ctl_request(fd, req, REPLAY_TIMEOUT_MS, why, size);
	json_decref(req);
	if (!resp)
		return 1;
	if (relayctl_ctl_failed(resp, why, size)) {
		json_decref(resp);
		return 1;
	}
	if (json_is_true(json_object_get(resp, "success"))) {
		rc = 0;
	} else {
		char f[600];

		failure_text(resp, f, sizeof(f));
		snprintf(why, size, "%s; the DLQ entry is kept", f);
	}
	json_decref(resp);
	return rc;
}

static int one(struct dlqcli *d)
{
	relay_dlq_record rec;
	char path[4200], why[1024];
	int rc, fd;

	rc = dlqcli_get(d, d->id, &rec);
	if (rc)
		return rc;
	if (strcmp(rec.e.app, "-") == 0) {
		relay_dlq_record_clear(&rec);
		return relayctl_error(RELAYCTL_FAIL, "dlq replay: DLQ entry "
				      "\"%s\" is not replayable: it is the "
				      "placeholder of a malformed message "
				      "(app \"-\", no handler)", d->id);
	}
	relay_dlq_record_clear(&rec);
	fd = relayctl_ctl_connect(relayctl_sock_path(&d->conf, path,
						     sizeof(path)),
				  why, sizeof(why));
	if (fd < 0)
		return relayctl_error(RELAYCTL_FAIL, "dlq replay: %s", why);
	rc = replay_one(fd, d, d->id, why, sizeof(why));
	close(fd);
	if (rc)
		return relayctl_error(RELAYCTL_FAIL, "dlq replay: %s: %s",
				      d->id, why);
	puts("Replayed handler successfully");
	return fflush(stdout) ? RELAYCTL_FAIL : RELAYCTL_OK;
}

/* Replay the entries of DLQ d->key (of stream d->stream) on @fd. */
struct tally {
	size_t done, failed, skipped, bad;
};

static int all_one(struct dlqcli *d, int fd, struct tally *t)
{
	char why[1024], start[64] = "-";
	int rc = RELAYCTL_OK;

	for (;;) {
		struct dlqcli_page p;
		const relay_dlq_record *recs;
		const char *last;
		size_t n, i;

		rc = dlqcli_page(d, d->key, start, "+", PAGE, &p);
		if (rc)
			break;
		recs = p.recs;
		n = p.n;
		for (i = 0; i < n; i++) {
			const relay_dlq_entry *e = &recs[i].e;

			if (p.bad[i]) {
				/* Its app is unknown: reported even with
				 * --app, never sent to relayd. */
				printf("%s: skipped (malformed: %s)\n",
				       relayctl_c(recs[i].id),
				       relayctl_c(p.bad[i]));
				t->bad++;
				continue;
			}
			if (d->app && strcmp(e->app, d->app) != 0)
				continue;
			if (strcmp(e->app, "-") == 0) {
				printf("%s -/-: skipped (placeholder of a "
				       "malformed message, not replayable)\n",
				       relayctl_c(recs[i].id));
				t->skipped++;
				continue;
			}
			if (replay_one(fd, d, recs[i].id, why,
				       sizeof(why))) {
				printf("%s %s\n", relayctl_c(recs[i].id),
				       relayctl_c(why));
				t->failed++;
			} else {
				printf("%s %s/%s replayed\n",
				       relayctl_c(recs[i].id),
				       relayctl_c(e->app),
				       relayctl_c(e->handler));
				t->done++;
			}
			fflush(stdout);
		}
		last = dlqcli_page_last(&p);
		if (last)
			snprintf(start, sizeof(start), "(%s", last);
		dlqcli_page_free(&p);
		if (n < PAGE || !last)
			break;
	}
	return rc;
}

static int all(struct dlqcli *d)
{
	char path[4200], why[1024];
	struct tally t = { 0, 0, 0, 0 };
	size_t k;
	int fd, rc = RELAYCTL_OK;

	fd = relayctl_ctl_connect(relayctl_sock_path(&d->conf, path,
						     sizeof(path)),
				  why, sizeof(why));
	if (fd < 0)
		return relayctl_error(RELAYCTL_FAIL, "dlq replay: %s", why);
	/* Every stream's DLQ in turn (one with a single stream). */
	for (k = 0; k < d->nkeys && !rc; k++) {
		d->key = d->keys[k];
		d->stream = d->streams[k];
		rc = all_one(d, fd, &t);
	}
	close(fd);
	if (rc)
		return rc;
	printf("Replayed %zu of %zu entries (%zu failed, %zu skipped",
	       t.done, t.done + t.failed + t.skipped + t.bad, t.failed,
	       t.skipped + t.bad);
	if (t.bad)
		printf(", %zu of them malformed", t.bad);
	puts(")");
	if (fflush(stdout))
		return RELAYCTL_FAIL;
	return t.failed || t.bad ? RELAYCTL_FAIL : RELAYCTL_OK;
}

int relayctl_cmd_dlq_replay(int argc, char **argv)
{
	struct dlqcli d;
	int rc;

	rc = dlqcli_start(&d, "dlq replay", argc, argv,
			  DLQCLI_ID | DLQCLI_ALL, usage);
	if (rc)
		return rc < 0 ? RELAYCTL_OK : rc;
	rc = d.all ? all(&d) : one(&d);
	dlqcli_close(&d);
	return rc;
}
