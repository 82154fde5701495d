/*
 * pattern_int.h - the compiled form of a pattern and the helpers shared by
 * the pattern module's files. Never installed.
 *
 * A compiled pattern mirrors the source tree: a map is an AND of fields, a
 * field is an OR of alternatives, an alternative is a literal, an operator
 * or a nested map. Everything the compiler could check is checked: an
 * alternative that exists here is well formed (strings own their bytes,
 * numbers are finite, durations are in range).
 */
#ifndef RELAY__PATTERN_INT_H
#define RELAY__PATTERN_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common.h"
#include "relay/pattern.h"

/* Deepest pattern nesting accepted (maps and lists both count). */
#define RELAY__PATTERN_MAX_DEPTH 64

enum relay__pat_kind {
	RELAY__PAT_EQ_STR,    /* str/len: equal string */
	RELAY__PAT_EQ_NUM,    /* num: equal number (by value) */
	RELAY__PAT_EQ_BOOL,   /* boolean: equal true/false */
	RELAY__PAT_EQ_NULL,   /* equal JSON null */
	RELAY__PAT_PREFIX,    /* str/len: string starts with */
	RELAY__PAT_SUFFIX,    /* str/len: string ends with */
	RELAY__PAT_EXISTS,    /* boolean: key present (1) or absent (0) */
	RELAY__PAT_CMP_NUM,   /* op, num: number compares to num */
	RELAY__PAT_CMP_TIME,  /* op, offset_ms: RFC3339 compares to now+off */
	RELAY__PAT_MAP,       /* map: nested AND of child fields */
};

enum relay__pat_op {
	RELAY__OP_GT,
	RELAY__OP_GTE,
	RELAY__OP_LT,
	RELAY__OP_LTE,
};

typedef struct relay__pat_map relay__pat_map;

typedef struct relay__pat_alt {
	enum relay__pat_kind kind;
	enum relay__pat_op op;     /* CMP_NUM, CMP_TIME */
	int boolean;               /* EQ_BOOL, EXISTS */
	double num;                /* EQ_NUM, CMP_NUM */
	int64_t offset_ms;         /* CMP_TIME: cutoff = now + offset_ms */
	char *str;                 /* EQ_STR, PREFIX, SUFFIX (owned) */
	size_t len;                /* bytes of str (may hold NULs) */
	relay__pat_map *map;       /* MAP (owned) */
} relay__pat_alt;

typedef struct relay__pat_field {
	char *name;                /* owned; may hold NULs */
	size_t name_len;
	relay__pat_alt *alts;      /* owned; nalts >= 1 */
	size_t nalts;
} relay__pat_field;

struct relay__pat_map {
	relay__pat_field *fields;  /* owned; nfields >= 1 */
	size_t nfields;
};

struct relay_pattern {
	relay__pat_map root;
};

/* ptime.c ---------------------------------------------------------------- */

/*
 * An instant with sub-millisecond precision: ms is the floor of the instant
 * in Unix milliseconds, sub is nonzero when the instant lies strictly
 * after ms (a fraction digit beyond the third was nonzero).
 */
typedef struct relay__instant {
	int64_t ms;
	int sub;
} relay__instant;

/* Parse RFC3339 `YYYY-MM-DDTHH:MM:SS[.frac](Z|+HH:MM|-HH:MM)` (T and Z in
 * either case), calendar-validated. Returns 0 or -1. */
int relay__rfc3339_parse(const char *s, size_t len, relay__instant *out);

/* Parse `now()`, `now()+DUR`, `now()-DUR` (DUR: [Nh][Nm][Ns], at least one
 * part, in that order). Returns 0 and the signed offset in ms, -1 when @s
 * is not of that shape. */
int relay__now_parse(const char *s, size_t len, int64_t *offset_ms);

/* Whether instant @t compares to @cutoff (ms) by @op. */
bool relay__instant_cmp(const relay__instant *t, int64_t cutoff,
			enum relay__pat_op op);

/* Whether a double compares to @arg by @op. */
static inline bool relay__num_cmp(double v, double arg, enum relay__pat_op op)
{
	switch (op) {
	case RELAY__OP_GT: return v > arg;
	case RELAY__OP_GTE: return v >= arg;
	case RELAY__OP_LT: return v < arg;
	default: return v <= arg;
	}
}

/*
 * Parse a JSON number (RFC 8259 grammar, already validated by the caller)
 * of @len bytes into the correctly rounded double. Exact fast path for
 * short mantissas, strtod otherwise.
 */
double relay__json_number(const char *s, size_t len);

/* compile.c --------------------------------------------------------------- */

void relay__pat_map_fini(relay__pat_map *m);
/* Deep copy; on failure @d is partly filled and must be finied. */
int relay__pat_map_copy(relay__pat_map *d, const relay__pat_map *s);

/* match.c ----------------------------------------------------------------- */

/* Whether the event object @obj satisfies @m; @obj may be NULL or a
 * non-object, in which case every field is absent. */
bool relay__pat_map_match(const relay__pat_map *m, const json_t *obj,
			  relay_wall_ms now);

#endif /* RELAY__PATTERN_INT_H */
