/*
 * cmd_dlq_inspect.c - relayctl dlq inspect ID [--json]
 *
 * Every field of one DLQ entry as aligned "Key: value" lines (the
 * timestamp with its age, the trace only when the entry has one), then
 * "Event:" and the event pretty-printed as JSON, or verbatim when it is
 * not JSON (a malformed message's placeholder). --json prints the entry
 * as one object instead. Unknown ID: exit 1, `unknown DLQ entry "<id>"`.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmdutil.h"
#include "dlqcli.h"
#include "fmt.h"
#include "relayctl.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: relayctl dlq inspect ID [--json] [connection "
		"options]\n\n"
		"Show every field of DLQ entry ID and its event.\n\n"
		"  --json             one JSON object with every field\n%s"
		"  -h, --help         show this help\n\n"
		"Exit status: 0 success, 1 unknown ID, malformed entry or "
		"Redis error, 2 usage error.\n", relayctl_conf_help);
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

static void print_entry(const relay_dlq_record *r)
{
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
	if (e->trace && *e->trace)
		relayctl_kv(stdout, w, "Trace", e->trace);
	print_event(e->event);
}

int relayctl_cmd_dlq_inspect(int argc, char **argv)
{
	relay_dlq_record rec;
	struct dlqcli d;
	int rc;

	rc = dlqcli_start(&d, "dlq inspect", argc, argv,
			  DLQCLI_ID | DLQCLI_JSON, usage);
	if (rc)
		return rc < 0 ? RELAYCTL_OK : rc;
	rc = dlqcli_get(&d, d.id, &rec);
	if (rc == RELAYCTL_OK) {
		if (d.conf.json) {
			json_t *o = dlqcli_json(&rec);

			if (relayctl_put_json(o, JSON_INDENT(2) |
					      JSON_PRESERVE_ORDER))
				rc = relayctl_error(RELAYCTL_FAIL, "dlq "
						    "inspect: out of memory");
			json_decref(o);
		} else {
			print_entry(&rec);
		}
		if (fflush(stdout))
			rc = RELAYCTL_FAIL;
	}
	relay_dlq_record_clear(&rec);
	dlqcli_close(&d);
	return rc;
}
