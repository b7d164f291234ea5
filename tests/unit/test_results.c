/* test_results.c - a point result through JSON text and back, every field that
 * kt_point_result_from_json reads (NaN and the infinities included); malformed input; the
 * per-candidate verdicts under aggregate all and geomean on hand-built runs; exit codes;
 * the summary table. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "cli/commands.h"
#include "result/result_json.h"
#include "report/summary.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static kt_spec spec;
static kt_arm arms[2];

/* A synthetic/sim spec: baseline and candidates "alpha" and "beta", all lognormal. */
static int setup_spec(void **state)
{
    (void)state;
    memset(&spec, 0, sizeof(spec));
    spec.op = kt_op_find("synthetic");
    const kt_variant *v = kt_variant_find("synthetic", "sim", "lognormal");
    if (!spec.op || !v)
        return -1;
    spec.baseline.variant = arms[0].variant = arms[1].variant = v;
    kt_param_defaults(spec.baseline.params, v->params, v->n_params);
    kt_param_defaults(arms[0].params, v->params, v->n_params);
    kt_param_defaults(arms[1].params, v->params, v->n_params);
    strcpy(spec.baseline.name, "baseline");
    strcpy(arms[0].name, "alpha");
    strcpy(arms[1].name, "beta");
    spec.candidates = arms;
    spec.n_candidates = 2;
    spec.min_speedup = 1.0;
    spec.confidence = 0.95;
    return 0;
}

/* ---- the JSON round trip -------------------------------------------------------------- */

static double counter;

/* Distinct values that need all 17 digits; every 7th one non-finite. */
static double next_value(void)
{
    counter += 1;
    int k = (int)counter;
    if (k % 7 == 0)
        return k % 3 == 0 ? NAN : (k % 3 == 1 ? INFINITY : -INFINITY);
    return counter / 3.0 + 1e-9 * counter;
}

static void fill_arm(kt_arm_result *a, const char *name, int failed)
{
    memset(a, 0, sizeof(*a));
    snprintf(a->name, sizeof(a->name), "%s", name);
    snprintf(a->variant, sizeof(a->variant), "lognormal");
    a->failed = failed;
    if (failed)
        snprintf(a->failure, sizeof(a->failure), "left 1 of 64 output elements unwritten");
    a->n_sets = 3;
    for (int s = 0; s < 3; s++) {
        kt_numerics *n = &a->numerics[s];
        n->elems = 1000003 + s;
        n->unwritten = s;
        n->nonfinite = 2 * s;
        n->max_abs = next_value();
        n->max_rel = next_value();
        n->rel_l2 = next_value();
        n->cosine = next_value();
        n->inputs_modified = s == 1;
    }
    a->repeatable = failed ? 0 : 1;
    a->bytes = next_value();
    a->variant_bytes = next_value();
    a->prepare_ns = next_value();
    a->n_metrics = 2;
    strcpy(a->metric_names[0], "kept_fraction");
    strcpy(a->metric_names[1], "blocks");
    strcpy(a->metric_units[1], "count");
    a->metric_values[0] = next_value();
    a->metric_values[1] = next_value();
}

static void fill_summary(kt_summary *s)
{
    s->n = 17;
    s->mean = next_value();
    s->median = next_value();
    s->p10 = next_value();
    s->p90 = next_value();
    s->min = next_value();
    s->max = next_value();
    s->mad = next_value();
    s->outliers_mild = 3;
    s->outliers_severe = 1;
}

