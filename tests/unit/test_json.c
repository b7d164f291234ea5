/* test_json.c - exact doubles and explicit non-finite values: printed text parses back to
 * the same bits (0.1, random bit patterns, signed zero, integers), NaN and the infinities
 * survive as strings, and the readers fall back where a member is absent or mistyped. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "util/json.h"
#include "util/dotted_path.h"
#include "kernel.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The text kt_json_real(v) prints; the caller frees. */
static char *printed(double v)
{
    cJSON *item = kt_json_real(v);
    assert_non_null(item);
    char *text = cJSON_PrintUnformatted(item);
    cJSON_Delete(item);
    assert_non_null(text);
    return text;
}

static int same_bits(double a, double b)
{
    return memcmp(&a, &b, sizeof(a)) == 0;
}

static void test_point_one_is_exact(void **state)
{
    (void)state;
    char *text = printed(0.1);
    /* 17 significant digits: the shortest form cJSON picks by default ("0.1") would also
     * round-trip, but the contract is that what is printed is exact for every double. */
    assert_string_equal(text, "0.10000000000000001");
    assert_true(strtod(text, NULL) == 0.1);
    free(text);
    text = printed(1.0 / 3.0);
    assert_true(strtod(text, NULL) == 1.0 / 3.0);
    free(text);
}

static void test_random_doubles_round_trip(void **state)
{
    (void)state;
    kt_rng rng;
    kt_rng_seed(&rng, 20240601);
    int checked = 0;
    for (int i = 0; i < 20000; i++) {
        uint64_t bits = kt_rng_next(&rng);
        double v;
        if (i % 2) { /* also values of ordinary magnitude, not only random exponents */
            v = (kt_rng_uniform(&rng) - 0.5) * pow(10.0, (double)(int)(bits % 41) - 20);
        } else {
            memcpy(&v, &bits, sizeof(v));
        }
        if (!isfinite(v))
            continue;
        char *text = printed(v);
        double back = strtod(text, NULL);
        if (!same_bits(back, v))
            fail_msg("%.17g printed as '%s' reads back as %.17g", v, text, back);
        free(text);
        checked++;
    }
    assert_true(checked > 19000);
}

static void test_integers_and_signed_zero(void **state)
{
    (void)state;
    const double values[] = {
        0.0,   -0.0,   1.0, -7.0, 123456789.0, 999999999999999.0, 1e15, 9007199254740993.0,
        1e300, -4e-320};
    for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++) {
        char *text = printed(values[i]);
        assert_true(same_bits(strtod(text, NULL), values[i]));
        free(text);
    }
    char *text = printed(42.0);
    assert_string_equal(text, "42");
    free(text);
}

static void test_non_finite_as_strings(void **state)
{
    (void)state;
    const double values[] = {NAN, INFINITY, -INFINITY};
    const char *const names[] = {"NaN", "Infinity", "-Infinity"};
    for (int i = 0; i < 3; i++) {
        cJSON *item = kt_json_real(values[i]);
        assert_true(cJSON_IsString(item));
        assert_string_equal(item->valuestring, names[i]);
        double back = kt_json_real_value(item, 5.0);
        if (isnan(values[i]))
            assert_true(isnan(back));
        else
            assert_true(back == values[i]);
        cJSON_Delete(item);
    }
}

/* A document written with kt_json_add_real, printed and parsed again, gives the same
 * values through kt_json_get_real, the non-finite ones included. */
static void test_document_round_trip(void **state)
{
    (void)state;
    const double values[] = {0.1, -2.5e-310, 6.02214076e23, NAN, INFINITY, -INFINITY, -0.0};
    const char *const keys[] = {"a", "b", "c", "d", "e", "f", "g"};
    cJSON *doc = cJSON_CreateObject();
    for (int i = 0; i < 7; i++)
        assert_non_null(kt_json_add_real(doc, keys[i], values[i]));
    char *text = kt_json_print(doc);
    cJSON_Delete(doc);
    cJSON *back = cJSON_Parse(text);
    assert_non_null(back);
    for (int i = 0; i < 7; i++) {
        double v = kt_json_get_real(back, keys[i], 99.0);
        if (isnan(values[i]))
            assert_true(isnan(v));
        else
            assert_true(same_bits(v, values[i]));
    }
    cJSON_Delete(back);
    free(text);
}

