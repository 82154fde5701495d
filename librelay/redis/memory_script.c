/*
 * memory_script.c - the invocation-state transitions of the memory
 * backend: the C twin of the scripts in librelay/lua/. Each function
 * reads the hash like the script does (HMGET), asks the pure decision in
 * inv.c, and writes like the script does (HSET + PERSIST). Keep the
 * order of checks the same as the Lua: wrong type, retained, then the
 * decision.
 */
#include <stdio.h>
#include <string.h>

#include "common.h"
#include "inv.h"
#include "memory.h"

static relay_redis_reply *reply4(const char *result, long long attempt,
				 long long deadline, const char *token)
{
	relay_redis_reply *r = relay__reply_array(4);

	if (!r)
		return NULL;
	r->element[0] = relay__reply_str(RELAY_REDIS_REPLY_STRING, result,
					 strlen(result));
	r->element[1] = relay__reply_int(attempt);
	r->element[2] = relay__reply_int(deadline);
	r->element[3] = relay__reply_str(RELAY_REDIS_REPLY_STRING, token,
					 strlen(token));
	if (!r->element[0] || !r->element[1] || !r->element[2] ||
	    !r->element[3]) {
		relay_redis_reply_free(r);
		return NULL;
	}
	return r;
}

static relay_redis_reply *outcome_reply(const relay_inv_outcome *o)
{
	const char *name = relay__inv_result_wire(o->result);

	if (o->result == RELAY_INV_R_EXHAUSTED && o->dlq)
		name = "exhausted_dlq";
	return reply4(name, o->attempt, o->deadline_ms, o->token);
}

static relay_redis_reply *wrongtype(void)
{
	return relay__reply_errorf("WRONGTYPE Operation against a key holding "
				   "the wrong kind of value");
}

static relay_redis_reply *badargs(void)
{
	return relay__reply_errorf("ERR relay: bad script arguments");
}

static int arg_num(const mem_args *a, int i, int64_t *out)
{
	return i < a->argc ? relay__parse_i64(a->argv[i], a->len[i], out)
			   : RELAY_EPARSE;
}

static int arg_token(const mem_args *a, int i, char *tok)
{
	if (i >= a->argc || a->len[i] > RELAY_INV_TOKEN_LEN)
		return RELAY_EPARSE;
	memcpy(tok, a->argv[i], a->len[i]);
	tok[a->len[i]] = '\0';
	return 0;
}

static int is_retained(const mem_key *k)
{
	return k && relay__mem_hget(k, RELAY__INV_F_TERMINAL,
				    strlen(RELAY__INV_F_TERMINAL)) != NULL;
}

static void read_state(const mem_key *k, const mem_args *a, int fi,
		       relay_inv_state *cur)
{
	const mem_str *v = k ? relay__mem_hget(k, a->argv[fi], a->len[fi])
			     : NULL;

	relay_inv_state_parse(cur, v ? v->s : NULL, v ? v->len : 0);
}

/* HSET field value + PERSIST, creating the hash when needed; on failure
 * nothing has changed. */
static int write_field(mem_backend *m, mem_key **k, const mem_args *a,
		       const char *f, size_t flen, const char *v)
{
	int created = !*k;

	if (created)
		*k = relay__mem_create(m, a->argv[0], a->len[0], MEM_HASH);
	if (!*k)
		return RELAY_ENOMEM;
	if (relay__mem_hset(*k, f, flen, v, strlen(v)) < 0) {
		if (created) {
			relay__mem_delete(m, *k);
			*k = NULL;
		}
		return RELAY_ENOMEM;
	}
	(*k)->expire_at = 0;
	return 0;
}

/* "__timeline:<field>" of invocation field @fi of @a into @buf; its
 * length, or 0 when it does not fit. */
static size_t tl_name(const mem_args *a, int fi, char *buf, size_t size)
{
	static const char p[] = RELAY__INV_F_TIMELINE;
	size_t n = sizeof(p) - 1 + a->len[fi];

	if (n >= size)
		return 0;
	memcpy(buf, p, sizeof(p) - 1);
	memcpy(buf + sizeof(p) - 1, a->argv[fi], a->len[fi]);
	buf[n] = '\0';
	return n;
}

/* 1 when the timeline entry argument @ei of @a is given and bad (the
 * caller answers badargs before writing anything), else 0. */
static int tl_check(const mem_args *a, int ei)
{
	if (ei >= a->argc || a->len[ei] == 0)
		return 0;
	return relay__tl_entry_ok(a->argv[ei], a->len[ei]) ? 0 : 1;
}

