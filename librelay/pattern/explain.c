/*
 * explain.c - relay_pattern_explain(): which alternative of which field
 * made a pattern match (relayctl match --explain). A plain walk of the
 * compiled tree on a decoded event, after relay_pattern_match() said yes;
 * it reports, for every condition on the path that decided the match,
 * the first alternative that holds. relay_pattern_explain_miss() is the
 * other side: the first condition that failed, and the value it saw.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

#include "pattern_int.h"

typedef struct xctx {
	relay_pattern_explain_fn fn;
	void *arg;
	relay_wall_ms now;
	char path[256];
	size_t plen;
} xctx;

static const char *const op_text[] = { ">", ">=", "<", "<=" };

/* Append @s (@n bytes) to @o as a quoted, printable string. */
static void quoted(char *o, size_t size, const char *s, size_t n)
{
	size_t i, k = strlen(o);

	if (k + 2 >= size)
		return;
	o[k++] = '"';
	for (i = 0; i < n && k + 5 < size; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c < 0x20 || c == 0x7f || c == '"' || c == '\\')
			k += (size_t)snprintf(o + k, size - k, "\\x%02x", c);
		else
			o[k++] = (char)c;
	}
	if (i < n && k + 4 < size) {
		memcpy(o + k, "...", 3);
		k += 3;
	}
	o[k++] = '"';
	o[k] = '\0';
}

static void describe(const relay__pat_alt *a, char *o, size_t size);

static void describe_sub(const relay__pat_alt *a, char *o, size_t size)
{
	size_t k;

	snprintf(o, size, "anything-but [");
	for (k = 0; k < a->nsub && k < 4; k++) {
		size_t l = strlen(o);

		describe(&a->sub[k], o + l, size - l);
		if (k + 1 < a->nsub && strlen(o) + 3 < size)
			strcat(o, ", ");
	}
	if (k < a->nsub && strlen(o) + 24 < size)
		snprintf(o + strlen(o), size - strlen(o), "... %zu in all",
			 a->nsub);
	if (strlen(o) + 2 < size)
		strcat(o, "]");
}

static void describe(const relay__pat_alt *a, char *o, size_t size)
{
	char ip[INET6_ADDRSTRLEN];

	o[0] = '\0';
	switch (a->kind) {
	case RELAY__PAT_EQ_STR:
		quoted(o, size, a->str, a->len);
		break;
	case RELAY__PAT_EQ_NUM:
		snprintf(o, size, "%.17g", a->num);
		break;
	case RELAY__PAT_EQ_BOOL:
		snprintf(o, size, "%s", a->boolean ? "true" : "false");
		break;
	case RELAY__PAT_EQ_NULL:
		snprintf(o, size, "null");
		break;
	case RELAY__PAT_PREFIX:
	case RELAY__PAT_SUFFIX:
	case RELAY__PAT_EIC:
	case RELAY__PAT_IPREFIX:
	case RELAY__PAT_ISUFFIX:
	case RELAY__PAT_WILDCARD:
		snprintf(o, size, "%s ",
			 a->kind == RELAY__PAT_PREFIX ? "prefix" :
			 a->kind == RELAY__PAT_SUFFIX ? "suffix" :
			 a->kind == RELAY__PAT_EIC ? "equals-ignore-case" :
			 a->kind == RELAY__PAT_IPREFIX ?
			 "prefix equals-ignore-case" :
			 a->kind == RELAY__PAT_ISUFFIX ?
			 "suffix equals-ignore-case" : "wildcard");
		quoted(o, size, a->str, a->len);
		break;
	case RELAY__PAT_EXISTS:
		snprintf(o, size, "exists %s", a->boolean ? "true" : "false");
		break;
	case RELAY__PAT_CMP_NUM:
		snprintf(o, size, "numeric %s %.17g", op_text[a->op], a->num);
		break;
	case RELAY__PAT_CMP_TIME:
		snprintf(o, size, "time %s now()%+lldms", op_text[a->op],
			 (long long)a->offset_ms);
		break;
	case RELAY__PAT_RANGE:
		snprintf(o, size, "numeric %s %.17g %s %.17g", op_text[a->op],
			 a->num, op_text[a->hi_op], a->hi);
		break;
	case RELAY__PAT_CIDR:
		if (!inet_ntop(a->ipver == 4 ? AF_INET : AF_INET6, a->ip, ip,
			       sizeof(ip)))
			snprintf(ip, sizeof(ip), "?");
		snprintf(o, size, "cidr %s/%u", ip, a->bits);
		break;
	case RELAY__PAT_NOT:
		describe_sub(a, o, size);
		break;
	default:
		snprintf(o, size, "nested map");
		break;
	}
}

