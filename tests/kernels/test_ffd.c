/* test_ffd.c - the FFD key quantiser (ffd_quant.h) and the CPU 'ffd' variant against the
 * float64 same-policy reference: same quantised cache, same pseudo-max and block selection,
 * exact arithmetic on the refined keys; with isa avx2 and, where the CPU has it, avx512. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "arm/kernel/check.h"
#include "ffd_quant.h"
#include "cpu/ffd_scan_int8.h"
#include "kernel.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static void test_scale_and_codes(void **state)
{
    (void)state;
    assert_true(kt_ffd_scale(3.0f) == 2.0f);
    assert_true(kt_ffd_scale(0.0f) == 1e-8f);
    /* k / scale + 1.5 lands exactly on .5 for k in {-1, 0, 1} with scale 1: ties to even */
    assert_int_equal(kt_ffd_code(-1.0f, 1.0f), 0); /* 0.5 -> 0 */
    assert_int_equal(kt_ffd_code(0.0f, 1.0f), 2);  /* 1.5 -> 2 */
    assert_int_equal(kt_ffd_code(1.0f, 1.0f), 2);  /* 2.5 -> 2 */
    assert_int_equal(kt_ffd_code(-1.5f, 1.0f), 0);
    assert_int_equal(kt_ffd_code(1.5f, 1.0f), 3);
    assert_int_equal(kt_ffd_code(0.6f, 1.0f), 2);
    assert_int_equal(kt_ffd_code(-0.6f, 1.0f), 1);
    assert_int_equal(kt_ffd_code(100.0f, 1.0f), 3); /* clamped */
    assert_int_equal(kt_ffd_code(-100.0f, 1.0f), 0);
    /* a NaN or infinite key (a decode step whose earlier stage overflowed) still gets a code,
     * without converting NaN to int (UBSan: "left shift of negative value" when packed) */
    assert_int_equal(kt_ffd_code(NAN, 1.0f), 0);
    assert_int_equal(kt_ffd_code(INFINITY, kt_ffd_scale(INFINITY)), 0);
    assert_int_equal(kt_ffd_code(INFINITY, 1.0f), 3);
    assert_int_equal(kt_ffd_code(-INFINITY, 1.0f), 0);
    assert_int_equal(kt_ffd_code(1.0f, kt_ffd_scale(INFINITY)), 2);
}

/* A random block: every code in 0..3, packed channel 4i+m in bits 2m..2m+1, scales from the
 * column maxima, and dequant + residual within fp8 rounding of the stored key. */
static void test_block_round_trip(void **state)
{
    (void)state;
    enum { T = 37, D = 64 };
    float keys[T * D];
    kt_rng rng;
    kt_rng_seed(&rng, 5);
    for (int i = 0; i < T * D; i++)
        keys[i] = (float)(kt_rng_normal(&rng) * (1 + i % D)); /* channel magnitudes differ */
    uint8_t codes[T * D / 4], residual[T * D];
    float scales[D];
    kt_ffd_quantize_block(codes, scales, residual, keys, KT_DTYPE_FP32, T, D);
    int seen[4] = {0};
    for (int c = 0; c < D; c++) {
        float mx = 0;
        for (int t = 0; t < T; t++)
            mx = fmaxf(mx, fabsf(keys[t * D + c]));
        assert_true(scales[c] == fmaxf(mx / 1.5f, 1e-8f));
        for (int t = 0; t < T; t++) {
            float k = keys[t * D + c];
            int code = kt_ffd_code_at(codes + t * (D / 4), c);
            assert_int_equal(code, (codes[t * (D / 4) + c / 4] >> (2 * (c % 4))) & 3);
            assert_int_equal(code, kt_ffd_code(k, scales[c]));
            seen[code]++;
            double dq = (code - 1.5) * scales[c];
            double r = kt_fp8_e4m3_to_fp32(residual[t * D + c]);
            assert_true(fabs(k - dq) <= 0.5 * scales[c] * (1 + 1e-6)); /* nearest code */
            /* fp8 e4m3: relative 2^-4 above 2^-6, absolute 2^-10 below */
            assert_true(fabs(k - (dq + r)) <= fmax(fabs(k - dq) * 0.0625, ldexp(1.0, -10)));
        }
    }
    for (int i = 0; i < 4; i++)
        assert_true(seen[i] > 0);
}

