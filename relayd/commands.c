/*
 * commands.c - what the control socket can ask (doc/protocol.md):
 *
 *   health       readiness (Redis up, group ensured, not stopping)
 *   apps         the loaded apps, their handlers and errors
 *   app invoke   run an app's matching handlers once with an event
 *   dlq replay   run a DLQ entry's handler once with its event; remove
 *                the entry when it succeeds (unless "keep")
 *   stats        the stats snapshot (the stats file's content)
 *   stats reset  zero the counters and histograms
 *
 * Requests and replies are json_t objects; every reply has "ok". Work that
 * waits (handlers, Redis) answers later from the loop; if the consumer is
 * closed meanwhile the reply says so.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "relay/dlq.h"
#include "relayd.h"

static json_t *okobj(void)
{
	return json_pack("{s:b}", "ok", 1);
}

/* One stuck message (relay_consumer_stuck_messages()) as JSON. */
static int stuck_json(const relay_consumer_stuck *st, void *payload)
{
	json_array_append_new(payload, json_pack("{s:s, s:s, s:I, s:I}",
		"message_id", st->message_id, "reason", st->reason,
		"failures", (json_int_t)st->failures,
		"retry_in_ms", (json_int_t)st->retry_in_ms));
	return 0;
}

/* Several streams: a stuck message also names its stream. */
typedef struct stuck_ctx {
	json_t *list;
	const char *stream;   /* NULL with one stream */
} stuck_ctx;

static int stuck_json_s(const relay_consumer_stuck *st, void *payload)
{
	stuck_ctx *x = payload;
	size_t n = json_array_size(x->list);

	stuck_json(st, x->list);
	if (x->stream && json_array_size(x->list) > n)
		json_object_set_new(json_array_get(x->list, n), "stream",
				    json_string(x->stream));
	return 0;
}

/*
 * Ready when every stream's consumer is; the reason is the first
 * stream's that is not (prefixed "stream <name>: " when there are
 * several).
 */
void relayd_health(relayd *d, relay_consumer_health *out, char *reason,
		   size_t size)
{
	relay_consumer_health h = { RELAY_CONSUMER_HEALTH_VERSION, 0, 0, 0,
				    "" };
	size_t i;

	*reason = '\0';
	if (relayd_consumer(d)) {
		h.ready = h.redis_up = 1;
		for (i = 0; i < d->nconsumers; i++) {
			relay_consumer_health one = {
				RELAY_CONSUMER_HEALTH_VERSION, 0, 0, 0, "" };

			if (!d->consumers[i])
				continue;
			relay_consumer_health_get(d->consumers[i], &one);
			h.redis_up = h.redis_up && one.redis_up;
			h.stopping = h.stopping || one.stopping;
			if (!one.ready && h.ready) {
				h.ready = 0;
				if (d->nconsumers > 1)
					snprintf(reason, size,
						 "stream %.500s: %s",
						 d->cfg.streams[i],
						 one.reason);
				else
					snprintf(reason, size, "%s",
						 one.reason);
			}
		}
	} else {
		h.stopping = 1;
		snprintf(reason, size, "stopping");
	}
	*out = h;
}

