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

#define SAMPLE 5

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

static int add(struct dlqbulk *b, size_t k, const char *id,
	       const relay_dlq_record *r, const char *bad)
{
	struct dlqbulk_item *it;
	int oom = 0;

	if (b->n == b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 64;

		it = realloc(b->items, cap * sizeof(*it));
		if (!it)
			return -1;
		b->items = it;
		b->cap = cap;
	}
	it = &b->items[b->n];
	memset(it, 0, sizeof(*it));
	it->k = k;
	it->id = dup_or_null(id, &oom);
	it->bad = dup_or_null(bad, &oom);
	if (r) {
		it->app = dup_or_null(r->e.app, &oom);
		it->handler = dup_or_null(r->e.handler, &oom);
		if (b->n < SAMPLE) {
			it->reason = dup_or_null(r->e.reason, &oom);
			it->timestamp = dup_or_null(r->e.timestamp, &oom);
		}
	}
	b->n++;
	return oom ? -1 : 0;
}

void dlqbulk_free(struct dlqbulk *b)
{
	size_t i;

	for (i = 0; i < b->n; i++) {
		free(b->items[i].id);
		free(b->items[i].app);
		free(b->items[i].handler);
		free(b->items[i].bad);
		free(b->items[i].reason);
		free(b->items[i].timestamp);
	}
	free(b->items);
	memset(b, 0, sizeof(*b));
}

struct collect {
	struct dlqbulk *b;
};

/* One item (dlqcli_each, which applies the filters and --limit): a
 * match is selected; an undecided malformed entry is left alone. */
static int collect_entry(void *payload, const relay_dlq_item *it)
{
	struct collect *x = payload;

	if (it->kind == RELAY_DLQ_ITEM_UNDECIDED) {
		x->b->unselected_bad++;
		return 0;
	}
	return add(x->b, it->key, it->id, it->rec, it->error) ? -1 : 0;
}

int dlqbulk_collect(struct dlqcli *d, struct dlqbulk *b)
{
	struct collect x = { b };
	int rc;

	memset(b, 0, sizeof(*b));
	rc = dlqcli_each(d, RELAY_DLQ_OLDEST_FIRST, collect_entry, &x);
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

int dlqbulk_dry_run(const struct dlqcli *d, const struct dlqbulk *b,
		    const char *verb)
{
	static const char *const head[] = { "ID", "STREAM", "APP", "HANDLER",
					    "AGE", "REASON" };
	int64_t now = relayctl_now_ms();
	relayctl_table t;
	size_t i;
	int rc = 0;

	if (dlqbulk_reporting()) {
		/* --json: every selected entry, nothing done. */
		for (i = 0; i < b->n; i++)
			dlqbulk_report_entry(d, &b->items[i], "selected",
					     b->items[i].bad);
		return RELAYCTL_OK;
	}
	printf("%zu matching DLQ entr%s (dry run: nothing %s)\n", b->n,
	       b->n == 1 ? "y" : "ies", verb);
	if (b->n == 0)
		return fflush(stdout) ? RELAYCTL_FAIL : RELAYCTL_OK;
	if (relayctl_table_init(&t, 6, head))
		return relayctl_error(RELAYCTL_FAIL, "%s: out of memory",
				      d->cmd);
	for (i = 0; i < b->n && i < SAMPLE && !rc; i++) {
		const struct dlqbulk_item *it = &b->items[i];
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
	if (b->n > SAMPLE)
		printf("... and %zu more\n", b->n - SAMPLE);
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

static json_t *report, *report_entries, *report_counts;
static const char *report_command;

void dlqbulk_report_open(const struct dlqcli *d, const char *command)
{
	if (!d->conf.json || report)
		return;
	report = json_object();
	report_entries = json_array();
	report_counts = json_object();
	report_command = command;
	if (!report || !report_entries || !report_counts) {
		json_decref(report);
		json_decref(report_entries);
		json_decref(report_counts);
		report = report_entries = report_counts = NULL;
	}
}

int dlqbulk_reporting(void)
{
	return report != NULL;
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
		json_array_append_new(report_entries, o);
	}
	return 1;
}

void dlqbulk_report_count(const char *name, size_t n)
{
	if (report)
		json_object_set_new(report_counts, name,
				    json_integer((json_int_t)n));
}

int dlqbulk_report_close(size_t matched, int dry_run, int interrupted)
{
	int rc = RELAYCTL_OK;

	if (!report)
		return RELAYCTL_OK;
	json_object_set_new(report, "command", json_string(report_command));
	json_object_set_new(report, "matched",
			    json_integer((json_int_t)matched));
	json_object_set_new(report, "dry_run", json_boolean(dry_run));
	json_object_set_new(report, "interrupted", json_boolean(interrupted));
	json_object_set_new(report, "counts", report_counts);
	json_object_set_new(report, "entries", report_entries);
	if (json_dumpf(report, stdout, JSON_INDENT(2)) || puts("") == EOF ||
	    fflush(stdout))
		rc = RELAYCTL_FAIL;
	json_decref(report);
	report = report_entries = report_counts = NULL;
	return rc;
}
