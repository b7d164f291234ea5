/* decoder_step.c - one decode step of the CUDA decoder_layer variant: per block the nine
 * launches of decoder_plan.h on the backend's stream, an event before the first and after
 * each, and the per-stage profile read back from those events. */
#include "decoder_cuda.h"

/* Block l's part of the stacked input tensor 'which' (weights and norms). */
static const void *block_input(const kt_cdl_state *st, const kt_call *call, int which, int64_t l)
{
    const kt_dl_dims *m = &st->m;
    size_t off = which == KT_DL_NORMS  ? kt_dl_off_norms(m, l)
                 : which == KT_DL_WQKV ? kt_dl_off_wqkv(m, l)
                 : which == KT_DL_WO   ? kt_dl_off_wo(m, l)
                 : which == KT_DL_WGU  ? kt_dl_off_wgu(m, l)
                                       : kt_dl_off_wdown(m, l);
    return (const char *)call->inputs[which] + off * kt_dtype_size(st->dt);
}

static void *buf(const kt_cdl_state *st, int which)
{
    return (char *)st->act + st->bufs.at[which];
}

/* Records the next event: a plain record, or an event node of the graph being captured. */
static int mark(kt_cdl_state *st, int64_t *next, int capture)
{
    cudaStream_t stream = kt_cuda_stream(st->backend);
    cudaEvent_t ev = st->events[(*next)++];
    if (capture)
        return KT_CUDA_CALL(cudaEventRecordWithFlags(ev, stream, cudaEventRecordExternal));
    return KT_CUDA_CALL(cudaEventRecord(ev, stream));
}

/* 'rc' of a launch, then the event that closes its stage. */
static int closed(kt_cdl_state *st, int rc, int64_t *next, int capture)
{
    return rc < 0 ? rc : mark(st, next, capture);
}

/* Block l: x -> out, nine launches. */
static int block(kt_cdl_state *st, const kt_call *call, int64_t l, const void *x, void *out,
                 int prepare, int capture, int64_t *next)
{
    const kt_dl_dims *m = &st->m;
    cudaStream_t stream = kt_cuda_stream(st->backend);
    size_t size = kt_dtype_size(st->dt);
    const char *norms = block_input(st, call, KT_DL_NORMS, l);
    void *xn = buf(st, KT_CDL_BUF_XN), *qkv = buf(st, KT_CDL_BUF_QKV), *q = buf(st, KT_CDL_BUF_Q);
    void *att = buf(st, KT_CDL_BUF_ATT), *o = buf(st, KT_CDL_BUF_O), *h = buf(st, KT_CDL_BUF_H);
    void *mlp = buf(st, KT_CDL_BUF_MLP);
    size_t work = (size_t)kt_cdl_work_at(m, l, 0, 0, 0) * size, nw = kt_dl_off_new(m, l) * size;
    kt_cuda_dl_rope r = {qkv,
                         q,
                         (char *)st->k_work + work,
                         (char *)st->v_work + work,
                         (char *)call->outputs[KT_DL_KNEW] + nw,
                         (char *)call->outputs[KT_DL_VNEW] + nw,
                         st->cos_sin};
    const void *in_qkv[] = {xn, block_input(st, call, KT_DL_WQKV, l)};
    const void *in_attn[] = {q, r.k_work, r.v_work};
    const void *in_o[] = {att, block_input(st, call, KT_DL_WO, l)};
    const void *in_mlp[] = {xn, block_input(st, call, KT_DL_WGU, l),
                            block_input(st, call, KT_DL_WDOWN, l)};
    void *out_qkv[] = {qkv}, *out_attn[] = {att}, *out_o[] = {o}, *out_mlp[] = {mlp};
    int rc;
    if ((rc = closed(st, kt_cuda_dl_rmsnorm(stream, st->dt, xn, x, norms, m->b, m->h), next,
                     capture)) < 0 ||
        (rc = closed(st, kt_stage_run(&st->qkv, call, in_qkv, out_qkv), next, capture)) < 0 ||
        (rc = closed(st, kt_cuda_dl_rope_append(stream, st->dt, m, &r), next, capture)) < 0)
        return rc;
    /* the attention variant sees the cache with this step's token, as a server's would */
    if (prepare && !st->attn[l].prepared &&
        (rc = kt_stage_prepare(&st->attn[l], call, in_attn, out_attn)) < 0)
        return rc;
    if ((rc = closed(st, kt_stage_run(&st->attn[l], call, in_attn, out_attn), next, capture)) < 0 ||
        (rc = closed(st, kt_stage_run(&st->o, call, in_o, out_o), next, capture)) < 0 ||
        (rc = closed(st, kt_cuda_dl_add(stream, st->dt, h, x, o, m->b * m->h), next, capture)) <
            0 ||
        (rc = closed(
             st, kt_cuda_dl_rmsnorm(stream, st->dt, xn, h, norms + (size_t)m->h * size, m->b, m->h),
             next, capture)) < 0 ||
        (rc = closed(st, kt_stage_run(&st->mlp, call, in_mlp, out_mlp), next, capture)) < 0)
        return rc;
    return closed(st, kt_cuda_dl_add(stream, st->dt, out, h, mlp, m->b * m->h), next, capture);
}

int kt_cdl_step(kt_cdl_state *st, const kt_call *call, int prepare, int capture)
{
    int64_t next = 0;
    int rc = mark(st, &next, capture);
    for (int64_t l = 0; l < st->m.l && rc == KT_OK; l++) {
        const void *x = l == 0 ? call->inputs[KT_DL_X] : buf(st, KT_CDL_BUF_X);
        void *out = l == st->m.l - 1 ? call->outputs[KT_DL_Y] : buf(st, KT_CDL_BUF_X);
        rc = block(st, call, l, x, out, prepare, capture, &next);
    }
    return rc;
}

void kt_cdl_read_profile(kt_cdl_state *st, kt_stage_profile *out)
{
    double ns[KT_DLS_COUNT] = {0};
    out->n = 0;
    for (int64_t i = 0; i + 1 < st->n_events; i++) {
        float ms = 0;
        if (cudaEventElapsedTime(&ms, st->events[i], st->events[i + 1]) != cudaSuccess) {
            cudaGetLastError(); /* no elapsed time: the profile stays empty */
            return;
        }
        ns[kt_cdl_interval_stage(i)] += (double)ms * 1e6;
    }
    out->n = KT_DLS_COUNT;
    for (int s = 0; s < KT_DLS_COUNT; s++) {
        out->names[s] = kt_dl_stage_names[s];
        out->ns[s] = ns[s];
    }
}
