/* bench_ffd_scan.c - FFD's int8 block selection alone (kt_ffd_block_int8) on every catalog
 * model's heads: time and instructions per block and per token, so that the scan's cost can be
 * profiled and compared without the attention around it.
 *
 * usage: bench_ffd_scan [--contexts=T1,T2,...] [--models=NAME,...] [--reps=N] [--delta=D]
 *                       [--block=B] [--cold]
 *   contexts default 32768; reps default 30 (warm calls over every block of the instance; the
 *   fastest is shown, which load from other processes can only slow); delta default FFD's;
 *   block default 128; --cold: each pass starts from flushed caches (kt_backend_flush_cache),
 *   and prefetches the next block as the variant does, so that memory's share of the scan shows.
 * Queries and keys: bf16 llm inputs (seed 7), batch 1. The thresholds are the variant's: the
 * largest approximate score of each head over block 0 and the last full block, minus delta.
 * Instructions and cycles (user space, this thread) come from perf_event_open where the kernel
 * allows it, else "n/a". About 10 s for the 8 models at 32K on an idle machine. Prints markdown on
 * stdout. */
#include "arm/kernel/check.h"
#include "kernel.h"

#include "ffd_quant.h"
#include "cpu/ffd_scan_int8.h"
#include "cpu/ffd_stream.h"
#include "spec/catalog.h"

#include <linux/perf_event.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "bench_common.h"
#include "bench_ffd_model.h"

#define MAX_CONTEXTS 8

typedef struct scan_opts {
    int64_t contexts[MAX_CONTEXTS], block;
    int n_contexts, reps, cold;
    double delta;
    const char *models;
} scan_opts;

/* A user-space hardware counter of this thread ('config': PERF_COUNT_HW_*), or -1. */
static int counter_open(uint64_t config)
{
    struct perf_event_attr a;
    memset(&a, 0, sizeof(a));
    a.size = sizeof(a);
    a.type = PERF_TYPE_HARDWARE;
    a.config = config;
    a.disabled = 1;
    a.exclude_kernel = 1;
    a.exclude_hv = 1;
    return (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, 0);
}

static long long counter_read(int fd)
{
    long long v = -1;
    if (fd < 0 || read(fd, &v, sizeof(v)) != (ssize_t)sizeof(v))
        return -1;
    return v;
}

/* The thresholds of every head: pseudo-max over blocks 0 and n_full - 1 minus 'delta', with
 * the approximate scores of the float scan (in double here: a bench input, not a check). */
static void thresholds(float *thr, const kt_ffd_cache *c, const float *qs, int64_t g, double delta)
{
    int64_t d = c->head_dim;
    for (int64_t kh = 0; kh < c->kv_heads; kh++) {
        int64_t blocks[2] = {kh * c->n_full, kh * c->n_full + c->n_full - 1};
        for (int64_t h = 0; h < g; h++) {
            const float *q = qs + (kh * g + h) * d;
            double best = -INFINITY;
            for (int i = 0; i < 2; i++) {
                const float *scale = c->scales + blocks[i] * d;
                for (int64_t r = 0; r < c->block; r++) {
                    const uint8_t *row = c->codes + (blocks[i] * c->block + r) * (d / 4);
                    double s = 0;
                    for (int64_t ch = 0; ch < d; ch++)
                        s += (double)(q[ch] * scale[ch]) * (kt_ffd_code_at(row, ch) - 1.5);
                    best = fmax(best, s);
                }
            }
            thr[kh * g + h] = (float)(best - delta);
        }
    }
}

typedef struct scan_result {
    double ns, instructions, cycles; /* of the fastest pass over all blocks; counters -1: n/a */
    int64_t kept, unsure;
} scan_result;

/* 'reps' passes of kt_ffd_block_int8 over every block of 'c', each after flushing the caches of
 * 'b' where 'b' is not NULL (and then prefetching the next block as the variant does), with a
 * kt_ffd_int8_begin per run of 'split_blocks' blocks, as the variant's default split of 1024
 * tokens has. */
