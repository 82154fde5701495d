/*
 * inv_ops.c - the asynchronous invocation-state transitions over a Redis
 * backend: each script's key and argument list (built here only), run
 * through the C6 wrapper, and the one parser of their replies into a
 * relay_inv_outcome. The decisions the scripts make are librelay/inv/.
 */
#include <stdio.h>
#include <string.h>

#include "backend.h"
#include "common.h"
#include "inv.h"
#include "invops.h"

struct inv_call {
	relay_redis_script op;
	relay_inv_cb cb;             /* or */
	relay__inv_pin_cb pin_cb;    /* CLAIM_CLASSIFICATION with a pin */
	relay__inv_claim_start_cb start_cb; /* CLAIM_START */
	void *payload;
};

/*
 * The one parser of a transition reply: { result, attempt, deadline_ms,
 * fourth }. The fourth element is the claim's token, except for
 * CLAIM_CLASSIFICATION, whose fourth is the stored admission pin
 * (*fourth; the outcome's token is then ""). CLAIM_START replies a fifth
 * element, the classification's result, parsed into @cls (only for that
 * op; claimed|already|retained). Returns 0, RELAY_EBACKEND/RELAY_ETYPE
 * (an error reply) or RELAY_EPARSE.
 */
static int outcome_from_reply(const relay_redis_reply *r,
			      relay_redis_script op, relay_inv_outcome *out,
			      const relay_redis_reply **fourth,
			      relay_inv_outcome *cls)
{
	size_t want = op == RELAY_REDIS_SCRIPT_CLAIM_START ? 5 : 4;
	const relay_redis_reply *e;
	int rc;

	rc = relay_redis_reply_error(r);
	if (rc)
		return rc;
	memset(out, 0, sizeof(*out));
	if (!r || r->type != RELAY_REDIS_REPLY_ARRAY || r->elements != want)
		return RELAY_EPARSE;
	if (want == 5) {
		e = r->element[4];
		memset(cls, 0, sizeof(*cls));
		if (e->type != RELAY_REDIS_REPLY_STRING ||
		    relay__inv_result_parse(e->str, &cls->result) ||
		    (cls->result != RELAY_INV_R_CLAIMED &&
		     cls->result != RELAY_INV_R_ALREADY &&
		     cls->result != RELAY_INV_R_RETAINED))
			return RELAY_EPARSE;
	}
	e = r->element[0];
	if (e->type != RELAY_REDIS_REPLY_STRING)
		return RELAY_EPARSE;
	if (strcmp(e->str, "exhausted_dlq") == 0) {
		out->result = RELAY_INV_R_EXHAUSTED;
		out->dlq = 1;
	} else if (relay__inv_result_parse(e->str, &out->result)) {
		return RELAY_EPARSE;
	}
	if (r->element[1]->type != RELAY_REDIS_REPLY_INTEGER ||
	    r->element[2]->type != RELAY_REDIS_REPLY_INTEGER ||
	    r->element[3]->type != RELAY_REDIS_REPLY_STRING ||
	    r->element[1]->integer < 0)
		return RELAY_EPARSE;
	out->attempt = (unsigned int)r->element[1]->integer;
	out->deadline_ms = r->element[2]->integer;
	*fourth = r->element[3];
	if (op == RELAY_REDIS_SCRIPT_CLAIM_CLASSIFICATION)
		return 0;
	if (r->element[3]->len > RELAY_INV_TOKEN_LEN)
		return RELAY_EPARSE;
	memcpy(out->token, r->element[3]->str, r->element[3]->len);
	out->token[r->element[3]->len] = '\0';
	return 0;
}

