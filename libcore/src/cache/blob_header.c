/*
 * blob_header.c - the on-disk pipeline blob (format v1): header encoding
 * and validation, the names of kinds and rejects, the reject counters,
 * kernel-name tables, and where a blob lives (paths, errno hints), which
 * the store, load and quarantine files all take from here.
 *
 * The blob module is split by operation: this file encodes and decodes;
 * blob_store.c stores durably; blob_load.c loads and checks; and
 * blob_quarantine.c moves rejects aside. What they share is in
 * blob_internal.h. Layout, directory structure and the reasons for each
 * step of the store protocol are in libcore/BLOB_FORMAT.md.
 *
 * Decoding never reads beyond the bytes it was given, and accepts only
 * canonical headers (zero padding, zero reserved bytes), so a header that
 * decodes re-encodes to the very same 256 bytes.
 */
#include "vyre/blob.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#include "base/clock.h"
#include "base/fsutil.h"
#include "base/internal.h"
#include "cache/blob_internal.h"
#include "cache/checksum.h"

/* Header field offsets (see BLOB_FORMAT.md). All integers little-endian. */
enum {
    OFF_MAGIC = 0,
    OFF_FORMAT = 8,
    OFF_KEY_VERSION = 12,
    OFF_KEY = 16,
    OFF_KIND = 48,
    OFF_FLAGS = 52,
    OFF_ARCH = 56,
    OFF_TOOLCHAIN = 72,
    OFF_RAW_SIZE = 136,
    OFF_STORED_SIZE = 144,
    OFF_CREATED = 152,
    OFF_COMPILE_NS = 160,
    OFF_PAYLOAD_SUM = 168,
    OFF_SOURCE = 184,
    OFF_N_KERNELS = 224,
    OFF_KERNELS_SIZE = 228,
    OFF_KERNELS_SUM = 232,
    OFF_RESERVED = 240,
    OFF_HEADER_SUM = 248,
};

#define MAGIC_LEN    8
#define RESERVED_LEN (OFF_HEADER_SUM - OFF_RESERVED)

_Static_assert(sizeof VYRE_BLOB_MAGIC - 1 == MAGIC_LEN, "magic is 8 bytes");
_Static_assert(OFF_KEY + VYRE_KEY_BYTES == OFF_KIND, "key field size");
_Static_assert(OFF_ARCH + VYRE_BLOB_ARCH_MAX == OFF_TOOLCHAIN, "arch field size");
_Static_assert(OFF_TOOLCHAIN + VYRE_BLOB_TOOLCHAIN_MAX == OFF_RAW_SIZE, "toolchain field size");
_Static_assert(OFF_PAYLOAD_SUM + 16 == OFF_SOURCE, "payload checksum size");
_Static_assert(OFF_SOURCE + VYRE_BLOB_SOURCE_MAX == OFF_N_KERNELS, "source field size");
_Static_assert(OFF_HEADER_SUM + 8 == VYRE_BLOB_HEADER_SIZE, "header checksum is the last 8 bytes");
_Static_assert(offsetof(vyre_blob_header, kernels) == 232, "vyre_blob_header has no padding");

static atomic_uint_fast64_t reject_counts[VYRE_REJECT_COUNT];

static const char *const reject_names[VYRE_REJECT_COUNT] = {
    [VYRE_REJECT_NONE] = "none",
    [VYRE_REJECT_NOT_REGULAR] = "not-regular",
    [VYRE_REJECT_TRUNCATED] = "truncated",
    [VYRE_REJECT_BAD_MAGIC] = "bad-magic",
    [VYRE_REJECT_VERSION] = "version",
    [VYRE_REJECT_HEADER_SUM] = "header-checksum",
    [VYRE_REJECT_BAD_FIELD] = "bad-field",
    [VYRE_REJECT_PAYLOAD_SUM] = "payload-checksum",
    [VYRE_REJECT_KEY_MISMATCH] = "key-mismatch",
    [VYRE_REJECT_TRAILING] = "trailing-bytes",
    [VYRE_REJECT_STALE] = "stale",
};

static const char *const kind_names[] = {
    [VYRE_BLOB_CUBIN] = "cubin",
    [VYRE_BLOB_PTX] = "ptx",
    [VYRE_BLOB_FATBIN] = "fatbin",
};