static void fill_candidate(kt_candidate_result *c, const char *name, int failed, size_t n_pairs)
{
    memset(c, 0, sizeof(*c));
    fill_arm(&c->arm, name, failed);
    c->pairs = calloc(n_pairs, sizeof(kt_pair));
    assert_non_null(c->pairs);
    for (size_t i = 0; i < n_pairs; i++) {
        kt_pair *p = &c->pairs[i];
        *p = (kt_pair){(int)i,       (int)(i % 3), (int)(i & 1),      next_value(), next_value(),
                       next_value(), next_value(), (int)(i % 5 == 0), (int)(i % 4)};
    }
    c->n_pairs = n_pairs;
    c->speedup = 1.0 / 3.0 + 1;
    c->ci_low = 1.0 / 7.0 + 1;
    c->ci_high = failed ? INFINITY : 1.0 / 11.0 + 1.5;
    c->confidence_used = 1 - 0.05 / 9;
    c->shift.achieved = next_value();
    c->shift.p_value = next_value();
    c->shift.exact = 1;
    c->looks = 4;
    c->stopped_early = 1;
    c->order_p = next_value();
    c->order_shift = next_value();
    c->order_warning = 1;
    c->noisy_pairs = 2;
    fill_summary(&c->base_time);
    fill_summary(&c->cand_time);
    c->worst_rel_l2 = next_value();
    c->error_ratio = next_value();
    c->memory_ratio = next_value();
    c->verdict = failed ? KT_VERDICT_REJECT : KT_VERDICT_INCONCLUSIVE;
    c->n_reasons = 2;
    strcpy(c->reasons[0], "speedup 1.333 [1.143, 1.591] includes 1.5 after 9 pairs at b4/t64");
    strcpy(c->reasons[1], "a \"quoted\" reason, with a tab\tand unicode \xc3\xa9");
}

static int same(double a, double b)
{
    return (isnan(a) && isnan(b)) || a == b;
}

