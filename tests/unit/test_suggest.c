/* test_suggest.c - "did you mean": typos by edit distance, abbreviations part by part and
 * prefixes, nothing for an ambiguous or far word; the summary's cells ("—" for what was not
 * measured, p adjusted for the looks and points, the roofline); a tab in YAML indentation named as
 * such. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "report/cells.h"
#include "spec/yaml_tree.h"
#include "util/suggest.h"

#include <math.h>
#include <string.h>

static const char *const trial_keys[] = {"warmup",          "min_repetitions",
                                         "max_repetitions", "max_seconds_per_point",
                                         "order",           "flush_cache"};
#define N_TRIAL_KEYS (sizeof(trial_keys) / sizeof(trial_keys[0]))

static void test_typos(void **state)
{
    (void)state;
    static const char *const opts[] = {"--quick", "--json", "--resume", "--require-clean"};
    assert_string_equal(kt_suggest("--quik", opts, 4), "--quick");
    assert_string_equal(kt_suggest("--jsno", opts, 4), "--json"); /* a transposition */
    assert_string_equal(kt_suggest("warmpu", trial_keys, N_TRIAL_KEYS), "warmup");
    assert_null(kt_suggest("--quick", opts, 4)); /* the word itself: nothing to suggest */
    assert_null(kt_suggest("--verbose", opts, 4));
}

static void test_abbreviations(void **state)
{
    (void)state;
    static const char *const ops[] = {"synthetic", "gemm", "swiglu_mlp", "attention_decode",
                                      "decoder_layer"};
    /* part by part: "reps" keeps the letters of "repetitions" in order */
    assert_string_equal(kt_suggest("min_reps", trial_keys, N_TRIAL_KEYS), "min_repetitions");
    assert_string_equal(kt_suggest("max_secs_per_point", trial_keys, N_TRIAL_KEYS),
                        "max_seconds_per_point");
    /* a prefix of one name */
    assert_string_equal(kt_suggest("swiglu", ops, 5), "swiglu_mlp");
    assert_string_equal(kt_suggest("attn_decode", ops, 5), "attention_decode");
    /* "max" abbreviates two keys: no guess rather than a wrong one */
    assert_null(kt_suggest("max", trial_keys, N_TRIAL_KEYS));
    /* two letters say too little */
    assert_null(kt_suggest("sw", ops, 5));
    /* the first letter must match: "reps_min" is not "min_repetitions" */
    assert_null(kt_suggest("reps_min", trial_keys, N_TRIAL_KEYS));
}

static void test_cells(void **state)
{
    (void)state;
    char buf[64];
    assert_string_equal(kt_cell_time(buf, sizeof(buf), 0), kt_cell_none);
    assert_string_equal(kt_cell_time(buf, sizeof(buf), NAN), kt_cell_none);
    assert_string_equal(kt_cell_time(buf, sizeof(buf), 17110000), "17.11 ms");
    assert_string_equal(kt_cell_time(buf, sizeof(buf), 812), "812 ns");
    assert_string_equal(kt_cell_p(buf, sizeof(buf), NAN), kt_cell_none);
    assert_string_equal(kt_cell_p(buf, sizeof(buf), 0.0004), "<0.001");
    assert_string_equal(kt_cell_p(buf, sizeof(buf), 0.25), "0.250");
    /* the look spent alpha 0.01 of the run's 0.05: p 0.004 reads as 0.02 against 0.05 */
    assert_true(fabs(kt_p_adjusted(0.004, 0.95, 0.99) - 0.02) < 1e-12);
    assert_true(kt_p_adjusted(0.5, 0.95, 0.99) == 1.0);   /* capped */
    assert_true(kt_p_adjusted(0.03, 0.95, 0.95) == 0.03); /* no looks: unchanged */
    assert_true(isnan(kt_p_adjusted(NAN, 0.95, 0.99)));
}

static void test_roofline(void **state)
{
    (void)state;
    kt_roofline r;
    char buf[64];
    assert_int_equal(kt_roofline_parse(&r, "1000:100"), 0);
    assert_true(r.gflops == 1000 && r.gbps == 100);
    assert_int_equal(kt_roofline_parse(&r, "1000"), -1);
    assert_int_equal(kt_roofline_parse(&r, "-1:100"), -1);
    assert_int_equal(kt_roofline_parse(&r, "1000:100x"), -1);
    assert_int_equal(kt_roofline_parse(&r, NULL), -1);
    assert_true(isnan(r.gflops));
    assert_int_equal(kt_roofline_parse(&r, "1000:100"), 0);
    /* 2e9 flops, 1e8 bytes in 4 ms: 500 GFLOP/s; the roofline's time is max(2 ms, 1 ms) = 2 ms */
    assert_string_equal(kt_cell_throughput(buf, sizeof(buf), 2e9, 1e8, 4e6, &r),
                        "500 GFLOP/s (50%)");
    /* memory bound: 1e3 flops, 4e8 bytes in 8 ms: the roofline's 4 ms is 50% */
    assert_string_equal(kt_cell_throughput(buf, sizeof(buf), 0, 4e8, 8e6, &r), "50 GB/s (50%)");
    assert_string_equal(kt_cell_throughput(buf, sizeof(buf), 2e9, 0, 4e6, NULL), "500 GFLOP/s");
    assert_string_equal(kt_cell_throughput(buf, sizeof(buf), 2e9, 0, NAN, &r), kt_cell_none);
}

static void test_yaml_tab(void **state)
{
    (void)state;
    static const char *const texts[] = {
        "version: 1\nname: x\n\top: gemm\n",
        "trials:\n  warmup: 3\n\tmin_repetitions: 10\n",
        "trials:\n \twarmup: 3\n",
    };
    static const int lines[] = {3, 3, 2}, cols[] = {1, 1, 2};
    for (int i = 0; i < 3; i++) {
        kt_diag diag;
        kt_diag_init(&diag);
        kt_node *root = NULL;
        int rc = kt_yaml_load(&root, "t.yaml", texts[i], strlen(texts[i]), &diag);
        assert_true(rc != 0);
        assert_true(diag.n >= 1);
        assert_non_null(strstr(diag.items[0].message, "tabs are not allowed in YAML indentation"));
        assert_int_equal(diag.items[0].line, lines[i]);
        assert_int_equal(diag.items[0].col, cols[i]);
        kt_node_free(root);
        kt_diag_free(&diag);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_typos),    cmocka_unit_test(test_abbreviations),
        cmocka_unit_test(test_cells),    cmocka_unit_test(test_roofline),
        cmocka_unit_test(test_yaml_tab),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
