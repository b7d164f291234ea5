/* run.c - the run engine's order of steps (see run.h): load and check the spec, check git, the
 * shard, --quick and memory, take the folder, resume, start the archive, measure the points,
 * and write result.json as the run ended; and the run's own sections of that document. */
#include "run/run.h"

#include "archive/archive.h"
#include "archive/provenance_plugin.h"
#include "archive/run_archive.h"
#include "measure/calibrate_bandwidth.h"
#include "run/budget.h"
#include "run/checks.h"
#include "run/exit_code.h"
#include "run/folder.h"
#include "run/limits.h"
#include "run/points.h"
#include "result/result_doc.h"
#include "run/resume.h"
#include "run/signals.h"
#include "util/sha256.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Interrupted: 130. A shard's verdict is not the experiment's: a shard that measured its
 * points exits 0, so a scheduler's 'afterok' dependency starts the merge, which forms the
 * verdict. Over budget: the points not run leave the answer open (2), unless a measured
 * point already rejected a candidate (1); a shard over budget exits 2. */
int kt_run_outcome_code(const kt_run *st)
{
    return kt_run_ended_exit_code(&st->run,
                                  st->interrupted   ? "interrupted"
                                  : st->over_budget ? "over_budget"
                                                    : "complete",
                                  st->opt.shard_count);
}

/* provenance: the code, the device, the plugins, and how this run ran (its sessions). */
static cJSON *run_provenance(const kt_run *st, time_t finished)
{
    cJSON *prov = kt_provenance_json(&st->git);
    kt_device_info info;
    const kt_backend_iface *iface = kt_backend_find(st->spec->backend);
    iface->probe(&info);
    cJSON_AddItemToObject(prov, "device", kt_provenance_device_json(st->spec->backend, &info));
    if (st->spec->n_plugins)
        cJSON_AddItemToObject(prov, "plugins", kt_provenance_plugins_json(st->spec));
    if (st->limits)
        cJSON_AddItemToObject(prov, "limits", cJSON_Duplicate(st->limits, 1));
    /* the checks every call got, and the bandwidth the roofline used (measured here, before
     * the workers start, so each inherits it) */
    cJSON *checks = cJSON_AddObjectToObject(prov, "checks");
    cJSON *ran = cJSON_AddArrayToObject(checks, "ran");
    const char *const *names = kt_checks_ran(st->spec);
    for (int i = 0; names && names[i]; i++)
        cJSON_AddItemToArray(ran, cJSON_CreateString(names[i]));
    char line[512];
    kt_checks_line(line, sizeof(line), st->spec);
    cJSON_AddStringToObject(checks, "line", line);
    const char *why = NULL;
    const kt_read_bandwidth *bw = names ? kt_read_bandwidth_for(st->spec->backend, &why) : NULL;
    cJSON *roof = bw ? cJSON_AddObjectToObject(checks, "read_bandwidth")
                     : cJSON_AddNullToObject(checks, "read_bandwidth");
    if (bw) {
        cJSON_AddStringToObject(roof, "source", bw->source);
        cJSON_AddNumberToObject(roof, "margin", KT_ROOFLINE_MARGIN);
        cJSON *sizes = cJSON_AddArrayToObject(roof, "gbs_per_thread");
        for (int i = 0; i < bw->n; i++) {
            cJSON *e = cJSON_CreateObject();
            cJSON_AddNumberToObject(e, "bytes", bw->bytes[i]);
            cJSON_AddNumberToObject(e, "gbs", bw->gbs[i]);
            cJSON_AddItemToArray(sizes, e);
        }
    }
    cJSON *run = kt_provenance_add_run(prov, st->started, finished, st->argc, st->argv);
    cJSON *seeds = cJSON_AddObjectToObject(run, "seeds");
    kt_json_add_real(seeds, "inputs", (double)st->spec->seed);
    cJSON_AddStringToObject(seeds, "derivation",
                            "per point: mix(inputs.seed, hash(point id)); input set s and the "
                            "order coin mix that with s and a constant");
    cJSON_AddBoolToObject(run, "quick", st->opt.quick);
    cJSON_AddNumberToObject(run, "quick_max_repetitions", KT_QUICK_MAX_REPETITIONS);
    char shard[32];
    snprintf(shard, sizeof(shard), "%d/%d", st->opt.shard_index, st->opt.shard_count);
    cJSON_AddStringToObject(run, "shard", shard);
    cJSON_AddBoolToObject(run, "resumed", st->opt.resume_dir != NULL);
    cJSON_AddNumberToObject(run, "threads", kt_run_threads(st->spec));
    cJSON_AddStringToObject(run, "id", st->run_id);
    cJSON *specs = kt_run_specs_json(st);
    if (specs)
        cJSON_AddItemToObject(run, "specs", specs);
    cJSON *sessions = st->sessions ? cJSON_Duplicate(st->sessions, 1) : cJSON_CreateArray();
    if (sessions) {
        cJSON_AddItemToArray(sessions,
                             kt_provenance_session_json(&st->git, st->started, finished, st->argc,
                                                        st->argv, (double)st->n_archived));
        cJSON_AddItemToObject(run, "sessions", sessions);
    }
    return prov;
}