static void test_cache_layout(void **state)
{
    (void)state;
    kt_ffd_cache c;
    assert_int_equal(kt_ffd_cache_shape(&c, 2, 3, 300, 64, 128), KT_OK);
    assert_int_equal(c.n_full, 2);
    assert_int_equal(kt_ffd_codes_bytes(&c), 2 * 3 * 256 * 16);
    assert_int_equal(kt_ffd_scales_bytes(&c), 2 * 3 * 2 * 64 * sizeof(float));
    assert_int_equal(kt_ffd_residual_bytes(&c), 2 * 3 * 256 * 64);
    assert_int_equal(kt_ffd_cache_shape(&c, 1, 1, 10, 62, 128), KT_EINVAL);
}

typedef struct policy_case {
    int64_t heads, kv_heads, head_dim, batch, context;
    kt_dtype dtype;
    double delta, max_rel_l2; /* against the same-policy reference */
    int isa;                  /* the variant's 'isa' param: 1 avx2, 2 avx512 */
    int keys;                 /* the variant's 'keys' param: 0 fp8 (the reference's), 1 stored */
    int scan;                 /* the variant's 'scan' param: 0 auto, 1 float, 2 int8 */
} policy_case;

/* The scan values to test: float (1), then int8 (2) when the CPU has AVX-512 VNNI. */
static int test_scans(int *scans)
{
    scans[0] = 1;
    if (kt_ffd_int8_supported()) {
        scans[1] = 2;
        return 2;
    }
    print_message("scan int8 skipped: this CPU has no AVX-512 VNNI\n");
    return 1;
}

/* The isa values to test: avx2 (1), then avx512 (2) when the CPU has it (else says so). */
static int test_isas(int *isas)
{
    isas[0] = 1;
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl")) {
        isas[1] = 2;
        return 2;
    }
    print_message("isa avx512 skipped: this CPU has no AVX-512\n");
    return 1;
}

/* Runs the cpu 'ffd' variant on llm inputs and compares its output with kt_ffd_reference on a
 * cache quantised from the same stored keys; the kept-block count must match exactly, and no
 * decision may be within 1e-3 (log2 units) of flipping, or the comparison would be luck. */
