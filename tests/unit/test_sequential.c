/* test_sequential.c - the group-sequential design: boundaries against a direct simulation of
 * the normal model, looks that cannot decide, designs that never can. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include "decide/sequential.h"
#include "decide/stats.h"
#include "kernel.h"

#include <math.h>
#include <string.h>

/* Simulated P(some decisive look crosses its boundary) for the score S_k, a random walk
 * with N(0, n_k - n_{k-1}) increments, crossing when |S_k| >= z_k sqrt(n_k). */
static double simulated_error(const kt_design *d, int paths, uint64_t seed)
{
    kt_rng rng;
    kt_rng_seed(&rng, seed);
    double z[KT_LIMIT_LOOKS];
    for (int k = 0; k < d->n_looks; k++)
        z[k] = d->decisive[k] ? kt_stats_normal_quantile(0.5 + d->confidence[k] / 2) : INFINITY;
    int crossed = 0;
    for (int p = 0; p < paths; p++) {
        double s = 0;
        int prev = 0;
        for (int k = 0; k < d->n_looks; k++) {
            s += sqrt((double)(d->looks[k] - prev)) * kt_rng_normal(&rng);
            prev = d->looks[k];
            if (fabs(s) >= z[k] * sqrt((double)d->looks[k])) {
                crossed++;
                break;
            }
        }
    }
    return (double)crossed / paths;
}

static void test_spending_spends_exactly_alpha(void **state)
{
    (void)state;
    kt_design d;
    /* the default: Hwang-Shih-DeCani on the dense looks 10, 11, ..., 20, 24, ..., 179, 200 */
    assert_int_equal(kt_design_plan(&d, 10, 200, 0.05, KT_SPEND_HSD), 0);
    assert_int_equal(d.n_looks, 24);
    double hsd_at_10 = 0.05 * (1 - exp(-KT_HSD_GAMMA * 0.05)) / (1 - exp(-KT_HSD_GAMMA));
    for (int k = 0; k < d.n_looks; k++) {
        assert_true(d.decisive[k]);
        /* each look is judged above the overall level */
        assert_true(d.confidence[k] > 0.95 && d.confidence[k] < 1);
    }
    assert_true(fabs(d.spent[0] - hsd_at_10) < 1e-12);
    assert_true(fabs(d.confidence[0] - (1 - hsd_at_10)) < 1e-9); /* the first look alone */
    assert_true(fabs(d.spent[d.n_looks - 1] - 0.05) < 1e-12);
    /* 200,000 paths: the standard error of the rate is 0.0005 */
    double err = simulated_error(&d, 200000, 41);
    if (fabs(err - 0.05) > 0.003)
        fail_msg("Hwang-Shih-DeCani: simulated error %.4f, expected 0.05", err);

    assert_int_equal(kt_design_plan(&d, 10, 200, 0.05, KT_SPEND_POCOCK_SPARSE), 0);
    assert_int_equal(d.n_looks, 9);
    static const int expect[9] = {10, 15, 23, 34, 51, 76, 114, 171, 200};
    for (int k = 0; k < 9; k++) {
        assert_int_equal(d.looks[k], expect[k]);
        assert_true(d.decisive[k]);
        assert_true(d.confidence[k] > 0.95 && d.confidence[k] < 1);
    }
    assert_true(fabs(d.spent[8] - 0.05) < 1e-12);
    err = simulated_error(&d, 200000, 42);
    if (fabs(err - 0.05) > 0.003)
        fail_msg("simulated error %.4f, expected 0.05", err);

    assert_int_equal(kt_design_plan(&d, 10, 200, 0.05, KT_SPEND_POCOCK), 0);
    err = simulated_error(&d, 200000, 46);
    if (fabs(err - 0.05) > 0.003)
        fail_msg("Pocock, dense looks: simulated error %.4f, expected 0.05", err);

    assert_int_equal(kt_design_plan(&d, 10, 200, 0.05, KT_SPEND_OBRIEN_FLEMING), 0);
    err = simulated_error(&d, 200000, 43);
    if (fabs(err - 0.05) > 0.003)
        fail_msg("O'Brien-Fleming: simulated error %.4f, expected 0.05", err);
    int first = 0;
    while (!d.decisive[first])
        first++; /* its tiny early shares leave the first looks undecidable */
    /* keeps the budget for the end */
    assert_true(d.confidence[first] > d.confidence[d.n_looks - 1]);

    /* Bonferroni: 1 - alpha/L at every look, and conservative */
    assert_int_equal(kt_design_plan(&d, 10, 200, 0.05, KT_SPEND_BONFERRONI), 0);
    for (int k = 0; k < 9; k++)
        assert_true(fabs(d.confidence[k] - (1 - 0.05 / 9)) < 1e-12);
    err = simulated_error(&d, 200000, 44);
    assert_true(err < 0.045 && err > 0.02);
}

