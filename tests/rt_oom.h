/*
 * rt_oom.h - the failing allocator every allocation-failure test uses.
 *
 * Installed with relay_set_allocator(), it lets allocation number N (counted
 * from the last rt_oom_arm()) fail, and with "sticky" every allocation
 * after it as well. A test walks N = 1, 2, ... until a pass gets through
 * without a failure being injected, and checks at each step that the call
 * reported RELAY_ENOMEM (or succeeded) and, under ASan, leaked nothing.
 *
 *	rt_oom_install();
 *	for (n = 1; ; n++) {
 *		rt_oom_arm(n, 0);
 *		rc = call_under_test();
 *		if (!rt_oom_fired())
 *			break;          // n is past the last allocation
 *		RT_EQ_INT(rc, RELAY_ENOMEM);
 *	}
 *	rt_oom_uninstall();
 *
 * One-shot (sticky 0) finds the error paths that must clean up after one
 * failure and go on or report; sticky (1) models memory that stays
 * exhausted, so the clean-up paths themselves see failures. Header-only,
 * one state per test program, not thread-safe (tests run single-threaded).
 */
#ifndef RT_OOM_H
#define RT_OOM_H

#include <stdlib.h>

#include "relay/common.h"

static long rt_oom_at;      /* allocation that fails (1-based); <= 0 never */
static long rt_oom_count;   /* allocations since the last rt_oom_arm() */
static int rt_oom_sticky;   /* also fail every allocation after rt_oom_at */
static int rt_oom_hit;      /* a failure was injected since the last arm */
static int rt_oom_paused;   /* let allocations through, uncounted */

/* Fail allocation @n (1-based) from now on; @sticky: and every later one.
 * @n <= 0 disarms. Resets the count and rt_oom_fired(). */
static inline void rt_oom_arm(long n, int sticky)
{
	rt_oom_at = n;
	rt_oom_sticky = sticky;
	rt_oom_count = 0;
	rt_oom_hit = 0;
}

/* Whether an allocation was made to fail since the last rt_oom_arm(). */
static inline int rt_oom_fired(void)
{
	return rt_oom_hit;
}

/* Allocations counted since the last rt_oom_arm() (while armed). */
static inline long rt_oom_calls(void)
{
	return rt_oom_count;
}

/* Set-up inside a failing pass: allocations between pause and resume
 * always succeed and are not counted. */
static inline void rt_oom_pause(void)
{
	rt_oom_paused = 1;
}

static inline void rt_oom_resume(void)
{
	rt_oom_paused = 0;
}

static inline int rt_oom_fail_now(void)
{
	if (rt_oom_paused || rt_oom_at <= 0)
		return 0;
	rt_oom_count++;
	if (rt_oom_count == rt_oom_at ||
	    (rt_oom_sticky && rt_oom_count > rt_oom_at)) {
		rt_oom_hit = 1;
		return 1;
	}
	return 0;
}

static inline void *rt_oom_malloc(size_t n)
{
	return rt_oom_fail_now() ? NULL : malloc(n);
}

static inline void *rt_oom_realloc(void *p, size_t n)
{
	return rt_oom_fail_now() ? NULL : realloc(p, n);
}

/* Route librelay's allocations through the failing allocator (disarmed
 * until rt_oom_arm()) / back to the C library. */
static inline void rt_oom_install(void)
{
	relay_set_allocator(rt_oom_malloc, rt_oom_realloc, free);
}

static inline void rt_oom_uninstall(void)
{
	relay_set_allocator(NULL, NULL, NULL);
	rt_oom_arm(0, 0);
}

#endif /* RT_OOM_H */