static void time_scan(scan_result *res, const uint32_t *codes_t, const kt_ffd_cache *c,
                      const float *qs, const float *thr, int64_t g, void *scratch, int reps,
                      kt_backend *b)
{
    int fi = counter_open(PERF_COUNT_HW_INSTRUCTIONS), fc = counter_open(PERF_COUNT_HW_CPU_CYCLES);
    int64_t d = c->head_dim, split_blocks = (1024 + c->block - 1) / c->block;
    res->ns = INFINITY;
    res->instructions = res->cycles = -1;
    for (int r = 0; r < reps; r++) {
        int64_t kept = 0, unsure = 0;
        if (b)
            kt_backend_flush_cache(b);
        long long i0 = counter_read(fi), c0 = counter_read(fc);
        if (fi >= 0)
            ioctl(fi, PERF_EVENT_IOC_ENABLE, 0);
        if (fc >= 0)
            ioctl(fc, PERF_EVENT_IOC_ENABLE, 0);
        double t0 = now_s();
        for (int64_t kh = 0; kh < c->kv_heads; kh++)
            for (int64_t blk = 0; blk < c->n_full; blk++) {
                int64_t first = kh * c->n_full;
                if (blk % split_blocks == 0) /* as each split-KV task of the variant does */
                    kt_ffd_int8_begin(
                        c, first + blk,
                        first + (blk + split_blocks < c->n_full ? blk + split_blocks : c->n_full),
                        qs + kh * g * d, thr + kh * g, g, scratch);
                if (b && blk + 1 < c->n_full) /* as the variant's selection does */
                    kt_ffd_prefetch_block(codes_t, c, first + blk + 1);
                int v = kt_ffd_block_int8(codes_t, c, first + blk, g, scratch);
                kept += v == 1;
                unsure += v < 0;
            }
        double ns = (now_s() - t0) * 1e9;
        if (fi >= 0)
            ioctl(fi, PERF_EVENT_IOC_DISABLE, 0);
        if (fc >= 0)
            ioctl(fc, PERF_EVENT_IOC_DISABLE, 0);
        long long i1 = counter_read(fi), c1 = counter_read(fc);
        if (ns < res->ns) {
            res->ns = ns;
            res->instructions = i0 >= 0 && i1 >= 0 ? (double)(i1 - i0) : -1;
            res->cycles = c0 >= 0 && c1 >= 0 ? (double)(c1 - c0) : -1;
        }
        res->kept = kept;
        res->unsure = unsure;
    }
    if (fi >= 0)
        close(fi);
    if (fc >= 0)
        close(fc);
}

/* One model at one context: prints its row; 0 or a negative code. */
static int scan_point(const scan_opts *o, kt_backend *b, const kt_model *md, int64_t context,
                      const kt_param_value *in)
{
    kt_point pt = bench_decode_point(md, context);
    kt_instance *inst = NULL;
    kt_ffd_cache c;
    uint32_t *codes_t = NULL;
    float *qs = NULL, *thr = NULL;
    void *scratch = NULL;
    int64_t g = md->heads / md->kv_heads, d = md->head_dim;
    memset(&c, 0, sizeof(c));
    int err = kt_ffd_cache_shape(&c, 1, md->kv_heads, context, d, o->block);
    if (err < 0 || (err = kt_instance_create(&inst, b, kt_op_find("attention_decode"), &pt,
                                             KT_DTYPE_BF16, KT_DIST_LLM, in, 7)) < 0)
        goto done;
    c.codes = malloc(kt_ffd_codes_bytes(&c));
    c.scales = malloc(kt_ffd_scales_bytes(&c));
    c.residual = malloc(kt_ffd_residual_bytes(&c));
    codes_t = aligned_alloc(64, (kt_ffd_codes_bytes(&c) + 63) / 64 * 64);
    qs = malloc(sizeof(float) * (size_t)(md->heads * d));
    thr = malloc(sizeof(float) * (size_t)md->heads);
    scratch = aligned_alloc(64, (kt_ffd_int8_scratch_bytes(g, d) + 63) / 64 * 64);
    if (!c.codes || !c.scales || !c.residual || !codes_t || !qs || !thr || !scratch) {
        err = kt_error_code(KT_ENOMEM, "out of memory");
        goto done;
    }
    kt_ffd_quantize_cache(&c, inst->host_inputs[1], KT_DTYPE_BF16);
    kt_ffd_codes_transpose(codes_t, &c);
    float scale_log2 = (float)(1.0 / sqrt((double)d) / log(2.0)); /* as the variant */
    for (int64_t i = 0; i < md->heads * d; i++)
        qs[i] = kt_dtype_load(inst->host_inputs[0], KT_DTYPE_BF16, (size_t)i) * scale_log2;
    thresholds(thr, &c, qs, g, o->delta);
    scan_result r;
    time_scan(&r, codes_t, &c, qs, thr, g, scratch, o->reps, o->cold ? b : NULL);
    double blocks = (double)(c.kv_heads * c.n_full), tokens = blocks * (double)c.block;
    char ins[32] = "n/a", ipc[32] = "n/a";
    if (r.instructions >= 0)
        snprintf(ins, sizeof(ins), "%.1f", r.instructions / tokens);
    if (r.instructions >= 0 && r.cycles > 0)
        snprintf(ipc, sizeof(ipc), "%.2f", r.instructions / r.cycles);
    printf("| %s | %lld | %lld / %lld | %lld | %lld | %.3f | %.0f | %.2f | %s | %s | %.3f | %.3f "
           "|\n",
           md->name, (long long)d, (long long)md->heads, (long long)md->kv_heads,
           (long long)context, (long long)c.block, r.ns / 1e6, r.ns / blocks, r.ns / tokens, ins,
           ipc, (double)r.kept / blocks, (double)r.unsure / blocks);
    fflush(stdout);
done:
    free(c.codes);
    free(c.scales);
    free(c.residual);
    free(codes_t);
    free(qs);
    free(thr);
    free(scratch);
    kt_instance_free(inst, b);
    return err;
}

