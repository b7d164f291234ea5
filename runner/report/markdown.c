/* markdown.c - a compact markdown table of an archive's verdicts, for a pull-request comment
 * and GitHub's step summary; the overall line in the summary's words. */
#include "report/cells.h"
#include "report/summary.h"
#include "report/writers.h"
#include "util/json.h"

#include <math.h>
#include <string.h>

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

int kt_write_markdown(FILE *f, const kt_output *o)
{
    const kt_report_input *in = &o->archives[0];
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
    for (size_t i = 0; i < run->n_points; i++) { /* servers under load: each arm apart */
        const kt_point_result *p = &run->points[i];
        char line[1024];
        for (size_t a = 0; p->baseline.serving.present && a <= p->n_cands; a++) {
            const kt_arm_result *arm = a ? &p->cands[a - 1].arm : &p->baseline;
            if (a == 0) {
                fputs("\nServing at ", f);
                md(f, p->point.id);
                fputs(" (ms; 95% bootstrap intervals):\n\n", f);
            }
            fputs("- ", f);
            md(f, kt_serving_text(line, sizeof(line), arm));
            fputs("\n", f);
        }
    }
    fputs("\np (adj.): the signed-rank p scaled to the run's alpha, as the terminal summary "
          "prints it; archive `",
          f);
    md(f, in->dir);
    fputs("`\n", f);
    return 0;
}
