/* service_figures.c - a service arm's figures (result/serving.h) from its rounds so far:
 * startup and cold request (medians over the starts), p50/p90/p99 of the metric over the timed
 * requests with bootstrap intervals, throughput, errors, memory and CPU; for a candidate the
 * p99 and throughput ratios to the baseline rounds it was paired with. The bootstrap resamples
 * rounds (the baseline's and the candidate's round of one index together: the pairing), or,
 * with fewer than SVC_MIN_ROUNDS rounds, paired requests (request i of both rounds together). */
#include "arm/service/service_run.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SVC_BOOT       400
#define SVC_MIN_ROUNDS 5

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Type-7 quantile of v[0..n) (sorted in place). */
static double quantile(double *v, size_t n, double q)
{
    if (n == 0)
        return NAN;
    qsort(v, n, sizeof(double), cmp_double);
    double h = (double)(n - 1) * q;
    size_t lo = (size_t)floor(h);
    size_t hi = lo + 1 < n ? lo + 1 : lo;
    return v[lo] + (h - (double)lo) * (v[hi] - v[lo]);
}

static double median_of(const double *v, int n)
{
    double tmp[256];
    int m = n < 256 ? n : 256;
    memcpy(tmp, v, (size_t)m * sizeof(double));
    return quantile(tmp, (size_t)m, 0.5);
}

/* One arm's requests of a pairing: round r, request i -> rounds[r].{base,cand}_ms[i]. */
typedef struct sample_view {
    const svc_pairing *p;
    int cand; /* 1: the candidate's side */
    int n;    /* requests per round */
} sample_view;

/* Fills 'out' with the values of resample 'idx' (round indexes, or request indexes r*n+i). */
static size_t gather(const sample_view *v, const int *idx, int m, int by_round, double *out)
{
    size_t k = 0;
    for (int j = 0; j < m; j++) {
        int r = by_round ? idx[j] : idx[j] / v->n;
        const svc_round *rd = &v->p->rounds[r];
        const double *x = v->cand ? rd->cand_ms : rd->base_ms;
        if (by_round)
            for (int i = 0; i < v->n; i++)
                out[k++] = x[i];
        else
            out[k++] = x[idx[j] % v->n];
    }
    return k;
}

/* Draws the resample indexes: m units out of 'units'. */
static void draw(kt_rng *rng, int *idx, int m, int units)
{
    for (int j = 0; j < m; j++)
        idx[j] = (int)(kt_rng_next(rng) % (uint64_t)units);
}

/* Quantile 'q' of both arms of pairing 'p' with 95% bootstrap intervals, and the candidate's
 * over the baseline's ratio with its interval. */
static void boot(const svc_pairing *p, int n, double q, kt_serving_q *base, kt_serving_q *cand,
                 kt_serving_q *ratio, uint64_t seed)
{
    int R = p->n_rounds, by_round = R >= SVC_MIN_ROUNDS;
    int units = by_round ? R : R * n, m = units;
    size_t total = (size_t)R * (size_t)n;
    double *buf = malloc((total ? total : 1) * sizeof(double));
    double *bs = malloc(SVC_BOOT * sizeof(double)), *cs = malloc(SVC_BOOT * sizeof(double));
    double *rs = malloc(SVC_BOOT * sizeof(double));
    int *idx = malloc((size_t)(units ? units : 1) * sizeof(int));
    *base = *cand = *ratio = (kt_serving_q){NAN, NAN, NAN};
    if (buf && bs && cs && rs && idx && R > 0) {
        sample_view vb = {p, 0, n}, vc = {p, 1, n};
        for (int j = 0; j < units; j++)
            idx[j] = j;
        double b0 = quantile(buf, gather(&vb, idx, m, by_round, buf), q);
        double c0 = quantile(buf, gather(&vc, idx, m, by_round, buf), q);
        kt_rng rng;
        kt_rng_seed(&rng, seed);
        for (int t = 0; t < SVC_BOOT; t++) {
            draw(&rng, idx, m, units);
            bs[t] = quantile(buf, gather(&vb, idx, m, by_round, buf), q);
            cs[t] = quantile(buf, gather(&vc, idx, m, by_round, buf), q);
            rs[t] = cs[t] / bs[t];
        }
        *base = (kt_serving_q){b0, quantile(bs, SVC_BOOT, 0.025), quantile(bs, SVC_BOOT, 0.975)};
        *cand = (kt_serving_q){c0, quantile(cs, SVC_BOOT, 0.025), quantile(cs, SVC_BOOT, 0.975)};
        *ratio =
            (kt_serving_q){c0 / b0, quantile(rs, SVC_BOOT, 0.025), quantile(rs, SVC_BOOT, 0.975)};
    }
    free(buf);
    free(bs);
    free(cs);
    free(rs);
    free(idx);
}

