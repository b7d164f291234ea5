/* bench_ffd_sweep.c - FFD against dense on every catalog model's heads (head_dim 64/128/256,
 * GQA 1-8), batch 1, bf16, llm inputs, at 8K, 32K and 128K: speedup over dense, the error
 * against the float64 reference on several input sets, the byte-model bound and the fraction
 * of it reached, and where FFD's time goes (the variant's phase timer).
 *
 * usage: bench_ffd_sweep [THREADS] [--contexts=T1,T2,...] [--seeds=N] [--reps=N]
 *                        [--blocks=B1,B2,...] [--models=NAME,...] [--cpu-time] [--delta=D]
 *   THREADS default 1; contexts default 8192,32768,131072 (a context is skipped, with a note,
 *   where the instance would not fit in half of MemAvailable); seeds: input sets for the error
 *   column (default 2, 1 from 128K; the worst is shown); reps: timed rounds per point (default
 *   11, 5 from 128K); blocks: FFD block sizes to compare (default FFD's, 64); --cpu-time (one
 * thread only): times each call by the calling thread's CPU time instead of the backend's
 * wall-clock timer, which leaves out the time other processes held the core (for a loaded machine;
 *   memory contention still shows).
 * Arms of a point run in rotating order within each round, cold (kt_backend_flush_cache), so
 * that load from elsewhere falls on all of them alike; times are medians. The arms: dense,
 * FFD with its default scan (int8 where the CPU has AVX-512 VNNI) and FFD with scan float,
 * both at the default delta with stored keys. Prints markdown on stdout. */
#include "arm/kernel/check.h"
#include "kernel.h"

#include "ffd_quant.h"
#include "spec/catalog.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "bench_common.h"
#include "bench_ffd_model.h"

#define MAX_LIST   8
#define MAX_ROUNDS 64

typedef struct sweep_opts {
    int threads, seeds, reps;
    int cpu_time; /* --cpu-time: time calls by the thread's CPU time (1 thread only) */
    double delta; /* --delta: FFD's delta (default KT_FFD_DEFAULT_DELTA) */
    int64_t contexts[MAX_LIST], blocks[MAX_LIST];
    int n_contexts, n_blocks;
    const char *models; /* comma-separated names, or NULL for all */
} sweep_opts;

/* One timed configuration of a point: a variant, its params, its prepared state. */
typedef struct sweep_arm {
    const kt_variant *v;
    kt_param_value params[KT_MAX_PARAMS];
    void *st;
    kt_call call;
    double ms, rounds_ns[MAX_ROUNDS];
} sweep_arm;

static int set_param(sweep_arm *a, const char *name, double value)
{
    int at = kt_param_index(a->v->params, a->v->n_params, name);
    if (at < 0)
        return kt_error_code(KT_EINVAL, "variant '%s' has no param '%s'", a->v->name, name);
    a->params[at].num = value;
    return KT_OK;
}

/* The metric 'name' of a prepared arm after a call, or -1. */
static double arm_metric(const sweep_arm *a, const char *name)
{
    kt_metric m[KT_MAX_METRICS];
    int n = a->v->metrics ? a->v->metrics(a->st, m, KT_MAX_METRICS) : 0;
    for (int i = 0; i < n; i++)
        if (strcmp(m[i].name, name) == 0)
            return m[i].value;
    return -1;
}

static double thread_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* 'reps' rounds of one cold call per arm, the first arm rotating; medians into ms. */
static int time_rounds(sweep_arm *arms, int n, kt_backend *b, int reps, int cpu_time)
{
    for (int r = 0; r < reps; r++) {
        for (int i = 0; i < n; i++) {
            sweep_arm *a = &arms[(r + i) % n];
            kt_timing tm;
            kt_backend_flush_cache(b);
            double c0 = thread_cpu_ns();
            kt_backend_timer_start(b);
            int err = a->v->run(a->st, &a->call);
            kt_backend_timer_stop(b, &tm);
            if (err < 0)
                return err;
            a->rounds_ns[r] = cpu_time ? thread_cpu_ns() - c0 : tm.time_ns;
        }
    }
    for (int i = 0; i < n; i++)
        arms[i].ms = median(arms[i].rounds_ns, reps) / 1e6;
    return KT_OK;
}

