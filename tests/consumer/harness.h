/*
 * tests/consumer/harness.h - the old entry point of the engine tests'
 * fixture, kept so a test written against it still compiles: the fixture
 * itself is tests/lib/engine_fixture.h, compiled once into the static
 * library `relaytest-engine` (link relaytest_engine_dep). A new test
 * includes "lib/engine_fixture.h" instead, and the private headers it
 * reaches for white-box checks by name.
 */
#ifndef TEST_CONSUMER_HARNESS_H
#define TEST_CONSUMER_HARNESS_H

#include "lib/engine_fixture.h"
#include "../../librelay/consumer/consumer.h"
#include "../../librelay/consumer/consumer_inv.h"
#include "../../librelay/consumer/consumer_msg.h"
#include "../../librelay/consumer/consumer_recover.h"
#include "../../librelay/redis/backend.h"
#include "../../librelay/invops/invops.h"  /* relay__inv_complete_ack */

#endif /* TEST_CONSUMER_HARNESS_H */
