/*
 * test_blob.c - blob format v1: header encoding and validation, durable
 * store, validated load, quarantine, reject counters.
 *
 * Every filesystem case runs in a fresh temp directory laid out as a cache
 * (tmp/, blobs/, quarantine/).
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <xxhash.h>

#include "cache/blob_internal.h"
#include "testutil.h"
#include "vyre/blob.h"

#define PATHSZ 4096

typedef struct cache {
    char root[PATHSZ];
} cache;

static void sub(char *out, const cache *c, const char *rel)
{
    int n = snprintf(out, PATHSZ, "%s/%s", c->root, rel);
    cr_assert(n > 0 && n < PATHSZ);
}

static void cache_init(cache *c)
{
    tu_mkdtemp(c->root, sizeof c->root);
    char p[PATHSZ];
    static const char *const dirs[] = {"tmp", "blobs", "quarantine"};
    for (size_t i = 0; i < 3; i++) {
        sub(p, c, dirs[i]);
        cr_assert_eq(mkdir(p, 0700), 0, "mkdir %s: %s", p, strerror(errno));
    }
}

static void cache_fini(cache *c)
{
    tu_rm_rf(c->root);
}

static vyre_key key_of(unsigned seed)
{
    vyre_key k;
    for (int i = 0; i < VYRE_KEY_BYTES; i++)
        k.bytes[i] = (uint8_t)(seed * 131u + (unsigned)i * 7u + 1u);
    return k;
}

static vyre_blob_header header_for(vyre_key k)
{
    vyre_blob_header h;
    memset(&h, 0, sizeof h);
    h.format_version = VYRE_BLOB_FORMAT_VERSION;
    h.key_version = VYRE_KEY_VERSION;
    h.key = k;
    h.kind = VYRE_BLOB_CUBIN;
    snprintf(h.arch, sizeof h.arch, "sm_90a");
    snprintf(h.toolchain, sizeof h.toolchain, "nvrtc-13.0;driver-13000");
    h.compile_ns = 123456789;
    return h;
}

/* A valid encoded header with a payload of n bytes (checksum of `payload`). */
static void valid_header(uint8_t out[VYRE_BLOB_HEADER_SIZE], vyre_key k, const void *payload,
                         size_t n)
{
    vyre_blob_header h = header_for(k);
    h.stored_size = h.raw_size = n;
    h.created_unix_ns = 1700000000000000000;
    XXH128_canonical_t c;
    XXH128_canonicalFromHash(&c, XXH3_128bits(n ? payload : "", n));
    memcpy(h.payload_xxh128, c.digest, 16);
    vyre_error e;
    cr_assert_eq(vyre_blob_header_encode(&h, out, &e), 0, "%s", e.message);
}

/* Recomputes the header checksum after a deliberate edit. */
static void reseal(uint8_t *buf)
{
    uint64_t s = XXH3_64bits(buf, 248);
    for (int i = 0; i < 8; i++)
        buf[248 + i] = (uint8_t)(s >> (8 * i));
}

static void put64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static void put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static void blob_path(const cache *c, vyre_key k, char *out)
{
    vyre_error e;
    cr_assert_eq(vyre_blob_path(c->root, &k, out, PATHSZ, &e), 0, "%s", e.message);
}

/* Writes raw bytes where the blob for k lives (creating its 2-hex dir). */
static void plant(const cache *c, vyre_key k, const void *data, size_t n)
{
    char p[PATHSZ], d[PATHSZ];
    blob_path(c, k, p);
    snprintf(d, sizeof d, "%s", p);
    *strrchr(d, '/') = '\0';
    mkdir(d, 0700);
    tu_write_file(p, data, n);
}

/* A header + payload file image. Caller frees. */
static uint8_t *image(vyre_key k, size_t n, size_t *len)
{
    uint8_t *buf = malloc(VYRE_BLOB_HEADER_SIZE + n + 1);
    cr_assert_not_null(buf);
    for (size_t i = 0; i < n; i++)
        buf[VYRE_BLOB_HEADER_SIZE + i] = (uint8_t)(i * 37 + 11);
    valid_header(buf, k, buf + VYRE_BLOB_HEADER_SIZE, n);
    *len = VYRE_BLOB_HEADER_SIZE + n;
    return buf;
}

static size_t count_entries(const cache *c, const char *rel)
{
    char p[PATHSZ];
    sub(p, c, rel);
    DIR *d = opendir(p);
    cr_assert_not_null(d, "opendir %s", p);
    size_t n = 0;
    struct dirent *de;
    while ((de = readdir(d)))
        if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
            n++;
    closedir(d);
    return n;
}

/* Finds "quarantine/<hex>.vblob.<reason>.*"; returns 1 and its path. */
static int quarantined(const cache *c, vyre_key k, vyre_blob_reject why, char *found)
{
    char hex[VYRE_KEY_HEX_LEN + 1], prefix[256], q[PATHSZ];
    vyre_key_to_hex(&k, hex);
    snprintf(prefix, sizeof prefix, "%s.vblob.%s.", hex, vyre_blob_reject_name(why));
    sub(q, c, "quarantine");
    DIR *d = opendir(q);
    if (!d)
        return 0;
    struct dirent *de;
    int hit = 0;
    while ((de = readdir(d))) {
        if (strncmp(de->d_name, prefix, strlen(prefix)) == 0) {
            hit = 1;
            if (found) {
                int n = snprintf(found, PATHSZ, "%s/%s", q, de->d_name);
                cr_assert(n > 0 && n < PATHSZ);
            }
            break;
        }
    }
    closedir(d);
    return hit;
}

static int exists(const char *p)
{
    struct stat st;
    return lstat(p, &st) == 0;
}

/* Loads k and expects a reject with `why`, the file quarantined. */
static void expect_reject(const cache *c, vyre_key k, vyre_blob_reject want, const char *what)
{
    vyre_blob *b = (vyre_blob *)0x1;
    vyre_blob_reject why = VYRE_REJECT_NONE;
    vyre_error e;
    vyre_error_clear(&e);
    int rc = vyre__blob_load(c->root, &k, &b, &why, &e);
    int code = want == VYRE_REJECT_VERSION ? VYRE_EVERSION : VYRE_ECORRUPT;
    cr_assert_eq(rc, code, "%s: rc %s, want %s (%s)", what, vyre_err_name(rc), vyre_err_name(code),
                 e.message);
    cr_assert_null(b, "%s: no blob on a reject", what);
    cr_assert_eq(why, want, "%s: why %s, want %s", what, vyre_blob_reject_name(why),
                 vyre_blob_reject_name(want));
    cr_assert_eq(e.code, code);
    cr_assert_neq(e.hint[0], '\0', "%s: a hint", what);
    cr_assert(strstr(e.message, vyre_blob_reject_name(want)), "%s: message '%s'", what, e.message);
    char p[PATHSZ];
    blob_path(c, k, p);
    cr_assert(!exists(p), "%s: the bad file left blobs/", what);
    cr_assert(quarantined(c, k, want, NULL), "%s: not quarantined", what);
}

/* ---- names ------------------------------------------------------------- */