const char *vyre_blob_reject_name(vyre_blob_reject r)
{
    if ((unsigned)r >= VYRE_REJECT_COUNT)
        return "unknown";
    return reject_names[r];
}

const char *vyre_blob_kind_name(uint32_t kind)
{
    if (kind >= VYRE_ARRAY_SIZE(kind_names))
        return NULL;
    return kind_names[kind];
}

int vyre_blob_kind_parse(const char *name, uint32_t *kind)
{
    if (!name || !kind)
        return VYRE_EINVAL;
    for (uint32_t k = 0; k < VYRE_ARRAY_SIZE(kind_names); k++) {
        if (kind_names[k] && strcmp(kind_names[k], name) == 0) {
            *kind = k;
            return VYRE_OK;
        }
    }
    return VYRE_EINVAL;
}

void vyre__blob_reject_counts(uint64_t counts[VYRE_REJECT_COUNT])
{
    for (int i = 0; i < VYRE_REJECT_COUNT; i++)
        counts[i] = (uint64_t)atomic_load_explicit(&reject_counts[i], memory_order_relaxed);
}

void vyre__blob_count_reject(vyre_blob_reject why)
{
    if ((unsigned)why < VYRE_REJECT_COUNT)
        atomic_fetch_add_explicit(&reject_counts[why], 1, memory_order_relaxed);
}

void vyre_blob_free(vyre_blob *blob)
{
    free(blob); /* the payload lives in the same allocation */
}

/* ---- little-endian helpers ---------------------------------------------- */

static void put_u32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static void put_u64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t get_u32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t get_u64(const uint8_t *p)
{
    return (uint64_t)get_u32(p) | (uint64_t)get_u32(p + 4) << 32;
}

static uint64_t header_sum(const uint8_t *buf)
{
    return (uint64_t)XXH3_64bits(buf, OFF_HEADER_SUM);
}

/* The payload checksum is most of the CPU cost of a cache hit: checksum.c
 * picks the fastest XXH3-128 build the CPU runs. */
static void payload_sum(const void *p, size_t n, uint8_t out[16])
{
    uint64_t v[2];
    vyre__xxh3_128(p, n, v);
    XXH128_hash_t h = {.low64 = v[0], .high64 = v[1]};
    XXH128_canonical_t c;
    XXH128_canonicalFromHash(&c, h);
    memcpy(out, c.digest, 16);
}

void vyre__blob_payload_sum(const void *payload, size_t len, uint8_t out[16])
{
    payload_sum(len ? payload : "", len, out);
}

/* ---- header ------------------------------------------------------------- */

/* A string field of `size` bytes: terminated, and NUL-padded to the end, so
 * that the encoding is canonical. Returns its length, or -1. */
static int all_zero(const uint8_t *p, size_t n)
{
    /* Eight bytes at a time: this runs over 64+ bytes on every load. */
    uint64_t acc = 0;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        acc |= w;
    }
    for (; i < n; i++)
        acc |= p[i];
    return acc == 0;
}

/* A string field of `size` bytes: terminated, and NUL-padded to the end, so
 * that the encoding is canonical. Returns its length, or -1. */
static int string_field_len(const uint8_t *p, size_t size)
{
    const uint8_t *nul = memchr(p, 0, size);
    if (!nul)
        return -1;
    size_t len = (size_t)(nul - p);
    return all_zero(nul, size - len) ? (int)len : -1;
}

/* Renders n bytes for a message: printable ASCII as is, the rest as \xNN. */
static void escape(char *out, size_t size, const uint8_t *p, size_t n)
{
    size_t o = 0;
    for (size_t i = 0; i < n && o + 5 < size; i++) {
        if (p[i] >= 0x20 && p[i] < 0x7f && p[i] != '\\' && p[i] != '\'')
            out[o++] = (char)p[i];
        else
            o += (size_t)snprintf(out + o, size - o, "\\x%02x", p[i]);
    }
    out[o] = '\0';
}

/* Checks what both encode and decode require of a v1 header's fields, apart
 * from versions. Returns NULL or a description of the first bad field. */
