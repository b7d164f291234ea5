/* stats.h - the statistics behind a verdict: distribution-free, paired, and exact for
 * small samples. Every function handles n = 0 (zeros / NAN, never a crash). */
#ifndef KT_STATS_H
#define KT_STATS_H

#include "result/figures.h"

#include <stddef.h>

/* Fills 'out' from the 'n' values 'x' (any order). n = 0, or no memory for the sorted
 * copy: n set, every double NAN, counts 0. A NaN in 'x' sorts after everything. */
void kt_stats_summary(kt_summary *out, const double *x, size_t n);
/* Quantile 'q' in [0, 1] of ascending 'sorted' (type 7). NAN when n = 0 or q is outside
 * [0, 1]. */
double kt_stats_quantile(const double *sorted, size_t n, double q);

/* How kt_stats_signed_rank computes its fields ('confidence' in (0, 1), 'd' finite, else
 * KT_EINVAL with a message; KT_ENOMEM when out of memory; otherwise 0):
 * - estimate: median of the n(n+1)/2 Walsh averages (d_i + d_j)/2, i <= j, zeros
 *   included; found by selection in O(n log n), never materialised.
 * - interval: [W_(k), W_(M+1-k)] of the ordered Walsh averages, M = n(n+1)/2. For
 *   n <= 50, k - 1 is the largest t with P(W+ <= t) <= (1 - confidence)/2 under the exact
 *   null distribution of W+, and 'achieved' = 1 - 2 P(W+ <= k-1) exactly. Above 50,
 *   k = floor(M/2 - z sqrt(n(n+1)(2n+1)/24)) with z the normal (1+confidence)/2 quantile,
 *   and 'achieved' is the normal approximation of that coverage (continuity-corrected).
 *   When no k >= 1 exists (n < 6 at 95%) the interval is [-inf, +inf], achieved 1.
 * - p_value and exact: as kt_stats_wilcoxon_p ('exact' describes the p-value; the
 *   interval is exact for every n <= 50, ties and zeros included).
 * - n = 0: estimate NAN, interval [-inf, +inf], achieved 1, p_value NAN. */
int kt_stats_signed_rank(kt_shift *out, const double *d, size_t n, double confidence);

/* Two independent samples: HL shift (median of all a_i - b_j) with its CI from the
 * Mann-Whitney distribution, and the two-sided Mann-Whitney U p-value (as scipy's
 * mannwhitneyu with method='auto'). Same conventions as kt_stats_signed_rank, with:
 * n = na + nb; estimate the median of the na*nb differences a_i - b_j (selection in
 * O((na + nb) log), never materialised); interval [D_(k), D_(M+1-k)], M = na*nb, with k
 * from the exact null distribution of U when na <= 50 and nb <= 50 (achieved exact),
 * else k = floor(M/2 - z sqrt(na nb (na+nb+1)/12)) clamped to >= 1 (achieved
 * approximate); p_value and exact as kt_stats_mann_whitney_p. Either sample empty: the
 * n = 0 result. */
int kt_stats_two_sample(kt_shift *out, const double *a, size_t na, const double *b, size_t nb,
                        double confidence);

/* Two-sided Wilcoxon signed-rank p-value alone (scipy.stats.wilcoxon defaults), equal to
 * scipy 1.10 wilcoxon(d) (zero_method='wilcox', correction=False, method='auto') except
 * where noted:
 * - zeros are dropped; all zero gives 1 (scipy raises); n = 0 or a NaN gives NAN.
 * - exact when n <= 50, no zeros and no ties among |d|: p = 2 min(P(W+ <= r+),
 *   P(W+ >= r+)), capped at 1. scipy 1.10 also goes exact with ties (truncating the tied
 *   rank sum to an integer); we use the normal approximation there instead.
 * - otherwise normal approximation of T = min(r+, r-) with the tie correction
 *   sum(t^3 - t)/48 in the variance and, like scipy's default, NO continuity correction.
 * '*exact' (when not NULL) says which was used. */
double kt_stats_wilcoxon_p(const double *d, size_t n, int *exact);
/* The same with a choice of continuity correction ('continuity' nonzero: move T by 1/2
 * towards the mean in the normal approximation, as scipy's correction=True). */
double kt_stats_wilcoxon_p_opt(const double *d, size_t n, int continuity, int *exact);
/* Two-sided Mann-Whitney U p-value alone, equal to scipy 1.10 mannwhitneyu(a, b,
 * use_continuity=True, alternative='two-sided', method='auto'): exact when either
 * sample has <= 8 values and no value repeats in the pooled sample (and the smaller tail
 * has <= 2^22 terms), else normal approximation with tie and continuity correction.
 * Either sample empty or a NaN: NAN. */
double kt_stats_mann_whitney_p(const double *a, size_t na, const double *b, size_t nb);

/* DerSimonian-Laird moment estimate of the between-study variance of 'n' estimates 'y' with
 * within-study variances 'v' (all > 0): max(0, (Q - (n - 1)) / (S1 - S2 / S1)) where
 * w_i = 1 / v_i, S1 = sum w_i, S2 = sum w_i^2 and Q = sum w_i (y_i - sum w_i y_i / S1)^2.
 * 0 when n < 2; NAN when a v_i is not > 0 or a value is not finite. */
double kt_stats_dl_tau2(const double *y, const double *v, size_t n);

/* Adds a variance 'extra_var' of the estimate (a random effect the interval did not see) to
 * the interval of 's' at level 'confidence': each side grows from 'side' to sqrt(side^2 +
 * z^2 extra_var), z the normal quantile of the level. p becomes the larger of its own and the
 * two-sided normal p of that model, erfc(|est| z / side' / sqrt 2) with side' the widened side
 * towards 0, so that p < 1 - confidence exactly where the interval leaves out 0. Nothing
 * changes when 'extra_var' is not > 0. */
void kt_stats_widen(kt_shift *s, double extra_var, double confidence);

/* Student t with 'df' > 0 degrees of freedom: the CDF at 't' (from the regularized
 * incomplete beta function, about 1e-14 absolute) and the quantile at 'p' in (0, 1) (bisection
 * on the CDF). NAN outside the domain. */
double kt_stats_t_cdf(double t, double df);
double kt_stats_t_quantile(double p, double df);

/* Quantile of the standard normal at probability 'p' in (0, 1) (NAN outside), accurate
 * to about 1e-15 relative (Acklam's approximation refined by one Halley step). */
double kt_stats_normal_quantile(double p);

#endif
