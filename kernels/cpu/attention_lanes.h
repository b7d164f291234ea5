/* attention_lanes.h - private to the CPU attention kernels: scores and softmax in head lanes.
 *
 * A vector of 16 fp32 lanes holds a tile of 16 / s heads, s lanes ("slots") per head: s = 2
 * for groups of 5-8 heads (and tiles of 8 beyond), 4 for 3-4, 8 for 2, 16 for 1. The query is
 * laid out so that step j of the scores is one vector of every head's next channels in its
 * slots, and a key row's same channels, broadcast to every head, meet the whole tile in one
 * instruction: the 16 tokens of a chunk take 16 accumulators and no reduction tree per head.
 * Folding each head's slots (log2(s) levels, two tokens' vectors into one each) leaves 16 / s
 * vectors whose lane h s + i is the score of head h and token s u + i. The softmax works on
 * those vectors as they are (attention_dense_bf16_pv.c for bf16 keys by vdpbf16ps,
 * attention_f32_lanes.c for keys in fp32). */
#ifndef KT_ATTENTION_LANES_H
#define KT_ATTENTION_LANES_H

#include "attention_common.h"

#include <math.h>

#define KT_LANES_INLINE static inline KT_ATTN_AVX512 __attribute__((always_inline))

/* Slots per head of a group of 'g' heads. */
static inline int kt_lanes_slots(int64_t g)
{
    return g >= 5 ? 2 : g >= 3 ? 4 : g == 2 ? 8 : 16;
}

/* The largest group whose fp32 keys take head lanes (attention_f32_lanes.c). Beyond it every
 * tile re-reads the chunk's key rows as broadcasts, and warm that was slower than a tree per head:
 * groups 12, 13, 16 and 17 by 1%, 8%, 6% and 18% (groups 1-8: 0-11% faster). */
#define KT_LANES_F32_MAX_GROUP 8

/* Lane i of the result: x[i] + x[i + w] where lane i has bit w clear, y[i - w] + y[i] where it
 * has it set (w a power of two below 16, a compile-time constant after inlining). */
KT_LANES_INLINE __m512 kt_lanes_fold(__m512 x, __m512 y, const int w)
{
    int idx[16];
    __mmask16 upper = 0;
    for (int i = 0; i < 16; i++) {
        idx[i] = i & w ? 16 + i - w : i + w;
        upper |= (__mmask16)((i & w ? 1u : 0u) << i);
    }
    __m512i ix = _mm512_loadu_si512((const void *)idx);
    return _mm512_add_ps(_mm512_mask_blend_ps(upper, x, y), _mm512_permutex2var_ps(x, ix, y));
}

/* Folds the 16 per-token accumulators 'a' of a chunk (lane h s + slot) into y[0 .. 16 / s). */
KT_LANES_INLINE void kt_lanes_fold_tokens(__m512 *a, const int s, __m512 *y)
{
    int n = 16;
#pragma GCC unroll 4
    for (int w = 1; w < s; w *= 2, n /= 2)
#pragma GCC unroll 8
        for (int i = 0; i < n / 2; i++)
            a[i] = kt_lanes_fold(a[2 * i], a[2 * i + 1], w);
    for (int u = 0; u < 16 / s; u++)
        y[u] = a[u];
}

/* 'x' with each lane replaced by the maximum (or sum) of its head's s lanes. */
KT_LANES_INLINE __m512 kt_lanes_across(__m512 x, const int s, const int max)
{
    const __m512i lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    for (int w = 1; w < s; w *= 2) {
        __m512 o = _mm512_permutexvar_ps(_mm512_xor_si512(lane, _mm512_set1_epi32(w)), x);
        x = max ? _mm512_max_ps(x, o) : _mm512_add_ps(x, o);
    }
    return x;
}

/* The slow part of kt_lanes_weights, for a chunk with a score above its head's running max
 * 'mv' (head lanes): raises m to the chunk's max, scales l and acc by 2^(m_old - m_new) where
 * it grew, and returns the new m in head lanes. */
static KT_ATTN_AVX512 __attribute__((noinline, unused)) __m512
kt_lanes_raise_max(kt_attn_task *t, int64_t h0, int gt, int s, const __m512 *y,
                   const __mmask16 *valid, __m512 mv)
{
    const __m512i lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    __m512 ninf = _mm512_set1_ps(-INFINITY), mx = ninf;
    for (int u = 0; u < 16 / s; u++)
        mx = _mm512_max_ps(mx, _mm512_mask_mov_ps(ninf, valid[u], y[u]));
    for (int w = 1; w < s; w *= 2)
        mx = _mm512_max_ps(mx,
                           _mm512_permutexvar_ps(_mm512_xor_si512(lane, _mm512_set1_epi32(w)), mx));
    float m_new[16];
    _mm512_storeu_ps(m_new, _mm512_max_ps(mv, mx));
    for (int h = 0; h < gt; h++) {
        float old = t->m[h0 + h], now = m_new[h * s];
        if (!(now > old))
            continue;
        /* 2^-126 (not 0) from -inf, against l = acc = 0 */
        float alpha = _mm512_cvtss_f32(kt_attn_exp2_512(_mm512_set1_ps(old - now)));
        float *acc = t->acc + (h0 + h) * t->d;
        __m512 av = _mm512_set1_ps(alpha);
        for (int64_t c = 0; c < t->d; c += 16)
            _mm512_storeu_ps(acc + c, _mm512_mul_ps(av, _mm512_loadu_ps(acc + c)));
        t->l[h0 + h] *= alpha;
        t->m[h0 + h] = now;
    }
    __m512i head = _mm512_srli_epi32(lane, __builtin_ctz((unsigned)s));
    return _mm512_permutexvar_ps(head,
                                 _mm512_maskz_loadu_ps((__mmask16)((1u << gt) - 1u), t->m + h0));
}

