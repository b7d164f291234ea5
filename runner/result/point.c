/* point.c - the read-only questions on a point's results, and freeing them. */
#include "result/point.h"

#include <math.h>
#include <stdlib.h>

void kt_point_result_free(kt_point_result *r)
{
    if (!r)
        return;
    for (size_t k = 0; k < r->n_cands; k++)
        free(r->cands[k].pairs);
    free(r->cands);
    r->cands = NULL;
    r->n_cands = 0;
}

double kt_arm_worst_rel_l2(const kt_arm_result *a)
{
    double worst = NAN;
    for (int s = 0; s < a->n_sets; s++)
        if (!isnan(a->numerics[s].rel_l2))
            worst = isnan(worst) ? a->numerics[s].rel_l2 : fmax(worst, a->numerics[s].rel_l2);
    return worst;
}

int kt_candidate_priced(const kt_candidate_result *c)
{
    /* a candidate never evaluated (its point stopped before the candidates, at a failed
     * baseline or an interrupt) is all zeros, not NaN: 0 tokens is no price either */
    return c->tokens_per_call > 0 && isfinite(c->usd_per_mtok_base) &&
           isfinite(c->usd_per_mtok_cand);
}

int kt_candidate_quality_rejected(const kt_candidate_result *c)
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
