/* progress.h - what a run says while it measures, on stderr: on a terminal one live line
 * (point, pairs, elapsed, ETA); without one (a pipe, CI) a line when a point starts, one when
 * its timed pairs start, and one with its verdicts when it ends. */
#ifndef KT_RUN_PROGRESS_H
#define KT_RUN_PROGRESS_H

#include "run/run.h"

/* Decimals of an estimate on a progress line: one under 10 s, else none. */
int kt_run_estimate_decimals(double seconds);

/* Seconds on the monotonic clock. */
double kt_run_now_s(void);

/* The live line ('ctx': the kt_run), after 'reps' of at most 'max_reps' pairs. */
void kt_run_show_progress(void *ctx, int reps, int max_reps);

/* "[i/n] POINT: timed pairs" ('ctx': the kt_run). */
void kt_run_note_measuring(void *ctx);

/* "[i/n] POINT: start-up (...)". */
void kt_run_note_point_start(const kt_run *st);

/* "[i/n] POINT verdicts, seconds; estimate left". */
void kt_run_note_point_end(const kt_run *st, const kt_point_result *r, double seconds,
                           double left_s);

#endif
