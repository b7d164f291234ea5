/* test_stats.c - runner/stats: hand-computed cases (arithmetic in the comments),
 * symmetries and invariances, edge sizes, coverage by simulation, and the selection
 * path against brute force. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "kernel.h"
#include "decide/stats.h"
#include "decide/stats_internal.h"

#include <math.h>
#include <stdlib.h>

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

static void assert_close(double got, double want, double rel)
{
    if (!(fabs(got - want) <= rel * fmax(fabs(want), 1e-300))) {
        print_error("got %.17g, want %.17g (rel %g)\n", got, want, rel);
        fail();
    }
}

static void fill_normal(double *x, size_t n, kt_rng *rng, double mean, double sd)
{
    for (size_t i = 0; i < n; i++)
        x[i] = mean + sd * kt_rng_normal(rng);
}

/* ---- quantiles and summaries ---------------------------------------------- */

static void test_quantile_type7(void **state)
{
    (void)state;
    const double x[] = {1, 2, 3, 4};
    /* h = (n-1) q: q=.25 -> h=.75 -> 1 + .75(2-1); q=.9 -> h=2.7 -> 3 + .7(4-3) */
    assert_close(kt_stats_quantile(x, 4, 0.25), 1.75, 1e-15);
    assert_close(kt_stats_quantile(x, 4, 0.5), 2.5, 1e-15);
    assert_close(kt_stats_quantile(x, 4, 0.9), 3.7, 1e-15);
    assert_true(kt_stats_quantile(x, 4, 0) == 1);
    assert_true(kt_stats_quantile(x, 4, 1) == 4);
    assert_true(kt_stats_quantile(x, 1, 0.3) == 1);
    assert_true(isnan(kt_stats_quantile(x, 0, 0.5)));
    assert_true(isnan(kt_stats_quantile(x, 4, -0.1)));
    assert_true(isnan(kt_stats_quantile(x, 4, 1.5)));
    assert_true(isnan(kt_stats_quantile(x, 4, NAN)));
}

static void test_summary_hand(void **state)
{
    (void)state;
    /* sorted 2 4 4 4 5 5 7 9, n=8, mean 40/8 = 5
     * median h=3.5: 4 + .5(5-4) = 4.5; p10 h=.7: 2 + .7(4-2) = 3.4; p90 h=6.3: 7 + .3(2) = 7.6
     * Q1 h=1.75: 4; Q3 h=5.25: 5 + .25(2) = 5.5; IQR 1.5
     * 1.5 IQR fences [1.75, 7.75]: 9 outside; 3 IQR fences [-.5, 10]: 9 inside -> 1 mild
     * |x - 4.5| sorted .5 .5 .5 .5 .5 2.5 2.5 4.5 -> MAD .5 */
    const double x[] = {5, 9, 4, 2, 4, 7, 5, 4};
    kt_summary s;
    kt_stats_summary(&s, x, NELEM(x));
    assert_int_equal(s.n, 8);
    assert_close(s.mean, 5, 1e-15);
    assert_close(s.median, 4.5, 1e-15);
    assert_close(s.p10, 3.4, 1e-15);
    assert_close(s.p90, 7.6, 1e-15);
    assert_true(s.min == 2 && s.max == 9);
    assert_close(s.mad, 0.5, 1e-15);
    assert_int_equal(s.outliers_mild, 1);
    assert_int_equal(s.outliers_severe, 0);
}

static void test_summary_outliers(void **state)
{
    (void)state;
    /* sorted -10 2 3 4 5 6 7 8 15 40, n=10, mean 80/10 = 8, median h=4.5: 5.5
     * Q1 h=2.25: 3.25; Q3 h=6.75: 7.75; IQR 4.5
     * 1.5 IQR fences [-3.5, 14.5]; 3 IQR fences [-10.25, 21.25]
     * -10 and 15: mild; 40: severe
     * |x - 5.5|: 15.5 3.5 2.5 1.5 .5 .5 1.5 2.5 9.5 34.5 -> sorted .5 .5 1.5 1.5 2.5 2.5
     * 3.5 9.5 15.5 34.5 -> MAD 2.5 */
    const double x[] = {40, 2, 3, 4, 5, 6, 7, 8, 15, -10};
    kt_summary s;
    kt_stats_summary(&s, x, NELEM(x));
    assert_close(s.mean, 8, 1e-15);
    assert_close(s.median, 5.5, 1e-15);
    assert_close(s.mad, 2.5, 1e-15);
    assert_int_equal(s.outliers_mild, 2);
    assert_int_equal(s.outliers_severe, 1);
}

