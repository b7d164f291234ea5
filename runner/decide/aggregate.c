/* aggregate.c - from point verdicts to one verdict per candidate (aggregate: all or
 * geomean) and one for the run. */
#include "decide/aggregate.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Geometric mean of point speedups, with a normal-approximation interval built from each
 * point's interval (half-width in log units taken as z * standard error). */
static void geomean(kt_candidate_verdict *cv, const kt_run_result *run, size_t k, double conf)
{
    double sum = 0, var = 0;
    size_t n = 0;
    double z = 1.959963984540054; /* each point's interval is ~95% after adjustment or more */
    (void)conf;
    for (size_t i = 0; i < run->n_points; i++) {
        const kt_candidate_result *c = &run->points[i].cands[k];
        if (!(c->speedup > 0) || !(c->ci_low > 0) || !isfinite(c->ci_high))
            continue;
        double se = (log(c->ci_high) - log(c->ci_low)) / (2 * z);
        sum += log(c->speedup);
        var += se * se;
        n++;
    }
    cv->geomean_speedup = cv->geomean_low = cv->geomean_high = NAN;
    if (n == 0)
        return;
    double mean = sum / (double)n, se = sqrt(var) / (double)n;
    cv->geomean_speedup = exp(mean);
    cv->geomean_low = exp(mean - z * se);
    cv->geomean_high = exp(mean + z * se);
}

/* Did this point reject the candidate for a reason other than speed? Read from the typed
 * reason codes, never from the reasons' text. */
static int rejected_for_quality(const kt_candidate_result *c)
{
    if (c->verdict != KT_VERDICT_REJECT)
        return 0;
    if (c->arm.failed)
        return 1;
    for (int i = 0; i < c->n_reasons; i++)
        if (kt_reason_is_quality(c->reason_codes[i]))
            return 1;
    return 0;
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
    for (size_t i = 0; i < run->n_points; i++) {
        run->point_errors += run->points[i].error[0] != 0;
        for (size_t k = 0; k < run->points[i].n_cands; k++)
            run->order_warnings += run->points[i].cands[k].order_warning;
    }
    int any_reject = 0, any_inconclusive = 0;
    for (size_t k = 0; k < run->n_cands; k++) {
        kt_candidate_verdict *cv = &run->cands[k];
        snprintf(cv->name, sizeof(cv->name), "%s", spec->candidates[k].name);
        snprintf(cv->variant, sizeof(cv->variant), "%s", spec->candidates[k].variant->name);
        int quality_reject = 0, measured = 0;
        for (size_t i = 0; i < run->n_points; i++) {
            const kt_candidate_result *c = &run->points[i].cands[k];
            measured += c->speedup > 0 && isfinite(c->ci_high) && c->ci_low > 0;
            cv->keep += c->verdict == KT_VERDICT_KEEP;
            cv->reject += c->verdict == KT_VERDICT_REJECT;
            cv->inconclusive += c->verdict == KT_VERDICT_INCONCLUSIVE;
            quality_reject += rejected_for_quality(c);
        }
        geomean(cv, run, k, spec->confidence);
        if (spec->aggregate == KT_AGGREGATE_GEOMEAN) {
            if (quality_reject) {
                cv->verdict = KT_VERDICT_REJECT;
                snprintf(cv->reason, sizeof(cv->reason),
                         "numerics, memory or a failure rejected it at %d point(s)",
                         quality_reject);
            } else if (cv->geomean_high < spec->min_speedup) {
                cv->verdict = KT_VERDICT_REJECT;
            } else if (cv->geomean_low >= spec->min_speedup && measured == (int)run->n_points) {
                cv->verdict = KT_VERDICT_KEEP;
            } else {
                cv->verdict = KT_VERDICT_INCONCLUSIVE;
            }
            if (!cv->reason[0])
                snprintf(cv->reason, sizeof(cv->reason),
                         "geometric mean speedup %.3f [%.3f, %.3f] against %.3g over %zu points",
                         cv->geomean_speedup, cv->geomean_low, cv->geomean_high, spec->min_speedup,
                         run->n_points);
        } else {
            cv->verdict = cv->reject         ? KT_VERDICT_REJECT
                          : cv->inconclusive ? KT_VERDICT_INCONCLUSIVE
                                             : KT_VERDICT_KEEP;
            snprintf(cv->reason, sizeof(cv->reason),
                     "%d keep, %d reject, %d inconclusive of %zu points (aggregate: all)", cv->keep,
                     cv->reject, cv->inconclusive, run->n_points);
        }
        any_reject |= cv->verdict == KT_VERDICT_REJECT;
        any_inconclusive |= cv->verdict == KT_VERDICT_INCONCLUSIVE;
    }
    run->verdict = any_reject         ? KT_VERDICT_REJECT
                   : any_inconclusive ? KT_VERDICT_INCONCLUSIVE
                                      : KT_VERDICT_KEEP;
    return 0;
}

void kt_run_result_free(kt_run_result *run)
{
    for (size_t i = 0; i < run->n_points; i++)
        kt_point_result_free(&run->points[i]);
    free(run->points);
    free(run->cands);
    memset(run, 0, sizeof(*run));
}
