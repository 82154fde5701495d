/*
 * consumer_sched.c - the schedule dispatch path of the engine, and the
 * occurrence envelope helpers relayd's publisher shares (sched.h).
 *
 * A stream entry whose event carries "source":"relay.schedule" is a
 * schedule occurrence (doc/redis-layout.md R-7), not an external event: it bypasses
 * the classification counters and pattern matching.
 *
 *	envelope ─┬─ malformed → DLQ placeholder (-/-, 0 attempts) → ACK
 *	          ├─ app or schedule gone → obsolete: ACK, no run, no DLQ
 *	          ├─ app entry invalid now → kept pending (retried later)
 *	          └─ one invocation "<app>/<handler>" through the same
 *	             try_start → run → complete | failure | exhausted → DLQ
 *	             path as events
 *
 * Pinning: the first delivery that claims the classification admits
 * the occurrence and stores the schedule's current handler, timeout and
 * retries in the reserved hash field __schedule (claim_classification
 * with a pin, one script, never overwritten). Every later delivery, on
 * any replica, runs what is pinned, so a template edit made while the
 * occurrence is in flight (backing off between attempts, say) changes
 * nothing for it; only removing the schedule (or its app) does: the
 * occurrence is then obsolete.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "consumer.h"
#include "consumer_health.h"
#include "consumer_inv.h"
#include "consumer_msg.h"
#include "consumer_sched.h"
#include "invops/invops.h"
#include "redis/backend.h"
#include "relay/schedule.h"
#include "sched.h"

#define LOG(c, lvl, id, ...) relay__log(&(c)->logger, lvl, id, __VA_ARGS__)

/* ---- envelopes ----------------------------------------------------------- */

int relay__sched_time_fmt(int64_t t, char *buf, size_t size)
{
	struct tm tm;
	time_t tt = (time_t)t;
	char tmp[80];  /* room for any int, so no truncation to reason about */

	if (size < RELAY__SCHED_TIME_LEN + 1 || t < 0 ||
	    t > 253402300799LL || !gmtime_r(&tt, &tm))
		return RELAY_EINVAL;
	if (snprintf(tmp, sizeof(tmp), "%04d-%02d-%02dT%02d:%02d:%02dZ",
		     tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
		     tm.tm_min, tm.tm_sec) != RELAY__SCHED_TIME_LEN)
		return RELAY_EINVAL;
	memcpy(buf, tmp, RELAY__SCHED_TIME_LEN + 1);
	return 0;
}

int relay__sched_time_parse(const char *s, int64_t *out)
{
	static const char shape[] = "dddd-dd-ddTdd:dd:ddZ";
	char back[RELAY__SCHED_TIME_LEN + 1];
	struct tm tm;
	time_t t;
	size_t i;

	if (!s || strlen(s) != RELAY__SCHED_TIME_LEN)
		return RELAY_EPARSE;
	for (i = 0; i < RELAY__SCHED_TIME_LEN; i++)
		if (shape[i] == 'd' ? (s[i] < '0' || s[i] > '9')
				    : s[i] != shape[i])
			return RELAY_EPARSE;
	memset(&tm, 0, sizeof(tm));
	tm.tm_year = (s[0] - '0') * 1000 + (s[1] - '0') * 100 +
		     (s[2] - '0') * 10 + (s[3] - '0') - 1900;
	tm.tm_mon = (s[5] - '0') * 10 + (s[6] - '0') - 1;
	tm.tm_mday = (s[8] - '0') * 10 + (s[9] - '0');
	tm.tm_hour = (s[11] - '0') * 10 + (s[12] - '0');
	tm.tm_min = (s[14] - '0') * 10 + (s[15] - '0');
	tm.tm_sec = (s[17] - '0') * 10 + (s[18] - '0');
	if (tm.tm_year < 70 || tm.tm_mon < 0 || tm.tm_mon > 11 ||
	    tm.tm_mday < 1 || tm.tm_hour > 23 || tm.tm_min > 59 ||
	    tm.tm_sec > 59)
		return RELAY_EPARSE;
	t = timegm(&tm);
	/* A normalised date (Feb 30 → Mar 2) does not round-trip. */
	if (t == (time_t)-1 || relay__sched_time_fmt((int64_t)t, back,
						     sizeof(back)) ||
	    strcmp(back, s) != 0)
		return RELAY_EPARSE;
	*out = (int64_t)t;
	return 0;
}

