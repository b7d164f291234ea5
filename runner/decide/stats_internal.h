/* stats_internal.h - pieces shared by stats.c, stats_rank.c and stats_select.c, and
 * exposed to tests/unit/test_stats.c: order-statistic selection over pairwise sums and
 * the exact null distributions of the rank statistics. Not part of the public API. */
#ifndef KT_STATS_INTERNAL_H
#define KT_STATS_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

/* qsort comparator for doubles: ascending, NaN after everything (a total order). */
int kt_stats_cmp_double(const void *a, const void *b);

/* Ascending copy of 'x' in '*out' (malloc'ed; caller frees). Returns 0 or KT_ENOMEM. */
int kt_stats_sorted_copy(double **out, const double *x, size_t n);

/* Number of pairs in the pairwise-sum set described at kt_stats_select_sum. */
uint64_t kt_stats_pair_count(size_t nx, size_t ny, int triangular);

/* The 'k'-th smallest (1-based) of the floating-point sums x[i] + y[j] over all pairs
 * (i, j) with 0 <= i < nx and, when 'triangular', i <= j < ny (else 0 <= j < ny).
 * 'x' and 'y' are ascending; with 'triangular' they must be the same array (nx == ny).
 * Walsh averages are the triangular sums of d with itself, halved; two-sample
 * differences a_i - b_j are the full sums of a with -b (negation is exact).
 * Runs in O((nx + ny) log(nx ny)) expected time and O(nx + ny) memory (randomized
 * pivots from a fixed seed: deterministic). Returns 0, KT_EINVAL (k out of range) or
 * KT_ENOMEM. */
int kt_stats_select_sum(double *out, const double *x, size_t nx, const double *y, size_t ny,
                        int triangular, uint64_t k);

/* Exact null distribution of the signed-rank statistic W+ for 'n' untied nonzero
 * differences: 'cdf[t]' = P(W+ <= t) for t = 0 .. n(n+1)/2. Counts are exact in
 * doubles up to n = 50 (2^50 < 2^53); larger n is refused. Returns a malloc'ed array
 * of n(n+1)/2 + 1 values, or NULL (n > 50 or out of memory). */
double *kt_stats_signed_rank_cdf(size_t n);

/* Exact null distribution of the Mann-Whitney U statistic for samples of sizes 'm' and
 * 'n' without ties, truncated: 'cdf[t]' = P(U <= t) for t = 0 .. 'tmax' (tmax <= m n).
 * Computed from the Gaussian binomial [m+n choose m]_q as a product of
 * (1 - q^(n+i)) / (1 - q^i), i = 1 .. min(m, n), in O(min(m, n) * tmax) additions.
 * Returns a malloc'ed array of tmax + 1 values, or NULL when out of memory. */
double *kt_stats_mann_whitney_cdf(size_t m, size_t n, uint64_t tmax);

/* kt_stats_mann_whitney_p, also telling in '*exact' (when not NULL) whether the exact
 * null distribution was used. */
double kt_stats_mann_whitney_p_ex(const double *a, size_t na, const double *b, size_t nb,
                                  int *exact);

/* Standard normal upper tail P(Z > z) (accurate far into the tail, via erfc). */
double kt_stats_normal_sf(double z);

#endif
