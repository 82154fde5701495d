/*
 * dlqpreview.c - the DLQ entry relayd would write, for `relayctl app run
 * --attempts N`.
 *
 * An app author who wants to see a dead letter should not have to wait
 * out relayd's backoff (1m, 2m, 5m, 10m, ...): app run makes the attempts
 * at once and shows the entry the last failure would produce, field by
 * field in the order of doc/redis-layout.md R-5, built with the
 * library's own texts (relay_dlq_reason_exhausted(),
 * relay_dlq_stderr_tail(), relay_dlq_timestamp()). Nothing is written:
 * there is no Redis here. `trace` is left out: app run has no trace
 * context and exports no spans.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dlqpreview.h"
#include "fmt.h"

/* Append @n bytes, keeping at least the last half of the buffer. */
static void put(struct relayctl_errtail *t, const char *p, size_t n)
{
	const size_t cap = sizeof(t->buf), keep = cap / 2;

	if (n >= keep) {
		/* A piece this long: its end is all that can be kept. */
		memcpy(t->buf, p + n - keep, keep);
		t->len = keep;
		return;
	}
	if (t->len + n > cap) {
		memmove(t->buf, t->buf + t->len - keep, keep);
		t->len = keep;
	}
	memcpy(t->buf + t->len, p, n);
	t->len += n;
}

void relayctl_errtail_add(struct relayctl_errtail *t, const char *p,
			  size_t n, int partial)
{
	if (t->len && !t->open)
		put(t, "\n", 1);
	put(t, p, n);
	t->open = partial;
}

static void field(const char *name, const char *value)
{
	printf("    %-17s %s\n", name, relayctl_c(value));
}

/* A multi-line value: its first line beside the name, the others under
 * it. */
static void field_lines(const char *name, const char *value)
{
	const char *p = value, *nl;
	int first = 1;

	while (*p) {
		char *l;

		nl = strchr(p, '\n');
		l = strndup(p, nl ? (size_t)(nl - p) : strlen(p));
		printf("    %-17s %s\n", first ? name : "",
		       l ? relayctl_c(l) : "?");
		free(l);
		first = 0;
		if (!nl)
			break;
		p = nl + 1;
	}
}

void relayctl_dlq_preview(const char *app, const char *handler,
			  unsigned int attempts, const char *last_failure,
			  const char *event, size_t len,
			  const struct relayctl_errtail *tail)
{
	const char *stream = getenv("REDIS_STREAM");
	const char *group = getenv("REDIS_GROUP");
	const char *consumer = getenv("REDIS_CONSUMER");
	char host[256], ts[40], n[24], *reason, *ev, *errs;

	if (!consumer || !*consumer) {
		consumer = gethostname(host, sizeof(host)) == 0 && *host
			   ? host : "relayd";
		host[sizeof(host) - 1] = '\0';
	}
	reason = relay_dlq_reason_exhausted(app, handler, attempts,
					    last_failure);
	ev = strndup(event, len);
	errs = tail->len ? relay_dlq_stderr_tail(tail->buf, tail->len) : NULL;
	snprintf(n, sizeof(n), "%u", attempts);
	field("original_stream", stream && *stream ? stream
			: "<the event's stream (REDIS_STREAM)>");
	field("original_id", "<the stream entry's id>");
	field("group", group && *group ? group : "<REDIS_GROUP>");
	field("consumer", consumer);
	field("event", ev ? ev : "?");
	field("reason", reason ? reason : "?");
	field("app", app);
	field("handler", handler);
	field("deliveries", "<the entry's delivery count, about one per "
	      "attempt>");
	field("handler_attempts", n);
	field("timestamp", relay_dlq_timestamp(relayctl_now_ms(), ts,
					       sizeof(ts)));
	if (errs)
		field_lines("stderr_tail", errs);
	fflush(stdout);
	relay_free(reason);
	relay_free(errs);
	free(ev);
}
