/* kernel_arm.c - the kernel kind of arm: a built-in or plugin variant of the spec's op. Per
 * point, its input sets and their float64 reference (open); per arm, its prepared state on each
 * set, checked against the reference, bit-repeatable when the spec asks (prepare); its states
 * released at the end. Calls and checks are in kernel_call.c, placements in kernel_place.c. */
#include "arm/kernel/kernel_arm.h"

#include "util/sanitize.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

double kt_kernel_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

const kt_arm *kt_kernel_spec_arm(const point_run *r, int arm)
{
    return arm == 0 ? &r->spec->baseline : &r->spec->candidates[arm - 1];
}

kt_arm_result *kt_kernel_arm_result(point_run *r, int arm)
{
    return arm == 0 ? &r->out->baseline : &r->out->cands[arm - 1].arm;
}

void kt_kernel_step(const point_run *r, int arm, const char *what)
{
    if (r->env.on_step)
        r->env.on_step(r->env.ctx, arm, what);
}

/* A reason that holds a kernel's message (a plugin's: any bytes) as one line of valid UTF-8
 * (kt_sanitize), as result.json and the terminal need; the reasons are made from it. */
int kt_kernel_interrupted(const point_run *r)
{
    return r->env.interrupted && *r->env.interrupted;
}

static void set_reason(char *out, size_t len, const char *fmt, va_list ap)
{
    char raw[1024];
    vsnprintf(raw, sizeof(raw), fmt, ap);
    kt_sanitize(out, len, raw);
}

void kt_kernel_fail_arm(kt_arm_result *res, const char *fmt, ...)
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

void kt_kernel_fail_any_arm(point_run *r, int arm, const char *why)
{
    if (arm != 0)
        kt_kernel_fail_arm(kt_kernel_arm_result(r, arm), "%s", why);
    else if (!r->out->error[0])
        fail_point(r->out, "baseline '%s' failed: %s", r->spec->baseline.name, why);
}

kt_call kt_kernel_arm_call(const point_run *r, int arm, int set)
{
    kt_call call = kt_instance_call(r->inst[set], r->backend, kt_kernel_spec_arm(r, arm)->params,
                                    r->backend->threads);
    call.seed = kt_seed_mix(r->spec->seed, (uint64_t)arm);
    return call;
}

int kt_kernel_numerics_problem(const kt_numerics *n, const char *suffix, char *why, size_t len)
{
    if (n->unwritten > 0)
        snprintf(why, len, "check written: left %lld of %lld output elements unwritten%s",
                 (long long)n->unwritten, (long long)n->elems, suffix);
    else if (n->nonfinite > 0)
        snprintf(why, len, "check finite: produced %lld NaN or Inf output elements%s",
                 (long long)n->nonfinite, suffix);
    else if (n->overrun_before || n->overrun_after)
        snprintf(why, len,
                 "check guard: a write %lld bytes past output '%s' (%lld bytes before its "
                 "start): wrote outside its output%s",
                 (long long)n->overrun_after, n->overrun_tensor, (long long)n->overrun_before,
                 suffix);
    else if (n->inputs_modified)
        snprintf(why, len, "check inputs-unchanged: wrote into its inputs%s", suffix);
    else
        return 0;
    return 1;
}

