/* trial.c - one matrix point: correctness, warmup, paired repetitions, looks, verdicts. */
#include "measure/trial.h"

#include "decide/sequential.h"
#include "measure/usage_gpu_pass.h"
#include "util/sanitize.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct point_run {
    const kt_spec *spec;
    const kt_point *point;
    kt_backend *backend;
    const kt_trial_hooks *hooks;
    kt_point_result *out;
    int n_sets;
    kt_instance *inst[KT_MAX_SETS];
    void *state[1 + 16][KT_MAX_SETS]; /* [arm][set]; arm 0 is the baseline */
    /* the arm's prepared states per set (add_placements): state[arm][set] is one of them */
    void *placed[1 + 16][KT_MAX_SETS][KT_PLACEMENTS];
    int n_placed[1 + 16]; /* states made on every set; 0 until add_placements */
    kt_rng order_rng;
    kt_rng placement_rng;
    kt_rng check_rng;         /* poison patterns, output buffers, calls given the full check */
    int64_t calls[2][1 + 16]; /* [warmup, timed] calls so far, per arm */
    int prepared[1 + 16];     /* the arm's prepare succeeded on every input set */
} point_run;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static const kt_arm *spec_arm(const point_run *r, int arm)
{
    return arm == 0 ? &r->spec->baseline : &r->spec->candidates[arm - 1];
}

static kt_arm_result *arm_result(point_run *r, int arm)
{
    return arm == 0 ? &r->out->baseline : &r->out->cands[arm - 1].arm;
}

static void step(const point_run *r, int arm, const char *what)
{
    if (r->hooks && r->hooks->on_step)
        r->hooks->on_step(r->hooks->ctx, arm, what);
}

static void fail_arm(kt_arm_result *res, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* A reason that holds a kernel's message (a plugin's: any bytes) as one line of valid UTF-8
 * (kt_sanitize), as result.json and the terminal need; the reasons are made from it. */
static void set_reason(char *out, size_t len, const char *fmt, va_list ap)
{
    char raw[1024];
    vsnprintf(raw, sizeof(raw), fmt, ap);
    kt_sanitize(out, len, raw);
}

static void fail_arm(kt_arm_result *res, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    res->failed = 1;
    set_reason(res->failure, sizeof(res->failure), fmt, ap);
    va_end(ap);
}

