/* attention_dense_bf16.c - dense decode's score path for bf16 keys on CPUs with AVX-512 BF16:
 * q . k straight from the stored keys with vdpbf16ps (32 products per instruction, fp32
 * accumulation), instead of widening every key row to fp32 first. The query is rounded to bf16
 * once per task (nearest even), which is the one numerical difference from the fp32 score
 * path; the softmax and P V are the AVX-512 ones (kt_attn_softmax_pv_avx512). */
#include "attention_dense_bf16.h"

#include <string.h>

#define KT_ATTN_AVX512BF16                                                                         \
    __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx512bf16,fma,f16c")))

int kt_attn_bf16_dot_supported(void)
{
    return __builtin_cpu_supports("avx512bf16");
}

size_t kt_attn_bf16_dot_extra_bytes(int64_t g, int64_t d)
{
    /* the query heads in bf16, then a zero-padded chunk of key rows for a range's tail */
    return (size_t)((g + KT_ATTN_CHUNK) * d) * sizeof(uint16_t) + 64;
}

/* Scores of the KT_ATTN_CHUNK key rows 'k' (bf16, row stride d) against the bf16 query 'q', one
 * per lane, summed as dot16 in attention_avx512.c sums them. */
static inline KT_ATTN_AVX512BF16 __attribute__((always_inline)) __m512
dot16_bf16(const uint16_t *q, const uint16_t *k, int64_t d)
{
    __m512 a[16];
    for (int i = 0; i < 16; i++)
        a[i] = _mm512_setzero_ps();
    for (int64_t c = 0; c < d; c += 32) {
        __m512bh qv = (__m512bh)_mm512_loadu_si512((const void *)(q + c));
        for (int r = 0; r < 16; r++) {
            __m512bh kv = (__m512bh)_mm512_loadu_si512((const void *)(k + r * d + c));
            a[kt_attn_slot16(r)] = _mm512_dpbf16_ps(a[kt_attn_slot16(r)], qv, kv);
        }
    }
    return kt_attn_hsum16(a);
}

KT_ATTN_AVX512BF16 void kt_attn_dense_range_bf16_dot(kt_attn_task *t, const uint16_t *k,
                                                     const uint16_t *v, int64_t t0, int64_t t1)
{
    int64_t g = t->g, d = t->d;
    uint16_t *qb = (uint16_t *)(((uintptr_t)t->extra + 63) & ~(uintptr_t)63);
    uint16_t *tail = qb + g * d;
    for (int64_t i = 0; i < g * d; i += 32) {
        __m512bh r =
            _mm512_cvtne2ps_pbh(_mm512_loadu_ps(t->qs + i + 16), _mm512_loadu_ps(t->qs + i));
        _mm512_storeu_si512((void *)(qb + i), (__m512i)r);
    }
    size_t row_bytes = (size_t)d * sizeof(uint16_t);
    for (int64_t s = t0; s < t1; s += KT_ATTN_CHUNK) {
        int n = t1 - s < KT_ATTN_CHUNK ? (int)(t1 - s) : KT_ATTN_CHUNK;
        kt_attn_prefetch_ahead(k, v, row_bytes, s, t1);
        const uint16_t *ks = k + s * d;
        if (n < KT_ATTN_CHUNK) { /* rows past the range may lie past the tensor */
            memcpy(tail, ks, row_bytes * (size_t)n);
            memset(tail + n * d, 0, row_bytes * (size_t)(KT_ATTN_CHUNK - n));
            ks = tail;
        }
        for (int64_t h = 0; h < g; h++)
            _mm512_storeu_ps(t->p + h * KT_ATTN_CHUNK, dot16_bf16(qb + h * d, ks, d));
        kt_attn_softmax_pv_avx512(t, v + s * d, KT_DTYPE_BF16, n);
    }
}
