/* A plugin op whose shape makes a problem ktrial cannot hold, chosen by KT_TEST_BAD_SHAPE:
 * 1 no output, 2 more tensors than KT_MAX_TENSORS, 3 a negative dim, 4 nine dims, 5 an error
 * without a message; 0 (unset) a sound problem. Each must be a validation error (65) at the
 * spec, never read past the problem's arrays in ktrial. */
#include "bad_plugin.h"

#include <stdlib.h>
#include <string.h>

static int shape(kt_problem *p, const kt_point *pt, kt_dtype dtype, const kt_param_value *ip)
{
    (void)ip;
    const char *mode = getenv("KT_TEST_BAD_SHAPE");
    *p = (kt_problem){0};
    p->dtype = dtype;
    p->m = pt->batch_size;
    p->tensors[0] = (kt_tensor){"x", 1, {pt->batch_size, 1, 1, 1}, dtype};
    p->tensors[1] = (kt_tensor){"y", 1, {pt->batch_size, 1, 1, 1}, dtype};
    p->n_inputs = 1;
    p->n_outputs = 1;
    switch (mode ? atoi(mode) : 0) {
    case 1:
        p->n_outputs = 0;
        break;
    case 2:
        p->n_inputs = 10;
        p->n_outputs = 8;
        break;
    case 3:
        p->tensors[1].dims[0] = -5;
        break;
    case 4:
        p->tensors[1].ndim = 9;
        break;
    case 5:
        return KT_ERROR;
    }
    return KT_OK;
}

static int generate(const kt_problem *p, void *const *inputs, const kt_input_config *cfg)
{
    (void)cfg;
    double one = 1;
    for (int64_t i = 0; i < p->m; i++)
        kt_dtype_from_double((char *)inputs[0] + (size_t)i * kt_dtype_size(p->dtype), &one,
                             p->dtype, 1);
    return KT_OK;
}

static int reference(const kt_problem *p, const void *const *inputs, double *const *outputs)
{
    kt_dtype_to_double(outputs[0], inputs[0], p->dtype, (size_t)p->m);
    return KT_OK;
}

static const kt_op op = {.name = "badshape",
                         .doc = "y = x, shaped as KT_TEST_BAD_SHAPE says",
                         .axes = KT_AXIS_BATCH,
                         .shape = shape,
                         .generate = generate,
                         .reference = reference};

static int run(void *state, const kt_call *call)
{
    (void)state;
    const kt_problem *p = call->problem;
    memcpy(call->outputs[0], call->inputs[0], kt_tensor_bytes(&p->tensors[1]));
    return KT_OK;
}

static const kt_variant copy = {
    .op = "badshape", .name = "copy", .backend = "cpu", .doc = "memcpy", .run = run};

int kt_plugin_init(kt_plugin_registrar *r)
{
    int err = r->add_op(r, &op);
    return err ? err : r->add_variant(r, &copy);
}
