/* test_plan.c - the cost estimate: calls per point, the per-call models of each backend, the
 * cap at max_seconds_per_point, totals, and a point the op cannot shape. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "measure/calibrate_rates.h"
#include "spec/plan.h"
#include "arm/kernel/kernel_kind.h"

#include <string.h>

static kt_arm cands[2];

/* A synthetic/sim spec: baseline 100 us, candidates 50 us and 80 us; sets 3, warmup 3,
 * max_repetitions 200, max_seconds_per_point 20. */
static kt_spec sim_spec(void)
{
    kt_spec s;
    memset(&s, 0, sizeof(s));
    s.op = kt_op_find("synthetic");
    assert_non_null(s.op);
    strcpy(s.backend, "sim");
    s.dtype = KT_DTYPE_FP32;
    s.input_sets = 3;
    s.warmup = 3;
    s.min_repetitions = 10;
    s.max_repetitions = 200;
    s.max_seconds_per_point = 20;
    const kt_variant *v = kt_variant_find("synthetic", "sim", "lognormal");
    assert_non_null(v);
    int median = kt_param_index(v->params, v->n_params, "median_us");
    assert_true(median >= 0);
    kt_arm *arms[3] = {&s.baseline, &cands[0], &cands[1]};
    const double us[3] = {100, 50, 80};
    for (int i = 0; i < 3; i++) {
        memset(arms[i], 0, sizeof(kt_arm));
        arms[i]->variant = v;
        kt_param_defaults(arms[i]->params, v->params, v->n_params);
        arms[i]->params[median].num = us[i];
    }
    s.candidates = cands;
    s.n_candidates = 2;
    return s;
}

static void test_calls_per_point(void **state)
{
    (void)state;
    kt_spec s = sim_spec();
    /* (1 + K) * sets + (1 + K) * warmup + 2 * K * max_repetitions */
    assert_float_equal(kt_plan_calls_per_point(&s), 3 * 3 + 3 * 3 + 2 * 2 * 200, 0);
    s.numerics.bitwise_repeatable = 1; /* one more round of checks per input set */
    assert_float_equal(kt_plan_calls_per_point(&s), 3 * 3 * 2 + 3 * 3 + 2 * 2 * 200, 0);
    s.n_candidates = 1;
    s.warmup = 0;
    assert_float_equal(kt_plan_calls_per_point(&s), 2 * 3 * 2 + 2 * 200, 0);
}

/* The CPU call model of 'p' is 'idle' times kt_calibration_busy(), read before and after. */
static void assert_busy_scaled(const kt_spec *s, const kt_problem *p, double idle)
{
    double before = kt_calibration_busy();
    double got = kt_plan_call_seconds(s, &s->baseline, p);
    double after = kt_calibration_busy();
    double lo = before < after ? before : after, hi = before < after ? after : before;
    assert_true(lo >= 1.0);
    assert_true(got >= idle * lo * (1 - 1e-12));
    assert_true(got <= idle * hi * (1 + 1e-12));
}

static void test_call_models(void **state)
{
    (void)state;
    kt_spec s = sim_spec();
    kt_problem p;
    memset(&p, 0, sizeof(p));
    assert_float_equal(kt_plan_call_seconds(&s, &s.baseline, &p), 100e-6, 1e-15);
    assert_float_equal(kt_plan_call_seconds(&s, &cands[0], &p), 50e-6, 1e-15);
    kt_arm bare;
    memset(&bare, 0, sizeof(bare)); /* no variant: the 100 us fallback */
    assert_float_equal(kt_plan_call_seconds(&s, &bare, &p), 100e-6, 1e-15);

    strcpy(s.backend, "cpu");
    s.threads = 4;
    p.flops = 1e9;
    p.bytes = 8e6; /* compute-bound: 1e9 / (8e9 * 4), times how busy the host is */
    assert_busy_scaled(&s, &p, 1e9 / 32e9 + 20e-6);
    p.flops = 1e6;
    p.bytes = 8e9; /* memory-bound: 1 s */
    assert_busy_scaled(&s, &p, 1.0 + 20e-6);

    strcpy(s.backend, "cuda");
    p.flops = 3e14;
    p.bytes = 1e9;
    assert_float_equal(kt_plan_call_seconds(&s, &s.baseline, &p), 1.0 + 5e-6, 1e-12);
    p.flops = 0;
    p.bytes = 6e12;
    assert_float_equal(kt_plan_call_seconds(&s, &s.baseline, &p), 2.0 + 5e-6, 1e-12);
}

