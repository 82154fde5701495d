/*
 * tests/lib/engine_fixture.c - the engine tests' fixture
 * (engine_fixture.h), compiled once. The one file of the test library
 * that includes librelay's private headers.
 */
#include "engine_fixture.h"

#include "consumer/consumer.h"
#include "consumer/consumer_recover.h"  /* relay__consumer_reclaim_now */
#include "invops/invops.h"  /* relay__inv_complete_ack */
#include "redis/backend.h"

h_script *h_script_get(h_exec *x, const char *app, const char *hd)
{
	char name[96];
	int i;

	snprintf(name, sizeof(name), "%s/%s", app, hd);
	for (i = 0; i < x->ns; i++)
		if (strcmp(x->s[i].name, name) == 0)
			return &x->s[i];
	if (x->ns == 32)
		abort();
	memset(&x->s[x->ns], 0, sizeof(x->s[0]));
	snprintf(x->s[x->ns].name, sizeof(x->s[0].name), "%s", name);
	return &x->s[x->ns++];
}

void h_job_fire(struct ev_loop *loop, ev_timer *w, int revents)
{
	h_job *j = w->data;
	h_exec *x = j->x;
	h_job **pp;
	relay_run_outcome o;

	(void)revents;
	ev_timer_stop(loop, w);
	for (pp = &x->jobs; *pp; pp = &(*pp)->next)
		if (*pp == j) {
			*pp = j->next;
			break;
		}
	memset(&o, 0, sizeof(o));
	o.version = RELAY_RUN_OUTCOME_VERSION;
	o.duration_us = 1000;
	if (j->cancelled) {
		o.status = RELAY_RUN_CANCELLED;
		o.exit_code = -1;
		snprintf(o.reason, sizeof(o.reason), "cancelled");
	} else if (j->s->fail == 3) {
		o.status = RELAY_RUN_REFUSED;
		o.exit_code = -1;
		snprintf(o.reason, sizeof(o.reason), "start refused: test");
	} else if (j->s->fail == 2) {
		o.status = RELAY_RUN_TIMEOUT;
		o.exit_code = -1;
		snprintf(o.reason, sizeof(o.reason), "timed out");
	} else if (j->s->fail) {
		o.status = RELAY_RUN_FAILED;
		o.exit_code = 3;
		snprintf(o.reason, sizeof(o.reason), "exit status 3");
	} else {
		o.status = RELAY_RUN_OK;
	}
	x->active--;
	j->done(&o, j->payload);
	free(j);
}

int h_run(relay_consumer_executor *xe,
	  const relay_exec_spec *spec,
	  relay_output_fn output, relay_run_done_fn done,
	  void *payload, void **handle)
{
	h_exec *x = (h_exec *)xe;
	h_job *j = calloc(1, sizeof(*j));
	h_script *s = h_script_get(x, spec->app, spec->handler);

	(void)output;
	if (!j)
		return RELAY_ENOMEM;
	s->runs++;
	x->total_runs++;
	snprintf(s->last_id, sizeof(s->last_id), "%s",
		 spec->message_id ? spec->message_id : "");
	s->last_len = spec->event_len < sizeof(s->last_event) ?
		spec->event_len : sizeof(s->last_event) - 1;
	memcpy(s->last_event, spec->event, s->last_len);
	s->last_event[s->last_len] = '\0';
	snprintf(s->last_tp, sizeof(s->last_tp), "%s",
		 spec->traceparent ? spec->traceparent : "");
	snprintf(s->last_ts, sizeof(s->last_ts), "%s",
		 spec->tracestate ? spec->tracestate : "");
	snprintf(s->last_bg, sizeof(s->last_bg), "%s",
		 spec->baggage ? spec->baggage : "");
	j->x = x;
	j->s = s;
	j->done = done;
	j->payload = payload;
	j->held = s->hold;
	j->next = x->jobs;
	x->jobs = j;
	x->active++;
	ev_timer_init(&j->t, h_job_fire, 0., 0.);
	j->t.data = j;
	if (!j->held)
		ev_timer_start(x->loop, &j->t);
	*handle = j;
	return 0;
}

void h_cancel(relay_consumer_executor *xe, void *handle)
{
	h_job *j = handle;

	(void)xe;
	j->cancelled = 1;
	if (!ev_is_active(&j->t))
		ev_timer_start(j->x->loop, &j->t);
}

