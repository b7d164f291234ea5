/* test_attention.c - the attention_decode op and its CPU variants against the float64 reference
 * on awkward shapes (T < block, T = 1, tails of 0, odd and block-1 tokens, GQA groups 1, 2, 3,
 * 4, 5, 6, 7, 8, 12, 17 and 40, head_dim 8/16/40/64/72/80/96/112/128/160/192/256/520/1024, batch
 * 1, 2, 3 and 7) in every storage type, through the runner's correctness path, with isa avx2
 * and, where the CPU has it, avx512. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "kernels/harness.h"

#include <math.h>
#include <stdlib.h>

typedef struct shape {
    int64_t heads, kv_heads, head_dim, batch, context;
} shape;

static const shape shapes[] = {
    {4, 4, 64, 1, 1},      /* T = 1, group 1 */
    {14, 2, 64, 3, 100},   /* T < block, group 7, batch 3 */
    {16, 2, 128, 1, 128},  /* exactly one block, group 8 */
    {4, 2, 256, 1, 256},   /* tail 0, group 2, head_dim 256 */
    {8, 2, 128, 3, 383},   /* tail of block - 1 tokens, group 4 */
    {14, 2, 128, 1, 1500}, /* two splits of 1024, group 7 */
    {6, 2, 40, 1, 300},    /* head_dim 40: no 16- or 64-channel fast paths */
    {9, 3, 128, 2, 777},   /* group 3, odd tail (9 tokens), batch 2 */
    {10, 2, 64, 1, 1025},  /* group 5, a second split of one token */
    {17, 1, 64, 1, 201},   /* group 17: more heads than one softmax tree (16) and P V tile (8) */
    {12, 2, 96, 1, 333},   /* head_dim 96 (phi-3): 32-channel passes, not 64 */
    {12, 4, 80, 2, 97},    /* head_dim 80: 16-channel rows, no 32-channel path, group 3 */
};

static const kt_dtype dtypes[] = {KT_DTYPE_FP32, KT_DTYPE_FP16, KT_DTYPE_BF16};

/* Largest rel_l2 against float64 per storage type: fp32 arithmetic is far below 1e-5; fp16
 * and bf16 outputs carry their own rounding (unit roundoff 2^-11 and 2^-8). */
static double tolerance(kt_dtype dtype)
{
    switch (dtype) {
    case KT_DTYPE_FP16:
        return 2e-3;
    case KT_DTYPE_BF16:
        return 1e-2;
    default:
        return 1e-5;
    }
}

/* FFD refines kept keys with an fp8 e4m3 residual (relative error <= 2^-4 of |r| <= scale/2),
 * so even with every block kept its scores differ from the stored keys' by a few hundredths. */
#define FFD_ALL_BLOCKS_TOL 3e-2

enum { ISA_AVX2 = 1, ISA_AVX512 = 2 }; /* the 'isa' param's choices auto|avx2|avx512 */

/* Whether this CPU runs the AVX-512 paths (what kt_attn_isa_resolve asks). */
static int cpu_has_avx512(void)
{
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
}

/* The isa values to test: avx2, then avx512 when the CPU has it (else says it skipped it). */
static int test_isas(int *isas)
{
    isas[0] = ISA_AVX2;
    if (cpu_has_avx512()) {
        isas[1] = ISA_AVX512;
        return 2;
    }
    print_message("isa avx512 skipped: this CPU has no AVX-512\n");
    return 1;
}

/* The params of 'variant': its defaults, the first n_params - 1 (all but the trailing 'isa')
 * from 'params' when not NULL, and isa 'isa'. */
static void variant_params(kt_param_value *out, const char *variant, const kt_param_value *params,
                           int isa)
{
    const kt_variant *v = kt_variant_find("attention_decode", "cpu", variant);
    assert_non_null(v);
    int at = kt_param_index(v->params, v->n_params, "isa");
    assert_int_equal(at, v->n_params - 1);
    kt_param_defaults(out, v->params, v->n_params);
    if (params)
        memcpy(out, params, sizeof(*out) * (size_t)at);
    out[at].num = isa;
}

static kt_point make_point(const shape *s)
{
    kt_point pt;
    memset(&pt, 0, sizeof(pt));
    snprintf(pt.model.name, sizeof(pt.model.name), "test-h%lld-kv%lld-d%lld", (long long)s->heads,
             (long long)s->kv_heads, (long long)s->head_dim);
    pt.model.heads = s->heads;
    pt.model.kv_heads = s->kv_heads;
    pt.model.head_dim = s->head_dim;
    pt.model.hidden = s->heads * s->head_dim;
    pt.batch_size = s->batch;
    pt.context_length = s->context;
    snprintf(pt.id, sizeof(pt.id), "%s/b%lld/t%lld", pt.model.name, (long long)s->batch,
             (long long)s->context);
    return pt;
}

