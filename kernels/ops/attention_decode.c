/* attention_decode.c - one decode step of multi-head attention over a KV cache:
 * q[B,H,d], K and V [B,Hkv,T,d] (T = context_length), out[B,H,d], GQA group G = H / Hkv
 * (query head h reads KV head h / G), scale 1 / sqrt(d).
 *
 * Inputs: 'normal' and 'uniform' draw every element independently; the resulting logits are
 * nearly flat (std ~1 across 10^4 keys), which real caches are not, so sparse kernels look
 * better or worse there than they are. 'llm' plants what real caches have (see llm_fill). */
#include "ops.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum {
    IP_TEMPERATURE,
    IP_SINK_TOKENS,
    IP_SINK_STRENGTH,
    IP_HEAVY_FRACTION,
    IP_HEAVY_STRENGTH,
    IP_HEAVY_SPAN,
    IP_HEAVY_SPREAD,
    IP_RECENCY_WINDOW,
    IP_RECENCY_STRENGTH,
    IP_COUNT
};

/* The llm model, per (batch b, KV head): a random unit direction u shared by the group; each
 * query head h of the group is q_h = temperature * sqrt(d) * unit(u + 0.33 n_h) with n_h a
 * random unit vector (cos(q_h, u) ~ 0.95); each key is k_t = z_t + a_t u with z_t ~ N(0, I),
 * so a background key's logit q.k / sqrt(d) is ~ N(0, temperature^2) and a planted key's
 * logit rises by about 0.95 * temperature * a_t nats. a_t is the largest of (0 otherwise):
 *   sinks:   sink_strength for the first sink_tokens tokens;
 *   heavy:   heavy hitters come in runs of heavy_span tokens (a relevant passage) covering
 *            about heavy_fraction of the context; each of their tokens draws
 *            heavy_strength * (1 - heavy_spread * U(0, 1));
 *   recency: recency_strength * exp(-(T - 1 - t) / recency_window).
 * (The largest, not the sum: a passage that falls in the recent window must not outshine the
 * sinks, or block 0 and the last block would no longer hold the maximum.) Values are N(0, 1).
 * With the defaults (logits in nats: background ~N(0, 1), sinks ~15, heavy hitters 13 to 15,
 * the newest token ~13) about 1% of the tokens carry nearly all the attention and the
 * background well under 1% of it up to 128K tokens; FFD at delta 5 keeps the blocks holding a
 * passage, about 15-19% of them, and its error is then mostly its fp8 residual's (~2e-2). */
static const kt_param_def attention_input_params[IP_COUNT] = {
    {"temperature", KT_PARAM_FLOAT, 1.0, 0.01, 100, NULL,
     "llm: std of a background key's logit, in nats (query norm / sqrt(head_dim))"},
    {"sink_tokens", KT_PARAM_INT, 4, 0, 1024, NULL, "llm: leading tokens planted as sinks"},
    {"sink_strength", KT_PARAM_FLOAT, 16, 0, 1000, NULL,
     "llm: sink key alignment with the query; logit boost ~0.95 x temperature x this"},
    {"heavy_fraction", KT_PARAM_FLOAT, 0.01, 0, 1, NULL,
     "llm: fraction of the tokens that are heavy hitters"},
    {"heavy_strength", KT_PARAM_FLOAT, 16, 0, 1000, NULL,
     "llm: largest heavy-hitter alignment (see heavy_spread)"},
    {"heavy_span", KT_PARAM_INT, 8, 1, 4096, NULL,
     "llm: heavy hitters come in runs of this many consecutive tokens"},
    {"heavy_spread", KT_PARAM_FLOAT, 0.15, 0, 1, NULL,
     "llm: each heavy token draws heavy_strength x (1 - heavy_spread x U(0, 1))"},
    {"recency_window", KT_PARAM_FLOAT, 32, 1e-3, 1e9, NULL,
     "llm: tokens over which the recency alignment decays by e"},
    {"recency_strength", KT_PARAM_FLOAT, 14, 0, 1000, NULL,
     "llm: alignment of the newest token, decaying exponentially into the past"},
};