void h_release(h_exec *x, const char *name)
{
	h_job *j;

	for (j = x->jobs; j; j = j->next)
		if ((!name || strcmp(j->s->name, name) == 0) &&
		    !ev_is_active(&j->t))
			ev_timer_start(x->loop, &j->t);
}

void h_fail_fire(struct ev_loop *loop, ev_timer *w, int revents)
{
	h_fail_call *f = w->data;

	(void)revents;
	ev_timer_stop(loop, w);
	if (f->cb)
		f->cb(f->b, f->status ? f->status : RELAY_EBACKEND, NULL,
		      f->payload);
	free(f);
}

void h_lost_reply(relay_redis_backend *inner, int status,
		  relay_redis_reply *reply, void *payload)
{
	h_fail_call *f = payload;

	(void)inner;
	(void)status;
	relay_redis_reply_free(reply);
	if (f->cb)
		f->cb(f->b, RELAY_ECLOSED, NULL, f->payload);
	free(f);
}

int h_fault_command(relay_redis_backend *b, int argc,
		    const char *const *argv,
		    const size_t *argvlen,
		    relay_redis_reply_cb cb, void *payload)
{
	h_fault *f = (h_fault *)b;

	if (argc > 0 && strcasecmp(argv[0], "XREADGROUP") == 0)
		f->xreadgroups++;
	return relay_redis_command(f->inner, argc, argv, argvlen, cb,
				   payload);
}

int h_fault_script(relay_redis_backend *b, relay_redis_script op,
		   int numkeys, int argc, const char *const *argv,
		   const size_t *argvlen, relay_redis_reply_cb cb,
		   void *payload)
{
	h_fault *f = (h_fault *)b;
	h_fail_call *fc;

	f->scripts[op]++;
	if (f->refuse_script[op] > 0) {
		f->refuse_script[op]--;
		return RELAY_ECLOSED;
	}
	if (f->fail_script[op] > 0 || f->close_script[op] > 0) {
		fc = calloc(1, sizeof(*fc));
		if (!fc)
			return RELAY_ENOMEM;
		if (f->fail_script[op] > 0) {
			f->fail_script[op]--;
		} else {
			f->close_script[op]--;
			fc->status = RELAY_ECLOSED;
		}
		fc->b = b;
		fc->cb = cb;
		fc->payload = payload;
		ev_timer_init(&fc->t, h_fail_fire, 0., 0.);
		fc->t.data = fc;
		ev_timer_start(f->loop, &fc->t);
		return 0;
	}
	if (f->lose_script[op] > 0) {
		int rc;

		f->lose_script[op]--;
		fc = calloc(1, sizeof(*fc));
		if (!fc)
			return RELAY_ENOMEM;
		fc->b = b;
		fc->cb = cb;
		fc->payload = payload;
		rc = relay__redis_script(f->inner, op, numkeys, argc, argv,
					 argvlen, h_lost_reply, fc);
		if (rc)
			free(fc);
		return rc;
	}
	return relay__redis_script(f->inner, op, numkeys, argc, argv, argvlen,
				   cb, payload);
}

const char *h_fault_errstr(const relay_redis_backend *b)
{
	return relay_redis_errstr(((const h_fault *)b)->inner);
}

void h_fault_free(relay_redis_backend *b)
{
	h_fault *f = (h_fault *)b;

	relay_redis_free(f->inner);
	free(f);
}

void h_log(void *payload, relay_log_level lvl, const char *msgid,
	   const char *msg)
{
	h_ctx *h = payload;

	if (strcmp(msgid, "RELAY-ENG02") == 0)
		h->logs_down++;
	if (strcmp(msgid, "RELAY-ENG03") == 0)
		h->logs_up++;
	if (strncmp(msgid, "RELAY-ENG", 9) == 0) {
		int n = atoi(msgid + 9);

		if (n >= 0 && n < 32) {
			h->eng[n]++;
			if (lvl >= RELAY_LOG_WARN)
				h->eng_warn[n]++;
		}
	}
	if (getenv("H_VERBOSE"))
		fprintf(stderr, "# %s %s %s\n", relay_log_level_name(lvl),
			msgid, msg);
}

void h_tick(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop;
	(void)w;
	(void)revents;
}

void h_write_app(h_ctx *h, const char *name, const char *yaml)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", h->dir, name);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/%s/template.yaml", h->dir, name);
	f = fopen(path, "w");
	RT_ASSERT(f != NULL);
	fputs(yaml, f);
	fclose(f);
}

