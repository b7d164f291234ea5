/* kernel_call.c - one call of a kernel arm and its checks: a fresh poison pattern before each
 * call, every output element scanned after it, a random KT_FULL_CHECK_RATE of calls compared
 * with float64 and the inputs hashed (a writer into them found and failed); and the profiling
 * pass after the pairs, under the meters. */
#include "arm/kernel/kernel_arm.h"

#include "arm/meters/counters.h"
#include "arm/meters/usage_gpu_pass.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static int before_call(point_run *r, int arm, int set)
{
    double t0 = kt_kernel_now_s();
    kt_instance_rotate(r->inst[set], kt_rng_next(&r->check_rng));
    int err = kt_instance_poison_outputs(r->inst[set], r->backend);
    kt_kernel_arm_result(r, arm)->check_s += kt_kernel_now_s() - t0;
    return err;
}

/* Keeps the worst of each error measure of 'n' in 'worst'. */
static void fold_worst(kt_numerics *worst, const kt_numerics *n)
{
    worst->max_abs = fmax(worst->max_abs, n->max_abs);
    worst->max_rel = fmax(worst->max_rel, n->max_rel);
    worst->rel_l2 = fmax(worst->rel_l2, n->rel_l2);
    worst->cosine = fmin(worst->cosine, n->cosine);
}

/* Whether one more call of 'arm' on 'set', through the full check, writes into the inputs (the
 * check puts them back). A call that fails here counts as not writing: the arm's own calls
 * report that failure. */
static int rewrites_inputs(point_run *r, int arm, int set)
{
    kt_numerics n;
    kt_call call = kt_kernel_arm_call(r, arm, set);
    int err = kt_check_call(&n, r->inst[set], kt_kernel_spec_arm(r, arm)->variant,
                            r->state[arm][set], &call);
    return err == KT_OK && n.inputs_modified;
}

/* Runs every arm still running but 'skip' once more on 'set' through the full check, the
 * inputs as generated, and fails those that write into them: a candidate as usual, the
 * baseline through the point's error. */
static void fail_input_writers(point_run *r, int set, int skip)
{
    for (int arm = 0; arm <= (int)r->out->n_cands; arm++) {
        kt_arm_result *res = kt_kernel_arm_result(r, arm);
        if (arm == skip || res->failed || !r->prepared[arm] || !rewrites_inputs(r, arm, set))
            continue;
        char why[160];
        snprintf(why, sizeof(why),
                 "wrote into its inputs (input set %d, found by a re-check after a later check "
                 "saw them modified)",
                 set);
        kt_kernel_fail_any_arm(r, arm, why);
    }
}

/* The inputs of 'set' were found modified after a call of 'arm' whose full check was drawn.
 * Only a fraction of calls hash the inputs, so the writer may be any arm that ran on the set
 * since its last full check: the inputs are put back, and 'arm', then every other arm still
 * running, runs once more through the full check; the arms that write into them again are the
 * writers. Returns 1 when 'arm' is one, else 0 after failing the others found (a candidate as
 * usual, the baseline through the point's error), or a negative harness error. A write no arm
 * repeats fails nobody: the inputs are back as generated and the run goes on. */
static int find_input_writer(point_run *r, int arm, int set)
{
    int err = kt_instance_restore_inputs(r->inst[set], r->backend);
    if (err < 0)
        return err;
    if (rewrites_inputs(r, arm, set))
        return 1;
    fail_input_writers(r, set, arm);
    return 0;
}

/* After a checked call, untimed: every output element is scanned for the poison and for
 * NaN/Inf; a random KT_FULL_CHECK_RATE of calls, drawn only now, also get the full numerics
 * against float64 and the input hash, and their errors count as the input set's (worst kept).
 * Returns 0, 1 with the failure in 'why', or a negative harness error. */
static int after_call(point_run *r, int arm, int set, char *why, size_t len)
{
    double t0 = kt_kernel_now_s();
    kt_instance *inst = r->inst[set];
    kt_arm_result *res = kt_kernel_arm_result(r, arm);
    kt_numerics n;
    int err = kt_backend_synchronize(r->backend);
    if (err == KT_OK)
        err = kt_instance_download_outputs(inst, r->backend);
    if (err < 0)
        return err;
    int full = kt_rng_uniform(&r->check_rng) < KT_FULL_CHECK_RATE;
    if (full) {
        int intact = 1;
        kt_numerics_compare(&n, inst);
        if ((err = kt_instance_inputs_intact(inst, r->backend, &intact)) < 0)
            return err;
        if (!intact && (err = find_input_writer(r, arm, set)) < 0)
            return err;
        n.inputs_modified = !intact && err == 1;
        /* computed from inputs another arm wrote into: not this arm's error */
        if (!intact && err == 0)
            full = 0;
        res->full_checks++;
    } else {
        kt_output_scan(&n, inst);
    }
    if ((err = kt_instance_check_guards(&n, inst, r->backend)) < 0)
        return err;
    res->checked_calls++;
    int bad = kt_kernel_numerics_problem(&n, "", why, len);
    if (!bad && full)
        fold_worst(&res->numerics[set], &n);
    res->check_s += kt_kernel_now_s() - t0;
    return bad;
}

