/* attention_dense_bf16_pv.c - dense decode over bf16 K and V with both products by vdpbf16ps,
 * the scores laid out by head (kt_attn_dense_range_bf16_pv, kt_attn_dense_blocks_bf16_pv).
 *
 * The scores are in head lanes (attention_lanes.h): a key row's 2 s channels, broadcast to every
 * head of a tile (vpbroadcastq for s = 2), meet the whole group in one vdpbf16ps. On this Zen 5
 * the scores of a group-8, d = 128 token took 5.5 ns against 6.6 with a reduction tree per head
 * (warm, one thread).
 *
 * The online softmax works on those vectors as they are: the running max per head, spread over
 * its slots, is compared with every score, and only a chunk with a score above it pays for the
 * chunk's max (a fold over the slots), the exp2 of alpha and the rescale of acc; the weights,
 * rounded to bf16 by vcvtneps2bf16, become the words P V broadcasts (two tokens of one head in
 * each), and l adds the rounded weights, so the output stays a convex combination of the value
 * rows.
 *
 * P V: two value rows interleaved by vpunpck{l,h}wd meet a pair of weights, so one instruction
 * adds two tokens' worth of 16 channels for one head. Each value pair is loaded once for every
 * head of the tile, and the heads x 32-channel accumulator tile stays in registers over the
 * chunk. */
#include "attention_dense_bf16.h"
#include "attention_lanes.h"

#include <math.h>
#include <string.h>

/* A range's query in head lanes and its scratch (in t->extra). */
typedef struct pv_scratch {
    const __m512i *qv; /* [tiles][d / (2 s)] */
    uint16_t *ktail, *vtail;
    uint32_t
        *pw; /* the chunk's weights: [tiles][KT_ATTN_CHUNK / 2][heads a tile], word = 2 tokens */
    int s, tile; /* slots per head, heads per tile (16 / s) */
    int64_t tiles;
} pv_scratch;

static KT_ATTN_AVX512BF16 pv_scratch pv_begin(kt_attn_task *t)
{
    pv_scratch sc;
    int64_t d = t->d;
    sc.s = kt_lanes_slots(t->g);
    sc.tile = 16 / sc.s;
    sc.tiles = (t->g + sc.tile - 1) / sc.tile;
    uint32_t *qv = (uint32_t *)(((uintptr_t)t->extra + 63) & ~(uintptr_t)63);
    int64_t steps = d / (2 * sc.s);
    int shift = __builtin_ctz((unsigned)sc.s);
    memset(qv, 0, sizeof(uint32_t) * 16 * (size_t)(sc.tiles * steps)); /* the missing heads */
    for (int64_t h = 0; h < t->g; h++) {
        uint32_t *dst = qv + (h / sc.tile * steps) * 16 + h % sc.tile * sc.s;
        for (int64_t c = 0; c < d; c += 32) {
            /* 16 words of two channels each, nearest even: words c / 2 .. c / 2 + 15 of the head,
             * word w to slot w % s of step w / s */
            uint32_t words[16];
            const float *x = t->qs + h * d + c;
            _mm512_storeu_si512((void *)words, (__m512i)_mm512_cvtne2ps_pbh(_mm512_loadu_ps(x + 16),
                                                                            _mm512_loadu_ps(x)));
            for (int w = 0; w < 16; w++)
                dst[((c / 2 + w) >> shift) * 16 + (w & (sc.s - 1))] = words[w];
        }
    }
    sc.qv = (const __m512i *)qv;
    sc.ktail = (uint16_t *)(qv + sc.tiles * steps * 16);
    sc.vtail = sc.ktail + KT_ATTN_CHUNK * d;
    sc.pw = (uint32_t *)(((uintptr_t)(sc.vtail + KT_ATTN_CHUNK * d) + 63) & ~(uintptr_t)63);
    t->perm = KT_ATTN_ORDER_PAIR32; /* every range of the task comes here, from acc = 0 */
    return sc;
}