#define EXPECT_SAME(field)                                                                         \
    do {                                                                                           \
        if (!same((a)->field, (b)->field))                                                         \
            fail_msg("%s: %.17g became %.17g", #field, (double)(a)->field, (double)(b)->field);    \
    } while (0)

static void compare_arm(const kt_arm_result *a, const kt_arm_result *b)
{
    assert_string_equal(a->name, b->name);
    assert_string_equal(a->variant, b->variant);
    EXPECT_SAME(failed);
    assert_string_equal(a->failure, b->failure);
    EXPECT_SAME(n_sets);
    for (int s = 0; s < a->n_sets; s++) {
        EXPECT_SAME(numerics[s].elems);
        EXPECT_SAME(numerics[s].unwritten);
        EXPECT_SAME(numerics[s].nonfinite);
        EXPECT_SAME(numerics[s].max_abs);
        EXPECT_SAME(numerics[s].max_rel);
        EXPECT_SAME(numerics[s].rel_l2);
        EXPECT_SAME(numerics[s].cosine);
        EXPECT_SAME(numerics[s].inputs_modified);
    }
    EXPECT_SAME(repeatable);
    EXPECT_SAME(bytes);
    EXPECT_SAME(variant_bytes);
    EXPECT_SAME(prepare_ns);
    EXPECT_SAME(n_metrics);
    for (int i = 0; i < a->n_metrics; i++) {
        assert_string_equal(a->metric_names[i], b->metric_names[i]);
        assert_string_equal(a->metric_units[i], b->metric_units[i]);
        EXPECT_SAME(metric_values[i]);
    }
}

static void compare_summary(const kt_summary *a, const kt_summary *b)
{
    EXPECT_SAME(n);
    EXPECT_SAME(mean);
    EXPECT_SAME(median);
    EXPECT_SAME(p10);
    EXPECT_SAME(p90);
    EXPECT_SAME(min);
    EXPECT_SAME(max);
    EXPECT_SAME(mad);
    EXPECT_SAME(outliers_mild);
    EXPECT_SAME(outliers_severe);
}

static void compare_candidate(const kt_candidate_result *a, const kt_candidate_result *b)
{
    compare_arm(&a->arm, &b->arm);
    EXPECT_SAME(n_pairs);
    for (size_t i = 0; i < a->n_pairs; i++) {
        EXPECT_SAME(pairs[i].rep);
        EXPECT_SAME(pairs[i].input_set);
        EXPECT_SAME(pairs[i].candidate_first);
        EXPECT_SAME(pairs[i].base_ns);
        EXPECT_SAME(pairs[i].cand_ns);
        EXPECT_SAME(pairs[i].base_noise);
        EXPECT_SAME(pairs[i].cand_noise);
        EXPECT_SAME(pairs[i].throttled);
    }
    EXPECT_SAME(speedup);
    EXPECT_SAME(ci_low);
    EXPECT_SAME(ci_high);
    EXPECT_SAME(confidence_used);
    EXPECT_SAME(shift.achieved);
    EXPECT_SAME(shift.p_value);
    EXPECT_SAME(shift.exact);
    assert_true(same(b->shift.estimate, log(a->speedup)));
    assert_true(same(b->shift.ci_low, log(a->ci_low)));
    assert_true(same(b->shift.ci_high, log(a->ci_high)));
    EXPECT_SAME(looks);
    EXPECT_SAME(stopped_early);
    EXPECT_SAME(order_p);
    EXPECT_SAME(order_shift);
    EXPECT_SAME(order_warning);
    EXPECT_SAME(noisy_pairs);
    compare_summary(&a->base_time, &b->base_time);
    compare_summary(&a->cand_time, &b->cand_time);
    EXPECT_SAME(worst_rel_l2);
    EXPECT_SAME(error_ratio);
    EXPECT_SAME(memory_ratio);
    EXPECT_SAME(verdict);
    EXPECT_SAME(n_reasons);
    for (int r = 0; r < a->n_reasons; r++)
        assert_string_equal(a->reasons[r], b->reasons[r]);
}

/* Through printed text: raw numbers only exist until the document is printed. */
static int through_text(kt_point_result *back, const kt_point_result *p)
{
    cJSON *json = kt_point_result_to_json(p, &spec);
    char *text = cJSON_PrintUnformatted(json);
    cJSON_Delete(json);
    cJSON *parsed = cJSON_Parse(text);
    free(text);
    assert_non_null(parsed);
    int rc = kt_point_result_from_json(back, parsed);
    cJSON_Delete(parsed);
    return rc;
}

static void fill_point(kt_point_result *p)
{
    memset(p, 0, sizeof(*p));
    strcpy(p->point.id, "b4/t1024");
    p->point.batch_size = 4;
    p->point.context_length = 1024;
    p->flops = next_value();
    p->bytes = next_value();
    p->repetitions = 9;
    p->elapsed_s = next_value();
    strcpy(p->stop_reason, "max_repetitions");
    fill_arm(&p->baseline, "baseline", 0);
    p->cands = calloc(2, sizeof(*p->cands));
    assert_non_null(p->cands);
    p->n_cands = 2;
    fill_candidate(&p->cands[0], "alpha", 0, 9);
    fill_candidate(&p->cands[1], "beta", 1, 0);
}

static void test_round_trip(void **state)
{
    (void)state;
    kt_point_result p, back;
    fill_point(&p);
    assert_int_equal(through_text(&back, &p), 0);
    assert_string_equal(back.point.id, "b4/t1024");
    assert_int_equal(back.point.batch_size, 4);
    assert_int_equal(back.point.context_length, 1024);
    const kt_point_result *a = &p, *b = &back;
    EXPECT_SAME(flops);
    EXPECT_SAME(bytes);
    EXPECT_SAME(repetitions);
    EXPECT_SAME(elapsed_s);
    assert_string_equal(back.error, "");
    assert_string_equal(back.stop_reason, "max_repetitions");
    compare_arm(&p.baseline, &back.baseline);
    assert_int_equal(back.n_cands, 2);
    for (size_t k = 0; k < 2; k++)
        compare_candidate(&p.cands[k], &back.cands[k]);
    kt_point_result_free(&back);

    /* a failed point: the error survives; repeatable "not checked" too */
    snprintf(p.error, sizeof(p.error), "baseline 'baseline' crashed with signal 11");
    p.baseline.repeatable = -1;
    assert_int_equal(through_text(&back, &p), 0);
    assert_string_equal(back.error, p.error);
    assert_int_equal(back.baseline.repeatable, -1);
    kt_point_result_free(&back);
    kt_point_result_free(&p);
    assert_null(p.cands);
}

/* A failure text on an arm that did not fail is not written (failure is null); NaN is a
 * string; params and axes as the spec and op say. */
static void test_failure_only_when_failed(void **state)
{
    (void)state;
    kt_point_result p;
    fill_point(&p);
    strcpy(p.cands[0].arm.failure, "stale text");
    p.cands[0].speedup = NAN;
    cJSON *json = kt_point_result_to_json(&p, &spec);
    const cJSON *c0 = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(json, "candidates"), 0);
    /* NaN is written as the string, never as null (which reads as "absent") */
    assert_string_equal(cJSON_GetObjectItemCaseSensitive(c0, "speedup")->valuestring, "NaN");
    assert_true(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(c0, "failure")));
    const cJSON *params = cJSON_GetObjectItemCaseSensitive(c0, "params");
    assert_string_equal(cJSON_GetObjectItemCaseSensitive(params, "fail")->valuestring, "none");
    const cJSON *axes = cJSON_GetObjectItemCaseSensitive(json, "axes");
    assert_int_equal(cJSON_GetArraySize(axes), 2); /* synthetic: batch and context only */
    cJSON_Delete(json);
    kt_point_result_free(&p);
}

