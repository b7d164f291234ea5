/* Candidates that fail at run time the other ways: NaN outputs, unwritten outputs, an
 * error return (with a message or without), a hang. Each must be a REJECT of that candidate
 * alone. And one that computes the right product but returns 1: any value >= 0 is success
 * (plugin.h), in the timed pairs and in the profiling pass alike. */
#include "bad_plugin.h"

#include <math.h>
#include <string.h>

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

/* error codes without a message: the reason must still say what happened */
static int run_silent(void *state, const kt_call *call)
{
    (void)state;
    (void)call;
    return KT_EINVAL;
}

static int run_odd_code(void *state, const kt_call *call)
{
    (void)state;
    (void)call;
    return -12345;
}

/* a message no terminal or JSON file should take as it is: line breaks, an escape sequence,
 * a byte that is not UTF-8, and a long tail of two-byte characters that some buffer must cut */
static int run_garbled(void *state, const kt_call *call)
{
    (void)state;
    (void)call;
    char tail[1200] = "";
    for (size_t i = 0; i + 2 < sizeof(tail); i += 2)
        memcpy(tail + i, "\xc3\xa9", 3); /* U+00E9 */
    return kt_error_code(KT_EINVAL, "line one\nline two\x1b[2J \xff, %s", tail);
}

/* y[m, n] = x[m, k] W[n, k]^T, right, then a return value outside KT_OK's */
static int run_positive(void *state, const kt_call *call)
{
    (void)state;
    const kt_problem *p = call->problem;
    size_t size = kt_dtype_size(p->dtype);
    for (int64_t i = 0; i < p->m; i++) {
        for (int64_t j = 0; j < p->n; j++) {
            double acc = 0;
            for (int64_t q = 0; q < p->k; q++)
                acc += kt_dtype_load(call->inputs[0], p->dtype, (size_t)(i * p->k + q)) *
                       kt_dtype_load(call->inputs[1], p->dtype, (size_t)(j * p->k + q));
            kt_dtype_from_double((char *)call->outputs[0] + (size_t)(i * p->n + j) * size, &acc,
                                 p->dtype, 1);
        }
    }
    return 1;
}

static const kt_variant variants[] = {
    {.op = "gemm", .name = "nan", .backend = "cpu", .doc = "writes NaN", .run = run_nan},
    {.op = "gemm",
     .name = "unwritten",
     .backend = "cpu",
     .doc = "writes nothing",
     .run = run_nothing},
    {.op = "gemm", .name = "fails", .backend = "cpu", .doc = "returns an error", .run = run_error},
    {.op = "gemm",
     .name = "silent",
     .backend = "cpu",
     .doc = "returns KT_EINVAL, no message",
     .run = run_silent},
    {.op = "gemm", .name = "garbled", .backend = "cpu", .doc = "a raw message", .run = run_garbled},
    {.op = "gemm",
     .name = "oddcode",
     .backend = "cpu",
     .doc = "returns -12345",
     .run = run_odd_code},
    {.op = "gemm",
     .name = "positive",
     .backend = "cpu",
     .doc = "right, and returns 1",
     .run = run_positive},
};

int kt_plugin_init(kt_plugin_registrar *r)
{
    return test_add_variants(r, variants, sizeof(variants) / sizeof(variants[0]));
}
