/*
 * index.c - the SQLite index of the pipeline cache (see index.h).
 *
 * Owns the index file's schema and rules (opening, journal mode, migration
 * and transactions are base/sqlutil.c's, shared with the results
 * database), the blob rows, and usage accounting with batched hits.
 *
 * Guarantees and the reasons for them:
 *   - One handle may be used from several threads: every SQLite call, the
 *     statement cache and the pending-hit table are behind idx->mu. The
 *     connection is opened SQLITE_OPEN_NOMUTEX because that mutex already
 *     serialises it; SQLite's own would be a second lock on every call.
 *   - Every write is one BEGIN IMMEDIATE transaction: the write lock is taken
 *     up front, so two processes never deadlock upgrading a read lock, and a
 *     busy lock is waited for (busy timeout, then our own retry until the
 *     same deadline) instead of surfacing SQLITE_BUSY.
 *   - WAL on local disks; the rollback journal where WAL's shared-memory
 *     file cannot work (network and cluster filesystems, FUSE).
 *   - A hit writes nothing: hits collect in a fixed-size table on the
 *     handle and are written in one transaction per VYRE_INDEX_HIT_BATCH
 *     hits, on vyre__index_flush and on close.
 *   - A file that is not our index is never modified: the schema state is
 *     read (which is where a garbage file fails, SQLITE_NOTADB) and checked
 *     before the journal mode is set or anything is created. Damage found
 *     later by any statement is VYRE_ECORRUPT with the reindex hint; a full
 *     PRAGMA quick_check is vyre__index_check (verify), not part of open,
 *     so that opening stays cheap on a large cache.
 */
#include "cache/index.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/internal.h"
#include "base/sqlutil.h"

/* db/cache_v1.sql, embedded by cmake/EmbedSql.cmake. */
extern const char vyre__sql_cache_v1[];
extern const char vyre__sql_cache_v2[];
extern const char vyre__sql_cache_v3[];
extern const char vyre__sql_cache_v4[];

/* PRAGMA application_id of our index files: "vyre" in ASCII. Lets open
 * tell another SQLite database (say, the bench results) from ours. */
#define INDEX_APPLICATION_ID 0x76797265

/*
 * Schema steps: k_schema_steps[v] takes PRAGMA user_version v to v + 1.
 * Step 0 is db/cache_v1.sql, the v1 schema; append a step here (and bump
 * VYRE_INDEX_SCHEMA_VERSION) for every later version, never edit an old
 * one. vyre__sqlite_open runs the pending ones in one transaction.
 */
static const char *const k_schema_steps[] = {
    vyre__sql_cache_v1, /* 0 -> 1 */
    vyre__sql_cache_v2, /* 1 -> 2: key_version, source, n_kernels, kernels */
    vyre__sql_cache_v3, /* 2 -> 3: meta 'total_bytes' kept by triggers (size limit) */
    vyre__sql_cache_v4, /* 3 -> 4: each key's inputs (explain) */
};
_Static_assert(VYRE_ARRAY_SIZE(k_schema_steps) == VYRE_INDEX_SCHEMA_VERSION,
               "one schema step per version");

/* The front end names the command (VYRE_REMEDY_CACHE_REINDEX). */
#define HINT_REINDEX "rebuild the index from the blobs"

/* Cached statements, prepared once at open. */
enum stmt_id {
    ST_GET,
    ST_UPSERT,
    ST_REINDEX_UPSERT,
    ST_DELETE,
    ST_HIT,
    ST_LRU_PAGE,
    ST_KEYS,
    ST_TOTALS,
    ST_COUNT
};

#define ROW_COLUMNS                                                                                \
    "key, kind, arch, toolchain, raw_size, stored_size, file_size, created_ns, last_access_ns, "   \
    "hits, compile_ns, key_version, source, n_kernels, kernels"
/* ?12 is the upsert's keep-usage flag. */
#define ROW_VALUES "?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?13, ?14, ?15, ?16"
#define SET_HEADER_COLUMNS                                                                         \
    "kind = excluded.kind, arch = excluded.arch, toolchain = excluded.toolchain, "                 \
    "raw_size = excluded.raw_size, stored_size = excluded.stored_size, "                           \
    "file_size = excluded.file_size, created_ns = excluded.created_ns, "                           \
    "compile_ns = excluded.compile_ns, key_version = excluded.key_version, "                       \
    "source = excluded.source, n_kernels = excluded.n_kernels, kernels = excluded.kernels"

static const char *const k_sql[ST_COUNT] = {
    [ST_GET] = "SELECT " ROW_COLUMNS " FROM blobs WHERE key = ?1",
    /* ?12 true: keep the usage columns of an existing row. */
    [ST_UPSERT] = "INSERT INTO blobs (" ROW_COLUMNS ") VALUES (" ROW_VALUES ") "
                  "ON CONFLICT (key) DO UPDATE SET " SET_HEADER_COLUMNS ", "
                  "last_access_ns = CASE WHEN ?12 THEN blobs.last_access_ns "
                  "ELSE excluded.last_access_ns END, "
                  "hits = CASE WHEN ?12 THEN blobs.hits ELSE excluded.hits END",
    [ST_REINDEX_UPSERT] = "INSERT INTO blobs (" ROW_COLUMNS ") VALUES (" ROW_VALUES ") "
                          "ON CONFLICT (key) DO UPDATE SET " SET_HEADER_COLUMNS,
    [ST_DELETE] = "DELETE FROM blobs WHERE key = ?1",
    [ST_HIT] = "UPDATE blobs SET hits = hits + ?2, last_access_ns = max(last_access_ns, ?3) "
               "WHERE key = ?1",
    /* Keyset pagination in LRU order: walks index blobs_lru, no sort. */
    [ST_LRU_PAGE] = "SELECT " ROW_COLUMNS " FROM blobs "
                    "WHERE (last_access_ns, created_ns, key) > (?1, ?2, ?3) "
                    "ORDER BY last_access_ns, created_ns, key LIMIT ?4",
    [ST_KEYS] = "SELECT key FROM blobs",
    [ST_TOTALS] = "SELECT count(*), coalesce(sum(file_size), 0) FROM blobs",
};

/* Rows fetched per lock hold in foreach_lru. */
#define LRU_PAGE_ROWS 256

/*
 * Pending hits: open addressing with linear probing over a fixed table.
 * A flush happens every VYRE_INDEX_HIT_BATCH hits, or as soon as
 * HIT_SLOTS_FLUSH distinct keys are pending, so the table stays under half
 * full. A flush costs about one row update per distinct key plus a commit
 * (some 100-200 us for tens of keys), so a large batch keeps a hit's share
 * of it to tens of nanoseconds. Only repeated flush failures can fill the
 * table; past HIT_SLOTS_MAX_USED keys new keys' hits are dropped (usage
 * statistics, never data).
 */
#define HIT_SLOTS          1024
#define HIT_SLOTS_FLUSH    (HIT_SLOTS / 2)
#define HIT_SLOTS_MAX_USED (HIT_SLOTS / 4 * 3)
_Static_assert((HIT_SLOTS & (HIT_SLOTS - 1)) == 0, "HIT_SLOTS is a power of two");

struct hit_slot {
    vyre_key key;
    uint64_t count;
    int64_t last_ns;
    int used;
};