static void test_malformed(void **state)
{
    (void)state;
    const char *const bad[] = {
        "[]",
        "{\"candidates\": []}", /* no id */
        "{\"id\": \"x\", \"candidates\": [{\"verdict\": \"MAYBE\", \"pairs\": []}]}",
        "{\"id\": \"x\", \"candidates\": [{\"verdict\": \"KEEP\", \"pairs\": [[0, 0, 0, 1, 2]]}]}",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        cJSON *json = cJSON_Parse(bad[i]);
        assert_non_null(json);
        kt_point_result back;
        if (kt_point_result_from_json(&back, json) != -1)
            fail_msg("accepted %s", bad[i]);
        kt_point_result_free(&back);
        cJSON_Delete(json);
    }
    cJSON *ok = cJSON_Parse("{\"id\": \"x\", \"candidates\": [{\"verdict\": \"KEEP\", "
                            "\"pairs\": [[0, 1, 1, 10, \"NaN\", 0, 0, 0]]}]}");
    kt_point_result back;
    assert_int_equal(kt_point_result_from_json(&back, ok), 0);
    assert_true(isnan(back.cands[0].pairs[0].cand_ns));
    assert_true(isnan(back.cands[0].speedup)); /* absent: NaN, not 0 */
    kt_point_result_free(&back);
    cJSON_Delete(ok);
}

/* ---- aggregation ----------------------------------------------------------------------- */

static kt_point_result points[4];
static kt_candidate_result cands[4][2];

/* 'n' points; candidate k at point i has verdict v[i][k] and speedup s[i][k] with a
 * log-interval of +-z*0.01 (so each point's standard error is 0.01 in log units). */
static kt_run_result make_run(size_t n, const kt_verdict v[][2], const double s[][2])
{
    const double z = 1.959963984540054;
    for (size_t i = 0; i < n; i++) {
        memset(&points[i], 0, sizeof(points[i]));
        snprintf(points[i].point.id, sizeof(points[i].point.id), "b%zu/t64", i + 1);
        for (int k = 0; k < 2; k++) {
            kt_candidate_result *c = &cands[i][k];
            memset(c, 0, sizeof(*c));
            strcpy(c->arm.name, arms[k].name);
            c->verdict = v[i][k];
            c->speedup = s[i][k];
            c->ci_low = s[i][k] * exp(-z * 0.01);
            c->ci_high = s[i][k] * exp(z * 0.01);
            c->shift.achieved = 0.95;
            if (v[i][k] == KT_VERDICT_REJECT) {
                c->n_reasons = 1;
                snprintf(c->reasons[0], sizeof(c->reasons[0]), "speedup %.3f [...] below", s[i][k]);
                c->reason_codes[0] = KT_REASON_SLOWER;
            }
        }
        points[i].cands = cands[i];
        points[i].n_cands = 2;
    }
    kt_run_result run;
    memset(&run, 0, sizeof(run));
    run.points = points;
    run.n_points = n;
    return run;
}

#define K KT_VERDICT_KEEP
#define R KT_VERDICT_REJECT
#define I KT_VERDICT_INCONCLUSIVE

