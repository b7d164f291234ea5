/* test_decoder_layer.c - the decoder_layer op's CPU variant against its float64 reference on
 * awkward shapes (odd GQA groups, contexts that are no multiple of any block or split, batch >
 * 1, two blocks), every output checked on its own (y, and the appended K and V), in every
 * fusion setting and with each stage variant; the fused settings must agree bit for bit. The
 * same for prefill chunks (chunks no multiple of the causal kernel's row block or key chunk),
 * and a chunk of one token must give a decode step's outputs. */
#include "kernel.h"
#include "arm/kernel/check.h"
#include "gemm_tolerance.h"
#include "decoder_test_shape.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static const shape shapes[] = {
    {"g3-b3-t300-l2", 72, 9, 3, 24, 100, 3, 300, 2, 0}, /* G = 3, d % 16 != 0, two blocks */
    {"g1-b1-t1", 64, 4, 4, 16, 40, 1, 1, 1, 0},         /* one cached token, MHA */
    {"g3-b2-t1500", 96, 6, 2, 32, 130, 2, 1500, 1, 0},  /* > one split, no multiple of 128 */
    {"g5-b5-t1023", 80, 5, 1, 16, 48, 5, 1023, 1, 0},   /* MQA, t + 1 = 1024: a full last block */
};

static const shape prefill_shapes[] = {
    /* G = 3, two blocks, 37 rows: 4 row blocks and a 5-row tail, keys cross 32-token chunks */
    {"pre-g3-b3-t300-c37-l2", 72, 9, 3, 24, 100, 3, 300, 2, 37},
    /* MQA with G = 5, the chunk longer than the cache */
    {"pre-g5-b2-t45-c70", 80, 5, 1, 16, 48, 2, 45, 1, 70},
    /* G = 7 (qwen2.5's group), one cached token, d = 40 (not a multiple of 16) */
    {"pre-g7-b2-t1-c13", 112, 14, 2, 40, 60, 2, 1, 1, 13},
};

typedef struct outcome {
    int status;
    double rel_l2[3];
    void *out[3]; /* host copies of y, k_new, v_new */
    size_t bytes[3];
} outcome;

/* Sets param 'name' of 'v' to 'value' (a number, or an enum choice). */
static void set_param(const kt_variant *v, kt_param_value *values, const char *name,
                      const char *value)
{
    int i = kt_param_index(v->params, v->n_params, name);
    assert_true(i >= 0);
    if (v->params[i].type == KT_PARAM_ENUM)
        values[i].num = kt_param_choice_index(v->params[i].choices, value);
    else
        values[i].num = atof(value);
    assert_true(values[i].num >= 0);
}

/* Runs the CPU 'layer' variant with "name=value" params (NULL-terminated). */
static outcome run_layer(const shape *s, kt_dtype dt, kt_distribution dist, int threads, ...)
{
    outcome r;
    memset(&r, 0, sizeof(r));
    const kt_op *op = kt_op_find("decoder_layer");
    const kt_variant *v = kt_variant_find("decoder_layer", "cpu", "layer");
    assert_non_null(op);
    assert_non_null(v);
    kt_param_value params[KT_MAX_PARAMS], ip[KT_MAX_PARAMS];
    kt_param_defaults(params, v->params, v->n_params);
    kt_param_defaults(ip, op->input_params, op->n_input_params);
    ip[kt_param_index(op->input_params, op->n_input_params, "layers")].num = (double)s->layers;
    if (s->chunk)
        ip[kt_param_index(op->input_params, op->n_input_params, "chunk")].num = (double)s->chunk;
    va_list ap;
    va_start(ap, threads);
    for (const char *kv = va_arg(ap, const char *); kv; kv = va_arg(ap, const char *)) {
        char name[64];
        const char *eq = strchr(kv, '=');
        snprintf(name, sizeof(name), "%.*s", (int)(eq - kv), kv);
        set_param(v, params, name, eq + 1);
    }
    va_end(ap);
    kt_point pt = point_of(s);
    kt_backend *b = NULL;
    kt_instance *inst = NULL;
    void *state = NULL;
    assert_int_equal(kt_backend_open(&b, "cpu", threads, 7), KT_OK);
    assert_int_equal(kt_instance_create(&inst, b, op, &pt, dt, dist, ip, 11), KT_OK);
    kt_call call = kt_instance_call(inst, b, params, threads);
    kt_stage_profile prof;
    memset(&prof, 0, sizeof(prof));
    call.profile = &prof;
    r.status = v->prepare(&state, &call);
    if (r.status == KT_OK)
        r.status = kt_instance_poison_outputs(inst, b);
    if (r.status == KT_OK)
        r.status = v->run(state, &call);
    if (r.status == KT_OK)
        r.status = kt_instance_download_outputs(inst, b);
    if (r.status != KT_OK)
        print_message("%s: %s\n", s->name, kt_error_last());
    if (r.status == KT_OK)
        decoder_outputs_take(inst, dt, r.out, r.bytes, r.rel_l2);
    if (r.status == KT_OK) { /* every stage ran and the stages account for the call */
        assert_int_equal(prof.n, 6);
        for (int k = 0; k < prof.n; k++)
            assert_true(prof.ns[k] >= 0);
    }
    v->release(state, b);
    kt_instance_free(inst, b);
    kt_backend_close(b);
    return r;
}

