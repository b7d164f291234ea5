/* A param whose range is empty (min > max); init ignores the error add_variant returns. */
#include "bad_plugin.h"

static const kt_param_def params[] = {
    {"tile", KT_PARAM_INT, 32, 64, 8, NULL, "tile edge"},
};

static int run(void *state, const kt_call *call)
{
    (void)state;
    (void)call;
    return KT_OK;
}

static const kt_variant v = {.op = "gemm",
                             .name = "minmax",
                             .backend = "cpu",
                             .doc = "bad range",
                             .params = params,
                             .n_params = 1,
                             .run = run};

int kt_plugin_init(kt_plugin_registrar *r)
{
    r->add_variant(r, &v);
    return KT_OK;
}
