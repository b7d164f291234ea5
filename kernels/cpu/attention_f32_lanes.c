/* attention_f32_lanes.c - the scores and online softmax of the AVX-512 dense step over fp32 key
 * rows (stored fp32, or fp16 and bf16 widened into t->kbuf), in head lanes (attention_lanes.h):
 * a key row's s channels, broadcast to every head of a tile (vbroadcastsd for s = 2), meet the
 * tile's query in one FMA, so the 16 tokens of a chunk take 16 accumulators and no reduction
 * tree per head. The weights are then transposed into t->p ([g][KT_ATTN_CHUNK]), the layout of
 * kt_attn_pv_avx512. */
#include "attention_lanes.h"

#include <string.h>

/* The s channels of a key row at 'k', broadcast to every head of a tile. */
KT_LANES_INLINE __m512 key_slots(const float *k, const int s)
{
    if (s == 2) {
        double x;
        memcpy(&x, k, sizeof x);
        return _mm512_castpd_ps(_mm512_set1_pd(x));
    }
    if (s == 4)
        return _mm512_broadcast_f32x4(_mm_loadu_ps(k));
    if (s == 8)
        return _mm512_broadcast_f32x8(_mm256_loadu_ps(k));
    return _mm512_loadu_ps(k);
}

/* The scores of the chunk's 16 key rows 'k' (row stride dc) for one tile of heads, query 'ql'
 * in head lanes: y[u] lane h s + i = the score of head h and token s u + i. A tick of 'tr' per
 * step of s channels; at s = 2 (5-8 heads, one tile) a kt_attn_trickle_tick_lines of 2 lines,
 * so the d / 2 steps cover a chunk's d lines of keys. */
KT_LANES_INLINE void scores_tile(const float *ql, const float *k, const int64_t dc, const int s,
                                 __m512 *y, kt_attn_trickle *tr)
{
    __m512 a[16];
    kt_attn_trickle near = *tr; /* in registers through the loop (s = 2) */
    for (int r = 0; r < 16; r++)
        a[r] = _mm512_setzero_ps();
    for (int64_t j = 0; j < dc / s; j++) {
        if (s == 2)
            kt_attn_trickle_tick_lines(&near, 2);
        else
            kt_attn_trickle_tick(tr);
        __m512 q = _mm512_loadu_ps(ql + j * 16);
        for (int r = 0; r < 16; r++)
            a[r] = _mm512_fmadd_ps(q, key_slots(k + r * dc + s * j, s), a[r]);
    }
    if (s == 2)
        *tr = near;
    kt_lanes_fold_tokens(a, s, y);
}

/* Writes the weights 'p' of a tile (head lanes, 16 / s vectors) to rows 'out' + h KT_ATTN_CHUNK,
 * h < gt: a transpose of 8 x 8 pairs (s = 2), 4 x 4 quarters (s = 4) or 2 x 2 halves (s = 8). */
