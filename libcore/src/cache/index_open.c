/*
 * index_open.c - the index file and the handle on it (see index.h).
 *
 * Owns the file's schema and rules (opening, journal mode, migration and
 * transactions are base/sqlutil.c's, shared with the results database):
 * the schema steps, the statements prepared at open, telling our index
 * from another file kept under its name, the integrity check, and closing.
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
 *   - A file that is not our index is never modified: the schema state is
 *     read (which is where a garbage file fails, SQLITE_NOTADB) and checked
 *     before the journal mode is set or anything is created. Damage found
 *     later by any statement is VYRE_ECORRUPT with the reindex hint; a full
 *     PRAGMA quick_check is vyre__index_check (verify), not part of open,
 *     so that opening stays cheap on a large cache.
 *   - Close writes pending hits (best effort: they are statistics).
 */
#include "cache/index.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/internal.h"

/* db/cache_v1.sql, embedded by cmake/EmbedSql.cmake. */
extern const char vyre__sql_cache_v1[];
extern const char vyre__sql_cache_v2[];
extern const char vyre__sql_cache_v3[];
extern const char vyre__sql_cache_v4[];
extern const char vyre__sql_cache_v5[];

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
    vyre__sql_cache_v5, /* 4 -> 5: disk_size (st_blocks * 512), what total_bytes sums */
};
_Static_assert(VYRE_ARRAY_SIZE(k_schema_steps) == VYRE_INDEX_SCHEMA_VERSION,
               "one schema step per version");

#define ROW_COLUMNS_BASE                                                                           \
    "key, kind, arch, toolchain, raw_size, stored_size, file_size, created_ns, last_access_ns, "   \
    "hits, compile_ns, key_version, source, n_kernels, kernels"
#define ROW_COLUMNS ROW_COLUMNS_BASE ", disk_size"
/* An index before schema 5 (opened read-only, so never migrated) has no
 * disk_size: its rows read file_size rounded up to 4 KiB, as the migration
 * fills it. */
#define DISK_SIZE_ESTIMATE "(file_size + 4095) / 4096 * 4096"
#define ROW_COLUMNS_V4     ROW_COLUMNS_BASE ", " DISK_SIZE_ESTIMATE
/* ?12 is the upsert's keep-usage flag. */
#define ROW_VALUES_BASE "?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?13, ?14, ?15, ?16"
#define ROW_VALUES      ROW_VALUES_BASE ", ?17"
#define SET_HEADER_COLUMNS_BASE                                                                    \
    "kind = excluded.kind, arch = excluded.arch, toolchain = excluded.toolchain, "                 \
    "raw_size = excluded.raw_size, stored_size = excluded.stored_size, "                           \
    "file_size = excluded.file_size, created_ns = excluded.created_ns, "                           \
    "compile_ns = excluded.compile_ns, key_version = excluded.key_version, "                       \
    "source = excluded.source, n_kernels = excluded.n_kernels, kernels = excluded.kernels"
#define SET_HEADER_COLUMNS SET_HEADER_COLUMNS_BASE ", disk_size = excluded.disk_size"
#define UPSERT_SQL(columns, values, set)                                                           \
    "INSERT INTO blobs (" columns ") VALUES (" values ") "                                         \
    "ON CONFLICT (key) DO UPDATE SET " set ", "                                                    \
    "last_access_ns = CASE WHEN ?12 THEN blobs.last_access_ns "                                    \
    "ELSE excluded.last_access_ns END, "                                                           \
    "hits = CASE WHEN ?12 THEN blobs.hits ELSE excluded.hits END"
#define REINDEX_UPSERT_SQL(columns, values, set)                                                   \
    "INSERT INTO blobs (" columns ") VALUES (" values ") ON CONFLICT (key) DO UPDATE SET " set
#define LRU_PAGE_SQL(columns)                                                                      \
    "SELECT " columns " FROM blobs "                                                               \
    "WHERE (last_access_ns, created_ns, key) > (?1, ?2, ?3) "                                      \
    "ORDER BY last_access_ns, created_ns, key LIMIT ?4"

