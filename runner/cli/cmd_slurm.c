/* cmd_slurm.c - 'ktrial slurm SPEC': a Slurm job array with one task per shard of the spec's
 * matrix ('ktrial run --shard auto'), and a job that runs 'ktrial merge' once every task has
 * succeeded (--dependency=afterok), so the scheduler people already have does the scaling.
 * The command parses its options, picks the shards, backend and folder, and has the jobs
 * written (and submitted) by run/slurm_jobs.h.
 *
 * The run folder holds shards.sbatch, merge.sbatch, logs/, shard-1..N/ and merged/. */
#include "cli/commands.h"
#include "cli/options.h"
#include "kernel.h"
#include "run/folder.h"
#include "run/slurm_jobs.h"
#include "spec/matrix.h"
#include "spec/spec.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef struct slurm_options {
    const char *spec_path, *partition, *time_limit, *out_dir, *ktrial;
    const char *backend; /* what the jobs pass as --backend: set where the spec says auto */
    int shards, gpus_per_task, cpus_per_task;
    int submit, dry_run;
} slurm_options;

static int parse_count(int *out, const char *s, int min)
{
    char *end;
    long v = s ? strtol(s, &end, 10) : 0;
    if (!s || *end || v < min || v > 100000)
        return -1;
    *out = (int)v;
    return 0;
}

/* Slurm's time limit forms (sbatch --time): "minutes", "minutes:seconds",
 * "hours:minutes:seconds", "days-hours", "days-hours:minutes", "days-hours:minutes:seconds", or
 * "UNLIMITED"/"INFINITE". */
static int valid_time_limit(const char *s)
{
    if (strcmp(s, "UNLIMITED") == 0 || strcmp(s, "INFINITE") == 0)
        return 1;
    int fields = 0;
    const char *p = s;
    if (strchr(s, '-')) {
        size_t n = strspn(p, "0123456789");
        if (n == 0 || p[n] != '-')
            return 0;
        p += n + 1;
    }
    for (;;) {
        size_t n = strspn(p, "0123456789");
        if (n == 0)
            return 0;
        fields++;
        p += n;
        if (*p == '\0')
            break;
        if (*p++ != ':')
            return 0;
    }
    return fields <= 3;
}