struct vyre__index {
    pthread_mutex_t mu;
    vyre__sqlite sql; /* the connection, its transactions and failures */
    sqlite3_stmt *st[ST_COUNT];
    int readonly;
    uint64_t since_flush;    /* hits noted since the last successful flush */
    uint64_t flush_at;       /* since_flush value that triggers the next flush */
    uint64_t slots_retry_at; /* with many keys pending: since_flush of the next try */
    size_t n_slots;          /* used slots */
    uint64_t pending_misses; /* misses noted since the last successful flush */
    int64_t schema;          /* PRAGMA user_version at open (read-only opens keep older ones) */
    struct hit_slot slots[HIT_SLOTS];
    char path[]; /* as given to open */
};

/* ---- errors ------------------------------------------------------------ */

static const char *hint_for(int code)
{
    switch (code) {
    case VYRE_ENOSPC:
        return "free space on the filesystem holding the cache (pruning the cache helps)";
    case VYRE_EROFS:
        return "the cache is on a read-only location: make it writable, or set "
               "VYRE_PTX_CACHE_DIR to a writable directory";
    case VYRE_ECORRUPT:
        return HINT_REINDEX;
    case VYRE_EBUSY:
        return "another process held the index locked for too long; retry, and look for a hung "
               "vyre process if it persists";
    case VYRE_EPERM:
        return "check the permissions of the cache directory and of the index file";
    case VYRE_ENOENT:
        return "check that the cache directory exists";
    case VYRE_ENOMEM:
        return NULL;
    default:
        return "if it persists, " HINT_REINDEX;
    }
}

static int fail_readonly(const vyre__index *idx, vyre_error *err)
{
    return vyre__fail(err, VYRE_EROFS,
                      "run a command that writes the cache, which opens the index read-write",
                      "index '%s' was opened read-only", idx->path);
}

/* ---- rows ---------------------------------------------------------------- */

static int check_u63(const vyre__index *idx, const char *name, uint64_t v, vyre_error *err)
{
    if (v <= (uint64_t)INT64_MAX)
        return VYRE_OK;
    return vyre__fail(err, VYRE_ERANGE, "pass a value below 2^63",
                      "%s %" PRIu64 " does not fit index '%s'", name, v, idx->path);
}

static int check_row(const vyre__index *idx, const vyre__index_row *row, vyre_error *err)
{
    if (!memchr(row->arch, '\0', sizeof row->arch) ||
        !memchr(row->toolchain, '\0', sizeof row->toolchain) ||
        !memchr(row->source, '\0', sizeof row->source) ||
        !memchr(row->kernels, '\0', sizeof row->kernels))
        return vyre__fail(err, VYRE_EINVAL, "terminate arch and toolchain within their arrays",
                          "index row has an unterminated arch or toolchain string");
    int rc;
    if ((rc = check_u63(idx, "raw_size", row->raw_size, err)) ||
        (rc = check_u63(idx, "stored_size", row->stored_size, err)) ||
        (rc = check_u63(idx, "file_size", row->file_size, err)) ||
        (rc = check_u63(idx, "hits", row->hits, err)) ||
        (rc = check_u63(idx, "compile_ns", row->compile_ns, err)))
        return rc;
    return VYRE_OK;
}

static void bind_row(sqlite3_stmt *st, const vyre__index_row *row)
{
    char hex[VYRE_KEY_HEX_LEN + 1];
    vyre_key_to_hex(&row->key, hex);
    sqlite3_bind_text(st, 1, hex, VYRE_KEY_HEX_LEN, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 2, (sqlite3_int64)row->kind);
    sqlite3_bind_text(st, 3, row->arch, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 4, row->toolchain, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 5, (sqlite3_int64)row->raw_size);
    sqlite3_bind_int64(st, 6, (sqlite3_int64)row->stored_size);
    sqlite3_bind_int64(st, 7, (sqlite3_int64)row->file_size);
    sqlite3_bind_int64(st, 8, row->created_unix_ns);
    sqlite3_bind_int64(st, 9, row->last_access_unix_ns);
    sqlite3_bind_int64(st, 10, (sqlite3_int64)row->hits);
    sqlite3_bind_int64(st, 11, (sqlite3_int64)row->compile_ns);
    sqlite3_bind_int64(st, 13, (sqlite3_int64)row->key_version);
    sqlite3_bind_text(st, 14, row->source, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 15, (sqlite3_int64)row->n_kernels);
    sqlite3_bind_text(st, 16, row->kernels, -1, SQLITE_TRANSIENT);
}

static int read_text(vyre__index *idx, sqlite3_stmt *st, int col, char *out, size_t size,
                     vyre_error *err)
{
    const unsigned char *z = sqlite3_column_text(st, col);
    if (!z && sqlite3_errcode(idx->sql.db) == SQLITE_NOMEM)
        return vyre__fail(err, VYRE_ENOMEM, NULL, "out of memory reading index '%s'", idx->path);
    if (vyre__strlcpy(out, z ? (const char *)z : "", size) >= size)
        return vyre__remedy(err, VYRE_REMEDY_CACHE_REINDEX,
                            vyre__fail(err, VYRE_ECORRUPT, HINT_REINDEX,
                                       "index '%s' has an over-long %s '%s'", idx->path,
                                       sqlite3_column_name(st, col), (const char *)z));
    return VYRE_OK;
}

/* Reads a row in ROW_COLUMNS order from the current result of st. */
static int read_row(vyre__index *idx, sqlite3_stmt *st, vyre__index_row *row, vyre_error *err)
{
    memset(row, 0, sizeof *row);
    const unsigned char *hex = sqlite3_column_text(st, 0);
    if (!hex || strlen((const char *)hex) != VYRE_KEY_HEX_LEN ||
        vyre_key_from_hex((const char *)hex, &row->key) != 0)
        return vyre__remedy(err, VYRE_REMEDY_CACHE_REINDEX,
                            vyre__fail(err, VYRE_ECORRUPT, HINT_REINDEX,
                                       "index '%s' has a bad key '%s'", idx->path,
                                       hex ? (const char *)hex : "(null)"));
    sqlite3_int64 kind = sqlite3_column_int64(st, 1);
    if (kind < 0 || kind > (sqlite3_int64)UINT32_MAX)
        return vyre__remedy(err, VYRE_REMEDY_CACHE_REINDEX,
                            vyre__fail(err, VYRE_ECORRUPT, HINT_REINDEX,
                                       "index '%s' has a bad kind %lld for key '%s'", idx->path,
                                       (long long)kind, (const char *)hex));
    row->kind = (uint32_t)kind;
    int rc;
    if ((rc = read_text(idx, st, 2, row->arch, sizeof row->arch, err)) ||
        (rc = read_text(idx, st, 3, row->toolchain, sizeof row->toolchain, err)))
        return rc;
    row->raw_size = (uint64_t)sqlite3_column_int64(st, 4);
    row->stored_size = (uint64_t)sqlite3_column_int64(st, 5);
    row->file_size = (uint64_t)sqlite3_column_int64(st, 6);
    row->created_unix_ns = sqlite3_column_int64(st, 7);
    row->last_access_unix_ns = sqlite3_column_int64(st, 8);
    row->hits = (uint64_t)sqlite3_column_int64(st, 9);
    row->compile_ns = (uint64_t)sqlite3_column_int64(st, 10);
    sqlite3_int64 kv = sqlite3_column_int64(st, 11), nk = sqlite3_column_int64(st, 13);
    row->key_version = kv < 0 || kv > (sqlite3_int64)UINT32_MAX ? 0 : (uint32_t)kv;
    row->n_kernels = nk < 0 || nk > (sqlite3_int64)UINT32_MAX ? 0 : (uint32_t)nk;
    if ((rc = read_text(idx, st, 12, row->source, sizeof row->source, err)) ||
        (rc = read_text(idx, st, 14, row->kernels, sizeof row->kernels, err)))
        return rc;
    return VYRE_OK;
}

