/*
 * librelay/consumer/consumer_read.h - private: reading (consumer_read.c
 * owns the reading fields of relay_consumer). Never installed.
 */
#ifndef RELAY__CONSUMER_READ_H
#define RELAY__CONSUMER_READ_H

#include "consumer.h"

/* Read more (coalesced: one XREADGROUP before the loop sleeps), or, when
 * stopping, check whether the stop is complete. */
void relay__consumer_kick(relay_consumer *c);
/* Drop the outstanding reads (their late replies are ignored). */
void relay__consumer_detach_read(relay_consumer *c);
/* relay_consumer_new: the watchers, and @deliver, which gets every
 * entry read (the one way up from reading); _start: the group, then
 * reads; _stop: no more reads, outstanding ones detached. */
void relay__read_init(relay_consumer *c, relay__deliver_fn deliver);
void relay__read_start(relay_consumer *c);
void relay__read_stop(relay_consumer *c);
/* A batch of entries is delivered (@begin 1) or done (0): no new read
 * in between. */
void relay__read_batch(relay_consumer *c, int begin);

#endif /* RELAY__CONSUMER_READ_H */
