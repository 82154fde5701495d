/*
 * inv.c - invocation state: field values, keys, tokens, backoff, and the
 * pure transition decisions (doc/redis-layout.md;
 * doc/behaviour.md B-90 ... B-94).
 *
 * Nothing here does I/O. The memory backend calls the decide functions
 * under its own "atomicity" (single-threaded, no yield); the Lua scripts in
 * librelay/lua/ implement the same rules for a real server, and
 * librelay/invops/ runs them over a Redis backend. Keep the two in step:
 * every rule here has a case in tests/redis/suite.c, which runs against
 * both.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>

#include "common.h"
#include "inv.h"

static const char *const result_wire[] = {
	[RELAY_INV_R_CLAIMED] = "claimed",
	[RELAY_INV_R_RUNNING] = "running",
	[RELAY_INV_R_BACKOFF] = "backoff",
	[RELAY_INV_R_OK] = "ok",
	[RELAY_INV_R_EXHAUSTED] = "exhausted",
	[RELAY_INV_R_RECORDED] = "recorded",
	[RELAY_INV_R_STALE] = "stale",
	[RELAY_INV_R_RETAINED] = "retained",
	[RELAY_INV_R_ALREADY] = "already",
	[RELAY_INV_R_ABSENT] = "absent",
};

const char *relay__inv_result_wire(relay_inv_result r)
{
	if ((unsigned)r >= RELAY__ARRAY_SIZE(result_wire))
		return "?";
	return result_wire[r];
}

const char *relay_inv_result_name(relay_inv_result r)
{
	return relay__inv_result_wire(r);
}

int relay__inv_result_parse(const char *s, relay_inv_result *out)
{
	size_t i;

	for (i = 0; i < RELAY__ARRAY_SIZE(result_wire); i++) {
		if (strcmp(s, result_wire[i]) == 0) {
			*out = (relay_inv_result)i;
			return 0;
		}
	}
	return RELAY_EPARSE;
}

int relay__parse_i64(const char *s, size_t len, int64_t *out)
{
	int64_t v = 0;
	size_t i;

	if (len == 0 || len > 18)
		return RELAY_EPARSE;
	for (i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return RELAY_EPARSE;
		v = v * 10 + (s[i] - '0');
	}
	*out = v;
	return 0;
}

static int is_token(const char *s, size_t len)
{
	size_t i;

	if (len != RELAY_INV_TOKEN_LEN)
		return 0;
	for (i = 0; i < len; i++) {
		if (!((s[i] >= '0' && s[i] <= '9') ||
		      (s[i] >= 'a' && s[i] <= 'f')))
			return 0;
	}
	return 1;
}

/*
 * Split @v at ':' into at most @max parts. Returns the number of parts, or
 * -1 when there are more than @max.
 */
static int split(const char *v, size_t len, const char **part,
		 size_t *plen, int max)
{
	int n = 0;
	size_t start = 0, i;

	for (i = 0; i <= len; i++) {
		if (i < len && v[i] != ':')
			continue;
		if (n == max)
			return -1;
		part[n] = v + start;
		plen[n] = i - start;
		n++;
		start = i + 1;
	}
	return n;
}

/*
 * The grammar is strict: a value is either exactly "ok" or a known prefix
 * with the exact number of parts, decimal numbers without signs, an
 * attempt >= 1, and a 32-char lowercase hex token. Anything else is
 * INVALID, which try_start treats like an absent field (attempt 1).
 */
int relay_inv_state_parse(relay_inv_state *out, const char *value,
			  size_t len)
{
	const char *p[5];
	size_t pl[5];
	int64_t dl = 0, at = 0;
	int n, tok;

	memset(out, 0, sizeof(*out));
	if (!value) {
		out->kind = RELAY_INV_ABSENT;
		return 0;
	}
	out->kind = RELAY_INV_INVALID;
	if (len == 2 && memcmp(value, "ok", 2) == 0) {
		out->kind = RELAY_INV_OK;
		return 0;
	}
	n = split(value, len, p, pl, 5);
	if (n == 4 && ((pl[0] == 7 && memcmp(p[0], "running", 7) == 0) ||
		       (pl[0] == 15 &&
			memcmp(p[0], "next_attempt_at", 15) == 0))) {
		if (relay__parse_i64(p[1], pl[1], &dl) ||
		    relay__parse_i64(p[2], pl[2], &at) || at < 1 ||
		    at > 1000000 || !is_token(p[3], pl[3]))
			return RELAY_EPARSE;
		out->kind = pl[0] == 7 ? RELAY_INV_RUNNING : RELAY_INV_BACKOFF;
		out->deadline_ms = dl;
		tok = 3;
	} else if ((n == 3 || n == 4) && pl[0] == 9 &&
		   memcmp(p[0], "exhausted", 9) == 0) {
		if (relay__parse_i64(p[1], pl[1], &at) || at < 1 ||
		    at > 1000000 || !is_token(p[2], pl[2]))
			return RELAY_EPARSE;
		if (n == 4 && !(pl[3] == 3 && memcmp(p[3], "dlq", 3) == 0))
			return RELAY_EPARSE;
		out->kind = RELAY_INV_EXHAUSTED;
		out->dlq = n == 4;
		tok = 2;
	} else {
		return RELAY_EPARSE;
	}
	out->attempt = (unsigned int)at;
	memcpy(out->token, p[tok], RELAY_INV_TOKEN_LEN);
	out->token[RELAY_INV_TOKEN_LEN] = '\0';
	return 0;
}

