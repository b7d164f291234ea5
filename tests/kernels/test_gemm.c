/* test_gemm.c - the CPU gemm variants against the float64 reference on awkward and real
 * shapes in every storage type, and the deterministic variant's bitwise invariances. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "gemm_tolerance.h"
#include "harness.h"

#include <stdlib.h>

static const kt_dtype dtypes[] = {KT_DTYPE_FP32, KT_DTYPE_FP16, KT_DTYPE_BF16};
static const kt_role roles[] = {KT_ROLE_QKV, KT_ROLE_O, KT_ROLE_GATE_UP, KT_ROLE_DOWN};

/* Odd everything: no dimension is a multiple of a vector, a tile or a block. */
static const kt_model tiny = {"tiny", 67, 3, 1, 13, 101, 2};
static const kt_model qwen05 = {"qwen2.5-0.5b", 896, 14, 2, 64, 4864, 24};

static uint64_t case_seed(void)
{
    static uint64_t n;
    return kt_seed_mix(0x67656d6d, ++n);
}

static kt_point make_point(const kt_model *md, int64_t batch, int64_t context, kt_phase phase,
                           kt_role role)
{
    kt_point p;
    memset(&p, 0, sizeof(p));
    p.model = *md;
    p.batch_size = batch;
    p.context_length = context;
    p.phase = phase;
    p.role = role;
    snprintf(p.id, sizeof(p.id), "%s/%s/%s/b%lld/t%lld", md->name, kt_role_name(role),
             kt_phase_name(phase), (long long)batch, (long long)context);
    return p;
}

/* Runs 'variant' at 'point' and asserts every correctness property. */
static void check_variant(const char *variant, const kt_point *point, kt_dtype dtype,
                          kt_distribution dist, const kt_param_value *params)
{
    kt_problem prob;
    assert_int_equal(kt_op_find("gemm")->shape(&prob, point, dtype, NULL), KT_OK);
    uint64_t seed = case_seed();
    kt_test_result r =
        kt_test_run("cpu", "gemm", variant, point, dtype, dist, params, NULL, seed, 2);
    double limit = kt_test_rel_l2_limit(dtype, 1, prob.k);
    if (r.status != KT_OK || r.numerics.rel_l2 > limit || getenv("KT_TEST_VERBOSE"))
        print_message("%s %s %s M=%lld N=%lld K=%lld seed %llu: status %d '%s' rel_l2 %.3g "
                      "(limit %.3g) cosine %.9f\n",
                      variant, point->id, kt_dtype_name(dtype), (long long)prob.m,
                      (long long)prob.n, (long long)prob.k, (unsigned long long)seed, r.status,
                      r.error, r.numerics.rel_l2, limit, r.numerics.cosine);
    assert_int_equal(r.status, KT_OK);
    assert_int_equal(r.numerics.elems, prob.m * prob.n);
    assert_int_equal(r.numerics.unwritten, 0);
    assert_int_equal(r.numerics.nonfinite, 0);
    assert_int_equal(r.numerics.inputs_modified, 0);
    assert_true(r.numerics.rel_l2 <= limit);
    assert_true(r.numerics.cosine > KT_TEST_MIN_COSINE);
}

/* Every awkward shape and one real projection in each of the 'n' storage types 'dts'. */
static void check_awkward_in(const char *variant, const kt_param_value *params, const kt_dtype *dts,
                             size_t n)
{
    static const int64_t batches[] = {1, 3, 17, 64};
    for (size_t i = 0; i < n; i++) {
        size_t d = (size_t)dts[i];
        for (size_t r = 0; r < 4; r++) {
            for (size_t b = 0; b < 4; b++) {
                kt_point p = make_point(&tiny, batches[b], 0, KT_PHASE_DECODE, roles[r]);
                check_variant(variant, &p, dtypes[d], KT_DIST_NORMAL, params);
            }
            kt_point p = make_point(&tiny, 2, 5, KT_PHASE_PREFILL, roles[r]);
            check_variant(variant, &p, dtypes[d], KT_DIST_LLM, params);
            check_variant(variant, &p, dtypes[d], KT_DIST_UNIFORM, params);
        }
        /* one real projection per dtype (generating 10^7 inputs costs a second: not all) */
        kt_point real = make_point(&qwen05, 1, 0, KT_PHASE_DECODE, roles[(d + 2) % 4]);
        check_variant(variant, &real, dtypes[d], KT_DIST_LLM, params);
    }
}

