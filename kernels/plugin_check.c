/* plugin_check.c - what a plugin registers, checked before anything of it is used: names,
 * NULL functions, param tables, clashes. The registrar copies each accepted op and variant
 * (params included) into memory it owns, filling in optional functions. */
#include "plugin_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int name_ok(const char *name)
{
    if (!name || !name[0] || strlen(name) >= KT_NAME_MAX)
        return 0;
    for (const char *p = name; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
              *p == '.' || *p == '_' || *p == '-'))
            return 0;
    return 1;
}

static int backend_ok(const char *name)
{
    return name &&
           (strcmp(name, "cpu") == 0 || strcmp(name, "cuda") == 0 || strcmp(name, "sim") == 0);
}

static int count_choices(const char *choices)
{
    int n = 1;
    for (const char *p = choices; *p; p++)
        n += *p == '|';
    return n;
}

/* The first choice of 'choices' that is empty ("a||b", "a|"), named twice or KT_NAME_MAX
 * characters or longer, as an index; -1 when every choice can be told apart (a spec names
 * them, listings split them). */
static int bad_choice(const char *choices)
{
    char name[KT_NAME_MAX + 1];
    int n = count_choices(choices);
    for (int i = 0; i < n; i++) {
        kt_param_choice_name(name, sizeof(name), choices, i);
        if (!name[0] || strlen(name) >= KT_NAME_MAX || kt_param_choice_index(choices, name) != i)
            return i;
    }
    return -1;
}

/* Checks one param table; 'owner' names it in messages ("variant 'x'"). */
static int check_params(const kt_param_def *defs, int n, const char *owner)
{
    if (n < 0 || n > KT_MAX_PARAMS)
        return kt_error_code(KT_EINVAL, "%s declares %d params; the limit is %d", owner, n,
                             KT_MAX_PARAMS);
    if (n > 0 && !defs)
        return kt_error_code(KT_EINVAL, "%s declares %d params but its param table is NULL", owner,
                             n);
    for (int i = 0; i < n; i++) {
        const kt_param_def *d = &defs[i];
        if (!name_ok(d->name))
            return kt_error_code(KT_EINVAL, "%s: param %d has no valid name", owner, i);
        if (kt_param_index(defs, i, d->name) >= 0)
            return kt_error_code(KT_EINVAL, "%s declares param '%s' twice", owner, d->name);
        if (d->type < KT_PARAM_INT || d->type > KT_PARAM_ENUM)
            return kt_error_code(KT_EINVAL, "%s: param '%s' has unknown type %d", owner, d->name,
                                 (int)d->type);
        if (d->type == KT_PARAM_ENUM) {
            if (!d->choices || !d->choices[0])
                return kt_error_code(KT_EINVAL, "%s: enum param '%s' has no choices", owner,
                                     d->name);
            int bad = bad_choice(d->choices);
            if (bad >= 0)
                return kt_error_code(KT_EINVAL,
                                     "%s: enum param '%s': choice %d of '%s' is empty, named "
                                     "twice or too long",
                                     owner, d->name, bad, d->choices);
            if (d->def < 0 || d->def >= count_choices(d->choices) || d->def != floor(d->def))
                return kt_error_code(KT_EINVAL,
                                     "%s: enum param '%s' has default index %g outside its "
                                     "choices '%s'",
                                     owner, d->name, d->def, d->choices);
        } else if (d->type == KT_PARAM_BOOL) {
            if (d->def != 0 && d->def != 1)
                return kt_error_code(KT_EINVAL, "%s: bool param '%s' has default %g (not 0 or 1)",
                                     owner, d->name, d->def);
        } else {
            if (isnan(d->min) || isnan(d->max) || isnan(d->def))
                return kt_error_code(KT_EINVAL, "%s: param '%s' has a NaN default or bound", owner,
                                     d->name);
            if (d->min > d->max)
                return kt_error_code(KT_EINVAL, "%s: param '%s' has min %g > max %g", owner,
                                     d->name, d->min, d->max);
            if (d->def < d->min || d->def > d->max)
                return kt_error_code(KT_EINVAL, "%s: param '%s' has default %g outside [%g, %g]",
                                     owner, d->name, d->def, d->min, d->max);
            if (d->type == KT_PARAM_INT &&
                (d->def != floor(d->def) || d->min != floor(d->min) || d->max != floor(d->max)))
                return kt_error_code(KT_EINVAL,
                                     "%s: int param '%s' has a fractional default or bound", owner,
                                     d->name);
        }
    }
    return KT_OK;
}

