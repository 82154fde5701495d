/*
 * librelay/consumer/consumer_exec.h - private: the executor seam
 * (consumer_exec.c owns relay__rt_executor, the manual runs and the
 * interpreter availability cache of relay_consumer). Never installed.
 */
#ifndef RELAY__CONSUMER_EXEC_H
#define RELAY__CONSUMER_EXEC_H

#include "common.h"
#include "relay/engine.h"

/* The default executor: relay_runtime. */
typedef struct relay__rt_executor {
	/* owner: consumer_exec.c */
	relay_consumer_executor parent;
	relay_runtime *rt;
	relay_error last;    /* why the last run could not start */
} relay__rt_executor;

void relay__rt_executor_init(relay__rt_executor *x, relay_runtime *rt);
int relay__consumer_default_available(const relay_app *app, void *payload);
void relay__consumer_manual_close(relay_consumer *c);
/* Fill an exec spec for @handler of @app (pointers borrowed). */
void relay__consumer_exec_spec_h(relay_exec_spec *s, const relay_app *app,
				 const char *handler, int64_t timeout_ms,
				 const char *msg_id, const char *event,
				 size_t len);
/* Fill an exec spec for @rule of @app (pointers borrowed). */
void relay__consumer_exec_spec(relay_exec_spec *s, const relay_app *app,
			       const relay_app_rule *rule, const char *msg_id,
			       const char *event, size_t len);

#endif /* RELAY__CONSUMER_EXEC_H */
