/* bench_cuda.c - times every CUDA variant on a few model-sized problems (bf16) and prints
 * achieved TFLOP/s and TB/s next to three measured ceilings of this device: a 1 GiB
 * device-to-device copy (read + write bandwidth), a 1 GiB read (the L2 flush kernel: 16-byte
 * loads; the ceiling of a decode kernel, which reads) and a cuBLASLt bf16 8192^3 GEMM.
 * Attention inputs come from the op's llm generator (sinks, heavy hitters, recency), so FFD
 * drops blocks as on a real cache; the others are N(0, 0.5).
 *
 * Each figure is the median of 20 calls after 3 warmups, with L2 flushed before each call,
 * timed by the backend's CUDA events. '--json FILE' also writes every row, the ceilings and
 * the ratios (dense bandwidth fraction, FFD / fused SwiGLU / deterministic GEMM speedups).
 * Exits 69 when CUDA is not built or no device answers. */
#include "kernel.h"
#include "arm/kernel/check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef KT_HAVE_CUDA
#include "cuda/cuda_private.h"

enum { WARMUP = 3, REPS = 20 };

typedef struct bench_case {
    const char *op, *label;
    kt_problem p;
} bench_case;

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Fills a device buffer of 'bytes' with N(0, 0.5) bf16 values by tiling a 1 MiB host block. */
static int fill_device(kt_backend *b, void *dst, size_t bytes, uint64_t seed)
{
    const size_t block = (size_t)1 << 20;
    uint16_t *host = malloc(block);
    if (!host)
        return kt_error_code(KT_ENOMEM, "out of memory");
    kt_rng rng;
    kt_rng_seed(&rng, seed);
    for (size_t i = 0; i < block / 2; i++)
        host[i] = kt_fp32_to_bf16((float)(0.5 * kt_rng_normal(&rng)));
    int rc = KT_OK;
    for (size_t off = 0; off < bytes && rc >= 0; off += block)
        rc = kt_backend_upload(b, (char *)dst + off, host,
                               bytes - off < block ? bytes - off : block);
    free(host);
    return rc;
}

/* Median time of REPS timed calls of 'fn'(arg) (a variant run or a copy). */
typedef int (*call_fn)(void *arg);

static int time_median(double *out_ns, kt_backend *b, call_fn fn, void *arg)
{
    double t[REPS];
    for (int i = 0; i < WARMUP; i++)
        if (fn(arg) < 0)
            return KT_ERROR;
    for (int i = 0; i < REPS; i++) {
        kt_timing timing;
        if (kt_backend_flush_cache(b) < 0 || kt_backend_timer_start(b) < 0 || fn(arg) < 0 ||
            kt_backend_timer_stop(b, &timing) < 0)
            return KT_ERROR;
        t[i] = timing.time_ns;
    }
    qsort(t, REPS, sizeof(t[0]), cmp_double);
    *out_ns = 0.5 * (t[REPS / 2 - 1] + t[REPS / 2]);
    return KT_OK;
}

typedef struct variant_call {
    const kt_variant *v;
    void *state;
    kt_call call;
} variant_call;

static int run_variant(void *arg)
{
    variant_call *vc = arg;
    return vc->v->run(vc->state, &vc->call);
}

typedef struct copy_call {
    kt_backend *b;
    void *dst, *src;
    size_t bytes;
} copy_call;

static int run_copy(void *arg)
{
    copy_call *c = arg;
    return KT_CUDA_CALL(
        cudaMemcpyAsync(c->dst, c->src, c->bytes, cudaMemcpyDeviceToDevice, kt_cuda_stream(c->b)));
}

static void add_tensor(kt_problem *p, const char *name, int64_t d0, int64_t d1, int64_t d2)
{
    kt_tensor *t = &p->tensors[p->n_inputs + p->n_outputs];
    t->name = name;
    t->ndim = 3;
    t->dims[0] = d0;
    t->dims[1] = d1;
    t->dims[2] = d2;
    t->dtype = p->dtype;
}

