/* test_cuda_cublaslt_load.c - the cuBLASLt loader on any machine with the toolkit, GPU or not:
 * ktrial does not link libcublasLt, kt_cublaslt_load opens the toolkit's soname and resolves
 * every function of the table, and a second call returns the first result. Skips (77) in
 * builds without CUDA. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "kernel.h"

#ifdef KT_HAVE_CUDA
#include "cuda/cublaslt_load.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

static void test_not_loaded_at_start(void **state)
{
    (void)state;
    assert_null(kt_lt.Create);
    void *lib = dlopen(KT_CUBLASLT_SONAME, RTLD_NOW | RTLD_NOLOAD);
    assert_null(lib); /* not a dependency of the program: nothing loaded it at start-up */
}

static void test_soname_is_the_toolkit_major(void **state)
{
    (void)state;
    char want[64];
    snprintf(want, sizeof(want), "libcublasLt.so.%d", CUBLAS_VER_MAJOR);
    assert_string_equal(KT_CUBLASLT_SONAME, want);
}

static void test_loads_every_function(void **state)
{
    (void)state;
    kt_error_clear();
    int rc = kt_cublaslt_load();
    if (rc < 0)
        fail_msg("%s", kt_error_last());
#define KT_LT_CHECK(name) assert_non_null(kt_lt.name);
    KT_CUBLASLT_FUNCTIONS(KT_LT_CHECK)
#undef KT_LT_CHECK
    assert_int_equal(kt_cublaslt_load(), KT_OK);
    /* the library answers without a device */
    assert_int_equal(kt_lt.GetVersion() / 10000, CUBLAS_VER_MAJOR);
    assert_string_equal(kt_lt.GetStatusName(CUBLAS_STATUS_NOT_SUPPORTED),
                        "CUBLAS_STATUS_NOT_SUPPORTED");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_not_loaded_at_start),
        cmocka_unit_test(test_soname_is_the_toolkit_major),
        cmocka_unit_test(test_loads_every_function),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
#else
int main(void)
{
    return 77; /* the loader exists in CUDA builds only */
}
#endif
