/* bench_validity.c - are ktrial's verdicts right? Runs many simulated experiments on the sim
 * backend (virtual clock: exact, fast, noise only where the params put it) and prints, per
 * scenario, how often each verdict came out. The README and docs/statistics.md keep the
 * tables.
 *
 * usage: bench_validity [RUNS_PER_SCENARIO [RUNS_FOR_THE_PAIRS_TABLE]]   (default 400, 400)
 * env:   KT_BENCH_JOBS=N   worker processes (default: the online cores)
 *        KT_BENCH_ONLY=S   run only the sections whose name contains S ("verdicts",
 *                          "compare" or "pairs"), or the verdict scenarios whose name does
 *                          ("7b." runs the geomean A/A alone)
 * Every rate is printed with its Monte-Carlo standard error sqrt(p (1 - p) / runs); a rate
 * of 0 with the one-sided 95% upper bound 3 / runs instead (the rule of three). */
#include "decide/aggregate.h"
#include "decide/compare.h"
#include "decide/sequential.h"
#include "decide/stats.h"
#include "measure/trial.h"
#include "measure/worker.h"
#include "spec/matrix.h"
#include "spec/spec.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

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
    double placement;      /* lognormal sigma of a factor per prepared state (sim 'placement') */
    int placements;        /* 1: each arm allocates through the backend, so it gets several
                            * prepared states (trial.c, add_placements); 0: one per set */
    int sets;              /* input sets; 0 means 1 */
    kt_spending spending;
} scenario;

typedef struct tally {
    int keep, reject, inconclusive, order_warnings, points_wrong, at_look, regressions, flips;
    int regressions_unspread; /* compare's regressions with no run's placement spread counted */
    double pairs_sum, pairs_sq;
} tally;

static void tally_add(tally *a, const tally *b)
{
    a->keep += b->keep;
    a->reject += b->reject;
    a->inconclusive += b->inconclusive;
    a->order_warnings += b->order_warnings;
    a->points_wrong += b->points_wrong;
    a->at_look += b->at_look;
    a->regressions += b->regressions;
    a->regressions_unspread += b->regressions_unspread;
    a->flips += b->flips;
    a->pairs_sum += b->pairs_sum;
    a->pairs_sq += b->pairs_sq;
}

/* "12.50% ± 1.65" (the Monte-Carlo standard error), or "0% (< 0.75)" for no event. */
static const char *rate(char *buf, size_t size, int events, int runs)
{
    double p = (double)events / runs;
    if (events == 0)
        snprintf(buf, size, "0%% (< %.2g%%)", 300.0 / runs);
    else
        snprintf(buf, size, "%.2f%% ± %.2f", 100 * p, 100 * sqrt(p * (1 - p) / runs));
    return buf;
}

typedef int (*experiment_fn)(tally *t, const void *ctx, int i);

static int jobs(void)
{
    const char *e = getenv("KT_BENCH_JOBS");
    long n = e ? atol(e) : sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > 64 ? 64 : (int)n;
}

/* Runs experiments 0..runs-1 of 'fn' in forked workers (experiment i in worker i mod J) and
 * sums their tallies; any failure exits the benchmark. */
