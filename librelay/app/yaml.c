/*
 * yaml.c - template text to a relay__pnode tree, with marks and typing.
 *
 * The only file of librelay that includes libfyaml. We read the parser's
 * event stream rather than building an fy_document because events carry
 * start marks for every node (mappings and sequences included), which the
 * document API of libfyaml 0.7 does not expose. libfyaml is told to collect
 * its diagnostics instead of printing them, so a syntax error becomes one
 * of our diagnostics with its own line and column.
 *
 * What we refuse on purpose, each with a located message:
 *   - aliases (*x): templates are small, and expanding aliases is how a
 *     few bytes of YAML become gigabytes ("billion laughs");
 *   - explicit tags (!!str 70): typing is by the core schema only; quote a
 *     value to make it a string;
 *   - non-scalar mapping keys and duplicate keys;
 *   - more than one document, and nesting deeper than
 *     RELAY__APP_MAX_DEPTH.
 * Anchors without aliases are harmless and ignored.
 *
 * Typing (YAML 1.2 core schema) applies to plain scalars only: null is
 * ~, null, Null, NULL or empty; booleans are true/True/TRUE/false/False/
 * FALSE; numbers are decimal, 0o octal and 0x hex integers, decimal floats
 * with optional exponent, .inf/-.inf/.nan in their three spellings. NUMBER
 * nodes keep the literal text. Quoted and block scalars are STRING.
 */
#include <libfyaml.h>
#include <string.h>

#include "app.h"

typedef struct builder {
	struct fy_parser *fyp;
	const char *path;
	relay__diags *d;
	int failed;              /* a problem was recorded */
	int oom;
} builder;

/*
 * The 1-based start of @ev, or 0:0 when libfyaml has none (an empty plain
 * scalar, as in "key:" with no value: the caller then uses the key's).
 * libfyaml marks an alias at the anchor name (one past the '*') and a
 * quoted scalar at its first content character (one past the quote); we
 * point at the '*' and the opening quote, as editors do.
 */
static void mark_of(struct fy_event *ev, int *line, int *col)
{
	const struct fy_mark *m = fy_event_start_mark(ev);
	int back = 0;

	*line = m ? m->line + 1 : 0;
	*col = m ? m->column + 1 : 0;
	if (ev->type == FYET_ALIAS)
		back = 1;
	else if (ev->type == FYET_SCALAR) {
		enum fy_scalar_style st;

		st = fy_token_scalar_style(ev->scalar.value);
		back = st == FYSS_SINGLE_QUOTED || st == FYSS_DOUBLE_QUOTED;
	}
	if (m && back && *col > 1)
		(*col)--;
}

static int streq(const char *s, size_t n, const char *lit)
{
	return strlen(lit) == n && memcmp(s, lit, n) == 0;
}

static int any_of(const char *s, size_t n, const char *const *lits)
{
	for (; *lits; lits++)
		if (streq(s, n, *lits))
			return 1;
	return 0;
}

static size_t digits(const char *s, size_t n, const char *set)
{
	size_t i = 0;

	while (i < n && strchr(set, s[i]) && s[i])
		i++;
	return i;
}

static int is_core_float(const char *s, size_t n)
{
	size_t i = 0, d1, d2 = 0;

	if (i < n && (s[i] == '-' || s[i] == '+'))
		i++;
	d1 = digits(s + i, n - i, "0123456789");
	i += d1;
	if (i < n && s[i] == '.') {
		i++;
		d2 = digits(s + i, n - i, "0123456789");
		i += d2;
	}
	if (d1 == 0 && d2 == 0)
		return 0;
	if (i < n && (s[i] == 'e' || s[i] == 'E')) {
		size_t de;

		i++;
		if (i < n && (s[i] == '-' || s[i] == '+'))
			i++;
		de = digits(s + i, n - i, "0123456789");
		if (!de)
			return 0;
		i += de;
	}
	return i == n;
}

enum relay__pnode_kind relay__yaml_plain_kind(const char *s, size_t n)
{
	static const char *const nulls[] = { "~", "null", "Null", "NULL",
					     NULL };
	static const char *const trues[] = { "true", "True", "TRUE", NULL };
	static const char *const falses[] = { "false", "False", "FALSE",
					      NULL };
	static const char *const specials[] = {
		".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF", "-.inf",
		"-.Inf", "-.INF", ".nan", ".NaN", ".NAN", NULL };