static void test_aggregate_all(void **state)
{
    (void)state;
    const kt_verdict v[3][2] = {{K, K}, {K, I}, {K, K}};
    const double s[3][2] = {{1.2, 1.1}, {1.3, 1.0}, {1.25, 1.2}};
    kt_run_result run = make_run(3, v, s);
    spec.aggregate = KT_AGGREGATE_ALL;
    assert_int_equal(kt_run_aggregate(&run, &spec), 0);
    assert_int_equal(run.n_cands, 2);
    assert_string_equal(run.cands[0].name, "alpha");
    assert_string_equal(run.cands[0].variant, "lognormal");
    assert_int_equal(run.cands[0].verdict, KT_VERDICT_KEEP);
    assert_int_equal(run.cands[0].keep, 3);
    assert_int_equal(run.cands[1].verdict, KT_VERDICT_INCONCLUSIVE);
    assert_true(run.cands[1].keep == 2 && run.cands[1].inconclusive == 1);
    assert_string_equal(run.cands[1].reason,
                        "2 keep, 0 reject, 1 inconclusive of 3 points (aggregate: all)");
    assert_int_equal(run.verdict, KT_VERDICT_INCONCLUSIVE);
    assert_int_equal(kt_run_exit_code(&run), KT_EXIT_INCONCLUSIVE);
    /* the geometric mean is reported under 'all' as well */
    assert_true(fabs(run.cands[0].geomean_speedup - cbrt(1.2 * 1.3 * 1.25)) < 1e-12);

    cands[1][0].verdict = KT_VERDICT_REJECT; /* one reject anywhere rejects the candidate */
    assert_int_equal(kt_run_aggregate(&run, &spec), 0); /* again: counts start afresh */
    assert_int_equal(run.cands[0].keep, 2);
    assert_int_equal(run.cands[0].verdict, KT_VERDICT_REJECT);
    assert_int_equal(run.verdict, KT_VERDICT_REJECT);
    assert_int_equal(kt_run_exit_code(&run), KT_EXIT_REJECT);

    cands[1][0].verdict = cands[1][1].verdict = KT_VERDICT_KEEP;
    assert_int_equal(kt_run_aggregate(&run, &spec), 0);
    assert_int_equal(run.verdict, KT_VERDICT_KEEP);
    assert_int_equal(kt_run_exit_code(&run), KT_EXIT_KEEP);

    /* a point that could not be measured: 70 whatever the verdicts */
    strcpy(points[2].error, "baseline 'baseline' crashed with signal 11");
    cands[2][0].order_warning = 1;
    assert_int_equal(kt_run_aggregate(&run, &spec), 0);
    assert_int_equal(run.point_errors, 1);
    assert_int_equal(run.order_warnings, 1);
    assert_int_equal(kt_run_exit_code(&run), KT_EXIT_SOFTWARE);
    assert_int_equal(KT_EXIT_SOFTWARE, 70);
    free(run.cands);
}

