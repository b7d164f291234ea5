/* gemm_blas.c - OpenBLAS on any storage type: sgemm, or sgemv at m == 1, and the gemm 'blas'
 * variant built on it.
 *
 * Debian's OpenBLAS 0.3.21 declares cblas_sbgemm in cblas.h but is built without
 * BUILD_BFLOAT16, so neither sbgemm nor sbgemv is exported (nm -D shows neither): bf16, like
 * fp16, is converted to fp32 inside the timed call. At m == 1 OpenBLAS 0.3.21's sgemm does
 * not forward to gemv (that came in 0.3.27) and packs w as for a large product, so a
 * one-row call goes to cblas_sgemv itself: y = W x with W row-major n x k. */
#include "cpu.h"
#include "cpu_gemm.h"
#include "pool.h"

#include <cblas.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* fp32 values of w per converted chunk at m == 1: 64 KiB, which stays in L2 while sgemv
 * reads it back. */
#define GEMV_CHUNK_FLOATS 16384

int kt_cpu_blas_init(kt_cpu_blas *g, kt_backend *b, kt_dtype dtype, int64_t m, int64_t n, int64_t k)
{
    memset(g, 0, sizeof(*g));
    g->dtype = dtype;
    g->m = m;
    g->n = n;
    g->k = k;
    g->gemv = m == 1;
    if (dtype == KT_DTYPE_FP32)
        return KT_OK;
    g->w_floats = (size_t)(n * k);
    if (g->gemv) {
        long cpus = sysconf(_SC_NPROCESSORS_ONLN);
        g->rows = k < GEMV_CHUNK_FLOATS ? GEMV_CHUNK_FLOATS / k : 1;
        if (g->rows > n)
            g->rows = n;
        g->slots = cpus < 1 ? 1 : cpus > 256 ? 256 : (int)cpus;
        int64_t chunks = (n + g->rows - 1) / g->rows; /* no slot without a chunk to run */
        if (g->slots > chunks)
            g->slots = (int)chunks;
        g->w_floats = (size_t)g->slots * (size_t)(g->rows * k);
    }
    int err = kt_backend_alloc(b, (void **)&g->x, (size_t)(m * k) * sizeof(float));
    if (err == KT_OK)
        err = kt_backend_alloc(b, (void **)&g->w, g->w_floats * sizeof(float));
    if (err == KT_OK)
        err = kt_backend_alloc(b, (void **)&g->y, (size_t)(m * n) * sizeof(float));
    return err;
}

void kt_cpu_blas_release(kt_cpu_blas *g, kt_backend *b)
{
    if (!g)
        return;
    kt_backend_free(b, g->x, (size_t)(g->m * g->k) * sizeof(float));
    kt_backend_free(b, g->w, g->w_floats * sizeof(float));
    kt_backend_free(b, g->y, (size_t)(g->m * g->n) * sizeof(float));
    g->x = g->w = g->y = NULL;
}

typedef struct gemv_job {
    const kt_cpu_blas *g;
    void *y;
    const void *w;
} gemv_job;

/* Chunk c of a storage-typed gemv: rows [c * rows, ...) of w converted into the slot's
 * buffer, multiplied by the fp32 x with sgemv, stored to y in the storage type. */
static void gemv_chunk(void *arg, int64_t c, int slot)
{
    const gemv_job *j = arg;
    const kt_cpu_blas *g = j->g;
    int64_t r0 = c * g->rows, rows = r0 + g->rows < g->n ? g->rows : g->n - r0;
    float *buf = g->w + (size_t)slot * (size_t)(g->rows * g->k);
    const size_t elem = kt_dtype_size(g->dtype);
    kt_cpu_to_f32(buf, (const char *)j->w + (size_t)(r0 * g->k) * elem, g->dtype,
                  (size_t)(rows * g->k), 1);
    cblas_sgemv(CblasRowMajor, CblasNoTrans, (blasint)rows, (blasint)g->k, 1.0f, buf, (blasint)g->k,
                g->x, 1, 0.0f, g->y + r0, 1);
    kt_cpu_from_f32((char *)j->y + (size_t)r0 * elem, g->y + r0, g->dtype, (size_t)rows, 1);
}

void kt_cpu_blas_gemm(const kt_cpu_blas *g, void *y, const void *x, const void *w, int threads)
{
    const float *xf = x, *wf = w;
    float *yf = y;
    if (g->gemv && g->dtype == KT_DTYPE_FP32) {
        openblas_set_num_threads(threads);
        cblas_sgemv(CblasRowMajor, CblasNoTrans, (blasint)g->n, (blasint)g->k, 1.0f, wf,
                    (blasint)g->k, xf, 1, 0.0f, yf, 1);
        return;
    }
    if (g->gemv) { /* the chunks are the parallelism: OpenBLAS runs each on its caller */
        gemv_job j = {g, y, w};
        openblas_set_num_threads(1);
        kt_cpu_to_f32(g->x, x, g->dtype, (size_t)g->k, 1);
        kt_pool_for(threads < g->slots ? threads : g->slots, (g->n + g->rows - 1) / g->rows,
                    gemv_chunk, &j);
        return;
    }
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

/* Which routine the calls go to, so a result says whether batch 1 was measured as a GEMV. */
static int blas_metrics(void *state, kt_metric *out, int max)
{
    const kt_cpu_blas *g = state;
    if (max < 1)
        return 0;
    out[0].name = "gemv";
    out[0].value = g->gemv;
    out[0].unit = "";
    return 1;
}

const kt_variant kt_variant_cpu_gemm_blas = {
    /* .op = */ "gemm",
    /* .name = */ "blas",
    /* .backend = */ "cpu",
    /* .doc = */ "OpenBLAS sgemm, sgemv at batch 1; fp16/bf16 converted to fp32 inside the call",
    /* .params = */ NULL,
    /* .n_params = */ 0,
    /* .prepare = */ blas_prepare,
    /* .run = */ blas_run,
    /* .release = */ blas_release,
    /* .metrics = */ blas_metrics,
};