static const char *const k_sql[INDEX_ST_COUNT] = {
    [INDEX_ST_GET] = "SELECT " ROW_COLUMNS " FROM blobs WHERE key = ?1",
    /* ?12 true: keep the usage columns of an existing row. */
    [INDEX_ST_UPSERT] = UPSERT_SQL(ROW_COLUMNS, ROW_VALUES, SET_HEADER_COLUMNS),
    [INDEX_ST_REINDEX_UPSERT] = REINDEX_UPSERT_SQL(ROW_COLUMNS, ROW_VALUES, SET_HEADER_COLUMNS),
    [INDEX_ST_DELETE] = "DELETE FROM blobs WHERE key = ?1",
    [INDEX_ST_HIT] = "UPDATE blobs SET hits = hits + ?2, last_access_ns = max(last_access_ns, ?3) "
                     "WHERE key = ?1",
    /* Keyset pagination in LRU order: walks index blobs_lru, no sort. */
    [INDEX_ST_LRU_PAGE] = LRU_PAGE_SQL(ROW_COLUMNS),
    [INDEX_ST_KEYS] = "SELECT key FROM blobs",
    [INDEX_ST_TOTALS] = "SELECT count(*), coalesce(sum(disk_size), 0) FROM blobs",
};

/* The statements that differ on an index of schema 2 to 4 opened read-only
 * (NULL: as k_sql). Its upserts are prepared but never run. */
static const char *const k_sql_v4[INDEX_ST_COUNT] = {
    [INDEX_ST_GET] = "SELECT " ROW_COLUMNS_V4 " FROM blobs WHERE key = ?1",
    [INDEX_ST_UPSERT] = UPSERT_SQL(ROW_COLUMNS_BASE, ROW_VALUES_BASE, SET_HEADER_COLUMNS_BASE),
    [INDEX_ST_REINDEX_UPSERT] =
        REINDEX_UPSERT_SQL(ROW_COLUMNS_BASE, ROW_VALUES_BASE, SET_HEADER_COLUMNS_BASE),
    [INDEX_ST_LRU_PAGE] = LRU_PAGE_SQL(ROW_COLUMNS_V4),
    [INDEX_ST_TOTALS] = "SELECT count(*), coalesce(sum(" DISK_SIZE_ESTIMATE "), 0) FROM blobs",
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
        return INDEX_HINT_REINDEX;
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
        return "if it persists, " INDEX_HINT_REINDEX;
    }
}

int vyre__index_fail_readonly(const vyre__index *idx, vyre_error *err)
{
    return vyre__fail(err, VYRE_EROFS,
                      "run a command that writes the cache, which opens the index read-write",
                      "index '%s' was opened read-only", idx->path);
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
                       "move the file away and " INDEX_HINT_REINDEX " (which creates a new index)",
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
    for (int i = 0; i < INDEX_ST_COUNT; i++) {
        const char *sql = idx->schema < 5 && k_sql_v4[i] ? k_sql_v4[i] : k_sql[i];
        int rc = vyre__sqlite_prepare(&idx->sql, sql, &idx->st[i], err);
        if (rc)
            return rc;
    }
    return VYRE_OK;
}

static void destroy(vyre__index *idx)
{
    for (int i = 0; i < INDEX_ST_COUNT; i++)
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
        vyre__index_flush_locked(idx, NULL); /* best effort: hits are statistics */
    pthread_mutex_unlock(&idx->mu);
    destroy(idx);
}

int vyre__index_journal(const vyre__index *idx)
{
    return idx->sql.journal;
}

/* ---- checks of the file ------------------------------------------------ */

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
                            vyre__fail(err, VYRE_ECORRUPT, INDEX_HINT_REINDEX,
                                       "index '%s' is damaged: %s", idx->path, result));
    return VYRE_OK;
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
