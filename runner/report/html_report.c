/* html_report.c - 'ktrial report': one self-contained HTML page (inline CSS and SVG, no
 * script, no font or file fetched) for one or more archives of an experiment. */
#include "archive/archive.h"
#include "archive/run_archive.h"
#include "report/limits_lines.h"
#include "report/cells.h"
#include "report/gpu_table.h"
#include "report/html_numerics.h"
#include "report/html_plots.h"
#include "report/history.h"
#include "report/summary.h"
#include "report/svg.h"
#include "report/writers.h"
#include "util/json.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const STYLE =
    "body{font:14px/1.45 'DejaVu Sans',Arial,sans-serif;margin:24px;color:#1d2330;max-width:1200px}"
    "h1{font-size:22px}h2{font-size:18px;margin-top:32px;border-bottom:1px solid #ccd}"
    "h3{font-size:15px;margin-bottom:4px}"
    "table{border-collapse:collapse;margin:8px 0}td,th{padding:3px 8px;border-bottom:1px solid "
    "#e3e6ee;text-align:left;vertical-align:top}th{background:#f3f5fa}"
    "td.num{text-align:right;font-variant-numeric:tabular-nums}"
    ".v-KEEP{color:#fff;background:#2b8a3e}.v-REJECT{color:#fff;background:#c92a2a}"
    ".v-INCONCLUSIVE,.v-INTERRUPTED{color:#1d2330;background:#ffd43b}.v-ERROR{color:#fff;"
    "background:#5c5f66}"
    ".verdict{font-weight:bold;padding:1px 6px;border-radius:3px}"
    ".bad{color:#c92a2a;font-weight:bold}.reason{color:#555;font-size:12px}"
    "svg{display:block;margin:6px 0}svg text{font-size:11px;fill:#333}"
    ".frame{fill:#fbfcfe;stroke:#c5cad6}.tick{stroke:#888}.axis-title{font-size:12px}"
    ".ref{stroke:#c92a2a;stroke-dasharray:5 4}.ref-one{stroke:#777;stroke-dasharray:2 3}"
    ".look{stroke:#5c7cfa;stroke-dasharray:3 3}.ref-label{fill:#555;font-size:10px}"
    ".ci{stroke-width:2}.m-KEEP{stroke:#2b8a3e;fill:#2b8a3e}.m-REJECT{stroke:#c92a2a;"
    "fill:#c92a2a}.m-INCONCLUSIVE{stroke:#e67700;fill:#e67700}"
    ".box{fill:#dbe4ff;stroke:#364fc7}.median{stroke:#364fc7;stroke-width:2}.dot{fill:#364fc7;"
    "fill-opacity:.35}.ratio{fill:#e67700;fill-opacity:.6}.hl{stroke:#2b8a3e}"
    "pre{background:#f3f5fa;padding:8px;overflow:auto;font-size:12px}"
    ".muted{color:#777}";

static void esc(FILE *f, const char *s)
{
    kt_html_escape(f, s);
}

static const char *text_at(const cJSON *doc, const char *path, char *buf, size_t len)
{
    const cJSON *v = kt_json_at_path(doc, path);
    snprintf(buf, len, "%s", cJSON_IsString(v) ? v->valuestring : "");
    return buf;
}

static void fmt_time(char *buf, size_t len, double ns)
{
    if (!isfinite(ns))
        snprintf(buf, len, "—");
    else if (ns < 1e3)
        snprintf(buf, len, "%.0f ns", ns);
    else if (ns < 1e6)
        snprintf(buf, len, "%.2f µs", ns / 1e3);
    else if (ns < 1e9)
        snprintf(buf, len, "%.2f ms", ns / 1e6);
    else
        snprintf(buf, len, "%.3f s", ns / 1e9);
}

/* ---- verdict table ---------------------------------------------------------------------- */

/* A median of the samples: a time, or a command run's reported metric as the summary shows it. */
static void median_cell_text(char *buf, size_t len, double sample, const kt_summary_facts *facts)
{
    if (facts->metric && strcmp(facts->metric, "wall") != 0)
        kt_cell_median(buf, len, sample, facts->metric, facts->metric_higher);
    else
        fmt_time(buf, len, sample);
}

static void verdict_cell(FILE *f, const char *verdict)
{
    fprintf(f, "<td><span class='verdict v-%s'>%s</span></td>", verdict, verdict);
}