static void check_policy(const policy_case *pc, double *kept_fraction, double *rel_l2)
{
    const kt_op *op = kt_op_find("attention_decode");
    const kt_variant *v = kt_variant_find("attention_decode", "cpu", "ffd");
    assert_non_null(op);
    assert_non_null(v);
    kt_point pt;
    memset(&pt, 0, sizeof(pt));
    pt.model.heads = pc->heads;
    pt.model.kv_heads = pc->kv_heads;
    pt.model.head_dim = pc->head_dim;
    pt.batch_size = pc->batch;
    pt.context_length = pc->context;
    kt_param_value in[KT_MAX_PARAMS],
        params[9] = {{pc->delta}, {128}, {512}, {pc->keys}, {pc->scan}, {1}, {0}, {8}, {pc->isa}};
    assert_int_equal(v->n_params, 9);
    assert_int_equal(kt_param_index(v->params, v->n_params, "keys"), 3);
    assert_int_equal(kt_param_index(v->params, v->n_params, "scan"), 4);
    assert_int_equal(kt_param_index(v->params, v->n_params, "phase_times"), 5);
    assert_int_equal(kt_param_index(v->params, v->n_params, "max_splits"), 6);
    assert_int_equal(kt_param_index(v->params, v->n_params, "kept_fetch"), 7);
    assert_int_equal(kt_param_index(v->params, v->n_params, "isa"), 8);
    kt_param_defaults(in, op->input_params, op->n_input_params);
    kt_backend *b = NULL;
    kt_instance *inst = NULL;
    void *st = NULL;
    assert_int_equal(kt_backend_open(&b, "cpu", 2, 1), KT_OK);
    assert_int_equal(kt_instance_create(&inst, b, op, &pt, pc->dtype, KT_DIST_LLM, in, 21), KT_OK);
    kt_call call = kt_instance_call(inst, b, params, 2);
    assert_int_equal(v->prepare(&st, &call), KT_OK);
    kt_numerics num;
    assert_int_equal(kt_check_call(&num, inst, v, st, &call), KT_OK);
    assert_int_equal(num.unwritten, 0);
    assert_int_equal(num.nonfinite, 0);
    assert_int_equal(num.inputs_modified, 0);
    kt_metric m[KT_MAX_METRICS];
    assert_int_equal(v->metrics(st, m, KT_MAX_METRICS), 8);
    assert_string_equal(m[2].name, "rescanned_fraction");
    assert_true(m[2].value >= 0.0 && m[2].value <= 1.0);
    assert_string_equal(m[3].name, "scan_int8");
    assert_true(m[3].value == (pc->scan == 2 ? 1.0 : pc->scan == 1 ? 0.0 : m[3].value));
    if (pc->scan == 1)
        assert_true(m[2].value == 0.0);
    for (int i = 4; i < 8; i++) /* the phase times of the call kt_check_call made */
        assert_true(m[i].value > 0.0 && m[i].value < 60e6);

    kt_ffd_cache c;
    assert_int_equal(
        kt_ffd_cache_shape(&c, pc->batch, pc->kv_heads, pc->context, pc->head_dim, 128), KT_OK);
    c.codes = malloc(kt_ffd_codes_bytes(&c) + 1);
    c.scales = malloc(kt_ffd_scales_bytes(&c) + 1);
    c.residual = malloc(kt_ffd_residual_bytes(&c) + 1);
    kt_ffd_quantize_cache(&c, inst->host_inputs[1], pc->dtype);
    size_t n = (size_t)(pc->batch * pc->heads * pc->head_dim);
    double *ref = malloc(n * sizeof(double)), margin;
    int64_t kept =
        kt_ffd_reference(ref, NULL, &margin, &c, inst->host_inputs[0], inst->host_inputs[1],
                         inst->host_inputs[2], pc->dtype, pc->heads, pc->delta);
    assert_true(kept >= 0);
    assert_true(margin > 1e-3);
    assert_true(m[1].value == (double)(pc->batch * pc->kv_heads * c.n_full));
    assert_true(fabs(m[0].value * m[1].value - (double)kept) < 1e-6);
    double e2 = 0, r2 = 0;
    for (size_t i = 0; i < n; i++) {
        double y = kt_dtype_load(inst->host_outputs[0], pc->dtype, i);
        e2 += (y - ref[i]) * (y - ref[i]);
        r2 += ref[i] * ref[i];
    }
    *rel_l2 = num.rel_l2; /* against exact float64 attention */
    if (pc->keys == 0 && !(sqrt(e2 / r2) < pc->max_rel_l2))
        fail_msg("ffd vs same-policy reference: rel_l2 %.3g (limit %.3g), kept %lld", sqrt(e2 / r2),
                 pc->max_rel_l2, (long long)kept);
    *kept_fraction = m[0].value;
    free(ref);
    free(c.codes);
    free(c.scales);
    free(c.residual);
    v->release(st, b);
    kt_instance_free(inst, b);
    kt_backend_close(b);
}

