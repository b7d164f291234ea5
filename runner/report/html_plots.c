/* html_plots.c - the SVG figures of the HTML report (html_report.c): the forest plot of every
 * speedup with its interval, and per point the distribution of each arm's times and the paired
 * log ratios in run order with the looks marked. */
#include "decide/sequential.h"
#include "decide/stats.h"
#include "report/html_plots.h"
#include "report/svg.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- forest plot -------------------------------------------------------------------------- */

void kt_html_forest_plot(FILE *f, const kt_report_input *in, size_t n)
{
    double lo = in[0].min_speedup, hi = in[0].min_speedup;
    size_t rows = 0;
    for (size_t a = 0; a < n; a++)
        for (size_t i = 0; i < in[a].run.n_points; i++)
            for (size_t k = 0; k < in[a].run.points[i].n_cands; k++) {
                const kt_candidate_result *c = &in[a].run.points[i].cands[k];
                rows++;
                if (c->ci_low > 0 && isfinite(c->ci_low))
                    lo = fmin(lo, c->ci_low);
                if (c->ci_high > 0 && isfinite(c->ci_high))
                    hi = fmax(hi, c->ci_high);
            }
    lo = fmin(lo, 1.0) / 1.05;
    hi = fmax(hi, 1.0) * 1.05;
    double row_h = 18, h = 50 + 10 + row_h * (double)(rows ? rows : 1);
    kt_plot p;
    kt_plot_open(&p, f, "forest", 900, h, 300);
    p.x0 = lo;
    p.x1 = hi;
    p.log_x = 1;
    p.y0 = 0;
    p.y1 = (double)rows;
    kt_plot_axes(&p, 8, 0, "speedup (baseline time / candidate time), log scale", NULL);
    kt_plot_vline(&p, 1.0, "ref-one", in[0].min_speedup != 1.0 ? "1" : NULL);
    char label[64];
    snprintf(label, sizeof(label), "min_speedup %.3g", in[0].min_speedup);
    kt_plot_vline(&p, in[0].min_speedup, "ref", label);
    size_t row = 0;
    for (size_t a = 0; a < n; a++) {
        char arch[128];
        kt_report_label(arch, sizeof(arch), &in[a]);
        for (size_t i = 0; i < in[a].run.n_points; i++)
            for (size_t k = 0; k < in[a].run.points[i].n_cands; k++, row++) {
                const kt_point_result *pt = &in[a].run.points[i];
                const kt_candidate_result *c = &pt->cands[k];
                double y = p.top + row_h * ((double)row + 0.5);
                const char *v = kt_verdict_name(c->verdict);
                fprintf(f, "<g class='forest-mark m-%s'><text x='6' y='%.1f'>", v, y + 4);
                if (n > 1) {
                    kt_html_escape(f, arch);
                    fputs(" · ", f);
                }
                kt_html_escape(f, pt->point.id);
                fputs(" · ", f);
                kt_html_escape(f, c->arm.name);
                fputs("</text>", f);
                if (isfinite(c->speedup) && c->speedup > 0 && c->ci_low > 0 &&
                    isfinite(c->ci_high)) {
                    fprintf(f,
                            "<line class='ci' x1='%.1f' y1='%.1f' x2='%.1f' y2='%.1f'/>"
                            "<circle cx='%.1f' cy='%.1f' r='4'><title>%.3f [%.3f, %.3f] %s"
                            "</title></circle>",
                            kt_plot_x(&p, c->ci_low), y, kt_plot_x(&p, c->ci_high), y,
                            kt_plot_x(&p, c->speedup), y, c->speedup, c->ci_low, c->ci_high, v);
                } else {
                    fprintf(f, "<text class='muted' x='%.1f' y='%.1f'>not measured</text>",
                            p.left + 6, y + 4);
                }
                fputs("</g>\n", f);
            }
    }
    kt_plot_close(&p);
}

/* ---- per point: distributions and paired series -------------------------------------------- */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* A box (quartiles), whiskers (min..max), the median, and every sample as a dot jittered
 * deterministically within its row. */
static void box_row(kt_plot *p, double *x, size_t n, double y, double half)
{
    if (n == 0)
        return;
    qsort(x, n, sizeof(*x), cmp_double);
    double q1 = kt_stats_quantile(x, n, 0.25), q2 = kt_stats_quantile(x, n, 0.5);
    double q3 = kt_stats_quantile(x, n, 0.75);
    fprintf(p->f,
            "<line class='tick' x1='%.1f' y1='%.1f' x2='%.1f' y2='%.1f'/>"
            "<rect class='box' x='%.1f' y='%.1f' width='%.1f' height='%.1f'/>"
            "<line class='median' x1='%.1f' y1='%.1f' x2='%.1f' y2='%.1f'/>\n",
            kt_plot_x(p, x[0]), y, kt_plot_x(p, x[n - 1]), y, kt_plot_x(p, q1), y - half,
            fmax(kt_plot_x(p, q3) - kt_plot_x(p, q1), 1), 2 * half, kt_plot_x(p, q2), y - half,
            kt_plot_x(p, q2), y + half);
    for (size_t i = 0; i < n; i++) {
        double jitter = ((double)((i * 2654435761u) % 1000) / 1000.0 - 0.5) * 1.6 * half;
        fprintf(p->f, "<circle class='dot' cx='%.1f' cy='%.1f' r='2'/>", kt_plot_x(p, x[i]),
                y + jitter);
    }
    fputc('\n', p->f);
}

