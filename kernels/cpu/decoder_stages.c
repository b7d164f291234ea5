/* decoder_stages.c - the decoder_layer step as separate kernels (fusion none): the QKV and O
 * projections, attention and the MLP are the variants the arm chose, called through their
 * vtables on problems their own ops shape; norm, RoPE + KV append and the residual adds are the
 * layer's own small kernels, each in its own parallel region. Activations between stages are in
 * the storage type, as they would be between framework ops. */
#include "decoder_cpu.h"

#include <omp.h>
#include <stdio.h>

#include <stdlib.h>
#include <string.h>

/* Shapes 'sub' with op 'op_name' at the layer's point ('role' for gemm, 'context' tokens). A
 * prefill chunk shapes the gemm and swiglu_mlp stages as prefill points of C tokens per
 * sequence (M = B C rows). */
static int sub_shape(kt_stage_call *sub, const kt_dl_state *st, const kt_call *call,
                     const char *op_name, kt_role role, int64_t context)
{
    if (st->m.prefill && strcmp(op_name, "attention_decode") != 0)
        return kt_stage_shape(sub, call, op_name, role, KT_PHASE_PREFILL, st->m.c);
    return kt_stage_shape(sub, call, op_name, role, KT_PHASE_DECODE, context);
}

static void sub_init(kt_stage_call *sub, const kt_variant *v, const kt_param_value *params)
{
    sub->variant = v;
    memcpy(sub->params, params, sizeof(sub->params));
}

/* Weight pointer of tensor 'which' for block l. */
static const void *weights(const kt_dl_state *st, const kt_call *call, int which, int64_t l)
{
    const kt_dl_dims *m = &st->m;
    size_t off = which == KT_DL_WQKV  ? kt_dl_off_wqkv(m, l)
                 : which == KT_DL_WO  ? kt_dl_off_wo(m, l)
                 : which == KT_DL_WGU ? kt_dl_off_wgu(m, l)
                                      : kt_dl_off_wdown(m, l);
    return (const char *)call->inputs[which] + off * kt_dtype_size(st->dt);
}

int kt_dl_stages_prepare(kt_dl_state *st, const kt_call *call)
{
    int64_t layers = st->m.l;
    st->qkv = calloc((size_t)layers, sizeof(kt_stage_call));
    st->o = calloc((size_t)layers, sizeof(kt_stage_call));
    st->attn = calloc((size_t)layers, sizeof(kt_stage_call));
    st->mlp = calloc((size_t)layers, sizeof(kt_stage_call));
    if (!st->qkv || !st->o || !st->attn || !st->mlp)
        return kt_error_code(KT_ENOMEM, "out of memory");
    int err = KT_OK;
    for (int64_t l = 0; l < layers && err == KT_OK; l++) {
        sub_init(&st->qkv[l], st->v_gemm, st->p_gemm);
        sub_init(&st->o[l], st->v_gemm, st->p_gemm);
        sub_init(&st->mlp[l], st->v_mlp, st->p_mlp);
        if ((err = sub_shape(&st->qkv[l], st, call, "gemm", KT_ROLE_QKV, 1)) < 0 ||
            (err = sub_shape(&st->o[l], st, call, "gemm", KT_ROLE_O, 1)) < 0 ||
            (err = sub_shape(&st->mlp[l], st, call, "swiglu_mlp", KT_ROLE_NONE, 1)) < 0)
            break;
        /* a chunk attends with the layer's causal kernel, not an attention_decode variant */
        if (!st->m.prefill) {
            sub_init(&st->attn[l], st->v_attn, st->p_attn);
            if ((err = sub_shape(&st->attn[l], st, call, "attention_decode", KT_ROLE_NONE,
                                 st->m.t + 1)) < 0)
                break;
        }
        const void *in_qkv[] = {st->xn, weights(st, call, KT_DL_WQKV, l)};
        const void *in_o[] = {st->att, weights(st, call, KT_DL_WO, l)};
        const void *in_mlp[] = {st->xn, weights(st, call, KT_DL_WGU, l),
                                weights(st, call, KT_DL_WDOWN, l)};
        void *out_qkv[] = {st->qkv_buf}, *out_o[] = {st->o_buf}, *out_mlp[] = {st->mlp_out};
        if ((err = kt_stage_prepare(&st->qkv[l], call, in_qkv, out_qkv)) < 0 ||
            (err = kt_stage_prepare(&st->o[l], call, in_o, out_o)) < 0)
            break;
        err = kt_stage_prepare(&st->mlp[l], call, in_mlp, out_mlp);
    }
    return err;
}

void kt_dl_stages_release(kt_dl_state *st, kt_backend *b)
{
    kt_stage_call *all[] = {st->qkv, st->o, st->attn, st->mlp};
    for (int k = 0; k < 4; k++) {
        for (int64_t l = 0; all[k] && l < st->m.l; l++)
            kt_stage_release(&all[k][l], b);
        free(all[k]);
    }
}

