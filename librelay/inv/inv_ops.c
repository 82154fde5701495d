/*
 * inv_ops.c - the asynchronous invocation-state transitions: format the
 * arguments, run the backend's atomic transition through the C6 wrapper,
 * convert the reply to a relay_inv_outcome.
 */
#include <stdio.h>
#include <string.h>

#include "backend.h"
#include "common.h"
#include "inv.h"

struct inv_call {
	relay_inv_cb cb;
	void *payload;
};

static void inv_reply(relay_redis_backend *b, int status,
		      relay_redis_reply *reply, void *payload)
{
	struct inv_call *c = payload;
	relay_inv_outcome o;

	if (status == 0)
		status = relay__inv_outcome_from_reply(reply, &o);
	relay_redis_reply_free(reply);
	c->cb(status, status ? NULL : &o, c->payload);
	relay__free(c);
}

static int run(relay_redis_backend *b, relay_redis_script op, int argc,
	       const char *const *argv, relay_inv_cb cb, void *payload)
{
	struct inv_call *c;
	int rc;

	if (!b || !cb)
		return RELAY_EINVAL;
	c = relay__malloc(sizeof(*c));
	if (!c)
		return RELAY_ENOMEM;
	c->cb = cb;
	c->payload = payload;
	rc = relay__redis_script(b, op, 1, argc, argv, NULL, inv_reply, c);
	if (rc)
		relay__free(c);
	return rc;
}

static int check_claim(const char *key, const char *field,
		       unsigned int attempt, const char *token)
{
	if (!key || !field || !*field || attempt < 1 || !token ||
	    strlen(token) != RELAY_INV_TOKEN_LEN)
		return RELAY_EINVAL;
	return 0;
}

int relay_inv_try_start(relay_redis_backend *b, const char *key,
			const char *field, relay_wall_ms now,
			int64_t timeout_ms, relay_inv_cb cb, void *payload)
{
	char tok[RELAY_INV_TOKEN_LEN + 1], snow[24], sto[24];
	const char *argv[5];

	if (!key || !field || !*field || now < 0)
		return RELAY_EINVAL;
	if (relay_inv_token(tok))
		return RELAY_ERROR;
	if (timeout_ms <= 0 || timeout_ms > RELAY_INV_MAX_RUN_MS)
		timeout_ms = RELAY_INV_MAX_RUN_MS;
	snprintf(snow, sizeof(snow), "%lld", (long long)now);
	snprintf(sto, sizeof(sto), "%lld", (long long)timeout_ms);
	argv[0] = key;
	argv[1] = field;
	argv[2] = snow;
	argv[3] = sto;
	argv[4] = tok;
	return run(b, RELAY_REDIS_SCRIPT_TRY_START, 5, argv, cb, payload);
}

int relay_inv_record_failure(relay_redis_backend *b, const char *key,
			     const char *field, unsigned int attempt,
			     const char *token, relay_wall_ms now,
			     relay_inv_cb cb, void *payload)
{
	char sat[16], snow[24], sbo[24];
	const char *argv[6];

	if (check_claim(key, field, attempt, token) || now < 0)
		return RELAY_EINVAL;
	snprintf(sat, sizeof(sat), "%u", attempt);
	snprintf(snow, sizeof(snow), "%lld", (long long)now);
	snprintf(sbo, sizeof(sbo), "%lld",
		 (long long)relay_inv_backoff_ms(attempt));
	argv[0] = key;
	argv[1] = field;
	argv[2] = sat;
	argv[3] = token;
	argv[4] = snow;
	argv[5] = sbo;
	return run(b, RELAY_REDIS_SCRIPT_RECORD_FAILURE, 6, argv, cb,
		   payload);
}

static int fenced(relay_redis_backend *b, relay_redis_script op,
		  const char *key, const char *field, unsigned int attempt,
		  const char *token, relay_inv_cb cb, void *payload)
{
	char sat[16];
	const char *argv[4];

	if (check_claim(key, field, attempt, token))
		return RELAY_EINVAL;
	snprintf(sat, sizeof(sat), "%u", attempt);
	argv[0] = key;
	argv[1] = field;
	argv[2] = sat;
	argv[3] = token;
	return run(b, op, 4, argv, cb, payload);
}

int relay_inv_mark_complete(relay_redis_backend *b, const char *key,
			    const char *field, unsigned int attempt,
			    const char *token, relay_inv_cb cb, void *payload)
{
	return fenced(b, RELAY_REDIS_SCRIPT_MARK_COMPLETE, key, field,
		      attempt, token, cb, payload);
}

int relay__inv_complete_ack(relay_redis_backend *b, const char *key,
			    const char *stream, const char *field,
			    unsigned int attempt, const char *token,
			    const char *group, const char *id,
			    int64_t ttl_ms, relay_inv_cb cb, void *payload)
{
	char sat[16], sttl[24];
	const char *argv[8];
	struct inv_call *c;
	int rc;

	if (check_claim(key, field, attempt, token) || !stream || !group ||
	    !id || ttl_ms < 1 || !b || !cb)
		return RELAY_EINVAL;
	snprintf(sat, sizeof(sat), "%u", attempt);
	snprintf(sttl, sizeof(sttl), "%lld", (long long)ttl_ms);
	argv[0] = key;
	argv[1] = stream;
	argv[2] = field;
	argv[3] = sat;
	argv[4] = token;
	argv[5] = group;
	argv[6] = id;
	argv[7] = sttl;
	c = relay__malloc(sizeof(*c));
	if (!c)
		return RELAY_ENOMEM;
	c->cb = cb;
	c->payload = payload;
	rc = relay__redis_script(b, RELAY_REDIS_SCRIPT_COMPLETE_ACK, 2, 8,
				 argv, NULL, inv_reply, c);
	if (rc)
		relay__free(c);
	return rc;
}

int relay_inv_mark_exhausted(relay_redis_backend *b, const char *key,
			     const char *field, unsigned int attempt,
			     const char *token, relay_inv_cb cb,
			     void *payload)
{
	return fenced(b, RELAY_REDIS_SCRIPT_MARK_EXHAUSTED, key, field,
		      attempt, token, cb, payload);
}

int relay_inv_claim_classification(relay_redis_backend *b, const char *key,
				   relay_inv_cb cb, void *payload)
{
	const char *argv[1];

	if (!key)
		return RELAY_EINVAL;
	argv[0] = key;
	return run(b, RELAY_REDIS_SCRIPT_CLAIM_CLASSIFICATION, 1, argv, cb,
		   payload);
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
