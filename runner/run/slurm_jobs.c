/* slurm_jobs.c - writing and submitting a run's Slurm jobs (see slurm_jobs.h). */
#include "run/slurm_jobs.h"

#include "archive/archive.h"
#include "run/exit_code.h"

#include <errno.h>
#include <limits.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

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
void kt_slurm_absolute(char *out, size_t len, const char *path)
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
void kt_slurm_resolve_program(char *out, size_t len, const char *name)
{
    if (strchr(name, '/')) {
        kt_slurm_absolute(out, len, name);
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
            kt_slurm_absolute(out, len, candidate);
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
static void common_header(FILE *f, const kt_slurm_jobs *o, const char *job, const char *run_dir,
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

static void write_shards_script(FILE *f, const kt_slurm_jobs *o, const kt_spec *spec,
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

static void write_merge_script(FILE *f, const kt_slurm_jobs *o, const kt_spec *spec,
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

int kt_slurm_submit(const char *run_dir, int shards)
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

static void fill_shards(FILE *f, void *p)
{
    const kt_slurm_jobs *j = p;
    write_shards_script(f, j, j->spec, j->run_dir, j->spec_abs, j->exe);
}

static void fill_merge(FILE *f, void *p)
{
    const kt_slurm_jobs *j = p;
    write_merge_script(f, j, j->spec, j->run_dir, j->exe);
}

int kt_slurm_write_jobs(const kt_slurm_jobs *j)
{
    char logs[PATH_MAX + 8];
    snprintf(logs, sizeof(logs), "%s/logs", j->run_dir);
    if (kt_archive_mkdirs(logs) < 0 ||
        write_script(j->run_dir, "shards.sbatch", fill_shards, (void *)j) ||
        write_script(j->run_dir, "merge.sbatch", fill_merge, (void *)j))
        return -1;
    return 0;
}

void kt_slurm_print_jobs(FILE *f, const kt_slurm_jobs *j)
{
    fprintf(f, "# %s/shards.sbatch\n", j->run_dir);
    fill_shards(f, (void *)j);
    fprintf(f, "\n# %s/merge.sbatch\n", j->run_dir);
    fill_merge(f, (void *)j);
}
