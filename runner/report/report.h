/* report.h - what people look at: a self-contained HTML report of one or more archives of
 * an experiment, its history across commits, and the CI formats (JUnit XML, markdown). */
#ifndef KT_REPORT_H
#define KT_REPORT_H

#include "decide/aggregate.h"

#include <cjson/cJSON.h>
#include <stdio.h>

/* One archive as the reports read it. */
typedef struct kt_report_input {
    char dir[4096];    /* the archive folder */
    cJSON *doc;        /* its result.json */
    kt_run_result run; /* its points and verdicts */
    int min_reps, max_reps;
    double min_speedup;
    size_t unfinished_not_run; /* a run still 'running': its points not finished */
} kt_report_input;

/* Loads an archive from its folder or its result.json. Returns 0 or -1 with the message set. */
int kt_report_load(kt_report_input *in, const char *path);
void kt_report_input_free(kt_report_input *in);

/* The HTML report of 'n' archives of one experiment: verdict table, forest plot, per point
 * the distribution of each arm's times and the paired log-ratios in run order with the looks
 * marked, numerics per input set, extra metrics, provenance. No script, no network. */
void kt_report_html(FILE *f, const kt_report_input *in, size_t n);

/* JUnit XML: one test case per point and candidate; REJECT is a failure, INCONCLUSIVE a
 * skip, a point that could not be measured an error. */
void kt_report_junit(FILE *f, const kt_report_input *in);
/* A compact markdown table for a pull-request comment. */
void kt_report_markdown(FILE *f, const kt_report_input *in);
/* Writes the JUnit and markdown files named (either may be NULL), and the markdown also to
 * $GITHUB_STEP_SUMMARY when that is set. Returns 0 or -1 with the message set. */
int kt_report_ci_files(const kt_report_input *in, const char *junit, const char *markdown);

/* The label of an archive in plots and tables: "<short commit> <start time>". */
void kt_report_label(char *out, size_t len, const kt_report_input *in);

#endif