static void test_summary_fence_boundaries(void **state)
{
    (void)state;
    /* sorted -5 1 2 3 9: Q1 (h=1) = 1, Q3 (h=3) = 3, IQR 2; 1.5 IQR fences [-2, 6],
     * 3 IQR fences [-5, 9]: -5 and 9 sit on the severe fences, so both are mild */
    const double x[] = {9, 1, -5, 2, 3};
    kt_summary s;
    kt_stats_summary(&s, x, NELEM(x));
    assert_int_equal(s.outliers_mild, 2);
    assert_int_equal(s.outliers_severe, 0);
    /* sorted -5.5 1 2 3 6: same quartiles; -5.5 beyond -5 is severe, 6 on a mild fence
     * is no outlier */
    const double y[] = {6, 1, -5.5, 2, 3};
    kt_stats_summary(&s, y, NELEM(y));
    assert_int_equal(s.outliers_mild, 0);
    assert_int_equal(s.outliers_severe, 1);
}

static void test_summary_empty_and_one(void **state)
{
    (void)state;
    kt_summary s;
    kt_stats_summary(&s, NULL, 0);
    assert_int_equal(s.n, 0);
    assert_true(isnan(s.mean) && isnan(s.median) && isnan(s.mad) && isnan(s.min));
    assert_int_equal(s.outliers_mild + s.outliers_severe, 0);
    const double one = 3.5;
    kt_stats_summary(&s, &one, 1);
    assert_true(s.mean == 3.5 && s.median == 3.5 && s.p10 == 3.5 && s.max == 3.5);
    assert_true(s.mad == 0);
    assert_int_equal(s.outliers_mild + s.outliers_severe, 0);
}

/* ---- null distributions and the normal quantile ----------------------------- */

static void test_signed_rank_cdf(void **state)
{
    (void)state;
    /* subset sums of {1,2,3}: 0 1 2 3 3 4 5 6 -> counts 1 1 1 2 1 1 1 over 8 */
    const double want[] = {1 / 8., 2 / 8., 3 / 8., 5 / 8., 6 / 8., 7 / 8., 1};
    double *c = kt_stats_signed_rank_cdf(3);
    assert_non_null(c);
    for (size_t t = 0; t < NELEM(want); t++)
        assert_close(c[t], want[t], 1e-15);
    free(c);
    /* n=10: P(W+ <= 8) = 25/1024, the tabulated 5% two-sided critical value */
    c = kt_stats_signed_rank_cdf(10);
    assert_close(c[8], 25 / 1024., 1e-15);
    assert_close(c[9], 33 / 1024., 1e-15);
    free(c);
    assert_null(kt_stats_signed_rank_cdf(51));
}

static void test_mann_whitney_cdf(void **state)
{
    (void)state;
    /* U for m = n = 2: partitions in a 2x2 box by size: 1 1 2 1 1 over C(4,2) = 6 */
    const double want[] = {1 / 6., 2 / 6., 4 / 6., 5 / 6., 1};
    double *c = kt_stats_mann_whitney_cdf(2, 2, 4);
    assert_non_null(c);
    for (size_t t = 0; t < NELEM(want); t++)
        assert_close(c[t], want[t], 1e-15);
    free(c);
    /* 8 x 12: total mass 1, symmetric pmf, same for 12 x 8, truncation keeps the head */
    double *a = kt_stats_mann_whitney_cdf(8, 12, 96), *b = kt_stats_mann_whitney_cdf(12, 8, 96);
    double *h = kt_stats_mann_whitney_cdf(8, 12, 20);
    assert_close(a[96], 1, 1e-13);
    for (size_t t = 0; t <= 96; t++) {
        assert_close(a[t], b[t], 1e-13);
        double pmf = a[t] - (t ? a[t - 1] : 0), mirror = a[96 - t] - (t < 96 ? a[95 - t] : 0);
        assert_close(pmf, mirror, 1e-9);
        if (t <= 20)
            assert_close(h[t], a[t], 1e-13);
    }
    /* P(U <= 0) = 1 / C(20, 8) = 1/125970 */
    assert_close(a[0], 1 / 125970., 1e-13);
    free(a);
    free(b);
    free(h);
}

