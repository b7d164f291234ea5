/* test_verdict.c - kt_candidate_evaluate on hand-built measurements: deterministic pairs
 * give a collapsed interval at exactly base/cand with the p-value worked out by hand, the
 * min_speedup boundary keeps, every numerics and memory limit rejects with the input set and
 * the point named, a failed arm rejects with its failure, and verdict names round-trip. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "decide/stats.h"
#include "measure/trial.h"

#include <math.h>
#include <string.h>

static kt_spec spec;
static kt_point point;
static kt_arm_result base;
static kt_candidate_result cand;
static kt_pair pairs[384];

/* No limits set, min_speedup 1.05 at 95%, fp32; baseline and candidate exact on 2 sets,
 * 1000 bytes each; 'n' pairs of 100 us against 80 us, alternating order. */
static int reset(void **state)
{
    (void)state;
    memset(&spec, 0, sizeof(spec));
    spec.dtype = KT_DTYPE_FP32;
    spec.numerics.max_rel_l2 = spec.numerics.min_cosine = spec.numerics.max_abs = NAN;
    spec.numerics.max_error_vs_baseline = NAN;
    spec.max_memory_ratio = NAN;
    spec.min_speedup = 1.05;
    spec.confidence = 0.95;
    memset(&point, 0, sizeof(point));
    strcpy(point.id, "b4/t1024");
    memset(&base, 0, sizeof(base));
    memset(&cand, 0, sizeof(cand));
    strcpy(base.name, "baseline");
    strcpy(cand.arm.name, "cand");
    base.n_sets = cand.arm.n_sets = 2;
    for (int s = 0; s < 2; s++)
        base.numerics[s].cosine = cand.arm.numerics[s].cosine = 1;
    base.bytes = cand.arm.bytes = 1000;
    base.repeatable = cand.arm.repeatable = -1;
    cand.pairs = pairs;
    return 0;
}

static void set_pairs(size_t n, double base_ns, double cand_ns)
{
    for (size_t i = 0; i < n; i++)
        pairs[i] = (kt_pair){(int)i, (int)(i % 2), (int)(i % 2), base_ns, cand_ns, 0, 0, 0, 0};
    cand.n_pairs = n;
}

static void evaluate(void)
{
    kt_candidate_evaluate(&cand, &base, &spec, &point, spec.confidence);
}

/* 1 when some reason contains every one of the NULL-terminated 'parts'. */
static int has_reason(const char *first, ...)
{
    for (int r = 0; r < cand.n_reasons; r++) {
        va_list ap;
        va_start(ap, first);
        int all = 1;
        for (const char *part = first; part; part = va_arg(ap, const char *))
            all &= strstr(cand.reasons[r], part) != NULL;
        va_end(ap);
        if (all)
            return 1;
    }
    return 0;
}

/* 384 pairs over 2 input sets x 8 placements: d = the cluster's own shift + a symmetric
 * noise pattern, base 100 us (so the pairs' interval alone is narrow). */
static void set_clustered_pairs(const double *shift_of_cluster)
{
    static const double noise[8] = {-0.004, 0.004, -0.002, 0.002, -0.001, 0.001, 0, 0.003};
    for (size_t i = 0; i < 384; i++) {
        int set = (int)(i % 2), placement = (int)(i / 2 % 8);
        double d = shift_of_cluster[set * 8 + placement] + noise[i / 16 % 8] - 0.0015 * (i / 128);
        pairs[i] = (kt_pair){(int)i, set, (int)(i / 3 % 2), 100000.0, 100000.0 * exp(-d), 0,
                             0,      0,   placement};
    }
    cand.n_pairs = 384;
}

/* Clusters of pairs on the same prepared states that disagree widen the interval by their
 * spread (DerSimonian and Laird's tau^2 over the clusters); clusters that agree leave it as
 * the pairs give it. An A/A whose states sit +-1.5% apart is not a KEEP or a REJECT. */
