/*
 * results.c - the results database and its timings writer (see
 * vyre/results.h; schema in db/results_v1.sql, embedded as vyre__sql_results_v1).
 *
 * Guarantees and the reasons for them:
 *   - The file is precious (it cannot be rebuilt, unlike the cache index):
 *     nothing here deletes, truncates or replaces it. Before anything is
 *     written (journal mode, schema) the schema state is read, which is
 *     where a file that is not a database fails (SQLITE_NOTADB), and
 *     checked: another program's database (foreign application_id, or
 *     tables without our user_version) and newer schemas are refused. A
 *     refused file is byte-for-byte what it was.
 *   - Opening, the schema check, migration (one BEGIN IMMEDIATE
 *     transaction with the user_version update, the state read again under
 *     the write lock) and transactions are base/sqlutil.c's, shared with
 *     the cache index.
 *   - WAL on local disks, the rollback journal on network filesystems
 *     (sqlutil's statfs table), chosen when the file is created and kept
 *     after; synchronous=FULL, since losing committed results is not
 *     acceptable here as it is for a rebuildable cache.
 *   - A writer never writes one row per record: rows collect in memory and
 *     go in one transaction per flush through one prepared statement.
 *   - One connection per vyre_results, opened SQLITE_OPEN_NOMUTEX and
 *     serialised by db->mu; a writer's queue has its own mutex, taken
 *     before db->mu (lock order: writer, then db).
 */
#include "vyre/results.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/fsutil.h"
#include "base/internal.h"
#include "base/sqlutil.h"
#include "bench/results_internal.h"

/* db/results_v1.sql and db/results_v2.sql, embedded by cmake/EmbedSql.cmake. */
extern const char vyre__sql_results_v1[];
extern const char vyre__sql_results_v2[];
extern const char vyre__sql_results_v3[];
extern const char vyre__sql_results_v4[];
extern const char vyre__sql_results_v5[];
extern const char vyre__sql_results_v6[];

/*
 * Schema steps: k_schema_steps[v] takes PRAGMA user_version v to v + 1.
 * Step 0 is db/results_v1.sql, the v1 schema; append a step (and bump
 * VYRE_RESULTS_SCHEMA_VERSION) for every later version, never edit an old
 * one. See the top of db/results_v1.sql for what a step may do.
 */
static const char *const k_schema_steps[] = {
    vyre__sql_results_v1, /* 0 -> 1 */
    vyre__sql_results_v2, /* 1 -> 2: runs, points, samples (the bench) */
    vyre__sql_results_v3, /* 2 -> 3: runs.pid_start, runs.boot_id (stale runs) */
    /* Steps are ordered by this list, not by their file names; a step is
     * never renumbered once it has landed. */
    vyre__sql_results_v4, /* 3 -> 4: points.batch_ns, kernel_ns, block_timeouts (views) */
    vyre__sql_results_v5, /* 4 -> 5: samples.round, points.rounds, points.round_noise */
    vyre__sql_results_v6, /* 5 -> 6: points.variant (run --vs) */
};
_Static_assert(VYRE_ARRAY_SIZE(k_schema_steps) == VYRE_RESULTS_SCHEMA_VERSION,
               "one schema step per version");

#define HINT_KEEP                                                                                  \
    "vyre never replaces a results file: move it away (or pass another path) to start a new one, " \
    "or restore it from a backup"

static const char k_insert_sql[] =
    "INSERT INTO timings (run_id, host, pid, session_ns, kind, name, domain, start_ns, end_ns, "
    "duration_ns, grid_x, grid_y, grid_z, block_x, block_y, block_z, stream, device, bytes, "
    "copy_kind, correlation, payload, created_ns) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, "
    "?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22, ?23)";

struct vyre_results {
    pthread_mutex_t mu;
    vyre__sqlite sql; /* the connection, its transactions and failures */
    sqlite3_stmt *st_insert;
    char path[]; /* as opened */
};

