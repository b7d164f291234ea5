/* decoder_cuda.c - the decoder_layer op's CUDA variant 'layer': the step of decoder_step.c
 * with a chosen CUDA variant per stage (attention, mlp, gemm; stage params passed through as
 * '<stage>.<param>'), a working KV cache on the device, fusion 'none' (a launch per stage on
 * the backend's stream) or 'graph' (the same launches captured once into a CUDA graph in
 * prepare, replayed per call), and the per-stage profile from events between the launches,
 * read after the timed interval (kt_cuda_after_timer_stop). Decode steps only. */
#include "ffd_quant.h"
#include "cuda_backend.h"
#include "decoder_cuda.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

enum {
    P_FUSION,
    P_ATTENTION,
    P_MLP,
    P_GEMM,
    P_ATTN_SPLIT_TOKENS,
    P_ATTN_VECTORISED,
    P_ATTN_DELTA,
    P_ATTN_BLOCK,
    P_ATTN_SPLIT_BLOCKS,
    P_ATTN_SCAN,
    P_MLP_WORKSPACE,
    P_MLP_CORES,
    P_MLP_WARPS,
    P_GEMM_TF32,
    P_GEMM_CORES,
    P_GEMM_WARPS,
    P_COUNT
};

/* The pass-through params repeat the stage variants' defaults and choices (kt_stage_pick
 * checks the types and choices; tests/unit/test_cuda_decoder_mirror.c the defaults). */
static const kt_param_def layer_params[P_COUNT] = {
    {"fusion", KT_PARAM_ENUM, KT_CDL_FUSION_NONE, 0, 0, "none|graph",
     "none: one launch per stage on the stream; graph: the same launches captured once into a "
     "CUDA graph in prepare and replayed per call"},
    {"attention", KT_PARAM_ENUM, 0, 0, 0, "dense|ffd",
     "attention_decode variant of the attention stage"},
    {"mlp", KT_PARAM_ENUM, 1, 0, 0, "unfused|fused", "swiglu_mlp variant of the MLP"},
    {"gemm", KT_PARAM_ENUM, 0, 0, 0, "cublaslt|deterministic",
     "gemm variant of the QKV and O projections"},
    {"attention.split_tokens", KT_PARAM_INT, 0, 0, 1 << 24, NULL,
     "passed to the attention variant (dense)"},
    {"attention.vectorised", KT_PARAM_BOOL, 1, 0, 1, NULL,
     "passed to the attention variant (dense)"},
    {"attention.delta", KT_PARAM_FLOAT, KT_FFD_DEFAULT_DELTA, 0, 1e30, NULL,
     "passed to the attention variant (ffd)"},
    {"attention.block", KT_PARAM_INT, 128, 16, 4096, NULL, "passed to the attention variant (ffd)"},
    {"attention.split_blocks", KT_PARAM_INT, 4, 1, 1 << 20, NULL,
     "passed to the attention variant (ffd)"},
    {"attention.scan", KT_PARAM_ENUM, 0, 0, 0, "mma|fp32", "passed to the attention variant (ffd)"},
    {"mlp.workspace_mib", KT_PARAM_INT, 32, 0, 4096, NULL, "passed to the mlp variant"},
    {"mlp.cores", KT_PARAM_ENUM, 0, 0, 0, "tensor|fp32", "passed to the mlp variant (fused)"},
    {"mlp.warps", KT_PARAM_INT, 4, 1, 8, NULL, "passed to the mlp variant (fused)"},
    {"gemm.tf32", KT_PARAM_BOOL, 0, 0, 1, NULL, "passed to the gemm variant (cublaslt)"},
    {"gemm.cores", KT_PARAM_ENUM, 0, 0, 0, "tensor|fp32",
     "passed to the gemm variant (deterministic)"},
    {"gemm.warps", KT_PARAM_INT, 4, 1, 8, NULL, "passed to the gemm variant (deterministic)"},
};

static double host_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* Copies the input cache into tokens 0..T-1 of every head of the working cache and zeroes
 * token T (each call appends there). */