static int parse_args(scan_opts *o, int argc, char **argv)
{
    *o = (scan_opts){.contexts = {32768},
                     .n_contexts = 1,
                     .block = 128,
                     .reps = 30,
                     .delta = KT_FFD_DEFAULT_DELTA};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strncmp(a, "--contexts=", 11) == 0) {
            o->n_contexts = 0;
            for (const char *s = a + 11; *s && o->n_contexts < MAX_CONTEXTS;) {
                char *end;
                long long v = strtoll(s, &end, 10);
                if (end == s || v <= 0)
                    return -1;
                o->contexts[o->n_contexts++] = v;
                s = *end == ',' ? end + 1 : end;
            }
        } else if (strncmp(a, "--models=", 9) == 0) {
            o->models = a + 9;
        } else if (strncmp(a, "--reps=", 7) == 0) {
            o->reps = atoi(a + 7);
        } else if (strncmp(a, "--delta=", 8) == 0) {
            o->delta = atof(a + 8);
        } else if (strcmp(a, "--cold") == 0) {
            o->cold = 1;
        } else if (strncmp(a, "--block=", 8) == 0) {
            o->block = atoi(a + 8);
        } else {
            return -1;
        }
    }
    return o->n_contexts > 0 && o->reps > 0 && o->delta >= 0 && o->block >= 16 && o->block % 16 == 0
               ? 0
               : -1;
}

int main(int argc, char **argv)
{
    scan_opts o;
    if (parse_args(&o, argc, argv) < 0) {
        fprintf(stderr, "usage: bench_ffd_scan [--contexts=T,...] [--models=NAME,...] [--reps=N] "
                        "[--delta=D] [--block=B (multiple of 16)] [--cold]\n");
        return 64;
    }
    if (!kt_ffd_int8_supported()) {
        printf("bench_ffd_scan: this CPU has no AVX-512 VNNI: the int8 scan does not run here\n");
        return 0;
    }
    kt_param_value in[KT_MAX_PARAMS];
    kt_catalog cat;
    kt_backend *b = NULL;
    if (ffd_bench_open(&cat, &b, in, 1, "bench_ffd_scan") < 0)
        return 1;
    printf("int8 selection alone, %s, fastest of %d passes over all blocks; delta %g; user-space "
           "counters of this thread\n\n",
           o.cold ? "cold (caches flushed before each pass)" : "warm", o.reps, o.delta);
    printf("| model | d | heads / kv | context | block | ms | ns / block | ns / token | "
           "instructions / token | IPC | kept | undecided |\n");
    printf("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    int rc = 0;
    for (int ci = 0; ci < o.n_contexts; ci++)
        for (size_t mi = 0; mi < cat.n; mi++)
            if (ffd_bench_model_selected(o.models, cat.models[mi].name) &&
                scan_point(&o, b, &cat.models[mi], o.contexts[ci], in) < 0) {
                fprintf(stderr, "bench_ffd_scan: %s: %s\n", cat.models[mi].name, kt_error_last());
                rc = 1;
            }
    kt_catalog_free(&cat);
    kt_backend_close(b);
    return rc;
}
