/* attention_avx512.c - the AVX-512 forms of the split-KV decode step (attention_common.h): 16
 * fp32 lanes, scores of 16 tokens per head from one tree reduction, bf16 widened in
 * KT_ATTN_ORDER_EVENODD32 (a shift and a mask per 32 channels). Every function here carries
 * KT_ATTN_AVX512 and runs only where kt_attn_isa_resolve found AVX-512 (t->wide). */
#include "attention_common.h"

#include <math.h>
#include <string.h>

#define AVX512_INLINE static inline KT_ATTN_AVX512 __attribute__((always_inline))

/* 32 bf16 values from 'src' as fp32: the 16 even channels into *even, the odd into *odd. */
AVX512_INLINE void bf16x32(__m512 *even, __m512 *odd, const uint16_t *src)
{
    __m512i x = _mm512_loadu_si512((const void *)src);
    *even = _mm512_castsi512_ps(_mm512_slli_epi32(x, 16));
    *odd = _mm512_castsi512_ps(_mm512_and_si512(x, _mm512_set1_epi32((int)0xffff0000u)));
}

KT_ATTN_AVX512 void kt_attn_rows_f32_avx512(float *dst, const void *src, kt_dtype dtype,
                                            int64_t rows, int64_t d)
{
    int64_t n = rows * d;
    if (dtype == KT_DTYPE_BF16) {
        for (int64_t i = 0; i < n; i += 32) {
            __m512 e, o;
            bf16x32(&e, &o, (const uint16_t *)src + i);
            _mm512_storeu_ps(dst + i, e);
            _mm512_storeu_ps(dst + i + 16, o);
        }
    } else if (dtype == KT_DTYPE_FP16) {
        for (int64_t i = 0; i < n; i += 16)
            _mm512_storeu_ps(dst + i, _mm512_cvtph_ps(_mm256_loadu_si256(
                                          (const __m256i *)((const uint16_t *)src + i))));
    } else {
        memcpy(dst, src, sizeof(float) * (size_t)n);
    }
    memset(dst + n, 0, sizeof(float) * (size_t)((KT_ATTN_CHUNK - rows) * d));
}

/* Scores of the KT_ATTN_CHUNK (16) key rows 'k' (row stride d) against 'q', one per lane; a tick
 * of 'tr' per 16 channels. */
AVX512_INLINE __m512 dot16(const float *q, const float *k, int64_t d, kt_attn_trickle *tr)
{
    __m512 a[16];
    for (int i = 0; i < 16; i++)
        a[i] = _mm512_setzero_ps();
    for (int64_t c = 0; c < d; c += 16) {
        kt_attn_trickle_tick(tr);
        __m512 qv = _mm512_loadu_ps(q + c);
        for (int r = 0; r < 16; r++)
            a[r] = _mm512_fmadd_ps(qv, _mm512_loadu_ps(k + r * d + c), a[r]);
    }
    return kt_attn_hsum16(a);
}

/* acc[h] += sum_t p[h][t] v[t] for a tile of 'gt' heads and 'cb' vectors of 16 channels at a
 * time (cb even for bf16), values converted from storage type 'dt' as they are loaded (bf16 in
 * EVENODD32 order), a tick of 'tr' per value row: kt_attn_trickle_tick_lines of 'lines' lines
 * where 'lines' > 0 (kt_attn_pv_avx512 says when), else kt_attn_trickle_tick. gt, cb, dt and
 * lines are compile-time constants after inlining. */
AVX512_INLINE void pv_tile(float *acc, const float *p, const void *v, int n, int64_t d,
                           const int gt, const int cb, const int dt, const int lines,
                           kt_attn_trickle *tr)
{
    kt_attn_trickle near = *tr; /* in registers through the loops (lines > 0) */
    for (int64_t c = 0; c < d; c += 16 * cb) {
        __m512 a[4][4];
        for (int h = 0; h < gt; h++)
            for (int j = 0; j < cb; j++)
                a[h][j] = _mm512_loadu_ps(acc + h * d + c + 16 * j);
        for (int t = 0; t < n; t++) {
            if (lines > 0)
                kt_attn_trickle_tick_lines(&near, lines);
            else
                kt_attn_trickle_tick(tr);
            __m512 vt[4];
            for (int j = 0; j < cb; j++) {
                if (dt == KT_DTYPE_BF16 && j % 2 == 0)
                    bf16x32(&vt[j], &vt[j + 1], (const uint16_t *)v + t * d + c + 16 * j);
                else if (dt == KT_DTYPE_FP16)
                    vt[j] = _mm512_cvtph_ps(_mm256_loadu_si256(
                        (const __m256i *)((const uint16_t *)v + t * d + c + 16 * j)));
                else if (dt == KT_DTYPE_FP32)
                    vt[j] = _mm512_loadu_ps((const float *)v + t * d + c + 16 * j);
            }
            for (int h = 0; h < gt; h++) {
                __m512 ph = _mm512_set1_ps(p[h * KT_ATTN_CHUNK + t]);
                for (int j = 0; j < cb; j++)
                    a[h][j] = _mm512_fmadd_ps(ph, vt[j], a[h][j]);
            }
        }
        for (int h = 0; h < gt; h++)
            for (int j = 0; j < cb; j++)
                _mm512_storeu_ps(acc + h * d + c + 16 * j, a[h][j]);
    }
    if (lines > 0)
        *tr = near;
}

