/*
 * ruleset_int.h - the match index of a ruleset and the matcher's scratch.
 *
 * A built ruleset is a trie of field paths (only objects are descended).
 * Each trie node holds the distinct leaf predicates that some rule tests
 * on the value at that path, deduplicated across rules: a hash of string
 * literals, short lists of prefixes, suffixes, numbers, numeric and
 * temporal cutoffs, and single slots for true/false/null and presence.
 * Every rule is a small AND/OR/NOT program over leaf ids.
 *
 * Matching an event fires leaves (stamped with the event's epoch, so
 * nothing is cleared between events). A rule is evaluated only when one of
 * its anchor leaves fired: the anchor is a set of leaves at least one of
 * which must fire for the rule to match (chosen at build time to fire
 * rarely). Rules without an anchor (e.g. only exists: false) are evaluated
 * for every event.
 */
#ifndef RELAY__RULESET_INT_H
#define RELAY__RULESET_INT_H

#include <string.h>

#include "pattern_int.h"

#define RELAY__NONE UINT32_MAX

/* An anything-but of at most this many tests is compiled into its rule's
 * program (NOT of each test), a longer one fires a hit leaf (ruleset.c
 * gen_not). */
#define RELAY__NOT_INLINE 8

/* Deepest JSON nesting accepted by the raw matcher: a value nested in N
 * containers is at depth N + 1, at most this (as jansson's parser). */
#define RELAY__JSON_MAX_DEPTH 2048

/* A string keyed entry: a child node (val = node index) or a leaf. */
typedef struct relay__sent {
	uint64_t w0, w1;     /* relay__key_words() of the key */
	const char *s;       /* borrowed from the ruleset's pattern copies */
	uint32_t len;
	uint32_t hash;
	uint32_t val;
	uint32_t idx;        /* its index in ents (RELAY__NONE: an empty
			      * slot of the table) */
} relay__sent;

/*
 * String -> uint32 map: insertion-ordered entries plus a hash table of
 * copies of them (open addressing, load at most 1/2). A lookup compares
 * the key words in the slot it probes, with no second load from ents:
 * most lookups are of an event's values and keys, at random.
 */
typedef struct relay__smap {
	relay__sent *ents;
	uint32_t n, cap;
	relay__sent *slot;   /* the table: copies of ents, idx NONE empty */
	uint32_t mask;       /* table size - 1 */
	uint64_t lenmask;    /* bit min(len, 63) set for every key length */
} relay__smap;

typedef struct relay__numleaf {
	double num;
	enum relay__pat_op op;  /* unused for equality */
	uint32_t leaf;
} relay__numleaf;

typedef struct relay__timeleaf {
	int64_t offset_ms;
	enum relay__pat_op op;
	uint32_t leaf;
} relay__timeleaf;

/*
 * Threshold leaves come in two kinds (thresh.c). A leaf that anchors a
 * rule or feeds an anything-but must fire while the event is scanned: at
 * a node, those of one comparison form a group of distinct thresholds,
 * ascending, at [off, off + n) of the ruleset's thr_* arrays; a value
 * satisfies a prefix of a GT or GTE group and a suffix of an LT or LTE
 * group, found by binary search. Every other threshold leaf is "lazy":
 * scanning only keeps the value at its node, and the leaf is settled when
 * a rule that reads it is evaluated (relay__lazy, relay__settle). So are
 * the EIC, IPREFIX, ISUFFIX, WILDCARD and CIDR leaves that fire nothing
 * (relay__tnode.xlazy).
 */
typedef struct relay__thr {
	uint32_t off, n;
} relay__thr;

typedef struct relay__lazy {
	const struct relay__xleaf *x; /* an operator leaf settled from the
				 * string kept at its node (borrowed from the
				 * node's xlazy), or NULL: a threshold */
	double num;             /* CMP_NUM: the threshold */
	int64_t offset_ms;      /* CMP_TIME: cutoff = now + offset_ms */
	const struct relay__pat_alt *range; /* RANGE (borrowed), or NULL */
	uint32_t node;          /* where its value is kept, or NONE: the
				 * leaf (the index in lazy_by) is not lazy */
	uint8_t op;             /* enum relay__pat_op */
	uint8_t time;           /* CMP_TIME, else CMP_NUM or RANGE */
} relay__lazy;

