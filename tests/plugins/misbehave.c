/* Candidates that fail at run time the other ways: NaN outputs, unwritten outputs, an
 * error return, a hang. Each must be a REJECT of that candidate alone. */
#include "bad_plugin.h"

#include <math.h>

static int run_nan(void *state, const kt_call *call)
{
    (void)state;
    const kt_problem *p = call->problem;
    size_t size = kt_dtype_size(p->dtype);
    double v = NAN;
    for (int64_t i = 0; i < p->m * p->n; i++)
        kt_dtype_from_double((char *)call->outputs[0] + (size_t)i * size, &v, p->dtype, 1);
    return KT_OK;
}

static int run_nothing(void *state, const kt_call *call)
{
    (void)state;
    (void)call;
    return KT_OK;
}

static int run_error(void *state, const kt_call *call)
{
    (void)state;
    (void)call;
    return kt_error_code(KT_EUNSUPPORTED, "misbehave: this shape is not supported");
}

static const kt_variant variants[] = {
    {.op = "gemm", .name = "nan", .backend = "cpu", .doc = "writes NaN", .run = run_nan},
    {.op = "gemm",
     .name = "unwritten",
     .backend = "cpu",
     .doc = "writes nothing",
     .run = run_nothing},
    {.op = "gemm", .name = "fails", .backend = "cpu", .doc = "returns an error", .run = run_error},
};

int kt_plugin_init(kt_plugin_registrar *r)
{
    for (size_t i = 0; i < sizeof(variants) / sizeof(variants[0]); i++) {
        int err = r->add_variant(r, &variants[i]);
        if (err)
            return err;
    }
    return KT_OK;
}
