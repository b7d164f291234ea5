/* test_trial.c - one matrix point end to end on the sim backend: the look schedule, exact
 * statistics from deterministic durations, early stopping, numerics and memory limits, failed
 * arms and a failed baseline, skip/step/progress/quick/interrupt hooks, and the three orders
 * (grouped, ABBA, seeded random), checked against what the virtual clock saw. Specs are
 * parsed from inline YAML; one test swaps in a variant defined here. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "spec/matrix.h"
#include "sim/sim.h"
#include "measure/trial.h"
#include "decide/sequential.h"
#include "arm/kernel/kernel_kind.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char point_id[192];

/* A synthetic/sim spec over one point (b1, t64, fp32, 2 input sets). 'cands' is YAML list
 * items; 'trials' and 'thresholds' are flow-mapping bodies (NULL: defaults). */
static kt_spec *make_spec(const char *base, const char *cands, const char *trials,
                          const char *thresholds, int seed)
{
    char yaml[4096];
    snprintf(yaml, sizeof(yaml),
             "version: 1\nname: t\nop: synthetic\nbackend: sim\ndtype: fp32\n"
             "batch_sizes: [1]\ncontext_lengths: [64]\n"
             "inputs: {distribution: normal, seed: %d, sets: 2}\n"
             "baseline: {variant: lognormal, params: {%s}}\ncandidates:\n%s"
             "trials: {warmup: 1, max_seconds_per_point: 60, flush_cache: false, %s}\n"
             "thresholds: {%s}\n",
             seed, base, cands, trials ? trials : "min_repetitions: 10, max_repetitions: 200",
             thresholds ? thresholds : "");
    kt_diag diag;
    kt_diag_init(&diag);
    kt_spec *spec = NULL;
    int rc = kt_spec_parse(&spec, "t.yaml", yaml, strlen(yaml), NULL, &diag);
    kt_diag_print(&diag, stderr);
    kt_diag_free(&diag);
    assert_int_equal(rc, 0);
    return spec;
}

/* Runs the spec's only point on a fresh sim backend. */
static void run_point(kt_point_result *out, const kt_spec *spec, const kt_trial_hooks *hooks)
{
    kt_diag diag;
    kt_matrix m;
    kt_backend *backend = NULL;
    kt_diag_init(&diag);
    assert_int_equal(kt_matrix_expand(&m, spec, &diag), 0);
    kt_diag_free(&diag);
    assert_int_equal(m.n, 1);
    snprintf(point_id, sizeof(point_id), "%s", m.points[0].id);
    assert_int_equal(kt_backend_open(&backend, "sim", 1, 42), 0);
    assert_int_equal(kt_trial_run_point(out, spec, &m.points[0], backend, hooks), 0);
    assert_int_equal(backend->bytes_current, 0); /* every buffer and state released */
    kt_backend_close(backend);
    kt_matrix_free(&m);
}

static int has_reason(const kt_candidate_result *c, const char *a, const char *b)
{
    for (int r = 0; r < c->n_reasons; r++)
        if (strstr(c->reasons[r], a) && (!b || strstr(c->reasons[r], b)))
            return 1;
    return 0;
}

#define FIXED_100          "median_us: 100, spread: 0"
#define CAND(name, params) "  - {name: " name ", variant: lognormal, params: {" params "}}\n"

/* ---- the look schedule ------------------------------------------------------------------ */