static void test_placement_spread(void **state)
{
    (void)state;
    double shifts[16];
    spec.min_speedup = 1.0;
    for (int k = 0; k < 16; k++)
        shifts[k] = k % 3 == 0 ? 0.015 : k % 3 == 1 ? -0.012 : 0.004;
    set_clustered_pairs(shifts);
    evaluate();
    assert_int_equal(cand.placement_clusters, 16);
    assert_true(cand.placement_tau2 > 1e-5); /* about 0.013^2 */
    assert_true(cand.ci_low < 1.0 && cand.ci_high > 1.0);
    assert_int_equal(cand.verdict, KT_VERDICT_INCONCLUSIVE);
    assert_int_equal(cand.set_warning, 0);

    /* the sets' clusters drawn from one spread, set 0's eight a little higher by chance: the
     * sets' 192 pairs each differ (Mann-Whitney on the pairs: p about 4e-16), their clusters
     * do not (8 against 8: p about 0.1), and only the clusters say whether the data differ */
    static const double spread[8] = {0.015, 0.010, 0.006, 0.004, 0.001, -0.002, -0.005, -0.012};
    for (int k = 0; k < 16; k++)
        shifts[k] = spread[k % 8] + (k < 8 ? 0.004 : -0.004);
    set_clustered_pairs(shifts);
    evaluate();
    assert_int_equal(cand.set_warning, 0);
    assert_true(cand.set_p > 0.05);
    double wide = log(cand.ci_high) - log(cand.ci_low);
    kt_shift own;
    double d[384];
    for (size_t i = 0; i < 384; i++)
        d[i] = log(pairs[i].base_ns) - log(pairs[i].cand_ns);
    assert_int_equal(kt_stats_signed_rank(&own, d, 384, spec.confidence), 0);
    assert_true(wide > 1.5 * (own.ci_high - own.ci_low));
    /* the p of the interval's model: not 'significant' while the interval includes 1 */
    assert_true(own.p_value < 1 - spec.confidence);
    assert_true(cand.shift.p_value > 1 - spec.confidence);
    double z = kt_stats_normal_quantile(0.5 + spec.confidence / 2);
    double side = cand.shift.estimate >= 0 ? cand.shift.estimate - log(cand.ci_low)
                                           : log(cand.ci_high) - cand.shift.estimate;
    assert_true(fabs(cand.shift.p_value - erfc(fabs(cand.shift.estimate) * z / side / sqrt(2.0))) <
                1e-12);

    for (int k = 0; k < 16; k++) /* set 0's clusters 2% faster, set 1's 2% slower: data */
        shifts[k] = (k < 8 ? 0.02 : -0.02) + 0.0013 * k;
    set_clustered_pairs(shifts);
    evaluate();
    assert_int_equal(cand.set_warning, 1);
    assert_true(fabs(cand.set_p - 2.0 / 12870) < 1e-9); /* 8 of 8 apart: 2 / C(16, 8) */
    assert_true(fabs(cand.set_shift - (0.04 - 0.0013 * 8)) < 2e-3);

    for (int k = 0; k < 16; k++) /* every cluster the same 2% faster: nothing to widen */
        shifts[k] = 0.02;
    set_clustered_pairs(shifts);
    evaluate();
    assert_int_equal(cand.placement_clusters, 16);
    assert_true(cand.placement_tau2 == 0);
    assert_int_equal(cand.verdict, KT_VERDICT_KEEP);
    for (size_t i = 0; i < 384; i++)
        d[i] = log(pairs[i].base_ns) - log(pairs[i].cand_ns);
    assert_int_equal(kt_stats_signed_rank(&own, d, 384, spec.confidence), 0);
    assert_true(fabs(log(cand.ci_low) - own.ci_low) < 1e-12);
    assert_true(fabs(log(cand.ci_high) - own.ci_high) < 1e-12);
    assert_true(cand.shift.p_value == own.p_value); /* no spread: the signed-rank p */

    set_pairs(5, 100000, 80000); /* pairs on 2 input sets, none with 3: no interval yet */
    for (size_t i = 0; i < 5; i++)
        pairs[i].placement = (int)i;
    evaluate();
    assert_int_equal(cand.placement_clusters, 0);
    assert_true(cand.ci_low == 0 && isinf(cand.ci_high));
    assert_true(cand.shift.p_value == 1);
    assert_int_equal(cand.verdict, KT_VERDICT_INCONCLUSIVE);
    /* the reason says why there is no interval, and what to change */
    assert_true(has_reason("no interval yet after 5 pairs", "spread over 5 clusters",
                           "fewer than two hold 3; raise trials.max_repetitions", NULL));
}