/* timing: this run's, not the verdict's. */
static cJSON *run_timing(const kt_run *st)
{
    cJSON *timing = cJSON_CreateObject();
    cJSON_AddNumberToObject(timing, "not_run", (double)st->not_run);
    if (!isnan(st->spec->budget_minutes))
        kt_json_add_real(timing, "budget_seconds", st->spec->budget_minutes * 60.0);
    kt_json_add_real(timing, "estimate_seconds", st->estimate_s);
    kt_json_add_real(timing, "elapsed_seconds", st->elapsed_s);
    return timing;
}

static int write_result(kt_run *st, const char *status, time_t finished)
{
    int ended = strcmp(status, "running") != 0 && strcmp(status, "failed") != 0;
    kt_result_parts parts = {status,
                             &st->run,
                             st->spec,
                             ended ? kt_run_outcome_code(st) : 0,
                             NULL,
                             kt_result_spec_json(st->spec, st->spec_sha),
                             run_provenance(st, finished),
                             run_timing(st),
                             NULL};
    return kt_result_write(st->dir, kt_result_document(&parts), NULL);
}

static int start_archive(kt_run *st)
{
    if (!st->opt.resume_dir &&
        kt_archive_write(st->dir, "spec.yaml", st->spec->bytes, st->spec->len) < 0)
        return -1;
    if (st->git.available && st->git.dirty) {
        if (kt_git_diff_write(&st->git, st->dir, "git.diff") < 0)
            return -1;
    }
    /* a resumed run is running again: its seal no longer holds until it ends */
    return write_result(st, "running", 0);
}

/* The run ended: the git state rechecked, the verdicts formed, result.json written. */
static int finish(kt_run *st)
{
    int changed = 0;
    if (st->git.available)
        kt_git_state_recheck(&changed, &st->git);
    if (st->resumed_other_code) /* the points kept were measured on other code than this */
        st->git.changed_during_run = changed = 1;
    if (changed)
        fprintf(stderr, "warning: the git state changed during the run (recorded as "
                        "changed_during_run)\n");
    kt_run_aggregate(&st->run, st->spec);
    if (st->interrupted) /* the points after the one cut short never started */
        st->not_run = st->n_todo - st->run.n_points;
    st->status = st->interrupted ? "interrupted" : st->over_budget ? "over_budget" : "complete";
    if (write_result(st, st->status, time(NULL)) < 0) {
        fprintf(stderr, "error: %s\n", kt_error_last());
        return KT_EXIT_IOERR;
    }
    return 0;
}

