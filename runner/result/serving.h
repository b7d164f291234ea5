/* serving.h - what a service trial measured of one arm (op service, runner/arm/service/):
 * startup, the cold first request, the steady-state quantiles of the chosen metric with
 * intervals that respect the pairing, throughput, errors, the server tree's memory and CPU,
 * and for a candidate its ratios to the baseline and the tasks whose answers changed. Written
 * to result.json as the arm's "service" object and read back (resume, show, report). */
#ifndef KT_RESULT_SERVING_H
#define KT_RESULT_SERVING_H

#include "util/limits.h"

struct cJSON;

/* A quantile or ratio with its interval (NAN where unknown). */
typedef struct kt_serving_q {
    double value, low, high;
} kt_serving_q;

typedef struct kt_serving {
    int present;                /* 1 for an arm of a service trial */
    int starts;                 /* server starts (1, or one per round with exclusive) */
    double startup_s;           /* setup to ready: the median over the starts */
    double cold_ms;             /* the first request after ready (e2e), median over the starts */
    int rounds;                 /* timed rounds */
    kt_serving_q p50, p90, p99; /* of the metric, ms, over the timed rounds' requests */
    double e2e_p50_ms, ttft_p50_ms, tpot_p50_ms;
    double requests_per_s, tokens_per_s; /* completed, over the rounds' durations */
    long long requests, errors;          /* timed rounds' requests, and those that failed */
    double error_rate;
    char error_kinds[160]; /* "http 3, timeout 1" */
    double peak_rss_mib;   /* the server's process tree, sampled */
    double cpu_s;          /* its CPU time (user + system) */
    /* a candidate's, against the baseline rounds it was paired with */
    kt_serving_q p99_ratio;        /* candidate p99 / baseline p99, bootstrap interval */
    kt_serving_q throughput_ratio; /* candidate / baseline requests per second */
    int n_changed;                 /* tasks whose answer differed from the reference */
    char changed[512];             /* their names, ", "-separated */
    char stderr_tail[256];         /* the server's last stderr lines, when it had errors */
} kt_serving;

/* An empty record: every figure NAN, nothing present. */
void kt_serving_init(kt_serving *s);
/* result.json's arm.service, or NULL when !s->present. */
struct cJSON *kt_serving_to_json(const kt_serving *s);
/* Reads arm.service back ('o' NULL: an empty record). */
void kt_serving_from_json(kt_serving *s, const struct cJSON *o);

#endif
