/*
 * blob.c - the on-disk pipeline blob (format v1): header encoding and
 * validation, durable store, validated load, quarantine and reject counters.
 *
 * Layout, directory structure and the reasons for each step of the store
 * protocol are in libcore/BLOB_FORMAT.md. Invariants this file keeps:
 *   - decoding never reads beyond the bytes it was given, and accepts only
 *     canonical headers (zero padding, zero reserved bytes), so a header that
 *     decodes re-encodes to the very same 256 bytes;
 *   - nothing is allocated from a size read out of a file before that size
 *     has been checked against the header and the file's real size (the one
 *     exception is bounded: files up to WHOLE_READ_MAX are read whole, sized
 *     from fstat, so that a cache hit costs open + fstat + read + close);
 *   - a store either renames a complete, fsynced file into place or leaves
 *     nothing behind (the temp file is unlinked on every error path).
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

/* Files up to this size are read whole in one read(), with the buffer sized
 * from fstat: a cache hit is then open + fstat + read + close. Larger files
 * have their header read and checked first, so a large garbage file never
 * causes a large allocation. */
#define WHOLE_READ_MAX ((size_t)VYRE_BLOB_HEADER_SIZE + ((size_t)1 << 20))

/* Chunk used to checksum large payloads when nothing is kept (check_file). */
#define STREAM_CHUNK ((size_t)64 << 10)

/* The payload of a loaded blob lives in the same allocation as the struct,
 * after it, at this (max_align_t friendly) offset. */
#define BLOB_PREFIX ((sizeof(vyre_blob) + 15) & ~(size_t)15)

/* Longest path this module builds. */
#define BLOB_PATH_MAX 4096

static atomic_uint_fast64_t reject_counts[VYRE_REJECT_COUNT];
static atomic_uint_fast64_t tmp_counter;
static atomic_uint_fast64_t quarantine_counter;

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

void vyre_blob_reject_counts(uint64_t counts[VYRE_REJECT_COUNT])
{
    for (int i = 0; i < VYRE_REJECT_COUNT; i++)
        counts[i] = (uint64_t)atomic_load_explicit(&reject_counts[i], memory_order_relaxed);
}

static void count_reject(vyre_blob_reject why)
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

void vyre_blob_payload_sum(const void *payload, size_t len, uint8_t out[16])
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
static vyre_blob_reject decode(const uint8_t *buf, size_t len, vyre_blob_header *out, char *detail,
                               size_t dsize)
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

static int reject_code(vyre_blob_reject why)
{
    return why == VYRE_REJECT_VERSION || why == VYRE_REJECT_STALE ? VYRE_EVERSION : VYRE_ECORRUPT;
}

/* How to fix a rejected file, when nothing moved it aside. */
static const char *reject_hint(vyre_blob_reject why)
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

int vyre_blob_header_decode(const uint8_t *buf, size_t len, vyre_blob_header *out,
                            vyre_blob_reject *why, vyre_error *err)
{
    if (why)
        *why = VYRE_REJECT_NONE;
    if ((!buf && len) || !out)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre_blob_header_decode: NULL argument");
    char detail[256];
    vyre_blob_reject r = decode(buf, len, out, detail, sizeof detail);
    if (r == VYRE_REJECT_NONE)
        return VYRE_OK;
    if (why)
        *why = r;
    return vyre__remedy(err, VYRE_REMEDY_CACHE_REPAIR,
                        vyre__fail(err, reject_code(r), reject_hint(r),
                                   "blob header rejected (%s): %s", reject_names[r], detail));
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
static int root_path(char *buf, size_t size, const char *root, const char *sub, vyre_error *err)
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
static void dir_of(const char *path, char *buf, size_t size)
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

static const char *errno_hint(int code)
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

/* The front end's command that goes with errno_hint(code). */
static vyre_remedy errno_remedy(int code)
{
    return code == VYRE_ENOSPC   ? VYRE_REMEDY_CACHE_PRUNE
           : code == VYRE_ENOENT ? VYRE_REMEDY_CACHE_REPAIR
                                 : VYRE_REMEDY_NONE;
}

/* ---- store -------------------------------------------------------------- */

/* Writes every byte of iov[0, cnt), through EINTR and short writes.
 * Returns 0 or an errno value. */
static int writev_all(int fd, struct iovec *iov, int cnt)
{
    while (cnt > 0) {
        if (iov->iov_len == 0) {
            iov++;
            cnt--;
            continue;
        }
        ssize_t n = writev(fd, iov, cnt);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return errno;
        }
        if (n == 0)
            return EIO;
        size_t left = (size_t)n;
        while (cnt > 0 && left >= iov->iov_len) {
            left -= iov->iov_len;
            iov++;
            cnt--;
        }
        if (left && cnt == 0)
            return EIO; /* wrote more than asked: cannot happen */
        if (left) {
            iov->iov_base = (char *)iov->iov_base + left;
            iov->iov_len -= left;
        }
    }
    return 0;
}

static int fsync_retry(int fd)
{
    while (fsync(fd) != 0) {
        if (errno != EINTR)
            return errno;
    }
    return 0;
}

/* fsyncs an open directory so that a rename or mkdir in it survives a
 * crash. Filesystems that cannot sync directories (EINVAL) are taken as
 * they are. */
static int fsync_dirfd(int fd)
{
    int e = fsync_retry(fd);
    return e == EINVAL || e == ENOTSUP ? 0 : e;
}

static uint64_t tmp_nonce(void)
{
    uint64_t r = 0;
    if (getrandom(&r, sizeof r, GRND_NONBLOCK) == (ssize_t)sizeof r)
        return r;
    uint64_t mix[2] = {vyre__mono_ns(), (uint64_t)(uintptr_t)&r};
    return (uint64_t)XXH3_64bits(mix, sizeof mix);
}

/* The error for a cache directory (sub, below the root) that cannot be
 * opened as one; a symlink or special file there is never followed. */
