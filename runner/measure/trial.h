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
#include "measure/check.h"
#include "measure/counters.h"
#include "spec/spec.h"
#include "decide/stats.h"
#include "decide/profile.h"

#include <stddef.h>

#define KT_MAX_SETS KT_LIMIT_INPUT_SETS

/* States an arm is prepared into per input set where its prepare is cheap (arm/kernel/
 * kernel_place.c): at most this many, when one prepare took under KT_PLACEMENT_MAX_PREPARE_S
 * seconds and the copies take at most KT_PLACEMENT_MAX_BYTES of backend memory in all. */
#define KT_PLACEMENTS              8
#define KT_PLACEMENT_MAX_PREPARE_S 0.05
#define KT_PLACEMENT_MAX_BYTES     (256.0 * 1024 * 1024)
/* Pairs a cluster (one input set and one placement, or one set) needs to enter the
 * between-cluster spread, and the level of the interval its standard error comes from (the
 * exact signed-rank interval of 3 pairs covers 75%). */
#define KT_CLUSTER_MIN_PAIRS 3
#define KT_CLUSTER_LEVEL     0.75
#define KT_MAX_LOOKS         KT_LIMIT_LOOKS
/* The share of warmup and timed calls, drawn after each call, that also get the full
 * numerics against float64 and the input hash (every call gets the poison/NaN scan). */
#define KT_FULL_CHECK_RATE 0.125

/* One timed pair: the baseline and one candidate back to back on one input set. */
typedef struct kt_pair {
    int rep;
    int input_set;
    int candidate_first;
    double base_ns, cand_ns;
    double base_noise, cand_noise;
    int throttled; /* either call was flagged by the backend */
    int placement; /* index of the arms' prepared states the pair ran on (arm/kernel/kernel_place.c)
                    */
} kt_pair;

/* What is known of one variant at one point, apart from timing. */
typedef struct kt_arm_result {
    char name[KT_NAME_MAX];
    char variant[KT_NAME_MAX];
    int failed;        /* could not run, crashed, wrote nothing, NaN, or wrote its inputs */
    char failure[512]; /* the reason, a sentence */
    kt_reason_code failure_code; /* what kind of failure (op command); NONE reads as FAILED */
    char program[1024];          /* op command: the arm's program, absolute ("" otherwise) */
    char program_sha256[65];     /* its SHA-256, "" when it could not be read */
    int n_sets;
    kt_numerics numerics[KT_MAX_SETS];
    int repeatable;       /* -1 not checked, 0 no, 1 bit-identical on every set */
    double bytes;         /* inputs + outputs + the variant's own peak allocation */
    double variant_bytes; /* the variant's own peak allocation */
    double prepare_ns;    /* untimed preprocessing, wall clock, input set 0 */
    int placements;       /* prepared states per input set its checked calls draw from */
    /* warmup and timed calls: every one poisoned before and scanned after, outside the
     * timer; 'full_checks' of them also compared with float64 (folded into 'numerics') */
    int64_t checked_calls, full_checks;
    double check_s; /* wall time of that poisoning and checking, never in a sample */
    int n_metrics;
    char metric_names[KT_MAX_METRICS][32];
    char metric_units[KT_MAX_METRICS][16];
    double metric_values[KT_MAX_METRICS];
    int profiled;              /* the profiling pass ran for this arm */
    kt_counter_values profile; /* its counters and energy, per call */
    kt_stage_stats stages;     /* per-stage profile of the timed calls (staged variants only) */
} kt_arm_result;

