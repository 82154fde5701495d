/*
 * librelay/consumer/consumer_sched.h - private: the engine's side of a
 * schedule occurrence (consumer_sched.c owns the schedule fields of
 * relay__msg). The envelope helpers it shares with occurrence.c are in
 * sched.h. Never installed.
 */
#ifndef RELAY__CONSUMER_CSCHED_H
#define RELAY__CONSUMER_CSCHED_H

#include "consumer_msg.h"

/* Classify an envelope (m->event): placeholder, obsolete, hold, or one
 * invocation. Returns 0 or RELAY_ENOMEM. */
int relay__csched_classify(relay__msg *m);
/* Send claim_classification (with the pin when there is one). */
int relay__csched_claim(relay__msg *m);
/* After the classification reply: obsolete → ACK, hold → release,
 * else run the invocation. @first: this delivery claimed it. */
void relay__csched_classified(relay__msg *m, int first);
/* Free the schedule fields of @m. */
void relay__csched_free(relay__msg *m);

#endif /* RELAY__CONSUMER_CSCHED_H */