static void test_aggregate_geomean(void **state)
{
    (void)state;
    /* alpha: 1.2 and 0.8 (the second point rejects on speed alone) */
    const kt_verdict v[2][2] = {{K, K}, {R, K}};
    const double s[2][2] = {{1.2, 1.1}, {0.8, 1.1}};
    kt_run_result run = make_run(2, v, s);
    spec.aggregate = KT_AGGREGATE_GEOMEAN;
    /* alpha's points disagree far beyond their own errors (se 0.01 each): the t interval from
     * their scatter, t_1(0.975) (scipy) times |ln 1.2 - ln 0.8| / 2, is the wider one */
    const double g = sqrt(1.2 * 0.8), half = 12.706204736432095 * fabs(log(1.2) - log(0.8)) / 2;
    const struct {
        double min_speedup;
        kt_verdict expect;
    } cases[] = {{0.05, K}, {0.9, I}, {1.0, I}, {20, R}};
    for (int i = 0; i < 4; i++) {
        spec.min_speedup = cases[i].min_speedup;
        assert_int_equal(kt_run_aggregate(&run, &spec), 0);
        const kt_candidate_verdict *cv = &run.cands[0];
        assert_true(fabs(cv->geomean_speedup - g) < 1e-12);
        /* our t quantile against scipy's: 1e-9 relative */
        assert_true(fabs(cv->geomean_low / (g * exp(-half)) - 1) < 1e-8);
        assert_true(fabs(cv->geomean_high / (g * exp(half)) - 1) < 1e-8);
        if (cv->verdict != cases[i].expect)
            fail_msg("min_speedup %.17g: %s", cases[i].min_speedup, kt_verdict_name(cv->verdict));
        assert_non_null(strstr(cv->reason, "geometric mean speedup 0.980"));
    }
    /* KEEP needs the lower end strictly above min_speedup: exactly at it does not keep
     * (ties must not push towards KEEP), one ulp below does */
    spec.min_speedup = run.cands[0].geomean_low;
    assert_int_equal(kt_run_aggregate(&run, &spec), 0);
    assert_int_equal(run.cands[0].verdict, KT_VERDICT_INCONCLUSIVE);
    spec.min_speedup = nextafter(spec.min_speedup, 0);
    assert_int_equal(kt_run_aggregate(&run, &spec), 0);
    assert_int_equal(run.cands[0].verdict, KT_VERDICT_KEEP);
    /* beta's points agree (1.1 and 1.1): no scatter, tau^2 = 0, so the interval is the
     * normal one from the points' own errors, at the spec's confidence and from each point's
     * own coverage: at 0.99 it widens by z(0.995) / z(0.975), and a point at 0.999 counts
     * with its wider z */
    spec.min_speedup = 1.0;
    assert_int_equal(kt_run_aggregate(&run, &spec), 0);
    double half_fe = 1.959963984540054 * sqrt(2.0) * 0.01 / 2;
    assert_true(fabs(run.cands[1].geomean_low - 1.1 * exp(-half_fe)) < 1e-12);
    assert_true(fabs(run.cands[1].geomean_high - 1.1 * exp(half_fe)) < 1e-12);
    assert_int_equal(run.cands[1].verdict, KT_VERDICT_KEEP);
    spec.confidence = 0.99;
    assert_int_equal(kt_run_aggregate(&run, &spec), 0);
    double half99 = 2.5758293035489004 * sqrt(2.0) * 0.01 / 2;
    assert_true(fabs(run.cands[1].geomean_low - 1.1 * exp(-half99)) < 1e-12);
    cands[0][1].shift.achieved = cands[1][1].shift.achieved = 0.999;
    assert_int_equal(kt_run_aggregate(&run, &spec), 0);
    double se = 1.959963984540054 * 0.01 / 3.2905267314918945;
    assert_true(fabs(run.cands[1].geomean_low -
                     1.1 * exp(-2.5758293035489004 * sqrt(2.0) * se / 2)) < 1e-12);
    cands[0][1].shift.achieved = cands[1][1].shift.achieved = 0.95;
    /* a point without a finite interval: no KEEP or REJECT from the others */
    spec.min_speedup = 0.05;
    cands[1][0].ci_high = INFINITY;
    assert_int_equal(kt_run_aggregate(&run, &spec), 0);
    assert_int_equal(run.cands[0].verdict, KT_VERDICT_INCONCLUSIVE);
    cands[1][0].ci_high = 0.8 * exp(1.959963984540054 * 0.01);
    spec.confidence = 0.95;

    /* numerics (anything but speed) rejecting at one point rejects under geomean too */
    spec.min_speedup = 0.9;
    strcpy(cands[1][0].reasons[0], "rel_l2 0.02 above max_rel_l2 0.001 on input set 0 at b2/t64");
    cands[1][0].reason_codes[0] = KT_REASON_REL_L2;
    assert_int_equal(kt_run_aggregate(&run, &spec), 0);
    assert_int_equal(run.cands[0].verdict, KT_VERDICT_REJECT);
    assert_string_equal(run.cands[0].reason,
                        "numerics, memory or a failure rejected it at 1 point");
    assert_int_equal(run.cands[1].verdict, KT_VERDICT_KEEP);
    assert_int_equal(run.verdict, KT_VERDICT_REJECT);

    /* a point without a finite interval does not enter the mean */
    strcpy(cands[1][0].reasons[0], "speedup 0.800 [...] below");
    cands[1][0].reason_codes[0] = KT_REASON_SLOWER;
    cands[1][0].ci_high = INFINITY;
    assert_int_equal(kt_run_aggregate(&run, &spec), 0);
    assert_true(fabs(run.cands[0].geomean_speedup - 1.2) < 1e-12);
    free(run.cands);
    spec.aggregate = KT_AGGREGATE_ALL;
    spec.min_speedup = 1.0;
}