/* Append ".name" (or "name" at the root) to the path. */
static size_t push(xctx *x, const char *s, size_t n)
{
	size_t old = x->plen;
	int w;

	if (x->plen && x->plen + 1 < sizeof(x->path))
		x->path[x->plen++] = '.';
	w = snprintf(x->path + x->plen, sizeof(x->path) - x->plen, "%.*s",
		     (int)(n < 60 ? n : 60), s);
	if (w > 0)
		x->plen = x->plen + (size_t)w < sizeof(x->path) ?
			  x->plen + (size_t)w : sizeof(x->path) - 1;
	return old;
}

static void pop(xctx *x, size_t old)
{
	x->plen = old;
	x->path[old] = '\0';
}

static void walk(xctx *x, const relay__pat_map *m, const json_t *obj);

/* Report the first alternative of field @f that holds for value @v. */
static void walk_field(xctx *x, const relay__pat_field *f, const json_t *v)
{
	char what[256];
	size_t j, old;

	for (j = 0; j < f->nalts; j++) {
		const relay__pat_alt *a = &f->alts[j];

		if (!relay__pat_alt_match(a, v, x->now))
			continue;
		old = push(x, f->name, f->name_len);
		if (a->kind == RELAY__PAT_MAP) {
			walk(x, a->map, v);
		} else {
			describe(a, what, sizeof(what));
			snprintf(x->path + x->plen, sizeof(x->path) - x->plen,
				 "[%zu]", j);
			x->fn(x->arg, x->path, j, what);
		}
		pop(x, old);
		return;
	}
}

static void walk(xctx *x, const relay__pat_map *m, const json_t *obj)
{
	const json_t *o = obj && json_is_object(obj) ? obj : NULL;
	char b[32];
	size_t i, old;

	for (i = 0; i < m->nfields; i++)
		walk_field(x, &m->fields[i],
			   o ? json_object_getn(o, m->fields[i].name,
						m->fields[i].name_len) : NULL);
	for (i = 0; i < m->nors; i++) {
		if (!relay__pat_map_match(&m->ors[i], obj, x->now))
			continue;
		snprintf(b, sizeof(b), "$or[%zu]", i);
		old = push(x, b, strlen(b));
		walk(x, &m->ors[i], obj);
		pop(x, old);
		return;
	}
}

int relay_pattern_explain(const relay_pattern *p, const json_t *event,
			  relay_wall_ms now, relay_pattern_explain_fn fn,
			  void *arg)
{
	xctx x;

	if (!relay_pattern_match(p, event, now))
		return 0;
	if (!fn)
		return 1;
	memset(&x, 0, sizeof(x));
	x.fn = fn;
	x.arg = arg;
	x.now = now;
	walk(&x, &p->root, event);
	return 1;
}

/* ---- a miss --------------------------------------------------------- */

/* "a field of the event" as a reader would write it: a string quoted
 * (cut), a number, a literal; objects and arrays by kind. */
