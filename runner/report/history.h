/* history.h - an experiment's archives across commits, and where its results changed. */
#ifndef KT_HISTORY_H
#define KT_HISTORY_H

#include "report/report.h"

typedef struct kt_history {
    kt_report_input *runs; /* complete archives of the experiment, by commit time */
    size_t n;
    size_t skipped;       /* folders with a result.json that could not be read */
    char first_skip[512]; /* the first of them and why */
    size_t unfinished;    /* the experiment's archives left out as not complete (interrupted,
                           * over budget, killed or still running) */
} kt_history;

/* Loads every complete archive of 'experiment' directly under 'results_dir'. */
int kt_history_load(kt_history *h, const char *results_dir, const char *experiment);
void kt_history_free(kt_history *h);

/* A candidate at a point in one archive, or NULL. */
const kt_candidate_result *kt_history_find(const kt_report_input *in, const char *point,
                                           const char *candidate);

/* How a candidate's result at a point moved from 'before' to 'after'. */
typedef struct kt_history_change {
    int verdict_changed;
    double shift, ci_low, ci_high; /* two-sample HL of the log ratios, after - before */
    double p_value;
    int significant; /* the 95% interval excludes 0 and the change is above the noise level */
} kt_history_change;

int kt_history_compare(kt_history_change *out, const kt_candidate_result *before,
                       const kt_candidate_result *after);

/* Its writers (the text, JSON and HTML chart of 'history') are rows of report/writers.h. */

#endif