/* Append the timeline entry argument @ei of @a (when given and not
 * empty) to the timeline of invocation field @fi, as relay_tl_add() of
 * the prelude does in the same HSET. 0 or RELAY_ENOMEM. */
static int tl_write(mem_backend *m, mem_key **k, const mem_args *a, int fi,
		    int ei, int64_t attempt)
{
	char name[320];
	const mem_str *old;
	size_t n = tl_name(a, fi, name, sizeof(name)), len;
	char *v;
	int rc;

	if (ei >= a->argc || a->len[ei] == 0)
		return 0;
	if (!n)
		return RELAY_ENOMEM;
	/* As the scripts: attempt 1 has no earlier entry to keep. */
	old = *k && attempt > 1 ? relay__mem_hget(*k, name, n) : NULL;
	v = relay__tl_push(old ? old->s : NULL, old ? old->len : 0,
			   a->argv[ei], a->len[ei], &len);
	if (!v)
		return RELAY_ENOMEM;
	rc = write_field(m, k, a, name, n, v);
	relay__free(v);
	return rc;
}

/*
 * The outcome stream of relay_outcome() in the prelude: when argument @oi
 * (the stream key) is given and not empty and its lease "<key>:tail"
 * exists, append {id, inv, tl} = args @ii, @fi, @ei. As the script, a
 * failure (a key of another type, no memory) is ignored. The memory
 * backend does not trim it (MAXLEN, the
 * next argument, is for a real server; tests only hold a few).
 */
static void outcome_add(mem_backend *m, const mem_args *a, int oi, int ii,
			int fi, int ei)
{
	const char *fv[6];
	size_t fl[6];
	relay_redis_reply *id = NULL;
	mem_args xa;
	mem_key *st;
	char lease[320];

	if (oi >= a->argc || ii >= a->argc || ei >= a->argc ||
	    a->len[oi] == 0 || a->len[ei] == 0 ||
	    a->len[oi] + 6 > sizeof(lease))
		return;
	memcpy(lease, a->argv[oi], a->len[oi]);
	memcpy(lease + a->len[oi], ":tail", 5);
	if (!relay__mem_lookup(m, lease, a->len[oi] + 5))
		return;
	st = relay__mem_lookup(m, a->argv[oi], a->len[oi]);
	if (st && st->type != MEM_STREAM)
		return;
	if (!st)
		st = relay__mem_create(m, a->argv[oi], a->len[oi], MEM_STREAM);
	if (!st)
		return;
	fv[0] = "id";
	fl[0] = 2;
	fv[1] = a->argv[ii];
	fl[1] = a->len[ii];
	fv[2] = "inv";
	fl[2] = 3;
	fv[3] = a->argv[fi];
	fl[3] = a->len[fi];
	fv[4] = "tl";
	fl[4] = 2;
	fv[5] = a->argv[ei];
	fl[5] = a->len[ei];
	xa.argc = 6;
	xa.argv = fv;
	xa.len = fl;
	relay__mem_xadd(st, SID_MAX, &xa, 0, relay__mem_now(m), &id);
	relay_redis_reply_free(id);
}

static relay_redis_reply *fenced(mem_backend *m, mem_key *k,
				 relay_redis_script op, const mem_args *a)
{
	relay_inv_state cur, next;
	relay_inv_outcome o;
	char tok[RELAY_INV_TOKEN_LEN + 1], val[96];
	int64_t n1 = 0, n2 = 0, n3 = 0;
	int write, ei;

	read_state(k, a, 1, &cur);
	if (op == RELAY_REDIS_SCRIPT_TRY_START) {
		if (a->argc != 5 || arg_num(a, 2, &n1) || arg_num(a, 3, &n2) ||
		    arg_token(a, 4, tok))
			return badargs();
		write = relay__inv_decide_try_start(&cur, n1, n2, tok, &o,
						    &next);
	} else {
		if (arg_num(a, 2, &n1) || n1 < 1 || arg_token(a, 3, tok))
			return badargs();
		if (op == RELAY_REDIS_SCRIPT_RECORD_FAILURE) {
			if ((a->argc != 6 && a->argc != 7 &&
			     a->argc != 10) ||
			    arg_num(a, 4, &n2) || arg_num(a, 5, &n3))
				return badargs();
			write = relay__inv_decide_failure(
				&cur, (unsigned)n1, tok, n2, n3, &o, &next);
		} else if (a->argc != 4 && a->argc != 5 && a->argc != 8) {
			return badargs();
		} else if (op == RELAY_REDIS_SCRIPT_MARK_COMPLETE) {
			write = relay__inv_decide_complete(&cur, (unsigned)n1,
							   tok, &o, &next);
		} else {
			write = relay__inv_decide_exhausted(&cur, (unsigned)n1,
							    tok, &o, &next);
		}
	}
	/* The timeline entry: the argument after the script's own. */
	ei = op == RELAY_REDIS_SCRIPT_TRY_START ? a->argc :
	     op == RELAY_REDIS_SCRIPT_RECORD_FAILURE ? 6 : 4;
	if (write) {
		if (tl_check(a, ei))
			return badargs();
		if (relay_inv_state_format(&next, val, sizeof(val)) < 0 ||
		    write_field(m, &k, a, a->argv[1], a->len[1], val) ||
		    tl_write(m, &k, a, 1, ei, n1))
			return NULL;
		/* stream key, bound, message id follow the entry */
		outcome_add(m, a, ei + 1, ei + 3, 1, ei);
	}
	return outcome_reply(&o);
}

