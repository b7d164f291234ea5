/* plan.h - what an experiment will cost before it runs: calls and seconds per matrix point.
 *
 * An estimate, not a bound. Per point: one worker's start-up (input generation and the
 * float64 reference for every input set, at rates measured on this host: calibrate.h), the
 * correctness calls and warmup of every arm, then max_repetitions pairs per candidate capped
 * at max_seconds_per_point plus one pair (the trial loop stops there). The adaptive stop can
 * end a point sooner; call times on CPU come from a roofline and can be off for slow
 * variants. */
#ifndef KT_PLAN_H
#define KT_PLAN_H

#include "spec/calibrate.h"
#include "spec/matrix.h"
#include "spec/spec.h"

typedef struct kt_plan {
    double *point_seconds; /* per matrix point, in matrix order */
    size_t n;
    double calls_per_point; /* every arm together, uncapped upper bound */
    double startup_seconds; /* inputs and float64 references, every point together */
    double total_seconds;   /* on this host, as busy as it is now */
    double idle_seconds;    /* on this host idle: what budget.max_minutes is checked against,
                             * so that a spec's validity does not depend on the load */
    double *point_bytes;    /* per matrix point: its worker's memory, at least (see
                             * kt_plan_point_bytes); 0 for a command spec */
} kt_plan;

/* What one arm costs on this host, measured on the calibration point (calibrate.h) and
 * scaled by the plan to each point: the call by the roofline (on the sim: the call model of
 * kt_plan_call_seconds, its virtual time), prepare by the input bytes, the scan by the output
 * bytes, the full check by both. */
typedef struct kt_arm_cost {
    double call_s;    /* one call */
    double roof_s;    /* kt_plan_roofline_seconds of the calibration problem */
    double prepare_s; /* prepare, one input set */
    double scan_s;    /* poison before a call, download and scan after it */
    double full_s;    /* the full float64 comparison and the inputs' re-hash */
    double flush_s;   /* one cache flush */
    double touch_s;   /* the first full check of an input set over the later ones: its copy of
                       * the inputs faulted in (once per set, not per arm) */
    double in_bytes, out_bytes; /* of the calibration problem */
    double busy;                /* kt_calibration_busy() while measured */
} kt_arm_cost;

/* Measures (or reads from the cache) the costs of every arm of 'spec', baseline first, at the
 * calibration point in 'phase' (kt_calibration_point_in): have[k] is 1 where out[k] holds
 * them. Returns 0, or a negative code. */
typedef int (*kt_plan_arm_costs_fn)(kt_arm_cost *out, int *have, const kt_spec *spec,
                                    kt_phase phase);
/* Lets the plan measure arms: the measurement runs kernels (runner/measure), which this layer
 * must not call, so the command line registers it at start-up. Without it (unit tests) CPU
 * calls keep the roofline model. */
void kt_plan_use_arm_costs(kt_plan_arm_costs_fn fn);

/* Fills 'out' with the host's input and reference rates for 'op' in 'dtype' and law 'dist'
 * ('origin': the sha256 of the plugin the op comes from, NULL for a built-in). Returns 0, or a
 * negative code when they could not be measured. */
typedef int (*kt_plan_rates_fn)(kt_calibration *out, const kt_op *op, kt_dtype dtype,
                                kt_distribution dist, const char *origin);
/* Lets the plan measure the start-up rates (measure/calibrate_rates.c's kt_calibration_get: it
 * runs the op's generator and reference), registered at start-up by the command line. Without it
 * (unit tests) the plan uses fixed rates. */
void kt_plan_use_rates(kt_plan_rates_fn fn);

/* The bytes of 'p''s inputs and of its outputs. */
void kt_plan_io_bytes(const kt_problem *p, double *in, double *out);

/* The CPU roofline of 'p' on an idle host: max(flops / (8e9 * threads), bytes / 8e9) + 20 us. */
double kt_plan_roofline_seconds(const kt_spec *spec, const kt_problem *p);

/* The memory one point's worker holds, at least: for every input set, the inputs three times
 * (the host copy, the backend's, and the copy the full checks compare against), the outputs
 * three times (host, and the two backend buffers timed calls alternate between) and their
 * float64 reference. The arms' own buffers (prepared states, packed weights) come on top. On
 * cuda the backend's copies are device memory, which this does not count. 0 for a command spec
 * (its programs' memory is their own). */
double kt_plan_point_bytes(const kt_spec *spec, const kt_problem *p);

/* One worker per point: a fork, a backend opened, buffers allocated and freed. */
#define KT_PLAN_WORKER_SECONDS 0.05

/* Estimated seconds of one call of 'arm' for 'problem' on the spec's backend:
 * sim: the arm's median_us param (100 us when it has none) plus its sleep_us; cpu: the roofline
 * max(flops / (8e9 * threads), bytes / 8e9) + 20 us, times kt_calibration_busy(); cuda: max(flops /
 * 3e14, bytes / 3e12)
 * + 5 us. */
double kt_plan_call_seconds(const kt_spec *spec, const kt_arm *arm, const kt_problem *problem);
/* Seconds of one point's start-up: inputs and float64 references of every input set. */
double kt_plan_startup_seconds(const kt_spec *spec, const kt_point *point);
/* Calls of all arms at one point: (1 + K) * sets for correctness (twice that with
 * bitwise_repeatable) + (1 + K) * warmup + 2 * K * max_repetitions, K = candidates. */
double kt_plan_calls_per_point(const kt_spec *spec);
/* Fills 'out' for every point of 'm'. Returns 0, or a negative KT_E* code with the message
 * in kt_error_last() (an op that cannot shape a point, out of memory). */
int kt_plan_estimate(kt_plan *out, const kt_spec *spec, const kt_matrix *m);
void kt_plan_free(kt_plan *plan);

#endif