/* FFD's error against the float64 reference (rel_l2) and its kept fraction: one checked call
 * of the prepared 'state' of variant 'v' with 'call' on 'inst'. */
static int ffd_check(double *rel_l2, double *kept, kt_instance *inst, const kt_variant *v,
                     void *state, const kt_call *call)
{
    kt_numerics num;
    int err = kt_check_call(&num, inst, v, state, call);
    if (err == KT_OK) {
        *rel_l2 = num.rel_l2;
        sweep_arm a = {.v = v, .st = state};
        *kept = arm_metric(&a, "kept_fraction");
    }
    return err;
}

/* The same on a new instance of 'pt' from input set 'seed'. */
static int ffd_error(double *rel_l2, double *kept, kt_backend *b, const kt_point *pt,
                     const kt_param_value *in, const kt_param_value *params, int threads,
                     uint64_t seed)
{
    const kt_variant *v = kt_variant_find("attention_decode", "cpu", "ffd");
    kt_instance *inst = NULL;
    void *st = NULL;
    int err = kt_instance_create(&inst, b, kt_op_find("attention_decode"), pt, KT_DTYPE_BF16,
                                 KT_DIST_LLM, in, seed);
    if (err < 0)
        return err;
    kt_call call = kt_instance_call(inst, b, params, threads);
    if ((err = v->prepare(&st, &call)) == KT_OK)
        err = ffd_check(rel_l2, kept, inst, v, st, &call);
    v->release(st, b);
    kt_instance_free(inst, b);
    return err;
}

/* Medians over 'calls' untimed calls of the phase times of an ffd arm with phase_times on:
 * pseudo-max, select, attend, merge (microseconds). */
static int ffd_phases(double *us, sweep_arm *a, kt_backend *b, int calls)
{
    static const char *names[4] = {"phase_pseudomax_us", "phase_select_us", "phase_attend_us",
                                   "phase_merge_us"};
    double v[4][MAX_ROUNDS];
    for (int r = 0; r < calls; r++) {
        kt_backend_flush_cache(b);
        int err = a->v->run(a->st, &a->call);
        if (err < 0)
            return err;
        for (int i = 0; i < 4; i++)
            v[i][r] = arm_metric(a, names[i]);
    }
    for (int i = 0; i < 4; i++)
        us[i] = median(v[i], calls);
    return KT_OK;
}

/* KiB of MemAvailable, or 0 when unknown. */
static long long mem_available_kib(void)
{
    FILE *f = fopen("/proc/meminfo", "r");
    char line[256];
    long long kib = 0;
    while (f && fgets(line, sizeof(line), f))
        if (sscanf(line, "MemAvailable: %lld kB", &kib) == 1)
            break;
    if (f)
        fclose(f);
    return kib;
}

