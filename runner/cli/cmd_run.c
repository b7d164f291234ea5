/* cmd_run.c - 'ktrial run': parse the options, hand the run to the engine (run/run.h), then
 * write the reports asked for, print the summary and exit with the verdict. */
#include "archive/archive.h"
#include "cli/commands.h"
#include "cli/options.h"
#include "report/cells.h"
#include "report/limits_lines.h"
#include "report/writers.h"
#include "report/report.h"
#include "run/run.h"
#include "arm/arm.h"
#include "measure/calibrate_bandwidth.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* An integer environment variable, or 'fallback' when unset or not a number. */
static int env_int(const char *name, int fallback)
{
    const char *v = getenv(name);
    char *end;
    long n = v && *v ? strtol(v, &end, 10) : 0;
    return v && *v && *end == '\0' && n >= 0 && n < 1000000 ? (int)n : fallback;
}

/* "I/N", or "auto": this task of a Slurm job array (index counted from the array's first). */
static int parse_shard(kt_run_options *o, const char *s)
{
    if (strcmp(s, "auto") == 0) {
        int id = env_int("SLURM_ARRAY_TASK_ID", -1), min = env_int("SLURM_ARRAY_TASK_MIN", 1);
        int count = env_int("SLURM_ARRAY_TASK_COUNT", -1);
        if (count < 0 && env_int("SLURM_ARRAY_TASK_MAX", -1) >= min)
            count = env_int("SLURM_ARRAY_TASK_MAX", -1) - min + 1;
        o->shard_index = id - min + 1;
        o->shard_count = count;
        return id < 0 || count < 1 || o->shard_index < 1 || o->shard_index > count ? -2 : 0;
    }
    if (sscanf(s, "%d/%d", &o->shard_index, &o->shard_count) != 2 || o->shard_count < 1 ||
        o->shard_index < 1 || o->shard_index > o->shard_count)
        return -1;
    return 0;
}

static int parse_args(kt_run_options *o, int argc, char **argv)
{
    memset(o, 0, sizeof(*o));
    o->shard_index = o->shard_count = 1;
    kt_opt_parser p;
    const kt_option *opt;
    const char *v;
    int more;
    kt_opt_init(&p, "run", argc, argv);
    while ((more = kt_opt_next(&p, &opt, &v)) > 0) {
        if (kt_opt_is(opt, "--output")) {
            o->out_dir = v;
        } else if (kt_opt_is(opt, "--backend")) {
            o->backend = v;
        } else if (kt_opt_is(opt, "--resume")) {
            o->resume_dir = v;
        } else if (kt_opt_is(opt, "--shard")) {
            int bad = parse_shard(o, v);
            if (bad == -2)
                return kt_usage_error("run", "'--shard auto' needs SLURM_ARRAY_TASK_ID and "
                                             "SLURM_ARRAY_TASK_COUNT (a task of a Slurm job "
                                             "array)");
            if (bad < 0)
                return kt_usage_error("run", "'--shard' needs I/N with 1 <= I <= N, or auto");
        } else if (kt_opt_is(opt, "--quick")) {
            o->quick = 1;
        } else if (kt_opt_is(opt, "--require-clean")) {
            o->require_clean = 1;
        } else if (kt_opt_is(opt, "--force")) {
            o->force = 1;
        } else if (kt_opt_is(opt, "--json")) {
            o->json = 1;
        } else if (kt_opt_is(opt, "--no-profile")) {
            o->no_profile = 1;
        } else if (kt_opt_is(opt, "--profile")) {
            o->profile = 1;
        } else if (kt_opt_is(opt, "--relock")) {
            o->relock = 1;
        } else if (kt_opt_is(opt, "--report")) {
            o->report = 1;
        } else if (opt && kt_ci_files_ask(&o->ci, opt->name, v)) {
            continue; /* --junit FILE, --markdown FILE */
        } else if (!o->spec_path) {
            o->spec_path = v;
        } else {
            return kt_usage_error("run", "unexpected argument '%s' (one spec per run)", v);
        }
    }
    if (more < 0)
        return KT_EXIT_USAGE;
    if (!o->spec_path)
        return kt_usage_error("run", "no spec given");
    if (o->profile && o->no_profile)
        return kt_usage_error("run", "'--profile' and '--no-profile' contradict each other");
    if (o->backend)
        return kt_opt_check_backend("run", o->backend);
    return 0;
}

