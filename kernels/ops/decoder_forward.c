/* decoder_forward.c - the decoder_layer step in float64 (the op's reference, and the pass that
 * plants llm caches while generating inputs). */
#include "decoder_layer.h"

#include <math.h>
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
    double *x, *xn, *qkv, *attn, *o, *gu, *a, *cosv, *sinv, *row, *s, *mx, *sum;
} fwd;

/* out[r] = x[r] / sqrt(mean(x[r]^2) + eps) * g, for the B rows. */
static void rmsnorm(const fwd *f, double *out, const double *x, const void *g, size_t g_off)
{
    int64_t h = f->m.h;
    for (int64_t r = 0; r < f->m.b; r++) {
        double ss = 0;
        for (int64_t c = 0; c < h; c++)
            ss += x[r * h + c] * x[r * h + c];
        double inv = 1.0 / sqrt(ss / (double)h + KT_DL_RMS_EPS);
        for (int64_t c = 0; c < h; c++)
            out[r * h + c] = x[r * h + c] * inv * kt_dtype_load(g, f->p->dtype, g_off + (size_t)c);
    }
}

/* Rotates the d channels at 'v' by RoPE at the step's position. */
static void rope(const fwd *f, double *v)
{
    int64_t half = f->m.d / 2;
    for (int64_t c = 0; c < half; c++) {
        double x0 = v[c], x1 = v[c + half];
        v[c] = x0 * f->cosv[c] - x1 * f->sinv[c];
        v[c + half] = x0 * f->sinv[c] + x1 * f->cosv[c];
    }
}

/* Softmax attention of the G query heads of (b, kh) over the T cached tokens of block l and the
 * new token (k_new, v_new, float64), into f->attn. */
