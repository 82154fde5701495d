/*
 * compile_ops.c - the EventBridge content-filter operators, spelled as
 * EventBridge spells them, inside the seed grammar (an operator is a
 * single-key map in a list of alternatives):
 *
 *   anything-but       STRING | NUMBER | [STRING...] | [NUMBER...]
 *                      | {prefix: STRING} | {suffix: STRING}
 *                      | {wildcard: STRING | [STRING...]}
 *                      | {equals-ignore-case: STRING | [STRING...]}
 *   equals-ignore-case STRING
 *   wildcard           STRING ('*' any run; "\*", "\\" escapes; no "**")
 *   cidr               "ADDR/LEN" (IPv4 or IPv6, host bits zero)
 *   numeric            [OP, NUMBER] | [LOWER_OP, NUMBER, UPPER_OP, NUMBER]
 *   prefix / suffix    {equals-ignore-case: STRING}
 *
 * with the seed's strictness: every misuse is an error at the offending
 * node, never a wider rule. The pattern's complexity (section 9 of
 * doc/patterns.md) is counted here too.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "compile_int.h"

int relay__pc_weigh(cctx *c, const relay__pnode *n, unsigned w)
{
	if (c->over)
		return RELAY_EPARSE;
	c->complexity += w;
	if (c->complexity <= RELAY__PATTERN_MAX_COMPLEXITY)
		return 0;
	c->over = true;
	return fail(c, n, "pattern too complex: its complexity exceeds %d "
		    "(each new-style operator, anything-but value, wildcard "
		    "star and $or branch counts one; see doc/patterns.md "
		    "section 9): split it into several rules",
		    RELAY__PATTERN_MAX_COMPLEXITY);
}

static int dup_str(relay__pat_alt *a, enum relay__pat_kind kind,
		   const relay__pnode *v, bool lower)
{
	size_t i;

	a->kind = kind;
	a->str = relay__strndup(v->text ? v->text : "", v->text_len);
	a->len = v->text_len;
	if (!a->str)
		return RELAY_ENOMEM;
	for (i = 0; lower && i < a->len; i++)
		a->str[i] = (char)relay__lc((unsigned char)a->str[i]);
	return 0;
}

static int want_string(cctx *c, const relay__pnode *v, const char *op)
{
	if (v->kind == RELAY__PNODE_STRING)
		return 0;
	return fail(c, v, "%s takes a string, not a %s%s", op,
		    kind_name(v->kind),
		    v->kind == RELAY__PNODE_NUMBER ? " (quote it)" : "");
}

/* A wildcard: '*' runs, "\*" and "\\" escapes, no "**". */
static int compile_wildcard(cctx *c, const relay__pnode *v, const char *op,
			    relay__pat_alt *a)
{
	const char *s = v->text ? v->text : "";
	size_t i, stars = 0;
	char b[48];

	if (want_string(c, v, op))
		return RELAY_EPARSE;
	shown(s, v->text_len, b, sizeof(b));
	for (i = 0; i < v->text_len; i++) {
		if (s[i] == '\\') {
			if (i + 1 == v->text_len ||
			    (s[i + 1] != '*' && s[i + 1] != '\\'))
				return fail(c, v, "%s: invalid escape in \"%s\": "
					    "only \\* (a star) and \\\\ (a "
					    "backslash) are escapes", op, b);
			i++;
			continue;
		}
		if (s[i] == '*') {
			if (i + 1 < v->text_len && s[i + 1] == '*')
				return fail(c, v, "%s: consecutive stars (**) "
					    "in \"%s\": write a single *", op,
					    b);
			stars++;
		}
	}
	if (relay__pc_weigh(c, v, (unsigned)(stars < 1000 ? stars : 1000)))
		return RELAY_EPARSE;
	return dup_str(a, RELAY__PAT_WILDCARD, v, false);
}

static int compile_cidr(cctx *c, const relay__pnode *v, relay__pat_alt *a)
{
	const char *s = v->text ? v->text : "", *slash;
	unsigned bits = 0, i, max;
	size_t alen, k;
	int ver;
	char b[64];

	if (want_string(c, v, "cidr"))
		return RELAY_EPARSE;
	shown(s, v->text_len, b, sizeof(b));
	slash = memchr(s, '/', v->text_len);
	if (!slash)
		return fail(c, v, "cidr: \"%s\" has no prefix length: write "
			    "ADDRESS/LENGTH, e.g. 10.0.0.0/24 or 2001:db8::/32",
			    b);
	alen = (size_t)(slash - s);
	ver = relay__ip_parse(s, alen, a->ip);
	if (!ver)
		return fail(c, v, "cidr: \"%s\": not an IPv4 or IPv6 address "
			    "before the '/'", b);
	max = ver == 4 ? 32 : 128;
	for (k = alen + 1; k < v->text_len && k < alen + 5; k++) {
		if (s[k] < '0' || s[k] > '9')
			break;
		bits = bits * 10 + (unsigned)(s[k] - '0');
	}
	if (k == alen + 1 || k != v->text_len || bits > max ||
	    (k - alen > 2 && s[alen + 1] == '0'))
		return fail(c, v, "cidr: \"%s\": the prefix length must be a "
			    "number from 0 to %u", b, max);
	for (i = bits; i < max; i++)
		if (a->ip[i / 8] & (0x80u >> (i % 8)))
			return fail(c, v, "cidr: \"%s\" has bits set after the "
				    "first %u: write the network address", b,
				    bits);
	a->kind = RELAY__PAT_CIDR;
	a->ipver = (uint8_t)ver;
	a->bits = (uint8_t)bits;
	return 0;
}

