/* bench_attention.c - decode attention on the CPU: this machine's copy bandwidth, the dense
 * variant's achieved K+V bandwidth as a fraction of it, and FFD against dense on llm inputs
 * (speedup, kept fraction, error against the float64 reference) next to a byte-count model of
 * FFD's ceiling. Cold caches (kt_backend_flush_cache before every timed call), medians.
 *
 * usage: bench_attention [THREADS] [--quick] [--contention] [--omp-spin] [NAME=VALUE...]
 *   THREADS default 2; --quick: 4K and 8K only; NAME=VALUE sets an llm input param;
 *   --contention: only the co-runner table (see contention() below; --quick: 1 round);
 *   --models[=CONTEXT]: only the catalog table (every model's heads at CONTEXT, default 32K);
 *   --fp8-keys: FFD in that table with keys: fp8 instead of the default stored keys;
 *   --dense: only dense on every catalog model at 16K and 32K in bf16 and fp32 (with --quick:
 *   16K, 3 rounds) against a read pass over the call's own K and V, on the kernels' pool,
 *   timed in the same rounds
 *   (this VM's memory bandwidth drifts by tens of percent within minutes, so a ceiling measured
 *   once before the table does not hold for its last rows; the fraction is the median over
 *   rounds of read pass time / dense time), the read and copy ceilings measured first, and a
 *   roofline (bench_roofline.h: the compute-bound time from the measured vdpbf16ps / FMA peak,
 *   and the bound max(read pass, compute)); --model=NAME: only that catalog model
 * Dense and the FFD arms of a point run in rotating order within each round (see time_arms);
 * the variants run with isa auto (AVX-512 where the CPU has it), and dense and FFD at delta 5
 * also with isa avx2, in the same rounds, for the AVX2-to-AVX-512 comparison.
 * --omp-spin: leave libgomp's idle threads (those of the copy and read ceilings) spinning for
 * its default 300,000 pauses after each pass, into the arm timed next; by default the
 * benchmark runs itself again with GOMP_SPINCOUNT=2000 (bench_keep_idle_threads_short).
 * Prints markdown tables on stdout. */
#include "arm/kernel/check.h"
#include "kernel.h"

#include "ffd_quant.h"
#include "cpu/pool.h"
#include "spec/catalog.h"

#include <math.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "bench_common.h"
#include "bench_ffd_model.h"
#include "bench_roofline.h"

#define MAX_ARMS 6
#define MAX_REPS 32

/* One variant with its params at one point: its state, check and timings; or, with v NULL, a
 * read pass over the point's K and V ('read_of'), the memory ceiling timed in the same rounds. */
typedef struct arm {
    const kt_variant *v;
    const kt_instance *read_of;
    int threads;
    kt_param_value params[KT_MAX_PARAMS];
    void *st;
    kt_call call;
    kt_numerics num;
    double kept; /* kept_fraction metric, or -1 */
    double prepare_ms, ms;
    double times_ns[MAX_REPS];
} arm;

/* Prepares every arm on 'inst' and checks one call of each against the reference. */
static int prepare_arms(arm *arms, int n, kt_backend *b, kt_instance *inst, int threads)
{
    for (int a = 0; a < n; a++) {
        arm *x = &arms[a];
        if (!x->v) {
            x->read_of = inst;
            x->threads = threads;
            continue;
        }
        x->call = kt_instance_call(inst, b, x->params, threads);
        double t0 = now_s();
        int err = x->v->prepare(&x->st, &x->call);
        if (err < 0)
            return err;
        x->prepare_ms = (now_s() - t0) * 1e3;
        if ((err = kt_check_call(&x->num, inst, x->v, x->st, &x->call)) < 0)
            return err;
        kt_metric m[KT_MAX_METRICS];
        int nm = x->v->metrics ? x->v->metrics(x->st, m, KT_MAX_METRICS) : 0;
        x->kept = -1;
        for (int i = 0; i < nm; i++)
            if (strcmp(m[i].name, "kept_fraction") == 0)
                x->kept = m[i].value;
    }
    return KT_OK;
}

/* A read pass on the kernels' own pool: the parts cut into 'per_part' contiguous pieces, one
 * pool item each, every participant summing what it reads into its own (padded) sum. */
typedef struct read_job {
    const uint64_t *parts[2];
    size_t words[2];
    int per_part;
    uint64_t sums[64][8];
} read_job;

