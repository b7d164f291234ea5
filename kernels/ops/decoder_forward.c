/* decoder_forward.c - the decoder_layer step or chunk in float64 (the op's reference, and the
 * pass that plants llm caches while generating inputs). */
#include "decoder_layer.h"

#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

void kt_dl_rope_angles(double *cos_out, double *sin_out, int64_t d, int64_t pos)
{
    for (int64_t c = 0; c < d / 2; c++) {
        double angle = (double)pos * pow(KT_DL_ROPE_THETA, -2.0 * (double)c / (double)d);
        cos_out[c] = cos(angle);
        sin_out[c] = sin(angle);
    }
}

typedef struct fwd {
    const kt_problem *p;
    kt_dl_dims m;
    size_t size;
    double *x, *xn, *qkv, *attn, *o, *gu, *a, *cosv, *sinv;
} fwd;

/* One thread's scratch for attend: a converted cache row, the scores of the G heads over the
 * T + C keys, their maxima and sums. */
typedef struct attend_scratch {
    double *row, *s, *mx, *sum;
} attend_scratch;

/* out[r] = x[r] / sqrt(mean(x[r]^2) + eps) * g, for the R rows. */
static void rmsnorm(const fwd *f, double *out, const double *x, const void *g, size_t g_off)
{
    int64_t h = f->m.h;
    for (int64_t r = 0; r < f->m.rows; r++) {
        double ss = 0;
        for (int64_t c = 0; c < h; c++)
            ss += x[r * h + c] * x[r * h + c];
        double inv = 1.0 / sqrt(ss / (double)h + KT_DL_RMS_EPS);
        for (int64_t c = 0; c < h; c++)
            out[r * h + c] = x[r * h + c] * inv * kt_dtype_load(g, f->p->dtype, g_off + (size_t)c);
    }
}

/* Rotates the d channels at 'v' by RoPE at position T + i (i: the token in the chunk). */
static void rope(const fwd *f, double *v, int64_t i)
{
    int64_t half = f->m.d / 2;
    const double *cs = f->cosv + i * half, *sn = f->sinv + i * half;
    for (int64_t c = 0; c < half; c++) {
        double x0 = v[c], x1 = v[c + half];
        v[c] = x0 * cs[c] - x1 * sn[c];
        v[c + half] = x0 * sn[c] + x1 * cs[c];
    }
}

/* Causal softmax attention of the G query heads of new token i of (b, kh) over the T cached
 * tokens of block l and the new tokens 0..i (from f->qkv, float64), into f->attn. */
static void attend(const fwd *f, attend_scratch *sc, const void *const *in, int64_t l, int64_t b,
                   int64_t kh, int64_t i)
{
    const kt_dl_dims *m = &f->m;
    int64_t d = m->d, n = m->t + i + 1, row = b * m->c + i;
    size_t base = kt_dl_off_cache(m, l) + (size_t)((b * m->hkv + kh) * m->t * d);
    const double *q = f->qkv + row * m->qkv + kh * m->g * d;
    double *o = f->attn + (row * m->hq + kh * m->g) * d, scale = 1.0 / sqrt((double)d);
    for (int64_t h = 0; h < m->g; h++)
        sc->mx[h] = -INFINITY, sc->sum[h] = 0;
    /* new token j's key and value are at qkv[b c + j], after the queries */
    const double *k_new = f->qkv + b * m->c * m->qkv + (m->hq + kh) * d;
    const double *v_new = k_new + m->hkv * d;
    for (int64_t t = 0; t < n; t++) {
        const double *k = t < m->t ? NULL : k_new + (t - m->t) * m->qkv;
        if (t < m->t) {
            kt_dtype_to_double(sc->row, (const char *)in[KT_DL_KCACHE] + (base + t * d) * f->size,
                               f->p->dtype, (size_t)d);
            k = sc->row;
        }
        for (int64_t h = 0; h < m->g; h++) {
            double dot = 0;
            for (int64_t c = 0; c < d; c++)
                dot += q[h * d + c] * k[c];
            sc->s[h * n + t] = dot * scale;
            sc->mx[h] = fmax(sc->mx[h], dot * scale);
        }
    }
    memset(o, 0, sizeof(double) * (size_t)(m->g * d));
    for (int64_t t = 0; t < n; t++) {
        const double *v = t < m->t ? NULL : v_new + (t - m->t) * m->qkv;
        if (t < m->t) {
            kt_dtype_to_double(sc->row, (const char *)in[KT_DL_VCACHE] + (base + t * d) * f->size,
                               f->p->dtype, (size_t)d);
            v = sc->row;
        }
        for (int64_t h = 0; h < m->g; h++) {
            double w = exp(sc->s[h * n + t] - sc->mx[h]);
            sc->sum[h] += w;
            for (int64_t c = 0; c < d; c++)
                o[h * d + c] += w * v[c];
        }
    }
    for (int64_t h = 0; h < m->g; h++)
        for (int64_t c = 0; c < d; c++)
            o[h * d + c] /= sc->sum[h];
}

