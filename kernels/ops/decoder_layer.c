/* decoder_layer.c - the decoder_layer op: shape, seeded inputs and the float64 reference of
 * one decode step or one prefill chunk through L blocks (layout and math in decoder_layer.h). */
#include "decoder_layer.h"

#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

enum {
    IP_LAYERS,
    IP_CHUNK,
    IP_SINK_TOKENS,
    IP_SINK_STRENGTH,
    IP_HEAVY_FRACTION,
    IP_HEAVY_STRENGTH,
    IP_HEAVY_SPAN,
    IP_RECENCY_WINDOW,
    IP_RECENCY_STRENGTH,
    IP_COUNT
};

/* The llm cache of block l is planted after the block's real queries are known (the step is
 * run in float64 while generating): key t is z_t + a_t u_t with z_t ~ N(0, I), where sinks and
 * the recent window align with the sum of the group's unit queries (every head sees them) and
 * each heavy passage with one random head's unit query. |q| ~ sqrt(d) with these weights, so
 * a planted key's logit rises by about a_t nats over a N(0, 1) background. */
static const kt_param_def dl_input_params[IP_COUNT] = {
    {"layers", KT_PARAM_INT, 1, 1, 64, NULL,
     "transformer blocks in the step, each with its own weights and KV cache"},
    {"chunk", KT_PARAM_INT, 128, 1, 8192, NULL,
     "prefill points: new tokens per sequence, appended after the context_length cached ones"},
    {"sink_tokens", KT_PARAM_INT, 4, 0, 1024, NULL, "llm: leading tokens planted as sinks"},
    {"sink_strength", KT_PARAM_FLOAT, 16, 0, 1000, NULL,
     "llm: logit boost of a sink token, in nats, for every head of its group"},
    {"heavy_fraction", KT_PARAM_FLOAT, 0.01, 0, 1, NULL,
     "llm: fraction of the tokens in heavy-hitter passages"},
    {"heavy_strength", KT_PARAM_FLOAT, 14, 0, 1000, NULL,
     "llm: largest logit boost of a heavy hitter (one head per passage; x U(0.85, 1))"},
    {"heavy_span", KT_PARAM_INT, 8, 1, 4096, NULL, "llm: tokens per heavy-hitter passage"},
    {"recency_window", KT_PARAM_FLOAT, 32, 1e-3, 1e9, NULL,
     "llm: tokens over which the recency boost decays by e"},
    {"recency_strength", KT_PARAM_FLOAT, 13, 0, 1000, NULL,
     "llm: logit boost of the newest cached token, decaying into the past"},
};

const char *const kt_dl_stage_names[KT_DLS_COUNT] = {"norm",      "projections", "rope_kv",
                                                     "attention", "mlp",         "residual"};

