/* bench_ffd_model.h - the byte-count model of FFD's ceiling over dense, shared by the benchmarks
 * that report FFD against it. */
#ifndef KT_BENCH_FFD_MODEL_H
#define KT_BENCH_FFD_MODEL_H

#include <stddef.h>
#include <stdint.h>

/* FFD's bytes per token and KV head relative to dense: the scan reads d/4 code bytes and the
 * block's scales (4d bytes per block); a kept block adds V and its keys: the stored ones
 * (keys: stored, the default) or the fp8 residual (d bytes, keys: fp8). */
static inline double ffd_byte_bound(double kept, int64_t d, size_t size, int64_t block)
{
    double dense = 2.0 * (double)d * (double)size;
    double ffd =
        (double)d / 4 + 4.0 * (double)d / (double)block + kept * (2.0 * (double)d * (double)size);
    return dense / ffd;
}

#endif