/* A queued row: the record and when it was queued. */
struct pending_row {
    vyre_activity a;
    int64_t created_ns;
};

struct vyre_results_writer {
    pthread_mutex_t mu;
    vyre_results *db;
    int64_t run_id; /* 0: NULL */
    int64_t pid;
    int64_t session_ns;
    char host[256];
    struct pending_row *rows;
    size_t n, cap;
    vyre_results_writer_stats st;
};

/* ---- errors ---------------------------------------------------------------- */

static const char *hint_for(int code)
{
    switch (code) {
    case VYRE_ENOSPC:
        return "free space on the filesystem holding the results database";
    case VYRE_EROFS:
        return "make the database file and its directory writable, or keep the database in a "
               "writable directory (XDG_DATA_HOME, or the tool's --db)";
    case VYRE_ECORRUPT:
        return HINT_KEEP;
    case VYRE_EBUSY:
        return "another process held the results database locked for too long; retry, and look "
               "for a hung vyre process if it persists";
    case VYRE_EPERM:
        return "check the permissions of the results database and of its directory";
    case VYRE_ENOENT:
        return "check that the directory of the results database exists";
    case VYRE_ENOMEM:
        return NULL;
    default:
        return "if it persists, check the file with: sqlite3 <file> 'PRAGMA integrity_check'";
    }
}

static int check_schema_state(const vyre__sqlite *c, const vyre__sqlite_schema *s, vyre_error *err)
{
    if ((s->application_id != 0 && s->application_id != VYRE_RESULTS_APPLICATION_ID) ||
        (s->user_version == 0 && s->objects > 0) ||
        (s->user_version > 0 && s->application_id != VYRE_RESULTS_APPLICATION_ID))
        return vyre__fail(err, VYRE_ECORRUPT, HINT_KEEP,
                          "'%s' is an SQLite database but not a vyre results database "
                          "(application_id 0x%llx, user_version %lld); it was left as it is",
                          c->path, (unsigned long long)s->application_id,
                          (long long)s->user_version);
    if (s->user_version < 0 || s->user_version > VYRE_RESULTS_SCHEMA_VERSION)
        return vyre__fail(err, VYRE_EVERSION,
                          "use the vyre-tools release that wrote it (or a newer one); the file "
                          "was left as it is",
                          "results database '%s' has schema version %lld, newer than the %d "
                          "this build supports",
                          c->path, (long long)s->user_version, VYRE_RESULTS_SCHEMA_VERSION);
    return VYRE_OK;
}

/* Stamps a new file with its creation time, inside the migration. */
static int stamp_created(vyre__sqlite *c, vyre_error *err)
{
    char sql[128];
    snprintf(sql, sizeof sql,
             "INSERT OR IGNORE INTO meta (name, value) VALUES ('created_ns', %" PRId64 ")",
             vyre__unix_ns());
    return vyre__sqlite_exec(c, sql, "upgrade", err);
}

/* The results database as a store: precious (never replaced, refused
 * files left as they were), durable, its journal mode kept once chosen. */
static const vyre__sqlite_store k_store = {
    .noun = "results database",
    .hint_for = hint_for,
    .corrupt_note = " (the file was left as it is)",
    .schema_note = "; it was left as it is",
    .busy_timeout_ms = VYRE_RESULTS_BUSY_TIMEOUT_MS,
    .schema_version = VYRE_RESULTS_SCHEMA_VERSION,
    .application_id = VYRE_RESULTS_APPLICATION_ID,
    .steps = k_schema_steps,
    .check = check_schema_state,
    .migrated = stamp_created,
};

static void destroy(vyre_results *db)
{
    sqlite3_finalize(db->st_insert);
    vyre__sqlite_close(&db->sql);
    pthread_mutex_destroy(&db->mu);
    free(db);
}