static int subdir_fail(int rootfd, const char *root, const char *sub, int e, vyre_error *err)
{
    struct stat st;
    if ((e == ELOOP || e == ENOTDIR || e == EXDEV) &&
        fstatat(rootfd, sub, &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISDIR(st.st_mode))
        return vyre__remedy(err, VYRE_REMEDY_CACHE_REPAIR,
                            vyre__fail(err, VYRE_EUNSAFE,
                                       "a repair removes the entry (never what a link points to) "
                                       "and recreates the directory",
                                       "'%s/%s' is a %s, not a directory: refusing to go through "
                                       "it",
                                       root, sub, vyre__file_type_name(st.st_mode)));
    if (e == ELOOP || e == ENOTDIR || e == EXDEV)
        return vyre__remedy(err, VYRE_REMEDY_CACHE_REPAIR,
                            vyre__fail(err, VYRE_EUNSAFE,
                                       "a verify shows what is in the way, and a repair removes it",
                                       "a directory on the way to '%s/%s' is not a real directory "
                                       "(a symlink?): refusing to go through it",
                                       root, sub));
    int code = vyre__errno_code(e);
    return vyre__fail(err, code, errno_hint(code), "cannot open '%s/%s': %s", root, sub,
                      strerror(e));
}

/* ---- vyre's own names ---------------------------------------------------- */

/* n lowercase hex digits at s. */
static int hex_run(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return 0;
    return 1;
}

/* One or more decimal digits at *s, then `end` (which is consumed too). */
static int digits_then(const char **s, char end)
{
    const char *p = *s;
    while (*p >= '0' && *p <= '9')
        p++;
    if (p == *s || *p != end)
        return 0;
    *s = p + (end ? 1 : 0);
    return 1;
}

int vyre__blob_is_blob_name(const char *name)
{
    return strlen(name) == VYRE_KEY_HEX_LEN + strlen(VYRE_BLOB_EXT) &&
           hex_run(name, VYRE_KEY_HEX_LEN) && strcmp(name + VYRE_KEY_HEX_LEN, VYRE_BLOB_EXT) == 0;
}

/* "<16 hex>.<pid>.<n>.<16 hex><suffix>", as tmp_name makes them. */
static int is_tmp_with(const char *name, const char *suffix)
{
    const char *p = name;
    if (strlen(p) < 17 || !hex_run(p, 16) || p[16] != '.')
        return 0;
    p += 17;
    if (!digits_then(&p, '.') || !digits_then(&p, '.'))
        return 0;
    return strlen(p) == 16 + strlen(suffix) && hex_run(p, 16) && strcmp(p + 16, suffix) == 0;
}

int vyre__blob_is_tmp_name(const char *name)
{
    return is_tmp_with(name, VYRE__TMP_SUFFIX) || is_tmp_with(name, VYRE__DOOMED_SUFFIX);
}

int vyre__blob_is_doomed_name(const char *name)
{
    return is_tmp_with(name, VYRE__DOOMED_SUFFIX);
}

int vyre__blob_is_quarantine_name(const char *name)
{
    size_t base = VYRE_KEY_HEX_LEN + strlen(VYRE_BLOB_EXT);
    if (strlen(name) <= base + 1 || !hex_run(name, VYRE_KEY_HEX_LEN) ||
        strncmp(name + VYRE_KEY_HEX_LEN, VYRE_BLOB_EXT, strlen(VYRE_BLOB_EXT)) != 0 ||
        name[base] != '.')
        return 0;
    const char *p = name + base + 1;
    size_t r = 0;
    for (; r < VYRE_REJECT_COUNT; r++) {
        size_t n = strlen(reject_names[r]);
        if (strncmp(p, reject_names[r], n) == 0 && p[n] == '.') {
            p += n + 1;
            break;
        }
    }
    if (r == VYRE_REJECT_COUNT)
        return 0;
    /* <secs>, or <secs>.<pid>-<n> (quarantine_move's two forms). */
    const char *q = p;
    if (digits_then(&q, '\0'))
        return 1;
    return digits_then(&p, '.') && digits_then(&p, '-') && digits_then(&p, '\0');
}

int vyre__blob_tmp_name(const char *hex, const char *suffix, char *name, size_t size)
{
    unsigned long long ctr =
        (unsigned long long)atomic_fetch_add_explicit(&tmp_counter, 1, memory_order_relaxed);
    int n = snprintf(name, size, "%.16s.%ld.%llu.%016llx%s", hex, (long)getpid(), ctr,
                     (unsigned long long)tmp_nonce(), suffix);
    return n < 0 || (size_t)n >= size ? VYRE_ETOOBIG : VYRE_OK;
}

/* Creates a unique temp file in the directory tmpfd, exclusively, mode
 * 0600; its name goes to name. */
static int open_tmp(int tmpfd, const char *root, const char *hex, int umask, char *name,
                    size_t size, int *fd_out, vyre_error *err)
{
    for (int attempt = 0; attempt < 16; attempt++) {
        if (vyre__blob_tmp_name(hex, VYRE__TMP_SUFFIX, name, size))
            return vyre__fail(err, VYRE_ETOOBIG, NULL, "temp file name is too long");
        int fd = openat(tmpfd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd >= 0 && vyre__fchmod_umask(fd, umask) != 0) {
            /* A group cache whose members could not read the blob. */
            int e = errno;
            close(fd);
            unlinkat(tmpfd, name, 0);
            return vyre__fail(err, vyre__errno_code(e), NULL,
                              "cannot set the mode of '%s/tmp/%s' for the cache's umask %03o: %s",
                              root, name, (unsigned)umask, strerror(e));
        }
        if (fd >= 0) {
            *fd_out = fd;
            return VYRE_OK;
        }
        if (errno == EEXIST || errno == EINTR)
            continue;
        int e = errno, code = vyre__errno_code(e);
        return vyre__remedy(err, errno_remedy(code),
                            vyre__fail(err, code, errno_hint(code),
                                       "cannot create a temporary file in '%s/tmp': %s", root,
                                       strerror(e)));
    }
    return vyre__fail(err, VYRE_EEXIST, "remove stale files from the cache's tmp/ directory",
                      "cannot find an unused temporary file name in '%s/tmp'", root);
}

/* Opens the cache root given by path for the public entry points (the root
 * itself may be a symlink the user made; nothing below it is followed). */
static int open_root(const char *root, vyre_error *err)
{
    int fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0)
        return fd;
    int e = errno, code = vyre__errno_code(e);
    return vyre__fail(err, code, errno_hint(code), "cannot open cache directory '%s': %s", root,
                      strerror(e));
}

/* 1 when t[0..size) is n non-empty NUL-terminated names and nothing else. */
static int kernel_table_valid(const char *t, size_t size, uint32_t n)
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

static uint64_t kernels_sum(const void *t, size_t size)
{
    return size ? (uint64_t)XXH3_64bits(t, size) : 0;
}

/* Store: checks h's kernel table and fills its checksum. */
static int kernels_prepare(vyre_blob_header *w, vyre_error *err)
{
    if (!w->kernels) {
        w->n_kernels = 0;
        w->kernels_size = 0;
        w->kernels_xxh64 = 0;
        return VYRE_OK;
    }
    if (w->kernels_size > VYRE_BLOB_KERNELS_MAX ||
        !kernel_table_valid(w->kernels, w->kernels_size, w->n_kernels))
        return vyre__fail(err, VYRE_EINVAL,
                          "pass the names as vyre_cubin_kernels returns them (at most 64 KiB)",
                          "kernel table of %" PRIu32 " names in %" PRIu32 " bytes is malformed",
                          w->n_kernels, w->kernels_size);
    w->kernels_xxh64 = kernels_sum(w->kernels, w->kernels_size);
    return VYRE_OK;
}

void vyre_blob_store_opts_init(vyre_blob_store_opts *opts)
{
    if (!opts)
        return;
    memset(opts, 0, sizeof *opts);
    opts->rootfd = -1;
    opts->umask = -1;
}

