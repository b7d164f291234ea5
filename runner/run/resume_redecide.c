/* resume_redecide.c - a resumed run's archived points decided again under the spec in force
 * (see resume.h): a verdict is never carried over from a file, and a spec changed under
 * --force judges every finished point by its own limits. The replaced spec is kept beside the
 * new one, and result.json records which points were measured under which. */
#include "run/resume.h"

#include "archive/archive.h"
#include "archive/run_archive.h"
#include "archive/seal.h"
#include "measure/rejudge.h"
#include "result/result_json.h"
#include "run/exit_code.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Whether 'id' is listed in an entry of 'specs' ([{file, sha256, points: [id...]}]). */
static int attributed(const cJSON *specs, const char *id)
{
    const cJSON *e, *p;
    cJSON_ArrayForEach(e, specs)
    {
        cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(e, "points"))
        {
            if (cJSON_IsString(p) && strcmp(p->valuestring, id) == 0)
                return 1;
        }
    }
    return 0;
}

/* An entry of provenance.run.specs: the spec 'file' (sha256 'sha') and the points of 'pts' no
 * earlier entry of 'specs' names. */
static cJSON *spec_entry(const cJSON *specs, const char *file, const char *sha,
                         const kt_point_result *pts, size_t n)
{
    cJSON *e = cJSON_CreateObject();
    cJSON_AddStringToObject(e, "file", file);
    cJSON_AddStringToObject(e, "sha256", sha);
    cJSON *ids = cJSON_AddArrayToObject(e, "points");
    for (size_t i = 0; i < n; i++)
        if (!kt_point_cut_short(&pts[i]) && !attributed(specs, pts[i].point.id))
            cJSON_AddItemToArray(ids, cJSON_CreateString(pts[i].point.id));
    return e;
}

cJSON *kt_run_specs_json(const kt_run *st)
{
    if (!st->specs)
        return NULL;
    cJSON *all = cJSON_Duplicate(st->specs, 1);
    cJSON_AddItemToArray(
        all, spec_entry(all, "spec.yaml", st->spec_sha, st->run.points, st->run.n_points));
    return all;
}

/* points.jsonl written again from st->done, as decided now. */
static int rewrite_points(const kt_run *st)
{
    size_t cap = 4096, len = 0;
    char *buf = malloc(cap);
    for (size_t i = 0; buf && i < st->n_done; i++) {
        cJSON *json = kt_point_result_to_json(&st->done[i], st->spec);
        char *line = json ? cJSON_PrintUnformatted(json) : NULL;
        cJSON_Delete(json);
        size_t n = line ? strlen(line) : 0;
        while (line && len + n + 1 > cap) {
            char *bigger = realloc(buf, cap *= 2);
            if (!bigger) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = bigger;
        }
        if (!line || !buf) {
            free(line);
            free(buf);
            return kt_error_set("out of memory");
        }
        memcpy(buf + len, line, n);
        buf[len + n] = '\n';
        len += n + 1;
        free(line);
    }
    if (!buf)
        return kt_error_set("out of memory");
    int rc = kt_archive_write(st->dir, "points.jsonl", buf, len);
    free(buf);
    return rc;
}

/* Decides st->done again; says each verdict that changes. Returns the count of changes, or -1
 * when a point does not fit the spec (the error printed). */
