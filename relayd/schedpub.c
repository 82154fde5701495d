/*
 * schedpub.c - relayd's schedule publisher: every relayd evaluates every
 * schedule of every valid app once a minute and publishes the
 * occurrences that fell due, deduplicated cluster-wide by the atomic
 * SCHEDULE_PUBLISH script (doc/redis-layout.md ), so no leader election is
 * needed: three daemons publishing the same occurrence leave one stream
 * entry.
 *
 *	start ─ load the outbox ─ catch-up: for each schedule the latest
 *	        occurrence <= now, if within 24 h and not before the
 *	        schedule was first seen (schedseen.c) ─┐
 *	tick (aligned to the minute) ─ occurrences in (last tick, now] ─┤
 *	                                                                 ▼
 *	pending list ─ SCHEDULE_PUBLISH ─┬─ published / duplicate: drop
 *	                                 └─ failed: keep, write the outbox,
 *	                                    retry with backoff (1 s ... 30 s)
 *
 * The outbox (RELAY_STATE_DIR/schedule-outbox.json) holds the
 * occurrences whose publication failed, written atomically (temp file,
 * fsync, rename, fsync of the directory) whenever that set changes, and
 * read back at start-up, so a failed publication survives a restart.
 * It is bounded (RELAYD_OUTBOX_MAX entries; the oldest is dropped with a
 * warning); a corrupt file is logged and ignored (the catch-up still
 * publishes the latest occurrence of each schedule).
 *
 * Test builds (-Dtest_hooks=true) may run the schedule clock on virtual
 * time (RELAY_TEST_SCHEDULE_CLOCK, relayd.h); the minute tick then fires
 * at the virtual minute boundaries.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "relay/occurrence.h"
#include "relay/relay.h"
#include "relay/schedule.h"
#include "relayd.h"
#include "schedseen.h"

#define OUTBOX_FILE "schedule-outbox.json"
#define CATCHUP_WINDOW_S (24 * 3600)
#define MAX_PER_TICK 1440         /* occurrences per schedule per tick */
#define BACKOFF_MIN_S 1.0
#define BACKOFF_MAX_S 30.0

typedef struct occ {
	struct occ *next;
	char *app, *schedule, *handler;
	int64_t at;                /* scheduled_at, Unix seconds */
	int catchup;               /* published by the start-up catch-up */
	int in_flight;
	int durable;               /* in the outbox file */
	relayd_schedpub *p;        /* NULL once the publisher is gone */
} occ;

struct relayd_schedpub {
	relayd *d;
	occ *head;                 /* pending, oldest first */
	size_t n;
	int64_t last_s;            /* last evaluated instant (schedule clock) */
	double backoff_s;
	int stopped;
	int outbox_dirty;
	int outbox_nonempty;       /* the file holds entries */
	ev_timer tick;
	ev_timer retry;
	relayd_schedpub_counts k;
	relayd_schedseen *seen;    /* first-seen instants (schedseen.h) */
};

/* ---- the schedule clock -------------------------------------------------- */

int64_t relayd_schedule_now(const relayd *d)
{
	int64_t wall = relayd_wall_ms();
	const relayd_config *c = &d->cfg;

	if (!c->sched_clock_set)
		return wall / 1000;
	return c->sched_clock_v +
	       (wall - c->sched_clock_anchor_ms) * c->sched_clock_rate / 1000;
}

/* Real seconds until the schedule clock reaches @v. */
static double real_delay(const relayd *d, int64_t v)
{
	const relayd_config *c = &d->cfg;
	int64_t wall = relayd_wall_ms();
	double s;

	if (!c->sched_clock_set)
		s = (double)(v * 1000 - wall) / 1000.0;
	else
		s = ((double)(v - c->sched_clock_v) * 1000.0 /
		     (double)c->sched_clock_rate +
		     (double)c->sched_clock_anchor_ms - (double)wall) / 1000.0;
	return s < 0.001 ? 0.001 : s;
}

/* ---- the outbox ------------------------------------------------------------ */

static void occ_free(occ *o)
{
	free(o->app);
	free(o->schedule);
	free(o->handler);
	free(o);
}

