/*
 * dlqbulk.c - selection, dry run, confirmation, pacing, progress and
 * signals of the bulk dlq commands (dlqbulk.h).
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "dlqbulk.h"
#include "fmt.h"
#include "relayctl.h"

static char *dup_or_null(const char *s, int *oom)
{
	char *c;

	if (!s)
		return NULL;
	c = strdup(s);
	if (!c)
		*oom = 1;
	return c;
}

static void sample_free(struct dlqbulk_sample *s)
{
	free(s->id);
	free(s->app);
	free(s->handler);
	free(s->bad);
	free(s->reason);
	free(s->timestamp);
	memset(s, 0, sizeof(*s));
}

void dlqbulk_free(struct dlqbulk *b)
{
	size_t i;

	for (i = 0; i < b->nsample; i++)
		sample_free(&b->sample[i]);
	for (i = 0; b->last && i < b->nkeys; i++)
		free(b->last[i]);
	free(b->last);
	memset(b, 0, sizeof(*b));
}

int dlqbulk_end(struct dlqbulk *b, int rc)
{
	if (dlqbulk_reporting()) {
		int r2 = dlqbulk_report_close(0);

		if (!rc)
			rc = r2;
	}
	dlqbulk_free(b);
	return rc;
}

/* The item @it of the iterator as a callback sees it. */
static void item_of(const relay_dlq_item *it, struct dlqbulk_item *out)
{
	memset(out, 0, sizeof(*out));
	out->k = it->key;
	out->id = it->id;
	out->bad = it->error;
	if (it->rec) {
		out->app = it->rec->e.app;
		out->handler = it->rec->e.handler;
		out->reason = it->rec->e.reason;
		out->timestamp = it->rec->e.timestamp;
	}
}

/* One item (dlqcli_each, which applies the filters and --limit): a
 * match is counted, the first few kept, and its DLQ's last id noted; an
 * undecided malformed entry is left alone. */
static int collect_entry(void *payload, const relay_dlq_item *it)
{
	struct dlqbulk *b = payload;
	struct dlqbulk_item v;
	char *id;
	int oom = 0;

	if (it->kind == RELAY_DLQ_ITEM_UNDECIDED) {
		b->unselected_bad++;
		return 0;
	}
	if (it->key >= b->nkeys)
		return -1;
	item_of(it, &v);
	if (b->nsample < DLQBULK_SAMPLE) {
		struct dlqbulk_sample *s = &b->sample[b->nsample++];

		s->k = v.k;
		s->id = dup_or_null(v.id, &oom);
		s->app = dup_or_null(v.app, &oom);
		s->handler = dup_or_null(v.handler, &oom);
		s->bad = dup_or_null(v.bad, &oom);
		s->reason = dup_or_null(v.reason, &oom);
		s->timestamp = dup_or_null(v.timestamp, &oom);
	}
	id = dup_or_null(v.id, &oom);
	if (oom) {
		free(id);
		return -1;
	}
	free(b->last[it->key]);
	b->last[it->key] = id;
	b->n++;
	return 0;
}

int dlqbulk_collect(struct dlqcli *d, struct dlqbulk *b)
{
	int rc;

	memset(b, 0, sizeof(*b));
	b->nkeys = d->nkeys;
	b->last = calloc(d->nkeys ? d->nkeys : 1, sizeof(*b->last));
	if (!b->last)
		return relayctl_error(RELAYCTL_FAIL, "%s: out of memory",
				      d->cmd);
	rc = dlqcli_each(d, RELAY_DLQ_OLDEST_FIRST, collect_entry, b);
	if (rc)
		dlqbulk_free(b);
	else if (b->unselected_bad)
		fprintf(stderr, "relayctl: %s: %zu malformed DLQ entr%s left "
			"alone: the filters on app, handler, reason or original "
			"id cannot be applied to them ('relayctl dlq ls' lists "
			"them)\n",
			d->cmd, b->unselected_bad,
			b->unselected_bad == 1 ? "y" : "ies");
	return rc;
}

/* Stream ids "<ms>-<seq>": <0, 0, >0 as @a is before, at, after @b. An
 * id that does not parse (never one Redis gave) sorts last. */
static int id_cmp(const char *a, const char *b)
{
	unsigned long long am, as, bm, bs;

	if (sscanf(a, "%llu-%llu", &am, &as) != 2)
		return 1;
	if (sscanf(b, "%llu-%llu", &bm, &bs) != 2)
		return -1;
	if (am != bm)
		return am < bm ? -1 : 1;
	return as < bs ? -1 : as > bs;
}

