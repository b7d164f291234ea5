/* test_dtype.c - the storage-type conversions of kernels/dtype.c on their edge values
 * (subnormals, overflow, NaN, ties-to-even), exhaustive round trips, an independent
 * reference rounding, and the vectorised conversions of the CPU GEMMs against the scalar
 * ones. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "cpu/cpu_gemm.h"
#include "kernel.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static float f_of(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof(f));
    return f;
}

static uint32_t bits_of(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof(u));
    return u;
}

static void test_bf16_edges(void **state)
{
    (void)state;
    assert_int_equal(kt_fp32_to_bf16(1.0f), 0x3f80);
    assert_int_equal(kt_fp32_to_bf16(-0.0f), 0x8000);
    /* ties to even: halfway above 0x3f80 stays, halfway above 0x3f81 goes up */
    assert_int_equal(kt_fp32_to_bf16(f_of(0x3f808000u)), 0x3f80);
    assert_int_equal(kt_fp32_to_bf16(f_of(0x3f818000u)), 0x3f82);
    assert_int_equal(kt_fp32_to_bf16(f_of(0x3f808001u)), 0x3f81);
    assert_int_equal(kt_fp32_to_bf16(f_of(0x3f807fffu)), 0x3f80);
    /* overflow: the largest finite bf16 is 0x7f7f; from its upper tie on, Inf */
    assert_int_equal(kt_fp32_to_bf16(f_of(0x7f7f7fffu)), 0x7f7f);
    assert_int_equal(kt_fp32_to_bf16(f_of(0x7f7f8000u)), 0x7f80);
    assert_int_equal(kt_fp32_to_bf16(FLT_MAX), 0x7f80);
    assert_int_equal(kt_fp32_to_bf16(-FLT_MAX), 0xff80);
    assert_int_equal(kt_fp32_to_bf16(INFINITY), 0x7f80);
    assert_int_equal(kt_fp32_to_bf16(-INFINITY), 0xff80);
    /* NaN stays NaN, even one whose payload lives only in the dropped bits */
    assert_true(isnan(kt_bf16_to_fp32(kt_fp32_to_bf16(f_of(0x7f800001u)))));
    assert_true(isnan(kt_bf16_to_fp32(kt_fp32_to_bf16(f_of(0xff800001u)))));
    assert_int_equal(kt_fp32_to_bf16(f_of(0xff800001u)) & 0x8000, 0x8000);
    /* subnormals (same exponent range as fp32) */
    assert_int_equal(kt_fp32_to_bf16(f_of(0x00000001u)), 0x0000);
    assert_int_equal(kt_fp32_to_bf16(f_of(0x00008000u)), 0x0000);
    assert_int_equal(kt_fp32_to_bf16(f_of(0x00018000u)), 0x0002);
    assert_int_equal(kt_fp32_to_bf16(f_of(0x00010000u)), 0x0001);
    assert_true(kt_bf16_to_fp32(0x0001) == f_of(0x00010000u));
    /* every pattern round-trips */
    for (uint32_t h = 0; h < 65536; h++) {
        float f = kt_bf16_to_fp32((uint16_t)h);
        if (isnan(f))
            assert_true(isnan(kt_bf16_to_fp32(kt_fp32_to_bf16(f))));
        else
            assert_int_equal(kt_fp32_to_bf16(f), h);
    }
}

