/* decoder_sim.c - the decoder_layer op on the sim backend: outputs are the float64 step rounded
 * to the storage type (so the numerics checks are real), and each stage lasts, on the virtual
 * clock, the longer of the bytes it must move over 'bandwidth_gbps' and its flops over
 * 'compute_gflops' (a roofline; 0: traffic only), divided by its own speedup param. The
 * profile and the end-to-end time are then exact, which lets tests check the Amdahl arithmetic
 * of the profile without timing noise, for decode steps and prefill chunks. */
#include "../ops/decoder_layer.h"
#include "sim.h"

#include <math.h>
#include <stdlib.h>

enum {
    P_BANDWIDTH,
    P_ATTN_SPEEDUP,
    P_MLP_SPEEDUP,
    P_PROJ_SPEEDUP,
    P_OTHER_US,
    P_SPREAD,
    P_COMPUTE,
    P_COUNT
};

static const kt_param_def sim_layer_params[P_COUNT] = {
    {"bandwidth_gbps", KT_PARAM_FLOAT, 50, 1e-3, 1e6, NULL,
     "bytes per ns every stage moves (its compulsory traffic)"},
    {"attention_speedup", KT_PARAM_FLOAT, 1, 1e-3, 1e3, NULL,
     "the attention stage runs this much faster"},
    {"mlp_speedup", KT_PARAM_FLOAT, 1, 1e-3, 1e3, NULL, "the MLP stage runs this much faster"},
    {"projections_speedup", KT_PARAM_FLOAT, 1, 1e-3, 1e3, NULL,
     "the QKV and O projections run this much faster"},
    {"other_us", KT_PARAM_FLOAT, 0, 0, 1e9, NULL,
     "time of each call outside every stage, microseconds"},
    {"spread", KT_PARAM_FLOAT, 0, 0, 3, NULL, "lognormal sigma of each stage's duration"},
    {"compute_gflops", KT_PARAM_FLOAT, 0, 0, 1e9, NULL,
     "flops per ns of every stage (a stage lasts the longer of its traffic and its flops); "
     "0: traffic only"},
};

typedef struct sim_layer {
    double *ref[KT_DL_N_OUTPUTS];
    double stage_ns[KT_DLS_COUNT];
} sim_layer;

/* The stages' compulsory bytes and their flops over all blocks, for R = B C rows: weights are
 * read once per call, activations once per row, the cache once per (sequence, KV head); token
 * i of a chunk attends to T + i + 1 keys (a decode step: C = 1). */
static void stage_costs(double *bytes, double *flops, const kt_problem *p)
{
    kt_dl_dims m;
    kt_dl_dims_of(&m, p);
    double s = (double)kt_dtype_size(p->dtype), l = (double)m.l, rh = (double)(m.rows * m.h);
    double c = (double)m.c, keys = (double)m.b * (c * (double)m.t + c * (c + 1) / 2);
    double w_proj = (double)(m.qkv * m.h + m.h * m.hq * m.d), w_mlp = 3.0 * (double)(m.i * m.h);
    bytes[KT_DLS_NORM] = l * 2 * 2 * rh * s;
    bytes[KT_DLS_PROJ] = l * w_proj * s;
    bytes[KT_DLS_ROPE] = l * (double)(m.rows * m.qkv) * s;
    bytes[KT_DLS_ATTN] = l * 2.0 * (double)(m.b * m.hkv * (m.t + m.c) * m.d) * s;
    bytes[KT_DLS_MLP] = l * w_mlp * s;
    bytes[KT_DLS_RES] = l * 2 * 3 * rh * s;
    flops[KT_DLS_NORM] = l * 2 * 3 * rh;
    flops[KT_DLS_PROJ] = l * 2 * (double)m.rows * w_proj;
    flops[KT_DLS_ROPE] = l * 3 * (double)(m.rows * (m.hq + m.hkv) * m.d);
    flops[KT_DLS_ATTN] = l * 4 * (double)(m.hq * m.d) * keys;
    flops[KT_DLS_MLP] = l * 2 * (double)m.rows * w_mlp;
    flops[KT_DLS_RES] = l * 2 * rh;
}

static void sim_layer_release(void *state, kt_backend *backend)
{
    (void)backend;
    sim_layer *st = state;
    if (!st)
        return;
    for (int o = 0; o < KT_DL_N_OUTPUTS; o++)
        free(st->ref[o]);
    free(st);
}

/* The float64 step, computed once: the outputs depend only on the inputs. */
static int sim_layer_prepare(void **out, const kt_call *call)
{
    sim_layer *st = calloc(1, sizeof(*st));
    if (!st)
        return kt_error_code(KT_ENOMEM, "out of memory");
    *out = st;
    const kt_problem *p = call->problem;
    for (int o = 0; o < KT_DL_N_OUTPUTS; o++) {
        st->ref[o] = malloc(sizeof(double) * (size_t)kt_tensor_elems(&p->tensors[p->n_inputs + o]));
        if (!st->ref[o])
            return kt_error_code(KT_ENOMEM, "out of memory");
    }
    return kt_dl_forward(p, call->inputs, st->ref, NULL, NULL);
}

static int sim_layer_run(void *state, const kt_call *call)
{
    sim_layer *st = state;
    const kt_problem *p = call->problem;
    const kt_param_value *v = call->params;
    double bytes[KT_DLS_COUNT], flops[KT_DLS_COUNT];
    stage_costs(bytes, flops, p);
    for (int s = 0; s < KT_DLS_COUNT; s++) {
        double speedup = s == KT_DLS_ATTN   ? v[P_ATTN_SPEEDUP].num
                         : s == KT_DLS_MLP  ? v[P_MLP_SPEEDUP].num
                         : s == KT_DLS_PROJ ? v[P_PROJ_SPEEDUP].num
                                            : 1.0;
        double ns = bytes[s] / v[P_BANDWIDTH].num;
        if (v[P_COMPUTE].num > 0)
            ns = fmax(ns, flops[s] / v[P_COMPUTE].num);
        ns /= speedup;
        if (v[P_SPREAD].num > 0)
            ns *= exp(v[P_SPREAD].num * kt_rng_normal(kt_sim_rng(call->backend)));
        st->stage_ns[s] = ns;
        kt_sim_advance(call->backend, ns);
    }
    kt_sim_advance(call->backend, v[P_OTHER_US].num * 1e3);
    for (int o = 0; o < KT_DL_N_OUTPUTS; o++)
        kt_dtype_from_double(call->outputs[o], st->ref[o], p->dtype,
                             (size_t)kt_tensor_elems(&p->tensors[p->n_inputs + o]));
    if (call->profile) {
        call->profile->n = KT_DLS_COUNT;
        for (int s = 0; s < KT_DLS_COUNT; s++) {
            call->profile->names[s] = kt_dl_stage_names[s];
            call->profile->ns[s] = st->stage_ns[s];
        }
    }
    return KT_OK;
}

const kt_variant kt_variant_sim_decoder_layer = {
    /* .op = */ "decoder_layer",
    /* .name = */ "layer",
    /* .backend = */ "sim",
    /* .doc = */ "exact outputs; each stage lasts its bytes / bandwidth / its speedup (virtual)",
    /* .params = */ sim_layer_params,
    /* .n_params = */ P_COUNT,
    /* .prepare = */ sim_layer_prepare,
    /* .run = */ sim_layer_run,
    /* .release = */ sim_layer_release,
    /* .metrics = */ NULL,
};