void kt_html_distribution_plot(FILE *f, const kt_point_result *pt)
{
    size_t total = 0;
    for (size_t k = 0; k < pt->n_cands; k++)
        total += pt->cands[k].n_pairs;
    double *base = malloc((total ? total : 1) * sizeof(double));
    double *cand = malloc((total ? total : 1) * sizeof(double));
    if (!base || !cand) {
        free(base);
        free(cand);
        return;
    }
    double lo = INFINITY, hi = 0;
    for (size_t k = 0; k < pt->n_cands; k++)
        for (size_t i = 0; i < pt->cands[k].n_pairs; i++) {
            const kt_pair *q = &pt->cands[k].pairs[i];
            lo = fmin(lo, fmin(q->base_ns, q->cand_ns));
            hi = fmax(hi, fmax(q->base_ns, q->cand_ns));
        }
    /* the axis in the unit that fits its largest time: "1.5 s", never "1.5e+09" ns */
    double scale;
    const char *unit = kt_time_unit(hi, &scale);
    lo /= scale, hi /= scale;
    size_t nb = 0;
    for (size_t k = 0; k < pt->n_cands; k++)
        for (size_t i = 0; i < pt->cands[k].n_pairs; i++)
            base[nb++] = pt->cands[k].pairs[i].base_ns / scale;
    if (!(lo > 0) || !(hi > lo))
        hi = lo > 0 ? lo * 1.1 : 1, lo = lo > 0 ? lo * 0.9 : 0.5;
    double row_h = 34, h = 50 + 10 + row_h * (double)(pt->n_cands + 1);
    kt_plot p;
    kt_plot_open(&p, f, "dist-plot", 900, h, 180);
    p.x0 = lo / 1.02;
    p.x1 = hi * 1.02;
    p.log_x = hi / lo > 20;
    p.y0 = 0;
    p.y1 = 1;
    char title[64];
    snprintf(title, sizeof(title), "time per call, %s (every timed call)", unit);
    kt_plot_axes(&p, 8, 0, title, NULL);
    double y = p.top + row_h / 2;
    fprintf(f, "<text x='6' y='%.1f'>", y + 4);
    kt_html_escape(f, pt->baseline.name);
    fputs(" (baseline)</text>", f);
    box_row(&p, base, nb, y, 9);
    for (size_t k = 0; k < pt->n_cands; k++) {
        const kt_candidate_result *c = &pt->cands[k];
        for (size_t i = 0; i < c->n_pairs; i++)
            cand[i] = c->pairs[i].cand_ns / scale;
        y += row_h;
        fprintf(f, "<text x='6' y='%.1f'>", y + 4);
        kt_html_escape(f, c->arm.name);
        fputs("</text>", f);
        box_row(&p, cand, c->n_pairs, y, 9);
    }
    kt_plot_close(&p);
    free(base);
    free(cand);
}

/* ln(baseline / candidate) of each pair in the order the pairs ran, the HL estimate, the
 * min_speedup line, and a vertical line at every planned look the point reached. */
void kt_html_series_plot(FILE *f, const kt_report_input *in, const kt_candidate_result *c)
{
    if (c->n_pairs == 0)
        return;
    double lo = log(in->min_speedup), hi = lo;
    for (size_t i = 0; i < c->n_pairs; i++) {
        double d = log(c->pairs[i].base_ns / c->pairs[i].cand_ns);
        if (isfinite(d))
            lo = fmin(lo, d), hi = fmax(hi, d);
    }
    double pad = fmax((hi - lo) * 0.08, 0.005);
    kt_plot p;
    kt_plot_open(&p, f, "series-plot", 900, 230, 70);
    p.x0 = 0;
    p.x1 = (double)c->n_pairs + 1;
    p.y0 = lo - pad;
    p.y1 = hi + pad;
    kt_plot_axes(&p, 10, 5, "pair, in run order", "ln(base / cand)");
    int looks[KT_MAX_LOOKS];
    int nl = kt_trial_looks(looks, KT_MAX_LOOKS, in->min_reps, in->max_reps);
    for (int l = 0; l < nl; l++)
        if (looks[l] <= (int)c->n_pairs) {
            fprintf(f, "<g class='look-mark'>");
            char label[32];
            snprintf(label, sizeof(label), "look %d", l + 1);
            kt_plot_vline(&p, looks[l] + 0.5, "look", label);
            fprintf(f, "</g>");
        }
    kt_plot_hline(&p, log(in->min_speedup), "ref", "min_speedup");
    if (isfinite(c->shift.estimate))
        kt_plot_hline(&p, c->shift.estimate, "hl", "HL estimate");
    for (size_t i = 0; i < c->n_pairs; i++) {
        double d = log(c->pairs[i].base_ns / c->pairs[i].cand_ns);
        if (isfinite(d))
            fprintf(f, "<circle class='ratio' cx='%.1f' cy='%.1f' r='2.5'/>",
                    kt_plot_x(&p, (double)i + 1), kt_plot_y(&p, d));
    }
    fputc('\n', f);
    kt_plot_close(&p);
}