/* One point (model, context, block): prints its table row. */
static int sweep_point(const sweep_opts *o, kt_backend *b, const kt_model *md, int64_t context,
                       int64_t block, const kt_param_value *in, double *speedup_out,
                       double *err_out)
{
    const kt_op *op = kt_op_find("attention_decode");
    kt_point pt = bench_decode_point(md, context);
    kt_instance *inst = NULL;
    int err = kt_instance_create(&inst, b, op, &pt, KT_DTYPE_BF16, KT_DIST_LLM, in, 7);
    if (err < 0)
        return err;
    /* arms: 0 dense, 1 ffd (default scan), 2 ffd scan float, 3 ffd with the phase timer */
    sweep_arm arms[4];
    memset(arms, 0, sizeof(arms));
    for (int i = 0; i < 4; i++) {
        arms[i].v = kt_variant_find("attention_decode", "cpu", i ? "ffd" : "dense");
        kt_param_defaults(arms[i].params, arms[i].v->params, arms[i].v->n_params);
        if (i > 0 && ((err = set_param(&arms[i], "block", (double)block)) < 0 ||
                      (err = set_param(&arms[i], "delta", o->delta)) < 0))
            goto done;
    }
    if ((err = set_param(&arms[2], "scan", 1)) < 0 ||
        (err = set_param(&arms[3], "phase_times", 1)) < 0)
        goto done;
    for (int i = 0; i < 4; i++) {
        arms[i].call = kt_instance_call(inst, b, arms[i].params, o->threads);
        if ((err = arms[i].v->prepare(&arms[i].st, &arms[i].call)) < 0)
            goto done;
    }
    int reps = o->reps > 0 ? o->reps : context >= 131072 ? 5 : 11;
    double phase_us[4];
    if ((err = time_rounds(arms, 3, b, reps, o->cpu_time)) < 0 ||
        (err = ffd_phases(phase_us, &arms[3], b, reps)) < 0)
        goto done;
    double rescanned = arm_metric(&arms[1], "rescanned_fraction");
    double worst = 0, kept = 0;
    if ((err = ffd_check(&worst, &kept, inst, arms[1].v, arms[1].st, &arms[1].call)) < 0)
        goto done;
    int seeds = o->seeds > 0 ? o->seeds : context >= 131072 ? 1 : 2;
    for (int s = 1; s < seeds; s++) {
        double e = 0, k = 0;
        if ((err = ffd_error(&e, &k, b, &pt, in, arms[1].params, o->threads, 7 + (uint64_t)s)) < 0)
            goto done;
        worst = fmax(worst, e);
    }
    double speedup = arms[0].ms / arms[1].ms, bound = ffd_byte_bound(kept, md->head_dim, 2, block);
    double phase_total = phase_us[0] + phase_us[1] + phase_us[2] + phase_us[3];
    int ok = speedup >= 2.0 && worst <= 2e-2;
    printf("| %s | %lld | %lld / %lld | %lld | %lld | %.3f | %.3f | %.2fx | %.3f | %.2fx | %.3f | "
           "%.3f | %.2fx | %.0f%% | %.4f | %.0f / %.0f / %.0f / %.0f | %s |\n",
           md->name, (long long)md->head_dim, (long long)md->heads, (long long)md->kv_heads,
           (long long)context, (long long)block, arms[0].ms, arms[1].ms, speedup, arms[2].ms,
           arms[0].ms / arms[2].ms, kept, rescanned, bound, 100 * speedup / bound, worst,
           100 * phase_us[0] / phase_total, 100 * phase_us[1] / phase_total,
           100 * phase_us[2] / phase_total, 100 * phase_us[3] / phase_total,
           ok              ? "met"
           : speedup < 2.0 ? (worst > 2e-2 ? "speed, error" : "speed")
                           : "error");
    fflush(stdout);
    *speedup_out = speedup;
    *err_out = worst;
done:
    for (int i = 0; i < 4; i++)
        if (arms[i].v)
            arms[i].v->release(arms[i].st, b);
    kt_instance_free(inst, b);
    return err;
}

/* Parses "A,B,C" into 'out' (at most MAX_LIST); returns the count, or -1. */
static int parse_list(int64_t *out, const char *s)
{
    int n = 0;
    while (*s && n < MAX_LIST) {
        char *end;
        long long v = strtoll(s, &end, 10);
        if (end == s || v <= 0)
            return -1;
        out[n++] = v;
        s = *end == ',' ? end + 1 : end;
    }
    return *s ? -1 : n;
}

static int parse_args(sweep_opts *o, int argc, char **argv)
{
    *o = (sweep_opts){
        .threads = 1, .seeds = 2, .n_contexts = 3, .n_blocks = 1, .delta = KT_FFD_DEFAULT_DELTA};
    int64_t contexts[] = {8192, 32768, 131072};
    memcpy(o->contexts, contexts, sizeof(contexts));
    o->blocks[0] = KT_FFD_DEFAULT_BLOCK;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strncmp(a, "--contexts=", 11) == 0)
            o->n_contexts = parse_list(o->contexts, a + 11);
        else if (strncmp(a, "--blocks=", 9) == 0)
            o->n_blocks = parse_list(o->blocks, a + 9);
        else if (strncmp(a, "--seeds=", 8) == 0)
            o->seeds = atoi(a + 8);
        else if (strncmp(a, "--reps=", 7) == 0)
            o->reps = atoi(a + 7);
        else if (strncmp(a, "--models=", 9) == 0)
            o->models = a + 9;
        else if (strncmp(a, "--delta=", 8) == 0)
            o->delta = atof(a + 8);
        else if (strcmp(a, "--cpu-time") == 0)
            o->cpu_time = 1;
        else if (atoi(a) > 0)
            o->threads = atoi(a);
        else
            return -1;
    }
    return o->n_contexts > 0 && (!o->cpu_time || o->threads == 1) && o->n_blocks > 0 &&
                   o->seeds >= 0 && o->reps >= 0 && o->reps <= MAX_ROUNDS && o->delta >= 0
               ? 0
               : -1;
}