/* What one store carries from step to step. */
typedef struct store_job {
    int rootfd;
    const char *root;
    int umask;
    vyre_blob_header w; /* the header as written */
    uint8_t hdr[VYRE_BLOB_HEADER_SIZE];
    char final[BLOB_PATH_MAX];                          /* the blob's path, for messages */
    char tmp[128];                                      /* the temp file's name in tmp/ */
    char hex[VYRE_KEY_HEX_LEN + 1];                     /* the key */
    char shard[9];                                      /* "blobs/ab" */
    char name[VYRE_KEY_HEX_LEN + sizeof VYRE_BLOB_EXT]; /* "<hex>.vblob" */
    int tmpfd;                                          /* tmp/, -1 once discarded */
    int sfd;                                            /* the shard, -1 until open */
} store_job;

/* Fills the header fields the store owns, checksums, encodes, and names
 * the files. */
static int store_prepare(store_job *j, const vyre_blob_header *h, const void *payload, size_t len,
                         vyre_error *err)
{
    if ((uint64_t)len > VYRE_BLOB_MAX_PAYLOAD)
        return vyre__fail(err, VYRE_ETOOBIG, "such pipelines are compiled but not cached",
                          "payload of '%zu' bytes is above the %" PRIu64 "-byte blob limit", len,
                          (uint64_t)VYRE_BLOB_MAX_PAYLOAD);
    vyre_blob_header *w = &j->w;
    *w = *h;
    w->format_version = VYRE_BLOB_FORMAT_VERSION;
    w->key_version = VYRE_KEY_VERSION;
    w->stored_size = (uint64_t)len;
    if (w->raw_size == 0)
        w->raw_size = (uint64_t)len;
    if (w->created_unix_ns == 0)
        w->created_unix_ns = vyre__unix_ns();
    payload_sum(len ? payload : "", len, w->payload_xxh128);
    int rc = kernels_prepare(w, err);
    if (rc)
        return rc;
    rc = vyre_blob_header_encode(w, j->hdr, err);
    if (rc)
        return rc;
    rc = vyre_blob_path(j->root, &w->key, j->final, sizeof j->final, err);
    if (rc)
        return rc;
    vyre_key_to_hex(&w->key, j->hex);
    snprintf(j->shard, sizeof j->shard, "blobs/%c%c", j->hex[0], j->hex[1]);
    memcpy(j->name, j->hex, VYRE_KEY_HEX_LEN);
    memcpy(j->name + VYRE_KEY_HEX_LEN, VYRE_BLOB_EXT, sizeof VYRE_BLOB_EXT);
    return VYRE_OK;
}

/* Writes everything to the temp file, then fsyncs: the data must be on
 * disk before the rename makes it visible, or a crash could leave a
 * complete-looking name over incomplete content. Returns 0 or an errno
 * value, *what naming the step that failed. */
static int store_write(store_job *j, int fd, const void *payload, size_t len, const char **what)
{
    struct iovec iov[3] = {{j->hdr, sizeof j->hdr},
                           {(void *)(uintptr_t)payload, len},
                           {(void *)(uintptr_t)j->w.kernels, j->w.kernels_size}};
    *what = "write";
    int e = writev_all(fd, iov, j->w.kernels_size ? 3 : 2);
    if (!e) {
        *what = "fsync";
        e = fsync_retry(fd);
    }
    if (close(fd) != 0 && !e) {
        *what = "close";
        e = errno;
    }
    return e;
}

/* Removes the temp file and closes tmp/ (once). */
static void store_discard(store_job *j)
{
    if (j->tmpfd < 0)
        return;
    unlinkat(j->tmpfd, j->tmp, 0);
    close(j->tmpfd);
    j->tmpfd = -1;
}

/* Opens the shard j->sfd, creating it on first use. Returns 0, a positive
 * errno value for the caller's "cannot store" report (*what: the step), or
 * a negative VYRE_E* code already reported (a link or a file where a
 * directory should be). */
static int store_open_shard(store_job *j, const char **what, vyre_error *err)
{
    *what = "open directory";
    j->sfd = vyre__open_beneath(j->rootfd, j->shard, O_RDONLY | O_DIRECTORY, 0);
    if (j->sfd >= 0)
        return 0;
    int e = errno;
    if (e != ENOENT) {
        store_discard(j);
        return subdir_fail(j->rootfd, j->root, j->shard, e, err);
    }
    int bfd = vyre__open_beneath(j->rootfd, "blobs", O_RDONLY | O_DIRECTORY, 0);
    if (bfd < 0) {
        e = errno;
        store_discard(j);
        return subdir_fail(j->rootfd, j->root, "blobs", e, err);
    }
    *what = "mkdir";
    if (vyre__mkdirat_umask(bfd, j->shard + 6, j->umask) != 0 && errno != EEXIST) {
        e = errno;
    } else if ((e = fsync_dirfd(bfd)) != 0) {
        *what = "fsync directory";
    } else {
        j->sfd = vyre__open_dir_at(bfd, j->shard + 6);
        e = j->sfd < 0 ? errno : 0;
    }
    close(bfd);
    if (e == ELOOP || e == ENOTDIR) {
        store_discard(j);
        return subdir_fail(j->rootfd, j->root, j->shard, e, err);
    }
    return e;
}

/* The report for a store that failed at step what with errno e. */
static int store_fail(store_job *j, const char *what, int e, vyre_error *err)
{
    store_discard(j);
    if (j->sfd >= 0)
        close(j->sfd);
    int code = vyre__errno_code(e);
    if (code == VYRE_EINVAL || code == VYRE_EEXIST || code == VYRE_EBUSY)
        code = VYRE_EIO;
    return vyre__remedy(err, errno_remedy(code),
                        vyre__fail(err, code, errno_hint(code), "cannot store blob '%s' (%s): %s",
                                   j->final, what, strerror(e)));
}

/* The store, below an open root. Every step is relative to a directory
 * opened without following a symlink: a tmp/, blobs/ or shard that is a
 * link fails the store instead of writing through it. */
static int store_at(store_job *j, vyre_blob_header *h, const void *payload, size_t len,
                    const vyre_blob_store_opts *o, vyre_error *err)
{
    int rc = store_prepare(j, h, payload, len, err);
    if (rc)
        return rc;
    j->tmpfd = vyre__open_beneath(j->rootfd, "tmp", O_RDONLY | O_DIRECTORY, 0);
    if (j->tmpfd < 0)
        return subdir_fail(j->rootfd, j->root, "tmp", errno, err);
    int fd = -1;
    rc = open_tmp(j->tmpfd, j->root, j->hex, j->umask, j->tmp, sizeof j->tmp, &fd, err);
    if (rc) {
        close(j->tmpfd);
        return rc;
    }
    const char *what = "write";
    int e = store_write(j, fd, payload, len, &what);
    if (e)
        return store_fail(j, what, e, err);
    /* The caller's last word before the blob becomes visible (the cache
     * records its index row here, so that a writer killed at any instant
     * leaves either nothing visible or a complete blob with its row). */
    if (o->before_rename && (rc = o->before_rename(&j->w, o->ctx, err)) != 0) {
        store_discard(j);
        return rc;
    }
    e = store_open_shard(j, &what, err);
    if (e < 0)
        return e;
    if (e)
        return store_fail(j, what, e, err);
    /* rename() is atomic: readers see the old blob or the new one, never a
     * mix. */
    if (renameat(j->tmpfd, j->tmp, j->sfd, j->name) != 0)
        return store_fail(j, "rename", errno, err);
    close(j->tmpfd);
    /* The rename itself is durable only once its directory is synced. The
     * blob is complete and valid from here on, so a failure now reports the
     * error but leaves it in place (another writer may own the same name). */
    e = fsync_dirfd(j->sfd);
    close(j->sfd);
    if (e != 0) {
        int code = vyre__errno_code(e);
        return vyre__remedy(
            err, errno_remedy(code),
            vyre__fail(err, code == VYRE_ENOENT ? VYRE_EIO : code, errno_hint(code),
                       "blob '%s' written but its directory could not be synced: %s", j->final,
                       strerror(e)));
    }
    *h = j->w;
    return VYRE_OK;
}

