/*
 * span.c - deep copies of relay_span records.
 *
 * An exporter queues spans after the caller's record is gone, so it keeps
 * one copy per span: the struct, its attribute and link arrays and every
 * string in one allocation (one free, and its size is the memory the
 * queue holds).
 */
#include <string.h>

#include "relay/trace.h"
#include "common.h"

typedef struct arena {
	char *p;        /* NULL: measuring */
	size_t n;
} arena;

static void *take(arena *a, size_t size, size_t align)
{
	void *r;

	a->n = (a->n + align - 1) / align * align;
	r = a->p ? a->p + a->n : NULL;
	a->n += size;
	return r;
}

static const char *str(arena *a, const char *s)
{
	size_t n;
	char *d;

	if (!s)
		return NULL;
	n = strlen(s) + 1;
	d = take(a, n, 1);
	if (d)
		memcpy(d, s, n);
	return d;
}

static relay_trace_attr *attrs(arena *a, const relay_trace_attr *src,
			       size_t n)
{
	relay_trace_attr *d = take(a, n * sizeof(*d),
				   _Alignof(relay_trace_attr));
	size_t i;

	for (i = 0; i < n; i++) {
		const char *k = str(a, src[i].key);
		const char *s = src[i].type == RELAY_TRACE_ATTR_STRING ?
				str(a, src[i].s) : NULL;

		if (d) {
			d[i] = src[i];
			d[i].key = k;
			d[i].s = s;
		}
	}
	return d;
}

/* One pass that measures (a->p NULL) or copies. */
static relay_span *copy(arena *a, const relay_span *s)
{
	relay_span *d = take(a, sizeof(*d), _Alignof(relay_span));
	relay_span_link *l = take(a, s->nlinks * sizeof(*l),
				  _Alignof(relay_span_link));
	relay_trace_attr *at = attrs(a, s->attrs, s->nattrs);
	const char *name = str(a, s->name), *ts = str(a, s->tracestate);
	const char *msg = str(a, s->status_message);
	size_t i;

	for (i = 0; i < s->nlinks; i++) {
		relay_trace_attr *la = attrs(a, s->links[i].attrs,
					     s->links[i].nattrs);
		const char *lts = str(a, s->links[i].tracestate);

		if (l) {
			l[i] = s->links[i];
			l[i].attrs = la;
			l[i].tracestate = lts;
		}
	}
	if (d) {
		*d = *s;
		d->version = RELAY_SPAN_VERSION;
		d->name = name;
		d->tracestate = ts;
		d->status_message = msg;
		d->attrs = s->nattrs ? at : NULL;
		d->links = s->nlinks ? l : NULL;
	}
	return d;
}

int relay_span_dup(relay_span **out, const relay_span *s, size_t *size)
{
	arena a = { NULL, 0 };

	*out = NULL;
	if (!s || s->version < 1 || s->version > RELAY_SPAN_VERSION ||
	    !s->name)
		return RELAY_EINVAL;
	copy(&a, s);
	a.p = relay__malloc(a.n);
	if (!a.p)
		return RELAY_ENOMEM;
	if (size)
		*size = a.n;
	a.n = 0;
	*out = copy(&a, s);
	return 0;
}

void relay_span_free(relay_span *s)
{
	relay__free(s);
}
