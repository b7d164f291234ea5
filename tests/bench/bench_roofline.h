/* bench_roofline.h - the compute side of a decode-attention roofline: this CPU's measured peak
 * rate of the instructions the dense kernel's arithmetic is made of (vdpbf16ps for bf16 K and
 * V, vfmadd for fp32), and the work a dense decode call must do per KV head and token, so that
 * a bench can state, per shape, bound = max(K+V bytes / read bandwidth, work / peak). */
#ifndef KT_BENCH_ROOFLINE_H
#define KT_BENCH_ROOFLINE_H

#include "bench_common.h"

#include <immintrin.h>
#include <stdint.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#define KT_ROOF_TARGET __attribute__((target("avx512f,avx512bw,avx512bf16,fma")))
#define KT_ROOF_ACCS   16 /* independent accumulators: covers a latency of 8 at 2 per cycle */

/* 'iters' rounds of KT_ROOF_ACCS independent 512-bit vdpbf16ps (bf16) or vfmadd231ps; returns
 * a lane sum so the work stays alive. Register operands only: the peak of the arithmetic. */
static KT_ROOF_TARGET float roof_loop(int64_t iters, int bf16)
{
    __m512 acc[KT_ROOF_ACCS];
#pragma GCC unroll 16
    for (int i = 0; i < KT_ROOF_ACCS; i++)
        acc[i] = _mm512_set1_ps((float)i * 1e-3f);
    __m512 x = _mm512_set1_ps(1e-7f), y = _mm512_set1_ps(0.999f);
    __m512bh xb = _mm512_cvtne2ps_pbh(x, x), yb = _mm512_cvtne2ps_pbh(y, y);
    for (int64_t r = 0; r < iters; r++) {
        __asm__ volatile("" : "+v"(xb), "+v"(yb), "+v"(x), "+v"(y));
        if (bf16) {
#pragma GCC unroll 16
            for (int i = 0; i < KT_ROOF_ACCS; i++)
                acc[i] = _mm512_dpbf16_ps(acc[i], xb, yb);
        } else {
#pragma GCC unroll 16
            for (int i = 0; i < KT_ROOF_ACCS; i++)
                acc[i] = _mm512_fmadd_ps(x, y, acc[i]);
        }
    }
    __m512 s = acc[0];
    for (int i = 1; i < KT_ROOF_ACCS; i++)
        s = _mm512_add_ps(s, acc[i]);
    return _mm512_reduce_add_ps(s);
}

/* Peak 512-bit vdpbf16ps (bf16) or vfmadd231ps (fp32) instructions per second of 'threads'
 * threads together, the median of 5 timed passes of ~20 ms after a warm-up; 0 where the CPU
 * lacks AVX-512 (BF16 for bf16). */
static inline double roof_peak_per_s(int threads, int bf16)
{
    if (!__builtin_cpu_supports("avx512f") || (bf16 && !__builtin_cpu_supports("avx512bf16")))
        return 0;
    const int64_t iters = 1 << 22;
    double t[6];
    float sink = 0;
    for (int r = 0; r < 6; r++) {
        double t0 = now_s();
#pragma omp parallel num_threads(threads) reduction(+ : sink)
        sink += roof_loop(iters, bf16);
        t[r] = now_s() - t0;
    }
    if (sink == 42.0f) /* keeps the loops alive */
        printf(" ");
    return (double)threads * (double)iters * KT_ROOF_ACCS / median(t + 1, 5);
}

/* MAC instructions of one dense decode token for one KV head with 'g' query heads of 'd'
 * channels: q.k for every head (g d MACs) and p v (g d MACs), 32 MACs per vdpbf16ps (bf16) or
 * 16 per vfmadd (fp32). */
static inline double roof_mac_insns_per_token(int64_t g, int64_t d, int bf16)
{
    return 2.0 * (double)(g * d) / (bf16 ? 32.0 : 16.0);
}

/* The softmax's share per token and KV head, in the same instruction slots: one 16-lane 2^x
 * per head and 16 tokens (about 12 FMA-pipe instructions: range reduction, a degree-6
 * polynomial, the exponent), and the max and sum over the 16 tokens (2 per head and 16). */
static inline double roof_softmax_insns_per_token(int64_t g)
{
    return (double)g * (12.0 + 2.0) / 16.0;
}

/* The compute-bound time in seconds of a dense decode of 'tokens' tokens (context x batch x
 * kv heads) with groups of 'g' heads of 'd' channels, at 'peak' instructions per second. */
static inline double roof_compute_s(double tokens, int64_t g, int64_t d, int bf16, double peak)
{
    if (peak <= 0)
        return 0;
    return tokens * (roof_mac_insns_per_token(g, d, bf16) + roof_softmax_insns_per_token(g)) / peak;
}

#endif
