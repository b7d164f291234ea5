/* reproduce.c - 'ktrial reproduce': check out the recorded code state, build it with the
 * recorded options, rerun the archived spec with it, and compare (see reproduce.h). */
#include "run/reproduce.h"

#include "archive/archive.h"
#include "archive/reproduce_tree.h"
#include "archive/run_archive.h"
#include "run/exit_code.h"
#include "run/folder.h"
#include "util/json.h"
#include "util/read_file.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

/* The work of one reproduction: the archive's documents and the temporary folder. */
typedef struct repro {
    const kt_reproduce_options *o;
    cJSON *doc;               /* the archive's result.json */
    char archive[PATH_MAX];   /* its folder */
    char tmp[PATH_MAX];       /* ktrial-reproduce.XXXXXX */
    char src[PATH_MAX + 8];   /* tmp/src: the tree */
    char build[PATH_MAX + 8]; /* tmp/build */
    char out[PATH_MAX];       /* the rerun's archive */
    char log[PATH_MAX + 16];  /* tmp/NAME.log of the last step */
} repro;

static int remove_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path);
}

/* Prints the last 'lines' lines of 'path' to stderr. */
static void tail(const char *path, int lines)
{
    char *text = NULL;
    size_t len = 0;
    if (kt_read_file(&text, &len, path, (size_t)64 << 20) < 0)
        return;
    const char *p = text + len;
    for (int n = 0; p > text && n <= lines; p--)
        n += p[-1] == '\n';
    fputs(p == text ? p : p + 1, stderr);
    free(text);
}

/* Runs argv with stdout and stderr into r->log (named 'step') and cwd 'dir'; returns its exit
 * status, or -1 when it did not start or was killed. */