static void read_piece(void *ctx, int64_t i, int slot)
{
    read_job *j = ctx;
    int part = (int)(i / j->per_part), piece = (int)(i % j->per_part);
    size_t share = j->words[part] / (size_t)j->per_part / 4 * 4, lo = (size_t)piece * share;
    size_t hi = piece == j->per_part - 1 ? j->words[part] : lo + share, w = lo;
    const uint64_t *a = j->parts[part];
    uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    for (; w + 4 <= hi; w += 4) {
        s0 += a[w];
        s1 += a[w + 1];
        s2 += a[w + 2];
        s3 += a[w + 3];
    }
    for (; w < hi; w++)
        s0 += a[w];
    j->sums[slot][0] += s0 + s1 + s2 + s3;
}

/* Nanoseconds of one read pass of arm 'x' (v NULL) over its instance's K and V, on the pool
 * the kernels run on (kt_pool_for, x->threads), cut into 8 pieces per thread and buffer: the
 * pass starts its worker from the same futex sleep as the kernel timed in the same round
 * does (the OpenMP pass of read_pass_s has threads of its own, with their own wake-up). */
static double read_arm_ns(const arm *x)
{
    const kt_problem *p = &x->read_of->problem;
    read_job j;
    memset(&j, 0, sizeof(j));
    for (int part = 0; part < 2; part++) {
        j.parts[part] = x->read_of->dev_inputs[1 + part];
        j.words[part] = kt_tensor_bytes(&p->tensors[1 + part]) / sizeof(uint64_t);
    }
    j.per_part = 8 * x->threads;
    double t0 = now_s();
    kt_pool_for(x->threads, 2 * j.per_part, read_piece, &j);
    double s = now_s() - t0;
    uint64_t total = 0;
    for (int t = 0; t < 64; t++)
        total += j.sums[t][0];
    if (total == 42) /* keeps the sums alive */
        printf(" ");
    return s * 1e9;
}

/* Times 'reps' rounds; each round runs every arm once, cold, starting from a rotating arm, so
 * that load from elsewhere on the machine falls on all arms alike. Medians into arms[].ms. */
static int time_arms(arm *arms, int n, kt_backend *b, int reps)
{
    for (int r = 0; r < reps; r++) {
        for (int i = 0; i < n; i++) {
            arm *x = &arms[(r + i) % n];
            kt_timing tm;
            kt_backend_flush_cache(b);
            if (!x->v) {
                x->times_ns[r] = read_arm_ns(x);
                continue;
            }
            kt_backend_timer_start(b);
            int err = x->v->run(x->st, &x->call);
            if (err < 0)
                return err;
            kt_backend_timer_stop(b, &tm);
            x->times_ns[r] = tm.time_ns;
        }
    }
    for (int a = 0; a < n; a++) {
        double t[MAX_REPS];
        memcpy(t, arms[a].times_ns, sizeof(double) * (size_t)reps);
        arms[a].ms = median(t, reps) / 1e6;
    }
    return KT_OK;
}

/* The median over rounds of arm 'x''s time over arm 'y''s in the same round. */
static double median_ratio(const arm *x, const arm *y, int reps)
{
    double r[MAX_REPS];
    for (int i = 0; i < reps; i++)
        r[i] = x->times_ns[i] / y->times_ns[i];
    return median(r, reps);
}

static kt_point llama8b_point(int64_t context)
{
    kt_point pt;
    memset(&pt, 0, sizeof(pt));
    snprintf(pt.model.name, sizeof(pt.model.name), "llama-3.1-8b");
    pt.model.hidden = 4096;
    pt.model.heads = 32;
    pt.model.kv_heads = 8;
    pt.model.head_dim = 128;
    pt.model.intermediate = 14336;
    pt.batch_size = 1;
    pt.context_length = context;
    snprintf(pt.id, sizeof(pt.id), "llama-3.1-8b/decode/b1/t%lld", (long long)context);
    return pt;
}

/* Starts a process that spins on the last online CPU; returns its pid (or -1). */
static pid_t start_co_runner(void)
{
    pid_t pid = fork();
    if (pid != 0)
        return pid;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET((int)sysconf(_SC_NPROCESSORS_ONLN) - 1, &set);
    sched_setaffinity(0, sizeof(set), &set);
    for (volatile unsigned long i = 0;; i++)
        ;
}

