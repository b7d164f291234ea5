/* test_check.c - problem instances and correctness: the poison tells an element left
 * unwritten from a NaN the kernel produced (in every storage type), writes into the inputs
 * are caught, the error measures match hand-computed values, outputs compare bit for bit.
 * Runs on the sim backend with the synthetic op (y = x), through tiny variants defined here
 * and through the sim's lognormal variant. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "arm/kernel/check.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- tiny variants of the synthetic op ---------------------------------------------------- */

static int none_prepare(void **state, const kt_call *call)
{
    (void)call;
    *state = NULL;
    return KT_OK;
}

static void none_release(void *state, kt_backend *backend)
{
    (void)state;
    (void)backend;
}

/* y = x over the first 'n' elements (bytes copied: same storage type). */
static void copy_first(const kt_call *call, int64_t n)
{
    const kt_problem *p = call->problem;
    memcpy(call->outputs[0], call->inputs[0], (size_t)n * kt_dtype_size(p->dtype));
}

static int run_copy(void *state, const kt_call *call)
{
    (void)state;
    copy_first(call, call->problem->elems);
    return KT_OK;
}

static int run_skip_last(void *state, const kt_call *call)
{
    (void)state;
    copy_first(call, call->problem->elems - 1);
    return KT_OK;
}

/* Writes every element; elements 3 and 7 are NaNs (the canonical quiet one and what 0/0
 * gives), element 5 is +Inf. */
static int run_nonfinite(void *state, const kt_call *call)
{
    (void)state;
    const kt_problem *p = call->problem;
    copy_first(call, p->elems);
    volatile double zero = 0.0;
    const double bad[3] = {NAN, 1.0 / zero, zero / zero};
    size_t size = kt_dtype_size(p->dtype);
    for (int i = 0; i < 3; i++)
        kt_dtype_from_double((char *)call->outputs[0] + (size_t)(3 + 2 * i) * size, &bad[i],
                             p->dtype, 1);
    return KT_OK;
}

/* Computes the right output but flips a bit of its input on the way. */
static int run_scribble(void *state, const kt_call *call)
{
    (void)state;
    copy_first(call, call->problem->elems);
    ((unsigned char *)call->inputs[0])[1] ^= 0x10;
    return KT_OK;
}

static int run_error(void *state, const kt_call *call)
{
    (void)state;
    (void)call;
    return kt_error_set("no kernel for this shape");
}

#define TINY_VARIANT(ident, run)                                                                   \
    static const kt_variant ident = {"synthetic", #ident,       "sim", "test variant", NULL,       \
                                     0,           none_prepare, run,   none_release,   NULL}

TINY_VARIANT(v_copy, run_copy);
TINY_VARIANT(v_skip_last, run_skip_last);
TINY_VARIANT(v_nonfinite, run_nonfinite);
TINY_VARIANT(v_scribble, run_scribble);
TINY_VARIANT(v_error, run_error);

/* ---- fixture ----------------------------------------------------------------------------- */

typedef struct fixture {
    kt_backend *backend;
    kt_instance *inst;
    kt_dtype dtype;
} fixture;

static const kt_dtype dtypes[3] = {KT_DTYPE_FP32, KT_DTYPE_FP16, KT_DTYPE_BF16};

static void open_instance(fixture *f, kt_dtype dtype, int64_t elems, uint64_t seed)
{
    kt_point point;
    memset(&point, 0, sizeof(point));
    point.batch_size = 1;
    point.context_length = elems;
    snprintf(point.id, sizeof(point.id), "b1/t%lld", (long long)elems);
    f->dtype = dtype;
    assert_int_equal(kt_backend_open(&f->backend, "sim", 1, 1), 0);
    assert_int_equal(kt_instance_create(&f->inst, f->backend, kt_op_find("synthetic"), &point,
                                        dtype, KT_DIST_NORMAL, NULL, seed),
                     0);
}

static void close_instance(fixture *f)
{
    kt_instance_free(f->inst, f->backend);
    assert_int_equal(f->backend->bytes_current, 0); /* every buffer given back */
    kt_backend_close(f->backend);
}

/* Runs 'v' (no params) through the whole protocol. */
static int check_with(kt_numerics *out, fixture *f, const kt_variant *v)
{
    kt_call call = kt_instance_call(f->inst, f->backend, NULL, 1);
    void *state = NULL;
    assert_int_equal(v->prepare(&state, &call), 0);
    int rc = kt_check_call(out, f->inst, v, state, &call);
    v->release(state, f->backend);
    return rc;
}

/* ---- tests ------------------------------------------------------------------------------- */

