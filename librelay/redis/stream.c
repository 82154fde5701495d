/*
 * stream.c - typed stream operations over relay_redis_command(): the
 * commands the consumer engine and relayctl send (XGROUP CREATE,
 * XREADGROUP, XACK, XADD, XDEL, XRANGE, XAUTOCLAIM, XCLAIM JUSTID,
 * XPENDING), with replies converted to owned C structures before the
 * caller's callback runs. One completion function per result shape; the
 * argument vector is built on the heap because id lists are unbounded.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "common.h"

enum op_kind {
	OP_INT,          /* integer reply */
	OP_GROUP,        /* +OK → 1, BUSYGROUP → 0 */
	OP_RANGE,        /* array of entries */
	OP_READ,         /* XREADGROUP: nil or [[stream, entries]] */
	OP_ID,           /* bulk string → one id */
	OP_IDS,          /* array of ids */
	OP_AUTOCLAIM,
	OP_PENDING,
	OP_PENDING_COUNT,
};

struct op {
	enum op_kind kind;
	union {
		relay_redis_int_cb i;
		relay_redis_entries_cb e;
		relay_redis_ids_cb ids;
		relay_redis_autoclaim_cb a;
		relay_redis_pending_cb p;
	} cb;
	void *payload;
};

void relay_redis_strings_free(char **s, size_t n)
{
	size_t i;

	for (i = 0; s && i < n; i++)
		relay__free(s[i]);
	relay__free(s);
}

void relay_stream_entries_free(relay_stream_entry *e, size_t n)
{
	size_t i;

	for (i = 0; e && i < n; i++) {
		relay__free(e[i].id);
		relay_redis_strings_free(e[i].names, e[i].nfields);
		relay_redis_strings_free(e[i].values, e[i].nfields);
		relay__free(e[i].value_lens);
	}
	relay__free(e);
}

const char *relay_stream_entry_get(const relay_stream_entry *e,
				   const char *name, size_t *len)
{
	size_t i;

	for (i = 0; i < e->nfields; i++) {
		if (strcmp(e->names[i], name) == 0) {
			if (len)
				*len = e->value_lens[i];
			return e->values[i];
		}
	}
	return NULL;
}

static int is_str(const relay_redis_reply *r)
{
	return r && r->type == RELAY_REDIS_REPLY_STRING;
}

static int entry_parse(relay_stream_entry *e, const relay_redis_reply *r)
{
	const relay_redis_reply *f;
	size_t i;

	if (!r || r->type != RELAY_REDIS_REPLY_ARRAY || r->elements != 2 ||
	    !is_str(r->element[0]))
		return RELAY_EPARSE;
	e->id = relay__strndup(r->element[0]->str, r->element[0]->len);
	if (!e->id)
		return RELAY_ENOMEM;
	f = r->element[1];
	if (f->type == RELAY_REDIS_REPLY_NIL) {
		e->deleted = 1;
		return 0;
	}
	if (f->type != RELAY_REDIS_REPLY_ARRAY || f->elements % 2)
		return RELAY_EPARSE;
	e->nfields = f->elements / 2;
	e->names = relay__calloc(e->nfields + 1, sizeof(*e->names));
	e->values = relay__calloc(e->nfields + 1, sizeof(*e->values));
	e->value_lens = relay__calloc(e->nfields + 1, sizeof(*e->value_lens));
	if (!e->names || !e->values || !e->value_lens)
		return RELAY_ENOMEM;
	for (i = 0; i < e->nfields; i++) {
		const relay_redis_reply *n = f->element[2 * i];
		const relay_redis_reply *v = f->element[2 * i + 1];

		if (!is_str(n) || !is_str(v))
			return RELAY_EPARSE;
		e->names[i] = relay__strndup(n->str, n->len);
		e->values[i] = relay__strndup(v->str, v->len);
		e->value_lens[i] = v->len;
		if (!e->names[i] || !e->values[i])
			return RELAY_ENOMEM;
	}
	return 0;
}

int relay_stream_entries_parse(const relay_redis_reply *r,
			       relay_stream_entry **out, size_t *n)
{
	relay_stream_entry *e;
	size_t i;
	int rc = 0;

	*out = NULL;
	*n = 0;
	if (!r || r->type != RELAY_REDIS_REPLY_ARRAY)
		return RELAY_EPARSE;
	e = relay__calloc(r->elements ? r->elements : 1, sizeof(*e));
	if (!e)
		return RELAY_ENOMEM;
	for (i = 0; i < r->elements && rc == 0; i++)
		rc = entry_parse(&e[i], r->element[i]);
	if (rc) {
		relay_stream_entries_free(e, r->elements);
		return rc;
	}
	*out = e;
	*n = r->elements;
	return 0;
}

