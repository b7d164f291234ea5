/* test_error.c - the thread's last error message: set, coded, cleared, truncated, and a
 * message built from the previous one (which once overwrote itself while formatting). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "kernel.h"

#include <string.h>

static void test_set_code_clear(void **state)
{
    (void)state;
    assert_int_equal(kt_error_set("bad '%s' at %d", "x", 3), KT_ERROR);
    assert_string_equal(kt_error_last(), "bad 'x' at 3");
    assert_int_equal(kt_error_code(KT_ENOMEM, "out of %s", "memory"), KT_ENOMEM);
    assert_string_equal(kt_error_last(), "out of memory");
    kt_error_clear();
    assert_string_equal(kt_error_last(), "");
}

/* Wrapping the previous message, as a caller adds its context: the old text is read whole. */
static void test_wrap_the_previous_message(void **state)
{
    (void)state;
    kt_error_set("worker died: signal %d", 11);
    kt_error_set("point '%s': %s", "b1/t64", kt_error_last());
    assert_string_equal(kt_error_last(), "point 'b1/t64': worker died: signal 11");
    kt_error_set("%s; continue with --resume %s", kt_error_last(), "out");
    assert_string_equal(kt_error_last(),
                        "point 'b1/t64': worker died: signal 11; continue with --resume out");
}

/* A wrapped message longer than the buffer is cut, still terminated, its head intact. */
static void test_long_message_is_cut(void **state)
{
    (void)state;
    char long_text[2000];
    memset(long_text, 'a', sizeof(long_text) - 1);
    long_text[sizeof(long_text) - 1] = '\0';
    kt_error_set("%s", long_text);
    size_t n = strlen(kt_error_last());
    assert_true(n > 500 && n < sizeof(long_text) - 1);
    kt_error_set("context: %s", kt_error_last());
    assert_int_equal(strlen(kt_error_last()), n);
    assert_int_equal(strncmp(kt_error_last(), "context: aaaa", 13), 0);
    assert_int_equal(strspn(kt_error_last() + 9, "a"), n - 9);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_set_code_clear),
        cmocka_unit_test(test_wrap_the_previous_message),
        cmocka_unit_test(test_long_message_is_cut),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
