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
 *
 * Refused besides: a shorthand whose PREFIX already holds a hash tag (the
 * partitions would all share it, one cluster slot), and a listed name
 * that is one of the keys Relay derives from another listed stream
 * (relay:<S>:..., relay:invocation:<E(S)>:..., doc/redis-layout.md), since
 * Relay would then write, trim or type-check the other stream's data.
 * Names in error texts are escaped (relay__escape()): a value from the
 * environment may hold terminal control bytes.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "relay/engine.h"
#include "relay/invocation.h"

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

/* [s, s + n) quoted safely for an error text (at most 64 bytes shown). */
static const char *esc(const char *s, size_t n, char *buf, size_t size)
{
	char tmp[65];

	if (n > 64)
		n = 64;
	memcpy(tmp, s, n);
	tmp[n] = '\0';
	return relay__escape(tmp, 64, buf, size);
}

/* The offset of @name's Redis Cluster hash tag's '{' (the first '{' with
 * a '}' after it and something between), or -1 when there is none. */
static long hash_tag_at(const char *name)
{
	const char *open = strchr(name, '{'), *close;

	if (!open)
		return -1;
	close = strchr(open + 1, '}');
	if (!close || close == open + 1)
		return -1;
	return (long)(open - name);
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
	char e[300];
	size_t plen, i;
	long a, b, k;
	int rc;

	for (i = 0; i < n; i++)
		if ((unsigned char)s[i] <= ' ' || s[i] == 0x7f)
			return relay__error_set(err, RELAY_EINVAL, NULL, 0, 0,
				"stream name \"%s\" contains a blank or "
				"control character", esc(s, n, e, sizeof(e)));
	open = range_open(s, n);
	if (!open)
		return push(l, relay__strndup(s, n));
	if (shorthand(s, n, open, &plen, &a, &b))
		return relay__error_set(err, RELAY_EINVAL, NULL, 0, 0,
			"\"%s\": expected PREFIX{A..B} with decimal A and "
			"B of at most 4 digits", esc(s, n, e, sizeof(e)));
	if (a > b)
		return relay__error_set(err, RELAY_EINVAL, NULL, 0, 0,
			"\"%s\": the range {A..B} needs A <= B",
			esc(s, n, e, sizeof(e)));
	if (b - a + 1 > RELAY_STREAM_LIST_MAX)
		return relay__error_set(err, RELAY_EINVAL, NULL, 0, 0,
			"\"%s\": more than %d partitions",
			esc(s, n, e, sizeof(e)), RELAY_STREAM_LIST_MAX);
	for (k = a; k <= b; k++) {
		char *name = relay__malloc(plen + 32);

		if (!name)
			return RELAY_ENOMEM;
		memcpy(name, s, plen);
		snprintf(name + plen, 32, ":{p%ld}", k);
		/* Each partition's own tag {pN} must be the one Redis
		 * Cluster hashes: a tag in PREFIX would come first and put
		 * every partition in one slot. */
		if (hash_tag_at(name) != (long)plen + 1) {
			relay__free(name);
			return relay__error_set(err, RELAY_EINVAL, NULL, 0, 0,
				"\"%s\": PREFIX already holds a hash tag "
				"(\"{...}\"), so on a Redis Cluster every "
				"partition would hash to it and share one "
				"slot; use a prefix without braces, or list "
				"the streams by name",
				esc(s, n, e, sizeof(e)));
		}
		rc = push(l, name);
		if (rc)
			return rc;
	}
	return 0;
}

/* Whether @t starts with @p. */
static int starts(const char *t, const char *p)
{
	return strncmp(t, p, strlen(p)) == 0;
}

/*
 * Whether stream @t is one of the keys Relay derives from stream @s: the
 * "relay:<s>:" space (the DLQ relay:<s>:dlq, schedule markers) or the
 * state hashes relay:invocation:<E(s)>:<group>:<id>. Returns 0, 1, or
 * RELAY_ENOMEM.
 */
static int owned_by(const char *t, const char *s)
{
	char *dlq = relay__sprintf("relay:%s:", s);
	char *inv = relay_inv_key(s, "", "");
	int hit;

	if (!dlq || !inv) {
		relay__free(dlq);
		relay__free(inv);
		return RELAY_ENOMEM;
	}
	/* relay_inv_key(s, "", "") is "relay:invocation:<E(s)>::". */
	inv[strlen(inv) - 1] = '\0';
	hit = starts(t, dlq) || starts(t, inv);
	relay__free(dlq);
	relay__free(inv);
	return hit;
}

/* Refuse a list where one stream is another's Relay-owned key. */
static int check_owned(char **v, size_t n, relay_error *err)
{
	char e1[300], e2[300];
	size_t i, j;
	int hit;

	for (i = 0; i < n; i++)
		for (j = 0; j < n; j++) {
			if (i == j)
				continue;
			hit = owned_by(v[i], v[j]);
			if (hit < 0)
				return hit;
			if (hit)
				return relay__error_set(err, RELAY_EINVAL,
					NULL, 0, 0, "stream \"%s\" is a key "
					"Relay keeps for stream \"%s\" (its "
					"DLQ relay:<stream>:dlq, schedule "
					"markers or state hashes); name it "
					"otherwise",
					esc(v[i], strlen(v[i]), e1,
					    sizeof(e1)),
					esc(v[j], strlen(v[j]), e2,
					    sizeof(e2)));
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
				char en[300];

				rc = relay__error_set(err, RELAY_EINVAL, NULL,
					0, 0, "stream \"%s\" named twice",
					esc(l.v[i], strlen(l.v[i]), en,
					    sizeof(en)));
				goto fail;
			}
	rc = check_owned(l.v, l.n, err);
	if (rc)
		goto fail;
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