/* 'reps' cold calls of dense at 'pt': medians of the time and of the run-queue wait (the time
 * this process's threads were runnable but not running) per call, and the p90 time. */
static int time_dense(kt_backend *b, kt_instance *inst, int threads, int reps, double *ms,
                      double *p90_ms, double *wait_us)
{
    arm a;
    memset(&a, 0, sizeof(a));
    a.v = kt_variant_find("attention_decode", "cpu", "dense");
    kt_param_defaults(a.params, a.v->params, a.v->n_params);
    int err = prepare_arms(&a, 1, b, inst, threads);
    double t[256], w[256];
    for (int r = 0; err == KT_OK && r < reps && r < 256; r++) {
        kt_timing tm;
        kt_backend_flush_cache(b);
        int64_t w0 = kt_pool_runq_wait_ns();
        kt_backend_timer_start(b);
        err = a.v->run(a.st, &a.call);
        kt_backend_timer_stop(b, &tm);
        w[r] = (double)(kt_pool_runq_wait_ns() - w0) / 1e3;
        t[r] = tm.time_ns / 1e6;
    }
    a.v->release(a.st, b);
    if (err < 0)
        return err;
    *wait_us = median(w, reps);
    *ms = median(t, reps); /* sorts t */
    *p90_ms = t[(int)(0.9 * (reps - 1))];
    return KT_OK;
}

/* A 2-thread dense bf16 decode (llama-3.1-8b heads, 4K) quiet, then with a process spinning
 * on the last core: the pool's waits back off to futexes and nobody waits for a thread that has
 * not started, so a co-runner should cost about one core's share, not a scheduler slice per
 * call. Rounds alternate quiet and contended so machine load falls on both alike, once with
 * threads_affinity none and once compact; the summary gives, per affinity, the median over
 * rounds of the contended / quiet ratios of the median and of the p90 call time. */
static int contention(int threads, int rounds)
{
    const kt_op *op = kt_op_find("attention_decode");
    kt_param_value in[KT_MAX_PARAMS];
    kt_param_defaults(in, op->input_params, op->n_input_params);
    kt_backend *b = NULL;
    kt_instance *inst = NULL;
    kt_point pt = llama8b_point(4096);
    if (kt_backend_open(&b, "cpu", threads, 1) < 0 ||
        kt_instance_create(&inst, b, op, &pt, KT_DTYPE_BF16, KT_DIST_LLM, in, 7) < 0) {
        fprintf(stderr, "bench_attention: %s\n", kt_error_last());
        return 1;
    }
    printf("| affinity | round | co-runner | median ms | p90 ms | run-queue wait per call, us | "
           "median / quiet | p90 / quiet |\n");
    printf("|---|---:|---|---:|---:|---:|---:|---:|\n");
    double ratio_med[2][16], ratio_p90[2][16];
    if (rounds > 16)
        rounds = 16;
    for (int aff = 0; aff < 2; aff++) {
        kt_pool_set_affinity(aff ? KT_POOL_AFFINITY_COMPACT : KT_POOL_AFFINITY_NONE);
        for (int round = 0; round < rounds; round++) {
            double quiet = 0, quiet_p90 = 0;
            for (int busy = 0; busy < 2; busy++) {
                pid_t co = busy ? start_co_runner() : 0;
                if (busy && co < 0) {
                    fprintf(stderr, "bench_attention: fork: cannot start the co-runner\n");
                    return 1;
                }
                if (busy)
                    usleep(100000); /* let the scheduler place it */
                double ms, p90, wait;
                int err = time_dense(b, inst, threads, 101, &ms, &p90, &wait);
                if (busy) {
                    kill(co, SIGKILL);
                    waitpid(co, NULL, 0);
                }
                if (err < 0) {
                    fprintf(stderr, "bench_attention: %s\n", kt_error_last());
                    return 1;
                }
                if (!busy)
                    quiet = ms, quiet_p90 = p90;
                ratio_med[aff][round] = ms / quiet;
                ratio_p90[aff][round] = p90 / quiet_p90;
                printf("| %s | %d | %s | %.3f | %.3f | %.0f | %.2fx | %.2fx |\n",
                       aff ? "compact" : "none", round + 1, busy ? "1 spinning process" : "none",
                       ms, p90, wait, ms / quiet, p90 / quiet_p90);
                fflush(stdout);
            }
        }
    }
    kt_pool_set_affinity(KT_POOL_AFFINITY_NONE);
    printf("\n");
    for (int aff = 0; aff < 2; aff++) {
        double med = median(ratio_med[aff], rounds), p90 = median(ratio_p90[aff], rounds);
        printf("co-runner on one core, %d threads, threads_affinity %s: median %.2fx quiet, p90 "
               "%.2fx quiet; target about 2x or less: %s\n",
               threads, aff ? "compact" : "none", med, p90, med <= 2.2 ? "met" : "not met");
    }
    kt_instance_free(inst, b);
    kt_backend_close(b);
    return 0;
}

