/*
 * sqlutil.c - see sqlutil.h.
 *
 * Open order, and why: the schema state is read and checked before the
 * journal mode is set or anything is created, so that a file that is not
 * the store's (or is newer than this build) is never modified. The full
 * PRAGMA quick_check is not part of open: opening stays cheap on a large
 * file, and damage found later by any statement is VYRE_ECORRUPT anyway.
 */
#include "base/sqlutil.h"

#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <strings.h>
#include <sys/vfs.h>
#include <time.h>

#include "base/clock.h"
#include "base/internal.h"
#include "vyre/error.h"

int vyre__sqlite_code(int rc, int sys_errno)
{
    switch (rc & 0xff) {
    case SQLITE_FULL:
        return VYRE_ENOSPC;
    case SQLITE_READONLY:
        return VYRE_EROFS;
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
        return VYRE_ECORRUPT;
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
        return VYRE_EBUSY;
    case SQLITE_NOMEM:
        return VYRE_ENOMEM;
    case SQLITE_IOERR:
        if (sys_errno == ENOSPC || sys_errno == EDQUOT || sys_errno == EFBIG)
            return VYRE_ENOSPC;
        return VYRE_EDB;
    case SQLITE_CANTOPEN:
        switch (sys_errno) {
        case EACCES:
        case EPERM:
            return VYRE_EPERM;
        case EROFS:
            return VYRE_EROFS;
        case ENOENT:
        case ENOTDIR:
            return VYRE_ENOENT;
        default:
            return VYRE_EDB;
        }
    default:
        return VYRE_EDB;
    }
}

static int64_t mono_ms(void)
{
    return (int64_t)(vyre__mono_ns() / 1000000u);
}

static void nap_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        continue;
}

int vyre__sqlite_step_retry(sqlite3_stmt *st, int timeout_ms)
{
    int64_t deadline = mono_ms() + timeout_ms;
    int wait = 1;
    for (;;) {
        int rc = sqlite3_step(st);
        if ((rc & 0xff) != SQLITE_BUSY || mono_ms() >= deadline)
            return rc;
        sqlite3_reset(st);
        nap_ms(wait);
        wait = wait < 32 ? wait * 2 : 50;
    }
}

int vyre__sqlite_query_value(sqlite3 *db, const char *sql, int timeout_ms, sqlite3_int64 *num,
                             char *text, size_t text_size)
{
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
    if (rc != SQLITE_OK)
        return rc;
    rc = vyre__sqlite_step_retry(st, timeout_ms);
    if (rc == SQLITE_ROW) {
        if (num)
            *num = sqlite3_column_int64(st, 0);
        if (text) {
            const unsigned char *z = sqlite3_column_text(st, 0);
            vyre__strlcpy(text, z ? (const char *)z : "", text_size);
        }
        rc = SQLITE_OK;
    } else if (rc == SQLITE_DONE) {
        rc = SQLITE_ERROR;
    }
    sqlite3_finalize(st);
    return rc;
}

int vyre__sqlite_read_schema(sqlite3 *db, int timeout_ms, vyre__sqlite_schema *s)
{
    int rc;
    if ((rc = vyre__sqlite_query_value(db, "PRAGMA user_version", timeout_ms, &s->user_version,
                                       NULL, 0)) ||
        (rc = vyre__sqlite_query_value(db, "PRAGMA application_id", timeout_ms, &s->application_id,
                                       NULL, 0)) ||
        (rc = vyre__sqlite_query_value(db, "SELECT count(*) FROM sqlite_master", timeout_ms,
                                       &s->objects, NULL, 0)))
        return rc;
    return SQLITE_OK;
}

/* ---- journal mode -------------------------------------------------------- */

int vyre__sqlite_journal_for_fstype(long f_type)
{
    /* statfs(2) magic numbers. f_type is signed on some ABIs, so the
     * 0xFx... values are compared as 32-bit patterns. */
    switch ((uint32_t)(unsigned long)f_type) {
    case 0x6969:     /* NFS */
    case 0x517B:     /* SMB (smbfs) */
    case 0xFF534D42: /* CIFS */
    case 0xFE534D42: /* SMB2/3 (cifs.ko, smb3) */
    case 0x65735546: /* FUSE (sshfs, glusterfs, s3fs, virtiofs, ...) */
    case 0x01021997: /* 9p (v9fs: WSL2, VM shares) */
    case 0x0BD00BD0: /* Lustre */
    case 0x00C36400: /* CephFS */
    case 0x47504653: /* GPFS / IBM Spectrum Scale */
    case 0x5346414F: /* AFS (OpenAFS) */
    case 0x6B414653: /* AFS (kAFS) */
    case 0x73757245: /* Coda */
    case 0x564C:     /* NCP */
    case 0x7461636F: /* OCFS2 */
    case 0x01161970: /* GFS2 */
    case 0x19830326: /* BeeGFS */
    case 0x20030528: /* OrangeFS / PVFS2 */
    case 0xAAD7AAEA: /* PanFS */
        return VYRE__SQLITE_JOURNAL_ROLLBACK;
    default:
        return VYRE__SQLITE_JOURNAL_WAL;
    }
}

