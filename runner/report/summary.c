/* summary.c - the summary table printed at the end of run, merge and by show: labelled
 * columns and a legend, "—" for what was not measured, the run's state (INTERRUPTED, NOT RUN,
 * a shard, --quick) on the overall line, colour for verdicts on a terminal. */
#include "report/summary.h"
#include "report/cells.h"
#include "report/command_tasks.h"
#include "report/limits_lines.h"
#include "report/writers.h"
#include "result/result_json.h"
#include "decide/verdict.h"
#include "util/json.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define W_TIME       11
#define W_SPEEDUP    24
#define W_P          8
#define W_L2         8
#define W_NOISY      7
#define W_THROUGHPUT 20

/* Whether the medians are of a reported metric rather than times. */
static int by_metric(const kt_summary_facts *f)
{
    return f->metric && strcmp(f->metric, "wall") != 0;
}

static const char *plural(size_t n)
{
    return n == 1 ? "" : "s";
}

/* 'word' (a verdict or a state) in its colour when 'color'. */
static void put_verdict(FILE *out, const char *word, int color)
{
    const char *code = strcmp(word, "KEEP") == 0                                   ? "32"
                       : strcmp(word, "REJECT") == 0 || strcmp(word, "ERROR") == 0 ? "31"
                                                                                   : "33";
    if (color)
        fprintf(out, "\033[1;%sm%s\033[0m", code, word);
    else
        fputs(word, out);
}

/* Width of the widest point id and candidate name, so the table lines up. */
static void column_widths(const kt_run_result *run, const kt_summary_facts *f, int *point_w,
                          int *cand_w)
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
    for (size_t i = 0; f->not_run_ids && i < f->n_not_run; i++)
        if ((int)strlen(f->not_run_ids[i]) > *point_w)
            *point_w = (int)strlen(f->not_run_ids[i]);
}

/* The columns after point and candidate: their widths and alignment (1: right). */
#define N_CELLS 7
static const int cell_width[N_CELLS] = {W_TIME, W_TIME,  W_SPEEDUP,   W_P,
                                        W_L2,   W_NOISY, W_THROUGHPUT};
static const int cell_right[N_CELLS] = {1, 1, 0, 1, 1, 1, 0};

/* One line of the table up to the verdict: point, candidate and the cells, 2 spaces apart. */
static void put_cells(FILE *out, const char *point, int pw, const char *cand, int cw,
                      const char *const *cells)
{
    kt_cell_put(out, point, pw, 0);
    fputs("  ", out);
    kt_cell_put(out, cand, cw, 0);
    for (int k = 0; k < N_CELLS; k++) {
        fputs("  ", out);
        kt_cell_put(out, cells[k], cell_width[k], cell_right[k]);
    }
    fputs("  ", out);
}

static void header(FILE *out, int pw, int cw, const kt_summary_facts *f)
{
    static const char *const labels[N_CELLS] = {
        "base median", "cand median", "speedup (HL) [CI]", "p (adj.)",
        "rel_l2",      "noisy",       "cand throughput"};
    put_cells(out, "point", pw, "candidate", cw, labels);
    fputs("verdict\n", out);
    if (by_metric(f))
        fprintf(out,
                "(medians of the reported %s over the pairs, %s is better; 'base' is %s; "
                "speedup = %s %s, ",
                f->metric, f->metric_higher ? "higher" : "lower", f->baseline_name,
                f->metric_higher ? "cand/base" : "base/cand", f->metric);
    else
        fprintf(out, "(medians per call over the pairs; 'base' is %s; speedup = base/cand time, ",
                f->baseline_name);
    fprintf(out,
            "Hodges-Lehmann, %g%% CI; p: signed-rank (with the placements' spread), adjusted "
            "for the looks and points; noisy: disturbed pairs; %s: not measured)\n",
            100 * f->confidence, kt_cell_none);
}

