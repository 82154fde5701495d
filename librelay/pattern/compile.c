/*
 * compile.c - pnode tree -> compiled pattern, with exact error messages.
 *
 * The compiler is where the pattern language is enforced. Its rule is
 * doc/behaviour.md B-23: anything that is not unambiguously one of the three alternative
 * shapes (literal, single-operator map, nested map) is rejected with the
 * line/column of the offending node and a message naming the field path,
 * never widened. The grammar, as checked here:
 *
 *   pattern     := MAP of field -> condition          (non-empty)
 *   condition   := SEQ of alternative (non-empty) | MAP (= [MAP])
 *   alternative := NULL | BOOL | NUMBER | STRING      (equality literal)
 *                | MAP with one operator key          (operator)
 *                | MAP of field -> condition          (nested AND)
 *   field       := any key that is not an operator name
 *
 * Messages say what to write instead where there is one obvious fix.
 */
#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "pattern_int.h"
#include "compile_int.h"

static const char *const op_names[] = {
	"prefix", "suffix", "exists", "gt", "gte", "lt", "lte",
	"anything-but", "equals-ignore-case", "wildcard", "cidr", "numeric",
};

static int op_index(const char *k, size_t len)
{
	size_t i;

	for (i = 0; i < RELAY__ARRAY_SIZE(op_names); i++)
		if (strlen(op_names[i]) == len &&
		    memcmp(op_names[i], k, len) == 0)
			return (int)i;
	return -1;
}

const char *relay__pc_kind_name(enum relay__pnode_kind k)
{
	switch (k) {
	case RELAY__PNODE_NULL: return "null";
	case RELAY__PNODE_BOOL: return "boolean";
	case RELAY__PNODE_NUMBER: return "number";
	case RELAY__PNODE_STRING: return "string";
	case RELAY__PNODE_MAP: return "map";
	default: return "list";
	}
}


static int vfail(cctx *c, int line, int col, const char *fmt, va_list ap)
	RELAY__PRINTF(4, 0);

/*
 * Record one error. Compiling goes on after it (the callers skip the
 * offending node and carry on with its siblings) so that one run reports
 * every problem of a pattern; the result is still a failure.
 */
static int vfail(cctx *c, int line, int col, const char *fmt, va_list ap)
{
	char msg[RELAY_ERROR_TEXT_MAX];
	relay_error e;

	vsnprintf(msg, sizeof(msg), fmt, ap);
	relay__error_set(&e, RELAY_EPARSE, c->file, line, col, "%s: %s",
			 c->plen ? c->path : "pattern", msg);
	if (c->nerr++ == 0 && c->err)
		*c->err = e;
	if (c->report)
		c->report(c->report_arg, &e);
	return RELAY_EPARSE;
}

/* An error at node @n. */
int relay__pc_fail(cctx *c, const relay__pnode *n, const char *fmt, ...)
{
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = vfail(c, n ? n->line : 0, n ? n->column : 0, fmt, ap);
	va_end(ap);
	return rc;
}

/* An error at the key of map member @n (at @n itself if unmarked). */
int relay__pc_fail_key(cctx *c, const relay__pnode *n, const char *fmt, ...)
{
	va_list ap;
	int rc;

	va_start(ap, fmt);
	if (n->key_line)
		rc = vfail(c, n->key_line, n->key_column, fmt, ap);
	else
		rc = vfail(c, n->line, n->column, fmt, ap);
	va_end(ap);
	return rc;
}

/* Append ".key" (or "key" at the root) or "[i]" to the path; returns the
 * old length for path_pop(). Control bytes in the key are written as \xNN
 * so the message stays on one line; over-long paths are cut, never
 * overflowed. */
