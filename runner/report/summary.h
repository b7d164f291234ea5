/* summary.h - the summary table: per point and candidate, then a line per candidate, then
 * the overall state of the run, in words a newcomer reads right. */
#ifndef KT_SUMMARY_H
#define KT_SUMMARY_H

#include "report/facts.h"

#include <stdio.h>

void kt_print_summary(FILE *out, const kt_run_result *run, const kt_summary_facts *facts);

/* The usage lines: per point and arm, what the profiling pass measured; costs per million
 * tokens; and once, the counters this machine cannot give with the reason. 'virtual_clock'
 * (the sim backend): the medians are virtual time, the usage lines the host's real work, and
 * the header says so. */
void kt_print_usage(FILE *out, const kt_run_result *run, int virtual_clock);
/* The serving lines (serving_lines.c): per point with served arms, each arm's startup, cold
 * request, p50/p90/p99 with intervals, throughput, errors, memory and CPU, a candidate's
 * ratios, and the tasks whose answers changed. Nothing for other results. */
void kt_print_serving(FILE *out, const kt_run_result *run);
/* One served arm's figures as one line of text ("baseline: startup 1.76 s, cold ...") for the
 * markdown, JUnit and HTML writers. Returns 'buf'. */
const char *kt_serving_text(char *buf, size_t len, const kt_arm_result *a);

/* Share of disturbed pairs above which the summary warns. */
#define KT_NOISY_SHARE_WARN 0.25

#endif
