/* schema.h - a draft-07 JSON Schema subset, checked against a YAML node tree.
 *
 * Keywords: type, enum, const, required, properties, additionalProperties (bool or schema),
 * items (one schema), minItems, maxItems, uniqueItems, minimum, maximum, exclusiveMinimum,
 * exclusiveMaximum, minLength, maxLength, pattern (POSIX ERE), oneOf, anyOf, allOf, not,
 * $ref to "#/definitions/...". Unknown keywords (title, description, default, $schema,
 * examples, $comment) are ignored, as draft-07 says. */
#ifndef KT_SCHEMA_H
#define KT_SCHEMA_H

#include "util/diag.h"
#include "spec/yaml_tree.h"

#include <cjson/cJSON.h>

/* Checks 'doc' against 'schema' (whose "#/definitions" resolve $ref) and reports every
 * violation into 'diag' as "file:line:col: key.path: message". Returns the number of
 * violations (0 = valid), or -1 when the schema itself is unusable. */
int kt_schema_validate(const cJSON *schema, const kt_node *doc, const char *file, kt_diag *diag);

#endif
