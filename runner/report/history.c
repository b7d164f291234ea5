/* history.c - 'ktrial history': every archive of one experiment under a results folder,
 * ordered by commit time, each candidate's speedup per point across them (its series), and
 * the places where it changed: the verdict changed, or the speedup moved significantly (two-sample
 * Hodges-Lehmann on the paired log ratios of the two archives, with both archives' placement
 * spread, as compare judges: kt_compare_shift). */
#include "report/history.h"
#include "decide/compare.h"
#include "util/json.h"

#include <dirent.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

/* A change smaller than this (in speedup, relative) is noise whatever its p-value. */
const char *kt_history_str(const cJSON *doc, const char *path)
{
    const cJSON *v = kt_json_at_path(doc, path);
    return cJSON_IsString(v) ? v->valuestring : "";
}

static int by_time(const void *pa, const void *pb)
{
    const kt_report_input *a = pa, *b = pb;
    int c = strcmp(kt_history_str(a->doc, "provenance.git.commit_time"),
                   kt_history_str(b->doc, "provenance.git.commit_time"));
    if (!c)
        c = strcmp(kt_history_str(a->doc, "provenance.run.start_utc"),
                   kt_history_str(b->doc, "provenance.run.start_utc"));
    return c ? c : strcmp(a->dir, b->dir); /* same second: the folders' names decide */
}

int kt_history_load(kt_history *h, const char *results_dir, const char *experiment)
{
    memset(h, 0, sizeof(*h));
    DIR *d = opendir(results_dir);
    if (!d)
        return kt_error_set("cannot read '%s': %m", results_dir);
    struct dirent *e;
    size_t cap = 0;
    while ((e = readdir(d))) {
        char path[PATH_MAX];
        struct stat sb;
        if (e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof(path), "%s/%s/result.json", results_dir, e->d_name);
        if (stat(path, &sb) != 0)
            continue;
        if (h->n == cap) {
            cap = cap ? 2 * cap : 16;
            kt_report_input *bigger = realloc(h->runs, cap * sizeof(*bigger));
            if (!bigger)
                break;
            h->runs = bigger;
        }
        kt_report_input *in = &h->runs[h->n];
        snprintf(path, sizeof(path), "%s/%s", results_dir, e->d_name);
        if (kt_report_load(in, path) < 0) {
            if (!h->skipped++)
                snprintf(h->first_skip, sizeof(h->first_skip), "'%s': %s", path, kt_error_last());
            kt_report_input_free(in);
            continue;
        }
        int ours = strcmp(kt_history_str(in->doc, "spec.parsed.name"), experiment) == 0;
        if (ours && in->problems.n) /* its verdicts are the ones its pairs give either way */
            fprintf(stderr,
                    "warning: '%s' fails verification (%zu problem%s, 'ktrial verify' lists "
                    "them): its verdicts are decided again from its pairs\n",
                    path, in->problems.n, in->problems.n == 1 ? "" : "s");
        int keep = ours && strcmp(kt_history_str(in->doc, "status"), "complete") == 0;
        h->unfinished += ours && !keep;
        if (keep)
            h->n++;
        else
            kt_report_input_free(in);
    }
    closedir(d);
    qsort(h->runs, h->n, sizeof(*h->runs), by_time);
    return 0;
}

void kt_history_free(kt_history *h)
{
    for (size_t i = 0; i < h->n; i++)
        kt_report_input_free(&h->runs[i]);
    free(h->runs);
    memset(h, 0, sizeof(*h));
}

const kt_candidate_result *kt_history_find(const kt_report_input *in, const char *point,
                                           const char *candidate)
{
    for (size_t i = 0; i < in->run.n_points; i++) {
        const kt_point_result *p = &in->run.points[i];
        if (strcmp(p->point.id, point) != 0)
            continue;
        for (size_t k = 0; k < p->n_cands; k++)
            if (strcmp(p->cands[k].arm.name, candidate) == 0)
                return &p->cands[k];
    }
    return NULL;
}

int kt_history_compare(kt_history_change *out, const kt_candidate_result *before,
                       const kt_candidate_result *after)
{
    memset(out, 0, sizeof(*out));
    out->shift = NAN;
    out->verdict_changed = before->verdict != after->verdict;
    kt_shift s;
    double placement_var;
    int rc = kt_compare_shift(&s, &placement_var, before, after, 0.95);
    if (rc == 0) {
        out->shift = s.estimate;
        out->ci_low = s.ci_low;
        out->ci_high = s.ci_high;
        out->p_value = s.p_value;
        out->significant =
            (s.ci_low > 0 || s.ci_high < 0) && fabs(expm1(s.estimate)) > KT_HISTORY_NOISE;
    }
    return rc < 0 ? rc : 0;
}

/* Every (point, candidate) that some archive has, in first-seen order. */
static size_t series_keys(const kt_history *h, char (*points)[KT_NAME_MAX * 2],
                          char (*cands)[KT_NAME_MAX], size_t max)
{
    size_t n = 0;
    for (size_t r = 0; r < h->n; r++)
        for (size_t i = 0; i < h->runs[r].run.n_points; i++) {
            const kt_point_result *p = &h->runs[r].run.points[i];
            for (size_t k = 0; k < p->n_cands; k++) {
                size_t j = 0;
                while (j < n && !(strcmp(points[j], p->point.id) == 0 &&
                                  strcmp(cands[j], p->cands[k].arm.name) == 0))
                    j++;
                if (j == n && n < max) {
                    snprintf(points[n], sizeof(points[0]), "%s", p->point.id);
                    snprintf(cands[n], sizeof(cands[0]), "%s", p->cands[k].arm.name);
                    n++;
                }
            }
        }
    return n;
}

kt_history_series *kt_history_series_new(const kt_history *h)
{
    kt_history_series *s = calloc(1, sizeof(*s));
    if (s)
        s->n = series_keys(h, s->points, s->cands, KT_HISTORY_SERIES);
    return s;
}

/* The change at archive 'r' of a series against the previous archive that has it. */
int kt_history_change_at(kt_history_change *ch, const kt_history *h, size_t r, const char *point,
                         const char *cand)
{
    const kt_candidate_result *now = kt_history_find(&h->runs[r], point, cand);
    for (size_t q = r; now && q-- > 0;) {
        const kt_candidate_result *before = kt_history_find(&h->runs[q], point, cand);
        if (before)
            return kt_history_compare(ch, before, now) == 0 ? 1 : 0;
    }
    return 0;
}