static size_t path_push_key(cctx *c, const char *key, size_t len)
{
	size_t old = c->plen, i, cap = sizeof(c->path) - 1;
	char *o = c->path;
	size_t n = c->plen;

	if (n && n < cap)
		o[n++] = '.';
	for (i = 0; i < len && i < 60 && n < cap; i++) {
		unsigned char ch = (unsigned char)key[i];

		if (ch < 0x20 || ch == 0x7f) {
			if (n + 4 > cap)
				break;
			snprintf(o + n, 5, "\\x%02x", ch);
			n += 4;
		} else {
			o[n++] = (char)ch;
		}
	}
	o[n] = '\0';
	c->plen = n;
	return old;
}

size_t relay__pc_push_index(cctx *c, size_t i)
{
	size_t old = c->plen;
	int n;

	n = snprintf(c->path + c->plen, sizeof(c->path) - c->plen, "[%zu]",
		     i);
	if (n > 0)
		c->plen = c->plen + (size_t)n < sizeof(c->path) ?
			  c->plen + (size_t)n : sizeof(c->path) - 1;
	return old;
}

void relay__pc_pop(cctx *c, size_t old)
{
	c->plen = old;
	c->path[old] = '\0';
}

static size_t edit_distance(const char *a, size_t la, const char *b)
{
	size_t lb = strlen(b), row[16], i, j;

	if (la > 15 || lb > 15)
		return 99;
	for (j = 0; j <= lb; j++)
		row[j] = j;
	for (i = 1; i <= la; i++) {
		size_t diag = row[0];

		row[0] = i;
		for (j = 1; j <= lb; j++) {
			size_t up = row[j], best;
			int same = tolower((unsigned char)a[i - 1]) == b[j - 1];

			best = diag + !same;
			if (up + 1 < best)
				best = up + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			diag = up;
			row[j] = best;
		}
	}
	return row[lb];
}

/* The operator a misspelled key most likely meant, or NULL. */
static const char *nearest_op(const char *k, size_t len)
{
	const char *best = NULL;
	size_t i, d, bestd = 3;

	for (i = 0; i < RELAY__ARRAY_SIZE(op_names); i++) {
		d = edit_distance(k, len, op_names[i]);
		if (d < bestd && d < strlen(op_names[i])) {
			bestd = d;
			best = op_names[i];
		}
	}
	return best;
}

/*
 * The operator a nested field name looks like a misspelling of, or NULL:
 * the key equals an operator name once lowercased with '_' and ' ' read
 * as '-' ("anything_but", "Equals Ignore Case"), or is within a small
 * edit distance of a long one (1 for five to seven letters, 2 from eight
 * on). Short operators (gt, lt, cidr ...) are left out: "at" or "id" are
 * ordinary field names. A real field of such a name is written with a
 * leading backslash (doc/patterns.md, section 1).
 */
static const char *field_like_op(const char *k, size_t len)
{
	char norm[24];
	size_t i, d, ol, bestd = 99;
	const char *best = NULL;

	if (len < sizeof(norm)) {
		for (i = 0; i < len; i++) {
			char ch = (char)tolower((unsigned char)k[i]);

			norm[i] = ch == '_' || ch == ' ' ? '-' : ch;
		}
		norm[len] = '\0';
		for (i = 0; i < RELAY__ARRAY_SIZE(op_names); i++)
			if (strcmp(norm, op_names[i]) == 0)
				return op_names[i];
	}
	for (i = 0; i < RELAY__ARRAY_SIZE(op_names); i++) {
		ol = strlen(op_names[i]);
		if (ol < 5)
			continue;
		d = edit_distance(k, len, op_names[i]);
		if (d <= (ol >= 8 ? 2u : 1u) && d < bestd) {
			bestd = d;
			best = op_names[i];
		}
	}
	return best;
}

/* An escaped key ('\' first): a field name taken literally. */
static bool key_escaped(const relay__pnode *n)
{
	return n->key && n->key_len > 0 && n->key[0] == '\\';
}