/* The vectors of 16 channels pv_gt's tiles take at a time. */
static inline int64_t pv_cb(int64_t d)
{
    return d % 64 == 0 ? 4 : 2;
}

AVX512_INLINE void pv_gt(float *acc, const float *p, const void *v, int n, int64_t d, const int gt,
                         const int dt, const int lines, kt_attn_trickle *tr)
{
    if (pv_cb(d) == 4)
        pv_tile(acc, p, v, n, d, gt, 4, dt, lines, tr);
    else
        pv_tile(acc, p, v, n, d, gt, 2, dt, lines, tr);
}

AVX512_INLINE void pv_dt(float *acc, const float *p, const void *v, int n, int64_t d, int gt,
                         const int dt, const int lines, kt_attn_trickle *tr)
{
    switch (gt) {
    case 1:
        pv_gt(acc, p, v, n, d, 1, dt, lines, tr);
        break;
    case 2:
        pv_gt(acc, p, v, n, d, 2, dt, lines, tr);
        break;
    case 3:
        pv_gt(acc, p, v, n, d, 3, dt, lines, tr);
        break;
    default:
        pv_gt(acc, p, v, n, d, 4, dt, lines, tr);
    }
}

/* Tiles of up to 4 heads by 32 or 64 channels (d % 32 == 0). fp32 values for 5-8 heads (two
 * tiles) with d % 64 == 0 tick 2 lines a row and pass in each tile (kt_attn_trickle_tick_lines),
 * which covers a full chunk's d lines exactly: the arithmetic there is about as long as the
 * memory time, and the loop of kt_attn_trickle_tick was a chain through memory per line. */
KT_ATTN_AVX512 void kt_attn_pv_avx512(kt_attn_task *t, const void *v, kt_dtype dt, int n,
                                      kt_attn_trickle *tr)
{
    int64_t d = t->d;
    int two_lines = dt == KT_DTYPE_FP32 && t->g >= 5 && t->g <= 8 && pv_cb(d) == 4;
    kt_attn_trickle_pace(tr, (t->g + 3) / 4 * (d / (16 * pv_cb(d))) * n);
    for (int64_t h0 = 0; h0 < t->g; h0 += 4) {
        int gt = t->g - h0 < 4 ? (int)(t->g - h0) : 4;
        float *acc = t->acc + h0 * d;
        const float *p = t->p + h0 * KT_ATTN_CHUNK;
        if (dt == KT_DTYPE_BF16)
            pv_dt(acc, p, v, n, d, gt, KT_DTYPE_BF16, 0, tr);
        else if (dt == KT_DTYPE_FP16)
            pv_dt(acc, p, v, n, d, gt, KT_DTYPE_FP16, 0, tr);
        else if (two_lines)
            pv_dt(acc, p, v, n, d, gt, KT_DTYPE_FP32, 2, tr);
        else
            pv_dt(acc, p, v, n, d, gt, KT_DTYPE_FP32, 0, tr);
    }
}

/* The scores of every head against the chunk's 16 rows 'k' into t->p; 'dc' is d where it is a
 * compile-time constant after inlining, so the 16 row offsets need no registers. */
AVX512_INLINE void scores_d(kt_attn_task *t, const float *q, const float *k, const int64_t dc,
                            kt_attn_trickle *tr)
{
    for (int64_t h = 0; h < t->g; h++)
        _mm512_storeu_ps(t->p + h * KT_ATTN_CHUNK, dot16(q + h * dc, k, dc, tr));
}

KT_ATTN_AVX512 void kt_attn_scores_avx512(kt_attn_task *t, const float *k, int k_perm,
                                          kt_attn_trickle *tr)
{
    const float *q = k_perm ? t->qk : t->qs;
    kt_attn_trickle_pace(tr, t->g * (t->d / 16));
    switch (t->d) {
    case 64:
        scores_d(t, q, k, 64, tr);
        break;
    case 128:
        scores_d(t, q, k, 128, tr);
        break;
    case 256:
        scores_d(t, q, k, 256, tr);
        break;
    default:
        scores_d(t, q, k, t->d, tr);
    }
}

KT_ATTN_AVX512 void kt_attn_step_avx512(kt_attn_task *t, const float *k, int k_perm, const void *v,
                                        kt_dtype dtype, int n)
{
    kt_attn_trickle none = kt_attn_trickle_of(NULL, 0);
    kt_attn_scores_avx512(t, k, k_perm, &none);
    kt_attn_softmax_pv_avx512(t, v, dtype, n, &none);
}

