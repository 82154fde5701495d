/*
 * log.c - forwarding to the host's logger.
 */
#include <stdio.h>
#include <strings.h>

#include "common.h"

int relay_log_level_parse(const char *s, relay_log_level *out)
{
	static const struct {
		const char *name;
		relay_log_level lvl;
	} names[] = {
		{ "DEBUG", RELAY_LOG_DEBUG }, { "INFO", RELAY_LOG_INFO },
		{ "WARN", RELAY_LOG_WARN },   { "WARNING", RELAY_LOG_WARN },
		{ "ERROR", RELAY_LOG_ERROR },
	};
	size_t i;

	if (!s)
		return RELAY_EINVAL;
	for (i = 0; i < RELAY__ARRAY_SIZE(names); i++) {
		if (strcasecmp(s, names[i].name) == 0) {
			*out = names[i].lvl;
			return 0;
		}
	}
	return RELAY_EINVAL;
}

const char *relay_log_level_name(relay_log_level lvl)
{
	switch (lvl) {
	case RELAY_LOG_DEBUG: return "DEBUG";
	case RELAY_LOG_INFO: return "INFO";
	case RELAY_LOG_WARN: return "WARN";
	default: return "ERROR";
	}
}

bool relay__log_enabled(const relay_logger *lg, relay_log_level lvl)
{
	return lg && lg->fn && lvl >= lg->level;
}

void relay__log(const relay_logger *lg, relay_log_level lvl, const char *msgid,
		const char *fmt, ...)
{
	char line[1024];
	va_list ap;

	if (!relay__log_enabled(lg, lvl))
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	lg->fn(lg->payload, lvl, msgid ? msgid : "", line);
}
