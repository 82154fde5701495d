/*
 * consumer_exec.c - how the engine runs handlers: the exec spec of an
 * app's handler, the default executor over relay_runtime, the default
 * availability check, and the manual runs of relayctl (app invoke, dlq
 * replay), which bypass Redis entirely.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "consumer.h"
#include "consumer_exec.h"
#include "sched.h"

/* ---- the relay_runtime executor ------------------------------------------ */

static int rt_run(relay_consumer_executor *x, const relay_exec_spec *spec,
		  relay_output_fn output, relay_run_done_fn done,
		  void *payload, void **handle)
{
	relay__rt_executor *rx = (relay__rt_executor *)x;
	relay_run *run = NULL;
	int rc;

	memset(&rx->last, 0, sizeof(rx->last));
	rc = relay_runtime_run(rx->rt, spec, output, done, payload, &run,
			       &rx->last);
	*handle = run;
	return rc;
}

static void rt_cancel(relay_consumer_executor *x, void *handle)
{
	(void)x;
	if (handle)
		relay_run_cancel(handle);
}

void relay__rt_executor_init(relay__rt_executor *x, relay_runtime *rt)
{
	memset(x, 0, sizeof(*x));
	x->parent.version = RELAY_CONSUMER_EXECUTOR_VERSION;
	x->parent.run = rt_run;
	x->parent.cancel = rt_cancel;
	x->rt = rt;
}

/* ---- exec specs ------------------------------------------------------- */

void relay__consumer_exec_spec_h(relay_exec_spec *s, const relay_app *app,
				 const char *handler, int64_t timeout_ms,
				 const char *msg_id, const char *event,
				 size_t len)
{
	s->app = relay_app_name(app);
	s->handler = handler;
	s->message_id = msg_id;
	s->app_dir = relay_app_dir(app);
	s->runtime = relay_app_runtime(app);
	s->argv = relay_app_command(app, NULL);
	s->env = relay_app_envp(app);
	s->network = relay_app_network(app);
	s->memory_bytes = relay_app_memory(app);
	s->cpus_milli = relay_app_cpus_milli(app);
	s->pids = relay_app_pids(app);
	s->tmp_bytes = relay_app_tmp(app);
	s->timeout_ms = timeout_ms > 0 ? (uint32_t)timeout_ms : 0;
	s->event = event;
	s->event_len = len;
	s->warm = relay_app_warm(app) ? RELAY_WARM_AUTO : RELAY_WARM_OFF;
	s->generation = relay_app_generation(app);
}

void relay__consumer_exec_spec(relay_exec_spec *s, const relay_app *app,
			       const relay_app_rule *rule, const char *msg_id,
			       const char *event, size_t len)
{
	relay__consumer_exec_spec_h(s, app, relay_app_rule_handler(rule),
				    relay_app_rule_timeout_ms(rule), msg_id,
				    event, len);
}

/* ---- availability ----------------------------------------------------- */

/*
 * An app whose kind needs an interpreter (its driver's program: python3,
 * node) needs it on $PATH. The answer is cached per kind for five seconds
 * of monotonic time, so installing python3 makes a waiting app available
 * without a restart; checking one interpreter never forces a rescan of
 * another.
 */
int relay__consumer_default_available(const relay_app *app, void *payload)
{
	relay_consumer *c = payload;
	relay_mono_us now = relay_clock_mono_us(c->clock);
	relay_runtime_kind k = relay_app_runtime(app);
	const char *prog = relay_runtime_kind_program(k);

	if (!prog || (unsigned int)k >= RELAY__KIND_COUNT)
		return 1;
	if (c->kind_ok[k] == 0 || now - c->kind_checked_us[k] > 5000000u) {
		c->kind_checked_us[k] = now;
		c->kind_ok[k] = relay__on_path(prog) ? 1 : -1;
	}
	return c->kind_ok[k] > 0;
}

/* ---- manual runs -------------------------------------------------------- */

typedef struct manual {
	relay_consumer *c;
	struct manual *next;
	relay_app *app;                 /* reference */
	const relay_app_rule **rules;   /* borrowed from app */
	size_t nrules, cur;
	relay_consumer_result *res;
	char *event;
	size_t len;
	char *sched_handler;            /* replay of a schedule occurrence */
	int64_t sched_timeout_ms;
	void *run;
	relay_consumer_run_cb cb;
	void *payload;
	relay_output_fn out;            /* the caller's copy of the output */
	void *out_payload;
	int status;
	ev_idle idle;                   /* report from the loop */
	char *link;                     /* dlq replay: the failed attempt's
					   traceparent, or NULL */
	const char *kind;               /* "invoke" or "dlq_replay" */
	relay__rtrace tr;               /* the current run's span */
} manual;

static void manual_next(manual *mr);