/* Every (sequence, KV head, new token): its K and V to the outputs, its attention into f->attn;
 * spread over the cores (each task writes its own rows), the result independent of them. */
static int attend_all(const fwd *f, const void *const *in, double *const *out, int64_t l)
{
    const kt_dl_dims *m = &f->m;
    int64_t tasks = m->b * m->hkv * m->c;
    int failed = 0;
#pragma omp parallel num_threads(omp_get_num_procs())
    {
        attend_scratch sc = {NULL, NULL, NULL, NULL};
        sc.row = malloc(sizeof(double) * (size_t)(m->d + m->g * (m->t + m->c) + 2 * m->g));
        if (sc.row) {
            sc.s = sc.row + m->d;
            sc.mx = sc.s + m->g * (m->t + m->c);
            sc.sum = sc.mx + m->g;
        } else {
#pragma omp atomic write
            failed = 1;
        }
#pragma omp for schedule(dynamic, 1)
        for (int64_t task = 0; task < tasks; task++) {
            int64_t b = task / (m->hkv * m->c), kh = task / m->c % m->hkv, i = task % m->c;
            const double *k = f->qkv + (b * m->c + i) * m->qkv + (m->hq + kh) * m->d;
            const double *v = k + m->hkv * m->d;
            size_t at = kt_dl_off_new(m, l) + (size_t)(((b * m->hkv + kh) * m->c + i) * m->d);
            if (!sc.row)
                continue;
            if (out[KT_DL_KNEW])
                memcpy(out[KT_DL_KNEW] + at, k, sizeof(double) * (size_t)m->d);
            if (out[KT_DL_VNEW])
                memcpy(out[KT_DL_VNEW] + at, v, sizeof(double) * (size_t)m->d);
            attend(f, &sc, in, l, b, kh, i);
        }
        free(sc.row);
    }
    return failed ? kt_error_code(KT_ENOMEM, "out of memory") : KT_OK;
}

