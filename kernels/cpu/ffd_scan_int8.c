/* ffd_scan_int8.c - FFD block selection on int8 dot products with an exact fallback bound
 * (see ffd_scan_int8.h for the arithmetic). */
#include "ffd_scan_int8.h"

#include <immintrin.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#define KT_VNNI     __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni")))
#define VNNI_INLINE static inline KT_VNNI __attribute__((always_inline))

int kt_ffd_int8_supported(void)
{
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni");
}

int kt_ffd_int8_shape_ok(const kt_ffd_cache *c)
{
    return c->head_dim % 16 == 0 && c->block % 16 == 0;
}

void kt_ffd_codes_transpose(uint32_t *dst, const kt_ffd_cache *c)
{
    int64_t groups = c->head_dim / 16, row = c->head_dim / 4;
    int64_t nb = c->batch * c->kv_heads * c->n_full;
    for (int64_t i = 0; i < nb; i++) {
        const uint8_t *src = c->codes + i * c->block * row;
        uint32_t *out = dst + i * c->block * groups;
        for (int64_t q = 0; q < groups; q++)
            for (int64_t t = 0; t < c->block; t++)
                memcpy(out + q * c->block + t, src + t * row + 4 * q, sizeof(uint32_t));
    }
}

/* Scratch: int8 weights [g][d / 4] words, then keep_at [g] and drop_below [g]. */
size_t kt_ffd_int8_scratch_bytes(int64_t g, int64_t d)
{
    return sizeof(int32_t) * (size_t)(g * d / 4 + 2 * g);
}

static int32_t to_int32(double x, int32_t if_nan)
{
    if (isnan(x))
        return if_nan;
    return x >= 2147483647.0 ? INT32_MAX : x <= -2147483648.0 ? INT32_MIN : (int32_t)x;
}

/* The int8 weights of heads h0..h0+n-1 (n <= 16) of one block into 'wd' (d / 4 words a head:
 * word 4q + m holds channels 16q + 4j + m, j = 0..3, as vpdpbusd pairs them with plane m of
 * the codes' word q), and the integer bounds on S of each head: keep_at (S >= it: the float
 * score certainly reaches 'thr') and drop_below (S < it: the float score certainly stays below
 * 'thr'). The heads' largest |w| come first so that their steps take one vector division
 * instead of a scalar one each; the bounds multiply by that reciprocal rather than divide by
 * the step: its relative error (about 1e-7) is far inside the slack, whose part
 * 1e-4 |thr| / step already exceeds 1e-7 |thr + E| / step. */