/*
 * CLAIM_CLASSIFICATION [pin]: as claim_classification.lua, including the
 * schedule admission pin in __schedule (stored once, returned always).
 */
static relay_redis_reply *classification(mem_backend *m, mem_key *k,
					 const mem_args *a)
{
	static const char f[] = RELAY__INV_F_CLASSIFICATION;
	static const char pf[] = RELAY__INV_F_SCHEDULE;
	const mem_str *have = k ? relay__mem_hget(k, pf, sizeof(pf) - 1)
				: NULL;
	char *pin;
	relay_redis_reply *r;

	if (have) {
		pin = relay__strndup(have->s, have->len);
	} else if (a->argc > 1 && a->len[1] > 0) {
		pin = relay__strndup(a->argv[1], a->len[1]);
		if (pin && write_field(m, &k, a, pf, sizeof(pf) - 1, pin)) {
			relay__free(pin);
			return NULL;
		}
	} else {
		pin = relay__strdup("");
	}
	if (!pin)
		return NULL;
	if (k && relay__mem_hget(k, f, sizeof(f) - 1)) {
		r = reply4("already", 0, 0, pin);
	} else if (write_field(m, &k, a, f, sizeof(f) - 1, "1")) {
		r = NULL;
	} else {
		r = reply4("claimed", 0, 0, pin);
	}
	relay__free(pin);
	return r;
}

/* A string key @name = "1" expiring in @ttl ms, or NULL. */
static mem_key *set_marker(mem_backend *m, const char *name, size_t len,
			   int64_t ttl)
{
	mem_key *mk = relay__mem_create(m, name, len, MEM_STRING);

	if (!mk)
		return NULL;
	mk->u.str.s = relay__strndup("1", 1);
	mk->u.str.len = 1;
	mk->expire_at = relay__mem_now(m) + ttl;
	if (!mk->u.str.s) {
		relay__mem_delete(m, mk);
		return NULL;
	}
	return mk;
}

/* @r (four elements) with a fifth string @fifth appended; frees @r. */
static relay_redis_reply *append5(relay_redis_reply *r, const char *fifth)
{
	relay_redis_reply *out;
	size_t i;

	if (!r)
		return NULL;
	out = relay__reply_array(5);
	if (!out) {
		relay_redis_reply_free(r);
		return NULL;
	}
	for (i = 0; i < 4; i++) {
		out->element[i] = r->element[i];
		r->element[i] = NULL;
	}
	relay_redis_reply_free(r);
	out->element[4] = relay__reply_str(RELAY_REDIS_REPLY_STRING, fifth,
					   strlen(fifth));
	if (!out->element[4]) {
		relay_redis_reply_free(out);
		return NULL;
	}
	return out;
}

/*
 * CLAIM_START: claim_classification (no pin) and try_start in one step,
 * as claim_start.lua: try_start's reply plus the classification's
 * result. The claim is written first, then the classification, so a
 * failed write never leaves a classification without its claim's reply.
 */
