/* gemm variants that compute the right product and then write next to their output, as a
 * kernel with a wrong tail loop does: 'overrun' 64 bytes past its end, 'underrun' 32 bytes
 * before its start. Each must be a REJECT that says so, and the arms after it (the baseline's
 * pairs among them) must not pay for the memory it wrote over. */
#include "bad_plugin.h"

#include <string.h>

static int run_overrun(void *state, const kt_call *call)
{
    int err = test_blas_run(state, call);
    const kt_problem *p = call->problem;
    memset((char *)call->outputs[0] + kt_tensor_bytes(&p->tensors[p->n_inputs]), 0x3f, 64);
    return err;
}

static int run_underrun(void *state, const kt_call *call)
{
    int err = test_blas_run(state, call);
    memset((char *)call->outputs[0] - 32, 0x3f, 32);
    return err;
}

static const kt_variant variants[] = {
    {.op = "gemm",
     .name = "overrun",
     .backend = "cpu",
     .doc = "writes 64 bytes past its output",
     .prepare = test_blas_prepare,
     .run = run_overrun,
     .release = test_blas_release},
    {.op = "gemm",
     .name = "underrun",
     .backend = "cpu",
     .doc = "writes 32 bytes before its output",
     .prepare = test_blas_prepare,
     .run = run_underrun,
     .release = test_blas_release},
};

int kt_plugin_init(kt_plugin_registrar *r)
{
    int err = r->add_variant(r, &variants[0]);
    return err ? err : r->add_variant(r, &variants[1]);
}
