/* merge.c - merging the shards of a run (see merge.h): their loading, the checks that they
 * make one run, the points gathered in the matrix's order, and the merged archive, whose
 * result.json comes from the one builder (result_doc.h). */
#include "run/merge.h"

#include "archive/archive.h"
#include "archive/archive_check.h"
#include "archive/command_archive.h"
#include "archive/provenance.h"
#include "result/result_json.h"
#include "archive/run_archive.h"
#include "run/exit_code.h"
#include "result/result_doc.h"
#include "spec/matrix.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

static const char *text_at(const cJSON *doc, const char *dotted)
{
    const cJSON *v = kt_json_at_path(doc, dotted);
    return cJSON_IsString(v) ? v->valuestring : "";
}

/* Reads each shard's result.json and its finished points (points.jsonl; a shard stopped before
 * its first point finished has none, as for --resume, and its points are reported missing). */
static int load_shards(kt_merge *m)
{
    for (int i = 0; i < m->n; i++) {
        kt_merge_shard *s = &m->shards[i];
        char path[PATH_MAX];
        struct stat sb;
        snprintf(path, sizeof(path), "%s/points.jsonl", s->dir);
        int none = lstat(path, &sb) != 0 && errno == ENOENT;
        if (kt_run_archive_load_result(&s->doc, s->dir) < 0 ||
            (!none &&
             kt_run_archive_load_points(&s->points, &s->n_points, s->dir, NULL, NULL) < 0)) {
            fprintf(stderr, "error: shard '%s': %s\n", s->dir, kt_error_last());
            return KT_EXIT_DATAERR;
        }
        if (kt_result_shard(s->doc, &s->index, &s->count) < 0) {
            fprintf(stderr, "error: shard '%s': its result.json records no shard I/N\n", s->dir);
            return KT_EXIT_DATAERR;
        }
    }
    return 0;
}

/* A mismatch that --force may override; counted as a problem otherwise. */
static void mismatch(kt_merge *m, const char *what, const kt_merge_shard *a,
                     const kt_merge_shard *b, const char *va, const char *vb)
{
    fprintf(stderr, "%s: %s differs: '%s' has %s, '%s' has %s\n", m->force ? "warning" : "error",
            what, a->dir, va[0] ? va : "(none)", b->dir, vb[0] ? vb : "(none)");
    m->problems += !m->force;
}

/* The sha256 list of the plugins a shard loaded, "" when none are recorded. */
static void plugin_hashes(char *out, size_t len, const cJSON *doc)
{
    const cJSON *p;
    size_t used = 0;
    out[0] = '\0';
    cJSON_ArrayForEach(p, kt_json_at_path(doc, "provenance.plugins"))
    {
        const cJSON *sha = cJSON_GetObjectItemCaseSensitive(p, "sha256");
        if (cJSON_IsString(sha) && used + 16 < len)
            used += (size_t)snprintf(out + used, len - used, "%s%.12s", used ? "," : "",
                                     sha->valuestring);
    }
}

static void check_identity(kt_merge *m)
{
    static const char *const same[][2] = {
        {"spec.sha256", "the spec (sha256)"},
        {"provenance.git.commit", "the commit"},
        {"provenance.git.diff_blob_id", "the uncommitted changes (git.diff)"},
        {"tool.commit", "the ktrial build"},
    };
    const kt_merge_shard *first = &m->shards[0];
    for (int i = 1; i < m->n; i++) {
        const kt_merge_shard *s = &m->shards[i];
        for (size_t k = 0; k < sizeof(same) / sizeof(same[0]); k++) {
            const char *a = text_at(first->doc, same[k][0]), *b = text_at(s->doc, same[k][0]);
            if (strcmp(a, b) != 0)
                mismatch(m, same[k][1], first, s, a, b);
        }
        char pa[1024], pb[1024];
        plugin_hashes(pa, sizeof(pa), first->doc);
        plugin_hashes(pb, sizeof(pb), s->doc);
        if (strcmp(pa, pb) != 0)
            mismatch(m, "the plugins (sha256)", first, s, pa, pb);
        /* how they were run, which --force does not override: capped and uncapped points,
         * or points of two backends, are not one experiment's */
        int qa = kt_json_get_bool(kt_json_at_path(first->doc, "provenance.run"), "quick", 0);
        int qb = kt_json_get_bool(kt_json_at_path(s->doc, "provenance.run"), "quick", 0);
        if (qa != qb) {
            fprintf(stderr, "error: '%s' was run %s --quick, '%s' %s\n", first->dir,
                    qa ? "with" : "without", s->dir, qb ? "with it" : "without it");
            m->problems++;
        }
        const char *ba = text_at(first->doc, "provenance.device.backend");
        const char *bb = text_at(s->doc, "provenance.device.backend");
        if (strcmp(ba, bb) != 0) {
            fprintf(stderr, "error: '%s' was measured on backend '%s', '%s' on '%s'\n", first->dir,
                    ba, s->dir, bb);
            m->problems++;
        }
        if (s->count != first->count) {
            fprintf(stderr, "error: '%s' is shard %d/%d but '%s' is shard %d/%d\n", first->dir,
                    first->index, first->count, s->dir, s->index, s->count);
            m->problems++;
        }
        for (int j = 0; j < i; j++)
            if (m->shards[j].index == s->index && m->shards[j].count == s->count) {
                fprintf(stderr, "error: '%s' and '%s' are both shard %d/%d\n", m->shards[j].dir,
                        s->dir, s->index, s->count);
                m->problems++;
            }
    }
}