int vyre__sqlite_journal_for_path(const char *path)
{
    char dir[4096];
    const char *slash = strrchr(path, '/');
    if (!slash) {
        vyre__strlcpy(dir, ".", sizeof dir);
    } else {
        size_t len = slash == path ? 1 : (size_t)(slash - path);
        if (len >= sizeof dir)
            return VYRE__SQLITE_JOURNAL_ROLLBACK;
        memcpy(dir, path, len);
        dir[len] = '\0';
    }
    struct statfs sfs;
    if (statfs(dir, &sfs) != 0)
        return VYRE__SQLITE_JOURNAL_ROLLBACK;
    return vyre__sqlite_journal_for_fstype((long)sfs.f_type);
}

/* ---- failures -------------------------------------------------------------- */

/*
 * The errno behind an I/O error, when sqlite3_system_errno lost it: SQLite
 * reads errno after its own cleanup, so a write that failed with EFBIG or
 * ENOSPC (a full disk, RLIMIT_FSIZE) often reports 0 there. Each file keeps
 * its last errno: ask the WAL or journal, then the database file.
 */
static int io_errno(sqlite3 *db)
{
    int e = 0;
    sqlite3_file *j = NULL;
    if (sqlite3_file_control(db, "main", SQLITE_FCNTL_JOURNAL_POINTER, &j) == SQLITE_OK && j &&
        j->pMethods && j->pMethods->xFileControl)
        j->pMethods->xFileControl(j, SQLITE_FCNTL_LAST_ERRNO, &e);
    if (!e)
        sqlite3_file_control(db, "main", SQLITE_FCNTL_LAST_ERRNO, &e);
    return e;
}

static int with_remedy(const vyre__sqlite_store *st, vyre_error *err, int code)
{
    return st->remedy_for ? vyre__remedy(err, st->remedy_for(code), code) : code;
}

int vyre__sqlite_fail(const vyre__sqlite *c, int rc, const char *what, vyre_error *err)
{
    int sys = c->db ? sqlite3_system_errno(c->db) : 0;
    if (c->db && !sys && (rc & 0xff) == SQLITE_IOERR)
        sys = io_errno(c->db);
    int code = vyre__sqlite_code(rc, sys);
    const char *msg = c->db ? sqlite3_errmsg(c->db) : sqlite3_errstr(rc);
    const vyre__sqlite_store *st = c->store;
    const char *hint = st->hint_for(code);
    if (code == VYRE_EBUSY)
        return vyre__fail(err, code, hint, "cannot %s %s '%s': %s (waited %d ms for the lock)",
                          what, st->noun, c->path, msg, st->busy_timeout_ms);
    if (code == VYRE_EROFS)
        /* SQLite says "attempt to write a readonly database" even for a
         * read: it could not create its -wal, -shm or -journal file. */
        return vyre__fail(err, code, hint,
                          "cannot %s %s '%s': %s (the file or its directory is read-only for "
                          "uid %u)",
                          what, st->noun, c->path, msg, (unsigned)geteuid());
    const char *note = code == VYRE_ECORRUPT && st->corrupt_note ? st->corrupt_note : "";
    return with_remedy(
        st, err,
        vyre__fail(err, code, hint, "cannot %s %s '%s': %s%s", what, st->noun, c->path, msg, note));
}

int vyre__sqlite_exec(vyre__sqlite *c, const char *sql, const char *what, vyre_error *err)
{
    int rc = sqlite3_exec(c->db, sql, NULL, NULL, NULL);
    return rc == SQLITE_OK ? VYRE_OK : vyre__sqlite_fail(c, rc, what, err);
}

