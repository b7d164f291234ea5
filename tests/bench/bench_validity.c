/* bench_validity.c - are ktrial's verdicts right? Runs many simulated experiments on the sim
 * backend (virtual clock: exact, fast, noise only where the params put it) and prints, per
 * scenario, how often each verdict came out. The README keeps the table.
 *
 * usage: bench_validity [RUNS_PER_SCENARIO]   (default 200) */
#include "spec/matrix.h"
#include "spec/spec.h"
#include "measure/trial.h"
#include "measure/worker.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct scenario {
    const char *name;
    const char *expect;
    double base_us, cand_us, spread, drift, order_effect, min_speedup;
    const char *order;
    int min_reps, max_reps;
} scenario;

typedef struct tally {
    int keep, reject, inconclusive, order_warnings;
    double pairs_sum;
} tally;

static int run_one(tally *t, const scenario *s, uint64_t seed)
{
    char yaml[2048];
    /* drift is per second of virtual time: 'drift' here is the growth over the whole run */
    double run_s = 2.0 * s->max_reps * s->base_us * 1e-6;
    double drift = s->drift / run_s;
    snprintf(yaml, sizeof(yaml),
             "version: 1\nname: validity\nop: synthetic\nbackend: sim\ndtype: fp32\n"
             "batch_sizes: [1]\ncontext_lengths: [64]\n"
             "inputs: {distribution: normal, seed: %llu, sets: 1}\n"
             "baseline: {variant: lognormal, params: {median_us: %g, spread: %g, drift: %g}}\n"
             "candidates:\n  - {name: cand, variant: lognormal, params: {median_us: %g, "
             "spread: %g, drift: %g, order_effect: %g}}\n"
             "trials: {warmup: 0, min_repetitions: %d, max_repetitions: %d, "
             "max_seconds_per_point: 1000, order: %s, flush_cache: false}\n"
             "thresholds: {latency: {min_speedup: %g, confidence: 0.95}}\n",
             (unsigned long long)seed, s->base_us, s->spread, drift, s->cand_us, s->spread, drift,
             s->order_effect, s->min_reps, s->max_reps, s->order, s->min_speedup);
    kt_diag diag;
    kt_diag_init(&diag);
    kt_spec *spec = NULL;
    kt_matrix m = {0};
    int rc = -1;
    if (kt_spec_parse(&spec, "validity.yaml", yaml, strlen(yaml), NULL, &diag) < 0 ||
        kt_matrix_expand(&m, spec, &diag) < 0) {
        kt_diag_print(&diag, stderr);
        goto done;
    }
    kt_backend *b = NULL;
    if (kt_backend_open(&b, "sim", 1, kt_point_seed(spec, &m.points[0])) < 0)
        goto done;
    kt_point_result r;
    if (kt_trial_run_point(&r, spec, &m.points[0], b, NULL) == 0) {
        const kt_candidate_result *c = &r.cands[0];
        t->keep += c->verdict == KT_VERDICT_KEEP;
        t->reject += c->verdict == KT_VERDICT_REJECT;
        t->inconclusive += c->verdict == KT_VERDICT_INCONCLUSIVE;
        t->order_warnings += c->order_warning;
        t->pairs_sum += (double)c->n_pairs;
        rc = 0;
    }
    kt_point_result_free(&r);
    kt_backend_close(b);
done:
    kt_matrix_free(&m);
    kt_spec_free(spec);
    kt_diag_free(&diag);
    return rc;
}

static tally run_scenario(const scenario *s, int runs)
{
    tally t = {0};
    for (int i = 0; i < runs; i++)
        if (run_one(&t, s, 1000003ull * (uint64_t)(i + 1)) < 0) {
            fprintf(stderr, "bench_validity: scenario '%s' failed to run\n", s->name);
            exit(1);
        }
    return t;
}

static void row(const scenario *s, const tally *t, int runs)
{
    printf("| %s | %s | %.1f%% | %.1f%% | %.1f%% | %.1f%% | %.1f |\n", s->name, s->expect,
           100.0 * t->keep / runs, 100.0 * t->reject / runs, 100.0 * t->inconclusive / runs,
           100.0 * t->order_warnings / runs, t->pairs_sum / runs);
}

int main(int argc, char **argv)
{
    int runs = argc > 1 ? atoi(argv[1]) : 200;
    if (runs < 1)
        runs = 200;
    const scenario scenarios[] = {
        {"1. A/A, min_speedup 1.0", "KEEP+REJECT <= 5%", 100, 100, 0.05, 0, 0, 1.0, "random", 10,
         200},
        {"2. A/A, min_speedup 0.95 (no-regression gate)", "KEEP >= 95%", 100, 100, 0.05, 0, 0, 0.95,
         "random", 10, 200},
        {"3. true 10% speedup, min_speedup 1.0", "KEEP >= 95%", 110, 100, 0.05, 0, 0, 1.0, "random",
         10, 200},
        {"4a. A/A, +30% drift, random order", "KEEP+REJECT <= 5%", 100, 100, 0.05, 0.30, 0, 1.0,
         "random", 10, 200},
        {"4b. A/A, +30% drift, alternate (ABBA)", "KEEP+REJECT <= 5%", 100, 100, 0.05, 0.30, 0, 1.0,
         "alternate", 10, 200},
        {"4c. A/A, +30% drift, grouped (all A, then all B)", "shows the bias", 100, 100, 0.05, 0.30,
         0, 1.0, "grouped", 10, 200},
        {"5. A/A, 5% order effect on the candidate", "order warning fires", 100, 100, 0.05, 0, 0.05,
         1.0, "random", 10, 200},
    };
    size_t n = sizeof(scenarios) / sizeof(scenarios[0]);
    printf("%d simulated experiments per scenario; spread = lognormal sigma of each call; "
           "confidence 0.95\n\n",
           runs);
    printf("| scenario | target | KEEP | REJECT | INCONCLUSIVE | order warning | mean pairs |\n");
    printf("|---|---|---|---|---|---|---|\n");
    for (size_t i = 0; i < n; i++) {
        tally t = run_scenario(&scenarios[i], runs);
        row(&scenarios[i], &t, runs);
    }

    /* 6. adaptive stopping against fixed-n designs, at a 10% and a 3% true speedup */
    printf("\n6. adaptive stopping against fixed-n designs (one look, no adjustment), "
           "spread 0.05:\n\n");
    printf("| true speedup | design | KEEP | mean pairs |\n|---|---|---|---|\n");
    static const double speedups[] = {1.10, 1.03};
    static const int fixed[2][5] = {{6, 8, 10, 15, 20}, {20, 40, 60, 80, 100}};
    for (int e = 0; e < 2; e++) {
        scenario s = scenarios[2];
        s.base_us = 100 * speedups[e];
        tally t = run_scenario(&s, runs);
        printf("| %.2f | adaptive, looks from 10 to 200 | %.1f%% | %.1f |\n", speedups[e],
               100.0 * t.keep / runs, t.pairs_sum / runs);
        for (int i = 0; i < 5; i++) {
            s.min_reps = s.max_reps = fixed[e][i];
            t = run_scenario(&s, runs);
            printf("| %.2f | fixed n = %d | %.1f%% | %.1f |\n", speedups[e], fixed[e][i],
                   100.0 * t.keep / runs, t.pairs_sum / runs);
        }
    }
    return 0;
}
