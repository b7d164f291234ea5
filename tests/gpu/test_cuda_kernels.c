/* test_cuda_kernels.c - every CUDA variant against the float64 reference on awkward shapes
 * (odd sizes, T < block, tail 0 and block - 1, GQA groups 1, 2, 4, 7, 8, 16, head_dim 32, 64,
 * 96, 128, 256, batch > 1), both dense kernels and split plans; FFD on llm caches (blocks
 * dropped, whole splits dropped) against kt_ffd_reference: the device cache bit for bit, every
 * block maximum within the scan's error bound, every decision, the output; the deterministic
 * GEMM and fused SwiGLU bit for bit across runs, batch rows and warps per block.
 * Skips (77) when the cuda backend's probe finds no device; builds without CUDA register no
 * cuda backend and skip the same way (tests/gpu/run.sh counts a skip as a failure).
 * 'test_cuda_kernels --small' runs one small case of every kernel (for compute-sanitizer). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "gpu/ffd_check.h"
#include "kernels/harness.h"

#include "cuda/cuda_private.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const kt_dtype dtypes[] = {KT_DTYPE_FP32, KT_DTYPE_FP16, KT_DTYPE_BF16};
#define N_DTYPES 3

/* rel_l2 bound against float64 for one output rounded to the storage type after fp32
 * arithmetic over a few hundred terms. */
static double tolerance(kt_dtype dtype)
{
    switch (dtype) {
    case KT_DTYPE_FP16:
        return 3e-3;
    case KT_DTYPE_BF16:
        return 2e-2;
    default:
        return 1e-5;
    }
}

static kt_model test_model(int64_t hidden, int64_t heads, int64_t kv_heads, int64_t head_dim,
                           int64_t intermediate)
{
    kt_model m;
    memset(&m, 0, sizeof(m));
    snprintf(m.name, sizeof(m.name), "test-h%lld-g%lld-d%lld", (long long)hidden,
             (long long)(heads / kv_heads), (long long)head_dim);
    m.hidden = hidden;
    m.heads = heads;
    m.kv_heads = kv_heads;
    m.head_dim = head_dim;
    m.intermediate = intermediate;
    return m;
}

static kt_point test_point(kt_model model, int64_t batch, int64_t context, kt_role role)
{
    kt_point p;
    memset(&p, 0, sizeof(p));
    p.model = model;
    p.batch_size = batch;
    p.context_length = context;
    p.phase = KT_PHASE_DECODE;
    p.role = role;
    snprintf(p.id, sizeof(p.id), "%s/b%lld/t%lld/%s", model.name, (long long)batch,
             (long long)context, kt_role_name(role));
    return p;
}

/* Runs one variant and requires a complete, finite output within 'tol' of float64. */
static kt_test_result check_variant(const char *op, const char *variant, const kt_point *point,
                                    kt_dtype dtype, const kt_param_value *params, double tol)
{
    kt_test_result r = kt_test_run("cuda", op, variant, point, dtype, KT_DIST_NORMAL, params, NULL,
                                   0x5eed ^ (uint64_t)dtype, 1);
    const kt_numerics *n = &r.numerics;
    int ok = r.status == KT_OK && n->unwritten == 0 && n->nonfinite == 0 && !n->inputs_modified &&
             n->rel_l2 <= tol && n->cosine > 0.999;
    if (!ok)
        print_error("%s/%s %s %s: status %d (%s) unwritten %lld nonfinite %lld modified %d "
                    "rel_l2 %.3g (limit %.3g) cosine %.6f\n",
                    op, variant, point->id, kt_dtype_name(dtype), r.status, r.error,
                    (long long)n->unwritten, (long long)n->nonfinite, n->inputs_modified, n->rel_l2,
                    tol, n->cosine);
    assert_true(ok);
    return r;
}

static double metric(const kt_test_result *r, const char *name)
{
    for (int i = 0; i < r->n_metrics; i++)
        if (strcmp(r->metrics[i].name, name) == 0)
            return r->metrics[i].value;
    fail_msg("metric '%s' missing", name);
    return NAN;
}

