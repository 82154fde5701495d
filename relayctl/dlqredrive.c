/*
 * dlqredrive.c - redrive: a DLQ entry's event goes back into its source
 * stream S, to be matched against today's templates and run with the
 * usual retries and DLQ bookkeeping.
 *
 * One Lua script over S, its DLQ relay:S:dlq and the entry's replay claim
 * relay:S:dlq:replaying:<id> (all three in S's hash slot, R-8) does it
 * all or nothing: it checks that the entry still exists, that no replay
 * claim holds it and that it is not a placeholder, XADDs to S the stored
 * event with the field relay_redrive_of = <DLQ entry id> (and the W3C
 * traceparent/tracestate of the entry's trace, when it has one, and
 * relay_trace_link = its failed attempt's traceparent, so the new
 * attempts link to the one that failed), then
 * XDELs the entry. So a relayctl killed at any point has either redriven
 * an entry or not touched it: running it again never adds an entry twice
 * and never loses one, and no claim key is needed. A wrong-type key fails
 * the XADD before anything is written. The XADD has no MAXLEN: only
 * relayd's retention trims the source stream.
 *
 * A schedule occurrence's entry is refused before the script: re-added
 * under a new id the engine would dead-letter it; replay without
 * --redrive runs it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "dlqredrive.h"
#include "fmt.h"
#include "relay/occurrence.h"
#include "relay/trace.h"
#include "relayctl.h"

static const char script[] =
	"local e = redis.call('XRANGE', KEYS[1], ARGV[1], ARGV[1])\n"
	"if #e == 0 then return {'gone', ''} end\n"
	"if redis.call('EXISTS', KEYS[3]) == 1 then return {'busy', ''} end\n"
	"local f, ev, app = e[1][2], nil, nil\n"
	"for i = 1, #f - 1, 2 do\n"
	"  if f[i] == 'event' then ev = f[i + 1]\n"
	"  elseif f[i] == 'app' then app = f[i + 1] end\n"
	"end\n"
	"if ev == nil or app == nil or app == '-' then\n"
	"  return {'refused', ''}\n"
	"end\n"
	"local a = {'event', ev, ARGV[2], ARGV[1]}\n"
	"if ARGV[3] ~= '' then\n"
	"  a[#a + 1] = 'traceparent'; a[#a + 1] = ARGV[3]\n"
	"  if ARGV[4] ~= '' then\n"
	"    a[#a + 1] = 'tracestate'; a[#a + 1] = ARGV[4]\n"
	"  end\n"
	"end\n"
	"if ARGV[5] ~= '' then\n"
	"  a[#a + 1] = '" DLQREDRIVE_LINK_FIELD "'; a[#a + 1] = ARGV[5]\n"
	"end\n"
	"local id = redis.call('XADD', KEYS[2], '*', unpack(a))\n"
	"redis.call('XDEL', KEYS[1], ARGV[1])\n"
	"return {'redriven', id}\n";

static int word(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
	       (c >= 'A' && c <= 'Z');
}

/* @s (@n bytes) parsed as a traceparent into @c (the library's strict
 * W3C parser, relay/trace.h); @tp gets its version-00 text. */
static int take_parent(const char *s, size_t n, relay_trace_context *c,
		       char tp[56])
{
	return relay_trace_parent_parse(c, s, n) == 0 &&
	       relay_trace_parent_format(c, tp) == 0;
}

/* @v, when it is a valid version-00 traceparent exactly as the library
 * writes one (an attempt's context, doc/redis-layout.md R-5), into
 * @link; else @link is "". */
static void take_link(const char *v, char link[56])
{
	relay_trace_context c;

	if (!v || strlen(v) != 55 || strncmp(v, "00-", 3) != 0 ||
	    !take_parent(v, 55, &c, link) || strcmp(link, v) != 0)
		link[0] = '\0';
}

