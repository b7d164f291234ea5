/* bench_gemm.c - this machine's copy bandwidth, the baseline libraries (OpenBLAS's core and its
 * sgemm rate, oneDNN's version and ISA), then every CPU gemm and swiglu_mlp variant per
 * storage type against OpenBLAS ('vs blas') and oneDNN ('vs onednn'), as one markdown report.
 *
 * usage: bench_gemm [threads] [--catalog [--no-bf16] | --fp32] [--quick | --model=NAME]
 *                   [--openblas-spin] [--omp-spin]
 *   (threads default 2)
 *   --catalog: instead of the fixed shapes, every distinct gemm shape of the catalog's models
 *   at M = 64 and 256 (see catalog_table); --quick: llama-3.2-1b's shapes only; --model=NAME:
 *   that catalog model's shapes only; --no-bf16: the catalog table's fp32 rows only
 *   --fp32: the same shapes in fp32 only, OpenBLAS against tiled before and after x was
 *   packed once per call (see fp32_table)
 *   --openblas-spin, --omp-spin: keep OpenBLAS's (oneDNN's OpenMP) idle threads spinning as
 *   long as the library's default (see bench_keep_idle_threads_short)
 *
 * Each figure is the median of repeated calls (at least 5 rounds and 0.5 s; the variants of
 * one shape take turns, one call each per round) with the backend's cache flush before
 * every call, as `ktrial run` does with flush_cache: true. GFLOP/s counts 2MNK;
 * GB/s counts the op's compulsory bytes (inputs read once, outputs written once). */
#include "bench_common.h"
#include "cpu/baselines.h"
#include "arm/kernel/check.h"
#include "kernel.h"
#include "spec/catalog.h"

#include <cblas.h>
#include <omp.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { MAX_REPS = 200 };

static double sgemm_gflops(int m, int n, int k, int threads)
{
    float *x = malloc((size_t)m * k * sizeof(float)), *w = malloc((size_t)n * k * sizeof(float));
    float *y = malloc((size_t)m * n * sizeof(float));
    for (size_t i = 0; i < (size_t)m * k; i++)
        x[i] = (float)(i % 7) - 3.0f;
    for (size_t i = 0; i < (size_t)n * k; i++)
        w[i] = (float)(i % 5) * 0.1f;
    openblas_set_num_threads(threads);
    double t[MAX_REPS];
    int reps = 0;
    double start = now_s();
    while (reps < MAX_REPS && (reps < 5 || now_s() - start < 0.3)) {
        double t0 = now_s();
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, n, k, 1.0f, x, k, w, k, 0.0f, y, n);
        t[reps++] = now_s() - t0;
    }
    free(x);
    free(w);
    free(y);
    return 2.0 * m * n * k / median(t, reps) * 1e-9;
}

typedef struct bench_case {
    const char *op, *variant, *label;
    kt_param_value params[KT_MAX_PARAMS]; /* used when has_params */
    int has_params;
} bench_case;

/* Prepares every case on 'inst', then times them in rounds (one call of each case per
 * round, so load from elsewhere hits all alike) until 5 rounds and 0.5 s; writes each case's
 * median seconds into 'sec' (-1 when it failed). */
static void time_cases(double *sec, const bench_case *cases, int n, kt_instance *inst,
                       kt_backend *b, int threads)
{
    enum { MAX_CASES = 5 };
    const kt_variant *v[MAX_CASES] = {0};
    kt_param_value params[MAX_CASES][KT_MAX_PARAMS];
    kt_call call[MAX_CASES];
    void *st[MAX_CASES] = {0};
    int ok[MAX_CASES] = {0};
    static double t[MAX_CASES][MAX_REPS];
    for (int c = 0; c < n && c < MAX_CASES; c++) {
        sec[c] = -1;
        v[c] = kt_variant_find(cases[c].op, "cpu", cases[c].variant);
        if (!v[c])
            continue;
        kt_param_defaults(params[c], v[c]->params, v[c]->n_params);
        if (cases[c].has_params)
            memcpy(params[c], cases[c].params, sizeof(params[c]));
        call[c] = kt_instance_call(inst, b, params[c], threads);
        ok[c] = v[c]->prepare(&st[c], &call[c]) == KT_OK && v[c]->run(st[c], &call[c]) == KT_OK;
    }
    int reps = 0;
    double start = now_s();
    while (reps < MAX_REPS && (reps < 5 || now_s() - start < 0.5)) {
        for (int c = 0; c < n && c < MAX_CASES; c++) {
            if (!ok[c])
                continue;
            kt_timing tm;
            kt_backend_flush_cache(b);
            kt_backend_timer_start(b);
            ok[c] = v[c]->run(st[c], &call[c]) == KT_OK;
            kt_backend_timer_stop(b, &tm);
            t[c][reps] = tm.time_ns * 1e-9;
        }
        reps++;
    }
    for (int c = 0; c < n && c < MAX_CASES; c++) {
        if (ok[c])
            sec[c] = median(t[c], reps);
        if (v[c])
            v[c]->release(st[c], b);
    }
}