static void test_normal_quantile(void **state)
{
    (void)state;
    /* reference values from scipy.stats.norm.ppf */
    assert_close(kt_stats_normal_quantile(0.975), 1.959963984540054, 1e-14);
    assert_close(kt_stats_normal_quantile(0.025), -1.959963984540054, 1e-14);
    assert_close(kt_stats_normal_quantile(1e-10), -6.361340902404056, 1e-14);
    assert_close(kt_stats_normal_quantile(0.6), 0.2533471031357997, 1e-14);
    assert_true(fabs(kt_stats_normal_quantile(0.5)) < 1e-16);
    assert_true(isnan(kt_stats_normal_quantile(0)) && isnan(kt_stats_normal_quantile(1)));
}

/* ---- one sample ------------------------------------------------------------------ */

static void test_signed_rank_hand_n10(void **state)
{
    (void)state;
    /* sorted d: -1.5 1 2 .. 9; Walsh averages with -1.5: -1.5 -.25 .25 .75 1.25 1.75 ...;
     * the smallest: -1.5 -.25 .25 .75 1 1.25 1.5 1.75 2 2 -> W_(9) = 2, and by the mirror
     * image from the top W_(47) = 7. n=10: P(W+ <= 8) = 25/1024 <= .025 < P(W+ <= 9), so
     * k = 9, achieved 1 - 50/1024. HL: median of 55 averages = 4.5 (scipy/numpy agree).
     * Ranks of |d|: 1->1, 1.5->2 (negative), 2..9 -> 3..10: r- = 2, P(W+ <= 2) = 3/1024,
     * p = 6/1024. */
    const double d[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, -1.5};
    kt_shift r = {0};
    assert_int_equal(kt_stats_signed_rank(&r, d, NELEM(d), 0.95), 0);
    assert_int_equal(r.n, 10);
    assert_close(r.estimate, 4.5, 1e-15);
    assert_close(r.ci_low, 2, 1e-15);
    assert_close(r.ci_high, 7, 1e-15);
    assert_close(r.achieved, 1 - 50 / 1024., 1e-15);
    assert_close(r.confidence, 0.95, 0);
    assert_close(r.p_value, 6 / 1024., 1e-15);
    assert_int_equal(r.exact, 1);
}

static void test_signed_rank_small_n(void **state)
{
    (void)state;
    kt_shift r = {0};
    /* n=6, d = 1..6: P(W+ <= 0) = 1/64 <= .025 < P(W+ <= 1) = 2/64 -> k = 1: CI [1, 6],
     * achieved 1 - 2/64; Walsh averages symmetric about 3.5; all positive: p = 2/64 */
    const double six[] = {4, 1, 6, 2, 5, 3};
    assert_int_equal(kt_stats_signed_rank(&r, six, 6, 0.95), 0);
    assert_close(r.estimate, 3.5, 1e-15);
    assert_true(r.ci_low == 1 && r.ci_high == 6);
    assert_close(r.achieved, 1 - 2 / 64., 1e-15);
    assert_close(r.p_value, 2 / 64., 1e-15);
    /* n=5: P(W+ <= 0) = 1/32 > .025: no interval */
    assert_int_equal(kt_stats_signed_rank(&r, six, 5, 0.95), 0);
    assert_true(isinf(r.ci_low) && r.ci_low < 0 && isinf(r.ci_high) && r.ci_high > 0);
    assert_true(r.achieved == 1);
    /* n=3, d = 1 2 4: Walsh 1 1.5 2 2.5 3 4 -> median (2 + 2.5)/2 = 2.25;
     * W+ = 6 = max: p = 2 P(W+ >= 6) = 2/8 */
    const double three[] = {1, 2, 4};
    assert_int_equal(kt_stats_signed_rank(&r, three, 3, 0.95), 0);
    assert_close(r.estimate, 2.25, 1e-15);
    assert_close(r.p_value, 0.25, 1e-15);
    /* at 75%, alpha/2 = 1/8 = P(W+ <= 0) for n=3 exactly: k = 1 (<= is inclusive), the
     * interval spans all Walsh averages [1, 4], achieved 1 - 2/8 */
    assert_int_equal(kt_stats_signed_rank(&r, three, 3, 0.75), 0);
    assert_true(r.ci_low == 1 && r.ci_high == 4);
    assert_close(r.achieved, 0.75, 1e-15);
    /* d = 1 2 -3: W+ = 3 = M/2, the centre: p = 1 */
    const double centre[] = {1, 2, -3};
    assert_true(kt_stats_wilcoxon_p(centre, 3, NULL) == 1);
    /* n=1, d = 1: the estimate is d; W+ = 1 of 1: P(W+ >= 1) = P(W+ <= 1) = 1 -> p 1 */
    assert_int_equal(kt_stats_signed_rank(&r, three, 1, 0.95), 0);
    assert_true(r.estimate == 1 && r.p_value == 1 && isinf(r.ci_low));
    /* n=2, d = 3 1: Walsh 1 2 3 -> 2; W+ = 3 of 3: p = 2 P(W+ >= 3) = 2/4 */
    const double two[] = {3, 1};
    assert_int_equal(kt_stats_signed_rank(&r, two, 2, 0.95), 0);
    assert_close(r.estimate, 2, 1e-15);
    assert_close(r.p_value, 0.5, 1e-15);
    /* n=0: nothing to estimate, never a crash */
    assert_int_equal(kt_stats_signed_rank(&r, NULL, 0, 0.95), 0);
    assert_true(isnan(r.estimate) && isnan(r.p_value) && isinf(r.ci_low) && r.achieved == 1);
}

