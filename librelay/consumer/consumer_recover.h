/*
 * librelay/consumer/consumer_recover.h - private: recovery and
 * ownership (consumer_recover.c owns the reclaim, renewal and XPENDING
 * fields of relay_consumer). Never installed.
 */
#ifndef RELAY__CONSUMER_RECOVER_H
#define RELAY__CONSUMER_RECOVER_H

#include "consumer.h"

/* Run one reclaim pass now, as the reclaim timer does (tests use it with
 * a fixed clock). */
void relay__consumer_reclaim_now(relay_consumer *c);
/* Renew ownership of the messages in memory now. */
void relay__consumer_renew_now(relay_consumer *c);
/* relay_consumer_new: the timers; _start: start them; _stop: no more
 * reclaim and XPENDING; finish (stopped): no more renewal; free. */
void relay__recover_init(relay_consumer *c);
void relay__recover_start(relay_consumer *c);
void relay__recover_stop(relay_consumer *c);
void relay__recover_finish(relay_consumer *c);
void relay__recover_free(relay_consumer *c);

#endif /* RELAY__CONSUMER_RECOVER_H */
