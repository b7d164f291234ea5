/* cmd_slurm.c - 'ktrial slurm SPEC': a Slurm job array with one task per shard of the spec's
 * matrix ('ktrial run --shard auto'), and a job that runs 'ktrial merge' once every task has
 * succeeded (--dependency=afterok), so the scheduler people already have does the scaling.
 *
 * The run folder holds shards.sbatch, merge.sbatch, logs/, shard-1..N/ and merged/. */
#include "archive/archive.h"
#include "cli/commands.h"
#include "cli/options.h"
#include "kernel.h"
#include "spec/matrix.h"
#include "spec/spec.h"

#include <errno.h>
#include <limits.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

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

/* 's' in single quotes for a shell script ("it's" -> 'it'\''s'). */
static void put_quoted(FILE *f, const char *s)
{
    fputc('\'', f);
    for (; *s; s++) {
        if (*s == '\'')
            fputs("'\\''", f);
        else
            fputc(*s, f);
    }
    fputc('\'', f);
}

/* An absolute form of 'path' (which may not exist yet): realpath of its existing folder. */
static void absolute(char *out, size_t len, const char *path)
{
    char resolved[PATH_MAX];
    if (realpath(path, resolved)) {
        snprintf(out, len, "%s", resolved);
        return;
    }
    char cwd[PATH_MAX];
    if (path[0] == '/' || !getcwd(cwd, sizeof(cwd)))
        snprintf(out, len, "%s", path);
    else
        snprintf(out, len, "%s/%s", cwd, path);
}

/* 'name' as the jobs will run it: a name with a '/' made absolute, a bare name looked up in PATH
 * as a shell would. A program not found here is written as given, with a warning: a cluster's
 * compute nodes may have what its login node lacks. */
static void resolve_program(char *out, size_t len, const char *name)
{
    if (strchr(name, '/')) {
        absolute(out, len, name);
        if (access(out, X_OK) != 0)
            fprintf(stderr, "warning: --ktrial '%s' is not an executable file here (%s)\n", out,
                    strerror(errno));
        return;
    }
    const char *path = getenv("PATH");
    for (const char *dir = path; dir && *dir;) {
        size_t n = strcspn(dir, ":");
        char candidate[PATH_MAX];
        snprintf(candidate, sizeof(candidate), "%.*s/%s", (int)(n ? n : 1), n ? dir : ".", name);
        struct stat st;
        if (stat(candidate, &st) == 0 && S_ISREG(st.st_mode) && access(candidate, X_OK) == 0) {
            absolute(out, len, candidate);
            return;
        }
        dir += n + (dir[n] == ':');
    }
    snprintf(out, len, "%s", name);
    fprintf(stderr,
            "warning: --ktrial '%s' is not in PATH here; the jobs run it by that name, "
            "looked up in PATH on the compute node\n",
            name);
}

/* 's' as one argument of an #SBATCH line. sbatch splits those lines at blanks, ends them at an
 * unescaped '#' and reads quotes and backslashes as escapes, so each of those gets a backslash; in
 * a file name (--output) '%' starts a pattern ('%a': the task), so there it is doubled. */
static void put_sbatch_value(FILE *f, const char *s, int file_name)
{
    for (; *s; s++) {
        if (*s == '%' && file_name)
            fputc('%', f);
        else if (strchr(" \t\\\"'#", *s))
            fputc('\\', f);
        fputc(*s, f);
    }
}

/* 'log' is the log's name under RUN/logs/, Slurm's patterns in it left as they are. */
static void common_header(FILE *f, const slurm_options *o, const char *job, const char *run_dir,
                          const char *log)
{
    fprintf(f, "#!/bin/bash\n");
    fprintf(f, "#SBATCH --job-name=%s\n", job);
    fprintf(f, "#SBATCH --output=");
    put_sbatch_value(f, run_dir, 1);
    fprintf(f, "/logs/%s\n", log);
    if (o->partition) {
        fprintf(f, "#SBATCH --partition=");
        put_sbatch_value(f, o->partition, 0);
        fputc('\n', f);
    }
    if (o->time_limit) {
        fprintf(f, "#SBATCH --time=");
        put_sbatch_value(f, o->time_limit, 0);
        fputc('\n', f);
    }
}

