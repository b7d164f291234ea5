/* gemm_cuda.c - the CUDA gemm variants: cuBLASLt (the baseline) and the deterministic tiled
 * kernel. Inputs x[m,k], w[n,k]; output y[m,n]; storage fp32, fp16 or bf16. */
#include "cuda_backend.h"
#include "cuda_private.h"

#include <stdlib.h>

enum { P_TF32, P_WORKSPACE_MIB, P_BLASLT_COUNT };

static const kt_param_def blaslt_params[P_BLASLT_COUNT] = {
    {"tf32", KT_PARAM_BOOL, 0, 0, 1, NULL,
     "fp32 storage only: TF32 tensor-core compute instead of full fp32"},
    {"workspace_mib", KT_PARAM_INT, 32, 0, 4096, NULL, "cuBLASLt workspace, MiB"},
};

typedef struct blaslt_state {
    kt_cuda_matmul mm;
} blaslt_state;

static int blaslt_prepare(void **out, const kt_call *call)
{
    const kt_problem *p = call->problem;
    blaslt_state *st = calloc(1, sizeof(*st));
    if (!st)
        return kt_error_code(KT_ENOMEM, "out of memory");
    *out = st;
    size_t ws = (size_t)call->params[P_WORKSPACE_MIB].num << 20;
    return kt_cuda_matmul_prepare(&st->mm, call->backend, p->dtype, p->m, p->n, p->k,
                                  call->params[P_TF32].num != 0, ws);
}

static int blaslt_run(void *state, const kt_call *call)
{
    blaslt_state *st = state;
    return kt_cuda_matmul_run(&st->mm, call->backend, call->inputs[0], call->inputs[1],
                              call->outputs[0]);
}

static void blaslt_release(void *state, kt_backend *backend)
{
    blaslt_state *st = state;
    if (!st)
        return;
    kt_cuda_matmul_release(&st->mm, backend);
    free(st);
}

static int blaslt_metrics(void *state, kt_metric *out, int max)
{
    const blaslt_state *st = state;
    kt_metric m[] = {
        {"algo_id", st->mm.algo_id, ""},
        {"workspace_bytes", (double)st->mm.workspace_bytes, "B"},
        {"algo_workspace_bytes", (double)st->mm.algo_workspace_bytes, "B"},
        {"tf32", st->mm.tf32, ""},
    };
    return kt_cuda_metrics_copy(out, max, m, (int)(sizeof(m) / sizeof(m[0])));
}

const kt_variant kt_variant_cuda_gemm_cublaslt = {
    /* .op = */ "gemm",
    /* .name = */ "cublaslt",
    /* .backend = */ "cuda",
    /* .doc = */ "cublasLtMatmul, fp32 compute (TF32 only when asked), heuristic algorithm",
    /* .params = */ blaslt_params,
    /* .n_params = */ P_BLASLT_COUNT,
    /* .prepare = */ blaslt_prepare,
    /* .run = */ blaslt_run,
    /* .release = */ blaslt_release,
    /* .metrics = */ blaslt_metrics,
};

static const kt_param_def deterministic_params[] = {KT_CUDA_TENSOR_PARAMS};

int kt_cuda_tensor_warps(const kt_param_value *cores_warps)
{
    return cores_warps[0].num == 0 ? (int)cores_warps[1].num : 0;
}

static int deterministic_prepare(void **out, const kt_call *call)
{
    const kt_problem *p = call->problem;
    *out = NULL;
    if (!kt_cuda_stream(call->backend))
        return kt_error_code(KT_EINVAL, "backend '%s' is not cuda", call->backend->iface->name);
    if (p->m <= 0 || p->n <= 0 || p->k <= 0)
        return kt_error_code(KT_EINVAL, "bad gemm shape");
    return KT_OK;
}

static int deterministic_run(void *state, const kt_call *call)
{
    (void)state;
    const kt_problem *p = call->problem;
    return kt_cuda_gemm_tiled(kt_cuda_stream(call->backend), p->dtype, call->inputs[0],
                              call->inputs[1], call->outputs[0], p->m, p->n, p->k,
                              kt_cuda_tensor_warps(call->params));
}

static void deterministic_release(void *state, kt_backend *backend)
{
    (void)state;
    (void)backend;
}

const kt_variant kt_variant_cuda_gemm_deterministic = {
    /* .op = */ "gemm",
    /* .name = */ "deterministic",
    /* .backend = */ "cuda",
    /* .doc = */
    "fixed reduction order, no split-K, no atomics: fp16/bf16 on mma.sync tensor cores, "
    "fp32 as 64x64 tiles of fp32 FMA in ascending k",
    /* .params = */ deterministic_params,
    /* .n_params = */ KT_CUDA_TENSOR_PARAM_COUNT,
    /* .prepare = */ deterministic_prepare,
    /* .run = */ deterministic_run,
    /* .release = */ deterministic_release,
    /* .metrics = */ NULL,
};