static int attention_shape(kt_problem *out, const kt_point *point, kt_dtype dtype,
                           const kt_param_value *input_params)
{
    (void)input_params;
    const kt_model *m = &point->model;
    int64_t b = point->batch_size, t = point->context_length;
    int64_t h = m->heads, hkv = m->kv_heads, d = m->head_dim;
    if (b < 1 || t < 1 || h < 1 || hkv < 1 || d < 1)
        return kt_error_code(KT_EINVAL,
                             "attention_decode: batch, context, heads, kv_heads and head_dim "
                             "must be positive");
    if (h % hkv != 0)
        return kt_error_code(KT_EINVAL,
                             "attention_decode: heads (%lld) is not a multiple of kv_heads (%lld)",
                             (long long)h, (long long)hkv);
    if ((double)b * (double)hkv * (double)t * (double)d > 4294967296.0)
        return kt_error_code(KT_EINVAL, "attention_decode: KV cache of %.3g elements is too large",
                             (double)b * (double)hkv * (double)t * (double)d);
    kt_op_problem_init(out, &kt_op_attention_decode, dtype);
    out->batch = b;
    out->heads = h;
    out->kv_heads = hkv;
    out->head_dim = d;
    out->context = t;
    kt_op_add_tensor(out, "q", dtype, 3, b, h, d, 0);
    kt_op_add_tensor(out, "k", dtype, 4, b, hkv, t, d);
    kt_op_add_tensor(out, "v", dtype, 4, b, hkv, t, d);
    out->n_inputs = 3;
    kt_op_add_tensor(out, "out", dtype, 3, b, h, d, 0);
    out->n_outputs = 1;
    out->flops = 4.0 * (double)b * (double)h * (double)t * (double)d;
    out->bytes = 0;
    for (int i = 0; i < 4; i++)
        out->bytes += (double)kt_tensor_bytes(&out->tensors[i]);
    return KT_OK;
}

/* Stores 'x' as element 'i' of 'dst'; a value that rounds to zero is stored as +-1e-3 so no
 * input is ever exactly zero. */
static void store_nonzero(void *dst, kt_dtype dtype, size_t i, double x)
{
    size_t size = kt_dtype_size(dtype);
    kt_dtype_from_double((char *)dst + i * size, &x, dtype, 1);
    if (kt_dtype_load(dst, dtype, i) == 0.0f) {
        x = x < 0 ? -1e-3 : 1e-3;
        kt_dtype_from_double((char *)dst + i * size, &x, dtype, 1);
    }
}

/* Fills 'v' (d values) with a random unit vector. */
static void unit_vector(double *v, int64_t d, kt_rng *rng)
{
    double n2 = 0;
    for (int64_t c = 0; c < d; c++) {
        v[c] = kt_rng_normal(rng);
        n2 += v[c] * v[c];
    }
    double inv = 1.0 / sqrt(n2);
    for (int64_t c = 0; c < d; c++)
        v[c] *= inv;
}

/* The llm distribution described above the param table; one generator per (b, kv head),
 * seeded from 'seed', so a point's inputs do not depend on the order they are filled in. */
static int llm_fill(const kt_problem *p, void *const *inputs, const kt_input_config *cfg)
{
    const kt_param_value *ip = cfg->params;
    int64_t d = p->head_dim, t_len = p->context, g = p->heads / p->kv_heads;
    double temp = ip[IP_TEMPERATURE].num, rd = sqrt((double)d);
    int64_t sinks = (int64_t)ip[IP_SINK_TOKENS].num;
    double span = ip[IP_HEAVY_SPAN].num;
    double *u = malloc(sizeof(double) * (size_t)d), *n = malloc(sizeof(double) * (size_t)d);
    if (!u || !n) {
        free(u);
        free(n);
        return kt_error_code(KT_ENOMEM, "out of memory");
    }
    for (int64_t b = 0; b < p->batch; b++) {
        for (int64_t kh = 0; kh < p->kv_heads; kh++) {
            kt_rng rng;
            kt_rng_seed(&rng, kt_seed_mix(cfg->seed, (uint64_t)(b * p->kv_heads + kh)));
            unit_vector(u, d, &rng);
            for (int64_t h = 0; h < g; h++) {
                unit_vector(n, d, &rng);
                double n2 = 0;
                for (int64_t c = 0; c < d; c++) {
                    n[c] = u[c] + 0.33 * n[c];
                    n2 += n[c] * n[c];
                }
                double f = temp * rd / sqrt(n2);
                size_t base = (size_t)(((b * p->heads) + kh * g + h) * d);
                for (int64_t c = 0; c < d; c++)
                    store_nonzero(inputs[0], p->dtype, base + (size_t)c, f * n[c]);
            }
            int64_t span_left = 0;
            for (int64_t t = 0; t < t_len; t++) {
                double a = t < sinks ? ip[IP_SINK_STRENGTH].num : 0.0;
                if (span_left == 0 && kt_rng_uniform(&rng) < ip[IP_HEAVY_FRACTION].num / span)
                    span_left = (int64_t)span;
                if (span_left > 0) {
                    a = fmax(a, ip[IP_HEAVY_STRENGTH].num *
                                    (1.0 - ip[IP_HEAVY_SPREAD].num * kt_rng_uniform(&rng)));
                    span_left--;
                }
                a = fmax(a, ip[IP_RECENCY_STRENGTH].num *
                                exp(-(double)(t_len - 1 - t) / ip[IP_RECENCY_WINDOW].num));
                size_t base = (size_t)(((b * p->kv_heads + kh) * t_len + t) * d);
                for (int64_t c = 0; c < d; c++) {
                    store_nonzero(inputs[1], p->dtype, base + (size_t)c,
                                  kt_rng_normal(&rng) + a * u[c]);
                    store_nonzero(inputs[2], p->dtype, base + (size_t)c, kt_rng_normal(&rng));
                }
            }
        }
    }
    free(u);
    free(n);
    return KT_OK;
}

