/* swiglu_fused.c - the swiglu_mlp 'fused' variant: the tiled engine computes matching gate
 * and up tiles side by side in one microkernel tile and applies silu(g) * u to the fp32
 * accumulators before its only store, writing a[M, I] (storage type); no [M, 2I]
 * intermediate exists. The down GEMM is the same tiled engine. */
#include "cpu.h"
#include "cpu_gemm.h"

#include <stdlib.h>

typedef struct fused_state {
    kt_cpu_tiled tiled;
    void *a; /* [M, I] in the storage type */
    size_t a_bytes;
} fused_state;

static int fused_prepare(void **state, const kt_call *call)
{
    const kt_problem *p = call->problem;
    fused_state *st = calloc(1, sizeof(*st));
    if (!st)
        return kt_error_code(KT_ENOMEM, "out of memory");
    *state = st;
    size_t bytes = (size_t)(p->m * p->n) * kt_dtype_size(p->dtype);
    int err = kt_backend_alloc(call->backend, &st->a, bytes);
    if (err < 0)
        return err;
    st->a_bytes = bytes;
    err = kt_cpu_tiled_init(&st->tiled, call->backend, call->threads, call->params);
    if (err < 0)
        return err;
    /* x [m, k] for the gate/up GEMM, then the activations [m, n] for the down GEMM */
    return kt_cpu_tiled_reserve_x(&st->tiled, call->backend, p->m, p->k > p->n ? p->k : p->n);
}

static int fused_run(void *state, const kt_call *call)
{
    fused_state *st = state;
    const kt_problem *p = call->problem;
    kt_cpu_tiled_gemm(&st->tiled, st->a, call->inputs[0], call->inputs[1], p->dtype, p->m, p->n,
                      p->k, 1, call->threads);
    kt_cpu_tiled_gemm(&st->tiled, call->outputs[0], st->a, call->inputs[2], p->dtype, p->m, p->k,
                      p->n, 0, call->threads);
    return KT_OK;
}

static void fused_release(void *state, kt_backend *backend)
{
    fused_state *st = state;
    if (!st)
        return;
    kt_cpu_tiled_release(&st->tiled, backend);
    kt_backend_free(backend, st->a, st->a_bytes);
    free(st);
}

const kt_variant kt_variant_cpu_swiglu_fused = {
    /* .op = */ "swiglu_mlp",
    /* .name = */ "fused",
    /* .backend = */ "cpu",
    /* .doc = */ "tiled gate_up GEMM with the silu*mul epilogue (no [M,2I] buffer), tiled down",
    /* .params = */ kt_cpu_tiled_params,
    /* .n_params = */ KT_CPU_TILED_N_PARAMS,
    /* .prepare = */ fused_prepare,
    /* .run = */ fused_run,
    /* .release = */ fused_release,
    /* .metrics = */ NULL,
};