/* ---- gemm ------------------------------------------------------------------------------- */

static const kt_role roles[] = {KT_ROLE_QKV, KT_ROLE_O, KT_ROLE_GATE_UP, KT_ROLE_DOWN};
static const int64_t gemm_batches[] = {1, 3, 67};

static void run_gemm(const char *variant, const kt_param_value *params, double tol_scale)
{
    /* K and N not multiples of any tile: hidden 200, q/kv 5/1 x 40, intermediate 333 */
    kt_model m = test_model(200, 5, 1, 40, 333);
    for (int d = 0; d < N_DTYPES; d++)
        for (size_t r = 0; r < sizeof(roles) / sizeof(roles[0]); r++)
            for (size_t b = 0; b < sizeof(gemm_batches) / sizeof(gemm_batches[0]); b++) {
                kt_point p = test_point(m, gemm_batches[b], 0, roles[r]);
                check_variant("gemm", variant, &p, dtypes[d], params,
                              tolerance(dtypes[d]) * tol_scale);
            }
}

static void test_gemm_cublaslt(void **state)
{
    (void)state;
    run_gemm("cublaslt", NULL, 1.0);
}

static void test_gemm_cublaslt_tf32(void **state)
{
    (void)state;
    kt_param_value params[2] = {{1}, {32}}; /* tf32, workspace_mib */
    kt_point p = test_point(test_model(200, 5, 1, 40, 333), 67, 0, KT_ROLE_DOWN);
    kt_test_result r = check_variant("gemm", "cublaslt", &p, KT_DTYPE_FP32, params, 5e-3);
    assert_true(metric(&r, "tf32") == 1.0);
    params[0].num = 0;
    r = check_variant("gemm", "cublaslt", &p, KT_DTYPE_FP32, params, 1e-5);
    assert_true(metric(&r, "tf32") == 0.0);
}

static void test_gemm_deterministic(void **state)
{
    (void)state;
    kt_param_value tensor[2] = {{0}, {4}}, fp32[2] = {{1}, {4}}; /* cores, warps */
    run_gemm("deterministic", tensor, 1.0);
    run_gemm("deterministic", fp32, 1.0);
}

/* Fills 'n' 16-bit values of 'dtype' from 'rng', N(0, 1). */
static void fill_16(uint16_t *dst, size_t n, kt_dtype dtype, kt_rng *rng)
{
    for (size_t i = 0; i < n; i++) {
        float x = (float)kt_rng_normal(rng);
        dst[i] = dtype == KT_DTYPE_BF16 ? kt_fp32_to_bf16(x) : kt_fp32_to_fp16(x);
    }
}

/* Device copies of host arrays, freed together. */
typedef struct dev_set {
    kt_backend *b;
    void *ptr[8];
    size_t bytes[8];
    int n;
} dev_set;

static void *dev_put(dev_set *d, const void *host, size_t bytes)
{
    void *p = NULL;
    assert_int_equal(kt_backend_alloc(d->b, &p, bytes ? bytes : 1), KT_OK);
    if (host)
        assert_int_equal(kt_backend_upload(d->b, p, host, bytes), KT_OK);
    else
        assert_int_equal(cudaMemset(p, 0, bytes ? bytes : 1), cudaSuccess);
    d->ptr[d->n] = p;
    d->bytes[d->n++] = bytes ? bytes : 1;
    return p;
}

static void dev_get(dev_set *d, void *host, const void *dev, size_t bytes)
{
    assert_int_equal(kt_backend_synchronize(d->b), KT_OK);
    assert_int_equal(kt_backend_download(d->b, host, dev, bytes), KT_OK);
}

static void dev_free(dev_set *d)
{
    for (int i = 0; i < d->n; i++)
        kt_backend_free(d->b, d->ptr[i], d->bytes[i]);
    d->n = 0;
}

