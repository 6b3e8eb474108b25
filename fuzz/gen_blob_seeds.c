/*
 * gen_blob_seeds.c - writes the seed corpus for fuzz_blob_header into the
 * directory given as argv[1]: a valid header (with and without a payload
 * after it), a truncated one, one with a bad magic and one of another key
 * version. The seeds are committed under fuzz/corpus/blob_header/; rerun
 * this after a format change.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <xxhash.h>

#include "vyre/blob.h"

static int put(const char *dir, const char *name, const void *data, size_t n)
{
    char path[4096];
    int len = snprintf(path, sizeof path, "%s/%s", dir, name);
    if (len < 0 || (size_t)len >= sizeof path)
        return 1;
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, n, f) != n || fclose(f) != 0) {
        fprintf(stderr, "gen_blob_seeds: cannot write '%s'\n", path);
        return 1;
    }
    return 0;
}

static void reseal(uint8_t *h)
{
    uint64_t s = (uint64_t)XXH3_64bits(h, VYRE_BLOB_HEADER_SIZE - 8);
    for (int i = 0; i < 8; i++)
        h[VYRE_BLOB_HEADER_SIZE - 8 + i] = (uint8_t)(s >> (8 * i));
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: gen_blob_seeds DIR\n");
        return 2;
    }
    static const char payload[] = ".version 8.0\n.target sm_90a\n";
    vyre_blob_header h;
    memset(&h, 0, sizeof h);
    h.format_version = VYRE_BLOB_FORMAT_VERSION;
    h.key_version = VYRE_KEY_VERSION;
    for (int i = 0; i < VYRE_KEY_BYTES; i++)
        h.key.bytes[i] = (uint8_t)(i * 7 + 3);
    h.kind = VYRE_BLOB_PTX;
    snprintf(h.arch, sizeof h.arch, "sm_90a");
    snprintf(h.toolchain, sizeof h.toolchain, "nvrtc-13.0;driver-13000");
    h.raw_size = h.stored_size = sizeof payload - 1;
    h.created_unix_ns = INT64_C(1700000000000000000);
    h.compile_ns = 42000000;
    XXH128_canonical_t c;
    XXH128_canonicalFromHash(&c, XXH3_128bits(payload, sizeof payload - 1));
    memcpy(h.payload_xxh128, c.digest, 16);

    uint8_t buf[VYRE_BLOB_HEADER_SIZE + sizeof payload];
    vyre_error err;
    if (vyre_blob_header_encode(&h, buf, &err) != VYRE_OK) {
        fprintf(stderr, "gen_blob_seeds: %s\n", err.message);
        return 1;
    }
    memcpy(buf + VYRE_BLOB_HEADER_SIZE, payload, sizeof payload - 1);
    int bad = 0;
    bad |= put(argv[1], "valid-header", buf, VYRE_BLOB_HEADER_SIZE);
    bad |= put(argv[1], "valid-blob", buf, VYRE_BLOB_HEADER_SIZE + sizeof payload - 1);
    bad |= put(argv[1], "truncated", buf, 100);
    uint8_t other[VYRE_BLOB_HEADER_SIZE];
    memcpy(other, buf, sizeof other);
    memcpy(other,
           "\x7f"
           "ELF\x02\x01\x01\x00",
           8);
    bad |= put(argv[1], "bad-magic", other, sizeof other);
    memcpy(other, buf, sizeof other);
    other[12] = (uint8_t)(VYRE_KEY_VERSION + 1);
    reseal(other);
    bad |= put(argv[1], "other-key-version", other, sizeof other);
    return bad;
}
