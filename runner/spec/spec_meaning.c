/* spec_meaning.c - the meaning checks of a spec (docs/spec.md, "Validation", stage 3).
 *
 * The schema has already vouched for types and ranges; this stage resolves names against the
 * registry and the catalog, fills the kt_spec with values and defaults, and reports what the
 * schema cannot see: ops and variants this build lacks, params of a variant, inline models
 * missing a field the op reads, axes an op does not have, duplicate or reserved names,
 * min_repetitions over max_repetitions, an empty matrix, a plan over budget. Every message is
 * "path: problem" at the line and column of the node at fault. */
#include "spec/spec_meaning.h"
#include "spec/catalog.h"
#include "spec/command_spec.h"
#include "spec/service_spec.h"
#include "spec/pymodule_spec.h"
#include "spec/matrix.h"
#include "spec/plan.h"
#include "spec/spec_plugins.h"
#include "spec/spec_python.h"
#include "util/suggest.h"
#include "spec/yaml_tree.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct mctx {
    kt_spec *spec;
    const kt_spec_options *opts;
    kt_diag *diag;
    const kt_node *root;
    kt_catalog catalog;
    int backend_ok; /* spec->backend is resolved and the op has variants there */
} mctx;

#define MAX_BYTES_DIM KT_LIMIT_DIMENSION
#define MAX_CONTEXT   KT_LIMIT_CONTEXT