static void cmd_health(relayd *d, relayd_request *req)
{
	relay_consumer_health h;
	json_t *r = okobj();
	char reason[sizeof(h.reason) + 600];
	size_t i;

	relayd_health(d, &h, reason, sizeof(reason));
	json_object_set_new(r, "ready", json_boolean(h.ready));
	json_object_set_new(r, "redis_up", json_boolean(h.redis_up));
	json_object_set_new(r, "stopping", json_boolean(h.stopping));
	json_object_set_new(r, "reason", json_string(reason));
	json_object_set_new(r, "version", json_string(relay_version()));
	json_object_set_new(r, "pid", json_integer(getpid()));
	json_object_set_new(r, "stream", json_string(d->cfg.stream));
	if (d->cfg.nstreams > 1) {
		json_t *list = json_array();

		for (i = 0; i < d->cfg.nstreams; i++)
			json_array_append_new(list,
				json_string(d->cfg.streams[i]));
		json_object_set_new(r, "streams", list);
	}
	json_object_set_new(r, "group", json_string(d->cfg.group));
	json_object_set_new(r, "consumer", json_string(d->cfg.consumer));
	json_object_set_new(r, "sandbox", json_string(
		relay_runtime_backend_name(d->rt)));
	json_object_set_new(r, "apps", json_integer((json_int_t)
		relay_appset_entry_count(d->apps)));
	json_object_set_new(r, "invalid_apps", json_integer((json_int_t)
		relay_appset_invalid_count(d->apps)));
	json_object_set_new(r, "stale_apps", json_integer((json_int_t)
		relayd_apps_stale_count(d)));
	{
		json_t *list = json_array(), *v;
		const char *key;

		json_object_foreach((json_t *)d->stale, key, v)
			json_array_append_new(list, json_pack("{s:s, s:O}",
				"app", key, "errors", v));
		json_object_set_new(r, "stale", list);
	}
	{
		stuck_ctx x = { json_array(), NULL };

		for (i = 0; x.list && i < d->nconsumers; i++) {
			if (!d->consumers[i])
				continue;
			x.stream = d->nconsumers > 1 ? d->cfg.streams[i]
						     : NULL;
			relay_consumer_stuck_messages(d->consumers[i],
						      stuck_json_s, &x);
		}
		json_object_set_new(r, "stuck", x.list);
	}
	relayd_request_reply(req, r);
}

/* NULL when @app can run here, else why not (one line, in @buf): the
 * interpreter its kind needs (relay_runtime_kind_program()) is missing. */
static const char *unavailable_reason(const relay_app *app, char *buf,
				      size_t size)
{
	relay_runtime_kind k = relay_app_runtime(app);
	const char *prog = relay_runtime_kind_program(k);

	if (!prog || relay_app_runtime_available(app))
		return NULL;
	snprintf(buf, size, "runtime %s: %s not found on relayd's PATH",
		 relay_runtime_kind_name(k), prog);
	return buf;
}

/*
 * One app of `apps`. "status": "ok"; "unavailable" (its runtime cannot
 * run here); "stale" (it serves its previous version: the template on
 * disk is invalid, "errors" says why); "invalid" (never loaded).
 */
static json_t *app_json(const relayd *d, const relay_appset *set, size_t i)
{
	const char *why;
	const relay_app *app = relay_appset_entry_app(set, i);
	const json_t *stale = relayd_apps_stale_errors(d,
		relay_appset_entry_name(set, i));
	json_t *o, *list;
	size_t j, n;
	char buf[RELAY_ERROR_PATH_MAX + RELAY_ERROR_TEXT_MAX + 32];
	char reason[128];

	o = json_pack("{s:s}", "name", relay_appset_entry_name(set, i));
	if (!app) {
		json_object_set_new(o, "status", json_string("invalid"));
		list = json_array();
		n = relay_appset_entry_error_count(set, i);
		for (j = 0; j < n; j++)
			json_array_append_new(list, json_string(
				relay_error_format(
					relay_appset_entry_error(set, i, j),
					buf, sizeof(buf))));
		json_object_set_new(o, "errors", list);
		return o;
	}
	why = unavailable_reason(app, reason, sizeof(reason));
	json_object_set_new(o, "status", json_string(stale ? "stale" : why ?
						     "unavailable" : "ok"));
	if (stale || why) {
		list = stale ? json_copy((json_t *)stale) : json_array();
		if (why)
			json_array_append_new(list, json_string(why));
		json_object_set_new(o, "errors", list);
	}
	json_object_set_new(o, "runtime", json_string(
		relay_app_runtime_name(relay_app_runtime(app))));
	json_object_set_new(o, "dir", json_string(relay_app_dir(app)));
	json_object_set_new(o, "concurrency",
			    json_integer(relay_app_concurrency(app)));
	list = json_array();
	n = relay_app_rule_count(app);
	for (j = 0; j < n; j++) {
		const relay_app_rule *rule = relay_app_rule_at(app, j);

		json_array_append_new(list, json_pack("{s:s, s:I, s:i}",
			"handler", relay_app_rule_handler(rule),
			"timeout_ms",
			(json_int_t)relay_app_rule_timeout_ms(rule),
			"retries", relay_app_rule_retries(rule)));
	}
	json_object_set_new(o, "handlers", list);
	list = json_array();
	n = relay_app_schedule_count(app);
	for (j = 0; j < n; j++) {
		const relay_app_schedule *s = relay_app_schedule_at(app, j);

		json_array_append_new(list, json_pack("{s:s, s:s, s:s, s:s}",
			"name", relay_app_schedule_name(s),
			"handler", relay_app_schedule_handler(s),
			"cron", relay_app_schedule_cron(s),
			"timezone", relay_app_schedule_timezone(s)));
	}
	json_object_set_new(o, "schedules", list);
	return o;
}