static void outbox_write(relayd_schedpub *p)
{
	json_t *arr = json_array(), *root;
	char *text;
	occ *o;
	int rc = -1;

	p->outbox_dirty = 0;
	for (o = p->head; arr && o; o = o->next)
		if (o->durable)
			json_array_append_new(arr, json_pack(
				"{s:s, s:s, s:s, s:I, s:b}", "app", o->app,
				"schedule", o->schedule, "handler",
				o->handler, "scheduled_at", (json_int_t)o->at,
				"catchup", o->catchup));
	if (!arr)
		goto out;
	if (json_array_size(arr) == 0 && !p->outbox_nonempty) {
		json_decref(arr);
		return;  /* nothing on disk, nothing to say */
	}
	root = json_pack("{s:i, s:o}", "version", 1, "occurrences", arr);
	text = root ? json_dumps(root, JSON_COMPACT) : NULL;
	if (text) {
		rc = relayd_write_atomic(p->d->cfg.state_dir, OUTBOX_FILE,
					 text, strlen(text));
		if (rc == 0)
			p->outbox_nonempty = json_array_size(arr) > 0;
	}
	free(text);
	json_decref(root);
out:
	if (rc) {
		p->outbox_dirty = 1;
		relayd_log(RELAY_LOG_WARN, "RELAYD-SCHED03",
			   "cannot write %s/%s: %s (retried)",
			   p->d->cfg.state_dir, OUTBOX_FILE, strerror(errno));
	}
}

static occ *occ_find(relayd_schedpub *p, const char *app,
		     const char *schedule, int64_t at)
{
	occ *o;

	for (o = p->head; o; o = o->next)
		if (o->at == at && strcmp(o->app, app) == 0 &&
		    strcmp(o->schedule, schedule) == 0)
			return o;
	return NULL;
}

static void occ_unlink(relayd_schedpub *p, occ *o)
{
	occ **pp;

	for (pp = &p->head; *pp; pp = &(*pp)->next)
		if (*pp == o) {
			*pp = o->next;
			p->n--;
			return;
		}
}

/* Queue an occurrence (once). Returns the entry, or NULL. */
static occ *occ_add(relayd_schedpub *p, const char *app,
		    const char *schedule, const char *handler, int64_t at,
		    int catchup, int durable)
{
	occ *o = occ_find(p, app, schedule, at), **pp;

	if (o)
		return NULL;
	while (p->n >= RELAYD_OUTBOX_MAX) {
		occ *old = p->head;

		if (old->in_flight)
			return NULL;  /* bounded: refuse rather than grow */
		relayd_log(RELAY_LOG_WARN, "RELAYD-SCHED04",
			   "schedule outbox full (%d occurrences): dropping "
			   "the oldest, %s/%s at %lld", RELAYD_OUTBOX_MAX,
			   old->app, old->schedule, (long long)old->at);
		occ_unlink(p, old);
		if (old->durable)
			p->outbox_dirty = 1;
		occ_free(old);
	}
	o = calloc(1, sizeof(*o));
	if (!o)
		return NULL;
	o->app = strdup(app);
	o->schedule = strdup(schedule);
	o->handler = strdup(handler);
	o->at = at;
	o->catchup = catchup;
	o->durable = durable;
	o->p = p;
	if (!o->app || !o->schedule || !o->handler) {
		occ_free(o);
		return NULL;
	}
	for (pp = &p->head; *pp; pp = &(*pp)->next)
		;
	*pp = o;
	p->n++;
	return o;
}

static int read_file(const char *path, char **out, size_t *len)
{
	/* Never through a symlink (the state dir is ours alone). */
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	FILE *f = fd >= 0 ? fdopen(fd, "rb") : NULL;
	char *buf = NULL;
	long n;

	*out = NULL;
	if (!f) {
		int e = errno;

		if (fd >= 0)
			close(fd);
		errno = e;
		return e == ENOENT ? 1 : -1;
	}
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 &&
	    n <= 4 * 1024 * 1024 && fseek(f, 0, SEEK_SET) == 0 &&
	    (buf = malloc((size_t)n + 1)) &&
	    fread(buf, 1, (size_t)n, f) == (size_t)n) {
		buf[n] = '\0';
		*out = buf;
		*len = (size_t)n;
		fclose(f);
		return 0;
	}
	free(buf);
	fclose(f);
	return -1;
}