static void test_hash_bytes(void **state)
{
    (void)state;
    unsigned char buf[40];
    for (int i = 0; i < 40; i++)
        buf[i] = (unsigned char)(i * 7 + 1);
    for (size_t len = 1; len <= sizeof(buf); len++) {
        uint64_t h = kt_hash_bytes(buf, len);
        assert_true(h == kt_hash_bytes(buf, len));
        for (size_t i = 0; i < len; i++) { /* every byte, word or tail, counts */
            buf[i] ^= 1;
            if (kt_hash_bytes(buf, len) == h)
                fail_msg("flipping byte %zu of %zu does not change the hash", i, len);
            buf[i] ^= 1;
        }
    }
    unsigned char zeros[16] = {0};
    assert_true(kt_hash_bytes(zeros, 8) != kt_hash_bytes(zeros, 16));
    assert_true(kt_hash_bytes(zeros, 0) != kt_hash_bytes(zeros, 1));
}

static void test_instance(void **state)
{
    (void)state;
    fixture f;
    open_instance(&f, KT_DTYPE_FP32, 100, 5);
    const kt_problem *p = &f.inst->problem;
    assert_int_equal(p->elems, 100);
    assert_int_equal(f.inst->bytes, 2 * 100 * sizeof(float));
    /* the backend also holds the spare output buffer (kt_instance_rotate), and the guard zones
     * before and after each output buffer (kt_instance_check_guards) */
    assert_int_equal(f.backend->bytes_current, 3 * 100 * sizeof(float) + 4 * KT_OUTPUT_GUARD_BYTES);
    const float *x = f.inst->host_inputs[0];
    int distinct = 0;
    for (int i = 0; i < 100; i++) {
        assert_true(f.inst->reference[0][i] == (double)x[i]); /* y = x, in float64 */
        distinct += i > 0 && x[i] != x[0];
    }
    assert_true(distinct > 90);
    /* the backend got the same bytes */
    assert_memory_equal(f.inst->dev_inputs[0], x, 100 * sizeof(float));
    int intact = 0;
    assert_int_equal(kt_instance_inputs_intact(f.inst, f.backend, &intact), 0);
    assert_int_equal(intact, 1);
    ((float *)f.inst->dev_inputs[0])[99] += 1.0f;
    assert_int_equal(kt_instance_inputs_intact(f.inst, f.backend, &intact), 0);
    assert_int_equal(intact, 0);

    fixture g; /* the same seed gives the same inputs, another seed others */
    open_instance(&g, KT_DTYPE_FP32, 100, 5);
    assert_true(g.inst->input_hash == f.inst->input_hash);
    close_instance(&g);
    open_instance(&g, KT_DTYPE_FP32, 100, 6);
    assert_true(g.inst->input_hash != f.inst->input_hash);
    close_instance(&g);
    close_instance(&f);
}

static void test_exact_copy(void **state)
{
    (void)state;
    for (int d = 0; d < 3; d++) {
        fixture f;
        kt_numerics n;
        open_instance(&f, dtypes[d], 64, 3);
        assert_int_equal(check_with(&n, &f, &v_copy), 0);
        assert_int_equal(n.elems, 64);
        assert_int_equal(n.unwritten, 0);
        assert_int_equal(n.nonfinite, 0);
        assert_int_equal(n.inputs_modified, 0);
        assert_true(n.max_abs == 0 && n.max_rel == 0 && n.rel_l2 == 0);
        assert_true(fabs(n.cosine - 1) < 1e-12);
        close_instance(&f);
    }
}

static void test_unwritten_vs_nonfinite(void **state)
{
    (void)state;
    for (int d = 0; d < 3; d++) {
        fixture f;
        kt_numerics n;
        open_instance(&f, dtypes[d], 64, 3);
        assert_int_equal(check_with(&n, &f, &v_skip_last), 0);
        if (n.unwritten != 1 || n.nonfinite != 0)
            fail_msg("%s: one element unwritten counted as unwritten %lld, nonfinite %lld",
                     kt_dtype_name(dtypes[d]), (long long)n.unwritten, (long long)n.nonfinite);
        assert_true(n.rel_l2 == 0); /* measured over the written elements */

        assert_int_equal(check_with(&n, &f, &v_nonfinite), 0);
        if (n.unwritten != 0 || n.nonfinite != 3)
            fail_msg("%s: two NaNs and an Inf counted as unwritten %lld, nonfinite %lld",
                     kt_dtype_name(dtypes[d]), (long long)n.unwritten, (long long)n.nonfinite);
        assert_int_equal(n.inputs_modified, 0);
        close_instance(&f);
    }
}