static void inv_reply(relay_redis_backend *b, int status,
		      relay_redis_reply *reply, void *payload)
{
	struct inv_call *c = payload;
	const relay_redis_reply *fourth = NULL;
	relay_inv_outcome o, cls;

	(void)b;
	if (status == 0)
		status = outcome_from_reply(reply, c->op, &o, &fourth, &cls);
	if (c->start_cb)
		c->start_cb(status, status ? NULL : &cls, status ? NULL : &o,
			    c->payload);
	else if (c->pin_cb)
		c->pin_cb(status, status ? NULL : &o,
			  status ? NULL : fourth->str ? fourth->str : "",
			  status ? 0 : fourth->len, c->payload);
	else
		c->cb(status, status ? NULL : &o, c->payload);
	relay_redis_reply_free(reply);
	relay__free(c);
}

/* Run script @op with KEYS @numkeys first of @argv; the reply goes to
 * @cb (or @pin_cb, or @start_cb: the one that is set). */
static int run_cb(relay_redis_backend *b, relay_redis_script op,
		  int numkeys, int argc, const char *const *argv,
		  relay_inv_cb cb, relay__inv_pin_cb pin_cb,
		  relay__inv_claim_start_cb start_cb, void *payload)
{
	struct inv_call *c;
	int rc;

	if (!b || (!cb && !pin_cb && !start_cb))
		return RELAY_EINVAL;
	c = relay__malloc(sizeof(*c));
	if (!c)
		return RELAY_ENOMEM;
	c->op = op;
	c->cb = cb;
	c->pin_cb = pin_cb;
	c->start_cb = start_cb;
	c->payload = payload;
	rc = relay__redis_script(b, op, numkeys, argc, argv, NULL, inv_reply,
				 c);
	if (rc)
		relay__free(c);
	return rc;
}

static int run(relay_redis_backend *b, relay_redis_script op, int argc,
	       const char *const *argv, relay_inv_cb cb, void *payload)
{
	return run_cb(b, op, 1, argc, argv, cb, NULL, NULL, payload);
}

static int check_claim(const char *key, const char *field,
		       unsigned int attempt, const char *token)
{
	if (!key || !field || !*field || attempt < 1 || !token ||
	    strlen(token) != RELAY_INV_TOKEN_LEN)
		return RELAY_EINVAL;
	return 0;
}

/* The arguments TRY_START and CLAIM_START share: now, the run timeout
 * (capped) and a fresh token, as strings. 0, RELAY_EINVAL or
 * RELAY_ERROR (no token). */
typedef struct start_args {
	char tok[RELAY_INV_TOKEN_LEN + 1], now[24], timeout[24];
} start_args;

static int start_args_make(start_args *a, const char *key, const char *field,
			   relay_wall_ms now, int64_t timeout_ms)
{
	if (!key || !field || !*field || now < 0)
		return RELAY_EINVAL;
	if (relay_inv_token(a->tok))
		return RELAY_ERROR;
	if (timeout_ms <= 0 || timeout_ms > RELAY_INV_MAX_RUN_MS)
		timeout_ms = RELAY_INV_MAX_RUN_MS;
	snprintf(a->now, sizeof(a->now), "%lld", (long long)now);
	snprintf(a->timeout, sizeof(a->timeout), "%lld",
		 (long long)timeout_ms);
	return 0;
}

int relay_inv_try_start(relay_redis_backend *b, const char *key,
			const char *field, relay_wall_ms now,
			int64_t timeout_ms, relay_inv_cb cb, void *payload)
{
	start_args sa;
	const char *argv[] = { key, field, sa.now, sa.timeout, sa.tok };
	int rc = start_args_make(&sa, key, field, now, timeout_ms);

	if (rc)
		return rc;
	return run(b, RELAY_REDIS_SCRIPT_TRY_START, 5, argv, cb, payload);
}

int relay__inv_claim_start(relay_redis_backend *b, const char *key,
			   const char *field, relay_wall_ms now,
			   int64_t timeout_ms, relay__inv_claim_start_cb cb,
			   void *payload)
{
	start_args sa;
	const char *argv[] = { key, field, sa.now, sa.timeout, sa.tok };
	int rc;

	if (!b || !cb)
		return RELAY_EINVAL;
	rc = start_args_make(&sa, key, field, now, timeout_ms);
	if (rc)
		return rc;
	return run_cb(b, RELAY_REDIS_SCRIPT_CLAIM_START, 1, 5, argv, NULL,
		      NULL, cb, payload);
}

