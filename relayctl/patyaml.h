/*
 * patyaml.h - a rule's pattern as written in its template, rendered back
 * as YAML (for `relayctl app inspect`) or as JSON (--json).
 *
 * librelay keeps only the compiled pattern, so the template is parsed
 * again with the same YAML reader (relay__yaml_parse: YAML 1.2 core
 * schema, no aliases or tags) and the pattern of rule @index taken from
 * events[@index].pattern.
 */
#ifndef RELAYCTL_PATYAML_H
#define RELAYCTL_PATYAML_H

#include <stddef.h>
#include <stdio.h>

#include <jansson.h>

typedef struct patyaml patyaml;

/* Parse @template_path. Returns NULL when it cannot be read or parsed. */
patyaml *patyaml_open(const char *template_path);
void patyaml_close(patyaml *p);

/*
 * Print the pattern of rule @index as a YAML block mapping indented by
 * @indent spaces (one "key: value" per line). Returns 0, or -1 when the
 * template has no such rule (nothing printed).
 */
int patyaml_print(const patyaml *p, size_t index, int indent, FILE *f);

/* The pattern of rule @index as JSON (new reference), or NULL. */
json_t *patyaml_json(const patyaml *p, size_t index);

#endif /* RELAYCTL_PATYAML_H */