static kt_matrix two_points(kt_point pts[2], int64_t batch0)
{
    memset(pts, 0, 2 * sizeof(kt_point));
    pts[0].batch_size = batch0;
    pts[0].context_length = 1024;
    strcpy(pts[0].id, "b?/t1024");
    pts[1].batch_size = 4;
    pts[1].context_length = 1024;
    strcpy(pts[1].id, "b4/t1024");
    kt_matrix m = {pts, 2};
    return m;
}

static void test_estimate_and_cap(void **state)
{
    (void)state;
    kt_spec s = sim_spec();
    kt_point pts[2];
    kt_matrix m = two_points(pts, 1);
    kt_plan plan;
    assert_int_equal(kt_plan_estimate(&plan, &s, &m), KT_OK);
    assert_int_equal(plan.n, 2);
    /* checks and warmup: every arm (3 + 3) times; pairs: 200 x (b + c) per candidate */
    double fixed = (100 + 50 + 80) * 1e-6 * 6;
    double pairs = 200 * (150e-6 + 180e-6);
    /* plus one worker and the start-up (calibrated inputs and references), per point */
    double up0 = KT_PLAN_WORKER_SECONDS + kt_plan_startup_seconds(&s, &pts[0]);
    double up1 = KT_PLAN_WORKER_SECONDS + kt_plan_startup_seconds(&s, &pts[1]);
    assert_true(up1 > up0 && up0 > KT_PLAN_WORKER_SECONDS); /* b4 has more elements than b1 */
    assert_float_equal(plan.point_seconds[0], up0 + fixed + pairs, 1e-12);
    assert_float_equal(plan.point_seconds[1], up1 + fixed + pairs, 1e-12);
    assert_float_equal(plan.total_seconds, up0 + up1 + 2 * (fixed + pairs), 1e-12);
    assert_float_equal(plan.calls_per_point, 818, 0);
    kt_plan_free(&plan);
    assert_null(plan.point_seconds);

    /* the trial loop stops at max_seconds_per_point, after at most one more round (a pair
     * per candidate: the clock is read after each round) */
    s.max_seconds_per_point = 0.01;
    assert_int_equal(kt_plan_estimate(&plan, &s, &m), KT_OK);
    assert_float_equal(plan.point_seconds[0], up0 + fixed + 0.01 + 330e-6, 1e-12);
    kt_plan_free(&plan);
    /* but never under min_repetitions rounds */
    s.max_seconds_per_point = 1e-6;
    assert_int_equal(kt_plan_estimate(&plan, &s, &m), KT_OK);
    assert_float_equal(plan.point_seconds[0], up0 + fixed + 10 * 330e-6, 1e-12);
    kt_plan_free(&plan);
    /* the sim's prepare_ms is a real sleep, whatever the problem's size: once per input set's
     * correctness step (3 sets) */
    s.max_seconds_per_point = 20;
    const kt_variant *v = s.baseline.variant;
    int prep = kt_param_index(v->params, v->n_params, "prepare_ms");
    assert_true(prep >= 0);
    s.baseline.params[prep].num = 500;
    assert_int_equal(kt_plan_estimate(&plan, &s, &m), KT_OK);
    assert_float_equal(plan.point_seconds[0], up0 + fixed + pairs + 3 * 0.5, 1e-9);
    assert_float_equal(plan.point_seconds[1], up1 + fixed + pairs + 3 * 0.5, 1e-9);
    kt_plan_free(&plan);
    s.baseline.params[prep].num = 0;
}

/* Measured arm costs, as kt_calibration_arm gives them; test_measured_costs sets them, and
 * for prefill calibrations 'fake_prefill_cost' when 'fake_prefill' is set. */
static kt_arm_cost fake_cost, fake_prefill_cost;
static int fake_prefill, asked[2];

static int fake_costs(kt_arm_cost *out, int *have, const kt_spec *spec, kt_phase phase)
{
    asked[phase == KT_PHASE_PREFILL]++;
    for (size_t k = 0; k <= spec->n_candidates; k++) {
        out[k] = fake_prefill && phase == KT_PHASE_PREFILL ? fake_prefill_cost : fake_cost;
        have[k] = 1;
    }
    return 0;
}

/* The idle estimate of 'm' with 'cost' for every arm, less the one with no cost at all (the
 * start-up and the worker cancel). */