	if (n == 0 || any_of(s, n, nulls))
		return RELAY__PNODE_NULL;
	if (any_of(s, n, trues) || any_of(s, n, falses))
		return RELAY__PNODE_BOOL;
	if (any_of(s, n, specials))
		return RELAY__PNODE_NUMBER;
	if (n > 2 && s[0] == '0' && s[1] == 'o' &&
	    digits(s + 2, n - 2, "01234567") == n - 2)
		return RELAY__PNODE_NUMBER;
	if (n > 2 && s[0] == '0' && s[1] == 'x' &&
	    digits(s + 2, n - 2, "0123456789abcdefABCDEF") == n - 2)
		return RELAY__PNODE_NUMBER;
	if (is_core_float(s, n))
		return RELAY__PNODE_NUMBER;
	return RELAY__PNODE_STRING;
}

static void problem(builder *b, struct fy_event *ev, const char *what)
{
	int line = 0, col = 0;

	if (ev)
		mark_of(ev, &line, &col);
	if (line == 0) {
		line = 1;
		col = 1;
	}
	if (relay__diags_add(b->d, RELAY_EPARSE, b->path, line, col, "%s",
			     what))
		b->oom = 1;
	b->failed = 1;
}

static int cmp_keys(const void *pa, const void *pb)
{
	const relay__pnode *a = *(const relay__pnode *const *)pa;
	const relay__pnode *b = *(const relay__pnode *const *)pb;
	size_t n = a->key_len < b->key_len ? a->key_len : b->key_len;
	int c = memcmp(a->key, b->key, n);

	if (c)
		return c;
	if (a->key_len != b->key_len)
		return a->key_len < b->key_len ? -1 : 1;
	return a < b ? -1 : a > b; /* document order among equals */
}

/*
 * Report every key of @map that repeats an earlier one. Sorting pointers
 * keeps this O(n log n): a 1 MiB template can hold ~100k keys.
 */
static int check_duplicates(builder *b, const relay__pnode *map)
{
	const relay__pnode **v;
	size_t i, n = 0;

	if (map->nchildren < 2)
		return 0;
	v = relay__calloc(map->nchildren, sizeof(*v));
	if (!v)
		return RELAY_ENOMEM;
	for (i = 0; i < map->nchildren; i++)
		if (map->children[i].key)
			v[n++] = &map->children[i];
	qsort(v, n, sizeof(*v), cmp_keys);
	for (i = 1; i < n; i++) {
		const relay__pnode *first = v[i - 1];
		int shown = (int)(first->key_len > 60 ? 60 : first->key_len);

		if (v[i]->key_len != first->key_len ||
		    memcmp(v[i]->key, first->key, first->key_len) != 0)
			continue;
		while (i < n && v[i]->key_len == first->key_len &&
		       memcmp(v[i]->key, first->key, first->key_len) == 0) {
			if (relay__diags_add(b->d, RELAY_EPARSE, b->path,
					     v[i]->key_line, v[i]->key_column,
					     "duplicate key \"%.*s\" (first at "
					     "line %d)", shown, first->key,
					     first->key_line))
				b->oom = 1;
			b->failed = 1;
			i++;
		}
	}
	relay__free(v);
	return 0;
}

static void free_children(relay__pnode *n)
{
	size_t i;

	for (i = 0; i < n->nchildren; i++) {
		free_children(&n->children[i]);
		relay__free((char *)n->children[i].text);
		relay__free((char *)n->children[i].key);
	}
	relay__free(n->children);
	n->children = NULL;
	n->nchildren = 0;
}

void relay__pnode_free(relay__pnode *root)
{
	if (!root)
		return;
	free_children(root);
	relay__free((char *)root->text);
	relay__free((char *)root->key);
	relay__free(root);
}

static int build_node(builder *b, struct fy_event *ev, relay__pnode *n,
		      int depth);