static void check_awkward(const char *variant, const kt_param_value *params)
{
    check_awkward_in(variant, params, dtypes, 3);
}

static void test_blas(void **state)
{
    (void)state;
    check_awkward("blas", NULL);
}

static void test_tiled(void **state)
{
    (void)state;
    check_awkward("tiled", NULL);
    /* more than 128 rows: kc auto packs 384 deep, so K = 896 is 384 + 384 + 128 */
    kt_point p = make_point(&qwen05, 2, 100, KT_PHASE_PREFILL, KT_ROLE_O);
    for (size_t d = 0; d < 3; d++)
        check_variant("tiled", &p, dtypes[d], KT_DIST_LLM, NULL);
}

/* Blocks smaller than the shapes: several row, column and depth blocks, partial ones at
 * every edge, and depth blocks that are not a multiple of the 8 x 8 packing transpose. */
static void test_tiled_small_blocks(void **state)
{
    (void)state;
    const kt_param_value small[7] = {{12}, {32}, {20}, {0}, {2}, {0}, {0}};
    check_awkward("tiled", small);
    /* rounded to 12, 64; kc 9; nc-wide column blocks, prefetch beyond every block */
    const kt_param_value odd[7] = {{7}, {17}, {9}, {0}, {8}, {1}, {0}};
    kt_point p = make_point(&tiny, 17, 0, KT_PHASE_DECODE, KT_ROLE_DOWN);
    for (size_t d = 0; d < 3; d++)
        check_variant("tiled", &p, dtypes[d], KT_DIST_NORMAL, odd);
}

/* The AVX2 microkernel, which auto does not pick on an AVX-512 machine (and the reverse on
 * one without: then this repeats test_tiled). */
static void test_tiled_avx2(void **state)
{
    (void)state;
    const kt_param_value avx2[7] = {{96}, {256}, {256}, {1}, {2}, {0}, {0}};
    check_awkward("tiled", avx2);
    const kt_param_value small[7] = {{12}, {32}, {20}, {1}, {1}, {1}, {0}};
    kt_point p = make_point(&tiny, 17, 0, KT_PHASE_DECODE, KT_ROLE_GATE_UP);
    for (size_t d = 0; d < 3; d++)
        check_variant("tiled", &p, dtypes[d], KT_DIST_NORMAL, small);
}

#ifdef KT_HAVE_ONEDNN
/* oneDNN 2.6 has CPU matmul kernels for fp32 and bf16; fp16 needs AVX512-FP16 kernels it
 * does not have, and says so instead of computing something else. */
static void test_onednn(void **state)
{
    (void)state;
    static const kt_dtype native[] = {KT_DTYPE_FP32, KT_DTYPE_BF16};
    check_awkward_in("onednn", NULL, native, 2);
    kt_point p = make_point(&tiny, 3, 0, KT_PHASE_DECODE, KT_ROLE_O);
    kt_test_result r = kt_test_run("cpu", "gemm", "onednn", &p, KT_DTYPE_FP16, KT_DIST_NORMAL, NULL,
                                   NULL, case_seed(), 2);
    /* validation asks the same question without making the primitive, and must agree */
    for (int t = 0; t < 3; t++) {
        static const kt_dtype all[] = {KT_DTYPE_FP32, KT_DTYPE_BF16, KT_DTYPE_FP16};
        kt_problem pr;
        assert_int_equal(kt_op_shape(kt_op_find("gemm"), &pr, &p, all[t], NULL), KT_OK);
        int check = kt_variant_check_problem(kt_variant_find("gemm", "cpu", "onednn"), NULL, &pr);
        assert_int_equal(check, all[t] == KT_DTYPE_FP16 ? r.status : KT_OK);
        if (check < 0)
            assert_string_equal(kt_error_last(), r.error);
    }
    if (r.status == KT_OK) {
        check_variant("onednn", &p, KT_DTYPE_FP16, KT_DIST_NORMAL, NULL);
        return;
    }
    assert_int_equal(r.status, KT_EUNSUPPORTED);
    assert_non_null(strstr(r.error, "fp16"));
}
#endif

static void test_deterministic(void **state)
{
    (void)state;
    check_awkward("deterministic", NULL);
}

/* Degenerate and skinny shapes the catalog never has: N, K and M of 1, 2, 3, 7 and 33, one
 * column or one depth against 129 or 1000 of the other, in every role, on every variant
 * (oneDNN in the types it has). */