/* The deterministic GEMM (tensor cores, fp16 and bf16; and the fp32 FMA tiles) and the fused
 * SwiGLU: a second run repeats the first bit for bit; so does every launch shape (1, 3, 4, 8
 * warps per block); and row r of a batch-M product (for SwiGLU: of the fused gate/up
 * activations) equals the product of that row alone. */
static void check_bitwise(const char *op, const char *variant, kt_dtype dtype, int cores)
{
    const int64_t M = 131, N = 97, K = 1000; /* swiglu: hidden K, intermediate N */
    const int swiglu = strcmp(op, "swiglu_mlp") == 0;
    const kt_variant *v = kt_variant_find(op, "cuda", variant);
    assert_non_null(v);
    kt_backend *b = NULL;
    assert_int_equal(kt_backend_open(&b, "cuda", 1, 1), KT_OK);
    dev_set d = {b, {0}, {0}, 0};
    const int64_t wrows = swiglu ? 2 * N : N;
    uint16_t *hx = malloc((size_t)(M * K) * 2), *hw = malloc((size_t)(wrows * K) * 2);
    uint16_t *hd = malloc((size_t)(K * N) * 2);
    uint16_t *y1 = malloc((size_t)(M * K) * 2), *y2 = malloc((size_t)(M * K) * 2);
    assert_true(hx && hw && hd && y1 && y2);
    kt_rng rng;
    kt_rng_seed(&rng, 42);
    fill_16(hx, (size_t)(M * K), dtype, &rng);
    fill_16(hw, (size_t)(wrows * K), dtype, &rng);
    fill_16(hd, (size_t)(K * N), dtype, &rng);
    void *dx = dev_put(&d, hx, (size_t)(M * K) * 2), *dw = dev_put(&d, hw, (size_t)(wrows * K) * 2);
    void *dd = dev_put(&d, hd, (size_t)(K * N) * 2), *dy = dev_put(&d, NULL, (size_t)(M * K) * 2);

    kt_problem p;
    memset(&p, 0, sizeof(p));
    p.dtype = dtype;
    p.m = M;
    p.n = N; /* gemm: output columns; swiglu: the intermediate size */
    p.k = K; /* swiglu: hidden, the output's columns */
    const int64_t out_cols = swiglu ? K : N;
    kt_param_value params[KT_MAX_PARAMS];
    kt_param_defaults(params, v->params, v->n_params);
    const int ci = kt_param_index(v->params, v->n_params, "cores");
    const int wi = kt_param_index(v->params, v->n_params, "warps");
    assert_true(ci >= 0 && wi == ci + 1);
    params[ci].num = cores;
    const void *in[3] = {dx, dw, dd};

    /* y1: 4 warps; y2: the same again, then 1, 3 and 8 warps */
    params[wi].num = 4;
    kt_problem pr = p;
    {
        void *out[1] = {dy};
        kt_call call = {b, &pr, params, in, out, 1, -1, 1, NULL, NULL};
        void *st = NULL;
        assert_int_equal(v->prepare(&st, &call), KT_OK);
        assert_int_equal(v->run(st, &call), KT_OK);
        dev_get(&d, y1, dy, (size_t)(M * out_cols) * 2);
        assert_int_equal(v->run(st, &call), KT_OK);
        dev_get(&d, y2, dy, (size_t)(M * out_cols) * 2);
        assert_memory_equal(y1, y2, (size_t)(M * out_cols) * 2);
        v->release(st, b);
    }
    const int warps[] = {1, 3, 8};
    for (size_t i = 0; i < sizeof(warps) / sizeof(warps[0]); i++) {
        params[wi].num = warps[i];
        void *out[1] = {dy};
        kt_call call = {b, &pr, params, in, out, 1, -1, 1, NULL, NULL};
        void *st = NULL;
        assert_int_equal(v->prepare(&st, &call), KT_OK);
        assert_int_equal(v->run(st, &call), KT_OK);
        dev_get(&d, y2, dy, (size_t)(M * out_cols) * 2);
        v->release(st, b);
        if (memcmp(y1, y2, (size_t)(M * out_cols) * 2) != 0)
            fail_msg("%s/%s %s cores %d: %d warps differ from 4", op, variant, kt_dtype_name(dtype),
                     cores, warps[i]);
    }
    /* rows alone: the gemm variant; for swiglu the fused gate/up kernel (its down projection is
     * cuBLASLt, whose algorithm may change with m) */
    const int64_t rows[] = {0, 1, 15, 16, 63, 64, 100, M - 1};
    uint16_t *act = swiglu ? malloc((size_t)(M * N) * 2) : NULL;
    void *da = swiglu ? dev_put(&d, NULL, (size_t)(M * N) * 2) : NULL;
    const int tw = kt_cuda_tensor_warps(params + ci);
    if (swiglu) {
        assert_non_null(act);
        assert_int_equal(kt_cuda_gate_up_silu(kt_cuda_stream(b), dtype, dx, dw, da, M, N, K, tw),
                         KT_OK);
        dev_get(&d, act, da, (size_t)(M * N) * 2);
    }
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        const void *xr = (const uint16_t *)dx + rows[i] * K;
        const uint16_t *want = swiglu ? act + rows[i] * N : y1 + rows[i] * out_cols;
        const int64_t cols = swiglu ? N : out_cols;
        if (swiglu) {
            assert_int_equal(
                kt_cuda_gate_up_silu(kt_cuda_stream(b), dtype, xr, dw, da, 1, N, K, tw), KT_OK);
            dev_get(&d, y2, da, (size_t)N * 2);
        } else {
            kt_problem one = p;
            one.m = 1;
            const void *in1[3] = {xr, dw, dd};
            void *out[1] = {dy};
            kt_call call = {b, &one, params, in1, out, 1, -1, 1, NULL, NULL};
            void *st = NULL;
            assert_int_equal(v->prepare(&st, &call), KT_OK);
            assert_int_equal(v->run(st, &call), KT_OK);
            dev_get(&d, y2, dy, (size_t)out_cols * 2);
            v->release(st, b);
        }
        if (memcmp(y2, want, (size_t)cols * 2) != 0)
            fail_msg("%s/%s %s cores %d: row %lld alone differs", op, variant, kt_dtype_name(dtype),
                     cores, (long long)rows[i]);
    }
    free(act);
    dev_free(&d);
    kt_backend_close(b);
    free(hx);
    free(hw);
    free(hd);
    free(y1);
    free(y2);
}