static void report(mctx *c, const kt_node *at, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Adds an error at 'at' (line 0 when NULL) as "path: message", or just the message when
 * 'path' is NULL. */
static void report(mctx *c, const kt_node *at, const char *path, const char *fmt, ...)
{
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    int line = at ? at->line : 0, col = at ? at->col : 0;
    if (path)
        kt_diag_error(c->diag, c->spec->path, line, col, "%s: %s", path, msg);
    else
        kt_diag_error(c->diag, c->spec->path, line, col, "%s", msg);
}

/* "; did you mean 'x'?" when 'word' is close to one of 'names', else "". */
static const char *did_you_mean(char *buf, size_t len, const char *word, const char *const *names,
                                size_t n)
{
    const char *guess = kt_suggest(word, names, n);
    if (guess)
        kt_yaml_did_you_mean(buf, len, guess);
    else
        buf[0] = '\0';
    return buf;
}

/* What a node is, for "got ..." messages: string "eight", integer 3, a map. */
static const char *describe(char *buf, size_t len, const kt_node *n)
{
    if (n->kind == KT_NODE_MAP)
        return "a map";
    if (n->kind == KT_NODE_SEQ)
        return "a list";
    switch (kt_node_scalar_type(n)) {
    case KT_SCALAR_NULL:
        return "null";
    case KT_SCALAR_BOOL:
        snprintf(buf, len, "boolean %s", n->value);
        break;
    case KT_SCALAR_INT:
        snprintf(buf, len, "integer %s", n->value);
        break;
    case KT_SCALAR_FLOAT:
        snprintf(buf, len, "number %s", n->value);
        break;
    default:
        snprintf(buf, len, "string \"%.40s%s\"", n->value, strlen(n->value) > 40 ? "..." : "");
    }
    return buf;
}

/* The value of 'key' in 'map' (NULL when absent or 'map' is no map); its key node in *key. */
static const kt_node *get_key(const kt_node *map, const char *key, const kt_node **key_node)
{
    if (key_node)
        *key_node = NULL;
    if (!map || map->kind != KT_NODE_MAP)
        return NULL;
    for (size_t i = 0; i < map->n; i++) {
        const char *k = kt_node_str(map->keys[i]);
        if (k && strcmp(k, key) == 0) {
            if (key_node)
                *key_node = map->keys[i];
            return map->items[i];
        }
    }
    return NULL;
}

/* Reads an integer in [min, max]; reports and returns -1 otherwise (the schema normally
 * rules this out, but an integer too large for 64 bits only shows here). */
static int get_int(mctx *c, const kt_node *n, const char *path, int64_t min, int64_t max,
                   int64_t *out)
{
    char got[96];
    if (!n || kt_node_scalar_type(n) != KT_SCALAR_INT || kt_node_int(n, out) != 0) {
        if (n && kt_node_scalar_type(n) == KT_SCALAR_INT)
            report(c, n, path, "%s does not fit in 64 bits (the limit is %lld)", n->value,
                   (long long)max);
        else
            report(c, n, path, "expected integer, got %s",
                   n ? describe(got, sizeof(got), n) : "nothing");
        return -1;
    }
    if (*out < min || *out > max) {
        report(c, n, path, "%lld is out of range [%lld, %lld]", (long long)*out, (long long)min,
               (long long)max);
        return -1;
    }
    return 0;
}

static double get_double(const kt_node *n, double fallback)
{
    double v;
    return n && kt_node_double(n, &v) == 0 ? v : fallback;
}

static int get_bool(const kt_node *n, int fallback)
{
    int v;
    return n && kt_node_bool(n, &v) == 0 ? v : fallback;
}

/* Index of 'word' in 'names', or -1. */
static int name_index(const char *word, const char *const *names, int n)
{
    for (int i = 0; word && i < n; i++)
        if (strcmp(word, names[i]) == 0)
            return i;
    return -1;
}

static const char *const phase_names[] = {"decode", "prefill"};
static const char *const role_names[] = {"qkv", "o", "gate_up", "down"};
static const kt_role role_values[] = {KT_ROLE_QKV, KT_ROLE_O, KT_ROLE_GATE_UP, KT_ROLE_DOWN};

/* ---- params ------------------------------------------------------------------------------ */

/* Splits "a|b|c" into 'out' (pointers into 'buf'); returns the count. */
static int split_choices(const char *choices, char *buf, size_t len, const char **out, int max)
{
    snprintf(buf, len, "%s", choices ? choices : "");
    int n = 0;
    for (char *p = buf; p && *p && n < max;) {
        out[n++] = p;
        p = strchr(p, '|');
        if (p)
            *p++ = '\0';
    }
    return n;
}

/* Checks one param value against its definition and stores it in 'value'. */
static void check_param_value(mctx *c, const kt_node *v, const char *path, const kt_param_def *def,
                              kt_param_value *value)
{
    char got[96];
    kt_scalar_type t = v->kind == KT_NODE_SCALAR ? kt_node_scalar_type(v) : KT_SCALAR_NULL;
    double num = 0;
    switch (def->type) {
    case KT_PARAM_BOOL: {
        int b;
        if (v->kind != KT_NODE_SCALAR || t != KT_SCALAR_BOOL || kt_node_bool(v, &b) != 0) {
            report(c, v, path, "expected true or false, got %s", describe(got, sizeof(got), v));
            return;
        }
        value->num = b;
        return;
    }
    case KT_PARAM_ENUM: {
        char buf[256];
        const char *names[32];
        int n = split_choices(def->choices, buf, sizeof(buf), names, 32);
        const char *s = v->kind == KT_NODE_SCALAR ? kt_node_str(v) : NULL;
        int idx = t == KT_SCALAR_STRING ? name_index(s, names, n) : -1;
        if (idx < 0) {
            char hint[96] = "";
            if (t == KT_SCALAR_STRING)
                did_you_mean(hint, sizeof(hint), s, names, (size_t)n);
            report(c, v, path, "expected one of %s, got %s%s", def->choices,
                   describe(got, sizeof(got), v), hint);
            return;
        }
        value->num = idx;
        return;
    }
    case KT_PARAM_INT: {
        int64_t i;
        if (v->kind != KT_NODE_SCALAR || t != KT_SCALAR_INT) {
            report(c, v, path, "expected integer, got %s", describe(got, sizeof(got), v));
            return;
        }
        if (kt_node_int(v, &i) != 0) { /* an integer that overflows int64 */
            report(c, v, path, "%s is out of range [%.10g, %.10g]", v->value, def->min, def->max);
            return;
        }
        num = (double)i;
        break;
    }
    case KT_PARAM_FLOAT:
        if (v->kind != KT_NODE_SCALAR || (t != KT_SCALAR_INT && t != KT_SCALAR_FLOAT)) {
            report(c, v, path, "expected number, got %s", describe(got, sizeof(got), v));
            return;
        }
        if (kt_node_double(v, &num) != 0) { /* a finite literal that overflows (1e999) */
            report(c, v, path, "%s is out of range [%.10g, %.10g]", v->value, def->min, def->max);
            return;
        }
        if (!isfinite(num)) {
            report(c, v, path, "expected a finite number, got %s", v->value);
            return;
        }
        break;
    }
    if (num < def->min || num > def->max) {
        report(c, v, path, "%s is out of range [%.10g, %.10g]", v->value, def->min, def->max);
        return;
    }
    value->num = num;
}

/* Checks the 'params' map against 'defs' (owned by 'owner', e.g. "variant 'ffd'") and fills
 * 'values' (defaults first). */
static void check_params(mctx *c, const kt_node *params, const char *path, const kt_param_def *defs,
                         int n_defs, const char *owner, kt_param_value *values)
{
    kt_param_defaults(values, defs, n_defs);
    if (!params || params->kind != KT_NODE_MAP)
        return;
    const char *names[KT_MAX_PARAMS];
    for (int i = 0; i < n_defs && i < KT_MAX_PARAMS; i++)
        names[i] = defs[i].name;
    for (size_t i = 0; i < params->n; i++) {
        const char *key = kt_node_str(params->keys[i]);
        int idx = key ? kt_param_index(defs, n_defs, key) : -1;
        if (idx < 0) {
            char hint[96];
            if (n_defs == 0)
                report(c, params->keys[i], path, "%s has no params, got '%s'", owner,
                       key ? key : "");
            else
                report(c, params->keys[i], path, "%s has no param '%s'%s", owner, key ? key : "",
                       did_you_mean(hint, sizeof(hint), key ? key : "", names, (size_t)n_defs));
            continue;
        }
        char sub[160];
        snprintf(sub, sizeof(sub), "%s.%s", path, key);
        check_param_value(c, params->items[i], sub, &defs[idx], &values[idx]);
    }
}

/* ---- op, backend ------------------------------------------------------------------------- */

static void check_op_backend(mctx *c)
{
    kt_spec *spec = c->spec;
    const kt_node *op_node = kt_node_get(c->root, "op");
    const char *op_name = kt_node_str(op_node);
    spec->op = op_name ? kt_op_find(op_name) : NULL;
    if (spec->op && !kt_spec_uses_plugin(spec, kt_op_plugin(spec->op)))
        spec->op = NULL; /* from a plugin another spec of this command listed */
    if (!spec->op) {
        const char *names[64];
        size_t n = 0;
        for (int i = 0; i < kt_op_count() && n < 64; i++)
            if (kt_spec_uses_plugin(spec, kt_op_plugin(kt_op_at(i))))
                names[n++] = kt_op_at(i)->name;
        char hint[96];
        did_you_mean(hint, sizeof(hint), op_name ? op_name : "", names, n);
        report(c, op_node, NULL,
               "op '%s' is neither built in nor added by a listed plugin%s ('ktrial kernels' "
               "lists the ops)",
               op_name ? op_name : "", hint);
        return;
    }

    const kt_node *be_node = kt_node_get(c->root, "backend");
    const char *requested = kt_node_str(be_node);
    const kt_node *at = be_node;
    const char *path = "backend";
    if (c->opts->backend) {
        requested = c->opts->backend;
        at = op_node;
        path = "--backend";
    } else if (!requested) {
        requested = "auto";
        at = op_node;
        path = NULL;
    }
    snprintf(spec->backend_requested, sizeof(spec->backend_requested), "%s", requested);
    char why[256];
    if (kt_spec_resolve_backend(spec->backend, sizeof(spec->backend), spec->op, requested, why,
                                sizeof(why)) != 0) {
        report(c, at, path, "%s", why);
        return;
    }
    c->backend_ok = 1;
}

/* ---- axes -------------------------------------------------------------------------------- */

/* The list given for an axis, when the op uses it. Reports a list for an axis the op does not
 * have, and a missing list the op needs ('required'). */
static const kt_node *axis_list(mctx *c, const char *key, unsigned axis, const char *axis_name,
                                int required)
{
    const kt_node *key_node;
    const kt_node *list = get_key(c->root, key, &key_node);
    const kt_op *op = c->spec->op;
    if (!(op->axes & axis)) {
        if (list)
            report(c, key_node, key, "op '%s' has no %s axis", op->name, axis_name);
        return NULL;
    }
    if (!list && required)
        report(c, kt_node_get(c->root, "op"), NULL, "op '%s' needs '%s'", op->name, key);
    return list && list->kind == KT_NODE_SEQ ? list : NULL;
}

static const char *const model_field_names[] = {"hidden", "heads", "kv_heads", "head_dim",
                                                "intermediate"};
static const unsigned model_field_bits[] = {KT_MODEL_HIDDEN, KT_MODEL_HEADS, KT_MODEL_KV_HEADS,
                                            KT_MODEL_HEAD_DIM, KT_MODEL_INTERMEDIATE};

static int64_t *model_field(kt_model *m, int i)
{
    int64_t *fields[] = {&m->hidden, &m->heads, &m->kv_heads, &m->head_dim, &m->intermediate};
    return fields[i];
}

/* The model fields the spec's points read: the op's, and of the built-in op with a role axis
 * (gemm) only those its roles read (a gate_up/down spec needs no heads). A role an include rule
 * adds to an inline model without its fields is refused at the model by the shape check. A
 * plugin's op reads what it declares, roles or not. */
static unsigned needed_model_fields(const kt_spec *spec)
{
    unsigned fields = spec->op->model_fields, roles = 0;
    if (!(spec->op->axes & KT_AXIS_ROLE) || !spec->roles ||
        kt_op_plugin(spec->op) != KT_PLUGIN_BUILTIN)
        return fields;
    for (size_t i = 0; i < spec->n_roles; i++)
        roles |= kt_role_model_fields(spec->roles[i]);
    return fields & roles;
}

/* Fills 'm' from an inline model map; reports fields the op reads that are missing. */
static int inline_model(mctx *c, const kt_node *map, const char *path, kt_model *m)
{
    int ok = 1;
    const char *name = kt_node_str(kt_node_get(map, "name"));
    snprintf(m->name, sizeof(m->name), "%s", name ? name : "");
    if (kt_catalog_find(&c->catalog, m->name)) {
        report(c, map, path, "inline model '%s' has the name of a catalog model; rename it",
               m->name);
        ok = 0;
    }
    for (int i = 0; i < 5; i++) {
        const kt_node *v = kt_node_get(map, model_field_names[i]);
        char sub[160];
        snprintf(sub, sizeof(sub), "%s.%s", path, model_field_names[i]);
        if (v) {
            if (get_int(c, v, sub, 1, MAX_BYTES_DIM, model_field(m, i)) != 0)
                ok = 0;
        } else if (needed_model_fields(c->spec) & model_field_bits[i]) {
            report(c, map, path, "inline model '%s' needs '%s' for op '%s'", m->name,
                   model_field_names[i], c->spec->op->name);
            ok = 0;
        }
    }
    const kt_node *layers = kt_node_get(map, "layers");
    char layers_path[160];
    snprintf(layers_path, sizeof(layers_path), "%s.layers", path);
    if (layers && get_int(c, layers, layers_path, 1, MAX_BYTES_DIM, &m->layers) != 0)
        ok = 0;
    return ok ? 0 : -1;
}

static void check_models(mctx *c)
{
    kt_spec *spec = c->spec;
    const kt_node *list = axis_list(c, "models", KT_AXIS_MODEL, "model", 1);
    if (!list)
        return;
    spec->models = calloc(list->n ? list->n : 1, sizeof(*spec->models));
    if (!spec->models) {
        report(c, list, "models", "out of memory");
        return;
    }
    const char *names[64];
    size_t n_cat = c->catalog.n < 64 ? c->catalog.n : 64;
    for (size_t i = 0; i < n_cat; i++)
        names[i] = c->catalog.models[i].name;
    for (size_t i = 0; i < list->n; i++) {
        const kt_node *item = list->items[i];
        kt_model *m = &spec->models[spec->n_models];
        char path[64], hint[96];
        snprintf(path, sizeof(path), "models[%zu]", i);
        if (item->kind == KT_NODE_MAP) {
            if (inline_model(c, item, path, m) != 0)
                continue;
        } else {
            const char *name = kt_node_str(item);
            const kt_model *found = name ? kt_catalog_find(&c->catalog, name) : NULL;
            if (!found) {
                did_you_mean(hint, sizeof(hint), name ? name : "", names, n_cat);
                report(c, item, path, "unknown model '%s'%s", name ? name : "",
                       hint[0] ? hint : " (see 'ktrial models', or give an inline model)");
                continue;
            }
            *m = *found;
        }
        if ((spec->op->model_fields & KT_MODEL_HEADS) &&
            (spec->op->model_fields & KT_MODEL_KV_HEADS) && m->kv_heads > 0 &&
            m->heads % m->kv_heads != 0) {
            report(c, item, path, "model '%s': heads (%lld) is not a multiple of kv_heads (%lld)",
                   m->name, (long long)m->heads, (long long)m->kv_heads);
            continue;
        }
        int dup = 0;
        for (size_t j = 0; j < spec->n_models && !dup; j++)
            dup = strcmp(spec->models[j].name, m->name) == 0;
        if (dup) {
            report(c, item, path, "model '%s' is listed twice", m->name);
            continue;
        }
        spec->n_models++;
    }
}

/* Fills an int64 axis (batch_sizes, context_lengths); an axis the op uses but does not need
 * here ('required' 0) defaults to the single value 0. */
static void check_int_axis(mctx *c, const char *key, unsigned axis, const char *axis_name,
                           int64_t max, int required, int64_t **out, size_t *n_out)
{
    const kt_node *list = axis_list(c, key, axis, axis_name, required);
    if (!list && !required && (c->spec->op->axes & axis)) {
        *out = calloc(1, sizeof(**out));
        *n_out = *out ? 1 : 0;
    }
    if (!list)
        return;
    *out = calloc(list->n ? list->n : 1, sizeof(**out));
    if (!*out) {
        report(c, list, key, "out of memory");
        return;
    }
    for (size_t i = 0; i < list->n; i++) {
        char path[64];
        snprintf(path, sizeof(path), "%s[%zu]", key, i);
        if (get_int(c, list->items[i], path, 1, max, &(*out)[*n_out]) == 0)
            (*n_out)++;
    }
}

/* Fills an enum axis (phases, roles): the listed names, or every default when absent. */
static void check_enum_axis(mctx *c, const char *key, unsigned axis, const char *axis_name,
                            const char *const *names, int n_names, int n_defaults, int **out,
                            size_t *n_out)
{
    if (!(c->spec->op->axes & axis)) {
        axis_list(c, key, axis, axis_name, 0);
        return;
    }
    const kt_node *list = axis_list(c, key, axis, axis_name, 0);
    size_t n = list ? list->n : (size_t)n_defaults;
    *out = calloc(n ? n : 1, sizeof(int));
    if (!*out) {
        report(c, list, key, "out of memory");
        return;
    }
    for (size_t i = 0; i < n; i++) {
        int idx = list ? name_index(kt_node_str(list->items[i]), names, n_names) : (int)i;
        if (idx < 0) {
            char path[64], got[96];
            snprintf(path, sizeof(path), "%s[%zu]", key, i);
            report(c, list->items[i], path, "expected a %s, got %s", axis_name,
                   describe(got, sizeof(got), list->items[i]));
            continue;
        }
        (*out)[(*n_out)++] = idx;
    }
}

static int is_command(const kt_spec *spec)
{
    return spec->op && strcmp(spec->op->name, "command") == 0;
}

static int is_service(const kt_spec *spec)
{
    return spec->op && strcmp(spec->op->name, "service") == 0;
}

/* The ops of the process backend: whole programs, whose axes are placeholders. */
static int is_process_op(const kt_spec *spec)
{
    return is_command(spec) || is_service(spec);
}

static int is_pymodule(const kt_spec *spec)
{
    return spec->op && strcmp(spec->op->name, "pymodule") == 0;
}

/* Ops whose points are not model-shaped (command, service, pymodule): batch_sizes and
 * context_lengths are optional, one value each when left out. */
static int axes_optional(const kt_spec *spec)
{
    return is_process_op(spec) || is_pymodule(spec);
}

/* op command: an axis the spec leaves out is one value, 'value' ({batch_size} is 1 and
 * {context_length} 0 unless listed). */
static void default_axis(mctx *c, const char *key, int64_t **values, size_t *n, int64_t value)
{
    if (kt_node_get(c->root, key) || !axes_optional(c->spec))
        return;
    free(*values);
    *values = malloc(sizeof(**values));
    if (!*values)
        return;
    (*values)[0] = value;
    *n = 1;
}

static void check_axes(mctx *c)
{
    kt_spec *spec = c->spec;
    int *phases = NULL, *roles = NULL;
    /* roles first: they say which of a model's fields a gemm spec needs. Defaults: all four */
    check_enum_axis(c, "roles", KT_AXIS_ROLE, "role", role_names, 4, 4, &roles, &spec->n_roles);
    spec->roles = calloc(spec->n_roles ? spec->n_roles : 1, sizeof(*spec->roles));
    for (size_t i = 0; spec->roles && i < spec->n_roles; i++)
        spec->roles[i] = role_values[roles[i]];
    check_models(c);
    check_int_axis(c, "batch_sizes", KT_AXIS_BATCH, "batch_size", MAX_BYTES_DIM,
                   !axes_optional(spec), &spec->batch_sizes, &spec->n_batch_sizes);
    default_axis(c, "batch_sizes", &spec->batch_sizes, &spec->n_batch_sizes, 1);
    /* kt_phase values are the indexes of phase_names; defaults: decode only */
    check_enum_axis(c, "phases", KT_AXIS_PHASE, "phase", phase_names, 2, 1, &phases,
                    &spec->n_phases);
    spec->phases = calloc(spec->n_phases ? spec->n_phases : 1, sizeof(*spec->phases));
    int prefill = 0;
    for (size_t i = 0; spec->phases && i < spec->n_phases; i++) {
        spec->phases[i] = phases[i] == 1 ? KT_PHASE_PREFILL : KT_PHASE_DECODE;
        prefill |= spec->phases[i] == KT_PHASE_PREFILL;
    }
    /* with a phase axis, the context only shapes prefill points (M = batch x context), unless
     * the op's decode points read a cache of that context */
    unsigned axes = spec->op->axes;
    int need_context = (!(axes & KT_AXIS_PHASE) || (axes & KT_AXIS_DECODE_CONTEXT) || prefill) &&
                       !axes_optional(spec);
    check_int_axis(c, "context_lengths", KT_AXIS_CONTEXT, "context_length", MAX_CONTEXT,
                   need_context, &spec->context_lengths, &spec->n_context_lengths);
    default_axis(c, "context_lengths", &spec->context_lengths, &spec->n_context_lengths, 0);
    free(phases);
    free(roles);
}

/* ---- exclude / include ------------------------------------------------------------------- */

static const char *const axis_names[] = {"model", "batch_size", "context_length", "phase", "role"};
static const unsigned axis_bits[] = {KT_AXIS_MODEL, KT_AXIS_BATCH, KT_AXIS_CONTEXT, KT_AXIS_PHASE,
                                     KT_AXIS_ROLE};

/* A rule's model: one of the spec's models, else one of the catalog. */
static int rule_model(mctx *c, const kt_node *v, const char *path, kt_model *out)
{
    const char *name = kt_node_str(v);
    for (size_t i = 0; name && i < c->spec->n_models; i++) {
        if (strcmp(c->spec->models[i].name, name) == 0) {
            *out = c->spec->models[i];
            return 0;
        }
    }
    const kt_model *m = name ? kt_catalog_find(&c->catalog, name) : NULL;
    if (m) {
        *out = *m;
        return 0;
    }
    const char *names[128];
    size_t n = 0;
    for (size_t i = 0; i < c->spec->n_models && n < 64; i++)
        names[n++] = c->spec->models[i].name;
    for (size_t i = 0; i < c->catalog.n && n < 128; i++)
        names[n++] = c->catalog.models[i].name;
    char hint[96];
    report(c, v, path, "unknown model '%s'%s", name ? name : "",
           did_you_mean(hint, sizeof(hint), name ? name : "", names, n));
    return -1;
}

/* Parses one exclude or include entry into 'rule'; returns 0 when it is usable. */
static int check_rule(mctx *c, const kt_node *entry, const char *path, kt_matrix_rule *rule)
{
    const kt_op *op = c->spec->op;
    memset(rule, 0, sizeof(*rule));
    rule->line = entry->line;
    rule->col = entry->col;
    if (entry->kind != KT_NODE_MAP)
        return -1;
    if (entry->n == 0) {
        report(c, entry, path, "names no axis");
        return -1;
    }
    int ok = 1;
    const char *op_axes[5];
    size_t n_op_axes = 0;
    char list[128] = "";
    for (int a = 0; a < 5; a++) {
        if (!(op->axes & axis_bits[a]))
            continue;
        op_axes[n_op_axes++] = axis_names[a];
        strncat(list, n_op_axes > 1 ? ", " : "", sizeof(list) - strlen(list) - 1);
        strncat(list, axis_names[a], sizeof(list) - strlen(list) - 1);
    }
    for (size_t i = 0; i < entry->n; i++) {
        const char *key = kt_node_str(entry->keys[i]);
        int a = name_index(key, axis_names, 5);
        if (a < 0 || !(op->axes & axis_bits[a])) {
            char hint[96];
            did_you_mean(hint, sizeof(hint), key ? key : "", op_axes, n_op_axes);
            if (hint[0])
                report(c, entry->keys[i], path, "'%s' is not an axis of op '%s'%s", key ? key : "",
                       op->name, hint);
            else
                report(c, entry->keys[i], path, "'%s' is not an axis of op '%s' (axes: %s)",
                       key ? key : "", op->name, list);
            ok = 0;
            continue;
        }
        const kt_node *v = entry->items[i];
        char sub[96];
        snprintf(sub, sizeof(sub), "%s.%s", path, key);
        int64_t num;
        int idx;
        switch (axis_bits[a]) {
        case KT_AXIS_MODEL:
            ok &= rule_model(c, v, sub, &rule->point.model) == 0;
            break;
        case KT_AXIS_BATCH:
            ok &= get_int(c, v, sub, 1, MAX_BYTES_DIM, &num) == 0;
            rule->point.batch_size = num;
            break;
        case KT_AXIS_CONTEXT:
            ok &= get_int(c, v, sub, 1, MAX_CONTEXT, &num) == 0;
            rule->point.context_length = num;
            break;
        case KT_AXIS_PHASE:
            idx = name_index(kt_node_str(v), phase_names, 2);
            ok &= idx >= 0;
            rule->point.phase = idx == 1 ? KT_PHASE_PREFILL : KT_PHASE_DECODE;
            break;
        default:
            idx = name_index(kt_node_str(v), role_names, 4);
            ok &= idx >= 0;
            rule->point.role = idx >= 0 ? role_values[idx] : KT_ROLE_NONE;
            break;
        }
        rule->axes |= axis_bits[a];
    }
    return ok ? 0 : -1;
}

static void check_rules(mctx *c, const char *key, kt_matrix_rule **out, size_t *n_out)
{
    const kt_node *list = kt_node_get(c->root, key);
    if (!list || list->kind != KT_NODE_SEQ || list->n == 0)
        return;
    *out = calloc(list->n, sizeof(**out));
    if (!*out) {
        report(c, list, key, "out of memory");
        return;
    }
    for (size_t i = 0; i < list->n; i++) {
        char path[64];
        snprintf(path, sizeof(path), "%s[%zu]", key, i);
        if (check_rule(c, list->items[i], path, &(*out)[*n_out]) == 0)
            (*n_out)++;
    }
}

/* ---- inputs, arms ------------------------------------------------------------------------ */

static void check_inputs(mctx *c)
{
    kt_spec *spec = c->spec;
    const kt_node *inputs = kt_node_get(c->root, "inputs");
    static const char *const dists[] = {"normal", "uniform", "llm"};
    static const kt_distribution dist_values[] = {KT_DIST_NORMAL, KT_DIST_UNIFORM, KT_DIST_LLM};
    int d = name_index(kt_node_str(kt_node_get(inputs, "distribution")), dists, 3);
    spec->distribution = d >= 0 ? dist_values[d] : KT_DIST_NORMAL;
    int64_t v;
    const kt_node *seed = kt_node_get(inputs, "seed");
    spec->seed = 0;
    if (seed && get_int(c, seed, "inputs.seed", 0, INT64_MAX, &v) == 0)
        spec->seed = (uint64_t)v;
    const kt_node *sets = kt_node_get(inputs, "sets");
    spec->input_sets = 3;
    if (sets && get_int(c, sets, "inputs.sets", 1, KT_LIMIT_INPUT_SETS, &v) == 0)
        spec->input_sets = (int)v;
    if (spec->op) {
        char owner[96];
        snprintf(owner, sizeof(owner), "the input generator of op '%s'", spec->op->name);
        check_params(c, kt_node_get(inputs, "params"), "inputs.params", spec->op->input_params,
                     spec->op->n_input_params, owner, spec->input_params);
    }
}

/* Resolves an arm's variant and params; 'node' is the baseline map or a candidate map. */
static void check_arm(mctx *c, const kt_node *node, const char *path, kt_arm *arm)
{
    kt_spec *spec = c->spec;
    arm->line = node->line;
    arm->col = node->col;
    if (!c->backend_ok)
        return;
    if (kt_node_get(node, "python")) {
        kt_spec_python_arm(spec, node, path, arm, c->diag);
        return;
    }
    const kt_node *vnode = kt_node_get(node, "variant");
    const char *name = kt_node_str(vnode);
    if (!vnode && is_command(spec))
        name = "exec"; /* the process backend's one variant: the arm is its 'run' list */
    if (!vnode && is_service(spec))
        name = "serve"; /* the arm is its server's 'setup' list */
    if (!vnode && is_pymodule(spec))
        name = "module"; /* the arm is its class, made and called by the pymodule arm kind */
    char sub[96];
    snprintf(sub, sizeof(sub), "%s.variant", path);
    const kt_node *pnode = kt_node_get(node, "plugin");
    const kt_spec_plugin *from = NULL;
    if (pnode) {
        char psub[96];
        snprintf(psub, sizeof(psub), "%s.plugin", path);
        from = kt_spec_plugin_named(spec, kt_node_str(pnode));
        if (!from) {
            report(c, pnode, psub, "'%s' is not listed under plugins", kt_node_str(pnode));
            return;
        }
        if (from->index < 0)
            return; /* its load error is reported at its entry */
    }
    int ambiguous = 0;
    arm->variant = name ? kt_spec_find_variant(spec, name, from, c->diag, &ambiguous) : NULL;
    if (ambiguous)
        return;
    if (!arm->variant && from) {
        report(c, vnode, sub, "plugin '%s' has no variant '%s' of op '%s' on backend '%s'",
               from->path, name ? name : "", spec->op->name, spec->backend);
        return;
    }
    if (!arm->variant) {
        const char *names[64];
        size_t n = 0;
        char elsewhere[128] = "", hint[96], list[512] = "";
        for (int i = 0; i < kt_variant_count(); i++) {
            const kt_variant *v = kt_variant_at(i);
            if (strcmp(v->op, spec->op->name) != 0 ||
                !kt_spec_uses_plugin(spec, kt_variant_plugin(v)))
                continue;
            if (strcmp(v->backend, spec->backend) == 0 && n < 64) {
                names[n++] = v->name;
                strncat(list, n > 1 ? ", " : "", sizeof(list) - strlen(list) - 1);
                strncat(list, v->name, sizeof(list) - strlen(list) - 1);
            } else if (name && strcmp(v->name, name) == 0) {
                strncat(elsewhere, elsewhere[0] ? ", " : "",
                        sizeof(elsewhere) - strlen(elsewhere) - 1);
                strncat(elsewhere, v->backend, sizeof(elsewhere) - strlen(elsewhere) - 1);
            }
        }
        did_you_mean(hint, sizeof(hint), name ? name : "", names, n);
        if (elsewhere[0])
            report(c, vnode, sub, "op '%s' has no variant '%s' on backend '%s' (it runs on: %s)",
                   spec->op->name, name ? name : "", spec->backend, elsewhere);
        else if (hint[0])
            report(c, vnode, sub, "op '%s' has no variant '%s' on backend '%s'%s", spec->op->name,
                   name ? name : "", spec->backend, hint);
        else
            report(c, vnode, sub, "op '%s' has no variant '%s' on backend '%s' (variants: %s)",
                   spec->op->name, name ? name : "", spec->backend, list);
        return;
    }
    if (kt_py_is_variant(arm->variant) && !kt_py_module_available("torch"))
        report(c, vnode, sub, "variant '%s' calls PyTorch: %s", name, kt_error_last());
    char owner[96];
    snprintf(owner, sizeof(owner), "variant '%s'", arm->variant->name);
    snprintf(sub, sizeof(sub), "%s.params", path);
    check_params(c, kt_node_get(node, "params"), sub, arm->variant->params, arm->variant->n_params,
                 owner, arm->params);
}

static void check_arms(mctx *c)
{
    kt_spec *spec = c->spec;
    const kt_node *key;
    const kt_node *baseline = get_key(c->root, "baseline", &key);
    snprintf(spec->baseline.name, sizeof(spec->baseline.name), "baseline");
    if (baseline) {
        check_arm(c, baseline, "baseline", &spec->baseline);
        spec->baseline.line = key->line; /* declared at its key, not its first field */
        spec->baseline.col = key->col;
    }
    const kt_node *list = kt_node_get(c->root, "candidates");
    if (!list || list->kind != KT_NODE_SEQ)
        return;
    spec->candidates = calloc(list->n ? list->n : 1, sizeof(*spec->candidates));
    if (!spec->candidates) {
        report(c, list, "candidates", "out of memory");
        return;
    }
    for (size_t i = 0; i < list->n; i++) {
        const kt_node *item = list->items[i];
        kt_arm *arm = &spec->candidates[spec->n_candidates];
        char path[64], sub[80];
        snprintf(path, sizeof(path), "candidates[%zu]", i);
        snprintf(sub, sizeof(sub), "%s.name", path);
        const kt_node *name_node = kt_node_get(item, "name");
        const char *name = kt_node_str(name_node);
        snprintf(arm->name, sizeof(arm->name), "%s", name ? name : "");
        int ok = 1;
        if (strcmp(arm->name, "baseline") == 0) {
            report(c, name_node, sub, "'baseline' is reserved for the baseline; pick another name");
            ok = 0;
        } else if (name && (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)) {
            /* a command arm's files are kept in outputs/<point>/<name>/ */
            report(c, name_node, sub,
                   "'%s' would lead the archive out of the arm's own folder "
                   "(outputs/<point>/%s/); pick another name",
                   name, name);
            ok = 0;
        }
        /* against every earlier entry, kept or not: one with another error still holds its name */
        for (size_t j = 0; j < i && ok && name; j++) {
            const kt_node *earlier = kt_node_get(list->items[j], "name");
            const char *other = kt_node_str(earlier);
            if (other && strcmp(other, arm->name) == 0) {
                report(c, name_node, sub, "candidate name '%s' is already used at line %d",
                       arm->name, earlier->line);
                ok = 0;
            }
        }
        size_t errors = c->diag->n_errors;
        check_arm(c, item, path, arm);
        if (ok && c->diag->n_errors == errors)
            spec->n_candidates++;
    }
}

/* The node of param 'blame' of 'arm' (declared at 'node'), or 'node' itself; 'sub' gets its path
 * under 'path'. */
static const kt_node *blamed_param(const kt_node *node, const char *path, const kt_arm *arm,
                                   int blame, char *sub, size_t len)
{
    snprintf(sub, len, "%s", path);
    if (blame < 0 || blame >= arm->variant->n_params)
        return node;
    const char *name = arm->variant->params[blame].name;
    const kt_node *pn = kt_node_get(kt_node_get(node, "params"), name);
    snprintf(sub, len, "%s.params.%s", path, name);
    return pn ? pn : node;
}

/* Refuses, at the blamed param (or the arm), an arm whose variant cannot run with its params
 * together, or cannot run a phase the spec lists ('arm' declared at 'node', reported under
 * 'path'). */
static void check_arm_limits(mctx *c, const kt_node *node, const char *path, const kt_arm *arm)
{
    const kt_spec *spec = c->spec;
    char sub[128];
    int blame = -1;
    if (!arm->variant)
        return;
    kt_error_clear();
    if (kt_variant_check_params(arm->variant, arm->params, &blame) != KT_OK) {
        const kt_node *at = blamed_param(node, path, arm, blame, sub, sizeof(sub));
        report(c, at, sub, "%s", kt_error_last());
        return;
    }
    for (size_t i = 0; spec->op && (spec->op->axes & KT_AXIS_PHASE) && i < spec->n_phases; i++) {
        const char *why =
            kt_variant_phase_refusal(arm->variant, arm->params, spec->phases[i], &blame);
        if (!why)
            continue;
        const kt_node *at = blamed_param(node, path, arm, blame, sub, sizeof(sub));
        report(c, at, sub, "%s; phases lists '%s'", why, kt_phase_name(spec->phases[i]));
        return;
    }
}

static void check_arm_limits_all(mctx *c)
{
    kt_spec *spec = c->spec;
    const kt_node *baseline = kt_node_get(c->root, "baseline");
    if (baseline)
        check_arm_limits(c, baseline, "baseline", &spec->baseline);
    const kt_node *list = kt_node_get(c->root, "candidates");
    for (size_t i = 0; list && list->kind == KT_NODE_SEQ && i < list->n; i++) {
        const char *name = kt_node_str(kt_node_get(list->items[i], "name"));
        char path[64];
        snprintf(path, sizeof(path), "candidates[%zu]", i);
        for (size_t j = 0; name && j < spec->n_candidates; j++)
            if (strcmp(spec->candidates[j].name, name) == 0)
                check_arm_limits(c, list->items[i], path, &spec->candidates[j]);
    }
}

/* ---- trials, thresholds, budget ---------------------------------------------------------- */

static void check_trials(mctx *c)
{
    kt_spec *spec = c->spec;
    const kt_node *t = kt_node_get(c->root, "trials");
    int64_t v;
    const kt_node *n;
    spec->warmup = 3;
    if ((n = kt_node_get(t, "warmup")) &&
        get_int(c, n, "trials.warmup", 0, KT_LIMIT_WARMUP, &v) == 0)
        spec->warmup = (int)v;
    spec->min_repetitions = 7;
    const kt_node *min_node = kt_node_get(t, "min_repetitions");
    if (min_node &&
        get_int(c, min_node, "trials.min_repetitions", 2, KT_LIMIT_REPETITIONS, &v) == 0)
        spec->min_repetitions = (int)v;
    spec->max_repetitions = 200;
    const kt_node *max_node = kt_node_get(t, "max_repetitions");
    if (max_node &&
        get_int(c, max_node, "trials.max_repetitions", 2, KT_LIMIT_REPETITIONS, &v) == 0)
        spec->max_repetitions = (int)v;
    if (spec->min_repetitions > spec->max_repetitions) {
        if (max_node)
            report(c, max_node, "trials.max_repetitions", "%d is less than min_repetitions (%d)",
                   spec->max_repetitions, spec->min_repetitions);
        else
            report(c, min_node, "trials.min_repetitions",
                   "%d is more than max_repetitions (%d, the default)", spec->min_repetitions,
                   spec->max_repetitions);
    }
    spec->max_seconds_per_point = get_double(kt_node_get(t, "max_seconds_per_point"), 20.0);
    spec->max_startup_seconds = get_double(kt_node_get(t, "max_startup_seconds"), NAN);
    static const char *const orders[] = {"random", "alternate", "grouped"};
    static const kt_order order_values[] = {KT_ORDER_RANDOM, KT_ORDER_ALTERNATE, KT_ORDER_GROUPED};
    int o = name_index(kt_node_str(kt_node_get(t, "order")), orders, 3);
    spec->order = o >= 0 ? order_values[o] : KT_ORDER_RANDOM;
    spec->flush_cache = get_bool(kt_node_get(t, "flush_cache"), 1);
    /* counters perturb a GPU's clocks and need CUPTI: opt in there */
    spec->profile =
        get_bool(kt_node_get(t, "profile"), !kt_backend_caps_of(spec->backend)->profile_opt_in);
    spec->allow_grouped_verdicts = get_bool(kt_node_get(t, "allow_grouped_verdicts"), 0);
}

static void check_thresholds(mctx *c)
{
    kt_spec *spec = c->spec;
    const kt_node *th = kt_node_get(c->root, "thresholds");
    const kt_node *num = kt_node_get(th, "numerics");
    spec->numerics.max_rel_l2 = get_double(kt_node_get(num, "max_rel_l2"), NAN);
    spec->numerics.min_cosine = get_double(kt_node_get(num, "min_cosine"), NAN);
    spec->numerics.max_abs = get_double(kt_node_get(num, "max_abs"), NAN);
    spec->numerics.max_error_vs_baseline =
        get_double(kt_node_get(num, "max_error_vs_baseline"), NAN);
    spec->numerics.bitwise_repeatable = get_bool(kt_node_get(num, "bitwise_repeatable"), 0);
    const kt_node *lat = kt_node_get(th, "latency");
    spec->min_speedup = get_double(kt_node_get(lat, "min_speedup"), 1.0);
    spec->confidence = get_double(kt_node_get(lat, "confidence"), 0.95);
    spec->max_memory_ratio = get_double(kt_node_get(kt_node_get(th, "memory"), "max_ratio"), NAN);
    const kt_node *setup = kt_node_get(th, "setup");
    spec->max_setup_seconds = get_double(kt_node_get(setup, "max_seconds"), NAN);
    spec->max_setup_memory_ratio = get_double(kt_node_get(setup, "max_memory_ratio"), NAN);
    spec->max_energy_ratio = get_double(kt_node_get(kt_node_get(th, "energy"), "max_ratio"), NAN);
    spec->max_p99_ratio = get_double(kt_node_get(lat, "max_p99_ratio"), NAN);
    spec->max_error_rate = get_double(kt_node_get(kt_node_get(th, "errors"), "max_rate"),
                                      is_service(spec) ? 0.0 : NAN);
    spec->min_throughput_ratio =
        get_double(kt_node_get(kt_node_get(th, "throughput"), "min_ratio"), NAN);
    static const char *const service_only[] = {"latency.max_p99_ratio", "errors", "throughput"};
    for (size_t i = 0; th && !is_service(spec) && i < 3; i++) {
        char dotted[64];
        snprintf(dotted, sizeof(dotted), "thresholds.%s", service_only[i]);
        const kt_node *n = kt_node_at_path(c->root, dotted);
        if (n)
            report(c, n, dotted, "only op 'service' has this limit (this spec's op is '%s')",
                   spec->op ? spec->op->name : "?");
    }
    const kt_node *costs = kt_node_get(c->root, "costs");
    spec->usd_per_hour = get_double(kt_node_get(costs, "usd_per_hour"), NAN);
    spec->tokens_per_call = (int)get_double(kt_node_get(costs, "tokens_per_call"), 0);
    const char *agg = kt_node_str(kt_node_get(th, "aggregate"));
    spec->aggregate = agg && strcmp(agg, "geomean") == 0 ? KT_AGGREGATE_GEOMEAN : KT_AGGREGATE_ALL;
    spec->budget_minutes =
        get_double(kt_node_get(kt_node_get(c->root, "budget"), "max_minutes"), NAN);
}

/* ---- matrix, shapes, budget -------------------------------------------------------------- */

/* The entry of models: that 'name' came from (a catalog name or an inline model's name), or
 * NULL; *index is its place in the list. */
static const kt_node *model_entry(const mctx *c, const char *name, size_t *index)
{
    const kt_node *list = kt_node_get(c->root, "models");
    for (size_t i = 0; list && list->kind == KT_NODE_SEQ && i < list->n; i++) {
        const kt_node *item = list->items[i];
        const char *s = kt_node_str(item->kind == KT_NODE_MAP ? kt_node_get(item, "name") : item);
        if (s && strcmp(s, name) == 0) {
            *index = i;
            return item;
        }
    }
    return NULL;
}

/* One distinct reason a model's points cannot be shaped, and how many points share it. */
typedef struct shape_problem {
    char model[KT_NAME_MAX];
    char point[192]; /* kt_point.id */
    char message[512];
    size_t points;
} shape_problem;

#define MAX_SHAPE_REPORTS 5

/* Counts a point that cannot run under its model's reason, keeping the first MAX_SHAPE_REPORTS
 * distinct (model, reason) pairs. */
static void note_shape_problem(shape_problem *found, size_t *n_found, size_t *unlisted,
                               const kt_point *point, const char *message)
{
    size_t k = 0;
    while (k < *n_found && !(strcmp(found[k].model, point->model.name) == 0 &&
                             strcmp(found[k].message, message) == 0))
        k++;
    if (k < *n_found) {
        found[k].points++;
    } else if (*n_found < MAX_SHAPE_REPORTS) {
        shape_problem *f = &found[(*n_found)++];
        snprintf(f->model, sizeof(f->model), "%s", point->model.name);
        snprintf(f->point, sizeof(f->point), "%s", point->id);
        snprintf(f->message, sizeof(f->message), "%s", message);
        f->points = 1;
    } else {
        (*unlisted)++;
    }
}

/* Whether every arm's variant can run problem 'p'; if not, why, for the first that cannot. */
static int arms_can_run(const kt_spec *spec, const kt_problem *p, char *why, size_t len)
{
    for (size_t i = 0; i <= spec->n_candidates; i++) {
        const kt_arm *arm = i == 0 ? &spec->baseline : &spec->candidates[i - 1];
        kt_error_clear();
        if (!arm->variant || kt_variant_check_problem(arm->variant, arm->params, p) == KT_OK)
            continue;
        char who[KT_NAME_MAX + 16] = "baseline";
        if (i > 0)
            snprintf(who, sizeof(who), "candidate '%s'", arm->name);
        snprintf(why, len, "variant '%s' (%s) cannot run it: %s", arm->variant->name, who,
                 kt_error_last());
        return 0;
    }
    return 1;
}

/* Every point must be a problem the op can shape, and every arm's variant run. Each distinct
 * reason is reported once per model, at that model's entry (at 'op:' when the op reads no
 * model), with the first point it stops and how many more it stops: an odd head_dim is one
 * message at the model, not one per batch size and context at the top of the file. */
static int check_shapes(mctx *c, const kt_matrix *m)
{
    const kt_spec *spec = c->spec;
    shape_problem found[MAX_SHAPE_REPORTS];
    size_t n_found = 0, unlisted = 0, bad = 0;
    char why[512];
    for (size_t i = 0; i < m->n; i++) {
        kt_problem p;
        kt_error_clear();
        if (kt_op_shape(spec->op, &p, &m->points[i], spec->dtype, spec->input_params) != KT_OK)
            snprintf(why, sizeof(why), "%s", kt_error_last());
        else if (arms_can_run(spec, &p, why, sizeof(why)))
            continue;
        bad++;
        note_shape_problem(found, &n_found, &unlisted, &m->points[i], why);
    }
    for (size_t k = 0; k < n_found; k++) {
        size_t index = 0;
        const kt_node *at = model_entry(c, found[k].model, &index);
        char path[32], more[64] = "";
        snprintf(path, sizeof(path), "models[%zu]", index);
        if (found[k].points > 1)
            snprintf(more, sizeof(more), " (and %zu more point%s)", found[k].points - 1,
                     found[k].points > 2 ? "s" : "");
        report(c, at ? at : kt_node_get(c->root, "op"), at ? path : NULL, "point '%s'%s: %s",
               found[k].point, more, found[k].message);
    }
    if (unlisted)
        report(c, kt_node_get(c->root, "op"), NULL, "%zu more points cannot be shaped", unlisted);
    return bad ? -1 : 0;
}

static kt_spec_design_check_fn design_check_fn;

void kt_spec_use_design_check(kt_spec_design_check_fn fn)
{
    design_check_fn = fn;
}

/* Can the looks decide at all? At the point's error budget (after the split across points)
 * the last look needs enough pairs for a finite signed-rank interval. */
static void check_design(mctx *c, const kt_spec *spec)
{
    if (!design_check_fn || design_check_fn(spec) == 0)
        return;
    const char *path = "trials.max_repetitions";
    const kt_node *at = kt_node_at_path(spec->root, path);
    if (!at) {
        path = "thresholds.latency.confidence";
        at = kt_node_at_path(spec->root, path);
    }
    report(c, at ? at : kt_node_get(c->root, "trials"), path, "this design can never decide: %s%s",
           kt_error_last(),
           spec->aggregate == KT_AGGREGATE_ALL && spec->matrix->n > 1
               ? " (the confidence is split across the matrix points under aggregate: all)"
               : "");
}

/* Expands the matrix once, keeping it in 'spec', and checks its shapes and the budget. */
/* The points' shapes of a spec with errors elsewhere (no plan: that calls the arms). */
static void check_shapes_only(mctx *c, const kt_spec *spec)
{
    kt_matrix m = {0};
    if (kt_matrix_expand(&m, spec, c->diag) == 0)
        check_shapes(c, &m);
    kt_matrix_free(&m);
}

static void check_plan(mctx *c, kt_spec *spec)
{
    kt_matrix m = {0};
    kt_plan plan = {0};
    if (kt_matrix_expand(&m, spec, c->diag) != 0 || check_shapes(c, &m) != 0)
        goto done;
    spec->matrix = malloc(sizeof(*spec->matrix));
    if (!spec->matrix) {
        report(c, kt_node_get(c->root, "op"), NULL, "out of memory");
        goto done;
    }
    *spec->matrix = m;
    memset(&m, 0, sizeof(m));
    const kt_matrix *pm = spec->matrix;
    if (kt_plan_estimate(&plan, spec, pm) != 0) {
        report(c, kt_node_get(c->root, "op"), NULL, "cannot estimate the plan: %s",
               kt_error_last());
        goto done;
    }
    check_design(c, spec);
    double minutes = plan.idle_seconds / 60.0; /* the load must not decide validity */
    if (!isnan(spec->budget_minutes) && minutes > spec->budget_minutes && !c->opts->skip_budget)
        report(c, kt_node_at_path(spec->root, "budget.max_minutes"), "budget.max_minutes",
               "the plan needs up to %.*f minutes (%zu points); the budget is %g (--force "
               "overrides)",
               minutes < 0.1 ? 3 : 1, minutes, pm->n, spec->budget_minutes);
done:
    kt_plan_free(&plan);
    kt_matrix_free(&m);
}

/* op pymodule: its problem, globals and arm classes (spec/pymodule_spec.c); any other op:
 * none of those keys. */
static void check_pymodule(mctx *c)
{
    if (is_pymodule(c->spec)) {
        kt_pymodule_spec_parse(&c->spec->pymodule, c->root, c->spec->path, c->diag);
        return;
    }
    for (int i = 0; kt_pymodule_keys[i]; i++) {
        const kt_node *key;
        if (get_key(c->root, kt_pymodule_keys[i], &key))
            report(c, key, kt_pymodule_keys[i],
                   "only op 'pymodule' has '%s' (this spec's op is '%s')", kt_pymodule_keys[i],
                   c->spec->op->name);
    }
    const kt_node *list = kt_node_get(c->root, "candidates");
    size_t n = list && list->kind == KT_NODE_SEQ ? list->n : 0;
    for (size_t a = 0; a <= n; a++) {
        const kt_node *arm = a == 0 ? kt_node_get(c->root, "baseline") : list->items[a - 1];
        for (int i = 0; kt_pymodule_arm_keys[i]; i++) {
            const kt_node *key;
            if (get_key(arm, kt_pymodule_arm_keys[i], &key))
                report(c, key, kt_pymodule_arm_keys[i], "only op 'pymodule' arms have '%s'",
                       kt_pymodule_arm_keys[i]);
        }
    }
}

/* op command: its tasks, argv lists and placeholders (spec/command_spec.c); any other op:
 * none of the command keys. */
static void check_command(mctx *c)
{
    static const char *const keys[] = {"tasks", "measure", "outputs"};
    static const char *const arm_keys[] = {"run", "env", "cwd", "setup", "teardown", "timeout_s"};
    static const char *const service_keys[] = {"request", "load", "exclusive", "allow_remote"};
    if (!c->spec->op)
        return;
    const kt_node *list0 = kt_node_get(c->root, "candidates");
    size_t n0 = list0 && list0->kind == KT_NODE_SEQ ? list0->n : 0;
    for (size_t a = 0; !is_service(c->spec) && a <= n0; a++) {
        const kt_node *arm = a == 0 ? kt_node_get(c->root, "baseline") : list0->items[a - 1];
        const kt_node *key;
        if (get_key(arm, "ready", &key))
            report(c, key, "ready", "only op 'service' arms have 'ready'");
    }
    for (int i = 0; !is_service(c->spec) && i < 4; i++) {
        const kt_node *key;
        if (get_key(c->root, service_keys[i], &key))
            report(c, key, service_keys[i], "only op 'service' has '%s' (this spec's op is '%s')",
                   service_keys[i], c->spec->op->name);
    }
    check_pymodule(c);
    if (is_command(c->spec)) {
        kt_command_spec_parse(&c->spec->command, c->root, c->spec->path, c->diag);
        return;
    }
    if (is_service(c->spec)) {
        const kt_node *key;
        if (get_key(c->root, "outputs", &key))
            report(c, key, "outputs",
                   "op 'service' compares each response body as text (with the baseline's, or "
                   "the task's expect file); it has no 'outputs'");
        kt_service_spec_parse(&c->spec->service, c->root, c->spec->path, c->diag);
        return;
    }
    for (int i = 0; i < 3; i++) {
        const kt_node *key;
        if (get_key(c->root, keys[i], &key))
            report(c, key, keys[i], "only op 'command' has '%s' (this spec's op is '%s')", keys[i],
                   c->spec->op->name);
    }
    const kt_node *list = kt_node_get(c->root, "candidates");
    size_t n = list && list->kind == KT_NODE_SEQ ? list->n : 0;
    for (size_t a = 0; a <= n; a++) {
        const kt_node *arm = a == 0 ? kt_node_get(c->root, "baseline") : list->items[a - 1];
        for (int i = 0; i < 6; i++) {
            const kt_node *key;
            if (get_key(arm, arm_keys[i], &key))
                report(c, key, arm_keys[i], "only op 'command' arms have '%s'", arm_keys[i]);
        }
    }
}

int kt_spec_check_meaning(kt_spec *spec, const kt_spec_options *opts, kt_diag *diag)
{
    mctx c = {0};
    c.spec = spec;
    c.opts = opts;
    c.diag = diag;
    c.root = spec->root;
    size_t errors_before = diag->n_errors;
    if (kt_catalog_load(&c.catalog, diag) != 0)
        return -1;

    spec->version = 1;
    const char *name = kt_node_str(kt_node_get(c.root, "name"));
    snprintf(spec->name, sizeof(spec->name), "%s", name ? name : "");
    if (name && (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)) /* the pattern allows them */
        report(&c, kt_node_get(c.root, "name"), "name",
               "'%s' cannot name the run's archive folder (results/<time>-%s-...); pick another "
               "name",
               name, name);
    const char *desc = kt_node_str(kt_node_get(c.root, "description"));
    spec->description = desc ? strdup(desc) : NULL;
    const char *dtype = kt_node_str(kt_node_get(c.root, "dtype"));
    spec->dtype = KT_DTYPE_FP32;
    if (dtype && kt_dtype_parse(&spec->dtype, dtype) != KT_OK)
        report(&c, kt_node_get(c.root, "dtype"), "dtype", "unknown dtype '%s'", dtype);
    int64_t threads = 0;
    const kt_node *tnode = kt_node_get(c.root, "threads");
    if (tnode && get_int(&c, tnode, "threads", 0, KT_LIMIT_THREADS, &threads) == 0)
        spec->threads = (int)threads;
    /* the schema has already reported any other value */
    const char *affinity = kt_node_str(kt_node_get(c.root, "threads_affinity"));
    spec->threads_affinity = affinity && strcmp(affinity, "compact") == 0 ? KT_SPEC_AFFINITY_COMPACT
                                                                          : KT_SPEC_AFFINITY_NONE;

    if (kt_spec_load_plugins(spec, diag) != 0)
        goto done; /* names cannot be resolved without them */
    check_op_backend(&c);
    if (spec->op) {
        check_axes(&c);
        check_rules(&c, "exclude", &spec->exclude, &spec->n_exclude);
        check_rules(&c, "include", &spec->include, &spec->n_include);
    }
    check_inputs(&c);
    check_arms(&c);
    /* what the points' shapes depend on (op, models, axes, arms and their params) is checked;
     * the errors from here on do not hide the shape problems */
    size_t shapeable = diag->n_errors;
    check_arm_limits_all(&c);
    check_command(&c);
    check_trials(&c);
    if (spec->service) { /* op service: repetitions count rounds; the pairs are their requests */
        int per = spec->service->requests_per_round;
        if ((int64_t)spec->max_repetitions * per > KT_LIMIT_REPETITIONS) {
            const kt_node *at = kt_node_at_path(c.root, "trials.max_repetitions");
            report(&c, at ? at : kt_node_at_path(c.root, "load.requests_per_round"),
                   "trials.max_repetitions",
                   "%d rounds of %d requests are %lld pairs, more than %d; fewer rounds or "
                   "requests per round",
                   spec->max_repetitions, per, (long long)spec->max_repetitions * per,
                   KT_LIMIT_REPETITIONS);
        } else {
            spec->min_repetitions *= per;
            spec->max_repetitions *= per;
        }
    }
    check_thresholds(&c);
    if (diag->n_errors == errors_before)
        check_plan(&c, spec);
    else if (shapeable == errors_before)
        check_shapes_only(&c, spec);
done:
    kt_catalog_free(&c.catalog);
    return diag->n_errors == errors_before ? 0 : -1;
}
