/*
 * key.c - pipeline cache keys (see vyre/key.h for the encoding).
 *
 * The encoding is the on-disk identity of every blob: change it only
 * together with VYRE_KEY_VERSION.
 */
#include "vyre/key.h"

#include <openssl/evp.h>
#include <string.h>

#include "base/internal.h"
#include "cache/key_internal.h"

enum field_tag {
    TAG_BACKEND = 1,
    TAG_TOOLCHAIN = 2,
    TAG_ARCH = 3,
    TAG_FEATURES = 4,
    TAG_OPTIONS = 5,
    TAG_ENTRY = 6,
    TAG_SOURCE_KIND = 7,
    TAG_SOURCE = 8,
};

static void put_u64(EVP_MD_CTX *ctx, uint64_t v)
{
    unsigned char b[8];
    for (int i = 0; i < 8; i++)
        b[i] = (unsigned char)(v >> (8 * i));
    EVP_DigestUpdate(ctx, b, sizeof b);
}

static void put_bytes(EVP_MD_CTX *ctx, const void *p, size_t n)
{
    put_u64(ctx, (uint64_t)n);
    if (n)
        EVP_DigestUpdate(ctx, p, n);
}

static void put_field(EVP_MD_CTX *ctx, unsigned char tag, const void *p, size_t n)
{
    EVP_DigestUpdate(ctx, &tag, 1);
    put_bytes(ctx, p, n);
}

static void put_str(EVP_MD_CTX *ctx, unsigned char tag, const char *s)
{
    put_field(ctx, tag, s ? s : "", s ? strlen(s) : 0);
}

int vyre__key_compute_version(const vyre_key_input *in, uint32_t version, vyre_key *out,
                              vyre_error *err)
{
    if (!in || !out)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre__key_compute: NULL argument");
    if ((in->n_options && !in->options) || (in->source_len && !in->source))
        return vyre__fail(err, VYRE_EINVAL, NULL,
                          "vyre__key_compute: NULL options or source with a non-zero count");
    for (size_t i = 0; i < in->n_options; i++)
        if (!in->options[i])
            return vyre__fail(err, VYRE_EINVAL, NULL, "vyre__key_compute: option %zu is NULL", i);

    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    if (!ctx)
        return vyre__fail(err, VYRE_ENOMEM, NULL, "cannot allocate a SHA-256 context");
    int ok = EVP_DigestInit_ex(ctx, EVP_sha256(), NULL);
    if (ok) {
        put_bytes(ctx, VYRE_KEY_DOMAIN, strlen(VYRE_KEY_DOMAIN));
        put_u64(ctx, version);
        put_str(ctx, TAG_BACKEND, in->backend);
        put_str(ctx, TAG_TOOLCHAIN, in->toolchain);
        put_str(ctx, TAG_ARCH, in->arch);
        unsigned char f[8];
        for (int i = 0; i < 8; i++)
            f[i] = (unsigned char)(in->features >> (8 * i));
        put_field(ctx, TAG_FEATURES, f, sizeof f);
        unsigned char tag = TAG_OPTIONS;
        EVP_DigestUpdate(ctx, &tag, 1);
        put_u64(ctx, (uint64_t)in->n_options);
        for (size_t i = 0; i < in->n_options; i++)
            put_bytes(ctx, in->options[i], strlen(in->options[i]));
        put_str(ctx, TAG_ENTRY, in->entry);
        unsigned char k[4];
        for (int i = 0; i < 4; i++)
            k[i] = (unsigned char)((uint32_t)in->source_kind >> (8 * i));
        put_field(ctx, TAG_SOURCE_KIND, k, sizeof k);
        put_field(ctx, TAG_SOURCE, in->source, in->source_len);
        unsigned int n = 0;
        ok = EVP_DigestFinal_ex(ctx, out->bytes, &n) && n == VYRE_KEY_BYTES;
    }
    EVP_MD_CTX_free(ctx);
    if (!ok)
        return vyre__fail(err, VYRE_ENOMEM, NULL, "SHA-256 computation failed in libcrypto");
    return VYRE_OK;
}

int vyre__sha256_hex(const void *p, size_t n, char out[VYRE_KEY_HEX_LEN + 1], vyre_error *err)
{
    vyre_key k;
    unsigned int len = 0;
    out[0] = '\0';
    if (!EVP_Digest(n ? p : "", n, k.bytes, &len, EVP_sha256(), NULL) || len != VYRE_KEY_BYTES)
        return vyre__fail(err, VYRE_ENOMEM, NULL, "SHA-256 computation failed in libcrypto");
    vyre_key_to_hex(&k, out);
    return VYRE_OK;
}

int vyre__key_compute(const vyre_key_input *in, vyre_key *out, vyre_error *err)
{
    return vyre__key_compute_version(in, VYRE_KEY_VERSION, out, err);
}

void vyre_key_to_hex(const vyre_key *key, char hex[VYRE_KEY_HEX_LEN + 1])
{
    static const char digits[] = "0123456789abcdef";
    for (int i = 0; i < VYRE_KEY_BYTES; i++) {
        hex[2 * i] = digits[key->bytes[i] >> 4];
        hex[2 * i + 1] = digits[key->bytes[i] & 15];
    }
    hex[VYRE_KEY_HEX_LEN] = '\0';
}

/* A hex digit's value + 1, 0 for any other byte: a lookup, not branches
 * on the digit, which random keys mispredict (verify, prune and ls parse
 * every row's key: 370 ns a key with branches, 50 ns with the table). */
static const uint8_t k_hex1[256] = {
    ['0'] = 1,  ['1'] = 2,  ['2'] = 3,  ['3'] = 4,  ['4'] = 5,  ['5'] = 6,  ['6'] = 7,  ['7'] = 8,
    ['8'] = 9,  ['9'] = 10, ['a'] = 11, ['b'] = 12, ['c'] = 13, ['d'] = 14, ['e'] = 15, ['f'] = 16,
    ['A'] = 11, ['B'] = 12, ['C'] = 13, ['D'] = 14, ['E'] = 15, ['F'] = 16,
};

int vyre_key_from_hex(const char *hex, vyre_key *out)
{
    if (!hex || !out)
        return VYRE_EINVAL;
    /* Stops at the first bad pair, as a NUL ends the string early. */
    for (int i = 0; i < VYRE_KEY_BYTES; i++) {
        int hi = k_hex1[(unsigned char)hex[2 * i]];
        int lo = hi ? k_hex1[(unsigned char)hex[2 * i + 1]] : 0;
        if (!hi || !lo)
            return VYRE_EINVAL;
        out->bytes[i] = (uint8_t)((hi - 1) << 4 | (lo - 1));
    }
    return hex[VYRE_KEY_HEX_LEN] == '\0' ? VYRE_OK : VYRE_EINVAL;
}
