/* attention_ffd.c - attention_decode on the CPU with FFD block selection (docs/reference.md):
 * prepare quantises K per block (ffd_quant.h); run computes each query head's pseudo-max
 * from the approximate scores of block 0 and the last full block, scans every full block with
 * approximate scores (2-bit codes times per-channel scales; see code_dot for the decoding),
 * keeps a block when any head of the group reaches pseudo-max - delta (without a scan where the
 * block set a head's pseudo-max), and attends the kept blocks (with the stored keys, or refined
 * from the fp8 residual) and the unquantised tail with the same online softmax as 'dense'. The scan
 * reads d/4 bytes per token instead of d*size. Selection runs on int8 dot products where the CPU
 * has VNNI (ffd_scan_int8.h), falling back to the float scan below for the blocks its error bound
 * cannot decide. */
#include "attention_common.h"
#include "attention_dense_bf16.h"
#include "cpu.h"
#include "../ffd_quant.h"
#include "ffd_scan_int8.h"
#include "ffd_stream.h"
#include "pool.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* isa stays the last param, as in dense (test_attention and bench_attention rely on it) */
enum {
    P_DELTA,
    P_BLOCK,
    P_SPLIT,
    P_KEYS,
    P_SCAN,
    P_PHASES,
    P_MAX_SPLITS,
    P_KEPT_FETCH,
    P_ISA,
    P_COUNT
};
enum { KEYS_FP8, KEYS_STORED };
enum { SCAN_AUTO, SCAN_FLOAT, SCAN_INT8 };

static const kt_param_def ffd_params[P_COUNT] = {
    {"delta", KT_PARAM_FLOAT, KT_FFD_DEFAULT_DELTA, 0, 1e6, NULL,
     "keep a block when a score reaches pseudo-max - delta (log2 units; the paper: 5 aggressive, "
     "7 safe; default 9, see docs/cpu-kernels.md)"},
    {"block", KT_PARAM_INT, KT_FFD_DEFAULT_BLOCK, 16, 8192, NULL,
     "tokens per quantisation block (default 64; the paper: 128; see docs/cpu-kernels.md)"},
    {"split", KT_PARAM_INT, 1024, 16, 1 << 24, NULL,
     "tokens per split-KV task, doubled while the context has more than max_splits splits, then "
     "rounded up to whole blocks"},
    {"keys", KT_PARAM_ENUM, KEYS_STORED, 0, 0, "fp8|stored",
     "keys of kept blocks: stored (exact; the fp8 residual alone costs rel_l2 ~0.02) or fp8"},
    {"scan", KT_PARAM_ENUM, SCAN_AUTO, 0, 0, "auto|float|int8",
     "block selection: int8 dot products (AVX-512 VNNI) with an exact bound, ambiguous blocks "
     "rescanned in float (auto: int8 where the CPU has VNNI and isa is not avx2), or float only"},
    {"phase_times", KT_PARAM_INT, 0, 0, 1, NULL,
     "1: time the phases (pseudo-max, select, attend, merge) and report them as metrics"},
    {"max_splits", KT_PARAM_INT, 8, 0, 1 << 24, NULL,
     "splits per KV head above which split doubles (0: split exactly as given), as in dense"},
    {"kept_fetch", KT_PARAM_INT, 8, 0, 4096, NULL,
     "cache lines of each of K and V of the kept blocks fetched into L2 after each block the "
     "selection scans, ahead of the attend (keys: stored; 0: none; see docs/cpu-kernels.md)"},
    KT_ATTN_ISA_PARAM,
};

typedef struct ffd_state {
    kt_attn_work work;
    kt_ffd_cache cache;
    float *thr;         /* [B][H] pseudo-max - delta, log2 units */
    uint8_t *setters;   /* [B][Hkv] after thr: bit 0, block 0 sets a head's pseudo-max; bit 1, the
                           last full block does (thresholds) */
    int64_t *kept;      /* [task] kept blocks of the last run */
    int64_t *rescanned; /* [task] blocks the int8 bound left to the float scan */
    double *task_ns;    /* [task][2] select and attend times (phase_times) */
    uint32_t *codes_t;  /* the int8 scan's code layout (kt_ffd_codes_transpose), or NULL */
    size_t thr_bytes, kept_bytes, task_ns_bytes;
    int64_t split_blocks;
    int stored_keys; /* kept blocks use the stored K instead of the fp8 refinement */
    int int8;        /* selection by kt_ffd_block_int8 */
    int bf16_dot;    /* kept blocks attended by kt_attn_dense_range_bf16_pv, as dense does */
    int phases;      /* phase_times */
    int kept_fetch;  /* lines of K and V of kept blocks fetched per selected block */
    double delta;
    int64_t blocks_kept, blocks_rescanned, blocks_total;
    double phase_us[4]; /* pseudo-max (wall), select, attend (summed over tasks), merge (wall) */
} ffd_state;

typedef struct ffd_ctx {
    ffd_state *st;
    const kt_problem *p;
    const void *k, *v;
} ffd_ctx;

/* The variant's per-thread scratch: per head weights q_c * scale_c of the current block
 * [g][d], the task's queries in scan order [g][d], the block's scales in scan order [d], per
 * head code offsets [g], then 8 bounds of a head tile (32-byte aligned), the int8 scan's
 * scratch (64-byte aligned), then the kept block indices of a split [split_blocks], then the
 * scratch of kt_attn_dense_range_bf16_dot (64-byte aligned; extra_bf16). */
static size_t extra_bytes(int64_t g, int64_t d, int64_t split_blocks)
{
    return sizeof(float) * (size_t)(3 * g * d + d + g + 16) + 64 + kt_ffd_int8_scratch_bytes(g, d) +
           sizeof(int64_t) * (size_t)split_blocks + 8 + kt_attn_bf16_dot_extra_bytes(g, d) + 64;
}

static float *extra_queries(kt_attn_task *t)
{
    return (float *)t->extra + t->g * t->d;
}

static float *extra_scales(kt_attn_task *t)
{
    return (float *)t->extra + 2 * t->g * t->d;
}