static relay_redis_reply *claim_start(mem_backend *m, mem_key *k,
				      const mem_args *a)
{
	static const char f[] = RELAY__INV_F_CLASSIFICATION;
	relay_inv_state cur, next;
	relay_inv_outcome o;
	char tok[RELAY_INV_TOKEN_LEN + 1], val[96];
	int64_t now, timeout;
	int first;

	if (a->argc != 5 || arg_num(a, 2, &now) || arg_num(a, 3, &timeout) ||
	    arg_token(a, 4, tok))
		return badargs();
	first = !k || !relay__mem_hget(k, f, sizeof(f) - 1);
	read_state(k, a, 1, &cur);
	if (relay__inv_decide_try_start(&cur, now, timeout, tok, &o, &next) &&
	    (relay_inv_state_format(&next, val, sizeof(val)) < 0 ||
	     write_field(m, &k, a, a->argv[1], a->len[1], val)))
		return NULL;
	if (first && write_field(m, &k, a, f, sizeof(f) - 1, "1"))
		return NULL;
	return append5(outcome_reply(&o), first ? "claimed" : "already");
}

/*
 * SCHEDULE_PUBLISH: as schedule_publish.lua. KEYS[1] is the marker (a
 * string key), KEYS[2] the stream, optional KEYS[3] the pre-cluster
 * marker; ARGV ttl_ms envelope.
 */
static relay_redis_reply *schedule_publish(mem_backend *m, const mem_args *a)
{
	relay_redis_reply *id = NULL, *out;
	const char *fv[2];
	size_t fvlen[2];
	mem_sid prev_last;
	mem_args ea;
	mem_key *mk, *old = NULL, *st;
	int64_t ttl;
	int created, legacy = a->argc == 5, env = legacy ? 4 : 3;

	if ((a->argc != 4 && !legacy) || arg_num(a, env - 1, &ttl) ||
	    ttl < 1)
		return badargs();
	if (relay__mem_lookup(m, a->argv[0], a->len[0]) ||
	    (legacy && relay__mem_lookup(m, a->argv[2], a->len[2])))
		return reply4("duplicate", 0, 0, "");
	st = relay__mem_lookup(m, a->argv[1], a->len[1]);
	if (st && st->type != MEM_STREAM)
		return wrongtype();
	created = !st;
	if (created)
		st = relay__mem_create(m, a->argv[1], a->len[1], MEM_STREAM);
	if (!st)
		return NULL;
	prev_last = st->u.stream.last;
	fv[0] = "event";
	fvlen[0] = 5;
	fv[1] = a->argv[env];
	fvlen[1] = a->len[env];
	ea.argc = 2;
	ea.argv = fv;
	ea.len = fvlen;
	if (relay__mem_xadd(st, SID_MAX, &ea, 0, relay__mem_now(m), &id) ||
	    !id || id->type != RELAY_REDIS_REPLY_STRING)
		goto fail;
	mk = set_marker(m, a->argv[0], a->len[0], ttl);
	if (mk && legacy) {
		old = set_marker(m, a->argv[2], a->len[2], ttl);
		if (!old) {
			relay__mem_delete(m, mk);
			mk = NULL;
		}
	}
	if (!mk) {
		/* all or nothing, as the Lua script */
		relay__mem_xadd_undo(st, prev_last);
		goto fail;
	}
	out = reply4("published", 0, 0, id->str);
	relay_redis_reply_free(id);
	return out;
fail:
	if (created)
		relay__mem_delete(m, st);
	if (id && id->type == RELAY_REDIS_REPLY_ERROR)
		return id;
	relay_redis_reply_free(id);
	return NULL;
}

static relay_redis_reply *retain(mem_backend *m, mem_key *k,
				 const mem_args *a)
{
	static const char f[] = RELAY__INV_F_TERMINAL;
	int64_t ttl;

	if (a->argc != 2 || arg_num(a, 1, &ttl) || ttl < 1)
		return badargs();
	if (!k)
		return reply4("absent", 0, 0, "");
	if (relay__mem_hget(k, f, sizeof(f) - 1))
		return reply4("already", 0, 0, "");
	if (relay__mem_hset(k, f, sizeof(f) - 1, "1", 1) < 0)
		return NULL;
	k->expire_at = relay__mem_now(m) + ttl;
	return reply4("recorded", 0, 0, "");
}

/*
 * COMPLETE_ACK: mark_complete's decision; when recorded, the field is
 * written, then XACK, then (only after the XACK) the retention marker
 * and TTL. complete_ack.lua reaches the same states: it issues the XACK
 * first and writes the field with the marker after it (the script is
 * atomic), and on an XACK error writes the field alone, as here. The
 * optional 9th argument is the attempt's timeline entry, appended with
 * the field.
 */
