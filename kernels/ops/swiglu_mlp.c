/* swiglu_mlp.c - the swiglu_mlp op: y[M,H] = down( silu(x Wg^T) * (x Wu^T) ), with the gate
 * and up weights stacked in one [2I, H] matrix (rows 0..I-1 gate, I..2I-1 up) as serving
 * engines store them, and w_down [H, I]. */
#include "ops.h"

#include <math.h>
#include <stdlib.h>

static int swiglu_shape(kt_problem *out, const kt_point *point, kt_dtype dtype,
                        const kt_param_value *input_params)
{
    (void)input_params;
    const kt_model *md = &point->model;
    int64_t m = 0;
    int err = kt_op_gemm_dims(&m, point, "swiglu_mlp");
    if (err < 0)
        return err;
    int64_t h = md->hidden, i = md->intermediate;
    if (h <= 0 || i <= 0 || 2 * i > INT32_MAX || h > INT32_MAX)
        return kt_error_code(KT_EINVAL, "swiglu_mlp: model '%s' has hidden %lld intermediate %lld",
                             md->name, (long long)h, (long long)i);
    kt_op_problem_init(out, &kt_op_swiglu_mlp, dtype);
    out->m = m;
    out->k = h;
    out->n = i;
    kt_op_add_tensor(out, "x", dtype, 2, m, h, 0, 0);
    kt_op_add_tensor(out, "w_gate_up", dtype, 2, 2 * i, h, 0, 0);
    kt_op_add_tensor(out, "w_down", dtype, 2, h, i, 0, 0);
    out->n_inputs = 3;
    kt_op_add_tensor(out, "y", dtype, 2, m, h, 0, 0);
    out->n_outputs = 1;
    /* two GEMMs, plus silu(g) * u counted as 4 flops (exp, add, divide, multiply) per element */
    out->flops = 2.0 * m * h * 2.0 * i + 2.0 * m * i * h + 4.0 * m * i;
    out->bytes = ((double)m * h * 2 + 3.0 * (double)i * h) * (double)kt_dtype_size(dtype);
    return KT_OK;
}

static int swiglu_generate(const kt_problem *p, void *const *inputs, const kt_input_config *cfg)
{
    int err =
        kt_op_fill_activations(inputs[0], p->dtype, p->m, p->k, cfg, kt_seed_mix(cfg->seed, 1));
    if (err < 0)
        return err;
    kt_op_fill_weights(inputs[1], p->dtype, 2 * p->n, p->k, cfg->distribution,
                       kt_seed_mix(cfg->seed, 2));
    kt_op_fill_weights(inputs[2], p->dtype, p->k, p->n, cfg->distribution,
                       kt_seed_mix(cfg->seed, 3));
    return KT_OK;
}

/* Float64 throughout, 32 rows of x at a time: h = x Wgu^T, a = silu(g) * u, y = a Wd^T. */
static int swiglu_reference(const kt_problem *p, const void *const *inputs, double *const *outputs)
{
    enum { ROWS = 32 };
    int64_t h = p->k, i = p->n;
    double *xd = malloc((size_t)(ROWS * h) * sizeof(double));
    double *hd = malloc((size_t)(ROWS * 2 * i) * sizeof(double));
    double *ad = malloc((size_t)(ROWS * i) * sizeof(double));
    int err = xd && hd && ad ? KT_OK : kt_error_code(KT_ENOMEM, "out of memory");
    size_t size = kt_dtype_size(p->dtype);
    for (int64_t r0 = 0; r0 < p->m && err == KT_OK; r0 += ROWS) {
        int64_t rows = p->m - r0 < ROWS ? p->m - r0 : ROWS;
        kt_dtype_to_double(xd, (const char *)inputs[0] + (size_t)(r0 * h) * size, p->dtype,
                           (size_t)(rows * h));
        if ((err = kt_op_ref_rows(hd, 2 * i, xd, rows, inputs[1], p->dtype, 2 * i, h)) < 0)
            break;
        for (int64_t r = 0; r < rows; r++) {
            for (int64_t j = 0; j < i; j++) {
                double g = hd[r * 2 * i + j], u = hd[r * 2 * i + i + j];
                ad[r * i + j] = g / (1.0 + exp(-g)) * u;
            }
        }
        err = kt_op_ref_rows(outputs[0] + r0 * h, h, ad, rows, inputs[2], p->dtype, h, i);
    }
    free(xd);
    free(hd);
    free(ad);
    return err;
}

const kt_op kt_op_swiglu_mlp = {
    /* .name = */ "swiglu_mlp",
    /* .doc = */ "y = down(silu(x Wg^T) * (x Wu^T)), the gated MLP block of a model",
    /* .axes = */ KT_AXIS_MODEL | KT_AXIS_BATCH | KT_AXIS_CONTEXT | KT_AXIS_PHASE,
    /* .model_fields = */ KT_MODEL_HIDDEN | KT_MODEL_INTERMEDIATE,
    /* .backend_only = */ NULL,
    /* .input_params = */ kt_op_activation_params,
    /* .n_input_params = */ KT_OP_N_ACTIVATION_PARAMS,
    /* .shape = */ swiglu_shape,
    /* .generate = */ swiglu_generate,
    /* .reference = */ swiglu_reference,
};