static void bench_point(const kt_point *pt, const char *op, const bench_case *cases, int n_cases,
                        kt_dtype dtype, int threads)
{
    kt_backend *b = NULL;
    kt_instance *inst = NULL;
    if (kt_backend_open(&b, "cpu", threads, 1) < 0 ||
        kt_instance_create(&inst, b, kt_op_find(op), pt, dtype, KT_DIST_NORMAL, NULL, 1) < 0) {
        fprintf(stderr, "bench_gemm: %s: %s\n", pt->id, kt_error_last());
        kt_backend_close(b);
        return;
    }
    const kt_problem *p = &inst->problem;
    double sec[5], blas = -1, onednn = -1;
    time_cases(sec, cases, n_cases, inst, b, threads);
    for (int i = 0; i < n_cases; i++) {
        if (strstr(cases[i].label, "blas"))
            blas = sec[i];
        if (strstr(cases[i].label, "onednn"))
            onednn = sec[i];
    }
    for (int i = 0; i < n_cases; i++) {
        double s = sec[i];
        char vs_blas[16] = "", vs_onednn[16] = "";
        if (s < 0) {
            printf("| %s | %s | %s | %s | failed (%s) | | | | |\n", op, cases[i].label,
                   kt_dtype_name(dtype), pt->id,
                   kt_variant_find(op, "cpu", cases[i].variant) ? "unsupported" : "not built");
            continue;
        }
        if (blas > 0)
            snprintf(vs_blas, sizeof(vs_blas), "%.2fx", blas / s);
        if (onednn > 0)
            snprintf(vs_onednn, sizeof(vs_onednn), "%.2fx", onednn / s);
        printf("| %s | %s | %s | %s M=%lld | %.3f | %.1f | %.1f | %s | %s |\n", op, cases[i].label,
               kt_dtype_name(dtype), pt->id, (long long)p->m, s * 1e3, p->flops / s * 1e-9,
               p->bytes / s * 1e-9, vs_blas, vs_onednn);
    }
    fflush(stdout);
    kt_instance_free(inst, b);
    kt_backend_close(b);
}

static kt_point point_of(const kt_model *md, int64_t m, kt_role role)
{
    kt_point p;
    memset(&p, 0, sizeof(p));
    p.model = *md;
    p.batch_size = m;
    p.phase = KT_PHASE_DECODE;
    p.role = role;
    snprintf(p.id, sizeof(p.id), "%s/%s", md->name, role ? kt_role_name(role) : "mlp");
    return p;
}

/* Work on one catalog shape: 'pt' is its point, 'p' its fp32 problem. */
typedef void (*shape_fn)(void *ctx, const kt_model *md, kt_role role, const kt_point *pt,
                         const kt_problem *p);

/* Calls 'fn' on every distinct gemm shape of the catalog's models (roles qkv, o, gate_up,
 * down) at M = 64 and 256 ('only': that model's only, NULL: all), in catalog order. */
static void for_each_catalog_shape(const char *only, shape_fn fn, void *ctx)
{
    kt_catalog cat;
    kt_diag diag;
    kt_diag_init(&diag);
    if (kt_catalog_load(&cat, &diag) < 0) {
        fprintf(stderr, "bench_gemm: cannot load the catalog\n");
        kt_diag_free(&diag);
        return;
    }
    kt_diag_free(&diag);
    static const kt_role roles[] = {KT_ROLE_QKV, KT_ROLE_O, KT_ROLE_GATE_UP, KT_ROLE_DOWN};
    static const int ms[] = {64, 256};
    int64_t seen[64][3];
    int n_seen = 0, matched = 0;
    for (size_t mi = 0; mi < cat.n; mi++) {
        const kt_model *md = &cat.models[mi];
        if (only && strcmp(md->name, only) != 0)
            continue;
        matched++;
        for (int r = 0; r < 4; r++) {
            for (int mj = 0; mj < 2; mj++) {
                kt_point pt = point_of(md, ms[mj], roles[r]);
                kt_problem p;
                if (kt_op_find("gemm")->shape(&p, &pt, KT_DTYPE_FP32, NULL) < 0)
                    continue;
                int dup = 0;
                for (int i = 0; i < n_seen; i++)
                    dup |= seen[i][0] == p.m && seen[i][1] == p.n && seen[i][2] == p.k;
                if (dup || n_seen == 64)
                    continue;
                seen[n_seen][0] = p.m, seen[n_seen][1] = p.n, seen[n_seen++][2] = p.k;
                fn(ctx, md, roles[r], &pt, &p);
            }
        }
    }
    if (!matched)
        fprintf(stderr, "bench_gemm: no catalog model '%s'\n", only);
    kt_catalog_free(&cat);
}

