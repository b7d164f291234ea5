/* rmsnorm.c - a plugin op: RMSNorm, y = x / sqrt(mean(x^2) + eps) * g, with two variants.
 *
 * The op says how a matrix point becomes a problem (rows = batch at decode, batch * context
 * at prefill; columns = the model's hidden size), how seeded inputs are generated in the
 * storage dtype, and computes the float64 reference from the stored inputs. ktrial then does
 * for it what it does for built-in ops: numerics gates, output poisoning, input hashing,
 * memory accounting, worker isolation.
 *
 * Variants: 'twopass' (sum of squares, then scale) and 'unrolled' (four partial sums). */
#include <ktrial/plugin.h>

#include <math.h>
#include <stdlib.h>

#define EPS 1e-6

static int shape(kt_problem *p, const kt_point *pt, kt_dtype dtype,
                 const kt_param_value *input_params)
{
    (void)input_params; /* RMSNorm has no size knob */
    int64_t rows =
        pt->phase == KT_PHASE_PREFILL ? pt->batch_size * pt->context_length : pt->batch_size;
    int64_t hidden = pt->model.hidden;
    if (rows <= 0 || rows > ((int64_t)1 << 24) || hidden <= 0 || hidden > ((int64_t)1 << 20))
        return kt_error_code(KT_EINVAL, "rmsnorm: %lld rows of %lld values is out of range",
                             (long long)rows, (long long)hidden);
    *p = (kt_problem){0};
    p->dtype = dtype;
    p->m = rows;
    p->n = hidden;
    p->tensors[0] = (kt_tensor){"x", 2, {rows, hidden, 1, 1}, dtype};
    p->tensors[1] = (kt_tensor){"g", 1, {hidden, 1, 1, 1}, dtype};
    p->tensors[2] = (kt_tensor){"y", 2, {rows, hidden, 1, 1}, dtype};
    p->n_inputs = 2;
    p->n_outputs = 1;
    p->flops = 4.0 * (double)rows * (double)hidden;
    p->bytes = (2.0 * (double)rows + 1.0) * (double)hidden * (double)kt_dtype_size(dtype);
    return KT_OK;
}

static void fill(void *dst, kt_dtype dtype, int64_t n, kt_rng *rng, kt_distribution dist,
                 double mean)
{
    size_t size = kt_dtype_size(dtype);
    for (int64_t i = 0; i < n; i++) {
        double u = dist == KT_DIST_UNIFORM ? 2.0 * kt_rng_uniform(rng) - 1.0 : kt_rng_normal(rng);
        double v = mean + (mean != 0.0 ? 0.1 : 1.0) * u;
        kt_dtype_from_double((char *)dst + (size_t)i * size, &v, dtype, 1);
    }
}

static int generate(const kt_problem *p, void *const *inputs, const kt_input_config *cfg)
{
    kt_rng rng;
    kt_rng_seed(&rng, cfg->seed);
    fill(inputs[0], p->dtype, p->m * p->n, &rng, cfg->distribution, 0.0);
    fill(inputs[1], p->dtype, p->n, &rng, cfg->distribution, 1.0); /* gains around 1 */
    return KT_OK;
}

static int reference(const kt_problem *p, const void *const *inputs, double *const *outputs)
{
    double *x = malloc((size_t)p->n * sizeof(double));
    double *g = malloc((size_t)p->n * sizeof(double));
    if (!x || !g) {
        free(x);
        free(g);
        return kt_error_code(KT_ENOMEM, "rmsnorm: out of memory");
    }
    kt_dtype_to_double(g, inputs[1], p->dtype, (size_t)p->n);
    size_t size = kt_dtype_size(p->dtype);
    for (int64_t r = 0; r < p->m; r++) {
        kt_dtype_to_double(x, (const char *)inputs[0] + (size_t)(r * p->n) * size, p->dtype,
                           (size_t)p->n);
        double ss = 0.0;
        for (int64_t i = 0; i < p->n; i++)
            ss += x[i] * x[i];
        double inv = 1.0 / sqrt(ss / (double)p->n + EPS);
        for (int64_t i = 0; i < p->n; i++)
            outputs[0][r * p->n + i] = x[i] * inv * g[i];
    }
    free(x);
    free(g);
    return KT_OK;
}

static const kt_op rmsnorm = {
    .name = "rmsnorm",
    .doc = "y[M,H] = x / sqrt(mean(x^2) + 1e-6) * g over the hidden size (plugin op)",
    .axes = KT_AXIS_MODEL | KT_AXIS_BATCH | KT_AXIS_CONTEXT | KT_AXIS_PHASE,
    .model_fields = KT_MODEL_HIDDEN,
    .shape = shape,
    .generate = generate,
    .reference = reference,
};

/* One row: the sum of squares with 'lanes' partial sums (1 or 4), then the scaling. */
static void row(const kt_problem *p, const kt_call *call, int64_t r, int lanes)
{
    const void *x = call->inputs[0], *g = call->inputs[1];
    size_t size = kt_dtype_size(p->dtype), base = (size_t)(r * p->n);
    float acc[4] = {0, 0, 0, 0};
    int64_t i = 0;
    for (; i + lanes <= p->n; i += lanes)
        for (int l = 0; l < lanes; l++) {
            float v = kt_dtype_load(x, p->dtype, base + (size_t)(i + l));
            acc[l] += v * v;
        }
    for (; i < p->n; i++) {
        float v = kt_dtype_load(x, p->dtype, base + (size_t)i);
        acc[0] += v * v;
    }
    float inv = 1.0f / sqrtf((acc[0] + acc[1] + acc[2] + acc[3]) / (float)p->n + (float)EPS);
    char *y = (char *)call->outputs[0] + base * size;
    for (i = 0; i < p->n; i++) {
        double v = (double)(kt_dtype_load(x, p->dtype, base + (size_t)i) * inv *
                            kt_dtype_load(g, p->dtype, (size_t)i));
        kt_dtype_from_double(y + (size_t)i * size, &v, p->dtype, 1);
    }
}

static int run_twopass(void *state, const kt_call *call)
{
    (void)state;
    for (int64_t r = 0; r < call->problem->m; r++)
        row(call->problem, call, r, 1);
    return KT_OK;
}

static int run_unrolled(void *state, const kt_call *call)
{
    (void)state;
    for (int64_t r = 0; r < call->problem->m; r++)
        row(call->problem, call, r, 4);
    return KT_OK;
}

static const kt_variant twopass = {
    .op = "rmsnorm",
    .name = "twopass",
    .backend = "cpu",
    .doc = "sum of squares with one accumulator, then the scaling pass",
    .run = run_twopass,
};

static const kt_variant unrolled = {
    .op = "rmsnorm",
    .name = "unrolled",
    .backend = "cpu",
    .doc = "sum of squares with four accumulators, then the scaling pass",
    .run = run_unrolled,
};

int kt_plugin_init(kt_plugin_registrar *r)
{
    int err = r->add_op(r, &rmsnorm);
    if (err == 0)
        err = r->add_variant(r, &twopass);
    if (err == 0)
        err = r->add_variant(r, &unrolled);
    return err;
}