static void test_matches_same_policy_reference(void **state)
{
    (void)state;
    /* the output rounding of fp16 and bf16 bounds their agreement (2^-11, 2^-8) */
    policy_case cases[] = {
        {32, 8, 64, 1, 4096 + 37, KT_DTYPE_FP32, 5, 1e-5, 0, 0, 0},
        {14, 2, 64, 1, 4096 + 37, KT_DTYPE_FP32, 5, 1e-5, 0, 0, 0}, /* qwen2.5-0.5b: GQA 7 */
        {14, 2, 128, 2, 2000, KT_DTYPE_FP32, 5, 1e-5, 0, 0, 0},
        {16, 2, 128, 1, 1024, KT_DTYPE_FP32, 7, 1e-5, 0, 0, 0},
        {8, 1, 256, 1, 1500, KT_DTYPE_FP32, 5, 1e-5, 0, 0, 0},
        {6, 2, 96, 1, 1000, KT_DTYPE_FP32, 5, 1e-5, 0, 0,
         0}, /* head_dim % 64 != 0: variable-shift scan */
        {32, 8, 64, 1, 3000, KT_DTYPE_FP16, 5, 1e-3, 0, 0, 0},
        {32, 8, 64, 1, 3000, KT_DTYPE_BF16, 5, 5e-3, 0, 0, 0},
    };
    int isas[2], n_isas = test_isas(isas), scans[2], n_scans = test_scans(scans);
    for (int k = 0; k < n_isas; k++) {
        for (int j = 0; j < n_scans; j++) {
            for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                double kept, err;
                cases[i].isa = isas[k];
                cases[i].scan = scans[j];
                check_policy(&cases[i], &kept, &err);
                /* llm inputs: sparse selection, neither nothing nor everything */
                assert_true(kept > 0.0 && kept < 0.9);
            }
        }
    }
}

static void test_huge_delta_keeps_everything(void **state)
{
    (void)state;
    int isas[2], n_isas = test_isas(isas);
    for (int k = 0; k < n_isas; k++) {
        policy_case pc = {14, 2, 128, 1, 2000, KT_DTYPE_FP32, 1000, 1e-5, isas[k], 0, 0};
        double kept, err;
        check_policy(&pc, &kept, &err);
        assert_true(kept == 1.0);
    }
}

/* keys: stored attends the kept blocks with the stored keys: the same blocks are kept as with
 * fp8 refinement (the scan decides), and the error against exact attention is only what the
 * dropped blocks carried: below fp8's, and under the 2e-2 target on llm caches where fp8's
 * residual alone costs about 0.02 (README). */
static void test_stored_keys(void **state)
{
    (void)state;
    policy_case cases[] = {
        {32, 8, 64, 1, 8192, KT_DTYPE_BF16, 5, 5e-3, 0, 0, 0},
        {14, 2, 64, 1, 8192, KT_DTYPE_BF16, 5, 5e-3, 0, 0, 0},
        {16, 8, 256, 1, 4096 + 77, KT_DTYPE_BF16, 5, 5e-3, 0, 0, 0},
        {28, 4, 128, 2, 3000, KT_DTYPE_FP32, 5, 1e-5, 0, 0, 0},
    };
    int isas[2], n_isas = test_isas(isas);
    for (int k = 0; k < n_isas; k++) {
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
            double kept_fp8, err_fp8, kept_stored, err_stored;
            policy_case pc = cases[i];
            pc.isa = isas[k];
            check_policy(&pc, &kept_fp8, &err_fp8);
            pc.keys = 1;
            check_policy(&pc, &kept_stored, &err_stored);
            if (getenv("KT_TEST_VERBOSE"))
                print_message("d %lld g %lld: kept %.3f, rel_l2 fp8 %.4f stored %.4f\n",
                              (long long)pc.head_dim, (long long)(pc.heads / pc.kv_heads),
                              kept_stored, err_fp8, err_stored);
            assert_true(kept_stored == kept_fp8);
            assert_true(err_stored < err_fp8);
            assert_true(err_stored <= 2e-2);
        }
    }
}