/* 'x' (finite, non-negative) rounded to bf16, nearest even, in the low half of each lane. */
AVX512_INLINE __m512i bf16_round(__m512 x)
{
    __m512i i = _mm512_castps_si512(x);
    __m512i odd = _mm512_and_si512(_mm512_srli_epi32(i, 16), _mm512_set1_epi32(1));
    return _mm512_srli_epi32(_mm512_add_epi32(i, _mm512_add_epi32(odd, _mm512_set1_epi32(0x7fff))),
                             16);
}

/* Heads h0..h0+gh-1 (gh <= 16) of kt_attn_softmax_avx512. The running max moves only when a
 * score of the chunk passes it, which after the first chunks is rare, so a compare against it
 * (a broadcast from memory per head) comes first, and the max's reduction tree, the exp2 of
 * alpha and the rescale run only for a chunk where some score is above it. Where none is, the
 * weights are the same 2^(s - m) against the same m, so the result is what the full update
 * gives (alpha is exactly 1 there). */
static KT_ATTN_AVX512 void softmax16(kt_attn_task *t, int64_t h0, int gh, int n, uint16_t *pb)
{
    int64_t d = t->d;
    __mmask16 valid = (__mmask16)((1u << n) - 1u), heads = (__mmask16)((1u << gh) - 1u);
    __m512 ninf = _mm512_set1_ps(-INFINITY), s[16];
    __mmask16 above = 0;
    for (int i = 0; i < 16; i++) {
        s[i] = i < gh ? _mm512_mask_loadu_ps(ninf, valid, t->p + (h0 + i) * KT_ATTN_CHUNK) : ninf;
        if (i < gh) /* not ordered (a NaN) counts as above: the full update then sees it */
            above |= _mm512_cmp_ps_mask(s[i], _mm512_set1_ps(t->m[h0 + i]), _CMP_NLE_UQ);
    }
    __m512 alpha = _mm512_set1_ps(1.0f);
    if (above) {
        __m512 m_old = _mm512_mask_loadu_ps(ninf, heads, t->m + h0);
        __m512 m_new = _mm512_max_ps(m_old, kt_attn_hreduce16(s, 1));
        __mmask16 grew = _mm512_mask_cmp_ps_mask(heads, m_new, m_old, _CMP_GT_OQ);
        /* 1 exactly where the max stayed; 2^-126 (not 0) from -inf, against l = acc = 0 */
        alpha = kt_attn_exp2_512(_mm512_sub_ps(m_old, m_new));
        for (unsigned bits = grew; bits; bits &= bits - 1) {
            int i = __builtin_ctz(bits);
            __m512 av = _mm512_permutexvar_ps(_mm512_set1_epi32(i), alpha);
            float *acc = t->acc + (h0 + i) * d;
            for (int64_t c = 0; c < d; c += 16)
                _mm512_storeu_ps(acc + c, _mm512_mul_ps(av, _mm512_loadu_ps(acc + c)));
        }
        _mm512_mask_storeu_ps(t->m + h0, heads, m_new);
    }
    for (int i = 0; i < 16; i++) {
        if (i >= gh) {
            s[i] = _mm512_setzero_ps();
            continue;
        }
        __m512 mi = _mm512_set1_ps(t->m[h0 + i]);
        __m512 p = _mm512_maskz_mov_ps(valid, kt_attn_exp2_512(_mm512_sub_ps(s[i], mi)));
        if (pb) {
            __m512i b = bf16_round(p);
            _mm256_storeu_si256((__m256i *)(pb + (h0 + i) * KT_ATTN_CHUNK),
                                _mm512_cvtepi32_epi16(b));
            p = _mm512_castsi512_ps(_mm512_slli_epi32(b, 16));
        }
        _mm512_storeu_ps(t->p + (h0 + i) * KT_ATTN_CHUNK, p);
        s[i] = p; /* the scores' vectors now sum the weights */
    }
    __m512 l = _mm512_maskz_loadu_ps(heads, t->l + h0);
    _mm512_mask_storeu_ps(t->l + h0, heads, _mm512_fmadd_ps(l, alpha, kt_attn_hsum16(s)));
}

KT_ATTN_AVX512 void kt_attn_softmax_avx512(kt_attn_task *t, int n, uint16_t *pb)
{
    for (int64_t h0 = 0; h0 < t->g; h0 += 16)
        softmax16(t, h0, t->g - h0 < 16 ? (int)(t->g - h0) : 16, n, pb);
}

KT_ATTN_AVX512 void kt_attn_softmax_pv_avx512(kt_attn_task *t, const void *v, kt_dtype dtype, int n,
                                              kt_attn_trickle *tr)
{
    kt_attn_softmax_avx512(t, n, NULL);
    kt_attn_pv_avx512(t, v, dtype, n, tr);
}