struct each {
	const struct dlqbulk *b;
	dlqbulk_fn fn;
	void *payload;
	size_t seen;
};

static int each_entry(void *payload, const relay_dlq_item *it)
{
	struct each *x = payload;
	const char *last;
	struct dlqbulk_item v;

	if (x->seen >= x->b->n)
		return 1;
	if (it->kind == RELAY_DLQ_ITEM_UNDECIDED || it->key >= x->b->nkeys)
		return 0;
	last = x->b->last[it->key];
	if (!last || id_cmp(it->id, last) > 0)
		return 0;  /* added after the selection */
	item_of(it, &v);
	x->seen++;
	return x->fn(x->payload, &v) ? 1 : 0;
}

int dlqbulk_each(struct dlqcli *d, const struct dlqbulk *b, dlqbulk_fn fn,
		 void *payload, size_t *seen)
{
	struct each x = { b, fn, payload, 0 };
	int rc = RELAYCTL_OK;

	if (b->n)
		rc = dlqcli_each(d, RELAY_DLQ_OLDEST_FIRST, each_entry, &x);
	*seen = x.seen;
	return rc;
}

static int report_selected(void *payload, const struct dlqbulk_item *it)
{
	dlqbulk_report_entry(payload, it, "selected", it->bad);
	return 0;
}

int dlqbulk_dry_run(struct dlqcli *d, const struct dlqbulk *b,
		    const char *verb)
{
	static const char *const head[] = { "ID", "STREAM", "APP", "HANDLER",
					    "AGE", "REASON" };
	int64_t now = relayctl_now_ms();
	relayctl_table t;
	size_t i, seen;
	int rc = 0;

	if (dlqbulk_reporting())  /* --json: every selected entry */
		return dlqbulk_each(d, b, report_selected, d, &seen);
	printf("%zu matching DLQ entr%s (dry run: nothing %s)\n", b->n,
	       b->n == 1 ? "y" : "ies", verb);
	if (b->n == 0)
		return fflush(stdout) ? RELAYCTL_FAIL : RELAYCTL_OK;
	if (relayctl_table_init(&t, 6, head))
		return relayctl_error(RELAYCTL_FAIL, "%s: out of memory",
				      d->cmd);
	for (i = 0; i < b->nsample && !rc; i++) {
		const struct dlqbulk_sample *it = &b->sample[i];
		char age[32] = "?", reason[84];
		const char *row[6];
		int64_t ms;

		if (it->timestamp &&
		    relayctl_parse_time(it->timestamp, &ms) == 0)
			relayctl_fmt_age((now - ms) / 1000, age, sizeof(age));
		/* One short line: the reason (its last failure) is cut
		 * ('dlq inspect' shows it all). */
		snprintf(reason, sizeof(reason), "%s",
			 it->bad ? "(malformed)"
				 : dlqcli_reason_short(it->reason));
		if (strlen(reason) == sizeof(reason) - 1)
			memcpy(reason + sizeof(reason) - 4, "...", 3);
		row[0] = it->id;
		row[1] = d->streams[it->k];
		row[2] = it->app ? it->app : "?";
		row[3] = it->handler ? it->handler : "?";
		row[4] = age;
		row[5] = reason;
		rc = relayctl_table_add(&t, row);
	}
	if (rc) {
		relayctl_table_free(&t);
		return relayctl_error(RELAYCTL_FAIL, "%s: out of memory",
				      d->cmd);
	}
	relayctl_table_print(&t, stdout);
	relayctl_table_free(&t);
	if (b->n > b->nsample)
		printf("... and %zu more\n", b->n - b->nsample);
	return fflush(stdout) ? RELAYCTL_FAIL : RELAYCTL_OK;
}

int dlqbulk_confirm(const struct dlqcli *d, size_t n, const char *verb)
{
	char line[32];

	if (d->yes || n <= DLQBULK_CONFIRM_OVER || !isatty(STDIN_FILENO))
		return 0;
	fprintf(stderr, "%s %zu DLQ entries? [y/N] ", verb, n);
	fflush(stderr);
	if (fgets(line, sizeof(line), stdin) &&
	    (strcmp(line, "y\n") == 0 || strcmp(line, "yes\n") == 0 ||
	     strcmp(line, "Y\n") == 0))
		return 0;
	return relayctl_error(RELAYCTL_FAIL, "%s: aborted, nothing done",
			      d->cmd);
}

static int64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void dlqbulk_pace_init(struct dlqbulk_pace *p, long rate)
{
	p->start_ms = mono_ms();
	p->count = 0;
	p->rate = rate > 0 ? rate : 1;
}