static void test_gemm_deterministic_bitwise(void **state)
{
    (void)state;
    check_bitwise("gemm", "deterministic", KT_DTYPE_BF16, 0);
    check_bitwise("gemm", "deterministic", KT_DTYPE_FP16, 0);
    check_bitwise("gemm", "deterministic", KT_DTYPE_BF16, 1);
}

static void test_swiglu_fused_bitwise(void **state)
{
    (void)state;
    check_bitwise("swiglu_mlp", "fused", KT_DTYPE_BF16, 0);
    check_bitwise("swiglu_mlp", "fused", KT_DTYPE_FP16, 0);
}

/* ---- attention_decode ------------------------------------------------------------------- */

typedef struct attn_case {
    int64_t heads, kv_heads, head_dim, batch, context;
} attn_case;

/* With the default block of 128: T < block, tail 0, tail block - 1, several splits;
 * head_dim 96 takes the scalar dense kernel and the fp32 scan (no 16-byte or mma path). */
static const attn_case attn_cases[] = {
    {4, 4, 64, 1, 100},    /* G 1, T < block */
    {8, 4, 128, 3, 256},   /* G 2, tail 0, batch 3 */
    {16, 4, 64, 2, 511},   /* G 4, tail block - 1 */
    {14, 2, 64, 2, 511},   /* G 7 */
    {16, 2, 256, 1, 1000}, /* G 8, head_dim 256 */
    {16, 1, 128, 2, 700},  /* G 16: two head groups per KV head */
    {28, 4, 128, 1, 4200}, /* G 7, qwen2.5-7b heads, many splits */
    {8, 2, 96, 2, 300},    /* head_dim 96: scalar kernels */
    {4, 1, 32, 1, 77},     /* head_dim 32: 4 lanes per key at 16 bits */
};
#define N_ATTN_CASES (sizeof(attn_cases) / sizeof(attn_cases[0]))

