/* gemm_tolerance.h - the one table of accuracy limits for the GEMM-shaped kernel tests
 * (test_gemm.c, test_swiglu.c).
 *
 * The reference is float64 from the stored inputs, so input rounding costs nothing; what a
 * correct kernel adds is (a) each rounding to the storage type of a result or intermediate,
 * at most one unit roundoff u relative per element (rms about u/3), and (b) fp32
 * accumulation over K terms of random sign, whose relative error grows like 2^-24 sqrt(K).
 * The limit is 2.5x the sum of those bounds: for one rounding fp32 about 1e-6 at K = 100,
 * fp16 1.2e-3, bf16 1e-2 (torch's bf16 rtol is 1.6e-2), 5-10x the error actually measured
 * (rel_l2 near u/2.3 per rounding), while a kernel that drops or repeats one of K terms errs
 * by about 1/sqrt(K) (0.12 at K = 67, 0.03 at K = 896): caught in every dtype at the awkward
 * shapes and in fp32/fp16 at the real ones. */
#ifndef KT_TEST_GEMM_TOLERANCE_H
#define KT_TEST_GEMM_TOLERANCE_H

#include "kernel.h"

#include <math.h>

#define KT_TEST_MIN_COSINE 0.999

/* rel_l2 limit for 'roundings' storage roundings on the path and reductions of depth 'k'. */
static inline double kt_test_rel_l2_limit(kt_dtype dtype, int roundings, int64_t k)
{
    static const struct {
        kt_dtype dtype;
        double u; /* unit roundoff of the storage type */
    } table[] = {
        {KT_DTYPE_FP32, 0x1p-24},
        {KT_DTYPE_FP16, 0x1p-11},
        {KT_DTYPE_BF16, 0x1p-8},
    };
    double u = 0x1p-24;
    for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
        if (table[i].dtype == dtype)
            u = table[i].u;
    return 2.5 * (roundings * u + 0x1p-24 * sqrt((double)k));
}

#endif