/*
 * The fields of a nested map must not look like operators: an
 * "anything_but: [x]" there is nearly always a misspelt operator, which
 * would otherwise be read as a field that never exists.
 */
static int check_nested_keys(cctx *c, const relay__pnode *n)
{
	size_t i;
	int res = 0;
	char b[48];

	for (i = 0; i < n->nchildren; i++) {
		const relay__pnode *ch = &n->children[i];
		const char *near;

		if (key_escaped(ch) || op_index(ch->key, ch->key_len) >= 0 ||
		    (ch->key_len == 3 && !memcmp(ch->key, "$or", 3)))
			continue;
		near = field_like_op(ch->key, ch->key_len);
		if (!near)
			continue;
		shown(ch->key, ch->key_len, b, sizeof(b));
		res = fail_key(c, ch, "unknown operator \"%s\" (did you mean "
			       "\"%s\"?); for a field of that name write "
			       "\\%s", b, near, b);
	}
	return res;
}

/* Printable, shortened rendering of a key or string for messages. */
const char *relay__pc_shown(const char *s, size_t len, char *buf,
			   size_t size)
{
	size_t i, o = 0;

	for (i = 0; i < len && o + 4 < size; i++)
		buf[o++] = isprint((unsigned char)s[i]) ? s[i] : '?';
	if (i < len && o + 4 <= size) {
		memcpy(buf + o, "...", 3);
		o += 3;
	}
	buf[o] = '\0';
	return buf;
}

/*
 * A number literal as the builder wrote it: JSON grammar, or YAML 1.2 core
 * forms (leading '+', ".5", "5.", 0x1F, 0o17, .inf, .nan). Decimal forms
 * are normalised to JSON grammar and converted by relay__json_number(), the
 * very function the raw matcher uses, so a pattern literal and an event
 * number with the same text always compare equal.
 */
int relay__pc_number(const char *s, size_t len, double *out)
{
	char buf[128];
	size_t i = 0, o = 0;
	int neg = 0, base = 0, ndig = 0;

	if (!s || !len || len > 100)
		return -1;
	if (len >= 4 && (strcasecmp(s + len - 4, ".inf") == 0 ||
			 strcasecmp(s + len - 4, ".nan") == 0) &&
	    len <= 5 && (len == 4 || s[0] == '+' || s[0] == '-')) {
		*out = s[len - 3] == 'n' || s[len - 3] == 'N' ? NAN : INFINITY;
		return 0;
	}
	if (s[i] == '+' || s[i] == '-')
		neg = s[i++] == '-';
	if (len - i > 2 && s[i] == '0' && (s[i + 1] == 'x' || s[i + 1] == 'o'))
		base = s[i + 1] == 'x' ? 16 : 8;
	if (base) {
		double v = 0;

		for (i += 2; i < len; i++) {
			int dv = isdigit((unsigned char)s[i]) ? s[i] - '0' :
				 isxdigit((unsigned char)s[i]) ?
				 tolower((unsigned char)s[i]) - 'a' + 10 : 99;
			if (dv >= base)
				return -1;
			v = v * base + dv;
			ndig++;
		}
		*out = neg ? -v : v;
		return ndig && v < 9007199254740992.0 ? 0 : -1;
	}
	if (neg)
		buf[o++] = '-';
	if (i < len && s[i] == '.')
		buf[o++] = '0';
	for (; i < len && isdigit((unsigned char)s[i]); i++, ndig++)
		buf[o++] = s[i];
	if (i < len && s[i] == '.') {
		buf[o++] = s[i++];
		if (i == len || !isdigit((unsigned char)s[i]))
			buf[o++] = '0';
		for (; i < len && isdigit((unsigned char)s[i]); i++, ndig++)
			buf[o++] = s[i];
	}
	if (!ndig)
		return -1;
	if (i < len && (s[i] == 'e' || s[i] == 'E')) {
		buf[o++] = s[i++];
		if (i < len && (s[i] == '+' || s[i] == '-'))
			buf[o++] = s[i++];
		if (i == len || !isdigit((unsigned char)s[i]))
			return -1;
		for (; i < len && isdigit((unsigned char)s[i]); i++)
			buf[o++] = s[i];
	}
	if (i != len)
		return -1;
	*out = relay__json_number(buf, o);
	return 0;
}

