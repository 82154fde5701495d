/*
 * fuzz-envelope.c - libFuzzer target: arbitrary bytes as the "event" value
 * of a schedule occurrence entry (doc/redis-layout.md R-7).
 *
 * The bytes are decoded the way the engine decodes a stream event
 * (json_loadb, no flags) and, whatever JSON they hold, checked by
 * relay__sched_envelope_check(), the validator the engine's dispatch path
 * (consumer_sched.c) and DLQ replay (consumer_exec.c) use. It must not
 * crash or leak, and:
 *   - accepted: app, schedule, handler and scheduled_at are the non-empty
 *     strings of the object; app and schedule are valid names;
 *     scheduled_at parses and formats back to the same text;
 *     occurrence_id is "schedule:<app>:<schedule>:<scheduled_at>"; the
 *     envelope relayd would publish for these fields is accepted too,
 *     with the same fields;
 *   - rejected: RELAY_EPARSE (or RELAY_ENOMEM) and a non-empty one-line
 *     reason, no control character in it.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "relay/app.h"
#include "relay/common.h"
#include "../../librelay/common.h"
#include "../../librelay/consumer/sched.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The member @name of @root when it is a string, else NULL. */
static const char *member(const json_t *root, const char *name)
{
	return json_string_value(json_object_get(root, name));
}

static void check_accepted(const json_t *root, const char *app,
			   const char *sched, const char *handler,
			   const char *at)
{
	char back[RELAY__SCHED_TIME_LEN + 1], why[160];
	const char *a2, *s2, *h2, *t2;
	char *id, *env;
	json_t *again;
	int64_t t;

	if (!app || !sched || !handler || !at || !*app || !*sched ||
	    !*handler || !*at)
		abort();
	if (app != member(root, "app") || sched != member(root, "schedule") ||
	    handler != member(root, "handler") ||
	    at != member(root, "scheduled_at"))
		abort();
	if (!relay_app_name_valid(app) || !relay_app_name_valid(sched))
		abort();
	if (relay__sched_time_parse(at, &t) ||
	    relay__sched_time_fmt(t, back, sizeof(back)) ||
	    strcmp(back, at) != 0)
		abort();
	id = relay__sched_occurrence_id(app, sched, at);
	if (!id)
		abort();
	if (strncmp(id, "schedule:", 9) != 0 ||
	    strcmp(id, member(root, "occurrence_id")) != 0)
		abort();
	relay__free(id);

	/* What relayd's publisher writes for these fields passes too. */
	env = relay__sched_envelope(app, sched, handler, t);
	if (!env)
		abort();
	again = json_loads(env, 0, NULL);
	if (!again || relay__sched_envelope_check(again, &a2, &s2, &h2, &t2,
						  why, sizeof(why)) ||
	    strcmp(a2, app) || strcmp(s2, sched) || strcmp(h2, handler) ||
	    strcmp(t2, at) || strcmp(member(again, "source"),
				     RELAY__SCHED_SOURCE))
		abort();
	json_decref(again);
	relay__free(env);
}

static void check_rejected(int rc, const char *why, size_t size)
{
	size_t i, n = strnlen(why, size);

	if (rc != RELAY_EPARSE && rc != RELAY_ENOMEM)
		abort();
	if (n == 0 || n == size)
		abort();
	for (i = 0; i < n; i++)
		if ((unsigned char)why[i] < 0x20 || why[i] == 0x7f)
			abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *app = NULL, *sched = NULL, *handler = NULL, *at = NULL;
	char why[160];
	json_t *root;
	int rc;

	if (size > 64 * 1024)
		return 0;
	root = json_loadb((const char *)data, size, 0, NULL);
	if (!root)
		return 0;  /* not JSON: the engine never takes it for one */
	memset(why, 0, sizeof(why));
	rc = relay__sched_envelope_check(root, &app, &sched, &handler, &at,
					 why, sizeof(why));
	if (rc == 0)
		check_accepted(root, app, sched, handler, at);
	else
		check_rejected(rc, why, sizeof(why));
	json_decref(root);
	return 0;
}