/* FFD (delta 5) against dense on every catalog model's heads, batch 1, bf16, llm inputs, with
 * dense's K+V bandwidth as a fraction of the read and copy ceilings and whether FFD meets the
 * targets (>= 2x over dense, rel_l2 <= 2e-2). */
static int fp8_keys; /* --fp8-keys */

static int models_table(int threads, int64_t context, const kt_param_value *in, double copy_gbs,
                        double read_gbs)
{
    const kt_op *op = kt_op_find("attention_decode");
    kt_catalog cat;
    kt_diag diag;
    kt_diag_init(&diag);
    kt_backend *b = NULL;
    if (kt_catalog_load(&cat, &diag) < 0 || kt_backend_open(&b, "cpu", threads, 1) < 0) {
        fprintf(stderr, "bench_attention: cannot load the catalog or open the cpu backend\n");
        kt_diag_free(&diag);
        return 1;
    }
    kt_diag_free(&diag);
    printf("\n| model | d | heads / kv | context | dense ms | dense of read bw | dense of copy bw "
           "| kept | ffd ms | speedup | byte-model bound | of bound | ffd rel_l2 | dense rel_l2 | "
           "targets |\n");
    printf("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n");
    double log_sum = 0;
    int n_ok = 0, n_done = 0;
    for (size_t mi = 0; mi < cat.n; mi++) {
        const kt_model *md = &cat.models[mi];
        kt_point pt = bench_decode_point(md, context);
        kt_instance *inst = NULL;
        if (kt_instance_create(&inst, b, op, &pt, KT_DTYPE_BF16, KT_DIST_LLM, in, 7) < 0) {
            printf("| %s | %s |\n", md->name, kt_error_last());
            continue;
        }
        arm arms[2];
        memset(arms, 0, sizeof(arms));
        for (int a = 0; a < 2; a++) {
            arms[a].v = kt_variant_find("attention_decode", "cpu", a ? "ffd" : "dense");
            kt_param_defaults(arms[a].params, arms[a].v->params, arms[a].v->n_params);
        }
        arms[1].params[0].num = 5; /* delta */
        arms[1].params[kt_param_index(arms[1].v->params, arms[1].v->n_params, "keys")].num =
            fp8_keys ? 0 : 1;
        int err = prepare_arms(arms, 2, b, inst, threads);
        if (err == KT_OK)
            err = time_arms(arms, 2, b, context >= 131072 ? 7 : 15);
        for (int a = 0; a < 2; a++)
            arms[a].v->release(arms[a].st, b);
        if (err < 0) {
            printf("| %s | %s |\n", md->name, kt_error_last());
            kt_instance_free(inst, b);
            continue;
        }
        double kv = (double)(kt_tensor_bytes(&inst->problem.tensors[1]) +
                             kt_tensor_bytes(&inst->problem.tensors[2]));
        double gbs = kv / (arms[0].ms * 1e-3) / 1e9, speedup = arms[0].ms / arms[1].ms;
        double bound = ffd_byte_bound(arms[1].kept, md->head_dim, 2, KT_FFD_DEFAULT_BLOCK);
        int ok = speedup >= 2.0 && arms[1].num.rel_l2 <= 2e-2;
        printf("| %s | %lld | %lld / %lld | %lld | %.3f | %.0f%% | %.0f%% | %.3f | %.3f | %.2fx | "
               "%.2fx | %.0f%% | %.3g | %.2g | %s |\n",
               md->name, (long long)md->head_dim, (long long)md->heads, (long long)md->kv_heads,
               (long long)context, arms[0].ms, 100 * gbs / read_gbs, 100 * gbs / copy_gbs,
               arms[1].kept, arms[1].ms, speedup, bound, 100 * speedup / bound, arms[1].num.rel_l2,
               arms[0].num.rel_l2,
               ok ? "met"
                  : (speedup < 2.0 ? (arms[1].num.rel_l2 > 2e-2 ? "speed, error" : "speed")
                                   : "error"));
        fflush(stdout);
        log_sum += log(speedup);
        n_ok += ok;
        n_done++;
        kt_instance_free(inst, b);
    }
    if (n_done > 0)
        printf("\nFFD delta 5 at %lld: geomean speedup %.2fx over %d models; both targets met on "
               "%d of %d\n",
               (long long)context, exp(log_sum / n_done), n_done, n_ok, n_done);
    kt_catalog_free(&cat);
    kt_backend_close(b);
    return 0;
}

