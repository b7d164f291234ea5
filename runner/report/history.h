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

/* A change smaller than this (in speedup, relative) is noise whatever its p-value. */
#define KT_HISTORY_NOISE 0.01

/* The change at archive 'r' of the series (point, cand) against the previous archive that
 * has it: 1 with *ch set, 0 where there is none. */
int kt_history_change_at(kt_history_change *ch, const kt_history *h, size_t r, const char *point,
                         const char *cand);

/* The string at 'path' of an archive's result.json, "" where there is none. */
const char *kt_history_str(const cJSON *doc, const char *path);

/* Every (point, candidate) that some archive has, in first-seen order: the series. */
#define KT_HISTORY_SERIES 1024
typedef struct kt_history_series {
    char points[KT_HISTORY_SERIES][KT_NAME_MAX * 2];
    char cands[KT_HISTORY_SERIES][KT_NAME_MAX];
    size_t n;
} kt_history_series;
/* The series of 'h', allocated (free() it), or NULL when out of memory. */
kt_history_series *kt_history_series_new(const kt_history *h);

/* Its writers (the text, JSON and HTML chart of 'history') are rows of report/writers.h. */

#endif
