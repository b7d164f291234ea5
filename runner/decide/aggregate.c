/* aggregate.c - from point verdicts to one verdict per candidate (aggregate: all or
 * geomean) and one for the run. */
#include "decide/aggregate.h"

#include "decide/stats.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Geometric mean of the point speedups with an interval at the spec's confidence that
 * covers when either of two intervals around exp(mean y_i) does, because it is the wider of:
 * - the random-effects interval mean +- z sqrt(sum (se_i^2 + tau^2)) / P: each point's HL log
 *   speedup y_i with its standard error se_i (its own distribution-free interval's half-width
 *   over the normal quantile of that interval's exact coverage, so a point judged at 0.999 is
 *   not read as a 95% one), tau^2 DerSimonian and Laird's between-point variance;
 * - the t interval from the points' scatter, mean +- t_{P-1} s / sqrt(P), which needs no se_i
 *   at all (P >= 2).
 * z and t at (1 + confidence) / 2. docs/statistics.md §3 says why and what it measured. Returns
 * the number of points with a finite interval. */
static size_t geomean(kt_candidate_verdict *cv, const kt_run_result *run, size_t k, double conf)
{
    size_t n = 0;
    cv->geomean_speedup = cv->geomean_low = cv->geomean_high = NAN;
    double *y = malloc(2 * (run->n_points ? run->n_points : 1) * sizeof(*y)),
           *v = y + run->n_points;
    if (!y)
        return 0;
    for (size_t i = 0; i < run->n_points; i++) {
        const kt_candidate_result *c = &run->points[i].cands[k];
        if (!kt_point_in_geomean(&run->points[i], k))
            continue;
        double zi = kt_stats_normal_quantile(0.5 + c->shift.achieved / 2);
        double se = (log(c->ci_high) - log(c->ci_low)) / (2 * zi);
        y[n] = log(c->speedup);
        v[n++] = se * se;
    }
    double sum = 0, var = 0, scatter = 0, tau2 = kt_stats_dl_tau2(y, v, n);
    for (size_t i = 0; i < n; i++) {
        sum += y[i];
        var += v[i] + tau2;
    }
    double mean = n ? sum / (double)n : NAN;
    for (size_t i = 0; i < n; i++)
        scatter += (y[i] - mean) * (y[i] - mean);
    free(y);
    if (n == 0)
        return 0;
    double half = kt_stats_normal_quantile(0.5 + conf / 2) * sqrt(var) / (double)n;
    if (n >= 2) {
        double se_scatter = sqrt(scatter / (double)(n - 1) / (double)n);
        double t_half = kt_stats_t_quantile(0.5 + conf / 2, (double)(n - 1)) * se_scatter;
        if (t_half > half)
            half = t_half;
    }
    cv->geomean_speedup = exp(mean);
    cv->geomean_low = exp(mean - half);
    cv->geomean_high = exp(mean + half);
    return n;
}

int kt_run_aggregate(kt_run_result *run, const kt_spec *spec)
{
    free(run->cands);
    run->n_cands = spec->n_candidates;
    run->cands = calloc(run->n_cands ? run->n_cands : 1, sizeof(*run->cands));
    if (!run->cands)
        return -1;
    run->point_errors = 0;
    run->order_warnings = 0;
    run->set_warnings = 0;
    run->state_warnings = 0;
    for (size_t i = 0; i < run->n_points; i++) {
        run->point_errors += kt_point_failed(&run->points[i]);
        for (size_t k = 0; k < run->points[i].n_cands; k++) {
            run->order_warnings += run->points[i].cands[k].order_warning;
            run->set_warnings += run->points[i].cands[k].set_warning;
            run->state_warnings += run->points[i].cands[k].state_warning;
        }
    }
    run->energy_unchecked = kt_run_energy_unchecked(run, spec->max_energy_ratio);
    int any_reject = 0, any_inconclusive = 0;
    size_t finished = kt_run_finished_points(run);
    for (size_t k = 0; k < run->n_cands; k++) {
        kt_candidate_verdict *cv = &run->cands[k];
        snprintf(cv->name, sizeof(cv->name), "%s", spec->candidates[k].name);
        snprintf(cv->variant, sizeof(cv->variant), "%s", spec->candidates[k].variant->name);
        int quality_reject = 0, grouped = 0;
        for (size_t i = 0; i < run->n_points; i++) {
            const kt_candidate_result *c = &run->points[i].cands[k];
            if (kt_point_cut_short(&run->points[i]))
                continue;
            cv->keep += c->verdict == KT_VERDICT_KEEP;
            cv->reject += c->verdict == KT_VERDICT_REJECT;
            cv->inconclusive += c->verdict == KT_VERDICT_INCONCLUSIVE;
            quality_reject += kt_candidate_quality_rejected(c);
            for (int r = 0; r < c->n_reasons; r++)
                grouped += c->reason_codes[r] == KT_REASON_GROUPED;
        }
        size_t measured = geomean(cv, run, k, spec->confidence);
        int all_measured = measured == finished && finished > 0 && !grouped;
        if (spec->aggregate == KT_AGGREGATE_GEOMEAN) {
            if (quality_reject) {
                cv->verdict = KT_VERDICT_REJECT;
                snprintf(cv->reason, sizeof(cv->reason),
                         "numerics, memory or a failure rejected it at %d point%s", quality_reject,
                         quality_reject == 1 ? "" : "s");
            } else if (!all_measured) {
                /* a point without an interval could change the mean either way */
                cv->verdict = KT_VERDICT_INCONCLUSIVE;
                snprintf(cv->reason, sizeof(cv->reason),
                         "geometric mean over %zu of %zu point%s: no verdict while a point "
                         "has no finite interval or was timed with order: grouped",
                         measured, finished, finished == 1 ? "" : "s");
            } else if (cv->geomean_high < spec->min_speedup) {
                cv->verdict = KT_VERDICT_REJECT;
            } else if (cv->geomean_low > spec->min_speedup) {
                cv->verdict = KT_VERDICT_KEEP;
            } else {
                cv->verdict = KT_VERDICT_INCONCLUSIVE;
            }
            if (!cv->reason[0])
                snprintf(cv->reason, sizeof(cv->reason),
                         "geometric mean speedup %.3f [%.3f, %.3f] against %.3g over %zu point%s",
                         cv->geomean_speedup, cv->geomean_low, cv->geomean_high, spec->min_speedup,
                         finished, finished == 1 ? "" : "s");
        } else {
            cv->verdict = cv->reject         ? KT_VERDICT_REJECT
                          : cv->inconclusive ? KT_VERDICT_INCONCLUSIVE
                                             : KT_VERDICT_KEEP;
            snprintf(cv->reason, sizeof(cv->reason),
                     "%d keep, %d reject, %d inconclusive of %zu point%s (aggregate: all)",
                     cv->keep, cv->reject, cv->inconclusive, finished, finished == 1 ? "" : "s");
        }
        size_t cut = run->n_points - finished, used = strlen(cv->reason);
        if (cut)
            snprintf(cv->reason + used, sizeof(cv->reason) - used,
                     "; %zu point%s cut short by the interrupt, not counted", cut,
                     cut == 1 ? "" : "s");
        any_reject |= cv->verdict == KT_VERDICT_REJECT;
        any_inconclusive |= cv->verdict == KT_VERDICT_INCONCLUSIVE;
    }
    run->verdict = any_reject         ? KT_VERDICT_REJECT
                   : any_inconclusive ? KT_VERDICT_INCONCLUSIVE
                                      : KT_VERDICT_KEEP;
    return 0;
}
