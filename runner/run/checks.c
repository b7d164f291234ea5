/* checks.c - the engine's checks before the run takes a folder (see checks.h). */
#include "run/checks.h"
#include "python/py_variant.h"

#include "arm/arm.h"
#include "decide/sequential.h"
#include "run/exit_code.h"
#include "util/memory.h"
#include "util/version.h"

#include <libgen.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void kt_run_flush_diag(kt_diag *diag)
{
    kt_diag_print(diag, stderr);
    kt_diag_free(diag);
    kt_diag_init(diag);
}

/* The baseline library an arm calls: its variant's, else the choice of an 'engine' param. */
static const char *arm_library(const kt_arm *arm, char *buf, size_t len)
{
    const kt_variant *v = arm->variant;
    int i = kt_param_index(v->params, v->n_params, "engine");
    if (kt_variant_library(v))
        return kt_variant_library(v);
    if (i < 0 || v->params[i].type != KT_PARAM_ENUM)
        return NULL;
    return kt_param_choice_name(buf, len, v->params[i].choices, (int)arm->params[i].num);
}

/* Prints the backend's "<library>_warning" and "<library>_<what>_warning" items (an OpenBLAS
 * running kernels older than the CPU, its threads spinning after a call) for the libraries
 * the spec's arms call, each once. */
static void library_warnings(const kt_spec *spec, const kt_device_info *info)
{
    for (int i = 0; i < info->n; i++) {
        const char *key = info->items[i].key, *suffix = strstr(key, "_warning");
        if (!suffix || suffix[8] != '\0')
            continue;
        for (size_t a = 0; a <= spec->n_candidates; a++) {
            char buf[KT_NAME_MAX];
            const kt_arm *arm = a == 0 ? &spec->baseline : &spec->candidates[a - 1];
            const char *lib = arm_library(arm, buf, sizeof(buf));
            if (lib && strlen(lib) <= (size_t)(suffix - key) &&
                strncmp(key, lib, strlen(lib)) == 0 && key[strlen(lib)] == '_') {
                fprintf(stderr, "warning: %s\n", info->items[i].value);
                break;
            }
        }
    }
}

/* For a spec with Python arms: what the bridge costs per call here, measured in a throwaway
 * child for each framework the arms use (an empty function over 3 tensors); it is part
 * of every timed call of those arms. */
static void python_note(const kt_spec *spec)
{
    int used[2] = {0, 0};
    for (size_t a = 0; a <= spec->n_candidates; a++) {
        const kt_arm *arm = a == 0 ? &spec->baseline : &spec->candidates[a - 1];
        if (arm->variant && kt_py_is_variant(arm->variant))
            used[kt_py_variant_framework(arm->variant)] = 1;
    }
    for (int fw = 0; fw < 2; fw++) {
        if (!used[fw])
            continue;
        double ns = kt_py_bridge_cost_ns((kt_py_framework)fw, 3);
        if (isfinite(ns))
            fprintf(stderr,
                    "note: Python arms (%s): the bridge costs %.2f us per call on this machine "
                    "(an empty function over 3 tensors; part of every timed call of those arms)\n",
                    kt_py_framework_name((kt_py_framework)fw), ns / 1e3);
    }
}

int kt_run_check_backend(const kt_spec *spec)
{
    const kt_backend_iface *iface = kt_backend_find(spec->backend);
    if (!iface) {
        fprintf(stderr, "error: backend '%s' is not built into this ktrial%s\n", spec->backend,
                kt_backend_build_hint(spec->backend));
        return KT_EXIT_UNAVAILABLE;
    }
    kt_device_info info;
    if (iface->probe(&info) < 0 || !info.available) {
        fprintf(stderr, "error: backend '%s' is unavailable: %s\n", spec->backend, info.reason);
        return KT_EXIT_UNAVAILABLE;
    }
    library_warnings(spec, &info);
    python_note(spec);
    if (strcmp(spec->backend_requested, "auto") == 0 && iface == kt_backend_auto(KT_AUTO_HOST)) {
        const kt_backend_iface *cuda = kt_backend_auto(KT_AUTO_DEVICE);
        kt_device_info ci;
        if (!cuda)
            fprintf(stderr, "notice: backend auto: this ktrial was built without CUDA; "
                            "using the cpu backend\n");
        else if (cuda->probe(&ci) < 0 || !ci.available)
            fprintf(stderr, "notice: backend auto: %s; using the cpu backend\n", ci.reason);
    }
    return 0;
}