static void assert_clean(const kt_test_result *r, const char *what)
{
    if (r->status != KT_OK)
        fail_msg("%s: status %d: %s", what, r->status, r->error);
    if (r->numerics.unwritten || r->numerics.nonfinite || r->numerics.inputs_modified)
        fail_msg("%s: unwritten %lld nonfinite %lld inputs_modified %d", what,
                 (long long)r->numerics.unwritten, (long long)r->numerics.nonfinite,
                 r->numerics.inputs_modified);
}

/* 'params': the variant's params but 'isa' (NULL: defaults); runs every isa of test_isas on
 * the 'n' shapes of 'list'. */
static void check_variant_on(const shape *list, size_t n, const char *variant,
                             const kt_param_value *params, double extra_tol, kt_distribution dist)
{
    int isas[2], n_isas = test_isas(isas);
    for (int k = 0; k < n_isas; k++) {
        kt_param_value pv[KT_MAX_PARAMS];
        variant_params(pv, variant, params, isas[k]);
        for (size_t i = 0; i < n; i++) {
            for (size_t j = 0; j < sizeof(dtypes) / sizeof(dtypes[0]); j++) {
                kt_point pt = make_point(&list[i]);
                kt_test_result r = kt_test_run("cpu", "attention_decode", variant, &pt, dtypes[j],
                                               dist, pv, NULL, 11 + i, 2);
                char what[256];
                snprintf(what, sizeof(what), "%s isa %d %s %s", variant, isas[k], pt.id,
                         kt_dtype_name(dtypes[j]));
                assert_clean(&r, what);
                double tol = tolerance(dtypes[j]) + extra_tol;
                if (!(r.numerics.rel_l2 <= tol) || !(r.numerics.cosine >= 1.0 - tol))
                    fail_msg("%s: rel_l2 %.3g cosine %.9f (tolerance %.3g)", what,
                             r.numerics.rel_l2, r.numerics.cosine, tol);
            }
        }
    }
}

/* check_variant_on the shapes of the table at the top. */
static void check_variant(const char *variant, const kt_param_value *params, double extra_tol,
                          kt_distribution dist)
{
    check_variant_on(shapes, sizeof(shapes) / sizeof(shapes[0]), variant, params, extra_tol, dist);
}

static void test_dense_matches_reference(void **state)
{
    (void)state;
    check_variant("dense", NULL, 0, KT_DIST_NORMAL);
    check_variant("dense", NULL, 0, KT_DIST_LLM);
}

/* head_dims and groups no catalog model has: 8 and 16 (fewer channels than a 32-lane pass),
 * 72, 112, 160 and 192 (multiples of 8 or 16 but not of 64), 520 and the largest, 1024; groups
 * of 6, 12 (heads 12, kv 1) and 40; batch 7; contexts of 1, 2, 63, 65 and 129 tokens (split 64:
 * a merge of up to 3 splits); FFD at block 16 so that these contexts have full blocks. */
static void test_unusual_head_dims(void **state)
{
    (void)state;
    static const shape odd[] = {
        {4, 2, 8, 3, 65},   {12, 1, 16, 1, 63},   {6, 1, 72, 7, 129}, {12, 2, 112, 1, 2},
        {5, 5, 160, 2, 65}, {7, 1, 192, 1, 129},  {3, 3, 520, 1, 33}, {2, 1, 1024, 2, 65},
        {40, 1, 72, 1, 1},  {12, 1, 256, 1, 127},
    };
    const size_t n = sizeof(odd) / sizeof(odd[0]);
    kt_param_value dense[3] = {{64}, {0}, {0}}; /* split 64, max_splits 0, bf16_dot auto */
    check_variant_on(odd, n, "dense", dense, 0, KT_DIST_LLM);
    /* delta 1000 (every block), block 16, split 64, fp8 keys, scan auto, max_splits 0 */
    kt_param_value all[8] = {{1000}, {16}, {64}, {0}, {0}, {0}, {0}, {8}};
    check_variant_on(odd, n, "ffd", all, FFD_ALL_BLOCKS_TOL, KT_DIST_NORMAL);
    all[3].num = 1; /* stored keys: dense's accuracy */
    check_variant_on(odd, n, "ffd", all, 0, KT_DIST_LLM);
}