static void test_degenerate_dims(void **state)
{
    (void)state;
    static const kt_model models[] = {
        {"one", 1, 1, 1, 1, 1, 1},         {"n1-k1000", 1, 1, 1, 1, 1000, 1},
        {"n1000-k1", 1000, 1, 1, 1, 1, 1}, {"n129-k2", 129, 1, 1, 2, 2, 1},
        {"n2-k129", 2, 1, 1, 3, 129, 1},   {"n7-k33", 7, 3, 3, 1, 33, 1},
    };
    static const int64_t rows[] = {1, 2, 7, 33};
    const kt_param_value avx2[7] = {{96}, {256}, {256}, {1}, {2}, {0}, {0}};
    static const char *const variants[] = {"blas", "tiled", "tiled", "deterministic", "onednn"};
    for (size_t v = 0; v < sizeof(variants) / sizeof(variants[0]); v++) {
        const kt_param_value *params = v == 2 ? avx2 : NULL;
        if (!kt_variant_find("gemm", "cpu", variants[v]))
            continue; /* onednn: not in this build */
        for (size_t d = 0; d < 3; d++) {
            if (v == 4 && dtypes[d] == KT_DTYPE_FP16)
                continue; /* oneDNN 2.6 has no fp16 CPU matmul (test_onednn) */
            for (size_t i = 0; i < sizeof(models) / sizeof(models[0]); i++) {
                for (size_t r = 0; r < 4; r++) {
                    kt_point p =
                        make_point(&models[i], rows[(i + r) % 4], 0, KT_PHASE_DECODE, roles[r]);
                    check_variant(variants[v], &p, dtypes[d], KT_DIST_NORMAL, params);
                }
                kt_point p = make_point(&models[i], 3, 11, KT_PHASE_PREFILL, KT_ROLE_DOWN);
                check_variant(variants[v], &p, dtypes[d], KT_DIST_LLM, params);
            }
        }
    }
}

/* Runs 'variant' (with 'params', NULL: the defaults) directly on host buffers (the CPU
 * backend's memory is host memory) with 'm' rows of 'x'. */
static void run_rows(const char *variant, const kt_param_value *params, void *y, const void *x,
                     const void *w, const kt_problem *full, int64_t m, int threads, kt_backend *b)
{
    const kt_variant *v = kt_variant_find("gemm", "cpu", variant);
    assert_non_null(v);
    kt_param_value defaults[KT_MAX_PARAMS];
    kt_param_defaults(defaults, v->params, v->n_params);
    kt_problem p = *full;
    p.m = m;
    p.tensors[0].dims[0] = m;
    p.tensors[2].dims[0] = m;
    const void *inputs[2] = {x, w};
    void *outputs[1] = {y};
    kt_call call;
    memset(&call, 0, sizeof(call));
    call.backend = b;
    call.problem = &p;
    call.params = params ? params : defaults;
    call.inputs = inputs;
    call.outputs = outputs;
    call.threads = threads;
    call.pair_position = -1;
    void *st = NULL;
    assert_int_equal(v->prepare(&st, &call), KT_OK);
    assert_int_equal(v->run(st, &call), KT_OK);
    v->release(st, b);
}

static void det_run(void *y, const void *x, const void *w, const kt_problem *full, int64_t m,
                    int threads, kt_backend *b)
{
    run_rows("deterministic", NULL, y, x, w, full, m, threads, b);
}

/* Batch invariance (every row of the batch-M product equals the batch-1 product of that
 * row, bit for bit), repeatability, and thread-count invariance. */
