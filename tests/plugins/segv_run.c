/* Gemm variants whose run crashes: one dereferences NULL (SIGSEGV), one divides an integer by
 * zero (SIGFPE). Each is a REJECT of that candidate, never the run. */
#include "bad_plugin.h"

static int run(void *state, const kt_call *call)
{
    (void)state;
    (void)call;
    test_crash();
    return KT_OK;
}

static int run_fpe(void *state, const kt_call *call)
{
    (void)state;
    volatile int zero = call->problem->m > 0 ? 0 : 1; /* not folded: a real idiv by zero */
    volatile int quotient = (int)call->problem->n / zero;
    (void)quotient;
    return KT_OK;
}

static const kt_variant v = {
    .op = "gemm", .name = "segv", .backend = "cpu", .doc = "crashes in run", .run = run};
static const kt_variant fpe = {
    .op = "gemm", .name = "fpe", .backend = "cpu", .doc = "divides by zero in run", .run = run_fpe};

int kt_plugin_init(kt_plugin_registrar *r)
{
    int err = r->add_variant(r, &v);
    return err < 0 ? err : r->add_variant(r, &fpe);
}
