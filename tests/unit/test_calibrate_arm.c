/* test_calibrate_arm.c - the arms' costs measured on the calibration problem: every cost
 * present and plausible for every arm, cached under each arm's key and read back, and no
 * measurement where there is nothing to measure (the cuda backend); the op's rates per input
 * law; a cache of any size read whole. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "measure/calibrate_arm.h"
#include "measure/calibrate_rates.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static kt_arm cand;

/* A cpu/gemm spec with one thread: baseline 'blas', candidate 'deterministic'. */
static kt_spec gemm_spec(void)
{
    kt_spec s;
    memset(&s, 0, sizeof(s));
    s.op = kt_op_find("gemm");
    assert_non_null(s.op);
    strcpy(s.backend, "cpu");
    s.dtype = KT_DTYPE_FP32;
    s.threads = 1;
    s.flush_cache = 1;
    s.distribution = KT_DIST_NORMAL;
    kt_param_defaults(s.input_params, s.op->input_params, s.op->n_input_params);
    s.baseline.variant = kt_variant_find("gemm", "cpu", "blas");
    assert_non_null(s.baseline.variant);
    kt_param_defaults(s.baseline.params, s.baseline.variant->params, s.baseline.variant->n_params);
    strcpy(s.baseline.name, "baseline");
    memset(&cand, 0, sizeof(cand));
    cand.variant = kt_variant_find("gemm", "cpu", "deterministic");
    assert_non_null(cand.variant);
    kt_param_defaults(cand.params, cand.variant->params, cand.variant->n_params);
    strcpy(cand.name, "det");
    s.candidates = &cand;
    s.n_candidates = 1;
    return s;
}

static char cache[PATH_MAX];

/* Every field of 'a' within 1e-12 (relative) of 'b'. */
static void assert_same_cost(const kt_arm_cost *a, const kt_arm_cost *b)
{
    const double x[10] = {a->call_s,  a->roof_s,  a->prepare_s, a->scan_s,    a->full_s,
                          a->flush_s, a->touch_s, a->in_bytes,  a->out_bytes, a->busy};
    const double y[10] = {b->call_s,  b->roof_s,  b->prepare_s, b->scan_s,    b->full_s,
                          b->flush_s, b->touch_s, b->in_bytes,  b->out_bytes, b->busy};
    for (int i = 0; i < 10; i++)
        if (fabs(x[i] - y[i]) > 1e-12 * fabs(y[i]))
            fail_msg("field %d: %.17g, cached %.17g", i, y[i], x[i]);
}

static int setup(void **state)
{
    (void)state;
    snprintf(cache, sizeof(cache), "/tmp/kt_calibrate_arm.%ld.json", (long)getpid());
    setenv("KT_CALIBRATION_FILE", cache, 1);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    remove(cache);
    unsetenv("KT_CALIBRATION_FILE");
    return 0;
}

/* The cache file's text, NUL-terminated, into 'text'. */
static void read_cache(char *text, size_t len)
{
    FILE *f = fopen(cache, "r");
    assert_non_null(f);
    size_t n = fread(text, 1, len - 1, f);
    fclose(f);
    text[n] = '\0';
}

static void test_measured_and_cached(void **state)
{
    (void)state;
    kt_spec s = gemm_spec();
    kt_arm_cost arms[2], c;
    int have[2];
    assert_int_equal(kt_calibration_arms(arms, have, &s, KT_PHASE_DECODE), 0);
    assert_true(have[0] && have[1]);
    c = arms[0];
    /* the calibration problem: gate_up at hidden 1024, intermediate 2048, batch 8 */
    kt_point pt = kt_calibration_point();
    kt_problem p;
    assert_int_equal(s.op->shape(&p, &pt, s.dtype, s.input_params), KT_OK);
    double in, out;
    kt_plan_io_bytes(&p, &in, &out);
    for (int k = 0; k < 2; k++) {
        c = arms[k];
        assert_true(c.in_bytes == in && c.out_bytes == out);
        assert_true(c.roof_s == kt_plan_roofline_seconds(&s, &p));
        /* a 16 MB GEMM takes time, a flush too, and checking outputs and inputs is not free;
         * none of it can take a minute */
        const double positive[4] = {c.call_s, c.flush_s, c.scan_s, c.full_s};
        for (int i = 0; i < 4; i++)
            assert_true(positive[i] > 0 && positive[i] < 60);
        assert_true(c.prepare_s >= 0 && c.touch_s >= 0 && c.busy >= 1);
    }
    c = arms[0];

    /* cached: the same figures again, without measuring */
    char text[8192];
    read_cache(text, sizeof(text));
    assert_non_null(strstr(text, "\"arm/cpu/gemm/fp32/t1/blas"));
    assert_non_null(strstr(text, "\"arm/cpu/gemm/fp32/t1/deterministic"));
    kt_arm_cost again[2];
    assert_int_equal(kt_calibration_arms(again, have, &s, KT_PHASE_DECODE), 0);
    assert_true(have[0] && have[1]);
    for (int k = 0; k < 2; k++) /* cJSON prints 15 digits when they read back close enough */
        assert_same_cost(&again[k], &arms[k]);
    /* another thread count is another entry */
    s.threads = 2;
    assert_int_equal(kt_calibration_arms(again, have, &s, KT_PHASE_DECODE), 0);
    read_cache(text, sizeof(text));
    assert_non_null(strstr(text, "\"arm/cpu/gemm/fp32/t2/blas"));
}