static void test_candidate_verdicts_json(void **state)
{
    (void)state;
    const kt_verdict v[1][2] = {{K, R}};
    const double s[1][2] = {{1.5, 0.5}};
    kt_run_result run = make_run(1, v, s);
    assert_int_equal(kt_run_aggregate(&run, &spec), 0);
    cJSON *arr = kt_candidate_verdicts_to_json(&run);
    assert_int_equal(cJSON_GetArraySize(arr), 2);
    const cJSON *b = cJSON_GetArrayItem(arr, 1);
    assert_string_equal(cJSON_GetObjectItemCaseSensitive(b, "name")->valuestring, "beta");
    assert_string_equal(cJSON_GetObjectItemCaseSensitive(b, "verdict")->valuestring, "REJECT");
    const cJSON *counts = cJSON_GetObjectItemCaseSensitive(b, "points");
    assert_int_equal(cJSON_GetObjectItemCaseSensitive(counts, "reject")->valuedouble, 1);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(b, "geomean_ci")), 2);
    cJSON_Delete(arr);
    free(run.cands);
}

/* The summary of 'run' with 'f' (NULL: a complete whole run), in a string to free. Not inlined:
 * GCC 12 at -O3 mistakes pointers into the returned buffer for pointers to the local that
 * open_memstream wrote it through (-Wdangling-pointer). */
__attribute__((noinline)) static char *summary_text(const kt_run_result *run,
                                                    const kt_summary_facts *f)
{
    kt_summary_facts whole;
    kt_summary_facts_init(&whole, "baseline", "all", 1.05, 0.95);
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    assert_non_null(out);
    kt_print_summary(out, run, f ? f : &whole);
    fclose(out);
    return text;
}

static void test_print_summary(void **state)
{
    (void)state;
    const kt_verdict v[2][2] = {{K, R}, {K, I}};
    const double s[2][2] = {{1.5, 0.5}, {1.4, 1.0}};
    kt_run_result run = make_run(2, v, s);
    cands[0][1].worst_rel_l2 = 0.25;
    cands[1][0].order_warning = 1;
    cands[0][0].n_pairs = 40;
    cands[0][0].noisy_pairs = 3;
    cands[0][0].base_time.median = 123456;
    cands[0][0].cand_time.median = 2.5e9;
    cands[0][0].shift.p_value = 0.004;
    cands[0][0].confidence_used = 0.99;
    strcpy(points[1].error, "baseline 'baseline' failed in warmup");
    assert_int_equal(kt_run_aggregate(&run, &spec), 0);
    char *text = summary_text(&run, NULL);
    assert_non_null(strstr(text, "base median  cand median  speedup (HL) [CI]"));
    assert_non_null(strstr(text, "\n(medians per call over the pairs;"));
    assert_non_null(strstr(text, "b1/t64"));
    assert_non_null(strstr(text, "123.46 us"));
    assert_non_null(strstr(text, "2.500 s"));
    assert_non_null(strstr(text, "1.500 [1.471, 1.530]"));
    assert_non_null(strstr(text, " 0.020 ")); /* p 0.004 at a look that spent 0.01 of 0.05 */
    assert_non_null(strstr(text, " 3/40 "));  /* noisy pairs */
    assert_non_null(strstr(text, "\n    speedup 0.500 [...] below\n")); /* reasons of non-KEEP */
    assert_non_null(strstr(text, "KEEP (order effect!)"));
    assert_non_null(strstr(text, "    error: baseline 'baseline' failed in warmup\n"));
    assert_non_null(strstr(text, "candidate beta       REJECT")); /* names padded to 9 */
    /* a point whose baseline failed: the run exits 70, and its overall line says why */
    assert_non_null(strstr(text, "overall: ERROR at 1 of 2 points the baseline or the set-up "
                                 "failed (each reason is given with its point); no verdict for the "
                                 "experiment "
                                 "(min_speedup 1.05, aggregate all)\n"));
    assert_non_null(strstr(text, "warning: 1 point shows an order effect"));
    /* the point with no pairs: — in every measured cell, never 0 ns or nan */
    const char *row = strstr(text, "\nb2/t64  alpha");
    assert_non_null(row);
    assert_null(strstr(text, "0 ns"));
    assert_null(strstr(text, "nan"));
    assert_non_null(strstr(row, "\xe2\x80\x94"));
    free(text);
    free(run.cands);
}

