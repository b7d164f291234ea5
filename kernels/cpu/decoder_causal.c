/* decoder_causal.c - the causal multi-query attention of a decoder_layer prefill chunk, dense,
 * one thread's share per call (contract in decoder_kernels.h).
 *
 * A task is one (sequence, KV head) and a block of up to KT_DLK_CAUSAL_ROWS new tokens: its
 * rows x G query vectors (every head of the GQA group) walk the keys in 32-token chunks, so each
 * key and value row is converted to fp32 once per task, not once per query. Token i sees the
 * cached tokens and the new tokens 0..i, so in a chunk its keys are a prefix: the masked tail is
 * skipped, never scored. Softmax in base 2 with a running max (online), fp32 throughout. */
#include "decoder_kernels.h"
#include "decoder_simd.h"

enum { CHUNK = 32, ROWS = KT_DLK_CAUSAL_ROWS };

size_t kt_dlk_causal_scratch_floats(const kt_dl_dims *m)
{
    size_t nq = (size_t)(ROWS * m->g), d = (size_t)m->d;
    return 2 * d + 2 * nq * d + nq * CHUNK + 2 * nq + 32;
}

/* The scratch of one task: rows k and v, then per query vector (row r, head h at r G + h) its
 * query (pre-scaled), accumulator, weights of the current chunk, running max and sum. */
typedef struct causal_scratch {
    float *krow, *vrow, *q, *acc, *s, *mx, *sum;
} causal_scratch;

static causal_scratch scratch_of(float *base, const kt_dl_dims *m)
{
    size_t nq = (size_t)(ROWS * m->g), d = (size_t)m->d;
    causal_scratch c;
    c.krow = base;
    c.vrow = c.krow + d;
    c.q = c.vrow + d;
    c.acc = c.q + nq * d;
    c.s = c.acc + nq * d;
    c.mx = c.s + nq * CHUNK;
    c.sum = c.mx + nq;
    return c;
}

/* acc += w * v over d values. */
static void axpy(float *acc, float w, const float *v, int64_t d)
{
    __m256 wv = _mm256_set1_ps(w);
    int64_t c = 0;
    for (; c + 8 <= d; c += 8)
        _mm256_storeu_ps(acc + c,
                         _mm256_fmadd_ps(wv, _mm256_loadu_ps(v + c), _mm256_loadu_ps(acc + c)));
    for (; c < d; c++)
        acc[c] += w * v[c];
}

/* acc *= s over d values. */
static void scale(float *acc, float s, int64_t d)
{
    __m256 sv = _mm256_set1_ps(s);
    int64_t c = 0;
    for (; c + 8 <= d; c += 8)
        _mm256_storeu_ps(acc + c, _mm256_mul_ps(_mm256_loadu_ps(acc + c), sv));
    for (; c < d; c++)
        acc[c] *= s;
}

/* Scores of keys [c0, c0 + n) for the nq query vectors (vector j sees the first lim[j / G]),
 * turned into weights against the updated running max; each accumulator is rescaled to it. */
static void score_chunk(const causal_scratch *sc, const kt_dlk_causal_args *a, size_t head,
                        int64_t c0, int n, const int *lim, int64_t nq)
{
    const kt_dl_dims *m = a->m;
    int64_t d = m->d, g = m->g;
    for (int tt = 0; tt < n; tt++) {
        kt_dls_load_row(sc->krow, a->k_cache, a->dt, head + (size_t)((c0 + tt) * d), d);
        int64_t j = 0;
        for (; j + 4 <= nq; j += 4) {
            float dots[4];
            kt_dls_dot4(dots, sc->q + j * d, sc->krow, d);
            for (int e = 0; e < 4; e++)
                sc->s[(j + e) * CHUNK + tt] = dots[e];
        }
        for (; j < nq; j++)
            sc->s[j * CHUNK + tt] = kt_dls_dot(sc->q + j * d, sc->krow, d);
    }
    /* masked scores are never read: each vector's weights stop at its limit */
    for (int64_t j = 0; j < nq; j++) {
        int n_j = lim[j / g];
        float *sj = sc->s + j * CHUNK, mx = sc->mx[j];
        if (n_j == 0)
            continue;
        for (int tt = 0; tt < n_j; tt++)
            mx = sj[tt] > mx ? sj[tt] : mx;
        float corr = kt_dls_exp2_neg(sc->mx[j] - mx), sum = 0;
#pragma omp simd reduction(+ : sum)
        for (int tt = 0; tt < n_j; tt++) {
            sj[tt] = kt_dls_exp2_neg(sj[tt] - mx);
            sum += sj[tt];
        }
        sc->mx[j] = mx;
        sc->sum[j] = sc->sum[j] * corr + sum;
        if (corr != 1.0f)
            scale(sc->acc + j * m->d, corr, m->d);
    }
}

