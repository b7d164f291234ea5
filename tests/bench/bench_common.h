/* bench_common.h - what the benchmark programs share: a clock, medians, and this machine's
 * copy and read bandwidth, the ceilings the kernels are measured against, and idle library
 * threads kept from spinning into the next timed case. */
#ifndef KT_BENCH_COMMON_H
#define KT_BENCH_COMMON_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
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

/* The first three fields of /proc/loadavg ("?" when unreadable), in a static buffer. */
static inline const char *bench_load_average(void)
{
    static char buf[64];
    FILE *f = fopen("/proc/loadavg", "r");
    double a[3];
    if (!f || fscanf(f, "%lf %lf %lf", &a[0], &a[1], &a[2]) != 3)
        snprintf(buf, sizeof(buf), "?");
    else
        snprintf(buf, sizeof(buf), "%.2f %.2f %.2f", a[0], a[1], a[2]);
    if (f)
        fclose(f);
    return buf;
}

/* OpenBLAS's idle threads spin (yielding) for 2^28 TSC cycles, about 0.1 s here, after each
 * call before they sleep, and the variable that sets it is read once, when the library loads.
 * Spinning, they hold a core while the next case runs: the pool's two threads then share the
 * other core and that case runs at half speed (seen as run-queue wait of the whole call).
 * libgomp's idle threads (oneDNN's, and the benchmarks' own OpenMP read and copy passes) do
 * the same for 300,000 pauses, 2-5 ms of CPU here after each parallel region: the case timed
 * next loses a core for that long, which halves a 1-2 ms call (the pool's caller runs every
 * item when its worker gets no CPU). So, unless the variables are set or 'openblas_spin'
 * ('omp_spin') is nonzero, the benchmark runs itself again with OPENBLAS_THREAD_TIMEOUT=16
 * (about 30 us) and GOMP_SPINCOUNT=2000 (the pool's own spin, about 20 us, before its futex
 * wait): each library then pays one wake-up per call, as the pool does. Returns only when it
 * does not run itself again ('prog' names it in the message when it cannot). */
static inline void bench_keep_idle_threads_short(const char *prog, char **argv, int openblas_spin,
                                                 int omp_spin)
{
    int again = 0;
    if (!openblas_spin && !getenv("OPENBLAS_THREAD_TIMEOUT")) {
        setenv("OPENBLAS_THREAD_TIMEOUT", "16", 1);
        again = 1;
    }
    if (!omp_spin && !getenv("GOMP_SPINCOUNT") && !getenv("OMP_WAIT_POLICY")) {
        setenv("GOMP_SPINCOUNT", "2000", 1);
        again = 1;
    }
    if (!again)
        return;
    execv("/proc/self/exe", argv);
    fprintf(stderr, "%s: cannot run itself again: idle library threads spin\n", prog);
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
