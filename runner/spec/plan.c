/* plan.c - the cost of an experiment before it runs (see plan.h for the model). */
#include "spec/plan.h"
#include "spec/calibrate.h"
#include "spec/command_spec.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int cpu_threads(const kt_spec *spec)
{
    if (spec->threads > 0)
        return spec->threads;
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

static double arm_param(const kt_arm *arm, const char *name, double fallback)
{
    int i = arm->variant ? kt_param_index(arm->variant->params, arm->variant->n_params, name) : -1;
    return i >= 0 ? arm->params[i].num : fallback;
}

/* A call on a host 'busy' times oversubscribed (see calibrate.h). */
static double call_seconds(const kt_spec *spec, const kt_arm *arm, const kt_problem *problem,
                           double busy)
{
    if (spec->command) /* op command: what one real call took, when it was calibrated */
        return spec->command->call_seconds[arm == &spec->baseline ? 0 : arm - spec->candidates + 1];
    if (strcmp(spec->backend, "sim") == 0) /* virtual time, plus any real sleep per call */
        return (arm_param(arm, "median_us", 100.0) + arm_param(arm, "sleep_us", 0.0)) * 1e-6;
    if (strcmp(spec->backend, "cuda") == 0)
        return fmax(problem->flops / 3e14, problem->bytes / 3e12) + 5e-6;
    /* a roofline on an idle host, slowed by how oversubscribed the host is now */
    return (fmax(problem->flops / (8e9 * cpu_threads(spec)), problem->bytes / 8e9) + 20e-6) * busy;
}

double kt_plan_call_seconds(const kt_spec *spec, const kt_arm *arm, const kt_problem *problem)
{
    return call_seconds(spec, arm, problem, kt_calibration_busy());
}

/* Rates used when the measurement fails (an op that cannot shape the calibration point). */
static const kt_calibration fallback_rates = {5e-9, 1e-9, 1.0};

/* The host's rates, scaled from how busy it was when they were measured to 'busy'. */
static kt_calibration rates(const kt_spec *spec, double busy)
{
    kt_calibration c = fallback_rates;
    if (kt_calibration_get(&c, spec->op, spec->dtype) < 0)
        c = fallback_rates;
    double scale = busy / c.busy;
    c.gen_s_per_elem *= scale;
    c.ref_s_per_flop *= scale;
    return c;
}

static double startup_seconds(const kt_spec *spec, const kt_problem *p, const kt_calibration *c)
{
    double in_elems = 0;
    for (int i = 0; i < p->n_inputs; i++)
        in_elems += (double)kt_tensor_elems(&p->tensors[i]);
    return spec->input_sets *
           (c->gen_s_per_elem * in_elems + c->ref_s_per_flop * kt_calibration_work(p));
}

double kt_plan_startup_seconds(const kt_spec *spec, const kt_point *point)
{
    kt_problem p;
    if (spec->op->shape(&p, point, spec->dtype, spec->input_params) != KT_OK)
        return 0;
    kt_calibration c = rates(spec, kt_calibration_busy());
    return startup_seconds(spec, &p, &c);
}

double kt_plan_calls_per_point(const kt_spec *spec)
{
    double arms = 1.0 + (double)spec->n_candidates;
    double check_rounds = spec->numerics.bitwise_repeatable ? 2.0 : 1.0;
    return arms * spec->input_sets * check_rounds + arms * spec->warmup +
           2.0 * (double)spec->n_candidates * spec->max_repetitions;
}

/* Seconds at one point: correctness checks and warmup of every arm, then max_repetitions
 * pairs (baseline, candidate) per candidate, those capped at max_seconds_per_point plus the
 * longest pair (the loop checks its clock between pairs). */
static double point_seconds(const kt_spec *spec, const kt_problem *p, double busy)
{
    double base = call_seconds(spec, &spec->baseline, p, busy);
    double all_arms = base, pairs = 0, longest_pair = 0;
    for (size_t k = 0; k < spec->n_candidates; k++) {
        double cand = call_seconds(spec, &spec->candidates[k], p, busy);
        all_arms += cand;
        pairs += spec->max_repetitions * (base + cand);
        longest_pair = fmax(longest_pair, base + cand);
    }
    double check_rounds = spec->numerics.bitwise_repeatable ? 2.0 : 1.0;
    double fixed = all_arms * (spec->input_sets * check_rounds + spec->warmup);
    return fixed + fmin(pairs, spec->max_seconds_per_point + longest_pair);
}

int kt_plan_estimate(kt_plan *out, const kt_spec *spec, const kt_matrix *m)
{
    memset(out, 0, sizeof(*out));
    out->point_seconds = calloc(m->n ? m->n : 1, sizeof(double));
    if (!out->point_seconds)
        return kt_error_code(KT_ENOMEM, "out of memory");
    out->n = m->n;
    out->calls_per_point = kt_plan_calls_per_point(spec);
    double busy = kt_calibration_busy();
    kt_calibration c = rates(spec, busy), idle = rates(spec, 1.0);
    for (size_t i = 0; i < m->n; i++) {
        kt_problem p;
        int err = spec->op->shape(&p, &m->points[i], spec->dtype, spec->input_params);
        if (err != KT_OK) {
            kt_plan_free(out);
            return err;
        }
        double startup = startup_seconds(spec, &p, &c);
        out->point_seconds[i] = KT_PLAN_WORKER_SECONDS + startup + point_seconds(spec, &p, busy);
        out->startup_seconds += startup;
        out->total_seconds += out->point_seconds[i];
        out->idle_seconds += KT_PLAN_WORKER_SECONDS + startup_seconds(spec, &p, &idle) +
                             point_seconds(spec, &p, 1.0);
    }
    return KT_OK;
}

void kt_plan_free(kt_plan *plan)
{
    if (!plan)
        return;
    free(plan->point_seconds);
    memset(plan, 0, sizeof(*plan));
}