static int compile_map(cctx *c, const relay__pnode *n, int depth,
		       relay__pat_map *out);

static bool looks_like_timestamp(const char *s, size_t len)
{
	return len >= 10 && isdigit((unsigned char)s[0]) &&
	       isdigit((unsigned char)s[3]) && s[4] == '-' && s[7] == '-';
}

/* gt/gte/lt/lte with a string operand: only now() syntax is accepted. */
static int compile_now(cctx *c, const relay__pnode *v, const char *op,
		       relay__pat_alt *alt)
{
	char b[48];
	const char *s = v->text;
	size_t len = v->text_len;

	if (relay__now_parse(s, len, &alt->offset_ms) == 0) {
		alt->kind = RELAY__PAT_CMP_TIME;
		return 0;
	}
	shown(s, len, b, sizeof(b));
	if (looks_like_timestamp(s, len))
		return fail(c, v, "%s: only now()-relative expressions are "
			    "allowed, not a literal timestamp \"%s\"; write "
			    "e.g. \"now()-5m\"", op, b);
	if (len >= 5 && memcmp(s, "now()", 5) == 0)
		return fail(c, v, "%s: malformed duration in \"%s\": write "
			    "now()-DUR or now()+DUR with DUR like 1h30m, 5m "
			    "or 10s (units h, m, s in that order)", op, b);
	if ((len >= 3 && strncasecmp(s, "now", 3) == 0) ||
	    (len >= 2 && (s[0] == '-' || s[0] == '+') &&
	     isdigit((unsigned char)s[1])))
		return fail(c, v, "%s: \"%s\" is the old now-style syntax; "
			    "write \"now()\", \"now()-5m\" or \"now()+10m\"",
			    op, b);
	return fail(c, v, "%s takes a number or a now() expression such as "
		    "\"now()-5m\", not the string \"%s\"", op, b);
}

static int compile_op(cctx *c, const relay__pnode *v, int opi,
		      relay__pat_alt *alt)
{
	const char *op = op_names[opi];

	if (opi >= OPI_ANYBUT ||
	    ((opi == OPI_PREFIX || opi == OPI_SUFFIX) &&
	     v->kind == RELAY__PNODE_MAP && v->nchildren == 1 &&
	     v->children[0].key_len == 18 &&
	     !memcmp(v->children[0].key, "equals-ignore-case", 18)))
		return relay__pc_op_ext(c, v, opi, alt);
	if (v->kind == RELAY__PNODE_SEQ && opi == OPI_EXISTS)
		return fail(c, v, "exists takes a boolean, not a list");
	if (v->kind == RELAY__PNODE_SEQ || v->kind == RELAY__PNODE_MAP)
		return fail(c, v, "\"%s\" is an operator, not a field name: "
			    "it takes one scalar operand (write several "
			    "operators as separate alternatives)", op);
	switch (opi) {
	case OPI_PREFIX:
	case OPI_SUFFIX:
		if (v->kind != RELAY__PNODE_STRING)
			return fail(c, v, "%s takes a string, not a %s%s", op,
				    kind_name(v->kind),
				    v->kind == RELAY__PNODE_NUMBER ?
				    " (quote it)" : "");
		alt->kind = opi == OPI_PREFIX ? RELAY__PAT_PREFIX :
			    RELAY__PAT_SUFFIX;
		alt->str = relay__strndup(v->text ? v->text : "",
					  v->text_len);
		alt->len = v->text_len;
		return alt->str ? 0 : RELAY_ENOMEM;
	case OPI_EXISTS:
		if (v->kind != RELAY__PNODE_BOOL)
			return fail(c, v, "exists takes a boolean (true or "
				    "false), not a %s", kind_name(v->kind));
		alt->kind = RELAY__PAT_EXISTS;
		alt->boolean = v->boolean;
		return 0;
	default:
		alt->op = (enum relay__pat_op)(opi - OPI_GT);
		if (v->kind == RELAY__PNODE_STRING)
			return compile_now(c, v, op, alt);
		if (v->kind != RELAY__PNODE_NUMBER)
			return fail(c, v, "%s takes a number or a now() "
				    "expression, not a %s", op,
				    kind_name(v->kind));
		if (parse_number(v->text, v->text_len, &alt->num))
			return fail(c, v, "%s: invalid number", op);
		if (!isfinite(alt->num))
			return fail(c, v, "%s: the operand must be a finite "
				    "number", op);
		alt->kind = RELAY__PAT_CMP_NUM;
		return 0;
	}
}