static void test_signed_rank_bad_input(void **state)
{
    (void)state;
    kt_shift r = {0};
    const double d[] = {1, NAN, 2};
    assert_int_equal(kt_stats_signed_rank(&r, d, 3, 0.95), KT_EINVAL);
    assert_string_equal(kt_error_last(), "non-finite difference at index 1");
    assert_int_equal(kt_stats_signed_rank(&r, d, 1, 1.0), KT_EINVAL);
    assert_int_equal(kt_stats_signed_rank(&r, d, 1, 0), KT_EINVAL);
    assert_int_equal(kt_stats_signed_rank(NULL, d, 1, 0.95), KT_EINVAL);
    const double b[] = {1, 2};
    assert_int_equal(kt_stats_two_sample(&r, b, 2, d, 3, 0.95), KT_EINVAL);
    assert_true(isnan(kt_stats_wilcoxon_p(d, 3, NULL)));
    assert_true(isnan(kt_stats_mann_whitney_p(b, 2, d, 3)));
}

static void test_wilcoxon_approx_hand(void **state)
{
    (void)state;
    /* zeros force the approximation and are dropped: |d| = 1 1 2 2 3 -> ranks
     * 1.5 1.5 3.5 3.5 5; r- = 1.5 = T, r+ = 13.5; mean 5*6/4 = 7.5;
     * 24 var = 5*6*11 - (2^3-2 + 2^3-2)/2 = 324 -> sd sqrt(13.5);
     * p = erfc(|1.5 - 7.5| / sqrt(13.5) / sqrt 2) (scipy 0.10247043485974937);
     * continuity: |1.5 - 7.5 + .5| -> scipy correction=True 0.13441657417036026 */
    const double d[] = {1, -1, 2, 2, 3, 0};
    int exact = -1;
    double p = kt_stats_wilcoxon_p(d, NELEM(d), &exact);
    assert_int_equal(exact, 0);
    assert_close(p, erfc(6 / sqrt(13.5) / M_SQRT2), 1e-14);
    assert_close(p, 0.10247043485974937, 1e-12);
    assert_close(kt_stats_wilcoxon_p_opt(d, NELEM(d), 1, NULL), 0.13441657417036026, 1e-12);
    /* ties without zeros also use the approximation (see stats.h) */
    const double tied[] = {1, -1, 2, 2, 3};
    assert_close(kt_stats_wilcoxon_p(tied, 5, &exact), p, 1e-15);
    assert_int_equal(exact, 0);
    /* all zero: no evidence of a shift */
    const double zeros[] = {0, 0, 0};
    assert_true(kt_stats_wilcoxon_p(zeros, 3, NULL) == 1);
}

