/*
 * blob_internal.h - the blob module's entry points for the cache facade
 * (internal): load, check, quarantine and unlink relative to the cache
 * root's open directory (the store takes it in vyre__blob_store_opts).
 *
 * Every function here takes the root as an open directory (rootfd) and
 * reaches files below it without following a symbolic link at any
 * component (vyre__open_beneath): a link where blobs/, a shard, tmp/ or
 * quarantine/ should be fails the call; it is never followed. `root` is the
 * root's path, used in messages only.
 */
#ifndef VYRE_BLOB_INTERNAL_H
#define VYRE_BLOB_INTERNAL_H

#include <stdatomic.h>

#include "vyre/blob.h"

/* Moved from the installed blob.h: no program outside libcore calls them. */

/*
 * Loads and validates the blob for key. Returns 0 and a new blob in *out,
 * VYRE_ENOENT on a plain miss (no file), or VYRE_ECORRUPT / VYRE_EVERSION
 * when the file was rejected: then it has been moved to quarantine/ (when the
 * cache is writable), *why says why, and the caller treats it as a miss.
 */
int vyre__blob_load(const char *root, const vyre_key *key, vyre_blob **out, vyre_blob_reject *why,
                    vyre_error *err);

/* Validates the file at path fully (as load, but keeps no payload and moves
 * nothing). Fills *h when the header decodes. 0, VYRE_ENOENT, VYRE_ECORRUPT
 * or VYRE_EVERSION with *why. `expected` may be NULL (no name check). */
int vyre__blob_check_file(const char *path, const vyre_key *expected, vyre_blob_header *h,
                          uint64_t *file_size, vyre_blob_reject *why, vyre_error *err);

/* The payload checksum as stored in the header: XXH3-128 of len bytes of
 * payload, canonical (big-endian) bytes. payload may be NULL when len is 0.
 * Thread-safe. */
void vyre__blob_payload_sum(const void *payload, size_t len, uint8_t out[16]);

/* Parses and validates a header from `len` bytes (any content, any length:
 * this is the fuzzing surface). A stale key version decodes (see
 * VYRE_BLOB_KEY_STALE); the caller tells it by key_version. On failure returns VYRE_ECORRUPT (or
 * VYRE_EVERSION) and sets *why (may be NULL). Never reads beyond len. */
int vyre__blob_header_decode(const uint8_t *buf, size_t len, vyre_blob_header *out,
                             vyre_blob_reject *why, vyre_error *err);

/* Called with the final header once the temp file is complete and fsynced,
 * just before it is renamed into place. A non-zero return aborts the store
 * (the temp file is removed) and is returned. */
typedef int (*vyre__blob_before_rename_fn)(const vyre_blob_header *h, void *ctx, vyre_error *err);

/* How vyre__blob_store writes; vyre__blob_store_opts_init sets the defaults. */
typedef struct vyre__blob_store_opts {
    /* The cache root already opened (O_DIRECTORY) by the caller, who keeps
     * it; -1 (default): the store opens root itself. Nothing below it is
     * followed when it is a symlink. */
    int rootfd;
    /* Applied, by fchmod, to what the store creates: the blob gets
     * 0666 & ~umask and a new shard directory 0777 & ~umask (the process
     * umask is not used). -1 (default): not set, private (0600/0700). */
    int umask;
    /* NULL (default): none. */
    vyre__blob_before_rename_fn before_rename;
    void *ctx; /* passed to before_rename */
} vyre__blob_store_opts;

/* Sets the defaults: rootfd -1, umask -1, no hook. NULL is a no-op. */
void vyre__blob_store_opts_init(vyre__blob_store_opts *opts);

/*
 * Stores payload under h->key in the cache at root (which must already have
 * tmp/ and blobs/). Fills format_version, key_version, stored_size, raw_size
 * (when 0), created_unix_ns (when 0) and the payload checksum; the rest comes
 * from *h. On success *h holds what was written. opts may be NULL (the
 * defaults). Errors: VYRE_ENOSPC (disk full or RLIMIT_FSIZE), VYRE_EROFS /
 * VYRE_EPERM (read-only cache), VYRE_EIO; a tmp/, blobs/ or shard that is not
 * a real directory is VYRE_EUNSAFE (remedy: verify --repair); on any error
 * the temp file is removed and the cache is unchanged.
 */
int vyre__blob_store(const char *root, vyre_blob_header *h, const void *payload, size_t len,
                     const vyre__blob_store_opts *opts, vyre_error *err);

/* Moves path into <root>/quarantine/ as "<name>.<reason>.<unix seconds>".
 * Also counts the reason in a per-process tally. */