static int dl_shape(kt_problem *out, const kt_point *point, kt_dtype dtype,
                    const kt_param_value *input_params)
{
    const kt_model *md = &point->model;
    int64_t layers = input_params ? (int64_t)input_params[IP_LAYERS].num : 1;
    int64_t chunk = input_params ? (int64_t)input_params[IP_CHUNK].num : 128;
    int64_t b = point->batch_size, t = point->context_length;
    int64_t c = point->phase == KT_PHASE_PREFILL ? chunk : 1;
    if (b < 1 || t < 1 || md->hidden < 1 || md->heads < 1 || md->kv_heads < 1 || md->head_dim < 2 ||
        md->intermediate < 1)
        return kt_error_code(KT_EINVAL,
                             "decoder_layer: model '%s' needs positive hidden, heads, "
                             "kv_heads, head_dim and intermediate",
                             md->name);
    if (md->heads % md->kv_heads != 0)
        return kt_error_code(KT_EINVAL,
                             "decoder_layer: heads (%lld) must be a multiple of kv_heads (%lld)",
                             (long long)md->heads, (long long)md->kv_heads);
    if (md->head_dim % 2 != 0)
        return kt_error_code(KT_EINVAL,
                             "decoder_layer: head_dim (%lld) must be even (rotary embedding "
                             "rotates channel pairs)",
                             (long long)md->head_dim);
    double cache =
        (double)layers * (double)b * (double)md->kv_heads * (double)(t + c) * md->head_dim;
    if (cache > 4294967296.0)
        return kt_error_code(KT_EINVAL, "decoder_layer: KV cache of %.3g elements is too large",
                             cache);
    kt_op_problem_init(out, &kt_op_decoder_layer, dtype);
    out->batch = b;
    out->heads = md->heads;
    out->kv_heads = md->kv_heads;
    out->head_dim = md->head_dim;
    out->context = t;
    out->k = md->hidden;
    out->n = md->intermediate;
    out->m = b * c;
    out->layers = layers;
    kt_dl_dims m;
    kt_dl_dims_of(&m, out);
    int prefill = point->phase == KT_PHASE_PREFILL;
    if (prefill)
        kt_op_add_tensor(out, "x", dtype, 3, b, c, m.h, 0);
    else
        kt_op_add_tensor(out, "x", dtype, 2, b, m.h, 0, 0);
    kt_op_add_tensor(out, "norms", dtype, 3, layers, 2, m.h, 0);
    kt_op_add_tensor(out, "w_qkv", dtype, 3, layers, m.qkv, m.h, 0);
    kt_op_add_tensor(out, "w_o", dtype, 3, layers, m.h, m.hq * m.d, 0);
    kt_op_add_tensor(out, "w_gate_up", dtype, 3, layers, 2 * m.i, m.h, 0);
    kt_op_add_tensor(out, "w_down", dtype, 3, layers, m.h, m.i, 0);
    kt_op_add_tensor(out, "k_cache", dtype, 4, layers * b, m.hkv, t, m.d);
    kt_op_add_tensor(out, "v_cache", dtype, 4, layers * b, m.hkv, t, m.d);
    out->n_inputs = KT_DL_N_INPUTS;
    /* decode keeps its layouts; a chunk adds a token axis (at most 4 dims: L and B merged) */
    if (!prefill) {
        kt_op_add_tensor(out, "y", dtype, 2, b, m.h, 0, 0);
        kt_op_add_tensor(out, "k_new", dtype, 4, layers, b, m.hkv, m.d);
        kt_op_add_tensor(out, "v_new", dtype, 4, layers, b, m.hkv, m.d);
    } else {
        kt_op_add_tensor(out, "y", dtype, 3, b, c, m.h, 0);
        kt_op_add_tensor(out, "k_new", dtype, 4, layers * b, m.hkv, c, m.d);
        kt_op_add_tensor(out, "v_new", dtype, 4, layers * b, m.hkv, c, m.d);
    }
    out->n_outputs = KT_DL_N_OUTPUTS;
    double per_row = 2.0 * (double)m.h * (double)(m.qkv + m.hq * m.d + 3 * m.i);
    /* token i of the chunk attends to t + i + 1 keys */
    double keys = (double)c * (double)t + (double)c * (double)(c + 1) / 2;
    double attn = 4.0 * (double)m.hq * keys * (double)m.d;
    out->flops = (double)layers * (double)b * ((double)c * per_row + attn);
    out->bytes = 0;
    for (int i = 0; i < KT_DL_N_INPUTS + KT_DL_N_OUTPUTS; i++)
        out->bytes += (double)kt_tensor_bytes(&out->tensors[i]);
    return KT_OK;
}

/* Stores 'x' as element 'i'; a value that rounds to zero becomes +-1e-3 (no input is zero). */
static void store_nonzero(void *dst, kt_dtype dtype, size_t i, double x)
{
    size_t size = kt_dtype_size(dtype);
    kt_dtype_from_double((char *)dst + i * size, &x, dtype, 1);
    if (kt_dtype_load(dst, dtype, i) == 0.0f) {
        x = x < 0 ? -1e-3 : 1e-3;
        kt_dtype_from_double((char *)dst + i * size, &x, dtype, 1);
    }
}

