/*
 * clock.c - the system clock and the fixed test clock.
 */
#include <time.h>

#include "relay/clock.h"

static relay_wall_ms system_wall_ms(const relay_clock *c)
{
	struct timespec ts;

	(void)c;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (relay_wall_ms)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static relay_mono_us system_mono_us(const relay_clock *c)
{
	struct timespec ts;

	(void)c;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (relay_mono_us)ts.tv_sec * 1000000u +
	       (relay_mono_us)ts.tv_nsec / 1000u;
}

static const relay_clock system_clock = {
	RELAY_CLOCK_VERSION, system_wall_ms, system_mono_us,
};

const relay_clock *relay_clock_system(void)
{
	return &system_clock;
}

static relay_wall_ms fixed_wall_ms(const relay_clock *c)
{
	return ((const relay_clock_fixed *)c)->wall;
}

static relay_mono_us fixed_mono_us(const relay_clock *c)
{
	return ((const relay_clock_fixed *)c)->mono;
}

relay_clock *relay_clock_fixed_init(relay_clock_fixed *c, relay_wall_ms wall)
{
	c->parent.version = RELAY_CLOCK_VERSION;
	c->parent.wall_ms = fixed_wall_ms;
	c->parent.mono_us = fixed_mono_us;
	c->wall = wall;
	c->mono = (relay_mono_us)(wall > 0 ? wall : 0) * 1000u;
	return &c->parent;
}

relay_wall_ms relay_clock_wall_ms(const relay_clock *c)
{
	if (!c)
		c = &system_clock;
	return c->wall_ms(c);
}

relay_mono_us relay_clock_mono_us(const relay_clock *c)
{
	if (!c)
		c = &system_clock;
	return c->mono_us(c);
}