static const char *check_fields(const vyre_blob_header *h, char *detail, size_t size)
{
    if (!vyre_blob_kind_name(h->kind)) {
        snprintf(detail, size, "unknown kind '%" PRIu32 "'", h->kind);
        return detail;
    }
    if (h->flags != 0) {
        snprintf(detail, size, "flags '0x%" PRIx32 "' set (format v1 has no encodings)", h->flags);
        return detail;
    }
    if (h->stored_size > VYRE_BLOB_MAX_PAYLOAD) {
        snprintf(detail, size, "payload size '%" PRIu64 "' above the %" PRIu64 "-byte limit",
                 h->stored_size, (uint64_t)VYRE_BLOB_MAX_PAYLOAD);
        return detail;
    }
    if (h->raw_size != h->stored_size) {
        snprintf(detail, size,
                 "raw size '%" PRIu64 "' differs from stored size '%" PRIu64
                 "' (format v1 stores payloads as they are)",
                 h->raw_size, h->stored_size);
        return detail;
    }
    if (h->created_unix_ns < 0) {
        snprintf(detail, size, "negative creation time '%" PRId64 "'", h->created_unix_ns);
        return detail;
    }
    if (h->kernels_size > VYRE_BLOB_KERNELS_MAX || h->n_kernels > h->kernels_size / 2 ||
        (h->n_kernels == 0) != (h->kernels_size == 0) ||
        (h->kernels_size == 0 && h->kernels_xxh64 != 0)) {
        snprintf(detail, size,
                 "kernel table of '%" PRIu32 "' names in '%" PRIu32 "' bytes (checksum %016" PRIx64
                 ") is impossible",
                 h->n_kernels, h->kernels_size, h->kernels_xxh64);
        return detail;
    }
    return NULL;
}

int vyre_blob_header_encode(const vyre_blob_header *h, uint8_t out[VYRE_BLOB_HEADER_SIZE],
                            vyre_error *err)
{
    if (!h || !out)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre_blob_header_encode: NULL argument");
    if (h->format_version != VYRE_BLOB_FORMAT_VERSION)
        return vyre__fail(err, VYRE_EINVAL, "set format_version to VYRE_BLOB_FORMAT_VERSION",
                          "cannot encode blob format version '%" PRIu32 "' (this build writes %d)",
                          h->format_version, VYRE_BLOB_FORMAT_VERSION);
    size_t arch_len = strnlen(h->arch, VYRE_BLOB_ARCH_MAX);
    if (arch_len == 0 || arch_len == VYRE_BLOB_ARCH_MAX)
        return vyre__fail(err, VYRE_EINVAL, "give a device generation such as 'sm_90a'",
                          "blob arch '%.*s' is empty or longer than %d bytes", (int)arch_len,
                          h->arch, VYRE_BLOB_ARCH_MAX - 1);
    size_t tc_len = strnlen(h->toolchain, VYRE_BLOB_TOOLCHAIN_MAX);
    if (tc_len == VYRE_BLOB_TOOLCHAIN_MAX)
        return vyre__fail(err, VYRE_EINVAL, "shorten the toolchain identity",
                          "blob toolchain '%.*s' is longer than %d bytes", (int)tc_len,
                          h->toolchain, VYRE_BLOB_TOOLCHAIN_MAX - 1);
    size_t src_len = strnlen(h->source, VYRE_BLOB_SOURCE_MAX);
    if (src_len == VYRE_BLOB_SOURCE_MAX)
        return vyre__fail(err, VYRE_EINVAL, "shorten the source name",
                          "blob source name '%.*s' is longer than %d bytes", (int)src_len,
                          h->source, VYRE_BLOB_SOURCE_MAX - 1);
    char detail[256];
    if (check_fields(h, detail, sizeof detail))
        return vyre__fail(err, VYRE_EINVAL, "fix the header fields before storing the blob",
                          "cannot encode blob header: %s", detail);

    memset(out, 0, VYRE_BLOB_HEADER_SIZE);
    memcpy(out + OFF_MAGIC, VYRE_BLOB_MAGIC, MAGIC_LEN);
    put_u32(out + OFF_FORMAT, h->format_version);
    put_u32(out + OFF_KEY_VERSION, h->key_version);
    memcpy(out + OFF_KEY, h->key.bytes, VYRE_KEY_BYTES);
    put_u32(out + OFF_KIND, h->kind);
    put_u32(out + OFF_FLAGS, h->flags);
    memcpy(out + OFF_ARCH, h->arch, arch_len);
    memcpy(out + OFF_TOOLCHAIN, h->toolchain, tc_len);
    put_u64(out + OFF_RAW_SIZE, h->raw_size);
    put_u64(out + OFF_STORED_SIZE, h->stored_size);
    put_u64(out + OFF_CREATED, (uint64_t)h->created_unix_ns);
    put_u64(out + OFF_COMPILE_NS, h->compile_ns);
    memcpy(out + OFF_PAYLOAD_SUM, h->payload_xxh128, 16);
    memcpy(out + OFF_SOURCE, h->source, src_len);
    put_u32(out + OFF_N_KERNELS, h->n_kernels);
    put_u32(out + OFF_KERNELS_SIZE, h->kernels_size);
    put_u64(out + OFF_KERNELS_SUM, h->kernels_xxh64);
    put_u64(out + OFF_HEADER_SUM, header_sum(out));
    return VYRE_OK;
}