/* The 2 s channels of a key row at 'k', broadcast to every head of a tile. */
static inline KT_ATTN_AVX512BF16 __attribute__((always_inline)) __m512bh
key_slots(const uint16_t *k, const int s)
{
    if (s == 2) {
        int64_t x;
        memcpy(&x, k, sizeof x);
        return (__m512bh)_mm512_set1_epi64(x);
    }
    if (s == 4)
        return (__m512bh)_mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)k));
    if (s == 8)
        return (__m512bh)_mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)k));
    return (__m512bh)_mm512_loadu_si512((const void *)k);
}

/* The scores of the chunk's 16 key rows 'k' (row stride d) for one tile of heads, query 'qv':
 * y[u] lane h s + i = the score of head h and token s u + i (u < 16 / s). A tick of 'tr' per
 * step of 2 s channels; at s = 2 (tiles of 5-8 heads, where the step's arithmetic is about as
 * long as its memory time) the tick is kt_attn_trickle_tick_lines of 2 lines, so the d / 4
 * steps cover a chunk's d / 2 lines of keys. */
static inline KT_ATTN_AVX512BF16 __attribute__((always_inline)) void
scores_tile(const __m512i *qv, const uint16_t *k, int64_t d, const int s, __m512 *y,
            kt_attn_trickle *tr)
{
    __m512 a[16];
    kt_attn_trickle near = *tr; /* in registers through the loop (s = 2) */
    for (int r = 0; r < 16; r++)
        a[r] = _mm512_setzero_ps();
    for (int64_t j = 0; j < d / (2 * s); j++) {
        if (s == 2)
            kt_attn_trickle_tick_lines(&near, 2);
        else
            kt_attn_trickle_tick(tr);
        __m512bh q = (__m512bh)_mm512_load_si512((const void *)(qv + j));
        for (int r = 0; r < 16; r++)
            a[r] = _mm512_dpbf16_ps(a[r], q, key_slots(k + r * d + 2 * s * j, s));
    }
    if (s == 2)
        *tr = near;
    kt_lanes_fold_tokens(a, s, y);
}

/* The online-softmax update of heads h0 .. h0 + gt - 1 (one tile) from their scores 'y' of the
 * chunk's first 'n' tokens (kt_lanes_weights): the weights, rounded to bf16 by vcvtneps2bf16,
 * go to 'pw' as words of two tokens ([KT_ATTN_CHUNK / 2][16 / s]: pair, then head), and l adds
 * the rounded weights, so the output stays a convex combination of the value rows. */
static inline KT_ATTN_AVX512BF16 __attribute__((always_inline)) void
softmax_tile(kt_attn_task *t, int64_t h0, int gt, const int s, const __m512 *y, int n, uint32_t *pw)
{
    __m512 p[8];
    kt_lanes_weights(t, h0, gt, s, y, n, 1, p);
    /* word 'lane / 2' of a vector of weights is pair s u / 2 + lane % s / 2 of head lane / s;
     * this order puts it at pair * (16 / s) + head */
    int order[8];
    for (int i = 0; i < 8; i++)
        order[(i % (s / 2)) * (16 / s) + i / (s / 2)] = i;
    __m256i to_pairs = _mm256_loadu_si256((const __m256i *)order);
    __m512 lsum = _mm512_setzero_ps();
    for (int u = 0; u < 16 / s; u++) {
        __m256i b = (__m256i)_mm512_cvtneps_pbh(p[u]);
        __m512i widened = _mm512_slli_epi32(_mm512_cvtepu16_epi32(b), 16);
        lsum = _mm512_add_ps(lsum, _mm512_castsi512_ps(widened));
        if (s != 2 && s != 16)
            b = _mm256_permutevar8x32_epi32(b, to_pairs);
        _mm256_store_si256((__m256i *)(pw + 8 * u), b);
    }
    kt_lanes_add_l(t, h0, gt, s, lsum);
}

/* acc[h] += sum_t p[h][t] v[t] over the 2 * 'pairs' rows 'v' (row stride d) for a tile of 'gt'
 * heads, 'cb' blocks of 32 channels per pass; 'pw' holds the heads' bf16 weights, two tokens
 * per word, pair i of head h at i * 'stride' + h. acc is in KT_ATTN_ORDER_PAIR32. gt and cb are
 * compile-time constants after inlining, so the gt x 2cb accumulators stay in registers. A tick
 * of 'tr' per pair of rows and pass; for 5-8 heads (cb = 1) a kt_attn_trickle_tick_lines of 2
 * lines, so a full chunk's d / 32 passes of 8 pairs cover its d / 2 lines of values. */
