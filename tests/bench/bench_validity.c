/* bench_validity.c - are ktrial's verdicts right? Runs many simulated experiments on the sim
 * backend (virtual clock: exact, fast, noise only where the params put it) and prints, per
 * scenario, how often each verdict came out. The README and docs/statistics.md keep the
 * tables.
 *
 * usage: bench_validity [RUNS_PER_SCENARIO [RUNS_FOR_THE_PAIRS_TABLE]]   (default 400, 400) */
#include "decide/aggregate.h"
#include "decide/compare.h"
#include "measure/trial.h"
#include "measure/worker.h"
#include "spec/matrix.h"
#include "spec/spec.h"

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
    int points;            /* matrix points (batch sizes 1..points); 0 means 1 */
    const char *aggregate; /* NULL: all */
    double tick_ns;        /* sim timer tick, 0 exact */
    double sleep_us;       /* real time per call, with max_seconds for a budget that runs out */
    double max_seconds;    /* 0: 1000 */
    kt_spending spending;
} scenario;

typedef struct tally {
    int keep, reject, inconclusive, order_warnings, points_wrong, at_look;
    double pairs_sum;
} tally;

/* One experiment: every point of the scenario's matrix, aggregated. 'keep_run' (optional)
 * receives the run for a later compare; the caller frees it. */
static int run_one(tally *t, const scenario *s, uint64_t seed, kt_run_result *keep_run)
{
    char yaml[2048], batches[64] = "1";
    int points = s->points > 0 ? s->points : 1;
    for (int i = 2; i <= points; i++)
        snprintf(batches + strlen(batches), sizeof(batches) - strlen(batches), ", %d", i);
    /* drift is per second of virtual time: 'drift' here is the growth over the whole run */
    double run_s = 2.0 * s->max_reps * s->base_us * 1e-6;
    double drift = s->drift / run_s;
    snprintf(yaml, sizeof(yaml),
             "version: 1\nname: validity\nop: synthetic\nbackend: sim\ndtype: fp32\n"
             "batch_sizes: [%s]\ncontext_lengths: [64]\n"
             "inputs: {distribution: normal, seed: %llu, sets: 1}\n"
             "baseline: {variant: lognormal, params: {median_us: %g, spread: %g, drift: %g, "
             "tick_ns: %g, sleep_us: %g}}\n"
             "candidates:\n  - {name: cand, variant: lognormal, params: {median_us: %g, "
             "spread: %g, drift: %g, order_effect: %g, tick_ns: %g, sleep_us: %g}}\n"
             "trials: {warmup: 0, min_repetitions: %d, max_repetitions: %d, "
             "max_seconds_per_point: %g, order: %s, flush_cache: false}\n"
             "thresholds: {latency: {min_speedup: %g, confidence: 0.95}, aggregate: %s}\n",
             batches, (unsigned long long)seed, s->base_us, s->spread, drift, s->tick_ns,
             s->sleep_us, s->cand_us, s->spread, drift, s->order_effect, s->tick_ns, s->sleep_us,
             s->min_reps, s->max_reps, s->max_seconds > 0 ? s->max_seconds : 1000, s->order,
             s->min_speedup, s->aggregate ? s->aggregate : "all");
    kt_diag diag;
    kt_diag_init(&diag);
    kt_spec *spec = NULL;
    kt_run_result run;
    memset(&run, 0, sizeof(run));
    int rc = -1;
    if (kt_spec_parse(&spec, "validity.yaml", yaml, strlen(yaml), NULL, &diag) < 0) {
        kt_diag_print(&diag, stderr);
        goto done;
    }
    const kt_matrix *m = spec->matrix;
    run.points = calloc(m->n, sizeof(*run.points));
    kt_trial_hooks hooks;
    memset(&hooks, 0, sizeof(hooks));
    hooks.spending = s->spending;
    for (size_t i = 0; run.points && i < m->n; i++) {
        kt_backend *b = NULL;
        if (kt_backend_open(&b, "sim", 1, kt_point_seed(spec, &m->points[i])) < 0)
            goto done;
        int err = kt_trial_run_point(&run.points[i], spec, &m->points[i], b, &hooks);
        kt_backend_close(b);
        run.n_points++;
        if (err < 0)
            goto done;
        const kt_candidate_result *c = &run.points[i].cands[0];
        t->pairs_sum += (double)c->n_pairs / (double)m->n;
        t->order_warnings += c->order_warning;
        t->points_wrong += c->verdict != KT_VERDICT_INCONCLUSIVE;
        int looks[KT_LIMIT_LOOKS],
            nl = kt_trial_looks(looks, KT_LIMIT_LOOKS, s->min_reps, s->max_reps);
        for (int l = 0; l < nl; l++)
            t->at_look += looks[l] == (int)c->n_pairs;
    }
    if (kt_run_aggregate(&run, spec) < 0)
        goto done;
    t->keep += run.cands[0].verdict == KT_VERDICT_KEEP;
    t->reject += run.cands[0].verdict == KT_VERDICT_REJECT;
    t->inconclusive += run.cands[0].verdict == KT_VERDICT_INCONCLUSIVE;
    rc = 0;
done:
    if (keep_run && rc == 0)
        *keep_run = run;
    else
        kt_run_result_free(&run);
    kt_spec_free(spec);
    kt_diag_free(&diag);
    return rc;
}

