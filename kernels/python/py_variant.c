/* py_variant.c - a Python function as a kt_variant (py_variant.h): prepare, run, the untimed
 * finish (aliasing check, returned values copied), release, and the probe in a child. */
#include "python/py_variant.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_CACHE   (4 * KT_MAX_TENSORS) /* wrapped buffers kept per state */
#define MAX_EARLIER 4                    /* calls whose returned values stay checked against */

typedef struct py_state {
    kt_pyobj *fn;
    kt_pyobj *problem;
    kt_py_framework fw;
    int device; /* the buffers are in device memory */
    struct {
        const void *ptr;
        int tensor;
        kt_pyobj *obj;
    } cache[MAX_CACHE];
    int n_cache;
    kt_pyobj *pending;              /* what the last run returned, until finish */
    kt_pyobj *earlier[MAX_EARLIER]; /* values returned by earlier calls, newest first */
    int n_earlier;
} py_state;

/* ---- the functions, imported once per process ---------------------------------------------- */

static struct {
    const kt_py_def *def;
    kt_pyobj *fn;
} imported[KT_PY_MAX_ARMS + 8];
static int n_imported;

static int import_fn(kt_pyobj **fn, const kt_py_def *def)
{
    for (int i = 0; i < n_imported; i++)
        if (imported[i].def == def) {
            *fn = imported[i].fn;
            return KT_OK;
        }
    if (n_imported == (int)(sizeof(imported) / sizeof(imported[0])))
        return kt_error_code(KT_EINVAL, "more than %d Python functions", n_imported);
    char name[32];
    snprintf(name, sizeof(name), "kt_arm_%d", n_imported);
    kt_pyobj *module = NULL;
    int err = def->path ? kt_py_import_file(&module, def->path, name)
                        : kt_py_import_source(&module, def->source, def->origin, name);
    if (err == KT_OK)
        err = kt_py_attr_callable(fn, module, def->function);
    if (err == KT_OK && (err = kt_py_check_arity(*fn, 3)) < 0)
        kt_py_decref(*fn);
    kt_py_decref(module);
    if (err < 0)
        return err;
    imported[n_imported].def = def;
    imported[n_imported++].fn = *fn;
    return KT_OK;
}

/* ---- prepare, run, finish, release ---------------------------------------------------------- */

static int problem_dict(kt_pyobj **out, const kt_problem *p, int threads)
{
    int err = kt_py_dict(out);
    const struct {
        const char *key;
        int64_t value;
    } sizes[] = {{"m", p->m},
                 {"n", p->n},
                 {"k", p->k},
                 {"batch", p->batch},
                 {"heads", p->heads},
                 {"kv_heads", p->kv_heads},
                 {"head_dim", p->head_dim},
                 {"context", p->context},
                 {"elems", p->elems},
                 {"layers", p->layers},
                 {"threads", threads}};
    for (size_t i = 0; err == KT_OK && i < sizeof(sizes) / sizeof(sizes[0]); i++)
        if (sizes[i].value)
            err = kt_py_dict_set_int(*out, sizes[i].key, sizes[i].value);
    if (err == KT_OK)
        err = kt_py_dict_set_str(*out, "op", p->op ? p->op->name : "");
    if (err == KT_OK)
        err = kt_py_dict_set_str(*out, "dtype", kt_dtype_name(p->dtype));
    return err;
}

/* The tensor over buffer 'ptr' of tensor 'i' of the problem (borrowed; cached by address). */
static int tensor_of(kt_pyobj **out, py_state *s, const kt_problem *p, int i, const void *ptr)
{
    for (int c = 0; c < s->n_cache; c++)
        if (s->cache[c].ptr == ptr && s->cache[c].tensor == i) {
            *out = s->cache[c].obj;
            return KT_OK;
        }
    const kt_tensor *t = &p->tensors[i];
    kt_py_buffer b = {(void *)ptr, t->dtype, t->ndim, t->dims, NULL, s->device, 0};
    kt_pyobj *obj = NULL;
    int err = kt_py_wrap(&obj, &b, s->fw);
    if (err < 0)
        return err;
    if (s->n_cache == MAX_CACHE) { /* buffers came and went: start again */
        for (int c = 0; c < s->n_cache; c++)
            kt_py_decref(s->cache[c].obj);
        s->n_cache = 0;
    }
    s->cache[s->n_cache].ptr = ptr;
    s->cache[s->n_cache].tensor = i;
    s->cache[s->n_cache++].obj = obj;
    *out = obj;
    return KT_OK;
}

static void drop_state(py_state *s)
{
    for (int c = 0; c < s->n_cache; c++)
        kt_py_decref(s->cache[c].obj);
    for (int e = 0; e < s->n_earlier; e++)
        kt_py_decref(s->earlier[e]);
    kt_py_decref(s->pending);
    kt_py_decref(s->problem);
    free(s);
}