static void test_dense_small_split(void **state)
{
    (void)state;
    /* many splits, exactly 16 tokens each (max_splits 0): exercises the log-sum-exp merge */
    kt_param_value split[3] = {{16}, {0}, {0}};
    check_variant("dense", split, 0, KT_DIST_LLM);
}

static void test_ffd_all_blocks_matches_reference(void **state)
{
    (void)state;
    /* delta 1000: every block kept; fp8 keys, scan auto, no phase times, splits as given */
    kt_param_value p[7] = {{1000}, {128}, {1024}, {0}, {0}, {0}, {0}};
    check_variant("ffd", p, FFD_ALL_BLOCKS_TOL, KT_DIST_NORMAL);
    p[2].num = 256; /* splits of two blocks */
    check_variant("ffd", p, FFD_ALL_BLOCKS_TOL, KT_DIST_LLM);
}

static void test_ffd_short_context_is_dense(void **state)
{
    (void)state;
    /* T < block (default 64): nothing is quantised, FFD attends the tail densely like 'dense' */
    shape s = {14, 2, 64, 3, 50};
    kt_point pt = make_point(&s);
    kt_test_result r = kt_test_run("cpu", "attention_decode", "ffd", &pt, KT_DTYPE_FP32,
                                   KT_DIST_LLM, NULL, NULL, 3, 1);
    assert_clean(&r, "ffd short");
    assert_true(r.numerics.rel_l2 < 1e-5);
    assert_int_equal(r.n_metrics, 4);
    assert_string_equal(r.metrics[1].name, "blocks_total");
    assert_true(r.metrics[1].value == 0);
}

/* delta 0 keeps what reaches the pseudo-max itself: at least the block (0 or the last full one)
 * that set each head's. With one full block and no tail (T = 16 at block 16) that is every
 * block, so the output is dense's; with more blocks and splits of one block (empty splits in the
 * merge) it is still finite. The float scan's bound used to round above the score that set the
 * threshold, the block was dropped and a head with no tail attended nothing: NaN (groups of 1,
 * head_dim 24 and 8, every dtype). */
static void test_ffd_delta_zero_keeps_pseudo_max_blocks(void **state)
{
    (void)state;
    static const shape cases[] = {
        {3, 3, 24, 7, 16}, {3, 3, 24, 7, 32}, {4, 4, 8, 3, 16},   {6, 2, 40, 2, 32},
        {4, 4, 64, 3, 16}, {3, 3, 24, 7, 64}, {2, 1, 24, 5, 128}, {4, 4, 64, 3, 64},
    };
    /* delta 0, block 16, split 16, stored keys, scan auto, no phase times, max_splits 0 */
    const kt_param_value p[8] = {{0}, {16}, {16}, {1}, {0}, {0}, {0}, {8}};
    int isas[2], n_isas = test_isas(isas);
    for (int k = 0; k < n_isas; k++) {
        kt_param_value pv[KT_MAX_PARAMS];
        variant_params(pv, "ffd", p, isas[k]);
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
            for (size_t j = 0; j < sizeof(dtypes) / sizeof(dtypes[0]); j++) {
                for (uint64_t seed = 1; seed <= 4; seed++) {
                    kt_point pt = make_point(&cases[i]);
                    kt_test_result r = kt_test_run("cpu", "attention_decode", "ffd", &pt, dtypes[j],
                                                   KT_DIST_LLM, pv, NULL, seed, 2);
                    char what[256];
                    snprintf(what, sizeof(what), "ffd delta 0 isa %d %s %s seed %llu", isas[k],
                             pt.id, kt_dtype_name(dtypes[j]), (unsigned long long)seed);
                    assert_clean(&r, what);
                    if (cases[i].context == 16 && !(r.numerics.rel_l2 <= tolerance(dtypes[j])))
                        fail_msg("%s: rel_l2 %.3g, its one block kept (tolerance %.3g)", what,
                                 r.numerics.rel_l2, tolerance(dtypes[j]));
                }
            }
        }
    }
}

