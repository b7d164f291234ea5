/* backend_sim.c - a backend whose clock is virtual: a call lasts what its variant says.
 *
 * Memory is host memory (variants really compute their outputs, so correctness checks are
 * real); only time is simulated, which makes verdict-validity tests exact and fast. */
#include "sim.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define SIM_COUNTERS 64

typedef struct sim_ctx {
    double now_ns;
    double timer_start_ns;
    double tick_ns; /* 0: exact; else readings are floored to multiples of it */
    kt_rng rng;
    /* run calls per arm (keyed by the call's seed, which mixes in the arm), over every
     * input set: 'fail_after' counts calls, not calls per input set */
    uint64_t counter_key[SIM_COUNTERS];
    int64_t counter[SIM_COUNTERS];
    int n_counters;
} sim_ctx;

static int sim_probe(kt_device_info *info)
{
    memset(info, 0, sizeof(*info));
    info->available = 1;
    kt_device_info_add(info, "name", "simulated device (virtual clock)");
    kt_device_info_add(info, "clock", "virtual, durations drawn from variant params");
    return KT_OK;
}

static int sim_init(void **out, int threads, uint64_t seed)
{
    (void)threads;
    sim_ctx *ctx = calloc(1, sizeof(*ctx));
    if (!ctx)
        return kt_error_code(KT_ENOMEM, "out of memory");
    kt_rng_seed(&ctx->rng, kt_seed_mix(seed, 0x51b0c10c));
    *out = ctx;
    return KT_OK;
}

static void sim_shutdown(void *ctx)
{
    free(ctx);
}

static int sim_alloc(void *ctx, void **ptr, size_t bytes)
{
    (void)ctx;
    *ptr = malloc(bytes);
    if (!*ptr)
        return kt_error_code(KT_ENOMEM, "cannot allocate %zu bytes", bytes);
    return KT_OK;
}

static void sim_free(void *ctx, void *ptr)
{
    (void)ctx;
    free(ptr);
}

static int sim_copy(void *ctx, void *dst, const void *src, size_t bytes)
{
    (void)ctx;
    memcpy(dst, src, bytes);
    return KT_OK;
}

static int sim_flush_cache(void *ctx)
{
    (void)ctx; /* a virtual device has no cache to warm */
    return KT_OK;
}

/* A clock reading, floored to the tick as a hardware counter would. */
static double reading(const sim_ctx *s)
{
    return s->tick_ns > 0 ? floor(s->now_ns / s->tick_ns) * s->tick_ns : s->now_ns;
}

static int sim_timer_start(void *ctx)
{
    sim_ctx *s = ctx;
    s->timer_start_ns = reading(s);
    return KT_OK;
}

static int sim_timer_stop(void *ctx, kt_timing *out)
{
    sim_ctx *s = ctx;
    out->time_ns = reading(s) - s->timer_start_ns;
    out->noise = 0;
    out->throttled = 0;
    return KT_OK;
}

static int sim_synchronize(void *ctx)
{
    (void)ctx;
    return KT_OK;
}

static double sim_timer_tick_ns(void *ctx)
{
    return ((sim_ctx *)ctx)->tick_ns;
}

const kt_backend_caps kt_backend_sim_caps = {
    /* .clock = */ KT_CLOCK_VIRTUAL,
    /* .noise = */ KT_NOISE_NONE,
    /* .flush = */ KT_FLUSH_NO_CACHES,
    /* .device_memory = */ 0,
    /* .profile_opt_in = */ 0,
    /* .needs_device = */ 0,
    /* .auto_rank = */ 0, /* chosen only by the ops that run nowhere else */
    /* .gpus = */ 0,
    /* .calibrated = */ 1, /* the call is virtual; prepare, the checks and the copies are not */
};

const kt_backend_iface kt_backend_sim = {
    /* .name = */ "sim",
    /* .doc = */ "simulated device with a virtual clock, for verdict-validity tests",
    /* .noise_name = */ "none",
    /* .probe = */ sim_probe,
    /* .init = */ sim_init,
    /* .shutdown = */ sim_shutdown,
    /* .alloc = */ sim_alloc,
    /* .free = */ sim_free,
    /* .upload = */ sim_copy,
    /* .download = */ sim_copy,
    /* .flush_cache = */ sim_flush_cache,
    /* .timer_start = */ sim_timer_start,
    /* .timer_stop = */ sim_timer_stop,
    /* .synchronize = */ sim_synchronize,
    /* .timer_tick_ns = */ sim_timer_tick_ns,
    /* .place_threads = */ NULL,
    /* .caps = */ &kt_backend_sim_caps,
};

static sim_ctx *sim_of(kt_backend *b)
{
    return b->iface == &kt_backend_sim ? (sim_ctx *)b->ctx : NULL;
}

double kt_sim_now_ns(kt_backend *b)
{
    sim_ctx *s = sim_of(b);
    return s ? s->now_ns : 0.0;
}

void kt_sim_advance(kt_backend *b, double ns)
{
    sim_ctx *s = sim_of(b);
    if (s && ns > 0)
        s->now_ns += ns;
}

void kt_sim_set_tick(kt_backend *b, double tick_ns)
{
    sim_ctx *s = sim_of(b);
    if (s && tick_ns > s->tick_ns)
        s->tick_ns = tick_ns;
}

kt_rng *kt_sim_rng(kt_backend *b)
{
    sim_ctx *s = sim_of(b);
    return s ? &s->rng : NULL;
}

int64_t kt_sim_count_call(kt_backend *b, uint64_t key)
{
    sim_ctx *s = sim_of(b);
    if (!s)
        return 0;
    for (int i = 0; i < s->n_counters; i++)
        if (s->counter_key[i] == key)
            return s->counter[i]++;
    if (s->n_counters == SIM_COUNTERS)
        return 0;
    s->counter_key[s->n_counters] = key;
    s->counter[s->n_counters] = 1;
    s->n_counters++;
    return 0;
}
