/*
 * blob_load.c - loading and checking blobs: vyre__blob_load, the full
 * check of a file (vyre__blob_check_file), and validation of an object
 * from elsewhere (a remote store's) before it is trusted.
 *
 * Nothing is allocated from a size read out of a file before that size has
 * been checked against the header and the file's real size (the one
 * exception is bounded: files up to WHOLE_READ_MAX get a buffer sized from
 * fstat, so that a cache hit costs open + fstat + read + close).
 *
 * A hit touches the payload once in memory: it is read into the blob's own
 * buffer (the one handed to the caller, and from there to the driver) and
 * hashed there while it is still in the CPU's cache; nothing copies it
 * again. A file up to WHOLE_READ_MAX (a 1 MiB payload) is read in one
 * read() and then hashed: it fits in the L2 cache of current x86 cores, and
 * reading it in chunks hashed one by one was measured 3-5% slower there
 * (more read() calls, the same hashing, which is compute-bound; measured
 * again for issue 39: pieces of 16 or 32 KiB, each hashed after its read,
 * were slower than one read then one hash at every size from 24 KiB to
 * 1 MiB, e.g. 64 KiB at 1.61-1.75x a bare read against 1.51-1.53x). A larger
 * payload is read in HIT_CHUNK chunks, each hashed as soon as it is read
 * (streaming XXH3-128), so it is never hashed back from memory. The header
 * is decoded and checked (sizes against the file, key, key format) before
 * any payload byte is hashed.
 *
 * What is hashed is the caller's copy, after the read and never written
 * again: a file truncated or rewritten while it is read ends short or fails
 * the checksum (a miss, quarantined); the driver can never get bytes other
 * than those checked.
 *
 * The file is read, never mapped. A page of a mapping that a truncation
 * has cut off raises SIGBUS in the host program when it is touched, and
 * nothing a library may do rules that out while the cache's files can be
 * written by other processes: catching SIGBUS means owning the process's
 * signal handler; seals (F_ADD_SEALS) exist for memfd and shmem only;
 * mandatory locks are gone from Linux; a read lease (F_SETLEASE) holds a
 * truncating writer back for lease-break-time only, and says so with a
 * signal too. The kernel copies out of a mapping without a signal
 * (process_vm_readv fails with EFAULT), but that is a second copy, which
 * is what read() already is. And the driver must get a private copy of
 * what was hashed in any case, since a mapping's bytes may change after
 * they were hashed.
 *
 * The file is opened below the cache's kept directory of its shard
 * (vyre__blob_shards, one openat(2) with O_NOFOLLOW) when the caller has
 * one, else by a walk from the root that follows no symlink.
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
#include "cache/disk_size.h"

/* Files up to this size are read whole in one read(), with the buffer sized
 * from fstat: a cache hit is then open + fstat + read + close. Larger files
 * have their header read and checked first, so a large garbage file never
 * causes a large allocation. */
#define WHOLE_READ_MAX ((size_t)VYRE_BLOB_HEADER_SIZE + ((size_t)1 << 20))

/* A payload too large to be read whole (see the file comment) is read in
 * chunks of this size, each hashed as it arrives: one chunk's copy and hash
 * stay within the L2 cache. Measured against read-then-hash (thread CPU
 * time, page-cached file): 1.40x vs 1.44x of a bare read at 2 MiB, 1.42x vs
 * 1.51x at 4 MiB, 1.49x vs 1.57x at 8 MiB; 32-128 KiB chunks did worse. */
#define HIT_CHUNK ((size_t)256 << 10)

/* The payload of a loaded blob lives in the same allocation as the struct,
 * after it, at this (max_align_t friendly) offset. */
#define BLOB_PREFIX ((sizeof(vyre_blob) + 15) & ~(size_t)15)

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
    int shard_fd1;            /* a kept shard directory + 1 (0, zeroed: none); base is */
    const char *base;         /* opened below it first: the file's name in its shard */
    int via_shard;            /* out: the file was opened below the kept directory */
    int shard_stale;          /* out: not below the kept directory, but from dirfd */
    const vyre_key *expected; /* NULL: no key check */
    int keep;                 /* load: keep the payload in *blob */
    vyre_blob *blob;          /* out, when keep */
    vyre_blob_header h;       /* out, when have_header */
    int have_header;
    uint64_t file_size; /* out, when have_size */
    int have_size;
    vyre_blob_reject why;
    int hard_link;               /* out: rejected for having other names */
    uint64_t disk_size;          /* out, when have_size: st_blocks * 512 */
    vyre__blob_scratch *scratch; /* check mode (!keep): the buffer files are read into */
    char detail[320];
} check;