/* A copy of the param table with every doc non-NULL (the plugin's strings are kept: the
 * library is never unloaded). */
static kt_param_def *copy_params(const kt_param_def *defs, int n)
{
    kt_param_def *copy = calloc(n > 0 ? (size_t)n : 1, sizeof(*copy));
    for (int i = 0; copy && i < n; i++) {
        copy[i] = defs[i];
        if (!copy[i].doc)
            copy[i].doc = "";
    }
    return copy;
}

static int no_prepare(void **state, const kt_call *call)
{
    (void)call;
    *state = NULL;
    return KT_OK;
}

static void no_release(void *state, kt_backend *backend)
{
    (void)state;
    (void)backend;
}

/* The op called 'name' among what this plugin registered so far, or NULL. */
static const kt_op *pending_op(const kt_plugin_host *h, const char *name)
{
    for (int i = 0; i < h->n_ops; i++)
        if (strcmp(h->ops[i]->name, name) == 0)
            return h->ops[i];
    return NULL;
}

/* Records the first error of this plugin (init may ignore a return code). */
static int fail(kt_plugin_host *h, int code)
{
    if (!h->error[0])
        snprintf(h->error, sizeof(h->error), "%s", kt_error_last());
    return code;
}

int kt_plugin_check_variant(kt_plugin_host *h, const kt_variant *v)
{
    if (!v)
        return fail(h, kt_error_code(KT_EINVAL, "add_variant was given NULL"));
    if (!name_ok(v->name))
        return fail(h, kt_error_code(KT_EINVAL,
                                     "a variant has no valid name (%s%s%s; letters, "
                                     "digits, '.', '_', '-', under %d characters)",
                                     v->name ? "'" : "", v->name ? v->name : "NULL",
                                     v->name ? "'" : "", KT_NAME_MAX));
    char owner[96];
    snprintf(owner, sizeof(owner), "variant '%s'", v->name);
    if (!v->backend)
        return fail(h,
                    kt_error_code(KT_EINVAL, "%s has no backend (NULL; cpu, cuda or sim)", owner));
    if (!backend_ok(v->backend))
        return fail(h, kt_error_code(KT_EINVAL, "%s has backend '%s' (cpu, cuda or sim)", owner,
                                     v->backend));
    if (!v->op)
        return fail(h, kt_error_code(KT_EINVAL, "%s has no op (NULL)", owner));
    if (!(kt_op_find(v->op) || pending_op(h, v->op)))
        return fail(h, kt_error_code(KT_EINVAL,
                                     "%s is for op '%s', which is neither built in nor "
                                     "added by this plugin before it",
                                     owner, v->op));
    if (!v->run)
        return fail(h, kt_error_code(KT_EINVAL, "%s has a NULL run", owner));
    int err = check_params(v->params, v->n_params, owner);
    if (err < 0)
        return fail(h, err);
    for (int i = 0; i < h->n_variants; i++) {
        const kt_variant *o = h->variants[i];
        if (strcmp(o->name, v->name) == 0 && strcmp(o->op, v->op) == 0 &&
            strcmp(o->backend, v->backend) == 0)
            return fail(h, kt_error_code(KT_EINVAL, "%s of op '%s' on %s is registered twice",
                                         owner, v->op, v->backend));
    }
    const kt_variant *clash = kt_variant_find_in(v->op, v->backend, v->name, KT_PLUGIN_BUILTIN);
    if (clash)
        return fail(h, kt_error_code(KT_EINVAL,
                                     "%s of op '%s' on %s clashes with the built-in variant "
                                     "'%s'; rename it",
                                     owner, v->op, v->backend, clash->name));
    if (h->n_variants == KT_PLUGIN_MAX_ITEMS)
        return fail(h, kt_error_code(KT_EINVAL, "more than %d variants", KT_PLUGIN_MAX_ITEMS));
    kt_variant *copy = calloc(1, sizeof(*copy));
    kt_param_def *params = copy_params(v->params, v->n_params);
    if (!copy || !params) {
        free(copy);
        free(params);
        return fail(h, kt_error_code(KT_ENOMEM, "out of memory"));
    }
    *copy = *v;
    copy->params = params;
    if (!copy->doc)
        copy->doc = "";
    if (!copy->prepare)
        copy->prepare = no_prepare;
    if (!copy->release)
        copy->release = no_release;
    h->variants[h->n_variants++] = copy;
    return KT_OK;
}

