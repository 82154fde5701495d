/*
 * cmd_event.c - relayctl event show ID [--json]
 *
 * What happened to the stream entry ID of REDIS_STREAM, from what Redis
 * holds: the entry itself (XRANGE ID ID; "trimmed" when the stream no
 * longer has it), its delivery (XPENDING: pending at which consumer, or
 * not pending), its invocation-state hash (relay_inv_key(); doc/
 * redis-layout.md R-3): the classification marker, the retention marker
 * and TTL, every invocation field "<app>/<handler>" with its status and
 * its attempt timeline (__timeline:<field>), and for a dead-lettered one
 * the id of its DLQ entry (searched from the entry's time on, a bounded
 * number of DLQ entries). The trace id is the producer's traceparent's,
 * else the first an attempt recorded.
 *
 * Unknown ID (no entry and no state): exit 1. Every value read is
 * cleaned before it reaches the terminal (relayctl_c()); --json prints
 * the exact values.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cmdutil.h"
#include "ctlconf.h"
#include "fmt.h"
#include "relay/dlq.h"
#include "relay/invocation.h"
#include "relayctl.h"
#include "timeline.h"

#define CMD "event show"
#define TL_PREFIX "__timeline:"
/* DLQ entries looked at, at most, to find a dead-lettered one's. */
#define DLQ_SCAN_MAX 10000

static void usage(FILE *f)
{
	fprintf(f, "usage: relayctl event show ID [--json] [connection "
		"options]\n\n"
		"Show what happened to stream entry ID: the event, its "
		"delivery and\nclassification, every matched app/handler "
		"with its status (pending,\nrunning, waiting until T, "
		"succeeded, dead-lettered with its DLQ id)\nand each attempt "
		"from its timeline. An entry trimmed from the stream\nis "
		"shown from its state while that is retained.\n\n"
		"  --json             one JSON object\n%s"
		"  -h, --help         show this help\n\n"
		"Exit status: 0 success, 1 unknown ID or Redis error, 2 "
		"usage error.\n", relayctl_conf_help);
}

static void usage_top(FILE *f)
{
	fputs("usage: relayctl event show ID [--json]\n\n"
	      "Show what happened to one event.\n"
	      "Run 'relayctl event show --help' for its options.\n", f);
}

struct ev {
	struct relayctl_conf conf;
	const char *id;
	relay_redis_backend *b;
};

static relay_redis_reply *cmd(struct ev *e, int argc, const char **argv,
			      int *rc)
{
	relay_redis_reply *r = NULL;

	*rc = relay_redis_sync_command(e->b, &r, argc, argv, NULL);
	if (!*rc && relay_redis_reply_error(r)) {
		*rc = relayctl_error(RELAYCTL_FAIL, CMD ": Redis: %s", r->str);
		relay_redis_reply_free(r);
		return NULL;
	}
	if (*rc) {
		*rc = relayctl_error(RELAYCTL_FAIL, CMD ": Redis: %s",
				     relay_strerror(*rc));
		return NULL;
	}
	return r;
}

/* "ms-seq" only: the ids of stream entries. */
static int id_valid(const char *id)
{
	const char *p = id;

	if (*p < '0' || *p > '9')
		return 0;
	while (*p >= '0' && *p <= '9')
		p++;
	if (*p++ != '-' || *p < '0' || *p > '9')
		return 0;
	while (*p >= '0' && *p <= '9')
		p++;
	return *p == '\0' && strlen(id) < 48;
}

static json_t *jstr(const relay_redis_reply *v)
{
	return v ? json_stringn(v->str, v->len) : json_null();
}

/* "YYYY-MM-DDTHH:MM:SS.mmmZ" of @ms. */
static const char *when(long long ms, char *buf, size_t size)
{
	return relay_dlq_timestamp(ms, buf, size);
}

/* The DLQ entry id of the dead-lettered invocation @app/@handler of
 * message @id, searched from @id's time on; new string or NULL. */
static char *find_dlq(struct ev *e, const char *app, const char *handler)
{
	char *key = relay_dlq_key(e->conf.stream), start[64], *found = NULL;
	const char *argv[6] = { "XRANGE", key, start, "+", "COUNT", "500" };
	size_t seen = 0, i;
	int rc;

	if (!key)
		return NULL;
	snprintf(start, sizeof(start), "%.*s-0",
		 (int)strcspn(e->id, "-"), e->id);
	while (!found && seen < DLQ_SCAN_MAX) {
		relay_redis_reply *r = cmd(e, 6, argv, &rc), *last = NULL;

		if (!r || r->type != RELAY_REDIS_REPLY_ARRAY ||
		    r->elements == 0) {
			relay_redis_reply_free(r);
			break;
		}
		for (i = 0; i < r->elements && !found; i++) {
			const relay_redis_reply *x = r->element[i];
			const relay_redis_reply *oid, *a, *h;

			oid = relayctl_entry_field(x, "original_id");
			a = relayctl_entry_field(x, "app");
			h = relayctl_entry_field(x, "handler");
			if (oid && a && h && strcmp(oid->str, e->id) == 0 &&
			    strcmp(a->str, app) == 0 &&
			    strcmp(h->str, handler) == 0)
				found = strdup(x->element[0]->str);
			last = r->element[i];
		}
		seen += r->elements;
		if (last && last->type == RELAY_REDIS_REPLY_ARRAY &&
		    last->elements == 2)
			snprintf(start, sizeof(start), "(%s",
				 last->element[0]->str);
		if (r->elements < 500)
			seen = DLQ_SCAN_MAX;
		relay_redis_reply_free(r);
	}
	relay_free(key);
	return found;
}

