/*
 * compile_int.h - the compiler's state and helpers shared by compile.c
 * (the seed grammar) and compile_ops.c (the EventBridge operators).
 * Never installed.
 */
#ifndef RELAY__COMPILE_INT_H
#define RELAY__COMPILE_INT_H

#include "pattern_int.h"
#include "pnode.h"

typedef struct cctx {
	const char *file;     /* for relay_error.path; may be NULL */
	relay_error *err;     /* receives the first error; may be NULL */
	relay__pattern_report_fn report; /* every error; may be NULL */
	void *report_arg;
	unsigned nerr;        /* errors so far */
	char path[128];       /* field path of the node being compiled */
	size_t plen;
	unsigned complexity;  /* weight so far (compile_ops.c) */
	bool over;            /* the complexity error was reported */
} cctx;

/* Indices into the operator table of compile.c. */
enum { OPI_PREFIX, OPI_SUFFIX, OPI_EXISTS, OPI_GT, OPI_GTE, OPI_LT,
       OPI_LTE, OPI_ANYBUT, OPI_EIC, OPI_WILDCARD, OPI_CIDR, OPI_NUMERIC };

/* Record an error at node @n (at its key: _key); returns RELAY_EPARSE.
 * Compiling goes on so that every problem is reported. */
int relay__pc_fail(cctx *c, const relay__pnode *n, const char *fmt, ...)
	RELAY__PRINTF(3, 4);
int relay__pc_fail_key(cctx *c, const relay__pnode *n, const char *fmt, ...)
	RELAY__PRINTF(3, 4);
const char *relay__pc_kind_name(enum relay__pnode_kind k);
const char *relay__pc_shown(const char *s, size_t len, char *buf,
			   size_t size);
/* A YAML/JSON number literal; 0 or -1. */
int relay__pc_number(const char *s, size_t len, double *out);
size_t relay__pc_push_index(cctx *c, size_t i);
void relay__pc_pop(cctx *c, size_t old);

/* compile_ops.c: the operators after the seed's seven (@opi >= OPI_ANYBUT),
 * and prefix/suffix given {equals-ignore-case: s}. */
int relay__pc_op_ext(cctx *c, const relay__pnode *v, int opi,
		     relay__pat_alt *alt);
/* Add @w to the pattern's complexity; reports (once) at @n and returns
 * RELAY_EPARSE past RELAY__PATTERN_MAX_COMPLEXITY. */
int relay__pc_weigh(cctx *c, const relay__pnode *n, unsigned w);

#define fail relay__pc_fail
#define fail_key relay__pc_fail_key
#define kind_name relay__pc_kind_name
#define shown relay__pc_shown
#define parse_number relay__pc_number
#define path_push_index relay__pc_push_index
#define path_pop relay__pc_pop

#endif /* RELAY__COMPILE_INT_H */
