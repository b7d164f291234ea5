/* plan.c - the cost of an experiment before it runs (see plan.h for the model). */
#include "spec/plan.h"
#include "spec/calibrate.h"
#include "spec/command_spec.h"
#include "spec/service_spec.h"
#include "spec/spec_plugins.h"
#include "util/limits.h"

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

void kt_plan_io_bytes(const kt_problem *p, double *in, double *out)
{
    *in = *out = 0;
    for (int i = 0; i < p->n_inputs + p->n_outputs; i++)
        *(i < p->n_inputs ? in : out) += (double)kt_tensor_bytes(&p->tensors[i]);
}

double kt_plan_roofline_seconds(const kt_spec *spec, const kt_problem *p)
{
    return fmax(p->flops / (8e9 * cpu_threads(spec)), p->bytes / 8e9) + 20e-6;
}

/* A call on a host 'busy' times oversubscribed (see calibrate.h). */
static double call_seconds(const kt_spec *spec, const kt_arm *arm, const kt_problem *problem,
                           double busy)
{
    if (spec->service) /* op service: a request's share of its round (closed loop: a guess) */
        return spec->service->closed ? 0.02 / spec->service->concurrency
                                     : 1.0 / spec->service->rate_per_s;
    if (spec->command) /* op command: what one real call took, when it was calibrated */
        return spec->command->call_seconds[arm == &spec->baseline ? 0 : arm - spec->candidates + 1];
    if (kt_backend_caps_of(spec->backend)->clock == KT_CLOCK_VIRTUAL) /* plus any real sleep */
        return (arm_param(arm, "median_us", 100.0) + arm_param(arm, "sleep_us", 0.0)) * 1e-6;
    if (kt_backend_caps_of(spec->backend)->device_memory)
        return fmax(problem->flops / 3e14, problem->bytes / 3e12) + 5e-6;
    /* a roofline on an idle host, slowed by how oversubscribed the host is now */
    return kt_plan_roofline_seconds(spec, problem) * busy;
}

double kt_plan_call_seconds(const kt_spec *spec, const kt_arm *arm, const kt_problem *problem)
{
    return call_seconds(spec, arm, problem, kt_calibration_busy());
}

/* Rates used when the measurement fails (an op that cannot shape the calibration point). */
static const kt_calibration fallback_rates = {5e-9, 1e-9, 1.0};

static kt_plan_rates_fn rates_fn;

void kt_plan_use_rates(kt_plan_rates_fn fn)
{
    rates_fn = fn;
}

/* The host's rates, scaled from how busy it was when they were measured to 'busy'. */
static kt_calibration rates(const kt_spec *spec, double busy)
{
    kt_calibration c = fallback_rates;
    const kt_spec_plugin *from = kt_spec_plugin_of(spec, kt_op_plugin(spec->op));
    if (!rates_fn ||
        rates_fn(&c, spec->op, spec->dtype, spec->distribution, from ? from->sha256 : NULL) < 0)
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
    if (kt_op_shape(spec->op, &p, point, spec->dtype, spec->input_params) != KT_OK)
        return 0;
    kt_calibration c = rates(spec, kt_calibration_busy());
    return startup_seconds(spec, &p, &c);
}

/* Input sets whose correctness step (prepare and a fully checked call) each arm runs before
 * its warmup: none for a command, whose calls are its warmup and its pairs only
 * (docs/command-trials.md, The protocol). */
static double checked_sets(const kt_spec *spec)
{
    return spec->command || spec->service ? 0.0 : (double)spec->input_sets;
}

/* Whether the point ends with the profiling pass: kernel trials only. */
static int profiled(const kt_spec *spec)
{
    return spec->profile && !spec->command && !spec->service;
}

double kt_plan_calls_per_point(const kt_spec *spec)
{
    double arms = 1.0 + (double)spec->n_candidates;
    double check_rounds = spec->numerics.bitwise_repeatable ? 2.0 : 1.0;
    return arms * checked_sets(spec) * check_rounds + arms * spec->warmup +
           2.0 * (double)spec->n_candidates * spec->max_repetitions;
}

static kt_plan_arm_costs_fn arm_costs_fn;

void kt_plan_use_arm_costs(kt_plan_arm_costs_fn fn)
{
    arm_costs_fn = fn;
}