static void region_norm(kt_dl_state *st, void *out, const void *x, const void *g)
{
#pragma omp parallel num_threads(st->threads)
    kt_dlk_rmsnorm(out, st->dt, x, st->dt, g, st->dt, st->m.rows, st->m.h, omp_get_thread_num(),
                   omp_get_num_threads());
}

static void region_add(kt_dl_state *st, void *out, const void *a, const void *b)
{
#pragma omp parallel num_threads(st->threads)
    kt_dlk_add(out, st->dt, a, st->dt, b, st->dt, st->m.rows * st->m.h, omp_get_thread_num(),
               omp_get_num_threads());
}

static void region_rope(kt_dl_state *st, const kt_dlk_rope_args *r)
{
#pragma omp parallel num_threads(st->threads)
    kt_dlk_rope_append(r, omp_get_thread_num(), omp_get_num_threads());
}

static void region_causal(kt_dl_state *st, const kt_dlk_causal_args *a)
{
#pragma omp parallel num_threads(st->threads)
    kt_dlk_attn_causal(a, omp_get_thread_num(), omp_get_num_threads());
}

/* Adds the time since *last to stage 's'. */
static void lap(kt_dl_state *st, int s, double *last)
{
    double now = kt_dl_now_ns();
    st->stage_ns[s] += now - *last;
    *last = now;
}

/* Block l: x -> the block's output ('out'). */
static int block(kt_dl_state *st, const kt_call *call, int64_t l, const void *x, void *out,
                 int prepare, double *last)
{
    const kt_dl_dims *m = &st->m;
    size_t size = kt_dtype_size(st->dt);
    const char *norms = (const char *)call->inputs[KT_DL_NORMS] + kt_dl_off_norms(m, l) * size;
    int err;
    region_norm(st, st->xn, x, norms);
    lap(st, KT_DLS_NORM, last);
    const void *in_qkv[] = {st->xn, weights(st, call, KT_DL_WQKV, l)};
    void *out_qkv[] = {st->qkv_buf};
    if ((err = kt_stage_run(&st->qkv[l], call, in_qkv, out_qkv)) < 0)
        return err;
    lap(st, KT_DLS_PROJ, last);
    kt_dlk_rope_args r = kt_dl_rope_of(st, call, l, st->dt);
    region_rope(st, &r);
    lap(st, KT_DLS_ROPE, last);
    const void *in_attn[] = {st->q, r.k_cache, r.v_cache};
    void *out_attn[] = {st->att};
    if (m->prefill) {
        kt_dlk_causal_args ca = kt_dl_causal_of(st, l, st->dt);
        region_causal(st, &ca);
    } else {
        if (prepare && !st->attn[l].prepared &&
            (err = kt_stage_prepare(&st->attn[l], call, in_attn, out_attn)) < 0)
            return err;
        if ((err = kt_stage_run(&st->attn[l], call, in_attn, out_attn)) < 0)
            return err;
    }
    lap(st, KT_DLS_ATTN, last);
    const void *in_o[] = {st->att, weights(st, call, KT_DL_WO, l)};
    void *out_o[] = {st->o_buf};
    if ((err = kt_stage_run(&st->o[l], call, in_o, out_o)) < 0)
        return err;
    lap(st, KT_DLS_PROJ, last);
    region_add(st, st->h, x, st->o_buf);
    lap(st, KT_DLS_RES, last);
    region_norm(st, st->xn, st->h, norms + (size_t)m->h * size);
    lap(st, KT_DLS_NORM, last);
    const void *in_mlp[] = {st->xn, weights(st, call, KT_DL_WGU, l),
                            weights(st, call, KT_DL_WDOWN, l)};
    void *out_mlp[] = {st->mlp_out};
    if ((err = kt_stage_run(&st->mlp[l], call, in_mlp, out_mlp)) < 0)
        return err;
    lap(st, KT_DLS_MLP, last);
    region_add(st, out, st->h, st->mlp_out);
    lap(st, KT_DLS_RES, last);
    return KT_OK;
}

int kt_dl_run_stages(kt_dl_state *st, const kt_call *call, int prepare)
{
    for (int s = 0; s < KT_DLS_COUNT; s++)
        st->stage_ns[s] = 0;
    double last = kt_dl_now_ns();
    int err = KT_OK;
    for (int64_t l = 0; l < st->m.l && err == KT_OK; l++) {
        const void *x = l == 0 ? call->inputs[KT_DL_X] : st->x2;
        void *out = l == st->m.l - 1 ? call->outputs[KT_DL_Y] : st->x2;
        err = block(st, call, l, x, out, prepare, &last);
    }
    st->timer_reads = (int)(10 * st->m.l) + 1;
    return err;
}
