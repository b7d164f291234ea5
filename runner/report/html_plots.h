/* html_plots.h - the SVG figures of the HTML report, each written inline into the page. */
#ifndef KT_HTML_PLOTS_H
#define KT_HTML_PLOTS_H

#include "report/report.h"

#include <stdio.h>

/* Every candidate's speedup at every point of 'n' archives with its interval, against 1 and
 * min_speedup, on a log scale. */
void kt_html_forest_plot(FILE *f, const kt_report_input *in, size_t n);

/* The times of every timed call of each arm at a point, as boxes with their calls. */
void kt_html_distribution_plot(FILE *f, const kt_point_result *pt);

/* A candidate's paired log ratios in run order, its estimate, min_speedup and the looks. */
void kt_html_series_plot(FILE *f, const kt_report_input *in, const kt_candidate_result *c);

#endif
