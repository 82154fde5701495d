/*
 * render.c - a rule's pattern as written in its template, rendered back
 * as YAML or JSON (relay_app_rule_pattern_yaml(), _json(); relayctl app
 * inspect shows them).
 *
 * The compiled pattern keeps no source, so the template is parsed again
 * with the loader's YAML reader (relay__yaml_parse: YAML 1.2 core schema,
 * no aliases or tags) and events[index].pattern taken from the tree.
 * Scalars keep their template typing: NUMBER nodes print their literal,
 * strings print plain when YAML would read them back as the same string
 * (else double-quoted, JSON escapes being valid YAML), lists print in
 * flow style ([a, {gt: 0}]) as the patterns guide writes them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "app.h"
#include "common.h"

/* The output, and whether an append failed (then it is dropped). */
typedef struct rbuf {
	relay__buf b;
	int oom;
} rbuf;

static void emit(rbuf *o, const void *s, size_t n)
{
	if (!o->oom && relay__buf_append(&o->b, s, n))
		o->oom = 1;
}

/* Read and parse @path. Returns 0 and *root, or a relay_err. */
static int parse_template(const char *path, relay__pnode **root)
{
	relay__diags d;
	char *text = NULL;
	size_t len = 0;
	int rc;

	*root = NULL;
	memset(&d, 0, sizeof(d));
	if (!path)
		return RELAY_ENOTFOUND;
	rc = relay__app_read_file(path, &text, &len, &d);
	if (rc == RELAY_ERROR)
		rc = RELAY_ENOTFOUND;   /* cannot be opened or read */
	else if (rc == 0)
		rc = relay__yaml_parse(root, text, len, path, &d);
	relay__diags_free(&d);
	relay__free(text);
	return rc == RELAY_ENOMEM || rc == RELAY_ENOTFOUND ? rc
	       : rc ? RELAY_EPARSE : 0;   /* too large, or not YAML */
}

static const relay__pnode *child(const relay__pnode *n, const char *key)
{
	size_t i, k = strlen(key);

	if (!n || n->kind != RELAY__PNODE_MAP)
		return NULL;
	for (i = 0; i < n->nchildren; i++)
		if (n->children[i].key_len == k &&
		    memcmp(n->children[i].key, key, k) == 0)
			return &n->children[i];
	return NULL;
}

static const relay__pnode *pattern_of(const relay__pnode *root,
				      size_t index)
{
	const relay__pnode *ev = child(root, "events");

	if (!ev || ev->kind != RELAY__PNODE_SEQ || index >= ev->nchildren)
		return NULL;
	return child(&ev->children[index], "pattern");
}

/* ---- YAML ---------------------------------------------------------------- */

static int plain_ok(const char *s, size_t n)
{
	size_t i;

	if (n == 0 || relay__yaml_plain_kind(s, n) != RELAY__PNODE_STRING ||
	    strchr("-?:,[]{}#&*!|>'\"%@` ", s[0]) || s[n - 1] == ' ')
		return 0;
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c < 0x20 || c == 0x7f || c == '#' || c == ',' ||
		    c == '[' || c == ']' || c == '{' || c == '}' ||
		    (c == ':' && (i + 1 == n || s[i + 1] == ' ')))
			return 0;
	}
	return 1;
}

static void put_string(const char *s, size_t n, rbuf *b)
{
	json_t *j;
	char *q;

	if (plain_ok(s, n)) {
		emit(b, s, n);
		return;
	}
	j = json_stringn(s, n);
	q = j ? json_dumps(j, JSON_ENCODE_ANY) : NULL;
	if (q)
		emit(b, q, strlen(q));
	else
		b->oom = 1;
	free(q);
	json_decref(j);
}

static void put(rbuf *b, const char *s)
{
	emit(b, s, strlen(s));
}

static void put_indent(rbuf *b, int indent)
{
	while (indent-- > 0)
		put(b, " ");
}

static int is_scalar(const relay__pnode *n)
{
	return n->kind != RELAY__PNODE_MAP && n->kind != RELAY__PNODE_SEQ;
}

static void put_scalar(const relay__pnode *n, rbuf *b)
{
	switch (n->kind) {
	case RELAY__PNODE_NULL:
		put(b, "null");
		break;
	case RELAY__PNODE_BOOL:
		put(b, n->boolean ? "true" : "false");
		break;
	case RELAY__PNODE_NUMBER:
		emit(b, n->text, n->text_len);
		break;
	default:
		put_string(n->text, n->text_len, b);
		break;
	}
}

/*
 * Lists always print in flow style, maps inside them too
 * ([{prefix: inv_}]); maps elsewhere print as blocks, unless empty.
 */
static int flow_ok(const relay__pnode *n)
{
	return n->kind == RELAY__PNODE_SEQ || n->nchildren == 0;
}

