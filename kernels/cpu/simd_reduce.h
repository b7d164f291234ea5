/* simd_reduce.h - private to kernels/cpu: the horizontal sum and maximum of an AVX2 vector of
 * 8 floats, shared by the attention and decoder_layer kernels. */
#ifndef KT_SIMD_REDUCE_H
#define KT_SIMD_REDUCE_H

#include <immintrin.h>

static inline float kt_hsum8(__m256 v)
{
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

static inline float kt_hmax8(__m256 v)
{
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    m = _mm_max_ss(m, _mm_movehdup_ps(m));
    return _mm_cvtss_f32(m);
}

#endif
