/* verdict.h - the verdict of one candidate at one point: its statistics over the pairs, the
 * limits of the spec checked, and KEEP / REJECT / INCONCLUSIVE with typed reasons
 * (result/verdict.h names them). */
#ifndef KT_DECIDE_VERDICT_H
#define KT_DECIDE_VERDICT_H

#include "result/point.h"
#include "spec/spec.h"

/* Pairs a cluster (one input set and one placement, or one set) needs to enter the
 * between-cluster spread, and the level of the interval its standard error comes from (the
 * exact signed-rank interval of 3 pairs covers 75%). */
#define KT_CLUSTER_MIN_PAIRS 3
#define KT_CLUSTER_LEVEL     0.75

/* Order-effect p-values: below SUSPECT a point keeps measuring instead of stopping early;
 * below WARN (after the last look), with a shift between the orders of at least WARN_SHIFT
 * (log units: running second costs 0.5% or more), the result carries a warning. */
#define KT_ORDER_SUSPECT_P  0.05
#define KT_ORDER_WARN_P     0.01
#define KT_ORDER_WARN_SHIFT 0.01

/* A prepared state whose median time is this factor off its arm's other states' warns. */
#define KT_STATE_WARN_RATIO 1.2

/* Recomputes statistics and the verdict of candidate 'c' at 'confidence' (per look). */
void kt_candidate_evaluate(kt_candidate_result *c, const kt_arm_result *baseline,
                           const kt_spec *spec, const kt_point *point, double confidence);

/* Appends a reason (at most KT_LIMIT_REASONS; later ones are dropped). */
void kt_candidate_add_reason(kt_candidate_result *c, kt_reason_code code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* order: grouped without allow_grouped_verdicts: a speed verdict becomes INCONCLUSIVE. */
void kt_candidate_withhold_grouped(kt_candidate_result *c, const char *id);

#endif