static void test_deterministic_bitwise(void **state)
{
    (void)state;
    const kt_point points[] = {
        make_point(&tiny, 37, 0, KT_PHASE_DECODE, KT_ROLE_DOWN),
        make_point(&tiny, 2, 5, KT_PHASE_PREFILL, KT_ROLE_QKV),
        make_point(&qwen05, 9, 0, KT_PHASE_DECODE, KT_ROLE_O),
    };
    kt_backend *b = NULL;
    assert_int_equal(kt_backend_open(&b, "cpu", 2, 1), KT_OK);
    for (size_t d = 0; d < 3; d++) {
        for (size_t i = 0; i < sizeof(points) / sizeof(points[0]); i++) {
            kt_problem p;
            assert_int_equal(kt_op_find("gemm")->shape(&p, &points[i], dtypes[d], NULL), KT_OK);
            size_t es = kt_dtype_size(dtypes[d]);
            size_t row_bytes = (size_t)p.n * es;
            void *x = malloc(kt_tensor_bytes(&p.tensors[0]));
            void *w = malloc(kt_tensor_bytes(&p.tensors[1]));
            char *y2 = malloc(kt_tensor_bytes(&p.tensors[2]));
            char *y1 = malloc(kt_tensor_bytes(&p.tensors[2]));
            char *y0 = malloc(kt_tensor_bytes(&p.tensors[2]));
            void *inputs[2] = {x, w};
            kt_input_config cfg = {KT_DIST_LLM, case_seed(), NULL};
            assert_int_equal(kt_op_find("gemm")->generate(&p, inputs, &cfg), KT_OK);

            det_run(y2, x, w, &p, p.m, 2, b);
            det_run(y1, x, w, &p, p.m, 1, b);
            assert_memory_equal(y1, y2, kt_tensor_bytes(&p.tensors[2]));
            det_run(y1, x, w, &p, p.m, 2, b);
            assert_memory_equal(y1, y2, kt_tensor_bytes(&p.tensors[2]));
            for (int64_t r = 0; r < p.m; r++) {
                det_run(y0, (const char *)x + (size_t)(r * p.k) * es, w, &p, 1, 2, b);
                assert_memory_equal(y0, y2 + (size_t)r * row_bytes, row_bytes);
            }
            /* a batch of 5 starting at row 3 sees other neighbours in its tiles */
            if (p.m >= 8) {
                det_run(y0, (const char *)x + (size_t)(3 * p.k) * es, w, &p, 5, 1, b);
                assert_memory_equal(y0, y2 + 3 * row_bytes, 5 * row_bytes);
            }
            free(x);
            free(w);
            free(y0);
            free(y1);
            free(y2);
        }
    }
    kt_backend_close(b);
}

/* How tiled cuts the columns (split even or blocks, 1 to 3 threads, finer with x packed once),
 * how far it prefetches and whether x is packed once per call or per block change which thread
 * computes a column, not how: the products are bitwise equal. And a row
 * computed in a partial micro-panel (mr = 1..5 rows) equals the same row computed alone or in
 * a full panel, so the tails take the full tile's order of operations. */
static void test_tiled_split_bitwise(void **state)
{
    (void)state;
    /* gate_up: 2000 columns, 31.25 panels of 64 (125 of 16); qkv: 280 columns */
    static const kt_model wide = {"wide", 200, 5, 1, 40, 1000, 1};
    const kt_point points[] = {
        make_point(&wide, 13, 0, KT_PHASE_DECODE, KT_ROLE_GATE_UP),
        make_point(&wide, 17, 0, KT_PHASE_DECODE, KT_ROLE_QKV),
        make_point(&tiny, 11, 0, KT_PHASE_DECODE, KT_ROLE_DOWN),
        /* 41 rows: x packed once (from 32 rows), 4 row blocks of 12, the last of 5 rows */
        make_point(&wide, 41, 0, KT_PHASE_DECODE, KT_ROLE_GATE_UP),
        make_point(&tiny, 37, 0, KT_PHASE_DECODE, KT_ROLE_QKV),
    };
    /* mc 12 gives a second row block with 1 (M 13) or 5 (M 17) rows; nc 192: 3 panels of 64;
     * x packed per block */
    const kt_param_value ref[7] = {{12}, {192}, {24}, {0}, {0}, {1}, {1}};
    const struct {
        int threads;
        kt_param_value params[7];
    } others[] = {
        {2, {{12}, {192}, {24}, {0}, {2}, {0}, {1}}},
        {3, {{12}, {192}, {24}, {0}, {8}, {0}, {0}}},
        {3, {{12}, {192}, {24}, {0}, {1}, {1}, {0}}},
        {2, {{264}, {512}, {24}, {0}, {2}, {0}, {0}}},
        {1, {{264}, {512}, {24}, {0}, {2}, {0}, {0}}},
        {2, {{264}, {512}, {24}, {0}, {2}, {0}, {1}}},
    };
    static const kt_dtype dts[] = {KT_DTYPE_FP32, KT_DTYPE_BF16};
    kt_backend *b = NULL;
    assert_int_equal(kt_backend_open(&b, "cpu", 3, 1), KT_OK);
    for (size_t d = 0; d < 2; d++) {
        for (size_t i = 0; i < sizeof(points) / sizeof(points[0]); i++) {
            kt_problem p;
            assert_int_equal(kt_op_find("gemm")->shape(&p, &points[i], dts[d], NULL), KT_OK);
            size_t es = kt_dtype_size(dts[d]), bytes = kt_tensor_bytes(&p.tensors[2]);
            size_t row_bytes = (size_t)p.n * es;
            void *x = malloc(kt_tensor_bytes(&p.tensors[0]));
            void *w = malloc(kt_tensor_bytes(&p.tensors[1]));
            char *y0 = malloc(bytes), *y1 = malloc(bytes);
            void *inputs[2] = {x, w};
            kt_input_config cfg = {KT_DIST_NORMAL, case_seed(), NULL};
            assert_int_equal(kt_op_find("gemm")->generate(&p, inputs, &cfg), KT_OK);
            run_rows("tiled", ref, y0, x, w, &p, p.m, 1, b);
            for (size_t o = 0; o < sizeof(others) / sizeof(others[0]); o++) {
                memset(y1, 0xff, bytes);
                run_rows("tiled", others[o].params, y1, x, w, &p, p.m, others[o].threads, b);
                assert_memory_equal(y0, y1, bytes);
            }
            for (int64_t r = 0; r < p.m; r++) {
                run_rows("tiled", ref, y1, (const char *)x + (size_t)(r * p.k) * es, w, &p, 1, 2,
                         b);
                assert_memory_equal(y1, y0 + (size_t)r * row_bytes, row_bytes);
            }
            free(x);
            free(w);
            free(y0);
            free(y1);
        }
    }
    kt_backend_close(b);
}