typedef struct plant_ctx {
    const kt_problem *p;
    void *const *inputs;
    const kt_param_value *ip;
    uint64_t seed;
} plant_ctx;

/* Fills block l's K and V caches for (b, kv head 'kh') from 'q' (the block's queries). */
static void plant_head(const plant_ctx *c, const kt_dl_dims *m, int64_t l, int64_t b, int64_t kh,
                       const double *q, double *units)
{
    const kt_param_value *ip = c->ip;
    kt_rng rng;
    kt_rng_seed(&rng, kt_seed_mix(c->seed, (uint64_t)((l * m->b + b) * m->hkv + kh)));
    double *all = units + m->g * m->d; /* the sum of the group's unit queries */
    memset(all, 0, sizeof(double) * (size_t)m->d);
    for (int64_t h = 0; h < m->g; h++) { /* the last new token's queries */
        const double *qh = q + (((b * m->c + m->c - 1) * m->hq) + kh * m->g + h) * m->d;
        double n2 = 0;
        for (int64_t c2 = 0; c2 < m->d; c2++)
            n2 += qh[c2] * qh[c2];
        double inv = n2 > 0 ? 1.0 / sqrt(n2) : 0;
        for (int64_t c2 = 0; c2 < m->d; c2++) {
            units[h * m->d + c2] = qh[c2] * inv;
            all[c2] += qh[c2] * inv;
        }
    }
    int64_t sinks = (int64_t)ip[IP_SINK_TOKENS].num, span = (int64_t)ip[IP_HEAVY_SPAN].num;
    int64_t span_left = 0, target = 0;
    size_t base = kt_dl_off_cache(m, l) + (size_t)((b * m->hkv + kh) * m->t * m->d);
    for (int64_t t = 0; t < m->t; t++) {
        double a = t < sinks ? ip[IP_SINK_STRENGTH].num : 0.0;
        double r =
            ip[IP_RECENCY_STRENGTH].num * exp(-(double)(m->t - 1 - t) / ip[IP_RECENCY_WINDOW].num);
        const double *dir = all;
        a = fmax(a, r);
        if (span_left == 0 && kt_rng_uniform(&rng) < ip[IP_HEAVY_FRACTION].num / (double)span) {
            span_left = span;
            target = (int64_t)(kt_rng_uniform(&rng) * (double)m->g);
        }
        if (span_left > 0) {
            double hv = ip[IP_HEAVY_STRENGTH].num * (1.0 - 0.15 * kt_rng_uniform(&rng));
            if (hv > a) {
                a = hv;
                dir = units + target * m->d;
            }
            span_left--;
        }
        size_t row = base + (size_t)(t * m->d);
        for (int64_t c2 = 0; c2 < m->d; c2++) {
            store_nonzero(c->inputs[KT_DL_KCACHE], c->p->dtype, row + (size_t)c2,
                          kt_rng_normal(&rng) + a * dir[c2]);
            store_nonzero(c->inputs[KT_DL_VCACHE], c->p->dtype, row + (size_t)c2,
                          kt_rng_normal(&rng));
        }
    }
}

static int plant_block(void *ctx, int64_t l, const double *q)
{
    const plant_ctx *c = ctx;
    kt_dl_dims m;
    kt_dl_dims_of(&m, c->p);
    int failed = 0;
    /* every head has its own stream and rows: the cache does not depend on the threads */
#pragma omp parallel num_threads(omp_get_num_procs())
    {
        double *units = malloc(sizeof(double) * (size_t)((m.g + 1) * m.d));
#pragma omp for schedule(dynamic, 1)
        for (int64_t head = 0; head < m.b * m.hkv; head++)
            if (units)
                plant_head(c, &m, l, head / m.hkv, head % m.hkv, q, units);
        if (!units) {
#pragma omp atomic write
            failed = 1;
        }
        free(units);
    }
    return failed ? kt_error_code(KT_ENOMEM, "out of memory") : KT_OK;
}

