/* counters.h - what a few extra calls of an arm cost, measured apart from the timed pairs
 * (counters perturb timing): CPU counters through perf_event_open, energy from RAPL. A
 * counter the machine cannot give is recorded with the reason, never as a zero. */
#ifndef KT_COUNTERS_H
#define KT_COUNTERS_H

#include "result/usage.h"

#include <stdint.h>

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
