/* bench_dense_step.c - the dense decode step's own ceiling: its range kernels (bf16:
 * kt_attn_dense_range_bf16_pv, fp32: kt_attn_dense_range, both AVX-512) on 2 pinned threads,
 * over tasks of 2048 tokens of one KV head, streamed once from a ring far larger than the caches
 * (DRAM) and once from a ring that fits in L3 but not in the two L2s, each next to a read pass of
 * the same bytes in the same rounds (rotating order). From L3 the step is bound by its own
 * instructions, so where the DRAM read pass runs faster than 1 / 0.85 of the step's L3 rate, no
 * overlap of the step's arithmetic with its memory stream reaches 85% of that read pass.
 *
 * usage: bench_dense_step [--rounds=N] [--ring-mib=M]
 *   every distinct (group, head_dim) of the model catalog, in bf16 and fp32; rounds default 11
 *   (medians, and the median over rounds of read pass time / step time); the DRAM ring has
 *   768 MiB, the L3 one M MiB (default 8). About 1 minute on this VM. Prints markdown on stdout.
 */
#include "spec/catalog.h"

/* the kernels' headers and the read loop use AVX-512 (main checks the CPU before any runs) */
#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c,avx512f,avx512bw,avx512dq,avx512vl,avx512bf16")
#include "cpu/attention_common.h"
#include "cpu/attention_dense_bf16.h"

#include <immintrin.h>
#pragma GCC pop_options

#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "bench_common.h"

#define TOKENS     2048 /* a task: the default split of a 16K context */
#define PER_THREAD 16   /* tasks a thread streams per round and variant */
#define THREADS    2
#define MAX_ROUNDS 64
#define DRAM_MIB   768

enum { READ_DRAM, STEP_DRAM, READ_L3, STEP_L3, N_VARIANTS };

/* What the threads share: the shape, the rings, the round's variant, and their times. */
typedef struct bench {
    int64_t g, d;
    int bf16;
    size_t task_bytes;
    char *ring[2]; /* DRAM, L3 */
    size_t tasks[2], cursor[2];
    int variant, stop;
    pthread_barrier_t start, done;
    double seconds[THREADS];
    float query[64 * 1024];
    uint16_t query_bf16[64 * 1024];
} bench;

typedef struct worker {
    bench *b;
    int id;
} worker;

static volatile uint32_t sink;

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c,avx512f,avx512bw,avx512dq,avx512vl,avx512bf16")

/* One pass over 'bytes' at 'p', as the read ceiling: 256-bit loads, nothing else. */
static uint32_t read_bytes(const char *p, size_t bytes)
{
    __m256i acc = _mm256_setzero_si256();
    for (size_t i = 0; i + 128 <= bytes; i += 128) {
        acc = _mm256_xor_si256(acc, _mm256_load_si256((const __m256i *)(p + i)));
        acc = _mm256_xor_si256(acc, _mm256_load_si256((const __m256i *)(p + i + 32)));
        acc = _mm256_xor_si256(acc, _mm256_load_si256((const __m256i *)(p + i + 64)));
        acc = _mm256_xor_si256(acc, _mm256_load_si256((const __m256i *)(p + i + 96)));
    }
    return (uint32_t)_mm256_extract_epi32(acc, 0);
}

/* One task of the step: the query of g heads against TOKENS rows of K and V at 'k'. */
static void step_task(const bench *b, kt_attn_task *t, const char *k)
{
    const char *v = k + b->task_bytes / 2;
    if (b->bf16) {
        kt_attn_task_begin(t, b->query_bf16, KT_DTYPE_BF16);
        kt_attn_dense_range_bf16_pv(t, (const uint16_t *)k, (const uint16_t *)v, 0, TOKENS);
    } else {
        kt_attn_task_begin(t, b->query, KT_DTYPE_FP32);
        kt_attn_dense_range(t, k, v, KT_DTYPE_FP32, 0, TOKENS);
    }
}

#pragma GCC pop_options