Test(blob, names)
{
    static const char *const want[] = {
        "none",         "not-regular",     "truncated", "bad-magic",
        "version",      "header-checksum", "bad-field", "payload-checksum",
        "key-mismatch", "trailing-bytes",  "stale"};
    cr_assert_eq(sizeof want / sizeof want[0], VYRE_REJECT_COUNT);
    for (int i = 0; i < VYRE_REJECT_COUNT; i++)
        cr_assert_str_eq(vyre_blob_reject_name((vyre_blob_reject)i), want[i]);
    cr_assert_str_eq(vyre_blob_reject_name(VYRE_REJECT_COUNT), "unknown");

    cr_assert_str_eq(vyre_blob_kind_name(VYRE_BLOB_CUBIN), "cubin");
    cr_assert_str_eq(vyre_blob_kind_name(VYRE_BLOB_PTX), "ptx");
    cr_assert_str_eq(vyre_blob_kind_name(VYRE_BLOB_FATBIN), "fatbin");
    cr_assert_null(vyre_blob_kind_name(0));
    cr_assert_null(vyre_blob_kind_name(4));
    cr_assert_null(vyre_blob_kind_name(UINT32_MAX));
    uint32_t k = 0;
    cr_assert_eq(vyre_blob_kind_parse("ptx", &k), 0);
    cr_assert_eq(k, VYRE_BLOB_PTX);
    cr_assert_eq(vyre_blob_kind_parse("fatbin", &k), 0);
    cr_assert_eq(k, VYRE_BLOB_FATBIN);
    cr_assert_eq(vyre_blob_kind_parse("PTX", &k), VYRE_EINVAL);
    cr_assert_eq(vyre_blob_kind_parse("", &k), VYRE_EINVAL);
    cr_assert_eq(vyre_blob_kind_parse(NULL, &k), VYRE_EINVAL);
}

/* The names removals may touch (blob_internal.h): vyre's own, and
 * nothing a user would call a file. */
Test(blob, own_names_are_recognised_and_nothing_else)
{
    char hex[VYRE_KEY_HEX_LEN + 1], blob[96], name[256];
    memset(hex, 'a', VYRE_KEY_HEX_LEN);
    hex[VYRE_KEY_HEX_LEN] = '\0';
    snprintf(blob, sizeof blob, "%s.vblob", hex);
    cr_assert(vyre__blob_is_blob_name(blob));
    static const char *const not_blobs[] = {"photo.jpg", "a.vblob", "", ".vblob"};
    for (size_t i = 0; i < sizeof not_blobs / sizeof not_blobs[0]; i++)
        cr_assert(!vyre__blob_is_blob_name(not_blobs[i]), "'%s'", not_blobs[i]);
    char upper[128];
    snprintf(upper, sizeof upper, "%s", blob);
    upper[3] = 'A';
    cr_assert(!vyre__blob_is_blob_name(upper));

    /* Temp names as the store and a removal make them. */
    cr_assert_eq(vyre__blob_tmp_name(hex, VYRE__TMP_SUFFIX, name, sizeof name), 0);
    cr_assert(vyre__blob_is_tmp_name(name), "'%s'", name);
    cr_assert(!vyre__blob_is_doomed_name(name), "'%s'", name);
    cr_assert_eq(vyre__blob_tmp_name(hex, VYRE__DOOMED_SUFFIX, name, sizeof name), 0);
    cr_assert(vyre__blob_is_tmp_name(name) && vyre__blob_is_doomed_name(name), "'%s'", name);
    static const char *const not_tmp[] = {"thesis.tex", "stale.partial", "debris.tmp",
                                          "0123456789abcdef.1.2.0123456789abcdef.tmp~",
                                          "0123456789abcdef..2.0123456789abcdef.tmp"};
    for (size_t i = 0; i < sizeof not_tmp / sizeof not_tmp[0]; i++)
        cr_assert(!vyre__blob_is_tmp_name(not_tmp[i]), "'%s'", not_tmp[i]);

    /* Quarantine names: <blob>.<reason>.<secs>[.<pid>-<n>]. */
    snprintf(name, sizeof name, "%s.payload-checksum.1700000000", blob);
    cr_assert(vyre__blob_is_quarantine_name(name), "'%s'", name);
    snprintf(name, sizeof name, "%s.truncated.1700000000.42-7", blob);
    cr_assert(vyre__blob_is_quarantine_name(name), "'%s'", name);
    snprintf(name, sizeof name, "%s.no-such-reason.1700000000", blob);
    cr_assert(!vyre__blob_is_quarantine_name(name), "'%s'", name);
    cr_assert(!vyre__blob_is_quarantine_name("incident.log"));
    cr_assert(!vyre__blob_is_quarantine_name("photo.jpg.bad-field.1700000000"));
    cr_assert(!vyre__blob_is_quarantine_name(blob));
}

Test(blob, path_layout)
{
    vyre_key k;
    cr_assert_eq(vyre_key_from_hex("ab"
                                   "00112233445566778899aabbccddeeff"
                                   "00112233445566778899aabbccddee",
                                   &k),
                 0);
    char p[PATHSZ];
    cr_assert_eq(vyre_blob_path("/c", &k, p, sizeof p, NULL), 0);
    cr_assert_str_eq(p, "/c/blobs/ab/ab00112233445566778899aabbccddeeff00112233445566778899aabbccdd"
                        "ee.vblob");
    cr_assert_eq(vyre_blob_path("/c/", &k, p, sizeof p, NULL), 0);
    cr_assert_str_eq(p, "/c/blobs/ab/ab00112233445566778899aabbccddeeff00112233445566778899aabbccdd"
                        "ee.vblob");
    vyre_error e;
    cr_assert_eq(vyre_blob_path("/c", &k, p, 40, &e), VYRE_ETOOBIG);
    cr_assert_neq(e.hint[0], '\0');
    cr_assert_eq(vyre_blob_path("", &k, p, sizeof p, &e), VYRE_EINVAL);
}

Test(blob, payload_sum_matches_libxxhash)
{
    /* blob_header.c may use its own AVX2 build of XXH3: it must agree with the
     * library on every length and alignment. */
    enum { N = (1 << 20) + 64 };
    uint8_t *buf = malloc(N);
    cr_assert_not_null(buf);
    for (size_t i = 0; i < N; i++)
        buf[i] = (uint8_t)((i * 2654435761u) >> 11);
    for (size_t n = 0; n <= 4200; n++) {
        const uint8_t *p = buf + (n % 7);
        uint8_t got[16];
        XXH128_canonical_t want;
        XXH128_canonicalFromHash(&want, XXH3_128bits(p, n));
        vyre__blob_payload_sum(p, n, got);
        cr_assert_eq(memcmp(got, want.digest, 16), 0, "length %zu", n);
    }
    static const size_t big[] = {65536, 65537, 1 << 20};
    for (size_t i = 0; i < 3; i++) {
        uint8_t got[16];
        XXH128_canonical_t want;
        XXH128_canonicalFromHash(&want, XXH3_128bits(buf + 3, big[i]));
        vyre__blob_payload_sum(buf + 3, big[i], got);
        cr_assert_eq(memcmp(got, want.digest, 16), 0, "length %zu", big[i]);
    }
    uint8_t z[16];
    XXH128_canonical_t want;
    XXH128_canonicalFromHash(&want, XXH3_128bits("", 0));
    vyre__blob_payload_sum(NULL, 0, z);
    cr_assert_eq(memcmp(z, want.digest, 16), 0);
    free(buf);
}

/* ---- header ------------------------------------------------------------ */

