/*
 * index.h - the SQLite index of the pipeline cache (internal to libcore).
 *
 * The cache subsystem (libcore/src/cache/) owns the pipeline cache on disk:
 * keys (key.c), the self-describing blob format and its durable store and
 * validated load (blob_*.c, with XXH3-128 in checksum*.c), this index
 * (index_*.c) and the facade the rest of libcore and the tools use (cache_*.c,
 * one file per operation: open, get/put, remotes, scan and stats, prune and
 * cleanup, verify/reindex/clear). It is pure host code: no
 * NVIDIA library, no GPU. It may call trace/ (its lookups and stores are
 * catalog NVTX ranges) and base/ (base < trace < cache < cuda < bench;
 * docs/DESIGN.md); compiling into the cache is cuda/'s business.
 *
 * The index is a cache of the blobs' headers plus usage (last access, hits):
 * it can always be rebuilt from the blobs (vyre__index_replace_all). Schema
 * in db/cache_v1.sql (embedded as vyre__sql_cache_v1), versioned through PRAGMA
 * user_version with forward migrations. Writes run under BEGIN IMMEDIATE
 * with a busy timeout; WAL on local disks, the rollback journal on network
 * filesystems (statfs): base/sqlutil.c's rules, shared with the results
 * database. Hits are batched in memory and flushed in one
 * transaction (never one write per hit), on flush and on close.
 */
#ifndef VYRE_INDEX_H
#define VYRE_INDEX_H

#include <pthread.h>
#include <sqlite3.h>
#include <stdint.h>

#include "base/sqlutil.h"
#include "vyre/blob.h"
#include "vyre/error.h"
#include "vyre/key.h"

#define VYRE_INDEX_SCHEMA_VERSION  5
#define VYRE_INDEX_MIN_READABLE    2 /* read-only opens take versions from this one up */
#define VYRE_INDEX_BUSY_TIMEOUT_MS 10000
#define VYRE_INDEX_STATEMENT_MS    5000 /* VM time of one statement at most (sqlutil.h) */
#define VYRE_INDEX_HIT_BATCH       4096 /* pending hits that force a flush */
#define VYRE_INDEX_KERNELS_TEXT    256  /* bytes of the kernels column kept, with NUL */

typedef struct vyre__index vyre__index;

/* One row per blob. */
typedef struct vyre__index_row {
    vyre_key key;
    uint32_t kind;
    char arch[VYRE_BLOB_ARCH_MAX];
    char toolchain[VYRE_BLOB_TOOLCHAIN_MAX];
    uint64_t raw_size;
    uint64_t stored_size;
    uint64_t file_size; /* the file's apparent size (st_size): header + payload + kernels */
    int64_t created_unix_ns;
    int64_t last_access_unix_ns;
    uint64_t hits;
    uint64_t compile_ns;                   /* compile time the blob saves per hit */
    uint32_t key_version;                  /* the blob's key format (older: stale) */
    char source[VYRE_BLOB_SOURCE_MAX];     /* source basename, "" when unknown */
    uint32_t n_kernels;                    /* kernels in the module, 0: unknown */
    char kernels[VYRE_INDEX_KERNELS_TEXT]; /* their names joined by ',' (cut: "...") */
    /* Bytes on disk, as du counts them (st_blocks * 512): what every limit,
     * stat and report of the cache sums (schema 5; rows migrated from 4
     * hold file_size rounded up to 4 KiB until a reindex). */
    uint64_t disk_size;
} vyre__index_row;

enum vyre__index_mode {
    VYRE_INDEX_READWRITE = 0, /* create/migrate as needed */
    VYRE_INDEX_READONLY = 1,  /* never creates or migrates; ENOENT when missing */
};

/* Journal mode chosen for the file: WAL or DELETE (network filesystem);
 * the same values as base/sqlutil.h's, which chooses it. */
enum vyre__index_journal { VYRE_INDEX_JOURNAL_WAL = 1, VYRE_INDEX_JOURNAL_ROLLBACK = 2 };

/* Opens (creating and migrating when READWRITE) the index at path.
 * Errors: VYRE_ENOENT (READONLY, no file), VYRE_ECORRUPT (not a database or
 * damaged: hint suggests `vyre-cachectl reindex`), VYRE_EVERSION (schema
 * newer than this build), VYRE_EDB, VYRE_EROFS. */
int vyre__index_open(const char *path, int mode, vyre__index **out, vyre_error *err);

/* Flushes pending hits (best effort) and closes. NULL is a no-op. */
void vyre__index_close(vyre__index *idx);

/* The journal mode in force (enum vyre__index_journal). */
int vyre__index_journal(const vyre__index *idx);

/* Inserts or replaces the row for row->key (keeps hits/last_access of an
 * existing row when row->hits == 0 and row->last_access_unix_ns == 0). */
int vyre__index_upsert(vyre__index *idx, const vyre__index_row *row, vyre_error *err);

