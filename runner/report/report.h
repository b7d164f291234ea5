/* report.h - an archive as the reports read it (the HTML report, its history across commits,
 * the CI formats): loaded from its folder, with its label. The writers are in writers.h. */
#ifndef KT_REPORT_H
#define KT_REPORT_H

#include "archive/seal.h"
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
    kt_problems problems;      /* what its check found (archive/archive_check.h) */
} kt_report_input;

/* Loads an archive from its folder or its result.json, checked and its verdicts decided again
 * from its pairs ('problems' lists what disagreed). Returns 0 or -1 with the message set. */
int kt_report_load(kt_report_input *in, const char *path);
void kt_report_input_free(kt_report_input *in);

/* The label of an archive in plots and tables: "<short commit> <start time>". */
void kt_report_label(char *out, size_t len, const kt_report_input *in);

#endif
