/* summary.h - the summary table: per point and candidate, then a line per candidate, then
 * the overall verdict. */
#ifndef KT_SUMMARY_H
#define KT_SUMMARY_H

#include "decide/aggregate.h"

#include <stdio.h>

void kt_print_summary(FILE *out, const kt_run_result *run, const char *baseline_name,
                      const char *aggregate, double min_speedup);

/* The usage lines: per point and arm, what the profiling pass measured; costs per million
 * tokens; and once, the counters this machine cannot give with the reason. */
void kt_print_usage(FILE *out, const kt_run_result *run);

/* Share of disturbed pairs above which the summary warns. */
#define KT_NOISY_SHARE_WARN 0.25

#endif