/* Whether a timed call is preceded by an untimed call of its own arm on its input set. Without
 * the flush, a call finds the caches (and the branch predictors) as the previous call left
 * them; the baseline, which runs in every candidate's pairs, would then run warmer than each
 * candidate: identical arms came out 3-8% apart at 8 us calls with two candidates. Priming
 * makes every timed call one that follows itself. The sim has no caches to warm. */
static int primes(const point_run *r)
{
    return !r->spec->flush_cache && r->backend->iface->caps->flush != KT_FLUSH_NO_CACHES;
}

/* The untimed call before a timed one (primes()); its outputs are poisoned again before the
 * timed call, which alone is checked. Returns <0 with the sentence in 'why'. */
static int prime(point_run *r, int arm, int set, int64_t index, char *why, size_t len)
{
    kt_call call = kt_kernel_arm_call(r, arm, set);
    kt_error_clear();
    int err = kt_variant_call(kt_kernel_spec_arm(r, arm)->variant, r->state[arm][set], &call);
    if (err >= 0)
        err = kt_backend_synchronize(r->backend);
    if (err < 0)
        snprintf(why, len,
                 "run failed in the untimed call before timed call %lld: %s (input set %d)",
                 (long long)index, kt_error_or_code(err), set);
    return err < 0 ? err : KT_OK;
}

/* A failed call or check of 'arm' for 'why': a candidate fails (unless the point already did:
 * the baseline, found writing into its inputs), the baseline fails the point. Returns -1 or
 * -2 as arm.h says. */
static int call_failed(point_run *r, int arm, const char *why)
{
    if (arm == 0)
        kt_kernel_fail_any_arm(r, 0, why);
    else if (!r->out->error[0])
        kt_kernel_fail_arm(kt_kernel_arm_result(r, arm), "%s", why);
    return r->out->error[0] ? -2 : -1;
}

/* One call of 'arm' on at->set, timed by the backend when at->timed, as call at->position of
 * its pair (or -1): the untimed priming call and the fresh poison before it, the cache flush
 * (flush_cache) and the stage profile around it. kt_kernel_check checks its outputs. */
int kt_kernel_call(point_run *r, int arm, const kt_arm_at *at, kt_arm_sample *out)
{
    int set = at->set;
    const char *kind = at->timed ? "timed" : "warmup";
    int64_t index = ++r->calls[at->timed != 0][arm];
    kt_timing *t = at->timed ? &out->t : NULL;
    char why[512];
    int err;
    memset(out, 0, sizeof(*out));
    out->usage.wall_s = out->usage.user_s = out->usage.sys_s = out->usage.max_rss_kib = NAN;
    if (t && primes(r) && (err = prime(r, arm, set, index, why, sizeof(why))) < 0)
        return call_failed(r, arm, why);
    err = before_call(r, arm, set);
    kt_call call = kt_kernel_arm_call(r, arm, set);
    kt_stage_profile profile = {0};
    call.pair_position = at->position;
    call.profile = t ? &profile : NULL;
    if (err == KT_OK && t && r->spec->flush_cache)
        err = kt_backend_flush_cache(r->backend);
    if (err == KT_OK && t)
        err = kt_backend_timer_start(r->backend);
    if (err < 0)
        return call_failed(r, arm, kt_error_last());
    kt_error_clear();
    const kt_variant *v = kt_kernel_spec_arm(r, arm)->variant;
    int run_err = v->run(r->state[arm][set], &call);
    if (t && (err = kt_backend_timer_stop(r->backend, t)) < 0)
        return call_failed(r, arm, kt_error_last());
    if (run_err >= 0) /* untimed: a Python arm's returned values checked and copied */
        run_err = kt_variant_finish(v, r->state[arm][set], &call);
    if (run_err < 0) {
        snprintf(why, sizeof(why), "run failed in %s call %lld: %s (input set %d)", kind,
                 (long long)index, kt_error_or_code(run_err), set);
        return call_failed(r, arm, why);
    }
    if (t)
        kt_stage_stats_add(&kt_kernel_arm_result(r, arm)->stages, &profile, t->time_ns);
    return 0;
}

/* The checks after the arm's last call (after_call), against the float64 reference ('ref'
 * is not used: every arm is checked against the reference on its own). */
