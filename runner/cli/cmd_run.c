/* cmd_run.c - 'ktrial run': validate, run every point in a supervised worker, archive as we
 * go, print the summary, exit with the verdict. */
#include "archive/archive.h"
#include "cli/commands.h"
#include "cli/options.h"
#include "util/json.h"
#include "spec/command_spec.h"
#include "spec/matrix.h"
#include "spec/plan.h"
#include "util/memory.h"
#include "archive/provenance.h"
#include "archive/result_json.h"
#include "report/cells.h"
#include "report/writers.h"
#include "archive/run_archive.h"
#include "util/sha256.h"
#include "archive/provenance_plugin.h"
#include "spec/spec.h"
#include "spec/spec_json.h"
#include "util/version.h"
#include "measure/worker.h"
#include "measure/command.h"
#include "decide/sequential.h"
#include "archive/command_archive.h"
#include "report/report.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

typedef struct run_options {
    const char *spec_path;
    const char *out_dir;
    const char *backend;
    const char *resume_dir;
    int quick, require_clean, force, json, report, no_profile, profile;
    kt_ci_files ci;               /* --junit FILE, --markdown FILE: written at the end */
    int shard_index, shard_count; /* 1-based index of count */
} run_options;

typedef struct run_state {
    run_options opt;
    kt_spec *spec;
    const kt_matrix *matrix; /* the spec's (expanded once, when it loaded) */
    kt_git_state git;
    char dir[PATH_MAX];
    char spec_sha[65];
    char run_id[KT_RUN_ID_LEN]; /* new, or the resumed archive's */
    time_t started;
    kt_run_result run;
    kt_point_result *done; /* --resume: the points already archived, reused by id */
    size_t n_done;
    int interrupted;
    int argc;
    char **argv;
    /* progress */
    int tty;
    size_t point_index, n_todo;
    const char *current_id;
    double start_s;
    /* the plan and the budget */
    kt_plan plan;
    double estimate_s;      /* the plan's seconds for the points this run started with */
    double left_estimate_s; /* re-estimated after each point */
    double elapsed_s;       /* of the points loop */
    int over_budget;        /* budget.max_minutes passed: no new point was started */
    size_t not_run;
    int resumed_other_code; /* --resume --force across another commit or work tree */
    cJSON *sessions;        /* --resume: provenance.run.sessions before this one */
    size_t n_archived;      /* points this session added to points.jsonl */
} run_state;

static volatile sig_atomic_t got_signal;

/* Acknowledged at once (write(2) is async-signal-safe): the first stops the run after the
 * current pair, the second stops the worker now. */
static void on_signal(int sig)
{
    (void)sig;
    static const char first[] = "\ninterrupt: finishing the current pair; Ctrl-C again to stop "
                                "now\n";
    static const char second[] = "\ninterrupt: stopping the worker now\n";
    if (got_signal == 0) {
        got_signal = 1;
        if (write(STDERR_FILENO, first, sizeof(first) - 1) < 0)
            return;
    } else if (got_signal == 1) {
        got_signal = 2;
        if (write(STDERR_FILENO, second, sizeof(second) - 1) < 0)
            return;
    }
}

/* An integer environment variable, or 'fallback' when unset or not a number. */
static int env_int(const char *name, int fallback)
{
    const char *v = getenv(name);
    char *end;
    long n = v && *v ? strtol(v, &end, 10) : 0;
    return v && *v && *end == '\0' && n >= 0 && n < 1000000 ? (int)n : fallback;
}

/* "I/N", or "auto": this task of a Slurm job array (index counted from the array's first). */
static int parse_shard(run_options *o, const char *s)
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

static int parse_args(run_options *o, int argc, char **argv)
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
        return kt_opt_check_choice("run", "--backend", o->backend, kt_backend_choices, 5);
    return 0;
}

/* Says why the backend cannot run, or notes the fallback 'auto' took. */
static void flush_diag(kt_diag *diag)
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

