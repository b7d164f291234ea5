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
 * convex combination of the value rows. Each value pair is loaded once for every head of the
 * group, and the G x 32-channel accumulator tile stays in registers over the chunk. */
#include "attention_dense_bf16.h"

#include <math.h>
#include <string.h>

#define KT_ATTN_AVX512BF16                                                                         \
    __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx512bf16,fma,f16c")))

int kt_attn_bf16_dot_supported(void)
{
    return __builtin_cpu_supports("avx512bf16");
}

size_t kt_attn_bf16_dot_extra_bytes(int64_t g, int64_t d)
{
    /* the query heads in bf16, zero-padded chunks of key and value rows for a range's tail,
     * then the chunk's weights in bf16 ([g][KT_ATTN_CHUNK]) */
    return (size_t)((g + 2 * KT_ATTN_CHUNK) * d + g * KT_ATTN_CHUNK) * sizeof(uint16_t) + 64;
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

/* 'rows' the 'n' rows of d bf16 at 'src', or, when n < KT_ATTN_CHUNK, a copy in 'tail' padded
 * with zero rows to a whole chunk (rows past a range may lie past the tensor). */
static const uint16_t *chunk_rows(uint16_t *tail, const uint16_t *src, int n, int64_t d)
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
        kt_attn_spread_stage(&sp, t->d, KT_ATTN_BEFORE_SCORES, &tr);
        scores(t, qb, chunk_rows(ktail, k + s * t->d, n, t->d), &tr);
        kt_attn_spread_stage(&sp, t->d, KT_ATTN_AFTER_SCORES, &tr);
        kt_attn_spread_stage(&sp, t->d, KT_ATTN_BEFORE_PV, &tr);
        kt_attn_softmax_pv_avx512(t, v + s * t->d, KT_DTYPE_BF16, n, &tr);
        kt_attn_spread_stage(&sp, t->d, KT_ATTN_AFTER_PV, &tr);
    }
}

/* acc[h] += sum_t p[h][t] v[t] over the 2 * 'pairs' rows 'v' (row stride d) for a tile of 'gt'
 * heads, 'cb' blocks of 32 channels per pass; 'pw' holds the heads' bf16 weights, two tokens
 * per 32-bit word ([gt][KT_ATTN_CHUNK / 2]). acc is in KT_ATTN_ORDER_PAIR32. gt and cb are
 * compile-time constants after inlining, so the gt x 2cb accumulators stay in registers. A tick
 * of 'tr' per pair of rows and pass. */
static inline KT_ATTN_AVX512BF16 __attribute__((always_inline)) void
pv_tile(float *acc, const uint32_t *pw, const uint16_t *v, int pairs, int64_t d, const int gt,
        const int cb, kt_attn_trickle *tr)
{
    for (int64_t c = 0; c < d; c += 32 * cb) {
        __m512 a[8][4];
        for (int h = 0; h < gt; h++)
            for (int j = 0; j < 2 * cb; j++)
                a[h][j] = _mm512_loadu_ps(acc + h * d + c + 16 * j);
        for (int i = 0; i < pairs; i++) {
            kt_attn_trickle_tick(tr);
            __m512bh x[4];
            for (int b = 0; b < cb; b++) {
                __m512i r0 = _mm512_loadu_si512((const void *)(v + 2 * i * d + c + 32 * b));
                __m512i r1 = _mm512_loadu_si512((const void *)(v + (2 * i + 1) * d + c + 32 * b));
                x[2 * b] = (__m512bh)_mm512_unpacklo_epi16(r0, r1);
                x[2 * b + 1] = (__m512bh)_mm512_unpackhi_epi16(r0, r1);
            }
            for (int h = 0; h < gt; h++) {
                __m512bh w = (__m512bh)_mm512_set1_epi32((int)pw[h * (KT_ATTN_CHUNK / 2) + i]);
                for (int j = 0; j < 2 * cb; j++)
                    a[h][j] = _mm512_dpbf16_ps(a[h][j], x[j], w);
            }
        }
        for (int h = 0; h < gt; h++)
            for (int j = 0; j < 2 * cb; j++)
                _mm512_storeu_ps(acc + h * d + c + 16 * j, a[h][j]);
    }
}

/* Tiles of up to 8 heads: 4 or fewer heads take 64 channels a pass where d allows, more take
 * 32, so a tile never holds more than 16 accumulators. Ticks 'tr' through the tiles' loops. */
static KT_ATTN_AVX512BF16 void pv_bf16(kt_attn_task *t, const uint16_t *pb, const uint16_t *v,
                                       int n, kt_attn_trickle *tr)
{
    int64_t d = t->d, passes = 0;
    int pairs = (n + 1) / 2, wide = d % 64 == 0;
    for (int64_t h0 = 0; h0 < t->g; h0 += 8)
        passes += d / (t->g - h0 <= 4 && wide ? 64 : 32);
    kt_attn_trickle_pace(tr, passes * pairs);
    for (int64_t h0 = 0; h0 < t->g; h0 += 8) {
        float *acc = t->acc + h0 * d;
        const uint32_t *pw = (const uint32_t *)(pb + h0 * KT_ATTN_CHUNK);
        switch (t->g - h0 < 8 ? t->g - h0 : 8) {
        case 1:
            wide ? pv_tile(acc, pw, v, pairs, d, 1, 2, tr)
                 : pv_tile(acc, pw, v, pairs, d, 1, 1, tr);
            break;
        case 2:
            wide ? pv_tile(acc, pw, v, pairs, d, 2, 2, tr)
                 : pv_tile(acc, pw, v, pairs, d, 2, 1, tr);
            break;
        case 3:
            wide ? pv_tile(acc, pw, v, pairs, d, 3, 2, tr)
                 : pv_tile(acc, pw, v, pairs, d, 3, 1, tr);
            break;
        case 4:
            wide ? pv_tile(acc, pw, v, pairs, d, 4, 2, tr)
                 : pv_tile(acc, pw, v, pairs, d, 4, 1, tr);
            break;
        case 5:
            pv_tile(acc, pw, v, pairs, d, 5, 1, tr);
            break;
        case 6:
            pv_tile(acc, pw, v, pairs, d, 6, 1, tr);
            break;
        case 7:
            pv_tile(acc, pw, v, pairs, d, 7, 1, tr);
            break;
        default:
            pv_tile(acc, pw, v, pairs, d, 8, 1, tr);
        }
    }
}

