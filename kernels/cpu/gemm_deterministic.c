/* gemm_deterministic.c - the gemm 'deterministic' variant: batch-invariant and
 * thread-count-invariant results.
 *
 * Every y[m, n] is computed by the same sequence of operations whatever M, the thread count
 * or the tile it falls in: one 8-lane fp32 accumulator per element, lane l summing
 * x[m, 8i+l] * w[n, 8i+l] by FMA for i = 0, 1, ... in order (16-bit operands upcast exactly on
 * load), then the fixed reduction ((l0+l4)+(l2+l6)) + ((l1+l5)+(l3+l7)), then the tail
 * k = 8*floor(K/8) .. K-1 by scalar FMA in order, then one rounding to the storage type.
 * No split-K, no atomics: threads divide rows and columns only. Edge tiles repeat their last
 * valid row or column instead of taking a different code path. */
#include "cpu.h"
#include "cpu_gemm.h"
#include "pool.h"

#include <stdlib.h>

enum { TR = 4, TC = 3, ROWS_PER_TASK = 64, COLS_PER_TASK = 48 };

static inline float reduce8(__m256 v)
{
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

/* out[r][c] = x row xr[r] . w row wr[c] (element offsets into x and w) over k. */
static void tile(float out[TR][TC], const void *x, const size_t xr[TR], const void *w,
                 const size_t wr[TC], kt_dtype dtype, int64_t k)
{
    __m256 acc[TR][TC];
    for (int r = 0; r < TR; r++)
        for (int c = 0; c < TC; c++)
            acc[r][c] = _mm256_setzero_ps();
    int64_t kk = 0;
    for (; kk + 8 <= k; kk += 8) {
        __m256 wv[TC];
        for (int c = 0; c < TC; c++)
            wv[c] = kt_cpu_load8(w, dtype, wr[c] + (size_t)kk);
        for (int r = 0; r < TR; r++) {
            __m256 xv = kt_cpu_load8(x, dtype, xr[r] + (size_t)kk);
            for (int c = 0; c < TC; c++)
                acc[r][c] = _mm256_fmadd_ps(xv, wv[c], acc[r][c]);
        }
    }
    for (int r = 0; r < TR; r++) {
        for (int c = 0; c < TC; c++) {
            float s = reduce8(acc[r][c]);
            for (int64_t t = kk; t < k; t++)
                s = fmaf(kt_cpu_load1(x, dtype, xr[r] + (size_t)t),
                         kt_cpu_load1(w, dtype, wr[c] + (size_t)t), s);
            out[r][c] = s;
        }
    }
}

static int det_prepare(void **state, const kt_call *call)
{
    (void)call;
    *state = NULL; /* no scratch: operands are read in place */
    return KT_OK;
}

typedef struct det_job {
    const kt_problem *p;
    const void *x, *w;
    void *y;
    int64_t row_tasks;
} det_job;

/* Pool item: rows of one row task against the columns of one column task. Each output is one
 * fixed-order reduction whoever runs it, so the split over threads changes no bit. */
static void det_task(void *arg, int64_t item, int slot)
{
    const det_job *j = arg;
    const kt_problem *p = j->p;
    int64_t m = p->m, n = p->n, k = p->k;
    int64_t ct = item / j->row_tasks, rt = item % j->row_tasks;
    int64_t r_end = (rt + 1) * ROWS_PER_TASK < m ? (rt + 1) * ROWS_PER_TASK : m;
    int64_t c_end = (ct + 1) * COLS_PER_TASK < n ? (ct + 1) * COLS_PER_TASK : n;
    (void)slot;
    for (int64_t r0 = rt * ROWS_PER_TASK; r0 < r_end; r0 += TR) {
        for (int64_t c0 = ct * COLS_PER_TASK; c0 < c_end; c0 += TC) {
            size_t xr[TR], wr[TC];
            for (int r = 0; r < TR; r++)
                xr[r] = (size_t)((r0 + r < r_end ? r0 + r : r_end - 1) * k);
            for (int c = 0; c < TC; c++)
                wr[c] = (size_t)((c0 + c < c_end ? c0 + c : c_end - 1) * k);
            float out[TR][TC];
            tile(out, j->x, xr, j->w, wr, p->dtype, k);
            for (int r = 0; r < TR && r0 + r < r_end; r++) {
                for (int c = 0; c < TC && c0 + c < c_end; c++) {
                    size_t at = (size_t)((r0 + r) * n + c0 + c);
                    kt_cpu_store1(j->y, p->dtype, at, out[r][c]);
                }
            }
        }
    }
}

static int det_run(void *state, const kt_call *call)
{
    (void)state;
    const kt_problem *p = call->problem;
    int64_t row_tasks = (p->m + ROWS_PER_TASK - 1) / ROWS_PER_TASK;
    int64_t col_tasks = (p->n + COLS_PER_TASK - 1) / COLS_PER_TASK;
    det_job j = {p, call->inputs[0], call->inputs[1], call->outputs[0], row_tasks};
    kt_pool_for(call->threads, row_tasks * col_tasks, det_task, &j);
    return KT_OK;
}

static void det_release(void *state, kt_backend *backend)
{
    (void)state;
    (void)backend;
}

const kt_variant kt_variant_cpu_gemm_deterministic = {
    /* .op = */ "gemm",
    /* .name = */ "deterministic",
    /* .backend = */ "cpu",
    /* .doc = */
    "fixed reduction order, fp32 FMA, no split-K: bitwise independent of M and "
    "threads",
    /* .params = */ NULL,
    /* .n_params = */ 0,
    /* .prepare = */ det_prepare,
    /* .run = */ det_run,
    /* .release = */ det_release,
    /* .metrics = */ NULL,
};
