/* backend_cpu.c - the CPU backend: aligned host memory, a monotonic clock, and a cache flush
 * that evicts every buffer this backend allocated.
 *
 * The flush writes back and invalidates each allocated cache line (clflushopt) instead of
 * writing over a buffer twice the last-level cache: on machines that report a large shared
 * L3 (480 MiB here) the latter costs a second per call, while clflush evicts exactly the
 * data a kernel will read, from every level, in time proportional to the working set. */
#include "baselines.h"
#include "cpu.h"
#include "pool.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#ifdef _OPENMP
#include <omp.h>
#endif
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <immintrin.h>
#endif

typedef struct cpu_block {
    void *ptr;
    size_t bytes;
} cpu_block;

typedef struct cpu_ctx {
    cpu_block *blocks;
    size_t n_blocks, cap_blocks;
    struct timespec start;
    int64_t start_wait_ns; /* run-queue wait of the process's threads at timer_start; -1: none */
    int clflushopt;        /* the CPU has the weakly ordered flush */
} cpu_ctx;

static void cpu_describe(kt_device_info *info)
{
    char model[160] = "unknown";
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (f) {
        char line[512];
        while (fgets(line, sizeof(line), f)) {
            if (strncmp(line, "model name", 10) == 0) {
                char *colon = strchr(line, ':');
                if (colon) {
                    snprintf(model, sizeof(model), "%s", colon + 2);
                    model[strcspn(model, "\n")] = '\0';
                }
                break;
            }
        }
        fclose(f);
    }
    kt_device_info_add(info, "name", "%s", model);
    kt_device_info_add(info, "cores_online", "%ld", sysconf(_SC_NPROCESSORS_ONLN));
#ifdef _SC_LEVEL3_CACHE_SIZE
    kt_device_info_add(info, "l3_bytes", "%ld", sysconf(_SC_LEVEL3_CACHE_SIZE));
#endif
#ifdef _OPENMP
    kt_device_info_add(info, "openmp_max_threads", "%d", omp_get_max_threads());
#endif
    kt_device_info_add(info, "timer", "clock_gettime(CLOCK_MONOTONIC)");
    kt_device_info_add(info, "cache_flush",
                       "clflushopt (clflush without it) of every allocated buffer");
    kt_baselines_describe(info);
}

static int cpu_probe(kt_device_info *info)
{
    memset(info, 0, sizeof(*info));
    info->available = 1;
    cpu_describe(info);
    return KT_OK;
}

#if defined(__x86_64__) || defined(__i386__)
static int has_clflushopt(void);
#endif

static int cpu_init(void **out, int threads, uint64_t seed)
{
    (void)seed;
    cpu_ctx *ctx = calloc(1, sizeof(*ctx));
    if (!ctx)
        return kt_error_code(KT_ENOMEM, "out of memory");
#ifdef _OPENMP
    omp_set_num_threads(threads > 0 ? threads : 1);
#else
    (void)threads;
#endif
#if defined(__x86_64__) || defined(__i386__)
    ctx->clflushopt = has_clflushopt();
#endif
    *out = ctx;
    return KT_OK;
}

static void cpu_shutdown(void *ctx)
{
    cpu_ctx *c = ctx;
    for (size_t i = 0; i < c->n_blocks; i++)
        free(c->blocks[i].ptr);
    free(c->blocks);
    free(c);
}

static int cpu_alloc(void *ctx, void **ptr, size_t bytes)
{
    cpu_ctx *c = ctx;
    if (c->n_blocks == c->cap_blocks) {
        size_t cap = c->cap_blocks ? 2 * c->cap_blocks : 16;
        cpu_block *blocks = realloc(c->blocks, cap * sizeof(*blocks));
        if (!blocks)
            return kt_error_code(KT_ENOMEM, "out of memory");
        c->blocks = blocks;
        c->cap_blocks = cap;
    }
    size_t rounded = (bytes + 63) / 64 * 64;
    void *p = aligned_alloc(64, rounded);
    if (!p)
        return kt_error_code(KT_ENOMEM, "cannot allocate %zu bytes", bytes);
    c->blocks[c->n_blocks].ptr = p;
    c->blocks[c->n_blocks].bytes = rounded;
    c->n_blocks++;
    *ptr = p;
    return KT_OK;
}

static void cpu_free(void *ctx, void *ptr)
{
    cpu_ctx *c = ctx;
    for (size_t i = 0; i < c->n_blocks; i++) {
        if (c->blocks[i].ptr == ptr) {
            c->blocks[i] = c->blocks[--c->n_blocks];
            break;
        }
    }
    free(ptr);
}

static int cpu_copy(void *ctx, void *dst, const void *src, size_t bytes)
{
    (void)ctx;
    memcpy(dst, src, bytes);
    return KT_OK;
}