static int open_steps(vyre_results *db, vyre_error *err)
{
    int rc = vyre__sqlite_open(&db->sql, db->path, &k_store,
                               VYRE__SQLITE_JOURNAL_AT_CREATE | VYRE__SQLITE_DURABLE, err);
    if (rc)
        return rc;
    return vyre__sqlite_prepare(&db->sql, k_insert_sql, &db->st_insert, err);
}

/* A database to be created needs a directory we may write: say so, since
 * SQLite falls back to a read-only open and reports only "unable to open
 * database file" with the errno of that fallback (ENOENT). */
static int check_dir_writable(const char *path, vyre_error *err)
{
    char dir[4096];
    const char *slash = strrchr(path, '/');
    size_t len = !slash ? 0 : slash == path ? 1 : (size_t)(slash - path);
    if (len >= sizeof dir)
        return VYRE_OK; /* the open reports it */
    memcpy(dir, len ? path : ".", len ? len : 1);
    dir[len ? len : 1] = '\0';
    if (faccessat(AT_FDCWD, dir, W_OK | X_OK, AT_EACCESS) == 0 || errno == ENOENT)
        return VYRE_OK; /* ENOENT: the open reports it */
    int e = errno;
    const char *hint = "make the directory writable, or keep the database in a writable "
                       "directory (XDG_DATA_HOME, or the tool's --db)";
    if (e == EROFS)
        return vyre__fail(err, VYRE_EROFS, hint,
                          "cannot create results database '%s': '%s' is on a read-only file "
                          "system",
                          path, dir);
    return vyre__fail(err, e == EACCES || e == EPERM ? VYRE_EPERM : vyre__errno_code(e), hint,
                      "cannot create results database '%s': directory '%s' is not writable: %s",
                      path, dir, strerror(e));
}

/*
 * Before SQLite touches anything: the file and the files SQLite keeps next
 * to it (-wal, -journal, -shm) must not be symlinks or anything but regular
 * files. Through a planted link SQLite would write our results, or replay a
 * journal, into someone else's file. The open itself passes
 * SQLITE_OPEN_NOFOLLOW, so a link that appears after this check fails the
 * open; this check is what covers the sibling files and gives the message.
 */
static int check_paths(const char *path, vyre_error *err)
{
    static const char *const suffixes[] = {"", "-wal", "-journal", "-shm"};
    if (strcmp(path, ":memory:") == 0)
        return VYRE_OK;
    for (size_t i = 0; i < VYRE_ARRAY_SIZE(suffixes); i++) {
        char p[4200];
        if ((size_t)snprintf(p, sizeof p, "%s%s", path, suffixes[i]) >= sizeof p)
            return vyre__fail(err, VYRE_ETOOBIG, "pass a shorter path",
                              "results database path too long: '%s'", path);
        struct stat sb;
        if (lstat(p, &sb) != 0) {
            if (i == 0 && errno == ENOENT)
                return check_dir_writable(path, err);
            continue; /* missing (or unreachable: the open reports it) */
        }
        if (S_ISLNK(sb.st_mode))
            return vyre__fail(err, VYRE_EUNSAFE,
                              i == 0 ? "pass the real path of the database: vyre never opens "
                                       "its results through a symlink"
                                     : "remove the symlink: SQLite creates this file itself, "
                                       "and vyre never writes through a link",
                              "results database %s'%s' is a symlink", i == 0 ? "" : "file ", p);
        if (!S_ISREG(sb.st_mode))
            return vyre__fail(
                err, i == 0 ? VYRE_EEXIST : VYRE_EUNSAFE,
                i == 0 ? "pass the path of a file" : "remove it: SQLite creates this file itself",
                "results database %s'%s' is not a regular file", i == 0 ? "" : "file ", p);
    }
    return VYRE_OK;
}

int vyre_results_default_path(char *buf, size_t size, vyre_error *err)
{
    if (!buf || !size)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre_results_default_path: no buffer");
    return vyre__xdg_path("XDG_DATA_HOME", ".local/share", "vyre/results.sqlite3", buf, size, err);
}

