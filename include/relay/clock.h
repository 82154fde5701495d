/*
 * relay/clock.h - the injectable clock.
 *
 * Wall time (Unix milliseconds) drives now()-relative patterns, deadlines
 * stored in Redis and DLQ timestamps; monotonic time (microseconds) drives
 * timeouts. Tests pin both with relay_clock_fixed().
 */
#ifndef RELAY_CLOCK_H
#define RELAY_CLOCK_H

#include "common.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef int64_t relay_wall_ms;  /* Unix time in milliseconds */
typedef uint64_t relay_mono_us; /* monotonic time in microseconds */

typedef struct relay_clock relay_clock;

/**
 * struct relay_clock - a clock backend (versioned vtable).
 *
 * Implementations embed this struct first. wall_ms and mono_us must be
 * non-NULL and safe to call from the thread that uses the owning object.
 */
struct relay_clock {
	unsigned int version;                       /* RELAY_CLOCK_VERSION */
	relay_wall_ms (*wall_ms)(const relay_clock *c);
	relay_mono_us (*mono_us)(const relay_clock *c);
	/* version 1 ends here; later versions append only */
};

#define RELAY_CLOCK_VERSION 1

/**
 * relay_clock_system() - the real clock (CLOCK_REALTIME, CLOCK_MONOTONIC).
 *
 * Returns: a static clock, borrowed, never NULL.
 * Thread-safety: safe from any thread.
 */
RELAY_EXTERN const relay_clock *relay_clock_system(void);

/**
 * struct relay_clock_fixed - a clock that returns set values (for tests).
 *
 * Initialise with relay_clock_fixed_init(), then move time by writing
 * @wall and @mono directly.
 */
typedef struct relay_clock_fixed {
	relay_clock parent;  /* must be first */
	relay_wall_ms wall;  /* value returned by wall_ms */
	relay_mono_us mono;  /* value returned by mono_us */
} relay_clock_fixed;

/**
 * relay_clock_fixed_init() - initialise a fixed clock.
 * @c: caller-owned storage.
 * @wall: initial wall time (Unix ms).
 *
 * The monotonic value starts at @wall * 1000.
 * Returns: &c->parent, for passing where a relay_clock * is expected.
 */
RELAY_EXTERN relay_clock *relay_clock_fixed_init(relay_clock_fixed *c,
						 relay_wall_ms wall);

/**
 * relay_clock_wall_ms(), relay_clock_mono_us() - read a clock.
 * @c: a clock, or NULL for relay_clock_system().
 */
RELAY_EXTERN relay_wall_ms relay_clock_wall_ms(const relay_clock *c);
RELAY_EXTERN relay_mono_us relay_clock_mono_us(const relay_clock *c);

#ifdef __cplusplus
}
#endif

#endif /* RELAY_CLOCK_H */
