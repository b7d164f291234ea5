/* history_html.c - 'ktrial history -o FILE': a page of one chart per point and candidate,
 * its speedup with interval across the archives in commit order, the changes marked. */
#include "report/svg.h"
#include "report/writers.h"

#include <math.h>
#include <stdlib.h>

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
        kt_html_escape(f, kt_history_str(h->runs[r].doc, "provenance.git.short_commit"));
        fputs("</text>", f);
        const kt_candidate_result *c = kt_history_find(&h->runs[r], point, cand);
        if (!c || !(c->speedup > 0) || !(c->ci_low > 0) || !isfinite(c->ci_high))
            continue;
        kt_history_change ch;
        int has = kt_history_change_at(&ch, h, r, point, cand);
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
    kt_history_series *s = kt_history_series_new(h);
    if (s) {
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
        kt_html_escape(f, kt_history_str(h->runs[r].doc, "provenance.git.commit"));
        fputs("</td><td>", f);
        kt_html_escape(f, kt_history_str(h->runs[r].doc, "provenance.git.commit_time"));
        fputs("</td><td>", f);
        kt_html_escape(f, kt_history_str(h->runs[r].doc, "provenance.run.start_utc"));
        fputs("</td><td>", f);
        kt_html_escape(f, h->runs[r].dir);
        fputs("</td></tr>\n", f);
    }
    fputs("</table></body></html>\n", f);
    return 0;
}