/* A map alternative: an operator, or a nested map of fields. */
static int compile_map_alt(cctx *c, const relay__pnode *n, int depth,
			   relay__pat_alt *alt)
{
	const relay__pnode *first;
	size_t i, nops = 0;
	int opi = -1;
	char b[48];

	if (n->nchildren == 0)
		return fail(c, n, "empty map: an alternative needs a field "
			    "or an operator");
	first = &n->children[0];
	for (i = 0; i < n->nchildren; i++)
		if (op_index(n->children[i].key,
			     n->children[i].key_len) >= 0)
			nops++;
	if (n->nchildren == 1)
		opi = op_index(first->key, first->key_len);
	if (opi >= 0)
		return compile_op(c, first, opi, alt);
	if (nops && nops == n->nchildren)
		return fail(c, n, "one operator per alternative: write each "
			    "operator as its own list element, e.g. "
			    "[{prefix: a}, {suffix: b}]");
	if (nops)
		return fail(c, n, "a map mixes operators and field names; "
			    "an operator map has exactly one key");
	if (n->nchildren == 1 && first->kind != RELAY__PNODE_MAP &&
	    first->kind != RELAY__PNODE_SEQ && !key_escaped(first)) {
		const char *near = field_like_op(first->key, first->key_len);

		if (!near)
			near = nearest_op(first->key, first->key_len);
		shown(first->key, first->key_len, b, sizeof(b));
		if (((first->key_len == 2 && !memcmp(first->key, "eq", 2)) ||
		     (first->key_len >= 5 &&
		      !memcmp(first->key, "equal", 5))) &&
		    (!near || strcmp(near, "equals-ignore-case") != 0))
			return fail_key(c, first, "unknown operator \"%s\": "
					"there is no equals operator, a bare "
					"literal is equality", b);
		if (near)
			return fail_key(c, first, "unknown operator \"%s\" "
					"(did you mean \"%s\"?)", b, near);
		return fail_key(c, first, "unknown operator \"%s\"; if it is a "
			    "field, its condition must be a list: write "
			    "%s: [...]", b, b);
	}
	if (check_nested_keys(c, n))
		return RELAY_EPARSE;
	alt->kind = RELAY__PAT_MAP;
	alt->map = relay__calloc(1, sizeof(*alt->map));
	if (!alt->map)
		return RELAY_ENOMEM;
	return compile_map(c, n, depth + 1, alt->map);
}