/* 384 pairs 5% faster, each order's pairs moved by -+'e' (running second costs e) with a small
 * symmetric pattern: both orders' shift is detected at once; only one of 1% or more warns. */
static void set_ordered_pairs(double e)
{
    static const double noise[4] = {-0.0004, 0.0004, -0.0002, 0.0002};
    for (size_t i = 0; i < 384; i++) {
        int first = (int)(i % 2);
        double d = 0.05 + (first ? e : -e) + noise[i / 2 % 4];
        pairs[i] = (kt_pair){(int)i, 0, first, 100000.0, 100000.0 * exp(-d), 0, 0, 0, 0};
    }
    cand.n_pairs = 384;
}

static void test_order_effect_warns_from_its_size(void **state)
{
    (void)state;
    base.n_sets = cand.arm.n_sets = 1;
    set_ordered_pairs(0.001); /* 0.2% between the orders: real, and harmless in random order */
    evaluate();
    assert_true(cand.order_p < 1e-6);
    assert_true(fabs(cand.order_shift - 0.002) < 1e-9);
    assert_int_equal(cand.order_warning, 0);
    set_ordered_pairs(0.006); /* 1.2%: a warning */
    evaluate();
    assert_true(cand.order_p < 1e-6);
    assert_true(fabs(cand.order_shift - 0.012) < 1e-9);
    assert_int_equal(cand.order_warning, 1);
}

static void test_names(void **state)
{
    (void)state;
    for (int v = KT_VERDICT_KEEP; v <= KT_VERDICT_INCONCLUSIVE; v++)
        assert_int_equal(kt_verdict_parse(kt_verdict_name((kt_verdict)v)), v);
    assert_string_equal(kt_verdict_name(KT_VERDICT_KEEP), "KEEP");
    assert_string_equal(kt_verdict_name(KT_VERDICT_REJECT), "REJECT");
    assert_string_equal(kt_verdict_name(KT_VERDICT_INCONCLUSIVE), "INCONCLUSIVE");
    assert_int_equal(kt_verdict_parse("keep"), -1);
    assert_int_equal(kt_verdict_parse(""), -1);
}

/* Every d_i equal: the HL estimate and both ends of the interval are that d, and the
 * Wilcoxon p-value (all |d| tied: normal approximation with the tie correction) has
 * z^2 = n, so p = erfc(sqrt(n/2)). */
static void test_deterministic_pairs(void **state)
{
    (void)state;
    const size_t sizes[] = {10, 20, 60};
    for (int i = 0; i < 3; i++) {
        size_t n = sizes[i];
        set_pairs(n, 100000, 80000);
        evaluate();
        assert_true(fabs(cand.speedup - 1.25) < 1e-12);
        assert_true(cand.ci_low == cand.speedup && cand.ci_high == cand.speedup);
        assert_true(fabs(cand.shift.p_value - erfc(sqrt((double)n / 2))) < 1e-12);
        assert_int_equal(cand.verdict, KT_VERDICT_KEEP);
        assert_true(has_reason("speedup 1.250 [1.250, 1.250] above 1.05 at b4/t1024", NULL));
        assert_true(cand.confidence_used == 0.95);
        assert_int_equal(cand.base_time.n, n);
        assert_true(cand.base_time.median == 100000 && cand.cand_time.median == 80000);
        /* identical d in both orders: no order effect */
        assert_int_equal(cand.order_warning, 0);
    }
    set_pairs(10, 80000, 100000); /* slower: 0.8, far below 1.05 */
    evaluate();
    assert_true(fabs(cand.speedup - 0.8) < 1e-12);
    assert_int_equal(cand.verdict, KT_VERDICT_REJECT);
    assert_true(has_reason("speedup 0.800 [0.800, 0.800] below 1.05 at b4/t1024", NULL));
}

