/* test_cuda_decoder.c - the CUDA decoder_layer variant against the float64 reference on
 * awkward shapes (GQA 3 and MQA 5, head_dim 24 and 64, contexts 300 and 1023 (T + 1 = 1024:
 * a full last FFD block), batch 3 and 5, two blocks), y, k_new and v_new each on its own, in
 * fp32 and bf16, with fusion none and graph; none and graph agree (bit for bit with the
 * deterministic GEMM); every timed call's profile has the six stages inside the timed
 * interval (or, for a graph whose event nodes give no times, none, as its metric says); FFD
 * as the attention stage leaves the appended K and V unchanged; a pass-through param the
 * chosen stage lacks is refused in prepare.
 * Skips (77) when the cuda backend finds no device (tests/gpu/run.sh counts that a failure).
 * 'test_cuda_decoder --small' runs one small step per fusion (for compute-sanitizer). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "kernel.h"
#include "arm/kernel/check.h"
#include "kernels/decoder_test_shape.h"
#include "kernels/gemm_tolerance.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const shape shapes[] = {
    {"g3-b3-t300-l2", 72, 9, 3, 24, 100, 3, 300, 2, 0}, /* G = 3, d % 16 != 0, two blocks */
    {"g5-b5-t1023", 320, 5, 1, 64, 130, 5, 1023, 1, 0}, /* MQA, T + 1 = 1024 */
};

typedef struct outcome {
    int status;
    double rel_l2[3];
    void *out[3];
    size_t bytes[3];
    kt_stage_profile profile;
    double time_ns;
    double graph_stage_times; /* the metric, -1 when absent */
} outcome;

/* Sets "name=value" params (NULL-terminated list) of 'v'. */
static void set_params(const kt_variant *v, kt_param_value *values, const char *const *kv)
{
    kt_param_defaults(values, v->params, v->n_params);
    for (; kv && *kv; kv++) {
        char name[64];
        const char *eq = strchr(*kv, '=');
        snprintf(name, sizeof(name), "%.*s", (int)(eq - *kv), *kv);
        int i = kt_param_index(v->params, v->n_params, name);
        assert_true(i >= 0);
        values[i].num = v->params[i].type == KT_PARAM_ENUM
                            ? kt_param_choice_index(v->params[i].choices, eq + 1)
                            : atof(eq + 1);
        assert_true(values[i].num >= 0);
    }
}

/* Prepares cuda/layer, then makes one call timed as the trial engine times it (the profile
 * is read in the backend's timer stop), downloads and compares every output. */