static int check_backend(const kt_spec *spec)
{
    const kt_backend_iface *iface = kt_backend_find(spec->backend);
    if (!iface) {
        fprintf(stderr, "error: backend '%s' is not built into this ktrial%s\n", spec->backend,
                strcmp(spec->backend, "cuda") == 0 ? " (configure with -DKT_CUDA=ON)" : "");
        return KT_EXIT_UNAVAILABLE;
    }
    kt_device_info info;
    if (iface->probe(&info) < 0 || !info.available) {
        fprintf(stderr, "error: backend '%s' is unavailable: %s\n", spec->backend, info.reason);
        return KT_EXIT_UNAVAILABLE;
    }
    library_warnings(spec, &info);
    if (strcmp(spec->backend_requested, "auto") == 0 && strcmp(spec->backend, "cpu") == 0) {
        const kt_backend_iface *cuda = kt_backend_find("cuda");
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

/* The folder's lock, held until ktrial exits: a second run on it is refused. */
static int lock_folder(run_state *st)
{
    int fd = kt_archive_lock(st->dir);
    if (fd == KT_ARCHIVE_BUSY) {
        fprintf(stderr, "error: %s; use another folder\n", kt_error_last());
        return KT_EXIT_DATAERR;
    }
    if (fd < 0) {
        fprintf(stderr, "error: %s\n", kt_error_last());
        return KT_EXIT_IOERR;
    }
    return 0;
}

/* Nothing in 'dir' but the lock. */
static int folder_empty(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int empty = d != NULL;
    while (d && empty && (e = readdir(d)))
        empty = strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0 ||
                strcmp(e->d_name, KT_ARCHIVE_LOCK) == 0;
    if (d)
        closedir(d);
    return empty;
}

/* A run writes result.json (status running) before its first point and points.jsonl after
 * it: a run stopped during its first point has only the first. */
static int folder_holds_run(const char *dir)
{
    static const char *const files[] = {"points.jsonl", "result.json"};
    char probe[PATH_MAX];
    struct stat sb;
    for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
        snprintf(probe, sizeof(probe), "%s/%s", dir, files[i]);
        if (lstat(probe, &sb) == 0)
            return 1;
    }
    return 0;
}

static int choose_folder(run_state *st)
{
    if (st->opt.resume_dir) {
        snprintf(st->dir, sizeof(st->dir), "%s", st->opt.resume_dir);
        struct stat sb;
        int missing = stat(st->dir, &sb) != 0;
        if (missing || !S_ISDIR(sb.st_mode)) {
            fprintf(stderr, "error: cannot resume '%s': %s\n", st->dir,
                    !missing          ? "not a folder"
                    : errno == ENOENT ? "no such folder"
                                      : strerror(errno));
            return KT_EXIT_DATAERR;
        }
        return lock_folder(st);
    }
    if (!kt_archive_name_ok(st->spec->name)) { /* the schema checks it too: never trust one */
        fprintf(stderr, "error: spec name '%s' is not [a-z0-9._-]+ (not '.' or '..')\n",
                st->spec->name);
        return KT_EXIT_DATAERR;
    }
    if (st->opt.out_dir) {
        snprintf(st->dir, sizeof(st->dir), "%s", st->opt.out_dir);
    } else {
        char stamp[32];
        struct tm tm;
        gmtime_r(&st->started, &tm);
        strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%SZ", &tm);
        snprintf(st->dir, sizeof(st->dir), "results/%s-%s-%s%s", stamp, st->spec->name,
                 st->git.available ? st->git.short_id : "nogit",
                 st->git.available && st->git.dirty ? "-dirty" : "");
    }
    if (kt_archive_mkdirs(st->dir) < 0) {
        fprintf(stderr, "error: %s\n", kt_error_last());
        return KT_EXIT_IOERR;
    }
    int rc = lock_folder(st);
    if (rc)
        return rc;
    if (folder_holds_run(st->dir)) {
        fprintf(stderr, "error: '%s' already holds a run; continue it with --resume '%s'\n",
                st->dir, st->dir);
        return KT_EXIT_DATAERR;
    }
    if (!folder_empty(st->dir)) {
        fprintf(stderr,
                "error: '%s' is not empty and holds no run; give -o a new or empty folder\n",
                st->dir);
        return KT_EXIT_DATAERR;
    }
    return 0;
}

/* A run id read back is one kt_run_id_new could have written: it lands in samples.csv. */
static int run_id_ok(const char *id)
{
    if (!id[0])
        return 0;
    for (; *id; id++)
        if (!isalnum((unsigned char)*id) && *id != '-')
            return 0;
    return 1;
}

/* Whose rows samples.csv holds: this archive's run id and the code's commit. */
static kt_samples_ids samples_ids(const run_state *st)
{
    kt_samples_ids ids = {st->run_id, st->git.available ? st->git.commit : ""};
    return ids;
}

/* What an archive was run as, which no resume may change: its shard, --quick and backend. A
 * shard's archive resumed as the whole matrix (or as another shard) would keep points that
 * 'ktrial merge' then counts twice; --quick's points would stand beside uncapped ones; and
 * points of another backend would enter one verdict with this one's. --force does not
 * override these: they are not a changed spec or commit but another run. */
static int check_resume_run(const run_state *st, const cJSON *doc)
{
    const cJSON *prov = cJSON_GetObjectItemCaseSensitive(doc, "provenance");
    const cJSON *run = cJSON_GetObjectItemCaseSensitive(prov, "run");
    char shard[32], now[32], backend[32], flags[64];
    const cJSON *recorded = kt_json_at_path(run, "shard");
    int si, sc;
    if (kt_result_shard(doc, &si, &sc) < 0 && recorded) /* absent: from before shards, 1/1 */
        snprintf(shard, sizeof(shard), "'%.16s'",
                 cJSON_IsString(recorded) ? recorded->valuestring : "?");
    else
        snprintf(shard, sizeof(shard), "%d/%d", si, sc);
    snprintf(now, sizeof(now), "%d/%d", st->opt.shard_index, st->opt.shard_count);
    int quick = kt_json_get_bool(run, "quick", 0), bad = 0;
    if (strcmp(shard, now) != 0) {
        fprintf(stderr, "error: '%s' holds shard %s%s, this run would be shard %s%s\n", st->dir,
                shard, strcmp(shard, "1/1") ? "" : " (the whole matrix)", now,
                strcmp(now, "1/1") ? "" : " (the whole matrix)");
        bad = 1;
    }
    if (quick != st->opt.quick) {
        fprintf(stderr, "error: '%s' was run %s --quick; resume it the same way\n", st->dir,
                quick ? "with" : "without");
        bad = 1;
    }
    kt_json_get_str(cJSON_GetObjectItemCaseSensitive(prov, "device"), "backend", backend,
                    sizeof(backend));
    if (backend[0] && strcmp(backend, st->spec->backend) != 0) {
        fprintf(stderr, "error: '%s' was measured on backend '%s', this run would use '%s'\n",
                st->dir, backend, st->spec->backend);
        bad = 1;
    }
    if (!bad)
        return 0;
    if (strcmp(shard, "1/1") != 0 || quick) {
        char cont[600];
        int n =
            snprintf(cont, sizeof(cont), "ktrial run %s --resume %s", st->opt.spec_path, st->dir);
        if (n > 0 && (size_t)n < sizeof(cont))
            fprintf(stderr, "hint: continue it with: %s%s\n", cont,
                    kt_resume_flags(flags, sizeof(flags), si, sc, quick));
    }
    return KT_EXIT_DATAERR;
}

/* Whether the work tree differs from the one the run was started with, at the same commit:
 * its dirty state, or the patch (git.diff's blob id). Says how in 'why'. */
static int work_tree_changed(char *why, size_t len, const run_state *st, const cJSON *git)
{
    char blob[48];
    kt_json_get_str(git, "diff_blob_id", blob, sizeof(blob));
    int was_dirty = kt_json_get_bool(git, "dirty", 0);
    int dirty = st->git.available && st->git.dirty;
    const char *now = dirty ? st->git.diff_blob_id : "";
    if (was_dirty == dirty && strcmp(blob, now) == 0)
        return 0;
    if (!was_dirty)
        snprintf(why, len, "the run was started on a clean work tree, which now has changes");
    else if (!dirty)
        snprintf(why, len,
                 "the run was started with local changes (git.diff), the work tree "
                 "is now clean");
    else
        snprintf(why, len,
                 "the work tree's changes differ from the run's (git.diff blob %.12s, "
                 "now %.12s)",
                 blob, now);
    return 1;
}

/* --resume: the same spec bytes and the same code, unless --force. */
static int check_resume(run_state *st)
{
    cJSON *doc = NULL;
    if (kt_run_archive_load_result(&doc, st->dir) < 0) {
        fprintf(stderr, "error: cannot resume '%s': %s\n", st->dir, kt_error_last());
        return KT_EXIT_DATAERR;
    }
    char sha[80], commit[48];
    const cJSON *spec = cJSON_GetObjectItemCaseSensitive(doc, "spec");
    const cJSON *prov = cJSON_GetObjectItemCaseSensitive(doc, "provenance");
    const cJSON *git = cJSON_GetObjectItemCaseSensitive(prov, "git");
    kt_json_get_str(spec, "sha256", sha, sizeof(sha));
    kt_json_get_str(git, "commit", commit, sizeof(commit));
    char old_id[KT_RUN_ID_LEN];
    kt_json_get_str(kt_json_at_path(prov, "run"), "id", old_id, sizeof(old_id));
    if (run_id_ok(old_id)) /* else written before ids (or tampered with): keep the new one */
        memcpy(st->run_id, old_id, sizeof(old_id));
    cJSON *plugins_now = kt_provenance_plugins_json(st->spec);
    char changed[256];
    int bad = kt_provenance_plugin_changes(changed, sizeof(changed),
                                           cJSON_GetObjectItemCaseSensitive(prov, "plugins"),
                                           plugins_now) > 0;
    if (bad)
        fprintf(stderr, "%s: %s\n", st->opt.force ? "warning" : "error", changed);
    cJSON_Delete(plugins_now);
    st->sessions = kt_provenance_prior_sessions(doc);
    int rc = check_resume_run(st, doc);
    char name[KT_NAME_MAX];
    kt_json_get_str(kt_json_at_path(spec, "parsed"), "name", name, sizeof(name));
    if (name[0] && strcmp(name, st->spec->name) != 0) {
        /* not a changed spec but another experiment: --force does not override it */
        fprintf(stderr, "error: '%s' holds experiment '%s', the spec is experiment '%s'\n", st->dir,
                name, st->spec->name);
        rc = KT_EXIT_DATAERR;
    }
    char tree[160] = "";
    int tree_changed = st->git.available && strcmp(commit, st->git.commit) == 0 &&
                       work_tree_changed(tree, sizeof(tree), st, git);
    cJSON_Delete(doc);
    if (rc)
        return rc;
    if (strcmp(sha, st->spec_sha) != 0) {
        fprintf(stderr,
                "%s: the spec differs from the one '%s' was started with (sha256 %.12s, "
                "now %.12s)\n",
                st->opt.force ? "warning" : "error", st->dir, sha, st->spec_sha);
        bad = 1;
    }
    const char *now = st->git.available ? st->git.commit : "";
    if (strcmp(commit, now) != 0) {
        fprintf(stderr, "%s: the code is at commit '%s', the run was started at '%s'\n",
                st->opt.force ? "warning" : "error", now[0] ? now : "(no git)",
                commit[0] ? commit : "(no git)");
        bad = 1;
        st->resumed_other_code = 1;
    }
    if (tree_changed) {
        char real[PATH_MAX];
        fprintf(stderr, "%s: %s\n", st->opt.force ? "warning" : "error", tree);
        if (realpath(st->dir, real) && st->git.workdir &&
            strncmp(real, st->git.workdir, strlen(st->git.workdir)) == 0)
            fprintf(stderr,
                    "hint: '%s' lies inside the work tree: unless git ignores it, the "
                    "run's own files are such changes (add it to .gitignore)\n",
                    st->dir);
        bad = 1;
        st->resumed_other_code = 1;
    }
    if (bad && !st->opt.force) {
        fprintf(stderr, "hint: use --force to resume anyway\n");
        return KT_EXIT_DATAERR;
    }
    return 0;
}

typedef struct resume_match {
    const kt_spec *spec;
    int force;
    size_t mismatched;
    char first[KT_NAME_MAX * 2];
} resume_match;

/* A stored point is reused only when it was measured with the spec's candidates, by name
 * and in order: its results are indexed by position. */
static int same_candidates(const kt_point_result *p, void *ctx)
{
    resume_match *m = ctx;
    int same = p->n_cands == m->spec->n_candidates;
    for (size_t k = 0; same && k < p->n_cands; k++)
        same = strcmp(p->cands[k].arm.name, m->spec->candidates[k].name) == 0;
    if (!same && m->mismatched++ == 0)
        snprintf(m->first, sizeof(m->first), "%s", p->point.id);
    return same || !m->force; /* without --force nothing is dropped: the run stops */
}

static int load_resumed(run_state *st)
{
    resume_match m = {st->spec, st->opt.force, 0, ""};
    char path[PATH_MAX];
    struct stat sb;
    snprintf(path, sizeof(path), "%s/points.jsonl", st->dir);
    if (lstat(path, &sb) != 0) {
        st->n_done = 0; /* stopped before its first point finished */
    } else if (kt_run_archive_load_points(&st->done, &st->n_done, st->dir, same_candidates, &m) <
               0) {
        fprintf(stderr, "error: cannot resume '%s': %s\n", st->dir, kt_error_last());
        return KT_EXIT_DATAERR;
    }
    if (m.mismatched && !st->opt.force) {
        fprintf(stderr,
                "error: %zu archived point%s of '%s' (first '%s') were measured with other "
                "candidates than the spec names\nhint: use --force to measure those points "
                "again\n",
                m.mismatched, m.mismatched == 1 ? "" : "s", st->dir, m.first);
        return KT_EXIT_DATAERR;
    }
    if (m.mismatched)
        fprintf(stderr,
                "warning: %zu archived point%s measured with other candidates will be "
                "measured again\n",
                m.mismatched, m.mismatched == 1 ? "" : "s");
    kt_samples_ids ids = samples_ids(st);
    if (kt_run_archive_rewrite_samples(st->dir, st->done, st->n_done, st->spec, &ids) < 0) {
        fprintf(stderr, "error: %s\n", kt_error_last());
        return KT_EXIT_IOERR;
    }
    return 0;
}

/* threads: 0 means every online core. */
static int resolved_threads(const kt_spec *spec)
{
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    return spec->threads > 0 ? spec->threads : (cores > 0 ? (int)cores : 1);
}

/* A machine already busy at the start disturbs the timed pairs: warn when the 1-minute load
 * average exceeds the cores the run leaves free, plus one for ordinary background work. More
 * threads than cores (a spec written for a bigger machine) is said too: the kernels' threads
 * then take turns on the cores, and every barrier waits for the one descheduled. */
static void warn_load(const kt_spec *spec)
{
    double load;
    FILE *f = strcmp(spec->backend, "sim") == 0 ? NULL : fopen("/proc/loadavg", "r");
    if (!f)
        return;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    int threads = spec->command ? 0 : resolved_threads(spec); /* a command's own business */
    if (cores > 0 && threads > cores)
        fprintf(stderr,
                "warning: threads: %d is more than the %ld online core(s): the threads take "
                "turns on them, and the times measure that; set threads to at most %ld\n",
                threads, cores, cores);
    double free_cores = cores > threads ? (double)(cores - threads) : 0.0;
    int busy = fscanf(f, "%lf", &load) == 1 && load > free_cores + 1;
    if (busy && spec->command)
        fprintf(stderr,
                "warning: load average %.2f at start exceeds the %ld online core(s): expect "
                "disturbed pairs and wider intervals\n",
                load, cores);
    else if (busy)
        fprintf(stderr,
                "warning: load average %.2f at start exceeds the %.0f core(s) this run leaves "
                "free (%ld online, %d threads): expect disturbed pairs and wider intervals\n",
                load, free_cores, cores, threads);
    fclose(f);
}

/* Interrupted: 130. A shard's verdict is not the experiment's: a shard that measured its
 * points exits 0, so a scheduler's 'afterok' dependency starts the merge, which forms the
 * verdict. Over budget: the points not run leave the answer open (2), unless a measured
 * point already rejected a candidate (1); a shard over budget exits 2. */
static int run_exit_code(const run_state *st)
{
    if (st->interrupted)
        return KT_EXIT_INTERRUPTED;
    if (st->opt.shard_count > 1)
        return st->over_budget ? KT_EXIT_INCONCLUSIVE : KT_EXIT_KEEP;
    int rc = kt_run_exit_code(&st->run);
    if (st->over_budget && rc == KT_EXIT_KEEP)
        rc = KT_EXIT_INCONCLUSIVE;
    return rc;
}

static cJSON *result_document(run_state *st, const char *status, time_t finished)
{
    cJSON *doc = cJSON_CreateObject();
    cJSON_AddNumberToObject(doc, "schema_version", KT_RESULT_SCHEMA_VERSION);
    cJSON *tool = cJSON_AddObjectToObject(doc, "tool");
    cJSON_AddStringToObject(tool, "name", "ktrial");
    cJSON_AddStringToObject(tool, "version", kt_version());
    cJSON_AddStringToObject(tool, "commit", kt_build_commit());
    cJSON_AddBoolToObject(tool, "dirty", kt_build_dirty());
    cJSON_AddStringToObject(doc, "status", status);
    cJSON *spec = cJSON_AddObjectToObject(doc, "spec");
    cJSON_AddStringToObject(spec, "path", st->spec->path);
    cJSON_AddStringToObject(spec, "sha256", st->spec_sha);
    cJSON_AddNumberToObject(spec, "bytes", (double)st->spec->len);
    cJSON_AddItemToObject(spec, "parsed", kt_spec_to_json(st->spec));

    cJSON *prov = kt_provenance_json(&st->git);
    kt_device_info info;
    const kt_backend_iface *iface = kt_backend_find(st->spec->backend);
    iface->probe(&info);
    cJSON_AddItemToObject(prov, "device", kt_provenance_device_json(st->spec->backend, &info));
    if (st->spec->n_plugins)
        cJSON_AddItemToObject(prov, "plugins", kt_provenance_plugins_json(st->spec));
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
    cJSON_AddNumberToObject(run, "threads", resolved_threads(st->spec));
    cJSON_AddStringToObject(run, "id", st->run_id);
    cJSON *sessions = st->sessions ? cJSON_Duplicate(st->sessions, 1) : cJSON_CreateArray();
    if (sessions) {
        cJSON_AddItemToArray(sessions,
                             kt_provenance_session_json(&st->git, st->started, finished, st->argc,
                                                        st->argv, (double)st->n_archived));
        cJSON_AddItemToObject(run, "sessions", sessions);
    }
    cJSON_AddItemToObject(doc, "provenance", prov);

    if (strcmp(status, "running") == 0 || strcmp(status, "failed") == 0)
        /* no decision: a run that never finished must not read as one that decided */
        cJSON_AddNullToObject(doc, "decision");
    else
        cJSON_AddItemToObject(doc, "decision",
                              kt_decision_to_json(&st->run, st->spec, run_exit_code(st)));
    cJSON *timing = cJSON_AddObjectToObject(doc, "timing"); /* this run's, not the verdict's */
    cJSON_AddNumberToObject(timing, "not_run", (double)st->not_run);
    if (!isnan(st->spec->budget_minutes))
        kt_json_add_real(timing, "budget_seconds", st->spec->budget_minutes * 60.0);
    kt_json_add_real(timing, "estimate_seconds", st->estimate_s);
    kt_json_add_real(timing, "elapsed_seconds", st->elapsed_s);
    cJSON *points = cJSON_AddArrayToObject(doc, "points");
    for (size_t i = 0; i < st->run.n_points; i++)
        cJSON_AddItemToArray(points, kt_point_result_to_json(&st->run.points[i], st->spec));
    cJSON_AddItemToObject(doc, "candidates", kt_candidate_verdicts_to_json(&st->run));
    return doc;
}

static int write_result(run_state *st, const char *status, time_t finished)
{
    cJSON *doc = result_document(st, status, finished);
    char *text = doc ? kt_json_print(doc) : NULL;
    cJSON_Delete(doc);
    if (!text)
        return kt_error_set("out of memory");
    int rc = kt_archive_write(st->dir, "result.json", text, strlen(text));
    free(text);
    return rc;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void show_progress(void *ctx, int reps, int max_reps)
{
    run_state *st = ctx;
    double elapsed = now_s() - st->start_s;
    double per_point = st->point_index ? elapsed / (double)st->point_index : 0;
    double eta = per_point * (double)(st->n_todo - st->point_index);
    fprintf(stderr, "\r\033[Kpoint %zu/%zu  %-32.32s  pairs %d/%d  %.0fs elapsed",
            st->point_index + 1, st->n_todo, st->current_id ? st->current_id : "", reps, max_reps,
            elapsed);
    if (st->point_index)
        fprintf(stderr, "  ETA %.0fs", eta);
    fflush(stderr);
}

/* The start-up watchdog: the spec's trials.max_startup_seconds, else 120 s or 20 times the
 * plan's start-up estimate for the point, whichever is longer. */
static double startup_limit(const kt_spec *spec, const kt_point *pt)
{
    if (!isnan(spec->max_startup_seconds))
        return spec->max_startup_seconds;
    return fmax(120.0, 20.0 * kt_plan_startup_seconds(spec, pt));
}

/* Without a terminal (a pipe, CI): one line when a point starts, one when its timed pairs
 * start, and one with its verdicts when it ends, all on stderr. */
static void note_measuring(void *ctx)
{
    run_state *st = ctx;
    fprintf(stderr, "[%zu/%zu] %s: timed pairs\n", st->point_index + 1, st->n_todo, st->current_id);
    fflush(stderr);
}

static void note_point_start(const run_state *st)
{
    fprintf(stderr, "[%zu/%zu] %s: start-up (%s)\n", st->point_index + 1, st->n_todo,
            st->current_id,
            strcmp(st->spec->op->name, "command") == 0 ? "the arms' setup"
                                                       : "inputs, float64 reference, prepare");
    fflush(stderr);
}

/* Decimals of an estimate on a progress line: whole seconds, one decimal under 10 s ("0.4 s",
 * never "0 s" for a plan that takes some time). */
static int estimate_decimals(double seconds)
{
    return seconds < 10 ? 1 : 0;
}

static void note_point_end(const run_state *st, const kt_point_result *r, double seconds,
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
        fprintf(stderr, "; estimate %.*f s left", estimate_decimals(left_s), left_s);
    fputc('\n', stderr);
    fflush(stderr);
}

/* Seconds the points after the current one should take: the plan's estimate for them
 * scaled by how far off it was so far, or, without a plan (command specs, or a plan of
 * zero), the mean time of the points measured so far. */
static double time_left(const run_state *st, double estimated_done, double measured_done)
{
    if (estimated_done > 0 && isfinite(st->left_estimate_s))
        return fmax(0, st->left_estimate_s) * measured_done / estimated_done;
    size_t done = st->point_index + 1;
    return measured_done / (double)done * (double)(st->n_todo - done);
}

static int already_done(const kt_point_result *done, size_t n_done, const char *id)
{
    for (size_t i = 0; i < n_done; i++)
        if (strcmp(done[i].point.id, id) == 0)
            return (int)i;
    return -1;
}

/* The plan of the points this run will measure (--quick's cap applied), and a line saying
 * it on stderr. */
static void plan_run(run_state *st, const kt_point_result *done, size_t n_done)
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
        if ((int)(i % (size_t)st->opt.shard_count) != st->opt.shard_index - 1 ||
            already_done(done, n_done, st->matrix->points[i].id) >= 0)
            continue;
        st->estimate_s += st->plan.point_seconds[i];
        n++;
    }
    if (st->spec->command) /* a command's cost is known only by running it */
        st->estimate_s = NAN;
    st->left_estimate_s = st->estimate_s;
    if (st->opt.json)
        return;
    if (st->spec->command)
        fprintf(stderr,
                "plan: %zu point%s to measure, estimate after the first point (`ktrial "
                "validate --plan` calls each arm once to price a command spec)",
                n, n == 1 ? "" : "s");
    else
        fprintf(stderr, "plan: %zu point%s to measure, estimate %.*f s", n, n == 1 ? "" : "s",
                estimate_decimals(st->estimate_s), st->estimate_s);
    if (!isnan(st->spec->budget_minutes))
        fprintf(stderr, " (budget %g min)", st->spec->budget_minutes);
    fputc('\n', stderr);
}