static tally run_parallel(experiment_fn fn, const void *ctx, int runs, const char *name)
{
    int J = jobs(), fds[64];
    pid_t pids[64];
    tally sum = {0};
    if (J > runs)
        J = runs;
    fflush(stdout); /* or the workers would print it again */
    for (int j = 0; j < J; j++) {
        int p[2];
        if (pipe(p) < 0 || (pids[j] = fork()) < 0) {
            perror("bench_validity: fork");
            exit(1);
        }
        if (pids[j] == 0) {
            close(p[0]);
            tally t = {0};
            for (int i = j; i < runs; i += J)
                if (fn(&t, ctx, i) < 0)
                    _exit(1);
            _exit(write(p[1], &t, sizeof(t)) == (ssize_t)sizeof(t) ? 0 : 1);
        }
        close(p[1]);
        fds[j] = p[0];
    }
    int failed = 0;
    for (int j = 0; j < J; j++) {
        tally t;
        int status;
        failed |= read(fds[j], &t, sizeof(t)) != (ssize_t)sizeof(t);
        close(fds[j]);
        waitpid(pids[j], &status, 0);
        failed |= !WIFEXITED(status) || WEXITSTATUS(status) != 0;
        if (!failed)
            tally_add(&sum, &t);
    }
    if (failed) {
        fprintf(stderr, "bench_validity: scenario '%s' failed to run\n", name);
        exit(1);
    }
    return sum;
}

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
             "inputs: {distribution: normal, seed: %llu, sets: %d}\n"
             "baseline: {variant: lognormal, params: {median_us: %g, spread: %g, drift: %g, "
             "tick_ns: %g, sleep_us: %g, placement: %g, extra_bytes: %d}}\n"
             "candidates:\n  - {name: cand, variant: lognormal, params: {median_us: %g, "
             "spread: %g, drift: %g, order_effect: %g, tick_ns: %g, sleep_us: %g, "
             "placement: %g, extra_bytes: %d}}\n"
             "trials: {warmup: 0, min_repetitions: %d, max_repetitions: %d, "
             "max_seconds_per_point: %g, order: %s, flush_cache: false}\n"
             "thresholds: {latency: {min_speedup: %g, confidence: 0.95}, aggregate: %s}\n",
             batches, (unsigned long long)seed, s->sets > 0 ? s->sets : 1, s->base_us, s->spread,
             drift, s->tick_ns, s->sleep_us, s->placement, s->placements ? 64 : 0, s->cand_us,
             s->spread, drift, s->order_effect, s->tick_ns, s->sleep_us, s->placement,
             s->placements ? 64 : 0, s->min_reps, s->max_reps,
             s->max_seconds > 0 ? s->max_seconds : 1000, s->order, s->min_speedup,
             s->aggregate ? s->aggregate : "all");
    kt_diag diag;
    kt_diag_init(&diag);
    kt_spec *spec = NULL;
    kt_run_result run;
    memset(&run, 0, sizeof(run));
    int rc = -1;
    double pairs = 0;
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
        pairs += (double)c->n_pairs / (double)m->n;
        t->order_warnings += c->order_warning;
        t->points_wrong += c->verdict != KT_VERDICT_INCONCLUSIVE;
        kt_design d;
        if (kt_design_plan(&d, s->min_reps, s->max_reps, kt_design_point_alpha(spec),
                           s->spending) == 0)
            for (int l = 0; l < d.n_looks; l++)
                t->at_look += d.looks[l] == (int)c->n_pairs;
    }
    t->pairs_sum += pairs;
    t->pairs_sq += pairs * pairs;
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

static int scenario_experiment(tally *t, const void *ctx, int i)
{
    return run_one(t, ctx, seed_of(i), NULL);
}

static tally run_scenario(const scenario *s, int runs)
{
    return run_parallel(scenario_experiment, s, runs, s->name);
}

static void row(const scenario *s, const tally *t, int runs)
{
    char k[48], r[48], wrong[48];
    printf("| %s | %s | %s | %s | %.1f%% | %.1f%% | %s | %.1f |\n", s->name, s->expect,
           rate(k, sizeof(k), t->keep, runs), rate(r, sizeof(r), t->reject, runs),
           100.0 * t->inconclusive / runs, 100.0 * t->order_warnings / runs,
           rate(wrong, sizeof(wrong), t->keep + t->reject, runs), t->pairs_sum / runs);
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
    s.min_reps = 7; /* the default min_repetitions: the default design's first look */
    s.max_reps = 200;
    return s;
}

typedef struct rerun {
    const scenario *old_s, *new_s;
    int other_seed;
} rerun;

/* compare on reruns: OLD with seed i, NEW (its own times) with seed i or another one. */
static int rerun_experiment(tally *t, const void *ctx, int i)
{
    const rerun *r = ctx;
    kt_run_result a, b;
    tally ignore = {0};
    if (run_one(&ignore, r->old_s, seed_of(i), &a) < 0)
        return -1;
    if (run_one(&ignore, r->new_s, r->other_seed ? seed_of(i) ^ 0x5eedull : seed_of(i), &b) < 0) {
        kt_run_result_free(&a);
        return -1;
    }
    kt_speed_change sc;
    const kt_candidate_result *co = &a.points[0].cands[0], *cn = &b.points[0].cands[0];
    kt_compare_candidate(&sc, co, cn, 0.95, 0.01);
    t->regressions += sc.regression;
    kt_candidate_result co0 = *co, cn0 = *cn; /* the same, as if neither run saw a spread */
    co0.placement_tau2 = cn0.placement_tau2 = 0;
    kt_compare_candidate(&sc, &co0, &cn0, 0.95, 0.01);
    t->regressions_unspread += sc.regression;
    t->flips += co->verdict == KT_VERDICT_KEEP && cn->verdict != KT_VERDICT_KEEP;
    kt_run_result_free(&a);
    kt_run_result_free(&b);
    return 0;
}

