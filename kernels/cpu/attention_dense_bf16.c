/* attention_dense_bf16.c - dense decode over bf16 K and V on CPUs with AVX-512 BF16, by
 * vdpbf16ps (32 products per instruction, fp32 accumulation) instead of widening K and V rows
 * to fp32 first.
 *
 * Scores: q . k straight from the stored keys, against the query rounded to bf16 once per task
 * (nearest even). kt_attn_dense_range_bf16_dot stops there and takes the AVX-512 softmax and
 * P V (kt_attn_softmax_pv_avx512); kt_attn_dense_range_bf16_pv also computes P V by
 * vdpbf16ps: the weights of a chunk are rounded to bf16, and two value rows interleaved by
 * vpunpck{l,h}wd meet a pair of weights, so one instruction adds two tokens' worth of 16
 * channels for one head. The running sum l adds the rounded weights, so the output stays a
 * convex combination of the value rows (attention_dense_bf16_pv.c, where the scores are laid
 * out by head instead). */
#include "attention_dense_bf16.h"

#include <math.h>
#include <string.h>

int kt_attn_bf16_dot_supported(void)
{
    return __builtin_cpu_supports("avx512bf16");
}

size_t kt_attn_bf16_dot_extra_bytes(int64_t g, int64_t d)
{
    /* the query heads in bf16 (in head lanes, up to 7 heads of padding), zero-padded chunks of
     * key and value rows for a range's tail, then the chunk's weights in bf16 (as many), and
     * room to align the first and the last to 64 bytes */
    int64_t heads = g + 7;
    return (size_t)((heads + 2 * KT_ATTN_CHUNK) * d + heads * KT_ATTN_CHUNK) * sizeof(uint16_t) +
           128;
}

/* Scores of the KT_ATTN_CHUNK key rows 'k' (bf16, row stride d) against the bf16 query 'q', one
 * per lane, summed as dot16 in attention_avx512.c sums them; a tick of 'tr' per 32 channels. */
static inline KT_ATTN_AVX512BF16 __attribute__((always_inline)) __m512
dot16_bf16(const uint16_t *q, const uint16_t *k, int64_t d, kt_attn_trickle *tr)
{
    __m512 a[16];
    for (int i = 0; i < 16; i++)
        a[i] = _mm512_setzero_ps();
    for (int64_t c = 0; c < d; c += 32) {
        kt_attn_trickle_tick(tr);
        __m512bh qv = (__m512bh)_mm512_loadu_si512((const void *)(q + c));
        for (int r = 0; r < 16; r++) {
            __m512bh kv = (__m512bh)_mm512_loadu_si512((const void *)(k + r * d + c));
            a[r] = _mm512_dpbf16_ps(a[r], qv, kv);
        }
    }
    return kt_attn_hsum16(a);
}

/* The query of the task's g heads rounded to bf16 into the 64-byte aligned start of t->extra;
 * returns it. */
static KT_ATTN_AVX512BF16 uint16_t *query_bf16(kt_attn_task *t)
{
    uint16_t *qb = (uint16_t *)(((uintptr_t)t->extra + 63) & ~(uintptr_t)63);
    for (int64_t i = 0; i < t->g * t->d; i += 32) {
        __m512bh r =
            _mm512_cvtne2ps_pbh(_mm512_loadu_ps(t->qs + i + 16), _mm512_loadu_ps(t->qs + i));
        _mm512_storeu_si512((void *)(qb + i), (__m512i)r);
    }
    return qb;
}

const uint16_t *kt_attn_bf16_chunk_rows(uint16_t *tail, const uint16_t *src, int n, int64_t d)
{
    if (n == KT_ATTN_CHUNK)
        return src;
    size_t row_bytes = (size_t)d * sizeof(uint16_t);
    memcpy(tail, src, row_bytes * (size_t)n);
    memset(tail + n * d, 0, row_bytes * (size_t)(KT_ATTN_CHUNK - n));
    return tail;
}

/* Scores of the 8 key rows 'k' (bf16, row stride d) against the bf16 queries 'q0' and 'q1' of
 * two heads: lanes 0-7 for q0, 8-15 for q1, summed as dot16_bf16 sums them. Each key vector is
 * loaded once for both heads, so a pair of heads costs half the key loads of two dot16_bf16. A
 * tick of 'tr' per 32 channels. */