int relay_inv_state_format(const relay_inv_state *s, char *buf, size_t size)
{
	int n;

	switch (s->kind) {
	case RELAY_INV_OK:
		n = snprintf(buf, size, "ok");
		break;
	case RELAY_INV_RUNNING:
	case RELAY_INV_BACKOFF:
		n = snprintf(buf, size, "%s:%lld:%u:%s",
			     s->kind == RELAY_INV_RUNNING ? "running"
							  : "next_attempt_at",
			     (long long)s->deadline_ms, s->attempt, s->token);
		break;
	case RELAY_INV_EXHAUSTED:
		n = snprintf(buf, size, "exhausted:%u:%s%s", s->attempt,
			     s->token, s->dlq ? ":dlq" : "");
		break;
	default:
		return RELAY_EINVAL;
	}
	if (n < 0 || (size_t)n >= size)
		return RELAY_EINVAL;
	return n;
}

int64_t relay_inv_backoff_ms(unsigned int attempt)
{
	static const int64_t table[] = { 60000, 120000, 300000, 600000 };

	if (attempt < 1)
		attempt = 1;
	if (attempt > RELAY__ARRAY_SIZE(table))
		attempt = RELAY__ARRAY_SIZE(table);
	return table[attempt - 1];
}

int64_t relay_inv_claim_deadline(relay_wall_ms now, int64_t timeout_ms)
{
	if (timeout_ms <= 0 || timeout_ms > RELAY_INV_MAX_RUN_MS)
		timeout_ms = RELAY_INV_MAX_RUN_MS;
	return now + timeout_ms;
}

int relay_inv_token(char out[RELAY_INV_TOKEN_LEN + 1])
{
	static const char hex[] = "0123456789abcdef";
	unsigned char raw[RELAY_INV_TOKEN_LEN / 2];
	size_t got = 0, i;
	ssize_t n;

	while (got < sizeof(raw)) {
		n = getrandom(raw + got, sizeof(raw) - got, 0);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return RELAY_ERROR;
		}
		got += (size_t)n;
	}
	for (i = 0; i < sizeof(raw); i++) {
		out[2 * i] = hex[raw[i] >> 4];
		out[2 * i + 1] = hex[raw[i] & 15];
	}
	out[RELAY_INV_TOKEN_LEN] = '\0';
	return 0;
}

static int key_escape(relay__buf *b, const char *s)
{
	int rc = 0;

	for (; *s && rc == 0; s++) {
		if (*s == '%')
			rc = relay__buf_append(b, "%25", 3);
		else if (*s == ':')
			rc = relay__buf_append(b, "%3A", 3);
		else
			rc = relay__buf_append(b, s, 1);
	}
	return rc;
}

char *relay_inv_key(const char *stream, const char *group, const char *id)
{
	relay__buf b = { 0 };

	if (relay__buf_append(&b, "relay:invocation:", 17) ||
	    key_escape(&b, stream) || relay__buf_append(&b, ":", 1) ||
	    key_escape(&b, group) || relay__buf_append(&b, ":", 1) ||
	    key_escape(&b, id) || relay__buf_append(&b, "", 1)) {
		relay__buf_free(&b);
		return NULL;
	}
	return b.data;
}

static void outcome_of(relay_inv_outcome *out, relay_inv_result r,
		       const relay_inv_state *s)
{
	memset(out, 0, sizeof(*out));
	out->result = r;
	out->attempt = s->attempt;
	out->deadline_ms = s->deadline_ms;
	memcpy(out->token, s->token, sizeof(out->token));
	out->dlq = s->dlq;
}