static void test_looks(void **state)
{
    (void)state;
    int looks[KT_MAX_LOOKS];
    /* every pair from 10 to 20, then x1.2 (ceil of the running product), then max */
    const int expect[] = {10, 11, 12, 13, 14, 15, 16, 17,  18,  19,  20,  24,
                          29, 35, 42, 50, 60, 72, 86, 104, 124, 149, 179, 200};
    int n = kt_trial_looks(looks, KT_MAX_LOOKS, 10, 200);
    assert_int_equal(n, 24);
    assert_memory_equal(looks, expect, sizeof(expect));
    const int sparse[] = {10, 15, 23, 34, 51, 76, 114, 171, 200};
    assert_int_equal(kt_trial_looks_sparse(looks, KT_MAX_LOOKS, 10, 200), 9);
    assert_memory_equal(looks, sparse, sizeof(sparse));
    assert_int_equal(kt_trial_looks(looks, KT_MAX_LOOKS, 20, 20), 1);
    assert_int_equal(looks[0], 20);
    assert_int_equal(kt_trial_looks(looks, KT_MAX_LOOKS, 50, 20), 1); /* min > max */
    assert_int_equal(looks[0], 20);
    n = kt_trial_looks(looks, 3, 10, 200); /* capped: the last look is still max */
    assert_int_equal(n, 3);
    assert_true(looks[0] == 10 && looks[1] == 11 && looks[2] == 200);
    n = kt_trial_looks(looks, KT_MAX_LOOKS, 2, 5); /* 2, 3, 4 dense, then 5 is max itself */
    assert_int_equal(n, 4);
    assert_true(looks[0] == 2 && looks[1] == 3 && looks[2] == 4 && looks[3] == 5);
    kt_trial_looks(looks, KT_MAX_LOOKS, 100, 1000); /* at most 16 dense looks */
    assert_true(looks[15] == 115 && looks[16] == 138);
    n = kt_trial_looks(looks, KT_MAX_LOOKS, 2, 1000000);
    assert_true(n > 2 && n <= KT_MAX_LOOKS && looks[n - 1] == 1000000);
    for (int i = 1; i < n; i++)
        assert_true(looks[i] > looks[i - 1]);
}

/* ---- exact statistics and early stopping ------------------------------------------------- */

static void test_deterministic_durations(void **state)
{
    (void)state;
    kt_spec *spec = make_spec(FIXED_100, CAND("fast", "median_us: 80, spread: 0"), NULL,
                              "latency: {min_speedup: 1.05}", 7);
    kt_point_result r;
    run_point(&r, spec, NULL);
    kt_candidate_result *c = &r.cands[0];
    assert_string_equal(r.error, "");
    assert_string_equal(r.stop_reason, "decided");
    assert_int_equal(c->n_pairs, 10); /* decided at the first look */
    assert_int_equal(r.repetitions, 10);
    assert_int_equal(c->looks, 1);
    assert_int_equal(c->stopped_early, 1);
    for (size_t i = 0; i < c->n_pairs; i++) {
        assert_true(c->pairs[i].base_ns == 100000 && c->pairs[i].cand_ns == 80000);
        assert_int_equal(c->pairs[i].rep, (int)i);
        assert_int_equal(c->pairs[i].input_set, (int)i % 2);
    }
    assert_true(fabs(c->speedup - 1.25) < 1e-12);
    assert_true(c->ci_low == c->speedup && c->ci_high == c->speedup);
    assert_true(fabs(c->shift.p_value - erfc(sqrt(5.0))) < 1e-12);
    /* the first look's level from the default design of 10..200: its first share alone */
    kt_design d;
    assert_int_equal(kt_design_plan(&d, 10, 200, 0.05, KT_SPEND_DEFAULT), 0);
    assert_true(d.decisive[0]);
    assert_true(c->confidence_used == d.confidence[0]);
    assert_true(fabs(c->confidence_used - (1 - KT_FRONT_FIRST * 0.05)) < 1e-9);
    assert_int_equal(c->verdict, KT_VERDICT_KEEP);
    assert_true(has_reason(c, "speedup 1.250 [1.250, 1.250] above 1.05", point_id));
    assert_int_equal(r.baseline.repeatable, -1); /* not asked for */
    assert_int_equal(r.baseline.n_sets, 2);
    assert_true(r.baseline.bytes == 2 * 64 * 4 && r.baseline.variant_bytes == 0);
    double speedup = c->speedup;
    kt_point_result_free(&r);

    /* min_speedup exactly at the measured speedup (a collapsed interval, every d tied)
     * never decides: not KEEP, not REJECT; one ulp below keeps, one ulp above rejects */
    spec->min_speedup = speedup;
    run_point(&r, spec, NULL);
    assert_int_equal(r.cands[0].verdict, KT_VERDICT_INCONCLUSIVE);
    kt_point_result_free(&r);
    spec->min_speedup = nextafter(speedup, 0);
    run_point(&r, spec, NULL);
    assert_int_equal(r.cands[0].verdict, KT_VERDICT_KEEP);
    kt_point_result_free(&r);
    spec->min_speedup = nextafter(speedup, 2);
    run_point(&r, spec, NULL);
    assert_int_equal(r.cands[0].verdict, KT_VERDICT_REJECT);
    assert_int_equal(r.cands[0].n_pairs, 10); /* rejected as early as it was kept */
    kt_point_result_free(&r);
    kt_spec_free(spec);
}