static void test_fp16_edges(void **state)
{
    (void)state;
    assert_int_equal(kt_fp32_to_fp16(1.0f), 0x3c00);
    assert_int_equal(kt_fp32_to_fp16(-2.0f), 0xc000);
    assert_int_equal(kt_fp32_to_fp16(-0.0f), 0x8000);
    /* ties to even, including a carry into the exponent */
    assert_int_equal(kt_fp32_to_fp16(1.0f + 0x1p-11f), 0x3c00);
    assert_int_equal(kt_fp32_to_fp16(1.0f + 3 * 0x1p-11f), 0x3c02);
    assert_int_equal(kt_fp32_to_fp16(2.0f - 0x1p-11f), 0x4000);
    /* overflow: 65504 is the largest finite, 65520 the tie with 65536 (odd 0x7bff loses) */
    assert_int_equal(kt_fp32_to_fp16(65504.0f), 0x7bff);
    assert_int_equal(kt_fp32_to_fp16(65519.996f), 0x7bff);
    assert_int_equal(kt_fp32_to_fp16(65520.0f), 0x7c00);
    assert_int_equal(kt_fp32_to_fp16(-1e30f), 0xfc00);
    assert_int_equal(kt_fp32_to_fp16(INFINITY), 0x7c00);
    assert_true(isinf(kt_fp16_to_fp32(0x7c00)));
    assert_true(isnan(kt_fp16_to_fp32(kt_fp32_to_fp16(NAN))));
    assert_true(isnan(kt_fp16_to_fp32(kt_fp32_to_fp16(f_of(0x7f800001u)))));
    assert_int_equal(kt_fp32_to_fp16(-NAN) & 0x8000, 0x8000);
    /* subnormals in units of 2^-24, ties to even, and the step up to the smallest normal */
    assert_int_equal(kt_fp32_to_fp16(0x1p-24f), 0x0001);
    assert_int_equal(kt_fp32_to_fp16(0x1p-25f), 0x0000);
    assert_int_equal(kt_fp32_to_fp16(0x1.8p-25f), 0x0001);
    assert_int_equal(kt_fp32_to_fp16(1.5f * 0x1p-24f), 0x0002);
    assert_int_equal(kt_fp32_to_fp16(2.5f * 0x1p-24f), 0x0002);
    assert_int_equal(kt_fp32_to_fp16(1023.0f * 0x1p-24f), 0x03ff);
    assert_int_equal(kt_fp32_to_fp16(1023.5f * 0x1p-24f), 0x0400);
    assert_int_equal(kt_fp32_to_fp16(0x1p-14f), 0x0400);
    assert_int_equal(kt_fp32_to_fp16(-0x1p-26f), 0x8000);
    assert_true(kt_fp16_to_fp32(0x0001) == 0x1p-24f);
    assert_true(kt_fp16_to_fp32(0x03ff) == 1023.0f * 0x1p-24f);
    assert_true(signbit(kt_fp16_to_fp32(0x8000)));
    for (uint32_t h = 0; h < 65536; h++) {
        float f = kt_fp16_to_fp32((uint16_t)h);
        if (isnan(f))
            assert_true(isnan(kt_fp16_to_fp32(kt_fp32_to_fp16(f))));
        else
            assert_int_equal(kt_fp32_to_fp16(f), h);
    }
}