/* One invocation field as a JSON object: app, handler, status (pending,
 * running, waiting, succeeded, exhausted, dead-lettered, invalid), the
 * claim's attempt and deadline, its DLQ id, its timeline. */
static json_t *invocation(struct ev *e, const char *field,
			  const relay_redis_reply *v,
			  const relay_redis_reply *tl)
{
	const char *slash = strchr(field, '/');
	char app[256];
	relay_inv_state s;
	const char *status;
	json_t *o;

	snprintf(app, sizeof(app), "%.*s", (int)(slash - field), field);
	relay_inv_state_parse(&s, v->str, v->len);
	switch (s.kind) {
	case RELAY_INV_OK: status = "succeeded"; break;
	case RELAY_INV_RUNNING: status = "running"; break;
	case RELAY_INV_BACKOFF: status = "waiting"; break;
	case RELAY_INV_EXHAUSTED:
		status = s.dlq ? "dead-lettered" : "exhausted";
		break;
	default: status = "invalid"; break;
	}
	o = json_pack("{s:s, s:s, s:s, s:o}", "app", app, "handler",
		      slash + 1, "status", status, "value", jstr(v));
	if (!o)
		return NULL;
	if (s.attempt)
		json_object_set_new(o, "attempt", json_integer(s.attempt));
	if (s.kind == RELAY_INV_RUNNING || s.kind == RELAY_INV_BACKOFF)
		json_object_set_new(o, "until_ms",
				    json_integer(s.deadline_ms));
	if (s.kind == RELAY_INV_EXHAUSTED && s.dlq) {
		char *id = find_dlq(e, app, slash + 1);

		json_object_set_new(o, "dlq_id", id ? json_string(id)
						    : json_null());
		free(id);
	}
	json_object_set_new(o, "timeline", tl ? relayctl_timeline_parse(
				    tl->str, tl->len) : json_array());
	return o;
}

/* The trace id of a W3C traceparent "00-<32 hex>-<16 hex>-<2 hex>". */
static json_t *trace_of(const relay_redis_reply *tp)
{
	if (!tp || tp->len < 55 || tp->str[2] != '-' || tp->str[35] != '-')
		return NULL;
	return json_stringn(tp->str + 3, 32);
}

