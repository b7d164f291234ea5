/* rejudge.c - an archived point decided again from its pairs (see rejudge.h). */
#include "measure/rejudge.h"

#include "spec/matrix.h"

#include <string.h>

void kt_rejudge_init(kt_rejudge *r, const kt_spec *spec, int quick)
{
    memset(r, 0, sizeof(*r));
    r->spec = spec;
    int max_reps = spec->max_repetitions;
    if (quick && max_reps > KT_QUICK_MAX_REPETITIONS)
        max_reps = KT_QUICK_MAX_REPETITIONS;
    int min_reps = spec->min_repetitions < max_reps ? spec->min_repetitions : max_reps;
    r->alpha = kt_design_point_alpha(spec);
    r->grouped = kt_arm_kind_of(spec)->grouped && spec->order == KT_ORDER_GROUPED;
    r->design_ok = kt_design_plan(&r->design, min_reps, max_reps, r->alpha, KT_SPEND_DEFAULT) == 0;
    if (!r->design_ok)
        kt_error_clear();
    if (r->grouped) { /* as kt_trial_run_point_keeping: one look, at the end */
        r->design.n_looks = 1;
        r->design.looks[0] = max_reps;
        r->design.decisive[0] = 1;
        r->design.confidence[0] = 1.0 - r->alpha;
        r->design_ok = 1;
    }
}

int kt_rejudge_point(const kt_rejudge *r, kt_point_result *p)
{
    const kt_spec *spec = r->spec;
    const kt_point *point = NULL;
    for (size_t i = 0; spec->matrix && i < spec->matrix->n && !point; i++)
        if (strcmp(spec->matrix->points[i].id, p->point.id) == 0)
            point = &spec->matrix->points[i];
    if (!point)
        return kt_error_code(KT_EINVAL, "point '%s' is not in the spec's matrix", p->point.id);
    if (p->n_cands != spec->n_candidates)
        return kt_error_code(KT_EINVAL, "point '%s' holds %zu candidates, the spec names %zu",
                             p->point.id, p->n_cands, spec->n_candidates);
    for (size_t k = 0; k < p->n_cands; k++)
        if (strcmp(p->cands[k].arm.name, spec->candidates[k].name) != 0)
            return kt_error_code(KT_EINVAL,
                                 "point '%s' holds candidate '%s' where the spec names '%s'",
                                 p->point.id, p->cands[k].arm.name, spec->candidates[k].name);
    if (p->error[0]) {
        kt_point_result_mark_unmeasured(p, spec, point);
        return 0;
    }
    if (!r->design_ok)
        return kt_error_code(KT_EINVAL,
                             "point '%s' holds verdicts, but no look of the spec's "
                             "design can decide",
                             p->point.id);
    for (size_t k = 0; k < p->n_cands; k++) {
        kt_candidate_result *c = &p->cands[k];
        c->decided_at = -1; /* not archived: the last look the pairs reached */
        kt_candidate_judge(c, &p->baseline, spec, point, &r->design, r->alpha, r->grouped);
    }
    return 0;
}