/* A shuffled, negated and scaled copy: the estimate and interval follow, p stays. */
static void check_symmetries(const double *d, size_t n)
{
    double *e = malloc(n * sizeof(*e)), *f = malloc(n * sizeof(*f));
    kt_shift r, neg, scaled;
    for (size_t i = 0; i < n; i++) {
        e[i] = -d[n - 1 - i];
        f[i] = 4 * d[i]; /* powers of two scale exactly */
    }
    assert_int_equal(kt_stats_signed_rank(&r, d, n, 0.9), 0);
    assert_int_equal(kt_stats_signed_rank(&neg, e, n, 0.9), 0);
    assert_int_equal(kt_stats_signed_rank(&scaled, f, n, 0.9), 0);
    assert_true(neg.estimate == -r.estimate);
    assert_true(neg.ci_low == -r.ci_high && neg.ci_high == -r.ci_low);
    assert_close(neg.p_value, r.p_value, 1e-12);
    assert_true(neg.achieved == r.achieved);
    assert_true(scaled.estimate == 4 * r.estimate);
    assert_true(scaled.ci_low == 4 * r.ci_low && scaled.ci_high == 4 * r.ci_high);
    assert_close(scaled.p_value, r.p_value, 1e-12);
    assert_true(r.ci_low <= r.estimate && r.estimate <= r.ci_high);
    free(e);
    free(f);
}

static void test_signed_rank_symmetries(void **state)
{
    (void)state;
    kt_rng rng;
    kt_rng_seed(&rng, 11);
    double d[300];
    fill_normal(d, 30, &rng, 0.2, 1);
    check_symmetries(d, 30); /* exact path */
    fill_normal(d, 300, &rng, -0.1, 1);
    check_symmetries(d, 300); /* normal approximation and selection */
    /* order does not matter */
    kt_shift a, b;
    double rev[300];
    for (size_t i = 0; i < 300; i++)
        rev[i] = d[299 - i];
    assert_int_equal(kt_stats_signed_rank(&a, d, 300, 0.95), 0);
    assert_int_equal(kt_stats_signed_rank(&b, rev, 300, 0.95), 0);
    assert_true(a.estimate == b.estimate && a.ci_low == b.ci_low && a.ci_high == b.ci_high);
    assert_close(a.p_value, b.p_value, 1e-12);
}

/* Fraction of 'reps' samples of size 'n' from N(shift, 1) whose interval covers 'shift'. */
static double coverage_one(size_t n, size_t reps, uint64_t seed, double *achieved)
{
    kt_rng rng;
    kt_rng_seed(&rng, seed);
    double *d = malloc(n * sizeof(*d));
    size_t hits = 0;
    kt_shift r = {0};
    for (size_t rep = 0; rep < reps; rep++) {
        fill_normal(d, n, &rng, 0.3, 1);
        assert_int_equal(kt_stats_signed_rank(&r, d, n, 0.95), 0);
        hits += r.ci_low <= 0.3 && 0.3 <= r.ci_high;
    }
    free(d);
    *achieved = r.achieved;
    return (double)hits / (double)reps;
}

static void test_signed_rank_coverage(void **state)
{
    (void)state;
    double achieved;
    /* exact n=20: achieved is the true coverage for any continuous symmetric law; the
     * binomial sd over 2000 draws is ~.005, so .02 is four of them */
    double cov = coverage_one(20, 2000, 1234, &achieved);
    assert_true(achieved >= 0.95 && achieved < 0.96);
    assert_true(fabs(cov - achieved) < 0.02);
    /* normal approximation n=80, 500 draws (sd ~.01) */
    cov = coverage_one(80, 500, 99, &achieved);
    assert_true(fabs(achieved - 0.95) < 0.01);
    assert_true(fabs(cov - 0.95) < 0.035);
}

/* ---- two samples ------------------------------------------------------------------ */