/* An operator leaf tested one by one (compile_ops.c operators whose value
 * test is not a lookup): the alternative is borrowed from the ruleset's
 * pattern copies. A wildcard is split at build time (relay__wild_split)
 * into a literal head and tail, compared as bytes, and the middle, the
 * only part left to the wildcard matcher, skipped when it is one star. */
typedef struct relay__xleaf {
	const relay__pat_alt *a;  /* NULL for a lazy EIC leaf (moved out of
				   * its node's eic map) */
	const char *s;            /* the literal (a->str, or the map's key;
				   * borrowed from the pattern copies) */
	uint32_t len;
	uint32_t leaf;
	uint8_t kind;             /* enum relay__pat_kind */
	uint32_t pre, suf;        /* WILDCARD: literal head and tail bytes */
	uint8_t mid_any;          /* WILDCARD: the middle is "*" */
	uint8_t mid_stars;        /* WILDCARD: the middle is "*...*" with no
				   * escape (relay__wild_stars) */
	uint32_t v4net, v4mask;   /* CIDR of IPv4: the network and mask as
				   * big-endian numbers */
} relay__xleaf;

typedef struct relay__tnode {
	/* what the scanner reads at every member it visits, first: one
	 * cache line or two of a node of about 460 bytes */
	relay__smap kids;         /* field name -> child node index */
	uint32_t kbase;           /* its kids' slots in the matcher's
				   * kid_next: [kbase, kbase + kids.n + 1) */
	uint32_t scalar;          /* leaf fired by a non-container, or NONE */
	uint32_t present;         /* leaf fired by any value, or NONE */
	uint32_t eq_true, eq_false, eq_null;  /* leaves or NONE */
	uint8_t want_str;         /* some string predicate here */
	uint8_t eq_only;          /* string literals are its only string
				   * tests (scan.c looks them up inline) */
	uint8_t want_num;         /* some number predicate here */
	relay__smap eq_str;       /* literal -> leaf */
	relay__smap prefix;       /* prefix -> leaf, relay__affix hashes */
	relay__smap suffix;       /* suffix -> leaf, hashed back to front */
	uint32_t *prefix_lens;    /* distinct prefix lengths, ascending */
	uint32_t *suffix_lens;
	uint32_t nprefix_lens, nsuffix_lens;
	relay__numleaf *eq_num;   /* while rules are added; freed (NULL)
				   * once eq_tab holds them */
	relay__numleaf *cmp_num;
	relay__timeleaf *cmp_time;
	uint32_t neq_num, ncmp_num, ncmp_time;
	relay__numleaf *eq_tab;   /* eq_num hashed by value (open
				   * addressing, empty: leaf NONE; NULL when
				   * neq_num is 0): one probe where a search
				   * waits on a load per halving */
	uint32_t eq_tab_mask;
	relay__thr num_thr[4];    /* firing cmp_num leaves, by op */
	relay__thr time_thr[4];   /* firing cmp_time leaves, by op */
	uint8_t keep_num;         /* lazy cmp_num leaves here */
	uint8_t keep_time;        /* lazy cmp_time leaves here */
	uint8_t fire_num;         /* some num_thr group is not empty */
	uint8_t fire_time;        /* some time_thr group is not empty */
	relay__smap eic;          /* lowercased literal -> leaf; hashed and
				   * compared ignoring ASCII case */
	relay__xleaf *xstr;       /* IPREFIX ISUFFIX WILDCARD CIDR leaves */
	relay__xleaf *xnum;       /* RANGE leaves (after build: the firing
				   * ones; the others are lazy) */
	uint32_t nxstr, nxnum;
	uint32_t xcut[4];         /* xstr by kind after build: IPv4 CIDRs
				   * [0, xcut[0]), IPv6 CIDRs, wildcards,
				   * IPREFIX, ISUFFIX [xcut[3], nxstr) */
	uint8_t want_ip;          /* some CIDR leaf in xstr */
	relay__xleaf *xlazy;      /* the EIC IPREFIX ISUFFIX WILDCARD CIDR
				   * leaves that fire nothing while scanning
				   * (they anchor no rule, feed no
				   * anything-but; thresh.c moves them out
				   * of eic and xstr): tested
				   * only when a rule that reads them is
				   * evaluated, on the string kept here */
	uint32_t nxlazy;
	uint8_t keep_str;         /* keep a string value here: lazy time
				   * thresholds or xlazy leaves */
	uint32_t *leaves;         /* every leaf of this node (for resets) */
	uint32_t nleaves, cap_leaves;
} relay__tnode;