/* Decodes buf[0, len) into *out (only on success). Returns the reject
 * reason, with a description of it in detail. */
vyre_blob_reject vyre__blob_decode(const uint8_t *buf, size_t len, vyre_blob_header *out,
                                   char *detail, size_t dsize)
{
    /* Magic first, on whatever prefix there is: a 3-byte "ELF" is not a
     * truncated blob. */
    size_t m = len < MAGIC_LEN ? len : MAGIC_LEN;
    if (m && memcmp(buf, VYRE_BLOB_MAGIC, m) != 0) {
        char hex[2 * MAGIC_LEN + 1];
        for (size_t i = 0; i < m; i++)
            snprintf(hex + 2 * i, 3, "%02x", buf[i]);
        snprintf(detail, dsize, "magic '%s' is not a vyre blob's ('56595245424c4201')", hex);
        return VYRE_REJECT_BAD_MAGIC;
    }
    /* The format version comes before the length and checksum checks: a
     * later format may have another header size or checksum. */
    if (len >= OFF_FORMAT + 4) {
        uint32_t fv = get_u32(buf + OFF_FORMAT);
        if (fv != VYRE_BLOB_FORMAT_VERSION) {
            snprintf(detail, dsize, "format version '%" PRIu32 "' (this build reads %d)", fv,
                     VYRE_BLOB_FORMAT_VERSION);
            return VYRE_REJECT_VERSION;
        }
    }
    if (len < VYRE_BLOB_HEADER_SIZE) {
        snprintf(detail, dsize, "only '%zu' bytes, shorter than the %d-byte header", len,
                 VYRE_BLOB_HEADER_SIZE);
        return VYRE_REJECT_TRUNCATED;
    }
    uint64_t want = get_u64(buf + OFF_HEADER_SUM), got = header_sum(buf);
    if (want != got) {
        snprintf(detail, dsize,
                 "header checksum '%016" PRIx64 "' does not match its content ('%016" PRIx64 "')",
                 want, got);
        return VYRE_REJECT_HEADER_SUM;
    }

    vyre_blob_header h; /* every field is assigned below (no padding) */
    h.format_version = VYRE_BLOB_FORMAT_VERSION;
    h.key_version = get_u32(buf + OFF_KEY_VERSION);
    if (h.key_version != VYRE_KEY_VERSION && !VYRE_BLOB_KEY_STALE(h.key_version)) {
        snprintf(detail, dsize, "key version '%" PRIu32 "' (this build uses %d)", h.key_version,
                 VYRE_KEY_VERSION);
        return VYRE_REJECT_VERSION;
    }
    memcpy(h.key.bytes, buf + OFF_KEY, VYRE_KEY_BYTES);
    h.kind = get_u32(buf + OFF_KIND);
    h.flags = get_u32(buf + OFF_FLAGS);
    int arch_len = string_field_len(buf + OFF_ARCH, VYRE_BLOB_ARCH_MAX);
    if (arch_len <= 0) {
        char esc[4 * VYRE_BLOB_ARCH_MAX + 1];
        escape(esc, sizeof esc, buf + OFF_ARCH, VYRE_BLOB_ARCH_MAX);
        snprintf(detail, dsize, "arch field '%s' is %s", esc,
                 arch_len == 0 ? "empty" : "not a NUL-terminated, NUL-padded string");
        return VYRE_REJECT_BAD_FIELD;
    }
    if (string_field_len(buf + OFF_TOOLCHAIN, VYRE_BLOB_TOOLCHAIN_MAX) < 0) {
        char esc[4 * VYRE_BLOB_TOOLCHAIN_MAX + 1];
        escape(esc, sizeof esc, buf + OFF_TOOLCHAIN, VYRE_BLOB_TOOLCHAIN_MAX);
        snprintf(detail, dsize, "toolchain field '%s' is not a NUL-terminated, NUL-padded string",
                 esc);
        return VYRE_REJECT_BAD_FIELD;
    }
    memcpy(h.arch, buf + OFF_ARCH, VYRE_BLOB_ARCH_MAX);
    memcpy(h.toolchain, buf + OFF_TOOLCHAIN, VYRE_BLOB_TOOLCHAIN_MAX);
    h.raw_size = get_u64(buf + OFF_RAW_SIZE);
    h.stored_size = get_u64(buf + OFF_STORED_SIZE);
    h.created_unix_ns = (int64_t)get_u64(buf + OFF_CREATED);
    h.compile_ns = get_u64(buf + OFF_COMPILE_NS);
    memcpy(h.payload_xxh128, buf + OFF_PAYLOAD_SUM, 16);
    if (string_field_len(buf + OFF_SOURCE, VYRE_BLOB_SOURCE_MAX) < 0) {
        char esc[4 * VYRE_BLOB_SOURCE_MAX + 1];
        escape(esc, sizeof esc, buf + OFF_SOURCE, VYRE_BLOB_SOURCE_MAX);
        snprintf(detail, dsize, "source field '%s' is not a NUL-terminated, NUL-padded string",
                 esc);
        return VYRE_REJECT_BAD_FIELD;
    }
    memcpy(h.source, buf + OFF_SOURCE, VYRE_BLOB_SOURCE_MAX);
    h.n_kernels = get_u32(buf + OFF_N_KERNELS);
    h.kernels_size = get_u32(buf + OFF_KERNELS_SIZE);
    h.kernels_xxh64 = get_u64(buf + OFF_KERNELS_SUM);
    h.kernels = NULL;
    if (check_fields(&h, detail, dsize))
        return VYRE_REJECT_BAD_FIELD;
    if (!all_zero(buf + OFF_RESERVED, RESERVED_LEN)) {
        size_t at = 0;
        while (!buf[OFF_RESERVED + at])
            at++;
        snprintf(detail, dsize, "reserved byte %zu is '0x%02x', not zero", OFF_RESERVED + at,
                 buf[OFF_RESERVED + at]);
        return VYRE_REJECT_BAD_FIELD;
    }
    *out = h;
    return VYRE_REJECT_NONE;
}