static void attend(const fwd *f, const void *const *in, int64_t l, int64_t b, int64_t kh,
                   const double *k_new, const double *v_new)
{
    const kt_dl_dims *m = &f->m;
    int64_t d = m->d, n = m->t + 1;
    size_t base = kt_dl_off_cache(m, l) + (size_t)((b * m->hkv + kh) * m->t * d);
    const double *q = f->qkv + b * m->qkv + kh * m->g * d;
    double *o = f->attn + (b * m->hq + kh * m->g) * d, scale = 1.0 / sqrt((double)d);
    for (int64_t h = 0; h < m->g; h++)
        f->mx[h] = -INFINITY, f->sum[h] = 0;
    for (int64_t t = 0; t < n; t++) {
        const double *k = k_new;
        if (t < m->t) {
            kt_dtype_to_double(f->row, (const char *)in[KT_DL_KCACHE] + (base + t * d) * f->size,
                               f->p->dtype, (size_t)d);
            k = f->row;
        }
        for (int64_t h = 0; h < m->g; h++) {
            double dot = 0;
            for (int64_t c = 0; c < d; c++)
                dot += q[h * d + c] * k[c];
            f->s[h * n + t] = dot * scale;
            f->mx[h] = fmax(f->mx[h], dot * scale);
        }
    }
    memset(o, 0, sizeof(double) * (size_t)(m->g * d));
    for (int64_t t = 0; t < n; t++) {
        const double *v = v_new;
        if (t < m->t) {
            kt_dtype_to_double(f->row, (const char *)in[KT_DL_VCACHE] + (base + t * d) * f->size,
                               f->p->dtype, (size_t)d);
            v = f->row;
        }
        for (int64_t h = 0; h < m->g; h++) {
            double w = exp(f->s[h * n + t] - f->mx[h]);
            f->sum[h] += w;
            for (int64_t c = 0; c < d; c++)
                o[h * d + c] += w * v[c];
        }
    }
    for (int64_t h = 0; h < m->g; h++)
        for (int64_t c = 0; c < d; c++)
            o[h * d + c] /= f->sum[h];
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
    if ((err = kt_op_ref_rows(f->qkv, m->qkv, f->xn, m->b, w, f->p->dtype, m->qkv, m->h)) < 0)
        return err;
    for (int64_t b = 0; b < m->b; b++)
        for (int64_t hh = 0; hh < m->hq + m->hkv; hh++)
            rope(f, f->qkv + b * m->qkv + hh * m->d);
    if (hook) {
        double *q = f->attn; /* [B][H][d], used as scratch until attention fills it */
        for (int64_t b = 0; b < m->b; b++)
            memcpy(q + b * m->hq * m->d, f->qkv + b * m->qkv, sizeof(double) * m->hq * m->d);
        if ((err = hook(hook_ctx, l, q)) < 0)
            return err;
    }
    for (int64_t b = 0; b < m->b; b++) {
        for (int64_t kh = 0; kh < m->hkv; kh++) {
            const double *k = f->qkv + b * m->qkv + (m->hq + kh) * m->d;
            const double *v = f->qkv + b * m->qkv + (m->hq + m->hkv + kh) * m->d;
            size_t at = kt_dl_off_new(m, l) + (size_t)((b * m->hkv + kh) * m->d);
            if (out[KT_DL_KNEW])
                memcpy(out[KT_DL_KNEW] + at, k, sizeof(double) * (size_t)m->d);
            if (out[KT_DL_VNEW])
                memcpy(out[KT_DL_VNEW] + at, v, sizeof(double) * (size_t)m->d);
            attend(f, in, l, b, kh, k, v);
        }
    }
    w = (const char *)in[KT_DL_WO] + kt_dl_off_wo(m, l) * f->size;
    if ((err = kt_op_ref_rows(f->o, m->h, f->attn, m->b, w, f->p->dtype, m->h, m->hq * m->d)) < 0)
        return err;
    for (int64_t e = 0; e < m->b * m->h; e++)
        f->x[e] += f->o[e];
    rmsnorm(f, f->xn, f->x, in[KT_DL_NORMS], kt_dl_off_norms(m, l) + (size_t)m->h);
    w = (const char *)in[KT_DL_WGU] + kt_dl_off_wgu(m, l) * f->size;
    if ((err = kt_op_ref_rows(f->gu, 2 * m->i, f->xn, m->b, w, f->p->dtype, 2 * m->i, m->h)) < 0)
        return err;
    for (int64_t r = 0; r < m->b; r++) {
        for (int64_t j = 0; j < m->i; j++) {
            double g = f->gu[r * 2 * m->i + j], u = f->gu[r * 2 * m->i + m->i + j];
            f->a[r * m->i + j] = g / (1.0 + exp(-g)) * u;
        }
    }
    w = (const char *)in[KT_DL_WDOWN] + kt_dl_off_wdown(m, l) * f->size;
    if ((err = kt_op_ref_rows(f->o, m->h, f->a, m->b, w, f->p->dtype, m->h, m->i)) < 0)
        return err;
    for (int64_t e = 0; e < m->b * m->h; e++)
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
    double **bufs[] = {&f.x,    &f.xn,   &f.qkv, &f.attn, &f.o,  &f.gu, &f.a,
                       &f.cosv, &f.sinv, &f.row, &f.s,    &f.mx, &f.sum};
    int64_t lens[] = {m->b * m->h,
                      m->b * m->h,
                      m->b * m->qkv,
                      m->b * m->hq * m->d,
                      m->b * m->h,
                      m->b * 2 * m->i,
                      m->b * m->i,
                      m->d / 2,
                      m->d / 2,
                      m->d,
                      m->g * (m->t + 1),
                      m->g,
                      m->g};
    int err = KT_OK;
    for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++)
        if (!(*bufs[i] = malloc(sizeof(double) * (size_t)lens[i])))
            err = kt_error_code(KT_ENOMEM, "out of memory");
    if (err == KT_OK) {
        kt_dl_rope_angles(f.cosv, f.sinv, m->d, m->t);
        kt_dtype_to_double(f.x, inputs[KT_DL_X], p->dtype, (size_t)(m->b * m->h));
        for (int64_t l = 0; l < m->l && err == KT_OK; l++)
            err = block(&f, inputs, outputs, l, hook, hook_ctx);
        if (err == KT_OK && outputs[KT_DL_Y])
            memcpy(outputs[KT_DL_Y], f.x, sizeof(double) * (size_t)(m->b * m->h));
    }
    for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++)
        free(*bufs[i]);
    return err;
}