static int num_operand(cctx *c, const relay__pnode *v, const char *op,
		       double *out)
{
	if (v->kind != RELAY__PNODE_NUMBER)
		return fail(c, v, "%s takes a number here, not a %s", op,
			    kind_name(v->kind));
	if (parse_number(v->text, v->text_len, out))
		return fail(c, v, "%s: invalid number", op);
	if (!isfinite(*out))
		return fail(c, v, "%s: the operand must be a finite number",
			    op);
	return 0;
}

/* numeric: [OP, N] or [LOWER, N, UPPER, N]. */
static int compile_numeric(cctx *c, const relay__pnode *v, relay__pat_alt *a)
{
	static const char *const ops[] = { ">", ">=", "<", "<=", "=" };
	int opv[2] = { -1, -1 }, k;
	double num[2] = { 0, 0 };
	size_t i;

	if (v->kind != RELAY__PNODE_SEQ)
		return fail(c, v, "numeric takes a list such as [\">\", 0, "
			    "\"<=\", 5], not a %s", kind_name(v->kind));
	if (v->nchildren != 2 && v->nchildren != 4)
		return fail(c, v, "numeric: %s: write [OP, NUMBER] or "
			    "[\">\" or \">=\", LOW, \"<\" or \"<=\", HIGH]",
			    v->nchildren ? "wrong number of elements" :
			    "empty list");
	for (i = 0; i < v->nchildren; i += 2) {
		const relay__pnode *o = &v->children[i];

		for (k = 0; o->kind == RELAY__PNODE_STRING && k < 5; k++)
			if (o->text_len == strlen(ops[k]) &&
			    !memcmp(o->text, ops[k], o->text_len))
				break;
		if (o->kind != RELAY__PNODE_STRING || k == 5)
			return fail(c, o, "numeric: an operator must be one "
				    "of \">\", \">=\", \"<\", \"<=\", \"=\"");
		opv[i / 2] = k;
		if (num_operand(c, &v->children[i + 1], "numeric",
				&num[i / 2]))
			return RELAY_EPARSE;
	}
	if (v->nchildren == 2) {
		a->num = num[0];
		if (opv[0] == 4) {
			a->kind = RELAY__PAT_EQ_NUM;
			return 0;
		}
		a->kind = RELAY__PAT_CMP_NUM;
		a->op = (enum relay__pat_op)opv[0];
		return 0;
	}
	if (opv[0] == 4 || opv[1] == 4)
		return fail(c, v, "numeric: \"=\" cannot be combined with "
			    "another operator");
	if ((opv[0] >= 2) == (opv[1] >= 2))
		return fail(c, v, "numeric: a range needs one lower bound "
			    "(\">\" or \">=\") and one upper bound (\"<\" or "
			    "\"<=\")");
	if (opv[0] >= 2) { /* upper first: swap */
		int t = opv[0];
		double d = num[0];

		opv[0] = opv[1];
		opv[1] = t;
		num[0] = num[1];
		num[1] = d;
	}
	if (num[0] > num[1] ||
	    (num[0] == num[1] && (opv[0] == 0 || opv[1] == 2)))
		return fail(c, v, "numeric: empty range: the lower bound must "
			    "be below the upper bound");
	a->kind = RELAY__PAT_RANGE;
	a->op = (enum relay__pat_op)opv[0];
	a->num = num[0];
	a->hi_op = (enum relay__pat_op)opv[1];
	a->hi = num[1];
	return 0;
}

/* A string or a non-empty list of strings, each one sub alternative. */
static int compile_str_list(cctx *c, const relay__pnode *v, const char *op,
			    enum relay__pat_kind kind, relay__pat_alt *a)
{
	const relay__pnode *one = v;
	size_t n = 1, i, old;
	int rc = 0, res = 0;

	if (v->kind == RELAY__PNODE_SEQ) {
		if (v->nchildren == 0)
			return fail(c, v, "anything-but: %s: empty list", op);
		n = v->nchildren;
	}
	a->sub = relay__calloc(n, sizeof(*a->sub));
	if (!a->sub)
		return RELAY_ENOMEM;
	a->nsub = n;
	for (i = 0; i < n; i++) {
		if (v->kind == RELAY__PNODE_SEQ)
			one = &v->children[i];
		old = path_push_index(c, i);
		if (relay__pc_weigh(c, one, 1))
			rc = RELAY_EPARSE;
		else if (kind == RELAY__PAT_WILDCARD)
			rc = compile_wildcard(c, one, op, &a->sub[i]);
		else if (want_string(c, one, op))
			rc = RELAY_EPARSE;
		else
			rc = dup_str(&a->sub[i], kind, one,
				     kind == RELAY__PAT_EIC);
		path_pop(c, old);
		if (rc == RELAY_ENOMEM)
			return rc;
		if (rc)
			res = rc;
	}
	return res;
}