static float *extra_offsets(kt_attn_task *t)
{
    return (float *)t->extra + 2 * t->g * t->d + t->d;
}

static float *extra_bound(kt_attn_task *t)
{
    uintptr_t at = (uintptr_t)(extra_offsets(t) + t->g);
    return (float *)((at + 31) & ~(uintptr_t)31);
}

static void *extra_int8(kt_attn_task *t)
{
    uintptr_t at = (uintptr_t)(extra_bound(t) + 8);
    return (void *)((at + 63) & ~(uintptr_t)63);
}

static int64_t *extra_kept_list(kt_attn_task *t)
{
    uintptr_t at = (uintptr_t)((char *)extra_int8(t) + kt_ffd_int8_scratch_bytes(t->g, t->d));
    return (int64_t *)((at + 7) & ~(uintptr_t)7);
}

static void *extra_bf16(kt_attn_task *t, int64_t split_blocks)
{
    uintptr_t at = (uintptr_t)(extra_kept_list(t) + split_blocks);
    return (void *)((at + 63) & ~(uintptr_t)63);
}

/* The scan evaluates S_h = sum_c w[h][c] x_c per token and head, with w[h][c] = qs[h][c] * scale_c
 * of the block, and turns it into the approximate score s~ = mul * S_h - off_h:
 *   head_dim % 64 == 0 ("planes"): the code bytes of 64 channels are split into four planes
 *     (channel 4i+m in plane m) with shifts, and a byte shuffle puts each code c into the
 *     mantissa of 1.0f, so x = 1 + c/4 costs no conversion and no FMA-port uop; w is stored in
 *     plane order and s~ = 4 S - 5.5 sum(w);
 *   otherwise: x = c from a variable shift per 8 channels, s~ = S - 1.5 sum(w). */
static int use_planes(int64_t d)
{
    return d % 64 == 0;
}

/* Channel of plane-order index 'idx': 64 channels per group, then plane m, half k, lane j. The
 * AVX-512 scan (wide) has no halves: plane m, lane j (0..15). */
static int64_t plane_channel(int64_t idx, int wide)
{
    int64_t q = idx / 64, m = (idx / 16) % 4, k = (idx / 8) % 2, j = idx % 8;
    if (wide)
        return 64 * q + 4 * (idx % 16) + m;
    return 64 * q + 32 * k + 4 * j + m;
}

#define AVX512_INLINE static inline KT_ATTN_AVX512 __attribute__((always_inline))

/* The AVX-512 scan over 'rows' code rows for a tile of gt (<= 8) heads: 16 / gtp rows at a time
 * (gtp: gt rounded up to a power of two), slot r * gtp + h of one tree reduction holding S of
 * row r and head h. The codes decode as in code_dot: planes (d % 64 == 0) put a code into the
 * mantissa of 1.0f (a shift and a ternary-logic op per 16 channels after one byte shuffle per
 * 64), else x = c from a variable shift (d % 32 == 0). With 'bound' NULL writes each head's
 * largest S into out[h]; else out[0] = 1 as soon as an S reaches bound[h] (else 0). */
AVX512_INLINE void scan512_tile(float *out, const uint8_t *codes, int64_t rows, const float *w,
                                const float *bound, int64_t d, const int gt, const int planes)
{
    const int gtp = gt <= 1 ? 1 : gt <= 2 ? 2 : gt <= 4 ? 4 : 8, nr = 16 / gtp;
    float lanes[16], bl[16];
    for (int i = 0; i < 16; i++)
        bl[i] = bound && i % gtp < gt ? bound[i % gtp] : INFINITY;
    __m512 bv = _mm512_loadu_ps(bl), best = _mm512_set1_ps(-INFINITY);
    int32_t cv[16]; /* byte i of each 128-bit lane's copy to byte 0 of dword i, rest zero */
    for (int i = 0; i < 16; i++)
        cv[i] = (int32_t)(0x80808000u | (uint32_t)i);
    const __m512i ctrl = _mm512_loadu_si512((const void *)cv);
    const __m512i mask = _mm512_set1_epi32(0x00600000), one = _mm512_set1_epi32(0x3f800000);
    const __m512i shifts =
        _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512i three = _mm512_set1_epi32(3);
    for (int64_t r0 = 0; r0 < rows; r0 += nr) {
        __m512 a[16];
        for (int i = 0; i < 16; i++)
            a[i] = _mm512_setzero_ps();
        const uint8_t *rp[16];
        for (int r = 0; r < nr; r++)
            rp[r] = codes + (r0 + r < rows ? r0 + r : rows - 1) * (d / 4);
        if (planes) {
            for (int64_t q = 0; q < d / 64; q++) {
#pragma GCC unroll 16
                for (int r = 0; r < nr; r++) {
                    __m512i x = _mm512_shuffle_epi8(
                        _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)(rp[r] + 16 * q))),
                        ctrl);
#pragma GCC unroll 4
                    for (int m = 0; m < 4; m++) {
                        __m512 f = _mm512_castsi512_ps(_mm512_ternarylogic_epi32(
                            _mm512_slli_epi32(x, 21 - 2 * m), mask, one, 0xEA));
                        const float *wq = w + 64 * q + 16 * m;
#pragma GCC unroll 8
                        for (int h = 0; h < gt; h++) {
                            int sl = r * gtp + h;
                            a[sl] = _mm512_fmadd_ps(_mm512_loadu_ps(wq + h * d), f, a[sl]);
                        }
                    }
                }
            }
        } else {
            for (int64_t c = 0; c < d; c += 16) {
#pragma GCC unroll 16
                for (int r = 0; r < nr; r++) {
                    uint32_t bits;
                    memcpy(&bits, rp[r] + c / 4, sizeof(bits));
                    __m512 f = _mm512_cvtepi32_ps(_mm512_and_si512(
                        _mm512_srlv_epi32(_mm512_set1_epi32((int)bits), shifts), three));
#pragma GCC unroll 8
                    for (int h = 0; h < gt; h++) {
                        int sl = r * gtp + h;
                        a[sl] = _mm512_fmadd_ps(_mm512_loadu_ps(w + h * d + c), f, a[sl]);
                    }
                }
            }
        }
        __m512 s = kt_attn_hsum16(a);
        if (bound) {
            if (_mm512_cmp_ps_mask(s, bv, _CMP_GE_OQ)) {
                out[0] = 1.0f;
                return;
            }
        } else {
            best = _mm512_max_ps(best, s);
        }
    }
    if (bound) {
        out[0] = 0.0f;
        return;
    }
    _mm512_storeu_ps(lanes, best);
    for (int h = 0; h < gt; h++) {
        out[h] = lanes[h];
        for (int r = 1; r < nr; r++)
            out[h] = fmaxf(out[h], lanes[r * gtp + h]);
    }
}

