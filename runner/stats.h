/* stats.h - the statistics behind a verdict: distribution-free, paired, and exact for
 * small samples. Every function handles n = 0 (zeros / NAN, never a crash). */
#ifndef KT_STATS_H
#define KT_STATS_H

#include <stddef.h>

/* Per-variant description of raw times. Quantiles are type 7 (linear interpolation
 * between order statistics, numpy's and R's default). */
typedef struct kt_summary {
    size_t n;
    double mean, median, p10, p90, min, max;
    double mad;            /* median absolute deviation, unscaled */
    size_t outliers_mild;  /* outside [Q1 - 1.5 IQR, Q3 + 1.5 IQR] but inside the 3 IQR fences */
    size_t outliers_severe; /* outside [Q1 - 3 IQR, Q3 + 3 IQR] */
} kt_summary;

void kt_stats_summary(kt_summary *out, const double *x, size_t n);
/* Quantile 'q' in [0, 1] of ascending 'sorted' (type 7). */
double kt_stats_quantile(const double *sorted, size_t n, double q);

/* One-sample location of paired log-ratios d_i (baseline over candidate):
 * Hodges-Lehmann estimate (median of the Walsh averages) with its distribution-free
 * confidence interval, and the two-sided Wilcoxon signed-rank p-value for d = 0. */
typedef struct kt_shift {
    size_t n;
    double estimate; /* HL estimate of the shift */
    double ci_low, ci_high;
    double confidence;      /* the level the interval was computed for */
    double achieved;        /* the exact coverage of that interval (discrete distribution) */
    double p_value;         /* Wilcoxon signed-rank, two-sided */
    int exact;              /* 1 when the exact null distribution was used */
} kt_shift;

int kt_stats_signed_rank(kt_shift *out, const double *d, size_t n, double confidence);

/* Two independent samples: HL shift (median of all a_i - b_j) with its CI from the
 * Mann-Whitney distribution, and the two-sided Mann-Whitney U p-value (as scipy's
 * mannwhitneyu with method='auto'). */
int kt_stats_two_sample(kt_shift *out, const double *a, size_t na, const double *b, size_t nb,
                        double confidence);

/* Two-sided Wilcoxon signed-rank p-value alone (scipy.stats.wilcoxon defaults). */
double kt_stats_wilcoxon_p(const double *d, size_t n, int *exact);
/* Two-sided Mann-Whitney U p-value alone. */
double kt_stats_mann_whitney_p(const double *a, size_t na, const double *b, size_t nb);

#endif