static relay_redis_reply *complete_ack(mem_backend *m, mem_key *k,
				       const mem_args *a)
{
	static const char tf[] = RELAY__INV_F_TERMINAL;
	relay_inv_state cur, next;
	relay_inv_outcome o;
	char tok[RELAY_INV_TOKEN_LEN + 1], val[96];
	const char *xv[4];
	size_t xl[4];
	mem_args xa;
	relay_redis_reply *n;
	mem_key *st;
	int64_t at, ttl;

	if ((a->argc != 8 && a->argc != 9 && a->argc != 11) ||
	    arg_num(a, 3, &at) || at < 1 ||
	    arg_token(a, 4, tok) || arg_num(a, 7, &ttl) || ttl < 1)
		return badargs();
	read_state(k, a, 2, &cur);
	if (!relay__inv_decide_complete(&cur, (unsigned)at, tok, &o, &next))
		return outcome_reply(&o);
	if (tl_check(a, 8))
		return badargs();
	if (relay_inv_state_format(&next, val, sizeof(val)) < 0 ||
	    write_field(m, &k, a, a->argv[2], a->len[2], val) ||
	    tl_write(m, &k, a, 2, 8, at))
		return NULL;
	/* stream key and bound follow the entry; the message id is the
	 * XACK's (argument 6) */
	outcome_add(m, a, 9, 6, 2, 8);
	st = relay__mem_lookup(m, a->argv[1], a->len[1]);
	if (st && st->type != MEM_STREAM)
		return wrongtype();
	xv[0] = "XACK";
	xl[0] = 4;
	xv[1] = a->argv[1];
	xl[1] = a->len[1];
	xv[2] = a->argv[5];
	xl[2] = a->len[5];
	xv[3] = a->argv[6];
	xl[3] = a->len[6];
	xa.argc = 4;
	xa.argv = xv;
	xa.len = xl;
	n = relay__mem_pel_cmd(m, st, &xa, "XACK");
	if (!n || n->type == RELAY_REDIS_REPLY_ERROR)
		return n;
	relay_redis_reply_free(n);
	if (relay__mem_hset(k, tf, sizeof(tf) - 1, "1", 1) < 0)
		return NULL;
	k->expire_at = relay__mem_now(m) + ttl;
	return outcome_reply(&o);
}

/*
 * XADD the entry's fields (@a from 5) to @dlq; an invocation's entry
 * (not @placeholder) gets the field's timeline as field "timeline",
 * before a last "trace" pair, as dlq_persist.lua does. 0 or RELAY_ENOMEM
 * (then *id is unset).
 */
static int xadd_entry(mem_backend *m, const mem_key *k, mem_key *dlq,
		      const mem_args *a, int placeholder,
		      relay_redis_reply **id)
{
	char name[320];
	const mem_str *tl = NULL;
	const char **av;
	size_t *al, n = placeholder ? 0 : tl_name(a, 2, name, sizeof(name));
	mem_args xa;
	int i, j, at, rc;

	if (n && k)
		tl = relay__mem_hget(k, name, n);
	if (!tl || !tl->len)
		return relay__mem_xadd(dlq, SID_MAX, a, 5, relay__mem_now(m),
				       id);
	av = relay__calloc((size_t)a->argc + 2, sizeof(*av));
	al = relay__calloc((size_t)a->argc + 2, sizeof(*al));
	if (!av || !al) {
		relay__free(av);
		relay__free(al);
		return RELAY_ENOMEM;
	}
	at = a->argc;
	if (a->argc >= 7 && a->len[a->argc - 2] == 5 &&
	    memcmp(a->argv[a->argc - 2], "trace", 5) == 0)
		at = a->argc - 2;
	for (i = 0, j = 0; i < a->argc; i++) {
		if (i == at) {
			av[j] = "timeline";
			al[j++] = 8;
			av[j] = tl->s;
			al[j++] = tl->len;
		}
		av[j] = a->argv[i];
		al[j++] = a->len[i];
	}
	if (at == a->argc) {
		av[j] = "timeline";
		al[j++] = 8;
		av[j] = tl->s;
		al[j++] = tl->len;
	}
	xa.argc = j;
	xa.argv = av;
	xa.len = al;
	rc = relay__mem_xadd(dlq, SID_MAX, &xa, 5, relay__mem_now(m), id);
	relay__free(av);
	relay__free(al);
	return rc;
}

static const char *const persist_wire[] = { "written", "already", "stale",
					    "retained" };

/*
 * DLQ_PERSIST: decide first (nothing is written unless the marker says
 * so), then append to the DLQ stream, then upgrade the marker. A DLQ key
 * of another type fails the XADD before anything is written.
 */
