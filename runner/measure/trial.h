/* trial.h - the measurements and decisions of one matrix point.
 *
 * For each candidate, correctness first (every input set, against float64), then warmup,
 * then paired repetitions; every warmup and timed call is checked too (see kt_kernel_call
 * and kt_kernel_check in arm/kernel/kernel_call.c): each pair runs the baseline and the candidate
 * back to back on one input set, in an order set by a seeded coin (random), ABBA (alternate) or,
 * for comparison only, all baseline calls before all candidate calls (grouped). Looks at a fixed
 * schedule decide each candidate with a Bonferroni-adjusted confidence. */
#ifndef KT_TRIAL_H
#define KT_TRIAL_H

#include "arm/arm.h"
#include "decide/sequential.h"
#include "decide/verdict.h"
#include "result/point.h"
#include "spec/spec.h"

#include <stddef.h>

typedef struct kt_trial_hooks {
    /* Called before each risky step of an arm ("prepare", "correctness", "repetitions"),
     * so a supervisor can name the culprit if the process dies. May be NULL. */
    void (*on_step)(void *ctx, int arm, const char *step);
    /* Called after each look with the number of pairs so far. May be NULL. */
    void (*on_progress)(void *ctx, int reps, int max_reps);
    void *ctx;
    /* Candidates to skip (1 = skip, with 'skip_reason'), e.g. after a crash. May be NULL. */
    const int *skip;
    char (*skip_reason)[320];
    /* Set asynchronously (SIGINT); the point stops after the current pair. May be NULL. */
    volatile int *interrupted;
    int quick;      /* --quick: cap repetitions */
    int no_profile; /* --no-profile: skip the profiling pass whatever the spec says */
    /* How the looks spend the error budget (0, the default: Hwang-Shih-DeCani on dense looks; the
     * validity benchmark sets the others to compare). */
    kt_spending spending;
} kt_trial_hooks;

/* Runs one point of any kind of arm (arm/arm.h) on an open backend (NULL for a kind that needs
 * none). Fills 'out' (free with kt_point_result_free). Returns 0,
 * or a negative code for a failure of the harness itself (not of a variant). */
int kt_trial_run_point(kt_point_result *out, const kt_spec *spec, const kt_point *point,
                       kt_backend *backend, const kt_trial_hooks *hooks);
/* The same, for a kind of arm that keeps files of the point for review in the run folder
 * ('keep', called with hooks->ctx: arm.h, kt_arm_env.keep). */
int kt_trial_run_point_keeping(kt_point_result *out, const kt_spec *spec, const kt_point *point,
                               kt_backend *backend, const kt_trial_hooks *hooks,
                               kt_arm_keep_fn keep);
/* Marks every candidate of 'out' (n_cands of them, already allocated) INCONCLUSIVE with the
 * reason "not measured: <out->error> at <point id>", named after the spec's arms, for a point
 * that failed or was interrupted before its verdict. */
void kt_point_result_mark_unmeasured(kt_point_result *out, const kt_spec *spec,
                                     const kt_point *point);

/* Planned look 'at' of design 'd' after 'pairs' pairs: evaluates every candidate of 'out'
 * still active at the look's confidence, and stops (active[k] = 0) those with a verdict,
 * unless an order effect is suspected or the spec aggregates by geomean. Kernel and command
 * trials share it. */
void kt_trial_look(kt_point_result *out, int *active, const kt_design *d, int at,
                   const kt_spec *spec, const kt_point *point, int pairs, int max_reps);

/* The repetitions of a point, shared by kernel and command trials: each repetition runs one
 * pair per candidate still active, then, at a planned look of 'design', kt_trial_look. */
typedef struct kt_pair_loop {
    kt_point_result *out;
    const kt_spec *spec;
    const kt_point *point;
    const kt_design *design;
    int min_reps, max_reps;
    double start_s;    /* when the pairs began: max_seconds_per_point counts from here */
    kt_rng *order_rng; /* shuffles the candidates' order in each repetition; NULL: index order */
    void *ctx;         /* the trial's, passed to the functions below */
    /* Pair of candidate k at repetition 'rep': 0; -1 when the candidate failed (it stops
     * there); -2 when the point cannot go on (out->error says why). */
    int (*pair)(void *ctx, int k, int rep);
    int (*interrupted)(void *ctx);
    void (*progress)(void *ctx, int reps, int max_reps); /* after each planned look; or NULL */
} kt_pair_loop;

/* Runs the repetitions of 'l' and returns why they stopped: "decided" (no candidate left
 * active), "failed" (a pair returned -2), "interrupted", "max_seconds" (the point's time ran
 * out, after min_reps at least: a verdict on fewer pairs would not mean anything) or
 * "max_repetitions". */
const char *kt_trial_pair_loop(const kt_pair_loop *l);

/* The verdict of 'c' at look 'at' of design 'd' (its pairs cut to that look's count), or, with
 * 'at' < 0 (stopped before the first look), INCONCLUSIVE unless rejected on quality. */
void kt_candidate_judge_at_look(kt_candidate_result *c, const kt_arm_result *baseline,
                                const kt_spec *spec, const kt_point *point, const kt_design *d,
                                int at);

/* The verdict of 'c' after its pairs, as every run judges it: a candidate that stopped at a
 * look ('decided_at', -1 when unknown) keeps that look's verdict, any other is judged at the
 * last planned look its pairs reached (the two agree on any point a run wrote); a failed arm at
 * 1 - 'alpha'; 'grouped' order withholds a speed verdict unless the spec allows it. Used by the
 * trials and by every reader that decides an archived point again (measure/rejudge.h). */
void kt_candidate_judge(kt_candidate_result *c, const kt_arm_result *baseline, const kt_spec *spec,
                        const kt_point *point, const kt_design *d, double alpha, int grouped);

/* --quick's cap on repetitions. */
#define KT_QUICK_MAX_REPETITIONS 20

#endif