static bench_case gemm_case(const char *label, int64_t m, int64_t n, int64_t k)
{
    bench_case c = {"gemm", label, {0}};
    kt_problem *p = &c.p;
    p->dtype = KT_DTYPE_BF16;
    p->m = m, p->n = n, p->k = k;
    add_tensor(p, "x", m, k, 1), p->n_inputs++;
    add_tensor(p, "w", n, k, 1), p->n_inputs++;
    add_tensor(p, "y", m, n, 1), p->n_outputs++;
    p->flops = 2.0 * m * n * k;
    p->bytes = 2.0 * (m * k + n * k + m * n);
    return c;
}

static bench_case attn_case(const char *label, int64_t batch, int64_t heads, int64_t kv_heads,
                            int64_t d, int64_t context)
{
    bench_case c = {"attention_decode", label, {0}};
    kt_problem *p = &c.p;
    p->dtype = KT_DTYPE_BF16;
    p->batch = batch, p->heads = heads, p->kv_heads = kv_heads, p->head_dim = d;
    p->context = context;
    add_tensor(p, "q", batch, heads, d), p->n_inputs++;
    add_tensor(p, "k", batch * kv_heads, context, d), p->n_inputs++;
    add_tensor(p, "v", batch * kv_heads, context, d), p->n_inputs++;
    add_tensor(p, "out", batch, heads, d), p->n_outputs++;
    p->flops = 4.0 * batch * heads * context * d;
    p->bytes = 2.0 * (2.0 * batch * heads * d + 2.0 * batch * kv_heads * context * d);
    return c;
}

static bench_case swiglu_case(const char *label, int64_t m, int64_t hidden, int64_t inter)
{
    bench_case c = {"swiglu_mlp", label, {0}};
    kt_problem *p = &c.p;
    p->dtype = KT_DTYPE_BF16;
    p->m = m, p->k = hidden, p->n = inter;
    add_tensor(p, "x", m, hidden, 1), p->n_inputs++;
    add_tensor(p, "w_gate_up", 2 * inter, hidden, 1), p->n_inputs++;
    add_tensor(p, "w_down", hidden, inter, 1), p->n_inputs++;
    add_tensor(p, "y", m, hidden, 1), p->n_outputs++;
    p->flops = 6.0 * m * hidden * inter;
    p->bytes = 2.0 * (2.0 * m * hidden + 3.0 * hidden * inter);
    return c;
}

/* One printed row, kept for --json. */
typedef struct bench_row {
    const char *op, *label, *variant;
    double ns, tflops, tbs, kept_fraction;
} bench_row;

enum { MAX_ROWS = 32 };
static bench_row rows[MAX_ROWS];
static int n_rows;

/* Times 'variant' on 'c' and prints one table row; returns its median ns (0 on failure).
 * 'inst': the instance whose device buffers and problem to use (attention: llm inputs), or
 * NULL to allocate N(0, 0.5) buffers for c->p. */