static void outbox_load(relayd_schedpub *p)
{
	char path[4096], *text = NULL, why[200] = "";
	json_error_t jerr;
	json_t *root = NULL, *arr, *e;
	size_t len = 0, i, loaded = 0;
	int rc;

	snprintf(path, sizeof(path), "%s/%s", p->d->cfg.state_dir,
		 OUTBOX_FILE);
	rc = read_file(path, &text, &len);
	if (rc == 1)
		return;
	if (rc) {
		snprintf(why, sizeof(why), "cannot read it: %s",
			 strerror(errno));
		goto bad;
	}
	root = json_loadb(text, len, 0, &jerr);
	free(text);
	if (!root) {
		snprintf(why, sizeof(why), "not JSON: %s (line %d)",
			 jerr.text, jerr.line);
		goto bad;
	}
	arr = json_object_get(root, "occurrences");
	if (!json_is_object(root) ||
	    json_integer_value(json_object_get(root, "version")) != 1 ||
	    !json_is_array(arr)) {
		snprintf(why, sizeof(why), "not a version 1 outbox");
		goto bad;
	}
	json_array_foreach(arr, i, e) {
		const char *a = json_string_value(json_object_get(e, "app"));
		const char *s = json_string_value(json_object_get(e,
								  "schedule"));
		const char *h = json_string_value(json_object_get(e,
								  "handler"));
		json_t *at = json_object_get(e, "scheduled_at");
		char ts[32];

		if (!a || !s || !h || !*h || !json_is_integer(at) ||
		    !relay_app_name_valid(a) || !relay_app_name_valid(s) ||
		    relay_schedule_time_format(json_integer_value(at), ts,
					       sizeof(ts))) {
			snprintf(why, sizeof(why), "entry %zu is invalid", i);
			goto bad;
		}
	}
	json_array_foreach(arr, i, e) {
		if (occ_add(p, json_string_value(json_object_get(e, "app")),
			    json_string_value(json_object_get(e, "schedule")),
			    json_string_value(json_object_get(e, "handler")),
			    json_integer_value(json_object_get(
				    e, "scheduled_at")),
			    json_is_true(json_object_get(e, "catchup")), 1))
			loaded++;
	}
	json_decref(root);
	p->outbox_nonempty = loaded > 0;
	if (loaded)
		relayd_log(RELAY_LOG_INFO, "RELAYD-SCHED05",
			   "schedule outbox: %zu occurrence%s to publish "
			   "from %s", loaded, loaded == 1 ? "" : "s", path);
	return;
bad:
	json_decref(root);
	relayd_log(RELAY_LOG_ERROR, "RELAYD-SCHED03",
		   "schedule outbox %s is corrupt (%s): ignored, starting "
		   "empty", path, why);
	p->outbox_nonempty = 1;  /* overwrite it at the next change */
	p->outbox_dirty = 1;
}

/* ---- publishing -------------------------------------------------------- */

static void publish_all(relayd_schedpub *p);

static void arm_retry(relayd_schedpub *p)
{
	if (p->stopped || ev_is_active(&p->retry))
		return;
	ev_timer_set(&p->retry, relayd_scaled(p->d, p->backoff_s), 0.);
	ev_timer_start(p->d->loop, &p->retry);
	p->backoff_s = p->backoff_s * 2 > BACKOFF_MAX_S ? BACKOFF_MAX_S
							: p->backoff_s * 2;
}

static void publish_cb(relay_redis_backend *b, int status,
		       const char *message_id, const char *detail,
		       void *payload)
{
	occ *o = payload;
	relayd_schedpub *p = o->p;
	char ts[32];

	(void)b;
	o->in_flight = 0;
	if (!p) {  /* the publisher is gone (shutdown) */
		occ_free(o);
		return;
	}
	relay_schedule_time_format(o->at, ts, sizeof(ts));
	if (status == 0) {
		int dup = message_id == NULL;

		if (dup) {
			p->k.duplicate++;
		} else {
			p->k.published++;
			if (o->catchup)
				p->k.catchup++;
		}
		relayd_log(dup ? RELAY_LOG_DEBUG : RELAY_LOG_INFO,
			   "RELAYD-SCHED01", "schedule occurrence %s app=%s "
			   "schedule=%s scheduled_at=%s%s%s%s",
			   dup ? "already published" : "published", o->app,
			   o->schedule, ts, o->catchup ? " (catch-up)" : "",
			   dup ? "" : " message_id=",
			   dup ? "" : message_id);
		p->backoff_s = BACKOFF_MIN_S;
		occ_unlink(p, o);
		if (o->durable)
			p->outbox_dirty = 1;
		occ_free(o);
	} else {
		p->k.failures++;
		relayd_log(RELAY_LOG_WARN, "RELAYD-SCHED02",
			   "cannot publish schedule occurrence app=%s "
			   "schedule=%s scheduled_at=%s: %s (kept in the "
			   "outbox, retried)", o->app, o->schedule, ts, detail);
		if (!o->durable) {
			o->durable = 1;
			p->outbox_dirty = 1;
		}
		arm_retry(p);
	}
	if (p->outbox_dirty)
		outbox_write(p);
}

