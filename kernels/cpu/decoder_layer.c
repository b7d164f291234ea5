/* decoder_layer.c - the decoder_layer op's CPU variant 'layer': params that choose each
 * stage's variant (and pass stage params through as '<stage>.<param>'), the working KV cache,
 * the fusion setting, and the per-stage profile of every call. */
#include "cpu.h"
#include "decoder_cpu.h"
#include "../ffd_quant.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
    P_FUSION,
    P_ATTENTION,
    P_MLP,
    P_GEMM,
    P_ATTN_DELTA,
    P_ATTN_BLOCK,
    P_ATTN_SPLIT,
    P_ATTN_ISA,
    P_MLP_ENGINE,
    P_MLP_ISA,
    P_GEMM_ISA,
    P_COUNT
};

static const kt_param_def layer_params[P_COUNT] = {
    {"fusion", KT_PARAM_ENUM, KT_DLF_NONE, 0, 0, "none|own|mlp|layer",
     "none: the stage variants as separate kernels; own: the layer's own kernels, a region per "
     "stage; mlp: norm+gate/up+silu*mul+down in one region; layer: one region for the step"},
    {"attention", KT_PARAM_ENUM, 0, 0, 0, "dense|ffd",
     "attention_decode variant of the attention stage (fusion none)"},
    {"mlp", KT_PARAM_ENUM, 1, 0, 0, "unfused|fused", "swiglu_mlp variant of the MLP (fusion none)"},
    {"gemm", KT_PARAM_ENUM, 1, 0, 0, "blas|tiled|deterministic",
     "gemm variant of the QKV and O projections (fusion none)"},
    {"attention.delta", KT_PARAM_FLOAT, KT_FFD_DEFAULT_DELTA, 0, 1e6, NULL,
     "passed to the attention variant (ffd)"},
    {"attention.block", KT_PARAM_INT, KT_FFD_DEFAULT_BLOCK, 16, 8192, NULL,
     "passed to the attention variant (ffd)"},
    {"attention.split", KT_PARAM_INT, 1024, 16, 1 << 24, NULL,
     "passed to the attention variant; also the own attention's tokens per task"},
    {"attention.isa", KT_PARAM_ENUM, 0, 0, 0, "auto|avx2|avx512",
     "passed to the attention variant"},
#ifdef KT_HAVE_ONEDNN /* the choices must equal swiglu unfused's 'engine' */
    {"mlp.engine", KT_PARAM_ENUM, 0, 0, 0, "blas|tiled|onednn",
     "passed to the mlp variant (unfused)"},
#else
    {"mlp.engine", KT_PARAM_ENUM, 0, 0, 0, "blas|tiled", "passed to the mlp variant (unfused)"},
#endif
    {"mlp.isa", KT_PARAM_ENUM, 0, 0, 0, "auto|avx2|avx512", "passed to the mlp variant (fused)"},
    {"gemm.isa", KT_PARAM_ENUM, 0, 0, 0, "auto|avx2|avx512", "passed to the gemm variant (tiled)"},
};

/* Chooses stage 'stage' (op 'op', choice param 'choice') and fills its params from the
 * '<stage>.<name>' params (kt_stage_pick: a pass-through param set away from its default that
 * the chosen variant lacks is an error, not silently ignored). */
static int pick(const kt_variant **out, kt_param_value *values, const kt_call *call,
                const char *stage, const char *op, int choice)
{
    kt_stage_call s;
    memset(&s, 0, sizeof(s));
    int err = kt_stage_pick(&s, call, layer_params, P_COUNT, choice, stage, op, "cpu");
    if (err < 0)
        return err;
    *out = s.variant;
    memcpy(values, s.params, sizeof(s.params));
    return KT_OK;
}

const char *kt_dl_cpu_phase_refusal(const kt_param_value *params, kt_phase phase, int *param)
{
    *param = P_ATTENTION;
    if (phase != KT_PHASE_PREFILL || params[P_ATTENTION].num == 0)
        return NULL;
    return "attention 'ffd' is a decode kernel (one query per sequence); a prefill chunk "
           "attends with the layer's causal dense kernel (attention 'dense')";
}

int kt_dl_cpu_check_problem(const kt_param_value *params, const kt_problem *p)
{
    kt_dl_dims m;
    kt_dl_dims_of(&m, p);
    if (params[P_FUSION].num != KT_DLF_NONE)
        return KT_OK;
    char why[256];
    kt_problem mlp = {0};
    mlp.dtype = p->dtype;
    mlp.m = m.rows;
    mlp.n = m.i;
    mlp.k = m.h;
    if (params[P_MLP].num == 0 &&
        kt_swiglu_unfused_check_engine((int)params[P_MLP_ENGINE].num, &mlp) < 0) {
        snprintf(why, sizeof(why), "%s", kt_error_last());
        return kt_error_code(KT_EUNSUPPORTED, "decoder_layer: mlp stage 'unfused': %s", why);
    }
    if (m.prefill || kt_attn_check_problem(p) == KT_OK)
        return KT_OK;
    snprintf(why, sizeof(why), "%s", kt_error_last());
    return kt_error_code(KT_EUNSUPPORTED, "decoder_layer: attention stage '%s': %s",
                         params[P_ATTENTION].num == 0 ? "dense" : "ffd", why);
}

