/* kernel_arm.h - private to the kernel kind of arm (arm/kernel/): the state of one point's
 * arms (its input sets, each arm's prepared states) and the helpers its files share. */
#ifndef KT_KERNEL_ARM_H
#define KT_KERNEL_ARM_H

#include "arm/arm.h"
#include "arm/kernel/check.h"
#include "arm/kernel/kernel_kind.h"
#include "result/point.h"

#include <stdarg.h>

struct kt_arm_set {
    kt_arm_env env;
    const kt_spec *spec;
    const kt_point *point;
    kt_backend *backend;
    kt_point_result *out;
    int n_sets;
    /* the input sets, and a private second one when the spec has one (kernel_fresh.c) */
    kt_instance *inst[KT_MAX_SETS + 1];
    int n_contents; /* input contents the calls rotate among: n_sets, at least 2 */
    void *state[1 + 16][KT_MAX_SETS]; /* [arm][set]; arm 0 is the baseline */
    /* the arm's prepared states per set (kt_kernel_settle): state[arm][set] is one of them */
    void *placed[1 + 16][KT_MAX_SETS][KT_PLACEMENTS];
    int n_placed[1 + 16];     /* states made on every set; 0 until kt_kernel_settle */
    kt_rng check_rng;         /* poison patterns, output buffers, calls given the full check */
    int64_t calls[2][1 + 16]; /* [warmup, timed] calls so far, per arm */
    int prepared[1 + 16];     /* the arm's prepare succeeded on every input set */
    /* What the calls run on (kernel_fresh.c): two sets of input buffers whose contents change
     * from call to call, and each arm's own two sets of guarded output buffers. */
    void *live_in[2][KT_MAX_TENSORS];
    int live_set[2]; /* whose inputs each holds; -1: none */
    void *outs[1 + 16][2][KT_MAX_TENSORS];
    size_t out_guard;             /* bytes of guard zone each side of an arm's output buffer */
    unsigned char *scratch;       /* the largest of a guard zone, an input, an output */
    int last_live[1 + 16];        /* the input buffers of the arm's last call; -1 before any */
    int last_set[1 + 16];         /* the contents of the arm's last call; -1 before any */
    int last_out[1 + 16];         /* the output buffers of the arm's last call */
    double last_ns[1 + 16];       /* the time of its last timed call */
    double last_ran_ns[1 + 16];   /* of that time, how long it ran (kt_kernel_ran_ns) */
    uint64_t out_hash[1 + 16][2]; /* the outputs as checked (late-writes) */
    int out_hashed[1 + 16][2];
    int out_pending[1 + 16]; /* its last output awaits a re-read after another arm's call */
    int n_probes[1 + 16];    /* repeat probes made (fresh-inputs) */
    double probe_ns[1 + 16][2][KT_PROBES]; /* [fresh, repeat] */
};

typedef struct kt_arm_set point_run;

double kt_kernel_now_s(void);
const kt_arm *kt_kernel_spec_arm(const point_run *r, int arm);
kt_arm_result *kt_kernel_arm_result(point_run *r, int arm);
void kt_kernel_step(const point_run *r, int arm, const char *what);
int kt_kernel_interrupted(const point_run *r);
/* Fails the arm result 'res' for the reason, made one line of valid UTF-8 (kt_sanitize). */
void kt_kernel_fail_arm(kt_arm_result *res, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Fails 'arm' for 'why': a candidate as kt_kernel_fail_arm does, the baseline through the
 * point's error (which fails the point; the first reason found is kept). */
void kt_kernel_fail_any_arm(point_run *r, int arm, const char *why);
/* The call of 'arm' on input set 'set'. */
kt_call kt_kernel_arm_call(const point_run *r, int arm, int set);
/* The sentence for what is wrong with a checked call's outputs 'n' (unwritten elements, NaN or
 * Inf, inputs written into), followed by 'suffix'; 1 if something is, else 0. */
int kt_kernel_numerics_problem(const kt_numerics *n, const char *suffix, char *why, size_t len);

/* kernel_arm.c: the kind's operations on the point and its arms (arm.h). */
int kt_kernel_open(point_run **set, int *n_sets, const kt_arm_env *env);
void kt_kernel_describe(point_run *r, int arm);
int kt_kernel_prepare(point_run *r, int arm);
void kt_kernel_release(point_run *r, int arm);
void kt_kernel_close(point_run *r);

/* kernel_place.c: more prepared states per input set, and which one a call runs on. */
int kt_kernel_settle(point_run *r);
void kt_kernel_place(point_run *r, int arm, int set, int u);

/* kernel_fresh.c: the buffers the calls run on, and the checks on them. */
int kt_fresh_open(point_run *r);
void kt_fresh_close(point_run *r);
/* Puts input set 'set''s contents into input buffers 'b' (uploads them unless already there). */
int kt_fresh_load(point_run *r, int b, int set);
/* Puts contents other than 'set''s into input buffers 'b'. */
int kt_fresh_load_other(point_run *r, int b, int set);
/* Remembers what arm's output buffers 'o' hold now (downloaded into inst's host_outputs). */
void kt_fresh_remember(point_run *r, int arm, int o, const kt_instance *inst);
/* late-writes: re-reads the outputs 'arm' left (those remembered); 1 with the sentence in 'why'
 * when one changed, 0, or a negative harness error. */
int kt_fresh_recheck(point_run *r, int arm, char *why, size_t len);

/* kernel_probe.c: the checks that read a call's time; 1 with the sentence in 'why', 0, or a
 * negative harness error. */
int kt_kernel_roofline(point_run *r, int arm, int set, char *why, size_t len);
int kt_kernel_probe(point_run *r, int arm, int set, char *why, size_t len);
/* How long timed call 't' ran: its time less the run-queue wait the backend saw (another
 * process had its core), never more than its time; NAN where the backend flagged it. */
double kt_kernel_ran_ns(const point_run *r, const kt_timing *t);

/* kernel_call.c: one checked call, its check, and the profiling pass. */
int kt_kernel_call(point_run *r, int arm, const kt_arm_at *at, kt_arm_sample *out);
int kt_kernel_check(point_run *r, int arm, const kt_arm_at *at, int ref);
void kt_kernel_profile(point_run *r);

#endif