static inline KT_ATTN_AVX512BF16 __attribute__((always_inline)) void
pv_tile(float *acc, const uint32_t *pw, int stride, const uint16_t *v, int pairs, int64_t d,
        const int gt, const int cb, kt_attn_trickle *tr)
{
    kt_attn_trickle near = *tr; /* in registers through the loops (gt >= 5) */
    for (int64_t c = 0; c < d; c += 32 * cb) {
        __m512 a[8][4];
        for (int h = 0; h < gt; h++)
            for (int j = 0; j < 2 * cb; j++)
                a[h][j] = _mm512_loadu_ps(acc + h * d + c + 16 * j);
        for (int i = 0; i < pairs; i++) {
            if (gt >= 5)
                kt_attn_trickle_tick_lines(&near, 2 * cb);
            else
                kt_attn_trickle_tick(tr);
            __m512bh x[4];
            for (int b = 0; b < cb; b++) {
                __m512i r0 = _mm512_loadu_si512((const void *)(v + 2 * i * d + c + 32 * b));
                __m512i r1 = _mm512_loadu_si512((const void *)(v + (2 * i + 1) * d + c + 32 * b));
                x[2 * b] = (__m512bh)_mm512_unpacklo_epi16(r0, r1);
                x[2 * b + 1] = (__m512bh)_mm512_unpackhi_epi16(r0, r1);
            }
            for (int h = 0; h < gt; h++) {
                __m512bh w = (__m512bh)_mm512_set1_epi32((int)pw[i * stride + h]);
                for (int j = 0; j < 2 * cb; j++)
                    a[h][j] = _mm512_dpbf16_ps(a[h][j], x[j], w);
            }
        }
        for (int h = 0; h < gt; h++)
            for (int j = 0; j < 2 * cb; j++)
                _mm512_storeu_ps(acc + h * d + c + 16 * j, a[h][j]);
    }
    if (gt >= 5)
        *tr = near;
}

/* Blocks of 32 channels per pass of P V for a tile of 'gt' heads: 4 or fewer heads take 64
 * channels a pass where d allows, more take 32, so a tile never holds more than 16
 * accumulators. */
static int pv_blocks(int64_t d, int64_t gt)
{
    return gt <= 4 && d % 64 == 0 ? 2 : 1;
}

/* P V of one tile of 'gt' heads (h0 its first) over the chunk's 'n' rows 'v', pv_blocks wide. */
static KT_ATTN_AVX512BF16 void pv_heads(kt_attn_task *t, int64_t h0, int gt, const uint32_t *pw,
                                        int stride, const uint16_t *v, int n, kt_attn_trickle *tr)
{
    int64_t d = t->d;
    int pairs = (n + 1) / 2, wide = pv_blocks(d, gt) == 2;
    float *acc = t->acc + h0 * d;
    switch (gt) {
    case 1:
        wide ? pv_tile(acc, pw, stride, v, pairs, d, 1, 2, tr)
             : pv_tile(acc, pw, stride, v, pairs, d, 1, 1, tr);
        break;
    case 2:
        wide ? pv_tile(acc, pw, stride, v, pairs, d, 2, 2, tr)
             : pv_tile(acc, pw, stride, v, pairs, d, 2, 1, tr);
        break;
    case 3:
        wide ? pv_tile(acc, pw, stride, v, pairs, d, 3, 2, tr)
             : pv_tile(acc, pw, stride, v, pairs, d, 3, 1, tr);
        break;
    case 4:
        wide ? pv_tile(acc, pw, stride, v, pairs, d, 4, 2, tr)
             : pv_tile(acc, pw, stride, v, pairs, d, 4, 1, tr);
        break;
    case 5:
        pv_tile(acc, pw, stride, v, pairs, d, 5, 1, tr);
        break;
    case 6:
        pv_tile(acc, pw, stride, v, pairs, d, 6, 1, tr);
        break;
    case 7:
        pv_tile(acc, pw, stride, v, pairs, d, 7, 1, tr);
        break;
    default:
        pv_tile(acc, pw, stride, v, pairs, d, 8, 1, tr);
    }
}

