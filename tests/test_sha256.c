/* test_sha256.c — cmocka tests for the SHA-256 module (FIPS 180-4 vectors
 * plus streaming-vs-one-shot consistency). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "base/base.h"

static void to_hex(const unsigned char md[32], char hex[65])
{
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < 32; i++) {
        hex[2 * i] = digits[md[i] >> 4];
        hex[2 * i + 1] = digits[md[i] & 0x0f];
    }
    hex[64] = '\0';
}

static void check_oneshot(const char *msg, const char *want)
{
    char hex[65];
    tm_sha256_hex(msg, strlen(msg), hex);
    assert_string_equal(hex, want);

    /* the streaming API must agree */
    tm_sha256 c;
    unsigned char md[32];
    tm_sha256_init(&c);
    tm_sha256_update(&c, msg, strlen(msg));
    tm_sha256_final(&c, md);
    to_hex(md, hex);
    assert_string_equal(hex, want);
}

static void test_empty(void **state)
{
    (void)state;
    check_oneshot("", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

static void test_abc(void **state)
{
    (void)state;
    check_oneshot("abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

static void test_448_bits(void **state)
{
    (void)state;
    check_oneshot("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
                  "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

static void test_896_bits(void **state)
{
    (void)state;
    check_oneshot("abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmno"
                  "ijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu",
                  "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
}

static void test_million_a(void **state)
{
    (void)state;
    enum { TOTAL = 1000000, CHUNK = 997 };
    unsigned char chunk[CHUNK];
    memset(chunk, 'a', sizeof chunk);

    tm_sha256 c;
    unsigned char md[32];
    char hex[65];
    tm_sha256_init(&c);
    size_t left = TOTAL;
    while (left > 0) {
        size_t n = left < CHUNK ? left : CHUNK;
        tm_sha256_update(&c, chunk, n);
        left -= n;
    }
    tm_sha256_final(&c, md);
    to_hex(md, hex);
    assert_string_equal(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

static void test_bytewise_matches_oneshot(void **state)
{
    (void)state;
    unsigned char msg[200];
    for (size_t i = 0; i < sizeof msg; i++)
        msg[i] = (unsigned char)(i * 31u + 7u);

    for (size_t len = 0; len <= sizeof msg; len++) {
        char want[65], got[65];
        unsigned char md[32];
        tm_sha256 c;

        tm_sha256_hex(msg, len, want);

        tm_sha256_init(&c);
        for (size_t i = 0; i < len; i++)
            tm_sha256_update(&c, msg + i, 1);
        tm_sha256_update(&c, msg, 0); /* empty updates are no-ops */
        tm_sha256_final(&c, md);
        to_hex(md, got);
        assert_string_equal(got, want);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_empty),
        cmocka_unit_test(test_abc),
        cmocka_unit_test(test_448_bits),
        cmocka_unit_test(test_896_bits),
        cmocka_unit_test(test_million_a),
        cmocka_unit_test(test_bytewise_matches_oneshot),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