static int io_fail(check *c, int e, const char *what, vyre_error *err)
{
    int code = vyre__errno_code(e);
    if (code == VYRE_EINVAL || code == VYRE_EEXIST || code == VYRE_EBUSY)
        code = VYRE_EIO;
    return vyre__remedy(err, vyre__blob_errno_remedy(code),
                        vyre__fail(err, code, vyre__blob_errno_hint(code),
                                   "cannot %s blob '%s': %s", what, c->path, strerror(e)));
}

static int reject(check *c, vyre_blob_reject why)
{
    c->why = why;
    return vyre__blob_reject_code(why);
}

/* The payload's XXH3-128 (canonical bytes) against the header's. */
static int check_sum(check *c, const uint8_t sum[16])
{
    if (memcmp(sum, c->h.payload_xxh128, 16) == 0)
        return VYRE_OK;
    snprintf(c->detail, sizeof c->detail, "payload checksum does not match (%" PRIu64 " bytes)",
             c->h.stored_size);
    return reject(c, VYRE_REJECT_PAYLOAD_SUM);
}

/* A streamed payload's digest, checked (check_sum). */
static int check_stream_sum(check *c, vyre__xxh3_stream *st)
{
    uint64_t v[2];
    vyre__xxh3_stream_digest(st, v);
    XXH128_canonical_t cs;
    XXH128_canonicalFromHash(&cs, (XXH128_hash_t){.low64 = v[0], .high64 = v[1]});
    return check_sum(c, cs.digest);
}

/* The file shrank under us: missing bytes never came. */
static int ended_early(check *c, uint64_t missing)
{
    snprintf(c->detail, sizeof c->detail, "file ended %" PRIu64 " bytes early", missing);
    return reject(c, VYRE_REJECT_TRUNCATED);
}

/* The kernel-name table after the payload: its checksum, then its form. */
static int check_kernels(check *c, const uint8_t *t)
{
    if (c->h.kernels_size == 0)
        return VYRE_OK;
    if (vyre__blob_kernels_sum(t, c->h.kernels_size) != c->h.kernels_xxh64) {
        snprintf(c->detail, sizeof c->detail,
                 "kernel-name table checksum does not match (%" PRIu32 " bytes)",
                 c->h.kernels_size);
        return reject(c, VYRE_REJECT_PAYLOAD_SUM);
    }
    if (!vyre__blob_kernel_table_valid((const char *)t, c->h.kernels_size, c->h.n_kernels)) {
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
        vyre__blob_payload_sum(payload, (size_t)c->h.stored_size, sum);
        int rc = check_sum(c, sum);
        return rc ? rc : check_kernels(c, payload + c->h.stored_size);
    }
    return VYRE_OK;
}

static int decode_into(check *c, const uint8_t *buf, size_t len)
{
    vyre_blob_reject r = vyre__blob_decode(buf, len, &c->h, c->detail, sizeof c->detail);
    if (r != VYRE_REJECT_NONE)
        return reject(c, r);
    c->have_header = 1;
    return VYRE_OK;
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

/* What fstat tells before anything is read: a regular file with one name,
 * no larger than any blob. 0, or a reject / I/O failure. */
static int check_stat(check *c, int fd, vyre_error *err)
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
    c->disk_size = vyre__disk_bytes(&st);
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
    return VYRE_OK;
}

/* Reads the rest of a blob into buf, if any, and checks its payload
 * checksum and kernel-name table. buf holds the first `have` bytes already;
 * the payload starts at buf + pay_off; `n` bytes are expected in all. What
 * is still to read is read in HIT_CHUNK chunks, each hashed as it arrives
 * (see the file comment). The header (c->h) has been checked against the
 * file's size. */