static double bench_variant(kt_backend *b, const bench_case *c, const char *variant,
                            kt_instance *inst, double peak_bw, double peak_flops)
{
    const kt_variant *v = kt_variant_find(c->op, "cuda", variant);
    const kt_problem *p = inst ? &inst->problem : &c->p;
    void *bufs[KT_MAX_TENSORS] = {0};
    size_t sizes[KT_MAX_TENSORS] = {0};
    int nt = p->n_inputs + p->n_outputs, rc = KT_OK;
    double ns = 0, kept = -1;
    variant_call vc = {v, NULL, {0}};
    kt_param_value params[KT_MAX_PARAMS];
    if (!v) {
        printf("%-17s %-28s %-14s not registered\n", c->op, c->label, variant);
        return 0;
    }
    kt_param_defaults(params, v->params, v->n_params);
    for (int i = 0; i < nt && rc >= 0; i++) {
        if (inst) {
            bufs[i] = i < p->n_inputs ? inst->dev_inputs[i] : inst->dev_outputs[i - p->n_inputs];
            continue;
        }
        sizes[i] = kt_tensor_bytes(&p->tensors[i]);
        if ((rc = kt_backend_alloc(b, &bufs[i], sizes[i])) >= 0 && i < p->n_inputs)
            rc = fill_device(b, bufs[i], sizes[i], 1000 + (uint64_t)i);
    }
    vc.call.backend = b;
    vc.call.problem = p;
    vc.call.params = params;
    vc.call.inputs = (const void *const *)bufs;
    vc.call.outputs = bufs + p->n_inputs;
    vc.call.threads = 1;
    vc.call.pair_position = -1;
    if (rc >= 0)
        rc = v->prepare(&vc.state, &vc.call);
    if (rc >= 0)
        rc = time_median(&ns, b, run_variant, &vc);
    if (rc < 0) {
        printf("%-17s %-28s %-14s failed: %s\n", c->op, c->label, variant, kt_error_last());
        ns = 0;
    } else {
        double sec = ns * 1e-9;
        printf("%-17s %-28s %-14s %10.1f %9.1f %7.3f %6.1f%% %6.1f%%", c->op, c->label, variant,
               ns * 1e-3, c->p.flops / sec * 1e-12, c->p.bytes / sec * 1e-12,
               100.0 * c->p.bytes / sec / peak_bw, 100.0 * c->p.flops / sec / peak_flops);
        kt_metric m[KT_MAX_METRICS];
        int n = v->metrics ? v->metrics(vc.state, m, KT_MAX_METRICS) : 0;
        for (int i = 0; i < n; i++) {
            if (strcmp(m[i].name, "kept_fraction") == 0)
                kept = m[i].value;
            if (strcmp(m[i].name, "kept_fraction") == 0 || strcmp(m[i].name, "algo_id") == 0 ||
                strcmp(m[i].name, "n_splits") == 0)
                printf("  %s=%g", m[i].name, m[i].value);
        }
        printf("\n");
        if (n_rows < MAX_ROWS)
            rows[n_rows++] = (bench_row){
                c->op, c->label, variant, ns, c->p.flops / sec * 1e-12, c->p.bytes / sec * 1e-12,
                kept};
    }
    v->release(vc.state, b);
    for (int i = 0; !inst && i < nt; i++)
        kt_backend_free(b, bufs[i], sizes[i]);
    return ns;
}

/* Device-to-device copy of 1 GiB: bytes read + written per second. */
static int measure_copy_bw(double *out, kt_backend *b)
{
    copy_call c = {b, NULL, NULL, (size_t)1 << 30};
    double ns = 0;
    int rc = kt_backend_alloc(b, &c.src, c.bytes);
    if (rc >= 0 && (rc = kt_backend_alloc(b, &c.dst, c.bytes)) >= 0 &&
        (rc = fill_device(b, c.src, c.bytes, 1)) >= 0)
        rc = time_median(&ns, b, run_copy, &c);
    kt_backend_free(b, c.src, c.bytes);
    kt_backend_free(b, c.dst, c.bytes);
    *out = rc >= 0 ? 2.0 * (double)c.bytes / (ns * 1e-9) : 0;
    return rc;
}

typedef struct read_call {
    kt_backend *b;
    void *src;
    unsigned *sink;
    size_t bytes;
} read_call;

static int run_read(void *arg)
{
    read_call *r = arg;
    return kt_cuda_l2_flush(kt_cuda_stream(r->b), r->src, r->bytes, kt_cuda_sm_count(r->b),
                            r->sink);
}

/* A 1 GiB read with 16-byte loads (the L2 flush kernel): bytes read per second. */
static int measure_read_bw(double *out, kt_backend *b)
{
    read_call r = {b, NULL, NULL, (size_t)1 << 30};
    double ns = 0;
    int rc = kt_backend_alloc(b, &r.src, r.bytes);
    if (rc >= 0 && (rc = kt_backend_alloc(b, (void **)&r.sink, sizeof(unsigned))) >= 0 &&
        (rc = KT_CUDA_CALL(cudaMemset(r.src, 0, r.bytes))) >= 0)
        rc = time_median(&ns, b, run_read, &r);
    kt_backend_free(b, r.src, r.bytes);
    kt_backend_free(b, r.sink, sizeof(unsigned));
    *out = rc >= 0 ? (double)r.bytes / (ns * 1e-9) : 0;
    return rc;
}