/* Block l: attention half (x -> x + o), then MLP half (-> x + down). */
static int block(fwd *f, const void *const *in, double *const *out, int64_t l,
                 kt_dl_attend_hook hook, void *hook_ctx)
{
    const kt_dl_dims *m = &f->m;
    const char *w = NULL;
    int err;
    rmsnorm(f, f->xn, f->x, in[KT_DL_NORMS], kt_dl_off_norms(m, l));
    w = (const char *)in[KT_DL_WQKV] + kt_dl_off_wqkv(m, l) * f->size;
    if ((err = kt_op_ref_rows(f->qkv, m->qkv, f->xn, m->rows, w, f->p->dtype, m->qkv, m->h)) < 0)
        return err;
    for (int64_t r = 0; r < m->rows; r++)
        for (int64_t hh = 0; hh < m->hq + m->hkv; hh++)
            rope(f, f->qkv + r * m->qkv + hh * m->d, r % m->c);
    if (hook) {
        double *q = f->attn; /* [R][H][d], used as scratch until attention fills it */
        for (int64_t r = 0; r < m->rows; r++)
            memcpy(q + r * m->hq * m->d, f->qkv + r * m->qkv, sizeof(double) * m->hq * m->d);
        if ((err = hook(hook_ctx, l, q)) < 0)
            return err;
    }
    if ((err = attend_all(f, in, out, l)) < 0)
        return err;
    w = (const char *)in[KT_DL_WO] + kt_dl_off_wo(m, l) * f->size;
    if ((err = kt_op_ref_rows(f->o, m->h, f->attn, m->rows, w, f->p->dtype, m->h, m->hq * m->d)) <
        0)
        return err;
    for (int64_t e = 0; e < m->rows * m->h; e++)
        f->x[e] += f->o[e];
    rmsnorm(f, f->xn, f->x, in[KT_DL_NORMS], kt_dl_off_norms(m, l) + (size_t)m->h);
    w = (const char *)in[KT_DL_WGU] + kt_dl_off_wgu(m, l) * f->size;
    if ((err = kt_op_ref_rows(f->gu, 2 * m->i, f->xn, m->rows, w, f->p->dtype, 2 * m->i, m->h)) < 0)
        return err;
    for (int64_t r = 0; r < m->rows; r++) {
        for (int64_t j = 0; j < m->i; j++) {
            double g = f->gu[r * 2 * m->i + j], u = f->gu[r * 2 * m->i + m->i + j];
            f->a[r * m->i + j] = g / (1.0 + exp(-g)) * u;
        }
    }
    w = (const char *)in[KT_DL_WDOWN] + kt_dl_off_wdown(m, l) * f->size;
    if ((err = kt_op_ref_rows(f->o, m->h, f->a, m->rows, w, f->p->dtype, m->h, m->i)) < 0)
        return err;
    for (int64_t e = 0; e < m->rows * m->h; e++)
        f->x[e] += f->o[e];
    return KT_OK;
}

int kt_dl_forward(const kt_problem *p, const void *const *inputs, double *const *outputs,
                  kt_dl_attend_hook hook, void *hook_ctx)
{
    fwd f;
    memset(&f, 0, sizeof(f));
    f.p = p;
    kt_dl_dims_of(&f.m, p);
    f.size = kt_dtype_size(p->dtype);
    const kt_dl_dims *m = &f.m;
    double **bufs[] = {&f.x, &f.xn, &f.qkv, &f.attn, &f.o, &f.gu, &f.a, &f.cosv, &f.sinv};
    int64_t r = m->rows;
    int64_t lens[] = {r * m->h,     r * m->h, r * m->qkv,        r * m->hq * m->d, r * m->h,
                      r * 2 * m->i, r * m->i, m->c * (m->d / 2), m->c * (m->d / 2)};
    int err = KT_OK;
    for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++)
        if (!(*bufs[i] = malloc(sizeof(double) * (size_t)lens[i])))
            err = kt_error_code(KT_ENOMEM, "out of memory");
    if (err == KT_OK) {
        for (int64_t i = 0; i < m->c; i++)
            kt_dl_rope_angles(f.cosv + i * (m->d / 2), f.sinv + i * (m->d / 2), m->d, m->t + i);
        kt_dtype_to_double(f.x, inputs[KT_DL_X], p->dtype, (size_t)(r * m->h));
        for (int64_t l = 0; l < m->l && err == KT_OK; l++)
            err = block(&f, inputs, outputs, l, hook, hook_ctx);
        if (err == KT_OK && outputs[KT_DL_Y])
            memcpy(outputs[KT_DL_Y], f.x, sizeof(double) * (size_t)(r * m->h));
    }
    for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++)
        free(*bufs[i]);
    return err;
}
