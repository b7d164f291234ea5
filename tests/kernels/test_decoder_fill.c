/* test_decoder_fill.c - the decoder_layer op's seeded fill (kernels/ops/decoder_fill.c): the
 * same bytes for any thread count, a length that is no multiple of a chunk or of a pair filled
 * to the last element, no zeros, and the mean and std the weights need (N(0, std^2), and
 * U(-a, a) of that std within its bound). */
#include "kernel.h"
#include "ops/decoder_layer.h"

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

enum { N = 3 * 4096 + 1001 }; /* 3 full chunks and an odd tail */

static void check_moments(const void *buf, kt_dtype dtype, double std, double bound)
{
    double sum = 0, sum2 = 0;
    for (size_t i = 0; i < N; i++) {
        double x = kt_dtype_load(buf, dtype, i);
        assert_true(x != 0.0);
        assert_true(fabs(x) <= bound);
        sum += x;
        sum2 += x * x;
    }
    double mean = sum / N, sd = sqrt(sum2 / N - mean * mean);
    /* 5 standard errors: the mean's is std / sqrt(N), the std's about std / sqrt(2 N) */
    assert_true(fabs(mean) < 5.0 * std / sqrt((double)N));
    assert_true(fabs(sd - std) < 5.0 * std / sqrt(2.0 * N) + 0.01 * std);
}

static void test_threads_do_not_change_values(void **state)
{
    (void)state;
    static const kt_dtype dtypes[] = {KT_DTYPE_FP32, KT_DTYPE_BF16, KT_DTYPE_FP16};
    for (size_t d = 0; d < sizeof(dtypes) / sizeof(dtypes[0]); d++) {
        size_t bytes = N * kt_dtype_size(dtypes[d]);
        char *one = malloc(bytes), *three = malloc(bytes), *other = malloc(bytes);
        assert_non_null(one);
        assert_non_null(three);
        assert_non_null(other);
        memset(one, 0, bytes);
        memset(three, 0xff, bytes);
        kt_dl_fill(one, dtypes[d], N, KT_DIST_NORMAL, 0.02, 11, 1);
        kt_dl_fill(three, dtypes[d], N, KT_DIST_NORMAL, 0.02, 11, 3);
        assert_memory_equal(one, three, bytes);
        kt_dl_fill(other, dtypes[d], N, KT_DIST_NORMAL, 0.02, 12, 2);
        assert_memory_not_equal(one, other, bytes);     /* the seed matters */
        check_moments(one, dtypes[d], 0.02, 0.02 * 10); /* P(|z| > 10) ~ 1e-23 */
        free(one);
        free(three);
        free(other);
    }
}

static void test_uniform_std(void **state)
{
    (void)state;
    float *buf = malloc(N * sizeof(float));
    assert_non_null(buf);
    kt_dl_fill(buf, KT_DTYPE_FP32, N, KT_DIST_UNIFORM, 0.5, 3, 2);
    check_moments(buf, KT_DTYPE_FP32, 0.5, 0.5 * sqrt(3.0));
    free(buf);
}

/* Values that round to zero in the storage type become +-1e-3, never 0. */
static void test_no_zeros_when_tiny(void **state)
{
    (void)state;
    uint8_t *buf = malloc(N);
    assert_non_null(buf);
    kt_dl_fill(buf, KT_DTYPE_FP8_E4M3, N, KT_DIST_NORMAL, 1e-4, 5, 2);
    for (size_t i = 0; i < N; i++)
        assert_true(kt_dtype_load(buf, KT_DTYPE_FP8_E4M3, i) != 0.0f);
    free(buf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_threads_do_not_change_values),
        cmocka_unit_test(test_uniform_std),
        cmocka_unit_test(test_no_zeros_when_tiny),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