/* A disturbed pair: one the backend flagged, or on the CPU one with run-queue wait; CUDA's
 * noise is the SM clock of every call, which says nothing unless flagged. */
static void test_noisy_pairs_by_backend(void **state)
{
    (void)state;
    set_pairs(10, 100000, 80000);
    for (size_t i = 0; i < 10; i++)
        pairs[i].base_noise = pairs[i].cand_noise = 1980; /* MHz */
    pairs[3].throttled = 1;
    strcpy(spec.backend, "cuda");
    evaluate();
    assert_int_equal(cand.noisy_pairs, 1);
    set_pairs(10, 100000, 80000);
    for (size_t i = 0; i < 4; i++)
        pairs[i].cand_noise = 12.5; /* us waited for a core */
    strcpy(spec.backend, "cpu");
    evaluate();
    assert_int_equal(cand.noisy_pairs, 4);
    spec.backend[0] = '\0';
}

/* KEEP when the interval's lower end is strictly above min_speedup; exactly at the boundary
 * is INCONCLUSIVE (a tie must not count for the candidate); one ulp higher and the collapsed
 * interval lies below it: REJECT. */
static void test_min_speedup_boundary(void **state)
{
    (void)state;
    set_pairs(10, 100000, 80000);
    evaluate();
    double s = cand.ci_low;
    spec.min_speedup = s;
    evaluate();
    assert_int_equal(cand.verdict, KT_VERDICT_INCONCLUSIVE);
    spec.min_speedup = nextafter(s, 0.0);
    evaluate();
    assert_int_equal(cand.verdict, KT_VERDICT_KEEP);
    spec.min_speedup = nextafter(s, 2.0);
    evaluate();
    assert_int_equal(cand.verdict, KT_VERDICT_REJECT);
    /* a bounded slowdown: 0.8 is allowed by min_speedup 0.8 */
    set_pairs(10, 80000, 100000);
    spec.min_speedup = 0.75;
    evaluate();
    assert_int_equal(cand.verdict, KT_VERDICT_KEEP);
}

/* Too few pairs for any interval at 95% (n < 6): undecided, never a verdict on speed. */
static void test_too_few_pairs(void **state)
{
    (void)state;
    set_pairs(5, 100000, 50000);
    for (size_t i = 0; i < 5; i++) /* one cluster: only the pairs' count withholds it */
        pairs[i].input_set = 0;
    evaluate();
    assert_true(isinf(cand.ci_high));
    assert_int_equal(cand.verdict, KT_VERDICT_INCONCLUSIVE);
    assert_true(has_reason("includes 1.05 after 5 pairs at b4/t1024", NULL));
    set_pairs(0, 1, 1);
    evaluate();
    assert_true(isnan(cand.speedup));
    assert_int_equal(cand.verdict, KT_VERDICT_INCONCLUSIVE);
    assert_true(has_reason("no timed pairs at b4/t1024", NULL));
}

static void test_numerics_limits_per_set(void **state)
{
    (void)state;
    set_pairs(10, 100000, 80000);
    spec.numerics.max_rel_l2 = 1e-3;
    spec.numerics.min_cosine = 0.999;
    spec.numerics.max_abs = 0.05;
    cand.arm.numerics[1].rel_l2 = 2e-3; /* only set 1 breaks each limit */
    cand.arm.numerics[1].cosine = 0.99;
    cand.arm.numerics[1].max_abs = 0.1;
    evaluate();
    assert_int_equal(cand.verdict, KT_VERDICT_REJECT);
    assert_true(has_reason("rel_l2 0.002 above max_rel_l2 0.001", "input set 1", "b4/t1024", NULL));
    assert_true(has_reason("cosine 0.990000 below min_cosine 0.999000", "input set 1", NULL));
    assert_true(has_reason("max_abs 0.1 above max_abs 0.05", "input set 1", NULL));
    assert_false(has_reason("input set 0", NULL));
    assert_true(cand.worst_rel_l2 == 2e-3);

    /* at each limit exactly: passes */
    cand.arm.numerics[1].rel_l2 = 1e-3;
    cand.arm.numerics[1].cosine = 0.999;
    cand.arm.numerics[1].max_abs = 0.05;
    evaluate();
    assert_int_equal(cand.verdict, KT_VERDICT_KEEP);
}

