/* test_sha256.c - the SHA-256 wrapper against the FIPS 180-2 test vectors. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "util/sha256.h"

#include <stdlib.h>
#include <string.h>

static void test_vectors(void **state)
{
    (void)state;
    char hex[65];
    assert_int_equal(kt_sha256_hex(hex, "abc", 3), 0);
    assert_string_equal(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    assert_int_equal(kt_sha256_hex(hex, "", 0), 0);
    assert_string_equal(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    const char *two_blocks = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    assert_int_equal(kt_sha256_hex(hex, two_blocks, strlen(two_blocks)), 0);
    assert_string_equal(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

/* A million 'a's: many update blocks, and bytes that are not text. */
static void test_million_a(void **state)
{
    (void)state;
    char hex[65];
    char *buf = malloc(1000000);
    assert_non_null(buf);
    memset(buf, 'a', 1000000);
    assert_int_equal(kt_sha256_hex(hex, buf, 1000000), 0);
    assert_string_equal(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
    free(buf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vectors),
        cmocka_unit_test(test_million_a),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