int vyre_results_open(const char *path, vyre_results **out, vyre_error *err)
{
    if (out)
        *out = NULL;
    if (!out || (path && !*path))
        return vyre__fail(err, VYRE_EINVAL, "pass a path, or NULL for the default",
                          "bad arguments to open the results database");
    char def[4096];
    if (!path) {
        int rc = vyre_results_default_path(def, sizeof def, err);
        if (rc)
            return rc;
        char *slash = strrchr(def, '/');
        *slash = '\0';
        rc = vyre__mkdirs(def, 0700, err);
        *slash = '/';
        if (rc)
            return rc;
        path = def;
    }
    int prc = check_paths(path, err);
    if (prc)
        return prc;
    size_t len = strlen(path);
    vyre_results *db = calloc(1, sizeof *db + len + 1);
    if (!db)
        return vyre__fail(err, VYRE_ENOMEM, NULL, "out of memory opening '%s'", path);
    memcpy(db->path, path, len + 1);
    if (pthread_mutex_init(&db->mu, NULL) != 0) {
        free(db);
        return vyre__fail(err, VYRE_ENOMEM, NULL, "cannot create a mutex for '%s'", path);
    }
    int rc = open_steps(db, err);
    if (rc) {
        destroy(db);
        return rc;
    }
    *out = db;
    return VYRE_OK;
}

void vyre_results_close(vyre_results *db)
{
    if (db)
        destroy(db);
}

const char *vyre_results_path(const vyre_results *db)
{
    return db ? db->path : NULL;
}

/* ---- the timings writer ----------------------------------------------------- */

int vyre_results_writer_new(vyre_results *db, int64_t run_id, vyre_results_writer **out,
                            vyre_error *err)
{
    if (out)
        *out = NULL;
    if (!db || !out || run_id < 0)
        return vyre__fail(err, VYRE_EINVAL, "pass an open database and a run id >= 0",
                          "bad arguments to create a timings writer");
    vyre_results_writer *w = calloc(1, sizeof *w);
    if (!w)
        return vyre__fail(err, VYRE_ENOMEM, NULL, "out of memory creating a timings writer");
    if (pthread_mutex_init(&w->mu, NULL) != 0) {
        free(w);
        return vyre__fail(err, VYRE_ENOMEM, NULL, "cannot create a mutex for a timings writer");
    }
    w->db = db;
    w->run_id = run_id;
    w->pid = (int64_t)getpid();
    w->session_ns = vyre__unix_ns();
    if (gethostname(w->host, sizeof w->host) != 0)
        vyre__strlcpy(w->host, "unknown", sizeof w->host);
    w->host[sizeof w->host - 1] = '\0';
    *out = w;
    return VYRE_OK;
}

static void bind_u32_or_null(sqlite3_stmt *st, int i, int applies, uint32_t v)
{
    if (applies)
        sqlite3_bind_int64(st, i, (sqlite3_int64)v);
    else
        sqlite3_bind_null(st, i);
}

