/* plan.c - the cost of an experiment before it runs (see plan.h for the model). */
#include "spec/plan.h"

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

double kt_plan_call_seconds(const kt_spec *spec, const kt_arm *arm, const kt_problem *problem)
{
    if (strcmp(spec->backend, "sim") == 0) {
        int i = arm->variant
                    ? kt_param_index(arm->variant->params, arm->variant->n_params, "median_us")
                    : -1;
        return (i >= 0 ? arm->params[i].num : 100.0) * 1e-6;
    }
    if (strcmp(spec->backend, "cuda") == 0)
        return fmax(problem->flops / 3e14, problem->bytes / 3e12) + 5e-6;
    return fmax(problem->flops / (8e9 * cpu_threads(spec)), problem->bytes / 8e9) + 20e-6;
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
static double point_seconds(const kt_spec *spec, const kt_problem *p)
{
    double base = kt_plan_call_seconds(spec, &spec->baseline, p);
    double all_arms = base, pairs = 0, longest_pair = 0;
    for (size_t k = 0; k < spec->n_candidates; k++) {
        double cand = kt_plan_call_seconds(spec, &spec->candidates[k], p);
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
    for (size_t i = 0; i < m->n; i++) {
        kt_problem p;
        int err = spec->op->shape(&p, &m->points[i], spec->dtype, spec->input_params);
        if (err != KT_OK) {
            kt_plan_free(out);
            return err;
        }
        out->point_seconds[i] = point_seconds(spec, &p);
        out->total_seconds += out->point_seconds[i];
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