int kt_kernel_check(point_run *r, int arm, const kt_arm_at *at, int ref)
{
    (void)ref;
    const char *kind = at->timed ? "timed" : "warmup";
    int64_t index = r->calls[at->timed != 0][arm];
    char what[256], why[512];
    int bad = after_call(r, arm, at->set, what, sizeof(what));
    if (bad < 0)
        snprintf(why, sizeof(why), "%s", kt_error_last());
    else if (bad)
        snprintf(why, sizeof(why), "output check failed on %s call %lld (input set %d): %s", kind,
                 (long long)index, at->set, what);
    else if (r->out->error[0]) /* find_input_writer found the baseline writing into its inputs */
        snprintf(why, sizeof(why), "%s", r->out->error);
    else
        return 0;
    return call_failed(r, arm, why);
}

/* One call of an arm, finished on the device: what the GPU half of the profiling pass runs. */
typedef struct gpu_call {
    point_run *r;
    int arm;
    kt_call call;
} gpu_call;

static int gpu_call_once(void *arg)
{
    gpu_call *g = arg;
    int err = kt_variant_call(kt_kernel_spec_arm(g->r, g->arm)->variant, g->r->state[g->arm][0],
                              &g->call);
    return err < 0 ? err : kt_backend_synchronize(g->r->backend);
}

/* One call of 'arm' on input set 0 right after its profiling calls, with the checks of a
 * correctness call (poison, every element written and finite, inputs intact): the profiling
 * calls themselves run unchecked under the meters, so an arm that starts failing among them is
 * caught here. Returns 1 with the sentence in 'why' when the arm failed, else 0. */
static int check_after_profile(point_run *r, int arm, char *why, size_t len)
{
    kt_numerics n;
    kt_call call = kt_kernel_arm_call(r, arm, 0);
    kt_error_clear();
    const char *when = " in the checked call after its profiling calls (input set 0)";
    int err =
        kt_check_call(&n, r->inst[0], kt_kernel_spec_arm(r, arm)->variant, r->state[arm][0], &call);
    if (err < 0) {
        snprintf(why, len, "run failed%s: %s", when, kt_error_or_code(err));
        return 1;
    }
    return kt_kernel_numerics_problem(&n, when, why, len);
}

/* The profiling pass: a few more calls of each arm that still runs, on input set 0, under
 * CPU counters and energy meters, and on the cuda backend NVML energy and CUPTI counters,
 * each arm's followed by one checked call (check_after_profile). Nothing here enters the
 * pairs, so the timed samples are the same with and without it; an arm that fails here fails
 * as in a timed call. Arms with no prepare (a NULL state) are profiled like the others. */
void kt_kernel_profile(point_run *r)
{
    int intact = 1;
    /* calls since set 0's last full check may have written into it: find who, first */
    if (kt_instance_inputs_intact(r->inst[0], r->backend, &intact) == KT_OK && !intact &&
        kt_instance_restore_inputs(r->inst[0], r->backend) == KT_OK)
        fail_input_writers(r, 0, -1);
    for (size_t arm = 0; arm <= r->out->n_cands && !r->out->error[0]; arm++) {
        kt_arm_result *res = kt_kernel_arm_result(r, (int)arm);
        if (res->failed || !r->prepared[arm])
            continue;
        kt_kernel_step(r, (int)arm, "profile");
        kt_call call = kt_kernel_arm_call(r, (int)arm, 0);
        kt_counter_set cs;
        kt_counters_start(&cs);
        double t0 = kt_kernel_now_s();
        int calls = 0, err = 0;
        char why[512];
        kt_error_clear();
        /* only a negative return fails, as in the timed pairs (a positive one is outside the
         * header's contract, and must not cut the pass to one call) */
        for (; calls < KT_PROFILE_CALLS && err >= 0; calls++)
            err =
                kt_variant_call(kt_kernel_spec_arm(r, (int)arm)->variant, r->state[arm][0], &call);
        if (err >= 0)
            err = kt_backend_synchronize(r->backend);
        double wall = kt_kernel_now_s() - t0;
        kt_counters_stop(&cs, calls);
        if (err < 0) {
            snprintf(why, sizeof(why), "run failed in profiling call %d (input set 0): %s", calls,
                     kt_error_or_code(err));
            kt_kernel_fail_any_arm(r, (int)arm, why);
            continue;
        }
        res->profile = cs.v;
        res->profile.wall_ns = wall * 1e9 / calls;
        res->profiled = 1;
        if (r->backend->iface->caps->gpus > 0) {
            gpu_call g = {r, (int)arm, call};
            kt_usage_gpu_pass(&res->profile.gpu, gpu_call_once, &g);
        }
        if (check_after_profile(r, (int)arm, why, sizeof(why)))
            kt_kernel_fail_any_arm(r, (int)arm, why);
    }
}