static void bind_row(const vyre_results_writer *w, sqlite3_stmt *st, const struct pending_row *r)
{
    const vyre_activity *a = &r->a;
    int kernel = a->kind == VYRE_ACTIVITY_KERNEL;
    int copy = a->kind == VYRE_ACTIVITY_MEMCPY;
    int device_op = kernel || copy || a->kind == VYRE_ACTIVITY_MEMSET;
    int nvtx = a->kind == VYRE_ACTIVITY_MARKER || a->kind == VYRE_ACTIVITY_RANGE;
    if (w->run_id > 0)
        sqlite3_bind_int64(st, 1, w->run_id);
    else
        sqlite3_bind_null(st, 1);
    sqlite3_bind_text(st, 2, w->host, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 3, w->pid);
    sqlite3_bind_int64(st, 4, w->session_ns);
    sqlite3_bind_text(st, 5, vyre_activity_kind_name(a->kind), -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 6, a->name, (int)strnlen(a->name, sizeof a->name), SQLITE_STATIC);
    if (nvtx)
        sqlite3_bind_text(st, 7, a->domain, (int)strnlen(a->domain, sizeof a->domain),
                          SQLITE_STATIC);
    else
        sqlite3_bind_null(st, 7);
    sqlite3_bind_int64(st, 8, (sqlite3_int64)a->start_ns);
    sqlite3_bind_int64(st, 9, (sqlite3_int64)a->end_ns);
    sqlite3_bind_int64(st, 10,
                       a->end_ns > a->start_ns ? (sqlite3_int64)(a->end_ns - a->start_ns) : 0);
    for (int d = 0; d < 3; d++) {
        bind_u32_or_null(st, 11 + d, kernel, a->grid[d]);
        bind_u32_or_null(st, 14 + d, kernel, a->block[d]);
    }
    bind_u32_or_null(st, 17, device_op, a->stream_id);
    bind_u32_or_null(st, 18, device_op, a->device_id);
    if (copy || a->kind == VYRE_ACTIVITY_MEMSET)
        sqlite3_bind_int64(st, 19, (sqlite3_int64)a->bytes);
    else
        sqlite3_bind_null(st, 19);
    if (copy)
        sqlite3_bind_text(st, 20, vyre_copy_kind_name(a->copy_kind), -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(st, 20);
    bind_u32_or_null(st, 21, a->correlation_id != 0, a->correlation_id);
    if (a->has_payload && a->payload <= (uint64_t)INT64_MAX)
        sqlite3_bind_int64(st, 22, (sqlite3_int64)a->payload);
    else
        sqlite3_bind_null(st, 22);
    sqlite3_bind_int64(st, 23, r->created_ns);
}

/* Under w->mu. */
static int flush_locked(vyre_results_writer *w, vyre_error *err)
{
    if (!w->n)
        return VYRE_OK;
    vyre_results *db = w->db;
    pthread_mutex_lock(&db->mu);
    int rc = vyre__sqlite_begin(&db->sql, "write timings to", err);
    for (size_t i = 0; !rc && i < w->n; i++) {
        bind_row(w, db->st_insert, &w->rows[i]);
        int s = sqlite3_step(db->st_insert);
        if (s != SQLITE_DONE)
            rc = vyre__sqlite_fail(&db->sql, s, "write timings to", err);
        sqlite3_reset(db->st_insert);
        sqlite3_clear_bindings(db->st_insert);
    }
    if (!rc)
        rc = vyre__sqlite_commit(&db->sql, "commit timings to", err);
    if (rc)
        vyre__sqlite_rollback(&db->sql);
    pthread_mutex_unlock(&db->mu);
    if (rc) {
        w->st.flush_failures++;
        return rc;
    }
    w->st.rows_written += w->n;
    w->st.flushes++;
    w->n = 0;
    return VYRE_OK;
}

static int fits_i64(const vyre_activity *a)
{
    return a->start_ns <= (uint64_t)INT64_MAX && a->end_ns <= (uint64_t)INT64_MAX &&
           a->bytes <= (uint64_t)INT64_MAX;
}

static int add_locked(vyre_results_writer *w, const vyre_activity *recs, size_t n, vyre_error *err)
{
    for (size_t i = 0; i < n; i++)
        if (!fits_i64(&recs[i])) {
            w->st.rows_dropped += n;
            return vyre__fail(err, VYRE_ERANGE, "pass times and sizes below 2^63",
                              "timings record %zu ('%.64s') has a value above INT64_MAX", i,
                              recs[i].name);
        }
    int64_t now = vyre__unix_ns();
    size_t kept = 0;
    for (size_t i = 0; i < n; i++) {
        if (recs[i].kind == VYRE_ACTIVITY_NONE)
            continue;
        if (w->n == w->cap) {
            if (w->cap >= VYRE_RESULTS_PENDING_MAX) {
                w->st.rows_dropped++;
                continue;
            }
            size_t cap = w->cap ? w->cap * 2 : 256;
            if (cap > VYRE_RESULTS_PENDING_MAX)
                cap = VYRE_RESULTS_PENDING_MAX;
            struct pending_row *p = realloc(w->rows, cap * sizeof *p);
            if (!p) {
                w->st.rows_dropped += n - i;
                return vyre__fail(err, VYRE_ENOMEM, NULL,
                                  "out of memory queueing timings rows (%zu queued)", w->n);
            }
            w->rows = p;
            w->cap = cap;
        }
        w->rows[w->n].a = recs[i];
        w->rows[w->n].created_ns = now;
        w->n++;
        kept++;
    }
    w->st.rows_added += kept;
    if (w->n >= VYRE_RESULTS_BATCH)
        return flush_locked(w, err);
    return VYRE_OK;
}

int vyre_results_writer_add(vyre_results_writer *w, const vyre_activity *recs, size_t n,
                            vyre_error *err)
{
    if (!w || (!recs && n))
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre_results_writer_add: NULL argument");
    pthread_mutex_lock(&w->mu);
    int rc = add_locked(w, recs, n, err);
    pthread_mutex_unlock(&w->mu);
    return rc;
}

int vyre_results_writer_flush(vyre_results_writer *w, vyre_error *err)
{
    if (!w)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre_results_writer_flush: NULL writer");
    pthread_mutex_lock(&w->mu);
    int rc = flush_locked(w, err);
    pthread_mutex_unlock(&w->mu);
    return rc;
}

void vyre_results_writer_sink(const vyre_activity *recs, size_t n, void *writer)
{
    vyre_results_writer *w = writer;
    if (!w || !recs)
        return;
    vyre_error e;
    vyre_error_clear(&e);
    pthread_mutex_lock(&w->mu);
    int rc = add_locked(w, recs, n, &e);
    if (rc) {
        w->st.last_error = rc;
        vyre__strlcpy(w->st.last_message, e.message, sizeof w->st.last_message);
    }
    pthread_mutex_unlock(&w->mu);
}

void vyre_results_writer_stats_get(vyre_results_writer *w, vyre_results_writer_stats *out)
{
    if (!out)
        return;
    if (!w) {
        memset(out, 0, sizeof *out);
        return;
    }
    pthread_mutex_lock(&w->mu);
    *out = w->st;
    out->rows_pending = w->n;
    pthread_mutex_unlock(&w->mu);
}

void vyre_results_writer_free(vyre_results_writer *w)
{
    if (!w)
        return;
    pthread_mutex_lock(&w->mu);
    flush_locked(w, NULL);
    pthread_mutex_unlock(&w->mu);
    pthread_mutex_destroy(&w->mu);
    free(w->rows);
    free(w);
}

/* ---- for the bench module (results_internal.h) ----------------------------- */

sqlite3 *vyre__results_sqlite(vyre_results *db)
{
    return db->sql.db;
}

void vyre__results_lock(vyre_results *db)
{
    pthread_mutex_lock(&db->mu);
}

void vyre__results_unlock(vyre_results *db)
{
    pthread_mutex_unlock(&db->mu);
}

int vyre__results_begin(vyre_results *db, const char *what, vyre_error *err)
{
    return vyre__sqlite_begin(&db->sql, what, err);
}

int vyre__results_commit(vyre_results *db, const char *what, vyre_error *err)
{
    return vyre__sqlite_commit(&db->sql, what, err);
}

void vyre__results_rollback(vyre_results *db)
{
    vyre__sqlite_rollback(&db->sql);
}

int vyre__results_fail(vyre_results *db, int sqlite_rc, const char *what, vyre_error *err)
{
    return vyre__sqlite_fail(&db->sql, sqlite_rc, what, err);
}

int vyre__results_step(sqlite3_stmt *st)
{
    return vyre__sqlite_step_retry(st, VYRE_RESULTS_BUSY_TIMEOUT_MS);
}