static kt_point attn_point(const attn_case *c)
{
    kt_model m = test_model(c->heads * c->head_dim, c->heads, c->kv_heads, c->head_dim, 0);
    return test_point(m, c->batch, c->context, KT_ROLE_NONE);
}

/* Both dense kernels, the SM-sized plan and small splits (16 tokens: lane groups without a
 * key in a step; 48: a last split shorter than a step). */
static void test_attention_dense(void **state)
{
    (void)state;
    kt_param_value plans[][2] = {{{0}, {1}}, {{16}, {1}}, {{48}, {1}}, {{0}, {0}}, {{64}, {0}}};
    for (int d = 0; d < N_DTYPES; d++)
        for (size_t i = 0; i < N_ATTN_CASES; i++)
            for (size_t j = 0; j < sizeof(plans) / sizeof(plans[0]); j++) {
                kt_point p = attn_point(&attn_cases[i]);
                kt_test_result r = check_variant("attention_decode", "dense", &p, dtypes[d],
                                                 plans[j], tolerance(dtypes[d]));
                if (plans[j][0].num == 0) { /* the automatic plan: >= 1 split, 16-aligned */
                    assert_true(metric(&r, "split_tokens") >= 16);
                    assert_true(fmod(metric(&r, "split_tokens"), 16.0) == 0.0);
                }
            }
}

/* delta 1e30 keeps every block: FFD is then dense attention over refined keys, whose error
 * is the fp8 residual's (2^-4 of at most half a quantization step; about 1.5% of each key by
 * estimate, and so of the output). Wrong codes or a missing residual give tens of percent. */
static void test_attention_ffd_all_kept(void **state)
{
    (void)state;
    for (int scan = 0; scan < 2; scan++) {
        kt_param_value params[4] = {{1e30}, {128}, {2}, {scan}}; /* delta, block, split, scan */
        for (int d = 0; d < N_DTYPES; d++)
            for (size_t i = 0; i < N_ATTN_CASES; i++) {
                kt_point p = attn_point(&attn_cases[i]);
                kt_test_result r = check_variant("attention_decode", "ffd", &p, dtypes[d], params,
                                                 5e-2 + tolerance(dtypes[d]));
                assert_true(metric(&r, "kept_fraction") == 1.0);
            }
    }
}

/* Runs the FFD entry points on the llm inputs of 'fc' and checks them against
 * kt_ffd_expect_compute (ffd_check.h); 'tol': rel_l2 against kt_ffd_reference, the CPU
 * variant's measured agreement in this storage type (tests/kernels/test_ffd.c). */