int relay_inv_record_failure(relay_redis_backend *b, const char *key,
			     const char *field, unsigned int attempt,
			     const char *token, relay_wall_ms now,
			     relay_inv_cb cb, void *payload)
{
	return relay__inv_record_failure_ms(b, key, field, attempt, token,
					    now, relay_inv_backoff_ms(attempt),
					    NULL, cb, payload);
}

/* 0 when @n can be sent (NULL, or an entry that fits and outcomes with
 * an id), else RELAY_EINVAL. */
static int note_check(const relay__inv_note *n)
{
	if (!n)
		return 0;
	if (!n->entry || !relay__tl_entry_ok(n->entry, strlen(n->entry)) ||
	    (n->outcomes && (!*n->outcomes || !n->id || !*n->id ||
			     n->outcomes_max < 1)))
		return RELAY_EINVAL;
	return 0;
}

/* Append @n's arguments to @argv at *@argc (@smax: room for the bound's
 * digits): the entry, then the outcome stream, its bound and (unless
 * @no_id) the message id. */
static void note_args(const relay__inv_note *n, const char **argv,
		      int *argc, char *smax, size_t size, int no_id)
{
	if (!n)
		return;
	argv[(*argc)++] = n->entry;
	if (!n->outcomes)
		return;
	snprintf(smax, size, "%lld", n->outcomes_max);
	argv[(*argc)++] = n->outcomes;
	argv[(*argc)++] = smax;
	if (!no_id)
		argv[(*argc)++] = n->id;
}

/*
 * The fenced scripts (RECORD_FAILURE, MARK_COMPLETE, MARK_EXHAUSTED):
 * KEYS[1] = @key, ARGV = field attempt token, then @nextra more, then
 * @note's arguments when not NULL.
 */
static int fenced(relay_redis_backend *b, relay_redis_script op,
		  const char *key, const char *field, unsigned int attempt,
		  const char *token, int nextra, const char *const *extra,
		  const relay__inv_note *note, relay_inv_cb cb,
		  void *payload)
{
	char sat[16], smax[24];
	const char *argv[10];
	int i, argc;

	if (check_claim(key, field, attempt, token) || nextra > 2 ||
	    note_check(note))
		return RELAY_EINVAL;
	snprintf(sat, sizeof(sat), "%u", attempt);
	argv[0] = key;
	argv[1] = field;
	argv[2] = sat;
	argv[3] = token;
	for (i = 0; i < nextra; i++)
		argv[4 + i] = extra[i];
	argc = 4 + nextra;
	note_args(note, argv, &argc, smax, sizeof(smax), 0);
	return run(b, op, argc, argv, cb, payload);
}

int relay__inv_record_failure_ms(relay_redis_backend *b, const char *key,
				 const char *field, unsigned int attempt,
				 const char *token, relay_wall_ms now,
				 int64_t backoff_ms,
				 const relay__inv_note *note,
				 relay_inv_cb cb, void *payload)
{
	char snow[24], sbo[24];
	const char *extra[2];

	if (now < 0 || backoff_ms < 1)
		return RELAY_EINVAL;
	snprintf(snow, sizeof(snow), "%lld", (long long)now);
	snprintf(sbo, sizeof(sbo), "%lld", (long long)backoff_ms);
	extra[0] = snow;
	extra[1] = sbo;
	return fenced(b, RELAY_REDIS_SCRIPT_RECORD_FAILURE, key, field,
		      attempt, token, 2, extra, note, cb, payload);
}