/* The own kernels run only the layer's own stages: stage choices must stay at their defaults. */
int kt_dl_cpu_check_params(const kt_param_value *params, int *param)
{
    *param = -1;
    for (int i = P_ATTENTION; params[P_FUSION].num != KT_DLF_NONE && i < P_COUNT; i++) {
        if (i == P_ATTN_SPLIT || params[i].num == layer_params[i].def)
            continue;
        char f[16];
        *param = i;
        kt_param_choice_name(f, sizeof(f), layer_params[P_FUSION].choices,
                             (int)params[P_FUSION].num);
        return kt_error_code(KT_EINVAL,
                             "decoder_layer: fusion '%s' runs the layer's own kernels; "
                             "'%s' applies with fusion none",
                             f, layer_params[i].name);
    }
    return KT_OK;
}

/* Copies the input caches into the working ones (T + C tokens per head). */
static void copy_cache(kt_dl_state *st, const kt_call *call)
{
    const kt_dl_dims *m = &st->m;
    size_t row = (size_t)(m->t * m->d) * kt_dtype_size(st->dt);
    size_t work = (size_t)((m->t + m->c) * m->d) * kt_dtype_size(st->dt);
    for (int64_t head = 0; head < m->l * m->b * m->hkv; head++) {
        memcpy((char *)st->k_work + (size_t)head * work,
               (const char *)call->inputs[KT_DL_KCACHE] + (size_t)head * row, row);
        memcpy((char *)st->v_work + (size_t)head * work,
               (const char *)call->inputs[KT_DL_VCACHE] + (size_t)head * row, row);
        memset((char *)st->k_work + (size_t)head * work + row, 0, work - row);
        memset((char *)st->v_work + (size_t)head * work + row, 0, work - row);
    }
}

/* Carves the activation buffers out of one allocation (64-byte aligned views). */
static int alloc_activations(kt_dl_state *st, kt_backend *b)
{
    const kt_dl_dims *m = &st->m;
    size_t el = st->fusion == KT_DLF_NONE ? kt_dtype_size(st->dt) : sizeof(float);
    void **views[] = {&st->x2,    &st->xn, &st->qkv_buf, &st->q,      &st->att,
                      &st->o_buf, &st->h,  &st->a,       &st->mlp_out};
    int64_t r = m->rows;
    int64_t n[] = {r * m->h, r * m->h, r * m->qkv, r * m->hq * m->d, r * m->hq * m->d,
                   r * m->h, r * m->h, r * m->i,   r * m->h};
    size_t total = 0, at[9];
    for (int i = 0; i < 9; i++) {
        at[i] = total;
        total += ((size_t)n[i] * el + 63) & ~(size_t)63;
    }
    int err = kt_backend_alloc(b, &st->act, total);
    if (err < 0)
        return err;
    st->act_bytes = total;
    for (int i = 0; i < 9; i++)
        *views[i] = (char *)st->act + at[i];
    return KT_OK;
}

/* RoPE's cos and sin at positions T..T+C-1, [C][d / 2] each, fp32. */
static int rope_tables(kt_dl_state *st)
{
    const kt_dl_dims *m = &st->m;
    int64_t half = m->d / 2;
    st->cosv = malloc(sizeof(float) * (size_t)(m->c * m->d));
    double *angles = malloc(sizeof(double) * (size_t)m->d);
    if (!st->cosv || !angles) {
        free(angles);
        return kt_error_code(KT_ENOMEM, "out of memory");
    }
    st->sinv = st->cosv + m->c * half;
    for (int64_t i = 0; i < m->c; i++) {
        kt_dl_rope_angles(angles, angles + half, m->d, m->t + i);
        for (int64_t c = 0; c < half; c++) {
            st->cosv[i * half + c] = (float)angles[c];
            st->sinv[i * half + c] = (float)angles[half + c];
        }
    }
    free(angles);
    return KT_OK;
}

/* The own attention's buffers: split partials (decode, fused settings) and per-thread scratch
 * (decode in fused settings; the causal kernel of a chunk in every setting). */
static int alloc_attention(kt_dl_state *st, kt_backend *b)
{
    const kt_dl_dims *m = &st->m;
    size_t per_thread = 0, parts = 0;
    if (m->prefill)
        per_thread = kt_dlk_causal_scratch_floats(m);
    else if (st->fusion != KT_DLF_NONE)
        per_thread = kt_dlk_attn_scratch_floats(m);
    if (!m->prefill && st->fusion != KT_DLF_NONE)
        parts = (size_t)kt_dlk_attn_tasks(m, st->split) * (size_t)(m->g * (m->d + 2));
    int err = KT_OK;
    if (parts && (err = kt_backend_alloc(b, (void **)&st->partials, parts * sizeof(float))) < 0)
        return err;
    st->partials_bytes = parts * sizeof(float);
    size_t scratch = (size_t)st->threads * per_thread;
    if (scratch && (err = kt_backend_alloc(b, (void **)&st->scratch, scratch * sizeof(float))) < 0)
        return err;
    st->scratch_bytes = scratch * sizeof(float);
    return KT_OK;
}