static int read_hashed(check *c, int fd, uint8_t *buf, size_t have, size_t pay_off, size_t n,
                       vyre_error *err)
{
    size_t pay_end = pay_off + (size_t)c->h.stored_size, hashed = pay_off;
    int rc;
    if (have >= n) {
        /* All of it came in one read (a file up to WHOLE_READ_MAX): the
         * one-shot hash, from the cache the read just filled. */
        uint8_t sum[16];
        vyre__blob_payload_sum(buf + pay_off, (size_t)c->h.stored_size, sum);
        rc = check_sum(c, sum);
    } else {
        vyre__xxh3_stream st;
        vyre__xxh3_stream_reset(&st, (size_t)c->h.stored_size);
        for (;;) {
            size_t upto = have < pay_end ? have : pay_end;
            if (upto > hashed) {
                vyre__xxh3_stream_update(&st, buf + hashed, upto - hashed);
                hashed = upto;
            }
            if (have >= n)
                break;
            size_t want = n - have < HIT_CHUNK ? n - have : HIT_CHUNK, got = 0;
            int e = read_full(fd, buf + have, want, &got);
            if (e != 0)
                return io_fail(c, e, "read", err);
            have += got;
            if (got < want) /* shrank under us */
                return ended_early(c, n - have);
        }
        rc = check_stream_sum(c, &st);
    }
    return rc ? rc : check_kernels(c, buf + pay_end);
}

/* Hands the checked buffer over as the loaded blob (area = b's payload area,
 * payload at area + pay_off). */
static void keep_blob(check *c, vyre_blob *b, uint8_t *area, size_t pay_off)
{
    b->header = c->h;
    if (c->h.kernels_size)
        b->header.kernels = (const char *)area + pay_off + c->h.stored_size;
    b->payload = area + pay_off;
    b->size = (size_t)c->h.stored_size;
    c->blob = b;
}

/* The common case, a file up to WHOLE_READ_MAX: one bounded allocation
 * sized from fstat, one read of the whole file; the header is checked
 * (sizes, key, key format) before the payload is hashed. */
static int check_whole(check *c, int fd, vyre_error *err)
{
    size_t got = 0, size = (size_t)c->file_size;
    vyre_blob *b = blob_alloc(size);
    if (!b)
        return vyre__fail(err, VYRE_ENOMEM, NULL, "cannot allocate %zu bytes for blob '%s'", size,
                          c->path);
    uint8_t *area = blob_area(b);
    int e = read_full(fd, area, size, &got);
    if (e != 0) {
        free(b);
        return io_fail(c, e, "read", err);
    }
    int rc = decode_into(c, area, got);
    if (!rc)
        rc = check_body(c, c->file_size, NULL);
    if (!rc && VYRE_BLOB_KEY_STALE(c->h.key_version))
        rc = reject_stale(c);
    if (!rc)
        rc = read_hashed(c, fd, area, got, VYRE_BLOB_HEADER_SIZE, size, err);
    if (rc) {
        free(b);
        return rc;
    }
    keep_blob(c, b, area, VYRE_BLOB_HEADER_SIZE);
    return VYRE_OK;
}

/* A large file: header first, sizes checked against it and against the
 * file, and only then an allocation (a check that keeps nothing goes to
 * check_only_large instead). */
static int check_large(check *c, int fd, vyre_error *err)
{
    size_t got = 0;
    uint8_t hb[VYRE_BLOB_HEADER_SIZE];
    int e = read_full(fd, hb, sizeof hb, &got);
    if (e != 0)
        return io_fail(c, e, "read", err);
    int rc = decode_into(c, hb, got);
    if (!rc)
        rc = check_body(c, c->file_size, NULL);
    if (rc)
        return rc;
    if (VYRE_BLOB_KEY_STALE(c->h.key_version))
        return reject_stale(c);
    size_t n = (size_t)c->h.stored_size + c->h.kernels_size;
    vyre_blob *b = blob_alloc(n);
    if (!b)
        return vyre__fail(err, VYRE_ENOMEM, NULL, "cannot allocate %zu bytes for blob '%s'", n,
                          c->path);
    uint8_t *area = blob_area(b);
    rc = read_hashed(c, fd, area, 0, 0, n, err);
    if (rc) {
        free(b);
        return rc;
    }
    keep_blob(c, b, area, 0);
    return VYRE_OK;
}

/* ---- check mode: nothing kept ------------------------------------------ */