/* Past budget.max_minutes (and not --force): start no new point. */
static int over_budget(const run_state *st)
{
    return !isnan(st->spec->budget_minutes) && !st->opt.force &&
           now_s() - st->start_s > st->spec->budget_minutes * 60.0;
}

static size_t shard_size(const run_state *st)
{
    size_t todo = 0;
    for (size_t i = 0; i < st->matrix->n; i++)
        todo += (int)(i % (size_t)st->opt.shard_count) == st->opt.shard_index - 1;
    return todo;
}

/* command trials keep outputs and failure details under the run folder */
static int keep_command_file(void *ctx, const char *point_id, const char *arm, const char *name,
                             const char *src, const char *text)
{
    const run_state *st = ctx;
    int rc = kt_command_archive_keep(st->dir, point_id, arm, name, src, text);
    if (rc < 0)
        fprintf(stderr, "warning: cannot keep '%s' of '%s' at %s: %s\n", name, arm, point_id,
                kt_error_last());
    return rc;
}

/* --quick caps every point at KT_QUICK_MAX_REPETITIONS pairs. The spec's check refused a
 * design that can never decide at its own max_repetitions; under the cap one may never decide
 * either (a high confidence split over many points needs more pairs for a finite interval), and
 * every point would then end without a verdict: refuse it before anything runs. */
