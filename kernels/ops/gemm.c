/* gemm.c - the gemm op: Y[M,N] = X[M,K] W[N,K]^T for one projection of a model, and the
 * activation/weight generators and float64 row kernel that swiglu_mlp shares. */
#include "ops.h"

#include <math.h>
#include <stdlib.h>

enum { IP_OUTLIER_FRACTION, IP_OUTLIER_SCALE, IP_COUNT };

const kt_param_def kt_op_activation_params[KT_OP_N_ACTIVATION_PARAMS] = {
    {"outlier_fraction", KT_PARAM_FLOAT, 0.01, 0, 0.5, NULL,
     "llm: fraction of hidden channels whose activations are outliers (LLM.int8)"},
    {"outlier_scale", KT_PARAM_FLOAT, 20, 1, 1000, NULL,
     "llm: factor applied to every activation of an outlier channel"},
};

/* Picks round(fraction * cols) distinct channels (at least one when fraction > 0) by a
 * partial Fisher-Yates shuffle and scales column 'c' of every row by 'scale'. */
static int plant_outliers(void *dst, kt_dtype dtype, int64_t rows, int64_t cols, double fraction,
                          double scale, uint64_t seed)
{
    int64_t n_out = (int64_t)llround(fraction * (double)cols);
    if (fraction > 0 && n_out == 0)
        n_out = 1;
    if (n_out == 0)
        return KT_OK;
    int64_t *perm = malloc((size_t)cols * sizeof(*perm));
    if (!perm)
        return kt_error_code(KT_ENOMEM, "out of memory");
    kt_rng rng;
    kt_rng_seed(&rng, seed);
    for (int64_t c = 0; c < cols; c++)
        perm[c] = c;
    size_t size = kt_dtype_size(dtype);
    for (int64_t i = 0; i < n_out; i++) {
        int64_t j = i + (int64_t)(kt_rng_uniform(&rng) * (double)(cols - i));
        int64_t t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
        for (int64_t r = 0; r < rows; r++) {
            size_t at = (size_t)(r * cols + perm[i]);
            double v = (double)kt_dtype_load(dst, dtype, at) * scale;
            kt_dtype_from_double((char *)dst + at * size, &v, dtype, 1);
        }
    }
    free(perm);
    return KT_OK;
}

int kt_op_fill_activations(void *dst, kt_dtype dtype, int64_t rows, int64_t cols,
                           const kt_input_config *cfg, uint64_t seed)
{
    kt_distribution dist = cfg->distribution == KT_DIST_UNIFORM ? KT_DIST_UNIFORM : KT_DIST_NORMAL;
    kt_op_fill_random(dst, dtype, (size_t)(rows * cols), dist, seed, 1.0);
    if (cfg->distribution != KT_DIST_LLM)
        return KT_OK;
    kt_param_value values[KT_OP_N_ACTIVATION_PARAMS];
    const kt_param_value *v = cfg->params;
    if (!v) {
        kt_param_defaults(values, kt_op_activation_params, KT_OP_N_ACTIVATION_PARAMS);
        v = values;
    }
    return plant_outliers(dst, dtype, rows, cols, v[IP_OUTLIER_FRACTION].num,
                          v[IP_OUTLIER_SCALE].num, kt_seed_mix(seed, 0x6f75746c));
}

void kt_op_fill_weights(void *dst, kt_dtype dtype, int64_t rows, int64_t fan_in,
                        kt_distribution dist, uint64_t seed)
{
    /* std 1/sqrt(fan_in) for every distribution: U(-a, a) has std a/sqrt(3) */
    if (dist == KT_DIST_UNIFORM)
        kt_op_fill_random(dst, dtype, (size_t)(rows * fan_in), KT_DIST_UNIFORM, seed,
                          sqrt(3.0 / (double)fan_in));
    else
        kt_op_fill_random(dst, dtype, (size_t)(rows * fan_in), KT_DIST_NORMAL, seed,
                          1.0 / sqrt((double)fan_in));
}

/* Dot product of two float64 rows with four interleaved partial sums (a fixed order, so the
 * reference does not depend on the thread count). */
static double dot_f64(const double *a, const double *b, int64_t k)
{
    double acc[4] = {0, 0, 0, 0};
    int64_t i = 0;
    for (; i + 4 <= k; i += 4)
        for (int l = 0; l < 4; l++)
            acc[l] += a[i + l] * b[i + l];
    for (; i < k; i++)
        acc[0] += a[i] * b[i];
    return (acc[0] + acc[1]) + (acc[2] + acc[3]);
}

int kt_op_ref_rows(double *y, int64_t ldy, const double *xd, int64_t rows, const void *w,
                   kt_dtype dtype, int64_t n, int64_t k)
{
    int failed = 0;
#pragma omp parallel
    {
        double *wd = malloc((size_t)k * sizeof(double));
        if (!wd) {
#pragma omp atomic write
            failed = 1;
        }
#pragma omp for schedule(static)
        for (int64_t j = 0; j < n; j++) {
            if (!wd)
                continue;
            kt_dtype_to_double(wd, (const char *)w + (size_t)(j * k) * kt_dtype_size(dtype), dtype,
                               (size_t)k);
            for (int64_t r = 0; r < rows; r++)
                y[r * ldy + j] = dot_f64(xd + r * k, wd, k);
        }
        free(wd);
    }
    return failed ? kt_error_code(KT_ENOMEM, "out of memory") : KT_OK;
}