int kt_py_variant_prepare(const kt_py_def *def, void **state, const kt_call *call)
{
    *state = NULL;
    int err = kt_py_start(def->framework, call->threads);
    if (err < 0)
        return err;
    py_state *s = calloc(1, sizeof(*s));
    if (!s)
        return kt_error_code(KT_ENOMEM, "out of memory");
    s->fw = def->framework;
    s->device = call->backend && call->backend->iface->caps->device_memory;
    kt_py_gil g = kt_py_enter();
    err = import_fn(&s->fn, def);
    if (err == KT_OK)
        err = problem_dict(&s->problem, call->problem, call->threads);
    if (err < 0)
        drop_state(s);
    kt_py_leave(g);
    if (err == KT_OK)
        *state = s;
    return err;
}

/* [tensors i0 .. i0+n-1] over 'bufs' as a list. */
static int tensor_list(kt_pyobj **out, py_state *s, const kt_problem *p, int i0, int n,
                       const void *const *bufs)
{
    kt_pyobj *items[KT_MAX_TENSORS];
    for (int i = 0; i < n; i++) {
        int err = tensor_of(&items[i], s, p, i0 + i, bufs[i]);
        if (err < 0)
            return err;
    }
    for (int i = 0; i < n; i++)
        kt_py_incref(items[i]);
    return kt_py_tuple(out, items, n, 1);
}

int kt_py_variant_run(void *state, const kt_call *call)
{
    py_state *s = state;
    const kt_problem *p = call->problem;
    kt_py_gil g = kt_py_enter();
    kt_pyobj *in = NULL, *out = NULL, *args = NULL, *res = NULL;
    kt_py_decref(s->pending);
    s->pending = NULL;
    int err = tensor_list(&in, s, p, 0, p->n_inputs, call->inputs);
    if (err == KT_OK)
        err =
            tensor_list(&out, s, p, p->n_inputs, p->n_outputs, (const void *const *)call->outputs);
    if (err == KT_OK) {
        kt_py_incref(s->problem);
        kt_pyobj *items[3] = {in, out, s->problem};
        in = out = NULL;
        err = kt_py_tuple(&args, items, 3, 0);
    }
    if (err == KT_OK)
        err = kt_py_call(&res, s->fn, args, "the function raised");
    if (err == KT_OK && s->device)
        err = kt_py_device_synchronize();
    if (err == KT_OK && !kt_py_is_none(res))
        s->pending = res;
    else
        kt_py_decref(res);
    kt_py_decref(args);
    kt_py_decref(in);
    kt_py_decref(out);
    kt_py_leave(g);
    return err;
}

/* Whether [lo, hi) meets the 'bytes' at 'ptr'. */
static int overlaps(uintptr_t lo, uintptr_t hi, const void *ptr, size_t bytes)
{
    uintptr_t a = (uintptr_t)ptr;
    return lo < a + bytes && a < hi && hi > lo;
}

/* Checks the returned values of the last run against the inputs and the earlier calls'
 * values, copies them into the outputs and keeps them for the next calls' checks. */
static int finish(py_state *s, const kt_call *call)
{
    const kt_problem *p = call->problem;
    kt_pyobj *items[KT_MAX_TENSORS];
    int n = kt_py_items(s->pending, items, KT_MAX_TENSORS);
    if (n != p->n_outputs)
        return kt_error_code(KT_EINVAL,
                             "returned %d values for %d outputs (return None after writing the "
                             "outputs in place, or one value per output)",
                             n, p->n_outputs);
    for (int i = 0; i < n; i++) {
        const char *out_name = p->tensors[p->n_inputs + i].name;
        uintptr_t lo, hi;
        int err = kt_py_memory_range(items[i], &lo, &hi);
        if (err < 0)
            return kt_error_code(err, "returned value for '%s': %s", out_name, kt_error_last());
        if (overlaps(lo, hi, call->outputs[i], kt_tensor_bytes(&p->tensors[p->n_inputs + i])))
            continue; /* the output itself, written in place */
        for (int j = 0; j < p->n_inputs; j++)
            if (overlaps(lo, hi, call->inputs[j], kt_tensor_bytes(&p->tensors[j])))
                return kt_error_code(KT_EINVAL,
                                     "check aliasing: the value returned for output '%s' "
                                     "shares memory with input '%s'",
                                     out_name, p->tensors[j].name);
        for (int e = 0; e < s->n_earlier; e++) {
            kt_pyobj *old[KT_MAX_TENSORS];
            int n_old = kt_py_items(s->earlier[e], old, KT_MAX_TENSORS);
            for (int o = 0; o < n_old && o < KT_MAX_TENSORS; o++) {
                uintptr_t olo, ohi;
                if (kt_py_memory_range(old[o], &olo, &ohi) == KT_OK && lo < ohi && olo < hi)
                    return kt_error_code(KT_EINVAL,
                                         "check aliasing: the value returned for output '%s' "
                                         "shares memory with a value returned %d call%s "
                                         "earlier",
                                         out_name, e + 1, e ? "s" : "");
            }
        }
        kt_pyobj *dst = NULL;
        err = tensor_of(&dst, s, p, p->n_inputs + i, call->outputs[i]);
        if (err == KT_OK)
            err = kt_py_copy_into(dst, items[i], "copying the returned value into the output");
        if (err < 0)
            return err;
    }
    if (s->n_earlier == MAX_EARLIER)
        kt_py_decref(s->earlier[--s->n_earlier]);
    memmove(s->earlier + 1, s->earlier, (size_t)s->n_earlier * sizeof(s->earlier[0]));
    s->earlier[0] = s->pending;
    s->n_earlier++;
    s->pending = NULL;
    return KT_OK;
}