int vyre__blob_reject_code(vyre_blob_reject why)
{
    return why == VYRE_REJECT_VERSION || why == VYRE_REJECT_STALE ? VYRE_EVERSION : VYRE_ECORRUPT;
}

/* How to fix a rejected file, when nothing moved it aside. */
const char *vyre__blob_reject_hint(vyre_blob_reject why)
{
    switch (why) {
    case VYRE_REJECT_VERSION:
        return "the blob was written by another version of vyre: delete it, or quarantine it "
               "(a repairing verify of the cache does); it is rebuilt on the next compile";
    case VYRE_REJECT_STALE:
        return "the blob is keyed by an older key format and is never hit: 'prune --stale' "
               "removes such blobs";
    case VYRE_REJECT_NOT_REGULAR:
        return "only regular files belong under the cache's blobs/: remove it, or quarantine "
               "it (a repairing verify of the cache does)";
    default:
        return "the file is not an intact vyre blob: delete it, or quarantine it (a repairing "
               "verify of the cache does); it is rebuilt on the next compile";
    }
}

int vyre__blob_header_decode(const uint8_t *buf, size_t len, vyre_blob_header *out,
                             vyre_blob_reject *why, vyre_error *err)
{
    if (why)
        *why = VYRE_REJECT_NONE;
    if ((!buf && len) || !out)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre__blob_header_decode: NULL argument");
    char detail[256];
    vyre_blob_reject r = vyre__blob_decode(buf, len, out, detail, sizeof detail);
    if (r == VYRE_REJECT_NONE)
        return VYRE_OK;
    if (why)
        *why = r;
    return vyre__remedy(err, VYRE_REMEDY_CACHE_REPAIR,
                        vyre__fail(err, vyre__blob_reject_code(r), vyre__blob_reject_hint(r),
                                   "blob header rejected (%s): %s", reject_names[r], detail));
}

