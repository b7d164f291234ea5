/* archive_check.c - an archived run read back and decided again (see archive_check.h). */
#include "archive/archive_check.h"

#include "archive/run_archive.h"
#include "decide/aggregate.h"
#include "result/result_json.h"
#include "spec/matrix.h"
#include "util/json.h"
#include "util/read_file.h"
#include "util/sha256.h"

#include <errno.h>
#include <libgen.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* What a point's file said of a candidate, kept to compare with what its pairs say. */
typedef struct said {
    kt_verdict verdict;
    double speedup, ci_low, ci_high;
} said;

/* Decides 'pts' again; 'file' names where they were read. Returns 0, or -1 when a point does
 * not fit the spec (said as a problem; that point keeps what it said). */
static int rederive(kt_point_result *pts, size_t n, const kt_rejudge *rj, const char *file,
                    kt_problems *out)
{
    int rc = 0;
    for (size_t i = 0; i < n; i++) {
        kt_point_result *p = &pts[i];
        said before[KT_LIMIT_CANDIDATES];
        for (size_t k = 0; k < p->n_cands && k < KT_LIMIT_CANDIDATES; k++) {
            const kt_candidate_result *c = &p->cands[k];
            before[k] = (said){c->verdict, c->speedup, c->ci_low, c->ci_high};
        }
        if (kt_rejudge_point(rj, p) < 0) {
            kt_problems_add(out, "%s: %s", file, kt_error_last());
            kt_error_clear();
            rc = -1;
            continue;
        }
        for (size_t k = 0; k < p->n_cands; k++) {
            const kt_candidate_result *c = &p->cands[k];
            const said *b = &before[k];
            if (b->verdict != c->verdict)
                kt_problems_add(out,
                                "%s says %s for candidate '%s' at point '%s', its pairs say "
                                "%s: %s",
                                file, kt_verdict_name(b->verdict), c->arm.name, p->point.id,
                                kt_verdict_name(c->verdict), c->n_reasons ? c->reasons[0] : "");
            else if (!kt_check_same_real(b->speedup, c->speedup) ||
                     !kt_check_same_real(b->ci_low, c->ci_low) ||
                     !kt_check_same_real(b->ci_high, c->ci_high))
                kt_problems_add(out,
                                "%s says speedup %.4g [%.4g, %.4g] for candidate '%s' at "
                                "point '%s', its pairs say %.4g [%.4g, %.4g]",
                                file, b->speedup, b->ci_low, b->ci_high, c->arm.name, p->point.id,
                                c->speedup, c->ci_low, c->ci_high);
        }
    }
    return rc;
}

static kt_exit_code_rule exit_code_rule;

void kt_archive_check_use_exit_codes(kt_exit_code_rule rule)
{
    exit_code_rule = rule;
}

/* The candidates' and the run's verdicts as stored against the ones aggregated again. */
static void compare_aggregate(const kt_run_result *stored, const kt_run_result *run,
                              const cJSON *doc, const kt_spec *spec, kt_problems *out)
{
    const cJSON *decision = cJSON_GetObjectItemCaseSensitive(doc, "decision");
    if (!cJSON_IsObject(decision)) /* a run that failed: no verdict was formed */
        return;
    if (stored->n_cands != run->n_cands)
        kt_problems_add(out, "result.json lists %zu candidates, the spec names %zu",
                        stored->n_cands, run->n_cands);
    for (size_t k = 0; k < stored->n_cands && k < run->n_cands; k++) {
        const kt_candidate_verdict *s = &stored->cands[k], *d = &run->cands[k];
        if (strcmp(s->name, d->name) != 0)
            kt_problems_add(out, "result.json lists candidate '%s' where the spec names '%s'",
                            s->name, d->name);
        else if (s->verdict != d->verdict || s->keep != d->keep || s->reject != d->reject ||
                 s->inconclusive != d->inconclusive)
            kt_problems_add(out,
                            "result.json says candidate '%s' %s (%d keep, %d reject, %d "
                            "inconclusive), its points say %s (%d keep, %d reject, %d "
                            "inconclusive)",
                            s->name, kt_verdict_name(s->verdict), s->keep, s->reject,
                            s->inconclusive, kt_verdict_name(d->verdict), d->keep, d->reject,
                            d->inconclusive);
        else if (!kt_check_same_real(s->geomean_speedup, d->geomean_speedup))
            kt_problems_add(out,
                            "result.json says candidate '%s' has geomean speedup %.4g, its "
                            "points say %.4g",
                            s->name, s->geomean_speedup, d->geomean_speedup);
    }
    char word[32];
    kt_json_get_str(decision, "verdict", word, sizeof(word));
    if (kt_verdict_parse(word) != (int)run->verdict)
        kt_problems_add(out, "result.json's decision.verdict says %s, its candidates say %s",
                        word[0] ? word : "nothing", kt_verdict_name(run->verdict));
    char aggregate[32];
    kt_json_get_str(decision, "aggregate", aggregate, sizeof(aggregate));
    if (strcmp(aggregate, kt_aggregate_name(spec->aggregate)) != 0 ||
        !kt_check_same_real(kt_json_get_real(decision, "min_speedup", NAN), spec->min_speedup) ||
        !kt_check_same_real(kt_json_get_real(decision, "confidence", NAN), spec->confidence))
        kt_problems_add(out,
                        "result.json's decision says aggregate %s, min_speedup %g, "
                        "confidence %g; spec.yaml says %s, %g, %g",
                        aggregate, kt_json_get_real(decision, "min_speedup", NAN),
                        kt_json_get_real(decision, "confidence", NAN),
                        kt_aggregate_name(spec->aggregate), spec->min_speedup, spec->confidence);
    char status[32];
    int index, count, recorded = (int)kt_json_get_real(decision, "exit_code", -1);
    kt_json_get_str(doc, "status", status, sizeof(status));
    kt_result_shard(doc, &index, &count);
    int want = exit_code_rule ? exit_code_rule(run, status, count) : -1;
    if (want >= 0 && recorded != want)
        kt_problems_add(out,
                        "result.json's decision.exit_code says %d, a run %s with these "
                        "verdicts exits %d",
                        recorded, status, want);
    if ((int)kt_json_get_real(decision, "point_errors", 0) != run->point_errors)
        kt_problems_add(out, "result.json's decision says %d point errors, its points %d",
                        (int)kt_json_get_real(decision, "point_errors", 0), run->point_errors);
}