/* ---- numerics and memory ------------------------------------------------------------------ */

static void test_numerics_per_set(void **state)
{
    (void)state;
    kt_spec *spec = make_spec(FIXED_100,
                              CAND("wrong", "median_us: 50, spread: 0, rel_error: 0.01")
                                  CAND("close", "median_us: 50, spread: 0, rel_error: 1.0e-7")
                                      CAND("far", "median_us: 50, spread: 0, rel_error: 1.0e-6"),
                              NULL, "numerics: {max_rel_l2: 1.0e-3, max_error_vs_baseline: 4}", 7);
    kt_point_result r;
    run_point(&r, spec, NULL);
    const kt_candidate_result *wrong = &r.cands[0], *close = &r.cands[1], *far = &r.cands[2];
    for (int s = 0; s < 2; s++) {
        char set[32];
        snprintf(set, sizeof(set), "on input set %d at", s);
        assert_true(fabs(wrong->arm.numerics[s].rel_l2 - 0.01) < 1e-6);
        assert_true(has_reason(wrong, "above max_rel_l2 0.001", set));
    }
    assert_true(has_reason(wrong, "above max_rel_l2", point_id));
    assert_int_equal(wrong->verdict, KT_VERDICT_REJECT);
    /* an exact baseline: the ratio is against fp32's unit roundoff 2^-24 */
    assert_true(r.baseline.numerics[0].rel_l2 == 0 && r.baseline.numerics[1].rel_l2 == 0);
    assert_true(fabs(close->error_ratio - close->worst_rel_l2 / ldexp(1, -24)) < 1e-9);
    assert_true(close->error_ratio > 1 && close->error_ratio < 4);
    assert_int_equal(close->verdict, KT_VERDICT_KEEP);
    assert_true(far->error_ratio > 4);
    assert_int_equal(far->verdict, KT_VERDICT_REJECT);
    assert_true(has_reason(far, "above max_error_vs_baseline 4", point_id));
    kt_point_result_free(&r);
    kt_spec_free(spec);
}

static void test_memory_ratio(void **state)
{
    (void)state;
    kt_spec *spec = make_spec(FIXED_100 ", extra_bytes: 1000",
                              CAND("hog", "median_us: 50, spread: 0, extra_bytes: 4000")
                                  CAND("lean", "median_us: 50, spread: 0, extra_bytes: 1200"),
                              NULL, "memory: {max_ratio: 1.5}", 7);
    kt_point_result r;
    run_point(&r, spec, NULL);
    const double inst_bytes = 2 * 64 * 4;
    assert_true(r.baseline.variant_bytes == 1000);
    assert_true(r.baseline.bytes == inst_bytes + 1000);
    assert_true(r.cands[0].arm.variant_bytes == 4000); /* its own, not the baseline's */
    assert_true(r.cands[0].memory_ratio == (inst_bytes + 4000) / (inst_bytes + 1000));
    assert_int_equal(r.cands[0].verdict, KT_VERDICT_REJECT);
    assert_true(has_reason(&r.cands[0], "above max_ratio 1.5", point_id));
    assert_true(r.cands[1].memory_ratio == (inst_bytes + 1200) / (inst_bytes + 1000));
    assert_int_equal(r.cands[1].verdict, KT_VERDICT_KEEP);
    kt_point_result_free(&r);
    kt_spec_free(spec);
}

/* A variant whose every run differs in the last bit of element 0 from the previous one. */
typedef struct jitter_state {
    unsigned calls;
} jitter_state;

static int jitter_prepare(void **state, const kt_call *call)
{
    (void)call;
    *state = calloc(1, sizeof(jitter_state));
    return *state ? KT_OK : kt_error_code(KT_ENOMEM, "out of memory");
}

static int jitter_run(void *state, const kt_call *call)
{
    jitter_state *st = state;
    const kt_problem *p = call->problem;
    kt_sim_advance(call->backend, 50000);
    memcpy(call->outputs[0], call->inputs[0], (size_t)p->elems * sizeof(float));
    ((uint32_t *)call->outputs[0])[0] ^= st->calls++ & 1;
    return KT_OK;
}

static void jitter_release(void *state, kt_backend *backend)
{
    (void)backend;
    free(state);
}

