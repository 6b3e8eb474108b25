/*
 * vyre/cache.h - the pipeline cache: get, put, stats, prune, verify, reindex.
 *
 * This header is part of libvyrecore's public API.
 *
 * A facade over key, blob and index. The blobs are the truth; the index
 * (index.sqlite3) is a rebuildable cache of their headers plus usage.
 * Layout under the root (see libcore/BLOB_FORMAT.md):
 *   blobs/<2 hex>/<64 hex>.vblob   tmp/   quarantine/   index.sqlite3   lock
 *   vyre-cache.tag (the marker: this directory is a vyre cache)
 *
 * Own only what is ours: a root carries the marker, written when vyre
 * creates (or adopts) it; a non-empty directory without one is refused, not
 * adopted. Every removal (verify's repair, prune, clear, the automatic
 * cleanup, quarantine expiry) touches only names vyre writes: shards
 * blobs/<2 hex>/, blobs <64 hex>.vblob in them, vyre's temp names in tmp/
 * and its quarantine names in quarantine/. Anything else found there is
 * reported by verify (VYRE_PROBLEM_STRAY, left in place) and never removed.
 *
 * Concurrency: any number of processes may get, put, prune and verify one
 * cache at once. Gets take no lock. Puts hold a shared flock on <root>/lock
 * while they store a blob and its row; prune, verify's cross-check and
 * repair, reindex and clear hold it exclusively for short batches, so the
 * index and the files never disagree for longer than one operation.
 *
 * Nothing outside the cache is touched: the root may itself be a symlink
 * the user made (it is followed once, when the handle is opened), but below
 * it nothing is followed. Every walk (get, put, prune, verify, reindex,
 * clear) goes from the root's descriptor without passing a symbolic link at
 * any component; a symlink, FIFO, socket, device or hard link where the
 * cache expects a directory or a blob is never opened through: verify
 * reports it (VYRE_PROBLEM_FOREIGN), and repair, reindex and clear remove
 * the entry itself, never what it points to.
 *
 * Thread-safety: one handle may be used from several threads.
 */
#ifndef VYRE_CACHE_H
#define VYRE_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "blob.h"
#include "config.h"
#include "error.h"
#include "export.h"
#include "key.h"
#include "remote.h"