/* Prepares the cpu ffd variant with 'params' on 'inst', runs it through kt_check_call and
 * copies its output into 'out' and its metrics into 'm'; returns prepare's code. */
static int run_ffd(void *out, kt_metric *m, kt_instance *inst, kt_backend *b,
                   const kt_param_value *params)
{
    const kt_variant *v = kt_variant_find("attention_decode", "cpu", "ffd");
    void *st = NULL;
    kt_call call = kt_instance_call(inst, b, params, 2);
    int err = v->prepare(&st, &call);
    if (err == KT_OK) {
        kt_numerics num;
        assert_int_equal(kt_check_call(&num, inst, v, st, &call), KT_OK);
        assert_int_equal(num.nonfinite, 0);
        memcpy(out, inst->host_outputs[0],
               (size_t)(inst->problem.batch * inst->problem.heads * inst->problem.head_dim) *
                   kt_dtype_size(inst->problem.dtype));
        assert_int_equal(v->metrics(st, m, KT_MAX_METRICS), 4);
    }
    v->release(st, b);
    return err;
}

/* The int8 scan with its exact bound keeps exactly the blocks the float scan keeps, so the
 * outputs are bit-identical, on the catalog's awkward shapes (GQA 7, head_dim 64 and 256, odd
 * contexts), on shapes the catalog lacks (groups of 3 heads at head_dim 64 and 128, 7 heads at
 * 256, 6 heads at 96, 2 at 80), at blocks of 128 and 64 with contexts not a multiple of either,
 * from very tight to loose deltas; and its bound decides most blocks itself. */
static void test_int8_selects_as_float(void **state)
{
    (void)state;
    int scans[2];
    if (test_scans(scans) < 2)
        return;
    struct {
        int64_t heads, kv_heads, head_dim, context, block;
    } shapes[] = {
        {32, 8, 64, 4096 + 37, 128}, {14, 2, 64, 4096 + 129, 128}, {16, 8, 256, 3000 + 1, 128},
        {28, 4, 128, 5000, 128},     {8, 1, 128, 2048, 128},       {12, 4, 64, 4096 + 45, 64},
        {6, 2, 128, 3000 + 7, 64},   {21, 3, 256, 2000 + 33, 64},  {14, 2, 64, 4096 + 1, 64},
        {12, 2, 96, 3000 + 5, 128},  {8, 4, 80, 2000 + 3, 64}};
    double deltas[] = {0.25, 2, 5, 9, 14};
    const kt_op *op = kt_op_find("attention_decode");
    kt_backend *b = NULL;
    assert_int_equal(kt_backend_open(&b, "cpu", 2, 1), KT_OK);
    double rescanned = 0, blocks = 0;
    for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
        kt_point pt;
        memset(&pt, 0, sizeof(pt));
        pt.model.heads = shapes[i].heads;
        pt.model.kv_heads = shapes[i].kv_heads;
        pt.model.head_dim = shapes[i].head_dim;
        pt.batch_size = 1;
        pt.context_length = shapes[i].context;
        kt_param_value in[KT_MAX_PARAMS];
        kt_param_defaults(in, op->input_params, op->n_input_params);
        kt_instance *inst = NULL;
        assert_int_equal(
            kt_instance_create(&inst, b, op, &pt, KT_DTYPE_BF16, KT_DIST_LLM, in, 33 + i), KT_OK);
        size_t bytes = (size_t)(shapes[i].heads * shapes[i].head_dim) * 2;
        void *out_f = malloc(bytes), *out_i = malloc(bytes);
        for (size_t k = 0; k < sizeof(deltas) / sizeof(deltas[0]); k++) {
            kt_param_value pf[9] = {{deltas[k]}, {(double)shapes[i].block},
                                    {1024},      {1},
                                    {1},         {0},
                                    {0},         {0},
                                    {0}},
                           pi[9];
            memcpy(pi, pf, sizeof(pf));
            pi[4].num = 2;
            pi[7].num = 8; /* and the int8 arm fetches its kept blocks ahead: no bit may move */
            kt_metric mf[KT_MAX_METRICS], mi[KT_MAX_METRICS];
            assert_int_equal(run_ffd(out_f, mf, inst, b, pf), KT_OK);
            assert_int_equal(run_ffd(out_i, mi, inst, b, pi), KT_OK);
            if (getenv("KT_TEST_VERBOSE"))
                print_message("d %lld g %lld block %lld delta %g: kept %.3f, rescanned %.3f\n",
                              (long long)shapes[i].head_dim,
                              (long long)(shapes[i].heads / shapes[i].kv_heads),
                              (long long)shapes[i].block, deltas[k], mi[0].value, mi[2].value);
            assert_true(mi[0].value == mf[0].value);
            assert_true(mf[3].value == 0.0 && mi[3].value == 1.0); /* the scan that ran */
            assert_int_equal(memcmp(out_f, out_i, bytes), 0);
            rescanned += mi[2].value * mi[1].value;
            blocks += mi[1].value;
        }
        free(out_f);
        free(out_i);
        kt_instance_free(inst, b);
    }
    assert_true(rescanned < 0.25 * blocks);
    kt_backend_close(b);
}