static void test_two_sample_hand(void **state)
{
    (void)state;
    kt_shift r = {0};
    /* a = 1 2 3, b = 2.5 4 5 6: differences sorted -5 -4 -4 -3 -3 -3 -2 -2 -1.5 -1 -.5 .5
     * -> median (-3 + -2)/2; U1 = #(a_i > b_j) = 1, exact: p = 2 P(U <= 1) = 2 * 2/35;
     * 3 x 4: P(U <= 0) = 1/35 > .025 -> no interval */
    const double a[] = {1, 2, 3}, b[] = {2.5, 4, 5, 6};
    assert_int_equal(kt_stats_two_sample(&r, a, 3, b, 4, 0.95), 0);
    assert_int_equal(r.n, 7);
    assert_close(r.estimate, -2.5, 1e-15);
    assert_close(r.p_value, 4 / 35., 1e-14);
    assert_int_equal(r.exact, 1);
    assert_true(isinf(r.ci_low) && isinf(r.ci_high) && r.achieved == 1);
    /* a = 11..14, b = 1..4: differences 10 + (i - j), median 10, extremes 7 and 13;
     * 4 x 4: P(U <= 0) = 1/70 <= .025 < 2/70 -> k = 1, CI [7, 13], achieved 1 - 2/70;
     * U1 = 16: p = 2 P(U <= 0) = 2/70 */
    const double c[] = {14, 11, 13, 12}, e[] = {1, 2, 3, 4};
    assert_int_equal(kt_stats_two_sample(&r, c, 4, e, 4, 0.95), 0);
    assert_close(r.estimate, 10, 1e-15);
    assert_true(r.ci_low == 7 && r.ci_high == 13);
    assert_close(r.achieved, 1 - 2 / 70., 1e-14);
    assert_close(r.p_value, 2 / 70., 1e-14);
    /* ties: pooled 1 2 2 2 3 with ranks 1 3 3 3 5; R1 = 7, U1 = 1, U = 5, mean 3;
     * var = 6/12 (6 - (27-3)/20) = 2.4; p = erfc((5 - 3 - .5)/sqrt(2.4)/sqrt 2) */
    const double ta[] = {1, 2, 2}, tb[] = {2, 3};
    int exact = -1;
    double p = kt_stats_mann_whitney_p_ex(ta, 3, tb, 2, &exact);
    assert_int_equal(exact, 0);
    assert_close(p, erfc(1.5 / sqrt(2.4) / M_SQRT2), 1e-14);
    assert_close(p, 0.3329216080655659, 1e-12);
    /* empty sample */
    assert_int_equal(kt_stats_two_sample(&r, a, 3, b, 0, 0.95), 0);
    assert_true(isnan(r.estimate) && isnan(r.p_value) && isinf(r.ci_low));
}

static void test_two_sample_symmetries(void **state)
{
    (void)state;
    kt_rng rng;
    kt_rng_seed(&rng, 5);
    double a[120], b[90];
    for (int pass = 0; pass < 2; pass++) {
        size_t na = pass ? 120 : 20, nb = pass ? 90 : 15; /* exact, then approximate */
        for (size_t i = 0; i < na; i++)
            a[i] = round(8 * kt_rng_normal(&rng)) + 3; /* integers: shifts are exact */
        for (size_t j = 0; j < nb; j++)
            b[j] = round(8 * kt_rng_normal(&rng));
        kt_shift r, swapped, shifted;
        assert_int_equal(kt_stats_two_sample(&r, a, na, b, nb, 0.95), 0);
        assert_int_equal(kt_stats_two_sample(&swapped, b, nb, a, na, 0.95), 0);
        assert_true(swapped.estimate == -r.estimate);
        assert_true(swapped.ci_low == -r.ci_high && swapped.ci_high == -r.ci_low);
        assert_close(swapped.p_value, r.p_value, 1e-12);
        for (size_t i = 0; i < na; i++)
            a[i] += 5;
        assert_int_equal(kt_stats_two_sample(&shifted, a, na, b, nb, 0.95), 0);
        assert_true(shifted.estimate == r.estimate + 5);
        assert_true(shifted.ci_low == r.ci_low + 5 && shifted.ci_high == r.ci_high + 5);
        assert_true(r.ci_low <= r.estimate && r.estimate <= r.ci_high);
    }
}

