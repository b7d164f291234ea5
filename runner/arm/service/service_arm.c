/* service_arm.c - the service kind of arm: each arm is a server under load. Per point a work
 * folder (the servers' logs) and the requests of a round (open); per arm its server started
 * and made ready, with its startup and cold request measured (prepare), or, with 'exclusive',
 * one start per round. A candidate's pair 'rep' is request rep % n of round rep / n: the first
 * call of a round index runs the baseline's and the candidate's rounds back to back (ABBA over
 * round indexes under order: alternate, a seeded coin under random), and every call of that
 * round answers from them, so request i of a baseline round pairs with request i of the
 * neighbouring candidate round. Failures (never ready, died, load generator) fail the arm with
 * the server's stderr tail; release stops the server's process group and records its figures. */
#include "arm/service/service_run.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* A whole file into a new string (*len its bytes); NULL when it cannot be read. */
static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (s && fread(s, 1, (size_t)n, f) != (size_t)n) {
        free(s);
        s = NULL;
    }
    fclose(f);
    if (s) {
        s[n] = '\0';
        *len = (size_t)n;
    }
    return s;
}

static int service_open(svc **out, int *n_sets, const kt_arm_env *env)
{
    svc *s = calloc(1, sizeof(*s));
    if (!s)
        return kt_error_code(KT_ENOMEM, "out of memory");
    *out = s;
    *n_sets = 1; /* every round carries every task, in the same order */
    s->env = *env;
    s->spec = env->spec;
    s->ss = env->spec->service;
    s->out = env->out;
    s->n = s->ss->requests_per_round;
    kt_rng_seed(&s->order_rng, kt_seed_mix(env->seed, 0x726f756e64ull));
    for (size_t k = 0; k < KT_LIMIT_CANDIDATES; k++)
        s->pairs[k].current = -1;
    snprintf(s->workdir, sizeof(s->workdir), "%s/ktrial-service-XXXXXX",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(s->workdir)) {
        snprintf(s->out->error, sizeof(s->out->error), "cannot make a work folder: %s", s->workdir);
        return 0;
    }
    for (size_t t = 0; t < s->ss->n_tasks && t < KT_COMMAND_MAX_TASKS; t++) {
        const kt_command_task *task = &s->ss->tasks[t];
        s->body[t] = task->input ? slurp(task->input, &s->body_len[t]) : strdup("");
        if (task->input && !s->body[t]) {
            snprintf(s->out->error, sizeof(s->out->error), "task '%s': cannot read input '%s'",
                     task->name, task->input);
            return 0;
        }
        size_t len = 0;
        s->expect[t] = task->expect ? slurp(task->expect, &len) : NULL;
        if (task->expect && !s->expect[t]) {
            snprintf(s->out->error, sizeof(s->out->error), "task '%s': cannot read expect '%s'",
                     task->name, task->expect);
            return 0;
        }
        if (s->expect[t] && len && s->expect[t][len - 1] == '\n') /* a file's last newline */
            s->expect[t][len - 1] = '\0';
    }
    s->reqs = calloc((size_t)s->n, sizeof(*s->reqs));
    s->recs = calloc((size_t)s->n, sizeof(*s->recs));
    if (!s->reqs || !s->recs)
        return kt_error_code(KT_ENOMEM, "out of memory");
    for (int i = 0; i < s->n; i++) {
        int t = i % (int)s->ss->n_tasks;
        s->reqs[i] = (kt_loadgen_request){s->body[t], s->body_len[t], t, 0.0};
    }
    if (!s->ss->closed) /* Poisson arrivals, the same offsets every round */
        kt_loadgen_schedule(s->reqs, (size_t)s->n, s->ss->rate_per_s,
                            kt_seed_mix(env->seed, 0x6172726976ull));
    return 0;
}