static void manual_report(struct ev_loop *loop, ev_idle *w, int revents)
{
	manual *mr = w->data;
	relay_consumer *c = mr->c;
	manual **pp;
	size_t i;

	(void)revents;
	ev_idle_stop(loop, w);
	for (i = 0; i < mr->cur && i < mr->nrules; i++) {
		mr->res[i].app = relay_app_name(mr->app);
		mr->res[i].handler = mr->sched_handler ? mr->sched_handler :
			relay_app_rule_handler(mr->rules[i]);
	}
	mr->cb(mr->status, mr->res, mr->status ? 0 : mr->cur, mr->payload);
	for (pp = &c->manual_runs; *pp; pp = &(*pp)->next)
		if (*pp == mr) {
			*pp = mr->next;
			break;
		}
	relay_app_free(mr->app);
	relay__free(mr->rules);
	relay__free(mr->res);
	relay__free(mr->event);
	relay__free(mr->sched_handler);
	relay__free(mr->link);
	relay__free(mr);
	c->manual--;
	relay__consumer_check_stopped(c);
}

static void manual_finish(manual *mr, int status)
{
	mr->status = status;
	ev_idle_init(&mr->idle, manual_report);
	mr->idle.data = mr;
	ev_idle_start(mr->c->loop, &mr->idle);
}

static void manual_output(const relay_output_line *line, void *payload)
{
	manual *mr = payload;

	if (mr->c->output)
		mr->c->output(line, mr->c->output_payload);
	if (mr->out)
		mr->out(line, mr->out_payload);
}

static void manual_done(const relay_run_outcome *o, void *payload)
{
	manual *mr = payload;

	mr->run = NULL;
	relay__ctrace_manual_end(mr->c, &mr->tr, relay_app_name(mr->app),
				 mr->sched_handler ? mr->sched_handler :
				 relay_app_rule_handler(mr->rules[mr->cur]),
				 mr->kind, o);
	mr->res[mr->cur].outcome = *o;
	mr->cur++;
	if (o->status == RELAY_RUN_CANCELLED || mr->c->stopping) {
		manual_finish(mr, o->status == RELAY_RUN_CANCELLED ?
			      RELAY_ECLOSED : 0);
		return;
	}
	manual_next(mr);
}

static void manual_next(manual *mr)
{
	relay_consumer *c = mr->c;
	relay_exec_spec s = RELAY_EXEC_SPEC_INIT;
	relay__tspec ts;
	int rc;

	if (mr->cur >= mr->nrules) {
		manual_finish(mr, 0);
		return;
	}
	if (mr->sched_handler)
		relay__consumer_exec_spec_h(&s, mr->app, mr->sched_handler,
					    mr->sched_timeout_ms, "manual",
					    mr->event, mr->len);
	else
		relay__consumer_exec_spec(&s, mr->app, mr->rules[mr->cur],
					  "manual", mr->event, mr->len);
	relay__ctrace_manual_start(c, &mr->tr, mr->link, &s, &ts);
	rc = c->exec->run(c->exec, &s, manual_output, manual_done, mr,
			  &mr->run);
	if (rc)
		manual_finish(mr, RELAY_EBACKEND);
}

/*
 * A replayed DLQ entry of a schedule occurrence: its event is the
 * envelope and its handler the schedule's (not an event rule). Run that
 * handler as dispatch would: stdin {"source","scheduled_at"}, the
 * schedule's current timeout (the default when the schedule is gone).
 * Returns 0 when @event is a valid envelope of @app, else RELAY_ENOTFOUND
 * (or RELAY_ENOMEM).
 */
static int sched_replay(manual *mr, const relay_app *app, const char *handler)
{
	const char *an, *sn, *hn, *at;
	const relay_app_schedule *s;
	char why[160], *payload;
	json_t *root, *src;
	int rc = RELAY_ENOTFOUND;

	root = json_loadb(mr->event, mr->len, 0, NULL);
	src = json_object_get(root, "source");
	if (!json_is_object(root) || !json_is_string(src) ||
	    strcmp(json_string_value(src), RELAY__SCHED_SOURCE) != 0 ||
	    relay__sched_envelope_check(root, &an, &sn, &hn, &at, why,
					sizeof(why)) ||
	    strcmp(an, relay_app_name(app)) != 0)
		goto out;
	s = relay_app_schedule_find(app, sn);
	mr->sched_timeout_ms = s ? relay_app_schedule_timeout_ms(s)
				 : RELAY_APP_DEFAULT_TIMEOUT_MS;
	payload = relay__sprintf("{\"source\":\"%s\",\"scheduled_at\":"
				 "\"%s\"}", RELAY__SCHED_SOURCE, at);
	mr->sched_handler = relay__strdup(handler);
	rc = RELAY_ENOMEM;
	if (!payload || !mr->sched_handler) {
		relay__free(payload);
		goto out;
	}
	relay__free(mr->event);
	mr->event = payload;
	mr->len = strlen(payload);
	mr->nrules = 1;
	rc = 0;
out:
	json_decref(root);
	return rc;
}