/* One row: the candidate's cells, "—" for each one it has no measurement for. */
static void row(FILE *out, const kt_point_result *p, const kt_candidate_result *c, int pw, int cw,
                const kt_summary_facts *f, const kt_roofline *roof)
{
    char tb[32], tc[32], sp[64], pv[16], l2[16], noisy[24], tp[48];
    int timed = c->n_pairs > 0;
    kt_cell_median(tb, sizeof(tb), timed ? c->base_time.median : NAN, f->metric, f->metric_higher);
    kt_cell_median(tc, sizeof(tc), timed ? c->cand_time.median : NAN, f->metric, f->metric_higher);
    if (timed && isfinite(c->speedup))
        snprintf(sp, sizeof(sp), "%.3f [%.3f, %.3f]", c->speedup, c->ci_low, c->ci_high);
    else
        snprintf(sp, sizeof(sp), "%s", kt_cell_none);
    kt_cell_p(pv, sizeof(pv),
              timed ? kt_p_adjusted(c->shift.p_value, f->confidence, c->confidence_used) : NAN);
    if (isfinite(c->worst_rel_l2) && !c->arm.failed && !p->error[0])
        snprintf(l2, sizeof(l2), "%.2g", c->worst_rel_l2);
    else
        snprintf(l2, sizeof(l2), "%s", kt_cell_none);
    if (timed)
        snprintf(noisy, sizeof(noisy), "%d/%zu", c->noisy_pairs, c->n_pairs);
    else
        snprintf(noisy, sizeof(noisy), "%s", kt_cell_none);
    kt_cell_throughput(tp, sizeof(tp), p->flops, p->bytes, timed ? c->cand_time.median : NAN, roof);
    const char *cells[N_CELLS] = {tb, tc, sp, pv, l2, noisy, tp};
    put_cells(out, p->point.id, pw, c->arm.name, cw, cells);
    put_verdict(out, kt_verdict_name(c->verdict), f->color);
    if (c->order_warning)
        fputs(" (order effect!)", out);
    if (c->set_warning)
        fputs(" (input sets differ!)", out);
    if (c->state_warning)
        fputs(" (uneven buffer placement: see the warning below)", out);
    fputc('\n', out);
}

/* The run's prepared states that ran far off their arm's others, with the furthest one. */
static void state_warning_line(FILE *out, const kt_run_result *run)
{
    const kt_point_result *at = NULL;
    const kt_candidate_result *worst = NULL;
    for (size_t i = 0; i < run->n_points; i++)
        for (size_t k = 0; k < run->points[i].n_cands; k++) {
            const kt_candidate_result *c = &run->points[i].cands[k];
            if (c->state_warning &&
                (!worst || fabs(log(c->state_ratio)) > fabs(log(worst->state_ratio)))) {
                worst = c;
                at = &run->points[i];
            }
        }
    if (!worst)
        return;
    double r = worst->state_ratio;
    fprintf(out,
            "warning: uneven buffer placement at %d %s. ktrial prepares each arm's inputs and "
            "buffers several times over (placements), because where they land in memory can "
            "change a kernel's speed; here one placement's calls ran %.2fx %s than the median "
            "of the same arm's other placements (%s, input set %d, placement %d, at %s "
            "with candidate %s). The verdict stands: its interval includes this spread, so it "
            "is wider, not wrong. If it recurs, look at the buffers' alignment or NUMA node "
            "(docs/statistics.md, \"Placement\").\n",
            run->state_warnings, run->state_warnings == 1 ? "point" : "points", r >= 1 ? r : 1 / r,
            r >= 1 ? "slower" : "faster", worst->state_arm ? worst->arm.name : "the baseline",
            worst->state_set, worst->state_placement, at->point.id, worst->arm.name);
}

/* A disturbed majority and a coarse timer, where they could move the verdict. */
static void print_noise(FILE *out, const kt_point_result *p, const kt_candidate_result *c)
{
    if (c->n_pairs && c->noisy_pairs > KT_NOISY_SHARE_WARN * (double)c->n_pairs)
        fprintf(out,
                "    warning: %d of %zu pairs disturbed (context switches or throttling), more "
                "than a quarter: the machine was busy\n",
                c->noisy_pairs, c->n_pairs);
    double fastest = fmin(c->base_time.median, c->cand_time.median);
    if (p->timer_tick_ns > 0 && fastest > 0 && p->timer_tick_ns > 0.01 * fastest)
        fprintf(out,
                "    warning: timer tick %.0f ns is %.1f%% of the median time; tied timings "
                "make verdicts conservative\n",
                p->timer_tick_ns, 100 * p->timer_tick_ns / fastest);
}

/* Rows of the points this run never started, so the table shows the whole run. */
static void not_run_rows(FILE *out, const kt_summary_facts *f, int pw, int cw)
{
    const char *why = strcmp(f->status, "interrupted") == 0 ? "interrupted"
                      : strcmp(f->status, "running") == 0   ? "not started"
                                                            : "budget";
    for (size_t i = 0; f->not_run_ids && i < f->n_not_run; i++) {
        const char *none[N_CELLS];
        for (int k = 0; k < N_CELLS; k++)
            none[k] = kt_cell_none;
        put_cells(out, f->not_run_ids[i], pw, kt_cell_none, cw, none);
        put_verdict(out, "NOT RUN", f->color);
        fprintf(out, " (%s)\n", why);
    }
}

/* Points where candidate 'k' enters the geometric mean. */
static size_t measured_points(const kt_run_result *run, size_t k)
{
    size_t n = 0;
    for (size_t i = 0; i < run->n_points; i++)
        n += kt_point_in_geomean(&run->points[i], k);
    return n;
}

