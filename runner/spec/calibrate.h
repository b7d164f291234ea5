/* calibrate.h - how fast this machine builds a point's inputs and float64 reference.
 *
 * A point's start-up (input generation and the float64 reference, per input set) can take
 * minutes on a large problem and dwarfs its timed pairs; no fixed rate predicts it across
 * machines. The first plan on a host measures both rates for the op on a small problem (in
 * a child process: the references use OpenMP, which must not start before the workers
 * fork), then caches them in $XDG_CACHE_HOME/ktrial/calibration-<host>.json (default
 * ~/.cache); KT_CALIBRATION_FILE names another file. */
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

/* The rates of 'op' in 'dtype' with inputs drawn from 'dist' on this host: from the cache (under
 * a key that holds the sha256 of the plugin the op comes from, 'origin', NULL for a built-in, so
 * a rebuilt plugin is measured again),
 * else measured (and cached when the cache can be written). Generation is timed into freshly
 * mapped pages, as a point's worker generates into buffers it has just allocated (their page
 * faults cost up to a third of it), and in the spec's law (the llm law's planted structure
 * costs more per element than the normal one). Returns 0, or a negative code when they could
 * not be measured (the caller falls back on fixed rates). */
int kt_calibration_get(kt_calibration *out, const kt_op *op, kt_dtype dtype, kt_distribution dist,
                       const char *origin);

/* The small point every op's calibration shapes: decode-sized gemm/swiglu rows (hidden
 * 1024, intermediate 2048, batch 8), attention over 1024 tokens with 8 heads and 2 KV heads. */
kt_point kt_calibration_point(void);
/* The calibration point in 'phase': decode is kt_calibration_point(); prefill is the same
 * model with one sequence of 16 tokens (a GEMM of 16 rows; a decoder layer's chunk after 16
 * cached tokens), small enough to measure in a second and compute-bound like a real prefill
 * point, so an arm's measured cost scales to prefill points by the compute roofline. */
kt_point kt_calibration_point_in(kt_phase phase);

/* Runs 'fn' in a forked child (so what it starts, OpenMP or a crash, stays there) and copies
 * the 'len' bytes (at most 512) it wrote to 'out' back. Returns 0, or -1 when the child
 * failed. */
int kt_calibration_in_child(void *out, size_t len, int (*fn)(void *out, const void *ctx),
                            const void *ctx);

/* The cache file's entry 'key': its 'n' named numbers (all present, finite, >= 0), 0; or -1. */
int kt_calibration_cache_get(const char *key, const char *const *fields, double *values, int n);
/* Writes entry 'key' (a cache: failures are ignored, the next plan measures again). */
void kt_calibration_cache_put(const char *key, const char *const *fields, const double *values,
                              int n);

#endif
