/*
 * patyaml.c - render a template's patterns back as YAML or JSON.
 *
 * Scalars keep their template typing: NUMBER nodes print their literal,
 * strings print plain when YAML would read them back as the same string
 * (else double-quoted, JSON escapes being valid YAML), lists print in
 * flow style ([a, {gt: 0}]) as the patterns guide writes them.
 */
#include <stdlib.h>
#include <string.h>

#include "app/app.h"
#include "fmt.h"
#include "patyaml.h"
#include "relayctl.h"

struct patyaml {
	relay__pnode *root;
};

patyaml *patyaml_open(const char *template_path)
{
	relay__diags d;
	patyaml *p;
	char *text = NULL;
	size_t len;
	FILE *f = fopen(template_path, "rb");
	long sz;

	memset(&d, 0, sizeof(d));
	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (sz = ftell(f)) >= 0 &&
	    sz < 16 * 1024 * 1024 && fseek(f, 0, SEEK_SET) == 0 &&
	    (text = malloc((size_t)sz + 1)) != NULL) {
		len = fread(text, 1, (size_t)sz, f);
		text[len] = '\0';
	}
	fclose(f);
	if (!text)
		return NULL;
	p = calloc(1, sizeof(*p));
	if (p && relay__yaml_parse(&p->root, text, len, template_path, &d)) {
		free(p);
		p = NULL;
	}
	relay__diags_free(&d);
	free(text);
	return p;
}

void patyaml_close(patyaml *p)
{
	if (!p)
		return;
	relay__pnode_free(p->root);
	free(p);
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

static const relay__pnode *pattern_of(const patyaml *p, size_t index)
{
	const relay__pnode *ev;

	if (!p)
		return NULL;
	ev = child(p->root, "events");
	if (!ev || ev->kind != RELAY__PNODE_SEQ || index >= ev->nchildren)
		return NULL;
	return child(&ev->children[index], "pattern");
}

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

static void put_string(const char *s, size_t n, FILE *f)
{
	json_t *j;
	char *q;

	if (plain_ok(s, n)) {
		char *c = strndup(s, n);

		fputs(c ? relayctl_c(c) : "?", f);  /* C1, not UTF-8 */
		free(c);
		return;
	}
	j = json_stringn(s, n);
	q = j ? json_dumps(j, JSON_ENCODE_ANY) : NULL;
	if (q)
		fputs(relayctl_c(q), f);  /* DEL and C1 too */
	else
		fputs("\"?\"", f);
	free(q);
	json_decref(j);
}

static int is_scalar(const relay__pnode *n)
{
	return n->kind != RELAY__PNODE_MAP && n->kind != RELAY__PNODE_SEQ;
}

static void put_scalar(const relay__pnode *n, FILE *f)
{
	switch (n->kind) {
	case RELAY__PNODE_NULL:
		fputs("null", f);
		break;
	case RELAY__PNODE_BOOL:
		fputs(n->boolean ? "true" : "false", f);
		break;
	case RELAY__PNODE_NUMBER:
		fwrite(n->text, 1, n->text_len, f);
		break;
	default:
		put_string(n->text, n->text_len, f);
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

static void put_flow(const relay__pnode *n, FILE *f)
{
	size_t i;

	if (is_scalar(n)) {
		put_scalar(n, f);
		return;
	}
	fputc(n->kind == RELAY__PNODE_MAP ? '{' : '[', f);
	for (i = 0; i < n->nchildren; i++) {
		const relay__pnode *c = &n->children[i];

		if (i)
			fputs(", ", f);
		if (n->kind == RELAY__PNODE_MAP) {
			put_string(c->key, c->key_len, f);
			fputs(": ", f);
		}
		put_flow(c, f);
	}
	fputc(n->kind == RELAY__PNODE_MAP ? '}' : ']', f);
}

static void put_block(const relay__pnode *n, int indent, FILE *f);

/* After "key:" or "-": the value inline, or on the next lines. */
static void put_value(const relay__pnode *v, int indent, FILE *f)
{
	if (is_scalar(v)) {
		fputc(' ', f);
		put_scalar(v, f);
		fputc('\n', f);
	} else if (flow_ok(v)) {
		fputc(' ', f);
		put_flow(v, f);
		fputc('\n', f);
	} else {
		fputc('\n', f);
		put_block(v, indent + 2, f);
	}
}

static void put_block(const relay__pnode *n, int indent, FILE *f)
{
	size_t i;

	for (i = 0; i < n->nchildren; i++) {
		const relay__pnode *c = &n->children[i];

		fprintf(f, "%*s", indent, "");
		if (n->kind == RELAY__PNODE_MAP) {
			put_string(c->key, c->key_len, f);
			fputc(':', f);
		} else {
			fputc('-', f);
		}
		put_value(c, indent, f);
	}
}

int patyaml_print(const patyaml *p, size_t index, int indent, FILE *f)
{
	const relay__pnode *pat = pattern_of(p, index);

	if (!pat)
		return -1;
	if (pat->kind != RELAY__PNODE_MAP || pat->nchildren == 0) {
		fprintf(f, "%*s", indent, "");
		if (is_scalar(pat))
			put_scalar(pat, f);
		else
			put_flow(pat, f);
		fputc('\n', f);
		return 0;
	}
	put_block(pat, indent, f);
	return 0;
}

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
			char *k = strndup(n->children[i].key,
					  n->children[i].key_len);

			if (k)
				json_object_set_new(j, k,
						    to_json(&n->children[i]));
			free(k);
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

json_t *patyaml_json(const patyaml *p, size_t index)
{
	const relay__pnode *pat = pattern_of(p, index);

	return pat ? to_json(pat) : NULL;
}
