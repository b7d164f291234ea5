/* counters.h - what a few extra calls of an arm cost, measured apart from the timed pairs
 * (counters perturb timing): CPU counters through perf_event_open, energy from RAPL. A
 * counter the machine cannot give is recorded with the reason, never as a zero. */
#ifndef KT_COUNTERS_H
#define KT_COUNTERS_H

#include "measure/usage_gpu.h"

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

/* The names of the counters, in the order kt_counters_start opens them; NULL past the end. */
const char *kt_counter_name(int i);

typedef struct kt_counter_set {
    kt_counter_values v;
    /* private */
    int fds[KT_COUNTER_MAX][256];
    int n_fds;
    double rapl_start[2];
} kt_counter_set;

/* Opens every counter on every thread of this process (as listed in /proc/self/task), and
 * reads the RAPL energy counters. Never fails: what cannot be opened is marked unsupported. */
void kt_counters_start(kt_counter_set *s);
/* Reads and closes them; values are divided by 'calls'. */
void kt_counters_stop(kt_counter_set *s, int calls);

/* The machine's perf_event_paranoid setting, or -100 when it cannot be read. */
int kt_counters_paranoid(void);

#endif