char *relay__sched_occurrence_id(const char *app, const char *schedule,
				 const char *at)
{
	return relay__sprintf("schedule:%s:%s:%s", app, schedule, at);
}

char *relay__sched_marker_key(const char *stream, const char *occ)
{
	return relay__sprintf("relay:%s:schedule:%s", stream, occ);
}

char *relay__sched_envelope(const char *app, const char *schedule,
			    const char *handler, int64_t at)
{
	char ts[RELAY__SCHED_TIME_LEN + 1], *id, *text = NULL;
	json_t *o;

	if (relay__sched_time_fmt(at, ts, sizeof(ts)))
		return NULL;
	id = relay__sched_occurrence_id(app, schedule, ts);
	o = json_object();
	if (id && o &&
	    !json_object_set_new(o, "source",
				 json_string(RELAY__SCHED_SOURCE)) &&
	    !json_object_set_new(o, "app", json_string(app)) &&
	    !json_object_set_new(o, "schedule", json_string(schedule)) &&
	    !json_object_set_new(o, "handler", json_string(handler)) &&
	    !json_object_set_new(o, "scheduled_at", json_string(ts)) &&
	    !json_object_set_new(o, "occurrence_id", json_string(id))) {
		char *j = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);

		if (j) {
			text = relay__strdup(j);
			free(j);
		}
	}
	json_decref(o);
	relay__free(id);
	return text;
}

static const char *str_member(const json_t *root, const char *name,
			      char *why, size_t size)
{
	const json_t *v = json_object_get(root, name);

	if (!v) {
		snprintf(why, size, "missing \"%s\"", name);
		return NULL;
	}
	if (!json_is_string(v)) {
		snprintf(why, size, "\"%s\" is not a string", name);
		return NULL;
	}
	if (!*json_string_value(v) ||
	    strlen(json_string_value(v)) != json_string_length(v)) {
		snprintf(why, size, "\"%s\" is empty or holds a NUL", name);
		return NULL;
	}
	return json_string_value(v);
}

int relay__sched_envelope_check(const void *rootp, const char **app,
				const char **schedule, const char **handler,
				const char **at, char *why, size_t size)
{
	const json_t *root = rootp;
	const char *id;
	char *want;
	int64_t t;
	int ok;

	if (!(*app = str_member(root, "app", why, size)) ||
	    !(*schedule = str_member(root, "schedule", why, size)) ||
	    !(*handler = str_member(root, "handler", why, size)) ||
	    !(*at = str_member(root, "scheduled_at", why, size)) ||
	    !(id = str_member(root, "occurrence_id", why, size)))
		return RELAY_EPARSE;
	if (!relay_app_name_valid(*app)) {
		snprintf(why, size, "\"app\" is not a valid app name");
		return RELAY_EPARSE;
	}
	if (!relay_app_name_valid(*schedule)) {
		snprintf(why, size, "\"schedule\" is not a valid schedule "
			 "name");
		return RELAY_EPARSE;
	}
	if (relay__sched_time_parse(*at, &t)) {
		snprintf(why, size, "\"scheduled_at\" is not an RFC 3339 UTC "
			 "time in seconds (YYYY-MM-DDTHH:MM:SSZ)");
		return RELAY_EPARSE;
	}
	want = relay__sched_occurrence_id(*app, *schedule, *at);
	if (!want) {
		snprintf(why, size, "out of memory");
		return RELAY_ENOMEM;
	}
	ok = strcmp(want, id) == 0;
	relay__free(want);
	if (!ok) {
		snprintf(why, size, "\"occurrence_id\" is not "
			 "schedule:<app>:<schedule>:<scheduled_at>");
		return RELAY_EPARSE;
	}
	return 0;
}

/* ---- classification ----------------------------------------------------- */

/*
 * A schedule occurrence carries "source":"relay.schedule" at the top
 * level of its envelope. The substring test keeps the decode off the
 * hot path of ordinary events. The engine and relayctl match both
 * classify with this function.
 */
static int contains(const char *s, size_t len, const char *needle, size_t n)
{
	const char *p = s, *end = s + len;

	while (n && (size_t)(end - p) >= n) {
		p = memchr(p, needle[0], (size_t)(end - p) - n + 1);
		if (!p)
			return 0;
		if (memcmp(p, needle, n) == 0)
			return 1;
		p++;
	}
	return 0;
}

