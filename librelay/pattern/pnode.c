/*
 * pnode.c - build a pnode tree from a json_t, and relay_pattern_compile().
 *
 * JSON has no source marks, so every line/column is 0; the compiler's
 * messages still name the field path. jansson already typed every scalar,
 * so the mapping is direct; numbers are rendered back to text because the
 * pnode contract carries number literals as written.
 */
#include <stdio.h>
#include <string.h>

#include "pattern_int.h"
#include "pnode.h"

static void pnode_fini(relay__pnode *n)
{
	size_t i;

	if (n->kind == RELAY__PNODE_NUMBER)
		relay__free((char *)n->text);
	for (i = 0; i < n->nchildren; i++)
		pnode_fini(&n->children[i]);
	relay__free(n->children);
}

/* jansson bounds its own nesting depth (2048), so recursion is bounded. */
static int pnode_from_json(relay__pnode *n, const json_t *j)
{
	size_t i = 0, count, key_len;
	const char *key;
	json_t *v;
	char buf[64];
	int len;

	switch (json_typeof(j)) {
	case JSON_NULL:
		n->kind = RELAY__PNODE_NULL;
		return 0;
	case JSON_TRUE:
	case JSON_FALSE:
		n->kind = RELAY__PNODE_BOOL;
		n->boolean = json_is_true(j);
		return 0;
	case JSON_INTEGER:
	case JSON_REAL:
		if (json_is_integer(j))
			len = snprintf(buf, sizeof(buf),
				       "%" JSON_INTEGER_FORMAT,
				       json_integer_value(j));
		else
			len = snprintf(buf, sizeof(buf), "%.17g",
				       json_real_value(j));
		n->kind = RELAY__PNODE_NUMBER;
		n->text = relay__strndup(buf, (size_t)len);
		n->text_len = (size_t)len;
		return n->text ? 0 : RELAY_ENOMEM;
	case JSON_STRING:
		n->kind = RELAY__PNODE_STRING;
		n->text = json_string_value(j);
		n->text_len = json_string_length(j);
		return 0;
	case JSON_ARRAY:
		n->kind = RELAY__PNODE_SEQ;
		count = json_array_size(j);
		break;
	default:
		n->kind = RELAY__PNODE_MAP;
		count = json_object_size(j);
		break;
	}
	if (!count)
		return 0;
	n->children = relay__calloc(count, sizeof(*n->children));
	if (!n->children)
		return RELAY_ENOMEM;
	if (n->kind == RELAY__PNODE_SEQ) {
		for (i = 0; i < count; i++) {
			n->nchildren++;
			if (pnode_from_json(&n->children[i],
					    json_array_get(j, i)))
				return RELAY_ENOMEM;
		}
		return 0;
	}
	/* jansson iterates objects in insertion order; a key built with
	 * json_object_setn() may hold NUL, so take its length, not strlen */
	json_object_keylen_foreach((json_t *)j, key, key_len, v) {
		relay__pnode *c = &n->children[n->nchildren++];

		c->key = key;
		c->key_len = key_len;
		if (pnode_from_json(c, v))
			return RELAY_ENOMEM;
	}
	return 0;
}

int relay_pattern_compile(relay_pattern **out, const json_t *spec,
			  relay_error *err)
{
	relay__pnode root;
	int rc;

	memset(&root, 0, sizeof(root));
	if (!spec)
		return relay__error_set(err, RELAY_EINVAL, NULL, 0, 0,
					"pattern: missing");
	rc = pnode_from_json(&root, spec);
	if (rc)
		relay__error_set(err, rc, NULL, 0, 0, "out of memory");
	else
		rc = relay__pattern_compile_pnode(out, &root, NULL, err);
	pnode_fini(&root);
	return rc;
}