static void test_fp8_e4m3_edges(void **state)
{
    (void)state;
    assert_int_equal(kt_fp32_to_fp8_e4m3(1.0f), 0x38);
    assert_int_equal(kt_fp32_to_fp8_e4m3(-1.0f), 0xb8);
    assert_int_equal(kt_fp32_to_fp8_e4m3(240.0f), 0x77);
    /* max 448 (e 15, m 110); 464 is the tie with the NaN code 0x7f: ties to even keep 448 */
    assert_int_equal(kt_fp32_to_fp8_e4m3(448.0f), 0x7e);
    assert_int_equal(kt_fp32_to_fp8_e4m3(-448.0f), 0xfe);
    assert_int_equal(kt_fp32_to_fp8_e4m3(450.0f), 0x7e);
    assert_int_equal(kt_fp32_to_fp8_e4m3(464.0f), 0x7e);
    assert_int_equal(kt_fp32_to_fp8_e4m3(464.5f), 0x7f);
    assert_int_equal(kt_fp32_to_fp8_e4m3(1e6f), 0x7f);
    assert_int_equal(kt_fp32_to_fp8_e4m3(INFINITY), 0x7f);
    assert_int_equal(kt_fp32_to_fp8_e4m3(-INFINITY), 0xff);
    assert_int_equal(kt_fp32_to_fp8_e4m3(NAN), 0x7f);
    assert_true(kt_fp8_e4m3_to_fp32(0x7e) == 448.0f);
    assert_true(isnan(kt_fp8_e4m3_to_fp32(0x7f)));
    assert_true(isnan(kt_fp8_e4m3_to_fp32(0xff)));
    /* ties to even between normals */
    assert_int_equal(kt_fp32_to_fp8_e4m3(1.0625f), 0x38);
    assert_int_equal(kt_fp32_to_fp8_e4m3(1.1875f), 0x3a);
    /* subnormals in units of 2^-9 */
    assert_int_equal(kt_fp32_to_fp8_e4m3(0x1p-9f), 0x01);
    assert_int_equal(kt_fp32_to_fp8_e4m3(0x1p-10f), 0x00);
    assert_int_equal(kt_fp32_to_fp8_e4m3(3 * 0x1p-10f), 0x02);
    assert_int_equal(kt_fp32_to_fp8_e4m3(7 * 0x1p-9f), 0x07);
    assert_int_equal(kt_fp32_to_fp8_e4m3(7.5f * 0x1p-9f), 0x08);
    assert_int_equal(kt_fp32_to_fp8_e4m3(-0x1p-6f), 0x88);
    assert_true(kt_fp8_e4m3_to_fp32(0x01) == 0x1p-9f);
    assert_true(kt_fp8_e4m3_to_fp32(0x08) == 0x1p-6f);
    assert_true(signbit(kt_fp8_e4m3_to_fp32(0x80)));
    for (uint32_t b = 0; b < 256; b++) {
        float f = kt_fp8_e4m3_to_fp32((uint8_t)b);
        if (isnan(f))
            assert_int_equal(kt_fp32_to_fp8_e4m3(f) & 0x7f, 0x7f);
        else
            assert_int_equal(kt_fp32_to_fp8_e4m3(f), b);
    }
}

/* An independent correctly rounded bf16: the two neighbours compared in double. */
static uint16_t bf16_by_distance(float x)
{
    uint32_t lo = bits_of(x) & 0xffff0000u;
    double dl = fabs((double)f_of(lo) - x);
    double dh = fabs((double)f_of(lo + 0x10000u) - x); /* the next one away from zero */
    if (dh < dl || (dh == dl && ((lo >> 16) & 1u)))
        return (uint16_t)((lo + 0x10000u) >> 16);
    return (uint16_t)(lo >> 16);
}

/* Random finite floats: the scalar bf16 rounding against the reference by distance, and
 * the vectorised conversions of the CPU GEMMs against the scalar ones (fp16 there is the
 * F16C instruction, an independent oracle for kt_fp32_to_fp16). */
static void test_random_and_vectorised(void **state)
{
    (void)state;
    enum { N = 1 << 16 };
    float *f = malloc(N * sizeof(float)), *back = malloc(N * sizeof(float));
    uint16_t *h = malloc(N * sizeof(uint16_t));
    kt_rng rng;
    kt_rng_seed(&rng, 11);
    for (int i = 0; i < N; i++) {
        uint32_t u = (uint32_t)kt_rng_next(&rng);
        if (i % 4 == 1) /* near the fp16 range, where its roundings happen */
            u = (u & 0x807fffffu) | ((uint32_t)(100 + i % 45) << 23);
        f[i] = f_of(u);
        if (isnan(f[i]) && i % 2)
            f[i] = (float)i;
    }
    f[0] = NAN;
    f[2] = INFINITY;
    f[4] = 65520.0f;
    f[6] = 0x1p-25f;
    for (int i = 0; i < N; i++)
        if (!isnan(f[i]) && !isinf(f[i]) && fabsf(f[i]) < 0x1.fep127f)
            assert_int_equal(kt_fp32_to_bf16(f[i]), bf16_by_distance(f[i]));
    static const kt_dtype types[] = {KT_DTYPE_BF16, KT_DTYPE_FP16};
    for (int t = 0; t < 2; t++) {
        kt_cpu_from_f32(h, f, types[t], N - 3, 2); /* odd length: the scalar tail too */
        for (int i = 0; i < N - 3; i++) {
            uint16_t want =
                types[t] == KT_DTYPE_BF16 ? kt_fp32_to_bf16(f[i]) : kt_fp32_to_fp16(f[i]);
            if (isnan(f[i]))
                assert_true(isnan(kt_dtype_load(h, types[t], (size_t)i)));
            else
                assert_int_equal(h[i], want);
        }
        for (int i = 0; i < N; i++)
            h[i] = (uint16_t)i;
        kt_cpu_to_f32(back, h, types[t], N, 2);
        for (int i = 0; i < N; i++) {
            float want = kt_dtype_load(h, types[t], (size_t)i);
            if (isnan(want))
                assert_true(isnan(back[i]));
            else
                assert_int_equal(bits_of(back[i]), bits_of(want));
        }
    }
    free(f);
    free(back);
    free(h);
}