/* A figure of the verdict table, or "—" where nothing was measured (a failed candidate, a
 * point that could not be measured, a NaN): never a 0 that reads as p = 0 or a perfect rel_l2,
 * as in the summary. */
static void figure_cell(FILE *f, double v, int measured)
{
    if (measured && isfinite(v))
        fprintf(f, "<td class='num'>%.3g</td>", v);
    else
        fputs("<td class='num'>—</td>", f);
}

/* How the candidate's speedup moved from the archive before, as 'compare' reads it (the
 * two-sample HL of the paired log ratios): "+4.2% [+1.0%, +7.5%]", marked when it is a
 * change beyond the noise; "—" with nothing to compare. */
static void change_cell(FILE *f, const kt_candidate_result *before, const kt_candidate_result *c)
{
    kt_history_change ch;
    if (!before || kt_history_compare(&ch, before, c) != 0 || !isfinite(ch.shift)) {
        fputs("<td class='num'>—</td>", f);
        return;
    }
    fprintf(f, "<td class='num%s'>%+.1f%% [%+.1f%%, %+.1f%%]%s</td>",
            ch.significant && ch.shift < 0 ? " bad" : "", 100 * expm1(ch.shift),
            100 * expm1(ch.ci_low), 100 * expm1(ch.ci_high),
            ch.significant ? (ch.shift > 0 ? " faster" : " slower") : "");
}

static void verdict_table(FILE *f, const kt_report_input *in, size_t n)
{
    fputs("<table class='verdicts'><tr><th>archive</th><th>point</th><th>candidate</th>"
          "<th>verdict</th><th>speedup (HL) [CI]</th><th>p (adj.)</th><th>base median</th>"
          "<th>cand median</th><th>worst rel_l2</th><th>memory ratio</th>",
          f);
    if (n > 1)
        fputs("<th>change vs the archive above [95% CI]</th>", f);
    fputs("<th>reasons</th></tr>\n", f);
    for (size_t a = 0; a < n; a++) {
        char label[128];
        kt_report_label(label, sizeof(label), &in[a]);
        double confidence = kt_json_get_real(
            cJSON_GetObjectItemCaseSensitive(in[a].doc, "decision"), "confidence", 0.95);
        kt_summary_facts facts; /* a command run's medians are of its metric */
        kt_summary_facts_from_doc(&facts, in[a].doc);
        for (size_t i = 0; i < in[a].run.n_points; i++) {
            const kt_point_result *p = &in[a].run.points[i];
            for (size_t k = 0; k < p->n_cands; k++) {
                const kt_candidate_result *c = &p->cands[k];
                char tb[32], tc[32];
                median_cell_text(tb, sizeof(tb), c->base_time.median, &facts);
                median_cell_text(tc, sizeof(tc), c->cand_time.median, &facts);
                fputs("<tr class='verdict-row'><td>", f);
                esc(f, label);
                fputs("</td><td>", f);
                esc(f, p->point.id);
                fputs("</td><td>", f);
                esc(f, c->arm.name);
                fputs("</td>", f);
                verdict_cell(f, kt_verdict_name(c->verdict));
                if (isfinite(c->speedup))
                    fprintf(f, "<td class='num'>%.3f [%.3f, %.3f]</td>", c->speedup, c->ci_low,
                            c->ci_high);
                else
                    fputs("<td class='num'>—</td>", f);
                int measured = !c->arm.failed && !p->error[0];
                /* as the summary prints it: read against the run's own alpha */
                figure_cell(f, kt_p_adjusted(c->shift.p_value, confidence, c->confidence_used),
                            measured && c->n_pairs > 0);
                fprintf(f, "<td class='num'>%s</td><td class='num'>%s</td>", tb, tc);
                figure_cell(f, c->worst_rel_l2, measured);
                figure_cell(f, c->memory_ratio, measured);
                if (n > 1)
                    change_cell(
                        f, a > 0 ? kt_history_find(&in[a - 1], p->point.id, c->arm.name) : NULL, c);
                fputs("<td class='reason'>", f);
                for (int r = 0; r < c->n_reasons; r++) {
                    esc(f, c->reasons[r]);
                    fputs(r + 1 < c->n_reasons ? "<br>" : "", f);
                }
                if (p->error[0]) {
                    fputs("<br>error: ", f);
                    esc(f, p->error);
                }
                fputs("</td></tr>\n", f);
            }
        }
    }
    fputs("</table>\n", f);
    for (size_t a = 0; a < n; a++) {
        char label[128];
        kt_report_label(label, sizeof(label), &in[a]);
        fputs("<table class='candidates'><tr><th>", f);
        esc(f, label);
        fputs("</th><th>verdict</th><th>why</th></tr>\n", f);
        /* the summary's lines: an interrupted run, a shard or a run cut by its budget says
         * so, never a verdict it does not have */
        kt_summary_facts facts;
        char text[512];
        kt_summary_facts_from_doc(&facts, in[a].doc);
        if (strcmp(facts.status, "running") == 0)
            facts.n_not_run = in[a].unfinished_not_run;
        for (size_t k = 0; k < in[a].run.n_cands; k++) {
            const char *cword =
                kt_summary_candidate_text(text, sizeof(text), &in[a].run, k, &facts);
            fputs("<tr class='candidate-row'><td>", f);
            esc(f, in[a].run.cands[k].name);
            fputs("</td>", f);
            verdict_cell(f, cword);
            fputs("<td>", f);
            esc(f, text);
            fputs("</td></tr>\n", f);
        }
        const char *word = kt_summary_overall_text(text, sizeof(text), &in[a].run, &facts);
        fprintf(f, "<tr class='overall-row'><td><b>overall</b></td>");
        verdict_cell(f, word);
        fputs("<td>", f);
        esc(f, text);
        fputs("</td></tr></table>\n", f);
    }
}

