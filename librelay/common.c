/*
 * common.c - allocation hooks, error detail, growable buffers, string
 * vectors.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common.h"
#include "relay/version.h"
#include "relay_config.h"

static void *(*malloc_hook)(size_t) = malloc;
static void *(*realloc_hook)(void *, size_t) = realloc;
static void (*free_hook)(void *) = free;

void relay_set_allocator(void *(*malloc_fn)(size_t),
			 void *(*realloc_fn)(void *, size_t),
			 void (*free_fn)(void *))
{
	if (!malloc_fn || !realloc_fn || !free_fn) {
		malloc_hook = malloc;
		realloc_hook = realloc;
		free_hook = free;
		return;
	}
	malloc_hook = malloc_fn;
	realloc_hook = realloc_fn;
	free_hook = free_fn;
}

void *relay__malloc(size_t n)
{
	return malloc_hook(n ? n : 1);
}

void *relay__calloc(size_t nmemb, size_t n)
{
	void *p;

	if (n && nmemb > SIZE_MAX / n)
		return NULL;
	p = relay__malloc(nmemb * n);
	if (p)
		memset(p, 0, nmemb * n);
	return p;
}

void *relay__realloc(void *p, size_t n)
{
	return realloc_hook(p, n ? n : 1);
}

void relay__free(void *p)
{
	if (p)
		free_hook(p);
}

void relay_free(void *ptr)
{
	relay__free(ptr);
}

char *relay__strndup(const char *s, size_t n)
{
	char *d = relay__malloc(n + 1);

	if (!d)
		return NULL;
	memcpy(d, s, n);
	d[n] = '\0';
	return d;
}

char *relay__strdup(const char *s)
{
	return s ? relay__strndup(s, strlen(s)) : NULL;
}

char *relay__sprintf(const char *fmt, ...)
{
	va_list ap;
	int n;
	char *s;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return NULL;
	s = relay__malloc((size_t)n + 1);
	if (!s)
		return NULL;
	va_start(ap, fmt);
	vsnprintf(s, (size_t)n + 1, fmt, ap);
	va_end(ap);
	return s;
}

const char *relay_strerror(int code)
{
	switch (code) {
	case RELAY_OK: return "success";
	case RELAY_ERROR: return "error";
	case RELAY_ENOTFOUND: return "not found";
	case RELAY_EINVAL: return "invalid argument";
	case RELAY_EPARSE: return "parse error";
	case RELAY_EBACKEND: return "backend error";
	case RELAY_ETIMEOUT: return "timed out";
	case RELAY_ECLOSED: return "closed";
	case RELAY_ENOMEM: return "out of memory";
	case RELAY_EUSER: return "stopped by callback";
	case RELAY_ETYPE: return "wrong type";
	case RELAY_ESTALE: return "stale claim";
	case RELAY_EACCESS: return "permission denied";
	case RELAY_EAGAIN: return "resource temporarily unavailable";
	default: return "unknown error";
	}
}

const char *relay_version(void)
{
	return RELAY_VERSION;
}

void relay__error_clear(relay_error *err)
{
	if (err)
		memset(err, 0, sizeof(*err));
}

int relay__error_set(relay_error *err, int code, const char *path, int line,
		     int column, const char *fmt, ...)
{
	va_list ap;

	if (!err)
		return code;
	err->code = code;
	snprintf(err->path, sizeof(err->path), "%s", path ? path : "");
	err->line = line;
	err->column = column;
	va_start(ap, fmt);
	vsnprintf(err->text, sizeof(err->text), fmt, ap);
	va_end(ap);
	/* The text is promised to be one line: a control byte that came in
	 * through user data (a key with a newline, say) becomes '?'. */
	for (char *t = err->text; *t; t++)
		if ((unsigned char)*t < 0x20 || *t == 0x7f)
			*t = '?';
	return code;
}

char *relay_error_format(const relay_error *err, char *buf, size_t size)
{
	size_t off = 0;
	int n;

	if (!size)
		return buf;
	buf[0] = '\0';
	if (!err)
		return buf;
	if (err->path[0]) {
		n = snprintf(buf, size, "%s:", err->path);
		off = n > 0 ? (size_t)n : 0;
	}
	if (err->line > 0 && off < size) {
		n = snprintf(buf + off, size - off, "%d:%d:", err->line,
			     err->column > 0 ? err->column : 1);
		off += n > 0 ? (size_t)n : 0;
	}
	if (off < size)
		snprintf(buf + off, size - off, "%s%s", off ? " " : "",
			 err->text);
	return buf;
}

