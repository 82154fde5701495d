/*
 * fuzz-cron.c - libFuzzer target: arbitrary bytes as a cron expression.
 *
 * Input layout: byte 0 picks a time zone from a fixed list, bytes 1-4
 * (big-endian) an instant between 1970 and 2106, the rest is the
 * expression. relay_cron_parse() must succeed or fail with RELAY_EPARSE,
 * a one-line message and a column inside the expression. A parsed
 * expression must obey the next/prev invariants around the instant:
 * next(t) > t, prev(next(t)) == next(t), next(next(t) - 1) == next(t),
 * next(prev(next(t) - 1)) == next(t), prev(t) <= t, and an expression
 * that never fires ahead never fires behind either.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "relay/schedule.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const zones[] = { "UTC", "America/New_York",
	"Europe/Berlin", "Australia/Lord_Howe", "Asia/Kolkata",
	"Pacific/Apia", "America/Sao_Paulo", "Europe/Dublin" };

#define NZONES (sizeof(zones) / sizeof(zones[0]))

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	relay_cron *c = NULL;
	relay_error err;
	int64_t t, nx, pv, x;
	char *expr;
	int rc;

	if (size < 5 || size > 512)
		return 0;
	t = (int64_t)((uint32_t)data[1] << 24 | (uint32_t)data[2] << 16 |
		      (uint32_t)data[3] << 8 | data[4]);
	expr = malloc(size - 5 + 1);
	if (!expr)
		abort();
	memcpy(expr, data + 5, size - 5);
	expr[size - 5] = '\0';
	rc = relay_cron_parse(&c, expr, zones[data[0] % NZONES], &err);
	if (rc == RELAY_ENOTFOUND) { /* no tzdata here: fall back to UTC */
		rc = relay_cron_parse(&c, expr, "UTC", &err);
	}
	if (rc) {
		if (rc != RELAY_EPARSE || c != NULL || err.code != rc ||
		    err.text[0] == '\0' || strchr(err.text, '\n') ||
		    err.column < 1 || (size_t)err.column > strlen(expr) + 1)
			abort();
		free(expr);
		return 0;
	}
	rc = relay_cron_next(c, t, &nx);
	if (rc == 0) {
		if (nx <= t || relay_cron_prev(c, nx, &pv) || pv != nx ||
		    relay_cron_next(c, nx - 1, &x) || x != nx)
			abort();
		if (relay_cron_prev(c, nx - 1, &pv) == 0 &&
		    (pv >= nx || relay_cron_next(c, pv, &x) || x != nx))
			abort();
		if (relay_cron_prev(c, t, &pv) == 0 && pv > t)
			abort();
	} else if (rc != RELAY_ENOTFOUND ||
		   relay_cron_prev(c, t, &pv) != RELAY_ENOTFOUND) {
		abort();
	}
	relay_cron_free(c);
	free(expr);
	return 0;
}