static void test_inputs_modified(void **state)
{
    (void)state;
    fixture f;
    kt_numerics n;
    open_instance(&f, KT_DTYPE_BF16, 64, 3);
    assert_int_equal(check_with(&n, &f, &v_scribble), 0);
    assert_int_equal(n.inputs_modified, 1);
    assert_int_equal(n.unwritten, 0);
    close_instance(&f);
}

/* Writes next to an output, in either buffer set, are found, measured and cleared. */
static void test_guards(void **state)
{
    (void)state;
    fixture f;
    kt_numerics n;
    open_instance(&f, KT_DTYPE_FP32, 10, 3);
    assert_int_equal(kt_instance_check_guards(&n, f.inst, f.backend), 0);
    assert_null(n.overrun_tensor); /* fresh zones */
    char *y = f.inst->dev_outputs[0], *spare = f.inst->dev_outputs_alt[0];
    y[10 * sizeof(float) + 5] = 0; /* the 6th byte past the end */
    spare[-1] = 0;
    assert_int_equal(kt_instance_check_guards(&n, f.inst, f.backend), 0);
    assert_string_equal(n.overrun_tensor, "y");
    assert_int_equal(n.overrun_after, 6);
    assert_int_equal(n.overrun_before, 0); /* the first buffer found is told */
    assert_int_equal(kt_instance_check_guards(&n, f.inst, f.backend), 0);
    assert_null(n.overrun_tensor); /* the zones were written afresh */
    close_instance(&f);
}

static void test_variant_error(void **state)
{
    (void)state;
    fixture f;
    kt_numerics n;
    open_instance(&f, KT_DTYPE_FP32, 16, 3);
    assert_true(check_with(&n, &f, &v_error) < 0);
    assert_string_equal(kt_error_last(), "no kernel for this shape");
    close_instance(&f);
}

/* The poison alone, with no run in between: every element counts as unwritten. */
static void test_poison_is_unwritten(void **state)
{
    (void)state;
    for (int d = 0; d < 3; d++) {
        fixture f;
        kt_numerics n;
        open_instance(&f, dtypes[d], 32, 3);
        assert_int_equal(kt_instance_poison_outputs(f.inst, f.backend), 0);
        assert_int_equal(kt_instance_download_outputs(f.inst, f.backend), 0);
        kt_numerics_compare(&n, f.inst);
        assert_int_equal(n.unwritten, 32);
        assert_int_equal(n.nonfinite, 0);
        /* the poison is a NaN, so a kernel that reads it back still propagates NaN */
        assert_true(isnan(kt_dtype_load(f.inst->host_outputs[0], dtypes[d], 0)));
        close_instance(&f);
    }
}

/* Each rotation's pattern is unwritten for that rotation only; the spare buffers swap in. */
static void test_rotating_poison(void **state)
{
    (void)state;
    for (int d = 0; d < 3; d++) {
        fixture f;
        kt_numerics n;
        open_instance(&f, dtypes[d], 32, 3);
        void *first = f.inst->dev_outputs[0], *spare = f.inst->dev_outputs_alt[0];
        assert_ptr_not_equal(first, spare);
        kt_instance_rotate(f.inst, 0); /* pattern 0, no swap */
        assert_ptr_equal(f.inst->dev_outputs[0], first);
        assert_int_equal(kt_instance_poison_outputs(f.inst, f.backend), 0);
        kt_instance_rotate(f.inst, 0x101); /* pattern 1, swapped */
        assert_ptr_equal(f.inst->dev_outputs[0], spare);
        assert_ptr_equal(f.inst->dev_outputs_alt[0], first);
        /* what pattern 0 left is not pattern 1's poison: a NaN the scan calls non-finite */
        kt_output_scan(&n, f.inst);
        assert_int_equal(n.elems, 32);
        assert_int_equal(n.unwritten, 0);
        assert_int_equal(n.nonfinite, 32);
        assert_int_equal(kt_instance_poison_outputs(f.inst, f.backend), 0);
        assert_int_equal(kt_instance_download_outputs(f.inst, f.backend), 0);
        kt_output_scan(&n, f.inst);
        assert_int_equal(n.unwritten, 32);
        assert_int_equal(n.nonfinite, 0);
        close_instance(&f);
    }
}