/* ---- extras ------------------------------------------------------------------------------ */

/* result.json's NaN (the string "NaN") */
static int is_nan(const cJSON *e)
{
    return cJSON_IsString(e) && strcmp(e->valuestring, "NaN") == 0;
}

/* A JSON value for a table cell, for people: a metric as 'value unit', whole numbers and
 * those from 1e4 up to 1e15 to the unit, others to 4 significant digits, an object as 'key value,
 * ...', an array as its items joined by '; '. */
static void value_cell(FILE *f, const cJSON *e)
{
    const cJSON *x, *unit = cJSON_GetObjectItemCaseSensitive(e, "unit");
    int i = 0;
    if (is_nan(e)) {
        fputs("—", f); /* nothing measured (an arm that never ran): no 'NaN ms' */
    } else if (cJSON_IsObject(e) && cJSON_GetArraySize(e) == 2 && cJSON_IsString(unit)) {
        const cJSON *value = cJSON_GetObjectItemCaseSensitive(e, "value");
        value_cell(f, value); /* a metric: '12.5 ms' */
        if (unit->valuestring[0] && !is_nan(value)) {
            fputc(' ', f);
            esc(f, unit->valuestring);
        }
    } else if (cJSON_IsNumber(e)) {
        double v = e->valuedouble;
        int whole = (v == floor(v) || fabs(v) >= 1e4) && fabs(v) < 1e15;
        fprintf(f, whole ? "%.0f" : "%.4g", v);
    } else if (cJSON_IsString(e)) {
        esc(f, e->valuestring);
    } else if (cJSON_IsArray(e) || cJSON_IsObject(e)) {
        cJSON_ArrayForEach(x, e)
        {
            fputs(i++ ? (cJSON_IsArray(e) ? "; " : ", ") : "", f);
            if (cJSON_IsObject(e)) {
                esc(f, x->string);
                fputc(' ', f);
            }
            value_cell(f, x);
        }
    } else {
        char *v = cJSON_PrintUnformatted(e);
        esc(f, v);
        free(v);
    }
}

/* Whatever else an arm recorded (variant metrics, per-stage profiles, counters, costs),
 * as key/value rows, from the point's JSON so that new kinds need no code here. */