AVX512_INLINE void scan512_p(float *out, const uint8_t *codes, int64_t rows, const float *w,
                             const float *bound, int64_t d, int gt, const int planes)
{
    switch (gt) {
    case 1:
        scan512_tile(out, codes, rows, w, bound, d, 1, planes);
        break;
    case 2:
        scan512_tile(out, codes, rows, w, bound, d, 2, planes);
        break;
    case 3:
        scan512_tile(out, codes, rows, w, bound, d, 3, planes);
        break;
    case 4:
        scan512_tile(out, codes, rows, w, bound, d, 4, planes);
        break;
    case 5:
        scan512_tile(out, codes, rows, w, bound, d, 5, planes);
        break;
    case 6:
        scan512_tile(out, codes, rows, w, bound, d, 6, planes);
        break;
    case 7:
        scan512_tile(out, codes, rows, w, bound, d, 7, planes);
        break;
    default:
        scan512_tile(out, codes, rows, w, bound, d, 8, planes);
    }
}

static KT_ATTN_AVX512 void scan512(float *out, const uint8_t *codes, int64_t rows, const float *w,
                                   const float *bound, int64_t d, int gt)
{
    if (use_planes(d))
        scan512_p(out, codes, rows, w, bound, d, gt, 1);
    else
        scan512_p(out, codes, rows, w, bound, d, gt, 0);
}

/* S for heads 0..gt-1 of a tile and one code row, one per lane (lanes past gt are 0). 'gt' and
 * 'planes' are compile-time constants after inlining. */
static inline __attribute__((always_inline)) __m256
code_dot(const uint8_t *row, const float *w, int64_t d, const int gt, const int planes)
{
    __m256 a[8];
    for (int h = 0; h < 8; h++)
        a[h] = _mm256_setzero_ps();
    if (planes) {
        const __m256i ctrl[2] = {
            _mm256_setr_epi8(-128, -128, 0, -128, -128, -128, 1, -128, -128, -128, 2, -128, -128,
                             -128, 3, -128, -128, -128, 4, -128, -128, -128, 5, -128, -128, -128, 6,
                             -128, -128, -128, 7, -128),
            _mm256_setr_epi8(-128, -128, 8, -128, -128, -128, 9, -128, -128, -128, 10, -128, -128,
                             -128, 11, -128, -128, -128, 12, -128, -128, -128, 13, -128, -128, -128,
                             14, -128, -128, -128, 15, -128)};
        const __m256i m60 = _mm256_set1_epi8(0x60), one = _mm256_set1_epi32(0x3f800000);
        for (int64_t q = 0; q < d / 64; q++) {
            __m256i x =
                _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(row + 16 * q)));
            __m256i pl[4] = {_mm256_and_si256(_mm256_slli_epi16(x, 5), m60),
                             _mm256_and_si256(_mm256_slli_epi16(x, 3), m60),
                             _mm256_and_si256(_mm256_slli_epi16(x, 1), m60),
                             _mm256_and_si256(_mm256_srli_epi16(x, 1), m60)};
            for (int m = 0; m < 4; m++) {
                for (int k = 0; k < 2; k++) {
                    __m256 f = _mm256_castsi256_ps(
                        _mm256_or_si256(_mm256_shuffle_epi8(pl[m], ctrl[k]), one));
                    const float *wq = w + 64 * q + 16 * m + 8 * k;
                    for (int h = 0; h < gt; h++)
                        a[h] = _mm256_fmadd_ps(_mm256_load_ps(wq + h * d), f, a[h]);
                }
            }
        }
    } else {
        const __m256i shifts = _mm256_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14);
        const __m256i three = _mm256_set1_epi32(3);
        for (int64_t c = 0; c < d; c += 8) {
            uint16_t bits;
            memcpy(&bits, row + c / 4, sizeof(bits));
            __m256i x = _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32(bits), shifts), three);
            __m256 xf = _mm256_cvtepi32_ps(x);
            for (int h = 0; h < gt; h++)
                a[h] = _mm256_fmadd_ps(_mm256_load_ps(w + h * d + c), xf, a[h]);
        }
    }
    return kt_attn_hsum8(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7]);
}

/* Over 'rows' code rows of a block for one tile of gt heads: with 'bound' NULL, returns the
 * lane-wise max of S; else returns a nonzero lane as soon as an S reaches its lane of 'bound'
 * (an early exit: the block is kept). */
static inline __attribute__((always_inline)) __m256 scan_tile(const uint8_t *codes, int64_t rows,
                                                              const float *w, const float *bound,
                                                              int64_t d, const int gt,
                                                              const int planes)
{
    __m256 best = _mm256_set1_ps(-INFINITY);
    for (int64_t r = 0; r < rows; r++) {
        __m256 s = code_dot(codes + r * (d / 4), w, d, gt, planes);
        if (bound) {
            __m256 hit = _mm256_cmp_ps(s, _mm256_load_ps(bound), _CMP_GE_OQ);
            if (_mm256_movemask_ps(hit))
                return hit;
        } else {
            best = _mm256_max_ps(best, s);
        }
    }
    return bound ? _mm256_setzero_ps() : best;
}

