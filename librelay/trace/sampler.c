/*
 * sampler.c - the OpenTelemetry SDK samplers named by
 * OTEL_TRACES_SAMPLER: always_on, always_off, traceidratio and their
 * parentbased forms.
 *
 * traceidratio decides on the trace id alone, so every service that
 * samples a trace with the same ratio agrees: the least significant 56
 * bits of the id (random in a W3C level-2 id, and in every id we make)
 * are compared with the rejection threshold (1 - ratio) * 2^56.
 */
#include <stdlib.h>
#include <string.h>

#include "relay/trace.h"

static const struct {
	const char *name;
	relay_trace_sampler_kind kind;
} names[] = {
	{ "always_on", RELAY_SAMPLER_ALWAYS_ON },
	{ "always_off", RELAY_SAMPLER_ALWAYS_OFF },
	{ "traceidratio", RELAY_SAMPLER_TRACEIDRATIO },
	{ "parentbased_always_on", RELAY_SAMPLER_PARENTBASED_ALWAYS_ON },
	{ "parentbased_always_off", RELAY_SAMPLER_PARENTBASED_ALWAYS_OFF },
	{ "parentbased_traceidratio", RELAY_SAMPLER_PARENTBASED_TRACEIDRATIO },
};

int relay_trace_sampler_parse(relay_trace_sampler *out, const char *name,
			      const char *arg)
{
	size_t i;
	double r = 1.0;
	char *end;

	out->kind = RELAY_SAMPLER_PARENTBASED_ALWAYS_ON;
	out->ratio = 1.0;
	if (!name || !*name)
		return 0;
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strcmp(name, names[i].name) == 0)
			break;
	if (i == sizeof(names) / sizeof(names[0]))
		return RELAY_EINVAL;
	if (arg && *arg && (names[i].kind == RELAY_SAMPLER_TRACEIDRATIO ||
	    names[i].kind == RELAY_SAMPLER_PARENTBASED_TRACEIDRATIO)) {
		r = strtod(arg, &end);
		/* !(r >= 0) also rejects NaN */
		if (*end || end == arg || !(r >= 0.0) || r > 1.0)
			return RELAY_EINVAL;
	}
	out->kind = names[i].kind;
	out->ratio = r;
	return 0;
}

static bool by_ratio(double ratio, const uint8_t id[RELAY_TRACE_ID_SIZE])
{
	uint64_t rnd = 0, threshold;
	size_t i;

	if (ratio >= 1.0)
		return true;
	if (ratio <= 0.0)
		return false;
	for (i = RELAY_TRACE_ID_SIZE - 7; i < RELAY_TRACE_ID_SIZE; i++)
		rnd = rnd << 8 | id[i];
	/* 2^56 is exact in a double; the product is below it. */
	threshold = (uint64_t)((1.0 - ratio) * 72057594037927936.0);
	return rnd >= threshold;
}

bool relay_trace_sample(const relay_trace_sampler *s,
			const relay_trace_context *parent,
			const uint8_t trace_id[RELAY_TRACE_ID_SIZE])
{
	switch (s->kind) {
	case RELAY_SAMPLER_ALWAYS_ON:
		return true;
	case RELAY_SAMPLER_ALWAYS_OFF:
		return false;
	case RELAY_SAMPLER_TRACEIDRATIO:
		return by_ratio(s->ratio, trace_id);
	case RELAY_SAMPLER_PARENTBASED_ALWAYS_ON:
		return parent ? (parent->flags & RELAY_TRACE_FLAG_SAMPLED) != 0
			      : true;
	case RELAY_SAMPLER_PARENTBASED_ALWAYS_OFF:
		return parent ? (parent->flags & RELAY_TRACE_FLAG_SAMPLED) != 0
			      : false;
	case RELAY_SAMPLER_PARENTBASED_TRACEIDRATIO:
		return parent ? (parent->flags & RELAY_TRACE_FLAG_SAMPLED) != 0
			      : by_ratio(s->ratio, trace_id);
	}
	return false;
}