static void bind_key(sqlite3_stmt *st, int i, const vyre_key *key)
{
    char hex[VYRE_KEY_HEX_LEN + 1];
    vyre_key_to_hex(key, hex);
    sqlite3_bind_text(st, i, hex, VYRE_KEY_HEX_LEN, SQLITE_TRANSIENT);
}

/* ---- pending hits -------------------------------------------------------- */

static size_t slot_hash(const vyre_key *key)
{
    /* Keys are SHA-256 digests, but tests and tools may hand in made-up
     * ones: mix all of it. */
    uint64_t h = 0;
    for (size_t i = 0; i < VYRE_KEY_BYTES; i += 8) {
        uint64_t w;
        memcpy(&w, key->bytes + i, 8);
        h = (h ^ w) * UINT64_C(0x9e3779b97f4a7c15);
        h ^= h >> 29;
    }
    return (size_t)(h & (HIT_SLOTS - 1));
}

/* The slot of key, or a new one when create (NULL when absent, or when the
 * table is too full to take another key). */
static struct hit_slot *slot_find(vyre__index *idx, const vyre_key *key, int create)
{
    size_t i = slot_hash(key);
    for (size_t probe = 0; probe < HIT_SLOTS; probe++, i = (i + 1) & (HIT_SLOTS - 1)) {
        struct hit_slot *s = &idx->slots[i];
        if (!s->used) {
            if (!create || idx->n_slots >= HIT_SLOTS_MAX_USED)
                return NULL;
            s->used = 1;
            s->key = *key;
            s->count = 0;
            s->last_ns = INT64_MIN;
            idx->n_slots++;
            return s;
        }
        if (memcmp(s->key.bytes, key->bytes, VYRE_KEY_BYTES) == 0)
            return s;
    }
    return NULL;
}

/* Writes every pending hit in one transaction; keeps them on failure. */
static int flush_locked(vyre__index *idx, vyre_error *err)
{
    if (idx->n_slots == 0 && idx->pending_misses == 0) {
        idx->since_flush = 0;
        idx->flush_at = VYRE_INDEX_HIT_BATCH;
        return VYRE_OK;
    }
    int rc = vyre__sqlite_begin(&idx->sql, "record hits in", err);
    if (rc)
        return rc;
    if (idx->pending_misses) {
        /* The cache's lifetime miss count lives in meta, so that stats can
         * give a hit rate across processes. */
        sqlite3_stmt *ms = NULL;
        int src = sqlite3_prepare_v2(idx->sql.db,
                                     "INSERT INTO meta (name, value) VALUES ('misses', ?1) "
                                     "ON CONFLICT (name) DO UPDATE SET "
                                     "value = coalesce(value, 0) + excluded.value",
                                     -1, &ms, NULL);
        if (src == SQLITE_OK) {
            sqlite3_bind_int64(ms, 1,
                               idx->pending_misses > (uint64_t)INT64_MAX
                                   ? INT64_MAX
                                   : (sqlite3_int64)idx->pending_misses);
            src = sqlite3_step(ms);
        }
        if (src != SQLITE_DONE) {
            rc = vyre__sqlite_abort(&idx->sql, ms, src, "record misses in", err);
            sqlite3_finalize(ms);
            return rc;
        }
        sqlite3_finalize(ms);
    }
    sqlite3_stmt *st = idx->st[ST_HIT];
    for (size_t i = 0; i < HIT_SLOTS; i++) {
        const struct hit_slot *s = &idx->slots[i];
        if (!s->used)
            continue;
        bind_key(st, 1, &s->key);
        sqlite3_bind_int64(st, 2,
                           s->count > (uint64_t)INT64_MAX ? INT64_MAX : (sqlite3_int64)s->count);
        sqlite3_bind_int64(st, 3, s->last_ns);
        int src = sqlite3_step(st);
        if (src != SQLITE_DONE)
            return vyre__sqlite_abort(&idx->sql, st, src, "record hits in", err);
        sqlite3_reset(st);
    }
    rc = vyre__sqlite_commit(&idx->sql, "record hits in", err);
    if (rc)
        return rc;
    memset(idx->slots, 0, sizeof idx->slots);
    idx->n_slots = 0;
    idx->pending_misses = 0;
    idx->slots_retry_at = 0;
    idx->since_flush = 0;
    idx->flush_at = VYRE_INDEX_HIT_BATCH;
    return VYRE_OK;
}

/* ---- open and close ------------------------------------------------------ */

static int check_schema_state(const vyre__sqlite *c, const vyre__sqlite_schema *s, vyre_error *err)
{
    int readonly = (c->flags & VYRE__SQLITE_READONLY) != 0;
    if ((s->application_id != 0 && s->application_id != INDEX_APPLICATION_ID) ||
        (s->user_version == 0 && s->objects > 0))
        return vyre__remedy(
            err, VYRE_REMEDY_CACHE_REINDEX,
            vyre__fail(err, VYRE_ECORRUPT,
                       "move the file away and " HINT_REINDEX " (which creates a new index)",
                       "'%s' is an SQLite database but not a vyre cache index "
                       "(application_id %lld, user_version %lld)",
                       c->path, (long long)s->application_id, (long long)s->user_version));
    if (s->user_version < 0 || s->user_version > VYRE_INDEX_SCHEMA_VERSION)
        return vyre__remedy(
            err, VYRE_REMEDY_CACHE_REINDEX,
            vyre__fail(err, VYRE_EVERSION,
                       "use the vyre-tools release that wrote it, or move the file away and "
                       "rebuild it from the blobs",
                       "index '%s' has schema version %lld, newer than the %d this build "
                       "supports",
                       c->path, (long long)s->user_version, VYRE_INDEX_SCHEMA_VERSION));
    if (readonly && s->user_version == 0)
        return vyre__remedy(err, VYRE_REMEDY_CACHE_REINDEX,
                            vyre__fail(err, VYRE_ENOENT,
                                       "run a command that writes the cache to create it",
                                       "index '%s' is empty", c->path));
    if (readonly && s->user_version < VYRE_INDEX_MIN_READABLE)
        return vyre__remedy(
            err, VYRE_REMEDY_CACHE_REINDEX,
            vyre__fail(err, VYRE_EVERSION, "run a command that writes the cache to upgrade it",
                       "index '%s' has schema version %lld, older than the %d this build "
                       "reads, and it was opened read-only",
                       c->path, (long long)s->user_version, VYRE_INDEX_SCHEMA_VERSION));
    return VYRE_OK;
}

/* The index as a store: rebuildable, so WAL's synchronous=NORMAL (which
 * may lose the last transactions on power loss, never corrupts) is the
 * right trade, and the journal mode follows the filesystem on every open. */