static int compile_alt(cctx *c, const relay__pnode *n, int depth,
		       relay__pat_alt *alt)
{
	switch (n->kind) {
	case RELAY__PNODE_NULL:
		alt->kind = RELAY__PAT_EQ_NULL;
		return 0;
	case RELAY__PNODE_BOOL:
		alt->kind = RELAY__PAT_EQ_BOOL;
		alt->boolean = n->boolean;
		return 0;
	case RELAY__PNODE_NUMBER:
		if (parse_number(n->text, n->text_len, &alt->num))
			return fail(c, n, "invalid number");
		if (!isfinite(alt->num))
			return fail(c, n, "a number literal must be finite");
		alt->kind = RELAY__PAT_EQ_NUM;
		return 0;
	case RELAY__PNODE_STRING:
		alt->kind = RELAY__PAT_EQ_STR;
		alt->str = relay__strndup(n->text ? n->text : "", n->text_len);
		alt->len = n->text_len;
		return alt->str ? 0 : RELAY_ENOMEM;
	case RELAY__PNODE_SEQ:
		return fail(c, n, "an alternative cannot be a list (lists do "
			    "not nest)");
	default:
		return compile_map_alt(c, n, depth, alt);
	}
}

static int compile_cond(cctx *c, const relay__pnode *n, int depth,
			relay__pat_field *f)
{
	size_t i, old;
	int rc, res = 0;
	char b[48];

	if (depth > RELAY__PATTERN_MAX_DEPTH)
		return fail(c, n, "pattern nested deeper than %d levels",
			    RELAY__PATTERN_MAX_DEPTH);
	switch (n->kind) {
	case RELAY__PNODE_NULL:
		return fail(c, n, "a condition cannot be null; write [null] "
			    "to match JSON null or [{exists: false}] to "
			    "match absence");
	case RELAY__PNODE_BOOL:
	case RELAY__PNODE_NUMBER:
	case RELAY__PNODE_STRING:
		if (n->kind == RELAY__PNODE_BOOL)
			snprintf(b, sizeof(b), "%s",
				 n->boolean ? "true" : "false");
		else
			shown(n->text ? n->text : "", n->text_len, b,
			      sizeof(b));
		return fail(c, n, "a condition must be a list of "
			    "alternatives: write [%s]", b);
	case RELAY__PNODE_SEQ:
		if (n->nchildren == 0)
			return fail(c, n, "empty list: a condition needs at "
				    "least one alternative");
		f->alts = relay__calloc(n->nchildren, sizeof(*f->alts));
		if (!f->alts)
			return RELAY_ENOMEM;
		f->nalts = n->nchildren;
		for (i = 0; i < n->nchildren; i++) {
			old = path_push_index(c, i);
			rc = compile_alt(c, &n->children[i], depth + 1,
					 &f->alts[i]);
			path_pop(c, old);
			if (rc == RELAY_ENOMEM)
				return rc;
			if (rc)
				res = rc;
		}
		return res;
	default:
		if (n->nchildren == 0)
			return fail(c, n, "empty map: a condition needs at "
				    "least one field or operator");
		f->alts = relay__calloc(1, sizeof(*f->alts));
		if (!f->alts)
			return RELAY_ENOMEM;
		f->nalts = 1;
		return compile_alt(c, n, depth, &f->alts[0]);
	}
}

/*
 * "$or": [MAP, MAP, ...] at any map level: the map's fields AND at least
 * one branch, each branch a map of field conditions on the same object.
 */
static int compile_or(cctx *c, const relay__pnode *n, int depth,
		      relay__pat_map *out)
{
	size_t i, old;
	int rc, res = 0;

	if (out->ors)
		return fail_key(c, n, "$or: only one $or per map");
	if (n->kind != RELAY__PNODE_SEQ)
		return fail(c, n, "$or takes a list of at least %d patterns, "
			    "not a %s", RELAY__PATTERN_MIN_OR,
			    kind_name(n->kind));
	if (n->nchildren < RELAY__PATTERN_MIN_OR)
		return fail(c, n, "$or needs at least %d branches (a single "
			    "pattern needs no $or)", RELAY__PATTERN_MIN_OR);
	out->ors = relay__calloc(n->nchildren, sizeof(*out->ors));
	if (!out->ors)
		return RELAY_ENOMEM;
	out->nors = n->nchildren;
	for (i = 0; i < n->nchildren; i++) {
		const relay__pnode *b = &n->children[i];

		old = path_push_key(c, "$or", 3);
		path_push_index(c, i);
		if (b->kind != RELAY__PNODE_MAP)
			rc = fail(c, b, "an $or branch must be a map of field "
				  "conditions, not a %s", kind_name(b->kind));
		else if (b->nchildren == 0)
			rc = fail(c, b, "empty map: an $or branch needs at "
				  "least one field");
		else if ((rc = relay__pc_weigh(c, b, 1)) == 0)
			rc = compile_map(c, b, depth + 1, &out->ors[i]);
		path_pop(c, old);
		if (rc == RELAY_ENOMEM)
			return rc;
		if (rc)
			res = rc;
	}
	return res;
}

