/*
 * consumer.c - the stream engine's lifecycle: relay_consumer_new(),
 * _start(), _stop(), _close(), _set_apps(). It owns the configuration
 * and lifecycle fields of relay_consumer (consumer.h) and puts the
 * other files together: reading (consumer_read.c), recovery and
 * ownership (consumer_recover.c), health and metrics
 * (consumer_health.c), one message's life (consumer_msg.c), one
 * invocation's (consumer_inv.c).
 *
 * Stop and close follow libuv: relay_consumer_stop() stops reading and
 * calls back, from the loop, once nothing is in flight;
 * relay_consumer_close() additionally frees the consumer after its
 * callback.
 */
#include <stddef.h>
#include <string.h>

#include "consumer.h"
#include "consumer_exec.h"
#include "consumer_health.h"
#include "consumer_inv.h"
#include "consumer_msg.h"
#include "consumer_read.h"
#include "consumer_recover.h"
#include "consumer_stuck.h"
#include "slots.h"

#define LOG(c, lvl, id, ...) relay__log(&(c)->logger, lvl, id, __VA_ARGS__)


static void consumer_free(relay_consumer *c)
{
	relay_matcher_free(c->matcher);
	if (c->slots)
		relay__slots_use(c->slots, -1);
	relay_slots_free(c->own_slots);
	relay__consumer_health_free(c);
	relay__stuck_free(c);
	relay__recover_free(c);
	relay__free(c->stream);
	relay__free(c->group);
	relay__free(c->name);
	relay__free(c->dlq_key);
	relay__free(c->outcomes_key);
	relay__free(c);
}

static void stop_watchers(relay_consumer *c)
{
	relay__read_stop(c);
	relay__recover_stop(c);
	relay__recover_finish(c);
	ev_idle_stop(c->loop, &c->finish_idle);
}

static void finish_cb(struct ev_loop *loop, ev_idle *w, int revents)
{
	relay_consumer *c = w->data;

	(void)revents;
	ev_idle_stop(loop, w);
	if (c->nmsgs || c->ops || c->manual)
		return;  /* checked again when the last one ends */
	if (!c->stopped_called) {
		c->stopped_called = 1;
		relay__recover_finish(c);
		LOG(c, RELAY_LOG_INFO, "RELAY-ENG10", "consumer stopped");
		if (c->stopped_cb)
			c->stopped_cb(c, c->stopped_payload);
	}
	if (c->closing) {
		stop_watchers(c);
		if (c->close_cb)
			c->close_cb(c);
		consumer_free(c);
	}
}

void relay__consumer_check_stopped(relay_consumer *c)
{
	if (!c->stopping || c->nmsgs || c->ops || c->manual)
		return;
	if (c->stopped_called && !c->closing)
		return;
	if (!ev_is_active(&c->finish_idle))
		ev_idle_start(c->loop, &c->finish_idle);
}