static void test_two_sample_coverage(void **state)
{
    (void)state;
    kt_rng rng;
    kt_rng_seed(&rng, 77);
    double a[70], b[60];
    for (int pass = 0; pass < 2; pass++) {
        size_t na = pass ? 70 : 12, nb = pass ? 60 : 10, reps = pass ? 400 : 1500;
        size_t hits = 0;
        kt_shift r = {0};
        for (size_t rep = 0; rep < reps; rep++) {
            fill_normal(a, na, &rng, 1.0, 1);
            fill_normal(b, nb, &rng, 0.5, 1);
            assert_int_equal(kt_stats_two_sample(&r, a, na, b, nb, 0.95), 0);
            hits += r.ci_low <= 0.5 && 0.5 <= r.ci_high;
        }
        double cov = (double)hits / (double)reps;
        /* exact 12 x 10: achieved is the true coverage (sd ~.006 over 1500 draws);
         * approximate 70 x 60 over 400 draws (sd ~.011) */
        assert_true(r.achieved >= 0.95 && r.achieved < 0.96);
        assert_true(fabs(cov - r.achieved) < (pass ? 0.04 : 0.025));
    }
}

/* ---- selection against brute force --------------------------------------------------- */

static int cmp(const void *a, const void *b)
{
    return kt_stats_cmp_double(a, b);
}

static void check_selection(const double *x, size_t nx, const double *y, size_t ny, int tri)
{
    uint64_t m = kt_stats_pair_count(nx, ny, tri), c = 0;
    double *all = malloc((size_t)m * sizeof(*all));
    for (size_t i = 0; i < nx; i++)
        for (size_t j = tri ? i : 0; j < ny; j++)
            all[c++] = x[i] + y[j];
    assert_true(c == m);
    qsort(all, (size_t)m, sizeof(*all), cmp);
    const uint64_t fixed[] = {1, 2, m / 4, (m + 1) / 2, m / 2 + 1, m - 1, m};
    kt_rng rng;
    kt_rng_seed(&rng, m);
    for (size_t t = 0; t < NELEM(fixed) + 40; t++) {
        uint64_t k = t < NELEM(fixed) ? fixed[t] : 1 + kt_rng_next(&rng) % m;
        double v;
        assert_int_equal(kt_stats_select_sum(&v, x, nx, y, ny, tri, k), 0);
        assert_true(v == all[k - 1]);
    }
    /* the ranks either side of the first value changes: where ties straddle pivots */
    for (uint64_t t = 1, changes = 0; t < m && changes < 20; t++) {
        if (all[t - 1] == all[t])
            continue;
        changes++;
        for (uint64_t k = t; k <= t + 1; k++) {
            double v;
            assert_int_equal(kt_stats_select_sum(&v, x, nx, y, ny, tri, k), 0);
            assert_true(v == all[k - 1]);
        }
    }
    double v;
    assert_int_equal(kt_stats_select_sum(&v, x, nx, y, ny, tri, 0), KT_EINVAL);
    assert_int_equal(kt_stats_select_sum(&v, x, nx, y, ny, tri, m + 1), KT_EINVAL);
    free(all);
}

static void test_selection_matches_naive(void **state)
{
    (void)state;
    kt_rng rng;
    kt_rng_seed(&rng, 3);
    double x[300], y[200];
    fill_normal(x, 300, &rng, 0, 1);
    fill_normal(y, 200, &rng, 0, 3);
    qsort(x, 300, sizeof(double), cmp);
    qsort(y, 200, sizeof(double), cmp);
    check_selection(x, 300, x, 300, 1); /* 45150 Walsh sums: far above the gather size */
    check_selection(x, 300, y, 200, 0);
    for (size_t i = 0; i < 300; i++) /* heavy ties: many equal sums straddle each pivot */
        x[i] = round(x[i] * 2);
    qsort(x, 300, sizeof(double), cmp);
    check_selection(x, 300, x, 300, 1);
    for (size_t i = 0; i < 300; i++) /* two values: sums 0, 1, 2 in three long runs */
        x[i] = i < 120 ? 0 : 1;
    check_selection(x, 300, x, 300, 1);
    check_selection(x, 300, x + 100, 200, 0);
    for (size_t i = 0; i < 300; i++)
        x[i] = 1;
    check_selection(x, 300, x, 300, 1);
}

