/*
 * cmd_dlq_replay.c - relayctl dlq replay ID | --all | FILTERS
 *
 * One ID: the entry is read from Redis first: an unknown ID or a
 * placeholder (app "-", a malformed message: there is no handler) is
 * refused here, before relayd is contacted. Then the running relayd is
 * asked ({"cmd":"dlq replay"}, doc/protocol.md) to run exactly the
 * recorded app/handler once with the stored event; it deletes the entry
 * when the run succeeds. Success prints "Replayed handler successfully";
 * a failure keeps the entry and exits 1 with the reason.
 *
 * --all or filters (dlqfilter.h): the matching entries of every stream's
 * DLQ are selected first (oldest first, stream by stream; with --limit N
 * only the first N of them), then replayed
 * one at a time over one connection at --rate entries per second, one
 * line per entry, then "Replayed D of N entries (...)". Placeholders are
 * reported as skipped. An entry that cannot be parsed is reported as
 * malformed, counted, and skipped (it stays for an operator: inspect,
 * then rm); the run goes on and exits 1. So does a failed replay.
 *
 * Never twice: before asking relayd, relayctl claims the entry with a
 * marker key relay:<stream>:dlq:replaying:<id> (SET NX, expiring after
 * MARK_TTL_MS, longer than any replay can take). An entry whose marker
 * exists is skipped: another relayctl is replaying it, or one was
 * interrupted while relayd ran it (relayd finishes a replay, and deletes
 * the entry, even when relayctl is gone). After a definite answer the
 * marker goes: deleted when the run failed (the entry is kept and may be
 * replayed again), left to expire within MARK_DONE_MS after a success
 * (relayd deletes the entry right after answering). Without an answer
 * (relayd unreachable mid-request, stopping) the outcome is unknown: the
 * marker stays for its full TTL and a bulk run stops.
 *
 * Never lost: an entry leaves the DLQ only when relayd deleted it after
 * its successful run. SIGINT or SIGTERM finishes the entry in hand and
 * stops; running the same command again goes on with what is left.
 *
 * --redrive: instead of asking relayd, each entry's event goes back into
 * its source stream, one atomic script per entry (dlqredrive.c); relayd
 * then treats it as a new message. Same selection, --dry-run, --yes,
 * --rate and interruption as above; relayd need not run.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ctlsock.h"
#include "dlqbulk.h"
#include "dlqcli.h"
#include "dlqredrive.h"
#include "fmt.h"
#include "relayctl.h"

/* Handlers run at most 5 minutes each; leave room for the spawn. */
#define REPLAY_TIMEOUT_MS (10 * 60 * 1000)
/* A claim outlives any replay; after a success, relayd's XDEL. */
#define MARK_TTL_MS (REPLAY_TIMEOUT_MS + 60 * 1000)
#define MARK_DONE_MS (60 * 1000)