static int redecide(kt_run *st, int same_spec)
{
    kt_rejudge rj;
    kt_rejudge_init(&rj, st->spec, st->opt.quick);
    int changed = 0;
    for (size_t i = 0; i < st->n_done; i++) {
        kt_point_result *p = &st->done[i];
        kt_verdict was[KT_LIMIT_CANDIDATES];
        for (size_t k = 0; k < p->n_cands && k < KT_LIMIT_CANDIDATES; k++)
            was[k] = p->cands[k].verdict;
        if (kt_rejudge_point(&rj, p) < 0) {
            fprintf(stderr, "error: cannot resume '%s': %s\n", st->dir, kt_error_last());
            return -1;
        }
        for (size_t k = 0; k < p->n_cands; k++) {
            const kt_candidate_result *c = &p->cands[k];
            if (c->verdict == was[k])
                continue;
            changed++;
            if (same_spec) /* the same limits: the file was edited */
                fprintf(stderr,
                        "warning: points.jsonl says %s for candidate '%s' at point '%s', its "
                        "pairs say %s: decided again\n",
                        kt_verdict_name(was[k]), c->arm.name, p->point.id,
                        kt_verdict_name(c->verdict));
            else
                fprintf(stderr, "note: '%s' at '%s' was %s, under the spec in force %s: %s\n",
                        c->arm.name, p->point.id, kt_verdict_name(was[k]),
                        kt_verdict_name(c->verdict), c->n_reasons ? c->reasons[0] : "");
        }
    }
    return changed;
}

/* The spec changed: spec.yaml kept as spec-<sha prefix>.yaml, the new one written as
 * spec.yaml, and an entry for the points measured under the old one. */
static int keep_old_spec(kt_run *st, const char *old_sha, const cJSON *prior)
{
    char old_name[64], from[PATH_MAX], to[PATH_MAX];
    struct stat sb;
    snprintf(old_name, sizeof(old_name), "%s%.12s.yaml", KT_SEAL_OLD_SPEC_PREFIX, old_sha);
    snprintf(from, sizeof(from), "%s/spec.yaml", st->dir);
    snprintf(to, sizeof(to), "%s/%s", st->dir, old_name);
    if (stat(to, &sb) != 0 && stat(from, &sb) == 0 && rename(from, to) != 0)
        return kt_error_set("cannot keep '%s' as '%s': %m", from, to);
    if (kt_archive_write(st->dir, "spec.yaml", st->spec->bytes, st->spec->len) < 0)
        return -1;
    st->specs = prior ? cJSON_Duplicate(prior, 1) : cJSON_CreateArray();
    cJSON_AddItemToArray(st->specs, spec_entry(st->specs, old_name, old_sha, st->done, st->n_done));
    return 0;
}

int kt_run_redecide_resumed(kt_run *st)
{
    cJSON *doc = NULL;
    if (kt_run_archive_load_result(&doc, st->dir) < 0) {
        fprintf(stderr, "error: cannot resume '%s': %s\n", st->dir, kt_error_last());
        return KT_EXIT_DATAERR;
    }
    char old_sha[80];
    kt_json_get_str(kt_json_at_path(doc, "spec"), "sha256", old_sha, sizeof(old_sha));
    const cJSON *prior = kt_json_at_path(doc, "provenance.run.specs");
    int same = strcmp(old_sha, st->spec_sha) == 0;
    int changed = redecide(st, same);
    int rc = changed < 0 ? KT_EXIT_DATAERR : 0;
    if (rc == 0 && !same && keep_old_spec(st, old_sha, cJSON_IsArray(prior) ? prior : NULL) < 0)
        rc = KT_EXIT_IOERR;
    else if (rc == 0 && same && cJSON_IsArray(prior))
        st->specs = cJSON_Duplicate(prior, 1);
    if (rc == 0 && (changed > 0 || !same) && rewrite_points(st) < 0)
        rc = KT_EXIT_IOERR;
    if (rc == KT_EXIT_IOERR)
        fprintf(stderr, "error: %s\n", kt_error_last());
    else if (rc == 0 && !same)
        fprintf(stderr,
                "note: the spec changed since '%s' was measured (sha256 %.12s, now %.12s): its "
                "%zu finished point%s %s decided again under the spec in force, %d verdict%s "
                "changed; the old spec is kept as %s%.12s.yaml\n",
                st->dir, old_sha, st->spec_sha, st->n_done, st->n_done == 1 ? "" : "s",
                st->n_done == 1 ? "was" : "were", changed, changed == 1 ? "" : "s",
                KT_SEAL_OLD_SPEC_PREFIX, old_sha);
    cJSON_Delete(doc);
    return rc;
}
