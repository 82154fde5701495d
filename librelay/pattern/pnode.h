/*
 * pnode.h - the source-neutral tree a pattern is compiled from.
 *
 * The app module builds it from libfyaml nodes (with real line/column
 * marks); relay_pattern_compile() builds it from a json_t (marks 0). The
 * pattern compiler never sees libfyaml or YAML typing rules: the builder
 * resolves scalars into NULL/BOOL/NUMBER/STRING (YAML 1.2 core schema for
 * plain scalars; quoted scalars are always STRING).
 */
#ifndef RELAY__PNODE_H
#define RELAY__PNODE_H

#include <stddef.h>

#include "relay/pattern.h"

enum relay__pnode_kind {
	RELAY__PNODE_NULL,
	RELAY__PNODE_BOOL,
	RELAY__PNODE_NUMBER,
	RELAY__PNODE_STRING,
	RELAY__PNODE_MAP,
	RELAY__PNODE_SEQ,
};

typedef struct relay__pnode relay__pnode;

struct relay__pnode {
	enum relay__pnode_kind kind;
	const char *text;    /* STRING: the value; NUMBER: the literal as
				written ("70", "7.5e1"); NULL otherwise */
	size_t text_len;     /* bytes of text (STRING may hold NULs) */
	int boolean;         /* BOOL: 0 or 1 */
	const char *key;     /* set when this node is a MAP value: its key */
	size_t key_len;
	int key_line, key_column;  /* mark of the key (0 if unknown) */
	int line, column;    /* mark of this node (1-based; 0 if unknown) */
	relay__pnode *children; /* MAP: values (each carries its key);
				   SEQ: items; in document order */
	size_t nchildren;
};

/*
 * Compile a pattern from a pnode tree. @path names the source file for
 * error detail (may be NULL). Errors carry the line/column of the offending
 * node and a message naming the field path, e.g.
 * "new_image.status: a condition must be a list of alternatives, write
 * [COMPLETED]". The tree is borrowed; the result owns copies of what it
 * keeps.
 */
int relay__pattern_compile_pnode(relay_pattern **out, const relay__pnode *root,
				 const char *path, relay_error *err);

/*
 * As relay__pattern_compile_pnode(), but every error is also passed to
 * @report (when not NULL), in document order: the compiler skips an
 * offending node and goes on with its siblings, so one call finds all the
 * problems of a pattern. @err still receives the first one. Any error
 * makes the call fail with RELAY_EPARSE and no pattern.
 */
typedef void (*relay__pattern_report_fn)(void *arg, const relay_error *e);

int relay__pattern_compile_all(relay_pattern **out, const relay__pnode *root,
			       const char *path, relay_error *err,
			       relay__pattern_report_fn report, void *arg);

#endif /* RELAY__PNODE_H */