static void usage(FILE *f)
{
	fprintf(f, "usage: relayctl dlq replay [--redrive] ID "
		"[connection options]\n"
		"       relayctl dlq replay [--redrive] --all | FILTERS "
		"[--limit N] [--dry-run]\n"
		"                           [--yes] [--rate N] [--json] [connection "
		"options]\n\n"
		"Ask the running relayd to run a DLQ entry's handler once "
		"with its\n"
		"event (current template timeout and env, no retries), "
		"printing its\noutput. On success the entry is deleted; on "
		"failure it is kept.\n\n"
		"  --redrive          instead, add the entry's event to its "
		"source stream\n"
		"                     again (field relay_redrive_of = the "
		"entry's id) and\n"
		"                     delete the entry, in one step: relayd "
		"matches it\n"
		"                     against today's templates, with retries "
		"and DLQ\n"
		"                     entries as for any message\n"
		"  --all              replay every entry, oldest first\n"
		"  --app NAME         entries of app NAME\n"
		"  --handler NAME     entries of handler NAME\n"
		DLQCLI_FILTER_HELP
		DLQCLI_BULK_HELP
		"  -h, --help         show this help\n\n"
		"Filters combine with AND. On a terminal, more than %d "
		"entries need a\nconfirmation unless --yes is given. An entry "
		"is never replayed twice at\nonce: one being replayed (or "
		"whose replay was interrupted less than %d\nminutes ago) is "
		"skipped. ^C finishes the entry in hand and stops.\n\n"
		"Exit status: 0 replayed, 1 a replay failed, unknown ID, "
		"placeholder\n"
		"or malformed entry (--all: skipped, counted, the rest "
		"replayed),\nrelayd not reachable or interrupted, 2 usage "
		"error.\n", DLQBULK_RATE_REPLAY, DLQCLI_RATE_MAX,
		relayctl_conf_help, DLQBULK_CONFIRM_OVER,
		MARK_TTL_MS / 60000);
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

/* What one replay came to. */
enum outcome {
	REPLAYED,   /* relayd ran it and deletes the entry */
	FAILED,     /* relayd said no, or the run failed: entry kept */
	GONE,       /* no such entry (any more) */
	BUSY,       /* claimed by someone else: not asked */
	UNKNOWN,    /* no answer: it may have run */
	STORE,      /* the claim could not be made (Redis) */
};

/* The claim of entry @id of @stream: relay:<stream>:dlq:replaying:<id>. */
static char *mark_key(const char *stream, const char *id)
{
	char *dlq = relay_dlq_key(stream), *k;
	size_t n;

	if (!dlq)
		return NULL;
	n = strlen(dlq) + strlen(id) + 16;
	k = malloc(n);
	if (k)
		snprintf(k, n, "%s:replaying:%s", dlq, id);
	relay_free(dlq);
	return k;
}

/* SET key NX PX: 1 claimed, 0 held by another, -1 error (@why). */
static int mark_claim(struct dlqcli *d, const char *key, char *why,
		      size_t size)
{
	char val[64], ttl[24];
	const char *argv[6] = { "SET", key, val, "NX", "PX", ttl };
	relay_redis_reply *r = NULL;
	int rc;

	snprintf(val, sizeof(val), "relayctl %ld %lld", (long)getpid(),
		 (long long)relayctl_now_ms());
	snprintf(ttl, sizeof(ttl), "%d", MARK_TTL_MS);
	rc = relay_redis_sync_command(d->b, &r, 6, argv, NULL);
	if (rc == 0)
		rc = relay_redis_reply_error(r);
	if (rc) {
		snprintf(why, size, "Redis: SET %s: %s", relayctl_c(key),
			 relayctl_c(r && r->str ? r->str
					       : relay_strerror(rc)));
		relay_redis_reply_free(r);
		return -1;
	}
	rc = r->type == RELAY_REDIS_REPLY_NIL ? 0 : 1;
	relay_redis_reply_free(r);
	return rc;
}

/* Release a claim: DEL, or expire soon after a success. Best effort:
 * the claim expires by itself anyway. */
static void mark_release(struct dlqcli *d, const char *key, int replayed)
{
	char ms[24];
	const char *del[2] = { "DEL", key };
	const char *exp[3] = { "PEXPIRE", key, ms };
	relay_redis_reply *r = NULL;

	snprintf(ms, sizeof(ms), "%d", MARK_DONE_MS);
	if (relay_redis_sync_command(d->b, &r, replayed ? 3 : 2,
				     replayed ? exp : del, NULL) == 0)
		relay_redis_reply_free(r);
}

/* Ask relayd on @fd to replay @id of DLQ stream @stream; with @output,
 * print the handler's output it sends back. */
static enum outcome ask(int fd, const struct dlqcli *d, const char *stream,
			const char *id, int output, char *why, size_t size)
{
	json_t *req = json_pack("{s:s, s:s, s:b}", "cmd", "dlq replay", "id",
				id, "output", output);
	json_t *resp;
	const char *code;
	enum outcome o = FAILED;

	if (!req) {
		snprintf(why, size, "out of memory");
		return FAILED;
	}
	/* Several streams: relayd is told which one's DLQ holds it. */
	if (d->nkeys > 1)
		json_object_set_new(req, "stream", json_string(stream));
	resp = relayctl_ctl_request(fd, req, REPLAY_TIMEOUT_MS, why, size);
	json_decref(req);
	if (!resp)
		return UNKNOWN;
	if (output)
		relayctl_put_run_output(resp, "dlq replay");
	code = relayctl_ctl_failed(resp, why, size);
	if (code) {
		/* not_found is also an app or handler that is gone (the
		 * entry is kept); "stopping" may come after the handler
		 * started. */
		const char *msg = relayctl_jstr(resp, "message", "");

		o = strcmp(code, "not_found") == 0 &&
		    strncmp(msg, "no such DLQ entry", 17) == 0 ? GONE
		    : strcmp(code, "stopping") == 0 ? UNKNOWN
						    : FAILED;
	} else if (json_is_true(json_object_get(resp, "success"))) {
		o = REPLAYED;
	} else {
		char f[600];

		failure_text(resp, f, sizeof(f));
		snprintf(why, size, "%s; the DLQ entry is kept", f);
	}
	json_decref(resp);
	return o;
}

/* Claim, ask, release. */
static enum outcome replay_one(int fd, struct dlqcli *d, size_t k,
			       const char *id, int output, char *why,
			       size_t size)
{
	char *key = mark_key(d->streams[k], id);
	enum outcome o;
	int c;

	if (!key) {
		snprintf(why, size, "out of memory");
		return STORE;
	}
	c = mark_claim(d, key, why, size);
	if (c <= 0) {
		if (c == 0)
			snprintf(why, size, "skipped (being replayed, or its "
				 "replay was interrupted less than %d minutes "
				 "ago: %s)", MARK_TTL_MS / 60000,
				 relayctl_c(key));
		free(key);
		return c == 0 ? BUSY : STORE;
	}
	o = ask(fd, d, d->streams[k], id, output, why, size);
	if (o != UNKNOWN)
		mark_release(d, key, o == REPLAYED);
	free(key);
	return o;
}

static int connect_relayd(const struct dlqcli *d)
{
	char path[4200], why[1024];
	int fd = relayctl_ctl_connect(relayctl_sock_path(&d->conf, path,
							 sizeof(path)),
				      why, sizeof(why));

	if (fd < 0)
		relayctl_error(RELAYCTL_FAIL, "%s: %s", d->cmd, why);
	return fd;
}

/* The index of d->key (the DLQ dlqcli_get() found the entry in). */
static size_t key_index(const struct dlqcli *d)
{
	size_t k;

	for (k = 0; k < d->nkeys && strcmp(d->keys[k], d->key); k++)
		;
	return k < d->nkeys ? k : 0;
}

/* --redrive ID. */
static int one_redrive(struct dlqcli *d, relay_dlq_record *rec)
{
	char why[1024], nid[64];
	size_t k = key_index(d);
	enum dlqredrive_result r;

	r = dlqredrive_one(d, k, rec, nid, sizeof(nid), why, sizeof(why));
	relay_dlq_record_clear(rec);
	if (r != DLQREDRIVE_DONE)
		return relayctl_error(RELAYCTL_FAIL, "dlq replay: %s: %s",
				      relayctl_c(d->id), why);
	printf("Redriven into %s as %s\n", relayctl_c(d->streams[k]),
	       relayctl_c(nid));
	return fflush(stdout) ? RELAYCTL_FAIL : RELAYCTL_OK;
}

static int one(struct dlqcli *d)
{
	relay_dlq_record rec;
	char why[1024];
	int rc, fd;

	rc = dlqcli_get(d, d->id, &rec);
	if (rc)
		return rc;
	if (d->redrive)
		return one_redrive(d, &rec);
	if (strcmp(rec.e.app, "-") == 0) {
		relay_dlq_record_clear(&rec);
		return relayctl_error(RELAYCTL_FAIL, "dlq replay: DLQ entry "
				      "\"%s\" is not replayable: it is the "
				      "placeholder of a malformed message "
				      "(app \"-\", no handler)",
				      relayctl_c(d->id));
	}
	relay_dlq_record_clear(&rec);
	fd = connect_relayd(d);
	if (fd < 0)
		return RELAYCTL_FAIL;
	rc = replay_one(fd, d, key_index(d), d->id, 1, why, sizeof(why));
	close(fd);
	if (rc == UNKNOWN)
		return relayctl_error(RELAYCTL_FAIL, "dlq replay: %s: no "
				      "answer from relayd (%s): it may have "
				      "run; 'dlq ls --id %s' tells whether the "
				      "entry is still there", d->id, why,
				      d->id);
	if (rc != REPLAYED)
		return relayctl_error(RELAYCTL_FAIL, "dlq replay: %s: %s",
				      d->id, why);
	puts("Replayed handler successfully");
	return fflush(stdout) ? RELAYCTL_FAIL : RELAYCTL_OK;
}

struct tally {
	size_t done, failed, skipped, bad, busy, gone;
};


/* The command whose bulk run is under way (for --json). */
static const struct dlqcli *bulk_d;

/* With --json, record item @it: the first word of @what is the result
 * ("already gone" is "gone"), the rest its detail. Returns 1 if so. */
static int report(const struct dlqbulk_item *it, const char *what)
{
	char result[32];
	size_t n;

	if (!dlqbulk_reporting())
		return 0;
	if (strncmp(what, "already gone", 12) == 0) {
		snprintf(result, sizeof(result), "gone");
		what += 12;
	} else {
		n = strcspn(what, " ");
		snprintf(result, sizeof(result), "%.*s",
			 (int)(n < sizeof(result) ? n : sizeof(result) - 1),
			 what);
		what += n;
	}
	while (*what == ' ')
		what++;
	return dlqbulk_report_entry(bulk_d, it, result, what);
}

/* Print the line of item @it: @what after "<id> <app>/<handler>". */
static void line(const struct dlqbulk_item *it, const char *what)
{
	if (report(it, what))
		return;
	dlqbulk_progress_end();
	printf("%s %s/%s %s\n", relayctl_c(it->id), relayctl_c(it->app),
	       relayctl_c(it->handler), what);
	fflush(stdout);
}

/* --redrive of item @it (not malformed, not a placeholder): read it
 * again (it may have changed hands), then the script. */
static int bulk_redrive(struct dlqcli *d, const struct dlqbulk_item *it,
			struct tally *t)
{
	char why[1024], nid[64], text[200];
	relay_dlq_record rec;
	relay_error err;
	int rc;

	memset(&err, 0, sizeof(err));
	rc = relay_dlq_get_sync(d->b, d->keys[it->k], it->id, &rec, &err);
	if (rc == RELAY_ENOTFOUND) {
		line(it, "already gone (removed meanwhile)");
		t->gone++;
		return 0;
	}
	if (rc) {
		dlqbulk_progress_end();
		return relayctl_error(RELAYCTL_FAIL, "dlq replay: %s: %s",
				      relayctl_c(it->id),
				      relayctl_c(err.text));
	}
	switch (dlqredrive_one(d, it->k, &rec, nid, sizeof(nid), why,
			       sizeof(why))) {
	case DLQREDRIVE_DONE:
		snprintf(text, sizeof(text), "redriven as %s",
			 relayctl_c(nid));
		line(it, text);
		t->done++;
		break;
	case DLQREDRIVE_GONE:
		line(it, why);
		t->gone++;
		break;
	case DLQREDRIVE_BUSY:
		line(it, why);
		t->busy++;
		break;
	case DLQREDRIVE_REFUSED:
		snprintf(text, sizeof(text), "skipped (%.180s)", why);
		line(it, text);
		t->skipped++;
		break;
	default:
		dlqbulk_progress_end();
		relay_dlq_record_clear(&rec);
		return relayctl_error(RELAYCTL_FAIL, "dlq replay: %s: %s",
				      relayctl_c(it->id), why);
	}
	relay_dlq_record_clear(&rec);
	return 0;
}

/* Replay item @it on @fd. Returns 0 to go on, else an exit code. */
static int bulk_item(struct dlqcli *d, int fd, const struct dlqbulk_item *it,
		     struct tally *t)
{
	char why[1024];

	if (it->bad) {
		/* Its app is unknown: reported even with filters on
		 * fields, never sent to relayd. */
		char text[1100];

		t->bad++;
		snprintf(text, sizeof(text), "skipped (malformed: %.1000s)",
			 it->bad);
		if (report(it, text))
			return 0;
		dlqbulk_progress_end();
		printf("%s: skipped (malformed: %s)\n", relayctl_c(it->id),
		       relayctl_c(it->bad));
		return 0;
	}
	if (strcmp(it->app, "-") == 0) {
		if (report(it, "skipped (placeholder of a malformed message, "
			   "not replayable)")) {
			t->skipped++;
			return 0;
		}
		dlqbulk_progress_end();
		printf("%s -/-: skipped (placeholder of a malformed message, "
		       "not replayable)\n", relayctl_c(it->id));
		t->skipped++;
		return 0;
	}
	if (d->redrive)
		return bulk_redrive(d, it, t);
	switch (replay_one(fd, d, it->k, it->id, 0, why, sizeof(why))) {
	case REPLAYED:
		line(it, "replayed");
		t->done++;
		return 0;
	case GONE:
		line(it, "already gone (removed meanwhile)");
		t->gone++;
		return 0;
	case BUSY:
		line(it, why);
		t->busy++;
		return 0;
	case FAILED:
		t->failed++;
		if (dlqbulk_reporting()) {
			dlqbulk_report_entry(d, it, "failed", why);
			return 0;
		}
		dlqbulk_progress_end();
		printf("%s %s\n", relayctl_c(it->id), relayctl_c(why));
		return 0;
	case UNKNOWN:
		dlqbulk_progress_end();
		return relayctl_error(RELAYCTL_FAIL, "dlq replay: %s: no "
				      "answer from relayd (%s): it may have "
				      "run, so its claim is kept for %d "
				      "minutes; stopping", relayctl_c(it->id),
				      why, MARK_TTL_MS / 60000);
	default:
		dlqbulk_progress_end();
		return relayctl_error(RELAYCTL_FAIL, "dlq replay: %s: %s",
				      relayctl_c(it->id), why);
	}
}

struct replay_run {
	struct dlqcli *d;
	const struct dlqbulk *b;
	struct tally *t;
	struct dlqbulk_pace pace;
	int fd;
	size_t done;
	int rc;
};

/* One selected entry: replay it. Returns 1 to stop. */
static int replay_item(void *payload, const struct dlqbulk_item *it)
{
	struct replay_run *r = payload;

	dlqbulk_pace(&r->pace);
	if (dlqbulk_stopping())
		return 1;
	r->rc = bulk_item(r->d, r->fd, it, r->t);
	r->done++;
	dlqbulk_progress(r->done, r->b->n, r->d->redrive ? "redriving"
							 : "replaying");
	return r->rc || dlqbulk_stopping();
}

/* *@next: how many entries were dealt with. */
static int bulk_run(struct dlqcli *d, const struct dlqbulk *b,
		    struct tally *t, size_t *next)
{
	struct replay_run r;
	size_t seen = 0;
	int rc;

	memset(&r, 0, sizeof(r));
	r.d = d;
	r.b = b;
	r.t = t;
	/* A redrive only writes Redis: relayd need not run. */
	r.fd = d->redrive ? -1 : connect_relayd(d);
	if (r.fd < 0 && !d->redrive)
		return RELAYCTL_FAIL;
	dlqbulk_catch_signals();
	dlqbulk_pace_init(&r.pace, d->rate ? d->rate : DLQBULK_RATE_REPLAY);
	rc = dlqbulk_each(d, b, replay_item, &r, &seen);
	dlqbulk_progress_end();
	if (r.fd >= 0)
		close(r.fd);
	if (!rc)
		rc = r.rc;
	/* Selected entries removed before their turn came were not seen
	 * again: they are "already gone". */
	if (!rc && !dlqbulk_stopping() && seen < b->n) {
		t->gone += b->n - seen;
		r.done = b->n;
	}
	*next = r.done;
	return rc;
}

static int bulk(struct dlqcli *d)
{
	struct tally t = { 0, 0, 0, 0, 0, 0 };
	struct dlqbulk b;
	size_t next = 0;
	int rc;

	rc = dlqcli_open(d);
	if (rc)
		return rc;
	rc = dlqbulk_collect(d, &b);
	if (rc)
		return rc;
	bulk_d = d;
	dlqbulk_report_open(d, d->redrive ? "dlq replay --redrive"
					  : "dlq replay", b.n);
	if (d->dry_run) {
		rc = dlqbulk_dry_run(d, &b, d->redrive ? "redriven"
						       : "replayed");
		goto done;
	}
	rc = dlqbulk_confirm(d, b.n, d->redrive ? "Redrive" : "Replay");
	if (rc)
		goto done;
	rc = bulk_run(d, &b, &t, &next);
	if (rc && next == 0 && !t.done)
		goto done;
	if (dlqbulk_reporting()) {
		int stopped = dlqbulk_stopping() && next < b.n;

		dlqbulk_report_count(d->redrive ? "redriven" : "replayed",
				     t.done);
		dlqbulk_report_count("failed", t.failed);
		dlqbulk_report_count("skipped", t.skipped);
		dlqbulk_report_count("malformed", t.bad);
		dlqbulk_report_count("busy", t.busy);
		dlqbulk_report_count("gone", t.gone);
		if (dlqbulk_report_close(stopped) && !rc)
			rc = RELAYCTL_FAIL;
		if (!rc && (stopped || t.failed || t.bad || t.busy))
			rc = RELAYCTL_FAIL;
		goto done;
	}
	printf("%s %zu of %zu entries (%zu failed, %zu skipped",
	       d->redrive ? "Redriven" : "Replayed", t.done, b.n, t.failed,
	       t.skipped + t.bad + t.busy);
	if (t.bad)
		printf(", %zu of them malformed", t.bad);
	if (t.busy)
		printf(", %zu of them being replayed elsewhere", t.busy);
	if (t.gone)
		printf(", %zu already gone", t.gone);
	puts(")");
	if (!rc && dlqbulk_stopping() && next < b.n) {
		fprintf(stderr, "relayctl: dlq replay: interrupted: %zu "
			"matching entr%s not %s; run the same command "
			"again to go on\n", b.n - next,
			b.n - next == 1 ? "y" : "ies",
			d->redrive ? "redriven" : "replayed");
		rc = RELAYCTL_FAIL;
	}
	if (fflush(stdout))
		rc = RELAYCTL_FAIL;
	if (!rc && (t.failed || t.bad || t.busy))
		rc = RELAYCTL_FAIL;
done:
	return dlqbulk_end(&b, rc);
}

int relayctl_cmd_dlq_replay(int argc, char **argv)
{
	struct dlqcli d;
	int rc;

	rc = dlqcli_parse(&d, "dlq replay", argc, argv,
			  DLQCLI_ID | DLQCLI_ALL | DLQCLI_FILTER | DLQCLI_BULK |
			  DLQCLI_LIMIT | DLQCLI_REDRIVE | DLQCLI_JSON, usage);
	if (rc)
		return rc < 0 ? RELAYCTL_OK : rc;
	if (!d.bulk && d.conf.json) {
		dlqcli_close(&d);
		return relayctl_error(RELAYCTL_USAGE, "dlq replay: --json goes "
				      "with --all or filters (a bulk run)");
	}
	if (!d.bulk)
		rc = dlqcli_open(&d);
	if (!rc)
		rc = d.bulk ? bulk(&d) : one(&d);
	dlqcli_close(&d);
	return rc;
}
