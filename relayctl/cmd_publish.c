/*
 * cmd_publish.c - relayctl publish [--file F | JSON | -] [--key K]
 *                 [--traceparent TP] [--explain] [--wait [--timeout D]]
 *
 * Checks an event as relayd's classification would (at most
 * MAX_EVENT_BYTES, no NUL byte, valid JSON, an object, a well-formed
 * schedule occurrence if it is one) and refuses what relayd would
 * dead-letter (exit 2, nothing written). Then XADDs it to the configured
 * stream with the field names relayd reads ("event", and "traceparent"
 * for --traceparent) and prints the new entry's id. With several streams
 * (partitions, doc/configuration.md C-8) the partition is the one
 * relay_stream_partition(--key) picks, the documented producer rule; with
 * no --key the command refuses rather than guess.
 *
 * --explain first prints what relayctl match --explain prints (the same
 * code, matchexplain.h). --wait then polls until relayd has acknowledged
 * the entry (delivered to REDIS_GROUP and no longer in its PEL: every
 * invocation is then terminal, doc/redis-layout.md R-3) and prints each
 * invocation's outcome from the state hash, naming the DLQ entry of a
 * dead-lettered one. Exit 1 when one was dead-lettered, 3 on --timeout.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cmdutil.h"
#include "ctlconf.h"
#include "fmt.h"
#include "matchexplain.h"
#include "relay/dlq.h"
#include "relay/engine.h"
#include "relay/invocation.h"
#include "relay/occurrence.h"
#include "relay/trace.h"
#include "relayctl.h"

#define CMD "publish"
#define PUBLISH_TIMEOUT 3          /* exit status: --wait timed out */
#define WAIT_DEFAULT_MS 60000      /* --timeout default: 1 minute */
#define POLL_MS 100                /* --wait polling interval */
#define DLQ_PAGE "100"             /* DLQ entries read per XRANGE */
#define DLQ_PAGES 100              /* at most 10,000 DLQ entries scanned */

struct pub {
	struct relayctl_conf conf;
	const char *file;         /* --file F ("-": stdin) */
	const char *text;         /* the JSON argument, or "-" */
	const char *key;          /* --key K */
	const char *traceparent;  /* --traceparent TP */
	bool explain, wait;
	int64_t timeout_ms;
	size_t max_bytes;         /* MAX_EVENT_BYTES */
	char *event;              /* the event text (new) */
	size_t len;
	char **streams;           /* relay_stream_list_parse() of the stream */
	size_t nstreams;
	const char *stream;       /* the one written to (in streams) */
	relay_redis_backend *b;
	char id[64];              /* the new entry's id */
};

static void usage(FILE *f)
{
	fprintf(f, "usage: relayctl publish [--stream S] [--key KEY] "
		"[--traceparent TP] [--explain]\n"
		"                        [--wait [--timeout D]] "
		"(--file F | JSON | -)\n\n"
		"Check an event as relayd would, XADD it to the stream as its\n"
		"\"event\" field and print the new entry's id. JSON is the "
		"event\nitself; \"-\" or --file - reads it from stdin.\n\n"
		"  --file F           read the event from file F\n"
		"  --key KEY          with several streams (partitions): "
		"publish to\n"
		"                     the one relay_stream_partition(KEY) "
		"picks\n"
		"  --traceparent TP   a W3C traceparent, sent as the entry's\n"
		"                     \"traceparent\" field\n"
		"  --explain          first list every rule as 'relayctl "
		"match\n"
		"                     --explain' does (apps from --apps)\n"
		"  --wait             wait until relayd has acknowledged the\n"
		"                     entry; print each invocation's outcome\n"
		"  --timeout D        how long --wait waits (default 1m, "
		"e.g. 30s)\n"
		"%s"
		"  -h, --help         show this help\n\n"
		"MAX_EVENT_BYTES (default 256KiB) bounds the event as in "
		"relayd.\n"
		"Exit status: 0 published (with --wait: every invocation "
		"succeeded),\n"
		"1 failure (with --wait: an invocation was dead-lettered), "
		"2 usage\nerror or an event relayd would dead-letter, 3 "
		"--wait timed out.\n", relayctl_conf_help);
}

