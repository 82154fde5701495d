/*
 * cmd_dlq_inspect.c - relayctl dlq inspect ID [--json]
 *
 * Every field of one DLQ entry as aligned "Key: value" lines (the
 * timestamp with its age, the trace lineage only when the entry has one,
 * one indented line per member), then
 * "Event:" and the event pretty-printed as JSON, or verbatim when it is
 * not JSON (a malformed message's placeholder). The invocation's attempt
 * timeline, when the entry has one, comes before the event ("Timeline:",
 * one line per attempt). --json prints the entry as one object instead
 * (with "timeline": an array of the attempts, or null). Unknown ID: exit 1, `unknown DLQ entry "<id>"`.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmdutil.h"
#include "dlqcli.h"
#include "fmt.h"
#include "relay/trace.h"
#include "relayctl.h"
#include "timeline.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: relayctl dlq inspect ID [--json] [connection "
		"options]\n\n"
		"Show every field of DLQ entry ID and its event.\n\n"
		"  --json             one JSON object with every field\n%s"
		"  -h, --help         show this help\n\n"
		"A malformed entry is shown as stored, with what is wrong.\n\n"
		"Exit status: 0 success, 1 unknown ID, malformed entry (shown) "
		"or\nRedis error, 2 usage error.\n", relayctl_conf_help);
}

/*
 * The event pretty-printed as JSON, or as stored when it is not JSON;
 * either way with control characters (C0, DEL, C1) and bytes that are
 * not UTF-8 shown as '?', so a producer cannot drive the terminal.
 * (--json prints the exact bytes, JSON-escaped.)
 */
static void print_event(const char *event)
{
	json_error_t jerr;
	json_t *j = json_loads(event, JSON_DECODE_ANY, &jerr);
	char *s = j ? json_dumps(j, JSON_INDENT(2) | JSON_PRESERVE_ORDER |
				 JSON_ENCODE_ANY) : NULL;
	char *c;

	puts("Event:");
	/* jansson escapes newlines inside strings: the ones left are its
	 * layout. */
	c = s ? relayctl_clean_text(s) : relayctl_clean(event);
	fputs(c ? c : "?", stdout);
	fputc('\n', stdout);
	free(c);
	free(s);
	json_decref(j);
}

/* The last attempt's stderr: one indented line per line, cleaned. */
static void print_tail(const char *tail)
{
	const char *p = tail, *nl;

	puts("Stderr tail:");
	while (*p) {
		char *l;

		nl = strchr(p, '\n');
		l = strndup(p, nl ? (size_t)(nl - p) : strlen(p));
		printf("  %s\n", l ? relayctl_c(l) : "?");
		free(l);
		if (!nl)
			break;
		p = nl + 1;
	}
}

/* One member of the lineage: a string as is, anything else as compact
 * JSON; cleaned. */
static void print_member(const char *label, const json_t *v)
{
	char *d = json_is_string(v) ? NULL
				    : json_dumps(v, JSON_COMPACT |
						 JSON_ENCODE_ANY);

	printf("  %-12s %s\n", relayctl_c(label),
	       relayctl_c(d ? d : json_is_string(v) ? json_string_value(v)
						     : "?"));
	free(d);
}

/*
 * The trace lineage (doc/redis-layout.md R-5): "Trace:", then one
 * indented line per member in a fixed order (the failed attempt's trace
 * id first, what a tracing UI searches by), then any member this
 * relayctl does not know, compact JSON. Every value is cleaned like the
 * other fields (control bytes as '?'), so a producer's hostile header
 * cannot drive the terminal. A trace field that is not a JSON object (an
 * older or foreign format) is one "Trace:" line as stored.
 */
static void print_trace(const char *trace, int w)
{
	static const char *const known[][2] = {
		{ "traceparent", "producer" }, { "tracestate", "tracestate" },
		{ "baggage", "baggage" }, { "attempt", "attempt" },
		{ "link", "link" },
	};
	json_t *j = json_loads(trace, 0, NULL), *v;
	relay_trace_context c;
	const char *key, *a;
	char id[2 * RELAY_TRACE_ID_SIZE + 1], label[80];
	size_t i;

	if (!json_is_object(j)) {
		relayctl_kv(stdout, w, "Trace", trace);
		json_decref(j);
		return;
	}
	puts("Trace:");
	a = json_string_value(json_object_get(j, "attempt"));
	if (a && relay_trace_parent_parse(&c, a, strlen(a)) == 0)
		printf("  %-12s %s\n", "trace id:",
		       relay_trace_hex(c.trace_id, RELAY_TRACE_ID_SIZE, id));
	for (i = 0; i < sizeof(known) / sizeof(known[0]); i++) {
		v = json_object_get(j, known[i][0]);
		if (!v)
			continue;
		snprintf(label, sizeof(label), "%s:", known[i][1]);
		print_member(label, v);
	}
	json_object_foreach(j, key, v) {
		for (i = 0; i < sizeof(known) / sizeof(known[0]); i++)
			if (strcmp(key, known[i][0]) == 0)
				break;
		if (i < sizeof(known) / sizeof(known[0]))
			continue;
		snprintf(label, sizeof(label), "%.70s:", key);
		print_member(label, v);
	}
	json_decref(j);
}

/* The entry's timeline field (@raw: the entry as stored) parsed, or
 * NULL when it has none. */