int relay__sched_is_envelope(const char *ev, size_t len)
{
	static const char needle[] = "relay.schedule";
	json_t *root, *src;
	int yes = 0;

	if (!contains(ev, len, needle, sizeof(needle) - 1))
		return 0;
	root = json_loadb(ev, len, 0, NULL);
	if (!root)
		return 0;
	src = json_object_get(root, "source");
	if (json_is_string(src) &&
	    strcmp(json_string_value(src), "relay.schedule") == 0)
		yes = 1;
	json_decref(root);
	return yes;
}


/* The entry named @name: 1 valid (*app set), 0 invalid, -1 absent. */
static int find_app(const relay_appset *set, const char *name,
		    const relay_app **app)
{
	size_t i, n = relay_appset_entry_count(set);

	for (i = 0; i < n; i++) {
		if (strcmp(relay_appset_entry_name(set, i), name) != 0)
			continue;
		*app = relay_appset_entry_app(set, i);
		return *app ? 1 : 0;
	}
	return -1;
}

int relay__csched_classify(relay__msg *m)
{
	relay_consumer *c = m->c;
	const char *an, *sn, *hn, *at;
	const relay_app_schedule *s;
	const relay_app *app = NULL;
	char why[160];
	json_t *root;
	int64_t t = 0, next = 0;
	int rc, found;

	root = json_loadb(m->event, m->event_len, 0, NULL);
	if (!root)  /* relay__sched_is_envelope() decoded it: only
		     * memory fails */
		return RELAY_ENOMEM;
	rc = relay__sched_envelope_check(root, &an, &sn, &hn, &at, why,
					 sizeof(why));
	if (rc) {
		json_decref(root);
		if (rc == RELAY_ENOMEM)
			return rc;
		return relay__msg_placeholder(m, RELAY_DLQ_DECODE, why,
					      m->event, m->event_len);
	}
	m->sched_desc = relay__sprintf("%s/%s@%s", an, sn, at);
	m->sched_occ = relay__sched_occurrence_id(an, sn, at);
	m->run_event = relay__sprintf("{\"source\":\"%s\",\"scheduled_at\":"
				      "\"%s\"}", RELAY__SCHED_SOURCE, at);
	if (!m->sched_desc || !m->sched_occ || !m->run_event) {
		json_decref(root);
		return RELAY_ENOMEM;
	}
	m->run_event_len = strlen(m->run_event);
	found = find_app(c->apps, an, &app);
	s = found == 1 ? relay_app_schedule_find(app, sn) : NULL;
	/*
	 * Only a firing time of the schedule is an occurrence of it (a
	 * stream writer could otherwise run the handler at will). Checked
	 * against the schedule as configured now: an occurrence published
	 * before a cron edit that no longer fires then is dead-lettered,
	 * where dlq replay can still run it.
	 */
	if (s && (relay__sched_time_parse(at, &t) ||
		  relay_cron_next(relay_app_schedule_cron_compiled(s), t - 1,
				  &next) || next != t)) {
		snprintf(why, sizeof(why), "\"scheduled_at\" %s is not a "
			 "firing time of schedule \"%s\"", at, sn);
		json_decref(root);
		return relay__msg_placeholder(m, RELAY_DLQ_DECODE, why,
					      m->event, m->event_len);
	}
	json_decref(root);
	if (found == 0) {
		relay__msg_route_to(m, RELAY__ROUTE_OCC_HOLD);
		return 0;
	}
	if (!s) {
		relay__msg_route_to(m, RELAY__ROUTE_OCC_OBSOLETE);
		return 0;
	}
	m->pin = relay__sprintf("%lld:%d:%s",
				(long long)relay_app_schedule_timeout_ms(s),
				relay_app_schedule_retries(s),
				relay_app_schedule_handler(s));
	if (!m->pin || relay__msg_invs_new(m, 1))
		return RELAY_ENOMEM;
	relay__cinv_init(&m->invs[0], m, app, &relay__msg_up);
	return 0;
}

/* Apply "<timeout_ms>:<retries>:<handler>" (m->pin) to the invocation. */
static int apply_pin(relay__msg *m)
{
	relay__cinv *inv = &m->invs[0];
	long long to;
	int retries, n = 0;

	if (sscanf(m->pin, "%lld:%d:%n", &to, &retries, &n) != 2 || n <= 0 ||
	    !m->pin[n] || to < 1 || to > RELAY_APP_MAX_TIMEOUT_MS ||
	    retries < 0 || retries > RELAY_APP_MAX_RETRIES)
		return RELAY_EPARSE;
	return relay__cinv_set_handler(inv, m->pin + n, to, retries);
}

