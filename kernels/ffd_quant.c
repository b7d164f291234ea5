/* ffd_quant.c - the FFD key cache format and its float64 same-policy reference. */
#include "ffd_quant.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int kt_ffd_cache_shape(kt_ffd_cache *c, int64_t batch, int64_t kv_heads, int64_t context,
                       int64_t head_dim, int64_t block)
{
    if (batch < 1 || kv_heads < 1 || context < 1 || head_dim < 1 || block < 1)
        return kt_error_code(KT_EINVAL, "ffd: sizes must be positive");
    if (head_dim % 4 != 0)
        return kt_error_code(KT_EINVAL, "ffd: head_dim %lld is not a multiple of 4",
                             (long long)head_dim);
    c->batch = batch;
    c->kv_heads = kv_heads;
    c->context = context;
    c->head_dim = head_dim;
    c->block = block;
    c->n_full = context / block;
    return KT_OK;
}

static size_t full_tokens(const kt_ffd_cache *c)
{
    return (size_t)(c->batch * c->kv_heads * c->n_full * c->block);
}

size_t kt_ffd_codes_bytes(const kt_ffd_cache *c)
{
    return full_tokens(c) * (size_t)(c->head_dim / 4);
}

size_t kt_ffd_scales_bytes(const kt_ffd_cache *c)
{
    return (size_t)(c->batch * c->kv_heads * c->n_full * c->head_dim) * sizeof(float);
}

size_t kt_ffd_residual_bytes(const kt_ffd_cache *c)
{
    return full_tokens(c) * (size_t)c->head_dim;
}

float kt_ffd_scale(float max_abs)
{
    float s = max_abs / 1.5f;
    return s > 1e-8f ? s : 1e-8f;
}

int kt_ffd_code(float k, float scale)
{
    float x = nearbyintf(k / scale + 1.5f); /* default rounding mode: ties to even */
    /* NaN (a NaN key, or an infinite one over its infinite scale, from a decode step whose
     * earlier stage overflowed) takes code 0: (int)NaN is undefined behaviour */
    return !(x >= 0.0f) ? 0 : x > 3.0f ? 3 : (int)x;
}

void kt_ffd_quantize_block(uint8_t *codes, float *scales, uint8_t *residual, const void *keys,
                           kt_dtype dtype, int64_t tokens, int64_t head_dim)
{
    for (int64_t c = 0; c < head_dim; c++) {
        float max_abs = 0.0f;
        for (int64_t t = 0; t < tokens; t++)
            max_abs = fmaxf(max_abs, fabsf(kt_dtype_load(keys, dtype, (size_t)(t * head_dim + c))));
        scales[c] = kt_ffd_scale(max_abs);
    }
    memset(codes, 0, (size_t)(tokens * head_dim / 4));
    for (int64_t t = 0; t < tokens; t++) {
        for (int64_t c = 0; c < head_dim; c++) {
            float k = kt_dtype_load(keys, dtype, (size_t)(t * head_dim + c));
            int code = kt_ffd_code(k, scales[c]);
            codes[t * (head_dim / 4) + c / 4] |= (uint8_t)(code << (2 * (c % 4)));
            float r = fmaf(-((float)code - 1.5f), scales[c], k);
            r = fminf(fmaxf(r, -448.0f), 448.0f);
            residual[t * head_dim + c] = kt_fp32_to_fp8_e4m3(r);
        }
    }
}

void kt_ffd_quantize_cache(kt_ffd_cache *c, const void *keys, kt_dtype dtype)
{
    int64_t d = c->head_dim, nb = c->batch * c->kv_heads * c->n_full;
    size_t size = kt_dtype_size(dtype);
#pragma omp parallel for schedule(dynamic, 4)
    for (int64_t i = 0; i < nb; i++) {
        int64_t bg = i / c->n_full, blk = i % c->n_full;
        int64_t row = bg * c->context + blk * c->block; /* first key row of the block */
        int64_t qrow = i * c->block;                    /* first row in codes/residual */
        kt_ffd_quantize_block(c->codes + qrow * (d / 4), c->scales + i * d, c->residual + qrow * d,
                              (const char *)keys + (size_t)(row * d) * size, dtype, c->block, d);
    }
}

/* The refined key (dequant + residual) of row 'r' of block 'i' (global block index), in double. */
static void refined_key(double *k, const kt_ffd_cache *c, int64_t i, int64_t r)
{
    int64_t d = c->head_dim, row = i * c->block + r;
    const uint8_t *codes = c->codes + row * (d / 4);
    for (int64_t ch = 0; ch < d; ch++) {
        double dq = ((double)kt_ffd_code_at(codes, ch) - 1.5) * (double)c->scales[i * d + ch];
        k[ch] = dq + (double)kt_fp8_e4m3_to_fp32(c->residual[row * d + ch]);
    }
}

/* Approximate score (log2 units) of row 'r' of block 'i' for the scaled query 'qs'. */
static double approx_score(const double *qs, const kt_ffd_cache *c, int64_t i, int64_t r)
{
    int64_t d = c->head_dim;
    const uint8_t *codes = c->codes + (i * c->block + r) * (d / 4);
    double s = 0;
    for (int64_t ch = 0; ch < d; ch++)
        s += qs[ch] * ((double)kt_ffd_code_at(codes, ch) - 1.5) * (double)c->scales[i * d + ch];
    return s;
}