static int ids_parse(const relay_redis_reply *r, char ***out, size_t *n)
{
	char **ids;
	size_t i;

	*out = NULL;
	*n = 0;
	if (!r || r->type != RELAY_REDIS_REPLY_ARRAY)
		return RELAY_EPARSE;
	ids = relay__calloc(r->elements ? r->elements : 1, sizeof(*ids));
	if (!ids)
		return RELAY_ENOMEM;
	for (i = 0; i < r->elements; i++) {
		if (!is_str(r->element[i]) ||
		    !(ids[i] = relay__strdup(r->element[i]->str))) {
			relay_redis_strings_free(ids, r->elements);
			return is_str(r->element[i]) ? RELAY_ENOMEM
						     : RELAY_EPARSE;
		}
	}
	*out = ids;
	*n = r->elements;
	return 0;
}

void relay_autoclaim_free(relay_autoclaim *a)
{
	if (!a)
		return;
	relay__free(a->next);
	relay_stream_entries_free(a->entries, a->n);
	relay_redis_strings_free(a->deleted, a->ndeleted);
	relay__free(a);
}

void relay_pending_free(relay_pending *p, size_t n)
{
	size_t i;

	for (i = 0; p && i < n; i++) {
		relay__free(p[i].id);
		relay__free(p[i].consumer);
	}
	relay__free(p);
}

/* [cursor, entries-or-ids, deleted-ids] (Redis 7). */
static int autoclaim_parse(const relay_redis_reply *r, relay_autoclaim **out)
{
	relay_autoclaim *a;
	int rc;

	*out = NULL;
	if (!r || r->type != RELAY_REDIS_REPLY_ARRAY || r->elements != 3 ||
	    !is_str(r->element[0]))
		return RELAY_EPARSE;
	a = relay__calloc(1, sizeof(*a));
	if (!a)
		return RELAY_ENOMEM;
	a->next = relay__strdup(r->element[0]->str);
	rc = a->next ? 0 : RELAY_ENOMEM;
	if (rc == 0)
		rc = relay_stream_entries_parse(r->element[1], &a->entries,
						&a->n);
	if (rc == RELAY_EPARSE) {
		/* JUSTID form: ids only */
		char **ids;
		size_t n, i;

		rc = ids_parse(r->element[1], &ids, &n);
		if (rc == 0) {
			a->entries = relay__calloc(n ? n : 1,
						   sizeof(*a->entries));
			rc = a->entries ? 0 : RELAY_ENOMEM;
			for (i = 0; rc == 0 && i < n; i++)
				a->entries[i].id = ids[i];
			a->n = rc == 0 ? n : 0;
			if (rc)
				relay_redis_strings_free(ids, n);
			else
				relay__free(ids);
		}
	}
	if (rc == 0)
		rc = ids_parse(r->element[2], &a->deleted, &a->ndeleted);
	if (rc) {
		relay_autoclaim_free(a);
		return rc;
	}
	*out = a;
	return 0;
}

static int pending_parse(const relay_redis_reply *r, relay_pending **out,
			 size_t *n)
{
	relay_pending *p;
	size_t i;

	*out = NULL;
	*n = 0;
	if (!r || r->type != RELAY_REDIS_REPLY_ARRAY)
		return RELAY_EPARSE;
	p = relay__calloc(r->elements ? r->elements : 1, sizeof(*p));
	if (!p)
		return RELAY_ENOMEM;
	for (i = 0; i < r->elements; i++) {
		const relay_redis_reply *e = r->element[i];

		if (e->type != RELAY_REDIS_REPLY_ARRAY || e->elements != 4 ||
		    !is_str(e->element[0]) || !is_str(e->element[1]) ||
		    e->element[2]->type != RELAY_REDIS_REPLY_INTEGER ||
		    e->element[3]->type != RELAY_REDIS_REPLY_INTEGER) {
			relay_pending_free(p, r->elements);
			return RELAY_EPARSE;
		}
		p[i].id = relay__strdup(e->element[0]->str);
		p[i].consumer = relay__strdup(e->element[1]->str);
		p[i].idle_ms = e->element[2]->integer;
		p[i].deliveries = e->element[3]->integer;
		if (!p[i].id || !p[i].consumer) {
			relay_pending_free(p, r->elements);
			return RELAY_ENOMEM;
		}
	}
	*out = p;
	*n = r->elements;
	return 0;
}