/* The spec loaded and checked, and the folder taken: the points measured and archived. */
static int measure(kt_run *st)
{
    if (start_archive(st) < 0) {
        fprintf(stderr, "error: %s\n", kt_error_last());
        return KT_EXIT_IOERR;
    }
    if (!st->opt.json && st->tty)
        fprintf(stderr, "%s: %zu point%s, %zu candidate%s, backend %s%s\n", st->spec->name,
                st->matrix->n, st->matrix->n == 1 ? "" : "s", st->spec->n_candidates,
                st->spec->n_candidates == 1 ? "" : "s", st->spec->backend,
                st->opt.quick ? " (--quick)" : "");

    kt_run_warn_load(st->spec);
    int points_rc = kt_run_points(st);
    if (points_rc < 0) {
        fprintf(stderr, "error: %s\n", kt_error_last());
        int io = points_rc == KT_EIO;
        io |= write_result(st, "failed", time(NULL)) < 0;
        return io ? KT_EXIT_IOERR : KT_EXIT_SOFTWARE;
    }
    return finish(st);
}

/* From the spec loaded to the folder taken (and resumed). */
static int prepare(kt_run *st, kt_diag *diag)
{
    int rc;
    if ((rc = kt_run_check_backend(st->spec)) != 0)
        return rc;
    if (st->opt.profile)
        st->spec->profile = 1; /* trials.profile is false by default on cuda */
    st->matrix = st->spec->matrix;
    kt_run_flush_diag(diag); /* warnings, the matrix's among them, once */
    if ((rc = kt_run_check_git(st, diag)) != 0)
        return rc;
    kt_sha256_hex(st->spec_sha, st->spec->bytes, st->spec->len);
    if (kt_run_shard_size(st) == 0) {
        fprintf(stderr, "error: shard %d/%d of %zu point%s holds no point; nothing to decide\n",
                st->opt.shard_index, st->opt.shard_count, st->matrix->n,
                st->matrix->n == 1 ? "" : "s");
        return KT_EXIT_DATAERR;
    }
    if ((rc = kt_run_check_quick(st)) != 0 || (rc = kt_run_check_memory(st)) != 0)
        return rc;
    /* from here a signal stops the run between pairs and leaves it resumable */
    if ((rc = kt_run_check_limits(st)) != 0)
        return rc;
    kt_run_signals_during_run();
    if ((rc = kt_run_choose_folder(st)) != 0)
        return rc;
    if (st->opt.resume_dir && (rc = kt_run_resume(st)) != 0)
        return rc;
    return 0;
}

int kt_run_execute(kt_run *st, const kt_run_options *opt, int argc, char **argv)
{
    memset(st, 0, sizeof(*st));
    st->opt = *opt;
    st->argc = argc;
    st->argv = argv;
    st->started = time(NULL);
    kt_run_id_new(st->run_id, st->started);
    st->tty = isatty(STDERR_FILENO) && !st->opt.json; /* the live line; else one per step */

    if (st->opt.backend && strcmp(st->opt.backend, "auto") != 0 &&
        !kt_backend_find(st->opt.backend)) {
        fprintf(stderr, "error: backend '%s' is not built into this ktrial%s\n", st->opt.backend,
                kt_backend_build_hint(st->opt.backend));
        return KT_EXIT_UNAVAILABLE;
    }
    kt_run_signals_before_run(&st->old_int, &st->old_term);
    st->signals_set = 1;
    kt_diag diag;
    kt_diag_init(&diag);
    kt_spec_options so = {st->opt.backend, st->opt.force};
    if (kt_spec_load(&st->spec, st->opt.spec_path, &so, &diag) < 0 || diag.n_errors) {
        kt_diag_print(&diag, stderr);
        kt_diag_free(&diag);
        return KT_EXIT_DATAERR;
    }
    int rc = prepare(st, &diag);
    if (rc == 0)
        rc = measure(st);
    kt_run_flush_diag(&diag);
    kt_diag_free(&diag);
    return rc;
}

void kt_run_free(kt_run *st)
{
    if (st->signals_set)
        kt_run_signals_restore(&st->old_int, &st->old_term);
    st->signals_set = 0;
    for (size_t i = 0; i < st->n_done; i++)
        kt_point_result_free(&st->done[i]);
    free(st->done);
    kt_run_result_free(&st->run);
    kt_plan_free(&st->plan);
    kt_git_state_free(&st->git);
    kt_spec_free(st->spec);
    cJSON_Delete(st->sessions);
    cJSON_Delete(st->specs);
    cJSON_Delete(st->limits);
    memset(st, 0, sizeof(*st));
}