/* The blas variant's fp32 staging for 16-bit storage is allocated through the backend, so
 * the runner's memory figures see it; fp32 needs none. */
static void test_blas_staging_is_counted(void **state)
{
    (void)state;
    kt_point p = make_point(&tiny, 3, 0, KT_PHASE_DECODE, KT_ROLE_GATE_UP);
    kt_test_result r32 = kt_test_run("cpu", "gemm", "blas", &p, KT_DTYPE_FP32, KT_DIST_NORMAL, NULL,
                                     NULL, case_seed(), 1);
    kt_test_result r16 = kt_test_run("cpu", "gemm", "blas", &p, KT_DTYPE_BF16, KT_DIST_NORMAL, NULL,
                                     NULL, case_seed(), 1);
    assert_int_equal(r32.status, KT_OK);
    assert_int_equal(r16.status, KT_OK);
    assert_int_equal(r32.variant_bytes, 0);
    assert_int_equal(r16.variant_bytes, (3 * 67 + 202 * 67 + 3 * 202) * sizeof(float));
}

/* pack_x shared reserves x's packed copy through the backend, rows rounded up to the
 * microkernel's 6, from 32 rows: 40 rows of depth 67 take 42 x 67 floats more than per block;
 * 17 rows take nothing more. */
static void test_tiled_shared_x_is_counted(void **state)
{
    (void)state;
    kt_param_value shared[KT_MAX_PARAMS], per_block[KT_MAX_PARAMS];
    const kt_variant *v = kt_variant_find("gemm", "cpu", "tiled");
    kt_param_defaults(shared, v->params, v->n_params);
    kt_param_defaults(per_block, v->params, v->n_params);
    int at = kt_param_index(v->params, v->n_params, "pack_x");
    assert_true(at >= 0);
    assert_int_equal(shared[at].num, 0);
    per_block[at].num = 1;
    static const int64_t rows[] = {40, 17};
    static const size_t more[] = {42 * 67 * sizeof(float), 0};
    for (size_t i = 0; i < 2; i++) {
        kt_point p = make_point(&tiny, rows[i], 0, KT_PHASE_DECODE, KT_ROLE_GATE_UP);
        kt_test_result a = kt_test_run("cpu", "gemm", "tiled", &p, KT_DTYPE_FP32, KT_DIST_NORMAL,
                                       shared, NULL, case_seed(), 2);
        kt_test_result b = kt_test_run("cpu", "gemm", "tiled", &p, KT_DTYPE_FP32, KT_DIST_NORMAL,
                                       per_block, NULL, case_seed(), 2);
        assert_int_equal(a.status, KT_OK);
        assert_int_equal(b.status, KT_OK);
        assert_int_equal(a.variant_bytes - b.variant_bytes, more[i]);
    }
}