static uint64_t seed_of(int i)
{
    return 1000003ull * (uint64_t)(i + 1);
}

static tally run_scenario(const scenario *s, int runs)
{
    tally t = {0};
    for (int i = 0; i < runs; i++)
        if (run_one(&t, s, seed_of(i), NULL) < 0) {
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

/* The common case: 100 us against 100 us, spread 0.05, random order, looks 10..200. */
static scenario base(const char *name, const char *expect)
{
    scenario s;
    memset(&s, 0, sizeof(s));
    s.name = name;
    s.expect = expect;
    s.base_us = s.cand_us = 100;
    s.spread = 0.05;
    s.min_speedup = 1.0;
    s.order = "random";
    s.min_reps = 10;
    s.max_reps = 200;
    return s;
}

/* compare on reruns: OLD with seed i, NEW with 'new_seed(i)' and NEW's times scaled. */
static void compare_scenario(const char *name, const scenario *old_s, const scenario *new_s,
                             int other_seed, int runs)
{
    int regressions = 0, flips = 0;
    for (int i = 0; i < runs; i++) {
        kt_run_result a, b;
        tally t = {0};
        if (run_one(&t, old_s, seed_of(i), &a) < 0 ||
            run_one(&t, new_s, other_seed ? seed_of(i) ^ 0x5eedull : seed_of(i), &b) < 0) {
            fprintf(stderr, "bench_validity: compare scenario '%s' failed\n", name);
            exit(1);
        }
        kt_speed_change sc;
        const kt_candidate_result *co = &a.points[0].cands[0], *cn = &b.points[0].cands[0];
        kt_compare_candidate(&sc, co, cn, 0.95, 0.01);
        regressions += sc.regression;
        flips += co->verdict == KT_VERDICT_KEEP && cn->verdict != KT_VERDICT_KEEP;
        kt_run_result_free(&a);
        kt_run_result_free(&b);
    }
    printf("| %s | %.1f%% | %.1f%% |\n", name, 100.0 * regressions / runs, 100.0 * flips / runs);
}

/* Fixed n that reaches the KEEP rate 'power', by linear interpolation over a sweep. */
static double fixed_n_for(double power, const int *n, const double *keep, int count)
{
    for (int i = 0; i < count; i++) {
        if (keep[i] >= power) {
            if (i == 0)
                return n[0];
            double f = (power - keep[i - 1]) / (keep[i] - keep[i - 1]);
            return n[i - 1] + f * (n[i] - n[i - 1]);
        }
    }
    return NAN; /* beyond the sweep */
}

int main(int argc, char **argv)
{
    int runs = argc > 1 ? atoi(argv[1]) : 400;
    if (runs < 1)
        runs = 400;
    int power_runs = argc > 2 ? atoi(argv[2]) : runs;
    if (power_runs < 1)
        power_runs = runs;
    scenario scenarios[16];
    size_t n = 0;
    const char *aa_target = "KEEP+REJECT <= 5%";
    scenarios[n++] = base("1. A/A, min_speedup 1.0", aa_target);
    scenarios[n] = base("2. A/A, min_speedup 0.95 (no-regression gate)", "KEEP >= 95%");
    scenarios[n++].min_speedup = 0.95;
    scenarios[n] = base("3. true 10% speedup, min_speedup 1.0", "KEEP >= 95%");
    scenarios[n++].base_us = 110;
    scenarios[n] = base("4a. A/A, +30% drift, random order", aa_target);
    scenarios[n++].drift = 0.30;
    scenarios[n] = base("4b. A/A, +30% drift, alternate (ABBA)", aa_target);
    scenarios[n].drift = 0.30;
    scenarios[n++].order = "alternate";
    scenarios[n] =
        base("4c. A/A, +30% drift, grouped (all A, then all B)", "no verdict (INCONCLUSIVE)");
    scenarios[n].drift = 0.30;
    scenarios[n++].order = "grouped";
    scenarios[n] = base("5. A/A, 5% order effect on the candidate", "order warning fires");
    scenarios[n++].order_effect = 0.05;
    size_t multi = n;
    scenarios[n] = base("7a. A/A, 6 points, aggregate all", aa_target);
    scenarios[n++].points = 6;
    scenarios[n] = base("7b. A/A, 6 points, aggregate geomean", aa_target);
    scenarios[n].points = 6;
    scenarios[n++].aggregate = "geomean";
    static const char *const tick_names[] = {"8a. A/A, median 10 us, tick 250 ns",
                                             "8b. A/A, median 10 us, tick 500 ns",
                                             "8c. A/A, median 10 us, tick 1000 ns"};
    for (int i = 0; i < 3; i++) {
        scenarios[n] = base(tick_names[i], aa_target);
        scenarios[n].base_us = scenarios[n].cand_us = 10;
        scenarios[n++].tick_ns = 250 << i;
    }
    scenarios[n] = base("9. A/A, time budget runs out between looks", aa_target);
    scenarios[n].sleep_us = 40;
    scenarios[n++].max_seconds = 0.0025;
    printf("%d simulated experiments per scenario; spread = lognormal sigma of each call; "
           "confidence 0.95\n\n",
           runs);
    printf("| scenario | target | KEEP | REJECT | INCONCLUSIVE | order warning | mean pairs |\n");
    printf("|---|---|---|---|---|---|---|\n");
    tally budget = {0}, multi_all = {0};
    for (size_t i = 0; i < n; i++) {
        tally t = run_scenario(&scenarios[i], runs);
        row(&scenarios[i], &t, runs);
        if (i == multi)
            multi_all = t;
        if (i == n - 1)
            budget = t;
    }
    printf("\n7a: points with a wrong verdict: %.2f%% of %d; 9: verdicts at a planned look: "
           "%.1f%% of %d (mean %.1f pairs)\n",
           100.0 * multi_all.points_wrong / (6.0 * runs), 6 * runs, 100.0 * budget.at_look / runs,
           runs, budget.pairs_sum / runs);

    /* 10. compare on A/A reruns */
    printf("\n10. compare on reruns of unchanged code (threshold 1%%, 95%%), one point:\n\n");
    printf("| rerun | false regressions | KEEP that became something else |\n|---|---|---|\n");
    scenario aa = base("aa", ""), marg = aa, slow = aa, marg_slow;
    marg.base_us = 103;
    marg_slow = marg;
    slow.base_us = slow.cand_us = 103;
    marg_slow.base_us = 103 * 1.03;
    marg_slow.cand_us = 100 * 1.03;
    compare_scenario("A/A, same seed", &aa, &aa, 0, runs);
    compare_scenario("A/A, other seed", &aa, &aa, 1, runs);
    compare_scenario("A/A, other seed, every call 3% slower", &aa, &slow, 1, runs);
    compare_scenario("marginal 3% candidate, other seed", &marg, &marg, 1, runs);
    compare_scenario("marginal 3% candidate, other seed, every call 3% slower", &marg, &marg_slow,
                     1, runs);

    /* 6. sequential designs against fixed-n designs */
    printf("\n6. (%d experiments per row) pairs to a verdict, spread 0.05: the spending design "
           "(Pocock-type), the old "
           "Bonferroni split, and fixed-n designs (one look):\n\n",
           power_runs);
    printf("| true speedup | design | KEEP | mean pairs | / fixed n at the same KEEP rate |\n"
           "|---|---|---|---|---|\n");
    static const double speedups[] = {1.10, 1.03};
    static const int fixed[2][7] = {{6, 8, 10, 12, 15, 20, 25}, {40, 60, 80, 100, 120, 140, 160}};
    for (int e = 0; e < 2; e++) {
        scenario s = base("power", "");
        s.base_us = 100 * speedups[e];
        double keep[7];
        for (int i = 0; i < 7; i++) {
            scenario f = s;
            f.min_reps = f.max_reps = fixed[e][i];
            tally t = run_scenario(&f, power_runs);
            keep[i] = (double)t.keep / power_runs;
        }
        static const kt_spending designs[] = {KT_SPEND_POCOCK, KT_SPEND_OBRIEN_FLEMING,
                                              KT_SPEND_BONFERRONI};
        static const char *const names[] = {"spending, Pocock-type (default)",
                                            "spending, O'Brien-Fleming-type",
                                            "Bonferroni over looks (old)"};
        for (int d = 0; d < 3; d++) {
            s.spending = designs[d];
            tally t = run_scenario(&s, power_runs);
            double p = (double)t.keep / power_runs, need = fixed_n_for(p, fixed[e], keep, 7);
            printf("| %.2f | %s, looks 10..200 | %.1f%% | %.1f | %.2f (fixed n = %.0f) |\n",
                   speedups[e], names[d], 100 * p, t.pairs_sum / runs, t.pairs_sum / runs / need,
                   need);
        }
        for (int i = 0; i < 7; i++)
            printf("| %.2f | fixed n = %d | %.1f%% | %d | |\n", speedups[e], fixed[e][i],
                   100 * keep[i], fixed[e][i]);
    }
    return 0;
}
