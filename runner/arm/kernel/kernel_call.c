/* kernel_call.c - one call of a kernel arm and its checks (docs/robustness.md): fresh inputs
 * and a fresh poison pattern before each call, its outputs compared with the float64 reference
 * of the inputs it was given after it, its inputs hashed, its guard zones read, its time against
 * the roofline, what it wrote re-read later; and the profiling pass after the pairs, under the
 * meters. */
#include "arm/kernel/kernel_arm.h"

#include "arm/meters/counters.h"
#include "arm/meters/usage_gpu_pass.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* Keeps the worst of each error measure of 'n' in 'worst'. */
static void fold_worst(kt_numerics *worst, const kt_numerics *n)
{
    worst->max_abs = fmax(worst->max_abs, n->max_abs);
    worst->max_rel = fmax(worst->max_rel, n->max_rel);
    worst->rel_l2 = fmax(worst->rel_l2, n->rel_l2);
    worst->cosine = fmin(worst->cosine, n->cosine);
}

/* Whether a timed call is preceded by an untimed call of its own arm. Without the flush, a call
 * finds the caches (and the branch predictors) as the previous call left them; the baseline,
 * which runs in every candidate's pairs, would then run warmer than each candidate: identical
 * arms came out 3-8% apart at 8 us calls with two candidates. Priming makes every timed call
 * one that follows itself. The sim has no caches to warm. */
static int primes(const point_run *r)
{
    return !r->spec->flush_cache && r->backend->iface->caps->flush != KT_FLUSH_NO_CACHES;
}

/* A call of 'arm' with its state on 'set', on input buffers 'b' and output buffers 'o'. */
static kt_call call_on(const point_run *r, int arm, int set, int b, int o)
{
    kt_call call = kt_kernel_arm_call(r, arm, set < r->n_sets ? set : 0);
    call.inputs = (const void *const *)r->live_in[b];
    call.outputs = (void *const *)r->outs[arm][o];
    return call;
}

/* An untimed call of 'arm' (its state on 'set') on input buffers 'b', which hold other inputs
 * than set's, into its output buffers 'o' (not checked): the priming call (primes()), or the
 * call that keeps two calls of an arm running from seeing the same inputs. Returns <0 with the
 * sentence in 'why'. */
static int run_between(point_run *r, int arm, int set, int b, int o, int64_t index, char *why,
                       size_t len)
{
    int err = kt_fresh_load_other(r, b, set);
    if (err < 0)
        return err;
    kt_call call = call_on(r, arm, set, b, o);
    r->out_hashed[arm][o] = 0;
    kt_error_clear();
    err = kt_variant_call(kt_kernel_spec_arm(r, arm)->variant, r->state[arm][set], &call);
    if (err >= 0)
        err = kt_backend_synchronize(r->backend);
    if (err < 0)
        snprintf(why, len,
                 "run failed in the untimed call before timed call %lld: %s (input set %d)",
                 (long long)index, kt_error_or_code(err), set);
    return err < 0 ? err : KT_OK;
}

/* A failed call or check of 'arm' for 'why': a candidate fails (unless the point already did),
 * the baseline fails the point. Returns -1 or -2 as arm.h says. */
static int call_failed(point_run *r, int arm, const char *why)
{
    if (arm == 0)
        kt_kernel_fail_any_arm(r, 0, why);
    else if (!r->out->error[0])
        kt_kernel_fail_arm(kt_kernel_arm_result(r, arm), "%s", why);
    return r->out->error[0] ? -2 : -1;
}

/* One call of 'arm' on at->set, timed by the backend when at->timed, as call at->position of
 * its pair (or -1). Before it, untimed: the arm's earlier outputs re-read (late-writes), the
 * set's inputs uploaded into the input buffers the arm's previous call did not use, after an
 * untimed call on other inputs there when its previous call was on this set (fresh-inputs) or
 * when timed calls are primed, a fresh poison in one of its own output buffers, the cache flush
 * (flush_cache). kt_kernel_check checks its outputs. */
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
    double t0 = kt_kernel_now_s();
    int late = kt_fresh_recheck(r, arm, why, sizeof(why));
    if (late != 0)
        return call_failed(r, arm, late < 0 ? kt_error_last() : why);
    uint64_t coin = kt_rng_next(&r->check_rng);
    int b = r->last_live[arm] == 0 ? 1 : 0, o = (int)((coin >> 9) & 1);
    if ((t && primes(r)) || r->last_set[arm] == set) {
        if ((err = run_between(r, arm, set, b, 1 - o, index, why, sizeof(why))) < 0)
            return call_failed(r, arm, why[0] ? why : kt_error_last());
    }
    kt_instance *inst = r->inst[set];
    kt_instance_rotate(inst, coin); /* the poison pattern */
    err = kt_fresh_load(r, b, set);
    if (err == KT_OK)
        err = kt_outputs_poison(inst, r->backend, r->outs[arm][o]);
    r->out_hashed[arm][o] = 0;
    kt_kernel_arm_result(r, arm)->check_s += kt_kernel_now_s() - t0;
    kt_call call = call_on(r, arm, set, b, o);
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
    r->last_live[arm] = b;
    r->last_set[arm] = set;
    r->last_out[arm] = o;
    r->last_ns[arm] = t ? t->time_ns : NAN;
    r->last_ran_ns[arm] = t ? kt_kernel_ran_ns(r, t) : NAN;
    if (run_err < 0) {
        snprintf(why, sizeof(why), "run failed in %s call %lld: %s (input set %d)", kind,
                 (long long)index, kt_error_or_code(run_err), set);
        return call_failed(r, arm, why);
    }
    if (t)
        kt_stage_stats_add(&kt_kernel_arm_result(r, arm)->stages, &profile, t->time_ns);
    return 0;
}

