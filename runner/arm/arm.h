/* arm.h - one interface for every kind of arm: whatever the pairs of a trial call.
 *
 * An arm is a built-in or plugin kernel variant (arm/kernel/), a command (arm/command/), or a
 * server under load (arm/service/). The trial engine (measure/trial.c) drives every
 * kind through the vtable below without knowing which: it opens the point's arms, prepares
 * each, warms each up, then runs the pairs (call the baseline and a candidate back to back,
 * check their outputs), and releases them. What differs between kinds is what a kind declares
 * here (where its numerics come from, which usage it reports, its clock, whether it runs in a
 * forked worker, whether it has placements), never a branch in the engine.
 *
 * Contract of the operations: every one that can fail records the failure itself, in the
 * point's result (a candidate's in its arm result, the baseline's as the point's error), and
 * returns 0, -1 when the arm failed, or -2 when the point cannot go on (out->error says why);
 * open alone returns a negative kt_error code, for a failure of the harness itself. */
#ifndef KT_ARM_H
#define KT_ARM_H

#include "kernel.h"
#include "spec/spec.h"

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

struct kt_point_result;

/* Where an arm's numerics come from. */
typedef enum kt_arm_numerics {
    KT_ARM_NUMERICS_FLOAT64, /* every input set's outputs against a float64 reference */
    KT_ARM_NUMERICS_OUTPUT,  /* an output file against the baseline's or an expect file */
} kt_arm_numerics;

/* Which clock times a call. */
typedef enum kt_arm_clock {
    KT_ARM_CLOCK_BACKEND, /* the backend's timer (resolution measured after prepare) */
    KT_ARM_CLOCK_CHILD,   /* wall clock around a child process, or the metric it reports */
} kt_arm_clock;

/* The usage figures a kind reports (kt_arm_kind.usage, a mask). */
enum {
    KT_ARM_USAGE_DEVICE_MEMORY = 1 << 0, /* the backend's allocations: the memory gate */
    KT_ARM_USAGE_COUNTERS = 1 << 1,      /* CPU counters, energy, GPU counters: a profile pass */
    KT_ARM_USAGE_RSS = 1 << 2,           /* the child's peak resident set: the memory gate */
    KT_ARM_USAGE_CPU_TIME = 1 << 3,      /* the child's user and system CPU seconds */
};

/* What one call used besides its duration; NAN where the kind does not report it. */
typedef struct kt_arm_usage {
    double wall_s, user_s, sys_s;
    double max_rss_kib;
} kt_arm_usage;

/* One call as its arm measured it: its duration (ns; a reported metric converted to one, see
 * arm/command/), the clock's noise signal and flag, and its usage. */
typedef struct kt_arm_sample {
    kt_timing t;
    kt_arm_usage usage;
    /* Which of a pair's two measurements was taken first, when the kind measured them before
     * the engine asked (a service round answers its requests from a round already run): 0 as
     * the engine called them, 1 the baseline's, 2 the candidate's. Read from the candidate's
     * sample; it goes to kt_pair.candidate_first (the order check). */
    int taken_first;
} kt_arm_sample;

/* Where a call stands in the trial. */
typedef struct kt_arm_at {
    int set;       /* input set (kernels) or task (commands) */
    int rep;       /* repetition, or -(w + 1) for warmup call w */
    int position;  /* 0 or 1 in its pair; -1 outside a pair (warmup, grouped) */
    int timed;     /* 0 for warmup calls */
    int pair_with; /* in a pair: the other arm + 1 (a kind that measures a pair's arms
                      together needs it); 0 outside a pair */
} kt_arm_at;

/* Keeps a file of the point for review ('src_path' copied, or 'text' written) under the arm's
 * name in the run folder. Returns 0 or a negative code. */
typedef int (*kt_arm_keep_fn)(void *ctx, const char *point_id, const char *arm, const char *name,
                              const char *src_path, const char *text);

/* The host's read bandwidth, for the roofline check (docs/robustness.md): GB/s of one thread
 * reading buffers of 'bytes[i]' bytes, smallest first; n = 0 when unknown (no check). */
#define KT_BANDWIDTH_SIZES 6
typedef struct kt_read_bandwidth {
    int n;
    double bytes[KT_BANDWIDTH_SIZES];
    double gbs[KT_BANDWIDTH_SIZES];
    const char *source; /* "measured", "cached" or the variable that set it */
} kt_read_bandwidth;

/* roofline: a timed call faster than its least bytes read over KT_ROOFLINE_MARGIN times the
 * read bandwidth (times the backend's threads) is impossible. */
#define KT_ROOFLINE_MARGIN 4.0

