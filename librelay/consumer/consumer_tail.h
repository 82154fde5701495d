/*
 * librelay/consumer/consumer_tail.h - private: what outlives a message
 * in memory (consumer_tail.c owns the fused tails waiting to be resent)
 * and the resend rule of a completion whose reply was lost. Never
 * installed.
 */
#ifndef RELAY__CONSUMER_TAIL_H
#define RELAY__CONSUMER_TAIL_H

#include "consumer.h"
#include "invops/invops.h"
#include "relay/invocation.h"

/* A completion resent after its reply was lost (relay__resend_due());
 * a value inside its owner's struct, changed only by
 * relay__resend_due(). */
typedef struct relay__resend {
	unsigned int tries;                  /* resends so far */
	int status;                          /* the last transport error */
} relay__resend;

/*
 * A completion whose reply was lost (RELAY_ECLOSED, RELAY_ETIMEOUT: the
 * write may or may not have happened) is resent with the same attempt
 * and token: first after RELAY__REC_RETRY_MS, doubling up to
 * RELAY__REC_RETRY_MAX_MS, at most RELAY__REC_RETRY_TRIES times (4.55 s
 * in all, enough to outlast a Redis Cluster failover), only while the
 * claim's deadline is ahead and the consumer is not stopping. The
 * transitions are fenced by the claim, so a resend after an applied
 * write changes nothing.
 */
#define RELAY__REC_RETRY_MS 50
#define RELAY__REC_RETRY_MAX_MS 1000
#define RELAY__REC_RETRY_TRIES 8

/* The approximate length bound of the outcome stream (R-10: XADD
 * MAXLEN ~). */
#define RELAY__OUTCOMES_MAX 10000

/* A completion @what of message @id failed with @status: 1 when it is
 * to be resent (a transport error, the consumer not stopping, tries left
 * in @rs, the claim's @deadline_ms (wall) after the resend); then @rs
 * counts it, the resend is logged (DEBUG) and *delay_ms is the backoff
 * before it (real time: time_scale does not apply, as it does not to
 * the claim's deadline). 0: not resent, @rs untouched. */
int relay__resend_due(relay_consumer *c, relay__resend *rs, int status,
		      int64_t deadline_ms, const char *what, const char *id,
		      int64_t *delay_ms);
/* A completion resent after a lost reply (@rs) got @result: logged once
 * (INFO). Nothing when it was never resent. */
void relay__resend_answered(relay_consumer *c, const relay__resend *rs,
			    const char *what, relay_inv_result result,
			    const char *id);
/* Send the fused success tail (COMPLETE_ACK) of message @id (state hash
 * @key, invocation @field, its claim @attempt/@token/@deadline_ms, the
 * attempt's @note or NULL, and the resends @rs it made already). Every
 * string is copied (the outcome stream's key is the consumer's): the
 * message may leave memory at once. Returns 0 or the send error. */
int relay__tail_send(relay_consumer *c, const char *id, const char *key,
		     const char *field, unsigned int attempt,
		     const char *token, int64_t deadline_ms,
		     const relay__inv_note *note, const relay__resend *rs);
/* Give up every fused tail waiting to be resent (stop). */
void relay__tail_stop(relay_consumer *c);

#endif /* RELAY__CONSUMER_TAIL_H */
