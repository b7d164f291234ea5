/* decoder_kernels.c - the decoder_layer's own stage kernels (AVX2 + FMA), one thread's share
 * each; contracts in decoder_kernels.h. */
#include "decoder_kernels.h"
#include "decoder_simd.h"

#include <math.h>
#include <string.h>

void kt_dlk_rmsnorm(void *out, kt_dtype out_dt, const void *x, kt_dtype x_dt, const void *g,
                    kt_dtype g_dt, int64_t rows, int64_t h, int tid, int nth)
{
    int64_t lo, hi;
    kt_dlk_range(&lo, &hi, rows, tid, nth);
    for (int64_t r = lo; r < hi; r++) {
        float ss = 0;
        for (int64_t c = 0; c < h; c++) {
            float v = kt_cpu_load1(x, x_dt, (size_t)(r * h + c));
            ss += v * v;
        }
        float inv = 1.0f / sqrtf(ss / (float)h + (float)KT_DL_RMS_EPS);
        for (int64_t c = 0; c < h; c++) {
            size_t at = (size_t)(r * h + c);
            kt_cpu_store1(out, out_dt, at,
                          kt_cpu_load1(x, x_dt, at) * inv * kt_cpu_load1(g, g_dt, (size_t)c));
        }
    }
}

void kt_dlk_add(void *out, kt_dtype out_dt, const void *a, kt_dtype a_dt, const void *b,
                kt_dtype b_dt, int64_t n, int tid, int nth)
{
    int64_t lo, hi;
    kt_dlk_range(&lo, &hi, n, tid, nth);
    for (int64_t e = lo; e < hi; e++)
        kt_cpu_store1(out, out_dt, (size_t)e,
                      kt_cpu_load1(a, a_dt, (size_t)e) + kt_cpu_load1(b, b_dt, (size_t)e));
}

/* dots[r] = x[r0 + r] . w_row for r < rows (<= 4), k elements. */
static void dot_rows(float *dots, const float *x, int64_t k, const void *w, kt_dtype dt,
                     size_t w_at, int rows)
{
    __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(),
                     _mm256_setzero_ps()};
    int64_t c = 0;
    for (; c + 8 <= k; c += 8) {
        __m256 wv = kt_cpu_load8(w, dt, w_at + (size_t)c);
        for (int r = 0; r < rows; r++)
            acc[r] = _mm256_fmadd_ps(_mm256_loadu_ps(x + r * k + c), wv, acc[r]);
    }
    for (int r = 0; r < rows; r++) {
        float s = kt_hsum8(acc[r]);
        for (int64_t cc = c; cc < k; cc++)
            s += x[r * k + cc] * kt_cpu_load1(w, dt, w_at + (size_t)cc);
        dots[r] = s;
    }
}

/* Writes y[r][j] (and its stored copy) after the residual. */
static void put(const kt_dlk_gemv_args *a, int64_t r, int64_t j, float v)
{
    size_t at = (size_t)(r * a->n + j);
    if (a->res)
        v += kt_cpu_load1(a->res, a->res_dt, at);
    a->y[at] = v;
    if (a->store)
        kt_cpu_store1(a->store, a->store_dt, at, v);
}

void kt_dlk_gemv(const kt_dlk_gemv_args *a, int tid, int nth)
{
    int64_t lo, hi;
    kt_dlk_range(&lo, &hi, a->n, tid, nth);
    for (int64_t j = lo; j < hi; j++) {
        for (int64_t r0 = 0; r0 < a->m; r0 += 4) {
            int rows = a->m - r0 < 4 ? (int)(a->m - r0) : 4;
            float g[4], u[4];
            const float *x = a->x + r0 * a->k;
            dot_rows(g, x, a->k, a->w, a->w_dt, (size_t)(j * a->k), rows);
            if (a->glu)
                dot_rows(u, x, a->k, a->w, a->w_dt, (size_t)((a->n + j) * a->k), rows);
            for (int r = 0; r < rows; r++)
                put(a, r0 + r, j, a->glu ? kt_cpu_silu_mul(g[r], u[r]) : g[r]);
        }
    }
}