static int check_quick(const run_state *st)
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
static int check_memory(const run_state *st)
{
    const kt_spec *spec = st->spec;
    size_t worst = 0;
    double need = 0;
    for (size_t i = 0; i < st->matrix->n && !spec->command; i++) { /* the points of this shard */
        kt_problem p;
        if ((int)(i % (size_t)st->opt.shard_count) != st->opt.shard_index - 1 ||
            kt_op_shape(spec->op, &p, &st->matrix->points[i], spec->dtype, spec->input_params) !=
                KT_OK)
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

/* One point: command specs run their commands from here (each call is its own process),
 * kernel specs in a forked worker. */
static int run_one_point(run_state *st, kt_point_result *slot, const kt_point *pt,
                         const kt_worker_options *wo)
{
    if (!st->spec->command)
        return kt_worker_run_point(slot, st->spec, pt, wo);
    kt_command_hooks hooks = {keep_command_file, wo->on_progress, st, &got_signal, st->opt.quick};
    return kt_command_run_point(slot, st->spec, pt, &hooks);
}

static int run_points(run_state *st)
{
    kt_point_result *done = st->done;
    size_t n_done = st->n_done;
    size_t n = st->matrix->n;
    st->run.points = calloc(n ? n : 1, sizeof(*st->run.points));
    if (!st->run.points)
        return kt_error_set("out of memory");
    st->n_todo = shard_size(st);
    plan_run(st, done, n_done);
    st->start_s = now_s();
    kt_worker_options wo = {st->spec->backend,
                            resolved_threads(st->spec),
                            st->opt.quick,
                            fmax(120.0, 5.0 * st->spec->max_seconds_per_point),
                            0,
                            &got_signal,
                            st->tty ? show_progress : NULL,
                            st->tty ? NULL : note_measuring,
                            st,
                            st->opt.no_profile};
    int rc = 0;
    double estimated_done = 0, measured_done = 0;
    for (size_t i = 0; i < n && !st->interrupted; i++) {
        if ((int)(i % (size_t)st->opt.shard_count) != st->opt.shard_index - 1)
            continue;
        const kt_point *pt = &st->matrix->points[i];
        kt_point_result *slot = &st->run.points[st->run.n_points];
        int d = already_done(done, n_done, pt->id);
        if (d >= 0) {
            *slot = done[d];
            memset(&done[d], 0, sizeof(done[d]));
            st->run.n_points++;
            st->point_index++;
            continue;
        }
        if (over_budget(st)) {
            st->over_budget = 1;
            st->not_run = st->n_todo - st->point_index;
            fprintf(stderr,
                    "budget: %.1f min passed budget.max_minutes = %g; %zu point%s not run "
                    "(--force runs past the budget; --resume continues)\n",
                    (now_s() - st->start_s) / 60.0, st->spec->budget_minutes, st->not_run,
                    st->not_run == 1 ? "" : "s");
            break;
        }
        st->current_id = pt->id;
        wo.startup_timeout_s = startup_limit(st->spec, pt);
        double point_start = now_s();
        if (st->tty)
            show_progress(st, 0, st->spec->max_repetitions);
        else
            note_point_start(st);
        if (run_one_point(st, slot, pt, &wo) < 0) {
            rc = kt_error_set("point '%s': %s", pt->id, kt_error_last());
            break;
        }
        /* re-estimate what is left from how far off the plan was so far */
        estimated_done += st->plan.point_seconds[i];
        measured_done += now_s() - point_start;
        st->left_estimate_s -= st->plan.point_seconds[i];
        if (!st->tty)
            note_point_end(st, slot, now_s() - point_start,
                           time_left(st, estimated_done, measured_done));
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
        kt_samples_ids ids = samples_ids(st);
        if (kt_run_archive_point(st->dir, slot, st->spec, &ids) < 0) {
            rc = KT_EIO; /* the archive, not the measurement, failed */
            break;
        }
        st->n_archived++;
        if (got_signal) { /* the point finished before the signal stopped it: archived */
            st->interrupted = 1;
            break;
        }
    }
    st->elapsed_s = now_s() - st->start_s;
    if (st->tty)
        fprintf(stderr, "\r\033[K");
    for (size_t i = 0; i < n_done; i++)
        kt_point_result_free(&done[i]);
    free(done);
    st->done = NULL;
    st->n_done = 0;
    return rc;
}

static int start_archive(run_state *st)
{
    if (!st->opt.resume_dir &&
        kt_archive_write(st->dir, "spec.yaml", st->spec->bytes, st->spec->len) < 0)
        return -1;
    if (st->git.available && st->git.dirty) {
        if (kt_git_diff_write(&st->git, st->dir, "git.diff") < 0)
            return -1;
    }
    return st->opt.resume_dir ? 0 : write_result(st, "running", 0);
}

/* How long the points took, against the plan and the budget. */
static void print_time(const run_state *st)
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
static int write_reports(const run_state *st)
{
    if (st->opt.report && kt_report_write_archive(st->dir) < 0)
        return -1;
    return kt_ci_files_write(&st->opt.ci, st->dir);
}

/* The summary with the run's facts: its state, --quick, the shard, the points not run. */
static void print_summary(const run_state *st, const char *status)
{
    kt_summary_facts f;
    kt_summary_facts_init(&f, st->spec->baseline.name, kt_aggregate_name(st->spec->aggregate),
                          st->spec->min_speedup, st->spec->confidence);
    if (st->spec->command) {
        f.metric = st->spec->command->metric;
        f.metric_higher = st->spec->command->higher;
    }
    f.status = status;
    f.quick = st->opt.quick;
    f.quick_max_repetitions = KT_QUICK_MAX_REPETITIONS;
    f.shard_index = st->opt.shard_index;
    f.shard_count = st->opt.shard_count;
    const char **ids = calloc(st->matrix->n ? st->matrix->n : 1, sizeof(*ids));
    for (size_t i = 0; ids && i < st->matrix->n; i++) {
        const char *id = st->matrix->points[i].id;
        if ((int)(i % (size_t)st->opt.shard_count) == st->opt.shard_index - 1 &&
            already_done(st->run.points, st->run.n_points, id) < 0)
            ids[f.n_not_run++] = id;
    }
    f.not_run_ids = ids;
    kt_output o = {.run = &st->run, .facts = &f, .details = 1};
    o.virtual_clock = strcmp(st->spec->backend, "sim") == 0;
    kt_write("text", stdout, &o); /* the summary and the usage lines */
    free(ids);
}

static int finish(run_state *st)
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
    const char *status = st->interrupted   ? "interrupted"
                         : st->over_budget ? "over_budget"
                                           : "complete";
    if (write_result(st, status, time(NULL)) < 0) {
        fprintf(stderr, "error: %s\n", kt_error_last());
        return KT_EXIT_IOERR;
    }
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
    return run_exit_code(st);
}

/* ktrial's own pid: the forked children of the plan's calibration inherit the handler below,
 * and a Ctrl-C reaches the whole process group, so only ktrial itself speaks. */
static volatile pid_t run_pid;

/* Before the run has a folder (the spec's check, which prices the plan by calling each arm,
 * can take a while): say that nothing was written, then die by the signal as before. */
static void on_signal_before_run(int sig)
{
    static const char msg[] = "\ninterrupt: stopped before the run began; nothing was written\n";
    if (getpid() == run_pid && write(STDERR_FILENO, msg, sizeof(msg) - 1) < 0) {
        /* nothing to do: the exit below says it by the signal */
    }
    signal(sig, SIG_DFL);
    raise(sig);
}

static void set_signals(void (*handler)(int), struct sigaction *old_int, struct sigaction *old_term)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = handler;
    sigaction(SIGINT, &sa, old_int);
    sigaction(SIGTERM, &sa, old_term);
}