int h_available(const relay_app *app, void *payload)
{
	h_ctx *h = payload;

	return strcmp(relay_app_name(app), "b") != 0 || h->avail_b;
}

void h_init(h_ctx *h, const char *uri)
{
	relay_redis_options ro = RELAY_REDIS_OPTIONS_INIT;
	relay_consumer_options o = RELAY_CONSUMER_OPTIONS_INIT;

	memset(h, 0, sizeof(*h));
	h->loop = ev_loop_new(EVFLAG_AUTO);
	RT_ASSERT(h->loop != NULL);
	if (!uri) {
		h->clock = relay_clock_fixed_init(&h->fclock,
						  1700000000000LL);
		ro.clock = h->clock;
		h->fault = calloc(1, sizeof(*h->fault));
		RT_ASSERT(h->fault != NULL);
		RT_ASSERT(relay_redis_open_libev(&h->fault->inner, h->loop,
						 "memory://", &ro, NULL) == 0);
		h->fault->loop = h->loop;
		h->fault->parent.version = RELAY_REDIS_BACKEND_VERSION;
		h->fault->parent.name = "fault";
		h->fault->parent.command = h_fault_command;
		h->fault->parent.script = h_fault_script;
		h->fault->parent.errstr = h_fault_errstr;
		h->fault->parent.free = h_fault_free;
		h->redis = &h->fault->parent;
	} else {
		h->clock = relay_clock_system();
		RT_ASSERT(relay_redis_open_libev(&h->redis, h->loop, uri, &ro,
						 NULL) == 0);
	}
	snprintf(h->dir, sizeof(h->dir), "/tmp/relay-eng.XXXXXX");
	RT_ASSERT(mkdtemp(h->dir) != NULL);
	h->exec.parent.version = RELAY_CONSUMER_EXECUTOR_VERSION;
	h->exec.parent.run = h_run;
	h->exec.parent.cancel = h_cancel;
	h->exec.loop = h->loop;
	o.stream = "events";
	o.group = "relay";
	o.consumer = "c1";
	o.clock = h->clock;
	o.logger.fn = h_log;
	o.logger.payload = h;
	o.logger.level = RELAY_LOG_DEBUG;
	o.executor = &h->exec.parent;
	o.available = h_available;
	o.available_payload = h;
	h->o = o;
	ev_timer_init(&h->tick, h_tick, 0.005, 0.005);
	ev_timer_start(h->loop, &h->tick);
}

void h_load_apps(h_ctx *h)
{
	relay_appset *old = h->apps;

	RT_ASSERT(relay_appset_load(&h->apps, h->dir, NULL, NULL) == 0);
	RT_EQ_INT((int)relay_appset_invalid_count(h->apps), 0);
	if (h->c)
		RT_EQ_INT(relay_consumer_set_apps(h->c, h->apps), 0);
	relay_appset_free(old);
}

void h_start(h_ctx *h)
{
	relay_error err;

	if (!h->apps)
		h_load_apps(h);
	RT_ASSERT(relay_consumer_new(&h->c, h->loop, h->redis, h->rt,
				     h->apps, &h->o, &err) == 0);
	RT_EQ_INT(relay_consumer_start(h->c), 0);
}

relay_consumer_metrics h_metrics(h_ctx *h)
{
	relay_consumer_metrics m;

	memset(&m, 0, sizeof(m));
	m.version = RELAY_CONSUMER_METRICS_VERSION;
	relay_consumer_metrics_get(h->c, &m);
	return m;
}

void h_settle(h_ctx *h, int ms)
{
	ev_tstamp end = ev_time() + ms / 1000.0;

	while (ev_time() < end)
		ev_run(h->loop, EVRUN_ONCE);
}

void h_reply_cb(relay_redis_backend *b, int status,
		relay_redis_reply *r, void *payload)
{
	h_reply *hr = payload;

	(void)b;
	hr->done = 1;
	hr->status = status;
	hr->r = r;
}

relay_redis_reply *h_cmdv(h_ctx *h, int argc, const char **argv,
			  const size_t *lens)
{
	h_reply hr = { 0, 0, NULL };
	relay_redis_backend *b = h->fault ? h->fault->inner : h->redis;

	RT_ASSERT(relay_redis_command(b, argc, argv, lens, h_reply_cb, &hr) ==
		  0);
	H_UNTIL(h, hr.done, 5000);
	RT_ASSERT(hr.done && hr.status == 0);
	return hr.r;
}

