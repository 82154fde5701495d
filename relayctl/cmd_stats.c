/*
 * cmd_stats.c - relayctl stats [--json] | stats reset [--json]
 *
 * `stats` reads RELAY_STATE_DIR/stats.json (doc/protocol.md, version 1),
 * which relayd rewrites atomically every 5 seconds and at exit, so it
 * works while relayd is down. A missing file is an error (exit 1) that
 * names the path and RELAY_STATE_DIR: printing zeros would hide a relayd
 * that never ran, or one using another state directory. `stats reset`
 * asks the running
 * relayd ({"cmd":"stats reset"}) to zero its counters and prints the new
 * snapshot. Output: aligned "Key: value" lines, or with --json one object
 * {"events_received": N, ..., "oldest_pending_age_seconds": S,
 *  "stream_length": N|null, ..., "retention_failing": B,
 *  "updated": "<RFC 3339>"|null}. The retention figures come from the
 * file's "retention" object (relayd's retention ticks).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cmdutil.h"
#include "ctlconf.h"
#include "ctlsock.h"
#include "fmt.h"
#include "relayctl.h"
#include "relay/daemon_metrics.h"
#include "relay/metrics.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: relayctl stats [--json] [connection options]\n"
		"       relayctl stats reset [--json] [connection options]\n\n"
		"Show relayd's event counters from RELAY_STATE_DIR/stats.json "
		"(also\nwhile relayd is down), or reset them through the "
		"running relayd.\n\n"
		"  --json             one JSON object\n%s"
		"  -h, --help         show this help\n\n"
		"Exit status: 0 success, 1 missing or unreadable stats file "
		"or\nrelayd not reachable (reset), 2 usage error.\n", relayctl_conf_help);
}

/* The engine's figures (relay/metrics.h): those with a position in
 * `relayctl stats` (ctl) or in its line per stream (line). */
static const relay_metric_info rows[] = {
	RELAY_CONSUMER_METRICS(RELAY_METRIC_INFO)
};
#define NROWS (sizeof(rows) / sizeof(rows[0]))

/* The row at position @pos of @what (ctl or line), or NULL. */
static const relay_metric_info *at(int pos, int line)
{
	size_t i;

	for (i = 0; pos > 0 && i < NROWS; i++)
		if ((line ? rows[i].line : rows[i].ctl) == pos)
			return &rows[i];
	return NULL;
}

/* Retention figures (the stats file's "retention" object,
 * relay/daemon_metrics.h): those with a position among the retention
 * lines of `relayctl stats` (ctl) or in its --json (ctl_json). */
typedef struct ret_row {
	relay_figure_kind kind;
	const char *key;
	int ctl;
	const char *ctl_label;
	int ctl_json;
	const char *ctl_key;   /* 0: key */
} ret_row;

#define RET_ROW(id, kind, key, prom, help, file, ctl, ctl_label, ctl_json, \
		ctl_key) { kind, key, ctl, ctl_label, ctl_json, ctl_key },
static const ret_row ret_rows[] = { RELAY_RETENTION_FIGURES(RET_ROW) };
#undef RET_ROW
#define NRET (sizeof(ret_rows) / sizeof(ret_rows[0]))

/* The retention row at position @pos of --json (@json) or of the
 * lines, or NULL. */
static const ret_row *ret_at(int pos, int json)
{
	size_t i;

	for (i = 0; pos > 0 && i < NRET; i++)
		if ((json ? ret_rows[i].ctl_json : ret_rows[i].ctl) == pos)
			return &ret_rows[i];
	return NULL;
}

static const char *retention_text(json_t *v, char *buf, size_t size)
{
	if (!json_is_integer(v))
		return "unknown";
	if (!json_integer_value(v))
		return "off";
	return relayctl_fmt_age(json_integer_value(v), buf, size);
}

/* A retention line's value (@v from the "retention" object), by kind. */
static const char *retention_value(const ret_row *r, json_t *v, char *buf,
				   size_t size)
{
	switch (r->kind) {
	case RELAY_FIGURE_LENGTH:
		if (!json_is_integer(v))
			return "unknown";
		break;
	case RELAY_FIGURE_AGE:
		return relayctl_fmt_age((int64_t)json_number_value(v), buf,
					size);
	case RELAY_FIGURE_PERIOD:
		return retention_text(v, buf, size);
	case RELAY_FIGURE_FLAG:
		return json_is_true(v) ? "FAILING (see relayd's log, "
					 "RELAYD-RET02)" : "ok";
	case RELAY_FIGURE_COUNTER:
	case RELAY_FIGURE_GAUGE:
		break;
	}
	snprintf(buf, size, "%lld", (long long)json_integer_value(v));
	return buf;
}