static int fill_work(kt_cdl_state *st, const kt_call *call)
{
    cudaStream_t stream = kt_cuda_stream(st->backend);
    kt_cdl_copy c = kt_cdl_cache_copy(&st->m, kt_dtype_size(st->dt));
    KT_CUDA_CHECK(cudaMemsetAsync(st->k_work, 0, st->work_bytes, stream));
    KT_CUDA_CHECK(cudaMemsetAsync(st->v_work, 0, st->work_bytes, stream));
    KT_CUDA_CHECK(cudaMemcpy2DAsync(st->k_work, c.dst_pitch, call->inputs[KT_DL_KCACHE],
                                    c.src_pitch, c.width, c.rows, cudaMemcpyDeviceToDevice,
                                    stream));
    KT_CUDA_CHECK(cudaMemcpy2DAsync(st->v_work, c.dst_pitch, call->inputs[KT_DL_VCACHE],
                                    c.src_pitch, c.width, c.rows, cudaMemcpyDeviceToDevice,
                                    stream));
    return KT_OK;
}

/* RoPE's cos and sin at position T, computed in double, stored as fp32 on the device. */
static int upload_angles(kt_cdl_state *st)
{
    const int64_t d = st->m.d;
    double *angles = malloc(sizeof(double) * (size_t)d);
    float *host = malloc(sizeof(float) * (size_t)d);
    int rc = KT_OK;
    if (!angles || !host) {
        rc = kt_error_code(KT_ENOMEM, "out of memory");
        goto done;
    }
    kt_dl_rope_angles(angles, angles + d / 2, d, st->m.t);
    for (int64_t c = 0; c < d; c++)
        host[c] = (float)angles[c];
    if ((rc = kt_backend_alloc(st->backend, (void **)&st->cos_sin, sizeof(float) * (size_t)d)) < 0)
        goto done;
    rc = kt_backend_upload(st->backend, st->cos_sin, host, sizeof(float) * (size_t)d);
done:
    free(angles);
    free(host);
    return rc;
}

static int create_events(kt_cdl_state *st)
{
    st->n_events = kt_cdl_events(st->m.l);
    st->events = calloc((size_t)st->n_events, sizeof(cudaEvent_t));
    if (!st->events)
        return kt_error_code(KT_ENOMEM, "out of memory");
    for (int64_t i = 0; i < st->n_events; i++)
        KT_CUDA_CHECK(cudaEventCreate(&st->events[i]));
    return KT_OK;
}

/* Shapes every stage and prepares the projections and the MLP (the attention of each block is
 * prepared in the first step, after its append). */
static int prepare_stages(kt_cdl_state *st, const kt_call *call)
{
    int rc;
    kt_stage_call attn;
    memset(&attn, 0, sizeof(attn));
    if ((rc = kt_stage_pick(&st->qkv, call, layer_params, P_COUNT, P_GEMM, "gemm", "gemm",
                            "cuda")) < 0 ||
        (rc = kt_stage_pick(&attn, call, layer_params, P_COUNT, P_ATTENTION, "attention",
                            "attention_decode", "cuda")) < 0 ||
        (rc = kt_stage_pick(&st->mlp, call, layer_params, P_COUNT, P_MLP, "mlp", "swiglu_mlp",
                            "cuda")) < 0)
        return rc;
    st->o.variant = st->qkv.variant;
    memcpy(st->o.params, st->qkv.params, sizeof(st->o.params));
    if ((rc = kt_stage_shape(&st->qkv, call, "gemm", KT_ROLE_QKV, KT_PHASE_DECODE, 1)) < 0 ||
        (rc = kt_stage_shape(&st->o, call, "gemm", KT_ROLE_O, KT_PHASE_DECODE, 1)) < 0 ||
        (rc = kt_stage_shape(&st->mlp, call, "swiglu_mlp", KT_ROLE_NONE, KT_PHASE_DECODE, 1)) < 0 ||
        (rc = kt_stage_shape(&attn, call, "attention_decode", KT_ROLE_NONE, KT_PHASE_DECODE,
                             st->m.t + 1)) < 0)
        return rc;
    st->attn = calloc((size_t)st->m.l, sizeof(kt_stage_call));
    if (!st->attn)
        return kt_error_code(KT_ENOMEM, "out of memory");
    for (int64_t l = 0; l < st->m.l; l++)
        st->attn[l] = attn;
    char *act = st->act;
    const void *in_qkv[] = {act + st->bufs.at[KT_CDL_BUF_XN], call->inputs[KT_DL_WQKV]};
    const void *in_o[] = {act + st->bufs.at[KT_CDL_BUF_ATT], call->inputs[KT_DL_WO]};
    const void *in_mlp[] = {act + st->bufs.at[KT_CDL_BUF_XN], call->inputs[KT_DL_WGU],
                            call->inputs[KT_DL_WDOWN]};
    void *out_qkv[] = {act + st->bufs.at[KT_CDL_BUF_QKV]},
         *out_o[] = {act + st->bufs.at[KT_CDL_BUF_O]};
    void *out_mlp[] = {act + st->bufs.at[KT_CDL_BUF_MLP]};
    if ((rc = kt_stage_prepare(&st->qkv, call, in_qkv, out_qkv)) < 0 ||
        (rc = kt_stage_prepare(&st->o, call, in_o, out_o)) < 0)
        return rc;
    return kt_stage_prepare(&st->mlp, call, in_mlp, out_mlp);
}