/*
 * The stream an occurrence goes to: with several streams (partitions),
 * relay_stream_partition() of its occurrence id
 * "schedule:<app>:<schedule>:<scheduled_at>", so every relayd with the
 * same REDIS_STREAM list picks the same partition for it and its marker
 * (which may live in that partition's key space) dedupes it there.
 */
static const char *occ_stream(const relayd_schedpub *p, const occ *o,
			      const char *ts)
{
	const relayd_config *c = &p->d->cfg;
	char id[1024];
	int n;

	if (c->nstreams <= 1)
		return c->streams[0];
	n = snprintf(id, sizeof(id), "schedule:%s:%s:%s", o->app,
		     o->schedule, ts);
	if (n < 0 || (size_t)n >= sizeof(id))
		return c->streams[0];  /* names are far shorter */
	return c->streams[relay_stream_partition(id, (size_t)n,
						 c->nstreams)];
}

/* SCHEDULE_PUBLISH through librelay (relay/occurrence.h): the envelope,
 * the marker and its TTL are the library's. */
static void publish_one(relayd_schedpub *p, occ *o)
{
	const char *stream;
	char ts[32];
	int rc;

	if (relay_schedule_time_format(o->at, ts, sizeof(ts)))
		return;
	o->in_flight = 1;
	stream = occ_stream(p, o, ts);
	rc = relay_schedule_publish(relayd_stream_redis(p->d, stream), stream,
				    o->app, o->schedule, o->handler, o->at,
				    publish_cb, o);
	if (rc) {
		o->in_flight = 0;
		p->k.failures++;
		relayd_log(RELAY_LOG_WARN, "RELAYD-SCHED02",
			   "cannot publish schedule occurrence app=%s "
			   "schedule=%s scheduled_at=%s: %s (kept in the "
			   "outbox, retried)", o->app, o->schedule, ts,
			   relay_strerror(rc));
		if (!o->durable) {
			o->durable = 1;
			p->outbox_dirty = 1;
		}
		arm_retry(p);
	}
}

static void publish_all(relayd_schedpub *p)
{
	occ *o, *next;

	for (o = p->head; o; o = next) {
		next = o->next;  /* a synchronous failure keeps o listed */
		if (!o->in_flight)
			publish_one(p, o);
	}
	if (p->outbox_dirty)
		outbox_write(p);
}

/* ---- evaluation ------------------------------------------------------------ */

/*
 * Queue the occurrences of every schedule in (@from, @to]; with
 * @catchup, only the latest occurrence <= @to within the catch-up
 * window.
 */
static void evaluate(relayd_schedpub *p, int64_t from, int64_t to,
		     int catchup)
{
	const relay_appset *set = p->d->apps;
	size_t i, j, ne = set ? relay_appset_entry_count(set) : 0;

	for (i = 0; i < ne; i++) {
		const relay_app *app = relay_appset_entry_app(set, i);

		for (j = 0; app && j < relay_app_schedule_count(app); j++) {
			const relay_app_schedule *s =
				relay_app_schedule_at(app, j);
			/* Compiled (and validated) with the template. */
			const relay_cron *c =
				relay_app_schedule_cron_compiled(s);
			int64_t t = from, n, first;
			int k = 0, is_new;

			if (!c)
				continue;
			/* A schedule new to this relayd counts from now at
			 * start-up, from the window's start on a tick. */
			first = relayd_schedseen_first(p->seen,
					relay_app_name(app),
					relay_app_schedule_name(s),
					catchup ? to : from, &is_new);
			if (catchup) {
				if (relay_cron_prev(c, to, &n) != 0 ||
				    n <= to - CATCHUP_WINDOW_S)
					continue;
				if (n < first) {
					char ts[32] = "?";

					relay_schedule_time_format(n, ts,
								   sizeof(ts));
					relayd_log(RELAY_LOG_INFO,
						   "RELAYD-SCHED08",
						   "schedule %s/%s is new: "
						   "no catch-up of its "
						   "occurrence at %s, before "
						   "it was first seen",
						   relay_app_name(app),
						   relay_app_schedule_name(s),
						   ts);
					continue;
				}
				occ_add(p, relay_app_name(app),
					relay_app_schedule_name(s),
					relay_app_schedule_handler(s), n, 1,
					0);
			} else {
				while (k++ < MAX_PER_TICK &&
				       relay_cron_next(c, t, &n) == 0 &&
				       n <= to) {
					occ_add(p, relay_app_name(app),
						relay_app_schedule_name(s),
						relay_app_schedule_handler(s),
						n, 0, 0);
					t = n;
				}
			}
		}
	}
	relayd_schedseen_flush(p->seen);
}

