/* usage.h - what a few extra calls of an arm cost, per call: CPU counters, energy and the
 * GPU half (arm/meters/counters.c measures them apart from the timed pairs). A counter the
 * machine could not give carries the reason, never a zero. */
#ifndef KT_USAGE_H
#define KT_USAGE_H

#include "result/usage_gpu.h"

#include <stdint.h>

#define KT_COUNTER_MAX 10

typedef struct kt_counter {
    const char *name; /* "task_clock_ns", "context_switches", "instructions", ... */
    int supported;
    double value;         /* summed over the process's threads, per call */
    char unsupported[96]; /* the reason, when not supported */
} kt_counter;

/* An arm's profile: what its extra calls cost, per call. */
typedef struct kt_counter_values {
    kt_counter c[KT_COUNTER_MAX];
    int n;
    int calls;                    /* calls measured */
    double wall_ns;               /* wall time per call */
    double energy_j[2];           /* RAPL package, DRAM: joules per call; NAN when unavailable */
    char energy_unavailable[160]; /* why there is no energy figure, "" when there is */
    int threads;                  /* threads the counters were opened on */
    kt_gpu_usage gpu;             /* GPU energy and counters (cuda backend; zero elsewhere) */
} kt_counter_values;

/* The names of the counters, in the order arm/meters/counters.c opens them; NULL past the end. */
const char *kt_counter_name(int i);

#endif