static void extras(FILE *f, const kt_report_input *in, const kt_point_result *pt)
{
    static const char *const keys[] = {"metrics", "stages", "profile", "counters",
                                       "costs",   "energy", "setup"};
    const cJSON *points = cJSON_GetObjectItemCaseSensitive(in->doc, "points"), *jp;
    cJSON_ArrayForEach(jp, points)
    {
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(jp, "id");
        if (!cJSON_IsString(id) || strcmp(id->valuestring, pt->point.id) != 0)
            continue;
        const cJSON *arms[1 + 64];
        size_t na = 0;
        arms[na++] = cJSON_GetObjectItemCaseSensitive(jp, "baseline");
        const cJSON *c;
        cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(jp, "candidates"))
        {
            if (na < 65)
                arms[na++] = c;
        }
        int opened = 0;
        for (size_t a = 0; a < na; a++)
            for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
                const cJSON *o = cJSON_GetObjectItemCaseSensitive(arms[a], keys[k]), *e;
                int zeros = 1; /* an arm with no prepare step (a command): no 'prepare_s 0' */
                cJSON_ArrayForEach(e, o) zeros &= cJSON_IsNumber(e) && e->valuedouble == 0;
                if (zeros && strcmp(keys[k], "setup") == 0)
                    continue;
                cJSON_ArrayForEach(e, o)
                {
                    if (!opened++)
                        fputs("<table class='extras'><tr><th>arm</th><th>kind</th>"
                              "<th>name</th><th>value</th></tr>\n",
                              f);
                    char arm[64];
                    fputs("<tr><td>", f);
                    esc(f, kt_json_get_str(arms[a], "name", arm, sizeof(arm)));
                    fprintf(f, "</td><td>%s</td><td>", keys[k]);
                    esc(f, e->string);
                    fputs("</td><td class='num'>", f);
                    value_cell(f, e);
                    fputs("</td></tr>\n", f);
                }
            }
        if (opened)
            fputs("</table>\n", f);
    }
}

/* ---- provenance ---------------------------------------------------------------------------- */

/* Files and added/removed lines of the archive's git.diff. */
static void diff_summary(FILE *f, const char *dir)
{
    char path[PATH_MAX + 16], line[4096];
    snprintf(path, sizeof(path), "%s/git.diff", dir);
    FILE *d = fopen(path, "r");
    if (!d) {
        fputs("no uncommitted changes recorded", f);
        return;
    }
    long files = 0, added = 0, removed = 0;
    while (fgets(line, sizeof(line), d)) {
        if (strncmp(line, "diff --git ", 11) == 0)
            files++;
        else if (line[0] == '+' && strncmp(line, "+++", 3) != 0)
            added++;
        else if (line[0] == '-' && strncmp(line, "---", 3) != 0)
            removed++;
    }
    fclose(d);
    fprintf(f, "git.diff: %ld file%s, +%ld / -%ld lines", files, files == 1 ? "" : "s", added,
            removed);
}

static void provenance(FILE *f, const kt_report_input *in)
{
    char a[256], b[256], c[256];
    const cJSON *doc = in->doc;
    fputs("<table class='provenance'>", f);
    fputs("<tr><th>commit</th><td>", f);
    esc(f, text_at(doc, "provenance.git.commit", a, sizeof(a))[0] ? a : "(no git)");
    fputs(" on ", f);
    esc(f, text_at(doc, "provenance.git.branch", b, sizeof(b))[0] ? b : "(detached)");
    fputs(kt_json_get_bool(kt_json_at_path(doc, "provenance.git"), "dirty", 0) ? ", dirty: "
                                                                               : ", clean: ",
          f);
    diff_summary(f, in->dir);
    fputs("</td></tr><tr><th>spec</th><td>", f);
    esc(f, text_at(doc, "spec.path", a, sizeof(a)));
    fputs(" (sha256 ", f);
    esc(f, text_at(doc, "spec.sha256", b, sizeof(b)));
    fputs(")</td></tr><tr><th>host</th><td>", f);
    esc(f, text_at(doc, "provenance.host.hostname", a, sizeof(a)));
    fputs(", ", f);
    esc(f, text_at(doc, "provenance.host.cpu_model", b, sizeof(b)));
    fprintf(f, ", %d cores, ",
            (int)kt_json_get_real(kt_json_at_path(doc, "provenance.host"), "cores", 0));
    esc(f, text_at(doc, "provenance.host.kernel", c, sizeof(c)));
    fputs("</td></tr><tr><th>build</th><td>ktrial ", f);
    esc(f, text_at(doc, "provenance.build.ktrial_version", a, sizeof(a)));
    fputs(" (", f);
    esc(f, text_at(doc, "provenance.build.ktrial_commit", b, sizeof(b)));
    fputs("), ", f);
    esc(f, text_at(doc, "provenance.build.compiler", c, sizeof(c)));
    fputs("</td></tr><tr><th>device</th><td>", f);
    esc(f, text_at(doc, "provenance.device.backend", a, sizeof(a)));
    fputs(": ", f);
    esc(f, text_at(doc, "provenance.device.info.name", b, sizeof(b)));
    fputs("</td></tr><tr><th>run</th><td>", f);
    esc(f, text_at(doc, "provenance.run.start_utc", a, sizeof(a)));
    fputs(" to ", f);
    esc(f, text_at(doc, "provenance.run.end_utc", b, sizeof(b))[0] ? b : "(unfinished)");
    fputs(", status ", f);
    esc(f, text_at(doc, "status", c, sizeof(c)));
    fputs("</td></tr>", f);
    char *limits = kt_limits_string(kt_json_at_path(doc, "provenance.limits"));
    if (limits) {
        fputs("<tr><th>limits</th><td><pre class='limits'>", f);
        esc(f, limits);
        fputs("</pre></td></tr>", f);
        free(limits);
    }
    fputs("</table>\n", f);
    char path[PATH_MAX + 16], *spec = NULL;
    size_t len;
    snprintf(path, sizeof(path), "%s/spec.yaml", in->dir);
    if (kt_read_file(&spec, &len, path, 1 << 20) == 0) {
        fputs("<details><summary>spec.yaml</summary><pre class='spec'>", f);
        esc(f, spec);
        fputs("</pre></details>\n", f);
        free(spec);
    }
}

