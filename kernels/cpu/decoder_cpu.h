/* decoder_cpu.h - private to the CPU decoder_layer variant: its state, shared by the variant
 * (decoder_layer.c), the stage-variant engine (decoder_stages.c) and the own-kernel engine with
 * its fusion settings (decoder_fused.c). */
#ifndef KT_DECODER_CPU_H
#define KT_DECODER_CPU_H

#include "decoder_kernels.h"
#include "stage_call.h"

#include <time.h>

/* fusion: none runs the chosen stage variants (separate kernels through their vtables); own,
 * mlp and layer run the layer's own kernels with one region per stage, the MLP block merged
 * into one region, or the whole step in one persistent region. */
enum { KT_DLF_NONE, KT_DLF_OWN, KT_DLF_MLP, KT_DLF_LAYER };

/* One prepared stage variant: the variant, its params, its problem and state. */

typedef struct kt_dl_state {
    kt_dl_dims m;
    kt_dtype dt;
    int fusion, threads;
    int64_t split;         /* own attention: tokens per task */
    void *k_work, *v_work; /* [L][B][Hkv][T + C][d]: the input cache plus the new tokens */
    size_t work_bytes;
    float *cosv, *sinv; /* RoPE at positions T..T+C-1, [C][d / 2] each */
    /* fusion none: per block the qkv and o projections, attention, mlp */
    kt_stage_call *qkv, *o, *attn, *mlp; /* fusion none: a stage variant a block */
    const kt_variant *v_gemm, *v_attn, *v_mlp;
    kt_param_value p_gemm[KT_MAX_PARAMS], p_attn[KT_MAX_PARAMS], p_mlp[KT_MAX_PARAMS];
    /* activations: storage type for 'none', fp32 for the own kernels */
    void *act;
    size_t act_bytes;
    void *x2, *xn, *qkv_buf, *q, *att, *o_buf, *h, *a, *mlp_out; /* views into 'act' */
    float *partials, *scratch; /* own decode attention: split partials; per-thread scratch */
    size_t partials_bytes, scratch_bytes;
    /* profile of the last call */
    double stage_ns[KT_DLS_COUNT];
    double timer_ns; /* measured cost of one clock read */
    int timer_reads; /* clock reads per call */
} kt_dl_state;

/* Element offset of block l in the working caches. */
static inline size_t kt_dl_off_work(const kt_dl_dims *m, int64_t l)
{
    return (size_t)(l * m->b * m->hkv * (m->t + m->c) * m->d);
}

/* Causal (prefill) attention arguments for block l: q and out in 'act_dt'. */
static inline kt_dlk_causal_args kt_dl_causal_of(kt_dl_state *st, int64_t l, kt_dtype act_dt)
{
    size_t cache = kt_dl_off_work(&st->m, l) * kt_dtype_size(st->dt);
    kt_dlk_causal_args a = {
        &st->m,      st->dt,  st->q, act_dt, (char *)st->k_work + cache, (char *)st->v_work + cache,
        st->scratch, st->att, act_dt};
    return a;
}

/* RoPE + KV append arguments for block l, with activations (qkv in, q out) in 'act_dt'. */
static inline kt_dlk_rope_args kt_dl_rope_of(kt_dl_state *st, const kt_call *call, int64_t l,
                                             kt_dtype act_dt)
{
    const kt_dl_dims *m = &st->m;
    size_t size = kt_dtype_size(st->dt);
    size_t cache = kt_dl_off_work(m, l) * size;
    size_t nw = kt_dl_off_new(m, l) * size;
    kt_dlk_rope_args r = {m,
                          st->dt,
                          st->qkv_buf,
                          act_dt,
                          st->q,
                          act_dt,
                          (char *)st->k_work + cache,
                          (char *)st->v_work + cache,
                          (char *)call->outputs[KT_DL_KNEW] + nw,
                          (char *)call->outputs[KT_DL_VNEW] + nw,
                          st->cosv,
                          st->sinv};
    return r;
}

/* Monotonic clock in ns (clock_gettime through the vDSO). */
static inline double kt_dl_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* fusion none: prepares the stage variants of every block (attention lazily, see
 * kt_dl_run_stages), and runs one step through them. 'prepare' is 1 on the untimed pass made in
 * prepare, which prepares each block's attention right after its K/V append, so a variant that
 * preprocesses the cache (FFD quantises it) sees the cache a server would hold. */
int kt_dl_stages_prepare(kt_dl_state *st, const kt_call *call);
int kt_dl_run_stages(kt_dl_state *st, const kt_call *call, int prepare);
void kt_dl_stages_release(kt_dl_state *st, kt_backend *b);

/* fusion own | mlp | layer: one step on the own kernels. */
int kt_dl_run_fused(kt_dl_state *st, const kt_call *call);

#endif