Test(blob, header_round_trip)
{
    uint8_t buf[VYRE_BLOB_HEADER_SIZE], again[VYRE_BLOB_HEADER_SIZE];
    vyre_key k = key_of(3);
    const char payload[] = "ptx text";
    valid_header(buf, k, payload, sizeof payload);
    cr_assert_eq(memcmp(buf, "VYREBLB\x01", 8), 0);

    vyre_blob_header h;
    vyre_blob_reject why = VYRE_REJECT_COUNT;
    vyre_error e;
    cr_assert_eq(vyre__blob_header_decode(buf, sizeof buf, &h, &why, &e), 0, "%s", e.message);
    cr_assert_eq(why, VYRE_REJECT_NONE);
    cr_assert_eq(h.format_version, 1);
    cr_assert_eq(h.key_version, VYRE_KEY_VERSION);
    cr_assert_eq(memcmp(h.key.bytes, k.bytes, 32), 0);
    cr_assert_eq(h.kind, VYRE_BLOB_CUBIN);
    cr_assert_eq(h.flags, 0);
    cr_assert_str_eq(h.arch, "sm_90a");
    cr_assert_str_eq(h.toolchain, "nvrtc-13.0;driver-13000");
    cr_assert_eq(h.raw_size, sizeof payload);
    cr_assert_eq(h.stored_size, sizeof payload);
    cr_assert_eq(h.created_unix_ns, 1700000000000000000);
    cr_assert_eq(h.compile_ns, 123456789);
    cr_assert_eq(vyre_blob_header_encode(&h, again, &e), 0, "%s", e.message);
    cr_assert_eq(memcmp(buf, again, sizeof buf), 0, "decode then encode is the identity");

    /* Fixed offsets, little-endian (BLOB_FORMAT.md). */
    cr_assert_eq(buf[8], 1);
    cr_assert_eq(buf[12], VYRE_KEY_VERSION);
    cr_assert_eq(memcmp(buf + 16, k.bytes, 32), 0);
    cr_assert_eq(buf[48], VYRE_BLOB_CUBIN);
    cr_assert_str_eq((const char *)buf + 56, "sm_90a");
    cr_assert_str_eq((const char *)buf + 72, "nvrtc-13.0;driver-13000");
    cr_assert_eq(buf[136], sizeof payload);
    cr_assert_eq(buf[144], sizeof payload);
    uint64_t sum = XXH3_64bits(buf, 248), got = 0;
    for (int i = 7; i >= 0; i--)
        got = got << 8 | buf[248 + i];
    cr_assert_eq(got, sum);
    XXH128_canonical_t c;
    XXH128_canonicalFromHash(&c, XXH3_128bits(payload, sizeof payload));
    cr_assert_eq(memcmp(buf + 168, c.digest, 16), 0);
    for (int i = 184; i < 248; i++)
        cr_assert_eq(buf[i], 0, "reserved byte %d", i);
}

Test(blob, encode_rejects_fields_that_do_not_fit)
{
    uint8_t buf[VYRE_BLOB_HEADER_SIZE];
    vyre_error e;
    vyre_blob_header h0 = header_for(key_of(1));
    h0.created_unix_ns = 1;

    vyre_blob_header h = h0;
    cr_assert_eq(vyre_blob_header_encode(&h, buf, &e), 0, "%s", e.message);

    h = h0;
    h.arch[0] = '\0';
    cr_assert_eq(vyre_blob_header_encode(&h, buf, &e), VYRE_EINVAL, "empty arch");
    cr_assert_neq(e.hint[0], '\0');
    h = h0;
    memset(h.arch, 'x', sizeof h.arch);
    cr_assert_eq(vyre_blob_header_encode(&h, buf, &e), VYRE_EINVAL, "unterminated arch");
    h = h0;
    memset(h.toolchain, 'y', sizeof h.toolchain);
    cr_assert_eq(vyre_blob_header_encode(&h, buf, &e), VYRE_EINVAL, "unterminated toolchain");
    h = h0;
    h.kind = 0;
    cr_assert_eq(vyre_blob_header_encode(&h, buf, &e), VYRE_EINVAL, "kind 0");
    cr_assert(strstr(e.message, "'0'"), "%s", e.message);
    h = h0;
    h.kind = 77;
    cr_assert_eq(vyre_blob_header_encode(&h, buf, &e), VYRE_EINVAL, "kind 77");
    h = h0;
    h.flags = 1;
    cr_assert_eq(vyre_blob_header_encode(&h, buf, &e), VYRE_EINVAL, "flags");
    h = h0;
    h.stored_size = h.raw_size = VYRE_BLOB_MAX_PAYLOAD + 1;
    cr_assert_eq(vyre_blob_header_encode(&h, buf, &e), VYRE_EINVAL, "too big");
    h = h0;
    h.raw_size = 5;
    cr_assert_eq(vyre_blob_header_encode(&h, buf, &e), VYRE_EINVAL, "raw != stored");
    h = h0;
    h.format_version = 2;
    cr_assert_eq(vyre_blob_header_encode(&h, buf, &e), VYRE_EINVAL, "format 2");
    h = h0;
    h.created_unix_ns = -1;
    cr_assert_eq(vyre_blob_header_encode(&h, buf, &e), VYRE_EINVAL, "negative time");
    cr_assert_eq(vyre_blob_header_encode(NULL, buf, &e), VYRE_EINVAL);
}

typedef struct corruption {
    const char *what;
    int off;        /* -1: none */
    int width;      /* 1, 4 or 8 bytes written at off, little-endian */
    uint64_t value; /* written at off */
    int reseal;     /* recompute the header checksum afterwards */
    vyre_blob_reject why;
} corruption;

static const corruption corruptions[] = {
    {"magic", 0, 1, 'X', 1, VYRE_REJECT_BAD_MAGIC},
    {"magic version byte", 7, 1, 2, 1, VYRE_REJECT_BAD_MAGIC},
    {"format version 2", 8, 4, 2, 1, VYRE_REJECT_VERSION},
    {"format version 0", 8, 4, 0, 0, VYRE_REJECT_VERSION},
    {"key version 2", 12, 4, VYRE_KEY_VERSION + 1, 1, VYRE_REJECT_VERSION},
    {"key byte", 16, 1, 0xee, 0, VYRE_REJECT_HEADER_SUM},
    {"kind 0", 48, 4, 0, 1, VYRE_REJECT_BAD_FIELD},
    {"kind 4", 48, 4, 4, 1, VYRE_REJECT_BAD_FIELD},
    {"flags", 52, 4, 1, 1, VYRE_REJECT_BAD_FIELD},
    {"empty arch", 56, 1, 0, 1, VYRE_REJECT_BAD_FIELD},
    {"arch junk after NUL", 70, 1, 'z', 1, VYRE_REJECT_BAD_FIELD},
    {"arch unterminated", 56, 8, 0x4141414141414141u, 1, VYRE_REJECT_BAD_FIELD},
    {"toolchain junk after NUL", 135, 1, 'z', 1, VYRE_REJECT_BAD_FIELD},
    {"raw_size != stored_size", 136, 8, 99, 1, VYRE_REJECT_BAD_FIELD},
    {"stored_size 2^63", 144, 8, UINT64_C(1) << 63, 1, VYRE_REJECT_BAD_FIELD},
    {"stored_size over max", 144, 8, VYRE_BLOB_MAX_PAYLOAD + 1, 1, VYRE_REJECT_BAD_FIELD},
    {"negative creation time", 159, 1, 0x80, 1, VYRE_REJECT_BAD_FIELD},
    {"reserved byte", 200, 1, 1, 1, VYRE_REJECT_BAD_FIELD},
    {"last reserved byte", 247, 1, 1, 1, VYRE_REJECT_BAD_FIELD},
    {"header checksum", 248, 1, 0x5a, 0, VYRE_REJECT_HEADER_SUM},
    {"compile_ns without reseal", 160, 1, 0xff, 0, VYRE_REJECT_HEADER_SUM},
};

static void apply(uint8_t *buf, const corruption *c)
{
    if (c->off >= 0) {
        if (c->width == 1)
            buf[c->off] = (uint8_t)c->value;
        else if (c->width == 4)
            put32(buf + c->off, (uint32_t)c->value);
        else
            put64(buf + c->off, c->value);
        if (c->off == 56 && c->width == 8) /* fill the whole arch field */
            put64(buf + 64, c->value);
    }
    if (c->reseal)
        reseal(buf);
}