/* Failures whose hint says to rebuild the index name the command too. */
static vyre_remedy remedy_for(int code)
{
    switch (code) {
    case VYRE_ENOSPC:
        return VYRE_REMEDY_CACHE_PRUNE;
    case VYRE_EROFS:
    case VYRE_EBUSY:
    case VYRE_ENOMEM:
        return VYRE_REMEDY_NONE;
    default:
        return VYRE_REMEDY_CACHE_REINDEX;
    }
}

static const vyre__sqlite_store k_store = {
    .noun = "index",
    .hint_for = hint_for,
    .remedy_for = remedy_for,
    .busy_timeout_ms = VYRE_INDEX_BUSY_TIMEOUT_MS,
    /* Every index statement takes milliseconds; PRAGMA quick_check of a
     * 100 MB index about 1 s. */
    .statement_ms = VYRE_INDEX_STATEMENT_MS,
    .schema_version = VYRE_INDEX_SCHEMA_VERSION,
    .application_id = INDEX_APPLICATION_ID,
    .steps = k_schema_steps,
    .check = check_schema_state,
};
_Static_assert((int)VYRE_INDEX_JOURNAL_WAL == (int)VYRE__SQLITE_JOURNAL_WAL &&
                   (int)VYRE_INDEX_JOURNAL_ROLLBACK == (int)VYRE__SQLITE_JOURNAL_ROLLBACK,
               "vyre__index_journal reports sqlutil's journal mode");

static int prepare_all(vyre__index *idx, vyre_error *err)
{
    for (int i = 0; i < ST_COUNT; i++) {
        int rc = vyre__sqlite_prepare(&idx->sql, k_sql[i], &idx->st[i], err);
        if (rc)
            return rc;
    }
    return VYRE_OK;
}

static void destroy(vyre__index *idx)
{
    for (int i = 0; i < ST_COUNT; i++)
        sqlite3_finalize(idx->st[i]);
    vyre__sqlite_close(&idx->sql);
    pthread_mutex_destroy(&idx->mu);
    free(idx);
}

static int open_steps(vyre__index *idx, vyre_error *err)
{
    int is_memory = strcmp(idx->path, ":memory:") == 0;
    if (idx->readonly && !is_memory) {
        /* SQLITE_OPEN_READONLY never creates, but says "unable to open";
         * name the missing file instead. */
        struct stat st;
        if (stat(idx->path, &st) != 0) {
            int e = errno;
            if (e == ENOENT)
                return vyre__remedy(err, VYRE_REMEDY_CACHE_REINDEX,
                                    vyre__fail(err, VYRE_ENOENT,
                                               "run a command that writes the cache to create it",
                                               "index '%s' does not exist", idx->path));
            return vyre__fail(err, vyre__errno_code(e), hint_for(vyre__errno_code(e)),
                              "cannot open index '%s': %s", idx->path, strerror(e));
        }
    }
    int rc = vyre__sqlite_open(&idx->sql, idx->path, &k_store,
                               idx->readonly ? VYRE__SQLITE_READONLY : 0, err);
    if (rc)
        return rc;
    /* A read-only open leaves an older schema as it is: the input columns
     * of schema 4 may be missing (vyre__index_get_inputs). */
    vyre__sqlite_schema sch;
    idx->schema =
        vyre__sqlite_read_schema(idx->sql.db, VYRE_INDEX_BUSY_TIMEOUT_MS, &sch) == SQLITE_OK
            ? sch.user_version
            : VYRE_INDEX_SCHEMA_VERSION;
    return prepare_all(idx, err);
}

int vyre__index_open(const char *path, int mode, vyre__index **out, vyre_error *err)
{
    if (out)
        *out = NULL;
    if (!path || !*path || !out || (mode != VYRE_INDEX_READWRITE && mode != VYRE_INDEX_READONLY))
        return vyre__fail(err, VYRE_EINVAL, "pass a path and VYRE_INDEX_READWRITE or READONLY",
                          "bad arguments to open the index (mode %d)", mode);
    size_t len = strlen(path);
    vyre__index *idx = calloc(1, sizeof *idx + len + 1);
    if (!idx)
        return vyre__fail(err, VYRE_ENOMEM, NULL, "out of memory opening index '%s'", path);
    memcpy(idx->path, path, len + 1);
    idx->readonly = mode == VYRE_INDEX_READONLY;
    idx->flush_at = VYRE_INDEX_HIT_BATCH;
    if (pthread_mutex_init(&idx->mu, NULL) != 0) {
        free(idx);
        return vyre__fail(err, VYRE_ENOMEM, NULL, "cannot create a mutex for index '%s'", path);
    }
    int rc = open_steps(idx, err);
    if (rc) {
        destroy(idx);
        return rc;
    }
    *out = idx;
    return VYRE_OK;
}

void vyre__index_close(vyre__index *idx)
{
    if (!idx)
        return;
    pthread_mutex_lock(&idx->mu);
    if (!idx->readonly)
        flush_locked(idx, NULL); /* best effort: hits are statistics */
    pthread_mutex_unlock(&idx->mu);
    destroy(idx);
}

int vyre__index_journal(const vyre__index *idx)
{
    return idx->sql.journal;
}

/* ---- rows: single-row operations ----------------------------------------- */

int vyre__index_upsert(vyre__index *idx, const vyre__index_row *row, vyre_error *err)
{
    if (!idx || !row)
        return vyre__fail(err, VYRE_EINVAL, NULL, "NULL argument to vyre__index_upsert");
    if (idx->readonly)
        return fail_readonly(idx, err);
    int rc = check_row(idx, row, err);
    if (rc)
        return rc;
    pthread_mutex_lock(&idx->mu);
    rc = vyre__sqlite_begin(&idx->sql, "write to", err);
    if (!rc) {
        sqlite3_stmt *st = idx->st[ST_UPSERT];
        bind_row(st, row);
        sqlite3_bind_int(st, 12, row->hits == 0 && row->last_access_unix_ns == 0);
        int src = sqlite3_step(st);
        if (src != SQLITE_DONE) {
            rc = vyre__sqlite_abort(&idx->sql, st, src, "write to", err);
        } else {
            sqlite3_reset(st);
            rc = vyre__sqlite_commit(&idx->sql, "write to", err);
        }
    }
    pthread_mutex_unlock(&idx->mu);
    return rc;
}

int vyre__index_delete(vyre__index *idx, const vyre_key *key, vyre_error *err)
{
    if (!key)
        return vyre__fail(err, VYRE_EINVAL, NULL, "NULL key to vyre__index_delete");
    return vyre__index_delete_many(idx, key, 1, err);
}

