/* lognormal.c - the synthetic op's sim variant: durations from a lognormal law, outputs
 * equal to the reference plus a chosen relative error, and injectable failures. */
#include "sim.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum {
    P_MEDIAN_US,
    P_SPREAD,
    P_DRIFT,
    P_ORDER_EFFECT,
    P_REL_ERROR,
    P_FAIL,
    P_EXTRA_BYTES,
    P_SLEEP_US,
    P_FAIL_AFTER,
    P_PREPARE_MS,
    P_TICK_NS,
    P_PLACEMENT,
    P_COUNT
};
enum { FAIL_NONE, FAIL_ERROR, FAIL_NAN, FAIL_UNWRITTEN, FAIL_CRASH, FAIL_INPUTS };

static const kt_param_def lognormal_params[P_COUNT] = {
    {"median_us", KT_PARAM_FLOAT, 100, 1e-3, 1e9, NULL,
     "median duration of one call, microseconds"},
    {"spread", KT_PARAM_FLOAT, 0.02, 0, 3, NULL, "lognormal sigma of the duration"},
    {"drift", KT_PARAM_FLOAT, 0, -0.5, 100, NULL,
     "fractional change of every duration per second of virtual time"},
    {"order_effect", KT_PARAM_FLOAT, 0, -0.5, 10, NULL,
     "fractional slowdown when this variant runs second in a pair"},
    {"rel_error", KT_PARAM_FLOAT, 0, 0, 100, NULL,
     "relative L2 error of the output against the reference"},
    {"fail", KT_PARAM_ENUM, FAIL_NONE, 0, 0, "none|error|nan|unwritten|crash|inputs",
     "injected failure of every run call (inputs: a correct output, then 1 added to its first "
     "input element)"},
    {"extra_bytes", KT_PARAM_INT, 0, 0, 1e12, NULL,
     "bytes the variant allocates in prepare (for memory thresholds)"},
    {"sleep_us", KT_PARAM_FLOAT, 0, 0, 1e6, NULL,
     "real time each call sleeps, microseconds (for interruption tests; not timed)"},
    {"fail_after", KT_PARAM_INT, 0, 0, 1e9, NULL,
     "run calls of this arm (every input set, correctness checks included) that succeed "
     "before 'fail' applies (0: from the first)"},
    {"prepare_ms", KT_PARAM_FLOAT, 0, 0, 1e6, NULL,
     "real time prepare sleeps, milliseconds (a one-time setup cost, for thresholds.setup)"},
    {"tick_ns", KT_PARAM_FLOAT, 0, 0, 1e9, NULL,
     "timer tick of the virtual clock, ns: readings are floored to multiples of it (0: exact; "
     "the largest tick of the arms applies to all)"},
    {"placement", KT_PARAM_FLOAT, 0, 0, 1, NULL,
     "lognormal sigma of a factor drawn once per prepared state and applied to every call on it: "
     "where a real kernel's buffers lie moves its time for as long as they lie there"},
};

typedef struct lognormal_state {
    void *extra;
    size_t extra_bytes;
    double noise_scale; /* multiplies the deterministic noise pattern to reach rel_error */
    double placement;   /* this state's fixed factor on every duration */
} lognormal_state;

/* A fixed pseudo-random pattern in [-1, 1): the same for every call, so outputs are
 * repeatable (bitwise_repeatable holds) while still carrying exactly 'rel_error'. */
static double noise_at(int64_t i)
{
    uint64_t h = kt_seed_mix((uint64_t)i, 0x6e6f697365ull);
    return (double)(h >> 11) * 0x1.0p-52 - 1.0;
}

