/* test_compare.c - kt_compare_candidate and kt_compare_shift on hand-built runs: the change of
 * speedup between two runs is the two-sample HL of their log ratios, and where each run's own
 * interval counted a spread between placements (tau^2 over C clusters), the comparison counts
 * both runs' spreads, so a rerun whose prepared states happened to lie elsewhere is not
 * "better" or "worse" by that alone. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "decide/compare.h"
#include "decide/stats.h"

#include <math.h>
#include <string.h>

#define PAIRS 400

static kt_pair old_pairs[PAIRS], new_pairs[PAIRS];
static kt_candidate_result old_c, new_c;

/* 'n' pairs of base 100 us whose log ratio is 'shift' plus a fixed symmetric pattern of +-0.3%,
 * recorded with 'clusters' clusters of spread 'tau2'. */
static void fill(kt_candidate_result *c, kt_pair *pairs, double shift, double tau2, int clusters)
{
    static const double noise[8] = {-0.003, 0.003, -0.002, 0.002, -0.001, 0.001, 0, 0};
    memset(c, 0, sizeof(*c));
    for (size_t i = 0; i < PAIRS; i++) {
        double d = shift + noise[i % 8];
        pairs[i] =
            (kt_pair){(int)i, (int)(i % 2),    (int)(i / 3 % 2), 100000.0, 100000.0 * exp(-d), 0, 0,
                      0,      (int)(i / 2 % 8)};
    }
    c->pairs = pairs;
    c->n_pairs = PAIRS;
    c->placement_tau2 = tau2;
    c->placement_clusters = clusters;
    c->base_time.median = c->cand_time.median = 100000.0;
}

/* A rerun 1.2% faster on 400 tight pairs: 'better' with no spread recorded; with each run's
 * tau^2 of 1e-4 over 16 clusters (a sd of 1% per cluster, as measured on this project's CPU)
 * the interval grows by z^2 (1e-4 / 16 + 1e-4 / 16) and the change is 'unclear'. */
static void test_placement_spread_widens_the_change(void **state)
{
    (void)state;
    kt_speed_change sc;
    fill(&old_c, old_pairs, 0.0, 0, 16);
    fill(&new_c, new_pairs, 0.012, 0, 16);
    assert_int_equal(kt_compare_candidate(&sc, &old_c, &new_c, 0.95, 0.01), 0);
    assert_true(sc.placement_var == 0);
    assert_int_equal(sc.change, KT_CHANGE_BETTER);
    double tight_low = log(sc.low), tight_high = log(sc.high), est = log(sc.ratio);
    assert_true(fabs(est - 0.012) < 1e-9);

    fill(&old_c, old_pairs, 0.0, 1e-4, 16);
    fill(&new_c, new_pairs, 0.012, 1e-4, 16);
    assert_int_equal(kt_compare_candidate(&sc, &old_c, &new_c, 0.95, 0.01), 0);
    assert_true(fabs(sc.placement_var - 2e-4 / 16) < 1e-15);
    double z = kt_stats_normal_quantile(0.975), extra = z * z * 2e-4 / 16;
    double lo = est - tight_low, hi = tight_high - est;
    assert_true(fabs(log(sc.low) - (est - sqrt(lo * lo + extra))) < 1e-12);
    assert_true(fabs(log(sc.high) - (est + sqrt(hi * hi + extra))) < 1e-12);
    assert_true(sc.low < 1.01);
    assert_int_equal(sc.change, KT_CHANGE_UNCLEAR);
    assert_false(sc.regression);
    /* the p of the widened interval: the interval includes 1 exactly when p >= 0.05 */
    assert_true((sc.low <= 1) == (sc.p >= 0.05));

    /* a spread from one cluster only is no spread (tau^2 needs two) */
    fill(&old_c, old_pairs, 0.0, 1e-4, 1);
    fill(&new_c, new_pairs, 0.012, NAN, 0);
    assert_int_equal(kt_compare_candidate(&sc, &old_c, &new_c, 0.95, 0.01), 0);
    assert_true(sc.placement_var == 0);
    assert_int_equal(sc.change, KT_CHANGE_BETTER);
}

/* A real 5% loss stays a regression: the spread widens the interval, it does not hide it. */
static void test_a_real_loss_is_still_worse(void **state)
{
    (void)state;
    kt_speed_change sc;
    fill(&old_c, old_pairs, 0.10, 1e-4, 16);
    fill(&new_c, new_pairs, 0.05, 1e-4, 16);
    assert_int_equal(kt_compare_candidate(&sc, &old_c, &new_c, 0.95, 0.01), 0);
    assert_int_equal(sc.change, KT_CHANGE_WORSE);
    assert_true(sc.regression);
    assert_true(sc.p < 0.05);
}

/* Fewer than 2 pairs in either run: no interval, 'unclear', and kt_compare_shift says 1. */
static void test_too_few_pairs(void **state)
{
    (void)state;
    kt_speed_change sc;
    kt_shift s;
    double var = -1;
    fill(&old_c, old_pairs, 0.0, 0, 0);
    fill(&new_c, new_pairs, 0.0, 0, 0);
    new_c.n_pairs = 1;
    assert_int_equal(kt_compare_shift(&s, &var, &old_c, &new_c, 0.95), 1);
    assert_true(var == 0);
    assert_int_equal(kt_compare_candidate(&sc, &old_c, &new_c, 0.95, 0.01), 0);
    assert_int_equal(sc.change, KT_CHANGE_UNCLEAR);
    assert_true(isnan(sc.ratio));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_placement_spread_widens_the_change),
        cmocka_unit_test(test_a_real_loss_is_still_worse),
        cmocka_unit_test(test_too_few_pairs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