/* Hand-set outputs and reference, compared with values worked out by hand. */
static void test_measures(void **state)
{
    (void)state;
    fixture f;
    kt_numerics n;
    open_instance(&f, KT_DTYPE_FP32, 4, 3);
    double *ref = f.inst->reference[0];
    float *out = f.inst->host_outputs[0];
    const double r[4] = {0, 1, -2, 4};
    for (int i = 0; i < 4; i++) {
        ref[i] = r[i];
        out[i] = (float)(2 * r[i]); /* out = 2 ref */
    }
    kt_numerics_compare(&n, f.inst);
    assert_true(n.max_abs == 4 && n.max_rel == 1 && n.rel_l2 == 1);
    assert_true(fabs(n.cosine - 1) < 1e-15);
    for (int i = 0; i < 4; i++)
        out[i] = (float)-r[i];
    kt_numerics_compare(&n, f.inst);
    assert_true(n.rel_l2 == 2 && fabs(n.cosine + 1) < 1e-15);

    /* max_rel's denominator is floored at 1e-3 of the largest |ref| (here 4e-3) */
    for (int i = 0; i < 4; i++)
        out[i] = (float)r[i];
    out[0] = 0.002f;
    kt_numerics_compare(&n, f.inst);
    assert_true(fabs(n.max_rel - (double)0.002f / 4e-3) < 1e-12);
    assert_true(fabs(n.rel_l2 - (double)0.002f / sqrt(21.0)) < 1e-12);

    /* a zero reference: exact output is error 0, anything else an infinite rel_l2 */
    for (int i = 0; i < 4; i++)
        ref[i] = out[i] = 0;
    kt_numerics_compare(&n, f.inst);
    assert_true(n.rel_l2 == 0 && n.max_rel == 0);
    out[2] = 1e-20f;
    kt_numerics_compare(&n, f.inst);
    assert_true(isinf(n.rel_l2));
    close_instance(&f);
}

static void test_outputs_identical(void **state)
{
    (void)state;
    fixture f;
    open_instance(&f, KT_DTYPE_FP16, 10, 3);
    uint16_t a[10], b[10];
    for (int i = 0; i < 10; i++)
        a[i] = b[i] = (uint16_t)(i * 1000);
    void *pa[1] = {a}, *pb[1] = {b};
    assert_int_equal(kt_outputs_identical(f.inst, pa, pb), 1);
    b[9] ^= 1; /* the last byte pair is compared too */
    assert_int_equal(kt_outputs_identical(f.inst, pa, pb), 0);
    close_instance(&f);
}

/* The sim's own variant: rel_error is what the checker measures; its failures are seen. */
static void test_lognormal_variant(void **state)
{
    (void)state;
    const kt_variant *v = kt_variant_find("synthetic", "sim", "lognormal");
    assert_non_null(v);
    int rel = kt_param_index(v->params, v->n_params, "rel_error");
    int fail = kt_param_index(v->params, v->n_params, "fail");
    assert_true(rel >= 0 && fail >= 0);
    struct {
        double rel_error;
        const char *fail;
        int64_t unwritten, nonfinite;
    } cases[] = {{0.01, "none", 0, 0}, {0, "unwritten", 1, 0}, {0, "nan", 0, 1}};
    for (int c = 0; c < 3; c++) {
        fixture f;
        kt_numerics n;
        kt_param_value params[KT_MAX_PARAMS];
        open_instance(&f, KT_DTYPE_FP32, 256, 9);
        kt_param_defaults(params, v->params, v->n_params);
        params[rel].num = cases[c].rel_error;
        params[fail].num = kt_param_choice_index(v->params[fail].choices, cases[c].fail);
        kt_call call = kt_instance_call(f.inst, f.backend, params, 1);
        void *st = NULL;
        assert_int_equal(v->prepare(&st, &call), 0);
        assert_int_equal(kt_check_call(&n, f.inst, v, st, &call), 0);
        v->release(st, f.backend);
        assert_int_equal(n.unwritten, cases[c].unwritten);
        assert_int_equal(n.nonfinite, cases[c].nonfinite);
        if (c == 0)
            assert_true(fabs(n.rel_l2 - 0.01) < 1e-6);
        close_instance(&f);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hash_bytes),          cmocka_unit_test(test_instance),
        cmocka_unit_test(test_exact_copy),          cmocka_unit_test(test_unwritten_vs_nonfinite),
        cmocka_unit_test(test_inputs_modified),     cmocka_unit_test(test_variant_error),
        cmocka_unit_test(test_poison_is_unwritten), cmocka_unit_test(test_measures),
        cmocka_unit_test(test_outputs_identical),   cmocka_unit_test(test_lognormal_variant),
        cmocka_unit_test(test_rotating_poison),     cmocka_unit_test(test_guards),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