/* A value printed in a reason lies on the same side of the printed limit as the value does:
 * no "rel_l2 0.01 above max_rel_l2 0.01" or "[0.951, 1.000] below 1". */
static void test_reasons_tell_the_value_from_the_limit(void **state)
{
    (void)state;
    char buf[32];
    assert_string_equal(kt_format_apart(buf, sizeof(buf), 0.002, 0.001, 3, 0), "0.002");
    assert_string_equal(kt_format_apart(buf, sizeof(buf), 0.99996, 1.0, 3, 1), "0.99996");
    assert_string_equal(kt_format_apart(buf, sizeof(buf), 1.0004, 1.0, 3, 1), "1.0004");
    assert_string_equal(kt_format_apart(buf, sizeof(buf), 1.2, 1.0, 3, 1), "1.200");
    assert_string_equal(kt_format_limit(buf, sizeof(buf), 0.0123456, 0, 0), "0.0123456");
    assert_string_equal(kt_format_limit(buf, sizeof(buf), 0.999, 6, 1), "0.999000");
    set_pairs(10, 100000, 80000);
    spec.numerics.max_rel_l2 = 0.01;
    spec.numerics.min_cosine = 0.999;
    spec.max_memory_ratio = 1.5;
    cand.arm.numerics[1].rel_l2 = 0.010000000269481817; /* as a sim run measured it */
    cand.arm.numerics[1].cosine = 0.99899999;
    cand.arm.bytes = 1501;
    evaluate();
    assert_int_equal(cand.verdict, KT_VERDICT_REJECT);
    assert_true(has_reason("rel_l2 0.0100000003 above max_rel_l2 0.01 on input set 1", NULL));
    assert_true(has_reason("cosine 0.99899999 below min_cosine 0.999000 on input set 1", NULL));
    assert_true(
        has_reason("memory 1501 bytes is 1.501x the baseline's 1000, above max_ratio 1.5", NULL));
}

/* The baseline's error is floored at the storage type's unit roundoff before the ratio. */
static void test_error_vs_baseline_floor(void **state)
{
    (void)state;
    set_pairs(10, 100000, 80000);
    spec.numerics.max_error_vs_baseline = 4;
    const kt_dtype types[3] = {KT_DTYPE_FP32, KT_DTYPE_FP16, KT_DTYPE_BF16};
    for (int t = 0; t < 3; t++) {
        spec.dtype = types[t];
        double u = kt_dtype_unit_roundoff(types[t]);
        base.numerics[0].rel_l2 = base.numerics[1].rel_l2 = 0; /* an exact baseline */
        cand.arm.numerics[0].rel_l2 = 3 * u;
        evaluate();
        assert_true(fabs(cand.error_ratio - 3) < 1e-12);
        assert_int_equal(cand.verdict, KT_VERDICT_KEEP);
        cand.arm.numerics[0].rel_l2 = 5 * u;
        evaluate();
        assert_int_equal(cand.verdict, KT_VERDICT_REJECT);
        assert_true(has_reason("above max_error_vs_baseline 4 at b4/t1024", NULL));
        /* the exact baseline's 0 is not what the ratio divides by: the reason names the floor */
        assert_true(has_reason("x the storage type's unit roundoff", NULL));
        /* a baseline above the floor is used as it is (its worst set) */
        base.numerics[1].rel_l2 = 2 * u;
        evaluate();
        assert_true(fabs(cand.error_ratio - 2.5) < 1e-12);
        assert_int_equal(cand.verdict, KT_VERDICT_KEEP);
    }
}