enum relay__expr_op {
	RELAY__X_LEAF,   /* arg fired */
	RELAY__X_NLEAF,  /* arg did not fire */
	RELAY__X_AND,
	RELAY__X_OR,
};

typedef struct relay__expr {
	uint32_t op;     /* enum relay__expr_op */
	uint32_t arg;    /* LEAF/NLEAF: leaf id */
	uint32_t end;    /* index just past this subtree */
} relay__expr;

/*
 * What evaluating one candidate rule reads, kept together so that a
 * candidate costs one cache line, not one per array (relay__match_end).
 * Built in rule id order; the last step of the build (relay__order_rules)
 * moves them into anchor order (the rules of anchor leaf 0, then of leaf
 * 1, ...), the order in which a fired leaf makes them candidates, and from
 * then on a rule is named by its place there (its "slot") in
 * anchor_rules, always, the matcher's rule_stamp and cand.
 */
typedef struct relay__rule {
	uint32_t id;              /* the rule's id (set by the reorder) */
	uint32_t prog_start;      /* index of its root expr in prog */
	uint32_t prog_late;       /* its root AND's first conjunct with a
				   * late test (a threshold or a lazy
				   * operator; the others come first), or
				   * NONE: root not an AND */
	uint32_t cnf_start;       /* offset in cnf, or NONE: not flat */
	uint32_t cnf_late;        /* offset of its clauses with late tests
				   * (after the others) */
	uint32_t first[4];        /* two clauses that hold whenever the
				   * rule does, each the OR of two literals
				   * (leaf << 1 | negated): its first flat
				   * clauses (or root conjuncts) of at most
				   * two literals without a late test, a
				   * clause of one padded with
				   * RELAY__LIT_FALSE, a missing one
				   * RELAY__LIT_TRUE twice; tested for every
				   * candidate before it is evaluated, so
				   * its flat clauses do not repeat them */
} relay__rule;

/* Literals that always and never hold: leaf id nleaves, negated or not
 * (the matcher's leaf_stamp has one entry more, never stamped). */
#define RELAY__LIT_TRUE(rs) ((rs)->nleaves << 1 | 1)
#define RELAY__LIT_FALSE(rs) ((rs)->nleaves << 1)

struct relay_ruleset {
	bool built;
	relay_pattern **pats;     /* owned copies, in id order */
	uint32_t npats, cap;
	relay__tnode *nodes;      /* nodes[0] is the event object */
	uint32_t nnodes, cap_nodes;
	uint32_t nkidslots;       /* sum over nodes of kids.n + 1 */
	uint32_t nleaves;
	uint32_t *leaf_node;      /* leaf -> node (build statistics) */
	uint8_t *leaf_kind;       /* leaf -> enum relay__pat_kind */
	uint32_t cap_leaves;
	relay__expr *prog;        /* all rule programs */
	uint32_t nprog, cap_prog;
	relay__rule *rules;       /* per rule, what evaluation reads */
	uint32_t *cnf;            /* flat clauses (see relay__eval_cnf) */
	uint32_t ncnf, cap_cnf;
	uint32_t *anchor_off;     /* leaf -> [off, off') into anchor_rules
				   * (rule slots after the build) */
	uint32_t *anchor_rules;
	uint32_t *always;         /* rules without an anchor, ascending */
	uint32_t nalways;
	/* anything-but: a leaf tested inside one also fires that
	 * anything-but's "hit" leaf (leaf -> [off, off') into also) */
	uint32_t *also_off;       /* NULL when there is no anything-but */
	uint32_t *also;
	uint32_t *pairs;          /* build only: (inner, hit) pairs */
	uint32_t npairs, cap_pairs;
	/* firing threshold groups (relay__thr): keys and leaf ids; thr_num
	 * holds the numbers of CMP_NUM groups, thr_ms the offsets of
	 * CMP_TIME ones */
	double *thr_num;
	int64_t *thr_ms;
	uint32_t *thr_leaf;
	relay__lazy *lazy_by;     /* leaf -> how to settle it when it is
				   * lazy (node NONE: it is not) */
	uint8_t *leaf_lazy;       /* leaf -> 1 when it is lazy (lazy_by's
				   * node is not NONE; a byte a leaf, for
				   * the check on every clause literal), or
				   * NULL: none is */
};