/* prepare_arms, then time_arms over 'reps' rounds, then releases every prepared arm. */
static int measure_arms(arm *arms, int n, kt_backend *b, kt_instance *inst, int threads, int reps)
{
    int err = prepare_arms(arms, n, b, inst, threads);
    if (err == KT_OK)
        err = time_arms(arms, n, b, reps);
    for (int a = 0; a < n; a++)
        if (arms[a].st)
            arms[a].v->release(arms[a].st, b);
    return err;
}

/* The K and V bytes a decode call of 'inst' reads. */
static double kv_bytes(const kt_instance *inst)
{
    return (double)(kt_tensor_bytes(&inst->problem.tensors[1]) +
                    kt_tensor_bytes(&inst->problem.tensors[2]));
}

/* Loads the model catalog and opens the cpu backend on 'threads' threads; -1 (said) if not. */
static int open_catalog_backend(kt_catalog *cat, kt_backend **b, int threads)
{
    kt_diag diag;
    kt_diag_init(&diag);
    int err = kt_catalog_load(cat, &diag);
    kt_diag_free(&diag);
    if (err < 0 || kt_backend_open(b, "cpu", threads, 1) < 0) {
        fprintf(stderr, "bench_attention: cannot load the catalog or open the cpu backend\n");
        return -1;
    }
    return 0;
}

/* Dense decode on every catalog model's heads, batch 1, llm inputs, in bf16 and fp32 at each of
 * 'contexts': K+V bytes per second as a fraction of the read-only and copy ceilings, and the
 * lowest fraction of read bandwidth per dtype against the 85% target. bf16 runs three times in
 * the same rounds, with bf16_dot auto (AVX-512 BF16 scores and P V where the CPU has them),
 * scores (the scores only, the default before P V took them) and off (widened to fp32). */