/* Which scan runs: scan int8 where the int8 layout cannot hold the block (block % 16 != 0) is
 * refused and auto then takes the float scan; on a shape it can hold, auto takes int8 exactly
 * where the CPU has AVX-512 VNNI and the isa is not forced to avx2. */
static void test_int8_refused_shapes(void **state)
{
    (void)state;
    const kt_op *op = kt_op_find("attention_decode");
    kt_backend *b = NULL;
    assert_int_equal(kt_backend_open(&b, "cpu", 1, 1), KT_OK);
    kt_point pt;
    memset(&pt, 0, sizeof(pt));
    pt.model.heads = 4;
    pt.model.kv_heads = 2;
    pt.model.head_dim = 64;
    pt.batch_size = 1;
    pt.context_length = 1000;
    kt_param_value in[KT_MAX_PARAMS];
    kt_param_defaults(in, op->input_params, op->n_input_params);
    kt_instance *inst = NULL;
    assert_int_equal(kt_instance_create(&inst, b, op, &pt, KT_DTYPE_FP32, KT_DIST_LLM, in, 5),
                     KT_OK);
    char out[4 * 64 * 4];
    kt_metric m[KT_MAX_METRICS];
    kt_param_value p[9] = {{5}, {24}, {1024}, {1}, {2},
                           {0}, {0},  {8},    {0}}; /* scan int8, isa auto */
    assert_int_equal(run_ffd(out, m, inst, b, p), KT_EUNSUPPORTED);
    p[4].num = 0;
    assert_int_equal(run_ffd(out, m, inst, b, p), KT_OK);
    assert_true(m[2].value == 0.0 && m[3].value == 0.0);
    p[1].num = 128;
    assert_int_equal(run_ffd(out, m, inst, b, p), KT_OK);
    assert_true(m[3].value == (kt_ffd_int8_supported() ? 1.0 : 0.0));
    p[8].num = 1; /* isa avx2 */
    assert_int_equal(run_ffd(out, m, inst, b, p), KT_OK);
    assert_true(m[3].value == 0.0);
    p[4].num = 1; /* scan float on any CPU */
    assert_int_equal(run_ffd(out, m, inst, b, p), KT_OK);
    assert_true(m[3].value == 0.0);
    kt_instance_free(inst, b);
    kt_backend_close(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_scale_and_codes),
        cmocka_unit_test(test_block_round_trip),
        cmocka_unit_test(test_cache_layout),
        cmocka_unit_test(test_matches_same_policy_reference),
        cmocka_unit_test(test_huge_delta_keeps_everything),
        cmocka_unit_test(test_stored_keys),
        cmocka_unit_test(test_int8_selects_as_float),
        cmocka_unit_test(test_int8_refused_shapes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
