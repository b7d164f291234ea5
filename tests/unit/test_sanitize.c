/* test_sanitize.c - text made safe for a terminal and for JSON: control bytes escaped,
 * well-formed UTF-8 kept, every byte outside it (a stray continuation, an overlong form, a
 * surrogate, a code point past U+10FFFF, a sequence cut short) escaped, and cuts that fall
 * between characters. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "util/sanitize.h"

#include <string.h>

static const char *clean(const char *src)
{
    static char buf[128];
    return kt_sanitize(buf, sizeof(buf), src);
}

static void test_controls_and_well_formed_text(void **state)
{
    (void)state;
    assert_string_equal(clean("a\nb\tc\x1b[2J"), "a\\nb\\tc\\x1b[2J");
    /* two-, three- and four-byte characters pass as they are */
    assert_string_equal(clean("\xc3\xa9 \xe2\x80\x94 \xf0\x9f\x98\x80"),
                        "\xc3\xa9 \xe2\x80\x94 \xf0\x9f\x98\x80");
}

static void test_bytes_outside_utf8(void **state)
{
    (void)state;
    assert_string_equal(clean("\xff"), "\\xff");
    assert_string_equal(clean("\x80x"), "\\x80x");                 /* a stray continuation byte */
    assert_string_equal(clean("\xc0\xaf"), "\\xc0\\xaf");          /* overlong '/' */
    assert_string_equal(clean("\xe0\x80\xaf"), "\\xe0\\x80\\xaf"); /* overlong, 3 bytes */
    assert_string_equal(clean("\xed\xa0\x80"), "\\xed\\xa0\\x80"); /* a surrogate */
    assert_string_equal(clean("\xf4\x90\x80\x80"), "\\xf4\\x90\\x80\\x80"); /* > U+10FFFF */
    assert_string_equal(clean("\xe2\x80"), "\\xe2\\x80"); /* cut short by the end */
    assert_string_equal(clean("\xc3x"), "\\xc3x");        /* cut short by ASCII */
}

static void test_cuts_fall_between_characters(void **state)
{
    (void)state;
    char out[6];
    assert_string_equal(kt_sanitize(out, sizeof(out), "ab\xc3\xa9\xc3\xa9"), "ab\xc3\xa9");
    assert_string_equal(kt_sanitize(out, sizeof(out), "abcd\n"), "abcd");
    assert_string_equal(kt_sanitize(out, 4, "a\n"), "a\\n");
    char cut[] = "ab\xe2\x80"; /* what snprintf leaves of "ab\u2014" in 5 bytes */
    kt_utf8_trim(cut);
    assert_string_equal(cut, "ab");
    char whole[] = "ab\xe2\x80\x94";
    kt_utf8_trim(whole);
    assert_string_equal(whole, "ab\xe2\x80\x94");
    char ascii[] = "abc";
    kt_utf8_trim(ascii);
    assert_string_equal(ascii, "abc");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_controls_and_well_formed_text),
        cmocka_unit_test(test_bytes_outside_utf8),
        cmocka_unit_test(test_cuts_fall_between_characters),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
