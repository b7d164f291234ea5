/* test_limits.c - the limits in runner/util/limits.h against the embedded experiment schema,
 * so the schema stage and the meaning stage of validation agree on every bound. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "spec/embedded.h"
#include "spec/matrix.h"
#include "measure/trial.h"
#include "util/limits.h"

#include <cjson/cJSON.h>
#include <string.h>

static cJSON *schema;

static int load_schema(void **state)
{
    (void)state;
    schema =
        cJSON_ParseWithLength(kt_embedded_experiment_schema, kt_embedded_experiment_schema_len);
    return schema ? 0 : -1;
}

static int free_schema(void **state)
{
    (void)state;
    cJSON_Delete(schema);
    return 0;
}

/* The number at a slash-separated path of the schema ("properties/candidates/maxItems"). */
static double at(const char *path)
{
    char buf[256];
    snprintf(buf, sizeof(buf), "%s", path);
    const cJSON *node = schema;
    for (char *save = NULL, *key = strtok_r(buf, "/", &save); key && node;
         key = strtok_r(NULL, "/", &save))
        node = cJSON_GetObjectItemCaseSensitive(node, key);
    if (!cJSON_IsNumber(node))
        fail_msg("schema has no number at '%s'", path);
    return node->valuedouble;
}

static void test_spec_limits_match_the_schema(void **state)
{
    (void)state;
    assert_int_equal(at("properties/name/maxLength"), KT_LIMIT_NAME_LEN);
    assert_int_equal(at("definitions/name/maxLength"), KT_LIMIT_NAME_LEN);
    assert_int_equal(at("definitions/model_name/maxLength"), KT_LIMIT_NAME_LEN);
    assert_int_equal(at("definitions/variant/maxLength"), KT_LIMIT_NAME_LEN);
    assert_int_equal(at("properties/candidates/maxItems"), KT_LIMIT_CANDIDATES);
    assert_int_equal(at("properties/models/maxItems"), KT_LIMIT_AXIS_VALUES);
    assert_int_equal(at("properties/batch_sizes/maxItems"), KT_LIMIT_AXIS_VALUES);
    assert_int_equal(at("properties/context_lengths/maxItems"), KT_LIMIT_AXIS_VALUES);
    assert_int_equal(at("properties/inputs/properties/sets/maximum"), KT_LIMIT_INPUT_SETS);
    assert_int_equal(at("properties/threads/maximum"), KT_LIMIT_THREADS);
    assert_int_equal(at("properties/trials/properties/warmup/maximum"), KT_LIMIT_WARMUP);
    assert_int_equal(at("properties/trials/properties/min_repetitions/maximum"),
                     KT_LIMIT_REPETITIONS);
    assert_int_equal(at("properties/trials/properties/max_repetitions/maximum"),
                     KT_LIMIT_REPETITIONS);
    assert_int_equal(at("properties/trials/properties/max_seconds_per_point/maximum"),
                     KT_LIMIT_SECONDS_PER_POINT);
    assert_int_equal(at("definitions/dimension/maximum"), KT_LIMIT_DIMENSION);
    assert_int_equal(at("definitions/batch_size/maximum"), KT_LIMIT_DIMENSION);
    assert_int_equal(at("definitions/context_length/maximum"), KT_LIMIT_CONTEXT);
}

/* The structures that hold what the limits allow are big enough for it. */
static void test_structures_hold_the_limits(void **state)
{
    (void)state;
    kt_candidate_result c;
    assert_int_equal(sizeof(c.reasons) / sizeof(c.reasons[0]), KT_LIMIT_REASONS);
    assert_int_equal(sizeof(c.reasons[0]), KT_LIMIT_REASON_LEN);
    assert_int_equal(sizeof(c.reason_codes) / sizeof(c.reason_codes[0]), KT_LIMIT_REASONS);
    kt_arm_result a;
    assert_true(sizeof(a.name) >= KT_LIMIT_NAME_LEN + 1);
    assert_true(sizeof(a.failure) >= KT_LIMIT_FAILURE_LEN);
    assert_true(sizeof(a.numerics) / sizeof(a.numerics[0]) >= KT_LIMIT_INPUT_SETS);
    kt_point_result p;
    assert_true(sizeof(p.error) >= KT_LIMIT_FAILURE_LEN);
    assert_int_equal(KT_MATRIX_MAX_POINTS, KT_LIMIT_POINTS);
    assert_int_equal(KT_SPEC_MAX_BYTES, KT_LIMIT_SPEC_BYTES);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_spec_limits_match_the_schema),
        cmocka_unit_test(test_structures_hold_the_limits),
    };
    return cmocka_run_group_tests(tests, load_schema, free_schema);
}