int relay_inv_mark_complete(relay_redis_backend *b, const char *key,
			    const char *field, unsigned int attempt,
			    const char *token, relay_inv_cb cb, void *payload)
{
	return fenced(b, RELAY_REDIS_SCRIPT_MARK_COMPLETE, key, field,
		      attempt, token, 0, NULL, NULL, cb, payload);
}

int relay__inv_mark_complete_tl(relay_redis_backend *b, const char *key,
				const char *field, unsigned int attempt,
				const char *token,
				const relay__inv_note *note,
				relay_inv_cb cb, void *payload)
{
	return fenced(b, RELAY_REDIS_SCRIPT_MARK_COMPLETE, key, field,
		      attempt, token, 0, NULL, note, cb, payload);
}

int relay__inv_complete_ack(relay_redis_backend *b, const char *key,
			    const char *stream, const char *field,
			    unsigned int attempt, const char *token,
			    const char *group, const char *id,
			    int64_t ttl_ms, const relay__inv_note *note,
			    relay_inv_cb cb, void *payload)
{
	char sat[16], sttl[24], smax[24];
	const char *argv[11] = { key, stream, field, sat, token, group, id,
				 sttl };
	int argc = 8;

	if (check_claim(key, field, attempt, token) || !stream || !group ||
	    !id || ttl_ms < 1 || note_check(note))
		return RELAY_EINVAL;
	snprintf(sat, sizeof(sat), "%u", attempt);
	snprintf(sttl, sizeof(sttl), "%lld", (long long)ttl_ms);
	/* The message id is ARGV[5] already. */
	note_args(note, argv, &argc, smax, sizeof(smax), 1);
	return run_cb(b, RELAY_REDIS_SCRIPT_COMPLETE_ACK, 2, argc, argv, cb,
		      NULL, NULL, payload);
}

int relay_inv_mark_exhausted(relay_redis_backend *b, const char *key,
			     const char *field, unsigned int attempt,
			     const char *token, relay_inv_cb cb,
			     void *payload)
{
	return fenced(b, RELAY_REDIS_SCRIPT_MARK_EXHAUSTED, key, field,
		      attempt, token, 0, NULL, NULL, cb, payload);
}

int relay__inv_mark_exhausted_tl(relay_redis_backend *b, const char *key,
				 const char *field, unsigned int attempt,
				 const char *token,
				 const relay__inv_note *note,
				 relay_inv_cb cb, void *payload)
{
	return fenced(b, RELAY_REDIS_SCRIPT_MARK_EXHAUSTED, key, field,
		      attempt, token, 0, NULL, note, cb, payload);
}

static int claim_classification(relay_redis_backend *b, const char *key,
				const char *pin, relay_inv_cb cb,
				relay__inv_pin_cb pin_cb, void *payload)
{
	const char *argv[2];

	if (!key)
		return RELAY_EINVAL;
	argv[0] = key;
	argv[1] = pin;
	return run_cb(b, RELAY_REDIS_SCRIPT_CLAIM_CLASSIFICATION, 1,
		      pin && *pin ? 2 : 1, argv, cb, pin_cb, NULL, payload);
}

int relay_inv_claim_classification(relay_redis_backend *b, const char *key,
				   relay_inv_cb cb, void *payload)
{
	return claim_classification(b, key, NULL, cb, NULL, payload);
}

int relay__inv_claim_classification_pin(relay_redis_backend *b,
					const char *key, const char *pin,
					relay__inv_pin_cb cb, void *payload)
{
	return claim_classification(b, key, pin, NULL, cb, payload);
}

int relay_inv_retain(relay_redis_backend *b, const char *key,
		     int64_t ttl_ms, relay_inv_cb cb, void *payload)
{
	char sttl[24];
	const char *argv[2];

	if (!key || ttl_ms < 1)
		return RELAY_EINVAL;
	snprintf(sttl, sizeof(sttl), "%lld", (long long)ttl_ms);
	argv[0] = key;
	argv[1] = sttl;
	return run(b, RELAY_REDIS_SCRIPT_RETAIN, 2, argv, cb, payload);
}
