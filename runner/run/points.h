/* points.h - the point loop: each point of the run's shard in the matrix's order, reused from
 * --resume or measured with the isolation its kind of arm declares (kt_measure_point: a kernel
 * spec's in a forked worker, a command spec's in this process), archived to points.jsonl as it
 * finishes; it stops at the budget, a signal, a killed worker or a failed archive. */
#ifndef KT_RUN_POINTS_H
#define KT_RUN_POINTS_H

#include "run/run.h"

/* Fills st->run.points and frees st->done. 0, KT_EIO when the archive failed, or another
 * negative code when a point could not be run (message set). */
int kt_run_points(kt_run *st);

#endif
