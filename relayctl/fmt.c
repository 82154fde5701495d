/*
 * fmt.c - ages, times, tables and key/value blocks for relayctl output.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fmt.h"

char *relayctl_fmt_age(int64_t s, char *buf, size_t size)
{
	if (s <= 0)
		snprintf(buf, size, "0s");
	else if (s < 60)
		snprintf(buf, size, "%llds", (long long)s);
	else if (s < 3600)
		snprintf(buf, size, "%lldm%llds", (long long)(s / 60),
			 (long long)(s % 60));
	else if (s < 86400)
		snprintf(buf, size, "%lldh%lldm", (long long)(s / 3600),
			 (long long)(s % 3600 / 60));
	else
		snprintf(buf, size, "%lldd%lldh", (long long)(s / 86400),
			 (long long)(s % 86400 / 3600));
	return buf;
}

/* @n digits at @s into *v. Returns 0 or -1. */
static int digits(const char *s, int n, int *v)
{
	int i;

	*v = 0;
	for (i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		*v = *v * 10 + (s[i] - '0');
	}
	return 0;
}

/* Days since 1970-01-01 of a proleptic Gregorian date. */
static int64_t days_from_civil(int64_t y, int m, int d)
{
	int64_t era, yoe, doy, doe;

	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = y - era * 400;
	doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

static int month_days(int y, int m)
{
	static const int days[12] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31,
				      30, 31 };
	int leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;

	return m == 2 && leap ? 29 : days[m - 1];
}

/* "YYYY-MM-DD(T|t| )HH:MM:SS[.frac](Z|z|+HH:MM|-HH:MM)". */
int relayctl_parse_time(const char *s, int64_t *ms)
{
	int y, mo, d, h, mi, sec, oh = 0, om = 0, frac = 0, scale = 1000;
	int sign = 0;
	const char *p;

	if (strlen(s) < 20 || digits(s, 4, &y) || s[4] != '-' ||
	    digits(s + 5, 2, &mo) || s[7] != '-' || digits(s + 8, 2, &d) ||
	    (s[10] != 'T' && s[10] != 't' && s[10] != ' ') ||
	    digits(s + 11, 2, &h) || s[13] != ':' || digits(s + 14, 2, &mi) ||
	    s[16] != ':' || digits(s + 17, 2, &sec))
		return -1;
	if (mo < 1 || mo > 12 || d < 1 || d > month_days(y, mo) || h > 23 ||
	    mi > 59 || sec > 60)
		return -1;
	p = s + 19;
	if (*p == '.') {
		if (p[1] < '0' || p[1] > '9')
			return -1;
		for (p++; *p >= '0' && *p <= '9'; p++)
			if (scale > 1) {
				scale /= 10;
				frac += (*p - '0') * scale;
			}
	}
	if ((*p == 'Z' || *p == 'z') && p[1] == '\0') {
		sign = 0;
	} else if ((*p == '+' || *p == '-') && strlen(p) == 6 &&
		   !digits(p + 1, 2, &oh) && p[3] == ':' &&
		   !digits(p + 4, 2, &om) && oh <= 23 && om <= 59) {
		sign = *p == '+' ? 1 : -1;
	} else {
		return -1;
	}
	/* A leap second counts as the last second of its minute. */
	if (sec == 60)
		sec = 59;
	*ms = ((days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + sec -
		sign * (oh * 3600 + om * 60)) * 1000) + frac;
	return 0;
}

int64_t relayctl_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

char *relayctl_fmt_time(int64_t ms, char *buf, size_t size)
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;

	gmtime_r(&t, &tm);
	snprintf(buf, size, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ",
		 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
		 tm.tm_min, tm.tm_sec, (int)(ms % 1000));
	return buf;
}

char *relayctl_fmt_time_age(const char *ts, char *buf, size_t size)
{
	char age[32];
	int64_t ms;

	if (relayctl_parse_time(ts, &ms)) {
		snprintf(buf, size, "%s", ts);
		return buf;
	}
	relayctl_fmt_age((relayctl_now_ms() - ms) / 1000, age, sizeof(age));
	snprintf(buf, size, "%s (%s ago)", ts, age);
	return buf;
}

/*
 * Length of the well-formed UTF-8 sequence at @p (1-4), or 0 if it is not
 * one. *@cp receives its code point.
 */