static void compare_scenario(const char *name, const scenario *old_s, const scenario *new_s,
                             int other_seed, int runs)
{
    rerun r = {old_s, new_s, other_seed};
    tally t = run_parallel(rerun_experiment, &r, runs, name);
    char a[48], b[48], c[48];
    printf("| %s | %s | %s | %s |\n", name, rate(a, sizeof(a), t.regressions, runs),
           rate(c, sizeof(c), t.regressions_unspread, runs), rate(b, sizeof(b), t.flips, runs));
}

/* Fixed n of the normal power model for a two-sided test at level 0.05 and power 'p' on
 * paired log ratios with mean 'delta' and sd 'sd', scaled by 1 / ARE = pi / 3 (the signed-rank
 * test needs that many more pairs than the t test on normal data). */
static double model_fixed_n(double p, double delta, double sd)
{
    double z = kt_stats_normal_quantile(0.975) + kt_stats_normal_quantile(p);
    return M_PI / 3 * (z * sd / delta) * (z * sd / delta);
}

static int section(const char *name)
{
    const char *only = getenv("KT_BENCH_ONLY");
    return !only || !*only || strstr(name, only);
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
    scenario scenarios[20];
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
    size_t budget_i = n;
    scenarios[n] = base("9. A/A, time budget runs out between looks", aa_target);
    scenarios[n].sleep_us = 40;
    scenarios[n++].max_seconds = 0.0025;
    /* where a kernel's buffers lie: a fixed factor per prepared state, sigma 1% (about what
     * tests/bench/aa_cpu.py measured between prepared states of dense on this project's CPU) */
    scenarios[n] =
        base("10a. A/A, each prepared state 1% off (sigma), 8 states per arm and set", aa_target);
    scenarios[n].placement = 0.01;
    scenarios[n].placements = 1;
    scenarios[n++].sets = 2;
    scenarios[n] = base("10b. the same, true 3% speedup", "KEEP (power)");
    scenarios[n].placement = 0.01;
    scenarios[n].placements = 1;
    scenarios[n].sets = 2;
    scenarios[n++].base_us = 103;
    scenarios[n] = base("10c. A/A, each prepared state 1% off, one state per set (a costly "
                        "prepare), 2 sets",
                        "KEEP+REJECT <= 5% (the input sets are the clusters)");
    scenarios[n].placement = 0.01;
    scenarios[n++].sets = 2;
    scenarios[n] = base("10d. the same with 4 input sets", "KEEP+REJECT <= 5%");
    scenarios[n].placement = 0.01;
    scenarios[n++].sets = 4;
    printf("%d simulated experiments per scenario (%d for the pairs table), %d workers; "
           "spread = lognormal sigma of each call; confidence 0.95; a rate is shown as "
           "rate ± its Monte-Carlo standard error\n",
           runs, power_runs, jobs());
    int all_verdicts = section("verdicts"), any_verdict = all_verdicts;
    for (size_t i = 0; i < n; i++)
        any_verdict |= section(scenarios[i].name);
    if (any_verdict) {
        printf("\nverdicts:\n\n| scenario | target | KEEP | REJECT | INCONCLUSIVE | order warning "
               "| KEEP+REJECT | mean pairs |\n|---|---|---|---|---|---|---|---|\n");
        tally budget = {0}, multi_all = {0};
        for (size_t i = 0; i < n; i++) {
            if (!all_verdicts && !section(scenarios[i].name))
                continue;
            tally t = run_scenario(&scenarios[i], runs);
            row(&scenarios[i], &t, runs);
            if (i == multi)
                multi_all = t;
            if (i == budget_i)
                budget = t;
        }
        if (all_verdicts) {
            char a[48];
            printf("\n7a: points with a wrong verdict: %s of %d; 9: verdicts at a planned look: "
                   "%.1f%% of %d (mean %.1f pairs)\n",
                   rate(a, sizeof(a), multi_all.points_wrong, 6 * runs), 6 * runs,
                   100.0 * budget.at_look / runs, runs, budget.pairs_sum / runs);
        }
    }

    if (section("compare")) {
        printf("\ncompare on reruns of unchanged code (threshold 1%%, 95%%), one point:\n\n");
        printf("| rerun | false regressions | without the runs' placement spread | KEEP that "
               "became something else |\n|---|---|---|---|\n");
        scenario aa = base("aa", ""), marg = aa, slow = aa, marg_slow;
        marg.base_us = 103;
        marg_slow = marg;
        slow.base_us = slow.cand_us = 103;
        marg_slow.base_us = 103 * 1.03;
        marg_slow.cand_us = 100 * 1.03;
        compare_scenario("A/A, same seed", &aa, &aa, 0, runs);
        compare_scenario("A/A, other seed", &aa, &aa, 1, runs);
        compare_scenario("A/A, same seed, every call 3% slower", &aa, &slow, 0, runs);
        compare_scenario("A/A, other seed, every call 3% slower", &aa, &slow, 1, runs);
        compare_scenario("marginal 3% candidate, other seed", &marg, &marg, 1, runs);
        compare_scenario("marginal 3% candidate, other seed, every call 3% slower", &marg,
                         &marg_slow, 1, runs);
        /* tight pairs on prepared states 1% apart (sigma, as scenario 10a): the runs' speedups
         * differ by where their states lay, which thousands of pairs resolve */
        scenario placed = aa;
        placed.spread = 0.02;
        placed.max_reps = 1000;
        placed.placement = 0.01;
        placed.placements = 1;
        placed.sets = 2;
        compare_scenario("A/A, other seed, spread 2%, 1000 pairs, prepared states 1% apart "
                         "(sigma, 8 per arm and set, 2 sets)",
                         &placed, &placed, 1, runs);
    }

    if (!section("pairs"))
        return 0;
    printf("\npairs to a verdict, spread 0.05, looks from 7 (the default design) or 10 (the "
           "older ones) to 200, %d experiments per row. "
           "'/ fixed n' divides the mean pairs by the fixed n that reaches the same KEEP rate: "
           "simulated (the sweep below, interpolated) and from the normal power model "
           "(pi/3 ((z_0.975 + z_power) sd / delta)^2, power capped at 1 - 1/(2 runs)):\n\n",
           power_runs);
    printf("| true speedup | design | KEEP | mean pairs | / fixed n (sim) | / fixed n (model) |\n"
           "|---|---|---|---|---|---|\n");
    static const double speedups[] = {1.10, 1.03};
    enum { SWEEP = 11 };
    static const int fixed[2][SWEEP] = {{6, 7, 8, 9, 10, 11, 12, 14, 16, 20, 25},
                                        {40, 60, 80, 100, 120, 140, 160, 180, 200, 240, 300}};
    enum { DESIGNS = 6 };
    static const kt_spending designs[DESIGNS] = {KT_SPEND_FRONT,         KT_SPEND_HSD,
                                                 KT_SPEND_POCOCK,        KT_SPEND_OBRIEN_FLEMING,
                                                 KT_SPEND_POCOCK_SPARSE, KT_SPEND_BONFERRONI};
    /* the older designs as they ran: from the old default min_repetitions of 10 */
    static const int first_look[DESIGNS] = {7, 10, 10, 10, 10, 10};
    static const char *const names[DESIGNS] = {
        "front-loaded, dense looks from 7 (default)",
        "Hwang-Shih-DeCani gamma 1, dense looks from 10 (previous default)",
        "Pocock-type, dense looks from 10",
        "O'Brien-Fleming-type, dense looks from 10",
        "Pocock-type, x1.5 looks from 10 (second design)",
        "Bonferroni over x1.5 looks from 10 (first design)"};
    for (int e = 0; e < 2; e++) {
        scenario s = base("power", "");
        s.base_us = 100 * speedups[e];
        double keep[SWEEP], delta = log(speedups[e]), sd = 0.05 * sqrt(2.0);
        for (int i = 0; i < SWEEP; i++) {
            scenario f = s;
            f.min_reps = f.max_reps = fixed[e][i];
            tally t = run_scenario(&f, power_runs);
            keep[i] = (double)t.keep / power_runs;
        }
        for (int d = 0; d < DESIGNS; d++) {
            s.spending = designs[d];
            s.min_reps = first_look[d];
            tally t = run_scenario(&s, power_runs);
            double p = (double)t.keep / power_runs, need = fixed_n_for(p, fixed[e], keep, SWEEP);
            double cap = p < 1 - 0.5 / power_runs ? p : 1 - 0.5 / power_runs;
            double model = model_fixed_n(cap, delta, sd), mean = t.pairs_sum / power_runs;
            double se = sqrt((t.pairs_sq / power_runs - mean * mean) / power_runs);
            char k[48];
            printf("| %.2f | %s | %s | %.1f ± %.1f | %.2f (n = %.1f) | %.2f (n = %.1f) |\n",
                   speedups[e], names[d], rate(k, sizeof(k), t.keep, power_runs), mean, se,
                   mean / need, need, mean / model, model);
        }
        for (int i = 0; i < SWEEP; i++)
            printf("| %.2f | fixed n = %d | %.1f%% | %d | | |\n", speedups[e], fixed[e][i],
                   100 * keep[i], fixed[e][i]);
    }
    return 0;
}