/* Two ops of one name agree when a spec cannot tell them apart. */
static int same_op(const kt_op *a, const kt_op *b)
{
    if (a->axes != b->axes || a->model_fields != b->model_fields ||
        a->n_input_params != b->n_input_params)
        return 0;
    for (int i = 0; i < a->n_input_params; i++)
        if (strcmp(a->input_params[i].name, b->input_params[i].name) != 0 ||
            a->input_params[i].type != b->input_params[i].type)
            return 0;
    return 1;
}

int kt_plugin_check_op(kt_plugin_host *h, const kt_op *op)
{
    if (!op)
        return fail(h, kt_error_code(KT_EINVAL, "add_op was given NULL"));
    if (!name_ok(op->name))
        return fail(h, kt_error_code(KT_EINVAL, "an op has no valid name (%s%s%s)",
                                     op->name ? "'" : "", op->name ? op->name : "NULL",
                                     op->name ? "'" : ""));
    char owner[96];
    snprintf(owner, sizeof(owner), "op '%s'", op->name);
    if (!op->shape || !op->generate || !op->reference)
        return fail(h, kt_error_code(KT_EINVAL, "%s has a NULL %s", owner,
                                     !op->shape      ? "shape"
                                     : !op->generate ? "generate"
                                                     : "reference"));
    unsigned all_axes = KT_AXIS_MODEL | KT_AXIS_BATCH | KT_AXIS_CONTEXT | KT_AXIS_PHASE |
                        KT_AXIS_ROLE | KT_AXIS_DECODE_CONTEXT;
    if (op->axes == 0 || (op->axes & ~all_axes))
        return fail(h, kt_error_code(KT_EINVAL, "%s has axes 0x%x (a non-empty set of KT_AXIS_*)",
                                     owner, op->axes));
    if (op->model_fields & ~0x1fu)
        return fail(h, kt_error_code(KT_EINVAL, "%s has unknown model fields 0x%x", owner,
                                     op->model_fields));
    if (op->backend_only && !backend_ok(op->backend_only))
        return fail(h, kt_error_code(KT_EINVAL, "%s is bound to unknown backend '%s'", owner,
                                     op->backend_only));
    int err = check_params(op->input_params, op->n_input_params, owner);
    if (err < 0)
        return fail(h, err);
    if (pending_op(h, op->name))
        return fail(h, kt_error_code(KT_EINVAL, "%s is registered twice", owner));
    const kt_op *clash = kt_op_find(op->name);
    if (clash && kt_op_plugin(clash) == KT_PLUGIN_BUILTIN)
        return fail(h,
                    kt_error_code(KT_EINVAL, "%s clashes with the built-in op; rename it", owner));
    if (clash && !same_op(clash, op))
        return fail(h, kt_error_code(KT_EINVAL,
                                     "%s differs (axes, model fields or input params) from the "
                                     "op of that name in '%s'",
                                     owner, kt_plugin_path(kt_op_plugin(clash))));
    if (h->n_ops == KT_PLUGIN_MAX_ITEMS)
        return fail(h, kt_error_code(KT_EINVAL, "more than %d ops", KT_PLUGIN_MAX_ITEMS));
    kt_op *copy = calloc(1, sizeof(*copy));
    kt_param_def *params = copy_params(op->input_params, op->n_input_params);
    if (!copy || !params) {
        free(copy);
        free(params);
        return fail(h, kt_error_code(KT_ENOMEM, "out of memory"));
    }
    *copy = *op;
    copy->input_params = params;
    if (!copy->doc)
        copy->doc = "";
    h->ops[h->n_ops++] = copy;
    h->op_shadowed[h->n_ops - 1] = clash != NULL;
    return KT_OK;
}
