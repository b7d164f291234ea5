/* test_gemv.c - at batch 1 (m == 1) the OpenBLAS path multiplies with sgemv, never sgemm, and
 * the result matches the float64 product on shapes that are no multiple of a vector, a chunk
 * or a thread count, in every storage type and on one and several threads; at m > 1 it is
 * sgemm. The test defines cblas_sgemm and cblas_sgemv itself: the executable's definitions
 * come first in the symbol lookup, so every call the kernels make passes through them, is
 * counted and is forwarded to OpenBLAS (dlsym RTLD_NEXT). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "cpu/cpu_gemm.h"
#include "kernel.h"

#include <cblas.h>
#include <dlfcn.h>
#include <math.h>
#include <stdlib.h>

static int n_sgemm, n_sgemv;

typedef void (*sgemm_fn)(const enum CBLAS_ORDER, const enum CBLAS_TRANSPOSE,
                         const enum CBLAS_TRANSPOSE, const blasint, const blasint, const blasint,
                         const float, const float *, const blasint, const float *, const blasint,
                         const float, float *, const blasint);
typedef void (*sgemv_fn)(const enum CBLAS_ORDER, const enum CBLAS_TRANSPOSE, const blasint,
                         const blasint, const float, const float *, const blasint, const float *,
                         const blasint, const float, float *, const blasint);

void cblas_sgemm(const enum CBLAS_ORDER o, const enum CBLAS_TRANSPOSE ta,
                 const enum CBLAS_TRANSPOSE tb, const blasint m, const blasint n, const blasint k,
                 const float alpha, const float *a, const blasint lda, const float *b,
                 const blasint ldb, const float beta, float *c, const blasint ldc)
{
    __atomic_add_fetch(&n_sgemm, 1, __ATOMIC_RELAXED);
    sgemm_fn next = (sgemm_fn)dlsym(RTLD_NEXT, "cblas_sgemm");
    next(o, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

void cblas_sgemv(const enum CBLAS_ORDER o, const enum CBLAS_TRANSPOSE t, const blasint m,
                 const blasint n, const float alpha, const float *a, const blasint lda,
                 const float *x, const blasint incx, const float beta, float *y, const blasint incy)
{
    __atomic_add_fetch(&n_sgemv, 1, __ATOMIC_RELAXED);
    sgemv_fn next = (sgemv_fn)dlsym(RTLD_NEXT, "cblas_sgemv");
    next(o, t, m, n, alpha, a, lda, x, incx, beta, y, incy);
}

/* Fills n storage-typed values with a deterministic spread in [-1, 1). */
static void *fill(kt_dtype dtype, size_t n, uint32_t seed)
{
    void *p = malloc(n * kt_dtype_size(dtype) + 1);
    assert_non_null(p);
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        kt_cpu_store1(p, dtype, i, (float)(seed >> 8) / (float)(1u << 24) * 2.0f - 1.0f);
    }
    return p;
}

/* Runs y = x w^T through kt_cpu_blas_gemm and returns the relative L2 error against the
 * float64 product of the same storage-typed values; counts the BLAS calls in *gemm, *gemv. */
static double run_case(kt_backend *b, kt_dtype dtype, int64_t m, int64_t n, int64_t k, int threads,
                       int *gemm, int *gemv, int *flag)
{
    void *x = fill(dtype, (size_t)(m * k), 7u + (uint32_t)k);
    void *w = fill(dtype, (size_t)(n * k), 11u + (uint32_t)n);
    void *y = fill(dtype, (size_t)(m * n), 13u);
    kt_cpu_blas g;
    assert_int_equal(kt_cpu_blas_init(&g, b, dtype, m, n, k), KT_OK);
    *flag = g.gemv;
    n_sgemm = n_sgemv = 0;
    kt_cpu_blas_gemm(&g, y, x, w, threads);
    *gemm = n_sgemm;
    *gemv = n_sgemv;
    double num = 0.0, den = 0.0;
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            double ref = 0.0;
            for (int64_t q = 0; q < k; q++)
                ref += (double)kt_dtype_load(x, dtype, (size_t)(i * k + q)) *
                       (double)kt_dtype_load(w, dtype, (size_t)(j * k + q));
            double d = (double)kt_dtype_load(y, dtype, (size_t)(i * n + j)) - ref;
            num += d * d;
            den += ref * ref;
        }
    kt_cpu_blas_release(&g, b);
    free(x);
    free(w);
    free(y);
    return sqrt(num / (den > 0.0 ? den : 1.0));
}

/* The storage type's rounding of the output bounds the error (fp32: accumulation order). */
static double limit_of(kt_dtype dtype)
{
    return dtype == KT_DTYPE_BF16 ? 8e-3 : dtype == KT_DTYPE_FP16 ? 1e-3 : 1e-5;
}

static void test_batch1_is_gemv_and_correct(void **unused)
{
    (void)unused;
    static const kt_dtype dtypes[] = {KT_DTYPE_FP32, KT_DTYPE_FP16, KT_DTYPE_BF16};
    /* n x k: one column, one row, odd sizes, k past one 16384-float chunk (one row a chunk),
     * n past a chunk of rows with a short last chunk */
    static const int64_t shapes[][2] = {{1, 1},    {67, 1},    {1, 101},  {13, 67},
                                        {301, 97}, {5, 16411}, {1031, 33}};
    static const int threads[] = {1, 3};
    kt_backend *b = NULL;
    assert_int_equal(kt_backend_open(&b, "cpu", 3, 1), KT_OK);
    for (size_t d = 0; d < 3; d++)
        for (size_t s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++)
            for (size_t t = 0; t < 2; t++) {
                int gemm, gemv, flag;
                double err = run_case(b, dtypes[d], 1, shapes[s][0], shapes[s][1], threads[t],
                                      &gemm, &gemv, &flag);
                if (err > limit_of(dtypes[d]) || gemm != 0 || gemv < 1)
                    print_message("%s n=%lld k=%lld threads %d: rel_l2 %.3g, %d sgemm, %d sgemv\n",
                                  kt_dtype_name(dtypes[d]), (long long)shapes[s][0],
                                  (long long)shapes[s][1], threads[t], err, gemm, gemv);
                assert_int_equal(flag, 1);
                assert_int_equal(gemm, 0);
                assert_true(gemv >= 1);
                assert_true(err <= limit_of(dtypes[d]));
            }
    kt_backend_close(b);
}

static void test_batch2_is_gemm(void **unused)
{
    (void)unused;
    kt_backend *b = NULL;
    assert_int_equal(kt_backend_open(&b, "cpu", 2, 1), KT_OK);
    for (int d = 0; d < 3; d++) {
        int gemm, gemv, flag;
        kt_dtype dtype = d == 0 ? KT_DTYPE_FP32 : d == 1 ? KT_DTYPE_FP16 : KT_DTYPE_BF16;
        double err = run_case(b, dtype, 2, 37, 53, 2, &gemm, &gemv, &flag);
        assert_int_equal(flag, 0);
        assert_int_equal(gemm, 1);
        assert_int_equal(gemv, 0);
        assert_true(err <= limit_of(dtype));
    }
    kt_backend_close(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_batch1_is_gemv_and_correct),
        cmocka_unit_test(test_batch2_is_gemm),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