static void cmd_apps(relayd *d, relayd_request *req)
{
	json_t *r = okobj(), *list = json_array();
	size_t i, n = relay_appset_entry_count(d->apps);

	for (i = 0; i < n; i++)
		json_array_append_new(list, app_json(d, d->apps, i));
	json_object_set_new(r, "apps", list);
	relayd_request_reply(req, r);
}

static const char *run_status(relay_run_status s)
{
	switch (s) {
	case RELAY_RUN_OK:
		return "ok";
	case RELAY_RUN_FAILED:
	case RELAY_RUN_REFUSED:  /* never started: its reason says so */
		return "failed";
	case RELAY_RUN_TIMEOUT:
		return "timeout";
	case RELAY_RUN_CANCELLED:
		return "cancelled";
	}
	return "unknown";
}

static const char *run_error_code(int status)
{
	switch (status) {
	case RELAY_ENOTFOUND:
		return "not_found";
	case RELAY_EPARSE:
	case RELAY_ETYPE:
	case RELAY_EINVAL:
		return "bad_request";
	case RELAY_ECLOSED:
		return "stopping";
	default:
		return "failed";
	}
}

/* Shared by app invoke and dlq replay. */
typedef struct run_req {
	relayd *d;
	relayd_request *req;
	char *dlq_id;       /* dlq replay: the entry to remove, or NULL */
	const char *dlq_stream; /* dlq replay: its stream (the config's) */
	bool keep;          /* dlq replay: keep the entry */
	bool on_ctl;        /* dlq replay: the command in flight went on
			       the control connection */
	json_t *output;     /* app invoke, dlq replay with "output": the
			       lines, or NULL */
	size_t out_bytes;   /* ... bytes of text kept so far */
	size_t out_dropped; /* ... lines past the bound, not kept */
} run_req;

/* An invoke's or replay's answer carries at most this much of its
 * output. */
#define OUT_MAX_LINES 1000
#define OUT_MAX_BYTES (64 * 1024)

static void run_req_free(run_req *rr)
{
	json_decref(rr->output);
	free(rr->dlq_id);
	free(rr);
}

/* app invoke or dlq replay with "output": keep each line (prefix and
 * all) for the answer, up to the bound; count the rest. */
static void on_replay_output(const relay_output_line *line, void *payload)
{
	run_req *rr = payload;
	json_t *o, *t;

	if (json_array_size(rr->output) >= OUT_MAX_LINES ||
	    rr->out_bytes + line->len > OUT_MAX_BYTES) {
		rr->out_dropped++;
		return;
	}
	t = relayd_json_lossy(line->text, line->len);
	o = t ? json_pack("{s:s, s:o}", "stream",
			  line->stream == RELAY_OUTPUT_STDERR ? "stderr"
							      : "stdout",
			  "text", t) : NULL;
	if (!o || json_array_append_new(rr->output, o)) {
		rr->out_dropped++;
		return;
	}
	if (line->partial)
		json_object_set_new(o, "partial", json_true());
	rr->out_bytes += line->len;
}

static void on_xdel(relay_redis_backend *b, int status, long long value,
		    void *payload);
static void on_dlq_entry(relay_redis_backend *b, int status,
			 relay_redis_reply *reply, void *payload);

/* XRANGE of @rr's entry (callback on_dlq_entry), or its XDEL (on_xdel),
 * on @b. */
static int replay_send(run_req *rr, relay_redis_backend *b, bool xdel)
{
	char *key = relay_dlq_key(rr->dlq_stream);
	const char *argv[6];
	int rc;

	if (!key)
		return RELAY_ENOMEM;
	if (xdel) {
		const char *ids[] = { rr->dlq_id };

		rc = relay_redis_xdel(b, key, ids, 1, on_xdel, rr);
	} else {
		argv[0] = "XRANGE";
		argv[1] = key;
		argv[2] = rr->dlq_id;
		argv[3] = rr->dlq_id;
		argv[4] = "COUNT";
		argv[5] = "1";
		rc = relay_redis_command(b, 6, argv, NULL, on_dlq_entry, rr);
	}
	relay_free(key);
	return rc;
}