/* ---- kernel-name tables ------------------------------------------------ */

int vyre__kernel_list_has(const char *names, size_t names_len, const char *name)
{
    if (!names || !name)
        return 0;
    size_t n = strlen(name);
    for (size_t o = 0; o < names_len;) {
        const char *s = names + o;
        size_t l = strnlen(s, names_len - o);
        if (l == n && memcmp(s, name, n) == 0)
            return 1;
        o += l + 1;
    }
    return 0;
}

size_t vyre_kernel_list_format(const char *names, size_t names_len, const char *sep, char *buf,
                               size_t size)
{
    size_t o = 0, need = 0, sl = sep ? strlen(sep) : 0;
    int fits = size > 0;
    if (size)
        buf[0] = '\0';
    for (size_t i = 0; names && i < names_len;) {
        const char *s = names + i;
        size_t l = strnlen(s, names_len - i);
        size_t add = (need ? sl : 0) + l;
        fits = fits && o + add < size;
        if (fits) {
            if (need && sl) {
                memcpy(buf + o, sep, sl);
                o += sl;
            }
            memcpy(buf + o, s, l);
            o += l;
            buf[o] = '\0';
        }
        need += add;
        i += l + 1;
    }
    return need;
}

int vyre__blob_kernels_at(int rootfd, const char *root, const vyre_blob_header *h, char **names,
                          vyre_error *err)
{
    *names = NULL;
    if (h->kernels_size == 0)
        return VYRE_OK;
    char path[BLOB_PATH_MAX];
    int rc = vyre_blob_path(root, &h->key, path, sizeof path, err);
    if (rc)
        return rc;
    const char *rel = path + strlen(path) - (6 + 3 + VYRE_KEY_HEX_LEN + strlen(VYRE_BLOB_EXT));
    int fd = vyre__open_beneath(rootfd, rel, O_RDONLY | O_NONBLOCK, 0);
    if (fd < 0)
        return vyre__fail(err, vyre__errno_code(errno), NULL, "cannot open blob '%s': %s", path,
                          strerror(errno));
    char *t = malloc(h->kernels_size);
    ssize_t got =
        t ? pread(fd, t, h->kernels_size, (off_t)(VYRE_BLOB_HEADER_SIZE + h->stored_size)) : -1;
    close(fd);
    if (!t)
        return vyre__fail(err, VYRE_ENOMEM, NULL, "cannot allocate a kernel table");
    if (got != (ssize_t)h->kernels_size ||
        vyre__blob_kernels_sum(t, h->kernels_size) != h->kernels_xxh64 ||
        !vyre__blob_kernel_table_valid(t, h->kernels_size, h->n_kernels)) {
        free(t);
        return vyre__fail(err, VYRE_ECORRUPT, NULL, "blob '%s' changed under us", path);
    }
    *names = t;
    return VYRE_OK;
}

/* ---- paths -------------------------------------------------------------- */