/* Runs 'variant' on 'pt' (llm inputs, fp32) and returns a malloc'd copy of the output. */
/* The output of one call of 'variant' on llm inputs in storage type 'dtype', as floats. */
static float *run_output_dtype(const char *variant, const kt_point *pt,
                               const kt_param_value *params, int threads, kt_dtype dtype,
                               size_t *n_out)
{
    const kt_op *op = kt_op_find("attention_decode");
    const kt_variant *v = kt_variant_find("attention_decode", "cpu", variant);
    assert_non_null(op);
    assert_non_null(v);
    kt_param_value defaults[KT_MAX_PARAMS], in[KT_MAX_PARAMS];
    kt_param_defaults(defaults, v->params, v->n_params);
    kt_param_defaults(in, op->input_params, op->n_input_params);
    kt_backend *b = NULL;
    kt_instance *inst = NULL;
    void *st = NULL;
    assert_int_equal(kt_backend_open(&b, "cpu", threads, 1), KT_OK);
    assert_int_equal(kt_instance_create(&inst, b, op, pt, dtype, KT_DIST_LLM, in, 99), KT_OK);
    kt_call call = kt_instance_call(inst, b, params ? params : defaults, threads);
    assert_int_equal(v->prepare(&st, &call), KT_OK);
    kt_numerics num;
    assert_int_equal(kt_check_call(&num, inst, v, st, &call), KT_OK);
    const kt_tensor *t = &inst->problem.tensors[inst->problem.n_inputs];
    *n_out = (size_t)kt_tensor_elems(t);
    float *out = malloc(*n_out * sizeof(float));
    assert_non_null(out);
    for (size_t i = 0; i < *n_out; i++)
        out[i] = kt_dtype_load(inst->host_outputs[0], dtype, i);
    v->release(st, b);
    kt_instance_free(inst, b);
    kt_backend_close(b);
    return out;
}

static float *run_output(const char *variant, const kt_point *pt, const kt_param_value *params,
                         int threads, size_t *n_out)
{
    return run_output_dtype(variant, pt, params, threads, KT_DTYPE_FP32, n_out);
}

/* rel_l2 of 'a' against 'b' (n values). */
static double rel_l2(const float *a, const float *b, size_t n)
{
    double e2 = 0, r2 = 0;
    for (size_t j = 0; j < n; j++) {
        e2 += ((double)a[j] - b[j]) * ((double)a[j] - b[j]);
        r2 += (double)b[j] * b[j];
    }
    return sqrt(e2 / r2);
}

enum { BF16_DOT_AUTO, BF16_DOT_OFF, BF16_DOT_SCORES }; /* dense's 'bf16_dot' choices */

/* bf16_dot auto (AVX-512 BF16 scores and P V, query and weights rounded to bf16), scores (the
 * scores only) and off (keys and values widened to fp32) all match the float64 reference on
 * every shape, and on a CPU with AVX-512 BF16 they are three different paths: on groups of 8, 7
 * and 3 heads their bf16 outputs differ somewhere, by far less than the tolerance. */
static void test_dense_bf16_dot(void **state)
{
    (void)state;
    const int modes[] = {BF16_DOT_AUTO, BF16_DOT_SCORES, BF16_DOT_OFF};
    for (int m = 0; m < 3; m++) {
        kt_param_value p[3] = {{1024}, {8}, {modes[m]}}; /* split, max_splits, bf16_dot */
        check_variant("dense", p, 0, KT_DIST_LLM);
    }
    if (!cpu_has_avx512() || !__builtin_cpu_supports("avx512bf16")) {
        print_message("bf16_dot comparison skipped: this CPU has no AVX-512 BF16\n");
        return;
    }
    const shape cmp[] = {{32, 4, 128, 1, 3000}, {28, 4, 128, 2, 2049}, {12, 4, 64, 1, 999}};
    for (size_t i = 0; i < sizeof(cmp) / sizeof(cmp[0]); i++) {
        kt_point pt = make_point(&cmp[i]);
        float *out[3];
        size_t n[3];
        for (int m = 0; m < 3; m++) {
            kt_param_value p[3] = {{1024}, {8}, {modes[m]}}, pv[KT_MAX_PARAMS];
            variant_params(pv, "dense", p, ISA_AVX512);
            out[m] = run_output_dtype("dense", &pt, pv, 2, KT_DTYPE_BF16, &n[m]);
            assert_int_equal(n[m], n[0]);
        }
        for (int m = 0; m < 2; m++) {
            double e = rel_l2(out[m], out[m + 1], n[0]);
            if (!(e > 0 && e < tolerance(KT_DTYPE_BF16)))
                fail_msg("%s: bf16_dot %d against %d: rel_l2 %.3g", pt.id, modes[m], modes[m + 1],
                         e);
        }
        for (int m = 0; m < 3; m++)
            free(out[m]);
    }
}

