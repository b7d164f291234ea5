/* history.c - 'ktrial history': every archive of one experiment under a results folder,
 * ordered by commit time, each candidate's speedup per point across them, and the places
 * where it changed: the verdict changed, or the speedup moved significantly (two-sample
 * Hodges-Lehmann on the paired log ratios of the two archives, with both archives' placement
 * spread, as compare judges: kt_compare_shift). */
#include "report/writers.h"
#include "decide/compare.h"
#include "report/svg.h"
#include "util/json.h"

#include <dirent.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* A change smaller than this (in speedup, relative) is noise whatever its p-value. */
#define KT_HISTORY_NOISE 0.01

static const char *str_at(const cJSON *doc, const char *path)
{
    const cJSON *v = kt_json_at_path(doc, path);
    return cJSON_IsString(v) ? v->valuestring : "";
}

static int by_time(const void *pa, const void *pb)
{
    const kt_report_input *a = pa, *b = pb;
    int c = strcmp(str_at(a->doc, "provenance.git.commit_time"),
                   str_at(b->doc, "provenance.git.commit_time"));
    if (!c)
        c = strcmp(str_at(a->doc, "provenance.run.start_utc"),
                   str_at(b->doc, "provenance.run.start_utc"));
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
        int ours = strcmp(str_at(in->doc, "spec.parsed.name"), experiment) == 0;
        int keep = ours && strcmp(str_at(in->doc, "status"), "complete") == 0;
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

#define MAX_SERIES 1024

typedef struct series_set {
    char points[MAX_SERIES][KT_NAME_MAX * 2];
    char cands[MAX_SERIES][KT_NAME_MAX];
    size_t n;
} series_set;

/* The change at archive 'r' of a series against the previous archive that has it. */
static int change_at(kt_history_change *ch, const kt_history *h, size_t r, const char *point,
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

int kt_write_history(FILE *f, const kt_output *o)
{
    const kt_history *h = o->history;
    series_set *s = calloc(1, sizeof(*s));
    if (!s)
        return 0;
    s->n = series_keys(h, s->points, s->cands, MAX_SERIES);
    if (s->n)
        fprintf(f, "point  candidate\n  %-8s %-20s %-22s %-12s  %s\n", "commit", "start (UTC)",
                "speedup (HL) [CI]", "verdict", "against the run before");
    for (size_t j = 0; j < s->n; j++) {
        fprintf(f, "%s  %s\n", s->points[j], s->cands[j]);
        for (size_t r = 0; r < h->n; r++) {
            const kt_candidate_result *c = kt_history_find(&h->runs[r], s->points[j], s->cands[j]);
            if (!c)
                continue;
            kt_history_change ch;
            int has = change_at(&ch, h, r, s->points[j], s->cands[j]);
            char speed[64] = "      — (not measured)"; /* a failed candidate: no speedup */
            if (isfinite(c->speedup))
                snprintf(speed, sizeof(speed), "%7.3f [%.3f, %.3f]", c->speedup, c->ci_low,
                         c->ci_high);
            fprintf(f, "  %-8.8s %-20s %s %-12s",
                    str_at(h->runs[r].doc, "provenance.git.short_commit"),
                    str_at(h->runs[r].doc, "provenance.run.start_utc"), speed,
                    kt_verdict_name(c->verdict));
            if (has && ch.verdict_changed)
                fprintf(f, "  verdict changed");
            if (has && ch.significant)
                fprintf(f, "  speedup changed %+.1f%% [%+.1f%%, %+.1f%%]", 100 * expm1(ch.shift),
                        100 * expm1(ch.ci_low), 100 * expm1(ch.ci_high));
            fputc('\n', f);
        }
    }
    free(s);
    return 0;
}

static cJSON *history_json(const kt_history *h)
{
    series_set *s = calloc(1, sizeof(*s));
    cJSON *arr = cJSON_CreateArray();
    if (!s)
        return arr;
    s->n = series_keys(h, s->points, s->cands, MAX_SERIES);
    for (size_t j = 0; j < s->n; j++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "point", s->points[j]);
        cJSON_AddStringToObject(o, "candidate", s->cands[j]);
        cJSON *runs = cJSON_AddArrayToObject(o, "runs");
        for (size_t r = 0; r < h->n; r++) {
            const kt_candidate_result *c = kt_history_find(&h->runs[r], s->points[j], s->cands[j]);
            if (!c)
                continue;
            cJSON *x = cJSON_CreateObject();
            cJSON_AddStringToObject(x, "archive", h->runs[r].dir);
            cJSON_AddStringToObject(x, "commit", str_at(h->runs[r].doc, "provenance.git.commit"));
            cJSON_AddStringToObject(x, "commit_time",
                                    str_at(h->runs[r].doc, "provenance.git.commit_time"));
            cJSON_AddStringToObject(x, "verdict", kt_verdict_name(c->verdict));
            kt_json_add_real(x, "speedup", c->speedup);
            cJSON *ci = cJSON_AddArrayToObject(x, "ci");
            cJSON_AddItemToArray(ci, kt_json_real(c->ci_low));
            cJSON_AddItemToArray(ci, kt_json_real(c->ci_high));
            kt_json_add_real(x, "baseline_median_ns", c->base_time.median);
            kt_json_add_real(x, "candidate_median_ns", c->cand_time.median);
            kt_history_change ch;
            int has = change_at(&ch, h, r, s->points[j], s->cands[j]);
            cJSON_AddBoolToObject(x, "verdict_changed", has && ch.verdict_changed);
            cJSON_AddBoolToObject(x, "speedup_changed", has && ch.significant);
            if (has)
                kt_json_add_real(x, "speedup_change", expm1(ch.shift));
            cJSON_AddItemToArray(runs, x);
        }
        cJSON_AddItemToArray(arr, o);
    }
    free(s);
    return arr;
}

int kt_write_history_json(FILE *f, const kt_output *o)
{
    cJSON *doc = history_json(o->history);
    char *text = kt_json_print(doc);
    fprintf(f, "%s\n", text ? text : "[]");
    free(text);
    cJSON_Delete(doc);
    return 0;
}

static void series_plot(FILE *f, const kt_history *h, const char *point, const char *cand)
{
    double lo = INFINITY, hi = 0, min_speedup = h->runs[0].min_speedup;
    for (size_t r = 0; r < h->n; r++) {
        const kt_candidate_result *c = kt_history_find(&h->runs[r], point, cand);
        if (c && c->ci_low > 0 && isfinite(c->ci_high))
            lo = fmin(lo, c->ci_low), hi = fmax(hi, c->ci_high);
    }
    lo = fmin(isfinite(lo) ? lo : 1, min_speedup) / 1.05;
    hi = fmax(hi, min_speedup) * 1.05;
    kt_plot p;
    kt_plot_open(&p, f, "history-plot", 900, 260, 70);
    p.x0 = 0;
    p.x1 = (double)h->n + 1;
    p.y0 = lo;
    p.y1 = hi;
    p.log_y = 1;
    kt_plot_axes(&p, 0, 5, "archives in commit order", "speedup");
    kt_plot_hline(&p, min_speedup, "ref", "min_speedup");
    for (size_t r = 0; r < h->n; r++) {
        double x = kt_plot_x(&p, (double)r + 1);
        fprintf(f, "<text class='tick-label' x='%.1f' y='%.1f' text-anchor='middle'>", x,
                p.top + p.height + 16);
        kt_html_escape(f, str_at(h->runs[r].doc, "provenance.git.short_commit"));
        fputs("</text>", f);
        const kt_candidate_result *c = kt_history_find(&h->runs[r], point, cand);
        if (!c || !(c->speedup > 0) || !(c->ci_low > 0) || !isfinite(c->ci_high))
            continue;
        kt_history_change ch;
        int has = change_at(&ch, h, r, point, cand);
        const char *v = kt_verdict_name(c->verdict);
        fprintf(f,
                "<g class='history-mark m-%s'><line class='ci' x1='%.1f' y1='%.1f' x2='%.1f' "
                "y2='%.1f'/><circle cx='%.1f' cy='%.1f' r='4'><title>%.3f [%.3f, %.3f] %s"
                "</title></circle></g>",
                v, x, kt_plot_y(&p, c->ci_low), x, kt_plot_y(&p, c->ci_high), x,
                kt_plot_y(&p, c->speedup), c->speedup, c->ci_low, c->ci_high, v);
        if (has && (ch.significant || ch.verdict_changed))
            fprintf(f,
                    "<g class='change-mark'><line class='look' x1='%.1f' y1='%.1f' x2='%.1f' "
                    "y2='%.1f'/><text class='ref-label' x='%.1f' y='%.1f'>%s%s</text></g>",
                    x - 0.5 * p.width / ((double)h->n + 1), p.top,
                    x - 0.5 * p.width / ((double)h->n + 1), p.top + p.height,
                    x - 0.5 * p.width / ((double)h->n + 1) + 2, p.top + 22,
                    ch.significant ? "speedup changed" : "", ch.verdict_changed ? " verdict" : "");
        fputc('\n', f);
    }
    kt_plot_close(&p);
}

int kt_write_history_html(FILE *f, const kt_output *o)
{
    const kt_history *h = o->history;
    const char *experiment = o->experiment;
    fputs("<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'><title>ktrial history: ",
          f);
    kt_html_escape(f, experiment);
    fputs("</title><style>body{font:14px/1.45 'DejaVu Sans',Arial,sans-serif;margin:24px}"
          "svg text{font-size:11px}.frame{fill:#fbfcfe;stroke:#c5cad6}.tick{stroke:#888}"
          ".ref{stroke:#c92a2a;stroke-dasharray:5 4}.look{stroke:#5c7cfa;stroke-dasharray:3 3}"
          ".ci{stroke-width:2}.m-KEEP{stroke:#2b8a3e;fill:#2b8a3e}.m-REJECT{stroke:#c92a2a;"
          "fill:#c92a2a}.m-INCONCLUSIVE{stroke:#e67700;fill:#e67700}td,th{padding:2px 8px}"
          "</style></head><body>\n<h1>ktrial history: ",
          f);
    kt_html_escape(f, experiment);
    fprintf(f,
            "</h1>\n<p>%zu archives, ordered by commit time. A dashed line marks an archive "
            "whose verdict changed or whose speedup changed significantly (two-sample "
            "Hodges-Lehmann on the paired log ratios, 95%% interval excluding 0, change above "
            "%.0f%%) against the archive before it.</p>\n",
            h->n, 100 * KT_HISTORY_NOISE);
    series_set *s = calloc(1, sizeof(*s));
    if (s) {
        s->n = series_keys(h, s->points, s->cands, MAX_SERIES);
        for (size_t j = 0; j < s->n; j++) {
            fputs("<section class='series'><h2>", f);
            kt_html_escape(f, s->points[j]);
            fputs(" · ", f);
            kt_html_escape(f, s->cands[j]);
            fputs("</h2>\n", f);
            series_plot(f, h, s->points[j], s->cands[j]);
            fputs("</section>\n", f);
        }
        free(s);
    }
    fputs("<h2>Archives</h2><table><tr><th>commit</th><th>commit time</th><th>run start</th>"
          "<th>folder</th></tr>\n",
          f);
    for (size_t r = 0; r < h->n; r++) {
        fputs("<tr class='archive-row'><td>", f);
        kt_html_escape(f, str_at(h->runs[r].doc, "provenance.git.commit"));
        fputs("</td><td>", f);
        kt_html_escape(f, str_at(h->runs[r].doc, "provenance.git.commit_time"));
        fputs("</td><td>", f);
        kt_html_escape(f, str_at(h->runs[r].doc, "provenance.run.start_utc"));
        fputs("</td><td>", f);
        kt_html_escape(f, h->runs[r].dir);
        fputs("</td></tr>\n", f);
    }
    fputs("</table></body></html>\n", f);
    return 0;
}