static void *work(void *arg)
{
    worker *w = arg;
    bench *b = w->b;
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(w->id, &one);
    pthread_setaffinity_np(pthread_self(), sizeof(one), &one);
    size_t scratch = kt_attn_scratch_bytes(b->g, b->d), extra = 0;
    if (b->bf16)
        extra = kt_attn_bf16_dot_extra_bytes(b->g, b->d);
    size_t at = (scratch + 63) / 64 * 64;
    char *mem = aligned_alloc(64, (at + extra + 64 + 63) / 64 * 64);
    kt_attn_task t;
    memset(&t, 0, sizeof(t));
    if (mem) {
        kt_attn_task_bind(&t, mem, b->g, b->d);
        t.avx512 = 1;
        t.extra = mem + at;
    }
    for (;;) {
        pthread_barrier_wait(&b->start);
        if (b->stop || !mem)
            break;
        int r = b->variant >= READ_L3, read = b->variant == READ_DRAM || b->variant == READ_L3;
        double t0 = now_s();
        uint32_t acc = 0;
        for (int i = 0; i < PER_THREAD; i++) {
            size_t task = (b->cursor[r] + (size_t)(w->id * PER_THREAD + i)) % b->tasks[r];
            const char *k = b->ring[r] + task * b->task_bytes;
            if (read)
                acc ^= read_bytes(k, b->task_bytes);
            else
                step_task(b, &t, k);
        }
        sink = acc;
        b->seconds[w->id] = now_s() - t0;
        pthread_barrier_wait(&b->done);
    }
    free(mem);
    return NULL;
}

/* Values of the ring: bf16 or fp32 in [-1, 1], from a fixed LCG, so every run reads the same. */
static void fill(char *p, size_t bytes, int bf16)
{
    uint32_t x = 1;
    if (bf16) {
        uint16_t *r = (uint16_t *)p;
        for (size_t i = 0; i < bytes / 2; i++) {
            x = x * 1103515245u + 12345u;
            float f = (float)((int)((x >> 16) & 0x7fff) - 16384) / 16384.0f;
            uint32_t u;
            memcpy(&u, &f, sizeof(u));
            r[i] = (uint16_t)(u >> 16);
        }
    } else {
        float *r = (float *)p;
        for (size_t i = 0; i < bytes / 4; i++) {
            x = x * 1103515245u + 12345u;
            r[i] = (float)((int)((x >> 16) & 0x7fff) - 16384) / 16384.0f;
        }
    }
}

/* Every variant once per round, starting from a rotating one; GB/s per variant and round. */
static void measure(bench *b, int rounds, double gbs[N_VARIANTS][MAX_ROUNDS])
{
    double bytes = (double)b->task_bytes * PER_THREAD * THREADS;
    for (int r = 0; r < rounds; r++)
        for (int i = 0; i < N_VARIANTS; i++) {
            b->variant = (r + i) % N_VARIANTS;
            int ring = b->variant >= READ_L3;
            b->cursor[ring] = (b->cursor[ring] + PER_THREAD * THREADS) % b->tasks[ring];
            pthread_barrier_wait(&b->start);
            pthread_barrier_wait(&b->done);
            double s = b->seconds[0] > b->seconds[1] ? b->seconds[0] : b->seconds[1];
            gbs[b->variant][r] = bytes / s / 1e9;
        }
}

/* One shape in one dtype: its row. */
static void shape_row(bench *b, const char *models, int rounds)
{
    double gbs[N_VARIANTS][MAX_ROUNDS], ratio[2][MAX_ROUNDS], med[N_VARIANTS];
    pthread_t th[THREADS];
    worker w[THREADS];
    b->stop = 0;
    pthread_barrier_init(&b->start, NULL, THREADS + 1);
    pthread_barrier_init(&b->done, NULL, THREADS + 1);
    for (int i = 0; i < THREADS; i++) {
        w[i] = (worker){b, i};
        pthread_create(&th[i], NULL, work, &w[i]);
    }
    measure(b, 1, gbs); /* a warm-up round */
    measure(b, rounds, gbs);
    b->stop = 1;
    pthread_barrier_wait(&b->start);
    for (int i = 0; i < THREADS; i++)
        pthread_join(th[i], NULL);
    pthread_barrier_destroy(&b->start);
    pthread_barrier_destroy(&b->done);
    for (int r = 0; r < rounds; r++) {
        ratio[0][r] = gbs[STEP_DRAM][r] / gbs[READ_DRAM][r];
        ratio[1][r] = gbs[STEP_L3][r] / gbs[READ_DRAM][r];
    }
    for (int v = 0; v < N_VARIANTS; v++)
        med[v] = median(gbs[v], rounds);
    double of_read = median(ratio[0], rounds), l3_of_read = median(ratio[1], rounds);
    printf("| %lld | %lld | %s | %s | %.1f | %.1f | %.0f%% | %.1f | %.1f | %.0f%% | %s |\n",
           (long long)b->g, (long long)b->d, b->bf16 ? "bf16" : "fp32", models, med[READ_DRAM],
           med[STEP_DRAM], 100 * of_read, med[READ_L3], med[STEP_L3], 100 * l3_of_read,
           l3_of_read >= 0.85 ? "yes" : "no");
    fflush(stdout);
}

