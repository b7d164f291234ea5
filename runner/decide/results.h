/* results.h - a run's results: per-point JSON (points.jsonl and result.json share it), the
 * per-candidate and overall verdicts, and the summary table. */
#ifndef KT_RESULTS_H
#define KT_RESULTS_H

#include "spec/spec.h"
#include "measure/trial.h"

#include <cjson/cJSON.h>
#include <stdio.h>

#define KT_RESULT_SCHEMA_VERSION 1

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
    int point_errors; /* points whose baseline or set-up failed */
    int order_warnings;
} kt_run_result;

cJSON *kt_point_result_to_json(const kt_point_result *p, const kt_spec *spec);
/* Reads a point back (for --resume, show and compare). Returns 0 or -1 when malformed. */
int kt_point_result_from_json(kt_point_result *out, const cJSON *json);

/* Per-candidate verdicts by spec->aggregate, and the overall verdict. */
int kt_run_aggregate(kt_run_result *run, const kt_spec *spec);
cJSON *kt_candidate_verdicts_to_json(const kt_run_result *run);
void kt_run_result_free(kt_run_result *run);

/* The exit code of a finished run: 70 when a point could not be measured, else by verdict. */
int kt_run_exit_code(const kt_run_result *run);

/* The summary table: per point and candidate, then a line per candidate, then overall. */
void kt_print_summary(FILE *out, const kt_run_result *run, const char *baseline_name,
                      const char *aggregate, double min_speedup);

#endif