static int scalar_node(builder *b, struct fy_event *ev, relay__pnode *n)
{
	size_t len = 0;
	const char *t = fy_token_get_text(ev->scalar.value, &len);
	enum fy_scalar_style st = fy_token_scalar_style(ev->scalar.value);

	if (ev->scalar.tag) {
		problem(b, ev, "explicit YAML tags are not supported");
		return 0;
	}
	if (!t) {
		t = "";
		len = 0;
	}
	n->kind = st == FYSS_PLAIN ? relay__yaml_plain_kind(t, len)
				   : RELAY__PNODE_STRING;
	if (n->kind == RELAY__PNODE_BOOL)
		n->boolean = t[0] == 't' || t[0] == 'T';
	if (n->kind == RELAY__PNODE_STRING || n->kind == RELAY__PNODE_NUMBER) {
		n->text = relay__strndup(t, len);
		if (!n->text)
			return RELAY_ENOMEM;
		n->text_len = len;
	}
	return 0;
}

static int push_child(relay__pnode *n, size_t *cap, relay__pnode **slot)
{
	if (n->nchildren == *cap) {
		size_t c = *cap ? *cap * 2 : 4;
		relay__pnode *v = relay__realloc(n->children, c * sizeof(*v));

		if (!v)
			return RELAY_ENOMEM;
		n->children = v;
		*cap = c;
	}
	*slot = &n->children[n->nchildren++];
	memset(*slot, 0, sizeof(**slot));
	return 0;
}

/* Read the key of a mapping entry into @child (the entry's value node). */
static int map_key(builder *b, relay__pnode *map, relay__pnode *child,
		   struct fy_event *ev, int depth)
{
	size_t len = 0;
	const char *t;

	mark_of(ev, &child->key_line, &child->key_column);
	if (ev->type != FYET_SCALAR) {
		relay__pnode skip = { 0 };
		int rc;

		problem(b, ev, "mapping keys must be strings");
		/* Build and discard it to keep the event stream in step. */
		rc = build_node(b, ev, &skip, depth);
		free_children(&skip);
		relay__free((char *)skip.text);
		return rc;
	}
	t = fy_token_get_text(ev->scalar.value, &len);
	if (!t) {
		t = "";
		len = 0;
	}
	child->key = relay__strndup(t, len);
	if (!child->key)
		return RELAY_ENOMEM;
	child->key_len = len;
	return 0;
}

/*
 * Consume the rest of a collection whose start event was just read,
 * without building it: a loop with a counter, so no input can make us
 * recurse past RELAY__APP_MAX_DEPTH.
 */
static int skip_subtree(builder *b)
{
	size_t open = 1;

	while (open) {
		struct fy_event *ev = fy_parser_parse(b->fyp);

		if (!ev)
			return RELAY_EPARSE;
		if (ev->type == FYET_MAPPING_START ||
		    ev->type == FYET_SEQUENCE_START)
			open++;
		else if (ev->type == FYET_MAPPING_END ||
			 ev->type == FYET_SEQUENCE_END)
			open--;
		fy_parser_event_free(b->fyp, ev);
	}
	return 0;
}

static int collection(builder *b, struct fy_event *start, relay__pnode *n,
		      int depth)
{
	int is_map = start->type == FYET_MAPPING_START;
	enum fy_event_type end = is_map ? FYET_MAPPING_END : FYET_SEQUENCE_END;
	size_t cap = 0;
	int rc = 0;

	n->kind = is_map ? RELAY__PNODE_MAP : RELAY__PNODE_SEQ;
	if (depth >= RELAY__APP_MAX_DEPTH) {
		problem(b, start, "nesting is too deep (at most 64 levels)");
		return skip_subtree(b);
	}
	for (;;) {
		struct fy_event *ev = fy_parser_parse(b->fyp);
		relay__pnode *child;

		if (!ev)
			return RELAY_EPARSE; /* syntax error, reported */
		if (ev->type == end) {
			fy_parser_event_free(b->fyp, ev);
			return is_map ? check_duplicates(b, n) : 0;
		}
		rc = push_child(n, &cap, &child);
		if (!rc && is_map) {
			int k = map_key(b, n, child, ev, depth + 1);

			fy_parser_event_free(b->fyp, ev);
			if (k)
				return k;
			ev = fy_parser_parse(b->fyp);
			if (!ev)
				return RELAY_EPARSE;
		}
		if (!rc)
			rc = build_node(b, ev, child, depth + 1);
		/* Empty plain scalars have no mark: borrow a neighbour's. */
		if (!rc && is_map && child->key_line == 0) {
			child->key_line = child->line ? child->line : n->line;
			child->key_column = child->line ? child->column
							: n->column;
		}
		if (!rc && child->line == 0) {
			child->line = is_map ? child->key_line : n->line;
			child->column = is_map ? child->key_column : n->column;
		}
		fy_parser_event_free(b->fyp, ev);
		if (rc)
			return rc;
	}
}

