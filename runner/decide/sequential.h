/* sequential.h - the group-sequential design of one point: at which numbers of pairs the
 * data are looked at, and at what confidence each look may decide, so that the chance of a
 * wrong verdict over all looks together stays within the point's error budget.
 *
 * The budget alpha is spent across the looks by a spending function of the information
 * time t = n / max_repetitions (Lan-DeMets); the boundary of each look is found by
 * recursive numerical integration of the normal approximation to the signed-rank statistic
 * (Armitage, McPherson and Rowe), so the spending accounts for the correlation between
 * looks instead of splitting alpha into independent parts. docs/statistics.md derives it. */
#ifndef KT_SEQUENTIAL_H
#define KT_SEQUENTIAL_H

#include "spec/spec.h"
#include "util/limits.h"

/* A design is a spending function and a look schedule. KT_SPEND_DEFAULT is the one every
 * run uses; the others are kept so that bench_validity can show what the default gains. */
typedef enum {
    KT_SPEND_FRONT = 0,      /* front-loaded, in pairs, dense looks: the default */
    KT_SPEND_HSD,            /* Hwang-Shih-DeCani, gamma KT_HSD_GAMMA, dense looks */
    KT_SPEND_POCOCK,         /* alpha ln(1 + (e - 1) t), dense looks */
    KT_SPEND_OBRIEN_FLEMING, /* 2 - 2 Phi(z / sqrt(t)), dense looks */
    KT_SPEND_POCOCK_SPARSE,  /* Pocock-type on the x1.5 looks: the second design */
    KT_SPEND_BONFERRONI      /* alpha / L per look on the x1.5 looks: the first design */
} kt_spending;

#define KT_SPEND_DEFAULT KT_SPEND_FRONT

/* The front-loaded spending function, in pairs n rather than information time: a share
 * KT_FRONT_FIRST of the budget at the first look, rising linearly to KT_FRONT_DENSE at the
 * end of the looks after every pair, then linearly to the whole budget at the last look.
 * docs/statistics.md says why these values (the first look of 7 pairs can then decide with
 * one discordant pair of the lowest rank at confidence 0.95). */
#define KT_FRONT_FIRST 0.64
#define KT_FRONT_DENSE 0.85

/* The gamma of the Hwang-Shih-DeCani spending function
 * alpha (1 - exp(-gamma t)) / (1 - exp(-gamma)), the previous default. */
#define KT_HSD_GAMMA 1.0

/* Looks a schedule holds at most. */
#define KT_MAX_LOOKS KT_LIMIT_LOOKS

/* The look schedule of the default designs, from min to max repetitions: a look after every
 * pair from min up to kt_trial_dense_end(min) (2 min, at most 16 such looks), then geometric
 * with factor 1.2, always ending at max. Returns the number of looks written into 'looks'
 * (at most 'max_looks'). */
int kt_trial_looks(int *looks, int max_looks, int min_reps, int max_reps);
/* The last of the looks after every pair that start at 'min_reps' (before capping at max). */
int kt_trial_dense_end(int min_reps);
/* The older schedule: geometric from min with factor 1.5, always ending at max. */
int kt_trial_looks_sparse(int *looks, int max_looks, int min_reps, int max_reps);

typedef struct kt_design {
    int n_looks;                       /* planned looks (the schedule) */
    int looks[KT_LIMIT_LOOKS];         /* pairs at each look, ascending, last = max */
    int decisive[KT_LIMIT_LOOKS];      /* 0: too few pairs to reach a finite interval */
    double confidence[KT_LIMIT_LOOKS]; /* two-sided level of each decisive look's interval */
    double spent[KT_LIMIT_LOOKS];      /* cumulative alpha spent up to each look */
    double alpha;                      /* the point's whole error budget */
    kt_spending spending;
} kt_design;

/* Plans looks from 'min_reps' to 'max_reps' (the schedule of 'spending') with
 * error budget 'alpha' in (0, 1). A look whose pairs cannot give a finite signed-rank
 * interval at its level takes no budget (it is dropped and its share moves to the next).
 * Returns 0, or KT_EINVAL with a message when no look can decide at all. */
int kt_design_plan(kt_design *d, int min_reps, int max_reps, double alpha, kt_spending spending);

/* Index of the last decisive look at or before 'pairs' pairs, or -1. */
int kt_design_last_look(const kt_design *d, int pairs);

/* Smallest n for which the exact signed-rank interval at 'confidence' is finite. */
int kt_design_min_pairs(double confidence);

/* Whether the default design of a point of 'spec' (its repetitions, at kt_design_point_alpha)
 * can decide at all: kt_design_plan's 0, or its KT_EINVAL with the reason. The meaning stage of
 * spec/ asks it through kt_spec_use_design_check. */
int kt_design_check(const kt_spec *spec);

/* The error budget of one point: 1 - confidence, divided by the number of matrix points
 * under aggregate: all (Bonferroni across the points of a candidate). */
double kt_design_point_alpha(const kt_spec *spec);

#endif