/* Warns when the shards ran on different hardware: a candidate's verdict over points
 * measured on different machines mixes the machines' differences into it. */
static void check_hosts(const kt_merge *m)
{
    static const char *const keys[] = {"provenance.host.cpu_model", "provenance.device.info.name"};
    for (int i = 1; i < m->n; i++)
        for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
            const char *a = text_at(m->shards[0].doc, keys[k]);
            const char *b = text_at(m->shards[i].doc, keys[k]);
            if (strcmp(a, b) != 0) {
                fprintf(stderr,
                        "warning: the shards ran on different hardware ('%s' vs '%s' in %s); "
                        "points measured on different machines are not comparable within a "
                        "candidate's verdict\n",
                        a, b, keys[k]);
                return;
            }
        }
}

/* The shard's spec.yaml, parsed as the run parsed it (its resolved backend, no budget). */
static int load_spec(kt_spec **out, const kt_merge *m)
{
    kt_diag diag;
    kt_diag_init(&diag);
    int rc = kt_run_archive_load_spec(out, m->shards[0].dir, m->shards[0].doc, &diag);
    kt_diag_print(&diag, stderr);
    kt_diag_free(&diag);
    if (rc < 0) {
        fprintf(stderr, "error: %s\n", kt_error_last());
        return KT_EXIT_DATAERR;
    }
    return 0;
}

/* Puts every shard's points in the matrix's order into 'run'; reports points missing,
 * measured twice, or not in the matrix. The points move out of the shards. */
static int gather_points(kt_merge *m, kt_run_result *run, const kt_spec *spec)
{
    const kt_matrix *mx = spec->matrix;
    int *owner = malloc((mx->n ? mx->n : 1) * sizeof(*owner));
    kt_point_result **where = calloc(mx->n ? mx->n : 1, sizeof(*where));
    run->points = calloc(mx->n ? mx->n : 1, sizeof(*run->points));
    if (!owner || !where || !run->points) {
        free(owner);
        free(where);
        fprintf(stderr, "error: out of memory\n");
        return KT_EXIT_SOFTWARE;
    }
    for (size_t i = 0; i < mx->n; i++)
        owner[i] = -1;
    for (int s = 0; s < m->n; s++) {
        for (size_t p = 0; p < m->shards[s].n_points; p++) {
            kt_point_result *pr = &m->shards[s].points[p];
            size_t i = 0;
            while (i < mx->n && strcmp(mx->points[i].id, pr->point.id) != 0)
                i++;
            if (i == mx->n) {
                fprintf(stderr, "error: '%s' holds point '%s', which the spec does not have\n",
                        m->shards[s].dir, pr->point.id);
                m->problems++;
            } else if (owner[i] >= 0) {
                fprintf(stderr, "error: point '%s' is in both '%s' and '%s'\n", pr->point.id,
                        m->shards[owner[i]].dir, m->shards[s].dir);
                m->problems++;
            } else {
                owner[i] = s;
                where[i] = pr;
            }
        }
    }
    size_t missing = 0;
    for (size_t i = 0; i < mx->n; i++)
        if (owner[i] < 0 && missing++ < 10)
            fprintf(stderr, "error: point '%s' is in no shard\n", mx->points[i].id);
    if (missing > 10)
        fprintf(stderr, "error: %zu more points are in no shard\n", missing - 10);
    for (int s = 0; missing && s < m->n; s++) {
        const char *status = text_at(m->shards[s].doc, "status");
        if (strcmp(status, "complete") != 0)
            fprintf(stderr, "hint: shard '%s' is %s, with %zu finished point%s\n", m->shards[s].dir,
                    status, m->shards[s].n_points, m->shards[s].n_points == 1 ? "" : "s");
    }
    if (missing)
        fprintf(stderr,
                "hint: a shard is missing or did not finish (%zu of %zu points "
                "present); resume it with 'ktrial run SPEC --resume SHARD_DIR --shard "
                "I/N'\n",
                mx->n - missing, mx->n);
    m->problems += (int)missing; /* one per point, as the lines above name them */
    for (size_t i = 0; i < mx->n && !m->problems; i++) {
        run->points[run->n_points++] = *where[i];
        memset(where[i], 0, sizeof(*where[i]));
    }
    free(owner);
    free(where);
    return 0;
}

