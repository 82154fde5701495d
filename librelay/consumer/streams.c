/*
 * streams.c - several streams (partitions) in one REDIS_STREAM value, and
 * the partition a key belongs to (relay/engine.h,
 * relay_stream_list_parse(), relay_stream_partition()).
 *
 * The syntax (doc/configuration.md C-2, REDIS_STREAM): a comma-separated
 * list of elements, blanks around an element ignored; an element is a
 * stream name, or PREFIX{A..B} (decimal A <= B) standing for the streams
 * PREFIX:{pA} ... PREFIX:{pB}, each in its own hash tag (that shape with
 * other bounds is an error). A value without
 * a comma and without that shorthand is one stream, taken verbatim.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "relay/engine.h"

void relay_stream_list_free(char **list)
{
	size_t i;

	if (!list)
		return;
	for (i = 0; list[i]; i++)
		relay__free(list[i]);
	relay__free(list);
}

typedef struct list {
	char **v;
	size_t n;
} list;

static int push(list *l, char *s)
{
	char **v;

	if (!s)
		return RELAY_ENOMEM;
	v = relay__realloc(l->v, (l->n + 2) * sizeof(*v));
	if (!v) {
		relay__free(s);
		return RELAY_ENOMEM;
	}
	l->v = v;
	v[l->n++] = s;
	v[l->n] = NULL;
	return 0;
}

/* A decimal of at most 4 digits in [s, e); -1 if not. */
static long dec(const char *s, const char *e)
{
	long v = 0;

	if (s == e || e - s > 4)
		return -1;
	for (; s < e; s++) {
		if (!isdigit((unsigned char)*s))
			return -1;
		v = v * 10 + (*s - '0');
	}
	return v;
}

/*
 * Whether [s, s + n) has the shape PREFIX{X..Y} (a '{' after the first
 * byte, "..", a final '}'): then it must be the shorthand.
 */
static const char *range_open(const char *s, size_t n)
{
	const char *open, *end = s + n;

	if (n < 5 || end[-1] != '}')
		return NULL;
	for (open = end - 2; open > s && *open != '{'; open--)
		;
	if (open <= s || *open != '{')
		return NULL;
	for (const char *p = open + 1; p + 1 < end - 1; p++)
		if (p[0] == '.' && p[1] == '.')
			return open;
	return NULL;
}

/* PREFIX{A..B} at @open: set the prefix length and A, B; 0 or -1. */
static int shorthand(const char *s, size_t n, const char *open, size_t *plen,
		     long *a, long *b)
{
	const char *end = s + n, *dots = strstr(open, "..");

	*a = dec(open + 1, dots);
	*b = dec(dots + 2, end - 1);
	if (*a < 0 || *b < 0)
		return -1;
	*plen = (size_t)(open - s);
	return 0;
}

static int element(list *l, const char *s, size_t n, relay_error *err)
{
	const char *open;
	size_t plen, i;
	long a, b, k;
	int rc;

	for (i = 0; i < n; i++)
		if ((unsigned char)s[i] <= ' ' || s[i] == 0x7f)
			return relay__error_set(err, RELAY_EINVAL, NULL, 0, 0,
				"stream name \"%.*s\" contains a blank or "
				"control character", (int)n, s);
	open = range_open(s, n);
	if (!open)
		return push(l, relay__strndup(s, n));
	if (shorthand(s, n, open, &plen, &a, &b))
		return relay__error_set(err, RELAY_EINVAL, NULL, 0, 0,
			"\"%.*s\": expected PREFIX{A..B} with decimal A and "
			"B of at most 4 digits", (int)n, s);
	if (a > b)
		return relay__error_set(err, RELAY_EINVAL, NULL, 0, 0,
			"\"%.*s\": the range {A..B} needs A <= B", (int)n, s);
	if (b - a + 1 > RELAY_STREAM_LIST_MAX)
		return relay__error_set(err, RELAY_EINVAL, NULL, 0, 0,
			"\"%.*s\": more than %d partitions", (int)n, s,
			RELAY_STREAM_LIST_MAX);
	for (k = a; k <= b; k++) {
		char *name = relay__malloc(plen + 16);

		if (!name)
			return RELAY_ENOMEM;
		memcpy(name, s, plen);
		snprintf(name + plen, 16, ":{p%ld}", k);
		rc = push(l, name);
		if (rc)
			return rc;
	}
	return 0;
}

int relay_stream_list_parse(const char *spec, char ***out, size_t *count,
			    relay_error *err)
{
	list l = { NULL, 0 };
	const char *p, *e;
	size_t i, j;
	int rc = 0;

	if (!out)
		return RELAY_EINVAL;
	*out = NULL;
	if (count)
		*count = 0;
	if (!spec || !*spec)
		return relay__error_set(err, RELAY_EINVAL, NULL, 0, 0,
					"no stream named");
	if (!strchr(spec, ',')) {
		if (!range_open(spec, strlen(spec))) {
			/* One stream, verbatim (as before lists existed). */
			rc = push(&l, relay__strdup(spec));
			if (rc)
				goto fail;
			*out = l.v;
			if (count)
				*count = 1;
			return 0;
		}
	}
	for (p = spec;; p = e + 1) {
		const char *s, *t;

		e = strchr(p, ',');
		if (!e)
			e = p + strlen(p);
		for (s = p; s < e && (*s == ' ' || *s == '\t'); s++)
			;
		for (t = e; t > s && (t[-1] == ' ' || t[-1] == '\t'); t--)
			;
		if (s == t) {
			rc = relay__error_set(err, RELAY_EINVAL, NULL, 0, 0,
				"empty stream name in the list (element %zu)",
				l.n + 1);
			goto fail;
		}
		rc = element(&l, s, (size_t)(t - s), err);
		if (rc)
			goto fail;
		if (l.n > RELAY_STREAM_LIST_MAX) {
			rc = relay__error_set(err, RELAY_EINVAL, NULL, 0, 0,
				"more than %d streams",
				RELAY_STREAM_LIST_MAX);
			goto fail;
		}
		if (!*e)
			break;
	}
	for (i = 0; i < l.n; i++)
		for (j = i + 1; j < l.n; j++)
			if (strcmp(l.v[i], l.v[j]) == 0) {
				rc = relay__error_set(err, RELAY_EINVAL, NULL,
					0, 0, "stream \"%s\" named twice",
					l.v[i]);
				goto fail;
			}
	*out = l.v;
	if (count)
		*count = l.n;
	return 0;
fail:
	if (rc == RELAY_ENOMEM)
		relay__error_set(err, rc, NULL, 0, 0, "out of memory");
	relay_stream_list_free(l.v);
	return rc;
}

uint32_t relay_stream_hash(const void *key, size_t len)
{
	const unsigned char *p = key;
	uint32_t h = 2166136261u;
	size_t i;

	for (i = 0; i < len; i++) {
		h ^= p[i];
		h *= 16777619u;
	}
	return h;
}

size_t relay_stream_partition(const void *key, size_t len, size_t n)
{
	return n ? relay_stream_hash(key, len) % n : 0;
}