static void outcome_free(outcome *r)
{
    decoder_outputs_free(r->out);
}

static void check(const outcome *r, const shape *s, kt_dtype dt, const char *what)
{
    double lim = limit(dt, s);
    if (r->status != KT_OK || getenv("KT_TEST_VERBOSE"))
        print_message("%s %s %s: status %d rel_l2 y %.3g k %.3g v %.3g (limit %.3g)\n", s->name,
                      kt_dtype_name(dt), what, r->status, r->rel_l2[0], r->rel_l2[1], r->rel_l2[2],
                      lim);
    assert_int_equal(r->status, KT_OK);
    for (int o = 0; o < 3; o++)
        assert_true(r->rel_l2[o] <= lim);
}

/* Every fusion setting on each of 'n' shapes in fp32 and bf16: each matches the reference, and
 * own, mlp and layer agree bit for bit. */
static void fusions_match(const shape *shapes_, size_t n)
{
    const char *fusions[] = {"fusion=none", "fusion=own", "fusion=mlp", "fusion=layer"};
    kt_dtype dts[] = {KT_DTYPE_FP32, KT_DTYPE_BF16};
    for (size_t i = 0; i < n; i++) {
        for (size_t d = 0; d < 2; d++) {
            outcome fused[3];
            for (int f = 0; f < 4; f++) {
                outcome r = run_layer(&shapes_[i], dts[d], KT_DIST_LLM, 3, fusions[f], NULL);
                check(&r, &shapes_[i], dts[d], fusions[f]);
                if (f == 0)
                    outcome_free(&r);
                else
                    fused[f - 1] = r;
            }
            /* own, mlp and layer run the same kernels with the same partition: only the
             * regions differ, so their outputs are identical */
            for (int f = 1; f < 3; f++)
                for (int o = 0; o < 3; o++)
                    assert_memory_equal(fused[0].out[o], fused[f].out[o], fused[0].bytes[o]);
            for (int f = 0; f < 3; f++)
                outcome_free(&fused[f]);
        }
    }
}

static void test_fusions_match_reference(void **unused)
{
    (void)unused;
    fusions_match(shapes, sizeof(shapes) / sizeof(shapes[0]));
}

static void test_prefill_fusions_match_reference(void **unused)
{
    (void)unused;
    fusions_match(prefill_shapes, sizeof(prefill_shapes) / sizeof(prefill_shapes[0]));
}

/* A chunk of one token is a decode step computed another way (the causal kernel, the stages
 * shaped as prefill points): same inputs, same layouts, outputs equal within the tolerance. */
static void test_chunk_one_is_a_decode_step(void **unused)
{
    (void)unused;
    const char *fusions[] = {"fusion=none", "fusion=layer"};
    for (size_t i = 0; i < 2; i++) {
        shape one = shapes[i == 0 ? 0 : 2];
        shape step = one;
        one.chunk = 1;
        for (int f = 0; f < 2; f++) {
            outcome a = run_layer(&step, KT_DTYPE_FP32, KT_DIST_LLM, 2, fusions[f], NULL);
            outcome b = run_layer(&one, KT_DTYPE_FP32, KT_DIST_LLM, 2, fusions[f], NULL);
            check(&a, &step, KT_DTYPE_FP32, fusions[f]);
            check(&b, &one, KT_DTYPE_FP32, fusions[f]);
            for (int o = 0; o < 3; o++) {
                assert_int_equal(a.bytes[o], b.bytes[o]);
                size_t n = a.bytes[o] / sizeof(float);
                double *ref = malloc(sizeof(double) * n);
                assert_non_null(ref);
                for (size_t e = 0; e < n; e++)
                    ref[e] = (double)kt_dtype_load(a.out[o], KT_DTYPE_FP32, e);
                double diff = rel_l2(b.out[o], ref, KT_DTYPE_FP32, n);
                if (getenv("KT_TEST_VERBOSE"))
                    print_message("%s %s output %d: chunk 1 vs decode rel_l2 %.3g\n", one.name,
                                  fusions[f], o, diff);
                assert_true(diff <= 2 * limit(KT_DTYPE_FP32, &one));
                free(ref);
            }
            outcome_free(&a);
            outcome_free(&b);
        }
    }
}

/* Each stage variant inside the step, for a decode step and a prefill chunk (where the GEMM and
 * MLP variants run as prefill points of B C rows). */
static void test_stage_variants(void **unused)
{
    (void)unused;
    const shape *all[] = {&shapes[2], &prefill_shapes[0]};
    const char *sets[][3] = {{"gemm=blas", "mlp=unfused", "mlp.engine=tiled"},
                             {"gemm=deterministic", "mlp=unfused", "mlp.engine=blas"},
                             {"gemm=tiled", "mlp=fused", "attention.split=256"}};
    for (size_t i = 0; i < 2; i++) {
        for (size_t k = 0; k < 3; k++) {
            outcome r = run_layer(all[i], KT_DTYPE_FP32, KT_DIST_LLM, 2, sets[k][0], sets[k][1],
                                  sets[k][2], NULL);
            check(&r, all[i], KT_DTYPE_FP32, sets[k][0]);
            outcome_free(&r);
        }
    }
}

