/* An enum param with an empty choice ("none||nan"): a spec could not name it, and listings
 * that split the choices stopped at it while the default pointed past it. */
#include "bad_plugin.h"

static const kt_param_def params[] = {
    {"fill", KT_PARAM_ENUM, 2, 0, 0, "none||nan", "what to fill"},
};

static int run(void *state, const kt_call *call)
{
    (void)state;
    (void)call;
    return KT_OK;
}

static const kt_variant v = {.op = "gemm",
                             .name = "emptychoice",
                             .backend = "cpu",
                             .doc = "bad choices",
                             .params = params,
                             .n_params = 1,
                             .run = run};

int kt_plugin_init(kt_plugin_registrar *r)
{
    return r->add_variant(r, &v);
}
