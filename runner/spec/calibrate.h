/* calibrate.h - how fast this machine builds a point's inputs and float64 reference.
 *
 * A point's start-up (input generation and the float64 reference, per input set) can take
 * minutes on a large problem and dwarfs its timed pairs; no fixed rate predicts it across
 * machines. The first plan on a host measures both rates for the op on a small problem
 * (measure/calibrate_rates.h, registered with the plan at start-up); this header holds what
 * the plan computes with them: the rates, the calibration point, the reference's work and
 * how busy the host is. */
#ifndef KT_CALIBRATE_H
#define KT_CALIBRATE_H

#include "kernel.h"

typedef struct kt_calibration {
    double gen_s_per_elem; /* input generation, seconds per input element */
    double ref_s_per_flop; /* float64 reference, seconds per unit of kt_calibration_work */
    double busy;           /* kt_calibration_busy() while they were measured */
} kt_calibration;

/* How oversubscribed the host is: the 1-minute load average per online core, at least 1.
 * A CPU-bound step takes about this many times longer than on an idle host, so cached
 * rates are scaled by busy-now / busy-then. */
double kt_calibration_busy(void);

/* The reference's work for 'p': its flops, or its output elements when larger (an op
 * that copies, like the synthetic one, has no flops). */
double kt_calibration_work(const kt_problem *p);

/* The small point every op's calibration shapes: decode-sized gemm/swiglu rows (hidden
 * 1024, intermediate 2048, batch 8), attention over 1024 tokens with 8 heads and 2 KV heads. */
kt_point kt_calibration_point(void);
/* The calibration point in 'phase': decode is kt_calibration_point(); prefill is the same
 * model with one sequence of 16 tokens (a GEMM of 16 rows; a decoder layer's chunk after 16
 * cached tokens), small enough to measure in a second and compute-bound like a real prefill
 * point, so an arm's measured cost scales to prefill points by the compute roofline. */
kt_point kt_calibration_point_in(kt_phase phase);

#endif