static void spec_dir(char *out, size_t len, const char *spec_path)
{
    char copy[PATH_MAX];
    snprintf(copy, sizeof(copy), "%s", spec_path);
    snprintf(out, len, "%s", dirname(copy));
}

static int refuse_dirty(const kt_git_state *git)
{
    if (!git->available)
        fprintf(stderr, "error: --require-clean: cannot tell whether the tree is clean: %s\n",
                git->reason ? git->reason : "no git repository");
    else
        fprintf(stderr,
                "error: --require-clean: the work tree '%s' is dirty (%d staged, %d unstaged, "
                "%d untracked); commit or stash the changes\n",
                git->workdir ? git->workdir : ".", git->staged, git->unstaged, git->untracked);
    return KT_EXIT_DATAERR;
}

/* The result records both the binary's commit and the code's: say when they differ, which
 * means the binary was not rebuilt after a commit or checkout. */
static void warn_stale_binary(const kt_git_state *git)
{
    if (!git->available || !git->workdir || strcmp(git->workdir, kt_build_source_dir()) != 0)
        return; /* the spec lives outside the tree this binary was built from */
    if (strcmp(git->commit, kt_build_commit()) != 0)
        fprintf(stderr,
                "warning: this ktrial was built from commit %.12s but the code is at %.12s; "
                "rebuild (cmake --build build) so the result names the code that ran\n",
                kt_build_commit(), git->commit);
    else if (git->dirty && !kt_build_dirty())
        fprintf(stderr, "warning: the tree has uncommitted changes this ktrial was not built "
                        "with; rebuild (cmake --build build) before trusting the result\n");
}

int kt_run_check_git(kt_run *st, kt_diag *diag)
{
    char dir[PATH_MAX];
    spec_dir(dir, sizeof(dir), st->opt.spec_path);
    kt_git_state_collect(&st->git, dir, diag);
    kt_run_flush_diag(diag);
    warn_stale_binary(&st->git);
    if (st->opt.require_clean && (!st->git.available || st->git.dirty))
        return refuse_dirty(&st->git);
    return 0;
}

size_t kt_run_load_message(char *buf, size_t len, double load, long cores, int threads)
{
    buf[0] = '\0';
    double free_cores = cores > threads ? (double)(cores - threads) : 0.0;
    if (!(load > free_cores + 1))
        return 0;
    char what[160];
    if (threads <= 0) /* the arms' own programs: ktrial sets no threads */
        snprintf(what, sizeof(what), "this machine has %ld core(s)", cores);
    else if (free_cores < 1)
        snprintf(what, sizeof(what),
                 "this run's %d thread(s) take all %ld core(s), leaving none for anything else",
                 threads, cores);
    else
        snprintf(what, sizeof(what),
                 "this run's %d thread(s) leave %.0f of the %ld core(s) for anything else", threads,
                 free_cores, cores);
    return (size_t)snprintf(
        buf, len,
        "warning: the machine is busy: %.2f processes were running or waiting for a CPU on "
        "average over the last minute (the load average), and %s. Other work will interrupt "
        "the timed calls: the verdicts stay valid, but expect disturbed pairs (the 'noisy' "
        "column), wider intervals and more INCONCLUSIVE verdicts. For sharper results run on "
        "an idle machine%s.\n",
        load, what, threads > 1 ? " or set 'threads' lower" : "");
}