static const bench_row *find_row(const char *label, const char *variant)
{
    for (int i = 0; i < n_rows; i++)
        if (strcmp(rows[i].label, label) == 0 && strcmp(rows[i].variant, variant) == 0)
            return &rows[i];
    return NULL;
}

/* time(base) / time(cand) for 'label', or -1 when either is missing. */
static double speedup(const char *label, const char *base, const char *cand)
{
    const bench_row *b = find_row(label, base), *c = find_row(label, cand);
    return b && c && c->ns > 0 ? b->ns / c->ns : -1;
}

static void write_json(const char *path, double copy_bw, double read_bw, double peak_flops)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "bench_cuda: cannot write '%s'\n", path);
        return;
    }
    const bench_row *d32 = find_row("8b b1 t32768", "dense");
    fprintf(f,
            "{\n  \"copy_tbs\": %.4f,\n  \"read_tbs\": %.4f,\n  \"cublaslt_bf16_tflops\": %.2f,\n",
            copy_bw * 1e-12, read_bw * 1e-12, peak_flops * 1e-12);
    fprintf(f, "  \"dense_b1_t32768_read_fraction\": %.4f,\n",
            d32 && read_bw > 0 ? d32->tbs * 1e12 / read_bw : -1);
    /* name, case, baseline, candidate: time(baseline) / time(candidate) */
    static const char *const ratios[][4] = {
        {"ffd_over_dense_b1_t32768", "8b b1 t32768", "dense", "ffd"},
        {"ffd_over_dense_b1_t131072", "8b b1 t131072", "dense", "ffd"},
        {"ffd_over_dense_b8_t32768", "8b b8 t32768", "dense", "ffd"},
        {"swiglu_fused_over_unfused_m16", "decode m16 8b", "unfused", "fused"},
        {"swiglu_fused_over_unfused_m1024", "prefill m1024 8b", "unfused", "fused"},
        {"deterministic_over_cublaslt_m16", "decode gate_up m16 8b", "cublaslt", "deterministic"},
        {"deterministic_over_cublaslt_m4096", "prefill o m4096 8b", "cublaslt", "deterministic"},
    };
    const int n_ratios = (int)(sizeof(ratios) / sizeof(ratios[0]));
    fprintf(f, "  \"speedups\": {\n");
    for (int i = 0; i < n_ratios; i++)
        fprintf(f, "    \"%s\": %.4f%s\n", ratios[i][0],
                speedup(ratios[i][1], ratios[i][2], ratios[i][3]), i + 1 < n_ratios ? "," : "");
    fprintf(f, "  },\n");
    fprintf(f, "  \"rows\": [\n");
    for (int i = 0; i < n_rows; i++) {
        fprintf(f,
                "    {\"op\": \"%s\", \"case\": \"%s\", \"variant\": \"%s\", \"median_us\": %.3f, "
                "\"tflops\": %.3f, \"tbs\": %.4f",
                rows[i].op, rows[i].label, rows[i].variant, rows[i].ns * 1e-3, rows[i].tflops,
                rows[i].tbs);
        if (rows[i].kept_fraction >= 0)
            fprintf(f, ", \"kept_fraction\": %.4f", rows[i].kept_fraction);
        fprintf(f, "}%s\n", i + 1 < n_rows ? "," : "");
    }
    fprintf(f, "  ]\n}\n");
    fclose(f);
}