int vyre__index_get(vyre__index *idx, const vyre_key *key, vyre__index_row *row, vyre_error *err)
{
    if (!idx || !key || !row)
        return vyre__fail(err, VYRE_EINVAL, NULL, "NULL argument to vyre__index_get");
    pthread_mutex_lock(&idx->mu);
    sqlite3_stmt *st = idx->st[ST_GET];
    bind_key(st, 1, key);
    int src = vyre__sqlite_step_retry(st, VYRE_INDEX_BUSY_TIMEOUT_MS);
    int rc;
    if (src == SQLITE_ROW) {
        rc = read_row(idx, st, row, err);
    } else if (src == SQLITE_DONE) {
        char hex[VYRE_KEY_HEX_LEN + 1];
        vyre_key_to_hex(key, hex);
        rc =
            vyre__fail(err, VYRE_ENOENT, NULL, "no row for key '%s' in index '%s'", hex, idx->path);
    } else {
        rc = vyre__sqlite_fail(&idx->sql, src, "read", err);
    }
    sqlite3_reset(st);
    if (!rc) {
        const struct hit_slot *s = slot_find(idx, key, 0);
        if (s) {
            row->hits += s->count;
            if (s->last_ns > row->last_access_unix_ns)
                row->last_access_unix_ns = s->last_ns;
        }
    }
    pthread_mutex_unlock(&idx->mu);
    return rc;
}

/* ---- hits ------------------------------------------------------------------ */

int vyre__index_note_hit(vyre__index *idx, const vyre_key *key, int64_t now_unix_ns,
                         vyre_error *err)
{
    if (!idx || !key)
        return vyre__fail(err, VYRE_EINVAL, NULL, "NULL argument to vyre__index_note_hit");
    /* A read-only index records no usage (a read-only cache still serves
     * hits; it just cannot remember them). */
    if (idx->readonly)
        return VYRE_OK;
    int rc = VYRE_OK;
    pthread_mutex_lock(&idx->mu);
    struct hit_slot *s = slot_find(idx, key, 1);
    if (s) {
        s->count++;
        if (now_unix_ns > s->last_ns)
            s->last_ns = now_unix_ns;
    }
    int due = ++idx->since_flush >= idx->flush_at ||
              (idx->n_slots >= HIT_SLOTS_FLUSH && idx->since_flush >= idx->slots_retry_at);
    if (due) {
        rc = flush_locked(idx, err);
        if (rc) {
            /* Do not retry (and wait out a busy lock) on every hit: try
             * again later; the hits stay pending meanwhile. */
            idx->flush_at = idx->since_flush + VYRE_INDEX_HIT_BATCH;
            idx->slots_retry_at = idx->since_flush + HIT_SLOTS_FLUSH;
        }
    }
    pthread_mutex_unlock(&idx->mu);
    return rc;
}

int vyre__index_note_miss(vyre__index *idx, vyre_error *err)
{
    if (!idx)
        return vyre__fail(err, VYRE_EINVAL, NULL, "NULL index to vyre__index_note_miss");
    if (idx->readonly)
        return VYRE_OK;
    int rc = VYRE_OK;
    pthread_mutex_lock(&idx->mu);
    idx->pending_misses++;
    if (++idx->since_flush >= idx->flush_at) {
        rc = flush_locked(idx, err);
        if (rc)
            idx->flush_at = idx->since_flush + VYRE_INDEX_HIT_BATCH;
    }
    pthread_mutex_unlock(&idx->mu);
    return rc;
}

int vyre__index_misses(vyre__index *idx, uint64_t *misses, vyre_error *err)
{
    if (!idx || !misses)
        return vyre__fail(err, VYRE_EINVAL, NULL, "NULL argument to vyre__index_misses");
    pthread_mutex_lock(&idx->mu);
    sqlite3_stmt *st = NULL;
    int src = sqlite3_prepare_v2(idx->sql.db, "SELECT value FROM meta WHERE name = 'misses'", -1,
                                 &st, NULL);
    int rc = VYRE_OK;
    uint64_t stored = 0;
    if (src == SQLITE_OK) {
        src = sqlite3_step(st);
        if (src == SQLITE_ROW) {
            sqlite3_int64 v = sqlite3_column_int64(st, 0);
            stored = v > 0 ? (uint64_t)v : 0;
        } else if (src != SQLITE_DONE) {
            rc = vyre__sqlite_fail(&idx->sql, src, "read the miss count of", err);
        }
    } else {
        rc = vyre__sqlite_fail(&idx->sql, src, "read the miss count of", err);
    }
    sqlite3_finalize(st);
    *misses = stored + idx->pending_misses;
    pthread_mutex_unlock(&idx->mu);
    return rc;
}

int vyre__index_flush(vyre__index *idx, vyre_error *err)
{
    if (!idx)
        return vyre__fail(err, VYRE_EINVAL, NULL, "NULL index to vyre__index_flush");
    if (idx->readonly)
        return VYRE_OK;
    pthread_mutex_lock(&idx->mu);
    int rc = flush_locked(idx, err);
    pthread_mutex_unlock(&idx->mu);
    return rc;
}

/* ---- iteration and bulk operations ------------------------------------------ */

/*
 * Pages through the LRU order LRU_PAGE_ROWS rows at a time, keyed on the
 * last row seen, and calls fn without holding the lock: fn may call back
 * into the index (prune deletes the rows it is shown). A row changed by
 * another writer during the walk is seen at its old or its new place.
 */
int vyre__index_foreach_lru(vyre__index *idx, vyre__index_row_fn fn, void *ctx, vyre_error *err)
{
    if (!idx || !fn)
        return vyre__fail(err, VYRE_EINVAL, NULL, "NULL argument to vyre__index_foreach_lru");
    int rc = vyre__index_flush(idx, err);
    if (rc)
        return rc;
    vyre__index_row *rows = malloc(LRU_PAGE_ROWS * sizeof *rows);
    if (!rows)
        return vyre__fail(err, VYRE_ENOMEM, NULL, "out of memory reading index '%s'", idx->path);
    int64_t after_access = INT64_MIN, after_created = INT64_MIN;
    char after_key[VYRE_KEY_HEX_LEN + 1] = ""; /* sorts before every key */
    for (;;) {
        size_t n = 0;
        pthread_mutex_lock(&idx->mu);
        sqlite3_stmt *st = idx->st[ST_LRU_PAGE];
        sqlite3_bind_int64(st, 1, after_access);
        sqlite3_bind_int64(st, 2, after_created);
        sqlite3_bind_text(st, 3, after_key, -1, SQLITE_TRANSIENT);
        sqlite3_bind_int(st, 4, LRU_PAGE_ROWS);
        int src = vyre__sqlite_step_retry(st, VYRE_INDEX_BUSY_TIMEOUT_MS);
        while (src == SQLITE_ROW && n < LRU_PAGE_ROWS) {
            if ((rc = read_row(idx, st, &rows[n], err)))
                break;
            n++;
            src = sqlite3_step(st);
        }
        if (!rc && src != SQLITE_DONE)
            rc = vyre__sqlite_fail(&idx->sql, src, "read", err);
        sqlite3_reset(st);
        pthread_mutex_unlock(&idx->mu);
        if (rc)
            break;
        for (size_t i = 0; i < n && !rc; i++)
            rc = fn(&rows[i], ctx);
        if (rc || n < LRU_PAGE_ROWS)
            break;
        after_access = rows[n - 1].last_access_unix_ns;
        after_created = rows[n - 1].created_unix_ns;
        vyre_key_to_hex(&rows[n - 1].key, after_key);
    }
    free(rows);
    return rc;
}

static int key_cmp(const void *a, const void *b)
{
    return memcmp(a, b, VYRE_KEY_BYTES);
}

/* Deletes, inside the open transaction, every row whose key is not in
 * sorted[0..n). */
