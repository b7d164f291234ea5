/* gemm_blas.c - OpenBLAS sgemm over any storage type, and the gemm 'blas' variant built on it.
 *
 * Debian's OpenBLAS 0.3.21 declares cblas_sbgemm in cblas.h but is built without
 * BUILD_BFLOAT16, so the symbol is not exported (nm -D shows no sbgemm): bf16, like fp16, is
 * converted to fp32 inside the timed call and multiplied with sgemm. */
#include "cpu.h"
#include "cpu_gemm.h"

#include <cblas.h>
#include <stdlib.h>
#include <string.h>

int kt_cpu_blas_init(kt_cpu_blas *g, kt_backend *b, kt_dtype dtype, int64_t m, int64_t n, int64_t k)
{
    memset(g, 0, sizeof(*g));
    g->dtype = dtype;
    g->m = m;
    g->n = n;
    g->k = k;
    if (dtype == KT_DTYPE_FP32)
        return KT_OK;
    int err = kt_backend_alloc(b, (void **)&g->x, (size_t)(m * k) * sizeof(float));
    if (err == KT_OK)
        err = kt_backend_alloc(b, (void **)&g->w, (size_t)(n * k) * sizeof(float));
    if (err == KT_OK)
        err = kt_backend_alloc(b, (void **)&g->y, (size_t)(m * n) * sizeof(float));
    return err;
}

void kt_cpu_blas_release(kt_cpu_blas *g, kt_backend *b)
{
    if (!g)
        return;
    kt_backend_free(b, g->x, (size_t)(g->m * g->k) * sizeof(float));
    kt_backend_free(b, g->w, (size_t)(g->n * g->k) * sizeof(float));
    kt_backend_free(b, g->y, (size_t)(g->m * g->n) * sizeof(float));
    g->x = g->w = g->y = NULL;
}

void kt_cpu_blas_gemm(const kt_cpu_blas *g, void *y, const void *x, const void *w, int threads)
{
    const float *xf = x, *wf = w;
    float *yf = y;
    openblas_set_num_threads(threads);
    if (g->dtype != KT_DTYPE_FP32) {
        kt_cpu_to_f32(g->x, x, g->dtype, (size_t)(g->m * g->k), threads);
        kt_cpu_to_f32(g->w, w, g->dtype, (size_t)(g->n * g->k), threads);
        xf = g->x;
        wf = g->w;
        yf = g->y;
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (blasint)g->m, (blasint)g->n,
                (blasint)g->k, 1.0f, xf, (blasint)g->k, wf, (blasint)g->k, 0.0f, yf, (blasint)g->n);
    if (g->dtype != KT_DTYPE_FP32)
        kt_cpu_from_f32(y, g->y, g->dtype, (size_t)(g->m * g->n), threads);
}

static int blas_prepare(void **state, const kt_call *call)
{
    const kt_problem *p = call->problem;
    kt_cpu_blas *g = calloc(1, sizeof(*g));
    if (!g)
        return kt_error_code(KT_ENOMEM, "out of memory");
    *state = g;
    return kt_cpu_blas_init(g, call->backend, p->dtype, p->m, p->n, p->k);
}

static int blas_run(void *state, const kt_call *call)
{
    kt_cpu_blas_gemm(state, call->outputs[0], call->inputs[0], call->inputs[1], call->threads);
    return KT_OK;
}

static void blas_release(void *state, kt_backend *backend)
{
    kt_cpu_blas_release(state, backend);
    free(state);
}

const kt_variant kt_variant_cpu_gemm_blas = {
    /* .op = */ "gemm",
    /* .name = */ "blas",
    /* .backend = */ "cpu",
    /* .doc = */ "OpenBLAS sgemm; fp16/bf16 converted to fp32 inside the call (no sbgemm)",
    /* .params = */ NULL,
    /* .n_params = */ 0,
    /* .prepare = */ blas_prepare,
    /* .run = */ blas_run,
    /* .release = */ blas_release,
    /* .metrics = */ NULL,
};