/* ---- the page ----------------------------------------------------------------------------- */

int kt_write_html(FILE *f, const kt_output *o)
{
    const kt_report_input *in = o->archives;
    size_t n = o->n_archives;
    char name[128];
    text_at(in[0].doc, "spec.parsed.name", name, sizeof(name));
    fputs("<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
          "<meta name='viewport' content='width=device-width'><title>ktrial report: ",
          f);
    esc(f, name);
    fprintf(f, "</title><style>%s</style></head><body>\n<h1>ktrial report: ", STYLE);
    esc(f, name);
    fprintf(f, "</h1>\n<p class='muted'>%zu archive%s.", n, n == 1 ? "" : "s");
    fputs(" Speedup = baseline time / candidate time, from paired calls: the Hodges-Lehmann "
          "estimate of the per-pair log ratio, with its distribution-free confidence interval. "
          "KEEP needs the whole interval strictly above min_speedup. p (adj.): the two-sided "
          "signed-rank p (with the placements' spread), scaled to the run's own alpha as the "
          "terminal summary prints it.</p>\n",
          f);
    fputs("<h2>Verdicts</h2>\n", f);
    verdict_table(f, in, n);
    fputs("<h2>Speedups with confidence intervals</h2>\n", f);
    kt_html_forest_plot(f, in, n);
    for (size_t a = 0; a < n; a++) {
        char label[128];
        kt_report_label(label, sizeof(label), &in[a]);
        for (size_t i = 0; i < in[a].run.n_points; i++) {
            const kt_point_result *pt = &in[a].run.points[i];
            fputs("<section class='point'><h2>", f);
            esc(f, pt->point.id);
            if (n > 1) {
                fputs(" · ", f);
                esc(f, label);
            }
            fputs("</h2>\n<h3>Times of every timed call</h3>\n", f);
            kt_html_distribution_plot(f, pt);
            for (size_t k = 0; k < pt->n_cands; k++) {
                fputs("<h3>Paired log ratios in run order: ", f);
                esc(f, pt->cands[k].arm.name);
                fprintf(f, " (%zu pairs, %d looks taken)</h3>\n", pt->cands[k].n_pairs,
                        pt->cands[k].looks);
                kt_html_series_plot(f, &in[a], &pt->cands[k]);
            }
            if (pt->baseline.serving.present) {
                char line[1024];
                fputs("<h3>Serving: each arm under load (ms; 95% bootstrap "
                      "intervals)</h3>\n<ul>\n",
                      f);
                for (size_t k = 0; k <= pt->n_cands; k++) {
                    fputs("<li>", f);
                    esc(f, kt_serving_text(line, sizeof(line),
                                           k ? &pt->cands[k - 1].arm : &pt->baseline));
                    fputs("</li>\n", f);
                }
                fputs("</ul>\n", f);
            }
            kt_html_numerics_table(f, in[a].doc, pt);
            extras(f, &in[a], pt);
            kt_report_gpu_table(f, pt);
            fputs("</section>\n", f);
        }
    }
    fputs("<h2>Provenance</h2>\n", f);
    for (size_t a = 0; a < n; a++) {
        char label[128];
        kt_report_label(label, sizeof(label), &in[a]);
        fputs("<h3>", f);
        esc(f, label);
        fputs("</h3>\n", f);
        provenance(f, &in[a]);
    }
    fputs("<p class='muted'>Written by ktrial report. Self-contained: no script, no network "
          "access.</p>\n</body></html>\n",
          f);
    return 0;
}