static void write_shards_script(FILE *f, const slurm_options *o, const kt_spec *spec,
                                const char *run_dir, const char *spec_abs, const char *exe)
{
    char job[128];
    snprintf(job, sizeof(job), "ktrial-%s", spec->name);
    common_header(f, o, job, run_dir, "shard-%a.out");
    fprintf(f, "#SBATCH --array=1-%d\n", o->shards);
    if (o->gpus_per_task > 0)
        fprintf(f, "#SBATCH --gres=gpu:%d\n", o->gpus_per_task);
    if (o->cpus_per_task > 0)
        fprintf(f, "#SBATCH --cpus-per-task=%d\n", o->cpus_per_task);
    fprintf(f,
            "# Written by 'ktrial slurm': task I runs shard I of %d of %s.\n"
            "# A shard that measured its points exits 0; the merge job forms the verdict.\n"
            "set -euo pipefail\nexec ",
            o->shards, spec->name);
    put_quoted(f, exe);
    fprintf(f, " run ");
    put_quoted(f, spec_abs);
    if (o->backend)
        fprintf(f, " --backend %s", o->backend);
    fprintf(f, " --shard auto -o ");
    put_quoted(f, run_dir);
    fprintf(f, "\"/shard-${SLURM_ARRAY_TASK_ID}\"\n");
}

static void write_merge_script(FILE *f, const slurm_options *o, const kt_spec *spec,
                               const char *run_dir, const char *exe)
{
    char job[128], path[PATH_MAX + 32];
    snprintf(job, sizeof(job), "ktrial-%s-merge", spec->name);
    common_header(f, o, job, run_dir, "merge.out");
    fprintf(f, "# Written by 'ktrial slurm': runs once every shard task succeeded\n"
               "# (submitted with --dependency=afterok:<array job>); exits with the verdict.\n"
               "set -euo pipefail\nexec ");
    put_quoted(f, exe);
    fprintf(f, " merge");
    for (int i = 1; i <= o->shards; i++) {
        snprintf(path, sizeof(path), "%s/shard-%d", run_dir, i);
        fputc(' ', f);
        put_quoted(f, path);
    }
    snprintf(path, sizeof(path), "%s/merged", run_dir);
    fprintf(f, " -o ");
    put_quoted(f, path);
    fprintf(f, "\n");
}

/* Runs sbatch with 'args' and reads the job id from its --parsable output ("ID[;cluster]"). */
static long sbatch(char *const args[])
{
    int fds[2];
    if (pipe(fds) != 0)
        return -1;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fds[1], STDOUT_FILENO);
    posix_spawn_file_actions_addclose(&fa, fds[0]);
    pid_t pid;
    int err = posix_spawnp(&pid, "sbatch", &fa, NULL, args, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(fds[1]);
    if (err != 0) {
        close(fds[0]);
        fprintf(stderr, "error: cannot run sbatch: %s\n", strerror(err));
        return -1;
    }
    char out[256] = "";
    ssize_t n = read(fds[0], out, sizeof(out) - 1);
    out[n > 0 ? n : 0] = '\0';
    close(fds[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    long id = strtol(out, NULL, 10);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || id <= 0) {
        fprintf(stderr, "error: sbatch failed (exit %d): %s\n",
                WIFEXITED(status) ? WEXITSTATUS(status) : -1, out);
        return -1;
    }
    return id;
}

static int write_script(const char *dir, const char *name, void (*fill)(FILE *, void *), void *ctx)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&buf, &len);
    if (!mem)
        return kt_error_set("out of memory");
    fill(mem, ctx);
    fclose(mem);
    int rc = kt_archive_write(dir, name, buf, len);
    free(buf);
    return rc;
}

