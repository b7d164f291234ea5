/* test_swiglu.c - the CPU swiglu_mlp variants against the float64 reference on awkward and
 * real shapes in every storage type, fused against unfused on the same inputs, and the op's
 * reference against hand-computed values. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "gemm_tolerance.h"
#include "harness.h"

#include <math.h>
#include <stdlib.h>

static const kt_dtype dtypes[] = {KT_DTYPE_FP32, KT_DTYPE_FP16, KT_DTYPE_BF16};
static const kt_model tiny = {"tiny", 67, 3, 1, 13, 101, 2};
static const kt_model qwen05 = {"qwen2.5-0.5b", 896, 14, 2, 64, 4864, 24};

/* storage roundings on each variant's path: unfused rounds h, a and y; fused a and y */
enum { UNFUSED_ROUNDINGS = 3, FUSED_ROUNDINGS = 2 };

static uint64_t case_seed(void)
{
    static uint64_t n;
    return kt_seed_mix(0x73776967, ++n);
}

static kt_point make_point(const kt_model *md, int64_t batch, int64_t context, kt_phase phase)
{
    kt_point p;
    memset(&p, 0, sizeof(p));
    p.model = *md;
    p.batch_size = batch;
    p.context_length = context;
    p.phase = phase;
    snprintf(p.id, sizeof(p.id), "%s/%s/b%lld/t%lld", md->name, kt_phase_name(phase),
             (long long)batch, (long long)context);
    return p;
}

static double limit_for(kt_dtype dtype, int roundings, const kt_point *p)
{
    return kt_test_rel_l2_limit(dtype, roundings, p->model.hidden + p->model.intermediate);
}

static void check_variant(const char *variant, const kt_point *point, kt_dtype dtype,
                          kt_distribution dist, const kt_param_value *params, int roundings)
{
    uint64_t seed = case_seed();
    kt_test_result r =
        kt_test_run("cpu", "swiglu_mlp", variant, point, dtype, dist, params, NULL, seed, 2);
    double limit = limit_for(dtype, roundings, point);
    if (r.status != KT_OK || r.numerics.rel_l2 > limit || getenv("KT_TEST_VERBOSE"))
        print_message("%s %s %s seed %llu: status %d '%s' rel_l2 %.3g (limit %.3g) cosine "
                      "%.9f\n",
                      variant, point->id, kt_dtype_name(dtype), (unsigned long long)seed, r.status,
                      r.error, r.numerics.rel_l2, limit, r.numerics.cosine);
    int64_t m = point->phase == KT_PHASE_PREFILL ? point->batch_size * point->context_length
                                                 : point->batch_size;
    assert_int_equal(r.status, KT_OK);
    assert_int_equal(r.numerics.elems, m * point->model.hidden);
    assert_int_equal(r.numerics.unwritten, 0);
    assert_int_equal(r.numerics.nonfinite, 0);
    assert_int_equal(r.numerics.inputs_modified, 0);
    assert_true(r.numerics.rel_l2 <= limit);
    assert_true(r.numerics.cosine > KT_TEST_MIN_COSINE);
}

/* The awkward shapes in the first 'n_dtypes' of fp32, bf16, fp16, and the real one in bf16. */
static void check_all_in(const char *variant, const kt_param_value *params, int roundings,
                         size_t n_dtypes)
{
    static const int64_t batches[] = {1, 3, 17, 64};
    static const kt_dtype order[] = {KT_DTYPE_FP32, KT_DTYPE_BF16, KT_DTYPE_FP16};
    for (size_t i = 0; i < n_dtypes; i++) {
        size_t d = (size_t)order[i];
        for (size_t b = 0; b < 4; b++) {
            kt_point p = make_point(&tiny, batches[b], 0, KT_PHASE_DECODE);
            check_variant(variant, &p, dtypes[d], KT_DIST_NORMAL, params, roundings);
        }
        kt_point p = make_point(&tiny, 2, 5, KT_PHASE_PREFILL);
        check_variant(variant, &p, dtypes[d], KT_DIST_LLM, params, roundings);
        check_variant(variant, &p, dtypes[d], KT_DIST_UNIFORM, params, roundings);
    }
    /* the real shape in the serving dtype only: generating its 1.3 * 10^7 inputs takes 0.3 s */
    kt_point real = make_point(&qwen05, 1, 0, KT_PHASE_DECODE);
    check_variant(variant, &real, KT_DTYPE_BF16, KT_DIST_LLM, params, roundings);
}

static void check_all(const char *variant, const kt_param_value *params, int roundings)
{
    check_all_in(variant, params, roundings, 3);
}