static void test_shapes(void **state)
{
    (void)state;
    static const struct {
        kt_role role;
        int64_t n, k;
    } want[] = {
        {KT_ROLE_QKV, (14 + 2 * 2) * 64, 896},
        {KT_ROLE_O, 896, 14 * 64},
        {KT_ROLE_GATE_UP, 2 * 4864, 896},
        {KT_ROLE_DOWN, 896, 4864},
    };
    for (size_t i = 0; i < 4; i++) {
        kt_point pt = make_point(&qwen05, 4, 100, KT_PHASE_PREFILL, want[i].role);
        kt_problem p;
        assert_int_equal(kt_op_find("gemm")->shape(&p, &pt, KT_DTYPE_BF16, NULL), KT_OK);
        assert_int_equal(p.m, 400);
        assert_int_equal(p.n, want[i].n);
        assert_int_equal(p.k, want[i].k);
        assert_true(p.flops == 2.0 * 400 * want[i].n * want[i].k);
        assert_true(p.bytes ==
                    2.0 * (400.0 * want[i].k + want[i].n * want[i].k + 400.0 * want[i].n));
        pt.phase = KT_PHASE_DECODE;
        assert_int_equal(kt_op_find("gemm")->shape(&p, &pt, KT_DTYPE_BF16, NULL), KT_OK);
        assert_int_equal(p.m, 4);
    }
    kt_point none = make_point(&qwen05, 1, 0, KT_PHASE_DECODE, KT_ROLE_NONE);
    kt_problem p;
    assert_int_equal(kt_op_find("gemm")->shape(&p, &none, KT_DTYPE_FP32, NULL), KT_EINVAL);
    kt_point zero = make_point(&qwen05, 0, 0, KT_PHASE_DECODE, KT_ROLE_O);
    assert_int_equal(kt_op_find("gemm")->shape(&p, &zero, KT_DTYPE_FP32, NULL), KT_EINVAL);
}

/* Weights have std 1/sqrt(K); llm activations carry outlier_fraction * K channels scaled by
 * outlier_scale; nothing is zero. */
static void test_inputs(void **state)
{
    (void)state;
    kt_point pt = make_point(&qwen05, 64, 0, KT_PHASE_DECODE, KT_ROLE_O);
    kt_problem p;
    assert_int_equal(kt_op_find("gemm")->shape(&p, &pt, KT_DTYPE_FP32, NULL), KT_OK);
    float *x = malloc(kt_tensor_bytes(&p.tensors[0]));
    float *w = malloc(kt_tensor_bytes(&p.tensors[1]));
    void *inputs[2] = {x, w};
    kt_param_value ip[2] = {{0.01}, {20}};
    kt_input_config cfg = {KT_DIST_LLM, 5, ip};
    assert_int_equal(kt_op_find("gemm")->generate(&p, inputs, &cfg), KT_OK);
    double w2 = 0;
    for (int64_t i = 0; i < p.n * p.k; i++) {
        assert_true(w[i] != 0.0f);
        w2 += (double)w[i] * w[i];
    }
    double w_std = sqrt(w2 / (double)(p.n * p.k));
    assert_true(fabs(w_std * sqrt((double)p.k) - 1.0) < 0.01);
    int outliers = 0;
    for (int64_t c = 0; c < p.k; c++) {
        double s2 = 0;
        for (int64_t r = 0; r < p.m; r++) {
            assert_true(x[r * p.k + c] != 0.0f);
            s2 += (double)x[r * p.k + c] * x[r * p.k + c];
        }
        outliers += sqrt(s2 / (double)p.m) > 8.0; /* N(0,1) channels: rms near 1 */
    }
    assert_int_equal(outliers, 9); /* round(0.01 * 896) */
    free(x);
    free(w);
}

int main(int argc, char **argv)
{
    if (argc > 1)
        cmocka_set_test_filter(argv[1]);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shapes),
        cmocka_unit_test(test_inputs),
        cmocka_unit_test(test_blas),
        cmocka_unit_test(test_tiled),
        cmocka_unit_test(test_tiled_small_blocks),
        cmocka_unit_test(test_tiled_avx2),
#ifdef KT_HAVE_ONEDNN
        cmocka_unit_test(test_onednn),
#endif
        cmocka_unit_test(test_deterministic),
        cmocka_unit_test(test_degenerate_dims),
        cmocka_unit_test(test_deterministic_bitwise),
        cmocka_unit_test(test_tiled_split_bitwise),
        cmocka_unit_test(test_tiled_shared_x_is_counted),
        cmocka_unit_test(test_blas_staging_is_counted),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