static void arm_tick(relayd_schedpub *p)
{
	int64_t now = relayd_schedule_now(p->d);
	int64_t next = (now / 60 + 1) * 60;

	ev_timer_set(&p->tick, real_delay(p->d, next), 0.);
	ev_timer_start(p->d->loop, &p->tick);
}

static void on_tick(struct ev_loop *loop, ev_timer *w, int revents)
{
	relayd_schedpub *p = w->data;
	int64_t now = relayd_schedule_now(p->d);

	(void)loop;
	(void)revents;
	if (p->stopped)
		return;
	if (now - p->last_s > CATCHUP_WINDOW_S) {
		/* The clock jumped forward (or the loop stalled) by more
		 * than a day: like a start-up, only the latest occurrence
		 * of each schedule, not every minute in between. */
		relayd_log(RELAY_LOG_WARN, "RELAYD-SCHED07",
			   "schedule clock jumped %lld s forward: publishing "
			   "only the latest occurrence of each schedule",
			   (long long)(now - p->last_s));
		evaluate(p, now, now, 1);
		p->last_s = now;
	} else if (now > p->last_s) {
		evaluate(p, p->last_s, now, 0);
		p->last_s = now;
	}
	/* A clock that went back publishes nothing until it has caught
	 * up (the same occurrences would only be duplicates). */
	publish_all(p);
	arm_tick(p);
}

static void on_retry(struct ev_loop *loop, ev_timer *w, int revents)
{
	relayd_schedpub *p = w->data;

	(void)loop;
	(void)revents;
	if (!p->stopped)
		publish_all(p);
}

/* ---- lifetime ------------------------------------------------------------ */

relayd_schedpub *relayd_schedpub_start(relayd *d)
{
	relayd_schedpub *p = calloc(1, sizeof(*p));
	int64_t now;

	if (!p)
		return NULL;
	p->d = d;
	p->backoff_s = BACKOFF_MIN_S;
	ev_init(&p->tick, on_tick);
	ev_init(&p->retry, on_retry);
	p->tick.data = p->retry.data = p;
	outbox_load(p);
	p->seen = relayd_schedseen_load(d->cfg.state_dir);
	now = relayd_schedule_now(d);
	evaluate(p, now, now, 1);  /* catch-up */
	p->last_s = now;
	publish_all(p);
	arm_tick(p);
	return p;
}

void relayd_schedpub_stop(relayd_schedpub *p)
{
	if (!p || p->stopped)
		return;
	p->stopped = 1;
	ev_timer_stop(p->d->loop, &p->tick);
	ev_timer_stop(p->d->loop, &p->retry);
}

/*
 * After the Redis backend is freed (its in-flight replies have reported
 * RELAY_ECLOSED, keeping their occurrences): every occurrence still
 * pending goes to the outbox, published at the next start.
 */
void relayd_schedpub_free(relayd_schedpub *p)
{
	occ *o, *next;
	int any = 0;

	if (!p)
		return;
	relayd_schedpub_stop(p);
	for (o = p->head; o; o = o->next)
		if (!o->durable) {
			o->durable = 1;
			any = 1;
		}
	if (any || p->outbox_dirty)
		outbox_write(p);
	relayd_schedseen_free(p->seen);
	for (o = p->head; o; o = next) {
		next = o->next;
		if (o->in_flight)
			o->p = NULL;  /* its callback frees it */
		else
			occ_free(o);
	}
	free(p);
}

void relayd_schedpub_counts_get(const relayd_schedpub *p,
				relayd_schedpub_counts *out)
{
	memset(out, 0, sizeof(*out));
	if (!p)
		return;
	*out = p->k;
	out->pending = p->n;
}

void relayd_schedpub_counts_reset(relayd_schedpub *p)
{
	if (p)
		memset(&p->k, 0, sizeof(p->k));
}
