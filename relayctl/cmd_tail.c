/*
 * cmd_tail.c - relayctl tail [--app A] [--handler H] [--outcome O]
 * [--no-follow] [--json]
 *
 * One line per attempt outcome from every relayd replica, read from the
 * outcome stream relay:<REDIS_STREAM>:outcomes (doc/redis-layout.md R-10),
 * which the scripts that record an attempt append to while a follower
 * holds the lease relay:<stream>:outcomes:tail. Follows by default: sets
 * the lease (15 s, renewed every 5 s), then XREAD BLOCK 1000 from the
 * stream's end ("$"), again and again, so a SIGINT or SIGTERM is noticed
 * within a second: relayctl then stops and exits 0 (the lease expires
 * by itself: another tail may hold it too). --no-follow prints the
 * outcomes the stream holds (at most the
 * last 1000) and exits. A Redis error (the server went away): one line
 * naming it, exit 1. Every value is cleaned before it reaches the
 * terminal; --json prints one JSON object per line with the exact values.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cmdutil.h"
#include "ctlconf.h"
#include "fmt.h"
#include "relay/dlq.h"
#include "relayctl.h"
#include "timeline.h"

#define CMD "tail"

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: relayctl tail [--app A] [--handler H] [--outcome "
		"O] [--no-follow]\n                     [--json] [connection "
		"options]\n\n"
		"Print one line per handler attempt outcome, from every relayd "
		"replica\n(the outcome stream relay:<stream>:outcomes), as "
		"they happen.\n\n"
		"  --app A            only app A\n"
		"  --handler H        only handler H\n"
		"  --outcome O        only outcome O: ok, failed, timeout or "
		"not_started\n"
		"  --follow           wait for new outcomes (the default)\n"
		"  --no-follow        print the outcomes kept now and exit\n"
		"  --json             one JSON object per line\n%s"
		"  -h, --help         show this help\n\n"
		"Stops on SIGINT (^C) or SIGTERM with exit 0.\n"
		"Exit status: 0 success or stopped, 1 Redis error (for example "
		"Redis went\naway), 2 usage error.\n", relayctl_conf_help);
}

static int redis_failed(int rc, const relay_redis_reply *r);

struct tail {
	struct relayctl_conf conf;
	const char *app, *handler, *outcome;
	int follow;
	relay_redis_backend *b;
	char *key, *lease;
};

/* Set or renew the lease that makes the scripts append outcomes. */
static int lease(struct tail *t)
{
	const char *argv[] = { "SET", t->lease, "1", "PX", "15000" };
	relay_redis_reply *r = NULL;
	int rc = relay_redis_sync_command(t->b, &r, 5, argv, NULL);

	if (rc || relay_redis_reply_error(r))
		rc = redis_failed(rc, r);
	relay_redis_reply_free(r);
	return rc;
}

/* Print stream entry @x of the outcome stream when it passes the
 * filters. */
static void show(const struct tail *t, const relay_redis_reply *x)
{
	const relay_redis_reply *id = relayctl_entry_field(x, "id");
	const relay_redis_reply *inv = relayctl_entry_field(x, "inv");
	const relay_redis_reply *tl = relayctl_entry_field(x, "tl");
	json_t *a, *o;
	const char *slash, *out;
	char app[256], ts[48];

	if (!id || !inv || !tl || !(slash = strchr(inv->str, '/')))
		return;
	snprintf(app, sizeof(app), "%.*s", (int)(slash - inv->str), inv->str);
	if ((t->app && strcmp(t->app, app) != 0) ||
	    (t->handler && strcmp(t->handler, slash + 1) != 0))
		return;
	a = relayctl_timeline_parse(tl->str, tl->len);
	o = json_array_get(a, 0);
	out = json_string_value(json_object_get(o, "outcome"));
	if (!o || (t->outcome && (!out || strcmp(out, t->outcome) != 0))) {
		json_decref(a);
		return;
	}
	if (t->conf.json) {
		json_t *line = json_pack("{s:s, s:s%, s:s, s:s}", "entry",
					 x->element[0]->str, "id", id->str,
					 id->len, "app", app, "handler",
					 slash + 1);

		if (line) {
			json_object_update(line, o);
			relayctl_put_json(line, JSON_COMPACT |
					  JSON_PRESERVE_ORDER);
		}
		json_decref(line);
	} else {
		json_t *one = json_array();

		printf("%s  %s  %s/%s\n",
		       relay_dlq_timestamp(json_integer_value(json_object_get(
				       o, "end_ms")), ts, sizeof(ts)),
		       relayctl_c(id->str), relayctl_c(app),
		       relayctl_c(slash + 1));
		if (one && !json_array_append(one, o))
			relayctl_timeline_print(stdout, one, "  ");
		json_decref(one);
	}
	fflush(stdout);
	json_decref(a);
}

/* The entries of an XREAD reply ([[key, [entries]]]), or NULL. */
static const relay_redis_reply *xread_entries(const relay_redis_reply *r)
{
	if (!r || r->type != RELAY_REDIS_REPLY_ARRAY || r->elements < 1 ||
	    r->element[0]->type != RELAY_REDIS_REPLY_ARRAY ||
	    r->element[0]->elements != 2)
		return NULL;
	return r->element[0]->element[1];
}

