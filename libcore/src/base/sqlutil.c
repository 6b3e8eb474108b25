/*
 * sqlutil.c - see sqlutil.h.
 *
 * Open order, and why: the schema state is read and checked before the
 * journal mode is set or anything is created, so that a file that is not
 * the store's (or is newer than this build) is never modified. The full
 * PRAGMA quick_check is not part of open: opening stays cheap on a large
 * file, and damage found later by any statement is VYRE_ECORRUPT anyway.
 *
 * The statement bound: a progress handler every PROGRESS_OPS VM
 * instructions adds the time since its last call to the statement's run
 * time, unless that gap is longer than PROGRESS_GAP_MS: a gap that long
 * means the VM was not running (the caller was working between two steps
 * of a statement, or SQLite was waiting for a lock inside one), and lock
 * waits have their own bound, the busy timeout. The run time restarts
 * when a statement starts (SQLITE_TRACE_STMT; not for the start of a
 * trigger's program inside it). A recursive CTE in a trigger is caught
 * within a few milliseconds of the limit.
 *
 * The schema-object check compares (type, name, table) of every entry of
 * the file's sqlite_master with those of an in-memory database built by
 * the store's own steps up to the file's version: nothing to maintain by
 * hand, and exact for every version this build can open.
 */
#include "base/sqlutil.h"

#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
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

static int statement_ms(const vyre__sqlite *c)
{
    return c->store->statement_ms > 0 ? c->store->statement_ms : VYRE__SQLITE_STATEMENT_MS;
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
    if ((rc & 0xff) == SQLITE_INTERRUPT && c->stopped)
        /* Our statements take milliseconds: one that ran this long runs
         * code vyre did not write (a trigger or view added to the file). */
        return with_remedy(st, err,
                           vyre__fail(err, VYRE_ECORRUPT, st->hint_for(VYRE_ECORRUPT),
                                      "cannot %s %s '%s': a statement ran for more than %d ms and "
                                      "was stopped; the file may hold a trigger or view vyre did "
                                      "not create%s",
                                      what, st->noun, c->path, statement_ms(c),
                                      st->corrupt_note ? st->corrupt_note : ""));
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

/* ---- the statement bound ------------------------------------------------------ */

#define PROGRESS_OPS    1000 /* VM instructions between two looks at the clock */
#define PROGRESS_GAP_MS 50   /* a longer gap was not the VM running */

static int on_trace(unsigned type, void *ctx, void *p, void *x)
{
    (void)p;
    vyre__sqlite *c = ctx;
    const char *sql = x;
    /* A trigger's program starts with "-- TRIGGER name": same statement. */
    if (type == SQLITE_TRACE_STMT && !(sql && sql[0] == '-' && sql[1] == '-')) {
        c->run_ms = 0;
        c->last_ms = mono_ms();
        c->stopped = 0;
    }
    return 0;
}

static int on_progress(void *ctx)
{
    vyre__sqlite *c = ctx;
    int64_t now = mono_ms();
    int64_t gap = now - c->last_ms;
    c->last_ms = now;
    if (gap >= 0 && gap <= PROGRESS_GAP_MS)
        c->run_ms += gap;
    if (c->run_ms > statement_ms(c)) {
        c->stopped = 1;
        return 1; /* SQLITE_INTERRUPT */
    }
    return 0;
}

/* ---- schema objects ------------------------------------------------------------ */

typedef struct obj_list {
    size_t n, cap;
    char **v; /* "type\x1fname\x1ftable", sorted */
} obj_list;

static void objs_free(obj_list *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->v[i]);
    free(l->v);
    memset(l, 0, sizeof *l);
}

static int str_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The objects of db's main schema, but SQLite's statistics tables (ANALYZE
 * writes them; they only steer the query planner). SQLITE_OK or an error. */
static int objs_read(sqlite3 *db, obj_list *l)
{
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(db,
                                "SELECT type, name, tbl_name FROM main.sqlite_master WHERE NOT "
                                "(type = 'table' AND name GLOB 'sqlite_stat[1-4]')",
                                -1, &st, NULL);
    while (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        char buf[1024];
        const unsigned char *t = sqlite3_column_text(st, 0), *n = sqlite3_column_text(st, 1),
                            *tb = sqlite3_column_text(st, 2);
        snprintf(buf, sizeof buf, "%s\x1f%s\x1f%s", t ? (const char *)t : "",
                 n ? (const char *)n : "", tb ? (const char *)tb : "");
        if (vyre__grow(&l->v, &l->cap, l->n + 1, sizeof *l->v, 16)) {
            rc = SQLITE_NOMEM;
            break;
        }
        if (!(l->v[l->n] = strdup(buf))) {
            rc = SQLITE_NOMEM;
            break;
        }
        l->n++;
        rc = SQLITE_OK;
    }
    sqlite3_finalize(st);
    if (rc == SQLITE_DONE)
        rc = SQLITE_OK;
    if (rc == SQLITE_OK && l->n)
        qsort(l->v, l->n, sizeof *l->v, str_cmp);
    return rc;
}

