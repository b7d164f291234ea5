/* run_archive.c - points.jsonl, samples.csv, and reading result.json back. */
#include "archive/run_archive.h"
#include "archive/archive.h"
#include "archive/seal.h"
#include "decide/aggregate.h"
#include "result/result_json.h"
#include "result/samples_csv.h"
#include "spec/matrix.h"
#include "util/json.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int append_samples(const char *dir, const kt_point_result *p, const kt_spec *spec,
                          const kt_samples_ids *ids)
{
    char path[PATH_MAX];
    struct stat st;
    snprintf(path, sizeof(path), "%s/samples.csv", dir);
    if (stat(path, &st) != 0 &&
        kt_archive_append(dir, "samples.csv", KT_SAMPLES_HEADER, strlen(KT_SAMPLES_HEADER)) < 0)
        return -1;
    size_t cap = 4096, len = 0;
    char *buf = malloc(cap);
    if (!buf)
        return kt_error_set("out of memory");
    int rc = kt_samples_format(&buf, &len, &cap, p, spec, ids);
    if (rc == 0 && len)
        rc = kt_archive_append(dir, "samples.csv", buf, len);
    free(buf);
    return rc;
}

int kt_run_archive_rewrite_samples(const char *dir, const kt_point_result *points, size_t n,
                                   const kt_spec *spec, const kt_samples_ids *ids)
{
    size_t cap = 4096, len = strlen(KT_SAMPLES_HEADER);
    char *buf = malloc(cap);
    if (!buf)
        return kt_error_set("out of memory");
    memcpy(buf, KT_SAMPLES_HEADER, len);
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++)
        rc = kt_samples_format(&buf, &len, &cap, &points[i], spec, ids);
    if (rc == 0)
        rc = kt_archive_write(dir, "samples.csv", buf, len);
    free(buf);
    return rc;
}

int kt_run_archive_point(const char *dir, const kt_point_result *p, const kt_spec *spec,
                         const kt_samples_ids *ids)
{
    cJSON *json = kt_point_result_to_json(p, spec);
    char *text = json ? cJSON_PrintUnformatted(json) : NULL;
    cJSON_Delete(json);
    if (!text)
        return kt_error_set("out of memory");
    /* samples first: a point is finished only once its points.jsonl line exists */
    int rc = append_samples(dir, p, spec, ids);
    if (rc == 0) {
        size_t len = strlen(text);
        text[len] = '\n';
        rc = kt_archive_append(dir, "points.jsonl", text, len + 1);
    }
    free(text);
    return rc;
}

/* The JSON values in 'text' (a bound on cJSON's nodes), counted without parsing. */
static size_t count_values(const char *text, size_t len)
{
    size_t n = 1;
    int in_string = 0;
    for (size_t i = 0; i < len; i++) {
        char c = text[i];
        if (in_string) {
            if (c == '\\')
                i++;
            else if (c == '"')
                in_string = 0;
        } else if (c == '"') {
            in_string = 1;
        } else if (c == ',' || c == '[' || c == '{' || c == ':') {
            n++;
        }
    }
    return n;
}

/* Parses one document of at most KT_RESULT_MAX_VALUES values. */
static cJSON *parse_bounded(const char *text, size_t len, const char *what)
{
    if (count_values(text, len) > KT_RESULT_MAX_VALUES) {
        kt_error_set("'%s' holds more than %d JSON values; not a result ktrial wrote", what,
                     KT_RESULT_MAX_VALUES);
        return NULL;
    }
    cJSON *json = cJSON_ParseWithLength(text, len);
    if (!json)
        kt_error_set("'%s' is not valid JSON", what);
    return json;
}