/* The retention lines: lengths, what was trimmed, how long entries are
 * kept, and whether the last retention tick worked. */
static void print_retention(json_t *snap)
{
	json_t *r = json_object_get(snap, "retention");
	const ret_row *row;
	char buf[64];
	int pos;

	for (pos = 1; (row = ret_at(pos, 0)); pos++)
		/* No "retention" object: no stats file yet, or one from a
		 * relayd without retention. */
		relayctl_kv(stdout, 18, row->ctl_label, json_is_object(r) ?
			    retention_value(row, json_object_get(r, row->key),
					    buf, sizeof(buf)) : "unknown");
}

/* A retention figure of --json (@v from the "retention" object). */
static json_t *retention_json(const ret_row *r, json_t *v)
{
	if (r->kind == RELAY_FIGURE_AGE)
		return json_real(json_number_value(v));
	if (r->kind == RELAY_FIGURE_FLAG)
		return json_boolean(json_is_true(v));
	return json_is_integer(v) ? json_copy(v) : json_null();
}

/* @r's value in the stats file: its object is "counters" or "gauges". */
static json_t *file_value(json_t *snap, const relay_metric_info *r)
{
	return json_object_get(json_object_get(snap,
		r->kind == RELAY_METRIC_COUNTER ? "counters" : "gauges"),
		relay_metric_key(r));
}

/* Several streams: one line each, "Stream <name>: received N, ...". */
static void print_streams(json_t *snap)
{
	json_t *streams = json_object_get(snap, "streams"), *s;
	const relay_metric_info *r;
	const char *name;
	char label[300], buf[256];
	size_t n;
	int pos;

	json_object_foreach(streams, name, s) {
		snprintf(label, sizeof(label), "Stream %s",
			 relayctl_c(name));
		buf[0] = 0;
		for (pos = 1, n = 0; (r = at(pos, 1)) && n < sizeof(buf);
		     pos++)
			n += (size_t)snprintf(buf + n, sizeof(buf) - n,
				"%s%s %lld", pos > 1 ? ", " : "",
				r->line_label, (long long)json_integer_value(
				json_object_get(s, relay_metric_key(r))));
		relayctl_kv(stdout, 18, label, buf);
	}
}

/* Print @snap (a stats file object, or NULL when there is none). */
static int print(json_t *snap, int json)
{
	const relay_metric_info *r;
	const ret_row *rr;
	const char *upd = json_string_value(json_object_get(snap,
							    "written_at"));
	char buf[128];
	int pos;

	if (json) {
		json_t *o = json_object();
		json_t *ret = json_object_get(snap, "retention");

		for (pos = 1; o && (r = at(pos, 0)); pos++)
			json_object_set_new(o, r->ctl_key ? r->ctl_key :
				relay_metric_key(r), r->kind == RELAY_METRIC_AGE
				? json_real(json_number_value(file_value(snap,
				r))) : json_integer(json_integer_value(
				file_value(snap, r))));
		for (pos = 1; o && (rr = ret_at(pos, 1)); pos++)
			json_object_set_new(o, rr->ctl_key ? rr->ctl_key :
				rr->key, retention_json(rr, json_object_get(
				ret, rr->key)));
		json_object_set_new(o, "updated", upd ? json_string(upd)
						      : json_null());
		/* Several streams: each one's own figures, as relayd
		 * wrote them. */
		if (json_is_object(json_object_get(snap, "streams")))
			json_object_set_new(o, "streams", json_deep_copy(
				json_object_get(snap, "streams")));
		if (relayctl_put_json(o, JSON_INDENT(2) |
				      JSON_PRESERVE_ORDER)) {
			json_decref(o);
			return relayctl_error(RELAYCTL_FAIL, "stats: out of "
					      "memory");
		}
		json_decref(o);
		return fflush(stdout) ? RELAYCTL_FAIL : RELAYCTL_OK;
	}
	for (pos = 1; (r = at(pos, 0)); pos++) {
		if (r->kind == RELAY_METRIC_AGE)
			relayctl_fmt_age((int64_t)json_number_value(
				file_value(snap, r)), buf, sizeof(buf));
		else
			snprintf(buf, sizeof(buf), "%lld", (long long)
				 json_integer_value(file_value(snap, r)));
		relayctl_kv(stdout, 18, r->ctl_label, buf);
	}
	print_retention(snap);
	print_streams(snap);
	relayctl_kv(stdout, 18, "Updated", upd ? relayctl_fmt_time_age(
				    upd, buf, sizeof(buf)) : "never");
	return fflush(stdout) ? RELAYCTL_FAIL : RELAYCTL_OK;
}