/* Everything known about the message, as the --json object. */
static int gather(struct ev *e, json_t **out)
{
	char *key = relay_inv_key(e->conf.stream, e->conf.group, e->id);
	const char *xr[] = { "XRANGE", e->conf.stream, e->id, e->id };
	const char *xp[] = { "XPENDING", e->conf.stream, e->conf.group,
			     e->id, e->id, "1" };
	const char *hg[] = { "HGETALL", key };
	const char *tt[] = { "PTTL", key };
	relay_redis_reply *ent = NULL, *pel = NULL, *h = NULL, *ttl = NULL;
	json_t *o = NULL, *invs, *trace = NULL;
	size_t i, j;
	int rc = RELAYCTL_FAIL;

	if (!key)
		return relayctl_error(RELAYCTL_FAIL, CMD ": out of memory");
	if (!(ent = cmd(e, 4, xr, &rc)) || !(pel = cmd(e, 6, xp, &rc)) ||
	    !(h = cmd(e, 2, hg, &rc)) || !(ttl = cmd(e, 2, tt, &rc)))
		goto done;
	rc = RELAYCTL_FAIL;
	if (ent->elements == 0 && h->elements == 0) {
		rc = relayctl_error(RELAYCTL_FAIL, CMD ": unknown event \"%s\" "
				    "(not in stream %s and no state retained)",
				    e->id, e->conf.stream);
		goto done;
	}
	o = json_pack("{s:s, s:s, s:s, s:s, s:b}", "id", e->id, "stream",
		      e->conf.stream, "group", e->conf.group, "state_key",
		      key, "in_stream", ent->elements > 0);
	invs = json_array();
	if (!o || !invs) {
		json_decref(invs);
		goto done;
	}
	if (ent->elements > 0) {
		const relay_redis_reply *x = ent->element[0];

		json_object_set_new(o, "event", jstr(relayctl_entry_field(
					    x, "event")));
		trace = trace_of(relayctl_entry_field(x, "traceparent"));
	} else {
		json_object_set_new(o, "event", json_null());
	}
	if (pel->elements > 0 && pel->element[0]->elements >= 4) {
		const relay_redis_reply *p = pel->element[0];

		json_object_set_new(o, "delivery", json_pack(
			"{s:s, s:s%, s:I, s:I}", "state", "pending",
			"consumer", p->element[1]->str, p->element[1]->len,
			"idle_ms", (json_int_t)p->element[2]->integer,
			"deliveries", (json_int_t)p->element[3]->integer));
	} else {
		json_object_set_new(o, "delivery", json_pack(
			"{s:s}", "state", h->elements ? "not pending"
						      : "not delivered"));
	}
	json_object_set_new(o, "classified", json_false());
	json_object_set_new(o, "retained", json_false());
	json_object_set_new(o, "malformed", json_false());
	for (i = 0; i + 1 < h->elements; i += 2) {
		const relay_redis_reply *f = h->element[i];
		const relay_redis_reply *v = h->element[i + 1], *tl = NULL;
		json_t *inv;

		if (strcmp(f->str, "__classification") == 0)
			json_object_set_new(o, "classified", json_true());
		else if (strcmp(f->str, "__terminal") == 0)
			json_object_set_new(o, "retained", json_true());
		else if (strcmp(f->str, "__dlq_placeholder") == 0)
			json_object_set_new(o, "malformed", json_true());
		if (f->str[0] == '_' || !strchr(f->str, '/'))
			continue;
		for (j = 0; j + 1 < h->elements; j += 2) {
			const relay_redis_reply *g = h->element[j];

			if (g->len == strlen(TL_PREFIX) + f->len &&
			    strncmp(g->str, TL_PREFIX, strlen(TL_PREFIX)) ==
				    0 &&
			    strcmp(g->str + strlen(TL_PREFIX), f->str) == 0)
				tl = h->element[j + 1];
		}
		inv = invocation(e, f->str, v, tl);
		if (!trace && inv) {
			json_t *a;
			size_t k;

			json_array_foreach(json_object_get(inv, "timeline"),
					   k, a) {
				const char *t = json_string_value(
					json_object_get(a, "trace_id"));

				if (t && !trace)
					trace = json_string(t);
			}
		}
		json_array_append_new(invs, inv);
	}
	json_object_set_new(o, "retained_ms", json_integer(
				    ttl->integer > 0 ? ttl->integer : 0));
	json_object_set_new(o, "trace_id", trace ? trace : json_null());
	json_object_set_new(o, "invocations", invs);
	*out = o;
	o = NULL;
	rc = RELAYCTL_OK;
done:
	json_decref(o);
	relay_redis_reply_free(ent);
	relay_redis_reply_free(pel);
	relay_redis_reply_free(h);
	relay_redis_reply_free(ttl);
	relay_free(key);
	return rc;
}

static const char *s_of(const json_t *o, const char *k)
{
	const char *s = json_string_value(json_object_get(o, k));

	return s ? s : "";
}

static void print_event(const char *event)
{
	json_error_t jerr;
	json_t *j = json_loads(event, JSON_DECODE_ANY, &jerr);
	char *s = j ? json_dumps(j, JSON_INDENT(2) | JSON_PRESERVE_ORDER |
				 JSON_ENCODE_ANY) : NULL;
	char *c = s ? relayctl_clean_text(s) : relayctl_clean(event);

	puts("Event:");
	fputs(c ? c : "?", stdout);
	fputc('\n', stdout);
	free(c);
	free(s);
	json_decref(j);
}