int relay_consumer_new(relay_consumer **out, struct ev_loop *loop,
		       relay_redis_backend *redis, relay_runtime *rt,
		       const relay_appset *apps,
		       const relay_consumer_options *o, relay_error *err)
{
	relay_consumer *c;
	int rc = RELAY_ENOMEM;

	*out = NULL;
	if (!o || o->version == 0 ||
	    o->version > RELAY_CONSUMER_OPTIONS_VERSION)
		return relay__error_set(err, RELAY_EINVAL, NULL, 0, 0,
					"consumer options: bad version");
	if (!loop || !redis || !apps || (!rt && !o->executor))
		return relay__error_set(err, RELAY_EINVAL, NULL, 0, 0,
					"consumer: loop, redis, apps and a "
					"runtime or executor are required");
	if (!o->stream || !*o->stream || !o->group || !*o->group ||
	    !o->consumer || !*o->consumer)
		return relay__error_set(err, RELAY_EINVAL, NULL, 0, 0,
					"consumer: stream, group and consumer "
					"name are required");
	if (o->max_event_bytes > RELAY_CONSUMER_MAX_EVENT_BYTES_LIMIT)
		return relay__error_set(err, RELAY_EINVAL, NULL, 0, 0,
					"consumer: max_event_bytes exceeds "
					"1 MiB");
	if (o->version >= 2 && o->slots && o->max_concurrency &&
	    o->max_concurrency != o->slots->max)
		return relay__error_set(err, RELAY_EINVAL, NULL, 0, 0,
					"consumer: max_concurrency %u differs "
					"from the shared slots' %u",
					o->max_concurrency, o->slots->max);
	if (o->executor && (o->executor->version == 0 ||
			    o->executor->version >
			    RELAY_CONSUMER_EXECUTOR_VERSION ||
			    !o->executor->run))
		return relay__error_set(err, RELAY_EINVAL, NULL, 0, 0,
					"consumer: bad executor");
	c = relay__calloc(1, sizeof(*c));
	if (!c)
		return relay__error_set(err, RELAY_ENOMEM, NULL, 0, 0,
					"out of memory");
	c->loop = loop;
	c->redis = redis;
	c->apps = apps;
	c->stream = relay__strdup(o->stream);
	c->group = relay__strdup(o->group);
	c->name = relay__strdup(o->consumer);
	c->dlq_key = relay_dlq_key(o->stream);
	if (!c->stream || !c->group || !c->name || !c->dlq_key)
		goto fail;
	if (o->version < 4 || !o->no_outcomes) {
		c->outcomes_key = relay__sprintf("relay:%s:outcomes",
						 o->stream);
		if (!c->outcomes_key)
			goto fail;
	}
	rc = relay_matcher_new(&c->matcher, relay_appset_ruleset(apps));
	if (rc)
		goto fail;
	if (o->version >= 2 && o->slots) {
		c->slots = o->slots;
	} else {
		rc = relay_slots_new(&c->own_slots, o->max_concurrency);
		if (rc)
			goto fail;
		c->slots = c->own_slots;
	}
	relay__slots_use(c->slots, 1);
	c->max_buffered = o->max_buffered ? o->max_buffered :
		RELAY_CONSUMER_DEFAULT_MAX_BUFFERED;
	c->max_event_bytes = o->max_event_bytes ? o->max_event_bytes :
		RELAY_CONSUMER_DEFAULT_MAX_EVENT_BYTES;
	c->retention_ms = o->retention_ms > 0 ? o->retention_ms :
		RELAY_CONSUMER_DEFAULT_RETENTION_MS;
	c->scale = o->time_scale;
	c->clock = o->clock ? o->clock : relay_clock_system();
	c->logger = o->logger;
	c->output = o->output;
	c->output_payload = o->output_payload;
	c->available = o->available ? o->available :
		relay__consumer_default_available;
	c->available_payload = o->available ? o->available_payload : c;
	if (o->executor) {
		c->exec = o->executor;
	} else {
		relay__rt_executor_init(&c->rt_exec, rt);
		c->exec = &c->rt_exec.parent;
	}
	relay__ctrace_init(&c->trace, o);
	relay__read_init(c, relay__msg_deliver);
	relay__recover_init(c);
	ev_idle_init(&c->finish_idle, finish_cb);
	c->finish_idle.data = c;
	*out = c;
	return 0;
fail:
	consumer_free(c);
	return relay__error_set(err, rc, NULL, 0, 0, "consumer: %s",
				relay_strerror(rc));
}

int relay_consumer_start(relay_consumer *c)
{
	if (c->started || c->stopping)
		return RELAY_EINVAL;
	c->started = 1;
	LOG(c, RELAY_LOG_INFO, "RELAY-ENG01",
	    "consumer started stream=%s group=%s consumer=%s", c->stream,
	    c->group, c->name);
	relay__recover_start(c);
	relay__read_start(c);
	return 0;
}

int relay_consumer_stop(relay_consumer *c, int graceful,
			relay_consumer_stopped_fn cb, void *payload)
{
	if (c->closing && cb)
		return RELAY_EINVAL;
	if (cb || !c->stopping) {
		c->stopped_cb = cb;
		c->stopped_payload = payload;
	}
	c->stopped_called = 0;
	if (!c->stopping) {
		c->stopping = 1;
		c->graceful = graceful;
		LOG(c, RELAY_LOG_INFO, "RELAY-ENG10",
		    "stop requested (%s)", graceful ? "graceful" : "at once");
		relay__read_stop(c);
		relay__recover_stop(c);
		relay__msg_stop(c, graceful);
	} else if (!graceful && c->graceful) {
		c->graceful = 0;
		relay__msg_stop(c, 0);
	}
	if (!graceful)
		relay__consumer_manual_close(c);
	relay__consumer_check_stopped(c);
	return 0;
}

void relay_consumer_close(relay_consumer *c, relay_consumer_close_fn cb)
{
	if (!c || c->closing)
		return;
	if (!c->stopping) {
		relay_consumer_stop(c, 0, NULL, NULL);
		c->stopped_called = 1;  /* no stop callback to report */
	} else if (c->graceful) {
		/* Keep the pending stop callback (it runs once, before the
		 * close callback) but stop at once. */
		c->graceful = 0;
		relay__msg_stop(c, 0);
		relay__consumer_manual_close(c);
	}
	c->closing = 1;
	c->close_cb = cb;
	if (!ev_is_active(&c->finish_idle))
		ev_idle_start(c->loop, &c->finish_idle);
}

int relay_consumer_set_apps(relay_consumer *c, const relay_appset *apps)
{
	relay_matcher *m = NULL;
	int rc;

	rc = relay_matcher_new(&m, relay_appset_ruleset(apps));
	if (rc)
		return rc;
	relay_matcher_free(c->matcher);
	c->matcher = m;
	c->apps = apps;
	return 0;
}

void relay__consumer_op(relay_consumer *c, int delta)
{
	if (delta > 0)
		c->ops++;
	else
		c->ops--;
}
