/*
 * slots.c - the concurrency limiter (relay_slots, relay/engine.h): the
 * global count of running invocations, the per-app counts and the FIFO
 * queue of invocations waiting for a slot. A consumer either owns one
 * (options.slots NULL) or borrows one shared with other consumers, so
 * several streams read by one host share MAX_CONCURRENCY and every app's
 * concurrency. Only the counting lives here; handing a freed slot to a
 * waiter (and what that starts) is consumer_inv.c's.
 */
#include <assert.h>
#include <string.h>

#include "slots.h"

int relay_slots_new(relay_slots **out, unsigned int max_concurrency)
{
	relay_slots *s;

	if (!out)
		return RELAY_EINVAL;
	*out = NULL;
	s = relay__calloc(1, sizeof(*s));
	if (!s)
		return RELAY_ENOMEM;
	s->max = max_concurrency ? max_concurrency :
		RELAY_CONSUMER_DEFAULT_MAX_CONCURRENCY;
	*out = s;
	return 0;
}

void relay_slots_free(relay_slots *s)
{
	size_t i;

	if (!s)
		return;
	/* Every consumer using it is closed: nothing runs or waits. */
	assert(!s->wait_head && !s->users);
	for (i = 0; i < s->napps; i++)
		relay__free(s->apps[i].name);
	relay__free(s->apps);
	relay__free(s);
}

unsigned int relay_slots_max(const relay_slots *s)
{
	return s->max;
}

unsigned int relay_slots_running(const relay_slots *s)
{
	return s->running;
}

unsigned int relay_slots_app_running(const relay_slots *s, const char *app)
{
	size_t i;

	for (i = 0; i < s->napps; i++)
		if (strcmp(s->apps[i].name, app) == 0)
			return s->apps[i].running;
	return 0;
}

/* The per-app count of @name, created at zero; NULL on ENOMEM. */
relay__app_slots *relay__slots_app(relay_slots *s, const char *name)
{
	relay__app_slots *a;
	size_t i;

	for (i = 0; i < s->napps; i++)
		if (strcmp(s->apps[i].name, name) == 0)
			return &s->apps[i];
	a = relay__realloc(s->apps, (s->napps + 1) * sizeof(*a));
	if (!a)
		return NULL;
	s->apps = a;
	a = &s->apps[s->napps];
	a->name = relay__strdup(name);
	if (!a->name)
		return NULL;
	a->running = 0;
	s->napps++;
	return a;
}

void relay__slots_use(relay_slots *s, int delta)
{
	if (delta > 0)
		s->users++;
	else
		s->users--;
}

int relay__slots_take(relay_slots *s, const char *app, unsigned int limit)
{
	relay__app_slots *a = relay__slots_app(s, app);

	if (!a)
		return RELAY_ENOMEM;
	if (s->running >= s->max || a->running >= limit)
		return 0;
	s->running++;
	a->running++;
	return 1;
}

void relay__slots_give(relay_slots *s, const char *app)
{
	relay__app_slots *a = relay__slots_app(s, app);

	s->running--;
	if (a && a->running)
		a->running--;
}

relay__slot_wait *relay__slots_wait_head(relay_slots *s)
{
	return s->wait_head;
}

void relay__slots_wait_push(relay_slots *s, relay__slot_wait *w)
{
	w->next = NULL;
	if (s->wait_tail)
		s->wait_tail->next = w;
	else
		s->wait_head = w;
	s->wait_tail = w;
}

void relay__slots_wait_remove(relay_slots *s, relay__slot_wait *w)
{
	relay__slot_wait **pp = &s->wait_head;

	s->wait_tail = NULL;
	while (*pp) {
		if (*pp == w) {
			*pp = w->next;
			continue;
		}
		s->wait_tail = *pp;
		pp = &(*pp)->next;
	}
	w->next = NULL;
}
