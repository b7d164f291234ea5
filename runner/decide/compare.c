/* compare.c - the change of a candidate's within-run speedup between two runs. */
#include "decide/compare.h"
#include "decide/stats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

const char *kt_change_name(kt_change c)
{
    static const char *const names[] = {"same", "better", "worse", "unclear"};
    return names[c];
}

/* The log ratios of a candidate's pairs. */
static double *log_ratios(const kt_candidate_result *c)
{
    double *d = malloc((c->n_pairs ? c->n_pairs : 1) * sizeof(double));
    for (size_t i = 0; d && i < c->n_pairs; i++)
        d[i] = log(c->pairs[i].base_ns) - log(c->pairs[i].cand_ns);
    return d;
}

static double ratio_or_nan(double a, double b)
{
    return a > 0 && b > 0 ? a / b : NAN;
}

/* The variance a run's speedup carries from where its prepared states lay: tau^2 / C over its
 * C clusters (the spread its own interval counts, verdict.c's placement_spread); 0 where the
 * run saw none or recorded none. */
static double placement_variance(const kt_candidate_result *c)
{
    return c->placement_clusters >= 2 && c->placement_tau2 > 0
               ? c->placement_tau2 / c->placement_clusters
               : 0;
}

int kt_compare_shift(kt_shift *s, double *placement_var, const kt_candidate_result *old_c,
                     const kt_candidate_result *new_c, double confidence)
{
    *placement_var = 0;
    if (old_c->n_pairs < 2 || new_c->n_pairs < 2)
        return 1;
    double *a = log_ratios(old_c), *b = log_ratios(new_c);
    int rc;
    if (!a || !b) {
        rc = kt_error_code(KT_ENOMEM, "out of memory");
    } else {
        rc = kt_stats_two_sample(s, b, new_c->n_pairs, a, old_c->n_pairs, confidence) == 0 ? 0 : 1;
        if (rc == 0) {
            *placement_var = placement_variance(old_c) + placement_variance(new_c);
            kt_stats_widen(s, *placement_var, confidence);
        }
    }
    free(a);
    free(b);
    return rc;
}

int kt_compare_candidate(kt_speed_change *out, const kt_candidate_result *old_c,
                         const kt_candidate_result *new_c, double confidence, double threshold)
{
    memset(out, 0, sizeof(*out));
    out->n_old = old_c->n_pairs;
    out->n_new = new_c->n_pairs;
    out->ratio = out->low = out->high = out->p = NAN;
    out->change = KT_CHANGE_UNCLEAR;
    out->base_drift = ratio_or_nan(new_c->base_time.median, old_c->base_time.median);
    out->cand_drift = ratio_or_nan(new_c->cand_time.median, old_c->cand_time.median);
    kt_shift s;
    int rc = kt_compare_shift(&s, &out->placement_var, old_c, new_c, confidence);
    if (rc == 0) {
        out->ratio = exp(s.estimate);
        out->low = exp(s.ci_low);
        out->high = exp(s.ci_high);
        out->p = s.p_value;
    }
    if (isfinite(out->ratio)) {
        if (out->high < 1 - threshold)
            out->change = KT_CHANGE_WORSE;
        else if (out->low > 1 + threshold)
            out->change = KT_CHANGE_BETTER;
        else if (out->low >= 1 - threshold && out->high <= 1 + threshold)
            out->change = KT_CHANGE_SAME;
    }
    out->quality_regression =
        kt_candidate_quality_rejected(new_c) && !kt_candidate_quality_rejected(old_c);
    out->regression = out->change == KT_CHANGE_WORSE || out->quality_regression;
    return rc < 0 ? rc : 0;
}
