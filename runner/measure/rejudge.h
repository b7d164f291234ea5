/* rejudge.h - an archived point decided again: every candidate's statistics and verdict
 * recomputed from its stored pairs, arms and numerics under a spec, by the code its trial used
 * (kt_candidate_judge with the same sequential design), so that a reader never has to trust a
 * verdict written in a file. What the stored point said is left to the caller to compare. */
#ifndef KT_MEASURE_REJUDGE_H
#define KT_MEASURE_REJUDGE_H

#include "measure/trial.h"

typedef struct kt_rejudge {
    const kt_spec *spec;
    kt_design design;
    double alpha;
    int grouped;   /* order: grouped on a kind that honours it: one look at the end */
    int design_ok; /* 0: no look of the spec can decide; its points were all failures */
} kt_rejudge;

/* The design the points of 'spec' were judged with ('quick': the run's --quick cap). */
void kt_rejudge_init(kt_rejudge *r, const kt_spec *spec, int quick);

/* Decides 'p' again under r->spec: its matrix point found by id, each candidate judged from
 * its pairs (a point whose set-up failed marked unmeasured, as its trial did). Returns 0, or
 * KT_EINVAL with the message set when 'p' is not a point of the spec as written (an id not in
 * its matrix, other candidates, a design that cannot decide): then 'p' is left as it was. */
int kt_rejudge_point(const kt_rejudge *r, kt_point_result *p);

#endif