const char *h_xadd_field(h_ctx *h, const char *field,
			 const char *v,
			 size_t len)
{
	static char id[64];
	const char *argv[5] = { "XADD", "events", "*", field, v };
	size_t lens[5] = { 4, 6, 1, strlen(field), len };
	relay_redis_reply *r = h_cmdv(h, 5, argv, lens);

	RT_ASSERT(r->type == RELAY_REDIS_REPLY_STRING);
	snprintf(id, sizeof(id), "%s", r->str);
	relay_redis_reply_free(r);
	return id;
}

const char *h_xadd(h_ctx *h, const char *json)
{
	return h_xadd_field(h, "event", json, strlen(json));
}

long long h_int(h_ctx *h, relay_redis_reply *r)
{
	long long v;

	(void)h;
	RT_ASSERT(r != NULL);
	v = r->type == RELAY_REDIS_REPLY_INTEGER ? r->integer : -999;
	relay_redis_reply_free(r);
	return v;
}

long long h_pel(h_ctx *h)
{
	relay_redis_reply *r = H_CMD(h, "XPENDING", "events", "relay");
	long long n;

	RT_ASSERT(r->type == RELAY_REDIS_REPLY_ARRAY && r->elements >= 1);
	n = r->element[0]->integer;
	relay_redis_reply_free(r);
	return n;
}

const char *h_state(h_ctx *h, const char *id, const char *field)
{
	static char buf[160];
	char *key = relay_inv_key("events", "relay", id);
	relay_redis_reply *r = H_CMD(h, "HGET", key, field);

	buf[0] = '\0';
	if (r->type == RELAY_REDIS_REPLY_STRING)
		snprintf(buf, sizeof(buf), "%s", r->str);
	relay_redis_reply_free(r);
	relay_free(key);
	return buf;
}

long long h_pttl(h_ctx *h, const char *id)
{
	char *key = relay_inv_key("events", "relay", id);
	long long v = h_int(h, H_CMD(h, "PTTL", key));

	relay_free(key);
	return v;
}

relay_dlq_record *h_dlq(h_ctx *h, size_t *n)
{
	relay_redis_reply *r = H_CMD(h, "XRANGE", "relay:events:dlq", "-",
				     "+");
	relay_dlq_record *recs;
	relay_error err;
	size_t i;

	RT_ASSERT(r->type == RELAY_REDIS_REPLY_ARRAY);
	*n = r->elements;
	recs = calloc(r->elements + 1, sizeof(*recs));
	RT_ASSERT(recs != NULL);
	for (i = 0; i < r->elements; i++)
		RT_ASSERT(relay_dlq_parse(&recs[i], r->element[i], &err) == 0);
	relay_redis_reply_free(r);
	return recs;
}

void h_dlq_free(relay_dlq_record *recs, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		relay_dlq_record_clear(&recs[i]);
	free(recs);
}

size_t h_dlq_count(h_ctx *h)
{
	size_t n;
	relay_dlq_record *d = h_dlq(h, &n);

	h_dlq_free(d, n);
	return n;
}

void h_advance(h_ctx *h, int64_t ms)
{
	h->fclock.wall += ms;
	h->fclock.mono += (relay_mono_us)ms * 1000u;
}

void h_retry_round(h_ctx *h, int64_t ms)
{
	h_advance(h, ms);
	relay__consumer_reclaim_now(h->c);
	h_settle(h, 30);
}

int h_closed_flag;

void h_closed(relay_consumer *c)
{
	(void)c;
	h_closed_flag = 1;
}

void h_cleanup(h_ctx *h)
{
	char cmd[200];

	if (h->c) {
		h_closed_flag = 0;
		h_release(&h->exec, NULL);
		relay_consumer_close(h->c, h_closed);
		H_UNTIL(h, h_closed_flag, 10000);
		RT_CHECK(h_closed_flag);
		h->c = NULL;
	}
	relay_appset_free(h->apps);
	relay_redis_free(h->redis);
	if (h->rt)
		relay_runtime_free(h->rt);
	ev_timer_stop(h->loop, &h->tick);
	ev_loop_destroy(h->loop);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", h->dir);
	if (system(cmd) != 0)
		fprintf(stderr, "# cleanup of %s failed\n", h->dir);
}

void fuse_cb(int status, const relay_inv_outcome *o, void *payload)
{
	fuse_res *r = payload;

	r->done = 1;
	r->status = status;
	if (o)
		r->o = *o;
}