static KT_VNNI void heads_weights(uint32_t *wd, int32_t *keep_at, int32_t *drop_below,
                                  const float *qs, const float *scale, const float *thr, int64_t n,
                                  int64_t d)
{
    float amax[16], steps[16], invs[16];
    for (int64_t h = 0; h < 16; h++) {
        __m512 m = _mm512_setzero_ps();
        for (int64_t c = 0; h < n && c < d; c += 16)
            m = _mm512_max_ps(m, _mm512_abs_ps(_mm512_mul_ps(_mm512_loadu_ps(qs + h * d + c),
                                                             _mm512_loadu_ps(scale + c))));
        amax[h] = h < n ? _mm512_reduce_max_ps(m) : 1.0f;
    }
    __m512 a = _mm512_loadu_ps(amax);
    __mmask16 live = _mm512_cmp_ps_mask(a, _mm512_set1_ps(1e-30f), _CMP_GT_OQ);
    __m512 step = _mm512_mask_div_ps(_mm512_set1_ps(1.0f), live, a, _mm512_set1_ps(127.0f));
    _mm512_storeu_ps(steps, step);
    _mm512_storeu_ps(invs, _mm512_div_ps(_mm512_set1_ps(1.0f), step));
    const __m128i order = _mm_setr_epi8(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
    for (int64_t h = 0; h < n; h++) {
        const __m512 inv = _mm512_set1_ps(invs[h]), stepv = _mm512_set1_ps(steps[h]);
        __m512 wsum = _mm512_setzero_ps(), err = _mm512_setzero_ps();
        for (int64_t c = 0; c < d; c += 16) {
            __m512 w = _mm512_mul_ps(_mm512_loadu_ps(qs + h * d + c), _mm512_loadu_ps(scale + c));
            /* round to nearest even; |w| * inv <= 127 up to rounding, so the result fits int8 */
            __m512i wi = _mm512_cvtps_epi32(_mm512_mul_ps(w, inv));
            __m512 wf = _mm512_cvtepi32_ps(wi); /* exact: |wi| <= 128 */
            wsum = _mm512_add_ps(wsum, wf);     /* exact: integers below 2^24 */
            err = _mm512_add_ps(err, _mm512_abs_ps(_mm512_fnmadd_ps(stepv, wf, w)));
            __m128i bytes = _mm_shuffle_epi8(_mm512_cvtepi32_epi8(wi), order);
            _mm_storeu_si128((__m128i *)(wd + h * (d / 4) + c / 4), bytes);
        }
        /* E, plus a slack for the float scan's own rounding (relative 1e-4 of the largest
         * magnitudes it sums) */
        double t = (double)thr[h], is = (double)invs[h];
        double e = 1.5 * (double)_mm512_reduce_add_ps(err) +
                   1e-4 * (3.0 * (double)d * (double)amax[h] + fabs(t)) + 1e-6;
        double base = 1.5 * (double)_mm512_reduce_add_ps(wsum);
        keep_at[h] = to_int32(ceil((t + e) * is + base), INT32_MAX);
        drop_below[h] = to_int32(ceil((t - e) * is + base), INT32_MIN);
    }
}

/* The largest S of each of gt (<= 8) heads over the block's 'block' tokens: 'tv' vectors of 16
 * tokens at a time, so that tv * gt accumulators hide vpdpbusd's latency. 'ct' is the block's
 * transposed codes, 'wd' the heads' weights ([gt][d / 4] words). */
VNNI_INLINE void scan_tile(int32_t *smax, const uint32_t *ct, int64_t block, int64_t d,
                           const uint32_t *wd, const int gt, const int tv)
{
    const __m512i m3 = _mm512_set1_epi8(3);
    __m512i best[8];
    for (int h = 0; h < 8; h++)
        best[h] = _mm512_set1_epi32(INT32_MIN);
    int64_t nv = block / 16, words = d / 4;
    for (int64_t v0 = 0; v0 < nv; v0 += tv) {
        __m512i acc[8][8];
        for (int u = 0; u < tv; u++)
            for (int h = 0; h < gt; h++)
                acc[u][h] = _mm512_setzero_si512();
        for (int64_t q = 0; q < d / 16; q++) {
#pragma GCC unroll 8
            for (int u = 0; u < tv; u++) {
                int64_t vi = v0 + u < nv ? v0 + u : nv - 1; /* a repeated vector: same max */
                __m512i x = _mm512_loadu_si512((const void *)(ct + q * block + vi * 16));
                __m512i pl[4] = {_mm512_and_si512(x, m3),
                                 _mm512_and_si512(_mm512_srli_epi16(x, 2), m3),
                                 _mm512_and_si512(_mm512_srli_epi16(x, 4), m3),
                                 _mm512_and_si512(_mm512_srli_epi16(x, 6), m3)};
#pragma GCC unroll 8
                for (int h = 0; h < gt; h++)
#pragma GCC unroll 4
                    for (int m = 0; m < 4; m++)
                        acc[u][h] = _mm512_dpbusd_epi32(
                            acc[u][h], pl[m], _mm512_set1_epi32((int)wd[h * words + 4 * q + m]));
            }
        }
        for (int u = 0; u < tv; u++)
            for (int h = 0; h < gt; h++)
                best[h] = _mm512_max_epi32(best[h], acc[u][h]);
    }
    for (int h = 0; h < gt; h++)
        smax[h] = _mm512_reduce_max_epi32(best[h]);
}

static KT_VNNI void scan_heads(int32_t *smax, const uint32_t *ct, int64_t block, int64_t d,
                               const uint32_t *wd, int gt)
{
    switch (gt) {
    case 1:
        scan_tile(smax, ct, block, d, wd, 1, 8);
        break;
    case 2:
        scan_tile(smax, ct, block, d, wd, 2, 4);
        break;
    case 3:
        scan_tile(smax, ct, block, d, wd, 3, 2);
        break;
    case 4:
        scan_tile(smax, ct, block, d, wd, 4, 2);
        break;
    case 5:
        scan_tile(smax, ct, block, d, wd, 5, 2);
        break;
    case 6:
        scan_tile(smax, ct, block, d, wd, 6, 2);
        break;
    case 7:
        scan_tile(smax, ct, block, d, wd, 7, 2);
        break;
    default:
        scan_tile(smax, ct, block, d, wd, 8, 2);
    }
}

int kt_ffd_block_int8(const uint32_t *codes_t, const kt_ffd_cache *c, int64_t blk, const float *qs,
                      const float *thr, int64_t g, void *scratch)
{
    int64_t d = c->head_dim, words = d / 4;
    uint32_t *wd = scratch;
    int32_t *keep_at = (int32_t *)(wd + g * words), *drop_below = keep_at + g;
    const float *scale = c->scales + blk * d;
    for (int64_t h = 0; h < g; h += 16)
        heads_weights(wd + h * words, keep_at + h, drop_below + h, qs + h * d, scale, thr + h,
                      g - h < 16 ? g - h : 16, d);
    const uint32_t *ct = codes_t + blk * c->block * (d / 16);
    int unsure = 0;
    for (int64_t h0 = 0; h0 < g; h0 += 8) {
        int gt = g - h0 < 8 ? (int)(g - h0) : 8;
        int32_t smax[8];
        scan_heads(smax, ct, c->block, d, wd + h0 * words, gt);
        for (int h = 0; h < gt; h++) {
            if (smax[h] >= keep_at[h0 + h])
                return 1;
            if (smax[h] >= drop_below[h0 + h])
                unsure = 1;
        }
    }
    return unsure ? -1 : 0;
}
