/*
 * relay/pattern.h - the pattern language: compile, match, rulesets.
 *
 * A pattern is the `pattern:` tree of one rule in template.yaml (see
 * doc/patterns.md and relay-template(5)). relay_pattern_compile() turns its
 * JSON form into an immutable matcher. A relay_ruleset compiles many
 * patterns together so that one event is matched against all of them in a
 * single pass over its raw JSON bytes; matches come back in the order the
 * patterns were added (the caller adds them in dispatch order: apps by name,
 * rules in declaration order).
 *
 * Time: temporal comparisons (gt: "now()-5m") are evaluated against the
 * `now` argument of each match call, never at compile time.
 */
#ifndef RELAY_PATTERN_H
#define RELAY_PATTERN_H

#include <jansson.h>

#include "clock.h"
#include "common.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct relay_pattern relay_pattern;
typedef struct relay_ruleset relay_ruleset;
typedef struct relay_matcher relay_matcher;

/**
 * relay_pattern_compile() - compile a pattern from its JSON form.
 * @out: receives the new pattern on success (**new**; free with
 *   relay_pattern_free()); untouched on failure.
 * @spec: the pattern object (**borrowed**).
 * @err: optional error detail of the first problem in document order;
 *   line/column are 0 for JSON input, and text names the offending field
 *   path. (Template loading reports every problem of a pattern.)
 *
 * Returns: 0, RELAY_EPARSE for an invalid pattern, RELAY_ENOMEM.
 * Thread-safety: reentrant; a compiled pattern is immutable and may be
 * shared between threads.
 */
RELAY_EXTERN int relay_pattern_compile(relay_pattern **out,
				       const json_t *spec, relay_error *err);

/**
 * relay_pattern_free() - free a pattern; NULL is a no-op.
 * Thread-safety: no other thread may be using @p.
 */
RELAY_EXTERN void relay_pattern_free(relay_pattern *p);

/**
 * relay_pattern_match() - match one decoded event.
 * @p: the pattern.
 * @event: the event (**borrowed**); anything but an object never matches.
 * @now: the instant now() stands for.
 *
 * Returns: 1 on match, 0 otherwise.
 * Thread-safety: safe to call concurrently on the same pattern.
 */
RELAY_EXTERN int relay_pattern_match(const relay_pattern *p,
				     const json_t *event, relay_wall_ms now);

/**
 * relay_pattern_explain_fn - one condition that decided a match.
 * @arg: the caller's argument.
 * @path: the field path and alternative index, e.g. "new_image.status[1]"
 *   or "$or[0].a[0]" (**borrowed**, valid during the call).
 * @alt: the index of the alternative in its field's list.
 * @what: the alternative, e.g. "cidr 10.0.0.0/24" (**borrowed**).
 */
typedef void (*relay_pattern_explain_fn)(void *arg, const char *path,
					 size_t alt, const char *what);

/**
 * relay_pattern_explain() - say why @p matches @event.
 * Calls @fn (may be NULL) once for every field condition on the path that
 * decided the match, in pattern order, naming the first alternative that
 * holds; a nested map is reported through its children, an $or through
 * the first branch that holds.
 * Returns: 1 if @p matches @event at @now (as relay_pattern_match()), 0
 * otherwise (then @fn is not called).
 * Thread-safety: as relay_pattern_match().
 */
RELAY_EXTERN int relay_pattern_explain(const relay_pattern *p,
				       const json_t *event, relay_wall_ms now,
				       relay_pattern_explain_fn fn, void *arg);

/**
 * relay_pattern_explain_miss() - say why @p does not match @event.
 * Calls @fn (may be NULL) for the first field condition, in pattern
 * order, that fails: @path is the field path without an index
 * ("new_image.status", into a nested map down to its own first failure),
 * @alt is 0, and @what says what the event held and what was wanted, e.g.
 * 'got "PENDING"; wanted "PAID" or prefix "REFUND"' ("got missing; ..."
 * for an absent field). When every field holds but no branch of an $or
 * does, @fn is called once per branch, for that branch's first failure
 * ("$or[0].a", "$or[1].b").
 * Returns: 1 if @p matches @event at @now (then @fn is not called), 0
 * otherwise (also for an @event that is not an object: nothing reported).
 * Thread-safety: as relay_pattern_match().
 */
RELAY_EXTERN int relay_pattern_explain_miss(const relay_pattern *p,
					    const json_t *event,
					    relay_wall_ms now,
					    relay_pattern_explain_fn fn,
					    void *arg);

/**
 * relay_ruleset_new() - create an empty ruleset.
 * @out: receives the ruleset (**new**; free with relay_ruleset_free()).
 * Returns: 0 or RELAY_ENOMEM.
 * Thread-safety: reentrant. Until relay_ruleset_build(), a ruleset belongs
 * to the thread that fills it.
 */
