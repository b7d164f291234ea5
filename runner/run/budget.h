/* budget.h - the plan of a run and its budget: which points this run measures (its shard, less
 * those --resume reuses), the plan's estimate for them (--quick's cap applied), what is left
 * as the points finish, and budget.max_minutes, past which no new point starts. */
#ifndef KT_RUN_BUDGET_H
#define KT_RUN_BUDGET_H

#include "run/run.h"

/* Sets st->plan and the estimates for the shard's points not in 'done', and says the plan in
 * one line on stderr (not under --json). */
void kt_run_plan(kt_run *st, const kt_point_result *done, size_t n_done);

/* Past budget.max_minutes (and not --force): start no new point. */
int kt_run_over_budget(const kt_run *st);

/* The points of the run's shard. */
size_t kt_run_shard_size(const kt_run *st);

/* Seconds the points after the current one should take, from the plan's estimate scaled by
 * how far off it was so far ('estimated_done' against 'measured_done'). */
double kt_run_time_left(const kt_run *st, double estimated_done, double measured_done);

#endif
