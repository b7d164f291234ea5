/* budget.c - the run's plan, its shard and its budget (see budget.h). */
#include "run/budget.h"

#include "arm/arm.h"
#include "run/progress.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* Seconds the points after the current one should take: the plan's estimate for them
 * scaled by how far off it was so far, or, without a plan (command specs, or a plan of
 * zero), the mean time of the points measured so far. */
double kt_run_time_left(const kt_run *st, double estimated_done, double measured_done)
{
    if (estimated_done > 0 && isfinite(st->left_estimate_s))
        return fmax(0, st->left_estimate_s) * measured_done / estimated_done;
    size_t done = st->point_index + 1;
    return measured_done / (double)done * (double)(st->n_todo - done);
}

/* The plan of the points this run will measure (--quick's cap applied), and a line saying
 * it on stderr. */
void kt_run_plan(kt_run *st, const kt_point_result *done, size_t n_done)
{
    kt_spec capped = *st->spec;
    if (st->opt.quick && capped.max_repetitions > KT_QUICK_MAX_REPETITIONS)
        capped.max_repetitions = KT_QUICK_MAX_REPETITIONS;
    if (capped.min_repetitions > capped.max_repetitions)
        capped.min_repetitions = capped.max_repetitions;
    if (kt_plan_estimate(&st->plan, &capped, st->matrix) < 0)
        return; /* the spec's own check estimated it already: out of memory only */
    size_t n = 0;
    for (size_t i = 0; i < st->matrix->n; i++) {
        if (!kt_run_in_shard(st, i) ||
            kt_run_find_point(done, n_done, st->matrix->points[i].id) >= 0)
            continue;
        st->estimate_s += st->plan.point_seconds[i];
        n++;
    }
    /* a kind that prices its calls by making them (a command) has no estimate before a point */
    int calibrated = kt_arm_kind_of(st->spec)->calibrate != NULL;
    if (calibrated)
        st->estimate_s = NAN;
    st->left_estimate_s = st->estimate_s;
    if (st->opt.json)
        return;
    if (calibrated)
        fprintf(stderr,
                "plan: %zu point%s to measure, estimate after the first point (`ktrial "
                "validate --plan` calls each arm once to price a command spec)",
                n, n == 1 ? "" : "s");
    else
        fprintf(stderr, "plan: %zu point%s to measure, estimate %.*f s", n, n == 1 ? "" : "s",
                kt_run_estimate_decimals(st->estimate_s), st->estimate_s);
    if (!isnan(st->spec->budget_minutes))
        fprintf(stderr, " (budget %g min)", st->spec->budget_minutes);
    fputc('\n', stderr);
}

/* Past budget.max_minutes (and not --force): start no new point. */
int kt_run_over_budget(const kt_run *st)
{
    return !isnan(st->spec->budget_minutes) && !st->opt.force &&
           kt_run_now_s() - st->start_s > st->spec->budget_minutes * 60.0;
}

size_t kt_run_shard_size(const kt_run *st)
{
    size_t todo = 0;
    for (size_t i = 0; i < st->matrix->n; i++)
        todo += (size_t)kt_run_in_shard(st, i);
    return todo;
}