/* The task's bf16 query, and the tails' and weights' scratch after it in t->extra. */
typedef struct pv_scratch {
    uint16_t *qb, *ktail, *vtail, *pb;
} pv_scratch;

static KT_ATTN_AVX512BF16 pv_scratch pv_begin(kt_attn_task *t)
{
    pv_scratch s;
    s.qb = query_bf16(t);
    s.ktail = s.qb + t->g * t->d;
    s.vtail = s.ktail + KT_ATTN_CHUNK * t->d;
    s.pb = s.vtail + KT_ATTN_CHUNK * t->d;
    t->perm = KT_ATTN_ORDER_PAIR32; /* every range of the task comes here, from acc = 0 */
    return s;
}

/* One chunk of kt_attn_dense_range_bf16_pv: the 'n' rows at 'k' and 'v' (tails padded in the
 * scratch 'sc'), prefetching 'sp' (kt_attn_spread_stage). */
static KT_ATTN_AVX512BF16 void step_pv(kt_attn_task *t, const pv_scratch *sc, const uint16_t *k,
                                       const uint16_t *v, int n, const kt_attn_spread *sp)
{
    kt_attn_trickle tr;
    kt_attn_spread_stage(sp, t->d, KT_ATTN_BEFORE_SCORES, &tr);
    scores(t, sc->qb, chunk_rows(sc->ktail, k, n, t->d), &tr);
    kt_attn_spread_stage(sp, t->d, KT_ATTN_AFTER_SCORES, &tr);
    kt_attn_softmax_avx512(t, n, sc->pb);
    kt_attn_spread_stage(sp, t->d, KT_ATTN_BEFORE_PV, &tr);
    pv_bf16(t, sc->pb, chunk_rows(sc->vtail, v, n, t->d), n, &tr);
    kt_attn_spread_stage(sp, t->d, KT_ATTN_AFTER_PV, &tr);
}

KT_ATTN_AVX512BF16 void kt_attn_dense_range_bf16_pv(kt_attn_task *t, const uint16_t *k,
                                                    const uint16_t *v, int64_t t0, int64_t t1)
{
    int64_t d = t->d;
    pv_scratch sc = pv_begin(t);
    size_t row_bytes = (size_t)d * sizeof(uint16_t);
    for (int64_t s = t0; s < t1; s += KT_ATTN_CHUNK) {
        int n = t1 - s < KT_ATTN_CHUNK ? (int)(t1 - s) : KT_ATTN_CHUNK;
        kt_attn_spread sp = kt_attn_spread_at(k, v, row_bytes, s, t1);
        step_pv(t, &sc, k + s * d, v + s * d, n, &sp);
    }
}

/* Chunk 'j' of the stream of kt_attn_dense_blocks_bf16_pv: its first token, its rows in *n. */
static int64_t stream_chunk(const kt_attn_blocks *b, int64_t j, int *n)
{
    int64_t per_block = (b->block + KT_ATTN_CHUNK - 1) / KT_ATTN_CHUNK, s, end;
    if (j < b->kept * per_block) {
        s = b->list[j / per_block] * b->block + j % per_block * KT_ATTN_CHUNK;
        end = (b->list[j / per_block] + 1) * b->block;
    } else {
        s = b->tail0 + (j - b->kept * per_block) * KT_ATTN_CHUNK;
        end = b->tail1;
    }
    *n = end - s < KT_ATTN_CHUNK ? (int)(end - s) : KT_ATTN_CHUNK;
    return s;
}

KT_ATTN_AVX512BF16 void kt_attn_dense_blocks_bf16_pv(kt_attn_task *t, const uint16_t *k,
                                                     const uint16_t *v, const kt_attn_blocks *b)
{
    int64_t d = t->d, per_block = (b->block + KT_ATTN_CHUNK - 1) / KT_ATTN_CHUNK;
    int64_t total = b->kept * per_block + (b->tail1 - b->tail0 + KT_ATTN_CHUNK - 1) / KT_ATTN_CHUNK;
    size_t row_bytes = (size_t)d * sizeof(uint16_t);
    int64_t ahead = KT_ATTN_BLOCKS_AHEAD_BYTES / (2 * KT_ATTN_CHUNK * (int64_t)row_bytes);
    ahead = ahead < 1 ? 1 : ahead;
    pv_scratch sc = pv_begin(t);
    for (int64_t j = 0; j < total; j++) {
        int n, na;
        int64_t s = stream_chunk(b, j, &n);
        kt_attn_spread sp = {NULL, NULL, 0};
        if (j + ahead < total) {
            int64_t sa = stream_chunk(b, j + ahead, &na);
            sp.k = (const char *)(k + sa * d);
            sp.v = (const char *)(v + sa * d);
            sp.bytes = row_bytes * (size_t)na;
        }
        step_pv(t, &sc, k + s * d, v + s * d, n, &sp);
    }
}
