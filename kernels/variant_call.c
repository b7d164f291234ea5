/* variant_call.c - a variant's call as the runner makes it: the timed run, then the untimed
 * finish (kernel.h: kt_variant_finish), which only Python variants need. */
#include "kernel.h"
#include "python/py_variant.h"

int kt_variant_finish(const kt_variant *v, void *state, const kt_call *call)
{
    return kt_py_is_variant(v) ? kt_py_variant_finish(state, call) : KT_OK;
}

int kt_variant_call(const kt_variant *v, void *state, const kt_call *call)
{
    int err = v->run(state, call);
    return err < 0 ? err : kt_variant_finish(v, state, call);
}