RELAY_EXTERN int relay_ruleset_new(relay_ruleset **out);

/**
 * relay_ruleset_add() - add a pattern to a ruleset that is not built yet.
 * @rs: the ruleset.
 * @p: the pattern (**borrowed**: the ruleset keeps what it needs, @p may
 *   be freed afterwards).
 * @id: receives the rule id: 0 for the first pattern added, then 1, 2, ….
 *   May be NULL.
 *
 * Returns: 0, RELAY_EINVAL if the ruleset is already built (or @rs or @p
 * is NULL), RELAY_ENOMEM.
 * Thread-safety: one thread at a time per ruleset; @p may be shared.
 */
RELAY_EXTERN int relay_ruleset_add(relay_ruleset *rs, const relay_pattern *p,
				   uint32_t *id);

/**
 * relay_ruleset_build() - freeze the ruleset and build its match index.
 * Returns: 0, RELAY_EINVAL if already built, or RELAY_ENOMEM (the ruleset
 * is then unusable; free it). Building is linear in the total size of the
 * patterns (1000 typical rules: a few milliseconds).
 * Thread-safety: after it, the ruleset is immutable and may be shared by
 * any number of matchers on any threads.
 */
RELAY_EXTERN int relay_ruleset_build(relay_ruleset *rs);

/** relay_ruleset_count() - number of patterns added (0 for NULL). */
RELAY_EXTERN size_t relay_ruleset_count(const relay_ruleset *rs);

/** relay_ruleset_free() - free a ruleset; NULL is a no-op. Every matcher
 * made from it must be freed first. */
RELAY_EXTERN void relay_ruleset_free(relay_ruleset *rs);

/**
 * relay_matcher_new() - per-thread scratch state for matching.
 * @out: receives the matcher (**new**).
 * @rs: a built ruleset (**borrowed**; must outlive the matcher).
 *
 * Returns: 0, RELAY_EINVAL if @rs is not built, RELAY_ENOMEM.
 * Thread-safety: a matcher is used by one thread at a time.
 */
RELAY_EXTERN int relay_matcher_new(relay_matcher **out,
				   const relay_ruleset *rs);

/** relay_matcher_free() - free a matcher; NULL is a no-op. */
RELAY_EXTERN void relay_matcher_free(relay_matcher *m);

/**
 * relay_matcher_match() - match raw JSON bytes against every rule.
 *
 * This is the fast path: one pass over the text, decoding only what some
 * rule looks at. Its result equals relay_matcher_match_json() on the
 * jansson decode of the same text, and relay_pattern_match() of each rule,
 * for every text jansson decodes to an object; if a key repeats, the last
 * occurrence wins, as in jansson.
 * @m: the matcher.
 * @json: the event text (need not be NUL-terminated).
 * @len: its length in bytes.
 * @now: the instant now() stands for.
 * @ids: receives the ids of the matching rules in ascending order
 *   (**borrowed** from @m, valid until the next call on @m).
 * @count: receives how many.
 *
 * The whole text is validated as JSON (RFC 8259, UTF-8) but only the parts
 * some rule looks at are decoded; no heap allocation happens in the steady
 * state.
 *
 * Returns: 0; RELAY_EPARSE if @json is not valid JSON
 * (relay_matcher_errstr() says why, with a byte offset); RELAY_ETYPE if it
 * is valid JSON but not an object; RELAY_ENOMEM if a string that must be
 * unescaped could not be (not the event's fault: do not dead-letter it).
 * On error *count is 0.
 * Thread-safety: one thread at a time per matcher (use one matcher per
 * thread over a shared ruleset).
 */
RELAY_EXTERN int relay_matcher_match(relay_matcher *m, const char *json,
				     size_t len, relay_wall_ms now,
				     const uint32_t **ids, size_t *count);

/**
 * relay_matcher_match_json() - as relay_matcher_match() for a decoded event.
 * @event: the event (**borrowed**).
 * Returns: 0, or RELAY_ETYPE if @event is not an object.
 */
RELAY_EXTERN int relay_matcher_match_json(relay_matcher *m,
					  const json_t *event,
					  relay_wall_ms now,
					  const uint32_t **ids, size_t *count);

/**
 * relay_matcher_errstr() - why the last relay_matcher_match() failed, e.g.
 * "invalid literal at offset 12"; "" after a success.
 * Returns: a string **borrowed** from @m.
 */
RELAY_EXTERN const char *relay_matcher_errstr(const relay_matcher *m);

#ifdef __cplusplus
}
#endif

#endif /* RELAY_PATTERN_H */