static int dl_generate(const kt_problem *p, void *const *inputs, const kt_input_config *cfg)
{
    kt_dl_dims m;
    kt_dl_dims_of(&m, p);
    kt_input_config act = {cfg->distribution, cfg->seed, NULL};
    int err = kt_op_fill_activations(inputs[KT_DL_X], p->dtype, m.rows, m.h, &act,
                                     kt_seed_mix(cfg->seed, 1));
    if (err < 0)
        return err;
    kt_rng rng;
    kt_rng_seed(&rng, kt_seed_mix(cfg->seed, 2));
    for (int64_t e = 0; e < m.l * 2 * m.h; e++)
        store_nonzero(inputs[KT_DL_NORMS], p->dtype, (size_t)e, 1.0 + 0.1 * kt_rng_normal(&rng));
    /* the weights and caches are most of the start-up: all cores fill them (untimed) */
    int threads = omp_get_num_procs();
    size_t size = kt_dtype_size(p->dtype);
    for (int64_t l = 0; l < m.l; l++) {
        uint64_t s = kt_seed_mix(cfg->seed, (uint64_t)(16 + l));
        const struct {
            int input;
            size_t off;
            int64_t rows, fan_in;
        } w[] = {{KT_DL_WQKV, kt_dl_off_wqkv(&m, l), m.qkv, m.h},
                 {KT_DL_WO, kt_dl_off_wo(&m, l), m.h, m.hq * m.d},
                 {KT_DL_WGU, kt_dl_off_wgu(&m, l), 2 * m.i, m.h},
                 {KT_DL_WDOWN, kt_dl_off_wdown(&m, l), m.h, m.i}};
        for (int i = 0; i < 4; i++) /* N(0, 1 / fan_in), or U of that std */
            kt_dl_fill((char *)inputs[w[i].input] + w[i].off * size, p->dtype,
                       (size_t)(w[i].rows * w[i].fan_in), cfg->distribution,
                       1.0 / sqrt((double)w[i].fan_in), kt_seed_mix(s, (uint64_t)(1 + i)), threads);
    }
    if (cfg->distribution != KT_DIST_LLM) {
        for (int i = KT_DL_KCACHE; i <= KT_DL_VCACHE; i++)
            kt_dl_fill(inputs[i], p->dtype, (size_t)kt_tensor_elems(&p->tensors[i]),
                       cfg->distribution, 1.0, kt_seed_mix(cfg->seed, (uint64_t)i), threads);
        return KT_OK;
    }
    plant_ctx c = {p, inputs, cfg->params, kt_seed_mix(cfg->seed, 3)};
    kt_param_value defaults[IP_COUNT];
    if (!c.ip) {
        kt_param_defaults(defaults, dl_input_params, IP_COUNT);
        c.ip = defaults;
    }
    double *none[KT_DL_N_OUTPUTS] = {NULL, NULL, NULL};
    return kt_dl_forward(p, (const void *const *)inputs, none, plant_block, &c);
}

static int dl_reference(const kt_problem *p, const void *const *inputs, double *const *outputs)
{
    return kt_dl_forward(p, inputs, outputs, NULL, NULL);
}

const kt_op kt_op_decoder_layer = {
    /* .name = */ "decoder_layer",
    /* .doc = */
    "one decode step or prefill chunk of L transformer blocks (norm, QKV, RoPE, "
    "KV append, causal attention, O, MLP) over a KV cache",
    /* .axes = */ KT_AXIS_MODEL | KT_AXIS_BATCH | KT_AXIS_CONTEXT | KT_AXIS_PHASE |
        KT_AXIS_DECODE_CONTEXT,
    /* .model_fields = */ KT_MODEL_HIDDEN | KT_MODEL_HEADS | KT_MODEL_KV_HEADS | KT_MODEL_HEAD_DIM |
        KT_MODEL_INTERMEDIATE,
    /* .backend_only = */ NULL,
    /* .input_params = */ dl_input_params,
    /* .n_input_params = */ IP_COUNT,
    /* .shape = */ dl_shape,
    /* .generate = */ dl_generate,
    /* .reference = */ dl_reference,
};