static int delete_others(vyre__index *idx, const vyre_key *sorted, size_t n, vyre_error *err)
{
    vyre_key *stale = NULL;
    size_t n_stale = 0, cap = 0;
    sqlite3_stmt *st = idx->st[ST_KEYS];
    int src, rc = VYRE_OK;
    while ((src = sqlite3_step(st)) == SQLITE_ROW) {
        vyre_key k;
        const unsigned char *hex = sqlite3_column_text(st, 0);
        if (!hex || vyre_key_from_hex((const char *)hex, &k) != 0) {
            rc = vyre__remedy(err, VYRE_REMEDY_CACHE_REINDEX,
                              vyre__fail(err, VYRE_ECORRUPT, HINT_REINDEX,
                                         "index '%s' has a bad key '%s'", idx->path,
                                         hex ? (const char *)hex : "(null)"));
            break;
        }
        if (n && bsearch(&k, sorted, n, sizeof *sorted, key_cmp))
            continue;
        if (n_stale == cap) {
            size_t ncap = cap ? cap * 2 : 64;
            vyre_key *p = realloc(stale, ncap * sizeof *p);
            if (!p) {
                rc = vyre__fail(err, VYRE_ENOMEM, NULL, "out of memory rebuilding index '%s'",
                                idx->path);
                break;
            }
            stale = p;
            cap = ncap;
        }
        stale[n_stale++] = k;
    }
    if (!rc && src != SQLITE_DONE && src != SQLITE_ROW)
        rc = vyre__sqlite_fail(&idx->sql, src, "rebuild", err);
    sqlite3_reset(st);
    sqlite3_stmt *del = idx->st[ST_DELETE];
    for (size_t i = 0; !rc && i < n_stale; i++) {
        bind_key(del, 1, &stale[i]);
        src = sqlite3_step(del);
        if (src != SQLITE_DONE)
            rc = vyre__sqlite_fail(&idx->sql, src, "rebuild", err);
        sqlite3_reset(del);
    }
    free(stale);
    return rc;
}

int vyre__index_replace_all(vyre__index *idx, const vyre__index_row *rows, size_t n,
                            vyre_error *err)
{
    if (!idx || (n && !rows))
        return vyre__fail(err, VYRE_EINVAL, NULL, "NULL argument to vyre__index_replace_all");
    if (idx->readonly)
        return fail_readonly(idx, err);
    int rc;
    for (size_t i = 0; i < n; i++)
        if ((rc = check_row(idx, &rows[i], err)))
            return rc;
    vyre_key *sorted = malloc((n ? n : 1) * sizeof *sorted);
    if (!sorted)
        return vyre__fail(err, VYRE_ENOMEM, NULL, "out of memory rebuilding index '%s'", idx->path);
    for (size_t i = 0; i < n; i++)
        sorted[i] = rows[i].key;
    qsort(sorted, n, sizeof *sorted, key_cmp);

    pthread_mutex_lock(&idx->mu);
    rc = vyre__sqlite_begin(&idx->sql, "rebuild", err);
    if (!rc) {
        sqlite3_stmt *st = idx->st[ST_REINDEX_UPSERT];
        for (size_t i = 0; i < n && !rc; i++) {
            bind_row(st, &rows[i]);
            int src = sqlite3_step(st);
            if (src != SQLITE_DONE)
                rc = vyre__sqlite_fail(&idx->sql, src, "rebuild", err);
            sqlite3_reset(st);
        }
        if (!rc)
            rc = delete_others(idx, sorted, n, err);
        if (rc)
            vyre__sqlite_rollback(&idx->sql);
        else
            rc = vyre__sqlite_commit(&idx->sql, "rebuild", err);
    }
    pthread_mutex_unlock(&idx->mu);
    free(sorted);
    return rc;
}

int vyre__index_delete_many(vyre__index *idx, const vyre_key *keys, size_t n, vyre_error *err)
{
    if (!idx || (n && !keys))
        return vyre__fail(err, VYRE_EINVAL, NULL, "NULL argument to vyre__index_delete_many");
    if (idx->readonly)
        return fail_readonly(idx, err);
    if (n == 0)
        return VYRE_OK;
    pthread_mutex_lock(&idx->mu);
    int rc = vyre__sqlite_begin(&idx->sql, "delete from", err);
    if (!rc) {
        sqlite3_stmt *st = idx->st[ST_DELETE];
        for (size_t i = 0; i < n && !rc; i++) {
            bind_key(st, 1, &keys[i]);
            int src = sqlite3_step(st);
            if (src != SQLITE_DONE)
                rc = vyre__sqlite_abort(&idx->sql, st, src, "delete from", err);
            else
                sqlite3_reset(st);
        }
        if (!rc)
            rc = vyre__sqlite_commit(&idx->sql, "delete from", err);
    }
    pthread_mutex_unlock(&idx->mu);
    return rc;
}

int vyre__index_totals(vyre__index *idx, uint64_t *rows, uint64_t *bytes, vyre_error *err)
{
    if (!idx)
        return vyre__fail(err, VYRE_EINVAL, NULL, "NULL index to vyre__index_totals");
    pthread_mutex_lock(&idx->mu);
    sqlite3_stmt *st = idx->st[ST_TOTALS];
    int src = vyre__sqlite_step_retry(st, VYRE_INDEX_BUSY_TIMEOUT_MS);
    int rc = VYRE_OK;
    if (src == SQLITE_ROW) {
        if (rows)
            *rows = (uint64_t)sqlite3_column_int64(st, 0);
        if (bytes)
            *bytes = (uint64_t)sqlite3_column_int64(st, 1);
    } else {
        rc = vyre__sqlite_fail(&idx->sql, src == SQLITE_DONE ? SQLITE_ERROR : src, "read", err);
    }
    sqlite3_reset(st);
    pthread_mutex_unlock(&idx->mu);
    return rc;
}

/* ---- the key's inputs (schema 4) ---------------------------------------------- */

int vyre__index_set_inputs(vyre__index *idx, const vyre_key *key, const vyre_key_inputs *in,
                           vyre_error *err)
{
    if (!idx || !key || !in || in->options_len > sizeof in->options)
        return vyre__fail(err, VYRE_EINVAL, NULL, "bad argument to vyre__index_set_inputs");
    if (idx->readonly)
        return fail_readonly(idx, err);
    if (in->features > (uint64_t)INT64_MAX)
        return vyre__fail(err, VYRE_ERANGE, NULL, "features 0x%" PRIx64 " do not fit the index",
                          in->features);
    static const char sql[] =
        "UPDATE blobs SET inputs = 1, backend = ?2, features = ?3, n_options = ?4, options = ?5, "
        "entry = ?6, source_kind = ?7, source_sha256 = ?8 WHERE key = ?1";
    pthread_mutex_lock(&idx->mu);
    sqlite3_stmt *st = NULL;
    int rc = vyre__sqlite_begin(&idx->sql, "write to", err);
    if (!rc) {
        int src = sqlite3_prepare_v2(idx->sql.db, sql, -1, &st, NULL);
        if (src == SQLITE_OK) {
            bind_key(st, 1, key);
            sqlite3_bind_text(st, 2, in->backend, -1, SQLITE_STATIC);
            sqlite3_bind_int64(st, 3, (sqlite3_int64)in->features);
            sqlite3_bind_int64(st, 4, in->n_options);
            sqlite3_bind_blob(st, 5, in->options, (int)in->options_len, SQLITE_STATIC);
            sqlite3_bind_text(st, 6, in->entry, -1, SQLITE_STATIC);
            sqlite3_bind_int64(st, 7, in->source_kind);
            sqlite3_bind_text(st, 8, in->source_sha256, -1, SQLITE_STATIC);
            src = sqlite3_step(st);
        }
        if (src != SQLITE_DONE) {
            rc = vyre__sqlite_fail(&idx->sql, src, "write to", err);
            vyre__sqlite_rollback(&idx->sql);
        } else {
            rc = vyre__sqlite_commit(&idx->sql, "write to", err);
        }
    }
    sqlite3_finalize(st);
    pthread_mutex_unlock(&idx->mu);
    return rc;
}