/* Candidates are matched by name: a shard's point must list the spec's candidates. */
static void check_candidates(kt_merge *m, const kt_run_result *run, const kt_spec *spec)
{
    for (size_t i = 0; i < run->n_points; i++) {
        const kt_point_result *p = &run->points[i];
        int ok = p->n_cands == spec->n_candidates;
        for (size_t k = 0; ok && k < p->n_cands; k++)
            ok = strcmp(p->cands[k].arm.name, spec->candidates[k].name) == 0;
        if (!ok) {
            fprintf(stderr, "error: point '%s' lists other candidates than the spec\n",
                    p->point.id);
            m->problems++;
        }
    }
}

/* result.json of the merged run: the first shard's tool, spec, provenance and timing, every
 * point, the verdicts formed over all of them, and each shard's provenance under "shards". */
static cJSON *merged_document(const kt_merge *m, const kt_run_result *run, const kt_spec *spec,
                              const char *run_id)
{
    const cJSON *first = m->shards[0].doc;
    cJSON *shards = cJSON_CreateArray();
    for (int i = 0; i < m->n; i++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "folder", m->shards[i].dir);
        cJSON_AddStringToObject(o, "status", text_at(m->shards[i].doc, "status"));
        cJSON_AddNumberToObject(o, "points", (double)m->shards[i].n_points);
        cJSON_AddItemToObject(
            o, "provenance",
            cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(m->shards[i].doc, "provenance"), 1));
        cJSON_AddItemToArray(shards, o);
    }
    cJSON *prov = cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(first, "provenance"), 1);
    cJSON *run_prov = cJSON_GetObjectItemCaseSensitive(prov, "run");
    cJSON_ReplaceItemInObjectCaseSensitive(run_prov, "shard", cJSON_CreateString("1/1"));
    cJSON_DeleteItemFromObjectCaseSensitive(run_prov, "id");
    cJSON_AddStringToObject(run_prov, "id", run_id);
    /* the first shard's, not the merged run's: each shard's are under "shards" */
    cJSON_DeleteItemFromObjectCaseSensitive(run_prov, "sessions");
    kt_result_parts parts = {"complete",
                             run,
                             spec,
                             kt_run_exit_code(run),
                             cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(first, "tool"), 1),
                             cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(first, "spec"), 1),
                             prov,
                             cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(first, "timing"), 1),
                             shards};
    return kt_result_document(&parts);
}

/* Copies a shard's file into the merged folder when it exists (spec.yaml, git.diff). */
static int copy_file(const char *from_dir, const char *to_dir, const char *name)
{
    char path[PATH_MAX], *text;
    size_t len;
    struct stat sb;
    snprintf(path, sizeof(path), "%s/%s", from_dir, name);
    if (stat(path, &sb) != 0)
        return 0;
    if (kt_read_file(&text, &len, path, (size_t)1 << 31) < 0)
        return -1;
    int rc = kt_archive_write(to_dir, name, text, len);
    free(text);
    return rc;
}