/* Deletes the row for key; deleting a missing row is not an error. */
int vyre__index_delete(vyre__index *idx, const vyre_key *key, vyre_error *err);

/* Fetches a row; VYRE_ENOENT when absent. Pending (unflushed) hits are
 * included. */
int vyre__index_get(vyre__index *idx, const vyre_key *key, vyre__index_row *row, vyre_error *err);

/* Records a hit in memory (no SQLite write); flushes when
 * VYRE_INDEX_HIT_BATCH hits are pending. Thread-safe with respect to other
 * calls on the same handle. */
int vyre__index_note_hit(vyre__index *idx, const vyre_key *key, int64_t now_unix_ns,
                         vyre_error *err);

/* Records a miss in memory (batched with hits; kept in meta 'misses'). */
int vyre__index_note_miss(vyre__index *idx, vyre_error *err);

/* The cache's lifetime miss count, pending ones included. */
int vyre__index_misses(vyre__index *idx, uint64_t *misses, vyre_error *err);

/* Adds deltas[i] to the named counter names[i] in meta (created at 0), in
 * one transaction; zero deltas are skipped. A read-only index: no-op. */
int vyre__index_counters_add(vyre__index *idx, const char *const *names, const uint64_t *deltas,
                             size_t n, vyre_error *err);

/* A named counter from meta (0 when absent). */
int vyre__index_counter_get(vyre__index *idx, const char *name, uint64_t *value, vyre_error *err);

/* Writes pending hits in one transaction. */
int vyre__index_flush(vyre__index *idx, vyre_error *err);

/* Calls fn for every row, least recently used first (last_access, then
 * created, then key). fn returns 0 to go on, non-zero to stop (that value is
 * returned). Pending hits are flushed first. */
typedef int (*vyre__index_row_fn)(const vyre__index_row *row, void *ctx);
int vyre__index_foreach_lru(vyre__index *idx, vyre__index_row_fn fn, void *ctx, vyre_error *err);

/* Replaces every row with rows[0..n) in one transaction (reindex). Usage
 * columns (hits, last access) of keys that survive are kept. */
int vyre__index_replace_all(vyre__index *idx, const vyre__index_row *rows, size_t n,
                            vyre_error *err);

/* Deletes many rows in one transaction. */
int vyre__index_delete_many(vyre__index *idx, const vyre_key *keys, size_t n, vyre_error *err);

/* What vyre__index_delete_unchanged did with each row. */
enum vyre__index_delete_outcome {
    VYRE__INDEX_ROW_DELETED = 0, /* the row went */
    VYRE__INDEX_ROW_CHANGED,     /* left: rewritten (a put) or used (a hit) since it was read */
    VYRE__INDEX_ROW_ABSENT       /* there was none (another removal took it) */
};

/*
 * Deletes, in one transaction, the row of each rows[i] that is still as
 * it was read (the same created_ns and last_access_ns), and sets out[i]
 * (n bytes, caller's) to what became of it (enum above). All or nothing:
 * on a failure (a locked index: VYRE_EBUSY, ...) no row went and out is
 * undefined.
 */
int vyre__index_delete_unchanged(vyre__index *idx, const vyre__index_row *const *rows, size_t n,
                                 unsigned char *out, vyre_error *err);

/* Records the inputs row `key` was computed from (schema 4: the columns
 * vyre_key_explain compares). No row for key: nothing, 0. */
int vyre__index_set_inputs(vyre__index *idx, const vyre_key *key, const vyre_key_inputs *in,
                           vyre_error *err);

/* The inputs recorded for key into *out (zeroed first); *recorded 0 when
 * none were (a row stored before schema 4, through a remote store or by a
 * reindex, or an index of schema 3 opened read-only). VYRE_ENOENT: no row. */
int vyre__index_get_inputs(vyre__index *idx, const vyre_key *key, vyre_key_inputs *out,
                           int *recorded, vyre_error *err);

/* Row count and sum of disk_size (bytes on disk). */
int vyre__index_totals(vyre__index *idx, uint64_t *rows, uint64_t *bytes, vyre_error *err);

/* The cache's bytes on disk (sum of disk_size), kept in meta by triggers
 * (schema 5); an older index opened read-only is summed instead. */
int vyre__index_total_bytes(vyre__index *idx, uint64_t *bytes, vyre_error *err);

/* Resets every row's hits and the miss count (pending ones dropped) and
 * records now as meta 'stats_zeroed_ns'; last use is kept. */
int vyre__index_zero_stats(vyre__index *idx, int64_t now_unix_ns, vyre_error *err);

/* meta 'stats_zeroed_ns' (0 when never). */
int vyre__index_stats_zeroed(vyre__index *idx, int64_t *ns, vyre_error *err);

/* Runs PRAGMA quick_check over the whole file (reads every page: for
 * `verify`, not for every open), then checks its schema objects again
 * (another process may have added a trigger since open). 0, or
 * VYRE_ECORRUPT naming the first problem with a hint to run
 * `vyre-cachectl reindex`. */