/* MAX_EVENT_BYTES as relayd parses it: digits and B, KiB or MiB. */
static int max_bytes(size_t *out)
{
	const char *v = getenv("MAX_EVENT_BYTES");
	unsigned long long n, mul = 1;
	char *end;

	*out = RELAY_CONSUMER_DEFAULT_MAX_EVENT_BYTES;
	if (!v || !*v)
		return 0;
	errno = 0;
	n = *v >= '0' && *v <= '9' ? strtoull(v, &end, 10) : 0;
	if (n == 0 || errno)
		goto bad;
	if (strcmp(end, "KiB") == 0)
		mul = 1024;
	else if (strcmp(end, "MiB") == 0)
		mul = 1024 * 1024;
	else if (*end && strcmp(end, "B"))
		goto bad;
	if (n > RELAY_CONSUMER_MAX_EVENT_BYTES_LIMIT / mul)
		return relayctl_error(RELAYCTL_USAGE, CMD ": MAX_EVENT_BYTES: "
				      "invalid value \"%s\": at most 1MiB "
				      "(1048576 bytes)", v);
	*out = (size_t)(n * mul);
	return 0;
bad:
	return relayctl_error(RELAYCTL_USAGE, CMD ": MAX_EVENT_BYTES: invalid "
			      "value \"%s\": expected a positive byte count, "
			      "optionally with a B, KiB or MiB suffix", v);
}

/*
 * Read the event (at most p->max_bytes + 1 bytes: enough to know it is
 * too big, never more) from --file, stdin or the argument.
 */
static int read_event(struct pub *p, bool *too_big)
{
	const char *path = p->file ? p->file : p->text;
	size_t cap = p->max_bytes + 1, n = 0, r;
	FILE *f;

	*too_big = false;
	if (!p->file && strcmp(p->text, "-")) {
		p->len = strlen(p->text);
		*too_big = p->len > p->max_bytes;
		p->event = strdup(p->text);
		return p->event ? 0 : relayctl_error(RELAYCTL_FAIL, CMD ": out "
						     "of memory");
	}
	f = strcmp(path, "-") ? fopen(path, "rb") : stdin;
	if (!f)
		return relayctl_error(RELAYCTL_FAIL, CMD ": %s: %s", path,
				      strerror(errno));
	p->event = malloc(cap + 1);
	if (!p->event) {
		if (f != stdin)
			fclose(f);
		return relayctl_error(RELAYCTL_FAIL, CMD ": out of memory");
	}
	while (n < cap && (r = fread(p->event + n, 1, cap - n, f)) > 0)
		n += r;
	if (ferror(f)) {
		int e = errno;
		const char *what = f == stdin ? "stdin" : path;

		if (f != stdin)
			fclose(f);
		return relayctl_error(RELAYCTL_FAIL, CMD ": %s: %s", what,
				      strerror(e));
	}
	if (f != stdin)
		fclose(f);
	p->event[n] = '\0';
	p->len = n;
	*too_big = n > p->max_bytes;
	return 0;
}

/*
 * relayd's classification, in its order (consumer_msg.c classify()):
 * size, NUL byte, schedule occurrence, JSON, object. Returns 0 or
 * RELAYCTL_USAGE with the reason printed.
 */
static int check_event(struct pub *p, bool too_big)
{
	relay_schedule_occurrence *o = NULL;
	relay_ruleset *rs = NULL;
	relay_matcher *m = NULL;
	const uint32_t *ids;
	relay_error err;
	size_t n;
	int rc;

	if (too_big)
		return relayctl_error(RELAYCTL_USAGE, CMD ": the event is more "
				      "than MAX_EVENT_BYTES (%zu bytes): "
				      "relayd would dead-letter it as "
				      "oversized", p->max_bytes);
	if (memchr(p->event, '\0', p->len))
		return relayctl_error(RELAYCTL_USAGE, CMD ": the event holds a "
				      "NUL byte: relayd would dead-letter it");
	if (relay_schedule_is_occurrence(p->event, p->len)) {
		rc = relay_schedule_occurrence_parse(&o, p->event, p->len,
						     &err);
		relay_schedule_occurrence_free(o);
		if (rc == RELAY_ENOMEM)
			return relayctl_error(RELAYCTL_FAIL, CMD ": out of "
					      "memory");
		if (rc)
			return relayctl_error(RELAYCTL_USAGE, CMD ": malformed "
					      "schedule occurrence: %s (relayd "
					      "would dead-letter it)",
					      err.text);
		return 0;
	}
	/* The matcher validates the whole text as relayd's does; an empty
	 * rule set is enough to check it. */
	rc = relay_ruleset_new(&rs);
	if (!rc)
		rc = relay_ruleset_build(rs);
	if (!rc)
		rc = relay_matcher_new(&m, rs);
	if (!rc) {
		rc = relay_matcher_match(m, p->event, p->len, 0, &ids, &n);
		if (rc == RELAY_EPARSE)
			rc = relayctl_error(RELAYCTL_USAGE, CMD ": invalid "
					    "JSON: %s: relayd would "
					    "dead-letter it",
					    relay_matcher_errstr(m));
		else if (rc == RELAY_ETYPE)
			rc = relayctl_error(RELAYCTL_USAGE, CMD ": the event is "
					    "not a JSON object: relayd would "
					    "dead-letter it");
	}
	if (rc && rc != RELAYCTL_USAGE)
		rc = relayctl_error(RELAYCTL_FAIL, CMD ": %s",
				    relay_strerror(rc));
	relay_matcher_free(m);
	relay_ruleset_free(rs);
	return rc;
}