static int show(const struct relayctl_conf *c)
{
	char path[4200];
	json_error_t jerr;
	json_t *snap;
	FILE *f;
	int rc;

	snprintf(path, sizeof(path), "%s/stats.json", c->state_dir);
	f = fopen(path, "r");
	if (!f && errno == ENOENT)
		return relayctl_error(RELAYCTL_FAIL, "stats: no stats file %s: "
				      "relayd writes it into its "
				      "RELAY_STATE_DIR (here %s) while it "
				      "runs; start relayd, or point "
				      "RELAY_STATE_DIR or --state-dir at the "
				      "directory relayd uses", path,
				      c->state_dir);
	if (!f)
		return relayctl_error(RELAYCTL_FAIL, "stats: %s: %s", path,
				      strerror(errno));
	snap = json_loadf(f, 0, &jerr);
	fclose(f);
	if (!snap || !json_is_object(snap)) {
		json_decref(snap);
		return relayctl_error(RELAYCTL_FAIL, "stats: %s:%d:%d: %s",
				      path, jerr.line, jerr.column,
				      snap ? "not a JSON object" : jerr.text);
	}
	if (json_integer_value(json_object_get(snap, "version")) != 1) {
		json_decref(snap);
		return relayctl_error(RELAYCTL_FAIL, "stats: %s: unsupported "
				      "\"version\" (this relayctl reads "
				      "version 1)", path);
	}
	rc = print(snap, c->json);
	json_decref(snap);
	return rc;
}

static int reset(const struct relayctl_conf *c)
{
	char path[4200], why[1024];
	json_t *resp, *snap;
	int rc;

	relayctl_sock_path(c, path, sizeof(path));
	resp = relayctl_ctl_call(path, json_pack("{s:s}", "cmd",
						 "stats reset"),
				 30000, why, sizeof(why));
	if (!resp)
		return relayctl_error(RELAYCTL_FAIL, "stats reset: %s", why);
	if (relayctl_ctl_failed(resp, why, sizeof(why))) {
		json_decref(resp);
		return relayctl_error(RELAYCTL_FAIL, "stats reset: %s", why);
	}
	snap = json_object_get(resp, "stats");
	if (!c->json)
		puts("Statistics reset");
	rc = print(json_is_object(snap) ? snap : NULL, c->json);
	json_decref(resp);
	return rc;
}

int relayctl_cmd_stats(int argc, char **argv)
{
	struct relayctl_conf c;
	static const char *const subs[] = { "reset" };
	int rc, do_reset = argc > 1 && strcmp(argv[1], "reset") == 0;

	/* A misspelt "reset" is a subcommand meant, not an argument. */
	if (argc > 1 && !do_reset && argv[1][0] != '-' &&
	    relayctl_suggest(argv[1], subs, 1)) {
		relayctl_error(RELAYCTL_USAGE, "stats: unknown subcommand "
			       "\"%s\"; did you mean \"reset\"?", argv[1]);
		fputs("usage: relayctl stats [reset] [--json] [connection "
		      "options]\ntry 'relayctl stats --help'\n", stderr);
		return RELAYCTL_USAGE;
	}

	/* "reset" may only come first: the flags follow it. */
	rc = relayctl_conf_parse(&c, argc - do_reset, argv + do_reset, "stats",
				 1, usage);
	if (rc)
		return rc < 0 ? RELAYCTL_OK : rc;
	return do_reset ? reset(&c) : show(&c);
}
