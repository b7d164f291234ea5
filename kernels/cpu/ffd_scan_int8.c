/* ffd_scan_int8.c - FFD block selection on int8 dot products with an exact fallback bound
 * (see ffd_scan_int8.h for the arithmetic). */
#include "ffd_scan_int8.h"

#include "attention_common.h"

#include <immintrin.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

/* a superset of KT_ATTN_AVX512, so that its helpers (kt_attn_hreduce16) inline here */
#define KT_VNNI     __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx512vnni,fma,f16c")))
#define VNNI_INLINE static inline KT_VNNI __attribute__((always_inline))

int kt_ffd_int8_supported(void)
{
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") &&
           __builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("fma") &&
           __builtin_cpu_supports("f16c");
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

/* Scratch: int8 weights [g][d / 4] words, then keep_at [g] and drop_below [g], then the task's
 * keep and drop offsets [g] each, then its queries times their reciprocal step [g][d], then the
 * channels' largest scales [d]; every per-head array rounded up to whole 16-head tiles (one
 * masked store or load per tile). */
typedef struct int8_scratch {
    uint32_t *wd;
    int32_t *keep_at, *drop_below;
    float *keep_off, *drop_off, *qi, *smax;
} int8_scratch;

static int8_scratch scratch_at(void *scratch, int64_t g, int64_t d)
{
    int64_t tiles = (g + 15) / 16 * 16;
    int8_scratch s;
    s.wd = scratch;
    s.keep_at = (int32_t *)(s.wd + g * d / 4);
    s.drop_below = s.keep_at + tiles;
    s.keep_off = (float *)(s.drop_below + tiles);
    s.drop_off = s.keep_off + tiles;
    s.qi = s.drop_off + tiles;
    s.smax = s.qi + g * d;
    return s;
}

size_t kt_ffd_int8_scratch_bytes(int64_t g, int64_t d)
{
    return sizeof(int32_t) * (size_t)(g * d / 4 + 4 * (g + 15) / 16 * 16 + g * d + d);
}

/* ceil(x) as int32, saturated, NaN to 'if_nan' (+-2^31 - 128: beyond any S of a block). */
VNNI_INLINE __m512i ceil_to_int32(__m512 x, const int if_nan_low)
{
    const __m512 lo = _mm512_set1_ps(-2147483648.0f), hi = _mm512_set1_ps(2147483520.0f);
    /* min/max return their second operand when the first is NaN */
    x = if_nan_low ? _mm512_min_ps(_mm512_max_ps(x, lo), hi)
                   : _mm512_max_ps(_mm512_min_ps(x, hi), lo);
    return _mm512_cvt_roundps_epi32(x, _MM_FROUND_TO_POS_INF | _MM_FROUND_NO_EXC);
}

/* The task's side of heads h0..h0+n-1 (n <= 16): one step per head for all the task's blocks,
 * step = max_c |q_c| smax_c / 127 with smax_c the largest scale of channel c over the task's
 * blocks, so that every block's |w_c| / step <= 127 and the weights of a block cost one
 * multiply each (qi_c = q_c / step, stored, times the block's scale_c); and the offsets
 * (thr +- E) / step of the bounds. E: |w_c - step wi_c| <= step (0.5 + 3.2e-5) per channel
 * (rounding to nearest of qi_c scale_c, whose relative error against w_c / step is below
 * 2.5e-7 of at most 127.5), so E <= 1.5 d step 0.50004 (0.7501 d step taken); plus a slack for
 * the float scan's own rounding (relative 1e-4 of the largest magnitudes it sums). The
 * offsets are then in float: their relative error (a few 1e-7 of |thr| / step) and that of
 * adding a block's base (heads_weights) are far inside the slack's part 1e-4 |thr| / step. */
static KT_VNNI void heads_begin(const int8_scratch *s, int64_t h0, const float *qs,
                                const float *smax, const float *thr, int64_t n, int64_t d)
{
    __m512 v[16];
    for (int64_t h = 0; h < 16; h++) {
        __m512 m = _mm512_setzero_ps();
        for (int64_t c = 0; h < n && c < d; c += 16)
            m = _mm512_max_ps(m, _mm512_abs_ps(_mm512_mul_ps(_mm512_loadu_ps(qs + h * d + c),
                                                             _mm512_loadu_ps(smax + c))));
        v[h] = m;
    }
    const __m512 amax = kt_attn_hreduce16(v, 1);
    __mmask16 live = _mm512_cmp_ps_mask(amax, _mm512_set1_ps(1e-30f), _CMP_GT_OQ);
    const __m512 step =
        _mm512_mask_div_ps(_mm512_set1_ps(1.0f), live, amax, _mm512_set1_ps(127.0f));
    const __m512 inv = _mm512_div_ps(_mm512_set1_ps(1.0f), step);
    float invs[16];
    _mm512_storeu_ps(invs, inv);
    for (int64_t h = 0; h < n; h++) {
        const __m512 ih = _mm512_set1_ps(invs[h]);
        for (int64_t c = 0; c < d; c += 16)
            _mm512_storeu_ps(s->qi + (h0 + h) * d + c,
                             _mm512_mul_ps(_mm512_loadu_ps(qs + h * d + c), ih));
    }
    __mmask16 heads = (__mmask16)((1u << n) - 1);
    const __m512 t = _mm512_maskz_loadu_ps(heads, thr);
    const __m512 slack = _mm512_fmadd_ps(
        _mm512_set1_ps(3e-4f * (float)d), amax,
        _mm512_fmadd_ps(_mm512_set1_ps(1e-4f), _mm512_abs_ps(t), _mm512_set1_ps(1e-6f)));
    const __m512 e = _mm512_fmadd_ps(_mm512_set1_ps(0.7501f * (float)d), step, slack);
    _mm512_mask_storeu_ps(s->keep_off + h0, heads, _mm512_mul_ps(_mm512_add_ps(t, e), inv));
    _mm512_mask_storeu_ps(s->drop_off + h0, heads, _mm512_mul_ps(_mm512_sub_ps(t, e), inv));
}

KT_VNNI void kt_ffd_int8_begin(const kt_ffd_cache *c, int64_t blk0, int64_t blk1, const float *qs,
                               const float *thr, int64_t g, void *scratch)
{
    int64_t d = c->head_dim;
    int8_scratch s = scratch_at(scratch, g, d);
    float *smax = s.smax;
    for (int64_t ch = 0; ch < d; ch += 16) {
        __m512 m = _mm512_loadu_ps(c->scales + blk0 * d + ch);
        for (int64_t b = blk0 + 1; b < blk1; b++)
            m = _mm512_max_ps(m, _mm512_loadu_ps(c->scales + b * d + ch));
        _mm512_storeu_ps(smax + ch, m);
    }
    for (int64_t h = 0; h < g; h += 16)
        heads_begin(&s, h, qs + h * d, smax, thr + h, g - h < 16 ? g - h : 16, d);
}

/* The int8 weights of heads h0..h0+n-1 (n <= 16) of one block into s->wd (d / 4 words a head:
 * word 4q + m holds channels 16q + 4j + m, j = 0..3, as vpdpbusd pairs them with plane m of
 * the codes' word q), and the integer bounds on S of each head: keep_at (S >= it: the float
 * score certainly reaches 'thr') and drop_below (S < it: the float score certainly stays below
 * 'thr'), from the task's offsets plus the block's base 1.5 sum wi (an integer times 1.5:
 * exact), 16 heads a vector by one transposed reduction (kt_attn_hreduce16). */
static KT_VNNI void heads_weights(const int8_scratch *s, int64_t h0, const float *scale, int64_t n,
                                  int64_t d)
{
    __m512 v[16];
    const __m128i order = _mm_setr_epi8(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
    /* d % 64 == 0: 64 channels at a time, narrowed by two packs (the values fit int8, so they do
     * not saturate), then a dword permute and a byte shuffle put each 16-channel group's bytes
     * in the order above: 13 instructions per 64 channels where one group at a time took 20 */
    const __m512i groups = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
    const __m512i in_group = _mm512_broadcast_i32x4(order);
    for (int64_t h = 0; h < 16 && d % 64 == 0; h++) {
        __m512i wsum = _mm512_setzero_si512();
        for (int64_t c = 0; h < n && c < d; c += 64) {
            __m512i wi[4];
            for (int k = 0; k < 4; k++) {
                wi[k] = _mm512_cvtps_epi32(
                    _mm512_mul_ps(_mm512_loadu_ps(s->qi + (h0 + h) * d + c + 16 * k),
                                  _mm512_loadu_ps(scale + c + 16 * k)));
                wsum = _mm512_add_epi32(wsum, wi[k]);
            }
            /* lane j: bytes of channels 4j..4j+3 of each of the four groups, group by group */
            __m512i b = _mm512_packs_epi16(_mm512_packs_epi32(wi[0], wi[1]),
                                           _mm512_packs_epi32(wi[2], wi[3]));
            b = _mm512_shuffle_epi8(_mm512_permutexvar_epi32(groups, b), in_group);
            _mm512_storeu_si512((void *)(s->wd + (h0 + h) * (d / 4) + c / 4), b);
        }
        v[h] = _mm512_cvtepi32_ps(wsum); /* exact: |sum| <= 128 * 16 */
    }
    for (int64_t h = 0; h < 16 && d % 64 != 0; h++) {
        __m512i wsum = _mm512_setzero_si512();
        for (int64_t c = 0; h < n && c < d; c += 16) {
            /* round to nearest even; |qi scale| <= 127 up to rounding, so the result fits int8 */
            __m512i wi = _mm512_cvtps_epi32(_mm512_mul_ps(_mm512_loadu_ps(s->qi + (h0 + h) * d + c),
                                                          _mm512_loadu_ps(scale + c)));
            wsum = _mm512_add_epi32(wsum, wi);
            __m128i bytes = _mm_shuffle_epi8(_mm512_cvtepi32_epi8(wi), order);
            _mm_storeu_si128((__m128i *)(s->wd + (h0 + h) * (d / 4) + c / 4), bytes);
        }
        v[h] = _mm512_cvtepi32_ps(wsum); /* exact: |sum| <= 128 * 16 */
    }
    __mmask16 heads = (__mmask16)((1u << n) - 1);
    const __m512 base = _mm512_mul_ps(_mm512_set1_ps(1.5f), kt_attn_hreduce16(v, 0));
    _mm512_mask_storeu_epi32(
        s->keep_at + h0, heads,
        ceil_to_int32(_mm512_add_ps(_mm512_maskz_loadu_ps(heads, s->keep_off + h0), base), 0));
    _mm512_mask_storeu_epi32(
        s->drop_below + h0, heads,
        ceil_to_int32(_mm512_add_ps(_mm512_maskz_loadu_ps(heads, s->drop_off + h0), base), 1));
}

/* The int8 weights in the 4 bytes at 'w', broadcast into a register by its own vpbroadcastd, so
 * that the compiler cannot fold it into vpdpbusd's memory operand ({1to16}): on this Zen 5 that
 * form ran at 0.39 ns an instruction against 0.14 for vpdpbusd on registers (0.21 with one
 * vpbroadcastd per vpdpbusd), a throwaway loop of 12 independent accumulators. */
VNNI_INLINE __m512i broadcast_weights(const uint32_t *w)
{
    __m512i b;
    __asm__("vpbroadcastd %1, %0" : "=v"(b) : "m"(*w));
    return b;
}

/* Whether any lane of 'best' reaches 'at'. */
VNNI_INLINE int reaches(__m512i best, int32_t at)
{
    return _mm512_cmpge_epi32_mask(best, _mm512_set1_epi32(at)) != 0;
}

/* Scans the block's 'block' tokens for a tile of gt (<= 8) heads, 'tv' vectors of 16 tokens at a
 * time so that tv * gt accumulators (all in registers: every loop over them unrolls) hide
 * vpdpbusd's latency, and compares each head's largest S with its bounds lane-wise (no
 * horizontal reduction): returns 1 when a head reaches keep_at, else -1 when one reaches
 * drop_below, else 0. 'ct' is the block's transposed codes, 'wd' the heads' weights ([gt][d / 4]
 * words). Per 16 channels: the tv code vectors are loaded once; per plane m (2 bits a channel)
 * the gt heads' weights are broadcast once and serve all tv vectors, whose plane is one shift
 * and one and: tv + tv gt + gt + 1 live vectors, at most 27 of the 32. */
VNNI_INLINE int scan_tile(const uint32_t *ct, int64_t block, int64_t d, const uint32_t *wd,
                          const int32_t *keep_at, const int32_t *drop_below, const int gt,
                          const int tv)
{
    const __m512i m3 = _mm512_set1_epi8(3);
    __m512i best[8];
#pragma GCC unroll 8
    for (int h = 0; h < gt; h++)
        best[h] = _mm512_set1_epi32(INT32_MIN);
    int64_t nv = block / 16, words = d / 4;
    for (int64_t v0 = 0; v0 < nv; v0 += tv) {
        __m512i acc[24];
#pragma GCC unroll 24
        for (int i = 0; i < tv * gt; i++)
            acc[i] = _mm512_setzero_si512();
        for (int64_t q = 0; q < d / 16; q++) {
            __m512i x[8];
#pragma GCC unroll 8
            for (int u = 0; u < tv; u++) {
                int64_t vi = v0 + u < nv ? v0 + u : nv - 1; /* a repeated vector: same max */
                x[u] = _mm512_loadu_si512((const void *)(ct + q * block + vi * 16));
            }
#pragma GCC unroll 4
            for (int m = 0; m < 4; m++) {
                __m512i w[8];
#pragma GCC unroll 8
                for (int h = 0; h < gt; h++)
                    w[h] = broadcast_weights(wd + h * words + 4 * q + m);
#pragma GCC unroll 8
                for (int u = 0; u < tv; u++) {
                    __m512i pl = _mm512_and_si512(_mm512_srli_epi16(x[u], 2 * m), m3);
#pragma GCC unroll 8
                    for (int h = 0; h < gt; h++)
                        acc[u * gt + h] = _mm512_dpbusd_epi32(acc[u * gt + h], pl, w[h]);
                }
            }
        }
#pragma GCC unroll 8
        for (int u = 0; u < tv; u++)
#pragma GCC unroll 8
            for (int h = 0; h < gt; h++)
                best[h] = _mm512_max_epi32(best[h], acc[u * gt + h]);
    }
    int unsure = 0;
#pragma GCC unroll 8
    for (int h = 0; h < gt; h++) {
        if (reaches(best[h], keep_at[h]))
            return 1;
        unsure |= reaches(best[h], drop_below[h]);
    }
    return unsure ? -1 : 0;
}

/* scan_tile with the tile's size a compile-time constant, and tv chosen so that tv * gt is 8 to
 * 16 independent accumulators (vpdpbusd: latency 3-5 cycles, 1-2 a cycle). */
static KT_VNNI int scan_heads(const uint32_t *ct, int64_t block, int64_t d, const uint32_t *wd,
                              const int32_t *keep_at, const int32_t *drop_below, int gt)
{
    switch (gt) {
    case 1:
        return scan_tile(ct, block, d, wd, keep_at, drop_below, 1, 8);
    case 2:
        return scan_tile(ct, block, d, wd, keep_at, drop_below, 2, 4);
    case 3:
        return scan_tile(ct, block, d, wd, keep_at, drop_below, 3, 4);
    case 4:
        return scan_tile(ct, block, d, wd, keep_at, drop_below, 4, 2);
    case 5:
        return scan_tile(ct, block, d, wd, keep_at, drop_below, 5, 2);
    case 6:
        return scan_tile(ct, block, d, wd, keep_at, drop_below, 6, 2);
    case 7:
        return scan_tile(ct, block, d, wd, keep_at, drop_below, 7, 2);
    default:
        return scan_tile(ct, block, d, wd, keep_at, drop_below, 8, 2);
    }
}

int kt_ffd_block_int8(const uint32_t *codes_t, const kt_ffd_cache *c, int64_t blk, int64_t g,
                      void *scratch)
{
    int64_t d = c->head_dim, words = d / 4;
    int8_scratch s = scratch_at(scratch, g, d);
    const float *scale = c->scales + blk * d;
    for (int64_t h = 0; h < g; h += 16)
        heads_weights(&s, h, scale, g - h < 16 ? g - h : 16, d);
    const uint32_t *ct = codes_t + blk * c->block * (d / 16);
    int unsure = 0;
    for (int64_t h0 = 0; h0 < g; h0 += 8) {
        int gt = g - h0 < 8 ? (int)(g - h0) : 8;
        int r =
            scan_heads(ct, c->block, d, s.wd + h0 * words, s.keep_at + h0, s.drop_below + h0, gt);
        if (r == 1)
            return 1;
        unsure |= r < 0;
    }
    return unsure ? -1 : 0;
}
