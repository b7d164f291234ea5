/* points.c - the point loop (see points.h). */
#include "run/points.h"

#include "archive/command_archive.h"
#include "archive/run_archive.h"
#include "measure/worker.h"
#include "run/budget.h"
#include "run/exit_code.h"
#include "run/progress.h"
#include "run/signals.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The start-up watchdog: the spec's trials.max_startup_seconds, else 120 s or 20 times the
 * plan's start-up estimate for the point, whichever is longer. */
static double startup_limit(const kt_spec *spec, const kt_point *pt)
{
    if (!isnan(spec->max_startup_seconds))
        return spec->max_startup_seconds;
    return fmax(120.0, 20.0 * kt_plan_startup_seconds(spec, pt));
}

/* the files a kind of arm keeps for review (a command's outputs and failure details) go under
 * the run folder */
static int keep_arm_file(void *ctx, const char *point_id, const char *arm, const char *name,
                         const char *src, const char *text)
{
    const kt_run *st = ctx;
    int rc = kt_command_archive_keep(st->dir, point_id, arm, name, src, text);
    if (rc < 0)
        fprintf(stderr, "warning: cannot keep '%s' of '%s' at %s: %s\n", name, arm, point_id,
                kt_error_last());
    return rc;
}

int kt_run_points(kt_run *st)
{
    kt_point_result *done = st->done;
    size_t n_done = st->n_done;
    size_t n = st->matrix->n;
    st->run.points = calloc(n ? n : 1, sizeof(*st->run.points));
    if (!st->run.points)
        return kt_error_set("out of memory");
    st->n_todo = kt_run_shard_size(st);
    kt_run_plan(st, done, n_done);
    st->start_s = kt_run_now_s();
    kt_worker_options wo = {st->spec->backend,
                            kt_run_threads(st->spec),
                            st->opt.quick,
                            fmax(120.0, 5.0 * st->spec->max_seconds_per_point),
                            0,
                            &kt_run_got_signal,
                            st->tty ? kt_run_show_progress : NULL,
                            st->tty ? NULL : kt_run_note_measuring,
                            st,
                            st->opt.no_profile};
    int rc = 0;
    double estimated_done = 0, measured_done = 0;
    for (size_t i = 0; i < n && !st->interrupted; i++) {
        if (!kt_run_in_shard(st, i))
            continue;
        const kt_point *pt = &st->matrix->points[i];
        kt_point_result *slot = &st->run.points[st->run.n_points];
        int d = kt_run_find_point(done, n_done, pt->id);
        if (d >= 0) {
            *slot = done[d];
            memset(&done[d], 0, sizeof(done[d]));
            st->run.n_points++;
            st->point_index++;
            continue;
        }
        if (kt_run_over_budget(st)) {
            st->over_budget = 1;
            st->not_run = st->n_todo - st->point_index;
            fprintf(stderr,
                    "budget: %.1f min passed budget.max_minutes = %g; %zu point%s not run "
                    "(--force runs past the budget; --resume continues)\n",
                    (kt_run_now_s() - st->start_s) / 60.0, st->spec->budget_minutes, st->not_run,
                    st->not_run == 1 ? "" : "s");
            break;
        }
        st->current_id = pt->id;
        wo.startup_timeout_s = startup_limit(st->spec, pt);
        double point_start = kt_run_now_s();
        if (st->tty)
            kt_run_show_progress(st, 0, st->spec->max_repetitions);
        else
            kt_run_note_point_start(st);
        if (kt_measure_point(slot, st->spec, pt, &wo, keep_arm_file) < 0) {
            rc = kt_error_set("point '%s': %s", pt->id, kt_error_last());
            break;
        }
        /* re-estimate what is left from how far off the plan was so far */
        estimated_done += st->plan.point_seconds[i];
        measured_done += kt_run_now_s() - point_start;
        st->left_estimate_s -= st->plan.point_seconds[i];
        if (!st->tty)
            kt_run_note_point_end(st, slot, kt_run_now_s() - point_start,
                                  kt_run_time_left(st, estimated_done, measured_done));
        st->run.n_points++;
        st->point_index++;
        if (strcmp(slot->stop_reason, "killed") == 0) {
            /* not the candidates' fault, and not measured: kept in result.json, not in
             * points.jsonl, so --resume measures it again */
            char flags[64];
            rc = kt_error_set("point '%s': %s; continue with --resume %s%s", pt->id, slot->error,
                              st->dir,
                              kt_resume_flags(flags, sizeof(flags), st->opt.shard_index,
                                              st->opt.shard_count, st->opt.quick));
            break;
        }
        if (strcmp(slot->stop_reason, "interrupted") == 0) {
            /* cut short: its pairs stay in result.json, but it has no verdict and is not in
             * points.jsonl, so --resume measures it again from the start */
            if (!slot->error[0])
                snprintf(slot->error, sizeof(slot->error), "interrupted after %d pair%s",
                         slot->repetitions, slot->repetitions == 1 ? "" : "s");
            kt_point_result_mark_unmeasured(slot, st->spec, pt);
            st->interrupted = 1;
            break;
        }
        kt_samples_ids ids = kt_run_samples_ids(st);
        if (kt_run_archive_point(st->dir, slot, st->spec, &ids) < 0) {
            rc = KT_EIO; /* the archive, not the measurement, failed */
            break;
        }
        st->n_archived++;
        if (kt_run_got_signal) { /* the point finished before the signal stopped it: archived */
            st->interrupted = 1;
            break;
        }
    }
    st->elapsed_s = kt_run_now_s() - st->start_s;
    if (st->tty)
        fprintf(stderr, "\r\033[K");
    for (size_t i = 0; i < n_done; i++)
        kt_point_result_free(&done[i]);
    free(done);
    st->done = NULL;
    st->n_done = 0;
    return rc;
}
