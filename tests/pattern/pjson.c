/*
 * pjson.c - a small JSON reader that records marks, for tests only. It is
 * deliberately simple (escapes: \" \\ \/ \n \t and \uXXXX below 0x80), as
 * the texts are the tests' own.
 */
#include <stdlib.h>
#include <string.h>

#include "pjson.h"

typedef struct pj {
	const char *s;
	size_t i;
	int line, col;
} pj;

static void adv(pj *p)
{
	if (p->s[p->i] == '\n') {
		p->line++;
		p->col = 1;
	} else {
		p->col++;
	}
	p->i++;
}

static void ws(pj *p)
{
	while (p->s[p->i] == ' ' || p->s[p->i] == '\n' || p->s[p->i] == '\t' ||
	       p->s[p->i] == '\r')
		adv(p);
}

static int str(pj *p, const char **out, size_t *len)
{
	char *buf = malloc(strlen(p->s + p->i) + 1);
	size_t o = 0;

	if (!buf)
		return -1;
	adv(p);
	while (p->s[p->i] && p->s[p->i] != '"') {
		char c = p->s[p->i];

		if (c == '\\') {
			adv(p);
			c = p->s[p->i];
			if (c == 'n')
				c = '\n';
			else if (c == 't')
				c = '\t';
			else if (c == 'u') {
				c = (char)strtol((char[]){ p->s[p->i + 1],
					p->s[p->i + 2], p->s[p->i + 3],
					p->s[p->i + 4], 0 }, NULL, 16);
				adv(p); adv(p); adv(p); adv(p);
			}
		}
		buf[o++] = c;
		adv(p);
	}
	if (p->s[p->i] != '"') {
		free(buf);
		return -1;
	}
	adv(p);
	buf[o] = '\0';
	*out = buf;
	*len = o;
	return 0;
}

static int value(pj *p, relay__pnode *n, int depth);

static int push(relay__pnode *n, relay__pnode **slot)
{
	relay__pnode *c = realloc(n->children,
				  (n->nchildren + 1) * sizeof(*c));

	if (!c)
		return -1;
	n->children = c;
	*slot = &c[n->nchildren++];
	memset(*slot, 0, sizeof(**slot));
	return 0;
}

static int container(pj *p, relay__pnode *n, int depth)
{
	char close = p->s[p->i] == '{' ? '}' : ']';
	relay__pnode *c;

	n->kind = close == '}' ? RELAY__PNODE_MAP : RELAY__PNODE_SEQ;
	adv(p);
	ws(p);
	if (p->s[p->i] == close) {
		adv(p);
		return 0;
	}
	for (;;) {
		if (push(n, &c))
			return -1;
		ws(p);
		if (close == '}') {
			c->key_line = p->line;
			c->key_column = p->col;
			if (p->s[p->i] != '"' || str(p, &c->key, &c->key_len))
				return -1;
			ws(p);
			if (p->s[p->i] != ':')
				return -1;
			adv(p);
			ws(p);
		}
		if (value(p, c, depth + 1))
			return -1;
		ws(p);
		if (p->s[p->i] == close) {
			adv(p);
			return 0;
		}
		if (p->s[p->i] != ',')
			return -1;
		adv(p);
	}
}

static int value(pj *p, relay__pnode *n, int depth)
{
	const char *s = p->s + p->i;
	size_t k = 0;

	if (depth > 200)
		return -1;
	n->line = p->line;
	n->column = p->col;
	if (*s == '{' || *s == '[')
		return container(p, n, depth);
	if (*s == '"') {
		n->kind = RELAY__PNODE_STRING;
		return str(p, &n->text, &n->text_len);
	}
	if (!strncmp(s, "null", 4)) {
		n->kind = RELAY__PNODE_NULL;
		k = 4;
	} else if (!strncmp(s, "true", 4)) {
		n->kind = RELAY__PNODE_BOOL;
		n->boolean = 1;
		k = 4;
	} else if (!strncmp(s, "false", 5)) {
		n->kind = RELAY__PNODE_BOOL;
		k = 5;
	} else {
		while (s[k] &&
		       strchr("+-.0123456789eExabcdefABCDEFoinfIN", s[k]))
			k++;
		if (!k)
			return -1;
		n->kind = RELAY__PNODE_NUMBER;
		n->text = strndup(s, k);
		n->text_len = k;
	}
	while (k--)
		adv(p);
	return 0;
}

int pjson_parse(const char *text, relay__pnode *out)
{
	pj p = { text, 0, 1, 1 };

	memset(out, 0, sizeof(*out));
	ws(&p);
	if (value(&p, out, 0))
		return -1;
	ws(&p);
	return p.s[p.i] ? -1 : 0;
}

void pjson_free(relay__pnode *n)
{
	size_t i;

	for (i = 0; i < n->nchildren; i++)
		pjson_free(&n->children[i]);
	free(n->children);
	if (n->kind == RELAY__PNODE_STRING || n->kind == RELAY__PNODE_NUMBER)
		free((char *)n->text);
	free((char *)n->key);
}
