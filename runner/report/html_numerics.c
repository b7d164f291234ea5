/* html_numerics.c - the HTML report's numerics per input set (rel_l2, cosine, max_abs,
 * unwritten and non-finite elements against the float64 reference), with the limits the spec
 * set; nothing where no arm was compared with a reference. */
#include "report/html_numerics.h"
#include "report/svg.h"
#include "util/json.h"

#include <math.h>
#include <stdio.h>

/* A numerics figure, red when 'bad'; "—" for a NaN: nothing compared (a call that failed, a
 * command trial without outputs), as in the verdict table. An infinity is a result: shown. */
static void numerics_cell(FILE *f, const char *format, double v, int bad)
{
    if (isnan(v)) {
        fputs("<td class='num'>—</td>", f);
        return;
    }
    fprintf(f, "<td class='num%s'>", bad ? " bad" : "");
    fprintf(f, format, v);
    fputs("</td>", f);
}

static void numerics_rows(FILE *f, const kt_arm_result *a, const cJSON *limits)
{
    double max_rel = kt_json_get_real(limits, "max_rel_l2", NAN);
    double min_cos = kt_json_get_real(limits, "min_cosine", NAN);
    double max_abs = kt_json_get_real(limits, "max_abs", NAN);
    for (int s = 0; s < a->n_sets; s++) {
        const kt_numerics *n = &a->numerics[s];
        fputs("<tr><td>", f);
        kt_html_escape(f, a->name);
        fprintf(f, "</td><td class='num'>%d</td>", s);
        numerics_cell(f, "%.3g", n->rel_l2, n->rel_l2 > max_rel);
        numerics_cell(f, "%.6f", n->cosine, n->cosine < min_cos);
        numerics_cell(f, "%.3g", n->max_abs, n->max_abs > max_abs);
        fprintf(f, "<td class='num'>%zu</td><td class='num'>%zu</td></tr>\n", (size_t)n->unwritten,
                (size_t)n->nonfinite);
    }
}

/* Whether any input set of 'a' was compared with a reference (a command or service trial
 * without outputs compares none). */
static int compared(const kt_arm_result *a)
{
    for (int s = 0; s < a->n_sets; s++)
        if (!isnan(a->numerics[s].rel_l2) || a->numerics[s].unwritten || a->numerics[s].nonfinite)
            return 1;
    return 0;
}

/* The numerics per input set, where anything was compared: no table of dashes. */
void kt_html_numerics_table(FILE *f, const cJSON *doc, const kt_point_result *pt)
{
    int any = compared(&pt->baseline);
    for (size_t k = 0; k < pt->n_cands; k++)
        any |= compared(&pt->cands[k].arm);
    if (!any)
        return;
    const cJSON *limits = kt_json_at_path(doc, "spec.parsed.thresholds.numerics");
    fputs("<h3>Numerics per input set (against the float64 reference)</h3>\n", f);
    fputs("<table class='numerics'><tr><th>arm</th><th>input set</th><th>rel_l2</th>"
          "<th>cosine</th><th>max_abs</th><th>unwritten</th><th>non-finite</th></tr>\n",
          f);
    numerics_rows(f, &pt->baseline, limits);
    for (size_t k = 0; k < pt->n_cands; k++)
        numerics_rows(f, &pt->cands[k].arm, limits);
    fputs("</table>\n<p class='muted'>limits: ", f);
    int set = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, limits) /* the limits the spec set, as 'name value' */
    {
        if (cJSON_IsNull(e) || cJSON_IsFalse(e))
            continue;
        fputs(set++ ? ", " : "", f);
        kt_html_escape(f, e->string);
        if (cJSON_IsNumber(e))
            fprintf(f, " %.4g", e->valuedouble);
    }
    fputs(set ? "</p>\n" : "none set</p>\n", f);
}