static int dense_table(int threads, const int64_t *contexts, int n_ctx, int reps,
                       const kt_param_value *in, double copy_gbs, double read_gbs,
                       const char *only_model)
{
    const kt_op *op = kt_op_find("attention_decode");
    const kt_variant *dense = kt_variant_find("attention_decode", "cpu", "dense");
    int bf16_dot = kt_param_index(dense->params, dense->n_params, "bf16_dot");
    kt_catalog cat;
    kt_backend *b = NULL;
    if (open_catalog_backend(&cat, &b, threads) < 0)
        return 1;
    /* the roofline: the peak of the MAC instruction of each dtype's path, both threads */
    double peak[2] = {roof_peak_per_s(threads, 1), roof_peak_per_s(threads, 0)};
    printf("\nroofline peaks, %d threads: %.2f G vdpbf16ps/s (bf16), %.2f G vfmadd/s (fp32); "
           "compute ms = (2 g d / 32 or 16 MAC instructions + 14 g / 16 softmax ones) per KV "
           "token / peak, bound = max(read pass ms, compute); 85%% of the read pass is reachable "
           "where compute <= read pass ms / 0.85\n",
           threads, peak[0] / 1e9, peak[1] / 1e9);
    printf("\n| model | d | heads / kv | dtype | context | dense ms | K+V GB/s | read pass GB/s | "
           "of read pass | of first read bw | of copy bw | compute ms | bound ms | of bound | "
           "85%% reachable | dense rel_l2 | bf16_dot scores ms | scores of read pass | bf16_dot "
           "off ms | off of read pass |\n");
    printf(
        "|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|"
        "---:|---:|\n");
    const kt_dtype dtypes[] = {KT_DTYPE_BF16, KT_DTYPE_FP32};
    double lowest[2] = {1e9, 1e9}, lowest_first[2] = {1e9, 1e9}, lowest_bound[2] = {1e9, 1e9};
    for (size_t mi = 0; mi < cat.n; mi++) {
        const kt_model *md = &cat.models[mi];
        if (only_model && strcmp(md->name, only_model) != 0)
            continue;
        for (int di = 0; di < 2; di++) {
            for (int ci = 0; ci < n_ctx; ci++) {
                kt_point pt = bench_decode_point(md, contexts[ci]);
                kt_instance *inst = NULL;
                if (kt_instance_create(&inst, b, op, &pt, dtypes[di], KT_DIST_LLM, in, 7) < 0) {
                    printf("| %s | %s |\n", md->name, kt_error_last());
                    continue;
                }
                arm arms[4];
                memset(arms, 0, sizeof(arms));
                const int modes[3] = {0, 2, 1}; /* bf16_dot auto, scores, off */
                int n_dense = dtypes[di] == KT_DTYPE_BF16 ? 3 : 1;
                for (int a = 0; a < n_dense; a++) {
                    arms[a].v = dense;
                    kt_param_defaults(arms[a].params, dense->params, dense->n_params);
                    arms[a].params[bf16_dot].num = modes[a];
                }
                arm *rd = &arms[n_dense]; /* the read pass, v NULL */
                if (measure_arms(arms, n_dense + 1, b, inst, threads, reps) < 0) {
                    printf("| %s | %s |\n", md->name, kt_error_last());
                    kt_instance_free(inst, b);
                    continue;
                }
                double kv = kv_bytes(inst), gbs = kv / (arms[0].ms * 1e-3) / 1e9;
                double frac = median_ratio(rd, &arms[0], reps);
                char off[128] = "| - | - | - | - |";
                if (n_dense == 3)
                    snprintf(off, sizeof(off), "| %.3f | %.0f%% | %.3f | %.0f%% |", arms[1].ms,
                             100 * median_ratio(rd, &arms[1], reps), arms[2].ms,
                             100 * median_ratio(rd, &arms[2], reps));
                double tokens = (double)(contexts[ci] * md->kv_heads);
                double cmp_ms = 1e3 * roof_compute_s(tokens, md->heads / md->kv_heads, md->head_dim,
                                                     di == 0, peak[di]);
                double bound_ms = rd->ms > cmp_ms ? rd->ms : cmp_ms;
                printf("| %s | %lld | %lld / %lld | %s | %lld | %.3f | %.1f | %.1f | %.0f%% | "
                       "%.0f%% | %.0f%% | %.3f | %.3f | %.0f%% | %s | %.2g %s\n",
                       md->name, (long long)md->head_dim, (long long)md->heads,
                       (long long)md->kv_heads, kt_dtype_name(dtypes[di]), (long long)contexts[ci],
                       arms[0].ms, gbs, kv / (rd->ms * 1e-3) / 1e9, 100 * frac,
                       100 * gbs / read_gbs, 100 * gbs / copy_gbs, cmp_ms, bound_ms,
                       100 * bound_ms / arms[0].ms, cmp_ms <= rd->ms / 0.85 ? "yes" : "no",
                       arms[0].num.rel_l2, off);
                fflush(stdout);
                if (contexts[ci] >= 16384) {
                    lowest[di] = frac < lowest[di] ? frac : lowest[di];
                    lowest_first[di] =
                        gbs / read_gbs < lowest_first[di] ? gbs / read_gbs : lowest_first[di];
                    if (bound_ms / arms[0].ms < lowest_bound[di])
                        lowest_bound[di] = bound_ms / arms[0].ms;
                }
                kt_instance_free(inst, b);
            }
        }
    }
    for (int di = 0; di < 2; di++)
        if (lowest[di] < 1e9)
            printf("\ndense %s at contexts >= 16K: lowest %.0f%% of the read pass in the same "
                   "rounds; target 85%%: %s; lowest %.0f%% of the read bandwidth measured first "
                   "(%.0f%% of copy); lowest %.0f%% of the roofline bound\n",
                   kt_dtype_name(dtypes[di]), 100 * lowest[di],
                   lowest[di] >= 0.85 ? "met" : "not met", 100 * lowest_first[di],
                   100 * lowest_first[di] * read_gbs / copy_gbs, 100 * lowest_bound[di]);
    kt_catalog_free(&cat);
    kt_backend_close(b);
    return 0;
}

