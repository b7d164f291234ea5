/* cells.h - formatting one cell of the summary table (also the reports' and show --json's). */
#ifndef KT_REPORT_CELLS_H
#define KT_REPORT_CELLS_H

#include <stddef.h>
#include <stdio.h>

/* What a cell shows when nothing was measured: "—", never "0 ns" or "nan". */
extern const char *const kt_cell_none;

/* Writes 'text' padded to 'width' display columns (right-aligned when 'right'). */
void kt_cell_put(FILE *out, const char *text, int width, int right);

/* "812 ns", "1.25 us", "17.11 ms", "1.204 s"; "—" for 0, negative or not finite. */
const char *kt_cell_time(char *buf, size_t len, double ns);
/* A median of the pairs' samples: a time (kt_cell_time) when 'metric' is NULL or "wall",
 * else the value of the command's reported metric, "48210" or "812.5": the sample itself,
 * or 1e9 / sample for a metric where 'higher' is better (docs/command-trials.md); "—" for 0,
 * negative or not finite. */
const char *kt_cell_median(char *buf, size_t len, double sample, const char *metric, int higher);
/* "0.012", "<0.001"; "—" when not finite. */
const char *kt_cell_p(char *buf, size_t len, double p);

/* The signed-rank p made comparable with the run's 1 - 'confidence': scaled by the ratio of
 * that alpha to the alpha of the look that decided (1 - 'confidence_used', after the looks'
 * and points' adjustment), capped at 1. Below 1 - confidence means significant at the level
 * the verdict used. */
double kt_p_adjusted(double p, double confidence, double confidence_used);

/* A machine's roofline: peak GFLOP/s and GB/s (from KT_ROOFLINE=GFLOPS:GBPS). */
typedef struct kt_roofline {
    double gflops, gbps; /* NAN when unknown */
} kt_roofline;
/* Parses "GFLOPS:GBPS" (both positive); 0, or -1 with both NAN. */
int kt_roofline_parse(kt_roofline *r, const char *text);

/* "812.3 GFLOP/s" when the op counts flops, else "45.1 GB/s"; with a known 'roof' (may be
 * NULL) the share of the roofline's attainable time, " (43%)"; "—" without a time or counts. */
const char *kt_cell_throughput(char *buf, size_t len, double flops, double bytes, double ns,
                               const kt_roofline *roof);

#endif
