/* A gemm variant that computes like the built-in blas variant (through the registry's lookup)
 * and dereferences NULL in release: a REJECT of that candidate that names the release. */
#include "bad_plugin.h"

static void release(void *state, kt_backend *backend)
{
    (void)state;
    (void)backend;
    test_crash();
}

static const kt_variant v = {.op = "gemm",
                             .name = "segvrelease",
                             .backend = "cpu",
                             .doc = "crashes in release",
                             .prepare = test_blas_prepare,
                             .run = test_blas_run,
                             .release = release};

int kt_plugin_init(kt_plugin_registrar *r)
{
    return r->add_variant(r, &v);
}