/* Throughput ratio (candidate over baseline requests/s) with a bootstrap over rounds. */
static void throughput_ratio(const svc_pairing *p, kt_serving_q *out, uint64_t seed)
{
    int R = p->n_rounds;
    double r[SVC_BOOT];
    *out = (kt_serving_q){NAN, NAN, NAN};
    if (R == 0)
        return;
    kt_rng rng;
    kt_rng_seed(&rng, seed);
    for (int t = -1; t < SVC_BOOT; t++) {
        double bd = 0, bs = 0, cd = 0, cs = 0;
        for (int j = 0; j < R; j++) {
            int k = t < 0 ? j : (int)(kt_rng_next(&rng) % (uint64_t)R);
            bd += p->rounds[k].base_done;
            bs += p->rounds[k].base_s;
            cd += p->rounds[k].cand_done;
            cs += p->rounds[k].cand_s;
        }
        double x = (cd / cs) / (bd / bs);
        if (t < 0)
            out->value = x;
        else
            r[t] = x;
    }
    out->low = quantile(r, SVC_BOOT, 0.025);
    out->high = quantile(r, SVC_BOOT, 0.975);
}

void kt_svc_figures(svc *s, int arm)
{
    svc_arm *a = &s->arms[arm];
    kt_serving *f = &svc_result(s, arm)->serving;
    kt_serving keep = *f;
    kt_serving_init(f);
    f->present = 1;
    f->starts = a->starts;
    int m = a->starts < 256 ? a->starts : 256;
    f->startup_s = median_of(a->startup_s, m);
    f->cold_ms = median_of(a->cold_ms, m);
    f->requests = a->requests;
    f->errors = a->errors;
    f->error_rate = a->requests ? (double)a->errors / (double)a->requests : NAN;
    for (int e = 1; e < 8; e++)
        if (a->err_kinds[e]) {
            size_t len = strlen(f->error_kinds);
            snprintf(f->error_kinds + len, sizeof(f->error_kinds) - len, "%s%s %ld",
                     len ? ", " : "", kt_loadgen_error_name((kt_loadgen_error)e), a->err_kinds[e]);
        }
    f->requests_per_s = a->busy_s > 0 ? (double)a->completed / a->busy_s : NAN;
    f->tokens_per_s = a->busy_s > 0 ? (double)a->tokens / a->busy_s : NAN;
    f->peak_rss_mib = a->peak_rss_kib > 0 ? a->peak_rss_kib / 1024.0 : NAN;
    f->cpu_s = a->cpu_s > 0 ? a->cpu_s : NAN;
    for (size_t t = 0; t < s->ss->n_tasks && t < KT_COMMAND_MAX_TASKS; t++)
        if (a->changed[t]) {
            size_t len = strlen(f->changed);
            snprintf(f->changed + len, sizeof(f->changed) - len, "%s%s", len ? ", " : "",
                     s->ss->tasks[t].name);
            f->n_changed++;
        }
    if (a->errors && !a->stderr_tail[0])
        kt_svc_stderr_tail(s, arm, a->stderr_tail, sizeof(a->stderr_tail));
    snprintf(f->stderr_tail, sizeof(f->stderr_tail), "%s", a->stderr_tail);
    /* the quantiles over every pairing of this arm (the baseline: the first candidate's) */
    uint64_t seed = kt_seed_mix(s->env.seed, 0x7365727665ull + (uint64_t)arm);
    int k = arm ? arm - 1 : 0;
    const svc_pairing *p = s->out->n_cands ? &s->pairs[k] : NULL;
    if (p && p->n_rounds) {
        kt_serving_q b, c, r;
        f->rounds = p->n_rounds;
        double qs[3] = {0.5, 0.9, 0.99};
        kt_serving_q *dst[3] = {&f->p50, &f->p90, &f->p99};
        for (int i = 0; i < 3; i++) {
            boot(p, s->n, qs[i], &b, &c, &r, seed + (uint64_t)i);
            *dst[i] = arm ? c : b;
            if (arm && i == 2)
                f->p99_ratio = r;
        }
        if (arm)
            throughput_ratio(p, &f->throughput_ratio, seed + 7);
    } else if (keep.rounds) { /* figures of rounds this record held: keep them */
        f->p50 = keep.p50;
        f->p90 = keep.p90;
        f->p99 = keep.p99;
    }
    /* e2e, TTFT and TPOT apart, whatever the metric: medians over the requests that have one */
    double *slot[3] = {&f->e2e_p50_ms, &f->ttft_p50_ms, &f->tpot_p50_ms};
    double *tmp = malloc((a->n_values ? a->n_values : 1) * sizeof(double));
    for (int w = 0; tmp && w < 3; w++) {
        size_t n = 0;
        for (size_t i = 0; i < a->n_values; i++)
            if (isfinite(a->values[3 * i + (size_t)w]))
                tmp[n++] = a->values[3 * i + (size_t)w];
        *slot[w] = quantile(tmp, n, 0.5);
    }
    free(tmp);
}