static inline __attribute__((always_inline)) __m256 scan_p(const uint8_t *codes, int64_t rows,
                                                           const float *w, const float *bound,
                                                           int64_t d, int gt, const int planes)
{
    switch (gt) {
    case 1:
        return scan_tile(codes, rows, w, bound, d, 1, planes);
    case 2:
        return scan_tile(codes, rows, w, bound, d, 2, planes);
    case 3:
        return scan_tile(codes, rows, w, bound, d, 3, planes);
    case 4:
        return scan_tile(codes, rows, w, bound, d, 4, planes);
    case 5:
        return scan_tile(codes, rows, w, bound, d, 5, planes);
    case 6:
        return scan_tile(codes, rows, w, bound, d, 6, planes);
    case 7:
        return scan_tile(codes, rows, w, bound, d, 7, planes);
    default:
        return scan_tile(codes, rows, w, bound, d, 8, planes);
    }
}

static __m256 scan(const uint8_t *codes, int64_t rows, const float *w, const float *bound,
                   int64_t d, int gt)
{
    return use_planes(d) ? scan_p(codes, rows, w, bound, d, gt, 1)
                         : scan_p(codes, rows, w, bound, d, gt, 0);
}

/* Loads the weights w[h][.] = qs[h][c] * scale_c of block 'blk' (global index) into t->extra,
 * in plane order when use_planes(d), and writes per head 'off' so that the approximate score is
 * mul * S - off; returns mul. */
static float block_weights(kt_attn_task *t, const kt_ffd_cache *c, int64_t blk, float *off)
{
    float *w = t->extra, *sc = extra_scales(t);
    const float *scale = c->scales + blk * c->head_dim, *qp = extra_queries(t);
    int planes = use_planes(t->d);
    for (int64_t i = 0; i < t->d; i++)
        sc[i] = scale[planes ? plane_channel(i, t->wide) : i];
    for (int64_t h = 0; h < t->g; h++) {
        float *wh = w + h * t->d;
        __m256 sum = _mm256_setzero_ps();
        for (int64_t i = 0; i < t->d; i += 8) {
            __m256 x = _mm256_mul_ps(_mm256_load_ps(qp + h * t->d + i), _mm256_load_ps(sc + i));
            _mm256_store_ps(wh + i, x);
            sum = _mm256_add_ps(sum, x);
        }
        float lanes[8], total = 0.0f;
        _mm256_storeu_ps(lanes, sum);
        for (int j = 0; j < 8; j++)
            total += lanes[j];
        off[h] = (planes ? 5.5f : 1.5f) * total;
    }
    return planes ? 4.0f : 1.0f;
}

/* After kt_attn_task_begin: the task's queries in the scan's channel order (extra_queries). */
static void scan_queries(kt_attn_task *t)
{
    float *qp = extra_queries(t);
    int planes = use_planes(t->d);
    for (int64_t h = 0; h < t->g; h++)
        for (int64_t i = 0; i < t->d; i++)
            qp[h * t->d + i] = t->qs[h * t->d + (planes ? plane_channel(i, t->wide) : i)];
}

/* Pseudo-max thresholds of one (b, kv head): the largest approximate score of each head over
 * block 0 and the last full block, minus delta, into st->thr; which of the two blocks set some
 * head's maximum into st->setters. */
static void thresholds(kt_attn_task *t, const ffd_state *st, int64_t b, int64_t kh, int64_t heads)
{
    const kt_ffd_cache *c = &st->cache;
    int64_t first = (b * c->kv_heads + kh) * c->n_full, d = t->d;
    float best[8], *off = extra_offsets(t);
    float *thr = st->thr + b * heads + kh * t->g;
    uint8_t sets = 0;
    for (int64_t h = 0; h < t->g; h++)
        thr[h] = -INFINITY;
    int64_t blocks[2] = {first, first + c->n_full - 1};
    for (int i = 0; i < 2; i++) {
        float mul = block_weights(t, c, blocks[i], off), *w = t->extra;
        for (int64_t h0 = 0; h0 < t->g; h0 += 8) {
            int gt = t->g - h0 < 8 ? (int)(t->g - h0) : 8;
            const uint8_t *codes = c->codes + blocks[i] * c->block * (d / 4);
            if (t->wide)
                scan512(best, codes, c->block, w + h0 * d, NULL, d, gt);
            else
                _mm256_storeu_ps(best, scan(codes, c->block, w + h0 * d, NULL, d, gt));
            for (int h = 0; h < gt; h++) {
                float s = mul * best[h] - off[h0 + h], *th = thr + h0 + h;
                if (i == 1) /* *th is block 0's score */
                    sets |= (uint8_t)((*th >= s ? 1 : 0) | (s >= *th ? 2 : 0));
                *th = fmaxf(*th, s);
            }
        }
    }
    for (int64_t h = 0; h < t->g; h++)
        thr[h] -= (float)st->delta;
    st->setters[b * c->kv_heads + kh] = sets;
}

/* Refines 'n' rows (from row 'r0') of block 'blk' into t->kbuf: (code - 1.5) * scale + residual,
 * the fp8 e4m3 residual decoded through fp16 (same bits shifted, times 2^8). */
static void refine_rows(kt_attn_task *t, const kt_ffd_cache *c, int64_t blk, int64_t r0, int n)
{
    int64_t d = t->d;
    const float *scale = c->scales + blk * d;
    const __m256i shifts = _mm256_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14);
    const __m256i three = _mm256_set1_epi32(3);
    const __m128i m7f = _mm_set1_epi16(0x7f), m80 = _mm_set1_epi16(0x80);
    for (int r = 0; r < n; r++) {
        int64_t row = blk * c->block + r0 + r;
        const uint8_t *codes = c->codes + row * (d / 4), *res = c->residual + row * d;
        float *k = t->kbuf + r * d;
        for (int64_t ch = 0; ch < d; ch += 8) {
            uint16_t bits;
            memcpy(&bits, codes + ch / 4, sizeof(bits));
            __m256i x = _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32(bits), shifts), three);
            __m256 dq = _mm256_mul_ps(_mm256_sub_ps(_mm256_cvtepi32_ps(x), _mm256_set1_ps(1.5f)),
                                      _mm256_loadu_ps(scale + ch));
            __m128i e = _mm_cvtepu8_epi16(_mm_loadl_epi64((const __m128i *)(res + ch)));
            __m128i h16 = _mm_or_si128(_mm_slli_epi16(_mm_and_si128(e, m7f), 7),
                                       _mm_slli_epi16(_mm_and_si128(e, m80), 8));
            __m256 rf = _mm256_cvtph_ps(h16);
            _mm256_store_ps(k + ch, _mm256_fmadd_ps(rf, _mm256_set1_ps(256.0f), dq));
        }
    }
    if (n < KT_ATTN_CHUNK)
        memset(t->kbuf + n * d, 0, sizeof(float) * (size_t)((KT_ATTN_CHUNK - n) * d));
}

