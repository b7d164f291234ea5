/* synthetic.c - the sim backend's op: output = input, batch_size x context_length elements. */
#include "ops.h"

#include <math.h>

static int synthetic_shape(kt_problem *out, const kt_point *point, kt_dtype dtype,
                           const kt_param_value *input_params)
{
    (void)input_params;
    int64_t elems = point->batch_size * point->context_length;
    if (elems <= 0 || elems > ((int64_t)1 << 28))
        return kt_error_code(KT_EINVAL, "synthetic: %lld elements is out of range (1 to 2^28)",
                             (long long)elems);
    kt_op_problem_init(out, &kt_op_synthetic, dtype);
    out->batch = point->batch_size;
    out->context = point->context_length;
    out->elems = elems;
    kt_op_add_tensor(out, "x", dtype, 1, elems, 0, 0, 0);
    out->n_inputs = 1;
    kt_op_add_tensor(out, "y", dtype, 1, elems, 0, 0, 0);
    out->n_outputs = 1;
    out->flops = 0;
    out->bytes = 2.0 * (double)elems * (double)kt_dtype_size(dtype);
    return KT_OK;
}

static int synthetic_generate(const kt_problem *p, void *const *inputs, const kt_input_config *cfg)
{
    kt_op_fill_random(inputs[0], p->dtype, (size_t)p->elems, cfg->distribution, cfg->seed, 1.0);
    return KT_OK;
}

static int synthetic_reference(const kt_problem *p, const void *const *inputs,
                               double *const *outputs)
{
    kt_dtype_to_double(outputs[0], inputs[0], p->dtype, (size_t)p->elems);
    return KT_OK;
}

const kt_op kt_op_synthetic = {
    /* .name = */ "synthetic",
    /* .doc = */ "sim only: y = x over batch_size x context_length elements",
    /* .axes = */ KT_AXIS_BATCH | KT_AXIS_CONTEXT,
    /* .model_fields = */ 0,
    /* .backend_only = */ "sim",
    /* .input_params = */ NULL,
    /* .n_input_params = */ 0,
    /* .shape = */ synthetic_shape,
    /* .generate = */ synthetic_generate,
    /* .reference = */ synthetic_reference,
};
