/* gemm_tiled.c - the gemm 'tiled' variant: ktrial's cache-blocked, packed GEMM. 16-bit
 * operands are upcast while packing, so no full fp32 copy of w is ever made. */
#include "cpu.h"
#include "cpu_gemm.h"

#include <stdlib.h>

static int tiled_prepare(void **state, const kt_call *call)
{
    kt_cpu_tiled *t = calloc(1, sizeof(*t));
    if (!t)
        return kt_error_code(KT_ENOMEM, "out of memory");
    *state = t;
    int err = kt_cpu_tiled_init(t, call->backend, call->threads, call->params);
    if (err < 0)
        return err;
    return kt_cpu_tiled_reserve_x(t, call->backend, call->problem->m, call->problem->k);
}

static int tiled_run(void *state, const kt_call *call)
{
    const kt_problem *p = call->problem;
    kt_cpu_tiled_gemm(state, call->outputs[0], call->inputs[0], call->inputs[1], p->dtype, p->m,
                      p->n, p->k, 0, call->threads);
    return KT_OK;
}

static void tiled_release(void *state, kt_backend *backend)
{
    kt_cpu_tiled_release(state, backend);
    free(state);
}

const kt_variant kt_variant_cpu_gemm_tiled = {
    /* .op = */ "gemm",
    /* .name = */ "tiled",
    /* .backend = */ "cpu",
    /* .doc = */
    "cache-blocked packed GEMM, 6x16 AVX2 or 6x64 AVX-512 FMA microkernel, upcast while packing",
    /* .params = */ kt_cpu_tiled_params,
    /* .n_params = */ KT_CPU_TILED_N_PARAMS,
    /* .prepare = */ tiled_prepare,
    /* .run = */ tiled_run,
    /* .release = */ tiled_release,
    /* .metrics = */ NULL,
};
