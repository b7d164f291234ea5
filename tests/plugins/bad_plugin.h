/* bad_plugin.h - pieces shared by the test plugins: each .c here is one way a plugin can go
 * wrong (or right), built as lib<target>.so by cmake/plugins.cmake. */
#ifndef KT_TEST_BAD_PLUGIN_H
#define KT_TEST_BAD_PLUGIN_H

#include <ktrial/plugin.h>

#include <stdint.h>

static const kt_param_def test_params[] = {
    {"block", KT_PARAM_INT, 16, 1, 256, NULL, "unused"},
};

static inline void test_crash(void)
{
    *(volatile int *)(uintptr_t)0 = 1; /* a real SIGSEGV, not raise() */
}

/* The built-in blas variant, for test variants that must compute right: found through a
 * call's lookup, kept for release (which gets none). */
static inline const kt_variant *test_blas(const kt_call *call)
{
    static const kt_variant *blas;
    if (call)
        blas = call->lookup->variant("gemm", "cpu", "blas");
    return blas;
}

static inline int test_blas_prepare(void **state, const kt_call *call)
{
    return test_blas(call)->prepare(state, call);
}

static inline int test_blas_run(void *state, const kt_call *call)
{
    return test_blas(call)->run(state, call);
}

static inline void test_blas_release(void *state, kt_backend *backend)
{
    test_blas(NULL)->release(state, backend);
}

/* Registers the 'n' variants of 'v'; the first error stops it. */
static inline int test_add_variants(kt_plugin_registrar *r, const kt_variant *v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        int err = r->add_variant(r, &v[i]);
        if (err)
            return err;
    }
    return KT_OK;
}

#endif