int vyre_blob_store(const char *root, vyre_blob_header *h, const void *payload, size_t len,
                    const vyre_blob_store_opts *opts, vyre_error *err)
{
    vyre_blob_store_opts defaults;
    vyre_blob_store_opts_init(&defaults);
    const vyre_blob_store_opts *o = opts ? opts : &defaults;
    if (!root || !h || (!payload && len))
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre_blob_store: NULL argument");
    store_job j = {.rootfd = o->rootfd, .root = root, .umask = o->umask, .tmpfd = -1, .sfd = -1};
    if (j.rootfd < 0 && (j.rootfd = open_root(root, err)) < 0)
        return j.rootfd;
    int rc = store_at(&j, h, payload, len, o, err);
    if (o->rootfd < 0)
        close(j.rootfd);
    return rc;
}

/* ---- load and check ----------------------------------------------------- */

/* Reads up to n bytes, through EINTR and short reads; stops early only at
 * end of file. Returns 0 or an errno value; *got is what was read. */
static int read_full(int fd, void *buf, size_t n, size_t *got)
{
    size_t done = 0;
    while (done < n) {
        ssize_t r = read(fd, (char *)buf + done, n - done);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            *got = done;
            return errno;
        }
        if (r == 0)
            break;
        done += (size_t)r;
    }
    *got = done;
    return 0;
}

/* One validation of one file, shared by load and check_file. */
typedef struct check {
    const char *path;         /* the file, for messages (and to open when dirfd < 0) */
    int dirfd;                /* >= 0: open rel below it, following no symlink */
    const char *rel;          /* path below dirfd */
    const vyre_key *expected; /* NULL: no key check */
    int keep;                 /* load: keep the payload in *blob */
    vyre_blob *blob;          /* out, when keep */
    vyre_blob_header h;       /* out, when have_header */
    int have_header;
    uint64_t file_size; /* out, when have_size */
    int have_size;
    vyre_blob_reject why;
    int hard_link; /* out: rejected for having other names */
    char detail[320];
} check;

static int io_fail(check *c, int e, const char *what, vyre_error *err)
{
    int code = vyre__errno_code(e);
    if (code == VYRE_EINVAL || code == VYRE_EEXIST || code == VYRE_EBUSY)
        code = VYRE_EIO;
    return vyre__remedy(err, errno_remedy(code),
                        vyre__fail(err, code, errno_hint(code), "cannot %s blob '%s': %s", what,
                                   c->path, strerror(e)));
}

static int reject(check *c, vyre_blob_reject why)
{
    c->why = why;
    return reject_code(why);
}

/* The kernel-name table after the payload: its checksum, then its form. */
static int check_kernels(check *c, const uint8_t *t)
{
    if (c->h.kernels_size == 0)
        return VYRE_OK;
    if (kernels_sum(t, c->h.kernels_size) != c->h.kernels_xxh64) {
        snprintf(c->detail, sizeof c->detail,
                 "kernel-name table checksum does not match (%" PRIu32 " bytes)",
                 c->h.kernels_size);
        return reject(c, VYRE_REJECT_PAYLOAD_SUM);
    }
    if (!kernel_table_valid((const char *)t, c->h.kernels_size, c->h.n_kernels)) {
        snprintf(c->detail, sizeof c->detail,
                 "kernel-name table is not %" PRIu32 " NUL-terminated names", c->h.n_kernels);
        return reject(c, VYRE_REJECT_BAD_FIELD);
    }
    return VYRE_OK;
}

/* Sizes, key, then (the expensive part) the payload checksum. `payload` may
 * be NULL when the caller streams the payload itself. */
static int check_body(check *c, uint64_t have, const uint8_t *payload)
{
    uint64_t want = (uint64_t)VYRE_BLOB_HEADER_SIZE + c->h.stored_size + c->h.kernels_size;
    if (have < want) {
        snprintf(c->detail, sizeof c->detail,
                 "file has '%" PRIu64 "' bytes but its header declares %" PRIu64, have, want);
        return reject(c, VYRE_REJECT_TRUNCATED);
    }
    if (have > want) {
        snprintf(c->detail, sizeof c->detail,
                 "file has '%" PRIu64 "' bytes, %" PRIu64 " more than its header declares", have,
                 have - want);
        return reject(c, VYRE_REJECT_TRAILING);
    }
    if (c->expected && memcmp(c->expected->bytes, c->h.key.bytes, VYRE_KEY_BYTES) != 0) {
        char a[VYRE_KEY_HEX_LEN + 1], b[VYRE_KEY_HEX_LEN + 1];
        vyre_key_to_hex(&c->h.key, a);
        vyre_key_to_hex(c->expected, b);
        snprintf(c->detail, sizeof c->detail, "header key '%s' is not the file's key '%s'", a, b);
        return reject(c, VYRE_REJECT_KEY_MISMATCH);
    }
    if (payload) {
        uint8_t sum[16];
        payload_sum(payload, (size_t)c->h.stored_size, sum);
        if (memcmp(sum, c->h.payload_xxh128, 16) != 0) {
            snprintf(c->detail, sizeof c->detail,
                     "payload checksum does not match (%" PRIu64 " bytes)", c->h.stored_size);
            return reject(c, VYRE_REJECT_PAYLOAD_SUM);
        }
        return check_kernels(c, payload + c->h.stored_size);
    }
    return VYRE_OK;
}

static int decode_into(check *c, const uint8_t *buf, size_t len)
{
    vyre_blob_reject r = decode(buf, len, &c->h, c->detail, sizeof c->detail);
    if (r != VYRE_REJECT_NONE)
        return reject(c, r);
    c->have_header = 1;
    return VYRE_OK;
}

/* Check mode: checksum without keeping the payload. Payloads up to
 * WHOLE_CHECK_MAX are read in one go and hashed by payload_sum (the AVX2
 * build when the CPU has it, about 2.5x the streaming library's SSE2 code:
 * verify is hash-bound on page-cached files); larger ones stream in chunks
 * so memory stays bounded. */
#define WHOLE_CHECK_MAX ((uint64_t)16 << 20)