/* --explain: the rules, as match --explain prints them. */
static int explain(struct pub *p)
{
	relay_wall_ms now = relay_clock_wall_ms(NULL);
	relay_appset *set = NULL;
	relay_matcher *m = NULL;
	relay_app_match *v = NULL;
	json_t *ev = NULL;
	size_t n = 0;
	int rc;

	if (relay_schedule_is_occurrence(p->event, p->len)) {
		printf("a schedule occurrence: relayd runs its schedule's "
		       "handler, never pattern rules\n");
		return 0;
	}
	rc = relayctl_load_apps(&set, CMD, p->conf.apps);
	if (rc)
		return rc;
	if (relay_appset_invalid_count(set)) {
		rc = RELAYCTL_FAIL;
		goto done;
	}
	if (relay_matcher_new(&m, relay_appset_ruleset(set))) {
		rc = relayctl_error(RELAYCTL_FAIL, CMD ": out of memory");
		goto done;
	}
	rc = relay_appset_match(set, m, p->event, p->len, now, &v, &n);
	if (rc) {
		rc = relayctl_error(RELAYCTL_FAIL, CMD ": %s",
				    relay_strerror(rc));
		goto done;
	}
	ev = json_loadb(p->event, p->len, JSON_ALLOW_NUL, NULL);
	relayctl_match_explain(set, v, n, ev, now);
	if (!n)
		printf("no rule matches: relayd acknowledges the event "
		       "without running anything\n");
done:
	json_decref(ev);
	relay_free(v);
	relay_matcher_free(m);
	relay_appset_free(set);
	return rc;
}

/* Which stream: the only one, or the partition of --key. */
static int pick_stream(struct pub *p)
{
	relay_error err;

	memset(&err, 0, sizeof(err));
	if (relay_stream_list_parse(p->conf.stream, &p->streams, &p->nstreams,
				    &err))
		return relayctl_error(RELAYCTL_USAGE, CMD ": REDIS_STREAM: "
				      "invalid value \"%s\": %s",
				      p->conf.stream, err.text);
	if (p->nstreams == 1) {
		p->stream = p->streams[0];
		return 0;
	}
	if (!p->key)
		return relayctl_error(RELAYCTL_USAGE, CMD ": REDIS_STREAM "
				      "names %zu streams (partitions) and "
				      "relayctl cannot tell which one this "
				      "event belongs to: pass --key KEY (the "
				      "partition relay_stream_partition(KEY) "
				      "picks, as producers do) or --stream "
				      "NAME", p->nstreams);
	p->stream = p->streams[relay_stream_partition(p->key, strlen(p->key),
						      p->nstreams)];
	return 0;
}

/* One Redis command; NULL (and *rc an exit code, printed) on failure. */
static relay_redis_reply *cmd(struct pub *p, int argc,
			      const char *const *argv, const size_t *lens,
			      int *rc)
{
	relay_redis_reply *r = NULL;
	int st;

	st = relay_redis_sync_command(p->b, &r, argc, argv, lens);
	if (!st && relay_redis_reply_error(r)) {
		*rc = relayctl_error(RELAYCTL_FAIL, CMD ": Redis: %s", r->str);
		relay_redis_reply_free(r);
		return NULL;
	}
	if (st) {
		*rc = relayctl_error(RELAYCTL_FAIL, CMD ": Redis: %s",
				     relay_strerror(st));
		return NULL;
	}
	*rc = 0;
	return r;
}

