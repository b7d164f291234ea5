/* gemm_naive.c - the GEMM a new user writes first from docs/plugins.md: one scalar dot product
 * per output, fp32 accumulation, one thread, no blocking, nothing prepared. The plugin of
 * tests/bench/gemv_batch1.sh, which runs it at batch 1 against the built-in baselines (the
 * figures are in docs/benchmarks/gemv.md). Build:
 *     cc -O2 -shared -fPIC -Iinclude tests/bench/gemm_naive.c -o libgemm_naive.so */
#include <ktrial/plugin.h>

static int prepare(void **out, const kt_call *call)
{
    (void)call;
    *out = NULL;
    return KT_OK;
}

/* x[i, q] as fp32: a direct load in fp32 and bf16 (a shift), the ABI's loader for fp16. */
static inline float load(const void *src, kt_dtype dtype, size_t i)
{
    if (dtype == KT_DTYPE_FP32)
        return ((const float *)src)[i];
    if (dtype == KT_DTYPE_BF16) {
        union {
            uint32_t u;
            float f;
        } v = {(uint32_t)((const uint16_t *)src)[i] << 16};
        return v.f;
    }
    return kt_dtype_load(src, dtype, i);
}

static int run(void *state, const kt_call *call)
{
    (void)state;
    const kt_problem *p = call->problem;
    const void *x = call->inputs[0], *w = call->inputs[1];
    size_t size = kt_dtype_size(p->dtype);
    for (int64_t i = 0; i < p->m; i++)
        for (int64_t j = 0; j < p->n; j++) {
            float acc = 0.0f;
            for (int64_t q = 0; q < p->k; q++)
                acc += load(x, p->dtype, (size_t)(i * p->k + q)) *
                       load(w, p->dtype, (size_t)(j * p->k + q));
            double v = acc;
            kt_dtype_from_double((char *)call->outputs[0] + (size_t)(i * p->n + j) * size, &v,
                                 p->dtype, 1);
        }
    return KT_OK;
}

static void release(void *state, kt_backend *backend)
{
    (void)state;
    (void)backend;
}

static const kt_variant naive = {
    .op = "gemm",
    .name = "naive",
    .backend = "cpu",
    .doc = "one scalar dot product per output, one thread (tests/bench/gemm_naive.c)",
    .params = NULL,
    .n_params = 0,
    .prepare = prepare,
    .run = run,
    .release = release,
};

int kt_plugin_init(kt_plugin_registrar *r)
{
    return r->add_variant(r, &naive);
}