struct relay_matcher {
	const relay_ruleset *rs;
	uint32_t epoch;
	uint32_t *leaf_stamp;     /* leaf fired iff stamp == epoch */
	uint32_t *rule_stamp;     /* rule slot already a candidate */
	uint32_t *node_seen;      /* node visited (duplicate keys) */
	/* The order of keys events have had, learned as they are scanned
	 * (scan.c): at a node's kbase the kids entry its first key was last
	 * time, at kbase + 1 + e the one that followed entry e; NONE when
	 * not known. A key equal to the prediction is not hashed. */
	uint32_t *kid_next;
	/* What this event fired and visited, in order: leaf ids, and node
	 * ids with RELAY__LOG_NODE set. A repeated key forgets exactly what
	 * its previous value logged, in [node_from, node_to). Kept only
	 * when logging: a raw event is scanned without the log first, and
	 * again with it if a key repeats (scan.c), since repeated keys are
	 * rare and the log costs a store per fired leaf. */
	uint32_t *log;
	uint32_t nlog, cap_log;
	bool logging;             /* keep the log (second scan) */
	bool log_lost;            /* could not grow: full resets instead */
	uint32_t *node_from, *node_to;
	/* the value at a node with lazy thresholds: a number iff num_stamp
	 * == epoch, an RFC 3339 instant iff time_stamp == epoch */
	uint32_t *num_stamp, *time_stamp;
	/* the string value at a node that keeps one (keep_str) iff
	 * str_stamp == epoch, pointing into the event: str_raw/len. Lazy
	 * time thresholds parse it when a rule first needs it
	 * (relay__lazy_time; time_done == epoch once parsed, time_ok
	 * whether it parsed), lazy operator leaves test it
	 * (relay__xleaf_holds; an address is parsed once: ip_done ==
	 * epoch, ip_ver, ip) */
	uint32_t *str_stamp;
	const char **str_raw;
	size_t *str_len;
	uint32_t *ip_done;
	uint8_t *ip_ver;
	unsigned char (*ip)[16];
	uint32_t *lazy_done;      /* lazy operator leaf tested (leaf ids) */
	uint32_t *time_done;
	uint8_t *time_ok;
	double *val_num;
	relay__instant *val_t;
	uint32_t *cand;           /* candidate rule slots, in order found */
	uint32_t ncand;
	uint32_t *ids;            /* results */
	relay__buf scratch;       /* unescaped strings */
	relay_wall_ms now;
	uint64_t work;            /* operator test steps (bound tests) */
	char errstr[96];
};

/*
 * Byte equality of two strings of @len bytes without a libc call: short
 * keys and literals dominate, and memcmp's call and dispatch cost more
 * than the compare. Loads overlap rather than read past either string.
 */
static inline bool relay__bytes_eq(const char *a, const char *b, size_t len)
{
	uint64_t x, y, x2, y2;
	uint32_t u, v, u2, v2;

	if (len >= 8) {
		if (len > 16)
			return memcmp(a, b, len) == 0;
		memcpy(&x, a, 8);
		memcpy(&y, b, 8);
		memcpy(&x2, a + len - 8, 8);
		memcpy(&y2, b + len - 8, 8);
		return ((x ^ y) | (x2 ^ y2)) == 0;
	}
	if (len >= 4) {
		memcpy(&u, a, 4);
		memcpy(&v, b, 4);
		memcpy(&u2, a + len - 4, 4);
		memcpy(&v2, b + len - 4, 4);
		return ((u ^ v) | (u2 ^ v2)) == 0;
	}
	switch (len) {
	case 3:
		if (a[2] != b[2])
			return false;
		/* fall through */
	case 2:
		if (a[1] != b[1])
			return false;
		/* fall through */
	case 1:
		return a[0] == b[0];
	default:
		return true;
	}
}