/* Check mode: the kernel table that follows the payload (bounded). */
static int stream_kernels(check *c, int fd, vyre_error *err)
{
    size_t n = c->h.kernels_size, got = 0;
    if (n == 0)
        return VYRE_OK;
    uint8_t *t = malloc(n);
    if (!t)
        return vyre__fail(err, VYRE_ENOMEM, NULL, "cannot allocate a kernel table");
    int e = read_full(fd, t, n, &got), rc;
    if (e) {
        rc = io_fail(c, e, "read", err);
    } else if (got < n) {
        snprintf(c->detail, sizeof c->detail, "file ended %zu bytes early", n - got);
        rc = reject(c, VYRE_REJECT_TRUNCATED);
    } else {
        rc = check_kernels(c, t);
    }
    free(t);
    return rc;
}

static int stream_payload(check *c, int fd, vyre_error *err)
{
    if (c->h.stored_size <= WHOLE_CHECK_MAX) {
        size_t n = (size_t)c->h.stored_size, got = 0;
        uint8_t *buf = malloc(n ? n : 1);
        if (!buf)
            return vyre__fail(err, VYRE_ENOMEM, NULL, "cannot allocate a checksum buffer");
        int e = read_full(fd, buf, n, &got);
        int rc = VYRE_OK;
        if (e) {
            rc = io_fail(c, e, "read", err);
        } else if (got < n) { /* shrank under us */
            snprintf(c->detail, sizeof c->detail, "file ended %zu bytes early", n - got);
            rc = reject(c, VYRE_REJECT_TRUNCATED);
        } else {
            uint8_t sum[16];
            payload_sum(buf, n, sum);
            if (memcmp(sum, c->h.payload_xxh128, 16) != 0) {
                snprintf(c->detail, sizeof c->detail,
                         "payload checksum does not match (%" PRIu64 " bytes)", c->h.stored_size);
                rc = reject(c, VYRE_REJECT_PAYLOAD_SUM);
            }
        }
        free(buf);
        return rc ? rc : stream_kernels(c, fd, err);
    }
    uint8_t *chunk = malloc(STREAM_CHUNK);
    XXH3_state_t *st = XXH3_createState();
    if (!chunk || !st) {
        free(chunk);
        XXH3_freeState(st);
        return vyre__fail(err, VYRE_ENOMEM, NULL, "cannot allocate a checksum buffer");
    }
    XXH3_128bits_reset(st);
    uint64_t left = c->h.stored_size;
    int rc = VYRE_OK;
    while (left > 0) {
        size_t want = left < STREAM_CHUNK ? (size_t)left : STREAM_CHUNK, got = 0;
        int e = read_full(fd, chunk, want, &got);
        if (e) {
            rc = io_fail(c, e, "read", err);
            break;
        }
        if (got < want) { /* shrank under us */
            snprintf(c->detail, sizeof c->detail, "file ended %" PRIu64 " bytes early", left - got);
            rc = reject(c, VYRE_REJECT_TRUNCATED);
            break;
        }
        XXH3_128bits_update(st, chunk, got);
        left -= got;
    }
    if (rc == VYRE_OK) {
        XXH128_canonical_t cs;
        XXH128_canonicalFromHash(&cs, XXH3_128bits_digest(st));
        if (memcmp(cs.digest, c->h.payload_xxh128, 16) != 0) {
            snprintf(c->detail, sizeof c->detail,
                     "payload checksum does not match (%" PRIu64 " bytes)", c->h.stored_size);
            rc = reject(c, VYRE_REJECT_PAYLOAD_SUM);
        }
    }
    free(chunk);
    XXH3_freeState(st);
    return rc ? rc : stream_kernels(c, fd, err);
}

/* Load: an intact blob of an older key format is a miss, left in place. */
static int reject_stale(check *c)
{
    snprintf(c->detail, sizeof c->detail, "key version '%" PRIu32 "' (this build uses %d)",
             c->h.key_version, VYRE_KEY_VERSION);
    return reject(c, VYRE_REJECT_STALE);
}

static vyre_blob *blob_alloc(size_t payload_room)
{
    return malloc(BLOB_PREFIX + payload_room);
}

static uint8_t *blob_area(vyre_blob *b)
{
    return (uint8_t *)b + BLOB_PREFIX;
}

static int check_fd(check *c, int fd, vyre_error *err)
{
    struct stat st;
    if (fstat(fd, &st) != 0)
        return io_fail(c, errno, "stat", err);
    if (!S_ISREG(st.st_mode)) {
        snprintf(c->detail, sizeof c->detail, "a %s, not a regular file",
                 vyre__file_type_name(st.st_mode));
        return reject(c, VYRE_REJECT_NOT_REGULAR);
    }
    c->file_size = (uint64_t)st.st_size;
    c->have_size = 1;
    /* A blob is written under a fresh name and renamed into place, so it
     * has exactly one name. More: a hard link to a file elsewhere, which
     * the cache must neither trust nor ever write through. */
    if (st.st_nlink > 1) {
        snprintf(c->detail, sizeof c->detail,
                 "a hard link (%ju names): a blob never shares its file with another place",
                 (uintmax_t)st.st_nlink);
        c->hard_link = 1;
        return reject(c, VYRE_REJECT_NOT_REGULAR);
    }
    /* Bounded before anything is read: a sparse 100 GB "blob" costs one
     * fstat, not a read. */
    if (c->file_size >
        (uint64_t)VYRE_BLOB_HEADER_SIZE + VYRE_BLOB_MAX_PAYLOAD + VYRE_BLOB_KERNELS_MAX) {
        snprintf(c->detail, sizeof c->detail,
                 "file of '%" PRIu64 "' bytes is larger than any blob (%" PRIu64
                 " bytes at most); not read",
                 c->file_size,
                 (uint64_t)VYRE_BLOB_HEADER_SIZE + VYRE_BLOB_MAX_PAYLOAD + VYRE_BLOB_KERNELS_MAX);
        return reject(c, VYRE_REJECT_TRAILING);
    }
    size_t got = 0;
    int e;

    if (c->file_size < VYRE_BLOB_HEADER_SIZE) {
        /* Too short to be a blob; read what is there to say why. */
        uint8_t hb[VYRE_BLOB_HEADER_SIZE];
        if ((e = read_full(fd, hb, (size_t)c->file_size, &got)) != 0)
            return io_fail(c, e, "read", err);
        return decode_into(c, hb, got);
    }

    if (c->file_size <= WHOLE_READ_MAX) {
        /* The common case: one bounded allocation sized from fstat, one
         * read of the whole file. */
        size_t size = (size_t)c->file_size;
        vyre_blob *b = blob_alloc(size);
        if (!b)
            return vyre__fail(err, VYRE_ENOMEM, NULL, "cannot allocate %zu bytes for blob '%s'",
                              size, c->path);
        uint8_t *area = blob_area(b);
        if ((e = read_full(fd, area, size, &got)) != 0) {
            free(b);
            return io_fail(c, e, "read", err);
        }
        int rc = decode_into(c, area, got);
        if (!rc)
            rc = check_body(c, got, area + VYRE_BLOB_HEADER_SIZE);
        if (!rc && c->keep && VYRE_BLOB_KEY_STALE(c->h.key_version))
            rc = reject_stale(c);
        if (rc || !c->keep) {
            free(b);
            return rc;
        }
        b->header = c->h;
        if (c->h.kernels_size)
            b->header.kernels = (const char *)area + VYRE_BLOB_HEADER_SIZE + c->h.stored_size;
        b->payload = area + VYRE_BLOB_HEADER_SIZE;
        b->size = (size_t)c->h.stored_size;
        c->blob = b;
        return VYRE_OK;
    }

    /* Large file: header first, sizes checked against it and against the
     * file, and only then an allocation. */
    uint8_t hb[VYRE_BLOB_HEADER_SIZE];
    if ((e = read_full(fd, hb, sizeof hb, &got)) != 0)
        return io_fail(c, e, "read", err);
    int rc = decode_into(c, hb, got);
    if (!rc)
        rc = check_body(c, c->file_size, NULL);
    if (rc)
        return rc;
    if (!c->keep)
        return stream_payload(c, fd, err);
    if (VYRE_BLOB_KEY_STALE(c->h.key_version))
        return reject_stale(c);
    size_t n = (size_t)c->h.stored_size + c->h.kernels_size;
    vyre_blob *b = blob_alloc(n);
    if (!b)
        return vyre__fail(err, VYRE_ENOMEM, NULL, "cannot allocate %zu bytes for blob '%s'", n,
                          c->path);
    uint8_t *area = blob_area(b);
    if ((e = read_full(fd, area, n, &got)) != 0) {
        free(b);
        return io_fail(c, e, "read", err);
    }
    rc = got < n ? check_body(c, VYRE_BLOB_HEADER_SIZE + (uint64_t)got, NULL)
                 : check_body(c, c->file_size, area);
    if (rc) {
        free(b);
        return rc;
    }
    b->header = c->h;
    if (c->h.kernels_size)
        b->header.kernels = (const char *)area + c->h.stored_size;
    b->payload = area;
    b->size = (size_t)c->h.stored_size;
    c->blob = b;
    return VYRE_OK;
}

