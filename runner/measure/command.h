/* command.h - command trials: one matrix point of op 'command'.
 *
 * The same protocol as kernel trials (trial.h), with whole programs as the calls: each arm's
 * setup once, warmup calls, then paired calls (baseline and one candidate back to back on the
 * same task, order by a seeded coin or ABBA), tasks rotated over the repetitions, looks on the
 * same design, the same verdicts. Each call is a child process (kernels/process), so a crash
 * or a hang costs only that call: no worker process or watchdog is involved, and each arm's
 * timeout_s is the only limit on a call. A failing, crashing, timing-out or silent candidate
 * is a REJECT with a typed reason; a failing baseline is a point error. */
#ifndef KT_COMMAND_H
#define KT_COMMAND_H

#include "arm/command/command.h"
#include "measure/trial.h"

#include <signal.h>

typedef struct kt_command_hooks {
    /* Keeps a file of the point for review: an arm's output for a task ('name' is
     * "<task>.<ext>"), or a failure's details ('name' "<task>.r<rep>.failure.txt"). NULL
     * keeps nothing. Returns 0 or a negative code. */
    int (*keep)(void *ctx, const char *point_id, const char *arm, const char *name,
                const char *src_path, const char *text);
    void (*on_progress)(void *ctx, int reps, int max_reps);
    void *ctx;
    volatile sig_atomic_t *interrupted; /* may be NULL */
    int quick;                          /* --quick: cap repetitions */
} kt_command_hooks;

/* Runs one point of a command spec through the trial engine (kt_trial_run_point) in this
 * process: its kind of arm isolates each call in a child of its own. Fills 'out' (free with
 * kt_point_result_free). Returns 0, or a negative code for a failure of the harness itself (no
 * temporary folder, no memory), never for a failing command. */
int kt_command_run_point(kt_point_result *out, const kt_spec *spec, const kt_point *point,
                         const kt_command_hooks *hooks);

#endif
