/* calibrate_arm.h - what one call of an arm costs on this host, measured, for the plan.
 *
 * The roofline alone missed slow variants and every untimed step around a call (the cache
 * flush, the poison before and the scan after, the full float64 check of one call in eight,
 * prepare). On a CPU backend the first plan that needs an arm measures it on the small
 * calibration point (calibrate.h), in a child process: prepare, then best of three of the
 * call, the flush, poison and scan, and the full check. The plan scales those to each point
 * (plan.h). Cached with the op's rates, per backend, op, dtype, threads, variant and params. */
#ifndef KT_CALIBRATE_ARM_H
#define KT_CALIBRATE_ARM_H

#include "spec/plan.h"

/* Measures 'arm' of 'spec' (or reads it from the cache). Fits kt_plan_arm_costs_fn: main
 * registers it with kt_plan_use_arm_costs. Returns 0, or -1 when it could not be measured
 * (not a CPU backend, the arm failed at the calibration point): the plan then keeps its
 * roofline. */
int kt_calibration_arm(kt_arm_cost *out, const kt_spec *spec, const kt_arm *arm);

#endif
