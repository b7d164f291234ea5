/* junit.c - the JUnit XML of an archive, for CI: one test case per point and candidate;
 * REJECT is a failure, INCONCLUSIVE a skip, a point that could not be measured an error. */
#include "report/summary.h"
#include "report/svg.h"
#include "report/writers.h"
#include "util/json.h"

#include <math.h>
#include <string.h>

/* XML text: the HTML escaping is also valid XML (&#39; included), and drops the control
 * characters XML 1.0 cannot hold. */
static void xml(FILE *f, const char *s)
{
    kt_html_escape(f, s);
}

/* The served arms' figures (the baseline's and this candidate's), for system-out. */
static void serving_out(FILE *f, const kt_point_result *p, const kt_candidate_result *c)
{
    char line[1024];
    if (!p->baseline.serving.present)
        return;
    fputs("\n", f);
    xml(f, kt_serving_text(line, sizeof(line), &p->baseline));
    fputs("\n", f);
    xml(f, kt_serving_text(line, sizeof(line), &c->arm));
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

int kt_write_junit(FILE *f, const kt_output *o)
{
    const kt_report_input *in = &o->archives[0];
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
                fprintf(f, ">\n      <system-out>KEEP: speedup %.3f [%.3f, %.3f]", c->speedup,
                        c->ci_low, c->ci_high);
                serving_out(f, p, c);
                fputs("</system-out>\n    </testcase>\n", f);
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
            if (p->baseline.serving.present) {
                fputs("\n      <system-out>", f);
                serving_out(f, p, c);
                fputs("</system-out>", f);
            }
            fputs("\n    </testcase>\n", f);
        }
    }
    fputs("  </testsuite>\n</testsuites>\n", f);
    return 0;
}