/* One arm at one point, in seconds. */
typedef struct arm_seconds {
    double call;    /* the call alone (the profiling pass) */
    double checked; /* a warmup call: with its poison and scan, and its share of full checks */
    double timed;   /* a timed call: a checked one after a cache flush (trials.flush_cache), or
                       without the flush after an untimed call of its own (not on the sim) */
    double correct; /* one input set's correctness step: prepare and a fully checked call */
    double again;   /* bitwise_repeatable's second fully checked call */
    double touch;   /* once per input set: the first full check's copy of the inputs */
} arm_seconds;

/* The share of warmup and timed calls that get the full check (KT_FULL_CHECK_RATE of
 * arm/kernel/kernel_kind.h, which test_plan checks this against) and the profiling pass's calls
 * per arm (KT_PROFILE_CALLS). */
#define FULL_CHECK_RATE 1.0
#define PROFILE_CALLS   5

/* 'arm' at 'p': from its measured costs when it has them ('cost' not NULL), scaled from the
 * calibration problem to 'p' and by how much busier the host is now; else every call, checked
 * or not, costs the backend's call model. */
static arm_seconds arm_at(const kt_spec *spec, const kt_arm *arm, const kt_problem *p, double busy,
                          const kt_arm_cost *cost)
{
    arm_seconds a;
    int sim = kt_backend_caps_of(spec->backend)->clock == KT_CLOCK_VIRTUAL;
    double sim_prepare = sim /* prepare_ms: a real sleep */
                             ? arm_param(arm, "prepare_ms", 0.0) * 1e-3
                             : 0;
    if (!cost) {
        double c = call_seconds(spec, arm, p, busy);
        a = (arm_seconds){c, c, c, c + sim_prepare, c, 0};
        return a;
    }
    double in, out;
    kt_plan_io_bytes(p, &in, &out);
    double slow = busy / cost->busy;
    double call = cost->call_s * kt_plan_roofline_seconds(spec, p) / cost->roof_s * slow;
    if (sim) /* the call is virtual; the steps around it are not */
        call = call_seconds(spec, arm, p, busy);
    double scan = cost->out_bytes > 0 ? cost->scan_s * out / cost->out_bytes * slow : 0;
    double full = cost->full_s * (in + out) / fmax(cost->in_bytes + cost->out_bytes, 1) * slow;
    double prepare = cost->in_bytes > 0 ? cost->prepare_s * in / cost->in_bytes * slow : 0;
    prepare = fmax(prepare, sim_prepare); /* whatever the size */
    a.call = call;
    a.checked = call + scan + FULL_CHECK_RATE * full;
    int primed = kt_backend_caps_of(spec->backend)->flush != KT_FLUSH_NO_CACHES;
    a.timed = a.checked + (spec->flush_cache ? cost->flush_s * slow : primed ? call : 0);
    a.again = call + scan + full;
    a.correct = prepare + a.again;
    a.touch = cost->in_bytes > 0 ? cost->touch_s * in / cost->in_bytes * slow : 0;
    return a;
}

/* Seconds at one point: correctness checks and warmup of every arm, then max_repetitions
 * rounds of pairs (baseline, candidate) for every candidate, those capped at
 * max_seconds_per_point plus the round in progress (the loop checks its clock after each
 * round) but never under min_repetitions rounds, then the profiling pass. 'costs' holds the
 * measured arms (baseline first), NULL where an arm has none. */
static double point_seconds(const kt_spec *spec, const kt_problem *p, double busy,
                            const kt_arm_cost *const *costs)
{
    const kt_command_spec *cs = spec->command;
    if (cs && cs->call_failed[0]) /* a failing baseline fails the point at once */
        return cs->fail_seconds[0];
    arm_seconds base = arm_at(spec, &spec->baseline, p, busy, costs[0]);
    double fixed = checked_sets(spec) * base.touch, round = 0, profile = 0;
    for (size_t k = 0; k <= spec->n_candidates; k++) {
        if (k > 0 && cs && cs->call_failed[k]) { /* it stops at its first failure */
            fixed += cs->fail_seconds[k];
            continue;
        }
        arm_seconds a = k == 0 ? base : arm_at(spec, &spec->candidates[k - 1], p, busy, costs[k]);
        fixed +=
            checked_sets(spec) * (a.correct + (spec->numerics.bitwise_repeatable ? a.again : 0));
        fixed += spec->warmup * a.checked;
        profile += PROFILE_CALLS * a.call;
        if (k > 0)
            round += base.timed + a.timed;
    }
    double rounds = spec->max_repetitions * round;
    double at_least = fmin(spec->min_repetitions, spec->max_repetitions) * round;
    double pairs = fmax(fmin(rounds, spec->max_seconds_per_point + round), at_least);
    return fixed + pairs + (profiled(spec) ? profile : 0);
}