static double costed(const kt_spec *s, const kt_matrix *m, kt_arm_cost cost)
{
    kt_plan plan;
    kt_arm_cost none = cost;
    none.call_s = none.prepare_s = none.scan_s = none.full_s = none.flush_s = none.touch_s = 0;
    fake_cost = none;
    assert_int_equal(kt_plan_estimate(&plan, s, m), KT_OK);
    double zero = plan.idle_seconds;
    kt_plan_free(&plan);
    fake_cost = cost;
    assert_int_equal(kt_plan_estimate(&plan, s, m), KT_OK);
    double with = plan.idle_seconds;
    kt_plan_free(&plan);
    return with - zero;
}

/* Each measured cost counted where the trial spends it, scaled from the calibration problem
 * to the point: 3 arms, 3 sets, warmup 3, 200 rounds of 2 pairs, one point. */
static void test_measured_costs(void **state)
{
    (void)state;
    kt_spec s = sim_spec();
    s.threads = 1;
    kt_point pts[1];
    memset(pts, 0, sizeof(pts));
    pts[0].batch_size = 1;
    pts[0].context_length = 1024;
    strcpy(pts[0].id, "b1/t1024");
    kt_matrix m = {pts, 1};
    kt_problem p;
    assert_int_equal(s.op->shape(&p, &pts[0], s.dtype, s.input_params), KT_OK);
    double in = (double)kt_tensor_bytes(&p.tensors[0]);
    double out = (double)kt_tensor_bytes(&p.tensors[p.n_inputs]);
    assert_int_equal(p.n_inputs + p.n_outputs, 2);
    /* a calibration problem of half the bytes and half the roofline: everything doubles */
    kt_arm_cost c = {0};
    c.roof_s = kt_plan_roofline_seconds(&s, &p) / 2;
    c.in_bytes = in / 2;
    c.out_bytes = out / 2;
    c.busy = 1;
    kt_plan_use_arm_costs(fake_costs);

    kt_arm_cost x = c;
    x.flush_s = 1e-3; /* per timed call, only with flush_cache: constant, not scaled */
    assert_float_equal(costed(&s, &m, x), 0, 1e-12);
    s.flush_cache = 1;
    assert_float_equal(costed(&s, &m, x), 200 * 4 * 1e-3, 1e-9);

    x = c;
    x.full_s = 4e-3; /* 8e-3 here: once per set and arm, then a share of every other call */
    double per_call = KT_FULL_CHECK_RATE * 8e-3;
    assert_float_equal(costed(&s, &m, x), 3 * (3 * 8e-3 + 3 * per_call) + 200 * 4 * per_call, 1e-9);

    x = c;
    x.scan_s = 1e-3; /* 2e-3 here, on every checked call */
    assert_float_equal(costed(&s, &m, x), 3 * (3 + 3) * 2e-3 + 200 * 4 * 2e-3, 1e-9);

    x = c;
    x.prepare_s = 1e-3; /* 2e-3 here, once per set and arm */
    assert_float_equal(costed(&s, &m, x), 3 * 3 * 2e-3, 1e-9);

    x = c;
    x.touch_s = 1e-3; /* 2e-3 here, once per input set whatever the arms */
    assert_float_equal(costed(&s, &m, x), 3 * 2e-3, 1e-9);

    x = c;
    x.call_s = 1e-3; /* on the sim the call is its virtual time, whatever the host took */
    assert_float_equal(costed(&s, &m, x), 0, 1e-12);
    strcpy(s.backend, "cpu"); /* 2e-3 here; the profiling pass adds KT_PROFILE_CALLS per arm */
    double calls = 3 * (3 + 3) + 200 * 4;
    assert_float_equal(costed(&s, &m, x), calls * 2e-3, 1e-9);
    s.profile = 1;
    assert_float_equal(costed(&s, &m, x), (calls + 3 * KT_PROFILE_CALLS) * 2e-3, 1e-9);

    x.busy = 2; /* measured on a host twice as busy as idle */
    assert_float_equal(costed(&s, &m, x), (calls + 3 * KT_PROFILE_CALLS) * 1e-3, 1e-9);
    kt_plan_use_arm_costs(NULL);
}

/* A prefill point's arms are costed from a calibration in that phase (asked only when the
 * matrix has prefill points); decode points keep the decode calibration. */