/* A machine already busy at the start disturbs the timed pairs: warn when the 1-minute load
 * average exceeds the cores the run leaves free, plus one for ordinary background work. More
 * threads than cores (a spec written for a bigger machine) is said too: the kernels' threads
 * then take turns on the cores, and every barrier waits for the one descheduled. */
void kt_run_warn_load(const kt_spec *spec)
{
    double load;
    int virtual = kt_backend_caps_of(spec->backend)->clock == KT_CLOCK_VIRTUAL;
    FILE *f = virtual ? NULL : fopen("/proc/loadavg", "r");
    if (!f)
        return;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    const kt_arm_kind *k = kt_arm_kind_of(spec);
    int threads = k->needs_backend ? kt_run_threads(spec) : 0; /* else the arms' own business */
    if (cores > 0 && threads > cores)
        fprintf(stderr,
                "warning: threads: %d is more than the %ld online core(s): the threads take "
                "turns on them, and the times measure that; set threads to at most %ld\n",
                threads, cores, cores);
    char msg[768];
    if (fscanf(f, "%lf", &load) == 1 && kt_run_load_message(msg, sizeof(msg), load, cores, threads))
        fputs(msg, stderr);
    fclose(f);
}

/* --quick caps every point at KT_QUICK_MAX_REPETITIONS pairs. The spec's check refused a
 * design that can never decide at its own max_repetitions; under the cap one may never decide
 * either (a high confidence split over many points needs more pairs for a finite interval), and
 * every point would then end without a verdict: refuse it before anything runs. */
int kt_run_check_quick(const kt_run *st)
{
    int max = KT_QUICK_MAX_REPETITIONS, min = st->spec->min_repetitions;
    kt_design d;
    if (!st->opt.quick || st->spec->max_repetitions <= max)
        return 0;
    if (kt_design_plan(&d, min < max ? min : max, max, kt_design_point_alpha(st->spec),
                       KT_SPEND_DEFAULT) == 0)
        return 0;
    fprintf(stderr, "error: --quick caps a point at %d pairs: %s%s; run without --quick\n", max,
            kt_error_last(),
            st->spec->aggregate == KT_AGGREGATE_ALL && st->matrix->n > 1
                ? " (the confidence is split across the matrix points under aggregate: all)"
                : "");
    return KT_EXIT_DATAERR;
}

/* A point whose worker needs more memory than this machine has left would be killed by the
 * OOM killer minutes into its start-up (or push the host into swap, and the timings with it):
 * refused before anything runs, unless --force. The estimate is a floor (kt_plan_point_bytes). */
int kt_run_check_memory(const kt_run *st)
{
    const kt_spec *spec = st->spec;
    size_t worst = 0;
    double need = 0;
    int device = kt_arm_kind_of(spec)->usage & KT_ARM_USAGE_DEVICE_MEMORY;
    for (size_t i = 0; i < st->matrix->n && device; i++) { /* the points of this shard */
        kt_problem p;
        if (!kt_run_in_shard(st, i) || kt_op_shape(spec->op, &p, &st->matrix->points[i],
                                                   spec->dtype, spec->input_params) != KT_OK)
            continue; /* validation shaped every point already */
        double bytes = kt_plan_point_bytes(spec, &p);
        if (bytes > need) {
            need = bytes;
            worst = i;
        }
    }
    char what[64];
    double avail = kt_memory_available(what, sizeof(what));
    if (!(need > avail))
        return 0;
    fprintf(stderr,
            "%s: point '%s' needs at least %.2f GiB (every input set's inputs, outputs and "
            "float64 reference), and %s here is %.2f GiB%s\n",
            st->opt.force ? "warning" : "error", st->matrix->points[worst].id,
            need / (1024.0 * 1024 * 1024), what, avail / (1024.0 * 1024 * 1024),
            st->opt.force ? "; running anyway (--force)"
                          : "; fewer input sets or a smaller point fit, --force runs it anyway");
    return st->opt.force ? 0 : KT_EXIT_UNAVAILABLE;
}
