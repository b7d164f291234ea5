/* summary.c - the summary table printed at the end of run and by show. */
#include "cli/summary.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static void format_time(char *buf, size_t len, double ns)
{
    if (!isfinite(ns))
        snprintf(buf, len, "-");
    else if (ns < 1e3)
        snprintf(buf, len, "%.0f ns", ns);
    else if (ns < 1e6)
        snprintf(buf, len, "%.2f us", ns / 1e3);
    else if (ns < 1e9)
        snprintf(buf, len, "%.2f ms", ns / 1e6);
    else
        snprintf(buf, len, "%.3f s", ns / 1e9);
}

/* Width of the widest point id and candidate name, so the table lines up. */
static void column_widths(const kt_run_result *run, int *point_w, int *cand_w)
{
    *point_w = 5;
    *cand_w = 9;
    for (size_t i = 0; i < run->n_points; i++) {
        const kt_point_result *p = &run->points[i];
        if ((int)strlen(p->point.id) > *point_w)
            *point_w = (int)strlen(p->point.id);
        for (size_t k = 0; k < p->n_cands; k++)
            if ((int)strlen(p->cands[k].arm.name) > *cand_w)
                *cand_w = (int)strlen(p->cands[k].arm.name);
    }
}

/* Disturbed pairs and a coarse timer, where they could move the verdict. */
static void print_noise(FILE *out, const kt_point_result *p, const kt_candidate_result *c)
{
    if (c->n_pairs && c->noisy_pairs > 0)
        fprintf(out, "    noise: %d of %zu pairs disturbed (context switches or throttling)%s\n",
                c->noisy_pairs, c->n_pairs,
                c->noisy_pairs > KT_NOISY_SHARE_WARN * (double)c->n_pairs
                    ? "; warning: more than a quarter, the machine was busy"
                    : "");
    double fastest = fmin(c->base_time.median, c->cand_time.median);
    if (p->timer_tick_ns > 0 && fastest > 0 && p->timer_tick_ns > 0.01 * fastest)
        fprintf(out,
                "    warning: timer tick %.0f ns is %.1f%% of the median time; tied timings "
                "make verdicts conservative\n",
                p->timer_tick_ns, 100 * p->timer_tick_ns / fastest);
}

void kt_print_summary(FILE *out, const kt_run_result *run, const char *baseline_name,
                      const char *aggregate, double min_speedup)
{
    int pw, cw;
    column_widths(run, &pw, &cw);
    fprintf(out, "%-*s  %-*s  %10.10s  %10s  %-24s %9s %9s  %s\n", pw, "point", cw, "candidate",
            baseline_name, "candidate", "speedup [CI]", "p", "rel_l2", "verdict");
    for (size_t i = 0; i < run->n_points; i++) {
        const kt_point_result *p = &run->points[i];
        for (size_t k = 0; k < p->n_cands; k++) {
            const kt_candidate_result *c = &p->cands[k];
            char tb[24], tc[24], sp[48];
            format_time(tb, sizeof(tb), c->base_time.median);
            format_time(tc, sizeof(tc), c->cand_time.median);
            if (isfinite(c->speedup))
                snprintf(sp, sizeof(sp), "%.3f [%.3f, %.3f]", c->speedup, c->ci_low, c->ci_high);
            else
                snprintf(sp, sizeof(sp), "-");
            fprintf(out, "%-*s  %-*s  %10s  %10s  %-24s %9.3g %9.3g  %s%s\n", pw, p->point.id, cw,
                    c->arm.name, tb, tc, sp, c->shift.p_value, c->worst_rel_l2,
                    kt_verdict_name(c->verdict), c->order_warning ? " (order effect!)" : "");
            if (c->verdict != KT_VERDICT_KEEP)
                for (int r = 0; r < c->n_reasons; r++)
                    fprintf(out, "    %s\n", c->reasons[r]);
            kt_stage_print(out, &p->baseline.stages, baseline_name, &c->arm.stages, c->arm.name);
            print_noise(out, p, c);
        }
        if (p->error[0])
            fprintf(out, "    error: %s\n", p->error);
    }
    fprintf(out, "\n");
    for (size_t k = 0; k < run->n_cands; k++) {
        const kt_candidate_verdict *cv = &run->cands[k];
        fprintf(out, "candidate %-*s  %-12s %s", cw, cv->name, kt_verdict_name(cv->verdict),
                cv->reason);
        if (isfinite(cv->geomean_speedup) && strcmp(aggregate, "geomean") != 0)
            fprintf(out, "; geomean speedup %.3f", cv->geomean_speedup);
        fprintf(out, "\n");
    }
    fprintf(out, "overall: %s (min_speedup %.3g, aggregate %s)\n", kt_verdict_name(run->verdict),
            min_speedup, aggregate);
    if (run->order_warnings)
        fprintf(out,
                "warning: %d point(s) show an order effect (candidate-first pairs differ "
                "from baseline-first pairs, p < 0.01)\n",
                run->order_warnings);
}