static void test_nothing_to_measure(void **state)
{
    (void)state;
    kt_spec s = gemm_spec();
    kt_arm_cost c[2];
    int have[2] = {1, 1};
    strcpy(s.backend, "cuda"); /* no device to measure on here */
    assert_int_equal(kt_calibration_arms(c, have, &s, KT_PHASE_DECODE), 0);
    assert_true(!have[0] && !have[1]);
}

/* A sim arm is measured too: its call is virtual, but prepare, the checks and the copies
 * around it are host work that the plan must price (the decode step's sim prepares with a
 * float64 forward). */
static void test_sim_arms_measured(void **state)
{
    (void)state;
    kt_spec s = gemm_spec();
    strcpy(s.backend, "sim");
    s.op = kt_op_find("synthetic");
    assert_non_null(s.op);
    kt_param_defaults(s.input_params, s.op->input_params, s.op->n_input_params);
    s.baseline.variant = kt_variant_find("synthetic", "sim", "lognormal");
    assert_non_null(s.baseline.variant);
    kt_param_defaults(s.baseline.params, s.baseline.variant->params, s.baseline.variant->n_params);
    s.candidates[0] = s.baseline;
    int i = kt_param_index(s.baseline.variant->params, s.baseline.variant->n_params, "fail");
    assert_true(i >= 0);
    s.candidates[0].params[i].num = 2; /* fail: nan, so the check fails and it keeps the model */
    kt_arm_cost c[2];
    int have[2];
    assert_int_equal(kt_calibration_arms(c, have, &s, KT_PHASE_DECODE), 0);
    assert_true(have[0] && !have[1]);
    assert_true(c[0].full_s > 0 && c[0].full_s < 60 && c[0].scan_s > 0 && c[0].in_bytes > 0);
}

/* The op's rates are measured and cached per input law: the llm law costs more per element
 * than the normal one, and a plan for an llm spec priced at the normal rate fell short. */
static void test_rates_per_law(void **state)
{
    (void)state;
    const kt_op *op = kt_op_find("attention_decode");
    assert_non_null(op);
    kt_calibration normal, llm;
    assert_int_equal(kt_calibration_get(&normal, op, KT_DTYPE_BF16, KT_DIST_NORMAL, NULL), 0);
    assert_int_equal(kt_calibration_get(&llm, op, KT_DTYPE_BF16, KT_DIST_LLM, NULL), 0);
    assert_true(normal.gen_s_per_elem > 0 && llm.gen_s_per_elem > 0);
    assert_true(normal.ref_s_per_flop > 0 && llm.ref_s_per_flop > 0);
    char text[8192];
    read_cache(text, sizeof(text));
    assert_non_null(strstr(text, "\"attention_decode/bf16\""));
    assert_non_null(strstr(text, "\"attention_decode/bf16/llm\""));
    kt_calibration again; /* read back, not measured again */
    assert_int_equal(kt_calibration_get(&again, op, KT_DTYPE_BF16, KT_DIST_LLM, NULL), 0);
    assert_true(fabs(again.gen_s_per_elem - llm.gen_s_per_elem) <= 1e-12 * llm.gen_s_per_elem);
}

/* A cache past 64 KiB (a few hundred arms) is read whole: a cut-off read did not parse, so
 * every save started a new file with one entry and every other arm was measured again. */
static void test_large_cache_kept(void **state)
{
    (void)state;
    static const char *const fields[] = {"call_s", "busy"};
    FILE *f = fopen(cache, "w");
    assert_non_null(f);
    fputs("{", f);
    for (int i = 0; i < 2000; i++) /* about 150 KB */
        fprintf(f, "%s\"arm/filler/%04d\": {\"call_s\": %d.5, \"busy\": 1}", i ? ",\n" : "", i, i);
    fputs("}\n", f);
    fclose(f);
    double v[2];
    assert_int_equal(kt_calibration_cache_get("arm/filler/1999", fields, v, 2), 0);
    assert_true(v[0] == 1999.5 && v[1] == 1);
    const double put[2] = {0.25, 1.5};
    kt_calibration_cache_put("arm/new", fields, put, 2);
    assert_int_equal(kt_calibration_cache_get("arm/new", fields, v, 2), 0);
    assert_true(v[0] == 0.25 && v[1] == 1.5);
    for (int i = 0; i < 2000; i += 111) { /* the others are still there */
        char key[32];
        snprintf(key, sizeof(key), "arm/filler/%04d", i);
        assert_int_equal(kt_calibration_cache_get(key, fields, v, 2), 0);
        assert_true(v[0] == i + 0.5);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_measured_and_cached), cmocka_unit_test(test_nothing_to_measure),
        cmocka_unit_test(test_sim_arms_measured),   cmocka_unit_test(test_rates_per_law),
        cmocka_unit_test(test_large_cache_kept),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