static void describe_value(const json_t *v, char *o, size_t size)
{
	o[0] = '\0';
	if (!v)
		snprintf(o, size, "missing");
	else if (json_is_string(v))
		quoted(o, size, json_string_value(v),
		       json_string_length(v) < 80 ? json_string_length(v)
						  : 80);
	else if (json_is_integer(v))
		snprintf(o, size, "%lld", (long long)json_integer_value(v));
	else if (json_is_real(v))
		snprintf(o, size, "%.17g", json_real_value(v));
	else if (json_is_true(v) || json_is_false(v))
		snprintf(o, size, "%s", json_is_true(v) ? "true" : "false");
	else if (json_is_null(v))
		snprintf(o, size, "null");
	else if (json_is_array(v))
		snprintf(o, size, "an array of %zu", json_array_size(v));
	else
		snprintf(o, size, "an object");
}

/* "got X; wanted A or B or ..." for field @f (none of whose alternatives
 * holds for @v). */
static void describe_miss(const relay__pat_field *f, const json_t *v,
			  char *o, size_t size)
{
	size_t j, l;

	snprintf(o, size, "got ");
	l = strlen(o);
	describe_value(v, o + l, size - l);
	if (strlen(o) + 10 < size)
		strcat(o, "; wanted ");
	for (j = 0; j < f->nalts && j < 4; j++) {
		l = strlen(o);
		if (j && l + 5 < size) {
			strcat(o, " or ");
			l += 4;
		}
		describe(&f->alts[j], o + l, size - l);
	}
	if (j < f->nalts && strlen(o) + 24 < size)
		snprintf(o + strlen(o), size - strlen(o), " ... %zu in all",
			 f->nalts);
}

/* The only alternative of @f, when it is a nested map @v may be walked
 * into; else NULL. */
static const relay__pat_map *nested(const relay__pat_field *f,
				    const json_t *v)
{
	if (f->nalts != 1 || f->alts[0].kind != RELAY__PAT_MAP ||
	    !v || !json_is_object(v))
		return NULL;
	return f->alts[0].map;
}

/*
 * The first condition of @m that fails for @obj, reported; into a nested
 * map through its own first failure. An $or none of whose branches holds
 * reports each branch's first failure ("$or[1].b"). Returns 1 when
 * something was reported.
 */
static int miss(xctx *x, const relay__pat_map *m, const json_t *obj)
{
	const json_t *o = obj && json_is_object(obj) ? obj : NULL;
	char what[512], b[32];
	size_t i, j, old;
	int any = 0;

	for (i = 0; i < m->nfields; i++) {
		const relay__pat_field *f = &m->fields[i];
		const json_t *v = o ? json_object_getn(o, f->name,
							f->name_len) : NULL;
		const relay__pat_map *sub;

		for (j = 0; j < f->nalts; j++)
			if (relay__pat_alt_match(&f->alts[j], v, x->now))
				break;
		if (j < f->nalts)
			continue;
		old = push(x, f->name, f->name_len);
		sub = nested(f, v);
		if (!sub || !miss(x, sub, v)) {
			describe_miss(f, v, what, sizeof(what));
			x->fn(x->arg, x->path, 0, what);
		}
		pop(x, old);
		return 1;
	}
	if (m->nors == 0 || relay__pat_map_match(m, obj, x->now))
		return 0;
	for (i = 0; i < m->nors; i++) {
		snprintf(b, sizeof(b), "$or[%zu]", i);
		old = push(x, b, strlen(b));
		any |= miss(x, &m->ors[i], obj);
		pop(x, old);
	}
	return any;
}

int relay_pattern_explain_miss(const relay_pattern *p, const json_t *event,
			       relay_wall_ms now, relay_pattern_explain_fn fn,
			       void *arg)
{
	xctx x;

	if (!p || !event || !json_is_object(event))
		return 0;
	if (relay_pattern_match(p, event, now))
		return 1;
	if (!fn)
		return 0;
	memset(&x, 0, sizeof(x));
	x.fn = fn;
	x.arg = arg;
	x.now = now;
	(void)miss(&x, &p->root, event);
	return 0;
}