static void claim_reply(int status, const relay_inv_outcome *o,
			const char *pin, size_t pin_len, void *payload)
{
	relay__msg *m = payload;

	/* The stored pin: the one of the first admission. */
	if (status == 0 && pin_len > 0) {
		char *p = relay__strndup(pin, pin_len);

		if (!p)
			status = RELAY_ENOMEM;
		relay__free(m->pin);
		m->pin = p;
	}
	relay__msg_classified(m, status, status ? NULL : o);
}

static int claim_script(relay__msg *m)
{
	return relay__inv_claim_classification_pin(m->c->redis, m->key,
						   m->pin, claim_reply, m);
}

/*
 * ---- admission: only what relayd published, once per occurrence ----
 *
 * Before a dispatchable occurrence is claimed: (1) its publication marker
 * relay:<stream>:schedule:<occurrence_id> must exist (relayd's publisher
 * sets it in the same script as its XADD, so an envelope XADDed by anyone
 * else has none); on a single node the pre-cluster name
 * relay:schedule:<occurrence_id> an older version wrote counts too (the
 * upgrade window, doc/redis-layout.md R-7); (2) it takes
 * relay:<stream>:schedule:<occurrence_id>:run with SET NX
 * for its message id (same TTL as the marker), so the same occurrence_id
 * re-added under another message id never runs again; a redelivery of
 * the message that took it finds its own id there and goes on. Either
 * refusal dead-letters the entry as a malformed occurrence. Both keys
 * only ever appear and expire, so the two steps need no atomicity.
 */
enum { ADMIT_MARKER, ADMIT_LEGACY, ADMIT_TAKE, ADMIT_OWNER };

typedef struct admit {
	relay__msg *m;
	int step;
	char *marker;
	char *legacy;
	char *run;
} admit;

static void admit_free(admit *a)
{
	relay__free(a->marker);
	relay__free(a->legacy);
	relay__free(a->run);
	relay__free(a);
}

static void refused_cb(int status, const relay_inv_outcome *o,
		       void *payload)
{
	relay__msg_classified(payload, status, o);
}

/* Dead-letter @m (placeholder) instead of dispatching it. */
static void admit_refuse(admit *a, const char *why)
{
	relay__msg *m = a->m;
	int rc;

	admit_free(a);
	rc = relay__msg_placeholder(m, RELAY_DLQ_DECODE, why, m->event,
				    m->event_len);
	if (rc == 0)
		rc = relay_inv_claim_classification(m->c->redis, m->key,
						    refused_cb, m);
	if (rc)
		relay__msg_classified(m, rc, NULL);
}

static int admit_send(admit *a);

static void admit_reply(relay_redis_backend *b, int status,
			relay_redis_reply *r, void *payload)
{
	admit *a = payload;
	relay__msg *m = a->m;
	char why[160];
	int rc = status;

	(void)b;
	if (rc == 0)
		rc = relay_redis_reply_error(r);
	if (rc) {
		relay_redis_reply_free(r);
		admit_free(a);
		relay__msg_classified(m, rc, NULL);  /* stays pending */
		return;
	}
	switch (a->step) {
	case ADMIT_MARKER:
		if (r->type == RELAY_REDIS_REPLY_NIL &&
		    relay__redis_cluster_mode(m->c->redis) == 0) {
			a->step = ADMIT_LEGACY;
			break;
		}
		/* fall through */
	case ADMIT_LEGACY:
		if (r->type == RELAY_REDIS_REPLY_NIL) {
			relay_redis_reply_free(r);
			admit_refuse(a, "no publication marker: not published "
				     "by relayd (or published more than 7 "
				     "days ago)");
			return;
		}
		a->step = ADMIT_TAKE;
		break;
	case ADMIT_TAKE:
		if (r->type != RELAY_REDIS_REPLY_NIL) {  /* OK: taken */
			relay_redis_reply_free(r);
			admit_free(a);
			rc = claim_script(m);
			if (rc)
				relay__msg_classified(m, rc, NULL);
			return;
		}
		a->step = ADMIT_OWNER;
		break;
	default:  /* ADMIT_OWNER */
		if (r->type == RELAY_REDIS_REPLY_STRING && r->str &&
		    r->len == strlen(m->id) &&
		    memcmp(r->str, m->id, r->len) == 0) {
			/* A redelivery of the message that took it. */
			relay_redis_reply_free(r);
			admit_free(a);
			rc = claim_script(m);
			if (rc)
				relay__msg_classified(m, rc, NULL);
			return;
		}
		snprintf(why, sizeof(why), "occurrence_id already dispatched "
			 "as message %.*s",
			 r->type == RELAY_REDIS_REPLY_STRING && r->len < 64 ?
			 (int)r->len : 1,
			 r->type == RELAY_REDIS_REPLY_STRING && r->len < 64 ?
			 r->str : "?");
		relay_redis_reply_free(r);
		admit_refuse(a, why);
		return;
	}
	relay_redis_reply_free(r);
	rc = admit_send(a);
	if (rc) {
		admit_free(a);
		relay__msg_classified(m, rc, NULL);
	}
}

