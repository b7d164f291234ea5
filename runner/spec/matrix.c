/* matrix.c - the experiment matrix, with GitHub Actions' exclude and include rules.
 *
 * 1. The cartesian product of the axes the op uses, in a stable order: models in spec order,
 *    then phases, roles, batch sizes, context lengths (the last varies fastest).
 * 2. exclude: each entry removes every point that matches all the keys it names.
 * 3. include, entry by entry: if the entry matches one or more points of the matrix so far
 *    (every key it names equals the point's value), it changes nothing, since all its keys
 *    are axes (GitHub would add its extra keys to those points; we have none). Otherwise it
 *    adds points; axes the entry does not name are expanded over the spec's values for that
 *    axis (the lead's choice: GitHub would add one point with those keys unset, which has no
 *    meaning for a kernel shape). Points already present are not added twice.
 * Points removed by exclude can come back through include, as in GitHub Actions. */
#include "spec/matrix.h"
#include "spec/yaml_tree.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void kt_matrix_free(kt_matrix *m)
{
    if (!m)
        return;
    free(m->points);
    m->points = NULL;
    m->n = 0;
}

/* The readable id of 'p': the used axes joined by '/', e.g. "llama-3.2-1b/decode/b4/t16384". */
static void point_id(kt_point *p, unsigned axes)
{
    char *s = p->id;
    size_t left = sizeof(p->id);
    int n = 0;
#define APPEND(...)                                                                                \
    do {                                                                                           \
        n = snprintf(s, left, "%s", s == p->id ? "" : "/");                                        \
        s += n, left -= (size_t)n;                                                                 \
        n = snprintf(s, left, __VA_ARGS__);                                                        \
        n = n < (int)left ? n : (int)left - 1;                                                     \
        s += n, left -= (size_t)n;                                                                 \
    } while (0)
    p->id[0] = '\0';
    if (axes & KT_AXIS_MODEL)
        APPEND("%s", p->model.name);
    if (axes & KT_AXIS_PHASE)
        APPEND("%s", kt_phase_name(p->phase));
    if (axes & KT_AXIS_ROLE)
        APPEND("%s", kt_role_name(p->role));
    if (axes & KT_AXIS_BATCH)
        APPEND("b%lld", (long long)p->batch_size);
    if ((axes & KT_AXIS_CONTEXT) && p->context_length > 0)
        APPEND("t%lld", (long long)p->context_length);
#undef APPEND
}

/* True when 'p' has every value 'rule' names. */
static int rule_matches(const kt_matrix_rule *rule, const kt_point *p)
{
    if ((rule->axes & KT_AXIS_MODEL) && strcmp(rule->point.model.name, p->model.name) != 0)
        return 0;
    if ((rule->axes & KT_AXIS_BATCH) && rule->point.batch_size != p->batch_size)
        return 0;
    if ((rule->axes & KT_AXIS_CONTEXT) && rule->point.context_length != p->context_length)
        return 0;
    if ((rule->axes & KT_AXIS_PHASE) && rule->point.phase != p->phase)
        return 0;
    if ((rule->axes & KT_AXIS_ROLE) && rule->point.role != p->role)
        return 0;
    return 1;
}

/* The values of the axes, one list per axis; an unused axis has one zero value. */
typedef struct axis_values {
    size_t n[5]; /* model, phase, role, batch, context */
} axis_values;

static void axis_counts(axis_values *v, const kt_spec *s, unsigned used)
{
    v->n[0] = used & KT_AXIS_MODEL ? s->n_models : 1;
    v->n[1] = used & KT_AXIS_PHASE ? s->n_phases : 1;
    v->n[2] = used & KT_AXIS_ROLE ? s->n_roles : 1;
    v->n[3] = used & KT_AXIS_BATCH ? s->n_batch_sizes : 1;
    v->n[4] = used & KT_AXIS_CONTEXT ? s->n_context_lengths : 1;
}

/* Point number 'index' of the product over 'v', in stable order, with the axes in 'vary'
 * taken from the spec and the others from 'base'. */
static void product_point(kt_point *p, const kt_spec *s, const axis_values *v, size_t index,
                          unsigned vary, const kt_point *base, unsigned used)
{
    size_t idx[5];
    for (int a = 4; a >= 0; a--) {
        idx[a] = index % v->n[a];
        index /= v->n[a];
    }
    *p = *base;
    if (vary & KT_AXIS_MODEL)
        p->model = s->models[idx[0]];
    if (vary & KT_AXIS_PHASE)
        p->phase = s->phases[idx[1]];
    if (vary & KT_AXIS_ROLE)
        p->role = s->roles[idx[2]];
    if (vary & KT_AXIS_BATCH)
        p->batch_size = s->batch_sizes[idx[3]];
    if (vary & KT_AXIS_CONTEXT)
        p->context_length = s->context_lengths[idx[4]];
    /* a decode point's shape does not depend on the context (M = batch): one point, no 't';
     * unless the op's decode reads a cache of that context (KT_AXIS_DECODE_CONTEXT) */
    if ((used & KT_AXIS_PHASE) && !(used & KT_AXIS_DECODE_CONTEXT) && p->phase == KT_PHASE_DECODE)
        p->context_length = 0;
    point_id(p, used);
}

