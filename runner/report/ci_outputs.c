/* ci_outputs.c - loading an archive for the reports, and the formats CI systems read: JUnit
 * XML (one test case per point and candidate) and a markdown table (a pull-request comment,
 * GitHub's step summary). */
#include "archive/archive.h"
#include "archive/run_archive.h"
#include "report/summary.h"
#include "report/cells.h"
#include "report/report.h"
#include "report/svg.h"
#include "util/json.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int kt_report_load(kt_report_input *in, const char *path)
{
    memset(in, 0, sizeof(*in));
    size_t len = strlen(path);
    snprintf(in->dir, sizeof(in->dir), "%s", path);
    if (len > 12 && strcmp(path + len - 12, "/result.json") == 0)
        in->dir[len - 12] = '\0';
    else if (strcmp(path, "result.json") == 0)
        snprintf(in->dir, sizeof(in->dir), ".");
    if (kt_run_archive_load_result(&in->doc, path) < 0 ||
        kt_run_result_from_json(&in->run, in->doc) < 0)
        return -1;
    const cJSON *status = cJSON_GetObjectItemCaseSensitive(in->doc, "status");
    if (cJSON_IsString(status) && strcmp(status->valuestring, "running") == 0)
        kt_run_archive_load_unfinished(&in->run, &in->unfinished_not_run, in->dir, in->doc);
    const cJSON *trials = kt_json_at_path(in->doc, "spec.parsed.trials");
    in->min_reps = (int)kt_json_get_real(trials, "min_repetitions", 10);
    in->max_reps = (int)kt_json_get_real(trials, "max_repetitions", 200);
    in->min_speedup =
        kt_json_get_real(cJSON_GetObjectItemCaseSensitive(in->doc, "decision"), "min_speedup", 1);
    return 0;
}

void kt_report_input_free(kt_report_input *in)
{
    kt_run_result_free(&in->run);
    cJSON_Delete(in->doc);
    in->doc = NULL;
}

void kt_report_label(char *out, size_t len, const kt_report_input *in)
{
    const cJSON *commit = kt_json_at_path(in->doc, "provenance.git.short_commit");
    const cJSON *start = kt_json_at_path(in->doc, "provenance.run.start_utc");
    snprintf(out, len, "%s %s", cJSON_IsString(commit) ? commit->valuestring : "nogit",
             cJSON_IsString(start) ? start->valuestring : "");
}

/* XML text: the HTML escaping is also valid XML (&#39; included), and drops the control
 * characters XML 1.0 cannot hold. */
static void xml(FILE *f, const char *s)
{
    kt_html_escape(f, s);
}

static void reasons_text(FILE *f, const kt_point_result *p, const kt_candidate_result *c)
{
    for (int r = 0; r < c->n_reasons; r++) {
        xml(f, c->reasons[r]);
        fputs(r + 1 < c->n_reasons ? "; " : "", f);
    }
    if (p->error[0]) {
        fputs(c->n_reasons ? "; " : "", f);
        xml(f, p->error);
    }
}

void kt_report_junit(FILE *f, const kt_report_input *in)
{
    const kt_run_result *run = &in->run;
    char name[128];
    const cJSON *n = kt_json_at_path(in->doc, "spec.parsed.name");
    snprintf(name, sizeof(name), "%s", cJSON_IsString(n) ? n->valuestring : "ktrial");
    int tests = 0, failures = 0, errors = 0, skipped = 0;
    for (size_t i = 0; i < run->n_points; i++)
        for (size_t k = 0; k < run->points[i].n_cands; k++) {
            const kt_point_result *p = &run->points[i];
            tests++;
            errors += p->error[0] != 0;
            failures += !p->error[0] && p->cands[k].verdict == KT_VERDICT_REJECT;
            skipped += !p->error[0] && p->cands[k].verdict == KT_VERDICT_INCONCLUSIVE;
        }
    double total_s = 0;
    for (size_t i = 0; i < run->n_points; i++)
        total_s += isfinite(run->points[i].elapsed_s) ? run->points[i].elapsed_s : 0;
    fputs("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"ktrial\">\n", f);
    fputs("  <testsuite name=\"", f);
    xml(f, name);
    fprintf(f, "\" tests=\"%d\" failures=\"%d\" errors=\"%d\" skipped=\"%d\" time=\"%.3f\">\n",
            tests, failures, errors, skipped, total_s);
    for (size_t i = 0; i < run->n_points; i++) {
        const kt_point_result *p = &run->points[i];
        for (size_t k = 0; k < p->n_cands; k++) {
            const kt_candidate_result *c = &p->cands[k];
            fputs("    <testcase classname=\"", f);
            xml(f, name);
            fputs(".", f);
            xml(f, c->arm.name);
            fputs("\" name=\"", f);
            xml(f, p->point.id);
            fprintf(f, "\" time=\"%.3f\"", isfinite(p->elapsed_s) ? p->elapsed_s : 0);
            const char *tag = p->error[0]                             ? "error"
                              : c->verdict == KT_VERDICT_REJECT       ? "failure"
                              : c->verdict == KT_VERDICT_INCONCLUSIVE ? "skipped"
                                                                      : NULL;
            if (!tag) {
                fprintf(f,
                        ">\n      <system-out>KEEP: speedup %.3f [%.3f, %.3f]</system-out>\n"
                        "    </testcase>\n",
                        c->speedup, c->ci_low, c->ci_high);
                continue;
            }
            fprintf(f, ">\n      <%s message=\"", tag);
            reasons_text(f, p, c);
            fprintf(f, "\"%s>", strcmp(tag, "skipped") == 0 ? "/" : "");
            if (strcmp(tag, "skipped") != 0) {
                fprintf(f, "%s at %s: ", kt_verdict_name(c->verdict), p->point.id);
                reasons_text(f, p, c);
                fprintf(f, "</%s>", tag);
            }
            fputs("\n    </testcase>\n", f);
        }
    }
    fputs("  </testsuite>\n</testsuites>\n", f);
}

