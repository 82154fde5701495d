/*
 * civil.c - proleptic Gregorian calendar arithmetic on day numbers
 * (days since 1970-01-01), valid far beyond years 1-9999.
 *
 * Days are counted in 400-year eras of 146097 days, each year starting on
 * March 1 so that the leap day is the last day of the counted year.
 */
#include "sched.h"

int64_t relay__floordiv(int64_t a, int64_t b)
{
	int64_t q = a / b;

	if ((a % b != 0) && ((a < 0) != (b < 0)))
		q--;
	return q;
}

void relay__civil_from_days(int64_t days, int64_t *y, int *m, int *d)
{
	int64_t z = days + 719468;
	int64_t era = relay__floordiv(z, 146097);
	int64_t doe = z - era * 146097;
	int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	int64_t mar = (5 * doy + 2) / 153;

	*d = (int)(doy - (153 * mar + 2) / 5 + 1);
	*m = (int)(mar < 10 ? mar + 3 : mar - 9);
	*y = yoe + era * 400 + (*m <= 2);
}

int relay__weekday(int64_t days)
{
	int64_t w = (days + 4) % 7; /* 1970-01-01 was a Thursday */

	return (int)(w < 0 ? w + 7 : w);
}
