/* worker.h - runs one point in a child process so that a crashing or hanging candidate
 * costs only its own verdict: the supervisor names the signal, skips that candidate and
 * measures the point again without it. Backends initialise in the child, never before a
 * fork (CUDA forbids using a context across fork). */
#ifndef KT_WORKER_H
#define KT_WORKER_H

#include "measure/trial.h"

#include <signal.h>
#include <stdarg.h>
#include <stddef.h>

/* The longest line a worker sends (an error message among them), newline included. */
#define KT_WORKER_LINE_MAX 1024

typedef struct kt_worker_options {
    const char *backend; /* resolved backend name */
    int threads;
    int quick;
    double hang_timeout_s; /* no message from the worker for this long: kill, call it hung */
    /* the same during start-up (inputs, float64 reference, prepare, correctness), where one
     * step can take minutes on a large problem; 0 means hang_timeout_s */
    double startup_timeout_s;
    /* 1 after one Ctrl-C: the worker finishes its current pair, or is stopped at once when
     * still starting up (nothing measured is lost: the point is measured again on --resume);
     * 2 after a second: the worker is killed at once */
    volatile sig_atomic_t *interrupted;
    void (*on_progress)(void *ctx, int reps, int max_reps);
    /* called once per point when the worker leaves start-up for warmup and timed pairs;
     * may be NULL */
    void (*on_measuring)(void *ctx);
    void *ctx;
    int no_profile; /* --no-profile */
} kt_worker_options;

/* Fills 'out' with the point's result (crashes and hangs recorded as REJECTs of the
 * culprit). Returns 0, or a negative code when no worker could run at all. */
int kt_worker_run_point(kt_point_result *out, const kt_spec *spec, const kt_point *point,
                        const kt_worker_options *opts);

/* Runs one point with the isolation its kind of arm declares (arm.h, kt_arm_kind.isolated):
 * in a forked worker (kt_worker_run_point), or in this process through the trial engine with
 * the hooks of 'opts' (progress, Ctrl-C, --quick, --no-profile) and 'keep' for the files a kind
 * keeps for review (may be NULL). Returns 0, or a negative code for a failure of the harness. */
int kt_measure_point(kt_point_result *out, const kt_spec *spec, const kt_point *point,
                     const kt_worker_options *opts, kt_arm_keep_fn keep);

/* Formats one worker message as exactly one line: inner newlines become spaces, a message
 * too long for 'cap' is cut, and the line always ends with '\n'. Returns its length. */
size_t kt_worker_frame_line(char *out, size_t cap, const char *fmt, va_list ap);

#endif
