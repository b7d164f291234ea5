/* A gemm variant whose run dereferences NULL: a REJECT of that candidate, never the run. */
#include "bad_plugin.h"

static int run(void *state, const kt_call *call)
{
    (void)state;
    (void)call;
    test_crash();
    return KT_OK;
}

static const kt_variant v = {
    .op = "gemm", .name = "segv", .backend = "cpu", .doc = "crashes in run", .run = run};

int kt_plugin_init(kt_plugin_registrar *r)
{
    return r->add_variant(r, &v);
}