static int compile_map(cctx *c, const relay__pnode *n, int depth,
		       relay__pat_map *out)
{
	size_t i, old;
	int rc, res = 0;
	char b[48];

	if (depth > RELAY__PATTERN_MAX_DEPTH)
		return fail(c, n, "pattern nested deeper than %d levels",
			    RELAY__PATTERN_MAX_DEPTH);
	out->fields = relay__calloc(n->nchildren, sizeof(*out->fields));
	if (!out->fields)
		return RELAY_ENOMEM;
	out->nfields = 0;
	for (i = 0; i < n->nchildren; i++) {
		const relay__pnode *ch = &n->children[i];
		relay__pat_field *f = &out->fields[out->nfields];
		const char *key = ch->key ? ch->key : "";
		size_t key_len = ch->key_len;

		if (key_escaped(ch)) {
			/* \NAME: the field NAME, never an operator or $or. */
			key++;
			key_len--;
		} else if (ch->key_len == 3 && !memcmp(ch->key, "$or", 3)) {
			rc = compile_or(c, ch, depth, out);
			if (rc == RELAY_ENOMEM)
				return rc;
			if (rc)
				res = rc;
			continue;
		} else if (op_index(ch->key, ch->key_len) >= 0) {
			res = fail_key(c, ch,
				       "\"%s\" is an operator and cannot be "
				       "used as a field name (a field of that "
				       "name is written \\%s)",
				       shown(ch->key, ch->key_len, b,
					     sizeof(b)), b);
			continue;
		}
		out->nfields++;
		f->name = relay__strndup(key, key_len);
		if (!f->name)
			return RELAY_ENOMEM;
		f->name_len = key_len;
		old = path_push_key(c, f->name, f->name_len);
		rc = compile_cond(c, ch, depth + 1, f);
		path_pop(c, old);
		if (rc == RELAY_ENOMEM)
			return rc;
		if (rc)
			res = rc;
	}
	return res;
}

void relay__pat_map_fini(relay__pat_map *m)
{
	size_t i, j;

	if (!m)
		return;
	for (i = 0; m->fields && i < m->nfields; i++) {
		relay__pat_field *f = &m->fields[i];

		for (j = 0; f->alts && j < f->nalts; j++)
			relay__pat_alt_fini(&f->alts[j]);
		relay__free(f->alts);
		relay__free(f->name);
	}
	relay__free(m->fields);
	m->fields = NULL;
	m->nfields = 0;
	for (i = 0; m->ors && i < m->nors; i++)
		relay__pat_map_fini(&m->ors[i]);
	relay__free(m->ors);
	m->ors = NULL;
	m->nors = 0;
}

void relay__pat_alt_fini(relay__pat_alt *a)
{
	size_t k;

	relay__free(a->str);
	if (a->map) {
		relay__pat_map_fini(a->map);
		relay__free(a->map);
	}
	for (k = 0; a->sub && k < a->nsub; k++)
		relay__pat_alt_fini(&a->sub[k]);
	relay__free(a->sub);
	a->str = NULL;
	a->map = NULL;
	a->sub = NULL;
}