/* Build @n from @ev (a node-starting event); the caller frees @ev. */
static int build_node(builder *b, struct fy_event *ev, relay__pnode *n,
		      int depth)
{
	mark_of(ev, &n->line, &n->column);
	switch (ev->type) {
	case FYET_SCALAR:
		return scalar_node(b, ev, n);
	case FYET_ALIAS:
		problem(b, ev, "YAML aliases are not supported");
		n->kind = RELAY__PNODE_NULL;
		return 0;
	case FYET_MAPPING_START:
	case FYET_SEQUENCE_START:
		if ((ev->type == FYET_MAPPING_START && ev->mapping_start.tag) ||
		    (ev->type == FYET_SEQUENCE_START &&
		     ev->sequence_start.tag))
			problem(b, ev, "explicit YAML tags are not supported");
		return collection(b, ev, n, depth);
	default:
		return RELAY_EPARSE;
	}
}

/* Move libfyaml's collected errors into our list. */
static void take_fy_errors(builder *b, struct fy_diag *diag)
{
	void *it = NULL;
	struct fy_diag_error *e;
	int any = 0;

	while ((e = fy_diag_errors_iterate(diag, &it)) != NULL) {
		if (e->type < FYET_ERROR)
			continue;
		if (relay__diags_add(b->d, RELAY_EPARSE, b->path,
				     e->line > 0 ? e->line : 1,
				     e->column > 0 ? e->column : 1,
				     "YAML syntax error: %s",
				     e->msg ? e->msg : "invalid YAML"))
			b->oom = 1;
		any = 1;
	}
	if (!any) {
		if (relay__diags_add(b->d, RELAY_EPARSE, b->path, 1, 1,
				     "YAML syntax error"))
			b->oom = 1;
	}
	b->failed = 1;
}

/* Walk the stream: STREAM_START DOCUMENT_START node DOCUMENT_END
 * [more documents…] STREAM_END. */
static int parse_stream(builder *b, relay__pnode *root, int *ndocs)
{
	struct fy_event *ev;
	int rc = 0;

	while ((ev = fy_parser_parse(b->fyp)) != NULL) {
		enum fy_event_type t = ev->type;

		if (t == FYET_DOCUMENT_START && ++*ndocs == 2)
			problem(b, ev, "a template must be a single YAML "
				       "document");
		if ((t == FYET_SCALAR || t == FYET_ALIAS ||
		     t == FYET_MAPPING_START || t == FYET_SEQUENCE_START) &&
		    *ndocs == 1)
			rc = build_node(b, ev, root, 0);
		else if (t == FYET_MAPPING_START || t == FYET_SEQUENCE_START) {
			relay__pnode skip = { 0 };

			rc = build_node(b, ev, &skip, 0);
			free_children(&skip);
		}
		fy_parser_event_free(b->fyp, ev);
		if (rc || t == FYET_STREAM_END)
			break;
	}
	if (!rc && fy_parser_get_stream_error(b->fyp))
		rc = RELAY_EPARSE;
	return rc;
}

/*
 * The length of the valid UTF-8 sequence at @s (at most @n bytes), or 0.
 * Overlong forms, surrogates and code points past U+10FFFF are invalid.
 */
