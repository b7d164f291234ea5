/* calibrate_bandwidth.c - the host's read bandwidth for the roofline check (arm.h,
 * docs/robustness.md): one thread reading buffers from L1-sized to larger than any cache, the
 * best of several passes each, measured once per host and kept in the calibration cache
 * (calibrate_rates.h), or set by the user with KT_READ_BANDWIDTH_GBS (one figure for every
 * size). */
#include "measure/calibrate_bandwidth.h"

#include "measure/calibrate_rates.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Reads 'n' words with eight independent sums (so loads, not an add chain, bound it), in the
 * widest vectors the CPU has: the rate an honest kernel's loads can reach. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("avx512f", "avx2", "default"), optimize("O3")))
#endif
static uint64_t
read_words(const uint64_t *w, size_t n)
{
    uint64_t s[8] = {0};
    for (size_t i = 0; i + 8 <= n; i += 8)
        for (int j = 0; j < 8; j++)
            s[j] += w[i + j];
    return s[0] ^ s[1] ^ s[2] ^ s[3] ^ s[4] ^ s[5] ^ s[6] ^ s[7];
}

static const double sizes[KT_BANDWIDTH_SIZES] = {16e3, 128e3, 1e6, 8e6, 64e6, 256e6};

/* GB/s reading 'bytes' (the best pass of at least 20 ms in all). */
static double measure(size_t bytes)
{
    uint64_t *w = malloc(bytes);
    if (!w)
        return 0;
    memset(w, 1, bytes); /* faulted in */
    size_t n = bytes / 8;
    volatile uint64_t sink = 0;
    double best = 0, start = now_s();
    for (int pass = 0; pass < 1000 && (pass < 3 || now_s() - start < 0.02); pass++) {
        int reps = bytes < 1e6 ? (int)(1e6 / bytes) : 1; /* a pass of at least ~1 MB */
        double t0 = now_s();
        for (int r = 0; r < reps; r++)
            sink ^= read_words(w, n);
        double dt = now_s() - t0;
        if (dt > 0 && (double)bytes * reps / dt / 1e9 > best)
            best = (double)bytes * reps / dt / 1e9;
    }
    (void)sink;
    free(w);
    return best;
}

const kt_read_bandwidth *kt_read_bandwidth_host(void)
{
    static kt_read_bandwidth bw;
    static int done;
    if (done)
        return bw.n ? &bw : NULL;
    done = 1;
    const char *env = getenv("KT_READ_BANDWIDTH_GBS");
    if (env && env[0]) {
        char *end;
        double v = strtod(env, &end);
        if (*end == '\0' && v > 0) {
            bw.n = 1;
            bw.bytes[0] = 0;
            bw.gbs[0] = v;
            bw.source = "KT_READ_BANDWIDTH_GBS";
        }
        return bw.n ? &bw : NULL;
    }
    static const char *const fields[KT_BANDWIDTH_SIZES] = {"gbs_16k", "gbs_128k", "gbs_1m",
                                                           "gbs_8m",  "gbs_64m",  "gbs_256m"};
    double v[KT_BANDWIDTH_SIZES];
    int cached = kt_calibration_cache_get("read_bandwidth", fields, v, KT_BANDWIDTH_SIZES) == 0;
    for (int i = 0; i < KT_BANDWIDTH_SIZES; i++) {
        if (!cached)
            v[i] = measure((size_t)sizes[i]);
        if (!(v[i] > 0))
            return NULL;
        bw.bytes[i] = sizes[i];
        bw.gbs[i] = v[i];
    }
    if (!cached)
        kt_calibration_cache_put("read_bandwidth", fields, v, KT_BANDWIDTH_SIZES);
    bw.n = KT_BANDWIDTH_SIZES;
    bw.source = cached ? "cached" : "measured";
    return &bw;
}

const kt_read_bandwidth *kt_read_bandwidth_for(const char *backend, const char **why)
{
    const kt_backend_caps *caps = kt_backend_caps_of(backend);
    const char *env = getenv("KT_READ_BANDWIDTH_GBS");
    if (caps->clock == KT_CLOCK_VIRTUAL) {
        *why = "off: the backend's clock is virtual";
        return NULL;
    }
    if (caps->device_memory && !(env && env[0])) {
        *why = "off: device memory; set KT_READ_BANDWIDTH_GBS to the device's read bandwidth";
        return NULL;
    }
    const kt_read_bandwidth *bw = kt_read_bandwidth_host();
    *why = bw ? NULL : "off: the read bandwidth could not be measured";
    return bw;
}

const char *const *kt_checks_ran(const kt_spec *spec)
{
    return kt_arm_kind_of(spec)->checks;
}

void kt_checks_line(char *out, size_t len, const kt_spec *spec)
{
    const char *const *names = kt_checks_ran(spec);
    size_t at = 0;
    out[0] = '\0';
    for (int i = 0; names && names[i] && at < len; i++) {
        const char *why = NULL;
        const kt_read_bandwidth *bw =
            strcmp(names[i], "roofline") == 0 ? kt_read_bandwidth_for(spec->backend, &why) : NULL;
        at += (size_t)snprintf(out + at, len - at, "%s%s", i ? ", " : "", names[i]);
        if (at < len && bw)
            at += (size_t)snprintf(out + at, len - at, " (%.3g GB/s per thread at %.0f MB, %s)",
                                   bw->gbs[bw->n - 1], bw->bytes[bw->n - 1] / 1e6, bw->source);
        else if (at < len && why)
            at += (size_t)snprintf(out + at, len - at, " (%s)", why);
    }
    if (!names)
        snprintf(out, len, "none: this kind of arm's outputs are compared after each pair");
}