static void print(const json_t *o)
{
	const json_t *d = json_object_get(o, "delivery"), *inv;
	const int w = 16;
	char line[512], ts[48];
	size_t i;

	relayctl_kv(stdout, w, "ID", s_of(o, "id"));
	snprintf(line, sizeof(line), "%s (group %s)", s_of(o, "stream"),
		 s_of(o, "group"));
	relayctl_kv(stdout, w, "Stream", line);
	relayctl_kv(stdout, w, "Entry", json_is_true(json_object_get(
			    o, "in_stream")) ? "in the stream" :
		    "trimmed from the stream (shown from its retained "
		    "state)");
	if (strcmp(s_of(d, "state"), "pending") == 0) {
		snprintf(line, sizeof(line), "pending at consumer %s, "
			 "%lld deliveries, idle %lld ms", s_of(d, "consumer"),
			 (long long)json_integer_value(json_object_get(
				 d, "deliveries")),
			 (long long)json_integer_value(json_object_get(
				 d, "idle_ms")));
		relayctl_kv(stdout, w, "Delivery", line);
	} else {
		relayctl_kv(stdout, w, "Delivery", s_of(d, "state"));
	}
	relayctl_kv(stdout, w, "Classification",
		    json_is_true(json_object_get(o, "malformed")) ?
		    "malformed (a placeholder is in the DLQ)" :
		    json_is_true(json_object_get(o, "classified")) ?
		    "classified (counted once)" : "not classified yet");
	if (json_is_true(json_object_get(o, "retained"))) {
		snprintf(line, sizeof(line), "done; state retained for "
			 "%lld s more", (long long)json_integer_value(
				 json_object_get(o, "retained_ms")) / 1000);
		relayctl_kv(stdout, w, "State", line);
	} else {
		relayctl_kv(stdout, w, "State", "live");
	}
	if (json_string_value(json_object_get(o, "trace_id")))
		relayctl_kv(stdout, w, "Trace id", s_of(o, "trace_id"));
	puts("Invocations:");
	if (!json_array_size(json_object_get(o, "invocations")))
		puts("  (none recorded)");
	json_array_foreach(json_object_get(o, "invocations"), i, inv) {
		const char *st = s_of(inv, "status");

		if (strcmp(st, "waiting") == 0 || strcmp(st, "running") == 0)
			snprintf(line, sizeof(line), "%s (attempt %lld) until "
				 "%s", st, (long long)json_integer_value(
					 json_object_get(inv, "attempt")),
				 when(json_integer_value(json_object_get(
					 inv, "until_ms")), ts, sizeof(ts)));
		else if (strcmp(st, "dead-lettered") == 0)
			snprintf(line, sizeof(line), "dead-lettered -> DLQ "
				 "%s", json_string_value(json_object_get(
					 inv, "dlq_id")) ? s_of(inv, "dlq_id")
					 : "(entry not found)");
		else
			snprintf(line, sizeof(line), "%s", st);
		printf("  %s/%s  ", relayctl_c(s_of(inv, "app")),
		       relayctl_c(s_of(inv, "handler")));
		printf("%s\n", relayctl_c(line));
		relayctl_timeline_print(stdout, json_object_get(
						inv, "timeline"), "    ");
	}
	if (json_string_value(json_object_get(o, "event")))
		print_event(s_of(o, "event"));
	else
		puts("Event: (no longer in the stream)");
}

static int show(int argc, char **argv)
{
	struct ev e;
	json_t *o = NULL;
	int i, rc;

	memset(&e, 0, sizeof(e));
	relayctl_conf_init(&e.conf);
	for (i = 1; i < argc; i++) {
		int m = relayctl_conf_arg(&e.conf, argc, argv, &i, CMD, 1,
					  usage);

		if (m == RELAYCTL_ARG_HELP)
			return RELAYCTL_OK;
		if (m == RELAYCTL_ARG_BAD)
			goto bad;
		if (m == RELAYCTL_ARG_TAKEN)
			continue;
		if (relayctl_positional(CMD, argv[i], &e.id))
			goto bad;
	}
	if (!e.id) {
		relayctl_error(RELAYCTL_USAGE, CMD ": missing ID");
		goto bad;
	}
	if (!id_valid(e.id)) {
		relayctl_error(RELAYCTL_USAGE, CMD ": ID must be a stream "
			       "entry id such as 1700000000000-0, got \"%s\"",
			       e.id);
		goto bad;
	}
	if (!e.conf.group) {
		relayctl_error(RELAYCTL_USAGE, CMD ": REDIS_GROUP is not set "
			       "(or pass --group NAME)");
		goto bad;
	}
	rc = relayctl_redis_open(&e.conf, CMD, &e.b);
	if (rc)
		return rc;
	rc = gather(&e, &o);
	if (rc == RELAYCTL_OK) {
		if (e.conf.json)
			relayctl_put_json(o, JSON_INDENT(2) |
					  JSON_PRESERVE_ORDER);
		else
			print(o);
		if (fflush(stdout))
			rc = RELAYCTL_FAIL;
	}
	json_decref(o);
	relay_redis_free(e.b);
	return rc;
bad:
	usage(stderr);
	return RELAYCTL_USAGE;
}

int relayctl_cmd_event(int argc, char **argv)
{
	if (argc < 2 || relayctl_is_help(argv[1])) {
		usage_top(argc < 2 ? stderr : stdout);
		return argc < 2 ? RELAYCTL_USAGE : RELAYCTL_OK;
	}
	if (strcmp(argv[1], "show") == 0)
		return show(argc - 1, argv + 1);
	relayctl_error(RELAYCTL_USAGE, "event: unknown subcommand \"%s\"",
		       argv[1]);
	usage_top(stderr);
	return RELAYCTL_USAGE;
}
