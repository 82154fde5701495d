/*
 * pjson.h - test helper: JSON text -> pnode tree WITH line/column marks,
 * standing in for the app module's YAML builder so that compiler error
 * positions can be tested without libfyaml.
 */
#ifndef PJSON_H
#define PJSON_H

#include "pnode.h"

/* Parse @text into @out (caller storage). Returns 0, or -1 on a syntax
 * error. Free with pjson_free() either way. */
int pjson_parse(const char *text, relay__pnode *out);
void pjson_free(relay__pnode *n);

#endif
