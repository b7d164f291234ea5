/* service_run.h - private to the service kind of arm (arm/service/): one point's servers, the
 * rounds each candidate's pairs are answered from, and what each arm's server did. */
#ifndef KT_SERVICE_RUN_H
#define KT_SERVICE_RUN_H

#include "arm/arm.h"
#include "arm/service/loadgen.h"
#include "result/point.h"
#include "spec/service_spec.h"

#include <sys/types.h>

#define SVC_MAX_ARMS (1 + KT_LIMIT_CANDIDATES)

/* One server process (the arm's setup argv) and its load generator. */
typedef struct svc_server {
    pid_t pid; /* 0: not running; it leads its own process group */
    int port;
    double started_s; /* CLOCK_MONOTONIC at spawn */
    char log_path[4200];
    kt_loadgen *lg;
} svc_server;

/* What one arm's server did, over every start and round. */
typedef struct svc_arm {
    svc_server srv;
    double startup_s[256], cold_ms[256]; /* per start, the first 256 */
    int starts;
    long long requests, errors, tokens, completed;
    long err_kinds[8]; /* by kt_loadgen_error */
    double busy_s;     /* the rounds' durations */
    double peak_rss_kib, cpu_s;
    double *values; /* e2e, TTFT, TPOT (ms, NAN where none) of every timed request */
    size_t n_values, cap_values;
    int changed[KT_COMMAND_MAX_TASKS];
    char *text[KT_COMMAND_MAX_TASKS]; /* the baseline's: the first answer per task */
    char stderr_tail[256];
} svc_arm;

/* One round pair of a candidate: its metric per request (ms) for both arms. */
typedef struct svc_round {
    double *base_ms, *cand_ms;
    double base_s, cand_s;    /* durations */
    int base_done, cand_done; /* completed requests */
} svc_round;

/* A candidate's rounds and the one whose samples the engine is reading now. */
typedef struct svc_pairing {
    svc_round *rounds;
    int n_rounds, cap_rounds;
    int current;         /* round index of the samples below, -1 none */
    int candidate_first; /* in the current round */
} svc_pairing;

struct kt_arm_set {
    kt_arm_env env;
    const kt_spec *spec;
    const kt_service_spec *ss;
    kt_point_result *out;
    char workdir[4096];
    char *body[KT_COMMAND_MAX_TASKS];
    size_t body_len[KT_COMMAND_MAX_TASKS];
    char *expect[KT_COMMAND_MAX_TASKS]; /* the task's expect file, NULL without one */
    int n;                              /* requests per round */
    kt_loadgen_request *reqs;
    kt_loadgen_record *recs;
    svc_arm arms[SVC_MAX_ARMS];
    svc_pairing pairs[KT_LIMIT_CANDIDATES];
    kt_rng order_rng;
};

typedef struct kt_arm_set svc;

static inline const kt_service_arm *svc_spec_arm(const svc *s, int arm)
{
    return arm == 0 ? &s->ss->baseline : &s->ss->candidates[arm - 1];
}

static inline const char *svc_arm_name(const svc *s, int arm)
{
    return arm == 0 ? s->spec->baseline.name : s->spec->candidates[arm - 1].name;
}

static inline kt_arm_result *svc_result(svc *s, int arm)
{
    return arm == 0 ? &s->out->baseline : &s->out->cands[arm - 1].arm;
}

/* service_fail.c: the clock, failures, the stderr tail. */
double kt_svc_now(void);
/* Fails 'arm' with 'code' and a reason (the server's stderr tail appended): the baseline's is
 * the point's error. Returns -2 for the baseline, -1 for a candidate. */
int kt_svc_fail(svc *s, int arm, kt_reason_code code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* service_server.c: starts the arm's server on a free loopback port and waits until its ready
 * probe answers 2xx (*ready_s: spawn to ready). Returns 0, or -1/-2 as kt_svc_fail. */
int kt_svc_start(svc *s, int arm, double *ready_s);
/* Stops the arm's server (teardown, then SIGTERM and SIGKILL to its process group), adding its
 * CPU time and peak RSS. Safe when it is not running. */
void kt_svc_stop(svc *s, int arm);
/* 0 while the server runs; otherwise fails the arm ("exited ... during 'when'"). */
int kt_svc_alive(svc *s, int arm, const char *when);
/* Samples the server tree's resident set (its peak so far). */
void kt_svc_sample_rss(svc *s, int arm);
/* The last bytes of the server's stderr, one line, into 'buf'. */
void kt_svc_stderr_tail(const svc *s, int arm, char *buf, size_t len);

/* service_round.c: starts the arm's server (kt_svc_start) and sends its cold request;
 * records startup and cold. Returns 0, or -1/-2 as kt_svc_fail. */
int kt_svc_start_cold(svc *s, int arm);
/* One timed round of 'arm': its metric per request into ms[0..n) (ms), the
 * duration and completed count; counts, texts and archive. Returns 0, -1/-2 as kt_svc_fail. */
int kt_svc_round(svc *s, int arm, int round, double *ms, double *dur_s, int *done);
/* One untimed request of task 'task' (warmup). Returns 0 or -1/-2. */
int kt_svc_one(svc *s, int arm, int task, double *ms);

/* service_figures.c: the arm's serving figures from its rounds so far (a candidate's also
 * against the baseline rounds it was paired with). */
void kt_svc_figures(svc *s, int arm);

#endif