static size_t utf8_len(const unsigned char *s, size_t n)
{
	unsigned c = s[0];
	size_t len, i;
	uint32_t cp;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf) {
		len = 2;
		cp = c & 0x1f;
	} else if (c >= 0xe0 && c <= 0xef) {
		len = 3;
		cp = c & 0x0f;
	} else if (c >= 0xf0 && c <= 0xf4) {
		len = 4;
		cp = c & 0x07;
	} else {
		return 0;
	}
	if (n < len)
		return 0;
	for (i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if ((len == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
	    (len == 4 && (cp < 0x10000 || cp > 0x10ffff)))
		return 0;
	return len;
}

/*
 * A template is UTF-8 text without NUL bytes (YAML excludes NUL from the
 * character stream). Checked before libfyaml sees the text, because
 * libfyaml 0.7.12 can loop forever on a NUL or an invalid UTF-8 sequence
 * inside a directive line (both found by fuzz-template). Returns the
 * problem and its 1-based position, or NULL.
 */
static const char *check_text(const char *text, size_t len, int *line,
			      int *col)
{
	const unsigned char *s = (const unsigned char *)text;
	size_t i = 0, bol = 0, k;

	*line = 1;
	while (i < len) {
		k = s[i] ? utf8_len(s + i, len - i) : 0;
		if (k == 0) {
			const unsigned char *p;

			/* column in characters, as editors count */
			*col = 1;
			for (p = s + bol; p < s + i; p++)
				*col += (*p & 0xc0) != 0x80;
			return s[i] ? "invalid UTF-8" : "NUL byte in the text";
		}
		if (s[i] == '\n') {
			(*line)++;
			bol = i + 1;
		}
		i += k;
	}
	return NULL;
}

/*
 * Whether the line @s (@n bytes) ends in a block scalar header
 * ("key: |", "- >-", "|2+"...), ignoring a trailing comment.
 */
static int block_scalar_header(const char *s, size_t n)
{
	size_t i, end = n, hdr;

	for (i = 0; i < n; i++)
		if (s[i] == '#' && (i == 0 || s[i - 1] == ' ' ||
				    s[i - 1] == '\t')) {
			end = i;
			break;
		}
	while (end && (s[end - 1] == ' ' || s[end - 1] == '\t' ||
		       s[end - 1] == '\r'))
		end--;
	/* the header is "|" or ">" then up to two of [-+1-9] */
	for (hdr = end; hdr && hdr + 3 > end; hdr--)
		if (s[hdr - 1] == '|' || s[hdr - 1] == '>')
			break;
	if (!hdr || (s[hdr - 1] != '|' && s[hdr - 1] != '>'))
		return 0;
	for (i = hdr; i < end; i++)
		if (!strchr("-+123456789", s[i]))
			return 0;
	hdr--;
	return hdr == 0 || s[hdr - 1] == ' ' || s[hdr - 1] == '\t';
}

/* Whether the character after @i ends an indicator (blank, CR or EOL). */
static int sep_follows(const char *t, size_t i, size_t eol)
{
	return i + 1 == eol || t[i + 1] == ' ' || t[i + 1] == '\t' ||
	       t[i + 1] == '\r';
}

/*
 * The end of the line starting at @bol: the first line break, which YAML
 * spells LF, CR or CR LF (libfyaml also breaks on NEL and U+2028/U+2029,
 * so those count too). *@next is where the following line starts.
 */
static size_t line_end(const char *t, size_t bol, size_t len, size_t *next)
{
	const unsigned char *u = (const unsigned char *)t;
	size_t i;

	for (i = bol; i < len; i++) {
		if (u[i] == '\n') {
			*next = i + 1;
			return i;
		}
		if (u[i] == '\r') {
			*next = i + 1 < len && u[i + 1] == '\n' ? i + 2 : i + 1;
			return i;
		}
		if (u[i] == 0xc2 && i + 1 < len && u[i + 1] == 0x85) {
			*next = i + 2;
			return i;
		}
		if (u[i] == 0xe2 && i + 2 < len && u[i + 1] == 0x80 &&
		    (u[i + 2] == 0xa8 || u[i + 2] == 0xa9)) {
			*next = i + 3;
			return i;
		}
	}
	*next = len;
	return len;
}

/*
 * Templates are plain mappings, so explicit keys ("? key") are refused
 * before libfyaml sees the text: libfyaml 0.7.12 crashes in
 * fy_parser_destroy() on inputs such as "? n:<TAB>:" or
 * "?n: <TAB>: ? n: <TAB>:" (found by fuzz-template). A '?' counts when it
 * stands where a token starts (after indentation, "- ", ": ", "? ", '[',
 * '{' or ',') and is followed by a blank or the end of the line. Quoted
 * scalars (also across lines), comments and block scalar contents are
 * skipped, so "what ? yes", "'? x'" and a "|" block holding "? x" are
 * fine. Returns the problem and its 1-based position, or NULL.
 */
static const char *check_explicit_keys(const char *text, size_t len,
				       int *line, int *col)
{
	size_t bol = 0, eol, next, i;
	long block_parent = -1; /* indent of a block scalar's parent line */
	char quote = 0;         /* the open quoted scalar's quote, or 0 */
	int lineno = 0;

	while (bol < len) {
		size_t ind = 0;
		int start;

		eol = line_end(text, bol, len, &next);
		lineno++;
		while (bol + ind < eol && text[bol + ind] == ' ')
			ind++;
		if (!quote && block_parent >= 0) {
			if (bol + ind == eol || (long)ind > block_parent)
				goto skip; /* blank or inside the scalar */
			block_parent = -1;
		}
		start = !quote;
		for (i = quote ? bol : bol + ind; i < eol; i++) {
			char ch = text[i];

			if (quote) {
				if (quote == '"' && ch == '\\')
					i++;
				else if (ch == quote && quote == '\'' &&
					 i + 1 < eol && text[i + 1] == '\'')
					i++;
				else if (ch == quote)
					quote = 0;
				continue;
			}
			if (ch == ' ' || ch == '\t')
				continue;
			if (ch == '#' && (i == bol || text[i - 1] == ' ' ||
					  text[i - 1] == '\t'))
				break;
			if (start && (ch == '"' || ch == '\'')) {
				quote = ch;
				start = 0;
			} else if (ch == '?' && start && sep_follows(text, i, eol)) {
				*line = lineno;
				*col = (int)(i - bol) + 1;
				return "explicit mapping keys (\"? \") are not "
				       "supported in templates";
			} else if ((ch == '-' || ch == ':' || ch == '?') &&
				   sep_follows(text, i, eol)) {
				start = 1;
			} else {
				start = ch == '[' || ch == '{' || ch == ',';
			}
		}
		if (!quote && block_scalar_header(text + bol, eol - bol))
			block_parent = (long)ind;
skip:
		bol = next;
	}
	return NULL;
}

int relay__yaml_parse(relay__pnode **out, const char *yaml, size_t len,
		      const char *path, relay__diags *d)
{
	struct fy_diag_cfg dcfg;
	struct fy_diag *diag = NULL;
	struct fy_parse_cfg cfg;
	builder b = { 0 };
	relay__pnode *root = NULL;
	int rc = RELAY_ENOMEM, ndocs = 0, line, col;
	const char *bad;

	*out = NULL;
	b.path = path;
	b.d = d;
	bad = check_text(len ? yaml : "", len, &line, &col);
	if (bad)
		return relay__diags_add(d, RELAY_EPARSE, path, line, col,
					"YAML syntax error: %s", bad)
			       ? RELAY_ENOMEM : RELAY_EPARSE;
	bad = check_explicit_keys(len ? yaml : "", len, &line, &col);
	if (bad)
		return relay__diags_add(d, RELAY_EPARSE, path, line, col,
					"%s", bad)
			       ? RELAY_ENOMEM : RELAY_EPARSE;
	fy_diag_cfg_default(&dcfg);
	dcfg.fp = NULL;
	dcfg.output_fn = NULL;
	dcfg.colorize = false;
	diag = fy_diag_create(&dcfg);
	if (!diag)
		goto done;
	fy_diag_set_collect_errors(diag, true);
	memset(&cfg, 0, sizeof(cfg));
	cfg.flags = FYPCF_QUIET | FYPCF_DEFAULT_VERSION_1_2 | FYPCF_JSON_NONE;
	cfg.diag = diag;
	b.fyp = fy_parser_create(&cfg);
	root = relay__calloc(1, sizeof(*root));
	if (!b.fyp || !root)
		goto done;
	if (fy_parser_set_string(b.fyp, len ? yaml : "", len) != 0)
		goto done;
	rc = parse_stream(&b, root, &ndocs);
	if (rc == RELAY_EPARSE || fy_diag_got_error(diag))
		take_fy_errors(&b, diag);
	else if (!rc && ndocs == 0)
		problem(&b, NULL, "template is empty");
	if (!rc && root->kind == RELAY__PNODE_NULL && !b.failed)
		problem(&b, NULL, "template is empty");
	if (b.oom)
		rc = RELAY_ENOMEM;
	else if (b.failed && rc != RELAY_ENOMEM)
		rc = RELAY_EPARSE;
done:
	if (b.fyp)
		fy_parser_destroy(b.fyp);
	if (diag)
		fy_diag_destroy(diag);
	if (rc) {
		relay__pnode_free(root);
		return rc;
	}
	*out = root;
	return 0;
}