/* Times 'n' cases on a fresh backend and instance of gemm at 'pt' in 'dtype' (see
 * time_cases); returns the problem's GFLOP, or -1 when the instance cannot be made. */
static double time_shape(double *sec, const bench_case *cases, int n, const kt_point *pt,
                         kt_dtype dtype, int threads)
{
    kt_backend *b = NULL;
    kt_instance *inst = NULL;
    if (kt_backend_open(&b, "cpu", threads, 1) < 0 ||
        kt_instance_create(&inst, b, kt_op_find("gemm"), pt, dtype, KT_DIST_NORMAL, NULL, 1) < 0) {
        fprintf(stderr, "bench_gemm: %s: %s\n", pt->id, kt_error_last());
        kt_backend_close(b);
        return -1;
    }
    time_cases(sec, cases, n, inst, b, threads);
    double gflop = inst->problem.flops * 1e-9;
    kt_instance_free(inst, b);
    kt_backend_close(b);
    return gflop;
}

typedef struct catalog_ctx {
    int threads;
    int no_bf16;                  /* --no-bf16: the catalog table's fp32 rows only */
    double lowest, lowest_before; /* tiled's lowest fraction of OpenBLAS (after, before) */
} catalog_ctx;

/* "%.1f" of gflop / sec into 'buf', or "-" when 'sec' failed. */
static const char *rate(char *buf, size_t size, double gflop, double sec)
{
    if (sec > 0)
        snprintf(buf, size, "%.1f", gflop / sec);
    else
        snprintf(buf, size, "-");
    return buf;
}

/* "%.2fx" of base / sec into 'buf', or "-" when either failed. */
static const char *ratio(char *buf, size_t size, double base, double sec)
{
    if (base > 0 && sec > 0)
        snprintf(buf, size, "%.2fx", base / sec);
    else
        snprintf(buf, size, "-");
    return buf;
}

/* One shape of catalog_table: fp32 with blas, tiled and onednn, bf16 with onednn and tiled. */
static void catalog_row(void *arg, const kt_model *md, kt_role role, const kt_point *pt,
                        const kt_problem *p)
{
    catalog_ctx *c = arg;
    const bench_case fp32_cases[] = {
        {"gemm", "blas", "blas", {{0}}, 0},
        {"gemm", "tiled", "tiled", {{0}}, 0},
        {"gemm", "onednn", "onednn", {{0}}, 0},
    };
    const bench_case bf16_cases[] = {
        {"gemm", "onednn", "onednn", {{0}}, 0},
        {"gemm", "tiled", "tiled", {{0}}, 0},
    };
    for (int bf16 = 0; bf16 < 2 - c->no_bf16; bf16++) {
        kt_dtype dt = bf16 ? KT_DTYPE_BF16 : KT_DTYPE_FP32;
        double sec[3] = {-1, -1, -1}, blas, tiled, onednn, f;
        if (bf16) {
            f = time_shape(sec, bf16_cases, 2, pt, dt, c->threads);
            blas = -1, onednn = sec[0], tiled = sec[1];
        } else {
            f = time_shape(sec, fp32_cases, 3, pt, dt, c->threads);
            blas = sec[0], tiled = sec[1], onednn = sec[2];
        }
        if (f < 0)
            continue;
        char c_blas[24], c_tiled[24], c_onednn[24], f_blas[16], f_dnn[16];
        printf(
            "| %s | %s | %lld | %lld | %lld | %s | %s | %s | %s | %s | %s |\n", md->name,
            kt_role_name(role), (long long)p->m, (long long)p->n, (long long)p->k,
            kt_dtype_name(dt), rate(c_blas, sizeof(c_blas), f, blas),
            rate(c_tiled, sizeof(c_tiled), f, tiled), rate(c_onednn, sizeof(c_onednn), f, onednn),
            ratio(f_blas, sizeof(f_blas), blas, tiled), ratio(f_dnn, sizeof(f_dnn), onednn, tiled));
        fflush(stdout);
        if (blas > 0 && tiled > 0 && blas / tiled < c->lowest)
            c->lowest = blas / tiled;
    }
}