void kt_dlk_rope_append(const kt_dlk_rope_args *a, int tid, int nth)
{
    const kt_dl_dims *m = a->m;
    int64_t d = m->d, half = d / 2, per_row = m->hq + 2 * m->hkv, lo, hi;
    kt_dlk_range(&lo, &hi, m->rows * per_row, tid, nth);
    for (int64_t task = lo; task < hi; task++) {
        int64_t r = task / per_row, hh = task % per_row, b = r / m->c, i = r % m->c;
        size_t src = (size_t)(r * m->qkv + hh * d);
        int is_v = hh >= m->hq + m->hkv, is_k = !is_v && hh >= m->hq;
        int64_t kh = is_v ? hh - m->hq - m->hkv : hh - m->hq;
        size_t cache_at = (size_t)(((b * m->hkv + kh) * (m->t + m->c) + m->t + i) * d);
        size_t new_at = (size_t)(((b * m->hkv + kh) * m->c + i) * d);
        const float *cs = a->cosv + i * half, *sn = a->sinv + i * half;
        for (int64_t c = 0; c < half; c++) {
            float x0 = kt_cpu_load1(a->qkv, a->src_dt, src + (size_t)c);
            float x1 = kt_cpu_load1(a->qkv, a->src_dt, src + (size_t)(c + half));
            float y0 = x0, y1 = x1;
            if (!is_v) {
                y0 = x0 * cs[c] - x1 * sn[c];
                y1 = x0 * sn[c] + x1 * cs[c];
            }
            if (!is_k && !is_v) {
                size_t q_at = (size_t)((r * m->hq + hh) * d);
                kt_cpu_store1(a->q_out, a->q_dt, q_at + (size_t)c, y0);
                kt_cpu_store1(a->q_out, a->q_dt, q_at + (size_t)(c + half), y1);
                continue;
            }
            void *cache = is_k ? a->k_cache : a->v_cache, *out = is_k ? a->k_new : a->v_new;
            kt_cpu_store1(cache, a->dt, cache_at + (size_t)c, y0);
            kt_cpu_store1(cache, a->dt, cache_at + (size_t)(c + half), y1);
            kt_cpu_store1(out, a->dt, new_at + (size_t)c, y0);
            kt_cpu_store1(out, a->dt, new_at + (size_t)(c + half), y1);
        }
    }
}

int64_t kt_dlk_attn_tasks(const kt_dl_dims *m, int64_t split)
{
    return m->b * m->hkv * ((m->t + 1 + split - 1) / split);
}

enum { CHUNK = 32 };

size_t kt_dlk_attn_scratch_floats(const kt_dl_dims *m)
{
    return (size_t)(2 * m->d + m->g * CHUNK + 16);
}