/* The directory part of rel below dirfd, opened without following
 * anything; *base gets the last component. -1 with errno on failure. */
static int open_parent(int dirfd, const char *rel, const char **base)
{
    const char *slash = strrchr(rel, '/');
    *base = slash ? slash + 1 : rel;
    if (!slash)
        return dup(dirfd);
    char dir[BLOB_PATH_MAX];
    size_t n = (size_t)(slash - rel);
    if (n >= sizeof dir) {
        errno = ENAMETOOLONG;
        return -1;
    }
    memcpy(dir, rel, n);
    dir[n] = '\0';
    return vyre__open_beneath(dirfd, dir, O_RDONLY | O_DIRECTORY, 0);
}

/* Returns 0, a reject (c->why set) or another error (c->why NONE). */
static int check_path(check *c, vyre_error *err)
{
    c->why = VYRE_REJECT_NONE;
    c->detail[0] = '\0';
    /* O_NOFOLLOW (and, below a cache root, no symlink at any component):
     * a symlink in the cache is never followed (it could point anywhere).
     * O_NONBLOCK: a FIFO planted there must not hang us; it has no effect
     * on regular files. */
    int fd = c->dirfd < 0 ? open(c->path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK)
                          : vyre__open_beneath(c->dirfd, c->rel, O_RDONLY | O_NONBLOCK, 0);
    if (fd < 0) {
        int e = errno;
        if (c->dirfd >= 0 && (e == ELOOP || e == ENOTDIR || e == EXDEV)) {
            /* The file itself, or a directory on the way? Only the first
             * is this blob's problem; the second is a miss (verify reports
             * the directory). */
            const char *base;
            int pfd = open_parent(c->dirfd, c->rel, &base);
            struct stat st;
            int own = pfd >= 0 && fstatat(pfd, base, &st, AT_SYMLINK_NOFOLLOW) == 0;
            if (pfd >= 0)
                close(pfd);
            if (!own)
                return vyre__remedy(err, VYRE_REMEDY_CACHE_REPAIR,
                                    vyre__fail(err, VYRE_ENOENT,
                                               "a directory on the way is a symlink or not a "
                                               "directory; it is not followed",
                                               "no blob at '%s'", c->path));
            snprintf(c->detail, sizeof c->detail, "a %s, not a regular file",
                     vyre__file_type_name(st.st_mode));
            return reject(c, VYRE_REJECT_NOT_REGULAR);
        }
        if (e == ELOOP) {
            snprintf(c->detail, sizeof c->detail, "a symbolic link, not a regular file");
            return reject(c, VYRE_REJECT_NOT_REGULAR);
        }
        if (e == ENXIO) { /* open() of a socket */
            snprintf(c->detail, sizeof c->detail, "a socket, not a regular file");
            return reject(c, VYRE_REJECT_NOT_REGULAR);
        }
        if (e == ENOENT || e == ENOTDIR)
            return vyre__fail(err, VYRE_ENOENT, NULL, "no blob at '%s'", c->path);
        return io_fail(c, e, "open", err);
    }
    int rc = check_fd(c, fd, err);
    close(fd);
    return rc;
}

static int check_finish(check *c, int rc, vyre_blob_header *h, uint64_t *file_size,
                        vyre_blob_reject *why, vyre_error *err)
{
    if (h && c->have_header)
        *h = c->h;
    if (file_size && c->have_size)
        *file_size = c->file_size;
    if (rc && c->why != VYRE_REJECT_NONE) {
        if (why)
            *why = c->why;
        return vyre__fail(err, rc, reject_hint(c->why), "blob '%s' rejected (%s): %s", c->path,
                          reject_names[c->why], c->detail);
    }
    return rc;
}

int vyre_blob_check_file(const char *path, const vyre_key *expected, vyre_blob_header *h,
                         uint64_t *file_size, vyre_blob_reject *why, vyre_error *err)
{
    if (why)
        *why = VYRE_REJECT_NONE;
    if (!path)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre_blob_check_file: NULL path");
    check c;
    memset(&c, 0, sizeof c);
    c.path = path;
    c.dirfd = -1;
    c.expected = expected;
    int rc = check_path(&c, err);
    return check_finish(&c, rc, h, file_size, why, err);
}

int vyre__blob_check_at(int rootfd, const char *rel, const char *path, const vyre_key *expected,
                        vyre_blob_header *h, uint64_t *file_size, vyre_blob_reject *why,
                        int *hard_link, vyre_error *err)
{
    if (why)
        *why = VYRE_REJECT_NONE;
    if (hard_link)
        *hard_link = 0;
    check c;
    memset(&c, 0, sizeof c);
    c.path = path;
    c.dirfd = rootfd;
    c.rel = rel;
    c.expected = expected;
    int rc = check_path(&c, err);
    if (hard_link)
        *hard_link = c.hard_link;
    return check_finish(&c, rc, h, file_size, why, err);
}

/* ---- quarantine --------------------------------------------------------- */

/* Opens <root>/quarantine (creating it), never through a symlink. */
static int open_quarantine(int rootfd, const char *root, vyre_error *err)
{
    int qfd = vyre__open_beneath(rootfd, "quarantine", O_RDONLY | O_DIRECTORY, 0);
    if (qfd < 0 && errno == ENOENT) {
        if (mkdirat(rootfd, "quarantine", 0700) != 0 && errno != EEXIST)
            return subdir_fail(rootfd, root, "quarantine", errno, err);
        qfd = vyre__open_beneath(rootfd, "quarantine", O_RDONLY | O_DIRECTORY, 0);
    }
    if (qfd < 0)
        return subdir_fail(rootfd, root, "quarantine", errno, err);
    return qfd;
}