static int xadd(struct pub *p)
{
	const char *argv[] = { "XADD", p->stream, "*", "event", p->event,
			       "traceparent", p->traceparent };
	size_t lens[7];
	relay_redis_reply *r;
	int rc, i, argc = p->traceparent ? 7 : 5;

	for (i = 0; i < argc; i++)
		lens[i] = i == 4 ? p->len : strlen(argv[i]);
	r = cmd(p, argc, argv, lens, &rc);
	if (!r)
		return rc;
	if (r->type != RELAY_REDIS_REPLY_STRING || r->len >= sizeof(p->id)) {
		relay_redis_reply_free(r);
		return relayctl_error(RELAYCTL_FAIL, CMD ": Redis: unexpected "
				      "XADD reply");
	}
	memcpy(p->id, r->str, r->len + 1);
	relay_redis_reply_free(r);
	printf("%s\n", p->id);
	return fflush(stdout) ? RELAYCTL_FAIL : 0;
}

/* "ms-seq" into two numbers; -1 when it is not an entry id. */
static int id_split(const char *s, uint64_t *ms, uint64_t *seq)
{
	char *end;

	if (*s < '0' || *s > '9')
		return -1;
	*ms = strtoull(s, &end, 10);
	if (*end != '-' || end[1] < '0' || end[1] > '9')
		return -1;
	*seq = strtoull(end + 1, &end, 10);
	return *end ? -1 : 0;
}

/* Has the group been handed our entry? (XINFO GROUPS last-delivered-id) */
static int delivered(struct pub *p, bool *yes)
{
	const char *argv[] = { "XINFO", "GROUPS", p->stream };
	relay_redis_reply *r;
	uint64_t ms, seq, ims = 0, iseq = 0;
	size_t i, k;
	int rc;

	*yes = false;
	r = cmd(p, 3, argv, NULL, &rc);
	if (!r)
		return rc;
	id_split(p->id, &ims, &iseq);
	for (i = 0; r->type == RELAY_REDIS_REPLY_ARRAY && i < r->elements;
	     i++) {
		const relay_redis_reply *g = r->element[i];
		const char *name = NULL, *last = NULL;

		for (k = 0; g->type == RELAY_REDIS_REPLY_ARRAY &&
			    k + 1 < g->elements; k += 2) {
			const relay_redis_reply *kk = g->element[k];
			const relay_redis_reply *vv = g->element[k + 1];

			if (!kk->str || !vv->str)
				continue;
			if (strcmp(kk->str, "name") == 0)
				name = vv->str;
			else if (strcmp(kk->str, "last-delivered-id") == 0)
				last = vv->str;
		}
		if (name && last && strcmp(name, p->conf.group) == 0 &&
		    !id_split(last, &ms, &seq))
			*yes = ms > ims || (ms == ims && seq >= iseq);
	}
	relay_redis_reply_free(r);
	return 0;
}

/* Acknowledged: delivered to the group and no longer in its PEL. */
static int acknowledged(struct pub *p, bool *yes)
{
	const char *argv[] = { "XPENDING", p->stream, p->conf.group, p->id,
			       p->id, "1" };
	relay_redis_reply *r;
	bool dlv;
	int rc;

	*yes = false;
	rc = delivered(p, &dlv);
	if (rc || !dlv)
		return rc;
	r = cmd(p, 6, argv, NULL, &rc);
	if (!r)
		return rc;
	*yes = r->type == RELAY_REDIS_REPLY_ARRAY && r->elements == 0;
	relay_redis_reply_free(r);
	return 0;
}

/*
 * The DLQ entry of @app/@handler for our entry: scanned from our id on
 * (a DLQ entry is written after its source), at most DLQ_PAGES pages.
 * Fills @out ("" when not found).
 */
