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
    kt_instance *inst[KT_MAX_SETS];
    void *state[1 + 16][KT_MAX_SETS]; /* [arm][set]; arm 0 is the baseline */
    /* the arm's prepared states per set (kt_kernel_settle): state[arm][set] is one of them */
    void *placed[1 + 16][KT_MAX_SETS][KT_PLACEMENTS];
    int n_placed[1 + 16];     /* states made on every set; 0 until kt_kernel_settle */
    kt_rng check_rng;         /* poison patterns, output buffers, calls given the full check */
    int64_t calls[2][1 + 16]; /* [warmup, timed] calls so far, per arm */
    int prepared[1 + 16];     /* the arm's prepare succeeded on every input set */
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

/* kernel_call.c: one checked call, its check, and the profiling pass. */
int kt_kernel_call(point_run *r, int arm, const kt_arm_at *at, kt_arm_sample *out);
int kt_kernel_check(point_run *r, int arm, const kt_arm_at *at, int ref);
void kt_kernel_profile(point_run *r);

#endif
