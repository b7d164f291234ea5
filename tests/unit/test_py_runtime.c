/* test_py_runtime.c - the embedded interpreter (kernels/python/py_runtime.h): ktrial's buffers
 * reach numpy and torch without a copy (a write in Python lands in the C buffer, in fp32, fp16
 * and bf16), an exception is a message ending with the traceback's last lines, the arity check
 * names the signature, and memory ranges see a view of an input. Skipped (77) in a build
 * without Python, or where torch is not importable for the torch cases. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "python/py_runtime.h"

#include <string.h>

static const char SOURCE[] = "def double(inputs, outputs, problem):\n"
                             "    outputs[0][...] = inputs[0] * problem['scale']\n"
                             "def fails(inputs, outputs, problem):\n"
                             "    return helper(inputs)\n"
                             "def helper(x):\n"
                             "    raise ValueError('no such luck')\n"
                             "def two(a, b):\n"
                             "    pass\n";

static kt_pyobj *module;

/* fn(inputs=[x], outputs=[y], {'scale': 3}) over the two buffers, in framework 'fw'. */
static int call_over(kt_py_framework fw, const char *fn_name, void *x, void *y, kt_dtype dtype,
                     int64_t n)
{
    kt_py_gil g = kt_py_enter();
    kt_pyobj *fn = NULL, *tx = NULL, *ty = NULL, *in = NULL, *out = NULL, *prob = NULL,
             *args = NULL, *res = NULL;
    int64_t shape[1] = {n};
    kt_py_buffer bx = {x, dtype, 1, shape, NULL, 0, 0}, by = {y, dtype, 1, shape, NULL, 0, 0};
    int err = kt_py_attr_callable(&fn, module, fn_name);
    if (err == KT_OK && (err = kt_py_wrap(&tx, &bx, fw)) == KT_OK &&
        (err = kt_py_wrap(&ty, &by, fw)) == KT_OK && (err = kt_py_tuple(&in, &tx, 1, 1)) == KT_OK &&
        (err = kt_py_tuple(&out, &ty, 1, 1)) == KT_OK && (err = kt_py_dict(&prob)) == KT_OK &&
        (err = kt_py_dict_set_int(prob, "scale", 3)) == KT_OK) {
        kt_pyobj *items[3] = {in, out, prob};
        in = out = prob = NULL;
        if ((err = kt_py_tuple(&args, items, 3, 0)) == KT_OK)
            err = kt_py_call(&res, fn, args, "the call");
    }
    kt_py_decref(res);
    kt_py_decref(args);
    kt_py_decref(fn);
    kt_py_leave(g);
    return err;
}

static int setup(void **state)
{
    (void)state;
    if (!kt_py_built())
        return 0;
    if (kt_py_start(KT_PY_NUMPY, 1) != KT_OK)
        return -1;
    kt_py_gil g = kt_py_enter();
    int err = kt_py_import_source(&module, SOURCE, "<test>", "kt_test_module");
    kt_py_leave(g);
    return err;
}

static void test_numpy_writes_into_the_buffer(void **state)
{
    (void)state;
    if (!kt_py_built())
        skip();
    float x[4] = {1, 2, 3, -4}, y[4] = {0};
    assert_int_equal(call_over(KT_PY_NUMPY, "double", x, y, KT_DTYPE_FP32, 4), KT_OK);
    assert_true(y[0] == 3 && y[1] == 6 && y[2] == 9 && y[3] == -12);
    uint16_t h[2] = {kt_fp32_to_fp16(1.5f), kt_fp32_to_fp16(-2)}, hy[2] = {0};
    assert_int_equal(call_over(KT_PY_NUMPY, "double", h, hy, KT_DTYPE_FP16, 2), KT_OK);
    assert_true(kt_fp16_to_fp32(hy[0]) == 4.5f && kt_fp16_to_fp32(hy[1]) == -6);
    /* numpy has no bfloat16: refused, with the way out */
    assert_int_equal(call_over(KT_PY_NUMPY, "double", h, hy, KT_DTYPE_BF16, 2), KT_EUNSUPPORTED);
    assert_non_null(strstr(kt_error_last(), "framework: torch"));
}

static void test_torch_bf16(void **state)
{
    (void)state;
    if (!kt_py_built() || kt_py_start(KT_PY_TORCH, 1) != KT_OK)
        skip();
    uint16_t x[3] = {kt_fp32_to_bf16(1), kt_fp32_to_bf16(0.5f), kt_fp32_to_bf16(-8)}, y[3] = {0};
    assert_int_equal(call_over(KT_PY_TORCH, "double", x, y, KT_DTYPE_BF16, 3), KT_OK);
    assert_true(kt_bf16_to_fp32(y[0]) == 3 && kt_bf16_to_fp32(y[1]) == 1.5f &&
                kt_bf16_to_fp32(y[2]) == -24);
}

static void test_exception_ends_with_the_traceback(void **state)
{
    (void)state;
    if (!kt_py_built())
        skip();
    float x[1] = {1}, y[1] = {0};
    assert_int_equal(call_over(KT_PY_NUMPY, "fails", x, y, KT_DTYPE_FP32, 1), KT_ERROR);
    const char *m = kt_error_last();
    assert_non_null(strstr(m, "the call: traceback: "));
    assert_non_null(strstr(m, "in helper: raise ValueError('no such luck')"));
    const char *end = "ValueError: no such luck";
    assert_string_equal(m + strlen(m) - strlen(end), end);
    assert_null(strchr(m, '\n'));
}

static void test_arity_and_missing(void **state)
{
    (void)state;
    if (!kt_py_built())
        skip();
    kt_py_gil g = kt_py_enter();
    kt_pyobj *fn = NULL;
    assert_int_equal(kt_py_attr_callable(&fn, module, "nowhere"), KT_EINVAL);
    assert_non_null(strstr(kt_error_last(), "defines no function 'nowhere'"));
    assert_int_equal(kt_py_attr_callable(&fn, module, "two"), KT_OK);
    assert_int_equal(kt_py_check_arity(fn, 3), KT_EINVAL);
    assert_non_null(strstr(kt_error_last(), "two(a, b) cannot be called with 3"));
    kt_py_decref(fn);
    assert_int_equal(kt_py_attr_callable(&fn, module, "double"), KT_OK);
    assert_int_equal(kt_py_check_arity(fn, 3), KT_OK);
    kt_py_decref(fn);
    kt_py_leave(g);
}

static void test_memory_range_of_a_view(void **state)
{
    (void)state;
    if (!kt_py_built())
        skip();
    float x[8] = {0};
    int64_t shape[1] = {8};
    kt_py_buffer b = {x, KT_DTYPE_FP32, 1, shape, NULL, 0, 0};
    kt_py_gil g = kt_py_enter();
    kt_pyobj *t = NULL;
    uintptr_t lo = 0, hi = 0;
    assert_int_equal(kt_py_wrap(&t, &b, KT_PY_NUMPY), KT_OK);
    assert_int_equal(kt_py_memory_range(t, &lo, &hi), KT_OK);
    assert_true(lo == (uintptr_t)x && hi == (uintptr_t)(x + 8));
    kt_py_decref(t);
    kt_py_leave(g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_numpy_writes_into_the_buffer),
        cmocka_unit_test(test_torch_bf16),
        cmocka_unit_test(test_exception_ends_with_the_traceback),
        cmocka_unit_test(test_arity_and_missing),
        cmocka_unit_test(test_memory_range_of_a_view),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
