/*
 * next.c - firing instants of a parsed cron expression.
 *
 * Both searches walk local calendar days (from the day of the given
 * instant, widened by the largest possible UTC offset) and, inside a
 * matching day, the selected hours and minutes as local wall times. A day
 * whose UTC offset cannot change within reach (nearly every day) maps its
 * wall times to instants by one subtraction. Around a transition each
 * wall time is solved against the zone and the DST rules of
 * relay/schedule.h decide which of its occurrences fire.
 *
 * First occurrences of wall times are non-decreasing in the wall time
 * (and last occurrences too), so the walk stops once the first (last)
 * occurrence of the current wall time is past the best candidate found.
 */
#include "sched.h"

/*
 * How far a search looks: past the longest gap between two firings of
 * any expression, plus the days REACH adds at either end. That gap is
 * Feb 29 on one weekday (a restricted day of month with a "*"-led day of
 * week, so both must hold): 28 years, 40 across a century that is not a
 * leap year (2088 -> 2128 for Sundays). With a shorter search, next()
 * from just after a firing could miss the following one that prev() from
 * it had found (and report "never" for an expression that does fire).
 */
#define SEARCH_DAYS 14660 /* 40 years and 50 days */
#define REACH (27 * 3600)

static bool day_matches(const relay_cron *c, int64_t day)
{
	int64_t y;
	int m, d;
	bool dom_ok, dow_ok;

	relay__civil_from_days(day, &y, &m, &d);
	if (!(c->month >> m & 1))
		return false;
	dom_ok = c->dom >> d & 1;
	dow_ok = c->dow >> relay__weekday(day) & 1;
	if (c->dom_star || c->dow_star)
		return dom_ok && dow_ok;
	return dom_ok || dow_ok;
}

/*
 * The instants at which wall time @l fires (0-2, ascending, into @out);
 * *first and *last bound every occurrence of @l, fired or not.
 */
static int fires(const relay_cron *c, int64_t l, int64_t out[2],
		 int64_t *first, int64_t *last)
{
	int64_t t[2];
	int k = relay__zone_solve(&c->zone, l, t);

	if (k == 0) { /* in a gap: fixed-time jobs fire at its end */
		*first = *last = t[0];
		out[0] = t[0];
		return c->wild ? 0 : 1;
	}
	*first = t[0];
	*last = t[k - 1];
	out[0] = t[0];
	out[1] = t[1];
	return k == 2 && !c->wild ? 1 : k; /* overlap: fixed fire once */
}

static bool in_range(int64_t t)
{
	return t >= RELAY__SCHED_MIN_S && t <= RELAY__SCHED_MAX_S;
}

int relay_cron_next(const relay_cron *c, int64_t after_s, int64_t *next_s)
{
	int64_t la, d0, d, best = 0;
	bool found = false;

	if (!in_range(after_s))
		return RELAY_EINVAL;
	la = after_s + relay__zone_offset(&c->zone, after_s);
	d0 = relay__floordiv(la - REACH, RELAY__SECS_PER_DAY);
	for (d = d0; d < d0 + SEARCH_DAYS; d++) {
		int64_t lday = d * RELAY__SECS_PER_DAY;
		int h, m;

		if (!day_matches(c, d))
			continue;
		if (relay__zone_quiet(&c->zone, lday - REACH,
				      lday + RELAY__SECS_PER_DAY + REACH)) {
			int32_t o = relay__zone_offset(&c->zone, lday);

			for (h = 0; h < 24; h++) {
				int64_t lh = lday + h * 3600;

				if (!(c->hour >> h & 1) ||
				    lh + 3540 - o <= after_s)
					continue;
				for (m = 0; m < 60; m++) {
					int64_t t = lh + m * 60 - o;

					if (!(c->minute >> m & 1) ||
					    t <= after_s)
						continue;
					*next_s = found && best < t ? best : t;
					return 0;
				}
			}
			continue;
		}
		for (h = 0; h < 24; h++) {
			if (!(c->hour >> h & 1))
				continue;
			for (m = 0; m < 60; m++) {
				int64_t out[2], first, last;
				int k, i;

				if (!(c->minute >> m & 1))
					continue;
				k = fires(c, lday + h * 3600 + m * 60, out,
					  &first, &last);
				for (i = 0; i < k; i++)
					if (out[i] > after_s &&
					    (!found || out[i] < best)) {
						best = out[i];
						found = true;
					}
				if (found && first >= best) {
					*next_s = best;
					return 0;
				}
			}
		}
	}
	if (found) {
		*next_s = best;
		return 0;
	}
	return RELAY_ENOTFOUND;
}

int relay_cron_prev(const relay_cron *c, int64_t at_s, int64_t *prev_s)
{
	int64_t la, d0, d, best = 0;
	bool found = false;

	if (!in_range(at_s))
		return RELAY_EINVAL;
	la = at_s + relay__zone_offset(&c->zone, at_s);
	d0 = relay__floordiv(la + REACH, RELAY__SECS_PER_DAY);
	for (d = d0; d > d0 - SEARCH_DAYS; d--) {
		int64_t lday = d * RELAY__SECS_PER_DAY;
		int h, m;

		if (!day_matches(c, d))
			continue;
		if (relay__zone_quiet(&c->zone, lday - REACH,
				      lday + RELAY__SECS_PER_DAY + REACH)) {
			int32_t o = relay__zone_offset(&c->zone, lday);

			for (h = 23; h >= 0; h--) {
				int64_t lh = lday + h * 3600;

				if (!(c->hour >> h & 1) || lh - o > at_s)
					continue;
				for (m = 59; m >= 0; m--) {
					int64_t t = lh + m * 60 - o;

					if (!(c->minute >> m & 1) || t > at_s)
						continue;
					*prev_s = found && best > t ? best : t;
					return 0;
				}
			}
			continue;
		}
		for (h = 23; h >= 0; h--) {
			if (!(c->hour >> h & 1))
				continue;
			for (m = 59; m >= 0; m--) {
				int64_t out[2], first, last;
				int k, i;

				if (!(c->minute >> m & 1))
					continue;
				k = fires(c, lday + h * 3600 + m * 60, out,
					  &first, &last);
				for (i = 0; i < k; i++)
					if (out[i] <= at_s &&
					    (!found || out[i] > best)) {
						best = out[i];
						found = true;
					}
				if (found && last <= best) {
					*prev_s = best;
					return 0;
				}
			}
		}
	}
	if (found) {
		*prev_s = best;
		return 0;
	}
	return RELAY_ENOTFOUND;
}