Test(blob, each_field_corruption_has_its_reason)
{
    for (size_t i = 0; i < sizeof corruptions / sizeof corruptions[0]; i++) {
        const corruption *c = &corruptions[i];
        uint8_t buf[VYRE_BLOB_HEADER_SIZE];
        valid_header(buf, key_of(5), "", 0);
        apply(buf, c);
        vyre_blob_header h;
        memset(&h, 0xa5, sizeof h);
        vyre_blob_reject why = VYRE_REJECT_NONE;
        vyre_error e;
        int rc = vyre__blob_header_decode(buf, sizeof buf, &h, &why, &e);
        int code = c->why == VYRE_REJECT_VERSION ? VYRE_EVERSION : VYRE_ECORRUPT;
        cr_assert_eq(rc, code, "%s: %s", c->what, vyre_err_name(rc));
        cr_assert_eq(why, c->why, "%s: got %s", c->what, vyre_blob_reject_name(why));
        cr_assert_neq(e.hint[0], '\0', "%s", c->what);
        cr_assert(strchr(e.message, '\''), "%s: offending value quoted: %s", c->what, e.message);
    }
}

Test(blob, decode_truncated_at_every_header_length)
{
    uint8_t buf[VYRE_BLOB_HEADER_SIZE];
    valid_header(buf, key_of(6), "", 0);
    for (size_t len = 0; len < VYRE_BLOB_HEADER_SIZE; len++) {
        /* an exact-size copy, so that ASan sees any read past len */
        uint8_t *p = malloc(len ? len : 1);
        cr_assert_not_null(p);
        memcpy(p, buf, len);
        vyre_blob_header h;
        vyre_blob_reject why = VYRE_REJECT_NONE;
        int rc = vyre__blob_header_decode(p, len, &h, &why, NULL);
        free(p);
        cr_assert_eq(rc, VYRE_ECORRUPT, "len %zu", len);
        cr_assert_eq(why, VYRE_REJECT_TRUNCATED, "len %zu: %s", len, vyre_blob_reject_name(why));
    }
    vyre_blob_header h;
    cr_assert_eq(vyre__blob_header_decode(NULL, 0, &h, NULL, NULL), VYRE_ECORRUPT);
    /* A short prefix of something else is not a truncated blob. */
    vyre_blob_reject why;
    cr_assert_eq(vyre__blob_header_decode((const uint8_t *)"\x7f"
                                                           "EL",
                                          3, &h, &why, NULL),
                 VYRE_ECORRUPT);
    cr_assert_eq(why, VYRE_REJECT_BAD_MAGIC);
}

Test(blob, decode_rejects_every_single_bit_flip)
{
    uint8_t good[VYRE_BLOB_HEADER_SIZE];
    valid_header(good, key_of(7), "abc", 3);
    for (int i = 0; i < VYRE_BLOB_HEADER_SIZE; i++) {
        for (int bit = 0; bit < 8; bit++) {
            uint8_t buf[VYRE_BLOB_HEADER_SIZE];
            memcpy(buf, good, sizeof buf);
            buf[i] ^= (uint8_t)(1u << bit);
            vyre_blob_header h;
            vyre_blob_reject why = VYRE_REJECT_NONE;
            int rc = vyre__blob_header_decode(buf, sizeof buf, &h, &why, NULL);
            vyre_blob_reject want = i < 8    ? VYRE_REJECT_BAD_MAGIC
                                    : i < 12 ? VYRE_REJECT_VERSION
                                             : VYRE_REJECT_HEADER_SUM;
            cr_assert_neq(rc, 0, "flip byte %d bit %d accepted", i, bit);
            cr_assert_eq(why, want, "byte %d bit %d: %s", i, bit, vyre_blob_reject_name(why));
        }
    }
}

/* ---- load: rejects ----------------------------------------------------- */

Test(blob, load_truncated_at_every_header_offset)
{
    cache c;
    cache_init(&c);
    size_t len;
    vyre_key k = key_of(8);
    uint8_t *img = image(k, 100, &len);
    for (size_t n = 0; n < VYRE_BLOB_HEADER_SIZE; n++) {
        plant(&c, k, img, n);
        char what[64];
        snprintf(what, sizeof what, "truncated to %zu", n);
        expect_reject(&c, k, VYRE_REJECT_TRUNCATED, what);
    }
    /* and inside the payload */
    static const size_t cuts[] = {0, 1, 50, 98, 99};
    for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
        plant(&c, k, img, VYRE_BLOB_HEADER_SIZE + cuts[i]);
        expect_reject(&c, k, VYRE_REJECT_TRUNCATED, "payload cut");
    }
    /* quarantine kept every copy: same name and second get a counter */
    cr_assert_eq(count_entries(&c, "quarantine"), VYRE_BLOB_HEADER_SIZE + 5);
    cr_assert_eq(count_entries(&c, "tmp"), 0);
    free(img);
    cache_fini(&c);
}

Test(blob, load_rejects_a_bit_flip_in_every_header_byte)
{
    cache c;
    cache_init(&c);
    size_t len;
    vyre_key k = key_of(9);
    uint8_t *img = image(k, 64, &len);
    for (int i = 0; i < VYRE_BLOB_HEADER_SIZE; i++) {
        img[i] ^= (uint8_t)(1u << (i % 8));
        plant(&c, k, img, len);
        img[i] ^= (uint8_t)(1u << (i % 8));
        vyre_blob *b = NULL;
        vyre_blob_reject why = VYRE_REJECT_NONE;
        int rc = vyre__blob_load(c.root, &k, &b, &why, NULL);
        cr_assert(rc == VYRE_ECORRUPT || rc == VYRE_EVERSION, "byte %d: %s", i, vyre_err_name(rc));
        cr_assert_null(b);
        cr_assert_neq(why, VYRE_REJECT_NONE, "byte %d", i);
        cr_assert(quarantined(&c, k, why, NULL), "byte %d", i);
    }
    /* the untouched image still loads */
    plant(&c, k, img, len);
    vyre_blob *b = NULL;
    cr_assert_eq(vyre__blob_load(c.root, &k, &b, NULL, NULL), 0);
    vyre_blob_free(b);
    free(img);
    cache_fini(&c);
}

Test(blob, load_rejects_payload_bit_flips)
{
    cache c;
    cache_init(&c);
    size_t len;
    vyre_key k = key_of(10);
    uint8_t *img = image(k, 4096, &len);
    srand(12345);
    for (int t = 0; t < 64; t++) {
        size_t at = VYRE_BLOB_HEADER_SIZE + (size_t)rand() % 4096;
        uint8_t mask = (uint8_t)(1u << (rand() % 8));
        img[at] ^= mask;
        plant(&c, k, img, len);
        img[at] ^= mask;
        expect_reject(&c, k, VYRE_REJECT_PAYLOAD_SUM, "payload flip");
    }
    free(img);
    cache_fini(&c);
}

Test(blob, load_zero_length_wrong_magic_trailing)
{
    cache c;
    cache_init(&c);
    vyre_key k = key_of(11);
    plant(&c, k, "", 0);
    expect_reject(&c, k, VYRE_REJECT_TRUNCATED, "zero-length file");

    uint8_t elf[512] = {0x7f, 'E', 'L', 'F', 2, 1, 1};
    plant(&c, k, elf, sizeof elf);
    expect_reject(&c, k, VYRE_REJECT_BAD_MAGIC, "an ELF file");

    size_t len;
    uint8_t *img = image(k, 10, &len);
    img[len] = 0;
    plant(&c, k, img, len + 1);
    expect_reject(&c, k, VYRE_REJECT_TRAILING, "one trailing byte");
    free(img);
    cache_fini(&c);
}