static void test_unfused_blas(void **state)
{
    (void)state;
    check_all("unfused", NULL, UNFUSED_ROUNDINGS);
}

static void test_unfused_tiled(void **state)
{
    (void)state;
    const kt_param_value tiled[1] = {{1}}; /* engine: tiled */
    check_all("unfused", tiled, UNFUSED_ROUNDINGS);
}

#ifdef KT_HAVE_ONEDNN
/* oneDNN 2.6 has no fp16 matmul on CPUs without AVX512-FP16 (test_gemm.c checks it says so) */
static void test_unfused_onednn(void **state)
{
    (void)state;
    const kt_param_value onednn[1] = {{2}}; /* engine: onednn */
    check_all_in("unfused", onednn, UNFUSED_ROUNDINGS, 2);
    /* validation's check without running must agree with prepare on every dtype */
    const kt_variant *v = kt_variant_find("swiglu_mlp", "cpu", "unfused");
    kt_point p = make_point(&tiny, 3, 0, KT_PHASE_DECODE);
    for (int t = 0; t < 3; t++) {
        kt_problem pr;
        kt_test_result r = kt_test_run("cpu", "swiglu_mlp", "unfused", &p, dtypes[t],
                                       KT_DIST_NORMAL, onednn, NULL, case_seed(), 2);
        assert_int_equal(kt_op_shape(kt_op_find("swiglu_mlp"), &pr, &p, dtypes[t], NULL), KT_OK);
        int check = kt_variant_check_problem(v, onednn, &pr);
        assert_int_equal(check, r.status);
        if (check < 0)
            assert_string_equal(kt_error_last(), r.error);
    }
}
#endif

static void test_fused(void **state)
{
    (void)state;
    check_all("fused", NULL, FUSED_ROUNDINGS);
}

/* Several gate/up panels per block, partial panels (I = 101 is not a multiple of 8), depth
 * blocks in both GEMMs. */
static void test_fused_small_blocks(void **state)
{
    (void)state;
    const kt_param_value small[7] = {{12}, {32}, {20}, {0}, {2}, {0}, {0}};
    check_all("fused", small, FUSED_ROUNDINGS);
    /* 8 gate + 8 up per panel; nc-wide column blocks */
    const kt_param_value small_avx2[7] = {{12}, {32}, {20}, {1}, {1}, {1}, {0}};
    check_all("fused", small_avx2, FUSED_ROUNDINGS);
}

/* Prepares 'name' on 'inst', runs it through the correctness path, copies the output. */
static void run_copy(void *out, kt_numerics *num, kt_instance *inst, kt_backend *b,
                     const char *name)
{
    const kt_variant *v = kt_variant_find("swiglu_mlp", "cpu", name);
    assert_non_null(v);
    kt_param_value params[KT_MAX_PARAMS];
    kt_param_defaults(params, v->params, v->n_params);
    kt_call call = kt_instance_call(inst, b, params, 2);
    void *st = NULL;
    assert_int_equal(v->prepare(&st, &call), KT_OK);
    assert_int_equal(kt_check_call(num, inst, v, st, &call), KT_OK);
    v->release(st, b);
    const kt_problem *p = &inst->problem;
    memcpy(out, inst->host_outputs[0], kt_tensor_bytes(&p->tensors[p->n_inputs]));
}

/* Fused and unfused agree with each other on the same inputs within the sum of their limits,
 * and neither is trivially equal to the other through a shared bug in the reference. */
static void test_fused_matches_unfused(void **state)
{
    (void)state;
    kt_backend *b = NULL;
    assert_int_equal(kt_backend_open(&b, "cpu", 2, 1), KT_OK);
    for (size_t d = 0; d < 3; d++) {
        kt_point pt = make_point(&tiny, 17, 0, KT_PHASE_DECODE);
        kt_instance *inst = NULL;
        assert_int_equal(kt_instance_create(&inst, b, kt_op_find("swiglu_mlp"), &pt, dtypes[d],
                                            KT_DIST_LLM, NULL, case_seed()),
                         KT_OK);
        const kt_problem *p = &inst->problem;
        size_t n = (size_t)kt_tensor_elems(&p->tensors[p->n_inputs]);
        size_t bytes = kt_tensor_bytes(&p->tensors[p->n_inputs]);
        void *fused = malloc(bytes), *unfused = malloc(bytes);
        kt_numerics nf, nu;
        run_copy(fused, &nf, inst, b, "fused");
        run_copy(unfused, &nu, inst, b, "unfused");
        double diff2 = 0, ref2 = 0;
        for (size_t i = 0; i < n; i++) {
            double f = kt_dtype_load(fused, dtypes[d], i), u = kt_dtype_load(unfused, dtypes[d], i);
            diff2 += (f - u) * (f - u);
            ref2 += u * u;
        }
        double limit = limit_for(dtypes[d], UNFUSED_ROUNDINGS, &pt) +
                       limit_for(dtypes[d], FUSED_ROUNDINGS, &pt);
        assert_true(sqrt(diff2 / ref2) <= limit);
        assert_true(nf.rel_l2 <= limit_for(dtypes[d], FUSED_ROUNDINGS, &pt));
        assert_true(nu.rel_l2 <= limit_for(dtypes[d], UNFUSED_ROUNDINGS, &pt));
        free(fused);
        free(unfused);
        kt_instance_free(inst, b);
    }
    kt_backend_close(b);
}