static outcome run_layer(const shape *s, kt_dtype dt, const char *const *kv)
{
    outcome r;
    memset(&r, 0, sizeof(r));
    r.graph_stage_times = -1;
    const kt_op *op = kt_op_find("decoder_layer");
    const kt_variant *v = kt_variant_find("decoder_layer", "cuda", "layer");
    assert_non_null(op);
    assert_non_null(v);
    kt_param_value params[KT_MAX_PARAMS], ip[KT_MAX_PARAMS];
    set_params(v, params, kv);
    kt_param_defaults(ip, op->input_params, op->n_input_params);
    ip[kt_param_index(op->input_params, op->n_input_params, "layers")].num = (double)s->layers;
    kt_point pt = point_of(s);
    kt_backend *b = NULL;
    kt_instance *inst = NULL;
    void *state = NULL;
    assert_int_equal(kt_backend_open(&b, "cuda", 1, 7), KT_OK);
    assert_int_equal(kt_instance_create(&inst, b, op, &pt, dt, KT_DIST_LLM, ip, 11), KT_OK);
    kt_call call = kt_instance_call(inst, b, params, 1);
    call.profile = &r.profile;
    kt_timing t = {0};
    if ((r.status = v->prepare(&state, &call)) == KT_OK &&
        (r.status = kt_instance_poison_outputs(inst, b)) == KT_OK &&
        (r.status = kt_backend_timer_start(b)) == KT_OK &&
        (r.status = v->run(state, &call)) == KT_OK &&
        (r.status = kt_backend_timer_stop(b, &t)) == KT_OK)
        r.status = kt_instance_download_outputs(inst, b);
    r.time_ns = t.time_ns;
    if (r.status != KT_OK)
        print_message("%s: %s\n", s->name, kt_error_last());
    if (r.status == KT_OK)
        decoder_outputs_take(inst, dt, r.out, r.bytes, r.rel_l2);
    if (r.status == KT_OK) {
        kt_metric m[KT_MAX_METRICS];
        int n = v->metrics(state, m, KT_MAX_METRICS);
        for (int i = 0; i < n; i++)
            if (strcmp(m[i].name, "graph_stage_times") == 0)
                r.graph_stage_times = m[i].value;
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

/* Outputs within the limit; the profile's stages inside the timed call. */
static void check(const outcome *r, const shape *s, kt_dtype dt, const char *what)
{
    double lim = limit(dt, s);
    print_message("%s %s %s: status %d rel_l2 y %.3g k %.3g v %.3g (limit %.3g), %d stages, "
                  "%.1f us\n",
                  s->name, kt_dtype_name(dt), what, r->status, r->rel_l2[0], r->rel_l2[1],
                  r->rel_l2[2], lim, r->profile.n, r->time_ns / 1e3);
    assert_int_equal(r->status, KT_OK);
    for (int o = 0; o < 3; o++)
        assert_true(r->rel_l2[o] <= lim);
    if (r->graph_stage_times == 0) { /* a graph whose event nodes gave no times */
        assert_int_equal(r->profile.n, 0);
        return;
    }
    assert_int_equal(r->profile.n, 6);
    double sum = 0;
    for (int k = 0; k < r->profile.n; k++) {
        assert_true(r->profile.ns[k] >= 0);
        sum += r->profile.ns[k];
    }
    assert_true(r->profile.ns[3] > 0); /* attention */
    assert_true(sum <= r->time_ns * 1.01 + 1e3);
}

static void test_none_and_graph_match_reference(void **state)
{
    (void)state;
    const char *none[] = {"fusion=none", NULL}, *graph[] = {"fusion=graph", NULL};
    const kt_dtype dts[] = {KT_DTYPE_FP32, KT_DTYPE_BF16};
    for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++)
        for (size_t d = 0; d < 2; d++) {
            outcome a = run_layer(&shapes[i], dts[d], none);
            outcome g = run_layer(&shapes[i], dts[d], graph);
            check(&a, &shapes[i], dts[d], "none");
            check(&g, &shapes[i], dts[d], "graph");
            /* the same kernels on the same data: agreement far inside the reference limit */
            for (int o = 0; o < 3; o++)
                assert_memory_equal(a.out[o], g.out[o], a.bytes[o]);
            outcome_free(&a);
            outcome_free(&g);
        }
}

/* The deterministic GEMM and fused MLP, both fusions, unfused MLP with cuBLASLt. */
static void test_stage_variants(void **state)
{
    (void)state;
    const shape *s = &shapes[0];
    const char *det_none[] = {"gemm=deterministic", "mlp=fused", "fusion=none", NULL};
    const char *det_graph[] = {"gemm=deterministic", "mlp=fused", "fusion=graph", NULL};
    const char *unfused[] = {"mlp=unfused", "attention.vectorised=0", NULL};
    outcome a = run_layer(s, KT_DTYPE_BF16, det_none), g = run_layer(s, KT_DTYPE_BF16, det_graph);
    outcome u = run_layer(s, KT_DTYPE_FP32, unfused);
    check(&a, s, KT_DTYPE_BF16, "deterministic none");
    check(&g, s, KT_DTYPE_BF16, "deterministic graph");
    check(&u, s, KT_DTYPE_FP32, "unfused");
    for (int o = 0; o < 3; o++)
        assert_memory_equal(a.out[o], g.out[o], a.bytes[o]);
    outcome_free(&a);
    outcome_free(&g);
    outcome_free(&u);
}

/* FFD inside the step (head_dim 64: the tensor-core scan): approximate keys and skipped
 * blocks reach y only; the appended K and V do not depend on attention. */
static void test_ffd_stage(void **state)
{
    (void)state;
    const shape *s = &shapes[1];
    const char *dense[] = {"attention=dense", NULL};
    const char *ffd[] = {"attention=ffd", "attention.delta=7", "attention.block=128", NULL};
    outcome a = run_layer(s, KT_DTYPE_BF16, dense), f = run_layer(s, KT_DTYPE_BF16, ffd);
    check(&a, s, KT_DTYPE_BF16, "dense");
    assert_int_equal(f.status, KT_OK);
    print_message("ffd rel_l2 y %.3g\n", f.rel_l2[0]);
    assert_true(f.rel_l2[0] <= 5e-2);
    assert_memory_equal(a.out[1], f.out[1], a.bytes[1]);
    assert_memory_equal(a.out[2], f.out[2], a.bytes[2]);
    outcome_free(&a);
    outcome_free(&f);
}

static void test_pass_through_refused(void **state)
{
    (void)state;
    const char *kv[] = {"attention=dense", "attention.delta=3", NULL};
    outcome r = run_layer(&shapes[0], KT_DTYPE_FP32, kv);
    assert_int_equal(r.status, KT_EINVAL);
    assert_non_null(strstr(kt_error_last(), "attention.delta is set but attention_decode "
                                            "variant 'dense' has no param 'delta'"));
}

/* One small step per fusion (for compute-sanitizer): every own kernel, a cuBLASLt and a
 * deterministic projection, dense attention, the fused MLP, a graph replay. */
static void test_small(void **state)
{
    (void)state;
    const shape s = {"g3-b2-t40", 72, 9, 3, 24, 100, 2, 40, 1, 0};
    const char *none[] = {"fusion=none", NULL};
    const char *graph[] = {"fusion=graph", "gemm=deterministic", NULL};
    outcome a = run_layer(&s, KT_DTYPE_BF16, none), g = run_layer(&s, KT_DTYPE_BF16, graph);
    check(&a, &s, KT_DTYPE_BF16, "none");
    check(&g, &s, KT_DTYPE_BF16, "graph");
    outcome_free(&a);
    outcome_free(&g);
}

int main(int argc, char **argv)
{
    kt_device_info info;
    const kt_backend_iface *cuda = kt_backend_find("cuda");
    if (!cuda || cuda->probe(&info) < 0) {
        printf("skipped: %s\n", cuda ? info.reason : "no cuda backend in this build");
        return 77;
    }
    if (argc > 1 && strcmp(argv[1], "--small") == 0) {
        const struct CMUnitTest small[] = {cmocka_unit_test(test_small)};
        return cmocka_run_group_tests(small, NULL, NULL);
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_none_and_graph_match_reference),
        cmocka_unit_test(test_stage_variants),
        cmocka_unit_test(test_ffd_stage),
        cmocka_unit_test(test_pass_through_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