/* One task: rows [i0, i1) of the chunk for (b, kh). */
static void causal_task(const kt_dlk_causal_args *a, float *base, int64_t b, int64_t kh, int64_t i0,
                        int64_t i1)
{
    const kt_dl_dims *m = a->m;
    int64_t d = m->d, g = m->g, nq = (i1 - i0) * g;
    causal_scratch sc = scratch_of(base, m);
    size_t head = (size_t)((b * m->hkv + kh) * (m->t + m->c) * d);
    float scale = (float)(1.4426950408889634 / sqrt((double)d)); /* log2(e) / sqrt(d) */
    for (int64_t r = i0; r < i1; r++) {
        for (int64_t h = 0; h < g; h++) {
            int64_t j = (r - i0) * g + h;
            size_t at = (size_t)(((b * m->c + r) * m->hq + kh * g + h) * d);
            kt_dls_load_row(sc.q + j * d, a->q, a->q_dt, at, d);
            for (int64_t c = 0; c < d; c++)
                sc.q[j * d + c] *= scale;
            memset(sc.acc + j * d, 0, sizeof(float) * (size_t)d);
            sc.mx[j] = -INFINITY;
            sc.sum[j] = 0;
        }
    }
    int64_t keys = m->t + i1; /* the last row sees t + i1 keys */
    for (int64_t c0 = 0; c0 < keys; c0 += CHUNK) {
        int n = keys - c0 < CHUNK ? (int)(keys - c0) : CHUNK, lim[ROWS];
        for (int64_t r = i0; r < i1; r++) {
            int64_t seen = m->t + r + 1 - c0;
            lim[r - i0] = seen < 0 ? 0 : seen > n ? n : (int)seen;
        }
        score_chunk(&sc, a, head, c0, n, lim, nq);
        for (int tt = 0; tt < n; tt++) {
            kt_dls_load_row(sc.vrow, a->v_cache, a->dt, head + (size_t)((c0 + tt) * d), d);
            for (int64_t j = 0; j < nq; j++) {
                int n_j = lim[j / g];
                if (tt >= n_j)
                    continue;
                axpy(sc.acc + j * d, sc.s[j * CHUNK + tt], sc.vrow, d);
            }
        }
    }
    for (int64_t j = 0; j < nq; j++) {
        int64_t r = i0 + j / g, h = j % g;
        size_t at = (size_t)(((b * m->c + r) * m->hq + kh * g + h) * d);
        float inv = 1.0f / sc.sum[j];
        for (int64_t c = 0; c < d; c++)
            kt_cpu_store1(a->out, a->out_dt, at + (size_t)c, sc.acc[j * d + c] * inv);
    }
}

void kt_dlk_attn_causal(const kt_dlk_causal_args *a, int tid, int nth)
{
    const kt_dl_dims *m = a->m;
    int64_t blocks = (m->c + ROWS - 1) / ROWS, tasks = m->b * m->hkv * blocks;
    float *base = a->scratch + (size_t)tid * kt_dlk_causal_scratch_floats(m);
    /* the last blocks see the most keys: deal them first, round robin */
    for (int64_t task = tid; task < tasks; task += nth) {
        int64_t blk = blocks - 1 - task % blocks, bk = task / blocks;
        int64_t i0 = blk * ROWS, i1 = i0 + ROWS < m->c ? i0 + ROWS : m->c;
        causal_task(a, base, bk / m->hkv, bk % m->hkv, i0, i1);
    }
}