/* Captures one step into st->graph and instantiates it; the stream leaves capture mode even
 * when a launch fails. */
static int capture_graph(kt_cdl_state *st, const kt_call *call)
{
    cudaStream_t stream = kt_cuda_stream(st->backend);
    for (int i = 0; i < KT_DL_N_INPUTS; i++)
        st->captured[i] = call->inputs[i];
    for (int i = 0; i < KT_DL_N_OUTPUTS; i++)
        st->captured[KT_DL_N_INPUTS + i] = call->outputs[i];
    KT_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    int rc = kt_cdl_step(st, call, 0, 1);
    cudaError_t end = cudaStreamEndCapture(stream, &st->graph);
    if (rc < 0) /* the failed launch's message stays */
        return rc;
    if ((rc = KT_CUDA_CALL(end)) < 0)
        return rc;
    return KT_CUDA_CALL(cudaGraphInstantiate(&st->exec, st->graph, 0));
}

/* The device time of one replay of a graph of the first 'count' profile events as
 * event-record nodes: the mean of REPLAYS back-to-back replays. */
enum { REPLAYS = 20 };

static int time_record_graph(kt_cdl_state *st, int64_t count, double *ns)
{
    cudaStream_t stream = kt_cuda_stream(st->backend);
    cudaGraph_t g = NULL;
    cudaGraphExec_t exec = NULL;
    cudaEvent_t a = NULL, b = NULL;
    float ms = 0;
    cudaError_t end;
    int rc;
    if ((rc = KT_CUDA_CALL(cudaEventCreate(&a))) < 0 ||
        (rc = KT_CUDA_CALL(cudaEventCreate(&b))) < 0 ||
        (rc = KT_CUDA_CALL(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal))) < 0)
        goto done;
    for (int64_t i = 0; i < count && rc == KT_OK; i++)
        rc = KT_CUDA_CALL(cudaEventRecordWithFlags(st->events[i], stream, cudaEventRecordExternal));
    end = cudaStreamEndCapture(stream, &g);
    if (rc < 0 || (rc = KT_CUDA_CALL(end)) < 0 ||
        (rc = KT_CUDA_CALL(cudaGraphInstantiate(&exec, g, 0))) < 0 ||
        (rc = KT_CUDA_CALL(cudaGraphLaunch(exec, stream))) < 0 ||
        (rc = KT_CUDA_CALL(cudaEventRecord(a, stream))) < 0)
        goto done;
    for (int r = 0; r < REPLAYS && rc == KT_OK; r++)
        rc = KT_CUDA_CALL(cudaGraphLaunch(exec, stream));
    if (rc < 0 || (rc = KT_CUDA_CALL(cudaEventRecord(b, stream))) < 0 ||
        (rc = KT_CUDA_CALL(cudaEventSynchronize(b))) < 0 ||
        (rc = KT_CUDA_CALL(cudaEventElapsedTime(&ms, a, b))) < 0)
        goto done;
    *ns = (double)ms * 1e6 / REPLAYS;
done:
    if (exec)
        cudaGraphExecDestroy(exec);
    if (g)
        cudaGraphDestroy(g);
    if (a)
        cudaEventDestroy(a);
    if (b)
        cudaEventDestroy(b);
    return rc;
}