static const kt_variant jitter = {"synthetic", "jitter",       "sim",      "not repeatable", NULL,
                                  0,           jitter_prepare, jitter_run, jitter_release,   NULL};

/* y = x on any backend, each arm counting its calls: the harness's calls, not a device's. */
static size_t copy_calls[2];

static int copy_run(size_t *calls, const kt_call *call)
{
    (*calls)++;
    memcpy(call->outputs[0], call->inputs[0], (size_t)call->problem->elems * sizeof(float));
    return KT_OK;
}

static int copy_run_base(void *state, const kt_call *call)
{
    (void)state;
    return copy_run(&copy_calls[0], call);
}

static int copy_run_cand(void *state, const kt_call *call)
{
    (void)state;
    return copy_run(&copy_calls[1], call);
}

static const kt_variant copy_base = {"synthetic",    "copy", "cpu",          "y = x, counted",
                                     NULL,           0,      jitter_prepare, copy_run_base,
                                     jitter_release, NULL};
static const kt_variant copy_cand = {"synthetic",    "copy", "cpu",          "y = x, counted",
                                     NULL,           0,      jitter_prepare, copy_run_cand,
                                     jitter_release, NULL};

/* Without the flush, every timed call on a real backend follows an untimed call of its own
 * arm, so the baseline (in every candidate's pairs) runs no warmer than a candidate; with the
 * flush, and on the sim, there is no such call. Counted through the calls a variant sees. */
static void test_unflushed_calls_are_primed(void **state)
{
    (void)state;
    size_t extra[2][2];
    for (int flush = 0; flush < 2; flush++) {
        kt_spec *spec =
            make_spec(FIXED_100, CAND("a", "median_us: 100"),
                      "min_repetitions: 12, max_repetitions: 12, profile: false", NULL, 3);
        spec->flush_cache = flush; /* make_spec's trials say false */
        spec->baseline.variant = &copy_base;
        spec->candidates[0].variant = &copy_cand;
        copy_calls[0] = copy_calls[1] = 0;
        snprintf(spec->backend, sizeof(spec->backend), "cpu");
        kt_diag diag;
        kt_matrix m;
        kt_backend *backend = NULL;
        kt_point_result r;
        kt_diag_init(&diag);
        assert_int_equal(kt_matrix_expand(&m, spec, &diag), 0);
        kt_diag_free(&diag);
        assert_int_equal(kt_backend_open(&backend, "cpu", 1, 42), 0);
        assert_int_equal(kt_trial_run_point(&r, spec, &m.points[0], backend, NULL), 0);
        assert_int_equal(r.cands[0].n_pairs, 12);
        /* beyond the checked calls (warmup and timed), one untimed call per timed one
         * without the flush, and in both the repeat probe's call after each of the first
         * timed calls (fresh-inputs) and the untimed calls that keep an arm from seeing its
         * previous call's inputs; the correctness step's calls are the same in both */
        extra[flush][0] = copy_calls[0] - (size_t)r.baseline.checked_calls;
        extra[flush][1] = copy_calls[1] - (size_t)r.cands[0].arm.checked_calls;
        assert_int_equal(r.cands[0].arm.checked_calls, r.baseline.checked_calls);
        kt_point_result_free(&r);
        kt_backend_close(backend);
        kt_matrix_free(&m);
        kt_spec_free(spec);
    }
    for (int arm = 0; arm < 2; arm++) {
        assert_true(extra[0][arm] >= 12 + KT_PROBE_FIRST);
        assert_true(extra[1][arm] >= KT_PROBE_FIRST);
        assert_true(extra[0][arm] > extra[1][arm]);
    }
}

static void test_bitwise_repeatable(void **state)
{
    (void)state;
    kt_spec *spec = make_spec(
        FIXED_100, CAND("jit", "median_us: 50") CAND("steady", "median_us: 50, spread: 0"), NULL,
        "numerics: {bitwise_repeatable: true}", 7);
    spec->candidates[0].variant = &jitter;
    kt_point_result r;
    run_point(&r, spec, NULL);
    assert_int_equal(r.baseline.repeatable, 1);
    assert_int_equal(r.cands[0].arm.repeatable, 0);
    assert_string_equal(r.cands[0].arm.variant, "jitter");
    assert_int_equal(r.cands[0].verdict, KT_VERDICT_REJECT);
    assert_true(has_reason(&r.cands[0], "bitwise_repeatable", point_id));
    assert_int_equal(r.cands[1].arm.repeatable, 1);
    assert_int_equal(r.cands[1].verdict, KT_VERDICT_KEEP);
    kt_point_result_free(&r);
    kt_spec_free(spec);
}