static int manual_start(relay_consumer *c, const char *app_name,
			const char *handler, const char *event, size_t len,
			const char *link, relay_output_fn out,
			void *out_payload, relay_consumer_run_cb cb,
			void *payload)
{
	const relay_app *app;
	manual *mr;
	relay_app_match *mt = NULL;
	size_t n = 0, i;
	int rc = RELAY_ENOMEM;

	if (!app_name || !event || !cb || c->stopping)
		return RELAY_EINVAL;
	mr = relay__calloc(1, sizeof(*mr));
	if (!mr)
		return RELAY_ENOMEM;
	mr->c = c;
	mr->cb = cb;
	mr->payload = payload;
	mr->out = out;
	mr->out_payload = out_payload;
	mr->event = relay__strndup(event, len);
	mr->len = len;
	mr->kind = handler ? "dlq_replay" : "invoke";
	mr->link = link ? relay__strdup(link) : NULL;
	if (!mr->event || (link && !mr->link))
		goto fail;
	c->manual++;
	mr->next = c->manual_runs;
	c->manual_runs = mr;
	app = relay_appset_find(c->apps, app_name);
	if (!app) {
		manual_finish(mr, RELAY_ENOTFOUND);
		return 0;
	}
	mr->app = relay_app_ref(app);
	mr->rules = relay__calloc(relay_app_rule_count(app) + 1,
				  sizeof(*mr->rules));
	mr->res = relay__calloc(relay_app_rule_count(app) + 1,
				sizeof(*mr->res));
	if (!mr->rules || !mr->res) {
		manual_finish(mr, RELAY_ENOMEM);
		return 0;
	}
	if (handler) {
		const relay_app_rule *r = relay_app_rule_find(app, handler);

		if (!r) {
			rc = sched_replay(mr, app, handler);
			if (rc)
				manual_finish(mr, rc);
			else
				manual_next(mr);
			return 0;
		}
		mr->rules[mr->nrules++] = r;
		manual_next(mr);
		return 0;
	}
	rc = relay_appset_match(c->apps, c->matcher, event, len,
				relay_clock_wall_ms(c->clock), &mt, &n);
	if (rc) {
		manual_finish(mr, rc);
		return 0;
	}
	for (i = 0; i < n; i++)
		if (mt[i].app == app)
			mr->rules[mr->nrules++] = mt[i].rule;
	relay__free(mt);
	manual_next(mr);
	return 0;
fail:
	relay__free(mr->event);
	relay__free(mr->link);
	relay__free(mr);
	return rc;
}

int relay_consumer_invoke(relay_consumer *c, const char *app,
			  const char *event, size_t len,
			  relay_consumer_run_cb cb, void *payload)
{
	return manual_start(c, app, NULL, event, len, NULL, NULL, NULL, cb,
			    payload);
}

int relay_consumer_invoke_output(relay_consumer *c, const char *app,
				 const char *event, size_t len,
				 relay_output_fn output, void *output_payload,
				 relay_consumer_run_cb cb, void *payload)
{
	return manual_start(c, app, NULL, event, len, NULL, output,
			    output_payload, cb, payload);
}

int relay_consumer_replay(relay_consumer *c, const char *app,
			  const char *handler, const char *event, size_t len,
			  relay_consumer_run_cb cb, void *payload)
{
	if (!handler)
		return RELAY_EINVAL;
	return manual_start(c, app, handler, event, len, NULL, NULL, NULL,
			    cb, payload);
}

int relay_consumer_replay_output(relay_consumer *c, const char *app,
				 const char *handler, const char *event,
				 size_t len, relay_output_fn output,
				 void *output_payload,
				 relay_consumer_run_cb cb, void *payload)
{
	if (!handler)
		return RELAY_EINVAL;
	return manual_start(c, app, handler, event, len, NULL, output,
			    output_payload, cb, payload);
}

int relay_consumer_replay_linked(relay_consumer *c, const char *app,
				 const char *handler, const char *event,
				 size_t len, const char *link,
				 relay_output_fn output, void *output_payload,
				 relay_consumer_run_cb cb, void *payload)
{
	if (!handler)
		return RELAY_EINVAL;
	return manual_start(c, app, handler, event, len, link, output,
			    output_payload, cb, payload);
}

/* Stop at once: cancel the manual runs still going. */
void relay__consumer_manual_close(relay_consumer *c)
{
	manual *mr;

	for (mr = c->manual_runs; mr; mr = mr->next)
		if (mr->run && c->exec->cancel)
			c->exec->cancel(c->exec, mr->run);
}
