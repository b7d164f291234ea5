/* points_check.c - result.json's points against points.jsonl's (see archive_check.h). */
#include "archive/archive_check.h"

#include <math.h>
#include <string.h>

int kt_check_same_real(double a, double b)
{
    if (isnan(a) || isnan(b))
        return isnan(a) && isnan(b);
    return a == b || fabs(a - b) <= 1e-9 * fmax(fabs(a), fabs(b));
}

static int same_pairs(const kt_candidate_result *a, const kt_candidate_result *b)
{
    if (a->n_pairs != b->n_pairs)
        return 0;
    for (size_t i = 0; i < a->n_pairs; i++) {
        const kt_pair *x = &a->pairs[i], *y = &b->pairs[i];
        if (x->rep != y->rep || x->input_set != y->input_set ||
            x->candidate_first != y->candidate_first ||
            !kt_check_same_real(x->base_ns, y->base_ns) ||
            !kt_check_same_real(x->cand_ns, y->cand_ns) ||
            !kt_check_same_real(x->base_noise, y->base_noise) ||
            !kt_check_same_real(x->cand_noise, y->cand_noise) || x->throttled != y->throttled ||
            x->placement != y->placement)
            return 0;
    }
    return 1;
}

/* What the limits read of an arm: failure, numerics, repeatability, memory, set-up. */
static int same_arm(const kt_arm_result *a, const kt_arm_result *b)
{
    if (a->failed != b->failed || a->n_sets != b->n_sets || a->repeatable != b->repeatable ||
        !kt_check_same_real(a->bytes, b->bytes) ||
        !kt_check_same_real(a->variant_bytes, b->variant_bytes) ||
        !kt_check_same_real(a->prepare_ns, b->prepare_ns))
        return 0;
    for (int s = 0; s < a->n_sets; s++) {
        const kt_numerics *x = &a->numerics[s], *y = &b->numerics[s];
        if (!kt_check_same_real(x->rel_l2, y->rel_l2) ||
            !kt_check_same_real(x->cosine, y->cosine) ||
            !kt_check_same_real(x->max_abs, y->max_abs))
            return 0;
    }
    return 1;
}

static const kt_point_result *find_point(const kt_point_result *pts, size_t n, const char *id)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(pts[i].point.id, id) == 0)
            return &pts[i];
    return NULL;
}

/* result.json's points against points.jsonl's: the same points, pairs and arms. */
void kt_points_cross_check(const kt_run_result *doc_run, const kt_point_result *pts, size_t n,
                           int failed, kt_problems *out)
{
    for (size_t i = 0; i < n; i++) {
        const kt_point_result *q = &pts[i];
        const kt_point_result *p = find_point(doc_run->points, doc_run->n_points, q->point.id);
        if (!p) {
            kt_problems_add(out, "points.jsonl holds point '%s', result.json does not",
                            q->point.id);
            continue;
        }
        if (p->n_cands != q->n_cands) {
            kt_problems_add(out, "point '%s': result.json holds %zu candidates, points.jsonl %zu",
                            p->point.id, p->n_cands, q->n_cands);
            continue;
        }
        if (!same_arm(&p->baseline, &q->baseline))
            kt_problems_add(out,
                            "point '%s': the baseline's results differ between result.json "
                            "and points.jsonl",
                            p->point.id);
        for (size_t k = 0; k < p->n_cands; k++) {
            if (!same_pairs(&p->cands[k], &q->cands[k]))
                kt_problems_add(out,
                                "point '%s', candidate '%s': result.json holds other pairs "
                                "than points.jsonl (%zu and %zu)",
                                p->point.id, q->cands[k].arm.name, p->cands[k].n_pairs,
                                q->cands[k].n_pairs);
            if (!same_arm(&p->cands[k].arm, &q->cands[k].arm))
                kt_problems_add(out,
                                "point '%s', candidate '%s': its numerics, memory or failure "
                                "differ between result.json and points.jsonl",
                                p->point.id, q->cands[k].arm.name);
        }
    }
    for (size_t i = 0; i < doc_run->n_points; i++) {
        const kt_point_result *p = &doc_run->points[i];
        /* a run that failed (the engine, not a point) stopped before archiving its last */
        if (!failed && !kt_point_cut_short(p) && !find_point(pts, n, p->point.id))
            kt_problems_add(out, "result.json holds point '%s', points.jsonl does not",
                            p->point.id);
    }
}