static void service_describe(svc *s, int arm)
{
    kt_arm_result *a = svc_result(s, arm);
    snprintf(a->name, sizeof(a->name), "%s", svc_arm_name(s, arm));
    snprintf(a->variant, sizeof(a->variant), "serve");
    a->repeatable = -1;
    a->placements = 1;
    const char *prog = svc_spec_arm(s, arm)->setup.n ? svc_spec_arm(s, arm)->setup.items[0] : "";
    char path[8200], *real;
    snprintf(path, sizeof(path), "%s%s%s", prog[0] == '/' ? "" : s->ss->dir,
             prog[0] == '/' ? "" : "/", prog);
    real = strchr(prog, '/') ? realpath(path, NULL) : NULL;
    snprintf(a->program, sizeof(a->program), "%s", real ? real : prog);
    free(real);
    kt_serving_init(&a->serving);
    a->serving.present = 1;
}

static int service_prepare(svc *s, int arm)
{
    double t0 = kt_svc_now();
    int rc = kt_svc_start_cold(s, arm);
    svc_result(s, arm)->prepare_ns = (kt_svc_now() - t0) * 1e9;
    if (rc == 0 && s->ss->exclusive) /* one server at a time: each round starts its own */
        kt_svc_stop(s, arm);
    kt_svc_figures(s, arm);
    return rc;
}

/* Round 'round' of candidate k and its baseline, in the order's turn. Returns 0, -1 when the
 * candidate failed, -2 when the point cannot go on. */
static int run_rounds(svc *s, int k, int round)
{
    svc_pairing *p = &s->pairs[k];
    if (p->n_rounds == p->cap_rounds) {
        int cap = p->cap_rounds ? 2 * p->cap_rounds : 16;
        svc_round *r = realloc(p->rounds, (size_t)cap * sizeof(*r));
        if (!r)
            return kt_svc_fail(s, 0, KT_REASON_SERVER, "out of memory");
        p->rounds = r;
        p->cap_rounds = cap;
    }
    svc_round *rd = &p->rounds[p->n_rounds];
    memset(rd, 0, sizeof(*rd));
    rd->base_ms = calloc((size_t)s->n, sizeof(double));
    rd->cand_ms = calloc((size_t)s->n, sizeof(double));
    if (!rd->base_ms || !rd->cand_ms) {
        free(rd->base_ms);
        free(rd->cand_ms);
        return kt_svc_fail(s, 0, KT_REASON_SERVER, "out of memory");
    }
    int first = s->spec->order == KT_ORDER_ALTERNATE ? round % 4 == 1 || round % 4 == 2
                : s->spec->order == KT_ORDER_RANDOM  ? (int)(kt_rng_next(&s->order_rng) >> 63)
                                                     : 0;
    int rc = 0;
    for (int j = 0; j < 2 && rc == 0; j++) {
        int arm = (j == 0) == first ? k + 1 : 0;
        rc = arm ? kt_svc_round(s, arm, round, rd->cand_ms, &rd->cand_s, &rd->cand_done)
                 : kt_svc_round(s, arm, round, rd->base_ms, &rd->base_s, &rd->base_done);
    }
    if (rc < 0) {
        free(rd->base_ms);
        free(rd->cand_ms);
        return rc;
    }
    p->n_rounds++;
    p->current = round;
    p->candidate_first = first;
    kt_svc_figures(s, 0);
    kt_svc_figures(s, k + 1);
    return 0;
}