int vyre__sqlite_prepare(vyre__sqlite *c, const char *sql, sqlite3_stmt **st, vyre_error *err)
{
    int rc = sqlite3_prepare_v3(c->db, sql, -1, SQLITE_PREPARE_PERSISTENT, st, NULL);
    if (rc == SQLITE_ERROR)
        /* "no such table/column": a file with our ids but not our schema. */
        return with_remedy(c->store, err,
                           vyre__fail(err, VYRE_ECORRUPT, c->store->hint_for(VYRE_ECORRUPT),
                                      "%s '%s' does not have the expected schema: %s%s",
                                      c->store->noun, c->path, sqlite3_errmsg(c->db),
                                      c->store->schema_note ? c->store->schema_note : ""));
    return rc == SQLITE_OK ? VYRE_OK : vyre__sqlite_fail(c, rc, "read", err);
}

/* ---- transactions ------------------------------------------------------------ */

void vyre__sqlite_rollback(vyre__sqlite *c)
{
    if (sqlite3_get_autocommit(c->db))
        return; /* SQLite already rolled back (FULL, IOERR, ...) */
    sqlite3_step(c->st_rollback);
    sqlite3_reset(c->st_rollback);
}

static int tx_step(vyre__sqlite *c, sqlite3_stmt *st, const char *what, vyre_error *err)
{
    int rc = vyre__sqlite_step_retry(st, c->store->busy_timeout_ms);
    int ret = rc == SQLITE_DONE ? VYRE_OK : vyre__sqlite_fail(c, rc, what, err);
    sqlite3_reset(st);
    return ret;
}

int vyre__sqlite_begin(vyre__sqlite *c, const char *what, vyre_error *err)
{
    return tx_step(c, c->st_begin, what, err);
}

int vyre__sqlite_commit(vyre__sqlite *c, const char *what, vyre_error *err)
{
    int ret = tx_step(c, c->st_commit, what, err);
    if (ret)
        vyre__sqlite_rollback(c);
    return ret;
}

int vyre__sqlite_abort(vyre__sqlite *c, sqlite3_stmt *st, int rc, const char *what, vyre_error *err)
{
    int ret = vyre__sqlite_fail(c, rc, what, err);
    sqlite3_reset(st);
    vyre__sqlite_rollback(c);
    return ret;
}

/* ---- open ---------------------------------------------------------------------- */

static int query_value(vyre__sqlite *c, const char *sql, char *text, size_t text_size,
                       const char *what, vyre_error *err)
{
    int rc = vyre__sqlite_query_value(c->db, sql, c->store->busy_timeout_ms, NULL, text, text_size);
    return rc == SQLITE_OK ? VYRE_OK : vyre__sqlite_fail(c, rc, what, err);
}

static int read_and_check(vyre__sqlite *c, vyre__sqlite_schema *s, vyre_error *err)
{
    int rc = vyre__sqlite_read_schema(c->db, c->store->busy_timeout_ms, s);
    if (rc != SQLITE_OK)
        return vyre__sqlite_fail(c, rc, "read", err);
    return c->store->check(c, s, err);
}

static int journal_of(const char *mode)
{
    return strcasecmp(mode, "wal") == 0 ? VYRE__SQLITE_JOURNAL_WAL : VYRE__SQLITE_JOURNAL_ROLLBACK;
}

/* Records the journal mode in force and, when allowed, changes it to the
 * one for the file's filesystem. */
static int set_journal(vyre__sqlite *c, int may_change, vyre_error *err)
{
    char mode[16];
    int rc = query_value(c, "PRAGMA journal_mode", mode, sizeof mode, "read", err);
    if (rc)
        return rc;
    int have = journal_of(mode);
    int want = may_change ? vyre__sqlite_journal_for_path(c->path) : have;
    if (have != want) {
        vyre_error tmp;
        rc = query_value(c,
                         want == VYRE__SQLITE_JOURNAL_WAL ? "PRAGMA journal_mode=WAL"
                                                          : "PRAGMA journal_mode=DELETE",
                         mode, sizeof mode, "set the journal mode of", &tmp);
        if (rc == VYRE_EBUSY) {
            /* Leaving WAL needs every other connection gone; they chose
             * the mode, keep it rather than fail. */
        } else if (rc) {
            if (err)
                *err = tmp;
            return rc;
        } else {
            have = journal_of(mode);
        }
    }
    c->journal = have;
    return VYRE_OK;
}

/* Creates or upgrades the schema in one BEGIN IMMEDIATE transaction. The
 * state is read again under the write lock: another process may have
 * migrated since we looked. */