/* FFD inside the step: its keys are approximate (2-bit codes + fp8 residual) and it skips
 * blocks, so y carries its error; the appended K and V do not depend on attention. */
static void test_ffd_stage(void **unused)
{
    (void)unused;
    const shape *s = &shapes[2];
    outcome dense = run_layer(s, KT_DTYPE_BF16, KT_DIST_LLM, 2, "attention=dense", NULL);
    outcome ffd = run_layer(s, KT_DTYPE_BF16, KT_DIST_LLM, 2, "attention=ffd", "attention.delta=7",
                            "attention.block=128", NULL);
    check(&dense, s, KT_DTYPE_BF16, "dense");
    assert_int_equal(ffd.status, KT_OK);
    if (getenv("KT_TEST_VERBOSE"))
        print_message("ffd rel_l2 y %.3g\n", ffd.rel_l2[0]);
    assert_true(ffd.rel_l2[0] <= 5e-2);
    assert_memory_equal(dense.out[1], ffd.out[1], dense.bytes[1]);
    assert_memory_equal(dense.out[2], ffd.out[2], dense.bytes[2]);
    outcome_free(&dense);
    outcome_free(&ffd);
}

/* A stage param that the chosen variant lacks is an error, and so is a stage choice with a
 * fusion setting that runs the layer's own kernels. */
static void test_param_errors(void **unused)
{
    (void)unused;
    const shape *s = &shapes[1];
    outcome r = run_layer(s, KT_DTYPE_FP32, KT_DIST_NORMAL, 1, "attention.delta=3", NULL);
    assert_int_equal(r.status, KT_EINVAL);
    assert_non_null(strstr(kt_error_last(), "attention.delta"));
    r = run_layer(s, KT_DTYPE_FP32, KT_DIST_NORMAL, 1, "fusion=layer", "attention=ffd", NULL);
    assert_int_equal(r.status, KT_EINVAL);
    assert_non_null(strstr(kt_error_last(), "fusion 'layer'"));
    /* FFD attends one query per sequence: a chunk refuses it (validation refuses it first) */
    r = run_layer(&prefill_shapes[1], KT_DTYPE_FP32, KT_DIST_NORMAL, 1, "attention=ffd", NULL);
    assert_int_equal(r.status, KT_EINVAL);
    assert_non_null(strstr(kt_error_last(), "prefill"));
}

/* A pass-through param left unset must give the stage variant its own default: every
 * '<stage>.<name>' default of 'layer' equals '<name>''s default in each stage variant that has
 * it (a copied constant that drifts, like FFD's delta, fails here). */
static void test_pass_through_defaults(void **state)
{
    (void)state;
    static const char *const stage_ops[][2] = {
        {"attention", "attention_decode"}, {"mlp", "swiglu_mlp"}, {"gemm", "gemm"}};
    const kt_variant *layer = kt_variant_find("decoder_layer", "cpu", "layer");
    assert_non_null(layer);
    int checked = 0;
    for (int i = 0; i < layer->n_params; i++) {
        const kt_param_def *pd = &layer->params[i];
        const char *dot = strchr(pd->name, '.');
        if (!dot)
            continue;
        for (size_t s = 0; s < sizeof(stage_ops) / sizeof(stage_ops[0]); s++) {
            size_t len = strlen(stage_ops[s][0]);
            if ((size_t)(dot - pd->name) != len || strncmp(pd->name, stage_ops[s][0], len) != 0)
                continue;
            int choice = kt_param_index(layer->params, layer->n_params, stage_ops[s][0]);
            assert_true(choice >= 0);
            char name[64];
            for (int c = 0;
                 kt_param_choice_name(name, sizeof(name), layer->params[choice].choices, c)[0];
                 c++) {
                const kt_variant *v = kt_variant_find(stage_ops[s][1], "cpu", name);
                assert_non_null(v);
                int at = kt_param_index(v->params, v->n_params, dot + 1);
                if (at < 0)
                    continue;
                if (v->params[at].def != pd->def)
                    fail_msg("%s defaults to %g, %s variant '%s' to %g", pd->name, pd->def,
                             stage_ops[s][1], name, v->params[at].def);
                checked++;
            }
        }
    }
    assert_true(checked >= 6); /* delta, block, 2 splits, 2 isas at least */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fusions_match_reference),
        cmocka_unit_test(test_prefill_fusions_match_reference),
        cmocka_unit_test(test_chunk_one_is_a_decode_step),
        cmocka_unit_test(test_stage_variants),
        cmocka_unit_test(test_ffd_stage),
        cmocka_unit_test(test_param_errors),
        cmocka_unit_test(test_pass_through_defaults),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
