/* kernel_probe.c - the two checks of the kernel kind that read a call's time
 * (docs/robustness.md): fresh-inputs' repeat probe (a call on the very inputs of the call before
 * it must not be much faster than one on fresh inputs: else the arm reuses results), and the
 * roofline (no timed call is faster than reading the least bytes any correct candidate must
 * read, at the host's measured read bandwidth). */
#include "arm/kernel/kernel_arm.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Ops where a correct candidate may read less than every input byte, and how little: bits per
 * element of the named input (every other input is read whole). Decode attention may select
 * blocks from one low-bit scan of the keys (FFD, docs/reference.md) and read only the values of
 * the blocks it keeps. */
static const struct {
    const char *op, *tensor;
    double bits;
} sparse_reads[] = {
    {"attention_decode", "k", 2},
    {"attention_decode", "v", 0},
    {"decoder_layer", "k_cache", 2},
    {"decoder_layer", "v_cache", 0},
};

static double least_read_bytes(const kt_problem *p, const char *op)
{
    double bytes = 0;
    for (int i = 0; i < p->n_inputs; i++) {
        double b = (double)kt_tensor_bytes(&p->tensors[i]);
        for (size_t j = 0; j < sizeof(sparse_reads) / sizeof(sparse_reads[0]); j++)
            if (strcmp(op, sparse_reads[j].op) == 0 &&
                strcmp(p->tensors[i].name, sparse_reads[j].tensor) == 0)
                b = (double)kt_tensor_elems(&p->tensors[i]) * sparse_reads[j].bits / 8;
        bytes += b;
    }
    return bytes;
}

/* GB/s at a working set of 'bytes': the figure of the largest size measured that 'bytes'
 * fills (a larger buffer reads as fast or slower). */
static double bandwidth_at(const kt_read_bandwidth *bw, double bytes)
{
    double gbs = bw->gbs[0];
    for (int i = 1; i < bw->n; i++)
        if (bw->bytes[i] <= bytes)
            gbs = bw->gbs[i];
    return gbs;
}

double kt_kernel_ran_ns(const point_run *r, const kt_timing *t)
{
    if (t->throttled)
        return NAN;
    double wait = r->backend->iface->caps->noise == KT_NOISE_DISTURBANCE ? t->noise * 1e3 : 0;
    return wait > 0 ? fmax(t->time_ns - wait, 0) : t->time_ns;
}

static const char *fmt_ns(char *buf, size_t len, double ns)
{
    if (ns >= 1e9)
        snprintf(buf, len, "%.3g s", ns * 1e-9);
    else if (ns >= 1e6)
        snprintf(buf, len, "%.3g ms", ns * 1e-6);
    else if (ns >= 1e3)
        snprintf(buf, len, "%.3g us", ns * 1e-3);
    else
        snprintf(buf, len, "%.3g ns", ns);
    return buf;
}

int kt_kernel_roofline(point_run *r, int arm, int set, char *why, size_t len)
{
    const kt_read_bandwidth *bw = r->env.bandwidth;
    const kt_backend_caps *caps = r->backend->iface->caps;
    double ns = r->last_ns[arm];
    /* a virtual clock's time is what the params say; a device's memory is not the host's
     * unless the user said how fast it reads (KT_READ_BANDWIDTH_GBS) */
    if (!bw || bw->n == 0 || isnan(ns) || caps->clock == KT_CLOCK_VIRTUAL ||
        (caps->device_memory && bw->n > 1))
        return 0;
    const kt_problem *p = &r->inst[set]->problem;
    double bytes = least_read_bytes(p, r->spec->op->name), gbs = bandwidth_at(bw, bytes);
    int threads = caps->device_memory || r->backend->threads < 1 ? 1 : r->backend->threads;
    double floor_ns = bytes / (gbs * threads * KT_ROOFLINE_MARGIN);
    if (!(ns < floor_ns))
        return 0;
    char a[32], b[32];
    snprintf(why, len,
             "check roofline: %s for a call that must read at least %.0f bytes is faster than "
             "reading its inputs allows (%.0f bytes at %.3g GB/s %s x %d threads, margin %g: "
             "at least %s)",
             fmt_ns(a, sizeof(a), ns), bytes, bytes, gbs, bw->source, threads, KT_ROOFLINE_MARGIN,
             fmt_ns(b, sizeof(b), floor_ns));
    return 1;
}