/* The unfused variant's intermediates h[M, 2I] and a[M, I] are backend allocations. */
static void test_unfused_intermediates_counted(void **state)
{
    (void)state;
    kt_point p = make_point(&tiny, 3, 0, KT_PHASE_DECODE);
    kt_test_result r = kt_test_run("cpu", "swiglu_mlp", "unfused", &p, KT_DTYPE_FP32,
                                   KT_DIST_NORMAL, NULL, NULL, case_seed(), 1);
    assert_int_equal(r.status, KT_OK);
    assert_int_equal(r.variant_bytes, (3 * 2 * 101 + 3 * 101) * sizeof(float));
}

/* The op's float64 reference on a case small enough to compute by hand. */
static void test_reference_by_hand(void **state)
{
    (void)state;
    const kt_op *op = kt_op_find("swiglu_mlp");
    kt_model md = {"hand", 2, 1, 1, 1, 1, 1};
    kt_point pt = make_point(&md, 1, 0, KT_PHASE_DECODE);
    kt_problem p;
    assert_int_equal(op->shape(&p, &pt, KT_DTYPE_FP32, NULL), KT_OK);
    assert_int_equal(p.n_inputs, 3);
    /* x = [2, -1]; gate row [0.5, 1] -> g = 0; up row [3, 2] -> u = 4; silu(0) * 4 = 0:
     * use gate row [1, 1] -> g = 1, silu(1) = 1 / (1 + e^-1) */
    float x[2] = {2, -1}, wgu[4] = {1, 1, 3, 2}, wd[2] = {-1.5f, 0.25f};
    const void *in[3] = {x, wgu, wd};
    double y[2];
    double *out[1] = {y};
    assert_int_equal(op->reference(&p, in, out), KT_OK);
    double a = 1.0 / (1.0 + exp(-1.0)) * 4.0;
    assert_true(fabs(y[0] - (-1.5 * a)) < 1e-15);
    assert_true(fabs(y[1] - 0.25 * a) < 1e-15);
    assert_true(p.flops == 2.0 * 1 * 2 * 2 + 2.0 * 1 * 1 * 2 + 4.0);
    assert_true(p.bytes == (1 * 2 * 2 + 3 * 1 * 2) * 4.0);

    const kt_op *gemm = kt_op_find("gemm");
    kt_model mg = {"hand", 2, 1, 1, 1, 3, 1};
    kt_point pg = make_point(&mg, 2, 0, KT_PHASE_DECODE);
    pg.role = KT_ROLE_DOWN; /* N = hidden 2, K = intermediate 3 */
    assert_int_equal(gemm->shape(&p, &pg, KT_DTYPE_FP32, NULL), KT_OK);
    float gx[6] = {1, 2, 3, 4, 5, 6}, gw[6] = {1, 0, -1, 0.5f, 0.25f, 2};
    const void *gin[2] = {gx, gw};
    double gy[4];
    double *gout[1] = {gy};
    assert_int_equal(gemm->reference(&p, gin, gout), KT_OK);
    assert_true(gy[0] == -2 && gy[1] == 7 && gy[2] == -2 && gy[3] == 15.25);
}

int main(int argc, char **argv)
{
    if (argc > 1)
        cmocka_set_test_filter(argv[1]);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reference_by_hand),
        cmocka_unit_test(test_unfused_blas),
        cmocka_unit_test(test_unfused_tiled),
#ifdef KT_HAVE_ONEDNN
        cmocka_unit_test(test_unfused_onednn),
#endif
        cmocka_unit_test(test_fused),
        cmocka_unit_test(test_fused_small_blocks),
        cmocka_unit_test(test_fused_matches_unfused),
        cmocka_unit_test(test_unfused_intermediates_counted),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