/* refine_rows on AVX-512 (t->wide: d % 32 == 0), 16 channels at a time. */
static KT_ATTN_AVX512 void refine_rows512(kt_attn_task *t, const kt_ffd_cache *c, int64_t blk,
                                          int64_t r0, int n)
{
    int64_t d = t->d;
    const float *scale = c->scales + blk * d;
    const __m512i shifts =
        _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512i three = _mm512_set1_epi32(3);
    const __m256i m7f = _mm256_set1_epi16(0x7f), m80 = _mm256_set1_epi16(0x80);
    for (int r = 0; r < n; r++) {
        int64_t row = blk * c->block + r0 + r;
        const uint8_t *codes = c->codes + row * (d / 4), *res = c->residual + row * d;
        float *k = t->kbuf + r * d;
        for (int64_t ch = 0; ch < d; ch += 16) {
            uint32_t bits;
            memcpy(&bits, codes + ch / 4, sizeof(bits));
            __m512i x =
                _mm512_and_si512(_mm512_srlv_epi32(_mm512_set1_epi32((int)bits), shifts), three);
            __m512 dq = _mm512_mul_ps(_mm512_sub_ps(_mm512_cvtepi32_ps(x), _mm512_set1_ps(1.5f)),
                                      _mm512_loadu_ps(scale + ch));
            __m256i e = _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)(res + ch)));
            __m256i h16 = _mm256_or_si256(_mm256_slli_epi16(_mm256_and_si256(e, m7f), 7),
                                          _mm256_slli_epi16(_mm256_and_si256(e, m80), 8));
            _mm512_storeu_ps(k + ch,
                             _mm512_fmadd_ps(_mm512_cvtph_ps(h16), _mm512_set1_ps(256.0f), dq));
        }
    }
    if (n < KT_ATTN_CHUNK)
        memset(t->kbuf + n * d, 0, sizeof(float) * (size_t)((KT_ATTN_CHUNK - n) * d));
}

/* Whether block 'blk' has a token whose approximate score reaches a head's threshold. */
static int block_kept(kt_attn_task *t, const kt_ffd_cache *c, int64_t blk, const float *thr)
{
    int64_t d = t->d;
    float *off = extra_offsets(t), *bound = extra_bound(t);
    float mul = block_weights(t, c, blk, off), *w = t->extra;
    for (int64_t h0 = 0; h0 < t->g; h0 += 8) {
        int gt = t->g - h0 < 8 ? (int)(t->g - h0) : 8;
        for (int h = 0; h < 8; h++)
            bound[h] = h < gt ? (thr[h0 + h] + off[h0 + h]) / mul : INFINITY;
        const uint8_t *codes = c->codes + blk * c->block * (d / 4);
        if (t->wide) {
            float hit;
            scan512(&hit, codes, c->block, w + h0 * d, bound, d, gt);
            if (hit != 0.0f)
                return 1;
        } else if (_mm256_movemask_ps(scan(codes, c->block, w + h0 * d, bound, d, gt))) {
            return 1;
        }
    }
    return 0;
}

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* Whether block 'blk' (global index) is kept: by the int8 bound where it decides, else by the
 * float scan (counted in *rescanned when the int8 scan ran first). The float scan's queries
 * (scan_queries, g x d scalar copies: at 64-token blocks as much work as a few blocks' int8
 * selection) are laid out on its first use in the task, flagged by *float_ready. */
static int select_block(kt_attn_task *t, const ffd_state *st, int64_t blk, const float *thr,
                        int64_t *rescanned, int *float_ready)
{
    if (st->int8) {
        int r = kt_ffd_block_int8(st->codes_t, &st->cache, blk, t->g, extra_int8(t));
        if (r >= 0)
            return r;
        (*rescanned)++;
    }
    if (!*float_ready) {
        scan_queries(t);
        *float_ready = 1;
    }
    return block_kept(t, &st->cache, blk, thr);
}

/* Whether block 'blk' (index within its (b, kv head)) set some head's pseudo-max ('sets', from
 * st->setters): that head reaches pseudo-max - delta there for any delta >= 0, so the block is
 * kept without a scan. The scan's bound, (thr + off) / mul in the block's own scale, can round
 * above the very score that set thr: at delta 0 the block then failed it, and a head with no
 * kept block and no tail attended no token at all (0/0 = NaN). */
static int sets_pseudo_max(unsigned sets, int64_t blk, int64_t n_full)
{
    return ((sets & 1) && blk == 0) || ((sets & 2) && blk == n_full - 1);
}

/* Attends kept block 'blk' (index within its (b, kv head)) with the fp8-refined keys. */
static void attend_refined(kt_attn_task *t, const kt_ffd_cache *c, int64_t first, int64_t blk,
                           const char *v, size_t row_bytes, kt_dtype dtype)
{
    for (int64_t r = 0; r < c->block; r += KT_ATTN_CHUNK) {
        int n = c->block - r < KT_ATTN_CHUNK ? (int)(c->block - r) : KT_ATTN_CHUNK;
        int64_t ahead = r + KT_ATTN_CHUNK;
        if (ahead < c->block) {
            int64_t rows = c->block - ahead < KT_ATTN_CHUNK ? c->block - ahead : KT_ATTN_CHUNK;
            int64_t row = (first + blk) * c->block + ahead;
            kt_attn_prefetch(c->residual + (size_t)(row * c->head_dim),
                             (size_t)(rows * c->head_dim));
            kt_attn_prefetch(v + (size_t)(blk * c->block + ahead) * row_bytes,
                             (size_t)rows * row_bytes);
        }
        if (t->wide)
            refine_rows512(t, c, first + blk, r, n);
        else
            refine_rows(t, c, first + blk, r, n);
        const char *vs = v + (size_t)(blk * c->block + r) * row_bytes;
        kt_attn_step(t, t->kbuf, 0, vs, dtype, n);
    }
}