typedef struct kt_candidate_result {
    kt_arm_result arm;
    kt_pair *pairs;
    size_t n_pairs;
    /* statistics over the pairs, d_i = ln(base_i) - ln(cand_i) */
    kt_shift shift;
    double speedup, ci_low, ci_high; /* exp of the HL estimate and its interval */
    double confidence_used;          /* per-look confidence after the Bonferroni adjustment */
    int looks;                       /* looks taken */
    int decided_at;                  /* index of the look of the last evaluation, -1 none */
    int pairs_unused;                /* pairs after the last planned look reached (budget) */
    int stopped_early;               /* decided before max_repetitions */
    kt_summary base_time, cand_time; /* of the ns in its pairs */
    double order_p;                  /* Mann-Whitney of d: candidate-first vs baseline-first */
    double order_shift;              /* HL shift of d between those groups (log units) */
    int order_warning;
    /* Mann-Whitney of d between input sets (two sets; with more, the smallest pairwise p times
     * the number of pairs): each set has its own prepared states, so this sees data-dependent
     * speed and where each state's buffers lie (docs/statistics.md, "Placement") */
    double set_p;
    double set_shift; /* HL shift of d between the two sets of that p (log units) */
    int set_warning;
    /* the spread between clusters of pairs that ran on the same prepared states (input set x
     * placement; arm/kernel/kernel_place.c), counted into the interval (kt_candidate_evaluate):
     * DerSimonian and Laird's between-cluster variance of d (log units squared), 0 when the
     * clusters agree, NAN with fewer than two clusters of KT_CLUSTER_MIN_PAIRS pairs */
    double placement_tau2;
    int placement_clusters;
    /* the prepared state whose calls were furthest from its arm's other states of the same set
     * (their median time against the median of those states' medians; states with
     * KT_CLUSTER_MIN_PAIRS pairs, sets with 3 such states, arms with several placements): its
     * arm (0 baseline, 1 candidate), set, placement and time ratio, NAN when none was judged;
     * state_warning when the ratio is beyond KT_STATE_WARN_RATIO either way */
    int state_arm, state_set, state_placement;
    double state_ratio;
    int state_warning;
    int noisy_pairs; /* pairs with a nonzero noise signal or a throttle flag */
    double worst_rel_l2;
    double error_ratio; /* worst candidate rel_l2 / worst baseline rel_l2 */
    double memory_ratio;
    double setup_memory_fraction; /* the candidate's own bytes / the problem's input and output */
    double energy_ratio;          /* candidate / baseline energy per call; NAN without a meter */
    double tokens_per_call;       /* costs: NAN without costs in the spec */
    double usd_per_mtok_base, usd_per_mtok_cand; /* from each arm's median time per call */
    kt_verdict verdict;
    char reasons[KT_LIMIT_REASONS][KT_LIMIT_REASON_LEN]; /* sentences with numbers, for people */
    kt_reason_code reason_codes[KT_LIMIT_REASONS];       /* what each reason is, for decisions */
    int n_reasons;
} kt_candidate_result;

typedef struct kt_point_result {
    kt_point point;
    double flops, bytes; /* of one call, from the op */
    char error[512];     /* set when the point itself could not be set up */
    kt_arm_result baseline;
    kt_candidate_result *cands;
    size_t n_cands;
    int repetitions; /* largest number of pairs any candidate got */
    double elapsed_s;
    double timer_tick_ns; /* the backend's timer resolution, measured at the point's start */
    char stop_reason[32]; /* "decided" | "max_repetitions" | "max_seconds" | "failed" |
                             "interrupted" */
} kt_point_result;

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
void kt_point_result_free(kt_point_result *r);
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

/* The largest rel_l2 over the arm's input sets; NAN when none was measured (no input set, or
 * no output compared: a command trial without 'outputs'). */
double kt_arm_worst_rel_l2(const kt_arm_result *a);

/* Recomputes statistics and the verdict of candidate 'c' at 'confidence' (per look). */
void kt_candidate_evaluate(kt_candidate_result *c, const kt_arm_result *baseline,
                           const kt_spec *spec, const kt_point *point, double confidence);

/* The verdict of 'c' at look 'at' of design 'd' (its pairs cut to that look's count), or, with
 * 'at' < 0 (stopped before the first look), INCONCLUSIVE unless rejected on quality. */
void kt_candidate_judge_at_look(kt_candidate_result *c, const kt_arm_result *baseline,
                                const kt_spec *spec, const kt_point *point, const kt_design *d,
                                int at);

/* Appends a reason (at most KT_LIMIT_REASONS; later ones are dropped). */
void kt_candidate_add_reason(kt_candidate_result *c, kt_reason_code code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* True when the candidate was rejected on quality (numerics, memory, a failure), read
 * from the typed reason codes. */
int kt_candidate_quality_rejected(const kt_candidate_result *c);
/* True when 'c' has dollars per million tokens: costs in the spec, and both arms timed. */
int kt_candidate_priced(const kt_candidate_result *c);
/* order: grouped without allow_grouped_verdicts: a speed verdict becomes INCONCLUSIVE. */
void kt_candidate_withhold_grouped(kt_candidate_result *c, const char *id);

/* Order-effect p-values: below SUSPECT a point keeps measuring instead of stopping early;
 * below WARN (after the last look), with a shift between the orders of at least WARN_SHIFT
 * (log units: running second costs 0.5% or more), the result carries a warning. */
#define KT_ORDER_SUSPECT_P  0.05
#define KT_ORDER_WARN_P     0.01
#define KT_ORDER_WARN_SHIFT 0.01

/* A prepared state whose median time is this factor off its arm's other states' warns. */
#define KT_STATE_WARN_RATIO 1.2

/* --quick's cap on repetitions. */
#define KT_QUICK_MAX_REPETITIONS 20

/* Calls per arm in the profiling pass (after the verdict, never in the timed pairs). */
#define KT_PROFILE_CALLS 5

#endif