static double timer_cost_ns(void)
{
    enum { N = 2000 };
    double t0 = kt_dl_now_ns(), t = t0;
    for (int i = 0; i < N; i++)
        t = kt_dl_now_ns();
    return (t - t0) / N;
}

static int layer_prepare(void **out, const kt_call *call)
{
    kt_dl_state *st = calloc(1, sizeof(*st));
    if (!st)
        return kt_error_code(KT_ENOMEM, "out of memory");
    *out = st;
    kt_dl_dims_of(&st->m, call->problem);
    const kt_dl_dims *m = &st->m;
    st->dt = call->problem->dtype;
    st->threads = call->threads;
    st->fusion = (int)call->params[P_FUSION].num;
    st->split = (int64_t)call->params[P_ATTN_SPLIT].num;
    st->timer_ns = timer_cost_ns();
    int blame;
    int err = kt_dl_cpu_check_params(call->params, &blame);
    if (err < 0)
        return err;
    st->work_bytes = kt_dl_off_work(m, m->l) * kt_dtype_size(st->dt);
    if ((err = kt_backend_alloc(call->backend, &st->k_work, st->work_bytes)) < 0 ||
        (err = kt_backend_alloc(call->backend, &st->v_work, st->work_bytes)) < 0)
        return err;
    copy_cache(st, call);
    if ((err = rope_tables(st)) < 0 || (err = alloc_activations(st, call->backend)) < 0 ||
        (err = alloc_attention(st, call->backend)) < 0)
        return err;
    if (st->fusion != KT_DLF_NONE)
        return KT_OK;
    const char *why = kt_dl_cpu_phase_refusal(
        call->params, m->prefill ? KT_PHASE_PREFILL : KT_PHASE_DECODE, &blame);
    if (why)
        return kt_error_code(KT_EINVAL, "decoder_layer: %s", why);
    if ((err = pick(&st->v_gemm, st->p_gemm, call, "gemm", "gemm", P_GEMM)) < 0 ||
        (err = pick(&st->v_attn, st->p_attn, call, "attention", "attention_decode", P_ATTENTION)) <
            0 ||
        (err = pick(&st->v_mlp, st->p_mlp, call, "mlp", "swiglu_mlp", P_MLP)) < 0)
        return err;
    if ((err = kt_dl_stages_prepare(st, call)) < 0)
        return err;
    return kt_dl_run_stages(st, call, 1);
}

static int layer_run(void *state, const kt_call *call)
{
    kt_dl_state *st = state;
    int err = st->fusion == KT_DLF_NONE ? kt_dl_run_stages(st, call, 0) : kt_dl_run_fused(st, call);
    if (err < 0 || !call->profile)
        return err;
    call->profile->n = KT_DLS_COUNT;
    for (int s = 0; s < KT_DLS_COUNT; s++) {
        call->profile->names[s] = kt_dl_stage_names[s];
        call->profile->ns[s] = st->stage_ns[s];
    }
    return KT_OK;
}

static void layer_release(void *state, kt_backend *backend)
{
    kt_dl_state *st = state;
    if (!st)
        return;
    kt_dl_stages_release(st, backend);
    kt_backend_free(backend, st->k_work, st->work_bytes);
    kt_backend_free(backend, st->v_work, st->work_bytes);
    kt_backend_free(backend, st->act, st->act_bytes);
    if (st->partials)
        kt_backend_free(backend, st->partials, st->partials_bytes);
    if (st->scratch)
        kt_backend_free(backend, st->scratch, st->scratch_bytes);
    free(st->cosv);
    free(st);
}

/* The clock's cost, and the attention stage's own metrics (block 0), e.g. FFD's kept_fraction. */
static int layer_metrics(void *state, kt_metric *out, int max)
{
    kt_dl_state *st = state;
    int n = 0;
    if (n < max)
        out[n++] = (kt_metric){"timer_read_ns", st->timer_ns, "ns"};
    if (n < max)
        out[n++] = (kt_metric){"profile_overhead_ns", st->timer_ns * st->timer_reads, "ns"};
    if (st->attn && st->attn[0].prepared && st->v_attn->metrics && n < max)
        n += st->v_attn->metrics(st->attn[0].state, out + n, max - n);
    return n;
}

const kt_variant kt_variant_cpu_decoder_layer = {
    /* .op = */ "decoder_layer",
    /* .name = */ "layer",
    /* .backend = */ "cpu",
    /* .doc = */
    "the step with a chosen variant per stage (attention, mlp, gemm) or the layer's "
    "own kernels fused by region (fusion)",
    /* .params = */ layer_params,
    /* .n_params = */ P_COUNT,
    /* .prepare = */ layer_prepare,
    /* .run = */ layer_run,
    /* .release = */ layer_release,
    /* .metrics = */ layer_metrics,
};
