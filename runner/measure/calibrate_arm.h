/* calibrate_arm.h - what one call of an arm costs on this host, measured, for the plan.
 *
 * The roofline alone missed slow variants and every untimed step around a call (the cache
 * flush, the poison before and the scan after, the full float64 check of one call in eight,
 * prepare). On the cpu and sim backends the first plan that needs an arm measures it on the
 * small calibration point (calibrate.h), in a child process: prepare, then best of three of
 * the call, the flush, poison and scan, and the full check. The plan scales those to each
 * point (plan.h); on the sim it keeps the call at the arm's virtual time, and the steps around
 * it (prepare, checks, copies) are real host work, measured like a cpu arm's. Cached with the
 * op's rates, per backend, op, dtype, threads, variant and params. */
#ifndef KT_CALIBRATE_ARM_H
#define KT_CALIBRATE_ARM_H

#include "spec/plan.h"

/* The calibration child gets this long for every arm together; past it, it is killed and
 * the arms not yet measured keep the roofline. */
#define KT_CALIBRATION_LIMIT_S 120.0

/* The costs of every arm of 'spec' (out[0] the baseline, out[k] candidate k), from the cache
 * or measured, all missing arms in one child process on one instance. have[k] says which were
 * found: not on the cuda backend, not an arm that failed or crashed on the calibration
 * problem (the plan then keeps its roofline for it). Fits kt_plan_arm_costs_fn: main
 * registers it with kt_plan_use_arm_costs. Returns 0, or -1 when no child could be forked. */
int kt_calibration_arms(kt_arm_cost *out, int *have, const kt_spec *spec, kt_phase phase);

#endif