int relay__buf_reserve(relay__buf *b, size_t extra)
{
	size_t need, cap;
	char *p;

	if (extra > SIZE_MAX - b->len - 1)
		return RELAY_ENOMEM;
	need = b->len + extra + 1;
	if (need <= b->cap)
		return 0;
	cap = b->cap ? b->cap : 64;
	while (cap < need)
		cap = cap > SIZE_MAX / 2 ? need : cap * 2;
	p = relay__realloc(b->data, cap);
	if (!p)
		return RELAY_ENOMEM;
	b->data = p;
	b->cap = cap;
	return 0;
}

int relay__buf_append(relay__buf *b, const void *p, size_t n)
{
	int rc = relay__buf_reserve(b, n);

	if (rc)
		return rc;
	if (n)
		memcpy(b->data + b->len, p, n);
	b->len += n;
	b->data[b->len] = '\0';
	return 0;
}

int relay__buf_printf(relay__buf *b, const char *fmt, ...)
{
	va_list ap;
	int n, rc;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return RELAY_ERROR;
	rc = relay__buf_reserve(b, (size_t)n);
	if (rc)
		return rc;
	va_start(ap, fmt);
	vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
	return 0;
}

void relay__buf_free(relay__buf *b)
{
	relay__free(b->data);
	b->data = NULL;
	b->len = b->cap = 0;
}

bool relay__on_path(const char *prog)
{
	const char *path = getenv("PATH"), *p, *end;
	size_t plen = strlen(prog);
	char buf[4096];

	if (!path || !*path)
		path = "/usr/local/bin:/usr/bin:/bin";
	for (p = path; *p; p = *end ? end + 1 : end) {
		size_t n;

		end = strchr(p, ':');
		if (!end)
			end = p + strlen(p);
		n = (size_t)(end - p);
		if (n == 0 || n + plen + 2 > sizeof(buf))
			continue;
		memcpy(buf, p, n);
		buf[n] = '/';
		memcpy(buf + n + 1, prog, plen + 1);
		if (access(buf, X_OK) == 0)
			return true;
	}
	return false;
}

char *relay__escape(const char *s, size_t max, char *buf, size_t size)
{
	size_t n = 0, i;

	if (!size)
		return buf;
	for (i = 0; s && s[i] && n + 1 < size; i++) {
		unsigned char c = (unsigned char)s[i];

		if (i == max) {
			if (n + 4 > size)
				break;
			memcpy(buf + n, "...", 3);
			n += 3;
			break;
		}
		if (c < 0x20 || c >= 0x7f || c == '"' || c == '\\') {
			if (n + 5 > size)
				break;
			snprintf(buf + n, 5, "\\x%02x", c);
			n += 4;
		} else {
			buf[n++] = (char)c;
		}
	}
	buf[n] = '\0';
	return buf;
}

bool relay__leap_year(int64_t y)
{
	return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

int relay__days_in_month(int64_t y, int m)
{
	static const int dim[12] = { 31, 28, 31, 30, 31, 30,
				     31, 31, 30, 31, 30, 31 };

	if (m == 2 && relay__leap_year(y))
		return 29;
	return dim[(m - 1) % 12];
}

int64_t relay__days_from_civil(int64_t y, int m, int d)
{
	int64_t era, yoe, doy, doe;

	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = y - era * 400;
	doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

/* ---- string vectors ---------------------------------------------- */

static int strv_take(relay__strv *sv, char *s)
{
	if (!s)
		return RELAY_ENOMEM;
	if (sv->n + 2 > sv->cap) {
		size_t cap = sv->cap ? sv->cap * 2 : 16;
		char **v = relay__realloc(sv->v, cap * sizeof(*v));

		if (!v) {
			relay__free(s);
			return RELAY_ENOMEM;
		}
		sv->v = v;
		sv->cap = cap;
	}
	sv->v[sv->n++] = s;
	sv->v[sv->n] = NULL;
	return 0;
}

int relay__strv_push(relay__strv *sv, const char *s)
{
	return strv_take(sv, relay__strdup(s));
}

int relay__strv_pushf(relay__strv *sv, const char *fmt, ...)
{
	va_list ap;
	char *s = NULL;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (n < 0)
		return RELAY_ENOMEM;
	/* vasprintf used malloc; hand a relay__ copy to the vector. */
	n = relay__strv_push(sv, s);
	free(s);
	return n;
}

void relay__strv_free(relay__strv *sv)
{
	size_t i;

	for (i = 0; i < sv->n; i++)
		relay__free(sv->v[i]);
	relay__free(sv->v);
	memset(sv, 0, sizeof(*sv));
}
