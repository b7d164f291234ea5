/* test_op_tensors.c - the table of every op's tensors (kernels/op_tensors.c) says what each op's
 * shape() builds: the same names in the same order, inputs before outputs, as many of each, and
 * a shape with as many dimensions as the tensor has, at decode and at prefill; every op of the
 * registry is in the table or has no tensors at all. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "kernel.h"

#include <string.h>

/* The number of dimensions alternative 'alt' (0: decode, 1: prefill; "a | b") of 'shape'
 * writes ("[m, k]" has 2), or -1 for a shape given as another tensor's ("like x"). */
static int dims_in(const char *shape, int alt)
{
    if (strncmp(shape, "like ", 5) == 0)
        return -1;
    const char *s = shape, *bar = strchr(shape, '|');
    if (alt == 1 && bar)
        s = bar + 1;
    const char *end = alt == 0 && bar ? bar : s + strlen(s);
    int n = 1;
    for (const char *c = s; c < end; c++)
        n += *c == ',';
    return n;
}

static void check_op_at(const kt_op *op, kt_phase phase)
{
    kt_point pt;
    memset(&pt, 0, sizeof(pt));
    pt.model = (kt_model){"t", 64, 4, 2, 16, 96, 2};
    pt.batch_size = 3;
    pt.context_length = 5;
    pt.phase = phase;
    pt.role = KT_ROLE_GATE_UP;
    kt_param_value in[KT_MAX_PARAMS];
    kt_param_defaults(in, op->input_params, op->n_input_params);
    kt_problem p;
    assert_int_equal(op->shape(&p, &pt, KT_DTYPE_FP32, in), KT_OK);
    const kt_op_tensor_doc *t;
    int n = kt_op_tensor_docs(op->name, &t);
    if (n != p.n_inputs + p.n_outputs)
        print_message("op %s: %d rows in the table, %d + %d tensors from shape()\n", op->name, n,
                      p.n_inputs, p.n_outputs);
    assert_int_equal(n, p.n_inputs + p.n_outputs);
    for (int i = 0; i < n; i++) {
        if (strcmp(t[i].name, p.tensors[i].name) != 0)
            print_message("op %s tensor %d: '%s' in the table, '%s' from shape()\n", op->name, i,
                          t[i].name, p.tensors[i].name);
        assert_string_equal(t[i].op, op->name);
        assert_string_equal(t[i].name, p.tensors[i].name);
        assert_int_equal(t[i].output, i >= p.n_inputs);
        int d = dims_in(t[i].shape, phase == KT_PHASE_PREFILL);
        if (d >= 0)
            assert_int_equal(d, p.tensors[i].ndim);
        assert_true(strlen(t[i].layout) > 0);
        assert_true(strlen(t[i].dtype) > 0);
    }
}

static void test_table_matches_every_op(void **unused)
{
    (void)unused;
    int with_tensors = 0;
    for (int i = 0; i < kt_op_count(); i++) {
        const kt_op *op = kt_op_at(i);
        check_op_at(op, KT_PHASE_DECODE);
        if (op->axes & KT_AXIS_PHASE)
            check_op_at(op, KT_PHASE_PREFILL);
        const kt_op_tensor_doc *t;
        with_tensors += kt_op_tensor_docs(op->name, &t) > 0;
    }
    assert_true(with_tensors >= 5);
}

static void test_unknown_op_has_no_rows(void **unused)
{
    (void)unused;
    const kt_op_tensor_doc *t = (const kt_op_tensor_doc *)1;
    assert_int_equal(kt_op_tensor_docs("no_such_op", &t), 0);
    assert_null(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table_matches_every_op),
        cmocka_unit_test(test_unknown_op_has_no_rows),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