/*
 * A replay's commands go on the stream's control connection, where no
 * XREADGROUP BLOCK holds them up (on an idle stream the stream's own
 * connection waits up to a second for its read: bulk replays ran at
 * about one entry per second). That one connects on its first command;
 * while it is not connected (RELAY_ECLOSED: connecting to a sentinel's
 * master, waiting to reconnect, lost) the stream's own connection takes
 * the command instead, so a replay never fails for it.
 */
static int replay_command(run_req *rr, bool xdel)
{
	relay_redis_backend *b = relayd_ctl_redis(rr->d, rr->dlq_stream);
	int rc = b ? replay_send(rr, b, xdel) : RELAY_ECLOSED;

	rr->on_ctl = rc == 0;
	if (rc == RELAY_ECLOSED) {
		b = relayd_stream_redis(rr->d, rr->dlq_stream);
		rc = b ? replay_send(rr, b, xdel) : RELAY_ECLOSED;
	}
	return rc;
}

/* @rr's command on the control connection failed with @status: 1 when
 * it went out again on the stream's connection (XRANGE reads, and XDEL
 * of one id may run twice), else 0. */
static int replay_resend(run_req *rr, int status, bool xdel)
{
	relay_redis_backend *b;

	if (status != RELAY_ECLOSED || !rr->on_ctl)
		return 0;
	rr->on_ctl = false;
	b = relayd_stream_redis(rr->d, rr->dlq_stream);
	return b && replay_send(rr, b, xdel) == 0;
}

static void on_xdel(relay_redis_backend *b, int status, long long value,
		    void *payload)
{
	run_req *rr = payload;

	(void)b;
	if (replay_resend(rr, status, true))
		return;
	/* The request was answered already; this only logs. */
	if (status || value != 1)
		relayd_log(RELAY_LOG_WARN, "RELAYD-CTL02",
			   "dlq replay: entry %s not removed (%s)", rr->dlq_id,
			   status ? relay_strerror(status) : "already gone");
	run_req_free(rr);
}

static void on_run(int status, const relay_consumer_result *res, size_t n,
		   void *payload)
{
	run_req *rr = payload;
	json_t *r, *list;
	bool all_ok = true;
	size_t i;

	if (status) {
		relayd_request_fail(rr->req, run_error_code(status),
				    relay_strerror(status));
		goto done;
	}
	list = json_array();
	for (i = 0; i < n; i++) {
		const relay_run_outcome *o = &res[i].outcome;

		if (o->status != RELAY_RUN_OK)
			all_ok = false;
		json_array_append_new(list, json_pack(
			"{s:s, s:s, s:s, s:i, s:s, s:I}",
			"app", res[i].app, "handler", res[i].handler,
			"status", run_status(o->status),
			"exit_code", o->exit_code, "reason", o->reason,
			"duration_ms", (json_int_t)(o->duration_us / 1000)));
	}
	r = okobj();
	json_object_set_new(r, "success", json_boolean(all_ok));
	json_object_set_new(r, "results", list);
	if (rr->output) {
		json_object_set(r, "output", rr->output);
		json_object_set_new(r, "output_dropped",
				    json_integer((json_int_t)rr->out_dropped));
	}
	if (rr->dlq_id) {
		bool remove = all_ok && n > 0 && !rr->keep;

		json_object_set_new(r, "dlq_id", json_string(rr->dlq_id));
		json_object_set_new(r, "removed", json_boolean(remove));
		relayd_request_reply(rr->req, r);
		rr->req = NULL;
		if (remove && replay_command(rr, true) == 0)
			return;
		goto done;
	}
	relayd_request_reply(rr->req, r);
done:
	run_req_free(rr);
}

/* The "event" member: a JSON object (re-serialized) or a string. */
static char *event_text(json_t *ev)
{
	if (json_is_string(ev))
		return strdup(json_string_value(ev));
	if (json_is_object(ev))
		return json_dumps(ev, JSON_COMPACT | JSON_PRESERVE_ORDER);
	return NULL;
}