static int error_status(const relay_redis_reply *r)
{
	if (!r || r->type != RELAY_REDIS_REPLY_ERROR)
		return 0;
	if (strncmp(r->str, "NOGROUP", 7) == 0)
		return RELAY_ENOTFOUND;
	return relay_redis_reply_error(r);
}

static void complete_int(struct op *op, relay_redis_backend *b, int status,
			 const relay_redis_reply *r)
{
	long long v = 0;

	if (status == 0 && op->kind == OP_GROUP) {
		if (r->type == RELAY_REDIS_REPLY_ERROR &&
		    strncmp(r->str, "BUSYGROUP", 9) == 0)
			v = 0;
		else if ((status = error_status(r)) == 0)
			v = 1;
	} else if (status == 0 && (status = error_status(r)) == 0) {
		if (op->kind == OP_PENDING_COUNT &&
		    r->type == RELAY_REDIS_REPLY_ARRAY && r->elements >= 1 &&
		    r->element[0]->type == RELAY_REDIS_REPLY_INTEGER)
			v = r->element[0]->integer;
		else if (op->kind == OP_INT &&
			 r->type == RELAY_REDIS_REPLY_INTEGER)
			v = r->integer;
		else
			status = RELAY_EPARSE;
	}
	op->cb.i(b, status, status ? 0 : v, op->payload);
}

static void complete_entries(struct op *op, relay_redis_backend *b,
			     int status, const relay_redis_reply *r)
{
	relay_stream_entry *e = NULL;
	size_t n = 0;

	if (status == 0)
		status = error_status(r);
	if (status == 0 && op->kind == OP_READ) {
		/* nil (nothing new) or [[stream, entries]] */
		if (r->type == RELAY_REDIS_REPLY_NIL)
			r = NULL;
		else if (r->type == RELAY_REDIS_REPLY_ARRAY &&
			 r->elements == 1 &&
			 r->element[0]->type == RELAY_REDIS_REPLY_ARRAY &&
			 r->element[0]->elements == 2)
			r = r->element[0]->element[1];
		else
			status = RELAY_EPARSE;
	}
	if (status == 0 && r)
		status = relay_stream_entries_parse(r, &e, &n);
	op->cb.e(b, status, e, n, op->payload);
}

static void complete_ids(struct op *op, relay_redis_backend *b, int status,
			 const relay_redis_reply *r)
{
	char **ids = NULL;
	size_t n = 0;

	if (status == 0)
		status = error_status(r);
	if (status == 0 && op->kind == OP_ID) {
		ids = relay__calloc(1, sizeof(*ids));
		if (!is_str(r))
			status = RELAY_EPARSE;
		else if (!ids || !(ids[0] = relay__strdup(r->str)))
			status = RELAY_ENOMEM;
		else
			n = 1;
		if (status) {
			relay__free(ids);
			ids = NULL;
		}
	} else if (status == 0) {
		status = ids_parse(r, &ids, &n);
	}
	op->cb.ids(b, status, ids, n, op->payload);
}

static void on_reply(relay_redis_backend *b, int status,
		     relay_redis_reply *r, void *payload)
{
	struct op *op = payload;

	switch (op->kind) {
	case OP_INT:
	case OP_GROUP:
	case OP_PENDING_COUNT:
		complete_int(op, b, status, r);
		break;
	case OP_RANGE:
	case OP_READ:
		complete_entries(op, b, status, r);
		break;
	case OP_ID:
	case OP_IDS:
		complete_ids(op, b, status, r);
		break;
	case OP_AUTOCLAIM: {
		relay_autoclaim *a = NULL;

		if (status == 0)
			status = error_status(r);
		if (status == 0)
			status = autoclaim_parse(r, &a);
		op->cb.a(b, status, a, op->payload);
		break;
	}
	case OP_PENDING: {
		relay_pending *p = NULL;
		size_t n = 0;

		if (status == 0)
			status = error_status(r);
		if (status == 0)
			status = pending_parse(r, &p, &n);
		op->cb.p(b, status, p, n, op->payload);
		break;
	}
	}
	relay_redis_reply_free(r);
	relay__free(op);
}

/* A growable argument vector with storage for formatted numbers. */
struct args {
	const char **v;
	size_t *len;
	int n, cap;
	char num[4][24];
	int nnum;
	int oom;
};