/* Check mode (verify, reindex, check_file) reads each file into the
 * caller's scratch buffer, reused from file to file (one per thread), and
 * hashes it there: no allocation per file, one pass over the bytes. A file
 * up to WHOLE_READ_MAX is read in one read() and hashed from the cache the
 * read just filled, as a hit does; a larger one has its header checked
 * first and its payload hashed HIT_CHUNK by HIT_CHUNK as it is read, so the
 * buffer stays bounded. The checks and their order are a load's (sizes
 * against the file, key, payload checksum, kernel-name table). */

/* s's buffer, grown to at least n bytes (n is bounded by the caller: a
 * file's size up to WHOLE_READ_MAX, a chunk or a kernel-name table). */
static uint8_t *scratch_room(vyre__blob_scratch *s, size_t n)
{
    if (s->cap < n) {
        size_t cap = n < HIT_CHUNK ? HIT_CHUNK : n;
        uint8_t *p = malloc(cap); /* nothing in the old buffer is kept */
        if (!p)
            return NULL;
        free(s->buf);
        s->buf = p;
        s->cap = cap;
    }
    return s->buf;
}

void vyre__blob_scratch_release(vyre__blob_scratch *s)
{
    if (!s)
        return;
    free(s->buf);
    s->buf = NULL;
    s->cap = 0;
}

static int scratch_fail(check *c, size_t n, vyre_error *err)
{
    return vyre__fail(err, VYRE_ENOMEM, NULL, "cannot allocate %zu bytes to check blob '%s'", n,
                      c->path);
}

/* A file up to WHOLE_READ_MAX: one read into the scratch buffer. */
static int check_only_whole(check *c, int fd, vyre_error *err)
{
    size_t size = (size_t)c->file_size, got = 0;
    uint8_t *buf = scratch_room(c->scratch, size);
    if (!buf)
        return scratch_fail(c, size, err);
    int e = read_full(fd, buf, size, &got);
    if (e != 0)
        return io_fail(c, e, "read", err);
    int rc = decode_into(c, buf, got);
    if (rc)
        return rc;
    if (got < size) { /* shrank under us */
        rc = check_body(c, c->file_size, NULL);
        return rc ? rc : ended_early(c, size - got);
    }
    return check_body(c, c->file_size, buf + VYRE_BLOB_HEADER_SIZE);
}

/* A larger file: the header, then the payload hashed chunk by chunk as it
 * is read, then the kernel-name table (at most VYRE_BLOB_KERNELS_MAX). */
static int check_only_large(check *c, int fd, vyre_error *err)
{
    uint8_t *buf = scratch_room(c->scratch, HIT_CHUNK);
    if (!buf)
        return scratch_fail(c, HIT_CHUNK, err);
    size_t got = 0;
    int e = read_full(fd, buf, VYRE_BLOB_HEADER_SIZE, &got);
    if (e != 0)
        return io_fail(c, e, "read", err);
    int rc = decode_into(c, buf, got);
    if (!rc)
        rc = check_body(c, c->file_size, NULL);
    if (rc)
        return rc;
    vyre__xxh3_stream st;
    vyre__xxh3_stream_reset(&st, (size_t)c->h.stored_size);
    for (uint64_t left = c->h.stored_size; left > 0; left -= got) {
        size_t want = left < HIT_CHUNK ? (size_t)left : HIT_CHUNK;
        if ((e = read_full(fd, buf, want, &got)) != 0)
            return io_fail(c, e, "read", err);
        if (got < want) /* shrank under us */
            return ended_early(c, left - got);
        vyre__xxh3_stream_update(&st, buf, got);
    }
    if ((rc = check_stream_sum(c, &st)) != VYRE_OK)
        return rc;
    size_t n = c->h.kernels_size;
    if (n == 0)
        return VYRE_OK;
    if (!(buf = scratch_room(c->scratch, n)))
        return scratch_fail(c, n, err);
    if ((e = read_full(fd, buf, n, &got)) != 0)
        return io_fail(c, e, "read", err);
    return got < n ? ended_early(c, n - got) : check_kernels(c, buf);
}