int vyre__blob_quarantine(const char *root, const char *path, vyre_blob_reject why,
                          vyre_error *err);

/* Per-process count of files rejected, by reason (VYRE_REJECT_COUNT
 * entries). Thread-safe snapshot. */
void vyre__blob_reject_counts(uint64_t counts[VYRE_REJECT_COUNT]);

/* vyre__blob_load below rootfd. A hard-linked blob is rejected and its name
 * in the cache unlinked (never written through); other rejects are
 * quarantined as vyre__blob_load does. A shard that is a symlink is a miss. */
int vyre__blob_load_at(int rootfd, const char *root, const vyre_key *key, vyre_blob **out,
                       vyre_blob_reject *why, vyre_error *err);

/*
 * The shard directories (blobs/<2 hex>/) a cache's hits open their files
 * in, each opened once (below the root, following no symlink at any
 * component) and then kept: a hit opens its file with one openat(2) of
 * the basename, O_NOFOLLOW, instead of walking root -> blobs -> shard
 * under openat2's RESOLVE_NO_SYMLINKS | RESOLVE_BENEATH (about 120 ns a
 * hit, a third of a 4 KiB hit's cost over a bare read). At most one
 * descriptor per shard used, and at most VYRE__BLOB_SHARDS_KEPT_MAX in all:
 * a library must not take hundreds of its host program's descriptors (a
 * program on select(2) breaks past 1024); a hit in a shard beyond that
 * walks from the root as before. Zeroed memory is an empty table;
 * thread-safe; vyre__blob_shards_release closes them.
 */
#define VYRE__BLOB_SHARDS_KEPT_MAX 32
typedef struct vyre__blob_shards {
    atomic_int fd1[256]; /* the shard's descriptor + 1; 0: not opened (yet) */
    atomic_int kept;     /* descriptors kept (or being opened to keep) */
} vyre__blob_shards;

/* Closes the table's descriptors and empties it. No load may be running
 * on it. */
void vyre__blob_shards_release(vyre__blob_shards *s);

/* vyre__blob_load_at, opening the file through shards (may be NULL: the
 * walk from rootfd every time). The answer is the same as
 * vyre__blob_load_at's: a file not found in a kept shard directory is
 * looked up from rootfd again (the directory may have been removed and
 * made anew since it was opened; then it is opened anew), and a file
 * rejected there is checked again from rootfd before anything is
 * quarantined or unlinked, so that only the file at the blob's path in the
 * cache is ever moved. */
int vyre__blob_load_shards(int rootfd, vyre__blob_shards *shards, const char *root,
                           const vyre_key *key, vyre_blob **out, vyre_blob_reject *why,
                           vyre_error *err);

/* vyre__blob_check_file for rel ("blobs/ab/<hex>.vblob") below rootfd; path
 * names it in messages. *hard_link (may be NULL) is set when the reject is
 * for a file with more than one name. */
int vyre__blob_check_at(int rootfd, const char *rel, const char *path, const vyre_key *expected,
                        vyre_blob_header *h, uint64_t *file_size, vyre_blob_reject *why,
                        int *hard_link, vyre_error *err);

/* A buffer that the checks of many blobs (verify, reindex) read each file
 * into, reused from file to file instead of one allocation per file.
 * Zero-initialise it ({0}); vyre__blob_scratch_release frees what it holds.
 * One per thread: a check writes into it. */
typedef struct vyre__blob_scratch {
    uint8_t *buf;
    size_t cap;
} vyre__blob_scratch;

/* Frees s's buffer (s may be NULL); s can be used again. */
void vyre__blob_scratch_release(vyre__blob_scratch *s);

/* What vyre__blob_check_in found. */
typedef struct vyre__blob_checked {
    vyre_blob_header h;   /* the header, when it decoded */
    uint64_t file_size;   /* st_size, when the file was opened */
    uint64_t disk_size;   /* st_blocks * 512, as file_size */
    vyre_blob_reject why; /* the reject, or VYRE_REJECT_NONE */
    int hard_link;        /* rejected for having another name elsewhere */
} vyre__blob_checked;

/* vyre__blob_check_at for rel below dirfd (a root's "blobs/ab/<hex>.vblob",
 * or a shard's "<hex>.vblob"; nothing on the way is followed), reading the
 * file into *scratch (the caller's, reused: see vyre__blob_scratch). *out
 * is always filled (zeros where nothing was learnt). The same checks and
 * results as vyre__blob_check_at. */
int vyre__blob_check_in(int dirfd, const char *rel, const char *path, const vyre_key *expected,
                        vyre__blob_scratch *scratch, vyre__blob_checked *out, vyre_error *err);