static void fail_point(kt_point_result *out, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void fail_point(kt_point_result *out, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    set_reason(out->error, sizeof(out->error), fmt, ap);
    va_end(ap);
}

/* Fails 'arm' for 'why': a candidate as fail_arm does, the baseline through the point's error
 * (which fails the point; the first reason found is kept). */
static void fail_any_arm(point_run *r, int arm, const char *why)
{
    if (arm != 0)
        fail_arm(arm_result(r, arm), "%s", why);
    else if (!r->out->error[0])
        fail_point(r->out, "baseline '%s' failed: %s", r->spec->baseline.name, why);
}

static kt_call arm_call(const point_run *r, int arm, int set)
{
    kt_call call =
        kt_instance_call(r->inst[set], r->backend, spec_arm(r, arm)->params, r->backend->threads);
    call.seed = kt_seed_mix(r->spec->seed, (uint64_t)arm);
    return call;
}

/* The sentence for what is wrong with a checked call's outputs 'n' (unwritten elements, NaN or
 * Inf, inputs written into), followed by 'suffix'; 1 if something is, else 0. */
static int numerics_problem(const kt_numerics *n, const char *suffix, char *why, size_t len)
{
    if (n->unwritten > 0)
        snprintf(why, len, "left %lld of %lld output elements unwritten%s", (long long)n->unwritten,
                 (long long)n->elems, suffix);
    else if (n->nonfinite > 0)
        snprintf(why, len, "produced %lld NaN or Inf output elements%s", (long long)n->nonfinite,
                 suffix);
    else if (n->overrun_before || n->overrun_after)
        snprintf(why, len,
                 "wrote outside its output '%s' (%lld bytes before its start, %lld past "
                 "its end)%s",
                 n->overrun_tensor, (long long)n->overrun_before, (long long)n->overrun_after,
                 suffix);
    else if (n->inputs_modified)
        snprintf(why, len, "wrote into its inputs%s", suffix);
    else
        return 0;
    return 1;
}

/* Checks one set's output: every element written, finite, inputs untouched. */
static int output_acceptable(kt_arm_result *res, int set)
{
    char suffix[32], why[256];
    snprintf(suffix, sizeof(suffix), " on input set %d", set);
    if (numerics_problem(&res->numerics[set], suffix, why, sizeof(why)))
        fail_arm(res, "%s", why);
    return !res->failed;
}

/* Second run on the same input, compared bit for bit with the first. */
static int check_repeatable(point_run *r, int arm, int set, int *same)
{
    kt_instance *inst = r->inst[set];
    const kt_problem *p = &inst->problem;
    void *first[KT_MAX_TENSORS] = {0};
    int err = KT_OK;
    for (int o = 0; o < p->n_outputs && err == KT_OK; o++) {
        size_t bytes = kt_tensor_bytes(&p->tensors[p->n_inputs + o]);
        first[o] = malloc(bytes);
        if (!first[o])
            err = kt_error_code(KT_ENOMEM, "out of memory");
        else
            memcpy(first[o], inst->host_outputs[o], bytes);
    }
    if (err == KT_OK) {
        kt_numerics again;
        kt_call call = arm_call(r, arm, set);
        err = kt_check_call(&again, inst, spec_arm(r, arm)->variant, r->state[arm][set], &call);
        if (err == KT_OK)
            *same = kt_outputs_identical(inst, first, inst->host_outputs);
    }
    for (int o = 0; o < p->n_outputs; o++)
        free(first[o]);
    return err;
}

/* Prepare and check one arm on every input set; failures are recorded, not returned. */
static void prepare_and_check(point_run *r, int arm)
{
    kt_arm_result *res = arm_result(r, arm);
    const kt_arm *a = spec_arm(r, arm);
    const kt_variant *v = a->variant;
    snprintf(res->name, sizeof(res->name), "%s", a->name);
    snprintf(res->variant, sizeof(res->variant), "%s", v->name);
    res->n_sets = r->n_sets;
    res->repeatable = r->spec->numerics.bitwise_repeatable ? 1 : -1;
    double variant_bytes = 0;
    for (int s = 0; s < r->n_sets && !res->failed; s++) {
        kt_call call = arm_call(r, arm, s);
        size_t before = r->backend->bytes_current;
        kt_backend_reset_peak(r->backend);
        step(r, arm, "prepare");
        double t0 = now_s();
        kt_error_clear();
        int err = v->prepare(&r->state[arm][s], &call);
        if (err < 0) {
            fail_arm(res, "prepare failed: %s (input set %d)", kt_error_or_code(err), s);
            break;
        }
        if (s == 0)
            res->prepare_ns = (now_s() - t0) * 1e9;
        step(r, arm, "correctness");
        if ((err = kt_check_call(&res->numerics[s], r->inst[s], v, r->state[arm][s], &call)) < 0) {
            fail_arm(res, "run failed: %s (input set %d)", kt_error_or_code(err), s);
            break;
        }
        if (!output_acceptable(res, s))
            break;
        if (res->repeatable == 1) {
            int same = 0;
            if ((err = check_repeatable(r, arm, s, &same)) < 0) {
                fail_arm(res, "run failed: %s (input set %d)", kt_error_or_code(err), s);
                break;
            }
            if (!same)
                res->repeatable = 0;
        }
        variant_bytes = fmax(variant_bytes, (double)(r->backend->bytes_peak - before));
    }
    r->prepared[arm] = !res->failed;
    res->variant_bytes = variant_bytes;
    res->bytes = (double)r->inst[0]->bytes + variant_bytes;
    if (!res->failed && v->metrics) {
        kt_metric m[KT_MAX_METRICS];
        int n = v->metrics(r->state[arm][0], m, KT_MAX_METRICS);
        for (int i = 0; i < n && i < KT_MAX_METRICS; i++) {
            snprintf(res->metric_names[i], sizeof(res->metric_names[i]), "%s", m[i].name);
            snprintf(res->metric_units[i], sizeof(res->metric_units[i]), "%s",
                     m[i].unit ? m[i].unit : "");
            res->metric_values[i] = m[i].value;
        }
        res->n_metrics = n > 0 ? (n < KT_MAX_METRICS ? n : KT_MAX_METRICS) : 0;
    }
}

/* Whether arm 'arm' gets more prepared states (add_placements): it is prepared, its prepare
 * took under KT_PLACEMENT_MAX_PREPARE_S, and the copies take at most KT_PLACEMENT_MAX_BYTES of
 * the backend's memory. An arm whose prepare allocates nothing through the backend (a command,
 * a plugin with its own allocator) keeps one state. */
static int placements_allowed(point_run *r, int arm)
{
    const kt_arm_result *res = arm_result(r, arm);
    double extra = res->variant_bytes * (KT_PLACEMENTS - 1) * r->n_sets;
    return r->prepared[arm] && !res->failed && res->variant_bytes > 0 &&
           extra <= KT_PLACEMENT_MAX_BYTES && res->prepare_ns * 1e-9 < KT_PLACEMENT_MAX_PREPARE_S;
}

/* Releases placement 'j' of arm 'arm' on sets 0 .. last. */
static void release_placement(point_run *r, int arm, int j, int last)
{
    const kt_variant *v = spec_arm(r, arm)->variant;
    for (int s = 0; s <= last; s++) {
        if (r->placed[arm][s][j])
            v->release(r->placed[arm][s][j], r->backend);
        r->placed[arm][s][j] = NULL;
    }
}

/* State 'j' of arm 'arm' on every input set, each through one checked call: 0 when made, 1
 * when a prepare failed (the states made so far serve: not the arm's fault), -1 when a call on
 * it failed its check (the arm fails). */
static int add_placement(point_run *r, int arm, int j)
{
    kt_arm_result *res = arm_result(r, arm);
    const kt_variant *v = spec_arm(r, arm)->variant;
    for (int s = 0; s < r->n_sets; s++) {
        kt_call call = arm_call(r, arm, s);
        kt_numerics n;
        char why[512];
        kt_error_clear();
        if (v->prepare(&r->placed[arm][s][j], &call) < 0) {
            release_placement(r, arm, j, s);
            return 1;
        }
        int err = kt_check_call(&n, r->inst[s], v, r->placed[arm][s][j], &call);
        if (err < 0)
            fail_arm(res, "run failed in its state prepared %d times: %s (input set %d)", j + 1,
                     kt_error_or_code(err), s);
        else if (numerics_problem(&n, "", why, sizeof(why)))
            fail_arm(res, "%s (its state prepared %d times, input set %d)", why, j + 1, s);
        if (res->failed) {
            release_placement(r, arm, j, s);
            return -1;
        }
    }
    return 0;
}

/* Prepares every arm that qualifies (placements_allowed) into KT_PLACEMENTS states per input
 * set, state by state across the arms so that no arm's states all come after another's. Where
 * a kernel's buffers lie moves its time for as long as they lie there (docs/statistics.md,
 * "Placement"): with one state per arm and set, that is a fixed bias of the run. Each pair then
 * runs both arms on their states of one drawn index (use_placement), and the verdict counts
 * the spread between those indices (kt_candidate_evaluate). */
static void add_placements(point_run *r)
{
    for (int arm = 0; arm <= (int)r->out->n_cands; arm++) {
        r->n_placed[arm] = r->prepared[arm] ? 1 : 0;
        for (int s = 0; s < r->n_sets && r->prepared[arm]; s++)
            r->placed[arm][s][0] = r->state[arm][s];
        arm_result(r, arm)->placements = r->n_placed[arm];
    }
    for (int j = 1; j < KT_PLACEMENTS; j++)
        for (int arm = 0; arm <= (int)r->out->n_cands; arm++) {
            if (r->n_placed[arm] != j || !placements_allowed(r, arm))
                continue;
            int made = add_placement(r, arm, j);
            if (made < 0)
                r->prepared[arm] = 0;
            if (made != 0)
                continue;
            r->n_placed[arm] = j + 1;
            arm_result(r, arm)->placements = j + 1;
        }
}

/* Arm 'arm' runs on 'set' in its state of index 'u' (modulo the states it has). */
static void use_placement(point_run *r, int arm, int set, int u)
{
    if (r->n_placed[arm] > 1)
        r->state[arm][set] = r->placed[arm][set][u % r->n_placed[arm]];
}

/* Before a checked call, untimed: a fresh poison pattern, maybe the spare output buffers. */
static int before_call(point_run *r, int arm, int set)
{
    double t0 = now_s();
    kt_instance_rotate(r->inst[set], kt_rng_next(&r->check_rng));
    int err = kt_instance_poison_outputs(r->inst[set], r->backend);
    arm_result(r, arm)->check_s += now_s() - t0;
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
    kt_call call = arm_call(r, arm, set);
    int err = kt_check_call(&n, r->inst[set], spec_arm(r, arm)->variant, r->state[arm][set], &call);
    return err == KT_OK && n.inputs_modified;
}

/* Runs every arm still running but 'skip' once more on 'set' through the full check, the
 * inputs as generated, and fails those that write into them: a candidate as usual, the
 * baseline through the point's error. */
static void fail_input_writers(point_run *r, int set, int skip)
{
    for (int arm = 0; arm <= (int)r->out->n_cands; arm++) {
        kt_arm_result *res = arm_result(r, arm);
        if (arm == skip || res->failed || !r->prepared[arm] || !rewrites_inputs(r, arm, set))
            continue;
        char why[160];
        snprintf(why, sizeof(why),
                 "wrote into its inputs (input set %d, found by a re-check after a later check "
                 "saw them modified)",
                 set);
        fail_any_arm(r, arm, why);
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
    double t0 = now_s();
    kt_instance *inst = r->inst[set];
    kt_arm_result *res = arm_result(r, arm);
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
    int bad = numerics_problem(&n, "", why, len);
    if (!bad && full)
        fold_worst(&res->numerics[set], &n);
    res->check_s += now_s() - t0;
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
    kt_call call = arm_call(r, arm, set);
    kt_error_clear();
    int err = spec_arm(r, arm)->variant->run(r->state[arm][set], &call);
    if (err >= 0)
        err = kt_backend_synchronize(r->backend);
    if (err < 0)
        snprintf(why, len,
                 "run failed in the untimed call before timed call %lld: %s (input set %d)",
                 (long long)index, kt_error_or_code(err), set);
    return err < 0 ? err : KT_OK;
}

/* One checked call of 'arm' on 'set', timed when 't' is given, as call 'position' (0 or 1)
 * of its pair or -1. On failure returns <0 with the sentence in 'why'. */
static int checked_call(point_run *r, int arm, int set, int position, kt_timing *t, char *why,
                        size_t len)
{
    const char *kind = t ? "timed" : "warmup";
    int64_t index = ++r->calls[t != NULL][arm];
    int err;
    if (t && primes(r) && (err = prime(r, arm, set, index, why, len)) < 0)
        return err;
    err = before_call(r, arm, set);
    kt_call call = arm_call(r, arm, set);
    kt_stage_profile profile = {0};
    call.pair_position = position;
    call.profile = t ? &profile : NULL;
    if (err == KT_OK && t && r->spec->flush_cache)
        err = kt_backend_flush_cache(r->backend);
    if (err == KT_OK && t)
        err = kt_backend_timer_start(r->backend);
    if (err < 0) {
        snprintf(why, len, "%s", kt_error_last());
        return err;
    }
    kt_error_clear();
    int run_err = spec_arm(r, arm)->variant->run(r->state[arm][set], &call);
    if (t && (err = kt_backend_timer_stop(r->backend, t)) < 0) {
        snprintf(why, len, "%s", kt_error_last());
        return err;
    }
    if (run_err < 0) {
        snprintf(why, len, "run failed in %s call %lld: %s (input set %d)", kind, (long long)index,
                 kt_error_or_code(run_err), set);
        return run_err;
    }
    if (t)
        kt_stage_stats_add(&arm_result(r, arm)->stages, &profile, t->time_ns);
    char what[256];
    int bad = after_call(r, arm, set, what, sizeof(what));
    if (bad < 0) {
        snprintf(why, len, "%s", kt_error_last());
        return bad;
    }
    if (bad) {
        snprintf(why, len, "output check failed on %s call %lld (input set %d): %s", kind,
                 (long long)index, set, what);
        return KT_ERROR;
    }
    if (r->out->error[0]) { /* find_input_writer found the baseline writing into its inputs */
        snprintf(why, len, "%s", r->out->error);
        return KT_ERROR;
    }
    return KT_OK;
}

static int warmup(point_run *r, int arm, char *why, size_t len)
{
    step(r, arm, "warmup");
    for (int w = 0; w < r->spec->warmup; w++) {
        use_placement(r, arm, w % r->n_sets, w / r->n_sets);
        if (checked_call(r, arm, w % r->n_sets, -1, NULL, why, len) < 0)
            return KT_ERROR;
    }
    return KT_OK;
}

static int candidate_first(point_run *r, int rep)
{
    switch (r->spec->order) {
    case KT_ORDER_ALTERNATE: /* ABBA: base-cand, cand-base, cand-base, base-cand */
        return rep % 4 == 1 || rep % 4 == 2;
    default: /* random; grouped runs never form pairs here */
        return (int)(kt_rng_next(&r->order_rng) >> 63);
    }
}

/* One pair for candidate 'k' (0-based); returns <0 when the candidate failed. */
static int run_pair(point_run *r, int k, int rep)
{
    kt_candidate_result *c = &r->out->cands[k];
    kt_pair *p = &c->pairs[c->n_pairs];
    int set = rep % r->n_sets;
    int cand_first = candidate_first(r, rep);
    kt_timing tb, tc;
    char why[512];
    int err;
    if (c->arm.failed) /* by find_input_writer, during another arm's call */
        return KT_ERROR;
    int most = r->n_placed[0] > r->n_placed[k + 1] ? r->n_placed[0] : r->n_placed[k + 1];
    int u = most > 1 ? (int)(kt_rng_next(&r->placement_rng) % (uint64_t)most) : 0;
    use_placement(r, 0, set, u);
    use_placement(r, k + 1, set, u);
    /* each call names its arm first, so a crash is blamed on the right one */
    if (cand_first) {
        step(r, k + 1, "repetitions");
        if ((err = checked_call(r, k + 1, set, 0, &tc, why, sizeof(why))) < 0)
            goto cand_failed;
        step(r, 0, "repetitions");
        if ((err = checked_call(r, 0, set, 1, &tb, why, sizeof(why))) < 0)
            goto base_failed;
    } else {
        step(r, 0, "repetitions");
        if ((err = checked_call(r, 0, set, 0, &tb, why, sizeof(why))) < 0)
            goto base_failed;
        step(r, k + 1, "repetitions");
        if ((err = checked_call(r, k + 1, set, 1, &tc, why, sizeof(why))) < 0)
            goto cand_failed;
    }
    p->rep = rep;
    p->input_set = set;
    p->placement = u;
    p->candidate_first = cand_first;
    p->base_ns = tb.time_ns;
    p->cand_ns = tc.time_ns;
    p->base_noise = tb.noise;
    p->cand_noise = tc.noise;
    p->throttled = tb.throttled || tc.throttled;
    c->n_pairs++;
    return KT_OK;
cand_failed:
    if (!r->out->error[0]) /* else the baseline failed, found during this call */
        fail_arm(&c->arm, "%s", why);
    return err;
base_failed:
    fail_any_arm(r, 0, why);
    return err;
}

static int interrupted(const point_run *r)
{
    return r->hooks && r->hooks->interrupted && *r->hooks->interrupted;
}

/* Grouped design (comparison only): every baseline call, then every call of each candidate;
 * pairs are formed by repetition index; no early stopping. */
static void run_grouped(point_run *r, int reps)
{
    size_t K = r->out->n_cands;
    double *base = calloc((size_t)reps, sizeof(double));
    double *noise = calloc((size_t)reps, sizeof(double));
    if (!base || !noise) {
        snprintf(r->out->error, sizeof(r->out->error), "out of memory");
        goto done;
    }
    kt_timing t;
    char why[512];
    step(r, 0, "repetitions");
    for (int rep = 0; rep < reps && !interrupted(r); rep++) {
        use_placement(r, 0, rep % r->n_sets, rep / r->n_sets);
        if (checked_call(r, 0, rep % r->n_sets, -1, &t, why, sizeof(why)) < 0) {
            fail_any_arm(r, 0, why);
            goto done;
        }
        base[rep] = t.time_ns;
        noise[rep] = t.noise;
    }
    for (size_t k = 0; k < K; k++) {
        kt_candidate_result *c = &r->out->cands[k];
        if (c->arm.failed)
            continue;
        step(r, (int)k + 1, "repetitions");
        for (int rep = 0; rep < reps && !interrupted(r); rep++) {
            use_placement(r, (int)k + 1, rep % r->n_sets, rep / r->n_sets);
            if (checked_call(r, (int)k + 1, rep % r->n_sets, -1, &t, why, sizeof(why)) < 0) {
                if (r->out->error[0]) /* the baseline, found writing into its inputs */
                    goto done;
                fail_arm(&c->arm, "%s", why);
                break;
            }
            kt_pair *p = &c->pairs[c->n_pairs++];
            p->rep = rep;
            p->input_set = rep % r->n_sets;
            int most = r->n_placed[0] > r->n_placed[k + 1] ? r->n_placed[0] : r->n_placed[k + 1];
            p->placement = most > 1 ? rep / r->n_sets % most : 0; /* as use_placement ran */
            p->base_ns = base[rep];
            p->base_noise = noise[rep];
            p->cand_ns = t.time_ns;
            p->cand_noise = t.noise;
        }
    }
done:
    free(base);
    free(noise);
}

/* Judges candidate 'c' at decisive look 'at' of the design: the pairs after that look are
 * left out of the analysis (they were taken after the last planned look the point reached),
 * and no look at all means INCONCLUSIVE. */
void kt_candidate_judge_at_look(kt_candidate_result *c, const kt_arm_result *baseline,
                                const kt_spec *spec, const kt_point *point, const kt_design *d,
                                int at)
{
    if (at < 0) {
        int first = 0; /* the first look that may decide */
        while (first < d->n_looks - 1 && !d->decisive[first])
            first++;
        kt_candidate_evaluate(c, baseline, spec, point, 1.0 - d->alpha);
        if (c->verdict != KT_VERDICT_REJECT || !c->n_reasons ||
            !kt_reason_is_quality(c->reason_codes[0])) {
            c->verdict = KT_VERDICT_INCONCLUSIVE;
            c->n_reasons = 0;
            kt_candidate_add_reason(c, KT_REASON_NO_LOOK,
                                    "stopped after %zu pairs, before the first planned look "
                                    "that may decide (%d pairs) at %s",
                                    c->n_pairs, d->looks[first], point->id);
        }
        return;
    }
    size_t taken = c->n_pairs;
    if ((size_t)d->looks[at] < taken)
        c->n_pairs = (size_t)d->looks[at];
    kt_candidate_evaluate(c, baseline, spec, point, d->confidence[at]);
    c->looks = at + 1;
    c->pairs_unused = (int)(taken - c->n_pairs);
}

static int pair_of(void *ctx, int k, int rep)
{
    point_run *r = ctx;
    if (run_pair(r, k, rep) < 0)
        return r->out->error[0] ? -2 : -1;
    return 0;
}

static int interrupted_of(void *ctx)
{
    return interrupted(ctx);
}

static void progress_of(void *ctx, int reps, int max_reps)
{
    point_run *r = ctx;
    if (r->hooks && r->hooks->on_progress)
        r->hooks->on_progress(r->hooks->ctx, reps, max_reps);
}

static void apply_skips(point_run *r)
{
    const kt_trial_hooks *h = r->hooks;
    if (!h || !h->skip)
        return;
    for (size_t k = 0; k < r->out->n_cands; k++) {
        if (!h->skip[k])
            continue;
        kt_arm_result *res = &r->out->cands[k].arm;
        const kt_arm *a = &r->spec->candidates[k];
        snprintf(res->name, sizeof(res->name), "%s", a->name);
        snprintf(res->variant, sizeof(res->variant), "%s", a->variant->name);
        res->failed = 1;
        res->repeatable = -1; /* never checked: it is not run again */
        snprintf(res->failure, sizeof(res->failure), "%s",
                 h->skip_reason ? h->skip_reason[k] : "skipped");
    }
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
    int err = spec_arm(g->r, g->arm)->variant->run(g->r->state[g->arm][0], &g->call);
    return err < 0 ? err : kt_backend_synchronize(g->r->backend);
}

/* One call of 'arm' on input set 0 right after its profiling calls, with the checks of a
 * correctness call (poison, every element written and finite, inputs intact): the profiling
 * calls themselves run unchecked under the meters, so an arm that starts failing among them is
 * caught here. Returns 1 with the sentence in 'why' when the arm failed, else 0. */
static int check_after_profile(point_run *r, int arm, char *why, size_t len)
{
    kt_numerics n;
    kt_call call = arm_call(r, arm, 0);
    kt_error_clear();
    const char *when = " in the checked call after its profiling calls (input set 0)";
    int err = kt_check_call(&n, r->inst[0], spec_arm(r, arm)->variant, r->state[arm][0], &call);
    if (err < 0) {
        snprintf(why, len, "run failed%s: %s", when, kt_error_or_code(err));
        return 1;
    }
    return numerics_problem(&n, when, why, len);
}

/* The profiling pass: a few more calls of each arm that still runs, on input set 0, under
 * CPU counters and energy meters, and on the cuda backend NVML energy and CUPTI counters,
 * each arm's followed by one checked call (check_after_profile). Nothing here enters the
 * pairs, so the timed samples are the same with and without it; an arm that fails here fails
 * as in a timed call. Arms with no prepare (a NULL state) are profiled like the others. */
static void profile_arms(point_run *r)
{
    int intact = 1;
    /* calls since set 0's last full check may have written into it: find who, first */
    if (kt_instance_inputs_intact(r->inst[0], r->backend, &intact) == KT_OK && !intact &&
        kt_instance_restore_inputs(r->inst[0], r->backend) == KT_OK)
        fail_input_writers(r, 0, -1);
    for (size_t arm = 0; arm <= r->out->n_cands && !r->out->error[0]; arm++) {
        kt_arm_result *res = arm_result(r, (int)arm);
        if (res->failed || !r->prepared[arm])
            continue;
        step(r, (int)arm, "profile");
        kt_call call = arm_call(r, (int)arm, 0);
        kt_counter_set cs;
        kt_counters_start(&cs);
        double t0 = now_s();
        int calls = 0, err = 0;
        char why[512];
        kt_error_clear();
        /* only a negative return fails, as in the timed pairs (a positive one is outside the
         * header's contract, and must not cut the pass to one call) */
        for (; calls < KT_PROFILE_CALLS && err >= 0; calls++)
            err = spec_arm(r, (int)arm)->variant->run(r->state[arm][0], &call);
        if (err >= 0)
            err = kt_backend_synchronize(r->backend);
        double wall = now_s() - t0;
        kt_counters_stop(&cs, calls);
        if (err < 0) {
            snprintf(why, sizeof(why), "run failed in profiling call %d (input set 0): %s", calls,
                     kt_error_or_code(err));
            fail_any_arm(r, (int)arm, why);
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
            fail_any_arm(r, (int)arm, why);
    }
}

static void release_all(point_run *r)
{
    for (size_t arm = 0; arm <= r->out->n_cands; arm++) {
        const kt_variant *v = spec_arm(r, (int)arm)->variant;
        int held = 0; /* a crash in release is blamed on it, not on the last step */
        for (int s = 0; s < r->n_sets; s++) {
            held |= r->state[arm][s] != NULL;
            for (int j = 0; j < r->n_placed[arm]; j++)
                held |= r->placed[arm][s][j] != NULL;
        }
        if (held)
            step(r, (int)arm, "release");
        for (int s = 0; s < r->n_sets; s++) {
            if (r->n_placed[arm] == 0 && r->state[arm][s]) /* never placed: its only state */
                v->release(r->state[arm][s], r->backend);
            for (int j = 0; j < r->n_placed[arm]; j++) /* state[arm][s] is one of these */
                if (r->placed[arm][s][j])
                    v->release(r->placed[arm][s][j], r->backend);
        }
    }
    for (int s = 0; s < r->n_sets; s++)
        kt_instance_free(r->inst[s], r->backend);
}

static uint64_t point_seed(const kt_spec *spec, const kt_point *point)
{
    return kt_seed_mix(spec->seed, kt_hash_bytes(point->id, strlen(point->id)));
}

const char *kt_trial_pair_loop(const kt_pair_loop *l)
{
    size_t K = l->out->n_cands;
    int active[KT_LIMIT_CANDIDATES] = {0}, order[KT_LIMIT_CANDIDATES], look = 0;
    for (size_t k = 0; k < K && k < KT_LIMIT_CANDIDATES; k++)
        active[k] = !l->out->cands[k].arm.failed;
    for (int rep = 0; rep < l->max_reps; rep++) {
        int n_active = 0;
        for (size_t k = 0; k < K && k < KT_LIMIT_CANDIDATES; k++)
            if (active[k])
                order[n_active++] = (int)k;
        if (n_active == 0)
            return "decided";
        for (int i = n_active - 1; l->order_rng && i > 0; i--) { /* seeded shuffle */
            int j = (int)(kt_rng_next(l->order_rng) % (uint64_t)(i + 1));
            int t = order[i];
            order[i] = order[j];
            order[j] = t;
        }
        for (int i = 0; i < n_active; i++) {
            int rc = l->pair(l->ctx, order[i], rep);
            if (rc == -2)
                return "failed";
            if (rc < 0)
                active[order[i]] = 0;
        }
        /* a look due now is taken even when interrupted: a point it decides is finished */
        if (look < l->design->n_looks && rep + 1 == l->design->looks[look]) {
            kt_trial_look(l->out, active, l->design, look++, l->spec, l->point, rep + 1,
                          l->max_reps);
            if (l->progress)
                l->progress(l->ctx, rep + 1, l->max_reps);
        }
        if (l->interrupted(l->ctx)) {
            int any_active = 0;
            for (size_t k = 0; k < K && k < KT_LIMIT_CANDIDATES; k++)
                any_active |= active[k];
            return any_active ? "interrupted" : "decided";
        }
        if (rep + 1 >= l->min_reps && now_s() - l->start_s > l->spec->max_seconds_per_point)
            return "max_seconds";
    }
    return "max_repetitions";
}

void kt_trial_look(kt_point_result *out, int *active, const kt_design *d, int at,
                   const kt_spec *spec, const kt_point *point, int pairs, int max_reps)
{
    for (size_t k = 0; k < out->n_cands && d->decisive[at]; k++) {
        kt_candidate_result *c = &out->cands[k];
        if (!active[k])
            continue;
        kt_candidate_evaluate(c, &out->baseline, spec, point, d->confidence[at]);
        c->looks = at + 1;
        c->decided_at = at;
        /* A suspected order effect postpones stopping: the verdict then rests on every pair,
         * and the order check gets the power to confirm or clear it. */
        int suspect = c->order_p < KT_ORDER_SUSPECT_P;
        /* under geomean a point never stops on its own verdict: an estimate kept because it
         * looked extreme would bias the mean over the points */
        int may_stop = spec->aggregate != KT_AGGREGATE_GEOMEAN;
        if (c->verdict != KT_VERDICT_INCONCLUSIVE && !suspect && may_stop) {
            active[k] = 0;
            c->stopped_early = pairs < max_reps;
        }
    }
}

void kt_point_result_mark_unmeasured(kt_point_result *out, const kt_spec *spec,
                                     const kt_point *point)
{
    for (size_t k = 0; k < out->n_cands; k++) {
        kt_candidate_result *c = &out->cands[k];
        /* named even when never prepared: a failed baseline stops before them */
        snprintf(c->arm.name, sizeof(c->arm.name), "%s", spec->candidates[k].name);
        snprintf(c->arm.variant, sizeof(c->arm.variant), "%s", spec->candidates[k].variant->name);
        c->verdict = KT_VERDICT_INCONCLUSIVE;
        c->n_reasons = 1;
        c->reason_codes[0] = KT_REASON_NOT_MEASURED;
        snprintf(c->reasons[0], sizeof(c->reasons[0]), "not measured: %s at %s", out->error,
                 point->id);
    }
}

int kt_trial_run_point(kt_point_result *out, const kt_spec *spec, const kt_point *point,
                       kt_backend *backend, const kt_trial_hooks *hooks)
{
    double start = now_s();
    memset(out, 0, sizeof(*out));
    out->point = *point;
    out->n_cands = spec->n_candidates;
    out->cands = calloc(spec->n_candidates ? spec->n_candidates : 1, sizeof(*out->cands));
    if (!out->cands || spec->n_candidates > 16 || spec->input_sets > KT_MAX_SETS)
        return kt_error_code(KT_EINVAL, "too many candidates or input sets");
    point_run *r = calloc(1, sizeof(*r));
    if (!r)
        return kt_error_code(KT_ENOMEM, "out of memory");
    r->spec = spec;
    r->point = point;
    r->backend = backend;
    r->hooks = hooks;
    r->out = out;
    r->n_sets = spec->input_sets;
    uint64_t seed = point_seed(spec, point);
    kt_rng_seed(&r->order_rng, kt_seed_mix(seed, 0x6f72646572ull));
    kt_rng_seed(&r->check_rng, kt_seed_mix(seed, 0x636865636bull));
    kt_rng_seed(&r->placement_rng, kt_seed_mix(seed, 0x706c616365ull));

    int max_reps = spec->max_repetitions;
    if (hooks && hooks->quick && max_reps > KT_QUICK_MAX_REPETITIONS)
        max_reps = KT_QUICK_MAX_REPETITIONS;
    int min_reps = spec->min_repetitions < max_reps ? spec->min_repetitions : max_reps;
    for (size_t k = 0; k < out->n_cands; k++) {
        out->cands[k].pairs = calloc((size_t)max_reps, sizeof(kt_pair));
        if (!out->cands[k].pairs) {
            free(r);
            return kt_error_code(KT_ENOMEM, "out of memory");
        }
    }

    for (int s = 0; s < r->n_sets; s++) {
        if (interrupted(r))
            goto stopped;
        step(r, -1, "inputs"); /* inputs and their float64 reference: progress, per set */
        kt_error_clear();
        int err = kt_instance_create(&r->inst[s], backend, spec->op, point, spec->dtype,
                                     spec->distribution, spec->input_params,
                                     kt_seed_mix(seed, (uint64_t)s));
        if (err < 0) {
            fail_point(out, "cannot set up input set %d: %s", s, kt_error_or_code(err));
            r->n_sets = s;
            goto finish;
        }
    }
    out->flops = r->inst[0]->problem.flops;
    out->bytes = r->inst[0]->problem.bytes;

    prepare_and_check(r, 0);
    if (out->baseline.failed) {
        fail_any_arm(r, 0, out->baseline.failure);
        goto finish;
    }
    apply_skips(r);
    for (size_t k = 0; k < out->n_cands; k++) {
        if (interrupted(r))
            goto stopped;
        if (!out->cands[k].arm.failed)
            prepare_and_check(r, (int)k + 1);
    }
    if (interrupted(r))
        goto stopped;
    add_placements(r);
    if (out->baseline.failed) {
        fail_any_arm(r, 0, out->baseline.failure);
        goto finish;
    }

    out->timer_tick_ns = kt_backend_timer_tick_ns(backend); /* after prepare set sim's */
    char why[512];
    if (warmup(r, 0, why, sizeof(why)) < 0) {
        fail_any_arm(r, 0, why);
        goto finish;
    }
    for (size_t k = 0; k < out->n_cands; k++) {
        if (out->cands[k].arm.failed || warmup(r, (int)k + 1, why, sizeof(why)) == KT_OK)
            continue;
        if (out->error[0]) /* the baseline, found writing into its inputs */
            goto finish;
        fail_arm(&out->cands[k].arm, "%s", why);
    }

    kt_design design;
    double alpha = kt_design_point_alpha(spec);
    kt_spending spending = hooks ? hooks->spending : KT_SPEND_DEFAULT;
    if (kt_design_plan(&design, min_reps, max_reps, alpha, spending) < 0) {
        snprintf(out->error, sizeof(out->error), "%s", kt_error_last());
        goto finish;
    }
    if (spec->order == KT_ORDER_GROUPED) { /* one look, at the end */
        design.n_looks = 1;
        design.looks[0] = max_reps;
        design.decisive[0] = 1;
        design.confidence[0] = 1.0 - alpha;
    }
    const char *stop;
    for (size_t k = 0; k < out->n_cands; k++)
        out->cands[k].decided_at = -1;
    if (spec->order == KT_ORDER_GROUPED) {
        run_grouped(r, max_reps);
        stop = out->error[0] ? "failed" : "max_repetitions";
    } else {
        /* the time budget covers the timed pairs, not set-up and correctness checks */
        kt_pair_loop loop = {r->out,   r->spec,  r->point,       &design,
                             min_reps, max_reps, now_s(),        &r->order_rng,
                             r,        pair_of,  interrupted_of, progress_of};
        stop = kt_trial_pair_loop(&loop);
    }
    snprintf(out->stop_reason, sizeof(out->stop_reason), "%s", stop);
    /* after the timed pairs, before the verdicts (the energy gate reads it) */
    if (spec->profile && !(hooks && hooks->no_profile) && !interrupted(r))
        profile_arms(r);
    if (out->error[0]) /* the baseline failed in or after its profiling calls */
        goto finish;
    for (size_t k = 0; k < out->n_cands; k++) {
        kt_candidate_result *c = &out->cands[k];
        /* a candidate that stopped at a look keeps that look's verdict; any other is judged
         * at the last planned look its pairs reached, never at the count it stopped at */
        int at = c->decided_at >= 0 && c->verdict != KT_VERDICT_INCONCLUSIVE
                     ? c->decided_at
                     : kt_design_last_look(&design, (int)c->n_pairs);
        if (c->arm.failed)
            kt_candidate_evaluate(c, &out->baseline, spec, point, 1.0 - alpha);
        else
            kt_candidate_judge_at_look(c, &out->baseline, spec, point, &design, at);
        if (spec->order == KT_ORDER_GROUPED && !spec->allow_grouped_verdicts)
            kt_candidate_withhold_grouped(c, point->id);
        if (c->looks == 0 && !c->arm.failed) /* a failed arm took the looks it took */
            c->looks = design.n_looks;
        if ((int)c->n_pairs > out->repetitions)
            out->repetitions = (int)c->n_pairs;
    }
    goto finish;
stopped: /* Ctrl-C during start-up: nothing was timed; --resume measures the point again */
    snprintf(out->error, sizeof(out->error), "interrupted during start-up");
finish:
    if (out->error[0]) {
        snprintf(out->stop_reason, sizeof(out->stop_reason), "%s",
                 interrupted(r) ? "interrupted" : "failed");
        kt_point_result_mark_unmeasured(out, spec, point);
    }
    release_all(r);
    free(r);
    out->elapsed_s = now_s() - start;
    return KT_OK;
}
