/*
 * test_checksum.c - every XXH3-128 build libcore may pick agrees with
 * libxxhash on every length and alignment.
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>
#include <xxhash.h>

#include "cache/checksum.h"
#include "vyre/error.h"

static void check_variant(int variant)
{
    enum { N = (1 << 20) + 64 };
    uint8_t *buf = malloc(N);
    cr_assert_not_null(buf);
    for (size_t i = 0; i < N; i++)
        buf[i] = (uint8_t)((i * 2654435761u) >> 11);
    uint64_t got[2];
    if (vyre__xxh3_128_variant(variant, buf, 1, got) == VYRE_ENOTSUP) {
        free(buf);
        cr_skip_test("this CPU has no XXH3 build %d", variant);
    }
    static const size_t big[] = {32767, 32768, 65536, 65537, 262144, 1 << 20};
    for (size_t n = 0; n <= 4200 + sizeof big / sizeof big[0]; n++) {
        size_t len = n <= 4200 ? n : big[n - 4201];
        const uint8_t *p = buf + (n % 7);
        XXH128_hash_t want = XXH3_128bits(p, len);
        cr_assert_eq(vyre__xxh3_128_variant(variant, p, len, got), VYRE_OK);
        cr_assert(got[0] == want.low64 && got[1] == want.high64, "build %d, length %zu", variant,
                  len);
        vyre__xxh3_128(p, len, got); /* whatever the dispatcher picks */
        cr_assert(got[0] == want.low64 && got[1] == want.high64, "dispatch, length %zu", len);
    }
    free(buf);
}

Test(checksum, library_build)
{
    check_variant(0);
}

Test(checksum, avx2_build)
{
    check_variant(1);
}

Test(checksum, avx512_build)
{
    check_variant(2);
}

Test(checksum, unknown_build_is_refused)
{
    uint64_t out[2] = {7, 7};
    cr_assert_eq(vyre__xxh3_128_variant(9, "x", 1, out), VYRE_ENOTSUP);
    cr_assert_eq(out[0], 7);
}