/* vyre__blob_store that also sets *disk_bytes (may be NULL) to the written
 * file's bytes on disk (st_blocks * 512, after its fsync) before it calls
 * opts->before_rename: the cache records them in the blob's index row. */
int vyre__blob_store_sized(const char *root, vyre_blob_header *h, const void *payload, size_t len,
                           const vyre__blob_store_opts *opts, uint64_t *disk_bytes,
                           vyre_error *err);

/* vyre__blob_quarantine for rel below rootfd: the entry itself moves. */
int vyre__blob_quarantine_at(int rootfd, const char *root, const char *rel, vyre_blob_reject why,
                             vyre_error *err);

/* unlinkat() of rel below rootfd, its directory reached without following
 * anything. 0, or -1 with errno. */
int vyre__blob_unlink_at(int rootfd, const char *rel);

/* Reads the kernel-name table of the blob whose (valid) header is h,
 * checked against the header's checksum: *names is malloc'ed (NULL when
 * the blob has none). For the index, which keeps the names of each blob. */
int vyre__blob_kernels_at(int rootfd, const char *root, const vyre_blob_header *h, char **names,
                          vyre_error *err);
/* Validates len bytes that claim to be the whole blob file for expected
 * (from a remote store), with every check vyre__blob_load makes: header,
 * versions, header checksum, fields, exact size, key, payload checksum.
 * 0 and a new blob in *out (caller frees with vyre_blob_free), or
 * VYRE_ECORRUPT / VYRE_EVERSION with *why; origin names the object in the
 * message. Counts nothing and moves nothing. */
int vyre__blob_from_memory(const void *buf, size_t len, const char *origin,
                           const vyre_key *expected, vyre_blob **out, vyre_blob_reject *why,
                           vyre_error *err);

/*
 * vyre's own names. A removal anywhere in the cache touches only these;
 * anything else found there is someone's file, reported and left.
 *   blob:        <64 lowercase hex>.vblob (in blobs/<its first 2 hex>/)
 *   temp:        <16 hex of the key>.<pid>.<n>.<16 hex>.tmp, a store in
 *                flight, or the same ending in .rm, a removal's victim
 *                (moved into tmp/ before its index row goes)
 *   quarantine:  <blob name>.<reject name>.<secs>[.<pid>-<n>]
 */
#define VYRE__TMP_SUFFIX    ".tmp"
#define VYRE__DOOMED_SUFFIX ".rm"
int vyre__blob_is_blob_name(const char *name);
int vyre__blob_is_tmp_name(const char *name); /* .tmp or .rm */
int vyre__blob_is_doomed_name(const char *name);
int vyre__blob_is_quarantine_name(const char *name);

/* A new unique temp name for the key whose hex is hex, ending in suffix
 * (VYRE__TMP_SUFFIX or VYRE__DOOMED_SUFFIX). 0 or VYRE_ETOOBIG. */
int vyre__blob_tmp_name(const char *hex, const char *suffix, char *name, size_t size);

/* ---- shared between the blob files (each comment at its definition) ---- */

/* Longest path the blob module builds. */
#define BLOB_PATH_MAX 4096

/* blob_header.c */
void vyre__blob_count_reject(vyre_blob_reject why);
vyre_blob_reject vyre__blob_decode(const uint8_t *buf, size_t len, vyre_blob_header *out,
                                   char *detail, size_t dsize);
int vyre__blob_reject_code(vyre_blob_reject why);
const char *vyre__blob_reject_hint(vyre_blob_reject why);

/* blob_store.c */
int vyre__blob_root_path(char *buf, size_t size, const char *root, const char *sub,
                         vyre_error *err);
void vyre__blob_dir_of(const char *path, char *buf, size_t size);
const char *vyre__blob_errno_hint(int code);
vyre_remedy vyre__blob_errno_remedy(int code);
int vyre__blob_subdir_fail(int rootfd, const char *root, const char *sub, int e, vyre_error *err);
int vyre__blob_open_root(const char *root, vyre_error *err);
int vyre__blob_kernel_table_valid(const char *t, size_t size, uint32_t n);
uint64_t vyre__blob_kernels_sum(const void *t, size_t size);

/* blob_load.c */
int vyre__blob_open_parent(int dirfd, const char *rel, const char **base);

/* blob_quarantine.c */
int vyre__blob_quarantine_move(int rootfd, const char *root, int srcfd, const char *name,
                               const char *path, vyre_blob_reject why, char *dest, size_t dsize,
                               vyre_error *err);

/* 1 when name is in the NUL-separated list (a blob's kernel table) names[0..names_len). */
int vyre__kernel_list_has(const char *names, size_t names_len, const char *name);

#endif /* VYRE_BLOB_INTERNAL_H */