static int migrate(vyre__sqlite *c, vyre_error *err)
{
    const vyre__sqlite_store *st = c->store;
    int rc = vyre__sqlite_begin(c, "upgrade", err);
    if (rc)
        return rc;
    vyre__sqlite_schema s = {0, 0, 0};
    if ((rc = read_and_check(c, &s, err)))
        goto rollback;
    for (sqlite3_int64 v = s.user_version; v < st->schema_version; v++)
        if ((rc = vyre__sqlite_exec(c, st->steps[v], "create or upgrade the schema of", err)))
            goto rollback;
    char sql[96];
    snprintf(sql, sizeof sql, "PRAGMA user_version=%d; PRAGMA application_id=%" PRId64,
             st->schema_version, (int64_t)st->application_id);
    if ((rc = vyre__sqlite_exec(c, sql, "upgrade", err)) ||
        (st->migrated && (rc = st->migrated(c, err))))
        goto rollback;
    return vyre__sqlite_commit(c, "upgrade", err);
rollback:
    vyre__sqlite_rollback(c);
    return rc;
}

static int open_steps(vyre__sqlite *c, vyre_error *err)
{
    const vyre__sqlite_store *st = c->store;
    int readonly = (c->flags & VYRE__SQLITE_READONLY) != 0;
    int is_memory = strcmp(c->path, ":memory:") == 0;
    /* NOFOLLOW: a database path that is a symlink is refused by SQLite
     * itself (the callers check it too, before opening). */
    int flags = SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_NOFOLLOW |
                (readonly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
    int rc = sqlite3_open_v2(c->path, &c->db, flags, NULL);
    if (rc != SQLITE_OK && c->db && sqlite3_extended_errcode(c->db) == SQLITE_CANTOPEN_SYMLINK)
        return vyre__fail(err, VYRE_EUNSAFE,
                          "pass the real path of the database: vyre never opens its databases "
                          "through a symlink",
                          "%s '%s' is a symlink", st->noun, c->path);
    if (rc != SQLITE_OK)
        return vyre__sqlite_fail(c, rc, "open", err);
    sqlite3_extended_result_codes(c->db, 1);
    sqlite3_busy_timeout(c->db, st->busy_timeout_ms);
    /* The file may be damaged or foreign: no schema tricks, and check
     * cells as pages are read. */
    sqlite3_db_config(c->db, SQLITE_DBCONFIG_DEFENSIVE, 1, (int *)NULL);
    if ((rc = vyre__sqlite_exec(c, "PRAGMA trusted_schema=OFF; PRAGMA cell_size_check=ON",
                                "configure", err)) ||
        (rc = vyre__sqlite_prepare(c, "BEGIN IMMEDIATE", &c->st_begin, err)) ||
        (rc = vyre__sqlite_prepare(c, "COMMIT", &c->st_commit, err)) ||
        (rc = vyre__sqlite_prepare(c, "ROLLBACK", &c->st_rollback, err)))
        return rc;
    /* Read and check before anything writes to the file. */
    vyre__sqlite_schema s = {0, 0, 0};
    if ((rc = read_and_check(c, &s, err)))
        return rc;
    /* With JOURNAL_AT_CREATE an existing file keeps its mode: changing it
     * rewrites the header, and an existing file is not rewritten before a
     * write transaction has shown it to be sound. */
    int may_change = !readonly && !is_memory &&
                     (!(c->flags & VYRE__SQLITE_JOURNAL_AT_CREATE) || s.user_version == 0);
    if ((rc = set_journal(c, may_change, err)))
        return rc;
    if (c->flags & VYRE__SQLITE_DURABLE)
        rc = vyre__sqlite_exec(c, "PRAGMA synchronous=FULL", "configure", err);
    else if (c->journal == VYRE__SQLITE_JOURNAL_WAL && !readonly)
        rc = vyre__sqlite_exec(c, "PRAGMA synchronous=NORMAL", "configure", err);
    if (rc)
        return rc;
    if (!readonly && s.user_version < st->schema_version)
        return migrate(c, err);
    return VYRE_OK;
}

int vyre__sqlite_open(vyre__sqlite *c, const char *path, const vyre__sqlite_store *store,
                      unsigned flags, vyre_error *err)
{
    memset(c, 0, sizeof *c);
    c->path = path;
    c->store = store;
    c->flags = flags;
    c->journal = VYRE__SQLITE_JOURNAL_ROLLBACK;
    int rc = open_steps(c, err);
    if (rc)
        vyre__sqlite_close(c);
    return rc;
}

void vyre__sqlite_close(vyre__sqlite *c)
{
    if (!c)
        return;
    sqlite3_finalize(c->st_begin);
    sqlite3_finalize(c->st_commit);
    sqlite3_finalize(c->st_rollback);
    sqlite3_close(c->db);
    c->st_begin = c->st_commit = c->st_rollback = NULL;
    c->db = NULL;
}
