/* A variant without a backend. */
#include "bad_plugin.h"

static const kt_variant v = {
    .op = "gemm", .name = "nobackend", .backend = NULL, .doc = "names no backend", .run = NULL};

int kt_plugin_init(kt_plugin_registrar *r)
{
    return r->add_variant(r, &v);
}
