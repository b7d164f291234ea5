/* bench_overhead.c - what the harness adds to each timed call, on the cpu backend.
 *
 * Measures (1) an empty timed region: timer_start then timer_stop with nothing between, the
 * cost the measurement itself adds to every sample (clock reads and the rusage call for the
 * noise signal), and (2) the untimed work per call: the clflush of every allocated buffer
 * before a call, for a working set of a given size. Prints medians of many repetitions.
 *
 * usage: bench_overhead */
#include "kernel.h"
#include "decide/stats.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

int main(void)
{
    kt_backend *b = NULL;
    if (kt_backend_open(&b, "cpu", 1, 1) < 0) {
        fprintf(stderr, "bench_overhead: %s\n", kt_error_last());
        return 1;
    }
    enum { N = 20000 };
    double *x = malloc(N * sizeof(double));
    kt_timing t;
    for (int i = 0; i < N; i++) {
        kt_backend_timer_start(b);
        kt_backend_timer_stop(b, &t);
        x[i] = t.time_ns;
    }
    kt_summary s;
    kt_stats_summary(&s, x, N);
    printf("| measurement | median | p90 |\n|---|---|---|\n");
    printf("| empty timed region (timer_start + timer_stop), cpu | %.0f ns | %.0f ns |\n", s.median,
           s.p90);

    static const size_t sizes_mib[] = {1, 16, 256};
    for (size_t k = 0; k < sizeof(sizes_mib) / sizeof(sizes_mib[0]); k++) {
        size_t bytes = sizes_mib[k] << 20;
        void *buf = NULL;
        if (kt_backend_alloc(b, &buf, bytes) < 0)
            break;
        memset(buf, 1, bytes);
        int reps = 50;
        for (int i = 0; i < reps; i++) {
            double t0 = now_ns();
            kt_backend_flush_cache(b);
            x[i] = now_ns() - t0;
            memset(buf, i, bytes); /* bring it back into cache */
        }
        kt_stats_summary(&s, x, (size_t)reps);
        printf(
            "| cache flush (clflushopt) of a %zu MiB working set, untimed | %.3f ms | %.3f ms |\n",
            sizes_mib[k], s.median / 1e6, s.p90 / 1e6);
        kt_backend_free(b, buf, bytes);
    }
    /* does the flush make a call cold? one read pass over 8 MiB, warm against flushed */
    size_t bytes = 8u << 20;
    double *buf = NULL;
    if (kt_backend_alloc(b, (void **)&buf, bytes) == 0) {
        size_t n = bytes / sizeof(double);
        for (size_t i = 0; i < n; i++)
            buf[i] = (double)i;
        volatile double sink = 0;
        for (int flush = 0; flush < 2; flush++) {
            for (int i = 0; i < 50; i++) {
                if (flush)
                    kt_backend_flush_cache(b);
                double t0 = now_ns(), sum = 0;
                for (size_t j = 0; j < n; j++)
                    sum += buf[j];
                x[i] = now_ns() - t0;
                sink += sum;
            }
            kt_stats_summary(&s, x, 50);
            printf("| read pass over 8 MiB, %s | %.3f ms (%.1f GB/s) | %.3f ms |\n",
                   flush ? "after the flush (cold)" : "warm (no flush)", s.median / 1e6,
                   (double)bytes / s.median, s.p90 / 1e6);
        }
        (void)sink;
        kt_backend_free(b, buf, bytes);
    }
    free(x);
    kt_backend_close(b);
    return 0;
}