int vyre__index_check(vyre__index *idx, vyre_error *err);

/* What the file open as fd is, from its first 100 bytes (SQLite's file
 * header) without SQLite opening it: for telling our index from a file
 * someone else keeps under its name. */
enum vyre__index_file_kind {
    VYRE_INDEX_FILE_OURS = 1,     /* SQLite, application_id "vyre" */
    VYRE_INDEX_FILE_EMPTY = 0,    /* no bytes yet (created, never written) */
    VYRE_INDEX_FILE_OTHER = -1,   /* SQLite of another application */
    VYRE_INDEX_FILE_NOT_DB = -2,  /* not a SQLite file */
    VYRE_INDEX_FILE_UNKNOWN = -3, /* could not be read */
};
int vyre__index_file_kind(int fd);

/* ---- shared by the index's own files (index_*.c) only ----------------------
 *
 * The rest of libcore goes through the calls above. The index is written
 * as index_row.c (a row between C and SQL), index_hits.c (usage, batched),
 * index_open.c (the file and the handle; close flushes hits),
 * index_blobs.c (the blob rows), index_inputs.c (each key's inputs) and
 * index_meta.c (counters and totals in meta). Each calls only files
 * before it in that list, so there is no call circle between them.
 */

/* PRAGMA application_id of our index files: "vyre" in ASCII. Lets open
 * tell another SQLite database (say, the bench results) from ours. */
#define INDEX_APPLICATION_ID 0x76797265

/* The front end names the command (VYRE_REMEDY_CACHE_REINDEX). */
#define INDEX_HINT_REINDEX "rebuild the index from the blobs"

/* Cached statements, prepared once at open (index_open.c holds their SQL). */
enum index_stmt {
    INDEX_ST_GET,
    INDEX_ST_UPSERT,
    INDEX_ST_REINDEX_UPSERT,
    INDEX_ST_DELETE,
    INDEX_ST_HIT,
    INDEX_ST_LRU_PAGE,
    INDEX_ST_KEYS,
    INDEX_ST_TOTALS,
    INDEX_ST_COUNT
};

/* Slots of the pending-hit table (index_hits.c says how it fills). */
#define INDEX_HIT_SLOTS 1024
_Static_assert((INDEX_HIT_SLOTS & (INDEX_HIT_SLOTS - 1)) == 0, "INDEX_HIT_SLOTS is a power of two");

struct index_hit_slot {
    vyre_key key;
    uint64_t count;
    int64_t last_ns;
    int used;
};

struct vyre__index {
    pthread_mutex_t mu;
    vyre__sqlite sql; /* the connection, its transactions and failures */
    sqlite3_stmt *st[INDEX_ST_COUNT];
    int readonly;
    uint64_t since_flush;    /* hits noted since the last successful flush */
    uint64_t flush_at;       /* since_flush value that triggers the next flush */
    uint64_t slots_retry_at; /* with many keys pending: since_flush of the next try */
    size_t n_slots;          /* used slots */
    uint64_t pending_misses; /* misses noted since the last successful flush */
    int64_t schema;          /* PRAGMA user_version at open (read-only opens keep older ones) */
    struct index_hit_slot slots[INDEX_HIT_SLOTS];
    char path[]; /* as given to open */
};

/* index_open.c: VYRE_EROFS naming idx, for a write to a read-only handle. */
int vyre__index_fail_readonly(const vyre__index *idx, vyre_error *err);

/* index_row.c. Checks that row fits its columns (terminated strings,
 * integers below 2^63) before it is bound. */
int vyre__index_check_row(const vyre__index *idx, const vyre__index_row *row, vyre_error *err);
/* Binds row to st's parameters ?1..?11 and ?13..?16 (?12 is the upsert's
 * keep-usage flag, the caller's). */
void vyre__index_bind_row(sqlite3_stmt *st, const vyre__index_row *row);
/* Reads a row of the columns in index_open.c's ROW_COLUMNS order from the
 * current result of st; VYRE_ECORRUPT (reindex hint) for a bad one. */
int vyre__index_read_row(vyre__index *idx, sqlite3_stmt *st, vyre__index_row *row, vyre_error *err);
/* Binds key, as hex, to parameter i of st. */
void vyre__index_bind_key(sqlite3_stmt *st, int i, const vyre_key *key);

/* index_hits.c; both with idx->mu held. The pending-hit slot of key, or a
 * new one when create (NULL when absent, or when the table is too full to
 * take another key). */
struct index_hit_slot *vyre__index_slot_find(vyre__index *idx, const vyre_key *key, int create);
/* Writes every pending hit and miss in one transaction; keeps them on
 * failure. */
int vyre__index_flush_locked(vyre__index *idx, vyre_error *err);

#endif /* VYRE_INDEX_H */