int dlqredrive_trace(const char *trace, char tp[56], char *ts, size_t tsize,
		     char link[56])
{
	relay_trace_context c;
	json_t *j;
	const char *p, *v;
	int found = 0;

	tp[0] = '\0';
	link[0] = '\0';
	if (tsize)
		ts[0] = '\0';
	if (!trace)
		return 0;
	j = json_loads(trace, 0, NULL);
	v = json_string_value(json_object_get(j, "traceparent"));
	if (v && take_parent(v, strlen(v), &c, tp)) {
		v = json_string_value(json_object_get(j, "tracestate"));
		if (v && relay_trace_state_parse(&c, v, strlen(v)) == 0 &&
		    strlen(c.tracestate) < tsize)
			memcpy(ts, c.tracestate, strlen(c.tracestate) + 1);
		found = 1;
	}
	if (json_is_object(j)) {
		/* The lineage: its "attempt" is what the new attempts
		 * link to; an object without "traceparent" has no producer
		 * context, whatever else its text holds. */
		take_link(json_string_value(json_object_get(j, "attempt")),
			  link);
		json_decref(j);
		return found;
	}
	json_decref(j);
	/* Else the first version-00 value standing alone in the text. */
	for (p = trace; !found && *p; p++)
		if ((p == trace || !word(p[-1])) && strnlen(p, 56) >= 55 &&
		    !word(p[55]) && take_parent(p, 55, &c, tp))
			found = 1;
	return found;
}

enum dlqredrive_result dlqredrive_one(struct dlqcli *d, size_t k,
				      const relay_dlq_record *rec,
				      char *newid, size_t nsize, char *why,
				      size_t wsize)
{
	char tp[56], ts[512], link[56], *claim;
	const char *argv[11];
	relay_redis_reply *r = NULL;
	enum dlqredrive_result res = DLQREDRIVE_ERROR;
	const char *what;
	size_t n;
	int rc;

	newid[0] = '\0';
	if (strcmp(rec->e.app, "-") == 0) {
		snprintf(why, wsize, "placeholder of a malformed message, not "
			 "redriven");
		return DLQREDRIVE_REFUSED;
	}
	if (relay_schedule_is_occurrence(rec->e.event,
					 strlen(rec->e.event))) {
		snprintf(why, wsize, "a schedule occurrence is not redriven "
			 "(the engine would dead-letter it again); replay it "
			 "without --redrive");
		return DLQREDRIVE_REFUSED;
	}
	dlqredrive_trace(rec->e.trace, tp, ts, sizeof(ts), link);
	n = strlen(d->keys[k]) + strlen(rec->id) + 16;
	claim = malloc(n);
	if (!claim) {
		snprintf(why, wsize, "out of memory");
		return DLQREDRIVE_ERROR;
	}
	snprintf(claim, n, "%s:replaying:%s", d->keys[k], rec->id);
	argv[0] = "EVAL";
	argv[1] = script;
	argv[2] = "3";
	argv[3] = d->keys[k];
	argv[4] = d->streams[k];
	argv[5] = claim;
	argv[6] = rec->id;
	argv[7] = DLQREDRIVE_FIELD;
	argv[8] = tp;
	argv[9] = ts;
	argv[10] = link;
	rc = relay_redis_sync_command(d->b, &r, 11, argv, NULL);
	if (rc == 0)
		rc = relay_redis_reply_error(r);
	if (rc || r->type != RELAY_REDIS_REPLY_ARRAY || r->elements != 2 ||
	    r->element[0]->type != RELAY_REDIS_REPLY_STRING ||
	    r->element[1]->type != RELAY_REDIS_REPLY_STRING) {
		snprintf(why, wsize, "Redis: %s", relayctl_c(
			 r && r->str ? r->str : rc ? relay_strerror(rc)
						   : "unexpected reply"));
		goto done;
	}
	what = r->element[0]->str;
	if (strcmp(what, "redriven") == 0) {
		snprintf(newid, nsize, "%s", r->element[1]->str);
		res = DLQREDRIVE_DONE;
	} else if (strcmp(what, "gone") == 0) {
		snprintf(why, wsize, "already gone (removed meanwhile)");
		res = DLQREDRIVE_GONE;
	} else if (strcmp(what, "busy") == 0) {
		snprintf(why, wsize, "skipped (being replayed: %s)",
			 relayctl_c(claim));
		res = DLQREDRIVE_BUSY;
	} else {
		snprintf(why, wsize, "placeholder of a malformed message, not "
			 "redriven");
		res = DLQREDRIVE_REFUSED;
	}
done:
	relay_redis_reply_free(r);
	free(claim);
	return res;
}
