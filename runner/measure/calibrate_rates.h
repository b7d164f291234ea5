/* calibrate_rates.h - measuring how fast this machine builds a point's inputs and float64
 * reference (spec/calibrate.h says why the plan needs it).
 *
 * The rates are measured for the op on a small problem in a child process (the references use
 * OpenMP, which must not start before the workers fork), then cached in
 * $XDG_CACHE_HOME/ktrial/calibration-<host>.json (default ~/.cache); KT_CALIBRATION_FILE names
 * another file. The command line registers kt_calibration_get with the plan
 * (kt_plan_use_rates). */
#ifndef KT_CALIBRATE_RATES_H
#define KT_CALIBRATE_RATES_H

#include "spec/calibrate.h"

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