static int claim_matches(const relay_inv_state *cur, relay_inv_kind kind,
			 unsigned int attempt, const char *token)
{
	return cur->kind == kind && cur->attempt == attempt &&
	       strcmp(cur->token, token) == 0;
}

/*
 * try_start: terminal states are reported as they are; a running claim or
 * a backoff whose deadline is still ahead protects the invocation; an
 * elapsed deadline, an absent field or garbage lets the caller claim the
 * next attempt. The crashed or timed-out attempt behind an elapsed
 * "running" counts: it may really have executed.
 */
int relay__inv_decide_try_start(const relay_inv_state *cur, int64_t now,
				int64_t timeout_ms, const char *token,
				relay_inv_outcome *out, relay_inv_state *next)
{
	unsigned int attempt = 0;

	switch (cur->kind) {
	case RELAY_INV_OK:
		outcome_of(out, RELAY_INV_R_OK, cur);
		return 0;
	case RELAY_INV_EXHAUSTED:
		outcome_of(out, RELAY_INV_R_EXHAUSTED, cur);
		return 0;
	case RELAY_INV_RUNNING:
	case RELAY_INV_BACKOFF:
		if (cur->deadline_ms > now) {
			outcome_of(out, cur->kind == RELAY_INV_RUNNING
						? RELAY_INV_R_RUNNING
						: RELAY_INV_R_BACKOFF,
				   cur);
			return 0;
		}
		attempt = cur->attempt;
		break;
	default:
		break;
	}
	memset(next, 0, sizeof(*next));
	next->kind = RELAY_INV_RUNNING;
	next->attempt = attempt + 1;
	next->deadline_ms = relay_inv_claim_deadline(now, timeout_ms);
	snprintf(next->token, sizeof(next->token), "%s", token);
	outcome_of(out, RELAY_INV_R_CLAIMED, next);
	return 1;
}

int relay__inv_decide_failure(const relay_inv_state *cur,
			      unsigned int attempt, const char *token,
			      int64_t now, int64_t backoff_ms,
			      relay_inv_outcome *out, relay_inv_state *next)
{
	if (!claim_matches(cur, RELAY_INV_RUNNING, attempt, token)) {
		outcome_of(out, RELAY_INV_R_STALE, cur);
		return 0;
	}
	*next = *cur;
	next->kind = RELAY_INV_BACKOFF;
	next->deadline_ms = now + backoff_ms;
	outcome_of(out, RELAY_INV_R_RECORDED, next);
	return 1;
}

int relay__inv_decide_complete(const relay_inv_state *cur,
			       unsigned int attempt, const char *token,
			       relay_inv_outcome *out, relay_inv_state *next)
{
	if (!claim_matches(cur, RELAY_INV_RUNNING, attempt, token)) {
		outcome_of(out, RELAY_INV_R_STALE, cur);
		return 0;
	}
	memset(next, 0, sizeof(*next));
	next->kind = RELAY_INV_OK;
	outcome_of(out, RELAY_INV_R_RECORDED, cur);
	return 1;
}

int relay__inv_decide_exhausted(const relay_inv_state *cur,
				unsigned int attempt, const char *token,
				relay_inv_outcome *out, relay_inv_state *next)
{
	if (claim_matches(cur, RELAY_INV_EXHAUSTED, attempt, token)) {
		outcome_of(out, RELAY_INV_R_RECORDED, cur);
		return 0;
	}
	if (!claim_matches(cur, RELAY_INV_RUNNING, attempt, token)) {
		outcome_of(out, RELAY_INV_R_STALE, cur);
		return 0;
	}
	memset(next, 0, sizeof(*next));
	next->kind = RELAY_INV_EXHAUSTED;
	next->attempt = attempt;
	memcpy(next->token, cur->token, sizeof(next->token));
	outcome_of(out, RELAY_INV_R_RECORDED, next);
	return 1;
}

int relay__inv_decide_dlq(const relay_inv_state *cur, unsigned int attempt,
			  const char *token, relay_dlq_persist_result *res,
			  relay_inv_state *next)
{
	if (!claim_matches(cur, RELAY_INV_EXHAUSTED, attempt, token)) {
		*res = RELAY_DLQ_STALE;
		return 0;
	}
	if (cur->dlq) {
		*res = RELAY_DLQ_ALREADY;
		return 0;
	}
	*next = *cur;
	next->dlq = 1;
	*res = RELAY_DLQ_WRITTEN;
	return 1;
}