/* A partition name as slurm.conf can declare it, or a comma-separated list of them. */
static int valid_partition(const char *s)
{
    for (const char *p = s;; p++) {
        size_t n = strspn(p, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-");
        if (n == 0)
            return 0;
        p += n;
        if (*p == '\0')
            return 1;
        if (*p != ',')
            return 0;
    }
}

static int parse_args(slurm_options *o, int argc, char **argv)
{
    memset(o, 0, sizeof(*o));
    o->gpus_per_task = -1;
    kt_opt_parser p;
    const kt_option *opt;
    const char *v;
    int more;
    kt_opt_init(&p, "slurm", argc, argv);
    while ((more = kt_opt_next(&p, &opt, &v)) > 0) {
        if (kt_opt_is(opt, "--shards")) {
            if (parse_count(&o->shards, v, 1) < 0)
                return kt_usage_error("slurm", "'--shards' needs a count >= 1");
        } else if (kt_opt_is(opt, "--gpus-per-task")) {
            if (parse_count(&o->gpus_per_task, v, 0) < 0)
                return kt_usage_error("slurm", "'--gpus-per-task' needs a count >= 0");
        } else if (kt_opt_is(opt, "--cpus-per-task")) {
            if (parse_count(&o->cpus_per_task, v, 1) < 0)
                return kt_usage_error("slurm", "'--cpus-per-task' needs a count >= 1");
        } else if (opt && opt->arg) { /* --partition, --time, --ktrial, -o */
            if (!v[0])
                return kt_usage_error("slurm", "'%s' needs a value", opt->name);
            const char **slot = kt_opt_is(opt, "--partition") ? &o->partition
                                : kt_opt_is(opt, "--time")    ? &o->time_limit
                                : kt_opt_is(opt, "--ktrial")  ? &o->ktrial
                                                              : &o->out_dir;
            *slot = v;
        } else if (kt_opt_is(opt, "--submit")) {
            o->submit = 1;
        } else if (kt_opt_is(opt, "--dry-run")) {
            o->dry_run = 1;
        } else if (!o->spec_path) {
            o->spec_path = v;
        } else {
            return kt_usage_error("slurm", "unexpected argument '%s' (one spec)", v);
        }
    }
    if (more < 0)
        return KT_EXIT_USAGE;
    if (!o->spec_path)
        return kt_usage_error("slurm", "no spec given");
    if (o->submit && o->dry_run)
        return kt_usage_error("slurm", "--submit and --dry-run exclude each other");
    if (o->partition && !valid_partition(o->partition))
        return kt_usage_error("slurm",
                              "'--partition %s' is not a partition name ([A-Za-z0-9._-], "
                              "several separated by commas)",
                              o->partition);
    if (o->time_limit && !valid_time_limit(o->time_limit))
        return kt_usage_error("slurm",
                              "'--time %s' is not a Slurm time limit (minutes, M:S, H:M:S, D-H, "
                              "D-H:M, D-H:M:S or UNLIMITED)",
                              o->time_limit);
    return 0;
}

int cmd_slurm(int argc, char **argv)
{
    slurm_options o;
    int rc = parse_args(&o, argc, argv);
    if (rc)
        return rc;
    kt_spec *spec = NULL;
    kt_diag diag;
    kt_diag_init(&diag);
    kt_spec_options so = {NULL, 0};
    rc = kt_spec_load(&spec, o.spec_path, &so, &diag);
    kt_diag_print(&diag, stderr);
    kt_diag_free(&diag);
    if (rc < 0 || !spec->matrix) {
        kt_spec_free(spec);
        return KT_EXIT_DATAERR;
    }
    size_t points = spec->matrix->n;
    if (o.shards == 0)
        o.shards = points < 8 ? (int)points : 8;
    if ((size_t)o.shards > points) {
        fprintf(stderr,
                "error: --shards %d but the spec has %zu point%s: a shard would be "
                "empty\n",
                o.shards, points, points == 1 ? "" : "s");
        kt_spec_free(spec);
        return KT_EXIT_USAGE;
    }
    if (strcmp(spec->backend_requested, "auto") == 0) {
        /* Each task resolving auto on its own node could measure some shards on the cpu
         * backend and others on cuda; the jobs get one backend, chosen here. */
        const kt_backend_iface *gpu = kt_backend_auto(KT_AUTO_DEVICE);
        int cuda = gpu && o.gpus_per_task != 0;
        o.backend = (cuda ? gpu : kt_backend_auto(KT_AUTO_HOST))->name;
        if (o.gpus_per_task < 0)
            o.gpus_per_task = cuda ? gpu->caps->gpus : 0;
        fprintf(stderr,
                "notice: backend auto: the jobs run --backend %s with %d GPU%s per task (%s)\n",
                o.backend, o.gpus_per_task, o.gpus_per_task == 1 ? "" : "s",
                cuda  ? "--gpus-per-task 0 for the cpu backend"
                : gpu ? "asked for by --gpus-per-task 0"
                      : "this ktrial was built without CUDA");
    } else if (o.gpus_per_task < 0) {
        o.gpus_per_task = kt_backend_caps_of(spec->backend)->gpus;
    }

    char run_dir[PATH_MAX], spec_abs[PATH_MAX], exe[PATH_MAX];
    if (o.out_dir) {
        kt_slurm_absolute(run_dir, sizeof(run_dir), o.out_dir);
    } else {
        char stamp[32], rel[PATH_MAX];
        kt_run_stamp(stamp, sizeof(stamp), time(NULL));
        snprintf(rel, sizeof(rel), "results/%s-%s-slurm", stamp, spec->name);
        kt_slurm_absolute(run_dir, sizeof(run_dir), rel);
    }
    const char *lines[] = {run_dir, o.partition, o.time_limit};
    for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++) {
        if (lines[i] && strpbrk(lines[i], "\n\r")) {
            fprintf(stderr, "error: '%s' has a line break, which an #SBATCH line cannot hold\n",
                    lines[i]);
            kt_spec_free(spec);
            return KT_EXIT_USAGE;
        }
    }
    kt_slurm_absolute(spec_abs, sizeof(spec_abs), o.spec_path);
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    exe[n > 0 ? n : 0] = '\0';
    if (o.ktrial)
        kt_slurm_resolve_program(exe, sizeof(exe), o.ktrial);
    kt_slurm_jobs jobs = {
        spec,    o.partition, o.time_limit, o.backend, o.shards, o.gpus_per_task, o.cpus_per_task,
        run_dir, spec_abs,    exe};

    if (o.dry_run) {
        kt_slurm_print_jobs(stdout, &jobs);
        kt_spec_free(spec);
        return 0;
    }
    if (kt_slurm_write_jobs(&jobs) < 0) {
        fprintf(stderr, "error: %s\n", kt_error_last());
        kt_spec_free(spec);
        return KT_EXIT_IOERR;
    }
    printf("wrote %s/shards.sbatch (%d shards of %zu points) and %s/merge.sbatch\n", run_dir,
           o.shards, points, run_dir);
    if (o.submit)
        rc = kt_slurm_submit(run_dir, o.shards);
    else
        printf("submit:    id=$(sbatch --parsable %s/shards.sbatch) && sbatch "
               "--dependency=afterok:$id %s/merge.sbatch\n",
               run_dir, run_dir);
    kt_spec_free(spec);
    return rc;
}