/* What the engine hands a kind for one point. */
typedef struct kt_arm_env {
    const kt_spec *spec;
    const kt_point *point;
    kt_backend *backend; /* NULL for kinds that need none (commands) */
    struct kt_point_result *out;
    uint64_t seed; /* the point's (kt_point_seed) */
    /* Called before each risky step of an arm ("prepare", "correctness", "profile",
     * "release"), so that a supervisor can name the culprit if the process dies. May be NULL. */
    void (*on_step)(void *ctx, int arm, const char *step);
    kt_arm_keep_fn keep; /* may be NULL: nothing is kept */
    void *ctx;
    volatile sig_atomic_t *interrupted; /* set asynchronously (SIGINT); may be NULL */
    const kt_read_bandwidth *bandwidth; /* may be NULL: no roofline check */
} kt_arm_env;

/* One kind's arms at one point (every arm of it: they share inputs, a work folder, ...). */
typedef struct kt_arm_set kt_arm_set;

/* Arms are numbered 0 for the baseline, k + 1 for candidate k. */
typedef struct kt_arm_kind {
    const char *name;    /* "kernel", "command" */
    const char *startup; /* what a point's start-up does, for progress lines */
    /* What the kind declares. */
    kt_arm_numerics numerics;
    unsigned usage;     /* KT_ARM_USAGE_* */
    kt_arm_clock clock; /* KT_ARM_CLOCK_CHILD: 'tick_ns' is its resolution */
    double tick_ns;
    int isolated; /* each point runs in a forked worker (measure/worker.c) */
    /* opens a backend: its threads, its device and memory are the arms' (a command's threads
     * and memory are its own business) */
    int needs_backend;
    int placements; /* several prepared states per input set, drawn per pair; cache flushes */
    int grouped;    /* honours order: grouped (all baseline calls, then each candidate's) */
    /* the seeded shuffle of the candidates in each repetition; without it they run in index
     * order (a command pair already randomises which arm runs first) */
    int shuffles;
    /* the outputs are checked right after each call (they live in buffers the next call
     * overwrites); without it, after the pair, the candidate's against the baseline's */
    int checks_each_call;
    /* the checks every call gets (docs/robustness.md), for the summary; NULL-terminated */
    const char *const *checks;

    /* Per point: the inputs (and their reference) or a work folder; fills '*n_sets'. A failed
     * input set is the point's error (returns 0 with out->error set). */
    int (*open)(kt_arm_set **set, int *n_sets, const kt_arm_env *env);
    /* The arm's identity in its result: name, variant, program and its SHA-256 (provenance). */
    void (*describe)(kt_arm_set *s, int arm);
    /* Per point and input set: the arm's state, its correctness against the reference. */
    int (*prepare)(kt_arm_set *s, int arm);
    /* After every arm's prepare: more prepared states per set (placements). May be NULL. */
    int (*settle)(kt_arm_set *s);
    /* Arm 'arm' runs its next calls on 'set' in its prepared state of index 'index'. May be
     * NULL (one state). */
    void (*place)(kt_arm_set *s, int arm, int set, int index);
    /* One call, timed when at->timed, untimed work around it (poison, priming) outside. */
    int (*call)(kt_arm_set *s, int arm, const kt_arm_at *at, kt_arm_sample *out);
    /* Checks the output of the arm's last call, against 'ref' (an arm whose last call was on
     * the same set) or, with ref < 0, against the kind's own reference. */
    int (*check)(kt_arm_set *s, int arm, const kt_arm_at *at, int ref);
    /* Drops what the arm's last call left (its output file). May be NULL. */
    void (*forget)(kt_arm_set *s, int arm);
    /* After the pairs: a few calls under the meters (KT_ARM_USAGE_COUNTERS). May be NULL. */
    void (*profile)(kt_arm_set *s);
    /* Releases the arm's states (teardown); records its usage in its result. */
    void (*release)(kt_arm_set *s, int arm);
    /* Frees the point's inputs or work folder, and 's'. */
    void (*close)(kt_arm_set *s);

    /* Of the spec, not of a point's arms. */
    /* Prices one call of each arm for the plan by making it at 'point' (a kind whose cost
     * the plan cannot estimate from the op); returns the number of arms whose call
     * succeeded. NULL: the plan estimates it. */
    int (*calibrate)(const kt_spec *spec, const kt_point *point);
    /* What the samples are of: the metric's name ("wall": each call's wall time) and whether
     * higher is better (the samples are then 1e9 / value). NULL: the backend's time. */
    const char *(*metric)(const kt_spec *spec, int *higher);
} kt_arm_kind;

extern const kt_arm_kind kt_arm_kernel;   /* arm/kernel/ */
extern const kt_arm_kind kt_arm_command;  /* arm/command/ */
extern const kt_arm_kind kt_arm_service;  /* arm/service/ */
extern const kt_arm_kind kt_arm_pymodule; /* arm/pymodule/ */

/* The kind of every arm of 'spec'. */
const kt_arm_kind *kt_arm_kind_of(const kt_spec *spec);
/* Kind 'i' of the table (arm.c), NULL past its end. */
const kt_arm_kind *kt_arm_kind_at(size_t i);
/* The kind called 'name', or NULL. */
const kt_arm_kind *kt_arm_kind_find(const char *name);

#endif
