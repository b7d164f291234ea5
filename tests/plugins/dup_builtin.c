/* A variant named like a built-in one of the same op and backend. */
#include "bad_plugin.h"

static int run(void *state, const kt_call *call)
{
    (void)state;
    (void)call;
    return KT_OK;
}

static const kt_variant v = {
    .op = "gemm", .name = "tiled", .backend = "cpu", .doc = "clashes", .run = run};

int kt_plugin_init(kt_plugin_registrar *r)
{
    return r->add_variant(r, &v);
}
