/*
 * blob_store.c - the durable store of a blob (vyre__blob_store), the paths
 * and names vyre gives its files (blobs, temp files, quarantined ones), and
 * the errno reports the other blob files share.
 *
 * A store either renames a complete, fsynced file into place or leaves
 * nothing behind (the temp file is unlinked on every error path).
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

static atomic_uint_fast64_t tmp_counter;

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
int vyre__blob_subdir_fail(int rootfd, const char *root, const char *sub, int e, vyre_error *err)
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
    return vyre__fail(err, code, vyre__blob_errno_hint(code), "cannot open '%s/%s': %s", root, sub,
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
        size_t n = strlen(vyre_blob_reject_name(r));
        if (strncmp(p, vyre_blob_reject_name(r), n) == 0 && p[n] == '.') {
            p += n + 1;
            break;
        }
    }
    if (r == VYRE_REJECT_COUNT)
        return 0;
    /* <secs>, or <secs>.<pid>-<n> (vyre__blob_quarantine_move's two forms). */
    const char *q = p;
    if (digits_then(&q, '\0'))
        return 1;
    return digits_then(&p, '.') && digits_then(&p, '-') && digits_then(&p, '\0');
}

int vyre__blob_tmp_name(const char *hex, const char *suffix, char *name, size_t size)
{
    unsigned long long ctr =
        (unsigned long long)atomic_fetch_add_explicit(&tmp_counter, 1, memory_order_relaxed);
    /* bounded: the first 16 hex digits of the key */
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
        return vyre__remedy(err, vyre__blob_errno_remedy(code),
                            vyre__fail(err, code, vyre__blob_errno_hint(code),
                                       "cannot create a temporary file in '%s/tmp': %s", root,
                                       strerror(e)));
    }
    return vyre__fail(err, VYRE_EEXIST, "remove stale files from the cache's tmp/ directory",
                      "cannot find an unused temporary file name in '%s/tmp'", root);
}

/* Opens the cache root given by path for the public entry points (the root
 * itself may be a symlink the user made; nothing below it is followed). */
int vyre__blob_open_root(const char *root, vyre_error *err)
{
    int fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0)
        return fd;
    int e = errno, code = vyre__errno_code(e);
    return vyre__fail(err, code, vyre__blob_errno_hint(code),
                      "cannot open cache directory '%s': %s", root, strerror(e));
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
        !vyre__blob_kernel_table_valid(w->kernels, w->kernels_size, w->n_kernels))
        return vyre__fail(err, VYRE_EINVAL,
                          "pass the names as vyre_cubin_kernels returns them (at most 64 KiB)",
                          "kernel table of %" PRIu32 " names in %" PRIu32 " bytes is malformed",
                          w->n_kernels, w->kernels_size);
    w->kernels_xxh64 = vyre__blob_kernels_sum(w->kernels, w->kernels_size);
    return VYRE_OK;
}

void vyre__blob_store_opts_init(vyre__blob_store_opts *opts)
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
    uint64_t *disk_bytes; /* out (may be NULL): the written file's blocks on disk */
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
    vyre__blob_payload_sum(len ? payload : "", len, w->payload_xxh128);
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
    /* Its blocks once on disk (delayed allocation done by the fsync). */
    struct stat st;
    if (!e && j->disk_bytes && fstat(fd, &st) == 0)
        *j->disk_bytes = vyre__disk_bytes(&st);
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
        return vyre__blob_subdir_fail(j->rootfd, j->root, j->shard, e, err);
    }
    int bfd = vyre__open_beneath(j->rootfd, "blobs", O_RDONLY | O_DIRECTORY, 0);
    if (bfd < 0) {
        e = errno;
        store_discard(j);
        return vyre__blob_subdir_fail(j->rootfd, j->root, "blobs", e, err);
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
        return vyre__blob_subdir_fail(j->rootfd, j->root, j->shard, e, err);
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
    return vyre__remedy(err, vyre__blob_errno_remedy(code),
                        vyre__fail(err, code, vyre__blob_errno_hint(code),
                                   "cannot store blob '%s' (%s): %s", j->final, what, strerror(e)));
}

/* The store, below an open root. Every step is relative to a directory
 * opened without following a symlink: a tmp/, blobs/ or shard that is a
 * link fails the store instead of writing through it. */
static int store_at(store_job *j, vyre_blob_header *h, const void *payload, size_t len,
                    const vyre__blob_store_opts *o, vyre_error *err)
{
    int rc = store_prepare(j, h, payload, len, err);
    if (rc)
        return rc;
    j->tmpfd = vyre__open_beneath(j->rootfd, "tmp", O_RDONLY | O_DIRECTORY, 0);
    if (j->tmpfd < 0)
        return vyre__blob_subdir_fail(j->rootfd, j->root, "tmp", errno, err);
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
            err, vyre__blob_errno_remedy(code),
            vyre__fail(err, code == VYRE_ENOENT ? VYRE_EIO : code, vyre__blob_errno_hint(code),
                       "blob '%s' written but its directory could not be synced: %s", j->final,
                       strerror(e)));
    }
    *h = j->w;
    return VYRE_OK;
}

int vyre__blob_store(const char *root, vyre_blob_header *h, const void *payload, size_t len,
                     const vyre__blob_store_opts *opts, vyre_error *err)
{
    return vyre__blob_store_sized(root, h, payload, len, opts, NULL, err);
}

int vyre__blob_store_sized(const char *root, vyre_blob_header *h, const void *payload, size_t len,
                           const vyre__blob_store_opts *opts, uint64_t *disk_bytes, vyre_error *err)
{
    vyre__blob_store_opts defaults;
    vyre__blob_store_opts_init(&defaults);
    const vyre__blob_store_opts *o = opts ? opts : &defaults;
    if (!root || !h || (!payload && len))
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre__blob_store: NULL argument");
    store_job j = {.rootfd = o->rootfd,
                   .root = root,
                   .umask = o->umask,
                   .tmpfd = -1,
                   .sfd = -1,
                   .disk_bytes = disk_bytes};
    if (j.rootfd < 0 && (j.rootfd = vyre__blob_open_root(root, err)) < 0)
        return j.rootfd;
    int rc = store_at(&j, h, payload, len, o, err);
    if (o->rootfd < 0)
        close(j.rootfd);
    return rc;
}
