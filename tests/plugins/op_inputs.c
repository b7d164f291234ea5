/* A plugin op whose shape and generator read its input params, one of each type: the row
 * length comes from 'width', so a shape handed no params (NULL) could not size the problem;
 * 'offset' is unbounded, as a plugin may declare a float param.
 * y[m, width] = scale * x, m the batch size; one variant, 'plain'. */
#include "bad_plugin.h"

#include <math.h>

enum { IP_WIDTH, IP_OFFSET, IP_ABSOLUTE, IP_SIGN, IP_COUNT };

static const kt_param_def input_params[IP_COUNT] = {
    {"width", KT_PARAM_INT, 7, 1, 4096, NULL, "row length"},
    {"offset", KT_PARAM_FLOAT, 0.5, -INFINITY, INFINITY, NULL, "added to every input"},
    {"absolute", KT_PARAM_BOOL, 0, 0, 1, NULL, "non-negative inputs"},
    {"sign", KT_PARAM_ENUM, 0, 0, 0, "plus|minus", "sign of the inputs"},
};

static int shape(kt_problem *p, const kt_point *pt, kt_dtype dtype, const kt_param_value *ip)
{
    int64_t rows = pt->batch_size, width = (int64_t)ip[IP_WIDTH].num;
    *p = (kt_problem){0};
    p->dtype = dtype;
    p->m = rows;
    p->n = width;
    p->tensors[0] = (kt_tensor){"x", 2, {rows, width, 1, 1}, dtype};
    p->tensors[1] = (kt_tensor){"y", 2, {rows, width, 1, 1}, dtype};
    p->n_inputs = 1;
    p->n_outputs = 1;
    p->flops = (double)(rows * width);
    p->bytes = 2.0 * (double)(rows * width) * (double)kt_dtype_size(dtype);
    return KT_OK;
}

static int generate(const kt_problem *p, void *const *inputs, const kt_input_config *cfg)
{
    kt_rng rng;
    kt_rng_seed(&rng, cfg->seed);
    size_t size = kt_dtype_size(p->dtype);
    for (int64_t i = 0; i < p->m * p->n; i++) {
        double v = kt_rng_normal(&rng) + cfg->params[IP_OFFSET].num;
        if (cfg->params[IP_ABSOLUTE].num != 0)
            v = fabs(v);
        if (cfg->params[IP_SIGN].num == 1)
            v = -v;
        kt_dtype_from_double((char *)inputs[0] + (size_t)i * size, &v, p->dtype, 1);
    }
    return KT_OK;
}

static int reference(const kt_problem *p, const void *const *inputs, double *const *outputs)
{
    kt_dtype_to_double(outputs[0], inputs[0], p->dtype, (size_t)(p->m * p->n));
    for (int64_t i = 0; i < p->m * p->n; i++)
        outputs[0][i] *= 2.5;
    return KT_OK;
}

static const kt_op op = {.name = "rowscale",
                         .doc = "y[M,W] = 2.5 x (test plugin op)",
                         .axes = KT_AXIS_BATCH,
                         .input_params = input_params,
                         .n_input_params = IP_COUNT,
                         .shape = shape,
                         .generate = generate,
                         .reference = reference};

static int run(void *state, const kt_call *call)
{
    (void)state;
    const kt_problem *p = call->problem;
    size_t size = kt_dtype_size(p->dtype);
    for (int64_t i = 0; i < p->m * p->n; i++) {
        double v = 2.5 * kt_dtype_load(call->inputs[0], p->dtype, (size_t)i);
        kt_dtype_from_double((char *)call->outputs[0] + (size_t)i * size, &v, p->dtype, 1);
    }
    return KT_OK;
}

static const kt_variant plain = {
    .op = "rowscale", .name = "plain", .backend = "cpu", .doc = "one loop", .run = run};

int kt_plugin_init(kt_plugin_registrar *r)
{
    int err = r->add_op(r, &op);
    return err ? err : r->add_variant(r, &plain);
}