static void check_ffd_policy(const kt_ffd_case *fc, kt_dtype dtype, int scan_fp32, double tol)
{
    const kt_op *op = kt_op_find("attention_decode");
    kt_point pt =
        attn_point(&(attn_case){fc->heads, fc->kv_heads, fc->head_dim, fc->batch, fc->context});
    kt_param_value in[KT_MAX_PARAMS];
    kt_param_defaults(in, op->input_params, op->n_input_params);
    kt_backend *b = NULL;
    kt_instance *inst = NULL;
    assert_int_equal(kt_backend_open(&b, "cuda", 1, 1), KT_OK);
    assert_int_equal(kt_instance_create(&inst, b, op, &pt, dtype, KT_DIST_LLM, in, KT_FFD_GPU_SEED),
                     KT_OK);
    const int mma =
        !scan_fp32 && (fc->head_dim == 64 || fc->head_dim == 128 || fc->head_dim == 256);
    kt_ffd_expect e;
    assert_int_equal(kt_ffd_expect_compute(&e, fc, inst->host_inputs[0], inst->host_inputs[1],
                                           inst->host_inputs[2], dtype, !mma),
                     KT_OK);
    const kt_ffd_cache *c = &e.cache;
    const int64_t n_blocks = fc->batch * fc->kv_heads * c->n_full, group = fc->heads / fc->kv_heads;
    const int64_t tail = fc->context - c->n_full * fc->block;
    const int64_t n_splits = (c->n_full + fc->split_blocks - 1) / fc->split_blocks + (tail > 0);
    const size_t out_n = (size_t)(fc->batch * fc->heads * fc->head_dim);
    dev_set d = {b, {0}, {0}, 0};
    kt_cuda_ffd_cache dc = {dev_put(&d, NULL, kt_ffd_codes_bytes(c)),
                            dev_put(&d, NULL, kt_ffd_scales_bytes(c)),
                            dev_put(&d, NULL, kt_ffd_residual_bytes(c)), fc->block, c->n_full};
    float *block_max = dev_put(&d, NULL, sizeof(float) * (size_t)(n_blocks * group));
    uint8_t *keep = dev_put(&d, NULL, (size_t)n_blocks);
    const size_t rows = (size_t)(fc->batch * fc->heads * n_splits);
    kt_cuda_attn_partials part = {dev_put(&d, NULL, rows * (size_t)fc->head_dim * sizeof(float)),
                                  dev_put(&d, NULL, rows * sizeof(float)),
                                  dev_put(&d, NULL, rows * sizeof(float)), n_splits};
    kt_cuda_attn_shape s = {fc->batch, fc->heads, fc->kv_heads, fc->head_dim, fc->context};
    cudaStream_t stream = kt_cuda_stream(b);

    /* the device cache is the host cache, bit for bit */
    assert_int_equal(kt_cuda_ffd_quantize(stream, dtype, &s, inst->dev_inputs[1], &dc), KT_OK);
    uint8_t *codes = malloc(kt_ffd_codes_bytes(c) + 1),
            *resid = malloc(kt_ffd_residual_bytes(c) + 1);
    float *scales = malloc(kt_ffd_scales_bytes(c) + 1);
    dev_get(&d, codes, dc.codes, kt_ffd_codes_bytes(c));
    dev_get(&d, scales, dc.scales, kt_ffd_scales_bytes(c));
    dev_get(&d, resid, dc.residual, kt_ffd_residual_bytes(c));
    assert_memory_equal(codes, c->codes, kt_ffd_codes_bytes(c));
    assert_memory_equal(scales, c->scales, kt_ffd_scales_bytes(c));
    assert_memory_equal(resid, c->residual, kt_ffd_residual_bytes(c));

    assert_int_equal(kt_cuda_ffd_attend(stream, dtype, &s, inst->dev_inputs[0], inst->dev_inputs[1],
                                        inst->dev_inputs[2], inst->dev_outputs[0], &dc, fc->delta,
                                        fc->split_blocks, scan_fp32, block_max, keep, &part),
                     KT_OK);
    float *bm = malloc(sizeof(float) * (size_t)(n_blocks * group) + 1);
    uint8_t *kept = malloc((size_t)n_blocks + 1);
    dev_get(&d, bm, block_max, sizeof(float) * (size_t)(n_blocks * group));
    dev_get(&d, kept, keep, (size_t)n_blocks);
    assert_int_equal(kt_instance_download_outputs(inst, b), KT_OK);

    /* every block maximum within the scan's bound of the exact one */
    for (int64_t i = 0; i < n_blocks * group; i++)
        if (!(fabs((double)bm[i] - e.block_max[i]) <= e.bound[i]))
            fail_msg("ffd scan %s d%lld: block max %lld is %.9g, exact %.9g, bound %.3g",
                     mma ? "mma" : "fp32", (long long)fc->head_dim, (long long)i, bm[i],
                     e.block_max[i], e.bound[i]);
    /* the decisions of kt_ffd_reference, and whole splits dropped somewhere */
    assert_int_equal(e.ambiguous, 0);
    int64_t n_kept = 0, empty_splits = 0;
    for (int64_t i = 0; i < n_blocks; i++) {
        if (kept[i] != e.kept[i])
            fail_msg("ffd block %lld: device %s, reference %s", (long long)i,
                     kept[i] ? "kept" : "dropped", e.kept[i] ? "kept" : "dropped");
        n_kept += kept[i] != 0;
    }
    for (int64_t bg = 0; bg < fc->batch * fc->kv_heads; bg++)
        for (int64_t s0 = 0; s0 < c->n_full; s0 += fc->split_blocks) {
            int any = 0;
            for (int64_t j = s0; j < s0 + fc->split_blocks && j < c->n_full; j++)
                any |= kept[bg * c->n_full + j];
            empty_splits += !any;
        }
    assert_int_equal(n_kept, e.n_kept);
    assert_int_equal(empty_splits, e.empty_splits);
    assert_true(n_kept > 0 && n_kept < n_blocks); /* llm caches: some dropped, some kept */
    assert_true(empty_splits > 0);
    /* the output: kt_ffd_reference's, to the CPU variant's agreement */
    double e2 = 0, r2 = 0;
    for (size_t i = 0; i < out_n; i++) {
        double y = kt_dtype_load(inst->host_outputs[0], dtype, i);
        e2 += (y - e.out[i]) * (y - e.out[i]);
        r2 += e.out[i] * e.out[i];
    }
    if (!(sqrt(e2 / r2) <= tol))
        fail_msg("ffd d%lld G%lld %s scan %s: rel_l2 %.3g against kt_ffd_reference (limit %.3g)",
                 (long long)fc->head_dim, (long long)group, kt_dtype_name(dtype),
                 mma ? "mma" : "fp32", sqrt(e2 / r2), tol);
    print_message("ffd d%lld G%lld %s scan %s: kept %lld/%lld, %lld empty splits, rel_l2 %.3g\n",
                  (long long)fc->head_dim, (long long)group, kt_dtype_name(dtype),
                  mma ? "mma" : "fp32", (long long)n_kept, (long long)n_blocks,
                  (long long)empty_splits, sqrt(e2 / r2));
    free(codes);
    free(resid);
    free(scales);
    free(bm);
    free(kept);
    dev_free(&d);
    kt_ffd_expect_free(&e);
    kt_instance_free(inst, b);
    kt_backend_close(b);
}

