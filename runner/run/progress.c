/* progress.c - the run's progress lines on stderr (see progress.h). */
#include "run/progress.h"

#include "arm/arm.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* Decimals of an estimate on a progress line: whole seconds, one decimal under 10 s ("0.4 s",
 * never "0 s" for a plan that takes some time). */
int kt_run_estimate_decimals(double seconds)
{
    return seconds < 10 ? 1 : 0;
}

double kt_run_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void kt_run_show_progress(void *ctx, int reps, int max_reps)
{
    kt_run *st = ctx;
    double elapsed = kt_run_now_s() - st->start_s;
    double per_point = st->point_index ? elapsed / (double)st->point_index : 0;
    double eta = per_point * (double)(st->n_todo - st->point_index);
    fprintf(stderr, "\r\033[Kpoint %zu/%zu  %-32.32s  pairs %d/%d  %.0fs elapsed",
            st->point_index + 1, st->n_todo, st->current_id ? st->current_id : "", reps, max_reps,
            elapsed);
    if (st->point_index)
        fprintf(stderr, "  ETA %.0fs", eta);
    fflush(stderr);
}

/* Without a terminal (a pipe, CI): one line when a point starts, one when its timed pairs
 * start, and one with its verdicts when it ends, all on stderr. */
void kt_run_note_measuring(void *ctx)
{
    kt_run *st = ctx;
    fprintf(stderr, "[%zu/%zu] %s: timed pairs\n", st->point_index + 1, st->n_todo, st->current_id);
    fflush(stderr);
}

void kt_run_note_point_start(const kt_run *st)
{
    fprintf(stderr, "[%zu/%zu] %s: start-up (%s)\n", st->point_index + 1, st->n_todo,
            st->current_id, kt_arm_kind_of(st->spec)->startup);
    fflush(stderr);
}

void kt_run_note_point_end(const kt_run *st, const kt_point_result *r, double seconds,
                           double left_s)
{
    fprintf(stderr, "[%zu/%zu] %s", st->point_index + 1, st->n_todo, r->point.id);
    int pairs = r->repetitions;
    if (r->error[0])
        fprintf(stderr, " not measured: %s", r->error);
    else if (strcmp(r->stop_reason, "interrupted") == 0) /* no verdict: --resume measures it */
        fprintf(stderr, " interrupted after %d pair%s, no verdict", pairs, pairs == 1 ? "" : "s");
    else
        for (size_t k = 0; k < r->n_cands; k++) {
            const kt_candidate_result *c = &r->cands[k];
            fprintf(stderr, "%s %s %s", k ? ";" : "", c->arm.name, kt_verdict_name(c->verdict));
            if (c->n_pairs > 0 && isfinite(c->speedup))
                fprintf(stderr, " %.2fx after %zu pair%s", c->speedup, c->n_pairs,
                        c->n_pairs == 1 ? "" : "s");
        }
    fprintf(stderr, ", %.1f s", seconds);
    if (st->point_index + 1 < st->n_todo)
        fprintf(stderr, "; estimate %.*f s left", kt_run_estimate_decimals(left_s), left_s);
    fputc('\n', stderr);
    fflush(stderr);
}