/* ---- failures ------------------------------------------------------------------------------ */

static void test_failed_arms(void **state)
{
    (void)state;
    kt_spec *spec = make_spec(
        FIXED_100,
        CAND("err", "median_us: 10, fail: error") CAND("nan", "median_us: 10, fail: nan")
            CAND("hole", "median_us: 10, fail: unwritten") CAND("ok", "median_us: 80, spread: 0"),
        NULL, NULL, 7);
    kt_point_result r;
    run_point(&r, spec, NULL);
    assert_string_equal(r.error, "");
    const char *expect[3] = {"run failed: injected failure (fail: error) (input set 0) at ",
                             "produced 1 NaN or Inf output elements on input set 0 at ",
                             "left 1 of 64 output elements unwritten on input set 0 at "};
    for (int k = 0; k < 3; k++) {
        const kt_candidate_result *c = &r.cands[k];
        assert_int_equal(c->arm.failed, 1);
        assert_int_equal(c->verdict, KT_VERDICT_REJECT);
        assert_int_equal(c->n_pairs, 0);
        if (!has_reason(c, expect[k], point_id))
            fail_msg("candidate %d: '%s'", k, c->reasons[0]);
    }
    assert_int_equal(r.cands[3].verdict, KT_VERDICT_KEEP);
    assert_int_equal(r.cands[3].n_pairs, 10);
    kt_point_result_free(&r);
    kt_spec_free(spec);
}

static void test_baseline_failure(void **state)
{
    (void)state;
    kt_spec *spec = make_spec("median_us: 100, fail: nan",
                              CAND("a", "median_us: 80") CAND("b", "median_us: 90"), NULL, NULL, 7);
    kt_point_result r;
    run_point(&r, spec, NULL);
    assert_string_equal(r.error, "baseline 'baseline' failed: check finite: produced 1 NaN or "
                                 "Inf output elements on input set 0");
    assert_string_equal(r.stop_reason, "failed");
    assert_int_equal(r.repetitions, 0);
    for (int k = 0; k < 2; k++) {
        assert_int_equal(r.cands[k].verdict, KT_VERDICT_INCONCLUSIVE);
        assert_int_equal(r.cands[k].n_pairs, 0);
        assert_true(has_reason(&r.cands[k], "not measured: baseline 'baseline' failed", point_id));
    }
    kt_point_result_free(&r);
    kt_spec_free(spec);
}

/* ---- hooks ------------------------------------------------------------------------------- */

typedef struct recorder {
    char steps[64][24];
    int n_steps;
    int progress[16][2];
    int n_progress;
} recorder;

static void on_step(void *ctx, int arm, const char *what)
{
    recorder *rec = ctx;
    if (rec->n_steps < 64)
        snprintf(rec->steps[rec->n_steps++], sizeof(rec->steps[0]), "%d %s", arm, what);
}

static void on_progress(void *ctx, int reps, int max_reps)
{
    recorder *rec = ctx;
    if (rec->n_progress < 16) {
        rec->progress[rec->n_progress][0] = reps;
        rec->progress[rec->n_progress++][1] = max_reps;
    }
}

static int recorded(const recorder *rec, const char *step)
{
    for (int i = 0; i < rec->n_steps; i++)
        if (strcmp(rec->steps[i], step) == 0)
            return 1;
    return 0;
}