static json_t *entry_timeline(const relay_redis_reply *raw)
{
	const relay_redis_reply *v = relayctl_entry_field(raw, "timeline");

	return v ? relayctl_timeline_parse(v->str, v->len) : NULL;
}

static void print_entry(const relay_dlq_record *r,
			const relay_redis_reply *raw)
{
	json_t *tl = entry_timeline(raw);
	const relay_dlq_entry *e = &r->e;
	char n1[24], n2[24], ts[128];
	const int w = 16;

	snprintf(n1, sizeof(n1), "%lld", e->handler_attempts);
	snprintf(n2, sizeof(n2), "%lld", e->deliveries);
	relayctl_kv(stdout, w, "ID", r->id);
	relayctl_kv(stdout, w, "Original stream", e->original_stream);
	relayctl_kv(stdout, w, "Original ID", e->original_id);
	relayctl_kv(stdout, w, "Group", e->group);
	relayctl_kv(stdout, w, "Consumer", e->consumer);
	relayctl_kv(stdout, w, "App", e->app);
	relayctl_kv(stdout, w, "Handler", e->handler);
	relayctl_kv(stdout, w, "Attempts", n1);
	relayctl_kv(stdout, w, "Deliveries", n2);
	relayctl_kv(stdout, w, "Reason", e->reason);
	relayctl_kv(stdout, w, "Timestamp",
		    relayctl_fmt_time_age(e->timestamp, ts, sizeof(ts)));
	if (e->source_fields)
		relayctl_kv(stdout, w, "Source fields", e->source_fields);
	if (strcmp(e->app, "-") == 0) {
		/* A placeholder: the source entry itself, while the stream
		 * still holds it (retention may have trimmed it). */
		char *hint = malloc(strlen(e->original_stream) +
				    2 * strlen(e->original_id) + 32);

		if (hint) {
			sprintf(hint, "redis-cli XRANGE %s %s %s",
				e->original_stream, e->original_id,
				e->original_id);
			relayctl_kv(stdout, w, "Source entry", hint);
			relayctl_kv(stdout, w, "",
				    "(while the stream still holds it)");
		}
		free(hint);
	}
	if (e->trace && *e->trace)
		print_trace(e->trace, w);
	if (e->stderr_tail)
		print_tail(e->stderr_tail);
	if (tl) {
		puts("Timeline:");
		relayctl_timeline_print(stdout, tl, "  ");
		json_decref(tl);
	}
	print_event(e->event);
}

/*
 * An entry relay cannot parse, shown anyway: what is wrong, then its
 * fields as stored (names and values cleaned like everything else).
 */
static void print_bad(const relay_dlq_record *r, const char *bad,
		      const relay_redis_reply *raw)
{
	const relay_redis_reply *l = NULL;
	const int w = 16;
	size_t i;

	relayctl_kv(stdout, w, "ID", r->id);
	relayctl_kv(stdout, w, "Malformed", bad);
	if (raw && raw->type == RELAY_REDIS_REPLY_ARRAY && raw->elements == 2)
		l = raw->element[1];
	puts("Fields as stored:");
	for (i = 0; l && l->type == RELAY_REDIS_REPLY_ARRAY &&
		    i + 1 < l->elements; i += 2) {
		const relay_redis_reply *k = l->element[i];
		const relay_redis_reply *v = l->element[i + 1];

		printf("  %s: %s\n",
		       relayctl_c(k->type == RELAY_REDIS_REPLY_STRING ? k->str
								       : "?"),
		       relayctl_c(v->type == RELAY_REDIS_REPLY_STRING ? v->str
								       : "?"));
	}
}

int relayctl_cmd_dlq_inspect(int argc, char **argv)
{
	struct dlqcli_page p;
	struct dlqcli d;
	int rc;

	rc = dlqcli_start(&d, "dlq inspect", argc, argv,
			  DLQCLI_ID | DLQCLI_JSON, usage);
	if (rc)
		return rc < 0 ? RELAYCTL_OK : rc;
	rc = dlqcli_find(&d, d.id, &p);
	if (rc == RELAYCTL_OK && p.bad[0]) {
		/* Shown, and still an error: it is no valid DLQ entry. */
		if (d.conf.json) {
			json_t *o = dlqcli_json_bad(&p.recs[0], p.bad[0],
						    p.raw->element[0]);

			relayctl_put_json(o, JSON_INDENT(2) |
					  JSON_PRESERVE_ORDER);
			json_decref(o);
		} else {
			print_bad(&p.recs[0], p.bad[0], p.raw->element[0]);
		}
		fflush(stdout);
		rc = relayctl_error(RELAYCTL_FAIL, "dlq inspect: malformed %s",
				    p.bad[0]);
	} else if (rc == RELAYCTL_OK) {
		const relay_dlq_record rec = p.recs[0];

		if (d.conf.json) {
			json_t *o = dlqcli_json(&rec);
			json_t *tl = entry_timeline(p.raw->element[0]);

			if (o)
				json_object_set_new(o, "timeline",
						    tl ? tl : json_null());
			else
				json_decref(tl);
			if (relayctl_put_json(o, JSON_INDENT(2) |
					      JSON_PRESERVE_ORDER))
				rc = relayctl_error(RELAYCTL_FAIL, "dlq "
						    "inspect: out of memory");
			json_decref(o);
		} else {
			print_entry(&rec, p.raw->element[0]);
		}
		if (fflush(stdout))
			rc = RELAYCTL_FAIL;
	}
	dlqcli_page_free(&p);
	dlqcli_close(&d);
	return rc;
}