static int find_dlq(struct pub *p, const char *app, const char *handler,
		    char *out, size_t size)
{
	char start[80], *dlq = relay_dlq_key(p->stream);
	relay_stream_entry *e = NULL;
	relay_redis_reply *r;
	size_t n = 0, i, page;
	int rc = 0;

	out[0] = '\0';
	if (!dlq)
		return relayctl_error(RELAYCTL_FAIL, CMD ": out of memory");
	snprintf(start, sizeof(start), "%s", p->id);
	for (page = 0; page < DLQ_PAGES && !out[0]; page++) {
		const char *argv[] = { "XRANGE", dlq, start, "+", "COUNT",
				       DLQ_PAGE };

		r = cmd(p, 6, argv, NULL, &rc);
		if (!r)
			break;
		rc = relay_stream_entries_parse(r, &e, &n);
		relay_redis_reply_free(r);
		if (rc) {
			rc = relayctl_error(RELAYCTL_FAIL, CMD ": %s: %s", dlq,
					    relay_strerror(rc));
			break;
		}
		for (i = 0; i < n && !out[0]; i++) {
			const char *oid = relay_stream_entry_get(&e[i],
						"original_id", NULL);
			const char *a = relay_stream_entry_get(&e[i], "app",
							       NULL);
			const char *h = relay_stream_entry_get(&e[i],
							"handler", NULL);

			if (oid && a && h && strcmp(oid, p->id) == 0 &&
			    strcmp(a, app) == 0 && strcmp(h, handler) == 0)
				snprintf(out, size, "%s", e[i].id);
		}
		if (n)
			snprintf(start, sizeof(start), "(%s", e[n - 1].id);
		relay_stream_entries_free(e, n);
		if (n < (size_t)atoi(DLQ_PAGE))
			break;
	}
	relay_free(dlq);
	return rc;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/*
 * Print one line per invocation field of the state hash (sorted), as
 * "<app>/<handler>: <outcome>". Sets *@dead when one was dead-lettered;
 * @final: the entry was acknowledged (else the states are a snapshot).
 */
static int report(struct pub *p, bool final, bool *dead)
{
	char *key = relay_inv_key(p->stream, p->conf.group, p->id);
	const char *argv[] = { "HGETALL", key };
	const char **names = NULL;
	relay_redis_reply *r;
	size_t i, n = 0;
	int rc;

	*dead = false;
	if (!key)
		return relayctl_error(RELAYCTL_FAIL, CMD ": out of memory");
	r = cmd(p, 2, argv, NULL, &rc);
	if (!r)
		goto done;
	names = calloc(r->elements / 2 + 1, sizeof(*names));
	if (!names) {
		rc = relayctl_error(RELAYCTL_FAIL, CMD ": out of memory");
		goto done;
	}
	for (i = 0; i + 1 < r->elements; i += 2)
		if (r->element[i]->str && strncmp(r->element[i]->str, "__", 2))
			names[n++] = r->element[i]->str;
	qsort(names, n, sizeof(*names), cmp_str);
	if (!n)
		printf(final ? "no rule matched: acknowledged without "
		       "running anything\n" : "no invocation has started "
		       "yet\n");
	for (i = 0; i < n && !rc; i++) {
		const relay_redis_reply *v = NULL;
		relay_inv_state s;
		char dlqid[64], app[256];
		const char *slash = strchr(names[i], '/');
		size_t k;

		for (k = 0; k + 1 < r->elements; k += 2)
			if (r->element[k]->str == names[i])
				v = r->element[k + 1];
		relay_inv_state_parse(&s, v ? v->str : NULL, v ? v->len : 0);
		printf("%s: ", relayctl_c(names[i]));
		switch (s.kind) {
		case RELAY_INV_OK:
			printf("succeeded\n");
			break;
		case RELAY_INV_EXHAUSTED:
			*dead = true;
			if (!slash) {  /* not an <app>/<handler> field */
				printf("dead-lettered after %u attempt%s\n",
				       s.attempt, s.attempt == 1 ? "" : "s");
				break;
			}
			snprintf(app, sizeof(app), "%.*s",
				 (int)(slash - names[i]), names[i]);
			rc = find_dlq(p, app, slash + 1, dlqid,
				      sizeof(dlqid));
			if (dlqid[0])
				printf("dead-lettered after %u attempt%s: "
				       "DLQ entry %s (relayctl dlq inspect "
				       "%s)\n", s.attempt,
				       s.attempt == 1 ? "" : "s", dlqid,
				       dlqid);
			else
				printf("dead-lettered after %u attempt%s "
				       "(its DLQ entry is not found)\n",
				       s.attempt, s.attempt == 1 ? "" : "s");
			break;
		case RELAY_INV_RUNNING:
			printf("running (attempt %u)\n", s.attempt);
			break;
		case RELAY_INV_BACKOFF:
			printf("attempt %u failed; waiting to retry\n",
			       s.attempt);
			break;
		default:
			printf("unreadable state\n");
			break;
		}
	}
done:
	free(names);
	relay_redis_reply_free(r);
	relay_free(key);
	return rc;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

static int wait_terminal(struct pub *p)
{
	relay_mono_us end = relay_clock_mono_us(NULL) +
			    p->timeout_ms * 1000;
	bool done = false, dead;
	int rc;

	for (;;) {
		rc = acknowledged(p, &done);
		if (rc || done || relay_clock_mono_us(NULL) >= end)
			break;
		sleep_ms(POLL_MS);
	}
	if (rc)
		return rc;
	if (!done) {
		relayctl_error(PUBLISH_TIMEOUT, CMD ": --wait: %s not "
			       "acknowledged after %" PRId64 " ms; its "
			       "invocations now:", p->id, p->timeout_ms);
		rc = report(p, false, &dead);
		return rc ? rc : PUBLISH_TIMEOUT;
	}
	rc = report(p, true, &dead);
	if (rc)
		return rc;
	return dead ? RELAYCTL_FAIL : RELAYCTL_OK;
}

static int parse(struct pub *p, int argc, char **argv)
{
	int i;

	for (i = 1; i < argc; i++) {
		int m = relayctl_conf_arg(&p->conf, argc, argv, &i, CMD, 0,
					  usage);
		const char *v;

		if (m == RELAYCTL_ARG_HELP)
			return -1;
		if (m == RELAYCTL_ARG_BAD)
			goto bad;
		if (m == RELAYCTL_ARG_TAKEN)
			continue;
		if (strcmp(argv[i], "--explain") == 0) {
			p->explain = true;
			continue;
		}
		if (strcmp(argv[i], "--wait") == 0) {
			p->wait = true;
			continue;
		}
		if ((m = relayctl_opt_value(argc, argv, &i, "--file", CMD,
					    &p->file)) ||
		    (m = relayctl_opt_value(argc, argv, &i, "--key", CMD,
					    &p->key)) ||
		    (m = relayctl_opt_value(argc, argv, &i, "--traceparent",
					    CMD, &p->traceparent))) {
			if (m < 0)
				goto bad;
			continue;
		}
		m = relayctl_opt_value(argc, argv, &i, "--timeout", CMD, &v);
		if (m < 0)
			goto bad;
		if (m > 0) {
			if (relay_dlq_duration_parse(v, &p->timeout_ms) ||
			    p->timeout_ms <= 0) {
				relayctl_error(RELAYCTL_USAGE, CMD ": "
					       "--timeout takes a duration "
					       "such as 30s or 5m, not "
					       "\"%s\"", v);
				goto bad;
			}
			continue;
		}
		/* "-" and a JSON text are the positional event. */
		if (strcmp(argv[i], "-") &&
		    relayctl_unknown_option(CMD, argv[i]))
			goto bad;
		if (p->text) {
			relayctl_error(RELAYCTL_USAGE, CMD ": more than one "
				       "event");
			goto bad;
		}
		p->text = argv[i];
	}
	if (!p->file == !p->text) {
		relayctl_error(RELAYCTL_USAGE, CMD ": %s", p->file ?
			       "--file and an event argument exclude each "
			       "other" : "no event: pass JSON, - (stdin) or "
			       "--file F");
		goto bad;
	}
	if (p->wait && !p->conf.group) {
		relayctl_error(RELAYCTL_USAGE, CMD ": --wait needs "
			       "REDIS_GROUP (or --group NAME)");
		goto bad;
	}
	if (p->traceparent &&
	    relay_trace_parent_parse(&(relay_trace_context){ 0 },
				     p->traceparent,
				     strlen(p->traceparent))) {
		relayctl_error(RELAYCTL_USAGE, CMD ": --traceparent: \"%s\" is "
			       "not a W3C traceparent (00-<32 hex>-<16 hex>-"
			       "<2 hex>): relayd would ignore it",
			       p->traceparent);
		goto bad;
	}
	return 0;
bad:
	usage(stderr);
	return RELAYCTL_USAGE;
}

int relayctl_cmd_publish(int argc, char **argv)
{
	struct pub p;
	bool too_big;
	int rc;

	memset(&p, 0, sizeof(p));
	relayctl_conf_init(&p.conf);
	p.timeout_ms = WAIT_DEFAULT_MS;
	rc = parse(&p, argc, argv);
	if (rc)
		return rc < 0 ? RELAYCTL_OK : rc;
	rc = max_bytes(&p.max_bytes);
	if (!rc)
		rc = read_event(&p, &too_big);
	if (!rc)
		rc = check_event(&p, too_big);
	if (!rc)
		rc = relayctl_redis_open(&p.conf, CMD, &p.b);
	if (!rc)
		rc = pick_stream(&p);
	if (!rc && p.explain)
		rc = explain(&p);
	if (!rc)
		rc = xadd(&p);
	if (!rc && p.wait)
		rc = wait_terminal(&p);
	relay_redis_free(p.b);
	relay_stream_list_free(p.streams);
	free(p.event);
	return rc;
}