static int spawn(repro *r, const char *step, char *const argv[], const char *dir)
{
    posix_spawn_file_actions_t fa;
    pid_t pid;
    int status = 0;
    snprintf(r->log, sizeof(r->log), "%s/%s.log", r->tmp, step);
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, r->log,
                                     O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    posix_spawn_file_actions_adddup2(&fa, STDOUT_FILENO, STDERR_FILENO);
    posix_spawn_file_actions_addclose(&fa, STDIN_FILENO);
    if (dir)
        posix_spawn_file_actions_addchdir_np(&fa, dir);
    int err = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (err != 0) {
        fprintf(stderr, "error: cannot run %s: %s\n", argv[0], strerror(err));
        return -1;
    }
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* The cmake -D options the archive's provenance.build records. */
static size_t build_options(char opts[][PATH_MAX], const cJSON *build)
{
    char type[64], flags[1024];
    size_t n = 0;
    kt_json_get_str(build, "build_type", type, sizeof(type));
    kt_json_get_str(build, "flags", flags, sizeof(flags));
    snprintf(opts[n++], PATH_MAX, "-DCMAKE_BUILD_TYPE=%s", type[0] ? type : "RelWithDebInfo");
    snprintf(opts[n++], PATH_MAX, "-DKT_CUDA=%s",
             cJSON_GetObjectItemCaseSensitive(build, "cuda_compiler") ? "ON" : "OFF");
    const char *march = strstr(flags, "-march=");
    if (march) /* the kernels' -march, KT_MARCH */
        snprintf(opts[n++], PATH_MAX, "-DKT_MARCH=%.*s", (int)strcspn(march + 7, " ;"), march + 7);
    snprintf(opts[n++], PATH_MAX, "-DKT_SANITIZE=%s", strstr(flags, "-fsanitize") ? "ON" : "OFF");
    snprintf(opts[n++], PATH_MAX, "-DKT_BUILD_TESTS=OFF");
    return n;
}

/* Configures and builds the ktrial target of the tree. 0, or the exit code. */
static int build(repro *r)
{
    char opts[8][PATH_MAX], jobs[16];
    size_t n = build_options(opts, kt_json_at_path(r->doc, "provenance.build"));
    char *configure[16] = {"cmake", "-S", r->src, "-B", r->build};
    for (size_t i = 0; i < n; i++)
        configure[5 + i] = opts[i];
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    snprintf(jobs, sizeof(jobs), "-j%ld", cores < 1 ? 1 : cores > 8 ? 8 : cores);
    fprintf(stderr, "build: cmake");
    for (size_t i = 0; i < n; i++)
        fprintf(stderr, " %s", opts[i]);
    fprintf(stderr, "; the ktrial target, %s\n", jobs);
    char *make[] = {"cmake", "--build", r->build, "--target", "ktrial", jobs, NULL};
    double t0 = (double)time(NULL);
    if (spawn(r, "configure", configure, NULL) != 0 || spawn(r, "build", make, NULL) != 0) {
        tail(r->log, 30);
        fprintf(stderr, "error: the recorded tree did not build (log: %s)\n", r->log);
        return KT_EXIT_SOFTWARE;
    }
    fprintf(stderr, "build: done in %.0f s\n", (double)time(NULL) - t0);
    return 0;
}

/* The rerun's arguments from the archive: backend, --quick, shard, --force as recorded. */
static int rerun(repro *r)
{
    char ktrial[PATH_MAX + 16], spec[PATH_MAX + 16], backend[32], shard[32] = "";
    char *argv[16] = {ktrial, "run", spec, "-o", r->out, "--backend", backend};
    int n = 7;
    snprintf(ktrial, sizeof(ktrial), "%s/ktrial", r->build);
    /* a copy outside any repository, so the rerun's provenance takes no other tree's git */
    char *bytes = NULL;
    size_t len = 0;
    snprintf(spec, sizeof(spec), "%s/spec.yaml", r->archive);
    if (kt_read_file(&bytes, &len, spec, (size_t)16 << 20) < 0 ||
        kt_archive_write(r->tmp, "spec.yaml", bytes, len) < 0) {
        free(bytes);
        fprintf(stderr, "error: %s\n", kt_error_last());
        return KT_EXIT_IOERR;
    }
    free(bytes);
    snprintf(spec, sizeof(spec), "%s/spec.yaml", r->tmp);
    kt_json_get_str(kt_json_at_path(r->doc, "spec.parsed"), "backend", backend, sizeof(backend));
    const cJSON *run = kt_json_at_path(r->doc, "provenance.run");
    if (kt_json_get_bool(run, "quick", 0))
        argv[n++] = "--quick";
    kt_json_get_str(run, "shard", shard, sizeof(shard));
    if (shard[0] && strcmp(shard, "1/1") != 0) {
        argv[n++] = "--shard";
        argv[n++] = shard;
    }
    const cJSON *arg;
    cJSON_ArrayForEach(arg, cJSON_GetObjectItemCaseSensitive(run, "argv"))
    {
        if (cJSON_IsString(arg) && strcmp(arg->valuestring, "--force") == 0) {
            argv[n++] = "--force"; /* the budget it was let past */
            break;
        }
    }
    argv[n] = NULL;
    fprintf(stderr, "rerun: the rebuilt ktrial, in the tree, on the archived spec.yaml:");
    for (int i = 1; i < n; i++)
        fprintf(stderr, " %s", argv[i]);
    fputc('\n', stderr);
    int rc = spawn(r, "rerun", argv, r->src); /* cwd in the tree: no repository above */
    if (rc < 0 || rc > 2) {
        tail(r->log, 30);
        fprintf(stderr, "error: the rerun failed (exit %d; log: %s)\n", rc, r->log);
        return KT_EXIT_SOFTWARE;
    }
    return 0;
}

/* The rerun compared with the archive: the outcome line, what differs, the machines. */
static int compare(repro *r)
{
    cJSON *doc = NULL;
    kt_run_result a, b;
    memset(&a, 0, sizeof(a));
    memset(&b, 0, sizeof(b));
    if (kt_run_archive_load_result(&doc, r->out) < 0 || kt_run_result_from_json(&a, r->doc) < 0 ||
        kt_run_result_from_json(&b, doc) < 0) {
        fprintf(stderr, "error: %s\n", kt_error_last());
        cJSON_Delete(doc);
        kt_run_result_free(&a);
        kt_run_result_free(&b);
        return KT_EXIT_DATAERR;
    }
    double seed_a = kt_json_get_real(kt_json_at_path(r->doc, "provenance.run.seeds"), "inputs", -1);
    double seed_b = kt_json_get_real(kt_json_at_path(doc, "provenance.run.seeds"), "inputs", -2);
    char *text = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&text, &len);
    size_t n = mem ? kt_reproduce_differences(mem, &a, &b) : 1;
    if (mem && seed_a != seed_b) {
        fprintf(mem, "  seeds: inputs %.17g, rerun %.17g\n", seed_a, seed_b);
        n++;
    }
    if (mem)
        fclose(mem);
    if (n == 0)
        printf("reproduced: the same verdicts, every speedup inside the other run's interval "
               "(%zu point%s)\n",
               a.n_points, a.n_points == 1 ? "" : "s");
    else
        printf("not reproduced: %zu difference%s\n%s", n, n == 1 ? "" : "s", text ? text : "");
    free(text);
    printf("machine and library differences between the runs (provenance):\n");
    if (kt_reproduce_machine_differences(stdout, r->doc, doc) == 0)
        printf("  none\n");
    printf("archived: %s\nrerun:    %s\n", r->archive, r->out);
    cJSON_Delete(doc);
    kt_run_result_free(&a);
    kt_run_result_free(&b);
    return n == 0 ? KT_EXIT_KEEP : KT_EXIT_REJECT;
}