/* The overall line never reads as a whole run's verdict when the run was not whole. */
static void test_summary_states(void **state)
{
    (void)state;
    const kt_verdict v[1][2] = {{K, K}};
    const double s[1][2] = {{1.5, 1.4}};
    kt_run_result run = make_run(1, v, s);
    assert_int_equal(kt_run_aggregate(&run, &spec), 0);
    kt_summary_facts f;
    kt_summary_facts_init(&f, "baseline", "all", 1.05, 0.95);
    const char *ids[] = {"b2/t64", "b3/t64"};
    f.status = "interrupted";
    f.not_run_ids = ids;
    f.n_not_run = 2;
    char *text = summary_text(&run, &f);
    assert_non_null(strstr(text, "overall: INTERRUPTED after 1 of 3 points; no verdict"));
    assert_non_null(strstr(text, "NOT RUN (interrupted)"));
    assert_null(strstr(text, "overall: KEEP"));
    free(text);
    f.status = "over_budget";
    text = summary_text(&run, &f);
    assert_non_null(strstr(text, "overall: INCONCLUSIVE over 1 point, 2 of 3 NOT RUN (budget)"));
    assert_non_null(strstr(text, "NOT RUN (budget)"));
    free(text);
    kt_summary_facts_init(&f, "baseline", "all", 1.05, 0.95);
    f.shard_index = 3;
    f.shard_count = 16;
    f.quick = 1;
    f.quick_max_repetitions = 20;
    text = summary_text(&run, &f);
    assert_non_null(strstr(text, "overall: shard 3/16 only, KEEP over its 1 point; not the "
                                 "experiment's verdict"));
    assert_non_null(strstr(text, "--quick: at most 20 pairs per point"));
    assert_null(strstr(text, "overall: KEEP"));
    free(text);
    f.color = 1;
    text = summary_text(&run, &f);
    assert_non_null(strstr(text, "\033[1;32mKEEP\033[0m"));
    free(text);
    free(run.cands);
}

/* provenance.run.shard "I/N": read whole, in range, or 1/1 with KT_EINVAL. */
static void test_result_shard(void **state)
{
    (void)state;
    static const struct {
        const char *json;
        int rc, index, count;
    } cases[] = {
        {"{\"provenance\":{\"run\":{\"shard\":\"3/16\"}}}", 0, 3, 16},
        {"{\"provenance\":{\"run\":{\"shard\":\"1/1\"}}}", 0, 1, 1},
        {"{\"provenance\":{\"run\":{}}}", KT_EINVAL, 1, 1},
        {"{\"provenance\":{\"run\":{\"shard\":\"3/16x\"}}}", KT_EINVAL, 1, 1},
        {"{\"provenance\":{\"run\":{\"shard\":\"17/16\"}}}", KT_EINVAL, 1, 1},
        {"{\"provenance\":{\"run\":{\"shard\":\"0/4\"}}}", KT_EINVAL, 1, 1},
        {"{\"provenance\":{\"run\":{\"shard\":3}}}", KT_EINVAL, 1, 1},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        cJSON *doc = cJSON_Parse(cases[i].json);
        int index = -7, count = -7;
        assert_non_null(doc);
        assert_int_equal(kt_result_shard(doc, &index, &count), cases[i].rc);
        assert_int_equal(index, cases[i].index);
        assert_int_equal(count, cases[i].count);
        cJSON_Delete(doc);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),        cmocka_unit_test(test_failure_only_when_failed),
        cmocka_unit_test(test_malformed),         cmocka_unit_test(test_aggregate_all),
        cmocka_unit_test(test_aggregate_geomean), cmocka_unit_test(test_candidate_verdicts_json),
        cmocka_unit_test(test_print_summary),     cmocka_unit_test(test_summary_states),
        cmocka_unit_test(test_result_shard),
    };
    return cmocka_run_group_tests(tests, setup_spec, NULL);
}