/* Moves the entry name of directory srcfd (path names it in messages) to
 * <root>/quarantine/<name>.<reason>.<secs>[.<pid>-<n>], never over an
 * earlier quarantined file. Counts nothing. dest receives the new path. The
 * entry itself moves (renameat): a symlink is never followed. */
static int quarantine_move(int rootfd, const char *root, int srcfd, const char *name,
                           const char *path, vyre_blob_reject why, char *dest, size_t dsize,
                           vyre_error *err)
{
    if (!*name)
        return vyre__fail(err, VYRE_EINVAL, "give the path of a file, not of a directory",
                          "cannot quarantine '%s': no file name", path);
    int qfd = open_quarantine(rootfd, root, err);
    if (qfd < 0)
        return qfd;
    long long secs = (long long)time(NULL);
    char qname[BLOB_PATH_MAX];
    int rc = VYRE_OK;
    for (int n = 0; n < 100;) {
        /* The plain name first; on a clash (the same file rejected twice in
         * one second) a suffix unique to this process and call. */
        int len =
            n ? snprintf(qname, sizeof qname, "%s.%s.%lld.%ld-%llu", name,
                         vyre_blob_reject_name(why), secs, (long)getpid(),
                         (unsigned long long)atomic_fetch_add_explicit(&quarantine_counter, 1,
                                                                       memory_order_relaxed))
              : snprintf(qname, sizeof qname, "%s.%s.%lld", name, vyre_blob_reject_name(why), secs);
        if (len < 0 || (size_t)len >= sizeof qname ||
            root_path(dest, dsize, root, "quarantine/", NULL) != VYRE_OK ||
            strlen(dest) + (size_t)len >= dsize) {
            rc = vyre__fail(err, VYRE_ETOOBIG, "use a shorter cache directory path",
                            "quarantine path for '%s' is too long", path);
            break;
        }
        memcpy(dest + strlen(dest), qname, (size_t)len + 1);
        /* RENAME_NOREPLACE keeps an earlier quarantined file of the same
         * name and second. */
        int r = renameat2(srcfd, name, qfd, qname, RENAME_NOREPLACE);
        if (r != 0 && (errno == EINVAL || errno == ENOSYS)) {
            /* Filesystem without RENAME_NOREPLACE: check, then rename (a
             * race only risks replacing another quarantined copy). */
            struct stat st;
            if (fstatat(qfd, qname, &st, AT_SYMLINK_NOFOLLOW) == 0) {
                errno = EEXIST;
            } else {
                r = renameat(srcfd, name, qfd, qname);
            }
        }
        if (r == 0) {
            /* The file's time becomes the time it was quarantined: prune
             * and cleanup age quarantine/ by it (quarantine_max_age). */
            utimensat(qfd, qname, NULL, AT_SYMLINK_NOFOLLOW);
            break;
        }
        int e = errno;
        if (e == EEXIST || e == ENOTEMPTY) {
            n++;
            if (n == 100)
                rc = vyre__fail(err, VYRE_EEXIST, "empty the cache's quarantine/ directory",
                                "too many quarantined copies of '%s'", path);
            continue;
        }
        int code = vyre__errno_code(e);
        rc = vyre__fail(err, code, errno_hint(code), "cannot move '%s' into quarantine '%s': %s",
                        path, root, strerror(e));
        break;
    }
    close(qfd);
    return rc;
}

int vyre_blob_quarantine(const char *root, const char *path, vyre_blob_reject why, vyre_error *err)
{
    if (!root || !path)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre_blob_quarantine: NULL argument");
    count_reject(why);
    const char *slash = strrchr(path, '/');
    const char *name = slash ? slash + 1 : path;
    char dir[BLOB_PATH_MAX];
    dir_of(path, dir, sizeof dir);
    int rootfd = open_root(root, err);
    if (rootfd < 0)
        return rootfd;
    /* The caller names the file's directory; only the file itself moves. */
    int srcfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (srcfd < 0) {
        int e = errno, code = vyre__errno_code(e);
        close(rootfd);
        return vyre__fail(err, code, errno_hint(code), "cannot quarantine '%s': %s", path,
                          strerror(e));
    }
    char dest[BLOB_PATH_MAX];
    int rc = quarantine_move(rootfd, root, srcfd, name, path, why, dest, sizeof dest, err);
    close(srcfd);
    close(rootfd);
    return rc;
}

int vyre__blob_quarantine_at(int rootfd, const char *root, const char *rel, vyre_blob_reject why,
                             vyre_error *err)
{
    count_reject(why);
    char path[BLOB_PATH_MAX];
    if (root_path(path, sizeof path, root, rel, err))
        return VYRE_ETOOBIG;
    const char *name;
    int srcfd = open_parent(rootfd, rel, &name);
    if (srcfd < 0)
        return vyre__remedy(err, VYRE_REMEDY_CACHE_REPAIR,
                            vyre__fail(err, VYRE_EUNSAFE,
                                       "a verify shows what is in the way, and a repair removes it",
                                       "cannot quarantine '%s': its directory is not a real "
                                       "directory of the cache (%s); nothing is followed",
                                       path, strerror(errno)));
    char dest[BLOB_PATH_MAX];
    int rc = quarantine_move(rootfd, root, srcfd, name, path, why, dest, sizeof dest, err);
    close(srcfd);
    return rc;
}

int vyre__blob_unlink_at(int rootfd, const char *rel)
{
    const char *name;
    int dfd = open_parent(rootfd, rel, &name);
    if (dfd < 0)
        return -1;
    int r = unlinkat(dfd, name, 0);
    int e = errno;
    close(dfd);
    errno = e;
    return r;
}

int vyre_blob_load(const char *root, const vyre_key *key, vyre_blob **out, vyre_blob_reject *why,
                   vyre_error *err)
{
    if (why)
        *why = VYRE_REJECT_NONE;
    if (out)
        *out = NULL;
    if (!root || !key || !out)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre_blob_load: NULL argument");
    int rootfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (rootfd < 0) {
        int e = errno;
        if (e == ENOENT || e == ENOTDIR)
            return vyre__fail(err, VYRE_ENOENT, NULL, "no cache directory '%s'", root);
        int code = vyre__errno_code(e);
        return vyre__fail(err, code, errno_hint(code), "cannot open cache directory '%s': %s", root,
                          strerror(e));
    }
    int rc = vyre__blob_load_at(rootfd, root, key, out, why, err);
    close(rootfd);
    return rc;
}