/* The llm-input instance of an attention case (its float64 reference is computed too). */
static kt_instance *attn_instance(kt_backend *b, const bench_case *c)
{
    const kt_op *op = kt_op_find("attention_decode");
    kt_point pt;
    memset(&pt, 0, sizeof(pt));
    pt.model.heads = c->p.heads;
    pt.model.kv_heads = c->p.kv_heads;
    pt.model.head_dim = c->p.head_dim;
    pt.batch_size = c->p.batch;
    pt.context_length = c->p.context;
    kt_param_value in[KT_MAX_PARAMS];
    kt_param_defaults(in, op->input_params, op->n_input_params);
    kt_instance *inst = NULL;
    if (kt_instance_create(&inst, b, op, &pt, KT_DTYPE_BF16, KT_DIST_LLM, in, 7) < 0) {
        printf("%-17s %-28s llm inputs failed: %s\n", c->op, c->label, kt_error_last());
        return NULL;
    }
    return inst;
}

int main(int argc, char **argv)
{
    const char *json = argc > 2 && strcmp(argv[1], "--json") == 0 ? argv[2] : NULL;
    const kt_backend_iface *iface = kt_backend_find("cuda");
    kt_device_info info;
    if (!iface || iface->probe(&info) < 0 || !info.available) {
        printf("%s\n", iface ? info.reason : "no CUDA device: cuda backend not registered");
        return 69;
    }
    for (int i = 0; i < info.n; i++)
        printf("# %s: %s\n", info.items[i].key, info.items[i].value);
    kt_backend *b = NULL;
    if (kt_backend_open(&b, "cuda", 1, 1) < 0) {
        printf("%s\n", kt_error_last());
        return 69;
    }
    double bw = 0, read_bw = 0;
    if (measure_copy_bw(&bw, b) < 0 || measure_read_bw(&read_bw, b) < 0) {
        printf("bandwidth ceilings failed: %s\n", kt_error_last());
        kt_backend_close(b);
        return 70;
    }
    bench_case peak = gemm_case("8192^3 (peak)", 8192, 8192, 8192);
    printf("# d2d copy 1 GiB: %.3f TB/s (read + write); read 1 GiB: %.3f TB/s\n", bw * 1e-12,
           read_bw * 1e-12);
    printf("%-17s %-28s %-14s %10s %9s %7s %7s %7s\n", "op", "case", "variant", "median_us",
           "TFLOP/s", "TB/s", "%read", "%gemm");
    double peak_ns = bench_variant(b, &peak, "cublaslt", NULL, read_bw, 1e30);
    double peak_flops = peak_ns > 0 ? peak.p.flops / (peak_ns * 1e-9) : 1e30;
    printf("# cuBLASLt bf16 8192^3: %.1f TFLOP/s\n", peak_flops * 1e-12);

    bench_case cases[] = {
        gemm_case("decode gate_up m16 8b", 16, 28672, 4096),
        gemm_case("prefill o m4096 8b", 4096, 4096, 4096),
        attn_case("8b b1 t32768", 1, 32, 8, 128, 32768),
        attn_case("8b b1 t131072", 1, 32, 8, 128, 131072),
        attn_case("8b b8 t32768", 8, 32, 8, 128, 32768),
        swiglu_case("decode m16 8b", 16, 4096, 14336),
        swiglu_case("prefill m1024 8b", 1024, 4096, 14336),
    };
    const char *variants[][2] = {
        {"cublaslt", "deterministic"}, {"dense", "ffd"}, {"unfused", "fused"}};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int row = strcmp(cases[i].op, "gemm") == 0               ? 0
                  : strcmp(cases[i].op, "attention_decode") == 0 ? 1
                                                                 : 2;
        kt_instance *inst = row == 1 ? attn_instance(b, &cases[i]) : NULL;
        if (row == 1 && !inst)
            continue;
        for (int j = 0; j < 2; j++)
            bench_variant(b, &cases[i], variants[row][j], inst, read_bw, peak_flops);
        kt_instance_free(inst, b);
    }
    if (json)
        write_json(json, bw, read_bw, peak_flops);
    kt_backend_close(b);
    return 0;
}
#else
int main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    printf("CUDA is not built (configure with -DKT_CUDA=ON)\n");
    return 69;
}
#endif
