/* A variant without a run function. */
#include "bad_plugin.h"

static const kt_variant v = {
    .op = "gemm", .name = "norun", .backend = "cpu", .doc = "has no run", .run = NULL};

int kt_plugin_init(kt_plugin_registrar *r)
{
    return r->add_variant(r, &v);
}