/* What the archive records of its code, checked out into r->src. 0, or the exit code. */
static int materialise(repro *r)
{
    const cJSON *git = kt_json_at_path(r->doc, "provenance.git");
    char commit[41], blob[41], diff[PATH_MAX + 16], why[256], workdir[PATH_MAX];
    if (!kt_json_get_bool(git, "available", 0) || !kt_json_get_str(git, "commit", commit, 41)[0]) {
        fprintf(stderr, "error: '%s' records no commit (%s): there is no code state to rebuild\n",
                r->archive, kt_json_get_str(git, "reason", why, sizeof(why))[0] ? why : "no git");
        return KT_EXIT_DATAERR;
    }
    int dirty = kt_json_get_bool(git, "dirty", 0);
    kt_json_get_str(git, "diff_blob_id", blob, sizeof(blob));
    snprintf(diff, sizeof(diff), "%s/git.diff", r->archive);
    kt_recorded_tree rec = {commit, dirty ? diff : NULL, blob[0] ? blob : NULL};
    /* the repository: where reproduce runs, else the work tree the run recorded */
    kt_json_get_str(git, "workdir", workdir, sizeof(workdir));
    size_t files = 0;
    if (kt_archive_mkdirs(r->src) < 0 ||
        (kt_reproduce_tree(&rec, ".", r->src, &files) < 0 &&
         (!workdir[0] || kt_reproduce_tree(&rec, workdir, r->src, &files) < 0))) {
        fprintf(stderr, "error: cannot rebuild the recorded tree: %s\n", kt_error_last());
        return KT_EXIT_DATAERR;
    }
    fprintf(stderr, "tree: %.7s%s checked out into %s\n", commit,
            dirty ? " + git.diff" : " (clean)", r->src);
    if (dirty)
        fprintf(stderr, "tree: git.diff applied, %zu file%s\n", files, files == 1 ? "" : "s");
    return 0;
}

/* r->out: -o, else results/<stamp>-<name>-reproduced. */
static void choose_out(repro *r)
{
    char stamp[32], name[128];
    if (r->o->out_dir) {
        snprintf(r->out, sizeof(r->out), "%s", r->o->out_dir);
        return;
    }
    kt_run_stamp(stamp, sizeof(stamp), time(NULL));
    kt_json_get_str(kt_json_at_path(r->doc, "spec.parsed"), "name", name, sizeof(name));
    /* a name from a result file that may be hostile names no other folder */
    int ok = name[0] && strspn(name, "abcdefghijklmnopqrstuvwxyz0123456789._-") == strlen(name) &&
             strcmp(name, ".") != 0 && strcmp(name, "..") != 0;
    snprintf(r->out, sizeof(r->out), "results/%s-%s-reproduced", stamp, ok ? name : "experiment");
}

int kt_reproduce(const kt_reproduce_options *o)
{
    repro r;
    memset(&r, 0, sizeof(r));
    r.o = o;
    if (kt_run_archive_load_result(&r.doc, o->archive) < 0) {
        fprintf(stderr, "error: '%s': %s\n", o->archive, kt_error_last());
        return KT_EXIT_DATAERR;
    }
    snprintf(r.archive, sizeof(r.archive), "%s", o->archive);
    size_t len = strlen(r.archive);
    if (len > 12 && strcmp(r.archive + len - 12, "/result.json") == 0)
        r.archive[len - 12] = '\0';
    choose_out(&r);
    char *out_abs = realpath(".", NULL);
    if (r.out[0] != '/' && out_abs) { /* the rerun runs in the tree: an absolute path */
        char rel[PATH_MAX];
        snprintf(rel, sizeof(rel), "%s", r.out);
        snprintf(r.out, sizeof(r.out), "%.2000s/%.2000s", out_abs, rel);
    }
    if (r.archive[0] != '/' && out_abs) {
        char rel[PATH_MAX];
        snprintf(rel, sizeof(rel), "%s", r.archive);
        snprintf(r.archive, sizeof(r.archive), "%.2000s/%.2000s", out_abs, rel);
    }
    free(out_abs);
    const char *tmpdir = getenv("TMPDIR");
    snprintf(r.tmp, sizeof(r.tmp), "%s/ktrial-reproduce.XXXXXX",
             tmpdir && *tmpdir ? tmpdir : "/tmp");
    if (!mkdtemp(r.tmp)) {
        fprintf(stderr, "error: cannot make a temporary folder '%s': %s\n", r.tmp, strerror(errno));
        cJSON_Delete(r.doc);
        return KT_EXIT_IOERR;
    }
    snprintf(r.src, sizeof(r.src), "%s/src", r.tmp);
    snprintf(r.build, sizeof(r.build), "%s/build", r.tmp);
    int rc = materialise(&r);
    if (rc == 0)
        rc = build(&r);
    if (rc == 0)
        rc = rerun(&r);
    if (rc == 0)
        rc = compare(&r);
    if (o->keep || rc == KT_EXIT_SOFTWARE)
        fprintf(stderr, "the tree, its build and the logs are kept in %s\n", r.tmp);
    else
        nftw(r.tmp, remove_one, 16, FTW_DEPTH | FTW_PHYS);
    cJSON_Delete(r.doc);
    return rc;
}