int main(int argc, char **argv)
{
    int rounds = 11, ring_mib = 8;
    for (int i = 1; i < argc; i++) {
        if (strncmp(argv[i], "--rounds=", 9) == 0)
            rounds = atoi(argv[i] + 9);
        else if (strncmp(argv[i], "--ring-mib=", 11) == 0)
            ring_mib = atoi(argv[i] + 11);
        else {
            fprintf(stderr, "usage: bench_dense_step [--rounds=N] [--ring-mib=M]\n");
            return 64;
        }
    }
    if (rounds < 1 || rounds > MAX_ROUNDS || ring_mib < 2 || ring_mib > DRAM_MIB / 8) {
        fprintf(stderr, "bench_dense_step: rounds 1..%d, ring-mib 2..%d\n", MAX_ROUNDS,
                DRAM_MIB / 8);
        return 64;
    }
    if (!__builtin_cpu_supports("avx512f") || !__builtin_cpu_supports("avx512bf16") ||
        sysconf(_SC_NPROCESSORS_ONLN) < THREADS) {
        printf("bench_dense_step: needs AVX-512 with BF16 and %d CPUs; not run here\n", THREADS);
        return 0;
    }
    kt_catalog cat;
    kt_diag diag;
    kt_diag_init(&diag);
    int err = kt_catalog_load(&cat, &diag);
    kt_diag_free(&diag);
    bench *b = calloc(1, sizeof(*b));
    size_t dram = (size_t)DRAM_MIB << 20, l3 = (size_t)ring_mib << 20;
    if (err < 0 || !b || !(b->ring[0] = aligned_alloc(4096, dram)) ||
        !(b->ring[1] = aligned_alloc(4096, l3))) {
        fprintf(stderr, "bench_dense_step: cannot load the catalog or allocate the rings\n");
        return 1;
    }
    for (int i = 0; i < 64 * 1024; i++) {
        b->query[i] = (float)(i * 37 % 256 - 128) / 256.0f;
        uint32_t u;
        memcpy(&u, &b->query[i], sizeof(u));
        b->query_bf16[i] = (uint16_t)(u >> 16);
    }
    printf("threads: %d, pinned; tasks of %d tokens; DRAM ring %d MiB, L3 ring %d MiB; %d "
           "rounds; load average before: %s\n\n",
           THREADS, TOKENS, DRAM_MIB, ring_mib, rounds, bench_load_average());
    printf("| group | d | dtype | catalog models | read pass DRAM GB/s | step DRAM GB/s | step "
           "of read pass | read pass L3 GB/s | step L3 GB/s | step L3 of read pass DRAM | 85%% "
           "reachable |\n");
    printf("|---:|---:|---|---|---:|---:|---:|---:|---:|---:|---|\n");
    for (int bf16 = 1; bf16 >= 0; bf16--) {
        fill(b->ring[0], dram, bf16);
        fill(b->ring[1], l3, bf16);
        int64_t done[16][2];
        int n_done = 0;
        for (size_t m = 0; m < cat.n; m++) {
            int64_t g = cat.models[m].heads / cat.models[m].kv_heads, d = cat.models[m].head_dim;
            int seen = 0;
            for (int i = 0; i < n_done; i++)
                seen |= done[i][0] == g && done[i][1] == d;
            if (seen || n_done == 16 || g > 64 || d > 1024 || d % 32)
                continue;
            done[n_done][0] = g;
            done[n_done++][1] = d;
            char models[256] = "";
            for (size_t o = 0; o < cat.n; o++)
                if (cat.models[o].heads / cat.models[o].kv_heads == g &&
                    cat.models[o].head_dim == d)
                    snprintf(models + strlen(models), sizeof(models) - strlen(models), "%s%s",
                             models[0] ? ", " : "", cat.models[o].name);
            b->g = g;
            b->d = d;
            b->bf16 = bf16;
            b->task_bytes = (size_t)TOKENS * (size_t)d * (bf16 ? 2 : 4) * 2;
            b->tasks[0] = dram / b->task_bytes;
            b->tasks[1] = l3 / b->task_bytes;
            b->cursor[0] = b->cursor[1] = 0;
            if (b->tasks[1] < 1) {
                printf("| %lld | %lld | %s | %s | a task is larger than the L3 ring |\n",
                       (long long)g, (long long)d, bf16 ? "bf16" : "fp32", models);
                continue;
            }
            shape_row(b, models, rounds);
        }
    }
    printf("\n85%% reachable: the step's rate from L3 (its own instructions, little memory "
           "stall) is at least 85%% of the DRAM read pass of the same rounds; where it is not, "
           "the step cannot reach 85%% of that read pass at this memory speed however well it "
           "overlaps its arithmetic with its memory stream\n");
    free(b->ring[0]);
    free(b->ring[1]);
    free(b);
    kt_catalog_free(&cat);
    return 0;
}
