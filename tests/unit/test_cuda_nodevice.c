/* test_cuda_nodevice.c - what the CUDA backend must do on a machine without a GPU: be
 * registered, say "no CUDA device: <CUDA's error text>" from its probe, refuse to open with
 * KT_ENODEV, format CUDA and cuBLASLt errors as file:line: name: text, and tests/gpu/run.sh
 * must exit 69 saying "no GPU" with a summary.json that says so. Skips (77) in
 * builds without CUDA and on machines where a device answers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "kernel.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#ifdef KT_HAVE_CUDA
#include "cuda/cublaslt_load.h"
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
    assert_int_equal(kt_cublaslt_load(), KT_OK);
    assert_int_equal(kt_blaslt_status(CUBLAS_STATUS_NOT_SUPPORTED, "y.c", 7), KT_ERROR);
    snprintf(want, sizeof(want), "y.c:7: %s: %s", kt_lt.GetStatusName(CUBLAS_STATUS_NOT_SUPPORTED),
             kt_lt.GetStatusString(CUBLAS_STATUS_NOT_SUPPORTED));
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

/* Reads all of 'path' (NUL-terminated) or NULL. */
static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *buf = malloc(1 << 16);
    size_t n = buf ? fread(buf, 1, (1 << 16) - 1, f) : 0;
    fclose(f);
    if (buf)
        buf[n] = '\0';
    return buf;
}

/* run.sh on this GPU-less machine: exit 69, "no GPU" on its output, nothing built, and a
 * valid summary.json whose status is "no GPU" with a failed 'gpu' check. */
static void test_run_sh_says_no_gpu(void **state)
{
    (void)state;
    if (system("command -v nvidia-smi >/dev/null 2>&1") == 0)
        skip(); /* nvidia-smi answers: run.sh would go on to build (tests/gpu covers it) */
    const char *src = getenv("KT_SOURCE_DIR");
    assert_non_null(src);
    char out[] = "/tmp/kt-gpu-run-XXXXXX", cmd[1024], path[512], text[4096] = "";
    assert_non_null(mkdtemp(out));
    snprintf(cmd, sizeof(cmd), "OUT='%s' KT_GPU_BUILD_DIR='%s/build' '%s/tests/gpu/run.sh' 2>&1",
             out, out, src);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    size_t n = fread(text, 1, sizeof(text) - 1, p);
    text[n] = '\0';
    int status = pclose(p);
    print_message("%s", text);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 69);
    assert_non_null(strstr(text, "no GPU"));
    snprintf(path, sizeof(path), "%s/build", out);
    assert_int_not_equal(access(path, F_OK), 0); /* nothing configured or built */
    snprintf(path, sizeof(path), "%s/summary.json", out);
    char *json = slurp(path);
    assert_non_null(json);
    cJSON *root = cJSON_Parse(json);
    assert_non_null(root);
    assert_string_equal(cJSON_GetObjectItem(root, "status")->valuestring, "no GPU");
    cJSON *checks = cJSON_GetObjectItem(root, "checks");
    assert_true(cJSON_GetArraySize(checks) == 1);
    cJSON *gpu = cJSON_GetArrayItem(checks, 0);
    assert_string_equal(cJSON_GetObjectItem(gpu, "name")->valuestring, "gpu");
    assert_string_equal(cJSON_GetObjectItem(gpu, "status")->valuestring, "fail");
    assert_non_null(strstr(cJSON_GetObjectItem(gpu, "detail")->valuestring, "no GPU"));
    cJSON_Delete(root);
    free(json);
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", out);
    assert_int_equal(system(cmd), 0);
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
        cmocka_unit_test(test_run_sh_says_no_gpu),
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