double kt_plan_point_bytes(const kt_spec *spec, const kt_problem *p)
{
    if (spec->command)
        return 0;
    double in, out, out_elems = 0;
    kt_plan_io_bytes(p, &in, &out);
    for (int o = 0; o < p->n_outputs; o++)
        out_elems += (double)kt_tensor_elems(&p->tensors[p->n_inputs + o]);
    /* the calls' own buffers (arm/kernel/kernel_fresh.c): two input sets, each arm's two output
     * sets between guard zones of at least 64 KiB and the output's size; a spec of one input
     * set gets a second of the calls' own */
    double sets = spec->input_sets > 1 ? spec->input_sets : 2;
    double calls = 2.0 * in + (1.0 + (double)spec->n_candidates) * 2.0 *
                                  (out + 2.0 * fmax(out, 64.0 * 1024 * (double)p->n_outputs));
    if (kt_backend_caps_of(spec->backend)->device_memory) /* its copies are on the device */
        return sets * (2.0 * in + out + 8.0 * out_elems) + calls;
    return sets * (3.0 * in + 3.0 * out + 8.0 * out_elems) + calls;
}

int kt_plan_estimate(kt_plan *out, const kt_spec *spec, const kt_matrix *m)
{
    memset(out, 0, sizeof(*out));
    out->point_seconds = calloc(m->n ? m->n : 1, sizeof(double));
    out->point_bytes = calloc(m->n ? m->n : 1, sizeof(double));
    if (!out->point_seconds || !out->point_bytes) {
        kt_plan_free(out);
        return kt_error_code(KT_ENOMEM, "out of memory");
    }
    out->n = m->n;
    out->calls_per_point = kt_plan_calls_per_point(spec);
    double busy = kt_calibration_busy();
    kt_calibration c = rates(spec, busy), idle = rates(spec, 1.0);
    /* per phase: a decode calibration is memory-bound and says nothing of a prefill point's
     * arithmetic, so prefill points get their own (only when the matrix has any) */
    kt_arm_cost measured[2][1 + KT_LIMIT_CANDIDATES];
    int have[2][1 + KT_LIMIT_CANDIDATES] = {{0}};
    const kt_arm_cost *costs[2][1 + KT_LIMIT_CANDIDATES] = {{0}};
    for (int ph = 0; ph < 2; ph++) {
        int wanted = ph == KT_PHASE_DECODE;
        for (size_t i = 0; i < m->n && !wanted; i++)
            wanted = m->points[i].phase == KT_PHASE_PREFILL;
        if (wanted && arm_costs_fn && spec->n_candidates <= KT_LIMIT_CANDIDATES &&
            arm_costs_fn(measured[ph], have[ph], spec, (kt_phase)ph) == 0)
            for (size_t k = 0; k <= spec->n_candidates; k++)
                costs[ph][k] = have[ph][k] && measured[ph][k].roof_s > 0 ? &measured[ph][k] : NULL;
    }
    for (size_t i = 0; i < m->n; i++) {
        const kt_arm_cost *const *at = costs[m->points[i].phase == KT_PHASE_PREFILL];
        kt_problem p;
        int err = kt_op_shape(spec->op, &p, &m->points[i], spec->dtype, spec->input_params);
        if (err != KT_OK) {
            kt_plan_free(out);
            return err;
        }
        out->point_bytes[i] = kt_plan_point_bytes(spec, &p);
        double startup = startup_seconds(spec, &p, &c);
        out->point_seconds[i] =
            KT_PLAN_WORKER_SECONDS + startup + point_seconds(spec, &p, busy, at);
        out->startup_seconds += startup;
        out->total_seconds += out->point_seconds[i];
        out->idle_seconds += KT_PLAN_WORKER_SECONDS + startup_seconds(spec, &p, &idle) +
                             point_seconds(spec, &p, 1.0, at);
    }
    return KT_OK;
}

void kt_plan_free(kt_plan *plan)
{
    if (!plan)
        return;
    free(plan->point_seconds);
    free(plan->point_bytes);
    memset(plan, 0, sizeof(*plan));
}