static void candidate_lines(FILE *out, const kt_run_result *run, const kt_summary_facts *f, int cw)
{
    for (size_t k = 0; k < run->n_cands; k++) {
        const kt_candidate_verdict *cv = &run->cands[k];
        fprintf(out, "candidate %-*s  ", cw, cv->name);
        char text[512];
        const char *word = kt_summary_candidate_text(text, sizeof(text), run, k, f);
        put_verdict(out, word, f->color);
        fprintf(out, "%*s  %s", 12 - (int)strlen(word), "", text);
        if (isfinite(cv->geomean_speedup) && strcmp(f->aggregate, "geomean") != 0)
            fprintf(out, "; geomean speedup %.3f over %zu of %zu point%s", cv->geomean_speedup,
                    measured_points(run, k), kt_run_finished_points(run),
                    plural(kt_run_finished_points(run)));
        fputc('\n', out);
    }
}

/* The last line: the run's verdict, or its state when it has none, with the facts that bound
 * what the verdict covers (a shard, --quick, points not run). */
static void overall_line(FILE *out, const kt_run_result *run, const kt_summary_facts *f)
{
    char text[256];
    const char *word = kt_summary_overall_text(text, sizeof(text), run, f);
    fputs("overall: ", out);
    if (f->shard_count > 1 && !kt_summary_stopped(f))
        fprintf(out, "shard %d/%d only, ", f->shard_index, f->shard_count);
    put_verdict(out, word, f->color);
    fprintf(out, " %s\n", text);
}

void kt_print_summary(FILE *out, const kt_run_result *run, const kt_summary_facts *f)
{
    int pw, cw;
    kt_roofline roof;
    int have_roof = kt_roofline_parse(&roof, getenv("KT_ROOFLINE")) == 0;
    column_widths(run, f, &pw, &cw);
    header(out, pw, cw, f);
    for (size_t i = 0; i < run->n_points; i++) {
        const kt_point_result *p = &run->points[i];
        for (size_t k = 0; k < p->n_cands; k++) {
            const kt_candidate_result *c = &p->cands[k];
            row(out, p, c, pw, cw, f, have_roof ? &roof : NULL);
            if (c->verdict != KT_VERDICT_KEEP)
                for (int r = 0; r < c->n_reasons; r++)
                    fprintf(out, "    %s\n", c->reasons[r]);
            kt_stage_print(out, &p->baseline.stages, f->baseline_name, &c->arm.stages, c->arm.name);
            print_noise(out, p, c);
        }
        if (kt_point_failed(p)) /* a point cut short says so in its candidates' reasons */
            fprintf(out, "    error: %s\n", p->error);
    }
    not_run_rows(out, f, pw, cw);
    kt_print_serving(out, run);
    if (have_roof)
        fprintf(out, "(throughput %% of the roofline KT_ROOFLINE=%.6g GFLOP/s : %.6g GB/s)\n",
                roof.gflops, roof.gbps);
    fprintf(out, "\n");
    candidate_lines(out, run, f, cw);
    overall_line(out, run, f);
    if (run->order_warnings)
        fprintf(out,
                "warning: %d %s an order effect (candidate-first pairs differ from "
                "baseline-first pairs by 1%% or more, p < 0.01)\n",
                run->order_warnings, run->order_warnings == 1 ? "point shows" : "points show");
    if (run->set_warnings)
        fprintf(out,
                "warning: at %d %s the input sets' pairs differ (p < 0.01): the speed depends on "
                "the data, or on where each set's prepared buffers lie; the interval pools them "
                "(docs/statistics.md, \"Placement\")\n",
                run->set_warnings, run->set_warnings == 1 ? "point" : "points");
    if (run->state_warnings)
        state_warning_line(out, run);
    if (run->energy_unchecked)
        fprintf(out,
                "warning: thresholds.energy.max_ratio was not checked at %d candidate %s: no "
                "energy figure of both arms (trials.profile off, or no energy meter on this "
                "machine)\n",
                run->energy_unchecked, run->energy_unchecked == 1 ? "point" : "points");
}

int kt_write_text(FILE *out, const kt_output *o)
{
    kt_summary_facts f = *o->facts;
    f.color = kt_summary_want_color(out);
    kt_print_summary(out, o->run, &f);
    if (f.checks && f.checks[0])
        fprintf(out, "checks on every call: %s\n", f.checks);
    if (o->details) {
        kt_print_usage(out, o->run, o->virtual_clock);
        if (o->doc)
            kt_print_command_tasks(out, o->doc, o->dir);
    }
    if (o->doc) /* show: what fixed the limits (run prints its own) */
        kt_limits_print(out, kt_json_at_path(o->doc, "provenance.limits"));
    return 0;
}