/* Attends the stored keys and values of the 'kept' blocks in 'list' (indices within the (b, kv
 * head) whose token 0 'k' and 'v' point at), chunk by chunk, prefetching the chunk
 * KT_ATTN_PREFETCH_CHUNKS ahead in the kept stream, across block boundaries (each kept block
 * starts on pages no prefetcher has seen); as far as dense does, since deeper was slower. */
static void attend_stored(kt_attn_task *t, const int64_t *list, int64_t kept, int64_t block,
                          const char *k, const char *v, kt_dtype dtype)
{
    size_t row_bytes = (size_t)t->d * kt_dtype_size(dtype);
    int64_t per_block = (block + KT_ATTN_CHUNK - 1) / KT_ATTN_CHUNK, n = kept * per_block;
    for (int64_t j = 0; j < n; j++) {
        int64_t a = j + KT_ATTN_PREFETCH_CHUNKS;
        if (a < n) {
            int64_t off = a % per_block * KT_ATTN_CHUNK;
            int64_t rows = block - off < KT_ATTN_CHUNK ? block - off : KT_ATTN_CHUNK;
            size_t at = (size_t)(list[a / per_block] * block + off) * row_bytes;
            kt_attn_prefetch(k + at, (size_t)rows * row_bytes);
            kt_attn_prefetch(v + at, (size_t)rows * row_bytes);
        }
        int64_t s0 = list[j / per_block] * block + j % per_block * KT_ATTN_CHUNK;
        int64_t s1 = s0 + KT_ATTN_CHUNK, end = (list[j / per_block] + 1) * block;
        kt_attn_dense_range(t, k, v, dtype, s0, s1 < end ? s1 : end);
    }
}

/* attend_stored on bf16 with dense's bf16 path as one stream of the kept blocks and the tokens
 * [tail0, tail1) after the last full block (kt_attn_dense_blocks_bf16_pv): that path leaves
 * the task's acc in its own channel order, so every range of the task comes here. 'scratch' is
 * its extra. */
static void attend_stored_bf16(kt_attn_task *t, const int64_t *list, int64_t kept, int64_t block,
                               const uint16_t *k, const uint16_t *v, int64_t tail0, int64_t tail1,
                               void *scratch)
{
    void *own = t->extra;
    t->extra = scratch;
    kt_attn_blocks b = {list, kept, block, tail0, tail1};
    kt_attn_dense_blocks_bf16_pv(t, k, v, &b);
    t->extra = own;
}

/* The kept blocks' K and V, fetched into L2 during the selection, which is bound by its
 * instructions and leaves the memory idle: after each selected block, fetch_kept takes the next
 * 'lines' cache lines of each of K and V of the blocks kept so far. */
typedef struct kept_fetch {
    const char *k, *v;
    size_t block_bytes; /* one block's K (as its V) */
    int64_t next;       /* index in the kept list of the block being fetched */
    size_t off;         /* bytes of it already fetched */
} kept_fetch;

static void fetch_kept(kept_fetch *f, const int64_t *list, int64_t kept, int lines)
{
    for (; lines > 0 && f->next < kept; lines--) {
        size_t at = (size_t)list[f->next] * f->block_bytes + f->off;
        _mm_prefetch(f->k + at, _MM_HINT_T1);
        _mm_prefetch(f->v + at, _MM_HINT_T1);
        f->off += 64;
        if (f->off >= f->block_bytes) {
            f->off = 0;
            f->next++;
        }
    }
}

/* One split: first selects its blocks (the scan streams the codes alone), then attends the
 * kept ones as one prefetched stream (attend_stored, or attend_stored_bf16 where dense takes
 * its bf16 score path), or refined from fp8 (attend_refined). */
static void ffd_task(kt_attn_task *t, void *ctx, int64_t b, int64_t kh, int64_t split)
{
    const ffd_ctx *x = ctx;
    ffd_state *st = x->st;
    const kt_ffd_cache *c = &st->cache;
    const kt_problem *p = x->p;
    size_t row_bytes = (size_t)p->head_dim * kt_dtype_size(p->dtype);
    size_t head = (size_t)((b * p->kv_heads + kh) * p->context) * row_bytes;
    const char *k = (const char *)x->k + head, *v = (const char *)x->v + head;
    int64_t first = (b * p->kv_heads + kh) * c->n_full, n_splits = st->work.n_splits;
    int64_t b0 = split * st->split_blocks;
    int64_t b1 = b0 + st->split_blocks < c->n_full ? b0 + st->split_blocks : c->n_full;
    const float *thr = st->thr + b * p->heads + kh * t->g;
    unsigned sets = c->n_full > 0 ? st->setters[b * p->kv_heads + kh] : 0;
    int64_t kept = 0, rescanned = 0, *list = extra_kept_list(t);
    double t0 = st->phases ? now_ns() : 0;
    int float_ready = 0;
    const uint8_t *codes = st->int8 ? (const uint8_t *)st->codes_t : c->codes;
    if (st->int8 && b1 > b0)
        kt_ffd_int8_begin(c, first + b0, first + b1, t->qs, thr, t->g, extra_int8(t));
    kept_fetch f = {k, v, (size_t)c->block * row_bytes, 0, 0};
    int fetch = st->stored_keys ? st->kept_fetch : 0;
    for (int64_t blk = b0; blk < b1; blk++) {
        if (blk + 1 < b1)
            kt_ffd_prefetch_block(codes, c, first + blk + 1);
        if (sets_pseudo_max(sets, blk, c->n_full) ||
            select_block(t, st, first + blk, thr, &rescanned, &float_ready))
            list[kept++] = blk;
        if (fetch)
            fetch_kept(&f, list, kept, fetch);
    }
    double t1 = st->phases ? now_ns() : 0;
    /* the tokens after the last full block, attended densely by the last split */
    int64_t tail0 = c->n_full * c->block, tail1 = split == n_splits - 1 ? p->context : tail0;
    if (st->stored_keys && st->bf16_dot && t->wide) {
        attend_stored_bf16(t, list, kept, c->block, (const uint16_t *)k, (const uint16_t *)v, tail0,
                           tail1, extra_bf16(t, st->split_blocks));
        tail1 = tail0;
    } else if (st->stored_keys) {
        attend_stored(t, list, kept, c->block, k, v, p->dtype);
    } else {
        for (int64_t i = 0; i < kept; i++)
            attend_refined(t, c, first, list[i], v, row_bytes, p->dtype);
    }
    if (tail1 > tail0)
        kt_attn_dense_range(t, k, v, p->dtype, tail0, tail1);
    int64_t task = (b * p->kv_heads + kh) * n_splits + split;
    st->kept[task] = kept;
    st->rescanned[task] = rescanned;
    if (st->phases) {
        st->task_ns[2 * task] = t1 - t0;
        st->task_ns[2 * task + 1] = now_ns() - t1;
    }
}

