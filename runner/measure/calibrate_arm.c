/* calibrate_arm.c - an arm's call, flush, checks and prepare, measured (see calibrate_arm.h). */
#include "measure/calibrate_arm.h"
#include "arm/kernel/check.h"
#include "measure/calibrate_rates.h"
#include "spec/spec_plugins.h"
#include "fork_pipe.h"
#include "util/limits.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
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
        if (kt_variant_call(v, state, &fresh) < 0 || kt_backend_synchronize(b) < 0)
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

/* In the child, on the calibration point's instance: 'x->arm' prepared and checked once
 * (the first full check, which faults in the copy of the inputs), then its steps timed. */
static int measure_arm(kt_arm_cost *c, const arm_ctx *x, kt_backend *b, kt_instance *inst)
{
    memset(c, 0, sizeof(*c));
    void *state = NULL;
    int rc = -1;
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
    if ((rc = time_steps(c, x, b, inst, state, &call)) < 0)
        goto done;
    c->touch_s = fmax(0, first - (c->call_s + c->scan_s + c->full_s));
    c->roof_s = kt_plan_roofline_seconds(x->spec, &inst->problem);
    kt_plan_io_bytes(&inst->problem, &c->in_bytes, &c->out_bytes);
done:
    if (state)
        x->arm->variant->release(state, b);
    return rc;
}

/* One arm's costs as the child sends them. */
typedef struct arm_record {
    int index; /* 0 the baseline, k the k-th candidate */
    kt_arm_cost cost;
} arm_record;

/* The child: one instance of the calibration point (inputs and reference made once), then
 * every arm not yet cached, each sent as soon as it is measured, so an arm that crashes the
 * child loses only itself and those after it. */
static void measure_in_child(int fd, const kt_spec *spec, const int *todo, int threads,
                             kt_phase phase)
{
    kt_point pt = kt_calibration_point_in(phase);
    kt_backend *b = NULL;
    kt_instance *inst = NULL;
    if (kt_backend_open(&b, spec->backend, threads, 7) < 0 ||
        kt_instance_create(&inst, b, spec->op, &pt, spec->dtype, spec->distribution,
                           spec->input_params, 7) < 0)
        _exit(1);
    for (size_t k = 0; k <= spec->n_candidates; k++) {
        if (!todo[k])
            continue;
        arm_ctx x = {spec, k == 0 ? &spec->baseline : &spec->candidates[k - 1], threads};
        arm_record r;
        memset(&r, 0, sizeof(r)); /* written whole, padding included */
        r.index = (int)k;
        if (measure_arm(&r.cost, &x, b, inst) != 0)
            memset(&r.cost, 0, sizeof(r.cost)); /* failed: sent with roof_s 0, so it is done */
        if (write(fd, &r, sizeof(r)) != sizeof(r))
            _exit(1);
    }
    kt_instance_free(inst, b);
    kt_backend_close(b);
    _exit(0);
}

/* The cache key: everything the costs depend on but the host (the file is per host). */
static void arm_key(char *out, size_t len, const kt_spec *spec, const kt_arm *arm, int threads,
                    kt_phase phase)
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
        n += snprintf(out + n, len - (size_t)n, "/dist%d/%s", (int)spec->distribution,
                      spec->flush_cache ? "flush" : "noflush");
    /* a variant or op from a plugin: that build of it (a rebuilt plugin is measured again) */
    const kt_spec_plugin *from = kt_spec_plugin_of(spec, kt_variant_plugin(v));
    const kt_spec_plugin *op_from = kt_spec_plugin_of(spec, kt_op_plugin(spec->op));
    if (from && n > 0 && (size_t)n < len)
        n += snprintf(out + n, len - (size_t)n, "/plugin=%.16s", from->sha256);
    if (op_from && op_from != from && n > 0 && (size_t)n < len)
        n += snprintf(out + n, len - (size_t)n, "/op_plugin=%.16s", op_from->sha256);
    /* decode keys stay as they were before prefill was calibrated on its own */
    if (phase == KT_PHASE_PREFILL && n > 0 && (size_t)n < len)
        snprintf(out + n, len - (size_t)n, "/prefill");
}

/* The cached numbers of an arm, in kt_arm_cost's order. */
static const char *const fields[] = {"call_s",  "roof_s",  "prepare_s", "scan_s",    "full_s",
                                     "flush_s", "touch_s", "in_bytes",  "out_bytes", "busy"};
#define N_FIELDS ((int)(sizeof(fields) / sizeof(fields[0])))

static void to_values(double v[N_FIELDS], const kt_arm_cost *c)
{
    const double all[N_FIELDS] = {c->call_s,  c->roof_s,  c->prepare_s, c->scan_s,    c->full_s,
                                  c->flush_s, c->touch_s, c->in_bytes,  c->out_bytes, c->busy};
    memcpy(v, all, sizeof(all));
}