/* max_splits: 9000 tokens in splits of 1024 would be 9 > 8, so split doubles to 2048: the same
 * bits as an exact split of 2048 (max_splits 0), and other bits than an exact 1024 (a different
 * merge), in fp32 where the paths sum alike otherwise. 'asked' are the variant's params before
 * isa for those three cases. */
static void check_max_splits_doubles_split(const char *variant, kt_param_value asked[3][8])
{
    const shape s = {14, 2, 64, 1, 9000};
    kt_point pt = make_point(&s);
    float *out[3];
    size_t n[3];
    for (int m = 0; m < 3; m++) {
        kt_param_value pv[KT_MAX_PARAMS];
        variant_params(pv, variant, asked[m], 0); /* isa auto */
        out[m] = run_output_dtype(variant, &pt, pv, 2, KT_DTYPE_FP32, &n[m]);
        assert_int_equal(n[m], n[0]);
    }
    assert_memory_equal(out[0], out[1], n[0] * sizeof(float));
    assert_true(memcmp(out[0], out[2], n[0] * sizeof(float)) != 0);
    for (int m = 0; m < 3; m++)
        free(out[m]);
}

static void test_dense_max_splits_doubles_split(void **state)
{
    (void)state;
    kt_param_value asked[3][8] = {{{1024}, {8}, {0}}, {{2048}, {0}, {0}}, {{1024}, {0}, {0}}};
    check_max_splits_doubles_split("dense", asked);
}

/* The same for ffd (delta 9, 64-token blocks, stored keys, scan auto): each task's int8 step
 * comes from its own blocks, so this also checks that the kept blocks do not depend on it. */
static void test_ffd_max_splits_doubles_split(void **state)
{
    (void)state;
    kt_param_value asked[3][8] = {{{9}, {64}, {1024}, {1}, {0}, {0}, {8}},
                                  {{9}, {64}, {2048}, {1}, {0}, {0}, {0}},
                                  {{9}, {64}, {1024}, {1}, {0}, {0}, {0}}};
    check_max_splits_doubles_split("ffd", asked);
}

/* Fixed splits and a fixed merge order: for each isa the same bits for 1 and 2 threads, and
 * batch row 0 of a batch of 3 equals a batch of 1 (llm inputs of row 0 do not depend on the
 * batch size). The two isas sum in different orders, so their outputs differ in the last bits
 * (which shows that 'isa' picks the path) while agreeing to fp32 accuracy. */
static void test_independent_of_threads_and_batch(void **state)
{
    (void)state;
    const char *variants[] = {"dense", "ffd"};
    int isas[2], n_isas = test_isas(isas);
    for (int i = 0; i < 2; i++) {
        float *first = NULL;
        for (int k = 0; k < n_isas; k++) {
            kt_param_value pv[KT_MAX_PARAMS];
            variant_params(pv, variants[i], NULL, isas[k]);
            shape s3 = {8, 2, 64, 3, 2500}, s1 = {8, 2, 64, 1, 2500};
            kt_point p3 = make_point(&s3), p1 = make_point(&s1);
            size_t n1, n2, n3;
            float *a = run_output(variants[i], &p3, pv, 1, &n1);
            float *b = run_output(variants[i], &p3, pv, 2, &n2);
            float *c = run_output(variants[i], &p1, pv, 2, &n3);
            assert_int_equal(n1, n2);
            assert_memory_equal(a, b, n1 * sizeof(float));
            assert_memory_equal(a, c, n3 * sizeof(float));
            if (first) {
                double e = rel_l2(a, first, n1);
                assert_true(e > 0 && e < 1e-5);
                free(a);
            } else {
                first = a;
            }
            free(b);
            free(c);
        }
        free(first);
    }
}

/* isa avx512 on a CPU without AVX-512 is unsupported, not a silent fallback; with it, fine. */
static void test_isa_avx512_needs_the_cpu(void **state)
{
    (void)state;
    const char *variants[] = {"dense", "ffd"};
    shape s = {8, 2, 64, 1, 300};
    kt_point pt = make_point(&s);
    for (int i = 0; i < 2; i++) {
        kt_param_value pv[KT_MAX_PARAMS];
        variant_params(pv, variants[i], NULL, ISA_AVX512);
        kt_test_result r = kt_test_run("cpu", "attention_decode", variants[i], &pt, KT_DTYPE_FP32,
                                       KT_DIST_NORMAL, pv, NULL, 1, 1);
        if (cpu_has_avx512()) {
            assert_clean(&r, variants[i]);
        } else {
            assert_int_equal(r.status, KT_EUNSUPPORTED);
            assert_non_null(strstr(r.error, "avx512"));
        }
    }
}