Test(blob, load_absurd_sizes_without_allocating)
{
    cache c;
    cache_init(&c);
    vyre_key k = key_of(12);
    uint8_t buf[VYRE_BLOB_HEADER_SIZE];

    valid_header(buf, k, "", 0);
    put64(buf + 136, UINT64_C(1) << 63);
    put64(buf + 144, UINT64_C(1) << 63);
    reseal(buf);
    plant(&c, k, buf, sizeof buf);
    expect_reject(&c, k, VYRE_REJECT_BAD_FIELD, "stored_size 2^63");

    valid_header(buf, k, "", 0);
    put64(buf + 136, UINT64_MAX);
    put64(buf + 144, UINT64_MAX);
    reseal(buf);
    plant(&c, k, buf, sizeof buf);
    expect_reject(&c, k, VYRE_REJECT_BAD_FIELD, "stored_size 2^64-1");

    valid_header(buf, k, "", 0);
    put64(buf + 136, VYRE_BLOB_MAX_PAYLOAD + 1);
    put64(buf + 144, VYRE_BLOB_MAX_PAYLOAD + 1);
    reseal(buf);
    plant(&c, k, buf, sizeof buf);
    expect_reject(&c, k, VYRE_REJECT_BAD_FIELD, "stored_size max+1");

    /* the largest legal size, declared by a small file */
    valid_header(buf, k, "", 0);
    put64(buf + 136, VYRE_BLOB_MAX_PAYLOAD);
    put64(buf + 144, VYRE_BLOB_MAX_PAYLOAD);
    reseal(buf);
    plant(&c, k, buf, sizeof buf);
    expect_reject(&c, k, VYRE_REJECT_TRUNCATED, "stored_size max in a small file");

    /* a sparse 700 MiB file behind a valid 10-byte header: trailing bytes,
     * found from fstat and the header alone */
    size_t len;
    uint8_t *img = image(k, 10, &len);
    char p[PATHSZ];
    plant(&c, k, img, len);
    blob_path(&c, k, p);
    cr_assert_eq(truncate(p, (off_t)700 << 20), 0);
    expect_reject(&c, k, VYRE_REJECT_TRAILING, "sparse 700 MiB file");

    /* and a sparse 600 MiB file whose header says max: still trailing */
    valid_header(buf, k, "", 0);
    put64(buf + 136, VYRE_BLOB_MAX_PAYLOAD);
    put64(buf + 144, VYRE_BLOB_MAX_PAYLOAD);
    reseal(buf);
    plant(&c, k, buf, sizeof buf);
    cr_assert_eq(truncate(p, (off_t)600 << 20), 0);
    expect_reject(&c, k, VYRE_REJECT_TRAILING, "sparse 600 MiB file declaring max");
    free(img);
    cache_fini(&c);
}

Test(blob, load_directory_in_place_of_a_blob)
{
    cache c;
    cache_init(&c);
    vyre_key k = key_of(13);
    char p[PATHSZ], d[PATHSZ], q[PATHSZ];
    plant(&c, k, "", 0);
    blob_path(&c, k, p);
    cr_assert_eq(unlink(p), 0);
    cr_assert_eq(mkdir(p, 0700), 0);
    int n = snprintf(d, sizeof d, "%s/inside", p);
    cr_assert(n > 0 && (size_t)n < sizeof d);
    tu_write_file(d, "x", 1);
    expect_reject(&c, k, VYRE_REJECT_NOT_REGULAR, "a directory");
    cr_assert(quarantined(&c, k, VYRE_REJECT_NOT_REGULAR, q));
    struct stat st;
    cr_assert_eq(lstat(q, &st), 0);
    cr_assert(S_ISDIR(st.st_mode), "the directory itself moved");
    cache_fini(&c);
}

Test(blob, load_symlink_in_place_of_a_blob)
{
    cache c;
    cache_init(&c);
    vyre_key k = key_of(14);
    /* The link points at a perfectly valid blob for k, outside blobs/. */
    size_t len;
    uint8_t *img = image(k, 32, &len);
    char target[PATHSZ], p[PATHSZ], q[PATHSZ];
    sub(target, &c, "elsewhere.vblob");
    tu_write_file(target, img, len);
    plant(&c, k, "", 0);
    blob_path(&c, k, p);
    cr_assert_eq(unlink(p), 0);
    cr_assert_eq(symlink(target, p), 0);
    expect_reject(&c, k, VYRE_REJECT_NOT_REGULAR, "a symlink");
    cr_assert(quarantined(&c, k, VYRE_REJECT_NOT_REGULAR, q));
    struct stat st;
    cr_assert_eq(lstat(q, &st), 0);
    cr_assert(S_ISLNK(st.st_mode), "the link itself moved, not its target");
    size_t tl = 0;
    char *t = tu_read_file(target, &tl);
    cr_assert_not_null(t, "target untouched");
    cr_assert_eq(tl, len);
    cr_assert_eq(memcmp(t, img, len), 0);
    free(t);
    free(img);
    cache_fini(&c);
}

Test(blob, load_fifo_in_place_of_a_blob, .timeout = 10)
{
    /* A FIFO must not block the load (no writer will ever come). */
    cache c;
    cache_init(&c);
    vyre_key k = key_of(24);
    char p[PATHSZ];
    plant(&c, k, "", 0);
    blob_path(&c, k, p);
    cr_assert_eq(unlink(p), 0);
    cr_assert_eq(mkfifo(p, 0600), 0);
    expect_reject(&c, k, VYRE_REJECT_NOT_REGULAR, "a FIFO");
    cache_fini(&c);
}

Test(blob, load_key_mismatch)
{
    cache c;
    cache_init(&c);
    vyre_key a = key_of(15), b = key_of(16);
    cr_assert_eq(vyre__blob_store(c.root, &(vyre_blob_header){0}, "", 0, NULL, NULL), VYRE_EINVAL,
                 "an empty header does not encode (no kind, no arch)");
    vyre_blob_header h = header_for(a);
    cr_assert_eq(vyre__blob_store(c.root, &h, "payload", 7, NULL, NULL), 0);
    char pa[PATHSZ];
    blob_path(&c, a, pa);
    size_t len;
    char *data = tu_read_file(pa, &len);
    cr_assert_not_null(data);
    plant(&c, b, data, len);
    free(data);
    expect_reject(&c, b, VYRE_REJECT_KEY_MISMATCH, "a blob copied to another key's name");
    vyre_blob *blob = NULL;
    cr_assert_eq(vyre__blob_load(c.root, &a, &blob, NULL, NULL), 0, "the original is fine");
    vyre_blob_free(blob);
    cache_fini(&c);
}

Test(blob, load_other_versions)
{
    cache c;
    cache_init(&c);
    vyre_key k = key_of(17);
    size_t len;
    uint8_t *img = image(k, 20, &len);
    put32(img + 8, 2);
    reseal(img);
    plant(&c, k, img, len);
    expect_reject(&c, k, VYRE_REJECT_VERSION, "format version 2");
    free(img);

    img = image(k, 20, &len);
    put32(img + 12, VYRE_KEY_VERSION + 1);
    reseal(img);
    plant(&c, k, img, len);
    expect_reject(&c, k, VYRE_REJECT_VERSION, "key version + 1");
    free(img);
    cache_fini(&c);
}

Test(blob, load_plain_miss)
{
    cache c;
    cache_init(&c);
    vyre_key k = key_of(18);
    vyre_blob *b = (vyre_blob *)0x1;
    vyre_blob_reject why = VYRE_REJECT_COUNT;
    cr_assert_eq(vyre__blob_load(c.root, &k, &b, &why, NULL), VYRE_ENOENT);
    cr_assert_null(b);
    cr_assert_eq(why, VYRE_REJECT_NONE);
    cr_assert_eq(count_entries(&c, "quarantine"), 0);
    cache_fini(&c);
}

Test(blob, quarantine_failure_still_a_miss)
{
    cache c;
    cache_init(&c);
    vyre_key k = key_of(19);
    char q[PATHSZ], p[PATHSZ];
    sub(q, &c, "quarantine");
    cr_assert_eq(rmdir(q), 0);
    tu_write_file(q, "not a dir", 9); /* quarantine/ cannot be used */
    plant(&c, k, "garbage!", 8);
    vyre_blob *b = NULL;
    vyre_blob_reject why = VYRE_REJECT_NONE;
    vyre_error e;
    cr_assert_eq(vyre__blob_load(c.root, &k, &b, &why, &e), VYRE_ECORRUPT);
    cr_assert_eq(why, VYRE_REJECT_BAD_MAGIC);
    cr_assert(strstr(e.message, "not quarantined"), "%s", e.message);
    cr_assert_eq(e.remedy, VYRE_REMEDY_CACHE_REPAIR, "the front ends name their repair command");
    cr_assert_null(strstr(e.hint, "vyre-"), "libcore names no front end: %s", e.hint);
    blob_path(&c, k, p);
    cr_assert(exists(p), "left where it was");
    cache_fini(&c);
}