static void ffd_release(void *state, kt_backend *backend);

int kt_ffd_cpu_check_params(const kt_param_value *params, int *param)
{
    *param = P_BLOCK;
    if (params[P_SCAN].num == SCAN_INT8 && (int64_t)params[P_BLOCK].num % 16 != 0)
        return kt_error_code(KT_EUNSUPPORTED,
                             "scan 'int8' needs a block that is a multiple of 16 (block %lld)",
                             (long long)params[P_BLOCK].num);
    return KT_OK;
}

int kt_ffd_cpu_check_problem(const kt_param_value *params, const kt_problem *p)
{
    int err = kt_attn_check_problem(p);
    if (err < 0)
        return err;
    if (params[P_SCAN].num == SCAN_INT8 && p->head_dim % 16 != 0)
        return kt_error_code(KT_EUNSUPPORTED,
                             "scan 'int8' needs a head_dim that is a multiple of 16 (head_dim "
                             "%lld); scan auto falls back to the float scan",
                             (long long)p->head_dim);
    return KT_OK;
}

/* Sets *int8 from the 'scan' param: int8 selection where the CPU has VNNI and the shape
 * allows (auto also requires that the attention runs its AVX-512 paths), float otherwise;
 * KT_EUNSUPPORTED when int8 is asked where it cannot run. */
static int resolve_scan(int *int8, int scan, int avx512, const kt_ffd_cache *c)
{
    int can = kt_ffd_int8_supported() && kt_ffd_int8_shape_ok(c);
    if (scan == SCAN_INT8 && !can)
        return kt_error_code(KT_EUNSUPPORTED,
                             "scan 'int8' needs AVX-512 VNNI and head_dim and block multiples of "
                             "16 (head_dim %lld, block %lld%s)",
                             (long long)c->head_dim, (long long)c->block,
                             kt_ffd_int8_supported() ? "" : ", no VNNI on this CPU");
    *int8 = scan == SCAN_INT8 || (scan == SCAN_AUTO && can && avx512);
    return KT_OK;
}

static int ffd_prepare(void **out, const kt_call *call)
{
    const kt_problem *p = call->problem;
    int err = kt_attn_check_problem(p);
    if (err < 0)
        return err;
    ffd_state *st = calloc(1, sizeof(*st));
    if (!st)
        return kt_error_code(KT_ENOMEM, "out of memory");
    *out = st;
    kt_ffd_cache *c = &st->cache;
    int64_t block = (int64_t)call->params[P_BLOCK].num;
    int64_t split = kt_attn_split_tokens((int64_t)call->params[P_SPLIT].num,
                                         (int64_t)call->params[P_MAX_SPLITS].num, p->context);
    st->delta = call->params[P_DELTA].num;
    if ((err = kt_ffd_cache_shape(c, p->batch, p->kv_heads, p->context, p->head_dim, block)) < 0)
        return err;
    st->split_blocks = (split + block - 1) / block;
    st->stored_keys = (int)call->params[P_KEYS].num == KEYS_STORED;
    int64_t n_splits = c->n_full > 0 ? (c->n_full + st->split_blocks - 1) / st->split_blocks : 1;
    st->thr_bytes =
        sizeof(float) * (size_t)(p->batch * p->heads) + (size_t)(p->batch * p->kv_heads);
    st->kept_bytes = sizeof(int64_t) * (size_t)(p->batch * p->kv_heads * n_splits);
    st->task_ns_bytes = 2 * sizeof(double) * (size_t)(p->batch * p->kv_heads * n_splits);
    st->blocks_total = p->batch * p->kv_heads * c->n_full;
    st->phases = (int)call->params[P_PHASES].num;
    st->kept_fetch = (int)call->params[P_KEPT_FETCH].num;
    kt_backend *be = call->backend;
    int64_t g = p->heads / p->kv_heads;
    if ((err = kt_attn_work_alloc(&st->work, be, p, n_splits, call->threads,
                                  extra_bytes(g, p->head_dim, st->split_blocks))) < 0 ||
        (err = kt_backend_alloc(be, (void **)&st->thr, st->thr_bytes)) < 0 ||
        (err = kt_backend_alloc(be, (void **)&st->kept, st->kept_bytes)) < 0 ||
        (err = kt_backend_alloc(be, (void **)&st->rescanned, st->kept_bytes)) < 0 ||
        (err = kt_backend_alloc(be, (void **)&st->task_ns, st->task_ns_bytes)) < 0 ||
        (err = kt_attn_isa_resolve(&st->work.avx512, (int)call->params[P_ISA].num)) < 0 ||
        (err = resolve_scan(&st->int8, (int)call->params[P_SCAN].num, st->work.avx512, c)) < 0)
        return err;
    st->setters = (uint8_t *)(st->thr + p->batch * p->heads);
    st->bf16_dot = p->dtype == KT_DTYPE_BF16 && st->stored_keys && st->work.avx512 &&
                   kt_attn_bf16_dot_supported();
    if (st->blocks_total > 0) {
        if ((err = kt_backend_alloc(be, (void **)&c->codes, kt_ffd_codes_bytes(c))) < 0 ||
            (err = kt_backend_alloc(be, (void **)&c->scales, kt_ffd_scales_bytes(c))) < 0 ||
            (err = kt_backend_alloc(be, (void **)&c->residual, kt_ffd_residual_bytes(c))) < 0 ||
            (st->int8 &&
             (err = kt_backend_alloc(be, (void **)&st->codes_t, kt_ffd_codes_bytes(c))) < 0))
            return err;
        kt_ffd_quantize_cache(c, call->inputs[1], p->dtype);
        if (st->int8)
            kt_ffd_codes_transpose(st->codes_t, c);
    }
    return KT_OK;
}

