/*
 * kind.c - the one table of handler kinds' drivers, their lookups, the
 * public relay/kind.h calls, and the handler syntaxes drivers share.
 *
 * A new kind is a file kind_NAME.c defining its relay__kind, its value in
 * relay/kind.h's enum, and its row here (doc/architecture.md, "Handler
 * kinds").
 */
#include <string.h>

#include "kind.h"

/* All handler kinds, in the order templates and their errors list them.
 * This array is the only list. */
static const relay__kind *const kinds[] = {
	&relay__kind_python3,
	&relay__kind_node,
	&relay__kind_exec,
};

_Static_assert(RELAY__ARRAY_SIZE(kinds) == RELAY__KIND_COUNT,
	       "one driver per relay_runtime_kind");

const relay__kind *relay__kind_at(size_t i)
{
	return i < RELAY__ARRAY_SIZE(kinds) ? kinds[i] : NULL;
}

const relay__kind *relay__kind_get(relay_runtime_kind k)
{
	size_t i;

	for (i = 0; i < RELAY__ARRAY_SIZE(kinds); i++)
		if (kinds[i]->kind == k)
			return kinds[i];
	return NULL;
}

const relay__kind *relay__kind_find(const char *name)
{
	size_t i;

	for (i = 0; name && i < RELAY__ARRAY_SIZE(kinds); i++)
		if (strcmp(kinds[i]->name, name) == 0)
			return kinds[i];
	return NULL;
}

char *relay__kind_names(char *buf, size_t size, const char *last)
{
	size_t i, n = 0, k = RELAY__ARRAY_SIZE(kinds);

	buf[0] = '\0';
	for (i = 0; i < k; i++) {
		const char *sep = i + 1 == k ? last : ", ";
		size_t l = strlen(kinds[i]->name), sl = i ? strlen(sep) : 0;

		if (n + sl + l + 1 > size)
			break;
		memcpy(buf + n, sep, sl);
		n += sl;
		memcpy(buf + n, kinds[i]->name, l);
		n += l;
		buf[n] = '\0';
	}
	return buf;
}

static int is_ident_start(char c)
{
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static int is_ident(char c)
{
	return is_ident_start(c) || (c >= '0' && c <= '9');
}

bool relay__kind_dotted(const char *h)
{
	int parts = 0;

	for (;;) {
		if (!is_ident_start(*h))
			return false;
		while (is_ident(*h))
			h++;
		parts++;
		if (*h == '\0')
			return parts >= 2;
		if (*h != '.')
			return false;
		h++;
	}
}

bool relay__kind_module_function(const char *h)
{
	const char *dot = strrchr(h, '.');

	return dot && dot != h && dot[1];
}

int relay__kind_bootstrap_argv(relay__strv *out, const char *const *words,
			       const char *dir, const char *script,
			       const char *last)
{
	int rc = 0;

	for (; rc == 0 && *words; words++)
		rc = relay__strv_push(out, *words);
	if (rc == 0)
		rc = relay__strv_pushf(out, "%s/%s", dir, script);
	if (rc == 0 && last)
		rc = relay__strv_push(out, last);
	return rc;
}

/* ---- relay/kind.h -------------------------------------------------- */

int relay_runtime_kind_parse(const char *s, relay_runtime_kind *out)
{
	const relay__kind *d = relay__kind_find(s);

	if (!d)
		return RELAY_EINVAL;
	*out = d->kind;
	return 0;
}

const char *relay_runtime_kind_name(relay_runtime_kind k)
{
	const relay__kind *d = relay__kind_get(k);

	return d ? d->name : "unknown";
}

const char *relay_runtime_kind_program(relay_runtime_kind k)
{
	const relay__kind *d = relay__kind_get(k);

	return d ? d->program : NULL;
}

const char *const *relay_runtime_kind_check_argv(relay_runtime_kind k)
{
	const relay__kind *d = relay__kind_get(k);

	return d ? d->check_argv : NULL;
}
