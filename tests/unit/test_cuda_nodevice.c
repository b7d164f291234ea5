/* test_cuda_nodevice.c - what the CUDA backend must do on a machine without a GPU: be
 * registered, say "no CUDA device: <CUDA's error text>" from its probe, refuse to open with
 * KT_ENODEV, and format CUDA and cuBLASLt errors as file:line: name: text. Skips (77) in
 * builds without CUDA and on machines where a device answers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "kernel.h"

#include <stdio.h>
#include <string.h>

#ifdef KT_HAVE_CUDA
#include "cuda/cuda_private.h"

static void test_registered(void **state)
{
    (void)state;
    assert_non_null(kt_backend_find("cuda"));
    const char *variants[][2] = {
        {"gemm", "cublaslt"},        {"gemm", "deterministic"}, {"attention_decode", "dense"},
        {"attention_decode", "ffd"}, {"swiglu_mlp", "unfused"}, {"swiglu_mlp", "fused"},
    };
    for (size_t i = 0; i < sizeof(variants) / sizeof(variants[0]); i++) {
        const kt_variant *v = kt_variant_find(variants[i][0], "cuda", variants[i][1]);
        assert_non_null(v);
        assert_non_null(v->prepare);
        assert_non_null(v->run);
        assert_non_null(v->release);
    }
}

static void test_probe_reports_cuda_error(void **state)
{
    (void)state;
    kt_device_info info;
    memset(&info, 0x55, sizeof(info));
    assert_int_equal(kt_backend_find("cuda")->probe(&info), KT_ENODEV);
    assert_int_equal(info.available, 0);
    /* the same question asked here (after the probe) must give the text the probe quoted */
    int count = 0;
    cudaError_t err = cudaGetDeviceCount(&count);
    char want[256];
    snprintf(want, sizeof(want), "no CUDA device: %s",
             cudaGetErrorString(err != cudaSuccess ? err : cudaErrorNoDevice));
    assert_string_equal(info.reason, want);
}

static void test_open_fails_with_enodev(void **state)
{
    (void)state;
    kt_backend *b = NULL;
    kt_error_clear();
    assert_int_equal(kt_backend_open(&b, "cuda", 1, 1), KT_ENODEV);
    assert_null(b);
    assert_memory_equal(kt_error_last(), "no CUDA device: ", strlen("no CUDA device: "));
}

static void test_error_formatting(void **state)
{
    (void)state;
    kt_error_clear();
    assert_int_equal(kt_cuda_status(cudaSuccess, "x.c", 1), KT_OK);
    assert_string_equal(kt_error_last(), "");
    assert_int_equal(kt_cuda_status(cudaErrorInvalidValue, "x.c", 12), KT_ERROR);
    char want[256];
    snprintf(want, sizeof(want), "x.c:12: cudaErrorInvalidValue: %s",
             cudaGetErrorString(cudaErrorInvalidValue));
    assert_string_equal(kt_error_last(), want);
    assert_int_equal(kt_blaslt_status(CUBLAS_STATUS_NOT_SUPPORTED, "y.c", 7), KT_ERROR);
    snprintf(want, sizeof(want), "y.c:7: %s: %s",
             cublasLtGetStatusName(CUBLAS_STATUS_NOT_SUPPORTED),
             cublasLtGetStatusString(CUBLAS_STATUS_NOT_SUPPORTED));
    assert_string_equal(kt_error_last(), want);
    assert_non_null(strstr(kt_error_last(), "CUBLAS_STATUS_NOT_SUPPORTED"));
}

/* A CUDA variant handed another backend refuses in prepare instead of launching. */
static void test_variants_refuse_other_backends(void **state)
{
    (void)state;
    kt_backend *b = NULL;
    assert_int_equal(kt_backend_open(&b, "cpu", 1, 1), KT_OK);
    assert_null(kt_cuda_stream(b));
    assert_null(kt_cuda_blaslt(b));
    kt_problem p;
    memset(&p, 0, sizeof(p));
    p.dtype = KT_DTYPE_FP32;
    p.m = p.n = p.k = 4;
    p.batch = p.heads = p.kv_heads = 1;
    p.head_dim = 16;
    p.context = 8;
    for (int i = 0; i < kt_variant_count(); i++) {
        const kt_variant *v = kt_variant_at(i);
        if (strcmp(v->backend, "cuda") != 0)
            continue;
        kt_param_value params[KT_MAX_PARAMS];
        kt_param_defaults(params, v->params, v->n_params);
        kt_call call = {b, &p, params, NULL, NULL, 1, -1, 1, NULL, NULL};
        void *st = NULL;
        assert_int_equal(v->prepare(&st, &call), KT_EINVAL);
        v->release(st, b);
        assert_int_equal(b->bytes_current, 0);
    }
    kt_backend_close(b);
}

int main(void)
{
    kt_device_info info;
    if (kt_backend_find("cuda") && kt_backend_find("cuda")->probe(&info) == KT_OK &&
        info.available) {
        printf("a CUDA device answers: nothing to check here (see tests/gpu)\n");
        return 77;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_registered),
        cmocka_unit_test(test_probe_reports_cuda_error),
        cmocka_unit_test(test_open_fails_with_enodev),
        cmocka_unit_test(test_error_formatting),
        cmocka_unit_test(test_variants_refuse_other_backends),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
#else
int main(void)
{
    printf("CUDA is not built (KT_CUDA=OFF or no nvcc)\n");
    return 77;
}
#endif
