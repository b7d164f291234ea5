/* profile.h - per-stage profiles of staged variants (decoder_layer): what each arm's timed calls
 * spent in each stage, the shares, and for a candidate the stage speedups next to the
 * end-to-end speedup with the Amdahl bound each stage's share implies.
 *
 * Shares use means (they add up: the mean of a sum is the sum of the means); the verdict stays
 * on the end-to-end paired statistics. 'other' is the end-to-end time outside every stage
 * (the clock reads, the call's dispatch). */
#ifndef KT_PROFILE_H
#define KT_PROFILE_H

#include "kernel.h"

#include <cjson/cJSON.h>
#include <stdio.h>

typedef struct kt_stage_stats {
    int n_stages; /* 0: the variant reports no stages */
    char names[KT_MAX_STAGES][24];
    double sum_ns[KT_MAX_STAGES];
    double sum_total_ns; /* end-to-end time of the same calls (the backend's timer) */
    int calls;
} kt_stage_stats;

/* Adds one timed call's profile; calls whose stages differ from the first are not counted. */
void kt_stage_stats_add(kt_stage_stats *s, const kt_stage_profile *p, double total_ns);

double kt_stage_mean_ns(const kt_stage_stats *s, int i);
/* Mean stage time over mean end-to-end time; i == n_stages gives 'other'. */
double kt_stage_share(const kt_stage_stats *s, int i);

/* The end-to-end speedup 1 / ((1 - f) + f / speedup) that speeding one stage of share f up by
 * 'speedup' allows, all else unchanged. */
double kt_amdahl_bound(double share, double speedup);

/* {calls, mean_ns, stages: [{name, mean_ns, share}], other_ns, other_share}, or NULL. */
cJSON *kt_stage_stats_to_json(const kt_stage_stats *s);
void kt_stage_stats_from_json(kt_stage_stats *s, const cJSON *json);
/* For a candidate: {end_to_end_speedup, stages: [{name, speedup, baseline_share,
 * amdahl_bound, amdahl_limit}]}, or NULL when either arm has no profile. */
cJSON *kt_stage_compare_json(const kt_stage_stats *base, const kt_stage_stats *cand);

/* Summary lines: the baseline's and the candidate's shares, then the stage speedups. */
void kt_stage_print(FILE *out, const kt_stage_stats *base, const char *base_name,
                    const kt_stage_stats *cand, const char *cand_name);

#endif