static void test_attention_ffd_policy(void **state)
{
    (void)state;
    /* tests/kernels/test_ffd.c's limits for the CPU variant against the same reference */
    const double tols[N_DTYPES] = {1e-5, 1e-3, 5e-3};
    for (size_t i = 0; i < KT_FFD_GPU_CASES; i++)
        for (int d = 0; d < N_DTYPES; d++)
            for (int scan_fp32 = 0; scan_fp32 < 2; scan_fp32++)
                check_ffd_policy(&kt_ffd_gpu_cases[i], dtypes[d], scan_fp32, tols[d]);
}

/* ---- swiglu_mlp ------------------------------------------------------------------------- */

static void run_swiglu(const char *variant, const kt_param_value *params)
{
    const int64_t batches[] = {1, 5, 70};
    kt_model m = test_model(200, 5, 1, 40, 333);
    for (int d = 0; d < N_DTYPES; d++)
        for (size_t b = 0; b < sizeof(batches) / sizeof(batches[0]); b++) {
            kt_point p = test_point(m, batches[b], 0, KT_ROLE_NONE);
            /* two GEMMs and a rounded intermediate: twice the one-GEMM bound */
            check_variant("swiglu_mlp", variant, &p, dtypes[d], params, 2 * tolerance(dtypes[d]));
        }
}