int vyre_blob_path(const char *root, const vyre_key *key, char *buf, size_t size, vyre_error *err)
{
    if (!root || !key || !buf)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre_blob_path: NULL argument");
    if (!root[0])
        return vyre__fail(err, VYRE_EINVAL, "give the cache directory", "empty cache root ''");
    /* Built by hand: this runs on every cache lookup. */
    size_t rl = strlen(root);
    size_t sep = root[rl - 1] == '/' ? 0 : 1;
    static const char blobs[] = "blobs/";
    size_t need = rl + sep + (sizeof blobs - 1) + 3 + VYRE_KEY_HEX_LEN + (sizeof VYRE_BLOB_EXT - 1);
    if (need >= size)
        return vyre__fail(err, VYRE_ETOOBIG, "use a shorter cache directory path",
                          "blob path under '%s' does not fit in %zu bytes", root, size);
    char *p = buf;
    memcpy(p, root, rl);
    p += rl;
    if (sep)
        *p++ = '/';
    memcpy(p, blobs, sizeof blobs - 1);
    p += sizeof blobs - 1;
    char hex[VYRE_KEY_HEX_LEN + 1];
    vyre_key_to_hex(key, hex);
    p[0] = hex[0];
    p[1] = hex[1];
    p[2] = '/';
    p += 3;
    memcpy(p, hex, VYRE_KEY_HEX_LEN);
    p += VYRE_KEY_HEX_LEN;
    memcpy(p, VYRE_BLOB_EXT, sizeof VYRE_BLOB_EXT); /* with its NUL */
    return VYRE_OK;
}

/* <root>/<sub> into buf. */
int vyre__blob_root_path(char *buf, size_t size, const char *root, const char *sub, vyre_error *err)
{
    size_t rl = strlen(root);
    const char *sep = rl && root[rl - 1] == '/' ? "" : "/";
    int n = snprintf(buf, size, "%s%s%s", root, sep, sub);
    if (n < 0 || (size_t)n >= size)
        return vyre__fail(err, VYRE_ETOOBIG, "use a shorter cache directory path",
                          "path '%s%s%s' is too long", root, sep, sub);
    return VYRE_OK;
}

/* The directory part of path (up to the last '/') into buf. */
void vyre__blob_dir_of(const char *path, char *buf, size_t size)
{
    const char *slash = strrchr(path, '/');
    size_t n = slash ? (size_t)(slash - path) : 0;
    if (n == 0)
        n = slash ? 1 : 0;
    if (n >= size)
        n = size - 1;
    if (n == 0) {
        vyre__strlcpy(buf, ".", size);
        return;
    }
    memcpy(buf, path, n);
    buf[n] = '\0';
}

const char *vyre__blob_errno_hint(int code)
{
    switch (code) {
    case VYRE_ENOSPC:
        return "free space on the cache's filesystem, raise the file size limit ('ulimit -f'), "
               "or shrink the cache";
    case VYRE_EROFS:
        return "the cache is on a read-only filesystem: set VYRE_PTX_CACHE_DIR to a writable "
               "directory";
    case VYRE_EPERM:
        return "make the cache directory writable by you, or set VYRE_PTX_CACHE_DIR to a "
               "directory you own";
    case VYRE_ENOENT:
        return "the cache is missing its tmp/ or blobs/ directory: open it through the cache "
               "API (which creates them), or repair it";
    default:
        return "check the cache's filesystem (see 'dmesg') and retry";
    }
}

/* The front end's command that goes with vyre__blob_errno_hint(code). */
vyre_remedy vyre__blob_errno_remedy(int code)
{
    return code == VYRE_ENOSPC   ? VYRE_REMEDY_CACHE_PRUNE
           : code == VYRE_ENOENT ? VYRE_REMEDY_CACHE_REPAIR
                                 : VYRE_REMEDY_NONE;
}

/* ---- the kernel-name table ----------------------------------------------- */

/* 1 when t[0..size) is n non-empty NUL-terminated names and nothing else. */
int vyre__blob_kernel_table_valid(const char *t, size_t size, uint32_t n)
{
    if (size == 0)
        return n == 0;
    if (t[size - 1] != '\0' || t[0] == '\0')
        return 0;
    uint32_t nuls = 0;
    for (size_t i = 0; i < size; i++) {
        if (t[i] == '\0') {
            nuls++;
            if (i + 1 < size && t[i + 1] == '\0')
                return 0; /* an empty name */
        }
    }
    return nuls == n;
}

uint64_t vyre__blob_kernels_sum(const void *t, size_t size)
{
    return size ? (uint64_t)XXH3_64bits(t, size) : 0;
}