/* Online softmax over one key (base 2): updates max 'm', sum 'l' and 'acc' for score 's'. */
static void attend(double *m, double *l, double *acc, double s, const void *values, kt_dtype dtype,
                   size_t v_off, int64_t d)
{
    if (s > *m) {
        double a = exp2(*m - s);
        *l *= a;
        for (int64_t ch = 0; ch < d; ch++)
            acc[ch] *= a;
        *m = s;
    }
    double p = exp2(s - *m);
    *l += p;
    for (int64_t ch = 0; ch < d; ch++)
        acc[ch] += p * (double)kt_dtype_load(values, dtype, v_off + (size_t)ch);
}

int64_t kt_ffd_reference(double *out, uint8_t *kept, double *margin, const kt_ffd_cache *c,
                         const void *q, const void *keys, const void *values, kt_dtype dtype,
                         int64_t heads, double delta_log2)
{
    int64_t d = c->head_dim, hkv = c->kv_heads, g = heads / hkv, n_kept = 0;
    if (heads < 1 || heads % hkv != 0)
        return kt_error_code(KT_EINVAL, "ffd: heads %lld is not a multiple of kv_heads %lld",
                             (long long)heads, (long long)hkv);
    double *qs = malloc(sizeof(double) * (size_t)(g * d));
    double *thr = malloc(sizeof(double) * (size_t)g);
    double *k = malloc(sizeof(double) * (size_t)d);
    double *acc = malloc(sizeof(double) * (size_t)(g * d));
    double *mp = malloc(sizeof(double) * (size_t)g), *lp = malloc(sizeof(double) * (size_t)g);
    if (!qs || !thr || !k || !acc || !mp || !lp) {
        n_kept = kt_error_code(KT_ENOMEM, "out of memory");
        goto done;
    }
    double qscale = 1.0 / sqrt((double)d) / log(2.0), min_margin = INFINITY;
    for (int64_t b = 0; b < c->batch; b++) {
        for (int64_t kh = 0; kh < hkv; kh++) {
            int64_t bg = b * hkv + kh, first = bg * c->n_full, last = first + c->n_full - 1;
            for (int64_t h = 0; h < g; h++) {
                for (int64_t ch = 0; ch < d; ch++)
                    qs[h * d + ch] =
                        qscale *
                        kt_dtype_load(q, dtype, (size_t)(((b * heads) + kh * g + h) * d + ch));
                double mt = -INFINITY;
                for (int64_t r = 0; c->n_full > 0 && r < c->block; r++)
                    mt = fmax(mt, fmax(approx_score(qs + h * d, c, first, r),
                                       approx_score(qs + h * d, c, last, r)));
                thr[h] = mt - delta_log2;
            }
            for (int64_t h = 0; h < g; h++) {
                mp[h] = -INFINITY;
                lp[h] = 0;
            }
            memset(acc, 0, sizeof(double) * (size_t)(g * d));
            for (int64_t blk = 0; blk < c->n_full; blk++) {
                double excess = -INFINITY;
                for (int64_t h = 0; h < g; h++)
                    for (int64_t r = 0; r < c->block; r++)
                        excess = fmax(excess, approx_score(qs + h * d, c, first + blk, r) - thr[h]);
                min_margin = fmin(min_margin, fabs(excess));
                int keep = excess >= 0;
                if (kept)
                    kept[first + blk] = (uint8_t)keep;
                if (!keep)
                    continue;
                n_kept++;
                for (int64_t r = 0; r < c->block; r++) {
                    refined_key(k, c, first + blk, r);
                    size_t v_off = (size_t)((bg * c->context + blk * c->block + r) * d);
                    for (int64_t h = 0; h < g; h++) {
                        double s = 0;
                        for (int64_t ch = 0; ch < d; ch++)
                            s += qs[h * d + ch] * k[ch];
                        attend(&mp[h], &lp[h], acc + h * d, s, values, dtype, v_off, d);
                    }
                }
            }
            for (int64_t t = c->n_full * c->block; t < c->context; t++) {
                size_t off = (size_t)((bg * c->context + t) * d);
                for (int64_t h = 0; h < g; h++) {
                    double s = 0;
                    for (int64_t ch = 0; ch < d; ch++)
                        s += qs[h * d + ch] * kt_dtype_load(keys, dtype, off + (size_t)ch);
                    attend(&mp[h], &lp[h], acc + h * d, s, values, dtype, off, d);
                }
            }
            for (int64_t h = 0; h < g; h++)
                for (int64_t ch = 0; ch < d; ch++)
                    out[((b * heads) + kh * g + h) * d + ch] = acc[h * d + ch] / lp[h];
        }
    }
    if (margin)
        *margin = min_margin;
done:
    free(qs);
    free(thr);
    free(k);
    free(acc);
    free(mp);
    free(lp);
    return n_kept;
}