Test(blob, quarantine_creates_its_directory)
{
    cache c;
    cache_init(&c);
    vyre_key k = key_of(20);
    char q[PATHSZ];
    sub(q, &c, "quarantine");
    cr_assert_eq(rmdir(q), 0);
    plant(&c, k, "garbage!", 8);
    expect_reject(&c, k, VYRE_REJECT_BAD_MAGIC, "no quarantine/ yet");
    struct stat st;
    cr_assert_eq(stat(q, &st), 0);
    cr_assert_eq(st.st_mode & 0777, 0700);
    cache_fini(&c);
}

Test(blob, reject_counters_increase)
{
    cache c;
    cache_init(&c);
    uint64_t before[VYRE_REJECT_COUNT], after[VYRE_REJECT_COUNT];
    vyre__blob_reject_counts(before);
    vyre_key k = key_of(21);
    plant(&c, k, "", 0);
    expect_reject(&c, k, VYRE_REJECT_TRUNCATED, "empty");
    plant(&c, k, "", 0);
    expect_reject(&c, k, VYRE_REJECT_TRUNCATED, "empty again");
    plant(&c, k, "nonsense", 8);
    expect_reject(&c, k, VYRE_REJECT_BAD_MAGIC, "nonsense");
    vyre__blob_reject_counts(after);
    cr_assert_eq(after[VYRE_REJECT_TRUNCATED], before[VYRE_REJECT_TRUNCATED] + 2);
    cr_assert_eq(after[VYRE_REJECT_BAD_MAGIC], before[VYRE_REJECT_BAD_MAGIC] + 1);
    cr_assert_eq(after[VYRE_REJECT_PAYLOAD_SUM], before[VYRE_REJECT_PAYLOAD_SUM]);

    /* vyre__blob_quarantine counts too */
    char p[PATHSZ];
    plant(&c, k, "x", 1);
    blob_path(&c, k, p);
    cr_assert_eq(vyre__blob_quarantine(c.root, p, VYRE_REJECT_TRAILING, NULL), 0);
    vyre__blob_reject_counts(after);
    cr_assert_eq(after[VYRE_REJECT_TRAILING], before[VYRE_REJECT_TRAILING] + 1);
    cr_assert(quarantined(&c, k, VYRE_REJECT_TRAILING, NULL));
    cache_fini(&c);
}

/* ---- check_file -------------------------------------------------------- */

Test(blob, check_file_validates_without_moving)
{
    cache c;
    cache_init(&c);
    vyre_key k = key_of(22);
    static const size_t sizes[] = {100, (size_t)2 << 20}; /* small and streamed */
    for (size_t i = 0; i < 2; i++) {
        size_t len;
        uint8_t *img = image(k, sizes[i], &len);
        plant(&c, k, img, len);
        char p[PATHSZ];
        blob_path(&c, k, p);
        vyre_blob_header h;
        uint64_t fsz = 0;
        vyre_blob_reject why = VYRE_REJECT_COUNT;
        vyre_error e;
        cr_assert_eq(vyre__blob_check_file(p, &k, &h, &fsz, &why, &e), 0, "%s", e.message);
        cr_assert_eq(why, VYRE_REJECT_NONE);
        cr_assert_eq(fsz, len);
        cr_assert_eq(h.stored_size, sizes[i]);
        cr_assert_eq(vyre__blob_check_file(p, NULL, NULL, NULL, NULL, NULL), 0);
        vyre_key other = key_of(23);
        cr_assert_eq(vyre__blob_check_file(p, &other, &h, NULL, &why, &e), VYRE_ECORRUPT);
        cr_assert_eq(why, VYRE_REJECT_KEY_MISMATCH);

        img[len - 1] ^= 1;
        plant(&c, k, img, len);
        memset(&h, 0, sizeof h);
        cr_assert_eq(vyre__blob_check_file(p, &k, &h, &fsz, &why, &e), VYRE_ECORRUPT);
        cr_assert_eq(why, VYRE_REJECT_PAYLOAD_SUM);
        cr_assert_eq(h.stored_size, sizes[i], "the header is filled when it decodes");
        cr_assert(exists(p), "check_file moves nothing");
        cr_assert_eq(count_entries(&c, "quarantine"), 0);
        free(img);
    }
    char p[PATHSZ];
    sub(p, &c, "nope.vblob");
    cr_assert_eq(vyre__blob_check_file(p, NULL, NULL, NULL, NULL, NULL), VYRE_ENOENT);
    vyre_blob_reject why;
    cr_assert_eq(vyre__blob_check_file(c.root, NULL, NULL, NULL, &why, NULL), VYRE_ECORRUPT);
    cr_assert_eq(why, VYRE_REJECT_NOT_REGULAR);
    cache_fini(&c);
}

/* Verify and reindex check many files through one reused buffer per
 * thread: each verdict is the file's own (nothing of an earlier, larger or
 * corrupt file carries over), a payload beyond a whole read is hashed as it
 * streams through a bounded buffer, and the shard's directory serves as
 * well as the root's. */
Test(blob, check_in_reuses_one_buffer_across_files_of_any_size)
{
    cache c;
    cache_init(&c);
    static const struct {
        size_t size;
        long flip;  /* payload byte flipped, -1: none */
        size_t cut; /* bytes cut off the end */
        vyre_blob_reject want;
    } files[] = {
        {(size_t)3 << 20, -1, 0, VYRE_REJECT_NONE},
        {100, 99, 0, VYRE_REJECT_PAYLOAD_SUM},
        {100, -1, 0, VYRE_REJECT_NONE},
        {(size_t)3 << 20, (long)(2 << 20) + 7, 0, VYRE_REJECT_PAYLOAD_SUM},
        {(size_t)2 << 20, -1, 1, VYRE_REJECT_TRUNCATED},
        {65536, -1, 0, VYRE_REJECT_NONE},
        {(size_t)1 << 20, 0, 0, VYRE_REJECT_PAYLOAD_SUM},
        {(size_t)2 << 20, -1, 0, VYRE_REJECT_NONE},
    };
    vyre__blob_scratch s = {0};
    for (int pass = 0; pass < 2; pass++) {
        for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
            vyre_key k = key_of(300 + (unsigned)i);
            size_t len;
            uint8_t *img = image(k, files[i].size, &len);
            if (files[i].flip >= 0)
                img[VYRE_BLOB_HEADER_SIZE + files[i].flip] ^= 0x40;
            if (pass == 0)
                plant(&c, k, img, len - files[i].cut);
            char p[PATHSZ], hex[VYRE_KEY_HEX_LEN + 1];
            blob_path(&c, k, p);
            vyre_key_to_hex(&k, hex);
            /* pass 0: below the root; pass 1: below the shard's directory */
            char dir[PATHSZ];
            snprintf(dir, sizeof dir, "%s", pass == 0 ? c.root : p);
            if (pass == 1)
                *strrchr(dir, '/') = '\0';
            int dfd = open(dir, O_RDONLY | O_DIRECTORY);
            cr_assert_geq(dfd, 0);
            const char *rel = pass == 0 ? p + strlen(c.root) + 1 : strrchr(p, '/') + 1;
            vyre__blob_checked out;
            vyre_error e;
            vyre_error_clear(&e);
            int rc = vyre__blob_check_in(dfd, rel, p, &k, &s, &out, &e);
            close(dfd);
            cr_assert_eq(out.why, files[i].want, "pass %d file %zu: %s", pass, i, e.message);
            cr_assert_eq(rc, files[i].want == VYRE_REJECT_NONE ? 0 : VYRE_ECORRUPT,
                         "pass %d file %zu: %s", pass, i, e.message);
            cr_assert_eq(out.file_size, len - files[i].cut);
            cr_assert_eq(out.h.stored_size, files[i].size, "the header is filled when it decodes");
            cr_assert_gt(out.disk_size, 0, "the size on disk comes with the check");
            cr_assert_eq(out.hard_link, 0);
            cr_assert_leq(s.cap, VYRE_BLOB_HEADER_SIZE + ((size_t)1 << 20),
                          "a payload beyond a whole read streams through a bounded buffer");
            cr_assert(exists(p), "a check moves nothing");
            free(img);
        }
    }
    vyre__blob_scratch_release(&s);
    cr_assert_null(s.buf);
    vyre__blob_scratch_release(NULL);
    cr_assert_eq(count_entries(&c, "quarantine"), 0);
    cache_fini(&c);
}