#define RELAY__LOG_NODE 0x80000000u

/*
 * Prefix and suffix keys are hashed one byte at a time so that the
 * hashes of every prefix (or suffix) of a string come out of one pass:
 * matching a string against any number of prefixes costs its length
 * plus one lookup per distinct prefix length, not one compare per
 * prefix.
 */
#define RELAY__AFFIX_SEED 0xcbf29ce484222325ULL

static inline uint64_t relay__affix_step(uint64_t h, unsigned char c)
{
	return (h ^ c) * 0x100000001b3ULL;
}

static inline uint32_t relay__affix_fin(uint64_t h)
{
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	return (uint32_t)h;
}

uint32_t relay__hash(const char *s, size_t len);
/* Hash of @s with ASCII letters lowercased (equals-ignore-case keys). */
uint32_t relay__ihash(const char *s, size_t len);
/* Find @s ignoring ASCII case in a map of lowercased keys hashed by
 * relay__ihash(); RELAY__NONE if absent. */
uint32_t relay__smap_find_ci(const relay__smap *m, const char *s, size_t len);
/* Add s -> val (hash @hash, or relay__key_hash for _put); the caller
 * checked that s is absent. The map borrows @s. 0 or RELAY_ENOMEM/EINVAL. */
int relay__smap_put_h(relay__smap *m, const char *s, size_t len, uint32_t val,
		      uint32_t hash);
int relay__smap_put(relay__smap *m, const char *s, size_t len, uint32_t val);
void relay__smap_fini(relay__smap *m);
/* As relay__smap_find() with the key's hash given (affix maps). */
uint32_t relay__smap_find_h(const relay__smap *m, const char *s, size_t len,
			    uint32_t hash);

/*
 * Two words that, with the length, identify a key of at most 16 bytes:
 * two overlapping loads cover every byte (8-byte loads from 8 bytes on,
 * 4-byte ones from 4, and bytes 0, len/2 and len-1 below that). Field
 * names and literals are short, so a lookup compares these words and
 * never the bytes; longer keys compare their bytes too.
 */
static inline void relay__key_words(const char *s, size_t len, uint64_t *w0,
				    uint64_t *w1)
{
	uint32_t u, v;

	if (len >= 8) {
		memcpy(w0, s, 8);
		memcpy(w1, s + len - 8, 8);
	} else if (len >= 4) {
		memcpy(&u, s, 4);
		memcpy(&v, s + len - 4, 4);
		*w0 = u;
		*w1 = v;
	} else {
		*w0 = len ? (uint64_t)(unsigned char)s[0] |
			    (uint64_t)(unsigned char)s[len >> 1] << 8 |
			    (uint64_t)(unsigned char)s[len - 1] << 16 : 0;
		*w1 = 0;
	}
}

/*
 * The hash of the plain maps (field names, literals): from the key words
 * for keys of at most 16 bytes (they identify the key), relay__hash() of
 * every byte for longer ones (so that long keys sharing their ends do not
 * share a hash).
 */
static inline uint32_t relay__key_hash(const char *s, size_t len, uint64_t w0,
				       uint64_t w1)
{
	uint64_t h;

	if (len > 16)
		return relay__hash(s, len);
	h = (w0 * 0xbf58476d1ce4e5b9ULL) ^ (w1 * 0x94d049bb133111ebULL) ^ len;
	h ^= h >> 32;
	h *= 0x9e3779b97f4a7c15ULL;
	return (uint32_t)(h >> 32);
}

/* Whether the @e->len bytes at @s are entry @e's key: from its key words
 * when it is at most 16 bytes (no load of the key itself, which lives
 * apart, in the pattern copies), else from the bytes. */
static inline bool relay__sent_at(const relay__sent *e, const char *s)
{
	uint64_t w0, w1;

	if (e->len > 16)
		return memcmp(e->s, s, e->len) == 0;
	relay__key_words(s, e->len, &w0, &w1);
	return w0 == e->w0 && w1 == e->w1;
}