static kt_arm_cost from_values(const double v[N_FIELDS])
{
    kt_arm_cost c = {v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], fmax(v[9], 1.0)};
    return c;
}

/* The keys of arms whose calibration child was killed for its time limit in this process:
 * a run plans twice (the budget check, then the run), and a hung arm must not cost the
 * limit twice. */
static char hung[2 * (1 + KT_LIMIT_CANDIDATES)][1024];
static size_t n_hung;

static int is_hung(const char *key)
{
    for (size_t i = 0; i < n_hung; i++)
        if (strcmp(hung[i], key) == 0)
            return 1;
    return 0;
}

int kt_calibration_arms(kt_arm_cost *out, int *have, const kt_spec *spec, kt_phase phase)
{
    size_t n = 1 + spec->n_candidates;
    memset(have, 0, n * sizeof(*have));
    if (!kt_backend_caps_of(spec->backend)->calibrated || n > 1 + KT_LIMIT_CANDIDATES)
        return 0;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    int threads = spec->threads > 0 ? spec->threads : (cores > 0 ? (int)cores : 1);
    char keys[1 + KT_LIMIT_CANDIDATES][1024];
    int todo[1 + KT_LIMIT_CANDIDATES] = {0}, missing = 0;
    for (size_t k = 0; k < n; k++) {
        const kt_arm *arm = k == 0 ? &spec->baseline : &spec->candidates[k - 1];
        double v[N_FIELDS];
        if (!arm->variant)
            continue;
        arm_key(keys[k], sizeof(keys[k]), spec, arm, threads, phase);
        if (is_hung(keys[k]))
            continue; /* keeps the roofline */
        if (kt_calibration_cache_get(keys[k], fields, v, N_FIELDS) == 0 && v[1] > 0) {
            out[k] = from_values(v);
            have[k] = 1;
        } else {
            todo[k] = 1;
            missing++;
        }
    }
    if (!missing)
        return 0;
    double busy = kt_calibration_busy();
    pid_t pid;
    int fd;
    if (kt_fork_pipe(&pid, &fd, "an arm calibration") < 0)
        return -1;
    if (pid == 0)
        measure_in_child(fd, spec, todo, threads, phase);
    arm_record r;
    size_t filled = 0;
    int last = -1, timed_out = 0;
    /* a spec that bounds its start-up steps bounds this one too */
    double limit = KT_CALIBRATION_LIMIT_S;
    if (spec->max_startup_seconds > 0 && spec->max_startup_seconds < limit)
        limit = spec->max_startup_seconds;
    double deadline = now_s() + limit;
    for (;;) {
        struct pollfd pfd = {fd, POLLIN, 0};
        int left_ms = (int)((deadline - now_s()) * 1000);
        int ready = left_ms > 0 ? poll(&pfd, 1, left_ms < 100 ? left_ms : 100) : 0;
        if (ready < 0 && errno == EINTR)
            continue;
        if (ready == 0 && kt_fork_pipe_ended(pid))
            break; /* all it wrote is read; a process an arm forked holds the pipe */
        if (ready == 0 && left_ms > 100)
            continue;
        if (ready <= 0) { /* a hung arm: what was measured stays, the rest keep the roofline */
            kill(pid, SIGKILL);
            timed_out = 1;
            break;
        }
        ssize_t got = read(fd, (char *)&r + filled, sizeof(r) - filled);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            break;
        if ((filled += (size_t)got) < sizeof(r))
            continue;
        filled = 0;
        if (r.index < 0 || (size_t)r.index >= n || !todo[r.index])
            continue;
        last = r.index > last ? r.index : last;
        if (!(r.cost.roof_s > 0))
            continue;
        r.cost.busy = (busy + kt_calibration_busy()) / 2;
        out[r.index] = r.cost;
        have[r.index] = 1;
        double v[N_FIELDS];
        to_values(v, &r.cost);
        kt_calibration_cache_put(keys[r.index], fields, v, N_FIELDS);
    }
    close(fd);
    kt_fork_pipe_wait(pid);
    for (size_t k = (size_t)(last + 1); timed_out && k < n; k++) {
        if (!todo[k])
            continue;
        const char *name = k == 0 ? NULL : spec->candidates[k - 1].name;
        fprintf(stderr,
                "warning: plan: %s%s%s gave no answer within %.3g s on the calibration problem "
                "and was killed; its estimate and those of the arms after it are the roofline's\n",
                name ? "candidate '" : "the baseline", name ? name : "", name ? "'" : "", limit);
        for (size_t j = k; j < n && n_hung < sizeof(hung) / sizeof(hung[0]); j++)
            if (todo[j])
                snprintf(hung[n_hung++], sizeof(hung[0]), "%s", keys[j]);
        break;
    }
    return 0;
}