static void push(struct args *a, const char *s, size_t len)
{
	if (a->oom)
		return;
	if (a->n == a->cap) {
		int cap = a->cap ? 2 * a->cap : 16;
		const char **v = relay__realloc(a->v, (size_t)cap * sizeof(*v));
		size_t *l;

		if (v)
			a->v = v;
		l = v ? relay__realloc(a->len, (size_t)cap * sizeof(*l)) : NULL;
		if (!v || !l) {
			a->oom = 1;
			return;
		}
		a->len = l;
		a->cap = cap;
	}
	a->v[a->n] = s;
	a->len[a->n++] = len;
}

static void push_s(struct args *a, const char *s)
{
	push(a, s, strlen(s));
}

static void push_num(struct args *a, long long v)
{
	char *buf = a->num[a->nnum++];

	snprintf(buf, sizeof(a->num[0]), "%lld", v);
	push_s(a, buf);
}

static int send_args(relay_redis_backend *b, struct args *a,
		     struct op *op)
{
	int rc = RELAY_ENOMEM;

	if (!a->oom && op)
		rc = relay_redis_command(b, a->n, a->v, a->len, on_reply, op);
	if (rc)
		relay__free(op);
	relay__free(a->v);
	relay__free(a->len);
	return rc;
}

static struct op *op_new(enum op_kind kind, void *payload)
{
	struct op *op = relay__calloc(1, sizeof(*op));

	if (op) {
		op->kind = kind;
		op->payload = payload;
	}
	return op;
}

#define NEED(x) do { if (!(x)) return RELAY_EINVAL; } while (0)

int relay_redis_group_create(relay_redis_backend *b, const char *stream,
			     const char *group, const char *start,
			     relay_redis_int_cb cb, void *payload)
{
	struct args a = { 0 };
	struct op *op;

	NEED(b && stream && group && cb);
	op = op_new(OP_GROUP, payload);
	if (op)
		op->cb.i = cb;
	push_s(&a, "XGROUP");
	push_s(&a, "CREATE");
	push_s(&a, stream);
	push_s(&a, group);
	push_s(&a, start ? start : "0");
	push_s(&a, "MKSTREAM");
	return send_args(b, &a, op);
}

int relay_redis_xreadgroup(relay_redis_backend *b, const char *stream,
			   const char *group, const char *consumer,
			   size_t count, int block_ms, const char *id,
			   relay_redis_entries_cb cb, void *payload)
{
	struct args a = { 0 };
	struct op *op;

	NEED(b && stream && group && consumer && count && cb);
	op = op_new(OP_READ, payload);
	if (op)
		op->cb.e = cb;
	push_s(&a, "XREADGROUP");
	push_s(&a, "GROUP");
	push_s(&a, group);
	push_s(&a, consumer);
	push_s(&a, "COUNT");
	push_num(&a, (long long)count);
	if (block_ms >= 0) {
		push_s(&a, "BLOCK");
		push_num(&a, block_ms);
	}
	push_s(&a, "STREAMS");
	push_s(&a, stream);
	push_s(&a, id ? id : ">");
	return send_args(b, &a, op);
}

static int id_list_cmd(relay_redis_backend *b, const char *cmd,
		       const char *stream, const char *group,
		       const char *const *ids, size_t nids,
		       relay_redis_int_cb cb, void *payload)
{
	struct args a = { 0 };
	struct op *op;
	size_t i;

	NEED(b && stream && ids && nids && cb);
	op = op_new(OP_INT, payload);
	if (op)
		op->cb.i = cb;
	push_s(&a, cmd);
	push_s(&a, stream);
	if (group)
		push_s(&a, group);
	for (i = 0; i < nids; i++)
		push_s(&a, ids[i]);
	return send_args(b, &a, op);
}

int relay_redis_xack(relay_redis_backend *b, const char *stream,
		     const char *group, const char *const *ids, size_t nids,
		     relay_redis_int_cb cb, void *payload)
{
	NEED(group);
	return id_list_cmd(b, "XACK", stream, group, ids, nids, cb, payload);
}

int relay_redis_xdel(relay_redis_backend *b, const char *stream,
		     const char *const *ids, size_t nids,
		     relay_redis_int_cb cb, void *payload)
{
	return id_list_cmd(b, "XDEL", stream, NULL, ids, nids, cb, payload);
}

