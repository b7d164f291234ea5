/* worker.h - runs one point in a child process so that a crashing or hanging candidate
 * costs only its own verdict: the supervisor names the signal, skips that candidate and
 * measures the point again without it. Backends initialise in the child, never before a
 * fork (CUDA forbids using a context across fork). */
#ifndef KT_WORKER_H
#define KT_WORKER_H

#include "measure/trial.h"

#include <signal.h>

typedef struct kt_worker_options {
    const char *backend; /* resolved backend name */
    int threads;
    int quick;
    double hang_timeout_s; /* no message from the worker for this long: kill, call it hung */
    volatile sig_atomic_t *interrupted;
    void (*on_progress)(void *ctx, int reps, int max_reps);
    void *ctx;
    int no_profile; /* --no-profile */
} kt_worker_options;

/* Fills 'out' with the point's result (crashes and hangs recorded as REJECTs of the
 * culprit). Returns 0, or a negative code when no worker could run at all. */
int kt_worker_run_point(kt_point_result *out, const kt_spec *spec, const kt_point *point,
                        const kt_worker_options *opts);

/* The seed of everything random at a point: inputs, order coin, sim durations. */
uint64_t kt_point_seed(const kt_spec *spec, const kt_point *point);

#endif