int main(int argc, char **argv)
{
    int threads = 2, quick = 0, contended = 0, models_only = 0, dense_only = 0, omp_spin = 0;
    int64_t models_context = 32768;
    const char *only_model = NULL;
    const kt_op *op = kt_op_find("attention_decode");
    kt_param_value in[KT_MAX_PARAMS];
    kt_param_defaults(in, op->input_params, op->n_input_params);
    for (int i = 1; i < argc; i++) {
        char name[64];
        double value;
        if (strcmp(argv[i], "--quick") == 0) {
            quick = 1;
        } else if (strcmp(argv[i], "--contention") == 0) {
            contended = 1;
        } else if (strcmp(argv[i], "--dense") == 0) {
            dense_only = 1;
        } else if (strcmp(argv[i], "--omp-spin") == 0) {
            omp_spin = 1;
        } else if (strncmp(argv[i], "--model=", 8) == 0) {
            only_model = argv[i] + 8;
        } else if (strcmp(argv[i], "--fp8-keys") == 0) {
            fp8_keys = 1;
        } else if (strncmp(argv[i], "--models", 8) == 0) {
            models_only = 1;
            if (argv[i][8] == '=')
                models_context = atoll(argv[i] + 9);
        } else if (sscanf(argv[i], "%63[a-z_]=%lf", name, &value) == 2) {
            int at = kt_param_index(op->input_params, op->n_input_params, name);
            if (at < 0) {
                fprintf(stderr, "bench_attention: unknown input param '%s'\n", name);
                return 64;
            }
            in[at].num = value;
        } else if (atoi(argv[i]) > 0 && strspn(argv[i], "0123456789") == strlen(argv[i])) {
            threads = atoi(argv[i]);
        } else {
            fprintf(stderr, "usage: bench_attention [THREADS] [--quick] [--contention] [--dense] "
                            "[--model=NAME] [--models[=CONTEXT]] [--fp8-keys] [--omp-spin] "
                            "[NAME=VALUE...]\n");
            return 64;
        }
    }
    bench_keep_idle_threads_short("bench_attention", argv, 1, omp_spin);
    if (contended)
        return contention(threads, quick ? 1 : 3);
    double copy_gbs = copy_bandwidth_gbs(threads), read_gbs = read_bandwidth_gbs(threads);
    if (dense_only) {
        const int64_t contexts[] = {16384, 32768};
        printf("threads: %d; copy bandwidth (bytes read + written): %.1f GB/s; read bandwidth: "
               "%.1f GB/s\n",
               threads, copy_gbs, read_gbs);
        return dense_table(threads, contexts, quick ? 1 : 2, quick ? 3 : 11, in, copy_gbs, read_gbs,
                           only_model);
    }
    if (models_only) {
        printf("threads: %d; copy bandwidth (bytes read + written): %.1f GB/s; read bandwidth: "
               "%.1f GB/s\n",
               threads, copy_gbs, read_gbs);
        return models_table(threads, models_context, in, copy_gbs, read_gbs);
    }
    printf("threads: %d; copy bandwidth (bytes read + written): %.1f GB/s; read bandwidth: %.1f "
           "GB/s\n\n",
           threads, copy_gbs, read_gbs);
    kt_backend *b = NULL;
    if (kt_backend_open(&b, "cpu", threads, 1) < 0) {
        fprintf(stderr, "bench_attention: %s\n", kt_error_last());
        return 1;
    }
    const int64_t contexts_full[] = {4096, 8192, 16384, 32768, 131072};
    const int64_t contexts_quick[] = {4096, 8192};
    const int64_t *contexts = quick ? contexts_quick : contexts_full;
    int n_ctx = quick ? 2 : 5;
    const kt_dtype dtypes[] = {KT_DTYPE_BF16, KT_DTYPE_FP32};
    const double deltas[] = {5, 7, 1000}; /* 1000 keeps every block: the fp8 residual alone */

    printf("| dtype | context | dense ms | K+V GB/s | of copy bw | of read bw | dense rel_l2 | "
           "avx2 ms | avx2 GB/s | avx2 of copy bw | avx2 rel_l2 |\n");
    printf("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    char ffd_rows[64][256];
    int n_ffd = 0;
    for (int di = 0; di < 2; di++) {
        for (int ci = 0; ci < n_ctx; ci++) {
            int64_t t = contexts[ci];
            int is_ffd_point =
                dtypes[di] == KT_DTYPE_BF16 && (t == 8192 || t == 32768 || t == 131072);
            if (dtypes[di] == KT_DTYPE_FP32 && t == 8192)
                continue;
            kt_point pt = llama8b_point(t);
            kt_instance *inst = NULL;
            if (kt_instance_create(&inst, b, op, &pt, dtypes[di], KT_DIST_LLM, in, 7) < 0) {
                fprintf(stderr, "bench_attention: %s\n", kt_error_last());
                return 1;
            }
            /* arms: 0 dense, 1 dense avx2, then ffd at each delta, then ffd delta 5 avx2 */
            arm arms[MAX_ARMS];
            memset(arms, 0, sizeof(arms));
            int n_arms = is_ffd_point ? 6 : 2;
            for (int a = 0; a < n_arms; a++) {
                int ffd = a >= 2;
                arms[a].v = kt_variant_find("attention_decode", "cpu", ffd ? "ffd" : "dense");
                kt_param_defaults(arms[a].params, arms[a].v->params, arms[a].v->n_params);
                if (ffd)
                    arms[a].params[0].num = a == 5 ? 5 : deltas[a - 2];
                if (a == 1 || a == 5) /* isa is every attention variant's last param */
                    arms[a].params[arms[a].v->n_params - 1].num = 1; /* avx2 */
            }
            int reps = t >= 131072 ? 7 : 15, err;
            if ((err = prepare_arms(arms, n_arms, b, inst, threads)) == KT_OK)
                err = time_arms(arms, n_arms, b, reps);
            for (int a = 0; a < n_arms; a++)
                if (arms[a].v)
                    arms[a].v->release(arms[a].st, b);
            if (err < 0) {
                fprintf(stderr, "bench_attention: %s\n", kt_error_last());
                return 1;
            }
            const arm *dense = &arms[0];
            double kv_bytes = (double)(kt_tensor_bytes(&inst->problem.tensors[1]) +
                                       kt_tensor_bytes(&inst->problem.tensors[2]));
            double gbs = kv_bytes / (dense->ms * 1e-3) / 1e9;
            double gbs2 = kv_bytes / (arms[1].ms * 1e-3) / 1e9;
            printf("| %s | %lld | %.3f | %.1f | %.0f%% | %.0f%% | %.2g | %.3f | %.1f | %.0f%% | "
                   "%.2g |\n",
                   kt_dtype_name(dtypes[di]), (long long)t, dense->ms, gbs, 100.0 * gbs / copy_gbs,
                   100.0 * gbs / read_gbs, dense->num.rel_l2, arms[1].ms, gbs2,
                   100.0 * gbs2 / copy_gbs, arms[1].num.rel_l2);
            fflush(stdout);
            for (int a = 2; a < n_arms; a++) {
                const arm *f = &arms[a], *d = a == 5 ? &arms[1] : dense;
                snprintf(ffd_rows[n_ffd++], sizeof(ffd_rows[0]),
                         "| %s | %s | %lld | %.0f | %.3f | %.3f | %.3f | %.2fx | %.2fx | %.2g | "
                         "%.2g | %.0f |",
                         a == 5 ? "avx2" : "auto", kt_dtype_name(dtypes[di]), (long long)t,
                         f->params[0].num, f->kept, d->ms, f->ms, d->ms / f->ms,
                         ffd_byte_bound(f->kept, 128, 2, KT_FFD_DEFAULT_BLOCK), f->num.rel_l2,
                         d->num.rel_l2, f->prepare_ms);
            }
            kt_instance_free(inst, b);
        }
    }
    printf("\n| isa | dtype | context | delta | kept | dense ms | ffd ms | speedup | "
           "byte-model bound | ffd rel_l2 | dense rel_l2 | quantise ms |\n");
    printf("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for (int i = 0; i < n_ffd; i++)
        printf("%s\n", ffd_rows[i]);
    kt_backend_close(b);
    return models_table(threads, 32768, in, copy_gbs, read_gbs);
}