static void put_flow(const relay__pnode *n, rbuf *b)
{
	size_t i;

	if (is_scalar(n)) {
		put_scalar(n, b);
		return;
	}
	put(b, n->kind == RELAY__PNODE_MAP ? "{" : "[");
	for (i = 0; i < n->nchildren; i++) {
		const relay__pnode *c = &n->children[i];

		if (i)
			put(b, ", ");
		if (n->kind == RELAY__PNODE_MAP) {
			put_string(c->key, c->key_len, b);
			put(b, ": ");
		}
		put_flow(c, b);
	}
	put(b, n->kind == RELAY__PNODE_MAP ? "}" : "]");
}

static void put_block(const relay__pnode *n, int indent, rbuf *b);

/* After "key:" or "-": the value inline, or on the next lines. */
static void put_value(const relay__pnode *v, int indent, rbuf *b)
{
	if (is_scalar(v)) {
		put(b, " ");
		put_scalar(v, b);
		put(b, "\n");
	} else if (flow_ok(v)) {
		put(b, " ");
		put_flow(v, b);
		put(b, "\n");
	} else {
		put(b, "\n");
		put_block(v, indent + 2, b);
	}
}

static void put_block(const relay__pnode *n, int indent, rbuf *b)
{
	size_t i;

	for (i = 0; i < n->nchildren; i++) {
		const relay__pnode *c = &n->children[i];

		put_indent(b, indent);
		if (n->kind == RELAY__PNODE_MAP) {
			put_string(c->key, c->key_len, b);
			put(b, ":");
		} else {
			put(b, "-");
		}
		put_value(c, indent, b);
	}
}

int relay_app_rule_pattern_yaml(const relay_app *app, size_t index,
				int indent, char **out)
{
	relay__pnode *root = NULL;
	const relay__pnode *pat;
	rbuf b;
	int rc;

	memset(&b, 0, sizeof(b));
	if (!out)
		return RELAY_EINVAL;
	*out = NULL;
	if (!app || indent < 0 || indent > 256)
		return RELAY_EINVAL;
	rc = parse_template(relay_app_template_path(app), &root);
	if (rc)
		return rc;
	pat = pattern_of(root, index);
	if (!pat) {
		rc = RELAY_ENOTFOUND;
	} else if (pat->kind != RELAY__PNODE_MAP || pat->nchildren == 0) {
		put_indent(&b, indent);
		if (is_scalar(pat))
			put_scalar(pat, &b);
		else
			put_flow(pat, &b);
		put(&b, "\n");
	} else {
		put_block(pat, indent, &b);
	}
	relay__pnode_free(root);
	emit(&b, "", 1);
	if (rc || b.oom) {
		relay__buf_free(&b.b);
		return rc ? rc : RELAY_ENOMEM;
	}
	*out = b.b.data;
	return 0;
}

/* ---- JSON ---------------------------------------------------------------- */

static json_t *to_json(const relay__pnode *n)
{
	json_t *j = NULL;
	size_t i;

	switch (n->kind) {
	case RELAY__PNODE_NULL:
		return json_null();
	case RELAY__PNODE_BOOL:
		return json_boolean(n->boolean);
	case RELAY__PNODE_NUMBER:
		j = json_loadb(n->text, n->text_len, JSON_DECODE_ANY, NULL);
		return j && json_is_number(j) ? j
		       : (json_decref(j), json_stringn(n->text, n->text_len));
	case RELAY__PNODE_STRING:
		return json_stringn(n->text, n->text_len);
	case RELAY__PNODE_MAP:
		j = json_object();
		for (i = 0; j && i < n->nchildren; i++) {
			char *k = relay__strndup(n->children[i].key,
						 n->children[i].key_len);

			if (k)
				json_object_set_new(j, k,
						    to_json(&n->children[i]));
			relay__free(k);
		}
		return j;
	case RELAY__PNODE_SEQ:
		j = json_array();
		for (i = 0; j && i < n->nchildren; i++)
			json_array_append_new(j, to_json(&n->children[i]));
		return j;
	}
	return NULL;
}

int relay_app_rule_pattern_json(const relay_app *app, size_t index,
				char **out)
{
	relay__pnode *root = NULL;
	const relay__pnode *pat;
	json_t *j = NULL;
	char *text = NULL;
	int rc;

	if (!out)
		return RELAY_EINVAL;
	*out = NULL;
	if (!app)
		return RELAY_EINVAL;
	rc = parse_template(relay_app_template_path(app), &root);
	if (rc)
		return rc;
	pat = pattern_of(root, index);
	if (pat) {
		j = to_json(pat);
		text = j ? json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY |
				      JSON_PRESERVE_ORDER) : NULL;
		*out = text ? relay__strdup(text) : NULL;
		rc = *out ? 0 : RELAY_ENOMEM;
	} else {
		rc = RELAY_ENOTFOUND;
	}
	free(text);
	json_decref(j);
	relay__pnode_free(root);
	return rc;
}