/* --catalog: every distinct gemm shape of the catalog (see for_each_catalog_shape), fp32 with
 * blas, tiled and onednn, bf16 with onednn and tiled, each as a fraction of the OpenBLAS fp32
 * rate ('of blas') and of oneDNN's rate in the same storage type ('of onednn'), then the
 * lowest tiled fp32 fraction of OpenBLAS against the 0.9x target. */
static void catalog_table(int threads, const char *only, int no_bf16)
{
    printf(
        "\n| model | role | M | N | K | dtype | blas GFLOP/s | tiled GFLOP/s | onednn GFLOP/s | "
        "tiled of blas | tiled of onednn |\n|---|---|---:|---:|---:|---|---:|---:|---:|---:|---:|"
        "\n");
    catalog_ctx c = {threads, no_bf16, 1e9, 1e9};
    for_each_catalog_shape(only, catalog_row, &c);
    if (c.lowest < 1e9)
        printf("\ntiled fp32 at M >= 64: lowest %.2fx OpenBLAS; target 0.9x: %s\n", c.lowest,
               c.lowest >= 0.9 ? "met" : "not met");
}

/* One shape of fp32_table: OpenBLAS, tiled as it was before x was packed once per call and
 * shared by finer column blocks (pack_x per_block, the other params the defaults), and tiled
 * with its defaults, in the same rounds. */
static void fp32_row(void *arg, const kt_model *md, kt_role role, const kt_point *pt,
                     const kt_problem *p)
{
    catalog_ctx *c = arg;
    bench_case cases[] = {
        {"gemm", "blas", "blas", {{0}}, 0},
        {"gemm", "tiled", "tiled (before)", {{264}, {512}, {0}, {0}, {2}, {0}, {1}}, 1},
        {"gemm", "tiled", "tiled", {{0}}, 0},
    };
    double sec[3] = {-1, -1, -1};
    double f = time_shape(sec, cases, 3, pt, KT_DTYPE_FP32, c->threads);
    if (f < 0)
        return;
    char r[3][24], q[2][16];
    printf("| %s | %s | %lld | %lld | %lld | %s | %s | %s | %s | %s |\n", md->name,
           kt_role_name(role), (long long)p->m, (long long)p->n, (long long)p->k,
           rate(r[0], sizeof(r[0]), f, sec[0]), rate(r[1], sizeof(r[1]), f, sec[1]),
           rate(r[2], sizeof(r[2]), f, sec[2]), ratio(q[0], sizeof(q[0]), sec[0], sec[1]),
           ratio(q[1], sizeof(q[1]), sec[0], sec[2]));
    fflush(stdout);
    if (sec[0] > 0 && sec[1] > 0 && sec[0] / sec[1] < c->lowest_before)
        c->lowest_before = sec[0] / sec[1];
    if (sec[0] > 0 && sec[2] > 0 && sec[0] / sec[2] < c->lowest)
        c->lowest = sec[0] / sec[2];
}

/* --fp32: the catalog's shapes in fp32 only, OpenBLAS against tiled before and after (see
 * fp32_row), then the lowest fraction of OpenBLAS of each against the 0.9x target. */
