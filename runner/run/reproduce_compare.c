/* reproduce_compare.c - an archived run and its rerun side by side (see reproduce.h): the same
 * points and candidates, the same verdicts, each speedup inside the other run's interval; and
 * the facts of the machines, builds and devices that differ. */
#include "run/reproduce.h"

#include "result/point.h"
#include "util/json.h"
#include "util/sanitize.h"

#include <math.h>
#include <string.h>

static const kt_point_result *point_of(const kt_run_result *run, const char *id)
{
    for (size_t i = 0; i < run->n_points; i++)
        if (strcmp(run->points[i].point.id, id) == 0)
            return &run->points[i];
    return NULL;
}

static const kt_candidate_result *cand_of(const kt_point_result *p, const char *name)
{
    for (size_t k = 0; p && k < p->n_cands; k++)
        if (strcmp(p->cands[k].arm.name, name) == 0)
            return &p->cands[k];
    return NULL;
}

static int inside(double x, double low, double high)
{
    return isfinite(x) && isfinite(low) && isfinite(high) && x >= low && x <= high;
}

/* One candidate at one point: the differences found. */
static size_t candidate(FILE *out, const char *point, const kt_candidate_result *a,
                        const kt_candidate_result *b)
{
    size_t n = 0;
    if (a->verdict != b->verdict) {
        fprintf(out, "  %s %s: verdict %s, rerun %s\n", point, a->arm.name,
                kt_verdict_name(a->verdict), kt_verdict_name(b->verdict));
        n++;
    }
    if (!isfinite(a->speedup) && !isfinite(b->speedup))
        return n; /* neither measured a speedup (a failure, a rejection before the pairs) */
    if (!inside(b->speedup, a->ci_low, a->ci_high) || !inside(a->speedup, b->ci_low, b->ci_high)) {
        fprintf(out,
                "  %s %s: speedup %.3f [%.3f, %.3f], rerun %.3f [%.3f, %.3f]: not each inside "
                "the other's interval\n",
                point, a->arm.name, a->speedup, a->ci_low, a->ci_high, b->speedup, b->ci_low,
                b->ci_high);
        n++;
    }
    return n;
}

/* Points and candidates of 'a' that 'b' lacks ('which' names 'b'). */
static size_t missing(FILE *out, const kt_run_result *a, const kt_run_result *b, const char *which)
{
    size_t n = 0;
    for (size_t i = 0; i < a->n_points; i++) {
        const kt_point_result *p = &a->points[i], *q = point_of(b, p->point.id);
        if (!q) {
            fprintf(out, "  %s: not in the %s\n", p->point.id, which);
            n++;
            continue;
        }
        for (size_t k = 0; k < p->n_cands; k++)
            if (!cand_of(q, p->cands[k].arm.name)) {
                fprintf(out, "  %s %s: not in the %s\n", p->point.id, p->cands[k].arm.name, which);
                n++;
            }
    }
    return n;
}

size_t kt_reproduce_differences(FILE *out, const kt_run_result *a, const kt_run_result *b)
{
    size_t n = missing(out, a, b, "rerun") + missing(out, b, a, "archived run");
    for (size_t i = 0; i < a->n_points; i++) {
        const kt_point_result *p = &a->points[i], *q = point_of(b, p->point.id);
        for (size_t k = 0; q && k < p->n_cands; k++) {
            const kt_candidate_result *c = cand_of(q, p->cands[k].arm.name);
            if (c)
                n += candidate(out, p->point.id, &p->cands[k], c);
        }
    }
    if (a->verdict != b->verdict) {
        fprintf(out, "  overall: %s, rerun %s\n", kt_verdict_name(a->verdict),
                kt_verdict_name(b->verdict));
        n++;
    }
    return n;
}

/* One leaf of provenance as text ("" when absent), for the list of differences. */
static void leaf(char *buf, size_t len, const cJSON *v)
{
    buf[0] = '\0';
    if (cJSON_IsString(v)) /* from result files that may be hostile: no control bytes */
        kt_sanitize(buf, len, v->valuestring);
    else if (cJSON_IsNumber(v) || cJSON_IsRaw(v))
        snprintf(buf, len, "%.15g", kt_json_real_value(v, NAN));
    else if (cJSON_IsBool(v))
        snprintf(buf, len, "%s", cJSON_IsTrue(v) ? "yes" : "no");
}

static size_t object_differences(FILE *out, const char *name, const cJSON *a, const cJSON *b)
{
    const cJSON *c;
    size_t n = 0;
    cJSON_ArrayForEach(c, a)
    {
        char x[512], y[512];
        if (cJSON_IsObject(c)) {
            char sub[128], key[64];
            snprintf(sub, sizeof(sub), "%s.%s", name, kt_sanitize(key, sizeof(key), c->string));
            n += object_differences(out, sub, c, cJSON_GetObjectItemCaseSensitive(b, c->string));
            continue;
        }
        leaf(x, sizeof(x), c);
        leaf(y, sizeof(y), cJSON_GetObjectItemCaseSensitive(b, c->string));
        if (strcmp(x, y) != 0) {
            char key[64];
            fprintf(out, "  %s.%s: %s -> %s\n", name, kt_sanitize(key, sizeof(key), c->string),
                    x[0] ? x : "(none)", y[0] ? y : "(none)");
            n++;
        }
    }
    cJSON_ArrayForEach(c, b)
    {
        char y[512], key[64];
        if (cJSON_IsObject(c) || cJSON_GetObjectItemCaseSensitive(a, c->string))
            continue;
        leaf(y, sizeof(y), c);
        fprintf(out, "  %s.%s: (none) -> %s\n", name, kt_sanitize(key, sizeof(key), c->string), y);
        n++;
    }
    return n;
}

size_t kt_reproduce_machine_differences(FILE *out, const cJSON *a, const cJSON *b)
{
    /* the code's own facts (commit, version) are the point of the rebuild, not a difference */
    static const char *const parts[] = {"host", "build", "device"};
    size_t n = 0;
    for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++) {
        char path[64];
        snprintf(path, sizeof(path), "provenance.%s", parts[i]);
        cJSON *x = cJSON_Duplicate(kt_json_at_path(a, path), 1);
        cJSON *y = cJSON_Duplicate(kt_json_at_path(b, path), 1);
        if (i == 1) {
            cJSON_DeleteItemFromObjectCaseSensitive(x, "ktrial_commit");
            cJSON_DeleteItemFromObjectCaseSensitive(y, "ktrial_commit");
        }
        n += object_differences(out, parts[i], x, y);
        cJSON_Delete(x);
        cJSON_Delete(y);
    }
    return n;
}