int relay_redis_xadd(relay_redis_backend *b, const char *stream,
		     size_t nfields, const char *const *names,
		     const char *const *values, const size_t *value_lens,
		     relay_redis_ids_cb cb, void *payload)
{
	struct args a = { 0 };
	struct op *op;
	size_t i;

	NEED(b && stream && nfields && names && values && cb);
	op = op_new(OP_ID, payload);
	if (op)
		op->cb.ids = cb;
	push_s(&a, "XADD");
	push_s(&a, stream);
	push_s(&a, "*");
	for (i = 0; i < nfields; i++) {
		push_s(&a, names[i]);
		push(&a, values[i],
		     value_lens ? value_lens[i] : strlen(values[i]));
	}
	return send_args(b, &a, op);
}

int relay_redis_xrange(relay_redis_backend *b, const char *stream,
		       const char *start, const char *end, size_t count,
		       relay_redis_entries_cb cb, void *payload)
{
	struct args a = { 0 };
	struct op *op;

	NEED(b && stream && count && cb);
	op = op_new(OP_RANGE, payload);
	if (op)
		op->cb.e = cb;
	push_s(&a, "XRANGE");
	push_s(&a, stream);
	push_s(&a, start ? start : "-");
	push_s(&a, end ? end : "+");
	push_s(&a, "COUNT");
	push_num(&a, (long long)count);
	return send_args(b, &a, op);
}

int relay_redis_xautoclaim(relay_redis_backend *b, const char *stream,
			   const char *group, const char *consumer,
			   int64_t min_idle_ms, const char *start,
			   size_t count, relay_redis_autoclaim_cb cb,
			   void *payload)
{
	struct args a = { 0 };
	struct op *op;

	NEED(b && stream && group && consumer && count && min_idle_ms >= 0 &&
	     cb);
	op = op_new(OP_AUTOCLAIM, payload);
	if (op)
		op->cb.a = cb;
	push_s(&a, "XAUTOCLAIM");
	push_s(&a, stream);
	push_s(&a, group);
	push_s(&a, consumer);
	push_num(&a, min_idle_ms);
	push_s(&a, start ? start : "0-0");
	push_s(&a, "COUNT");
	push_num(&a, (long long)count);
	return send_args(b, &a, op);
}

int relay_redis_xclaim_justid(relay_redis_backend *b, const char *stream,
			      const char *group, const char *consumer,
			      int64_t min_idle_ms, const char *const *ids,
			      size_t nids, relay_redis_ids_cb cb,
			      void *payload)
{
	struct args a = { 0 };
	struct op *op;
	size_t i;

	NEED(b && stream && group && consumer && ids && nids &&
	     min_idle_ms >= 0 && cb);
	op = op_new(OP_IDS, payload);
	if (op)
		op->cb.ids = cb;
	push_s(&a, "XCLAIM");
	push_s(&a, stream);
	push_s(&a, group);
	push_s(&a, consumer);
	push_num(&a, min_idle_ms);
	for (i = 0; i < nids; i++)
		push_s(&a, ids[i]);
	push_s(&a, "JUSTID");
	return send_args(b, &a, op);
}

int relay_redis_xpending(relay_redis_backend *b, const char *stream,
			 const char *group, int64_t min_idle_ms,
			 const char *start, const char *end, size_t count,
			 const char *consumer, relay_redis_pending_cb cb,
			 void *payload)
{
	struct args a = { 0 };
	struct op *op;

	NEED(b && stream && group && count && min_idle_ms >= 0 && cb);
	op = op_new(OP_PENDING, payload);
	if (op)
		op->cb.p = cb;
	push_s(&a, "XPENDING");
	push_s(&a, stream);
	push_s(&a, group);
	if (min_idle_ms > 0) {
		push_s(&a, "IDLE");
		push_num(&a, min_idle_ms);
	}
	push_s(&a, start ? start : "-");
	push_s(&a, end ? end : "+");
	push_num(&a, (long long)count);
	if (consumer)
		push_s(&a, consumer);
	return send_args(b, &a, op);
}

int relay_redis_xpending_count(relay_redis_backend *b, const char *stream,
			       const char *group, relay_redis_int_cb cb,
			       void *payload)
{
	struct args a = { 0 };
	struct op *op;

	NEED(b && stream && group && cb);
	op = op_new(OP_PENDING_COUNT, payload);
	if (op)
		op->cb.i = cb;
	push_s(&a, "XPENDING");
	push_s(&a, stream);
	push_s(&a, group);
	return send_args(b, &a, op);
}
