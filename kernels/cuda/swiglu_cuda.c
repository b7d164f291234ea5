/* swiglu_cuda.c - the CUDA swiglu_mlp variants. Inputs x[M,H], w_gate_up[2I,H] (gate rows
 * 0..I-1, up rows I..2I-1), w_down[H,I]; output y[M,H]; problem->k = H, problem->n = I.
 *   unfused: cuBLASLt gate_up into h[M,2I], silu(gate) * up into a[M,I], cuBLASLt down.
 *   fused:   one kernel computes the gate and up tiles (tensor cores for fp16/bf16) with the
 *            silu*mul epilogue (no [M,2I] intermediate), then cuBLASLt down. */
#include "cuda_backend.h"
#include "cuda_private.h"

#include <stdlib.h>

enum { P_WORKSPACE_MIB, P_CORES, P_WARPS, P_COUNT };

/* unfused takes the first, fused all three */
static const kt_param_def swiglu_params[P_COUNT] = {
    {"workspace_mib", KT_PARAM_INT, 32, 0, 4096, NULL, "cuBLASLt workspace per GEMM, MiB"},
    KT_CUDA_TENSOR_PARAMS,
};

typedef struct swiglu_state {
    int fused;
    kt_cuda_matmul gate_up, down;
    void *h, *a; /* h[M,2I] (unfused only), a[M,I] */
    size_t h_bytes, a_bytes;
} swiglu_state;

static int swiglu_prepare(void **out, const kt_call *call, int fused)
{
    const kt_problem *p = call->problem;
    kt_backend *b = call->backend;
    *out = NULL;
    if (!kt_cuda_stream(b))
        return kt_error_code(KT_EINVAL, "backend '%s' is not cuda", b->iface->name);
    swiglu_state *st = calloc(1, sizeof(*st));
    if (!st)
        return kt_error_code(KT_ENOMEM, "out of memory");
    *out = st;
    st->fused = fused;
    size_t ws = (size_t)call->params[P_WORKSPACE_MIB].num << 20, es = kt_dtype_size(p->dtype);
    int rc;
    st->a_bytes = (size_t)(p->m * p->n) * es;
    if ((rc = kt_backend_alloc(b, &st->a, st->a_bytes)) < 0)
        return rc;
    if (!fused) {
        st->h_bytes = 2 * st->a_bytes;
        if ((rc = kt_backend_alloc(b, &st->h, st->h_bytes)) < 0 ||
            (rc = kt_cuda_matmul_prepare(&st->gate_up, b, p->dtype, p->m, 2 * p->n, p->k, 0, ws)) <
                0)
            return rc;
    }
    return kt_cuda_matmul_prepare(&st->down, b, p->dtype, p->m, p->k, p->n, 0, ws);
}

static int unfused_prepare(void **out, const kt_call *call)
{
    return swiglu_prepare(out, call, 0);
}

static int fused_prepare(void **out, const kt_call *call)
{
    return swiglu_prepare(out, call, 1);
}

static int swiglu_run(void *state, const kt_call *call)
{
    swiglu_state *st = state;
    const kt_problem *p = call->problem;
    kt_backend *b = call->backend;
    cudaStream_t stream = kt_cuda_stream(b);
    int rc;
    if (st->fused)
        rc = kt_cuda_gate_up_silu(stream, p->dtype, call->inputs[0], call->inputs[1], st->a, p->m,
                                  p->n, p->k, kt_cuda_tensor_warps(call->params + P_CORES));
    else if ((rc = kt_cuda_matmul_run(&st->gate_up, b, call->inputs[0], call->inputs[1], st->h)) >=
             0)
        rc = kt_cuda_silu_mul(stream, p->dtype, st->h, st->a, p->m, p->n);
    if (rc < 0)
        return rc;
    return kt_cuda_matmul_run(&st->down, b, st->a, call->inputs[2], call->outputs[0]);
}

static void swiglu_release(void *state, kt_backend *backend)
{
    swiglu_state *st = state;
    if (!st)
        return;
    kt_cuda_matmul_release(&st->gate_up, backend);
    kt_cuda_matmul_release(&st->down, backend);
    kt_backend_free(backend, st->h, st->h_bytes);
    kt_backend_free(backend, st->a, st->a_bytes);
    free(st);
}

static int swiglu_metrics(void *state, kt_metric *out, int max)
{
    const swiglu_state *st = state;
    kt_metric m[] = {
        {"intermediate_bytes", (double)(st->h_bytes + st->a_bytes), "B"},
        {"down_algo_id", st->down.algo_id, ""},
    };
    return kt_cuda_metrics_copy(out, max, m, (int)(sizeof(m) / sizeof(m[0])));
}

const kt_variant kt_variant_cuda_swiglu_unfused = {
    /* .op = */ "swiglu_mlp",
    /* .name = */ "unfused",
    /* .backend = */ "cuda",
    /* .doc = */ "cuBLASLt gate_up into [M,2I], elementwise silu*mul, cuBLASLt down",
    /* .params = */ swiglu_params,
    /* .n_params = */ P_CORES,
    /* .prepare = */ unfused_prepare,
    /* .run = */ swiglu_run,
    /* .release = */ swiglu_release,
    /* .metrics = */ swiglu_metrics,
};

const kt_variant kt_variant_cuda_swiglu_fused = {
    /* .op = */ "swiglu_mlp",
    /* .name = */ "fused",
    /* .backend = */ "cuda",
    /* .doc = */
    "gate+up on mma.sync tensor cores (fp16/bf16; fp32 FMA tiles for fp32) with the silu*mul "
    "epilogue writing [M,I], cuBLASLt down",
    /* .params = */ swiglu_params,
    /* .n_params = */ P_COUNT,
    /* .prepare = */ fused_prepare,
    /* .run = */ swiglu_run,
    /* .release = */ swiglu_release,
    /* .metrics = */ swiglu_metrics,
};
