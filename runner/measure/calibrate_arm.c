/* calibrate_arm.c - an arm's call, flush, checks and prepare, measured (see calibrate_arm.h). */
#include "measure/calibrate_arm.h"
#include "measure/check.h"
#include "spec/calibrate.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define REPS 3

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

typedef struct arm_ctx {
    const kt_spec *spec;
    const kt_arm *arm;
    int threads;
} arm_ctx;

/* The timed steps of one arm on an instance already prepared into 'state'; best of REPS. */
static int time_steps(kt_arm_cost *c, const arm_ctx *x, kt_backend *b, kt_instance *inst,
                      void *state, const kt_call *call)
{
    const kt_variant *v = x->arm->variant;
    c->call_s = c->flush_s = c->scan_s = c->full_s = INFINITY;
    kt_numerics n;
    for (int rep = 0; rep < REPS; rep++) {
        double t0 = now_s();
        kt_instance_rotate(inst, (uint64_t)rep * 0x9e3779b97f4a7c15ull);
        if (kt_instance_poison_outputs(inst, b) < 0)
            return -1;
        double t1 = now_s();
        if (kt_backend_flush_cache(b) < 0)
            return -1;
        double t2 = now_s();
        kt_call fresh = kt_instance_call(inst, b, x->arm->params, x->threads);
        fresh.seed = call->seed;
        if (v->run(state, &fresh) < 0 || kt_backend_synchronize(b) < 0)
            return -1;
        double t3 = now_s();
        if (kt_instance_download_outputs(inst, b) < 0)
            return -1;
        kt_output_scan(&n, inst);
        double t4 = now_s();
        int intact = 1;
        kt_numerics_compare(&n, inst);
        if (kt_instance_inputs_intact(inst, b, &intact) < 0 || n.unwritten || n.nonfinite)
            return -1;
        double t5 = now_s();
        c->scan_s = fmin(c->scan_s, (t1 - t0) + (t4 - t3));
        c->flush_s = fmin(c->flush_s, t2 - t1);
        c->call_s = fmin(c->call_s, t3 - t2);
        c->full_s = fmin(c->full_s, t5 - t4);
    }
    return 0;
}

/* In the child: the calibration point's instance, the arm prepared and checked once, then
 * its steps timed. */
static int measure_arm(void *out, const void *ctx)
{
    const arm_ctx *x = ctx;
    const kt_spec *spec = x->spec;
    kt_arm_cost *c = out;
    memset(c, 0, sizeof(*c));
    kt_point pt = kt_calibration_point();
    kt_backend *b = NULL;
    kt_instance *inst = NULL;
    void *state = NULL;
    int rc = -1;
    if (kt_backend_open(&b, spec->backend, x->threads, 7) < 0 ||
        kt_instance_create(&inst, b, spec->op, &pt, spec->dtype, spec->distribution,
                           spec->input_params, 7) < 0)
        goto done;
    kt_call call = kt_instance_call(inst, b, x->arm->params, x->threads);
    call.seed = 7;
    double t0 = now_s();
    if (x->arm->variant->prepare(&state, &call) < 0)
        goto done;
    c->prepare_s = now_s() - t0;
    kt_numerics n;
    t0 = now_s();
    if (kt_check_call(&n, inst, x->arm->variant, state, &call) < 0 || n.unwritten || n.nonfinite)
        goto done;
    double first = now_s() - t0;
    rc = time_steps(c, x, b, inst, state, &call);
    c->touch_s = fmax(0, first - (c->call_s + c->scan_s + c->full_s));
    const kt_problem *p = &inst->problem;
    c->roof_s = kt_plan_roofline_seconds(spec, p);
    c->in_bytes = c->out_bytes = 0;
    for (int i = 0; i < p->n_inputs + p->n_outputs; i++)
        *(i < p->n_inputs ? &c->in_bytes : &c->out_bytes) +=
            (double)kt_tensor_bytes(&p->tensors[i]);
done:
    if (state)
        x->arm->variant->release(state, b);
    if (inst)
        kt_instance_free(inst, b);
    if (b)
        kt_backend_close(b);
    return rc;
}

/* The cache key: everything the costs depend on but the host (the file is per host). */
static void arm_key(char *out, size_t len, const kt_spec *spec, const kt_arm *arm, int threads)
{
    const kt_variant *v = arm->variant;
    int n = snprintf(out, len, "arm/%s/%s/%s/t%d/%s", spec->backend, spec->op->name,
                     kt_dtype_name(spec->dtype), threads, v->name);
    for (int i = 0; i < v->n_params && n > 0 && (size_t)n < len; i++)
        n += snprintf(out + n, len - (size_t)n, "/%s=%.17g", v->params[i].name, arm->params[i].num);
    for (int i = 0; i < spec->op->n_input_params && n > 0 && (size_t)n < len; i++)
        n += snprintf(out + n, len - (size_t)n, "/in.%s=%.17g", spec->op->input_params[i].name,
                      spec->input_params[i].num);
    if (n > 0 && (size_t)n < len)
        snprintf(out + n, len - (size_t)n, "/dist%d/%s", (int)spec->distribution,
                 spec->flush_cache ? "flush" : "noflush");
}

int kt_calibration_arm(kt_arm_cost *out, const kt_spec *spec, const kt_arm *arm)
{
    static const char *const fields[9] = {"call_s",  "roof_s",   "prepare_s", "scan_s", "full_s",
                                          "flush_s", "in_bytes", "out_bytes", "busy"};
    if (strcmp(spec->backend, "cpu") != 0 || !arm->variant)
        return -1;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    int threads = spec->threads > 0 ? spec->threads : (cores > 0 ? (int)cores : 1);
    char key[1024];
    arm_key(key, sizeof(key), spec, arm, threads);
    double v[10];
    if (kt_calibration_cache_get(key, fields, v, 10) == 0 && v[1] > 0) {
        *out = (kt_arm_cost){v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], fmax(v[9], 1.0)};
        return 0;
    }
    double busy = kt_calibration_busy();
    arm_ctx ctx = {spec, arm, threads};
    if (kt_calibration_in_child(out, sizeof(*out), measure_arm, &ctx) < 0)
        return -1;
    out->busy = (busy + kt_calibration_busy()) / 2;
    const double got[9] = {out->call_s,  out->roof_s,   out->prepare_s, out->scan_s, out->full_s,
                           out->flush_s, out->in_bytes, out->out_bytes, out->busy};
    kt_calibration_cache_put(key, fields, got, 9);
    return 0;
}