static void test_skip_and_step_hooks(void **state)
{
    (void)state;
    kt_spec *spec = make_spec(FIXED_100,
                              CAND("crashy", "median_us: 10, fail: crash")
                                  CAND("fine", "median_us: 80, spread: 0"),
                              NULL, NULL, 7);
    int skip[2] = {1, 0};
    char reasons[2][320] = {"crashed with signal 11 (Segmentation fault) during correctness", ""};
    recorder rec = {0};
    kt_trial_hooks hooks = {on_step, on_progress, &rec, skip, reasons, NULL, 0, 0, KT_SPEND_HSD};
    kt_point_result r;
    run_point(&r, spec, &hooks); /* 'crashy' would kill this process if it ran */
    assert_int_equal(r.cands[0].verdict, KT_VERDICT_REJECT);
    assert_true(has_reason(&r.cands[0], "crashed with signal 11", point_id));
    assert_string_equal(r.cands[0].arm.name, "crashy");
    assert_int_equal(r.cands[0].n_pairs, 0);
    assert_int_equal(r.cands[1].verdict, KT_VERDICT_KEEP);
    /* start-up first: inputs and references per set (arm -1, the harness); then steps name
     * the arm about to run (0 baseline, k+1 candidate k) */
    assert_string_equal(rec.steps[0], "-1 inputs");
    assert_string_equal(rec.steps[1], "-1 inputs");
    assert_string_equal(rec.steps[2], "0 prepare");
    assert_string_equal(rec.steps[3], "0 correctness");
    assert_true(recorded(&rec, "2 prepare") && recorded(&rec, "2 correctness"));
    assert_true(recorded(&rec, "2 repetitions"));
    for (int i = 0; i < rec.n_steps; i++)
        assert_true(rec.steps[i][0] != '1');
    /* progress after the one look that decided */
    assert_int_equal(rec.n_progress, 1);
    assert_true(rec.progress[0][0] == 10 && rec.progress[0][1] == 200);
    kt_point_result_free(&r);
    kt_spec_free(spec);
}

static volatile int stop_flag;

static void stop_at_repetitions(void *ctx, int arm, const char *what)
{
    (void)ctx;
    (void)arm;
    if (strcmp(what, "repetitions") == 0)
        stop_flag = 1;
}

static void test_quick_and_interrupt(void **state)
{
    (void)state;
    /* identical arms never beat min_speedup 1.0's interval from below: no early stop */
    kt_spec *spec =
        make_spec("median_us: 100", CAND("same", "median_us: 100"),
                  "min_repetitions: 200, max_repetitions: 200", "latency: {min_speedup: 1.0}", 7);
    kt_trial_hooks hooks = {0};
    hooks.quick = 1;
    kt_point_result r;
    run_point(&r, spec, &hooks);
    assert_int_equal(r.repetitions, KT_QUICK_MAX_REPETITIONS);
    kt_point_result_free(&r);

    stop_flag = 1; /* interrupted before it starts: nothing is set up or timed */
    memset(&hooks, 0, sizeof(hooks));
    hooks.interrupted = &stop_flag;
    run_point(&r, spec, &hooks);
    assert_string_equal(r.stop_reason, "interrupted");
    assert_string_equal(r.error, "interrupted during start-up");
    assert_int_equal(r.cands[0].n_pairs, 0);
    kt_point_result_free(&r);

    stop_flag = 0; /* interrupted at the first timed call: the point stops after that pair */
    hooks.on_step = stop_at_repetitions;
    run_point(&r, spec, &hooks);
    assert_string_equal(r.stop_reason, "interrupted");
    assert_string_equal(r.error, "");
    assert_int_equal(r.cands[0].n_pairs, 1);
    kt_point_result_free(&r);
    kt_spec_free(spec);
}

/* ---- orders ------------------------------------------------------------------------------- */

/* Identical arms whose durations grow with virtual time (drift) and no noise: within a pair
 * the call that ran first is strictly faster, so the timings show the order really run. */
#define DRIFTING "median_us: 100, spread: 0, drift: 100"

static void assert_order_matches_clock(const kt_candidate_result *c)
{
    for (size_t i = 0; i < c->n_pairs; i++) {
        const kt_pair *p = &c->pairs[i];
        if ((p->cand_ns < p->base_ns) != p->candidate_first)
            fail_msg("pair %zu says candidate_first %d but base %.0f ns, cand %.0f ns", i,
                     p->candidate_first, p->base_ns, p->cand_ns);
    }
}

static void test_grouped_order(void **state)
{
    (void)state;
    kt_spec *spec = make_spec(DRIFTING, CAND("same", DRIFTING),
                              "min_repetitions: 10, max_repetitions: 12, order: grouped",
                              "latency: {min_speedup: 0.5}", 7);
    kt_point_result r;
    run_point(&r, spec, NULL);
    const kt_candidate_result *c = &r.cands[0];
    assert_int_equal(c->n_pairs, 12); /* no early stopping in the grouped design */
    assert_int_equal(c->looks, 1);
    assert_true(fabs(c->confidence_used - 0.95) < 1e-15);
    for (size_t i = 0; i < c->n_pairs; i++)
        assert_int_equal(c->pairs[i].candidate_first, 0);
    /* every candidate call ran after every baseline call: all slower under drift */
    double last_base = 0;
    for (size_t i = 0; i < c->n_pairs; i++)
        last_base = fmax(last_base, c->pairs[i].base_ns);
    for (size_t i = 0; i < c->n_pairs; i++)
        assert_true(c->pairs[i].cand_ns > last_base);
    assert_true(c->speedup < 1);
    kt_point_result_free(&r);
    kt_spec_free(spec);
}