int cmd_run(int argc, char **argv)
{
    run_state st;
    memset(&st, 0, sizeof(st));
    int rc = parse_args(&st.opt, argc, argv);
    if (rc)
        return rc;
    st.argc = argc;
    st.argv = argv;
    st.started = time(NULL);
    kt_run_id_new(st.run_id, st.started);
    st.tty = isatty(STDERR_FILENO) && !st.opt.json; /* the live line; else one line per step */

    if (st.opt.backend && strcmp(st.opt.backend, "auto") != 0 && !kt_backend_find(st.opt.backend)) {
        fprintf(stderr, "error: backend '%s' is not built into this ktrial%s\n", st.opt.backend,
                strcmp(st.opt.backend, "cuda") == 0 ? " (configure with -DKT_CUDA=ON)" : "");
        return KT_EXIT_UNAVAILABLE;
    }
    struct sigaction old_int, old_term;
    run_pid = getpid();
    set_signals(on_signal_before_run, &old_int, &old_term);
    kt_diag diag;
    kt_diag_init(&diag);
    kt_spec_options so = {st.opt.backend, st.opt.force};
    if (kt_spec_load(&st.spec, st.opt.spec_path, &so, &diag) < 0 || diag.n_errors) {
        kt_diag_print(&diag, stderr);
        kt_diag_free(&diag);
        kt_spec_free(st.spec);
        sigaction(SIGINT, &old_int, NULL);
        sigaction(SIGTERM, &old_term, NULL);
        return KT_EXIT_DATAERR;
    }
    if ((rc = check_backend(st.spec)) != 0)
        goto done;
    if (st.opt.profile)
        st.spec->profile = 1; /* trials.profile is false by default on cuda */
    st.matrix = st.spec->matrix;
    flush_diag(&diag); /* warnings, the matrix's among them, once */

    char dir[PATH_MAX];
    spec_dir(dir, sizeof(dir), st.opt.spec_path);
    kt_git_state_collect(&st.git, dir, &diag);
    flush_diag(&diag);
    warn_stale_binary(&st.git);
    if (st.opt.require_clean && (!st.git.available || st.git.dirty)) {
        rc = refuse_dirty(&st.git);
        goto done;
    }
    kt_sha256_hex(st.spec_sha, st.spec->bytes, st.spec->len);
    if (shard_size(&st) == 0) {
        fprintf(stderr, "error: shard %d/%d of %zu point%s holds no point; nothing to decide\n",
                st.opt.shard_index, st.opt.shard_count, st.matrix->n, st.matrix->n == 1 ? "" : "s");
        rc = KT_EXIT_DATAERR;
        goto done;
    }
    if ((rc = check_quick(&st)) != 0 || (rc = check_memory(&st)) != 0)
        goto done;
    /* from here a signal stops the run between pairs and leaves it resumable */
    set_signals(on_signal, NULL, NULL);
    if ((rc = choose_folder(&st)) != 0)
        goto done;
    if (st.opt.resume_dir && ((rc = check_resume(&st)) != 0 || (rc = load_resumed(&st)) != 0))
        goto done;
    if (start_archive(&st) < 0) {
        fprintf(stderr, "error: %s\n", kt_error_last());
        rc = KT_EXIT_IOERR;
        goto done;
    }
    if (!st.opt.json && st.tty)
        fprintf(stderr, "%s: %zu point%s, %zu candidate%s, backend %s%s\n", st.spec->name,
                st.matrix->n, st.matrix->n == 1 ? "" : "s", st.spec->n_candidates,
                st.spec->n_candidates == 1 ? "" : "s", st.spec->backend,
                st.opt.quick ? " (--quick)" : "");

    warn_load(st.spec);
    int points_rc = run_points(&st);
    if (points_rc < 0) {
        fprintf(stderr, "error: %s\n", kt_error_last());
        int io = points_rc == KT_EIO;
        io |= write_result(&st, "failed", time(NULL)) < 0;
        rc = io ? KT_EXIT_IOERR : KT_EXIT_SOFTWARE;
        goto done;
    }
    rc = finish(&st);
done:
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    flush_diag(&diag);
    for (size_t i = 0; i < st.n_done; i++)
        kt_point_result_free(&st.done[i]);
    free(st.done);
    kt_run_result_free(&st.run);
    kt_plan_free(&st.plan);
    kt_git_state_free(&st.git);
    kt_spec_free(st.spec);
    cJSON_Delete(st.sessions);
    return rc;
}
