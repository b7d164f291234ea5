/* limits_lines.h - what a run's provenance.limits says, in the words the summary, 'show' and
 * the HTML report print: the lock the limits were fixed by, a relock, or thresholds that moved
 * after earlier runs had results (written by run/limits_run.c). */
#ifndef KT_REPORT_LIMITS_LINES_H
#define KT_REPORT_LIMITS_LINES_H

#include <cjson/cJSON.h>
#include <stdio.h>

/* Prints the lines for 'limits' (provenance.limits; NULL or nothing to say prints nothing):
 * "limits locked at 1a2b3c4, 2026-01-02T03:04:05Z (spec.yaml.lock)"; "limits relocked ...";
 * "warning: thresholds changed after 2 earlier runs had results (...):" with one line per
 * changed key, "  thresholds.latency.min_speedup: 1.05 -> 1.2". Returns the lines printed. */
int kt_limits_print(FILE *out, const cJSON *limits);

/* The same lines as one malloc'd string, or NULL when there is nothing to say. */
char *kt_limits_string(const cJSON *limits);

#endif