static double lowest(const double *v, int n)
{
    double m = v[0];
    for (int i = 1; i < n; i++)
        m = v[i] < m ? v[i] : m;
    return m;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(const double *v, int n)
{
    double s[KT_PROBES];
    memcpy(s, v, (size_t)n * sizeof(double));
    qsort(s, (size_t)n, sizeof(double), cmp_double);
    return n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

int kt_kernel_probe(point_run *r, int arm, int set, char *why, size_t len)
{
    if (r->backend->iface->caps->clock == KT_CLOCK_VIRTUAL || r->n_probes[arm] >= KT_PROBES ||
        isnan(r->last_ns[arm]))
        return 0;
    /* the timed call just checked had fresh inputs; one more call on the very same */
    int b = r->last_live[arm], o = 1 - r->last_out[arm], err;
    double ns[2] = {r->last_ran_ns[arm], NAN};
    kt_call call = kt_kernel_arm_call(r, arm, set);
    call.inputs = (const void *const *)r->live_in[b];
    call.outputs = (void *const *)r->outs[arm][o];
    r->out_hashed[arm][o] = 0;
    kt_timing t;
    kt_error_clear();
    if (r->spec->flush_cache && (err = kt_backend_flush_cache(r->backend)) < 0)
        return err;
    if ((err = kt_backend_timer_start(r->backend)) < 0)
        return err;
    const kt_variant *v = kt_kernel_spec_arm(r, arm)->variant;
    int run_err = v->run(r->state[arm][set], &call);
    if ((err = kt_backend_timer_stop(r->backend, &t)) < 0)
        return err;
    if (run_err >= 0) /* untimed: a Python arm's returned values checked and copied */
        run_err = kt_variant_finish(v, r->state[arm][set], &call);
    if (run_err < 0) {
        snprintf(why, len, "run failed in a repeat probe: %s", kt_error_or_code(run_err));
        return 1;
    }
    /* the repeat at its whole time, waits included, against the fresh call without its waits:
     * each bound errs towards "it computed", so a call that mostly waited for a CPU (0 ns once
     * its wait is taken off) never makes an honest arm look like a memoiser */
    ns[1] = t.throttled ? NAN : t.time_ns;
    if ((err = kt_backend_synchronize(r->backend)) < 0)
        return err;
    /* a flagged call says nothing about reuse; of each call only the time it ran counts */
    if (isnan(ns[0]) || isnan(ns[1]))
        return 0;
    int n = r->n_probes[arm]++;
    r->probe_ns[arm][0][n] = ns[0];
    r->probe_ns[arm][1][n] = ns[1];
    if (++n < KT_PROBE_MIN)
        return 0;
    /* the typical repeat far faster than every fresh call: noise only ever slows a call, so a
     * disturbed fresh call the backend did not see cannot make it fire unless all were */
    double fresh = lowest(r->probe_ns[arm][0], n), repeat = median(r->probe_ns[arm][1], n);
    double tick = r->out->timer_tick_ns > 0 ? r->out->timer_tick_ns : 0;
    if (!(repeat * KT_PROBE_RATIO < fresh) || fresh < 20 * tick)
        return 0;
    char a[32], c[32];
    snprintf(why, len,
             "check fresh-inputs: calls on the very inputs of the call before them took %s "
             "(median), that call on fresh inputs at least %s (%d probes; the fresh calls "
             "without their run-queue waits): it reuses earlier results instead of computing",
             fmt_ns(a, sizeof(a), repeat), fmt_ns(c, sizeof(c), fresh), n);
    return 1;
}
