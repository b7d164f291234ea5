/* decoder_simd.h - private to kernels/cpu: the AVX2 helpers the decoder_layer's own kernels
 * share (decode attention, causal prefill attention, the GEMV). */
#ifndef KT_DECODER_SIMD_H
#define KT_DECODER_SIMD_H

#include "cpu_gemm.h"
#include "simd_reduce.h"

#include <math.h>
#include <string.h>

/* 2^x for x <= 0 (and -inf), fp32, relative error ~1e-7: x = i + f with |f| <= 1/2, a degree-6
 * Taylor polynomial of 2^f, and i placed into the exponent bits. Vectorises. */
static inline float kt_dls_exp2_neg(float x)
{
    x = x < -126.0f ? -126.0f : x;
    float i = rintf(x), f = x - i;
    float p = 1.5403530e-4f;
    p = p * f + 1.3333558e-3f;
    p = p * f + 9.6181291e-3f;
    p = p * f + 5.5504109e-2f;
    p = p * f + 2.4022651e-1f;
    p = p * f + 6.9314718e-1f;
    p = p * f + 1.0f;
    int32_t bits = ((int32_t)i + 127) << 23;
    float s;
    memcpy(&s, &bits, sizeof(s));
    return p * s;
}

/* Loads token row 'at' (d values) of a storage-typed cache as fp32. */
static inline void kt_dls_load_row(float *dst, const void *src, kt_dtype dt, size_t at, int64_t d)
{
    int64_t c = 0;
    for (; c + 8 <= d; c += 8)
        _mm256_storeu_ps(dst + c, kt_cpu_load8(src, dt, at + (size_t)c));
    for (; c < d; c++)
        dst[c] = kt_cpu_load1(src, dt, at + (size_t)c);
}

static inline float kt_dls_dot(const float *a, const float *b, int64_t d)
{
    __m256 acc = _mm256_setzero_ps();
    int64_t c = 0;
    for (; c + 8 <= d; c += 8)
        acc = _mm256_fmadd_ps(_mm256_loadu_ps(a + c), _mm256_loadu_ps(b + c), acc);
    float s = kt_hsum8(acc);
    for (; c < d; c++)
        s += a[c] * b[c];
    return s;
}

/* out[j] = q[j] . k for the 4 query rows at q (stride d): one horizontal reduction for all 4. */
static inline void kt_dls_dot4(float *out, const float *q, const float *k, int64_t d)
{
    __m256 a[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(),
                   _mm256_setzero_ps()};
    int64_t c = 0;
    for (; c + 8 <= d; c += 8) {
        __m256 kv = _mm256_loadu_ps(k + c);
        for (int j = 0; j < 4; j++)
            a[j] = _mm256_fmadd_ps(_mm256_loadu_ps(q + j * d + c), kv, a[j]);
    }
    __m256 s = _mm256_hadd_ps(_mm256_hadd_ps(a[0], a[1]), _mm256_hadd_ps(a[2], a[3]));
    _mm_storeu_ps(out, _mm_add_ps(_mm256_castps256_ps128(s), _mm256_extractf128_ps(s, 1)));
    for (; c < d; c++)
        for (int j = 0; j < 4; j++)
            out[j] += q[j * d + c] * k[c];
}

#endif
