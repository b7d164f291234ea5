/* test_messages.c - the messages a first run shows say what happened, what it means for the
 * verdict and what to do: the busy-machine warning (never "0 core(s) this run leaves free"),
 * and the hint for a key under the wrong parent of the spec schema (thresholds.latency's
 * max_rel_l3 belongs, as max_rel_l2, under thresholds.numerics). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "run/checks.h"
#include "spec/schema_hint.h"
#include "util/read_file.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void test_load_warning(void **state)
{
    (void)state;
    char msg[768];
    /* the case the issue quoted: load 4.76, 2 cores, 2 threads */
    assert_true(kt_run_load_message(msg, sizeof(msg), 4.76, 2, 2) > 0);
    assert_non_null(strstr(msg, "warning: the machine is busy: 4.76 processes were running or "
                                "waiting for a CPU"));
    assert_non_null(strstr(msg, "this run's 2 thread(s) take all 2 core(s), leaving none"));
    assert_non_null(strstr(msg, "the verdicts stay valid"));
    assert_non_null(strstr(msg, "INCONCLUSIVE"));
    assert_non_null(strstr(msg, "run on an idle machine or set 'threads' lower"));
    assert_null(strstr(msg, "0 core(s)"));
    assert_int_equal(msg[strlen(msg) - 1], '\n');
    /* threads leave cores free */
    assert_true(kt_run_load_message(msg, sizeof(msg), 9.5, 8, 4) > 0);
    assert_non_null(strstr(msg, "leave 4 of the 8 core(s) for anything else"));
    /* a command trial: the programs choose their threads */
    assert_true(kt_run_load_message(msg, sizeof(msg), 4.0, 2, 0) > 0);
    assert_non_null(strstr(msg, "this machine has 2 core(s)"));
    assert_null(strstr(msg, "'threads'"));
    /* within the free cores plus one: nothing */
    assert_int_equal(kt_run_load_message(msg, sizeof(msg), 0.9, 2, 2), 0);
    assert_string_equal(msg, "");
    assert_int_equal(kt_run_load_message(msg, sizeof(msg), 4.9, 8, 4), 0);
}

static cJSON *spec_schema(void)
{
    const char *src = getenv("KT_SOURCE_DIR");
    char path[4096], *text = NULL;
    size_t len;
    snprintf(path, sizeof(path), "%s/schemas/experiment.schema.json", src ? src : ".");
    assert_int_equal(kt_read_file(&text, &len, path, 1 << 22), 0);
    cJSON *schema = cJSON_Parse(text);
    free(text);
    assert_non_null(schema);
    return schema;
}

static void test_wrong_parent_hint(void **state)
{
    (void)state;
    cJSON *schema = spec_schema();
    char hint[256];
    assert_int_equal(
        kt_schema_key_elsewhere(hint, sizeof(hint), schema, "max_rel_l3", "thresholds.latency"), 1);
    assert_string_equal(hint, "did you mean thresholds.numerics.max_rel_l2?");
    assert_int_equal(
        kt_schema_key_elsewhere(hint, sizeof(hint), schema, "max_rel_l2", "thresholds.latency"), 1);
    assert_string_equal(hint, "'max_rel_l2' belongs under thresholds.numerics");
    /* a top-level key indented under another */
    assert_int_equal(kt_schema_key_elsewhere(hint, sizeof(hint), schema, "batch_sizes", "trials"),
                     1);
    assert_string_equal(hint, "'batch_sizes' belongs under the top level");
    /* in an array's items, whatever the index */
    assert_int_equal(
        kt_schema_key_elsewhere(hint, sizeof(hint), schema, "min_speedup", "candidates[3]"), 1);
    assert_string_equal(hint, "'min_speedup' belongs under thresholds.latency");
    /* nothing like it anywhere */
    assert_int_equal(kt_schema_key_elsewhere(hint, sizeof(hint), schema, "zzqqxx", "thresholds"),
                     0);
    cJSON_Delete(schema);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_load_warning),
        cmocka_unit_test(test_wrong_parent_hint),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