static void test_large_samples(void **state)
{
    (void)state;
    /* n = 100,000 pairs (5e9 Walsh averages) and 5000 x 5000 samples go through the
     * selection path; the estimate must land near the true shift of the draw */
    size_t n = 100000;
    double *d = malloc(n * sizeof(*d));
    kt_rng rng;
    kt_rng_seed(&rng, 2024);
    fill_normal(d, n, &rng, 0.05, 1);
    kt_shift r = {0};
    assert_int_equal(kt_stats_signed_rank(&r, d, n, 0.95), 0);
    assert_int_equal(r.exact, 0);
    assert_true(fabs(r.estimate - 0.05) < 0.02);
    assert_true(r.ci_low < r.estimate && r.estimate < r.ci_high);
    assert_true(r.ci_high - r.ci_low < 0.03); /* ~ 2 * 1.96 * 1.02 / sqrt(n) = .013 */
    assert_true(r.p_value < 1e-10);
    double *b = d + 5000;
    assert_int_equal(kt_stats_two_sample(&r, d, 5000, b, 5000, 0.95), 0);
    assert_true(fabs(r.estimate) < 0.1);
    assert_true(r.ci_low < r.estimate && r.estimate < r.ci_high);
    free(d);
}

/* DerSimonian-Laird tau^2 against values computed independently with numpy from the
 * textbook formula. */
static void test_dl_tau2(void **state)
{
    (void)state;
    const double y[] = {0.1, 0.3, -0.2, 0.05}, v[] = {0.01, 0.02, 0.015, 0.03};
    assert_true(fabs(kt_stats_dl_tau2(y, v, 4) - 0.025531250000000002) < 1e-15);
    /* points that agree better than their errors say: Q < P - 1, so 0 */
    const double close[] = {0.01, 0.012, 0.011};
    assert_true(kt_stats_dl_tau2(close, v, 3) == 0);
    assert_true(kt_stats_dl_tau2(y, v, 1) == 0);
    const double bad_v[] = {0.01, 0};
    assert_true(isnan(kt_stats_dl_tau2(y, bad_v, 2)));
}

/* Student t against scipy.stats.t (ppf at 0.975 and 0.995, cdf at -1.3). */
static void test_student_t(void **state)
{
    (void)state;
    static const double want[5][4] = {
        {1, 12.706204736432095, 63.65674116287399, 0.20871440016015264},
        {2, 4.302652729911275, 9.92484320091807, 0.16162351590802027},
        {5, 2.5705818366147395, 4.032142983557536, 0.12515031708533858},
        {30, 2.0422724563012373, 2.7499956535670305, 0.10175047926905845},
        {1000, 1.9623390808264074, 2.580754698065942, 0.09695026420772868}};
    for (int i = 0; i < 5; i++) {
        double df = want[i][0];
        assert_true(fabs(kt_stats_t_quantile(0.975, df) - want[i][1]) < 1e-9 * want[i][1]);
        assert_true(fabs(kt_stats_t_quantile(0.995, df) - want[i][2]) < 1e-9 * want[i][2]);
        assert_true(fabs(kt_stats_t_quantile(0.025, df) + want[i][1]) < 1e-9 * want[i][1]);
        assert_true(fabs(kt_stats_t_cdf(-1.3, df) - want[i][3]) < 1e-12);
        assert_true(fabs(kt_stats_t_cdf(1.3, df) - (1 - want[i][3])) < 1e-12);
    }
    assert_true(isnan(kt_stats_t_quantile(1, 5)) && isnan(kt_stats_t_quantile(0.5, 0)));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_quantile_type7),
        cmocka_unit_test(test_summary_hand),
        cmocka_unit_test(test_summary_outliers),
        cmocka_unit_test(test_summary_fence_boundaries),
        cmocka_unit_test(test_summary_empty_and_one),
        cmocka_unit_test(test_signed_rank_cdf),
        cmocka_unit_test(test_mann_whitney_cdf),
        cmocka_unit_test(test_normal_quantile),
        cmocka_unit_test(test_signed_rank_hand_n10),
        cmocka_unit_test(test_signed_rank_small_n),
        cmocka_unit_test(test_signed_rank_bad_input),
        cmocka_unit_test(test_wilcoxon_approx_hand),
        cmocka_unit_test(test_signed_rank_symmetries),
        cmocka_unit_test(test_signed_rank_coverage),
        cmocka_unit_test(test_two_sample_hand),
        cmocka_unit_test(test_two_sample_symmetries),
        cmocka_unit_test(test_two_sample_coverage),
        cmocka_unit_test(test_selection_matches_naive),
        cmocka_unit_test(test_large_samples),
        cmocka_unit_test(test_dl_tau2),
        cmocka_unit_test(test_student_t),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
