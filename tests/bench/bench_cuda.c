/* bench_cuda.c - times every CUDA variant on a few model-sized problems (bf16) and prints
 * achieved TFLOP/s and TB/s next to two measured ceilings of this device: a 1 GiB
 * device-to-device copy (read + write bandwidth) and a cuBLASLt bf16 8192^3 GEMM.
 *
 * Each figure is the median of 20 calls after 3 warmups, with L2 flushed before each call,
 * timed by the backend's CUDA events. Exits 69 when CUDA is not built or no device answers. */
#include "kernel.h"

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

/* Times 'variant' on 'c' and prints one table row; returns its median ns (0 on failure). */
static double bench_variant(kt_backend *b, const bench_case *c, const char *variant, double peak_bw,
                            double peak_flops)
{
    const kt_variant *v = kt_variant_find(c->op, "cuda", variant);
    const kt_problem *p = &c->p;
    void *bufs[KT_MAX_TENSORS] = {0};
    size_t sizes[KT_MAX_TENSORS] = {0};
    int nt = p->n_inputs + p->n_outputs, rc = KT_OK;
    double ns = 0;
    variant_call vc = {v, NULL, {0}};
    kt_param_value params[KT_MAX_PARAMS];
    if (!v) {
        printf("%-17s %-28s %-14s not registered\n", c->op, c->label, variant);
        return 0;
    }
    kt_param_defaults(params, v->params, v->n_params);
    for (int i = 0; i < nt && rc >= 0; i++) {
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
        double s = ns * 1e-9;
        printf("%-17s %-28s %-14s %10.1f %9.1f %7.3f %6.1f%% %6.1f%%", c->op, c->label, variant,
               ns * 1e-3, p->flops / s * 1e-12, p->bytes / s * 1e-12,
               100.0 * p->bytes / s / peak_bw, 100.0 * p->flops / s / peak_flops);
        kt_metric m[KT_MAX_METRICS];
        int n = v->metrics ? v->metrics(vc.state, m, KT_MAX_METRICS) : 0;
        for (int i = 0; i < n; i++)
            if (strcmp(m[i].name, "kept_fraction") == 0 || strcmp(m[i].name, "algo_id") == 0)
                printf("  %s=%g", m[i].name, m[i].value);
        printf("\n");
    }
    v->release(vc.state, b);
    for (int i = 0; i < nt; i++)
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

int main(void)
{
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
    double bw = 0;
    if (measure_copy_bw(&bw, b) < 0) {
        printf("d2d copy failed: %s\n", kt_error_last());
        kt_backend_close(b);
        return 70;
    }
    bench_case peak = gemm_case("8192^3 (peak)", 8192, 8192, 8192);
    printf("# d2d copy 1 GiB: %.3f TB/s (read + write)\n", bw * 1e-12);
    printf("%-17s %-28s %-14s %10s %9s %7s %7s %7s\n", "op", "case", "variant", "median_us",
           "TFLOP/s", "TB/s", "%copy", "%gemm");
    double peak_ns = bench_variant(b, &peak, "cublaslt", bw, 1e30);
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
        for (int j = 0; j < 2; j++)
            bench_variant(b, &cases[i], variants[row][j], bw, peak_flops);
    }
    kt_backend_close(b);
    return 0;
}
#else
int main(void)
{
    printf("CUDA is not built (configure with -DKT_CUDA=ON)\n");
    return 69;
}
#endif