static void test_costs_per_phase(void **state)
{
    (void)state;
    kt_spec s = sim_spec();
    strcpy(s.backend, "cpu"); /* where the call's measured cost counts */
    s.threads = 1;
    kt_point pts[2];
    memset(pts, 0, sizeof(pts));
    pts[0].batch_size = pts[1].batch_size = 1;
    pts[0].context_length = pts[1].context_length = 1024;
    pts[1].phase = KT_PHASE_PREFILL;
    strcpy(pts[0].id, "decode/b1/t1024");
    strcpy(pts[1].id, "prefill/b1/t1024");
    kt_problem p;
    assert_int_equal(s.op->shape(&p, &pts[0], s.dtype, s.input_params), KT_OK);
    kt_arm_cost c = {0};
    c.roof_s = kt_plan_roofline_seconds(&s, &p);
    c.busy = 1;
    kt_plan_use_arm_costs(fake_costs);
    fake_cost = c;
    fake_prefill = 1;
    kt_matrix decode_only = {pts, 1}, prefill_only = {pts + 1, 1};
    double est[2][2]; /* [matrix][prefill call_s 0 or 1 ms] */
    for (int mx = 0; mx < 2; mx++) {
        for (int slow = 0; slow < 2; slow++) {
            fake_prefill_cost = c;
            fake_prefill_cost.call_s = slow ? 1e-3 : 0;
            asked[0] = asked[1] = 0;
            kt_plan plan;
            assert_int_equal(kt_plan_estimate(&plan, &s, mx ? &prefill_only : &decode_only), KT_OK);
            est[mx][slow] = plan.idle_seconds;
            kt_plan_free(&plan);
            assert_int_equal(asked[1] > 0, mx == 1);
        }
    }
    assert_float_equal(est[0][1], est[0][0], 1e-12); /* decode: the decode calibration */
    assert_true(est[1][1] > est[1][0] + 1e-3);       /* prefill: its own */
    fake_prefill = 0;
    kt_plan_use_arm_costs(NULL);
}

/* The memory floor of a point: every input set's inputs and outputs three times (on cuda
 * twice and once: the backend's copies are device memory) and the float64 reference, and the
 * calls' own buffers: two input sets, each arm's two output sets between guard zones of at
 * least 64 KiB. */
static void test_point_bytes(void **state)
{
    (void)state;
    kt_spec s = sim_spec(); /* 3 input sets; synthetic: y = x over b x t fp32 elements */
    kt_point pts[1];
    memset(pts, 0, sizeof(pts));
    pts[0].batch_size = 4;
    pts[0].context_length = 1000;
    strcpy(pts[0].id, "b4/t1000");
    kt_matrix m = {pts, 1};
    kt_plan plan;
    assert_int_equal(kt_plan_estimate(&plan, &s, &m), KT_OK);
    double elems = 4000, in = 4 * elems, out = 4 * elems;
    double calls = 2 * in + (1.0 + (double)s.n_candidates) * 2 * (out + 2 * 65536.0);
    assert_float_equal(plan.point_bytes[0], 3 * (3 * in + 3 * out + 8 * elems) + calls, 1e-9);
    kt_plan_free(&plan);
    strcpy(s.backend, "cuda");
    kt_problem p;
    assert_int_equal(s.op->shape(&p, &pts[0], s.dtype, s.input_params), KT_OK);
    assert_float_equal(kt_plan_point_bytes(&s, &p), 3 * (2 * in + out + 8 * elems) + calls, 1e-9);
}

static void test_unshapeable_point(void **state)
{
    (void)state;
    kt_spec s = sim_spec();
    kt_point pts[2];
    kt_matrix m = two_points(pts, (int64_t)1 << 20); /* 2^30 elements: over synthetic's limit */
    kt_plan plan;
    assert_int_equal(kt_plan_estimate(&plan, &s, &m), KT_EINVAL);
    assert_non_null(strstr(kt_error_last(), "out of range"));
    assert_null(plan.point_seconds);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_calls_per_point),   cmocka_unit_test(test_call_models),
        cmocka_unit_test(test_estimate_and_cap),  cmocka_unit_test(test_measured_costs),
        cmocka_unit_test(test_costs_per_phase),   cmocka_unit_test(test_point_bytes),
        cmocka_unit_test(test_unshapeable_point),
    };
    kt_plan_use_rates(kt_calibration_get); /* the start-up measured, as the command line has it */
    return cmocka_run_group_tests(tests, NULL, NULL);
}