static void test_bitwise_repeatable(void **state)
{
    (void)state;
    set_pairs(10, 100000, 80000);
    cand.arm.repeatable = 0;
    evaluate();
    assert_int_equal(cand.verdict, KT_VERDICT_KEEP); /* not asked for */
    spec.numerics.bitwise_repeatable = 1;
    evaluate();
    assert_int_equal(cand.verdict, KT_VERDICT_REJECT);
    assert_true(has_reason("differ between two runs", "bitwise_repeatable", NULL));
    cand.arm.repeatable = 1;
    evaluate();
    assert_int_equal(cand.verdict, KT_VERDICT_KEEP);
}

static void test_memory_ratio(void **state)
{
    (void)state;
    set_pairs(10, 100000, 80000);
    cand.arm.bytes = 2000;
    evaluate();
    assert_true(cand.memory_ratio == 2);
    assert_int_equal(cand.verdict, KT_VERDICT_KEEP); /* no limit set */
    spec.max_memory_ratio = 1.5;
    evaluate();
    assert_int_equal(cand.verdict, KT_VERDICT_REJECT);
    assert_true(has_reason("memory 2000 bytes is 2x the baseline's 1000, above max_ratio 1.5",
                           "b4/t1024", NULL));
    cand.arm.bytes = 1500; /* at the limit */
    evaluate();
    assert_int_equal(cand.verdict, KT_VERDICT_KEEP);
}

static void test_failed_arm(void **state)
{
    (void)state;
    set_pairs(10, 100000, 10000);
    cand.arm.failed = 1;
    strcpy(cand.arm.failure, "left 1 of 64 output elements unwritten on input set 0");
    evaluate();
    assert_int_equal(cand.verdict, KT_VERDICT_REJECT);
    assert_int_equal(cand.n_reasons, 1);
    assert_string_equal(cand.reasons[0],
                        "left 1 of 64 output elements unwritten on input set 0 at b4/t1024");
    assert_true(isnan(cand.speedup));
}

/* A quality failure and a slow speed give both reasons; reasons never overflow. */
static void test_reasons_accumulate(void **state)
{
    (void)state;
    set_pairs(10, 80000, 100000);
    spec.numerics.max_rel_l2 = 0;
    spec.numerics.max_abs = 0;
    spec.numerics.min_cosine = 2;
    for (int s = 0; s < 2; s++) {
        cand.arm.numerics[s].rel_l2 = 0.1;
        cand.arm.numerics[s].max_abs = 0.1;
    }
    spec.numerics.max_error_vs_baseline = 1;
    spec.max_memory_ratio = 0.5;
    evaluate();
    assert_int_equal(cand.verdict, KT_VERDICT_REJECT);
    assert_int_equal(cand.n_reasons, 8); /* 6 per-set + ratio + memory; speed is cut */
    evaluate();                          /* a second evaluation starts afresh */
    assert_int_equal(cand.n_reasons, 8);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_names, reset),
        cmocka_unit_test_setup(test_deterministic_pairs, reset),
        cmocka_unit_test_setup(test_noisy_pairs_by_backend, reset),
        cmocka_unit_test_setup(test_min_speedup_boundary, reset),
        cmocka_unit_test_setup(test_too_few_pairs, reset),
        cmocka_unit_test_setup(test_numerics_limits_per_set, reset),
        cmocka_unit_test_setup(test_reasons_tell_the_value_from_the_limit, reset),
        cmocka_unit_test_setup(test_error_vs_baseline_floor, reset),
        cmocka_unit_test_setup(test_bitwise_repeatable, reset),
        cmocka_unit_test_setup(test_memory_ratio, reset),
        cmocka_unit_test_setup(test_failed_arm, reset),
        cmocka_unit_test_setup(test_reasons_accumulate, reset),
        cmocka_unit_test_setup(test_placement_spread, reset),
        cmocka_unit_test_setup(test_order_effect_warns_from_its_size, reset),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