static void test_swiglu_unfused(void **state)
{
    (void)state;
    run_swiglu("unfused", NULL);
}

static void test_swiglu_fused(void **state)
{
    (void)state;
    kt_param_value tensor[3] = {{32}, {0}, {4}}, fp32[3] = {{32}, {1}, {4}};
    run_swiglu("fused", tensor);
    run_swiglu("fused", fp32);
}

/* ---- the small case for compute-sanitizer ---------------------------------------------- */

/* One small call of every kernel (both dense kernels, quantize, both scans, attend, merge,
 * both GEMM paths, fused SwiGLU, cuBLASLt, the L2 flush), checked against float64. */
static void test_small(void **state)
{
    (void)state;
    const attn_case c = {16, 2, 128, 2, 300};
    kt_point p = attn_point(&c);
    kt_param_value dense[2][2] = {{{0}, {1}}, {{0}, {0}}};
    kt_param_value ffd[2][4] = {{{5}, {64}, {2}, {0}}, {{5}, {64}, {2}, {1}}};
    for (int i = 0; i < 2; i++) {
        check_variant("attention_decode", "dense", &p, KT_DTYPE_BF16, dense[i], 2e-2);
        kt_test_result r = kt_test_run("cuda", "attention_decode", "ffd", &p, KT_DTYPE_BF16,
                                       KT_DIST_LLM, ffd[i], NULL, 3, 1);
        assert_int_equal(r.status, KT_OK);
        assert_int_equal(r.numerics.unwritten, 0);
        assert_int_equal(r.numerics.nonfinite, 0);
    }
    kt_model m = test_model(200, 5, 1, 40, 333);
    kt_point g = test_point(m, 3, 0, KT_ROLE_GATE_UP);
    kt_param_value tensor[2] = {{0}, {4}}, fp32[2] = {{1}, {4}};
    check_variant("gemm", "deterministic", &g, KT_DTYPE_BF16, tensor, 2e-2);
    check_variant("gemm", "deterministic", &g, KT_DTYPE_BF16, fp32, 2e-2);
    check_variant("gemm", "cublaslt", &g, KT_DTYPE_BF16, NULL, 2e-2);
    kt_point sw = test_point(m, 3, 0, KT_ROLE_NONE);
    check_variant("swiglu_mlp", "fused", &sw, KT_DTYPE_BF16, NULL, 4e-2);
    kt_backend *b = NULL;
    assert_int_equal(kt_backend_open(&b, "cuda", 1, 1), KT_OK);
    assert_int_equal(kt_backend_flush_cache(b), KT_OK);
    assert_int_equal(kt_backend_synchronize(b), KT_OK);
    kt_backend_close(b);
}

int main(int argc, char **argv)
{
    const kt_backend_iface *cuda = kt_backend_find("cuda");
    kt_device_info info;
    if (!cuda) {
        printf("skipped: this build has no cuda backend\n");
        return 77;
    }
    if (cuda->probe(&info) < 0 || !info.available) {
        printf("skipped: %s\n", info.reason);
        return 77;
    }
    if (argc > 1 && strcmp(argv[1], "--small") == 0) {
        const struct CMUnitTest small[] = {cmocka_unit_test(test_small)};
        return cmocka_run_group_tests(small, NULL, NULL);
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_small),
        cmocka_unit_test(test_gemm_cublaslt),
        cmocka_unit_test(test_gemm_cublaslt_tf32),
        cmocka_unit_test(test_gemm_deterministic),
        cmocka_unit_test(test_gemm_deterministic_bitwise),
        cmocka_unit_test(test_attention_dense),
        cmocka_unit_test(test_attention_ffd_all_kept),
        cmocka_unit_test(test_attention_ffd_policy),
        cmocka_unit_test(test_swiglu_unfused),
        cmocka_unit_test(test_swiglu_fused),
        cmocka_unit_test(test_swiglu_fused_bitwise),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