/* How long the points took, against the plan and the budget. */
static void print_time(const kt_run *st)
{
    printf("time: %.1f s measuring, estimate ", st->elapsed_s);
    if (isfinite(st->estimate_s))
        printf("%.1f s", st->estimate_s);
    else /* a command spec: no plan estimate, shown as the summary shows what it lacks */
        fputs(kt_cell_none, stdout);
    if (!isnan(st->spec->budget_minutes)) {
        double budget = st->spec->budget_minutes * 60.0;
        printf(", budget %.*f s (%s)", budget < 10 ? 1 : 0, budget,
               st->elapsed_s <= budget ? "within"
               : st->opt.force         ? "over, --force"
                                       : "over");
    }
    putchar('\n');
}

/* --report, --junit, --markdown: read back from the archive just written. */
static int write_reports(const kt_run *st)
{
    if (st->opt.report && kt_report_write_archive(st->dir) < 0)
        return -1;
    return kt_ci_files_write(&st->opt.ci, st->dir);
}

/* The summary with the run's facts: its state, --quick, the shard, the points not run. */
static void print_summary(const kt_run *st, const char *status)
{
    kt_summary_facts f;
    kt_summary_facts_init(&f, st->spec->baseline.name, kt_aggregate_name(st->spec->aggregate),
                          st->spec->min_speedup, st->spec->confidence);
    const kt_arm_kind *k = kt_arm_kind_of(st->spec);
    if (k->metric)
        f.metric = k->metric(st->spec, &f.metric_higher);
    f.status = status;
    f.quick = st->opt.quick;
    f.quick_max_repetitions = KT_QUICK_MAX_REPETITIONS;
    f.shard_index = st->opt.shard_index;
    f.shard_count = st->opt.shard_count;
    const char **ids = calloc(st->matrix->n ? st->matrix->n : 1, sizeof(*ids));
    for (size_t i = 0; ids && i < st->matrix->n; i++) {
        const char *id = st->matrix->points[i].id;
        if (kt_run_in_shard(st, i) && kt_run_find_point(st->run.points, st->run.n_points, id) < 0)
            ids[f.n_not_run++] = id;
    }
    f.not_run_ids = ids;
    char checks[512];
    kt_checks_line(checks, sizeof(checks), st->spec);
    f.checks = checks;
    kt_output o = {.run = &st->run, .facts = &f, .details = 1};
    o.virtual_clock = kt_backend_caps_of(st->spec->backend)->clock == KT_CLOCK_VIRTUAL;
    kt_write("text", stdout, &o); /* the summary and the usage lines */
    free(ids);
}

/* The run ended and is archived: the reports, the summary (or result.json under --json), and
 * how to continue one that stopped. */
static int finish(const kt_run *st)
{
    const char *status = st->status;
    if (write_reports(st) < 0) {
        fprintf(stderr, "error: %s\n", kt_error_last());
        return KT_EXIT_IOERR;
    }
    if (st->opt.json) {
        char path[PATH_MAX], *text;
        size_t len;
        snprintf(path, sizeof(path), "%s/result.json", st->dir);
        if (kt_read_file(&text, &len, path, (size_t)1 << 31) == 0) {
            fwrite(text, 1, len, stdout);
            fputc('\n', stdout);
            free(text);
        }
    } else {
        print_summary(st, status);
        kt_limits_print(stdout, st->limits);
        if (st->opt.quick)
            printf("note: --quick capped repetitions at %d; verdicts may be INCONCLUSIVE where "
                   "a full run would decide\n",
                   KT_QUICK_MAX_REPETITIONS);
        if (st->opt.shard_count > 1)
            printf("shard %d of %d: not a verdict for the experiment; form it with: ktrial "
                   "merge SHARD_DIR... -o DIR\n",
                   st->opt.shard_index, st->opt.shard_count);
        printf("archive: %s\n", st->dir);
        print_time(st);
    }
    char flags[64];
    kt_resume_flags(flags, sizeof(flags), st->opt.shard_index, st->opt.shard_count, st->opt.quick);
    if (st->interrupted) {
        size_t archived = kt_run_finished_points(&st->run);
        fprintf(stderr,
                "interrupted: %zu of %zu points archived; continue with: ktrial run %s "
                "--resume %s%s\n",
                archived, st->n_todo, st->opt.spec_path, st->dir, flags);
        return KT_EXIT_INTERRUPTED;
    }
    if (st->over_budget)
        fprintf(stderr,
                "over budget: %zu point%s not run; continue with: ktrial run %s --resume %s%s\n",
                st->not_run, st->not_run == 1 ? "" : "s", st->opt.spec_path, st->dir, flags);
    return kt_run_outcome_code(st);
}

int cmd_run(int argc, char **argv)
{
    kt_run_options opt;
    int rc = parse_args(&opt, argc, argv);
    if (rc)
        return rc;
    kt_run st;
    rc = kt_run_execute(&st, &opt, argc, argv);
    if (rc == 0)
        rc = finish(&st);
    kt_run_free(&st);
    return rc;
}