typedef struct script_ctx {
    const slurm_options *o;
    const kt_spec *spec;
    const char *run_dir, *spec_abs, *exe;
} script_ctx;

static void fill_shards(FILE *f, void *p)
{
    script_ctx *c = p;
    write_shards_script(f, c->o, c->spec, c->run_dir, c->spec_abs, c->exe);
}

static void fill_merge(FILE *f, void *p)
{
    script_ctx *c = p;
    write_merge_script(f, c->o, c->spec, c->run_dir, c->exe);
}

static int submit(const char *run_dir, int shards)
{
    char shards_path[PATH_MAX + 32], merge_path[PATH_MAX + 32], dep[64];
    snprintf(shards_path, sizeof(shards_path), "%s/shards.sbatch", run_dir);
    snprintf(merge_path, sizeof(merge_path), "%s/merge.sbatch", run_dir);
    char *a1[] = {"sbatch", "--parsable", shards_path, NULL};
    long array_id = sbatch(a1);
    if (array_id < 0)
        return KT_EXIT_UNAVAILABLE;
    snprintf(dep, sizeof(dep), "--dependency=afterok:%ld", array_id);
    char *a2[] = {"sbatch", "--parsable", dep, merge_path, NULL};
    long merge_id = sbatch(a2);
    if (merge_id < 0) {
        fprintf(stderr, "hint: the shard array %ld is queued; cancel it with: scancel %ld\n",
                array_id, array_id);
        return KT_EXIT_UNAVAILABLE;
    }
    printf("submitted: shard array %ld (%d tasks), merge job %ld (after all succeed)\n", array_id,
           shards, merge_id);
    printf("follow:    squeue -j %ld,%ld\n", array_id, merge_id);
    printf("verdict:   ktrial show %s/merged (the merge job's exit code is the verdict's)\n",
           run_dir);
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
        absolute(run_dir, sizeof(run_dir), o.out_dir);
    } else {
        char stamp[32], rel[PATH_MAX];
        time_t now = time(NULL);
        struct tm tm;
        gmtime_r(&now, &tm);
        strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%SZ", &tm);
        snprintf(rel, sizeof(rel), "results/%s-%s-slurm", stamp, spec->name);
        absolute(run_dir, sizeof(run_dir), rel);
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
    absolute(spec_abs, sizeof(spec_abs), o.spec_path);
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    exe[n > 0 ? n : 0] = '\0';
    if (o.ktrial)
        resolve_program(exe, sizeof(exe), o.ktrial);
    script_ctx ctx = {&o, spec, run_dir, spec_abs, exe};

    if (o.dry_run) {
        printf("# %s/shards.sbatch\n", run_dir);
        fill_shards(stdout, &ctx);
        printf("\n# %s/merge.sbatch\n", run_dir);
        fill_merge(stdout, &ctx);
        kt_spec_free(spec);
        return 0;
    }
    char logs[PATH_MAX + 8];
    snprintf(logs, sizeof(logs), "%s/logs", run_dir);
    if (kt_archive_mkdirs(logs) < 0 || write_script(run_dir, "shards.sbatch", fill_shards, &ctx) ||
        write_script(run_dir, "merge.sbatch", fill_merge, &ctx)) {
        fprintf(stderr, "error: %s\n", kt_error_last());
        kt_spec_free(spec);
        return KT_EXIT_IOERR;
    }
    printf("wrote %s/shards.sbatch (%d shards of %zu points) and %s/merge.sbatch\n", run_dir,
           o.shards, points, run_dir);
    if (o.submit)
        rc = submit(run_dir, o.shards);
    else
        printf("submit:    id=$(sbatch --parsable %s/shards.sbatch) && sbatch "
               "--dependency=afterok:$id %s/merge.sbatch\n",
               run_dir, run_dir);
    kt_spec_free(spec);
    return rc;
}