int kt_run_archive_load_points(kt_point_result **out, size_t *n, const char *dir,
                               kt_point_filter keep, void *ctx)
{
    char path[PATH_MAX], *text;
    size_t len;
    snprintf(path, sizeof(path), "%s/points.jsonl", dir);
    *out = NULL;
    *n = 0;
    if (kt_read_file(&text, &len, path, KT_RESULT_MAX_BYTES) < 0)
        return -1;
    size_t cap = 16, kept_len = 0, dropped = 0;
    kt_point_result *points = calloc(cap, sizeof(*points));
    char *kept = malloc(len + 1); /* the complete, kept lines, to rewrite the file with */
    char *line = text;
    int rc = points && kept ? 0 : kt_error_set("out of memory");
    while (rc == 0 && line < text + len) {
        char *nl = memchr(line, '\n', (size_t)(text + len - line));
        if (!nl) {
            dropped++; /* cut short by a crash: that point runs again */
            break;
        }
        size_t line_len = (size_t)(nl - line) + 1;
        cJSON *json = parse_bounded(line, line_len - 1, "a line of points.jsonl");
        if (*n == cap) {
            kt_point_result *bigger = realloc(points, 2 * cap * sizeof(*points));
            rc = bigger ? 0 : kt_error_set("out of memory");
            if (bigger) {
                points = bigger;
                cap *= 2;
            }
        }
        int ok = rc == 0 && json && kt_point_result_from_json(&points[*n], json) == 0;
        if (ok && keep && !keep(&points[*n], ctx)) {
            kt_point_result_free(&points[*n]);
            ok = 0;
        } else if (!ok && rc == 0 && json) {
            kt_point_result_free(&points[*n]);
        }
        if (ok) {
            (*n)++;
            memcpy(kept + kept_len, line, line_len);
            kept_len += line_len;
        } else {
            dropped++;
        }
        cJSON_Delete(json);
        line = nl + 1;
    }
    /* only complete, matching lines stay: the next point is appended after the last one */
    if (rc == 0 && dropped && keep) /* only a resume rewrites; a reader (merge) never does */
        rc = kt_archive_write(dir, "points.jsonl", kept, kept_len);
    free(kept);
    free(text);
    if (rc < 0) {
        for (size_t i = 0; i < *n; i++)
            kt_point_result_free(&points[i]);
        free(points);
        *n = 0;
        return rc;
    }
    *out = points;
    return 0;
}

int kt_run_archive_load_result(cJSON **out, const char *path)
{
    char file[PATH_MAX], *text;
    size_t len;
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
        snprintf(file, sizeof(file), "%s/result.json", path);
    else
        snprintf(file, sizeof(file), "%s", path);
    if (kt_read_file(&text, &len, file, KT_RESULT_MAX_BYTES) < 0)
        return -1;
    int rc = kt_run_archive_parse_result(out, text, len, file);
    free(text);
    return rc;
}

int kt_run_archive_parse_result(cJSON **out, const char *text, size_t len, const char *what)
{
    if (len > KT_RESULT_MAX_BYTES) {
        *out = NULL;
        return kt_error_set("'%s' is over %zu bytes", what, KT_RESULT_MAX_BYTES);
    }
    *out = parse_bounded(text, len, what);
    return *out ? 0 : -1;
}

int kt_run_result_from_json(kt_run_result *run, const cJSON *doc)
{
    memset(run, 0, sizeof(*run));
    const cJSON *points = cJSON_GetObjectItemCaseSensitive(doc, "points"), *p;
    const cJSON *cands = cJSON_GetObjectItemCaseSensitive(doc, "candidates"), *c;
    char buf[32];
    if (!cJSON_IsArray(points) || !cJSON_IsArray(cands))
        return kt_error_set("not a ktrial result: 'points' or 'candidates' missing");
    int np = cJSON_GetArraySize(points), nc = cJSON_GetArraySize(cands);
    run->points = calloc(np > 0 ? (size_t)np : 1, sizeof(*run->points));
    run->cands = calloc(nc > 0 ? (size_t)nc : 1, sizeof(*run->cands));
    if (!run->points || !run->cands)
        return kt_error_set("out of memory");
    cJSON_ArrayForEach(p, points)
    {
        if (kt_point_result_from_json(&run->points[run->n_points++], p) < 0)
            return kt_error_set("malformed point %d in result", (int)run->n_points - 1);
        run->point_errors += kt_point_failed(&run->points[run->n_points - 1]);
    }
    cJSON_ArrayForEach(c, cands)
    {
        kt_candidate_verdict *cv = &run->cands[run->n_cands++];
        kt_json_get_str(c, "name", cv->name, sizeof(cv->name));
        kt_json_get_str(c, "variant", cv->variant, sizeof(cv->variant));
        int v = kt_verdict_parse(kt_json_get_str(c, "verdict", buf, sizeof(buf)));
        if (v < 0)
            return kt_error_set("malformed candidate verdict in result");
        cv->verdict = (kt_verdict)v;
        const cJSON *counts = cJSON_GetObjectItemCaseSensitive(c, "points");
        cv->keep = (int)kt_json_get_real(counts, "keep", 0);
        cv->reject = (int)kt_json_get_real(counts, "reject", 0);
        cv->inconclusive = (int)kt_json_get_real(counts, "inconclusive", 0);
        cv->geomean_speedup = kt_json_get_real(c, "geomean_speedup", NAN);
        kt_json_get_str(c, "reason", cv->reason, sizeof(cv->reason));
    }
    const cJSON *decision = cJSON_GetObjectItemCaseSensitive(doc, "decision");
    int v = kt_verdict_parse(kt_json_get_str(decision, "verdict", buf, sizeof(buf)));
    run->verdict = v < 0 ? KT_VERDICT_INCONCLUSIVE : (kt_verdict)v;
    for (size_t i = 0; i < run->n_points; i++)
        for (size_t k = 0; k < run->points[i].n_cands; k++) {
            run->order_warnings += run->points[i].cands[k].order_warning;
            run->set_warnings += run->points[i].cands[k].set_warning;
            run->state_warnings += run->points[i].cands[k].state_warning;
        }
    run->energy_unchecked = kt_run_energy_unchecked(
        run,
        kt_json_get_real(kt_json_at_path(doc, "spec.parsed.thresholds.energy"), "max_ratio", NAN));
    return 0;
}