static void test_alternate_order(void **state)
{
    (void)state;
    kt_spec *spec = make_spec(DRIFTING, CAND("same", DRIFTING),
                              "min_repetitions: 16, max_repetitions: 16, order: alternate",
                              "latency: {min_speedup: 0.5}", 7);
    kt_point_result r;
    run_point(&r, spec, NULL);
    const kt_candidate_result *c = &r.cands[0];
    static const int abba[4] = {0, 1, 1, 0};
    assert_int_equal(c->n_pairs, 16);
    for (size_t i = 0; i < c->n_pairs; i++)
        assert_int_equal(c->pairs[i].candidate_first, abba[i % 4]);
    assert_order_matches_clock(c);
    kt_point_result_free(&r);
    kt_spec_free(spec);
}

static void random_order(int *first, int seed)
{
    kt_spec *spec = make_spec(DRIFTING, CAND("same", DRIFTING),
                              "min_repetitions: 40, max_repetitions: 40, order: random",
                              "latency: {min_speedup: 0.5}", seed);
    kt_point_result r;
    run_point(&r, spec, NULL);
    assert_int_equal(r.cands[0].n_pairs, 40);
    assert_order_matches_clock(&r.cands[0]);
    for (int i = 0; i < 40; i++)
        first[i] = r.cands[0].pairs[i].candidate_first;
    kt_point_result_free(&r);
    kt_spec_free(spec);
}

static void test_random_order(void **state)
{
    (void)state;
    int a[40], b[40], c[40], ones = 0;
    random_order(a, 7);
    random_order(b, 7);
    random_order(c, 8);
    assert_memory_equal(a, b, sizeof(a)); /* reproducible for a seed */
    assert_memory_not_equal(a, c, sizeof(a));
    for (int i = 0; i < 40; i++)
        ones += a[i];
    assert_true(ones >= 8 && ones <= 32); /* a coin, not a constant */
}

/* A candidate slowed only when it runs second: the order check flags it, and the suspicion
 * keeps the point measuring although the verdict was decided at the first look. */
static void test_order_effect_postpones_stopping(void **state)
{
    (void)state;
    kt_spec *spec =
        make_spec(FIXED_100, CAND("biased", "median_us: 80, spread: 0, order_effect: 0.5"),
                  "min_repetitions: 10, max_repetitions: 40, order: alternate",
                  "latency: {min_speedup: 0.5}", 7);
    kt_point_result r;
    run_point(&r, spec, NULL);
    const kt_candidate_result *c = &r.cands[0];
    assert_int_equal(c->verdict, KT_VERDICT_KEEP);
    assert_int_equal(c->n_pairs, 40);
    assert_int_equal(c->stopped_early, 0);
    assert_true(c->order_p < KT_ORDER_WARN_P);
    assert_int_equal(c->order_warning, 1);
    /* log(100/80) - log(100/120) between candidate-first and candidate-second pairs */
    assert_true(fabs(c->order_shift - log(1.5)) < 1e-12);
    kt_point_result_free(&r);
    kt_spec_free(spec);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_looks),
        cmocka_unit_test(test_deterministic_durations),
        cmocka_unit_test(test_numerics_per_set),
        cmocka_unit_test(test_memory_ratio),
        cmocka_unit_test(test_bitwise_repeatable),
        cmocka_unit_test(test_failed_arms),
        cmocka_unit_test(test_baseline_failure),
        cmocka_unit_test(test_skip_and_step_hooks),
        cmocka_unit_test(test_quick_and_interrupt),
        cmocka_unit_test(test_grouped_order),
        cmocka_unit_test(test_alternate_order),
        cmocka_unit_test(test_random_order),
        cmocka_unit_test(test_order_effect_postpones_stopping),
        cmocka_unit_test(test_unflushed_calls_are_primed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