int relay__pattern_compile_pnode(relay_pattern **out, const relay__pnode *root,
				 const char *path, relay_error *err)
{
	return relay__pattern_compile_all(out, root, path, err, NULL, NULL);
}

int relay__pattern_compile_all(relay_pattern **out, const relay__pnode *root,
			       const char *path, relay_error *err,
			       relay__pattern_report_fn report, void *arg)
{
	cctx c = { path, err, report, arg, 0, "", 0, 0, false };
	relay_pattern *p = NULL;
	int rc;

	if (!root)
		return relay__error_set(err, RELAY_EINVAL, path, 0, 0,
					"pattern: missing");
	if (root->kind != RELAY__PNODE_MAP)
		return fail(&c, root, "a pattern must be a map of field "
			    "conditions, not a %s", kind_name(root->kind));
	if (root->nchildren == 0)
		return fail(&c, root, "empty pattern: a pattern needs at "
			    "least one field");
	p = relay__calloc(1, sizeof(*p));
	if (!p)
		return relay__error_set(err, RELAY_ENOMEM, path, 0, 0,
					"out of memory");
	rc = compile_map(&c, root, 1, &p->root);
	if (rc == RELAY_ENOMEM)
		relay__error_set(err, rc, path, 0, 0, "out of memory");
	if (rc) {
		relay_pattern_free(p);
		return rc;
	}
	*out = p;
	return 0;
}

void relay_pattern_free(relay_pattern *p)
{
	if (!p)
		return;
	relay__pat_map_fini(&p->root);
	relay__free(p);
}

int relay__pat_alt_copy(relay__pat_alt *d, const relay__pat_alt *s)
{
	size_t k;

	*d = *s;
	d->str = NULL;
	d->map = NULL;
	d->sub = NULL;
	d->nsub = 0;
	if (s->sub) {
		d->sub = relay__calloc(s->nsub, sizeof(*d->sub));
		if (!d->sub)
			return RELAY_ENOMEM;
		d->nsub = s->nsub;
		for (k = 0; k < s->nsub; k++)
			if (relay__pat_alt_copy(&d->sub[k], &s->sub[k]))
				return RELAY_ENOMEM;
	}
	if (s->str) {
		d->str = relay__strndup(s->str, s->len);
		if (!d->str)
			return RELAY_ENOMEM;
	}
	if (s->map) {
		d->map = relay__calloc(1, sizeof(*d->map));
		if (!d->map)
			return RELAY_ENOMEM;
		return relay__pat_map_copy(d->map, s->map);
	}
	return 0;
}

int relay__pat_map_copy(relay__pat_map *d, const relay__pat_map *s)
{
	size_t i, j;

	if (s->nors) {
		d->ors = relay__calloc(s->nors, sizeof(*d->ors));
		if (!d->ors)
			return RELAY_ENOMEM;
		d->nors = s->nors;
		for (i = 0; i < s->nors; i++)
			if (relay__pat_map_copy(&d->ors[i], &s->ors[i]))
				return RELAY_ENOMEM;
	}
	d->fields = relay__calloc(s->nfields ? s->nfields : 1,
				  sizeof(*d->fields));
	if (!d->fields)
		return RELAY_ENOMEM;
	d->nfields = s->nfields;
	for (i = 0; i < s->nfields; i++) {
		relay__pat_field *df = &d->fields[i];
		const relay__pat_field *sf = &s->fields[i];

		df->name = relay__strndup(sf->name, sf->name_len);
		df->name_len = sf->name_len;
		df->alts = relay__calloc(sf->nalts, sizeof(*df->alts));
		if (!df->name || !df->alts)
			return RELAY_ENOMEM;
		df->nalts = sf->nalts;
		for (j = 0; j < sf->nalts; j++)
			if (relay__pat_alt_copy(&df->alts[j], &sf->alts[j]))
				return RELAY_ENOMEM;
	}
	return 0;
}