/* 2^x for weights that are rounded to bf16 next (relative error 1.0e-4, against 2^-9 for the
 * rounding): a cubic on [-0.5, 0.5] (a weighted least-squares fit of the relative error) and
 * vscalefps, where kt_attn_exp2_512 takes a degree-6 polynomial and an exponent built by hand,
 * 13 instructions against 8. x below -126 gives 2^-126, as there. */
KT_LANES_INLINE __m512 kt_lanes_exp2_bf16(__m512 x)
{
    x = _mm512_max_ps(x, _mm512_set1_ps(-126.0f));
    __m512 fi = _mm512_roundscale_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 f = _mm512_sub_ps(x, fi);
    __m512 p = _mm512_fmadd_ps(_mm512_set1_ps(0.05500874f), f, _mm512_set1_ps(0.24221113f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(0.69328297f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.0f));
    return _mm512_scalef_ps(p, fi);
}

/* The online-softmax weights of heads h0 .. h0 + gt - 1 (one tile) from their scores 'y' (in
 * log2 units) of the chunk's first 'n' tokens: p[u] = 2^(y[u] - m) in the same lanes, 0 where
 * the head or token is missing; 'bf16' (a compile-time constant): the caller rounds them to
 * bf16, so kt_lanes_exp2_bf16 serves. The running max is compared with every score first (a
 * broadcast from memory per head); only a chunk with a score above it pays for the chunk's
 * max, the exp2 of alpha and the rescale of acc and l (kt_lanes_raise_max). Where none is, the
 * weights are the same 2^(s - m) against the same m, so the result is what the full update
 * gives (alpha is exactly 1 there). The caller adds the weights to l (kt_lanes_add_l). */
KT_LANES_INLINE void kt_lanes_weights(kt_attn_task *t, int64_t h0, int gt, const int s,
                                      const __m512 *y, int n, const int bf16, __m512 *p)
{
    const int log2s = s == 2 ? 1 : s == 4 ? 2 : s == 8 ? 3 : 4;
    const __m512i lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    __m512i head = _mm512_srli_epi32(lane, log2s);
    __m512i slot = _mm512_and_si512(lane, _mm512_set1_epi32(s - 1));
    __mmask16 hm = (__mmask16)((1u << gt) - 1u);
    __mmask16 heads = _mm512_cmplt_epi32_mask(head, _mm512_set1_epi32(gt)), valid[16], above = 0;
    __m512 mv = _mm512_permutexvar_ps(head, _mm512_maskz_loadu_ps(hm, t->m + h0));
    for (int u = 0; u < 16 / s; u++) {
        valid[u] = n == KT_ATTN_CHUNK
                       ? heads
                       : _mm512_mask_cmplt_epi32_mask(heads, slot, _mm512_set1_epi32(n - s * u));
        /* not ordered (a NaN) counts as above: kt_lanes_raise_max then sees it */
        above |= _mm512_mask_cmp_ps_mask(valid[u], y[u], mv, _CMP_NLE_UQ);
    }
    if (above)
        mv = kt_lanes_raise_max(t, h0, gt, s, y, valid, mv);
    for (int u = 0; u < 16 / s; u++)
        p[u] = _mm512_maskz_mov_ps(valid[u], bf16 ? kt_lanes_exp2_bf16(_mm512_sub_ps(y[u], mv))
                                                  : kt_attn_exp2_512(_mm512_sub_ps(y[u], mv)));
}

/* l[h0 + h] += the sum of head h's lanes of 'lsum', for the tile's 'gt' heads. */
KT_LANES_INLINE void kt_lanes_add_l(kt_attn_task *t, int64_t h0, int gt, const int s, __m512 lsum)
{
    const int log2s = s == 2 ? 1 : s == 4 ? 2 : s == 8 ? 3 : 4;
    const __m512i lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    __mmask16 hm = (__mmask16)((1u << gt) - 1u);
    lsum = _mm512_permutexvar_ps(_mm512_slli_epi32(lane, log2s), kt_lanes_across(lsum, s, 0));
    _mm512_mask_storeu_ps(t->l + h0, hm, _mm512_add_ps(_mm512_maskz_loadu_ps(hm, t->l + h0), lsum));
}

#endif