/* The cost of the profile's event records, measured in prepare. none: the host time of one
 * cudaEventRecord (mean of 256) as timer_read_ns, times the records of a call. graph: the
 * device time a replay gains from the call's event-record nodes, from a graph of all of them
 * against a graph of one (which cancels the replay's own launch), per extra node. */
static int measure_overhead(kt_cdl_state *st)
{
    cudaStream_t stream = kt_cuda_stream(st->backend);
    if (st->fusion == KT_CDL_FUSION_NONE) {
        enum { N = 256 };
        double t0 = host_ns();
        for (int i = 0; i < N; i++)
            KT_CUDA_CHECK(cudaEventRecord(st->events[i % st->n_events], stream));
        st->record_ns = (host_ns() - t0) / N;
        st->overhead_ns = st->record_ns * (double)st->n_events;
        KT_CUDA_CHECK(cudaStreamSynchronize(stream));
        return KT_OK;
    }
    double one = 0, all = 0;
    int rc;
    if ((rc = time_record_graph(st, 1, &one)) < 0 ||
        (rc = time_record_graph(st, st->n_events, &all)) < 0)
        return rc;
    st->record_ns = all > one ? (all - one) / (double)(st->n_events - 1) : 0;
    st->overhead_ns = st->record_ns * (double)st->n_events;
    return KT_OK;
}

/* The captured step's event nodes give elapsed times? One replay, then read them. */
static int probe_graph_profile(kt_cdl_state *st)
{
    cudaStream_t stream = kt_cuda_stream(st->backend);
    kt_stage_profile p;
    KT_CUDA_CHECK(cudaGraphLaunch(st->exec, stream));
    KT_CUDA_CHECK(cudaStreamSynchronize(stream));
    kt_cdl_read_profile(st, &p);
    st->graph_stage_times = p.n > 0;
    return KT_OK;
}

static int layer_prepare(void **out, const kt_call *call)
{
    const kt_problem *p = call->problem;
    *out = NULL;
    if (!kt_cuda_stream(call->backend))
        return kt_error_code(KT_EINVAL, "backend '%s' is not cuda", call->backend->iface->name);
    /* a prefill chunk: x is [B, C, hidden], or more rows than sequences */
    if (p->tensors[KT_DL_X].ndim != 2 || p->m != p->batch)
        return kt_error_code(KT_EUNSUPPORTED,
                             "decoder_layer: prefill is not built on cuda (%lld new tokens for "
                             "%lld sequences; the cuda variant runs decode steps only)",
                             (long long)p->m, (long long)p->batch);
    kt_cdl_state *st = calloc(1, sizeof(*st));
    if (!st)
        return kt_error_code(KT_ENOMEM, "out of memory");
    *out = st;
    st->backend = call->backend;
    kt_dl_dims_of(&st->m, p);
    st->dt = p->dtype;
    st->fusion = (int)call->params[P_FUSION].num;
    kt_cdl_buffers_of(&st->bufs, &st->m, kt_dtype_size(st->dt));
    st->work_bytes = (size_t)kt_cdl_work_at(&st->m, st->m.l, 0, 0, 0) * kt_dtype_size(st->dt);
    int rc;
    if ((rc = kt_backend_alloc(call->backend, &st->k_work, st->work_bytes)) < 0 ||
        (rc = kt_backend_alloc(call->backend, &st->v_work, st->work_bytes)) < 0 ||
        (rc = kt_backend_alloc(call->backend, &st->act, st->bufs.total)) < 0 ||
        (rc = fill_work(st, call)) < 0 || (rc = upload_angles(st)) < 0 ||
        (rc = create_events(st)) < 0 || (rc = prepare_stages(st, call)) < 0 ||
        (rc = kt_cdl_step(st, call, 1, 0)) < 0 || (rc = kt_backend_synchronize(call->backend)) < 0)
        return rc;
    if (st->fusion == KT_CDL_FUSION_GRAPH &&
        ((rc = capture_graph(st, call)) < 0 || (rc = probe_graph_profile(st)) < 0))
        return rc;
    if ((rc = measure_overhead(st)) < 0)
        return rc;
    return kt_backend_synchronize(call->backend);
}

static void profile_after_stop(void *arg)
{
    kt_cdl_state *st = arg;
    if (st->profile_out)
        kt_cdl_read_profile(st, st->profile_out);
    st->profile_out = NULL;
}

