/*
 * relay/relay.h - the librelay umbrella header.
 *
 * Includes every public module header. Backend authors additionally
 * include the headers under relay/sys/.
 */
#ifndef RELAY_RELAY_H
#define RELAY_RELAY_H

#include <relay/version.h>  /* generated: in the build tree, or installed */
#include "common.h"
#include "clock.h"
#include "log.h"
#include "pattern.h"
#include "schedule.h"
#include "kind.h"
#include "app.h"
#include "redis.h"
#include "invocation.h"
#include "dlq.h"
#include "runtime.h"
#include "engine.h"
#include "metrics.h"
#include "daemon_metrics.h"
#include "log_ids.h"
#include "occurrence.h"
#include "trace.h"

#endif /* RELAY_RELAY_H */
