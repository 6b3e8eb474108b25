/*
 * cache_internal.h - what the files of the cache facade share (internal;
 * not exported from the shared library, which hides every vyre__ symbol):
 * the handle, the lists the walks fill, the removal protocol's types, and
 * the functions one operation's file borrows from another's. Each
 * function's comment is at its definition.
 *
 * Also the test-only step hook: the kill-at-every-step tests
 * (tests/unit/test_cache_reliability.c) need to stop a removal at each
 * point where the files or the index change, to show that a process killed
 * there leaves no index row without its file. Nothing else sets the hook;
 * unset, it costs one load per step.
 */
#ifndef VYRE_CACHE_INTERNAL_H
#define VYRE_CACHE_INTERNAL_H

#include <dirent.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/types.h>

#include "cache/blob_internal.h"
#include "cache/index.h"
#include "vyre/cache.h"
#include "cache/config_internal.h"
#include "vyre/remote.h"

#define LOCK_NAME "lock"

/* "blobs/ab/<64 hex>.vblob" and its NUL. */
#define BLOB_REL_MAX (6 + 3 + VYRE_KEY_HEX_LEN + 8)

struct vyre_cache {
    char root[VYRE_CACHE_PATH_MAX];
    int rootfd; /* the root, opened once: every walk below starts here */
    char index_path[VYRE_CACHE_PATH_MAX];
    unsigned flags;
    int readonly;
    int group_cache; /* the root is a group cache accepted under that umask */
    gid_t gid;       /* the root's group */
    vyre__index *idx;
    vyre_remote_list *remotes; /* NULL: none */
    atomic_uint_fast64_t hits, misses, rejects, remote_hits;
    vyre_config config;  /* the configuration in force (vyre/config.h) */
    int umask;           /* -1: not set; else applied to what the cache creates */
    int config_readonly; /* read_only = true in the configuration */
    int missing;         /* VYRE_CACHE_MISSING_EMPTY on a root that does not exist */

    /* The hits' kept shard directories (blob_internal.h). */
    vyre__blob_shards shards;
};

typedef struct file_ent {
    char name[80]; /* "<64 hex>.vblob" or a tmp/quarantine name (may be cut) */
    char dir[3];
    vyre_key key;
    int valid_name;
    int foreign; /* a symlink, FIFO, socket or device: never opened */
    mode_t mode; /* its file type (S_IFMT bits), when known */
    uint64_t size;
    int64_t mtime_ns;
} file_ent;

typedef struct file_list {
    file_ent *v;
    size_t n, cap;
} file_list;

typedef struct row_list {
    vyre__index_row *v;
    size_t n, cap;
} row_list;

/*
 * Removals are crash-consistent: a process killed at any instant, or an
 * index that will not take the deletion (locked past the busy timeout,
 * read-only), leaves no index row without its blob. Two orders keep it:
 *
 * - clear and verify --repair: each victim is first renamed into tmp/
 *   under a removal's temp name (<16 hex of the key>...rm), then the rows
 *   go in one transaction, then the files are unlinked. Killed before the
 *   commit, a row's file is in tmp/: that removal's debris, which verify
 *   counts with the row (as it does a killed put's) and a repair removes,
 *   row first. A failed commit renames every victim back.
 * - prune (and the cleanup after a put): the rows go in one transaction,
 *   then the blobs are unlinked where they lie (vyre__cache_unlink_blob),
 *   all under the exclusive lock. Killed in between, a blob is left
 *   without its row: valid, served by a get, indexed again by verify
 *   --repair or reindex. A failed commit has touched no file.
 */
typedef struct doomed {
    uint8_t shard;   /* the key's first byte: blobs/<2 hex>/ */
    uint8_t moved;   /* renamed into tmp/ */
    uint8_t regular; /* a regular file (counted by clear) */
    uint64_t size;
    char name[VYRE_KEY_HEX_LEN + sizeof VYRE_BLOB_EXT];
    char tmpname[64];
} doomed;

/* The shard directories of a removal, opened once each, O_NOFOLLOW from
 * the root's descriptor: a shard that is a symlink holds nothing of ours. */
typedef struct shard_fds {
    int bfd, berr;
    int fd[256], err[256];
} shard_fds;

/* ---- cache_lock.c: the lock and entry paths (the bottom layer) -------- */
int vyre__cache_sub_path(const vyre_cache *c, const char *name, char *out, size_t size);
int vyre__cache_lock(const vyre_cache *c, int op, vyre_error *err);
void vyre__cache_unlock(int fd);
int vyre__cache_readonly_error(const vyre_cache *c, vyre_error *err);

/* ---- cache_row.c ------------------------------------------------------- */
void vyre__cache_kernels_text(char *out, size_t size, const char *names, size_t names_len);
void vyre__cache_row_from_header(vyre__index_row *row, const vyre_blob_header *h,
                                 uint64_t file_size, uint64_t disk_size);

/* ---- cache_remove.c: the removal protocol and the layout check --------- */
void vyre__cache_step(const char *what);
void vyre__cache_shards_open(const vyre_cache *c, shard_fds *s);
void vyre__cache_shards_close(shard_fds *s);
int vyre__cache_doom_one(shard_fds *s, int tmpfd, doomed *v);
void vyre__cache_undoom(shard_fds *s, int tmpfd, doomed *v, size_t n);
void vyre__cache_doomed_unlink(int tmpfd, doomed *v, size_t n);
int vyre__cache_unlink_blob(shard_fds *s, const vyre_key *key);
int vyre__cache_removal_tmp(vyre_cache *c, vyre_error *err);
void vyre__cache_nothing_removed(vyre_error *err);
/* Counts problem p in res (problems, repaired) and hands it to fn; res
 * NULL: nothing (a repair with no report). */