/* Scores and softmax of every tile of the chunk's rows 'k', 's' slots per head and rows of 'dc'
 * channels (compile-time constants after inlining, so the 16 rows' addresses are offsets from
 * one register). The first tile's steps issue the prefetches of 'tr' (scores_tile). */
static inline KT_ATTN_AVX512BF16 __attribute__((always_inline)) void
scores_softmax_d(kt_attn_task *t, const pv_scratch *sc, const uint16_t *k, int n, const int s,
                 const int64_t dc, kt_attn_trickle *tr)
{
    int64_t steps = dc / (2 * s);
    kt_attn_trickle idle = kt_attn_trickle_of(NULL, 0);
    kt_attn_trickle_pace(tr, steps);
    for (int64_t tile = 0; tile < sc->tiles; tile++) {
        __m512 y[8];
        int64_t h0 = tile * sc->tile;
        int gt = t->g - h0 < sc->tile ? (int)(t->g - h0) : sc->tile;
        scores_tile(sc->qv + tile * steps, k, dc, s, y, tile == 0 ? tr : &idle);
        softmax_tile(t, h0, gt, s, y, n, sc->pw + tile * (KT_ATTN_CHUNK / 2) * sc->tile);
    }
}

static inline KT_ATTN_AVX512BF16 __attribute__((always_inline)) void
scores_softmax(kt_attn_task *t, const pv_scratch *sc, const uint16_t *k, int n, const int s,
               kt_attn_trickle *tr)
{
    switch (t->d) {
    case 64:
        scores_softmax_d(t, sc, k, n, s, 64, tr);
        break;
    case 128:
        scores_softmax_d(t, sc, k, n, s, 128, tr);
        break;
    case 256:
        scores_softmax_d(t, sc, k, n, s, 256, tr);
        break;
    default:
        scores_softmax_d(t, sc, k, n, s, t->d, tr);
    }
}

/* One chunk of kt_attn_dense_range_bf16_pv: the 'n' rows at 'k' and 'v' (tails padded in the
 * scratch 'sc'), prefetching 'sp' (kt_attn_spread_stage). */
static KT_ATTN_AVX512BF16 void step_pv(kt_attn_task *t, const pv_scratch *sc, const uint16_t *k,
                                       const uint16_t *v, int n, const kt_attn_spread *sp)
{
    kt_attn_trickle tr;
    k = kt_attn_bf16_chunk_rows(sc->ktail, k, n, t->d);
    kt_attn_spread_stage(sp, KT_ATTN_BEFORE_SCORES, &tr);
    switch (sc->s) {
    case 2:
        scores_softmax(t, sc, k, n, 2, &tr);
        break;
    case 4:
        scores_softmax(t, sc, k, n, 4, &tr);
        break;
    case 8:
        scores_softmax(t, sc, k, n, 8, &tr);
        break;
    default:
        scores_softmax(t, sc, k, n, 16, &tr);
    }
    kt_attn_spread_stage(sp, KT_ATTN_AFTER_SCORES, &tr);
    kt_attn_spread_stage(sp, KT_ATTN_BEFORE_PV, &tr);
    v = kt_attn_bf16_chunk_rows(sc->vtail, v, n, t->d);
    kt_attn_trickle idle = kt_attn_trickle_of(NULL, 0);
    int gt0 = t->g < sc->tile ? (int)t->g : sc->tile;
    kt_attn_trickle_pace(&tr, t->d / (32 * pv_blocks(t->d, gt0)) * ((n + 1) / 2));
    for (int64_t tile = 0; tile < sc->tiles; tile++) { /* the first tile prefetches (pv_tile) */
        int64_t h0 = tile * sc->tile;
        int gt = t->g - h0 < sc->tile ? (int)(t->g - h0) : sc->tile;
        pv_heads(t, h0, gt, sc->pw + tile * (KT_ATTN_CHUNK / 2) * sc->tile, sc->tile, v, n,
                 tile == 0 ? &tr : &idle);
    }
    kt_attn_spread_stage(sp, KT_ATTN_AFTER_PV, &tr);
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
