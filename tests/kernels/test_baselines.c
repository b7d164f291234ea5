/* test_baselines.c - the identity of the baseline libraries: OpenBLAS's core names map to the
 * vector extensions their kernels use, a core older than the CPU gets a warning that names
 * OPENBLAS_CORETYPE, and the CPU backend's device description carries all of it. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "cpu/baselines.h"
#include "kernel.h"

#include <cblas.h>
#ifdef KT_HAVE_ONEDNN
#include <omp.h>
#endif
#include <stdlib.h>
#include <string.h>

static void test_core_isa(void **state)
{
    (void)state;
    assert_int_equal(kt_openblas_core_isa("Prescott"), KT_ISA_SSE);
    assert_int_equal(kt_openblas_core_isa("NEHALEM"), KT_ISA_SSE);
    assert_int_equal(kt_openblas_core_isa("Sandybridge"), KT_ISA_AVX);
    assert_int_equal(kt_openblas_core_isa("Haswell"), KT_ISA_AVX2);
    assert_int_equal(kt_openblas_core_isa("Zen"), KT_ISA_AVX2);
    assert_int_equal(kt_openblas_core_isa("SkylakeX"), KT_ISA_AVX512);
    assert_int_equal(kt_openblas_core_isa("Cooperlake"), KT_ISA_AVX512);
    assert_int_equal(kt_openblas_core_isa("NoSuchCore"), KT_ISA_UNKNOWN);
    assert_int_equal(kt_openblas_core_isa(NULL), KT_ISA_UNKNOWN);
}

static void test_warning(void **state)
{
    (void)state;
    char w[160];
    /* the CI case: Prescott kernels on an AVX-512 Xeon */
    assert_int_equal(kt_openblas_core_warning(w, sizeof(w), "Prescott", KT_ISA_AVX512), 1);
    assert_non_null(strstr(w, "Prescott"));
    assert_non_null(strstr(w, "OPENBLAS_CORETYPE=SkylakeX"));
    assert_int_equal(kt_openblas_core_warning(w, sizeof(w), "Prescott", KT_ISA_AVX2), 1);
    assert_non_null(strstr(w, "OPENBLAS_CORETYPE=Haswell"));
    assert_int_equal(kt_openblas_core_warning(w, sizeof(w), "Haswell", KT_ISA_AVX512), 1);
    assert_non_null(strstr(w, "OPENBLAS_CORETYPE=SkylakeX"));
    /* the core matches (or outdoes) the CPU, or is unknown: nothing to say */
    assert_int_equal(kt_openblas_core_warning(w, sizeof(w), "SkylakeX", KT_ISA_AVX512), 0);
    assert_string_equal(w, "");
    assert_int_equal(kt_openblas_core_warning(w, sizeof(w), "Haswell", KT_ISA_AVX2), 0);
    assert_int_equal(kt_openblas_core_warning(w, sizeof(w), "Prescott", KT_ISA_SSE), 0);
    assert_int_equal(kt_openblas_core_warning(w, sizeof(w), "NoSuchCore", KT_ISA_AVX512), 0);
}

static const char *info_value(const kt_device_info *info, const char *key)
{
    for (int i = 0; i < info->n; i++)
        if (strcmp(info->items[i].key, key) == 0)
            return info->items[i].value;
    return NULL;
}

/* The CPU backend's description names the core OpenBLAS picked in this process and warns
 * exactly when that core is narrower than this CPU. */