void vyre__cache_report(vyre_cache_problem_fn fn, void *ctx, vyre_cache_verify_problem *p,
                        vyre_cache_verify_result *res);
void vyre__cache_check_layout(vyre_cache *c, int repair, vyre_cache_verify_result *res,
                              vyre_cache_problem_fn fn, void *ctx);

/* ---- cache_scan.c ------------------------------------------------------ */
int vyre__cache_is_hex2(const char *s);
DIR *vyre__cache_opendir(int dfd, const char *name);
/* blobs/ opened for listing: *top NULL (and 0) when it is missing or not a
 * real directory (vyre__cache_check_layout reports that). */
int vyre__cache_blobs_open(const vyre_cache *c, DIR **top, vyre_error *err);
/* The entry d that readdir(top) gave: either *dd, the shard it is (opened,
 * never through a link: the caller lists it with vyre__cache_blobs_shard
 * and closes it), or (*dd NULL) the entry appended to out as listed (a name
 * vyre does not write there, a link, a file), or nothing (gone meanwhile).
 * 0 or VYRE_ENOMEM. Entries of one top may be taken on several threads. */
int vyre__cache_blobs_entry(DIR *top, const struct dirent *d, file_list *out, DIR **dd);
/* Appends the entries of the shard dd (blobs/<shard>) to out; with_stat
 * fills their size and mtime. 0 or VYRE_ENOMEM. */
int vyre__cache_blobs_shard(DIR *dd, const char *shard, file_list *out, int with_stat);
void vyre__cache_ent_path(const vyre_cache *c, const file_ent *e, char *out, size_t size);
void vyre__cache_ent_rel(const file_ent *e, char *out, size_t size);
int vyre__cache_blob_present(const vyre_cache *c, const vyre_key *key);
int vyre__cache_no_index(const vyre_cache *c, vyre_error *err);
int vyre__cache_all_rows(vyre_cache *c, row_list *l, vyre_error *err);
void vyre__cache_entry_from_row(vyre_cache_entry *e, const vyre__index_row *r);

/* ---- cache_open.c ------------------------------------------------------ */
int vyre__cache_index_check(const vyre_cache *c, int *removable, vyre_error *err);
void vyre__cache_index_set_aside(const vyre_cache *c, int all, char *kept, size_t kept_size);
int vyre__cache_index_open(vyre_cache *c, int mode, vyre__index **idx, vyre_error *err);

/* ---- cache_io.c -------------------------------------------------------- */
int vyre__cache_put_local(vyre_cache *c, vyre_blob_header *h, const void *payload, size_t len,
                          vyre_error *err);

/* ---- cache_remote.c ---------------------------------------------------- */
void vyre__cache_persist_remote_counters(vyre_cache *c);

/* ---- cache_prune.c ----------------------------------------------------- */
void vyre__cache_maybe_cleanup(vyre_cache *c);

/* ---- the test-only step hook ------------------------------------------ */

/* Called by prune, clear and cleanup just before each step that changes
 * the cache: step is "rename" (a victim moved into tmp/: clear), "commit"
 * (the index rows deleted: prune's under the exclusive lock), "unlink" (a
 * file removed); and by prune before it takes the exclusive lock for a
 * batch ("lock": after its scan, where another process may put or hit
 * what it is about to remove). The hook may kill the process.
 * Process-wide; NULL removes it. Not thread-safe: set it before the cache
 * is used. */
typedef void (*vyre__cache_step_fn)(const char *step, void *ctx);
void vyre__cache_set_step_hook(vyre__cache_step_fn fn, void *ctx);

/* Moved from the installed cache.h: no program outside libcore calls them. */

/* Replaces the handle's remotes: spec is a remote list as
 * vyre_remote_list_parse reads it (NULL or blank: none). On error the
 * handle keeps its previous remotes. Not thread-safe against other calls
 * on the handle: set remotes before sharing it. (A program outside libcore
 * sets remote_storage in the configuration it opens the cache with.) */
int vyre__cache_set_remotes(vyre_cache *c, const char *spec, vyre_error *err);

/* 1 when the handle cannot write (flag, permissions or read-only fs). */
int vyre__cache_is_readonly(const vyre_cache *c);

typedef struct vyre__cache_cleanup_result {
    int ran;          /* 0: another process was cleaning (skipped) */
    uint64_t removed; /* blobs removed */
    uint64_t removed_bytes;
    uint64_t quarantine_removed; /* quarantined files older than quarantine_max_age */
    uint64_t quarantine_removed_bytes;
    uint64_t bytes_after;
} vyre__cache_cleanup_result;

/* Cleans the cache now as a put over the limit does: blobs least recently
 * used first down to VYRE_CACHE_CLEANUP_RATIO of max_size (when the cache
 * is over max_size, or force), blobs unused for longer than max_age, and
 * quarantined files older than quarantine_max_age. One cleanup at a time
 * across processes: when cleanup.lock is held, res->ran = 0 and nothing is
 * done. res may be NULL. */
int vyre__cache_cleanup(vyre_cache *c, int force, vyre__cache_cleanup_result *res, vyre_error *err);

/* Writes batched hit tracking now. */
int vyre__cache_flush(vyre_cache *c, vyre_error *err);

#endif /* VYRE_CACHE_INTERNAL_H */
