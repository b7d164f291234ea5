/* compare.c - the change of a candidate's within-run speedup between two runs. */
#include "decide/compare.h"

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
    double *a = log_ratios(old_c), *b = log_ratios(new_c);
    int err = 0;
    if (!a || !b) {
        err = kt_error_code(KT_ENOMEM, "out of memory");
    } else if (out->n_old >= 2 && out->n_new >= 2) {
        kt_shift s;
        if (kt_stats_two_sample(&s, b, out->n_new, a, out->n_old, confidence) == 0) {
            out->ratio = exp(s.estimate);
            out->low = exp(s.ci_low);
            out->high = exp(s.ci_high);
            out->p = s.p_value;
        }
    }
    free(a);
    free(b);
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
    return err;
}