/* Whether entry @e is the key [s, len) of words @w0, @w1. */
static inline bool relay__sent_is(const relay__sent *e, const char *s,
				  size_t len, uint64_t w0, uint64_t w1)
{
	return e->w0 == w0 && e->w1 == w1 && e->len == len &&
	       (len <= 16 || memcmp(e->s, s, len) == 0);
}

/* The table slot of the key [s, len) of words @w0, @w1, or NULL. */
static inline const relay__sent *relay__smap_slot(const relay__smap *m,
						  const char *s, size_t len,
						  uint64_t w0, uint64_t w1)
{
	const relay__sent *e;
	uint32_t i;

	if (!m->slot)
		return NULL;
	for (i = relay__key_hash(s, len, w0, w1) & m->mask;;
	     i = (i + 1) & m->mask) {
		e = &m->slot[i];
		if (e->idx == RELAY__NONE)
			return NULL;
		if (relay__sent_is(e, s, len, w0, w1))
			return e;
	}
}

/* The index in ents of the key [s, len) of words @w0, @w1, or NONE. */
static inline uint32_t relay__smap_find_at(const relay__smap *m,
					   const char *s, size_t len,
					   uint64_t w0, uint64_t w1)
{
	const relay__sent *e = relay__smap_slot(m, s, len, w0, w1);

	return e ? e->idx : RELAY__NONE;
}

/*
 * The value of key @s in a plain map, or RELAY__NONE: one hash of at
 * most three multiplications and, per probe, a compare of the stored
 * key words (plus the bytes of a key over 16 bytes).
 */
static inline uint32_t relay__smap_find(const relay__smap *m, const char *s,
					size_t len)
{
	const relay__sent *e;
	uint64_t w0, w1;

	relay__key_words(s, len, &w0, &w1);
	e = relay__smap_slot(m, s, len, w0, w1);
	return e ? e->val : RELAY__NONE;
}

/*
 * The value of key @s, or RELAY__NONE. Most keys an event has are not in
 * the map (a rule names a few fields of many), so a length filter rejects
 * them before any hashing or comparing.
 */
static inline uint32_t relay__smap_get(const relay__smap *m, const char *s,
				       size_t len)
{
	if (!((m->lenmask >> (len < 63 ? len : 63)) & 1))
		return RELAY__NONE;
	return relay__smap_find(m, s, len);
}

/* matcher.c: leaf evaluation shared by the raw and json_t paths. */
void relay__fire(relay_matcher *m, uint32_t leaf);
/* @n is trie node number @node (both given: the callers have both). */
void relay__eval_string(relay_matcher *m, const relay__tnode *n,
			uint32_t node, const char *s, size_t len);

/* The string literals of @n: fire the one @s equals, if any (all of
 * relay__eval_string at a node whose only string tests they are,
 * eq_only: the scanner calls this inline). */
static inline void relay__eval_eq_str(relay_matcher *m, const relay__tnode *n,
				      const char *s, size_t len)
{
	uint32_t l = relay__smap_get(&n->eq_str, s, len);

	if (l != RELAY__NONE)
		relay__fire(m, l);
}
void relay__eval_number(relay_matcher *m, const relay__tnode *n,
			uint32_t node, double v);
void relay__node_reset(relay_matcher *m, uint32_t node);
void relay__mlog_slow(relay_matcher *m, uint32_t v);

/* Append @v to the event's log when logging (inline: once per fired
 * leaf). */
static inline void relay__mlog(relay_matcher *m, uint32_t v)
{
	if (!m->logging)
		return;
	if (m->nlog < m->cap_log && !m->log_lost)
		m->log[m->nlog++] = v;
	else
		relay__mlog_slow(m, v);
}
void relay__node_forget(relay_matcher *m, uint32_t node);
void relay__match_begin(relay_matcher *m, relay_wall_ms now);

/* ruleset.c: grow *p (elements of @size, capacity *cap) to hold @need;
 * 0 or RELAY_ENOMEM. */
int relay__grow(void **p, uint32_t *cap, uint32_t need, size_t size);

/* ruleset_plan.c (steps of relay_ruleset_build, 0 or RELAY_ENOMEM): the
 * anchors (after the also lists); the order of each rule's tests and its
 * flat clause lists (after the anchors, whose order they follow). */