static int write_archive(kt_merge *m, const kt_run_result *run, const kt_spec *spec)
{
    char probe[PATH_MAX];
    struct stat sb;
    snprintf(probe, sizeof(probe), "%s/points.jsonl", m->out_dir);
    if (stat(probe, &sb) == 0) {
        fprintf(stderr, "error: '%s' already holds a run\n", m->out_dir);
        return KT_EXIT_DATAERR;
    }
    if (kt_archive_mkdirs(m->out_dir) < 0 || copy_file(m->shards[0].dir, m->out_dir, "spec.yaml") ||
        copy_file(m->shards[0].dir, m->out_dir, "git.diff"))
        goto io_error;
    /* the merged archive is a run of its own: a new id (the shards' stay under "shards") */
    char run_id[KT_RUN_ID_LEN];
    kt_run_id_new(run_id, time(NULL));
    const char *commit = text_at(m->shards[0].doc, "provenance.git.commit");
    kt_samples_ids ids = {run_id,
                          strspn(commit, "0123456789abcdef") == strlen(commit) ? commit : ""};
    for (size_t i = 0; i < run->n_points; i++) {
        if (kt_run_archive_point(m->out_dir, &run->points[i], spec, &ids) < 0)
            goto io_error;
        for (int k = 0; k < m->n; k++) /* command outputs: only the shard that ran it has them */
            if (kt_command_archive_gather(m->out_dir, m->shards[k].dir, run->points[i].point.id))
                goto io_error;
    }
    if (kt_result_write(m->out_dir, merged_document(m, run, spec, run_id), &m->text) < 0)
        goto io_error;
    return 0;
io_error:
    fprintf(stderr, "error: %s\n", kt_error_last());
    return KT_EXIT_IOERR;
}

/* Each shard checked as 'ktrial verify' checks it (its seal, its verdicts against its pairs):
 * a problem is one of the merge's unless --force. */
static void check_shards(kt_merge *m)
{
    for (int i = 0; i < m->n; i++) {
        kt_archive a;
        if (kt_archive_check(&a, m->shards[i].dir) < 0) {
            fprintf(stderr, "error: shard '%s': %s\n", m->shards[i].dir, kt_error_last());
            m->problems++;
        } else {
            kt_problems_print(stderr, m->shards[i].dir, &a.problems, m->force);
            m->problems += m->force ? 0 : (int)a.problems.n;
        }
        kt_archive_close(&a);
    }
}

/* Every point decided again from its pairs under the spec, whatever its shard wrote. */
static void rejudge_points(kt_merge *m, kt_run_result *run)
{
    kt_rejudge rj;
    kt_rejudge_init(
        &rj, m->spec,
        kt_json_get_bool(kt_json_at_path(m->shards[0].doc, "provenance.run"), "quick", 0));
    for (size_t i = 0; i < run->n_points; i++)
        if (kt_rejudge_point(&rj, &run->points[i]) < 0) {
            fprintf(stderr, "error: %s\n", kt_error_last());
            m->problems++;
        }
}

int kt_merge_execute(kt_merge *m)
{
    int rc;
    if ((rc = load_shards(m)) || (rc = load_spec(&m->spec, m)))
        return rc;
    check_shards(m);
    check_identity(m);
    check_hosts(m);
    gather_points(m, &m->run, m->spec);
    check_candidates(m, &m->run, m->spec);
    if (!m->problems)
        rejudge_points(m, &m->run);
    if (m->problems) {
        fprintf(stderr, "error: the shards do not make one run (%d problem%s)%s\n", m->problems,
                m->problems == 1 ? "" : "s",
                m->force ? ""
                         : "; --force accepts differing specs, code or plugins, and shards that "
                           "fail verification");
        return KT_EXIT_DATAERR;
    }
    if (kt_run_aggregate(&m->run, m->spec) < 0) {
        fprintf(stderr, "error: %s\n", kt_error_last());
        return KT_EXIT_SOFTWARE;
    }
    return write_archive(m, &m->run, m->spec);
}

void kt_merge_free(kt_merge *m)
{
    for (int i = 0; i < m->n; i++) {
        for (size_t p = 0; p < m->shards[i].n_points; p++)
            kt_point_result_free(&m->shards[i].points[p]);
        free(m->shards[i].points);
        cJSON_Delete(m->shards[i].doc);
    }
    free(m->shards);
    kt_run_result_free(&m->run);
    kt_spec_free(m->spec);
    free(m->text);
    memset(m, 0, sizeof(*m));
}