#ifdef __cplusplus
extern "C" {
#endif

#define VYRE_CACHE_PATH_MAX      4096
#define VYRE_CACHE_DEBRIS_AGE_NS (INT64_C(3600) * 1000000000) /* tmp/ files older: debris */

typedef struct vyre_cache vyre_cache;

/* Open flags. */
enum {
    VYRE_CACHE_READONLY = 1u << 0,      /* never create or write; missing root is VYRE_ENOENT */
    VYRE_CACHE_NO_HIT_TRACK = 1u << 1,  /* gets do not record hits */
    VYRE_CACHE_NO_INDEX = 1u << 2,      /* do not open index.sqlite3 (gets/puts on files only) */
    VYRE_CACHE_MISSING_EMPTY = 1u << 3, /* with READONLY: a root that does not exist opens as
                                           an empty cache (stats, foreach, verify see nothing;
                                           nothing is created) instead of VYRE_ENOENT */
    VYRE_CACHE_NO_REMOTE = 1u << 4,     /* no remote stores (remote_storage / $VYRE_REMOTE_CACHE
                                           ignored) */
    VYRE_CACHE_ADOPT = 1u << 5,         /* a non-empty root without the marker is adopted (the
                                           marker written) when its contents look like a vyre
                                           cache: every entry of the root and of blobs/ has a
                                           name vyre writes; otherwise VYRE_EUNSAFE naming the
                                           first entry that is not. Not with READONLY. */
};

/* The marker file in a cache's root (see the top of this file). Its first
 * line is VYRE_CACHE_MARKER_SIGNATURE; then "layout 1", "key_format <n>"
 * (VYRE_KEY_VERSION of the vyre that wrote it) and "created <unix secs>". */
#define VYRE_CACHE_MARKER           "vyre-cache.tag"
#define VYRE_CACHE_MARKER_SIGNATURE "vyre pipeline cache"

/* Progress callback for long operations: done of total (total may be 0 when
 * unknown). Called from the calling thread. */
typedef void (*vyre_cache_progress_fn)(uint64_t done, uint64_t total, void *ctx);

/*
 * Resolves the default root: $VYRE_PTX_CACHE_DIR (empty is VYRE_EENV), else
 * $XDG_CACHE_HOME/vyre/ptx-cache, else $HOME/.cache/vyre/ptx-cache, else
 * VYRE_EENV (no /tmp fallback). Touches nothing on disk.
 */
VYRE_EXTERN int vyre_cache_default_root(char *buf, size_t size, vyre_error *err);

/* Open options (vyre_cache_open). Start from vyre_cache_open_opts_init,
 * which sets every field to its default (flags 0, umask not set, the
 * configuration loaded from the files and environment). */
typedef struct vyre_cache_open_opts {
    unsigned flags;
    /* -1: not set (the configuration's umask, if any). Otherwise the
     * permission bits to clear, as umask(2) takes them (e.g. 002 or 022).
     * Not set anywhere: what the cache creates is private (files 0600,
     * directories 0700), and the root must be the user's own, not writable
     * by group or others. Set: blobs, tmp files, index.sqlite3 (and so its
     * -wal and -shm, which SQLite creates with the database's mode), the
     * lock and the directories the cache creates get 0666 & ~umask and
     * 0777 & ~umask (with the setgid bit where the root has it), set
     * explicitly with fchmod: the process umask is neither read nor
     * changed. A umask that allows group writes (umask & 020 == 0) makes a
     * group cache acceptable: a root that is group-writable and setgid
     * (chmod 2775), whose group the user is in (the effective or a
     * supplementary group), not writable by others, may be owned by another
     * user; the index files of its other users (same group) are used as
     * they are. Outside -1..0777: VYRE_EINVAL. */
    int umask;
    const vyre_config *config; /* NULL: vyre_config_load(root) (files and environment) */
} vyre_cache_open_opts;

VYRE_EXTERN void vyre_cache_open_opts_init(vyre_cache_open_opts *opts);

/*
 * Opens the cache at root (NULL: the default root) with opts (NULL: the
 * defaults of vyre_cache_open_opts_init). Without VYRE_CACHE_READONLY,
 * missing directories are created 0700. A root owned by another user
 * (other than root) or writable by group/others is refused (VYRE_EUNSAFE,
 * hint: chmod/chown, and how to set up a group cache), but for a group
 * cache opened with a umask that allows group writes (opts->umask). A root
 * this process cannot write is opened read-only: gets work, puts fail with
 * VYRE_EROFS. A corrupt index is VYRE_ECORRUPT (hint: reindex) unless
 * VYRE_CACHE_NO_INDEX; an index (or its -wal, -shm, -journal) that is a
 * symlink, a directory, a special file or another user's file is
 * VYRE_EUNSAFE with a hint, and is never opened. root may be a symlink;
 * nothing below it is followed. *out is owned by the caller:
 * vyre_cache_close().
 *
 * The configuration (vyre/config.h) gives the size limit and automatic
 * cleanup (max_size, max_age, quarantine_max_age), read_only (the handle
 * cannot write: puts and prunes are VYRE_EROFS), umask and remote_storage
 * (the remote stores, unless VYRE_CACHE_NO_REMOTE). A bad configuration
 * file is VYRE_ECONFIG naming the file and line.
 */
VYRE_EXTERN int vyre_cache_open(const char *root, const vyre_cache_open_opts *opts,
                                vyre_cache **out, vyre_error *err);

/* The configuration in force for the handle. */
VYRE_EXTERN const vyre_config *vyre_cache_config(const vyre_cache *c);

/* 1 when the handle was opened with VYRE_CACHE_MISSING_EMPTY on a root that
 * does not exist. */
VYRE_EXTERN int vyre_cache_is_missing(const vyre_cache *c);

/* Flushes batched hit tracking and closes. NULL is a no-op. */
VYRE_EXTERN void vyre_cache_close(vyre_cache *c);

/* The root in use (owned by the handle). */
VYRE_EXTERN const char *vyre_cache_root(const vyre_cache *c);

/*
 * Looks key up. 0: *out is a validated blob (caller frees with
 * vyre_blob_free); the hit is recorded (batched). VYRE_ENOENT: a miss,
 * including a file that failed validation (then it was quarantined and *why,
 * when non-NULL, says why). Other codes are operational errors.
 */
VYRE_EXTERN int vyre_cache_get(vyre_cache *c, const vyre_key *key, vyre_blob **out,
                               vyre_blob_reject *why, vyre_error *err);

/*
 * Stores payload under h->key (BLOB_FORMAT.md says what is filled in)
 * and records its row. Read-only cache: VYRE_EROFS. Disk full: VYRE_ENOSPC
 * and the cache is unchanged.
 *
 * Automatic cleanup: when the put takes the cache over max_size, or when
 * an hour has passed since the last cleanup and max_age or
 * quarantine_max_age is set, the put cleans the cache (as prune would)
 * before it returns, unless another process is cleaning it already (a
 * non-blocking flock on <root>/cleanup.lock: held, the put skips it). A
 * failed cleanup does not fail the put. Gets never clean.
 */
VYRE_EXTERN int vyre_cache_put(vyre_cache *c, vyre_blob_header *h, const void *payload, size_t len,
                               vyre_error *err);

/*
 * Remote stores (vyre/remote.h). vyre_cache_open takes them from the
 * configuration in force, its remote_storage key (vyre.conf files,
 * $VYRE_REMOTE_CACHE, -o; a bad list is VYRE_ECONFIG naming where it was
 * set), unless VYRE_CACHE_NO_REMOTE. A program that has its list from
 * elsewhere sets remote_storage in the configuration it opens the cache
 * with (vyre_config_set, vyre_cache_open_opts.config).
 *
 * With remotes, vyre_cache_get asks them in order after a local miss and
 * returns a validated remote object (stored locally first when the cache
 * is writable), and vyre_cache_put writes the new blob back to every
 * writable remote. Remote failures are counted, never returned.
 */

/* Number of remotes in use. */
VYRE_EXTERN size_t vyre_cache_remote_count(const vyre_cache *c);

/* vyre_cache_remote_get's flags. */
enum {
    /* The counters over the cache's life: what every process using this
     * cache (writable, with an index) recorded for the same remote URL,
     * plus this handle's unrecorded part. Handles record their counters on
     * vyre_cache_close. Without it: this handle's counters alone. */
    VYRE_CACHE_REMOTE_TOTALS = 1u << 0,
};

/* Remote i's description and counters (either may be NULL; flags 0 or
 * VYRE_CACHE_REMOTE_TOTALS). VYRE_EINVAL when i is out of range; with
 * VYRE_CACHE_REMOTE_TOTALS, an error reading the index's counters. */
VYRE_EXTERN int vyre_cache_remote_get(vyre_cache *c, size_t i, unsigned flags,
                                      vyre_remote_info *info, vyre_remote_stats *st,
                                      vyre_error *err);

/* Probes remote i now (see vyre_remote_check). */
VYRE_EXTERN int vyre_cache_remote_check(vyre_cache *c, size_t i, vyre_remote_check *out,
                                        vyre_error *err);

/* Writes the local blob for key (validated first) to remote i, ignoring
 * back-off. VYRE_ENOENT when the cache has no valid blob for key;
 * VYRE_EROFS for a read-only remote; VYRE_EREMOTE on failure. */
VYRE_EXTERN int vyre_cache_remote_push(vyre_cache *c, size_t i, const vyre_key *key,
                                       vyre_error *err);

/* Fetches key from the remotes in order (ignoring back-off), validates it
 * and stores it locally. *from (may be NULL) is the remote that had it.
 * VYRE_ENOENT when none has it, a validation code (VYRE_ECORRUPT,
 * VYRE_EVERSION, VYRE_ETOOBIG) or VYRE_EREMOTE when the last remote asked
 * failed; the local put's error otherwise. */
VYRE_EXTERN int vyre_cache_remote_pull(vyre_cache *c, const vyre_key *key, size_t *from,
                                       vyre_error *err);
#define VYRE_CACHE_CLEANUP_RATIO       0.9 /* cleanup brings the cache down to this of max_size */
#define VYRE_CACHE_CLEANUP_INTERVAL_NS (INT64_C(3600) * 1000000000) /* age-only cleanups */
#define VYRE_CACHE_CLEANUP_LOCK        "cleanup.lock"

/* Resets the hit and miss counters (every blob's hits and the cache's
 * misses; last use, and so LRU order, is kept), as ccache -z. */
VYRE_EXTERN int vyre_cache_zero_stats(vyre_cache *c, vyre_error *err);

#define VYRE_CACHE_STATS_MAX_ARCH 16
#define VYRE_CACHE_AGE_BUCKETS    5 /* < 1h, < 1d, < 7d, < 30d, older (by creation) */

typedef struct vyre_cache_bucket {
    char name[VYRE_BLOB_TOOLCHAIN_MAX];
    uint64_t entries;
    uint64_t bytes;
} vyre_cache_bucket;

typedef struct vyre_cache_stats {
    uint64_t entries;
    uint64_t bytes;               /* on disk: st_blocks * 512 summed, as du counts */
    vyre_cache_bucket by_kind[4]; /* index = kind (0: unknown) */
    vyre_cache_bucket by_arch[VYRE_CACHE_STATS_MAX_ARCH];
    size_t n_arch; /* buckets used; extra architectures fold into the last */
    vyre_cache_bucket by_age[VYRE_CACHE_AGE_BUCKETS];
    uint64_t hits;             /* recorded in the index over the cache's life */
    uint64_t misses;           /* recorded in the index over the cache's life */
    uint64_t compile_ns_saved; /* sum over blobs of hits * compile time */
    uint64_t quarantined;      /* files in quarantine/ */
    uint64_t quarantine_bytes;
    uint64_t tmp_files;    /* files in tmp/ */
    uint64_t debris;       /* of which older than an hour */
    uint64_t session_hits; /* this handle */
    uint64_t session_misses;
    uint64_t session_rejects;
    uint64_t session_remote_hits; /* this handle: local misses a remote served */
    uint64_t stale;               /* entries of an older key format (never hit; prune --stale) */
    uint64_t stale_bytes;         /* their size on disk (included in bytes) */
    uint64_t max_size;            /* the configuration's limit on bytes on disk; 0: none */
    int64_t stats_zeroed_unix_ns; /* last vyre_cache_zero_stats; 0: never */
    uint64_t apparent_bytes;      /* the blobs' apparent sizes (st_size) summed */
} vyre_cache_stats;

/* Fills *st from the index and a scan of quarantine/ and tmp/. */
VYRE_EXTERN int vyre_cache_stats_get(vyre_cache *c, vyre_cache_stats *st, vyre_error *err);

#define VYRE_CACHE_ENTRY_KERNELS 256

/* One entry as listed (from the index). */
typedef struct vyre_cache_entry {
    vyre_key key;
    uint32_t kind;
    char arch[VYRE_BLOB_ARCH_MAX];
    char toolchain[VYRE_BLOB_TOOLCHAIN_MAX];
    uint64_t raw_size;
    uint64_t stored_size;
    uint64_t file_size; /* apparent size (st_size): header + payload + kernels */
    int64_t created_unix_ns;
    int64_t last_access_unix_ns; /* 0: never used since stored */
    uint64_t hits;
    uint64_t compile_ns;
    uint32_t key_version;                   /* older than VYRE_KEY_VERSION: stale */
    char source[VYRE_BLOB_SOURCE_MAX];      /* source basename, "" when unknown */
    uint32_t n_kernels;                     /* kernels the module defines, 0: unknown */
    char kernels[VYRE_CACHE_ENTRY_KERNELS]; /* their names joined by ',' (cut: "...") */
    uint64_t disk_size; /* bytes on disk (st_blocks * 512), what limits and stats count */
} vyre_cache_entry;

/* Calls fn for every entry, least recently used first; fn returns non-zero
 * to stop (returned). */
typedef int (*vyre_cache_entry_fn)(const vyre_cache_entry *e, void *ctx);
VYRE_EXTERN int vyre_cache_foreach(vyre_cache *c, vyre_cache_entry_fn fn, void *ctx,
                                   vyre_error *err);

/* Finds the one entry whose hex key starts with prefix (>= 4 hex digits).
 * VYRE_ENOENT when none; VYRE_EAMBIGUOUS when several: err's message lists
 * up to 8 candidates. */
VYRE_EXTERN int vyre_cache_find_prefix(vyre_cache *c, const char *prefix, vyre_cache_entry *out,
                                       vyre_error *err);

/* Validates key's blob file fully (header, checksums, sizes, key), but
 * reaches it from the cache's root descriptor without following a symlink
 * on the way (blobs/, the shard, the blob itself): a link there is
 * VYRE_EUNSAFE, its target never read. Fills *h when the header decodes;
 * path (may be NULL) receives the blob's full path for messages. 0,
 * VYRE_ENOENT, VYRE_ECORRUPT or VYRE_EVERSION with *why. */
VYRE_EXTERN int vyre_cache_check_blob(vyre_cache *c, const vyre_key *key, vyre_blob_header *h,
                                      uint64_t *file_size, vyre_blob_reject *why, char *path,
                                      size_t path_size, vyre_error *err);

/* The kernel-name table of the blob whose header h came from
 * vyre_cache_check_blob (valid): *names is malloc'ed, h->kernels_size
 * bytes of NUL-terminated names, NULL when the blob has none. Reached
 * without following a symlink; checked against the header's checksum. */
VYRE_EXTERN int vyre_cache_blob_kernels(vyre_cache *c, const vyre_blob_header *h, char **names,
                                        vyre_error *err);

typedef struct vyre_cache_prune_opts {
    uint64_t max_bytes;  /* keep the cache at or under this size; UINT64_MAX: no limit */
    int64_t max_age_ns;  /* remove entries unused for longer; 0: no limit */
    const char *arch;    /* remove every entry of this architecture; NULL: none */
    int stale;           /* remove entries of an older key format (VYRE_KEY_VERSION) */
    int stale_toolchain; /* remove entries built by a toolchain not kept: */
    const char *const *keep_toolchains; /* identities to keep, required with */
    size_t n_keep_toolchains;           /* stale_toolchain (vyre_compile_toolchains) */
    int dry_run;                        /* report what would go, remove nothing */
    vyre_cache_progress_fn progress;
    void *progress_ctx;
    int64_t quarantine_max_age_ns; /* also remove quarantined files older; 0: none */
    int all;                       /* remove every blob (--max-age 0s) */
} vyre_cache_prune_opts;

/* Initialises opts to "remove nothing". */
VYRE_EXTERN void vyre_cache_prune_opts_init(vyre_cache_prune_opts *opts);

typedef struct vyre_cache_prune_result {
    uint64_t examined;
    uint64_t removed;
    uint64_t removed_bytes;
    uint64_t kept;
    uint64_t kept_bytes;
    int target_reached;          /* 0 when max_bytes could not be reached */
    uint64_t quarantine_removed; /* quarantined files older than quarantine_max_age_ns */
    uint64_t quarantine_removed_bytes;
} vyre_cache_prune_result;

/* Called for each entry once it is removed (or that would be, in a dry
 * run): a prune that fails reports none of the batch it could not remove. */
typedef void (*vyre_cache_prune_fn)(const vyre_cache_entry *e, const char *reason, void *ctx);

/* Prunes least recently used first. */
VYRE_EXTERN int vyre_cache_prune(vyre_cache *c, const vyre_cache_prune_opts *opts,
                                 vyre_cache_prune_result *res, vyre_cache_prune_fn fn, void *ctx,
                                 vyre_error *err);

typedef enum vyre_cache_problem_kind {
    VYRE_PROBLEM_BAD_BLOB = 1,     /* header/checksum/etc. failed (reject says why) */
    VYRE_PROBLEM_ROW_WITHOUT_FILE, /* index row whose blob is gone */
    VYRE_PROBLEM_FILE_WITHOUT_ROW, /* valid blob missing from the index */
    VYRE_PROBLEM_ROW_MISMATCH,     /* row disagrees with the blob header */
    VYRE_PROBLEM_DEBRIS,           /* tmp/ file older than an hour */
    VYRE_PROBLEM_STRAY,            /* unexpected file in blobs/ */
    VYRE_PROBLEM_FOREIGN,          /* symlink, FIFO, socket, device or hard link where a
                                      directory or blob belongs (detail says which) */
} vyre_cache_problem_kind;

typedef struct vyre_cache_verify_problem {
    vyre_cache_problem_kind kind;
    vyre_blob_reject reject; /* for BAD_BLOB */
    char path[VYRE_CACHE_PATH_MAX];
    int repaired;       /* 1 when repair fixed it */
    const char *action; /* what repair did ("quarantined", "removed", ...) or NULL */
    const char *detail; /* for FOREIGN: "symlink", "FIFO", "socket", "device", "hard link",
                           "regular file" (static storage) */
} vyre_cache_verify_problem;

typedef struct vyre_cache_verify_result {
    uint64_t blobs_checked;
    uint64_t bytes_checked;
    uint64_t bad_blobs;
    uint64_t rows_without_file;
    uint64_t files_without_row;
    uint64_t row_mismatches;
    uint64_t debris;
    uint64_t stray;
    uint64_t quarantined;   /* files already in quarantine/ (kept for inspection, not a problem) */
    uint64_t tmp_in_flight; /* tmp/ files younger than an hour (not a problem) */
    uint64_t problems;      /* sum of the problem counters */
    uint64_t repaired;
    uint64_t foreign; /* symlinks, special files, hard links in the cache's places */
    uint64_t stale;   /* intact blobs of an older key format (not a problem: never hit,
                         never quarantined; prune --stale removes them) */
} vyre_cache_verify_result;

typedef void (*vyre_cache_problem_fn)(const vyre_cache_verify_problem *p, void *ctx);

/* Checks every blob (header, checksums, name), index rows against files,
 * debris in tmp/, quarantined files, and that blobs/, tmp/, quarantine/,
 * the shards and the blobs are real directories and files. With repair:
 * bad blobs are quarantined, rows without files deleted, files without rows
 * and mismatched rows re-indexed, debris removed, foreign entries (links,
 * special files) unlinked themselves (their targets are never touched) and
 * missing directories recreated. */
VYRE_EXTERN int vyre_cache_verify(vyre_cache *c, int repair, vyre_cache_verify_result *res,
                                  vyre_cache_problem_fn fn, void *ctx,
                                  vyre_cache_progress_fn progress, void *progress_ctx,
                                  vyre_error *err);

typedef struct vyre_cache_reindex_result {
    uint64_t scanned;
    uint64_t indexed;
    uint64_t bytes;
    uint64_t quarantined;
    uint64_t rows_before;
    uint64_t removed; /* links and special files under blobs/ unlinked (never followed) */
    /* "" or the path a foreign index.sqlite3 (another program's SQLite
     * file, another user's file, or one that is not a database) was moved
     * to, as index.sqlite3.foreign-<unix secs>: reindex never deletes it. */
    char index_kept[VYRE_CACHE_PATH_MAX];
} vyre_cache_reindex_result;

/* Rebuilds the index from the blob headers alone (a corrupt or missing
 * index file is replaced, and so is one that is a symlink, special file or
 * another user's: the entry is unlinked, never followed; a directory there
 * is VYRE_EUNSAFE). Usage columns of surviving rows are kept when the old
 * index is readable. */
VYRE_EXTERN int vyre_cache_reindex(vyre_cache *c, vyre_cache_reindex_result *res,
                                   vyre_cache_progress_fn progress, void *progress_ctx,
                                   vyre_error *err);

typedef struct vyre_cache_clear_result {
    uint64_t removed; /* blobs removed */
    uint64_t removed_bytes;
    uint64_t left; /* entries under names vyre does not write, left in place */
} vyre_cache_clear_result;

/* Removes every blob and the index rows (quarantine/ and tmp/ debris too).
 * Counts the blobs removed (regular files under a blob's name) into *res
 * (res may be NULL). Links and special files under vyre's names are
 * unlinked themselves; nothing they point to is touched. Entries under
 * other names stay, and are counted in res->left. Crash-consistent: the
 * blobs are moved into tmp/ before the rows go; an index that cannot be
 * written fails the call with every blob back in place. */
VYRE_EXTERN int vyre_cache_clear(vyre_cache *c, vyre_cache_clear_result *res, vyre_error *err);

#ifdef __cplusplus
}
#endif

#endif /* VYRE_CACHE_H */