/* Markdown table cells cannot hold '|' or a newline. */
static void md(FILE *f, const char *s)
{
    for (; s && *s; s++) {
        if (*s == '|')
            fputs("\\|", f);
        else if (*s == '\n' || *s == '\r')
            fputc(' ', f);
        else if ((unsigned char)*s >= 0x20)
            fputc(*s, f);
    }
}

void kt_report_markdown(FILE *f, const kt_report_input *in)
{
    const kt_run_result *run = &in->run;
    const cJSON *n = kt_json_at_path(in->doc, "spec.parsed.name");
    /* the summary's overall line: a shard, an interrupted run, one with points that failed or
     * were not run says so, never a verdict it does not have */
    kt_summary_facts facts;
    char text[256], pv[16];
    kt_summary_facts_from_doc(&facts, in->doc);
    const char *word = kt_summary_overall_text(text, sizeof(text), run, &facts);
    fprintf(f, "### ktrial: %s — ", cJSON_IsString(n) ? n->valuestring : "?");
    if (facts.shard_count > 1 && strcmp(facts.status, "interrupted") != 0)
        fprintf(f, "shard %d/%d only, ", facts.shard_index, facts.shard_count);
    fprintf(f, "**%s** ", word);
    md(f, text);
    fputs("\n\n| point | candidate | verdict | speedup (HL) [CI] | p (adj.) | worst rel_l2 |\n"
          "|---|---|---|---|---|---|\n",
          f);
    for (size_t i = 0; i < run->n_points; i++) {
        const kt_point_result *p = &run->points[i];
        for (size_t k = 0; k < p->n_cands; k++) {
            const kt_candidate_result *c = &p->cands[k];
            fputs("| ", f);
            md(f, p->point.id);
            fputs(" | ", f);
            md(f, c->arm.name);
            fprintf(f, " | %s | ", p->error[0] ? "ERROR" : kt_verdict_name(c->verdict));
            /* as the summary: — wherever nothing was measured, never 0.000 [0.000, 0.000] */
            if (c->n_pairs > 0 && isfinite(c->speedup))
                fprintf(f, "%.3f [%.3f, %.3f] | ", c->speedup, c->ci_low, c->ci_high);
            else
                fprintf(f, "%s | ", kt_cell_none);
            fprintf(f, "%s | ",
                    kt_cell_p(pv, sizeof(pv),
                              c->n_pairs > 0 ? kt_p_adjusted(c->shift.p_value, facts.confidence,
                                                             c->confidence_used)
                                             : NAN));
            if (isfinite(c->worst_rel_l2) && !c->arm.failed && !p->error[0])
                fprintf(f, "%.3g |\n", c->worst_rel_l2);
            else
                fprintf(f, "%s |\n", kt_cell_none);
        }
    }
    fputs("\n", f);
    for (size_t k = 0; k < run->n_cands; k++) {
        fputs("- **", f);
        md(f, run->cands[k].name);
        fprintf(f, "**: %s — ", kt_verdict_name(run->cands[k].verdict));
        md(f, run->cands[k].reason);
        fputs("\n", f);
    }
    fputs("\np (adj.): the signed-rank p scaled to the run's alpha, as the terminal summary "
          "prints it; archive `",
          f);
    md(f, in->dir);
    fputs("`\n", f);
}

static int write_with(const char *path, void (*fn)(FILE *, const kt_report_input *),
                      const kt_report_input *in, int append)
{
    FILE *f = fopen(path, append ? "a" : "w");
    if (!f)
        return kt_error_set("cannot write '%s': %m", path);
    fn(f, in);
    if (fclose(f) != 0)
        return kt_error_set("cannot write '%s': %m", path);
    return 0;
}

int kt_report_ci_files(const kt_report_input *in, const char *junit, const char *markdown)
{
    if (junit && write_with(junit, kt_report_junit, in, 0) < 0)
        return -1;
    if (markdown && write_with(markdown, kt_report_markdown, in, 0) < 0)
        return -1;
    const char *summary = getenv("GITHUB_STEP_SUMMARY");
    if (markdown && summary && summary[0] && write_with(summary, kt_report_markdown, in, 1) < 0)
        return -1;
    return 0;
}