/* ---- store ------------------------------------------------------------- */

static void *pattern(size_t n, unsigned seed)
{
    uint8_t *p = malloc(n ? n : 1);
    cr_assert_not_null(p);
    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t)((i * 2654435761u) >> 13 ^ seed);
    return p;
}

Test(blob, store_then_load_round_trip)
{
    cache c;
    cache_init(&c);
    static const size_t sizes[] = {
        0, 1, 4096, (size_t)1 << 20, ((size_t)1 << 20) + 1000, (size_t)3 << 20};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        vyre_key k = key_of(100 + (unsigned)i);
        void *payload = pattern(sizes[i], (unsigned)i);
        vyre_blob_header h = header_for(k);
        h.kind = VYRE_BLOB_PTX;
        vyre_error e;
        cr_assert_eq(vyre__blob_store(c.root, &h, payload, sizes[i], NULL, &e), 0, "%zu: %s",
                     sizes[i], e.message);
        cr_assert_eq(h.stored_size, sizes[i]);
        cr_assert_eq(h.raw_size, sizes[i]);
        cr_assert_eq(h.format_version, VYRE_BLOB_FORMAT_VERSION);
        cr_assert_eq(h.key_version, VYRE_KEY_VERSION);
        cr_assert_gt(h.created_unix_ns, 1600000000000000000);

        char p[PATHSZ];
        blob_path(&c, k, p);
        struct stat st;
        cr_assert_eq(stat(p, &st), 0);
        cr_assert_eq((uint64_t)st.st_size, VYRE_BLOB_HEADER_SIZE + sizes[i]);
        cr_assert_eq(st.st_mode & 0777, 0600);

        vyre_blob *b = NULL;
        vyre_blob_reject why = VYRE_REJECT_COUNT;
        cr_assert_eq(vyre__blob_load(c.root, &k, &b, &why, &e), 0, "%zu: %s", sizes[i], e.message);
        cr_assert_eq(why, VYRE_REJECT_NONE);
        cr_assert_not_null(b);
        cr_assert_eq(b->size, sizes[i]);
        cr_assert_not_null(b->payload);
        cr_assert_eq(memcmp(b->payload, payload, sizes[i]), 0);
        cr_assert_eq(memcmp(&b->header.key, &k, sizeof k), 0);
        cr_assert_eq(b->header.kind, VYRE_BLOB_PTX);
        cr_assert_str_eq(b->header.arch, "sm_90a");
        cr_assert_eq(b->header.created_unix_ns, h.created_unix_ns);
        cr_assert_eq(memcmp(b->header.payload_xxh128, h.payload_xxh128, 16), 0);
        vyre_blob_free(b);
        free(payload);
    }
    cr_assert_eq(count_entries(&c, "tmp"), 0);
    cr_assert_eq(count_entries(&c, "quarantine"), 0);
    vyre_blob_free(NULL);
    cache_fini(&c);
}

Test(blob, store_argument_errors)
{
    cache c;
    cache_init(&c);
    vyre_blob_header h = header_for(key_of(30));
    vyre_error e;
    cr_assert_eq(vyre__blob_store(c.root, &h, NULL, 5, NULL, &e), VYRE_EINVAL);
    h.raw_size = 3;
    cr_assert_eq(vyre__blob_store(c.root, &h, "abcd", 4, NULL, &e), VYRE_EINVAL,
                 "raw != stored in v1");
    h = header_for(key_of(30));
    h.flags = 1;
    cr_assert_eq(vyre__blob_store(c.root, &h, "abcd", 4, NULL, &e), VYRE_EINVAL);
    cr_assert_eq(count_entries(&c, "tmp"), 0);
    /* a cache without tmp/ */
    char t[PATHSZ];
    sub(t, &c, "tmp");
    cr_assert_eq(rmdir(t), 0);
    h = header_for(key_of(30));
    cr_assert_eq(vyre__blob_store(c.root, &h, "abcd", 4, NULL, &e), VYRE_ENOENT);
    cr_assert(strstr(e.message, "/tmp'"), "%s", e.message);
    cr_assert_neq(e.hint[0], '\0');
    cache_fini(&c);
}

Test(blob, store_over_existing_key_is_atomic)
{
    cache c;
    cache_init(&c);
    vyre_key k = key_of(40);
    enum { N = 64 << 10 };
    void *a = pattern(N, 1), *b = pattern(N, 2);
    vyre_blob_header h = header_for(k);
    cr_assert_eq(vyre__blob_store(c.root, &h, a, N, NULL, NULL), 0);
    h = header_for(k);
    cr_assert_eq(vyre__blob_store(c.root, &h, b, N, NULL, NULL), 0);
    vyre_blob *blob = NULL;
    cr_assert_eq(vyre__blob_load(c.root, &k, &blob, NULL, NULL), 0);
    cr_assert_eq(memcmp(blob->payload, b, N), 0, "the second store replaced the first");
    vyre_blob_free(blob);

    /* A writer replaces the blob over and over while we read it: every read
     * is wholly A or wholly B, never a reject. */
    pid_t pid = fork();
    cr_assert_neq(pid, -1);
    if (pid == 0) {
        for (int i = 0; i < 300; i++) {
            vyre_blob_header w = header_for(k);
            if (vyre__blob_store(c.root, &w, i % 2 ? a : b, N, NULL, NULL) != 0)
                _exit(1);
        }
        _exit(0);
    }
    int seen_a = 0, seen_b = 0, loads = 0;
    for (;;) {
        int st;
        pid_t done = waitpid(pid, &st, WNOHANG);
        vyre_blob_reject why = VYRE_REJECT_NONE;
        int rc = vyre__blob_load(c.root, &k, &blob, &why, NULL);
        cr_assert_eq(rc, 0, "load during stores: %s (%s)", vyre_err_name(rc),
                     vyre_blob_reject_name(why));
        cr_assert_eq(blob->size, N);
        if (memcmp(blob->payload, a, N) == 0)
            seen_a++;
        else if (memcmp(blob->payload, b, N) == 0)
            seen_b++;
        else
            cr_assert_fail("a mixed blob was read");
        vyre_blob_free(blob);
        loads++;
        if (done == pid) {
            cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "writer failed");
            break;
        }
    }
    cr_assert_gt(loads, 0);
    cr_assert_gt(seen_a + seen_b, 0);
    cr_assert_eq(count_entries(&c, "tmp"), 0, "no temp files left");
    cr_assert_eq(count_entries(&c, "quarantine"), 0);
    free(a);
    free(b);
    cache_fini(&c);
}

/* Runs vyre__blob_store in a child as an unprivileged user when we are root
 * (root ignores permission bits). Returns the store's result, or 1 when the
 * permissions turned out not to apply. */