/* 'raw' (freed) as a reader of result.json sees it: printed and parsed back, so its numbers
 * are numbers (the writers' exact reals are raw text until then). */
static cJSON *as_read(cJSON *raw)
{
    char *text = raw ? cJSON_PrintUnformatted(raw) : NULL;
    cJSON_Delete(raw);
    cJSON *parsed = text ? cJSON_Parse(text) : NULL;
    free(text);
    return parsed ? parsed : cJSON_CreateArray();
}

/* The document's points, candidates and decision replaced by the derived ones. */
static void derive_doc(cJSON *doc, const kt_run_result *run, const kt_spec *spec)
{
    cJSON *points = cJSON_CreateArray();
    for (size_t i = 0; i < run->n_points; i++)
        cJSON_AddItemToArray(points, kt_point_result_to_json(&run->points[i], spec));
    cJSON_ReplaceItemInObjectCaseSensitive(doc, "points", as_read(points));
    cJSON_ReplaceItemInObjectCaseSensitive(doc, "candidates",
                                           as_read(kt_candidate_verdicts_to_json(run)));
    cJSON *decision = cJSON_GetObjectItemCaseSensitive(doc, "decision");
    if (!cJSON_IsObject(decision))
        return;
    cJSON_ReplaceItemInObjectCaseSensitive(decision, "verdict",
                                           cJSON_CreateString(kt_verdict_name(run->verdict)));
    cJSON_ReplaceItemInObjectCaseSensitive(decision, "point_errors",
                                           cJSON_CreateNumber(run->point_errors));
}

static void resolve_dir(char *dir, size_t len, const char *path)
{
    struct stat sb;
    char copy[PATH_MAX];
    snprintf(dir, len, "%s", path);
    if (stat(path, &sb) == 0 && !S_ISDIR(sb.st_mode)) { /* a result.json: its folder */
        snprintf(copy, sizeof(copy), "%s", path);
        snprintf(dir, len, "%s", dirname(copy));
    }
}

/* spec.yaml's bytes parsed as if they still lay where the run read them (result.json's
 * spec.path): its plugins are found beside the spec, not beside the archive. */
static int load_spec_in_place(kt_spec **out, const char *dir, const cJSON *doc)
{
    char path[PATH_MAX], where[PATH_MAX], backend[32], *bytes;
    size_t len;
    kt_json_get_str(kt_json_at_path(doc, "spec"), "path", where, sizeof(where));
    kt_json_get_str(kt_json_at_path(doc, "spec.parsed"), "backend", backend, sizeof(backend));
    snprintf(path, sizeof(path), "%s/spec.yaml", dir);
    if (!where[0] || kt_read_file(&bytes, &len, path, KT_RESULT_MAX_BYTES) < 0)
        return -1;
    kt_spec_options so = {backend[0] ? backend : NULL, 1};
    kt_diag diag;
    kt_diag_init(&diag);
    int rc = kt_spec_parse(out, where, bytes, len, &so, &diag);
    if (rc == 0 && (diag.n_errors || !(*out)->matrix))
        rc = -1;
    kt_diag_free(&diag);
    free(bytes);
    if (rc < 0) {
        kt_spec_free(*out);
        *out = NULL;
    }
    return rc;
}