static void test_shape_errors(void **state)
{
    (void)state;
    const kt_op *op = kt_op_find("attention_decode");
    assert_non_null(op);
    kt_problem p;
    shape bad_group = {10, 4, 64, 1, 16};
    kt_point pt = make_point(&bad_group);
    assert_int_equal(op->shape(&p, &pt, KT_DTYPE_FP32, NULL), KT_EINVAL);
    assert_non_null(strstr(kt_error_last(), "not a multiple of kv_heads"));
    shape good = {32, 8, 128, 2, 4096};
    pt = make_point(&good);
    assert_int_equal(op->shape(&p, &pt, KT_DTYPE_BF16, NULL), KT_OK);
    assert_int_equal(p.n_inputs, 3);
    assert_int_equal(p.n_outputs, 1);
    assert_true(p.flops == 4.0 * 2 * 32 * 4096 * 128);
    double kv = 2.0 * 2 * 8 * 4096 * 128 * 2, qo = 2.0 * 2 * 32 * 128 * 2;
    assert_true(p.bytes == kv + qo);
    /* head_dim not a multiple of 8: the CPU kernels say unsupported, not wrong */
    shape odd = {4, 2, 36, 1, 64};
    pt = make_point(&odd);
    kt_test_result r = kt_test_run("cpu", "attention_decode", "dense", &pt, KT_DTYPE_FP32,
                                   KT_DIST_NORMAL, NULL, NULL, 1, 1);
    assert_int_equal(r.status, KT_EUNSUPPORTED);
}

/* The llm generator plants sinks: with the defaults the first tokens carry a large part of
 * the attention mass, unlike plain normal inputs where every token weighs about 1/T. */
static void test_llm_inputs_are_peaked(void **state)
{
    (void)state;
    const kt_op *op = kt_op_find("attention_decode");
    shape s = {4, 1, 64, 1, 2048};
    kt_point pt = make_point(&s);
    kt_problem p;
    assert_int_equal(op->shape(&p, &pt, KT_DTYPE_FP32, NULL), KT_OK);
    double mass[2];
    for (int dist = 0; dist < 2; dist++) {
        float *in[3];
        for (int i = 0; i < 3; i++)
            in[i] = malloc(kt_tensor_bytes(&p.tensors[i]));
        kt_param_value ip[KT_MAX_PARAMS];
        kt_param_defaults(ip, op->input_params, op->n_input_params);
        kt_input_config cfg = {dist ? KT_DIST_LLM : KT_DIST_NORMAL, 5, ip};
        assert_int_equal(op->generate(&p, (void *const *)in, &cfg), KT_OK);
        double m = -INFINITY, l = 0, sink = 0, s_t[2048];
        for (int t = 0; t < 2048; t++) {
            double dot = 0;
            for (int c = 0; c < 64; c++) {
                assert_true(in[1][t * 64 + c] != 0.0f);
                dot += in[0][c] * in[1][t * 64 + c];
            }
            s_t[t] = dot / 8.0;
            m = fmax(m, s_t[t]);
        }
        for (int t = 0; t < 2048; t++) {
            l += exp(s_t[t] - m);
            if (t < 4)
                sink += exp(s_t[t] - m);
        }
        mass[dist] = sink / l;
        for (int i = 0; i < 3; i++)
            free(in[i]);
    }
    assert_true(mass[0] < 0.02);
    assert_true(mass[1] > 0.2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dense_matches_reference),
        cmocka_unit_test(test_dense_small_split),
        cmocka_unit_test(test_unusual_head_dims),
        cmocka_unit_test(test_dense_bf16_dot),
        cmocka_unit_test(test_dense_max_splits_doubles_split),
        cmocka_unit_test(test_ffd_max_splits_doubles_split),
        cmocka_unit_test(test_ffd_all_blocks_matches_reference),
        cmocka_unit_test(test_ffd_short_context_is_dense),
        cmocka_unit_test(test_ffd_delta_zero_keeps_pseudo_max_blocks),
        cmocka_unit_test(test_independent_of_threads_and_batch),
        cmocka_unit_test(test_isa_avx512_needs_the_cpu),
        cmocka_unit_test(test_shape_errors),
        cmocka_unit_test(test_llm_inputs_are_peaked),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