/* Doubles just above a storage tie must round up, not be rounded to the tie by an
 * intermediate float and then to even. */
static void test_from_double_rounds_once(void **state)
{
    (void)state;
    double above_bf16_tie = 1.0 + 0x1p-8 + 0x1p-40;
    double above_fp16_tie = 1.0 + 0x1p-11 + 0x1p-40;
    double above_fp8_tie = 1.0 + 0x1p-4 + 0x1p-40;
    double below_fp16_tie = 1.0 + 0x1p-11 - 0x1p-40;
    uint16_t b, h;
    uint8_t q;
    kt_dtype_from_double(&b, &above_bf16_tie, KT_DTYPE_BF16, 1);
    assert_int_equal(b, 0x3f81);
    kt_dtype_from_double(&h, &above_fp16_tie, KT_DTYPE_FP16, 1);
    assert_int_equal(h, 0x3c01);
    kt_dtype_from_double(&h, &below_fp16_tie, KT_DTYPE_FP16, 1);
    assert_int_equal(h, 0x3c00);
    kt_dtype_from_double(&q, &above_fp8_tie, KT_DTYPE_FP8_E4M3, 1);
    assert_int_equal(q, 0x39);
    double tiny = -1e-50, huge = 1e300, nan = NAN;
    kt_dtype_from_double(&h, &tiny, KT_DTYPE_FP16, 1);
    assert_int_equal(h, 0x8000);
    kt_dtype_from_double(&b, &huge, KT_DTYPE_BF16, 1);
    assert_int_equal(b, 0x7f80);
    kt_dtype_from_double(&b, &nan, KT_DTYPE_BF16, 1);
    assert_true(isnan(kt_bf16_to_fp32(b)));
    double exact[3] = {0.5, -3.0, 0x1p-20}, back[3];
    float f32[3];
    kt_dtype_from_double(f32, exact, KT_DTYPE_FP32, 3);
    kt_dtype_to_double(back, f32, KT_DTYPE_FP32, 3);
    assert_memory_equal(back, exact, sizeof(exact));
}

static void test_names_and_sizes(void **state)
{
    (void)state;
    kt_dtype d;
    assert_int_equal(kt_dtype_parse(&d, "bf16"), KT_OK);
    assert_int_equal(d, KT_DTYPE_BF16);
    assert_int_equal(kt_dtype_parse(&d, "fp8_e4m3"), KT_EINVAL); /* never a spec dtype */
    assert_string_equal(kt_error_last(), "unknown dtype 'fp8_e4m3'");
    assert_int_equal(kt_dtype_size(KT_DTYPE_FP16), 2);
    assert_int_equal(kt_dtype_size(KT_DTYPE_FP8_E4M3), 1);
    assert_true(kt_dtype_unit_roundoff(KT_DTYPE_BF16) == 0x1p-8);
    assert_true(kt_dtype_unit_roundoff(KT_DTYPE_FP32) == 0x1p-24);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bf16_edges),
        cmocka_unit_test(test_fp16_edges),
        cmocka_unit_test(test_fp8_e4m3_edges),
        cmocka_unit_test(test_random_and_vectorised),
        cmocka_unit_test(test_from_double_rounds_once),
        cmocka_unit_test(test_names_and_sizes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