static int redis_failed(int rc, const relay_redis_reply *r)
{
	if (!rc && r)
		return relayctl_error(RELAYCTL_FAIL, CMD ": Redis: %s; "
				      "stopped", r->str);
	return relayctl_error(RELAYCTL_FAIL, CMD ": Redis: %s; stopped",
			      relay_strerror(rc));
}

/* --no-follow: the last 1000 outcomes kept, oldest first. */
static int dump(struct tail *t)
{
	const char *argv[] = { "XREVRANGE", t->key, "+", "-", "COUNT",
			       "1000" };
	relay_redis_reply *r = NULL;
	size_t i;
	int rc = relay_redis_sync_command(t->b, &r, 6, argv, NULL);

	if (rc || relay_redis_reply_error(r)) {
		rc = redis_failed(rc, r);
		relay_redis_reply_free(r);
		return rc;
	}
	for (i = r->elements; i > 0; i--)
		show(t, r->element[i - 1]);
	relay_redis_reply_free(r);
	return RELAYCTL_OK;
}

static int follow(struct tail *t)
{
	char last[64] = "$";
	const char *argv[] = { "XREAD", "COUNT", "100", "BLOCK", "1000",
			       "STREAMS", t->key, last };
	struct sigaction sa;
	time_t renewed = 0;
	size_t i;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	while (!stop) {
		relay_redis_reply *r = NULL;
		const relay_redis_reply *e;
		int rc;

		if (time(NULL) - renewed >= 5) {
			rc = lease(t);
			if (rc)
				return rc;
			renewed = time(NULL);
		}
		rc = relay_redis_sync_command(t->b, &r, 8, argv, NULL);

		if (stop) {
			relay_redis_reply_free(r);
			break;
		}
		if (rc || relay_redis_reply_error(r)) {
			rc = redis_failed(rc, r);
			relay_redis_reply_free(r);
			return rc;
		}
		e = xread_entries(r);
		for (i = 0; e && i < e->elements; i++) {
			show(t, e->element[i]);
			snprintf(last, sizeof(last), "%s",
				 e->element[i]->element[0]->str);
		}
		relay_redis_reply_free(r);
	}
	return RELAYCTL_OK;
}

int relayctl_cmd_tail(int argc, char **argv)
{
	static const char *const outcomes[] = { "ok", "failed", "timeout",
						"not_started" };
	struct tail t;
	size_t k;
	int i, m, rc;

	memset(&t, 0, sizeof(t));
	t.follow = 1;
	relayctl_conf_init(&t.conf);
	for (i = 1; i < argc; i++) {
		const char *v;

		m = relayctl_conf_arg(&t.conf, argc, argv, &i, CMD, 1, usage);
		if (m == RELAYCTL_ARG_HELP)
			return RELAYCTL_OK;
		if (m == RELAYCTL_ARG_BAD)
			goto bad;
		if (m == RELAYCTL_ARG_TAKEN)
			continue;
		if (strcmp(argv[i], "--follow") == 0) {
			t.follow = 1;
			continue;
		}
		if (strcmp(argv[i], "--no-follow") == 0) {
			t.follow = 0;
			continue;
		}
		if ((m = relayctl_opt_value(argc, argv, &i, "--app", CMD,
					    &v)) != 0) {
			if (m < 0)
				goto bad;
			t.app = v;
			continue;
		}
		if ((m = relayctl_opt_value(argc, argv, &i, "--handler", CMD,
					    &v)) != 0) {
			if (m < 0)
				goto bad;
			t.handler = v;
			continue;
		}
		if ((m = relayctl_opt_value(argc, argv, &i, "--outcome", CMD,
					    &v)) != 0) {
			if (m < 0)
				goto bad;
			for (k = 0; k < 4 && strcmp(v, outcomes[k]) != 0; k++)
				;
			if (k == 4) {
				relayctl_error(RELAYCTL_USAGE, CMD
					       ": --outcome takes ok, failed, "
					       "timeout or not_started, got "
					       "\"%s\"", v);
				goto bad;
			}
			t.outcome = v;
			continue;
		}
		if (relayctl_positional(CMD, argv[i], NULL))
			goto bad;
	}
	rc = relayctl_redis_open(&t.conf, CMD, &t.b);
	if (rc)
		return rc;
	t.key = malloc(strlen(t.conf.stream) + 32);
	t.lease = malloc(strlen(t.conf.stream) + 32);
	if (!t.key || !t.lease) {
		free(t.key);
		free(t.lease);
		relay_redis_free(t.b);
		return relayctl_error(RELAYCTL_FAIL, CMD ": out of memory");
	}
	sprintf(t.key, "relay:%s:outcomes", t.conf.stream);
	sprintf(t.lease, "relay:%s:outcomes:tail", t.conf.stream);
	rc = t.follow ? follow(&t) : dump(&t);
	free(t.key);
	free(t.lease);
	relay_redis_free(t.b);
	return rc;
bad:
	usage(stderr);
	return RELAYCTL_USAGE;
}