int kt_op_gemm_dims(int64_t *m, const kt_point *point, const char *op)
{
    int64_t b = point->batch_size, t = point->context_length;
    if (b <= 0 || (point->phase == KT_PHASE_PREFILL && t <= 0))
        return kt_error_code(KT_EINVAL, "%s: batch %lld and context %lld must be positive", op,
                             (long long)b, (long long)t);
    *m = point->phase == KT_PHASE_PREFILL ? b * t : b;
    if (*m > ((int64_t)1 << 24))
        return kt_error_code(KT_EINVAL, "%s: %lld rows is out of range (1 to 2^24)", op,
                             (long long)*m);
    return KT_OK;
}

static int gemm_shape(kt_problem *out, const kt_point *point, kt_dtype dtype,
                      const kt_param_value *input_params)
{
    (void)input_params;
    const kt_model *md = &point->model;
    int64_t m = 0, n, k;
    int err = kt_op_gemm_dims(&m, point, "gemm");
    if (err < 0)
        return err;
    static const char *const names[] = {"hidden", "heads", "kv_heads", "head_dim", "intermediate"};
    static const unsigned bits[] = {KT_MODEL_HIDDEN, KT_MODEL_HEADS, KT_MODEL_KV_HEADS,
                                    KT_MODEL_HEAD_DIM, KT_MODEL_INTERMEDIATE};
    const int64_t have[] = {md->hidden, md->heads, md->kv_heads, md->head_dim, md->intermediate};
    for (int i = 0; i < 5; i++)
        if ((kt_role_model_fields(point->role) & bits[i]) && have[i] <= 0)
            return kt_error_code(KT_EINVAL, "gemm: model '%s' has no '%s', which role '%s' reads",
                                 md->name, names[i], kt_role_name(point->role));
    switch (point->role) {
    case KT_ROLE_QKV:
        n = (md->heads + 2 * md->kv_heads) * md->head_dim;
        k = md->hidden;
        break;
    case KT_ROLE_O:
        n = md->hidden;
        k = md->heads * md->head_dim;
        break;
    case KT_ROLE_GATE_UP:
        n = 2 * md->intermediate;
        k = md->hidden;
        break;
    case KT_ROLE_DOWN:
        n = md->hidden;
        k = md->intermediate;
        break;
    default:
        return kt_error_code(KT_EINVAL, "gemm: a role is required (qkv, o, gate_up, down)");
    }
    if (n <= 0 || k <= 0 || n > INT32_MAX || k > INT32_MAX)
        return kt_error_code(KT_EINVAL, "gemm: model '%s' gives N=%lld K=%lld for role '%s'",
                             md->name, (long long)n, (long long)k, kt_role_name(point->role));
    kt_op_problem_init(out, &kt_op_gemm, dtype);
    out->m = m;
    out->n = n;
    out->k = k;
    kt_op_add_tensor(out, "x", dtype, 2, m, k, 0, 0);
    kt_op_add_tensor(out, "w", dtype, 2, n, k, 0, 0);
    out->n_inputs = 2;
    kt_op_add_tensor(out, "y", dtype, 2, m, n, 0, 0);
    out->n_outputs = 1;
    out->flops = 2.0 * (double)m * (double)n * (double)k;
    out->bytes = ((double)m * k + (double)n * k + (double)m * n) * (double)kt_dtype_size(dtype);
    return KT_OK;
}

static int gemm_generate(const kt_problem *p, void *const *inputs, const kt_input_config *cfg)
{
    int err =
        kt_op_fill_activations(inputs[0], p->dtype, p->m, p->k, cfg, kt_seed_mix(cfg->seed, 1));
    if (err < 0)
        return err;
    kt_op_fill_weights(inputs[1], p->dtype, p->n, p->k, cfg->distribution,
                       kt_seed_mix(cfg->seed, 2));
    return KT_OK;
}

/* Float64 from the stored inputs, 64 rows of X at a time (bounded memory at any M). */
static int gemm_reference(const kt_problem *p, const void *const *inputs, double *const *outputs)
{
    enum { ROWS = 64 };
    double *xd = malloc((size_t)(ROWS * p->k) * sizeof(double));
    if (!xd)
        return kt_error_code(KT_ENOMEM, "out of memory");
    int err = KT_OK;
    size_t size = kt_dtype_size(p->dtype);
    for (int64_t r0 = 0; r0 < p->m && err == KT_OK; r0 += ROWS) {
        int64_t rows = p->m - r0 < ROWS ? p->m - r0 : ROWS;
        kt_dtype_to_double(xd, (const char *)inputs[0] + (size_t)(r0 * p->k) * size, p->dtype,
                           (size_t)(rows * p->k));
        err =
            kt_op_ref_rows(outputs[0] + r0 * p->n, p->n, xd, rows, inputs[1], p->dtype, p->n, p->k);
    }
    free(xd);
    return err;
}

const kt_op kt_op_gemm = {
    /* .name = */ "gemm",
    /* .doc = */ "Y[M,N] = X[M,K] W[N,K]^T for one projection (role) of a model",
    /* .axes = */ KT_AXIS_MODEL | KT_AXIS_BATCH | KT_AXIS_CONTEXT | KT_AXIS_PHASE | KT_AXIS_ROLE,
    /* .model_fields = */ KT_MODEL_HIDDEN | KT_MODEL_HEADS | KT_MODEL_KV_HEADS | KT_MODEL_HEAD_DIM |
        KT_MODEL_INTERMEDIATE,
    /* .backend_only = */ NULL,
    /* .input_params = */ kt_op_activation_params,
    /* .n_input_params = */ KT_OP_N_ACTIVATION_PARAMS,
    /* .shape = */ gemm_shape,
    /* .generate = */ gemm_generate,
    /* .reference = */ gemm_reference,
};