/* Copies column col of st (text or blob) into out[size]; 0, or -1 when it
 * does not fit (a damaged or foreign row). */
static int column_bytes(sqlite3_stmt *st, int col, char *out, size_t size, uint32_t *len)
{
    const void *p = sqlite3_column_blob(st, col);
    int n = sqlite3_column_bytes(st, col);
    if (n < 0 || (size_t)n >= size)
        return -1;
    if (n)
        memcpy(out, p, (size_t)n);
    out[n] = '\0';
    if (len)
        *len = (uint32_t)n;
    return 0;
}

/* The input columns of the row st stands on into *out; 0 or -1 (bad). */
static int read_inputs(sqlite3_stmt *st, vyre_key_inputs *out, int *recorded)
{
    *recorded = sqlite3_column_int(st, 0) == 1;
    if (!*recorded)
        return 0;
    sqlite3_int64 features = sqlite3_column_int64(st, 2), n = sqlite3_column_int64(st, 3);
    sqlite3_int64 kind = sqlite3_column_int64(st, 6), kv = sqlite3_column_int64(st, 8);
    if (features < 0 || n < 0 || n > VYRE_KEY_OPTIONS_MAX || kind < 0 || kind > UINT32_MAX ||
        kv < 0 || kv > UINT32_MAX)
        return -1;
    out->features = (uint64_t)features;
    out->n_options = (uint32_t)n;
    out->source_kind = (uint32_t)kind;
    out->key_version = (uint32_t)kv;
    if (column_bytes(st, 1, out->backend, sizeof out->backend, NULL) ||
        column_bytes(st, 4, out->options, sizeof out->options, &out->options_len) ||
        column_bytes(st, 5, out->entry, sizeof out->entry, NULL) ||
        column_bytes(st, 7, out->source_sha256, sizeof out->source_sha256, NULL) ||
        column_bytes(st, 9, out->toolchain, sizeof out->toolchain, NULL) ||
        column_bytes(st, 10, out->arch, sizeof out->arch, NULL))
        return -1;
    /* The options are n NUL-terminated strings, exactly. */
    uint32_t seen = 0;
    for (uint32_t i = 0; i < out->options_len; i++)
        seen += out->options[i] == '\0';
    return seen == out->n_options &&
                   (out->options_len == 0 || out->options[out->options_len - 1] == '\0')
               ? 0
               : -1;
}

int vyre__index_get_inputs(vyre__index *idx, const vyre_key *key, vyre_key_inputs *out,
                           int *recorded, vyre_error *err)
{
    if (!idx || !key || !out || !recorded)
        return vyre__fail(err, VYRE_EINVAL, NULL, "NULL argument to vyre__index_get_inputs");
    memset(out, 0, sizeof *out);
    *recorded = 0;
    if (idx->schema < 4)
        return VYRE_OK; /* an older index opened read-only: nothing recorded */
    static const char sql[] = "SELECT inputs, backend, features, n_options, options, entry, "
                              "source_kind, source_sha256, key_version, toolchain, arch "
                              "FROM blobs WHERE key = ?1";
    char hex[VYRE_KEY_HEX_LEN + 1];
    vyre_key_to_hex(key, hex);
    pthread_mutex_lock(&idx->mu);
    sqlite3_stmt *st = NULL;
    int rc = VYRE_OK;
    int src = sqlite3_prepare_v2(idx->sql.db, sql, -1, &st, NULL);
    if (src == SQLITE_OK) {
        bind_key(st, 1, key);
        src = vyre__sqlite_step_retry(st, VYRE_INDEX_BUSY_TIMEOUT_MS);
    }
    if (src == SQLITE_ROW) {
        if (read_inputs(st, out, recorded))
            rc = vyre__remedy(err, VYRE_REMEDY_CACHE_REINDEX,
                              vyre__fail(err, VYRE_ECORRUPT, HINT_REINDEX,
                                         "index '%s' has damaged inputs for key '%s'", idx->path,
                                         hex));
    } else if (src == SQLITE_DONE) {
        rc =
            vyre__fail(err, VYRE_ENOENT, NULL, "no row for key '%s' in index '%s'", hex, idx->path);
    } else {
        rc = vyre__sqlite_fail(&idx->sql, src, "read", err);
    }
    sqlite3_finalize(st);
    pthread_mutex_unlock(&idx->mu);
    if (rc || !*recorded)
        memset(out, 0, sizeof *out);
    return rc;
}

/* One integer from meta (*found 0 when the row is absent). Lock held. */
static int meta_int_locked(vyre__index *idx, const char *name, sqlite3_int64 *v, int *found,
                           vyre_error *err)
{
    sqlite3_stmt *st = NULL;
    *found = 0;
    int src =
        sqlite3_prepare_v2(idx->sql.db, "SELECT value FROM meta WHERE name = ?1", -1, &st, NULL);
    int rc = VYRE_OK;
    if (src == SQLITE_OK) {
        sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
        src = vyre__sqlite_step_retry(st, VYRE_INDEX_BUSY_TIMEOUT_MS);
        if (src == SQLITE_ROW) {
            *v = sqlite3_column_int64(st, 0);
            *found = 1;
        } else if (src != SQLITE_DONE) {
            rc = vyre__sqlite_fail(&idx->sql, src, "read", err);
        }
    } else {
        rc = vyre__sqlite_fail(&idx->sql, src, "read", err);
    }
    sqlite3_finalize(st);
    return rc;
}

int vyre__index_total_bytes(vyre__index *idx, uint64_t *bytes, vyre_error *err)
{
    if (!idx || !bytes)
        return vyre__fail(err, VYRE_EINVAL, NULL, "NULL argument to vyre__index_total_bytes");
    pthread_mutex_lock(&idx->mu);
    sqlite3_int64 v = 0;
    int found = 0;
    int rc = meta_int_locked(idx, "total_bytes", &v, &found, err);
    pthread_mutex_unlock(&idx->mu);
    if (rc)
        return rc;
    if (!found)
        return vyre__index_totals(idx, NULL, bytes, err);
    *bytes = v > 0 ? (uint64_t)v : 0;
    return VYRE_OK;
}

int vyre__index_stats_zeroed(vyre__index *idx, int64_t *ns, vyre_error *err)
{
    if (!idx || !ns)
        return vyre__fail(err, VYRE_EINVAL, NULL, "NULL argument to vyre__index_stats_zeroed");
    pthread_mutex_lock(&idx->mu);
    sqlite3_int64 v = 0;
    int found = 0;
    int rc = meta_int_locked(idx, "stats_zeroed_ns", &v, &found, err);
    pthread_mutex_unlock(&idx->mu);
    *ns = found ? (int64_t)v : 0;
    return rc;
}