KT_LANES_INLINE void store_rows(float *out, int gt, const int s, const __m512 *p)
{
    __m512 row[8];
    if (s == 2) {
        __m512d t[8], u[8];
        for (int i = 0; i < 4; i++) {
            t[2 * i] =
                _mm512_unpacklo_pd(_mm512_castps_pd(p[2 * i]), _mm512_castps_pd(p[2 * i + 1]));
            t[2 * i + 1] =
                _mm512_unpackhi_pd(_mm512_castps_pd(p[2 * i]), _mm512_castps_pd(p[2 * i + 1]));
        }
        for (int i = 0; i < 2; i++) {
            u[4 * i] = _mm512_shuffle_f64x2(t[4 * i], t[4 * i + 2], 0x88);
            u[4 * i + 1] = _mm512_shuffle_f64x2(t[4 * i], t[4 * i + 2], 0xdd);
            u[4 * i + 2] = _mm512_shuffle_f64x2(t[4 * i + 1], t[4 * i + 3], 0x88);
            u[4 * i + 3] = _mm512_shuffle_f64x2(t[4 * i + 1], t[4 * i + 3], 0xdd);
        }
        /* u[0]: pairs 0 and 4 of rows 0-3, u[1]: pairs 2 and 6, u[2]: 1 and 5, u[3]: 3 and 7 */
        const int from[4] = {0, 2, 1, 3};
        for (int i = 0; i < 4; i++) {
            row[i] = _mm512_castpd_ps(_mm512_shuffle_f64x2(u[from[i]], u[4 + from[i]], 0x88));
            row[4 + i] = _mm512_castpd_ps(_mm512_shuffle_f64x2(u[from[i]], u[4 + from[i]], 0xdd));
        }
    } else if (s == 4) {
        __m512 a = _mm512_shuffle_f32x4(p[0], p[1], 0x44),
               b = _mm512_shuffle_f32x4(p[2], p[3], 0x44);
        __m512 c = _mm512_shuffle_f32x4(p[0], p[1], 0xee),
               d = _mm512_shuffle_f32x4(p[2], p[3], 0xee);
        row[0] = _mm512_shuffle_f32x4(a, b, 0x88);
        row[1] = _mm512_shuffle_f32x4(a, b, 0xdd);
        row[2] = _mm512_shuffle_f32x4(c, d, 0x88);
        row[3] = _mm512_shuffle_f32x4(c, d, 0xdd);
    } else if (s == 8) {
        row[0] = _mm512_shuffle_f32x4(p[0], p[1], 0x44);
        row[1] = _mm512_shuffle_f32x4(p[0], p[1], 0xee);
    } else {
        row[0] = p[0];
    }
    for (int h = 0; h < gt; h++)
        _mm512_storeu_ps(out + h * KT_ATTN_CHUNK, row[h]);
}

/* Every tile of the chunk's rows 'k', 's' slots per head and 'dc' channels a row
 * (compile-time constants after inlining). */
KT_LANES_INLINE void scores_softmax_d(kt_attn_task *t, const float *k, int n, const int s,
                                      const int64_t dc, kt_attn_trickle *tr)
{
    int tile = 16 / s;
    int64_t steps = dc / s, tiles = (t->g + tile - 1) / tile;
    kt_attn_trickle_pace(tr, tiles * steps);
    for (int64_t i = 0; i < tiles; i++) {
        __m512 y[8], p[8], lsum = _mm512_setzero_ps();
        int64_t h0 = i * tile;
        int gt = t->g - h0 < tile ? (int)(t->g - h0) : tile;
        scores_tile(t->ql + i * steps * 16, k, dc, s, y, tr);
        kt_lanes_weights(t, h0, gt, s, y, n, 0, p);
        for (int u = 0; u < 16 / s; u++)
            lsum = _mm512_add_ps(lsum, p[u]);
        kt_lanes_add_l(t, h0, gt, s, lsum);
        store_rows(t->p + h0 * KT_ATTN_CHUNK, gt, s, p);
    }
}

KT_LANES_INLINE void scores_softmax_s(kt_attn_task *t, const float *k, int n, const int s,
                                      kt_attn_trickle *tr)
{
    switch (t->d) {
    case 64:
        scores_softmax_d(t, k, n, s, 64, tr);
        break;
    case 128:
        scores_softmax_d(t, k, n, s, 128, tr);
        break;
    case 256:
        scores_softmax_d(t, k, n, s, 256, tr);
        break;
    default:
        scores_softmax_d(t, k, n, s, t->d, tr);
    }
}

KT_ATTN_AVX512 void kt_attn_scores_softmax_lanes(kt_attn_task *t, const float *k, int n,
                                                 kt_attn_trickle *tr)
{
    switch (kt_lanes_slots(t->g)) {
    case 2:
        scores_softmax_s(t, k, n, 2, tr);
        break;
    case 4:
        scores_softmax_s(t, k, n, 4, tr);
        break;
    case 8:
        scores_softmax_s(t, k, n, 8, tr);
        break;
    default:
        scores_softmax_s(t, k, n, 16, tr);
    }
}
