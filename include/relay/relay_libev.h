/*
 * relay/relay_libev.h - attaching librelay objects to a host's libev loop.
 *
 * The only public header that includes <ev.h>. The library never owns the
 * loop: the host creates it, attaches librelay objects, and runs it.
 */
#ifndef RELAY_RELAY_LIBEV_H
#define RELAY_RELAY_LIBEV_H

#include <ev.h>

#include "common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- redis (owner: redis module) ---------------------------------- */

/* ---- runtime (owner: runtime module) ------------------------------ */

#ifdef __cplusplus
}
#endif

#endif /* RELAY_RELAY_LIBEV_H */