int main(int argc, char **argv)
{
    sweep_opts o;
    if (parse_args(&o, argc, argv) < 0) {
        fprintf(
            stderr,
            "usage: bench_ffd_sweep [THREADS] [--contexts=T,...] [--seeds=N] "
            "[--reps=N (<= 64)] [--blocks=B,...] [--models=NAME,...] [--cpu-time (1 thread)]\n");
        return 64;
    }
    kt_param_value in[KT_MAX_PARAMS];
    kt_catalog cat;
    kt_backend *b = NULL;
    if (ffd_bench_open(&cat, &b, in, o.threads, "bench_ffd_sweep") < 0)
        return 1;
    double load[3] = {0, 0, 0};
    FILE *f = fopen("/proc/loadavg", "r");
    if (!f || fscanf(f, "%lf %lf %lf", &load[0], &load[1], &load[2]) != 3)
        load[0] = -1;
    if (f)
        fclose(f);
    char seeds[32];
    snprintf(seeds, sizeof(seeds), o.seeds > 0 ? "%d" : "2 (1 at 128K)", o.seeds);
    printf("threads: %d; delta %g, keys stored, bf16, batch 1, llm inputs; error: worst "
           "of %s input sets; times: %s; load average at start: %.2f\n\n",
           o.threads, o.delta, seeds, o.cpu_time ? "thread CPU time" : "wall clock", load[0]);
    printf("| model | d | heads / kv | context | block | dense ms | ffd ms | speedup | ffd float "
           "scan ms | float speedup | kept | rescanned | byte-model bound | of bound | ffd "
           "rel_l2 | phases %% (pseudo-max / select / attend / merge) | targets |\n");
    printf("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|\n");
    for (int ci = 0; ci < o.n_contexts; ci++) {
        int64_t t = o.contexts[ci];
        double log_sum = 0;
        int n_done = 0, n_ok = 0;
        for (size_t mi = 0; mi < cat.n; mi++) {
            const kt_model *md = &cat.models[mi];
            if (!ffd_bench_model_selected(o.models, md->name))
                continue;
            /* K and V in bf16, the float64 reference's inputs, FFD's codes and residual */
            double need_kib =
                (double)t * (double)(md->kv_heads * md->head_dim) * 2 * 2 * 3.5 / 1024;
            long long avail = mem_available_kib();
            if (avail > 0 && need_kib > 0.5 * (double)avail) {
                printf("| %s | %lld | %lld / %lld | %lld | skipped: needs about %.0f MiB, half "
                       "of MemAvailable is %.0f MiB |\n",
                       md->name, (long long)md->head_dim, (long long)md->heads,
                       (long long)md->kv_heads, (long long)t, need_kib / 1024,
                       0.5 * (double)avail / 1024);
                continue;
            }
            for (int bi = 0; bi < o.n_blocks; bi++) {
                double speedup = 0, err = 0;
                if (sweep_point(&o, b, md, t, o.blocks[bi], in, &speedup, &err) < 0) {
                    printf("| %s | %lld | %lld / %lld | %lld | %lld | error: %s |\n", md->name,
                           (long long)md->head_dim, (long long)md->heads, (long long)md->kv_heads,
                           (long long)t, (long long)o.blocks[bi], kt_error_last());
                    continue;
                }
                if (bi == 0) {
                    log_sum += log(speedup);
                    n_ok += speedup >= 2.0 && err <= 2e-2;
                    n_done++;
                }
            }
        }
        if (n_done > 0)
            printf("| **%lld: geomean %.2fx over %d models; both targets met on %d of %d** |\n",
                   (long long)t, exp(log_sum / n_done), n_done, n_ok, n_done);
    }
    kt_catalog_free(&cat);
    kt_backend_close(b);
    return 0;
}