static int admit_send(admit *a)
{
	char ttl[24];
	const char *argv[6];
	int argc;

	snprintf(ttl, sizeof(ttl), "%lld", RELAY__SCHED_MARKER_TTL_MS);
	if (a->step == ADMIT_TAKE) {
		argv[0] = "SET";
		argv[1] = a->run;
		argv[2] = a->m->id;
		argv[3] = "NX";
		argv[4] = "PX";
		argv[5] = ttl;
		argc = 6;
	} else {
		argv[0] = "GET";
		argv[1] = a->step == ADMIT_MARKER ? a->marker :
			  a->step == ADMIT_LEGACY ? a->legacy : a->run;
		argc = 2;
	}
	return relay_redis_command(a->m->c->redis, argc, argv, NULL,
				   admit_reply, a);
}

int relay__csched_claim(relay__msg *m)
{
	admit *a;
	int rc;

	if (!m->ninv || !m->sched_occ)  /* hold / obsolete: nothing runs */
		return claim_script(m);
	a = relay__calloc(1, sizeof(*a));
	if (!a)
		return RELAY_ENOMEM;
	a->m = m;
	a->step = ADMIT_MARKER;
	a->marker = relay__sched_marker_key(m->c->stream, m->sched_occ);
	a->legacy = relay__sprintf("%s%s", RELAY__SCHED_LEGACY_PREFIX,
				   m->sched_occ);
	a->run = relay__sprintf("relay:%s:schedule:%s:run", m->c->stream,
				m->sched_occ);
	if (!a->marker || !a->legacy || !a->run) {
		admit_free(a);
		return RELAY_ENOMEM;
	}
	rc = admit_send(a);
	if (rc)
		admit_free(a);
	return rc;
}

void relay__csched_classified(relay__msg *m, int first)
{
	relay_consumer *c = m->c;

	if (first) {
		relay__count(c, events_schedule);
		if (m->route == RELAY__ROUTE_OCC_OBSOLETE)
			relay__count(c, schedule_obsolete);
	}
	if (m->route == RELAY__ROUTE_OCC_HOLD) {
		LOG(c, RELAY_LOG_INFO, "RELAY-ENG14",
		    "schedule occurrence kept pending: its app is invalid "
		    "now occurrence=%s message_id=%s", m->sched_desc, m->id);
		relay__msg_release(m, "app of the schedule is invalid");
		return;
	}
	if (m->route == RELAY__ROUTE_OCC_OBSOLETE) {
		LOG(c, RELAY_LOG_INFO, "RELAY-ENG14",
		    "schedule occurrence obsolete (schedule no longer "
		    "configured), acknowledged without a run occurrence=%s "
		    "message_id=%s", m->sched_desc, m->id);
		relay__msg_ack(m);
		return;
	}
	if (apply_pin(m)) {
		/* A pin this engine cannot read: never guess. */
		LOG(c, RELAY_LOG_WARN, "RELAY-ENG14",
		    "schedule occurrence has an unreadable admission pin; "
		    "kept pending occurrence=%s message_id=%s",
		    m->sched_desc, m->id);
		relay__msg_release(m, "unreadable schedule pin");
		return;
	}
	LOG(c, RELAY_LOG_DEBUG, "RELAY-ENG14",
	    "schedule occurrence dispatched app=%s handler=%s occurrence=%s "
	    "message_id=%s", relay_app_name(m->invs[0].app),
	    m->invs[0].handler, m->sched_desc, m->id);
	relay__msg_run(m);
}

void relay__csched_free(relay__msg *m)
{
	relay__free(m->sched_desc);
	relay__free(m->sched_occ);
	relay__free(m->pin);
	relay__free(m->run_event);
}