#if defined(__x86_64__) || defined(__i386__)
/* clflushopt is weakly ordered, so the flushes of one buffer overlap instead of waiting for
 * each other; the closing sfence orders them before the timed call. */
__attribute__((target("clflushopt"))) static void flush_lines_opt(char *p, size_t bytes)
{
    for (size_t off = 0; off < bytes; off += 64)
        _mm_clflushopt(p + off);
}

static void flush_lines(char *p, size_t bytes)
{
    for (size_t off = 0; off < bytes; off += 64)
        _mm_clflush(p + off);
}

static int has_clflushopt(void)
{
    unsigned a, b, c, d;
    return __get_cpuid_count(7, 0, &a, &b, &c, &d) && (b & (1u << 23));
}
#endif

static int cpu_flush_cache(void *ctx)
{
    cpu_ctx *c = ctx;
#if defined(__x86_64__) || defined(__i386__)
    int opt = c->clflushopt;
    for (size_t i = 0; i < c->n_blocks; i++) {
        if (opt)
            flush_lines_opt(c->blocks[i].ptr, c->blocks[i].bytes);
        else
            flush_lines(c->blocks[i].ptr, c->blocks[i].bytes);
    }
    _mm_mfence();
#else
    (void)c; /* no portable flush: measurements on this architecture are warm-cache */
#endif
    return KT_OK;
}

/* The noise signal: how long this process's threads (the caller, the pool's workers, OpenMP's)
 * were runnable but not running during the call, from each thread's schedstat. A co-runner
 * taking a core shows up here; so does the wake-up of an idle worker (a few microseconds), so
 * waits under NOISE_FLOOR of the call's time count as none. */
#define NOISE_FLOOR 0.02

static int cpu_timer_start(void *ctx)
{
    cpu_ctx *c = ctx;
    c->start_wait_ns = kt_pool_runq_wait_ns();
    clock_gettime(CLOCK_MONOTONIC, &c->start);
    return KT_OK;
}

static int cpu_timer_stop(void *ctx, kt_timing *out)
{
    cpu_ctx *c = ctx;
    struct timespec end;
    clock_gettime(CLOCK_MONOTONIC, &end);
    out->time_ns =
        (double)(end.tv_sec - c->start.tv_sec) * 1e9 + (double)(end.tv_nsec - c->start.tv_nsec);
    int64_t wait = kt_pool_runq_wait_ns();
    double waited =
        c->start_wait_ns >= 0 && wait >= c->start_wait_ns ? (double)(wait - c->start_wait_ns) : 0.0;
    out->noise = waited > NOISE_FLOOR * out->time_ns ? waited / 1e3 : 0.0;
    out->throttled = 0;
    return KT_OK;
}

static int cpu_synchronize(void *ctx)
{
    (void)ctx; /* CPU variants return when their work is done */
    return KT_OK;
}

static int cpu_place_threads(int compact)
{
    return kt_pool_set_affinity(compact ? KT_POOL_AFFINITY_COMPACT : KT_POOL_AFFINITY_NONE);
}

const kt_backend_caps kt_backend_cpu_caps = {
    /* .clock = */ KT_CLOCK_HOST,
    /* .noise = */ KT_NOISE_DISTURBANCE, /* run-queue wait: 0 unless a thread waited for a core */
    /* .flush = */ KT_FLUSH_EVICT,
    /* .device_memory = */ 0,
    /* .profile_opt_in = */ 0,
    /* .needs_device = */ 0,
    /* .auto_rank = */ 1, /* auto's fallback */
    /* .gpus = */ 0,
    /* .calibrated = */ 1,
};

const kt_backend_iface kt_backend_cpu = {
    /* .name = */ "cpu",
    /* .doc = */
    "host CPU, futex-backed thread pool and OpenMP, monotonic clock, clflushopt "
    "cache eviction",
    /* .noise_name = */ "runq_wait_us",
    /* .probe = */ cpu_probe,
    /* .init = */ cpu_init,
    /* .shutdown = */ cpu_shutdown,
    /* .alloc = */ cpu_alloc,
    /* .free = */ cpu_free,
    /* .upload = */ cpu_copy,
    /* .download = */ cpu_copy,
    /* .flush_cache = */ cpu_flush_cache,
    /* .timer_start = */ cpu_timer_start,
    /* .timer_stop = */ cpu_timer_stop,
    /* .synchronize = */ cpu_synchronize,
    /* .timer_tick_ns = */ NULL, /* measured: the smallest nonzero empty region */
    /* .place_threads = */ cpu_place_threads,
    /* .caps = */ &kt_backend_cpu_caps,
};