static int attention_generate(const kt_problem *p, void *const *inputs, const kt_input_config *cfg)
{
    if (cfg->distribution == KT_DIST_LLM)
        return llm_fill(p, inputs, cfg);
    for (int i = 0; i < 3; i++)
        kt_op_fill_random(inputs[i], p->dtype, (size_t)kt_tensor_elems(&p->tensors[i]),
                          cfg->distribution, kt_seed_mix(cfg->seed, (uint64_t)i), 1.0);
    return KT_OK;
}

/* Dense softmax attention per (b, h) in double from the stored inputs; each key and value
 * row is converted once per KV head and used by the G query heads of its group. */
static int attention_reference(const kt_problem *p, const void *const *inputs,
                               double *const *outputs)
{
    int64_t d = p->head_dim, t_len = p->context, g = p->heads / p->kv_heads;
    size_t size = kt_dtype_size(p->dtype);
    int err = KT_OK;
    double *s = malloc(sizeof(double) * (size_t)(g * t_len));
    double *q = malloc(sizeof(double) * (size_t)(g * d));
    double *row = malloc(sizeof(double) * (size_t)d);
    double *m = malloc(sizeof(double) * (size_t)g), *l = malloc(sizeof(double) * (size_t)g);
    if (!s || !q || !row || !m || !l) {
        err = kt_error_code(KT_ENOMEM, "out of memory");
        goto done;
    }
    double scale = 1.0 / sqrt((double)d);
    for (int64_t b = 0; b < p->batch; b++) {
        for (int64_t kh = 0; kh < p->kv_heads; kh++) {
            size_t q_off = (size_t)((b * p->heads + kh * g) * d),
                   kv = (size_t)((b * p->kv_heads + kh) * t_len * d);
            double *o = outputs[0] + q_off;
            kt_dtype_to_double(q, (const char *)inputs[0] + q_off * size, p->dtype,
                               (size_t)(g * d));
            for (int64_t h = 0; h < g; h++)
                m[h] = -INFINITY, l[h] = 0;
            for (int64_t t = 0; t < t_len; t++) {
                kt_dtype_to_double(row, (const char *)inputs[1] + (kv + (size_t)(t * d)) * size,
                                   p->dtype, (size_t)d);
                for (int64_t h = 0; h < g; h++) {
                    double dot = 0;
                    for (int64_t c = 0; c < d; c++)
                        dot += q[h * d + c] * row[c];
                    s[h * t_len + t] = dot * scale;
                    m[h] = fmax(m[h], dot * scale);
                }
            }
            memset(o, 0, sizeof(double) * (size_t)(g * d));
            for (int64_t t = 0; t < t_len; t++) {
                kt_dtype_to_double(row, (const char *)inputs[2] + (kv + (size_t)(t * d)) * size,
                                   p->dtype, (size_t)d);
                for (int64_t h = 0; h < g; h++) {
                    double w = exp(s[h * t_len + t] - m[h]);
                    l[h] += w;
                    for (int64_t c = 0; c < d; c++)
                        o[h * d + c] += w * row[c];
                }
            }
            for (int64_t h = 0; h < g; h++)
                for (int64_t c = 0; c < d; c++)
                    o[h * d + c] /= l[h];
        }
    }
done:
    free(s);
    free(q);
    free(row);
    free(m);
    free(l);
    return err;
}

const kt_op kt_op_attention_decode = {
    /* .name = */ "attention_decode",
    /* .doc = */ "one decode step: q[B,H,d] over K,V[B,Hkv,T,d], softmax(q.k/sqrt(d)) v",
    /* .axes = */ KT_AXIS_MODEL | KT_AXIS_BATCH | KT_AXIS_CONTEXT,
    /* .model_fields = */ KT_MODEL_HEADS | KT_MODEL_KV_HEADS | KT_MODEL_HEAD_DIM,
    /* .backend_only = */ NULL,
    /* .input_params = */ attention_input_params,
    /* .n_input_params = */ IP_COUNT,
    /* .shape = */ attention_shape,
    /* .generate = */ attention_generate,
    /* .reference = */ attention_reference,
};
