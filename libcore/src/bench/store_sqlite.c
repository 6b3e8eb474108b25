/*
 * store_sqlite.c - the results store on a local SQLite file (store.h's
 * operations table over base/sqlutil.c): the default store.
 *
 * The file is precious: before SQLite touches it, the path and the files
 * SQLite keeps beside it are checked (no symlink, nothing but regular
 * files), and the schema state is read and checked before anything is
 * written, so a refused file is byte-for-byte what it was. WAL on local
 * disks, the rollback journal on network filesystems, chosen when the
 * file is created; synchronous=FULL (losing committed results is not
 * acceptable as it is for a rebuildable cache). Statements that find the
 * file busy are retried up to VYRE_RESULTS_BUSY_TIMEOUT_MS.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/internal.h"
#include "base/sqlutil.h"
#include "bench/results_internal.h"
#include "bench/store.h"

#define HINT_KEEP                                                                                  \
    "vyre never replaces a results file: move it away (or pass another path) to start a new one, " \
    "or restore it from a backup"

typedef struct sqlite_store {
    vyre__store base;
    vyre__sqlite sql;
    char path[]; /* vyre__sqlite keeps a pointer to it */
} sqlite_store;

typedef struct sqlite_stmt {
    vyre__stmt base;
    sqlite_store *s;
    sqlite3_stmt *st;
} sqlite_stmt;

/* ---- opening ------------------------------------------------------------------ */

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
    .steps = vyre__results_schema_steps,
    .check = check_schema_state,
    .migrated = stamp_created,
};

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

/* ---- statements ------------------------------------------------------------------ */

static const vyre__store_ops k_ops;

static int sq_prepare(vyre__store *base, const char *sql, vyre__stmt **out, vyre_error *err)
{
    sqlite_store *s = (sqlite_store *)base;
    *out = NULL;
    sqlite_stmt *st = calloc(1, sizeof *st);
    if (!st)
        return vyre__fail(err, VYRE_ENOMEM, NULL, "out of memory preparing a statement");
    st->base.ops = &k_ops;
    st->s = s;
    int rc = sqlite3_prepare_v2(s->sql.db, sql, -1, &st->st, NULL);
    if (rc != SQLITE_OK) {
        int code = vyre__sqlite_fail(&s->sql, rc, "read", err);
        sqlite3_finalize(st->st);
        free(st);
        return code;
    }
    *out = &st->base;
    return VYRE_OK;
}

static sqlite3_stmt *raw(vyre__stmt *st)
{
    return ((sqlite_stmt *)st)->st;
}

static void sq_bind_int64(vyre__stmt *st, int i, int64_t v)
{
    sqlite3_bind_int64(raw(st), i, (sqlite3_int64)v);
}

static void sq_bind_double(vyre__stmt *st, int i, double v)
{
    sqlite3_bind_double(raw(st), i, v);
}

static void sq_bind_text(vyre__stmt *st, int i, const char *z, size_t len)
{
    sqlite3_bind_text(raw(st), i, z, (int)len, SQLITE_TRANSIENT);
}

static void sq_bind_null(vyre__stmt *st, int i)
{
    sqlite3_bind_null(raw(st), i);
}

static int sq_step(vyre__stmt *base, const char *what, vyre_error *err)
{
    sqlite_stmt *st = (sqlite_stmt *)base;
    int rc = vyre__sqlite_step_retry(st->st, VYRE_RESULTS_BUSY_TIMEOUT_MS);
    if (rc == SQLITE_ROW)
        return 1;
    if (rc == SQLITE_DONE)
        return 0;
    return vyre__sqlite_fail(&st->s->sql, rc, what, err);
}

static int sq_is_null(vyre__stmt *st, int i)
{
    return sqlite3_column_type(raw(st), i) == SQLITE_NULL;
}

static int64_t sq_col_int64(vyre__stmt *st, int i)
{
    return (int64_t)sqlite3_column_int64(raw(st), i);
}

static double sq_col_double(vyre__stmt *st, int i)
{
    return sqlite3_column_double(raw(st), i);
}

static const char *sq_col_text(vyre__stmt *st, int i)
{
    return (const char *)sqlite3_column_text(raw(st), i);
}

static void sq_reset(vyre__stmt *st)
{
    sqlite3_reset(raw(st));
}

static void sq_finalize(vyre__stmt *st)
{
    sqlite3_finalize(raw(st));
    free(st);
}

/* ---- transactions and the store ------------------------------------------------- */

static int sq_begin(vyre__store *s, const char *what, vyre_error *err)
{
    return vyre__sqlite_begin(&((sqlite_store *)s)->sql, what, err);
}

static int sq_commit(vyre__store *s, const char *what, vyre_error *err)
{
    return vyre__sqlite_commit(&((sqlite_store *)s)->sql, what, err);
}

static int sq_lock_key(vyre__store *s, uint32_t key, const char *what, vyre_error *err)
{
    (void)s, (void)key, (void)what, (void)err;
    return VYRE_OK; /* BEGIN IMMEDIATE holds the file's one write lock */
}

static void sq_rollback(vyre__store *s)
{
    vyre__sqlite_rollback(&((sqlite_store *)s)->sql);
}

static void sq_close(vyre__store *base)
{
    sqlite_store *s = (sqlite_store *)base;
    if (!s)
        return;
    vyre__sqlite_close(&s->sql);
    free(s);
}

static const vyre__store_ops k_ops = {
    .engine = "sqlite",
    .agg_open = "group_concat(DISTINCT ",
    .agg_close = ")",
    .prepare = sq_prepare,
    .bind_int64 = sq_bind_int64,
    .bind_double = sq_bind_double,
    .bind_text = sq_bind_text,
    .bind_null = sq_bind_null,
    .step = sq_step,
    .is_null = sq_is_null,
    .col_int64 = sq_col_int64,
    .col_double = sq_col_double,
    .col_text = sq_col_text,
    .reset = sq_reset,
    .finalize = sq_finalize,
    .begin = sq_begin,
    .lock_key = sq_lock_key,
    .commit = sq_commit,
    .rollback = sq_rollback,
    .close = sq_close,
};

int vyre__store_sqlite_open(const char *path, vyre__store **out, vyre_error *err)
{
    *out = NULL;
    int rc = check_paths(path, err);
    if (rc)
        return rc;
    size_t len = strlen(path);
    sqlite_store *s = calloc(1, sizeof *s + len + 1);
    if (!s)
        return vyre__fail(err, VYRE_ENOMEM, NULL, "out of memory opening '%s'", path);
    memcpy(s->path, path, len + 1);
    s->base.ops = &k_ops;
    rc = vyre__sqlite_open(&s->sql, s->path, &k_store,
                           VYRE__SQLITE_JOURNAL_AT_CREATE | VYRE__SQLITE_DURABLE, err);
    if (rc) {
        free(s);
        return rc;
    }
    *out = &s->base;
    return VYRE_OK;
}
