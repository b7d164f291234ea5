/* yaml_tree.h - a YAML document as a tree of nodes that remember where they were written.
 *
 * kt_yaml_load() parses with libyaml and adds the checks libyaml does not make: duplicate
 * keys, alias cycles and alias bombs (depth and node-count limits), YAML 1.1 booleans
 * (yes/no/on/off/y/n in any case, rejected with a hint to write true/false; as plain values
 * only, since keys are strings in JSON), tags other than !!str, !, !!map and !!seq, more than
 * one document, and input over a size limit. Aliases are expanded into copies, so the result
 * is a plain tree; a copy's root carries the alias's place, its children their own. The YAML
 * 1.1 merge key ('<<: *defaults', '<<: [*a, *b]') is applied as PyYAML and most YAML tools do:
 * the mapping's own keys win, then the merged mappings in their order; merged entries keep the
 * places they were written at. */
#ifndef KT_YAML_TREE_H
#define KT_YAML_TREE_H

#include "util/diag.h"

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

/* Limits that keep hostile input (alias bombs, deep nesting, huge files) cheap to reject. */
#define KT_YAML_MAX_BYTES (4u << 20) /* input size */
#define KT_YAML_MAX_NODES 100000     /* nodes after alias expansion */
#define KT_YAML_MAX_DEPTH 64         /* nested mappings and sequences */

typedef enum { KT_NODE_SCALAR = 0, KT_NODE_MAP, KT_NODE_SEQ } kt_node_kind;

/* How a scalar resolves under the YAML 1.2 core schema (quoted scalars are strings). */
typedef enum {
    KT_SCALAR_NULL = 0,
    KT_SCALAR_BOOL,
    KT_SCALAR_INT,
    KT_SCALAR_FLOAT,
    KT_SCALAR_STRING
} kt_scalar_type;

typedef struct kt_node {
    kt_node_kind kind;
    int line, col; /* 1-based, where the node starts */
    /* scalar */
    char *value; /* NUL-terminated (may contain NUL; see len) */
    size_t len;
    int quoted; /* 1 for single- or double-quoted, literal or folded scalars */
    /* map: keys[i] (scalar nodes) -> items[i]; seq: items[i] */
    struct kt_node **keys;
    struct kt_node **items;
    size_t n;
} kt_node;

/* Parses 'len' bytes of 'text'; 'file' names the source in messages. Reports every problem
 * it can into 'diag' (libyaml stops at its first syntax error) and returns 0 with *out set,
 * or -1. */
int kt_yaml_load(kt_node **out, const char *file, const char *text, size_t len, kt_diag *diag);
void kt_node_free(kt_node *node);

/* KT_SCALAR_STRING for quoted scalars and for non-scalars. */
kt_scalar_type kt_node_scalar_type(const kt_node *node);
/* Value of a map key, or NULL. */
const kt_node *kt_node_get(const kt_node *map, const char *key);
/* The node at a dotted key path under 'root' ("trials.max_repetitions", "candidates"), or
 * NULL; for messages that point at a spec's line. */
const kt_node *kt_node_at_path(const kt_node *root, const char *dotted_path);
/* Scalar conversions; return 0 on success, -1 when the scalar is not of that type or
 * overflows it. kt_node_int also takes a float with no fraction that fits (4.0, 1e3), as
 * JSON Schema's "integer" does; kt_node_double takes ints, and rejects a finite literal
 * that overflows to infinity (1e999) while accepting .inf and .nan. */
int kt_node_int(const kt_node *node, int64_t *out);
int kt_node_double(const kt_node *node, double *out);
int kt_node_bool(const kt_node *node, int *out);
/* The scalar's text, or NULL for a non-scalar. */
const char *kt_node_str(const kt_node *node);
/* The node as JSON (map -> object, seq -> array, scalars resolved as kt_node_scalar_type
 * says; integers beyond 2^53 lose precision, as in any JSON number). Caller frees with
 * cJSON_Delete. NULL when out of memory. */
cJSON *kt_node_to_json(const kt_node *node);

/* "; did you mean 'x'?" for a suggested scalar 'guess'; a word that YAML 1.1 reads as a boolean
 * (off, on, yes, no, y, n), which the loader refuses unquoted, is suggested in quotes. */
void kt_yaml_did_you_mean(char *buf, size_t len, const char *guess);

#endif
