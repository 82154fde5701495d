/*
 * pt_rules.h - test helper: a built ruleset and a matcher from pattern
 * texts (JSON), the set-up most pattern tests share. Include after
 * relaytest.h; a pattern that does not compile fails the test.
 */
#ifndef PT_RULES_H
#define PT_RULES_H

#include <jansson.h>

#include "relay/pattern.h"

/* Compile @n patterns into @p (caller array of @n), add them in order (rule
 * id = index), build the ruleset into *rs and a matcher into *m. */
static inline void pt_rules(const char *const *pats, size_t n,
			    relay_pattern **p, relay_ruleset **rs,
			    relay_matcher **m)
{
	size_t i;

	RT_ASSERT(relay_ruleset_new(rs) == 0);
	for (i = 0; i < n; i++) {
		json_t *j = json_loads(pats[i], 0, NULL);

		RT_ASSERT(j && relay_pattern_compile(&p[i], j, NULL) == 0);
		RT_ASSERT(relay_ruleset_add(*rs, p[i], NULL) == 0);
		json_decref(j);
	}
	RT_ASSERT(relay_ruleset_build(*rs) == 0);
	RT_ASSERT(relay_matcher_new(m, *rs) == 0);
}

/* Free what pt_rules() made. */
static inline void pt_rules_free(relay_pattern **p, size_t n,
				 relay_ruleset *rs, relay_matcher *m)
{
	size_t i;

	relay_matcher_free(m);
	relay_ruleset_free(rs);
	for (i = 0; i < n; i++)
		relay_pattern_free(p[i]);
}

#endif