int kt_run_archive_load_spec(kt_spec **out, const char *dir, const cJSON *doc, kt_diag *diag)
{
    char path[PATH_MAX], backend[32];
    snprintf(path, sizeof(path), "%s/spec.yaml", dir);
    const cJSON *b = kt_json_at_path(doc, "spec.parsed.backend");
    snprintf(backend, sizeof(backend), "%s", cJSON_IsString(b) ? b->valuestring : "");
    kt_spec_options so = {backend[0] ? backend : NULL, 1};
    if (kt_spec_load(out, path, &so, diag) < 0 || !(*out)->matrix)
        return kt_error_set("cannot read the run's spec '%s'", path);
    return 0;
}

static int run_holds(const kt_run_result *run, const char *id)
{
    for (size_t i = 0; i < run->n_points; i++)
        if (strcmp(run->points[i].point.id, id) == 0)
            return 1;
    return 0;
}

void kt_run_archive_ids_free(char **ids, size_t n)
{
    for (size_t i = 0; ids && i < n; i++)
        free(ids[i]);
    free(ids);
}

size_t kt_run_archive_not_run_ids(char ***ids, const kt_run_result *run, const char *dir,
                                  const cJSON *doc)
{
    kt_spec *spec = NULL;
    kt_diag diag;
    size_t n = 0;
    kt_diag_init(&diag);
    *ids = NULL;
    if (kt_run_archive_load_spec(&spec, dir, doc, &diag) < 0) {
        kt_error_clear(); /* no rows for them; the counts still say how many */
    } else if ((*ids = calloc(spec->matrix->n ? spec->matrix->n : 1, sizeof(**ids)))) {
        int index, count;
        kt_result_shard(doc, &index, &count);
        for (size_t i = (size_t)index - 1; i < spec->matrix->n; i += (size_t)count)
            if (!run_holds(run, spec->matrix->points[i].id) &&
                ((*ids)[n] = strdup(spec->matrix->points[i].id)))
                n++;
    }
    kt_diag_free(&diag);
    kt_spec_free(spec);
    return n;
}

size_t kt_run_archive_load_unfinished(kt_run_result *run, size_t *not_run, const char *dir,
                                      const cJSON *doc)
{
    kt_point_result *pts = NULL;
    size_t n_pts = 0;
    kt_spec *spec = NULL;
    kt_diag diag;
    kt_diag_init(&diag);
    if (kt_run_archive_load_points(&pts, &n_pts, dir, NULL, NULL) < 0 || n_pts == 0 ||
        kt_run_archive_load_spec(&spec, dir, doc, &diag) < 0) {
        kt_error_clear(); /* nothing finished yet, or nothing to aggregate by */
        for (size_t i = 0; i < n_pts; i++)
            kt_point_result_free(&pts[i]);
        free(pts);
    } else {
        kt_run_result_free(run);
        memset(run, 0, sizeof(*run));
        run->points = pts;
        run->n_points = n_pts;
        kt_run_aggregate(run, spec);
        int index, count;
        kt_result_shard(doc, &index, &count);
        size_t share = 0;
        for (size_t i = (size_t)index - 1; i < spec->matrix->n; i += (size_t)count)
            share++;
        *not_run = share > n_pts ? share - n_pts : 0;
    }
    kt_diag_free(&diag);
    kt_spec_free(spec);
    return n_pts;
}

int kt_result_write(const char *dir, cJSON *doc, char **text_out)
{
    const cJSON *status = cJSON_GetObjectItemCaseSensitive(doc, "status");
    if (doc && !(cJSON_IsString(status) && strcmp(status->valuestring, "running") == 0)) {
        cJSON *seal = kt_seal_json(dir); /* the files written before it, as they are now */
        if (!seal) {
            cJSON_Delete(doc);
            return -1;
        }
        cJSON_AddItemToObject(doc, "seal", seal);
    }
    char *text = doc ? kt_json_print(doc) : NULL;
    cJSON_Delete(doc);
    if (!text)
        return kt_error_set("out of memory");
    int rc = kt_archive_write(dir, "result.json", text, strlen(text));
    if (text_out)
        *text_out = text;
    else
        free(text);
    return rc;
}
