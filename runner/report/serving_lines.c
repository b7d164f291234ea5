/* serving_lines.c - the summary's lines for arms that served requests (result/serving.h): per
 * point and arm, startup, the cold first request, p50/p90/p99 of the metric with their 95%
 * intervals, throughput, errors, peak RSS and CPU of the server's process tree; a candidate's
 * p99 and throughput ratios; and the tasks whose answers changed, by name. */
#include "report/summary.h"
#include "report/cells.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static const char *ms(char *buf, size_t len, double v)
{
    if (!isfinite(v))
        snprintf(buf, len, "%s", kt_cell_none);
    else
        snprintf(buf, len, v >= 100 ? "%.0f" : v >= 10 ? "%.1f" : "%.2f", v);
    return buf;
}

static const char *q_cell(char *buf, size_t len, const kt_serving_q *q)
{
    char v[16], lo[16], hi[16];
    if (!isfinite(q->value))
        snprintf(buf, len, "%s", kt_cell_none);
    else
        snprintf(buf, len, "%s [%s, %s]", ms(v, sizeof(v), q->value), ms(lo, sizeof(lo), q->low),
                 ms(hi, sizeof(hi), q->high));
    return buf;
}

static void arm_line(FILE *out, const kt_arm_result *a, int w)
{
    const kt_serving *s = &a->serving;
    char st[24], cold[16], q[3][48], rss[24], cpu[24], rate[24], tok[24];
    if (isfinite(s->startup_s))
        snprintf(st, sizeof(st), "%.2f s", s->startup_s);
    else
        snprintf(st, sizeof(st), "%s", kt_cell_none);
    snprintf(rate, sizeof(rate), "%.3g", s->requests_per_s);
    snprintf(tok, sizeof(tok), "%.3g", s->tokens_per_s);
    snprintf(rss, sizeof(rss), "%.1f MiB", s->peak_rss_mib);
    snprintf(cpu, sizeof(cpu), "%.2f s", s->cpu_s);
    fprintf(out, "  %-*s  %-8s %8s  %-22s %-22s %-22s %8s %8s  %lld/%lld%s%s%s  %s  %s\n", w,
            a->name, st, ms(cold, sizeof(cold), s->cold_ms), q_cell(q[0], sizeof(q[0]), &s->p50),
            q_cell(q[1], sizeof(q[1]), &s->p90), q_cell(q[2], sizeof(q[2]), &s->p99),
            isfinite(s->requests_per_s) ? rate : kt_cell_none,
            isfinite(s->tokens_per_s) ? tok : kt_cell_none, s->errors, s->requests,
            s->error_kinds[0] ? " (" : "", s->error_kinds, s->error_kinds[0] ? ")" : "",
            isfinite(s->peak_rss_mib) ? rss : kt_cell_none,
            isfinite(s->cpu_s) ? cpu : kt_cell_none);
}

const char *kt_serving_text(char *buf, size_t len, const kt_arm_result *a)
{
    const kt_serving *s = &a->serving;
    char cold[16], q[3][48], st[24];
    if (isfinite(s->startup_s))
        snprintf(st, sizeof(st), "%.2f s", s->startup_s);
    else
        snprintf(st, sizeof(st), "%s", kt_cell_none);
    int n = snprintf(buf, len,
                     "%s: startup %s, cold %s ms, p50 %s ms, p90 %s ms, p99 %s ms, %.3g req/s, "
                     "%.3g tok/s, errors %lld/%lld%s%s%s, peak RSS %.1f MiB, CPU %.2f s",
                     a->name, st, ms(cold, sizeof(cold), s->cold_ms),
                     q_cell(q[0], sizeof(q[0]), &s->p50), q_cell(q[1], sizeof(q[1]), &s->p90),
                     q_cell(q[2], sizeof(q[2]), &s->p99), s->requests_per_s, s->tokens_per_s,
                     s->errors, s->requests, s->error_kinds[0] ? " (" : "", s->error_kinds,
                     s->error_kinds[0] ? ")" : "", s->peak_rss_mib, s->cpu_s);
    if (n >= 0 && (size_t)n < len && isfinite(s->p99_ratio.value))
        n += snprintf(buf + n, len - (size_t)n, "; p99 ratio %.3g [%.3g, %.3g]", s->p99_ratio.value,
                      s->p99_ratio.low, s->p99_ratio.high);
    if (n >= 0 && (size_t)n < len && s->n_changed)
        snprintf(buf + n, len - (size_t)n, "; changed answers: %s", s->changed);
    return buf;
}

void kt_print_serving(FILE *out, const kt_run_result *run)
{
    for (size_t i = 0; i < run->n_points; i++) {
        const kt_point_result *p = &run->points[i];
        if (!p->baseline.serving.present)
            continue;
        int w = (int)strlen(p->baseline.name);
        for (size_t k = 0; k < p->n_cands; k++)
            if ((int)strlen(p->cands[k].arm.name) > w)
                w = (int)strlen(p->cands[k].arm.name);
        fprintf(out,
                "\nserving at %s (ms of the metric over %d round%s; 95%% intervals from a "
                "bootstrap over rounds, or over paired requests below 5 rounds):\n",
                p->point.id, p->baseline.serving.rounds,
                p->baseline.serving.rounds == 1 ? "" : "s");
        fprintf(out, "  %-*s  %-8s %8s  %-22s %-22s %-22s %8s %8s  %s  %s  %s\n", w, "arm",
                "startup", "cold ms", "p50", "p90", "p99", "req/s", "tok/s", "errors", "peak RSS",
                "CPU");
        arm_line(out, &p->baseline, w);
        for (size_t k = 0; k < p->n_cands; k++)
            if (p->cands[k].arm.serving.present)
                arm_line(out, &p->cands[k].arm, w);
        for (size_t k = 0; k < p->n_cands; k++) {
            const kt_serving *s = &p->cands[k].arm.serving;
            char r[48], t[48];
            if (!s->present || !isfinite(s->p99_ratio.value))
                continue;
            snprintf(t, sizeof(t), "%.3g [%.3g, %.3g]", s->throughput_ratio.value,
                     s->throughput_ratio.low, s->throughput_ratio.high);
            snprintf(r, sizeof(r), "%.3g [%.3g, %.3g]", s->p99_ratio.value, s->p99_ratio.low,
                     s->p99_ratio.high);
            fprintf(out, "  %s vs %s: p99 ratio %s, throughput ratio %s\n", p->cands[k].arm.name,
                    p->baseline.name, r, t);
        }
        const kt_arm_result *arms[1 + 64];
        size_t n = 0;
        arms[n++] = &p->baseline;
        for (size_t k = 0; k < p->n_cands && n < 65; k++)
            arms[n++] = &p->cands[k].arm;
        for (size_t j = 0; j < n; j++)
            if (arms[j]->serving.n_changed)
                fprintf(out,
                        "  changed answers: %s answered task%s %s differently from %s (review "
                        "regressions before expanding the test)\n",
                        arms[j]->name, arms[j]->serving.n_changed == 1 ? "" : "s",
                        arms[j]->serving.changed,
                        j == 0 ? "the tasks' expect files" : "the baseline or the expect files");
    }
}