int vyre__index_zero_stats(vyre__index *idx, int64_t now_unix_ns, vyre_error *err)
{
    if (!idx)
        return vyre__fail(err, VYRE_EINVAL, NULL, "NULL index to vyre__index_zero_stats");
    if (idx->readonly)
        return fail_readonly(idx, err);
    pthread_mutex_lock(&idx->mu);
    /* Pending last-use times still count for LRU: write them, then zero. */
    int rc = flush_locked(idx, err);
    if (!rc)
        rc = vyre__sqlite_begin(&idx->sql, "zero the statistics of", err);
    if (!rc) {
        static const char *const sql[] = {
            "UPDATE blobs SET hits = 0 WHERE hits <> 0",
            "INSERT INTO meta (name, value) VALUES ('misses', 0) "
            "ON CONFLICT (name) DO UPDATE SET value = 0",
            "INSERT INTO meta (name, value) VALUES ('stats_zeroed_ns', ?1) "
            "ON CONFLICT (name) DO UPDATE SET value = excluded.value",
        };
        for (size_t i = 0; i < VYRE_ARRAY_SIZE(sql) && !rc; i++) {
            sqlite3_stmt *st = NULL;
            int src = sqlite3_prepare_v2(idx->sql.db, sql[i], -1, &st, NULL);
            if (src == SQLITE_OK) {
                if (i == 2)
                    sqlite3_bind_int64(st, 1, now_unix_ns);
                src = sqlite3_step(st);
            }
            if (src != SQLITE_DONE)
                rc = vyre__sqlite_abort(&idx->sql, st, src, "zero the statistics of", err);
            sqlite3_finalize(st);
        }
        if (!rc)
            rc = vyre__sqlite_commit(&idx->sql, "zero the statistics of", err);
    }
    pthread_mutex_unlock(&idx->mu);
    return rc;
}

int vyre__index_check(vyre__index *idx, vyre_error *err)
{
    if (!idx)
        return vyre__fail(err, VYRE_EINVAL, NULL, "NULL index to vyre__index_check");
    char result[256];
    pthread_mutex_lock(&idx->mu);
    int src = vyre__sqlite_query_value(idx->sql.db, "PRAGMA quick_check(1)",
                                       VYRE_INDEX_BUSY_TIMEOUT_MS, NULL, result, sizeof result);
    int rc = src == SQLITE_OK ? VYRE_OK : vyre__sqlite_fail(&idx->sql, src, "check", err);
    /* Open checked the schema objects; another process may have added one
     * since. */
    if (rc == VYRE_OK && strcmp(result, "ok") == 0)
        rc = vyre__sqlite_check_objects(&idx->sql, err);
    pthread_mutex_unlock(&idx->mu);
    if (rc)
        return rc;
    if (strcmp(result, "ok") != 0)
        return vyre__remedy(err, VYRE_REMEDY_CACHE_REINDEX,
                            vyre__fail(err, VYRE_ECORRUPT, HINT_REINDEX,
                                       "index '%s' is damaged: %s", idx->path, result));
    return VYRE_OK;
}

/* ---- named counters in meta ---------------------------------------------- */

int vyre__index_counters_add(vyre__index *idx, const char *const *names, const uint64_t *deltas,
                             size_t n, vyre_error *err)
{
    if (!idx || (n && (!names || !deltas)))
        return vyre__fail(err, VYRE_EINVAL, NULL, "NULL argument to vyre__index_counters_add");
    if (idx->readonly || !n)
        return VYRE_OK;
    pthread_mutex_lock(&idx->mu);
    int rc = vyre__sqlite_begin(&idx->sql, "record counters in", err);
    sqlite3_stmt *st = NULL;
    if (rc == VYRE_OK) {
        int src = sqlite3_prepare_v2(idx->sql.db,
                                     "INSERT INTO meta (name, value) VALUES (?1, ?2) "
                                     "ON CONFLICT (name) DO UPDATE SET "
                                     "value = coalesce(value, 0) + excluded.value",
                                     -1, &st, NULL);
        for (size_t i = 0; src == SQLITE_OK && i < n; i++) {
            if (!deltas[i])
                continue;
            sqlite3_bind_text(st, 1, names[i], -1, SQLITE_TRANSIENT);
            sqlite3_bind_int64(
                st, 2, deltas[i] > (uint64_t)INT64_MAX ? INT64_MAX : (sqlite3_int64)deltas[i]);
            src = sqlite3_step(st);
            if (src == SQLITE_DONE) {
                sqlite3_reset(st);
                src = SQLITE_OK;
            }
        }
        if (src != SQLITE_OK)
            rc = vyre__sqlite_abort(&idx->sql, st, src, "record counters in", err);
        sqlite3_finalize(st);
        if (rc == VYRE_OK)
            rc = vyre__sqlite_commit(&idx->sql, "record counters in", err);
    }
    pthread_mutex_unlock(&idx->mu);
    return rc;
}

int vyre__index_counter_get(vyre__index *idx, const char *name, uint64_t *value, vyre_error *err)
{
    if (!idx || !name || !value)
        return vyre__fail(err, VYRE_EINVAL, NULL, "NULL argument to vyre__index_counter_get");
    *value = 0;
    pthread_mutex_lock(&idx->mu);
    sqlite3_stmt *st = NULL;
    int rc = VYRE_OK;
    int src =
        sqlite3_prepare_v2(idx->sql.db, "SELECT value FROM meta WHERE name = ?1", -1, &st, NULL);
    if (src == SQLITE_OK) {
        sqlite3_bind_text(st, 1, name, -1, SQLITE_TRANSIENT);
        src = sqlite3_step(st);
        if (src == SQLITE_ROW) {
            sqlite3_int64 v = sqlite3_column_int64(st, 0);
            *value = v > 0 ? (uint64_t)v : 0;
        } else if (src != SQLITE_DONE) {
            rc = vyre__sqlite_fail(&idx->sql, src, "read a counter of", err);
        }
    } else {
        rc = vyre__sqlite_fail(&idx->sql, src, "read a counter of", err);
    }
    sqlite3_finalize(st);
    pthread_mutex_unlock(&idx->mu);
    return rc;
}

/* The header holds "SQLite format 3\0" at 0 and the application_id,
 * big-endian, at 68 (sqlite.org/fileformat.html). */
int vyre__index_file_kind(int fd)
{
    unsigned char h[100];
    ssize_t n = pread(fd, h, sizeof h, 0);
    if (n < 0)
        return VYRE_INDEX_FILE_UNKNOWN;
    if (n == 0)
        return VYRE_INDEX_FILE_EMPTY;
    if ((size_t)n < sizeof h || memcmp(h, "SQLite format 3", 16) != 0)
        return VYRE_INDEX_FILE_NOT_DB;
    uint32_t id = (uint32_t)h[68] << 24 | (uint32_t)h[69] << 16 | (uint32_t)h[70] << 8 | h[71];
    return id == INDEX_APPLICATION_ID ? VYRE_INDEX_FILE_OURS : VYRE_INDEX_FILE_OTHER;
}