/* The archived spec, and its bytes against result.json's spec.sha256. */
static void load_spec(kt_archive *a)
{
    kt_diag diag;
    kt_diag_init(&diag);
    if (kt_run_archive_load_spec(&a->spec, a->dir, a->doc, &diag) < 0) {
        char why[512];
        snprintf(why, sizeof(why), "%s", kt_error_last());
        kt_spec_free(a->spec);
        a->spec = NULL;
        if (load_spec_in_place(&a->spec, a->dir, a->doc) < 0)
            kt_problems_add(&a->problems, "spec.yaml: %s; no verdict can be decided again", why);
        kt_error_clear();
    }
    kt_diag_free(&diag);
    char hex[65], want[80];
    kt_json_get_str(kt_json_at_path(a->doc, "spec"), "sha256", want, sizeof(want));
    if (a->spec && kt_sha256_hex(hex, a->spec->bytes, a->spec->len) == 0 && strcmp(hex, want))
        kt_problems_add(&a->problems,
                        "spec.yaml: sha256 %.12s, result.json's spec.sha256 says "
                        "%.12s",
                        hex, want);
}

int kt_archive_check(kt_archive *a, const char *path)
{
    memset(a, 0, sizeof(*a));
    resolve_dir(a->dir, sizeof(a->dir), path);
    kt_run_result stored;
    memset(&stored, 0, sizeof(stored));
    if (kt_run_archive_load_result(&a->doc, path) < 0 ||
        kt_run_result_from_json(&stored, a->doc) < 0) {
        kt_run_result_free(&stored);
        return -1;
    }
    char status[32];
    kt_json_get_str(a->doc, "status", status, sizeof(status));
    int running = strcmp(status, "running") == 0;
    const cJSON *seal = cJSON_GetObjectItemCaseSensitive(a->doc, "seal");
    if (seal)
        kt_seal_check(a->dir, seal, &a->problems);
    else if (!running)
        kt_problems_add(&a->problems,
                        "result.json (status %s) has no seal: its files cannot be "
                        "checked against it",
                        status[0] ? status : "none");
    load_spec(a);
    kt_point_result *pts = NULL;
    size_t n_pts = 0;
    char jsonl[PATH_MAX];
    struct stat sb;
    snprintf(jsonl, sizeof(jsonl), "%s/points.jsonl", a->dir);
    if (lstat(jsonl, &sb) == 0 && kt_run_archive_load_points(&pts, &n_pts, a->dir, NULL, NULL)) {
        kt_problems_add(&a->problems, "points.jsonl: %s", kt_error_last());
        kt_error_clear();
    }
    if (!a->spec) { /* nothing to decide by: the stored run, as it is */
        a->run = stored;
        memset(&stored, 0, sizeof(stored));
    } else {
        kt_rejudge rj;
        kt_rejudge_init(&rj, a->spec,
                        kt_json_get_bool(kt_json_at_path(a->doc, "provenance.run"), "quick", 0));
        int fit = rederive(pts, n_pts, &rj, "points.jsonl", &a->problems);
        kt_samples_check(a->dir, pts, fit == 0 ? n_pts : 0, &rj, &a->problems);
        if (!running) {
            fit |= rederive(stored.points, stored.n_points, &rj, "result.json", &a->problems);
            kt_points_cross_check(&stored, pts, n_pts, strcmp(status, "failed") == 0, &a->problems);
            a->run.points = stored.points;
            a->run.n_points = stored.n_points;
            stored.points = NULL;
            stored.n_points = 0;
        } else {
            a->run.points = pts;
            a->run.n_points = n_pts;
            pts = NULL;
            int index, count;
            kt_result_shard(a->doc, &index, &count);
            size_t share = 0;
            for (size_t i = (size_t)index - 1; i < a->spec->matrix->n; i += (size_t)count)
                share++;
            a->not_run = share > a->run.n_points ? share - a->run.n_points : 0;
        }
        if (fit == 0 && kt_run_aggregate(&a->run, a->spec) == 0) {
            a->derived = 1;
            if (!running) { /* a running one's points are points.jsonl's, not the doc's */
                compare_aggregate(&stored, &a->run, a->doc, a->spec, &a->problems);
                derive_doc(a->doc, &a->run, a->spec);
            }
        } else if (!running) { /* the stored verdicts over the points as they are */
            free(a->run.cands);
            a->run.cands = stored.cands;
            a->run.n_cands = stored.n_cands;
            a->run.verdict = stored.verdict;
            stored.cands = NULL;
            stored.n_cands = 0;
        }
    }
    for (size_t i = 0; i < n_pts; i++)
        kt_point_result_free(&pts[i]);
    free(pts);
    kt_run_result_free(&stored);
    return 0;
}

void kt_archive_close(kt_archive *a)
{
    cJSON_Delete(a->doc);
    kt_run_result_free(&a->run);
    kt_spec_free(a->spec);
    kt_problems_free(&a->problems);
    memset(a, 0, sizeof(*a));
}