int relay__build_anchors(relay_ruleset *rs);
int relay__build_cnf(relay_ruleset *rs);
/* The last step: rules[] into anchor order, anchor_rules and always
 * naming slots (relay__rule). */
int relay__order_rules(relay_ruleset *rs);

/*
 * Whether @leaf must fire while an event is scanned: it anchors a rule or
 * feeds an anything-but. Any other threshold or EIC, IPREFIX, ISUFFIX,
 * WILDCARD or CIDR leaf is lazy (thresh.c), settled only for a rule that
 * reads it. Valid once the anchors and the also lists are built.
 */
static inline bool relay__leaf_fires(const relay_ruleset *rs, uint32_t leaf)
{
	if (rs->anchor_off[leaf] != rs->anchor_off[leaf + 1])
		return true;
	return rs->also_off && rs->also_off[leaf] != rs->also_off[leaf + 1];
}

/* ruleset.c: group @n's xstr by kind again (xcut, want_ip) after some
 * moved out (thresh.c). */
void relay__xstr_cut(relay__tnode *n);

/* thresh.c: the threshold index and the lazy leaves (built after the
 * anchors and the also lists, which decide which leaves are lazy). */
int relay__build_thresholds(relay_ruleset *rs);
void relay__eval_eq_num(relay_matcher *m, const relay__tnode *n, double v);
void relay__eval_thr_num(relay_matcher *m, const relay__tnode *n, double v);
void relay__eval_thr_time(relay_matcher *m, const relay__tnode *n,
			  const relay__instant *t);
/* The instant kept at @node (time_stamp == epoch), parsed on first use;
 * NULL if it is not an RFC 3339 time. */
const relay__instant *relay__lazy_time(relay_matcher *m, uint32_t node);
/* Whether the string [s, len) at @node satisfies operator leaf @x (an
 * EIC, IPREFIX, ISUFFIX, WILDCARD or CIDR leaf of that node); counts its
 * steps in m->work. */
bool relay__xleaf_holds(relay_matcher *m, uint32_t node,
			const relay__xleaf *x, const char *s, size_t len);
/* Settle lazy @leaf from the value kept at its node: stamped when the
 * value satisfies it (lazy_done marks it settled). */
void relay__settle(relay_matcher *m, uint32_t leaf);

/* Settle @leaf if it is lazy and not yet settled in this event. */
static inline void relay__settle_leaf(relay_matcher *m, uint32_t leaf)
{
	const uint8_t *lazy = m->rs->leaf_lazy;

	if (lazy && lazy[leaf] && m->lazy_done[leaf] != m->epoch)
		relay__settle(m, leaf);
}
/*
 * Most rules are an AND of ORs of leaves (fields of literals and
 * operators; nested maps only add conjuncts; a $or whose branches are one
 * field each is one OR, however many alternatives those fields have).
 * Such a rule is stored flat, as clauses [n, lit_1 .. lit_n] ended by a
 * 0, where lit = leaf << 1 | negated, and evaluated without recursion:
 * two such lists per rule, the clauses without late tests (cnf_start;
 * @m NULL) and those with (cnf_late; @m the matcher, whose lazy leaves
 * are settled as they are read, so that a rule that fails at its first
 * such clause settles only that clause's). An AND inside an OR (a $or
 * branch of two fields, a map among alternatives) is distributed into
 * such clauses; only a rule that would need more than 16 of them keeps
 * its expression program (ruleset_plan.c, CNF_MAX_CLAUSES).
 */
static inline bool relay__eval_cnf(const uint32_t *c, const uint32_t *stamp,
				   uint32_t epoch, relay_matcher *m)
{
	uint32_t n, k, lit;

	while ((n = *c++) != 0) {
		for (k = 0; k < n; k++) {
			lit = c[k];
			if (m)
				relay__settle_leaf(m, lit >> 1);
			if ((stamp[lit >> 1] == epoch) != (lit & 1))
				break;
		}
		if (k == n)
			return false;
		c += n;
	}
	return true;
}
size_t relay__match_end(relay_matcher *m);

/* scan.c: validate and walk a raw event (0, RELAY_EPARSE, RELAY_ETYPE or
 * RELAY_ENOMEM). */
int relay__scan_event(relay_matcher *m, const char *json, size_t len);

#endif /* RELAY__RULESET_INT_H */