static void cmd_invoke(relayd *d, relayd_request *req, json_t *j)
{
	const char *app = json_string_value(json_object_get(j, "app"));
	char *event = event_text(json_object_get(j, "event"));
	run_req *rr;
	int rc;

	if (!app || !event) {
		free(event);
		relayd_request_fail(req, "bad_request",
				    "app invoke needs \"app\" (a string) and "
				    "\"event\" (a JSON object or its text)");
		return;
	}
	if (!relayd_consumer(d)) {
		free(event);
		relayd_request_fail(req, "stopping", "relayd is stopping");
		return;
	}
	rr = calloc(1, sizeof(*rr));
	if (!rr) {
		free(event);
		relayd_request_fail(req, "failed", "out of memory");
		return;
	}
	rr->d = d;
	rr->req = req;
	if (json_is_true(json_object_get(j, "output")) &&
	    !(rr->output = json_array())) {
		free(event);
		run_req_free(rr);
		relayd_request_fail(req, "failed", "out of memory");
		return;
	}
	rc = relay_consumer_invoke_output(relayd_consumer(d), app, event,
					  strlen(event), rr->output ?
					  on_replay_output : NULL, rr,
					  on_run, rr);
	free(event);
	if (rc) {
		run_req_free(rr);
		relayd_request_fail(req, run_error_code(rc),
				    relay_strerror(rc));
	}
}

static void on_dlq_entry(relay_redis_backend *b, int status,
			 relay_redis_reply *reply, void *payload)
{
	run_req *rr = payload;
	relayd *d = rr->d;
	relay_dlq_record rec;
	relay_error err;
	json_t *link;
	int rc;

	(void)b;
	memset(&rec, 0, sizeof(rec));
	if (!reply && replay_resend(rr, status, false))
		return;
	if (status || !reply || reply->type != RELAY_REDIS_REPLY_ARRAY) {
		relayd_request_fail(rr->req, "redis", status ?
				    relay_strerror(status) :
				    "unexpected reply to XRANGE");
		goto fail;
	}
	if (reply->elements == 0) {
		relayd_request_fail(rr->req, "not_found",
				    "no such DLQ entry");
		goto fail;
	}
	if (relay_dlq_parse(&rec, reply->element[0], &err)) {
		relayd_request_fail(rr->req, "bad_entry", err.text);
		goto fail;
	}
	if (strcmp(rec.e.app, "-") == 0) {
		relayd_request_fail(rr->req, "not_replayable",
				    "a malformed-message entry has no "
				    "handler to replay");
		goto fail;
	}
	if (!relayd_consumer(d)) {
		relayd_request_fail(rr->req, "stopping", "relayd is stopping");
		goto fail;
	}
	/* The replay's span links to the failed attempt the entry's
	 * lineage names (doc/redis-layout.md, `trace`). */
	link = rec.e.trace ? json_loads(rec.e.trace, 0, NULL) : NULL;
	rc = relay_consumer_replay_linked(relayd_consumer(d), rec.e.app,
					  rec.e.handler, rec.e.event,
					  strlen(rec.e.event),
					  json_string_value(json_object_get(
						  link, "attempt")),
					  rr->output ? on_replay_output : NULL,
					  rr, on_run, rr);
	json_decref(link);
	if (rc) {
		relayd_request_fail(rr->req, run_error_code(rc),
				    relay_strerror(rc));
		goto fail;
	}
	relay_dlq_record_clear(&rec);
	relay_redis_reply_free(reply);
	return;
fail:
	relay_dlq_record_clear(&rec);
	relay_redis_reply_free(reply);
	run_req_free(rr);
}

/*
 * "MS" or "MS-SEQ", each a 64-bit unsigned decimal: anything else is not
 * the id of any entry (and Redis would answer XRANGE with an error).
 */
static bool stream_id_valid(const char *id)
{
	int part;

	for (part = 0; part < 2; part++) {
		uint64_t v = 0;

		if (*id < '0' || *id > '9')
			return false;
		for (; *id >= '0' && *id <= '9'; id++) {
			unsigned int dg = (unsigned int)(*id - '0');

			if (v > (UINT64_MAX - dg) / 10)
				return false;
			v = v * 10 + dg;
		}
		if (*id == '\0')
			return true;
		if (part == 1 || *id++ != '-')
			return false;
	}
	return false;
}