static size_t product_size(const axis_values *v)
{
    size_t n = 1;
    for (int a = 0; a < 5; a++)
        n *= v->n[a];
    return n;
}

/* Restricts 'v' to one value for every axis not in 'vary'. */
static void restrict_axes(axis_values *v, unsigned vary)
{
    static const unsigned bits[5] = {KT_AXIS_MODEL, KT_AXIS_PHASE, KT_AXIS_ROLE, KT_AXIS_BATCH,
                                     KT_AXIS_CONTEXT};
    for (int a = 0; a < 5; a++)
        if (!(vary & bits[a]))
            v->n[a] = 1;
}

static int append(kt_matrix *m, size_t *cap, const kt_point *p)
{
    if (m->n == *cap) {
        size_t c = *cap ? 2 * *cap : 64;
        kt_point *pts = realloc(m->points, c * sizeof(*pts));
        if (!pts)
            return -1;
        m->points = pts;
        *cap = c;
    }
    m->points[m->n++] = *p;
    return 0;
}

static int contains(const kt_matrix *m, const kt_point *p)
{
    for (size_t i = 0; i < m->n; i++)
        if (strcmp(m->points[i].id, p->id) == 0)
            return 1;
    return 0;
}

/* The line and column of the first axis list the spec gives, for whole-matrix messages. */
static void matrix_place(const kt_spec *spec, const char *key, int *line, int *col)
{
    static const char *const keys[] = {"models", "phases", "roles", "batch_sizes",
                                       "context_lengths"};
    const kt_node *n = key ? kt_node_at_path(spec->root, key) : NULL;
    for (size_t i = 0; !n && i < sizeof(keys) / sizeof(keys[0]); i++)
        n = kt_node_at_path(spec->root, keys[i]);
    *line = n ? n->line : 0;
    *col = n ? n->col : 0;
}

int kt_matrix_expand(kt_matrix *out, const kt_spec *spec, kt_diag *diag)
{
    const unsigned used = spec->op->axes;
    kt_matrix m = {NULL, 0};
    size_t cap = 0;
    int line, col, rc = -1;
    size_t *hits = calloc(spec->n_exclude + 1, sizeof(*hits));
    axis_values all;
    axis_counts(&all, spec, used);
    size_t total = product_size(&all);
    kt_point zero;
    memset(&zero, 0, sizeof(zero));
    out->points = NULL;
    out->n = 0;
    if (!hits)
        return kt_diag_error(diag, spec->path, 0, 0, "out of memory");

    for (size_t i = 0; i < total; i++) {
        kt_point p;
        product_point(&p, spec, &all, i, used, &zero, used);
        int excluded = 0;
        for (size_t e = 0; e < spec->n_exclude; e++) {
            if (rule_matches(&spec->exclude[e], &p)) {
                hits[e]++;
                excluded = 1;
            }
        }
        if (excluded || (p.context_length == 0 && (used & KT_AXIS_PHASE) && contains(&m, &p)))
            continue;
        if (m.n >= KT_MATRIX_MAX_POINTS) {
            matrix_place(spec, NULL, &line, &col);
            kt_diag_error(diag, spec->path, line, col,
                          "the matrix has more than %d points (%zu before exclude)",
                          KT_MATRIX_MAX_POINTS, total);
            goto done;
        }
        if (append(&m, &cap, &p) != 0)
            goto oom;
    }
    for (size_t e = 0; e < spec->n_exclude; e++)
        if (hits[e] == 0)
            kt_diag_warning(diag, spec->path, spec->exclude[e].line, spec->exclude[e].col,
                            "exclude[%zu] matches no point", e);

    for (size_t r = 0; r < spec->n_include; r++) {
        const kt_matrix_rule *rule = &spec->include[r];
        size_t matched = 0;
        for (size_t i = 0; i < m.n; i++)
            matched += rule_matches(rule, &m.points[i]);
        if (matched) {
            kt_diag_warning(diag, spec->path, rule->line, rule->col,
                            "include[%zu] adds no point: it matches %zu point%s already in the "
                            "matrix",
                            r, matched, matched == 1 ? "" : "s");
            continue;
        }
        unsigned vary = used & ~rule->axes;
        axis_values v = all;
        restrict_axes(&v, vary);
        size_t n = product_size(&v);
        for (size_t i = 0; i < n; i++) {
            kt_point p;
            product_point(&p, spec, &v, i, vary, &rule->point, used);
            if (contains(&m, &p))
                continue;
            if (m.n >= KT_MATRIX_MAX_POINTS) {
                kt_diag_error(diag, spec->path, rule->line, rule->col,
                              "include[%zu]: the matrix has more than %d points", r,
                              KT_MATRIX_MAX_POINTS);
                goto done;
            }
            if (append(&m, &cap, &p) != 0)
                goto oom;
        }
    }

    if (m.n == 0) {
        matrix_place(spec, "exclude", &line, &col);
        kt_diag_error(diag, spec->path, line, col,
                      "the matrix is empty: exclude removes all %zu points", total);
        goto done;
    }
    *out = m;
    m.points = NULL;
    rc = 0;
    goto done;
oom:
    kt_diag_error(diag, spec->path, 0, 0, "out of memory");
done:
    free(hits);
    kt_matrix_free(&m);
    return rc;
}
