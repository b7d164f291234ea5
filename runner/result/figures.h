/* figures.h - the statistics a result carries: the summary of a sample of times and the
 * paired location shift with its interval (decide/stats.h computes them). */
#ifndef KT_FIGURES_H
#define KT_FIGURES_H

#include <stddef.h>

/* Per-variant description of raw times. Quantiles are type 7 (linear interpolation
 * between order statistics, numpy's and R's default). */
typedef struct kt_summary {
    size_t n;
    double mean, median, p10, p90, min, max;
    double mad;             /* median absolute deviation, unscaled */
    size_t outliers_mild;   /* outside [Q1 - 1.5 IQR, Q3 + 1.5 IQR] but inside the 3 IQR fences */
    size_t outliers_severe; /* outside [Q1 - 3 IQR, Q3 + 3 IQR] */
} kt_summary;

/* One-sample location of paired log-ratios d_i (baseline over candidate):
 * Hodges-Lehmann estimate (median of the Walsh averages) with its distribution-free
 * confidence interval, and the two-sided Wilcoxon signed-rank p-value for d = 0. */
typedef struct kt_shift {
    size_t n;
    double estimate; /* HL estimate of the shift */
    double ci_low, ci_high;
    double confidence; /* the level the interval was computed for */
    double achieved;   /* the exact coverage of that interval (discrete distribution) */
    double p_value;    /* Wilcoxon signed-rank, two-sided */
    int exact;         /* 1 when the exact null distribution was used */
} kt_shift;

#endif