static int store_as_unprivileged(const cache *c, vyre_key k, const char *chk_unwritable)
{
    pid_t pid = fork();
    cr_assert_neq(pid, -1);
    if (pid == 0) {
        if (geteuid() == 0) {
            if (setgroups(0, NULL) != 0 || setgid(65534) != 0 || setuid(65534) != 0)
                _exit(100);
        }
        if (access(chk_unwritable, W_OK) == 0)
            _exit(101); /* the permission bits are not enforced for us */
        vyre_blob_header h = header_for(k);
        int rc = vyre__blob_store(c->root, &h, "payload", 7, NULL, NULL);
        _exit(rc == 0 ? 0 : 102 + (rc == VYRE_EPERM ? 0 : 1));
    }
    int st;
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    cr_assert(WIFEXITED(st));
    return WEXITSTATUS(st);
}

static void give_to_nobody(const cache *c)
{
    if (geteuid() != 0)
        return;
    static const char *const rel[] = {"", "tmp", "blobs", "quarantine"};
    for (size_t i = 0; i < 4; i++) {
        char p[PATHSZ];
        sub(p, c, rel[i]);
        cr_assert_eq(chown(p, 65534, 65534), 0, "chown %s: %s", p, strerror(errno));
    }
}

Test(blob, store_into_read_only_cache)
{
    cache c;
    cache_init(&c);
    give_to_nobody(&c);
    char t[PATHSZ], bl[PATHSZ];
    sub(t, &c, "tmp");
    sub(bl, &c, "blobs");
    cr_assert_eq(chmod(t, 0500), 0);
    cr_assert_eq(chmod(bl, 0500), 0);
    vyre_key k = key_of(50);
    int st = store_as_unprivileged(&c, k, t);
    if (st == 100 || st == 101)
        cr_skip_test("cannot drop privileges to uid 65534 here, so permission bits are not "
                     "enforced (exit %d)",
                     st);
    cr_assert_eq(st, 102, "store into a read-only tmp/ must be VYRE_EPERM (child exit %d)", st);
    chmod(t, 0700);
    cr_assert_eq(count_entries(&c, "tmp"), 0);

    /* tmp/ writable but the blob's directory is not: the rename fails, the
     * temp file is removed. */
    char p[PATHSZ], d[PATHSZ];
    blob_path(&c, k, p);
    snprintf(d, sizeof d, "%s", p);
    *strrchr(d, '/') = '\0';
    chmod(bl, 0700);
    cr_assert_eq(mkdir(d, 0500), 0);
    if (geteuid() == 0)
        cr_assert_eq(chown(d, 65534, 65534), 0);
    st = store_as_unprivileged(&c, k, d);
    cr_assert_eq(st, 102, "rename into a read-only directory must be VYRE_EPERM (exit %d)", st);
    cr_assert_eq(count_entries(&c, "tmp"), 0, "the temp file was removed");
    cr_assert(!exists(p));
    chmod(d, 0700);
    cache_fini(&c);
}

Test(blob, store_on_full_disk)
{
    cache c;
    cache_init(&c);
    vyre_key k = key_of(60);
    void *old = pattern(1000, 7);
    vyre_blob_header h = header_for(k);
    cr_assert_eq(vyre__blob_store(c.root, &h, old, 1000, NULL, NULL), 0);

    pid_t pid = fork();
    cr_assert_neq(pid, -1);
    if (pid == 0) {
        /* RLIMIT_FSIZE with SIGXFSZ ignored: write() stops at the limit,
         * then fails with EFBIG, as on a full disk. */
        signal(SIGXFSZ, SIG_IGN);
        struct rlimit rl = {4096, 4096};
        if (setrlimit(RLIMIT_FSIZE, &rl) != 0)
            _exit(100);
        void *big = pattern(64 << 10, 9);
        vyre_blob_header w = header_for(k);
        vyre_error e;
        int rc = vyre__blob_store(c.root, &w, big, 64 << 10, NULL, &e);
        if (rc != VYRE_ENOSPC)
            _exit(101);
        if (!e.hint[0] || !strstr(e.message, "cannot store"))
            _exit(102);
        if (e.remedy != VYRE_REMEDY_CACHE_PRUNE || strstr(e.hint, "vyre-"))
            _exit(104);
        /* a small blob still fits under the limit */
        vyre_blob_header s = header_for(key_of(61));
        if (vyre__blob_store(c.root, &s, "tiny", 4, NULL, NULL) != 0)
            _exit(103);
        _exit(0);
    }
    int st;
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    cr_assert(WIFEXITED(st), "the child was killed (SIGXFSZ?)");
    cr_assert_eq(WEXITSTATUS(st), 0, "child exit %d", WEXITSTATUS(st));
    cr_assert_eq(count_entries(&c, "tmp"), 0, "no temp file left");
    vyre_blob *b = NULL;
    cr_assert_eq(vyre__blob_load(c.root, &k, &b, NULL, NULL), 0);
    cr_assert_eq(b->size, 1000);
    cr_assert_eq(memcmp(b->payload, old, 1000), 0, "the existing blob is unchanged");
    vyre_blob_free(b);
    free(old);
    cache_fini(&c);
}

Test(blob, store_rejects_oversized_payload)
{
    cache c;
    cache_init(&c);
    vyre_blob_header h = header_for(key_of(70));
    static const char one = 0;
    vyre_error e;
    /* the length is checked before the pointer is read */
    cr_assert_eq(vyre__blob_store(c.root, &h, &one, (size_t)VYRE_BLOB_MAX_PAYLOAD + 1, NULL, &e),
                 VYRE_ETOOBIG);
    cr_assert_neq(e.hint[0], '\0');
    cache_fini(&c);
}

static int refuse_rename(const vyre_blob_header *h, void *ctx, vyre_error *err)
{
    (void)h;
    ++*(int *)ctx;
    if (err)
        err->code = VYRE_EBUSY;
    return VYRE_EBUSY;
}

/* The one store call's options: a caller-held root descriptor, a umask
 * applied by fchmod, and the hook that can still abort before the rename. */
Test(blob, store_options)
{
    cache c;
    cache_init(&c);
    vyre__blob_store_opts o;
    vyre__blob_store_opts_init(&o);
    cr_assert_eq(o.rootfd, -1);
    cr_assert_eq(o.umask, -1);
    cr_assert_null(o.before_rename);
    vyre__blob_store_opts_init(NULL);

    int calls = 0;
    o.before_rename = refuse_rename;
    o.ctx = &calls;
    vyre_key k = key_of(300);
    vyre_blob_header h = header_for(k);
    vyre_error e;
    cr_assert_eq(vyre__blob_store(c.root, &h, "abc", 3, &o, &e), VYRE_EBUSY);
    cr_assert_eq(calls, 1);
    char p[PATHSZ];
    blob_path(&c, k, p);
    struct stat st;
    cr_assert_eq(stat(p, &st), -1, "an aborted store leaves no blob");
    cr_assert_eq(count_entries(&c, "tmp"), 0, "nor its temp file");

    o.before_rename = NULL;
    o.umask = 002;
    o.rootfd = open(c.root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    cr_assert_geq(o.rootfd, 0);
    cr_assert_eq(vyre__blob_store(c.root, &h, "abc", 3, &o, &e), 0, "%s", e.message);
    cr_assert_eq(fcntl(o.rootfd, F_GETFD), FD_CLOEXEC, "the caller's descriptor stays open");
    close(o.rootfd);
    cr_assert_eq(stat(p, &st), 0);
    cr_assert_eq(st.st_mode & 0777, 0664);
    char shard[PATHSZ];
    snprintf(shard, sizeof shard, "%s", p);
    *strrchr(shard, '/') = '\0';
    cr_assert_eq(stat(shard, &st), 0);
    cr_assert_eq(st.st_mode & 0777, 0775);
    cache_fini(&c);
}
