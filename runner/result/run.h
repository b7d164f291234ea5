/* run.h - a run's results: its points, the verdict of each candidate over the points
 * (decide/aggregate.c fills it by the spec's aggregate), and the run's overall verdict; and
 * the read-only questions the writers and readers ask of them. */
#ifndef KT_RUN_H
#define KT_RUN_H

#include "result/point.h"
#include "result/verdict.h"
#include "spec/spec.h"

typedef struct kt_candidate_verdict {
    char name[KT_NAME_MAX];
    char variant[KT_NAME_MAX];
    kt_verdict verdict;
    int keep, reject, inconclusive; /* point verdicts */
    double geomean_speedup, geomean_low, geomean_high;
    char reason[512];
} kt_candidate_verdict;

typedef struct kt_run_result {
    kt_point_result *points;
    size_t n_points;
    kt_candidate_verdict *cands;
    size_t n_cands;
    kt_verdict verdict;
    int point_errors; /* points whose baseline or set-up failed (kt_point_failed) */
    int order_warnings;
    int set_warnings;   /* candidate points whose input sets disagree (set_effect) */
    int state_warnings; /* candidate points with a prepared state far off its arm's others */
    /* candidate points where thresholds.energy.max_ratio was set but had no energy figure of
     * both arms to check (the profiling pass off, or no energy meter) */
    int energy_unchecked;
} kt_run_result;

/* Whether point 'p' was cut short by an interrupt: not archived point by point, measured
 * again by --resume, and no figure to compare. */
int kt_point_cut_short(const kt_point_result *p);
/* Whether point 'p' failed (its baseline or set-up; 1) rather than finished or was cut short
 * by an interrupt (0). */
int kt_point_failed(const kt_point_result *p);
/* The points of 'run' that finished (not cut short by an interrupt: those are not archived
 * point by point, and --resume measures them again). */
size_t kt_run_finished_points(const kt_run_result *run);
/* Whether candidate 'k' of point 'p' enters its geometric mean: the point finished and the
 * candidate has a finite speedup interval with a known coverage. */
int kt_point_in_geomean(const kt_point_result *p, size_t k);

/* Candidate points of 'run' that an energy limit 'max_ratio' (NAN: none) could not judge: the
 * point and the candidate measured, but no energy ratio. */
int kt_run_energy_unchecked(const kt_run_result *run, double max_ratio);

void kt_run_result_free(kt_run_result *run);

#endif