/* Checks one set's output: every element written, finite, inputs untouched. */
static int output_acceptable(kt_arm_result *res, int set)
{
    char suffix[32], why[256];
    snprintf(suffix, sizeof(suffix), " on input set %d", set);
    if (kt_kernel_numerics_problem(&res->numerics[set], suffix, why, sizeof(why)))
        kt_kernel_fail_arm(res, "%s", why);
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
        kt_call call = kt_kernel_arm_call(r, arm, set);
        err = kt_check_call(&again, inst, kt_kernel_spec_arm(r, arm)->variant, r->state[arm][set],
                            &call);
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
    kt_arm_result *res = kt_kernel_arm_result(r, arm);
    const kt_arm *a = kt_kernel_spec_arm(r, arm);
    const kt_variant *v = a->variant;
    res->n_sets = r->n_sets;
    res->repeatable = r->spec->numerics.bitwise_repeatable ? 1 : -1;
    double variant_bytes = 0;
    for (int s = 0; s < r->n_sets && !res->failed; s++) {
        kt_call call = kt_kernel_arm_call(r, arm, s);
        size_t before = r->backend->bytes_current;
        kt_backend_reset_peak(r->backend);
        kt_kernel_step(r, arm, "prepare");
        double t0 = kt_kernel_now_s();
        kt_error_clear();
        int err = v->prepare(&r->state[arm][s], &call);
        if (err < 0) {
            kt_kernel_fail_arm(res, "prepare failed: %s (input set %d)", kt_error_or_code(err), s);
            break;
        }
        if (s == 0)
            res->prepare_ns = (kt_kernel_now_s() - t0) * 1e9;
        kt_kernel_step(r, arm, "correctness");
        if ((err = kt_check_call(&res->numerics[s], r->inst[s], v, r->state[arm][s], &call)) < 0) {
            kt_kernel_fail_arm(res, "run failed: %s (input set %d)", kt_error_or_code(err), s);
            break;
        }
        if (!output_acceptable(res, s))
            break;
        if (res->repeatable == 1) {
            int same = 0;
            if ((err = check_repeatable(r, arm, s, &same)) < 0) {
                kt_kernel_fail_arm(res, "run failed: %s (input set %d)", kt_error_or_code(err), s);
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

int kt_kernel_open(point_run **set, int *n_sets, const kt_arm_env *env)
{
    const kt_spec *spec = env->spec;
    if (spec->n_candidates > 16 || spec->input_sets > KT_MAX_SETS)
        return kt_error_code(KT_EINVAL, "too many candidates or input sets");
    point_run *r = calloc(1, sizeof(*r));
    if (!r)
        return kt_error_code(KT_ENOMEM, "out of memory");
    r->env = *env;
    r->spec = spec;
    r->point = env->point;
    r->backend = env->backend;
    r->out = env->out;
    r->n_sets = spec->input_sets;
    kt_rng_seed(&r->check_rng, kt_seed_mix(env->seed, 0x636865636bull));
    *set = r;
    for (int s = 0; s < r->n_sets; s++) {
        if (kt_kernel_interrupted(r)) { /* nothing was timed: --resume measures it again */
            snprintf(r->out->error, sizeof(r->out->error), "interrupted during start-up");
            break;
        }
        kt_kernel_step(r, -1, "inputs"); /* inputs and their float64 reference: progress */
        kt_error_clear();
        int err = kt_instance_create(&r->inst[s], r->backend, spec->op, r->point, spec->dtype,
                                     spec->distribution, spec->input_params,
                                     kt_seed_mix(env->seed, (uint64_t)s));
        if (err < 0) {
            fail_point(r->out, "cannot set up input set %d: %s", s, kt_error_or_code(err));
            r->n_sets = s;
            break;
        }
    }
    if (!r->out->error[0]) {
        kt_error_clear();
        int err = kt_fresh_open(r);
        if (err < 0)
            fail_point(r->out, "cannot set up the buffers of the calls: %s", kt_error_or_code(err));
    }
    if (!r->out->error[0]) {
        r->out->flops = r->inst[0]->problem.flops;
        r->out->bytes = r->inst[0]->problem.bytes;
    }
    *n_sets = r->n_sets;
    return KT_OK;
}

void kt_kernel_describe(point_run *r, int arm)
{
    kt_arm_result *res = kt_kernel_arm_result(r, arm);
    const kt_arm *a = kt_kernel_spec_arm(r, arm);
    snprintf(res->name, sizeof(res->name), "%s", a->name);
    snprintf(res->variant, sizeof(res->variant), "%s", a->variant->name);
}

int kt_kernel_prepare(point_run *r, int arm)
{
    kt_arm_result *res = kt_kernel_arm_result(r, arm);
    if (arm > 0 && kt_kernel_interrupted(r)) {
        snprintf(r->out->error, sizeof(r->out->error), "interrupted during start-up");
        return -2;
    }
    prepare_and_check(r, arm);
    if (arm == 0 && res->failed) {
        kt_kernel_fail_any_arm(r, 0, res->failure);
        return -2;
    }
    return res->failed ? -1 : 0;
}

void kt_kernel_release(point_run *r, int arm)
{
    const kt_variant *v = kt_kernel_spec_arm(r, arm)->variant;
    char why[256];
    /* late-writes: what its last calls left must still be there */
    if (!kt_kernel_arm_result(r, arm)->failed && !r->out->error[0] &&
        kt_fresh_recheck(r, arm, why, sizeof(why)) == 1)
        kt_kernel_fail_any_arm(r, arm, why);
    int held = 0; /* a crash in release is blamed on it, not on the last step */
    for (int s = 0; s < r->n_sets; s++) {
        held |= r->state[arm][s] != NULL;
        for (int j = 0; j < r->n_placed[arm]; j++)
            held |= r->placed[arm][s][j] != NULL;
    }
    if (held)
        kt_kernel_step(r, arm, "release");
    for (int s = 0; s < r->n_sets; s++) {
        if (r->n_placed[arm] == 0 && r->state[arm][s]) /* never placed: its only state */
            v->release(r->state[arm][s], r->backend);
        for (int j = 0; j < r->n_placed[arm]; j++) /* state[arm][s] is one of these */
            if (r->placed[arm][s][j])
                v->release(r->placed[arm][s][j], r->backend);
        r->state[arm][s] = NULL;
        for (int j = 0; j < r->n_placed[arm]; j++)
            r->placed[arm][s][j] = NULL;
    }
}

void kt_kernel_close(point_run *r)
{
    kt_fresh_close(r);
    for (int s = 0; s < r->n_sets; s++)
        kt_instance_free(r->inst[s], r->backend);
    free(r);
}