/* late-writes for every arm but 'arm' whose last output awaits its re-read after another arm's
 * call: those changed fail. */
static int recheck_others(point_run *r, int arm)
{
    for (int a = 0; a <= (int)r->out->n_cands; a++) {
        char why[256];
        if (a == arm || !r->out_pending[a] || kt_kernel_arm_result(r, a)->failed)
            continue;
        int bad = kt_fresh_recheck(r, a, why, sizeof(why));
        if (bad < 0)
            return bad;
        if (bad)
            kt_kernel_fail_any_arm(r, a, why);
    }
    return KT_OK;
}

/* reference and fresh-inputs: an output far from the float64 reference of the inputs the call
 * was given (rel_l2 above 0.5, or the spec's max_rel_l2 when that is larger) is either another
 * input set's result (closer to that set's reference: a memoised one) or wrong. 1 with the
 * sentence in 'why', else 0. */
static int far_from_reference(point_run *r, int set, const kt_numerics *n, char *why, size_t len)
{
    double gross = 0.5;
    if (!isnan(r->spec->numerics.max_rel_l2) && r->spec->numerics.max_rel_l2 > gross)
        gross = r->spec->numerics.max_rel_l2;
    if (!(n->rel_l2 > gross))
        return 0;
    int best = -1;
    double best_l2 = INFINITY;
    for (int s = 0; s < r->n_contents; s++) {
        double l2 = s == set ? INFINITY : kt_rel_l2_against(r->inst[set], r->inst[s]);
        if (l2 < best_l2) {
            best_l2 = l2;
            best = s;
        }
    }
    if (best >= 0 && best_l2 <= gross)
        snprintf(why, len,
                 "check fresh-inputs: its output is the result for other inputs (rel_l2 %.3g "
                 "against those of input set %d), not for the inputs it was given (rel_l2 %.3g "
                 "against set %d's float64 reference): it returned an earlier result",
                 best_l2, best, n->rel_l2, set);
    else
        snprintf(why, len,
                 "check reference: its output is far from the float64 reference for the inputs "
                 "it was given (rel_l2 %.3g, above %.3g)",
                 n->rel_l2, gross);
    return 1;
}

/* After a checked call, untimed: the arm's outputs downloaded and compared with the float64
 * reference of the inputs the call was given (unwritten, NaN or Inf, far from it, another
 * set's result), its inputs hashed, its guard zones read, the roofline; what it wrote remembered
 * for late-writes, and the other arms' last outputs re-read. Returns 0, 1 with the failure in
 * 'why', or a negative harness error. */
static int after_call(point_run *r, int arm, const kt_arm_at *at, char *why, size_t len)
{
    double t0 = kt_kernel_now_s();
    int set = at->set, o = r->last_out[arm], changed = -1;
    kt_instance *inst = r->inst[set];
    kt_arm_result *res = kt_kernel_arm_result(r, arm);
    kt_numerics n;
    int err = kt_backend_synchronize(r->backend);
    if (err == KT_OK)
        err = kt_outputs_download(inst, r->backend, r->outs[arm][o]);
    if (err == KT_OK)
        err = kt_inputs_changed(inst, r->backend, r->live_in[r->last_live[arm]], r->scratch,
                                &changed);
    if (err < 0)
        return err;
    kt_numerics_compare(&n, inst);
    n.overrun_tensor = NULL;
    n.overrun_after = n.overrun_before = 0;
    err = kt_outputs_check_guards(&n, &inst->problem, r->backend, r->outs[arm][o], r->out_guard,
                                  r->scratch);
    if (err < 0)
        return err;
    res->full_checks++;
    res->checked_calls++;
    int bad = kt_kernel_numerics_problem(&n, "", why, len);
    if (!bad && changed >= 0) {
        r->live_set[r->last_live[arm]] = -1; /* uploaded afresh before their next use */
        snprintf(why, len, "check inputs-unchanged: input '%s' was modified by the call",
                 inst->problem.tensors[changed].name);
        bad = 1;
    }
    if (!bad)
        bad = far_from_reference(r, set, &n, why, len);
    if (!bad && at->timed)
        bad = kt_kernel_roofline(r, arm, set, why, len);
    if (!bad) {
        fold_worst(&res->numerics[set], &n);
        kt_fresh_remember(r, arm, o, inst);
    }
    if ((err = recheck_others(r, arm)) < 0)
        return err;
    res->check_s += kt_kernel_now_s() - t0;
    return bad;
}

/* The checks after the arm's last call (after_call), against the float64 reference ('ref' is
 * not used: every arm is checked against the reference on its own); after some timed calls, the
 * repeat probe (fresh-inputs). */
int kt_kernel_check(point_run *r, int arm, const kt_arm_at *at, int ref)
{
    (void)ref;
    const char *kind = at->timed ? "timed" : "warmup";
    int64_t index = r->calls[at->timed != 0][arm];
    char what[384], why[512];
    int bad = after_call(r, arm, at, what, sizeof(what));
    if (bad == 0 && at->timed && (index <= KT_PROBE_FIRST || index % KT_PROBE_EVERY == 0))
        bad = kt_kernel_probe(r, arm, at->set, what, sizeof(what));
    if (bad < 0)
        snprintf(why, sizeof(why), "%s", kt_error_last());
    else if (bad)
        snprintf(why, sizeof(why), "output check failed on %s call %lld (input set %d): %s", kind,
                 (long long)index, at->set, what);
    else if (r->out->error[0]) /* a re-read found the baseline's outputs changed */
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