static inline KT_ATTN_AVX512BF16 __attribute__((always_inline)) __m512
dot8x2_bf16(const uint16_t *q0, const uint16_t *q1, const uint16_t *k, int64_t d,
            kt_attn_trickle *tr)
{
    __m512 a[16];
    for (int i = 0; i < 16; i++)
        a[i] = _mm512_setzero_ps();
    for (int64_t c = 0; c < d; c += 32) {
        kt_attn_trickle_tick(tr);
        __m512bh x0 = (__m512bh)_mm512_loadu_si512((const void *)(q0 + c));
        __m512bh x1 = (__m512bh)_mm512_loadu_si512((const void *)(q1 + c));
        for (int r = 0; r < 8; r++) {
            __m512bh kv = (__m512bh)_mm512_loadu_si512((const void *)(k + r * d + c));
            a[r] = _mm512_dpbf16_ps(a[r], x0, kv);
            a[8 + r] = _mm512_dpbf16_ps(a[8 + r], x1, kv);
        }
    }
    return kt_attn_hsum16(a);
}

/* The scores of the chunk's 16 rows 'k' for every head into t->p, heads in pairs (then the odd
 * one alone), ticking 'tr' through the loops; 'dc' is d where it is a compile-time constant after
 * inlining (the row offsets then need no registers). */
static inline KT_ATTN_AVX512BF16 __attribute__((always_inline)) void
scores_d(kt_attn_task *t, const uint16_t *qb, const uint16_t *k, const int64_t dc,
         kt_attn_trickle *tr)
{
    kt_attn_trickle_pace(tr, t->g * (dc / 32));
    int64_t h = 0;
    for (; h + 2 <= t->g; h += 2) {
        float *p0 = t->p + h * KT_ATTN_CHUNK, *p1 = p0 + KT_ATTN_CHUNK;
        for (int r0 = 0; r0 < KT_ATTN_CHUNK; r0 += 8) {
            __m512 s = dot8x2_bf16(qb + h * dc, qb + (h + 1) * dc, k + r0 * dc, dc, tr);
            _mm256_storeu_ps(p0 + r0, _mm512_castps512_ps256(s));
            _mm256_storeu_ps(p1 + r0, _mm512_extractf32x8_ps(s, 1));
        }
    }
    for (; h < t->g; h++)
        _mm512_storeu_ps(t->p + h * KT_ATTN_CHUNK, dot16_bf16(qb + h * dc, k, dc, tr));
}

static KT_ATTN_AVX512BF16 void scores(kt_attn_task *t, const uint16_t *qb, const uint16_t *k,
                                      kt_attn_trickle *tr)
{
    switch (t->d) {
    case 64:
        scores_d(t, qb, k, 64, tr);
        break;
    case 128:
        scores_d(t, qb, k, 128, tr);
        break;
    case 256:
        scores_d(t, qb, k, 256, tr);
        break;
    default:
        scores_d(t, qb, k, t->d, tr);
    }
}

KT_ATTN_AVX512BF16 void kt_attn_dense_range_bf16_dot(kt_attn_task *t, const uint16_t *k,
                                                     const uint16_t *v, int64_t t0, int64_t t1)
{
    uint16_t *qb = query_bf16(t), *ktail = qb + t->g * t->d;
    size_t row_bytes = (size_t)t->d * sizeof(uint16_t);
    for (int64_t s = t0; s < t1; s += KT_ATTN_CHUNK) {
        int n = t1 - s < KT_ATTN_CHUNK ? (int)(t1 - s) : KT_ATTN_CHUNK;
        kt_attn_spread sp = kt_attn_spread_at(k, v, row_bytes, s, t1);
        kt_attn_trickle tr;
        kt_attn_spread_stage(&sp, KT_ATTN_BEFORE_SCORES, &tr);
        scores(t, qb, kt_attn_bf16_chunk_rows(ktail, k + s * t->d, n, t->d), &tr);
        kt_attn_spread_stage(&sp, KT_ATTN_AFTER_SCORES, &tr);
        kt_attn_spread_stage(&sp, KT_ATTN_BEFORE_PV, &tr);
        kt_attn_softmax_pv_avx512(t, v + s * t->d, KT_DTYPE_BF16, n, &tr);
        kt_attn_spread_stage(&sp, KT_ATTN_AFTER_PV, &tr);
    }
}