static int lognormal_prepare(void **out, const kt_call *call)
{
    lognormal_state *st = calloc(1, sizeof(*st));
    if (!st)
        return kt_error_code(KT_ENOMEM, "out of memory");
    *out = st;
    double prepare_ms = call->params[P_PREPARE_MS].num;
    if (prepare_ms > 0) {
        struct timespec ts = {(time_t)(prepare_ms / 1e3), (long)(fmod(prepare_ms, 1e3) * 1e6)};
        while (nanosleep(&ts, &ts) != 0)
            ;
    }
    kt_sim_set_tick(call->backend, call->params[P_TICK_NS].num);
    double sigma = call->params[P_PLACEMENT].num;
    st->placement = 1.0;
    if (sigma > 0) { /* from the arm's seed and how many states were prepared before this one */
        static uint64_t prepared;
        kt_rng r;
        kt_rng_seed(&r, kt_seed_mix(call->seed, ++prepared));
        st->placement = exp(sigma * kt_rng_normal(&r));
    }
    st->extra_bytes = (size_t)call->params[P_EXTRA_BYTES].num;
    if (st->extra_bytes) {
        int err = kt_backend_alloc(call->backend, &st->extra, st->extra_bytes);
        if (err < 0)
            return err;
        memset(st->extra, 0, st->extra_bytes);
    }
    const kt_problem *p = call->problem;
    double ref2 = 0, noise2 = 0;
    for (int64_t i = 0; i < p->elems; i++) {
        double x = kt_dtype_load(call->inputs[0], p->dtype, (size_t)i);
        ref2 += x * x;
        noise2 += noise_at(i) * noise_at(i);
    }
    st->noise_scale = noise2 > 0 ? call->params[P_REL_ERROR].num * sqrt(ref2 / noise2) : 0;
    return KT_OK;
}

static int lognormal_run(void *state, const kt_call *call)
{
    lognormal_state *st = state;
    const kt_problem *p = call->problem;
    const kt_param_value *v = call->params;
    kt_backend *b = call->backend;
    double seconds = kt_sim_now_ns(b) * 1e-9;
    double ns = v[P_MEDIAN_US].num * 1e3 * exp(v[P_SPREAD].num * kt_rng_normal(kt_sim_rng(b)));
    ns *= st->placement * (1.0 + v[P_DRIFT].num * seconds);
    if (call->pair_position == 1)
        ns *= 1.0 + v[P_ORDER_EFFECT].num;
    kt_sim_advance(b, ns);
    if (v[P_SLEEP_US].num > 0) {
        struct timespec pause = {0, (long)(v[P_SLEEP_US].num * 1e3)};
        pause.tv_sec = pause.tv_nsec / 1000000000L;
        pause.tv_nsec %= 1000000000L;
        /* the whole time, as a real kernel call would take it: a signal does not cut it */
        while (nanosleep(&pause, &pause) < 0 && errno == EINTR)
            ;
    }

    int64_t calls = kt_sim_count_call(b, call->seed); /* of this arm, on every input set */
    int fail = calls >= (int64_t)v[P_FAIL_AFTER].num ? (int)v[P_FAIL].num : FAIL_NONE;
    if (fail == FAIL_ERROR)
        return kt_error_set("injected failure (fail: error)");
    if (fail == FAIL_CRASH)
        raise(SIGSEGV);
    int64_t n = p->elems;
    if (fail == FAIL_UNWRITTEN)
        n -= 1; /* leave the last element as the runner poisoned it */
    for (int64_t i = 0; i < n; i++) {
        double x = kt_dtype_load(call->inputs[0], p->dtype, (size_t)i);
        double y = x + st->noise_scale * noise_at(i);
        if (fail == FAIL_NAN && i == p->elems / 2)
            y = 0.0 / 0.0 * x;
        kt_dtype_from_double((char *)call->outputs[0] + (size_t)i * kt_dtype_size(p->dtype), &y,
                             p->dtype, 1);
    }
    if (fail == FAIL_INPUTS && p->elems > 0) { /* a kernel that works in place on its input */
        double x = kt_dtype_load(call->inputs[0], p->dtype, 0) + 1.0;
        kt_dtype_from_double((void *)call->inputs[0], &x, p->dtype, 1);
    }
    return KT_OK;
}

static void lognormal_release(void *state, kt_backend *backend)
{
    lognormal_state *st = state;
    if (!st)
        return;
    kt_backend_free(backend, st->extra, st->extra_bytes);
    free(st);
}

const kt_variant kt_variant_sim_lognormal = {
    /* .op = */ "synthetic",
    /* .name = */ "lognormal",
    /* .backend = */ "sim",
    /* .doc = */ "virtual-clock call with lognormal duration, drift, order effect, injected error",
    /* .params = */ lognormal_params,
    /* .n_params = */ P_COUNT,
    /* .prepare = */ lognormal_prepare,
    /* .run = */ lognormal_run,
    /* .release = */ lognormal_release,
    /* .metrics = */ NULL,
};