static void test_cpu_probe(void **state)
{
    (void)state;
    kt_device_info info;
    assert_int_equal(kt_backend_find("cpu")->probe(&info), KT_OK);
    const char *core = openblas_get_corename();
    assert_string_equal(info_value(&info, "openblas_core"), core);
    assert_string_equal(info_value(&info, "openblas_config"), openblas_get_config());
    assert_string_equal(info_value(&info, "cpu_isa"), kt_isa_level_name(kt_cpu_isa_level()));
    char w[160];
    int expect = kt_openblas_core_warning(w, sizeof(w), core, kt_cpu_isa_level());
    const char *got = info_value(&info, "openblas_warning");
    if (expect)
        assert_string_equal(got, w);
    else
        assert_null(got);
    const char *timeout = getenv("OPENBLAS_THREAD_TIMEOUT");
    assert_string_equal(info_value(&info, "openblas_thread_timeout"), timeout ? timeout : "unset");
    expect = kt_openblas_spin_warning(w, sizeof(w), openblas_get_num_threads(), timeout);
    got = info_value(&info, "openblas_threads_warning");
    if (expect)
        assert_string_equal(got, w);
    else
        assert_null(got);
#ifdef KT_HAVE_ONEDNN
    assert_non_null(info_value(&info, "onednn_version"));
    assert_non_null(info_value(&info, "onednn_isa"));
    const char *policy = getenv("OMP_WAIT_POLICY"), *spincount = getenv("GOMP_SPINCOUNT");
    assert_string_equal(info_value(&info, "omp_wait_policy"), policy && *policy ? policy : "unset");
    assert_string_equal(info_value(&info, "gomp_spincount"),
                        spincount && *spincount ? spincount : "unset");
    expect = kt_omp_spin_warning(w, sizeof(w), omp_get_max_threads(), policy, spincount);
    got = info_value(&info, "onednn_threads_warning");
    if (expect)
        assert_string_equal(got, w);
    else
        assert_null(got);
    assert_non_null(kt_variant_find("gemm", "cpu", "onednn"));
    assert_string_equal(kt_variant_library(kt_variant_find("gemm", "cpu", "onednn")), "onednn");
#else
    assert_null(kt_variant_find("gemm", "cpu", "onednn"));
    assert_true(kt_missing_variant_count() >= 1);
    assert_string_equal(kt_missing_variant_at(0)->name, "onednn");
#endif
    assert_string_equal(kt_variant_library(kt_variant_find("gemm", "cpu", "blas")), "openblas");
    assert_null(kt_variant_library(kt_variant_find("gemm", "cpu", "tiled")));
}

/* The spin warning: only with more than one OpenBLAS thread and the variable unset. */
static void test_spin_warning(void **state)
{
    (void)state;
    char w[160];
    assert_int_equal(kt_openblas_spin_warning(w, sizeof(w), 2, NULL), 1);
    assert_non_null(strstr(w, "OpenBLAS's 2 threads spin"));
    assert_non_null(strstr(w, "OPENBLAS_THREAD_TIMEOUT=16"));
    assert_int_equal(kt_openblas_spin_warning(w, sizeof(w), 2, "16"), 0);
    assert_string_equal(w, "");
    assert_int_equal(kt_openblas_spin_warning(w, sizeof(w), 1, NULL), 0);
    assert_int_equal(kt_openblas_spin_warning(w, sizeof(w), 8, ""), 1); /* empty = unset */
}

/* oneDNN's OpenMP spin warning: more than one thread, no GOMP_SPINCOUNT, and a wait policy
 * other than passive (any case); empty values are unset. */
static void test_omp_spin_warning(void **state)
{
    (void)state;
    char w[160];
    assert_int_equal(kt_omp_spin_warning(w, sizeof(w), 2, NULL, NULL), 1);
    assert_non_null(strstr(w, "oneDNN's 2 OpenMP threads spin"));
    assert_non_null(strstr(w, "GOMP_SPINCOUNT=2000"));
    assert_int_equal(kt_omp_spin_warning(w, sizeof(w), 2, "active", NULL), 1);
    assert_int_equal(kt_omp_spin_warning(w, sizeof(w), 2, "", ""), 1);
    assert_int_equal(kt_omp_spin_warning(w, sizeof(w), 2, "PASSIVE", NULL), 0);
    assert_string_equal(w, "");
    assert_int_equal(kt_omp_spin_warning(w, sizeof(w), 2, NULL, "2000"), 0);
    assert_int_equal(kt_omp_spin_warning(w, sizeof(w), 2, "active", "0"), 0);
    assert_int_equal(kt_omp_spin_warning(w, sizeof(w), 1, NULL, NULL), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_core_isa),         cmocka_unit_test(test_warning),
        cmocka_unit_test(test_cpu_probe),        cmocka_unit_test(test_spin_warning),
        cmocka_unit_test(test_omp_spin_warning),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