void fused_tail_guarantees(h_ctx *h)
{
	const char *tokb = "0123456789abcdef0123456789abcdef";
	char id[64], *key;
	fuse_res r;

	relay_redis_reply_free(H_CMD(h, "XGROUP", "CREATE", "events", "g",
				     "$", "MKSTREAM"));
	snprintf(id, sizeof(id), "%s", h_xadd(h, "{\"kind\":\"x\"}"));
	relay_redis_reply_free(H_CMD(h, "XREADGROUP", "GROUP", "g", "c",
				     "COUNT", "1", "STREAMS", "events", ">"));
	key = relay_inv_key("events", "relay", id);
	relay_redis_reply_free(H_CMD(h, "HSET", key, "a/h", "running:"
				     "99999999999999:1:"
				     "0123456789abcdef0123456789abcdef"));
	/* stale token: nothing written, nothing acknowledged */
	memset(&r, 0, sizeof(r));
	RT_EQ_INT(relay__inv_complete_ack(h->redis, key, "events", "a/h", 1,
					  "ffffffffffffffffffffffffffffffff",
					  "g", id, 1000000, NULL, fuse_cb,
					  &r), 0);
	H_UNTIL(h, r.done, 5000);
	RT_EQ_INT(r.status, 0);
	RT_EQ_INT((int)r.o.result, (int)RELAY_INV_R_STALE);
	RT_CHECK(strncmp(h_state(h, id, "a/h"), "running:", 8) == 0);
	RT_EQ_INT(h_int(h, H_CMD(h, "XLEN", "events")), 1);
	{
		relay_redis_reply *p = H_CMD(h, "XPENDING", "events", "g");

		RT_EQ_INT((int)p->element[0]->integer, 1);
		relay_redis_reply_free(p);
	}
	/* XACK fails (WRONGTYPE): state written, no retention */
	relay_redis_reply_free(H_CMD(h, "SET", "notastream", "x"));
	memset(&r, 0, sizeof(r));
	RT_EQ_INT(relay__inv_complete_ack(h->redis, key, "notastream", "a/h",
					  1, tokb, "g", id, 1000000, NULL,
					  fuse_cb, &r), 0);
	H_UNTIL(h, r.done, 5000);
	RT_CHECK(r.status != 0);
	RT_EQ_STR(h_state(h, id, "a/h"), "ok");
	RT_EQ_STR(h_state(h, id, "__terminal"), "");
	RT_EQ_INT((int)h_pttl(h, id), -1);
	/* the live claim: ok, acknowledged, retained */
	relay_redis_reply_free(H_CMD(h, "HSET", key, "a/h", "running:"
				     "99999999999999:1:"
				     "0123456789abcdef0123456789abcdef"));
	memset(&r, 0, sizeof(r));
	RT_EQ_INT(relay__inv_complete_ack(h->redis, key, "events", "a/h", 1,
					  tokb, "g", id, 1000000, NULL,
					  fuse_cb, &r), 0);
	H_UNTIL(h, r.done, 5000);
	RT_EQ_INT(r.status, 0);
	RT_EQ_INT((int)r.o.result, (int)RELAY_INV_R_RECORDED);
	RT_EQ_STR(h_state(h, id, "a/h"), "ok");
	RT_EQ_STR(h_state(h, id, "__terminal"), "1");
	RT_CHECK(h_pttl(h, id) > 0 && h_pttl(h, id) <= 1000000);
	{
		relay_redis_reply *p = H_CMD(h, "XPENDING", "events", "g");

		RT_EQ_INT((int)p->element[0]->integer, 0);
		relay_redis_reply_free(p);
	}
	/* retained: a later (replayed) call is inert */
	memset(&r, 0, sizeof(r));
	RT_EQ_INT(relay__inv_complete_ack(h->redis, key, "events", "a/h", 1,
					  tokb, "g", id, 5, NULL, fuse_cb,
					  &r), 0);
	H_UNTIL(h, r.done, 5000);
	RT_EQ_INT((int)r.o.result, (int)RELAY_INV_R_RETAINED);
	RT_CHECK(h_pttl(h, id) > 5);
	relay_free(key);
}

void h_reclaim_now(relay_consumer *c)
{
	relay__consumer_reclaim_now(c);
}

void h_renew_now(relay_consumer *c)
{
	relay__consumer_renew_now(c);
}

int h_group_ok(const relay_consumer *c)
{
	return c->group_ok;
}