/* The objects the store's steps create up to version, in a scratch
 * in-memory database. */
static int objs_expected(const vyre__sqlite_store *st, sqlite3_int64 version, obj_list *l)
{
    sqlite3 *db = NULL;
    int rc = sqlite3_open_v2(":memory:", &db, SQLITE_OPEN_READWRITE, NULL);
    for (sqlite3_int64 v = 0; rc == SQLITE_OK && v < version; v++)
        rc = sqlite3_exec(db, st->steps[v], NULL, NULL, NULL);
    if (rc == SQLITE_OK)
        rc = objs_read(db, l);
    sqlite3_close(db);
    return rc;
}

/* "trigger 'evil' on table 'blobs'" for an entry of an obj_list. */
static void obj_words(const char *o, char *out, size_t size)
{
    const char *s1 = strchr(o, 0x1f), *s2 = s1 ? strchr(s1 + 1, 0x1f) : NULL;
    if (!s1 || !s2) {
        snprintf(out, size, "'%s'", o);
        return;
    }
    int tl = (int)(s1 - o), nl = (int)(s2 - s1 - 1);
    if (strcmp(s2 + 1, "") == 0 || (strncmp(o, "table", 5) == 0 && tl == 5) ||
        (strncmp(o, "view", 4) == 0 && tl == 4))
        snprintf(out, size, "%.*s '%.*s'", tl, o, nl, s1 + 1);
    else
        snprintf(out, size, "%.*s '%.*s' on table '%s'", tl, o, nl, s1 + 1, s2 + 1);
}

/* The first object of a not in b (sorted lists), or NULL. */
static const char *objs_first_extra(const obj_list *a, const obj_list *b)
{
    size_t j = 0;
    for (size_t i = 0; i < a->n; i++) {
        while (j < b->n && strcmp(b->v[j], a->v[i]) < 0)
            j++;
        if (j == b->n || strcmp(b->v[j], a->v[i]) != 0)
            return a->v[i];
    }
    return NULL;
}

static int check_objects_at(vyre__sqlite *c, sqlite3_int64 version, vyre_error *err)
{
    const vyre__sqlite_store *st = c->store;
    if (version <= 0 || version > st->schema_version)
        return VYRE_OK; /* new (no objects: store->check says) or refused by store->check */
    obj_list have = {0}, want = {0};
    int rc = objs_read(c->db, &have);
    if (rc != SQLITE_OK) {
        objs_free(&have);
        return vyre__sqlite_fail(c, rc, "read", err);
    }
    if ((rc = objs_expected(st, version, &want)) != SQLITE_OK) {
        objs_free(&have);
        objs_free(&want);
        return vyre__fail(err, VYRE_EDB, NULL, "cannot build the expected schema of %s '%s': %s",
                          st->noun, c->path, sqlite3_errstr(rc));
    }
    const char *extra = objs_first_extra(&have, &want);
    const char *missing = extra ? NULL : objs_first_extra(&want, &have);
    char words[1200];
    if (extra || missing)
        obj_words(extra ? extra : missing, words, sizeof words);
    objs_free(&have);
    objs_free(&want);
    if (!extra && !missing)
        return VYRE_OK;
    /* Someone who can write the file changed its schema: its statements
     * would run that code (a trigger on every insert) or miss ours. */
    return with_remedy(st, err,
                       vyre__fail(err, VYRE_ECORRUPT, st->hint_for(VYRE_ECORRUPT),
                                  "%s '%s' does not have the expected schema: %s %s%s%s", st->noun,
                                  c->path, extra ? "it has the" : "it lacks the", words,
                                  extra ? ", which vyre did not create" : "",
                                  st->schema_note ? st->schema_note : ""));
}

int vyre__sqlite_check_objects(vyre__sqlite *c, vyre_error *err)
{
    sqlite3_int64 version = 0;
    int rc = vyre__sqlite_query_value(c->db, "PRAGMA user_version", c->store->busy_timeout_ms,
                                      &version, NULL, 0);
    if (rc != SQLITE_OK)
        return vyre__sqlite_fail(c, rc, "read", err);
    return check_objects_at(c, version, err);
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
    if ((rc = c->store->check(c, s, err)))
        return rc;
    return check_objects_at(c, s->user_version, err);
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
    c->last_ms = mono_ms();
    sqlite3_progress_handler(c->db, PROGRESS_OPS, on_progress, c);
    sqlite3_trace_v2(c->db, SQLITE_TRACE_STMT, on_trace, c);
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