/* One task: tokens [t0, t1) of (b, kh) for the G heads; part = G x (max, sum, out[d]). */
static void attn_task(const kt_dlk_attn_args *a, float *part, float *scratch, int64_t b, int64_t kh,
                      int64_t t0, int64_t t1)
{
    const kt_dl_dims *m = a->m;
    int64_t d = m->d, g = m->g, stride = d + 2;
    float *krow = scratch, *vrow = scratch + d, *s = scratch + 2 * d;
    const float *q = a->q + (b * m->hq + kh * g) * d;
    size_t head = (size_t)((b * m->hkv + kh) * (m->t + 1) * d);
    float scale = (float)(1.4426950408889634 / sqrt((double)d)); /* log2(e) / sqrt(d) */
    for (int64_t h = 0; h < g; h++) {
        part[h * stride] = -INFINITY;
        part[h * stride + 1] = 0;
        memset(part + h * stride + 2, 0, sizeof(float) * (size_t)d);
    }
    for (int64_t c0 = t0; c0 < t1; c0 += CHUNK) {
        int n = t1 - c0 < CHUNK ? (int)(t1 - c0) : CHUNK;
        for (int tt = 0; tt < n; tt++) {
            kt_dls_load_row(krow, a->k_cache, a->dt, head + (size_t)((c0 + tt) * d), d);
            int64_t h = 0;
            for (; h + 4 <= g; h += 4) {
                float dots[4];
                kt_dls_dot4(dots, q + h * d, krow, d);
                for (int j = 0; j < 4; j++)
                    s[(h + j) * CHUNK + tt] = dots[j] * scale;
            }
            for (; h < g; h++)
                s[h * CHUNK + tt] = kt_dls_dot(q + h * d, krow, d) * scale;
        }
        for (int64_t h = 0; h < g; h++) {
            float *ph = part + h * stride, mx = ph[0], *sh = s + h * CHUNK;
            for (int tt = 0; tt < n; tt++)
                mx = sh[tt] > mx ? sh[tt] : mx;
            float corr = kt_dls_exp2_neg(ph[0] - mx), sum = 0;
#pragma omp simd reduction(+ : sum)
            for (int tt = 0; tt < n; tt++) {
                sh[tt] = kt_dls_exp2_neg(sh[tt] - mx);
                sum += sh[tt];
            }
            ph[0] = mx;
            ph[1] = ph[1] * corr + sum;
            for (int64_t c = 0; c < d; c++)
                ph[2 + c] *= corr;
        }
        for (int tt = 0; tt < n; tt++) {
            kt_dls_load_row(vrow, a->v_cache, a->dt, head + (size_t)((c0 + tt) * d), d);
            for (int64_t h = 0; h < g; h++) {
                float w = s[h * CHUNK + tt], *acc = part + h * stride + 2;
                for (int64_t c = 0; c < d; c++)
                    acc[c] += w * vrow[c];
            }
        }
    }
}

void kt_dlk_attn_partial(const kt_dlk_attn_args *a, int tid, int nth)
{
    const kt_dl_dims *m = a->m;
    int64_t n_split = (m->t + 1 + a->split - 1) / a->split, tasks = kt_dlk_attn_tasks(m, a->split);
    float *scratch = a->scratch + (size_t)tid * kt_dlk_attn_scratch_floats(m);
    for (int64_t task = tid; task < tasks; task += nth) {
        int64_t bk = task / n_split, sp = task % n_split;
        int64_t t0 = sp * a->split, t1 = t0 + a->split < m->t + 1 ? t0 + a->split : m->t + 1;
        float *part = a->partials + (size_t)(task * m->g * (m->d + 2));
        attn_task(a, part, scratch, bk / m->hkv, bk % m->hkv, t0, t1);
    }
}

void kt_dlk_attn_merge(const kt_dlk_attn_args *a, int tid, int nth)
{
    const kt_dl_dims *m = a->m;
    int64_t n_split = (m->t + 1 + a->split - 1) / a->split, d = m->d, lo, hi;
    kt_dlk_range(&lo, &hi, m->b * m->hq, tid, nth);
    for (int64_t bh = lo; bh < hi; bh++) {
        int64_t b = bh / m->hq, h = bh % m->hq, kh = h / m->g, hg = h % m->g;
        const float *first = a->partials + (size_t)(((b * m->hkv + kh) * n_split) * m->g * (d + 2));
        float mx = -INFINITY, sum = 0, *out = a->out + bh * d;
        for (int64_t sp = 0; sp < n_split; sp++) {
            const float *ph = first + (sp * m->g + hg) * (d + 2);
            mx = ph[0] > mx ? ph[0] : mx;
        }
        memset(out, 0, sizeof(float) * (size_t)d);
        for (int64_t sp = 0; sp < n_split; sp++) {
            const float *ph = first + (sp * m->g + hg) * (d + 2);
            float w = kt_dls_exp2_neg(ph[0] - mx);
            sum += ph[1] * w;
            for (int64_t c = 0; c < d; c++)
                out[c] += ph[2 + c] * w;
        }
        for (int64_t c = 0; c < d; c++)
            out[c] /= sum;
    }
}
