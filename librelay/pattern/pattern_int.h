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
#include <string.h>

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
	/* EventBridge operators (compile_ops.c) */
	RELAY__PAT_EIC,       /* str/len (ASCII-lowercased): equals-ignore-case */
	RELAY__PAT_IPREFIX,   /* str/len (lowercased): prefix, ignoring case */
	RELAY__PAT_ISUFFIX,   /* str/len (lowercased): suffix, ignoring case */
	RELAY__PAT_WILDCARD,  /* str/len: glob, '*' any run, '\\' escapes */
	RELAY__PAT_CIDR,      /* ip/ipver/bits: address in the network */
	RELAY__PAT_RANGE,     /* lo/hi/lo_op/hi_op: lo <(=) value <(=) hi */
	RELAY__PAT_NOT,       /* sub/nsub: anything-but: a present scalar
			       * that satisfies none of sub */
};

/* Largest pattern complexity accepted (doc/patterns.md, section 9). */
#define RELAY__PATTERN_MAX_COMPLEXITY 4096
/* Fewest branches of an $or. */
#define RELAY__PATTERN_MIN_OR 2

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
	double hi;                 /* RANGE: upper bound (num: lower) */
	enum relay__pat_op hi_op;  /* RANGE: LT or LTE (op: GT or GTE) */
	unsigned char ip[16];      /* CIDR: network, host bits zero */
	uint8_t ipver;             /* CIDR: 4 or 6 */
	uint8_t bits;              /* CIDR: prefix length */
	struct relay__pat_alt *sub; /* NOT: the excluded tests (owned) */
	size_t nsub;
} relay__pat_alt;

typedef struct relay__pat_field {
	char *name;                /* owned; may hold NULs */
	size_t name_len;
	relay__pat_alt *alts;      /* owned; nalts >= 1 */
	size_t nalts;
} relay__pat_field;

struct relay__pat_map {
	relay__pat_field *fields;  /* owned; nfields >= 1 unless nors */
	size_t nfields;
	relay__pat_map *ors;       /* $or branches, ANDed with fields; owned */
	size_t nors;               /* 0, or >= 2 */
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

/* ops.c: the EventBridge operators' value tests, shared by every path -- */

/* ASCII lower case of one byte; other bytes unchanged. */
static inline unsigned char relay__lc(unsigned char c)
{
	return c >= 'A' && c <= 'Z' ? (unsigned char)(c | 0x20) : c;
}

/* The eight bytes of @x with ASCII capitals lowercased, other bytes
 * (non-ASCII included) unchanged: a byte b < 0x80 is a capital iff
 * b + 0x3f has its top bit set and b + 0x25 has not (no carry leaves a
 * byte of x & 0x7f..). */
static inline uint64_t relay__lc8(uint64_t x)
{
	uint64_t x7 = x & 0x7f7f7f7f7f7f7f7fULL;
	uint64_t up = (x7 + 0x3f3f3f3f3f3f3f3fULL) &
		      ~(x7 + 0x2525252525252525ULL) & ~x &
		      0x8080808080808080ULL;

	return x | (up >> 2);
}

/* Whether @s (@len bytes) equals @lower (already lowercased), ASCII
 * letters compared without case; eight bytes at a time. */
static inline bool relay__ieq(const char *s, const char *lower, size_t len)
{
	uint64_t x, y;
	size_t i;

	if (len >= 8) {
		for (i = 0; i + 8 <= len; i += 8) {
			memcpy(&x, s + i, 8);
			memcpy(&y, lower + i, 8);
			if (relay__lc8(x) != y)
				return false;
		}
		if (i == len)
			return true;
		memcpy(&x, s + len - 8, 8);
		memcpy(&y, lower + len - 8, 8);
		return relay__lc8(x) == y;
	}
	for (i = 0; i < len; i++)
		if (relay__lc((unsigned char)s[i]) != (unsigned char)lower[i])
			return false;
	return true;
}
/* Whether @s matches wildcard @w ('*' any run of bytes, "\\*" a star,
 * "\\\\" a backslash); linear in len(s) x len(w) at worst. @steps, if
 * not NULL, is increased by the comparisons made. */
bool relay__wild_match(const char *w, size_t wlen, const char *s, size_t len,
		       uint64_t *steps);
/* Split wildcard @w at its literal ends: its first *pre and last *suf
 * bytes hold no star and no escape, and the middle w[pre, wlen - suf) is
 * whole pattern elements. So s matches w iff s is at least pre + suf
 * bytes long, starts with w[0, pre), ends with w[wlen - suf, wlen), and
 * s[pre, len - suf) matches the middle. Returns whether the middle is
 * exactly one star (which matches anything). */
bool relay__wild_split(const char *w, size_t wlen, size_t *pre, size_t *suf);
/* relay__wild_match() for a wildcard that starts and ends with a star and
 * holds no escape (the middle of most split wildcards): each literal run
 * between stars is searched leftmost after the previous one. Same result,
 * same bound. */
bool relay__wild_stars(const char *w, size_t wlen, const char *s, size_t len,
		       uint64_t *steps);
/* Parse an IPv4 dotted quad or an IPv6 text address (RFC 4291 2.2, no
 * zone) into @ip (4 or 16 bytes). Returns 4, 6, or 0 when it is neither. */
int relay__ip_parse(const char *s, size_t len, unsigned char ip[16]);
/* Whether a parsed address (@ver, @ip) lies in CIDR alternative @a. */
bool relay__cidr_has(const relay__pat_alt *a, int ver,
		     const unsigned char ip[16]);
/* Whether number @v lies in RANGE alternative @a. */
static inline bool relay__range_has(const relay__pat_alt *a, double v)
{
	return relay__num_cmp(v, a->num, a->op) &&
	       relay__num_cmp(v, a->hi, a->hi_op);
}

/* compile.c --------------------------------------------------------------- */

void relay__pat_map_fini(relay__pat_map *m);
void relay__pat_alt_fini(relay__pat_alt *a);
int relay__pat_alt_copy(relay__pat_alt *d, const relay__pat_alt *s);
/* Deep copy; on failure @d is partly filled and must be finied. */
int relay__pat_map_copy(relay__pat_map *d, const relay__pat_map *s);

/* match.c ----------------------------------------------------------------- */

/* Whether the event object @obj satisfies @m; @obj may be NULL or a
 * non-object, in which case every field is absent. */
/* Whether alternative @a holds for value @v (NULL: absent). */
bool relay__pat_alt_match(const relay__pat_alt *a, const json_t *v,
			  relay_wall_ms now);
bool relay__pat_map_match(const relay__pat_map *m, const json_t *obj,
			  relay_wall_ms now);

#endif /* RELAY__PATTERN_INT_H */