static void test_readers_fall_back(void **state)
{
    (void)state;
    cJSON *o = cJSON_Parse("{\"s\": \"text\", \"b\": true, \"n\": 3, \"x\": \"nan\", "
                           "\"z\": null, \"long\": \"abcdefghij\"}");
    assert_non_null(o);
    assert_true(kt_json_get_real(o, "missing", 1.5) == 1.5);
    assert_true(kt_json_get_real(o, "b", 2.5) == 2.5); /* a bool is not a number */
    assert_true(kt_json_get_real(o, "x", 3.5) == 3.5); /* only "NaN" spelled so */
    assert_true(kt_json_get_real(o, "z", 4.5) == 4.5); /* null is missing, not NaN */
    assert_true(kt_json_get_real(o, "n", 0) == 3.0);
    assert_true(kt_json_real_value(NULL, 6.5) == 6.5);

    char buf[5];
    assert_string_equal(kt_json_get_str(o, "s", buf, sizeof(buf)), "text");
    assert_string_equal(kt_json_get_str(o, "n", buf, sizeof(buf)), "");
    assert_string_equal(kt_json_get_str(o, "missing", buf, sizeof(buf)), "");
    assert_string_equal(kt_json_get_str(o, "long", buf, sizeof(buf)), "abcd");

    assert_int_equal(kt_json_get_bool(o, "b", 0), 1);
    assert_int_equal(kt_json_get_bool(o, "n", 7), 7);
    assert_int_equal(kt_json_get_bool(o, "missing", -1), -1);
    cJSON_Delete(o);
}

static void test_str_or_null(void **state)
{
    (void)state;
    cJSON *o = cJSON_CreateObject();
    kt_json_add_str_or_null(o, "a", NULL);
    kt_json_add_str_or_null(o, "b", "");
    kt_json_add_str_or_null(o, "c", "crashed");
    assert_true(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(o, "a")));
    assert_true(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(o, "b")));
    assert_string_equal(cJSON_GetObjectItemCaseSensitive(o, "c")->valuestring, "crashed");
    cJSON_Delete(o);
}

static void test_dotted_paths(void **state)
{
    (void)state;
    const char *p = "trials.max_startup_seconds";
    char key[16];
    assert_int_equal(kt_path_next_key(&p, key, sizeof(key)), 1);
    assert_string_equal(key, "trials");
    assert_int_equal(kt_path_next_key(&p, key, sizeof(key)), -1); /* 19 bytes do not fit */
    p = "a..b";
    assert_int_equal(kt_path_next_key(&p, key, sizeof(key)), 1);
    assert_string_equal(key, "a");
    assert_int_equal(kt_path_next_key(&p, key, sizeof(key)), 1);
    assert_string_equal(key, "");
    assert_int_equal(kt_path_next_key(&p, key, sizeof(key)), 1);
    assert_string_equal(key, "b");
    assert_int_equal(kt_path_next_key(&p, key, sizeof(key)), 0);

    cJSON *doc = cJSON_Parse("{\"usage\": {\"energy\": {\"joules\": 2.5}}, \"x\": 1}");
    assert_non_null(doc);
    const cJSON *j = kt_json_at_path(doc, "usage.energy.joules");
    assert_non_null(j);
    assert_true(cJSON_GetNumberValue(j) == 2.5);
    assert_null(kt_json_at_path(doc, "usage.power"));
    assert_null(kt_json_at_path(doc, "x.y"));
    assert_ptr_equal(kt_json_at_path(doc, ""), doc);
    cJSON_Delete(doc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_point_one_is_exact),
        cmocka_unit_test(test_random_doubles_round_trip),
        cmocka_unit_test(test_integers_and_signed_zero),
        cmocka_unit_test(test_non_finite_as_strings),
        cmocka_unit_test(test_document_round_trip),
        cmocka_unit_test(test_readers_fall_back),
        cmocka_unit_test(test_str_or_null),
        cmocka_unit_test(test_dotted_paths),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