/*
 * The stream whose DLQ holds the entry: the request's "stream" (one of
 * the configured streams), or the only one. NULL after answering.
 */
static const char *replay_stream(relayd *d, relayd_request *req, json_t *j)
{
	const char *s = json_string_value(json_object_get(j, "stream"));
	size_t i;

	if (!s) {
		if (d->cfg.nstreams == 1)
			return d->cfg.streams[0];
		relayd_request_fail(req, "bad_request", "several streams are "
				    "configured: dlq replay needs \"stream\"");
		return NULL;
	}
	for (i = 0; i < d->cfg.nstreams; i++)
		if (strcmp(d->cfg.streams[i], s) == 0)
			return d->cfg.streams[i];
	relayd_request_fail(req, "not_found", "not a stream this relayd "
			    "reads (REDIS_STREAM)");
	return NULL;
}

static void cmd_replay(relayd *d, relayd_request *req, json_t *j)
{
	const char *id = json_string_value(json_object_get(j, "id"));
	const char *stream;
	run_req *rr;
	int rc;

	if (!id || !*id) {
		relayd_request_fail(req, "bad_request",
				    "dlq replay needs \"id\" (a DLQ entry id)");
		return;
	}
	if (!stream_id_valid(id)) {
		relayd_request_fail(req, "not_found", "no such DLQ entry "
				    "(not a stream entry id)");
		return;
	}
	stream = replay_stream(d, req, j);
	if (!stream)
		return;
	rr = calloc(1, sizeof(*rr));
	if (!rr || !(rr->dlq_id = strdup(id))) {
		free(rr);
		relayd_request_fail(req, "failed", "out of memory");
		return;
	}
	rr->d = d;
	rr->req = req;
	rr->dlq_stream = stream;
	rr->keep = json_is_true(json_object_get(j, "keep"));
	if (json_is_true(json_object_get(j, "output")) &&
	    !(rr->output = json_array())) {
		run_req_free(rr);
		relayd_request_fail(req, "failed", "out of memory");
		return;
	}
	rc = replay_command(rr, false);
	if (rc) {
		run_req_free(rr);
		relayd_request_fail(req, "redis", relay_strerror(rc));
	}
}

static void cmd_stats(relayd *d, relayd_request *req, bool reset)
{
	json_t *r, *snap;

	if (reset && relayd_consumer(d)) {
		size_t i;

		for (i = 0; i < d->nconsumers; i++)
			if (d->consumers[i])
				relay_consumer_metrics_reset(d->consumers[i]);
		relayd_schedpub_counts_reset(d->schedpub);
		relayd_retention_counts_reset(d->retention);
		d->reset_at_ms = relayd_wall_ms();
		relayd_flush_stats(d);
	}
	snap = relayd_stats_snapshot(d);
	if (!snap) {
		relayd_request_fail(req, "failed", "no statistics available");
		return;
	}
	r = okobj();
	json_object_set_new(r, "stats", snap);
	relayd_request_reply(req, r);
}

void relayd_command(relayd_request *req, void *req_json, void *payload)
{
	relayd *d = payload;
	json_t *j = req_json;
	const char *cmd = json_string_value(json_object_get(j, "cmd"));

	if (!cmd) {
		relayd_request_fail(req, "bad_request",
				    "missing \"cmd\" (a string)");
		return;
	}
	relayd_log(RELAY_LOG_DEBUG, "RELAYD-CTL01", "control request: %s",
		   cmd);
	if (strcmp(cmd, "health") == 0)
		cmd_health(d, req);
	else if (strcmp(cmd, "apps") == 0)
		cmd_apps(d, req);
	else if (strcmp(cmd, "app invoke") == 0)
		cmd_invoke(d, req, j);
	else if (strcmp(cmd, "dlq replay") == 0)
		cmd_replay(d, req, j);
	else if (strcmp(cmd, "stats") == 0)
		cmd_stats(d, req, false);
	else if (strcmp(cmd, "stats reset") == 0)
		cmd_stats(d, req, true);
	else
		relayd_request_fail(req, "unknown_command",
				    "unknown command; expected health, apps, "
				    "app invoke, dlq replay, stats or "
				    "stats reset");
}