/* Whether 'call' names the buffers the graph was captured with. */
static int same_buffers(const kt_cdl_state *st, const kt_call *call)
{
    for (int i = 0; i < KT_DL_N_INPUTS; i++)
        if (st->captured[i] != call->inputs[i])
            return 0;
    for (int i = 0; i < KT_DL_N_OUTPUTS; i++)
        if (st->captured[KT_DL_N_INPUTS + i] != call->outputs[i])
            return 0;
    return 1;
}

static int layer_run(void *state, const kt_call *call)
{
    kt_cdl_state *st = state;
    if (st->fusion == KT_CDL_FUSION_GRAPH && !same_buffers(st, call))
        return kt_error_code(KT_EINVAL, "decoder_layer: fusion graph replays the buffers of its "
                                        "prepare call; this call passed others");
    int rc = st->fusion == KT_CDL_FUSION_GRAPH
                 ? KT_CUDA_CALL(cudaGraphLaunch(st->exec, kt_cuda_stream(call->backend)))
                 : kt_cdl_step(st, call, 0, 0);
    if (rc < 0 || !call->profile)
        return rc;
    /* the events complete after the call: read them once the timer has stopped */
    st->profile_out = call->profile;
    return kt_cuda_after_timer_stop(call->backend, profile_after_stop, st);
}

static void layer_release(void *state, kt_backend *backend)
{
    kt_cdl_state *st = state;
    if (!st)
        return;
    if (st->profile_out)
        kt_cuda_after_timer_stop(backend, NULL, NULL);
    cudaStreamSynchronize(kt_cuda_stream(backend));
    if (st->exec)
        cudaGraphExecDestroy(st->exec);
    if (st->graph)
        cudaGraphDestroy(st->graph);
    for (int64_t i = 0; st->events && i < st->n_events; i++)
        if (st->events[i])
            cudaEventDestroy(st->events[i]);
    free(st->events);
    kt_stage_release(&st->qkv, backend);
    kt_stage_release(&st->o, backend);
    kt_stage_release(&st->mlp, backend);
    for (int64_t l = 0; st->attn && l < st->m.l; l++)
        kt_stage_release(&st->attn[l], backend);
    free(st->attn);
    kt_backend_free(backend, st->k_work, st->work_bytes);
    kt_backend_free(backend, st->v_work, st->work_bytes);
    kt_backend_free(backend, st->act, st->bufs.total);
    kt_backend_free(backend, st->cos_sin, sizeof(float) * (size_t)st->m.d);
    free(st);
}

/* The event records' cost, whether the graph's event nodes gave stage times, and the
 * attention stage's own metrics (block 0), e.g. FFD's kept_fraction. */
static int layer_metrics(void *state, kt_metric *out, int max)
{
    kt_cdl_state *st = state;
    kt_metric m[] = {
        {"timer_read_ns", st->record_ns, "ns"},
        {"profile_overhead_ns", st->overhead_ns, "ns"},
        {"graph_stage_times", st->graph_stage_times, ""},
    };
    int n = kt_cuda_metrics_copy(out, max, m, st->fusion == KT_CDL_FUSION_GRAPH ? 3 : 2);
    if (st->attn && st->attn[0].prepared && st->attn[0].variant->metrics && n < max)
        n += st->attn[0].variant->metrics(st->attn[0].state, out + n, max - n);
    return n;
}

const char *kt_dl_cuda_phase_refusal(const kt_param_value *params, kt_phase phase, int *param)
{
    (void)params;
    *param = -1; /* the variant, not one of its params */
    if (phase != KT_PHASE_PREFILL)
        return NULL;
    return "decoder_layer on cuda runs decode steps only: prefill is not built on cuda";
}

const kt_variant kt_variant_cuda_decoder_layer = {
    /* .op = */ "decoder_layer",
    /* .name = */ "layer",
    /* .backend = */ "cuda",
    /* .doc = */
    "the decode step with a chosen cuda variant per stage (attention, mlp, gemm), a launch per "
    "stage (fusion none) or the same launches replayed as a CUDA graph (fusion graph)",
    /* .params = */ layer_params,
    /* .n_params = */ P_COUNT,
    /* .prepare = */ layer_prepare,
    /* .run = */ layer_run,
    /* .release = */ layer_release,
    /* .metrics = */ layer_metrics,
};