static void test_looks_that_cannot_decide_take_no_budget(void **state)
{
    (void)state;
    assert_int_equal(kt_design_min_pairs(0.95), 6);
    assert_int_equal(kt_design_min_pairs(0.99), 8);
    kt_design d;
    /* looks 2, 3, 4, 5, 6, 8, 10, 12, 15, 18, 20: the first ones can never reach a finite
     * interval */
    assert_int_equal(kt_design_plan(&d, 2, 20, 0.05, KT_SPEND_HSD), 0);
    int first = -1;
    for (int k = 0; k < d.n_looks; k++) {
        if (d.decisive[k] && first < 0)
            first = k;
        if (!d.decisive[k])
            assert_true(first < 0); /* only a prefix is dropped */
        else
            assert_true(d.looks[k] >= kt_design_min_pairs(d.confidence[k]));
    }
    assert_true(first > 0 && d.looks[first] >= 6);
    assert_true(fabs(d.spent[d.n_looks - 1] - 0.05) < 1e-12);
    double err = simulated_error(&d, 200000, 45);
    if (fabs(err - 0.05) > 0.003)
        fail_msg("after dropping looks: simulated error %.4f", err);
    assert_int_equal(kt_design_last_look(&d, d.looks[first] - 1), -1);
    assert_int_equal(kt_design_last_look(&d, 20), d.n_looks - 1);
}

static void test_front_loaded_default(void **state)
{
    (void)state;
    kt_design d;
    /* the schedule README.md and docs/statistics.md list: 7, 8, ..., 14, then the ceil of
     * the running product 14 x 1.2^k (not of each look x 1.2), then 200 */
    static const int expect[] = {7,  8,  9,  10, 11, 12, 13,  14,  17,  21,  25, 30,
                                 35, 42, 51, 61, 73, 87, 105, 125, 150, 180, 200};
    assert_int_equal(kt_design_plan(&d, 7, 200, 0.05, KT_SPEND_DEFAULT), 0);
    assert_int_equal(d.spending, KT_SPEND_FRONT);
    assert_int_equal(d.n_looks, 23);
    for (int k = 0; k < d.n_looks; k++)
        assert_int_equal(d.looks[k], expect[k]);
    for (int k = 0; k < d.n_looks; k++)
        assert_true(d.decisive[k]);
    assert_true(fabs(d.spent[0] - KT_FRONT_FIRST * 0.05) < 1e-12);
    assert_true(fabs(d.spent[4] -
                     (KT_FRONT_FIRST + (KT_FRONT_DENSE - KT_FRONT_FIRST) * 4 / 7) * 0.05) < 1e-12);
    assert_true(fabs(d.spent[7] - KT_FRONT_DENSE * 0.05) < 1e-12);
    assert_true(fabs(d.spent[d.n_looks - 1] - 0.05) < 1e-12);
    /* the first look's exact interval is finite with one discordant pair of the lowest rank
     * (two-sided level 4 / 128), not with one of the second rank (6 / 128) */
    double one_low[7] = {-0.5, 1, 2, 3, 4, 5, 6}, one_second[7] = {-1.5, 1, 2, 3, 4, 5, 6};
    kt_shift s;
    assert_int_equal(kt_stats_signed_rank(&s, one_low, 7, d.confidence[0]), 0);
    assert_true(s.ci_low > 0);
    assert_int_equal(kt_stats_signed_rank(&s, one_second, 7, d.confidence[0]), 0);
    assert_true(s.ci_low <= 0);
    double err = simulated_error(&d, 200000, 47);
    if (fabs(err - 0.05) > 0.003)
        fail_msg("front-loaded: simulated error %.4f, expected 0.05", err);

    /* a sixth of the budget (aggregate all over 6 points): 7 and 8 pairs cannot decide at
     * their shares and pass them on */
    assert_int_equal(kt_design_plan(&d, 7, 200, 0.05 / 6, KT_SPEND_DEFAULT), 0);
    assert_false(d.decisive[0]);
    assert_false(d.decisive[1]);
    assert_true(d.decisive[2] && d.looks[2] == 9);
    assert_true(fabs(d.spent[d.n_looks - 1] - 0.05 / 6) < 1e-12);
    err = simulated_error(&d, 200000, 48);
    if (fabs(err - 0.05 / 6) > 0.0012)
        fail_msg("front-loaded at alpha/6: simulated error %.4f, expected %.4f", err, 0.05 / 6);

    /* min = max: the whole budget at the one look */
    assert_int_equal(kt_design_plan(&d, 12, 12, 0.05, KT_SPEND_DEFAULT), 0);
    assert_int_equal(d.n_looks, 1);
    assert_true(fabs(d.confidence[0] - 0.95) < 1e-9);
}

static void test_a_design_that_never_decides(void **state)
{
    (void)state;
    kt_design d;
    assert_true(kt_design_plan(&d, 5, 5, 0.01, KT_SPEND_HSD) < 0);
    assert_true(kt_design_plan(&d, 5, 5, 0.01, KT_SPEND_DEFAULT) < 0);
    assert_non_null(strstr(kt_error_last(), "no look can decide"));
    assert_true(kt_design_plan(&d, 8, 8, 0.01, KT_SPEND_HSD) == 0);
    assert_true(kt_design_plan(&d, 10, 200, 0, KT_SPEND_HSD) < 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_spending_spends_exactly_alpha),
        cmocka_unit_test(test_looks_that_cannot_decide_take_no_budget),
        cmocka_unit_test(test_front_loaded_default),
        cmocka_unit_test(test_a_design_that_never_decides),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
