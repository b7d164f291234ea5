/* resume.c - continuing an archived run (see resume.h): what no resume may change, what
 * --force may, and which archived points are reused. */
#include "run/resume.h"

#include "archive/provenance_plugin.h"
#include "result/result_json.h"
#include "archive/run_archive.h"
#include "run/exit_code.h"

#include <ctype.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

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

/* What an archive was run as, which no resume may change: its shard, --quick and backend. A
 * shard's archive resumed as the whole matrix (or as another shard) would keep points that
 * 'ktrial merge' then counts twice; --quick's points would stand beside uncapped ones; and
 * points of another backend would enter one verdict with this one's. --force does not
 * override these: they are not a changed spec or commit but another run. */
static int check_resume_run(const kt_run *st, const cJSON *doc)
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
static int work_tree_changed(char *why, size_t len, const kt_run *st, const cJSON *git)
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
static int check_resume(kt_run *st)
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

static int load_resumed(kt_run *st)
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
    kt_samples_ids ids = kt_run_samples_ids(st);
    if (kt_run_archive_rewrite_samples(st->dir, st->done, st->n_done, st->spec, &ids) < 0) {
        fprintf(stderr, "error: %s\n", kt_error_last());
        return KT_EXIT_IOERR;
    }
    return 0;
}

int kt_run_resume(kt_run *st)
{
    int rc = check_resume(st);
    if (rc == 0)
        rc = load_resumed(st);
    return rc ? rc : kt_run_redecide_resumed(st);
}