typedef struct scan_ctx {
    ffd_state *st;
    const kt_call *call;
} scan_ctx;

/* Pool item i: the pseudo-max scan and thresholds of KV head i % kv_heads of row i / kv_heads. */
static void scan_item(void *arg, int64_t i, int slot)
{
    const scan_ctx *c = arg;
    const kt_problem *p = c->call->problem;
    int64_t g = p->heads / p->kv_heads, b = i / p->kv_heads, kh = i % p->kv_heads;
    size_t q_row = (size_t)p->head_dim * kt_dtype_size(p->dtype);
    kt_attn_task t;
    kt_attn_work_task(&t, &c->st->work, slot, g, p->head_dim);
    kt_attn_task_begin(
        &t, (const char *)c->call->inputs[0] + (size_t)(b * p->heads + kh * g) * q_row, p->dtype);
    scan_queries(&t);
    thresholds(&t, c->st, b, kh, p->heads);
}

static int ffd_run(void *state, const kt_call *call)
{
    ffd_state *st = state;
    const kt_problem *p = call->problem;
    kt_attn_work *w = &st->work;
    int64_t n_bg = p->batch * p->kv_heads;
    int threads = call->threads < w->threads ? call->threads : w->threads;
    double t0 = st->phases ? now_ns() : 0;
    if (st->cache.n_full > 0) {
        scan_ctx sc = {st, call};
        kt_pool_for(threads, n_bg, scan_item, &sc);
    }
    double t1 = st->phases ? now_ns() : 0;
    ffd_ctx ctx = {st, p, call->inputs[1], call->inputs[2]};
    kt_attn_work_tasks(w, call, ffd_task, &ctx);
    double t2 = st->phases ? now_ns() : 0;
    kt_attn_merge(call->outputs[0], p->dtype, w->part, p->batch * p->heads, w->n_splits,
                  p->head_dim, threads);
    st->blocks_kept = st->blocks_rescanned = 0;
    double select = 0, attend = 0;
    for (int64_t i = 0; i < n_bg * w->n_splits; i++) {
        st->blocks_kept += st->kept[i];
        st->blocks_rescanned += st->rescanned[i];
        if (st->phases) {
            select += st->task_ns[2 * i];
            attend += st->task_ns[2 * i + 1];
        }
    }
    if (st->phases) {
        double phase_ns[4] = {t1 - t0, select, attend, now_ns() - t2};
        for (int i = 0; i < 4; i++)
            st->phase_us[i] = phase_ns[i] / 1e3;
    }
    return KT_OK;
}

static void ffd_release(void *state, kt_backend *backend)
{
    ffd_state *st = state;
    if (!st)
        return;
    kt_attn_work_free(&st->work, backend);
    kt_ffd_cache *c = &st->cache;
    if (c->codes)
        kt_backend_free(backend, c->codes, kt_ffd_codes_bytes(c));
    if (c->scales)
        kt_backend_free(backend, c->scales, kt_ffd_scales_bytes(c));
    if (c->residual)
        kt_backend_free(backend, c->residual, kt_ffd_residual_bytes(c));
    if (st->thr)
        kt_backend_free(backend, st->thr, st->thr_bytes);
    if (st->kept)
        kt_backend_free(backend, st->kept, st->kept_bytes);
    if (st->rescanned)
        kt_backend_free(backend, st->rescanned, st->kept_bytes);
    if (st->task_ns)
        kt_backend_free(backend, st->task_ns, st->task_ns_bytes);
    if (st->codes_t)
        kt_backend_free(backend, st->codes_t, kt_ffd_codes_bytes(c));
    free(st);
}

/* kept_fraction, blocks_total, rescanned_fraction (blocks the int8 bound left to the float
 * scan, of all blocks; 0 with scan float) and scan_int8 (1 when the int8 scan ran, 0 for
 * float), then with phase_times the phase times of the last call in microseconds: pseudo-max
 * and merge as wall time, select and attend summed over the split-KV tasks (equal to wall
 * time on one thread). */
static int ffd_metrics(void *state, kt_metric *out, int max)
{
    const ffd_state *st = state;
    double total = (double)st->blocks_total;
    kt_metric m[8] = {
        {"kept_fraction", total > 0 ? (double)st->blocks_kept / total : 1.0, ""},
        {"blocks_total", total, "blocks"},
        {"rescanned_fraction", total > 0 ? (double)st->blocks_rescanned / total : 0.0, ""},
        {"scan_int8", (double)st->int8, ""},
        {"phase_pseudomax_us", st->phase_us[0], "us"},
        {"phase_select_us", st->phase_us[1], "us"},
        {"phase_attend_us", st->phase_us[2], "us"},
        {"phase_merge_us", st->phase_us[3], "us"},
    };
    int n = st->phases ? 8 : 4;
    n = max < n ? max : n;
    for (int i = 0; i < n; i++)
        out[i] = m[i];
    return n;
}

const kt_variant kt_variant_cpu_attention_ffd = {
    /* .op = */ "attention_decode",
    /* .name = */ "ffd",
    /* .backend = */ "cpu",
    /* .doc = */
    "FFD: 2-bit key scan (int8 VNNI or float) picks blocks within delta of a "
    "pseudo-max; kept blocks attended with stored or fp8-refined keys",
    /* .params = */ ffd_params,
    /* .n_params = */ P_COUNT,
    /* .prepare = */ ffd_prepare,
    /* .run = */ ffd_run,
    /* .release = */ ffd_release,
    /* .metrics = */ ffd_metrics,
};