static int check_fd(check *c, int fd, vyre_error *err)
{
    int rc = check_stat(c, fd, err);
    if (rc)
        return rc;
    if (c->file_size < VYRE_BLOB_HEADER_SIZE) {
        /* Too short to be a blob; read what is there to say why. */
        uint8_t hb[VYRE_BLOB_HEADER_SIZE];
        size_t got = 0;
        int e = read_full(fd, hb, (size_t)c->file_size, &got);
        if (e != 0)
            return io_fail(c, e, "read", err);
        return decode_into(c, hb, got);
    }
    if (!c->keep)
        return c->file_size <= WHOLE_READ_MAX ? check_only_whole(c, fd, err)
                                              : check_only_large(c, fd, err);
    return c->file_size <= WHOLE_READ_MAX ? check_whole(c, fd, err) : check_large(c, fd, err);
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
    int fd = -1, shard_enoent = 0;
    c->via_shard = 0;
    if (c->shard_fd1 > 0) {
        /* A kept shard directory (see vyre__blob_shards): one component,
         * O_NOFOLLOW. Any failure is answered by the walk below, which
         * says what the name is. */
        fd = openat(c->shard_fd1 - 1, c->base, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
        c->via_shard = fd >= 0;
        shard_enoent = fd < 0 && errno == ENOENT;
    }
    if (fd < 0) {
        fd = c->dirfd < 0 ? open(c->path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK)
                          : vyre__open_beneath(c->dirfd, c->rel, O_RDONLY | O_NONBLOCK, 0);
        c->shard_stale = fd >= 0 && shard_enoent;
    }
    if (fd < 0) {
        int e = errno;
        if (c->dirfd >= 0 && (e == ELOOP || e == ENOTDIR || e == EXDEV)) {
            /* The file itself, or a directory on the way? Only the first
             * is this blob's problem; the second is a miss (verify reports
             * the directory). */
            const char *base;
            int pfd = vyre__blob_open_parent(c->dirfd, c->rel, &base);
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
        return vyre__fail(err, rc, vyre__blob_reject_hint(c->why), "blob '%s' rejected (%s): %s",
                          c->path, vyre_blob_reject_name(c->why), c->detail);
    }
    return rc;
}

int vyre__blob_check_file(const char *path, const vyre_key *expected, vyre_blob_header *h,
                          uint64_t *file_size, vyre_blob_reject *why, vyre_error *err)
{
    if (why)
        *why = VYRE_REJECT_NONE;
    if (!path)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre__blob_check_file: NULL path");
    vyre__blob_scratch s = {0};
    check c;
    memset(&c, 0, sizeof c);
    c.path = path;
    c.dirfd = -1;
    c.expected = expected;
    c.scratch = &s;
    int rc = check_path(&c, err);
    vyre__blob_scratch_release(&s);
    return check_finish(&c, rc, h, file_size, why, err);
}

int vyre__blob_check_in(int dirfd, const char *rel, const char *path, const vyre_key *expected,
                        vyre__blob_scratch *scratch, vyre__blob_checked *out, vyre_error *err)
{
    memset(out, 0, sizeof *out);
    check c;
    memset(&c, 0, sizeof c);
    c.path = path;
    c.dirfd = dirfd;
    c.rel = rel;
    c.expected = expected;
    c.scratch = scratch;
    int rc = check_path(&c, err);
    out->hard_link = c.hard_link;
    if (c.have_size)
        out->disk_size = c.disk_size;
    return check_finish(&c, rc, &out->h, &out->file_size, &out->why, err);
}

int vyre__blob_check_at(int rootfd, const char *rel, const char *path, const vyre_key *expected,
                        vyre_blob_header *h, uint64_t *file_size, vyre_blob_reject *why,
                        int *hard_link, vyre_error *err)
{
    if (why)
        *why = VYRE_REJECT_NONE;
    if (hard_link)
        *hard_link = 0;
    vyre__blob_scratch s = {0};
    check c;
    memset(&c, 0, sizeof c);
    c.path = path;
    c.dirfd = rootfd;
    c.rel = rel;
    c.expected = expected;
    c.scratch = &s;
    int rc = check_path(&c, err);
    vyre__blob_scratch_release(&s);
    if (hard_link)
        *hard_link = c.hard_link;
    return check_finish(&c, rc, h, file_size, why, err);
}

int vyre__blob_load(const char *root, const vyre_key *key, vyre_blob **out, vyre_blob_reject *why,
                    vyre_error *err)
{
    if (why)
        *why = VYRE_REJECT_NONE;
    if (out)
        *out = NULL;
    if (!root || !key || !out)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre__blob_load: NULL argument");
    int rootfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (rootfd < 0) {
        int e = errno;
        if (e == ENOENT || e == ENOTDIR)
            return vyre__fail(err, VYRE_ENOENT, NULL, "no cache directory '%s'", root);
        int code = vyre__errno_code(e);
        return vyre__fail(err, code, vyre__blob_errno_hint(code),
                          "cannot open cache directory '%s': %s", root, strerror(e));
    }
    int rc = vyre__blob_load_at(rootfd, root, key, out, why, err);
    close(rootfd);
    return rc;
}

/* What a load does with a file it rejected (c->why set, or none: a plain
 * miss or an I/O error, returned as is): a stale one is a miss left in
 * place, a hard link loses this name, anything else goes to quarantine/. */
static int load_rejected(int rootfd, const char *root, const char *path, const char *rel, check *c,
                         int rc, vyre_blob_reject *why, vyre_error *err)
{
    if (c->why == VYRE_REJECT_NONE)
        return rc; /* a plain miss, or an I/O error: nothing to quarantine */
    if (c->why == VYRE_REJECT_STALE) {
        /* Intact but of an older key format: a miss, never quarantined (a
         * store over the key replaces it; prune --stale removes it). */
        if (why)
            *why = c->why;
        return vyre__fail(err, VYRE_ENOENT, vyre__blob_reject_hint(c->why),
                          "blob '%s' is stale: %s", path, c->detail);
    }

    /* A bad file is a miss: move it aside so that the next store can put a
     * good one in its place, and say why. */
    vyre__blob_count_reject(c->why);
    if (why)
        *why = c->why;
    if (c->hard_link) {
        /* Only this name goes: the file's other names, wherever they are,
         * keep it. */
        if (vyre__blob_unlink_at(rootfd, rel) == 0)
            return vyre__fail(err, rc,
                              "nothing to do: it is treated as a cache miss and rebuilt; the "
                              "other names of the file are untouched",
                              "blob '%s' rejected (%s): %s; the link was removed", path,
                              vyre_blob_reject_name(c->why), c->detail);
        int e = errno;
        return vyre__remedy(err, VYRE_REMEDY_CACHE_REPAIR,
                            vyre__fail(err, rc,
                                       "it is treated as a cache miss; a repair removes "
                                       "the link",
                                       "blob '%s' rejected (%s): %s; not removed: %s", path,
                                       vyre_blob_reject_name(c->why), c->detail, strerror(e)));
    }
    char dest[BLOB_PATH_MAX];
    vyre_error qerr;
    vyre_error_clear(&qerr);
    const char *name;
    int srcfd = vyre__blob_open_parent(rootfd, rel, &name);
    int qrc = srcfd < 0 ? vyre__fail(&qerr, VYRE_EUNSAFE, NULL,
                                     "its directory is not a real directory of the cache")
                        : vyre__blob_quarantine_move(rootfd, root, srcfd, name, path, c->why, dest,
                                                     sizeof dest, &qerr);
    if (srcfd >= 0)
        close(srcfd);
    if (qrc == VYRE_OK)
        return vyre__fail(err, rc,
                          "nothing to do: it is treated as a cache miss and rebuilt; the "
                          "quarantined copy is kept for inspection",
                          "blob '%s' rejected (%s): %s; moved to '%s'", path,
                          vyre_blob_reject_name(c->why), c->detail, dest);
    return vyre__remedy(
        err, VYRE_REMEDY_CACHE_REPAIR,
        vyre__fail(err, rc,
                   "it is treated as a cache miss; make the cache writable, or delete the file",
                   "blob '%s' rejected (%s): %s; not quarantined: %s", path,
                   vyre_blob_reject_name(c->why), c->detail, qerr.message));
}

/* ---- kept shard directories (vyre__blob_shards) --------------------------- */

/* "blobs/ab" of rel ("blobs/ab/<hex>.vblob"). */
static void shard_rel(const char *rel, char out[9])
{
    memcpy(out, rel, 8);
    out[8] = '\0';
}

/* The kept directory of rel's shard, opened now if it was not yet; -1 when
 * it cannot be (no such shard yet, or not a real directory: the walk from
 * the root says what it is). */
static int shard_fd(vyre__blob_shards *s, int rootfd, const vyre_key *key, const char *rel)
{
    atomic_int *slot = &s->fd1[key->bytes[0]];
    int v = atomic_load_explicit(slot, memory_order_acquire);
    if (v > 0)
        return v - 1;
    /* A place among the kept ones first; none left: the walk from the root. */
    if (atomic_fetch_add_explicit(&s->kept, 1, memory_order_acq_rel) >=
        VYRE__BLOB_SHARDS_KEPT_MAX) {
        atomic_fetch_sub_explicit(&s->kept, 1, memory_order_acq_rel);
        return -1;
    }
    char dir[9];
    shard_rel(rel, dir);
    int fd = vyre__open_beneath(rootfd, dir, O_RDONLY | O_DIRECTORY, 0);
    int expect = 0;
    if (fd < 0 || !atomic_compare_exchange_strong_explicit(
                      slot, &expect, fd + 1, memory_order_acq_rel, memory_order_acquire)) {
        atomic_fetch_sub_explicit(&s->kept, 1, memory_order_acq_rel);
        if (fd < 0)
            return -1;
        close(fd); /* another thread kept one first */
        return expect - 1;
    }
    return fd;
}

/* The kept directory no longer holds what the shard's path names (it was
 * removed, and made anew): its descriptor number now names the shard
 * found from the root. dup3 swaps it in one step, so that a load using
 * the number meanwhile opens in the old directory or the new one, never
 * in a reused number's file. */
static void shard_refresh(vyre__blob_shards *s, int rootfd, const vyre_key *key, const char *rel)
{
    int v = atomic_load_explicit(&s->fd1[key->bytes[0]], memory_order_acquire);
    if (v <= 0)
        return;
    char dir[9];
    shard_rel(rel, dir);
    int fd = vyre__open_beneath(rootfd, dir, O_RDONLY | O_DIRECTORY, 0);
    if (fd < 0)
        return;
    (void)dup3(fd, v - 1, O_CLOEXEC);
    close(fd);
}

void vyre__blob_shards_release(vyre__blob_shards *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < VYRE_ARRAY_SIZE(s->fd1); i++) {
        int v = atomic_exchange_explicit(&s->fd1[i], 0, memory_order_acq_rel);
        if (v > 0)
            close(v - 1);
    }
    atomic_store_explicit(&s->kept, 0, memory_order_release);
}

int vyre__blob_load_at(int rootfd, const char *root, const vyre_key *key, vyre_blob **out,
                       vyre_blob_reject *why, vyre_error *err)
{
    return vyre__blob_load_shards(rootfd, NULL, root, key, out, why, err);
}

int vyre__blob_load_shards(int rootfd, vyre__blob_shards *shards, const char *root,
                           const vyre_key *key, vyre_blob **out, vyre_blob_reject *why,
                           vyre_error *err)
{
    if (why)
        *why = VYRE_REJECT_NONE;
    if (out)
        *out = NULL;
    if (rootfd < 0 || !root || !key || !out)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre__blob_load: NULL argument");
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
    c.shard_fd1 = shards ? shard_fd(shards, rootfd, key, rel) + 1 : 0;
    c.base = rel + 9;
    c.shard_stale = 0;
    c.expected = key;
    c.keep = 1;
    c.blob = NULL;
    c.have_header = 0;
    c.have_size = 0;
    c.hard_link = 0;
    rc = check_path(&c, err);
    if (c.shard_stale)
        shard_refresh(shards, rootfd, key, rel);
    if (rc != VYRE_OK && c.why != VYRE_REJECT_NONE && c.why != VYRE_REJECT_STALE && c.via_shard) {
        /* Rejected in a kept directory: look again from the root, so that
         * only the file at the blob's path is ever moved or unlinked. */
        c.shard_fd1 = 0;
        c.have_header = 0;
        c.have_size = 0;
        c.hard_link = 0;
        rc = check_path(&c, err);
        shard_refresh(shards, rootfd, key, rel);
    }
    if (rc == VYRE_OK) {
        *out = c.blob;
        return VYRE_OK;
    }
    return load_rejected(rootfd, root, path, rel, &c, rc, why, err);
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
                          "object '%s' rejected (%s): %s", origin, vyre_blob_reject_name(c.why),
                          c.detail);
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
