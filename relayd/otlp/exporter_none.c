/*
 * exporter_none.c - the exporter of a build without libcurl: it says it
 * is unavailable and exports nothing (relayd logs RELAYD-OTLP03 when an
 * endpoint is set).
 */
#include "otlp.h"

bool relay_otlp_available(void)
{
	return false;
}

int relay_otlp_new(relay_otlp **out, struct ev_loop *loop,
		   const relay_otlp_config *c, relay_logger lg)
{
	(void)loop;
	(void)c;
	(void)lg;
	*out = NULL;
	return RELAY_EINVAL;
}

bool relay_otlp_submit(relay_otlp *x, const relay_span *s)
{
	(void)x;
	(void)s;
	return false;
}

void relay_otlp_flush(relay_otlp *x)
{
	(void)x;
}

void relay_otlp_counts_get(const relay_otlp *x, relay_otlp_counts *out)
{
	(void)x;
	*out = (relay_otlp_counts){ 0, 0, 0, 0 };
}

bool relay_otlp_idle(const relay_otlp *x)
{
	(void)x;
	return true;
}

void relay_otlp_free(relay_otlp *x)
{
	(void)x;
}