static void fp32_table(int threads, const char *only)
{
    printf("\n| model | role | M | N | K | blas GFLOP/s | tiled (before) GFLOP/s | tiled GFLOP/s | "
           "before of blas | tiled of blas |\n|---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    catalog_ctx c = {threads, 1, 1e9, 1e9};
    for_each_catalog_shape(only, fp32_row, &c);
    if (c.lowest < 1e9 && c.lowest_before < 1e9)
        printf("\ntiled fp32 at M >= 64: lowest %.2fx OpenBLAS (before: %.2fx); target 0.9x: %s\n",
               c.lowest, c.lowest_before, c.lowest >= 0.9 ? "met" : "not met");
}

/* The value of environment variable 'name', or 'unset' when it is not set. */
static const char *env_or(const char *name, const char *unset)
{
    const char *v = getenv(name);
    return v ? v : unset;
}

int main(int argc, char **argv)
{
    int threads = 2, catalog = 0, fp32 = 0, spin = 0, omp_spin = 0, no_bf16 = 0;
    const char *only = NULL; /* --quick: llama-3.2-1b; --model=NAME */
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--catalog") == 0)
            catalog = 1;
        else if (strcmp(argv[i], "--fp32") == 0)
            fp32 = 1;
        else if (strcmp(argv[i], "--quick") == 0)
            only = "llama-3.2-1b";
        else if (strncmp(argv[i], "--model=", 8) == 0)
            only = argv[i] + 8;
        else if (strcmp(argv[i], "--openblas-spin") == 0)
            spin = 1;
        else if (strcmp(argv[i], "--omp-spin") == 0)
            omp_spin = 1;
        else if (strcmp(argv[i], "--no-bf16") == 0)
            no_bf16 = 1;
        else if (atoi(argv[i]) > 0 && strspn(argv[i], "0123456789") == strlen(argv[i]))
            threads = atoi(argv[i]);
        else {
            fprintf(stderr, "usage: bench_gemm [threads] [--catalog [--no-bf16] | --fp32] "
                            "[--quick | --model=NAME] [--openblas-spin] [--omp-spin]\n");
            return 64;
        }
    }
    bench_keep_idle_threads_short("bench_gemm", argv, spin, omp_spin);
    double start = now_s();
    kt_device_info info;
    memset(&info, 0, sizeof(info));
    kt_baselines_describe(&info);
    printf("threads: %d\n\n", threads);
    printf("| measurement | value |\n|---|---|\n");
    for (int i = 0; i < info.n; i++)
        printf("| %s | %s |\n", info.items[i].key, info.items[i].value);
    printf("| OPENBLAS_THREAD_TIMEOUT (idle spin, 2^N cycles) | %s |\n",
           env_or("OPENBLAS_THREAD_TIMEOUT", "unset (28)"));
    printf("| GOMP_SPINCOUNT (OpenMP idle spin, pauses) | %s |\n",
           env_or("GOMP_SPINCOUNT", "unset (300000)"));
    printf("| OMP_WAIT_POLICY | %s |\n", env_or("OMP_WAIT_POLICY", "unset"));
    printf("| load average at start | %s |\n", bench_load_average());
    if (!fp32)
        printf("| memcpy bandwidth, 512 MiB, read+write | %.1f GB/s |\n",
               copy_bandwidth_gbs(threads));
    static const int ms[] = {1, 16, 64, 256};
    for (int i = catalog || fp32 ? 2 : 0; i < 4; i++)
        printf("| OpenBLAS sgemm M=%d N=K=4096 | %.1f GFLOP/s |\n", ms[i],
               sgemm_gflops(ms[i], 4096, 4096, threads));
    if (catalog || fp32) {
        if (fp32)
            fp32_table(threads, only);
        else
            catalog_table(threads, only, no_bf16);
        printf("\nload average at the end: %s; %.0f s\n", bench_load_average(), now_s() - start);
        return 0;
    }
    printf("\n| op | variant | dtype | shape | median ms | GFLOP/s | GB/s | vs blas | vs onednn |\n"
           "|---|---|---|---|---|---|---|---|---|\n");

    static const kt_model square = {"square-4096", 4096, 64, 0, 64, 2048, 1};
    static const kt_model llama1b = {"llama-3.2-1b", 2048, 32, 8, 64, 8192, 16};
    static const kt_dtype dtypes[] = {KT_DTYPE_FP32, KT_DTYPE_FP16, KT_DTYPE_BF16};
    const bench_case gemm_cases[] = {
        {"gemm", "blas", "blas", {{0}}, 0},
        {"gemm", "tiled", "tiled", {{0}}, 0},
        {"gemm", "deterministic", "deterministic", {{0}}, 0},
        {"gemm", "onednn", "onednn", {{0}}, 0},
    };
    for (int d = 0; d < 3; d++)
        for (int i = 0; i < 4; i++) {
            /* role o of square-4096: N = hidden = 4096, K = heads * head_dim = 4096 */
            kt_point pt = point_of(&square, ms[i], KT_ROLE_O);
            bench_point(&pt, "gemm", gemm_cases, 4, dtypes[d], threads);
        }
    const bench_case mlp_cases[] = {
        {"swiglu_mlp", "unfused", "unfused (blas)", {{0}}, 0},
        {"swiglu_mlp", "unfused", "unfused (tiled)", {{1}}, 1},
        {"swiglu_mlp", "fused", "fused", {{0}}, 0},
        {"swiglu_mlp", "unfused", "unfused (onednn)", {{2}}, 1},
    };
    static const int mlp_ms[] = {1, 64};
    for (int d = 0; d < 3; d += 2)
        for (int i = 0; i < 2; i++) {
            kt_point pt = point_of(&llama1b, mlp_ms[i], KT_ROLE_NONE);
            /* engine onednn exists only where the onednn gemm variant does */
            bench_point(&pt, "swiglu_mlp", mlp_cases,
                        kt_variant_find("gemm", "cpu", "onednn") ? 4 : 3, dtypes[d], threads);
        }
    return 0;
}