/* Entry n starts no earlier than n / rate seconds after the first. */
void dlqbulk_pace(struct dlqbulk_pace *p)
{
	int64_t due = p->start_ms + (int64_t)(p->count * 1000 /
					      (uint64_t)p->rate);
	int64_t now = mono_ms();

	p->count++;
	while (now < due && !dlqbulk_stopping()) {
		struct timespec ts = { (due - now) / 1000,
				       ((due - now) % 1000) * 1000000 };

		nanosleep(&ts, NULL);
		now = mono_ms();
	}
}

static volatile sig_atomic_t stopping;

static void on_signal(int sig)
{
	stopping = 1;
	/* The next one is not caught: a second ^C ends relayctl at once. */
	signal(sig, SIG_DFL);
}

void dlqbulk_catch_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

int dlqbulk_stopping(void)
{
	return stopping != 0;
}

static int64_t progress_at, progress_start;
static int progress_shown;

void dlqbulk_progress(size_t done, size_t total, const char *verb)
{
	char left[32] = "";
	int64_t now;
	double rate;

	if (!isatty(STDERR_FILENO))
		return;
	now = mono_ms();
	if (!progress_start)
		progress_start = now;
	if (progress_shown && now - progress_at < 200 && done < total)
		return;
	progress_at = now;
	progress_shown = 1;
	rate = now > progress_start ? done * 1000.0 / (double)(now -
						 progress_start) : 0;
	if (rate > 0 && done < total)
		relayctl_fmt_age((int64_t)((double)(total - done) / rate + 0.5),
				 left, sizeof(left));
	if (rate > 0)
		fprintf(stderr, "\r%s %zu/%zu  %.1f/s%s%s%s\033[K", verb,
			done, total, rate, *left ? "  " : "", left,
			*left ? " left" : "");
	else
		fprintf(stderr, "\r%s %zu/%zu\033[K", verb, done, total);
	fflush(stderr);
}

void dlqbulk_progress_end(void)
{
	if (!progress_shown)
		return;
	fputs("\r\033[K", stderr);
	fflush(stderr);
	progress_shown = 0;
}

/* The --json report under way: its head is written, entries follow. */
static int report;
static size_t report_n;
static json_t *report_counts;

/* @v (stolen) on stdout as one line of JSON. */
static void put_json(json_t *v)
{
	char *s = v ? json_dumps(v, JSON_INDENT(0) | JSON_ENCODE_ANY)
		    : NULL;

	fputs(s ? s : "null", stdout);
	free(s);
	json_decref(v);
}

void dlqbulk_report_open(const struct dlqcli *d, const char *command,
			 size_t matched)
{
	if (!d->conf.json || report)
		return;
	report_counts = json_object();
	if (!report_counts)
		return;
	report = 1;
	report_n = 0;
	fputs("{\n  \"command\": ", stdout);
	put_json(json_string(command));
	printf(",\n  \"matched\": %zu,\n  \"dry_run\": %s,\n"
	       "  \"entries\": [", matched, d->dry_run ? "true" : "false");
}

int dlqbulk_reporting(void)
{
	return report;
}

int dlqbulk_report_entry(const struct dlqcli *d,
			 const struct dlqbulk_item *it, const char *result,
			 const char *detail)
{
	json_t *o;

	if (!report)
		return 0;
	o = json_object();
	if (o) {
		json_object_set_new(o, "id", dlqcli_json_str(it->id));
		json_object_set_new(o, "stream",
				    dlqcli_json_str(d->streams[it->k]));
		json_object_set_new(o, "app", it->app ?
				    dlqcli_json_str(it->app) : json_null());
		json_object_set_new(o, "handler", it->handler ?
				    dlqcli_json_str(it->handler)
				    : json_null());
		json_object_set_new(o, "result", json_string(result));
		json_object_set_new(o, "detail", detail && *detail ?
				    dlqcli_json_str(detail) : json_null());
	}
	fputs(report_n++ ? ",\n    " : "\n    ", stdout);
	put_json(o);
	return 1;
}

void dlqbulk_report_count(const char *name, size_t n)
{
	if (report)
		json_object_set_new(report_counts, name,
				    json_integer((json_int_t)n));
}

int dlqbulk_report_close(int interrupted)
{
	if (!report)
		return RELAYCTL_OK;
	printf("%s],\n  \"interrupted\": %s,\n  \"counts\": ",
	       report_n ? "\n  " : "", interrupted ? "true" : "false");
	put_json(report_counts);
	report_counts = NULL;
	report = 0;
	return puts("\n}") == EOF || fflush(stdout) ? RELAYCTL_FAIL
						    : RELAYCTL_OK;
}
