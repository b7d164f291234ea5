/* bench_common.h - what the benchmark programs share: a clock, medians, and this machine's
 * copy and read bandwidth, the ceilings the kernels are measured against. */
#ifndef KT_BENCH_COMMON_H
#define KT_BENCH_COMMON_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef _OPENMP
#include <omp.h>
#endif

static inline double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static inline int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static inline double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(double), cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Copy bandwidth (bytes read + bytes written per second) of 'threads' threads each copying
 * its share of a 512 MiB buffer; the median of 5 copies after one warm-up. */
static inline double copy_bandwidth_gbs(int threads)
{
    size_t bytes = (size_t)512 << 20;
    char *a = malloc(bytes), *b = malloc(bytes);
    if (!a || !b) {
        free(a);
        free(b);
        return 0;
    }
    memset(a, 1, bytes);
    memset(b, 2, bytes);
    double t[6];
    for (int r = 0; r < 6; r++) {
        double t0 = now_s();
#pragma omp parallel num_threads(threads)
        {
            int i = 0, n = 1;
#ifdef _OPENMP
            i = omp_get_thread_num();
            n = omp_get_num_threads();
#endif
            size_t share = bytes / (size_t)n;
            memcpy(b + (size_t)i * share, a + (size_t)i * share, share);
        }
        t[r] = now_s() - t0;
    }
    free(a);
    free(b);
    return 2.0 * (double)bytes / median(t + 1, 5) / 1e9;
}

/* Seconds 'threads' threads take to read 'n' buffers once ('bytes[i]' bytes at 'parts[i]'),
 * each thread its share of every buffer in turn (four independent 64-bit sums, vectorisable);
 * the sums go to *total, so the reads cannot be left out. */
static inline double read_pass_s(const void *const *parts, const size_t *bytes, int n, int threads,
                                 uint64_t *total)
{
    uint64_t sum = 0;
    double t0 = now_s();
#pragma omp parallel num_threads(threads) reduction(+ : sum)
    {
        int i = 0, k = 1;
#ifdef _OPENMP
        i = omp_get_thread_num();
        k = omp_get_num_threads();
#endif
        for (int p = 0; p < n; p++) {
            const uint64_t *a = parts[p];
            size_t share = bytes[p] / sizeof(uint64_t) / (size_t)k, lo = (size_t)i * share;
            uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
            for (size_t j = lo; j + 4 <= lo + share; j += 4) {
                s0 += a[j];
                s1 += a[j + 1];
                s2 += a[j + 2];
                s3 += a[j + 3];
            }
            sum += s0 + s1 + s2 + s3;
        }
    }
    double t = now_s() - t0;
    *total += sum;
    return t;
}

/* Read bandwidth of 'threads' threads each reading its share of a 1 GiB buffer (read_pass_s);
 * the median of 5 passes after one warm-up. */
static inline double read_bandwidth_gbs(int threads)
{
    size_t bytes = (size_t)1 << 30, n = bytes / sizeof(uint64_t);
    uint64_t *a = malloc(bytes), total = 0;
    if (!a)
        return 0;
    for (size_t i = 0; i < n; i++)
        a[i] = i;
    const void *parts[1] = {a};
    double t[6];
    for (int r = 0; r < 6; r++)
        t[r] = read_pass_s(parts, &bytes, 1, threads, &total);
    free(a);
    if (total == 42) /* keeps the sums alive */
        printf(" ");
    return (double)bytes / median(t + 1, 5) / 1e9;
}

#endif
