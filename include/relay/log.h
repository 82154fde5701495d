/*
 * relay/log.h - the host's logger.
 *
 * The library never prints. Objects that may want to say something take a
 * relay_logger (a callback plus its payload and a minimum level); a NULL
 * callback discards everything. Message ids (msgid) are short stable tokens
 * such as "RELAY-DLQ01" that alerting can match on.
 */
#ifndef RELAY_LOG_H
#define RELAY_LOG_H

#include "common.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum relay_log_level {
	RELAY_LOG_DEBUG = 0,
	RELAY_LOG_INFO = 1,
	RELAY_LOG_WARN = 2,
	RELAY_LOG_ERROR = 3,
} relay_log_level;

/**
 * relay_log_fn - a log sink.
 * @payload: the logger's payload.
 * @lvl: severity.
 * @msgid: stable message id, never NULL (may be "").
 * @msg: one line of text, no trailing newline, borrowed for the call.
 */
typedef void (*relay_log_fn)(void *payload, relay_log_level lvl,
			     const char *msgid, const char *msg);

typedef struct relay_logger {
	relay_log_fn fn;        /* NULL: discard */
	void *payload;          /* passed to fn */
	relay_log_level level;  /* messages below this level are skipped */
} relay_logger;

/**
 * relay_log_level_parse() - parse "DEBUG", "INFO", "WARN" or "ERROR"
 * (case-insensitive; "WARNING" accepted).
 * Returns: 0 and *out set, or RELAY_EINVAL.
 */
RELAY_EXTERN int relay_log_level_parse(const char *s, relay_log_level *out);

/** relay_log_level_name() - "DEBUG", "INFO", "WARN" or "ERROR". */
RELAY_EXTERN const char *relay_log_level_name(relay_log_level lvl);

#ifdef __cplusplus
}
#endif

#endif /* RELAY_LOG_H */
