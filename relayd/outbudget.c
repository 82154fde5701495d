/*
 * outbudget.c - the per-app budget of handler output (OUTPUT_BUDGET).
 *
 * The runtime caps one invocation's output (1 MiB); this caps an app's
 * output over time, across invocations and retries, so a handler that
 * prints as much as it may on every retry cannot flood relayd's log.
 * Each app has a token bucket of @per_minute bytes that refills
 * continuously (one minute's worth at most). What is charged is what
 * relayd writes for the app: a line's whole log record in the active
 * LOG_FORMAT (prefix, JSON members and escapes, newline), so a flood of
 * empty lines costs what it costs the log, and the RELAYD-OUT01/02
 * notices the app causes. A notice may overdraw the bucket: the debt
 * holds the next lines back until it is refilled. A line that does not
 * fit is dropped whole and its handler bytes are counted; the first drop
 * of a run is logged once (RELAYD-OUT01), and the first line let through
 * again says how much was dropped (RELAYD-OUT02). /metrics shows
 * relay_output_dropped_bytes_total{app} (handler bytes) since start-up.
 *
 * Thread-safety: everything runs on the loop thread.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "relayd.h"

typedef struct bucket {
	char *app;
	double tokens;          /* bytes that may still be written (below
				 * zero: a notice's debt) */
	double at;              /* monotonic seconds of the last refill */
	uint64_t dropped;       /* bytes dropped since start-up */
	uint64_t run;           /* bytes dropped since the last line passed */
} bucket;

struct relayd_outbudget {
	uint64_t per_minute;    /* 0 = no budget */
	bucket *v;
	size_t n, cap;
};

static double mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

relayd_outbudget *relayd_outbudget_new(uint64_t per_minute)
{
	relayd_outbudget *b = calloc(1, sizeof(*b));

	if (b)
		b->per_minute = per_minute;
	return b;
}

void relayd_outbudget_free(relayd_outbudget *b)
{
	size_t i;

	if (!b)
		return;
	for (i = 0; i < b->n; i++)
		free(b->v[i].app);
	free(b->v);
	free(b);
}

/* The bucket of @app (@len bytes, not terminated), made full; NULL on
 * allocation failure. Apps are few: a linear search. */
static bucket *find(relayd_outbudget *b, const char *app, size_t len)
{
	bucket *k;
	size_t i;

	for (i = 0; i < b->n; i++)
		if (strlen(b->v[i].app) == len &&
		    memcmp(b->v[i].app, app, len) == 0)
			return &b->v[i];
	if (b->n == b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 8;

		k = realloc(b->v, cap * sizeof(*k));
		if (!k)
			return NULL;
		b->v = k;
		b->cap = cap;
	}
	k = &b->v[b->n];
	memset(k, 0, sizeof(*k));
	k->app = strndup(app, len);
	if (!k->app)
		return NULL;
	k->tokens = (double)b->per_minute;
	k->at = mono_s();
	b->n++;
	return k;
}

bool relayd_outbudget_take(relayd_outbudget *b, const char *text,
			   size_t len, size_t prefix_len, size_t cost)
{
	const char *app, *end;
	uint64_t handler = len - prefix_len + 1;
	double now, cap;
	bucket *k;

	if (!b || !b->per_minute)
		return true;
	/* The prefix is "[app/handler@id] stream: ". */
	app = text + 1;
	end = prefix_len > 1 && text[0] == '[' ?
	      memchr(app, '/', prefix_len - 1) : NULL;
	if (!end)
		return true;
	k = find(b, app, (size_t)(end - app));
	if (!k)
		return true;
	now = mono_s();
	cap = (double)b->per_minute;
	k->tokens += (now - k->at) * cap / 60.;
	if (k->tokens > cap)
		k->tokens = cap;
	k->at = now;
	if (k->tokens >= (double)cost) {
		k->tokens -= (double)cost;
		if (k->run) {
			const char *kv[] = { "app", k->app, NULL };

			k->tokens -= (double)relayd_logkv(RELAY_LOG_WARN,
				     "RELAYD-OUT02", kv,
				     "handler output of app %s resumed; "
				     "%llu bytes were dropped over the "
				     "budget", k->app,
				     (unsigned long long)k->run);
			k->run = 0;
		}
		return true;
	}
	if (!k->run) {
		const char *kv[] = { "app", k->app, NULL };

		k->tokens -= (double)relayd_logkv(RELAY_LOG_WARN,
			     "RELAYD-OUT01", kv,
			     "handler output of app %s is over its budget "
			     "(OUTPUT_BUDGET=%llu bytes per minute): dropping "
			     "its output lines", k->app,
			     (unsigned long long)b->per_minute);
	}
	k->run += handler;
	k->dropped += handler;
	return false;
}

char *relayd_outbudget_prometheus(const relayd_outbudget *b, size_t *len)
{
	char *text = NULL;
	size_t n = 0, i;
	FILE *f = open_memstream(&text, &n);

	if (!f)
		return NULL;
	fputs("# HELP relay_output_dropped_bytes_total Handler output bytes "
	      "dropped over the app's OUTPUT_BUDGET since start-up.\n"
	      "# TYPE relay_output_dropped_bytes_total counter\n", f);
	for (i = 0; b && i < b->n; i++)
		fprintf(f, "relay_output_dropped_bytes_total{app=\"%s\"} "
			"%llu\n", b->v[i].app,
			(unsigned long long)b->v[i].dropped);
	if (fclose(f) != 0) {
		free(text);
		return NULL;
	}
	*len = n;
	return text;
}
