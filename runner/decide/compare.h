/* compare.h - one candidate at one point in two runs (OLD and NEW): did its speedup over the
 * baseline change? The evidence is paired: each run's log ratios d_i = ln(base_i) -
 * ln(cand_i) already cancel what the machine did to both calls of a pair, so a machine that
 * got uniformly slower between the runs moves no d. Absolute times are reported as drift
 * and never decide. */
#ifndef KT_COMPARE_H
#define KT_COMPARE_H

#include "result/point.h"

typedef enum {
    KT_CHANGE_SAME = 0, /* the interval lies inside [1 - threshold, 1 + threshold] */
    KT_CHANGE_BETTER,   /* the interval lies above 1 + threshold */
    KT_CHANGE_WORSE,    /* the interval lies below 1 - threshold: a speed regression */
    KT_CHANGE_UNCLEAR   /* anything else, or too few pairs */
} kt_change;

const char *kt_change_name(kt_change c);

typedef struct kt_speed_change {
    size_t n_old, n_new;        /* pairs */
    double ratio, low, high, p; /* NEW speedup / OLD speedup: exp of the two-sample HL shift
                                   of d (NEW minus OLD), its interval and Mann-Whitney p, both
                                   with placement_var counted */
    double placement_var;       /* tau^2 / C of OLD plus that of NEW (log units squared): where the
                                   prepared states lay moves each run's speedup as a whole */
    kt_change change;
    double base_drift, cand_drift; /* NEW / OLD median time of the baseline, the candidate */
    int quality_regression;        /* NEW rejects on numerics/memory/failure, OLD did not */
    int regression;                /* change is WORSE, or a quality regression */
} kt_speed_change;

/* The shift of d from 'old_c' to 'new_c' (NEW minus OLD, log units): two-sample
 * Hodges-Lehmann with its Mann-Whitney interval at 'confidence' and p, widened by both runs'
 * placement variance (tau^2 / C each, into *placement_var) as each run's own interval is.
 * Returns 0; 1 when either has fewer than 2 pairs or no interval exists ('s' then unset); or a
 * negative code when out of memory. */
int kt_compare_shift(kt_shift *s, double *placement_var, const kt_candidate_result *old_c,
                     const kt_candidate_result *new_c, double confidence);

/* Fills 'out' for one candidate; 'confidence' is the level of the interval (callers split
 * their error budget across the rows they compare), 'threshold' the noise band (0.01 = 1%).
 * Returns 0, or a negative code when out of memory. */
int kt_compare_candidate(kt_speed_change *out, const kt_candidate_result *old_c,
                         const kt_candidate_result *new_c, double confidence, double threshold);

#endif