int vyre__blob_load_at(int rootfd, const char *root, const vyre_key *key, vyre_blob **out,
                       vyre_blob_reject *why, vyre_error *err)
{
    if (why)
        *why = VYRE_REJECT_NONE;
    if (out)
        *out = NULL;
    if (rootfd < 0 || !root || !key || !out)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre_blob_load: NULL argument");
    char path[BLOB_PATH_MAX];
    int rc = vyre_blob_path(root, key, path, sizeof path, err);
    if (rc)
        return rc;
    /* "blobs/<2 hex>/<64 hex>.vblob": the tail of path. */
    const char *rel = path + strlen(path) - (6 + 3 + VYRE_KEY_HEX_LEN + strlen(VYRE_BLOB_EXT));
    check c; /* not memset: this is the hit path; check_path sets why and detail */
    c.path = path;
    c.dirfd = rootfd;
    c.rel = rel;
    c.expected = key;
    c.keep = 1;
    c.blob = NULL;
    c.have_header = 0;
    c.have_size = 0;
    c.hard_link = 0;
    rc = check_path(&c, err);
    if (!rc) {
        *out = c.blob;
        return VYRE_OK;
    }
    if (c.why == VYRE_REJECT_NONE)
        return rc; /* a plain miss, or an I/O error: nothing to quarantine */
    if (c.why == VYRE_REJECT_STALE) {
        /* Intact but of an older key format: a miss, never quarantined (a
         * store over the key replaces it; prune --stale removes it). */
        if (why)
            *why = c.why;
        return vyre__fail(err, VYRE_ENOENT, reject_hint(c.why), "blob '%s' is stale: %s", path,
                          c.detail);
    }

    /* A bad file is a miss: move it aside so that the next store can put a
     * good one in its place, and say why. */
    count_reject(c.why);
    if (why)
        *why = c.why;
    if (c.hard_link) {
        /* Only this name goes: the file's other names, wherever they are,
         * keep it. */
        if (vyre__blob_unlink_at(rootfd, rel) == 0)
            return vyre__fail(err, rc,
                              "nothing to do: it is treated as a cache miss and rebuilt; the "
                              "other names of the file are untouched",
                              "blob '%s' rejected (%s): %s; the link was removed", path,
                              reject_names[c.why], c.detail);
        int e = errno;
        return vyre__remedy(err, VYRE_REMEDY_CACHE_REPAIR,
                            vyre__fail(err, rc,
                                       "it is treated as a cache miss; a repair removes "
                                       "the link",
                                       "blob '%s' rejected (%s): %s; not removed: %s", path,
                                       reject_names[c.why], c.detail, strerror(e)));
    }
    char dest[BLOB_PATH_MAX];
    vyre_error qerr;
    vyre_error_clear(&qerr);
    const char *name;
    int srcfd = open_parent(rootfd, rel, &name);
    int qrc = srcfd < 0 ? vyre__fail(&qerr, VYRE_EUNSAFE, NULL,
                                     "its directory is not a real directory of the cache")
                        : quarantine_move(rootfd, root, srcfd, name, path, c.why, dest, sizeof dest,
                                          &qerr);
    if (srcfd >= 0)
        close(srcfd);
    if (qrc == VYRE_OK)
        return vyre__fail(err, rc,
                          "nothing to do: it is treated as a cache miss and rebuilt; the "
                          "quarantined copy is kept for inspection",
                          "blob '%s' rejected (%s): %s; moved to '%s'", path, reject_names[c.why],
                          c.detail, dest);
    return vyre__remedy(
        err, VYRE_REMEDY_CACHE_REPAIR,
        vyre__fail(err, rc,
                   "it is treated as a cache miss; make the cache writable, or delete the file",
                   "blob '%s' rejected (%s): %s; not quarantined: %s", path, reject_names[c.why],
                   c.detail, qerr.message));
}

/* ---- objects from elsewhere ---------------------------------------------- */

int vyre__blob_from_memory(const void *buf, size_t len, const char *origin,
                           const vyre_key *expected, vyre_blob **out, vyre_blob_reject *why,
                           vyre_error *err)
{
    if (why)
        *why = VYRE_REJECT_NONE;
    if (!out || !expected || (len && !buf) || !origin)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre__blob_from_memory: NULL argument");
    *out = NULL;
    /* The same checks, in the same order, as a blob loaded from the cache
     * (check_fd): size bound, header (magic, versions, header checksum,
     * fields), exact size, key, payload checksum, kernel-name table
     * (checksum and form), then an older key format refused as stale.
     * Nothing is allocated before all of it passed. */
    check c;
    memset(&c, 0, sizeof c);
    c.path = origin;
    c.dirfd = -1;
    c.expected = expected;
    c.keep = 1;
    c.file_size = (uint64_t)len;
    c.have_size = 1;
    int rc;
    if (c.file_size >
        (uint64_t)VYRE_BLOB_HEADER_SIZE + VYRE_BLOB_MAX_PAYLOAD + VYRE_BLOB_KERNELS_MAX) {
        snprintf(c.detail, sizeof c.detail,
                 "object of '%" PRIu64 "' bytes is larger than any blob (%" PRIu64
                 " bytes at most)",
                 c.file_size,
                 (uint64_t)VYRE_BLOB_HEADER_SIZE + VYRE_BLOB_MAX_PAYLOAD + VYRE_BLOB_KERNELS_MAX);
        rc = reject(&c, VYRE_REJECT_TRAILING);
    } else {
        rc = decode_into(&c, buf, len);
        if (rc == VYRE_OK)
            rc = check_body(&c, (uint64_t)len, (const uint8_t *)buf + VYRE_BLOB_HEADER_SIZE);
        if (rc == VYRE_OK && VYRE_BLOB_KEY_STALE(c.h.key_version))
            rc = reject_stale(&c);
    }
    if (rc != VYRE_OK) {
        if (why)
            *why = c.why;
        return vyre__fail(err, rc,
                          c.why == VYRE_REJECT_STALE
                              ? "the store holds a blob of an older key format: it was not used; "
                                "the next write-back of this key replaces it"
                              : "the object is not an intact vyre blob for this key: it was not "
                                "used; remove it from the store, or let the next write-back "
                                "replace it",
                          "object '%s' rejected (%s): %s", origin, reject_names[c.why], c.detail);
    }
    size_t n = (size_t)c.h.stored_size + c.h.kernels_size;
    vyre_blob *b = blob_alloc(n);
    if (!b)
        return vyre__fail(err, VYRE_ENOMEM, NULL, "cannot allocate %zu bytes for a blob", n);
    uint8_t *area = blob_area(b);
    if (n)
        memcpy(area, (const uint8_t *)buf + VYRE_BLOB_HEADER_SIZE, n);
    b->header = c.h;
    if (c.h.kernels_size)
        b->header.kernels = (const char *)area + c.h.stored_size;
    b->payload = area;
    b->size = (size_t)c.h.stored_size;
    *out = b;
    return VYRE_OK;
}

/* ---- kernel-name tables ------------------------------------------------ */

int vyre_kernel_list_has(const char *names, size_t names_len, const char *name)
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
    if (got != (ssize_t)h->kernels_size || kernels_sum(t, h->kernels_size) != h->kernels_xxh64 ||
        !kernel_table_valid(t, h->kernels_size, h->n_kernels)) {
        free(t);
        return vyre__fail(err, VYRE_ECORRUPT, NULL, "blob '%s' changed under us", path);
    }
    *names = t;
    return VYRE_OK;
}