static size_t utf8_seq(const unsigned char *p, uint32_t *cp)
{
	size_t n, i;
	uint32_t c;

	if (p[0] < 0x80) {
		*cp = p[0];
		return 1;
	}
	if (p[0] >= 0xc2 && p[0] <= 0xdf) {
		n = 2;
		c = p[0] & 0x1f;
	} else if (p[0] >= 0xe0 && p[0] <= 0xef) {
		n = 3;
		c = p[0] & 0x0f;
	} else if (p[0] >= 0xf0 && p[0] <= 0xf4) {
		n = 4;
		c = p[0] & 0x07;
	} else {
		return 0;
	}
	for (i = 1; i < n; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		c = (c << 6) | (p[i] & 0x3f);
	}
	if ((n == 3 && (c < 0x800 || (c >= 0xd800 && c <= 0xdfff))) ||
	    (n == 4 && (c < 0x10000 || c > 0x10ffff)))
		return 0;
	*cp = c;
	return n;
}

/* Clean in place; '\n' survives when @keep_nl. Returns @c. */
static char *clean_in_place(char *c, int keep_nl)
{
	const unsigned char *p = (const unsigned char *)c;
	char *o = c;
	uint32_t cp;
	size_t n;

	while (*p) {
		n = utf8_seq(p, &cp);
		if (n == 0 || cp == 0x7f || (cp < 0x20 &&
					     !(keep_nl && cp == '\n')) ||
		    (cp >= 0x80 && cp <= 0x9f)) {
			/* a C0/C1 control, DEL, or a byte that is not
			 * UTF-8 (which a terminal may read as C1) */
			*o++ = '?';
			p += n ? n : 1;
			continue;
		}
		memmove(o, p, n);
		o += n;
		p += n;
	}
	*o = '\0';
	return c;
}

char *relayctl_clean(const char *s)
{
	char *c = strdup(s ? s : "");

	return c ? clean_in_place(c, 0) : NULL;
}

char *relayctl_clean_text(const char *s)
{
	char *c = strdup(s ? s : "");

	return c ? clean_in_place(c, 1) : NULL;
}

const char *relayctl_c(const char *s)
{
	static char *ring[16];
	static unsigned int next;
	char **slot = &ring[next++ % 16];

	free(*slot);
	*slot = relayctl_clean(s);
	return *slot ? *slot : "?";
}

int relayctl_table_init(relayctl_table *t, size_t ncols,
			const char *const *head)
{
	memset(t, 0, sizeof(*t));
	t->ncols = ncols;
	return relayctl_table_add(t, head);
}

int relayctl_table_add(relayctl_table *t, const char *const *row)
{
	size_t i;

	if (t->nrows == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 16;
		char **nc = realloc(t->cells, cap * t->ncols * sizeof(*nc));

		if (!nc) {
			t->oom = 1;
			return -1;
		}
		t->cells = nc;
		t->cap = cap;
	}
	for (i = 0; i < t->ncols; i++) {
		char *c = relayctl_clean(row[i]);

		if (!c) {
			while (i--)
				free(t->cells[t->nrows * t->ncols + i]);
			t->oom = 1;
			return -1;
		}
		t->cells[t->nrows * t->ncols + i] = c;
	}
	t->nrows++;
	return 0;
}

void relayctl_table_print(const relayctl_table *t, FILE *f)
{
	size_t r, c, *w = calloc(t->ncols, sizeof(*w));

	if (!w)
		return;
	for (r = 0; r < t->nrows; r++)
		for (c = 0; c < t->ncols; c++) {
			size_t n = strlen(t->cells[r * t->ncols + c]);

			if (n > w[c])
				w[c] = n;
		}
	for (r = 0; r < t->nrows; r++) {
		for (c = 0; c < t->ncols; c++) {
			const char *s = t->cells[r * t->ncols + c];

			if (c + 1 == t->ncols)
				fprintf(f, "%s\n", s);
			else
				fprintf(f, "%-*s  ", (int)w[c], s);
		}
	}
	free(w);
}

void relayctl_table_free(relayctl_table *t)
{
	size_t i;

	for (i = 0; i < t->nrows * t->ncols; i++)
		free(t->cells[i]);
	free(t->cells);
	memset(t, 0, sizeof(*t));
}

void relayctl_kv(FILE *f, int width, const char *key, const char *value)
{
	char *v = relayctl_clean(value);

	if (*key)
		fprintf(f, "%s:%*s%s\n", key, width - (int)strlen(key) + 1,
			"", v ? v : "");
	else	/* a continuation line of the previous key */
		fprintf(f, "%*s%s\n", width + 2, "", v ? v : "");
	free(v);
}