int kt_py_variant_finish(void *state, const kt_call *call)
{
    py_state *s = state;
    if (!s || !s->pending)
        return KT_OK;
    kt_py_gil g = kt_py_enter();
    int err = finish(s, call);
    if (err < 0) {
        kt_py_decref(s->pending);
        s->pending = NULL;
    }
    kt_py_leave(g);
    return err;
}

void kt_py_variant_release(void *state, kt_backend *backend)
{
    (void)backend;
    if (!state)
        return;
    kt_py_gil g = kt_py_enter();
    drop_state(state);
    kt_py_leave(g);
}

/* ---- Python arms: one slot each, its prepare knowing its def -------------------------------- */

static struct {
    kt_variant variant;
    kt_py_def def;
    char name[2 * KT_NAME_MAX];
} slots[KT_PY_MAX_ARMS];
static int n_slots;

#define SLOT(i)                                                                                    \
    static int prepare_##i(void **state, const kt_call *call)                                      \
    {                                                                                              \
        return kt_py_variant_prepare(&slots[i].def, state, call);                                  \
    }
#define SLOTS8(a, b, c, d, e, f, g, h)                                                             \
    SLOT(a) SLOT(b) SLOT(c) SLOT(d) SLOT(e) SLOT(f) SLOT(g) SLOT(h)
SLOTS8(0, 1, 2, 3, 4, 5, 6, 7)
SLOTS8(8, 9, 10, 11, 12, 13, 14, 15)
SLOTS8(16, 17, 18, 19, 20, 21, 22, 23)
SLOTS8(24, 25, 26, 27, 28, 29, 30, 31)
#define P8(a, b, c, d, e, f, g, h)                                                                 \
    prepare_##a, prepare_##b, prepare_##c, prepare_##d, prepare_##e, prepare_##f, prepare_##g,     \
        prepare_##h
static int (*const prepares[KT_PY_MAX_ARMS])(void **, const kt_call *) = {
    P8(0, 1, 2, 3, 4, 5, 6, 7), P8(8, 9, 10, 11, 12, 13, 14, 15),
    P8(16, 17, 18, 19, 20, 21, 22, 23), P8(24, 25, 26, 27, 28, 29, 30, 31)};

const kt_variant *kt_py_variant_make(const char *op, const char *backend, const char *name,
                                     const kt_py_def *def)
{
    for (int j = 0; j < n_slots; j++) /* the same arm, from a spec loaded again */
        if (strcmp(slots[j].variant.op, op) == 0 &&
            strcmp(slots[j].variant.backend, backend) == 0 && strcmp(slots[j].name, name) == 0 &&
            slots[j].def.framework == def->framework && !slots[j].def.source && def->path &&
            strcmp(slots[j].def.path, def->path) == 0 &&
            strcmp(slots[j].def.function, def->function) == 0)
            return &slots[j].variant;
    if (n_slots == KT_PY_MAX_ARMS)
        return kt_error_set("more than %d Python arms", KT_PY_MAX_ARMS), NULL;
    int i = n_slots;
    char *path = def->path ? strdup(def->path) : NULL, *fn = strdup(def->function);
    if ((def->path && !path) || !fn) {
        free(path);
        free(fn);
        return kt_error_set("out of memory"), NULL;
    }
    slots[i].def = *def;
    slots[i].def.path = path;
    slots[i].def.function = fn;
    snprintf(slots[i].name, sizeof(slots[i].name), "%s", name);
    kt_variant v = {op,
                    slots[i].name,
                    backend,
                    "a Python function (python: in the spec)",
                    NULL,
                    0,
                    prepares[i],
                    kt_py_variant_run,
                    kt_py_variant_release,
                    NULL};
    slots[i].variant = v;
    n_slots++;
    return &slots[i].variant;
}

int kt_py_is_variant(const kt_variant *v)
{
    return v && v->run == kt_py_variant_run;
}

kt_py_framework kt_py_variant_framework(const kt_variant *v)
{
    for (int i = 0; i < n_slots; i++)
        if (v == &slots[i].variant)
            return slots[i].def.framework;
    return KT_PY_TORCH; /* the built-in Python variants are the torch ones */
}