static relay_redis_reply *dlq_persist(mem_backend *m, mem_key *k,
				      const mem_args *a)
{
	static const char ph[] = RELAY__INV_F_PLACEHOLDER;
	relay_dlq_persist_result res = RELAY_DLQ_WRITTEN;
	relay_inv_state cur, next;
	relay_redis_reply *id = NULL, *out;
	char tok[RELAY_INV_TOKEN_LEN + 1], val[96];
	int64_t attempt = 0;
	mem_sid prev_last;
	mem_key *dlq;
	int placeholder = a->len[2] == 0, created;

	if (a->argc < 7 || (a->argc - 5) % 2 ||
	    (!placeholder && (arg_num(a, 3, &attempt) || attempt < 1 ||
			      arg_token(a, 4, tok))))
		return badargs();
	if (placeholder) {
		if (k && relay__mem_hget(k, ph, sizeof(ph) - 1))
			res = RELAY_DLQ_ALREADY;
	} else {
		read_state(k, a, 2, &cur);
		relay__inv_decide_dlq(&cur, (unsigned)attempt, tok, &res,
				      &next);
	}
	if (res != RELAY_DLQ_WRITTEN)
		return reply4(persist_wire[res], 0, 0, "");
	dlq = relay__mem_lookup(m, a->argv[1], a->len[1]);
	if (dlq && dlq->type != MEM_STREAM)
		return wrongtype();
	created = !dlq;
	if (created)
		dlq = relay__mem_create(m, a->argv[1], a->len[1], MEM_STREAM);
	if (!dlq)
		return NULL;
	prev_last = dlq->u.stream.last;
	if (xadd_entry(m, k, dlq, a, placeholder, &id) || !id ||
	    id->type != RELAY_REDIS_REPLY_STRING)
		goto undo_stream;
	if (!placeholder &&
	    relay_inv_state_format(&next, val, sizeof(val)) < 0)
		goto undo_entry;
	if (placeholder ? write_field(m, &k, a, ph, sizeof(ph) - 1, "1")
			: write_field(m, &k, a, a->argv[2], a->len[2], val))
		goto undo_entry;
	/* both writes done; a lost reply is retried as "already" */
	out = reply4("written", 0, 0, id->str);
	relay_redis_reply_free(id);
	return out;
undo_entry:
	/* all or nothing, as the Lua script (which cannot fail here) */
	relay__mem_xadd_undo(dlq, prev_last);
undo_stream:
	if (created)
		relay__mem_delete(m, dlq);
	if (id && id->type == RELAY_REDIS_REPLY_ERROR)
		return id;
	relay_redis_reply_free(id);
	return NULL;
}

relay_redis_reply *relay__mem_script_run(mem_backend *m,
					 relay_redis_script op,
					 const mem_args *a)
{
	mem_key *k;

	if (op == RELAY_REDIS_SCRIPT_SCHEDULE_PUBLISH)
		return schedule_publish(m, a);
	if (op == RELAY_REDIS_SCRIPT_STREAM_TRIM)
		return relay__mem_stream_trim(m, a);
	k = relay__mem_lookup(m, a->argv[0], a->len[0]);
	if (k && k->type != MEM_HASH)
		return wrongtype();
	if (op == RELAY_REDIS_SCRIPT_RETAIN)
		return retain(m, k, a);
	if (is_retained(k))
		return op == RELAY_REDIS_SCRIPT_CLAIM_START ?
			       append5(reply4("retained", 0, 0, ""),
				       "retained") :
			       reply4("retained", 0, 0, "");
	switch (op) {
	case RELAY_REDIS_SCRIPT_TRY_START:
	case RELAY_REDIS_SCRIPT_RECORD_FAILURE:
	case RELAY_REDIS_SCRIPT_MARK_COMPLETE:
	case RELAY_REDIS_SCRIPT_MARK_EXHAUSTED:
		if (a->argc < 2)
			return badargs();
		return fenced(m, k, op, a);
	case RELAY_REDIS_SCRIPT_CLAIM_CLASSIFICATION:
		return classification(m, k, a);
	case RELAY_REDIS_SCRIPT_DLQ_PERSIST:
		return dlq_persist(m, k, a);
	case RELAY_REDIS_SCRIPT_COMPLETE_ACK:
		return complete_ack(m, k, a);
	case RELAY_REDIS_SCRIPT_CLAIM_START:
		return claim_start(m, k, a);
	default:
		return badargs();
	}
}
