/* decoder_fused.c - the decoder_layer step on its own kernels, with the parallel regions the
 * fusion setting asks for: 'own' opens one region per stage (as separate kernels would), 'mlp'
 * one region for norm + gate/up + silu*mul + down, 'layer' one persistent region for every
 * block of the step. Inside a region the stages are separated by barriers; after each barrier
 * the master thread reads the clock, so the profile has the same stages in every setting. */
#include "decoder_cpu.h"

#include <omp.h>

enum { P_NORM1, P_QKV, P_ROPE, P_ATTN, P_MERGE, P_OPROJ, P_NORM2, P_GLU, P_DOWN, P_COUNT };

static const int phase_stage[P_COUNT] = {KT_DLS_NORM, KT_DLS_PROJ, KT_DLS_ROPE,
                                         KT_DLS_ATTN, KT_DLS_ATTN, KT_DLS_PROJ,
                                         KT_DLS_NORM, KT_DLS_MLP,  KT_DLS_MLP};

/* The region a phase of block l belongs to; consecutive phases with equal ids share one. */
static int64_t region_of(int fusion, int64_t l, int phase)
{
    if (fusion == KT_DLF_LAYER)
        return 0;
    if (fusion == KT_DLF_MLP && phase >= P_NORM2)
        return l * P_COUNT + P_NORM2;
    return l * P_COUNT + phase;
}

static void phase_run(kt_dl_state *st, const kt_call *call, int64_t l, int phase, int tid, int nth)
{
    const kt_dl_dims *m = &st->m;
    kt_dtype dt = st->dt, f32 = KT_DTYPE_FP32;
    size_t size = kt_dtype_size(dt);
    const void *const *in = call->inputs;
    const void *x = l == 0 ? in[KT_DL_X] : st->x2;
    kt_dtype x_dt = l == 0 ? dt : f32;
    const char *norms = (const char *)in[KT_DL_NORMS] + kt_dl_off_norms(m, l) * size;
    size_t cache = kt_dl_off_work(m, l) * size;
    kt_dlk_attn_args at = {m,
                           dt,
                           st->q,
                           (char *)st->k_work + cache,
                           (char *)st->v_work + cache,
                           st->split,
                           st->partials,
                           st->scratch,
                           st->att};
    kt_dlk_gemv_args g = {0};
    g.w_dt = dt;
    g.m = m->rows;
    switch (phase) {
    case P_NORM1:
        kt_dlk_rmsnorm(st->xn, f32, x, x_dt, norms, dt, m->rows, m->h, tid, nth);
        return;
    case P_QKV:
        g.y = st->qkv_buf, g.x = st->xn, g.n = m->qkv, g.k = m->h;
        g.w = (const char *)in[KT_DL_WQKV] + kt_dl_off_wqkv(m, l) * size;
        break;
    case P_ROPE: {
        kt_dlk_rope_args r = kt_dl_rope_of(st, call, l, f32);
        kt_dlk_rope_append(&r, tid, nth);
        return;
    }
    case P_ATTN:
        if (m->prefill) {
            kt_dlk_causal_args ca = kt_dl_causal_of(st, l, f32);
            kt_dlk_attn_causal(&ca, tid, nth);
        } else {
            kt_dlk_attn_partial(&at, tid, nth);
        }
        return;
    case P_MERGE: /* the causal kernel needs no merge */
        if (!m->prefill)
            kt_dlk_attn_merge(&at, tid, nth);
        return;
    case P_OPROJ:
        g.y = st->h, g.x = st->att, g.n = m->h, g.k = m->hq * m->d, g.res = x, g.res_dt = x_dt;
        g.w = (const char *)in[KT_DL_WO] + kt_dl_off_wo(m, l) * size;
        break;
    case P_NORM2:
        kt_dlk_rmsnorm(st->xn, f32, st->h, f32, norms + (size_t)m->h * size, dt, m->rows, m->h, tid,
                       nth);
        return;
    case P_GLU:
        g.y = st->a, g.x = st->xn, g.n = m->i, g.k = m->h, g.glu = 1;
        g.w = (const char *)in[KT_DL_WGU] + kt_dl_off_wgu(m, l) * size;
        break;
    default: /* P_DOWN */
        g.y = st->x2, g.x = st->a, g.n = m->h, g.k = m->i, g.res = st->h, g.res_dt = f32;
        g.w = (const char *)in[KT_DL_WDOWN] + kt_dl_off_wdown(m, l) * size;
        if (l == m->l - 1)
            g.store = call->outputs[KT_DL_Y], g.store_dt = dt;
        break;
    }
    kt_dlk_gemv(&g, tid, nth);
}

int kt_dl_run_fused(kt_dl_state *st, const kt_call *call)
{
    int64_t n = st->m.l * P_COUNT;
    double last = kt_dl_now_ns();
    for (int s = 0; s < KT_DLS_COUNT; s++)
        st->stage_ns[s] = 0;
    for (int64_t i = 0; i < n;) {
        int64_t j = i + 1, region = region_of(st->fusion, i / P_COUNT, (int)(i % P_COUNT));
        while (j < n && region_of(st->fusion, j / P_COUNT, (int)(j % P_COUNT)) == region)
            j++;
#pragma omp parallel num_threads(st->threads)
        {
            int tid = omp_get_thread_num(), nth = omp_get_num_threads();
            for (int64_t k = i; k < j; k++) {
                phase_run(st, call, k / P_COUNT, (int)(k % P_COUNT), tid, nth);
#pragma omp barrier
#pragma omp master
                {
                    double now = kt_dl_now_ns();
                    st->stage_ns[phase_stage[k % P_COUNT]] += now - last;
                    last = now;
                }
            }
        }
        i = j;
    }
    st->timer_reads = (int)n + 1;
    return KT_OK;
}