static int service_call(svc *s, int arm, const kt_arm_at *at, kt_arm_sample *out)
{
    memset(out, 0, sizeof(*out));
    out->usage = (kt_arm_usage){NAN, NAN, NAN, NAN};
    out->t.time_ns = 1;
    if (at->rep < 0) { /* warmup: one request (none with exclusive: no server is up) */
        if (s->ss->exclusive)
            return 0;
        double ms;
        int rc = kt_svc_one(s, arm, (-at->rep - 1) % (int)s->ss->n_tasks, &ms);
        out->t.time_ns = ms * 1e6;
        return rc;
    }
    int k = arm ? arm - 1 : at->pair_with - 2;
    if (k < 0 || k >= (int)s->out->n_cands)
        return kt_svc_fail(s, 0, KT_REASON_SERVER, "a baseline call outside a pair");
    svc_pairing *p = &s->pairs[k];
    int round = at->rep / s->n, i = at->rep % s->n;
    if (p->current != round) {
        int rc = run_rounds(s, k, round);
        if (rc == -2 || (rc < 0 && arm))
            return rc;
        if (rc < 0)
            return 0; /* the candidate failed: its own call says so, and the pair is dropped */
    }
    if (svc_result(s, k + 1)->failed)
        return arm ? -1 : 0;
    svc_round *rd = &p->rounds[p->n_rounds - 1];
    out->t.time_ns = (arm ? rd->cand_ms[i] : rd->base_ms[i]) * 1e6;
    out->taken_first = p->candidate_first ? 2 : 1;
    return 0;
}

static int service_check(svc *s, int arm, const kt_arm_at *at, int ref)
{
    (void)s;
    (void)arm;
    (void)at;
    (void)ref;
    return 0; /* each answer is compared as its round ends (service_round.c) */
}

static void service_release(svc *s, int arm)
{
    svc_arm *a = &s->arms[arm];
    kt_svc_stop(s, arm);
    if (a->errors)
        kt_svc_stderr_tail(s, arm, a->stderr_tail, sizeof(a->stderr_tail));
    kt_svc_figures(s, arm);
    kt_arm_result *r = svc_result(s, arm);
    r->bytes = a->peak_rss_kib > 0 ? a->peak_rss_kib * 1024.0 : 0; /* the memory gate */
    r->variant_bytes = 0;
    if (s->env.keep && access(a->srv.log_path, R_OK) == 0)
        s->env.keep(s->env.ctx, s->env.point->id, svc_arm_name(s, arm), "server.log",
                    a->srv.log_path, NULL);
}

static void service_close(svc *s)
{
    if (!s)
        return;
    for (int arm = 0; arm < SVC_MAX_ARMS; arm++) {
        svc_arm *a = &s->arms[arm];
        kt_svc_stop(s, arm);
        if (a->srv.log_path[0])
            unlink(a->srv.log_path);
        free(a->values);
        for (int t = 0; t < KT_COMMAND_MAX_TASKS; t++)
            free(a->text[t]);
    }
    for (int k = 0; k < KT_LIMIT_CANDIDATES; k++) {
        for (int r = 0; r < s->pairs[k].n_rounds; r++) {
            free(s->pairs[k].rounds[r].base_ms);
            free(s->pairs[k].rounds[r].cand_ms);
        }
        free(s->pairs[k].rounds);
    }
    for (int t = 0; t < KT_COMMAND_MAX_TASKS; t++) {
        free(s->body[t]);
        free(s->expect[t]);
    }
    if (s->recs)
        kt_loadgen_records_free(s->recs, (size_t)s->n);
    free(s->recs);
    free(s->reqs);
    rmdir(s->workdir);
    free(s);
}

const kt_arm_kind kt_arm_service = {
    .name = "service",
    .startup = "the servers' start",
    .numerics = KT_ARM_NUMERICS_OUTPUT,
    .usage = KT_ARM_USAGE_RSS | KT_ARM_USAGE_CPU_TIME,
    .clock = KT_ARM_CLOCK_CHILD,
    .tick_ns = 1000, /* the load generator's times: CLOCK_MONOTONIC, microseconds at best */
    .isolated = 0,   /* the servers are child processes: a crash costs only that arm */
    .needs_backend = 0,
    .placements = 0,
    .grouped = 0,
    .shuffles = 0,
    .checks_each_call = 0,
    .open = service_open,
    .describe = service_describe,
    .prepare = service_prepare,
    .settle = NULL,
    .place = NULL,
    .call = service_call,
    .check = service_check,
    .forget = NULL,
    .profile = NULL,
    .release = service_release,
    .close = service_close,
    .calibrate = NULL,
    .metric = NULL, /* the samples are times (ns) of the spec's measure.metric */
};
