/*
 * fmt.c - ages, times, tables and key/value blocks for relayctl output.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "relay/dlq.h"

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

/* One RFC 3339 parser for relay and relayctl: the library's. */
int relayctl_parse_time(const char *s, int64_t *ms)
{
	relay_wall_ms v;

	if (relay_dlq_time_parse(s, &v))
		return -1;
	*ms = v;
	return 0;
}

/* Unix milliseconds up to 9999-12-31: the range RFC 3339 can write. */
#define WHEN_MAX_MS 253402300799999LL

int relayctl_parse_when_ms(const char *s, int64_t *ms)
{
	long long v;
	char *end;

	if (*s >= '0' && *s <= '9' && strspn(s, "0123456789") == strlen(s)) {
		errno = 0;
		v = strtoll(s, &end, 10);
		if (errno || v > WHEN_MAX_MS)
			return -1;
		*ms = v;
		return 0;
	}
	return relayctl_parse_time(s, ms);
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

void relayctl_put_output(FILE *f, const char *text, size_t len)
{
	const unsigned char *s = (const unsigned char *)text;
	size_t i;

	if (!isatty(fileno(f))) {
		fwrite(text, 1, len, f);
	} else {
		for (i = 0; i < len; i++) {
			if (s[i] == 0xc2 && i + 1 < len && s[i + 1] >= 0x80 &&
			    s[i + 1] <= 0x9f) {
				fputc('?', f);
				i++;
			} else if ((s[i] < 0x20 && s[i] != '\t') ||
				   s[i] == 0x7f) {
				fputc('?', f);
			} else {
				fputc(s[i], f);
			}
		}
	}
	fputc('\n', f);
	fflush(f);
}
