/* point.h - the results of one matrix point: each arm's failure, numerics, memory and profile,
 * each candidate's timed pairs, statistics, verdict and typed reasons. measure/ fills them,
 * decide/ judges them, result_json.c writes and reads them; the helpers here only read. */
#ifndef KT_POINT_H
#define KT_POINT_H

#include "result/figures.h"
#include "result/numerics.h"
#include "result/profile.h"
#include "result/serving.h"
#include "result/usage.h"
#include "result/verdict.h"
#include "spec/spec.h"
#include "util/limits.h"

#include <stddef.h>
#include <stdint.h>

#define KT_MAX_SETS KT_LIMIT_INPUT_SETS
/* Prepared states of an arm per input set, at most (measure/trial.c, add_placements): the
 * range of kt_pair.placement and kt_arm_result.placements. */
#define KT_PLACEMENTS 8

/* One timed pair: the baseline and one candidate back to back on one input set. */
typedef struct kt_pair {
    int rep;
    int input_set;
    int candidate_first;
    double base_ns, cand_ns;
    double base_noise, cand_noise;
    int throttled; /* either call was flagged by the backend */
    int placement; /* index of the arms' prepared states the pair ran on (add_placements) */
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
    kt_serving serving;        /* op service: what the server did under load */
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
     * placement; trial.c, add_placements), counted into the interval (kt_candidate_evaluate):
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

void kt_point_result_free(kt_point_result *r);

/* The largest rel_l2 over the arm's input sets; NAN when none was measured (no input set, or
 * no output compared: a command trial without 'outputs'). */
double kt_arm_worst_rel_l2(const kt_arm_result *a);

/* True when the candidate was rejected on quality (numerics, memory, a failure), read
 * from the typed reason codes. */
int kt_candidate_quality_rejected(const kt_candidate_result *c);
/* True when 'c' has dollars per million tokens: costs in the spec, and both arms timed. */
int kt_candidate_priced(const kt_candidate_result *c);

#endif