static int compile_anything_but(cctx *c, const relay__pnode *v,
				relay__pat_alt *a)
{
	const relay__pnode *k;
	size_t i, old;
	int rc, res = 0;
	char b[48];

	a->kind = RELAY__PAT_NOT;
	switch (v->kind) {
	case RELAY__PNODE_STRING:
	case RELAY__PNODE_NUMBER:
		break;
	case RELAY__PNODE_SEQ:
		if (v->nchildren == 0)
			return fail(c, v, "anything-but: empty list: it needs "
				    "at least one value");
		for (i = 0; i < v->nchildren; i++) {
			k = &v->children[i];
			if ((k->kind != RELAY__PNODE_STRING &&
			     k->kind != RELAY__PNODE_NUMBER) ||
			    k->kind != v->children[0].kind)
				return fail(c, k, "anything-but: a list holds "
					    "only strings or only numbers, "
					    "not a %s here",
					    kind_name(k->kind));
		}
		break;
	case RELAY__PNODE_MAP:
		if (v->nchildren != 1)
			return fail(c, v, "anything-but: a map operand has "
				    "exactly one key: prefix, suffix, "
				    "wildcard or equals-ignore-case");
		k = &v->children[0];
		shown(k->key ? k->key : "", k->key_len, b, sizeof(b));
		if (!strcmp(b, "prefix") || !strcmp(b, "suffix")) {
			if (want_string(c, k, b))
				return RELAY_EPARSE;
			a->sub = relay__calloc(1, sizeof(*a->sub));
			if (!a->sub)
				return RELAY_ENOMEM;
			a->nsub = 1;
			return dup_str(a->sub, b[0] == 'p' ?
				       RELAY__PAT_PREFIX : RELAY__PAT_SUFFIX,
				       k, false);
		}
		if (!strcmp(b, "wildcard"))
			return compile_str_list(c, k, b, RELAY__PAT_WILDCARD,
						a);
		if (!strcmp(b, "equals-ignore-case"))
			return compile_str_list(c, k, b, RELAY__PAT_EIC, a);
		return fail_key(c, k, "anything-but: unknown key \"%s\": "
				"inside anything-but write prefix, suffix, "
				"wildcard or equals-ignore-case", b);
	default:
		return fail(c, v, "anything-but takes a string, a number, a "
			    "list of strings or of numbers, or a map, not a "
			    "%s", kind_name(v->kind));
	}
	i = v->kind == RELAY__PNODE_SEQ ? v->nchildren : 1;
	a->sub = relay__calloc(i, sizeof(*a->sub));
	if (!a->sub)
		return RELAY_ENOMEM;
	a->nsub = i;
	for (i = 0; i < a->nsub; i++) {
		k = v->kind == RELAY__PNODE_SEQ ? &v->children[i] : v;
		old = path_push_index(c, i);
		rc = relay__pc_weigh(c, k, 1);
		if (rc)
			;
		else if (k->kind == RELAY__PNODE_STRING)
			rc = dup_str(&a->sub[i], RELAY__PAT_EQ_STR, k, false);
		else if ((rc = num_operand(c, k, "anything-but",
					   &a->sub[i].num)) == 0)
			a->sub[i].kind = RELAY__PAT_EQ_NUM;
		path_pop(c, old);
		if (rc == RELAY_ENOMEM)
			return rc;
		if (rc)
			res = rc;
	}
	return res;
}

int relay__pc_op_ext(cctx *c, const relay__pnode *v, int opi,
		     relay__pat_alt *a)
{
	const relay__pnode *k;

	if (relay__pc_weigh(c, v, 1))
		return RELAY_EPARSE;
	switch (opi) {
	case OPI_PREFIX:
	case OPI_SUFFIX:
		/* {equals-ignore-case: STRING} (checked by the caller) */
		k = &v->children[0];
		if (want_string(c, k, "equals-ignore-case"))
			return RELAY_EPARSE;
		return dup_str(a, opi == OPI_PREFIX ? RELAY__PAT_IPREFIX :
			       RELAY__PAT_ISUFFIX, k, true);
	case OPI_ANYBUT:
		return compile_anything_but(c, v, a);
	case OPI_EIC:
		if (want_string(c, v, "equals-ignore-case"))
			return RELAY_EPARSE;
		return dup_str(a, RELAY__PAT_EIC, v, true);
	case OPI_WILDCARD:
		return compile_wildcard(c, v, "wildcard", a);
	case OPI_CIDR:
		return compile_cidr(c, v, a);
	default:
		return compile_numeric(c, v, a);
	}
}
